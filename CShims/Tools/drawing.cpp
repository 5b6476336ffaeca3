#include "../Core/shim_internal.hpp"
#include "rephoto_shim_tools.h"

#include <opencv2/imgproc.hpp>

#include <cmath>

namespace {

std::vector<cv::Point> corners(const double *xy) {
    std::vector<cv::Point> points;
    for (int i = 0; i < 4; ++i) points.emplace_back(int(std::lround(xy[2 * i])), int(std::lround(xy[2 * i + 1])));
    return points;
}

}  // namespace

extern "C" int rp_draw_navigation(const rp_image *image, const double target[8], const double *quadrilateral,
                                  const double *reference_xy, const double *current_xy, int n, rp_image **out,
                                  rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        cv::Mat canvas;
        if (image->mat.channels() == 1) cv::cvtColor(image->mat, canvas, cv::COLOR_GRAY2BGR);
        else canvas = image->mat.clone();
        // Line widths follow the image size so the overlay reads the same on a phone photo and a thumbnail.
        int thick = std::max(1, int(std::lround(std::max(canvas.cols, canvas.rows) / 400.0)));
        for (int i = 0; i < n; ++i) {
            cv::Point2d a(reference_xy[2 * i], reference_xy[2 * i + 1]), b(current_xy[2 * i], current_xy[2 * i + 1]);
            if (!std::isfinite(a.x + a.y + b.x + b.y)) continue;
            cv::line(canvas, a, b, cv::Scalar(0, 220, 255), std::max(1, thick / 2), cv::LINE_AA);
            cv::circle(canvas, b, thick + 1, cv::Scalar(0, 220, 255), -1, cv::LINE_AA);
        }
        std::vector<std::vector<cv::Point>> target_poly{corners(target)};
        cv::polylines(canvas, target_poly, true, cv::Scalar(0, 200, 0), thick * 2, cv::LINE_AA);
        if (quadrilateral) {
            std::vector<std::vector<cv::Point>> quad_poly{corners(quadrilateral)};
            cv::polylines(canvas, quad_poly, true, cv::Scalar(0, 0, 255), thick * 2, cv::LINE_AA);
        }
        *out = rp::wrap_image(canvas);
    });
}
