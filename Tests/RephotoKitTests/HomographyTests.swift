import Foundation
import Testing
@testable import RephotoKit

@Suite struct HomographyTests {
    /// H1to3p.xml from OpenCV's samples: the published graf1 -> graf3 homography.
    static func graf13() throws -> Matrix3 {
        let xml = try String(contentsOfFile: Fixtures.sample("H1to3p.xml"), encoding: .utf8)
        let body = xml.components(separatedBy: "<data>")[1].components(separatedBy: "</data>")[0]
        return Matrix3(body.split(whereSeparator: { $0.isWhitespace }).compactMap { Double($0) })
    }

    @Test func grafMatchesPublishedHomographyWithAKAZE() throws {
        let truth = try Self.graf13()
        let estimator = try PoseEstimator()
        let result = try estimator.estimate(reference: try Fixtures.image("graf1.png"), current: try Fixtures.image("graf3.png"),
                                            camera: nil, truth: GroundTruth(homography: truth))
        let error = try #require(result.errors?.cornerErrorPixels)
        #expect(error < 2, "mean corner error \(error) px")
        // The corner error of the truth against itself is exactly zero.
        #expect(GroundTruthErrors.cornerError(estimate: truth, truth: truth, size: ImageSize(width: 800, height: 640)) == 0)
    }

    /// graf1 warped by a known perspective homography: every robust method recovers it.
    @Test(arguments: [RobustMethod.ransac, .lmeds, .rho, .usacDefault, .usacParallel, .usacFast, .usacAccurate, .usacProsac, .usacMagsac])
    func recoversKnownHomography(method: RobustMethod) throws {
        let texture = try Fixtures.image("graf1.png")
        let truth = Matrix3([0.9, 0.08, 30, -0.05, 0.95, 20, 1.2e-4, -8e-5, 1])
        let warped = try texture.warped(by: truth, width: 800, height: 640)
        var config = PipelineConfig()
        config.homography.method = method
        let result = try PoseEstimator(config: config).estimate(reference: texture, current: warped, camera: nil,
                                                                truth: GroundTruth(homography: truth))
        let error = try #require(result.errors?.cornerErrorPixels)
        #expect(error < 1.0, "\(method.rawValue): mean corner error \(error) px")
        #expect(result.metrics.homographyRmsPixels < 1.5)
    }

    @Test func tooFewPointsIsAnEstimationFailure() throws {
        let pairs = Correspondences(matches: [], reference: [Point2(x: 0, y: 0), Point2(x: 1, y: 0), Point2(x: 0, y: 1)],
                                    current: [Point2(x: 0, y: 0), Point2(x: 1, y: 0), Point2(x: 0, y: 1)])
        let error = #expect(throws: RephotoError.self) { try HomographyEstimate.estimate(pairs, config: .homographyDefault) }
        #expect(error?.kind == .estimationFailed)
        #expect(error?.message == "homography needs at least 4 matches, got 3")
    }
}
