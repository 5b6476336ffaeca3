// The cameras at one place: diag(1/s, 1/s, 1) H diag(f, f, 1) must then be a multiple of a rotation, which fixes the
// reference's focal length f; the fundamental matrix fitted beside it is what the homography's inliers are weighed
// against (focal.hpp).
#include "focal.hpp"

#include <opencv2/calib3d.hpp>

namespace rp::focal {

namespace {

// How far M(f) is from a multiple of a rotation: |M^T M / (trace / 3) - I|.
double rotation_gap(const cv::Matx33d &G, double f) {
    const cv::Matx33d M = G * cv::Matx33d(f, 0, 0, 0, f, 0, 0, 0, 1);
    const cv::Matx33d A = M.t() * M;
    const double scale = (A(0, 0) + A(1, 1) + A(2, 2)) / 3;
    if (!(scale > 0)) return HUGE_VAL;
    return cv::norm(A * (1 / scale) - cv::Matx33d::eye());
}

// The focal length in [lo, hi] minimising `gap`: a log-spaced scan, then golden-section search in the best cell.
Minimum minimise(const std::function<double(double)> &gap, double lo, double hi) {
    constexpr int steps = 240;
    const double ratio = std::pow(hi / lo, 1.0 / steps);
    int best = 0;
    double bestGap = HUGE_VAL;
    for (int i = 0; i <= steps; ++i) {
        const double g = gap(lo * std::pow(ratio, i));
        if (g < bestGap) {
            bestGap = g;
            best = i;
        }
    }
    if (!std::isfinite(bestGap)) return {0, HUGE_VAL, false};
    const double f = golden(gap, lo * std::pow(ratio, std::max(0, best - 1)), lo * std::pow(ratio, std::min(steps, best + 1)), 60);
    return {f, gap(f), best > 0 && best < steps};
}

// Degenerate correspondences (all on a line, repeated points) make OpenCV's estimators throw: no model, not an
// internal error.
template <typename Fit>
cv::Mat fitted(Fit &&fit) {
    try {
        return fit();
    } catch (const cv::Exception &) {
        return cv::Mat();
    }
}

}  // namespace

Colocated colocated(const Pair &pair, double threshold_pixels, double lo, double hi) {
    const std::vector<cv::Point2d> a = pair.about(pair.centre), &b = pair.ideal;
    Colocated out;
    std::vector<uchar> fundamentalMask;
    const cv::Mat F = fitted([&] { return cv::findFundamentalMat(a, b, cv::FM_RANSAC, threshold_pixels, 0.999, fundamentalMask); });
    const cv::Mat H = fitted([&] { return cv::findHomography(a, b, cv::RANSAC, threshold_pixels, out.mask, 5000, 0.999); });
    out.fundamental_inliers = F.rows == 3 ? cv::countNonZero(fundamentalMask) : 0;
    out.inliers = H.rows == 3 ? cv::countNonZero(out.mask) : 0;
    if (out.inliers >= 8) {
        cv::Matx33d G;
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) G(r, c) = H.at<double>(r, c);
        G = cv::Matx33d(1 / pair.s, 0, 0, 0, 1 / pair.s, 0, 0, 0, 1) * G;
        out.rotation = minimise([&](double f) { return rotation_gap(G, f); }, lo, hi);
    }
    return out;
}

}  // namespace rp::focal
