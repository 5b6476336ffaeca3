"""The worker under a bounded mix of normal and hostile traffic (scripts/soak runs it): prints one table and
exits 1 when a 5xx other than the documented 503/507 is answered, a deleted reference is still scored, a
setting past its bound is not refused, temporaries are left, or the normal traffic's p99 passes its bound:
--latency-bound milliseconds (1000 for a release build), else 6 times the p50 of the same traffic measured
alone first (a debug build's pipelines are several times slower, and the machine is shared).

Two instances share one reference store (a small tmpfs when run as root, so it nearly fills). Traffic, each
from its own thread, for --duration seconds:
  normal     scores against a stored reference, one after another (the latency measured)
  bounds     scores whose settings sit at the request bounds, and one past them (400)
  slow       uploads trickling a byte a second, and a declared 60 MB body at 200 KiB/s
  idle       batches of idle connections opened and left
  churn      references added through A and deleted through B, then scored by id through A (must be 404)
  fill       references with new feature settings, filling the store (507 once the disk is full)
"""
import argparse, json, os, random, signal, socket, statistics, struct, subprocess, sys, threading, time, zlib
import http.client

p = argparse.ArgumentParser()
p.add_argument("--bin", required=True)
p.add_argument("--duration", type=float, default=60)
p.add_argument("--port", type=int, default=18480)
p.add_argument("--store", required=True)
p.add_argument("--reference", required=True)
p.add_argument("--retake", required=True)
p.add_argument("--latency-bound", type=float)
p.add_argument("--baseline", type=float, default=10, help="seconds of normal traffic alone, first")
args = p.parse_args()

lock = threading.Lock()
statuses = {}        # traffic -> {status: count}
normal_ms = []
failures = []


def count(kind, status):
    with lock:
        statuses.setdefault(kind, {}).setdefault(status, 0)
        statuses[kind][status] += 1


def multipart(parts):
    boundary = "soak%08x" % random.getrandbits(32)
    body = b""
    for name, data, filename in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        body += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + data + b"\r\n"
    body += f"--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def post(port, path, parts, timeout=60):
    body, kind = multipart(parts)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", path, body=body, headers={"Content-Type": kind})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def call(port, method, path, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def png_variant(png, tag):
    """The same picture with a text chunk: another file, so another reference id."""
    text = b"Comment\x00" + tag.encode()
    chunk = struct.pack(">I", len(text)) + b"tEXt" + text + struct.pack(">I", zlib.crc32(b"tEXt" + text) & 0xFFFFFFFF)
    return png[:33] + chunk + png[33:]


reference = open(args.reference, "rb").read()
retake = open(args.retake, "rb").read()
A, B = args.port, args.port + 1
env = dict(os.environ)
servers = []
for port in (A, B):
    log = open(os.path.join(os.path.dirname(args.store.rstrip("/")) or ".", f"soak-{port}.log"), "w")
    servers.append(subprocess.Popen([args.bin, "serve", "--port", str(port), "--reference-store", args.store, "--concurrency", "2",
                                     "--queue-length", "8", "--store-bytes", str(8 << 20), "--max-connections", "256"],
                                    stdout=subprocess.DEVNULL, stderr=log, env=env))
for port in (A, B):
    for _ in range(200):
        try:
            if call(port, "GET", "/healthz", 1)[0] == 200:
                break
        except OSError:
            time.sleep(0.1)
    else:
        sys.exit(f"soak: the worker on {port} did not start")

status, body = post(A, "/v1/references", [("image", reference, "ref.png")])
if status not in (200, 201):
    sys.exit(f"soak: adding the reference failed: {status} {body[:200]!r}")
ref_id = json.loads(body)["id"]

peak = {"rss": 0, "fds": 0}
stop = time.time() + args.baseline


def watch():
    while time.time() < stop:
        for s in servers:
            try:
                with open(f"/proc/{s.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            peak["rss"] = max(peak["rss"], int(line.split()[1]) * 1024)
                peak["fds"] = max(peak["fds"], len(os.listdir(f"/proc/{s.pid}/fd")))
            except OSError:
                pass
        time.sleep(0.5)


def normal():
    while time.time() < stop:
        t = time.time()
        try:
            status, body = post(A, "/v1/retakes/score", [("referenceId", ref_id.encode(), None), ("retake", retake, "retake.png")])
        except OSError as e:
            status = f"error {type(e).__name__}"
        count("normal", status)
        if status == 200:
            normal_ms.append((time.time() - t) * 1000)
        elif status != 503:
            failures.append(f"normal: {status}")


def bounds():
    configs = [({"features": {"detector": "orb", "orb": {"firstLevel": 2, "scaleFactor": 2}}}, 200),
               ({"features": {"detector": "orb", "orb": {"firstLevel": 4, "scaleFactor": 3}}}, 400),
               ({"pose": {"essential": {"maxIterations": 20000}}, "matching": {"mutual": True}}, 200)]
    i = 0
    while time.time() < stop:
        config, expected = configs[i % len(configs)]
        i += 1
        meta = json.dumps({"config": config}).encode()
        try:
            status, _ = post(A, "/v1/retakes/score", [("referenceId", ref_id.encode(), None), ("retake", retake, "r.png"), ("metadata", meta, None)])
        except OSError as e:
            status = f"error {type(e).__name__}"
        count("bounds", status)
        if status != expected and status != 503:
            failures.append(f"bounds: {status} for {config}, expected {expected}")
        time.sleep(2)


def slow(rate, declared, source):
    while time.time() < stop:
        s = socket.socket()
        try:
            s.bind((source, 0))
            s.connect(("127.0.0.1", A))
            s.sendall(f"POST /v1/retakes/score HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: {declared}\r\n\r\n".encode())
            s.settimeout(5)
            reply = b""
            while time.time() < stop and not reply:
                try:
                    s.sendall(b"x" * rate)
                except OSError:
                    break
                try:
                    reply = s.recv(200, socket.MSG_DONTWAIT)
                    if not reply:
                        break
                except BlockingIOError:
                    pass
                time.sleep(1)
            status = int(reply.split(b" ")[1]) if reply.startswith(b"HTTP/1.1 ") else "closed"
            count("slow", status)
        except OSError:
            count("slow", "closed")
        finally:
            s.close()


def idle():
    while time.time() < stop:
        held = []
        for _ in range(100):
            try:
                held.append(socket.create_connection(("127.0.0.1", A), timeout=2))
            except OSError:
                break
        count("idle", f"{len(held)} opened")
        time.sleep(5)
        for h in held:
            h.close()


def churn():
    i = 0
    while time.time() < stop:
        i += 1
        image = png_variant(reference, f"churn-{i}")
        try:
            status, body = post(A, "/v1/references", [("image", image, "c.png")])
            count("churn", status)
            if status not in (200, 201):
                if status not in (503, 507):
                    failures.append(f"churn add: {status}")
                continue
            cid = json.loads(body)["id"]
            count("churn", post(A, "/v1/retakes/score", [("referenceId", cid.encode(), None), ("retake", retake, "r.png")])[0])
            status = call(B, "DELETE", f"/v1/references/{cid}")[0]
            count("churn", status)
            after = post(A, "/v1/retakes/score", [("referenceId", cid.encode(), None), ("retake", retake, "r.png")])[0]
            count("churn", after)
            if status == 204 and after != 404:
                failures.append(f"churn: scored {after} after its delete through B")
        except OSError as e:
            count("churn", f"error {type(e).__name__}")
        time.sleep(1)


def fill():
    i = 0
    while time.time() < stop:
        i += 1
        image = png_variant(reference, f"fill-{i}-" + "x" * 200)
        meta = json.dumps({"config": {"features": {"akaze": {"threshold": 0.001 + i * 1e-6}}}}).encode()
        try:
            status, _ = post(A, "/v1/references", [("image", image, "f.png"), ("metadata", meta, None)])
        except OSError as e:
            status = f"error {type(e).__name__}"
        count("fill", status)
        if isinstance(status, int) and status >= 500 and status not in (503, 507):
            failures.append(f"fill: {status}")
        time.sleep(1)


baseline = [threading.Thread(target=normal)]
for t in baseline:
    t.start()
for t in baseline:
    t.join()
alone_ms, normal_ms = normal_ms, []
alone_status = statuses.pop("normal", {})
stop = time.time() + args.duration

threads = [threading.Thread(target=f, args=a) for f, a in
           [(watch, ()), (normal, ()), (bounds, ()), (slow, (1, 100000, "127.0.0.2")), (slow, (1, 100000, "127.0.0.2")),
            (slow, (1, 100000, "127.0.0.3")), (slow, (200 << 10, 60 << 20, "127.0.0.4")), (idle, ()), (churn, ()), (fill, ())]]
for t in threads:
    t.start()
for t in threads:
    t.join()

# SIGKILL one instance, as a crash would, then start it again: it removes stale temporaries (only once they
# are old: here it only must not fail), and both stop cleanly on SIGTERM.
for s in servers:
    s.send_signal(signal.SIGTERM)
exit_codes = [s.wait(timeout=60) for s in servers]
temporaries = sum(1 for d, _, files in os.walk(args.store) for f in files if f.startswith("."))
store_bytes = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(args.store) for f in files)

print(f"soak: {args.duration:.0f} s, two instances sharing {args.store}")
print("| traffic | answers |")
print("|---|---|")
for kind in ["normal", "bounds", "slow", "idle", "churn", "fill"]:
    answers = ", ".join(f"{k}: {v}" for k, v in sorted(statuses.get(kind, {}).items(), key=lambda kv: str(kv[0])))
    print(f"| {kind} | {answers} |")
def percentiles(ms):
    if len(ms) < 2:
        return float("nan"), float("nan")
    return statistics.median(ms), statistics.quantiles(ms, n=100)[98]


a50, a99 = percentiles(alone_ms)
p50, p99 = percentiles(normal_ms)
bound = args.latency_bound or 6 * a50
print()
print("| normal scores | alone p50 / p99 ms | in the mix p50 / p99 ms | p99 bound ms | peak RSS MB (either) | peak descriptors | store MB | leftover temporaries | exit codes |")
print("|---|---|---|---|---|---|---|---|---|")
print(f"| {len(alone_ms)} alone, {len(normal_ms)} in the mix | {a50:.0f} / {a99:.0f} | {p50:.0f} / {p99:.0f} | {bound:.0f} | {peak['rss'] / 2**20:.0f} | {peak['fds']} | "
      f"{store_bytes / 2**20:.1f} | {temporaries} | {exit_codes} |")
problems = list(dict.fromkeys(failures))
if not normal_ms or not p99 < bound:
    problems.append(f"normal p99 {p99:.0f} ms in the mix (bound {bound:.0f})")
if any(c != 0 for c in exit_codes):
    problems.append(f"exit codes {exit_codes}")
if temporaries:
    problems.append(f"{temporaries} temporaries left after a clean stop")
for problem in problems[:20]:
    print("soak: FAIL " + problem)
sys.exit(1 if problems else 0)
