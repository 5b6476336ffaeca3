// The pose pipeline written straight against OpenCV (no Swift), so the benchmark can measure what the
// Swift layer adds. Keep its stages in step with PoseEstimator.estimate in RephotoKit.
#include "../Core/shim_internal.hpp"
#include "native_pose.hpp"
#include "rephoto_shim_tools.h"

#include <algorithm>
#include <chrono>
#include <numeric>

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}
}  // namespace

extern "C" int rp_native_pipeline(const uint8_t *reference_bytes, size_t reference_length, const uint8_t *current_bytes,
                                  size_t current_length, const rp_detector_params *detector,
                                  const rp_match_params *matching, const rp_homography_params *homography,
                                  const rp_robust_params *essential, int order_by_ratio, const rp_camera *camera, double timings_ms[7],
                                  int counts[4], rp_status *status) {
    return rp::guarded(status, [&] {
        Clock::time_point total = Clock::now(), stage = total;
        const rp::decode_reduction reduction{detector->max_dimension, detector->scale};
        rp_image reference = rp::decode_image(reference_bytes, reference_length, 0, true, reduction);
        rp_image current = rp::decode_image(current_bytes, current_length, 0, true, reduction);
        timings_ms[0] = ms_since(stage);

        stage = Clock::now();
        rp_features reference_features, current_features;
        rp::detect_features(reference, *detector, cv::Mat(), reference_features);
        timings_ms[1] = ms_since(stage);
        stage = Clock::now();
        rp::detect_features(current, *detector, cv::Mat(), current_features);
        timings_ms[2] = ms_since(stage);

        stage = Clock::now();
        std::vector<rp_match> matches = rp::match_features(reference_features, current_features, *matching);
        // PROSAC draws from the front: best first, ties in match order, as Correspondences.bestFirst orders them.
        if (essential->loop.prosac) {
            std::vector<size_t> order(matches.size());
            std::iota(order.begin(), order.end(), size_t(0));
            auto key = [&](size_t i) { return order_by_ratio ? matches[i].ratio : matches[i].distance; };
            std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return key(x) != key(y) ? key(x) < key(y) : x < y; });
            std::vector<rp_match> sorted;
            sorted.reserve(matches.size());
            for (size_t i : order) sorted.push_back(matches[i]);
            matches.swap(sorted);
        }
        std::vector<cv::Point2d> a, b;
        std::vector<float> frames_a, frames_b;  // the sample screen's angle, size pairs, as the Swift path passes them
        for (const rp_match &m : matches) {
            const cv::KeyPoint &p = reference_features.keypoints[size_t(m.reference_index)];
            const cv::KeyPoint &q = current_features.keypoints[size_t(m.current_index)];
            a.push_back(p.pt);
            b.push_back(q.pt);
            frames_a.insert(frames_a.end(), {p.angle, p.size});
            frames_b.insert(frames_b.end(), {q.angle, q.size});
        }
        timings_ms[3] = ms_since(stage);

        stage = Clock::now();
        cv::Mat mask;
        rp::find_homography(a, b, *homography, mask);
        timings_ms[4] = ms_since(stage);

        stage = Clock::now();
        rp_relative_pose pose;
        std::vector<uint8_t> inliers;
        rp::tools::estimate_relative_pose(a, b, *camera, *camera, *essential, pose, inliers, nullptr, frames_a.data(), frames_b.data());
        timings_ms[5] = ms_since(stage);
        timings_ms[6] = ms_since(total);
        counts[0] = int(reference_features.keypoints.size());
        counts[1] = int(current_features.keypoints.size());
        counts[2] = int(matches.size());
        counts[3] = cv::countNonZero(mask);
    });
}
