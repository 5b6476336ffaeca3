// The media plugin's implementation: thin calls into imgcodecs and videoio, every exception caught here.
#include "rephoto_media.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/videoio.hpp>

#include <memory>
#include <new>

struct rp_media_video {
    cv::VideoCapture capture;
};

namespace {

template <class Body>
bool caught(std::string *error, Body &&body) {
    try {
        body();
        return true;
    } catch (const cv::Exception &e) {
        *error = e.err.empty() ? std::string(e.what()) : e.err;
    } catch (const std::bad_alloc &) {
        *error = "out of memory";
    } catch (const std::exception &e) {
        *error = e.what();
    } catch (...) {
        *error = "unknown exception";
    }
    return false;
}

bool decode(const uint8_t *bytes, size_t length, bool grayscale, cv::Mat *out, std::string *error) {
    return caught(error, [&] {
        const cv::Mat encoded(1, int(length), CV_8U, const_cast<uint8_t *>(bytes));
        *out = cv::imdecode(encoded, grayscale ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
    });
}

rp_media_video *video_open(const char *path, rp_media_video_info *info, std::string *error) {
    rp_media_video *video = nullptr;
    const bool ok = caught(error, [&] {
        // Owned until handed out, so a throw from open() or get() frees it.
        auto opened = std::make_unique<rp_media_video>();
        if (!opened->capture.open(path, cv::CAP_FFMPEG) || !opened->capture.isOpened()) {
            *error = "not a video OpenCV's FFmpeg backend can read";
            return;
        }
        info->width = opened->capture.get(cv::CAP_PROP_FRAME_WIDTH);
        info->height = opened->capture.get(cv::CAP_PROP_FRAME_HEIGHT);
        info->fps = opened->capture.get(cv::CAP_PROP_FPS);
        info->frames = opened->capture.get(cv::CAP_PROP_FRAME_COUNT);
        video = opened.release();
    });
    return ok ? video : nullptr;
}

int video_read(rp_media_video *video, cv::Mat *frame, double *seconds, std::string *error) {
    int result = 0;
    if (!caught(error, [&] {
            // The end, or a stream that stops decoding.
            if (!video->capture.read(*frame) || frame->empty()) return;
            *seconds = video->capture.get(cv::CAP_PROP_POS_MSEC) / 1000.0;
            result = 1;
        })) {
        return -1;
    }
    return result;
}

void video_free(rp_media_video *video) {
    try {
        delete video;
    } catch (...) {
    }
}

const rp_media_api api{RP_MEDIA_ABI, decode, video_open, video_read, video_free};

}  // namespace

extern "C" const rp_media_api *rp_media_plugin(void) { return &api; }
