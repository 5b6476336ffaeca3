import RephotoTestSupport
import Testing
@testable import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation

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
        if matcher == .bruteForce {
            // Exact search: a keypoint's nearest neighbour is itself at distance 0, and an identical duplicate
            // ties at 0 and fails the ratio test, so every match that survives is the keypoint itself.
            #expect(same == pairs.count, "\(pairs.count - same) of \(pairs.count) matches are not self-matches")
        } else {
            // FLANN is approximate: a few searches may miss the exact neighbour.
            #expect(Double(same) >= 0.97 * Double(pairs.count))
        }
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

    /// The shim's Hamming kernels against cv::BFMatcher itself: the same matches, distances and tie order, for
    /// 61-byte AKAZE rows, 20-byte (160-bit) AKAZE rows, 32-byte ORB rows, with and without the mutual check,
    /// on every kernel this CPU can run. ORB with WTA_K 3 (Hamming2) must fall back to OpenCV's matcher.
    /// One test walks the kernels in turn: the pin is process-wide.
    @Test func hammingKernelsEqualOpenCVBruteForce() throws {
        var short = FeatureConfig(detector: .akaze)
        short.akaze.descriptorSize = 160
        var hamming2 = FeatureConfig(detector: .orb)
        hamming2.orb.wtaK = 3
        var cases: [(Features, Features)] = []
        for var features in [FeatureConfig(detector: .akaze), short, FeatureConfig(detector: .orb), hamming2] {
            features.maxDimension = 600  // the portable kernel is slow in debug builds
            cases.append((try Features(image: try Fixtures.image("graf1.png"), config: features),
                          try Features(image: try Fixtures.image("graf3.png"), config: features)))
        }
        var ran: [HammingKernel] = []
        for kernel in [HammingKernel.portable, .avx2, .avx512] {
            guard kernel.resolved == kernel else {
                // Said, not silently passed: the run shows which kernels this CPU could not check.
                print("MatchingTests: Hamming kernel \(kernel.name) not supported by this CPU: skipped")
                continue
            }
            ran.append(kernel)
            for (a, b) in cases {
                for (mutual, ratio) in [(false, 0.8), (true, 0.8), (false, 1.0)] {
                    var ours = MatchConfig()
                    ours.mutual = mutual
                    ours.ratio = ratio
                    var opencv = ours
                    opencv.matcher = .opencvBruteForce
                    let expected = try Matcher.match(reference: a, current: b, config: opencv).matches
                    let got = try Matcher.match(reference: a, current: b, config: ours, kernel: kernel).matches
                    #expect(expected.count > 30)
                    let same = got == expected
                    #expect(same, "\(kernel) \(a.config.detector) \(a.descriptorBytes) B mutual \(mutual) ratio \(ratio): \(got.count) vs \(expected.count)")
                }
            }
        }
        #expect(ran.starts(with: [.portable]))
        #expect(HammingKernel.auto.resolved == ran.last)
    }

    /// Each match carries Lowe's ratio, its distance over the second-nearest reference descriptor's, checked
    /// against Hamming distances counted here from the descriptors themselves; PROSAC orders by it.
    @Test func matchesCarryTheirRatio() throws {
        var features = FeatureConfig(detector: .orb)
        features.maxDimension = 600
        let a = try Features(image: try Fixtures.image("graf1.png"), config: features)
        let b = try Features(image: try Fixtures.image("graf3.png"), config: features)
        var config = MatchConfig()
        config.ratio = 1  // every nearest neighbour, so ratios near 1 are checked too
        let pairs = try Matcher.match(reference: a, current: b, config: config)
        #expect(pairs.count > 100)
        let width = a.descriptorBytes
        let rowsA = Array(try a.serialized().suffix(a.count * width)), rowsB = Array(try b.serialized().suffix(b.count * width))
        func hamming(_ i: Int, _ j: Int) -> Int {
            (0..<width).reduce(0) { $0 + (rowsA[i * width + $1] ^ rowsB[j * width + $1]).nonzeroBitCount }
        }
        var below = 0
        for match in pairs.matches {
            let distances = (0..<a.count).map { hamming($0, match.currentIndex) }
            let d1 = distances[match.referenceIndex]
            #expect(Double(d1) == match.distance && d1 == distances.min())
            var rest = distances
            rest.remove(at: match.referenceIndex)
            let d2 = rest.min()!
            let expected = d2 > 0 ? Double(Float(d1) / Float(d2)) : 1
            #expect(abs(match.ratio - expected) < 1e-6, "\(match): expected \(expected)")
            if Float(d1) < Float(0.8) * Float(d2) { below += 1 }  // the ratio test's own rule
        }
        // The ratio test at 0.8 keeps exactly those.
        config.ratio = 0.8
        #expect(try Matcher.match(reference: a, current: b, config: config).count == below)
        let order = pairs.bestFirst(by: .ratio)
        #expect(zip(order, order.dropFirst()).allSatisfy { i, j in
            let (x, y) = (pairs.matches[i], pairs.matches[j])
            return x.ratio < y.ratio || (x.ratio == y.ratio && i < j)
        })
        let byDistance = pairs.bestFirst(by: .distance)
        #expect(zip(byDistance, byDistance.dropFirst()).allSatisfy { pairs.matches[$0].distance <= pairs.matches[$1].distance })
    }

    /// Asking for a kernel the CPU cannot run is an error, not a silent fallback.
    @Test func unsupportedHammingKernelIsRefused() throws {
        let unsupported = HammingKernel.allCases.filter { $0 != .auto && $0.resolved == nil }
        guard let kernel = unsupported.first else {
            print("MatchingTests: this CPU runs every Hamming kernel: the refusal is not exercised")
            return
        }
        let features = try Features(image: try Fixtures.image("graf1.png").resized(width: 320, height: 256), config: FeatureConfig())
        let error = #expect(throws: RephotoError.self) { try Matcher.match(reference: features, current: features, config: MatchConfig(), kernel: kernel) }
        #expect(error?.cause == .unsupportedCPU, "\(error?.message ?? "")")
    }

    @Test func differentDescriptorsAreRefused() throws {
        let image = try Fixtures.image("graf1.png")
        let akaze = try Features(image: image, config: FeatureConfig(detector: .akaze))
        let orb = try Features(image: image, config: FeatureConfig(detector: .orb))
        let error = #expect(throws: RephotoError.self) { try Matcher.match(reference: akaze, current: orb, config: MatchConfig()) }
        #expect(error?.cause == .descriptorMismatch, "\(error?.message ?? "")")
        let sift = try Features(image: image, config: FeatureConfig(detector: .sift))
        #expect(throws: RephotoError.self) { try Matcher.match(reference: sift, current: orb, config: MatchConfig()) }
    }
}
