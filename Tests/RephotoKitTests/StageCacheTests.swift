import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit
import RephotoSynthesis

/// Searches remembered across settings must return exactly what running them again returns.
@Suite struct StageCacheTests {
    /// One neighbour search, filtered at any ratio (with and without the mutual check), gives the matcher's
    /// own matches; the truth is `Matcher.match` run from scratch.
    @Test(arguments: [MatchConfig.Matcher.bruteForce, .flann])
    func neighboursFilteredEqualMatchingFromScratch(matcher: MatchConfig.Matcher) throws {
        let a = try Features(image: try Fixtures.image("graf1.png"), config: FeatureConfig())
        let b = try Features(image: try Fixtures.image("graf3.png"), config: FeatureConfig())
        for mutual in [false, true] {
            var config = MatchConfig()
            config.matcher = matcher
            config.mutual = mutual
            let neighbours = try Neighbours(reference: a, current: b, config: config)
            for ratio in [0.6, 0.75, 0.8, 0.9, 1.0] {
                config.ratio = ratio
                let direct = try Matcher.match(reference: a, current: b, config: config)
                let filtered = try neighbours.filter(ratio: ratio, mutual: mutual)
                #expect(filtered.matches == direct.matches, "\(matcher) ratio \(ratio) mutual \(mutual)")
                #expect(filtered.count > 0)
            }
        }
        var plain = MatchConfig()
        plain.matcher = matcher
        let withoutReverse = try Neighbours(reference: a, current: b, config: plain)
        #expect(throws: RephotoError.self) { try withoutReverse.filter(ratio: 0.8, mutual: true) }
    }

    /// The same frame under several settings, with one cache: every result equals the uncached estimate, a
    /// ratio change searches no descriptors again, a homography-only change runs no essential search again, a
    /// gate-only change runs no search at all, and a hit reports the time the search took when it ran.
    @Test func rememberedSearchesGiveTheUncachedResult() throws {
        let planes = try Fixtures.threePlaneScene()
        let (r, t) = Fixtures.pose(rotation: Fixtures.rotationXYZ(degrees: 2, -6, 1), centre: SIMD3(0.6, -0.1, 0.3))
        let referenceImage = try SceneRenderer.render(planes, camera: Fixtures.camera, size: Fixtures.frameSize)
        let currentImage = try SceneRenderer.render(planes, camera: Fixtures.camera, rotation: r, translation: t, size: Fixtures.frameSize)
        let cache = StageCache()
        let referenceFeatures = try Features(image: referenceImage, config: FeatureConfig())
        let currentFeatures = try Features(image: currentImage, config: FeatureConfig())
        func run(_ change: (inout PipelineConfig) -> Void, stages: StageCache?) throws -> PoseResult {
            var config = PipelineConfig()
            change(&config)
            let estimator = try PoseEstimator(config: config)
            let reference = try estimator.prepareReference(features: referenceFeatures, camera: Fixtures.camera)
            return try estimator.estimate(reference: reference, current: currentImage, currentFeatures: currentFeatures,
                                          camera: Fixtures.camera, stages: stages)
        }
        let settings: [(String, (inout PipelineConfig) -> Void, (runs: Int, reuses: Int))] = [
            ("defaults", { _ in }, (3, 0)),
            ("ratio", { $0.matching.ratio = 0.7 }, (5, 1)),
            ("homography threshold", { $0.matching.ratio = 0.7; $0.homography.threshold = 2 }, (6, 3)),
            ("gate only", { $0.matching.ratio = 0.7; $0.homography.threshold = 2; $0.pose.minInliers = 20; $0.pose.maxRotationSigma = 0.5 }, (6, 6)),
            ("essential threshold", { $0.pose.essential.threshold = 0.7 }, (7, 8)),
        ]
        var first: PoseResult?
        for (name, change, counts) in settings {
            let cached = try run(change, stages: cache)
            let plain = try run(change, stages: nil)
            #expect(cache.counts == counts, "\(name): \(cache.counts)")
            #expect(cached.correspondences.matches == plain.correspondences.matches, "\(name)")
            #expect(cached.homography == plain.homography, "\(name)")
            #expect(cached.homographyInliers == plain.homographyInliers, "\(name)")
            #expect(cached.pose != nil && cached.pose == plain.pose, "\(name)")
            #expect(cached.warnings == plain.warnings, "\(name)")
            if first == nil { first = cached }
        }
        // The first estimate's searches served again report their own times, not the lookup's.
        let again = try run({ _ in }, stages: cache)
        let timings = try #require(first?.timings)
        // (Filtering and the gate run again; the searches, most of each stage, are replayed.)
        #expect(again.timings.homography == timings.homography)
        #expect(again.timings.match > 0.5 * timings.match && (again.timings.essential ?? 0) > 0.5 * (timings.essential ?? 0))
        #expect(again.timings.total > 0.5 * timings.total)
        #expect(again.timings.detectCurrent == currentFeatures.detectMilliseconds && currentFeatures.detectMilliseconds > 0)
    }
}

extension StageCacheTests {
    /// Past its budget (which counts the features its keys hold) the cache computes and returns searches but
    /// keeps none: memory stays bounded however many images a sweep covers.
    @Test func budgetBoundsWhatIsKept() throws {
        let a = try Features(image: try Fixtures.image("graf1.png"), config: FeatureConfig())
        let b = try Features(image: try Fixtures.image("graf3.png"), config: FeatureConfig())
        // Room for the candidate lists but not for the features they would hold.
        let probe = try Neighbours(reference: a, current: b, config: MatchConfig())
        let cache = StageCache(maxBytes: probe.bytes + 1000)
        for _ in 0..<2 { _ = try cache.neighbours(reference: a, current: b, config: MatchConfig(), index: nil) }
        #expect(cache.counts == (runs: 2, reuses: 0))
        let roomy = StageCache()
        for _ in 0..<2 { _ = try roomy.neighbours(reference: a, current: b, config: MatchConfig(), index: nil) }
        #expect(roomy.counts == (runs: 1, reuses: 1))
    }
}
