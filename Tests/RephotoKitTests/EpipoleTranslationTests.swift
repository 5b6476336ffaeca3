import Foundation
import RephotoKit
import Testing

/// The translation from the current image's epipole (`EpipoleTranslation`), on correspondences projected through
/// known cameras (`ReferenceFocalTests.pairs`): the truth is the translation that generated them, and the reference's
/// camera, which the estimate is never told, may be anything.
@Suite struct EpipoleTranslationTests {
    static func degrees(_ a: SIMD3<Double>, _ b: SIMD3<Double>) -> Double {
        acos(min(1, abs(dot(a, b)) / (length(a) * length(b)))) * 180 / .pi
    }

    /// Sideways and forward motion, seen by old cameras of focal length 600-3000 px with the principal point on or
    /// off the print's centre: the direction is within 1° every time, with no reference camera assumed.
    @Test(arguments: [(600.0, 0.0, 0.0), (1600.0, 36.0, -27.0), (3000.0, -40.0, 20.0)])
    func theEpipoleGivesTheTranslationWhateverTheOldCamera(focal: Double, dx: Double, dy: Double) throws {
        for truth in [SIMD3(1, 0.1, 0.3), SIMD3(0.2, -0.1, 1)] {
            let pairs = ReferenceFocalTests.pairs(focal: focal, rotation: Matrix3.rotation(axis: SIMD3(0.2, 1, 0.1), angle: 12 * .pi / 180),
                                                  translation: truth, offset: (dx, dy))
            let found = try EpipoleTranslation.estimate(pairs, currentCamera: ReferenceFocalTests.current, thresholdPixels: 2)
            #expect(Self.degrees(found.direction, truth) < 1, "\(found.direction) for \(truth) at focal \(focal)")
            #expect(abs(length(found.direction) - 1) < 1e-9)
            // The 300 true pairs and few of the 60 random ones.
            #expect(found.inliers >= 290 && found.inliers <= 330, "\(found.inliers) inliers")
        }
    }

    /// A correspondence that is not a number is bad input, named, not an estimate.
    @Test func aNonFiniteCorrespondenceIsRefused() throws {
        var pairs = ReferenceFocalTests.pairs(focal: 1000, rotation: Matrix3.identity, translation: SIMD3(1, 0, 0))
        pairs.current[3] = Point2(x: .nan, y: 10)
        #expect {
            try EpipoleTranslation.estimate(pairs, currentCamera: ReferenceFocalTests.current, thresholdPixels: 2)
        } throws: { ($0 as? RephotoError)?.kind == .badInput && "\($0)".contains("current point 3 is not finite") }
    }

    @Test func sevenCorrespondencesAreTooFew() throws {
        let pairs = ReferenceFocalTests.pairs(focal: 1000, rotation: Matrix3.identity, translation: SIMD3(1, 0, 0), count: 7, outliers: 0)
        #expect {
            try EpipoleTranslation.estimate(pairs, currentCamera: ReferenceFocalTests.current, thresholdPixels: 2)
        } throws: { ($0 as? RephotoError)?.kind == .estimationFailed && "\($0)".contains("7 correspondences") }
    }
}
