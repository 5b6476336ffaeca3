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

// The real eigenvalues of the action matrix: reduction to Hessenberg form by stabilised elementary similarity
// transforms, then Francis double-shift QR without eigenvectors (the eigenvectors follow from the structure of the
// basis, below). cv::eigenNonSymmetric, which also computes every eigenvector, took 13 of the solver's 19 µs.
constexpr int kN = 10;

void to_hessenberg(double a[kN][kN]) {
    for (int m = 1; m < kN - 1; ++m) {
        int pivot = m;
        for (int i = m + 1; i < kN; ++i)
            if (std::abs(a[i][m - 1]) > std::abs(a[pivot][m - 1])) pivot = i;
        if (pivot != m) {
            for (int j = 0; j < kN; ++j) std::swap(a[pivot][j], a[m][j]);
            for (int i = 0; i < kN; ++i) std::swap(a[i][pivot], a[i][m]);
        }
        const double p = a[m][m - 1];
        if (p == 0) continue;
        for (int i = m + 1; i < kN; ++i) {
            const double f = a[i][m - 1] / p;
            if (f == 0) continue;
            for (int j = m - 1; j < kN; ++j) a[i][j] -= f * a[m][j];
            for (int r = 0; r < kN; ++r) a[r][m] += f * a[r][i];
        }
    }
}

// The real eigenvalues of an upper Hessenberg matrix (destroyed), by the Francis double-shift QR algorithm
// without eigenvectors. Returns how many, or -1 when the iteration does not converge.
int hessenberg_real_eigenvalues(double h[kN][kN], double roots[kN]) {
    constexpr double eps = 1e-15;
    double norm = 0;
    for (int i = 0; i < kN; ++i)
        for (int j = std::max(i - 1, 0); j < kN; ++j) norm += std::abs(h[i][j]);
    int count = 0, last = kN - 1, iterations = 0;
    double shift = 0;
    while (last >= 0) {
        // The active block is [l, last]: h[l][l-1] is negligible.
        int l = last;
        for (; l > 0; --l) {
            double s = std::abs(h[l - 1][l - 1]) + std::abs(h[l][l]);
            if (s == 0) s = norm;
            if (std::abs(h[l][l - 1]) <= eps * s) {
                h[l][l - 1] = 0;
                break;
            }
        }
        double x = h[last][last];
        if (l == last) {
            roots[count++] = x + shift;
            --last;
            iterations = 0;
            continue;
        }
        double y = h[last - 1][last - 1], w = h[last][last - 1] * h[last - 1][last];
        if (l == last - 1) {  // a 2x2 block: two real eigenvalues, or a complex pair (no solution)
            const double p = 0.5 * (y - x), q = p * p + w;
            if (q >= 0) {
                const double z = p + std::copysign(std::sqrt(q), p);
                roots[count++] = x + shift + z;
                roots[count++] = z != 0 ? x + shift - w / z : x + shift + z;
            }
            last -= 2;
            iterations = 0;
            continue;
        }
        if (++iterations > 60) return -1;
        if (iterations == 10 || iterations == 20) {  // an exceptional shift breaks cycles
            shift += x;
            for (int i = 0; i <= last; ++i) h[i][i] -= x;
            const double s = std::abs(h[last][last - 1]) + std::abs(h[last - 1][last - 2]);
            x = y = 0.75 * s;
            w = -0.4375 * s * s;
        }
        // Where to start the sweep: the lowest m whose first column of (H - s1)(H - s2) decouples from above.
        int m = last - 2;
        double p = 0, q = 0, r = 0;
        for (;; --m) {
            const double z = h[m][m], rr = x - z, ss = y - z;
            p = (rr * ss - w) / h[m + 1][m] + h[m][m + 1];
            q = h[m + 1][m + 1] - z - rr - ss;
            r = h[m + 2][m + 1];
            const double scale = std::abs(p) + std::abs(q) + std::abs(r);
            p /= scale;
            q /= scale;
            r /= scale;
            if (m == l) break;
            const double u = std::abs(h[m][m - 1]) * (std::abs(q) + std::abs(r));
            const double v = std::abs(p) * (std::abs(h[m - 1][m - 1]) + std::abs(z) + std::abs(h[m + 1][m + 1]));
            if (u <= eps * v) break;
        }
        for (int i = m + 2; i <= last; ++i) {
            h[i][i - 2] = 0;
            if (i != m + 2) h[i][i - 3] = 0;
        }
        // The double-shift step: 3x3 Householder reflections chase the bulge down the block.
        for (int k = m; k <= last - 1; ++k) {
            const bool three = k != last - 1;
            double scale = 1;
            if (k != m) {
                p = h[k][k - 1];
                q = h[k + 1][k - 1];
                r = three ? h[k + 2][k - 1] : 0;
                scale = std::abs(p) + std::abs(q) + std::abs(r);
                if (scale == 0) continue;
                p /= scale;
                q /= scale;
                r /= scale;
            }
            const double s = std::copysign(std::sqrt(p * p + q * q + r * r), p);
            if (k == m) {
                if (l != m) h[k][k - 1] = -h[k][k - 1];
            } else {
                h[k][k - 1] = -s * scale;
            }
            p += s;
            const double vx = p / s, vy = q / s, vz = r / s;
            q /= p;
            r /= p;
            for (int j = k; j <= last; ++j) {
                double t = h[k][j] + q * h[k + 1][j];
                if (three) {
                    t += r * h[k + 2][j];
                    h[k + 2][j] -= t * vz;
                }
                h[k + 1][j] -= t * vy;
                h[k][j] -= t * vx;
            }
            for (int i = l; i <= std::min(last, k + 3); ++i) {
                double t = vx * h[i][k] + vy * h[i][k + 1];
                if (three) {
                    t += vz * h[i][k + 2];
                    h[i][k + 2] -= t * r;
                }
                h[i][k + 1] -= t * q;
                h[i][k] -= t;
            }
        }
    }
    return count;
}

int real_eigenvalues(double a[kN][kN], double roots[kN]) {
    to_hessenberg(a);
    return std::max(0, hessenberg_real_eigenvalues(a, roots));
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

    // x is an eigenvalue of A; its eigenvector is b itself. With b9 = 1, the structural rows give
    // b6 = x, b0 = x², b1 = x·b7, b2 = x·b8, leaving (b3, b4, b5, b7, b8) = (y², yz, z², y, z) to rows 0-5 of
    // (A - xI) b = 0, solved by least squares (Householder QR).
    double a[kN][kN];
    for (int r = 0; r < kN; ++r)
        for (int c = 0; c < kN; ++c) a[r][c] = A(r, c);
    double roots[kN];
    const int real = real_eigenvalues(a, roots);
    int count = 0;
    for (int k = 0; k < real; ++k) {
        const double x = roots[k];
        // Row r: sum_c A(r,c) b_c - x b_r = 0, written as C u = d in u = (b3, b4, b5, b7, b8).
        double C[6][5], d[6];
        for (int r = 0; r < 6; ++r) {
            const double diagonal[10] = {r == 0 ? x : 0, r == 1 ? x : 0, r == 2 ? x : 0, r == 3 ? x : 0, r == 4 ? x : 0, r == 5 ? x : 0, 0, 0, 0, 0};
            auto m = [&](int c) { return A(r, c) - diagonal[c]; };
            C[r][0] = m(3);
            C[r][1] = m(4);
            C[r][2] = m(5);
            C[r][3] = m(7) + x * m(1);
            C[r][4] = m(8) + x * m(2);
            d[r] = -(m(0) * x * x + m(6) * x + m(9));
        }
        // Householder QR of C (6x5), applied to d, then back substitution.
        bool singular = false;
        for (int j = 0; j < 5 && !singular; ++j) {
            double norm = 0;
            for (int r = j; r < 6; ++r) norm += C[r][j] * C[r][j];
            norm = std::sqrt(norm);
            if (!(norm > 1e-300)) {
                singular = true;
                break;
            }
            const double alpha = C[j][j] > 0 ? -norm : norm;
            double v[6] = {};
            for (int r = j; r < 6; ++r) v[r] = C[r][j];
            v[j] -= alpha;
            double vv = 0;
            for (int r = j; r < 6; ++r) vv += v[r] * v[r];
            if (!(vv > 0)) continue;
            for (int c = j; c < 5; ++c) {
                double s = 0;
                for (int r = j; r < 6; ++r) s += v[r] * C[r][c];
                s = 2 * s / vv;
                for (int r = j; r < 6; ++r) C[r][c] -= s * v[r];
            }
            double s = 0;
            for (int r = j; r < 6; ++r) s += v[r] * d[r];
            s = 2 * s / vv;
            for (int r = j; r < 6; ++r) d[r] -= s * v[r];
        }
        if (singular) continue;
        double u[5];
        for (int j = 4; j >= 0; --j) {
            double s = d[j];
            for (int c = j + 1; c < 5; ++c) s -= C[j][c] * u[c];
            u[j] = s / C[j][j];
        }
        const double y = u[3], z = u[4];
        cv::Matx<double, 10, 1> b(x * x, x * y, x * z, u[0], u[1], u[2], x, y, z, 1);
        cv::Matx<double, 10, 1> residual = A * b - b * x;
        if (!(cv::norm(residual) <= 1e-6 * cv::norm(b) * std::max(1.0, std::abs(x)))) continue;
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
