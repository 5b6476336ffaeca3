// The translation's direction from the current image's epipole (rp_translation_from_epipole): a fundamental matrix
// needs no camera for the reference, and the current camera alone turns its epipole into the direction.
#include "../shim_internal.hpp"

#include <cmath>

extern "C" {

int rp_translation_from_epipole(const double *reference_xy, const double *current_xy, int n, const rp_camera *current_camera,
                                double threshold_pixels, rp_epipole_translation *out, rp_status *status) {
    return rp::guarded(status, [&] {
        if (current_camera == nullptr || out == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "camera or output is NULL");
        rp::check_focal_lengths(*current_camera, "the current camera");
        if (!(threshold_pixels > 0 && std::isfinite(threshold_pixels))) rp::fail(RP_ERR_INVALID_ARGUMENT, "threshold_pixels must be positive");
        if (n < 8) rp::fail(RP_ERR_ESTIMATION, cv::format("%d correspondences: a fundamental matrix needs at least 8", n));
        const auto reference = rp::to_points(reference_xy, n), current = rp::to_points(current_xy, n);
        rp::check_finite(reference, "reference");
        rp::check_finite(current, "current");
        // The current points undistorted, as an ideal camera of focal length s centred at the origin: its epipole
        // (ex, ey, ez) is then the direction (ex / s, ey / s, ez).
        const double s = (current_camera->K[0] + current_camera->K[4]) / 2;
        std::vector<cv::Point2d> b = rp::normalised(current, *current_camera);
        for (auto &p : b) p *= s;
        std::vector<uchar> mask;
        const cv::Mat F(rp::robust_fundamental(reference, b, threshold_pixels, mask));
        cv::Mat w, u, vt;
        cv::SVD::compute(F.t(), w, u, vt, cv::SVD::FULL_UV);
        const cv::Vec3d e(vt.at<double>(2, 0), vt.at<double>(2, 1), vt.at<double>(2, 2));
        const cv::Vec3d t = cv::normalize(cv::Vec3d(e[0] / s, e[1] / s, e[2]));
        if (!(std::isfinite(t[0]) && std::isfinite(t[1]) && std::isfinite(t[2]))) rp::fail(RP_ERR_ESTIMATION, "the fundamental matrix has no epipole");
        for (int i = 0; i < 3; ++i) out->t[i] = t[i];
        out->inliers = cv::countNonZero(mask);
    });
}

}  // extern "C"
