// The vector lanes the Sampson passes (residuals.cpp) and the normal equations (refinement.cpp) share: four
// points at a time on Clang's (17 or later) four-double vectors, point i in lane i mod 4. Every pass is a
// template that a portable kernel (SSE2 pairs) and an AVX2 kernel both instantiate, chosen at run time: the same
// IEEE operations in the same order (neither fuses a multiply-add), so a CPU without AVX2 finds the same poses.
#pragma once

#include "pose.hpp"

#include <cstring>

namespace rp::pose {

using Double4 = double __attribute__((vector_size(32)));
using Mask4 = long long __attribute__((vector_size(32)));

// The points begin..begin+3 by column (every bearing here has z = 1); lanes past the end repeat point
// `begin` and are cleared in `present`.
struct Block {
    Double4 ax, ay, bx, by;
    Mask4 present;
    __attribute__((always_inline)) Block(const Bearings &x, size_t begin) {
        if (begin + 4 <= x.size()) {
            std::memcpy(&ax, &x.ax[begin], sizeof ax);
            std::memcpy(&ay, &x.ay[begin], sizeof ay);
            std::memcpy(&bx, &x.bx[begin], sizeof bx);
            std::memcpy(&by, &x.by[begin], sizeof by);
            present = Mask4{-1, -1, -1, -1};
            return;
        }
        for (int k = 0; k < 4; ++k) {
            const bool in = begin + size_t(k) < x.size();
            const size_t i = in ? begin + size_t(k) : begin;
            ax[k] = x.ax[i], ay[k] = x.ay[i], bx[k] = x.bx[i], by[k] = x.by[i];
            present[k] = in ? -1 : 0;
        }
    }
};

// E a, the first two rows of Eᵀ b, the epipolar residual bᵀ E a and the Sampson denominator.
struct Epipolar {
    Double4 ea0, ea1, eb0, eb1, num, den;
    __attribute__((always_inline)) Epipolar(const cv::Matx33d &E, const Block &p) {
        ea0 = E(0, 0) * p.ax + E(0, 1) * p.ay + E(0, 2);
        ea1 = E(1, 0) * p.ax + E(1, 1) * p.ay + E(1, 2);
        const Double4 ea2 = E(2, 0) * p.ax + E(2, 1) * p.ay + E(2, 2);
        eb0 = E(0, 0) * p.bx + E(1, 0) * p.by + E(2, 0);
        eb1 = E(0, 1) * p.bx + E(1, 1) * p.by + E(2, 1);
        num = p.bx * ea0 + p.by * ea1 + ea2;
        den = ((ea0 * ea0 + ea1 * ea1) + eb0 * eb0) + eb1 * eb1;
    }
};

}  // namespace rp::pose
