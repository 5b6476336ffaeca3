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

}  // namespace

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

}  // namespace rp::pose
