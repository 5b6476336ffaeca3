import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit
import RephotoShim
import RephotoShimTools

/// The estimator's stages (PoseStages, the C entry points) and the rules PoseDecision takes between them, on
/// correspondences from a known pose: the truth is the synthetic pose.
@Suite struct PoseDecisionTests {
    let camera = CameraIntrinsics(fx: 1000, fy: 1000, cx: 640, cy: 480)

    /// The pixels of a point (reference frame) in both cameras, with ±0.5 px of uniform noise; nil when it stands behind
    /// the current camera or outside its image.
    func projected(_ x: SIMD3<Double>, _ r: Matrix3, _ t: SIMD3<Double>, _ random: inout SplitMix) -> (Point2, Point2)? {
        let y = r * x + t
        guard y.z > 0.5 else { return nil }
        let a = Point2(x: camera.fx * x.x / x.z + camera.cx + random.uniform(-0.5, 0.5), y: camera.fy * x.y / x.z + camera.cy + random.uniform(-0.5, 0.5))
        let b = Point2(x: camera.fx * y.x / y.z + camera.cx + random.uniform(-0.5, 0.5), y: camera.fy * y.y / y.z + camera.cy + random.uniform(-0.5, 0.5))
        guard (0..<1280).contains(b.x), (0..<960).contains(b.y) else { return nil }
        return (a, b)
    }

    /// A random pair of pixels: a false match.
    func outlier(_ random: inout SplitMix) -> (Point2, Point2) {
        (Point2(x: random.uniform(0, 1280), y: random.uniform(0, 960)), Point2(x: random.uniform(0, 1280), y: random.uniform(0, 960)))
    }

    /// `inliers` exact projections of points 4-20 m away (uniform noise of ±0.5 px), then `outliers` random pairs.
    func correspondences(rotation r: Matrix3, translation t: SIMD3<Double>, inliers: Int, outliers: Int, seed: UInt64) -> Correspondences {
        var random = SplitMix(seed: seed)
        var pairs: [(Point2, Point2)] = []
        while pairs.count < inliers {
            let z = random.uniform(4, 20)
            let x = SIMD3(random.uniform(-0.6, 0.6) * z, random.uniform(-0.45, 0.45) * z, z)
            if let pair = projected(x, r, t, &random) { pairs.append(pair) }
        }
        pairs += (0..<outliers).map { _ in outlier(&random) }
        pairs.shuffle(using: &random)
        return Correspondences(matches: [], reference: pairs.map(\.0), current: pairs.map(\.1))
    }

    /// The search stage's records: the best is the true pose with the true matches as inliers, all of them in front,
    /// measured against a prior turned 7° from the truth; the runners-up fit no better than it.
    @Test(arguments: [UInt64(3), 4])
    func theSearchReportsEvidenceRecordsOfTheTruePose(seed: UInt64) throws {
        let r = Fixtures.rotationXYZ(degrees: 4, -20, 1)
        let pairs = correspondences(rotation: r, translation: SIMD3(1.5, 0.2, 0.4), inliers: 150, outliers: 80, seed: seed)
        let prior = r * Quaternion(axis: SIMD3(0, 1, 0), angle: 7 * .pi / 180).rotationMatrix
        let settings = RelativePose.SearchSettings(PoseConfig(), pairs: pairs)
        let found = try PoseStages.with(pairs, order: Array(pairs.reference.indices), referenceCamera: camera, currentCamera: camera,
                                        params: try settings.shimParameters()) { try $0.search(prior: prior) }
        let (best, runnersUp) = PoseDecision.cheapest(found.candidates, thresholdSquared: found.result.threshold_squared)
        #expect(runnersUp.count == found.candidates.count - 1)
        let tau = settings.search.essential.threshold / camera.fx
        #expect(found.result.threshold_squared == tau * tau)
        #expect(Matrix3.angleDegrees(between: Matrix3(best.R), and: r) < 1)
        #expect(best.inliers >= 145 && best.inliers <= 160, "\(best.inliers) inliers of 150 true matches")
        #expect(abs(best.prior_degrees - 7) < 1, "\(best.prior_degrees)°")
        #expect(best.excess == 0)
        #expect(best.well_in_front == best.well_triangulated && best.well_triangulated > 100)
        #expect(!PoseDecision.cheiralityRefutes(wellTriangulated: Int(best.well_triangulated), log10Chance: best.cheirality_log10_chance))
        for other in runnersUp { #expect(other.excess >= 0 && other.cost >= best.cost) }
    }

    func candidate(cost: Double, excess: Double, inliers: Int32, priorDegrees: Double, well: Int32 = 30, front: Int32 = 30,
                   cheirality: Double = -9) -> rp_pose_candidate {
        var c = rp_pose_candidate()
        (c.cost, c.excess, c.inliers, c.prior_degrees) = (cost, excess, inliers, priorDegrees)
        (c.well_triangulated, c.well_in_front, c.cheirality_log10_chance) = (well, front, cheirality)
        return c
    }

    /// The prior swap: a sensor that rules the pose out (over twice its tolerance) picks the best-fitting runner-up
    /// it backs within the excess, with the inliers, whose cheirality stands; none when it does not rule the pose out.
    @Test func thePriorSwapTakesTheBackedRunnerUpWhoseCheiralityStands() {
        let prior = PoseDecision.Prior(rotation: .identity, degrees: 5, excess: 5, guidedSamples: 0, guidedAboveLog10Chance: -3,
                                                      guidedMinInliers: 10, vertical: SIMD3(0, -1, 0))
        let pose = candidate(cost: 1.0, excess: 0, inliers: 40, priorDegrees: 20)
        let runnersUp = [
            candidate(cost: 1.3, excess: 3, inliers: 30, priorDegrees: 4),                          // backed: the choice
            candidate(cost: 1.1, excess: 1, inliers: 30, priorDegrees: 3, well: 20, front: 9, cheirality: -0.3),  // behind the cameras
            candidate(cost: 1.05, excess: 0.5, inliers: 8, priorDegrees: 2),                        // too few inliers
            candidate(cost: 1.2, excess: 2, inliers: 30, priorDegrees: 6),                          // not backed
            candidate(cost: 1.8, excess: 8, inliers: 30, priorDegrees: 1),                          // too far behind
        ]
        #expect(PoseDecision.priorChoice(pose, among: runnersUp, prior) == 0)
        #expect(PoseDecision.priorChoice(candidate(cost: 1.0, excess: 0, inliers: 40, priorDegrees: 10), among: runnersUp, prior) == nil)
        // The guided pose replaces a pose the sensor does not back, and needs the inliers to do it.
        #expect(PoseDecision.guidedReplaces(pose, with: candidate(cost: 2, excess: 0, inliers: 12, priorDegrees: 3), prior))
        #expect(!PoseDecision.guidedReplaces(pose, with: candidate(cost: 2, excess: 0, inliers: 9, priorDegrees: 3), prior))
    }

    /// The cheapest refined candidate is the pose (the earlier on a tie); each comparison's loser is a rival, in the
    /// search's order, its excess its cost over the pose's in squared thresholds.
    @Test func theCheapestCandidateIsThePoseAndTheLosersItsRivalsInOrder() {
        let costs = [2.0, 1.5, 3.0, 1.0, 1.0]
        let candidates = costs.enumerated().map { k, cost in candidate(cost: cost, excess: 0, inliers: Int32(10 + k), priorDegrees: 0) }
        let (pose, rivals) = PoseDecision.cheapest(candidates, thresholdSquared: 0.25)
        #expect(pose.inliers == 13 && pose.cost == 1.0 && pose.excess == 0)
        #expect(rivals.map(\.inliers) == [10, 12, 11, 14])
        #expect(rivals.map(\.excess) == [4, 8, 2, 0])
    }

    /// The twin rule on hand-built records: the plane's other solution replaces the pose only when the points off the
    /// plane favour it (a negative refutation) and it fits better.
    @Test func thePlanesOtherSolutionReplacesThePoseOnlyWhenRefutedAndCheaper() {
        let pose = candidate(cost: 1.0, excess: 0, inliers: 80, priorDegrees: 0)
        #expect(PoseDecision.twinReplaces(pose, with: candidate(cost: 0.9, excess: -0.4, inliers: 85, priorDegrees: 0), refutation: -3))
        #expect(!PoseDecision.twinReplaces(pose, with: candidate(cost: 0.9, excess: -0.4, inliers: 85, priorDegrees: 0), refutation: 0))
        #expect(!PoseDecision.twinReplaces(pose, with: candidate(cost: 1.0, excess: 0, inliers: 85, priorDegrees: 0), refutation: -3))
        #expect(!PoseDecision.twinReplaces(pose, with: candidate(cost: 1.2, excess: 0.8, inliers: 85, priorDegrees: 0), refutation: -5))
    }

    /// 80 points on a wall 10 m away and `off` at 4-6 m, seen from a pose (r, t), with ±0.5 px of noise, then `outliers`.
    func wall(_ r: Matrix3, _ t: SIMD3<Double>, seed: UInt64, off: Int = 12, outliers: Int = 0) -> Correspondences {
        var random = SplitMix(seed: seed)
        var pairs: [(Point2, Point2)] = []
        while pairs.count < 80 + off {
            let z = pairs.count < 80 ? 10 : random.uniform(4, 6)
            let x = SIMD3(random.uniform(-0.6, 0.6) * z, random.uniform(-0.45, 0.45) * z, z)
            if let pair = projected(x, r, t, &random) { pairs.append(pair) }
        }
        pairs += (0..<outliers).map { _ in outlier(&random) }
        return Correspondences(matches: [], reference: pairs.map(\.0), current: pairs.map(\.1))
    }

    /// rp_tools_estimate_relative_pose replays PoseDecision's cheapest and twin rules in C++ (the tools' path, without a
    /// sensor): on walls with outliers, where the runners-up and the plane's other solution are sought, both give the
    /// same pose, bit for bit, and the same rival and twin evidence.
    @Test(arguments: [UInt64(1), 2, 3, 4])
    func theCppReplayWithoutASensorAgreesWithPoseDecision(seed: UInt64) throws {
        let scene = wall(Fixtures.rotationXYZ(degrees: 2, -30, 1), SIMD3(4.0, 0.3, 1.2), seed: seed, off: 5, outliers: 60)
        let settings = RelativePose.SearchSettings(PoseConfig(), pairs: scene)
        var params = try settings.shimParameters()
        let order = Array(scene.reference.indices)
        let decided = try PoseStages.with(scene, order: order, referenceCamera: camera, currentCamera: camera, params: params) {
            try PoseDecision.search($0, settings: settings)
        }
        var shimCamera = try camera.shimCamera()
        var out = rp_relative_pose()
        var status = rp_status()
        #expect(rp_tools_estimate_relative_pose(scene.referenceXY, scene.currentXY, Int32(scene.count), &shimCamera, &shimCamera, &params, &out,
                                          nil, 0, nil, 0, nil, nil, &status) == 0)
        func fields(_ p: rp_relative_pose) -> [Double] {
            let matrices: [Double] = withUnsafeBytes(of: (p.R, p.t, p.rival_R, p.twin_R)) { Array($0.bindMemory(to: Double.self)) }
            return matrices + [Double(p.inliers), Double(p.has_twin), Double(p.twin_refutation), p.rival_excess, p.rival_degrees, p.log10_chance]
        }
        #expect(fields(decided.pose) == fields(out))
    }

    /// The twin stage on a wall 10 m away seen from 4 m apart (80 points on it, 12 at 4-6 m): from the true pose it
    /// reports the plane's other solution, over 10° off, which the points off the plane refute; from that one it
    /// reports the truth, which they favour and which fits better, so the rule takes it.
    @Test func theTwinStageReportsThePlanesOtherSolutionOfAWall() throws {
        let r = Fixtures.rotationXYZ(degrees: 2, -30, 1), t = SIMD3(4.0, 0.3, 1.2)
        let scene = wall(r, t, seed: 11)
        let settings = RelativePose.SearchSettings(PoseConfig(), pairs: scene)
        var truth = rp_pose_candidate()
        truth.R = r.tuple
        let direction = t / length(t)
        truth.t = (direction.x, direction.y, direction.z)
        let (other, back, again) = try PoseStages.with(scene, order: Array(scene.reference.indices), referenceCamera: camera, currentCamera: camera,
                                                       params: try settings.shimParameters()) { stages in
            let other = try #require(try stages.twin(of: truth, models: 100))
            let back = try #require(try stages.twin(of: other.candidate, models: 100))
            return (other, back, try stages.twin(of: back.candidate, models: 100))
        }
        #expect(Matrix3.angleDegrees(between: Matrix3(other.candidate.R), and: r) > 10)
        #expect(other.refutation > 0, "the points off the wall refute the other solution")
        #expect(Matrix3.angleDegrees(between: Matrix3(back.candidate.R), and: r) < 0.5)
        #expect(back.refutation < 0 && back.candidate.cost < other.candidate.cost)
        #expect(PoseDecision.twinReplaces(other.candidate, with: back.candidate, refutation: back.refutation))
        let kept = try #require(again)
        #expect(!PoseDecision.twinReplaces(back.candidate, with: kept.candidate, refutation: kept.refutation))
    }

    /// The loop's options are checked once (rp_check_loop_options): the registry's defaults pass, and each field out of
    /// range is refused as an invalid argument.
    @Test func theLoopsOptionsAreCheckedOnce() throws {
        let pairs = correspondences(rotation: .identity, translation: SIMD3(1, 0, 0), inliers: 10, outliers: 0, seed: 1)
        let valid = try RelativePose.SearchSettings(PoseConfig(), pairs: pairs).shimParameters().loop
        func code(_ change: (inout rp_loop_options) -> Void) -> Int32 {
            var loop = valid
            change(&loop)
            var status = rp_status()
            return rp_check_loop_options(&loop, &status)
        }
        #expect(code { _ in } == 0)
        let invalid = RP_ERR_INVALID_ARGUMENT.rawValue
        #expect(code { $0.threshold = 0 } == Int32(invalid))
        #expect(code { $0.confidence = 1 } == Int32(invalid))
        #expect(code { $0.max_iterations = -1 } == Int32(invalid))
        #expect(code { $0.runners_up = -1 } == Int32(invalid))
        #expect(code { $0.max_disagreement_degrees = .infinity } == Int32(invalid))
        // The stages' problem checks them when it is made, and a stage without one is refused.
        var params = try RelativePose.SearchSettings(PoseConfig(), pairs: pairs).shimParameters()
        params.loop.confidence = 1
        var shimCamera = try camera.shimCamera()
        let a = Correspondences.flat(pairs.reference, order: Array(pairs.reference.indices))
        let b = Correspondences.flat(pairs.current, order: Array(pairs.reference.indices))
        var problem: OpaquePointer?
        var status = rp_status()
        let made = a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in
                withUnsafePointer(to: &shimCamera) { camera in
                    var input = rp_pose_input(reference_xy: a.baseAddress, current_xy: b.baseAddress, n: Int32(pairs.count),
                                              reference_camera: camera, current_camera: camera, reference_frames: nil, current_frames: nil)
                    return rp_pose_problem_create(&input, &params, &problem, &status)
                }
            }
        }
        #expect(made == Int32(invalid) && problem == nil)
        var result = rp_pose_search_result()
        var candidates = [rp_pose_candidate](repeating: rp_pose_candidate(), count: 4)
        #expect(rp_pose_search(nil, nil, &result, &candidates, candidates.count, &status) == Int32(invalid))
    }
}
