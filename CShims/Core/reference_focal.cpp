// The focal length of a reference photo from an unknown camera, against a calibrated current camera
// (rephoto_shim.h, rp_estimate_reference_focal): a search over one number, the focal length f. The cameras apart,
// each f on a grid gets a robust essential-matrix search, and the best is refined on its inliers' pixel residuals;
// the cameras at one place, diag(1/s, 1/s, 1) H diag(f, f, 1) must be a multiple of a rotation. The reference's
// pixels are taken about its centre (the principal point then estimated with the refined focal length, under a prior
// about it), the current's undistorted and scaled by its focal length s.
#include "pose/pose.hpp"

#include <opencv2/calib3d.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

namespace {

// How far M(f) is from a multiple of a rotation: |M^T M / (trace / 3) - I|.
double rotation_gap(const cv::Matx33d &G, double f) {
    const cv::Matx33d M = G * cv::Matx33d(f, 0, 0, 0, f, 0, 0, 0, 1);
    const cv::Matx33d A = M.t() * M;
    const double scale = (A(0, 0) + A(1, 1) + A(2, 2)) / 3;
    if (!(scale > 0)) return HUGE_VAL;
    return cv::norm(A * (1 / scale) - cv::Matx33d::eye());
}

// Golden-section search of `cost` over log f in [lo, hi]; the best focal length found.
double golden(const std::function<double(double)> &cost, double lo, double hi, int steps) {
    const double phi = (std::sqrt(5.0) - 1) / 2;
    double a = std::log(lo), b = std::log(hi);
    double c = b - phi * (b - a), d = a + phi * (b - a);
    double gc = cost(std::exp(c)), gd = cost(std::exp(d));
    for (int k = 0; k < steps; ++k) {
        if (gc < gd) {
            b = d, d = c, gd = gc;
            c = b - phi * (b - a), gc = cost(std::exp(c));
        } else {
            a = c, c = d, gc = gd;
            d = a + phi * (b - a), gd = cost(std::exp(d));
        }
    }
    return std::exp((a + b) / 2);
}

struct Minimum {
    double focal;
    double gap;
    bool inside;  // not at either end of the range
};

// The focal length in [lo, hi] minimising `gap`: a log-spaced scan, then golden-section search in the best cell.
Minimum minimise(const std::function<double(double)> &gap, double lo, double hi) {
    constexpr int steps = 240;
    const double ratio = std::pow(hi / lo, 1.0 / steps);
    int best = 0;
    double bestGap = HUGE_VAL;
    for (int i = 0; i <= steps; ++i) {
        const double g = gap(lo * std::pow(ratio, i));
        if (g < bestGap) {
            bestGap = g;
            best = i;
        }
    }
    if (!std::isfinite(bestGap)) return {0, HUGE_VAL, false};
    const double f = golden(gap, lo * std::pow(ratio, std::max(0, best - 1)), lo * std::pow(ratio, std::min(steps, best + 1)), 60);
    return {f, gap(f), best > 0 && best < steps};
}

cv::Matx33d matx(const cv::Mat &m) {
    cv::Matx33d out;
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) out(r, c) = m.at<double>(r, c);
    return out;
}

// The refined focal length's spread from the curvature of the profile cost C(f) (each f with its best pose):
// sigma_f^2 = 2 sigma^2 / C'', sigma^2 the residual variance over `within` - `parameters` degrees of freedom; % of f.
double spread_percent(const std::function<double(double)> &cost, double f, int within, int parameters) {
    const double h = 0.02;
    const double c0 = cost(f), up = cost(f * (1 + h)), down = cost(f * (1 - h));
    const double second = (up + down - 2 * c0) / ((f * h) * (f * h));
    if (!(second > 0) || within <= parameters) return HUGE_VAL;
    const double variance = c0 / (within - parameters);
    return 100 * std::sqrt(2 * variance / second) / f;
}

// Squared Sampson residuals in pixels of both images under E, the reference's bearings at focal length f and the
// current's at (fx, fy).
void pixel_residuals2(const cv::Matx33d &E, const rp::pose::Bearings &x, double f, double fx, double fy, std::vector<double> &out) {
    out.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        const cv::Vec3d Ea = E * x.a[i], Etb = E.t() * x.b[i];
        const double den = (Ea[0] / fx) * (Ea[0] / fx) + (Ea[1] / fy) * (Ea[1] / fy) + (Etb[0] / f) * (Etb[0] / f) + (Etb[1] / f) * (Etb[1] / f);
        const double num = x.b[i].dot(Ea);
        out[i] = den > 0 ? num * num / den : 0;
    }
}

}  // namespace

extern "C" {

int rp_estimate_reference_focal(const double *reference_xy, const double *current_xy, int n, int reference_width,
                                int reference_height, const rp_camera *current_camera, const rp_focal_params *params,
                                rp_focal *focal, rp_status *status) {
    return rp::guarded(status, [&] {
        if (current_camera == nullptr || params == nullptr || focal == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "camera, params or output is NULL");
        rp::check_focal_lengths(*current_camera, "the current camera");
        if (reference_width <= 0 || reference_height <= 0) rp::fail(RP_ERR_INVALID_ARGUMENT, "the reference's size must be positive");
        if (!(params->threshold_pixels > 0 && std::isfinite(params->threshold_pixels))) rp::fail(RP_ERR_INVALID_ARGUMENT, "threshold_pixels must be positive");
        if (!(params->min_focal > 0 && params->max_focal > params->min_focal && std::isfinite(params->max_focal))) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, "the focal range must satisfy 0 < min_focal < max_focal");
        }
        if (!(params->rotation_share >= 0 && params->rotation_share <= 1)) rp::fail(RP_ERR_INVALID_ARGUMENT, "rotation_share must be 0...1");
        if (!(params->span_inliers >= 0 && std::isfinite(params->span_inliers))) rp::fail(RP_ERR_INVALID_ARGUMENT, "span_inliers must be finite and >= 0");
        if (n < 8) rp::fail(RP_ERR_ESTIMATION, cv::format("%d correspondences: the focal length needs at least 8", n));
        const auto reference = rp::to_points(reference_xy, n), current = rp::to_points(current_xy, n);
        rp::check_finite(reference, "reference");
        rp::check_finite(current, "current");
        // Reference pixels about its centre; current pixels undistorted, as an ideal camera of focal length s.
        const double s = (current_camera->K[0] + current_camera->K[4]) / 2;
        double cx = (reference_width - 1) / 2.0, cy = (reference_height - 1) / 2.0;
        std::vector<cv::Point2d> a(static_cast<size_t>(n)), b;
        for (int i = 0; i < n; ++i) a[size_t(i)] = reference[size_t(i)] - cv::Point2d(cx, cy);
        b = rp::normalised(current, *current_camera);
        for (auto &p : b) p *= s;
        const cv::Matx33d S(s, 0, 0, 0, s, 0, 0, 0, 1), Sinv(1 / s, 0, 0, 0, 1 / s, 0, 0, 0, 1);

        std::vector<uchar> fundamentalMask, rotationMask;
        // Degenerate correspondences (all on a line, repeated points) make OpenCV's estimators throw: no model, not
        // an internal error.
        auto fitted = [](auto &&fit) {
            try {
                return fit();
            } catch (const cv::Exception &) {
                return cv::Mat();
            }
        };
        const cv::Mat F = fitted([&] { return cv::findFundamentalMat(a, b, cv::FM_RANSAC, params->threshold_pixels, 0.999, fundamentalMask); });
        const cv::Mat H = fitted([&] { return cv::findHomography(a, b, cv::RANSAC, params->threshold_pixels, rotationMask, 5000, 0.999); });
        const int fundamentalInliers = F.rows == 3 ? cv::countNonZero(fundamentalMask) : 0;
        const int rotationInliers = H.rows == 3 ? cv::countNonZero(rotationMask) : 0;

        const double lo = params->min_focal, hi = params->max_focal;
        Minimum rotation{0, HUGE_VAL, false};
        if (rotationInliers >= 8) {
            const cv::Matx33d G = Sinv * matx(H);
            rotation = minimise([&](double f) { return rotation_gap(G, f); }, lo, hi);
        }
        // A homography that is a rotation, holding (nearly) every correspondence the fundamental matrix does: the
        // centres coincide and the fundamental matrix is not determined.
        constexpr double rotationFits = 0.05;
        const bool useRotation = rotation.inside && rotation.gap < rotationFits &&
                                 rotationInliers >= params->rotation_share * fundamentalInliers;
        Minimum chosen{0, HUGE_VAL, false};
        const double fx = current_camera->K[0], fy = current_camera->K[4];
        auto camera_for = [&](double f) {
            rp_camera c = rp_camera{};
            const double K[9] = {f, 0, cx, 0, f, cy, 0, 0, 1};
            std::copy(K, K + 9, c.K);
            c.width = reference_width;
            c.height = reference_height;
            return c;
        };
        // The cameras apart: each focal length on a log grid gets its own robust essential-matrix search, scored by
        // the truncated pixel residuals of every correspondence; the best one's inliers and pose start the
        // refinement. (A fundamental matrix's seven degrees of freedom take in wrong matches that a pose at a
        // known focal length does not: its focal lengths were 10-30 % off where this scan's were within 3 %.)
        std::vector<uchar> scanMask;
        rp::pose::Pose scanPose;
        double scanLow = 0, scanHigh = 0, spanLow = 0, spanHigh = 0;
        if (!useRotation && n >= 8) {
            const double tau2 = params->threshold_pixels * params->threshold_pixels;
            rp::pose::SearchParams search;
            search.loop.confidence = 0.999;
            search.loop.max_iterations = 400;
            search.loop.min_iterations = 100;
            search.loop.seed = 0x5EEDF0CA1ULL;
            std::vector<double> r2;
            auto score = [&](double f, rp::pose::Pose &found) {
                const rp::pose::Bearings x = rp::pose::undistorted(reference, current, camera_for(f), *current_camera);
                const double tau = params->threshold_pixels / (0.5 * (f + s));
                const auto result = rp::pose::essential_loop(x, search, tau, search.loop.seed, search.loop.max_iterations);
                if (!std::isfinite(result.cost)) return HUGE_VAL;
                found = result.model;
                // Polished on its inliers, so neighbouring focal lengths differ by their fit, not by the loop's luck.
                rp::pose::refine(x, tau * tau, found, 10);
                pixel_residuals2(found.essential(), x, f, fx, fy, r2);
                double cost = 0;
                for (double v : r2) cost += std::min(v, tau2);
                return cost;
            };
            // Coarse, 10 % apart over the whole range, then 2.5 % apart within 10 % of the best.
            std::vector<std::pair<double, double>> scanned;  // focal, cost
            double best = HUGE_VAL, bestFocal = 0;
            auto visit = [&](double f) {
                rp::pose::Pose found;
                const double cost = score(f, found);
                scanned.emplace_back(f, cost);
                if (cost < best) best = cost, bestFocal = f, scanPose = found;
            };
            for (double f = lo * 1.05; f < hi; f *= 1.1) visit(f);
            if (bestFocal > 0) {
                const double centre = bestFocal;
                for (int k = -3; k <= 3; ++k) {
                    if (k != 0) visit(centre * std::pow(1.025, k));
                }
            }
            if (bestFocal > 0) {
                // The focal lengths whose best pose fits within one inlier's worth of the best: where the
                // correspondences cannot tell them apart.
                scanLow = scanHigh = spanLow = spanHigh = bestFocal;
                for (const auto &[f, cost] : scanned) {
                    if (cost <= best + tau2) scanLow = std::min(scanLow, f), scanHigh = std::max(scanHigh, f);
                    // A second minimum nearly as good (a focal length twice the truth on pairs far apart) is no answer.
                    if (cost <= best + params->span_inliers * tau2) spanLow = std::min(spanLow, f), spanHigh = std::max(spanHigh, f);
                }
                const rp::pose::Bearings x = rp::pose::undistorted(reference, current, camera_for(bestFocal), *current_camera);
                pixel_residuals2(scanPose.essential(), x, bestFocal, fx, fy, r2);
                scanMask.assign(size_t(n), 0);
                for (int i = 0; i < n; ++i) scanMask[size_t(i)] = r2[size_t(i)] < tau2 && rp::pose::in_front(scanPose, x.a[size_t(i)], x.b[size_t(i)]);
                chosen = {bestFocal, best, bestFocal > lo * 1.06 && bestFocal < hi / 1.1};
            }
        }
        const std::vector<uchar> &mask = useRotation ? rotationMask : scanMask;
        if (useRotation) chosen = rotation;
        *focal = rp_focal{};
        if (!(params->principal_point_sigma >= 0 && params->principal_point_sigma < 1)) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, "principal_point_sigma must be 0...1");
        }
        focal->fundamental_inliers = fundamentalInliers;
        focal->rotation_inliers = rotationInliers;
        focal->rotation_residual = rotation.gap;
        focal->model = useRotation ? 2 : 1;
        focal->inliers = useRotation ? rotationInliers : cv::countNonZero(scanMask);
        if (!chosen.inside) rp::fail(RP_ERR_ESTIMATION, "no focal length of the reference between the bounds fits these correspondences");
        focal->focal = chosen.focal;
        focal->span_low = useRotation ? chosen.focal : spanLow;
        focal->span_high = useRotation ? chosen.focal : spanHigh;

        // Refined on the inliers' pixel residuals, each focal length with its best pose (fundamental, by
        // Levenberg-Marquardt from the last one found) or rotation (closed form): a least-squares profile over a
        // fixed set of correspondences, smooth, so its minimum and curvature mean what they should.
        std::vector<size_t> use;
        for (size_t i = 0; i < mask.size(); ++i) {
            if (mask[i]) use.push_back(i);
        }
        std::vector<double> residuals;
        std::function<double(double)> profile;
        rp::pose::Pose pose;
        int parameters = 0;
        auto pick = [&](const std::vector<cv::Point2d> &points) {
            std::vector<cv::Point2d> out;
            for (size_t i : use) out.push_back(points[i]);
            return out;
        };
        if (useRotation) {
            parameters = 4;
            profile = [&](double f) {
                cv::Matx33d M = cv::Matx33d::zeros();
                std::vector<cv::Vec3d> from, to;
                for (size_t i : use) {
                    from.push_back(cv::normalize(cv::Vec3d(a[i].x / f, a[i].y / f, 1)));
                    to.push_back(cv::normalize(cv::Vec3d(b[i].x / s, b[i].y / s, 1)));
                    M += to.back() * from.back().t();
                }
                cv::Matx33d U, Vt;
                cv::Vec3d w;
                cv::SVD::compute(M, w, U, Vt);
                const double sign = cv::determinant(U * Vt) < 0 ? -1 : 1;
                const cv::Matx33d R = U * cv::Matx33d(1, 0, 0, 0, 1, 0, 0, 0, sign) * Vt;
                residuals.clear();
                double cost = 0;
                for (size_t k = 0; k < from.size(); ++k) {
                    const cv::Vec3d y = R * from[k];
                    const double dx = (y[0] / y[2] - to[k][0] / to[k][2]) * fx, dy = (y[1] / y[2] - to[k][1] / to[k][2]) * fy;
                    residuals.push_back(std::sqrt(dx * dx + dy * dy));
                    cost += dx * dx + dy * dy;
                }
                return cost;
            };
        } else {
            parameters = 6;
            pose = scanPose;
            profile = [&](double f) {
                const rp::pose::Bearings x = rp::pose::undistorted(pick(reference), pick(current), camera_for(f), *current_camera);
                rp::pose::refine(x, HUGE_VAL, pose, 40);
                pixel_residuals2(pose.essential(), x, f, fx, fy, residuals);
                double cost = 0;
                for (double &r : residuals) cost += r, r = std::sqrt(r);
                return cost;
            };
        }
        // From a start, within 10 % of it and moved on while the best lies at an end of the bracket; then again on
        // the correspondences within three times the inliers' robust noise: matches inside the threshold by chance
        // pull the focal length less, and the cost's curvature measures the inliers' noise. Uses and trims `use`.
        auto refine_from = [&](double start, bool &edge) {
            double best = start;
            edge = true;
            for (int round = 0; round < 12 && edge; ++round) {
                const double near = std::max(params->min_focal, best / 1.1), far = std::min(params->max_focal, best * 1.1);
                best = golden(profile, near, far, 30);
                edge = best < near * 1.005 || best > far / 1.005;
            }
            if (edge) return best;
            profile(best);
            const double noise = std::max(0.1, rp::pose::kMadToSigma * rp::pose::median(residuals));
            std::vector<size_t> kept;
            for (size_t k = 0; k < use.size(); ++k) {
                if (residuals[k] < 3 * noise) kept.push_back(use[k]);
            }
            use = kept;
            const double near = std::max(params->min_focal, best / 1.03), far = std::min(params->max_focal, best * 1.03);
            best = golden(profile, near, far, 30);
            edge = best < near * 1.005 || best > far / 1.005;
            return best;
        };
        bool atEdge = true;
        double refined = refine_from(chosen.focal, atEdge);
        focal->focal = refined;
        focal->inliers = int(use.size());
        const double refinedCost = profile(refined);
        focal->noise_sigma_percent = atEdge ? HUGE_VAL : spread_percent(profile, refined, int(use.size()), parameters);
        // The principal point: where the relative pose allows, estimated with the focal length (a Gauss-Newton step on
        // the inliers' pixel residuals with the principal point's prior, principal_point_sigma about the centre); the
        // focal length's sigma is then its marginal from the posterior's curvature, the principal point's spread
        // included. Rotations, and profiles without a minimum, keep the centre and combine its spread as a slope.
        const double side = std::max(reference_width, reference_height);
        const double cx0 = cx, cy0 = cy, prior = params->principal_point_sigma * side;
        focal->principal_point_x = cx;
        focal->principal_point_y = cy;
        if (std::isfinite(focal->noise_sigma_percent) && prior > 0 && !useRotation && int(use.size()) > parameters + 2) {
            // The residuals' variance, never below the noise floor's (exact synthetic points would divide by zero).
            const double floor2 = rp::pose::kNoiseFloorPixels * rp::pose::kNoiseFloorPixels;
            const double noise2 = std::max(floor2, refinedCost / (int(use.size()) - parameters));
            const rp::pose::Pose start = pose;
            // The cost at (f, cx, cy), the pose refined from the same start each time so differences are smooth.
            auto cost = [&](const cv::Vec3d &q) {
                cx = q[1], cy = q[2];
                pose = start;
                const double data = profile(q[0]) / (2 * noise2);
                return data + ((q[1] - cx0) * (q[1] - cx0) + (q[2] - cy0) * (q[2] - cy0)) / (2 * prior * prior);
            };
            cv::Vec3d q(refined, cx0, cy0);
            const cv::Vec3d h(0.01 * refined, 0.01 * side, 0.01 * side);
            cv::Matx33d Hq;
            bool curved = false;
            for (int iteration = 0; iteration < 4; ++iteration) {
                // Central differences: the gradient and the Hessian of the posterior's negative log.
                const double c0 = cost(q);
                cv::Vec3d g;
                for (int i = 0; i < 3; ++i) {
                    cv::Vec3d up = q, down = q;
                    up[i] += h[i], down[i] -= h[i];
                    const double cu = cost(up), cd = cost(down);
                    g[i] = (cu - cd) / (2 * h[i]);
                    Hq(i, i) = (cu + cd - 2 * c0) / (h[i] * h[i]);
                }
                for (int i = 0; i < 3; ++i) {
                    for (int j = i + 1; j < 3; ++j) {
                        cv::Vec3d pp = q, pm = q, mp = q, mm = q;
                        pp[i] += h[i], pp[j] += h[j];
                        pm[i] += h[i], pm[j] -= h[j];
                        mp[i] -= h[i], mp[j] += h[j];
                        mm[i] -= h[i], mm[j] -= h[j];
                        Hq(i, j) = Hq(j, i) = (cost(pp) - cost(pm) - cost(mp) + cost(mm)) / (4 * h[i] * h[j]);
                    }
                }
                cv::Matx33d inverse;
                curved = cv::invert(Hq, inverse, cv::DECOMP_CHOLESKY) != 0;
                if (!curved) break;
                cv::Vec3d step = -(inverse * g);
                // Damped: the step is taken only where it lowers the cost, and never more than 10 % in f or a sigma in
                // the principal point at once.
                const double scale = std::min({1.0, 0.1 * q[0] / std::max(1e-12, std::abs(step[0])),
                                               prior / std::max(1e-12, std::hypot(step[1], step[2]))});
                step *= scale;
                bool moved = false;
                for (int halving = 0; halving < 6 && !moved; ++halving, step *= 0.5) {
                    const cv::Vec3d next = q + step;
                    if (next[0] > params->min_focal && next[0] < params->max_focal && cost(next) < c0) q = next, moved = true;
                }
                if (!moved || (std::abs(step[0]) < 1e-4 * q[0] && std::hypot(step[1], step[2]) < 1e-3 * prior)) break;
            }
            cx = q[1], cy = q[2];
            pose = start;
            // A principal point outside the photo is no estimate (a wide prior let it wander): the centre then. The
            // curvature is the last iteration's, at most one damped step from where the search ended.
            if (!(cx >= 0 && cx <= reference_width - 1 && cy >= 0 && cy <= reference_height - 1)) curved = false;
            if (curved) {
                cv::Matx33d covariance;
                if (cv::invert(Hq, covariance, cv::DECOMP_CHOLESKY) != 0 && covariance(0, 0) > 0) {
                    refined = q[0];
                    focal->focal = refined;
                    focal->principal_point_x = cx;
                    focal->principal_point_y = cy;
                    focal->principal_point_estimated = 1;
                    focal->sigma_percent = 100 * std::sqrt(covariance(0, 0)) / refined;
                    const double noise = focal->noise_sigma_percent;
                    focal->principal_point_sigma_percent = std::sqrt(std::max(0.0, focal->sigma_percent * focal->sigma_percent - noise * noise));
                } else {
                    curved = false;
                }
            }
            if (!curved) cx = cx0, cy = cy0;
        }
        if (!focal->principal_point_estimated) {
            // The centre assumed: how far the focal length moves with it, at the assumed spread.
            double moved2 = 0;
            const double step = 0.01 * side;
            if (std::isfinite(focal->noise_sigma_percent) && params->principal_point_sigma > 0) {
                const rp::pose::Pose kept = pose;
                for (int axis = 0; axis < 2; ++axis) {
                    (axis == 0 ? cx : cy) += step;
                    for (int i = 0; i < n; ++i) a[size_t(i)] = reference[size_t(i)] - cv::Point2d(cx, cy);
                    pose = kept;
                    const double shifted = golden(profile, refined / 1.2, refined * 1.2, 40);
                    const double slope = (shifted - refined) / step;  // focal pixels per principal-point pixel
                    moved2 += slope * slope;
                    (axis == 0 ? cx : cy) -= step;
                }
                for (int i = 0; i < n; ++i) a[size_t(i)] = reference[size_t(i)] - cv::Point2d(cx, cy);
                pose = kept;
            }
            const double principal = 100 * std::sqrt(moved2) * params->principal_point_sigma * side / refined;
            focal->principal_point_sigma_percent = principal;
            focal->sigma_percent = std::hypot(focal->noise_sigma_percent, principal);
        }
        // Focal lengths the scan could not tell from the best widen its answer's to half their span.
        if (!useRotation && scanHigh > scanLow) {
            focal->sigma_percent = std::max(focal->sigma_percent, 100 * std::log(scanHigh / scanLow) / 2);
        }
    });
}

}  // extern "C"
