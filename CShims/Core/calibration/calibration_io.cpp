// Encoding calibration files in OpenCV FileStorage layout (reading is RephotoKit's FileStorageReader).
#include "../shim_internal.hpp"

#include <opencv2/calib3d.hpp>
#include <opencv2/core/persistence.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" int rp_calibration_encode(const char *extension, const rp_camera *calibration, const rp_calibration_report *report,
                                     uint8_t **bytes, size_t *length, rp_status *status) {
    return rp::guarded(status, [&] {
        if (bytes == nullptr || length == nullptr || extension == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "extension, bytes or length is NULL");
        *bytes = nullptr;
        *length = 0;
        const std::string ext = extension;
        const int format = ext == "xml" ? cv::FileStorage::FORMAT_XML : ext == "json" ? cv::FileStorage::FORMAT_JSON
                           : ext == "yml" || ext == "yaml"            ? cv::FileStorage::FORMAT_YAML : -1;
        if (format < 0) rp::fail(RP_ERR_INVALID_ARGUMENT, "calibration format '" + ext + "': expected yml, yaml, xml or json");
        const int nd = calibration->distortion_count;
        if (nd != 0 && nd != 4 && nd != 5 && nd != 8 && nd != 12 && nd != 14) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("%d distortion coefficients, expected 0, 4, 5, 8, 12 or 14", nd));
        }
        if (report != nullptr && report->view_count > 0 && report->view_errors == nullptr) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, "view_errors is NULL with a view count");
        }
        const int board_width = report ? report->board_width : 0, board_height = report ? report->board_height : 0;
        const double square_size = report ? report->square_size : 0, mean_error = report ? report->mean_error : -1;
        const int n = report ? report->view_count : 0;
        const double *view_errors = report ? report->view_errors : nullptr;
        cv::FileStorage fs(std::string(), cv::FileStorage::WRITE | cv::FileStorage::MEMORY | format);
        fs << "image_width" << calibration->width << "image_height" << calibration->height;
        if (board_width > 0 && board_height > 0 && square_size > 0) {
            fs << "board_width" << board_width << "board_height" << board_height << "square_size" << square_size;
        }
        fs << "camera_matrix" << cv::Mat(3, 3, CV_64F, const_cast<double *>(calibration->K));
        cv::Mat D = nd > 0 ? cv::Mat(nd, 1, CV_64F, const_cast<double *>(calibration->distortion)) : cv::Mat();
        fs << "distortion_coefficients" << D;
        if (mean_error >= 0) fs << "avg_reprojection_error" << mean_error;
        if (view_errors && n > 0) fs << "per_view_reprojection_errors" << cv::Mat(n, 1, CV_64F, const_cast<double *>(view_errors));
        const std::string text = fs.releaseAndGetString();
        *bytes = static_cast<uint8_t *>(std::malloc(std::max<size_t>(text.size(), 1)));
        if (*bytes == nullptr) throw std::bad_alloc();
        std::memcpy(*bytes, text.data(), text.size());
        *length = text.size();
    });
}

