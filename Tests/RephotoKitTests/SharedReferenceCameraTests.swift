import Foundation
import Testing
@testable import RephotoKit

/// `SharedReferenceCamera`: several frames' estimates of one old reference's camera, combined.
@Suite struct SharedReferenceCameraTests {
    /// One frame's answer: a camera of focal length `focal` (sigma `sigma` %), principal point `(cx, cy)`, its pose on `inliers`.
    static func answer(_ focal: Double, sigma: Double = 2, cx: Double = 400, cy: Double = 300, inliers: Int) -> SharedReferenceCamera.Answer {
        let found = ReferenceFocal(camera: CameraIntrinsics(fx: focal, fy: focal, cx: cx, cy: cy), focalSigmaPercent: sigma, model: .fundamental,
                                   inliers: inliers, photoSize: ImageSize(width: 800, height: 600), span: focal...focal)
        let current = CameraIntrinsics(fx: 1000, fy: 1000, cx: 400, cy: 300)
        return SharedReferenceCamera.Answer(camera: EstimatedReferenceCamera(found, currentCamera: current, currentSize: ImageSize(width: 800, height: 600)),
                                            inliers: inliers)
    }

    /// The weighted median (inliers over the variance, the sigmas here all 2 %): a far focal length on few inliers does not move it, the principal point is the
    /// weighted median of each coordinate, and the sigma is the answers' robust spread over the square root of their
    /// number (worked by hand: deviations 0, ln 1.1, ln(1/0.9), ln 3 weighed 100, 50, 50, 10; their weighted median is
    /// ln 1.1, times 1.4826 is 14.13 %, over 2 is 7.07 %). Fewer answers than `pose.referenceFocal.shareMinFrames` give none.
    @Test func theAnswersCombineIntoTheirWeightedMedian() throws {
        let answers = [Self.answer(1000, cx: 410, cy: 290, inliers: 100), Self.answer(1100, cx: 380, cy: 310, inliers: 50),
                       Self.answer(900, cx: 420, cy: 280, inliers: 50), Self.answer(3000, cx: 100, cy: 100, inliers: 10)]
        var config = ReferenceFocalConfig()
        config.minSigmaPercent = 1
        config.shareMinFrames = 2
        let shared = try #require(SharedReferenceCamera.combine(answers, config: config))
        #expect(abs(shared.fx - 1000) < 1e-9 && shared.fy == shared.fx)
        #expect(shared.cx == 410 && shared.cy == 290)
        #expect(abs(shared.focalSigmaPercent - 1.4826 * 100 * log(1.1) / 2) < 1e-9, "\(shared.focalSigmaPercent)")
        #expect(shared.frames == 4 && shared.inliers == 210)
        // The zoom follows the focal length: the 1000 px answer's own.
        #expect(abs(shared.zoom - answers[0].camera.zoom) < 1e-12)
        // Answers that agree keep the floor or their own sigmas over the root of their number.
        let agreeing = try #require(SharedReferenceCamera.combine([Self.answer(1000, sigma: 4, inliers: 80), Self.answer(1000, sigma: 6, inliers: 80)],
                                                                  config: config))
        #expect(abs(agreeing.focalSigmaPercent - 5 / 2.0.squareRoot()) < 1e-9)
        // One frame's answer is not shared under the default minimum of two; allowed one, it keeps at least the floor.
        #expect(SharedReferenceCamera.combine([Self.answer(1000, inliers: 80)], config: config) == nil)
        config.shareMinFrames = 1
        #expect(try #require(SharedReferenceCamera.combine([Self.answer(1000, sigma: 0.2, inliers: 80)], config: config)).focalSigmaPercent == 1)
        #expect(SharedReferenceCamera.combine([], config: config) == nil)
        // A pair of close views fits the most inliers but fixes the focal length least: weighed by inliers over the
        // variance (300 / 8² against 100 / 2² each), the two precise answers outweigh it.
        let precise = try #require(SharedReferenceCamera.combine([Self.answer(1000, sigma: 8, inliers: 300), Self.answer(1100, inliers: 100),
                                                                  Self.answer(1050, inliers: 100)], config: config))
        #expect(abs(precise.fx - 1050) < 1e-9, "\(precise.fx)")
        // Two answers of equal weight: the middle between them (in log, the geometric mean), not the lower one.
        let even = try #require(SharedReferenceCamera.combine([Self.answer(1000, inliers: 100), Self.answer(1100, inliers: 100)], config: config))
        #expect(abs(even.fx - (1000.0 * 1100).squareRoot()) < 1e-6, "\(even.fx)")
        config.shareMinFrames = 0
        #expect(SharedReferenceCamera.combine(answers, config: config) == nil)
    }

    /// Grouped by reference file: each reference combines its own frames' answers, and a frame listed twice answers
    /// once, so one frame's answer given twice stays under the minimum of two.
    @Test func eachReferenceCombinesItsOwnFramesOnce() throws {
        var config = ReferenceFocalConfig()
        config.shareMinFrames = 2
        let shared = SharedReferenceCamera.combine(byReference: [
            ("a.jpg", "1.jpg", Self.answer(1000, inliers: 100)), ("a.jpg", "2.jpg", Self.answer(1000, inliers: 100)),
            ("b.jpg", "3.jpg", Self.answer(2000, inliers: 100)), ("b.jpg", "3.jpg", Self.answer(2000, inliers: 100)),
        ], config: config)
        #expect(shared.keys.sorted() == ["a.jpg"])
        #expect(abs((shared["a.jpg"]?.fx ?? 0) - 1000) < 1e-9 && shared["a.jpg"]?.frames == 2)
    }
}
