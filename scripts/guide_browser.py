#!/usr/bin/env python3
"""The guide (GET /) in a real browser: headless Chromium against a running `rephoto serve`, its camera a clip made
with ffmpeg from a `rephoto synth --motion approach` sequence, driven over the DevTools protocol (a WebSocket, spoken
here with the standard library only). Run by scripts/guide-browser-test and by the test suite (GuideBrowserTests).

The worker runs with a token (--token-file) and room for one session (--max-sessions 1). Asserts: the missing token
said in words, then the token typed in carried by the page's requests and its WebSocket (a subprotocol); at least 30
frames answered within 60 s of the upload, hints shown, `converged` reached on the approach, never more than one
frame in flight, "take" scored 200, a refused upload (a text file) shown as an error while the session goes on, the
attitude converted as docs/pose.md says and the screen's angle named as ScreenOrientation names it, the reference's
QR code decoded by OpenCV's QRCodeDetector (scripts/qr-decode) into the page's own link, `/?reference=ID` starting
on that stored reference, and a full worker said in words and retried until a session is free. Saves screenshots.
Exit status 0 passed, 1 failed, 77 skipped (Chromium or ffmpeg cannot run here), with the reason on stderr.
"""
import argparse, base64, glob, json, os, shutil, signal, socket, struct, subprocess, sys, tempfile, time, urllib.request

SKIP = 77


def skip(reason):
    print(f"guide browser test skipped: {reason}", file=sys.stderr)
    sys.exit(SKIP)


class DevTools:
    """The DevTools protocol over a minimal RFC 6455 client: masked text frames out, whole messages in. Also the
    client that holds the worker's one session in the full-worker step."""

    def __init__(self, url, timeout, headers=None):
        host_port, path = url[len("ws://"):].split("/", 1)
        host, port = host_port.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        request = (f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n")
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise RuntimeError("DevTools closed the connection during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"DevTools refused the WebSocket: {head[:200]!r}")
        self.next_id = 0
        self.events = []

    def _read(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise RuntimeError("DevTools closed the connection")
            data += chunk
        return data

    def _send_frame(self, opcode, payload):
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _receive(self):
        message, first_opcode = b"", None
        while True:
            b0, b1 = self._read(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            payload = self._read(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x9:  # ping
                self._send_frame(0xA, payload)
                continue
            if opcode == 0x8:
                raise RuntimeError("DevTools closed the WebSocket")
            if opcode in (0x1, 0x2):
                first_opcode = opcode
            message += payload
            if b0 & 0x80:
                return json.loads(message.decode()) if first_opcode == 0x1 else None

    def send_text(self, text):
        self._send_frame(0x1, text.encode())

    def receive_message(self):
        return self._receive()

    def close(self):
        try:
            self._send_frame(0x8, struct.pack(">H", 1000))
        finally:
            self.sock.close()

    def call(self, method, **params):
        self.next_id += 1
        self._send_frame(0x1, json.dumps({"id": self.next_id, "method": method, "params": params}).encode())
        while True:
            message = self._receive()
            if message is None:
                continue
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails'].get('text')} in {expression[:80]}")
        return result.get("result", {}).get("value")

    def screenshot(self, path, selector=None):
        """The viewport, or the element `selector` names (scrolled into view)."""
        params = {"format": "png"}
        if selector:
            box = self.evaluate(f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
                const top = document.querySelector('header').offsetHeight;
                let r = e.getBoundingClientRect();
                if (r.top < top || r.bottom > innerHeight) {{ scrollTo(0, r.top + scrollY - top); r = e.getBoundingClientRect(); }}
                return [r.x + scrollX, r.y + scrollY, r.width, r.height]; }})()""")
            params["clip"] = {"x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": 1}
        data = self.call("Page.captureScreenshot", **params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def set_file(self, selector, path):
        root = self.call("DOM.getDocument", depth=1)["root"]["nodeId"]
        node = self.call("DOM.querySelector", nodeId=root, selector=selector)["nodeId"]
        self.call("DOM.setFileInputFiles", files=[path], nodeId=node)


def wait_for(what, condition, seconds, interval=0.25):
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds} s waiting for {what}")
        time.sleep(interval)


def http_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except Exception:
        return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True, help="the rephoto executable")
    parser.add_argument("--sequence", required=True, help="a `rephoto synth --motion approach` sequence folder")
    parser.add_argument("--out", required=True, help="folder for the screenshots and the summary")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--clip-fps", type=float, default=5.0)
    parser.add_argument("--budget", type=float, default=300.0, help="seconds the whole test may take")
    args = parser.parse_args()

    for tool in (args.chromium, shutil.which("ffmpeg") or "ffmpeg"):
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            skip(f"{tool} is not installed (scripts/setup installs chromium and ffmpeg)")
    os.makedirs(args.out, exist_ok=True)
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(AssertionError(f"the whole test took over {args.budget} s")))
    signal.alarm(int(args.budget))
    work = tempfile.mkdtemp(prefix="rephoto-guide-")
    processes = []
    summary = {"passed": False}
    try:
        # The camera: the sequence's frames as a Y4M clip, which Chromium's fake device loops.
        clip = os.path.join(work, "approach.y4m")
        frames = sorted(glob.glob(os.path.join(args.sequence, "frame-*.jpg")))
        if not frames:
            raise AssertionError(f"no frames in {args.sequence}")
        made = subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-framerate", str(args.clip_fps), "-i",
                               os.path.join(args.sequence, "frame-%04d.jpg"), "-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", clip],
                              capture_output=True, text=True, timeout=120)
        if made.returncode != 0:
            skip(f"ffmpeg could not make the clip: {made.stderr.strip()[:300]}")

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        log = open(os.path.join(args.out, "serve.log"), "w")
        secret = "guide-test/token:" + base64.b32encode(os.urandom(10)).decode()  # '/' and ':' as a real token may hold
        token_file = os.path.join(work, "token")
        with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(secret + "\n")
        worker = subprocess.Popen([args.bin, "serve", "--port", str(port), "--reference-store", os.path.join(work, "store"),
                                   "--token-file", token_file, "--max-sessions", "1", "--sessions-per-client", "2"],
                                  stdout=subprocess.DEVNULL, stderr=log)
        processes.append(worker)
        base = f"http://127.0.0.1:{port}"
        wait_for("the worker", lambda: http_ok(base + "/healthz"), 60)

        profile = os.path.join(work, "profile")
        chromium = subprocess.Popen([
            args.chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--disable-dev-shm-usage", "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
            f"--use-file-for-fake-video-capture={clip}", "--autoplay-policy=no-user-gesture-required",
            "--remote-debugging-port=0", f"--user-data-dir={profile}", "--window-size=1100,1300", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(args.out, "chromium.log"), "w"))
        processes.append(chromium)
        active = os.path.join(profile, "DevToolsActivePort")
        try:
            wait_for("Chromium's DevTools port", lambda: os.path.exists(active) and open(active).read().count("\n") >= 1
                     or chromium.poll() is not None, 30)
        except AssertionError:
            skip("Chromium did not start within 30 s (see chromium.log)")
        if chromium.poll() is not None:
            skip(f"Chromium exited at start with status {chromium.returncode} (see {args.out}/chromium.log)")
        devtools_port = int(open(active).read().split("\n")[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{devtools_port}/json/list", timeout=10) as response:
            pages = [t for t in json.load(response) if t.get("type") == "page"]
        page = DevTools(pages[0]["webSocketDebuggerUrl"], timeout=60)
        page.call("Page.enable")
        page.call("Runtime.enable")

        def dataset():
            return json.loads(page.evaluate("JSON.stringify(Object.assign({}, document.body ? document.body.dataset : {}))") or "{}")

        def load(url):
            page.call("Page.navigate", url=url)
            wait_for(f"{url} to load", lambda: dataset().get("ready") == "true", 30)

        # 1. The page: the missing token said in words, then typed in; the sequence's camera typed in as this device's
        # calibration; the reference uploaded by the page.
        load(base + "/")
        refused = wait_for("the missing token said", lambda: dataset().get("lastError"), 30)
        assert "access token" in refused, f"a 401 was not said in words: {refused!r}"
        page.evaluate(f"""(() => {{ const t = document.getElementById('token'); t.value = {json.dumps(secret)};
            t.dispatchEvent(new Event('change')); document.body.dataset.lastError = ''; }})()""")
        time.sleep(1)
        assert dataset().get("lastError", "") == "", f"the token was refused: {dataset().get('lastError')}"
        with open(os.path.join(args.sequence, "sequence.json")) as f:
            camera = json.load(f)["intrinsics"]
        width, height = 480, 360
        frames_size = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height",
                                      "-of", "csv=p=0", clip], capture_output=True, text=True)
        if frames_size.returncode == 0 and "," in frames_size.stdout:
            width, height = (int(v) for v in frames_size.stdout.strip().split(",")[:2])
        calibration = dict(camera, imageWidth=width, imageHeight=height)
        page.evaluate(f"""(() => {{ document.getElementById('cameraKind').value = 'calibration';
            document.getElementById('calibration').value = {json.dumps(json.dumps(calibration))};
            document.getElementById('saveCamera').click(); return document.body.dataset.camera; }})()""")
        assert dataset().get("camera") == "calibration", f"the calibration was not kept: {dataset()}"
        page.set_file("#file", os.path.abspath(os.path.join(args.sequence, "reference.jpg")))
        started = time.monotonic()
        page.evaluate("document.getElementById('upload').requestSubmit()")
        wait_for("the session to open", lambda: dataset().get("state") == "live", 60)
        reference = dataset().get("reference", "")
        assert len(reference) == 64, f"no reference chosen after the upload: {dataset()}"

        # 2. Frames answered, hints, converged; screenshots mid-approach and converged.
        shots = {}
        seen_sources = set()
        while time.monotonic() - started < 60:
            d = dataset()
            seen_sources.add(d.get("source", ""))
            answered = int(d.get("answered", "0"))
            # Mid-approach: hints and, within the first 20 s, the step's arrow on screen.
            if "mid-approach" not in shots and answered >= 3 and int(d.get("hints", "0")) > 0 and d.get("converged") == "false" \
                    and (d.get("step") == "true" or time.monotonic() - started > 20):
                shots["mid-approach"] = os.path.join(args.out, "guide-mid-approach.png")
                page.screenshot(shots["mid-approach"], "#stage")
            if "converged" not in shots and d.get("converged") == "true":
                shots["converged"] = os.path.join(args.out, "guide-converged.png")
                page.screenshot(shots["converged"], "#stage")
            if answered >= 30 and "converged" in shots and "mid-approach" in shots:
                break
            time.sleep(0.2)
        d = dataset()
        elapsed = time.monotonic() - started
        summary.update(answeredWithin60s=int(d.get("answered", "0")), seconds=round(elapsed, 1), hintedAnswers=int(d.get("hints", "0")),
                       convergedAnswers=int(d.get("convergedFrames", "0")), maxInFlight=int(d.get("maxInFlight", "0")),
                       sources=sorted(s for s in seen_sources if s), screenshots=shots, reference=reference)
        print(json.dumps(summary), file=sys.stderr)
        assert summary["answeredWithin60s"] >= 30, f"{summary['answeredWithin60s']} frames answered within 60 s (want 30)"
        assert summary["hintedAnswers"] > 0, "no hints shown"
        assert summary["convergedAnswers"] > 0, "converged never reached on the approach"
        assert summary["maxInFlight"] == 1, f"{summary['maxInFlight']} frames in flight at once"
        assert d.get("lastError", "") == "", f"an error was shown during the approach: {d.get('lastError')}"

        # 3. Take: the full-resolution capture scored.
        page.evaluate("document.getElementById('take').click()")
        take = wait_for("the take's score", lambda: dataset().get("take"), 90)
        summary["take"] = int(take)
        summary["score"] = dataset().get("score")
        assert take == "200", f"take answered {take}: {dataset().get('lastError')}"
        wait_for("the composites", lambda: dataset().get("composites") == "3", 90)
        shots["take"] = os.path.join(args.out, "guide-take.png")
        page.screenshot(shots["take"], "#result")

        # 4. A refused upload (a text file): an error in words, and the session goes on.
        text = os.path.join(work, "notes.txt")
        with open(text, "w") as f:
            f.write("not a photo\n" * 20)
        before = int(dataset().get("answered", "0"))
        page.set_file("#file", text)
        page.evaluate("document.getElementById('upload').requestSubmit()")
        refused = wait_for("the refusal", lambda: dataset().get("upload"), 30)
        error = dataset().get("lastError", "")
        summary["refusedUpload"] = {"status": int(refused), "shown": error}
        assert refused.startswith("4"), f"the text file was answered {refused}"
        assert "refused" in error and "notes.txt" in error, f"the refusal was not shown in words: {error!r}"
        assert page.evaluate("!document.getElementById('error').hidden"), "the error is not visible"
        wait_for("answers after the refusal", lambda: int(dataset().get("answered", "0")) >= before + 3, 30)
        assert dataset().get("reference") == reference, "the refused upload changed the reference"
        page.evaluate("scrollTo(0, 0)")
        shots["refused"] = os.path.join(args.out, "guide-refused-upload.png")
        page.screenshot(shots["refused"])

        # 5. Attitude: the W3C angles as docs/pose.md's quaternion (device -> earth, Hamilton, w first), checked at known
        # orientations, and a reading sent with the frames without breaking the session.
        h = 0.5 ** 0.5
        for angles, want in [((0, 0, 0), [1, 0, 0, 0]), ((0, 90, 0), [h, h, 0, 0]), ((90, 0, 0), [h, 0, 0, h]),
                             ((0, 0, 90), [h, 0, h, 0]), ((90, 90, 0), [0.5, 0.5, 0.5, 0.5])]:
            got = page.evaluate(f"orientationQuaternion({angles[0]}, {angles[1]}, {angles[2]})")
            assert all(abs(a - b) < 1e-9 for a, b in zip(got, want)), f"orientationQuaternion{angles} = {got}, want {want}"
        before = int(dataset().get("answered", "0"))
        page.evaluate("window.dispatchEvent(Object.assign(new Event('deviceorientation'), {alpha: 20, beta: 85, gamma: 2, absolute: false}))")
        wait_for("answers with an attitude", lambda: int(dataset().get("answered", "0")) >= before + 3, 30)
        sensor = page.evaluate("document.getElementById('sensor').textContent")
        assert sensor.startswith("Sensor path on"), f"the attitude was not taken: {sensor!r}"
        assert "could not be used" not in dataset().get("lastError", ""), f"a frame with an attitude failed: {dataset().get('lastError')}"
        summary["attitude"] = sensor

        # 6. The screen's angle (W3C: how far the device is turned counter-clockwise) named as ScreenOrientation.swift
        # names how the phone is held: landscapeLeft is turned counter-clockwise, its top to the left.
        for angle, kind, want in [(0, "portraitPrimary", "portrait"), (90, "landscapePrimary", "landscapeLeft"),
                                  (180, "portraitSecondary", "portraitUpsideDown"), (270, "landscapeSecondary", "landscapeRight")]:
            portrait = angle % 180 == 0
            page.call("Emulation.setDeviceMetricsOverride", width=390 if portrait else 844, height=844 if portrait else 390,
                      deviceScaleFactor=1, mobile=True, screenOrientation={"type": kind, "angle": angle})
            got = page.evaluate("screenOrientation()")
            assert got == want, f"a screen at {angle} degrees was named {got!r}, want {want!r}"
            if angle in (0, 90):  # a phone held upright and sideways
                page.evaluate("scrollTo(0, 0); layout()")
                time.sleep(0.3)
                name = "phone-portrait" if angle == 0 else "phone-landscape"
                shots[name] = os.path.join(args.out, f"guide-{name}.png")
                page.screenshot(shots[name])
        page.call("Emulation.clearDeviceMetricsOverride")

        # 7. The reference's QR code, as served to the page, decoded by OpenCV's QRCodeDetector into the page's link.
        request = urllib.request.Request(f"{base}/v1/references/{reference}/qr", headers={"Authorization": f"Bearer {secret}"})
        qr_png = os.path.join(args.out, "reference-qr.png")
        with urllib.request.urlopen(request, timeout=10) as response, open(qr_png, "wb") as f:
            f.write(response.read())
        decoder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "qr-decode")
        decoded = subprocess.run([decoder, qr_png], capture_output=True, text=True, timeout=300)
        if decoded.returncode == 77:
            summary["qrDecoded"] = f"skipped: {decoded.stderr.strip()[-200:]}"
        else:
            link = f"{base}/?reference={reference}"
            assert decoded.returncode == 0 and decoded.stdout.strip() == link, \
                f"QRCodeDetector read {decoded.stdout.strip()!r} ({decoded.stderr.strip()[-200:]}), want {link!r}"
            shown = page.evaluate("document.getElementById('qrLink') ? document.getElementById('qrLink').textContent : ''")
            assert shown == link, f"the page shows the link {shown!r}, its QR code says {link!r}"
            summary["qrDecoded"] = decoded.stdout.strip()

        # 8. /?reference=ID opens that stored reference directly (the token kept in the browser's storage).
        load(f"{base}/?reference={reference}")
        wait_for("the linked session", lambda: dataset().get("state") == "live" and int(dataset().get("answered", "0")) >= 1, 60)
        assert dataset().get("reference") == reference, f"/?reference= opened {dataset().get('reference')}"
        summary["linkOpened"] = True

        # 9. A full worker (its one session held by another client): said in words, retried, and live once it is free.
        page.call("Page.navigate", url="about:blank")
        time.sleep(1)
        holder = DevTools(f"ws://127.0.0.1:{port}/v1/sessions", timeout=30, headers={"Authorization": f"Bearer {secret}"})
        holder.send_text(json.dumps({"referenceId": reference, "metadata": {"retake": {"intrinsics": calibration}}}))
        opened = holder.receive_message()
        assert opened and "opened" in opened, f"the holding session did not open: {opened}"
        load(f"{base}/?reference={reference}")
        busy = wait_for("the full worker said", lambda: "busy or full" in dataset().get("lastError", "") and dataset().get("lastError"), 30)
        shots["busy"] = os.path.join(args.out, "guide-busy.png")
        page.screenshot(shots["busy"])
        holder.close()
        wait_for("the session after the retry", lambda: dataset().get("state") == "live" and int(dataset().get("answered", "0")) >= 1, 60)
        summary["busyRetried"] = busy
        summary["passed"] = True
        print(json.dumps(summary), file=sys.stderr)
        return 0
    except AssertionError as failure:
        summary["failure"] = str(failure)
        print(f"guide browser test failed: {failure}", file=sys.stderr)
        return 1
    finally:
        signal.alarm(0)
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=2)
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
