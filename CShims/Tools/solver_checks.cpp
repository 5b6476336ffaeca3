// The minimal solvers exposed on their own, so tests can check them against exact synthetic truth.
#include "../Core/shim_internal.hpp"
#include "rephoto_shim_tools.h"

#include <algorithm>

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
        if (n < 0) rp::fail(RP_ERR_INVALID_ARGUMENT, "negative point count");
        std::vector<cv::Vec3d> a, b;
        for (int i = 0; i < n; ++i) {
            a.emplace_back(reference_xy[2 * i], reference_xy[2 * i + 1], 1);
            b.emplace_back(current_xy[2 * i], current_xy[2 * i + 1], 1);
        }
        *cost = rp::sampson_cost_for_tests(cv::Matx33d(essential), a, b, tau2, portable != 0, *within);
    });
}

extern "C" int rp_tools_plane_twin_check(const double *reference_xy, const double *current_xy, int n, double tau, uint64_t seed,
                                         double R[9], double t[3], int *replaced, rp_status *status) {
    *replaced = 0;
    return rp::guarded(status, [&] {
        if (n < 0 || !(tau > 0)) rp::fail(RP_ERR_INVALID_ARGUMENT, "a negative point count or a threshold that is not positive");
        std::vector<cv::Vec3d> a, b;
        for (int i = 0; i < n; ++i) {
            a.emplace_back(reference_xy[2 * i], reference_xy[2 * i + 1], 1);
            b.emplace_back(current_xy[2 * i], current_xy[2 * i + 1], 1);
        }
        rp_robust_params params{};
        params.method = RP_METHOD_LO_MSAC;
        params.refine = 1;
        params.seed = seed;
        cv::Matx33d rotation(R);
        cv::Vec3d translation(t[0], t[1], t[2]);
        *replaced = rp::plane_twin_check_for_tests(a, b, tau, params, rotation, translation) ? 1 : 0;
        std::copy(rotation.val, rotation.val + 9, R);
        for (int i = 0; i < 3; ++i) t[i] = translation[i];
    });
}
