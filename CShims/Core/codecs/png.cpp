// PNG through libpng's simplified API rather than OpenCV's imgcodecs: OpenCV 4.6 leaves libpng's default
// handlers in place, which print "libpng error: IDAT: invalid literal/lengths set" and "libpng warning: ..."
// lines on stderr. The simplified API keeps its messages in the png_image instead, and leaving imgcodecs out
// saves loading about 120 libraries at start.
#include "../shim_internal.hpp"

#include <opencv2/imgproc.hpp>

#include <cstring>
#include <vector>

#include <png.h>

namespace rp {

cv::Mat decode_png(const uint8_t *bytes, size_t length, bool grayscale, std::string &warning) {
    png_image image;
    std::memset(&image, 0, sizeof(image));
    image.version = PNG_IMAGE_VERSION;
    // On failure libpng has already released the image's memory.
    if (!png_image_begin_read_from_memory(&image, bytes, length)) fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, std::string("corrupt PNG: ") + image.message);
    // The same pixels cv::imdecode gives: colour read as BGR and turned grey by OpenCV's own weights (libpng's
    // grey is gamma-correct luminance), 16-bit samples read linear and cut to their high byte (libpng would
    // gamma-encode them), alpha dropped.
    const bool colour = (image.format & PNG_FORMAT_FLAG_COLOR) != 0, wide = (image.format & PNG_FORMAT_FLAG_LINEAR) != 0;
    image.format = (colour ? PNG_FORMAT_BGR : PNG_FORMAT_GRAY) | (wide ? PNG_FORMAT_FLAG_LINEAR : 0);
    cv::Mat raw;
    try {
        raw.create(int(image.height), int(image.width), CV_MAKETYPE(wide ? CV_16U : CV_8U, colour ? 3 : 1));
    } catch (...) {
        png_image_free(&image);
        throw;
    }
    // The row stride is counted in components, not bytes.
    if (!png_image_finish_read(&image, nullptr, raw.data, png_int_32(raw.step / raw.elemSize1()), nullptr)) {
        fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, std::string("corrupt PNG: ") + image.message);
    }
    if ((image.warning_or_error & PNG_IMAGE_WARNING) != 0) warning = image.message;
    png_image_free(&image);
    cv::Mat out;
    if (wide) {
        // Row by row, so no 8-bit copy of the whole colour image stands beside the 16-bit one (a 50 MP 16-bit
        // colour PNG read grey peaked at 450 MB of pixels, now 350).
        const int channels = grayscale ? 1 : 3;
        out.create(raw.rows, raw.cols, CV_MAKETYPE(CV_8U, channels));
        cv::Mat narrow(1, raw.cols, CV_MAKETYPE(CV_8U, raw.channels()));
        const int samples = raw.cols * raw.channels();
        for (int y = 0; y < raw.rows; ++y) {
            const uint16_t *wide_row = raw.ptr<uint16_t>(y);
            uint8_t *narrow_row = narrow.ptr<uint8_t>(0);
            for (int i = 0; i < samples; ++i) narrow_row[i] = uint8_t(wide_row[i] >> 8);
            cv::Mat row = out.row(y);
            if (grayscale && colour) cv::cvtColor(narrow, row, cv::COLOR_BGR2GRAY);
            else if (!grayscale && !colour) cv::cvtColor(narrow, row, cv::COLOR_GRAY2BGR);
            else narrow.copyTo(row);
        }
        return out;
    }
    if (grayscale && colour) cv::cvtColor(raw, out, cv::COLOR_BGR2GRAY);
    else if (!grayscale && !colour) cv::cvtColor(raw, out, cv::COLOR_GRAY2BGR);
    else out = raw;
    return out;
}

std::vector<uint8_t> encode_png(const cv::Mat &image) {
    if (image.depth() != CV_8U || (image.channels() != 1 && image.channels() != 3)) {
        fail(RP_ERR_INVALID_ARGUMENT, "PNG encoding takes 8-bit grey or BGR pixels");
    }
    png_image header;
    std::memset(&header, 0, sizeof(header));
    header.version = PNG_IMAGE_VERSION;
    header.width = png_uint_32(image.cols);
    header.height = png_uint_32(image.rows);
    header.format = image.channels() == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_BGR;
    header.flags = PNG_IMAGE_FLAG_FAST;  // zlib's fastest level, as cv::imencode's default
    const png_int_32 stride = png_int_32(image.step / image.elemSize1());
    png_alloc_size_t length = 0;
    // The first call measures, the second writes.
    if (!png_image_write_to_memory(&header, nullptr, &length, 0, image.data, stride, nullptr)) {
        fail(RP_ERR_IO, std::string("could not encode as PNG: ") + header.message);
    }
    std::vector<uint8_t> out(length);
    if (!png_image_write_to_memory(&header, out.data(), &length, 0, image.data, stride, nullptr)) {
        fail(RP_ERR_IO, std::string("could not encode as PNG: ") + header.message);
    }
    out.resize(length);
    return out;
}

}  // namespace rp
