// Video files for `rephoto import video`: OpenCV's videoio with the FFmpeg backend Debian ships, one frame at a time
// so a long clip never sits in memory.
#include "../Core/shim_internal.hpp"
#include "rephoto_shim_tools.h"

#include <opencv2/videoio.hpp>

#include <cmath>
#include <memory>

struct rp_video {
    cv::VideoCapture capture;
    int64_t max_pixels = 0;
};

extern "C" {

int rp_video_open(const char *path, int64_t max_pixels, rp_video **out, rp_video_info *info, rp_status *status) {
    if (out) *out = nullptr;
    return rp::guarded(status, [&] {
        if (path == nullptr || out == nullptr || info == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "path or output is NULL");
        if (max_pixels <= 0) rp::fail(RP_ERR_INVALID_ARGUMENT, "max_pixels must be positive");
        auto video = std::make_unique<rp_video>();
        video->max_pixels = max_pixels;
        if (!video->capture.open(path, cv::CAP_FFMPEG) || !video->capture.isOpened()) {
            rp::fail(RP_ERR_DECODE, "not a video OpenCV's FFmpeg backend can read");
        }
        const double width = video->capture.get(cv::CAP_PROP_FRAME_WIDTH), height = video->capture.get(cv::CAP_PROP_FRAME_HEIGHT);
        if (!(width >= 1 && height >= 1)) rp::fail(RP_ERR_DECODE, "the video has no frame size");
        if (width * height > double(max_pixels)) {
            rp::fail(RP_ERR_TOO_LARGE, cv::format("frames of %.0fx%.0f pixels, over the limit of %lld (maxPixels)", width, height,
                                                  static_cast<long long>(max_pixels)));
        }
        const double fps = video->capture.get(cv::CAP_PROP_FPS), count = video->capture.get(cv::CAP_PROP_FRAME_COUNT);
        info->width = int(width);
        info->height = int(height);
        info->fps = std::isfinite(fps) && fps > 0 && fps < 10000 ? fps : 0;
        info->frame_count = std::isfinite(count) && count >= 1 ? int64_t(count) : -1;
        *out = video.release();
    });
}

int rp_video_read(rp_video *video, rp_image **out, double *timestamp, rp_status *status) {
    if (out) *out = nullptr;
    return rp::guarded(status, [&] {
        if (video == nullptr || out == nullptr || timestamp == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "video or output is NULL");
        cv::Mat frame;
        if (!video->capture.read(frame) || frame.empty()) return;  // the end, or a stream that stops decoding
        if (double(frame.cols) * double(frame.rows) > double(video->max_pixels)) {
            rp::fail(RP_ERR_TOO_LARGE, cv::format("a frame of %dx%d pixels, over the limit of %lld (maxPixels)", frame.cols, frame.rows,
                                                  static_cast<long long>(video->max_pixels)));
        }
        if (frame.type() != CV_8UC3 && frame.type() != CV_8UC1) rp::fail(RP_ERR_DECODE, "a frame of an unexpected pixel type");
        *timestamp = video->capture.get(cv::CAP_PROP_POS_MSEC) / 1000.0;
        *out = rp::wrap_image(frame);
    });
}

void rp_video_free(rp_video *video) { delete video; }

}  // extern "C"
