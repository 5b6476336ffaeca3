import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation

@Suite struct MetricsTests {
    /// Every point displaced by (3, 4): AFD 5 px; Shi score 100 − 5·480/640; Plsek displacement
    /// √((3/640·100)² + (4/480·100)²) %.
    @Test func displacementMetricsOnKnownShift() {
        let size = ImageSize(width: 640, height: 480)
        let reference: [Point2] = (0..<50).map { (i: Int) -> Point2 in Point2(x: Double(i * 11 % 600), y: Double(i * 7 % 440)) }
        let current: [Point2] = reference.map { Point2(x: $0.x + 3, y: $0.y + 4) }
        let pairs = Correspondences(matches: [], reference: reference, current: current)
        let h = HomographyEstimate(matrix: Matrix3([1, 0, 3, 0, 1, 4, 0, 0, 1]), inliers: Array(repeating: true, count: 50), inlierCount: 50)
        let m = Metrics.compute(pairs: pairs, homography: h, referenceSize: size, currentSize: size, sampsonRmsPixels: nil)
        #expect(close(m.afdPixels, 5, 1e-9))
        #expect(close(m.score, 100 - 5 * 480 / 640, 1e-9))
        #expect(close(m.displacementPercent, ((300.0 / 640) * (300.0 / 640) + (400.0 / 480) * (400.0 / 480)).squareRoot(), 1e-9))
        #expect(close(m.homographyRmsPixels, 0, 1e-9))
        #expect(m.inlierRatio == 1)

        let far = current.map { Point2(x: $0.x + 200, y: $0.y) }
        let clamped = Metrics.compute(pairs: Correspondences(matches: [], reference: reference, current: far), homography: h,
                                      referenceSize: size, currentSize: size, sampsonRmsPixels: nil)
        #expect(clamped.score == 0)
    }

    @Test func groundTruthErrors() throws {
        let r = Matrix3.rotation(axis: SIMD3(1, 2, 3), angle: 0.3)
        let off = Matrix3.rotation(axis: SIMD3(0, 0, 1), angle: 2 * .pi / 180) * r
        #expect(close(GroundTruthErrors.rotationError(estimate: off, truth: r), 2, 1e-9))
        #expect(close(GroundTruthErrors.rotationError(estimate: r, truth: r), 0, 1e-6))
        // Signed: a direction the wrong way round is 180° off; the Image Matching Challenge's variant calls it 0.
        #expect(close(GroundTruthErrors.translationDirectionError(estimate: SIMD3(1, 0, 0), truth: SIMD3(-2, 0, 0)), 180, 1e-9))
        #expect(close(GroundTruthErrors.translationDirectionErrorUnsigned(estimate: SIMD3(1, 0, 0), truth: SIMD3(-2, 0, 0)), 0, 1e-9))
        #expect(close(GroundTruthErrors.translationDirectionError(estimate: SIMD3(1, 1, 0), truth: SIMD3(1, 0, 0)), 45, 1e-9))
        #expect(close(GroundTruthErrors.translationDirectionError(estimate: SIMD3(-1, 1, 0), truth: SIMD3(1, 0, 0)), 135, 1e-9))
        #expect(close(GroundTruthErrors.translationDirectionErrorUnsigned(estimate: SIMD3(-1, 1, 0), truth: SIMD3(1, 0, 0)), 45, 1e-9))
        // A flipped estimate fails a frame's pair error in the evaluator: mAA counts it as wrong.
        let truth = GroundTruth(rotation: r, translation: SIMD3(0, 0, 1))
        let flipped = try GroundTruthErrors.compute(truth: truth, rotation: r, translation: SIMD3(0, 0, -1), homography: nil, referenceSize: ImageSize(width: 10, height: 10))
        #expect(flipped.translationErrorDegrees == 180 && flipped.translationErrorUnsignedDegrees == 0)
        let shift = Matrix3([1, 0, 3, 0, 1, 4, 0, 0, 1])
        #expect(close(GroundTruthErrors.cornerError(estimate: shift, truth: .identity, size: ImageSize(width: 10, height: 10)), 5, 1e-9))
        // graf's 800x640 reference under a truth whose horizon is the line x = 800: its right corners go to
        // infinity, and an infinite corner error broke the summary (probe). The frame is refused, in words.
        let horizon = Matrix3([1, 0, 0, 0, 1, 0, -0.00125, 0, 1])
        let error = #expect(throws: RephotoError.self) {
            try GroundTruthErrors.compute(truth: GroundTruth(homography: horizon), rotation: nil, translation: nil, homography: shift,
                                          referenceSize: ImageSize(width: 800, height: 640))
        }
        #expect(error?.message == "the ground-truth homography sends a corner of the 800x640 reference to infinity (its horizon crosses the image)")
        #expect(error?.kind == .badInput)
        // The same fault in an estimate is the estimate's failure, not the input's.
        let estimated = #expect(throws: RephotoError.self) {
            try GroundTruthErrors.compute(truth: GroundTruth(homography: shift), rotation: nil, translation: nil, homography: horizon,
                                          referenceSize: ImageSize(width: 800, height: 640))
        }
        #expect(estimated?.kind == .estimationFailed)
        let fine = try GroundTruthErrors.compute(truth: GroundTruth(homography: horizon), rotation: nil, translation: nil, homography: horizon,
                                                 referenceSize: ImageSize(width: 700, height: 640))
        #expect(fine.cornerErrorPixels == 0)
    }
}
