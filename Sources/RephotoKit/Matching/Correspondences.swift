import RephotoShim

/// One correspondence between a reference keypoint and a current keypoint.
public struct Match: Equatable, Sendable {
    public var referenceIndex: Int
    public var currentIndex: Int
    public var distance: Double
    /// `distance` over the second-nearest reference descriptor's (1 without a distinct second): Lowe's ratio,
    /// which ranks true matches better than the distance does.
    public var ratio: Double = 1
}

/// Matched point pairs, in full-resolution pixels of each image.
public struct Correspondences: Sendable {
    public var matches: [Match]
    public var reference: [Point2]
    public var current: [Point2]

    /// The matched keypoints' frames, one per correspondence on each side (nil for bare points): the essential
    /// search screens its samples with them (`pose.screenDegrees`).
    public var frames: (reference: [Keypoint.Frame], current: [Keypoint.Frame])?

    public var count: Int { reference.count }

    public init(matches: [Match], reference: [Point2], current: [Point2],
                frames: (reference: [Keypoint.Frame], current: [Keypoint.Frame])? = nil) {
        precondition(frames.map { $0.reference.count == reference.count && $0.current.count == current.count } ?? true,
                     "one frame per correspondence")
        self.matches = matches
        self.reference = reference
        self.current = current
        self.frames = frames
    }

    /// The shim's matches with their keypoints' positions and frames.
    init(_ buffer: UnsafeBufferPointer<rp_match>, reference: Features, current: Features) {
        let matches = buffer.map {
            Match(referenceIndex: Int($0.reference_index), currentIndex: Int($0.current_index), distance: Double($0.distance), ratio: Double($0.ratio))
        }
        self.init(matches: matches, reference: matches.map { reference.keypoints[$0.referenceIndex].point },
                  current: matches.map { current.keypoints[$0.currentIndex].point },
                  frames: (matches.map { reference.keypoints[$0.referenceIndex].frame }, matches.map { current.keypoints[$0.currentIndex].frame }))
    }

    /// These correspondences, then those of `other` whose current keypoint none of these uses (both from matching).
    public func joined(with other: Correspondences) -> Correspondences {
        let used = Set(matches.map(\.currentIndex))
        let extra = other.matches.indices.filter { !used.contains(other.matches[$0].currentIndex) }
        let added = other.reordered(extra)
        let frames: (reference: [Keypoint.Frame], current: [Keypoint.Frame])? = self.frames.flatMap { a in
            added.frames.map { b in (a.reference + b.reference, a.current + b.current) }
        }
        return Correspondences(matches: matches + added.matches, reference: reference + added.reference, current: current + added.current, frames: frames)
    }

    /// The correspondences at these indices, in this order.
    public func reordered(_ order: [Int]) -> Correspondences {
        // Bare points have no matches (see RelativePose.SearchSettings's PROSAC rule).
        Correspondences(matches: matches.count == count ? order.map { matches[$0] } : [], reference: order.map { reference[$0] }, current: order.map { current[$0] },
                        frames: frames.map { f in (order.map { f.reference[$0] }, order.map { f.current[$0] }) })
    }

    /// Flat angle, size pairs as the shim wants them, in the given order (all of them when nil).
    static func flat(_ frames: [Keypoint.Frame], order: [Int]?) -> [Float] {
        var out = [Float]()
        out.reserveCapacity(2 * frames.count)
        for k in 0..<(order?.count ?? frames.count) {
            let frame = frames[order?[k] ?? k]
            out.append(Float(frame.angle))
            out.append(Float(frame.size))
        }
        return out
    }

    /// Flat x,y arrays as the shim wants them.
    var referenceXY: [Double] { Self.flat(reference, order: nil) }
    var currentXY: [Double] { Self.flat(current, order: nil) }

    /// The points' x,y in the given order (all of them when nil). Written in place: a tuning sweep builds
    /// these for every estimate.
    static func flat(_ points: [Point2], order: [Int]?) -> [Double] {
        let count = order?.count ?? points.count
        return [Double](unsafeUninitializedCapacity: 2 * count) { buffer, initialized in
            for k in 0..<count {
                let p = points[order?[k] ?? k]
                buffer[2 * k] = p.x
                buffer[2 * k + 1] = p.y
            }
            initialized = 2 * count
        }
    }

    /// Indices best match first (PROSAC's order): by Lowe's ratio or by descriptor distance, ties by index.
    /// Sorted as packed integers (the key's order-preserving float bits, then the index), several times faster
    /// than a comparison closure.
    func bestFirst(by order: ProsacOrder) -> [Int] {
        let keys = matches.enumerated().map { index, match -> UInt64 in
            let bits = Float(order == .ratio ? match.ratio : match.distance).bitPattern
            // Flipping makes unsigned order follow float order, negatives included.
            let ordered = bits & 0x8000_0000 != 0 ? ~bits : bits | 0x8000_0000
            return UInt64(ordered) << 32 | UInt64(UInt32(truncatingIfNeeded: index))
        }
        return keys.sorted().map { Int($0 & 0xFFFF_FFFF) }
    }
}
