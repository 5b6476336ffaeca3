// The benchmark's and the tests' relative pose in C++ alone (native_pose.hpp): a replay of PoseDecision, not a
// second home for its rules; PoseDecisionTests.theCppReplayWithoutASensorAgreesWithPoseDecision holds them together.
#include "native_pose.hpp"

#include "../Core/shim_internal.hpp"
#include "rephoto_shim_tools.h"

#include <cstring>

namespace rp::tools {

using namespace rp::pose;

Decision decided_without_sensor(const Bearings &x, double tau, uint64_t seed, const RefineParams &refine, bool twin,
                                const std::vector<std::pair<double, Pose>> &candidates) {
    Decision out;
    out.cost = candidates.front().first;
    out.pose = candidates.front().second;
    for (size_t k = 1; k < candidates.size(); ++k) {
        std::pair<double, Pose> other = candidates[k];
        if (other.first < out.cost) {
            std::swap(other.second, out.pose);
            std::swap(other.first, out.cost);
        }
        out.rivals.push_back(other);
    }
    if (twin) {
        const Twin other = plane_twin(x, tau, seed, refine, out.pose);
        if (other.found && other.refutation < 0 && other.cost < out.cost) {
            out.rivals.emplace_back(out.cost, out.pose);
            out.pose = other.pose;
            out.cost = other.cost;
        }
    }
    return out;
}

void estimate_relative_pose(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current,
                            const rp_camera &reference_camera, const rp_camera &current_camera, const rp_robust_params &params,
                            rp_relative_pose &out, std::vector<uint8_t> &inliers, std::vector<double> *sampson_pixels,
                            const float *reference_frames, const float *current_frames) {
    const Problem stages = problem(reference, current, reference_camera, current_camera, params, reference_frames, current_frames);
    int iterations = 0;
    long models = 0;
    Decision decision = decided_without_sensor(stages.x, stages.tau, stages.stages.search.loop.seed, stages.stages.refine,
                                               stages.stages.lo_msac(), search(stages, iterations, models));
    conclude(stages, decision, models, 0, iterations, out, inliers, sampson_pixels);
}

}  // namespace rp::tools

extern "C" int rp_tools_estimate_relative_pose(const double *reference_xy, const double *current_xy, int n,
                                               const rp_camera *reference_camera, const rp_camera *current_camera,
                                               const rp_robust_params *params, rp_relative_pose *pose, uint8_t *inliers,
                                               size_t inliers_capacity, double *sampson_pixels, size_t sampson_capacity,
                                               const float *reference_frames, const float *current_frames, rp_status *status) {
    return rp::guarded(status, [&] {
        if (!reference_camera || !current_camera || !params || !pose) rp::fail(RP_ERR_INVALID_ARGUMENT, "a camera, the parameters or the output is NULL");
        rp::check_capacity(inliers, inliers_capacity, n, "inliers");
        rp::check_capacity(sampson_pixels, sampson_capacity, n, "sampson_pixels");
        std::vector<uint8_t> mask;
        std::vector<double> sampson;
        rp::tools::estimate_relative_pose(rp::to_points(reference_xy, n), rp::to_points(current_xy, n), *reference_camera, *current_camera,
                                          *params, *pose, mask, &sampson, reference_frames, current_frames);
        if (inliers) std::memcpy(inliers, mask.data(), mask.size());
        if (sampson_pixels) std::memcpy(sampson_pixels, sampson.data(), sampson.size() * sizeof(double));
    });
}
