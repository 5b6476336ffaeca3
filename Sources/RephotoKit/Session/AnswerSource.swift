import Foundation

/// Where a session frame's answer comes from: the states of `GuidanceSession`'s protocol. The source of a frame's
/// answer follows from the last frame's and from what the frame's steps found (`next`); the session orders the steps
/// and this type alone chooses. Reported typed (`SessionStatus.source`); the raw value is the JSON and CSV text.
public enum AnswerSource: String, Codable, Sendable, CaseIterable {
    /// Detection, matching and estimation on this frame (today's single-pair pipeline).
    case robust
    /// Correspondences carried from the last robust update by Lucas-Kanade tracking.
    case tracked
    /// Neither worked on this frame: the last answer, repeated with its age and the reason.
    case held
    /// Neither worked and nothing was answered before: the phone's attitude alone.
    case sensor

    /// What one frame's steps found.
    public struct Evidence: Equatable, Sendable {
        /// A robust update on this frame, on the answer path.
        public enum Robust: Equatable, Sendable {
            /// None ran on the answer path (none was due, tracking answered, or it runs off the answer path).
            case notRun
            /// Its pose (or, without a camera, its homography) answered.
            case accepted
            /// Vision failed on the frame: the pose gate's cause when it refused, nil when there was nothing to gate
            /// (too few features, matches or inliers).
            case failed(PoseRefusal.Cause?)
        }

        /// Tracking into this frame: from the previous frame, or a finished robust update's correspondences carried to it.
        public enum Tracking: Equatable, Sendable {
            case notTried
            case answered
            /// Fewer correspondences survived than `session.minTracks` or `session.minTrackedFraction` ask for.
            case tooFew
            /// The tracked correspondences fit no one model.
            case drift

            /// Why a frame that tracking did not answer is due a robust update.
            public var trigger: SessionStatus.Trigger? {
                switch self {
                case .tooFew: .support
                case .drift: .drift
                case .notTried, .answered: nil
                }
            }
        }

        /// A robust update off the answer path, joined on this frame (its answer reaches `tracking`, carried from its frame).
        public enum Joined: Equatable, Sendable {
            case notJoined
            case done(frame: Int)
            /// It failed: its error's kind (`unavailable` when no pipeline took it).
            case failed(frame: Int, kind: RephotoError.Kind)
        }

        public var robust: Robust
        public var tracking: Tracking
        /// The phone's attitude was given with this frame and with the reference.
        public var sensor: Bool
        /// Reported, not chosen on: a joined update answers through `tracking`.
        public var joined: Joined

        public init(robust: Robust = .notRun, tracking: Tracking = .notTried, sensor: Bool, joined: Joined = .notJoined) {
            (self.robust, self.tracking, self.sensor, self.joined) = (robust, tracking, sensor, joined)
        }
    }

    /// Whether a later frame that vision does not answer repeats this one's answer: vision's answers and their
    /// repeats are; the sensor's alone is not (the next such frame asks the sensor again).
    public var holdable: Bool { self != .sensor }

    /// The source of a frame's answer, after a frame answered from `previous` (nil: none answered yet) and given what
    /// this frame's steps found: vision's own answer first (an accepted robust update, else tracking), else the last
    /// answer held, else the sensor alone. Nil: nothing answers the frame, which fails as a single retake would.
    public static func next(after previous: AnswerSource?, _ evidence: Evidence) -> AnswerSource? {
        if evidence.robust == .accepted { return .robust }
        if evidence.tracking == .answered { return .tracked }
        if previous?.holdable == true { return .held }
        return evidence.sensor ? .sensor : nil
    }

    /// Robust updates off the answer path: whether the one due on a frame that tracking did not answer runs inline
    /// instead. It does while vision has answered nothing yet (`previous` holds nothing) and either no attitude was
    /// given or none was started: the session's first update (the sensor is the fallback when vision fails, not a
    /// stand-in for the first answer), and every one after without an attitude, since nothing else could answer the
    /// frame. And on a frame of a new size, which no earlier answer describes.
    public static func robustInline(after previous: AnswerSource?, due: SessionStatus.Trigger, sensor: Bool, attempted: Bool) -> Bool {
        due == .resized || (previous?.holdable != true && (!sensor || !attempted))
    }
}
