import Foundation
import RephotoTestSupport
import Testing
@testable import RephotoKit

/// The rules `ReferenceFocalDecision` takes between the reference camera's stages, on hand-built stage results: the
/// truth is each rule's arithmetic worked by hand, and which stages the composition runs.
@Suite struct ReferenceFocalDecisionTests {
    typealias Stages = ReferenceFocalStages

    static func colocated(inside: Bool = true, gap: Double = 0.01, inliers: Int, of fundamental: Int) -> Stages.Colocated {
        Stages.Colocated(focal: 1500, gap: gap, inside: inside, inliers: inliers, fundamentalInliers: fundamental, mask: [1, 1, 0])
    }

    static func scan(focal: Double = 1000, cost: Double = 50, inside: Bool = true, close: ClosedRange<Double> = 1000...1000,
                     span: ClosedRange<Double> = 900...1100) -> Stages.Scan {
        Stages.Scan(focal: focal, cost: cost, inside: inside, inliers: 2, close: close, span: span, mask: [1, 0, 1])
    }

    static func refined(focal: Double, sigma: Double = 1.5, principal: Point2 = Point2(x: 449.5, y: 449.5), inliers: Int = 2) -> Stages.Refined {
        Stages.Refined(focal: focal, noiseSigmaPercent: sigma, sigmaPercent: sigma, principalPoint: principal, principalPointEstimated: true, inliers: inliers)
    }

    static func free(found: Bool = true, refined: Bool = true, cost: Double = 40, focal: Double = 1200,
                     principal: Point2 = Point2(x: 449.5, y: 449.5)) -> Stages.Free {
        Stages.Free(found: found, cost: cost, loopInliers: 3, refined: refined, answer: Self.refined(focal: focal, sigma: 0.7, principal: principal, inliers: 3))
    }

    static let bounds = (lower: 270.0, upper: 9000.0), photo = (width: 900, height: 900)

    /// The cameras stand together when the rotation's homography holds rotationShare (0.9 here) of the fundamental
    /// matrix's inliers: 90 of 100 do, 89 do not; and only with its focal length inside the range and its gap under
    /// maxRotationGap (0.05, strictly).
    @Test func theCamerasStandTogetherOnlyWhenTheRotationHoldsItsShare() {
        var config = ReferenceFocalConfig()
        config.rotationShare = 0.9
        #expect(config.maxRotationGap == 0.05)
        #expect(ReferenceFocalDecision.camerasTogether(Self.colocated(inliers: 90, of: 100), config: config))
        #expect(!ReferenceFocalDecision.camerasTogether(Self.colocated(inliers: 89, of: 100), config: config))
        #expect(ReferenceFocalDecision.camerasTogether(Self.colocated(gap: 0.049, inliers: 100, of: 100), config: config))
        #expect(!ReferenceFocalDecision.camerasTogether(Self.colocated(gap: 0.05, inliers: 100, of: 100), config: config))
        #expect(!ReferenceFocalDecision.camerasTogether(Self.colocated(inside: false, inliers: 100, of: 100), config: config))
        // No fundamental matrix (0 inliers): any rotation inside the range with its gap holds.
        #expect(ReferenceFocalDecision.camerasTogether(Self.colocated(inliers: 8, of: 0), config: config))
    }

    /// The six-point loop's answer is usable with its refinement's covariance, its focal length strictly inside
    /// 270...9000 and its principal point within the photo's pixels 0...899 on both axes.
    @Test func theSixPointAnswerIsUsableInsideTheBoundsAndThePhoto() {
        func usable(_ free: Stages.Free) -> Bool { ReferenceFocalDecision.usable(free, bounds: Self.bounds, photo: Self.photo) }
        #expect(usable(Self.free()))
        #expect(!usable(Self.free(refined: false)) && !usable(Self.free(found: false)))
        #expect(!usable(Self.free(focal: 270)) && !usable(Self.free(focal: 9000)) && usable(Self.free(focal: 270.001)))
        #expect(usable(Self.free(principal: Point2(x: 0, y: 0))) && usable(Self.free(principal: Point2(x: 899, y: 899))))
        for off in [Point2(x: -0.01, y: 10), Point2(x: 10, y: -0.01), Point2(x: 899.01, y: 10), Point2(x: 10, y: 899.01)] {
            #expect(!usable(Self.free(principal: off)), "\(off)")
        }
    }

    /// `sixPoint` takes a usable answer whatever it costs; `better` takes it when its cost is no more than the scan's
    /// (40 against 50 and 40 yes, against 39.9 no), and over a scan that found nothing (infinite cost).
    @Test func theSixPointAnswerIsTakenWhenAskedForOrNoWorseThanTheScan() {
        func taken(_ free: Stages.Free, _ scanCost: Double, _ solver: ReferenceFocalSolver) -> Bool {
            ReferenceFocalDecision.sixPointTaken(free, scanCost: scanCost, solver: solver, bounds: Self.bounds, photo: Self.photo)
        }
        #expect(taken(Self.free(cost: 40), 39.9, .sixPoint))
        #expect(taken(Self.free(cost: 40), 50, .better) && taken(Self.free(cost: 40), 40, .better))
        #expect(!taken(Self.free(cost: 40), 39.9, .better))
        #expect(taken(Self.free(cost: 40), .infinity, .better))
        #expect(!taken(Self.free(refined: false, cost: 1), 50, .better) && !taken(Self.free(refined: false, cost: 1), 50, .sixPoint))
    }

    /// The scan's near-ties widen its sigma to half their span in log: 1000...1100 px is 100 ln(1.1) / 2 = 4.7655 %,
    /// which a sigma of 1.5 % becomes and one of 6 % keeps; a single grid point widens nothing.
    @Test func theScansNearTiesWidenItsSigma() {
        #expect(abs(ReferenceFocalDecision.widened(1.5, close: 1000...1100) - 4.765508990216246) < 1e-12)
        #expect(ReferenceFocalDecision.widened(6, close: 1000...1100) == 6)
        #expect(ReferenceFocalDecision.widened(1.5, close: 1000...1000) == 1.5)
        #expect(ReferenceFocalDecision.widened(.infinity, close: 1000...1100) == .infinity)
    }

    /// The six-point answer's span: the scan's widened to hold it, or the answer alone without a scan.
    @Test func theSixPointAnswersSpanHoldsItAndTheScans() {
        #expect(ReferenceFocalDecision.sixPointSpan(1200, scan: nil) == 1200...1200)
        #expect(ReferenceFocalDecision.sixPointSpan(1200, scan: Self.scan(span: 900...1100)) == 900...1200)
        #expect(ReferenceFocalDecision.sixPointSpan(800, scan: Self.scan(span: 900...1100)) == 800...1100)
        #expect(ReferenceFocalDecision.sixPointSpan(1000, scan: Self.scan(span: 900...1100)) == 900...1100)
    }

    /// Hand-built stages: each returns what it is given and records that it ran; the refinement returns its start
    /// moved by 1 %, with the model and inliers it was asked for.
    final class Recorded: ReferenceFocalSearch {
        var together = ReferenceFocalDecisionTests.colocated(inliers: 10, of: 100)
        var scanned = ReferenceFocalDecisionTests.scan()
        var freed = ReferenceFocalDecisionTests.free()
        var ran: [String] = []
        var refinedWith: (focal: Double, model: ReferenceFocal.Model, pose: Bool, mask: [UInt8]?)?
        let bounds = ReferenceFocalDecisionTests.bounds
        let photo = ReferenceFocalDecisionTests.photo

        func colocated() throws -> ReferenceFocalStages.Colocated { ran.append("colocated"); return together }
        func scan() throws -> ReferenceFocalStages.Scan { ran.append("scan"); return scanned }
        func free() throws -> ReferenceFocalStages.Free { ran.append("free"); return freed }
        func refine(from focal: Double, model: ReferenceFocal.Model, scan: ReferenceFocalStages.Scan?, mask: [UInt8]?) throws -> ReferenceFocalStages.Refined {
            ran.append("refine")
            refinedWith = (focal, model, scan != nil, mask)
            return ReferenceFocalDecisionTests.refined(focal: focal * 1.01, inliers: mask?.filter { $0 != 0 }.count ?? 3)
        }
    }

    static func config(_ solver: ReferenceFocalSolver) -> ReferenceFocalConfig {
        var config = ReferenceFocalConfig()
        config.solver = solver
        return config
    }

    /// Cameras together: the rotation's focal length is refined on the homography's inliers, the span is that focal
    /// length alone, and neither the scan nor the six-point loop runs, whatever the solver.
    @Test(arguments: ReferenceFocalSolver.allCases)
    func camerasTogetherTakeTheRotation(solver: ReferenceFocalSolver) throws {
        let stages = Recorded()
        stages.together = Self.colocated(inliers: 100, of: 100)
        let answer = try ReferenceFocalDecision.decide(stages, config: Self.config(solver))
        #expect(stages.ran == ["colocated", "refine"])
        #expect(stages.refinedWith?.model == .rotation && stages.refinedWith?.mask == [1, 1, 0] && stages.refinedWith?.pose == false)
        #expect(answer.model == .rotation && answer.focal == 1500 * 1.01 && answer.sigmaPercent == 1.5 && answer.inliers == 2)
        #expect(answer.span == 1500...1500)
    }

    /// Cameras apart, `scan`: the scan's best is refined from its pose on its inliers, and its sigma widened by the
    /// near-ties (1000...1100: 4.7655 %); the six-point loop does not run.
    @Test func theScanIsRefinedOnItsInliersAndWidened() throws {
        let stages = Recorded()
        stages.scanned = Self.scan(close: 1000...1100, span: 950...1150)
        let answer = try ReferenceFocalDecision.decide(stages, config: Self.config(.scan))
        #expect(stages.ran == ["colocated", "scan", "refine"])
        #expect(stages.refinedWith?.model == .fundamental && stages.refinedWith?.pose == true && stages.refinedWith?.mask == [1, 0, 1])
        #expect(answer.model == .fundamental && abs(answer.focal - 1010) < 1e-9 && abs(answer.sigmaPercent - 4.765508990216246) < 1e-12)
        #expect(answer.span == 950...1150 && answer.inliers == 2)
    }

    /// `better`: the six-point answer (cost 40) over the scan's (50) without a refinement of the scan; at cost 60 the
    /// scan's refined answer. `sixPoint`: the scan never runs.
    @Test func betterTakesTheCheaperModel() throws {
        let cheaper = Recorded()
        let answer = try ReferenceFocalDecision.decide(cheaper, config: Self.config(.better))
        #expect(cheaper.ran == ["colocated", "scan", "free"])
        #expect(answer.focal == 1200 && answer.sigmaPercent == 0.7 && answer.inliers == 3 && answer.span == 900...1200 && answer.model == .fundamental)
        let dearer = Recorded()
        dearer.freed = Self.free(cost: 60)
        let scanned = try ReferenceFocalDecision.decide(dearer, config: Self.config(.better))
        #expect(dearer.ran == ["colocated", "scan", "free", "refine"] && abs(scanned.focal - 1010) < 1e-9)
        let alone = Recorded()
        alone.freed = Self.free(cost: 60)
        let six = try ReferenceFocalDecision.decide(alone, config: Self.config(.sixPoint))
        #expect(alone.ran == ["colocated", "free"] && six.focal == 1200 && six.span == 1200...1200)
    }

    /// The refusals: the six-point loop asked for alone without a usable answer; the scan's best at an end of its grid
    /// (and `better` falls back to that scan when the loop's answer is unusable).
    @Test func noFocalLengthIsGivenWhereNoStageFoundOne() throws {
        let six = Recorded()
        six.freed = Self.free(principal: Point2(x: -5, y: 400))
        let error = #expect(throws: RephotoError.self) { try ReferenceFocalDecision.decide(six, config: Self.config(.sixPoint)) }
        #expect(error?.kind == .estimationFailed && error?.message == ReferenceFocalDecision.sixPointFoundNone)
        for solver in [ReferenceFocalSolver.scan, .better] {
            let edge = Recorded()
            edge.scanned = Self.scan(inside: false)
            edge.freed = Self.free(refined: false, cost: 1)
            let refused = #expect(throws: RephotoError.self) { try ReferenceFocalDecision.decide(edge, config: Self.config(solver)) }
            #expect(refused?.kind == .estimationFailed && refused?.message == ReferenceFocalDecision.noneInside, "\(solver)")
            #expect(!edge.ran.contains("refine"))
        }
    }
}
