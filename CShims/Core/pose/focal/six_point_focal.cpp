// The minimal solver for the relative pose with the reference's focal length unknown (focal.hpp): six
// correspondences, the current camera calibrated, the reference's principal point at its prior and square pixels.
// The 6x9 epipolar system leaves F = x F1 + y F2 + z F3; with E = F K1, K1 = diag(f, f, 1), the essential trace
// constraint right-multiplied by K1^-1 reads 2 F D Fᵀ F - tr(F D Fᵀ) F = 0, D = diag(w, w, 1), w = f²: nine cubics
// in (x, y, z), linear in w, and det F = 0 make (A + w B) m = 0 over the ten cubic monomials m, a polynomial
// eigenvalue problem (the formulation of Kukelova, Bujnak and Pajdla 2012), solved as -A⁻¹B m = (1/w) m.
#include "focal.hpp"

namespace rp::focal {

namespace {

// Homogeneous polynomials in (x, y, z): linear (x, y, z), quadratic (xx xy xz yy yz zz) and cubic
// (xxx xxy xxz xyy xyz xzz yyy yyz yzz zzz) coefficients.
using Lin = cv::Vec3d;
using Quad = cv::Vec<double, 6>;
using Cubic = cv::Vec<double, 10>;

constexpr int kQuad[3][3] = {{0, 1, 2}, {1, 3, 4}, {2, 4, 5}};
constexpr int kQuadPair[6][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}};
// The cubic monomial x^i' y^j' z^k' whose exponents count the indices i, j, k (0 x, 1 y, 2 z).
int cubic_index(int i, int j, int k) {
    int e[3] = {0, 0, 0};
    ++e[i], ++e[j], ++e[k];
    // By the exponent of x, then of y (z's follows): the order of Cubic.
    static constexpr int kIndex[4][4] = {{9, 8, 7, 6}, {5, 4, 3, -1}, {2, 1, -1, -1}, {0, -1, -1, -1}};
    return kIndex[e[0]][e[1]];
}

Quad mul(const Lin &a, const Lin &b) {
    Quad out = Quad::all(0);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) out[kQuad[i][j]] += a[i] * b[j];
    return out;
}

Cubic mul(const Quad &a, const Lin &b) {
    Cubic out = Cubic::all(0);
    for (int q = 0; q < 6; ++q)
        for (int k = 0; k < 3; ++k) out[cubic_index(kQuadPair[q][0], kQuadPair[q][1], k)] += a[q] * b[k];
    return out;
}

// The 9-dimensional null space's last three vectors of the six epipolar constraints bᵀ F p = 0, as matrices.
std::array<cv::Matx33d, 3> null_space(const cv::Vec3d *p, const cv::Vec3d *b) {
    cv::Matx<double, 6, 9> M;
    for (int i = 0; i < 6; ++i)
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) M(i, 3 * r + c) = b[i][r] * p[i][c];
    cv::Mat w, u, vt;
    cv::SVD::compute(cv::Mat(M), w, u, vt, cv::SVD::FULL_UV);
    std::array<cv::Matx33d, 3> out;
    for (int k = 0; k < 3; ++k)
        for (int e = 0; e < 9; ++e) out[k](e / 3, e % 3) = vt.at<double>(6 + k, e);
    return out;
}

// The ten equations' coefficients: A (w⁰) and B (w¹), rows 0-8 the trace constraint, row 9 det F (no w).
void coefficients(const std::array<cv::Matx33d, 3> &N, cv::Matx<double, 10, 10> &A, cv::Matx<double, 10, 10> &B) {
    Lin F[3][3];
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) F[r][c] = Lin(N[0](r, c), N[1](r, c), N[2](r, c));
    Quad G1[3][3], G0[3][3];  // F diag(1, 1, 0) Fᵀ and F diag(0, 0, 1) Fᵀ
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) G1[i][j] = mul(F[i][0], F[j][0]) + mul(F[i][1], F[j][1]), G0[i][j] = mul(F[i][2], F[j][2]);
    const Quad t1 = G1[0][0] + G1[1][1] + G1[2][2], t0 = G0[0][0] + G0[1][1] + G0[2][2];
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            Cubic a = -1.0 * mul(t0, F[i][j]), b = -1.0 * mul(t1, F[i][j]);
            for (int k = 0; k < 3; ++k) a += 2.0 * mul(G0[i][k], F[k][j]), b += 2.0 * mul(G1[i][k], F[k][j]);
            for (int m = 0; m < 10; ++m) A(3 * i + j, m) = a[m], B(3 * i + j, m) = b[m];
        }
    }
    const Cubic det = mul(mul(F[1][1], F[2][2]) - mul(F[1][2], F[2][1]), F[0][0]) - mul(mul(F[1][0], F[2][2]) - mul(F[1][2], F[2][0]), F[0][1]) +
                      mul(mul(F[1][0], F[2][1]) - mul(F[1][1], F[2][0]), F[0][2]);
    for (int m = 0; m < 10; ++m) A(9, m) = det[m], B(9, m) = 0;
}

// (x, y, z) from a monomial vector, by the row of its largest pure cube (x³: x²·(x, y, z), and so on).
Lin unknowns(const Cubic &m) {
    const double cubes[3] = {std::abs(m[0]), std::abs(m[6]), std::abs(m[9])};
    const int k = int(std::max_element(cubes, cubes + 3) - cubes);
    if (k == 0) return Lin(m[0], m[1], m[2]);
    if (k == 1) return Lin(m[3], m[6], m[7]);
    return Lin(m[5], m[8], m[9]);
}

// Two steps of inverse iteration on (A + w B) m = 0 from an eigenpair of -A⁻¹B: m the null vector of A + w B, w from
// its left one u (uᵀ(A + w B) m = 0). The eigenvectors of the unsymmetric solver lose digits where eigenvalues crowd.
void polish(const cv::Matx<double, 10, 10> &A, const cv::Matx<double, 10, 10> &B, double &w, Cubic &m) {
    for (int step = 0; step < 2; ++step) {
        cv::Mat s, u, vt;
        cv::SVD::compute(cv::Mat(A + w * B), s, u, vt, cv::SVD::FULL_UV);
        const cv::Mat left = u.col(9), right = vt.row(9).t();
        const double bm = cv::Mat(left.t() * cv::Mat(B) * right).at<double>(0), am = cv::Mat(left.t() * cv::Mat(A) * right).at<double>(0);
        for (int i = 0; i < 10; ++i) m[i] = right.at<double>(i);
        if (std::abs(bm) > 0 && -am / bm > 0) w = -am / bm;
    }
}

// The real eigenpairs giving w > 0: (w, (x, y, z)) into `out`; their count.
int eigen_solutions(const cv::Matx<double, 10, 10> &A, const cv::Matx<double, 10, 10> &B, std::pair<double, Lin> out[10]) {
    // A singular A + c B has a solution at w = c: the eigenvalues of -(A + c B)⁻¹B are 1/(w - c), c the first shift
    // that leaves it invertible.
    cv::Mat M;
    double shift = 0;
    for (double c : {0.0, 0.37, 2.3}) {
        if (cv::solve(cv::Mat(A + c * B), -cv::Mat(B), M, cv::DECOMP_LU)) {
            shift = c;
            break;
        }
        M.release();
    }
    if (M.empty()) return 0;
    cv::Mat values, vectors;
    cv::eigenNonSymmetric(M, values, vectors);
    const double scale = cv::norm(M);
    int count = 0;
    for (int k = 0; k < values.rows; ++k) {
        const double lambda = values.at<double>(k);
        const cv::Mat v = vectors.row(k).t();
        // A complex pair comes out as its real part, whose vector is no eigenvector: kept only when it nearly is one.
        if (!(std::abs(lambda) > 1e-12 * scale) || !(shift + 1 / lambda > 0) || cv::norm(M * v - lambda * v) > 1e-6 * scale * cv::norm(v)) continue;
        Cubic m;
        for (int i = 0; i < 10; ++i) m[i] = v.at<double>(i);
        double w = shift + 1 / lambda;
        polish(A, B, w, m);
        out[count++] = {w, unknowns(m)};
    }
    return count;
}

}  // namespace

int six_point_focal(const cv::Vec3d reference[6], const cv::Vec3d current[6], double nominal, double lo, double hi, FocalPose *out) {
    // The reference's points scaled by the nominal focal length, for conditioning: its focal length f / nominal.
    cv::Vec3d p[6];
    for (int i = 0; i < 6; ++i) p[i] = cv::Vec3d(reference[i][0] / nominal, reference[i][1] / nominal, 1);
    const auto N = null_space(p, current);
    cv::Matx<double, 10, 10> A, B;
    coefficients(N, A, B);
    std::pair<double, Lin> solutions[10];
    const int found = eigen_solutions(A, B, solutions);
    int count = 0;
    for (int k = 0; k < found; ++k) {
        const double g = std::sqrt(solutions[k].first), f = g * nominal;
        if (!(f >= lo && f <= hi)) continue;
        const Lin &u = solutions[k].second;
        const cv::Matx33d E = (u[0] * N[0] + u[1] * N[1] + u[2] * N[2]) * cv::Matx33d(g, 0, 0, 0, g, 0, 0, 0, 1);
        cv::Vec3d a[6];
        for (int i = 0; i < 6; ++i) a[i] = cv::Vec3d(reference[i][0] / f, reference[i][1] / f, 1);
        pose::Pose poses[4];
        const int n = pose::poses_from_essential(E * (1 / cv::norm(E)), a, current, 6, poses);
        for (int s = 0; s < n; ++s) out[count++] = FocalPose{poses[s], f};
    }
    return count;
}

}  // namespace rp::focal
