// Matching guided by a first model (rephoto_shim.h, rp_match_guided): each current keypoint is compared only with
// the reference keypoints near where the homography puts it, so Lowe's ratio is taken among a few neighbours
// rather than the whole image, and correct matches that a repeated or faded texture hid come back.
#include "../shim_internal.hpp"

#include <opencv2/core.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

int rp_match_guided(const rp_features *reference, const rp_features *current, const double homography[9],
                    const rp_guided_params *params, rp_match **matches, int *count, rp_status *status) {
    if (matches) *matches = nullptr;
    if (count) *count = 0;
    return rp::guarded(status, [&] {
        if (!reference || !current || !homography || !params || !matches || !count)
            rp::fail(RP_ERR_INVALID_ARGUMENT, "reference, current, homography, params, matches and count are required");
        if (!(params->radius_pixels > 0 && std::isfinite(params->radius_pixels)))
            rp::fail(RP_ERR_INVALID_ARGUMENT, "radius_pixels must be positive");
        if (!(params->ratio > 0 && params->ratio <= 1)) rp::fail(RP_ERR_INVALID_ARGUMENT, "ratio must be in (0, 1]");
        if (reference->descriptors.type() != current->descriptors.type() || reference->descriptors.cols != current->descriptors.cols)
            rp::fail(RP_ERR_INVALID_ARGUMENT, RP_CAUSE_DESCRIPTOR_MISMATCH, "the two images' descriptors differ in kind");
        for (int i = 0; i < 9; ++i)
            if (!std::isfinite(homography[i])) rp::fail(RP_ERR_INVALID_ARGUMENT, "the homography must be finite");
        const cv::Matx33d H(homography);
        const cv::Matx33d inverse = H.inv();
        const double radius2 = params->radius_pixels * params->radius_pixels;
        // Reference keypoints in cells of the radius: a current keypoint looks in the 3 x 3 cells about its prediction.
        const double cell = params->radius_pixels;
        const int columns = std::max(1, int(std::ceil(reference->width / cell)) + 1);
        const int rows = std::max(1, int(std::ceil(reference->height / cell)) + 1);
        if (double(columns) * rows > 4e6) rp::fail(RP_ERR_INVALID_ARGUMENT, "radius_pixels is too small for the image");
        std::vector<std::vector<int>> cells(size_t(columns) * rows);
        for (int i = 0; i < int(reference->keypoints.size()); ++i) {
            const auto &p = reference->keypoints[i].pt;
            const int cx = std::clamp(int(p.x / cell), 0, columns - 1), cy = std::clamp(int(p.y / cell), 0, rows - 1);
            cells[size_t(cy) * columns + cx].push_back(i);
        }
        std::vector<rp_match> found;
        for (int j = 0; j < int(current->keypoints.size()); ++j) {
            const auto &q = current->keypoints[j].pt;
            const cv::Vec3d r = inverse * cv::Vec3d(q.x, q.y, 1);
            if (!(std::abs(r[2]) > 1e-12)) continue;
            const double px = r[0] / r[2], py = r[1] / r[2];
            if (!(px > -cell && py > -cell && px < reference->width + cell && py < reference->height + cell)) continue;
            const int cx = int(std::floor(px / cell)), cy = int(std::floor(py / cell));
            double best = HUGE_VAL, second = HUGE_VAL;
            int best_index = -1;
            const cv::Mat query = current->descriptors.row(j);
            for (int y = cy - 1; y <= cy + 1; ++y) {
                if (y < 0 || y >= rows) continue;
                for (int x = cx - 1; x <= cx + 1; ++x) {
                    if (x < 0 || x >= columns) continue;
                    for (int i : cells[size_t(y) * columns + x]) {
                        const auto &p = reference->keypoints[i].pt;
                        if ((p.x - px) * (p.x - px) + (p.y - py) * (p.y - py) > radius2) continue;
                        const double d = cv::norm(query, reference->descriptors.row(i), reference->norm);
                        if (d < best) {
                            second = best;
                            best = d;
                            best_index = i;
                        } else if (d < second) {
                            second = d;
                        }
                    }
                }
            }
            // A lone candidate passes no ratio test: in a sparse region it is whatever lies there.
            if (best_index < 0 || !std::isfinite(second)) continue;
            if (!(best < params->ratio * second)) continue;
            found.push_back(rp_match{best_index, j, float(best), second > 0 ? float(best / second) : 1.0f});
        }
        *count = int(found.size());
        if (found.empty()) return;
        *matches = static_cast<rp_match *>(std::malloc(found.size() * sizeof(rp_match)));
        if (*matches == nullptr) throw std::bad_alloc();
        std::memcpy(*matches, found.data(), found.size() * sizeof(rp_match));
    });
}
