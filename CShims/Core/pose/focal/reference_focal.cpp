// The focal length of a reference photo from an unknown camera, against a calibrated current camera
// (rephoto_shim.h): a search over one number, the focal length f. The cameras apart, each f on a grid gets a robust
// essential-matrix search (scan.cpp), or the six-point loop leaves f free (six_point_focal.cpp, free_focal.cpp); the
// cameras at one place, diag(1/s, 1/s, 1) H diag(f, f, 1) must be a multiple of a rotation (colocated.cpp); an answer
// is refined on its inliers' pixel residuals with the principal point (refinement.cpp). Each entry point checks its
// arguments, runs one stage and reports its evidence; which model holds and which answer is taken is decided in Swift
// (ReferenceFocalDecision.swift).
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
    if (!(params->span_inliers >= 0 && std::isfinite(params->span_inliers))) rp::fail(RP_ERR_INVALID_ARGUMENT, "span_inliers must be finite and >= 0");
    if (!(params->principal_point_sigma >= 0 && params->principal_point_sigma < 1)) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, "principal_point_sigma must be 0...1");
    }
    if (params->max_iterations < 1 || params->min_iterations < 0 || params->min_iterations > params->max_iterations) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("the scan's iterations must satisfy 0 <= min_iterations (%d) <= max_iterations (%d), 1 <= max_iterations",
                                                     params->min_iterations, params->max_iterations));
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

// A caller's inlier flags (NULL: every correspondence).
std::vector<uchar> flags(const uint8_t *inliers, int n) {
    if (inliers == nullptr) return std::vector<uchar>(size_t(n), 1);
    return std::vector<uchar>(inliers, inliers + n);
}

void copy_flags(const std::vector<uchar> &mask, uint8_t *out, int n) {
    if (out == nullptr) return;
    for (int i = 0; i < n; ++i) out[i] = size_t(i) < mask.size() && mask[size_t(i)] ? 1 : 0;
}

}  // namespace

extern "C" {

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
                  const rp_camera *current_camera, const rp_focal_params *params, rp_focal_scan_result *result,
                  uint8_t *inliers, size_t inliers_capacity, rp_status *status) {
    return rp::guarded(status, [&] {
        check(current_camera, params, result, reference_width, reference_height, n);
        rp::check_capacity(inliers, inliers_capacity, n, "inliers");
        const Pair pair(reference_xy, current_xy, n, reference_width, reference_height, *current_camera);
        const Scan found = scan(pair, scan_params(*params));
        *result = rp_focal_scan_result{found.best.focal, found.best.cost, found.best.inside, cv::countNonZero(found.mask),
                                       found.low, found.high, found.span_low, found.span_high, {}, {}};
        for (int e = 0; e < 9; ++e) result->R[e] = found.pose.R.val[e];
        for (int e = 0; e < 3; ++e) result->t[e] = found.pose.t[e];
        copy_flags(found.mask, inliers, n);
    });
}

int rp_focal_colocated(const double *reference_xy, const double *current_xy, int n, int reference_width, int reference_height,
                       const rp_camera *current_camera, const rp_focal_params *params, rp_focal_colocated_result *result,
                       uint8_t *inliers, size_t inliers_capacity, rp_status *status) {
    return rp::guarded(status, [&] {
        check(current_camera, params, result, reference_width, reference_height, n);
        rp::check_capacity(inliers, inliers_capacity, n, "inliers");
        const Pair pair(reference_xy, current_xy, n, reference_width, reference_height, *current_camera);
        const Colocated found = colocated(pair, params->threshold_pixels, params->min_focal, params->max_focal);
        *result = rp_focal_colocated_result{found.rotation.focal, found.rotation.cost, found.rotation.inside, found.inliers, found.fundamental_inliers};
        copy_flags(found.mask, inliers, n);
    });
}

int rp_focal_refine(const double *reference_xy, const double *current_xy, int n, int reference_width, int reference_height,
                    const rp_camera *current_camera, const rp_focal_params *params, const rp_focal_start *start,
                    const uint8_t *inliers, rp_focal *focal, rp_status *status) {
    return rp::guarded(status, [&] {
        check(current_camera, params, focal, reference_width, reference_height, n);
        if (start == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "start is NULL");
        if (start->model != 1 && start->model != 2) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("model must be 1 (relative pose) or 2 (rotation), not %d", start->model));
        if (!(start->focal > params->min_focal && start->focal < params->max_focal)) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("the start's focal length %g must lie inside min_focal...max_focal", start->focal));
        }
        const Pair pair(reference_xy, current_xy, n, reference_width, reference_height, *current_camera);
        rp::pose::Pose pose;
        if (start->model == 1 && start->has_pose) {
            for (int e = 0; e < 9; ++e) pose.R.val[e] = start->R[e];
            for (int e = 0; e < 3; ++e) pose.t[e] = start->t[e];
            for (double v : start->R) {
                if (!std::isfinite(v)) rp::fail(RP_ERR_INVALID_ARGUMENT, "the start's pose must be finite");
            }
            for (double v : start->t) {
                if (!std::isfinite(v)) rp::fail(RP_ERR_INVALID_ARGUMENT, "the start's pose must be finite");
            }
        } else if (start->model == 1 && !std::isfinite(scan_cost(pair, scan_params(*params), start->focal, pose))) {
            rp::fail(RP_ERR_ESTIMATION, "no relative pose at the start's focal length to refine from");
        }
        *focal = rp_focal{};
        Profile profile(pair, start->model == 2, flags(inliers, n), pose);
        refine(profile, pair, start->focal, refine_params(*params), *focal);
    });
}

int rp_focal_free(const double *reference_xy, const double *current_xy, int n, int reference_width, int reference_height,
                  const rp_camera *current_camera, const rp_focal_params *params, rp_focal_free_result *result, rp_status *status) {
    return rp::guarded(status, [&] {
        check(current_camera, params, result, reference_width, reference_height, n);
        if (params->six_point_iterations < 1 || params->six_point_iterations < params->min_iterations) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("six_point_iterations (%d) must be at least 1 and min_iterations (%d)", params->six_point_iterations,
                                                         params->min_iterations));
        }
        const Pair pair(reference_xy, current_xy, n, reference_width, reference_height, *current_camera);
        const Free found = free_focal(pair, free_params(*params));
        const Joint &j = found.joint;
        *result = rp_focal_free_result{};
        result->found = found.found;
        result->cost = found.cost;
        result->loop_inliers = found.inliers;
        result->refined = j.ok;
        if (!found.found) return;
        rp_focal &out = result->focal;
        out.focal = j.model.f;
        out.principal_point_x = j.principal.x;
        out.principal_point_y = j.principal.y;
        out.principal_point_estimated = 1;
        out.sigma_percent = 100 * std::sqrt(j.covariance(5, 5));
        out.noise_sigma_percent = 100 * std::sqrt(j.held_log_f_variance);
        out.principal_point_sigma_percent = std::sqrt(std::max(0.0, out.sigma_percent * out.sigma_percent - out.noise_sigma_percent * out.noise_sigma_percent));
        out.inliers = j.used;
    });
}

}  // extern "C"
