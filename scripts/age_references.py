"""Ages a pair list's references into old prints with an exactly known camera (scripts/age-references).

Each reference image becomes old-<name>.jpg: rescaled so its longer side is --side px, cropped off-centre to
--crop of its width and height (or a square of --crop of the shorter side, --square), grey (or sepia, --sepia), faded, grainy, blurred, vignetted, put inside a scanned
cream border of 3-8 % a side (unless --no-border) and saved as a strong JPEG. frames.csv then names the old prints as references and gains their true cameras (gt_reference_fx, fy, cx,
cy: the original camera scaled and shifted with the image), and sequence.json says "referenceIntrinsics":
"unknown". The current frames and the ground truth poses are unchanged: rescaling and cropping move no camera. With --roll
each current frame is turned that many degrees about its optical axis instead (the phone held askew), and its true
rotation and translation are turned with it."""
import argparse
import csv
import json
import random
import shutil
from pathlib import Path

import cv2
import numpy as np


def age(image, side, crop, shift, sepia, border, rng, square=False, contrast=0.55, blur=1.0, grain=6.0):
    h, w = image.shape[:2]
    k = side / max(w, h)
    small = cv2.resize(image, (round(w * k), round(h * k)), interpolation=cv2.INTER_AREA)
    sh, sw = small.shape[:2]
    cw, ch = round(sw * crop), round(sh * crop)
    if square:
        cw = ch = round(min(sw, sh) * crop)
    # Off-centre: the crop's centre moves by up to `shift` of the free margin, each way.
    x0 = round((sw - cw) / 2 * (1 + rng.uniform(-shift, shift)))
    y0 = round((sh - ch) / 2 * (1 + rng.uniform(-shift, shift)))
    out = small[y0:y0 + ch, x0:x0 + cw]
    grey = cv2.cvtColor(out, cv2.COLOR_BGR2GRAY).astype(np.float32)
    grey = 70 + contrast * grey                             # faded: lifted blacks, low contrast
    grey = cv2.GaussianBlur(grey, (0, 0), blur)            # soft lens, print
    yy, xx = np.mgrid[0:ch, 0:cw]
    r2 = ((xx - cw / 2) / (cw / 2)) ** 2 + ((yy - ch / 2) / (ch / 2)) ** 2
    grey *= 1 - 0.25 * r2                                  # vignetting
    grey += rng.normal(0, grain, grey.shape)               # grain
    grey = np.clip(grey, 0, 255).astype(np.uint8)
    if sepia:
        g = grey.astype(np.float32) / 255
        result = np.dstack([g * 0.70, g * 0.85, g * 1.0]) * 255  # BGR: brown
        result = np.clip(result, 0, 255).astype(np.uint8)
    else:
        result = grey
    left = top = 0
    if border:
        top, right, bottom, left = (round(rng.uniform(0.03, 0.08) * cw) for _ in range(4))
        result = cv2.copyMakeBorder(result, top, bottom, left, right, cv2.BORDER_CONSTANT,
                                    value=(200, 225, 235) if sepia else 235)
    return result, k, x0 - left, y0 - top


def roll_matrix(degrees):
    c, s = np.cos(np.radians(degrees)), np.sin(np.radians(degrees))
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def rotation_from_quaternion(w, x, y, z):
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def quaternion_from_rotation(r):
    w = np.sqrt(max(0.0, 1 + r[0, 0] + r[1, 1] + r[2, 2])) / 2
    x = np.copysign(np.sqrt(max(0.0, 1 + r[0, 0] - r[1, 1] - r[2, 2])) / 2, r[2, 1] - r[1, 2])
    y = np.copysign(np.sqrt(max(0.0, 1 - r[0, 0] + r[1, 1] - r[2, 2])) / 2, r[0, 2] - r[2, 0])
    z = np.copysign(np.sqrt(max(0.0, 1 - r[0, 0] - r[1, 1] + r[2, 2])) / 2, r[1, 0] - r[0, 1])
    return w, x, y, z


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("sequence", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--side", type=int, default=1000)
    parser.add_argument("--crop", type=float, default=0.8)
    parser.add_argument("--shift", type=float, default=0.5)
    parser.add_argument("--sepia", action="store_true")
    parser.add_argument("--square", action="store_true")
    parser.add_argument("--no-border", dest="border", action="store_false")
    parser.add_argument("--quality", type=int, default=45)
    parser.add_argument("--contrast", type=float, default=0.55, help="the print's tone range, a fraction of the original's")
    parser.add_argument("--blur", type=float, default=1.0, help="Gaussian blur sigma in the print's pixels")
    parser.add_argument("--grain", type=float, default=6.0, help="grain: noise sigma in grey levels")
    parser.add_argument("--roll", type=float, default=0.0, help="turn the current frames this many degrees about their optical axis")
    parser.add_argument("--seed", type=int, default=1)
    a = parser.parse_args()
    if not (np.isfinite(a.roll) and abs(a.roll) <= 180):
        parser.error(f"--roll {a.roll} must be a finite angle within ±180 degrees")

    manifest = json.loads((a.sequence / "sequence.json").read_text())
    intrinsics = manifest["intrinsics"]
    rows = list(csv.DictReader((a.sequence / "frames.csv").open()))
    a.out.mkdir(parents=True, exist_ok=False)
    rng = np.random.default_rng(a.seed)
    cameras = {}
    for name in sorted({r["reference_file"] for r in rows if r.get("reference_file")}):
        image = cv2.imread(str(a.sequence / name))
        old, k, x0, y0 = age(image, a.side, a.crop, a.shift, a.sepia, a.border, rng, a.square, a.contrast, a.blur, a.grain)
        old_name = "old-" + Path(name).stem + ".jpg"
        cv2.imwrite(str(a.out / old_name), old, [cv2.IMWRITE_JPEG_QUALITY, a.quality])
        cameras[name] = (old_name, intrinsics["fx"] * k, intrinsics["fy"] * k,
                         (intrinsics["cx"] + 0.5) * k - 0.5 - x0, (intrinsics["cy"] + 0.5) * k - 0.5 - y0)
    turn = roll_matrix(a.roll)
    for name in sorted({r["file"] for r in rows}):
        if a.roll == 0:
            shutil.copyfile(a.sequence / name, a.out / name)
            continue
        # A turn about the optical axis maps pixels by the homography K Rz K^-1, whatever the scene's depth.
        k = np.array([[intrinsics["fx"], 0, intrinsics["cx"]], [0, intrinsics["fy"], intrinsics["cy"]], [0, 0, 1]])
        frame = cv2.imread(str(a.sequence / name))
        turned = cv2.warpPerspective(frame, k @ turn @ np.linalg.inv(k), (frame.shape[1], frame.shape[0]))
        cv2.imwrite(str(a.out / name), turned, [cv2.IMWRITE_JPEG_QUALITY, 95])
    if a.roll != 0:
        for r in rows:
            if not all(r.get(c) for c in ("gt_qw", "gt_qx", "gt_qy", "gt_qz", "gt_tx", "gt_ty", "gt_tz")):
                continue  # no true pose to turn
            rotation = turn @ rotation_from_quaternion(*(float(r[c]) for c in ("gt_qw", "gt_qx", "gt_qy", "gt_qz")))
            r["gt_qw"], r["gt_qx"], r["gt_qy"], r["gt_qz"] = (repr(float(v)) for v in quaternion_from_rotation(rotation))
            translation = turn @ np.array([float(r[c]) for c in ("gt_tx", "gt_ty", "gt_tz")])
            r["gt_tx"], r["gt_ty"], r["gt_tz"] = (repr(float(v)) for v in translation)
    header = list(rows[0].keys()) + ["gt_reference_fx", "gt_reference_fy", "gt_reference_cx", "gt_reference_cy"]
    with (a.out / "frames.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
        writer.writeheader()
        for r in rows:
            old_name, fx, fy, cx, cy = cameras[r["reference_file"]]
            writer.writerow({**r, "reference_file": old_name, "gt_reference_fx": f"{fx:.6f}", "gt_reference_fy": f"{fy:.6f}",
                             "gt_reference_cx": f"{cx:.6f}", "gt_reference_cy": f"{cy:.6f}"})
    manifest["name"] = manifest["name"] + "-aged"
    manifest["referenceIntrinsics"] = "unknown"
    manifest["provenance"] = manifest.get("provenance", "") + f"; references aged by scripts/age-references (side {a.side}, crop {a.crop}{' square' if a.square else ''}, shift {a.shift}, border {a.border}, quality {a.quality}, contrast {a.contrast}, blur {a.blur}, grain {a.grain}, seed {a.seed}{f', frames turned {a.roll} degrees' if a.roll else ''})"
    (a.out / "sequence.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    print(f"{a.out}: {len(cameras)} old prints, {len(rows)} pairs")


if __name__ == "__main__":
    main()
