// The correspondences as the focal length's stages read them, the one-dimensional searches they share, and the
// profile cost the refinement minimises (focal.hpp).
#include "focal.hpp"

#include <opencv2/calib3d.hpp>

namespace rp::focal {

Pair::Pair(const double *reference_xy, const double *current_xy, int n, int width, int height, const rp_camera &camera)
    : reference(rp::to_points(reference_xy, n)), current(rp::to_points(current_xy, n)), camera(camera),
      s((camera.K[0] + camera.K[4]) / 2), width(width), height(height), centre((width - 1) / 2.0, (height - 1) / 2.0) {
    rp::check_finite(reference, "reference");
    rp::check_finite(current, "current");
    ideal = rp::normalised(current, camera);
    for (auto &p : ideal) p *= s;
}

std::vector<cv::Point2d> Pair::about(cv::Point2d principal) const {
    std::vector<cv::Point2d> out(reference.size());
    for (size_t i = 0; i < reference.size(); ++i) out[i] = reference[i] - cv::Point2d(principal.x, principal.y);
    return out;
}

rp_camera Pair::reference_camera(double f, cv::Point2d principal) const {
    rp_camera c = rp_camera{};
    const double K[9] = {f, 0, principal.x, 0, f, principal.y, 0, 0, 1};
    std::copy(K, K + 9, c.K);
    c.width = width;
    c.height = height;
    return c;
}

double golden(const std::function<double(double)> &cost, double lo, double hi, int steps) {
    const double phi = (std::sqrt(5.0) - 1) / 2;
    double a = std::log(lo), b = std::log(hi);
    double c = b - phi * (b - a), d = a + phi * (b - a);
    double gc = cost(std::exp(c)), gd = cost(std::exp(d));
    for (int k = 0; k < steps; ++k) {
        if (gc < gd) {
            b = d, d = c, gd = gc;
            c = b - phi * (b - a), gc = cost(std::exp(c));
        } else {
            a = c, c = d, gc = gd;
            d = a + phi * (b - a), gd = cost(std::exp(d));
        }
    }
    return std::exp((a + b) / 2);
}

void pixel_residuals2(const cv::Matx33d &E, const rp::pose::Bearings &x, double f, double fx, double fy, std::vector<double> &out) {
    out.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        const cv::Vec3d Ea = E * x.a[i], Etb = E.t() * x.b[i];
        const double den = (Ea[0] / fx) * (Ea[0] / fx) + (Ea[1] / fy) * (Ea[1] / fy) + (Etb[0] / f) * (Etb[0] / f) + (Etb[1] / f) * (Etb[1] / f);
        const double num = x.b[i].dot(Ea);
        out[i] = den > 0 ? num * num / den : 0;
    }
}

Profile::Profile(const Pair &pair, bool rotation, const std::vector<uchar> &mask, const rp::pose::Pose &start)
    : rotation(rotation), parameters(rotation ? 4 : 6), pose(start), principal(pair.centre), pair(pair) {
    for (size_t i = 0; i < mask.size(); ++i) {
        if (mask[i]) use.push_back(i);
    }
}

double Profile::operator()(double f) { return rotation ? rotation_cost(f) : relative_cost(f); }

// The rotation best aligning the bearings (Kabsch), its reprojection errors in the current camera's pixels.
double Profile::rotation_cost(double f) {
    const double fx = pair.camera.K[0], fy = pair.camera.K[4];
    cv::Matx33d M = cv::Matx33d::zeros();
    std::vector<cv::Vec3d> from, to;
    for (size_t i : use) {
        const cv::Point2d a = pair.reference[i] - cv::Point2d(principal.x, principal.y), &b = pair.ideal[i];
        from.push_back(cv::normalize(cv::Vec3d(a.x / f, a.y / f, 1)));
        to.push_back(cv::normalize(cv::Vec3d(b.x / pair.s, b.y / pair.s, 1)));
        M += to.back() * from.back().t();
    }
    cv::Matx33d U, Vt;
    cv::Vec3d w;
    cv::SVD::compute(M, w, U, Vt);
    const double sign = cv::determinant(U * Vt) < 0 ? -1 : 1;
    const cv::Matx33d R = U * cv::Matx33d(1, 0, 0, 0, 1, 0, 0, 0, sign) * Vt;
    residuals.clear();
    double cost = 0;
    for (size_t k = 0; k < from.size(); ++k) {
        const cv::Vec3d y = R * from[k];
        const double dx = (y[0] / y[2] - to[k][0] / to[k][2]) * fx, dy = (y[1] / y[2] - to[k][1] / to[k][2]) * fy;
        residuals.push_back(std::sqrt(dx * dx + dy * dy));
        cost += dx * dx + dy * dy;
    }
    return cost;
}

// The relative pose refined from the last one found, its Sampson residuals in both images' pixels.
double Profile::relative_cost(double f) {
    std::vector<cv::Point2d> reference, current;
    for (size_t i : use) reference.push_back(pair.reference[i]), current.push_back(pair.current[i]);
    const rp::pose::Bearings x = rp::pose::undistorted(reference, current, pair.reference_camera(f, principal), pair.camera);
    rp::pose::refine(x, HUGE_VAL, pose, 40);
    pixel_residuals2(pose.essential(), x, f, pair.camera.K[0], pair.camera.K[4], residuals);
    double cost = 0;
    for (double &r : residuals) cost += r, r = std::sqrt(r);
    return cost;
}

}  // namespace rp::focal
