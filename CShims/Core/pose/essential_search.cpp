// The essential-matrix search: the estimator's minimal models, the robust loop run on them (once, or twice when
// the first ends uncertified), and OpenCV's estimators for comparison.
#include "essential_estimator.hpp"

#include <opencv2/calib3d.hpp>

namespace rp::pose {

namespace {

// Parallax (the angle between the rotated reference ray and the current ray) of every sample point at most
// `limit` degrees (0: no limit): wrong solutions of wide pairs put their points where rays meet head-on.
bool plausible(const Pose &pose, const cv::Vec3d *a, const cv::Vec3d *b, double limit) {
    if (!(limit > 0)) return true;
    double c = std::cos(limit / kDegrees);
    for (int i = 0; i < 5; ++i) {
        cv::Vec3d u = pose.R * a[i];
        if (u.dot(b[i]) < c * cv::norm(u) * cv::norm(b[i])) return false;
    }
    return true;
}

}  // namespace

int EssentialEstimator::generate(const size_t *sample, Pose *models) const {
    cv::Vec3d sa[kSampleSize], sb[kSampleSize];
    for (int i = 0; i < kSampleSize; ++i) {
        sa[i] = x_.a[sample[i]];
        sb[i] = x_.b[sample[i]];
    }
    cv::Matx33d solutions[10];
    const int count = rp::five_point(sa, sb, solutions);
    int found = 0;
    for (int s = 0; s < count; ++s) {
        Pose poses[4];
        const int consistent = poses_from_essential(solutions[s], sa, sb, kSampleSize, poses);
        for (int p = 0; p < consistent; ++p)
            if (plausible(poses[p], sa, sb, max_parallax_degrees_)) models[found++] = poses[p];
    }
    return found;
}

LoopResult<Pose> essential_loop(const Bearings &x, const SearchParams &params, double tau, uint64_t seed, long cap, const Pose *target,
                                double target_degrees) {
    const EssentialEstimator estimator(x, tau * tau, params.essential);
    return robust_loop(estimator, params.loop, seed, cap, target, target_degrees);
}

// A second, shorter loop (another seed) when the first spent its budget without certifying its answer: if it
// finds a different pose with a lower cost, the first had not converged and neither answer can be trusted. A
// second loop that lands in a worse basin says nothing: it is weaker by design.
Pose search_essential(const Bearings &x, const SearchParams &params, double tau, int &iterations, std::vector<Pose> &runners_up) {
    const long budget = std::max(1, params.loop.max_iterations);
    const LoopResult<Pose> first = essential_loop(x, params, tau, params.loop.seed, budget);
    iterations = int(first.samples);
    if (!std::isfinite(first.cost)) {
        // A screen that turned every draw away is named: its bounds, not the matches, may be what failed.
        const std::string screened = first.screened
            ? cv::format(" (the sample screen passed %ld of %ld draws: pose.screenDegrees %g, pose.screenOctaves %g)", first.samples,
                         first.drawn, params.essential.screen.degrees, params.essential.screen.octaves)
            : std::string();
        rp::fail(RP_ERR_ESTIMATION, cv::format("no essential matrix found from %zu matches in %ld samples%s", x.size(), first.samples, screened.c_str()));
    }
    runners_up = first.runners_up;
    if (!(params.max_disagreement_degrees > 0) || first.certified) return first.model;
    const LoopResult<Pose> second = essential_loop(x, params, tau, params.loop.seed ^ 0x9E3779B97F4A7C15ULL, std::max(1L, budget / 2));
    iterations += int(second.samples);
    if (!(second.cost < first.cost)) return first.model;
    double c = (cv::trace(first.model.R.t() * second.model.R) - 1) / 2;
    double angle = std::acos(std::max(-1.0, std::min(1.0, c))) * kDegrees;
    double t_angle = std::acos(std::max(-1.0, std::min(1.0, first.model.t.dot(second.model.t)))) * kDegrees;
    if (angle > params.max_disagreement_degrees || t_angle > 5 * params.max_disagreement_degrees) {
        rp::fail(RP_ERR_ESTIMATION,
                 cv::format("unstable: a second search found a better pose %.1f° away in rotation and %.1f° in translation "
                            "(%ld + %ld samples, too few inliers to certify either; pose.maxDisagreement %g°)",
                            angle, t_angle, first.samples, second.samples, params.max_disagreement_degrees));
    }
    runners_up.push_back(first.model);
    return second.model;
}

Pose opencv_pose(const Bearings &x, int method, const LoopParams &params, double tau) {
    std::vector<cv::Point2d> a, b;
    for (size_t i = 0; i < x.size(); ++i) {
        a.emplace_back(x.a[i][0], x.a[i][1]);
        b.emplace_back(x.b[i][0], x.b[i][1]);
    }
    cv::Mat I = cv::Mat::eye(3, 3, CV_64F), mask;
    cv::Mat E_all = cv::findEssentialMat(a, b, I, method, params.confidence, tau, params.max_iterations, mask);
    if (E_all.empty() || E_all.rows % 3 != 0) {
        rp::fail(RP_ERR_ESTIMATION, cv::format("no essential matrix found from %zu matches", x.size()));
    }
    if (mask.empty()) mask = cv::Mat::ones(int(x.size()), 1, CV_8U);
    // With exactly five points the solver may return several candidates: keep the one most points support.
    int best_front = -1;
    Pose best;
    for (int k = 0; k < E_all.rows / 3; ++k) {
        cv::Mat R, t, m = mask.clone();
        int front = cv::recoverPose(E_all.rowRange(3 * k, 3 * k + 3), a, b, I, R, t, m);
        if (front > best_front) {
            best_front = front;
            best.R = cv::Matx33d(R);
            best.t = cv::normalize(cv::Vec3d(t.at<double>(0), t.at<double>(1), t.at<double>(2)));
        }
    }
    if (best_front <= 0) {
        rp::fail(RP_ERR_ESTIMATION, cv::format("no pose puts the %zu matches in front of both cameras", x.size()));
    }
    return best;
}

}  // namespace rp::pose
