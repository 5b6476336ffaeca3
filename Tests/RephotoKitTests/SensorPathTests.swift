import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit
import RephotoData
import RephotoSynthesis
import RephotoEvaluation

@Suite struct SensorPathTests {
    let size = ImageSize(width: 640, height: 480)

    /// A phone upright in portrait in east-north-up, its camera looking `heading` degrees east of north and
    /// tilted up by `tilt` degrees: world-from-device rotation as a quaternion.
    static func upright(heading: Double, tilt: Double = 0) -> Quaternion {
        let h = heading * .pi / 180
        let x = SIMD3(cos(h), -sin(h), 0), y = SIMD3<Double>(0, 0, 1), z = -SIMD3(sin(h), cos(h), 0)
        let worldFromDevice = Matrix3([x.x, y.x, z.x, x.y, y.y, z.y, x.z, y.z, z.z])
        return Quaternion(rotationMatrix: worldFromDevice * Matrix3.rotation(axis: SIMD3(1, 0, 0), angle: tilt * .pi / 180))
    }

    /// Where a phone's axes point in the back camera's image axes (x right, y down, z forward), written out by
    /// hand from how the phone is held rather than taken from the production code: the columns are the device's
    /// x (screen right), y (screen top) and z (out of the screen, away from the scene) in camera coordinates.
    static func deviceAxesInCamera(_ orientation: ScreenOrientation) -> Matrix3 {
        let (x, y): (SIMD3<Double>, SIMD3<Double>) = switch orientation {
        case .portrait: (SIMD3(1, 0, 0), SIMD3(0, -1, 0))             // screen top up in the image
        case .landscapeLeft: (SIMD3(0, -1, 0), SIMD3(-1, 0, 0))       // turned 90° counter-clockwise: top points left
        case .landscapeRight: (SIMD3(0, 1, 0), SIMD3(1, 0, 0))        // turned 90° clockwise: top points right
        case .portraitUpsideDown: (SIMD3(-1, 0, 0), SIMD3(0, 1, 0))   // top points down
        }
        let z = SIMD3<Double>(0, 0, -1)  // the back camera looks away from the screen
        return Matrix3([x.x, y.x, z.x, x.y, y.y, z.y, x.z, y.z, z.z])
    }

    /// The current attitude a phone reports after its camera rotated by R (X_current = R X_reference): the camera's
    /// world orientation turns by Rᵀ, and the device sits in the camera as `deviceAxesInCamera` says.
    static func current(after r: Matrix3, from q0: Quaternion,
                        orientations: (ScreenOrientation, ScreenOrientation) = (.portrait, .portrait)) -> Quaternion {
        let worldFromCamera0 = q0.rotationMatrix * deviceAxesInCamera(orientations.0).transposed
        return Quaternion(rotationMatrix: worldFromCamera0 * r.transposed * deviceAxesInCamera(orientations.1))
    }

    /// Physical motions with hand-derived camera rotations, independent of the production formula. Turning the
    /// phone left by θ about the vertical pans the camera left: a point straight ahead then lies to the right,
    /// (sin θ, 0, cos θ), so R = R_y(+θ). Tilting it up by θ about its screen's x axis makes that point appear
    /// lower, (0, sin θ, cos θ), so R = R_x(−θ). (Portrait; the other tests cover the screen orientations.)
    @Test func physicalPanAndTiltGiveTheirHandDerivedRotations() throws {
        let theta = 10 * Double.pi / 180
        let q0 = Self.upright(heading: 30)
        let turnedLeft = Quaternion(axis: SIMD3(0, 0, 1), angle: theta) * q0  // about the world vertical
        let tiltedUp = q0 * Quaternion(axis: SIMD3(1, 0, 0), angle: theta)      // about the device's x axis
        let pan = try SensorPath.compute(reference: Attitude(quaternion: q0), current: Attitude(quaternion: turnedLeft),
                                         referenceSize: size, currentSize: size, referenceCamera: nil, currentCamera: nil)
        let tilt = try SensorPath.compute(reference: Attitude(quaternion: q0), current: Attitude(quaternion: tiltedUp),
                                          referenceSize: size, currentSize: size, referenceCamera: nil, currentCamera: nil)
        let c = cos(theta), s = sin(theta)
        let expectedPan = Matrix3([c, 0, s, 0, 1, 0, -s, 0, c])
        let expectedTilt = Matrix3([1, 0, 0, 0, c, s, 0, -s, c])
        #expect(Matrix3.angleDegrees(between: pan.rotation, and: expectedPan) < 1e-9)
        #expect(Matrix3.angleDegrees(between: tilt.rotation, and: expectedTilt) < 1e-9)
        let ahead = SIMD3<Double>(0, 0, 1)
        #expect(length(pan.rotation * ahead - SIMD3(s, 0, c)) < 1e-12)
        #expect(length(tilt.rotation * ahead - SIMD3(0, s, c)) < 1e-12)
        // Up in the reference camera's axes (the guided search's axis): −y for an upright camera; tilted up by θ,
        // the optical axis gains sin θ of it and the image's downward y loses cos θ.
        #expect(length(pan.referenceVertical - SIMD3(0, -1, 0)) < 1e-12)
        let fromTilted = try SensorPath.compute(reference: Attitude(quaternion: tiltedUp), current: Attitude(quaternion: q0),
                                                referenceSize: size, currentSize: size, referenceCamera: nil, currentCamera: nil)
        #expect(length(fromTilted.referenceVertical - SIMD3(0, -c, s)) < 1e-12)
    }

    /// The sensor quadrilateral is the target's corners turned by the relative rotation; past the point where a
    /// corner's ray leaves the camera's front, it is withheld with a warning (a mirrored or crossed shape was
    /// reported, found by probing). Corners by hand: a pan by θ takes the ray (x, y, 1) to
    /// (x cos θ + sin θ, y, cos θ − x sin θ).
    @Test(arguments: [(30.0, 0), (60.0, 0), (80.0, 2), (100.0, 2), (120.0, 4), (180.0, 4)])
    func theSensorQuadrilateralIsWithheldOnceACornerTurnsBehindTheCamera(degrees: Double, behind: Int) throws {
        let camera = CameraIntrinsics(fx: 500, fy: 500, cx: 320, cy: 240)
        let theta = degrees * .pi / 180
        let q0 = Self.upright(heading: 30)
        let turned = Quaternion(axis: SIMD3(0, 0, 1), angle: theta) * q0
        let path = try SensorPath.compute(reference: Attitude(quaternion: q0), current: Attitude(quaternion: turned),
                                          referenceSize: size, currentSize: size, referenceCamera: camera, currentCamera: camera)
        let target = Quadrilateral.centred(in: size, fraction: NavigationConfig().targetFraction)
        if behind == 0 {
            let quad = try #require(path.quadrilateral)
            for (mapped, corner) in zip(quad.corners, target.corners) {
                let x = (corner.x - 320) / 500, y = (corner.y - 240) / 500
                let z = cos(theta) - x * sin(theta)
                let expected = Point2(x: 320 + 500 * (x * cos(theta) + sin(theta)) / z, y: 240 + 500 * y / z)
                #expect(abs(mapped.x - expected.x) < 1e-6 && abs(mapped.y - expected.y) < 1e-6, "\(mapped) against \(expected)")
            }
            #expect(!path.warnings.contains { $0.contains("behind the camera") })
        } else {
            #expect(path.quadrilateral == nil)
            #expect(path.warnings.contains { $0.contains("turns \(behind) of the target's 4 corners behind the camera") }, "\(path.warnings)")
        }
    }

    @Test func identityAttitudesPutThePointAtTheCentre() throws {
        let a = try Attitude(quaternion: Self.upright(heading: 40))
        let path = try SensorPath.compute(reference: a, current: a, referenceSize: size, currentSize: size,
                                          referenceCamera: nil, currentCamera: nil)
        #expect(path.navigationPoint == Point2(x: 320, y: 240))
        #expect(path.rotationDegrees < 1e-6)
    }

    /// A pure pitch of +10° of q_delta moves y by exactly 10/180 of the height; a roll of +20° moves x by 20/360 of the width.
    @Test func pitchAndRollMoveThePointByThePaperFormula() throws {
        let q0 = Self.upright(heading: 10, tilt: 5)
        let pitched = try Attitude(quaternion: q0 * Quaternion(axis: SIMD3(1, 0, 0), angle: 10 * .pi / 180))
        let p = try SensorPath.compute(reference: Attitude(quaternion: q0), current: pitched, referenceSize: size, currentSize: size,
                                       referenceCamera: nil, currentCamera: nil)
        #expect(abs(p.navigationPoint.y - (240 + 480 * 10 / 180)) < 1e-9)
        #expect(abs(p.navigationPoint.x - 320) < 1e-9)
        let rolled = try Attitude(quaternion: q0 * Quaternion(axis: SIMD3(0, 1, 0), angle: 20 * .pi / 180))
        let r = try SensorPath.compute(reference: Attitude(quaternion: q0), current: rolled, referenceSize: size, currentSize: size,
                                       referenceCamera: nil, currentCamera: nil)
        #expect(abs(r.navigationPoint.x - (320 + 640 * 20 / 360)) < 1e-9)
    }

    /// Attitudes derived from a known camera rotation give that rotation back exactly, for every orientation pair.
    @Test(arguments: [(ScreenOrientation.portrait, ScreenOrientation.portrait), (.portrait, .landscapeLeft),
                      (.landscapeRight, .portraitUpsideDown), (.landscapeLeft, .landscapeRight)])
    func sensorRotationEqualsTruth(orientations: (ScreenOrientation, ScreenOrientation)) throws {
        let q0 = Self.upright(heading: 73, tilt: -4)
        for r in QuaternionTests.randomRotations(50, seed: 5).map(\.rotationMatrix) {
            let q1 = Self.current(after: r, from: q0, orientations: orientations)
            let path = try SensorPath.compute(reference: Attitude(quaternion: q0, orientation: orientations.0),
                                              current: Attitude(quaternion: q1, orientation: orientations.1),
                                              referenceSize: size, currentSize: size, referenceCamera: nil, currentCamera: nil)
            #expect(zip(path.rotation.elements, r.elements).allSatisfy { abs($0 - $1) < 1e-6 })
        }
    }

    /// Turning the phone from portrait to landscapeLeft about the viewing axis leaves the upright view unchanged.
    @Test func landscapeCaptureOfTheSameViewIsNoRotation() throws {
        let q0 = Self.upright(heading: 200, tilt: 3)
        let q1 = q0 * Quaternion(axis: SIMD3(0, 0, 1), angle: .pi / 2)  // device turned 90° counter-clockwise
        let path = try SensorPath.compute(reference: Attitude(quaternion: q0), current: Attitude(quaternion: q1, orientation: .landscapeLeft),
                                          referenceSize: size, currentSize: ImageSize(width: 480, height: 640),
                                          referenceCamera: nil, currentCamera: nil)
        #expect(path.rotationDegrees < 1e-6)
    }

    /// The same physical attitudes reported in iOS's magnetic-north frame and Android's east-north-up frame.
    @Test func mixedNorthReferencedFramesAgree() throws {
        let q0 = Self.upright(heading: 30), q1 = Self.upright(heading: 38, tilt: 6)
        let nwuFromENU = Quaternion(rotationMatrix: Matrix3([0, 1, 0, -1, 0, 0, 0, 0, 1]))
        let ios0 = try Attitude(quaternion: nwuFromENU * q0, frame: .xMagneticNorthZVertical)
        let android1 = try Attitude(quaternion: q1, frame: .androidRotationVector)
        let mixed = try SensorPath.compute(reference: ios0, current: android1, referenceSize: size, currentSize: size,
                                           referenceCamera: nil, currentCamera: nil)
        let same = try SensorPath.compute(reference: Attitude(quaternion: q0, frame: .androidRotationVector), current: android1,
                                          referenceSize: size, currentSize: size, referenceCamera: nil, currentCamera: nil)
        #expect(Matrix3.angleDegrees(between: mixed.rotation, and: same.rotation) < 1e-6)
        #expect(abs(mixed.rotationDegrees - 10) < 0.01)  // 8° of heading and 6° of tilt
        #expect(!mixed.warnings.contains { $0.contains("arbitrary") })
    }

    @Test func framesWithoutACommonHeadingAreRefused() throws {
        let q = Self.upright(heading: 0)
        for (a, b) in [(AttitudeReferenceFrame.xTrueNorthZVertical, AttitudeReferenceFrame.androidRotationVector),
                       (.xArbitraryZVertical, .xMagneticNorthZVertical)] {
            let error = #expect(throws: RephotoError.self) {
                try SensorPath.compute(reference: Attitude(quaternion: q, frame: a), current: Attitude(quaternion: q, frame: b),
                                       referenceSize: size, currentSize: size, referenceCamera: nil, currentCamera: nil)
            }
            #expect(error?.cause == .headingOriginsDiffer, "\(error?.message ?? "")")
        }
    }

    /// The phone rolled 10° counter-clockwise about its screen normal: the horizon turns 10° clockwise on screen.
    @Test func levelIndicator() throws {
        let level = SensorPath.level(try Attitude(quaternion: Self.upright(heading: 15)), frameSize: size)
        #expect(abs(level.angleDegrees) < 1e-9)
        #expect(level.angleDegrees != 0 || level.angleDegrees.sign == .plus, "JSON would print -0")
        #expect(level.rectangle == Quadrilateral.centred(in: size, fraction: 0.6))
        let rolled = Self.upright(heading: 15) * Quaternion(axis: SIMD3(0, 0, 1), angle: 10 * .pi / 180)
        let tilted = SensorPath.level(try Attitude(quaternion: rolled), frameSize: size)
        #expect(abs(tilted.angleDegrees - 10) < 1e-9)
        let c = tilted.rectangle.corners
        #expect(abs(atan2(c[1].y - c[0].y, c[1].x - c[0].x) * 180 / .pi - 10) < 1e-9)
    }

    /// Pointed nearly straight up or down, gravity lies along the optical axis and the horizon's angle is noise
    /// (it jumped by 90° for 0.1° of tilt, found by probing): a warning says the level is undefined.
    @Test(arguments: [(87.0, "the camera points within 3.0° of straight up"), (-88.0, "the camera points within 2.0° of straight down"),
                      (80.0, nil), (0.0, nil)])
    func aCameraPointingStraightUpOrDownHasNoLevel(tilt: Double, warning: String?) throws {
        let reference = try Attitude(quaternion: Self.upright(heading: 15))
        let current = try Attitude(quaternion: Self.upright(heading: 15, tilt: tilt))
        let path = try SensorPath.compute(reference: reference, current: current, referenceSize: size, currentSize: size,
                                          referenceCamera: nil, currentCamera: nil)
        let flagged = path.warnings.filter { $0.contains("level angle is undefined") }
        if let warning {
            #expect(flagged.count == 1 && flagged[0].hasPrefix(warning), "\(path.warnings)")
        } else {
            #expect(flagged.isEmpty, "\(path.warnings)")
        }
    }

    @Test(arguments: [
        (Quaternion(w: .nan, x: 0, y: 0, z: 0), "is not finite"),
        (Quaternion(w: .infinity, x: 0, y: 0, z: 0), "is not finite"),
        (Quaternion(w: 0, x: 0, y: 0, z: 0), "has zero length"),
        (Quaternion(w: 2, x: 0, y: 0, z: 0), "has norm 2, not within 1 % of 1"),
        (Quaternion(w: 0.5, x: 0.5, y: 0.5, z: 0.4), "not within 1 % of 1"),
    ])
    func badAttitudesAreRefused(q: Quaternion, expected: String) {
        let error = #expect(throws: RephotoError.self) { try Attitude(quaternion: q) }
        #expect(error?.kind == .badInput)
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
    }

    @Test func nearUnitAttitudesAreRenormalised() throws {
        let a = try Attitude(quaternion: Quaternion(w: 1.005, x: 0, y: 0, z: 0))
        #expect(a.quaternion == .identity)
        #expect(try Attitude(parsing: "0.7071068, 0, 0.7071068, 0").quaternion.norm == 1)
        #expect(try Attitude(parsing: "-.5E+0, +0.5, 5e-1, .5").quaternion == Quaternion(w: -0.5, x: 0.5, y: 0.5, z: 0.5))
        for bad in ["1,0,0", "1,0,0,x", "", "1,,0,0", "0x1,0,0,0", "1.,0,0,inf", "1,0,0,1e", "1,0,0,."] {
            #expect(throws: RephotoError.self, "\(bad)") { try Attitude(parsing: bad) }
        }
    }

    // MARK: against the vision path on rendered images

    static let truth = Fixtures.rotationXYZ(degrees: 3, -6, 2)

    static func renderedPair() throws -> (Image, Image) {
        let scene = try Fixtures.threePlaneScene()
        return (try SceneRenderer.render(scene, camera: Fixtures.camera, size: Fixtures.frameSize),
                try SceneRenderer.render(scene, camera: Fixtures.camera, rotation: truth, size: Fixtures.frameSize))
    }

    @Test func sensorAndVisionAgreeOnARenderedRotation() throws {
        let (reference, current) = try Self.renderedPair()
        let q0 = Self.upright(heading: 120, tilt: 2)
        let attitudes = AttitudePair(reference: try Attitude(quaternion: q0),
                                     current: try Attitude(quaternion: Self.current(after: Self.truth, from: q0)))
        let result = try PoseEstimator().estimate(reference: reference, current: current, camera: Fixtures.camera,
                                                  attitudes: attitudes)
        let comparison = try #require(result.comparison)
        #expect(try #require(comparison.rotationAngleDegrees) < 1)
        #expect(Matrix3.angleDegrees(between: try #require(result.sensor).rotation, and: Self.truth) < 1e-6)
        #expect(try #require(comparison.quadrilateralErrorPixels) < 2)
        for d in [comparison.rollDifferenceDegrees, comparison.pitchDifferenceDegrees, comparison.yawDifferenceDegrees] {
            #expect(abs(try #require(d)) < 0.2)
        }
    }

    /// Gyro noise on both attitudes and a 2° heading offset (magnetometer) on the current one: the comparison
    /// reports the sensor's resulting error, as computed independently from the perturbed attitudes.
    @Test func comparisonReportsNoiseAndYawOffset() throws {
        let (reference, current) = try Self.renderedPair()
        let q0 = Self.upright(heading: 120, tilt: 2)
        let q1 = Self.current(after: Self.truth, from: q0)
        var g = SplitMix(seed: 99)
        func noise(_ degrees: Double) -> Quaternion {
            Quaternion(axis: SIMD3(g.uniform(-1, 1), g.uniform(-1, 1), g.uniform(-1, 1)), angle: degrees * .pi / 180)
        }
        let offset = Quaternion(axis: SIMD3(0, 0, 1), angle: 2 * .pi / 180)  // about the world vertical
        let noisy0 = noise(0.3) * q0, noisy1 = offset * noise(0.3) * q1
        let attitudes = AttitudePair(reference: try Attitude(quaternion: noisy0), current: try Attitude(quaternion: noisy1))
        let result = try PoseEstimator().estimate(reference: reference, current: current, camera: Fixtures.camera,
                                                  attitudes: attitudes)
        let comparison = try #require(result.comparison)

        let c = Self.deviceAxesInCamera(.portrait)  // camera-from-device, written by hand
        let expectedSensor = c * noisy1.rotationMatrix.transposed * noisy0.rotationMatrix * c.transposed
        let expectedError = Matrix3.angleDegrees(between: expectedSensor, and: Self.truth)
        #expect(expectedError > 1.5)
        #expect(abs(Matrix3.angleDegrees(between: try #require(result.sensor).rotation, and: Self.truth) - expectedError) < 1e-6)
        #expect(abs(try #require(comparison.rotationAngleDegrees) - expectedError) < 0.1)

        let truthEuler = EulerAngles213(Quaternion(rotationMatrix: c.transposed * Self.truth.transposed * c)).degrees
        let noisyEuler = EulerAngles213(noisy0.inverse * noisy1).degrees
        #expect(abs(try #require(comparison.rollDifferenceDegrees) - (noisyEuler.roll - truthEuler.roll)) < 0.1)
        #expect(abs(try #require(comparison.pitchDifferenceDegrees) - (noisyEuler.pitch - truthEuler.pitch)) < 0.1)
        #expect(abs(try #require(comparison.yawDifferenceDegrees) - (noisyEuler.yaw - truthEuler.yaw)) < 0.1)
        // A heading offset about the vertical shows up as roll: the turn about an upright phone's vertical axis.
        #expect(abs(try #require(comparison.rollDifferenceDegrees) - 2) < 0.7)
    }
}
