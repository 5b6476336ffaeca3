// Internal to the C shims (production and tools targets): handle layouts, the exception guard, and the C++
// helpers the entry points share. Never included by Swift.
#pragma once

#include "rephoto_shim.h"

#include <opencv2/core.hpp>
#include <opencv2/core/persistence.hpp>
#include <opencv2/features2d.hpp>

#include <string>
#include <vector>

struct rp_media_api;  // CShims/Media/include/rephoto_media.h

// What the header bytes of an encoded image say, before any pixel is decoded.
enum rp_image_format {
    RP_FORMAT_UNKNOWN = 0, RP_FORMAT_JPEG, RP_FORMAT_PNG, RP_FORMAT_HEIF, RP_FORMAT_TIFF, RP_FORMAT_WEBP,
    RP_FORMAT_BMP, RP_FORMAT_PNM, RP_FORMAT_JPEG2000
};
struct rp_image_header {
    int format;  // rp_image_format
    int width;   // as stored, before EXIF orientation
    int height;
    int orientation;  // EXIF orientation 1...8 (1 when absent)
    // JPEG 2000 only (0 otherwise), where the decoder's memory depends on them: components per pixel, the channels
    // a palette or component mapping makes of them, and the tiles.
    int components = 0;
    int decoded_channels = 0;
    int64_t tiles = 0;
};

struct rp_image {
    cv::Mat mat;          // 8-bit, 1 or 3 channels (BGR)
    std::string warning;  // the decoder's report of damaged data, empty when clean
    // The full-resolution (oriented) size the pixels stand for, and pixels per full-resolution pixel on each
    // axis: mat.size() and 1 unless the image was decoded reduced (libjpeg's M/8 scaling, or a resize).
    cv::Size full;
    double pixel_scale_x = 1.0, pixel_scale_y = 1.0;
    int exif_orientation = 1;  // the JPEG's or TIFF's orientation the pixels were turned by; 1 otherwise
};


struct rp_features {
    std::vector<cv::KeyPoint> keypoints;  // full-resolution pixels
    cv::Mat descriptors;
    int norm = cv::NORM_L2;
    bool binary = false;
    int width = 0;
    int height = 0;
    double scale = 1.0;
};

namespace rp {
// How much smaller than full size a decoder may deliver: no smaller than the detector's analysis scale.
struct decode_reduction {
    int max_dimension = 0;  // as rp_detector_params: 0 disables each
    double scale = 0;
};


// Thrown inside the shim for failures with a known cause; the guard turns it into a status.
struct Failure {
    int code;
    std::string message;
    int cause = RP_CAUSE_NONE;
};

[[noreturn]] void fail(int code, const std::string &message);
// The same with a finer cause (an rp_cause).
[[noreturn]] void fail(int code, rp_cause cause, const std::string &message);

// Runs `body`, converting every exception to a status code and a one-line message.
template <class Body>
int guarded(rp_status *status, Body &&body);

int set_status(rp_status *status, int code, const std::string &message, int cause = RP_CAUSE_NONE);

std::string one_line(const cv::Exception &error);

inline rp_image *wrap_image(cv::Mat mat, std::string warning = std::string()) {
    cv::Size full = mat.size();
    return new rp_image{std::move(mat), std::move(warning), full};
}
// The analysis scale (<= 1) of an image of `width` x `height` full-resolution pixels.
double analysis_scale(int max_dimension, double scale, int width, int height);
// Decodes JPEG (libjpeg, keeping its warnings) or PNG, with EXIF orientation applied, at full size or, with a
// reduction, at no less than the analysis scale it names.
rp_image decode_image(const uint8_t *bytes, size_t length, int64_t max_pixels, bool grayscale = false,
                      decode_reduction reduction = decode_reduction());
// libpng's simplified API, its warnings kept in `warning` rather than printed.
cv::Mat decode_png(const uint8_t *bytes, size_t length, bool grayscale, std::string &warning);
// The primary image of a HEIF/HEIC file through libheif: its size after the irot/imir transformations, then
// (when `decode`) its pixels with those transformations applied. Fails with a clear status on anything else.
cv::Size heif_size(const uint8_t *bytes, size_t length);
cv::Mat decode_heif(const uint8_t *bytes, size_t length, bool grayscale);
// libjpeg decoding at scale eighths/8 (1...8) with the EXIF orientation applied; an empty Mat for CMYK/YCCK
// files libjpeg cannot convert.
cv::Mat decode_jpeg(const uint8_t *bytes, size_t length, bool grayscale, int orientation, int eighths, std::string &warning);
// 8-bit grey or BGR pixels encoded as cv::imencode encodes them (".jpg" at `quality`, ".png").
std::vector<uint8_t> encode_jpeg(const cv::Mat &image, int quality);
std::vector<uint8_t> encode_png(const cv::Mat &image);
// The media plugin (imgcodecs, videoio: CShims/Media), loaded on first use; fails with RP_ERR_UNSUPPORTED,
// naming `purpose` ("reading TIFF") and why, when none can be loaded; `detailed` adds the files' paths (for logs).
const ::rp_media_api &media_plugin(const char *purpose, bool detailed = false);
// Applies an EXIF orientation (1...8) as OpenCV does.
cv::Mat oriented(const cv::Mat &image, int orientation);
void detect_features(const rp_image &image, const rp_detector_params &params, const cv::Mat &mask, rp_features &out);
std::vector<rp_match> match_features(const rp_features &reference, const rp_features &current,
                                     const rp_match_params &params);
cv::Mat find_homography(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current,
                        const rp_homography_params &params, cv::Mat &mask);
// Exact k (1 or 2) nearest train rows of each query row under Hamming distance, as cv::BFMatcher::knnMatch
// returns them (same distances, the lower index winning ties), with a SIMD kernel chosen for this CPU.
std::vector<std::vector<cv::DMatch>> hamming_knn(const cv::Mat &query, const cv::Mat &train, int k, int kernel);
const char *hamming_kernel_name(int kernel);
// The kernel `kernel` (rp_hamming_kernel) resolves to on this CPU, RP_HAMMING_AUTO when it cannot run here.
int resolve_hamming_kernel(int kernel);
std::vector<cv::Point2d> to_points(const double *xy, int n);
// Fails unless every coordinate is finite, naming the first point that is not ("`which` point 3 is not finite").
void check_finite(const std::vector<cv::Point2d> &points, const char *which);
// Pixels undistorted into normalised image coordinates of `camera`.
std::vector<cv::Point2d> normalised(const std::vector<cv::Point2d> &pixels, const rp_camera &camera);
// A fundamental matrix b^T F a = 0 fitted robustly (OpenCV's USAC_MAGSAC, `threshold` pixels), its inliers in
// `mask`; fails with RP_ERR_ESTIMATION when none fits (degenerate correspondences included: no internal error).
cv::Matx33d robust_fundamental(const std::vector<cv::Point2d> &a, const std::vector<cv::Point2d> &b, double threshold,
                               std::vector<uchar> &mask);
// Fails unless the camera's focal lengths are positive and finite (`which`: "the current camera").
void check_focal_lengths(const rp_camera &camera, const char *which);
// Fails unless an optional output buffer (NULL is fine) holds at least n elements.
template <class T>
void check_capacity(const T *buffer, size_t capacity, int n, const char *name) {
    if (buffer != nullptr && n > 0 && capacity < size_t(n)) {
        fail(RP_ERR_INVALID_ARGUMENT, std::string(name) + " buffer holds " + std::to_string(capacity) + ", needs " + std::to_string(n));
    }
}
cv::Mat camera_matrix(const rp_camera &camera);
cv::Mat distortion_vector(const rp_camera &camera);

template <class Body>
int guarded(rp_status *status, Body &&body) {
    try {
        body();
        return set_status(status, RP_OK, "");
    } catch (const Failure &failure) {
        return set_status(status, failure.code, failure.message, failure.cause);
    } catch (const cv::Exception &error) {
        return set_status(status, RP_ERR_OPENCV, one_line(error));
    } catch (const std::bad_alloc &) {
        return set_status(status, RP_ERR_INTERNAL, "out of memory");
    } catch (const std::exception &error) {
        return set_status(status, RP_ERR_INTERNAL, std::string("internal error: ") + error.what());
    } catch (...) {
        return set_status(status, RP_ERR_INTERNAL, "internal error: unknown exception");
    }
}

// An index from `pick` unlike the first `count` in `taken`, by rejection (a minimal sample is far smaller than
// the set it is drawn from); the robust estimators' samplers share it.
template <class Random, class Distribution>
size_t draw_unlike(Random &random, Distribution &pick, const size_t *taken, int count) {
    for (;;) {
        const size_t index = pick(random);
        bool fresh = true;
        for (int j = 0; j < count; ++j) fresh = fresh && taken[j] != index;
        if (fresh) return index;
    }
}

// The calibrated five-point solver (five_point.cpp): up to ten essential matrices (unit Frobenius norm) for five
// correspondences of normalised points (z = 1); returns how many.
int five_point(const cv::Vec3d x1[5], const cv::Vec3d x2[5], cv::Matx33d solutions[10]);

// A homography b ~ H a fitted by seeded RANSAC (the most points within `threshold` of transfer error, at
// most `max_samples` samples, fewer once `confidence` is reached) and least squares on its consensus
// (plane_homography.cpp). False when no four points give one.
bool plane_homography(const std::vector<cv::Point2d> &a, const std::vector<cv::Point2d> &b, double threshold, int max_samples,
                      double confidence, uint64_t seed, cv::Matx33d &H);

}  // namespace rp
