import Foundation
import Testing
@testable import RephotoKit

@Suite struct ConcurrencyTests {
    /// One prepared reference shared by concurrent tasks gives exactly the sequential answers.
    @Test func sharedReferenceFromManyTasks() async throws {
        let estimator = try PoseEstimator()
        let reference = try estimator.prepareReference(try Fixtures.image("graf1.png"), camera: nil)
        let current = [try Fixtures.image("graf3.png"), try Fixtures.image("graf1.png")]
        let sequential = try current.map { try estimator.estimate(reference: reference, current: $0, camera: nil).homography }
        let parallel = try await withThrowingTaskGroup(of: (Int, Matrix3).self) { group in
            for i in 0..<8 {
                group.addTask { (i, try estimator.estimate(reference: reference, current: current[i % 2], camera: nil).homography) }
            }
            var out: [Int: Matrix3] = [:]
            for try await (i, h) in group { out[i] = h }
            return out
        }
        for (i, h) in parallel { #expect(h == sequential[i % 2]) }
        #expect(parallel.count == 8)
    }

    @Test func referenceFromOtherFeatureSettingsIsRefused() throws {
        let reference = try PoseEstimator().prepareReference(try Fixtures.image("graf1.png"), camera: nil)
        var config = PipelineConfig()
        config.features.detector = .orb
        #expect(throws: RephotoError.self) { try PoseEstimator(config: config).estimate(reference: reference, current: try Fixtures.image("graf3.png"), camera: nil) }
    }
}
