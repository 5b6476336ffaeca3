// The minimal solvers and the relative-pose estimator's stages (CShims/Core/pose/) exposed on their own, so
// tests can check them against exact synthetic truth.
#include "../Core/pose/essential_estimator.hpp"
#include "../Core/shim_internal.hpp"
#include "native_pose.hpp"
#include "rephoto_shim_tools.h"

#include <algorithm>
#include <cstring>

namespace {

using namespace rp::pose;

// n normalised point pairs (x, y) as the estimator's bearings (z = 1), scored by the AVX2 kernels where the CPU
// has them unless `portable`.
Bearings bearings_of(const double *reference_xy, const double *current_xy, int n, bool portable) {
    if (n < 0) rp::fail(RP_ERR_INVALID_ARGUMENT, "negative point count");
    Bearings x;
    for (int i = 0; i < n; ++i) x.add(cv::Vec3d(reference_xy[2 * i], reference_xy[2 * i + 1], 1), cv::Vec3d(current_xy[2 * i], current_xy[2 * i + 1], 1));
    x.avx2 = has_avx2() && !portable;
    return x;
}

}  // namespace

extern "C" int rp_tools_five_point(const double reference_xy[10], const double current_xy[10], double solutions[90], int *count,
                                   rp_status *status) {
    *count = 0;
    return rp::guarded(status, [&] {
        cv::Vec3d a[5], b[5];
        for (int i = 0; i < 5; ++i) {
            a[i] = cv::Vec3d(reference_xy[2 * i], reference_xy[2 * i + 1], 1);
            b[i] = cv::Vec3d(current_xy[2 * i], current_xy[2 * i + 1], 1);
        }
        cv::Matx33d found[10];
        *count = rp::five_point(a, b, found);
        for (int k = 0; k < *count; ++k) std::copy(found[k].val, found[k].val + 9, solutions + 9 * k);
    });
}

extern "C" int rp_tools_plane_homography(const double *reference_xy, const double *current_xy, int n, double threshold, uint64_t seed,
                                         double homography[9], int *found, rp_status *status) {
    *found = 0;
    return rp::guarded(status, [&] {
        if (n < 0) rp::fail(RP_ERR_INVALID_ARGUMENT, "negative point count");
        std::vector<cv::Point2d> a, b;
        for (int i = 0; i < n; ++i) {
            a.emplace_back(reference_xy[2 * i], reference_xy[2 * i + 1]);
            b.emplace_back(current_xy[2 * i], current_xy[2 * i + 1]);
        }
        cv::Matx33d H;
        if (!rp::plane_homography(a, b, threshold, 500, 0.999, seed, H)) return;
        *found = 1;
        std::copy(H.val, H.val + 9, homography);
    });
}

extern "C" int rp_tools_sampson_cost(const double essential[9], const double *reference_xy, const double *current_xy, int n, double tau2,
                                     int portable, double *cost, int *within, rp_status *status) {
    *cost = 0;
    *within = 0;
    return rp::guarded(status, [&] {
        const Bearings x = bearings_of(reference_xy, current_xy, n, portable != 0);
        const cv::Matx33d E(essential);
        std::vector<size_t> found;
        within_threshold(E, x, tau2, found);
        *within = int(found.size());
        *cost = msac_cost(E, x, tau2);
    });
}

extern "C" int rp_tools_plane_twin_check(const double *reference_xy, const double *current_xy, int n, double tau, uint64_t seed,
                                         double R[9], double t[3], int *replaced, rp_status *status) {
    *replaced = 0;
    return rp::guarded(status, [&] {
        if (n < 0 || !(tau > 0)) rp::fail(RP_ERR_INVALID_ARGUMENT, "a negative point count or a threshold that is not positive");
        const Bearings x = bearings_of(reference_xy, current_xy, n, false);
        Pose pose;
        pose.R = cv::Matx33d(R);
        pose.t = cv::normalize(cv::Vec3d(t[0], t[1], t[2]));
        const std::vector<std::pair<double, Pose>> candidates{{msac_cost(pose.essential(), x, tau * tau), pose}};
        const Decision decision = rp::tools::decided_without_sensor(x, tau, seed, RefineParams{true, 0}, true, candidates);
        *replaced = decision.rivals.empty() ? 0 : 1;
        std::copy(decision.pose.R.val, decision.pose.R.val + 9, R);
        for (int i = 0; i < 3; ++i) t[i] = decision.pose.t[i];
    });
}

extern "C" int rp_tools_robust_essential(const double *reference_xy, const double *current_xy, int n, double tau, const rp_robust_params *params,
                                         double R[9], double t[3], uint8_t *inliers, size_t inliers_capacity, int *samples, int *certified,
                                         rp_status *status) {
    *samples = 0;
    *certified = 0;
    return rp::guarded(status, [&] {
        if (n < 5 || !(tau > 0)) rp::fail(RP_ERR_INVALID_ARGUMENT, "fewer than 5 points or a threshold that is not positive");
        rp_loop_options loop = params->loop;  // its threshold is tau here, in normalised units
        loop.threshold = tau;
        check_loop_options(loop);
        rp::check_capacity(inliers, inliers_capacity, n, "inliers");
        const Bearings x = bearings_of(reference_xy, current_xy, n, params->essential.portable_kernels != 0);
        const SearchParams search = pose_params(*params).search;
        const EssentialEstimator estimator(x, tau * tau, search.essential);
        const LoopResult<Pose> found = robust_loop(estimator, search.loop, search.loop.seed, std::max(1, search.loop.max_iterations));
        if (!std::isfinite(found.cost)) rp::fail(RP_ERR_ESTIMATION, "the loop found no model");
        std::copy(found.model.R.val, found.model.R.val + 9, R);
        for (int i = 0; i < 3; ++i) t[i] = found.model.t[i];
        if (inliers) {
            std::vector<size_t> within;
            estimator.inliers(found.model, within);
            std::memset(inliers, 0, size_t(n));
            for (size_t i : within) inliers[i] = 1;
        }
        *samples = int(found.samples);
        *certified = found.certified ? 1 : 0;
    });
}

extern "C" int rp_tools_refine_pose(const double *reference_xy, const double *current_xy, int n, double tau, int iterations, int portable,
                                    double R[9], double t[3], double *cost, rp_status *status) {
    *cost = 0;
    return rp::guarded(status, [&] {
        if (!(tau > 0) || iterations < 0) rp::fail(RP_ERR_INVALID_ARGUMENT, "a threshold that is not positive or negative iterations");
        const Bearings x = bearings_of(reference_xy, current_xy, n, portable != 0);
        Pose pose;
        pose.R = cv::Matx33d(R);
        pose.t = cv::normalize(cv::Vec3d(t[0], t[1], t[2]));
        *cost = refine(x, tau * tau, pose, iterations);
        std::copy(pose.R.val, pose.R.val + 9, R);
        for (int i = 0; i < 3; ++i) t[i] = pose.t[i];
    });
}
