// The essential matrix's residuals: bearings, the vectorised Sampson passes (MSAC cost, inlier sets), and the
// poses an essential matrix stands for. Scoring is most of LO-MSAC's time.
#include "kernels.hpp"

#include <opencv2/calib3d.hpp>

namespace rp::pose {

bool has_avx2() {
#if defined(__x86_64__)
    static const bool avx2 = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") != 0;
    }();
    return avx2;
#else
    return false;
#endif
}

Bearings undistorted(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current, const rp_camera &reference_camera,
                     const rp_camera &current_camera) {
    std::vector<cv::Point2d> a, b;
    cv::undistortPoints(reference, a, rp::camera_matrix(reference_camera), rp::distortion_vector(reference_camera));
    cv::undistortPoints(current, b, rp::camera_matrix(current_camera), rp::distortion_vector(current_camera));
    Bearings out;
    for (size_t i = 0; i < a.size(); ++i) out.add(cv::Vec3d(a[i].x, a[i].y, 1), cv::Vec3d(b[i].x, b[i].y, 1));
    return out;
}

namespace {

// The truncated squared Sampson errors (MSAC) of blocks [begin, end), summed into four lanes.
inline __attribute__((always_inline)) void cost_lanes(const cv::Matx33d &E, const Bearings &x, size_t begin, size_t end, double tau2,
                                                      double lanes[4]) {
    Double4 sum = {lanes[0], lanes[1], lanes[2], lanes[3]};
    for (size_t i = begin; i < end; i += 4) {
        const Block p(x, i);
        const Epipolar e(E, p);
        // No gradient (den = 0) is a zero residual.
        const Double4 r2 = (Double4)((Mask4)(e.num * e.num / e.den) & (e.den > 0));
        sum += (Double4)((Mask4)(r2 < tau2 ? r2 : tau2) & p.present);
    }
    for (int k = 0; k < 4; ++k) lanes[k] = sum[k];
}

using CostKernel = void (*)(const cv::Matx33d &, const Bearings &, size_t, size_t, double, double[4]);
void cost_portable(const cv::Matx33d &E, const Bearings &x, size_t begin, size_t end, double tau2, double lanes[4]) {
    cost_lanes(E, x, begin, end, tau2, lanes);
}
#if defined(__x86_64__)
__attribute__((target("avx2"))) void cost_avx2(const cv::Matx33d &E, const Bearings &x, size_t begin, size_t end, double tau2, double lanes[4]) {
    cost_lanes(E, x, begin, end, tau2, lanes);
}
#endif

// The early exit's period, points.
constexpr size_t kBlock = 32;

inline __attribute__((always_inline)) void within_lanes(const cv::Matx33d &E, const Bearings &x, double tau2, std::vector<size_t> &out) {
    out.clear();
    for (size_t begin = 0; begin < x.size(); begin += 4) {
        const Block p(x, begin);
        const Epipolar e(E, p);
        // The scalar `sampson`'s test, (num / √den)² < τ², so borderline points agree with the reported inliers.
        const Double4 r = e.num / __builtin_elementwise_sqrt(e.den);
        const Mask4 inside = ((r * r < tau2) | (e.den <= 0)) & p.present;
        for (int k = 0; k < 4; ++k)
            if (inside[k]) out.push_back(begin + size_t(k));
    }
}

void within_portable(const cv::Matx33d &E, const Bearings &x, double tau2, std::vector<size_t> &out) { within_lanes(E, x, tau2, out); }
#if defined(__x86_64__)
__attribute__((target("avx2"))) void within_avx2(const cv::Matx33d &E, const Bearings &x, double tau2, std::vector<size_t> &out) {
    within_lanes(E, x, tau2, out);
}
#endif

}  // namespace

double msac_cost(const cv::Matx33d &E, const Bearings &x, double tau2, double bound) {
#if defined(__x86_64__)
    const CostKernel kernel = x.avx2 ? cost_avx2 : cost_portable;
#else
    const CostKernel kernel = cost_portable;
#endif
    double lanes[4] = {0, 0, 0, 0};
    const size_t n = x.size();
    for (size_t i = 0; i < n; i += kBlock) {
        kernel(E, x, i, std::min(n, i + kBlock), tau2, lanes);
        if ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) > bound) return HUGE_VAL;
    }
    return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

void within_threshold(const cv::Matx33d &E, const Bearings &x, double tau2, std::vector<size_t> &out) {
#if defined(__x86_64__)
    if (x.avx2) return within_avx2(E, x, tau2, out);
#endif
    within_portable(E, x, tau2, out);
}

int count_within(const cv::Matx33d &E, const Bearings &x, double tau2) {
    std::vector<size_t> within;
    within_threshold(E, x, tau2, within);
    return int(within.size());
}

// Without an SVD (which took 1.1 µs, and runs for every minimal solution): t spans E's left null space, the
// largest cross product of two of its columns. With E scaled to singular values 1 and M = -[t]x E = (I - t tᵀ) R,
// the rotation is R = M + cof(M), and its twisted pair R' = cof(M) - M; both are re-orthonormalised against
// rounding. 0.2 µs, and the same poses as the SVD's to 1e-9.
std::array<Pose, 4> decompositions(const cv::Matx33d &E0) {
    const cv::Vec3d c0(E0(0, 0), E0(1, 0), E0(2, 0)), c1(E0(0, 1), E0(1, 1), E0(2, 1)), c2(E0(0, 2), E0(1, 2), E0(2, 2));
    const cv::Vec3d crosses[3] = {c0.cross(c1), c0.cross(c2), c1.cross(c2)};
    int k = 0;
    for (int i = 1; i < 3; ++i)
        if (cv::norm(crosses[i]) > cv::norm(crosses[k])) k = i;
    const double norm = cv::norm(E0), cross = cv::norm(crosses[k]);
    if (!(norm > 0) || !(cross > 0)) return {Pose{}, Pose{}, Pose{}, Pose{}};
    const cv::Vec3d t = crosses[k] * (1.0 / cross);
    const cv::Matx33d M = -(skew(t) * (E0 * (std::sqrt(2.0) / norm)));
    const cv::Vec3d m0(M(0, 0), M(0, 1), M(0, 2)), m1(M(1, 0), M(1, 1), M(1, 2)), m2(M(2, 0), M(2, 1), M(2, 2));
    const cv::Vec3d q0 = m1.cross(m2), q1 = m2.cross(m0), q2 = m0.cross(m1);
    const cv::Matx33d C(q0[0], q0[1], q0[2], q1[0], q1[1], q1[2], q2[0], q2[1], q2[2]);
    auto orthonormal = [](const cv::Matx33d &A) {
        const cv::Vec3d r0 = cv::normalize(cv::Vec3d(A(0, 0), A(0, 1), A(0, 2)));
        const cv::Vec3d b(A(1, 0), A(1, 1), A(1, 2));
        const cv::Vec3d r1 = cv::normalize(b - r0.dot(b) * r0), r2 = r0.cross(r1);
        return cv::Matx33d(r0[0], r0[1], r0[2], r1[0], r1[1], r1[2], r2[0], r2[1], r2[2]);
    };
    const cv::Matx33d R1 = orthonormal(M + C), R2 = orthonormal(C - M);
    return {Pose{R1, t}, Pose{R1, -t}, Pose{R2, t}, Pose{R2, -t}};
}

int poses_from_essential(const cv::Matx33d &E, const cv::Vec3d *a, const cv::Vec3d *b, int n, Pose out[4]) {
    int count = 0;
    for (const Pose &pose : decompositions(E)) {
        bool all = true;
        for (int i = 0; i < n && all; ++i) all = in_front(pose, a[i], b[i]);
        if (all) out[count++] = pose;
    }
    return count;
}

}  // namespace rp::pose
