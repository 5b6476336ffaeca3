import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation

@Suite struct NavigationTests {
    let size = ImageSize(width: 640, height: 480)

    /// An old photo taken with a 1.6x longer lens, seen from its vantage point: its view fills 1/1.6 of the frame
    /// across. Without the lens that reads as "move forward"; with it, the hint is to zoom, and no step.
    @Test func aLongerLensIsAZoomNotAStep() {
        let k = 1 / 1.6, c = SIMD2(319.5, 239.5)
        let h = Matrix3([k, 0, c.x * (1 - k), 0, k, c.y * (1 - k), 0, 0, 1])
        let unaware = Navigation.compute(homography: h, referenceSize: size, currentSize: size)
        #expect(unaware.hints.first?.hasPrefix("move forward") == true, "\(unaware.hints)")
        let aware = Navigation.compute(homography: h, referenceSize: size, currentSize: size, lensZoom: 1.6)
        #expect(aware.hints == ["the old photo was taken with a longer lens: zoom in about 1.6x (stepping closer changes the perspective)"], "\(aware.hints)")
        let wider = Navigation.compute(homography: Matrix3([1.5, 0, c.x * -0.5, 0, 1.5, c.y * -0.5, 0, 0, 1]), referenceSize: size,
                                       currentSize: size, lensZoom: 1 / 1.5)
        #expect(wider.hints.first?.hasPrefix("the old photo was taken with a wider lens: zoom out to about 0.67x") == true, "\(wider.hints)")
        #expect(!wider.hints.contains { $0.hasPrefix("move back") }, "\(wider.hints)")
    }

    /// The same view, the old photo's lens undetermined (its focal length refused): a view 1/1.6 across may be the lens
    /// or the distance, and the hint names both instead of a step stated as fact.
    @Test func anUndeterminedLensLeavesZoomOrStepOpen() {
        let k = 1 / 1.6, c = SIMD2(319.5, 239.5)
        let h = Matrix3([k, 0, c.x * (1 - k), 0, k, c.y * (1 - k), 0, 0, 1])
        let open = Navigation.compute(homography: h, referenceSize: size, currentSize: size, lensZoom: nil)
        #expect(open.hints == ["zoom in or move forward (view 38% too small; the old photo's lens is not determined, so which one is not known)"],
                "\(open.hints)")
        let larger = Navigation.compute(homography: Matrix3([1.5, 0, c.x * -0.5, 0, 1.5, c.y * -0.5, 0, 0, 1]), referenceSize: size,
                                        currentSize: size, lensZoom: nil)
        #expect(larger.hints.contains { $0.hasPrefix("zoom out or move back (view 50% too large") }, "\(larger.hints)")
        #expect(!larger.hints.contains { $0.hasPrefix("move back") || $0.contains("taken with") }, "\(larger.hints)")
    }

    @Test func targetIsTheCentredThreeFifthsRectangle() {
        let nav = Navigation.compute(homography: .identity, referenceSize: size, currentSize: size)
        #expect(nav.target.corners == [Point2(x: 128, y: 96), Point2(x: 512, y: 96), Point2(x: 512, y: 384), Point2(x: 128, y: 384)])
        #expect(nav.quadrilateral == nav.target)
        #expect(nav.aligned && nav.offsetX == 0 && nav.areaRatio == 1 && nav.rollDegrees == 0)
    }

    /// The smallest target the registry allows still gives the shift's offsets; a smaller one is refused by name
    /// (1e-10 was allowed and crashed every entry point on a nil centre, probe).
    @Test func smallestTargetStillNavigates() throws {
        var config = NavigationConfig()
        config.targetFraction = 0.01
        let nav = Navigation.compute(homography: Matrix3([1, 0, 32, 0, 1, -12, 0, 0, 1]), referenceSize: size, currentSize: size, config: config)
        #expect(close(nav.offsetX, 32, 1e-9) && close(nav.offsetY, -12, 1e-9) && close(nav.areaRatio, 1, 1e-9))
        #expect(throws: RephotoError.self) { try PipelineConfig().overriding(with: Data(#"{"navigation": {"targetFraction": 1e-10}}"#.utf8)) }
        // A square 1e-7 wide still has its diagonals' crossing (the test was absolute); collinear corners have none.
        let tiny = Quadrilateral(Point2(x: 5, y: 5), Point2(x: 5 + 1e-7, y: 5), Point2(x: 5 + 1e-7, y: 5 + 1e-7), Point2(x: 5, y: 5 + 1e-7))
        let centre = try #require(tiny.diagonalCentre)
        #expect(close(centre.x, 5 + 5e-8, 1e-15) && close(centre.y, 5 + 5e-8, 1e-15))
        #expect(Quadrilateral(Point2(x: 0, y: 0), Point2(x: 1, y: 0), Point2(x: 2, y: 0), Point2(x: 3, y: 0)).diagonalCentre == nil)
    }

    @Test func shiftGivesOffsetInPixelsAndPercentOfWidth() {
        let nav = Navigation.compute(homography: Matrix3([1, 0, 32, 0, 1, -12, 0, 0, 1]), referenceSize: size, currentSize: size)
        #expect(close(nav.offsetX, 32, 1e-9) && close(nav.offsetY, -12, 1e-9))
        #expect(close(nav.offsetXPercent, 5, 1e-9) && close(nav.offsetYPercent, -1.875, 1e-9))
        #expect(!nav.aligned)
        #expect(nav.hints.first == "turn right (5% of width)")
        #expect(nav.hints.contains("tilt up (1.9% of width)"))
    }

    @Test func zoomAboutTheCentreGivesAreaRatio() {
        let c = Matrix3([1, 0, 320, 0, 1, 240, 0, 0, 1]), s = Matrix3([1.2, 0, 0, 0, 1.2, 0, 0, 0, 1])
        let h = c * s * c.inverse!
        let nav = Navigation.compute(homography: h, referenceSize: size, currentSize: size)
        #expect(close(nav.areaRatio, 1.44, 1e-9))
        #expect(nav.hints.first?.hasPrefix("move back") == true)
        let out = Navigation.compute(homography: c * s.inverse! * c.inverse!, referenceSize: size, currentSize: size)
        #expect(out.hints.first?.hasPrefix("move forward") == true)
    }

    /// In image coordinates (y down) a positive rotation angle turns content clockwise on screen.
    @Test func inPlaneRotationGivesRoll() {
        let c = Matrix3([1, 0, 320, 0, 1, 240, 0, 0, 1])
        let rot = Matrix3.rotation(axis: SIMD3(0, 0, 1), angle: 5 * .pi / 180)
        let nav = Navigation.compute(homography: c * rot * c.inverse!, referenceSize: size, currentSize: size)
        #expect(close(nav.rollDegrees, 5, 1e-9))
        #expect(nav.hints.contains("roll clockwise 5°"))
    }

    /// Turning the camera right by 10° (rotation about y): the reference view moves left in the frame and
    /// its left edge grows (farther off-axis): offsetX < 0, "turn left", keystone < 0.
    @Test func cameraTurnedRightIsToldToTurnLeft() {
        let k = Matrix3([500, 0, 320, 0, 500, 240, 0, 0, 1])
        // Camera turned right: a world point straight ahead appears at negative x, i.e. X_current = R X_reference
        // with R the rotation about y by -10°.
        let r = Matrix3.rotation(axis: SIMD3(0, 1, 0), angle: -10 * .pi / 180)
        let h = k * r * k.inverse!
        let nav = Navigation.compute(homography: h, referenceSize: size, currentSize: size)
        #expect(nav.offsetX < -80 && abs(nav.offsetY) < 1)
        #expect(nav.keystoneHorizontalPercent < -1)
        #expect(nav.hints.first?.hasPrefix("turn left") == true)
    }

    @Test func quadrilateralFollowsDifferentReferenceSize() {
        // A reference at half the resolution, same framing: H scales by 2; the quad coincides with the target.
        let h = Matrix3([2, 0, 0.5, 0, 2, 0.5, 0, 0, 1])
        let nav = Navigation.compute(homography: h, referenceSize: ImageSize(width: 320, height: 240), currentSize: size)
        #expect(nav.quadrilateral.maxCornerDistance(to: nav.target) < 1)
        #expect(nav.aligned)
    }
}

@Suite struct NumberFormattingTests {
    /// Hints and messages never use exponent notation ("roll clockwise 1.1e+02°", "view 2.2e+02% too large").
    @Test func numbersForPeopleHaveNoExponent() {
        #expect(fmt(110.4, 2) == "110" && fmt(221.7, 2) == "222" && fmt(2.13, 2) == "2.1" && fmt(25.4, 2) == "25")
        #expect(fmt(0.00001234, 3) == "0.0000123")
        #expect(fmt(1.0000001, 6) == "1")
        let hints = Navigation.compute(homography: Matrix3([0, -3, 640, 3, 0, 0, 0, 0, 1]),
                                       referenceSize: ImageSize(width: 640, height: 480), currentSize: ImageSize(width: 640, height: 480)).hints
        #expect(!hints.isEmpty && hints.allSatisfy { !$0.contains("e+") && !$0.contains("e-") }, "\(hints)")
    }
}
