import RephotoTestSupport
import Foundation
import Testing
@testable import RephotoKit

/// The guidance's actions against known image motions and known steps: each says which way and how much in its unit,
/// and each hint is its action's text, in the actions' order.
@Suite struct GuidanceActionTests {
    let size = ImageSize(width: 640, height: 480)
    let centre = Matrix3([1, 0, 320, 0, 1, 240, 0, 0, 1])

    /// `a` is there and within `tolerance` of `b`.
    func near(_ a: Double?, _ b: Double, _ tolerance: Double = 1e-9) -> Bool { a.map { abs($0 - b) <= tolerance } ?? false }

    /// The same kinds and directions in the same order, amounts within 1e-9.
    func same(_ a: [GuidanceAction], _ b: [GuidanceAction]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.kind == $1.kind && $0.direction == $1.direction && near($0.amount, $1.amount ?? .nan) }
    }

    /// The reference view shifted 32 px right and 12 px up in a 640-px-wide frame: 5 % and 1.875 % of the width.
    @Test func aShiftIsATurnAndATiltByItsPercentOfWidth() {
        let nav = Navigation.compute(homography: Matrix3([1, 0, 32, 0, 1, -12, 0, 0, 1]), referenceSize: size, currentSize: size)
        #expect(nav.actions.map(\.kind) == [.turn, .tilt] && nav.actions.map(\.direction) == [.right, .up], "\(nav.actions)")
        #expect(near(nav.actions[0].amount, 5) && near(nav.actions[1].amount, 1.875), "\(nav.actions)")
        #expect(nav.actions.allSatisfy { $0.unit == .percentOfWidth })
        #expect(nav.hints == ["turn right (5% of width)", "tilt up (1.9% of width)"])
        #expect(nav.hints == nav.actions.map(\.text))
        // The other way round: left and down, and the larger one first.
        let back = Navigation.compute(homography: Matrix3([1, 0, -12, 0, 1, 32, 0, 0, 1]), referenceSize: size, currentSize: size)
        #expect(same(back.actions, [GuidanceAction(.tilt, .down, amount: 5), GuidanceAction(.turn, .left, amount: 1.875)]), "\(back.actions)")
        #expect(back.hints == ["tilt down (5% of width)", "turn left (1.9% of width)"])
    }

    /// A roll of +5° about the centre (clockwise on screen, y down) is roll clockwise 5 degrees; −5° the other way.
    @Test func aRollIsClockwiseOrCounterClockwiseInDegrees() throws {
        for (degrees, direction, hint) in [(5.0, GuidanceAction.Direction.clockwise, "roll clockwise 5°"), (-5, .counterClockwise, "roll counter-clockwise 5°")] {
            let rotation = Matrix3.rotation(axis: SIMD3(0, 0, 1), angle: degrees * .pi / 180)
            let nav = Navigation.compute(homography: centre * rotation * centre.inverse!, referenceSize: size, currentSize: size)
            let index = try #require(nav.actions.firstIndex { $0.kind == .roll }, "\(nav.actions)")
            let roll = nav.actions[index]
            #expect(roll.direction == direction && near(roll.amount, 5) && roll.unit == .degrees, "\(roll)")
            #expect(nav.hints[index] == hint, "\(nav.hints)")
        }
    }

    /// A view 1.2x larger about the centre: 20 % too large, move back; 1/1.2: 16.7 % too small, move forward. With the
    /// lens undetermined the same view is zoom out or move back.
    @Test func aViewTooLargeOrSmallIsAMoveByItsPercentOfSize() {
        let s = Matrix3([1.2, 0, 0, 0, 1.2, 0, 0, 0, 1])
        let larger = Navigation.compute(homography: centre * s * centre.inverse!, referenceSize: size, currentSize: size)
        #expect(larger.actions.first?.kind == .move && larger.actions.first?.direction == .back, "\(larger.actions)")
        #expect(near(larger.actions.first?.amount, 20, 1e-9) && larger.actions.first?.unit == .percentOfSize)
        #expect(larger.hints.first == "move back (view 20% too large)")
        let smaller = Navigation.compute(homography: centre * s.inverse! * centre.inverse!, referenceSize: size, currentSize: size)
        #expect(smaller.actions.first?.direction == .forward && near(smaller.actions.first?.amount, (1 - 1 / 1.2) * 100, 1e-9))
        #expect(smaller.hints.first == "move forward (view 17% too small)")
        let open = Navigation.compute(homography: centre * s * centre.inverse!, referenceSize: size, currentSize: size, lensZoom: nil)
        #expect(open.actions.first?.kind == .zoomOrMove && open.actions.first?.direction == .out && near(open.actions.first?.amount, 20))
        #expect(open.hints.first == "zoom out or move back (view 20% too large; the old photo's lens is not determined, so which one is not known)")
    }

    /// An old photo's lens 1.6x longer, seen from its vantage point: zoom in by the factor 1.6, said first, no move.
    @Test func aLensUnlikeTheReferencesIsAZoomByItsFactor() {
        let k = 1 / 1.6
        let h = Matrix3([k, 0, 319.5 * (1 - k), 0, k, 239.5 * (1 - k), 0, 0, 1])
        let nav = Navigation.compute(homography: h, referenceSize: size, currentSize: size, lensZoom: 1.6)
        #expect(nav.actions == [GuidanceAction(.zoom, .in, amount: 1.6)], "\(nav.actions)")
        #expect(nav.actions[0].unit == .factor)
        #expect(nav.hints == ["the old photo was taken with a longer lens: zoom in about 1.6x (stepping closer changes the perspective)"])
        let wider = Navigation.compute(homography: centre * Matrix3([1.5, 0, 0, 0, 1.5, 0, 0, 0, 1]) * centre.inverse!, referenceSize: size,
                                       currentSize: size, lensZoom: 1 / 1.5)
        #expect(wider.actions.first?.kind == .zoom && wider.actions.first?.direction == .out && near(wider.actions.first?.amount, 1 / 1.5))
        #expect(wider.hints.first == "the old photo was taken with a wider lens: zoom out to about 0.67x, or use a wider lens (stepping back changes the perspective)")
    }

    /// Keystone once the view is centred: the far edge longer on the right means move left around the subject; the
    /// amount is the keystone itself, and it is ordered at half of it among the others (a roll of 2.5° comes first).
    @Test func keystoneIsAnOrbitOrderedAtHalfItsPercent() {
        var nav = Navigation.compute(homography: .identity, referenceSize: size, currentSize: size)
        nav.keystoneHorizontalPercent = 6
        nav.keystoneVerticalPercent = -4
        nav.rollDegrees = 2.5
        let actions = nav.makeActions(tolerancePercent: 1)
        #expect(actions == [GuidanceAction(.orbit, .left, amount: 6), GuidanceAction(.roll, .clockwise, amount: 2.5), GuidanceAction(.orbit, .down, amount: 4)],
                "\(actions)")
        #expect(actions.map(\.text) == ["move left around the subject", "roll clockwise 2.5°", "move down around the subject"])
        #expect(actions[0].unit == .keystonePercent)
        // Off-centre, keystone says nothing (a turn skews the view too).
        nav.offsetXPercent = 3
        #expect(!nav.makeActions(tolerancePercent: 1).contains { $0.kind == .orbit })
    }

    /// A quadrilateral that crosses itself: the reference view is not in front; one action with no direction or amount.
    @Test func aViewNotInFrontIsFindSubjectWithNulls() throws {
        var nav = Navigation.compute(homography: .identity, referenceSize: size, currentSize: size)
        nav.quadrilateral = Quadrilateral(Point2(x: 100, y: 100), Point2(x: 500, y: 400), Point2(x: 500, y: 100), Point2(x: 100, y: 400))
        nav.actions = nav.makeActions(tolerancePercent: 1)
        #expect(nav.actions == [GuidanceAction(.findSubject)])
        #expect(nav.hints == ["the reference view is not in front of the camera: point the camera at the subject"])
        let object = try #require(try JSONSerialization.jsonObject(with: JSONOutput.encoder(pretty: false).encode(nav.actions[0])) as? [String: Any])
        #expect(object["kind"] as? String == "findSubject")
        for key in ["direction", "amount", "unit"] { #expect(object[key] is NSNull, "\(key)") }
    }

    /// A step 25 % of the distance long along (12, −9, −20)/25 in the camera's axes (x right, y down, z forward):
    /// back 20 %, right 12 %, up (raise) 9 %, largest first; none once arrived or while the direction is undetermined.
    @Test func aStepIsStepAndRaiseActionsInPercentOfTheDistance() throws {
        let json = #"{"vector": [12, -9, -20], "baselines": 25, "depthFraction": 0.25, "directionSigmaDegrees": 1, "lengthSigmaBaselines": 0.1, "keyframe": 3, "determined": true, "arrived": false}"#
        var step = try JSONDecoder().decode(Step.self, from: Data(json.utf8))
        #expect(step.actions.map(\.kind) == [.step, .step, .raise] && step.actions.map(\.direction) == [.back, .right, .up], "\(step.actions)")
        #expect(zip(step.actions.map(\.amount), [20.0, 12, 9]).allSatisfy { near($0, $1, 1e-9) }, "\(step.actions)")
        #expect(step.actions.allSatisfy { $0.unit == .percentOfDistance })
        #expect(step.hints == ["step back (20% of the distance to the subject)", "step right (12% of the distance to the subject)",
                               "raise the camera (9% of the distance to the subject)"])
        // Mirrored: forward, left, lower.
        step.vector = [-12, 9, 20]
        #expect(step.hints == ["step forward (20% of the distance to the subject)", "step left (12% of the distance to the subject)",
                               "lower the camera (9% of the distance to the subject)"])
        step.arrived = true
        #expect(step.actions.isEmpty)
        step.arrived = false
        step.determined = false
        #expect(step.actions.isEmpty)
    }

    /// The JSON of a navigation: `actions` beside `hints`, as many and in the same order, each decoding to the action
    /// whose text is the hint at its place; every key present.
    @Test func navigationJSONCarriesActionsBesideHints() throws {
        let rotation = Matrix3.rotation(axis: SIMD3(0, 0, 1), angle: 3 * .pi / 180)
        let h = Matrix3([1, 0, 40, 0, 1, 20, 0, 0, 1]) * centre * rotation * Matrix3([1.1, 0, 0, 0, 1.1, 0, 0, 0, 1]) * centre.inverse!
        let nav = Navigation.compute(homography: h, referenceSize: size, currentSize: size)
        let data = try JSONOutput.encoder(pretty: false).encode(nav)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let hints = try #require(object["hints"] as? [String])
        let actions = try #require(object["actions"] as? [[String: Any]])
        #expect(hints.count == 4 && actions.count == hints.count, "\(hints)")
        #expect(actions.map { $0["kind"] as? String } == ["move", "turn", "tilt", "roll"], "\(actions)")
        #expect(actions.allSatisfy { Set($0.keys) == ["kind", "direction", "amount", "unit"] })
        let decoded = try JSONDecoder().decode([GuidanceAction].self, from: JSONSerialization.data(withJSONObject: actions))
        #expect(decoded.map(\.text) == hints)
        #expect(try JSONDecoder().decode(Navigation.self, from: data) == nav)
    }

    /// Every kind's text in today's words (the hints before actions existed), and the unit each kind carries.
    @Test func everyKindIsWordedAsBefore() {
        let cases: [(GuidanceAction, String, GuidanceAction.Unit?)] = [
            (GuidanceAction(.turn, .left, amount: 12.34), "turn left (12% of width)", .percentOfWidth),
            (GuidanceAction(.tilt, .down, amount: 0.456), "tilt down (0.46% of width)", .percentOfWidth),
            (GuidanceAction(.roll, .counterClockwise, amount: 110.4), "roll counter-clockwise 110°", .degrees),
            (GuidanceAction(.zoom, .in, amount: 2), "the old photo was taken with a longer lens: zoom in about 2x (stepping closer changes the perspective)", .factor),
            (GuidanceAction(.move, .forward, amount: 38), "move forward (view 38% too small)", .percentOfSize),
            (GuidanceAction(.zoomOrMove, .in, amount: 38), "zoom in or move forward (view 38% too small; the old photo's lens is not determined, so which one is not known)", .percentOfSize),
            (GuidanceAction(.orbit, .right, amount: 5), "move right around the subject", .keystonePercent),
            (GuidanceAction(.orbit, .up, amount: 5), "move up around the subject", .keystonePercent),
            (GuidanceAction(.step, .left, amount: 12), "step left (12% of the distance to the subject)", .percentOfDistance),
            (GuidanceAction(.raise, .down, amount: 3), "lower the camera (3% of the distance to the subject)", .percentOfDistance),
        ]
        for (action, text, unit) in cases {
            #expect(action.text == text)
            #expect(action.unit == unit, "\(action.kind)")
        }
        #expect(Set(cases.map(\.0.kind)).union([.findSubject]) == Set(GuidanceAction.Kind.allCases), "a kind without a case here")
    }

    /// docs/json-output.md names every kind, direction and unit (backticked), so the contract cannot fall behind the code.
    @Test func theJSONDocumentationNamesEveryKindDirectionAndUnit() throws {
        let doc = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent("docs/json-output.md"), encoding: .utf8)
        let names = GuidanceAction.Kind.allCases.map(\.rawValue) + GuidanceAction.Direction.allCases.map(\.rawValue)
            + GuidanceAction.Unit.allCases.map(\.rawValue)
        for name in names { #expect(doc.contains("`\(name)`"), "\(name) is not documented") }
        #expect(doc.contains("\"schemaVersion\": \(JSONOutput.schemaVersion)"))
    }
}
