// Internal to the relative-pose estimator (CShims/Core/pose/ and relative_pose.cpp): the model and the data, the
// constants, every stage's parameters (mirroring the registry's paths) and the stages its C entry points
// (rp_pose_search, rp_pose_guided_search, rp_pose_evidence, rp_pose_reproduce) call. Never included by Swift.
#pragma once

#include <optional>

#include "../shim_internal.hpp"
#include "robust_loop.hpp"

#include <opencv2/core.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace rp::pose {

// ---------------------------------------------------------------- constants

constexpr double kDegrees = 180.0 / M_PI;
// Shared with the gate in Swift through rephoto_pose_constants.h.
constexpr double kRivalDegrees = RP_RIVAL_DEGREES;
constexpr double kTransferPerSampson = RP_TRANSFER_PER_SAMPSON;
// The robust noise scale: 1.4826 x the median absolute residual (a Gaussian's sigma), at least 0.1 px, the
// polish's and GRIC's alike.
constexpr double kMadToSigma = 1.4826;
constexpr double kNoiseFloorPixels = 0.1;

// ---------------------------------------------------------------- the model and the data

struct Pose {
    cv::Matx33d R = cv::Matx33d::eye();
    cv::Vec3d t = cv::Vec3d(0, 0, 1);
    cv::Matx33d essential() const {
        return cv::Matx33d(0, -t[2], t[1], t[2], 0, -t[0], -t[1], t[0], 0) * R;
    }
};

inline cv::Matx33d skew(const cv::Vec3d &v) { return cv::Matx33d(0, -v[2], v[1], v[2], 0, -v[0], -v[1], v[0], 0); }

// How far apart two poses are, degrees: the rotation between them and the angle between their translation
// lines (sign-free: one essential matrix stands for either sign).
struct Separation {
    double rotation, translation;
};
inline double rotation_apart(const cv::Matx33d &P, const cv::Matx33d &Q) {
    double c = (cv::trace(P.t() * Q) - 1) / 2;
    return std::acos(std::max(-1.0, std::min(1.0, c))) * kDegrees;
}
inline Separation separation(const Pose &p, const Pose &q) {
    return {rotation_apart(p.R, q.R), std::acos(std::min(1.0, std::abs(p.t.dot(q.t)))) * kDegrees};
}

// Normalised image coordinates (x, y, 1) of both frames.
struct Bearings {
    std::vector<cv::Vec3d> a, b;
    // The same points by column, for the vectorised passes (every bearing here has z = 1).
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
    // The correspondences `index` of `x`, scored by the same kernels.
    static Bearings subset(const Bearings &x, const std::vector<size_t> &index) {
        Bearings out;
        out.avx2 = x.avx2;
        for (size_t i : index) out.add(x.a[i], x.b[i]);
        return out;
    }
};

inline double median(std::vector<double> values) {
    if (values.empty()) return 0;
    auto middle = values.begin() + long(values.size() / 2);
    std::nth_element(values.begin(), middle, values.end());
    return *middle;
}

// ---------------------------------------------------------------- residuals (residuals.cpp)

bool has_avx2();
Bearings undistorted(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current, const rp_camera &reference_camera,
                     const rp_camera &current_camera);

// Signed Sampson distance (first-order geometric error) in normalised units.
inline double sampson(const cv::Matx33d &E, const cv::Vec3d &a, const cv::Vec3d &b) {
    cv::Vec3d Ea = E * a;
    double Etb0 = E(0, 0) * b[0] + E(1, 0) * b[1] + E(2, 0) * b[2];
    double Etb1 = E(0, 1) * b[0] + E(1, 1) * b[1] + E(2, 1) * b[2];
    double den = Ea[0] * Ea[0] + Ea[1] * Ea[1] + Etb0 * Etb0 + Etb1 * Etb1;
    return den > 0 ? b.dot(Ea) / std::sqrt(den) : 0;
}

// Truncated quadratic (MSAC) cost of all correspondences; HUGE_VAL once it exceeds `bound` (checked every
// block of points: the early exit).
double msac_cost(const cv::Matx33d &E, const Bearings &x, double tau2, double bound = HUGE_VAL);
// The correspondences within the threshold of E (squared Sampson error below tau2, or no gradient).
void within_threshold(const cv::Matx33d &E, const Bearings &x, double tau2, std::vector<size_t> &out);
int count_within(const cv::Matx33d &E, const Bearings &x, double tau2);

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

// The four poses an essential matrix stands for (two rotations, two signs of t).
std::array<Pose, 4> decompositions(const cv::Matx33d &E);
// Those of E's poses that put every given correspondence in front.
int poses_from_essential(const cv::Matx33d &E, const cv::Vec3d *a, const cv::Vec3d *b, int n, Pose out[4]);

// ---------------------------------------------------------------- refinement (refinement.cpp)

// The pose's tangent space: three rotation increments (left-multiplied Rodrigues) and two translation offsets
// in the plane orthogonal to t.
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

// The Gauss-Newton normal equations (JᵀJ, Jᵀr) of the Sampson residuals within the threshold.
struct NormalEquations {
    double JtJ[15] = {};  // upper triangle by rows
    double Jtr[5] = {};
    int used = 0;
};
// `cauchy_s2` > 0: each term carries the Cauchy weight 1 / (1 + r²/s²) at that squared scale.
NormalEquations normal_equations(const Linearisation &l, const Bearings &x, double tau2, double cauchy_s2 = 0);
cv::Matx<double, 5, 5> symmetric(const double upper[15]);

// Levenberg-Marquardt on the MSAC cost, at most `iterations` steps; returns the cost.
double refine(const Bearings &x, double tau2, Pose &pose, int iterations);
// The model refitted at 3 thresholds, then 2: a start for the optimisation at 1 when it sits a pixel or two off.
void widen(const Bearings &x, double tau2, Pose &pose);
// The loop's local optimisation: returns the cost on all correspondences; `pose` moves only when it fell.
double local_optimisation(const Bearings &x, double tau2, Pose &pose, std::mt19937_64 &random);
// Levenberg-Marquardt on a Cauchy loss of the inliers' Sampson errors (scale `scale` x their robust noise, at
// least `floor`, normalised units); a local step only. `scale` 0: none.
void polish(const Bearings &x, double tau2, double scale, double floor, Pose &pose);

// ---------------------------------------------------------------- each stage's parameters

// pose.screenDegrees, pose.screenOctaves: the sample screen on the keypoints' frames (degrees 0: off).
struct ScreenParams {
    double degrees = 0, octaves = 0;
};

// The essential matrix's minimal models: pose.maxParallax bounds a sample point's parallax (0: none), the
// screen its frames.
struct EssentialParams {
    double max_parallax_degrees = 0;
    ScreenParams screen;
};

// The search: the loop, and a second one (another seed, half the cap) when the first ends uncertified that
// fails the estimate on a better pose further than pose.maxDisagreement (0: a single loop).
struct SearchParams {
    LoopParams loop;
    EssentialParams essential;
    double max_disagreement_degrees = 0;
};

// pose.refine (the MSAC refinement of the pose and its runners-up) and pose.cauchyScale (the polish).
struct RefineParams {
    bool refine = false;
    double cauchy_scale = 0;
};

// pose.reproductions more loops (pose.reproductionMisses may miss), each stopping within
// pose.maxReproductionDegrees of the pose (rp_reproduction_params).
struct ReproductionParams {
    int count = 0;
    int misses = 0;
    double degrees = 0;
};

// The estimate's stages: pose.essential.{method, threshold}, the search's and the refinement's parameters (the
// guided search and the reproductions take theirs at their own entry points).
struct PoseParams {
    int method = RP_METHOD_LO_MSAC;
    double threshold = 1;  // pixels
    bool portable_kernels = false;
    SearchParams search;
    RefineParams refine;
    bool lo_msac() const { return method == RP_METHOD_LO_MSAC; }
};

// The stages' parameters of a C call's (relative_pose.cpp; checked there).
PoseParams pose_params(const rp_robust_params &params);
// Throws RP_ERR_INVALID_ARGUMENT naming the first of the loop's options out of range.
void check_loop_options(const rp_loop_options &loop);

// ---------------------------------------------------------------- the search (essential_search.cpp)

// LO-MSAC over the essential-matrix estimator: the first loop, and a second when the first ends uncertified
// (SearchParams). `iterations` receives the samples solved, `runners_up` the other optimised models.
Pose search_essential(const Bearings &x, const SearchParams &params, double tau, int &iterations, std::vector<Pose> &runners_up);
// One loop, as search_essential and the reproductions run it.
LoopResult<Pose> essential_loop(const Bearings &x, const SearchParams &params, double tau, uint64_t seed, long cap,
                                const Pose *target = nullptr, double target_degrees = 0);
// OpenCV's estimators (findEssentialMat + recoverPose), kept for comparison.
Pose opencv_pose(const Bearings &x, int method, const LoopParams &params, double tau);

// ---------------------------------------------------------------- the sensor-guided search (guided_search.cpp)

struct Guided {
    Pose pose;
    double cost = HUGE_VAL;  // HUGE_VAL: no sample gave a pose within `degrees` of the prior
};
Guided guided_search(const Bearings &x, const cv::Matx33d &prior, const cv::Vec3d &axis, double degrees, double tau2, long max_samples,
                     uint64_t seed);

// ---------------------------------------------------------------- choosing between answers on their fit (decisions.cpp)

// The pose being decided, its MSAC cost, the answers it was preferred to (cost, pose), and whether the guided
// search found it.
struct Decision {
    Pose pose;
    double cost = HUGE_VAL;
    std::vector<std::pair<double, Pose>> rivals;
    bool guided = false;
};

// The plane of the pose's inliers, when they lie on one (H maps reference to current bearings).
struct PlaneFit {
    cv::Matx33d H = cv::Matx33d::eye();
    bool found = false;
};

// The pose and its runners-up refined alike (pose.refine), with their MSAC costs, in the search's order.
std::vector<std::pair<double, Pose>> refined(const Bearings &x, double tau2, const RefineParams &refine, const Pose &found,
                                             const std::vector<Pose> &runners_up);
// The plane's other solution (rp_pose_twin): the decomposition of the plane of `pose`'s inliers furthest from it,
// refined (pose.refine), its cost and refutation (twin_refutation); found false when there is none.
struct Twin {
    Pose pose;
    double cost = HUGE_VAL;
    int refutation = 0;
    bool found = false;
};
Twin plane_twin(const Bearings &x, double tau, uint64_t seed, const RefineParams &refine, const Pose &pose);
// The same on the plane already fitted to `pose`'s inliers (Problem::plane_of).
Twin plane_twin(const Bearings &x, double tau, const RefineParams &refine, const Pose &pose, const PlaneFit &plane);
// Loops of other seeds that must reach `pose`: how many ran, and the rotation within which `count` of them ended
// (HUGE_VAL when fewer found anything).
struct Reproduced {
    int runs = 0;
    double degrees = 0;
};
Reproduced reproduce(const Bearings &x, double tau, const PoseParams &params, const ReproductionParams &reproduction, const Pose &pose);

// ---------------------------------------------------------------- the stages' problem (relative_pose.cpp)

// What every stage reads: the parameters, the bearings, the mean focal length and the threshold in normalised units.
struct Problem {
    PoseParams stages;
    Bearings x;
    double focal = 1, tau = 1, tau2 = 1;
    double p = 0;  // a random match's chance of fitting (chance_per_match)
    // The plane of `pose`'s inliers (fit_plane at the loop's seed): fitted once per pose, since the twin stage and
    // the evidence of the same pose ask for it in turn. Not thread-safe: one stage at a time per problem.
    const PlaneFit &plane_of(const Pose &pose) const;

private:
    mutable std::optional<std::pair<Pose, PlaneFit>> last_plane;
};
// The parameters checked and the points undistorted (the frames, n angle, size pairs each, may be NULL).
Problem problem(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current, const rp_camera &reference_camera,
                const rp_camera &current_camera, const rp_robust_params &params, const float *reference_frames, const float *current_frames);
Problem problem(const rp_pose_input &input, const rp_robust_params &params);
// The search and its refined candidates, in its order (refined); `models` the samples behind the chance.
std::vector<std::pair<double, Pose>> search(const Problem &problem, int &iterations, long &models);
// The plane of the decided pose's inliers (for GRIC), the decomposition in front and the polish, then the evidence.
void conclude(const Problem &problem, Decision &decision, long models, long guided_samples, int iterations, rp_relative_pose &out,
              std::vector<uint8_t> &inliers, std::vector<double> *sampson_pixels);

// ---------------------------------------------------------------- evidence (evidence.cpp)

// The pure rotation that best explains the selected correspondences (orthogonal Procrustes on unit bearings, refitted
// robustly at the transfer threshold `transfer_tau`), and how many of them it transfers within that threshold: the
// rotation support PoseDecision.rotationExplains reads, for the pose's inliers and the homography's alike.
cv::Matx33d pure_rotation(const Bearings &x, const std::vector<uint8_t> &selected, double transfer_tau);
int rotation_support(const Bearings &x, const cv::Matx33d &R, const std::vector<uint8_t> &selected, double transfer_tau);

// The chance that a random match lies within the threshold (`threshold` pixels) of a random epipolar line.
double chance_per_match(const rp_camera &current_camera, double threshold);
// log10 of the expected number of inlier sets this large among `samples` models fitted to unrelated matches.
double log10_chance(int n, int inliers, double p, long samples);
// The plane of `pose`'s inliers, fitted robustly (`seed`) at the transfer threshold equivalent to `tau`.
PlaneFit fit_plane(const Bearings &x, double tau, uint64_t seed, const Pose &pose);
// The plane's other solution (`twin`, refined) and the inliers of `pose` it rejects minus those it alone
// accepts; false when every decomposition is `pose` within `same_degrees` (5x in translation).
bool twin_refutation(const cv::Matx33d &H, const Bearings &x, double tau2, const Pose &pose, double same_degrees, int &refutation, Pose &twin);
// Of E's four poses, the one that puts the most inliers in front of both cameras.
Pose most_in_front(const Pose &pose, const Bearings &x, double tau2);
// The inliers whose depth sign noise cannot flip (parallax over RP_WELL_TRIANGULATED_SIGMAS of its error, the
// error sqrt 2 x `noise`, normalised units, at least RP_LOCALISATION_FLOOR_PIXELS), those of them in front of both cameras, and log10 of the chance of at
// least that many in front were each a fair coin.
struct Cheirality {
    int well = 0, front = 0;
    double log10_chance = 0;
};
Cheirality cheirality(const Pose &pose, const Bearings &x, const std::vector<size_t> &within, double noise);
// The inliers' noise scale (kMadToSigma x the median absolute Sampson error, at least `floor`).
double noise_scale(const cv::Matx33d &E, const Bearings &x, const std::vector<size_t> &within, double floor);
// An answer's evidence record (rp_pose_candidate): its inliers, their chance over `models` samples, the cheirality
// of the decomposition putting most of them in front (noise at least `noise_floor`), its rotation from `prior`
// (when given) and its separation from `compared` (when given); `excess` against `best_cost`.
struct CandidateContext {
    const Bearings &x;
    double tau2, noise_floor, p;
    long models;
    const cv::Matx33d *prior;
};
void record(const CandidateContext &context, const Pose &pose, double cost, double best_cost, const Pose *compared, rp_pose_candidate &out);
// Everything rp_relative_pose reports of the decided pose but the reproductions: inliers, cheirality,
// uncertainty, parallax, GRIC, the pure rotation, rivals, the twin, the chance over `models` samples.
void report_evidence(const Bearings &x, double tau, double focal, double p, const Decision &decision, const PlaneFit &plane, long models,
                     int iterations, rp_relative_pose &out, std::vector<uint8_t> &inliers, std::vector<double> *sampson_pixels);

}  // namespace rp::pose
