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
