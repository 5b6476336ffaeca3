/// Guidance-session settings (`GuidanceSession`); defaults and ranges are declared in `ParameterRegistry`.
public struct SessionConfig: Equatable, Sendable {
    /// A robust update (the full pipeline) at least every this many frames; 1: every frame.
    public var robustEvery: Int = ParameterRegistry.defaultValue(\.session.robustEvery)
    /// Fewer tracked correspondences than this ends tracking: the frame gets a robust update.
    public var minTracks: Int = ParameterRegistry.defaultValue(\.session.minTracks)
    /// ... as does keeping less than this fraction of the correspondences the last robust update seeded.
    public var minTrackedFraction: Double = ParameterRegistry.defaultValue(\.session.minTrackedFraction)
    /// Correspondences seeded into tracking by a robust update, at most (the best matches first).
    public var maxTracks: Int = ParameterRegistry.defaultValue(\.session.maxTracks)
    /// The view has moved on once the tracked points moved this median percentage of the frame width since the last
    /// robust update: the next frame gets one.
    public var maxTrackShiftPercent: Double = ParameterRegistry.defaultValue(\.session.maxTrackShiftPercent)
    public var tracking = TrackingConfig()
    /// Reprojection threshold for placing a frame among the structure, and for triangulating it, pixels.
    public var placementThreshold: Double = ParameterRegistry.defaultValue(\.session.placementThreshold)
    /// Triangulated points a keyframe needs to fix the structure.
    public var minStructurePoints: Int = ParameterRegistry.defaultValue(\.session.minStructurePoints)
    /// Least angle between a point's two rays for it to join the structure, degrees.
    public var minTriangulationDegrees: Double = ParameterRegistry.defaultValue(\.session.minTriangulationDegrees)
    /// The step's direction is reported as determined only under this 1-sigma, degrees.
    public var maxStepSigma: Double = ParameterRegistry.defaultValue(\.session.maxStepSigma)
    /// Converged: the step is under this fraction of the distance to the subject ...
    public var convergedStepFraction: Double = ParameterRegistry.defaultValue(\.session.convergedStepFraction)
    /// ... and the rotation to the reference under this many degrees.
    public var convergedDegrees: Double = ParameterRegistry.defaultValue(\.session.convergedDegrees)

    public init() {}
}
