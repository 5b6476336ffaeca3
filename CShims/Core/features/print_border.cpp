// A scanned print's border (rephoto_shim.h, rp_detect_print_border): a band of one colour around the photo whose
// inner edges are straight lines. Each side is searched on its own, so a side without a band (a tight scan) is
// allowed, and a side whose band edge is not straight (a white sky against a white border) refuses the border.
#include "../shim_internal.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>

namespace {

struct SideEdge {
    bool banded = false;   // a band of the border's colour lies between the image's edge and the photo
    bool straight = false;
    double depth = 0;      // the edge's depth at the side's middle, analysis pixels from the image's edge
    double slope = 0;      // depth change per pixel along the side
};

// The photo's edge seen from one side: `mask` (255 where a pixel has the border's colour) turned so that side is
// on top. Columns whose first photo pixel lies within `max_depth` rows vote; a line fitted to them is the edge.
SideEdge find_edge(const cv::Mat &mask, double max_depth, double tolerance) {
    SideEdge edge;
    const int width = mask.cols, limit = std::min(mask.rows - 1, int(max_depth));
    std::vector<cv::Point2f> points;
    int at_edge = 0, columns = 0;
    for (int x = width / 10; x < width - width / 10; ++x) {
        ++columns;
        int y = 0;
        // The first row of photo pixels: three in a row, so grain and dust in the band are passed over.
        while (y < limit && (mask.at<uint8_t>(y, x) || mask.at<uint8_t>(y + 1, x) == 255 ||
                             (y + 2 < mask.rows && mask.at<uint8_t>(y + 2, x) == 255)))
            ++y;
        if (y == 0) ++at_edge;
        if (y < limit) points.emplace_back(float(x), float(y));
    }
    // No band: the photo meets the image's edge along most of this side.
    if (columns == 0 || at_edge > columns / 2) return edge;
    edge.banded = true;
    if (points.size() < size_t(columns / 2)) return edge;
    cv::Vec4f line;
    cv::fitLine(points, line, cv::DIST_HUBER, 0, 0.01, 0.01);
    if (std::abs(line[0]) < 1e-6) return edge;
    const double slope = line[1] / line[0];
    const double middle = line[3] + slope * (width / 2.0 - line[2]);
    int on_line = 0;
    for (const auto &p : points) on_line += std::abs(p.y - (line[3] + slope * (p.x - line[2]))) <= tolerance;
    edge.slope = slope;
    edge.depth = middle;
    edge.straight = on_line >= int(points.size() * 6 / 10) && on_line >= columns / 2 && middle >= 1;
    return edge;
}

}  // namespace

int rp_detect_print_border(const rp_image *image, const rp_border_params *params, rp_print_border *out, rp_status *status) {
    return rp::guarded(status, [&] {
        if (!image || !params || !out) rp::fail(RP_ERR_INVALID_ARGUMENT, "image, params and out are required");
        if (!(params->colour_tolerance > 0 && params->colour_tolerance <= 255))
            rp::fail(RP_ERR_INVALID_ARGUMENT, "colour_tolerance must be in (0, 255]");
        if (!(params->max_band > 0 && params->max_band < 0.5)) rp::fail(RP_ERR_INVALID_ARGUMENT, "max_band must be in (0, 0.5)");
        if (!(params->max_tilt_degrees >= 0 && params->max_tilt_degrees <= 45))
            rp::fail(RP_ERR_INVALID_ARGUMENT, "max_tilt_degrees must be in [0, 45]");
        *out = rp_print_border();
        const cv::Mat &source = image->mat;
        if (source.empty() || source.cols < 32 || source.rows < 32) return;
        cv::Mat grey;
        if (source.channels() == 3) cv::cvtColor(source, grey, cv::COLOR_BGR2GRAY);
        else grey = source;
        // Analysis at about 600 px: a border is a large structure, and the median filter below stays cheap.
        const double k = std::min(1.0, 600.0 / std::max(grey.cols, grey.rows));
        cv::Mat small, smooth;
        if (k < 1) cv::resize(grey, small, cv::Size(), k, k, cv::INTER_AREA);
        else small = grey;  // shares the image's pixels: only read
        cv::medianBlur(small, smooth, 5);
        small = smooth;
        // The border's colour: the median of the outermost rows and columns that are of one colour (a tight scan
        // may have cut the border off some sides); none of one colour, no border.
        const int w = small.cols, h = small.rows;
        std::vector<int> uniform;
        for (int s = 0; s < 4; ++s) {
            std::vector<uint8_t> line;
            if (s % 2 == 0) small.row(s == 0 ? 1 : h - 2).copyTo(line);
            else small.col(s == 1 ? w - 2 : 1).copyTo(line);
            std::vector<uint8_t> sorted = line;
            std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
            const int median = sorted[sorted.size() / 2];
            int near = 0;
            for (uint8_t v : line) near += std::abs(int(v) - median) <= params->colour_tolerance;
            if (near >= int(line.size() * 3 / 4)) uniform.push_back(median);
        }
        if (uniform.size() < 2) return;
        std::sort(uniform.begin(), uniform.end());
        const int colour = uniform[uniform.size() / 2];
        out->colour = colour;
        cv::Mat mask;
        cv::inRange(small, cv::Scalar(std::max(0.0, colour - params->colour_tolerance)),
                    cv::Scalar(std::min(255.0, colour + params->colour_tolerance)), mask);
        // Each side turned to the top: top, right, bottom, left.
        SideEdge sides[4];
        cv::Mat turned = mask;
        const int codes[4] = {-1, cv::ROTATE_90_COUNTERCLOCKWISE, cv::ROTATE_180, cv::ROTATE_90_CLOCKWISE};
        for (int s = 0; s < 4; ++s) {
            if (codes[s] >= 0) cv::rotate(mask, turned, codes[s]);
            else turned = mask;
            sides[s] = find_edge(turned, params->max_band * turned.rows, 2.0);
        }
        int banded = 0;
        double tilt = 0;
        int tilts = 0;
        for (int s = 0; s < 4; ++s) {
            if (!sides[s].banded) continue;
            ++banded;
            if (!sides[s].straight) return;  // a band whose edge is not a line: not a print's border
            tilt += std::atan(sides[s].slope);
            ++tilts;
        }
        if (banded < 2) return;
        tilt /= tilts;
        if (std::abs(tilt) * 180 / M_PI > params->max_tilt_degrees) return;
        // Every banded side's slopes agree with one rotation (a print is a rectangle).
        for (int s = 0; s < 4; ++s)
            if (sides[s].banded && std::abs(std::atan(sides[s].slope) - tilt) > 1.5 * M_PI / 180) return;
        // The inner axis-aligned box: each edge's depth at its deeper end, plus a margin clear of the print's edge.
        auto inner = [&](const SideEdge &e, int length) {
            return e.banded ? e.depth + std::abs(e.slope) * length * 0.5 : 0.0;
        };
        const double margin = params->margin * std::max(w, h);
        double top = inner(sides[0], w), right = inner(sides[1], h), bottom = inner(sides[2], w), left = inner(sides[3], h);
        if (sides[0].banded) top += margin;
        if (sides[1].banded) right += margin;
        if (sides[2].banded) bottom += margin;
        if (sides[3].banded) left += margin;
        const double x0 = left, y0 = top, x1 = w - right, y1 = h - bottom;
        if (!(x1 - x0 >= 0.3 * w && y1 - y0 >= 0.3 * h)) return;
        // Back to full-resolution pixels (the image may have been decoded reduced).
        const double sx = 1 / (k * image->pixel_scale_x), sy = 1 / (k * image->pixel_scale_y);
        const double fw = image->full.width, fh = image->full.height;
        out->found = 1;
        out->x = std::clamp(std::ceil(x0 * sx), 0.0, fw);
        out->y = std::clamp(std::ceil(y0 * sy), 0.0, fh);
        out->width = std::clamp(std::floor(x1 * sx), out->x, fw) - out->x;
        out->height = std::clamp(std::floor(y1 * sy), out->y, fh) - out->y;
        out->tilt_degrees = tilt * 180 / M_PI;
        out->sides = (sides[0].banded ? 1 : 0) | (sides[1].banded ? 2 : 0) | (sides[2].banded ? 4 : 0) | (sides[3].banded ? 8 : 0);
    });
}
