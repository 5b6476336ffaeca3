// The robust loop's model-free parts: the sample screen and the adaptive stopping bound.
#include "robust_loop.hpp"

namespace rp::pose {

bool SampleScreen::passes(const size_t *index, int sample_size) const {
    const double first = turn[index[0]];
    double lo = 0, hi = 0, zlo = zoom[index[0]], zhi = zlo;
    for (int i = 1; i < sample_size; ++i) {
        // Relative to the first: within the bound, every turn's wrapped offset is on the same side.
        double d = std::remainder(turn[index[i]] - first, 2 * M_PI);
        lo = std::min(lo, d);
        hi = std::max(hi, d);
        zlo = std::min(zlo, zoom[index[i]]);
        zhi = std::max(zhi, zoom[index[i]]);
    }
    return hi - lo <= degrees_rad && zhi - zlo <= octaves;
}

double SampleScreen::kept(const std::vector<size_t> &inliers, int sample_size, uint64_t seed) const {
    if (!on() || inliers.size() < size_t(sample_size)) return 1;
    std::mt19937_64 random(seed);
    std::uniform_int_distribution<size_t> pick(0, inliers.size() - 1);
    constexpr int kDraws = 256;
    int passed = 0;
    size_t local[kMaxSampleSize], index[kMaxSampleSize];
    for (int k = 0; k < kDraws; ++k) {
        for (int i = 0; i < sample_size; ++i) {
            local[i] = rp::draw_unlike(random, pick, local, i);
            index[i] = inliers[local[i]];
        }
        passed += passes(index, sample_size);
    }
    // Never zero: the bound stays finite, and one passing sample in 512 is as good as none for it.
    return std::max(double(passed), 0.5) / kDraws;
}

long required_samples(double inlier_ratio, double confidence, int sample_size, double kept) {
    double p = std::pow(inlier_ratio, sample_size) * kept;
    if (p >= 1) return 1;
    if (p <= 0) return LONG_MAX;
    double k = std::log(1 - confidence) / std::log(1 - p);
    return k >= double(LONG_MAX / 2) ? LONG_MAX / 2 : long(std::ceil(k));
}

}  // namespace rp::pose
