// The focal length free while the inliers are chosen (focal.hpp): the six-point samples on the shared robust loop,
// scored by the scan's truncated Sampson residuals in both images' pixels, and the joint refinement of the rotation,
// the translation, the focal length and the principal point (under its prior) with its covariance.
#include "focal.hpp"

#include <opencv2/calib3d.hpp>

namespace rp::focal {

namespace {

// The signed Sampson residual in both images' pixels: `a` the reference's pixel about its principal point (z 1),
// `b` the current's calibrated bearing, (fx, fy) the current's focal lengths.
double signed_residual(const cv::Matx33d &E, double f, const cv::Vec3d &a, const cv::Vec3d &b, double fx, double fy) {
    const cv::Vec3d p(a[0] / f, a[1] / f, 1), Ep = E * p, Etb = E.t() * b;
    const double den = (Ep[0] / fx) * (Ep[0] / fx) + (Ep[1] / fy) * (Ep[1] / fy) + (Etb[0] / f) * (Etb[0] / f) + (Etb[1] / f) * (Etb[1] / f);
    return den > 0 ? b.dot(Ep) / std::sqrt(den) : 0;
}

// The current's calibrated bearings (z 1) of `pair`.
std::vector<cv::Vec3d> bearings(const Pair &pair) {
    std::vector<cv::Vec3d> out;
    for (const auto &q : pair.ideal) out.emplace_back(q.x / pair.s, q.y / pair.s, 1);
    return out;
}

}  // namespace

FreeFocalEstimator::FreeFocalEstimator(const Pair &pair, cv::Point2d principal, double threshold_pixels, double lo, double hi)
    : b_(bearings(pair)), fx_(pair.camera.K[0]), fy_(pair.camera.K[4]), tau2_(threshold_pixels * threshold_pixels),
      nominal_(std::sqrt(lo * hi)), lo_(lo), hi_(hi), screen_{none_, none_, 0, 0} {
    for (const auto &p : pair.reference) a_.emplace_back(p.x - principal.x, p.y - principal.y, 1);
}

int FreeFocalEstimator::generate(const size_t *sample, FocalPose *models) const {
    cv::Vec3d a[6], b[6];
    for (int i = 0; i < 6; ++i) a[i] = a_[sample[i]], b[i] = b_[sample[i]];
    return six_point_focal(a, b, nominal_, lo_, hi_, models);
}

double FreeFocalEstimator::residual2(const FocalPose &model, size_t i) const {
    const double r = signed_residual(model.pose.essential(), model.f, a_[i], b_[i], fx_, fy_);
    return r * r;
}

double FreeFocalEstimator::score(const FocalPose &model, double bound) const {
    const cv::Matx33d E = model.pose.essential();
    double cost = 0;
    for (size_t i = 0; i < a_.size(); ++i) {
        const double r = signed_residual(E, model.f, a_[i], b_[i], fx_, fy_);
        cost += std::min(r * r, tau2_);
        if ((i & 63) == 63 && cost > bound) return HUGE_VAL;
    }
    return cost;
}

void FreeFocalEstimator::inliers(const FocalPose &model, std::vector<size_t> &out) const {
    out.clear();
    const cv::Matx33d E = model.pose.essential();
    for (size_t i = 0; i < a_.size(); ++i) {
        const double r = signed_residual(E, model.f, a_[i], b_[i], fx_, fy_);
        const cv::Vec3d a(a_[i][0] / model.f, a_[i][1] / model.f, 1);
        if (r * r < tau2_ && pose::in_front(model.pose, a, b_[i])) out.push_back(i);
    }
}

// Two rounds of the joint refinement (principal point held) on the model's inliers; kept when the cost fell.
double FreeFocalEstimator::optimise(FocalPose &model, std::mt19937_64 &) const {
    const double before = score(model, HUGE_VAL);
    FocalPose moved = model;
    std::vector<size_t> use;
    for (int round = 0; round < 2; ++round) {
        inliers(moved, use);
        if (use.size() < 8) break;
        JointParams params;
        params.iterations = 8;
        moved = refine_joint(a_, b_, fx_, fy_, use, moved, cv::Point2d(0, 0), params).model;
        if (!(moved.f >= lo_ && moved.f <= hi_)) return before;
    }
    const double after = score(moved, HUGE_VAL);
    if (after < before) model = moved;
    return std::min(before, after);
}

// ---------------------------------------------------------------- the joint refinement

namespace {

constexpr int kJointParameters = 8;  // rotation (3), translation (2), log f, cx, cy
using Vec8 = cv::Vec<double, kJointParameters>;

// The model moved by `d`: the rotation left-multiplied, the translation in its tangent plane, f by exp, the principal
// point in pixels.
void apply(const FocalPose &model, cv::Point2d principal, const Vec8 &d, FocalPose &out, cv::Point2d &moved) {
    cv::Matx33d turn;
    cv::Rodrigues(cv::Vec3d(d[0], d[1], d[2]), turn);
    const pose::TangentBasis basis(model.pose.t);
    out.pose.R = turn * model.pose.R;
    out.pose.t = cv::normalize(model.pose.t + d[3] * basis.e1 + d[4] * basis.e2);
    out.f = model.f * std::exp(d[5]);
    moved = principal + cv::Point2d(d[6], d[7]);
}

// The residuals of `use` at the model, the reference's points shifted by the principal point's move from the start.
struct JointProblem {
    const std::vector<cv::Vec3d> &a, &b;
    double fx, fy;
    const std::vector<size_t> &use;

    void residuals(const FocalPose &model, cv::Point2d shift, std::vector<double> &out) const {
        const cv::Matx33d E = model.pose.essential();
        out.resize(use.size());
        for (size_t k = 0; k < use.size(); ++k) {
            const cv::Vec3d &p = a[use[k]];
            out[k] = signed_residual(E, model.f, cv::Vec3d(p[0] - shift.x, p[1] - shift.y, 1), b[use[k]], fx, fy);
        }
    }
};

// The Jacobian (n x dims) of the residuals at (model, shift) by central differences.
cv::Mat jacobian(const JointProblem &problem, const FocalPose &model, cv::Point2d shift, int dims) {
    const double steps[kJointParameters] = {1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 1e-3, 1e-3};
    cv::Mat J((int)problem.use.size(), dims, CV_64F);
    std::vector<double> up, down;
    for (int k = 0; k < dims; ++k) {
        Vec8 d = Vec8::all(0);
        FocalPose m;
        cv::Point2d s;
        d[k] = steps[k];
        apply(model, shift, d, m, s);
        problem.residuals(m, s, up);
        d[k] = -steps[k];
        apply(model, shift, d, m, s);
        problem.residuals(m, s, down);
        for (int i = 0; i < J.rows; ++i) J.at<double>(i, k) = (up[i] - down[i]) / (2 * steps[k]);
    }
    return J;
}

// The normal equations of the residuals `r` and the prior (weight w on the principal point's move `shift`).
void normal_equations(const cv::Mat &J, const std::vector<double> &r, double w, cv::Point2d shift, cv::Mat &H, cv::Mat &g) {
    H = J.t() * J, g = J.t() * cv::Mat(r);
    if (J.cols == kJointParameters) {
        H.at<double>(6, 6) += w * w, H.at<double>(7, 7) += w * w;
        g.at<double>(6) += w * w * shift.x, g.at<double>(7) += w * w * shift.y;
    }
}

// The robust noise of residuals, pixels.
double robust_noise(const std::vector<double> &r) {
    std::vector<double> absolute(r.size());
    for (size_t i = 0; i < r.size(); ++i) absolute[i] = std::abs(r[i]);
    return std::max(pose::kNoiseFloorPixels, pose::kMadToSigma * pose::median(absolute));
}

// The state of the Levenberg-Marquardt iterations.
struct Descent {
    const JointProblem &problem;
    int dims;
    double weight;  // the prior's: noise / its sigma
    FocalPose model;
    cv::Point2d shift{0, 0};  // the principal point's move from the centre
    std::vector<double> r;
    double cost = HUGE_VAL, lambda = 1e-3;

    double total(const std::vector<double> &res, cv::Point2d s) const {
        double c = 0;
        for (double v : res) c += v * v;
        return c + weight * weight * (s.x * s.x + s.y * s.y);
    }
    // One step, damped until it lowers the cost (at most six tries); whether it did.
    bool step() {
        cv::Mat H, g;
        normal_equations(jacobian(problem, model, shift, dims), r, weight, shift, H, g);
        for (int attempt = 0; attempt < 6; ++attempt, lambda *= 10) {
            cv::Mat damped = H.clone(), delta;
            for (int k = 0; k < dims; ++k) damped.at<double>(k, k) *= 1 + lambda;
            if (!cv::solve(damped, -g, delta, cv::DECOMP_CHOLESKY)) continue;
            Vec8 d = Vec8::all(0);
            for (int k = 0; k < dims; ++k) d[k] = delta.at<double>(k);
            FocalPose next;
            cv::Point2d s;
            apply(model, shift, d, next, s);
            std::vector<double> rn;
            problem.residuals(next, s, rn);
            const double c = total(rn, s);
            if (c < cost) {
                model = next, shift = s, r = rn, cost = c, lambda = std::max(1e-9, lambda / 100);
                return true;
            }
        }
        return false;
    }
};

}  // namespace

// Levenberg-Marquardt on the residuals of `use` plus the principal point's prior (its residuals noise (c - c0) /
// sigma_prior, so the prior weighs as a Gaussian against the noise); the covariance (JᵀJ / σ² + prior)⁻¹ at the end,
// σ² the residuals' variance over their degrees of freedom.
Joint refine_joint(const std::vector<cv::Vec3d> &a, const std::vector<cv::Vec3d> &b, double fx, double fy, const std::vector<size_t> &use,
                   const FocalPose &start, cv::Point2d centre, const JointParams &params) {
    // `a` about the prior's centre: the principal point's move from it is the prior's residual.
    const JointProblem problem{a, b, fx, fy, use};
    Descent descent{problem, params.prior_sigma_pixels > 0 ? kJointParameters : 6, 0, start, params.shift, {}};
    problem.residuals(start, descent.shift, descent.r);
    if (descent.dims == kJointParameters) descent.weight = robust_noise(descent.r) / params.prior_sigma_pixels;
    descent.cost = descent.total(descent.r, descent.shift);
    for (int iteration = 0; iteration < params.iterations; ++iteration) {
        if (!descent.step()) break;
    }
    Joint out;
    out.model = descent.model;
    out.principal = centre + descent.shift;
    out.used = int(use.size());
    const int freedom = int(use.size()) - 6;
    if (freedom <= 0) return out;
    double sum = 0;
    for (double v : descent.r) sum += v * v;
    out.noise = std::max(pose::kNoiseFloorPixels, std::sqrt(sum / freedom));
    const cv::Mat J = jacobian(problem, descent.model, descent.shift, descent.dims) / out.noise;
    cv::Mat H, g, inverse;
    normal_equations(J, descent.r, params.prior_sigma_pixels > 0 ? 1 / params.prior_sigma_pixels : 0, descent.shift, H, g);
    if (cv::invert(H, inverse, cv::DECOMP_CHOLESKY) == 0) return out;
    out.covariance = cv::Matx<double, kJointParameters, kJointParameters>::zeros();
    for (int i = 0; i < descent.dims; ++i)
        for (int j = 0; j < descent.dims; ++j) out.covariance(i, j) = inverse.at<double>(i, j);
    // The focal length's spread were the principal point known: the Schur complement's inverse of its own block.
    cv::Mat held;
    out.ok = cv::invert(H(cv::Rect(0, 0, 6, 6)), held, cv::DECOMP_CHOLESKY) != 0 && out.covariance(5, 5) > 0;
    out.held_log_f_variance = out.ok ? held.at<double>(5, 5) : 0;
    return out;
}

}  // namespace rp::focal

namespace rp::focal {

std::vector<double> joint_residuals(const std::vector<cv::Vec3d> &a, const std::vector<cv::Vec3d> &b, double fx, double fy,
                                    const std::vector<size_t> &use, const FocalPose &model, cv::Point2d shift) {
    std::vector<double> out;
    JointProblem{a, b, fx, fy, use}.residuals(model, shift, out);
    return out;
}

// The loop with the focal length free, then the joint refinement on its inliers, and again on those within three
// times the refined noise (matches inside the threshold by chance pull the focal length; refine_focal's rule).
Free free_focal(const Pair &pair, const FreeParams &params) {
    const FreeFocalEstimator estimator(pair, pair.centre, params.threshold_pixels, params.lo, params.hi);
    pose::LoopParams loop;
    loop.confidence = 0.999;
    loop.max_iterations = params.max_iterations;
    loop.min_iterations = params.min_iterations;
    const auto found = pose::robust_loop(estimator, loop, params.seed, params.max_iterations);
    Free out;
    if (!std::isfinite(found.cost)) return out;
    out.found = true;
    out.cost = found.cost;
    out.loop = found.model;
    std::vector<size_t> use;
    estimator.inliers(found.model, use);
    out.inliers = int(use.size());
    if (use.size() < 12) return out;
    JointParams joint;
    joint.prior_sigma_pixels = params.principal_point_sigma * std::max(pair.width, pair.height);
    out.joint = refine_joint(estimator.a(), estimator.b(), pair.camera.K[0], pair.camera.K[4], use, found.model, pair.centre, joint);
    joint.shift = out.joint.principal - pair.centre;
    const auto r = joint_residuals(estimator.a(), estimator.b(), pair.camera.K[0], pair.camera.K[4], use, out.joint.model, joint.shift);
    std::vector<size_t> kept;
    for (size_t k = 0; k < use.size(); ++k) {
        if (std::abs(r[k]) < 3 * out.joint.noise) kept.push_back(use[k]);
    }
    if (kept.size() >= 12) out.joint = refine_joint(estimator.a(), estimator.b(), pair.camera.K[0], pair.camera.K[4], kept, out.joint.model, pair.centre, joint);
    return out;
}

}  // namespace rp::focal
