// A second matching pass along epipolar lines (rp_epipolar_consistent): a fundamental matrix needs no camera, so it
// guides an old photo's matching before its focal length is known.
#include "../shim_internal.hpp"

#include <cmath>

extern "C" {

int rp_epipolar_consistent(const double *reference_xy, const double *current_xy, int n, const double *candidate_reference_xy,
                           const double *candidate_current_xy, int m, const rp_epipolar_params *params, unsigned char *keep,
                           int *inliers, rp_status *status) {
    return rp::guarded(status, [&] {
        if (params == nullptr || inliers == nullptr || (m > 0 && keep == nullptr)) rp::fail(RP_ERR_INVALID_ARGUMENT, "params, keep or inliers is NULL");
        if (!(params->threshold_pixels > 0 && std::isfinite(params->threshold_pixels))) rp::fail(RP_ERR_INVALID_ARGUMENT, "threshold_pixels must be positive");
        if (!(params->reference_scale > 0 && std::isfinite(params->reference_scale) && params->current_scale > 0 && std::isfinite(params->current_scale))) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, "the scales must be positive");
        }
        if (m < 0) rp::fail(RP_ERR_INVALID_ARGUMENT, "the candidate count must not be negative");
        if (n < 8) rp::fail(RP_ERR_ESTIMATION, cv::format("%d correspondences: a fundamental matrix needs at least 8", n));
        auto scaled = [](const double *xy, int count, double scale, const char *which) {
            auto points = rp::to_points(xy, count);
            rp::check_finite(points, which);
            for (auto &p : points) p *= scale;
            return points;
        };
        const auto a = scaled(reference_xy, n, params->reference_scale, "reference");
        const auto b = scaled(current_xy, n, params->current_scale, "current");
        const auto ca = scaled(candidate_reference_xy, m, params->reference_scale, "candidate reference");
        const auto cb = scaled(candidate_current_xy, m, params->current_scale, "candidate current");
        std::vector<uchar> mask;
        const cv::Matx33d f = rp::robust_fundamental(a, b, params->threshold_pixels, mask);
        const double tau2 = params->threshold_pixels * params->threshold_pixels;
        for (int i = 0; i < m; ++i) {
            const cv::Vec3d x(ca[size_t(i)].x, ca[size_t(i)].y, 1), y(cb[size_t(i)].x, cb[size_t(i)].y, 1);
            const cv::Vec3d fx = f * x, fty = f.t() * y;
            const double num = y.dot(fx), den = fx[0] * fx[0] + fx[1] * fx[1] + fty[0] * fty[0] + fty[1] * fty[1];
            keep[i] = den > 0 && num * num / den < tau2 ? 1 : 0;
        }
        *inliers = cv::countNonZero(mask);
    });
}

}  // extern "C"
