// libFuzzer harness: the calibration reader (size and nesting checks, then OpenCV's FileStorage) and the
// FileStorage matrix reader of the importers, on arbitrary file contents. Run by scripts/fuzz.
#include "rephoto_shim.h"
#include "rephoto_shim_tools.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace {
// FileStorage reads paths; the extension picks the parser, so each input is tried as YAML, XML and JSON.
std::string scratch(const char *extension) {
    return "/tmp/rephoto-fuzz-" + std::to_string(getpid()) + extension;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    for (const char *extension : {".yml", ".xml", ".json"}) {
        const std::string path = scratch(extension);
        FILE *file = std::fopen(path.c_str(), "wb");
        if (file == nullptr) return 0;
        std::fwrite(data, 1, size, file);
        std::fclose(file);
        rp_status status;
        rp_camera camera;
        rp_calibration_read(path.c_str(), &camera, &status);
        double matrix[9];
        rp_read_matrix3(path.c_str(), nullptr, matrix, &status);
        std::remove(path.c_str());
    }
    return 0;
}
