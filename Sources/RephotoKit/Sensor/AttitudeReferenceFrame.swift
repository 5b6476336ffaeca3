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
    package var toEastNorthUp: Matrix3 {
        switch self {
        case .xMagneticNorthZVertical, .xTrueNorthZVertical: Matrix3([0, -1, 0, 1, 0, 0, 0, 0, 1])  // (north, west, up) -> ENU
        default: .identity
        }
    }
}

