/// Everything the vision path computes for one frame pair. Its JSON form (`PoseResult` encoded with
/// `JSONEncoder`) is a documented contract: see docs/json-output.md.
public struct PoseResult: Encodable, Sendable {
    public struct PoseSummary: Encodable, Equatable, Sendable {
        public var rotation: Matrix3
        /// On rotation-only pairs: the pure rotation fitted to the inliers.
        @NullEncoded public var pureRotation: Matrix3?
        /// Null when undetermined, never omitted.
        @NullEncoded public var translation: SIMD3<Double>?
        /// Why the translation is null: rotation_only, planar, uncertain or unreproduced; null when it is not.
        @NullEncoded public var translationUndetermined: UndeterminedTranslation?
        public var rotationDegrees: Double
        public var rotationOnly: Bool
        public var rotationSource: RelativePose.RotationSource
        public var sampsonRmsPixels: Double
        /// What the estimate rests on; null when the rotation came from the homography inliers.
        @NullEncoded public var evidence: PoseEvidence?

        init(_ pose: RelativePose) {
            rotation = pose.rotation
            pureRotation = pose.pureRotation
            evidence = pose.evidence
            translation = pose.translation
            translationUndetermined = pose.translationUndetermined
            rotationDegrees = pose.rotationDegrees
            rotationOnly = pose.rotationOnly
            rotationSource = pose.rotationSource
            sampsonRmsPixels = pose.sampsonRmsPixels
        }
    }

    public struct Counts: Encodable, Equatable, Sendable {
        public var keypointsReference: Int
        public var keypointsCurrent: Int
        public var matches: Int
        public var inliersHomography: Int
        /// nil when no pose was estimated.
        @NullEncoded public var inliersEssential: Int?
    }

    public var referenceSize: ImageSize
    public var currentSize: ImageSize
    /// Reference pixels -> current pixels, normalised so H[2][2] = 1.
    public var homography: Matrix3
    public var pose: PoseSummary?
    /// Why `pose` is null when the gate refused it (its `warnings` say so in words); the JSON carries the cause.
    public var poseRefusal: PoseRefusal?
    public var navigation: Navigation
    public var metrics: Metrics
    public var counts: Counts
    /// The sensor-quaternion path and its comparison with the vision path; nil without attitudes.
    public var sensor: SensorPath?
    public var comparison: PathComparison?
    /// The reference's camera as estimated for this frame; nil unless the reference's camera is unknown.
    public var referenceCamera: EstimatedReferenceCamera?
    /// How points marked by hand were used; nil without them.
    public var marks: MarkedPointsReport?
    /// The scanned print's border found around the reference; nil when none was looked for or found.
    public var referenceBorder: PrintBorder?
    /// A photo or a print, and how that was settled (declared, the camera unknown, or detected).
    public var referenceKind: ReferenceKindEvidence?
    /// Milliseconds per stage.
    public var timings: StageTimings
    public var warnings: [String]
    /// Not part of the JSON: those of `warnings` that bear on aligning the retake by `homography` (damaged image
    /// data, an implausible or replaced homography), not the pose's own.
    public var alignmentWarnings: [String] = []
    /// Not part of the JSON: the matches and which of them the homography kept (for drawing and analysis).
    public var correspondences: Correspondences
    public var homographyInliers: [Bool]
    /// Not part of the JSON: which of them the accepted pose kept (nil without a pose).
    public var essentialInliers: [Bool]? = nil

    enum CodingKeys: String, CodingKey {
        case reference, current, homography, pose, poseRefusal, navigation, metrics, counts, sensor, comparison, referenceCamera, referenceBorder, referenceKind, marks, timings, warnings
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(referenceSize, forKey: .reference)
        try c.encode(currentSize, forKey: .current)
        try c.encode(homography, forKey: .homography)
        try c.encode(pose, forKey: .pose)
        try c.encode(poseRefusal?.cause, forKey: .poseRefusal)
        try c.encode(navigation, forKey: .navigation)
        try c.encode(metrics, forKey: .metrics)
        try c.encode(counts, forKey: .counts)
        try c.encode(sensor, forKey: .sensor)
        try c.encode(comparison, forKey: .comparison)
        try c.encodeIfPresent(referenceCamera, forKey: .referenceCamera)
        try c.encodeIfPresent(referenceBorder, forKey: .referenceBorder)
        try c.encodeIfPresent(referenceKind, forKey: .referenceKind)
        try c.encodeIfPresent(marks, forKey: .marks)
        try c.encode(timings, forKey: .timings)
        try c.encode(warnings, forKey: .warnings)
    }

    /// Inlier point pairs (reference, current), for drawing.
    public var inlierPairs: (reference: [Point2], current: [Point2]) {
        let kept = homographyInliers.indices.filter { homographyInliers[$0] }
        return (kept.map { correspondences.reference[$0] }, kept.map { correspondences.current[$0] })
    }
}
