/// A reference frame prepared once (features detected, intrinsics adapted) and matched against many
/// current frames. Immutable and `Sendable`: share one instance across threads and tasks.
public final class ReferenceFrame: Sendable {
    public let size: ImageSize
    public let features: Features
    public let camera: CameraIntrinsics?
    /// The reference's camera is unknown (an old photo): each frame estimates it from its matches
    /// (`ReferenceFocal`); `camera` is then nil.
    public let cameraUnknown: Bool
    /// Time spent detecting the reference features (and building its match index), milliseconds.
    public let detectMilliseconds: Double
    /// Prebuilt FLANN index when the estimator matches with FLANN: built once, searched by every frame.
    public let matchIndex: MatchIndex?
    /// A photo or a print, and how that was settled: a print is matched with the old-photo treatment.
    public let kind: ReferenceKindEvidence
    /// The scanned print's border found around the reference (`features.referenceBorder`); its features lie inside.
    public let border: PrintBorder?
    /// The reference image's decoder warning (damaged data), repeated in every result that uses it.
    public let decodeWarning: String?
    /// An unknown camera estimated once and held from then on (a guidance session's): `camera` is it, and every
    /// result reports it as `referenceCamera`.
    public let heldEstimate: EstimatedReferenceCamera?
    /// An unknown camera combined from several frames' answers (`SharedReferenceCamera`): frames are estimated on it
    /// instead of estimating their own, and their poses are still checked at its focal length ± 1 sigma.
    public let sharedEstimate: EstimatedReferenceCamera?

    init(size: ImageSize, features: Features, camera: CameraIntrinsics?, cameraUnknown: Bool = false, kind: ReferenceKindEvidence,
         border: PrintBorder? = nil, detectMilliseconds: Double, matchIndex: MatchIndex?, decodeWarning: String?,
         heldEstimate: EstimatedReferenceCamera? = nil, sharedEstimate: EstimatedReferenceCamera? = nil) {
        self.cameraUnknown = cameraUnknown
        self.kind = kind
        self.heldEstimate = heldEstimate
        self.sharedEstimate = sharedEstimate
        self.border = border
        self.decodeWarning = decodeWarning
        self.size = size
        self.features = features
        self.camera = camera
        self.detectMilliseconds = detectMilliseconds
        self.matchIndex = matchIndex
    }

    /// The same reference with `camera` (one estimated for a frame): its features and index are shared.
    func with(camera: CameraIntrinsics) -> ReferenceFrame {
        ReferenceFrame(size: size, features: features, camera: camera, kind: kind, border: border, detectMilliseconds: detectMilliseconds,
                       matchIndex: matchIndex, decodeWarning: decodeWarning)
    }

    /// This reference of unknown camera with `estimate` (one frame's) held as its camera: later frames are estimated
    /// with it as known, and report it.
    public func holding(_ estimate: EstimatedReferenceCamera) -> ReferenceFrame {
        ReferenceFrame(size: size, features: features, camera: CameraIntrinsics(fx: estimate.fx, fy: estimate.fy, cx: estimate.cx, cy: estimate.cy, imageSize: size),
                       kind: kind, border: border, detectMilliseconds: detectMilliseconds, matchIndex: matchIndex, decodeWarning: decodeWarning,
                       heldEstimate: estimate)
    }

    /// This reference of unknown camera with `estimate` (several frames' combined) in place of each frame's own.
    public func sharing(_ estimate: EstimatedReferenceCamera) -> ReferenceFrame {
        ReferenceFrame(size: size, features: features, camera: nil, cameraUnknown: true, kind: kind, border: border, detectMilliseconds: detectMilliseconds,
                       matchIndex: matchIndex, decodeWarning: decodeWarning, sharedEstimate: estimate)
    }
}
