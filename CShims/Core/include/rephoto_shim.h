/*
 * rephoto_shim.h: the production C API over OpenCV 4.6 that RephotoKit (and so the worker) links:
 * images, features, matching, geometry, calibration I/O. Tools-only entry points (rendering, drawing,
 * chessboards, the benchmark's C++ pipeline) are in rephoto_shim_tools.h, a separate target.
 *
 * Rules every function follows:
 *  - returns an rp_code (RP_OK on success) and, when `status` is non-NULL, fills it with the
 *    same code and a one-line message; no C++ exception ever leaves this API;
 *  - no process-wide state is changed except by the two rp_opencv_set_* calls, which say so;
 *  - coordinates are pixels of the full-resolution, EXIF-oriented image, origin top-left;
 *  - matrices are 3x3 row-major doubles;
 *  - every caller-provided output buffer comes with its capacity (elements); a capacity smaller than
 *    needed is RP_ERR_INVALID_ARGUMENT and nothing is written past it.
 *
 * Lifetimes:
 *  - a handle returned through an `out` parameter belongs to the caller, who releases it exactly once with
 *    its rp_*_free; on failure `*out` is NULL;
 *  - a buffer the shim allocates (`rp_match **`, `uint8_t **`) is released with rp_buffer_free;
 *  - handles are immutable after creation: one handle may be read from several threads at once;
 *  - an rp_match_index holds its own reference to the features it was built from, so the features handle
 *    may be freed before the index;
 *  - no function keeps a pointer to a caller's buffer after it returns.
 */
#ifndef REPHOTO_SHIM_H
#define REPHOTO_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "rephoto_pose_constants.h"

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
    RP_ERR_INTERNAL = 7,         /* any other exception */
    RP_ERR_UNSUPPORTED = 8       /* bytes of a format the shim does not decode (GIF, AVIF, PDF, unknown) */
} rp_code;

/* A failure's finer cause, where a caller answers it differently from others of its code (tests and callers match
   these, not the message's words). */
typedef enum rp_cause {
    RP_CAUSE_NONE = 0,
    RP_CAUSE_TRUNCATED_IMAGE = 1,    /* the image file ends before its data does */
    RP_CAUSE_CORRUPT_IMAGE = 2,      /* the image's bytes break its format (header, checksum, structure) */
    RP_CAUSE_UNSUPPORTED_CPU = 3,    /* a kernel asked for by name that this CPU cannot run */
    RP_CAUSE_DESCRIPTOR_MISMATCH = 4 /* two images' descriptors of different kinds or lengths */
} rp_cause;

typedef struct rp_status {
    int code;
    int cause; /* an rp_cause; RP_CAUSE_NONE unless the failure names one */
    char message[512];
} rp_status;

typedef struct rp_image rp_image;
typedef struct rp_features rp_features;

/* Process-wide OpenCV settings, for a program's start-up only. OpenCV's worker-thread count (0 = sequential,
   negative = OpenCV's default): changing it while OpenCV runs on another thread crashes its TBB backend, so
   call it before any other work starts; the shim takes no lock. */
int rp_opencv_set_threads(int threads, rp_status *status);
/* OpenCV's version, e.g. "4.6.0" (static storage). */
const char *rp_opencv_version(void);
/* OpenCV's own log level (cv::utils::logging::LogLevel: 0 silent ... 6 verbose). The shim reports every
   failure through rp_status, so a program that owns stderr sets 0. Process-wide: 0 also detaches C++
   std::cerr, which some OpenCV decoders write to directly; any other level restores it. */
int rp_opencv_set_log_level(int level, rp_status *status);
void rp_buffer_free(void *buffer);
/* Loads the media plugin (libRephotoMedia.so: TIFF, WebP, BMP, PNM, JPEG 2000 and video) now rather than at the
   first file that needs it, as a long-running worker does; RP_ERR_UNSUPPORTED with the reason when it is not
   beside the binary or in ../lib/rephoto. */
int rp_media_load(rp_status *status);

/* ---------------------------------------------------------------- images */

/* Checks the first bytes of a file (16 suffice) are the signature of a supported format (JPEG, PNG, HEIC/HEIF,
   TIFF, WebP, BMP, PNM/PAM, JPEG 2000); otherwise fails naming the format found (GIF, AVIF, PDF, ...) and the
   file's size, so a large non-image file is refused unread. */
int rp_image_check_signature(const uint8_t *head, size_t length, uint64_t file_size, rp_status *status);
/* Decodes image bytes (the formats above) into an 8-bit BGR image (or single-channel grey when `grayscale` is non-zero,
   which decodes faster), applying EXIF orientation. Images over max_pixels (width*height from the header)
   are refused before any pixel is decoded.
   With reduce_max_dimension or reduce_scale (0 disables each; the meaning of rp_detector_params' max_dimension
   and scale) the image may be decoded smaller, never below that analysis scale: JPEGs through libjpeg's DCT
   scaling (M/8), others resized right after decoding. It still stands for its full-resolution size
   (rp_image_full_width/height), and features detected on it are in full-resolution pixels. */
int rp_image_decode(const uint8_t *bytes, size_t length, int64_t max_pixels, int grayscale, int reduce_max_dimension,
                    double reduce_scale, rp_image **out, rp_status *status);
/* Copies 8-bit pixels (channels 1 or 3, BGR order) into a new image. */
int rp_image_create(int width, int height, int channels, const uint8_t *pixels, size_t row_stride,
                    size_t pixels_length, rp_image **out, rp_status *status);
void rp_image_free(rp_image *image);
/* What the decoder said about damaged data it decoded anyway (libjpeg: "Corrupt JPEG data: ..."), or "" for a
   clean image or one not decoded from bytes. The string lives as long as the image. */
const char *rp_image_decode_warning(const rp_image *image);
int rp_image_width(const rp_image *image);
int rp_image_height(const rp_image *image);
int rp_image_channels(const rp_image *image);
/* The full-resolution size the image stands for: its own size unless decoded reduced. */
int rp_image_full_width(const rp_image *image);
int rp_image_full_height(const rp_image *image);
/* The EXIF orientation (1...8) read from a JPEG's, a TIFF's or a PNG's (eXIf) header and applied in decoding; 1 for other
   formats (HEIF applies its own transformations) and for images not decoded from bytes. */
int rp_image_exif_orientation(const rp_image *image);
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
/* Two images of one size and type composed: RP_COMPOSE_BLEND mixes (1 - opacity) base + opacity overlay;
   RP_COMPOSE_SPLIT shows the base's left half beside the overlay's right half ("then and now"), a white divider
   edged in black between them. */
typedef enum rp_compose_mode { RP_COMPOSE_BLEND = 0, RP_COMPOSE_SPLIT = 1 } rp_compose_mode;
int rp_image_compose(const rp_image *base, const rp_image *overlay, int mode, double opacity, rp_image **out,
                     rp_status *status);

/* A QR code of `text` (UTF-8, at most 2000 bytes) made by OpenCV's QRCodeEncoder (byte mode, correction level
   M): a grey image, dark modules 0 and light 255, each module `module_pixels` square, inside a light quiet zone
   of `quiet_modules` modules. */
int rp_qr_encode(const char *text, int module_pixels, int quiet_modules, rp_image **out, rp_status *status);

/* ---------------------------------------------------------------- features */

typedef enum rp_detector_kind { RP_DETECTOR_AKAZE = 0, RP_DETECTOR_ORB = 1, RP_DETECTOR_SIFT = 2 } rp_detector_kind;

/* Every parameter of OpenCV 4.6's AKAZE::create, ORB::create and SIFT::create, plus the analysis scale. */
typedef struct rp_detector_params {
    int kind;                       /* rp_detector_kind */
    /* analysis scale: detect on a downscaled copy; 0 disables each. The smaller effective scale wins. */
    int max_dimension;
    double scale;
    /* keep at most this many keypoints, the strongest responses first, in detection order; 0 keeps all */
    int max_keypoints;
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
    /* contrast-limited adaptive histogram equalisation of the analysis copy before detection, for faded prints:
       its clip limit (0: none, at most 40), on tiles of about 128 pixels */
    double clahe_clip;
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
/* cv::NormTypes of the descriptors (NORM_HAMMING, NORM_HAMMING2 or NORM_L2). */
int rp_features_norm(const rp_features *features);
/* The full-resolution size the keypoints belong to. */
int rp_features_image_width(const rp_features *features);
int rp_features_image_height(const rp_features *features);
/* Copies the descriptor rows (count x descriptor_bytes, row after row) into `destination`. */
int rp_features_copy_descriptors(const rp_features *features, uint8_t *destination, size_t capacity, rp_status *status);
/* Features from saved parts (a reference store): `count` keypoints and their descriptor rows of
   `descriptor_bytes` each, 8-bit when `binary` (Hamming), 32-bit floats otherwise (L2). */
int rp_features_create(const rp_keypoint *keypoints, int count, const uint8_t *descriptors, size_t descriptors_length,
                       int descriptor_bytes, int binary, int norm, int width, int height, double analysis_scale,
                       rp_features **out, rp_status *status);

/* ---------------------------------------------------------------- matching */

/* Brute force is exact; for binary descriptors it runs a SIMD Hamming kernel whose results equal
   cv::BFMatcher's, which RP_MATCHER_OPENCV_BRUTE_FORCE runs instead (for checking and benchmarks). */
typedef enum rp_matcher_kind {
    RP_MATCHER_BRUTE_FORCE = 0,
    RP_MATCHER_FLANN = 1,
    RP_MATCHER_OPENCV_BRUTE_FORCE = 2
} rp_matcher_kind;

/* The SIMD kernels of brute-force Hamming matching. Every kernel gives the same matches; AUTO picks the
   best this CPU runs, the others are for tests and benchmarks. */
typedef enum rp_hamming_kernel {
    RP_HAMMING_AUTO = 0,
    RP_HAMMING_PORTABLE = 1,
    RP_HAMMING_AVX2 = 2,
    RP_HAMMING_AVX512_VPOPCNTDQ = 3
} rp_hamming_kernel;

/* The kernel `kernel` stands for on this CPU (AUTO resolves to the best one); RP_HAMMING_AUTO when this CPU
   cannot run it. */
int rp_hamming_kernel_resolve(int kernel);
/* "portable", "avx2", "avx512-vpopcntdq", or "" for an unknown value. */
const char *rp_hamming_kernel_name(int kernel);

typedef struct rp_match_params {
    int matcher;            /* rp_matcher_kind */
    float ratio;            /* Lowe's ratio test on the two nearest neighbours; >= 1 disables it */
    int mutual;             /* keep only pairs that are each other's nearest neighbour */
    int lsh_table_number;   /* FLANN LSH, binary descriptors */
    int lsh_key_size;
    int lsh_multi_probe_level;
    int kdtree_trees;       /* FLANN KD-trees, float descriptors */
    int flann_checks;
    int hamming_kernel;     /* rp_hamming_kernel, brute force on binary descriptors */
} rp_match_params;

typedef struct rp_match {
    int reference_index;
    int current_index;
    float distance;
    /* distance over the second-nearest reference descriptor's (1 without a distinct second): Lowe's ratio */
    float ratio;
} rp_match;

/* Matches current features against reference features; *matches is released with rp_buffer_free. */
int rp_match_features(const rp_features *reference, const rp_features *current, const rp_match_params *params,
                      rp_match **matches, int *count, rp_status *status);

/* Matching guided by a first model: each current keypoint against the reference keypoints within radius_pixels of
   where `homography`'s inverse puts it, with Lowe's ratio among those only (a keypoint with one candidate is left out). */
typedef struct rp_guided_params {
    double radius_pixels;       /* reference pixels (> 0) */
    double ratio;               /* (0, 1] */
} rp_guided_params;

/* `homography` maps reference pixels to current pixels (row-major). *matches is released with rp_buffer_free. */
int rp_match_guided(const rp_features *reference, const rp_features *current, const double homography[9],
                    const rp_guided_params *params, rp_match **matches, int *count, rp_status *status);

/* A FLANN index over a reference's descriptors (LSH for binary, KD-trees for float), built once and searched
   for every current frame; searching does not modify it, so several threads may use one index at once.
   FLANN draws its hash functions from the calling thread's cv::RNG and its tree splits from C rand(): the
   build seeds both with a constant and restores the caller's states afterwards, so indexes repeat exactly from
   run to run and neither the thread's cv::RNG nor the process's rand() sequence moves. */
typedef struct rp_match_index rp_match_index;

int rp_match_index_create(const rp_features *reference, const rp_match_params *params, rp_match_index **out,
                          rp_status *status);
void rp_match_index_free(rp_match_index *index);
/* As rp_match_features(reference the index was built from, current, params): the prebuilt index serves the
   reference side when params->matcher is FLANN with the index's own LSH/KD-tree settings; other matchers and
   settings, and the reverse search of the mutual check, run as rp_match_features runs them. */
int rp_match_index_match(const rp_match_index *index, const rp_features *current, const rp_match_params *params,
                         rp_match **matches, int *count, rp_status *status);

/* The candidates matching filters: the two nearest reference descriptors of every current descriptor and, when
   params->mutual is set, the nearest current descriptor of every reference descriptor. Computed once, they give
   rp_match_features's matches for any ratio (and mutual check, when computed with it) without searching again;
   rp_match_features(reference, current, params) equals rp_neighbours_filter(neighbours, params->ratio,
   params->mutual). `index` (may be null) is a match index over `reference`, used as rp_match_index_match uses
   it. *bytes is the memory the handle holds. Read-only once made: several threads may filter one at once. */
typedef struct rp_neighbours rp_neighbours;

int rp_neighbours_compute(const rp_features *reference, const rp_features *current, const rp_match_params *params,
                          const rp_match_index *index, rp_neighbours **out, size_t *bytes, rp_status *status);
int rp_neighbours_filter(const rp_neighbours *neighbours, float ratio, int mutual, rp_match **matches, int *count,
                         rp_status *status);
void rp_neighbours_free(rp_neighbours *neighbours);

/* ---------------------------------------------------------------- geometry */

/* The shim's own estimator of the essential matrix (not an OpenCV flag): LO-MSAC with the five-point solver.
   The constants it shares with the gate (RP_RIVAL_DEGREES, RP_CHEIRALITY_*, RP_TRANSFER_PER_SAMPSON) are in
   rephoto_pose_constants.h. */
#define RP_METHOD_LO_MSAC 1

/* The robust loop's options, as PoseLib's RansacOptions (the registry's pose.* loop settings); checked once, by
   rp_check_loop_options, for every stage. */
typedef struct rp_loop_options {
    double threshold;     /* pixels */
    double confidence;    /* (0, 1): the adaptive bound's */
    int max_iterations;   /* LO-MSAC: samples solved at most (OpenCV's estimators: its cap) */
    int min_iterations;   /* LO-MSAC only: samples solved whatever the adaptive bound says */
    uint64_t seed;        /* LO-MSAC only: its sampler's seed */
    int prosac;           /* LO-MSAC only: the points come best first; draw samples progressively (PROSAC) */
    int runners_up;       /* LO-MSAC only: minimal models kept besides the best; a search that ends uncertified
                             optimises them all, a certified one those RP_RIVAL_DEGREES or more from its rotation (other
                             basins); the rival is sought among them (0: none) */
    double max_disagreement_degrees;  /* LO-MSAC only: when the search ends uncertified (the cap reached before
                                         the adaptive bound), a second one (another seed, half the cap) that
                                         finds a lower cost further than this rotation (5x in translation)
                                         fails the estimate; 0: a single search */
} rp_loop_options;

/* The essential-matrix estimator's options: which estimator, what its samples must pass and how its answer is
   refined. */
typedef struct rp_essential_options {
    int method;           /* RP_METHOD_LO_MSAC 1, or OpenCV's findEssentialMat: cv::RANSAC 8, LMEDS 4, USAC_* 32..38 */
    int refine;           /* Levenberg-Marquardt on the MSAC cost of the Sampson error */
    double cauchy_scale;  /* LO-MSAC with refine only: after the MSAC refinement, a local polish on a Cauchy loss of the
                             Sampson errors within the threshold, its scale this many times their robust noise
                             (1.4826 x median, at least 0.1 px); a move of 5 degrees or more is not taken. 0: none */
    double max_parallax_degrees;  /* LO-MSAC only: hypotheses with a sample point's parallax above this are
                                     skipped (0: none are) */
    double screen_degrees; /* LO-MSAC with keypoint frames only: a sample is solved only when its five keypoints'
                              orientations turn alike within this many degrees, and */
    double screen_octaves; /* their scales change alike within this many octaves (largest minus smallest); the
                              stopping rule allows for the all-inlier samples it turns away. max_iterations then
                              caps the samples solved, and at most 16 x max_iterations are drawn. 0 degrees: off */
    int portable_kernels; /* 1 runs the portable kernels where AVX2 would be used (scoring, refinement, inlier
                             passes); they give the same results (tests check it), 0 picks by CPU */
} rp_essential_options;

/* The essential-matrix search's options: its loop's and its estimator's. The thresholds that accept or refuse a pose
   are RephotoKit's (PoseDecision), and the homography has its own (rp_homography_params). */
typedef struct rp_robust_params {
    rp_loop_options loop;
    rp_essential_options essential;
} rp_robust_params;

/* The loop's options checked: a positive threshold, confidence in (0, 1), counts of at least 0 and a finite,
   non-negative disagreement. RP_OK or RP_ERR_INVALID_ARGUMENT with the first that fails named. */
int rp_check_loop_options(const rp_loop_options *loop, rp_status *status);

/* OpenCV 4.6 runs its robust estimators from a fixed internal random state (RANSAC, LMEDS and the USAC
   methods alike), and LO-MSAC from `seed` in a generator of its own: the same input always gives the same
   answer. */

/* OpenCV's findHomography and what it reads (the registry's homography.*). */
typedef struct rp_homography_params {
    int method;           /* cv::RANSAC 8, LMEDS 4, RHO 16, USAC_* 32..38, 0 = least squares on all points */
    double threshold;     /* transfer error in the current frame, pixels */
    double confidence;
    int max_iterations;
} rp_homography_params;

/* H maps reference pixels to current pixels. `reference_xy` and `current_xy` hold n x,y pairs. `inliers`
   (capacity `inliers_capacity` >= n, may be NULL) receives 1 for inliers. */
int rp_find_homography(const double *reference_xy, const double *current_xy, int n, const rp_homography_params *params,
                       double homography[9], uint8_t *inliers, size_t inliers_capacity, int *inlier_count,
                       rp_status *status);

/* A camera: pinhole intrinsics with OpenCV's distortion model, and the image size they belong to. */
typedef struct rp_camera {
    double K[9];
    double distortion[14];
    int distortion_count;  /* 0, 4, 5, 8, 12 or 14 */
    int width;             /* 0 when unknown */
    int height;
} rp_camera;

typedef struct rp_relative_pose {
    double R[9];                /* X_current = R X_reference + t */
    double t[3];                /* unit length */
    int inliers;                /* correspondences within the threshold of E */
    int in_front;               /* of those, triangulated in front of both cameras */
    double sampson_rms_pixels;  /* over the inliers: normalised Sampson error times the mean focal length */
    int iterations;             /* LO-MSAC samples solved (0 for OpenCV's estimators) */
    double rotation_sigma_degrees;     /* 1-sigma (largest axis) of the rotation, from the inliers' Hessian */
    double translation_sigma_degrees;  /* 1-sigma (largest axis) of the translation direction */
    double parallax_degrees;    /* median angle between R b_reference and b_current over the inliers */
    double noise_pixels;        /* robust scale of the inliers' Sampson errors */
    double gric_essential;      /* Torr's GRIC of the essential matrix, on the inliers; the lower model wins */
    double gric_homography;     /* GRIC of a homography fitted robustly to the same inliers */
    double rotation_only_R[9];  /* pure rotation fitted to those inliers (orthogonal Procrustes, refitted) */
    int rotation_support;       /* inliers that rotation transfers within RP_TRANSFER_PER_SAMPSON x the threshold */
    double gric_rotation;       /* GRIC of that rotation as a homography of 3 parameters (on the same inliers and
                                   scale as gric_homography): not above it, a rotation explains them as a plane does */
    double log10_chance;        /* log10 of the expected number of as large inlier sets among unrelated matches */
    double rival_excess;        /* the rivals: the runners-up the search optimises (runners_up above), */
    double rival_degrees;       /* and the pose the plane's other solution replaced (rp_pose_twin). How much worse (MSAC cost over
                                   the squared threshold) the best of them RP_RIVAL_DEGREES or more from the pose fits,
                                   and how far it is (the larger of the rotation and the sign-free translation
                                   angle); HUGE_VAL and 0 when there is none */
    double rival_R[9];          /* that rival's rotation (the identity when there is none) */
    int has_twin;               /* on a plane E has two solutions; 1 when the homography of the inliers (as in */
    int twin_refutation;        /* GRIC) decomposes into one other than R, t: the inliers that one (refined) rejects,
                                   minus the correspondences it alone accepts */
    double twin_R[9];           /* that other solution's rotation (the identity when there is none) */
    int reproductions;          /* searches run to reproduce a weak pose (rp_pose_reproduce), 0 when */
    double reproduction_degrees;  /* none ran; the rotation from the pose within which the required number of them
                                     ended (the n-th nearest of them for n required; HUGE_VAL when fewer than n found
                                     anything) */
    int guided;                 /* 1 when the pose came from the sensor-guided search (rp_pose_guided_search):
                                   log10_chance then counts that search's samples, not the main search's */
    int well_triangulated;      /* inliers whose parallax exceeds RP_WELL_TRIANGULATED_SIGMAS of its error, */
    int well_in_front;          /* of those, in front of both cameras, */
    double cheirality_log10_chance;  /* and log10 of the chance of at least as many in front, each a fair coin */
    int rival_fits_better;      /* 1 when that rival's MSAC cost is below the pose's (rival_excess is then below 0):
                                   only the sensor (the prior's choice or the guided search) keeps such a pose */
} rp_relative_pose;
/* ---------------------------------------------------------------- the relative pose in stages

   The estimator searches and reports evidence; RephotoKit's PoseDecision decides between the answers and asks for
   the sensor-guided search and the reproductions. The points are undistorted once (rp_pose_problem), and each stage
   draws from a seed of its own, so the stages give what one call would. */

/* The correspondences and cameras every stage reads: n x,y pairs each, and the keypoints' frames (n angle, size
   pairs each, may be NULL) for the sample screen: a negative or non-finite angle or a size that is not positive turns the
   screen off for the call. */
typedef struct rp_pose_input {
    const double *reference_xy;
    const double *current_xy;
    int n;
    const rp_camera *reference_camera;
    const rp_camera *current_camera;
    const float *reference_frames;
    const float *current_frames;
} rp_pose_input;

/* The correspondences undistorted once, with the parameters checked, for every stage below: made once per set of
   correspondences and parameters (the arrays are copied; they need not outlive the call), freed with
   rp_pose_problem_free. The stages keep the plane fitted to a pose's inliers for the next stage on the same pose, so
   one stage at a time per problem. */
typedef struct rp_pose_problem rp_pose_problem;
int rp_pose_problem_create(const rp_pose_input *input, const rp_robust_params *params, rp_pose_problem **problem, rp_status *status);
void rp_pose_problem_free(rp_pose_problem *problem);

/* One answer of the search and its evidence record. */
typedef struct rp_pose_candidate {
    double R[9];                   /* X_current = R X_reference + t */
    double t[3];                   /* unit length */
    double cost;                   /* MSAC cost of the Sampson errors, normalised units squared */
    double excess;                 /* (cost - the best's cost) / threshold²: inliers' worth (0 for the best) */
    int inliers;                   /* correspondences within the threshold */
    double log10_chance;           /* of as many inliers among unrelated matches, over the search's models */
    int well_triangulated;         /* under the decomposition putting most inliers in front: as */
    int well_in_front;             /* rp_relative_pose's cheirality fields */
    double cheirality_log10_chance;
    double prior_degrees;          /* rotation from the prior (rp_pose_search's prior_R; 0 without one) */
    double apart_degrees;          /* the larger of the rotation and sign-free translation angles from the pose
                                      compared with (the best, or rp_pose_guided_search's pose) */
} rp_pose_candidate;

/* The search: LO-MSAC (or OpenCV's estimator), then its pose and its runners-up refined alike, in the search's order
   (its own pose first; capacity >= the problem's loop.runners_up + 1), each with its evidence record: `excess` against the
   first's cost, `apart_degrees` 0. Which fits best RephotoKit picks (PoseDecision.cheapest). `prior_R` (may be
   NULL): the sensor's rotation the records measure against. `models`: the samples behind the chance (LO-MSAC's
   solved samples, the cap for OpenCV's); `threshold_squared` the threshold in normalised units, squared, the
   unit of `excess`. */
typedef struct rp_pose_search_result {
    int candidates;
    int iterations;
    long models;
    double threshold_squared;
} rp_pose_search_result;

int rp_pose_search(const rp_pose_problem *problem, const double *prior_R,
                   rp_pose_search_result *out, rp_pose_candidate *candidates, size_t candidates_capacity, rp_status *status);

/* The plane's other solution: the homography of the pose's (R, t, `cost`) inliers (the plane GRIC fits) decomposed,
   the decomposition furthest from the pose, refined (the problem's essential.refine). `found` 0 when the inliers lie on no plane or
   every decomposition is the pose; otherwise `twin` (its chance over `models`, `excess` against `cost`,
   `apart_degrees` from the pose) and `refutation`: the pose's inliers the twin rejects minus the correspondences it
   alone accepts. Whether it replaces the pose RephotoKit decides (PoseDecision.twinReplaces). */
int rp_pose_twin(const rp_pose_problem *problem, const double R[9], const double t[3], double cost,
                 long models, int *found, rp_pose_candidate *twin, int *refutation, rp_status *status);

/* The sensor-guided search: `samples` three-point samples of a pose whose rotation is prior_R turned by φ about
   `axis` (up in the reference camera, any length; |φ| <= degrees) and a translation, then local optimisation of
   the best, refined on all correspondences (`refine`). The loop's seed is derived from `seed` (pose.seed). */
typedef struct rp_guided_search_params {
    double prior_R[9];
    double degrees;
    double axis[3];
    int samples;
    uint64_t seed;
    int refine;
} rp_guided_search_params;

/* `found` 0 when no sample gave a pose within `degrees` of the prior; otherwise `candidate` (its apart_degrees
   from pose_R, pose_t). the loop's threshold and the kernels' choice are the estimate's (rp_robust_params). */
int rp_pose_guided_search(const rp_pose_problem *problem, const rp_guided_search_params *guided,
                          const double pose_R[9], const double pose_t[3], int *found, rp_pose_candidate *candidate,
                          rp_status *status);

/* The evidence of the pose decided (R, t, `cost`) and its rivals (the answers it was preferred to, in order: R, t
   and cost read): the decomposition that puts most inliers in front, the polish, then the record. `guided`: the pose came
   from the guided search, whose `guided_samples` the chance then counts instead of `models`. The reproductions'
   fields are left 0 (rp_pose_reproduce). `inliers` (capacity >= n, may be NULL): 1 for points within the threshold of E; `sampson_pixels` (capacity
   >= n, may be NULL): every point's Sampson distance to E, in pixels. */
int rp_pose_evidence(const rp_pose_problem *problem, const double R[9], const double t[3], double cost,
                     const rp_pose_candidate *rivals, int rival_count, int guided, long models, int guided_samples, int iterations,
                     rp_relative_pose *pose, uint8_t *inliers, size_t inliers_capacity, double *sampson_pixels,
                     size_t sampson_capacity, rp_status *status);

/* Loops of other seeds (derived from the problem's loop.seed), each stopping once within `degrees` of R in rotation, at half
   the cap at most, until `count` have, or more than `misses` ended further. */
typedef struct rp_reproduction_params {
    int count;     /* 1...64 */
    int misses;    /* 0...64 */
    double degrees;
} rp_reproduction_params;

/* `runs`: the loops run; `degrees`: the rotation within which `count` of them ended (the count-th nearest;
   HUGE_VAL when fewer found anything). */
int rp_pose_reproduce(const rp_pose_problem *problem, const rp_reproduction_params *reproduction,
                      const double R[9], const double t[3], int *runs, double *degrees, rp_status *status);


/* Rotation-only model of the `selected` correspondences (n flags, at least 3 set): the rotation R (X_current =
   R X_reference) that best aligns their undistorted bearings (orthogonal Procrustes, refitted on those it transfers
   within shrinking multiples of the threshold), and `support`: how many of them it transfers within
   RP_TRANSFER_PER_SAMPSON thresholds (the problem's loop.threshold, pixels). The pose's own rotation support
   (rp_relative_pose.rotation_support) is counted by the same code; whether a rotation explains them RephotoKit
   decides (PoseDecision.rotationExplains). */
int rp_pose_rotation(const rp_pose_problem *problem, const uint8_t *selected, double R[9],
                     int *support, rp_status *status);

/* ---------------------------------------------------------------- tracking between robust updates */

/* Pyramidal Lucas-Kanade tracking (Bouguet) with a forward-backward check. */
typedef struct rp_track_params {
    int window;                 /* side of the search window, pixels of the analysed image (odd, 5...101) */
    int levels;                 /* pyramid levels above the image (0...8) */
    int max_iterations;         /* per level (1...100) */
    double epsilon;             /* stop once a step is under this, pixels (> 0) */
    double max_forward_backward;  /* a point is tracked when tracking it back lands within this, pixels of
                                     the analysed image (> 0) */
} rp_track_params;

/* An image's Lucas-Kanade pyramid (with derivatives), built once and tracked from and to. It keeps the image's
   full-resolution size and scale: points cross this API in full-resolution pixels, as everywhere. */
typedef struct rp_pyramid rp_pyramid;

int rp_pyramid_build(const rp_image *image, const rp_track_params *params, rp_pyramid **out, rp_status *status);
void rp_pyramid_free(rp_pyramid *pyramid);

/* Tracks n points (`from_xy`, x,y pairs) from one pyramid to another built with the same window and levels.
   `to_xy` (capacity >= 2n) receives the tracked positions, `tracked` (capacity >= n) 1 for points tracked there
   and back within params->max_forward_backward and inside the image, `forward_backward` (capacity >= n, may be
   NULL) that round trip's distance in full-resolution pixels (HUGE_VAL for lost points). */
int rp_track_points(const rp_pyramid *from, const rp_pyramid *to, const double *from_xy, int n,
                    const rp_track_params *params, double *to_xy, size_t to_capacity, uint8_t *tracked,
                    size_t tracked_capacity, double *forward_backward, size_t forward_backward_capacity,
                    rp_status *status);

/* Triangulates n correspondences (undistorted, then linear triangulation) under X_current = R X_reference + t.
   `xyz` (capacity >= 3n) receives the points in the reference camera's frame, `parallax_degrees` (>= n) the
   angle between the two rays, `reprojection_pixels` (>= n) the larger of the two reprojection errors, and
   `in_front` (>= n) 1 when the point lies in front of both cameras. */
int rp_triangulate(const double *reference_xy, const double *current_xy, int n, const rp_camera *reference_camera,
                   const rp_camera *current_camera, const double R[9], const double t[3], double *xyz,
                   size_t xyz_capacity, double *parallax_degrees, size_t parallax_capacity,
                   double *reprojection_pixels, size_t reprojection_capacity, uint8_t *in_front,
                   size_t in_front_capacity, rp_status *status);

/* Placing a camera among known points: P3P samples in the robust loop (MSAC on the reprojection error), then
   Levenberg-Marquardt on the inliers. */
typedef struct rp_placement_params {
    double threshold_pixels;    /* inlier reprojection error (> 0) */
    double confidence;          /* adaptive stopping, (0, 1) */
    int max_iterations;         /* samples solved at most (1...1e6) */
    uint64_t seed;
} rp_placement_params;

typedef struct rp_placement {
    double R[9];                /* X_camera = R X_points + t */
    double t[3];                /* not normalised: in the points' units */
    int inliers;
    double rms_pixels;          /* reprojection RMS over the inliers */
    double t_covariance[9];     /* of t, from the inliers' Gauss-Newton Hessian at the noise max(rms_pixels,
                                   RP_LOCALISATION_FLOOR_PIXELS); the points taken as exact */
    double rotation_sigma_degrees;  /* 1-sigma (largest axis) of the rotation, from the same Hessian */
} rp_placement;

/* `xyz` n points, `xy` their pixels in the camera; `inliers` (capacity >= n, may be NULL) 1 for inliers.
   RP_ERR_ESTIMATION when fewer than four points or no sample gives a camera. */
int rp_place_camera(const double *xyz, const double *xy, int n, const rp_camera *camera, const rp_placement_params *params,
                    rp_placement *placement, uint8_t *inliers, size_t inliers_capacity, rp_status *status);

/* ---------------------------------------------------------------- the reference camera's focal length */

/* An old reference photo's camera is unknown: its focal length is estimated from correspondences with the
   calibrated current camera, its principal point taken at the reference image's centre and no distortion.
   The stages below search and report; which model holds, which answer is taken and its sigma are decided by
   the caller (ReferenceFocalDecision.swift). Two models: a relative pose when the cameras stand apart (the scan:
   each focal length on a grid gets a robust essential-matrix search; or the six-point loop with the focal length
   free), and a rotation (K_current^-1 H K_reference is one) when they share a centre, which a fundamental matrix
   then does not determine. `reference_xy` in the reference image's pixels (width x height), `current_xy` in the
   current camera's. Each stage reads the fields of `params` it needs and checks them all; RP_ERR_ESTIMATION when
   fewer than eight correspondences. */
typedef struct rp_focal_params {
    double threshold_pixels;    /* inlier distance of both models, in pixels (> 0) */
    double min_focal;           /* the focal length searched, reference pixels (0 < min_focal < max_focal) */
    double max_focal;
    double principal_point_sigma;  /* the assumed principal point's 1 sigma, a fraction of the longer side (0...1) */
    double span_inliers;        /* the scanned focal lengths whose pose fits within this many inliers' worth of the
                                   best span span_low...span_high (>= 0) */
    int max_iterations;         /* each scanned focal length's essential-matrix search: samples solved, at most */
    int min_iterations;         /* and at least (0 <= min_iterations <= max_iterations) */
    uint64_t seed;              /* its sampler's seed, the same at every focal length, and the six-point loop's */
    int six_point_iterations;   /* the six-point loop's samples solved, at most (>= 1 and >= min_iterations;
                                   read by rp_focal_free only) */
} rp_focal_params;

/* A refined focal length (rp_focal_refine, rp_focal_free). */
typedef struct rp_focal {
    double focal;               /* reference pixels, refined on the inliers' pixel residuals */
    double sigma_percent;       /* its 1 sigma, % of it: the two below combined */
    double noise_sigma_percent; /* from the curvature of the residuals' cost over the focal length (each with its
                                   best pose); HUGE_VAL when that cost has no minimum there */
    double principal_point_sigma_percent;  /* the part of sigma_percent the principal point's spread adds */
    double principal_point_x;   /* the principal point, in reference_xy's pixels: estimated with the focal length */
    double principal_point_y;   /* under a prior of principal_point_sigma about the centre where the relative pose
                                   allows it, the centre otherwise */
    int principal_point_estimated;  /* 1 when it was estimated (sigma_percent then the focal length's marginal 1 sigma) */
    int inliers;                /* the correspondences the refinement kept */
} rp_focal;

typedef struct rp_focal_scan_result {
    double focal;               /* the best focal length of the scan's grid, reference pixels (0: none) */
    double cost;                /* its pose's truncated squared pixel residuals over every correspondence (HUGE_VAL: none) */
    int inside;                 /* 1 when it is neither the grid's first focal length nor its last */
    int inliers;                /* its pose's, within threshold_pixels and in front of both cameras */
    double low, high;           /* the grid's focal lengths within one inlier's worth of the best */
    double span_low, span_high; /* and within span_inliers' worth */
    double R[9];                /* its pose, X_current = R X_reference + t (identity and (0, 0, 1) without one) */
    double t[3];
} rp_focal_scan_result;

typedef struct rp_focal_colocated_result {
    double focal;               /* the focal length making K_current^-1 H K_reference nearest a rotation (0: none) */
    double gap;                 /* how far it is from one, |M^T M / (trace / 3) - I| (HUGE_VAL: none) */
    int inside;                 /* 1 when not at an end of min_focal...max_focal */
    int inliers;                /* the homography's */
    int fundamental_inliers;    /* of a fundamental matrix fitted before it */
} rp_focal_colocated_result;

/* The cameras apart: a robust essential-matrix search at each focal length of a log grid. `inliers` (capacity
   >= n, may be NULL): 1 for the best pose's inliers. */
int rp_focal_scan(const double *reference_xy, const double *current_xy, int n, int reference_width, int reference_height,
                  const rp_camera *current_camera, const rp_focal_params *params, rp_focal_scan_result *result,
                  uint8_t *inliers, size_t inliers_capacity, rp_status *status);
/* The cameras at one place: a fundamental matrix and a homography fitted robustly (OpenCV's RANSAC), and the focal
   length that makes the homography a rotation. `inliers` (capacity >= n, may be NULL): 1 for the homography's. */
int rp_focal_colocated(const double *reference_xy, const double *current_xy, int n, int reference_width, int reference_height,
                       const rp_camera *current_camera, const rp_focal_params *params, rp_focal_colocated_result *result,
                       uint8_t *inliers, size_t inliers_capacity, rp_status *status);

/* Where rp_focal_refine starts: a focal length inside min_focal...max_focal and a model; a relative pose's start
   pose the given one (the scan's) when has_pose, else the scan's search at that focal length finds one. */
typedef struct rp_focal_start {
    double focal;
    int model;                  /* 1 relative pose, 2 rotation */
    int has_pose;
    double R[9];
    double t[3];
} rp_focal_start;
/* The refinement of `start` on the correspondences `inliers` marks (n entries; NULL: every one): the focal length on
   their pixel residuals, from within 10 % of the start, then again on those within three times their robust noise;
   its sigma from the profile's curvature; the principal point (relative pose only). */
int rp_focal_refine(const double *reference_xy, const double *current_xy, int n, int reference_width, int reference_height,
                    const rp_camera *current_camera, const rp_focal_params *params, const rp_focal_start *start,
                    const uint8_t *inliers, rp_focal *focal, rp_status *status);

/* The cameras apart with the focal length free: the robust loop over six-point samples (rp_focal_six_point; its
   model's cost as the scan's, over every correspondence at the centre), then rotation, translation, focal length and
   principal point refined together on its inliers (with the principal point's prior), and again on those within
   three times the refined noise. */
typedef struct rp_focal_free_result {
    int found;                  /* 1 when the loop found a model */
    double cost;                /* its truncated squared pixel residuals over every correspondence (HUGE_VAL: none) */
    int loop_inliers;           /* its inliers (the refinement runs on 12 or more) */
    int refined;                /* 1 when the refinement ran and its covariance could be inverted */
    rp_focal focal;             /* the refinement's answer, when it ran (principal_point_estimated 1): the focal length's
                                   sigma its marginal (log f), the noise's part with the principal point held */
} rp_focal_free_result;
int rp_focal_free(const double *reference_xy, const double *current_xy, int n, int reference_width, int reference_height,
                  const rp_camera *current_camera, const rp_focal_params *params, rp_focal_free_result *result, rp_status *status);

/* The minimal solver of the relative pose with the reference's focal length unknown: six correspondences, the
   current camera calibrated, the reference's principal point at (principal_x, principal_y) and square pixels. Its
   poses (X_current = R X_reference + t, |t| = 1) with every point in front, each with the focal length (reference
   pixels, within min_focal...max_focal), into `poses` (capacity >= 40); `count` their number. */
typedef struct rp_focal_pose {
    double R[9];
    double t[3];
    double focal;
} rp_focal_pose;
int rp_focal_six_point(const double *reference_xy, const double *current_xy, double principal_x, double principal_y,
                       const rp_camera *current_camera, double min_focal, double max_focal, rp_focal_pose *poses, int capacity,
                       int *count, rp_status *status);

/* The translation's direction without the reference's camera: the current image's epipole e of a fundamental matrix
   fitted robustly (OpenCV's USAC_MAGSAC, `threshold_pixels`) to the correspondences gives t ∝ K_current^-1 e
   (X_current = R X_reference + t), sign-free, whatever the reference's focal length and principal point.
   `reference_xy` in the reference's pixels, `current_xy` in the current camera's. RP_ERR_ESTIMATION when fewer than
   eight correspondences or no matrix. */
typedef struct rp_epipole_translation {
    double t[3];                /* unit length */
    int inliers;                /* of the fundamental matrix */
} rp_epipole_translation;

int rp_translation_from_epipole(const double *reference_xy, const double *current_xy, int n, const rp_camera *current_camera,
                                double threshold_pixels, rp_epipole_translation *out, rp_status *status);

/* A second matching pass along epipolar lines: which candidate correspondences (looser descriptor matches) agree
   with a fundamental matrix fitted robustly (OpenCV's USAC_MAGSAC) to a first pass's correspondences. Points are
   multiplied by their image's scale into the pixels `threshold_pixels` is in. keep[i] is 1 for a candidate whose
   Sampson distance is under it; `*inliers` the matrix's inliers among the first pass's. RP_ERR_ESTIMATION when fewer
   than eight correspondences or no matrix. */
typedef struct rp_epipolar_params {
    double threshold_pixels;    /* the matrix's inlier distance and a candidate's (> 0) */
    double reference_scale;     /* into those pixels, each image's (> 0) */
    double current_scale;
} rp_epipolar_params;

int rp_epipolar_consistent(const double *reference_xy, const double *current_xy, int n, const double *candidate_reference_xy,
                           const double *candidate_current_xy, int m, const rp_epipolar_params *params, unsigned char *keep,
                           int *inliers, rp_status *status);

/* ---------------------------------------------------------------- a scanned print's border */

typedef struct rp_border_params {
    double colour_tolerance;    /* grey levels a border pixel may differ from the border's colour (the outermost
                                   ring's median) after a 5x5 median filter (0, 255] */
    double max_band;            /* widest band searched, a fraction of the image's side (0, 0.5) */
    double max_tilt_degrees;    /* the print's largest rotation in the scan [0, 45] */
    double margin;              /* the box keeps this fraction of the longer side clear of the print's edge */
} rp_border_params;

typedef struct rp_print_border {
    int found;                  /* 1 when the image is a photo inside a border */
    double x, y, width, height; /* the photo's axis-aligned inner box, full-resolution pixels */
    double tilt_degrees;        /* the print's rotation in the scan, positive clockwise in the image */
    int sides;                  /* bit mask of the sides with a band: 1 top, 2 right, 4 bottom, 8 left */
    int colour;                 /* the border's grey level */
} rp_print_border;

/* A band of one colour (white, cream, grey or black) around a photo with straight inner edges, on at least two
   sides, possibly slightly rotated. `border->found` is 0 when there is none, or its edge is not straight. */
int rp_detect_print_border(const rp_image *image, const rp_border_params *params, rp_print_border *border, rp_status *status);

/* ---------------------------------------------------------------- calibration I/O */

/* Calibration files are read in Swift (RephotoKit's CameraIntrinsics.load, FileStorageReader), not by OpenCV's FileStorage parser,
   which crashes on deep nesting and hangs on some small YAML files. */

/* What a chessboard calibration adds to a calibration file: every field is written when set. */
typedef struct rp_calibration_report {
    double mean_error;          /* px; written when >= 0 */
    const double *view_errors;  /* per-view RMS reprojection errors, px; written when view_count > 0 */
    int view_count;
    int board_width;            /* inner corners; board fields written when all three are > 0 */
    int board_height;
    double square_size;         /* metres */
} rp_calibration_report;

/* Encodes OpenCV FileStorage text (format from `extension`: "yml"/"yaml", "xml", "json") with image_width,
   image_height, camera_matrix, distortion_coefficients and, when `report` is non-NULL, its fields as
   avg_reprojection_error, per_view_reprojection_errors, board_width, board_height, square_size. The caller
   writes *bytes (released with rp_buffer_free): FileStorage reports no write error, so a full disk left a
   truncated file behind a success. */
int rp_calibration_encode(const char *extension, const rp_camera *camera, const rp_calibration_report *report,
                          uint8_t **bytes, size_t *length, rp_status *status);

#ifdef __cplusplus
}
#endif

#endif
