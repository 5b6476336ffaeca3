// The cameras apart: each focal length on a log grid gets its own robust essential-matrix search, scored by the
// truncated pixel residuals of every correspondence; the best one's inliers and pose start the refinement. (A
// fundamental matrix's seven degrees of freedom take in wrong matches that a pose at a known focal length does not:
// its focal lengths were 10-30 % off where this scan's were within 3 %.) focal.hpp.
#include "focal.hpp"

namespace rp::focal {

namespace {

// The grid: 10 % apart over the whole range from 1.05 times its lower end, then 2.5 % apart within 10 % of the best.
constexpr double kCoarseStep = 1.1, kFineStep = 1.025;
constexpr int kFineSteps = 3;

// The scanned focal lengths whose best pose fits within one inlier's worth of the best (where the correspondences
// cannot tell them apart) and within span_inliers' worth (a second minimum nearly as good, a focal length twice the
// truth on pairs far apart, is no answer).
void spans(const std::vector<std::pair<double, double>> &scanned, const ScanParams &params, Scan &out) {
    const double tau2 = params.threshold_pixels * params.threshold_pixels, best = out.best.cost;
    out.low = out.high = out.span_low = out.span_high = out.best.focal;
    for (const auto &[f, cost] : scanned) {
        if (cost <= best + tau2) out.low = std::min(out.low, f), out.high = std::max(out.high, f);
        if (cost <= best + params.span_inliers * tau2) out.span_low = std::min(out.span_low, f), out.span_high = std::max(out.span_high, f);
    }
}

// The best pose's inliers: within the threshold in pixels and in front of both cameras.
std::vector<uchar> inliers(const Pair &pair, const ScanParams &params, const Scan &scan) {
    const double tau2 = params.threshold_pixels * params.threshold_pixels;
    const pose::Bearings x = pose::undistorted(pair.reference, pair.current, pair.reference_camera(scan.best.focal, pair.centre), pair.camera);
    std::vector<double> r2;
    pixel_residuals2(scan.pose.essential(), x, scan.best.focal, pair.camera.K[0], pair.camera.K[4], r2);
    std::vector<uchar> mask(pair.size(), 0);
    for (size_t i = 0; i < pair.size(); ++i) mask[i] = r2[i] < tau2 && pose::in_front(scan.pose, x.a[i], x.b[i]);
    return mask;
}

}  // namespace

double scan_cost(const Pair &pair, const ScanParams &params, double f, pose::Pose &found) {
    pose::SearchParams search;
    search.loop.confidence = 0.999;
    search.loop.max_iterations = params.max_iterations;
    search.loop.min_iterations = params.min_iterations;
    search.loop.seed = params.seed;
    const pose::Bearings x = pose::undistorted(pair.reference, pair.current, pair.reference_camera(f, pair.centre), pair.camera);
    const double tau = params.threshold_pixels / (0.5 * (f + pair.s)), tau2 = params.threshold_pixels * params.threshold_pixels;
    const auto result = pose::essential_loop(x, search, tau, search.loop.seed, search.loop.max_iterations);
    if (!std::isfinite(result.cost)) return HUGE_VAL;
    found = result.model;
    // Polished on its inliers, so neighbouring focal lengths differ by their fit, not by the loop's luck.
    pose::refine(x, tau * tau, found, 10);
    std::vector<double> r2;
    pixel_residuals2(found.essential(), x, f, pair.camera.K[0], pair.camera.K[4], r2);
    double cost = 0;
    for (double v : r2) cost += std::min(v, tau2);
    return cost;
}

Scan scan(const Pair &pair, const ScanParams &params) {
    Scan out;
    std::vector<std::pair<double, double>> scanned;  // focal, cost
    double best = HUGE_VAL, bestFocal = 0;
    auto visit = [&](double f) {
        pose::Pose found;
        const double cost = scan_cost(pair, params, f, found);
        scanned.emplace_back(f, cost);
        if (cost < best) best = cost, bestFocal = f, out.pose = found;
    };
    for (double f = params.lo * 1.05; f < params.hi; f *= kCoarseStep) visit(f);
    if (bestFocal > 0) {
        const double centre = bestFocal;
        for (int k = -kFineSteps; k <= kFineSteps; ++k) {
            if (k != 0) visit(centre * std::pow(kFineStep, k));
        }
    }
    if (bestFocal == 0) return out;
    // Inside: neither the grid's first focal length nor its last.
    out.best = {bestFocal, best, bestFocal > params.lo * 1.06 && bestFocal < params.hi / kCoarseStep};
    spans(scanned, params, out);
    out.mask = inliers(pair, params, out);
    return out;
}

}  // namespace rp::focal
