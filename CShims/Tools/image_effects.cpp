// Photometric changes and pasting, for synthetic scenes (rephoto synth); not part of the production API.
#include "../Core/shim_internal.hpp"
#include "rephoto_shim_tools.h"

#include <opencv2/imgproc.hpp>

#include <cmath>

extern "C" int rp_image_adjust(const rp_image *image, double contrast, double brightness, double blur_sigma,
                               double noise_sigma, uint64_t seed, rp_image **out, rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        if (!(contrast >= 0) || !std::isfinite(brightness) || !(blur_sigma >= 0) || !(noise_sigma >= 0)) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("bad adjustment: contrast %g, brightness %g, blur %g, noise %g",
                                                         contrast, brightness, blur_sigma, noise_sigma));
        }
        cv::Mat work;
        image->mat.convertTo(work, CV_32F, contrast, brightness);
        if (blur_sigma > 0) cv::GaussianBlur(work, work, cv::Size(), blur_sigma);
        if (noise_sigma > 0) {
            cv::Mat noise(work.size(), work.type());
            cv::RNG rng(seed);
            rng.fill(noise, cv::RNG::NORMAL, 0.0, noise_sigma);
            work += noise;
        }
        cv::Mat result;
        work.convertTo(result, CV_8U);
        *out = rp::wrap_image(result);
    });
}

extern "C" int rp_image_paste(const rp_image *image, const rp_image *patch, int x, int y, rp_image **out,
                              rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        cv::Mat result = image->mat.clone(), source = patch->mat;
        if (source.channels() != result.channels()) {
            cv::cvtColor(source, source, result.channels() == 1 ? cv::COLOR_BGR2GRAY : cv::COLOR_GRAY2BGR);
        }
        cv::Rect target = cv::Rect(x, y, source.cols, source.rows) & cv::Rect(0, 0, result.cols, result.rows);
        if (!target.empty()) {
            source(cv::Rect(target.x - x, target.y - y, target.width, target.height)).copyTo(result(target));
        }
        *out = rp::wrap_image(result);
    });
}

extern "C" int rp_image_print_scan(const rp_image *image, double vignette, int border_colour, const int margins[4],
                                   double tilt_degrees, rp_image **out, rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        if (!(vignette >= 0 && vignette <= 1) || border_colour < 0 || border_colour > 255 || !(std::abs(tilt_degrees) <= 45))
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("bad print: vignette %g, border colour %d, tilt %g", vignette, border_colour, tilt_degrees));
        for (int i = 0; i < 4; ++i)
            if (margins[i] < 0 || margins[i] > 100000) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("bad margin %d", margins[i]));
        cv::Mat work;
        image->mat.convertTo(work, CV_32F);
        // Vignetting: 1 - vignette * r^2, r the distance from the centre over the half-side on each axis.
        const double cx = (work.cols - 1) / 2.0, cy = (work.rows - 1) / 2.0;
        for (int y = 0; y < work.rows; ++y) {
            float *row = work.ptr<float>(y);
            for (int x = 0; x < work.cols; ++x) {
                const double u = (x - cx) / (work.cols / 2.0), v = (y - cy) / (work.rows / 2.0);
                const float gain = float(1 - vignette * (u * u + v * v));
                for (int c = 0; c < work.channels(); ++c) row[x * work.channels() + c] *= gain;
            }
        }
        cv::Mat photo;
        work.convertTo(photo, CV_8U);
        cv::Mat print;
        cv::copyMakeBorder(photo, print, margins[0], margins[2], margins[3], margins[1], cv::BORDER_CONSTANT,
                           cv::Scalar::all(border_colour));
        if (tilt_degrees != 0) {
            // Turned on the scanner about the print's centre; the scanner's lid shows the border's colour.
            const cv::Mat turn = cv::getRotationMatrix2D(cv::Point2f((print.cols - 1) / 2.0f, (print.rows - 1) / 2.0f), -tilt_degrees, 1.0);
            cv::Mat turned;
            cv::warpAffine(print, turned, turn, print.size(), cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar::all(border_colour));
            print = turned;
        }
        *out = rp::wrap_image(print);
    });
}
