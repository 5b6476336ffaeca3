/// How the phone was held at capture (UIDeviceOrientation's meaning): `landscapeLeft` is the device turned
/// 90° counter-clockwise as seen from the screen (its top points left), `landscapeRight` clockwise.
/// Photos are assumed stored upright (EXIF orientation applied), as RephotoKit reads them.
public enum ScreenOrientation: String, Codable, CaseIterable, Sendable {
    case portrait, portraitUpsideDown, landscapeLeft, landscapeRight

    /// Rotation of the upright image about the camera's viewing axis relative to portrait.
    var aboutViewingAxis: Matrix3 {
        let angle: Double = switch self {
        case .portrait: 0
        case .landscapeLeft: -.pi / 2
        case .landscapeRight: .pi / 2
        case .portraitUpsideDown: .pi
        }
        return Matrix3.rotation(axis: SIMD3(0, 0, 1), angle: angle)
    }
}

