// JPEG through libjpeg(-turbo) directly rather than OpenCV's imgcodecs. Decoding: libjpeg's warnings about
// corrupt data ("Corrupt JPEG data: 7 extraneous bytes before marker") go to stderr from inside OpenCV and the
// damaged image comes back as if it were fine; here every warning is kept with the image, so the caller can
// report it or refuse the image. EXIF orientation is applied as OpenCV applies it. Encoding uses the settings
// cv::imencode uses, byte for byte; linking imgcodecs would load about 120 more libraries at start.
#include "../shim_internal.hpp"

#include <opencv2/core.hpp>

#include <csetjmp>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

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

// libjpeg's error manager, zeroed, with the handlers above in place of printing and exiting.
jpeg_error_mgr *handlers(ErrorManager &err) {
    std::memset(&err, 0, sizeof(err));
    jpeg_std_error(&err.pub);
    err.pub.error_exit = on_error;
    err.pub.emit_message = on_message;
    return &err.pub;
}

// The setjmp regions hold only plain C data: nothing with a destructor lives across a longjmp.
bool read_header(jpeg_decompress_struct *info, ErrorManager *err, const uint8_t *bytes, size_t length) {
    if (setjmp(err->jump)) return false;
    jpeg_create_decompress(info);
    jpeg_mem_src(info, bytes, static_cast<unsigned long>(length));
    jpeg_read_header(info, TRUE);
    return true;
}

bool write_pixels(jpeg_compress_struct *info, ErrorManager *err, const cv::Mat &image, int quality, unsigned char **out,
                  unsigned long *length) {
    if (setjmp(err->jump)) return false;
    jpeg_create_compress(info);
    jpeg_mem_dest(info, out, length);
    info->image_width = JDIMENSION(image.cols);
    info->image_height = JDIMENSION(image.rows);
    info->input_components = image.channels();
    info->in_color_space = image.channels() == 1 ? JCS_GRAYSCALE : JCS_EXT_BGR;
    jpeg_set_defaults(info);
    jpeg_set_quality(info, quality, TRUE);
    jpeg_start_compress(info, TRUE);
    while (info->next_scanline < info->image_height) {
        JSAMPROW row = const_cast<uint8_t *>(image.ptr<uint8_t>(int(info->next_scanline)));
        jpeg_write_scanlines(info, &row, 1);
    }
    jpeg_finish_compress(info);
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
    info.err = handlers(err);
    if (!read_header(&info, &err, bytes, length)) {
        jpeg_destroy_decompress(&info);
        fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, std::string("corrupt JPEG: ") + err.fatal);
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
    if (!ok) fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, std::string("corrupt JPEG: ") + err.fatal);
    if (err.warnings > 0) {
        warning = std::string(err.first_warning);
        if (err.warnings > 1) warning += cv::format(" (and %d more warnings)", err.warnings - 1);
    }
    return oriented(image, orientation);
}

std::vector<uint8_t> encode_jpeg(const cv::Mat &image, int quality) {
    if (image.depth() != CV_8U || (image.channels() != 1 && image.channels() != 3)) {
        fail(RP_ERR_INVALID_ARGUMENT, "JPEG encoding takes 8-bit grey or BGR pixels");
    }
    jpeg_compress_struct info;
    ErrorManager err;
    info.err = handlers(err);
    unsigned char *buffer = nullptr;
    unsigned long length = 0;
    const bool ok = write_pixels(&info, &err, image, std::max(0, std::min(100, quality)), &buffer, &length);
    jpeg_destroy_compress(&info);
    // libjpeg's memory destination is malloc'ed; it is released whether or not the encoding finished.
    std::vector<uint8_t> out;
    if (ok && buffer != nullptr) {
        try {
            out.assign(buffer, buffer + length);
        } catch (...) {
            std::free(buffer);
            throw;
        }
    }
    std::free(buffer);
    if (!ok) fail(RP_ERR_IO, std::string("could not encode as JPEG: ") + err.fatal);
    return out;
}

}  // namespace rp
