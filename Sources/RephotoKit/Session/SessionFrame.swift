import Foundation

/// What a guidance session answers for one frame: the same document as a single retake's result (`PoseResult`,
/// or `SensorOnlyResult` when only the sensor could guide), with a `session` object beside its fields.
/// JSON contract: docs/json-output.md.
public struct SessionFrame: Encodable, Sendable {
    public var session: SessionStatus
    /// The frame's answer; on a `held` frame, the last answer repeated (its age says how old).
    public var result: PoseResult?
    /// When vision failed and the phone's attitude guides alone.
    public var sensorOnly: SensorOnlyResult?
    /// What the frame's steps found, from which its source was chosen (`AnswerSource.next`); not in the JSON.
    public var evidence: AnswerSource.Evidence?

    enum CodingKeys: String, CodingKey { case session }

    public func encode(to encoder: Encoder) throws {
        if let result { try result.encode(to: encoder) } else if let sensorOnly { try sensorOnly.encode(to: encoder) }
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(session, forKey: .session)
    }
}

/// The session's own fields of a frame.
public struct SessionStatus: Codable, Equatable, Sendable {
    /// Where the frame's answer came from (its states and transitions: `AnswerSource`).
    public typealias Source = AnswerSource

    /// Why a robust update ran on this frame.
    public enum Trigger: String, Codable, Sendable {
        /// The first frame, or the first after tracking was lost.
        case start
        /// `session.robustEvery` frames since the last.
        case schedule
        /// Tracking kept too few correspondences (`session.minTracks`, `session.minTrackedFraction`).
        case support
        /// The tracked correspondences no longer fit one model: the frame is not answered from them.
        case drift
        /// The tracked points moved `session.maxTrackShiftPercent` of the width since the last robust update.
        case movedOn
        /// The frame's size differs from the previous frame's.
        case resized
        /// The session's camera for an unknown reference moved past their joint 1 sigma from the one the structure was fixed
        /// under: the structure is fixed again.
        case camera
    }

    /// 0-based position of the frame in the session.
    public var frame: Int
    @NullEncoded public var timestamp: Double?
    public var source: Source
    @NullEncoded public var trigger: Trigger?
    /// Frames since the robust update the answer rests on (0 on a robust frame), and seconds when timestamps were given.
    public var ageFrames: Int
    @NullEncoded public var ageSeconds: Double?
    /// Correspondences tracked into this frame, and how many the last robust update seeded.
    public var tracks: Int
    public var seededTracks: Int
    /// Points of the structure, and the keyframe that fixed it (null before one did).
    public var structurePoints: Int
    @NullEncoded public var keyframe: Int?
    /// Where to step; null before a keyframe fixed the structure, or when this frame could not be placed in it.
    @NullEncoded public var step: Step?
    /// The step has arrived (`session.convergedStepFraction`) and the rotation to the reference is under
    /// `session.convergedDegrees`.
    public var converged: Bool
    /// What to do, most important first: the step's first when it is determined and not arrived, then the turns (the
    /// navigation's actions, whose moves the step replaces). Setting it sets `hints`.
    public var actions: [GuidanceAction] { didSet { hints = actions.map(\.text) } }
    /// Instructions for a person: `actions`' texts, in their order.
    public internal(set) var hints: [String] = []
    /// Why the frame was held or answered by the sensor alone, or what became of a robust update on it (failed, not
    /// carried to this frame, no pipeline free).
    @NullEncoded public var reason: String?
    /// A robust update answered or was joined on this frame: its own time, milliseconds (off the answer path when it
    /// was joined: not in `milliseconds`).
    @NullEncoded public var robustMilliseconds: Double? = nil
    /// This frame's work in the session, milliseconds (decoding not included: the caller decodes).
    public var milliseconds: Double
    /// Frames the transport dropped since the last answer because the session was computing (the newest frame wins);
    /// always 0 in process.
    public var skippedFrames = 0
}
