// The media plugin (libRephotoMedia.so): OpenCV's imgcodecs and videoio, which between them load about 220
// shared libraries. The shim loads the plugin on first use (media_plugin.cpp), so a process that never reads a
// TIFF or a video never loads them. Both sides are C++ from one package build, so the table passes OpenCV and
// standard types; nothing throws across it.
#pragma once

#include <opencv2/core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#define RP_MEDIA_ABI 1

struct rp_media_video;

struct rp_media_video_info {
    double width, height, fps, frames;  // as the container states them; checked by the caller
};

struct rp_media_api {
    int abi;  // RP_MEDIA_ABI of the build that made the plugin
    // The formats only OpenCV decodes here (TIFF, WebP, BMP, PNM, JPEG 2000, CMYK JPEG); leaves *out empty when
    // its decoder cannot read the bytes. False with *error on an exception.
    bool (*decode)(const uint8_t *bytes, size_t length, bool grayscale, cv::Mat *out, std::string *error);
    // A video through OpenCV's FFmpeg backend; NULL with *error when it cannot be opened.
    rp_media_video *(*video_open)(const char *path, rp_media_video_info *info, std::string *error);
    // 1 with the next frame and its time in seconds, 0 at the end, -1 with *error.
    int (*video_read)(rp_media_video *video, cv::Mat *frame, double *seconds, std::string *error);
    void (*video_free)(rp_media_video *video);
};

// The plugin's one exported symbol.
extern "C" const rp_media_api *rp_media_plugin(void);
