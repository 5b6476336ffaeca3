"""The worker under a bounded mix of normal and hostile traffic (scripts/soak runs it): prints one table and
exits 1 when a 5xx other than the documented 503/507 is answered, a deleted reference is still scored, a
setting past its bound is not refused, temporaries are left, or the normal traffic's p95 passes its bound:
--latency-bound milliseconds (1000 for a release build), else 6 times the p50 of the same traffic measured
alone first (a debug build's pipelines are several times slower, and the machine is shared), or its p99 passes
twice that. The p95 is the gate: of the ~170 scores a minute gives, the p99 is the second slowest, which moved
from 460 to 960 ms between quiet runs of one build; the p99 bound still catches a stalled tail.

Two instances share one reference store (a small tmpfs when run as root, so it nearly fills). Traffic, each
from its own thread, for --duration seconds:
  normal     scores against a stored reference, one after another (the latency measured)
  bounds     scores whose settings sit at the request bounds, and one past them (400)
  slow       uploads trickling a byte a second, and a declared 60 MB body at 200 KiB/s
  idle       batches of idle connections opened and left
  churn      references added through A and deleted through B, then scored by id through A (must be 404)
  fill       references with new feature settings, filling the store (507 once the disk is full)
and a WebSocket flood of the live sessions (`GET /v1/sessions` upgraded) on A, each from its own client address:
  ws-text    huge text messages (60 MB, as the opening and as a frame's metadata): refused by their length (1009)
  ws-stall   90 sockets each sending 63 MiB of a 64 MiB binary message, then nothing: at most --uploads-per-client
             of them hold an upload slot, the others are refused (1013); the held ones are cut once stalled
  ws-frames  two sessions sending frames at 30 fps (datasets/synth-approach's, each after its metadata), answered at
             the worker's pace: their tracked answers and robust updates run on lanes of their own, so scores keep
             their pipelines
  ws-open    session openings from one address, over HTTP and over sockets: 429 past --sessions-per-client
  ws-token   upgrades without the token: 401 `unauthorized` in JSON
The worker's resident memory (VmRSS) must stay under --rss-bound MB (1024) throughout. The instances require a
token (every request above sends it), have 18 upload slots (--queue-length 16), 4 per client address, so that
the hostile senders' four addresses leave the others room, and take at most 2 frames a second per session, so
that two flooding sessions leave the two pipelines room for the scores (a debug build computes a frame in about 60 ms).
"""
import argparse, json, os, random, shutil, signal, socket, statistics, struct, subprocess, sys, tempfile, threading, time, zlib
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
p.add_argument("--rss-bound", type=float, default=1024, help="MB the worker's VmRSS must stay under")
args = p.parse_args()
# Every /v1 request sends it: the workers require it, so that upgrades without it can be tried.
TOKEN = "soak-token-%016x" % random.getrandbits(64)
AUTH = {"Authorization": f"Bearer {TOKEN}"}

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


def post(port, path, parts, timeout=60, source=None):
    body, kind = multipart(parts)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0) if source else None)
    try:
        c.request("POST", path, body=body, headers={"Content-Type": kind, **AUTH})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def call(port, method, path, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, headers=AUTH)
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
token_file = os.path.join(tempfile.mkdtemp(prefix="soak-token-"), "token")
with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
    f.write(TOKEN + "\n")
servers = []
for port in (A, B):
    log = open(os.path.join(os.path.dirname(args.store.rstrip("/")) or ".", f"soak-{port}.log"), "w")
    # 18 upload slots, at most 4 per client address: the hostile senders (four addresses) hold at most 8 of them, the
    # sessions' frames and the normal traffic's address share the rest.
    servers.append(subprocess.Popen([args.bin, "serve", "--port", str(port), "--reference-store", args.store, "--concurrency", "2",
                                     "--queue-length", "16", "--uploads-per-client", "4", "--store-bytes", str(8 << 20),
                                     "--max-connections", "256", "--token-file", token_file],
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
# The live sessions' frames: the bundled synthetic approach (480x360 JPEGs, about 57 KB, as a phone streams them).
synth = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "datasets", "synth-approach")
live_frames = [open(os.path.join(synth, f), "rb").read() for f in sorted(os.listdir(synth)) if f.startswith("frame-")]
status, body = post(A, "/v1/references", [("image", open(os.path.join(synth, "reference.jpg"), "rb").read(), "ref.jpg")])
if status not in (200, 201):
    sys.exit(f"soak: adding the live reference failed: {status} {body[:200]!r}")
live_ref_id = json.loads(body)["id"]

peak = {"rss": 0, "fds": 0, "vmrss": 0}
stop = time.time() + args.baseline


def watch():
    while time.time() < stop:
        for s in servers:
            try:
                with open(f"/proc/{s.pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            peak["rss"] = max(peak["rss"], int(line.split()[1]) * 1024)
                        if line.startswith("VmRSS:"):
                            peak["vmrss"] = max(peak["vmrss"], int(line.split()[1]) * 1024)
                peak["fds"] = max(peak["fds"], len(os.listdir(f"/proc/{s.pid}/fd")))
            except OSError:
                pass
        time.sleep(0.2)


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
            s.sendall(f"POST /v1/retakes/score HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                      f"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: {declared}\r\n\r\n".encode())
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


# --- The live sessions' WebSocket, spoken on plain sockets (no client library: these clients misbehave). ---
class WS:
    def __init__(self, port, source, token=TOKEN, timeout=10):
        # One writer at a time: a pong from the reading thread sent inside a frame being sent would corrupt both.
        self.sending = threading.Lock()
        self.s = socket.socket()
        self.s.bind((source, 0))
        self.s.settimeout(timeout)
        self.s.connect(("127.0.0.1", port))
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        self.s.sendall(("GET /v1/sessions HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" + auth + "\r\n").encode())
        self.buffered = b""
        head = self.exact(4)
        while not head.endswith(b"\r\n\r\n"):
            head += self.exact(1)
        self.status = int(head.split(b" ")[1])
        length = next((int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")), 0)
        self.body = self.exact(length) if self.status != 101 and length else b""

    def exact(self, n):
        while len(self.buffered) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("closed")
            self.buffered += chunk
        out, self.buffered = self.buffered[:n], self.buffered[n:]
        return out

    @staticmethod
    def header(opcode, length, fin=True):
        b = bytes([(0x80 if fin else 0) | opcode])
        if length < 126:
            b += bytes([0x80 | length])
        elif length < 65536:
            b += bytes([0x80 | 126]) + length.to_bytes(2, "big")
        else:
            b += bytes([0x80 | 127]) + length.to_bytes(8, "big")
        return b + b"\0\0\0\0"  # masked with a zero key: the payload goes as is

    def send(self, opcode, payload):
        with self.sending:
            self.s.sendall(self.header(opcode, len(payload)))
            self.s.sendall(payload)

    def frame(self):
        """The server's next frame: (opcode, payload); a close frame's payload is its code."""
        a = self.exact(2)
        n = a[1] & 0x7F
        if n == 126:
            n = int.from_bytes(self.exact(2), "big")
        elif n == 127:
            n = int.from_bytes(self.exact(8), "big")
        payload = self.exact(n)
        if a[0] & 0x0F == 8:
            return 8, int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005
        return a[0] & 0x0F, payload

    def answer(self, pong=True):
        """What the worker says next: "opened", "frame", an error's code, "close <code>", or how it ended. `pong`:
        answer the worker's pings (a client stalled inside a message cannot: the pong would be part of it)."""
        try:
            op, payload = self.frame()
            while op in (9, 10):  # the worker's pings (and pongs): not counted
                if op == 9 and pong:
                    with self.sending:
                        self.s.sendall(bytes([0x8A, 0x80 | len(payload)]) + b"\0\0\0\0" + payload)
                op, payload = self.frame()
        except (EOFError, OSError) as e:
            return f"ended {type(e).__name__}"
        if op == 8:
            return f"close {payload}"
        try:
            obj = json.loads(payload)
        except ValueError:
            return "not json"
        if "opened" in obj:
            return "opened"
        if "error" in obj:
            return obj["error"].get("code", "?")
        return "frame"

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


HUGE = b"a" * (60 * 10**6)
STALLED = b"\1" * (63 << 20)


def ws_text():
    """Huge text messages, as the opening and as a frame's metadata, each sent whole while the answer is read."""
    i = 0
    while time.time() < stop:
        i += 1
        try:
            w = WS(A, "127.0.0.8")
            if i % 2 == 0:
                w.send(1, json.dumps({"referenceId": ref_id}).encode())
                count("ws-text", w.answer())
            payload = b'{"timestamp": 1, "x": "' + HUGE + b'"}'

            def send_whole():
                try:
                    w.s.sendall(WS.header(1, len(payload)))
                    w.s.sendall(payload)
                except OSError:
                    pass  # refused from its header: the connection closed under the rest
            sender = threading.Thread(target=send_whole, daemon=True)
            sender.start()
            answer = w.answer()
            count("ws-text", answer)
            if answer != "too_large":
                failures.append(f"ws-text: a 60 MB text message answered {answer}")
            count("ws-text", w.answer())
            w.close()
            sender.join(10)
        except (OSError, EOFError) as e:
            count("ws-text", f"error {type(e).__name__}")
        time.sleep(1)


def ws_stall():
    """Ninety sockets from one address each send 63 MiB of a 64 MiB binary message, then nothing, until cut."""
    def one():
        while time.time() < stop:
            try:
                w = WS(A, "127.0.0.5", timeout=max(1, stop - time.time()))
            except (OSError, EOFError, ValueError, IndexError) as e:
                count("ws-stall", f"error {type(e).__name__}")
                time.sleep(5)
                continue
            try:
                w.s.sendall(WS.header(2, 64 << 20))
                w.s.sendall(STALLED)
                count("ws-stall", "sent 63 MiB")
            except OSError:
                pass  # refused at the header: the answer is read below
            answer = w.answer(pong=False)
            count("ws-stall", answer)
            if answer not in ("unavailable", "too_slow", "close 1001") and not answer.startswith("ended"):
                failures.append(f"ws-stall: {answer}")
            w.close()
            time.sleep(5)
    threads = [threading.Thread(target=one) for _ in range(90)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def ws_frames():
    """A session sending frames at 30 fps, each after its metadata; its answers read as they come."""
    while time.time() < stop:
        try:
            w = WS(A, "127.0.0.6")
            w.send(1, json.dumps({"referenceId": live_ref_id}).encode())
            opened = w.answer()
            count("ws-frames", opened)
            if opened != "opened":
                time.sleep(1)
                continue
            done = threading.Event()

            def read():
                while not done.is_set():
                    answer = w.answer()
                    count("ws-frames", answer)
                    if answer.startswith("ended") or answer.startswith("close"):
                        return
                    # A frame may fail alone (too little signal, or past --request-timeout on a loaded machine).
                    if answer not in ("frame", "estimation_failed", "timeout", "unavailable"):
                        failures.append(f"ws-frames: {answer}")
            reader = threading.Thread(target=read)
            reader.start()
            t0, k = time.time(), 0
            while time.time() < stop and reader.is_alive():
                w.send(1, json.dumps({"timestamp": time.time() - t0}).encode())
                w.send(2, live_frames[k % len(live_frames)])
                k += 1
                time.sleep(max(0, t0 + k / 30 - time.time()))
            count("ws-frames", f"{k} sent")
            done.set()
            w.close()
            reader.join(5)
        except (OSError, EOFError) as e:
            count("ws-frames", f"error {type(e).__name__}")
            time.sleep(1)


def ws_open():
    """Session openings from one address, over HTTP and over sockets: past --sessions-per-client, 429."""
    held = []
    while time.time() < stop:
        try:
            status, body = post(A, "/v1/sessions", [("referenceId", ref_id.encode(), None)], source="127.0.0.7")
            count("ws-open", f"POST {status}")
            if status not in (201, 429, 503):
                failures.append(f"ws-open: POST /v1/sessions {status}")
            w = WS(A, "127.0.0.7")
            w.send(1, json.dumps({"referenceId": ref_id}).encode())
            answer = w.answer()
            count("ws-open", f"socket {answer}")
            if answer not in ("opened", "too_many_sessions", "unavailable"):
                failures.append(f"ws-open: socket opening {answer}")
            if answer == "opened":
                held.append(w)
            else:
                w.close()
        except (OSError, EOFError, ValueError) as e:
            count("ws-open", f"error {type(e).__name__}")
        time.sleep(0.5)
    for w in held:
        w.close()


def ws_token():
    """Upgrades without the token, or with a wrong one: 401 `unauthorized` in JSON."""
    while time.time() < stop:
        for token in (None, "wrong-token-0123456789"):
            try:
                w = WS(A, "127.0.0.9", token=token)
                code = json.loads(w.body or b"{}").get("error", {}).get("code") if w.body else None
                count("ws-token", f"{w.status} {code}")
                if w.status != 401 or code != "unauthorized":
                    failures.append(f"ws-token: {w.status} {w.body[:100]!r}")
                w.close()
            except (OSError, EOFError, ValueError) as e:
                count("ws-token", f"error {type(e).__name__}")
        time.sleep(0.5)


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
            (slow, (1, 100000, "127.0.0.3")), (slow, (200 << 10, 60 << 20, "127.0.0.4")), (idle, ()), (churn, ()), (fill, ()),
            (ws_text, ()), (ws_stall, ()), (ws_frames, ()), (ws_frames, ()), (ws_open, ()), (ws_token, ())]]
for t in threads:
    t.start()
for t in threads:
    t.join()

# SIGKILL one instance, as a crash would, then start it again: it removes stale temporaries (only once they
# are old: here it only must not fail), and both stop cleanly on SIGTERM.
for s in servers:
    s.send_signal(signal.SIGTERM)
exit_codes = [s.wait(timeout=60) for s in servers]
shutil.rmtree(os.path.dirname(token_file), ignore_errors=True)
temporaries = sum(1 for d, _, files in os.walk(args.store) for f in files if f.startswith("."))
store_bytes = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(args.store) for f in files)

print(f"soak: {args.duration:.0f} s, two instances sharing {args.store}")
print("| traffic | answers |")
print("|---|---|")
for kind in ["normal", "bounds", "slow", "idle", "churn", "fill", "ws-text", "ws-stall", "ws-frames", "ws-open", "ws-token"]:
    answers = ", ".join(f"{k}: {v}" for k, v in sorted(statuses.get(kind, {}).items(), key=lambda kv: str(kv[0])))
    print(f"| {kind} | {answers} |")
def percentiles(ms):
    if len(ms) < 2:
        return float("nan"), float("nan"), float("nan")
    q = statistics.quantiles(ms, n=100)
    return statistics.median(ms), q[94], q[98]


a50, _, a99 = percentiles(alone_ms)
p50, p95, p99 = percentiles(normal_ms)
bound = args.latency_bound or 6 * a50
print()
print("| normal scores | alone p50 / p99 ms | in the mix p50 / p95 / p99 ms | p95 bound / p99 bound ms | peak RSS MB (either: VmHWM / VmRSS sampled) | peak descriptors | store MB | leftover temporaries | exit codes |")
print("|---|---|---|---|---|---|---|---|---|")
print(f"| {len(alone_ms)} alone, {len(normal_ms)} in the mix | {a50:.0f} / {a99:.0f} | {p50:.0f} / {p95:.0f} / {p99:.0f} | {bound:.0f} / {2 * bound:.0f} | "
      f"{peak['rss'] / 2**20:.0f} / {peak['vmrss'] / 2**20:.0f} | {peak['fds']} | "
      f"{store_bytes / 2**20:.1f} | {temporaries} | {exit_codes} |")
problems = list(dict.fromkeys(failures))
if not normal_ms or not p95 < bound:
    problems.append(f"normal p95 {p95:.0f} ms in the mix (bound {bound:.0f})")
if normal_ms and not p99 < 2 * bound:
    problems.append(f"normal p99 {p99:.0f} ms in the mix (bound {2 * bound:.0f})")
if peak["vmrss"] / 2**20 >= args.rss_bound:
    problems.append(f"peak VmRSS {peak['vmrss'] / 2**20:.0f} MB, over {args.rss_bound:.0f} MB")
if any(c != 0 for c in exit_codes):
    problems.append(f"exit codes {exit_codes}")
if temporaries:
    problems.append(f"{temporaries} temporaries left after a clean stop")
for problem in problems[:20]:
    print("soak: FAIL " + problem)
sys.exit(1 if problems else 0)
