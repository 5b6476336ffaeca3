import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit

@Suite struct FeatureCacheTests {
    func entry(_ data: Data, _ config: FeatureConfig) throws -> FeatureCache.Entry {
        let image = try Image(data: data, grayscale: true)
        return FeatureCache.Entry(image: image, features: try Features(image: image, config: config))
    }

    @Test func sameBytesAndSettingsAreDetectedOnceAndOtherSettingsAgain() throws {
        let data = try Data(contentsOf: Fixtures.packageRoot.appendingPathComponent(".cache/opencv-samples/graf1.png"))
        let cache = FeatureCache()
        var orb = FeatureConfig()
        orb.detector = .orb
        let first = try cache.entry(bytes: data, config: FeatureConfig()) { try entry(data, FeatureConfig()) }
        let again = try cache.entry(bytes: data, config: FeatureConfig()) { Issue.record("detected twice"); return try entry(data, FeatureConfig()) }
        #expect(first.features === again.features)
        _ = try cache.entry(bytes: data, config: orb) { try entry(data, orb) }
        #expect(cache.counts == (detections: 2, reuses: 1))
    }

    /// Past its byte budget the cache computes and returns entries but keeps none: memory stays bounded.
    @Test func budgetBoundsWhatIsKept() throws {
        let data = try Data(contentsOf: Fixtures.packageRoot.appendingPathComponent(".cache/opencv-samples/graf1.png"))
        let cache = FeatureCache(maxBytes: 1000)
        for _ in 0..<2 { _ = try cache.entry(bytes: data, config: FeatureConfig()) { try entry(data, FeatureConfig()) } }
        #expect(cache.counts == (detections: 2, reuses: 0))
    }
}
