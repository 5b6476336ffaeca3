// Status reporting, the exception guard's helpers, and the only two calls that change process-wide OpenCV state.
#include "shim_internal.hpp"

#include <iostream>

#include <opencv2/core/utils/logger.hpp>

#include <cstdlib>
#include <cstring>

namespace rp {

void fail(int code, const std::string &message) { throw Failure{code, message}; }
void fail(int code, rp_cause cause, const std::string &message) { throw Failure{code, message, cause}; }

int set_status(rp_status *status, int code, const std::string &message, int cause) {
    if (status != nullptr) {
        status->code = code;
        status->cause = cause;
        std::string line = message;
        for (char &c : line) {
            if (c == '\n' || c == '\r') c = ' ';
        }
        std::strncpy(status->message, line.c_str(), sizeof(status->message) - 1);
        status->message[sizeof(status->message) - 1] = '\0';
    }
    return code;
}

std::string one_line(const cv::Exception &error) {
    std::string text = "OpenCV error";
    if (!error.func.empty()) text += " in " + error.func;
    text += ": " + (error.err.empty() ? std::string(error.what()) : error.err);
    return text;
}

}  // namespace rp

extern "C" const char *rp_opencv_version(void) { return CV_VERSION; }

extern "C" int rp_opencv_set_threads(int threads, rp_status *status) {
    return rp::guarded(status, [&] { cv::setNumThreads(threads); });
}

extern "C" int rp_opencv_set_log_level(int level, rp_status *status) {
    return rp::guarded(status, [&] {
        if (level < cv::utils::logging::LOG_LEVEL_SILENT || level > cv::utils::logging::LOG_LEVEL_VERBOSE) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("OpenCV log level %d is not in 0...6", level));
        }
        cv::utils::logging::setLogLevel(static_cast<cv::utils::logging::LogLevel>(level));
        // Some OpenCV paths bypass its logger and write std::cerr directly (imdecode's "can't read data: ..."
        // when a TIFF, BMP, PNM or JPEG 2000 decoder throws); the shim reports those failures itself. Silent
        // therefore also detaches std::cerr, which nothing else in this project writes; other levels restore it.
        static std::streambuf *const original = std::cerr.rdbuf();
        if (level == cv::utils::logging::LOG_LEVEL_SILENT) {
            std::cerr.rdbuf(nullptr);
        } else {
            std::cerr.rdbuf(original);
            std::cerr.clear();
        }
    });
}

extern "C" void rp_buffer_free(void *buffer) { std::free(buffer); }
