import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit
import RephotoEvaluation
import RephotoShim
import RephotoShimTools

/// The LO-MSAC estimator and its gate on correspondences generated from a known pose: the truth is exact,
/// the noise and the outliers are ours.
@Suite struct RelativePoseEstimatorTests {
    let camera = CameraIntrinsics(fx: 1000, fy: 1000, cx: 640, cy: 480)

    /// `inliers` projections of random points 4-20 m away (1 px Gaussian-like noise), then `outliers` random
    /// pixel pairs, shuffled.
    func correspondences(rotation r: Matrix3, translation t: SIMD3<Double>, inliers: Int, outliers: Int, seed: UInt64,
                         depth: ClosedRange<Double> = 4...20) -> Correspondences {
        var random = SplitMix(seed: seed)
        var pairs: [(Point2, Point2)] = []
        func noise() -> Double { (0..<4).map { _ in random.uniform(-0.5, 0.5) }.reduce(0, +) }  // sigma ~0.58 px
        while pairs.count < inliers {
            let z = random.uniform(depth.lowerBound, depth.upperBound)
            let x = SIMD3(random.uniform(-0.6, 0.6) * z, random.uniform(-0.45, 0.45) * z, z)
            let y = r * x + t
            guard y.z > 0.5 else { continue }
            let a = Point2(x: camera.fx * x.x / x.z + camera.cx + noise(), y: camera.fy * x.y / x.z + camera.cy + noise())
            let b = Point2(x: camera.fx * y.x / y.z + camera.cx + noise(), y: camera.fy * y.y / y.z + camera.cy + noise())
            guard (0..<1280).contains(b.x), (0..<960).contains(b.y) else { continue }
            pairs.append((a, b))
        }
        for _ in 0..<outliers {
            pairs.append((Point2(x: random.uniform(0, 1280), y: random.uniform(0, 960)), Point2(x: random.uniform(0, 1280), y: random.uniform(0, 960))))
        }
        pairs.shuffle(using: &random)
        return Correspondences(matches: [], reference: pairs.map(\.0), current: pairs.map(\.1))
    }

    func estimate(_ pairs: Correspondences, _ config: PoseConfig = PoseConfig()) throws -> RelativePose {
        let h = try HomographyEstimate.estimate(pairs, config: PipelineConfig().homography)
        return try RelativePose.estimate(pairs, referenceCamera: camera, currentCamera: camera, homography: h, config: config)
    }

    /// 80 % outliers: 1,000 OpenCV RANSAC iterations find an all-inlier sample only by luck, the adaptive
    /// LO-MSAC draws what the inlier ratio needs.
    @Test(arguments: [UInt64(1), 2, 3])
    func recoversAWideBaselinePoseAmongManyOutliers(seed: UInt64) throws {
        let r = Fixtures.rotationXYZ(degrees: 5, 25, -3)
        let direction = SIMD3(-2.0, 0.2, 0.6), t = direction / length(direction)
        let pairs = correspondences(rotation: r, translation: t * 3, inliers: 120, outliers: 480, seed: seed)
        let pose = try estimate(pairs)
        #expect(GroundTruthErrors.rotationError(estimate: pose.rotation, truth: r) < 0.2)
        let translation = try #require(pose.translation)
        #expect(GroundTruthErrors.translationDirectionError(estimate: translation, truth: t) < 1)
        let evidence = try #require(pose.evidence)
        #expect(abs(evidence.inliers - 120) <= 20, "\(evidence.inliers) inliers")
        #expect(evidence.iterations > 100, "adaptive stopping at 20 % inliers needs thousands of samples, drew \(evidence.iterations)")
        #expect(!pose.rotationOnly)
    }

    @Test func sameSeedSameAnswerAndOtherSeedsAgree() throws {
        let r = Fixtures.rotationXYZ(degrees: -4, 12, 2)
        let pairs = correspondences(rotation: r, translation: SIMD3(1, 0.1, 0.3), inliers: 200, outliers: 200, seed: 9)
        let first = try estimate(pairs), again = try estimate(pairs)
        #expect(first.rotation == again.rotation && first.translation == again.translation)
        var other = PoseConfig()
        other.seed = 12345
        let reseeded = try estimate(pairs, other)
        #expect(Matrix3.angleDegrees(between: first.rotation, and: reseeded.rotation) < 0.25)
    }

    /// Matches with no geometric relation at all: some essential matrix always fits a few of them, the gate
    /// must refuse it rather than report a pose.
    @Test(arguments: [UInt64(4), 5, 6])
    func unrelatedMatchesAreRefused(seed: UInt64) throws {
        let pairs = correspondences(rotation: .identity, translation: SIMD3(1, 0, 0), inliers: 0, outliers: 300, seed: seed)
        #expect {
            _ = try estimate(pairs)
        } throws: { error in
            (error as? RephotoError)?.kind == .estimationFailed
        }
    }

    /// The parallax rule: a 1.5 m sideways step 5-10 m from the scene has parallax, a 2 mm step has none.
    @Test func parallaxDecidesWhetherTheTranslationIsObservable() throws {
        let r = Fixtures.rotationXYZ(degrees: 1, -6, 0.5)
        let step = try estimate(correspondences(rotation: r, translation: SIMD3(1.5, 0, 0.2), inliers: 300, outliers: 60, seed: 3, depth: 5...10))
        let evidence = try #require(step.evidence)
        #expect(!step.rotationOnly && evidence.parallaxDegrees > 5, "parallax \(evidence.parallaxDegrees)°")
        #expect(GroundTruthErrors.translationDirectionError(estimate: try #require(step.translation), truth: SIMD3(1.5, 0, 0.2)) < 2)

        let still = try estimate(correspondences(rotation: r, translation: SIMD3(0.002, 0, 0), inliers: 300, outliers: 60, seed: 3, depth: 5...10))
        #expect(still.rotationOnly && still.translation == nil)
        #expect(GroundTruthErrors.rotationError(estimate: still.rotation, truth: r) < 0.1)
        #expect(Matrix3.angleDegrees(between: try #require(still.pureRotation), and: r) < 0.1)
    }
}

/// The five-point solver alone, on exact correspondences of known poses: the true essential matrix must be
/// among its solutions every time.
@Suite struct FivePointSolverTests {
    func solve(_ a: [SIMD3<Double>], _ b: [SIMD3<Double>]) throws -> [[Double]] {
        let ax = a.flatMap { [$0.x / $0.z, $0.y / $0.z] }, bx = b.flatMap { [$0.x / $0.z, $0.y / $0.z] }
        var solutions = [Double](repeating: 0, count: 90)
        var count: Int32 = 0
        var status = rp_status()
        #expect(rp_tools_five_point(ax, bx, &solutions, &count, &status) == 0)
        return (0..<Int(count)).map { Array(solutions[(9 * $0)..<(9 * $0 + 9)]) }
    }

    @Test func findsTheTrueEssentialMatrixForEveryRandomPose() throws {
        var random = SplitMix(seed: 42)
        var found = 0, total = 0
        for _ in 0..<500 {
            let r = Fixtures.rotationXYZ(degrees: random.uniform(-30, 30), random.uniform(-30, 30), random.uniform(-30, 30))
            let t = SIMD3(random.uniform(-1, 1), random.uniform(-1, 1), random.uniform(-1, 1))
            let tn = t / length(t)
            let points = (0..<5).map { _ in SIMD3(random.uniform(-2, 2), random.uniform(-2, 2), random.uniform(3, 8)) }
            let moved = points.map { r * $0 + tn }
            guard moved.allSatisfy({ $0.z > 0.1 }) else { continue }
            // E = [t]x R, unit Frobenius norm; a solution may carry either sign.
            let skew = Matrix3([0, -tn.z, tn.y, tn.z, 0, -tn.x, -tn.y, tn.x, 0])
            let m = skew * r
            let e = [m.row0, m.row1, m.row2].flatMap { [$0.x, $0.y, $0.z] }
            let norm = sqrt(e.reduce(0) { $0 + $1 * $1 })
            let truth = e.map { $0 / norm }
            let solutions = try solve(points, moved)
            #expect(solutions.count <= 10)
            total += 1
            if solutions.contains(where: { s in
                min(zip(s, truth).map { ($0 - $1) * ($0 - $1) }.reduce(0, +), zip(s, truth).map { ($0 + $1) * ($0 + $1) }.reduce(0, +)) < 1e-12
            }) { found += 1 }
        }
        #expect(total > 400)
        #expect(found == total, "the true E among the solutions for \(found) of \(total) poses")
    }
}
