// The refinement: the focal length on its inliers' pixel residuals (the profile, focal.hpp), its spread from the
// profile's curvature, and the principal point. Where the relative pose allows, the principal point is estimated with
// the focal length (a Gauss-Newton step on the residuals with its prior, principal_point_sigma about the centre), the
// focal length's sigma then its marginal; rotations, and profiles without a minimum, keep the centre and add its
// spread as a slope.
#include "focal.hpp"

namespace rp::focal {

namespace {

// The refined focal length's spread from the curvature of the profile cost C(f): sigma_f^2 = 2 sigma^2 / C'', sigma^2
// the residual variance over the inliers' degrees of freedom; % of f.
double spread_percent(Profile &profile, double f) {
    const int within = int(profile.use.size());
    const double h = 0.02;
    const double c0 = profile(f), up = profile(f * (1 + h)), down = profile(f * (1 - h));
    const double second = (up + down - 2 * c0) / ((f * h) * (f * h));
    if (!(second > 0) || within <= profile.parameters) return HUGE_VAL;
    const double variance = c0 / (within - profile.parameters);
    return 100 * std::sqrt(2 * variance / second) / f;
}

// The negative log posterior of (f, cx, cy): the profile over the residuals' variance plus the principal point's
// prior; the pose refined from the same start each time, so differences are smooth.
struct Posterior {
    Profile &profile;
    rp::pose::Pose start;
    cv::Point2d centre;
    double noise2, prior;

    double operator()(const cv::Vec3d &q) {
        profile.principal = cv::Point2d(q[1], q[2]);
        profile.pose = start;
        const double data = profile(q[0]) / (2 * noise2);
        return data + ((q[1] - centre.x) * (q[1] - centre.x) + (q[2] - centre.y) * (q[2] - centre.y)) / (2 * prior * prior);
    }
};

// Central differences at q with steps h: the cost c0, the gradient g and the Hessian H.
void differences(Posterior &cost, const cv::Vec3d &q, const cv::Vec3d &h, double &c0, cv::Vec3d &g, cv::Matx33d &H) {
    c0 = cost(q);
    for (int i = 0; i < 3; ++i) {
        cv::Vec3d up = q, down = q;
        up[i] += h[i], down[i] -= h[i];
        const double cu = cost(up), cd = cost(down);
        g[i] = (cu - cd) / (2 * h[i]);
        H(i, i) = (cu + cd - 2 * c0) / (h[i] * h[i]);
    }
    for (int i = 0; i < 3; ++i) {
        for (int j = i + 1; j < 3; ++j) {
            cv::Vec3d pp = q, pm = q, mp = q, mm = q;
            pp[i] += h[i], pp[j] += h[j];
            pm[i] += h[i], pm[j] -= h[j];
            mp[i] -= h[i], mp[j] += h[j];
            mm[i] -= h[i], mm[j] -= h[j];
            H(i, j) = H(j, i) = (cost(pp) - cost(pm) - cost(mp) + cost(mm)) / (4 * h[i] * h[j]);
        }
    }
}

// Damped Gauss-Newton from (f, centre), at most 4 steps; each taken only where it lowers the cost, never more than
// 10 % in f or a sigma in the principal point at once. Returns whether the last Hessian H was positive definite.
bool gauss_newton(Posterior &cost, const RefineParams &params, double side, cv::Vec3d &q, cv::Matx33d &H) {
    const cv::Vec3d h(0.01 * q[0], 0.01 * side, 0.01 * side);
    bool curved = false;
    for (int iteration = 0; iteration < 4; ++iteration) {
        double c0;
        cv::Vec3d g;
        differences(cost, q, h, c0, g, H);
        cv::Matx33d inverse;
        curved = cv::invert(H, inverse, cv::DECOMP_CHOLESKY) != 0;
        if (!curved) break;
        cv::Vec3d step = -(inverse * g);
        const double scale = std::min({1.0, 0.1 * q[0] / std::max(1e-12, std::abs(step[0])),
                                       cost.prior / std::max(1e-12, std::hypot(step[1], step[2]))});
        step *= scale;
        bool moved = false;
        for (int halving = 0; halving < 6 && !moved; ++halving, step *= 0.5) {
            const cv::Vec3d next = q + step;
            if (next[0] > params.lo && next[0] < params.hi && cost(next) < c0) q = next, moved = true;
        }
        if (!moved || (std::abs(step[0]) < 1e-4 * q[0] && std::hypot(step[1], step[2]) < 1e-3 * cost.prior)) break;
    }
    return curved;
}

// The principal point estimated with the focal length into `out` (principal_point_estimated 1), unless the
// posterior has no curvature there or the point leaves the photo (a wide prior let it wander).
void principal_point(Profile &profile, const Pair &pair, double focal, double focal_cost, const RefineParams &params, rp_focal &out) {
    // The residuals' variance, never below the noise floor's (exact synthetic points would divide by zero).
    const double floor2 = rp::pose::kNoiseFloorPixels * rp::pose::kNoiseFloorPixels;
    const double side = std::max(pair.width, pair.height);
    Posterior cost{profile, profile.pose, pair.centre,
                   std::max(floor2, focal_cost / (int(profile.use.size()) - profile.parameters)), params.principal_point_sigma * side};
    cv::Vec3d q(focal, pair.centre.x, pair.centre.y);
    cv::Matx33d H;
    bool curved = gauss_newton(cost, params, side, q, H);
    profile.pose = cost.start;
    const double cx = q[1], cy = q[2];
    if (!(cx >= 0 && cx <= pair.width - 1 && cy >= 0 && cy <= pair.height - 1)) curved = false;
    // The curvature is the last iteration's, at most one damped step from where the search ended.
    cv::Matx33d covariance;
    if (curved && cv::invert(H, covariance, cv::DECOMP_CHOLESKY) != 0 && covariance(0, 0) > 0) {
        profile.principal = cv::Point2d(cx, cy);
        out.focal = q[0];
        out.principal_point_x = cx;
        out.principal_point_y = cy;
        out.principal_point_estimated = 1;
        out.sigma_percent = 100 * std::sqrt(covariance(0, 0)) / q[0];
        const double noise = out.noise_sigma_percent;
        out.principal_point_sigma_percent = std::sqrt(std::max(0.0, out.sigma_percent * out.sigma_percent - noise * noise));
    } else {
        profile.principal = pair.centre;
    }
}

// The centre assumed: how far the focal length moves with it (a shift of 1 % of the side along each axis), at the
// assumed spread, added to the noise's.
void centre_spread(Profile &profile, const Pair &pair, double focal, const RefineParams &params, rp_focal &out) {
    const double side = std::max(pair.width, pair.height), step = 0.01 * side;
    double moved2 = 0;
    if (std::isfinite(out.noise_sigma_percent) && params.principal_point_sigma > 0) {
        const rp::pose::Pose kept = profile.pose;
        const auto cost = profile.function();
        for (int axis = 0; axis < 2; ++axis) {
            (axis == 0 ? profile.principal.x : profile.principal.y) += step;
            profile.pose = kept;
            const double shifted = golden(cost, focal / 1.2, focal * 1.2, 40);
            const double slope = (shifted - focal) / step;  // focal pixels per principal-point pixel
            moved2 += slope * slope;
            (axis == 0 ? profile.principal.x : profile.principal.y) -= step;
        }
        profile.pose = kept;
    }
    const double principal = 100 * std::sqrt(moved2) * params.principal_point_sigma * side / focal;
    out.principal_point_sigma_percent = principal;
    out.sigma_percent = std::hypot(out.noise_sigma_percent, principal);
}

}  // namespace

double refine_focal(Profile &profile, double start, const RefineParams &params, bool &edge) {
    const auto cost = profile.function();
    double best = start;
    edge = true;
    for (int round = 0; round < 12 && edge; ++round) {
        const double near = std::max(params.lo, best / 1.1), far = std::min(params.hi, best * 1.1);
        best = golden(cost, near, far, 30);
        edge = best < near * 1.005 || best > far / 1.005;
    }
    if (edge) return best;
    // Again on the correspondences within three times the inliers' robust noise: matches inside the threshold by
    // chance pull the focal length less, and the cost's curvature measures the inliers' noise.
    profile(best);
    const double noise = std::max(0.1, rp::pose::kMadToSigma * rp::pose::median(profile.residuals));
    std::vector<size_t> kept;
    for (size_t k = 0; k < profile.use.size(); ++k) {
        if (profile.residuals[k] < 3 * noise) kept.push_back(profile.use[k]);
    }
    profile.use = kept;
    const double near = std::max(params.lo, best / 1.03), far = std::min(params.hi, best * 1.03);
    best = golden(cost, near, far, 30);
    edge = best < near * 1.005 || best > far / 1.005;
    return best;
}

void refine(Profile &profile, const Pair &pair, double start, const RefineParams &params, rp_focal &out) {
    bool edge = true;
    const double focal = refine_focal(profile, start, params, edge);
    out.focal = focal;
    out.inliers = int(profile.use.size());
    const double cost = profile(focal);
    out.noise_sigma_percent = edge ? HUGE_VAL : spread_percent(profile, focal);
    out.principal_point_x = pair.centre.x;
    out.principal_point_y = pair.centre.y;
    const double side = std::max(pair.width, pair.height);
    if (std::isfinite(out.noise_sigma_percent) && params.principal_point_sigma * side > 0 && !profile.rotation &&
        int(profile.use.size()) > profile.parameters + 2) {
        principal_point(profile, pair, focal, cost, params, out);
    }
    if (!out.principal_point_estimated) centre_spread(profile, pair, focal, params, out);
}

}  // namespace rp::focal
