// Reading single matrices from OpenCV FileStorage, for dataset importers (OpenCV's sample homographies).
#include "../Core/shim_internal.hpp"
#include "rephoto_shim_tools.h"

#include <cstring>

extern "C" int rp_read_matrix3(const char *path, const char *key, double matrix[9], rp_status *status) {
    return rp::guarded(status, [&] {
        rp::check_storage_file(path);
        cv::FileStorage fs;
        rp::open_storage(fs, path, cv::FileStorage::READ);
        cv::FileNode node = key ? fs[key] : (fs.root().size() > 0 ? *fs.root().begin() : cv::FileNode());
        if (node.empty()) rp::fail(RP_ERR_DECODE, std::string(path) + ": no matrix" + (key ? std::string(" '") + key + "'" : ""));
        cv::Mat m = rp::read_matrix(node, path, key ? key : "matrix");
        if (m.rows != 3 || m.cols != 3) rp::fail(RP_ERR_DECODE, cv::format("%s: matrix is %dx%d, expected 3x3", path, m.rows, m.cols));
        m.convertTo(m, CV_64F);
        std::memcpy(matrix, m.ptr<double>(), 9 * sizeof(double));
    });
}
