import Foundation

/// The reference frame a phone's attitude quaternion is expressed in. Every frame has z vertical (up);
/// they differ in where x points.
public enum AttitudeReferenceFrame: String, Codable, CaseIterable, Sendable {
    /// iOS: x arbitrary (fixed when motion updates start), z up. Yaw compares only within one session.
    case xArbitraryZVertical
    /// iOS: as xArbitraryZVertical, with magnetometer drift correction.
    case xArbitraryCorrectedZVertical
    /// iOS: x to magnetic north, z up (so y points west).
    case xMagneticNorthZVertical
    /// iOS: x to true north, z up.
    case xTrueNorthZVertical
    /// Android TYPE_ROTATION_VECTOR: x east, y magnetic north, z up.
    case androidRotationVector
    /// Android TYPE_GAME_ROTATION_VECTOR: z up, yaw arbitrary.
    case androidGameRotationVector

    enum North { case magnetic, truth, arbitrary }

    var north: North {
        switch self {
        case .xMagneticNorthZVertical, .androidRotationVector: .magnetic
        case .xTrueNorthZVertical: .truth
        default: .arbitrary
        }
    }

    /// Rotation from this frame's coordinates to east-north-up (x east, y north, z up).
    var toEastNorthUp: Matrix3 {
        switch self {
        case .xMagneticNorthZVertical, .xTrueNorthZVertical: Matrix3([0, -1, 0, 1, 0, 0, 0, 0, 1])  // (north, west, up) -> ENU
        default: .identity
        }
    }
}

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

/// A phone's attitude at one capture: a unit quaternion that rotates device-frame vectors into `frame`
/// (CoreMotion's CMAttitude.quaternion; Android's rotation vector), the frame, and the screen orientation.
/// The device frame is x right, y up (towards the top of the screen), z out of the screen.
public struct Attitude: Equatable, Sendable, Codable {
    public let quaternion: Quaternion
    public var frame: AttitudeReferenceFrame
    public var orientation: ScreenOrientation

    /// Refuses non-finite and zero quaternions; renormalises one whose norm is within 1 % of 1 and refuses
    /// one further off (a sign of a wrong component order or units).
    public init(quaternion q: Quaternion, frame: AttitudeReferenceFrame = .xArbitraryZVertical,
                orientation: ScreenOrientation = .portrait) throws {
        guard q.isFinite else { throw RephotoError.badInput("attitude quaternion \(q) is not finite") }
        let norm = q.norm
        guard norm > 0 else { throw RephotoError.badInput("attitude quaternion \(q) has zero length") }
        guard abs(norm - 1) <= 0.01 else {
            throw RephotoError.badInput("attitude quaternion \(q) has norm \(fmt(norm, 6)), not within 1 % of 1 (expected a unit quaternion w,x,y,z)")
        }
        quaternion = q.normalized
        self.frame = frame
        self.orientation = orientation
    }

    /// Parses "w,x,y,z".
    public init(parsing text: String, frame: AttitudeReferenceFrame = .xArbitraryZVertical,
                orientation: ScreenOrientation = .portrait) throws {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 4, let w = parts[0], let x = parts[1], let y = parts[2], let z = parts[3] else {
            throw RephotoError.badInput("attitude '\(text)' must be four numbers w,x,y,z")
        }
        try self.init(quaternion: Quaternion(w: w, x: x, y: y, z: z), frame: frame, orientation: orientation)
    }

    enum CodingKeys: String, CodingKey { case quaternion, frame, orientation }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(quaternion: c.decode(Quaternion.self, forKey: .quaternion),
                      frame: c.decodeIfPresent(AttitudeReferenceFrame.self, forKey: .frame) ?? .xArbitraryZVertical,
                      orientation: c.decodeIfPresent(ScreenOrientation.self, forKey: .orientation) ?? .portrait)
    }
}

/// How the camera sits in the device. `cameraFromDevice` maps device-frame vectors to OpenCV camera axes
/// (x right, y down, z forward) for a portrait capture; the default is a phone's back camera:
/// image right = device x, image down = −device y, viewing direction = −device z.
public struct SensorConfig: Codable, Equatable, Sendable {
    public var cameraFromDevice = Matrix3([1, 0, 0, 0, -1, 0, 0, 0, -1])

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable { case cameraFromDevice }

    public init(from decoder: Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        cameraFromDevice = try c.value(.cameraFromDevice, or: SensorConfig().cameraFromDevice)
    }

    public func validate() throws {
        let m = cameraFromDevice
        let orthogonality = (m * m.transposed).elements.enumerated().map { i, v in abs(v - (i % 4 == 0 ? 1 : 0)) }.max() ?? 0
        guard orthogonality < 1e-6, abs(m.determinant - 1) < 1e-6 else {
            throw RephotoError.badInput("sensor.cameraFromDevice \(m) is not a rotation matrix")
        }
    }

    /// Camera-from-device rotation for a capture in `orientation`.
    func cameraFromDevice(_ orientation: ScreenOrientation) -> Matrix3 { orientation.aboutViewingAxis * cameraFromDevice }
}

/// The attitudes of a reference capture and a current capture.
public struct AttitudePair: Equatable, Sendable {
    public var reference: Attitude
    public var current: Attitude

    public init(reference: Attitude, current: Attitude) {
        self.reference = reference
        self.current = current
    }
}
