// HEIF/HEIC (the iPhone camera's default format) through libheif. libheif applies the container's irot/imir
// transformations while decoding, so the pixels come out upright as EXIF orientation makes a JPEG's; the
// HEIF specification makes those boxes, not the EXIF copy, authoritative.
#include "../shim_internal.hpp"

#include <opencv2/imgproc.hpp>

#include <climits>
#include <memory>

#include <libheif/heif.h>

namespace {

// heif_init/heif_deinit are reference counted inside libheif: each call here is balanced, so the library's
// plugin state is never left changed for the rest of the process.
struct Library {
    Library() { heif_init(nullptr); }
    ~Library() { heif_deinit(); }
};

struct Context {
    heif_context *context = heif_context_alloc();
    heif_image_handle *handle = nullptr;
    ~Context() {
        if (handle != nullptr) heif_image_handle_release(handle);
        heif_context_free(context);
    }
};

void check(heif_error error, const char *what) {
    if (error.code != heif_error_Ok) {
        rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, std::string("corrupt HEIF: ") + what + ": " + (error.message != nullptr ? error.message : "unknown error"));
    }
}

void open_primary(Context &c, const uint8_t *bytes, size_t length) {
    if (c.context == nullptr) throw std::bad_alloc();
    if (length > size_t(INT32_MAX)) rp::fail(RP_ERR_TOO_LARGE, "HEIF file too large to parse");
    check(heif_context_read_from_memory_without_copy(c.context, bytes, length, nullptr), "cannot read the container");
    check(heif_context_get_primary_image_handle(c.context, &c.handle), "no primary image");
}

}  // namespace

namespace rp {

cv::Size heif_size(const uint8_t *bytes, size_t length) {
    Library library;
    Context c;
    open_primary(c, bytes, length);
    return cv::Size(heif_image_handle_get_width(c.handle), heif_image_handle_get_height(c.handle));
}

cv::Mat decode_heif(const uint8_t *bytes, size_t length, bool grayscale) {
    Library library;
    Context c;
    open_primary(c, bytes, length);
    heif_image *raw = nullptr;
    check(heif_decode_image(c.handle, &raw, heif_colorspace_RGB, heif_chroma_interleaved_RGB, nullptr), "cannot decode the image");
    std::unique_ptr<heif_image, void (*)(heif_image *)> image(raw, [](heif_image *i) { heif_image_release(i); });
    int stride = 0;
    const uint8_t *plane = heif_image_get_plane_readonly(image.get(), heif_channel_interleaved, &stride);
    const int width = heif_image_get_width(image.get(), heif_channel_interleaved);
    const int height = heif_image_get_height(image.get(), heif_channel_interleaved);
    if (plane == nullptr || width <= 0 || height <= 0 || stride < width * 3) fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, "corrupt HEIF: the decoder returned no RGB pixels");
    cv::Mat rgb(height, width, CV_8UC3, const_cast<uint8_t *>(plane), size_t(stride));
    cv::Mat out;
    cv::cvtColor(rgb, out, grayscale ? cv::COLOR_RGB2GRAY : cv::COLOR_RGB2BGR);  // copies out of libheif's buffer
    return out;
}

}  // namespace rp
