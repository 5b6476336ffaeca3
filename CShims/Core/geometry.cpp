#include "shim_internal.hpp"

#include <opencv2/calib3d.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace {

void check_finite(const std::vector<cv::Point2d> &points, const char *which) {
    for (size_t i = 0; i < points.size(); ++i) {
        if (!std::isfinite(points[i].x) || !std::isfinite(points[i].y)) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("%s point %zu is not finite", which, i));
        }
    }
}

std::vector<cv::Point2d> normalised(const std::vector<cv::Point2d> &pixels, const rp_camera &camera) {
    std::vector<cv::Point2d> out;
    cv::undistortPoints(pixels, out, rp::camera_matrix(camera), rp::distortion_vector(camera));
    return out;
}

double mean_focal(const rp_camera &a, const rp_camera &b) { return 0.25 * (a.K[0] + a.K[4] + b.K[0] + b.K[4]); }

// First-order geometric error of a correspondence against E, in normalised units.
double sampson_squared(const cv::Matx33d &E, const cv::Point2d &a, const cv::Point2d &b) {
    cv::Vec3d x1(a.x, a.y, 1), x2(b.x, b.y, 1);
    cv::Vec3d Ex1 = E * x1, Etx2 = E.t() * x2;
    double num = x2.dot(Ex1);
    double den = Ex1[0] * Ex1[0] + Ex1[1] * Ex1[1] + Etx2[0] * Etx2[0] + Etx2[1] * Etx2[1];
    return den > 0 ? num * num / den : 0;
}

cv::Matx33d skew(const cv::Vec3d &t) { return cv::Matx33d(0, -t[2], t[1], t[2], 0, -t[0], -t[1], t[0], 0); }

// Pose on the manifold: a rotation increment (Rodrigues) and a unit translation moved in its tangent plane.
struct PoseParameterisation {
    cv::Matx33d R0;
    cv::Vec3d t0, e1, e2;

    PoseParameterisation(const cv::Matx33d &R, const cv::Vec3d &t) : R0(R), t0(t / cv::norm(t)) {
        cv::Vec3d helper = std::abs(t0[0]) < 0.9 ? cv::Vec3d(1, 0, 0) : cv::Vec3d(0, 1, 0);
        e1 = t0.cross(helper);
        e1 /= cv::norm(e1);
        e2 = t0.cross(e1);
    }

    void pose(const double *p, cv::Matx33d &R, cv::Vec3d &t) const {
        cv::Matx33d dR;
        cv::Rodrigues(cv::Vec3d(p[0], p[1], p[2]), dR);
        R = dR * R0;
        t = t0 + p[3] * e1 + p[4] * e2;
        t /= cv::norm(t);
    }
};

double signed_sampson(const cv::Matx33d &E, const cv::Point2d &a, const cv::Point2d &b) {
    cv::Vec3d x1(a.x, a.y, 1), x2(b.x, b.y, 1);
    cv::Vec3d Ex1 = E * x1, Etx2 = E.t() * x2;
    double den = std::sqrt(Ex1[0] * Ex1[0] + Ex1[1] * Ex1[1] + Etx2[0] * Etx2[0] + Etx2[1] * Etx2[1]);
    return den > 0 ? x2.dot(Ex1) / den : 0;
}

// Sampson residuals of the selected correspondences, with a numeric Jacobian over the 5 pose parameters.
class SampsonCallback : public cv::LMSolver::Callback {
public:
    SampsonCallback(const PoseParameterisation &pose, std::vector<cv::Point2d> a, std::vector<cv::Point2d> b)
        : pose_(pose), a_(std::move(a)), b_(std::move(b)) {}

    bool compute(cv::InputArray param, cv::OutputArray err, cv::OutputArray J) const override {
        cv::Mat p = param.getMat();
        const double *v = p.ptr<double>();
        int n = int(a_.size());
        err.create(n, 1, CV_64F);
        cv::Mat e = err.getMat();
        residuals(v, e.ptr<double>());
        if (J.needed()) {
            J.create(n, 5, CV_64F);
            cv::Mat jac = J.getMat();
            std::vector<double> shifted(static_cast<size_t>(n));
            for (int k = 0; k < 5; ++k) {
                double q[5] = {v[0], v[1], v[2], v[3], v[4]};
                const double h = 1e-7;
                q[k] += h;
                residuals(q, shifted.data());
                for (int i = 0; i < n; ++i) jac.at<double>(i, k) = (shifted[size_t(i)] - e.at<double>(i)) / h;
            }
        }
        return true;
    }

private:
    void residuals(const double *p, double *out) const {
        cv::Matx33d R;
        cv::Vec3d t;
        pose_.pose(p, R, t);
        cv::Matx33d E = skew(t) * R;
        for (size_t i = 0; i < a_.size(); ++i) out[i] = signed_sampson(E, a_[i], b_[i]);
    }

    PoseParameterisation pose_;
    std::vector<cv::Point2d> a_, b_;
};

// Levenberg-Marquardt on the Sampson error of the points within `threshold` (normalised units), twice so the
// inlier set follows the improved model; the minimal-sample model RANSAC returns is noticeably less accurate.
void refine_pose(const std::vector<cv::Point2d> &a, const std::vector<cv::Point2d> &b, double threshold,
                 cv::Matx33d &R, cv::Vec3d &t) {
    for (int pass = 0; pass < 2; ++pass) {
        cv::Matx33d E = skew(t) * R;
        std::vector<cv::Point2d> ia, ib;
        for (size_t i = 0; i < a.size(); ++i) {
            if (std::abs(signed_sampson(E, a[i], b[i])) < threshold) {
                ia.push_back(a[i]);
                ib.push_back(b[i]);
            }
        }
        if (ia.size() < 6) return;
        PoseParameterisation parameterisation(R, t);
        cv::Mat params = cv::Mat::zeros(5, 1, CV_64F);
        cv::Ptr<cv::LMSolver> solver =
            cv::LMSolver::create(cv::makePtr<SampsonCallback>(parameterisation, ia, ib), 50);
        solver->run(params);
        parameterisation.pose(params.ptr<double>(), R, t);
    }
}

}  // namespace

namespace rp {

std::vector<cv::Point2d> to_points(const double *xy, int n) {
    if (n < 0) fail(RP_ERR_INVALID_ARGUMENT, cv::format("negative point count %d", n));
    if (n > 0 && xy == nullptr) fail(RP_ERR_INVALID_ARGUMENT, "point array is NULL");
    std::vector<cv::Point2d> points(size_t(std::max(n, 0)));
    for (int i = 0; i < n; ++i) points[size_t(i)] = cv::Point2d(xy[2 * i], xy[2 * i + 1]);
    return points;
}

cv::Mat camera_matrix(const rp_camera &camera) { return cv::Mat(3, 3, CV_64F, const_cast<double *>(camera.K)).clone(); }

cv::Mat distortion_vector(const rp_camera &camera) {
    int n = camera.distortion_count;
    if (n == 0) return cv::Mat();
    if (n != 4 && n != 5 && n != 8 && n != 12 && n != 14) {
        fail(RP_ERR_INVALID_ARGUMENT, cv::format("distortion must have 4, 5, 8, 12 or 14 coefficients, got %d", n));
    }
    return cv::Mat(1, n, CV_64F, const_cast<double *>(camera.distortion)).clone();
}

cv::Mat find_homography(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current,
                        const rp_robust_params &params, cv::Mat &mask) {
    if (reference.size() < 4) {
        fail(RP_ERR_ESTIMATION, cv::format("homography needs at least 4 matches, got %zu", reference.size()));
    }
    check_finite(reference, "reference");
    check_finite(current, "current");
    cv::Mat H = cv::findHomography(reference, current, params.method, params.threshold, mask, params.max_iterations,
                                   params.confidence);
    if (H.empty()) fail(RP_ERR_ESTIMATION, cv::format("no homography found from %zu matches", reference.size()));
    return H;
}

void estimate_relative_pose(const std::vector<cv::Point2d> &reference, const std::vector<cv::Point2d> &current,
                            const rp_camera &reference_camera, const rp_camera &current_camera,
                            const rp_robust_params &params, rp_relative_pose &pose, std::vector<uint8_t> &inliers,
                            std::vector<double> *sampson_pixels) {
    size_t n = reference.size();
    if (n < 5) fail(RP_ERR_ESTIMATION, cv::format("essential matrix needs at least 5 matches, got %zu", n));
    check_finite(reference, "reference");
    check_finite(current, "current");
    std::vector<cv::Point2d> a = normalised(reference, reference_camera);
    std::vector<cv::Point2d> b = normalised(current, current_camera);
    double focal = mean_focal(reference_camera, current_camera);
    cv::Mat I = cv::Mat::eye(3, 3, CV_64F);

    cv::Mat ransac_mask;
    cv::Mat E_all = cv::findEssentialMat(a, b, I, params.method, params.confidence, params.threshold / focal,
                                         params.max_iterations, ransac_mask);
    if (E_all.empty() || E_all.rows % 3 != 0) fail(RP_ERR_ESTIMATION, cv::format("no essential matrix found from %zu matches", n));
    if (ransac_mask.empty()) ransac_mask = cv::Mat::ones(int(n), 1, CV_8U);

    // With exactly five points the solver may return several candidates: keep the one most points support.
    int best_front = -1;
    cv::Mat best_R, best_t, best_E, best_mask;
    for (int k = 0; k < E_all.rows / 3; ++k) {
        cv::Mat E = E_all.rowRange(3 * k, 3 * k + 3).clone();
        cv::Mat R, t, mask = ransac_mask.clone();
        int front = cv::recoverPose(E, a, b, I, R, t, mask);
        if (front > best_front) {
            best_front = front;
            best_R = R;
            best_t = t;
            best_E = E;
            best_mask = mask;
        }
    }
    if (best_front <= 0) fail(RP_ERR_ESTIMATION, cv::format("no pose puts the %zu matches in front of both cameras", n));

    if (params.refine) {
        cv::Matx33d R(best_R);
        cv::Vec3d t(best_t.at<double>(0), best_t.at<double>(1), best_t.at<double>(2));
        refine_pose(a, b, params.threshold / focal, R, t);
        best_E = cv::Mat(skew(t) * R);
        ransac_mask = cv::Mat::zeros(int(n), 1, CV_8U);
        for (size_t i = 0; i < n; ++i) {
            ransac_mask.at<uint8_t>(int(i)) = std::abs(signed_sampson(cv::Matx33d(best_E), a[i], b[i])) < params.threshold / focal;
        }
        best_mask = ransac_mask.clone();
        best_front = cv::recoverPose(best_E, a, b, I, best_R, best_t, best_mask);
        if (best_front <= 0) fail(RP_ERR_ESTIMATION, "refined pose puts no match in front of both cameras");
    }

    cv::Matx33d E(best_E);
    double sum = 0;
    int count = 0;
    if (sampson_pixels) sampson_pixels->assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
        double squared = sampson_squared(E, a[i], b[i]);
        if (sampson_pixels) (*sampson_pixels)[i] = std::sqrt(squared) * focal;
        if (ransac_mask.at<uint8_t>(int(i))) {
            sum += squared;
            ++count;
        }
    }
    std::memcpy(pose.R, best_R.ptr<double>(), 9 * sizeof(double));
    cv::Vec3d t(best_t.at<double>(0), best_t.at<double>(1), best_t.at<double>(2));
    t /= cv::norm(t);
    for (int i = 0; i < 3; ++i) pose.t[i] = t[i];
    pose.inliers = count;
    pose.in_front = best_front;
    pose.sampson_rms_pixels = count > 0 ? std::sqrt(sum / count) * focal : 0;
    inliers.assign(n, 0);
    for (size_t i = 0; i < n; ++i) inliers[i] = best_mask.at<uint8_t>(int(i)) ? 1 : 0;
}

}  // namespace rp

extern "C" {

int rp_find_homography(const double *reference_xy, const double *current_xy, int n, const rp_robust_params *params,
                       double homography[9], uint8_t *inliers, size_t inliers_capacity, int *inlier_count,
                       rp_status *status) {
    return rp::guarded(status, [&] {
        rp::check_capacity(inliers, inliers_capacity, n, "inliers");
        cv::Mat mask;
        cv::Mat H = rp::find_homography(rp::to_points(reference_xy, n), rp::to_points(current_xy, n), *params, mask);
        cv::Mat H64;
        H.convertTo(H64, CV_64F);
        std::memcpy(homography, H64.ptr<double>(), 9 * sizeof(double));
        int count = 0;
        for (int i = 0; i < n; ++i) {
            uint8_t in = mask.empty() ? 1 : (mask.at<uint8_t>(i) ? 1 : 0);
            if (inliers) inliers[i] = in;
            count += in;
        }
        if (inlier_count) *inlier_count = count;
    });
}

int rp_estimate_relative_pose(const double *reference_xy, const double *current_xy, int n,
                              const rp_camera *reference_camera, const rp_camera *current_camera,
                              const rp_robust_params *params, rp_relative_pose *pose, uint8_t *inliers,
                              size_t inliers_capacity, double *sampson_pixels, size_t sampson_capacity,
                              rp_status *status) {
    return rp::guarded(status, [&] {
        rp::check_capacity(inliers, inliers_capacity, n, "inliers");
        rp::check_capacity(sampson_pixels, sampson_capacity, n, "sampson_pixels");
        std::vector<uint8_t> mask;
        std::vector<double> sampson;
        rp::estimate_relative_pose(rp::to_points(reference_xy, n), rp::to_points(current_xy, n), *reference_camera,
                                   *current_camera, *params, *pose, mask, &sampson);
        if (inliers) std::memcpy(inliers, mask.data(), mask.size());
        if (sampson_pixels) std::memcpy(sampson_pixels, sampson.data(), sampson.size() * sizeof(double));
    });
}

int rp_rotation_from_bearings(const double *reference_xy, const double *current_xy, const uint8_t *selected, int n,
                              const rp_camera *reference_camera, const rp_camera *current_camera, double R[9],
                              double *residuals, size_t residuals_capacity, rp_status *status) {
    return rp::guarded(status, [&] {
        rp::check_capacity(residuals, residuals_capacity, n, "residuals");
        std::vector<cv::Point2d> a = normalised(rp::to_points(reference_xy, n), *reference_camera);
        std::vector<cv::Point2d> b = normalised(rp::to_points(current_xy, n), *current_camera);
        cv::Matx33d M = cv::Matx33d::zeros();
        int used = 0;
        for (int i = 0; i < n; ++i) {
            if (selected && !selected[i]) continue;
            cv::Vec3d ra(a[size_t(i)].x, a[size_t(i)].y, 1), rb(b[size_t(i)].x, b[size_t(i)].y, 1);
            ra /= cv::norm(ra);
            rb /= cv::norm(rb);
            M += rb * ra.t();
            ++used;
        }
        if (used < 2) rp::fail(RP_ERR_ESTIMATION, cv::format("rotation needs at least 2 correspondences, got %d", used));
        cv::Mat U, S, Vt;
        cv::SVD::compute(cv::Mat(M), S, U, Vt);
        cv::Mat D = cv::Mat::eye(3, 3, CV_64F);
        D.at<double>(2, 2) = cv::determinant(U * Vt) < 0 ? -1 : 1;
        cv::Mat rotation = U * D * Vt;
        std::memcpy(R, rotation.ptr<double>(), 9 * sizeof(double));
        if (residuals) {
            cv::Matx33d Rm(rotation);
            for (int i = 0; i < n; ++i) {
                cv::Vec3d ra(a[size_t(i)].x, a[size_t(i)].y, 1), rb(b[size_t(i)].x, b[size_t(i)].y, 1);
                double c = (Rm * ra).dot(rb) / (cv::norm(ra) * cv::norm(rb));
                residuals[i] = std::acos(std::max(-1.0, std::min(1.0, c)));
            }
        }
    });
}

}  // extern "C"
