/// A reference frame prepared once (features detected, intrinsics adapted) and matched against many
/// current frames. Immutable and `Sendable`: share one instance across threads and tasks.
public final class ReferenceFrame: Sendable {
    public let size: ImageSize
    public let features: Features
    public let camera: CameraIntrinsics?
    /// Time spent detecting the reference features (and building its match index), milliseconds.
    public let detectMilliseconds: Double
    /// Prebuilt FLANN index when the estimator matches with FLANN: built once, searched by every frame.
    public let matchIndex: MatchIndex?
    /// The reference image's decoder warning (damaged data), repeated in every result that uses it.
    public let decodeWarning: String?

    init(size: ImageSize, features: Features, camera: CameraIntrinsics?, detectMilliseconds: Double, matchIndex: MatchIndex?,
         decodeWarning: String?) {
        self.decodeWarning = decodeWarning
        self.size = size
        self.features = features
        self.camera = camera
        self.detectMilliseconds = detectMilliseconds
        self.matchIndex = matchIndex
    }
}
