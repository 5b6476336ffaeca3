// Chessboard calibration for `rephoto calibrate`: a tool, not part of the production API.
#include "../Core/shim_internal.hpp"
#include "rephoto_shim_tools.h"

#include <opencv2/calib3d.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <array>
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
    // The fit takes at most RP_CHESSBOARD_FITTED_VIEWS views: requiring more could never be met by the fit.
    if (minimum_views > RP_CHESSBOARD_FITTED_VIEWS) {
        rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("the camera is fitted to at most %d views, so at most %d can be required, not %d",
                                                     RP_CHESSBOARD_FITTED_VIEWS, RP_CHESSBOARD_FITTED_VIEWS, minimum_views));
    }
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

// What a view adds to the fit, as numbers of like scale: the board's normal in the camera frame (x and y: the
// sine of its tilt each way), its centre's offset from the frame's centre and its size (square root of the area of
// the outer corners' quadrilateral), both over the longer side. The normal comes from the view's homography and
// Zhang's closed-form focal length over all views (initCameraMatrix2D, principal point at the centre): rough,
// but the order of tilts, which is all the spread needs, survives a focal length some percent off.
std::vector<std::array<double, 5>> view_descriptors(const std::vector<std::vector<cv::Point3f>> &object_points,
                                                    const std::vector<std::vector<cv::Point2f>> &image_points, cv::Size size,
                                                    cv::Size pattern) {
    const double side = std::max(size.width, size.height);
    cv::Matx33d K(side, 0, 0.5 * (size.width - 1), 0, side, 0.5 * (size.height - 1), 0, 0, 1);
    try {
        const cv::Mat guess = cv::initCameraMatrix2D(object_points, image_points, size);
        const double fx = guess.at<double>(0, 0), fy = guess.at<double>(1, 1);
        // Views that do not determine it (no tilt) leave it infinite or absurd: the frame's side is used then.
        if (std::isfinite(fx) && std::isfinite(fy) && fx > 0.05 * side && fy > 0.05 * side && fx < 100 * side && fy < 100 * side) {
            K(0, 0) = fx;
            K(1, 1) = fy;
        }
    } catch (const cv::Exception &) {
    }
    const cv::Matx33d Kinv = K.inv();
    std::vector<cv::Point2f> plane;
    for (const auto &p : object_points.front()) plane.emplace_back(p.x, p.y);
    const size_t last = size_t(pattern.width) * size_t(pattern.height) - 1, row_end = size_t(pattern.width) - 1;
    std::vector<std::array<double, 5>> out;
    out.reserve(image_points.size());
    for (const auto &points : image_points) {
        cv::Vec3d normal(0, 0, 1);
        const cv::Mat H = cv::findHomography(plane, points, 0);
        if (!H.empty()) {
            const cv::Matx33d A = Kinv * cv::Matx33d(H);
            const cv::Vec3d r1(A(0, 0), A(1, 0), A(2, 0)), r2(A(0, 1), A(1, 1), A(2, 1));
            const cv::Vec3d n = r1.cross(r2);
            if (cv::norm(n) > 0 && std::isfinite(cv::norm(n))) normal = n / cv::norm(n);
        }
        if (normal[2] < 0) normal = -normal;  // the side the camera sees, whichever way the corners run
        cv::Point2d centre(0, 0);
        for (const auto &p : points) centre += cv::Point2d(p);
        centre *= 1.0 / double(points.size());
        // Outer corners in order around the board: first, end of the first row, last, start of the last row.
        const cv::Point2d a = points[0], b = points[row_end], c = points[last], d = points[last - row_end];
        const double area = 0.5 * std::abs((a.x * b.y - b.x * a.y) + (b.x * c.y - c.x * b.y) + (c.x * d.y - d.x * c.y) + (d.x * a.y - a.x * d.y));
        out.push_back({normal[0], normal[1], (centre.x - 0.5 * (size.width - 1)) / side, (centre.y - 0.5 * (size.height - 1)) / side,
                       std::sqrt(area) / side});
    }
    return out;
}

// At most `cap` of the `candidates` (view indices), spread over their descriptors by farthest-point sampling: first
// the view farthest from their mean, then again and again the view farthest from all taken so far (the earlier
// candidate on ties). Deterministic, and O(candidates x cap): each step updates every view's distance to its
// nearest taken view. View indices, ascending.
std::vector<int> spread_views(const std::vector<std::array<double, 5>> &all, const std::vector<int> &candidates, int cap) {
    if (int(candidates.size()) <= cap) return candidates;
    std::vector<std::array<double, 5>> descriptors;
    for (int v : candidates) descriptors.push_back(all[size_t(v)]);
    const int n = int(descriptors.size());
    std::vector<int> taken;
    auto distance2 = [](const std::array<double, 5> &p, const std::array<double, 5> &q) {
        double sum = 0;
        for (size_t k = 0; k < p.size(); ++k) sum += (p[k] - q[k]) * (p[k] - q[k]);
        return sum;
    };
    std::array<double, 5> mean{};
    for (const auto &d : descriptors) {
        for (size_t k = 0; k < mean.size(); ++k) mean[k] += d[k] / n;
    }
    // nearest[i]: squared distance to the nearest taken view (to the mean before the first), -1 once taken.
    std::vector<double> nearest(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) nearest[size_t(i)] = distance2(descriptors[size_t(i)], mean);
    for (int step = 0; step < cap; ++step) {
        int best = -1;
        for (int i = 0; i < n; ++i) {
            if (nearest[size_t(i)] >= 0 && (best < 0 || nearest[size_t(i)] > nearest[size_t(best)])) best = i;
        }
        taken.push_back(best);
        for (int i = 0; i < n; ++i) {
            const double d = distance2(descriptors[size_t(i)], descriptors[size_t(best)]);
            if (nearest[size_t(i)] >= 0) nearest[size_t(i)] = step == 0 ? d : std::min(nearest[size_t(i)], d);
        }
        nearest[size_t(best)] = -1;
    }
    for (int &t : taken) t = candidates[size_t(t)];
    std::sort(taken.begin(), taken.end());
    return taken;
}

// A view's RMS reprojection error, px.
double view_error(const std::vector<cv::Point3f> &board, const std::vector<cv::Point2f> &points, const cv::Mat &rvec, const cv::Mat &tvec,
                  const cv::Mat &K, const cv::Mat &D) {
    std::vector<cv::Point2f> projected;
    cv::projectPoints(board, rvec, tvec, K, D, projected);
    return cv::norm(points, projected, cv::NORM_L2) / std::sqrt(double(projected.size()));
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
                                       int *view_fitted, size_t view_fitted_capacity, rp_chessboard_result *result, rp_status *status) {
    if (result) std::memset(result, 0, sizeof(*result));
    return rp::guarded(status, [&] {
        if (result == nullptr || view_errors == nullptr || view_fitted == nullptr || views < 0 || (views > 0 && corners_xy == nullptr)) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("bad calibration input (%d views)", views));
        }
        check_board(board_width, board_height, square_size, minimum_views);
        rp::check_capacity(view_errors, view_errors_capacity, views, "view_errors");
        rp::check_capacity(view_fitted, view_fitted_capacity, views, "view_fitted");
        if (width <= 0 || height <= 0) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("image size must be positive, got %dx%d", width, height));
        if (views < minimum_views) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("%d views with the board; calibration needs at least %d", views, minimum_views));
        }
        const size_t count = size_t(board_width) * size_t(board_height);
        std::vector<cv::Point3f> board;
        for (int r = 0; r < board_height; ++r) {
            for (int c = 0; c < board_width; ++c) board.emplace_back(float(c * square_size), float(r * square_size), 0.f);
        }
        // Every view's corners, as OpenCV takes them: O(views) memory, like the corners passed in.
        std::vector<std::vector<cv::Point3f>> object_points(size_t(views), board);
        std::vector<std::vector<cv::Point2f>> image_points(static_cast<size_t>(views));
        for (int v = 0; v < views; ++v) {
            for (size_t i = 0; i < count; ++i) {
                const float *p = corners_xy + 2 * (size_t(v) * count + i);
                if (!std::isfinite(p[0]) || !std::isfinite(p[1])) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("view %d corner %zu is not finite", v, i));
                image_points[size_t(v)].emplace_back(p[0], p[1]);
            }
        }
        const cv::Size size(width, height), pattern(board_width, board_height);
        // calibrateCamera solves one dense system over all views' poses (6 per view) each iteration, and the
        // deviations invert it once more: O(views^2) memory, O(views^3) time. The fit takes a bounded spread subset.
        const std::vector<std::array<double, 5>> descriptors = view_descriptors(object_points, image_points, size, pattern);
        std::vector<int> candidates(static_cast<size_t>(views));
        for (int v = 0; v < views; ++v) candidates[size_t(v)] = v;
        std::vector<int> fitted;
        cv::Mat K, D, sigma_intrinsics;
        double rms = 0;
        std::vector<double> errors(static_cast<size_t>(views));
        // Farthest-point sampling favours the unusual view, and a view whose corners were found wrong is unusual: with
        // a subset to choose, a view over kOutlying x the median error against the fit is dropped and the subset
        // chosen again among the rest, at most kRounds times.
        constexpr double kOutlying = 3;
        constexpr int kRounds = 3;
        for (int round = 1;; ++round) {
            fitted = spread_views(descriptors, candidates, RP_CHESSBOARD_FITTED_VIEWS);
            std::vector<std::vector<cv::Point3f>> fit_objects(fitted.size(), board);
            std::vector<std::vector<cv::Point2f>> fit_points;
            for (int v : fitted) fit_points.push_back(image_points[size_t(v)]);
            cv::Mat sigma_extrinsics, per_view;
            std::vector<cv::Mat> rvecs, tvecs;
            // LU for the damped normal equations (symmetric, positive definite): SVD took 10x as long for the same camera.
            rms = cv::calibrateCamera(fit_objects, fit_points, size, K, D, rvecs, tvecs, sigma_intrinsics, sigma_extrinsics, per_view,
                                      cv::CALIB_USE_LU);
            size_t next = 0;  // into `fitted`, ascending like v
            for (int v = 0; v < views; ++v) {
                if (next < fitted.size() && fitted[next] == v) {
                    errors[size_t(v)] = view_error(board, image_points[size_t(v)], rvecs[next], tvecs[next], K, D);
                    ++next;
                } else {
                    // Not fitted: the board's pose from this view alone, against the fitted camera.
                    cv::Mat rvec, tvec;
                    cv::solvePnP(board, image_points[size_t(v)], K, D, rvec, tvec, false, cv::SOLVEPNP_ITERATIVE);
                    errors[size_t(v)] = view_error(board, image_points[size_t(v)], rvec, tvec, K, D);
                }
            }
            if (views <= RP_CHESSBOARD_FITTED_VIEWS || round == kRounds) break;
            std::vector<double> sorted = errors;
            std::nth_element(sorted.begin(), sorted.begin() + views / 2, sorted.end());
            const double limit = kOutlying * sorted[size_t(views / 2)];
            std::vector<int> kept;
            for (int v = 0; v < views; ++v) {
                if (errors[size_t(v)] <= limit) kept.push_back(v);
            }
            const bool clean = std::all_of(fitted.begin(), fitted.end(), [&](int v) { return errors[size_t(v)] <= limit; });
            if (clean || int(kept.size()) < minimum_views) break;
            candidates = kept;
        }
        for (int i = 0; i < 4; ++i) result->intrinsics_sigma[i] = sigma_intrinsics.total() > size_t(i) ? sigma_intrinsics.at<double>(i) : HUGE_VAL;
        for (int v = 0; v < views; ++v) view_fitted[v] = -1;  // left out as outlying, unless a candidate
        for (int v : candidates) view_fitted[v] = 0;
        for (int v : fitted) view_fitted[v] = 1;
        double sum = 0;
        for (int v = 0; v < views; ++v) {
            view_errors[v] = errors[size_t(v)];
            sum += errors[size_t(v)];
        }
        std::memcpy(result->calibration.K, K.ptr<double>(), 9 * sizeof(double));
        const int nd = int(D.total());
        for (int i = 0; i < nd && i < 14; ++i) result->calibration.distortion[i] = D.at<double>(i);
        result->calibration.distortion_count = std::min(nd, 14);
        result->calibration.width = width;
        result->calibration.height = height;
        result->rms = rms;
        result->mean_error = sum / double(views);
        result->views_used = int(fitted.size());
    });
}
