// A camera placed among known 3D points (absolute pose) as the robust loop's estimator (robust_loop.hpp): P3P
// samples, MSAC on the reprojection error in normalised units, local optimisation by Levenberg-Marquardt on the
// inliers. The guidance session places each frame in the structure a keyframe fixed.
#pragma once

#include "pose.hpp"
#include "robust_loop.hpp"

namespace rp::pose {

struct Placement {
    cv::Matx33d R = cv::Matx33d::eye();
    cv::Vec3d t;  // X_camera = R X + t
};

class PlacementEstimator {
public:
    using Model = Placement;
    static constexpr int kSampleSize = 3;
    static constexpr int kMaxModels = 4;

    // `points` in the structure's frame, `bearings` their undistorted normalised image points (z = 1).
    PlacementEstimator(const std::vector<cv::Point3d> &points, const std::vector<cv::Point2d> &bearings, double tau2)
        : points_(points), bearings_(bearings), tau2_(tau2), screen_{none_, none_, 0, 0} {}

    size_t size() const { return points_.size(); }
    const SampleScreen &screen() const { return screen_; }
    int generate(const size_t *sample, Placement *models) const;
    double score(const Placement &model, double bound) const;
    void inliers(const Placement &model, std::vector<size_t> &out) const;
    double optimise(Placement &model, std::mt19937_64 &random) const;
    double apart(const Placement &p, const Placement &q) const { return rotation_apart(p.R, q.R); }

    // Squared reprojection error of one point, normalised units; HUGE_VAL behind the camera.
    double residual2(const Placement &model, size_t i) const;

private:
    const std::vector<cv::Point3d> &points_;
    const std::vector<cv::Point2d> &bearings_;
    double tau2_;
    const std::vector<double> none_;
    SampleScreen screen_;
};

}  // namespace rp::pose
