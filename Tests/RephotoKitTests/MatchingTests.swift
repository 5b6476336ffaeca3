import Testing
@testable import RephotoKit

@Suite struct MatchingTests {
    /// An image matched with itself: the truth is that every keypoint matches itself.
    @Test(arguments: [
        (DetectorKind.akaze, MatchConfig.Matcher.bruteForce), (.akaze, .flann),
        (.orb, .bruteForce), (.orb, .flann), (.sift, .bruteForce), (.sift, .flann),
    ])
    func selfMatchesFindTheSameKeypoint(detector: DetectorKind, matcher: MatchConfig.Matcher) throws {
        let features = try Features(image: try Fixtures.image("graf1.png"), config: FeatureConfig(detector: detector))
        var config = MatchConfig()
        config.matcher = matcher
        let pairs = try Matcher.match(reference: features, current: features, config: config)
        let same = pairs.matches.filter { $0.referenceIndex == $0.currentIndex }.count
        #expect(pairs.count > features.count / 2, "\(pairs.count) of \(features.count)")
        #expect(Double(same) >= 0.97 * Double(pairs.count))
        let displaced = zip(pairs.reference, pairs.current).filter { $0.distance(to: $1) > 1e-6 }.count
        #expect(displaced == pairs.count - same)
    }

    @Test func mutualCheckAndRatioOnlyRemoveMatches() throws {
        let config = FeatureConfig()
        let a = try Features(image: try Fixtures.image("graf1.png"), config: config)
        let b = try Features(image: try Fixtures.image("graf3.png"), config: config)
        var loose = MatchConfig()
        loose.ratio = 0.9
        var strict = MatchConfig()
        strict.ratio = 0.6
        var mutual = loose
        mutual.mutual = true
        let l = try Matcher.match(reference: a, current: b, config: loose)
        let s = try Matcher.match(reference: a, current: b, config: strict)
        let m = try Matcher.match(reference: a, current: b, config: mutual)
        #expect(s.count < l.count && m.count < l.count && m.count > 0)
        let looseSet = Set(l.matches.map { [$0.referenceIndex, $0.currentIndex] })
        #expect(m.matches.allSatisfy { looseSet.contains([$0.referenceIndex, $0.currentIndex]) })
        #expect(Set(m.matches.map(\.referenceIndex)).count == m.count)  // one-to-one
    }

    @Test func differentDescriptorsAreRefused() throws {
        let image = try Fixtures.image("graf1.png")
        let akaze = try Features(image: image, config: FeatureConfig(detector: .akaze))
        let orb = try Features(image: image, config: FeatureConfig(detector: .orb))
        let error = #expect(throws: RephotoError.self) { try Matcher.match(reference: akaze, current: orb, config: MatchConfig()) }
        #expect(error?.message.hasPrefix("descriptors differ") == true)
        let sift = try Features(image: image, config: FeatureConfig(detector: .sift))
        #expect(throws: RephotoError.self) { try Matcher.match(reference: sift, current: orb, config: MatchConfig()) }
    }
}
