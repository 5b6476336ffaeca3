import Foundation

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
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { decimalNumber($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 4, let w = parts[0], let x = parts[1], let y = parts[2], let z = parts[3] else {
            throw RephotoError.badInput("attitude '\(text)' must be four finite decimal numbers w,x,y,z")
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

/// The attitudes of a reference capture and a current capture.
public struct AttitudePair: Equatable, Sendable {
    public var reference: Attitude
    public var current: Attitude

    public init(reference: Attitude, current: Attitude) {
        self.reference = reference
        self.current = current
    }
}
