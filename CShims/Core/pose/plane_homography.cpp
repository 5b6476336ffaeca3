// The homography GRIC weighs against the essential matrix (pose/evidence.cpp): RANSAC on the essential
// inliers, maximising the count within a transfer threshold, then least squares on that consensus.
// cv::findHomography did the same at about 2.4 ms per pose on 250 points (its per-sample Mat handling and
// final Levenberg-Marquardt); GRIC needs the plane's consensus, not the last digit, and this takes a fraction.
#include "../shim_internal.hpp"

#include <cmath>
#include <random>

namespace {

// Samples drawn even when the first ones already reach the confidence: with a large plane the bound is met
// after a handful, and which handful decided the fit.
constexpr long kMinSamples = 50;

// The homography taking the projective basis (e1, e2, e3, e1+e2+e3) to four points, by columns; false when
// three of them are (nearly) collinear.
bool from_basis(const double x[4], const double y[4], cv::Matx33d &out) {
    const cv::Matx33d P(x[0], x[1], x[2], y[0], y[1], y[2], 1, 1, 1);
    const double det = cv::determinant(P);
    if (!(std::abs(det) > 1e-12)) return false;
    const cv::Vec3d lambda = P.inv() * cv::Vec3d(x[3], y[3], 1);
    for (int i = 0; i < 3; ++i)
        if (!(std::abs(lambda[i]) > 1e-9)) return false;
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) out(r, c) = P(r, c) * lambda[c];
    return true;
}

inline double transfer2(const cv::Matx33d &H, double ax, double ay, double bx, double by) {
    const double w = H(2, 0) * ax + H(2, 1) * ay + H(2, 2);
    if (!(std::abs(w) > 1e-12)) return HUGE_VAL;
    const double dx = (H(0, 0) * ax + H(0, 1) * ay + H(0, 2)) / w - bx;
    const double dy = (H(1, 0) * ax + H(1, 1) * ay + H(1, 2)) / w - by;
    return dx * dx + dy * dy;
}

// Direct linear transform on the selected points, each set shifted and scaled to unit mean distance (Hartley).
bool least_squares(const std::vector<cv::Point2d> &a, const std::vector<cv::Point2d> &b, const std::vector<uint8_t> &selected,
                   cv::Matx33d &H) {
    auto normaliser = [&](const std::vector<cv::Point2d> &p) {
        cv::Point2d centre(0, 0);
        int n = 0;
        for (size_t i = 0; i < p.size(); ++i)
            if (selected[i]) centre += p[i], ++n;
        centre *= 1.0 / n;
        double spread = 0;
        for (size_t i = 0; i < p.size(); ++i)
            if (selected[i]) spread += cv::norm(p[i] - centre);
        const double s = spread > 0 ? std::sqrt(2.0) * n / spread : 1;
        return cv::Matx33d(s, 0, -s * centre.x, 0, s, -s * centre.y, 0, 0, 1);
    };
    const cv::Matx33d Ta = normaliser(a), Tb = normaliser(b);
    cv::Matx<double, 9, 9> AtA = cv::Matx<double, 9, 9>::zeros();
    for (size_t i = 0; i < a.size(); ++i) {
        if (!selected[i]) continue;
        const double x = Ta(0, 0) * a[i].x + Ta(0, 2), y = Ta(1, 1) * a[i].y + Ta(1, 2);
        const double u = Tb(0, 0) * b[i].x + Tb(0, 2), v = Tb(1, 1) * b[i].y + Tb(1, 2);
        const double rows[2][9] = {{x, y, 1, 0, 0, 0, -u * x, -u * y, -u}, {0, 0, 0, x, y, 1, -v * x, -v * y, -v}};
        for (const auto &r : rows)
            for (int p = 0; p < 9; ++p)
                for (int q = p; q < 9; ++q) AtA(p, q) += r[p] * r[q];
    }
    for (int p = 0; p < 9; ++p)
        for (int q = 0; q < p; ++q) AtA(p, q) = AtA(q, p);
    cv::Matx<double, 9, 1> values;
    cv::Matx<double, 9, 9> vectors;
    if (!cv::eigen(AtA, values, vectors)) return false;
    const cv::Matx33d Hn(vectors(8, 0), vectors(8, 1), vectors(8, 2), vectors(8, 3), vectors(8, 4), vectors(8, 5), vectors(8, 6),
                         vectors(8, 7), vectors(8, 8));
    H = Tb.inv() * Hn * Ta;
    return std::isfinite(H(0, 0)) && std::abs(H(2, 2)) + std::abs(H(2, 0)) + std::abs(H(2, 1)) > 0;
}

}  // namespace

namespace rp {

bool plane_homography(const std::vector<cv::Point2d> &a, const std::vector<cv::Point2d> &b, double threshold, int max_samples,
                      double confidence, uint64_t seed, cv::Matx33d &H) {
    const size_t n = a.size();
    if (n < 4 || b.size() != n || !(threshold > 0)) return false;
    const double limit = threshold * threshold;
    std::mt19937_64 random(seed);
    std::uniform_int_distribution<size_t> pick(0, n - 1);
    // MSAC: the truncated transfer cost picks among hypotheses, not the count, which is a draw between
    // models that gather the same points with different accuracy.
    auto cost_of = [&](const cv::Matx33d &M, int &count) {
        double cost = 0;
        count = 0;
        for (size_t i = 0; i < n; ++i) {
            const double e = transfer2(M, a[i].x, a[i].y, b[i].x, b[i].y);
            count += e < limit;
            cost += e < limit ? e : limit;
        }
        return cost;
    };
    double best_cost = HUGE_VAL;
    int best_count = 0;
    cv::Matx33d best;
    long needed = max_samples;
    for (long k = 0; k < std::max(std::min<long>(needed, max_samples), std::min<long>(kMinSamples, max_samples)); ++k) {
        size_t index[4];
        for (int i = 0; i < 4; ++i) index[i] = draw_unlike(random, pick, index, i);
        double ax[4], ay[4], bx[4], by[4];
        for (int i = 0; i < 4; ++i) ax[i] = a[index[i]].x, ay[i] = a[index[i]].y, bx[i] = b[index[i]].x, by[i] = b[index[i]].y;
        cv::Matx33d A, B;
        if (!from_basis(ax, ay, A) || !from_basis(bx, by, B)) continue;
        cv::Matx33d candidate = B * A.inv();
        const double scale = cv::norm(candidate);  // the transfer test's thresholds assume a unit-norm H
        if (!(scale > 0) || !std::isfinite(scale)) continue;
        candidate *= 1 / scale;
        int count;
        const double cost = cost_of(candidate, count);
        if (!(cost < best_cost)) continue;
        best_cost = cost;
        best_count = count;
        best = candidate;
        const double w4 = std::pow(double(count) / double(n), 4);
        if (w4 >= 1) needed = 0;
        else if (const double bound = std::ceil(std::log(1 - confidence) / std::log1p(-w4)); bound >= 0 && bound < double(max_samples))
            needed = long(bound);
    }
    if (best_count < 4) return false;
    // Least squares on the consensus, twice: the refit may gather points the minimal sample missed. A refit
    // with a higher truncated cost than its start is dropped.
    H = best;
    for (int round = 0; round < 2; ++round) {
        std::vector<uint8_t> selected(n);
        for (size_t i = 0; i < n; ++i) selected[i] = transfer2(H, a[i].x, a[i].y, b[i].x, b[i].y) < limit;
        cv::Matx33d refit;
        int count;
        if (!least_squares(a, b, selected, refit)) break;
        const double cost = cost_of(refit, count);
        if (!(cost < best_cost)) break;
        H = refit;
        best_cost = cost;
    }
    return true;
}

}  // namespace rp
