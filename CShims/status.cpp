#include "shim_internal.hpp"

#include <opencv2/core/utils/logger.hpp>

#include <chrono>
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

std::shared_timed_mutex &opencv_threads_lock() {
    static std::shared_timed_mutex lock;
    return lock;
}

std::string one_line(const cv::Exception &error) {
    std::string text = "OpenCV error";
    if (!error.func.empty()) text += " in " + error.func;
    text += ": " + (error.err.empty() ? std::string(error.what()) : error.err);
    return text;
}

}  // namespace rp

extern "C" int rp_set_num_threads(int threads, rp_status *status) {
    try {
        std::unique_lock<std::shared_timed_mutex> alone(rp::opencv_threads_lock(), std::defer_lock);
        // Readers are preferred, so a busy process may never drain: give up rather than stall the caller.
        if (!alone.try_lock_for(std::chrono::seconds(5))) {
            return rp::set_status(status, RP_ERR_INTERNAL,
                                  "cannot set OpenCV threads to " + std::to_string(threads) +
                                      ": other threads kept using OpenCV for 5 s; set it at start-up");
        }
        cv::setNumThreads(threads);
        return rp::set_status(status, RP_OK, "");
    } catch (const cv::Exception &error) {
        return rp::set_status(status, RP_ERR_OPENCV, rp::one_line(error));
    } catch (const std::exception &error) {
        return rp::set_status(status, RP_ERR_INTERNAL, std::string("internal error: ") + error.what());
    } catch (...) {
        return rp::set_status(status, RP_ERR_INTERNAL, "internal error: unknown exception");
    }
}

extern "C" void rp_buffer_free(void *buffer) { std::free(buffer); }
