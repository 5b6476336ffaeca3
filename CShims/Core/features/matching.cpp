#include "../shim_internal.hpp"

#include <opencv2/flann.hpp>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <cstring>

struct rp_match_index {
    // A copy of the reference features: keypoints copied, descriptors shared by cv::Mat's reference count, so
    // the index keeps them alive after the caller frees the features handle.
    rp_features reference;
    std::unique_ptr<cv::flann::Index> index;
    rp_match_params built_with;  // a search with other FLANN settings builds its own index instead
};

namespace {

// FLANN draws its LSH bit selections from cv::theRNG() (per thread) and its KD-tree splits from C rand() (per
// process). A build seeds both with a constant and puts the caller's states back afterwards: the thread's RNG by
// value, and rand()'s by swapping in a private state (glibc's rand() shares random()'s state, which initstate()
// and setstate() exchange). So every index, and every match, is the same from run to run whatever the thread
// order, and neither the caller's RNG nor the process's rand() sequence moves. Builds take turns on the latter.
std::mutex flann_build_mutex;
constexpr unsigned flann_seed = 24301;

class PrivateRandState {
public:
    PrivateRandState() : saved_rng_(cv::theRNG()) {
        cv::theRNG() = cv::RNG(flann_seed);
#if defined(__GLIBC__)
        previous_ = initstate(flann_seed, state_, sizeof(state_));
#endif
    }
    ~PrivateRandState() {
        cv::theRNG() = saved_rng_;
#if defined(__GLIBC__)
        if (previous_ != nullptr) setstate(previous_);
#endif
    }
    PrivateRandState(const PrivateRandState &) = delete;
    PrivateRandState &operator=(const PrivateRandState &) = delete;

private:
    cv::RNG saved_rng_;
    char state_[256];
    char *previous_ = nullptr;
};

cv::Ptr<cv::flann::IndexParams> index_params(bool binary, const rp_match_params &params) {
    if (binary) {
        return cv::makePtr<cv::flann::LshIndexParams>(params.lsh_table_number, params.lsh_key_size, params.lsh_multi_probe_level);
    }
    return cv::makePtr<cv::flann::KDTreeIndexParams>(params.kdtree_trees);
}

void check_compatible(const rp_features &reference, const rp_features &current) {
    if (reference.binary != current.binary || reference.descriptors.cols != current.descriptors.cols ||
        reference.descriptors.type() != current.descriptors.type()) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, RP_CAUSE_DESCRIPTOR_MISMATCH,
                 cv::format("descriptors differ: reference %s x%d, current %s x%d (use the same detector settings)",
                            reference.binary ? "binary" : "float", reference.descriptors.cols,
                            current.binary ? "binary" : "float", current.descriptors.cols));
    }
}

// One FLANN index build for every path (per frame, prebuilt, reverse), seeded so matches repeat exactly.
std::unique_ptr<cv::flann::Index> build_index(const cv::Mat &descriptors, bool binary, const rp_match_params &params) {
    std::lock_guard<std::mutex> lock(flann_build_mutex);
    PrivateRandState private_state;
    return std::make_unique<cv::flann::Index>(descriptors, *index_params(binary, params),
                                              binary ? cvflann::FLANN_DIST_HAMMING : cvflann::FLANN_DIST_L2);
}

// k nearest neighbours of every query row in a FLANN index, as DMatch lists with true (not squared) distances.
std::vector<std::vector<cv::DMatch>> flann_knn(cv::flann::Index &index, const cv::Mat &query, int train_rows, bool binary,
                                               int k, int checks) {
    k = std::min(k, train_rows);
    std::vector<std::vector<cv::DMatch>> knn(size_t(query.rows));
    if (k <= 0 || query.empty()) return knn;
    cv::Mat indices, distances;
    index.knnSearch(query, indices, distances, k, cv::flann::SearchParams(checks));
    for (int q = 0; q < query.rows; ++q) {
        for (int j = 0; j < k; ++j) {
            int train = indices.at<int>(q, j);
            float d = distances.type() == CV_32F ? distances.at<float>(q, j) : float(distances.at<int>(q, j));
            if (train >= 0) knn[size_t(q)].emplace_back(q, train, binary ? d : std::sqrt(std::max(d, 0.f)));
        }
    }
    return knn;
}

// Lowe's ratio test on k=2 neighbours (query = current, train = reference).
std::vector<rp_match> ratio_filter(const std::vector<std::vector<cv::DMatch>> &knn, float ratio) {
    std::vector<rp_match> result;
    result.reserve(knn.size());
    for (const std::vector<cv::DMatch> &candidates : knn) {
        if (candidates.empty() || candidates[0].trainIdx < 0) continue;
        const cv::DMatch &best = candidates[0];
        if (ratio < 1.0f && candidates.size() >= 2 && candidates[1].trainIdx >= 0 && !(best.distance < ratio * candidates[1].distance)) {
            continue;
        }
        const bool second = candidates.size() >= 2 && candidates[1].trainIdx >= 0 && candidates[1].distance > 0;
        result.push_back(rp_match{best.trainIdx, best.queryIdx, best.distance, second ? best.distance / candidates[1].distance : 1.0f});
    }
    return result;
}

rp_match *copy_out(const std::vector<rp_match> &found, int *count) {
    *count = int(found.size());
    if (found.empty()) return nullptr;
    auto *out = static_cast<rp_match *>(std::malloc(found.size() * sizeof(rp_match)));
    if (out == nullptr) throw std::bad_alloc();
    std::memcpy(out, found.data(), found.size() * sizeof(rp_match));
    return out;
}

// The candidates every ratio and mutual filter chooses from: the two nearest reference descriptors of each
// current one and, for the mutual check, the nearest current descriptor of each reference one (-1: none).
struct Neighbours {
    std::vector<std::vector<cv::DMatch>> knn;
    std::vector<int> reverse_best;
    bool has_reverse = false;
};

// `prebuilt` (may be null) is a FLANN index over the reference's descriptors, used for the forward search.
Neighbours neighbours_with(const rp_features &reference, const rp_features &current, const rp_match_params &params,
                           cv::flann::Index *prebuilt) {
    Neighbours found;
    found.has_reverse = params.mutual != 0;
    if (reference.descriptors.empty() || current.descriptors.empty()) return found;
    check_compatible(reference, current);
    if (params.matcher != RP_MATCHER_FLANN && params.matcher != RP_MATCHER_BRUTE_FORCE && params.matcher != RP_MATCHER_OPENCV_BRUTE_FORCE) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, "unknown matcher kind " + std::to_string(params.matcher));
    }
    // Query = current, train = reference: the reference side can be reused across frames.
    std::vector<std::vector<cv::DMatch>> reverse;
    if (params.matcher == RP_MATCHER_FLANN) {
        std::unique_ptr<cv::flann::Index> built;
        if (prebuilt == nullptr) built = build_index(reference.descriptors, reference.binary, params);
        found.knn = flann_knn(prebuilt ? *prebuilt : *built, current.descriptors, reference.descriptors.rows, reference.binary, 2,
                              params.flann_checks);
        if (params.mutual) {
            reverse = flann_knn(*build_index(current.descriptors, current.binary, params), reference.descriptors,
                                current.descriptors.rows, current.binary, 1, params.flann_checks);
        }
    } else if (params.matcher == RP_MATCHER_BRUTE_FORCE && reference.norm == cv::NORM_HAMMING && current.norm == cv::NORM_HAMMING &&
               reference.descriptors.type() == CV_8U) {
        found.knn = rp::hamming_knn(current.descriptors, reference.descriptors, 2, params.hamming_kernel);
        if (params.mutual) reverse = rp::hamming_knn(reference.descriptors, current.descriptors, 1, params.hamming_kernel);
    } else {
        cv::Ptr<cv::BFMatcher> matcher = cv::BFMatcher::create(reference.norm, false);
        matcher->knnMatch(current.descriptors, reference.descriptors, found.knn, 2);
        if (params.mutual) matcher->knnMatch(reference.descriptors, current.descriptors, reverse, 1);
    }
    found.reverse_best.assign(reverse.size(), -1);
    for (size_t i = 0; i < reverse.size(); ++i) {
        if (!reverse[i].empty()) found.reverse_best[i] = reverse[i][0].trainIdx;
    }
    return found;
}

std::vector<rp_match> filter(const Neighbours &found, float ratio, bool mutual) {
    std::vector<rp_match> result;
    for (const rp_match &m : ratio_filter(found.knn, ratio)) {
        if (mutual && (size_t(m.reference_index) >= found.reverse_best.size() ||
                       found.reverse_best[size_t(m.reference_index)] != m.current_index)) {
            continue;
        }
        result.push_back(m);
    }
    return result;
}

std::vector<rp_match> match_with(const rp_features &reference, const rp_features &current, const rp_match_params &params,
                                 cv::flann::Index *prebuilt) {
    return filter(neighbours_with(reference, current, params, prebuilt), params.ratio, params.mutual != 0);
}

cv::flann::Index *prebuilt_for(const rp_match_index *index, const rp_match_params &params) {
    if (index == nullptr) return nullptr;
    const rp_match_params &b = index->built_with;
    const bool same_index = params.matcher == RP_MATCHER_FLANN && b.lsh_table_number == params.lsh_table_number &&
                            b.lsh_key_size == params.lsh_key_size && b.lsh_multi_probe_level == params.lsh_multi_probe_level &&
                            b.kdtree_trees == params.kdtree_trees;
    return same_index ? index->index.get() : nullptr;
}

}  // namespace

namespace rp {

std::vector<rp_match> match_features(const rp_features &reference, const rp_features &current, const rp_match_params &params) {
    return match_with(reference, current, params, nullptr);
}

}  // namespace rp

extern "C" int rp_match_features(const rp_features *reference, const rp_features *current,
                                 const rp_match_params *params, rp_match **matches, int *count, rp_status *status) {
    *matches = nullptr;
    *count = 0;
    return rp::guarded(status, [&] { *matches = copy_out(rp::match_features(*reference, *current, *params), count); });
}

extern "C" int rp_match_index_create(const rp_features *reference, const rp_match_params *params, rp_match_index **out,
                                     rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        auto index = std::make_unique<rp_match_index>();
        index->reference = *reference;
        index->built_with = *params;
        if (!reference->descriptors.empty()) index->index = build_index(reference->descriptors, reference->binary, *params);
        *out = index.release();
    });
}

extern "C" int rp_hamming_kernel_resolve(int kernel) { return rp::resolve_hamming_kernel(kernel); }

extern "C" const char *rp_hamming_kernel_name(int kernel) { return rp::hamming_kernel_name(kernel); }

extern "C" void rp_match_index_free(rp_match_index *index) { delete index; }

extern "C" int rp_match_index_match(const rp_match_index *index, const rp_features *current, const rp_match_params *params,
                                    rp_match **matches, int *count, rp_status *status) {
    *matches = nullptr;
    *count = 0;
    return rp::guarded(status, [&] {
        *matches = copy_out(match_with(index->reference, *current, *params, prebuilt_for(index, *params)), count);
    });
}

struct rp_neighbours {
    Neighbours found;
};

extern "C" int rp_neighbours_compute(const rp_features *reference, const rp_features *current, const rp_match_params *params,
                                     const rp_match_index *index, rp_neighbours **out, size_t *bytes, rp_status *status) {
    *out = nullptr;
    *bytes = 0;
    return rp::guarded(status, [&] {
        if (index != nullptr && index->reference.descriptors.data != reference->descriptors.data) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, "the match index was built from other reference features");
        }
        auto made = std::make_unique<rp_neighbours>();
        made->found = neighbours_with(*reference, *current, *params, prebuilt_for(index, *params));
        size_t size = sizeof(rp_neighbours) + made->found.reverse_best.size() * sizeof(int);
        for (const auto &list : made->found.knn) size += sizeof(list) + list.capacity() * sizeof(cv::DMatch);
        *bytes = size;
        *out = made.release();
    });
}

extern "C" int rp_neighbours_filter(const rp_neighbours *neighbours, float ratio, int mutual, rp_match **matches, int *count,
                                    rp_status *status) {
    *matches = nullptr;
    *count = 0;
    return rp::guarded(status, [&] {
        if (mutual && !neighbours->found.has_reverse) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, "these neighbours were computed without the reverse search the mutual check needs");
        }
        *matches = copy_out(filter(neighbours->found, ratio, mutual != 0), count);
    });
}

extern "C" void rp_neighbours_free(rp_neighbours *neighbours) { delete neighbours; }
