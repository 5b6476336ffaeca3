// Chessboard calibration for `rephoto calibrate`: a tool, not part of the production API.
#include "../Core/shim_internal.hpp"
#include "rephoto_shim_tools.h"

#include <opencv2/calib3d.hpp>
#include <opencv2/imgproc.hpp>

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
        const double scale = std::min(1.0, double(RP_CHESSBOARD_SEARCH_SIDE) / double(std::max(gray.cols, gray.rows)));
        cv::Mat search = gray;
        if (scale < 1) cv::resize(gray, search, cv::Size(), scale, scale, cv::INTER_AREA);
        const cv::Size pattern(board_width, board_height);
        const cv::TermCriteria until(cv::TermCriteria::EPS + cv::TermCriteria::COUNT, 30, 0.01);
        std::vector<cv::Point2f> corners;
        if (!cv::findChessboardCorners(search, pattern, corners,
                                       cv::CALIB_CB_ADAPTIVE_THRESH | cv::CALIB_CB_NORMALIZE_IMAGE | cv::CALIB_CB_FAST_CHECK)) {
            return;
        }
        constexpr int kHalfWindow = 11;  // cornerSubPix's half window at the search's scale
        cv::cornerSubPix(search, corners, cv::Size(kHalfWindow, kHalfWindow), cv::Size(-1, -1), until);
        if (scale < 1) {
            // Pixel centres: x_full + 0.5 = (x_reduced + 0.5) / scale. The window grows with the image so that it
            // spans the same part of the board: left01 enlarged 5x and searched at 0.64 came within 0.9 px of 5x
            // its corners this way, 4.5 px with the window kept at 11.
            for (auto &c : corners) c = cv::Point2f(float((c.x + 0.5) / scale - 0.5), float((c.y + 0.5) / scale - 0.5));
            const int half = int(std::lround(kHalfWindow / scale));
            cv::cornerSubPix(gray, corners, cv::Size(half, half), cv::Size(-1, -1), until);
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
        cv::Mat K, D;
        std::vector<cv::Mat> rvecs, tvecs;
        const double rms = cv::calibrateCamera(object_points, image_points, cv::Size(width, height), K, D, rvecs, tvecs);
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
