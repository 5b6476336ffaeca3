// Finds the media plugin (CShims/Media) on each use. It is opened RTLD_NODELETE and its reference dropped at
// once: the first use loads it for the life of the process, later ones find it loaded, and the dynamic loader,
// not the shim, holds that state.
#include "../shim_internal.hpp"

#include "../../Media/include/rephoto_media.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
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

// Why the file at `path` cannot be loaded safely, or empty when it can be handed to dlopen: dlopen blocks on a
// FIFO, and maps a truncated ELF file's segments past its end, where the loader's first write is a SIGBUS.
std::string unloadable(const std::string &path) {
    struct stat info {};
    if (stat(path.c_str(), &info) != 0) return errno == ENOENT ? "not installed" : std::strerror(errno);
    if (!S_ISREG(info.st_mode)) return "not a regular file";
    FILE *file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) return std::strerror(errno);
    Elf64_Ehdr header{};
    bool whole = std::fread(&header, sizeof(header), 1, file) == 1 && std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 &&
                 header.e_ident[EI_CLASS] == ELFCLASS64 && header.e_phentsize == sizeof(Elf64_Phdr) &&
                 std::fseek(file, long(header.e_phoff), SEEK_SET) == 0;
    for (int i = 0; whole && i < header.e_phnum; ++i) {
        Elf64_Phdr segment{};
        whole = std::fread(&segment, sizeof(segment), 1, file) == 1 &&
                (segment.p_type != PT_LOAD || segment.p_offset + segment.p_filesz <= uint64_t(info.st_size));
    }
    std::fclose(file);
    return whole ? std::string() : "not a complete 64-bit shared library (a partial copy?)";
}

}  // namespace

const rp_media_api &media_plugin(const char *purpose, bool detailed) {
    std::string reason;
    for (const std::string &folder : own_folders()) {
        // Beside the binary (the build folder), then where scripts/install-cli puts it.
        for (const std::string &path : {folder + "/libRephotoMedia.so", folder + "/../lib/rephoto/libRephotoMedia.so"}) {
            std::string why = unloadable(path);
            if (why.empty()) {
                if (void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) {
                    using Entry = const rp_media_api *(*)();
                    auto entry = reinterpret_cast<Entry>(dlsym(library, "rp_media_plugin"));
                    const rp_media_api *api = entry != nullptr ? entry() : nullptr;
                    dlclose(library);
                    if (api != nullptr && api->abi == RP_MEDIA_ABI) return *api;
                    why = "from another build";
                } else {
                    // dlerror says "PATH: reason"; the reason alone, so no message carries a path unless asked.
                    const std::string error = dlerror(), prefix = path + ": ";
                    why = error.compare(0, prefix.size(), prefix) == 0 ? error.substr(prefix.size()) : error;
                }
            }
            // The first file that exists explains more than a missing one.
            if (reason.empty() || (reason.rfind("not installed", 0) == 0 && why != "not installed")) {
                reason = detailed ? why + " (" + path + ")" : why;
            }
        }
    }
    fail(RP_ERR_UNSUPPORTED, std::string(purpose) + " needs the media plugin libRephotoMedia.so, beside the program or in " +
                                 "../lib/rephoto from it (scripts/install-cli): " + reason);
}

}  // namespace rp

extern "C" int rp_media_load(rp_status *status) {
    return rp::guarded(status, [] { rp::media_plugin("reading TIFF, WebP, BMP, PNM, JPEG 2000 or video", true); });
}
