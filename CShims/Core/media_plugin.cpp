// Finds the media plugin (CShims/Media) on each use. It is opened RTLD_NODELETE and its reference dropped at
// once: the first use loads it for the life of the process, later ones find it loaded, and the dynamic loader,
// not the shim, holds that state.
#include "shim_internal.hpp"

#include "../Media/include/rephoto_media.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <string>
#include <vector>

namespace rp {

namespace {

std::string folder_of(const std::string &path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// The folders of the binary this code is linked into: as loaded (a shared library, or the executable started by
// a path), then the running executable itself, which a bare name on PATH leaves dladdr unable to tell.
std::vector<std::string> own_folders() {
    std::vector<std::string> folders;
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void *>(&folder_of), &info) != 0 && info.dli_fname != nullptr &&
        std::strchr(info.dli_fname, '/') != nullptr) {
        folders.push_back(folder_of(info.dli_fname));
    }
    char executable[PATH_MAX];
    const ssize_t length = readlink("/proc/self/exe", executable, sizeof(executable) - 1);
    if (length > 0) folders.push_back(folder_of(std::string(executable, size_t(length))));
    if (folders.empty()) folders.push_back(".");
    return folders;
}

}  // namespace

const rp_media_api &media_plugin(const char *purpose) {
    const std::vector<std::string> folders = own_folders();
    std::string reason;
    for (const std::string &folder : folders) {
        // Beside the binary (the build folder), then where scripts/install-cli puts it.
        for (const std::string &path : {folder + "/libRephotoMedia.so", folder + "/../lib/rephoto/libRephotoMedia.so"}) {
            void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
            if (library == nullptr) {
                if (reason.empty()) reason = dlerror();
                continue;
            }
            using Entry = const rp_media_api *(*)();
            auto entry = reinterpret_cast<Entry>(dlsym(library, "rp_media_plugin"));
            const rp_media_api *api = entry != nullptr ? entry() : nullptr;
            dlclose(library);
            if (api == nullptr || api->abi != RP_MEDIA_ABI) {
                fail(RP_ERR_UNSUPPORTED, std::string(purpose) + " needs the media plugin, and " + path + " is from another build");
            }
            return *api;
        }
    }
    fail(RP_ERR_UNSUPPORTED, std::string(purpose) + " needs the media plugin libRephotoMedia.so beside " + folders.back() +
                                 " (swift build --product RephotoMedia): " + reason);
}

}  // namespace rp

extern "C" int rp_media_load(rp_status *status) {
    return rp::guarded(status, [] { rp::media_plugin("reading TIFF, WebP, BMP, PNM, JPEG 2000 or video"); });
}
