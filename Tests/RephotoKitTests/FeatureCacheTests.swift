import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit

@Suite struct FeatureCacheTests {
    func entry(_ cache: FeatureCache, _ data: Data, _ config: FeatureConfig, detect: Bool = true) throws -> FeatureCache.Entry {
        try cache.entry(bytes: data, config: config, decode: { try Image(data: data, grayscale: true) }, detect: {
            if !detect { Issue.record("detected twice") }
            return try Features(image: $0, config: config)
        })
    }

    @Test func sameBytesAndSettingsAreDetectedOnceAndOtherSettingsAgain() throws {
        let data = try Data(contentsOf: Fixtures.packageRoot.appendingPathComponent(".cache/opencv-samples/graf1.png"))
        let cache = FeatureCache()
        var orb = FeatureConfig()
        orb.detector = .orb
        let first = try entry(cache, data, FeatureConfig())
        let again = try entry(cache, data, FeatureConfig(), detect: false)
        #expect(first.features === again.features)
        _ = try entry(cache, data, orb)
        #expect(cache.counts == (detections: 2, reuses: 1, loaded: 0))
    }

    /// Past its byte budget the cache computes and returns entries but keeps none: memory stays bounded.
    @Test func budgetBoundsWhatIsKept() throws {
        let data = try Data(contentsOf: Fixtures.packageRoot.appendingPathComponent(".cache/opencv-samples/graf1.png"))
        let cache = FeatureCache(maxBytes: 1000)
        for _ in 0..<2 { _ = try entry(cache, data, FeatureConfig()) }
        #expect(cache.counts == (detections: 2, reuses: 0, loaded: 0))
    }
}
