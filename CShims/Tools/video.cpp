// Video files for `rephoto import video`: OpenCV's videoio with the FFmpeg backend Debian ships, through the
// media plugin, one frame at a time so a long clip never sits in memory.
#include "../Core/shim_internal.hpp"
#include "../Media/include/rephoto_media.h"
#include "rephoto_shim_tools.h"

#include <cmath>
#include <memory>

struct rp_video {
    const rp_media_api *media = nullptr;
    rp_media_video *capture = nullptr;
    int64_t max_pixels = 0;
    ~rp_video() {
        if (capture != nullptr) media->video_free(capture);
    }
};

extern "C" {

int rp_video_open(const char *path, int64_t max_pixels, rp_video **out, rp_video_info *info, rp_status *status) {
    if (out) *out = nullptr;
    return rp::guarded(status, [&] {
        if (path == nullptr || out == nullptr || info == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "path or output is NULL");
        if (max_pixels <= 0) rp::fail(RP_ERR_INVALID_ARGUMENT, "max_pixels must be positive");
        auto video = std::make_unique<rp_video>();
        video->media = &rp::media_plugin("reading video");
        video->max_pixels = max_pixels;
        rp_media_video_info stated{};
        std::string error;
        video->capture = video->media->video_open(path, &stated, &error);
        if (video->capture == nullptr) rp::fail(RP_ERR_DECODE, error);
        const double width = stated.width, height = stated.height;
        if (!(width >= 1 && height >= 1)) rp::fail(RP_ERR_DECODE, "the video has no frame size");
        if (width * height > double(max_pixels)) {
            rp::fail(RP_ERR_TOO_LARGE, cv::format("frames of %.0fx%.0f pixels, over the limit of %lld (maxPixels)", width, height,
                                                  static_cast<long long>(max_pixels)));
        }
        info->width = int(width);
        info->height = int(height);
        info->fps = std::isfinite(stated.fps) && stated.fps > 0 && stated.fps < 10000 ? stated.fps : 0;
        info->frame_count = std::isfinite(stated.frames) && stated.frames >= 1 ? int64_t(stated.frames) : -1;
        *out = video.release();
    });
}

int rp_video_read(rp_video *video, rp_image **out, double *timestamp, rp_status *status) {
    if (out) *out = nullptr;
    return rp::guarded(status, [&] {
        if (video == nullptr || out == nullptr || timestamp == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "video or output is NULL");
        cv::Mat frame;
        std::string error;
        const int got = video->media->video_read(video->capture, &frame, timestamp, &error);
        if (got < 0) rp::fail(RP_ERR_DECODE, error);
        if (got == 0) return;
        if (double(frame.cols) * double(frame.rows) > double(video->max_pixels)) {
            rp::fail(RP_ERR_TOO_LARGE, cv::format("a frame of %dx%d pixels, over the limit of %lld (maxPixels)", frame.cols, frame.rows,
                                                  static_cast<long long>(video->max_pixels)));
        }
        if (frame.type() != CV_8UC3 && frame.type() != CV_8UC1) rp::fail(RP_ERR_DECODE, "a frame of an unexpected pixel type");
        *out = rp::wrap_image(frame);
    });
}

void rp_video_free(rp_video *video) { delete video; }

}  // extern "C"
