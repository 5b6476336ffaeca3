#include "../Core/shim_internal.hpp"
#include "rephoto_shim_tools.h"

#include <opencv2/imgproc.hpp>

#include <limits>

extern "C" int rp_render_planes(const rp_plane *planes, int plane_count, const double K[9], const double R[9],
                                const double t[3], int width, int height, int background, rp_image **out,
                                rp_status *status) {
    *out = nullptr;
    return rp::guarded(status, [&] {
        if (width <= 0 || height <= 0) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("bad render size %dx%d", width, height));
        if (plane_count <= 0) rp::fail(RP_ERR_INVALID_ARGUMENT, "no planes to render");
        cv::Matx33d Kinv = cv::Matx33d(K).inv();
        cv::Matx33d Rt = cv::Matx33d(R).t();
        cv::Vec3d centre = -(Rt * cv::Vec3d(t[0], t[1], t[2]));

        struct Plane {
            cv::Vec3d origin, u, v, normal;
            double uu, uv, vv, det;
            int tw, th;
        };
        std::vector<Plane> geometry;
        for (int i = 0; i < plane_count; ++i) {
            const rp_plane &p = planes[i];
            if (!p.texture || p.texture->mat.empty()) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("plane %d has no texture", i));
            Plane g;
            g.origin = cv::Vec3d(p.origin);
            g.u = cv::Vec3d(p.u);
            g.v = cv::Vec3d(p.v);
            g.normal = g.u.cross(g.v);
            g.uu = g.u.dot(g.u);
            g.uv = g.u.dot(g.v);
            g.vv = g.v.dot(g.v);
            g.det = g.uu * g.vv - g.uv * g.uv;
            if (!(g.det > 0)) rp::fail(RP_ERR_INVALID_ARGUMENT, cv::format("plane %d has parallel or zero axes", i));
            g.tw = p.texture->mat.cols;
            g.th = p.texture->mat.rows;
            geometry.push_back(g);
        }

        std::vector<cv::Mat> map_x(static_cast<size_t>(plane_count)), map_y(static_cast<size_t>(plane_count));
        for (int i = 0; i < plane_count; ++i) {
            map_x[size_t(i)] = cv::Mat(height, width, CV_32F, cv::Scalar(-1e6f));
            map_y[size_t(i)] = cv::Mat(height, width, CV_32F, cv::Scalar(-1e6f));
        }
        cv::Mat owner(height, width, CV_32S, cv::Scalar(-1));
        for (int y = 0; y < height; ++y) {
            for (int x = 0; x < width; ++x) {
                cv::Vec3d ray = Rt * (Kinv * cv::Vec3d(x, y, 1));
                double nearest = std::numeric_limits<double>::infinity();
                int hit = -1;
                float hit_a = 0, hit_b = 0;
                for (int i = 0; i < plane_count; ++i) {
                    const Plane &g = geometry[size_t(i)];
                    double denom = g.normal.dot(ray);
                    if (std::abs(denom) < 1e-12) continue;
                    double s = g.normal.dot(g.origin - centre) / denom;
                    if (!(s > 0) || s >= nearest) continue;
                    cv::Vec3d w = centre + s * ray - g.origin;
                    double wu = w.dot(g.u), wv = w.dot(g.v);
                    double a = (g.vv * wu - g.uv * wv) / g.det;
                    double b = (g.uu * wv - g.uv * wu) / g.det;
                    if (a < 0 || b < 0 || a > g.tw - 1 || b > g.th - 1) continue;
                    nearest = s;
                    hit = i;
                    hit_a = float(a);
                    hit_b = float(b);
                }
                if (hit >= 0) {
                    owner.at<int>(y, x) = hit;
                    map_x[size_t(hit)].at<float>(y, x) = hit_a;
                    map_y[size_t(hit)].at<float>(y, x) = hit_b;
                }
            }
        }
        cv::Mat canvas(height, width, CV_8UC3, cv::Scalar::all(background));
        for (int i = 0; i < plane_count; ++i) {
            cv::Mat texture = planes[i].texture->mat, colour, warped;
            if (texture.channels() == 1) cv::cvtColor(texture, colour, cv::COLOR_GRAY2BGR);
            else colour = texture;
            cv::remap(colour, warped, map_x[size_t(i)], map_y[size_t(i)], cv::INTER_LINEAR, cv::BORDER_REPLICATE);
            warped.copyTo(canvas, owner == i);
        }
        *out = rp::wrap_image(canvas);
    });
}
