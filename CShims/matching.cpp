#include "shim_internal.hpp"

#include <opencv2/flann.hpp>

#include <cstdlib>
#include <cstring>

namespace rp {

std::vector<rp_match> match_features(const rp_features &reference, const rp_features &current,
                                     const rp_match_params &params) {
    std::vector<rp_match> result;
    if (reference.descriptors.empty() || current.descriptors.empty()) return result;
    if (reference.binary != current.binary || reference.descriptors.cols != current.descriptors.cols ||
        reference.descriptors.type() != current.descriptors.type()) {
        fail(RP_ERR_INVALID_ARGUMENT,
             cv::format("descriptors differ: reference %s x%d, current %s x%d (use the same detector settings)",
                        reference.binary ? "binary" : "float", reference.descriptors.cols,
                        current.binary ? "binary" : "float", current.descriptors.cols));
    }
    cv::Ptr<cv::DescriptorMatcher> matcher;
    if (params.matcher == RP_MATCHER_FLANN) {
        cv::Ptr<cv::flann::IndexParams> index;
        if (reference.binary) {
            index = cv::makePtr<cv::flann::LshIndexParams>(params.lsh_table_number, params.lsh_key_size,
                                                           params.lsh_multi_probe_level);
        } else {
            index = cv::makePtr<cv::flann::KDTreeIndexParams>(params.kdtree_trees);
        }
        matcher = cv::makePtr<cv::FlannBasedMatcher>(index, cv::makePtr<cv::flann::SearchParams>(params.flann_checks));
    } else if (params.matcher == RP_MATCHER_BRUTE_FORCE) {
        matcher = cv::BFMatcher::create(reference.norm, false);
    } else {
        fail(RP_ERR_INVALID_ARGUMENT, "unknown matcher kind " + std::to_string(params.matcher));
    }

    // Query = current, train = reference: the reference side can be reused across frames.
    std::vector<std::vector<cv::DMatch>> knn;
    matcher->knnMatch(current.descriptors, reference.descriptors, knn, 2);
    std::vector<int> reverse_best;
    if (params.mutual) {
        std::vector<std::vector<cv::DMatch>> reverse;
        cv::Ptr<cv::DescriptorMatcher> back = matcher->clone(true);
        back->knnMatch(reference.descriptors, current.descriptors, reverse, 1);
        reverse_best.assign(reverse.size(), -1);
        for (size_t i = 0; i < reverse.size(); ++i) {
            if (!reverse[i].empty()) reverse_best[i] = reverse[i][0].trainIdx;
        }
    }
    result.reserve(knn.size());
    for (const std::vector<cv::DMatch> &candidates : knn) {
        if (candidates.empty()) continue;
        const cv::DMatch &best = candidates[0];
        if (params.ratio < 1.0f && candidates.size() >= 2 && !(best.distance < params.ratio * candidates[1].distance)) {
            continue;
        }
        if (params.mutual && (best.trainIdx < 0 || size_t(best.trainIdx) >= reverse_best.size() ||
                              reverse_best[size_t(best.trainIdx)] != best.queryIdx)) {
            continue;
        }
        result.push_back(rp_match{best.trainIdx, best.queryIdx, best.distance});
    }
    return result;
}

}  // namespace rp

extern "C" int rp_match_features(const rp_features *reference, const rp_features *current,
                                 const rp_match_params *params, rp_match **matches, int *count, rp_status *status) {
    *matches = nullptr;
    *count = 0;
    return rp::guarded(status, [&] {
        std::vector<rp_match> found = rp::match_features(*reference, *current, *params);
        if (found.empty()) return;
        *matches = static_cast<rp_match *>(std::malloc(found.size() * sizeof(rp_match)));
        if (*matches == nullptr) throw std::bad_alloc();
        std::memcpy(*matches, found.data(), found.size() * sizeof(rp_match));
        *count = int(found.size());
    });
}
