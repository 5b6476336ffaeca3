#include "../Core/shim_internal.hpp"
#include "rephoto_shim_tools.h"

#include <opencv2/imgproc.hpp>

#include <cmath>

namespace {

std::vector<cv::Point> corners(const double *xy) {
    std::vector<cv::Point> points;
    for (int i = 0; i < 4; ++i) points.emplace_back(int(std::lround(xy[2 * i])), int(std::lround(xy[2 * i + 1])));
    return points;
}

}  // namespace

extern "C" int rp_draw_navigation(const rp_image *image, const double *target, const double *quadrilateral,
                                  const double *reference_xy, const double *current_xy, int n, rp_image **out,
                                  rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        cv::Mat canvas;
        if (image->mat.channels() == 1) cv::cvtColor(image->mat, canvas, cv::COLOR_GRAY2BGR);
        else canvas = image->mat.clone();
        // Line widths follow the image size so the overlay reads the same on a phone photo and a thumbnail.
        int thick = std::max(1, int(std::lround(std::max(canvas.cols, canvas.rows) / 400.0)));
        for (int i = 0; i < n; ++i) {
            cv::Point2d a(reference_xy[2 * i], reference_xy[2 * i + 1]), b(current_xy[2 * i], current_xy[2 * i + 1]);
            if (!std::isfinite(a.x + a.y + b.x + b.y)) continue;
            cv::line(canvas, a, b, cv::Scalar(0, 220, 255), std::max(1, thick / 2), cv::LINE_AA);
            cv::circle(canvas, b, thick + 1, cv::Scalar(0, 220, 255), -1, cv::LINE_AA);
        }
        if (target) {
            std::vector<std::vector<cv::Point>> target_poly{corners(target)};
            cv::polylines(canvas, target_poly, true, cv::Scalar(0, 200, 0), thick * 2, cv::LINE_AA);
        }
        if (quadrilateral) {
            std::vector<std::vector<cv::Point>> quad_poly{corners(quadrilateral)};
            cv::polylines(canvas, quad_poly, true, cv::Scalar(0, 0, 255), thick * 2, cv::LINE_AA);
        }
        *out = rp::wrap_image(canvas);
    });
}

namespace {

// OpenCV's Hershey fonts draw ASCII only: anything else shows as '?', so a label never draws garbage.
std::string ascii(const char *text) {
    std::string out;
    for (const unsigned char *p = reinterpret_cast<const unsigned char *>(text); *p; ++p) {
        if (*p < 0x80) out += char(*p);
        else if ((*p & 0xC0) != 0x80) out += '?';
    }
    return out;
}

}  // namespace

extern "C" int rp_draw_legend(const rp_image *image, const char *const *labels, const unsigned char *bgr, int count, const char *caption,
                              rp_image **out, rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        if (count < 0 || (count > 0 && (!labels || !bgr))) rp::fail(RP_ERR_INVALID_ARGUMENT, "legend entries missing");
        cv::Mat canvas;
        if (image->mat.channels() == 1) cv::cvtColor(image->mat, canvas, cv::COLOR_GRAY2BGR);
        else canvas = image->mat.clone();
        const int font = cv::FONT_HERSHEY_SIMPLEX;
        double scale = std::max(0.35, std::max(canvas.cols, canvas.rows) / 1400.0);
        int thickness = std::max(1, int(std::lround(scale * 1.6)));
        int baseline = 0;
        int line = cv::getTextSize("Ag", font, scale, thickness, &baseline).height + baseline + int(6 * scale);
        int pad = int(std::lround(8 * scale)), swatch = line - int(4 * scale);
        int width = 0;
        std::vector<std::string> texts;
        for (int i = 0; i < count; ++i) {
            texts.push_back(ascii(labels[i] ? labels[i] : ""));
            width = std::max(width, cv::getTextSize(texts.back(), font, scale, thickness, &baseline).width);
        }
        if (count > 0) {
            cv::Rect box(0, 0, std::min(canvas.cols, width + swatch + 3 * pad), std::min(canvas.rows, count * line + 2 * pad));
            cv::Mat roi = canvas(box);
            cv::Mat shade(roi.size(), roi.type(), cv::Scalar(0, 0, 0));
            cv::addWeighted(roi, 0.35, shade, 0.65, 0, roi);
            for (int i = 0; i < count; ++i) {
                int y = pad + i * line;
                cv::rectangle(canvas, cv::Rect(pad, y + 2, swatch, swatch - 4), cv::Scalar(bgr[3 * i], bgr[3 * i + 1], bgr[3 * i + 2]), cv::FILLED);
                cv::putText(canvas, texts[i], cv::Point(2 * pad + swatch, y + line - int(6 * scale)), font, scale, cv::Scalar(255, 255, 255), thickness, cv::LINE_AA);
            }
        }
        if (caption && *caption) {
            // Greedy wrap by words to the image's width.
            std::vector<std::string> rows;
            std::string current, word, text = ascii(caption) + " ";
            for (char c : text) {
                if (c != ' ') { word += c; continue; }
                std::string trial = current.empty() ? word : current + " " + word;
                if (!current.empty() && cv::getTextSize(trial, font, scale, thickness, &baseline).width > canvas.cols - 2 * pad) {
                    rows.push_back(current);
                    current = word;
                } else {
                    current = trial;
                }
                word.clear();
            }
            if (!current.empty()) rows.push_back(current);
            int height = std::min(canvas.rows, int(rows.size()) * line + 2 * pad);
            cv::Mat roi = canvas(cv::Rect(0, canvas.rows - height, canvas.cols, height));
            cv::Mat shade(roi.size(), roi.type(), cv::Scalar(0, 0, 0));
            cv::addWeighted(roi, 0.25, shade, 0.75, 0, roi);
            for (size_t i = 0; i < rows.size(); ++i) {
                cv::putText(canvas, rows[i], cv::Point(pad, canvas.rows - height + pad + int(i + 1) * line - int(6 * scale)), font, scale,
                            cv::Scalar(255, 255, 255), thickness, cv::LINE_AA);
            }
        }
        *out = rp::wrap_image(canvas);
    });
}
