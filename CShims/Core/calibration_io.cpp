#include "shim_internal.hpp"

#include <opencv2/calib3d.hpp>
#include <opencv2/core/persistence.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <cstring>
#include <fstream>

namespace rp {

// OpenCV's FileStorage parsers recurse once per nesting level and overflow the stack (SIGSEGV) on a crafted
// file, so the shape is checked before OpenCV sees it. Calibration files are a few kilobytes, nested two or
// three levels; the limits leave ample room for any real one.
void check_storage_file(const char *path) {
    constexpr std::streamoff max_bytes = 1 << 20;
    constexpr int max_depth = 32, max_indent = 256;
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(RP_ERR_IO, std::string("cannot open ") + path);
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    if (size < 0) fail(RP_ERR_IO, std::string("cannot read ") + path);
    if (size > max_bytes) {
        fail(RP_ERR_DECODE, cv::format("%s is %lld bytes: too large for a calibration file (at most 1 MiB)", path, (long long)size));
    }
    std::string text(size_t(size), '\0');
    in.seekg(0);
    in.read(text.data(), size);
    // OpenCV's parser also loops forever on some invalid UTF-8 (found by scripts/fuzz): text must be UTF-8.
    for (size_t i = 0; i < text.size();) {
        const unsigned char lead = static_cast<unsigned char>(text[i]);
        const size_t extra = lead < 0x80 ? 0 : (lead & 0xE0) == 0xC0 ? 1 : (lead & 0xF0) == 0xE0 ? 2 : (lead & 0xF8) == 0xF0 ? 3 : 9;
        bool valid = extra < 4 && text.size() - i > extra;
        for (size_t k = 1; valid && k <= extra; ++k) valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
        if (!valid) fail(RP_ERR_DECODE, cv::format("%s is not UTF-8 text (byte %zu): not a calibration file", path, i));
        i += extra + 1;
    }
    int depth = 0, indent = 0;
    bool line_start = true;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        // Calibration files are text. OpenCV's YAML parser loops forever on some NUL-riddled input (found by
        // scripts/fuzz), so control characters are refused before it runs.
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\r' && c != '\t') || c == 0x7F) {
            fail(RP_ERR_DECODE, cv::format("%s has a control character (0x%02X) at byte %zu: not a text calibration file", path,
                                           static_cast<unsigned char>(c), i));
        }
        if (c == '\n') {
            line_start = true;
            indent = 0;
            continue;
        }
        if (line_start && (c == ' ' || c == '\t')) {
            if (++indent > max_indent) fail(RP_ERR_DECODE, cv::format("%s is indented more than %d columns: not a calibration file", path, max_indent));
            continue;
        }
        line_start = false;
        const char next = i + 1 < text.size() ? text[i + 1] : '\0';
        if (c == '[' || c == '{' || (c == '<' && next != '/' && next != '?' && next != '!')) ++depth;
        else if (c == ']' || c == '}' || (c == '<' && next == '/') || (c == '/' && next == '>')) --depth;
        if (depth > max_depth) fail(RP_ERR_DECODE, cv::format("%s nests more than %d levels deep: not a calibration file", path, max_depth));
    }
}

// A matrix node, or a clear refusal: OpenCV asserts (nelems == m.total()*m.channels()) when rows, cols and data
// disagree, and that text means nothing to a user.
cv::Mat read_matrix(const cv::FileNode &node, const char *path, const char *name) {
    // 8- and 16-bit element types saturate a focal length of 700 px to 255 without a word: refuse them. And the
    // declared size is allocated before the data is read: a calibration matrix has at most 14 elements a side.
    if (node.isMap()) {
        const int rows = node["rows"].isInt() ? int(node["rows"]) : -1, cols = node["cols"].isInt() ? int(node["cols"]) : -1;
        if (rows < 0 || cols < 0 || rows > 16 || cols > 16) {
            rp::fail(RP_ERR_DECODE, cv::format("%s in %s needs rows and cols from 0 to 16 (a calibration matrix), got %dx%d", name, path, rows, cols));
        }
        const std::string dt = node["dt"].isString() ? std::string(node["dt"]) : std::string();
        if (dt == "u" || dt == "c" || dt == "w" || dt == "s") {
            rp::fail(RP_ERR_DECODE, cv::format("%s in %s is stored as %s-bit integers (dt: %s), which cut values off; write dt: d",
                                               name, path, dt == "u" || dt == "c" ? "8" : "16", dt.c_str()));
        }
    }
    cv::Mat m;
    try {
        node >> m;
    } catch (const cv::Exception &) {
        rp::fail(RP_ERR_DECODE, cv::format("%s in %s is malformed: its rows, cols, dt and data do not agree", name, path));
    }
    return m;
}

void open_storage(cv::FileStorage &fs, const char *path, int mode) {
    try {
        if (!fs.open(path, mode)) rp::fail(RP_ERR_IO, std::string(mode == cv::FileStorage::READ ? "cannot open " : "cannot write ") + path);
    } catch (const cv::Exception &) {
        // OpenCV's own text names its parser's internals ("buf", "parseValue"): say what is wrong for the user.
        if (mode != cv::FileStorage::READ) rp::fail(RP_ERR_IO, std::string(path) + ": cannot write there");
        std::ifstream in(path, std::ios::binary | std::ios::ate);
        if (in && in.tellg() == 0) rp::fail(RP_ERR_DECODE, std::string(path) + " is empty");
        rp::fail(RP_ERR_DECODE, std::string(path) + " is not OpenCV FileStorage (YAML, XML or JSON that OpenCV can parse)");
    }
}

}  // namespace rp

namespace {

cv::FileNode first_present(const cv::FileStorage &fs, std::initializer_list<const char *> names) {
    for (const char *name : names) {
        cv::FileNode node = fs[name];
        if (!node.empty()) return node;
    }
    return cv::FileNode();
}

}  // namespace

extern "C" int rp_calibration_read(const char *path, rp_camera *out, rp_status *status) {
    std::memset(out, 0, sizeof(*out));
    return rp::guarded(status, [&] {
        rp::check_storage_file(path);
        cv::FileStorage fs;
        rp::open_storage(fs, path, cv::FileStorage::READ);
        cv::FileNode k = first_present(fs, {"camera_matrix", "Camera_Matrix", "cameraMatrix"});
        if (k.empty()) rp::fail(RP_ERR_DECODE, std::string("calibration file ") + path + " has no camera_matrix");
        cv::Mat K = rp::read_matrix(k, path, "camera_matrix");
        if (K.rows != 3 || K.cols != 3) {
            rp::fail(RP_ERR_DECODE, cv::format("camera_matrix in %s is %dx%d, expected 3x3", path, K.rows, K.cols));
        }
        K.convertTo(K, CV_64F);
        std::memcpy(out->K, K.ptr<double>(), 9 * sizeof(double));

        cv::FileNode d = first_present(fs, {"distortion_coefficients", "Distortion_Coefficients", "distCoeffs"});
        if (!d.empty()) {
            cv::Mat D = rp::read_matrix(d, path, "distortion_coefficients");
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
        if (!w.empty() || !h.empty()) {
            const int width = w.isInt() ? int(w) : 0, height = h.isInt() ? int(h) : 0;
            if (width <= 0 || height <= 0) {
                rp::fail(RP_ERR_DECODE, cv::format("%s: image size %dx%d must be two positive whole numbers (image_width, image_height)",
                                                   path, width, height));
            }
            out->width = width;
            out->height = height;
        }
    });
}

extern "C" int rp_calibration_write(const char *path, const rp_camera *calibration, const rp_calibration_report *report,
                                    rp_status *status) {
    return rp::guarded(status, [&] {
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
        cv::FileStorage fs;
        rp::open_storage(fs, path, cv::FileStorage::WRITE);
        fs << "image_width" << calibration->width << "image_height" << calibration->height;
        if (board_width > 0 && board_height > 0 && square_size > 0) {
            fs << "board_width" << board_width << "board_height" << board_height << "square_size" << square_size;
        }
        fs << "camera_matrix" << cv::Mat(3, 3, CV_64F, const_cast<double *>(calibration->K));
        cv::Mat D = nd > 0 ? cv::Mat(nd, 1, CV_64F, const_cast<double *>(calibration->distortion)) : cv::Mat();
        fs << "distortion_coefficients" << D;
        if (mean_error >= 0) fs << "avg_reprojection_error" << mean_error;
        if (view_errors && n > 0) fs << "per_view_reprojection_errors" << cv::Mat(n, 1, CV_64F, const_cast<double *>(view_errors));
        fs.release();
    });
}

