"""Relative-pose accuracy on exactly the matches rephoto computed (rephoto-bench export-matches): rephoto's
own answers (read from the export), PoseLib 2.0.5, COLMAP 4.2.1 (pycolmap) and OpenCV 4.6 USAC_MAGSAC run here on the same points,
the same cameras and the same 1-pixel threshold. Prints one table row per set and method.

    python scripts/bench_accuracy.py EXPORT.jsonl... [--csv FILE]

Errors: rotation = angle of R_est R_trueᵀ; translation = angle between unit directions (signed, 0-180°).
A pair's error is the larger of the two; failures and undetermined translations count as 180° (mAA as the
Image Matching Challenge computes it: the mean over thresholds 1..N° of the share of pairs below each).
"Wrong" counts confident wrong answers: a pose returned with a pair error over 10° (rotation only when the
translation is undetermined). On sets without translation truth (a pure rotation) only rotation counts, and
the share flagged rotation-only is reported for rephoto.

"rephoto-search" is rephoto's estimator alone: the search's own pose (from the export) before the gate and
the model selection, answered on every pair where the search found one, so that it compares with PoseLib
like for like; "rephoto" is what a caller gets, abstentions and nulled translations included.

With several seeds in the export (rephoto-bench export-matches --seeds N), rephoto and PoseLib run once per
seed on the same matches and the table gives means over seeds and the range of mAA@10: on the hard pairs a
search's answer depends on its random samples, and one seed can be lucky. Each method's mean mAA@10 is then
compared with PoseLib's, with a 95 % interval for the difference: a gap inside it is the seeds' noise.
"""
import argparse
import json
import math
import sys
import time

import cv2
import numpy as np
import poselib
import pycolmap


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


def msac_cost(R, t, na, nb, focal, threshold):
    """The estimators' shared objective: squared Sampson distances in pixels, truncated at the threshold."""
    if R is None or t is None:
        return None
    t = np.asarray(t, float)
    tx = np.array([[0, -t[2], t[1]], [t[2], 0, -t[0]], [-t[1], t[0], 0]])
    E = tx @ np.asarray(R, float)
    xa = np.c_[na, np.ones(len(na))]
    xb = np.c_[nb, np.ones(len(nb))]
    Ea, Etb = xa @ E.T, xb @ E
    r = np.sum(xb * Ea, axis=1)
    den = Ea[:, 0] ** 2 + Ea[:, 1] ** 2 + Etb[:, 0] ** 2 + Etb[:, 1] ** 2
    d2 = np.where(den > 0, r * r / np.maximum(den, 1e-300), 0) * focal * focal
    return float(np.minimum(d2, threshold * threshold).sum())


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


def run_poselib(pair, a, b, threshold, seed=0):
    start = time.perf_counter()
    pose, info = poselib.estimate_relative_pose(a, b, poselib_camera(pair["referenceCamera"]),
                                                poselib_camera(pair["currentCamera"]),
                                                {"max_epipolar_error": threshold, "seed": seed}, {})
    ms = (time.perf_counter() - start) * 1000
    if info.get("num_inliers", 0) < 5:
        return None, None, ms
    return np.array(pose.R), np.array(pose.t), ms


def run_pycolmap(pair, a, b, threshold, seed=0):
    """COLMAP 4.2.1's LO-RANSAC on the essential matrix (pycolmap.estimate_essential_matrix), threshold in pixels."""
    cameras = [pycolmap.Camera(model=c["model"], width=c["width"], height=c["height"], params=c["params"])
               for c in (poselib_camera(pair["referenceCamera"]), poselib_camera(pair["currentCamera"]))]
    options = pycolmap.RANSACOptions()
    options.max_error = threshold
    options.random_seed = seed
    options.num_threads = 1
    start = time.perf_counter()
    answer = pycolmap.estimate_essential_matrix(a, b, cameras[0], cameras[1], options)
    ms = (time.perf_counter() - start) * 1000
    if answer is None or answer.get("num_inliers", 0) < 5:
        return None, None, ms
    pose = answer["cam2_from_cam1"]
    return np.array(pose.rotation.matrix()), np.array(pose.translation), ms


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


def arguments(doc):
    """The command line both benchmark tables take: export files, --csv, --threshold."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("exports", nargs="+")
    parser.add_argument("--csv")
    parser.add_argument("--threshold", type=float, default=1.0, help="pixels (rephoto's pose.essential.threshold)")
    return parser.parse_args()


def exported_pairs(paths):
    """Every pair of rephoto-bench export-matches files, in order."""
    for path in paths:
        with open(path) as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)


def table_start(rows, note, header):
    """Prints how many seeds the rows hold with `note`, then the table's header and rule; returns the seeds."""
    seeds = sorted({r["seed"] for r in rows})
    print(f"{len(seeds)} seed{'s' if len(seeds) > 1 else ''}{note}")
    print(header)
    print("-" * len(header))
    return seeds


def main():
    args = arguments(__doc__)
    rows = []
    objective = []  # (set, rephoto-search's cost, PoseLib's cost, each method's pair error in that run)
    for pair in exported_pairs(args.exports):
        a = np.array(pair["reference"], float).reshape(-1, 2)
        b = np.array(pair["current"], float).reshape(-1, 2)
        T = np.array(pair["truthRotation"], float)
        tt = pair.get("truthTranslation")
        # One run per seed: rephoto's answers come from the export (pose.seed = the configured seed + 0, 1,
        # ...), PoseLib is run here with seed 0, 1, ...; OpenCV's USAC has a fixed internal state, so it repeats itself.
        for seed, methods in enumerate(pair["runs"]):
            answers = {}
            for name, answer in sorted(methods.items()):
                R = np.array(answer["rotation"], float) if answer["status"] == "ok" else None
                answers[name] = (R, answer.get("translation"), answer["milliseconds"], answer.get("rotationOnly", False))
                if name == "rephoto" and "searched" in answer:
                    # The estimator alone: the search's pose before the gate, answered whenever it found one.
                    searched = answer.get("searched")
                    answers["rephoto-search"] = (np.array(searched["rotation"], float) if searched else None,
                                                 searched["translation"] if searched else None, answer["milliseconds"], False)
            R, t, ms = run_poselib(pair, a, b, args.threshold, seed)
            answers["poselib-2.0.5"] = (R, t, ms, False)
            R, t, ms = run_pycolmap(pair, a, b, args.threshold, seed)
            answers["pycolmap-4.2.1"] = (R, t, ms, False)
            R, t, ms = run_opencv(pair, a, b, args.threshold)
            answers["opencv-usac-magsac"] = (R, t, ms, False)
            first = len(rows)
            for name, (R, t, ms, rotation_only) in answers.items():
                er = rotation_error(R, T) if R is not None else 180.0
                et = translation_error(t, tt) if (R is not None and t is not None and tt is not None) else (None if tt is None else 180.0)
                rows.append({"set": pair["set"], "pair": pair["pair"], "method": name, "seed": seed, "matches": len(a),
                             "answered": R is not None, "rotation_error": er, "translation_error": et,
                             "rotation_only": rotation_only, "translation_given": t is not None, "ms": ms})
            if "rephoto-search" in answers and tt is not None:
                ra, rb = pair["referenceCamera"], pair["currentCamera"]
                na, nb = undistorted(a, ra), undistorted(b, rb)
                focal = 0.25 * (ra["K"][0][0] + ra["K"][1][1] + rb["K"][0][0] + rb["K"][1][1])
                ours, theirs = answers["rephoto-search"], answers["poselib-2.0.5"]
                errors = {r["method"]: max(r["rotation_error"], r["translation_error"]) for r in rows[first:]}
                objective.append((pair["set"], msac_cost(ours[0], ours[1], na, nb, focal, args.threshold),
                                  msac_cost(theirs[0], theirs[1], na, nb, focal, args.threshold), errors))

    if args.csv:
        with open(args.csv, "w") as f:
            f.write("set,pair,method,seed,matches,answered,rotation_error_deg,translation_error_deg,rotation_only,ms\n")
            for r in rows:
                et = "" if r["translation_error"] is None else f"{r['translation_error']:.4f}"
                f.write(f"{r['set']},{r['pair']},{r['method']},{r['seed']},{r['matches']},{int(r['answered'])},{r['rotation_error']:.4f},{et},"
                        f"{int(r['rotation_only'])},{r['ms']:.3f}\n")

    seeds = table_start(rows, ": every number is the mean over seeds (fail, wrong: per run), mAA@10 range: the lowest and highest "
                              "seed; times over every run",
                        f"{'set':<14} {'method':<22} {'pairs':>5} {'fail':>5} {'medR°':>6} {'medt°':>6} {'mAA@5':>6} {'mAA@10':>6} "
                        f"{'range':>11} {'wrong':>5} {'rotOnly':>7} {'med ms':>7} {'p99 ms':>7}")
    sets = list(dict.fromkeys(r["set"] for r in rows))
    for s in sets:
        methods = list(dict.fromkeys(r["method"] for r in rows if r["set"] == s))
        for m in methods:
            runs = [[r for r in rows if r["set"] == s and r["method"] == m and r["seed"] == seed] for seed in seeds]
            has_t = any(r["translation_error"] is not None for rs in runs for r in rs)
            per_seed = []
            for rs in runs:
                pair_errors = [max(r["rotation_error"], r["translation_error"]) if has_t else r["rotation_error"] for r in rs]
                answered = [r for r in rs if r["answered"]]
                med_r = np.median([r["rotation_error"] for r in answered]) if answered else float("nan")
                given = [r["translation_error"] for r in answered if r["translation_given"] and r["translation_error"] is not None]
                med_t = np.median(given) if given else float("nan")
                wrong = sum(1 for r in answered if max(r["rotation_error"], r["translation_error"] if (r["translation_given"] and r["translation_error"] is not None) else 0) > 10)
                per_seed.append((len(rs) - len(answered), med_r, med_t, maa(pair_errors, 5), maa(pair_errors, 10), wrong,
                                 sum(r["rotation_only"] for r in rs)))
            mean = [float(np.mean([p[i] for p in per_seed])) for i in range(7)]
            maa10 = [p[4] for p in per_seed]
            ms = [r["ms"] for rs in runs for r in rs]
            rot_only = f"{mean[6]:.1f}/{len(runs[0])}" if m.startswith("rephoto") else "-"
            print(f"{s:<14} {m:<22} {len(runs[0]):>5} {mean[0]:>5.1f} {mean[1]:>6.2f} {mean[2]:>6.2f} {mean[3]:>6.3f} {mean[4]:>6.3f} "
                  f"{min(maa10):>5.3f}-{max(maa10):<5.3f} {mean[5]:>5.1f} {rot_only:>7} {np.median(ms):>7.1f} {np.percentile(ms, 99):>7.1f}")

    # "At least PoseLib's" is a claim about means over random seeds: each method's seeds are independent runs, so
    # the difference of the two means has the standard error of both, and a gap inside 1.96 of them is noise.
    if len(seeds) > 1:
        print()
        print("mAA@10 against PoseLib's: the difference of the means over seeds, with a 95 % interval (1.96 standard "
              "errors); for rephoto, the\npart of its distance to rephoto-search that refusals and nulled translations carry")
        print(f"{'set':<14} {'method':<22} {'difference':>10} {'95 % interval':>17} {'refused':>8} {'nulled t':>8}")
        for s in sets:
            def per_seed(method):
                out = []
                for seed in seeds:
                    rs = [r for r in rows if r["set"] == s and r["method"] == method and r["seed"] == seed]
                    has_t = any(r["translation_error"] is not None for r in rs)
                    out.append(maa([max(r["rotation_error"], r["translation_error"]) if has_t else r["rotation_error"] for r in rs], 10))
                return np.array(out)
            peer = per_seed("poselib-2.0.5")
            for m in [m for m in dict.fromkeys(r["method"] for r in rows if r["set"] == s) if m.startswith("rephoto") and "opencv" not in m]:
                ours = per_seed(m)
                difference = ours.mean() - peer.mean()
                half = 1.96 * math.sqrt(ours.var(ddof=1) / len(ours) + peer.var(ddof=1) / len(peer))
                shares = ["", ""]
                if m == "rephoto":
                    # Each run's mAA@10 lost against the search's own pose, by what the gate did with it.
                    gated = {(r["pair"], r["seed"]): r for r in rows if r["set"] == s and r["method"] == "rephoto"}
                    lost = [0.0, 0.0]
                    for r in rows:
                        if r["set"] != s or r["method"] != "rephoto-search" or r["translation_error"] is None:
                            continue
                        g = gated[(r["pair"], r["seed"])]
                        loss = maa([max(r["rotation_error"], r["translation_error"])], 10) - maa([max(g["rotation_error"], g["translation_error"])], 10)
                        if not g["answered"]:
                            lost[0] += loss
                        elif not g["translation_given"]:
                            lost[1] += loss
                    runs = len(seeds) * len({r["pair"] for r in gated.values()})
                    shares = [f"{-x / runs:+.4f}" if abs(x / runs) >= 5e-5 else "0" for x in lost]
                print(f"{s:<14} {m:<22} {difference:>+10.4f} {difference - half:>+8.4f}..{difference + half:<+7.4f} {shares[0]:>8} {shares[1]:>8}")

    # Which search optimised the shared objective better, run by run, and what each scored there: where
    # rephoto-search trails PoseLib in mAA, this says whether its search stopped short (PoseLib found a lower
    # cost) or the lower cost lay further from the truth.
    if objective:
        print()
        print("the search's objective (MSAC cost at the threshold) against PoseLib's, per run; mAA@10 per set over those runs")
        print(f"{'set':<14} {'which is lower':<24} {'runs':>5} {'rephoto-search':>15} {'poselib-2.0.5':>14}")
        for s in sets:
            cases = [o for o in objective if o[0] == s and o[1] is not None and o[2] is not None]
            if not cases:
                continue
            total = sum(1 for o in objective if o[0] == s)
            for label, test in [("rephoto-search", lambda o: o[1] < o[2] - 0.5), ("within half an inlier", lambda o: abs(o[1] - o[2]) <= 0.5),
                                ("poselib-2.0.5", lambda o: o[2] < o[1] - 0.5)]:
                chosen = [o for o in cases if test(o)]
                # Each run's share of the set's mAA@10: summed over the chosen runs, the part of it they carry.
                scores = [sum(maa([o[3][method]], 10) for o in chosen) / total for method in ("rephoto-search", "poselib-2.0.5")]
                print(f"{s:<14} {label:<24} {len(chosen):>5} {scores[0]:>15.4f} {scores[1]:>14.4f}")


if __name__ == "__main__":
    sys.exit(main())
