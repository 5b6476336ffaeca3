// Relative pose from the essential matrix: the LO-MSAC estimator (the default), OpenCV's estimators for
// comparison, the Levenberg-Marquardt refinement they share, and the evidence the gate in Swift reads
// (uncertainty, parallax, model selection, chance).
#include "shim_internal.hpp"

#include <opencv2/calib3d.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>

namespace {

constexpr double kDegrees = 180.0 / M_PI;

struct Pose {
    cv::Matx33d R = cv::Matx33d::eye();
    cv::Vec3d t = cv::Vec3d(0, 0, 1);
    cv::Matx33d essential() const {
        return cv::Matx33d(0, -t[2], t[1], t[2], 0, -t[0], -t[1], t[0], 0) * R;
    }
};

// How far apart two poses are, degrees: the rotation between them and the angle between their translation
// lines (sign-free: one essential matrix stands for either sign).
struct Separation {
    double rotation, translation;
};
double rotation_apart(const cv::Matx33d &P, const cv::Matx33d &Q) {
    double c = (cv::trace(P.t() * Q) - 1) / 2;
    return std::acos(std::max(-1.0, std::min(1.0, c))) * kDegrees;
}
Separation separation(const Pose &p, const Pose &q) {
    return {rotation_apart(p.R, q.R), std::acos(std::min(1.0, std::abs(p.t.dot(q.t)))) * kDegrees};
}

cv::Matx33d skew(const cv::Vec3d &v) { return cv::Matx33d(0, -v[2], v[1], v[2], 0, -v[0], -v[1], v[0], 0); }

// Normalised image coordinates (x, y, 1) of both frames.
struct Bearings {
    std::vector<cv::Vec3d> a, b;
    // The same points by column, for the vectorised cost (every bearing here has z = 1).
    std::vector<double> ax, ay, bx, by;
    bool avx2 = false;  // which kernels score these points (the same results either way)
    // The keypoints' local frames, when both sides have them: how much each correspondence's orientation turns
    // (radians) and its scale grows (log2) from reference to current. Empty otherwise; the sample screen reads them.
    std::vector<double> turn, zoom;
    size_t size() const { return a.size(); }
    void add(const cv::Vec3d &p, const cv::Vec3d &q) {
        a.push_back(p);
        b.push_back(q);
        ax.push_back(p[0]);
        ay.push_back(p[1]);
        bx.push_back(q[0]);
        by.push_back(q[1]);
    }
};

Bearings undistorted(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current,
                     const rp_camera &reference_camera, const rp_camera &current_camera) {
    std::vector<cv::Point2d> a, b;
    cv::undistortPoints(reference, a, rp::camera_matrix(reference_camera), rp::distortion_vector(reference_camera));
    cv::undistortPoints(current, b, rp::camera_matrix(current_camera), rp::distortion_vector(current_camera));
    Bearings out;
    for (size_t i = 0; i < a.size(); ++i) out.add(cv::Vec3d(a[i].x, a[i].y, 1), cv::Vec3d(b[i].x, b[i].y, 1));
    return out;
}

// Signed Sampson distance (first-order geometric error) in normalised units.
inline double sampson(const cv::Matx33d &E, const cv::Vec3d &a, const cv::Vec3d &b) {
    cv::Vec3d Ea = E * a;
    double Etb0 = E(0, 0) * b[0] + E(1, 0) * b[1] + E(2, 0) * b[2];
    double Etb1 = E(0, 1) * b[0] + E(1, 1) * b[1] + E(2, 1) * b[2];
    double den = Ea[0] * Ea[0] + Ea[1] * Ea[1] + Etb0 * Etb0 + Etb1 * Etb1;
    return den > 0 ? b.dot(Ea) / std::sqrt(den) : 0;
}

// Scoring is most of LO-MSAC's time, so the Sampson passes run four points at a time on Clang's (17 or later)
// four-double vectors: point i in lane i mod 4, lanes added in one fixed order. Each pass is one template that
// a portable kernel (SSE2 pairs) and an AVX2 kernel both instantiate, chosen at run time: the same IEEE
// operations in the same order (neither fuses a multiply-add), so a CPU without AVX2 finds the same poses.
using Double4 = double __attribute__((vector_size(32)));
using Mask4 = long long __attribute__((vector_size(32)));

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

// Truncated quadratic (MSAC) cost of all correspondences; HUGE_VAL once it exceeds `bound` (checked every
// kBlock points: the early exit).
constexpr size_t kBlock = 32;
double msac_cost(const cv::Matx33d &E, const Bearings &x, double tau2, double bound = HUGE_VAL) {
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

// The correspondences within the threshold of E (squared Sampson error below tau2, or no gradient).
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

void within_threshold(const cv::Matx33d &E, const Bearings &x, double tau2, std::vector<size_t> &out) {
#if defined(__x86_64__)
    if (x.avx2) return within_avx2(E, x, tau2, out);
#endif
    within_portable(E, x, tau2, out);
}

// Depths of a correspondence under a pose (X_b = R X_a + t), by least squares on λb b = λa R a + t.
inline bool in_front(const Pose &pose, const cv::Vec3d &a, const cv::Vec3d &b) {
    cv::Vec3d u = pose.R * a;
    double uu = u.dot(u), ub = u.dot(b), bb = b.dot(b), ut = u.dot(pose.t), bt = b.dot(pose.t);
    double det = uu * bb - ub * ub;
    if (!(std::abs(det) > 1e-12 * uu * bb)) return false;  // parallel rays: no depth
    double la = (-ut * bb + bt * ub) / det;
    double lb = (uu * bt - ub * ut) / det;
    return la > 0 && lb > 0;
}

// The four poses an essential matrix stands for (two rotations, two signs of t), without an SVD (which took
// 1.1 µs, and runs for every minimal solution): t spans E's left null space, the largest cross product of two
// of its columns.
// With E scaled to singular values 1 and M = -[t]x E = (I - t tᵀ) R, the rotation is R = M + cof(M), and its
// twisted pair R' = cof(M) - M; both are re-orthonormalised against rounding. 0.2 µs, and the same poses as
// the SVD's to 1e-9.
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

// Those of E's poses that put every given correspondence in front.
int poses_from_essential(const cv::Matx33d &E, const cv::Vec3d *a, const cv::Vec3d *b, int n, Pose out[4]) {
    int count = 0;
    for (const Pose &pose : decompositions(E)) {
        bool all = true;
        for (int i = 0; i < n && all; ++i) all = in_front(pose, a[i], b[i]);
        if (all) out[count++] = pose;
    }
    return count;
}

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

// Residual and its gradient over the pose's tangent space: three rotation increments (left-multiplied
// Rodrigues) and two translation offsets in the plane orthogonal to t.
struct TangentBasis {
    cv::Vec3d e1, e2;
    explicit TangentBasis(const cv::Vec3d &t) {
        cv::Vec3d helper = std::abs(t[0]) < 0.9 ? cv::Vec3d(1, 0, 0) : cv::Vec3d(0, 1, 0);
        e1 = cv::normalize(t.cross(helper));
        e2 = t.cross(e1);
    }
};

// The essential matrix of a pose and its derivatives over the five parameters: rotation k gives
// [t]x [e_k]x R, translation [e]x R. They depend on the pose only, so they are built once per step.
struct Linearisation {
    cv::Matx33d E, dE[5];
    Linearisation(const Pose &pose, const TangentBasis &basis) : E(pose.essential()) {
        const cv::Matx33d tx = skew(pose.t);
        const cv::Vec3d axes[3] = {cv::Vec3d(1, 0, 0), cv::Vec3d(0, 1, 0), cv::Vec3d(0, 0, 1)};
        for (int k = 0; k < 3; ++k) dE[k] = tx * skew(axes[k]) * pose.R;
        dE[3] = skew(basis.e1) * pose.R;
        dE[4] = skew(basis.e2) * pose.R;
    }
};

// The Gauss-Newton normal equations (JᵀJ, Jᵀr) of the Sampson residuals within the threshold, in the scheme of
// the scoring kernels above. Measured: under a third of the scalar version's time. `Weighted`: each term carries
// the Cauchy weight 1 / (1 + r²/s²), iteratively reweighted least squares for the polish below.
struct NormalEquations {
    double JtJ[15] = {};  // upper triangle by rows
    double Jtr[5] = {};
    int used = 0;
};

template <bool Weighted>
inline __attribute__((always_inline)) void normal_equations_block(const Linearisation &l, const Bearings &x, size_t begin,
                                                                  double tau2, double s2, Double4 JtJ[15], Double4 Jtr[5], Mask4 &used) {
    const Block p(x, begin);
    const Epipolar e(l.E, p);
    const Double4 D = __builtin_elementwise_sqrt(e.den);
    const Double4 r = e.num / D;
    // A point with no epipolar gradient (den = 0) has no residual to fit.
    const Mask4 within = (e.den > 0) & (r * r < tau2) & p.present;
    const Double4 half_ratio = e.num / (2 * e.den);
    Double4 J[5];
    for (int k = 0; k < 5; ++k) {
        const Epipolar d(l.dE[k], p);  // the derivatives of E a, Eᵀ b and bᵀ E a
        const Double4 dden = 2 * (((e.ea0 * d.ea0 + e.ea1 * d.ea1) + e.eb0 * d.eb0) + e.eb1 * d.eb1);
        J[k] = (Double4)((Mask4)((d.num - half_ratio * dden) / D) & within);
    }
    const Double4 rw = (Double4)((Mask4)r & within);
    if constexpr (Weighted) {
        const Double4 w = 1 / (1 + r * r / s2);
        for (int q = 0, k = 0; q < 5; ++q) {
            const Double4 Jw = J[q] * w;
            Jtr[q] += Jw * rw;
            for (int m = q; m < 5; ++m, ++k) JtJ[k] += Jw * J[m];
        }
    } else {
        for (int q = 0, k = 0; q < 5; ++q) {
            Jtr[q] += J[q] * rw;
            for (int m = q; m < 5; ++m, ++k) JtJ[k] += J[q] * J[m];
        }
    }
    used -= within;  // a true lane is -1
}

template <bool Weighted>
inline __attribute__((always_inline)) NormalEquations normal_equations_lanes(const Linearisation &l, const Bearings &x, double tau2, double s2) {
    Double4 JtJ[15] = {}, Jtr[5] = {};
    Mask4 used = {};
    for (size_t i = 0; i < x.size(); i += 4) normal_equations_block<Weighted>(l, x, i, tau2, s2, JtJ, Jtr, used);
    NormalEquations out;
    auto total = [](const Double4 &v) { return (v[0] + v[1]) + (v[2] + v[3]); };
    for (int e = 0; e < 15; ++e) out.JtJ[e] = total(JtJ[e]);
    for (int p = 0; p < 5; ++p) out.Jtr[p] = total(Jtr[p]);
    out.used = int(used[0] + used[1] + used[2] + used[3]);
    return out;
}

template <bool Weighted>
NormalEquations normal_equations_portable(const Linearisation &l, const Bearings &x, double tau2, double s2) {
    return normal_equations_lanes<Weighted>(l, x, tau2, s2);
}

#if defined(__x86_64__)
template <bool Weighted>
__attribute__((target("avx2"))) NormalEquations normal_equations_avx2(const Linearisation &l, const Bearings &x, double tau2, double s2) {
    return normal_equations_lanes<Weighted>(l, x, tau2, s2);
}
#endif

// `cauchy_s2` > 0: the Cauchy-weighted equations at that squared scale.
NormalEquations normal_equations(const Linearisation &l, const Bearings &x, double tau2, double cauchy_s2 = 0) {
    const bool weighted = cauchy_s2 > 0;
#if defined(__x86_64__)
    if (x.avx2) return weighted ? normal_equations_avx2<true>(l, x, tau2, cauchy_s2) : normal_equations_avx2<false>(l, x, tau2, 0);
#endif
    return weighted ? normal_equations_portable<true>(l, x, tau2, cauchy_s2) : normal_equations_portable<false>(l, x, tau2, 0);
}

cv::Matx<double, 5, 5> symmetric(const double upper[15]) {
    cv::Matx<double, 5, 5> M;
    for (int p = 0, e = 0; p < 5; ++p)
        for (int q = p; q < 5; ++q, ++e) M(p, q) = M(q, p) = upper[e];
    return M;
}

Pose moved(const Pose &pose, const TangentBasis &basis, const double delta[5]) {
    cv::Matx33d dR;
    cv::Rodrigues(cv::Vec3d(delta[0], delta[1], delta[2]), dR);
    Pose out;
    out.R = dR * pose.R;
    out.t = cv::normalize(pose.t + delta[3] * basis.e1 + delta[4] * basis.e2);
    return out;
}

// One Levenberg-Marquardt step on a pose's five parameters: the damped normal equations, solved with the damping
// raised tenfold (up to 8 times) until `cost` falls. False when it never did; `converged` when the fall or the
// step was negligible.
template <typename Cost>
bool damped_step(const cv::Matx<double, 5, 5> &H, const cv::Matx<double, 5, 1> &g, const TangentBasis &basis, const Cost &cost, Pose &pose,
                 double &current, double &lambda, bool &converged) {
    for (int attempt = 0; attempt < 8; ++attempt) {
        cv::Matx<double, 5, 5> A = H;
        for (int p = 0; p < 5; ++p) A(p, p) += lambda * std::max(H(p, p), 1e-12);
        cv::Matx<double, 5, 1> step;
        if (!cv::solve(A, -g, step, cv::DECOMP_CHOLESKY)) {
            lambda *= 10;
            continue;
        }
        const Pose candidate = moved(pose, basis, step.val);
        const double c = cost(candidate);
        if (c < current) {
            converged = current - c < 1e-12 * current || cv::norm(step) < 1e-12;
            pose = candidate;
            current = c;
            lambda = std::max(lambda / 10, 1e-12);
            return true;
        }
        lambda *= 10;
    }
    return false;
}

// Levenberg-Marquardt on the MSAC cost: each step solves the normal equations of the correspondences
// currently within the threshold and is kept only if the truncated cost over all of them falls.
double refine(const Bearings &x, double tau2, Pose &pose, int iterations) {
    double cost = msac_cost(pose.essential(), x, tau2);
    double lambda = 1e-4;
    for (int it = 0; it < iterations; ++it) {
        TangentBasis basis(pose.t);
        const Linearisation linear(pose, basis);
        const NormalEquations normal = normal_equations(linear, x, tau2);
        if (normal.used < 5) break;
        const cv::Matx<double, 5, 5> H = symmetric(normal.JtJ);
        const cv::Matx<double, 5, 1> g(normal.Jtr);
        bool converged = false;
        if (!damped_step(H, g, basis, [&](const Pose &candidate) { return msac_cost(candidate.essential(), x, tau2); }, pose, cost, lambda,
                         converged))
            break;
        if (converged) return cost;
    }
    return cost;
}

// Local optimisation on at most this many inliers (Lebeda, Matas & Chum 2012 bound LO's cost the same way):
// it only has to reach the right basin, the final refinement uses every correspondence. Measured on 3,500
// matches, LO on all of them was most of the estimator's time.
constexpr size_t kLocalInliers = 256;

// The model refitted to the correspondences within 3 thresholds of it, then 2 (at most kLocalInliers, best
// first as the caller orders them): a start for the optimisation at 1 threshold when a minimal model sits a
// pixel or two off most of its inliers (the shrinking threshold of Lebeda, Matas & Chum's LO+).
void widen(const Bearings &x, double tau2, Pose &pose) {
    for (double factor : {9.0, 4.0}) {
        std::vector<size_t> within;
        within_threshold(pose.essential(), x, factor * tau2, within);
        if (within.size() < 5) return;
        within.resize(std::min(within.size(), kLocalInliers));
        Bearings subset;
        subset.avx2 = x.avx2;
        for (size_t i : within) subset.add(x.a[i], x.b[i]);
        refine(subset, factor * tau2, pose, 10);
    }
}

// Two rounds of: the model's inliers (a seeded random subset when there are more than kLocalInliers),
// Levenberg-Marquardt on them, the cost on all correspondences. Returns that cost; `pose` moves only when it fell.
double local_optimisation(const Bearings &x, double tau2, Pose &pose, std::mt19937_64 &random) {
    double cost = msac_cost(pose.essential(), x, tau2);
    Bearings subset;
    std::vector<size_t> within;
    for (int round = 0; round < 2; ++round) {
        within_threshold(pose.essential(), x, tau2, within);
        if (within.size() < 5) break;
        if (within.size() > kLocalInliers) {
            // A partial Fisher-Yates shuffle: the first kLocalInliers are a uniform random subset.
            for (size_t i = 0; i < kLocalInliers; ++i) {
                std::uniform_int_distribution<size_t> pick(i, within.size() - 1);
                std::swap(within[i], within[pick(random)]);
            }
            within.resize(kLocalInliers);
        }
        subset = Bearings();
        subset.avx2 = x.avx2;
        for (size_t i : within) subset.add(x.a[i], x.b[i]);
        Pose candidate = pose;
        refine(subset, tau2, candidate, 10);
        double candidate_cost = msac_cost(candidate.essential(), x, tau2);
        if (!(candidate_cost < cost)) break;
        pose = candidate;
        cost = candidate_cost;
    }
    return cost;
}

// Number of samples after which an all-inlier sample has been drawn with probability `confidence`, when the
// screen lets `kept` of the all-inlier samples through.
long required_samples(double inlier_ratio, double confidence, double kept = 1) {
    double p = std::pow(inlier_ratio, 5) * kept;
    if (p >= 1) return 1;
    if (p <= 0) return LONG_MAX;
    double k = std::log(1 - confidence) / std::log(1 - p);
    return k >= double(LONG_MAX / 2) ? LONG_MAX / 2 : long(std::ceil(k));
}

int count_within(const cv::Matx33d &E, const Bearings &x, double tau2) {
    std::vector<size_t> within;
    within_threshold(E, x, tau2, within);
    return int(within.size());
}

// The sample screen: the five correspondences' keypoint frames must turn alike and scale alike, as a true
// match's do under a camera motion, within `degrees` and `octaves` (the spread, largest minus smallest).
// A sample that fails is never solved: measured on Strecha's widest AKAZE pairs at 1280 px, 60° and 1.5
// octaves pass 4-9 % of the samples and 65-100 % of the all-inlier ones, since a wrong match's frames
// turn and scale at random. Off (always true) without frames or with degrees <= 0.
struct Screen {
    const Bearings &x;
    double degrees_rad = 0, octaves = 0;
    bool on() const { return degrees_rad > 0 && !x.turn.empty(); }
    bool passes(const size_t *index) const {
        const double first = x.turn[index[0]];
        double lo = 0, hi = 0, zlo = x.zoom[index[0]], zhi = zlo;
        for (int i = 1; i < 5; ++i) {
            // Relative to the first: within the bound, every turn's wrapped offset is on the same side.
            double d = std::remainder(x.turn[index[i]] - first, 2 * M_PI);
            lo = std::min(lo, d);
            hi = std::max(hi, d);
            zlo = std::min(zlo, x.zoom[index[i]]);
            zhi = std::max(zhi, x.zoom[index[i]]);
        }
        return hi - lo <= degrees_rad && zhi - zlo <= octaves;
    }
    // The share of the model's inliers' five-point samples that pass: the stopping rule needs it, since the
    // screen's rejections of all-inlier samples lengthen the wait for one. Estimated on 256 draws of a generator
    // of its own, so the search's own draws stay as they were.
    double kept(const std::vector<size_t> &inliers, uint64_t seed) const {
        if (!on() || inliers.size() < 5) return 1;
        std::mt19937_64 random(seed);
        std::uniform_int_distribution<size_t> pick(0, inliers.size() - 1);
        constexpr int kDraws = 256;
        int passed = 0;
        size_t local[5], index[5];
        for (int k = 0; k < kDraws; ++k) {
            for (int i = 0; i < 5; ++i) {
                local[i] = rp::draw_unlike(random, pick, local, i);
                index[i] = inliers[local[i]];
            }
            passed += passes(index);
        }
        // Never zero: the bound stays finite, and one passing sample in 512 is as good as none for it.
        return std::max(double(passed), 0.5) / kDraws;
    }
};

// A screened search draws at most this many samples per sample it may solve: a draw and its screen are a few
// generator calls and comparisons, a solve is the five-point solver (5.6 µs) and the scoring, so a search that
// hits this bound still spends most of its time solving.
constexpr long kDrawsPerSolve = 16;

// LO-MSAC: five-point samples (uniform, or PROSAC), each essential matrix split into the poses that put its sample in
// front, MSAC scoring with early exit, a Levenberg-Marquardt local optimisation whenever a sample beats the
// best so far, and the number of samples adapted to the best inlier ratio.
struct Search {
    Pose pose;
    double cost = HUGE_VAL;
    long samples = 0;        // solved
    long drawn = 0;          // drawn, the screen's rejections included
    bool screened = false;
    bool certified = false;  // stopped by the adaptive bound, not by the cap
    bool reached = false;    // stopped on reaching the target's basin (lo_msac_once's `target`)
    std::vector<Pose> runners_up;  // the other optimised models: all, uncertified; other basins', certified (see lo_msac_once)
};

// A runner-up this far from the pose is a rival: were it the truth, the pose would be a wrong answer (the
// bench's boundary for one).
constexpr double kRivalDegrees = 10;

// With a `target`, the search stops as soon as its best model lies within `target_degrees` of it in rotation.
Search lo_msac_once(const Bearings &x, const rp_robust_params &params, double tau, uint64_t seed, long cap,
                    const cv::Matx33d *target = nullptr, double target_degrees = 0) {
    const size_t n = x.size();
    const double tau2 = tau * tau;
    // Caps and minimum count the samples solved; the screen's rejections are bounded by max_draws.
    const long min_samples = std::max(0, params.min_iterations);
    const long max_samples = std::max(1L, cap);
    const Screen screen{x, params.screen_degrees / kDegrees, params.screen_octaves};
    const long max_draws = screen.on() ? max_samples * kDrawsPerSolve : max_samples;
    std::mt19937_64 random(seed);

    // PROSAC (Chum & Matas 2005) when the correspondences come best first: samples are drawn from a
    // growing prefix, the newest point always in, so good matches are tried long before the uniform draws
    // would reach them; the schedule ends in plain uniform sampling over all of them.
    const bool progressive = params.prosac != 0 && n > 5;
    size_t prefix = progressive ? 5 : n;
    double t_n = double(max_draws);
    for (size_t i = 0; i < 5; ++i) t_n *= double(5 - i) / double(n - i);
    double t_prime = 1;

    Pose best;
    double best_cost = HUGE_VAL, best_minimal_cost = HUGE_VAL;
    // Minimal models kept, by cost, besides the best: an uncertified search optimises them at the end.
    const size_t keep = size_t(std::max(0, params.runners_up));
    std::vector<std::pair<double, Pose>> pool;
    long needed = max_draws;
    long k = 0, solved = 0;  // samples drawn, and solved
    cv::Vec3d sa[5], sb[5];
    cv::Matx33d solutions[10];
    bool reached = false, capped = false;
    for (;; ++k) {
        if (solved >= max_samples || k >= max_draws) {
            capped = true;
            break;
        }
        if (k >= needed && solved >= min_samples) break;
        size_t index[5];
        bool newest = false;
        if (progressive && prefix < n) {
            if (double(k + 1) >= t_prime) {
                double next = t_n * double(prefix + 1) / double(prefix + 1 - 5);
                t_prime += std::ceil(next - t_n);
                t_n = next;
                ++prefix;
            }
            newest = double(k + 1) <= t_prime;
        }
        std::uniform_int_distribution<size_t> pick(0, (newest ? prefix - 1 : prefix) - 1);
        for (int i = 0; i < 5; ++i) index[i] = newest && i == 4 ? prefix - 1 : rp::draw_unlike(random, pick, index, i);
        if (screen.on() && !screen.passes(index)) continue;
        ++solved;
        for (int i = 0; i < 5; ++i) {
            sa[i] = x.a[index[i]];
            sb[i] = x.b[index[i]];
        }
        int count = rp::five_point(sa, sb, solutions);
        for (int s = 0; s < count; ++s) {
            Pose poses[4];
            int consistent = poses_from_essential(solutions[s], sa, sb, 5, poses);
            for (int p = 0; p < consistent; ++p) {
                if (!plausible(poses[p], sa, sb, params.max_parallax_degrees)) continue;
                // Minimal models compete with the best minimal model, not with the optimised best: a sample
                // from another basin rarely beats an already optimised model before its own optimisation.
                // Scored up to the worst kept runner-up (when that many are kept): those are kept too.
                const double bound = pool.size() < keep ? HUGE_VAL : keep == 0 ? best_minimal_cost : std::max(best_minimal_cost, pool.back().first);
                double cost = msac_cost(poses[p].essential(), x, tau2, bound);
                if (cost >= best_minimal_cost) {
                    if (cost < bound) {
                        auto at = std::upper_bound(pool.begin(), pool.end(), cost, [](double c, const auto &e) { return c < e.first; });
                        pool.insert(at, {cost, poses[p]});
                        if (pool.size() > keep) pool.pop_back();
                    }
                    continue;
                }
                best_minimal_cost = cost;
                Pose optimised = poses[p];
                double optimised_cost = std::min(cost, local_optimisation(x, tau2, optimised, random));
                if (optimised_cost >= best_cost) continue;
                best = optimised_cost < cost ? optimised : poses[p];
                best_cost = optimised_cost;
                std::vector<size_t> within;
                within_threshold(best.essential(), x, tau2, within);
                needed = required_samples(double(within.size()) / double(n), params.confidence,
                                          screen.kept(within, seed ^ 0x243F6A8885A308D3ULL));
                if (target && rotation_apart(best.R, *target) <= target_degrees) reached = true;
            }
        }
        if (reached) break;
    }
    // LO runs only on a new best minimal model, so a sample from the right basin that scored a little worse than
    // some earlier minimal model was never optimised. A search spent without certifying optimises every
    // runner-up (measured: Strecha 0->5 at full resolution, 17 % inliers, came out 53° wrong in 2 of 6 seeds and
    // right in all 6 with them); the ones not taken are the evidence of a rival basin.
    // A screened search that drew more samples than the cap certified only thanks to the screen, which favours
    // samples whose frames agree, as a repeated structure's mismatches do: it counts as uncertified here, so that
    // a rival basin is still seen. Measured with ORB on Strecha at full resolution, 4 seeds: confident wrong
    // answers per run 2.0 without this, 1.5 with it, 0.8 without the screen. (An unscreened search of half the cap
    // adding its rivals brought ORB to 1.2 but cost AKAZE its gains: 1280 px mAA@10 0.967 -> 0.954, and a wrong
    // answer at full resolution.)
    // A certified search is certified only for the best model's basin: the adaptive bound says an all-inlier
    // sample was drawn, not that its minimal model, noisier than a coherent group of mismatches' one, was ever
    // optimised. It optimises the runners-up from other basins: kRivalDegrees or more from its pose in rotation
    // (nearer ones climb back into it; and under a pure rotation, where E's translation is free, runners-up apart
    // only in translation fitted the noise: the golden pure-rotation frames moved from 0.04° to 0.5° off).
    // Measured on the synthetic orbits, 8 seeds: a 60° orbit's pair certified 82° wrong in one seed (MSAC cost
    // 103 against PoseLib's 97) and a 75° one 13° wrong; with this, neither, and the search's mAA@10 0.719 ->
    // 0.727 (Strecha unchanged), at a median 2.5 -> 2.9 ms on Strecha at 1280 px.
    Search out;
    out.reached = reached;
    const bool uncertified = capped || k > max_samples;
    if (!reached && std::isfinite(best_cost)) {
        const Pose found = best;
        for (auto &entry : pool) {
            if (!uncertified && rotation_apart(entry.second.R, found.R) < kRivalDegrees) continue;
            Pose optimised = entry.second;
            double optimised_cost = std::min(entry.first, local_optimisation(x, tau2, optimised, random));
            if (optimised_cost < best_cost) {
                out.runners_up.push_back(best);
                best = optimised;
                best_cost = optimised_cost;
            } else {
                out.runners_up.push_back(optimised);
            }
        }
    }
    out.pose = best;
    out.cost = best_cost;
    out.samples = solved;
    out.drawn = k;
    out.screened = screen.on();
    out.certified = std::isfinite(best_cost) && !capped;
    return out;
}

// The Sampson error cannot tell the four poses of one essential matrix apart: keep the one that puts the
// most inliers in front of both cameras.
Pose most_in_front(const Pose &pose, const Bearings &x, double tau2) {
    cv::Matx33d E = pose.essential();
    std::vector<size_t> within;
    within_threshold(E, x, tau2, within);
    Pose best = pose;
    int best_count = -1;
    for (const Pose &candidate : decompositions(E)) {
        int count = 0;
        for (size_t i : within) count += in_front(candidate, x.a[i], x.b[i]);
        // Ties (no parallax) keep the rotation closest to the estimate's.
        if (count > best_count || (count == best_count && cv::trace(candidate.R.t() * pose.R) > cv::trace(best.R.t() * pose.R))) {
            best = candidate;
            best_count = count;
        }
    }
    return best;
}

// At least 80 % of the pose's inliers in front of both cameras (the gate's rule for a pose with parallax).
bool consistent(const Pose &pose, const Bearings &x, double tau2) {
    std::vector<size_t> within;
    within_threshold(pose.essential(), x, tau2, within);
    size_t front = 0;
    for (size_t i : within) front += in_front(pose, x.a[i], x.b[i]);
    return double(front) >= 0.8 * double(within.size());
}

// The sensor-guided search, for a weak pose and the phone's rotation. A phone's attitude errs mostly in heading,
// a turn about the vertical: with both attitudes off in heading, the relative rotation is R_prior turned about
// the vertical in the reference camera's axes (`axis`). The search takes it as R_prior Qᵀ Ry(φ) Q, where Q turns
// the axis onto y and |φ| is up to `degrees`, which leaves three unknowns (φ and t's direction) and three-point
// samples, drawn far more often all-inlier than five-point ones (at 15 % inliers, 1 in 300 against 1 in 13,000).
// For a sample, with a' = Q a, b' = Q R_priorᵀ b and v_i(φ) = Ry(φ) a'_i × b'_i, every v_i is orthogonal to
// t' = Q R_priorᵀ t, so det[v_1 v_2 v_3] vanishes at the true φ: its roots on [-degrees, degrees] are bracketed on
// a grid and bisected. Each model is scored by MSAC; the best, optimised on every correspondence (all five degrees of
// freedom, so a tilted phone's pose is still reached when its hypothesis is near), is returned, or cost
// HUGE_VAL when no sample gave one.
struct Guided {
    Pose pose;
    double cost = HUGE_VAL;
};

cv::Matx33d turn_about_y(double angle) {
    const double c = std::cos(angle), s = std::sin(angle);
    return cv::Matx33d(c, 0, s, 0, 1, 0, -s, 0, c);
}

// A rotation taking the unit vector u onto y: its rows are an orthonormal, right-handed basis with u second.
cv::Matx33d onto_y(const cv::Vec3d &u) {
    const cv::Vec3d helper = std::abs(u[0]) < 0.9 ? cv::Vec3d(1, 0, 0) : cv::Vec3d(0, 0, 1);
    const cv::Vec3d first = cv::normalize(u.cross(helper)), third = first.cross(u);
    return cv::Matx33d(first[0], first[1], first[2], u[0], u[1], u[2], third[0], third[1], third[2]);
}

Guided guided_search(const Bearings &x, const cv::Matx33d &prior, const cv::Vec3d &axis, double degrees, double tau2, long max_samples,
                     uint64_t seed) {
    Guided out;
    const size_t n = x.size();
    if (n < 3 || !(degrees > 0)) return out;
    const double limit = degrees / kDegrees;
    const cv::Matx33d Q = onto_y(cv::normalize(axis)), to_camera = prior * Q.t();
    std::vector<cv::Vec3d> a(n), b(n);
    for (size_t i = 0; i < n; ++i) {
        a[i] = Q * x.a[i];
        b[i] = to_camera.t() * x.b[i];
    }
    std::mt19937_64 random(seed);
    std::uniform_int_distribution<size_t> pick(0, n - 1);
    constexpr int kGrid = 16;  // intervals on [-degrees, degrees]: roots closer than this apart are rare
    // Three noisy points fix the turn and the translation loosely: an all-inlier sample's model may score below
    // a chance alignment until it is optimised. The best kPool minimal models are all optimised at the end.
    // (Strecha 1->7 at 1280 px: the best minimal model optimised to 8 inliers; the right pose, 3° from the
    // sensor, has 11.)
    constexpr size_t kPool = 16;
    std::vector<std::pair<double, Pose>> pool;
    auto bound = [&] { return pool.size() < kPool ? HUGE_VAL : pool.back().first; };
    for (long k = 0; k < max_samples; ++k) {
        size_t index[3];
        for (int i = 0; i < 3; ++i) index[i] = rp::draw_unlike(random, pick, index, i);
        auto normals = [&](double angle, cv::Vec3d v[3]) {
            const cv::Matx33d turn = turn_about_y(angle);
            for (int i = 0; i < 3; ++i) v[i] = (turn * a[index[i]]).cross(b[index[i]]);
        };
        auto det = [&](double angle) {
            cv::Vec3d v[3];
            normals(angle, v);
            return v[0].dot(v[1].cross(v[2]));
        };
        double previous_angle = -limit, previous = det(-limit);
        for (int g = 1; g <= kGrid; ++g) {
            const double angle = -limit + 2 * limit * g / kGrid;
            const double value = det(angle);
            if (!(previous * value <= 0) || !std::isfinite(value)) {
                previous_angle = angle;
                previous = value;
                continue;
            }
            double lo = previous_angle, hi = angle, f_lo = previous;
            for (int step = 0; step < 40 && hi - lo > 1e-12; ++step) {
                const double mid = 0.5 * (lo + hi), f_mid = det(mid);
                if ((f_lo <= 0) == (f_mid <= 0)) {
                    lo = mid;
                    f_lo = f_mid;
                } else {
                    hi = mid;
                }
            }
            previous_angle = angle;
            previous = value;
            const double root = 0.5 * (lo + hi);
            cv::Vec3d v[3];
            normals(root, v);
            cv::Vec3d t = v[0].cross(v[1]);
            if (cv::norm(t) < 1e-9) t = v[0].cross(v[2]);
            if (!(cv::norm(t) > 1e-12)) continue;
            Pose candidate;
            candidate.R = to_camera * turn_about_y(root) * Q;
            candidate.t = cv::normalize(to_camera * t);
            for (double sign : {1.0, -1.0}) {
                Pose signed_pose = candidate;
                signed_pose.t *= sign;
                bool front = true;
                for (int i = 0; i < 3 && front; ++i) front = in_front(signed_pose, x.a[index[i]], x.b[index[i]]);
                if (!front) continue;
                const double cost = msac_cost(signed_pose.essential(), x, tau2, bound());
                if (cost < bound()) {
                    auto at = std::upper_bound(pool.begin(), pool.end(), cost, [](double c, const auto &e) { return c < e.first; });
                    pool.insert(at, {cost, signed_pose});
                    if (pool.size() > kPool) pool.pop_back();
                }
            }
        }
    }
    // Optimised in all five degrees of freedom, the best that stays within `degrees` of the prior: the search
    // exists to find the pose near it. A three-point model can sit a pixel or two off most of its inliers, so
    // the optimisation starts widened.
    for (auto &[cost, pose] : pool) {
        Pose optimised = pose;
        widen(x, tau2, optimised);
        const double optimised_cost = std::min(cost, local_optimisation(x, tau2, optimised, random));
        const Pose &kept = optimised_cost < cost ? optimised : pose;
        if (optimised_cost < out.cost && rotation_apart(kept.R, prior) <= degrees) {
            out.cost = optimised_cost;
            out.pose = kept;
        }
    }
    return out;
}

// A second, shorter search (another seed) when the first spent its budget without certifying its answer:
// if it finds a different pose with a lower cost, the first search had not converged and neither answer
// can be trusted. A second search that lands in a worse basin says nothing: it is weaker by design.
Pose lo_msac(const Bearings &x, const rp_robust_params &params, double tau, int &iterations, std::vector<Pose> &runners_up) {
    const long budget = std::max(1, params.max_iterations);
    Search first = lo_msac_once(x, params, tau, params.seed, budget);
    iterations = int(first.samples);
    if (!std::isfinite(first.cost)) {
        // A screen that turned every draw away is named: its bounds, not the matches, may be what failed.
        const std::string screened = first.screened
            ? cv::format(" (the sample screen passed %ld of %ld draws: pose.screenDegrees %g, pose.screenOctaves %g)", first.samples,
                         first.drawn, params.screen_degrees, params.screen_octaves)
            : std::string();
        rp::fail(RP_ERR_ESTIMATION, cv::format("no essential matrix found from %zu matches in %ld samples%s", x.size(), first.samples, screened.c_str()));
    }
    runners_up = first.runners_up;
    if (!(params.max_disagreement_degrees > 0) || first.certified) return first.pose;
    Search second = lo_msac_once(x, params, tau, params.seed ^ 0x9E3779B97F4A7C15ULL, std::max(1L, budget / 2));
    iterations += int(second.samples);
    if (!(second.cost < first.cost)) return first.pose;
    double c = (cv::trace(first.pose.R.t() * second.pose.R) - 1) / 2;
    double angle = std::acos(std::max(-1.0, std::min(1.0, c))) * kDegrees;
    double t_angle = std::acos(std::max(-1.0, std::min(1.0, first.pose.t.dot(second.pose.t)))) * kDegrees;
    if (angle > params.max_disagreement_degrees || t_angle > 5 * params.max_disagreement_degrees) {
        rp::fail(RP_ERR_ESTIMATION,
                 cv::format("unstable: a second search found a better pose %.1f° away in rotation and %.1f° in translation "
                            "(%ld + %ld samples, too few inliers to certify either; pose.maxDisagreement %g°)",
                            angle, t_angle, first.samples, second.samples, params.max_disagreement_degrees));
    }
    runners_up.push_back(first.pose);
    return second.pose;
}

// OpenCV's estimators (findEssentialMat + recoverPose), kept for comparison.
Pose opencv_pose(const Bearings &x, const rp_robust_params &params, double tau) {
    std::vector<cv::Point2d> a, b;
    for (size_t i = 0; i < x.size(); ++i) {
        a.emplace_back(x.a[i][0], x.a[i][1]);
        b.emplace_back(x.b[i][0], x.b[i][1]);
    }
    cv::Mat I = cv::Mat::eye(3, 3, CV_64F), mask;
    cv::Mat E_all = cv::findEssentialMat(a, b, I, params.method, params.confidence, tau, params.max_iterations, mask);
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

// log10 of the expected number of inlier sets this large among `samples` models fitted to matches with no
// geometric relation: a match lands within τ of a random epipolar line with probability p ≈ 2τ / fov.
double log10_chance(int n, int inliers, double p, long samples) {
    int trials = n - 5, hits = inliers - 5;
    if (hits <= 0) return 0;
    if (hits > trials) hits = trials;
    p = std::min(std::max(p, 1e-12), 1.0 - 1e-12);
    // Upper binomial tail, summed in the log domain from its largest term.
    double log_tail = -HUGE_VAL;
    for (int k = hits; k <= trials; ++k) {
        double term = std::lgamma(trials + 1.0) - std::lgamma(k + 1.0) - std::lgamma(trials - k + 1.0) + k * std::log(p) +
                      (trials - k) * std::log1p(-p);
        double hi = std::max(log_tail, term), lo = std::min(log_tail, term);
        log_tail = hi + std::log1p(std::exp(lo - hi));
        if (term < log_tail - 40) break;
    }
    return std::min(0.0, (log_tail + std::log(double(std::max(1L, samples)))) / std::log(10.0));
}

// Rotation-only model on the selected correspondences: orthogonal Procrustes on unit bearings.
cv::Matx33d procrustes(const Bearings &x, const std::vector<uint8_t> &selected) {
    cv::Matx33d M = cv::Matx33d::zeros();
    for (size_t i = 0; i < x.size(); ++i) {
        if (!selected[i]) continue;
        M += cv::normalize(x.b[i]) * cv::normalize(x.a[i]).t();
    }
    cv::Matx31d w;
    cv::Matx33d U, Vt;
    cv::SVD::compute(M, w, U, Vt, cv::SVD::FULL_UV);
    cv::Matx33d D = cv::Matx33d::eye();
    D(2, 2) = cv::determinant(U * Vt) < 0 ? -1 : 1;
    return U * D * Vt;
}

// A point refutes a model when it lies this many thresholds from it: noise at the threshold's edge does not.
constexpr double kRefuting = 3;

// On a plane the essential matrix has two solutions that fit every point on it: the homography's two
// decompositions. Only points off the plane tell them apart. Sets `refutation` to the inliers of `pose` that
// the other solution (the decomposition furthest from `pose`, refined) rejects, minus the correspondences it
// accepts and `pose` rejects. False when there is no other solution: every decomposition is (or refines back
// to) `pose`, within `same_degrees` in rotation and 5 times that in translation. `twin` receives the other solution.
bool twin_refutation(const cv::Matx33d &H, const Bearings &x, double tau2, const Pose &pose, double same_degrees, int &refutation,
                     Pose &twin) {
    std::vector<cv::Mat> rotations, translations, normals;
    try {
        cv::decomposeHomographyMat(cv::Mat(H), cv::Mat::eye(3, 3, CV_64F), rotations, translations, normals);
    } catch (const cv::Exception &) {
        return false;  // a homography OpenCV cannot decompose offers no second solution
    }
    double furthest = -1;
    for (size_t k = 0; k < rotations.size(); ++k) {
        cv::Vec3d t(translations[k]);
        if (!(cv::norm(t) > 1e-12)) continue;
        Pose candidate;
        candidate.R = cv::Matx33d(rotations[k]);
        candidate.t = cv::normalize(t);
        const Separation apart = separation(candidate, pose);
        if (std::max(apart.rotation, apart.translation / 5) > furthest) {
            furthest = std::max(apart.rotation, apart.translation / 5);
            twin = candidate;
        }
    }
    if (furthest < 0) return false;
    refine(x, tau2, twin, 10);
    const Separation apart = separation(twin, pose);
    if (apart.rotation < same_degrees && apart.translation < 5 * same_degrees) return false;
    const cv::Matx33d Eo = pose.essential(), Et = twin.essential();
    int refuted = 0, taken = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        double ro = sampson(Eo, x.a[i], x.b[i]), rt = sampson(Et, x.a[i], x.b[i]);
        ro *= ro;
        rt *= rt;
        refuted += ro < tau2 && rt > kRefuting * kRefuting * tau2;
        taken += rt < tau2 && ro > kRefuting * kRefuting * tau2;
    }
    refutation = refuted - taken;
    return true;
}

double median(std::vector<double> values) {
    if (values.empty()) return 0;
    auto middle = values.begin() + long(values.size() / 2);
    std::nth_element(values.begin(), middle, values.end());
    return *middle;
}

// The final polish: Levenberg-Marquardt on a Cauchy loss, Σ s² log(1 + r²/s²), of the Sampson errors of the
// correspondences within the threshold, with s = `scale` times their robust noise (1.4826 × median |r|, at least
// 0.1 px as GRIC's), as PoseLib ends its estimate: the truncated quadratic weighs every inlier alike up to the
// threshold, a Cauchy loss trusts the closest points most. Optional (pose.cauchyScale; the measurements are in
// docs/configuration.md). A local step only: a move of 5° or more in rotation (25° in translation) is not taken.
void polish(const Bearings &x, double tau2, double scale, double floor, Pose &pose) {
    if (!(scale > 0)) return;
    std::vector<size_t> use;
    within_threshold(pose.essential(), x, tau2, use);
    if (use.size() < 6) return;
    // The inliers at the start, kept as the pose moves (the normal equations below see them all).
    Bearings in;
    in.avx2 = x.avx2;
    for (size_t i : use) in.add(x.a[i], x.b[i]);
    std::vector<double> magnitudes;
    const cv::Matx33d E0 = pose.essential();
    for (size_t i = 0; i < in.size(); ++i) magnitudes.push_back(std::abs(sampson(E0, in.a[i], in.b[i])));
    const double s = scale * std::max(1.4826 * median(magnitudes), floor), s2 = s * s;
    auto cost = [&](const Pose &candidate) {
        const cv::Matx33d E = candidate.essential();
        double total = 0;
        for (size_t i = 0; i < in.size(); ++i) {
            const double r = sampson(E, in.a[i], in.b[i]);
            total += s2 * std::log1p(r * r / s2);
        }
        return total;
    };
    const Pose start = pose;
    double current = cost(pose), lambda = 1e-3;
    for (int it = 0; it < 30; ++it) {
        const TangentBasis basis(pose.t);
        const NormalEquations normal = normal_equations(Linearisation(pose, basis), in, HUGE_VAL, s2);
        bool converged = false;
        if (!damped_step(symmetric(normal.JtJ), cv::Matx<double, 5, 1>(normal.Jtr), basis, cost, pose, current, lambda, converged) || converged) break;
    }
    const double turned = rotation_apart(pose.R, start.R);
    const double shifted = std::acos(std::max(-1.0, std::min(1.0, pose.t.dot(start.t)))) * kDegrees;
    if (!(turned < kRivalDegrees / 2 && shifted < 2.5 * kRivalDegrees)) pose = start;
}

// The plane of `pose`'s inliers, if they lie on one (`planar_fit`, `H`), fitted to at most kGricFitPoints of
// them, evenly spread through the list (measured: on 3,500 inliers the full fit was a fifth of the estimator's
// time), robustly (the essential inliers include mismatches that merely lie along their epipolar lines).
void fit_plane(const Bearings &x, double tau2, double transfer_tau, uint64_t seed, const Pose &pose, cv::Matx33d &H, bool &planar_fit) {
    constexpr size_t kGricFitPoints = 250;
    std::vector<size_t> supporting;
    within_threshold(pose.essential(), x, tau2, supporting);
    std::vector<cv::Point2d> pa, pb;
    const size_t stride = std::max<size_t>(1, (supporting.size() + kGricFitPoints - 1) / kGricFitPoints);
    for (size_t k = 0; k < supporting.size(); k += stride) {
        pa.emplace_back(x.a[supporting[k]][0], x.a[supporting[k]][1]);
        pb.emplace_back(x.b[supporting[k]][0], x.b[supporting[k]][1]);
    }
    H = cv::Matx33d::eye();
    // 500 samples find a plane holding 30 % of the inliers with probability 0.98; a smaller plane loses to the
    // essential matrix in GRIC whatever homography is fitted to it.
    planar_fit = pa.size() >= 4 && rp::plane_homography(pa, pb, transfer_tau, 500, 0.999, seed, H);
}

// Fits the plane of `pose`'s inliers; then, on a plane, the search may have ended in the wrong one of the
// plane's two solutions, and local optimisation does not cross to the other (a synthetic 60° orbit, 179
// matches: 44° wrong with 84 inliers and a 10^-150 chance, where the other solution, refined, held 93). The
// other solution, refined, replaces the pose when the points off the plane favour it and it fits better; the
// replaced pose joins `rivals`, and the plane is fitted again. True when it replaced the pose.
bool plane_twin_check(const Bearings &x, double tau, const rp_robust_params &params, Pose &pose, double &pose_cost,
                      std::vector<std::pair<double, Pose>> &rivals, cv::Matx33d &H, bool &planar_fit) {
    const double tau2 = tau * tau, transfer_tau = tau * RP_TRANSFER_PER_SAMPSON;
    fit_plane(x, tau2, transfer_tau, params.seed, pose, H, planar_fit);
    if (params.method != RP_METHOD_LO_MSAC || !planar_fit) return false;
    int refutation = 0;
    Pose other;
    if (!twin_refutation(H, x, tau2, pose, 0.5, refutation, other) || refutation >= 0) return false;
    if (params.refine) refine(x, tau2, other, 50);
    const double cost = msac_cost(other.essential(), x, tau2);
    if (!(cost < pose_cost)) return false;
    rivals.emplace_back(pose_cost, pose);
    pose = other;
    pose_cost = cost;
    fit_plane(x, tau2, transfer_tau, params.seed, pose, H, planar_fit);
    return true;
}

}  // namespace

namespace rp {

bool plane_twin_check_for_tests(const std::vector<cv::Vec3d> &a, const std::vector<cv::Vec3d> &b, double tau, const rp_robust_params &params,
                                cv::Matx33d &R, cv::Vec3d &t) {
    Bearings x;
    for (size_t i = 0; i < a.size(); ++i) x.add(a[i], b[i]);
    x.avx2 = has_avx2() && !params.portable_kernels;
    Pose pose;
    pose.R = R;
    pose.t = cv::normalize(t);
    double cost = msac_cost(pose.essential(), x, tau * tau);
    std::vector<std::pair<double, Pose>> rivals;
    cv::Matx33d H;
    bool planar = false;
    const bool replaced = plane_twin_check(x, tau, params, pose, cost, rivals, H, planar);
    R = pose.R;
    t = pose.t;
    return replaced;
}

double sampson_cost_for_tests(const cv::Matx33d &E, const std::vector<cv::Vec3d> &a, const std::vector<cv::Vec3d> &b, double tau2,
                              bool portable, int &within) {
    Bearings x;
    for (size_t i = 0; i < a.size(); ++i) x.add(a[i], b[i]);
    x.avx2 = has_avx2() && !portable;
    std::vector<size_t> found;
    within_threshold(E, x, tau2, found);
    within = int(found.size());
    return msac_cost(E, x, tau2);
}

void estimate_relative_pose(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current,
                            const rp_camera &reference_camera, const rp_camera &current_camera,
                            const rp_robust_params &params, rp_relative_pose &out, std::vector<uint8_t> &inliers,
                            std::vector<double> *sampson_pixels, const float *reference_frames, const float *current_frames) {
    const size_t n = reference.size();
    if (n < 5) fail(RP_ERR_ESTIMATION, cv::format("essential matrix needs at least 5 matches, got %zu", n));
    for (const auto *points : {&reference, &current}) {
        for (size_t i = 0; i < n; ++i) {
            if (!std::isfinite((*points)[i].x) || !std::isfinite((*points)[i].y)) {
                fail(RP_ERR_INVALID_ARGUMENT, cv::format("%s point %zu is not finite", points == &reference ? "reference" : "current", i));
            }
        }
    }
    if (!(params.threshold > 0)) fail(RP_ERR_INVALID_ARGUMENT, cv::format("threshold must be positive, got %g", params.threshold));
    if (!(params.confidence > 0 && params.confidence < 1)) {
        fail(RP_ERR_INVALID_ARGUMENT, cv::format("confidence must be in (0, 1), got %g", params.confidence));
    }
    if (params.prior_degrees > 0) {
        // A sanity bound, not a precision one: products of rotations valid to 1e-6 stay far inside it.
        const cv::Matx33d prior(params.prior_R);
        const double off = cv::norm(prior * prior.t() - cv::Matx33d::eye());
        if (!(off < 1e-3 && cv::determinant(prior) > 0) || !std::isfinite(params.prior_degrees) || !(params.prior_excess >= 0)) {
            fail(RP_ERR_INVALID_ARGUMENT, cv::format("prior must be a rotation with finite degrees and excess >= 0 (degrees %g, excess %g, |R Rt - I| %g)",
                                                     params.prior_degrees, params.prior_excess, off));
        }
    }
    if (params.reproductions < 0 || params.reproductions > 64 || params.reproduce_misses < 0 || params.reproduce_misses > 64 ||
        std::isnan(params.reproduce_above_log10_chance) ||
        std::isnan(params.reproduce_max_log10_chance) || !(params.reproduce_degrees >= 0 && params.reproduce_degrees <= 180)) {
        fail(RP_ERR_INVALID_ARGUMENT, cv::format("reproductions and misses must be 0...64 with chance bounds that are numbers and degrees in 0...180 (got %d, %d, %g, %g, %g)",
                                                 params.reproductions, params.reproduce_misses, params.reproduce_above_log10_chance,
                                                 params.reproduce_max_log10_chance, params.reproduce_degrees));
    }
    const double axis_length = std::hypot(params.prior_axis[0], params.prior_axis[1], params.prior_axis[2]);
    if (params.guided_samples < 0 || params.guided_min_inliers < 0 || std::isnan(params.guided_above_log10_chance) ||
        (params.guided_samples > 0 && params.prior_degrees > 0 && !(axis_length > 1e-6 && std::isfinite(axis_length)))) {
        fail(RP_ERR_INVALID_ARGUMENT, cv::format("guided samples and inliers must be 0 or more, with a chance bound that is a number and a finite, "
                                                 "non-zero axis (got %d, %d, %g, |axis| %g)",
                                                 params.guided_samples, params.guided_min_inliers, params.guided_above_log10_chance, axis_length));
    }
    if (!(params.cauchy_scale >= 0 && std::isfinite(params.cauchy_scale))) {
        fail(RP_ERR_INVALID_ARGUMENT, cv::format("cauchy scale must be finite and >= 0, got %g", params.cauchy_scale));
    }
    if (!(params.screen_degrees >= 0 && params.screen_degrees <= 360 && params.screen_octaves >= 0 && std::isfinite(params.screen_octaves))) {
        fail(RP_ERR_INVALID_ARGUMENT, cv::format("screen must be 0...360 degrees and finite octaves >= 0 (got %g, %g)",
                                                 params.screen_degrees, params.screen_octaves));
    }
    Bearings x = undistorted(reference, current, reference_camera, current_camera);
    x.avx2 = has_avx2() && !params.portable_kernels;
    if (reference_frames && current_frames && params.method == RP_METHOD_LO_MSAC && params.screen_degrees > 0) {
        for (size_t i = 0; i < n; ++i) {
            const float ra = reference_frames[2 * i], rs = reference_frames[2 * i + 1];
            const float ca = current_frames[2 * i], cs = current_frames[2 * i + 1];
            // A detector without orientations (angle -1) or an odd keypoint: no screen rather than a wrong one.
            if (!(ra >= 0 && ca >= 0 && std::isfinite(ra) && std::isfinite(ca) && rs > 0 && cs > 0 && std::isfinite(rs) && std::isfinite(cs))) {
                x.turn.clear();
                x.zoom.clear();
                break;
            }
            x.turn.push_back(double(ca - ra) / kDegrees);
            x.zoom.push_back(std::log2(double(cs) / double(rs)));
        }
    }
    const double focal = 0.25 * (reference_camera.K[0] + reference_camera.K[4] + current_camera.K[0] + current_camera.K[4]);
    const double tau = params.threshold / focal, tau2 = tau * tau;

    int iterations = 0;
    std::vector<Pose> runners_up;
    Pose pose = params.method == RP_METHOD_LO_MSAC ? lo_msac(x, params, tau, iterations, runners_up) : opencv_pose(x, params, tau);
    if (params.refine) refine(x, tau2, pose, 50);
    // The runners-up, refined alike: one that now fits better is the answer; the rest are its rivals.
    double pose_cost = msac_cost(pose.essential(), x, tau2);
    std::vector<std::pair<double, Pose>> rivals;
    for (Pose other : runners_up) {
        if (params.refine) refine(x, tau2, other, 20);
        double cost = msac_cost(other.essential(), x, tau2);
        if (cost < pose_cost) {
            std::swap(other, pose);
            std::swap(cost, pose_cost);
        }
        rivals.emplace_back(cost, other);
    }
    // A prior that rules the pose out and backs a runner-up nearly as good: the prior decides between them. Only
    // a runner-up with the inliers to stand on its own (guided_min_inliers): on a weak pair a stray model a few
    // inliers short of the pose is as near, and a prior off by 20° picked one (7 inliers against the pose's 11).
    if (params.method == RP_METHOD_LO_MSAC && params.prior_degrees > 0) {
        const cv::Matx33d prior(params.prior_R);
        if (rotation_apart(pose.R, prior) > 2 * params.prior_degrees) {
            auto pick = rivals.end();
            for (auto it = rivals.begin(); it != rivals.end(); ++it) {
                if (!((it->first - pose_cost) / tau2 < params.prior_excess)) continue;
                if (!(rotation_apart(it->second.R, prior) <= params.prior_degrees)) continue;
                if (count_within(it->second.essential(), x, tau2) < params.guided_min_inliers) continue;
                // And one its own inliers can stand in front of (the gate's 80 %): on a bare wall a runner-up at the
                // plane's other rotation put 146 of its 274 behind a camera, and the swap turned a planar answer
                // into a failure.
                if (!consistent(most_in_front(it->second, x, tau2), x, tau2)) continue;
                if (pick == rivals.end() || it->first < pick->first) pick = it;
            }
            if (pick != rivals.end()) {
                std::swap(pick->second, pose);
                std::swap(pick->first, pose_cost);
            }
        }
    }
    // A random epipolar line crosses the current image over about its diagonal: p = 2τ·diagonal / area.
    const double w = current_camera.width > 0 ? current_camera.width : 2 * current_camera.K[2];
    const double h = current_camera.height > 0 ? current_camera.height : 2 * current_camera.K[5];
    const double p = 2 * params.threshold * std::hypot(w, h) / std::max(w * h, 1.0);
    long models = params.method == RP_METHOD_LO_MSAC ? iterations : params.max_iterations;
    // A pose too weak to stand alone, with the phone's rotation: the search may have missed the basin the prior
    // points to (a weak pair's all-inlier sample is rare), so the guided search looks there. Its pose, when
    // within the prior, replaces one the prior rules out, or another answer it fits better; the replaced pose
    // becomes its rival (the gate weighs the two with the sensor).
    bool guided = false;
    if (params.method == RP_METHOD_LO_MSAC && params.prior_degrees > 0 && params.guided_samples > 0 &&
        log10_chance(int(n), count_within(pose.essential(), x, tau2), p, models) > params.guided_above_log10_chance) {
        const cv::Matx33d prior(params.prior_R);
        const cv::Vec3d axis(params.prior_axis[0], params.prior_axis[1], params.prior_axis[2]);
        Guided found = guided_search(x, prior, axis, params.prior_degrees, tau2, params.guided_samples, params.seed ^ 0x6A09E667F3BCC909ULL);
        models += params.guided_samples;
        if (std::isfinite(found.cost)) {
            if (params.refine) refine(x, tau2, found.pose, 50);
            found.cost = msac_cost(found.pose.essential(), x, tau2);
            // One with too few inliers to pass the gate would only hide the pose's own reason for failing. A pose
            // the prior backs is kept unless the guided one is another answer (a rival's distance away) that fits
            // better: found independently of the sensor, its agreement with it is evidence; the guided one's is not.
            const Separation apart = separation(found.pose, pose);
            if (rotation_apart(found.pose.R, prior) <= params.prior_degrees &&
                count_within(found.pose.essential(), x, tau2) >= params.guided_min_inliers &&
                (rotation_apart(pose.R, prior) > params.prior_degrees ||
                 (found.cost < pose_cost && std::max(apart.rotation, apart.translation) >= kRivalDegrees))) {
                rivals.emplace_back(pose_cost, pose);
                pose = found.pose;
                pose_cost = found.cost;
                guided = true;
            }
        }
    }
    // The plane of the pose's inliers (for GRIC below), and the plane's other solution when it fits better.
    const double transfer_tau = tau * RP_TRANSFER_PER_SAMPSON;
    cv::Matx33d Hp = cv::Matx33d::eye();
    bool planar_fit = false;
    if (plane_twin_check(x, tau, params, pose, pose_cost, rivals, Hp, planar_fit)) guided = false;  // the plane's, not the guided search's
    pose = most_in_front(pose, x, tau2);
    if (params.refine && params.method == RP_METHOD_LO_MSAC) polish(x, tau2, params.cauchy_scale, 0.1 / focal, pose);

    // Inliers: within the threshold. Cheirality is counted apart: without parallax (a pure rotation) every
    // depth is noise, and the rotation is still well determined by all of them.
    cv::Matx33d E = pose.essential();
    inliers.assign(n, 0);
    if (sampson_pixels) sampson_pixels->assign(n, 0);
    int within = 0, front = 0;
    double sum = 0;
    std::vector<double> parallax, magnitudes;
    for (size_t i = 0; i < n; ++i) {
        double r = sampson(E, x.a[i], x.b[i]);
        if (sampson_pixels) (*sampson_pixels)[i] = std::abs(r) * focal;
        if (r * r >= tau2) continue;
        ++within;
        sum += r * r;
        inliers[i] = 1;
        front += in_front(pose, x.a[i], x.b[i]);
        cv::Vec3d u = cv::normalize(pose.R * x.a[i]), v = cv::normalize(x.b[i]);
        parallax.push_back(std::atan2(cv::norm(u.cross(v)), u.dot(v)) * kDegrees);
        magnitudes.push_back(std::abs(r));
    }
    if (within < 5) fail(RP_ERR_ESTIMATION, cv::format("the essential matrix explains only %d of %zu matches", within, n));

    // Uncertainty: the inverse Gauss-Newton Hessian of the inliers' Sampson errors, scaled by their variance.
    // (The inliers by the kernel's own residuals, which may differ from `inliers` in the last bit.)
    const cv::Matx<double, 5, 5> H = symmetric(normal_equations(Linearisation(pose, TangentBasis(pose.t)), x, tau2).JtJ);
    double variance = within > 5 ? sum / double(within - 5) : tau2;
    cv::Matx<double, 5, 5> covariance;
    double rotation_sigma = HUGE_VAL, translation_sigma = HUGE_VAL;
    if (within > 5 && cv::invert(H, covariance, cv::DECOMP_SVD) > 0) {
        covariance *= variance;
        cv::Matx33d Cr = covariance.get_minor<3, 3>(0, 0);
        cv::Matx22d Ct = covariance.get_minor<2, 2>(3, 3);
        cv::Matx31d er;
        cv::Matx21d et;
        cv::eigen(Cr, er);
        cv::eigen(Ct, et);
        rotation_sigma = std::sqrt(std::max(er(0), 0.0)) * kDegrees;
        translation_sigma = std::sqrt(std::max(et(0), 0.0)) * kDegrees;
    }

    // The best rival: a runner-up at least kRivalDegrees from the pose (rotation, or translation sign-free),
    // and how much worse it fits. Nearer runners-up are the same answer give or take its noise.
    double rival_excess = HUGE_VAL, rival_degrees = 0;
    cv::Matx33d rival_R = cv::Matx33d::eye();
    for (const auto &[cost, other] : rivals) {
        const Separation between = separation(other, pose);
        const double apart = std::max(between.rotation, between.translation);
        if (apart < kRivalDegrees) continue;
        if ((cost - pose_cost) / tau2 < rival_excess) {
            rival_excess = (cost - pose_cost) / tau2;
            rival_degrees = apart;
            rival_R = other.R;
        }
    }

    // Model selection (Torr's GRIC) between the essential matrix (a 3-D relation with 5 parameters in the
    // 4-D space of correspondences) and the homography fitted above (2-D, 8 parameters) on the essential
    // inliers, with the noise scale robustly estimated from their Sampson errors.
    double sigma = std::max(1.4826 * median(magnitudes), 0.1 / focal);
    auto transfer = [&](const cv::Matx33d &M, size_t i) {
        cv::Vec3d m = M * x.a[i];
        if (!(std::abs(m[2]) > 1e-12)) return HUGE_VAL;
        double dx = m[0] / m[2] - x.b[i][0], dy = m[1] / m[2] - x.b[i][1];
        return dx * dx + dy * dy;
    };
    const double r4 = 4, lambda3 = 2, nf = double(within);
    double gric_e = 0, gric_h = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!inliers[i]) continue;
        double s = sampson(E, x.a[i], x.b[i]) / sigma;
        gric_e += std::min(s * s, lambda3 * (r4 - 3));
        // Half of a transfer error is the correction in either image.
        gric_h += std::min(planar_fit ? transfer(Hp, i) / (2 * sigma * sigma) : HUGE_VAL, lambda3 * (r4 - 2));
    }
    // A decomposition within three sigma of the pose (or 0.5°) is the pose itself, not its other solution.
    int refutation = 0;
    Pose other_solution;
    const bool twin = planar_fit && twin_refutation(Hp, x, tau2, pose, std::max(0.5, 3 * rotation_sigma), refutation, other_solution);
    gric_e += std::log(r4) * 3 * nf + 5 * std::log(r4 * nf);
    gric_h += std::log(r4) * 2 * nf + 8 * std::log(r4 * nf);

    // The pure rotation that best explains the inliers (for rotation-only pairs): Procrustes, refitted on
    // those it transfers within the threshold.
    std::vector<uint8_t> selected = inliers;
    cv::Matx33d Rr = procrustes(x, selected);
    for (double factor : {16.0, 8.0, 4.0, 2.0, 1.0}) {  // shrinking: the first fit carries the mismatches
        int kept = 0;
        double limit = factor * transfer_tau;
        for (size_t i = 0; i < n; ++i) kept += selected[i] = inliers[i] && transfer(Rr, i) < limit * limit;
        if (kept < 3) break;
        Rr = procrustes(x, selected);
    }

    // The pure rotation as a model in GRIC's terms: a homography of 3 parameters instead of 8.
    double gric_r = 0;
    for (size_t i = 0; i < n; ++i)
        if (inliers[i]) gric_r += std::min(transfer(Rr, i) / (2 * sigma * sigma), lambda3 * (r4 - 2));
    gric_r += std::log(r4) * 2 * nf + 3 * std::log(r4 * nf);

    std::memcpy(out.R, pose.R.val, 9 * sizeof(double));
    for (int i = 0; i < 3; ++i) out.t[i] = pose.t[i];
    std::memcpy(out.rotation_only_R, Rr.val, 9 * sizeof(double));
    out.gric_rotation = gric_r;
    out.inliers = within;
    out.in_front = front;
    out.sampson_rms_pixels = within > 0 ? std::sqrt(sum / within) * focal : 0;
    out.iterations = iterations;
    out.rotation_sigma_degrees = rotation_sigma;
    out.translation_sigma_degrees = translation_sigma;
    out.parallax_degrees = median(parallax);
    out.noise_pixels = sigma * focal;
    out.gric_essential = gric_e;
    out.gric_homography = gric_h;
    out.rotation_support = 0;
    for (size_t i = 0; i < n; ++i) out.rotation_support += inliers[i] && transfer(Rr, i) < transfer_tau * transfer_tau;
    out.rival_excess = rival_excess;
    out.rival_degrees = rival_degrees;
    std::memcpy(out.rival_R, rival_R.val, 9 * sizeof(double));
    out.has_twin = twin;
    out.twin_refutation = twin ? refutation : 0;
    const cv::Matx33d twin_R = twin ? other_solution.R : cv::Matx33d::eye();
    std::memcpy(out.twin_R, twin_R.val, 9 * sizeof(double));
    // A guided pose was drawn from the guided search's models alone; the gate judges it on those (the sensor's
    // agreement is no evidence for it: that search looked only near the sensor).
    out.log10_chance = log10_chance(int(n), within, p, guided ? long(params.guided_samples) : models);
    out.guided = guided ? 1 : 0;

    // A weak pose that independent searches land on again is the data's answer, not the search's luck: on
    // a repetitive facade the wrong models scatter from seed to seed (Strecha 0->7 at full resolution: 9-154°
    // over 7 seeds) while the right ones recur (0->7 at 1280 px: within 2.9° of the truth in 8 of 8). Each
    // search stops once it reaches the pose's basin, at half the cap at most: a search that size draws an
    // all-inlier sample of 10 inliers among 49 matches only about half the time, so a few may miss (the
    // scattered wrong models make a second chance cheap to grant), and the test ends as soon as it is decided.
    out.reproductions = 0;
    out.reproduction_degrees = 0;
    if (params.method == RP_METHOD_LO_MSAC && !guided && params.reproductions > 0 && out.log10_chance > params.reproduce_above_log10_chance &&
        out.log10_chance <= params.reproduce_max_log10_chance) {
        const int required = params.reproductions, misses = std::max(0, params.reproduce_misses);
        std::vector<double> landed;
        int reached = 0, missed = 0;
        for (int k = 1; reached < required && missed <= misses && k <= required + misses; ++k) {
            Search again = lo_msac_once(x, params, tau, params.seed + uint64_t(k) * 0xD1B54A32D192ED03ULL,
                                        std::max(1, params.max_iterations / 2), &pose.R, params.reproduce_degrees);
            double apart = HUGE_VAL;
            if (std::isfinite(again.cost)) {
                Pose other = again.pose;
                if (!again.reached && params.refine) refine(x, tau2, other, 20);
                apart = rotation_apart(again.reached ? other.R : most_in_front(other, x, tau2).R, pose.R);
            }
            out.reproductions = k;
            landed.push_back(apart);
            if (apart <= params.reproduce_degrees) ++reached; else ++missed;
        }
        std::sort(landed.begin(), landed.end());
        out.reproduction_degrees = landed.size() >= size_t(required) ? landed[size_t(required) - 1] : HUGE_VAL;
    }
}

}  // namespace rp

extern "C" int rp_estimate_relative_pose(const double *reference_xy, const double *current_xy, int n,
                                         const rp_camera *reference_camera, const rp_camera *current_camera,
                                         const rp_robust_params *params, rp_relative_pose *pose, uint8_t *inliers,
                                         size_t inliers_capacity, double *sampson_pixels, size_t sampson_capacity,
                                         const float *reference_frames, const float *current_frames, rp_status *status) {
    return rp::guarded(status, [&] {
        rp::check_capacity(inliers, inliers_capacity, n, "inliers");
        rp::check_capacity(sampson_pixels, sampson_capacity, n, "sampson_pixels");
        std::vector<uint8_t> mask;
        std::vector<double> sampson;
        rp::estimate_relative_pose(rp::to_points(reference_xy, n), rp::to_points(current_xy, n), *reference_camera,
                                   *current_camera, *params, *pose, mask, &sampson, reference_frames, current_frames);
        if (inliers) std::memcpy(inliers, mask.data(), mask.size());
        if (sampson_pixels) std::memcpy(sampson_pixels, sampson.data(), sampson.size() * sizeof(double));
    });
}
