// The calibrated five-point minimal solver (Nistér 2004, in the action-matrix form of Stewénius et al. 2006):
// OpenCV 4.6 only exposes it inside findEssentialMat, at about 190 µs a call, too slow for a sampler's
// inner loop.
#include "shim_internal.hpp"

#include <opencv2/core.hpp>

#include <algorithm>
#include <array>
#include <cmath>

namespace {

// Polynomials of degree <= 3 in x, y, z: 20 coefficients. The ten cubic monomials come first, so that
// Gauss-Jordan elimination on the constraint matrix expresses each of them in the ten others, the basis of
// the quotient ring: x², xy, xz, y², yz, z², x, y, z, 1.
constexpr int kMonomials = 20;
constexpr int kExponents[kMonomials][3] = {
    {3, 0, 0}, {2, 1, 0}, {2, 0, 1}, {1, 2, 0}, {1, 1, 1}, {1, 0, 2}, {0, 3, 0}, {0, 2, 1}, {0, 1, 2}, {0, 0, 3},
    {2, 0, 0}, {1, 1, 0}, {1, 0, 1}, {0, 2, 0}, {0, 1, 1}, {0, 0, 2}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, 0, 0}};

struct MonomialIndex {
    int product[kMonomials][kMonomials];  // index of the product of two monomials; 0 where the degree exceeds 3
    MonomialIndex() {
        int index[7][7][7] = {};
        for (int m = 0; m < kMonomials; ++m) index[kExponents[m][0]][kExponents[m][1]][kExponents[m][2]] = m;
        for (int i = 0; i < kMonomials; ++i)
            for (int j = 0; j < kMonomials; ++j)
                product[i][j] = index[kExponents[i][0] + kExponents[j][0]][kExponents[i][1] + kExponents[j][1]]
                                     [kExponents[i][2] + kExponents[j][2]];
    }
};
const MonomialIndex kIndex;

// Linear terms sit at 16..19, quadratic at 10..19, cubic at 0..19: a product only visits the terms its
// factors' degrees allow.
constexpr int kFirstTerm[4] = {19, 16, 10, 0};

struct Poly {
    std::array<double, kMonomials> c{};
    int degree = 0;

    Poly combined(const Poly &o, double sign) const {
        Poly r;
        r.degree = std::max(degree, o.degree);
        for (int i = kFirstTerm[r.degree]; i < kMonomials; ++i) r.c[size_t(i)] = c[size_t(i)] + sign * o.c[size_t(i)];
        return r;
    }
    Poly operator+(const Poly &o) const { return combined(o, 1); }
    Poly operator-(const Poly &o) const { return combined(o, -1); }
    Poly operator*(double s) const {
        Poly r = *this;
        for (double &v : r.c) v *= s;
        return r;
    }
    // Only ever called with a total degree <= 3.
    Poly operator*(const Poly &o) const {
        Poly r;
        r.degree = degree + o.degree;
        for (int i = kFirstTerm[degree]; i < kMonomials; ++i) {
            double a = c[size_t(i)];
            for (int j = kFirstTerm[o.degree]; j < kMonomials; ++j) {
                r.c[size_t(kIndex.product[i][j])] += a * o.c[size_t(j)];
            }
        }
        return r;
    }
};

// A basis of the right null space (4-dimensional) of the 5x9 epipolar constraint matrix, by Gauss-Jordan
// elimination with full pivoting (a 9x9 SVD costs more than the rest of the solver).
bool null_space(const cv::Vec3d x1[5], const cv::Vec3d x2[5], cv::Matx<double, 4, 9> &basis) {
    double A[5][9];
    for (int i = 0; i < 5; ++i) {
        cv::Vec3d a = x1[i] / cv::norm(x1[i]), b = x2[i] / cv::norm(x2[i]);
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) A[i][3 * r + c] = b[r] * a[c];
    }
    int column[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    for (int k = 0; k < 5; ++k) {
        int pr = k, pc = k;
        for (int r = k; r < 5; ++r)
            for (int c = k; c < 9; ++c)
                if (std::abs(A[r][c]) > std::abs(A[pr][pc])) pr = r, pc = c;
        if (!(std::abs(A[pr][pc]) > 1e-10)) return false;  // fewer than five independent constraints
        for (int c = 0; c < 9; ++c) std::swap(A[k][c], A[pr][c]);
        for (int r = 0; r < 5; ++r) std::swap(A[r][k], A[r][pc]);
        std::swap(column[k], column[pc]);
        double inv = 1.0 / A[k][k];
        for (int c = 0; c < 9; ++c) A[k][c] *= inv;
        for (int r = 0; r < 5; ++r) {
            if (r == k) continue;
            double f = A[r][k];
            if (f == 0) continue;
            for (int c = 0; c < 9; ++c) A[r][c] -= f * A[k][c];
        }
    }
    // [I | C] in permuted columns: the free variables 5..8 give the null vectors (-C e_j ; e_j).
    for (int j = 0; j < 4; ++j) {
        double v[9] = {};
        for (int r = 0; r < 5; ++r) v[column[r]] = -A[r][5 + j];
        v[column[5 + j]] = 1;
        double n = 0;
        for (double x : v) n += x * x;
        n = std::sqrt(n);
        for (int i = 0; i < 9; ++i) basis(j, i) = v[i] / n;
    }
    return true;
}

}  // namespace

namespace rp {

int five_point(const cv::Vec3d x1[5], const cv::Vec3d x2[5], cv::Matx33d solutions[10]) {
    cv::Matx<double, 4, 9> basis;
    if (!null_space(x1, x2, basis)) return 0;

    // E = x X + y Y + z Z + W, entry by entry as linear polynomials.
    Poly E[3][3];
    const int linear[4] = {16, 17, 18, 19};
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) {
            for (int k = 0; k < 4; ++k) E[r][c].c[size_t(linear[k])] = basis(k, 3 * r + c);
            E[r][c].degree = 1;
        }

    // Ten cubic constraints: det(E) = 0 and 2 E Eᵀ E − trace(E Eᵀ) E = 0.
    double M[10][kMonomials];
    Poly det = E[0][0] * (E[1][1] * E[2][2] - E[1][2] * E[2][1]) - E[0][1] * (E[1][0] * E[2][2] - E[1][2] * E[2][0]) +
               E[0][2] * (E[1][0] * E[2][1] - E[1][1] * E[2][0]);
    Poly EEt[3][3];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) EEt[i][j] = E[i][0] * E[j][0] + E[i][1] * E[j][1] + E[i][2] * E[j][2];
    Poly trace = EEt[0][0] + EEt[1][1] + EEt[2][2];
    for (int m = 0; m < kMonomials; ++m) M[0][m] = det.c[size_t(m)];
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
            Poly p = (EEt[i][0] * E[0][j] + EEt[i][1] * E[1][j] + EEt[i][2] * E[2][j]) * 2.0 - trace * E[i][j];
            for (int m = 0; m < kMonomials; ++m) M[1 + 3 * i + j][m] = p.c[size_t(m)];
        }
    }

    // Gauss-Jordan with partial pivoting on the cubic columns: M = [I | B].
    for (int col = 0; col < 10; ++col) {
        int pivot = col;
        for (int r = col + 1; r < 10; ++r)
            if (std::abs(M[r][col]) > std::abs(M[pivot][col])) pivot = r;
        if (!(std::abs(M[pivot][col]) > 1e-14)) return 0;
        if (pivot != col)
            for (int m = 0; m < kMonomials; ++m) std::swap(M[pivot][m], M[col][m]);
        double inv = 1.0 / M[col][col];
        for (int m = col; m < kMonomials; ++m) M[col][m] *= inv;
        for (int r = 0; r < 10; ++r) {
            if (r == col || M[r][col] == 0) continue;
            double f = M[r][col];
            for (int m = col; m < kMonomials; ++m) M[r][m] -= f * M[col][m];
        }
    }

    // Multiplication by x on the basis b = (x², xy, xz, y², yz, z², x, y, z, 1): x b = A b. The first six
    // products are the cubic monomials x³, x²y, x²z, xy², xyz, xz² (rows 0-5 of M), the others stay in the basis.
    cv::Matx<double, 10, 10> A = cv::Matx<double, 10, 10>::zeros();
    for (int r = 0; r < 6; ++r)
        for (int k = 0; k < 10; ++k) A(r, k) = -M[r][10 + k];
    A(6, 0) = 1;  // x·x = x²
    A(7, 1) = 1;  // x·y = xy
    A(8, 2) = 1;  // x·z = xz
    A(9, 6) = 1;  // x·1 = x

    cv::Mat values, vectors;
    try {
        cv::eigenNonSymmetric(cv::Mat(A), values, vectors);  // real parts only: complex pairs fail the check below
    } catch (const cv::Exception &) {
        return 0;  // its QR iteration gives up on some matrices: a sample like any other that yields nothing
    }
    int count = 0;
    for (int k = 0; k < values.rows; ++k) {
        double lambda = values.at<double>(k);
        cv::Matx<double, 10, 1> v;
        for (int i = 0; i < 10; ++i) v(i) = vectors.at<double>(k, i);
        cv::Matx<double, 10, 1> residual = A * v - v * lambda;
        if (!(cv::norm(residual) <= 1e-6 * cv::norm(v) * std::max(1.0, std::abs(lambda)))) continue;
        if (!(std::abs(v(9)) > 1e-12 * cv::norm(v))) continue;
        double x = v(6) / v(9), y = v(7) / v(9), z = v(8) / v(9);
        cv::Matx33d e;
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c)
                e(r, c) = x * basis(0, 3 * r + c) + y * basis(1, 3 * r + c) + z * basis(2, 3 * r + c) + basis(3, 3 * r + c);
        double n = cv::norm(e);
        if (!(n > 0) || !std::isfinite(n)) continue;
        solutions[count++] = e * (1.0 / n);
    }
    return count;
}

}  // namespace rp
