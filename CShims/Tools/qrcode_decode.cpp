// Test-only: reads a QR code back with OpenCV (the worker's codes are checked by decoding them). OpenCV's
// QRCodeDetector decodes with quirc, which Debian's OpenCV 4.6 is built without ("Library QUIRC is not linked"):
// then the contrib WeChatQRCode decoder, without its CNN models (its classical detector and ZXing's decoder).
#include "../Core/shim_internal.hpp"
#include "rephoto_shim_tools.h"

#include <opencv2/objdetect.hpp>
#include <opencv2/wechat_qrcode.hpp>

#include <cstring>

extern "C" int rp_qr_decode(const rp_image *image, char *text, size_t capacity, rp_status *status) {
    if (capacity > 0) text[0] = '\0';
    return rp::guarded(status, [&] {
        if (capacity == 0) rp::fail(RP_ERR_INVALID_ARGUMENT, "no room for the decoded text");
        std::string decoded;
        try {
            cv::QRCodeDetector detector;
            decoded = detector.detectAndDecode(image->mat);
        } catch (const cv::Exception &) {
            decoded.clear();
        }
        if (decoded.empty()) {
            cv::wechat_qrcode::WeChatQRCode reader;
            std::vector<std::string> found = reader.detectAndDecode(image->mat);
            if (!found.empty()) decoded = found.front();
        }
        if (decoded.empty()) rp::fail(RP_ERR_DECODE, "no QR code found or decoded");
        if (decoded.size() + 1 > capacity) rp::fail(RP_ERR_INVALID_ARGUMENT, "decoded text longer than the buffer");
        std::memcpy(text, decoded.c_str(), decoded.size() + 1);
    });
}
