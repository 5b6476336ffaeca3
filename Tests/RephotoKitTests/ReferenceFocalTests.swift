import Foundation
import RephotoKit
import RephotoTestSupport
import Testing

/// The focal length of a reference from an unknown camera (`ReferenceFocal`), on correspondences projected through
/// known cameras: the truth is the reference camera that generated them.
@Suite struct ReferenceFocalTests {
    static let current = CameraIntrinsics(fx: 1000, fy: 1000, cx: 639.5, cy: 479.5, imageSize: ImageSize(width: 1280, height: 960))
    static let referenceSize = ImageSize(width: 900, height: 900)

    /// Points 4-20 m ahead seen by a reference camera of focal length `focal` (principal point at the centre of a
    /// 900x900 print, or `offset` px from it) and by the current camera under X_current = r X_reference + t, with ±`noise` px (uniform) and
    /// `outliers` random pairs.
    static func pairs(focal: Double, rotation r: Matrix3, translation t: SIMD3<Double>, count: Int = 300, outliers: Int = 60,
                      noise: Double = 0.5, seed: UInt64 = 7, offset: (x: Double, y: Double) = (0, 0)) -> Correspondences {
        var random = SplitMix(seed: seed)
        let c = 449.5
        // Noise 0: exact projections (the generator then draws no noise at all).
        func jitter() -> Double { noise > 0 ? random.uniform(-noise, noise) : 0 }
        var a: [Point2] = [], b: [Point2] = []
        while a.count < count {
            let z = random.uniform(4, 20)
            let x = SIMD3(random.uniform(-0.4, 0.4) * z, random.uniform(-0.4, 0.4) * z, z)
            let y = r * x + t
            guard y.z > 0.5 else { continue }
            let p = Point2(x: focal * x.x / x.z + c + offset.x + jitter(), y: focal * x.y / x.z + c + offset.y + jitter())
            let q = Point2(x: 1000 * y.x / y.z + 639.5 + jitter(), y: 1000 * y.y / y.z + 479.5 + jitter())
            guard (0..<900).contains(p.x), (0..<900).contains(p.y), (0..<1280).contains(q.x), (0..<960).contains(q.y) else { continue }
            a.append(p)
            b.append(q)
        }
        for _ in 0..<outliers {
            a.append(Point2(x: random.uniform(0, 900), y: random.uniform(0, 900)))
            b.append(Point2(x: random.uniform(0, 1280), y: random.uniform(0, 960)))
        }
        return Correspondences(matches: [], reference: a, current: b)
    }

    /// The cameras apart (a metre sideways, 12° turned): the fundamental matrix gives the focal length within 3 %
    /// and a spread that covers the error.
    @Test(arguments: [600.0, 1600.0, 3000.0])
    func theFundamentalMatrixGivesTheFocalLength(focal: Double) throws {
        let pairs = Self.pairs(focal: focal, rotation: Matrix3.rotation(axis: SIMD3(0.2, 1, 0.1), angle: 12 * .pi / 180),
                               translation: SIMD3(1, 0.1, 0.3))
        let found = try ReferenceFocal.estimate(pairs, referenceSize: Self.referenceSize, currentCamera: Self.current,
                                                config: ReferenceFocalConfig())
        let error = abs(found.camera.fx - focal) / focal * 100
        #expect(found.model == .fundamental)
        #expect(error < 3, "focal \(found.camera.fx) for \(focal): \(error) %")
        #expect(found.focalSigmaPercent < 5 && found.focalSigmaPercent > error / 4, "sigma \(found.focalSigmaPercent) %, error \(error) %")
        // The principal point, estimated under its prior about the centre where it truly is, stays within that prior's
        // 1 sigma (4 % of the side: 36 px).
        #expect(abs(found.camera.cx - 449.5) < 36 && abs(found.camera.cy - 449.5) < 36 && found.camera.fy == found.camera.fx, "\(found.camera)")
    }

    /// The scan's span (pose.referenceFocal.spanInliers): the scanned focal lengths whose pose fits within that many
    /// inliers' worth of the best. Where the pair determines the focal length it stays within 5 % of the truth at both
    /// ends; at more inliers' worth than there are correspondences it takes in the whole scanned range (0.3-10 times the
    /// side, from 1.05 times the lower end in steps of 10 %); at 0, the best alone.
    @Test func theScansSpanHoldsTheFocalLengthsThatFitNearlyAsWell() throws {
        let focal = 1600.0
        let pairs = Self.pairs(focal: focal, rotation: Matrix3.rotation(axis: SIMD3(0.2, 1, 0.1), angle: 12 * .pi / 180),
                               translation: SIMD3(1, 0.1, 0.3))
        let found = try ReferenceFocal.estimate(pairs, referenceSize: Self.referenceSize, currentCamera: Self.current, config: ReferenceFocalConfig())
        #expect(found.span.lowerBound > 0.95 * focal && found.span.upperBound < 1.05 * focal, "\(found.span)")
        #expect(found.spanPercent < ReferenceFocalConfig().maxSigmaPercent)
        var every = ReferenceFocalConfig()
        every.spanInliers = Double(pairs.count + 1)
        let wide = try ReferenceFocal.estimate(pairs, referenceSize: Self.referenceSize, currentCamera: Self.current, config: every)
        #expect(wide.span.lowerBound < 0.35 * 900 && wide.span.upperBound > 9 * 900, "\(wide.span)")
        var best = ReferenceFocalConfig()
        best.spanInliers = 0
        best.solver = .scan
        let alone = try ReferenceFocal.estimate(pairs, referenceSize: Self.referenceSize, currentCamera: Self.current, config: best)
        #expect(alone.span.lowerBound == alone.span.upperBound && abs(alone.span.lowerBound / focal - 1) < 0.05, "\(alone.span)")
        // Every solver finds the focal length here (the span is the scan's grid; a refined answer may lie between its points).
        for solver in ReferenceFocalSolver.allCases {
            var config = ReferenceFocalConfig()
            config.solver = solver
            let answer = try ReferenceFocal.estimate(pairs, referenceSize: Self.referenceSize, currentCamera: Self.current, config: config)
            #expect(abs(answer.camera.fx / focal - 1) < 0.02, "\(solver): \(answer.camera.fx)")
        }
    }

    /// A print cropped off-centre: its principal point 36 px right of and 27 px above the centre (4 % and 3 % of its
    /// side), the camera moved sideways and turned mostly about the vertical. The vertical offset is what the relative
    /// pose determines: estimated with the focal length it is found within 3 px, while the horizontal stays within its
    /// prior. The focal length is within 3 %, and its sigma covers the error within 2 sigma; assumed exact at the centre
    /// (principalPointSigma 0, no floor on the sigma), the focal length claims a sigma ten times smaller than its error.
    @Test func anOffCentrePrincipalPointIsEstimatedWithTheFocalLength() throws {
        let focal = 1200.0
        let pairs = Self.pairs(focal: focal, rotation: Matrix3.rotation(axis: SIMD3(0.3, 1, 0.1), angle: 20 * .pi / 180),
                               translation: SIMD3(1, 0.2, 0.3), offset: (36, -27))
        let found = try ReferenceFocal.estimate(pairs, referenceSize: Self.referenceSize, currentCamera: Self.current, config: ReferenceFocalConfig())
        #expect(abs(found.camera.cy - 422.5) < 3 && abs(found.camera.cx - 485.5) < 36, "\(found.camera)")
        let error = abs(found.camera.fx - focal) / focal * 100
        #expect(error < 3 && error < 2 * found.focalSigmaPercent, "error \(error) %, sigma \(found.focalSigmaPercent) %")

        var centred = ReferenceFocalConfig()
        centred.principalPointSigma = 0
        centred.minSigmaPercent = 0
        let assumed = try ReferenceFocal.estimate(pairs, referenceSize: Self.referenceSize, currentCamera: Self.current, config: centred)
        let assumedError = abs(assumed.camera.fx - focal) / focal * 100
        #expect(assumed.camera.cx == 449.5 && assumed.camera.cy == 449.5)
        #expect(assumedError > 10 * assumed.focalSigmaPercent, "error \(assumedError) %, sigma \(assumed.focalSigmaPercent) %")
    }

    /// The cameras at one place (the person at the vantage point, turned 8°): the fundamental matrix is undetermined,
    /// the rotation gives the focal length within 1 %.
    @Test func aRotationGivesTheFocalLength() throws {
        let pairs = Self.pairs(focal: 1600, rotation: Matrix3.rotation(axis: SIMD3(1, 1, 0.2), angle: 8 * .pi / 180),
                               translation: SIMD3(0, 0, 0))
        let found = try ReferenceFocal.estimate(pairs, referenceSize: Self.referenceSize, currentCamera: Self.current,
                                                config: ReferenceFocalConfig())
        #expect(found.model == .rotation)
        #expect(abs(found.camera.fx - 1600) / 1600 < 0.01, "\(found.camera.fx)")
        // Its sigma is the floor's (pose.referenceFocal.minSigmaPercent): the residuals alone say less.
        #expect(found.focalSigmaPercent == ReferenceFocalConfig().minSigmaPercent)
    }

    /// Random pairs hold no camera: refused, or a spread far past pose.referenceFocal.maxSigmaPercent.
    @Test func unrelatedMatchesGiveNoFocalLength() throws {
        var random = SplitMix(seed: 3)
        let a = (0..<200).map { _ in Point2(x: random.uniform(0, 900), y: random.uniform(0, 900)) }
        let b = (0..<200).map { _ in Point2(x: random.uniform(0, 1280), y: random.uniform(0, 960)) }
        do {
            let found = try ReferenceFocal.estimate(Correspondences(matches: [], reference: a, current: b), referenceSize: Self.referenceSize,
                                                    currentCamera: Self.current, config: ReferenceFocalConfig())
            #expect(found.focalSigmaPercent > ReferenceFocalConfig().maxSigmaPercent, "\(found)")
        } catch let error as RephotoError {
            #expect(error.kind == .estimationFailed)
        }
    }

    /// Degenerate correspondences (one point repeated, or all on a line) hold no camera: refused as such, not an
    /// internal error from OpenCV's estimators.
    @Test func degenerateCorrespondencesAreRefused() throws {
        let repeated = Correspondences(matches: [], reference: Array(repeating: Point2(x: 10, y: 10), count: 40),
                                       current: Array(repeating: Point2(x: 20, y: 20), count: 40))
        let line = Correspondences(matches: [], reference: (0..<40).map { Point2(x: Double($0) * 10, y: 100) },
                                   current: (0..<40).map { Point2(x: Double($0) * 12, y: 300) })
        for pairs in [repeated, line] {
            let error = #expect(throws: RephotoError.self) {
                try ReferenceFocal.estimate(pairs, referenceSize: Self.referenceSize, currentCamera: Self.current, config: ReferenceFocalConfig())
            }
            #expect(error?.kind == .estimationFailed, "\(error?.message ?? "")")
        }
    }
}
