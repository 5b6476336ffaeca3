"""Relative-pose accuracy on exactly the matches rephoto computed (rephoto-bench export-matches): rephoto's
own answers (read from the export), PoseLib 2.0.5 and OpenCV 4.6 USAC_MAGSAC run here on the same points,
the same cameras and the same 1-pixel threshold. Prints one table row per set and method.

    python scripts/bench_accuracy.py EXPORT.jsonl... [--csv FILE]

Errors: rotation = angle of R_est R_trueᵀ; translation = angle between unit directions (signed, 0-180°).
A pair's error is the larger of the two; failures and undetermined translations count as 180° (mAA as the
Image Matching Challenge computes it: the mean over thresholds 1..N° of the share of pairs below each).
"Wrong" counts confident wrong answers: a pose returned with a pair error over 10° (rotation only when the
translation is undetermined). On sets without translation truth (a pure rotation) only rotation counts, and
the share flagged rotation-only is reported for rephoto.
"""
import argparse
import json
import math
import sys
import time

import cv2
import numpy as np
import poselib


def rotation_error(R, T):
    c = (np.trace(R @ T.T) - 1) / 2
    return math.degrees(math.acos(max(-1.0, min(1.0, c))))


def translation_error(t, T):
    t = np.asarray(t, float)
    T = np.asarray(T, float)
    c = float(t @ T) / (np.linalg.norm(t) * np.linalg.norm(T))
    return math.degrees(math.acos(max(-1.0, min(1.0, c))))


def maa(errors, n):
    return float(np.mean([np.mean([e < k for e in errors]) for k in range(1, n + 1)])) if errors else float("nan")


def undistorted(points, camera):
    K = np.array(camera["K"], float)
    d = np.array(camera["distortion"], float) if camera["distortion"] else None
    return cv2.undistortPoints(points.reshape(-1, 1, 2), K, d).reshape(-1, 2)


def poselib_camera(camera):
    K = camera["K"]
    d = camera["distortion"]
    if d:
        k = (list(d) + [0] * 5)[:5]
        if any(abs(x) > 0 for x in k[4:]):
            raise SystemExit("PoseLib's OPENCV model has no k3: a camera with k3 cannot be compared")
        return {"model": "OPENCV", "width": camera["width"], "height": camera["height"],
                "params": [K[0][0], K[1][1], K[0][2], K[1][2], k[0], k[1], k[2], k[3]]}
    return {"model": "PINHOLE", "width": camera["width"], "height": camera["height"],
            "params": [K[0][0], K[1][1], K[0][2], K[1][2]]}


def run_poselib(pair, a, b, threshold):
    start = time.perf_counter()
    pose, info = poselib.estimate_relative_pose(a, b, poselib_camera(pair["referenceCamera"]),
                                                poselib_camera(pair["currentCamera"]),
                                                {"max_epipolar_error": threshold}, {})
    ms = (time.perf_counter() - start) * 1000
    if info.get("num_inliers", 0) < 5:
        return None, None, ms
    return np.array(pose.R), np.array(pose.t), ms


def run_opencv(pair, a, b, threshold):
    ra, rb = pair["referenceCamera"], pair["currentCamera"]
    focal = 0.25 * (ra["K"][0][0] + ra["K"][1][1] + rb["K"][0][0] + rb["K"][1][1])
    start = time.perf_counter()
    na, nb = undistorted(a, ra), undistorted(b, rb)
    E, mask = cv2.findEssentialMat(na, nb, np.eye(3), method=cv2.USAC_MAGSAC, prob=0.999,
                                   threshold=threshold / focal, maxIters=10000)
    if E is None or E.shape[0] < 3:
        return None, None, (time.perf_counter() - start) * 1000
    _, R, t, _ = cv2.recoverPose(E[:3], na, nb, np.eye(3), mask=mask)
    ms = (time.perf_counter() - start) * 1000
    return R, t.ravel(), ms


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exports", nargs="+")
    parser.add_argument("--csv")
    parser.add_argument("--threshold", type=float, default=1.0, help="pixels (rephoto's pose.essential.threshold)")
    args = parser.parse_args()

    rows = []
    for path in args.exports:
        with open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                pair = json.loads(line)
                a = np.array(pair["reference"], float).reshape(-1, 2)
                b = np.array(pair["current"], float).reshape(-1, 2)
                T = np.array(pair["truthRotation"], float)
                tt = pair.get("truthTranslation")
                answers = {}
                for name, answer in sorted(pair["methods"].items()):
                    R = np.array(answer["rotation"], float) if answer["status"] == "ok" else None
                    answers[name] = (R, answer.get("translation"), answer["milliseconds"], answer.get("rotationOnly", False))
                R, t, ms = run_poselib(pair, a, b, args.threshold)
                answers["poselib-2.0.5"] = (R, t, ms, False)
                R, t, ms = run_opencv(pair, a, b, args.threshold)
                answers["opencv-usac-magsac"] = (R, t, ms, False)
                for name, (R, t, ms, rotation_only) in answers.items():
                    er = rotation_error(R, T) if R is not None else 180.0
                    et = translation_error(t, tt) if (R is not None and t is not None and tt is not None) else (None if tt is None else 180.0)
                    rows.append({"set": pair["set"], "pair": pair["pair"], "method": name, "matches": len(a),
                                 "answered": R is not None, "rotation_error": er, "translation_error": et,
                                 "rotation_only": rotation_only, "translation_given": t is not None, "ms": ms})

    if args.csv:
        with open(args.csv, "w") as f:
            f.write("set,pair,method,matches,answered,rotation_error_deg,translation_error_deg,rotation_only,ms\n")
            for r in rows:
                et = "" if r["translation_error"] is None else f"{r['translation_error']:.4f}"
                f.write(f"{r['set']},{r['pair']},{r['method']},{r['matches']},{int(r['answered'])},{r['rotation_error']:.4f},{et},"
                        f"{int(r['rotation_only'])},{r['ms']:.3f}\n")

    header = f"{'set':<22} {'method':<22} {'pairs':>5} {'fail':>4} {'medR°':>7} {'medt°':>7} {'mAA@5':>6} {'mAA@10':>6} {'wrong':>5} {'rotOnly':>7} {'med ms':>7} {'p99 ms':>7}"
    print(header)
    print("-" * len(header))
    sets = list(dict.fromkeys(r["set"] for r in rows))
    for s in sets:
        methods = list(dict.fromkeys(r["method"] for r in rows if r["set"] == s))
        for m in methods:
            rs = [r for r in rows if r["set"] == s and r["method"] == m]
            has_t = any(r["translation_error"] is not None for r in rs)
            pair_errors = [max(r["rotation_error"], r["translation_error"]) if has_t else r["rotation_error"] for r in rs]
            answered = [r for r in rs if r["answered"]]
            med_r = np.median([r["rotation_error"] for r in answered]) if answered else float("nan")
            given = [r["translation_error"] for r in answered if r["translation_given"] and r["translation_error"] is not None]
            med_t = np.median(given) if given else float("nan")
            wrong = sum(1 for r in answered if max(r["rotation_error"], r["translation_error"] if (r["translation_given"] and r["translation_error"] is not None) else 0) > 10)
            ms = [r["ms"] for r in rs]
            rot_only = f"{sum(r['rotation_only'] for r in rs)}/{len(rs)}" if m.startswith("rephoto") else "-"
            print(f"{s:<22} {m:<22} {len(rs):>5} {len(rs) - len(answered):>4} {med_r:>7.2f} {med_t:>7.2f} {maa(pair_errors, 5):>6.3f} "
                  f"{maa(pair_errors, 10):>6.3f} {wrong:>5} {rot_only:>7} {np.median(ms):>7.1f} {np.percentile(ms, 99):>7.1f}")


if __name__ == "__main__":
    sys.exit(main())
