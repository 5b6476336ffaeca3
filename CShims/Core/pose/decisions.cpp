// Deciding between answers once the search has ended: the refined runners-up, the sensor's prior, the guided
// search, the plane's other solution, and the reproductions of a weak pose.
#include "pose.hpp"

namespace rp::pose {

Decision refined_candidates(const Bearings &x, double tau2, const RefineParams &refine, const Pose &found, const std::vector<Pose> &runners_up) {
    Decision out;
    out.pose = found;
    if (refine.refine) pose::refine(x, tau2, out.pose, 50);
    out.cost = msac_cost(out.pose.essential(), x, tau2);
    for (Pose other : runners_up) {
        if (refine.refine) pose::refine(x, tau2, other, 20);
        double cost = msac_cost(other.essential(), x, tau2);
        if (cost < out.cost) {
            std::swap(other, out.pose);
            std::swap(cost, out.cost);
        }
        out.rivals.emplace_back(cost, other);
    }
    return out;
}

// Only a rival with the inliers to stand on its own (min_inliers): on a weak pair a stray model a few inliers
// short of the pose is as near, and a prior off by 20° picked one (7 inliers against the pose's 11).
void prefer_prior(const Bearings &x, double tau2, double noise_floor, const PriorParams &prior, Decision &decision) {
    if (!(prior.degrees > 0)) return;
    if (!(rotation_apart(decision.pose.R, prior.R) > 2 * prior.degrees)) return;
    auto pick = decision.rivals.end();
    for (auto it = decision.rivals.begin(); it != decision.rivals.end(); ++it) {
        if (!((it->first - decision.cost) / tau2 < prior.excess)) continue;
        if (!(rotation_apart(it->second.R, prior.R) <= prior.degrees)) continue;
        if (count_within(it->second.essential(), x, tau2) < prior.min_inliers) continue;
        // And one its own inliers can stand in front of (the gate's rule): on a bare wall a runner-up at the
        // plane's other rotation put 146 of its 274 behind a camera, and the swap turned a planar answer into a failure.
        if (!consistent(most_in_front(it->second, x, tau2), x, tau2, noise_floor)) continue;
        if (pick == decision.rivals.end() || it->first < pick->first) pick = it;
    }
    if (pick != decision.rivals.end()) {
        std::swap(pick->second, decision.pose);
        std::swap(pick->first, decision.cost);
    }
}

// The search may have missed the basin the prior points to (a weak pair's all-inlier sample is rare). The
// guided pose, when within the prior, replaces one the prior rules out, or another answer it fits better; the
// replaced pose becomes its rival (the gate weighs the two with the sensor). One with too few inliers to pass
// the gate would only hide the pose's own reason for failing. A pose the prior backs was found independently of
// the sensor, so its agreement with it is evidence; the guided one's is not.
void guided_replacement(const Bearings &x, double tau2, const PoseParams &params, double p, Decision &decision, long &models) {
    const PriorParams &prior = params.prior;
    const GuidedParams &guided = params.guided;
    if (!(prior.degrees > 0 && guided.samples > 0 &&
          log10_chance(int(x.size()), count_within(decision.pose.essential(), x, tau2), p, models) > guided.above_log10_chance))
        return;
    Guided found = guided_search(x, prior.R, guided.axis, prior.degrees, tau2, guided.samples, params.search.loop.seed ^ 0x6A09E667F3BCC909ULL);
    models += guided.samples;
    if (!std::isfinite(found.cost)) return;
    if (params.refine.refine) refine(x, tau2, found.pose, 50);
    found.cost = msac_cost(found.pose.essential(), x, tau2);
    const Separation apart = separation(found.pose, decision.pose);
    if (rotation_apart(found.pose.R, prior.R) <= prior.degrees && count_within(found.pose.essential(), x, tau2) >= prior.min_inliers &&
        (rotation_apart(decision.pose.R, prior.R) > prior.degrees ||
         (found.cost < decision.cost && std::max(apart.rotation, apart.translation) >= kRivalDegrees))) {
        decision.rivals.emplace_back(decision.cost, decision.pose);
        decision.pose = found.pose;
        decision.cost = found.cost;
        decision.guided = true;
    }
}

// On a plane the search may have ended in the wrong one of the plane's two solutions, and local optimisation
// does not cross to the other (a synthetic 60° orbit, 179 matches: 44° wrong with 84 inliers and a 10^-150
// chance, where the other solution, refined, held 93). The replaced pose joins the rivals; a pose the plane's
// solution replaced is no longer the guided search's.
bool plane_twin_check(const Bearings &x, double tau, uint64_t seed, const RefineParams &refine, Decision &decision, PlaneFit &plane) {
    if (!plane.found) return false;
    const double tau2 = tau * tau;
    int refutation = 0;
    Pose other;
    if (!twin_refutation(plane.H, x, tau2, decision.pose, 0.5, refutation, other) || refutation >= 0) return false;
    if (refine.refine) pose::refine(x, tau2, other, 50);
    const double cost = msac_cost(other.essential(), x, tau2);
    if (!(cost < decision.cost)) return false;
    decision.rivals.emplace_back(decision.cost, decision.pose);
    decision.pose = other;
    decision.cost = cost;
    decision.guided = false;
    plane = fit_plane(x, tau, seed, decision.pose);
    return true;
}

// A weak pose that independent loops land on again is the data's answer, not the search's luck: on a
// repetitive facade the wrong models scatter from seed to seed (Strecha 0->7 at full resolution: 9-154° over 7
// seeds) while the right ones recur (0->7 at 1280 px: within 2.9° of the truth in 8 of 8). Each loop stops once
// it reaches the pose's basin, at half the cap at most: a loop that size draws an all-inlier sample of 10
// inliers among 49 matches only about half the time, so a few may miss (the scattered wrong models make a second
// chance cheap to grant), and the test ends as soon as it is decided. Not for a guided pose: that search looked
// only near the sensor.
void reproduce(const Bearings &x, double tau, const PoseParams &params, const Decision &decision, rp_relative_pose &out) {
    out.reproductions = 0;
    out.reproduction_degrees = 0;
    const ReproductionParams &reproduction = params.reproduction;
    if (!(params.lo_msac() && !decision.guided && reproduction.count > 0 && out.log10_chance > reproduction.above_log10_chance &&
          out.log10_chance <= reproduction.max_log10_chance))
        return;
    const Pose &pose = decision.pose;
    const double tau2 = tau * tau;
    const int required = reproduction.count, misses = std::max(0, reproduction.misses);
    std::vector<double> landed;
    int reached = 0, missed = 0;
    for (int k = 1; reached < required && missed <= misses && k <= required + misses; ++k) {
        const LoopResult<Pose> again = essential_loop(x, params.search, tau, params.search.loop.seed + uint64_t(k) * 0xD1B54A32D192ED03ULL,
                                                      std::max(1, params.search.loop.max_iterations / 2), &pose, reproduction.degrees);
        double apart = HUGE_VAL;
        if (std::isfinite(again.cost)) {
            Pose other = again.model;
            if (!again.reached && params.refine.refine) refine(x, tau2, other, 20);
            apart = rotation_apart(again.reached ? other.R : most_in_front(other, x, tau2).R, pose.R);
        }
        out.reproductions = k;
        landed.push_back(apart);
        if (apart <= reproduction.degrees) ++reached; else ++missed;
    }
    std::sort(landed.begin(), landed.end());
    out.reproduction_degrees = landed.size() >= size_t(required) ? landed[size_t(required) - 1] : HUGE_VAL;
}

}  // namespace rp::pose
