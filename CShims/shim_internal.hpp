// Internal to CShims: handle layouts, the exception guard, and the C++ helpers the entry points share.
#pragma once

#include "rephoto_shim.h"

#include <opencv2/core.hpp>
#include <opencv2/features2d.hpp>

#include <pthread.h>

#include <string>
#include <vector>

struct rp_image {
    cv::Mat mat;  // 8-bit, 1 or 3 channels (BGR)
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

// Thrown inside the shim for failures with a known cause; the guard turns it into a status.
struct Failure {
    int code;
    std::string message;
};

[[noreturn]] void fail(int code, const std::string &message);

// Runs `body`, converting every exception to a status code and a one-line message.
template <class Body>
int guarded(rp_status *status, Body &&body);

int set_status(rp_status *status, int code, const std::string &message);

// OpenCV 4.6 with TBB rebuilds its task arena in setNumThreads; a parallel_for running on another thread then
// dereferences the freed arena. Every entry point holds this lock shared; changing the thread count holds it
// exclusively. It prefers the writer, so a busy process still lets the change in once running calls finish.
pthread_rwlock_t *opencv_threads_lock();

struct SharedHold {
    SharedHold() { pthread_rwlock_rdlock(opencv_threads_lock()); }
    ~SharedHold() { pthread_rwlock_unlock(opencv_threads_lock()); }
    SharedHold(const SharedHold &) = delete;
    SharedHold &operator=(const SharedHold &) = delete;
};
std::string one_line(const cv::Exception &error);

cv::Mat decode_image(const uint8_t *bytes, size_t length, int64_t max_pixels, bool grayscale = false);
void detect_features(const cv::Mat &image, const rp_detector_params &params, const cv::Mat &mask, rp_features &out);
std::vector<rp_match> match_features(const rp_features &reference, const rp_features &current,
                                     const rp_match_params &params);
cv::Mat find_homography(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current,
                        const rp_robust_params &params, cv::Mat &mask);
void estimate_relative_pose(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current,
                            const rp_camera &reference_camera, const rp_camera &current_camera,
                            const rp_robust_params &params, rp_relative_pose &pose, std::vector<uint8_t> &inliers,
                            std::vector<double> *sampson_pixels = nullptr);
// Exact k (1 or 2) nearest train rows of each query row under Hamming distance, as cv::BFMatcher::knnMatch
// returns them (same distances, the lower index winning ties), with a SIMD kernel chosen for this CPU.
std::vector<std::vector<cv::DMatch>> hamming_knn(const cv::Mat &query, const cv::Mat &train, int k);
const char *hamming_kernel_name();
void force_hamming_kernel(const char *name);
std::vector<cv::Point2d> to_points(const double *xy, int n);
cv::Mat camera_matrix(const rp_camera &camera);
cv::Mat distortion_vector(const rp_camera &camera);

template <class Body>
int guarded(rp_status *status, Body &&body) {
    try {
        SharedHold in_opencv;
        body();
        return set_status(status, RP_OK, "");
    } catch (const Failure &failure) {
        return set_status(status, failure.code, failure.message);
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

}  // namespace rp
