// The answers the search's end offers: its pose and runners-up refined, the plane's other solution; and the
// reproductions of a weak pose. Which of them is the pose, and whether a pose is weak enough to search for again,
// RephotoKit's PoseDecision decides.
#include "pose.hpp"

namespace rp::pose {

std::vector<std::pair<double, Pose>> refined(const Bearings &x, double tau2, const RefineParams &refine, const Pose &found,
                                             const std::vector<Pose> &runners_up) {
    std::vector<std::pair<double, Pose>> out;
    out.reserve(runners_up.size() + 1);
    Pose pose = found;
    if (refine.refine) pose::refine(x, tau2, pose, 50);
    out.emplace_back(msac_cost(pose.essential(), x, tau2), pose);
    for (Pose other : runners_up) {
        if (refine.refine) pose::refine(x, tau2, other, 20);
        out.emplace_back(msac_cost(other.essential(), x, tau2), other);
    }
    return out;
}

// On a plane the search may have ended in the wrong one of the plane's two solutions, and local optimisation
// does not cross to the other (a synthetic 60° orbit, 179 matches: 44° wrong with 84 inliers and a 10^-150
// chance, where the other solution, refined, held 93).
Twin plane_twin(const Bearings &x, double tau, uint64_t seed, const RefineParams &refine, const Pose &pose) {
    return plane_twin(x, tau, refine, pose, fit_plane(x, tau, seed, pose));
}

Twin plane_twin(const Bearings &x, double tau, const RefineParams &refine, const Pose &pose, const PlaneFit &plane) {
    Twin out;
    const double tau2 = tau * tau;
    if (!plane.found || !twin_refutation(plane.H, x, tau2, pose, 0.5, out.refutation, out.pose)) return out;
    if (refine.refine) pose::refine(x, tau2, out.pose, 50);
    out.cost = msac_cost(out.pose.essential(), x, tau2);
    out.found = true;
    return out;
}

// A weak pose that independent loops land on again is the data's answer, not the search's luck: on a
// repetitive facade the wrong models scatter from seed to seed (Strecha 0->7 at full resolution: 9-154° over 7
// seeds) while the right ones recur (0->7 at 1280 px: within 2.9° of the truth in 8 of 8). Each loop stops once
// it reaches the pose's basin, at half the cap at most: a loop that size draws an all-inlier sample of 10
// inliers among 49 matches only about half the time, so a few may miss (the scattered wrong models make a second
// chance cheap to grant), and the test ends as soon as it is decided.
Reproduced reproduce(const Bearings &x, double tau, const PoseParams &params, const ReproductionParams &reproduction, const Pose &pose) {
    Reproduced out;
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
        out.runs = k;
        landed.push_back(apart);
        if (apart <= reproduction.degrees) ++reached; else ++missed;
    }
    std::sort(landed.begin(), landed.end());
    out.degrees = landed.size() >= size_t(required) ? landed[size_t(required) - 1] : HUGE_VAL;
    return out;
}

}  // namespace rp::pose
