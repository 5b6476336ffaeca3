import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation

@Suite struct HomographyTests {
    @Test func grafMatchesPublishedHomographyWithAKAZE() throws {
        let truth = try Fixtures.graf13()
        let estimator = try PoseEstimator()
        let result = try estimator.estimate(reference: try Fixtures.image("graf1.png"), current: try Fixtures.image("graf3.png"), camera: nil)
        let error = try #require(try Fixtures.errors(result, GroundTruth(homography: truth)).cornerErrorPixels)
        #expect(error < 2, "mean corner error \(error) px")
    }

    /// The corner error metric itself, against hand-computed values: a homography shifted by (3, 4) px moves
    /// every corner by exactly 5 px; one scaled by 1.01 about the origin moves the corners of an 800x600
    /// image by 0, 8, 10 and 6 px (mean 6).
    @Test func cornerErrorMeetsHandComputedValues() throws {
        let truth = try Fixtures.graf13()
        let shift = Matrix3([1, 0, 3, 0, 1, 4, 0, 0, 1])
        let size = ImageSize(width: 800, height: 600)
        #expect(abs(GroundTruthErrors.cornerError(estimate: shift, truth: .identity, size: size) - 5) < 1e-12)
        #expect(abs(GroundTruthErrors.cornerError(estimate: Matrix3([1.01, 0, 0, 0, 1.01, 0, 0, 0, 1]), truth: .identity, size: size) - 6) < 1e-9)
        #expect(GroundTruthErrors.cornerError(estimate: shift * truth, truth: truth, size: size) > 4.9)
    }

    /// graf1 warped by a known perspective homography: every robust method recovers it.
    @Test(arguments: [RobustMethod.ransac, .lmeds, .rho, .usacDefault, .usacParallel, .usacFast, .usacAccurate, .usacProsac, .usacMagsac])
    func recoversKnownHomography(method: RobustMethod) throws {
        let texture = try Fixtures.image("graf1.png")
        let truth = Matrix3([0.9, 0.08, 30, -0.05, 0.95, 20, 1.2e-4, -8e-5, 1])
        let warped = try texture.warped(by: truth, width: 800, height: 640)
        var config = PipelineConfig()
        config.homography.method = method
        let result = try PoseEstimator(config: config).estimate(reference: texture, current: warped, camera: nil)
        let error = try #require(try Fixtures.errors(result, GroundTruth(homography: truth)).cornerErrorPixels)
        #expect(error < 1.0, "\(method.rawValue): mean corner error \(error) px")
        #expect(result.metrics.homographyRmsPixels < 1.5)
    }

    @Test func tooFewPointsIsAnEstimationFailure() throws {
        let pairs = Correspondences(matches: [], reference: [Point2(x: 0, y: 0), Point2(x: 1, y: 0), Point2(x: 0, y: 1)],
                                    current: [Point2(x: 0, y: 0), Point2(x: 1, y: 0), Point2(x: 0, y: 1)])
        let error = #expect(throws: RephotoError.self) { try HomographyEstimate.estimate(pairs, config: PipelineConfig().homography) }
        #expect(error?.kind == .estimationFailed)
        #expect(error?.message == "homography needs at least 4 matches, got 3")
    }
}
