// Relative pose from the essential matrix in stages (CShims/Core/pose/): the search, the sensor-guided search, the
// evidence of the pose decided and the reproductions, each its own C entry point. Which stage runs, and which
// answer is the pose, RephotoKit's PoseDecision decides (the tools' native pipeline replays it: CShims/Tools/native_pose.cpp).
#include "pose.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

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
    check_loop_options(params.loop);
    const rp_essential_options &essential = params.essential;
    if (!(essential.cauchy_scale >= 0 && std::isfinite(essential.cauchy_scale))) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("cauchy scale must be finite and >= 0, got %g", essential.cauchy_scale));
    }
    if (!(essential.screen_degrees >= 0 && essential.screen_degrees <= 360 && essential.screen_octaves >= 0 && std::isfinite(essential.screen_octaves))) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("screen must be 0...360 degrees and finite octaves >= 0 (got %g, %g)",
                                                 essential.screen_degrees, essential.screen_octaves));
    }
}

// A rotation (a sanity bound, not a precision one: products of rotations valid to 1e-6 stay far inside it).
void check_rotation(const double *R, const char *name) {
    const cv::Matx33d M(R);
    const double off = cv::norm(M * M.t() - cv::Matx33d::eye());
    if (!(off < 1e-3 && cv::determinant(M) > 0)) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("%s must be a rotation (|R Rt - I| %g)", name, off));
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


Pose pose_of(const double *R, const double *t) {
    Pose pose;
    pose.R = cv::Matx33d(R);
    pose.t = cv::Vec3d(t[0], t[1], t[2]);
    return pose;
}

// The search and its refined candidates, in its order (refined); `models` the samples behind the chance.
}  // namespace

namespace rp::pose {

Problem problem(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current, const rp_camera &reference_camera,
                const rp_camera &current_camera, const rp_robust_params &params, const float *reference_frames, const float *current_frames) {
    check_parameters(reference, current, params);
    Problem out;
    out.stages = pose_params(params);
    out.x = bearings(reference, current, reference_camera, current_camera, out.stages, reference_frames, current_frames);
    out.focal = 0.25 * (reference_camera.K[0] + reference_camera.K[4] + current_camera.K[0] + current_camera.K[4]);
    out.tau = out.stages.threshold / out.focal;
    out.tau2 = out.tau * out.tau;
    out.p = chance_per_match(current_camera, out.stages.threshold);
    return out;
}

Problem problem(const rp_pose_input &input, const rp_robust_params &params) {
    if (!input.reference_camera || !input.current_camera) rp::fail(RP_ERR_INVALID_ARGUMENT, "a camera is NULL");
    return problem(rp::to_points(input.reference_xy, input.n), rp::to_points(input.current_xy, input.n), *input.reference_camera,
                   *input.current_camera, params, input.reference_frames, input.current_frames);
}

const PlaneFit &Problem::plane_of(const Pose &pose) const {
    const bool same = last_plane.has_value() && last_plane->first.R == pose.R && last_plane->first.t == pose.t;
    if (!same) last_plane.emplace(pose, fit_plane(x, tau, stages.search.loop.seed, pose));
    return last_plane->second;
}

std::vector<std::pair<double, Pose>> search(const Problem &problem, int &iterations, long &models) {
    iterations = 0;
    std::vector<Pose> runners_up;
    const PoseParams &stages = problem.stages;
    const Pose found = stages.lo_msac() ? search_essential(problem.x, stages.search, problem.tau, iterations, runners_up)
                                        : opencv_pose(problem.x, stages.method, stages.search.loop, problem.tau);
    models = stages.lo_msac() ? iterations : stages.search.loop.max_iterations;
    return refined(problem.x, problem.tau2, stages.refine, found, runners_up);
}

// The plane of the pose's inliers (for GRIC), the decomposition in front and the polish, then the evidence.
void conclude(const Problem &problem, Decision &decision, long models, long guided_samples, int iterations, rp_relative_pose &out,
              std::vector<uint8_t> &inliers, std::vector<double> *sampson_pixels) {
    const PoseParams &stages = problem.stages;
    const Bearings &x = problem.x;
    const PlaneFit &plane = problem.plane_of(decision.pose);
    decision.pose = most_in_front(decision.pose, x, problem.tau2);
    if (stages.refine.refine && stages.lo_msac()) polish(x, problem.tau2, stages.refine.cauchy_scale, kNoiseFloorPixels / problem.focal, decision.pose);
    // A guided pose was drawn from the guided search's models alone: its chance counts those.
    report_evidence(x, problem.tau, problem.focal, problem.p, decision, plane, decision.guided ? guided_samples : models, iterations, out,
                    inliers, sampson_pixels);
    out.reproductions = 0;
    out.reproduction_degrees = 0;
}

}  // namespace rp::pose

namespace rp {

// The one check of the loop's options, for every stage and rp_check_loop_options.
void pose::check_loop_options(const rp_loop_options &loop) {
    if (!(loop.threshold > 0 && std::isfinite(loop.threshold))) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("threshold must be positive, got %g", loop.threshold));
    }
    if (!(loop.confidence > 0 && loop.confidence < 1)) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("confidence must be in (0, 1), got %g", loop.confidence));
    }
    if (loop.max_iterations < 0 || loop.min_iterations < 0 || loop.runners_up < 0) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("iterations and runners-up must be >= 0 (got %d, %d, %d)", loop.max_iterations,
                                                 loop.min_iterations, loop.runners_up));
    }
    if (!(loop.max_disagreement_degrees >= 0 && std::isfinite(loop.max_disagreement_degrees))) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("max disagreement must be finite and >= 0, got %g", loop.max_disagreement_degrees));
    }
}

// The stages' view of the two option structs (C++ only).
pose::PoseParams pose::pose_params(const rp_robust_params &params) {
    const rp_loop_options &loop = params.loop;
    const rp_essential_options &essential = params.essential;
    PoseParams out;
    out.method = essential.method;
    out.threshold = loop.threshold;
    out.portable_kernels = essential.portable_kernels != 0;
    out.search.loop.confidence = loop.confidence;
    out.search.loop.max_iterations = loop.max_iterations;
    out.search.loop.min_iterations = loop.min_iterations;
    out.search.loop.seed = loop.seed;
    out.search.loop.prosac = loop.prosac != 0;
    out.search.loop.runners_up = loop.runners_up;
    out.search.loop.basin_degrees = kRivalDegrees;
    out.search.essential.max_parallax_degrees = essential.max_parallax_degrees;
    out.search.essential.screen = {essential.screen_degrees, essential.screen_octaves};
    out.search.max_disagreement_degrees = loop.max_disagreement_degrees;
    out.refine = {essential.refine != 0, essential.cauchy_scale};
    return out;
}

}  // namespace rp

struct rp_pose_problem {
    Problem problem;
    int n = 0;
};

extern "C" int rp_pose_problem_create(const rp_pose_input *input, const rp_robust_params *params, rp_pose_problem **out, rp_status *status) {
    if (out) *out = nullptr;
    return rp::guarded(status, [&] {
        if (!input || !params || !out) rp::fail(RP_ERR_INVALID_ARGUMENT, "the input, the parameters or the output is NULL");
        auto made = std::make_unique<rp_pose_problem>();
        made->problem = problem(*input, *params);
        made->n = input->n;
        *out = made.release();
    });
}

extern "C" void rp_pose_problem_free(rp_pose_problem *problem) { delete problem; }

namespace {

const rp_pose_problem &checked(const rp_pose_problem *problem) {
    if (!problem) rp::fail(RP_ERR_INVALID_ARGUMENT, "no pose problem");
    return *problem;
}

}  // namespace

extern "C" int rp_pose_search(const rp_pose_problem *problem, const double *prior_R,
                              rp_pose_search_result *out, rp_pose_candidate *candidates, size_t candidates_capacity, rp_status *status) {
    return rp::guarded(status, [&] {
        if (prior_R) check_rotation(prior_R, "prior");
        const Problem &stages = checked(problem).problem;
        int iterations = 0;
        long models = 0;
        const std::vector<std::pair<double, Pose>> found = search(stages, iterations, models);
        if (found.size() > candidates_capacity) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("%zu candidates for a capacity of %zu", found.size(), candidates_capacity));
        }
        const cv::Matx33d prior = prior_R ? cv::Matx33d(prior_R) : cv::Matx33d::eye();
        const double noise_floor = RP_LOCALISATION_FLOOR_PIXELS / stages.focal;
        const CandidateContext context{stages.x, stages.tau2, noise_floor, stages.p, models, prior_R ? &prior : nullptr};
        *out = rp_pose_search_result{};
        for (size_t k = 0; k < found.size(); ++k) record(context, found[k].second, found[k].first, found.front().first, nullptr, candidates[k]);
        out->candidates = int(found.size());
        out->iterations = iterations;
        out->models = models;
        out->threshold_squared = stages.tau2;
    });
}

extern "C" int rp_pose_twin(const rp_pose_problem *problem, const double R[9], const double t[3], double cost,
                            long models, int *found, rp_pose_candidate *twin, int *refutation, rp_status *status) {
    *found = 0;
    *refutation = 0;
    return rp::guarded(status, [&] {
        if (models < 0) rp::fail(RP_ERR_INVALID_ARGUMENT, "a negative model count");
        const Problem &stages = checked(problem).problem;
        const Pose pose = pose_of(R, t);
        const Twin other = plane_twin(stages.x, stages.tau, stages.stages.refine, pose, stages.plane_of(pose));
        if (!other.found) return;
        const CandidateContext context{stages.x, stages.tau2, RP_LOCALISATION_FLOOR_PIXELS / stages.focal, stages.p, models, nullptr};
        record(context, other.pose, other.cost, cost, &pose, *twin);
        *refutation = other.refutation;
        *found = 1;
    });
}

extern "C" int rp_pose_guided_search(const rp_pose_problem *problem, const rp_guided_search_params *guided,
                                     const double pose_R[9], const double pose_t[3], int *found, rp_pose_candidate *candidate,
                                     rp_status *status) {
    *found = 0;
    return rp::guarded(status, [&] {
        check_rotation(guided->prior_R, "prior");
        const double axis_length = std::hypot(guided->axis[0], guided->axis[1], guided->axis[2]);
        if (guided->samples < 1 || !(guided->degrees > 0 && std::isfinite(guided->degrees)) || !(axis_length > 1e-6 && std::isfinite(axis_length))) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("the guided search needs samples >= 1, finite degrees > 0 and a finite, non-zero axis "
                                                     "(got %d, %g, |axis| %g)", guided->samples, guided->degrees, axis_length));
        }
        const Problem &stages = checked(problem).problem;
        const cv::Matx33d prior(guided->prior_R);
        Guided result = guided_search(stages.x, prior, cv::Vec3d(guided->axis), guided->degrees, stages.tau2, guided->samples,
                                      guided->seed ^ 0x6A09E667F3BCC909ULL);
        if (!std::isfinite(result.cost)) return;
        if (guided->refine) refine(stages.x, stages.tau2, result.pose, 50);
        result.cost = msac_cost(result.pose.essential(), stages.x, stages.tau2);
        const Pose compared = pose_of(pose_R, pose_t);
        const CandidateContext context{stages.x, stages.tau2, RP_LOCALISATION_FLOOR_PIXELS / stages.focal, stages.p, long(guided->samples), &prior};
        record(context, result.pose, result.cost, result.cost, &compared, *candidate);
        *found = 1;
    });
}

extern "C" int rp_pose_evidence(const rp_pose_problem *problem, const double R[9], const double t[3], double cost,
                                const rp_pose_candidate *rivals, int rival_count, int guided, long models, int guided_samples, int iterations,
                                rp_relative_pose *pose, uint8_t *inliers, size_t inliers_capacity, double *sampson_pixels,
                                size_t sampson_capacity, rp_status *status) {
    return rp::guarded(status, [&] {
        rp::check_capacity(inliers, inliers_capacity, checked(problem).n, "inliers");
        rp::check_capacity(sampson_pixels, sampson_capacity, checked(problem).n, "sampson_pixels");
        if (rival_count < 0 || (rival_count > 0 && !rivals) || guided_samples < 0 || models < 0) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, "negative counts, or rivals without their array");
        }
        const Problem &stages = checked(problem).problem;
        Decision decision;
        decision.pose = pose_of(R, t);
        decision.cost = cost;
        decision.guided = guided != 0;
        for (int k = 0; k < rival_count; ++k) decision.rivals.emplace_back(rivals[k].cost, pose_of(rivals[k].R, rivals[k].t));
        std::vector<uint8_t> mask;
        std::vector<double> sampson;
        conclude(stages, decision, models, guided_samples, iterations, *pose, mask, &sampson);
        if (inliers) std::memcpy(inliers, mask.data(), mask.size());
        if (sampson_pixels) std::memcpy(sampson_pixels, sampson.data(), sampson.size() * sizeof(double));
    });
}

extern "C" int rp_pose_reproduce(const rp_pose_problem *problem, const rp_reproduction_params *reproduction,
                                 const double R[9], const double t[3], int *runs, double *degrees, rp_status *status) {
    *runs = 0;
    *degrees = 0;
    return rp::guarded(status, [&] {
        if (reproduction->count < 1 || reproduction->count > 64 || reproduction->misses < 0 || reproduction->misses > 64 ||
            !(reproduction->degrees >= 0 && reproduction->degrees <= 180)) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("reproductions must be 1...64, misses 0...64 and degrees in 0...180 (got %d, %d, %g)",
                                                     reproduction->count, reproduction->misses, reproduction->degrees));
        }
        const Problem &stages = checked(problem).problem;
        if (!stages.stages.lo_msac()) rp::fail(RP_ERR_INVALID_ARGUMENT, "reproductions run LO-MSAC only");
        const Reproduced found = reproduce(stages.x, stages.tau, stages.stages, ReproductionParams{reproduction->count, reproduction->misses,
                                                                                                 reproduction->degrees}, pose_of(R, t));
        *runs = found.runs;
        *degrees = found.degrees;
    });
}

extern "C" int rp_pose_rotation(const rp_pose_problem *problem, const uint8_t *selected, double R[9],
                                int *support, rp_status *status) {
    *support = 0;
    return rp::guarded(status, [&] {
        if (!selected) rp::fail(RP_ERR_INVALID_ARGUMENT, "no selection");
        const Problem &stages = checked(problem).problem;
        const std::vector<uint8_t> chosen(selected, selected + problem->n);
        const long count = std::count_if(chosen.begin(), chosen.end(), [](uint8_t flag) { return flag != 0; });
        if (count < 3) rp::fail(RP_ERR_ESTIMATION, cv::format("a rotation needs at least 3 correspondences, got %ld", count));
        const double transfer_tau = stages.tau * kTransferPerSampson;
        const cv::Matx33d rotation = pure_rotation(stages.x, chosen, transfer_tau);
        std::memcpy(R, rotation.val, 9 * sizeof(double));
        *support = rotation_support(stages.x, rotation, chosen, transfer_tau);
    });
}

extern "C" int rp_check_loop_options(const rp_loop_options *loop, rp_status *status) {
    return rp::guarded(status, [&] {
        if (!loop) rp::fail(RP_ERR_INVALID_ARGUMENT, "no loop options");
        check_loop_options(*loop);
    });
}
