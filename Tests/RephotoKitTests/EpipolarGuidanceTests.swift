import Foundation
@testable import RephotoKit
import Testing

/// An old photo's second matching pass along epipolar lines (`EpipolarGuidance`), on correspondences projected through
/// known cameras (`ReferenceFocalTests.pairs`): the truth is which candidates the scene generated.
@Suite struct EpipolarGuidanceTests {
    /// `pairs` as matches whose current keypoints are numbered from `first`.
    static func numbered(_ pairs: Correspondences, from first: Int) -> Correspondences {
        Correspondences(matches: pairs.reference.indices.map { Match(referenceIndex: $0, currentIndex: first + $0, distance: 0) },
                        reference: pairs.reference, current: pairs.current)
    }

    static let rotation = Matrix3.rotation(axis: SIMD3(0.2, 1, 0.1), angle: 12 * .pi / 180)

    /// A first pass of 60 true and 60 random matches; 150 true candidates and 300 random ones, from a print of an
    /// unknown 1,400 px lens. The candidates the scene made join (all but a few), the random ones hardly (a random
    /// pair lies within 2 px of its epipolar line about once in 200), and the first pass's are kept as they were.
    @Test func candidatesOnTheirEpipolarLinesJoinTheFirstPass() throws {
        let truth = SIMD3(1, 0.1, 0.3)
        let first = Self.numbered(ReferenceFocalTests.pairs(focal: 1400, rotation: Self.rotation, translation: truth, count: 60, outliers: 60, seed: 7),
                                  from: 0)
        let candidates = Self.numbered(ReferenceFocalTests.pairs(focal: 1400, rotation: Self.rotation, translation: truth, count: 150, outliers: 300, seed: 8),
                                       from: 1000)
        let (extended, inliers) = try EpipolarGuidance.extend(first, with: candidates, referenceScale: 1, currentScale: 1, thresholdPixels: 2)
        #expect(inliers >= 58 && inliers <= 70, "\(inliers) inliers of the first pass's matrix")
        #expect(Array(extended.matches.prefix(first.count)) == first.matches)
        let added = extended.matches.dropFirst(first.count).map { $0.currentIndex - 1000 }
        let trueAdded = added.filter { $0 < 150 }.count, randomAdded = added.count - trueAdded
        #expect(trueAdded >= 140, "\(trueAdded) of 150 true candidates joined")
        #expect(randomAdded <= 6, "\(randomAdded) of 300 random candidates joined")
    }

    /// A current keypoint the first pass matched is not matched again by the second.
    @Test func aKeypointTheFirstPassMatchedIsNotAddedTwice() throws {
        let pairs = ReferenceFocalTests.pairs(focal: 1400, rotation: Self.rotation, translation: SIMD3(1, 0.1, 0.3), count: 80, outliers: 20, seed: 7)
        let first = Self.numbered(pairs, from: 0)
        let (extended, _) = try EpipolarGuidance.extend(first, with: first, referenceScale: 1, currentScale: 1, thresholdPixels: 2)
        #expect(extended.count == first.count)
    }

    /// Scales put each image's points into the pixels the threshold is in: the current image at three times the
    /// print's scale, scaled back by a third, gives the same matches.
    @Test func eachImageIsMeasuredAtItsOwnScale() throws {
        let truth = SIMD3(1, 0.1, 0.3)
        let first = Self.numbered(ReferenceFocalTests.pairs(focal: 1400, rotation: Self.rotation, translation: truth, count: 60, outliers: 60, seed: 7), from: 0)
        let candidates = Self.numbered(ReferenceFocalTests.pairs(focal: 1400, rotation: Self.rotation, translation: truth, count: 150, outliers: 300, seed: 8),
                                       from: 1000)
        func tripled(_ c: Correspondences) -> Correspondences {
            Correspondences(matches: c.matches, reference: c.reference, current: c.current.map { Point2(x: 3 * $0.x, y: 3 * $0.y) })
        }
        let plain = try EpipolarGuidance.extend(first, with: candidates, referenceScale: 1, currentScale: 1, thresholdPixels: 2)
        let scaled = try EpipolarGuidance.extend(tripled(first), with: tripled(candidates), referenceScale: 1, currentScale: 1.0 / 3,
                                                 thresholdPixels: 2)
        #expect(Set(scaled.pairs.matches.map(\.currentIndex)) == Set(plain.pairs.matches.map(\.currentIndex)))
    }

    @Test func sevenPairsAreTooFewAndANonFiniteCandidateIsNamed() throws {
        let pairs = Self.numbered(ReferenceFocalTests.pairs(focal: 1400, rotation: Self.rotation, translation: SIMD3(1, 0, 0), count: 60, outliers: 0), from: 0)
        let seven = Self.numbered(ReferenceFocalTests.pairs(focal: 1400, rotation: Self.rotation, translation: SIMD3(1, 0, 0), count: 7, outliers: 0), from: 0)
        #expect {
            try EpipolarGuidance.extend(seven, with: pairs, referenceScale: 1, currentScale: 1, thresholdPixels: 2)
        } throws: { ($0 as? RephotoError)?.kind == .estimationFailed && "\($0)".contains("7 correspondences") }
        var broken = pairs
        broken.reference[5] = Point2(x: .infinity, y: 3)
        #expect {
            try EpipolarGuidance.extend(pairs, with: broken, referenceScale: 1, currentScale: 1, thresholdPixels: 2)
        } throws: { ($0 as? RephotoError)?.kind == .badInput && "\($0)".contains("candidate reference point 5 is not finite") }
    }
}
