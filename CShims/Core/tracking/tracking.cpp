// Pyramidal Lucas-Kanade tracking between frames, with a forward-backward check (Kalal et al. 2010): the
// correspondences a robust update found are carried to the next frames without detecting again.
#include "../shim_internal.hpp"

#include <opencv2/imgproc.hpp>
#include <opencv2/video/tracking.hpp>

#include <cmath>

struct rp_pyramid {
    std::vector<cv::Mat> levels;  // buildOpticalFlowPyramid's output, derivatives included
    cv::Size size;                // of the analysed image
    double scale_x = 1, scale_y = 1;  // analysed pixels per full-resolution pixel
    int window = 0, levels_asked = 0;
};

namespace {

void check_params(const rp_track_params *params) {
    if (params == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "tracking parameters are NULL");
    const rp_track_params &p = *params;
    if (p.window < 5 || p.window > 101 || p.window % 2 == 0 || p.levels < 0 || p.levels > 8 || p.max_iterations < 1 ||
        p.max_iterations > 100 || !(p.epsilon > 0 && std::isfinite(p.epsilon)) ||
        !(p.max_forward_backward > 0 && std::isfinite(p.max_forward_backward))) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("tracking needs an odd window 5...101, levels 0...8, iterations 1...100 and a positive, finite "
                                                     "epsilon and forward-backward bound (got %d, %d, %d, %g, %g)",
                                                     p.window, p.levels, p.max_iterations, p.epsilon, p.max_forward_backward));
    }
}

}  // namespace

extern "C" {

int rp_pyramid_build(const rp_image *image, const rp_track_params *params, rp_pyramid **out, rp_status *status) {
    if (out) *out = nullptr;
    return rp::guarded(status, [&] {
        if (image == nullptr || out == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "image or output is NULL");
        check_params(params);
        if (image->mat.empty()) rp::fail(RP_ERR_INVALID_ARGUMENT, "the image is empty");
        cv::Mat grey = image->mat;
        if (grey.channels() != 1) cv::cvtColor(image->mat, grey, cv::COLOR_BGR2GRAY);
        auto pyramid = std::make_unique<rp_pyramid>();
        const cv::Size window(params->window, params->window);
        cv::buildOpticalFlowPyramid(grey, pyramid->levels, window, params->levels, true);
        pyramid->size = grey.size();
        pyramid->scale_x = image->pixel_scale_x;
        pyramid->scale_y = image->pixel_scale_y;
        pyramid->window = params->window;
        pyramid->levels_asked = params->levels;
        *out = pyramid.release();
    });
}

void rp_pyramid_free(rp_pyramid *pyramid) { delete pyramid; }

int rp_track_points(const rp_pyramid *from, const rp_pyramid *to, const double *from_xy, int n,
                    const rp_track_params *params, double *to_xy, size_t to_capacity, uint8_t *tracked,
                    size_t tracked_capacity, double *forward_backward, size_t forward_backward_capacity,
                    rp_status *status) {
    return rp::guarded(status, [&] {
        if (from == nullptr || to == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "pyramid is NULL");
        check_params(params);
        if (from->window != params->window || to->window != params->window || from->levels_asked != params->levels ||
            to->levels_asked != params->levels) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, "the pyramids were built with another window or level count than these parameters");
        }
        if (to_xy == nullptr || tracked == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "output buffers are NULL");
        const auto points = rp::to_points(from_xy, n);
        rp::check_capacity(to_xy, to_capacity / 2, n, "tracked positions");
        rp::check_capacity(tracked, tracked_capacity, n, "tracked flags");
        rp::check_capacity(forward_backward, forward_backward_capacity, n, "forward-backward");
        if (n == 0) return;
        // Full-resolution pixels to the analysed image's, pixel centres kept in place.
        std::vector<cv::Point2f> start(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) {
            if (!std::isfinite(points[size_t(i)].x) || !std::isfinite(points[size_t(i)].y)) {
                rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("point %d is not finite", i));
            }
            start[size_t(i)] = cv::Point2f(float((points[size_t(i)].x + 0.5) * from->scale_x - 0.5),
                                           float((points[size_t(i)].y + 0.5) * from->scale_y - 0.5));
        }
        const cv::Size window(params->window, params->window);
        const cv::TermCriteria criteria(cv::TermCriteria::COUNT | cv::TermCriteria::EPS, params->max_iterations, params->epsilon);
        std::vector<cv::Point2f> ahead, back;
        std::vector<uint8_t> ok_ahead, ok_back;
        std::vector<float> error;
        cv::calcOpticalFlowPyrLK(from->levels, to->levels, start, ahead, ok_ahead, error, window, params->levels, criteria);
        // Back from where it landed, with no hint of where it came from: a hint would pull a wrong track home.
        cv::calcOpticalFlowPyrLK(to->levels, from->levels, ahead, back, ok_back, error, window, params->levels, criteria);
        const double mean_scale = std::sqrt(to->scale_x * to->scale_y);
        for (int i = 0; i < n; ++i) {
            const size_t k = size_t(i);
            const cv::Point2f p = ahead[k];
            const double round_trip = cv::norm(back[k] - start[k]);
            const bool inside = p.x >= 0 && p.y >= 0 && p.x <= float(to->size.width - 1) && p.y <= float(to->size.height - 1);
            const bool ok = ok_ahead[k] && ok_back[k] && inside && std::isfinite(round_trip) &&
                            round_trip <= params->max_forward_backward;
            to_xy[2 * k] = (double(p.x) + 0.5) / to->scale_x - 0.5;
            to_xy[2 * k + 1] = (double(p.y) + 0.5) / to->scale_y - 0.5;
            tracked[k] = ok ? 1 : 0;
            if (forward_backward) forward_backward[k] = ok_ahead[k] && ok_back[k] ? round_trip / mean_scale : HUGE_VAL;
        }
    });
}

}  // extern "C"
