#include "../shim_internal.hpp"

#include <opencv2/calib3d.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace rp {

void check_finite(const std::vector<cv::Point2d> &points, const char *which) {
    for (size_t i = 0; i < points.size(); ++i) {
        if (!std::isfinite(points[i].x) || !std::isfinite(points[i].y)) {
            fail(RP_ERR_INVALID_ARGUMENT, cv::format("%s point %zu is not finite", which, i));
        }
    }
}

cv::Matx33d robust_fundamental(const std::vector<cv::Point2d> &a, const std::vector<cv::Point2d> &b, double threshold,
                               std::vector<uchar> &mask) {
    cv::Mat F;
    try {
        F = cv::findFundamentalMat(a, b, cv::USAC_MAGSAC, threshold, 0.999, 10000, mask);
    } catch (const cv::Exception &) {
        F = cv::Mat();  // degenerate correspondences (all on a line, repeated)
    }
    if (F.rows != 3 || F.cols != 3) fail(RP_ERR_ESTIMATION, "no fundamental matrix fits these correspondences");
    return cv::Matx33d(F.ptr<double>());
}

std::vector<cv::Point2d> normalised(const std::vector<cv::Point2d> &pixels, const rp_camera &camera) {
    std::vector<cv::Point2d> out;
    if (pixels.empty()) return out;
    cv::undistortPoints(pixels, out, camera_matrix(camera), distortion_vector(camera));
    return out;
}

std::vector<cv::Point2d> to_points(const double *xy, int n) {
    if (n < 0) fail(RP_ERR_INVALID_ARGUMENT, cv::format("negative point count %d", n));
    if (n > 0 && xy == nullptr) fail(RP_ERR_INVALID_ARGUMENT, "point array is NULL");
    std::vector<cv::Point2d> points(size_t(std::max(n, 0)));
    for (int i = 0; i < n; ++i) points[size_t(i)] = cv::Point2d(xy[2 * i], xy[2 * i + 1]);
    return points;
}

void check_focal_lengths(const rp_camera &camera, const char *which) {
    if (!(camera.K[0] > 0 && camera.K[4] > 0 && std::isfinite(camera.K[0]) && std::isfinite(camera.K[4]))) {
        fail(RP_ERR_INVALID_ARGUMENT, std::string(which) + "'s focal lengths must be positive and finite");
    }
}

cv::Mat camera_matrix(const rp_camera &camera) { return cv::Mat(3, 3, CV_64F, const_cast<double *>(camera.K)).clone(); }

cv::Mat distortion_vector(const rp_camera &camera) {
    int n = camera.distortion_count;
    if (n == 0) return cv::Mat();
    if (n != 4 && n != 5 && n != 8 && n != 12 && n != 14) {
        fail(RP_ERR_INVALID_ARGUMENT, cv::format("distortion must have 4, 5, 8, 12 or 14 coefficients, got %d", n));
    }
    return cv::Mat(1, n, CV_64F, const_cast<double *>(camera.distortion)).clone();
}

cv::Mat find_homography(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current,
                        const rp_homography_params &params, cv::Mat &mask) {
    if (reference.size() < 4) {
        fail(RP_ERR_ESTIMATION, cv::format("homography needs at least 4 matches, got %zu", reference.size()));
    }
    check_finite(reference, "reference");
    check_finite(current, "current");
    cv::Mat H = cv::findHomography(reference, current, params.method, params.threshold, mask, params.max_iterations,
                                   params.confidence);
    if (H.empty()) fail(RP_ERR_ESTIMATION, cv::format("no homography found from %zu matches", reference.size()));
    return H;
}

}  // namespace rp

extern "C" {

int rp_find_homography(const double *reference_xy, const double *current_xy, int n, const rp_homography_params *params,
                       double homography[9], uint8_t *inliers, size_t inliers_capacity, int *inlier_count,
                       rp_status *status) {
    return rp::guarded(status, [&] {
        rp::check_capacity(inliers, inliers_capacity, n, "inliers");
        cv::Mat mask;
        cv::Mat H = rp::find_homography(rp::to_points(reference_xy, n), rp::to_points(current_xy, n), *params, mask);
        cv::Mat H64;
        H.convertTo(H64, CV_64F);
        std::memcpy(homography, H64.ptr<double>(), 9 * sizeof(double));
        int count = 0;
        for (int i = 0; i < n; ++i) {
            uint8_t in = mask.empty() ? 1 : (mask.at<uint8_t>(i) ? 1 : 0);
            if (inliers) inliers[i] = in;
            count += in;
        }
        if (inlier_count) *inlier_count = count;
    });
}

}  // extern "C"
