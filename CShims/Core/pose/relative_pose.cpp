// Relative pose from the essential matrix: the orchestrator of the estimator's stages (CShims/Core/pose/), from
// the points' check to the reported evidence, and its C entry point.
#include "pose.hpp"

#include <cstring>

using namespace rp::pose;

namespace {

void check_parameters(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current, const rp_robust_params &params) {
    const size_t n = reference.size();
    if (n < 5) rp::fail(RP_ERR_ESTIMATION, cv::format("essential matrix needs at least 5 matches, got %zu", n));
    for (const auto *points : {&reference, &current}) {
        for (size_t i = 0; i < n; ++i) {
            if (!std::isfinite((*points)[i].x) || !std::isfinite((*points)[i].y)) {
                rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("%s point %zu is not finite", points == &reference ? "reference" : "current", i));
            }
        }
    }
    if (!(params.threshold > 0)) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("threshold must be positive, got %g", params.threshold));
    if (!(params.confidence > 0 && params.confidence < 1)) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("confidence must be in (0, 1), got %g", params.confidence));
    }
    if (params.prior_degrees > 0) {
        // A sanity bound, not a precision one: products of rotations valid to 1e-6 stay far inside it.
        const cv::Matx33d prior(params.prior_R);
        const double off = cv::norm(prior * prior.t() - cv::Matx33d::eye());
        if (!(off < 1e-3 && cv::determinant(prior) > 0) || !std::isfinite(params.prior_degrees) || !(params.prior_excess >= 0)) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("prior must be a rotation with finite degrees and excess >= 0 (degrees %g, excess %g, |R Rt - I| %g)",
                                                     params.prior_degrees, params.prior_excess, off));
        }
    }
    if (params.reproductions < 0 || params.reproductions > 64 || params.reproduce_misses < 0 || params.reproduce_misses > 64 ||
        std::isnan(params.reproduce_above_log10_chance) ||
        std::isnan(params.reproduce_max_log10_chance) || !(params.reproduce_degrees >= 0 && params.reproduce_degrees <= 180)) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("reproductions and misses must be 0...64 with chance bounds that are numbers and degrees in 0...180 (got %d, %d, %g, %g, %g)",
                                                 params.reproductions, params.reproduce_misses, params.reproduce_above_log10_chance,
                                                 params.reproduce_max_log10_chance, params.reproduce_degrees));
    }
    const double axis_length = std::hypot(params.prior_axis[0], params.prior_axis[1], params.prior_axis[2]);
    if (params.guided_samples < 0 || params.guided_min_inliers < 0 || std::isnan(params.guided_above_log10_chance) ||
        (params.guided_samples > 0 && params.prior_degrees > 0 && !(axis_length > 1e-6 && std::isfinite(axis_length)))) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("guided samples and inliers must be 0 or more, with a chance bound that is a number and a finite, "
                                                 "non-zero axis (got %d, %d, %g, |axis| %g)",
                                                 params.guided_samples, params.guided_min_inliers, params.guided_above_log10_chance, axis_length));
    }
    if (!(params.cauchy_scale >= 0 && std::isfinite(params.cauchy_scale))) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("cauchy scale must be finite and >= 0, got %g", params.cauchy_scale));
    }
    if (!(params.screen_degrees >= 0 && params.screen_degrees <= 360 && params.screen_octaves >= 0 && std::isfinite(params.screen_octaves))) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("screen must be 0...360 degrees and finite octaves >= 0 (got %g, %g)",
                                                 params.screen_degrees, params.screen_octaves));
    }
}

// The undistorted bearings, scored by the AVX2 kernels where the CPU has them (unless portable_kernels), and,
// for the sample screen, the keypoints' frames (n angle, size pairs each; either may be NULL).
Bearings bearings(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current, const rp_camera &reference_camera,
                  const rp_camera &current_camera, const PoseParams &params, const float *reference_frames, const float *current_frames) {
    Bearings x = undistorted(reference, current, reference_camera, current_camera);
    x.avx2 = has_avx2() && !params.portable_kernels;
    if (reference_frames && current_frames && params.lo_msac() && params.search.essential.screen.degrees > 0) {
        for (size_t i = 0; i < x.size(); ++i) {
            const float ra = reference_frames[2 * i], rs = reference_frames[2 * i + 1];
            const float ca = current_frames[2 * i], cs = current_frames[2 * i + 1];
            // A detector without orientations (angle -1) or an odd keypoint: no screen rather than a wrong one.
            if (!(ra >= 0 && ca >= 0 && std::isfinite(ra) && std::isfinite(ca) && rs > 0 && cs > 0 && std::isfinite(rs) && std::isfinite(cs))) {
                x.turn.clear();
                x.zoom.clear();
                break;
            }
            x.turn.push_back(double(ca - ra) / kDegrees);
            x.zoom.push_back(std::log2(double(cs) / double(rs)));
        }
    }
    return x;
}

}  // namespace

namespace rp {

pose::PoseParams pose::pose_params(const rp_robust_params &params) {
    PoseParams out;
    out.method = params.method;
    out.threshold = params.threshold;
    out.portable_kernels = params.portable_kernels != 0;
    out.search.loop.confidence = params.confidence;
    out.search.loop.max_iterations = params.max_iterations;
    out.search.loop.min_iterations = params.min_iterations;
    out.search.loop.seed = params.seed;
    out.search.loop.prosac = params.prosac != 0;
    out.search.loop.runners_up = params.runners_up;
    out.search.loop.basin_degrees = kRivalDegrees;
    out.search.essential.max_parallax_degrees = params.max_parallax_degrees;
    out.search.essential.screen = {params.screen_degrees, params.screen_octaves};
    out.search.max_disagreement_degrees = params.max_disagreement_degrees;
    out.refine = {params.refine != 0, params.cauchy_scale};
    out.prior.R = cv::Matx33d(params.prior_R);
    out.prior.degrees = params.prior_degrees;
    out.prior.excess = params.prior_excess;
    out.prior.min_inliers = params.guided_min_inliers;
    out.guided.samples = params.guided_samples;
    out.guided.above_log10_chance = params.guided_above_log10_chance;
    out.guided.axis = cv::Vec3d(params.prior_axis[0], params.prior_axis[1], params.prior_axis[2]);
    out.reproduction.count = params.reproductions;
    out.reproduction.misses = params.reproduce_misses;
    out.reproduction.above_log10_chance = params.reproduce_above_log10_chance;
    out.reproduction.max_log10_chance = params.reproduce_max_log10_chance;
    out.reproduction.degrees = params.reproduce_degrees;
    return out;
}

// The search, then the decisions between its answers, then the evidence of the one decided; each stage reads
// its own parameters (PoseParams).
void estimate_relative_pose(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current,
                            const rp_camera &reference_camera, const rp_camera &current_camera,
                            const rp_robust_params &params, rp_relative_pose &out, std::vector<uint8_t> &inliers,
                            std::vector<double> *sampson_pixels, const float *reference_frames, const float *current_frames) {
    check_parameters(reference, current, params);
    const PoseParams stages = pose_params(params);
    const Bearings x = bearings(reference, current, reference_camera, current_camera, stages, reference_frames, current_frames);
    const double focal = 0.25 * (reference_camera.K[0] + reference_camera.K[4] + current_camera.K[0] + current_camera.K[4]);
    const double tau = stages.threshold / focal, tau2 = tau * tau;

    int iterations = 0;
    std::vector<Pose> runners_up;
    const Pose found = stages.lo_msac() ? search_essential(x, stages.search, tau, iterations, runners_up)
                                        : opencv_pose(x, stages.method, stages.search.loop, tau);
    Decision decision = refined_candidates(x, tau2, stages.refine, found, runners_up);
    if (stages.lo_msac()) prefer_prior(x, tau2, RP_LOCALISATION_FLOOR_PIXELS / focal, stages.prior, decision);
    const double p = chance_per_match(current_camera, stages.threshold);
    long models = stages.lo_msac() ? iterations : stages.search.loop.max_iterations;
    if (stages.lo_msac()) guided_replacement(x, tau2, stages, p, decision, models);
    // The plane of the pose's inliers (for GRIC), and the plane's other solution when it fits better.
    PlaneFit plane = fit_plane(x, tau, stages.search.loop.seed, decision.pose);
    if (stages.lo_msac()) plane_twin_check(x, tau, stages.search.loop.seed, stages.refine, decision, plane);
    decision.pose = most_in_front(decision.pose, x, tau2);
    if (stages.refine.refine && stages.lo_msac()) polish(x, tau2, stages.refine.cauchy_scale, kNoiseFloorPixels / focal, decision.pose);

    // A guided pose was drawn from the guided search's models alone; the gate judges it on those (the sensor's
    // agreement is no evidence for it: that search looked only near the sensor).
    report_evidence(x, tau, focal, p, decision, plane, decision.guided ? long(stages.guided.samples) : models, iterations, out, inliers,
                    sampson_pixels);
    reproduce(x, tau, stages, decision, out);
}

}  // namespace rp

extern "C" int rp_estimate_relative_pose(const double *reference_xy, const double *current_xy, int n,
                                         const rp_camera *reference_camera, const rp_camera *current_camera,
                                         const rp_robust_params *params, rp_relative_pose *pose, uint8_t *inliers,
                                         size_t inliers_capacity, double *sampson_pixels, size_t sampson_capacity,
                                         const float *reference_frames, const float *current_frames, rp_status *status) {
    return rp::guarded(status, [&] {
        rp::check_capacity(inliers, inliers_capacity, n, "inliers");
        rp::check_capacity(sampson_pixels, sampson_capacity, n, "sampson_pixels");
        std::vector<uint8_t> mask;
        std::vector<double> sampson;
        rp::estimate_relative_pose(rp::to_points(reference_xy, n), rp::to_points(current_xy, n), *reference_camera,
                                   *current_camera, *params, *pose, mask, &sampson, reference_frames, current_frames);
        if (inliers) std::memcpy(inliers, mask.data(), mask.size());
        if (sampson_pixels) std::memcpy(sampson_pixels, sampson.data(), sampson.size() * sizeof(double));
    });
}
