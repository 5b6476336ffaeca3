// JPEG decoding through libjpeg(-turbo) directly rather than cv::imdecode: libjpeg's warnings about corrupt
// data ("Corrupt JPEG data: 7 extraneous bytes before marker") go to stderr from inside OpenCV and the damaged
// image comes back as if it were fine. Here every warning is kept with the image, so the caller can report it
// or refuse the image. EXIF orientation is applied as OpenCV applies it.
#include "shim_internal.hpp"

#include <opencv2/core.hpp>

#include <csetjmp>
#include <cstdio>
#include <algorithm>
#include <cstring>

#include <jpeglib.h>

namespace {

struct ErrorManager {
    jpeg_error_mgr pub;
    std::jmp_buf jump;
    int warnings;
    char first_warning[JMSG_LENGTH_MAX];
    char fatal[JMSG_LENGTH_MAX];
};

void on_error(j_common_ptr info) {
    auto *err = reinterpret_cast<ErrorManager *>(info->err);
    (*info->err->format_message)(info, err->fatal);
    std::longjmp(err->jump, 1);
}

// libjpeg reports recoverable damage as level -1 messages; level >= 0 messages are traces, ignored.
void on_message(j_common_ptr info, int level) {
    auto *err = reinterpret_cast<ErrorManager *>(info->err);
    if (level >= 0) return;
    if (err->warnings++ == 0) (*info->err->format_message)(info, err->first_warning);
}

// The setjmp regions hold only plain C data: nothing with a destructor lives across a longjmp.
bool read_header(jpeg_decompress_struct *info, ErrorManager *err, const uint8_t *bytes, size_t length) {
    if (setjmp(err->jump)) return false;
    jpeg_create_decompress(info);
    jpeg_mem_src(info, bytes, static_cast<unsigned long>(length));
    jpeg_read_header(info, TRUE);
    return true;
}

bool read_pixels(jpeg_decompress_struct *info, ErrorManager *err, uint8_t *pixels, size_t stride) {
    if (setjmp(err->jump)) return false;
    jpeg_start_decompress(info);
    while (info->output_scanline < info->output_height) {
        JSAMPROW row = pixels + size_t(info->output_scanline) * stride;
        jpeg_read_scanlines(info, &row, 1);
    }
    jpeg_finish_decompress(info);
    return true;
}

}  // namespace

namespace rp {

// OpenCV's own mapping of the eight EXIF orientations (imgcodecs ExifTransform).
cv::Mat oriented(const cv::Mat &image, int orientation) {
    cv::Mat out;
    switch (orientation) {
        case 2: cv::flip(image, out, 1); return out;
        case 3: cv::flip(image, out, -1); return out;
        case 4: cv::flip(image, out, 0); return out;
        case 5: cv::transpose(image, out); return out;
        case 6: cv::transpose(image, out); cv::flip(out, out, 1); return out;
        case 7: cv::transpose(image, out); cv::flip(out, out, -1); return out;
        case 8: cv::transpose(image, out); cv::flip(out, out, 0); return out;
        default: return image;
    }
}


cv::Mat decode_jpeg(const uint8_t *bytes, size_t length, bool grayscale, int orientation, int eighths, std::string &warning) {
    jpeg_decompress_struct info;
    ErrorManager err;
    std::memset(&err, 0, sizeof(err));
    info.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = on_error;
    err.pub.emit_message = on_message;
    if (!read_header(&info, &err, bytes, length)) {
        jpeg_destroy_decompress(&info);
        fail(RP_ERR_DECODE, std::string("corrupt JPEG: ") + err.fatal);
    }
    // CMYK and YCCK (Adobe) JPEGs cannot be converted to BGR by libjpeg: OpenCV's decoder handles those.
    if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {
        jpeg_destroy_decompress(&info);
        return cv::Mat();
    }
    info.out_color_space = grayscale ? JCS_GRAYSCALE : JCS_EXT_BGR;
    // DCT-domain scaling: libjpeg reconstructs each 8x8 block at eighths x eighths pixels, so a reduced decode
    // never holds the full-size pixels.
    info.scale_num = unsigned(std::max(1, std::min(8, eighths)));
    info.scale_denom = 8;
    jpeg_calc_output_dimensions(&info);
    const int channels = grayscale ? 1 : 3;
    cv::Mat image(int(info.output_height), int(info.output_width), CV_8UC(channels));
    const bool ok = read_pixels(&info, &err, image.data, image.step);
    jpeg_destroy_decompress(&info);
    if (!ok) fail(RP_ERR_DECODE, std::string("corrupt JPEG: ") + err.fatal);
    if (err.warnings > 0) {
        warning = std::string(err.first_warning);
        if (err.warnings > 1) warning += cv::format(" (and %d more warnings)", err.warnings - 1);
    }
    return oriented(image, orientation);
}

}  // namespace rp
