import Foundation

/// Every rule that takes, chooses or refuses the focal length of an old reference's camera, each stated once: whether
/// the cameras stand at one place, whether the six-point loop's answer is usable and taken over the scan's, how far the
/// scan's near-ties widen its sigma, and when no focal length is given. The shim's stages (`ReferenceFocalStages`,
/// CShims/Core/pose/focal/) search and report evidence; `ReferenceFocal.estimate` calls `decide`.
enum ReferenceFocalDecision {
    /// The answer decided, in the photo's pixels: the focal length, its 1 sigma (%, before `sigmaScale` and the floor),
    /// the principal point, the model it came from, the correspondences it rests on, and the scanned focal lengths
    /// within `spanInliers` of the best (the focal length found, from a rotation).
    struct Answer: Equatable {
        var focal: Double
        var sigmaPercent: Double
        var principalPoint: Point2
        var model: ReferenceFocal.Model
        var inliers: Int
        var span: ClosedRange<Double>
        /// The cameras-at-one-place stage's evidence, which `ReferenceCameraPolicy.plane` reads: its homography's
        /// inliers, the fundamental matrix's beside it, and the homography's distance from a rotation.
        var homographyInliers = 0
        var fundamentalInliers = 0
        var rotationGap = Double.infinity
    }

    /// The cameras stand at one place when a homography that is a rotation (its focal length inside the range, within
    /// `pose.referenceFocal.maxRotationGap` of one) holds `rotationShare` of a fundamental matrix's inliers: the centres
    /// then coincide and the fundamental matrix, and with it the scan, is not determined.
    static func camerasTogether(_ found: ReferenceFocalStages.Colocated, config: ReferenceFocalConfig) -> Bool {
        found.inside && found.gap < config.maxRotationGap && Double(found.inliers) >= config.rotationShare * Double(found.fundamentalInliers)
    }

    /// The six-point loop's answer is usable when its joint refinement ran with an invertible covariance, its focal
    /// length lies strictly inside the range searched and its principal point inside the photo (0...width - 1,
    /// 0...height - 1): a point off the photo is the prior let loose, not a camera.
    static func usable(_ free: ReferenceFocalStages.Free, bounds: (lower: Double, upper: Double), photo: (width: Int, height: Int)) -> Bool {
        let p = free.answer.principalPoint
        return free.found && free.refined && free.answer.focal > bounds.lower && free.answer.focal < bounds.upper && p.x >= 0 &&
            p.x <= Double(photo.width - 1) && p.y >= 0 && p.y <= Double(photo.height - 1)
    }

    /// The six-point loop's usable answer is taken where it is the solver asked for, or (`better`) where its model fits
    /// every correspondence no worse than the scan's (both costs the truncated squared pixel residuals at the centre;
    /// `scanCost` infinite where the scan found none).
    static func sixPointTaken(_ free: ReferenceFocalStages.Free, scanCost: Double, solver: ReferenceFocalSolver,
                              bounds: (lower: Double, upper: Double), photo: (width: Int, height: Int)) -> Bool {
        usable(free, bounds: bounds, photo: photo) && (solver == .sixPoint || free.cost <= scanCost)
    }

    /// The scan's answer's sigma (%) is at least half the span, in log, of the grid's focal lengths within one inlier's
    /// worth of its best (`close`): the correspondences cannot tell those apart, whatever the profile's curvature says.
    static func widened(_ sigmaPercent: Double, close: ClosedRange<Double>) -> Double {
        close.upperBound > close.lowerBound ? max(sigmaPercent, 100 * log(close.upperBound / close.lowerBound) / 2) : sigmaPercent
    }

    /// The span the six-point loop's answer reports: the scan's span widened to hold it (`better`), or the focal length
    /// alone where the scan did not run.
    static func sixPointSpan(_ focal: Double, scan: ReferenceFocalStages.Scan?) -> ClosedRange<Double> {
        guard let scan else { return focal...focal }
        return min(scan.span.lowerBound, focal)...max(scan.span.upperBound, focal)
    }

    /// The refusals: the six-point loop, asked for alone, gave no usable answer; the scan's best focal length lies at
    /// an end of its grid (the correspondences fit better beyond the range searched, or nowhere).
    static let sixPointFoundNone = "the six-point loop found no focal length of the reference between the bounds"
    static let noneInside = "no focal length of the reference between the bounds fits these correspondences"

    /// The stages as the rules ask for them: the cameras at one place (cheap) first; apart, the scan (`scan`,
    /// `better`) and the six-point loop (`sixPoint`, `better`), then the chosen answer's refinement on its own inliers.
    static func decide(_ stages: some ReferenceFocalSearch, config: ReferenceFocalConfig) throws -> Answer {
        let together = try stages.colocated()
        var answer = try decide(stages, together: together, config: config)
        (answer.homographyInliers, answer.fundamentalInliers, answer.rotationGap) = (together.inliers, together.fundamentalInliers, together.gap)
        return answer
    }

    private static func decide(_ stages: some ReferenceFocalSearch, together: ReferenceFocalStages.Colocated, config: ReferenceFocalConfig) throws -> Answer {
        if camerasTogether(together, config: config) {
            let refined = try stages.refine(from: together.focal, model: .rotation, scan: nil, mask: together.mask)
            return Answer(focal: refined.focal, sigmaPercent: refined.sigmaPercent, principalPoint: refined.principalPoint, model: .rotation,
                          inliers: refined.inliers, span: together.focal...together.focal)
        }
        let scan = config.solver == .sixPoint ? nil : try stages.scan()
        if config.solver != .scan {
            let free = try stages.free()
            if sixPointTaken(free, scanCost: scan?.cost ?? .infinity, solver: config.solver, bounds: stages.bounds, photo: stages.photo) {
                let answer = free.answer
                return Answer(focal: answer.focal, sigmaPercent: answer.sigmaPercent, principalPoint: answer.principalPoint, model: .fundamental,
                              inliers: answer.inliers, span: sixPointSpan(answer.focal, scan: scan))
            }
        }
        guard let scan else { throw RephotoError(.estimationFailed, sixPointFoundNone) }
        guard scan.inside else { throw RephotoError(.estimationFailed, noneInside) }
        let refined = try stages.refine(from: scan.focal, model: .fundamental, scan: scan, mask: scan.mask)
        return Answer(focal: refined.focal, sigmaPercent: widened(refined.sigmaPercent, close: scan.close), principalPoint: refined.principalPoint,
                      model: .fundamental, inliers: refined.inliers, span: scan.span)
    }
}

/// The stages `ReferenceFocalDecision.decide` runs (`ReferenceFocalStages`; tests give hand-built results): the range
/// searched and the photo's size, the cameras at one place, the scan, the six-point loop, and the refinement of a start
/// (a relative pose from `scan`'s pose when given) on the correspondences `mask` flags (nil: every one).
protocol ReferenceFocalSearch {
    var bounds: (lower: Double, upper: Double) { get }
    var photo: (width: Int, height: Int) { get }
    func colocated() throws -> ReferenceFocalStages.Colocated
    func scan() throws -> ReferenceFocalStages.Scan
    func free() throws -> ReferenceFocalStages.Free
    func refine(from focal: Double, model: ReferenceFocal.Model, scan: ReferenceFocalStages.Scan?, mask: [UInt8]?) throws -> ReferenceFocalStages.Refined
}

extension ReferenceFocalStages: ReferenceFocalSearch {}
