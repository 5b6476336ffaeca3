// The relative pose as the benchmark's native pipeline (native_pipeline.cpp) and the tests' C++ path compute it:
// the Core stages, with RephotoKit's PoseDecision replayed without a sensor. The library's answers are
// PoseDecision's; PoseDecisionTests checks that the two agree.
#pragma once

#include "../Core/pose/pose.hpp"

namespace rp::tools {

// PoseDecision's choices without a sensor: the cheapest refined candidate (PoseDecision.cheapest), then the plane's
// other solution when PoseDecision.twinReplaces would take it.
pose::Decision decided_without_sensor(const pose::Bearings &x, double tau, uint64_t seed, const pose::RefineParams &refine, bool twin,
                                      const std::vector<std::pair<double, pose::Pose>> &candidates);

// The search, the replayed decision, the evidence (frames: n angle, size pairs each, may be NULL).
void estimate_relative_pose(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current,
                            const rp_camera &reference_camera, const rp_camera &current_camera, const rp_robust_params &params,
                            rp_relative_pose &pose, std::vector<uint8_t> &inliers, std::vector<double> *sampson_pixels = nullptr,
                            const float *reference_frames = nullptr, const float *current_frames = nullptr);

}  // namespace rp::tools
