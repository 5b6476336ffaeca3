// Chessboard calibration for `rephoto calibrate`: a tool, not part of the production API.
#include "../Core/shim_internal.hpp"
#include "rephoto_shim_tools.h"

#include <opencv2/calib3d.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <cstring>

extern "C" int rp_calibrate_chessboard(const rp_image *const *images, int n, int board_width, int board_height,
                                       double square_size, int minimum_views, uint8_t *found, size_t found_capacity,
                                       double *view_errors, size_t view_errors_capacity, rp_chessboard_result *result,
                                       rp_status *status) {
    std::memset(result, 0, sizeof(*result));
    return rp::guarded(status, [&] {
        if (n < 0 || (n > 0 && images == nullptr)) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("bad image list (%d images)", n));
        if (found == nullptr || view_errors == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "found and view_errors are required");
        rp::check_capacity(found, found_capacity, n, "found");
        rp::check_capacity(view_errors, view_errors_capacity, n, "view_errors");
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
        cv::Size pattern(board_width, board_height), size;
        std::vector<cv::Point3f> board;
        for (int r = 0; r < board_height; ++r) {
            for (int c = 0; c < board_width; ++c) board.emplace_back(float(c * square_size), float(r * square_size), 0.f);
        }
        std::vector<std::vector<cv::Point3f>> object_points;
        std::vector<std::vector<cv::Point2f>> image_points;
        std::vector<int> used;
        for (int i = 0; i < n; ++i) {
            found[i] = 0;
            view_errors[i] = 0;
            const cv::Mat &m = images[i]->mat;
            if (size.empty()) size = m.size();
            if (m.size() != size) {
                rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("image %d is %dx%d but the first is %dx%d: all views need one size",
                                                             i, m.cols, m.rows, size.width, size.height));
            }
            cv::Mat gray;
            if (m.channels() == 1) gray = m;
            else cv::cvtColor(m, gray, cv::COLOR_BGR2GRAY);
            std::vector<cv::Point2f> corners;
            if (!cv::findChessboardCorners(gray, pattern, corners,
                                           cv::CALIB_CB_ADAPTIVE_THRESH | cv::CALIB_CB_NORMALIZE_IMAGE | cv::CALIB_CB_FAST_CHECK)) {
                continue;
            }
            cv::cornerSubPix(gray, corners, cv::Size(11, 11), cv::Size(-1, -1),
                             cv::TermCriteria(cv::TermCriteria::EPS + cv::TermCriteria::COUNT, 30, 0.01));
            found[i] = 1;
            object_points.push_back(board);
            image_points.push_back(corners);
            used.push_back(i);
        }
        if (int(used.size()) < minimum_views) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("the %dx%d board was found in %zu of %d images; calibration needs at least %d views",
                                                         board_width, board_height, used.size(), n, minimum_views));
        }
        cv::Mat K, D;
        std::vector<cv::Mat> rvecs, tvecs;
        double rms = cv::calibrateCamera(object_points, image_points, size, K, D, rvecs, tvecs);
        double sum = 0;
        for (size_t v = 0; v < used.size(); ++v) {
            std::vector<cv::Point2f> projected;
            cv::projectPoints(object_points[v], rvecs[v], tvecs[v], K, D, projected);
            double e = cv::norm(image_points[v], projected, cv::NORM_L2) / std::sqrt(double(projected.size()));
            view_errors[used[v]] = e;
            sum += e;
        }
        std::memcpy(result->calibration.K, K.ptr<double>(), 9 * sizeof(double));
        int nd = int(D.total());
        for (int i = 0; i < nd && i < 14; ++i) result->calibration.distortion[i] = D.at<double>(i);
        result->calibration.distortion_count = std::min(nd, 14);
        result->calibration.width = size.width;
        result->calibration.height = size.height;
        result->rms = rms;
        result->mean_error = sum / double(used.size());
        result->views_used = int(used.size());
    });
}

