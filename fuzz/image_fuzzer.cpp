// libFuzzer harness: image signature check, header probe and decoding (JPEG through libjpeg, HEIF through
// libheif, PNG after the chunk CRC walk, TIFF, WebP, BMP, PNM and JPEG 2000 through OpenCV) on arbitrary bytes. Run by scripts/fuzz.
#include "rephoto_shim.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rp_status status;
    rp_image_check_signature(data, size < 16 ? size : 16, size, &status);
    // 4 MP keeps each run fast; the limit logic is the same at any value.
    // Full-size colour, and grey reduced as the pipeline decodes (libjpeg DCT scaling, or a resize).
    for (int grayscale = 0; grayscale < 2; ++grayscale) {
        rp_image *image = nullptr;
        if (rp_image_decode(data, size, 4'000'000, grayscale, grayscale ? 64 : 0, 0, &image, &status) == RP_OK) {
            (void)rp_image_decode_warning(image);
            rp_image_free(image);
        }
    }
    return 0;
}
