import RephotoShim

/// One correspondence between a reference keypoint and a current keypoint.
public struct Match: Equatable, Sendable {
    public var referenceIndex: Int
    public var currentIndex: Int
    public var distance: Double
}

/// Matched point pairs, in full-resolution pixels of each image.
public struct Correspondences: Sendable {
    public var matches: [Match]
    public var reference: [Point2]
    public var current: [Point2]

    public var count: Int { reference.count }

    public init(matches: [Match], reference: [Point2], current: [Point2]) {
        self.matches = matches
        self.reference = reference
        self.current = current
    }

    /// The shim's matches with their keypoints' positions.
    init(_ buffer: UnsafeBufferPointer<rp_match>, reference: Features, current: Features) {
        let matches = buffer.map { Match(referenceIndex: Int($0.reference_index), currentIndex: Int($0.current_index), distance: Double($0.distance)) }
        self.init(matches: matches, reference: matches.map { reference.keypoints[$0.referenceIndex].point },
                  current: matches.map { current.keypoints[$0.currentIndex].point })
    }

    /// Flat x,y arrays as the shim wants them.
    var referenceXY: [Double] { reference.flatMap { [$0.x, $0.y] } }
    var currentXY: [Double] { current.flatMap { [$0.x, $0.y] } }
}
