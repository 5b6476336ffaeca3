import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit
import RephotoEvaluation
import RephotoSynthesis
import RephotoData
import RephotoShim
import RephotoShimTools

/// The LO-MSAC estimator and its gate on correspondences generated from a known pose: the truth is exact,
/// the noise and the outliers are ours.
@Suite struct RelativePoseEstimatorTests {
    let camera = CameraIntrinsics(fx: 1000, fy: 1000, cx: 640, cy: 480)

    /// `inliers` projections of random points 4-20 m away (1 px Gaussian-like noise), then `outliers` random
    /// pixel pairs, shuffled.
    func correspondences(rotation r: Matrix3, translation t: SIMD3<Double>, inliers: Int, outliers: Int, seed: UInt64,
                         depth: ClosedRange<Double> = 4...20, noiseScale: Double = 1,
                         blurred: (share: Double, noiseScale: Double)? = nil) -> Correspondences {
        var random = SplitMix(seed: seed)
        var pairs: [(Point2, Point2)] = []
        var scale = noiseScale
        func noise() -> Double { scale * (0..<4).map { _ in random.uniform(-0.5, 0.5) }.reduce(0, +) }  // sigma ~0.58 px
        while pairs.count < inliers {
            // A share of the features localised worse (blurred, foreshortened): the noise real matches have.
            if let blurred { scale = random.uniform(0, 1) < blurred.share ? blurred.noiseScale : noiseScale }
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

    /// The same correspondences with keypoint frames: the inliers' orientations turn by `turn` and their scales
    /// grow by `zoom` octaves, each within ±`spread`/2 (when `spread` is nil, at random like the outliers'), and the
    /// outliers' frames turn and scale at random (0-360°, ±2 octaves), as a wrong match's do.
    func framed(rotation r: Matrix3, translation t: SIMD3<Double>, inliers: Int, outliers: Int, seed: UInt64,
                turn: Double = 25, zoom: Double = 0.3, spread: (degrees: Double, octaves: Double)? = (30, 0.6)) -> Correspondences {
        let bare = correspondences(rotation: r, translation: t, inliers: inliers, outliers: 0, seed: seed)
        let noise = correspondences(rotation: r, translation: t, inliers: 0, outliers: outliers, seed: seed + 1000)
        var random = SplitMix(seed: seed ^ 0xF7A3)
        var reference: [Keypoint.Frame] = [], current: [Keypoint.Frame] = []
        for k in 0..<(inliers + outliers) {
            let a = Keypoint.Frame(angle: random.uniform(0, 360), size: 10 * pow(2, random.uniform(-1, 1)))
            let consistent = k < inliers ? spread : nil
            let change = consistent.map { (turn + random.uniform(-0.5, 0.5) * $0.degrees, zoom + random.uniform(-0.5, 0.5) * $0.octaves) }
                ?? (random.uniform(0, 360), random.uniform(-2, 2))
            reference.append(a)
            current.append(Keypoint.Frame(angle: (a.angle + change.0).truncatingRemainder(dividingBy: 360) + (a.angle + change.0 < 0 ? 360 : 0),
                                          size: a.size * pow(2, change.1)))
        }
        // Interleaved, so that the inliers are not all in front (PROSAC is off for bare points anyway).
        var order = Array(0..<(inliers + outliers))
        order.shuffle(using: &random)
        let all = Correspondences(matches: [], reference: bare.reference + noise.reference, current: bare.current + noise.current,
                                  frames: (reference, current))
        return all.reordered(order)
    }

    /// A search's outcome with this evidence and no more (the rest zero, no rival): what the gate and `decide`
    /// read, without a search.
    func outcome(inliers: Int32, sigma: Double, parallax: Double, log10Chance: Double) -> rp_relative_pose {
        var out = rp_relative_pose()
        out.inliers = inliers
        out.in_front = inliers
        out.rotation_sigma_degrees = sigma
        out.translation_sigma_degrees = sigma
        out.parallax_degrees = parallax
        out.log10_chance = log10Chance
        out.rival_excess = .infinity
        // A general motion's GRIC: the essential matrix well ahead of a plane and of a pure rotation.
        (out.gric_essential, out.gric_homography, out.gric_rotation) = (100, 200, 300)
        (out.well_triangulated, out.well_in_front, out.cheirality_log10_chance) = (inliers, inliers, -Double(inliers) * log10(2))
        return out
    }

    func search(_ pairs: Correspondences, _ config: PoseConfig = PoseConfig()) throws -> rp_relative_pose {
        try RelativePose.search(pairs, referenceCamera: camera, currentCamera: camera, settings: .init(config, pairs: pairs)).get().pose
    }

    /// 14 inliers among 80 matches (17.5 %): uniform five-point sampling needs about 56,000 samples for its 0.9999
    /// bound and stops at the 20,000 cap. With the keypoints' frames, the screen solves only samples whose frames
    /// turn and scale alike, so the same search certifies on a fraction of the solver calls, and finds the truth.
    @Test(arguments: [UInt64(41), 42, 43])
    func theSampleScreenCertifiesALowInlierSearchOnFewSolverCalls(seed: UInt64) throws {
        let r = Fixtures.rotationXYZ(degrees: 4, -30, 2)
        let direction = SIMD3(1.5, -0.1, 0.4), t = direction / length(direction)
        let pairs = framed(rotation: r, translation: t * 3, inliers: 14, outliers: 66, seed: seed)
        // 100 samples at least, as the stopping rule alone would end it: with pose.minIterations' 1,000 the 16
        // runners-up kept are all near the truth's basin in two seeds of three, and the rival below is not there.
        var on = PoseConfig()
        on.minIterations = 100
        var off = on
        off.screenDegrees = 0
        let unscreened = try search(pairs, off), screened = try search(pairs, on)
        #expect(unscreened.iterations >= 20_000, "without the screen the cap stops the search: \(unscreened.iterations) samples")
        #expect(screened.iterations < 20_000 / 5, "screened: \(screened.iterations) samples solved")
        #expect(GroundTruthErrors.rotationError(estimate: Matrix3(screened.R), truth: r) < 1)
        #expect(GroundTruthErrors.translationDirectionError(estimate: SIMD3(screened.t.0, screened.t.1, screened.t.2), truth: t) < 5)
        #expect(screened.inliers >= 12, "\(screened.inliers) inliers")
        // It drew more samples than the cap: certified only thanks to the screen, so its runners-up were optimised
        // and the best one 10° or more away is reported as the rival, as an uncertified search's would be.
        #expect(screened.rival_degrees >= 10 && screened.rival_excess.isFinite, "rival \(screened.rival_degrees)°, excess \(screened.rival_excess)")
    }

    /// Frames that say little (the inliers' turn within 150° and scale within 2.5 octaves of each other, against a
    /// screen of 60° and 1.5) must not cost the answer: the stopping rule counts the all-inlier samples the screen
    /// turns away, so the search goes on drawing. On these seeds it solved 230-373 samples; with that allowance
    /// taken out of the rule it stopped after 18-51 (one ended 0.67° off, with fewer inliers).
    @Test(arguments: [UInt64(44), 46, 48, 49])
    func aScreenOnWeakFramesWaitsForTheSamplesItTurnsAway(seed: UInt64) throws {
        let r = Fixtures.rotationXYZ(degrees: -3, 15, 1)
        let pairs = framed(rotation: r, translation: SIMD3(1, 0.1, 0.2), inliers: 50, outliers: 150, seed: seed, spread: (150, 2.5))
        var config = PoseConfig()
        config.minIterations = 0
        let screened = try search(pairs, config)
        #expect(screened.iterations >= 100, "the rule stopped after \(screened.iterations) samples solved")
        #expect(GroundTruthErrors.rotationError(estimate: Matrix3(screened.R), truth: r) < 0.5)
        #expect(screened.inliers >= 40, "\(screened.inliers) inliers")
    }

    /// Frames that never agree (each correspondence's scale changes an octave more than the last, so any five span
    /// four octaves): the screen turns every draw away, and the failure says so, with its bounds, rather than
    /// blaming the matches. Unscreened, the same matches give the pose.
    @Test func aScreenThatTurnsEveryDrawAwayIsNamedInTheFailure() throws {
        let r = Fixtures.rotationXYZ(degrees: 1, 12, 0)
        let bare = correspondences(rotation: r, translation: SIMD3(1, 0, 0.2), inliers: 20, outliers: 0, seed: 46)
        let frames = bare.reference.indices.map { Keypoint.Frame(angle: 10, size: pow(2, Double($0) / 4)) }
        let current = bare.reference.indices.map { Keypoint.Frame(angle: 10, size: frames[$0].size * pow(2, Double($0))) }
        let pairs = Correspondences(matches: [], reference: bare.reference, current: bare.current, frames: (frames, current))
        do {
            _ = try search(pairs)
            Issue.record("the screen passed a sample")
        } catch let error as RephotoError {
            #expect(error.kind == .estimationFailed)
            #expect(error.message.contains("in 0 samples (the sample screen passed 0 of 320000 draws: pose.screenDegrees 60, pose.screenOctaves 1.5)"),
                    "\(error.message)")
        }
        var off = PoseConfig()
        off.screenDegrees = 0
        #expect(GroundTruthErrors.rotationError(estimate: Matrix3(try search(pairs, off).R), truth: r) < 1)
    }

    /// A detector without orientations (angle -1), a frame that is not a number, or frames out of step with the points
    /// turn the screen off: the search is the bare points' search, bit for bit. Reordering keeps each frame with its
    /// correspondence.
    @Test func framesWithoutOrientationLeaveTheSearchUnscreened() throws {
        let r = Fixtures.rotationXYZ(degrees: 2, 20, -1)
        let pairs = framed(rotation: r, translation: SIMD3(1, 0, 0.3), inliers: 30, outliers: 90, seed: 45)
        let frames = try #require(pairs.frames)
        let reversed = pairs.reordered(Array(pairs.reference.indices.reversed()))
        #expect(reversed.frames?.current.first == frames.current.last && reversed.current.first == pairs.current.last)
        let bare = Correspondences(matches: [], reference: pairs.reference, current: pairs.current)
        let expected = try search(bare)
        var unoriented = pairs, odd = pairs
        unoriented.frames = (frames.reference.map { Keypoint.Frame(angle: -1, size: $0.size) }, frames.current)
        odd.frames!.current[7].size = .nan
        var short = pairs  // frames edited out of step with the points: not read at all (the shim would overrun)
        short.frames!.current.removeLast()
        for variant in [unoriented, odd, short] {
            let found = try search(variant)
            #expect(Matrix3(found.R) == Matrix3(expected.R) && found.iterations == expected.iterations && found.inliers == expected.inliers)
        }
        let screened = try search(pairs)
        #expect(screened.iterations != expected.iterations, "with frames the screen is on")
    }

    func estimate(_ pairs: Correspondences, _ config: PoseConfig = PoseConfig()) throws -> RelativePose {
        let h = try HomographyEstimate.estimate(pairs, config: PipelineConfig().homography)
        return try RelativePose.estimate(pairs, referenceCamera: camera, currentCamera: camera, homography: h, config: config)
    }

    /// Without a usable essential matrix, a pure rotation that explains the homography's inliers still fixes the
    /// rotation (counted by the same code as the pose's rotation support); a step before a deep scene does not.
    @Test(arguments: [UInt64(5), 6])
    func withoutAnEssentialMatrixOnlyAPureRotationOfTheHomographyInliersStands(seed: UInt64) throws {
        let r = Fixtures.rotationXYZ(degrees: 3, -12, 2)
        let failed = RelativePose.SearchOutcome.failure(RephotoError(.estimationFailed, "no essential matrix (test)"))
        let turned = correspondences(rotation: r, translation: .zero, inliers: 150, outliers: 50, seed: seed)
        let h = try HomographyEstimate.estimate(turned, config: PipelineConfig().homography)
        let pose = try RelativePose.decide(failed, pairs: turned, referenceCamera: camera, currentCamera: camera, homography: h,
                                           config: PoseConfig())
        #expect(pose.rotationSource == .homography && pose.rotationOnly && pose.translation == nil)
        #expect(GroundTruthErrors.rotationError(estimate: pose.rotation, truth: r) < 0.1)
        let stepped = correspondences(rotation: r, translation: SIMD3(1.5, 0.2, 0.4), inliers: 150, outliers: 50, seed: seed)
        let steppedH = try HomographyEstimate.estimate(stepped, config: PipelineConfig().homography)
        #expect(steppedH.inlierCount >= PoseConfig().minInliers, "the homography's inliers must reach the rule")
        #expect {
            try RelativePose.decide(failed, pairs: stepped, referenceCamera: camera, currentCamera: camera, homography: steppedH,
                                    config: PoseConfig())
        } throws: { error in
            (error as? RephotoError)?.refusal == .noModel("no essential matrix (test)")
        }
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

    /// The Cauchy polish (`pose.cauchyScale`) moves the pose off the MSAC refinement's, to the minimum of a loss
    /// that trusts the closest inliers most, as a local step that keeps the pose right.
    @Test(arguments: [UInt64(1), 2, 3])
    func theCauchyPolishIsALocalStepThatKeepsThePoseRight(seed: UInt64) throws {
        let r = Fixtures.rotationXYZ(degrees: 5, 25, -3)
        let direction = SIMD3(-2.0, 0.2, 0.6), t = direction / length(direction)
        let pairs = correspondences(rotation: r, translation: t * 3, inliers: 120, outliers: 480, seed: seed)
        var msac = PoseConfig()
        msac.cauchyScale = 0
        let plain = try search(pairs, msac), polished = try search(pairs)
        let rotation = Matrix3(polished.R), translation = SIMD3(polished.t.0, polished.t.1, polished.t.2)
        #expect(GroundTruthErrors.rotationError(estimate: rotation, truth: r) < 0.2)
        #expect(GroundTruthErrors.translationDirectionError(estimate: translation, truth: t) < 1)
        let moved = Matrix3.angleDegrees(between: Matrix3(plain.R), and: rotation)
        #expect(moved > 1e-4 && moved < 0.5, "the polish moved the rotation \(moved)°")
        #expect(abs(Int(polished.inliers) - Int(plain.inliers)) <= 5)
    }

    /// The Cauchy polish (`pose.cauchyScale`, 0.7 by default). Real matches mix sharp localisations with blurred
    /// or foreshortened ones: within the threshold the true pose's Sampson errors on Strecha at full resolution and
    /// on the synthetic orbits have a kurtosis of 3.5-3.7 (a Gaussian cut at the threshold has under 3). On such
    /// noise a loss that trusts the closest points most is the more precise estimate. From a known pose, half of
    /// 150 correspondences localised 4 times worse than the rest, 150 outliers, 40 seeds: the polished poses' mean
    /// errors are 0.78 (rotation) and 0.80 (translation) of the MSAC refinement's. On Gaussian noise alone it costs
    /// (1.15 and 1.12): the trade the default makes, docs/decisions.md.
    @Test func theCauchyPolishIsMorePreciseOnMixedLocalisationNoise() throws {
        let r = Fixtures.rotationXYZ(degrees: 5, 25, -3)
        let direction = SIMD3(-2.0, 0.2, 0.6), t = direction / length(direction)
        var msac = PoseConfig()
        msac.cauchyScale = 0
        for (sharp, blurred, bound) in [(0.4, (share: 0.5, noiseScale: 1.6), (0.85, 0.85)), (1.0, nil, (1.25, 1.25))]
            as [(Double, (share: Double, noiseScale: Double)?, (Double, Double))] {
            var errors = [[Double]](repeating: [0, 0], count: 2)
            for seed in UInt64(1)...40 {
                let pairs = correspondences(rotation: r, translation: t * 3, inliers: 150, outliers: 150, seed: seed, noiseScale: sharp, blurred: blurred)
                for (k, config) in [msac, PoseConfig()].enumerated() {
                    let pose = try search(pairs, config)
                    errors[k][0] += GroundTruthErrors.rotationError(estimate: Matrix3(pose.R), truth: r)
                    errors[k][1] += GroundTruthErrors.translationDirectionError(estimate: SIMD3(pose.t.0, pose.t.1, pose.t.2), truth: t)
                }
            }
            let ratio = (errors[1][0] / errors[0][0], errors[1][1] / errors[0][1])
            #expect(ratio.0 < bound.0 && ratio.1 < bound.1, "blurred \(blurred.map { "\($0)" } ?? "none"): polished/MSAC \(ratio)")
        }
    }

    /// 60 true matches (σ ≈ 0.6 px) and a coherent group of 40 wrong ones, exact for another motion 40° away (a
    /// repeated structure's mismatches). The decoy's minimal models fit it exactly and score better than most of
    /// the truth's noisy ones, so when a decoy sample comes first the truth's minimal models never beat it and are
    /// never optimised, and the search certifies the decoy on its own inlier ratio (seeds 61 and 67 did, 40.7°
    /// wrong). A certified search optimises its runners-up from other basins: the truth wins, and the decoy's basin
    /// is reported as the rival.
    @Test(arguments: [UInt64(61), 62, 63, 67])
    func aCertifiedSearchStillOptimisesTheMinimalModelsOfOtherBasins(seed: UInt64) throws {
        let r = Fixtures.rotationXYZ(degrees: 3, 30, -2), t = SIMD3(-0.9, 0.1, 0.4) / length(SIMD3(-0.9, 0.1, 0.4))
        let truth = correspondences(rotation: r, translation: t * 3, inliers: 60, outliers: 0, seed: seed)
        let decoy = correspondences(rotation: Fixtures.rotationXYZ(degrees: -2, -10, 3), translation: SIMD3(1, 0, 0.2) * 3,
                                    inliers: 40, outliers: 0, seed: seed + 500, noiseScale: 0)
        var random = SplitMix(seed: seed ^ 0xB5)
        var order = Array(0..<100)
        order.shuffle(using: &random)
        let pairs = Correspondences(matches: [], reference: truth.reference + decoy.reference, current: truth.current + decoy.current)
            .reordered(order)
        let found = try search(pairs)
        #expect(GroundTruthErrors.rotationError(estimate: Matrix3(found.R), truth: r) < 1)
        #expect(GroundTruthErrors.translationDirectionError(estimate: SIMD3(found.t.0, found.t.1, found.t.2), truth: t) < 3)
        #expect(found.inliers >= 50, "\(found.inliers) inliers")
        #expect(found.rival_degrees > 30 && found.rival_excess.isFinite, "rival \(found.rival_degrees)°, excess \(found.rival_excess)")
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

    /// The AVX2 kernels (scoring, inlier selection, normal equations) and their portable twins do the same
    /// operations in the same order: every output of the estimator, bit for bit, is the same with either.
    @Test(arguments: [UInt64(21), 22])
    func portableAndAVX2KernelsGiveTheSameEstimate(seed: UInt64) throws {
        let pairs = correspondences(rotation: Fixtures.rotationXYZ(degrees: 3, -18, 1), translation: SIMD3(1, 0.2, -0.4),
                                    inliers: 301, outliers: 498, seed: seed)  // 799: a short last block, padded lanes
        let a = pairs.referenceXY, b = pairs.currentXY
        var shimCamera = try camera.shimCamera()
        func run(portable: Bool, cauchyScale: Double = 0) throws -> (rp_relative_pose, [UInt8], [Double]) {
            var config = PoseConfig()
            (config.refine, config.minIterations, config.seed, config.maxParallax, config.cauchyScale) = (true, 100, 7, 100, cauchyScale)
            (config.prosac, config.maxDisagreement, config.runnersUp, config.screenDegrees) = (false, 0, 0, 0)
            var params = try RelativePose.SearchSettings(config, pairs: pairs).shimParameters(portableKernels: portable)
            var out = rp_relative_pose()
            var mask = [UInt8](repeating: 0, count: pairs.count), sampson = [Double](repeating: 0, count: pairs.count)
            var status = rp_status()
            #expect(rp_tools_estimate_relative_pose(a, b, Int32(pairs.count), &shimCamera, &shimCamera, &params, &out, &mask, mask.count,
                                              &sampson, sampson.count, nil, nil, &status) == 0)
            return (out, mask, sampson)
        }
        let (portable, portableMask, portableSampson) = try run(portable: true)
        let (chosen, chosenMask, chosenSampson) = try run(portable: false)
        // Field by field (the struct's padding is not an output).
        func fields(_ p: rp_relative_pose) -> [Double] {
            let matrices: [Double] = withUnsafeBytes(of: (p.R, p.t, p.rotation_only_R)) { Array($0.bindMemory(to: Double.self)) }
            let counts: [Double] = [Double(p.inliers), Double(p.in_front), Double(p.iterations), Double(p.rotation_support),
                                    Double(p.has_twin), Double(p.twin_refutation)]
            let evidence: [Double] = [p.sampson_rms_pixels, p.rotation_sigma_degrees, p.translation_sigma_degrees, p.parallax_degrees,
                                      p.noise_pixels, p.gric_essential, p.gric_homography, p.log10_chance]
            return matrices + counts + evidence
        }
        #expect(fields(portable) == fields(chosen))
        #expect(portableMask == chosenMask && portableSampson == chosenSampson)
        #expect(abs(Int(portable.inliers) - 301) <= 30, "\(portable.inliers) inliers")
        // The Cauchy polish's weighted normal equations too.
        let (polishedPortable, _, _) = try run(portable: true, cauchyScale: 0.7)
        let (polishedChosen, _, _) = try run(portable: false, cauchyScale: 0.7)
        #expect(fields(polishedPortable) == fields(polishedChosen))
        #expect(fields(polishedPortable) != fields(portable), "the polish moved the pose")
        if HammingKernel.avx2.resolved != .avx2 {
            print("RelativePoseEstimatorTests: no AVX2 on this CPU: both runs used the portable kernels")
        }
    }

    /// The vectorised passes against a plain scalar Sampson error, for every count from 0 to 40 (full, short and
    /// padded blocks): the same cost (up to summation order) and the same points within the threshold.
    @Test func vectorisedSampsonPassesEqualTheScalarFormula() throws {
        var random = SplitMix(seed: 77)
        let tau2: Double = 0.002 * 0.002
        for n in 0...40 {
            let r = Fixtures.rotationXYZ(degrees: random.uniform(-10, 10), random.uniform(-10, 10), random.uniform(-10, 10))
            let t = SIMD3(random.uniform(-1, 1), random.uniform(-1, 1), random.uniform(-1, 1))
            let e = Matrix3([0, -t.z, t.y, t.z, 0, -t.x, -t.y, t.x, 0]) * r
            // Half the pairs near the epipolar geometry, half anywhere.
            var a: [Double] = [], b: [Double] = []
            var expectedCost = 0.0, expectedWithin = 0
            for i in 0..<n {
                let x = SIMD3(random.uniform(-0.5, 0.5), random.uniform(-0.4, 0.4), 1.0), depth = random.uniform(2, 10)
                var y = r * (x * depth) + t
                y /= y.z
                if i % 2 == 1 { y = SIMD3(random.uniform(-0.5, 0.5), random.uniform(-0.4, 0.4), 1) }
                y.x += random.uniform(-0.003, 0.003)
                a += [x.x, x.y]
                b += [y.x, y.y]
                let ea = e * x, etb = e.transposed * y
                let den = ea.x * ea.x + ea.y * ea.y + etb.x * etb.x + etb.y * etb.y
                let residual = den > 0 ? dot(y, ea) / den.squareRoot() : 0
                expectedCost += min(residual * residual, tau2)
                expectedWithin += residual * residual < tau2 ? 1 : 0
            }
            for portable in [Int32(1), 0] {
                var cost = 0.0, within: Int32 = 0
                var status = rp_status()
                #expect(rp_tools_sampson_cost(e.elements, a, b, Int32(n), tau2, portable, &cost, &within, &status) == 0)
                #expect(abs(cost - expectedCost) <= 1e-12 * max(expectedCost, tau2), "n \(n) portable \(portable): \(cost) against \(expectedCost)")
                #expect(Int(within) == expectedWithin, "n \(n) portable \(portable): \(within) against \(expectedWithin)")
            }
        }
    }

    /// Rotation-only is a model comparison, not a parallax bound: a pure rotation must explain the inliers (transfer
    /// 80 % of them, or fit no worse than the plane's homography by GRIC) and either GRIC rates it no worse than the
    /// essential matrix, or the translation's own 1-sigma is over pose.maxTranslationSigma. The first numbers are a
    /// held-out car-mounted pair moving forward 0.9 m, flagged rotation-only by the median parallax (0.74°) though
    /// its translation was within 0.5°: GRIC 2963 for E against 3962 for the rotation, translation ±0.10°.
    @Test func rotationOnlyIsAModelComparisonNotAParallaxBound() {
        var out = rp_relative_pose()
        (out.inliers, out.in_front, out.parallax_degrees, out.log10_chance, out.rival_excess) = (584, 575, 0.74, -100, .infinity)
        out.well_triangulated = 500
        func model(support: Int32, gricRotation: Double, sigma: Double = 0.1, planar: Bool = false) -> PoseEvidence.Model {
            out.rotation_support = support
            (out.gric_rotation, out.translation_sigma_degrees) = (gricRotation, sigma)
            (out.gric_essential, out.gric_homography, out.has_twin, out.twin_refutation) = planar ? (2963, 2900, 1, 1) : (2963, 3500, 0, 0)
            return PoseEvidence(out).model(maxTranslationSigma: 5, minTwinRefutation: 5)
        }
        #expect(model(support: 100, gricRotation: 3962) == .general)
        #expect(model(support: 560, gricRotation: 3962) == .general)
        // GRIC prefers the rotation, which explains the inliers: rotation-only, whatever the parallax.
        #expect(model(support: 560, gricRotation: 2963) == .rotationOnly)
        out.parallax_degrees = 20
        #expect(model(support: 560, gricRotation: 2900) == .rotationOnly)
        // The translation unseen (sigma over the bound) and a rotation that explains the inliers: rotation-only;
        // one that does not leaves a general motion, whose translation the gate then reports as uncertain.
        #expect(model(support: 560, gricRotation: 3962, sigma: 6) == .rotationOnly)
        #expect(model(support: 400, gricRotation: 3962, sigma: 6) == .general)
        // A plane GRIC prefers, its other solution hardly refuted: planar, unless the rotation is the better model.
        #expect(model(support: 400, gricRotation: 3962, planar: true) == .planar)
        #expect(model(support: 400, gricRotation: 2900, planar: true) == .rotationOnly)
        #expect(model(support: 400, gricRotation: 2901, planar: true) == .planar)
        // Most inliers without parallax beyond their noise: rotation-only even where GRIC prefers E (Suzanne: its
        // mismatches along the epipolar lines are what E fits), unless a plane whose rotation explains nothing.
        out.well_triangulated = 200
        #expect(model(support: 560, gricRotation: 3962) == .rotationOnly)
        #expect(model(support: 400, gricRotation: 3962) == .rotationOnly)
        #expect(model(support: 400, gricRotation: 3962, planar: true) == .planar)
    }

    /// Cheirality on the inliers whose depth's sign is not noise: a pose stands when chance would rarely (10^-2) put
    /// as many of them in front (a fair coin each), and is not judged on fewer than RP_CHEIRALITY_MIN_POINTS (7). The
    /// held-out consecutive pair refused at 1131 of 1417 inliers in front (under the former 80 %) passes once only
    /// its well-triangulated inliers count; 60 of 100 in front could be chance.
    @Test func cheiralityIsJudgedOnWellTriangulatedInliers() throws {
        var out = outcome(inliers: 1417, sigma: 0.2, parallax: 3, log10Chance: -300)
        out.in_front = 1131
        // log10 P(Binomial(well, 1/2) >= front), summed directly (the shim sums from the largest term).
        func log10Tail(_ well: Int, _ front: Int) -> Double {
            var sum = 0.0
            for k in front...well {
                let n = Double(well), i = Double(k)
                let term: Double = lgamma(n + 1) - lgamma(i + 1) - lgamma(n - i + 1) - n * log(2.0)
                sum += exp(term)
            }
            return log10(sum)
        }
        func refuted(well: Int32, front: Int32) -> Bool {
            (out.well_triangulated, out.well_in_front, out.cheirality_log10_chance) = (well, front, log10Tail(Int(well), Int(front)))
            return PoseEvidence(out).cheiralityRefutes
        }
        #expect(!refuted(well: 900, front: 890))
        #expect(refuted(well: 100, front: 60))
        #expect(!refuted(well: 100, front: 70))
        #expect(!refuted(well: 6, front: 3), "too few to judge")
        #expect(refuted(well: 7, front: 6))
        #expect(!refuted(well: 15, front: 13), "Strecha 0->6 at 1280 px, right")
        #expect(refuted(well: 10, front: 9))
        #expect(!refuted(well: 10, front: 10))

        // The shim's numbers on a scene 4-20 m deep seen 1 m apart: nearly every inlier well triangulated, all of
        // them in front, and the chance its own.
        let pose = try estimate(correspondences(rotation: Fixtures.rotationXYZ(degrees: 3, -8, 1), translation: SIMD3(1, 0.1, 0.2),
                                                inliers: 200, outliers: 40, seed: 5))
        let evidence = try #require(pose.evidence)
        #expect(evidence.wellTriangulated >= 150 && evidence.wellTriangulated <= evidence.inliers, "\(evidence)")
        #expect(evidence.wellInFront >= evidence.wellTriangulated - 2, "\(evidence)")
        #expect(abs(evidence.cheiralityLog10Chance - log10Tail(evidence.wellTriangulated, evidence.wellInFront)) < 1e-6, "\(evidence)")
    }

    /// 300 points of a wall 10 m away, seen 30° and 4 m apart, and 30 outliers.
    func wall(seed: UInt64) -> (Matrix3, SIMD3<Double>, Correspondences) {
        let r = Fixtures.rotationXYZ(degrees: 2, -30, 1)
        let t = SIMD3(4.0, 0.3, 1.2)
        return (r, t, correspondences(rotation: r, translation: t, inliers: 300, outliers: 30, seed: seed, depth: 10...10.000_1))
    }

    /// Model selection on a plane: 300 points of a wall 10 m away, seen 30° and 4 m apart. Alone they leave the
    /// pose ambiguous (the plane's two solutions fit them alike): planar. With 12 points 4-6 m away, GRIC still
    /// prefers the homography (most inliers lie on it), but those points refute the other solution and the
    /// translation is reported, and right.
    @Test(arguments: [UInt64(31), 32, 33])
    func pointsOffADominantPlaneDecideBetweenItsTwoSolutions(seed: UInt64) throws {
        let (r, t, wall) = wall(seed: seed)
        let planar = try estimate(wall)
        let planarEvidence = try #require(planar.evidence)
        #expect(planar.translation == nil && !planar.rotationOnly)
        #expect(planarEvidence.model(maxTranslationSigma: 5, minTwinRefutation: 5) == .planar)
        #expect(abs(try #require(planarEvidence.twinRefutation)) < 5, "\(planarEvidence)")

        let near = correspondences(rotation: r, translation: t, inliers: 12, outliers: 0, seed: seed + 100, depth: 4...6)
        let scene = Correspondences(matches: [], reference: wall.reference + near.reference, current: wall.current + near.current)
        // The MSAC refinement's residuals: the Cauchy polish's fit the near points closer, and GRIC then prefers the
        // essential matrix outright in seed 32 (1429 against 1459), which leaves the refutation untested.
        var msac = PoseConfig()
        msac.cauchyScale = 0
        let pose = try estimate(scene, msac)
        let evidence = try #require(pose.evidence)
        #expect(evidence.gricHomography < evidence.gricEssential, "GRIC \(evidence.gricHomography) against \(evidence.gricEssential)")
        #expect(try #require(evidence.twinRefutation) >= 8, "\(evidence)")
        #expect(GroundTruthErrors.rotationError(estimate: pose.rotation, truth: r) < 0.5)
        let translation = try #require(pose.translation)
        #expect(GroundTruthErrors.translationDirectionError(estimate: translation, truth: t / length(t)) < 2)
    }

    /// A search that ends in the plane's wrong solution is moved to the right one when the points off the plane
    /// favour it (a synthetic 60° orbit came out 44° wrong with 84 inliers and a 10^-150 chance, where the other
    /// solution held 93). Started from the wall's other solution (its rotation from the estimator's twin, its
    /// translation from H = R' + t' nᵀ/d), the check returns the truth; started from the truth, it keeps it.
    @Test(arguments: [UInt64(31), 32, 33])
    func aSearchEndingInThePlanesWrongSolutionIsMovedToTheRightOne(seed: UInt64) throws {
        let (r, t, wall) = wall(seed: seed)
        let near = correspondences(rotation: r, translation: t, inliers: 12, outliers: 0, seed: seed + 100, depth: 4...6)
        let scene = Correspondences(matches: [], reference: wall.reference + near.reference, current: wall.current + near.current)
        let (found, _) = try RelativePose.search(scene, referenceCamera: camera, currentCamera: camera,
                                                 settings: .init(PoseConfig(), pairs: scene)).get()
        #expect(found.has_twin != 0)
        let twinR = Matrix3(found.twin_R)
        // The wall z = 10 induces H = R + t (0, 0, 1)/10 = R' + t' n'ᵀ/d': H - R' has the twin's t' in every column.
        let h = Matrix3(rows: r.rows.enumerated().map { i, row in [row[0], row[1], row[2] + t[i] / 10] })
        let columns = (0..<3).map { j in SIMD3((0..<3).map { h[$0, j] - twinR[$0, j] }) }
        let twinT = try #require(columns.max { length($0) < length($1) })
        #expect(GroundTruthErrors.rotationError(estimate: twinR, truth: r) > 10, "the other solution is another rotation")

        let a = scene.reference.flatMap { [($0.x - camera.cx) / camera.fx, ($0.y - camera.cy) / camera.fy] }
        let b = scene.current.flatMap { [($0.x - camera.cx) / camera.fx, ($0.y - camera.cy) / camera.fy] }
        func check(_ rotation: Matrix3, _ translation: SIMD3<Double>) throws -> (Bool, Matrix3, SIMD3<Double>) {
            var rr = [rotation.row0, rotation.row1, rotation.row2].flatMap { [$0.x, $0.y, $0.z] }
            var tt = [translation.x, translation.y, translation.z]
            var replaced: Int32 = 0
            var status = rp_status()
            #expect(rp_tools_plane_twin_check(a, b, Int32(scene.count), 1 / camera.fx, 7, &rr, &tt, &replaced, &status) == 0)
            return (replaced != 0, Matrix3(rr), SIMD3(tt[0], tt[1], tt[2]))
        }
        let (moved, rotation, translation) = try check(twinR, twinT / length(twinT))
        #expect(moved)
        #expect(GroundTruthErrors.rotationError(estimate: rotation, truth: r) < 0.5)
        let apart = GroundTruthErrors.translationDirectionError(estimate: translation, truth: t / length(t))
        #expect(min(apart, 180 - apart) < 2, "\(apart)°")
        let (kept, _, _) = try check(r, t / length(t))
        #expect(!kept)
    }

    /// A wall 10 m away seen from 4 m apart, 80 points on it (σ ≈ 0.9 px), 5 off it and 60 outliers. In some seeds the
    /// search ends in the plane's other solution, 24° off in rotation, under which the points show no parallax: it
    /// was answered rotation-only, a confident wrong rotation. That other solution's rotation is 10° or more from
    /// the pose's (a pure rotation's would not be) and the 5 points off the plane do not refute it: refused as ambiguous, or as inconsistent when its inliers are well enough triangulated to show it.
    /// No seed of 1...30 answers wrong.
    @Test func aRotationWithoutParallaxIsNotTakenWhenThePlanesOtherSolutionTurnsOtherwise() throws {
        let r = Fixtures.rotationXYZ(degrees: 2, -30, 1), t = SIMD3(4.0, 0.3, 1.2)
        func scene(_ seed: UInt64) -> Correspondences {
            let wall = correspondences(rotation: r, translation: t, inliers: 80, outliers: 60, seed: seed, depth: 10...10.000_1, noiseScale: 1.5)
            let off = correspondences(rotation: r, translation: t, inliers: 5, outliers: 0, seed: seed + 900, depth: 4...6, noiseScale: 1.5)
            return Correspondences(matches: [], reference: wall.reference + off.reference, current: wall.current + off.current)
        }
        for seed in [UInt64(12), 18] {
            let found = try search(scene(seed))
            #expect(GroundTruthErrors.rotationError(estimate: Matrix3(found.R), truth: r) > 20, "seed \(seed): the search's pose is the other solution")
            #expect(found.parallax_degrees < 2 && found.has_twin != 0)
            // Refused either as ambiguous with the other solution or, its inliers showing parallax after all, as
            // putting too many of them behind a camera.
            #expect {
                try estimate(scene(seed))
            } throws: { error in
                [.ambiguousTwin, .behindCameras].contains((error as? RephotoError)?.refusal?.cause)
            }
        }
        var answered = 0
        for seed in UInt64(1)...30 {
            guard let pose = try? estimate(scene(seed)) else { continue }
            answered += 1
            #expect(GroundTruthErrors.rotationError(estimate: pose.rotation, truth: r) < 10, "seed \(seed)")
            if let translation = pose.translation {
                #expect(GroundTruthErrors.translationDirectionError(estimate: translation, truth: t / length(t)) < 10, "seed \(seed)")
            }
        }
        #expect(answered >= 25, "\(answered) of 30 answered")
    }

    /// The phone's rotation settles the plane's two solutions as it settles a rival: on the bare wall above, a
    /// sensor 3° from the truth reports the translation, and right; a sensor that backs neither solution, or
    /// the other one, leaves the translation undetermined. (In seed 31 a runner-up at the other solution's
    /// rotation, 2.5 inliers' worth behind, puts half its inliers behind a camera: the sensor must not swap it in.)
    @Test(arguments: [UInt64(31), 32, 33])
    func theSensorDecidesBetweenAPlanesTwoSolutions(seed: UInt64) throws {
        let (r, t, wall) = wall(seed: seed)
        let h = try HomographyEstimate.estimate(wall, config: PipelineConfig().homography)
        func estimate(sensor: Matrix3) throws -> RelativePose {
            try RelativePose.estimate(wall, referenceCamera: camera, currentCamera: camera, homography: h, config: PoseConfig(),
                                      sensorRotation: sensor)
        }
        let settled = try estimate(sensor: Fixtures.rotationXYZ(degrees: 0, 3, 0) * r)
        let evidence = try #require(settled.evidence)
        #expect(evidence.model(maxTranslationSigma: 5, minTwinRefutation: 5) == .planar, "\(evidence)")
        #expect(try #require(evidence.twinSensorDisagreementDegrees) > 10, "\(evidence)")
        #expect(GroundTruthErrors.rotationError(estimate: settled.rotation, truth: r) < 0.5)
        let translation = try #require(settled.translation)
        #expect(GroundTruthErrors.translationDirectionError(estimate: translation, truth: t / length(t)) < 2)
        #expect(settled.warnings.contains { $0.contains("settled by the sensor") })

        // A sensor 20° off backs neither; one at the other solution's rotation rules the pose out.
        let off = try estimate(sensor: Fixtures.rotationXYZ(degrees: 20, 0, 0) * r)
        #expect(off.translation == nil && off.warnings.contains { $0.hasPrefix("planar scene") && $0.contains("undetermined") })
        let (found, _) = try RelativePose.search(wall, referenceCamera: camera, currentCamera: camera,
                                                 settings: .init(PoseConfig(), pairs: wall)).get()
        #expect(found.has_twin != 0)
        let other = try estimate(sensor: Matrix3(found.twin_R))
        #expect(other.translation == nil, "the sensor backs the other solution, not the pose: \(other.warnings)")
    }

    /// A refusal is a value, its cause and the numbers it was decided on, worded only where it is shown; the
    /// error envelope carries the cause for machines.
    @Test func aRefusalIsACauseWithItsNumbers() throws {
        let config = PoseConfig()
        func refusal(_ out: rp_relative_pose) -> RephotoError? {
            #expect(throws: RephotoError.self) { try RelativePose.gate(PoseEvidence(out), config: config) }
        }
        let few = refusal(outcome(inliers: 6, sigma: 0.3, parallax: 20, log10Chance: -50))
        #expect(few?.refusal == .tooFewInliers(inliers: 6, required: 10) && few?.kind == .estimationFailed)
        #expect(few?.message == "only 6 essential inliers (need 10, pose.minInliers)")
        let envelope = String(decoding: try JSONEncoder().encode(ErrorEnvelope(try #require(few))), as: UTF8.self)
        #expect(envelope.contains(#""cause":"too_few_inliers""#), "\(envelope)")
        #expect(refusal(outcome(inliers: 40, sigma: 0.3, parallax: 20, log10Chance: -1))?.refusal
                == .chance(inliers: 40, log10Chance: -1, maxChance: config.maxChance, sensor: nil, reproduction: nil))
        #expect(refusal(outcome(inliers: 40, sigma: 3, parallax: 20, log10Chance: -50))?.refusal
                == .rotationUncertain(sigma: 3, inliers: 40, maxRotationSigma: config.maxRotationSigma))
        #expect(refusal(outcome(inliers: 40, sigma: 0.3, parallax: 150, log10Chance: -50))?.refusal?.cause == .implausibleParallax)
        // Other failures carry no cause.
        let other = String(decoding: try JSONEncoder().encode(ErrorEnvelope(RephotoError.badInput("x"))), as: UTF8.self)
        #expect(!other.contains("cause"))
    }

    /// The rival gate: a runner-up 10° or more away that fits within `pose.minRivalExcess` inliers' worth
    /// fails the pose (either could be the truth); one that fits clearly worse, or none, does not.
    @Test func aNearlyAsGoodDistantRivalFailsThePose() throws {
        var out = outcome(inliers: 40, sigma: 0.3, parallax: 20, log10Chance: -50)
        out.rival_excess = 0.1
        out.rival_degrees = 13
        let config = PoseConfig()
        #expect(throws: RephotoError.self) { try RelativePose.gate(PoseEvidence(out), config: config) }
        // The sensor settles it only when it is near the pose and twice pose.maxSensorDisagreement from the rival.
        var sensed = PoseEvidence(out)
        (sensed.sensorDisagreementDegrees, sensed.rivalSensorDisagreementDegrees) = (2, 15)
        #expect(try RelativePose.gate(sensed, config: config).contains { $0.contains("settled by the sensor") })
        for (pose, rival) in [(2.0, 8.0), (7.0, 30.0)] {
            (sensed.sensorDisagreementDegrees, sensed.rivalSensorDisagreementDegrees) = (pose, rival)
            #expect { try RelativePose.gate(sensed, config: config) } throws: {
                if case .ambiguous(_, sensor: _?)? = refusal($0) { true } else { false }
            }
        }
        // Apart only in translation: the same answer when the scene is rotation-only (no translation is given),
        // not otherwise; apart in rotation, a rival either way.
        #expect(throws: RephotoError.self) { try RelativePose.gate(PoseEvidence(out), config: config, rivalRotationDegrees: 0.4) }
        var turning = out
        (turning.parallax_degrees, turning.rotation_support, turning.rival_degrees, turning.gric_rotation) = (0.05, 40, 67, 90)
        #expect(PoseEvidence(turning).model(maxTranslationSigma: config.maxTranslationSigma, minTwinRefutation: config.minTwinRefutation) == .rotationOnly)
        try RelativePose.gate(PoseEvidence(turning), config: config, rivalRotationDegrees: 0.4)
        #expect(throws: RephotoError.self) { try RelativePose.gate(PoseEvidence(turning), config: config, rivalRotationDegrees: 25) }
        #expect(throws: RephotoError.self) { try RelativePose.gate(PoseEvidence(turning), config: config) }
        out.rival_excess = 2.5
        try RelativePose.gate(PoseEvidence(out), config: config)
        out.rival_excess = .infinity
        #expect(PoseEvidence(out).rivalExcess == nil)
        try RelativePose.gate(PoseEvidence(out), config: config)
    }

    /// The plane's other solution favoured by the points off the plane (by pose.minTwinRefutation, 5, or more),
    /// in a scene GRIC takes for general: the pose fails as ambiguous unless the sensor backs it and rules the
    /// other solution out; a smaller deficit, or a scene GRIC takes for planar (answered with the planar
    /// caveat), passes this rule.
    @Test func aPoseThePointsOffItsPlaneContradictFails() throws {
        var out = rp_relative_pose()
        (out.inliers, out.in_front, out.parallax_degrees, out.log10_chance) = (42, 42, 17, -55)
        (out.rotation_sigma_degrees, out.translation_sigma_degrees, out.rival_excess) = (0.3, 0.5, .infinity)
        (out.gric_essential, out.gric_homography, out.has_twin, out.twin_refutation) = (234, 274, 1, -7)
        let config = PoseConfig()
        #expect { try RelativePose.gate(PoseEvidence(out), config: config) } throws: {
            ($0 as? RephotoError)?.message == "ambiguous: 7 net correspondences off the inliers' plane favour the plane's other solution over this pose"
        }
        var sensed = PoseEvidence(out)
        (sensed.sensorDisagreementDegrees, sensed.twinSensorDisagreementDegrees) = (2, 60)
        #expect(try RelativePose.gate(sensed, config: config).contains { $0.contains("settled by the sensor") })
        (sensed.sensorDisagreementDegrees, sensed.twinSensorDisagreementDegrees) = (58, 3)
        #expect { try RelativePose.gate(sensed, config: config) } throws: {
            if case .ambiguous(_, sensor: _?)? = refusal($0) { true } else { false }
        }
        for refutation: Int32 in [3, -4] {
            out.twin_refutation = refutation
            #expect(try RelativePose.gate(PoseEvidence(out), config: config).isEmpty)
        }
        (out.twin_refutation, out.gric_homography) = (-7, 200)
        #expect(try RelativePose.gate(PoseEvidence(out), config: config).isEmpty)
    }

    /// The rotation-uncertainty gate: a pose is refused over `pose.maxRotationSigma`, answered with a warning
    /// over half of it, and answered plainly below.
    @Test func anUncertainRotationIsRefusedOrFlagged() throws {
        var out = rp_relative_pose()
        (out.inliers, out.in_front, out.parallax_degrees, out.log10_chance) = (45, 45, 50, -60)
        (out.translation_sigma_degrees, out.rival_excess) = (0.5, .infinity)
        let config = PoseConfig()
        #expect(config.maxRotationSigma == 2)
        out.rotation_sigma_degrees = 0.8
        #expect(try RelativePose.gate(PoseEvidence(out), config: config).isEmpty)
        out.rotation_sigma_degrees = 1.5
        let warnings = try RelativePose.gate(PoseEvidence(out), config: config)
        #expect(warnings.count == 1 && warnings[0].hasPrefix("rotation uncertain: ±1.50°"), "\(warnings)")
        out.rotation_sigma_degrees = 2.5
        #expect { try RelativePose.gate(PoseEvidence(out), config: config) } throws: {
            if case let .rotationUncertain(sigma, _, limit)? = refusal($0) { sigma == 2.5 && limit == 2 } else { false }
        }
    }

    /// Sensor corroboration: 11 true matches among 36 are too few for the chance gate alone (10^-8), and a
    /// phone's relative rotation 3° from the truth (a heading error between sessions) lets the pose through;
    /// one 20° away does not, nor does any sensor when the inliers could be chance 1 time in 100 or more.
    @Test(arguments: [UInt64(51), 52, 53])
    func aSensorRotationCorroboratesAPoseOnFewInliers(seed: UInt64) throws {
        let r = Fixtures.rotationXYZ(degrees: 3, -30, 2)
        let t = SIMD3(1.8, 0.1, 0.5)
        // A quarter of the usual noise: every true match within the threshold, so the count is exactly 11.
        let pairs = correspondences(rotation: r, translation: t, inliers: 11, outliers: 25, seed: seed, noiseScale: 0.25)
        let h = try HomographyEstimate.estimate(pairs, config: PipelineConfig().homography)
        var config = PoseConfig()
        config.reproductions = 0  // the sensor alone (aWeakPoseThatIndependentSearchesReachPasses has the rest)
        func estimate(sensor: Matrix3?) throws -> RelativePose {
            try RelativePose.estimate(pairs, referenceCamera: camera, currentCamera: camera, homography: h, config: config,
                                      sensorRotation: sensor)
        }
        func turned(_ degrees: Double) -> Matrix3 { r * Quaternion(axis: SIMD3(0, 1, 0), angle: degrees * .pi / 180).rotationMatrix }
        #expect { try estimate(sensor: nil) } throws: { refusal($0)?.cause == .chance }
        let pose = try estimate(sensor: turned(3))
        #expect(GroundTruthErrors.rotationError(estimate: pose.rotation, truth: r) < 1)
        #expect(GroundTruthErrors.translationDirectionError(estimate: try #require(pose.translation), truth: t / length(t)) < 5)
        let evidence = try #require(pose.evidence)
        #expect(evidence.log10Chance > -8 && evidence.log10Chance < -2, "chance 10^\(evidence.log10Chance)")
        #expect(abs(try #require(evidence.sensorDisagreementDegrees) - 3) < 1)
        #expect(pose.warnings.contains { $0.hasPrefix("weak visual evidence corroborated by the sensor") }, "\(pose.warnings)")
        #expect { try estimate(sensor: turned(20)) } throws: {
            if case .chance(_, _, _, sensor: .disagrees?, _)? = refusal($0) { true } else { false }
        }
        // A "rotation" that is none is bad input, not a prior.
        for bad in [Matrix3(SIMD3(2, 0, 0), SIMD3(0, 1, 0), SIMD3(0, 0, 1)), Matrix3(SIMD3(.nan, 0, 0), SIMD3(0, 1, 0), SIMD3(0, 0, 1))] {
            #expect { try estimate(sensor: bad) } throws: {
                // The same call with a rotation answers (above): the prior alone is the bad input.
                ($0 as? RephotoError)?.kind == .badInput
            }
        }

        var out = rp_relative_pose()
        out.inliers = 11
        out.in_front = 11
        out.rotation_sigma_degrees = 0.3
        out.parallax_degrees = 20
        out.rival_excess = .infinity
        out.log10_chance = -1.5
        var weak = PoseEvidence(out)
        weak.sensorDisagreementDegrees = 1
        #expect { try RelativePose.gate(weak, config: PoseConfig()) } throws: {
            if case .chance(_, _, _, sensor: .tooWeak?, _)? = refusal($0) { true } else { false }
        }
        var off = PoseConfig()
        off.maxSensorDisagreement = 0
        weak.log10Chance = -5
        #expect(throws: RephotoError.self) { try RelativePose.gate(weak, config: off) }
        #expect(try !RelativePose.gate(weak, config: PoseConfig()).isEmpty)
    }

    /// The sensor corroborates a rotation, not a translation: a weak pose it lets through keeps its translation only
    /// when searches run again reach it. The evidence is Strecha 0→7 at full resolution, pose.seed 9, with a sensor
    /// 3° off the truth: 11 inliers (7 of them one reference keypoint's matches along a roof line), chance 10^-4.5,
    /// the sensor 4.1° from the pose, the searches run again 152° away; the rotation was 1.6° off and the
    /// translation 33.8°. Reached within pose.maxReproductionDegrees, the translation stands; with no searches run
    /// (pose.reproductions 0), the sensor alone lets it through as before.
    @Test func aTranslationTheSensorCannotVouchForNeedsTheSearchesToReachIt() throws {
        let r = Fixtures.rotationXYZ(degrees: 3, -30, 2)
        let pairs = correspondences(rotation: r, translation: SIMD3(1.8, 0.1, 0.5), inliers: 11, outliers: 125, seed: 9)
        let h = try HomographyEstimate.estimate(pairs, config: PipelineConfig().homography)
        var out = outcome(inliers: 11, sigma: 0.03, parallax: 75, log10Chance: -4.5)
        out.R = r.tuple
        out.t = (0.96, 0.05, 0.27)
        (out.gric_essential, out.gric_homography, out.gric_rotation) = (69, 89, 86)
        out.reproductions = 3
        out.reproduction_degrees = 152
        let sensor = r * Quaternion(axis: SIMD3(0, 1, 0), angle: 4.1 * .pi / 180).rotationMatrix
        func decide(_ out: rp_relative_pose, _ config: PoseConfig = PoseConfig(), sensor: Matrix3? = sensor) throws -> RelativePose {
            try RelativePose.decide(.success((out, [Bool](repeating: false, count: pairs.count))), pairs: pairs, referenceCamera: camera,
                                    currentCamera: camera, homography: h, config: config, sensorRotation: sensor)
        }
        let unreached = try decide(out)
        #expect(unreached.translation == nil)
        #expect(GroundTruthErrors.rotationError(estimate: unreached.rotation, truth: r) < 1e-9)
        #expect(unreached.warnings.contains { $0.hasPrefix("weak visual evidence corroborated by the sensor") }, "\(unreached.warnings)")
        #expect(unreached.warnings.contains {
            $0 == "translation direction undetermined: the sensor corroborates the rotation only, and searches run again did not reach the pose (the nearest 2 within 152.0°, pose.maxReproductionDegrees 5°)"
        }, "\(unreached.warnings)")

        var reached = out
        reached.reproduction_degrees = 3
        #expect(try decide(reached).translation != nil)
        var none = out
        none.reproductions = 0
        var alone = PoseConfig()
        alone.reproductions = 0
        #expect(try decide(none, alone).translation != nil)
        // Without the sensor the pose is refused, whatever the searches did.
        #expect { try decide(out, sensor: nil) } throws: { refusal($0)?.cause == .chance }
        // And with one, every pose the sensor may corroborate (pose.maxCorroboratedChance, 1e-2) is searched for again.
        #expect(RelativePose.SearchSettings(PoseConfig(), pairs: pairs, sensorRotation: sensor).reproduction?.maxLog10Chance == -2)
        #expect(RelativePose.SearchSettings(PoseConfig(), pairs: pairs).reproduction?.maxLog10Chance == -4)
    }

    /// Reproduction: 12 true matches among 52, weak evidence for the chance gate alone (the search ends at its
    /// cap uncertified), are found again by independent searches (other seeds), and the pose passes with a
    /// warning, right; without reproductions it is refused.
    @Test(arguments: [UInt64(51), 52, 55])
    func aWeakPoseThatIndependentSearchesReachPasses(seed: UInt64) throws {
        let r = Fixtures.rotationXYZ(degrees: 3, -30, 2)
        let t = SIMD3(1.8, 0.1, 0.5)
        let pairs = correspondences(rotation: r, translation: t, inliers: 12, outliers: 40, seed: seed, noiseScale: 0.25)
        let pose = try estimate(pairs)
        #expect(GroundTruthErrors.rotationError(estimate: pose.rotation, truth: r) < 1)
        let evidence = try #require(pose.evidence)
        #expect(evidence.log10Chance > -8 && evidence.log10Chance <= -4, "chance 10^\(evidence.log10Chance)")
        #expect(try #require(evidence.reproductionDegrees) <= 5)
        #expect(pose.warnings.contains { $0.hasPrefix("weak visual evidence reproduced: 12 essential inliers") }, "\(pose.warnings)")
        var none = PoseConfig()
        none.reproductions = 0
        #expect { try estimate(pairs, none) } throws: { refusal($0)?.cause == .chance }


        // The gate: a pose reached again within pose.maxReproductionDegrees passes inside the window, not
        // outside it, and not when a search landed further.
        var weak = evidence
        weak.log10Chance = -5
        #expect(try RelativePose.gate(weak, config: PoseConfig()).contains { $0.hasPrefix("weak visual evidence reproduced") })
        weak.reproductionDegrees = 15
        #expect { try RelativePose.gate(weak, config: PoseConfig()) } throws: {
            if case let .chance(_, log10Chance, maxChance, nil, reproduction?)? = refusal($0) {
                log10Chance == -5 && maxChance == 1e-8
                    && reproduction == PoseRefusal.ReproductionCheck(searches: 2, degrees: 15, maxDegrees: 5, misses: 1)
            } else { false }
        }
        weak.reproductionDegrees = 1
        weak.log10Chance = -3
        #expect(throws: RephotoError.self) { try RelativePose.gate(weak, config: PoseConfig()) }
        weak.reproductionDegrees = nil
        weak.log10Chance = -5
        #expect(throws: RephotoError.self) { try RelativePose.gate(weak, config: PoseConfig()) }
    }

    /// The guided search at the noise of real features (about 0.6 px) and a weak pair's inlier count (11 true
    /// matches among 64, the search cut to 50 samples): a three-point model then sits a pixel or two off most of
    /// its inliers, and the search optimises its 16 best from 3 thresholds down. Over 20 seeds the pose is found
    /// (within 2°) in 13 (it was 5 when only the best model was optimised, at 1 threshold); the rest are refused
    /// or answered under 10° off, never worse. (The search is measured here, not the gate nor the Cauchy polish:
    /// pose.maxGuidedChance is lifted to 1e-4, at its default, 1e-6, the pose comes out in 5 of the 20; with the
    /// polish on these Gaussian-like errors, 9 of the 20 are within 2°.)
    @Test func theGuidedSearchFindsWeakPairsAtRealNoise() throws {
        let r = Fixtures.rotationXYZ(degrees: -2, 35, 1)
        let t = SIMD3(-1.5, 0.2, 0.6)
        var config = PoseConfig()
        config.essential.maxIterations = 50
        config.minIterations = 0
        config.reproductions = 0
        config.maxGuidedChance = 1e-4
        config.cauchyScale = 0
        let sensor = r * Quaternion(axis: SIMD3(0, 1, 0), angle: 3 * .pi / 180).rotationMatrix
        var found = 0
        for seed in UInt64(120)..<140 {
            let pairs = correspondences(rotation: r, translation: t, inliers: 11, outliers: 53, seed: seed)
            let h = try HomographyEstimate.estimate(pairs, config: PipelineConfig().homography)
            guard let pose = try? RelativePose.estimate(pairs, referenceCamera: camera, currentCamera: camera, homography: h,
                                                        config: config, sensorRotation: sensor) else { continue }
            let error = GroundTruthErrors.rotationError(estimate: pose.rotation, truth: r)
            #expect(error < 10, "seed \(seed): \(error)° off")
            found += error < 2 ? 1 : 0
        }
        #expect(found >= 10, "found in \(found) of 20")
    }

    /// pose.sensorGuidedSamples: a search too short to draw an all-inlier sample (14 true matches among 50, 50
    /// samples: about a 5 % chance) ends on a weak wrong pose. With the phone's rotation 3° off the truth in
    /// heading, the guided search finds the true pose near it; with the guided search off, or a rotation 20° off,
    /// the estimate is refused rather than answered wrong.
    @Test(arguments: [UInt64(71), 72, 73])
    func theSensorGuidesASearchThatMissedThePose(seed: UInt64) throws {
        let r = Fixtures.rotationXYZ(degrees: -2, 35, 1)
        let t = SIMD3(-1.5, 0.2, 0.6)
        let pairs = correspondences(rotation: r, translation: t, inliers: 14, outliers: 36, seed: seed, noiseScale: 0.25)
        let h = try HomographyEstimate.estimate(pairs, config: PipelineConfig().homography)
        var config = PoseConfig()
        config.essential.maxIterations = 50
        config.minIterations = 0
        config.reproductions = 0
        func estimate(sensor: Matrix3?, vertical: SIMD3<Double>? = nil, _ config: PoseConfig) throws -> RelativePose {
            try RelativePose.estimate(pairs, referenceCamera: camera, currentCamera: camera, homography: h, config: config,
                                      sensorRotation: sensor, sensorVertical: vertical)
        }
        func turned(_ degrees: Double) -> Matrix3 { r * Quaternion(axis: SIMD3(0, 1, 0), angle: degrees * .pi / 180).rotationMatrix }
        let pose = try estimate(sensor: turned(3), config)
        #expect(GroundTruthErrors.rotationError(estimate: pose.rotation, truth: r) < 0.5)
        #expect(GroundTruthErrors.translationDirectionError(estimate: try #require(pose.translation), truth: t / length(t)) < 3)
        #expect(try #require(pose.evidence).inliers >= 13)
        #expect(pose.evidence?.sensorGuided == true)
        var unguided = config
        unguided.sensorGuidedSamples = 0
        #expect(throws: RephotoError.self) { try estimate(sensor: turned(3), unguided) }
        #expect(throws: RephotoError.self) { try estimate(sensor: nil, config) }
        #expect(throws: RephotoError.self) { try estimate(sensor: turned(20), config) }
        // A camera pitched up 60°: the heading error turns about the vertical, 60° off its y axis. Given that
        // vertical (SensorPath.referenceVertical) the search finds the pose; without it, or with a tilt error it
        // does not model, the answer is refused or right (within 2°: the optimisation then starts off the truth),
        // never wrong.
        let up = Quaternion(axis: SIMD3(1, 0, 0), angle: 60 * .pi / 180).rotationMatrix * SIMD3(0, -1, 0)
        let pitched = r * Quaternion(axis: up, angle: -4 * .pi / 180).rotationMatrix
        let found = try estimate(sensor: pitched, vertical: up, config)
        #expect(GroundTruthErrors.rotationError(estimate: found.rotation, truth: r) < 0.5)
        let tilted = r * Quaternion(axis: SIMD3(1, 0, 0), angle: 2 * .pi / 180).rotationMatrix
        for (sensor, vertical) in [(pitched, nil), (tilted, SIMD3<Double>?.none)] {
            if let pose = try? estimate(sensor: sensor, vertical: vertical, config) {
                #expect(GroundTruthErrors.rotationError(estimate: pose.rotation, truth: r) < 2)
            }
        }

        // The gate: a guided pose stands on its own count (over the guided samples) under pose.maxGuidedChance;
        // the sensor's agreement, which the search was built to have, does not lift it (Strecha 0->7 at full
        // resolution, 2 true inliers: guided poses of 10 chance inliers at 10^-3.2, 22.7° wrong, and of 11 at
        // 10^-4.8, 26° wrong in translation; the right guided poses of 0->6 came at 10^-7.0 and under).
        var weak = try #require(pose.evidence)
        weak.sensorDisagreementDegrees = 4.2
        for chance in [-3.2, -4.8] {
            weak.log10Chance = chance
            #expect { try RelativePose.gate(weak, config: PoseConfig()) } throws: {
                if case let .guidedChance(_, _, log10Chance, limit)? = refusal($0) { log10Chance == chance && limit == 1e-6 } else { false }
            }
        }
        weak.log10Chance = -7.0
        #expect(try RelativePose.gate(weak, config: PoseConfig()).contains { $0.hasPrefix("weak visual evidence found near the sensor's rotation") })
        weak.sensorDisagreementDegrees = 40
        #expect(throws: RephotoError.self) { try RelativePose.gate(weak, config: PoseConfig()) }
        weak.sensorDisagreementDegrees = 4.2
        weak.sensorGuided = nil
        weak.log10Chance = -3.2
        #expect(try RelativePose.gate(weak, config: PoseConfig()).contains { $0.hasPrefix("weak visual evidence corroborated by the sensor") })
    }

    /// pose.reproductionMisses: with a small cap, a reproduction search sometimes misses a right weak pose.
    /// Granting one miss runs the same searches first, so it passes every pose the strict rule passes, and
    /// rescues some it refused; everything it passes is right.
    @Test func oneMissedReproductionIsForgiven() throws {
        let r = Fixtures.rotationXYZ(degrees: 3, -30, 2)
        let t = SIMD3(1.8, 0.1, 0.5)
        var strict = PoseConfig()
        strict.essential.maxIterations = 1500
        strict.reproductionMisses = 0
        var lenient = strict
        lenient.reproductionMisses = 1
        var rescued = 0
        for seed in UInt64(60)..<UInt64(84) {
            let pairs = correspondences(rotation: r, translation: t, inliers: 12, outliers: 40, seed: seed, noiseScale: 0.25)
            let a = try? estimate(pairs, strict), b = try? estimate(pairs, lenient)
            if a != nil { #expect(b != nil, "seed \(seed)") }
            if let b { #expect(GroundTruthErrors.rotationError(estimate: b.rotation, truth: r) < 1, "seed \(seed)") }
            if a == nil, let b, b.warnings.contains(where: { $0.hasPrefix("weak visual evidence reproduced") }) { rescued += 1 }
        }
        #expect(rescued > 0)
    }

    /// Two motions with equal support (a car driving through the frame): 30 matches follow one pose, 30 another,
    /// among 80 unrelated ones. At 21 % inliers per motion the search ends at its cap uncertified; its
    /// runners-up must hold the other motion, reported as the rival at the two truths' separation. The pose
    /// is one of the two motions, not a blend; noise alone leaves the loser 0.5-3 inliers' worth behind, so the
    /// default `pose.minRivalExcess` (1, set on Strecha) may call it ambiguous, as it is, and 5 always does.
    /// With the phone's rotation the runner-up it backs becomes the pose when the search found the other.
    @Test(arguments: [UInt64(41), 42, 43])
    func twoEquallySupportedMotionsAreFoundAsRivals(seed: UInt64) throws {
        let (r1, t1) = (Fixtures.rotationXYZ(degrees: 2, 20, 1), SIMD3(2.0, 0.1, 0.3))
        let (r2, t2) = (Fixtures.rotationXYZ(degrees: -3, -20, 2), SIMD3(-1.0, 0.4, 1.5))
        let first = correspondences(rotation: r1, translation: t1, inliers: 30, outliers: 40, seed: seed)
        let second = correspondences(rotation: r2, translation: t2, inliers: 30, outliers: 40, seed: seed + 1000)
        let pairs = Correspondences(matches: [], reference: first.reference + second.reference, current: first.current + second.current)
        var lax = PoseConfig()
        lax.minRivalExcess = 0.01
        let pose = try estimate(pairs, lax)
        let errors = [GroundTruthErrors.rotationError(estimate: pose.rotation, truth: r1),
                      GroundTruthErrors.rotationError(estimate: pose.rotation, truth: r2)]
        #expect(errors.min()! < 0.5, "\(errors)")
        let evidence = try #require(pose.evidence)
        let separation = max(Matrix3.angleDegrees(between: r1, and: r2),
                             min(GroundTruthErrors.translationDirectionError(estimate: t1, truth: t2),
                                 GroundTruthErrors.translationDirectionError(estimate: -t1, truth: t2)))
        #expect(abs(try #require(evidence.rivalDegrees) - separation) < 3, "rival \(String(describing: evidence.rivalDegrees))° against \(separation)°")
        #expect(try #require(evidence.rivalExcess) < 5)

        // Without runners-up there is nothing to find the other motion among.
        var none = PoseConfig()
        none.runnersUp = 0
        #expect(try estimate(pairs, none).evidence?.rivalExcess == nil)

        var strict = PoseConfig()
        strict.minRivalExcess = 5
        #expect {
            try estimate(pairs, strict)
        } throws: { error in
            refusal(error)?.cause == .ambiguousRival
        }
        // A phone that turned as one of the motions did (3° off, a heading error) picks that one, whichever the
        // search found, and settles the ambiguity.
        let h = try HomographyEstimate.estimate(pairs, config: PipelineConfig().homography)
        for truth in [r1, r2] {
            let sensor = truth * Quaternion(axis: SIMD3(0, 1, 0), angle: 3 * .pi / 180).rotationMatrix
            let settled = try RelativePose.estimate(pairs, referenceCamera: camera, currentCamera: camera, homography: h, config: strict,
                                                    sensorRotation: sensor)
            #expect(GroundTruthErrors.rotationError(estimate: settled.rotation, truth: truth) < 0.5)
            #expect(settled.warnings.contains { $0.contains("settled by the sensor") }, "\(settled.warnings)")
            #expect(try #require(settled.evidence?.rivalSensorDisagreementDegrees) > 30)
        }
    }

    /// The sensor decides between the pose and a rival the fit cannot tell apart from it. Two motions of equal
    /// support (as above), 20 seeds, the phone turning as one of them (3° off): noise left the other one 0.15-9
    /// inliers' worth behind. Within `pose.sensorRivalExcess` (5) the motion the sensor backs is the answer, with
    /// the ambiguity and the sensor's choice in a warning; further behind, the fit decides and a warning says
    /// that the sensor disagrees. Never an answer 10° or more from the sensor without a word. With the sensor
    /// deciding only within `pose.minRivalExcess` (1, the rule before), 10 of the 40 answers are the motion the
    /// sensor rules out (7 had no warning before the one above).
    @Test func aSensorThatBacksANearRivalChoosesIt() throws {
        let (r1, t1) = (Fixtures.rotationXYZ(degrees: 2, 20, 1), SIMD3(2.0, 0.1, 0.3))
        let (r2, t2) = (Fixtures.rotationXYZ(degrees: -3, -20, 2), SIMD3(-1.0, 0.4, 1.5))
        var narrow = PoseConfig()
        narrow.sensorRivalExcess = 0
        var backed = [0, 0], silent = [0, 0]
        for seed in UInt64(41)...60 {
            let first = correspondences(rotation: r1, translation: t1, inliers: 30, outliers: 40, seed: seed)
            let second = correspondences(rotation: r2, translation: t2, inliers: 30, outliers: 40, seed: seed + 1000)
            let pairs = Correspondences(matches: [], reference: first.reference + second.reference, current: first.current + second.current)
            let h = try HomographyEstimate.estimate(pairs, config: PipelineConfig().homography)
            for truth in [r1, r2] {
                let sensor = truth * Quaternion(axis: SIMD3(0, 1, 0), angle: 3 * .pi / 180).rotationMatrix
                for (k, config) in [PoseConfig(), narrow].enumerated() {
                    let pose = try RelativePose.estimate(pairs, referenceCamera: camera, currentCamera: camera, homography: h, config: config,
                                                         sensorRotation: sensor)
                    let excess = try #require(pose.evidence?.rivalExcess)
                    if GroundTruthErrors.rotationError(estimate: pose.rotation, truth: truth) < 1 {
                        backed[k] += 1
                        if excess < 0 {
                            #expect(pose.warnings.contains { $0.contains("better than this one") && $0.contains("settled by the sensor") }, "seed \(seed): \(pose.warnings)")
                            #expect(-excess <= max(config.sensorRivalExcess, config.minRivalExcess), "seed \(seed)")
                        }
                    } else {
                        #expect(Matrix3.angleDegrees(between: pose.rotation, and: sensor) > 30, "seed \(seed)")
                        if k == 0 {
                            #expect(excess > config.sensorRivalExcess, "seed \(seed): \(excess)")
                            #expect(pose.warnings.contains { $0.hasPrefix("the sensor's rotation is") && $0.hasSuffix("the fit decided") }, "seed \(seed): \(pose.warnings)")
                        }
                        if pose.warnings.isEmpty { silent[k] += 1 }
                    }
                }
            }
        }
        #expect(backed[0] == 37, "\(backed)")
        #expect(backed[1] == 30, "\(backed)")
        #expect(silent == [0, 0], "\(silent)")
    }

    /// `pose.minIterations`: the stopping rule certifies an all-inlier sample, not that local optimisation reached
    /// the bottom of its basin. The bench's synthetic 60° orbit (the same `rephoto synth` options, frame 0, AKAZE
    /// matches): with 100 samples at least, pose.seed 18 stopped 3-5 inliers' worth above its basin's cost and was
    /// refused as ambiguous (a rival 83° away), and seed 20 answered 82° wrong; with the default 1,000 every seed
    /// from 18 to 21 is answered within 1° of the truth.
    @Test func aThousandSamplesLetTheLocalOptimisationReachTheBasin() throws {
        // scripts/bench-accuracy's own command line for the orbit.
        let options = try SyntheticSequenceOptions.parse(["--name", "orbit-60", "--orbit", "60", "--convergence", "0", "--frames", "4", "--width", "1280",
                                                          "--height", "960", "--tremor-degrees", "0.5", "--tremor-metres", "0.05", "--seed", "60"])
        let directory = try Scratch.directory()
        let sequence = try SyntheticSequence.generate(options, textureDirectory: Fixtures.textures, to: directory)
        let config = PipelineConfig()
        let estimator = try PoseEstimator(config: config)
        let camera = try #require(try sequence.camera())
        let frame = try #require(sequence.currentFrames.first)
        let reference = try estimator.prepareReference(try estimator.load(contentsOfFile: sequence.path(of: try #require(sequence.referenceFile(for: frame)))),
                                                       camera: camera)
        let image = try estimator.load(contentsOfFile: sequence.path(of: frame.file))
        let features = try Features(image: image, config: config.features)
        let matched = try Matcher.match(reference: reference.features, current: features, config: config.matching, index: reference.matchIndex)
        let pairs = matched.reordered(matched.matches.indices.sorted { (matched.matches[$0].distance, $0) < (matched.matches[$1].distance, $1) })
        let homography = try HomographyEstimate.estimate(pairs, config: config.homography)
        let truth = try #require(frame.truthRotation).rotationMatrix
        let referenceCamera = try #require(reference.camera), currentCamera = try camera.adapted(to: image.fullSize)
        func estimate(seed: Int, minIterations: Int) -> Result<RelativePose, Error> {
            var pose = config.pose
            pose.seed = seed
            pose.minIterations = minIterations
            return Result { try RelativePose.estimate(pairs, referenceCamera: referenceCamera, currentCamera: currentCamera, homography: homography, config: pose) }
        }
        #expect(config.pose.minIterations == 1000)
        for seed in 18...21 {
            let pose = try estimate(seed: seed, minIterations: 1000).get()
            #expect(GroundTruthErrors.rotationError(estimate: pose.rotation, truth: truth) < 1, "seed \(seed)")
        }
        let refused = estimate(seed: 18, minIterations: 100)
        #expect(throws: RephotoError.self) { try refused.get() }
        let wrong = try estimate(seed: 20, minIterations: 100).get()
        #expect(GroundTruthErrors.rotationError(estimate: wrong.rotation, truth: truth) > 30)
    }

    /// OpenCV's Suzanne pair is a pure 30° turn: rotation-only in every seed, the rotation right. Under a pure
    /// rotation E's translation is arbitrary, and mismatches along its epipolar lines join the inliers: in one seed
    /// of 24 (16), 54 of 69 inliers were a pure rotation's, under the 80 % the support rule asked; GRIC called the
    /// scene planar, and the pose failed as inconsistent (35 of 69 in front). GRIC's own rating of the rotation
    /// against the homography (`gricRotation`) now decides it.
    @Test func aPureTurnIsRotationOnlyInEverySeed() throws {
        let a = try Features(image: try Fixtures.image("Blender_Suzanne1.jpg"), config: FeatureConfig())
        let b = try Features(image: try Fixtures.image("Blender_Suzanne2.jpg"), config: FeatureConfig())
        let matched = try Matcher.match(reference: a, current: b, config: MatchConfig())
        let pairs = Correspondences(matches: matched.matches, reference: matched.reference, current: matched.current)
        let suzanne = CameraIntrinsics(fx: 700, fy: 700, cx: 320, cy: 240)
        let h = try HomographyEstimate.estimate(pairs, config: PipelineConfig().homography)
        let truth = Quaternion(w: 0.9659257157248222, x: 0, y: -0.24321070628091146, z: -0.08852154569273035).rotationMatrix
        for seed in [0, 15, 16, 17] + Array(1...6) {
            var config = PoseConfig()
            config.seed = seed
            let pose = try RelativePose.estimate(pairs, referenceCamera: suzanne, currentCamera: suzanne, homography: h, config: config)
            #expect(pose.rotationOnly && pose.translation == nil, "seed \(seed): \(pose.warnings)")
            #expect(GroundTruthErrors.rotationError(estimate: pose.rotation, truth: truth) < 0.5, "seed \(seed)")
            let evidence = try #require(pose.evidence)
            #expect(evidence.gricRotation < evidence.gricHomography, "seed \(seed): \(evidence)")
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
/// among its solutions, to 1e-6, all but very rarely (its polynomial of degree ten loses a clustered root in
/// about 7 of 10,000 random problems, measured on 20,000).
@Suite struct FivePointSolverTests {
    func solve(_ a: [SIMD3<Double>], _ b: [SIMD3<Double>]) throws -> [[Double]] {
        let ax = a.flatMap { [$0.x / $0.z, $0.y / $0.z] }, bx = b.flatMap { [$0.x / $0.z, $0.y / $0.z] }
        var solutions = [Double](repeating: 0, count: 90)
        var count: Int32 = 0
        var status = rp_status()
        #expect(rp_tools_five_point(ax, bx, &solutions, &count, &status) == 0)
        return (0..<Int(count)).map { Array(solutions[(9 * $0)..<(9 * $0 + 9)]) }
    }

    @Test func findsTheTrueEssentialMatrixForRandomPoses() throws {
        var random = SplitMix(seed: 42)
        var found = 0, total = 0
        for _ in 0..<4000 {
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
        #expect(total > 3200)
        #expect(found >= total - total / 500, "the true E among the solutions for \(found) of \(total) poses")
    }
}

/// The homography GRIC weighs against the essential matrix, on points of a known plane-induced homography.
@Suite struct PlaneHomographyTests {
    func fit(_ a: [Point2], _ b: [Point2], threshold: Double, seed: UInt64) -> Matrix3? {
        let ax = a.flatMap { [$0.x, $0.y] }, bx = b.flatMap { [$0.x, $0.y] }
        var h = [Double](repeating: 0, count: 9)
        var found: Int32 = 0
        var status = rp_status()
        #expect(rp_tools_plane_homography(ax, bx, Int32(a.count), threshold, seed, &h, &found, &status) == 0)
        return found != 0 ? Matrix3(h) : nil
    }

    func transfer(_ h: Matrix3, _ p: Point2) -> Point2 {
        let m = h * SIMD3(p.x, p.y, 1)
        return Point2(x: m.x / m.z, y: m.y / m.z)
    }

    /// H = R + t nᵀ / d of a plane 5 m away, 150 points on it with noise (normalised units: 1 px at f = 1000;
    /// sigma 0.41 px) and 100 random pairs.
    @Test(arguments: [UInt64(1), 2, 3])
    func recoversAPlaneInducedHomographyAmongOutliers(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        let r = Fixtures.rotationXYZ(degrees: 4, -12, 2), t = SIMD3(0.6, 0.1, 0.2), normal = SIMD3(0.1, -0.2, 1.0) / length(SIMD3(0.1, -0.2, 1.0))
        let truth = Matrix3(r.row0 + t.x * normal / 5, r.row1 + t.y * normal / 5, r.row2 + t.z * normal / 5)
        var a: [Point2] = [], b: [Point2] = []
        func noise() -> Double { (random.uniform(-0.5, 0.5) + random.uniform(-0.5, 0.5)) / 1000 }
        for _ in 0..<150 {
            let p = Point2(x: random.uniform(-0.5, 0.5), y: random.uniform(-0.4, 0.4))
            let q = transfer(truth, p)
            a.append(Point2(x: p.x + noise(), y: p.y + noise()))
            b.append(Point2(x: q.x + noise(), y: q.y + noise()))
        }
        for _ in 0..<100 {
            a.append(Point2(x: random.uniform(-0.5, 0.5), y: random.uniform(-0.4, 0.4)))
            b.append(Point2(x: random.uniform(-0.5, 0.5), y: random.uniform(-0.4, 0.4)))
        }
        let h = try #require(fit(a, b, threshold: 3.0 / 1000, seed: seed))
        // Over a 5 x 5 grid of the points' area: the mean within 0.3 px of the truth's transfer, the corners
        // (extrapolated the most) within 1 px.
        let grid = (0..<25).map { Point2(x: -0.5 + 0.25 * Double($0 % 5), y: -0.4 + 0.2 * Double($0 / 5)) }
        let errors = grid.map { p in
            let got = transfer(h, p), expected = transfer(truth, p)
            return hypot(got.x - expected.x, got.y - expected.y) * 1000
        }
        #expect(errors.reduce(0, +) / 25 < 0.3 && errors.max()! < 1, "transfer errors \(errors) px")
        #expect(fit(a, b, threshold: 3.0 / 1000, seed: seed) == h, "the same seed gives the same fit")
    }

    /// Points on one line fix no homography: no fit rather than a made-up one.
    @Test func collinearPointsGiveNoHomography() {
        let a = (0..<40).map { Point2(x: Double($0) / 40, y: 0.5 * Double($0) / 40) }
        #expect(fit(a, a, threshold: 0.003, seed: 0) == nil)
    }
}

/// The pose gate's typed refusal behind an error, if that is what it is.
private func refusal(_ error: any Error) -> PoseRefusal? { (error as? RephotoError)?.refusal }
