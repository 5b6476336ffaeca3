// QR codes for the guide's links (GET /v1/references/{id}/qr): OpenCV's encoder (objdetect), not a hand-written one.
#include "../shim_internal.hpp"

#include <opencv2/imgproc.hpp>
#include <opencv2/objdetect.hpp>

#include <cstring>

extern "C" int rp_qr_encode(const char *text, int module_pixels, int quiet_modules, rp_image **out, rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        if (text == nullptr || std::strlen(text) == 0) rp::fail(RP_ERR_INVALID_ARGUMENT, "empty QR code text");
        if (std::strlen(text) > 2000) rp::fail(RP_ERR_INVALID_ARGUMENT, "QR code text over 2000 bytes");
        if (module_pixels < 1 || module_pixels > 64) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("bad module size %d", module_pixels));
        if (quiet_modules < 0 || quiet_modules > 16) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("bad quiet zone %d", quiet_modules));
        cv::QRCodeEncoder::Params params;
        params.correction_level = cv::QRCodeEncoder::CORRECT_LEVEL_M;
        params.mode = cv::QRCodeEncoder::MODE_BYTE;
        cv::Ptr<cv::QRCodeEncoder> encoder = cv::QRCodeEncoder::create(params);
        cv::Mat modules;  // one pixel a module, 0 dark and 255 light
        encoder->encode(std::string(text), modules);
        if (modules.empty()) rp::fail(RP_ERR_INTERNAL, "the QR encoder made no code");
        if (modules.type() != CV_8UC1) {
            cv::Mat grey;
            if (modules.channels() == 3) cv::cvtColor(modules, grey, cv::COLOR_BGR2GRAY); else modules.convertTo(grey, CV_8U);
            modules = grey;
        }
        cv::Mat padded;
        cv::copyMakeBorder(modules, padded, quiet_modules, quiet_modules, quiet_modules, quiet_modules,
                           cv::BORDER_CONSTANT, cv::Scalar(255));
        cv::Mat scaled;
        cv::resize(padded, scaled, cv::Size(padded.cols * module_pixels, padded.rows * module_pixels), 0, 0, cv::INTER_NEAREST);
        *out = rp::wrap_image(scaled);
    });
}
