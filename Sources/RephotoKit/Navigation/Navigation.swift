import Foundation

/// Where to move the camera so the current view matches the reference (Shi et al. 2018).
///
/// `target` is the centred rectangle of the current frame; `quadrilateral` is where the reference's own
/// centred rectangle lies in the current frame (mapped by H). The user moves until they coincide.
/// Signs (image axes: x right, y down):
/// - `offsetX` > 0: the reference view lies to the right: turn or move the camera right. `offsetY` > 0: down.
/// - `areaRatio` > 1: the reference view appears larger, the camera is too close: move back; < 1: move forward.
/// - `rollDegrees` > 0: the reference view appears rotated clockwise on screen: roll the camera clockwise.
/// - `keystoneHorizontalPercent` = (right edge − left edge) / mean edge × 100; with the centre aligned,
///   > 0 means the current viewpoint is to the right of the original: move left around the subject.
/// - `keystoneVerticalPercent` = (bottom edge − top edge) / mean edge × 100; with the centre aligned,
///   > 0 means the current viewpoint is below the original: move up.
public struct Navigation: Codable, Equatable, Sendable {
    public var target: Quadrilateral
    public var quadrilateral: Quadrilateral
    /// Centre offset of the quadrilateral from the target, pixels of the current frame.
    public var offsetX: Double
    public var offsetY: Double
    /// The same offsets as a percentage of the current frame's width (both axes, so they compare).
    public var offsetXPercent: Double
    public var offsetYPercent: Double
    public var areaRatio: Double
    public var rollDegrees: Double
    public var keystoneHorizontalPercent: Double
    public var keystoneVerticalPercent: Double
    /// Largest corner distance between quadrilateral and target, pixels.
    public var maxCornerErrorPixels: Double
    public var aligned: Bool
    /// What to do, most important first; empty when aligned. Setting it sets `hints`.
    public var actions: [GuidanceAction] { didSet { hints = actions.map(\.text) } }
    /// Short instructions for a person: `actions`' texts, in their order.
    public internal(set) var hints: [String] = []

    /// `lensZoom`: the zoom that gives the current camera the reference's field of view (an estimated reference
    /// camera); at the vantage point the reference's view appears that much smaller, which is no reason to move. Nil:
    /// an old photo whose lens is not determined, so a view too large or small may be either the lens or the distance.
    public static func compute(homography: Matrix3, referenceSize: ImageSize, currentSize: ImageSize,
                               config: NavigationConfig = NavigationConfig(), lensZoom: Double? = 1) -> Navigation {
        let target = Quadrilateral.centred(in: currentSize, fraction: config.targetFraction)
        let quad = Quadrilateral.centred(in: referenceSize, fraction: config.targetFraction).mapped(by: homography)
        let width = Double(currentSize.width)
        // The target is a centred rectangle: its centre is the corners' mean, exactly, however small it is.
        let tc = target.cornerMean
        let qc = quad.diagonalCentre ?? quad.cornerMean
        let dx = qc.x - tc.x, dy = qc.y - tc.y
        let c = quad.corners
        let top = c[0].distance(to: c[1]), right = c[1].distance(to: c[2])
        let bottom = c[2].distance(to: c[3]), left = c[3].distance(to: c[0])
        let roll = atan2(c[1].y - c[0].y, c[1].x - c[0].x) * 180 / .pi
        let keyH = (right - left) / max((right + left) / 2, 1e-9) * 100
        let keyV = (bottom - top) / max((bottom + top) / 2, 1e-9) * 100
        let maxCorner = quad.maxCornerDistance(to: target)
        let aligned = quad.isConvex && maxCorner <= config.alignedTolerancePercent / 100 * width
        var nav = Navigation(
            target: target, quadrilateral: quad, offsetX: dx, offsetY: dy,
            offsetXPercent: dx / width * 100, offsetYPercent: dy / width * 100,
            areaRatio: quad.area / target.area, rollDegrees: roll,
            keystoneHorizontalPercent: keyH, keystoneVerticalPercent: keyV,
            maxCornerErrorPixels: maxCorner, aligned: aligned, actions: [])
        if !aligned { nav.actions = nav.makeActions(tolerancePercent: config.alignedTolerancePercent, lensZoom: lensZoom) }
        return nav
    }

    /// The actions, largest first; without `moves`, only those that turn the camera (a `Step` says where to move).
    func makeActions(tolerancePercent tol: Double, moves: Bool = true, lensZoom: Double? = 1) -> [GuidanceAction] {
        guard quadrilateral.isConvex else { return [GuidanceAction(.findSubject)] }
        // (priority, action): the priority orders them, and is not always the amount (a lens first, keystone halved).
        var actions: [(Double, GuidanceAction)] = []
        if abs(offsetXPercent) > tol { actions.append((abs(offsetXPercent), GuidanceAction(.turn, offsetX > 0 ? .right : .left, amount: abs(offsetXPercent)))) }
        if abs(offsetYPercent) > tol { actions.append((abs(offsetYPercent), GuidanceAction(.tilt, offsetY > 0 ? .down : .up, amount: abs(offsetYPercent)))) }
        let scale = (areaRatio.squareRoot() * (lensZoom ?? 1) - 1) * 100
        // A lens unlike the reference's is said first: no step makes up for it.
        if let lensZoom, abs(lensZoom - 1) > 0.1 {
            actions.append((.infinity, GuidanceAction(.zoom, lensZoom > 1 ? .in : .out, amount: lensZoom)))
        }
        if moves, abs(scale) > tol {
            actions.append((abs(scale), lensZoom == nil
                ? GuidanceAction(.zoomOrMove, scale > 0 ? .out : .in, amount: abs(scale))
                : GuidanceAction(.move, scale > 0 ? .back : .forward, amount: abs(scale))))
        }
        if abs(rollDegrees) > 0.5 { actions.append((abs(rollDegrees), GuidanceAction(.roll, rollDegrees > 0 ? .clockwise : .counterClockwise, amount: abs(rollDegrees)))) }
        // Keystone is ambiguous while the view is off-centre (a turn also skews it): only once centred.
        let centred = moves && abs(offsetXPercent) <= 2 * tol && abs(offsetYPercent) <= 2 * tol
        if centred, abs(keystoneHorizontalPercent) > 2 * tol {
            actions.append((abs(keystoneHorizontalPercent) / 2,
                            GuidanceAction(.orbit, keystoneHorizontalPercent > 0 ? .left : .right, amount: abs(keystoneHorizontalPercent))))
        }
        if centred, abs(keystoneVerticalPercent) > 2 * tol {
            actions.append((abs(keystoneVerticalPercent) / 2,
                            GuidanceAction(.orbit, keystoneVerticalPercent > 0 ? .up : .down, amount: abs(keystoneVerticalPercent))))
        }
        return actions.sorted { $0.0 > $1.0 }.map(\.1)
    }
}
