// The calibrated five-point minimal solver (Nistér 2004): the four-dimensional null space of the epipolar
// constraints, the ten cubic constraints of an essential matrix on it, eliminated down to a polynomial of
// degree ten in one unknown, whose real roots one Sturm sequence isolates; one or two Gauss-Newton steps on the
// ten constraints then restore the digits that polynomial loses near clustered roots. OpenCV 4.6 only exposes
// a solver inside findEssentialMat, at about 190 µs a call. The estimator's sampler spends nine tenths of its
// time here on hard pairs. Measured on random problems (best of 5 runs, 200,000 calls): 5.6 µs a call, where
// the first version of this solver (two Sturm sequences, Newton to 1e-15 on the polynomial) took 6.7 µs and
// the action-matrix form before it (a 10x10 eigenvalue problem) 13.4 µs. The price of the polynomial is the
// true solution lost (or off by more than 1e-6) in 42 of 200,000 exact random problems, where the action
// matrix lost none: a sampler draws another sample.
#include "../shim_internal.hpp"

#include <opencv2/core.hpp>

#include <algorithm>
#include <array>
#include <cmath>

namespace {

// Monomials x^a y^b z^c of degree <= 3. The constraints are built in Nistér's order: the ten monomials
// Gauss-Jordan elimination removes come first, then x·(z², z, 1), y·(z², z, 1) and (z³, z², z, 1), so that each
// eliminated row reads as a polynomial in x and y with coefficients in z.
struct Monomial {
    int x, y, z;
};
constexpr Monomial kLinear[4] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, 0, 0}};
constexpr Monomial kQuadratic[10] = {{2, 0, 0}, {1, 1, 0}, {1, 0, 1}, {0, 2, 0}, {0, 1, 1},
                                     {0, 0, 2}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, 0, 0}};
constexpr Monomial kCubic[20] = {{3, 0, 0}, {0, 3, 0}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}, {2, 0, 0}, {0, 2, 1},
                                 {0, 2, 0}, {1, 1, 1}, {1, 1, 0}, {1, 0, 2}, {1, 0, 1}, {1, 0, 0}, {0, 1, 2},
                                 {0, 1, 1}, {0, 1, 0}, {0, 0, 3}, {0, 0, 2}, {0, 0, 1}, {0, 0, 0}};

template <size_t N>
constexpr int position(const Monomial (&list)[N], int x, int y, int z) {
    for (size_t i = 0; i < N; ++i)
        if (list[i].x == x && list[i].y == y && list[i].z == z) return int(i);
    return -1;
}

// Where the product of two monomials lands, computed at compile time so the products below unroll.
struct Products {
    int linear[4][4];      // linear x linear -> quadratic
    int quadratic[10][4];  // quadratic x linear -> cubic
};
constexpr Products make_products() {
    Products p{};
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
            p.linear[i][j] = position(kQuadratic, kLinear[i].x + kLinear[j].x, kLinear[i].y + kLinear[j].y, kLinear[i].z + kLinear[j].z);
    for (int i = 0; i < 10; ++i)
        for (int j = 0; j < 4; ++j)
            p.quadratic[i][j] = position(kCubic, kQuadratic[i].x + kLinear[j].x, kQuadratic[i].y + kLinear[j].y, kQuadratic[i].z + kLinear[j].z);
    return p;
}
constexpr Products kProducts = make_products();

using Linear = std::array<double, 4>;
using Quadratic = std::array<double, 10>;
using Cubic = std::array<double, 20>;

inline Quadratic times(const Linear &a, const Linear &b) {
    Quadratic r{};
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) r[size_t(kProducts.linear[i][j])] += a[size_t(i)] * b[size_t(j)];
    return r;
}

inline void add_times(Cubic &r, const Quadratic &a, const Linear &b, double sign = 1) {
    for (int i = 0; i < 10; ++i) {
        const double s = sign * a[size_t(i)];
        for (int j = 0; j < 4; ++j) r[size_t(kProducts.quadratic[i][j])] += s * b[size_t(j)];
    }
}

inline Quadratic combine(const Quadratic &a, const Quadratic &b, double sign) {
    Quadratic r;
    for (size_t i = 0; i < 10; ++i) r[i] = a[i] + sign * b[i];
    return r;
}

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

// Univariate polynomials, lowest degree first.
constexpr int kDegree = 10;

// Horner's rule split into even and odd coefficients, p(t) = e(t²) + t o(t²): two independent chains of
// half the length (the evaluations here are bound by their chains' latency).
inline double horner(const double *c, int degree, double t) {
    const double t2 = t * t;
    int k = degree;
    double o = 0;
    if (k & 1) o = c[k--];
    double e = c[k];
    for (k -= 1; k >= 1; k -= 2) {
        o = o * t2 + c[k];
        e = e * t2 + c[k - 1];
    }
    return e + t * o;
}

// The Sturm sequence of a polynomial: p, p', then the negated remainders, down to a constant.
struct Sturm {
    double c[kDegree + 1][kDegree + 1];
    double reversed[kDegree + 1][kDegree + 1];  // the same coefficients, highest first
    int degree[kDegree + 1];
    int length = 0;

    // Each member is scaled to a largest coefficient of 1 (a positive factor keeps its signs), so that what
    // counts as a vanishing remainder is relative to what it was computed from.
    explicit Sturm(const double *p, int n) {
        std::copy(p, p + n + 1, c[0]);
        degree[0] = n;
        for (int i = 1; i <= n; ++i) c[1][i - 1] = i * p[i];
        degree[1] = n - 1;
        normalise(1);
        length = 2;
        while (degree[length - 1] > 0 && length <= kDegree) {
            const double *a = c[length - 2], *b = c[length - 1];
            const int da = degree[length - 2], db = degree[length - 1];
            double r[kDegree + 1];
            std::copy(a, a + da + 1, r);
            double size = 0;
            for (int i = 0; i <= da; ++i) size = std::max(size, std::abs(a[i]));
            const double lead = 1 / b[db];
            for (int k = da - db; k >= 0; --k) {
                const double q = r[k + db] * lead;
                for (int i = 0; i <= db; ++i) r[k + i] -= q * b[i];
                size = std::max(size, std::abs(q));
            }
            int dr = db - 1;
            while (dr >= 0 && std::abs(r[dr]) <= 1e-13 * size) --dr;
            if (dr < 0) break;  // a common factor: a multiple root, counted once
            for (int i = 0; i <= dr; ++i) c[length][i] = -r[i];
            degree[length] = dr;
            normalise(length);
            ++length;
        }
        for (int k = 0; k < length; ++k)
            for (int i = 0; i <= degree[k]; ++i) reversed[k][i] = c[k][degree[k] - i];
    }

    void normalise(int k) {
        double size = 0;
        for (int i = 0; i <= degree[k]; ++i) size = std::max(size, std::abs(c[k][i]));
        if (size > 0) {
            const double inverse = 1 / size;
            for (int i = 0; i <= degree[k]; ++i) c[k][i] *= inverse;
        }
    }

    // Sign changes along the sequence at t = u or, with `reciprocal`, at t = 1/u: there each member is
    // evaluated as u^d p(1/u) (its coefficients reversed, so |u| <= 1 keeps the evaluation well scaled),
    // whose sign is p's times sign(u)^d; u = ±0 is t = ±infinity. Negated for `reciprocal`, so that on
    // either axis the roots within (u1, u2] number changes(u1) - changes(u2).
    int changes(double u, bool reciprocal) const {
        int count = 0;
        double last = 0;
        const bool negative = std::signbit(u);
        for (int k = 0; k < length; ++k) {
            const double *m = c[k];
            const int d = degree[k];
            double v;
            if (reciprocal) {
                v = horner(reversed[k], d, u);
                if (negative && (d & 1)) v = -v;
            } else {
                v = horner(m, d, u);
            }
            if (v == 0) continue;
            if (last != 0 && (v > 0) != (last > 0)) ++count;
            last = v;
        }
        return reciprocal ? -count : count;
    }
};

// The root of p in (a, b), where p changes sign: Newton steps, bisection whenever one leaves the bracket,
// from the secant point. It stops at a step or a bracket below 1e-8 of the root: the solver's Gauss-Newton
// step on the ten constraints (polish_solution) takes it the rest of the way.
double polish(const double *p, int n, double a, double b) {
    double dp[kDegree];
    for (int i = 1; i <= n; ++i) dp[i - 1] = i * p[i];
    double fa = horner(p, n, a);
    const double fb = horner(p, n, b);
    double t = (a * fb - b * fa) / (fb - fa);
    if (!(t > a && t < b)) t = 0.5 * (a + b);
    for (int iteration = 0; iteration < 100; ++iteration) {
        const double f = horner(p, n, t);
        if (f == 0) return t;
        if ((f > 0) == (fa > 0)) {
            a = t;
            fa = f;
        } else {
            b = t;
        }
        const double d = horner(dp, n - 1, t);
        double next = d != 0 ? t - f / d : 0.5 * (a + b);
        if (!(next > a && next < b)) next = 0.5 * (a + b);
        const double scale = 1e-8 * std::max(1.0, std::abs(t));
        if (std::abs(next - t) <= scale || b - a <= scale) return next;
        t = next;
    }
    return t;
}

// The distinct roots of `p` (degree n) in (lo, hi), isolated by `sturm` (on the reciprocal axis when
// `reciprocal`: then p is the reversed polynomial, whose roots are the reciprocals), polished by Newton.
int isolate(const Sturm &sturm, bool reciprocal, const double *p, int n, double lo, double hi, int v_lo, int v_hi, double *roots, int room) {
    struct Interval {
        double a, b;
        int va, vb;
    };
    Interval stack[64];
    int top = 0, count = 0;
    stack[top++] = {lo, hi, v_lo, v_hi};
    while (top > 0 && count < room) {
        const Interval i = stack[--top];
        const int inside = i.va - i.vb;
        if (inside <= 0) continue;
        if (inside == 1 && (horner(p, n, i.a) > 0) != (horner(p, n, i.b) > 0)) {
            roots[count++] = polish(p, n, i.a, i.b);
            continue;
        }
        const double m = 0.5 * (i.a + i.b);
        if (!(i.b - i.a > 1e-14) || top + 2 > 64) {
            roots[count++] = m;  // a multiple (or numerically clustered) root
            continue;
        }
        const int vm = sturm.changes(m, reciprocal);
        stack[top++] = {i.a, m, i.va, vm};
        stack[top++] = {m, i.b, vm, i.vb};
    }
    return count;
}

// The distinct real roots of c[0] + c[1] t + ... + c[n] t^n: those within [-1, 1] directly, the others as
// reciprocals of the roots of the reversed polynomial (t^n p(1/t)) within (-1, 1). One Sturm sequence
// isolates both, the outer ones on the reciprocal axis, so every evaluation stays within its coefficients' scale.
int real_roots(const double *coefficients, int n, double roots[kDegree]) {
    double largest = 0;
    for (int i = 0; i <= n; ++i) largest = std::max(largest, std::abs(coefficients[i]));
    if (!(largest > 0) || !std::isfinite(largest)) return 0;
    int high = n, low = 0;
    while (high > 0 && std::abs(coefficients[high]) <= 1e-14 * largest) --high;  // roots at infinity
    while (low < high && std::abs(coefficients[low]) <= 1e-14 * largest) ++low;  // roots at zero
    int count = 0;
    if (low > 0) roots[count++] = 0;
    double p[kDegree + 1], q[kDegree + 1], found[kDegree];
    const int d = high - low;
    if (d <= 0) return count;
    const double inverse = 1 / largest;
    for (int i = 0; i <= d; ++i) p[i] = coefficients[low + i] * inverse;
    for (int i = 0; i <= d; ++i) q[i] = p[d - i];
    const Sturm sturm(p, d);
    const int at_minus_one = sturm.changes(-1, false), at_one = sturm.changes(1, false);
    const int room = kDegree - count;
    const int inner = isolate(sturm, false, p, d, -1, 1, at_minus_one, at_one, found, room);
    for (int i = 0; i < inner; ++i) roots[count++] = found[i];
    // t in (-inf, -1) is u = 1/t in (-1, -0); t in (1, inf) is u in (+0, 1).
    const int outer_negative = isolate(sturm, true, q, d, -1, -0.0, -at_minus_one, sturm.changes(-0.0, true), found, kDegree - count);
    for (int i = 0; i < outer_negative; ++i)
        if (found[i] != 0) roots[count++] = 1 / found[i];
    const int outer_positive = isolate(sturm, true, q, d, 0.0, 1, sturm.changes(0.0, true), -at_one, found, kDegree - count);
    for (int i = 0; i < outer_positive; ++i)
        if (found[i] != 0) roots[count++] = 1 / found[i];
    return count;
}

// Coefficients, lowest first, of a product of two univariate polynomials.
template <int A, int B>
std::array<double, A + B + 1> product(const std::array<double, A + 1> &a, const std::array<double, B + 1> &b) {
    std::array<double, A + B + 1> r{};
    for (int i = 0; i <= A; ++i)
        for (int j = 0; j <= B; ++j) r[size_t(i + j)] += a[size_t(i)] * b[size_t(j)];
    return r;
}

// Gauss-Newton on all ten eliminated constraints in (x, y, z): the degree-ten polynomial loses digits near
// clustered roots, the constraints themselves do not.
void polish_solution(const double M[10][20], double &x, double &y, double &z) {
    for (int iteration = 0; iteration < 2; ++iteration) {
        const double px[4] = {1, x, x * x, x * x * x}, py[4] = {1, y, y * y, y * y * y}, pz[4] = {1, z, z * z, z * z * z};
        double value[20], dx[20], dy[20], dz[20];
        for (int m = 0; m < 20; ++m) {
            const Monomial &e = kCubic[m];
            value[m] = px[e.x] * py[e.y] * pz[e.z];
            dx[m] = e.x ? e.x * px[e.x - 1] * py[e.y] * pz[e.z] : 0;
            dy[m] = e.y ? e.y * px[e.x] * py[e.y - 1] * pz[e.z] : 0;
            dz[m] = e.z ? e.z * px[e.x] * py[e.y] * pz[e.z - 1] : 0;
        }
        double JtJ[3][3] = {}, Jtf[3] = {};
        for (int r = 0; r < 10; ++r) {
            double f = value[r], j[3] = {dx[r], dy[r], dz[r]};
            for (int m = 10; m < 20; ++m) {
                f += M[r][m] * value[m];
                j[0] += M[r][m] * dx[m];
                j[1] += M[r][m] * dy[m];
                j[2] += M[r][m] * dz[m];
            }
            for (int a = 0; a < 3; ++a) {
                Jtf[a] += j[a] * f;
                for (int b = a; b < 3; ++b) JtJ[a][b] += j[a] * j[b];
            }
        }
        // The normal equations by Cramer's rule (symmetric: the upper triangle was accumulated).
        const double a00 = JtJ[0][0], a01 = JtJ[0][1], a02 = JtJ[0][2], a11 = JtJ[1][1], a12 = JtJ[1][2], a22 = JtJ[2][2];
        const double c00 = a11 * a22 - a12 * a12, c01 = a02 * a12 - a01 * a22, c02 = a01 * a12 - a02 * a11;
        const double det = a00 * c00 + a01 * c01 + a02 * c02;
        if (!(std::abs(det) > 0) || !std::isfinite(det)) return;
        const double c11 = a00 * a22 - a02 * a02, c12 = a01 * a02 - a00 * a12, c22 = a00 * a11 - a01 * a01;
        const double sx = -(c00 * Jtf[0] + c01 * Jtf[1] + c02 * Jtf[2]) / det;
        const double sy = -(c01 * Jtf[0] + c11 * Jtf[1] + c12 * Jtf[2]) / det;
        const double sz = -(c02 * Jtf[0] + c12 * Jtf[1] + c22 * Jtf[2]) / det;
        if (!std::isfinite(sx + sy + sz)) return;
        x += sx;
        y += sy;
        z += sz;
        if (std::abs(sx) + std::abs(sy) + std::abs(sz) <= 1e-9 * (1 + std::abs(x) + std::abs(y) + std::abs(z))) return;
    }
}

// a d − b c for polynomials a, c of degree A and b, d of degree B: a 2x2 minor of the matrix in z.
template <int A, int B>
std::array<double, A + B + 1> cross_difference(const std::array<double, A + 1> &a, const std::array<double, B + 1> &b,
                                               const std::array<double, A + 1> &c, const std::array<double, B + 1> &d) {
    std::array<double, A + B + 1> r = product<A, B>(a, d);
    const std::array<double, A + B + 1> s = product<B, A>(b, c);
    for (size_t i = 0; i < r.size(); ++i) r[i] -= s[i];
    return r;
}

}  // namespace

namespace rp {

int five_point(const cv::Vec3d x1[5], const cv::Vec3d x2[5], cv::Matx33d solutions[10]) {
    cv::Matx<double, 4, 9> basis;
    if (!null_space(x1, x2, basis)) return 0;

    // E = x X + y Y + z Z + W, entry by entry.
    Linear E[3][3];
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            for (int k = 0; k < 4; ++k) E[r][c][size_t(k)] = basis(k, 3 * r + c);

    // Ten cubic constraints: det(E) = 0 and 2 E Eᵀ E − trace(E Eᵀ) E = 0, the latter as Q E with
    // Q = 2 E Eᵀ − trace(E Eᵀ) I (E Eᵀ is symmetric: six distinct entries).
    Quadratic EEt[3][3];
    for (int i = 0; i < 3; ++i)
        for (int j = i; j < 3; ++j) {
            Quadratic s = times(E[i][0], E[j][0]);
            const Quadratic s1 = times(E[i][1], E[j][1]), s2 = times(E[i][2], E[j][2]);
            for (size_t k = 0; k < 10; ++k) s[k] += s1[k] + s2[k];
            EEt[i][j] = EEt[j][i] = s;
        }
    Quadratic trace;
    for (size_t k = 0; k < 10; ++k) trace[k] = EEt[0][0][k] + EEt[1][1][k] + EEt[2][2][k];
    alignas(32) double M[10][20];
    {
        Cubic det{};
        add_times(det, combine(times(E[1][1], E[2][2]), times(E[1][2], E[2][1]), -1), E[0][0]);
        add_times(det, combine(times(E[1][0], E[2][2]), times(E[1][2], E[2][0]), -1), E[0][1], -1);
        add_times(det, combine(times(E[1][0], E[2][1]), times(E[1][1], E[2][0]), -1), E[0][2]);
        std::copy(det.begin(), det.end(), M[0]);
    }
    for (int i = 0; i < 3; ++i) {
        Quadratic Q[3];
        for (int k = 0; k < 3; ++k) {
            for (size_t m = 0; m < 10; ++m) Q[k][m] = 2 * EEt[i][k][m] - (i == k ? trace[m] : 0);
        }
        for (int j = 0; j < 3; ++j) {
            Cubic row{};
            for (int k = 0; k < 3; ++k) add_times(row, Q[k], E[k][j]);
            std::copy(row.begin(), row.end(), M[1 + 3 * i + j]);
        }
    }

    // Gauss-Jordan with partial pivoting on the first ten columns: M = [I | B]. Whole rows are updated
    // (fixed bounds vectorise); what lands in the eliminated columns is never read again.
    for (int col = 0; col < 10; ++col) {
        int pivot = col;
        for (int r = col + 1; r < 10; ++r)
            if (std::abs(M[r][col]) > std::abs(M[pivot][col])) pivot = r;
        if (!(std::abs(M[pivot][col]) > 1e-14)) return 0;
        if (pivot != col)
            for (int m = 0; m < 20; ++m) std::swap(M[pivot][m], M[col][m]);
        const double inv = 1.0 / M[col][col];
        for (int m = 0; m < 20; ++m) M[col][m] *= inv;
        for (int r = 0; r < 10; ++r) {
            if (r == col) continue;
            const double f = M[r][col];
            for (int m = 0; m < 20; ++m) M[r][m] -= f * M[col][m];
        }
    }

    // Row r says: monomial r + x·(B0 z² + B1 z + B2) + y·(B3 z² + B4 z + B5) + (B6 z³ + B7 z² + B8 z + B9) = 0.
    // The rows of x²z and x² (4, 5) give k = row4 − z·row5, free of x²z; likewise l from y²z, y² (6, 7) and m
    // from xyz, xy (8, 9): three equations linear in (x, y, 1) whose 3x3 matrix of polynomials in z must be
    // singular, a polynomial of degree ten in z.
    std::array<double, 4> Bx[3], By[3];
    std::array<double, 5> B1[3];
    for (int e = 0; e < 3; ++e) {
        const double *u = M[4 + 2 * e] + 10, *v = M[5 + 2 * e] + 10;
        Bx[e] = {u[2], u[1] - v[2], u[0] - v[1], -v[0]};
        By[e] = {u[5], u[4] - v[5], u[3] - v[4], -v[3]};
        B1[e] = {u[9], u[8] - v[9], u[7] - v[8], u[6] - v[7], -v[6]};
    }
    // det = Bx0 (By1 B12 − B11 By2) − By0 (Bx1 B12 − B11 Bx2) + B10 (Bx1 By2 − By1 Bx2)
    const std::array<double, 11> t0 = product<3, 7>(Bx[0], cross_difference<3, 4>(By[1], B1[1], By[2], B1[2]));
    const std::array<double, 11> t1 = product<3, 7>(By[0], cross_difference<3, 4>(Bx[1], B1[1], Bx[2], B1[2]));
    const std::array<double, 11> t2 = product<4, 6>(B1[0], cross_difference<3, 3>(Bx[1], By[1], Bx[2], By[2]));
    double polynomial[kDegree + 1];
    for (size_t i = 0; i <= kDegree; ++i) polynomial[i] = t0[i] - t1[i] + t2[i];

    double roots[kDegree];
    const int real = real_roots(polynomial, kDegree, roots);
    int count = 0;
    for (int k = 0; k < real; ++k) {
        const double z = roots[k];
        cv::Vec3d rows[3];
        for (int e = 0; e < 3; ++e) {
            rows[e] = cv::Vec3d(horner(Bx[e].data(), 3, z), horner(By[e].data(), 3, z), horner(B1[e].data(), 4, z));
        }
        // (x, y, 1) spans the null space: the largest cross product of two rows.
        cv::Vec3d best = rows[0].cross(rows[1]);
        for (const cv::Vec3d &candidate : {rows[0].cross(rows[2]), rows[1].cross(rows[2])})
            if (cv::norm(candidate) > cv::norm(best)) best = candidate;
        if (!(std::abs(best[2]) > 1e-12 * cv::norm(best))) continue;
        double x = best[0] / best[2], y = best[1] / best[2], zz = z;
        polish_solution(M, x, y, zz);
        cv::Matx33d e;
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c)
                e(r, c) = x * basis(0, 3 * r + c) + y * basis(1, 3 * r + c) + zz * basis(2, 3 * r + c) + basis(3, 3 * r + c);
        const double n = cv::norm(e);
        if (!(n > 0) || !std::isfinite(n)) continue;
        solutions[count++] = e * (1.0 / n);
    }
    return count;
}

}  // namespace rp
