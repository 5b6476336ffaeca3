#include "shim_internal.hpp"

#include <opencv2/core/utils/logger.hpp>

#include <cstdlib>
#include <cstring>

namespace {
// OpenCV's own log lines would break the one-line-error contract on stderr; the shim reports instead.
struct SilenceOpenCVLogging {
    SilenceOpenCVLogging() { cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT); }
} silence_opencv_logging;
}  // namespace

namespace rp {

void fail(int code, const std::string &message) { throw Failure{code, message}; }

int set_status(rp_status *status, int code, const std::string &message) {
    if (status != nullptr) {
        status->code = code;
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

extern "C" int rp_set_num_threads(int threads, rp_status *status) {
    return rp::guarded(status, [&] { cv::setNumThreads(threads); });
}

extern "C" void rp_buffer_free(void *buffer) { std::free(buffer); }
