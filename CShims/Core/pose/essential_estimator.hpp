// The calibrated essential matrix as the robust loop's estimator (robust_loop.hpp): five-point samples, each
// essential matrix split into the poses that put its sample in front, MSAC on the Sampson error, local
// optimisation on its tangent space.
#pragma once

#include "pose.hpp"

namespace rp::pose {

class EssentialEstimator {
public:
    using Model = Pose;
    static constexpr int kSampleSize = 5;
    static constexpr int kMaxModels = 40;  // ten essential matrices, four poses each

    EssentialEstimator(const Bearings &x, double tau2, const EssentialParams &params)
        : x_(x), tau2_(tau2), max_parallax_degrees_(params.max_parallax_degrees),
          screen_{x.turn, x.zoom, params.screen.degrees / kDegrees, params.screen.octaves} {}

    size_t size() const { return x_.size(); }
    const SampleScreen &screen() const { return screen_; }
    int generate(const size_t *sample, Pose *models) const;
    double score(const Pose &pose, double bound) const { return msac_cost(pose.essential(), x_, tau2_, bound); }
    void inliers(const Pose &pose, std::vector<size_t> &out) const { within_threshold(pose.essential(), x_, tau2_, out); }
    double optimise(Pose &pose, std::mt19937_64 &random) const { return local_optimisation(x_, tau2_, pose, random); }
    // In rotation only: under a pure rotation E's translation is free, and models apart only in it fit the noise.
    double apart(const Pose &p, const Pose &q) const { return rotation_apart(p.R, q.R); }

private:
    const Bearings &x_;
    double tau2_;
    double max_parallax_degrees_;
    SampleScreen screen_;
};

}  // namespace rp::pose
