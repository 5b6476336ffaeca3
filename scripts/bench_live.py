"""Live guidance sessions over the worker's WebSocket (scripts/bench-live): N clients stream a recorded sequence's
frames at a fixed rate, each frame preceded by its timestamp; every answer's latency is the time from sending its
frame to receiving it. Prints one line per client (latency p50/p95/p99, frames dropped, where the answers came from),
the robust updates' ages when joined (how old the frame they ran on was), and the server's resident memory."""
import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

import websockets


def frames_of(folder):
    manifest = json.loads((folder / "sequence.json").read_text())
    lines = (folder / "frames.csv").read_text().splitlines()
    header = lines[0].split(",")
    files = [line.split(",")[header.index("file")] for line in lines[1:]]
    return manifest, [f for f in files if f != manifest["reference"]]


def rss_mb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def client(url, folder, fps, seconds, result):
    manifest, files = frames_of(folder)
    i = manifest.get("intrinsics")
    metadata = {}
    if i:
        camera = {"intrinsics": {"fx": i["fx"], "fy": i["fy"], "cx": i["cx"], "cy": i["cy"]}}
        metadata = {"reference": camera, "retake": camera}
    images = [(folder / f).read_bytes() for f in files]
    sent, answers = {}, []
    async with websockets.connect(url, max_size=1 << 26) as socket:
        await socket.send(json.dumps({"reference": "upload", "metadata": metadata}))
        await socket.send((folder / manifest["reference"]).read_bytes())
        opened = json.loads(await socket.recv())
        assert "opened" in opened, opened

        async def receive():
            async for message in socket:
                answer = json.loads(message)
                if "session" in answer:
                    answers.append((time.perf_counter(), answer["session"]))

        receiver = asyncio.create_task(receive())
        start = time.perf_counter()
        k = 0
        while time.perf_counter() - start < seconds:
            timestamp = k / fps
            sent[round(timestamp, 6)] = time.perf_counter()
            await socket.send(json.dumps({"timestamp": timestamp}))
            await socket.send(images[k % len(images)])
            k += 1
            await asyncio.sleep(max(0, start + k / fps - time.perf_counter()))
        await asyncio.sleep(2)
        await socket.close()
        receiver.cancel()
    timed = [(s, (at - sent[round(s["timestamp"], 6)]) * 1000) for at, s in answers if s.get("timestamp") is not None]
    latencies = [l for _, l in timed]
    tracked = [l for s, l in timed if s["source"] == "tracked"]
    # A robust update joined on a later frame: its age there (seconds since the frame it ran on) and its own time.
    joined = [s for s, _ in timed if s["source"] == "tracked" and s.get("robustMilliseconds") is not None]
    sources = {}
    for s, _ in timed:
        sources[s["source"]] = sources.get(s["source"], 0) + 1
    result.append({"timed": [(l, s.get("source"), s.get("trigger"), s.get("robustMilliseconds"), s.get("ageFrames"), s.get("milliseconds"), s.get("frame")) for s, l in timed],
                   "sent": k, "answered": len(answers), "skipped": sum(s.get("skippedFrames", 0) for _, s in answers),
                   "p50": pct(latencies, 50), "p95": pct(latencies, 95), "p99": pct(latencies, 99),
                   "tracked_p50": statistics.median(tracked) if tracked else float("nan"), "sources": sources,
                   "ages": [s["ageSeconds"] * 1000 for s in joined if s.get("ageSeconds") is not None],
                   "robust_ms": [s["robustMilliseconds"] for s in joined]})


def pct(values, p):
    """The p-th percentile (nearest rank); nan when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(p / 100 * len(ordered) + 0.5)) - 1))]


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--sequence", required=True)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--fps", type=float, default=10)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--in-process", help="session.csv of rephoto evaluate --session on the same sequence")
    parser.add_argument("--dump", help="write every answer's latency, source, trigger, joined update's ms, age and work ms here (JSON)")
    args = parser.parse_args()
    before = rss_mb(args.pid)
    results, samples = [], []

    async def sample():
        start = time.perf_counter()
        while True:
            samples.append((time.perf_counter() - start, rss_mb(args.pid)))
            await asyncio.sleep(10)

    sampler = asyncio.create_task(sample())
    await asyncio.gather(*(client(args.url, Path(args.sequence), args.fps, args.seconds, results) for _ in range(args.clients)))
    sampler.cancel()
    after = rss_mb(args.pid)
    if args.dump:
        Path(args.dump).write_text(json.dumps([r["timed"] for r in results]))
    baseline = None
    if args.in_process:
        lines = Path(args.in_process).read_text().splitlines()
        header = lines[0].split(",")
        rows = [dict(zip(header, line.split(","))) for line in lines[1:]]
        rows = [r for r in rows if r["run"] == "session"]
        baseline = (statistics.median(float(r["time_ms"]) for r in rows),
                    statistics.median(float(r["time_ms"]) for r in rows if r["source"] == "tracked"))
    print("client | frames sent | answered | dropped | latency ms p50/p95/p99 | tracked p50 | sources | in-process ms p50 (tracked) | added p50 (tracked)")
    for n, r in enumerate(results):
        base = f"{baseline[0]:.1f} ({baseline[1]:.1f})" if baseline else "-"
        added = f"{r['p50'] - baseline[0]:.1f} ({r['tracked_p50'] - baseline[1]:.1f})" if baseline else "-"
        dropped = r["sent"] - r["answered"]
        sources = " ".join(f"{k} {v}" for k, v in sorted(r["sources"].items()))
        print(f"{n + 1} | {r['sent']} | {r['answered']} | {dropped} ({100 * dropped / max(1, r['sent']):.1f} %) | "
              f"{r['p50']:.1f}/{r['p95']:.1f}/{r['p99']:.1f} | {r['tracked_p50']:.1f} | {sources} | {base} | {added}")
    print("client | robust updates joined | age when joined ms p50/p95/max | robust update ms p50/p95")
    for n, r in enumerate(results):
        ages, robust = r["ages"], r["robust_ms"]
        print(f"{n + 1} | {len(robust)} | {pct(ages, 50):.0f}/{pct(ages, 95):.0f}/{max(ages, default=float('nan')):.0f} | "
              f"{pct(robust, 50):.0f}/{pct(robust, 95):.0f}")
    print(f"server RSS: {before:.0f} MB before, {after:.0f} MB after {args.seconds:.0f} s of {args.clients} clients at {args.fps:g} fps")
    half = [mb for t, mb in samples if t >= args.seconds / 2]
    if half:
        print(f"server RSS over the second half: {min(half):.0f}-{max(half):.0f} MB; every 10 s: " + " ".join(f"{mb:.0f}" for _, mb in samples))


asyncio.run(main())
