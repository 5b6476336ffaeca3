/// Milliseconds per stage of one frame. `total` is the frame's own work; the shared reference's detection
/// (done once per reference, however many frames use it) is reported beside it, not inside it.
public struct StageTimings: Codable, Equatable, Sendable {
    /// Detecting the reference's features and building its match index, once per prepared reference.
    public var detectReference: Double
    /// Decoding the images, when the caller decoded them and says so (the CLI does).
    public var loadReference: Double?
    public var loadCurrent: Double?
    public var detectCurrent: Double
    public var match: Double
    public var homography: Double
    /// nil when no pose was attempted (no intrinsics) or estimation stopped before it.
    public var essential: Double?
    /// Estimating the reference's camera (a reference from an unknown camera only).
    public var referenceCamera: Double?
    /// This frame's work: decoding the current frame (when measured), detection, matching, estimation.
    public var total: Double

    public init(detectReference: Double, loadReference: Double? = nil, loadCurrent: Double? = nil, detectCurrent: Double = 0,
                match: Double = 0, homography: Double = 0, essential: Double? = nil, total: Double = 0) {
        self.detectReference = detectReference
        self.loadReference = loadReference
        self.loadCurrent = loadCurrent
        self.detectCurrent = detectCurrent
        self.match = match
        self.homography = homography
        self.essential = essential
        self.total = total
    }
}

package func milliseconds(since start: ContinuousClock.Instant) -> Double { milliseconds(ContinuousClock.now - start) }

package func milliseconds(_ d: Duration) -> Double {
    Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
}
