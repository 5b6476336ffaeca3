// Structure for the guidance session: triangulating a keyframe's correspondences, and placing later frames'
// cameras among those points (the robust loop over PlacementEstimator, then the uncertainty of the result).
#include "placement_estimator.hpp"

#include <opencv2/calib3d.hpp>

#include <cstring>

namespace rp::pose {

int PlacementEstimator::generate(const size_t *sample, Placement *models) const {
    std::vector<cv::Point3d> object(3);
    std::vector<cv::Point2d> image(3);
    for (int i = 0; i < 3; ++i) {
        object[size_t(i)] = points_[sample[i]];
        image[size_t(i)] = bearings_[sample[i]];
    }
    std::vector<cv::Mat> rvecs, tvecs;
    const int found = cv::solveP3P(object, image, cv::Matx33d::eye(), cv::noArray(), rvecs, tvecs, cv::SOLVEPNP_AP3P);
    int count = 0;
    for (int s = 0; s < found && count < kMaxModels; ++s) {
        cv::Matx33d R;
        cv::Rodrigues(rvecs[size_t(s)], R);
        const cv::Vec3d t(tvecs[size_t(s)].at<double>(0), tvecs[size_t(s)].at<double>(1), tvecs[size_t(s)].at<double>(2));
        if (!std::isfinite(t[0]) || !std::isfinite(t[1]) || !std::isfinite(t[2])) continue;
        models[count++] = Placement{R, t};
    }
    return count;
}

double PlacementEstimator::residual2(const Placement &model, size_t i) const {
    const cv::Vec3d X = model.R * cv::Vec3d(points_[i].x, points_[i].y, points_[i].z) + model.t;
    if (!(X[2] > 0)) return HUGE_VAL;
    const double dx = X[0] / X[2] - bearings_[i].x, dy = X[1] / X[2] - bearings_[i].y;
    return dx * dx + dy * dy;
}

double PlacementEstimator::score(const Placement &model, double bound) const {
    double cost = 0;
    for (size_t i = 0; i < points_.size(); ++i) {
        cost += std::min(residual2(model, i), tau2_);
        if (cost >= bound) return HUGE_VAL;
    }
    return cost;
}

void PlacementEstimator::inliers(const Placement &model, std::vector<size_t> &out) const {
    out.clear();
    for (size_t i = 0; i < points_.size(); ++i) {
        if (residual2(model, i) < tau2_) out.push_back(i);
    }
}

double PlacementEstimator::optimise(Placement &model, std::mt19937_64 &) const {
    // Two rounds: the inliers of the refined camera can differ from the sample's.
    Placement current = model;
    double best = score(model, HUGE_VAL);
    std::vector<size_t> within;
    for (int round = 0; round < 2; ++round) {
        inliers(current, within);
        if (within.size() < 6) break;
        std::vector<cv::Point3d> object;
        std::vector<cv::Point2d> image;
        for (size_t i : within) {
            object.push_back(points_[i]);
            image.push_back(bearings_[i]);
        }
        cv::Mat rvec, tvec = cv::Mat(current.t).clone();
        cv::Rodrigues(current.R, rvec);
        cv::solvePnPRefineLM(object, image, cv::Matx33d::eye(), cv::noArray(), rvec, tvec);
        Placement refined;
        cv::Rodrigues(rvec, refined.R);
        refined.t = cv::Vec3d(tvec.at<double>(0), tvec.at<double>(1), tvec.at<double>(2));
        const double cost = score(refined, HUGE_VAL);
        if (!(cost < best)) break;
        best = cost;
        current = refined;
    }
    model = current;
    return best;
}

}  // namespace rp::pose

namespace {

void check_camera(const rp_camera *camera) {
    if (camera == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "camera is NULL");
    for (double k : camera->K) {
        if (!std::isfinite(k)) rp::fail(RP_ERR_INVALID_ARGUMENT, "the camera matrix is not finite");
    }
    if (!(camera->K[0] > 0 && camera->K[4] > 0)) rp::fail(RP_ERR_INVALID_ARGUMENT, "the camera's focal lengths must be positive");
}

double reprojection(const cv::Vec3d &X, const cv::Matx33d &R, const cv::Vec3d &t, const rp_camera &camera, const cv::Point2d &pixel) {
    std::vector<cv::Point3d> object{cv::Point3d(X[0], X[1], X[2])};
    std::vector<cv::Point2d> projected;
    cv::Mat rvec;
    cv::Rodrigues(R, rvec);
    cv::projectPoints(object, rvec, cv::Mat(t), rp::camera_matrix(camera), rp::distortion_vector(camera), projected);
    return cv::norm(projected[0] - pixel);
}

}  // namespace

extern "C" {

int rp_triangulate(const double *reference_xy, const double *current_xy, int n, const rp_camera *reference_camera,
                   const rp_camera *current_camera, const double R[9], const double t[3], double *xyz,
                   size_t xyz_capacity, double *parallax_degrees, size_t parallax_capacity,
                   double *reprojection_pixels, size_t reprojection_capacity, uint8_t *in_front,
                   size_t in_front_capacity, rp_status *status) {
    return rp::guarded(status, [&] {
        check_camera(reference_camera);
        check_camera(current_camera);
        if (R == nullptr || t == nullptr || xyz == nullptr || parallax_degrees == nullptr || reprojection_pixels == nullptr ||
            in_front == nullptr) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, "pose or output buffers are NULL");
        }
        const auto a = rp::to_points(reference_xy, n), b = rp::to_points(current_xy, n);
        rp::check_finite(a, "reference");
        rp::check_finite(b, "current");
        rp::check_capacity(xyz, xyz_capacity / 3, n, "points");
        rp::check_capacity(parallax_degrees, parallax_capacity, n, "parallax");
        rp::check_capacity(reprojection_pixels, reprojection_capacity, n, "reprojection");
        rp::check_capacity(in_front, in_front_capacity, n, "in front");
        const cv::Matx33d rotation(R);
        const cv::Vec3d translation(t[0], t[1], t[2]);
        for (double v : rotation.val) {
            if (!std::isfinite(v)) rp::fail(RP_ERR_INVALID_ARGUMENT, "the rotation is not finite");
        }
        if (cv::norm(rotation * rotation.t() - cv::Matx33d::eye()) > 1e-6 || !(cv::determinant(rotation) > 0) ||
            !std::isfinite(cv::norm(translation))) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, "R must be a rotation and t finite");
        }
        if (n == 0) return;
        const auto x1 = rp::normalised(a, *reference_camera), x2 = rp::normalised(b, *current_camera);
        const cv::Vec3d centre = -(rotation.t() * translation);
        for (int i = 0; i < n; ++i) {
            const size_t k = size_t(i);
            // Linear triangulation (the DLT's four equations, solved by SVD) in normalised coordinates.
            cv::Matx44d A;
            const cv::Matx34d P1(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0);
            const cv::Matx34d P2(rotation(0, 0), rotation(0, 1), rotation(0, 2), translation[0], rotation(1, 0), rotation(1, 1),
                                 rotation(1, 2), translation[1], rotation(2, 0), rotation(2, 1), rotation(2, 2), translation[2]);
            for (int j = 0; j < 4; ++j) {
                A(0, j) = x1[k].x * P1(2, j) - P1(0, j);
                A(1, j) = x1[k].y * P1(2, j) - P1(1, j);
                A(2, j) = x2[k].x * P2(2, j) - P2(0, j);
                A(3, j) = x2[k].y * P2(2, j) - P2(1, j);
            }
            cv::Matx44d u, vt;
            cv::Matx41d w;
            cv::SVD::compute(A, w, u, vt);
            const double h = vt(3, 3);
            cv::Vec3d X(HUGE_VAL, HUGE_VAL, HUGE_VAL);
            if (std::abs(h) > 1e-300) X = cv::Vec3d(vt(3, 0) / h, vt(3, 1) / h, vt(3, 2) / h);
            const bool finite = std::isfinite(X[0]) && std::isfinite(X[1]) && std::isfinite(X[2]);
            const cv::Vec3d Xc = rotation * X + translation;
            const cv::Vec3d ray1 = X, ray2 = X - centre;
            const double c = ray1.dot(ray2) / std::max(1e-300, cv::norm(ray1) * cv::norm(ray2));
            xyz[3 * k] = X[0];
            xyz[3 * k + 1] = X[1];
            xyz[3 * k + 2] = X[2];
            parallax_degrees[k] = finite ? std::acos(std::max(-1.0, std::min(1.0, c))) * rp::pose::kDegrees : 0;
            in_front[k] = finite && X[2] > 0 && Xc[2] > 0 ? 1 : 0;
            reprojection_pixels[k] = finite ? std::max(reprojection(X, cv::Matx33d::eye(), cv::Vec3d(), *reference_camera, a[k]),
                                                       reprojection(X, rotation, translation, *current_camera, b[k]))
                                            : HUGE_VAL;
        }
    });
}

int rp_place_camera(const double *xyz, const double *xy, int n, const rp_camera *camera, const rp_placement_params *params,
                    rp_placement *placement, uint8_t *inliers, size_t inliers_capacity, rp_status *status) {
    return rp::guarded(status, [&] {
        check_camera(camera);
        if (params == nullptr || placement == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "parameters or output are NULL");
        if (!(params->threshold_pixels > 0 && std::isfinite(params->threshold_pixels)) ||
            !(params->confidence > 0 && params->confidence < 1) || params->max_iterations < 1 || params->max_iterations > 1000000) {
            rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("placement needs a positive threshold, confidence in (0, 1) and 1...1e6 iterations "
                                                         "(got %g, %g, %d)", params->threshold_pixels, params->confidence, params->max_iterations));
        }
        if (n > 0 && xyz == nullptr) rp::fail(RP_ERR_INVALID_ARGUMENT, "point array is NULL");
        const auto pixels = rp::to_points(xy, n);
        rp::check_finite(pixels, "image");
        rp::check_capacity(inliers, inliers_capacity, n, "inliers");
        std::vector<cv::Point3d> points(size_t(std::max(n, 0)));
        for (int i = 0; i < n; ++i) {
            points[size_t(i)] = cv::Point3d(xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]);
            if (!std::isfinite(points[size_t(i)].x) || !std::isfinite(points[size_t(i)].y) || !std::isfinite(points[size_t(i)].z)) {
                rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("3D point %d is not finite", i));
            }
        }
        if (n < 4) rp::fail(RP_ERR_ESTIMATION, cv::format("placing a camera needs at least 4 points, got %d", n));
        const auto bearings = rp::normalised(pixels, *camera);
        const double focal = 0.5 * (camera->K[0] + camera->K[4]);
        const double tau = params->threshold_pixels / focal;
        rp::pose::PlacementEstimator estimator(points, bearings, tau * tau);
        rp::pose::LoopParams loop;
        loop.confidence = params->confidence;
        loop.max_iterations = params->max_iterations;
        loop.seed = params->seed;
        const auto found = rp::pose::robust_loop(estimator, loop, params->seed, params->max_iterations);
        if (!std::isfinite(found.cost)) rp::fail(RP_ERR_ESTIMATION, cv::format("no sample of %d points placed the camera", n));
        const rp::pose::Placement &model = found.model;
        std::vector<size_t> within;
        estimator.inliers(model, within);
        if (within.size() < 4) rp::fail(RP_ERR_ESTIMATION, cv::format("the camera placed has %zu inliers of %d points", within.size(), n));

        // Gauss-Newton Hessian of the reprojection errors in (rotation increment, t): X_c = exp([w]) R X + t.
        cv::Matx<double, 6, 6> H = cv::Matx<double, 6, 6>::zeros();
        double squared = 0;
        for (size_t i : within) {
            const cv::Vec3d P = model.R * cv::Vec3d(points[i].x, points[i].y, points[i].z);
            const cv::Vec3d X = P + model.t;
            const double z = X[2], iz = 1 / z;
            const cv::Matx23d projection(iz, 0, -X[0] * iz * iz, 0, iz, -X[1] * iz * iz);
            const cv::Matx33d minus_cross(0, P[2], -P[1], -P[2], 0, P[0], P[1], -P[0], 0);  // -[P]x
            const cv::Matx23d Jw = projection * minus_cross;
            cv::Matx<double, 2, 6> J;
            for (int r = 0; r < 2; ++r) {
                for (int c = 0; c < 3; ++c) {
                    J(r, c) = Jw(r, c);
                    J(r, c + 3) = projection(r, c);
                }
            }
            H += J.t() * J;
            squared += estimator.residual2(model, i);
        }
        const double rms_normalised = std::sqrt(squared / double(within.size()));
        const double noise = std::max(rms_normalised, RP_LOCALISATION_FLOOR_PIXELS / focal);
        cv::Matx<double, 6, 6> covariance;
        const bool invertible = cv::invert(H, covariance, cv::DECOMP_SVD) > 0;
        covariance *= noise * noise;
        std::memcpy(placement->R, model.R.val, sizeof placement->R);
        for (int i = 0; i < 3; ++i) placement->t[i] = model.t[i];
        placement->inliers = int(within.size());
        placement->rms_pixels = rms_normalised * focal;
        double largest_rotation = 0;
        for (int r = 0; r < 3; ++r) {
            for (int c = 0; c < 3; ++c) placement->t_covariance[3 * r + c] = invertible ? covariance(r + 3, c + 3) : HUGE_VAL;
        }
        if (invertible) {
            cv::Matx33d rotation_block;
            for (int r = 0; r < 3; ++r) {
                for (int c = 0; c < 3; ++c) rotation_block(r, c) = covariance(r, c);
            }
            cv::Vec3d eigen;
            cv::eigen(rotation_block, eigen);
            largest_rotation = std::sqrt(std::max(0.0, eigen[0])) * rp::pose::kDegrees;
        }
        placement->rotation_sigma_degrees = invertible ? largest_rotation : HUGE_VAL;
        if (inliers) {
            std::fill(inliers, inliers + n, uint8_t(0));
            for (size_t i : within) inliers[i] = 1;
        }
    });
}

}  // extern "C"
