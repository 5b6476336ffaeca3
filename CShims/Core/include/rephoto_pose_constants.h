/* The constants the relative-pose estimator (CShims/Core/pose/) and the rules in Swift (PoseDecision) must agree
   on: defined once here, read by both. Valid C; included by rephoto_shim.h. */
#ifndef REPHOTO_POSE_CONSTANTS_H
#define REPHOTO_POSE_CONSTANTS_H

/* Two poses this far apart in degrees (rotation, or the sign-free translation angle) are different answers: a
   runner-up this far from the pose is a rival, and a search optimises runners-up this far from its best model
   (other basins). Nearer, they are the same answer give or take its noise. */
#define RP_RIVAL_DEGREES 10.0

/* Cheirality, judged on the inliers whose depth sign noise cannot flip: triangulated through a parallax of
   RP_WELL_TRIANGULATED_SIGMAS standard deviations of its own error (sqrt 2 x the inliers' noise scale). Under the
   right decomposition nearly all of them lie in front of both cameras; a pose stands when as many in front would
   arise by chance (each point a fair coin between this decomposition and the others) at most 10^RP_CHEIRALITY_LOG10_CHANCE,
   and is judged on it only from RP_CHEIRALITY_MIN_POINTS such points (fewer cannot reach that chance): the rule is
   PoseDecision.cheiralityRefutes, for the pose and for a runner-up the sensor would choose. 10^-3 refused Strecha 0->6 at
   1280 px, right within 3 degrees, on 13 of 15 in front (10^-2.4). */
#define RP_WELL_TRIANGULATED_SIGMAS 3.0

/* The noise scale that test assumes is at least this many pixels: how finely features are localised, beyond the
   inliers' measured scatter (which E partly absorbs, and which clean or rendered images bring near 0). Under it,
   a parallax is not resolved: on the bundled synth-approach sequence, with a measured scale of 0.1 px, frames of
   median parallax 1.4 px had translations 12-18 degrees off at a 1-sigma of 1 degree. */
#define RP_LOCALISATION_FLOOR_PIXELS 0.4
#define RP_CHEIRALITY_LOG10_CHANCE (-2.0)
#define RP_CHEIRALITY_MIN_POINTS 7

/* A pure rotation explains the inliers when it transfers at least this share of them within
   RP_TRANSFER_PER_SAMPSON thresholds (rp_relative_pose.rotation_support). */
#define RP_ROTATION_SUPPORT_FRACTION 0.8

/* A transfer error (2-D, both images' noise) equivalent to a Sampson threshold (1-D): equal 95 % chi-square
   coverage, sqrt(2) x 2.448 / 1.960. */
#define RP_TRANSFER_PER_SAMPSON 1.77

#endif
