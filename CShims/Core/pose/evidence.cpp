// The evidence the gate in Swift reads of a decided pose: inliers and cheirality, uncertainty, parallax, the
// chance of the inlier count, GRIC against a plane and a pure rotation, the plane's other solution, the rivals.
#include "pose.hpp"

#include <opencv2/calib3d.hpp>

#include <cstring>

namespace rp::pose {

namespace {

// A point refutes a model when it lies this many thresholds from it: noise at the threshold's edge does not.
constexpr double kRefuting = 3;

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

// The squared transfer error of correspondence i under the homography M (HUGE_VAL at infinity).
double transfer(const Bearings &x, const cv::Matx33d &M, size_t i) {
    cv::Vec3d m = M * x.a[i];
    if (!(std::abs(m[2]) > 1e-12)) return HUGE_VAL;
    double dx = m[0] / m[2] - x.b[i][0], dy = m[1] / m[2] - x.b[i][1];
    return dx * dx + dy * dy;
}

// The inliers (within the threshold) and what they say of the pose. Cheirality is counted apart: without
// parallax (a pure rotation) every depth is noise, and the rotation is still well determined by all of them.
struct Support {
    int within = 0, front = 0;
    double sum = 0;  // of the squared Sampson errors
    std::vector<double> parallax, magnitudes;
};

Support support(const Bearings &x, double tau2, double focal, const Pose &pose, std::vector<uint8_t> &inliers,
                std::vector<double> *sampson_pixels) {
    const size_t n = x.size();
    const cv::Matx33d E = pose.essential();
    inliers.assign(n, 0);
    if (sampson_pixels) sampson_pixels->assign(n, 0);
    Support out;
    for (size_t i = 0; i < n; ++i) {
        double r = sampson(E, x.a[i], x.b[i]);
        if (sampson_pixels) (*sampson_pixels)[i] = std::abs(r) * focal;
        if (r * r >= tau2) continue;
        ++out.within;
        out.sum += r * r;
        inliers[i] = 1;
        out.front += in_front(pose, x.a[i], x.b[i]);
        cv::Vec3d u = cv::normalize(pose.R * x.a[i]), v = cv::normalize(x.b[i]);
        out.parallax.push_back(std::atan2(cv::norm(u.cross(v)), u.dot(v)) * kDegrees);
        out.magnitudes.push_back(std::abs(r));
    }
    if (out.within < 5) fail(RP_ERR_ESTIMATION, cv::format("the essential matrix explains only %d of %zu matches", out.within, n));
    return out;
}

// 1-sigma uncertainty (largest axis, degrees) of the rotation and the translation direction: the inverse
// Gauss-Newton Hessian of the inliers' Sampson errors, scaled by their variance. (The inliers by the kernel's own
// residuals, which may differ from `support`'s in the last bit.)
struct Sigmas {
    double rotation = HUGE_VAL, translation = HUGE_VAL;
};

Sigmas sigmas(const Bearings &x, double tau2, const Pose &pose, const Support &support) {
    const cv::Matx<double, 5, 5> H = symmetric(normal_equations(Linearisation(pose, TangentBasis(pose.t)), x, tau2).JtJ);
    double variance = support.within > 5 ? support.sum / double(support.within - 5) : tau2;
    cv::Matx<double, 5, 5> covariance;
    Sigmas out;
    if (support.within > 5 && cv::invert(H, covariance, cv::DECOMP_SVD) > 0) {
        covariance *= variance;
        cv::Matx33d Cr = covariance.get_minor<3, 3>(0, 0);
        cv::Matx22d Ct = covariance.get_minor<2, 2>(3, 3);
        cv::Matx31d er;
        cv::Matx21d et;
        cv::eigen(Cr, er);
        cv::eigen(Ct, et);
        out.rotation = std::sqrt(std::max(er(0), 0.0)) * kDegrees;
        out.translation = std::sqrt(std::max(et(0), 0.0)) * kDegrees;
    }
    return out;
}

// The best rival: one at least kRivalDegrees from the pose (rotation, or translation sign-free), and how much
// worse it fits (MSAC cost over tau2). Nearer ones are the same answer give or take its noise.
struct Rival {
    double excess = HUGE_VAL, degrees = 0;
    cv::Matx33d R = cv::Matx33d::eye();
    bool fits_better = false;  // its cost is below the pose's: the sensor chose the pose
};

Rival best_rival(const Decision &decision, double tau2) {
    Rival out;
    for (const auto &[cost, other] : decision.rivals) {
        const Separation between = separation(other, decision.pose);
        const double apart = std::max(between.rotation, between.translation);
        if (apart < kRivalDegrees) continue;
        if ((cost - decision.cost) / tau2 < out.excess) {
            out.excess = (cost - decision.cost) / tau2;
            out.degrees = apart;
            out.R = other.R;
            out.fits_better = cost < decision.cost;
        }
    }
    return out;
}

// Torr's GRIC on the inliers, with the noise scale `sigma`: the essential matrix (a 3-D relation with 5
// parameters in the 4-D space of correspondences), the plane's homography (2-D, 8 parameters) and the pure
// rotation (a homography of 3).
constexpr double kGricR = 4, kGricLambda3 = 2;

struct Gric {
    double essential = 0, homography = 0, rotation = 0;
    cv::Matx33d pure_rotation;
    int rotation_support = 0;
};

Gric gric(const Bearings &x, double tau, const Pose &pose, const PlaneFit &plane, const std::vector<uint8_t> &inliers, int within,
          double sigma) {
    const size_t n = x.size();
    const double transfer_tau = tau * kTransferPerSampson;
    const cv::Matx33d E = pose.essential();
    const double r4 = kGricR, lambda3 = kGricLambda3, nf = double(within);
    Gric out;
    for (size_t i = 0; i < n; ++i) {
        if (!inliers[i]) continue;
        double s = sampson(E, x.a[i], x.b[i]) / sigma;
        out.essential += std::min(s * s, lambda3 * (r4 - 3));
        // Half of a transfer error is the correction in either image.
        out.homography += std::min(plane.found ? transfer(x, plane.H, i) / (2 * sigma * sigma) : HUGE_VAL, lambda3 * (r4 - 2));
    }
    out.essential += std::log(r4) * 3 * nf + 5 * std::log(r4 * nf);
    out.homography += std::log(r4) * 2 * nf + 8 * std::log(r4 * nf);

    // The pure rotation that best explains the inliers (for rotation-only pairs).
    const cv::Matx33d Rr = pure_rotation(x, inliers, transfer_tau);
    for (size_t i = 0; i < n; ++i)
        if (inliers[i]) out.rotation += std::min(transfer(x, Rr, i) / (2 * sigma * sigma), lambda3 * (r4 - 2));
    out.rotation += std::log(r4) * 2 * nf + 3 * std::log(r4 * nf);
    out.pure_rotation = Rr;
    out.rotation_support = rotation_support(x, Rr, inliers, transfer_tau);
    return out;
}

}  // namespace

// Procrustes, refitted on those it transfers within shrinking multiples of the threshold: the first fit carries
// the mismatches.
cv::Matx33d pure_rotation(const Bearings &x, const std::vector<uint8_t> &selected, double transfer_tau) {
    std::vector<uint8_t> kept = selected;
    cv::Matx33d R = procrustes(x, kept);
    for (double factor : {16.0, 8.0, 4.0, 2.0, 1.0}) {
        int count = 0;
        const double limit = factor * transfer_tau;
        for (size_t i = 0; i < x.size(); ++i) count += kept[i] = selected[i] && transfer(x, R, i) < limit * limit;
        if (count < 3) break;
        R = procrustes(x, kept);
    }
    return R;
}

int rotation_support(const Bearings &x, const cv::Matx33d &R, const std::vector<uint8_t> &selected, double transfer_tau) {
    int support = 0;
    for (size_t i = 0; i < x.size(); ++i) support += selected[i] && transfer(x, R, i) < transfer_tau * transfer_tau;
    return support;
}

// A random epipolar line crosses the current image over about its diagonal: p = 2τ·diagonal / area.
double chance_per_match(const rp_camera &current_camera, double threshold) {
    const double w = current_camera.width > 0 ? current_camera.width : 2 * current_camera.K[2];
    const double h = current_camera.height > 0 ? current_camera.height : 2 * current_camera.K[5];
    return 2 * threshold * std::hypot(w, h) / std::max(w * h, 1.0);
}

// A match lands within τ of a random epipolar line with probability p ≈ 2τ / fov.
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

// Fitted to at most kGricFitPoints of the inliers, evenly spread through the list (measured: on 3,500 inliers the
// full fit was a fifth of the estimator's time), robustly (the essential inliers include mismatches that merely
// lie along their epipolar lines).
PlaneFit fit_plane(const Bearings &x, double tau, uint64_t seed, const Pose &pose) {
    constexpr size_t kGricFitPoints = 250;
    const double tau2 = tau * tau, transfer_tau = tau * kTransferPerSampson;
    std::vector<size_t> supporting;
    within_threshold(pose.essential(), x, tau2, supporting);
    std::vector<cv::Point2d> pa, pb;
    const size_t stride = std::max<size_t>(1, (supporting.size() + kGricFitPoints - 1) / kGricFitPoints);
    for (size_t k = 0; k < supporting.size(); k += stride) {
        pa.emplace_back(x.a[supporting[k]][0], x.a[supporting[k]][1]);
        pb.emplace_back(x.b[supporting[k]][0], x.b[supporting[k]][1]);
    }
    PlaneFit out;
    // 500 samples find a plane holding 30 % of the inliers with probability 0.98; a smaller plane loses to the
    // essential matrix in GRIC whatever homography is fitted to it.
    out.found = pa.size() >= 4 && rp::plane_homography(pa, pb, transfer_tau, 500, 0.999, seed, out.H);
    return out;
}

// On a plane the essential matrix has two solutions that fit every point on it: the homography's two
// decompositions. Only points off the plane tell them apart. The other solution is the decomposition furthest
// from `pose`, refined.
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

// The Sampson error cannot tell the four poses of one essential matrix apart.
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

Cheirality cheirality(const Pose &pose, const Bearings &x, const std::vector<size_t> &within, double noise) {
    const double parallax_error = std::sqrt(2.0) * noise;
    Cheirality out;
    for (size_t i : within) {
        cv::Vec3d u = cv::normalize(pose.R * x.a[i]), v = cv::normalize(x.b[i]);
        if (!(std::atan2(cv::norm(u.cross(v)), u.dot(v)) > RP_WELL_TRIANGULATED_SIGMAS * parallax_error)) continue;
        ++out.well;
        out.front += in_front(pose, x.a[i], x.b[i]);
    }
    // log10 P(Binomial(well, 1/2) >= front), summed from the largest term down.
    if (out.well > 0) {
        const double n = out.well, ln2 = std::log(2.0);
        double largest = -HUGE_VAL;
        std::vector<double> terms;
        for (int k = out.front; k <= out.well; ++k) {
            terms.push_back(std::lgamma(n + 1) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1) - n * ln2);
            largest = std::max(largest, terms.back());
        }
        double sum = 0;
        for (double t : terms) sum += std::exp(t - largest);
        out.log10_chance = std::min(0.0, (largest + std::log(sum)) / std::log(10.0));
    }
    return out;
}

double noise_scale(const cv::Matx33d &E, const Bearings &x, const std::vector<size_t> &within, double floor) {
    std::vector<double> magnitudes;
    magnitudes.reserve(within.size());
    for (size_t i : within) magnitudes.push_back(std::abs(sampson(E, x.a[i], x.b[i])));
    return std::max(kMadToSigma * median(magnitudes), floor);
}

void record(const CandidateContext &context, const Pose &pose, double cost, double best_cost, const Pose *compared, rp_pose_candidate &out) {
    const Bearings &x = context.x;
    std::memcpy(out.R, pose.R.val, 9 * sizeof(double));
    for (int i = 0; i < 3; ++i) out.t[i] = pose.t[i];
    out.cost = cost;
    out.excess = (cost - best_cost) / context.tau2;
    out.inliers = count_within(pose.essential(), x, context.tau2);
    out.log10_chance = log10_chance(int(x.size()), out.inliers, context.p, context.models);
    // Its inliers under the decomposition that puts most of them in front, their noise at least the floor.
    const Pose front = most_in_front(pose, x, context.tau2);
    const cv::Matx33d E = front.essential();
    std::vector<size_t> within;
    within_threshold(E, x, context.tau2, within);
    const Cheirality sides = cheirality(front, x, within, noise_scale(E, x, within, context.noise_floor));
    out.well_triangulated = sides.well;
    out.well_in_front = sides.front;
    out.cheirality_log10_chance = sides.log10_chance;
    out.prior_degrees = context.prior ? rotation_apart(pose.R, *context.prior) : 0;
    if (compared) {
        const Separation apart = separation(pose, *compared);
        out.apart_degrees = std::max(apart.rotation, apart.translation);
    } else {
        out.apart_degrees = 0;
    }
}

void report_evidence(const Bearings &x, double tau, double focal, double p, const Decision &decision, const PlaneFit &plane, long models,
                     int iterations, rp_relative_pose &out, std::vector<uint8_t> &inliers, std::vector<double> *sampson_pixels) {
    const double tau2 = tau * tau;
    const Pose &pose = decision.pose;
    const Support found = support(x, tau2, focal, pose, inliers, sampson_pixels);
    const Sigmas sigma = sigmas(x, tau2, pose, found);
    const Rival rival = best_rival(decision, tau2);
    // The noise scale robustly estimated from the inliers' Sampson errors.
    const double noise = std::max(kMadToSigma * median(found.magnitudes), kNoiseFloorPixels / focal);
    const Gric models_fit = gric(x, tau, pose, plane, inliers, found.within, noise);
    // A decomposition within three sigma of the pose (or 0.5°) is the pose itself, not its other solution.
    int refutation = 0;
    Pose other_solution;
    const bool twin = plane.found && twin_refutation(plane.H, x, tau2, pose, std::max(0.5, 3 * sigma.rotation), refutation, other_solution);

    std::memcpy(out.R, pose.R.val, 9 * sizeof(double));
    for (int i = 0; i < 3; ++i) out.t[i] = pose.t[i];
    std::memcpy(out.rotation_only_R, models_fit.pure_rotation.val, 9 * sizeof(double));
    out.gric_rotation = models_fit.rotation;
    out.inliers = found.within;
    out.in_front = found.front;
    out.sampson_rms_pixels = found.within > 0 ? std::sqrt(found.sum / found.within) * focal : 0;
    out.iterations = iterations;
    out.rotation_sigma_degrees = sigma.rotation;
    out.translation_sigma_degrees = sigma.translation;
    out.parallax_degrees = median(found.parallax);
    out.noise_pixels = noise * focal;
    out.gric_essential = models_fit.essential;
    out.gric_homography = models_fit.homography;
    out.rotation_support = models_fit.rotation_support;
    out.rival_excess = rival.excess;
    out.rival_degrees = rival.degrees;
    out.rival_fits_better = rival.fits_better ? 1 : 0;
    std::memcpy(out.rival_R, rival.R.val, 9 * sizeof(double));
    out.has_twin = twin;
    out.twin_refutation = twin ? refutation : 0;
    const cv::Matx33d twin_R = twin ? other_solution.R : cv::Matx33d::eye();
    std::memcpy(out.twin_R, twin_R.val, 9 * sizeof(double));
    out.log10_chance = log10_chance(int(x.size()), found.within, p, models);
    out.guided = decision.guided ? 1 : 0;
    std::vector<size_t> within;
    for (size_t i = 0; i < inliers.size(); ++i)
        if (inliers[i]) within.push_back(i);
    const Cheirality sides = cheirality(pose, x, within, std::max(noise, RP_LOCALISATION_FLOOR_PIXELS / focal));
    out.well_triangulated = sides.well;
    out.well_in_front = sides.front;
    out.cheirality_log10_chance = sides.log10_chance;
}

}  // namespace rp::pose
