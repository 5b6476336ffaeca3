import RephotoTestSupport
import Foundation
import Testing
import RephotoKit
import RephotoEvaluation
import RephotoShim
import RephotoShimTools

/// The estimator's stages on their own (CShims/Core/pose/), through the tools-only entry points: the robust loop
/// over the essential-matrix estimator, and the refinement. Normalised points (focal 1000 px) from a known pose:
/// the truth is the synthetic pose and the labels the generator gave.
@Suite struct RelativePoseStageTests {
    static let focal = 1000.0

    struct Scene {
        var a: [Double] = [], b: [Double] = []  // x, y pairs, normalised
        var truth: [Bool] = []                  // generated from the pose
        var count: Int { truth.count }
    }

    /// `inliers` points 4-20 m away seen from both cameras, each coordinate off by up to `noise` pixels (uniform),
    /// and `outliers` random pairs, shuffled.
    func scene(rotation r: Matrix3, translation t: SIMD3<Double>, inliers: Int, outliers: Int, noise: Double, seed: UInt64) -> Scene {
        var random = SplitMix(seed: seed)
        var pairs: [(SIMD2<Double>, SIMD2<Double>, Bool)] = []
        func jitter() -> Double { noise > 0 ? random.uniform(-noise, noise) / Self.focal : 0 }
        while pairs.count < inliers {
            let z = random.uniform(4, 20)
            let x = SIMD3(random.uniform(-0.6, 0.6) * z, random.uniform(-0.45, 0.45) * z, z)
            let y = r * x + t
            guard y.z > 0.5, abs(y.x / y.z) < 0.64, abs(y.y / y.z) < 0.48 else { continue }
            pairs.append((SIMD2(x.x / x.z + jitter(), x.y / x.z + jitter()), SIMD2(y.x / y.z + jitter(), y.y / y.z + jitter()), true))
        }
        for _ in 0..<outliers {
            pairs.append((SIMD2(random.uniform(-0.64, 0.64), random.uniform(-0.48, 0.48)),
                          SIMD2(random.uniform(-0.64, 0.64), random.uniform(-0.48, 0.48)), false))
        }
        pairs.shuffle(using: &random)
        var out = Scene()
        for (p, q, inlier) in pairs {
            out.a += [p.x, p.y]
            out.b += [q.x, q.y]
            out.truth.append(inlier)
        }
        return out
    }

    func loopParameters(seed: UInt64, maxIterations: Int32 = 2000) -> rp_robust_params {
        var params = rp_robust_params()
        params.essential.method = RP_METHOD_LO_MSAC
        params.loop.confidence = 0.9999
        params.loop.max_iterations = maxIterations
        params.loop.seed = seed
        return params
    }

    /// 120 inliers and 80 outliers (40 %), ±0.5 px noise, a 2 px threshold: the loop certifies its answer as soon
    /// as the adaptive bound allows (114 samples at 60 % inliers and 0.9999), within 0.2° of the true rotation and
    /// 1° of the translation direction, with every generated inlier labelled and at most a few outliers (a random
    /// pair lies within 2 px of an epipolar line about 1 % of the time).
    @Test(arguments: [UInt64(1), 2, 3])
    func theLoopRecoversThePoseAmongFortyPercentOutliersAndLabelsTheInliers(seed: UInt64) throws {
        let r = Fixtures.rotationXYZ(degrees: 5, -20, 3)
        let t = SIMD3(1.0, 0.1, 0.3)
        let scene = scene(rotation: r, translation: t, inliers: 120, outliers: 80, noise: 0.5, seed: seed)
        var params = loopParameters(seed: seed)
        var rotation = [Double](repeating: 0, count: 9), translation = [Double](repeating: 0, count: 3)
        var inliers = [UInt8](repeating: 0, count: scene.count)
        var samples: Int32 = 0, certified: Int32 = 0
        var status = rp_status()
        let code = rp_tools_robust_essential(scene.a, scene.b, Int32(scene.count), 2 / Self.focal, &params, &rotation, &translation,
                                             &inliers, inliers.count, &samples, &certified, &status)
        #expect(code == 0, "\(status.code)")
        #expect(certified == 1 && samples < 200, "\(samples) samples")
        #expect(GroundTruthErrors.rotationError(estimate: Matrix3(rotation), truth: r) < 0.2)
        let direction = SIMD3(translation[0], translation[1], translation[2])
        #expect(GroundTruthErrors.translationDirectionError(estimate: direction, truth: t / length(t)) < 1)
        let labelled = zip(inliers, scene.truth)
        #expect(labelled.filter { $0.1 && $0.0 == 0 }.isEmpty, "generated inliers left out")
        #expect(labelled.filter { !$0.1 && $0.0 != 0 }.count <= 3, "outliers taken in")
    }

    /// The loop draws from its seed alone: the same seed gives the same model and samples, bit for bit, and the
    /// portable kernels the AVX2 kernels' answer.
    @Test func theLoopIsDeterministicAndKernelIndependent() throws {
        let r = Fixtures.rotationXYZ(degrees: -4, 12, 2)
        let scene = scene(rotation: r, translation: SIMD3(-0.8, 0.2, 0.5), inliers: 60, outliers: 60, noise: 0.5, seed: 9)
        func run(portable: Bool) -> ([Double], [Double], [UInt8], Int32) {
            var params = loopParameters(seed: 5)
            params.essential.portable_kernels = portable ? 1 : 0
            var rotation = [Double](repeating: 0, count: 9), translation = [Double](repeating: 0, count: 3)
            var inliers = [UInt8](repeating: 0, count: scene.count)
            var samples: Int32 = 0, certified: Int32 = 0
            var status = rp_status()
            #expect(rp_tools_robust_essential(scene.a, scene.b, Int32(scene.count), 2 / Self.focal, &params, &rotation, &translation,
                                              &inliers, inliers.count, &samples, &certified, &status) == 0)
            return (rotation, translation, inliers, samples)
        }
        let first = run(portable: false)
        let again = run(portable: false), portable = run(portable: true)
        for other in [again, portable] {
            #expect(other.0 == first.0 && other.1 == first.1 && other.2 == first.2 && other.3 == first.3)
        }
        #expect(GroundTruthErrors.rotationError(estimate: Matrix3(first.0), truth: r) < 0.5)
    }

    func refine(_ scene: Scene, tau: Double, from rotation: Matrix3, _ translation: SIMD3<Double>, iterations: Int32 = 50,
                portable: Bool = false) throws -> (Matrix3, SIMD3<Double>, Double) {
        var rr = rotation.elements, tt = [translation.x, translation.y, translation.z]
        var cost = 0.0
        var status = rp_status()
        let code = rp_tools_refine_pose(scene.a, scene.b, Int32(scene.count), tau, iterations, portable ? 1 : 0, &rr, &tt, &cost, &status)
        #expect(code == 0, "\(status.code)")
        return (Matrix3(rr), SIMD3(tt[0], tt[1], tt[2]), cost)
    }

    /// Noise-free points, the refinement started 1° off in rotation and 4° off in translation (a 50 px threshold
    /// holds every point at the start): it converges to the truth to rounding (measured: 1e-14°, a cost of 1e-31),
    /// and the portable kernels take the same steps.
    @Test(arguments: [UInt64(11), 12, 13])
    func theRefinementConvergesToTheTruthFromAPerturbedStart(seed: UInt64) throws {
        let r = Fixtures.rotationXYZ(degrees: 3, 25, -2)
        let t = SIMD3(-1.0, 0.05, 0.4)
        let truth = t / length(t)
        let scene = scene(rotation: r, translation: t, inliers: 100, outliers: 0, noise: 0, seed: seed)
        var random = SplitMix(seed: seed ^ 0x5EED)
        let axis = random.unitVector()
        let start = Quaternion(axis: axis, angle: 1 * .pi / 180).rotationMatrix * r
        let v = random.unitVector()  // turned about an axis orthogonal to it: 4° off
        let normal = SIMD3(truth.y * v.z - truth.z * v.y, truth.z * v.x - truth.x * v.z, truth.x * v.y - truth.y * v.x)
        let off = Quaternion(axis: normal / length(normal), angle: 4 * .pi / 180).rotationMatrix * truth
        #expect(GroundTruthErrors.rotationError(estimate: start, truth: r) > 0.99)

        let (rotation, translation, cost) = try refine(scene, tau: 50 / Self.focal, from: start, off)
        #expect(GroundTruthErrors.rotationError(estimate: rotation, truth: r) < 1e-8)
        #expect(GroundTruthErrors.translationDirectionError(estimate: translation, truth: truth) < 1e-8)
        #expect(cost < 1e-24, "MSAC cost \(cost)")
        let (portableRotation, portableTranslation, portableCost) = try refine(scene, tau: 50 / Self.focal, from: start, off, portable: true)
        #expect(portableRotation.elements == rotation.elements && portableTranslation == translation && portableCost == cost)
    }

    /// No step at all: zero iterations return the start, unit length, and its cost.
    @Test func zeroIterationsLeaveThePose() throws {
        let r = Fixtures.rotationXYZ(degrees: 3, 25, -2)
        let scene = scene(rotation: r, translation: SIMD3(-1, 0.05, 0.4), inliers: 30, outliers: 0, noise: 0, seed: 4)
        let (rotation, translation, _) = try refine(scene, tau: 50 / Self.focal, from: r, SIMD3(-2, 0.1, 0.8), iterations: 0)
        #expect(rotation.elements == r.elements)
        #expect(abs(length(translation) - 1) < 1e-15)
    }
}
