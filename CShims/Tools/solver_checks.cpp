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
