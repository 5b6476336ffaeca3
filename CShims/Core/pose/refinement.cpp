// Refinement of a relative pose on its five-dimensional tangent space: Levenberg-Marquardt on the MSAC cost of
// the Sampson errors (the final refinement, and the robust loop's local optimisation on a subset), and the
// polish on a Cauchy loss. The normal equations run in the scoring kernels' lanes (kernels.hpp).
#include "kernels.hpp"

#include <opencv2/calib3d.hpp>

namespace rp::pose {

namespace {

// The normal equations of one block of points, in the lanes of the scoring kernels. Measured: under a third of
// the scalar version's time. `Weighted`: each term carries the Cauchy weight (iteratively reweighted least
// squares for the polish).
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

// Local optimisation on at most this many inliers (Lebeda, Matas & Chum 2012 bound LO's cost the same way):
// it only has to reach the right basin, the final refinement uses every correspondence. Measured on 3,500
// matches, LO on all of them was most of the estimator's time.
constexpr size_t kLocalInliers = 256;

}  // namespace

NormalEquations normal_equations(const Linearisation &l, const Bearings &x, double tau2, double cauchy_s2) {
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

// Each step solves the normal equations of the correspondences currently within the threshold and is kept only
// if the truncated cost over all of them falls.
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

// The correspondences within 3 thresholds, then 2 (at most kLocalInliers, best first as the caller orders
// them), each refitted at its own threshold: the shrinking threshold of Lebeda, Matas & Chum's LO+.
void widen(const Bearings &x, double tau2, Pose &pose) {
    for (double factor : {9.0, 4.0}) {
        std::vector<size_t> within;
        within_threshold(pose.essential(), x, factor * tau2, within);
        if (within.size() < 5) return;
        within.resize(std::min(within.size(), kLocalInliers));
        refine(Bearings::subset(x, within), factor * tau2, pose, 10);
    }
}

// Two rounds of: the model's inliers (a seeded random subset when there are more than kLocalInliers),
// Levenberg-Marquardt on them, the cost on all correspondences.
double local_optimisation(const Bearings &x, double tau2, Pose &pose, std::mt19937_64 &random) {
    double cost = msac_cost(pose.essential(), x, tau2);
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
        Pose candidate = pose;
        refine(Bearings::subset(x, within), tau2, candidate, 10);
        double candidate_cost = msac_cost(candidate.essential(), x, tau2);
        if (!(candidate_cost < cost)) break;
        pose = candidate;
        cost = candidate_cost;
    }
    return cost;
}

// The loss is Σ s² log(1 + r²/s²) over the Sampson errors of the correspondences within the threshold, with s =
// `scale` times their robust noise, as PoseLib ends its estimate: the truncated quadratic weighs every inlier
// alike up to the threshold, a Cauchy loss trusts the closest points most (pose.cauchyScale; the measurements are
// in docs/decisions.md). A move of half a rival's separation or more in rotation (2.5 times it in
// translation) is not taken.
void polish(const Bearings &x, double tau2, double scale, double floor, Pose &pose) {
    if (!(scale > 0)) return;
    std::vector<size_t> use;
    within_threshold(pose.essential(), x, tau2, use);
    if (use.size() < 6) return;
    // The inliers at the start, kept as the pose moves (the normal equations below see them all).
    const Bearings in = Bearings::subset(x, use);
    std::vector<double> magnitudes;
    const cv::Matx33d E0 = pose.essential();
    for (size_t i = 0; i < in.size(); ++i) magnitudes.push_back(std::abs(sampson(E0, in.a[i], in.b[i])));
    const double s = scale * std::max(kMadToSigma * median(magnitudes), floor), s2 = s * s;
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

}  // namespace rp::pose
