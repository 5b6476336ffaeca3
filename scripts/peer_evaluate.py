#!/usr/bin/env python3
"""Benchmark peer for `rephoto evaluate`: the same per-frame evaluation written with opencv-python
(opencv-python-headless==4.6.0.66, the OpenCV version RephotoKit uses), straightforwardly: one frame after
another, the reference's features detected again for every frame.

Per frame: decode both images, detect and describe, k=2 brute-force matching with Lowe's ratio 0.8,
homography (MAGSAC++, 3 px), undistorted points, essential matrix (RANSAC, 1 px) and recoverPose, and the
rotation error against the sequence's ground truth.

With --matcher flann the matching is FLANN LSH (table 6, key 12, probe 1, 50 checks), the index built on the
reference's descriptors for every frame.

usage: peer_evaluate.py --detector akaze|orb [--matcher bf|flann] SEQUENCE_DIR...
       (prints frames, seconds, frames/s, median rotation error)
"""
import argparse, csv, json, os, sys, time

import cv2
import numpy as np


def rotation_from_quaternion(w, x, y, z):
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--detector", choices=["akaze", "orb"], default="akaze")
    parser.add_argument("--matcher", choices=["bf", "flann"], default="bf")
    parser.add_argument("sequences", nargs="+")
    args = parser.parse_args()
    detector = cv2.AKAZE_create() if args.detector == "akaze" else cv2.ORB_create()
    if args.matcher == "flann":
        matcher = cv2.FlannBasedMatcher(dict(algorithm=6, table_number=6, key_size=12, multi_probe_level=1), dict(checks=50))
    else:
        matcher = cv2.BFMatcher(cv2.NORM_HAMMING)
    frames, errors = 0, []
    start = time.perf_counter()
    for folder in args.sequences:
        manifest = json.load(open(os.path.join(folder, "sequence.json")))
        k = manifest["intrinsics"]
        K = np.array([[k["fx"], 0, k["cx"]], [0, k["fy"], k["cy"]], [0, 0, 1.0]])
        dist = np.array(k.get("distortion") or [0, 0, 0, 0], dtype=float)
        rows = [r for r in csv.DictReader(open(os.path.join(folder, "frames.csv"))) if r["file"] != manifest["reference"]]
        for row in rows:
            reference = cv2.imread(os.path.join(folder, manifest["reference"]), cv2.IMREAD_GRAYSCALE)
            current = cv2.imread(os.path.join(folder, row["file"]), cv2.IMREAD_GRAYSCALE)
            kr, dr = detector.detectAndCompute(reference, None)
            kc, dc = detector.detectAndCompute(current, None)
            good = [m[0] for m in matcher.knnMatch(dc, dr, k=2) if len(m) == 2 and m[0].distance < 0.8 * m[1].distance]
            a = np.float64([kr[m.trainIdx].pt for m in good])
            b = np.float64([kc[m.queryIdx].pt for m in good])
            frames += 1
            if len(good) < 10:
                errors.append(180.0)
                continue
            cv2.findHomography(a, b, cv2.USAC_MAGSAC, 3.0, maxIters=2000, confidence=0.995)
            na = cv2.undistortPoints(a.reshape(-1, 1, 2), K, dist)
            nb = cv2.undistortPoints(b.reshape(-1, 1, 2), K, dist)
            focal = (K[0, 0] + K[1, 1]) / 2
            E, mask = cv2.findEssentialMat(na, nb, np.eye(3), cv2.RANSAC, 0.999, 1.0 / focal, 1000)
            if E is None or E.shape[0] < 3:
                errors.append(180.0)
                continue
            _, R, t, _ = cv2.recoverPose(E[:3], na, nb, np.eye(3), mask=mask)
            truth = rotation_from_quaternion(*[float(row[c]) for c in ("gt_qw", "gt_qx", "gt_qy", "gt_qz")])
            errors.append(np.degrees(np.arccos(np.clip((np.trace(R.T @ truth) - 1) / 2, -1, 1))))
    seconds = time.perf_counter() - start
    print(f"{frames} {seconds:.3f} {frames / seconds:.3f} {np.median(errors):.4f}")


if __name__ == "__main__":
    sys.exit(main())
