#!/usr/bin/env python3
"""Benchmark peer for rephoto's guidance session (`rephoto evaluate --session`): the loop published
rephotography systems use, written with opencv-python (opencv-python-headless==4.6.0.66, the OpenCV version
RephotoKit uses): a robust AKAZE update every N frames, KLT tracking in between.

Per sequence: the reference is decoded (grey) and AKAZE (cv2.AKAZE_create() defaults) detects and describes
it once, outside the timed loop. Then every other row of frames.csv, in file order, is timed from before
cv2.imread(frame, IMREAD_GRAYSCALE) to after its homography (time.perf_counter; decode included):

  robust   the first frame, every N-th frame since the last robust one, and any frame whose tracking failed:
           AKAZE detectAndCompute, BFMatcher(NORM_HAMMING) knnMatch k=2 (query = frame, train = reference),
           Lowe's ratio 0.8, cv2.findHomography(reference points, frame points, RANSAC, 3 px). The tracks are
           reseeded with the homography's inliers (reference point, frame point), at most 400, best ratio first.
  tracked  cv2.calcOpticalFlowPyrLK(previous frame, frame, tracks, winSize 21x21, maxLevel 3) forward and back;
           a track survives with both statuses set and a forward-backward error <= 1 px. Fewer than
           max(30, 0.5 x seeded) survivors (or no homography from them) is a tracking failure: the frame is
           done robustly instead (source robust, its time includes the failed tracking). Otherwise
           cv2.findHomography(reference points, tracked points, RANSAC, 3 px); the tracks carried on are that
           homography's inliers.
  failed   no homography (fewer than 4 ratio-test matches, or RANSAC found none); the next frame is robust.

The quadrilateral is the reference's centred 0.6 W x 0.6 H rectangle (top-left, top-right, bottom-right,
bottom-left) mapped by the homography (cv2.perspectiveTransform, outside the timed span).
`tracks` is the number of tracks the frame carries on: seeded ones on robust frames, surviving inliers on
tracked ones.

OpenCV's threading is left at its default (cv2.setNumThreads is not called): AKAZE, the matcher and the
pyramid build may use every core, as they would in an app using OpenCV; pin it with taskset to compare with
a single-threaded run.

usage: session_peer.py SEQ_DIR... [--robust-every N] --out CSV
       session_peer.py --table --rephoto SESSION_CSV --peer PEER_CSV
         (the table scripts/bench-session prints: rephoto's session.csv from `rephoto evaluate --session`
          against this peer's CSV)
"""
import argparse
import csv
import json
import math
import os
import sys
import time

import cv2
import numpy as np

QUAD_FRACTION = 0.6
MAX_TRACKS = 400
RATIO = 0.8
RANSAC_PX = 3.0
FB_MAX_PX = 1.0
LK = dict(winSize=(21, 21), maxLevel=3)
PEER_COLUMNS = ["sequence", "index", "file", "source", "time_ms", "tracks"] + \
    [f"quad_{a}{i}" for i in range(4) for a in "xy"]


def reference_quad(width, height, f=QUAD_FRACTION):
    lo_x, hi_x = (1 - f) / 2 * width, (1 + f) / 2 * width
    lo_y, hi_y = (1 - f) / 2 * height, (1 + f) / 2 * height
    return np.float64([[lo_x, lo_y], [hi_x, lo_y], [hi_x, hi_y], [lo_x, hi_y]]).reshape(-1, 1, 2)


class Session:
    def __init__(self, reference, robust_every):
        self.detector = cv2.AKAZE_create()
        self.matcher = cv2.BFMatcher(cv2.NORM_HAMMING)
        self.ref_kp, self.ref_desc = self.detector.detectAndCompute(reference, None)
        self.robust_every = robust_every
        self.ref_pts = None     # (n, 1, 2) float32, reference side of the tracks
        self.cur_pts = None     # (n, 1, 2) float32, previous frame's side
        self.seeded = 0
        self.since_robust = None  # frames since the last robust update; None: the next frame must be robust
        self.prev = None

    def robust(self, gray):
        """Returns the homography or None; reseeds the tracks."""
        self.ref_pts = self.cur_pts = None
        self.seeded = 0
        self.since_robust = None
        kp, desc = self.detector.detectAndCompute(gray, None)
        if desc is None or self.ref_desc is None or len(kp) < 2:
            return None
        good = [(m[0].distance / max(m[1].distance, 1e-9), m[0]) for m in self.matcher.knnMatch(desc, self.ref_desc, k=2)
                if len(m) == 2 and m[0].distance < RATIO * m[1].distance]
        if len(good) < 4:
            return None
        ref = np.float32([self.ref_kp[m.trainIdx].pt for _, m in good])
        cur = np.float32([kp[m.queryIdx].pt for _, m in good])
        H, mask = cv2.findHomography(ref, cur, cv2.RANSAC, RANSAC_PX)
        if H is None:
            return None
        inliers = [i for i in np.flatnonzero(mask.ravel())]
        inliers.sort(key=lambda i: good[i][0])
        inliers = inliers[:MAX_TRACKS]
        self.ref_pts = ref[inliers].reshape(-1, 1, 2)
        self.cur_pts = cur[inliers].reshape(-1, 1, 2)
        self.seeded = len(inliers)
        self.since_robust = 0
        return H

    def track(self, gray):
        """Returns the homography or None (tracking failed)."""
        if self.cur_pts is None or len(self.cur_pts) == 0:
            return None
        fwd, st1, _ = cv2.calcOpticalFlowPyrLK(self.prev, gray, self.cur_pts, None, **LK)
        if fwd is None:
            return None
        back, st2, _ = cv2.calcOpticalFlowPyrLK(gray, self.prev, fwd, None, **LK)
        if back is None:
            return None
        fb = np.linalg.norm((back - self.cur_pts).reshape(-1, 2), axis=1)
        keep = (st1.ravel() == 1) & (st2.ravel() == 1) & (fb <= FB_MAX_PX)
        if keep.sum() < max(30, 0.5 * self.seeded):
            return None
        ref, cur = self.ref_pts[keep], fwd[keep]
        H, mask = cv2.findHomography(ref, cur, cv2.RANSAC, RANSAC_PX)
        if H is None:
            return None
        inl = mask.ravel() == 1
        self.ref_pts, self.cur_pts = ref[inl], cur[inl]
        return H

    def step(self, path):
        """One frame: (source, time_ms, tracks, H or None)."""
        start = time.perf_counter()
        gray = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
        if gray is None:
            raise SystemExit(f"session_peer: cannot read {path}")
        H, source = None, "robust"
        if self.since_robust is not None and self.since_robust + 1 < self.robust_every and self.prev is not None:
            H = self.track(gray)
            if H is not None:
                source = "tracked"
                self.since_robust += 1
        if H is None:
            H = self.robust(gray)
        elapsed = (time.perf_counter() - start) * 1000
        self.prev = gray
        if H is None:
            return "failed", elapsed, 0, None
        return source, elapsed, len(self.cur_pts), H


def run_sequence(folder, robust_every, writer):
    manifest = json.load(open(os.path.join(folder, "sequence.json")))
    name = manifest.get("name") or os.path.basename(os.path.normpath(folder))
    reference_file = manifest["reference"]
    reference = cv2.imread(os.path.join(folder, reference_file), cv2.IMREAD_GRAYSCALE)
    if reference is None:
        raise SystemExit(f"session_peer: cannot read {os.path.join(folder, reference_file)}")
    height, width = reference.shape[:2]
    quad = reference_quad(width, height)
    session = Session(reference, robust_every)
    with open(os.path.join(folder, "frames.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    for index, row in enumerate(rows):
        if row["file"] == reference_file:
            continue
        source, ms, tracks, H = session.step(os.path.join(folder, row["file"]))
        corners = [""] * 8
        if H is not None:
            corners = [f"{v:.3f}" for v in cv2.perspectiveTransform(quad, H).ravel()]
        writer.writerow([name, index, row["file"], source, f"{ms:.3f}", tracks] + corners)


# ---------------------------------------------------------------------------------------------- table

def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def nums(rows, column):
    return [v for v in (num(r.get(column)) for r in rows) if v is not None]


def pct(values, q):
    return float(np.percentile(values, q)) if values else None


def fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def mean(values):
    return sum(values) / len(values) if values else None


def ratio(a, b):
    return a / b if a is not None and b else None


def quad(row):
    v = [num(row.get(f"quad_{a}{i}")) for i in range(4) for a in "xy"]
    return None if any(x is None for x in v) else np.float64(v).reshape(4, 2)


def quad_diff(a, b):
    return float(np.linalg.norm(a - b, axis=1).max())


def is_true(value):
    return str(value).strip().lower() == "true"


def table(rephoto_csv, peer_csv):
    rephoto = read_csv(rephoto_csv)
    peer = read_csv(peer_csv)
    sequences = []
    for r in rephoto + peer:
        if r["sequence"] not in sequences:
            sequences.append(r["sequence"])
    header = ["sequence", "frames", "rephoto tracked ms p50/p95", "rephoto robust-every-frame ms p50",
              "rephoto speed-up", "peer tracked ms p50/p95", "peer robust ms p50", "peer speed-up",
              "quad diff px p50 rephoto", "quad diff px p50 peer", "step err deg p50",
              "step err deg p50 t-undetermined", "confident wrong session/robust", "first converged frame"]
    lines = []

    def line(name, sess, rob, peer_rows, first_converged):
        robust_by_file = {(r["sequence"], r["file"]): r for r in rob}
        tracked = nums([r for r in sess if r.get("source") == "tracked"], "time_ms")
        speed = ratio(mean(nums(rob, "time_ms")), mean(nums(sess, "time_ms")))
        p_tracked = nums([r for r in peer_rows if r["source"] == "tracked"], "time_ms")
        p_robust = nums([r for r in peer_rows if r["source"] == "robust"], "time_ms")
        p_speed = ratio(mean(p_robust), mean(nums(peer_rows, "time_ms")))
        peer_diffs = []
        for r in peer_rows:
            mine, theirs = quad(r), robust_by_file.get((r["sequence"], r["file"]))
            ref = quad(theirs) if theirs else None
            if mine is not None and ref is not None:
                peer_diffs.append(quad_diff(mine, ref))
        undetermined = [r for r in sess
                        if (robust_by_file.get((r["sequence"], r["file"])) or {}).get("pose_translation_undetermined", "").strip()]
        wrong = f"{sum(is_true(r.get('confident_wrong')) for r in sess)}/{sum(is_true(r.get('confident_wrong')) for r in rob)}"
        frames = len(sess) if sess else len(peer_rows)
        lines.append([name, str(frames),
                      f"{fmt(pct(tracked, 50))}/{fmt(pct(tracked, 95))}", fmt(pct(nums(rob, 'time_ms'), 50)),
                      "-" if speed is None else f"{speed:.1f}x",
                      f"{fmt(pct(p_tracked, 50))}/{fmt(pct(p_tracked, 95))}", fmt(pct(p_robust, 50)),
                      "-" if p_speed is None else f"{p_speed:.1f}x",
                      fmt(pct(nums(sess, "quad_diff_px"), 50), 2), fmt(pct(peer_diffs, 50), 2),
                      fmt(pct(nums(sess, "step_error_deg"), 50)),
                      fmt(pct(nums(undetermined, "step_error_deg"), 50)) + f" (n={len(nums(undetermined, 'step_error_deg'))})",
                      wrong, first_converged])

    converged_count = 0
    for name in sequences:
        sess = [r for r in rephoto if r["sequence"] == name and r.get("run") == "session"]
        rob = [r for r in rephoto if r["sequence"] == name and r.get("run") == "robust"]
        first = next((r.get("index", "?") for r in sess if is_true(r.get("converged"))), None)
        converged_count += first is not None
        line(name, sess, rob, [r for r in peer if r["sequence"] == name], "-" if first is None else first)
    line("all", [r for r in rephoto if r.get("run") == "session"], [r for r in rephoto if r.get("run") == "robust"], peer,
         f"{converged_count}/{len(sequences)} converged")
    widths = [max(len(row[i]) for row in [header] + lines) for i in range(len(header))]
    for row in [header] + lines:
        print(" | ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))).rstrip())
    print("speed-up: mean robust-every-frame ms / mean session ms (peer: mean of its robust frames / mean of all its "
          "frames); quad diff: largest corner distance to rephoto's robust run on the same frame; "
          "confident wrong: session/robust run")
    print("targets: tracked p50 <= 30 ms, p95 <= 60 ms, speed-up >= 5x, quad diff within 1 px, "
          "step error p50 <= 15° on approach sequences")


def main():
    parser = argparse.ArgumentParser(description="opencv-python peer of rephoto's guidance session (see the module docstring)")
    parser.add_argument("sequences", nargs="*", metavar="SEQ_DIR")
    parser.add_argument("--robust-every", type=int, default=10)
    parser.add_argument("--out", help="per-frame CSV to write")
    parser.add_argument("--table", action="store_true", help="print the bench-session table instead of running")
    parser.add_argument("--rephoto", help="with --table: rephoto's session.csv")
    parser.add_argument("--peer", help="with --table: this peer's CSV")
    args = parser.parse_args()
    if args.table:
        if not args.rephoto or not args.peer or args.sequences:
            parser.error("--table takes --rephoto SESSION_CSV --peer PEER_CSV and no sequences")
        table(args.rephoto, args.peer)
        return
    if not args.sequences or not args.out:
        parser.error("give SEQ_DIR... and --out CSV")
    if args.robust_every < 1:
        parser.error("--robust-every must be at least 1")
    with open(args.out, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(PEER_COLUMNS)
        for folder in args.sequences:
            run_sequence(folder, args.robust_every, writer)


if __name__ == "__main__":
    main()
