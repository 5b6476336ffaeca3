#include "shim_internal.hpp"

#include <opencv2/core/persistence.hpp>

#include <cmath>
#include <cstring>

namespace {

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
        try {
            if (!fs.open(path, cv::FileStorage::READ)) rp::fail(RP_ERR_IO, std::string("cannot open calibration file ") + path);
        } catch (const cv::Exception &error) {
            rp::fail(RP_ERR_DECODE, std::string("calibration file ") + path + " is not OpenCV FileStorage: " + error.err);
        }
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
