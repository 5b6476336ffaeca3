#include "shim_internal.hpp"

#include <opencv2/core/utils/logger.hpp>

#include <cstdlib>
#include <ctime>
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

pthread_rwlock_t *opencv_threads_lock() {
    static pthread_rwlock_t *lock = [] {
        // Writer preference: otherwise overlapping readers on a busy worker can starve the change forever.
        pthread_rwlockattr_t attributes;
        pthread_rwlockattr_init(&attributes);
        pthread_rwlockattr_setkind_np(&attributes, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        auto *created = new pthread_rwlock_t;
        pthread_rwlock_init(created, &attributes);
        pthread_rwlockattr_destroy(&attributes);
        return created;
    }();
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
    constexpr int wait_seconds = 60;
    timespec deadline{};
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += wait_seconds;
    if (pthread_rwlock_timedwrlock(rp::opencv_threads_lock(), &deadline) != 0) {
        return rp::set_status(status, RP_ERR_INTERNAL,
                              "cannot set OpenCV threads to " + std::to_string(threads) + ": an OpenCV call on another thread ran for over " +
                                  std::to_string(wait_seconds) + " s; set it at start-up");
    }
    int code = RP_OK;
    try {
        cv::setNumThreads(threads);
        rp::set_status(status, RP_OK, "");
    } catch (const cv::Exception &error) {
        code = rp::set_status(status, RP_ERR_OPENCV, rp::one_line(error));
    } catch (const std::exception &error) {
        code = rp::set_status(status, RP_ERR_INTERNAL, std::string("internal error: ") + error.what());
    } catch (...) {
        code = rp::set_status(status, RP_ERR_INTERNAL, "internal error: unknown exception");
    }
    pthread_rwlock_unlock(rp::opencv_threads_lock());
    return code;
}

extern "C" void rp_buffer_free(void *buffer) { std::free(buffer); }
