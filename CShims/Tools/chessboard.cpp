// Chessboard calibration for `rephoto calibrate`: a tool, not part of the production API.
#include "../Core/shim_internal.hpp"
#include "rephoto_shim_tools.h"

#include <opencv2/calib3d.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace {

void check_board(int board_width, int board_height, double square_size, int minimum_views) {
    // Printed boards have tens of corners a side; past 100 the corner search only burns memory (30000x30000 took 6 GB).
    // OpenCV's corner search needs 3 a side.
    if (board_width < 3 || board_height < 3 || board_width > 100 || board_height > 100) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("board must have 3...100 inner corners a side, got %dx%d", board_width, board_height));
    }
    // From a 0.1 mm microscope target to a 10 m wall: beyond, the float board coordinates lose the geometry.
    if (!(square_size >= 1e-4 && square_size <= 10)) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("square size must be 0.0001...10 metres, got %g", square_size));
    }
    // Zhang's method needs three views of the plane for all four intrinsics.
    if (minimum_views < 3) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("at least 3 views are needed to calibrate, not %d", minimum_views));
}

// cornerSubPix's half window for these corners: a quarter of the closest spacing between neighbours, within
// [least, most] pixels.
int window(const std::vector<cv::Point2f> &corners, cv::Size pattern, int least, int most) {
    double closest = HUGE_VAL;
    for (int r = 0; r < pattern.height; ++r) {
        for (int c = 0; c < pattern.width; ++c) {
            const cv::Point2f &p = corners[size_t(r * pattern.width + c)];
            if (c + 1 < pattern.width) closest = std::min(closest, double(cv::norm(p - corners[size_t(r * pattern.width + c + 1)])));
            if (r + 1 < pattern.height) closest = std::min(closest, double(cv::norm(p - corners[size_t((r + 1) * pattern.width + c)])));
        }
    }
    return int(std::clamp(std::lround(0.25 * closest), long(least), long(most)));
}

}  // namespace

extern "C" int rp_chessboard_check(int board_width, int board_height, double square_size, int minimum_views, rp_status *status) {
    return rp::guarded(status, [&] { check_board(board_width, board_height, square_size, minimum_views); });
}

extern "C" int rp_chessboard_corners(const rp_image *image, int board_width, int board_height, float *corners_xy,
                                     size_t corners_capacity, int *found, rp_status *status) {
    return rp::guarded(status, [&] {
        if (image == nullptr || found == nullptr || corners_xy == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "image, corners and found are required");
        *found = 0;
        check_board(board_width, board_height, 1, 3);
        const size_t count = size_t(board_width) * size_t(board_height);
        rp::check_capacity(corners_xy, corners_capacity, int(2 * count), "corners_xy");
        const cv::Mat &m = image->mat;
        cv::Mat gray;
        if (m.channels() == 1) gray = m;
        else cv::cvtColor(m, gray, cv::COLOR_BGR2GRAY);
        const cv::Size pattern(board_width, board_height);
        const cv::TermCriteria until(cv::TermCriteria::EPS + cv::TermCriteria::COUNT, 30, 0.01);
        constexpr int kFlags = cv::CALIB_CB_ADAPTIVE_THRESH | cv::CALIB_CB_NORMALIZE_IMAGE | cv::CALIB_CB_FAST_CHECK;
        std::vector<cv::Point2f> corners;
        const double scale = std::min(1.0, double(RP_CHESSBOARD_SEARCH_SIDE) / double(std::max(gray.cols, gray.rows)));
        bool seen = false;
        if (scale < 1) {
            // Sized explicitly: a 5000x1 photo would otherwise round to an empty copy.
            const cv::Size reduced(std::max(1, int(std::lround(gray.cols * scale))), std::max(1, int(std::lround(gray.rows * scale))));
            cv::Mat search;
            cv::resize(gray, search, reduced, 0, 0, cv::INTER_AREA);
            if (cv::findChessboardCorners(search, pattern, corners, kFlags)) {
                // The window must stay inside a square, or the neighbouring corners pull the estimate: a quarter of
                // the closest corners' spacing, at both sizes (the fixed 11 px window of the full-size path, scaled
                // up, spanned a whole square of a small board in a 48 MP photo and put fx 3.4 % off).
                const int near = window(corners, pattern, 2, 11);
                cv::cornerSubPix(search, corners, cv::Size(near, near), cv::Size(-1, -1), until);
                const double sx = double(gray.cols) / reduced.width, sy = double(gray.rows) / reduced.height;
                for (auto &c : corners) c = cv::Point2f(float((c.x + 0.5) * sx - 0.5), float((c.y + 0.5) * sy - 0.5));  // pixel centres
                // Never wider than the full-size path's window scaled alike: a board filling a 48 MP photo has
                // squares of hundreds of pixels, and the window's cost grows with its area.
                const int full = window(corners, pattern, 5, std::max(5, int(std::lround(11 / scale))));
                cv::cornerSubPix(gray, corners, cv::Size(full, full), cv::Size(-1, -1), until);
                seen = true;
            }
        }
        // At full size when the photo is small enough, or when the reduced copy lost a small board (squares of
        // 35 px in a 48 MP photo are 9 px at 2048): slower, but a board in the photo is found.
        if (!seen) {
            if (!cv::findChessboardCorners(gray, pattern, corners, kFlags)) return;
            cv::cornerSubPix(gray, corners, cv::Size(11, 11), cv::Size(-1, -1), until);
        }
        for (size_t i = 0; i < count; ++i) {
            corners_xy[2 * i] = corners[i].x;
            corners_xy[2 * i + 1] = corners[i].y;
        }
        *found = 1;
    });
}

extern "C" int rp_chessboard_calibrate(const float *corners_xy, int views, int board_width, int board_height, double square_size,
                                       int minimum_views, int width, int height, double *view_errors, size_t view_errors_capacity,
                                       rp_chessboard_result *result, rp_status *status) {
    if (result) std::memset(result, 0, sizeof(*result));
    return rp::guarded(status, [&] {
        if (result == nullptr || view_errors == nullptr || views < 0 || (views > 0 && corners_xy == nullptr)) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("bad calibration input (%d views)", views));
        }
        check_board(board_width, board_height, square_size, minimum_views);
        rp::check_capacity(view_errors, view_errors_capacity, views, "view_errors");
        if (width <= 0 || height <= 0) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("image size must be positive, got %dx%d", width, height));
        if (views < minimum_views) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("%d views with the board; calibration needs at least %d", views, minimum_views));
        }
        const size_t count = size_t(board_width) * size_t(board_height);
        std::vector<cv::Point3f> board;
        for (int r = 0; r < board_height; ++r) {
            for (int c = 0; c < board_width; ++c) board.emplace_back(float(c * square_size), float(r * square_size), 0.f);
        }
        std::vector<std::vector<cv::Point3f>> object_points(size_t(views), board);
        std::vector<std::vector<cv::Point2f>> image_points(static_cast<size_t>(views));
        for (int v = 0; v < views; ++v) {
            for (size_t i = 0; i < count; ++i) {
                const float *p = corners_xy + 2 * (size_t(v) * count + i);
                if (!std::isfinite(p[0]) || !std::isfinite(p[1])) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("view %d corner %zu is not finite", v, i));
                image_points[size_t(v)].emplace_back(p[0], p[1]);
            }
        }
        cv::Mat K, D, sigma_intrinsics, sigma_extrinsics, per_view;
        std::vector<cv::Mat> rvecs, tvecs;
        const double rms = cv::calibrateCamera(object_points, image_points, cv::Size(width, height), K, D, rvecs, tvecs,
                                                       sigma_intrinsics, sigma_extrinsics, per_view);
        for (int i = 0; i < 4; ++i) result->intrinsics_sigma[i] = sigma_intrinsics.total() > size_t(i) ? sigma_intrinsics.at<double>(i) : HUGE_VAL;
        double sum = 0;
        for (int v = 0; v < views; ++v) {
            std::vector<cv::Point2f> projected;
            cv::projectPoints(object_points[size_t(v)], rvecs[size_t(v)], tvecs[size_t(v)], K, D, projected);
            const double e = cv::norm(image_points[size_t(v)], projected, cv::NORM_L2) / std::sqrt(double(projected.size()));
            view_errors[v] = e;
            sum += e;
        }
        std::memcpy(result->calibration.K, K.ptr<double>(), 9 * sizeof(double));
        const int nd = int(D.total());
        for (int i = 0; i < nd && i < 14; ++i) result->calibration.distortion[i] = D.at<double>(i);
        result->calibration.distortion_count = std::min(nd, 14);
        result->calibration.width = width;
        result->calibration.height = height;
        result->rms = rms;
        result->mean_error = sum / double(views);
        result->views_used = views;
    });
}
