// The focal length of a reference photo from an unknown camera, against a calibrated current camera
// (rephoto_shim.h, rp_estimate_reference_focal): a search over one number, the focal length f. The cameras apart,
// each f on a grid gets a robust essential-matrix search (scan.cpp); the cameras at one place,
// diag(1/s, 1/s, 1) H diag(f, f, 1) must be a multiple of a rotation (colocated.cpp); either answer is refined on its
// inliers' pixel residuals with the principal point (refinement.cpp). The entry points check their arguments and call
// those stages in order; rp_focal_scan, rp_focal_colocated and rp_focal_refine run one each.
#include "focal.hpp"

namespace {

using namespace rp::focal;

void check(const rp_camera *current_camera, const rp_focal_params *params, const void *out, int width, int height, int n) {
    if (current_camera == nullptr || params == nullptr || out == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "camera, params or output is NULL");
    rp::check_focal_lengths(*current_camera, "the current camera");
    if (width <= 0 || height <= 0) rp::fail(RP_ERR_INVALID_ARGUMENT, "the reference's size must be positive");
    if (!(params->threshold_pixels > 0 && std::isfinite(params->threshold_pixels))) rp::fail(RP_ERR_INVALID_ARGUMENT, "threshold_pixels must be positive");
    if (!(params->min_focal > 0 && params->max_focal > params->min_focal && std::isfinite(params->max_focal))) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, "the focal range must satisfy 0 < min_focal < max_focal");
    }
    if (!(params->rotation_share >= 0 && params->rotation_share <= 1)) rp::fail(RP_ERR_INVALID_ARGUMENT, "rotation_share must be 0...1");
    if (!(params->max_rotation_gap >= 0)) rp::fail(RP_ERR_INVALID_ARGUMENT, "max_rotation_gap must be >= 0");
    if (!(params->span_inliers >= 0 && std::isfinite(params->span_inliers))) rp::fail(RP_ERR_INVALID_ARGUMENT, "span_inliers must be finite and >= 0");
    if (!(params->principal_point_sigma >= 0 && params->principal_point_sigma < 1)) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, "principal_point_sigma must be 0...1");
    }
    if (params->max_iterations < 1 || params->min_iterations < 0 || params->min_iterations > params->max_iterations) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("the scan's iterations must satisfy 0 <= min_iterations (%d) <= max_iterations (%d), 1 <= max_iterations",
                                                     params->min_iterations, params->max_iterations));
    }
    if (params->solver < 0 || params->solver > 2) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("solver must be 0, 1 or 2, not %d", params->solver));
    if (params->solver != 0 && (params->six_point_iterations < 1 || params->six_point_iterations < params->min_iterations)) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("six_point_iterations (%d) must be at least 1 and min_iterations (%d)", params->six_point_iterations,
                                                     params->min_iterations));
    }
    if (n < 8) rp::fail(RP_ERR_ESTIMATION, cv::format("%d correspondences: the focal length needs at least 8", n));
}

ScanParams scan_params(const rp_focal_params &p) {
    return {p.threshold_pixels, p.min_focal, p.max_focal, p.span_inliers, p.max_iterations, p.min_iterations, p.seed};
}

RefineParams refine_params(const rp_focal_params &p) { return {p.min_focal, p.max_focal, p.principal_point_sigma}; }

FreeParams free_params(const rp_focal_params &p) {
    return {p.threshold_pixels, p.min_focal, p.max_focal, p.principal_point_sigma, p.six_point_iterations, p.min_iterations, p.seed};
}

// The six-point loop's answer usable: a refined model with a covariance, its focal length in range, its principal
// point inside the photo.
bool usable(const Free &found, const Pair &pair, const rp_focal_params &params) {
    const Joint &j = found.joint;
    return found.found && j.ok && j.model.f > params.min_focal && j.model.f < params.max_focal && j.principal.x >= 0 &&
           j.principal.x <= pair.width - 1 && j.principal.y >= 0 && j.principal.y <= pair.height - 1;
}

// The six-point loop's answer into `out`: the focal length's sigma its marginal from the joint covariance (log f), the
// noise's part with the principal point held.
void fill(const Free &found, rp_focal &out) {
    const Joint &j = found.joint;
    out.focal = j.model.f;
    out.principal_point_x = j.principal.x;
    out.principal_point_y = j.principal.y;
    out.principal_point_estimated = 1;
    out.sigma_percent = 100 * std::sqrt(j.covariance(5, 5));
    out.noise_sigma_percent = 100 * std::sqrt(j.held_log_f_variance);
    out.principal_point_sigma_percent = std::sqrt(std::max(0.0, out.sigma_percent * out.sigma_percent - out.noise_sigma_percent * out.noise_sigma_percent));
    out.inliers = j.used;
    out.solver = 1;
}

}  // namespace

extern "C" {

int rp_estimate_reference_focal(const double *reference_xy, const double *current_xy, int n, int reference_width,
                                int reference_height, const rp_camera *current_camera, const rp_focal_params *params,
                                rp_focal *focal, rp_status *status) {
    return rp::guarded(status, [&] {
        check(current_camera, params, focal, reference_width, reference_height, n);
        const Pair pair(reference_xy, current_xy, n, reference_width, reference_height, *current_camera);
        const Colocated together = colocated(pair, params->threshold_pixels, params->min_focal, params->max_focal);
        // A homography that is a rotation, holding (nearly) every correspondence the fundamental matrix does: the
        // centres coincide and the fundamental matrix is not determined.
        const bool rotation = together.rotation.inside && together.rotation.cost < params->max_rotation_gap &&
                              together.inliers >= params->rotation_share * together.fundamental_inliers;
        const Scan apart = rotation || params->solver == 1 ? Scan{} : scan(pair, scan_params(*params));
        const Free free = rotation || params->solver == 0 ? Free{} : free_focal(pair, free_params(*params));
        // The six-point loop's answer where it is the one asked for, or fits every correspondence better than the scan's.
        const bool six = usable(free, pair, *params) && (params->solver == 1 || free.cost <= apart.best.cost);
        const Minimum &chosen = rotation ? together.rotation : apart.best;
        *focal = rp_focal{};
        focal->scan_cost = apart.best.cost;
        focal->six_point_cost = free.cost;
        focal->fundamental_inliers = together.fundamental_inliers;
        focal->rotation_inliers = together.inliers;
        focal->rotation_residual = together.rotation.cost;
        focal->model = rotation ? 2 : 1;
        focal->inliers = rotation ? together.inliers : cv::countNonZero(apart.mask);
        if (six) {
            fill(free, *focal);
            focal->span_low = params->solver == 1 ? focal->focal : std::min(apart.span_low, focal->focal);
            focal->span_high = params->solver == 1 ? focal->focal : std::max(apart.span_high, focal->focal);
            return;
        }
        if (params->solver == 1 && !rotation) rp::fail(RP_ERR_ESTIMATION, "the six-point loop found no focal length of the reference between the bounds");
        if (!chosen.inside) rp::fail(RP_ERR_ESTIMATION, "no focal length of the reference between the bounds fits these correspondences");
        focal->focal = chosen.focal;
        focal->span_low = rotation ? chosen.focal : apart.span_low;
        focal->span_high = rotation ? chosen.focal : apart.span_high;
        Profile profile(pair, rotation, rotation ? together.mask : apart.mask, apart.pose);
        refine(profile, pair, chosen.focal, refine_params(*params), *focal);
        // Focal lengths the scan could not tell from the best widen its answer's to half their span.
        if (!rotation && apart.high > apart.low) focal->sigma_percent = std::max(focal->sigma_percent, 100 * std::log(apart.high / apart.low) / 2);
    });
}

int rp_focal_six_point(const double *reference_xy, const double *current_xy, double principal_x, double principal_y,
                       const rp_camera *current_camera, double min_focal, double max_focal, rp_focal_pose *poses, int capacity,
                       int *count, rp_status *status) {
    return rp::guarded(status, [&] {
        if (reference_xy == nullptr || current_xy == nullptr || current_camera == nullptr || poses == nullptr || count == nullptr) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, "points, camera or output is NULL");
        }
        rp::check_focal_lengths(*current_camera, "the current camera");
        if (!(min_focal > 0 && max_focal > min_focal && std::isfinite(max_focal))) rp::fail(RP_ERR_INVALID_ARGUMENT, "the focal range must satisfy 0 < min_focal < max_focal");
        if (capacity < kMaxSixPointModels) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("capacity must be at least %d", kMaxSixPointModels));
        const auto reference = rp::to_points(reference_xy, 6), current = rp::normalised(rp::to_points(current_xy, 6), *current_camera);
        rp::check_finite(reference, "reference");
        cv::Vec3d a[6], b[6];
        for (int i = 0; i < 6; ++i) a[i] = cv::Vec3d(reference[i].x - principal_x, reference[i].y - principal_y, 1), b[i] = cv::Vec3d(current[i].x, current[i].y, 1);
        FocalPose found[kMaxSixPointModels];
        *count = six_point_focal(a, b, std::sqrt(min_focal * max_focal), min_focal, max_focal, found);
        for (int k = 0; k < *count; ++k) {
            for (int e = 0; e < 9; ++e) poses[k].R[e] = found[k].pose.R.val[e];
            for (int e = 0; e < 3; ++e) poses[k].t[e] = found[k].pose.t[e];
            poses[k].focal = found[k].f;
        }
    });
}

int rp_focal_scan(const double *reference_xy, const double *current_xy, int n, int reference_width, int reference_height,
                  const rp_camera *current_camera, const rp_focal_params *params, rp_focal_scan_result *result, rp_status *status) {
    return rp::guarded(status, [&] {
        check(current_camera, params, result, reference_width, reference_height, n);
        const Pair pair(reference_xy, current_xy, n, reference_width, reference_height, *current_camera);
        const Scan found = scan(pair, scan_params(*params));
        *result = rp_focal_scan_result{found.best.focal, found.best.cost, found.best.inside, cv::countNonZero(found.mask),
                                       found.low, found.high, found.span_low, found.span_high};
    });
}

int rp_focal_colocated(const double *reference_xy, const double *current_xy, int n, int reference_width, int reference_height,
                       const rp_camera *current_camera, const rp_focal_params *params, rp_focal_colocated_result *result, rp_status *status) {
    return rp::guarded(status, [&] {
        check(current_camera, params, result, reference_width, reference_height, n);
        const Pair pair(reference_xy, current_xy, n, reference_width, reference_height, *current_camera);
        const Colocated found = colocated(pair, params->threshold_pixels, params->min_focal, params->max_focal);
        *result = rp_focal_colocated_result{found.rotation.focal, found.rotation.cost, found.rotation.inside, found.inliers, found.fundamental_inliers};
    });
}

int rp_focal_refine(const double *reference_xy, const double *current_xy, int n, int reference_width, int reference_height,
                    const rp_camera *current_camera, const rp_focal_params *params, double start_focal, int model, rp_focal *focal,
                    rp_status *status) {
    return rp::guarded(status, [&] {
        check(current_camera, params, focal, reference_width, reference_height, n);
        if (model != 1 && model != 2) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("model must be 1 (relative pose) or 2 (rotation), not %d", model));
        if (!(start_focal > params->min_focal && start_focal < params->max_focal)) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("start_focal %g must lie inside min_focal...max_focal", start_focal));
        }
        const Pair pair(reference_xy, current_xy, n, reference_width, reference_height, *current_camera);
        rp::pose::Pose start;
        if (model == 1 && !std::isfinite(scan_cost(pair, scan_params(*params), start_focal, start))) {
            rp::fail(RP_ERR_ESTIMATION, "no relative pose at start_focal to refine from");
        }
        *focal = rp_focal{};
        focal->model = model;
        Profile profile(pair, model == 2, std::vector<uchar>(pair.size(), 1), start);
        refine(profile, pair, start_focal, refine_params(*params), *focal);
    });
}

}  // extern "C"
