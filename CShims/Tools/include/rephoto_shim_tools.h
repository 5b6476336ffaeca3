/*
 * rephoto_shim_tools.h: tools-only C entry points over OpenCV 4.6, kept out of the production API that a
 * worker links (rephoto_shim.h): synthetic-scene rendering and image effects, overlay drawing, chessboard
 * calibration and the benchmark's C++ reference pipeline.
 * The rules and lifetimes of rephoto_shim.h apply unchanged.
 */
#ifndef REPHOTO_SHIM_TOOLS_H
#define REPHOTO_SHIM_TOOLS_H

#include "rephoto_shim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- QR codes (tests) */

/* Decodes the QR code in `image` with OpenCV (QRCodeDetector, or contrib WeChatQRCode where QRCodeDetector lacks quirc) into `text` (NUL-terminated, at most capacity
   bytes); RP_ERR_DECODE when none is found. */
int rp_qr_decode(const rp_image *image, char *text, size_t capacity, rp_status *status);

/* ---------------------------------------------------------------- image effects (synthetic scenes) */

/* Photometric changes, in this order: pixel * contrast + brightness, Gaussian blur (sigma px, 0 = none),
   additive Gaussian noise (sigma grey levels, 0 = none, from `seed`), saturated to 8 bits. */
int rp_image_adjust(const rp_image *image, double contrast, double brightness, double blur_sigma, double noise_sigma,
                    uint64_t seed, rp_image **out, rp_status *status);
/* Copy of `image` with `patch` (converted to its channel count) pasted with its top-left at (x, y), clipped. */
int rp_image_paste(const rp_image *image, const rp_image *patch, int x, int y, rp_image **out, rp_status *status);

/* An old print as scanned: `image` vignetted (gain 1 - vignette * r^2, r from the centre over the half-side),
   inside a border of grey level `border_colour` with `margins` pixels (top, right, bottom, left), then turned
   by `tilt_degrees` (clockwise on the image) about its centre on a scanner of the border's colour. */
int rp_image_print_scan(const rp_image *image, double vignette, int border_colour, const int margins[4], double tilt_degrees,
                        rp_image **out, rp_status *status);

/* ---------------------------------------------------------------- drawing and rendering */

/* Copy of `image` (as BGR) with the target rectangle (green, may be NULL), the navigation quadrilateral (red, may be
   NULL) and inlier matches as lines from reference to current position (yellow). Corners are 4 x,y pairs. */
int rp_draw_navigation(const rp_image *image, const double *target, const double *quadrilateral,
                       const double *reference_xy, const double *current_xy, int n, rp_image **out,
                       rp_status *status);

/* Copy of `image` (as BGR) with a legend in its top-left corner, `count` entries of a colour swatch (`bgr`, 3 bytes
   each) and a label (UTF-8; ASCII is drawn, other characters as '?'), and, unless NULL, `caption` on a dark band
   along the bottom, wrapped to the width. Text size follows the image size. */
int rp_draw_legend(const rp_image *image, const char *const *labels, const unsigned char *bgr, int count, const char *caption,
                   rp_image **out, rp_status *status);

/* A textured plane in the reference camera's frame: texture pixel (a, b) lies at origin + a*u + b*v. */
typedef struct rp_plane {
    const rp_image *texture;
    double origin[3];
    double u[3];
    double v[3];
} rp_plane;

/* Renders the planes as seen by a camera with intrinsics K and pose X_camera = R X_reference + t, by exact
   per-pixel ray-plane intersection and bilinear texture lookup (cv::remap); nearest plane wins; the
   background is `background` grey. Output is BGR. */
int rp_render_planes(const rp_plane *planes, int plane_count, const double K[9], const double R[9],
                     const double t[3], int width, int height, int background, rp_image **out,
                     rp_status *status);

/* ---------------------------------------------------------------- chessboard calibration */

/* Chessboard calibration (findChessboardCorners, cornerSubPix, calibrateCamera), one view at a time so a caller
   holds one photo's pixels, never all of them. `board_width` and `board_height` count inner corners (3...100);
   `square_size` is in metres (0.0001...10); calibration needs `minimum_views` (3...RP_CHESSBOARD_FITTED_VIEWS)
   views with the board. */
int rp_chessboard_check(int board_width, int board_height, double square_size, int minimum_views, rp_status *status);

/* The board's inner corners in one view: `corners_xy` (capacity >= 2 x board_width x board_height) receives
   them as x,y pairs, row by row, and *found 1; *found 0 when the board is not seen. A larger photo is first
   searched on a copy reduced by area averaging to RP_CHESSBOARD_SEARCH_SIDE pixels on its longer side, the
   corners then refined on the full image with a window a quarter of their spacing; when the copy shows no
   board (a small board's squares may vanish in it), the full image is searched. */
#define RP_CHESSBOARD_SEARCH_SIDE 2048
int rp_chessboard_corners(const rp_image *image, int board_width, int board_height, float *corners_xy,
                          size_t corners_capacity, int *found, rp_status *status);

typedef struct rp_chessboard_result {
    rp_camera calibration;
    double rms;        /* calibrateCamera's overall RMS reprojection error over the fitted views, px */
    double mean_error; /* mean of every view's RMS error, px */
    int views_used;    /* views fitted: all of them up to RP_CHESSBOARD_FITTED_VIEWS */
    /* 1-sigma uncertainty of fx, fy, cx, cy (calibrateCamera with deviations), px: how well the views determine them */
    double intrinsics_sigma[4];
} rp_chessboard_result;

/* The most views the camera is fitted to: calibrateCamera's cost grows with the cube of its views (one dense system
   over every view's pose), so past this many a spread subset is fitted and the rest only checked against it. */
#define RP_CHESSBOARD_FITTED_VIEWS 40

/* Calibrates a width x height camera from `views` views' corners (rp_chessboard_corners, concatenated:
   2 x board_width x board_height floats each). Up to RP_CHESSBOARD_FITTED_VIEWS views, all are fitted; past that,
   the fitted views are chosen by farthest-point sampling over each view's board tilt (its normal in the camera
   frame, from its homography and a closed-form focal length), the board's centre and its size in the frame, first
   the view farthest from the views' mean; then views whose error against that fit is over 3 x the median are
   left out and the subset chosen again among the rest, until the fitted views have none (at most 3 fits).
   Deterministic, in time linear in `views`. `view_fitted` (capacity >= views) receives 1 for a fitted view, -1 for
   one left out as outlying, else 0; `view_errors` (capacity >= views) every view's RMS reprojection error in
   pixels, a view not fitted at the board's pose solvePnP finds for it against the fitted camera. */
int rp_chessboard_calibrate(const float *corners_xy, int views, int board_width, int board_height, double square_size,
                            int minimum_views, int width, int height, double *view_errors, size_t view_errors_capacity,
                            int *view_fitted, size_t view_fitted_capacity, rp_chessboard_result *result, rp_status *status);


/* ---------------------------------------------------------------- solver checks (tests) */

/* The five-point solver on its own: five normalised points per image (x, y pairs, z = 1); up to ten essential
   matrices (row-major 3x3, unit Frobenius norm) in `solutions`, how many in *count. */
int rp_tools_five_point(const double reference_xy[10], const double current_xy[10], double solutions[90], int *count,
                        rp_status *status);

/* The relative-pose estimator's vectorised Sampson passes on n normalised point pairs (x, y): the truncated
   (MSAC) cost with threshold tau2 (squared, normalised units) and how many points lie within it; `portable`
   1 forces the portable kernels. */
int rp_tools_sampson_cost(const double essential[9], const double *reference_xy, const double *current_xy, int n, double tau2,
                          int portable, double *cost, int *within, rp_status *status);

/* The homography GRIC weighs against the essential matrix, on its own: seeded MSAC over n point pairs (x, y),
   `threshold` in the same units, then least squares on the consensus. H (row-major) maps reference to
   current; *found is 0 when no four points give one. */
int rp_tools_plane_homography(const double *reference_xy, const double *current_xy, int n, double threshold, uint64_t seed,
                              double homography[9], int *found, rp_status *status);

/* The estimator's check of a pose against its plane's other solution, on its own: n normalised point pairs
   (x, y), threshold tau (normalised units), refinement on; R (row-major) and t in, the pose out. *replaced is 1
   when the plane of the pose's inliers has another solution the points off it favour, which, refined, fits
   better and replaced the pose (rp_pose_twin's record under PoseDecision.twinReplaces's rule, replayed in C++). */
int rp_tools_plane_twin_check(const double *reference_xy, const double *current_xy, int n, double tau, uint64_t seed,
                              double R[9], double t[3], int *replaced, rp_status *status);

/* The robust loop alone (CShims/Core/pose/robust_loop.hpp) over the essential-matrix estimator: five-point samples,
   MSAC, local optimisation, adaptive stopping, on n >= 5 normalised point pairs (x, y) with threshold tau
   (normalised units). From `params` only the loop's and the minimal models' fields are read: confidence,
   max_iterations, min_iterations, seed, prosac, runners_up, max_parallax_degrees, portable_kernels (no screen:
   there are no keypoint frames). R (row-major) and t receive the best model; `inliers` (capacity >= n, may be NULL)
   1 for the points within tau of it; *samples the samples solved; *certified 1 when the adaptive bound, not the
   cap, stopped the loop. RP_ERR_ESTIMATION when no sample gave a model. */
int rp_tools_robust_essential(const double *reference_xy, const double *current_xy, int n, double tau, const rp_robust_params *params,
                              double R[9], double t[3], uint8_t *inliers, size_t inliers_capacity, int *samples, int *certified,
                              rp_status *status);

/* The refinement alone: Levenberg-Marquardt on the MSAC cost of the Sampson errors (threshold tau, normalised units)
   of n normalised point pairs (x, y), at most `iterations` steps from R, t (row-major; t of any length);
   `portable` 1 forces the portable kernels. The pose out (t unit length) and *cost its MSAC cost. */
int rp_tools_refine_pose(const double *reference_xy, const double *current_xy, int n, double tau, int iterations, int portable,
                         double R[9], double t[3], double *cost, rp_status *status);

/* ---------------------------------------------------------------- video (rephoto import video) */

/* A video file read frame by frame through OpenCV's videoio with its FFmpeg backend (MP4/MOV, H.264 or HEVC). */
typedef struct rp_video rp_video;

typedef struct rp_video_info {
    int width;            /* as decoded (the container's rotation applied) */
    int height;
    double fps;           /* the container's nominal rate; 0 when unknown */
    int64_t frame_count;  /* the container's count; -1 when unknown (it may be wrong for damaged files) */
} rp_video_info;

/* Opens `path`; RP_ERR_DECODE when it is no video OpenCV can read, RP_ERR_TOO_LARGE when a frame has more than
   max_pixels pixels. */
int rp_video_open(const char *path, int64_t max_pixels, rp_video **out, rp_video_info *info, rp_status *status);
/* The next frame (BGR) and its presentation time in seconds on the video's clock; *out NULL at the end of the
   stream. RP_ERR_TOO_LARGE when a frame grows past max_pixels, RP_ERR_DECODE when the stream cannot be decoded on. */
int rp_video_read(rp_video *video, rp_image **out, double *timestamp, rp_status *status);
void rp_video_free(rp_video *video);

/* ---------------------------------------------------------------- native reference pipeline */

/* The whole pipeline written directly against OpenCV, for the Swift-overhead benchmark:
   decode both images, detect+describe, match, homography, essential pose. Stage times in ms:
   [0] decode, [1] detect reference, [2] detect current, [3] match, [4] homography, [5] essential, [6] total.
   `essential` as the Swift search sets it; with its prosac flag the matches go best first, by Lowe's ratio when
   order_by_ratio is non-zero, else by descriptor distance (pose.prosacOrder). */
int rp_native_pipeline(const uint8_t *reference_bytes, size_t reference_length, const uint8_t *current_bytes,
                       size_t current_length, const rp_detector_params *detector, const rp_match_params *matching,
                       const rp_homography_params *homography, const rp_robust_params *essential, int order_by_ratio,
                       const rp_camera *camera, double timings_ms[7], int counts[4], rp_status *status);

/* The relative pose in C++ alone, as rp_native_pipeline computes it (native_pose.cpp): the Core's stages with
   RephotoKit's PoseDecision replayed without a sensor (the cheapest refined candidate, the plane's other solution).
   Undistorts both point sets with their own camera; the threshold in params is in pixels (divided by the mean
   focal length inside). `inliers` (capacity >= n, may be NULL) receives 1 for points within the threshold of E;
   `sampson_pixels` (capacity >= n, may be NULL) the Sampson distance of every point to E, in pixels.
   `reference_frames` and `current_frames` (n angle, size pairs each, as rp_keypoint's; may be NULL) are the
   matched keypoints' frames, which the sample screen reads (params->essential.screen_degrees). */
int rp_tools_estimate_relative_pose(const double *reference_xy, const double *current_xy, int n,
                                    const rp_camera *reference_camera, const rp_camera *current_camera,
                                    const rp_robust_params *params, rp_relative_pose *pose, uint8_t *inliers,
                                    size_t inliers_capacity, double *sampson_pixels, size_t sampson_capacity,
                                    const float *reference_frames, const float *current_frames, rp_status *status);

#ifdef __cplusplus
}
#endif

#endif
