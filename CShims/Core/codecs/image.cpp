#include "../shim_internal.hpp"

#include "../../Media/include/rephoto_media.h"

#include <opencv2/imgproc.hpp>

#include <cctype>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <zlib.h>

namespace {

uint16_t be16(const uint8_t *p) { return uint16_t(p[0] << 8 | p[1]); }
uint32_t be32(const uint8_t *p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

bool is_sof(uint8_t marker) {
    // SOF0..SOF15 minus DHT (C4), JPG (C8) and DAC (CC).
    return marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
}

// Walks every JPEG segment and scan to EOI, so a file cut short or damaged in its marker structure is refused
// before libjpeg sees it (libjpeg would return a partial image and print a warning on stderr).
uint16_t le16(const uint8_t *p) { return uint16_t(p[1] << 8 | p[0]); }
uint32_t le32(const uint8_t *p) { return uint32_t(p[3]) << 24 | uint32_t(p[2]) << 16 | uint32_t(p[1]) << 8 | p[0]; }

// The Orientation tag (0x0112) of a TIFF header's first IFD (Exif data); 1 when absent or unreadable. Every
// offset is checked against the data: the bytes come from anyone.
int tiff_orientation(const uint8_t *tiff, size_t n) {
    if (n < 8) return 1;
    const bool little = tiff[0] == 'I' && tiff[1] == 'I';
    if (!little && !(tiff[0] == 'M' && tiff[1] == 'M')) return 1;
    auto u16 = [&](size_t at) { return little ? le16(tiff + at) : be16(tiff + at); };
    auto u32 = [&](size_t at) { return little ? le32(tiff + at) : be32(tiff + at); };
    const size_t ifd = u32(4);
    if (ifd > n || n - ifd < 2) return 1;
    const size_t entries = u16(ifd);
    for (size_t i = 0; i < entries; ++i) {
        const size_t at = ifd + 2 + 12 * i;
        if (at > n || n - at < 12) return 1;
        if (u16(at) == 0x0112 && u16(at + 2) == 3) {
            const int value = u16(at + 8);
            return value >= 1 && value <= 8 ? value : 1;
        }
    }
    return 1;
}

// The same from an APP1 Exif segment.
int exif_orientation(const uint8_t *segment, size_t length) {
    if (length < 14 || std::memcmp(segment, "Exif\0\0", 6) != 0) return 1;
    return tiff_orientation(segment + 6, length - 6);
}

// Encoders write at most a few dozen scans (libjpeg's progressive script: 10); each costs a pass over the
// whole image, so 20,000 repeated 75-byte scans in a 1.7 MB file held a pipeline for 15 minutes.
constexpr int max_jpeg_scans = 100;

rp_image_header probe_jpeg(const uint8_t *b, size_t n) {
    rp_image_header h{RP_FORMAT_JPEG, 0, 0, 1};
    size_t pos = 2;
    bool scanned = false;
    int scans = 0;
    while (true) {
        if (pos >= n) {
            rp::fail(RP_ERR_DECODE, RP_CAUSE_TRUNCATED_IMAGE, scanned ? cv::format("truncated JPEG: no end-of-image marker (%zu bytes)", n)
                                            : std::string("truncated JPEG: the file ends before the image data"));
        }
        if (b[pos] != 0xFF) rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, "corrupt JPEG: no segment marker at byte " + std::to_string(pos));
        while (pos < n && b[pos] == 0xFF) ++pos;  // fill bytes
        if (pos >= n) continue;
        uint8_t marker = b[pos++];
        if (marker == 0xD9) break;
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;
        if (marker < 0xC0 || marker == 0xD8) {
            rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, cv::format("corrupt JPEG: invalid marker 0xFF%02X at byte %zu", marker, pos - 2));
        }
        if (pos + 2 > n) continue;
        size_t length = be16(b + pos);
        if (length < 2) rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, cv::format("corrupt JPEG: segment 0xFF%02X of length %zu", marker, length));
        if (pos + length > n) {
            pos = n;
            continue;
        }
        if (marker == 0xE1 && h.orientation == 1) h.orientation = exif_orientation(b + pos + 2, length - 2);
        if (is_sof(marker) && length >= 7) {
            h.height = be16(b + pos + 3);
            h.width = be16(b + pos + 5);
        }
        pos += length;
        if (marker != 0xDA) continue;
        if (++scans > max_jpeg_scans) {
            rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, cv::format("corrupt JPEG: over %d scans (a decoding bomb; encoders write a few dozen at most)", max_jpeg_scans));
        }
        if (h.width == 0 || h.height == 0) rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, "corrupt JPEG: image data before a frame header with a size");
        scanned = true;
        // Entropy-coded data: 0xFF is followed only by a stuffed 0x00, a restart marker, or the next marker.
        while (pos + 1 < n && !(b[pos] == 0xFF && b[pos + 1] != 0x00 && !(b[pos + 1] >= 0xD0 && b[pos + 1] <= 0xD7))) ++pos;
        if (pos + 1 >= n) pos = n;
    }
    if (h.width == 0 || h.height == 0) rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, "corrupt JPEG: no frame header with a size");
    if (!scanned) rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, "corrupt JPEG: no image data before the end-of-image marker");
    return h;
}

rp_image_header probe_png(const uint8_t *b, size_t n) {
    if (n < 33 || std::memcmp(b + 12, "IHDR", 4) != 0) rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, "corrupt PNG: no IHDR header");
    // The PNG specification caps both at 2^31 - 1: a larger value is damage, not a size to report.
    const uint32_t width = be32(b + 16), height = be32(b + 20);
    if (width == 0 || height == 0 || width > uint32_t(INT32_MAX) || height > uint32_t(INT32_MAX)) {
        rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, cv::format("corrupt PNG: size %ux%u in its header (each 1 to 2147483647)", width, height));
    }
    rp_image_header h{RP_FORMAT_PNG, int(width), int(height), 1};
    size_t from = n > 1024 ? n - 1024 : 33;
    bool iend = false;
    for (size_t i = from; i + 4 <= n; ++i) {
        if (std::memcmp(b + i, "IEND", 4) == 0) {
            iend = true;
            break;
        }
    }
    if (!iend) rp::fail(RP_ERR_DECODE, RP_CAUSE_TRUNCATED_IMAGE, "truncated PNG: no IEND chunk (" + std::to_string(n) + " bytes)");
    return h;
}

// Returns the orientation of an eXIf chunk (PNG's Exif, a bare TIFF header), 1 without one.
int verify_png_chunks(const uint8_t *b, size_t n) {
    // Every chunk's length and CRC, up to IEND: damaged files are refused here with a clear message, before
    // libpng would print its own "libpng error: IDAT: CRC error" on stderr.
    bool iend = false;
    int orientation = 1;
    for (size_t pos = 8; !iend;) {
        if (n - pos < 12) break;
        const uint32_t length = be32(b + pos);
        if (length > n - pos - 12 || length > 0x7FFFFFFFu) break;
        const uint8_t *type = b + pos + 4;
        const uint32_t expected = be32(type + 4 + length);
        if (uint32_t(crc32(crc32(0L, Z_NULL, 0), type, 4 + length)) != expected) {
            rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, cv::format("corrupt PNG: CRC mismatch in the %.4s chunk at byte %zu", reinterpret_cast<const char *>(type), pos));
        }
        iend = std::memcmp(type, "IEND", 4) == 0;
        if (std::memcmp(type, "eXIf", 4) == 0 && orientation == 1) orientation = tiff_orientation(type + 4, length);
        pos += 12 + length;
    }
    if (!iend) rp::fail(RP_ERR_DECODE, RP_CAUSE_TRUNCATED_IMAGE, "truncated PNG: no complete IEND chunk (" + std::to_string(n) + " bytes)");
    return orientation;
}

struct Format {
    int format;          // rp_image_format, RP_FORMAT_UNKNOWN for formats named but not decoded
    const char *name;
};

// Every format a person plausibly uploads, by its magic bytes, so a refusal says what the file is.
Format identify(const uint8_t *b, size_t n) {
    auto starts = [&](const char *magic, size_t at = 0) {
        size_t len = std::strlen(magic);
        return n >= at + len && std::memcmp(b + at, magic, len) == 0;
    };
    static const uint8_t png_signature[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
    if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return {RP_FORMAT_JPEG, "JPEG"};
    if (n >= 8 && std::memcmp(b, png_signature, 8) == 0) return {RP_FORMAT_PNG, "PNG"};
    if (n >= 4 && ((b[0] == 'I' && b[1] == 'I' && b[2] == 42 && b[3] == 0) || (b[0] == 'M' && b[1] == 'M' && b[2] == 0 && b[3] == 42))) {
        return {RP_FORMAT_TIFF, "TIFF"};
    }
    if (n >= 4 && ((b[0] == 'I' && b[1] == 'I' && b[2] == 43) || (b[0] == 'M' && b[1] == 'M' && b[3] == 43))) return {RP_FORMAT_UNKNOWN, "BigTIFF"};
    if (starts("RIFF") && starts("WEBP", 8)) return {RP_FORMAT_WEBP, "WebP"};
    if (starts("ftypheic", 4) || starts("ftypheix", 4) || starts("ftypheim", 4) || starts("ftypheis", 4) ||
        starts("ftyphevc", 4) || starts("ftyphevx", 4) || starts("ftypmif1", 4) || starts("ftypmsf1", 4)) {
        return {RP_FORMAT_HEIF, "HEIC/HEIF"};
    }
    if (starts("ftypavif", 4) || starts("ftypavis", 4)) return {RP_FORMAT_UNKNOWN, "AVIF"};
    if (starts("GIF87a") || starts("GIF89a")) return {RP_FORMAT_UNKNOWN, "GIF"};
    if (starts("BM")) return {RP_FORMAT_BMP, "BMP"};
    if (n >= 12 && b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 0x0C && starts("jP  ", 4)) return {RP_FORMAT_JPEG2000, "JPEG 2000"};
    if (starts("\xFF\x4F\xFF\x51")) return {RP_FORMAT_JPEG2000, "JPEG 2000 codestream"};
    if (n >= 3 && b[0] == 'P' && b[1] >= '1' && b[1] <= '7' && std::isspace(b[2])) return {RP_FORMAT_PNM, "PNM/PAM"};
    if (starts("%PDF")) return {RP_FORMAT_UNKNOWN, "PDF"};
    if (starts("ftyp", 4)) return {RP_FORMAT_UNKNOWN, "ISO media (video or HEIF-family)"};
    return {RP_FORMAT_UNKNOWN, nullptr};
}

const char *supported_list = "JPEG, PNG, HEIC/HEIF, TIFF, WebP, BMP, PNM or JPEG 2000";

// Refuses bytes that are no supported image, naming what they are; `total` is the whole file's size.
Format check_signature(const uint8_t *b, size_t n, uint64_t total) {
    if (b == nullptr || n == 0) rp::fail(RP_ERR_DECODE, "empty image data (0 bytes)");
    Format found = identify(b, n);
    if (found.format != RP_FORMAT_UNKNOWN) return found;
    const std::string size = std::to_string(total) + " bytes";
    if (found.name != nullptr) {
        // "an AVIF", "an ISO media": the names found here are read as words, so a vowel takes "an".
        const bool vowel_sound = std::strchr("AEIOU", found.name[0]) != nullptr;
        rp::fail(RP_ERR_UNSUPPORTED, std::string(vowel_sound ? "an " : "a ") + found.name + " file, which is not supported (" + size + "): convert it to JPEG or PNG");
    }
    rp::fail(RP_ERR_UNSUPPORTED, std::string("not a ") + supported_list + " image (" + size + ", starts with 0x" +
                                cv::format("%02X%02X", b[0], n > 1 ? b[1] : 0) + ")");
}

// TIFF: ImageWidth (256), ImageLength (257) and Orientation (274) of the first IFD, the page OpenCV decodes.
rp_image_header probe_tiff(const uint8_t *b, size_t n) {
    rp_image_header h{RP_FORMAT_TIFF, 0, 0, 1};
    if (n < 8) rp::fail(RP_ERR_DECODE, RP_CAUSE_TRUNCATED_IMAGE, "truncated TIFF: no header");
    const bool little = b[0] == 'I';
    auto u16 = [&](size_t at) { return little ? le16(b + at) : be16(b + at); };
    auto u32 = [&](size_t at) { return little ? le32(b + at) : be32(b + at); };
    const size_t ifd = u32(4);
    if (ifd < 8 || ifd > n || n - ifd < 2) rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, "corrupt TIFF: the first directory lies outside the file");
    const size_t entries = u16(ifd);
    for (size_t i = 0; i < entries; ++i) {
        const size_t at = ifd + 2 + 12 * i;
        if (at > n || n - at < 12) rp::fail(RP_ERR_DECODE, RP_CAUSE_TRUNCATED_IMAGE, "truncated TIFF: the first directory is cut short");
        const uint16_t tag = u16(at), type = u16(at + 2);
        // OpenCV turns a TIFF by its Orientation tag as it decodes: reported, as a JPEG's is.
        if (tag == 0x0112 && type == 3) {
            const int value = u16(at + 8);
            h.orientation = value >= 1 && value <= 8 ? value : 1;
        }
        // SampleFormat 3: IEEE floating point, which OpenCV 4.6 reads only as 32-bit float images, never to 8 bits
        // (probe: "the decoder could not read the image data").
        // One value per sample: up to two fit in the entry, more lie at the offset it holds.
        const uint32_t count = u32(at + 4);
        const size_t first = count <= 2 ? at + 8 : size_t(u32(at + 8));
        if (tag == 339 && type == 3 && first <= n - 2 && u16(first) == 3) {
            rp::fail(RP_ERR_UNSUPPORTED, "a floating-point TIFF, which is not supported: convert it to 8 or 16 bits per sample");
        }
        if (tag != 256 && tag != 257) continue;
        const uint32_t value = type == 3 ? u16(at + 8) : type == 4 ? u32(at + 8) : 0;
        (tag == 256 ? h.width : h.height) = int(std::min<uint32_t>(value, INT32_MAX));
    }
    if (h.width <= 0 || h.height <= 0) rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, "corrupt TIFF: no image width and height in the first directory");
    return h;
}

// WebP: the size in the VP8 (lossy), VP8L (lossless) or VP8X (extended) chunk.
rp_image_header probe_webp(const uint8_t *b, size_t n) {
    rp_image_header h{RP_FORMAT_WEBP, 0, 0, 1};
    if (n < 30) rp::fail(RP_ERR_DECODE, RP_CAUSE_TRUNCATED_IMAGE, "truncated WebP: no image header");
    if (std::memcmp(b + 12, "VP8 ", 4) == 0) {
        h.width = le16(b + 26) & 0x3FFF;
        h.height = le16(b + 28) & 0x3FFF;
    } else if (std::memcmp(b + 12, "VP8L", 4) == 0) {
        const uint32_t bits = le32(b + 21);
        h.width = int(bits & 0x3FFF) + 1;
        h.height = int((bits >> 14) & 0x3FFF) + 1;
    } else if (std::memcmp(b + 12, "VP8X", 4) == 0) {
        if (b[20] & 0x02) rp::fail(RP_ERR_DECODE, "an animated WebP, which is not supported: convert a frame to JPEG or PNG");
        h.width = int(b[24] | b[25] << 8 | b[26] << 16) + 1;
        h.height = int(b[27] | b[28] << 8 | b[29] << 16) + 1;
    } else {
        rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, "corrupt WebP: no VP8, VP8L or VP8X chunk");
    }
    if (h.width <= 0 || h.height <= 0) rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, "corrupt WebP: zero width or height");
    return h;
}

// BMP: BITMAPCOREHEADER (16-bit sizes) or BITMAPINFOHEADER and later (32-bit, height negative top-down).
rp_image_header probe_bmp(const uint8_t *b, size_t n) {
    rp_image_header h{RP_FORMAT_BMP, 0, 0, 1};
    if (n < 26) rp::fail(RP_ERR_DECODE, RP_CAUSE_TRUNCATED_IMAGE, "truncated BMP: no image header");
    const uint32_t header = le32(b + 14);
    if (header == 12) {
        h.width = le16(b + 18);
        h.height = le16(b + 20);
    } else if (header >= 40 && n >= 26) {
        const int64_t w = int32_t(le32(b + 18)), hh = int32_t(le32(b + 22));
        h.width = int(std::min<int64_t>(std::llabs(w), INT32_MAX));
        h.height = int(std::min<int64_t>(std::llabs(hh), INT32_MAX));
    } else {
        rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, cv::format("corrupt BMP: unknown header of %u bytes", header));
    }
    if (h.width <= 0 || h.height <= 0) rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, "corrupt BMP: zero width or height");
    return h;
}

// PNM (P1-P6) and PAM (P7), read strictly: numbers separated by whitespace, comments only where a number could
// start, and, for binary data, enough bytes for the pixels. OpenCV's own header reader is lenient, and where
// the two would read different sizes a 27-byte file made OpenCV allocate 2.4 GB (scripts/fuzz).
rp_image_header probe_pnm(const uint8_t *b, size_t n) {
    rp_image_header h{RP_FORMAT_PNM, 0, 0, 1};
    size_t pos = 2;
    auto corrupt = [](const char *why) { rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, std::string("corrupt PNM: ") + why); };
    auto number = [&]() -> int64_t {
        if (pos >= n || !std::isspace(b[pos])) corrupt("numbers in the header must be separated by whitespace");
        while (pos < n && (std::isspace(b[pos]) || b[pos] == '#')) {
            if (b[pos] == '#') while (pos < n && b[pos] != '\n') ++pos;
            else ++pos;
        }
        int64_t v = 0;
        size_t digits = 0;
        while (pos < n && std::isdigit(b[pos])) {
            if (++digits > 9) corrupt("a number in the header is too long");
            v = v * 10 + (b[pos++] - '0');
        }
        if (digits == 0) corrupt("no width, height and maximum value in the header");
        return v;
    };
    const char kind = char(b[1]);
    int64_t maxval = 1, channels = 1;
    if (kind == '7') {
        // PAM: "WIDTH n", "HEIGHT n", "DEPTH n", "MAXVAL n" lines up to ENDHDR.
        const std::string head(reinterpret_cast<const char *>(b), std::min<size_t>(n, 4096));
        const size_t end = head.find("\nENDHDR\n");
        if (end == std::string::npos) corrupt("no ENDHDR line within the first 4 KB");
        auto field = [&](const char *key) -> int64_t {
            const size_t at = head.find(std::string("\n") + key + " ");
            if (at == std::string::npos || at > end) corrupt("a PAM header needs WIDTH, HEIGHT, DEPTH and MAXVAL");
            pos = at + 1 + std::strlen(key);
            return number();
        };
        h.width = int(field("WIDTH"));
        h.height = int(field("HEIGHT"));
        channels = field("DEPTH");
        maxval = field("MAXVAL");
        pos = end + 8;
    } else {
        h.width = int(number());
        h.height = int(number());
        if (kind != '1' && kind != '4') maxval = number();
        if (kind == '3' || kind == '6') channels = 3;
        if (pos >= n || !std::isspace(b[pos])) corrupt("the header must end in one whitespace character");
        ++pos;
    }
    if (h.width <= 0 || h.height <= 0) corrupt("zero width or height");
    if (maxval < 1 || maxval > 65535 || channels < 1 || channels > 4) corrupt("maximum value or depth out of range");
    // Binary pixels must all be there: a short file is refused here, not half-read by the decoder.
    if (kind >= '4') {
        const uint64_t row = kind == '4' ? (uint64_t(h.width) + 7) / 8 : uint64_t(h.width) * uint64_t(channels) * (maxval > 255 ? 2 : 1);
        if (uint64_t(n - pos) < row * uint64_t(h.height)) {
            rp::fail(RP_ERR_DECODE, RP_CAUSE_TRUNCATED_IMAGE, cv::format("truncated PNM: %zu bytes of pixels for a %dx%d image that needs %llu", n - pos, h.width,
                                               h.height, (unsigned long long)(row * uint64_t(h.height))));
        }
    }
    return h;
}

// A JPEG 2000 codestream's SIZ segment (right after the SOC marker): the image area, its component count and its
// tile count.
void read_siz(const uint8_t *b, size_t n, rp_image_header &h) {
    if (n < 42 || b[0] != 0xFF || b[1] != 0x4F || b[2] != 0xFF || b[3] != 0x51) {
        rp::fail(RP_ERR_DECODE, RP_CAUSE_TRUNCATED_IMAGE, "truncated JPEG 2000 codestream: no SIZ segment");
    }
    const uint32_t xs = be32(b + 8), ys = be32(b + 12), xo = be32(b + 16), yo = be32(b + 20);
    const uint32_t xt = be32(b + 24), yt = be32(b + 28), xto = be32(b + 32), yto = be32(b + 36);
    if ((xs > xo && xs - xo > INT32_MAX) || (ys > yo && ys - yo > INT32_MAX)) {
        rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, cv::format("corrupt JPEG 2000: size %ux%u in its SIZ segment", xs > xo ? xs - xo : 0, ys > yo ? ys - yo : 0));
    }
    h.width = xs > xo ? int(xs - xo) : 0;
    h.height = ys > yo ? int(ys - yo) : 0;
    h.components = be16(b + 40);
    if (xt == 0 || yt == 0 || xto > xo || yto > yo) rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, "corrupt JPEG 2000: bad tile grid in the SIZ segment");
    // Each count is under 2^32; a product past 2^40 is as refused as its exact value.
    const uint64_t across = xs > xto ? (uint64_t(xs - xto) + xt - 1) / xt : 0, down = ys > yto ? (uint64_t(ys - yto) + yt - 1) / yt : 0;
    h.tiles = across > (1u << 20) || down > (1u << 20) ? int64_t(1) << 40 : int64_t(across * down);
}

// JPEG 2000: the SIZ segment of a raw codestream, or of a JP2 file's codestream box (jp2c), which is what the
// decoder reads; a JP2 file's header box (jp2h/ihdr) must agree with it.
rp_image_header probe_jpeg2000(const uint8_t *b, size_t n) {
    rp_image_header h{RP_FORMAT_JPEG2000, 0, 0, 1};
    if (b[0] == 0xFF) {
        read_siz(b, n, h);
    } else {
        size_t cut_length = 0, cut_holds = 0;  // the last box found cut short by the file's end: declared, held
        auto find_box = [&](size_t from, size_t to, const char *type, size_t &body, size_t &end) {
            for (size_t pos = from; pos + 8 <= to;) {
                uint64_t length = be32(b + pos);
                size_t header = 8;
                if (length == 1) {
                    if (pos + 16 > to) return false;
                    length = uint64_t(be32(b + pos + 8)) << 32 | be32(b + pos + 12);
                    header = 16;
                } else if (length == 0) {
                    length = to - pos;
                }
                if (length > to - pos && length >= header && std::memcmp(b + pos + 4, type, 4) == 0) {
                    cut_length = length > SIZE_MAX ? SIZE_MAX : size_t(length), cut_holds = to - pos;
                }
                if (length < header || length > to - pos) return false;
                if (std::memcmp(b + pos + 4, type, 4) == 0) {
                    body = pos + header;
                    end = pos + size_t(length);
                    return true;
                }
                pos += size_t(length);
            }
            return false;
        };
        size_t jp2h = 0, jp2h_end = 0, ihdr = 0, ihdr_end = 0, jp2c = 0, jp2c_end = 0;
        if (!find_box(0, n, "jp2h", jp2h, jp2h_end) || !find_box(jp2h, jp2h_end, "ihdr", ihdr, ihdr_end) || ihdr_end - ihdr < 10) {
            rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, "corrupt JPEG 2000: no image header box (jp2h/ihdr)");
        }
        cut_length = 0;
        if (!find_box(0, n, "jp2c", jp2c, jp2c_end)) {
            if (cut_length > 0) {
                rp::fail(RP_ERR_DECODE, RP_CAUSE_TRUNCATED_IMAGE, cv::format("truncated JPEG 2000: its codestream box (jp2c) is %zu bytes, the file holds %zu of them", cut_length, cut_holds));
            }
            rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, "corrupt JPEG 2000: no codestream box (jp2c)");
        }
        read_siz(b + jp2c, jp2c_end - jp2c, h);
        // A palette (pclr) expands its one component into NPC full-size channels, and a component mapping (cmap,
        // 4 bytes an entry) makes a channel per entry: the decoder holds whichever is more.
        size_t box = 0, box_end = 0;
        if (find_box(jp2h, jp2h_end, "pclr", box, box_end) && box_end - box >= 3) h.decoded_channels = std::max(h.decoded_channels, int(b[box + 2]));
        if (find_box(jp2h, jp2h_end, "cmap", box, box_end)) h.decoded_channels = std::max(h.decoded_channels, int(std::min<size_t>((box_end - box) / 4, 65535)));
        const uint32_t height = be32(b + ihdr), width = be32(b + ihdr + 4), components = be16(b + ihdr + 8);
        if (uint32_t(h.width) != width || uint32_t(h.height) != height || uint32_t(h.components) != components) {
            rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, cv::format("corrupt JPEG 2000: the header box says %ux%u with %u components, the codestream "
                                               "%dx%d with %d", width, height, components, h.width, h.height, h.components));
        }
    }
    if (h.width <= 0 || h.height <= 0) rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, "corrupt JPEG 2000: zero width or height");
    if (h.components <= 0) rp::fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, "corrupt JPEG 2000: no image components");
    return h;
}

rp_image_header probe(const uint8_t *b, size_t n) {
    switch (check_signature(b, n, n).format) {
        case RP_FORMAT_JPEG: return probe_jpeg(b, n);
        case RP_FORMAT_PNG: return probe_png(b, n);
        case RP_FORMAT_TIFF: return probe_tiff(b, n);
        case RP_FORMAT_WEBP: return probe_webp(b, n);
        case RP_FORMAT_BMP: return probe_bmp(b, n);
        case RP_FORMAT_PNM: return probe_pnm(b, n);
        case RP_FORMAT_JPEG2000: return probe_jpeg2000(b, n);
        case RP_FORMAT_HEIF: {
            cv::Size size = rp::heif_size(b, n);
            return rp_image_header{RP_FORMAT_HEIF, size.width, size.height, 1};
        }
        default: rp::fail(RP_ERR_DECODE, "unsupported image format");
    }
}

const char *format_name(int format) {
    switch (format) {
        case RP_FORMAT_JPEG: return "JPEG";
        case RP_FORMAT_PNG: return "PNG";
        case RP_FORMAT_HEIF: return "HEIF";
        case RP_FORMAT_TIFF: return "TIFF";
        case RP_FORMAT_WEBP: return "WebP";
        case RP_FORMAT_BMP: return "BMP";
        case RP_FORMAT_PNM: return "PNM";
        case RP_FORMAT_JPEG2000: return "JPEG 2000";
        default: return "image";
    }
}

}  // namespace

namespace rp {

double analysis_scale(int max_dimension, double scale, int width, int height) {
    double s = 1.0;
    if (max_dimension > 0) s = std::min(s, double(max_dimension) / std::max(width, height));
    if (scale > 0) s = std::min(s, scale);
    return s;
}

// maxPixels prices an 8-bit colour image, 3 bytes a pixel. OpenJPEG holds every sample of every channel it makes (the
// components, or a palette's channels) as a 4-byte integer, so a JPEG 2000 image gets the samples that cost the same:
// a quarter of the pixels in colour. It also keeps about 1 KB per tile and component before any pixel is read (a
// 178-byte file of 65,535 tiles and 20 components took 1.65 GB), so those are bounded too: 65,536 is 64 MB, and
// over 80 times what a 50 MP image in 256-pixel tiles of 3 components has.
void check_jpeg2000_cost(const rp_image_header &h, int64_t max_pixels) {
    const int64_t pixels = int64_t(h.width) * h.height;
    const int channels = std::max(h.components, h.decoded_channels);
    if (pixels * channels * 4 > max_pixels * 3) {
        fail(RP_ERR_TOO_LARGE, cv::format("JPEG 2000 image is %dx%d decoded into %d channel%s, over this format's limit of %lld "
                                          "pixels (its decoder holds 4 bytes a sample: maxPixels %lld x 3/(4 x %d))",
                                          h.width, h.height, channels, channels == 1 ? "" : "s",
                                          (long long)(max_pixels * 3 / (4 * int64_t(channels))), (long long)max_pixels, channels));
    }
    constexpr int64_t kMaxTileComponents = 65536;
    if (h.tiles * h.components > kMaxTileComponents) {
        fail(RP_ERR_TOO_LARGE, cv::format("JPEG 2000 image has %lld tiles of %d component%s = %lld tile-components, over the limit of %lld "
                                          "(its decoder keeps about 1 KB for each before reading a pixel)",
                                          (long long)h.tiles, h.components, h.components == 1 ? "" : "s", (long long)(h.tiles * h.components),
                                          (long long)kMaxTileComponents));
    }
}

rp_image decode_image(const uint8_t *bytes, size_t length, int64_t max_pixels, bool grayscale, decode_reduction reduction) {
    rp_image_header h = probe(bytes, length);
    int64_t pixels = int64_t(h.width) * int64_t(h.height);
    if (max_pixels > 0 && pixels > max_pixels) {
        fail(RP_ERR_TOO_LARGE, cv::format("image is %dx%d = %.1f MP, over the limit of %lld pixels (maxPixels)", h.width, h.height,
                                          double(pixels) / 1e6, (long long)max_pixels));
    }
    if (h.format == RP_FORMAT_JPEG2000 && max_pixels > 0) check_jpeg2000_cost(h, max_pixels);
    if (h.format == RP_FORMAT_PNG) h.orientation = verify_png_chunks(bytes, length);
    const bool transposed = h.orientation >= 5;
    const cv::Size full = transposed ? cv::Size(h.height, h.width) : cv::Size(h.width, h.height);
    const double s = analysis_scale(reduction.max_dimension, reduction.scale, full.width, full.height);
    rp_image out{cv::Mat(), std::string(), full};
    out.exif_orientation = h.orientation;
    if (h.format == RP_FORMAT_JPEG) {
        // The smallest M/8 that is still at least the analysis scale, so detection only ever downsamples.
        const int eighths = std::max(1, std::min(8, int(std::ceil(s * 8 - 1e-9))));
        out.mat = decode_jpeg(bytes, length, grayscale, h.orientation, eighths, out.warning);
        if (!out.mat.empty()) {
            out.pixel_scale_x = out.pixel_scale_y = eighths / 8.0;
            return out;
        }
    }
    if (length > size_t(INT32_MAX)) fail(RP_ERR_TOO_LARGE, cv::format("encoded image of %zu bytes is too large to decode", length));
    if (h.format == RP_FORMAT_HEIF) {
        out.mat = decode_heif(bytes, length, grayscale);
    } else if (h.format == RP_FORMAT_PNG) {
        out.mat = oriented(decode_png(bytes, length, grayscale, out.warning), h.orientation);
    } else {
        // OpenCV's decoders for TIFF, WebP, BMP, PNM and JPEG 2000; 16-bit and float data come out 8-bit,
        // EXIF orientation is applied where OpenCV reads it.
        const std::string purpose = std::string("reading ") + format_name(h.format);
        std::string error;
        if (!media_plugin(purpose.c_str()).decode(bytes, length, grayscale, &out.mat, &error)) {
            fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, cv::format("corrupt %s: %s", format_name(h.format), error.c_str()));
        }
    }
    if (out.mat.empty()) {
        fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, cv::format("corrupt %s: the decoder could not read the %dx%d image data", format_name(h.format), h.width, h.height));
    }
    // The header's pixel count is what the limit was checked against: a decoder that returns another size
    // (a TIFF whose pages differ) is refused rather than trusted. A transposed size is an applied orientation.
    if (int64_t(out.mat.cols) * out.mat.rows != pixels) {
        fail(RP_ERR_DECODE, RP_CAUSE_CORRUPT_IMAGE, cv::format("corrupt %s: the decoder returned %dx%d pixels for a %dx%d image", format_name(h.format),
                                       out.mat.cols, out.mat.rows, full.width, full.height));
    }
    out.full = out.mat.size();
    const double s_full = analysis_scale(reduction.max_dimension, reduction.scale, out.full.width, out.full.height);
    if (s_full < 1.0) {
        // Formats without reduced decoding: shrink at once to the analysis size, so only one full-size copy
        // ever exists, briefly.
        const cv::Size f = out.full;
        cv::Size size(std::max(1, int(std::lround(f.width * s_full))), std::max(1, int(std::lround(f.height * s_full))));
        cv::Mat small;
        cv::resize(out.mat, small, size, 0, 0, cv::INTER_AREA);
        out.mat = small;
        out.pixel_scale_x = double(size.width) / f.width;
        out.pixel_scale_y = double(size.height) / f.height;
    }
    return out;
}

}  // namespace rp

extern "C" {

int rp_image_check_signature(const uint8_t *head, size_t length, uint64_t file_size, rp_status *status) {
    return rp::guarded(status, [&] { check_signature(head, length, file_size); });
}

int rp_image_decode(const uint8_t *bytes, size_t length, int64_t max_pixels, int grayscale, int reduce_max_dimension,
                    double reduce_scale, rp_image **out, rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        *out = new rp_image(rp::decode_image(bytes, length, max_pixels, grayscale != 0, rp::decode_reduction{reduce_max_dimension, reduce_scale}));
    });
}

int rp_image_create(int width, int height, int channels, const uint8_t *pixels, size_t row_stride,
                    size_t pixels_length, rp_image **out, rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        if (width <= 0 || height <= 0) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("bad image size %dx%d", width, height));
        if (channels != 1 && channels != 3) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("bad channel count %d", channels));
        if (pixels == nullptr || row_stride < size_t(width) * size_t(channels) ||
            pixels_length < row_stride * size_t(height - 1) + size_t(width) * size_t(channels)) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("pixel buffer of %zu bytes (row stride %zu) is too small for %dx%d x%d",
                                                         pixels_length, row_stride, width, height, channels));
        }
        cv::Mat view(height, width, CV_8UC(channels), const_cast<uint8_t *>(pixels), row_stride);
        *out = rp::wrap_image(view.clone());
    });
}

void rp_image_free(rp_image *image) { delete image; }
const char *rp_image_decode_warning(const rp_image *image) { return image->warning.c_str(); }
int rp_image_width(const rp_image *image) { return image->mat.cols; }
int rp_image_full_width(const rp_image *image) { return image->full.width; }
int rp_image_full_height(const rp_image *image) { return image->full.height; }
int rp_image_exif_orientation(const rp_image *image) { return image->exif_orientation; }
int rp_image_height(const rp_image *image) { return image->mat.rows; }
int rp_image_channels(const rp_image *image) { return image->mat.channels(); }

int rp_image_copy_pixels(const rp_image *image, uint8_t *destination, size_t capacity, rp_status *status) {
    return rp::guarded(status, [&] {
        const cv::Mat &m = image->mat;
        size_t row = size_t(m.cols) * m.elemSize();
        if (capacity < row * m.rows) rp::fail(RP_ERR_INVALID_ARGUMENT, "pixel buffer too small");
        for (int y = 0; y < m.rows; ++y) std::memcpy(destination + row * y, m.ptr(y), row);
    });
}

int rp_image_to_gray(const rp_image *image, rp_image **out, rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        rp_image gray = *image;
        if (image->mat.channels() == 1) gray.mat = image->mat.clone();
        else cv::cvtColor(image->mat, gray.mat, cv::COLOR_BGR2GRAY);
        *out = new rp_image(std::move(gray));
    });
}

int rp_image_encode(const rp_image *image, const char *extension, int quality, uint8_t **bytes, size_t *length,
                    rp_status *status) {
    *bytes = nullptr;
    *length = 0;
    return rp::guarded(status, [&] {
        if (extension == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "extension is NULL");
        const std::string kind(extension);
        std::vector<uint8_t> buffer;
        if (kind == ".jpg" || kind == ".jpeg") buffer = rp::encode_jpeg(image->mat, quality);
        else if (kind == ".png") buffer = rp::encode_png(image->mat);
        else rp::fail(RP_ERR_UNSUPPORTED, "cannot encode as " + kind + " (.jpg and .png only)");
        *bytes = static_cast<uint8_t *>(std::malloc(buffer.size()));
        if (*bytes == nullptr) throw std::bad_alloc();
        std::memcpy(*bytes, buffer.data(), buffer.size());
        *length = buffer.size();
    });
}

int rp_image_warp_perspective(const rp_image *image, const double homography[9], int width, int height,
                              rp_image **out, rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        if (width <= 0 || height <= 0) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("bad output size %dx%d", width, height));
        cv::Mat H(3, 3, CV_64F, const_cast<double *>(homography));
        cv::Mat warped;
        cv::warpPerspective(image->mat, warped, H, cv::Size(width, height), cv::INTER_LINEAR, cv::BORDER_CONSTANT);
        *out = rp::wrap_image(warped);
    });
}

int rp_image_resize(const rp_image *image, int width, int height, rp_image **out, rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        if (width <= 0 || height <= 0) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("bad output size %dx%d", width, height));
        cv::Mat resized;
        bool shrinking = width < image->mat.cols;
        cv::resize(image->mat, resized, cv::Size(width, height), 0, 0, shrinking ? cv::INTER_AREA : cv::INTER_LINEAR);
        *out = rp::wrap_image(resized);
    });
}

}  // extern "C"


extern "C" int rp_image_compose(const rp_image *base, const rp_image *overlay, int mode, double opacity, rp_image **out,
                                rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        const cv::Mat &a = base->mat, &b = overlay->mat;
        if (a.size() != b.size() || a.type() != b.type()) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("images differ: %dx%d x%d and %dx%d x%d", a.cols, a.rows, a.channels(), b.cols, b.rows, b.channels()));
        }
        cv::Mat composed;
        if (mode == RP_COMPOSE_BLEND) {
            if (!(opacity >= 0 && opacity <= 1)) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("opacity %g is not in 0...1", opacity));
            cv::addWeighted(a, 1 - opacity, b, opacity, 0, composed);
        } else if (mode == RP_COMPOSE_SPLIT) {
            composed = a.clone();
            b.colRange(a.cols / 2, a.cols).copyTo(composed.colRange(a.cols / 2, a.cols));
            // The divider: a white line edged in black, seen on light and dark photos alike, width by image size.
            int w = std::max(1, int(std::lround(std::max(a.cols, a.rows) / 500.0)));
            cv::Scalar white = a.channels() == 1 ? cv::Scalar(255) : cv::Scalar(255, 255, 255, 255);
            cv::Scalar black = a.channels() == 1 ? cv::Scalar(0) : cv::Scalar(0, 0, 0, 255);
            cv::rectangle(composed, cv::Point(a.cols / 2 - w - 1, 0), cv::Point(a.cols / 2 + w, a.rows - 1), black, cv::FILLED);
            cv::rectangle(composed, cv::Point(a.cols / 2 - w, 0), cv::Point(a.cols / 2 + w - 1, a.rows - 1), white, cv::FILLED);
        } else {
            rp::fail(RP_ERR_INVALID_ARGUMENT, "unknown composition mode " + std::to_string(mode));
        }
        *out = rp::wrap_image(composed);
    });
}
