/*
 * rephoto_shim.h — the plain-C API over OpenCV 4.6 used by RephotoKit.
 *
 * Rules every function follows:
 *  - returns an rp_code (RP_OK on success) and, when `status` is non-NULL, fills it with the
 *    same code and a one-line message; no C++ exception ever leaves this API;
 *  - handles are opaque; each `rp_*_create`/`*_out` handle is released with its `rp_*_free`;
 *  - buffers the shim allocates for the caller are released with rp_buffer_free;
 *  - coordinates are pixels of the full-resolution, EXIF-oriented image, origin top-left;
 *  - matrices are 3x3 row-major doubles.
 * Handles are immutable after creation, so one handle may be read from several threads at once.
 */
#ifndef REPHOTO_SHIM_H
#define REPHOTO_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rp_code {
    RP_OK = 0,
    RP_ERR_INVALID_ARGUMENT = 1, /* a parameter is out of range */
    RP_ERR_DECODE = 2,           /* bytes are not a readable image */
    RP_ERR_TOO_LARGE = 3,        /* image over the pixel limit, refused before decoding */
    RP_ERR_IO = 4,               /* file could not be read or written */
    RP_ERR_ESTIMATION = 5,       /* too few points, or the estimator found no model */
    RP_ERR_OPENCV = 6,           /* cv::Exception */
    RP_ERR_INTERNAL = 7          /* any other exception */
} rp_code;

typedef struct rp_status {
    int code;
    char message[512];
} rp_status;

typedef struct rp_image rp_image;
typedef struct rp_features rp_features;

/* Sets OpenCV's process-wide worker-thread count (0 = sequential, negative = OpenCV's default). Waits until no
   other thread is inside the shim (up to 60 s, then fails): changing it under running work crashes TBB. */
int rp_set_num_threads(int threads, rp_status *status);
void rp_buffer_free(void *buffer);

/* ---------------------------------------------------------------- images */

typedef enum rp_image_format { RP_FORMAT_UNKNOWN = 0, RP_FORMAT_JPEG = 1, RP_FORMAT_PNG = 2 } rp_image_format;

typedef struct rp_image_header {
    int format;     /* rp_image_format */
    int width;      /* as stored, before EXIF orientation */
    int height;
} rp_image_header;

/* Reads format and size from the header bytes alone; checks a JPEG ends with EOI and a PNG with IEND. */
int rp_image_probe(const uint8_t *bytes, size_t length, rp_image_header *header, rp_status *status);
/* Decodes JPEG or PNG bytes into an 8-bit BGR image (or single-channel grey when `grayscale` is non-zero,
   which decodes faster), applying EXIF orientation. Images over max_pixels (width*height from the header)
   are refused before any pixel is decoded. */
int rp_image_decode(const uint8_t *bytes, size_t length, int64_t max_pixels, int grayscale, rp_image **out,
                    rp_status *status);
/* Copies 8-bit pixels (channels 1 or 3, BGR order) into a new image. */
int rp_image_create(int width, int height, int channels, const uint8_t *pixels, size_t row_stride,
                    rp_image **out, rp_status *status);
void rp_image_free(rp_image *image);
int rp_image_width(const rp_image *image);
int rp_image_height(const rp_image *image);
int rp_image_channels(const rp_image *image);
/* Copies pixels out, tightly packed rows; capacity must be width*height*channels. */
int rp_image_copy_pixels(const rp_image *image, uint8_t *destination, size_t capacity, rp_status *status);
int rp_image_to_gray(const rp_image *image, rp_image **out, rp_status *status);
/* ".png" or ".jpg"; quality applies to JPEG (0-100). */
int rp_image_encode(const rp_image *image, const char *extension, int quality, uint8_t **bytes, size_t *length,
                    rp_status *status);
/* Warps with a homography (source pixels -> destination pixels), bilinear, black border. */
int rp_image_warp_perspective(const rp_image *image, const double homography[9], int width, int height,
                              rp_image **out, rp_status *status);
int rp_image_resize(const rp_image *image, int width, int height, rp_image **out, rp_status *status);
/* Photometric changes, in this order: pixel * contrast + brightness, Gaussian blur (sigma px, 0 = none),
   additive Gaussian noise (sigma grey levels, 0 = none, from `seed`), saturated to 8 bits. */
int rp_image_adjust(const rp_image *image, double contrast, double brightness, double blur_sigma, double noise_sigma,
                    uint64_t seed, rp_image **out, rp_status *status);
/* Copy of `image` with `patch` (converted to its channel count) pasted with its top-left at (x, y), clipped. */
int rp_image_paste(const rp_image *image, const rp_image *patch, int x, int y, rp_image **out, rp_status *status);

/* ---------------------------------------------------------------- features */

typedef enum rp_detector_kind { RP_DETECTOR_AKAZE = 0, RP_DETECTOR_ORB = 1, RP_DETECTOR_SIFT = 2 } rp_detector_kind;

/* Every parameter of OpenCV 4.6's AKAZE::create, ORB::create and SIFT::create, plus the analysis scale. */
typedef struct rp_detector_params {
    int kind;                       /* rp_detector_kind */
    /* analysis scale: detect on a downscaled copy; 0 disables each. The smaller effective scale wins. */
    int max_dimension;
    double scale;
    /* AKAZE */
    int akaze_descriptor_type;      /* cv::AKAZE::DescriptorType: 2 KAZE_UPRIGHT, 3 KAZE, 4 MLDB_UPRIGHT, 5 MLDB */
    int akaze_descriptor_size;
    int akaze_descriptor_channels;
    float akaze_threshold;
    int akaze_octaves;
    int akaze_octave_layers;
    int akaze_diffusivity;          /* cv::KAZE::DiffusivityType: 0 PM_G1, 1 PM_G2, 2 WEICKERT, 3 CHARBONNIER */
    /* ORB */
    int orb_features;
    float orb_scale_factor;
    int orb_levels;
    int orb_edge_threshold;
    int orb_first_level;
    int orb_wta_k;
    int orb_score_type;             /* 0 HARRIS, 1 FAST */
    int orb_patch_size;
    int orb_fast_threshold;
    /* SIFT */
    int sift_features;
    int sift_octave_layers;
    double sift_contrast_threshold;
    double sift_edge_threshold;
    double sift_sigma;
    int sift_descriptor_type;       /* 5 CV_32F or 0 CV_8U */
} rp_detector_params;

typedef struct rp_keypoint {
    float x, y;       /* full-resolution pixels */
    float size;       /* full-resolution pixels */
    float angle;      /* degrees, -1 when not applicable */
    float response;
    int octave;
} rp_keypoint;

/* Detects and describes. `mask` (optional, 8-bit, same size as the image) keeps features where non-zero. */
int rp_features_detect(const rp_image *image, const rp_detector_params *params, const rp_image *mask,
                       rp_features **out, rp_status *status);
void rp_features_free(rp_features *features);
int rp_features_count(const rp_features *features);
/* Copies `capacity` keypoints at most; returns RP_OK. */
int rp_features_keypoints(const rp_features *features, rp_keypoint *destination, int capacity, rp_status *status);
/* Descriptor width in bytes per feature, and whether descriptors are binary (Hamming) or float (L2). */
int rp_features_descriptor_bytes(const rp_features *features);
int rp_features_is_binary(const rp_features *features);
/* The analysis scale actually used (1 = full resolution). */
double rp_features_analysis_scale(const rp_features *features);

/* ---------------------------------------------------------------- matching */

/* Brute force is exact; for binary descriptors it runs a SIMD Hamming kernel whose results equal
   cv::BFMatcher's, which RP_MATCHER_OPENCV_BRUTE_FORCE runs instead (for checking and benchmarks). */
typedef enum rp_matcher_kind {
    RP_MATCHER_BRUTE_FORCE = 0,
    RP_MATCHER_FLANN = 1,
    RP_MATCHER_OPENCV_BRUTE_FORCE = 2
} rp_matcher_kind;

/* The Hamming kernel brute force uses on this CPU: "avx512-vpopcntdq", "avx2" or "portable". */
const char *rp_hamming_kernel(void);
/* Pins the kernel by that name (NULL or "" = the best this CPU has), for tests and benchmarks: every
   kernel gives the same matches. Fails for an unknown name or one this CPU cannot run. */
int rp_set_hamming_kernel(const char *name, rp_status *status);

typedef struct rp_match_params {
    int matcher;            /* rp_matcher_kind */
    float ratio;            /* Lowe's ratio test on the two nearest neighbours; >= 1 disables it */
    int mutual;             /* keep only pairs that are each other's nearest neighbour */
    int lsh_table_number;   /* FLANN LSH, binary descriptors */
    int lsh_key_size;
    int lsh_multi_probe_level;
    int kdtree_trees;       /* FLANN KD-trees, float descriptors */
    int flann_checks;
} rp_match_params;

typedef struct rp_match {
    int reference_index;
    int current_index;
    float distance;
} rp_match;

/* Matches current features against reference features; *matches is released with rp_buffer_free. */
int rp_match_features(const rp_features *reference, const rp_features *current, const rp_match_params *params,
                      rp_match **matches, int *count, rp_status *status);

/* A FLANN index over a reference's descriptors (LSH for binary, KD-trees for float), built once and searched
   for every current frame; searching does not modify it, so several threads may use one index at once. */
typedef struct rp_match_index rp_match_index;

int rp_match_index_create(const rp_features *reference, const rp_match_params *params, rp_match_index **out,
                          rp_status *status);
void rp_match_index_free(rp_match_index *index);
/* As rp_match_features with the prebuilt index for the reference side. */
int rp_match_index_match(const rp_match_index *index, const rp_features *current, const rp_match_params *params,
                         rp_match **matches, int *count, rp_status *status);

/* ---------------------------------------------------------------- geometry */

typedef struct rp_robust_params {
    int method;           /* cv::RANSAC 8, LMEDS 4, RHO 16, USAC_* 32..38, 0 = least squares on all points */
    double threshold;     /* pixels */
    double confidence;
    int max_iterations;
    uint64_t seed;        /* cv::theRNG() state for RANSAC/LMEDS/RHO so runs repeat exactly */
    int refine;           /* essential matrix only: Levenberg-Marquardt on the inliers' Sampson error */
} rp_robust_params;

/* H maps reference pixels to current pixels. `inliers` (n bytes, may be NULL) receives 1 for inliers. */
int rp_find_homography(const double *reference_xy, const double *current_xy, int n, const rp_robust_params *params,
                       double homography[9], uint8_t *inliers, int *inlier_count, rp_status *status);

typedef struct rp_camera {
    double K[9];
    double distortion[14];
    int distortion_count;  /* 0, 4, 5, 8, 12 or 14 */
} rp_camera;

typedef struct rp_relative_pose {
    double E[9];                /* essential matrix of normalised (undistorted) coordinates */
    double R[9];                /* X_current = R X_reference + t */
    double t[3];                /* unit length */
    int inliers;                /* essential-matrix inliers */
    int in_front;               /* inliers triangulated in front of both cameras */
    double sampson_rms_pixels;  /* over essential inliers: normalised Sampson error times the mean focal length */
} rp_relative_pose;

/* Undistorts both point sets with their own camera, then findEssentialMat + recoverPose on normalised
   coordinates; the threshold in params is in pixels (divided by the mean focal length inside).
   `inliers` (n bytes, may be NULL) receives 1 for points that are inliers and in front;
   `sampson_pixels` (n doubles, may be NULL) the Sampson distance of every point to E, in pixels. */
int rp_estimate_relative_pose(const double *reference_xy, const double *current_xy, int n,
                              const rp_camera *reference_camera, const rp_camera *current_camera,
                              const rp_robust_params *params, rp_relative_pose *pose, uint8_t *inliers,
                              double *sampson_pixels, rp_status *status);

/* Rotation-only model: the rotation R (X_current = R X_reference) that best aligns the undistorted bearing
   vectors of the selected correspondences (orthogonal Procrustes). `selected` may be NULL (all points).
   `residuals` (n doubles, may be NULL) receives, for every correspondence, the angle (radians) between
   R b_reference and b_current. */
int rp_rotation_from_bearings(const double *reference_xy, const double *current_xy, const uint8_t *selected, int n,
                              const rp_camera *reference_camera, const rp_camera *current_camera, double R[9],
                              double *residuals, rp_status *status);

/* ---------------------------------------------------------------- calibration */

typedef struct rp_calibration_file {
    double K[9];
    double distortion[14];
    int distortion_count;
    int width;   /* 0 when the file has no image size */
    int height;
} rp_calibration_file;

/* Reads OpenCV FileStorage (YAML/XML/JSON) as written by OpenCV's calibration sample
   (camera_matrix, distortion_coefficients, image_width, image_height) or its tutorial
   (Camera_Matrix, Distortion_Coefficients, image_Width, image_Height). */
int rp_calibration_read(const char *path, rp_calibration_file *out, rp_status *status);

/* Reads the 3x3 matrix stored under `key` (NULL: the first top-level node) of a FileStorage file. */
int rp_read_matrix3(const char *path, const char *key, double matrix[9], rp_status *status);

/* Chessboard calibration (findChessboardCorners, cornerSubPix, calibrateCamera). `board_width` and
   `board_height` count inner corners; `square_size` is in metres. `found` (n bytes) marks the views where
   the board was found; `view_errors` (n doubles) their RMS reprojection error in pixels (0 where not found).
   Needs at least `minimum_views` views with the board. All images must have one size. */
typedef struct rp_chessboard_result {
    rp_calibration_file calibration;
    double rms;        /* calibrateCamera's overall RMS reprojection error, px */
    double mean_error; /* mean of the per-view RMS errors, px */
    int views_used;
} rp_chessboard_result;

int rp_calibrate_chessboard(const rp_image *const *images, int n, int board_width, int board_height,
                            double square_size, int minimum_views, uint8_t *found, double *view_errors,
                            rp_chessboard_result *result, rp_status *status);

/* Writes OpenCV FileStorage (format from the extension: .yml/.yaml, .xml, .json) with image_width,
   image_height, camera_matrix, distortion_coefficients, and when given avg_reprojection_error and
   per_view_reprojection_errors (n values), plus board_width, board_height, square_size when > 0. */
int rp_calibration_write(const char *path, const rp_calibration_file *calibration, double mean_error,
                         const double *view_errors, int n, int board_width, int board_height, double square_size,
                         rp_status *status);

/* ---------------------------------------------------------------- drawing and rendering */

/* Copy of `image` (as BGR) with the target rectangle (green), the navigation quadrilateral (red, may be
   NULL) and inlier matches as lines from reference to current position (yellow). Corners are 4 x,y pairs. */
int rp_draw_navigation(const rp_image *image, const double target[8], const double *quadrilateral,
                       const double *reference_xy, const double *current_xy, int n, rp_image **out,
                       rp_status *status);

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

/* ---------------------------------------------------------------- native reference pipeline */

/* The whole pipeline written directly against OpenCV, for the Swift-overhead benchmark:
   decode both images, detect+describe, match, homography, essential pose. Stage times in ms:
   [0] decode, [1] detect reference, [2] detect current, [3] match, [4] homography, [5] essential, [6] total. */
int rp_native_pipeline(const uint8_t *reference_bytes, size_t reference_length, const uint8_t *current_bytes,
                       size_t current_length, const rp_detector_params *detector, const rp_match_params *matching,
                       const rp_robust_params *homography, const rp_robust_params *essential,
                       const rp_camera *camera, double timings_ms[7], int counts[4], rp_status *status);

#ifdef __cplusplus
}
#endif

#endif
