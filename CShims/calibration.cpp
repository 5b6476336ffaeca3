#include "shim_internal.hpp"

#include <opencv2/calib3d.hpp>
#include <opencv2/core/persistence.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <cstring>

namespace {

// Opens a FileStorage, turning "cannot open" and parse errors into clear statuses.
void open_storage(cv::FileStorage &fs, const char *path, int mode) {
    try {
        if (!fs.open(path, mode)) rp::fail(RP_ERR_IO, std::string(mode == cv::FileStorage::READ ? "cannot open " : "cannot write ") + path);
    } catch (const cv::Exception &error) {
        rp::fail(mode == cv::FileStorage::READ ? RP_ERR_DECODE : RP_ERR_IO,
                 std::string(path) + (mode == cv::FileStorage::READ ? " is not OpenCV FileStorage: " : ": cannot write: ") + error.err);
    }
}

cv::FileNode first_present(const cv::FileStorage &fs, std::initializer_list<const char *> names) {
    for (const char *name : names) {
        cv::FileNode node = fs[name];
        if (!node.empty()) return node;
    }
    return cv::FileNode();
}

}  // namespace

extern "C" int rp_calibration_read(const char *path, rp_calibration_file *out, rp_status *status) {
    std::memset(out, 0, sizeof(*out));
    return rp::guarded(status, [&] {
        cv::FileStorage fs;
        open_storage(fs, path, cv::FileStorage::READ);
        cv::FileNode k = first_present(fs, {"camera_matrix", "Camera_Matrix", "cameraMatrix"});
        if (k.empty()) rp::fail(RP_ERR_DECODE, std::string("calibration file ") + path + " has no camera_matrix");
        cv::Mat K;
        k >> K;
        if (K.rows != 3 || K.cols != 3) {
            rp::fail(RP_ERR_DECODE, cv::format("camera_matrix in %s is %dx%d, expected 3x3", path, K.rows, K.cols));
        }
        K.convertTo(K, CV_64F);
        std::memcpy(out->K, K.ptr<double>(), 9 * sizeof(double));

        cv::FileNode d = first_present(fs, {"distortion_coefficients", "Distortion_Coefficients", "distCoeffs"});
        if (!d.empty()) {
            cv::Mat D;
            d >> D;
            int n = int(D.total());
            if (n > 14 || (n != 0 && n != 4 && n != 5 && n != 8 && n != 12 && n != 14)) {
                rp::fail(RP_ERR_DECODE, cv::format("distortion_coefficients in %s has %d values, expected 4, 5, 8, 12 or 14", path, n));
            }
            D = D.reshape(1, 1);
            D.convertTo(D, CV_64F);
            for (int i = 0; i < n; ++i) out->distortion[i] = D.at<double>(0, i);
            out->distortion_count = n;
        }
        cv::FileNode w = first_present(fs, {"image_width", "image_Width"});
        cv::FileNode h = first_present(fs, {"image_height", "image_Height"});
        if (!w.empty() && !h.empty()) {
            out->width = int(w);
            out->height = int(h);
        }
    });
}

extern "C" int rp_calibrate_chessboard(const rp_image *const *images, int n, int board_width, int board_height,
                                       double square_size, int minimum_views, uint8_t *found, double *view_errors,
                                       rp_chessboard_result *result, rp_status *status) {
    std::memset(result, 0, sizeof(*result));
    return rp::guarded(status, [&] {
        if (board_width < 2 || board_height < 2) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("board must have at least 2x2 inner corners, got %dx%d", board_width, board_height));
        }
        if (!(square_size > 0)) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("square size must be positive, got %g", square_size));
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

extern "C" int rp_calibration_write(const char *path, const rp_calibration_file *calibration, double mean_error,
                                    const double *view_errors, int n, int board_width, int board_height,
                                    double square_size, rp_status *status) {
    return rp::guarded(status, [&] {
        cv::FileStorage fs;
        open_storage(fs, path, cv::FileStorage::WRITE);
        fs << "image_width" << calibration->width << "image_height" << calibration->height;
        if (board_width > 0 && board_height > 0 && square_size > 0) {
            fs << "board_width" << board_width << "board_height" << board_height << "square_size" << square_size;
        }
        fs << "camera_matrix" << cv::Mat(3, 3, CV_64F, const_cast<double *>(calibration->K));
        cv::Mat D(calibration->distortion_count, 1, CV_64F, const_cast<double *>(calibration->distortion));
        fs << "distortion_coefficients" << D;
        if (mean_error >= 0) fs << "avg_reprojection_error" << mean_error;
        if (view_errors && n > 0) fs << "per_view_reprojection_errors" << cv::Mat(n, 1, CV_64F, const_cast<double *>(view_errors));
        fs.release();
    });
}

extern "C" int rp_read_matrix3(const char *path, const char *key, double matrix[9], rp_status *status) {
    return rp::guarded(status, [&] {
        cv::FileStorage fs;
        open_storage(fs, path, cv::FileStorage::READ);
        cv::FileNode node = key ? fs[key] : (fs.root().size() > 0 ? *fs.root().begin() : cv::FileNode());
        if (node.empty()) rp::fail(RP_ERR_DECODE, std::string(path) + ": no matrix" + (key ? std::string(" '") + key + "'" : ""));
        cv::Mat m;
        node >> m;
        if (m.rows != 3 || m.cols != 3) rp::fail(RP_ERR_DECODE, cv::format("%s: matrix is %dx%d, expected 3x3", path, m.rows, m.cols));
        m.convertTo(m, CV_64F);
        std::memcpy(matrix, m.ptr<double>(), 9 * sizeof(double));
    });
}
