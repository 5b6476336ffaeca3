// The sensor-guided search: three-point samples near the phone's relative rotation, for a weak pose the main
// search may have missed.
#include "pose.hpp"

namespace rp::pose {

namespace {

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

constexpr int kGrid = 16;  // intervals on [-degrees, degrees]: roots closer than this apart are rare

// The sensor-guided model as the robust loop's estimator (robust_loop.hpp): three-point samples, each giving the
// poses R_prior Qᵀ Ry(φ) Q at the roots φ of det[v_1 v_2 v_3] (see guided_search) that put the sample in front;
// MSAC on the Sampson error; local optimisation in all five degrees of freedom, started widened, since a
// three-point model can sit a pixel or two off most of its inliers.
class SensorGuidedEstimator {
public:
    using Model = Pose;
    static constexpr int kSampleSize = 3;
    static constexpr int kMaxModels = 2 * kGrid;  // a root per grid interval, each with both signs of t

    SensorGuidedEstimator(const Bearings &x, const cv::Matx33d &prior, const cv::Vec3d &axis, double degrees, double tau2)
        : x_(x), tau2_(tau2), limit_(degrees / kDegrees), q_(onto_y(cv::normalize(axis))), to_camera_(prior * q_.t()),
          screen_{x.turn, x.zoom, 0, 0} {
        a_.resize(x.size());
        b_.resize(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
            a_[i] = q_ * x.a[i];
            b_[i] = to_camera_.t() * x.b[i];
        }
    }

    size_t size() const { return x_.size(); }
    const SampleScreen &screen() const { return screen_; }  // off: the turn is already constrained by the prior
    int generate(const size_t *sample, Pose *models) const;
    double score(const Pose &pose, double bound) const { return msac_cost(pose.essential(), x_, tau2_, bound); }
    void inliers(const Pose &pose, std::vector<size_t> &out) const { within_threshold(pose.essential(), x_, tau2_, out); }
    double optimise(Pose &pose, std::mt19937_64 &random) const {
        Pose widened = pose;
        widen(x_, tau2_, widened);
        const double cost = local_optimisation(x_, tau2_, widened, random);
        if (cost < msac_cost(pose.essential(), x_, tau2_)) pose = widened;
        return cost;
    }
    double apart(const Pose &p, const Pose &q) const { return rotation_apart(p.R, q.R); }

private:
    const Bearings &x_;
    double tau2_, limit_;
    cv::Matx33d q_, to_camera_;
    std::vector<cv::Vec3d> a_, b_;  // the bearings in the turn's frame: Q a, and Q R_priorᵀ b
    SampleScreen screen_;
};

int SensorGuidedEstimator::generate(const size_t *index, Pose *models) const {
    auto normals = [&](double angle, cv::Vec3d v[3]) {
        const cv::Matx33d turn = turn_about_y(angle);
        for (int i = 0; i < 3; ++i) v[i] = (turn * a_[index[i]]).cross(b_[index[i]]);
    };
    auto det = [&](double angle) {
        cv::Vec3d v[3];
        normals(angle, v);
        return v[0].dot(v[1].cross(v[2]));
    };
    int found = 0;
    double previous_angle = -limit_, previous = det(-limit_);
    for (int g = 1; g <= kGrid; ++g) {
        const double angle = -limit_ + 2 * limit_ * g / kGrid;
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
        candidate.R = to_camera_ * turn_about_y(root) * q_;
        candidate.t = cv::normalize(to_camera_ * t);
        for (double sign : {1.0, -1.0}) {
            Pose signed_pose = candidate;
            signed_pose.t *= sign;
            bool front = true;
            for (int i = 0; i < 3 && front; ++i) front = in_front(signed_pose, x_.a[index[i]], x_.b[index[i]]);
            if (front) models[found++] = signed_pose;
        }
    }
    return found;
}

}  // namespace

// The sensor-guided search, for a weak pose and the phone's rotation. A phone's attitude errs mostly in heading,
// a turn about the vertical: with both attitudes off in heading, the relative rotation is R_prior turned about
// the vertical in the reference camera's axes (`axis`). The search takes it as R_prior Qᵀ Ry(φ) Q, where Q turns
// the axis onto y and |φ| is up to `degrees`, which leaves three unknowns (φ and t's direction) and three-point
// samples, drawn far more often all-inlier than five-point ones (at 15 % inliers, 1 in 300 against 1 in 13,000).
// For a sample, with a' = Q a, b' = Q R_priorᵀ b and v_i(φ) = Ry(φ) a'_i × b'_i, every v_i is orthogonal to
// t' = Q R_priorᵀ t, so det[v_1 v_2 v_3] vanishes at the true φ: its roots on [-degrees, degrees] are bracketed on
// a grid and bisected. The robust loop runs all `max_samples` samples, uniformly drawn, and optimises its best and
// kRunnersUp runners-up; the best of those within `degrees` of the prior is returned (the search exists to find
// the pose near it), or cost HUGE_VAL when no sample gave one.
Guided guided_search(const Bearings &x, const cv::Matx33d &prior, const cv::Vec3d &axis, double degrees, double tau2, long max_samples,
                     uint64_t seed) {
    Guided out;
    if (x.size() < 3 || !(degrees > 0) || max_samples < 1) return out;
    // Three noisy points fix the turn and the translation loosely: an all-inlier sample's model may score below
    // a chance alignment until it is optimised, so the best minimal models are all optimised at the end.
    // (Strecha 1->7 at 1280 px: the best minimal model optimised to 8 inliers; the right pose, 3° from the
    // sensor, has 11.)
    constexpr int kRunnersUp = 16;
    LoopParams loop;
    loop.max_iterations = loop.min_iterations = int(std::min<long>(max_samples, INT_MAX));
    loop.seed = seed;
    loop.runners_up = kRunnersUp;
    const SensorGuidedEstimator estimator(x, prior, axis, degrees, tau2);
    const LoopResult<Pose> found = robust_loop(estimator, loop, seed, max_samples);
    if (!std::isfinite(found.cost)) return out;
    std::vector<Pose> candidates = found.runners_up;
    candidates.insert(candidates.begin(), found.model);
    for (const Pose &pose : candidates) {
        const double cost = msac_cost(pose.essential(), x, tau2);
        if (cost < out.cost && rotation_apart(pose.R, prior) <= degrees) {
            out.cost = cost;
            out.pose = pose;
        }
    }
    return out;
}

}  // namespace rp::pose
