#include "../shim_internal.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

namespace {

cv::Ptr<cv::Feature2D> make_detector(const rp_detector_params &p) {
    switch (p.kind) {
    case RP_DETECTOR_AKAZE:
        return cv::AKAZE::create(cv::AKAZE::DescriptorType(p.akaze_descriptor_type), p.akaze_descriptor_size,
                                 p.akaze_descriptor_channels, p.akaze_threshold, p.akaze_octaves,
                                 p.akaze_octave_layers, cv::KAZE::DiffusivityType(p.akaze_diffusivity));
    case RP_DETECTOR_ORB:
        return cv::ORB::create(p.orb_features, p.orb_scale_factor, p.orb_levels, p.orb_edge_threshold,
                               p.orb_first_level, p.orb_wta_k, cv::ORB::ScoreType(p.orb_score_type),
                               p.orb_patch_size, p.orb_fast_threshold);
    case RP_DETECTOR_SIFT:
        return cv::SIFT::create(p.sift_features, p.sift_octave_layers, p.sift_contrast_threshold,
                                p.sift_edge_threshold, p.sift_sigma, p.sift_descriptor_type);
    default:
        rp::fail(RP_ERR_INVALID_ARGUMENT, "unknown detector kind " + std::to_string(p.kind));
    }
}

// Matching is quadratic in the keypoint count, and a low detector threshold makes tens of thousands: the cap
// bounds its cost. Detecting and describing every candidate costs little beside that (AKAZE at 1600 px: 0.2 s
// for 2,400 keypoints, 0.4 s for 36,000), so the descriptors are kept rather than computed again.
void retain_strongest(rp_features &features, int limit) {
    const size_t n = features.keypoints.size();
    if (limit <= 0 || n <= size_t(limit)) return;
    std::vector<int> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = int(i);
    // Equal responses go by the detector's order, so the choice is reproducible (and the order total, so a
    // selection needs no sort: libstdc++'s stable_sort also draws a deprecation warning from clang).
    std::nth_element(order.begin(), order.begin() + limit, order.end(), [&](int a, int b) {
        const float ra = features.keypoints[size_t(a)].response, rb = features.keypoints[size_t(b)].response;
        return ra != rb ? ra > rb : a < b;
    });
    order.resize(size_t(limit));
    std::sort(order.begin(), order.end());
    std::vector<cv::KeyPoint> keypoints;
    keypoints.reserve(order.size());
    cv::Mat descriptors(int(order.size()), features.descriptors.cols, features.descriptors.type());
    for (size_t k = 0; k < order.size(); ++k) {
        keypoints.push_back(features.keypoints[size_t(order[k])]);
        if (!features.descriptors.empty()) features.descriptors.row(order[k]).copyTo(descriptors.row(int(k)));
    }
    features.keypoints = std::move(keypoints);
    features.descriptors = features.descriptors.empty() ? cv::Mat() : descriptors;
}

}  // namespace

namespace rp {

constexpr int min_detection_side = 8;

void detect_features(const rp_image &source, const rp_detector_params &params, const cv::Mat &mask, rp_features &out) {
    const cv::Mat &image = source.mat;
    if (image.empty()) fail(RP_ERR_INVALID_ARGUMENT, "empty image");
    if (!mask.empty() && (mask.size() != image.size() || mask.type() != CV_8UC1)) {
        fail(RP_ERR_INVALID_ARGUMENT, cv::format("mask must be 8-bit single-channel %dx%d, got %dx%d with %d channels",
                                                 image.cols, image.rows, mask.cols, mask.rows, mask.channels()));
    }
    cv::Mat gray;
    if (image.channels() == 1) gray = image;
    else cv::cvtColor(image, gray, cv::COLOR_BGR2GRAY);

    // The analysis scale is relative to the full-resolution image, which a reduced decode may already approach.
    const cv::Size full = source.full;
    double s = analysis_scale(params.max_dimension, params.scale, full.width, full.height);
    cv::Mat small = gray, small_mask = mask;
    cv::Size size(std::max(1, int(std::lround(full.width * s))), std::max(1, int(std::lround(full.height * s))));
    if (size.width < image.cols || size.height < image.rows) {
        cv::resize(gray, small, size, 0, 0, cv::INTER_AREA);
        if (!mask.empty()) cv::resize(mask, small_mask, size, 0, 0, cv::INTER_NEAREST);
    }
    if (params.clahe_clip > 0) {
        if (!(params.clahe_clip <= 40)) fail(RP_ERR_INVALID_ARGUMENT, "clahe_clip must be 0...40");
        const cv::Size tiles(std::max(1, (small.cols + 64) / 128), std::max(1, (small.rows + 64) / 128));
        cv::Mat equalised;
        cv::createCLAHE(params.clahe_clip, tiles)->apply(small, equalised);
        small = equalised;
    }
    // ORB's pyramid levels shrink by scale_factor; one under a pixel fails inside cv::resize (a 40x40 upload at
    // scaleFactor 2). Levels under min_detection_side find nothing anyway: they are left out.
    rp_detector_params fitted = params;
    if (params.kind == RP_DETECTOR_ORB && params.orb_scale_factor > 1) {
        const double side = std::min(small.cols, small.rows);
        while (fitted.orb_levels > fitted.orb_first_level + 1 &&
               side / std::pow(double(params.orb_scale_factor), fitted.orb_levels - 1 - fitted.orb_first_level) < min_detection_side) {
            --fitted.orb_levels;
        }
    }
    cv::Ptr<cv::Feature2D> detector = make_detector(fitted);
    out.keypoints.clear();
    out.descriptors.release();
    // Below 8 pixels a side no detector finds anything (their patches and scale spaces are larger), and AKAZE
    // and ORB fail on a 1-pixel side with internal assertions: report no features, so the caller sees counts.
    if (small.cols >= min_detection_side && small.rows >= min_detection_side) {
        detector->detectAndCompute(small, small_mask, out.keypoints, out.descriptors);
        retain_strongest(out, params.max_keypoints);
    }
    out.norm = detector->defaultNorm();
    out.binary = out.descriptors.empty() ? (out.norm == cv::NORM_HAMMING || out.norm == cv::NORM_HAMMING2)
                                         : out.descriptors.depth() == CV_8U;
    out.width = full.width;
    out.height = full.height;
    out.scale = s;
    if (small.cols != full.width || small.rows != full.height) {
        // Pixel centres map as (x + 0.5) * ratio - 0.5 under area resampling and under libjpeg's block scaling.
        double sx = double(image.cols) / small.cols / source.pixel_scale_x, sy = double(image.rows) / small.rows / source.pixel_scale_y;
        for (cv::KeyPoint &k : out.keypoints) {
            k.pt.x = float((k.pt.x + 0.5) * sx - 0.5);
            k.pt.y = float((k.pt.y + 0.5) * sy - 0.5);
            k.size = float(k.size * 0.5 * (sx + sy));
        }
    }
}

}  // namespace rp

extern "C" {

int rp_features_detect(const rp_image *image, const rp_detector_params *params, const rp_image *mask,
                       rp_features **out, rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        auto features = std::make_unique<rp_features>();
        rp::detect_features(*image, *params, mask ? mask->mat : cv::Mat(), *features);
        *out = features.release();
    });
}

void rp_features_free(rp_features *features) { delete features; }
int rp_features_count(const rp_features *features) { return int(features->keypoints.size()); }

int rp_features_keypoints(const rp_features *features, rp_keypoint *destination, int capacity, rp_status *status) {
    return rp::guarded(status, [&] {
        int n = std::min(capacity, int(features->keypoints.size()));
        for (int i = 0; i < n; ++i) {
            const cv::KeyPoint &k = features->keypoints[size_t(i)];
            destination[i] = rp_keypoint{k.pt.x, k.pt.y, k.size, k.angle, k.response, k.octave};
        }
    });
}

int rp_features_descriptor_bytes(const rp_features *features) {
    return int(features->descriptors.cols * features->descriptors.elemSize());
}
int rp_features_is_binary(const rp_features *features) { return features->binary ? 1 : 0; }
double rp_features_analysis_scale(const rp_features *features) { return features->scale; }

}  // extern "C"

extern "C" {

int rp_features_norm(const rp_features *features) { return features->norm; }
int rp_features_image_width(const rp_features *features) { return features->width; }
int rp_features_image_height(const rp_features *features) { return features->height; }

int rp_features_copy_descriptors(const rp_features *features, uint8_t *destination, size_t capacity, rp_status *status) {
    return rp::guarded(status, [&] {
        const cv::Mat &d = features->descriptors;
        const size_t row = size_t(d.cols) * d.elemSize();
        if (capacity < row * size_t(d.rows)) rp::fail(RP_ERR_INVALID_ARGUMENT, "descriptor buffer too small");
        for (int y = 0; y < d.rows; ++y) std::memcpy(destination + row * size_t(y), d.ptr(y), row);
    });
}

int rp_features_create(const rp_keypoint *keypoints, int count, const uint8_t *descriptors, size_t descriptors_length,
                       int descriptor_bytes, int binary, int norm, int width, int height, double analysis_scale,
                       rp_features **out, rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        if (count < 0 || descriptor_bytes < 0 || width <= 0 || height <= 0 || !(analysis_scale > 0 && analysis_scale <= 1)) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, "saved features have an impossible header");
        }
        if (norm != cv::NORM_HAMMING && norm != cv::NORM_HAMMING2 && norm != cv::NORM_L2) rp::fail(RP_ERR_INVALID_ARGUMENT, "saved features have an unknown norm");
        const int element = binary ? 1 : 4;
        if (descriptor_bytes % element != 0 || (count > 0 && descriptor_bytes == 0) ||
            descriptors_length != size_t(count) * size_t(descriptor_bytes) || (count > 0 && (keypoints == nullptr || descriptors == nullptr))) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, "saved features: descriptor data does not match the keypoints");
        }
        auto features = std::make_unique<rp_features>();
        features->keypoints.reserve(size_t(count));
        for (int i = 0; i < count; ++i) {
            const rp_keypoint &k = keypoints[i];
            features->keypoints.emplace_back(cv::Point2f(k.x, k.y), k.size, k.angle, k.response, k.octave);
        }
        if (count > 0) {
            cv::Mat d(count, descriptor_bytes / element, binary ? CV_8U : CV_32F);
            std::memcpy(d.data, descriptors, descriptors_length);
            features->descriptors = d;
        }
        features->norm = norm;
        features->binary = binary != 0;
        features->width = width;
        features->height = height;
        features->scale = analysis_scale;
        *out = features.release();
    });
}

}  // extern "C"
