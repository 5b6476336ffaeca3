// Internal to the reference camera's focal length (CShims/Core/pose/focal/): the stages rp_focal_colocated,
// rp_focal_scan, rp_focal_free and rp_focal_refine run one each (ReferenceFocalDecision.swift decides between them).
// The reference's pixels are taken about its principal point (its centre unless estimated), the current's
// undistorted and scaled by its focal length s. Never included by Swift.
#pragma once

#include "../pose.hpp"

#include <functional>

namespace rp::focal {

// The correspondences as every stage reads them.
struct Pair {
    std::vector<cv::Point2d> reference, current;  // pixels as given, checked finite
    std::vector<cv::Point2d> ideal;               // the current's undistorted, as an ideal camera of focal length s
    rp_camera camera{};                           // the current camera
    double s = 0;                                 // its mean focal length
    int width = 0, height = 0;                    // the reference's size
    cv::Point2d centre;                           // the reference's centre, (width - 1) / 2, (height - 1) / 2

    Pair(const double *reference_xy, const double *current_xy, int n, int width, int height, const rp_camera &camera);
    size_t size() const { return reference.size(); }
    // The reference's pixels about `principal`.
    std::vector<cv::Point2d> about(cv::Point2d principal) const;
    // The reference camera at focal length f and principal point `principal`.
    rp_camera reference_camera(double f, cv::Point2d principal) const;
};

// A minimum over the focal length: its cost, and whether it lies inside the range searched (not at an end).
struct Minimum {
    double focal = 0;
    double cost = HUGE_VAL;
    bool inside = false;
};

// Golden-section search of `cost` over log f in [lo, hi], `steps` steps; the best focal length found.
double golden(const std::function<double(double)> &cost, double lo, double hi, int steps);
// Squared Sampson residuals in pixels of both images under E, the reference's bearings at focal length f and the
// current's at (fx, fy).
void pixel_residuals2(const cv::Matx33d &E, const pose::Bearings &x, double f, double fx, double fy, std::vector<double> &out);

// ---------------------------------------------------------------- the cameras at one place (colocated.cpp)

// A fundamental matrix and a homography fitted robustly (OpenCV's RANSAC, in this order), and the focal length in
// [lo, hi] that makes diag(1/s, 1/s, 1) H diag(f, f, 1) nearest a multiple of a rotation (cost: that distance).
struct Colocated {
    Minimum rotation;
    std::vector<uchar> mask;  // the homography's inliers
    int inliers = 0;
    int fundamental_inliers = 0;
};
Colocated colocated(const Pair &pair, double threshold_pixels, double lo, double hi);

// ---------------------------------------------------------------- the cameras apart (scan.cpp)

// pose.referenceFocal.threshold, maxIterations, minIterations, seed and spanInliers; the range searched.
struct ScanParams {
    double threshold_pixels = 0, lo = 0, hi = 0, span_inliers = 0;
    int max_iterations = 0, min_iterations = 0;
    uint64_t seed = 0;
};
// The best focal length of a log grid (each with its robust essential-matrix search; cost: the truncated squared
// pixel residuals), its pose and inliers, and the grid's focal lengths fitting within one inlier's worth of it
// (low...high) and within span_inliers' worth (span_low...span_high).
struct Scan {
    Minimum best;
    pose::Pose pose;
    std::vector<uchar> mask;
    double low = 0, high = 0, span_low = 0, span_high = 0;
};
Scan scan(const Pair &pair, const ScanParams &params);
// The scan's cost at one focal length, `found` its pose; HUGE_VAL without one.
double scan_cost(const Pair &pair, const ScanParams &params, double f, pose::Pose &found);

// ---------------------------------------------------------------- the focal length free (six_point_focal.cpp, free_focal.cpp)

// A relative pose with the reference's focal length: X_current = R X_reference + t, the reference's bearings
// ((u - cx) / f, (v - cy) / f, 1) about its principal point.
struct FocalPose {
    pose::Pose pose;
    double f = 0;
};

// The minimal solver: `reference` six points about the reference's principal point (pixels, z 1), `current` their
// calibrated bearings (z 1); `nominal` a focal length of the right size (conditioning). The poses with every point in
// front, each with its focal length in lo...hi, into `out` (capacity kMaxSixPointModels); their count.
constexpr int kMaxSixPointModels = 40;  // ten eigenvalues, four poses each at most
int six_point_focal(const cv::Vec3d reference[6], const cv::Vec3d current[6], double nominal, double lo, double hi, FocalPose *out);

// The joint refinement's settings: the principal point's prior sigma (pixels; 0: held at the centre, six parameters),
// the iterations, and the start's principal point move from the prior's centre.
struct JointParams {
    double prior_sigma_pixels = 0;
    int iterations = 20;
    cv::Point2d shift{0, 0};
};
// The refined model, its principal point, the residuals' noise (pixels) and the covariance of (rotation 3,
// translation 2, log f, cx, cy): ok when it was invertible.
struct Joint {
    FocalPose model;
    cv::Point2d principal;
    double noise = 0;
    int used = 0;
    bool ok = false;
    cv::Matx<double, 8, 8> covariance = cv::Matx<double, 8, 8>::zeros();
    double held_log_f_variance = 0;  // log f's variance were the principal point known
};
// Levenberg-Marquardt over the correspondences `use`: `a` the reference's pixels about the prior's centre `centre`
// (z 1), `b` the current's calibrated bearings, (fx, fy) the current's focal lengths; signed Sampson residuals in both
// images' pixels.
Joint refine_joint(const std::vector<cv::Vec3d> &a, const std::vector<cv::Vec3d> &b, double fx, double fy, const std::vector<size_t> &use,
                   const FocalPose &start, cv::Point2d centre, const JointParams &params);
// Those residuals at a model, the principal point moved by `shift` from the centre.
std::vector<double> joint_residuals(const std::vector<cv::Vec3d> &a, const std::vector<cv::Vec3d> &b, double fx, double fy,
                                    const std::vector<size_t> &use, const FocalPose &model, cv::Point2d shift);

// The six-point samples as the robust loop's estimator (robust_loop.hpp): models (R, t, f), the MSAC cost of the
// squared Sampson residuals in both images' pixels (the scan's cost, threshold in pixels), the local optimisation
// the joint refinement with the principal point held.
class FreeFocalEstimator {
public:
    using Model = FocalPose;
    static constexpr int kSampleSize = 6;
    static constexpr int kMaxModels = kMaxSixPointModels;

    FreeFocalEstimator(const Pair &pair, cv::Point2d principal, double threshold_pixels, double lo, double hi);
    size_t size() const { return a_.size(); }
    const pose::SampleScreen &screen() const { return screen_; }
    int generate(const size_t *sample, FocalPose *models) const;
    double score(const FocalPose &model, double bound) const;
    void inliers(const FocalPose &model, std::vector<size_t> &out) const;
    double optimise(FocalPose &model, std::mt19937_64 &random) const;
    double apart(const FocalPose &p, const FocalPose &q) const { return pose::rotation_apart(p.pose.R, q.pose.R); }
    double residual2(const FocalPose &model, size_t i) const;
    const std::vector<cv::Vec3d> &a() const { return a_; }
    const std::vector<cv::Vec3d> &b() const { return b_; }

private:
    std::vector<cv::Vec3d> a_;  // the reference's pixels about the principal point, z 1
    std::vector<cv::Vec3d> b_;  // the current's calibrated bearings
    double fx_, fy_, tau2_, nominal_, lo_, hi_;
    const std::vector<double> none_;
    pose::SampleScreen screen_;
};

// pose.referenceFocal.{threshold, sixPointIterations, minIterations, seed, principalPointSigma} and the range.
struct FreeParams {
    double threshold_pixels = 0, lo = 0, hi = 0, principal_point_sigma = 0;
    int max_iterations = 0, min_iterations = 0;
    uint64_t seed = 0;
};
// The loop's best model (its cost: the scan's, over every correspondence at the centre), its inliers, and the
// joint refinement on them.
struct Free {
    bool found = false;
    double cost = HUGE_VAL;
    FocalPose loop;
    int inliers = 0;
    Joint joint;
};
Free free_focal(const Pair &pair, const FreeParams &params);

// ---------------------------------------------------------------- the refinement (profile.cpp, refinement.cpp)

// The least-squares cost of a fixed set of correspondences (`use`) over the focal length, each focal length with its
// best pose: a rotation (closed form) or a relative pose (Levenberg-Marquardt from the last one found, so the order
// of calls matters); `residuals` the last call's, in pixels, in `use`'s order.
class Profile {
public:
    Profile(const Pair &pair, bool rotation, const std::vector<uchar> &mask, const pose::Pose &start);
    double operator()(double f);
    std::function<double(double)> function() { return [this](double f) { return (*this)(f); }; }

    bool rotation;
    int parameters;             // of the model at a known focal length: 4 (rotation) or 6 (relative pose)
    std::vector<size_t> use;
    std::vector<double> residuals;
    pose::Pose pose;
    cv::Point2d principal;      // the reference's principal point, the centre unless moved

private:
    double rotation_cost(double f);
    double relative_cost(double f);
    const Pair &pair;
};

// pose.referenceFocal.principalPointSigma (a fraction of the longer side) and the range searched.
struct RefineParams {
    double lo = 0, hi = 0, principal_point_sigma = 0;
};
// From `start`, within 10 % of it, moved on while the best lies at an end; then again on the correspondences
// within three times the inliers' robust noise. `edge`: the profile has no minimum there.
double refine_focal(Profile &profile, double start, const RefineParams &params, bool &edge);
// The focal length, its noise spread and the principal point with their spreads into `out`, from `start`.
void refine(Profile &profile, const Pair &pair, double start, const RefineParams &params, rp_focal &out);

}  // namespace rp::focal
