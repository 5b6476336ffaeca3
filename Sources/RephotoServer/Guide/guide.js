// The guide (docs/guide.md): walks a phone to an old photo's vantage point over the worker's live session
// (docs/server.md, "Guidance sessions"). Plain JavaScript, no build step, nothing loaded from elsewhere.
// Its state for tests and people is on document.body.dataset: answered, source, converged, lastError (and more).
"use strict";

const $ = (id) => document.getElementById(id);
const state = document.body.dataset;
// Frames are sent no larger than this on their long side: the size the worker's sessions are made for (docs/server.md).
const MAX_SIDE = 1280;
const JPEG_QUALITY = 0.85;
// A phone's main camera: about 26 mm equivalent, 69 degrees across the long side (a 36 mm frame's half is 18 mm).
const PRIOR_FOCAL_MM = 26;
const CAMERA_KEY = "rephoto.guide.camera";
const TOKEN_KEY = "rephoto.guide.token";

const guide = {
  reference: null,        // {id, cameraUnknown, imageURL}
  stream: null,
  socket: null,
  opened: false,
  inFlight: 0,
  wanted: false,          // a session should be running (reconnect when it drops)
  retries: 0,
  attitude: null,         // the latest {quaternion, frame, orientation}
  attitudeSeen: false,
  sent: {width: 0, height: 0},
  last: null,             // the latest answer
  canvas: document.createElement("canvas"),
  watchdog: null,
};
state.answered = "0"; state.source = ""; state.converged = "false"; state.lastError = "";
state.convergedFrames = "0"; state.hints = "0"; state.sent = "0"; state.maxInFlight = "0"; state.state = "idle";

// ------------------------------------------------------------------ words

function setStatus(text) { $("status").textContent = text; }

function showError(text) {
  state.lastError = text;
  const box = $("error");
  box.textContent = text;
  box.hidden = false;
  layout();
}

function clearError() { $("error").hidden = true; layout(); }

// An API error in words: the worker's own message after what it means for the person.
function describeError(status, body, what) {
  const error = body && body.error ? body.error : {};
  const message = error.message || (typeof body === "string" ? body : "");
  const retry = error.retryAfterSeconds ? ` Try again in ${error.retryAfterSeconds} s.` : "";
  const meaning = {
    400: "the worker could not use it",
    401: "the worker wants an access token (see Access token below)",
    404: "not found",
    408: "the upload was too slow",
    413: "the photo is too large",
    415: "that file is not a photo the worker reads (JPEG, PNG, HEIC, TIFF, WebP ...)",
    422: "too little detail to match: aim at the subject, in better light",
    429: "the worker is busy with an earlier frame",
    500: "the worker failed",
    503: "the worker is busy or full" + (error.code === "timeout" ? " (it took too long)" : ""),
    507: "the worker has no room left to keep it",
  }[status] || `error ${status}`;
  return `${what}: ${meaning}${message ? ` (${message})` : ""}.${retry}`;
}

// The hint for a guidance action (docs/json-output.md, "Guidance actions"): one table, so a translation can replace it.
const round2 = (x) => String(Number(Number(x).toPrecision(2)));
const ACTION_TEXT = {
  turn: (a) => `turn ${a.direction} (${round2(a.amount)}% of width)`,
  tilt: (a) => `tilt ${a.direction} (${round2(a.amount)}% of width)`,
  roll: (a) => `roll ${a.direction === "counterClockwise" ? "counter-clockwise" : "clockwise"} ${round2(a.amount)}°`,
  zoom: (a) => a.direction === "in" ? `the old photo was taken with a longer lens: zoom in about ${round2(a.amount)}x`
                                    : `the old photo was taken with a wider lens: zoom out to about ${round2(a.amount)}x, or use a wider lens`,
  move: (a) => `move ${a.direction} (view ${round2(a.amount)}% too ${a.direction === "back" ? "large" : "small"})`,
  zoomOrMove: (a) => a.direction === "in" ? `zoom in or move forward (view ${round2(a.amount)}% too small)`
                                          : `zoom out or move back (view ${round2(a.amount)}% too large)`,
  orbit: (a) => `move ${a.direction} around the subject`,
  findSubject: () => "the old photo's view is not in front of the camera: point the camera at the subject",
  step: (a) => `step ${a.direction} (${round2(a.amount)}% of the distance to the subject)`,
  raise: (a) => `${a.direction === "up" ? "raise" : "lower"} the camera (${round2(a.amount)}% of the distance to the subject)`,
};

// Actions of a kind this page does not know keep the worker's own hint (docs/json-output.md says to skip them).
function hintTexts(actions, hints) {
  return (actions || []).map((a, i) => ACTION_TEXT[a.kind] ? ACTION_TEXT[a.kind](a) : (hints || [])[i]).filter(Boolean);
}

// ------------------------------------------------------------------ the API

function token() { return $("token").value.trim(); }

async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  if (token()) headers.Authorization = `Bearer ${token()}`;
  let response;
  try {
    response = await fetch(path, Object.assign({}, options, {headers}));
  } catch (error) {
    return {ok: false, status: 0, body: null, lost: true};
  }
  const type = response.headers.get("Content-Type") || "";
  let body = null;
  if (type.includes("json")) body = await response.json().catch(() => null);
  else if (!response.ok) body = await response.text().catch(() => "");
  else body = await response.blob();
  if (response.status === 401) localStorage.removeItem(TOKEN_KEY);
  return {ok: response.ok, status: response.status, body};
}

function failed(result, what) {
  return result.lost ? `${what}: the worker cannot be reached (connection lost)` : describeError(result.status, result.body, what);
}

// ------------------------------------------------------------------ the phone's camera

function cameraSetting() {
  try { return JSON.parse(localStorage.getItem(CAMERA_KEY)) || {kind: "prior"}; } catch { return {kind: "prior"}; }
}

// Finds {fx, fy, cx, cy} in a calibration document (rephoto calibrate's output, or intrinsics alone).
function findIntrinsics(value) {
  if (!value || typeof value !== "object") return null;
  if (typeof value.fx === "number" && typeof value.fy === "number") return value;
  for (const key of Object.keys(value)) {
    const found = findIntrinsics(value[key]);
    if (found) return found;
  }
  return null;
}

// The frames' camera for a frame of width x height: the stored calibration, a typed focal length, or the prior.
function intrinsics(width, height) {
  const setting = cameraSetting();
  const long = Math.max(width, height);
  const centre = {cx: (width - 1) / 2, cy: (height - 1) / 2, imageWidth: width, imageHeight: height};
  if (setting.kind === "calibration" && setting.intrinsics) {
    const k = setting.intrinsics;
    const w = k.imageWidth || k.width, h = k.imageHeight || k.height;
    if (w && h && Math.abs(w / h - width / height) < 0.01) {
      const s = width / w;
      return {fx: k.fx * s, fy: k.fy * s, cx: (k.cx + 0.5) * s - 0.5, cy: (k.cy + 0.5) * s - 0.5, imageWidth: width, imageHeight: height,
              distortion: k.distortion || []};
    }
  }
  const mm = setting.kind === "focal" && setting.mm > 0 ? setting.mm : PRIOR_FOCAL_MM;
  const f = long * mm / 36;
  return Object.assign({fx: f, fy: f}, centre);
}

function describeCamera() {
  const setting = cameraSetting();
  let text;
  if (setting.kind === "calibration" && setting.intrinsics) text = `In use: this device's calibration (fx ${round2(setting.intrinsics.fx)} px at ${setting.intrinsics.imageWidth || "?"} px wide).`;
  else if (setting.kind === "focal") text = `In use: a typed focal length, ${setting.mm} mm equivalent (${round2(2 * Math.atan(18 / setting.mm) * 180 / Math.PI)}° across).`;
  else text = `In use: the prior, a typical phone camera (${PRIOR_FOCAL_MM} mm equivalent, ${round2(2 * Math.atan(18 / PRIOR_FOCAL_MM) * 180 / Math.PI)}° across the long side).`;
  $("cameraInUse").textContent = text;
  state.camera = setting.kind;
}

function loadCameraForm() {
  const setting = cameraSetting();
  $("cameraKind").value = setting.kind || "prior";
  if (setting.mm) $("focal").value = setting.mm;
  if (setting.intrinsics) $("calibration").value = JSON.stringify(setting.intrinsics);
  showCameraRows();
  describeCamera();
}

function showCameraRows() {
  $("focalRow").hidden = $("cameraKind").value !== "focal";
  $("calibrationRow").hidden = $("cameraKind").value !== "calibration";
}

function saveCamera() {
  const kind = $("cameraKind").value;
  let setting = {kind: "prior"};
  if (kind === "focal") {
    const mm = Number($("focal").value);
    if (!(mm >= 10 && mm <= 300)) { showError("The focal length must be 10 to 300 mm (35 mm equivalent)."); return false; }
    setting = {kind, mm};
  } else if (kind === "calibration") {
    let found = null;
    try { found = findIntrinsics(JSON.parse($("calibration").value)); } catch { found = null; }
    if (!found) { showError("The calibration is not JSON with fx, fy, cx and cy (rephoto calibrate --json's output)."); return false; }
    setting = {kind, intrinsics: found};
  }
  localStorage.setItem(CAMERA_KEY, JSON.stringify(setting));
  describeCamera();
  return true;
}

async function startCamera() {
  if (guide.stream) return true;
  if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
    showError("This browser gives no camera here: open the page over HTTPS (or on localhost).");
    return false;
  }
  try {
    guide.stream = await navigator.mediaDevices.getUserMedia({
      audio: false, video: {facingMode: {ideal: "environment"}, width: {ideal: 4096}, height: {ideal: 3072}}});
  } catch (error) {
    showError(`The camera could not be opened: ${error.name === "NotAllowedError" ? "permission was refused" : error.message || error.name}.`);
    return false;
  }
  const video = $("video");
  video.srcObject = guide.stream;
  await new Promise((resolve) => { if (video.readyState >= 1) resolve(); else video.onloadedmetadata = resolve; });
  await video.play().catch(() => {});
  layout();
  return true;
}

// ------------------------------------------------------------------ attitude (docs/pose.md, docs background)

// W3C DeviceOrientation: intrinsic Z-X'-Y'' rotations of the device frame (x right, y up the screen, z out of it)
// against east-north-up; q = qz(alpha) * qx(beta) * qy(gamma), Hamilton, w first: device -> earth, the convention
// of Android's rotation vector and of CoreMotion's attitude (docs/pose.md).
function multiply(a, b) {
  return [a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
          a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
          a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
          a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]];
}

function orientationQuaternion(alpha, beta, gamma) {
  const r = Math.PI / 180;
  const half = (deg) => deg * r / 2;
  const qz = [Math.cos(half(alpha)), 0, 0, Math.sin(half(alpha))];
  const qx = [Math.cos(half(beta)), Math.sin(half(beta)), 0, 0];
  const qy = [Math.cos(half(gamma)), 0, Math.sin(half(gamma)), 0];
  return multiply(multiply(qz, qx), qy);
}

// The screen's turn as UIDeviceOrientation names it (docs/pose.md): 90 degrees counter-clockwise is landscapeLeft.
function screenOrientation() {
  const angle = (screen.orientation && typeof screen.orientation.angle === "number") ? screen.orientation.angle
    : (typeof window.orientation === "number" ? window.orientation : 0);
  return {0: "portrait", 90: "landscapeLeft", 180: "portraitUpsideDown", 270: "landscapeRight", "-90": "landscapeRight"}[angle] || "portrait";
}

function onOrientation(event) {
  if (event.alpha === null || event.beta === null || event.gamma === null) return;
  guide.attitudeSeen = true;
  guide.attitude = {
    quaternion: orientationQuaternion(event.alpha, event.beta, event.gamma),
    // Absolute readings share a north (east-north-up, as Android's rotation vector); relative ones have an arbitrary yaw.
    frame: event.absolute ? "androidRotationVector" : "xArbitraryZVertical",
    orientation: screenOrientation(),
  };
}

function listenToOrientation() {
  if (typeof DeviceOrientationEvent === "undefined") return;
  window.addEventListener("deviceorientation", onOrientation);
  if (typeof DeviceOrientationEvent.requestPermission === "function") $("motion").hidden = false;
}

// ------------------------------------------------------------------ the session

function frameSize() {
  const video = $("video");
  const w = video.videoWidth, h = video.videoHeight;
  const s = Math.min(1, MAX_SIDE / Math.max(w, h));
  return {width: Math.round(w * s), height: Math.round(h * s)};
}

function openSession() {
  if (!guide.reference || !guide.wanted) return;
  closeSocket();
  const size = frameSize();
  const metadata = {retake: {intrinsics: intrinsics(size.width, size.height)}};
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v1/sessions`;
  let socket;
  // A WebSocket cannot send Authorization: the token goes as a subprotocol (docs/server.md), hex-encoded.
  const protocols = ["rephoto.v1"];
  if (token()) protocols.push("rephoto.bearer." + Array.from(new TextEncoder().encode(token()), (b) => b.toString(16).padStart(2, "0")).join(""));
  try { socket = new WebSocket(url, protocols); } catch (error) { showError(`The session could not be opened: ${error.message}.`); return; }
  guide.socket = socket;
  guide.opened = false;
  guide.inFlight = 0;
  state.state = "opening";
  setStatus("Opening a guidance session ...");
  socket.onopen = () => socket.send(JSON.stringify({referenceId: guide.reference.id, metadata}));
  socket.onmessage = (event) => onMessage(socket, event);
  socket.onclose = (event) => onClose(socket, event);
}

function closeSocket() {
  const socket = guide.socket;
  guide.socket = null;
  if (socket) { socket.onclose = null; socket.onmessage = null; try { socket.close(1000); } catch { /* closed */ } }
  clearTimeout(guide.watchdog);
}

function onMessage(socket, event) {
  if (socket !== guide.socket) return;
  let message;
  try { message = JSON.parse(event.data); } catch { return; }
  if (message.opened) {
    guide.opened = true;
    guide.retries = 0;
    state.state = "live";
    setStatus("Guiding: follow the hints, then take the photo.");
    $("take").disabled = false;
    $("stop").disabled = false;
    sendFrame();
    return;
  }
  guide.inFlight = Math.max(0, guide.inFlight - 1);
  clearTimeout(guide.watchdog);
  if (message.error) {
    const code = message.error.code || "";
    guide.lastSocketError = message.error;
    if (code === "idle") showError("The session was closed after a pause; it is opened again.");
    else if (code === "unavailable") showError(`The worker is busy, full or shutting down (${message.error.message}).`);
    else showError(`A frame could not be used (${message.error.message}).`);
  } else {
    render(message);
  }
  if (guide.opened) requestAnimationFrame(sendFrame);
}

function onClose(socket, event) {
  if (socket !== guide.socket) return;
  guide.socket = null;
  guide.opened = false;
  guide.inFlight = 0;
  clearTimeout(guide.watchdog);
  state.state = "closed";
  if (!guide.wanted) return;
  const said = guide.lastSocketError;
  guide.lastSocketError = null;
  // A full or busy worker, or this address's sessions all open (one may go idle), is tried again below; any other
  // refused opening is said and left.
  const transient = said && ["unavailable", "timeout", "too_many_sessions"].includes(said.code);
  if (event.code === 1008 && !transient) {
    const why = said ? said.message : event.reason;
    showError(`The worker refused the session${why ? ` (${why})` : ""}; choose the photo again.`);
    guide.wanted = false;
    return;
  }
  const words = transient ? `the worker is busy or full (${said.message})`
    : event.code === 1001 ? "the worker is going away" : event.code === 1000 ? "the session was closed" : "the connection was lost";
  guide.retries += 1;
  const wait = Math.min(10, guide.retries * 2);
  showError(`Session closed: ${words}. Reconnecting in ${wait} s ...`);
  setTimeout(() => { if (guide.wanted && !guide.socket) openSession(); }, wait * 1000);
}

// One frame at a time: the next goes when the answer to this one came back (never more than one in flight).
function sendFrame() {
  const socket = guide.socket;
  if (!socket || !guide.opened || guide.inFlight > 0 || socket.readyState !== WebSocket.OPEN) return;
  const video = $("video");
  if (!video.videoWidth) { setTimeout(sendFrame, 100); return; }
  const size = frameSize();
  const canvas = guide.canvas;
  canvas.width = size.width; canvas.height = size.height;
  canvas.getContext("2d").drawImage(video, 0, 0, size.width, size.height);
  guide.inFlight = 1;
  state.maxInFlight = String(Math.max(Number(state.maxInFlight), guide.inFlight));
  canvas.toBlob((blob) => {
    if (socket !== guide.socket || !blob) { guide.inFlight = 0; return; }
    const metadata = {timestamp: performance.now() / 1000};
    if (guide.attitude) metadata.attitude = guide.attitude;
    socket.send(JSON.stringify(metadata));
    socket.send(blob);
    guide.sent = size;
    state.sent = String(Number(state.sent) + 1);
    // An answer that never comes is a lost connection: reopen.
    guide.watchdog = setTimeout(() => { if (socket === guide.socket) { socket.close(); onClose(socket, {code: 1006}); } }, 30000);
  }, "image/jpeg", JPEG_QUALITY);
}

// ------------------------------------------------------------------ drawing

function layout() {
  const video = $("video");
  const frame = $("frame");
  if (!video.videoWidth) return;
  const aspect = video.videoWidth / video.videoHeight;
  const landscape = matchMedia("(orientation: landscape) and (min-width: 700px)").matches;
  // Room above the video for the status and an error, under it for the slider and the buttons, and in portrait
  // for the hints: held sideways, the whole video and its buttons fit the screen.
  const above = document.querySelector("header").offsetHeight;
  const maxHeight = landscape ? Math.max(160, window.innerHeight - above - 60) : window.innerHeight * 0.62;
  frame.style.width = `${Math.min(frame.parentElement.clientWidth, maxHeight * aspect)}px`;
}

function polygon(ctx, points, colour, width, dash) {
  if (!points || points.length !== 4) return;
  ctx.save();
  ctx.strokeStyle = colour; ctx.lineWidth = width; ctx.setLineDash(dash || []);
  ctx.beginPath();
  points.forEach(([x, y], i) => (i ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
  ctx.closePath(); ctx.stroke();
  ctx.restore();
}

function arrow(ctx, x0, y0, x1, y1, colour, width) {
  const angle = Math.atan2(y1 - y0, x1 - x0);
  const head = width * 4;
  ctx.save();
  ctx.strokeStyle = colour; ctx.fillStyle = colour; ctx.lineWidth = width; ctx.lineCap = "round";
  ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
  ctx.beginPath(); ctx.moveTo(x1, y1);
  ctx.lineTo(x1 - head * Math.cos(angle - 0.45), y1 - head * Math.sin(angle - 0.45));
  ctx.lineTo(x1 - head * Math.cos(angle + 0.45), y1 - head * Math.sin(angle + 0.45));
  ctx.closePath(); ctx.fill();
  ctx.restore();
}

function render(answer) {
  guide.last = answer;
  const session = answer.session || {};
  const navigation = answer.navigation || null;
  const sensor = answer.sensor || null;
  state.answered = String(Number(state.answered) + 1);
  state.source = session.source || (navigation ? "vision" : sensor ? "sensor" : "");
  const converged = session.converged === true;
  state.converged = String(converged);
  if (converged) state.convergedFrames = String(Number(state.convergedFrames) + 1);
  $("banner").hidden = !converged;

  const canvas = $("overlay");
  const w = guide.sent.width, h = guide.sent.height;
  if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, w, h);
  const line = Math.max(2, w / 320);
  if (navigation) {
    polygon(ctx, navigation.target, "rgba(60, 220, 90, 0.95)", line, [line * 4, line * 3]);
    polygon(ctx, navigation.quadrilateral, converged ? "rgba(60, 220, 90, 0.95)" : "rgba(255, 140, 30, 0.95)", line * 1.5);
  } else if (sensor && sensor.quadrilateral) {
    polygon(ctx, sensor.quadrilateral, "rgba(120, 180, 255, 0.95)", line * 1.5);
  }
  // The step to the vantage point (session.step.vector: x right, y down, z forward), labelled with its hints. Seen from
  // above, right is right and forward is up the screen; a step mostly in height points up (raise) or down (lower).
  const step = session.step;
  state.step = "false";
  if (step && step.determined && !step.arrived && Array.isArray(step.vector)) {
    const [x, y, z] = step.vector;
    const across = Math.hypot(x, z);
    const [dx, dy] = across >= Math.abs(y) ? [x / across, -z / across] : [0, Math.sign(y)];
    if (Number.isFinite(dx) && Number.isFinite(dy)) {
      const r = Math.min(w, h) * 0.18;
      const [x1, y1] = [w / 2 + dx * r, h / 2 + dy * r];
      arrow(ctx, w / 2, h / 2, x1, y1, "rgba(255, 230, 40, 0.95)", line * 2);
      const label = (session.actions || []).filter((a) => a.kind === "step" || a.kind === "raise").map((a) => ACTION_TEXT[a.kind](a)).join(", ");
      if (label) {
        ctx.save();
        ctx.font = `bold ${Math.round(line * 7)}px system-ui, sans-serif`;
        ctx.textAlign = dx > 0.3 ? "left" : dx < -0.3 ? "right" : "center";
        ctx.textBaseline = dy > 0.3 ? "top" : "bottom";
        ctx.lineWidth = line * 2; ctx.strokeStyle = "rgba(0, 0, 0, 0.8)"; ctx.fillStyle = "rgba(255, 230, 40, 1)";
        const tx = x1 + dx * line * 6, ty = y1 + (dy >= 0 ? 1 : -1) * line * 6;
        ctx.strokeText(label, tx, ty); ctx.fillText(label, tx, ty);
        ctx.restore();
      }
      state.step = "true";
    }
  }

  const texts = hintTexts(session.actions || (navigation && navigation.actions), session.hints || (navigation && navigation.hints));
  const list = $("hints");
  list.replaceChildren(...texts.map((text) => { const item = document.createElement("li"); item.textContent = text; return item; }));
  if (texts.length) state.hints = String(Number(state.hints) + 1);
  if (!texts.length && !converged && navigation && navigation.aligned) list.replaceChildren(Object.assign(document.createElement("li"), {textContent: "aligned"}));

  let source = `Answer ${state.answered}: ${session.source || "vision"}`;
  if (session.source === "held" || session.source === "sensor") {
    const age = session.ageSeconds != null ? `${round2(session.ageSeconds)} s` : `${session.ageFrames || 0} frames`;
    source += session.source === "held" ? ` (the last answer repeated, ${age} old` : ` (the phone's sensor alone, ${age} since the last vision answer`;
    source += session.reason ? `: ${session.reason})` : ")";
  } else if (session.ageFrames) {
    source += ` (${session.ageFrames} frames since the last full match)`;
  }
  source += converged ? ". Converged: take the photo." : ".";
  $("source").textContent = source;
  $("sensor").textContent = guide.attitudeSeen ? `Sensor path on (${guide.attitude.frame}, ${guide.attitude.orientation}).`
    : "Sensor path off: this browser gives no device orientation.";
}

// ------------------------------------------------------------------ references

async function loadReferences() {
  const result = await api("/v1/references");
  if (!result.ok) { showError(failed(result, "The stored photos could not be listed")); return; }
  const select = $("references");
  const chosen = guide.reference ? guide.reference.id : "";
  select.replaceChildren(Object.assign(document.createElement("option"), {value: "", textContent: "(none chosen)"}));
  for (const reference of result.body.references || []) {
    const camera = reference.intrinsics === "unknown" ? "camera unknown" : reference.intrinsics ? "camera known" : "no camera";
    select.append(Object.assign(document.createElement("option"), {value: reference.id, textContent: `${reference.id.slice(0, 12)} (${camera})`}));
  }
  select.value = chosen;
}

async function chooseReference(id, imageURL) {
  clearError();
  const info = await api(`/v1/references/${encodeURIComponent(id)}`);
  if (!info.ok) { showError(failed(info, "That photo cannot be used")); return false; }
  const cameraUnknown = info.body.intrinsics === "unknown";
  if (!imageURL) {
    const image = await api(`/v1/references/${id}/image`);
    if (image.ok) imageURL = URL.createObjectURL(image.body);
    else showError(failed(image, "The old photo cannot be shown over the camera"));
  }
  guide.reference = {id, cameraUnknown, imageURL};
  state.reference = id;
  $("references").value = id;
  $("referenceInfo").textContent = `Photo ${id.slice(0, 12)}: its camera is ${cameraUnknown ? "unknown (an old photo: its lens is estimated)" : info.body.intrinsics ? "known" : "not given"}.`;
  const old = $("old");
  if (imageURL) { old.src = imageURL; old.hidden = false; } else old.hidden = true;
  const link = `${location.origin}/?reference=${id}`;
  history.replaceState(null, "", `/?reference=${id}`);
  $("qrLink").href = link; $("qrLink").textContent = link;
  const qr = await api(`/v1/references/${id}/qr`);
  if (qr.ok) { $("qrImage").src = URL.createObjectURL(qr.body); $("qr").hidden = false; }
  else showError(failed(qr, "The QR code could not be made"));
  await start();
  return true;
}

async function upload(event) {
  event.preventDefault();
  const file = $("file").files[0];
  if (!file) { showError("Choose a photo file to upload first."); return; }
  const form = new FormData();
  form.append("image", file, file.name);
  if ($("referenceCamera").value === "unknown") form.append("metadata", JSON.stringify({reference: {intrinsics: "unknown"}}));
  else if (guide.stream) { const size = frameSize(); form.append("metadata", JSON.stringify({reference: {intrinsics: intrinsics(size.width, size.height)}})); }
  state.upload = "";
  setStatus("Uploading the photo ...");
  const result = await api("/v1/references", {method: "POST", body: form});
  state.upload = String(result.status);
  if (!result.ok) {
    showError(failed(result, `The photo ${file.name} was refused`));
    setStatus(guide.opened ? "Guiding: follow the hints, then take the photo." : "Choose an old photo to stand where it was taken.");
    return;
  }
  await chooseReference(result.body.id, URL.createObjectURL(file));
  loadReferences();
}

async function start() {
  if (!(await startCamera())) return;
  guide.wanted = true;
  guide.retries = 0;
  openSession();
}

function stop() {
  guide.wanted = false;
  closeSocket();
  state.state = "idle";
  $("stop").disabled = true;
  setStatus("Stopped. Choose a photo to start again.");
}

// ------------------------------------------------------------------ take

async function capturePhoto() {
  const video = $("video");
  const track = guide.stream && guide.stream.getVideoTracks()[0];
  // The camera's full-resolution still where the browser gives one of the video's shape; the video frame otherwise.
  if (track && typeof ImageCapture === "function") {
    try {
      const blob = await Promise.race([new ImageCapture(track).takePhoto(), new Promise((_, reject) => setTimeout(() => reject(new Error("slow")), 5000))]);
      const bitmap = await createImageBitmap(blob);
      if (Math.abs(bitmap.width / bitmap.height - video.videoWidth / video.videoHeight) < 0.01) return {blob, width: bitmap.width, height: bitmap.height};
    } catch { /* the video frame below */ }
  }
  const canvas = document.createElement("canvas");
  canvas.width = video.videoWidth; canvas.height = video.videoHeight;
  canvas.getContext("2d").drawImage(video, 0, 0);
  const blob = await new Promise((resolve) => canvas.toBlob(resolve, "image/jpeg", 0.95));
  return {blob, width: canvas.width, height: canvas.height};
}

async function take() {
  if (!guide.reference || !guide.stream) return;
  $("take").disabled = true;
  state.take = ""; state.score = ""; state.composites = "";
  setStatus("Scoring your retake ...");
  try {
    const photo = await capturePhoto();
    const metadata = {retake: {intrinsics: intrinsics(photo.width, photo.height)}};
    const form = () => {
      const f = new FormData();
      f.append("referenceId", guide.reference.id);
      f.append("retake", photo.blob, "retake.jpg");
      return f;
    };
    const scoring = form();
    scoring.append("metadata", JSON.stringify(metadata));
    const result = await api("/v1/retakes/score", {method: "POST", body: scoring});
    state.take = String(result.status);
    $("result").hidden = false;
    if (!result.ok) { showError(failed(result, "Your retake could not be scored")); $("score").textContent = "Not scored."; return; }
    const doc = result.body;
    const score = doc.metrics && typeof doc.metrics.score === "number" ? doc.metrics.score : null;
    state.score = score === null ? "" : String(score);
    $("score").textContent = score === null ? `Not scored by vision${doc.visionFailure ? `: ${doc.visionFailure.message || doc.visionFailure}` : ""}.`
      : `Score ${score.toFixed(1)} of 100 (100: every point where the old photo has it).`;
    setStatus("Scored. Take another, or look at the composites below.");
    const composites = $("composites");
    composites.replaceChildren();
    for (const mode of ["warped", "blend", "split"]) {
      const f = form();
      f.append("metadata", JSON.stringify(Object.assign({}, metadata, {align: {mode, format: "jpeg"}})));
      const aligned = await api("/v1/retakes/align", {method: "POST", body: f});
      if (!aligned.ok) { showError(failed(aligned, `The ${mode} composite could not be made`)); continue; }
      const url = URL.createObjectURL(aligned.body);
      const figure = document.createElement("figure");
      const img = Object.assign(document.createElement("img"), {src: url, alt: `${mode} composite`});
      const link = Object.assign(document.createElement("a"), {href: url, download: `rephoto-${mode}.jpg`, textContent: `${mode}: download`});
      const caption = document.createElement("figcaption");
      caption.append(link);
      figure.append(img, caption);
      composites.append(figure);
    }
    state.composites = String(composites.children.length);
  } finally {
    $("take").disabled = !guide.opened;
  }
}

// ------------------------------------------------------------------ start-up

function init() {
  $("token").value = localStorage.getItem(TOKEN_KEY) || "";
  $("token").addEventListener("change", () => { localStorage.setItem(TOKEN_KEY, token()); loadReferences(); });
  $("opacity").addEventListener("input", () => {
    $("old").style.opacity = String($("opacity").value / 100);
    $("opacityValue").textContent = `${$("opacity").value}%`;
  });
  $("references").addEventListener("change", () => { if ($("references").value) chooseReference($("references").value); });
  $("upload").addEventListener("submit", upload);
  $("take").addEventListener("click", take);
  $("stop").addEventListener("click", stop);
  $("cameraKind").addEventListener("change", showCameraRows);
  $("saveCamera").addEventListener("click", () => { if (saveCamera()) { clearError(); if (guide.wanted) openSession(); } });
  $("motion").addEventListener("click", async () => {
    try { await DeviceOrientationEvent.requestPermission(); } catch (error) { showError(`The motion sensor was not allowed (${error.message}).`); }
  });
  window.addEventListener("resize", layout);
  window.addEventListener("online", () => { if (guide.wanted && !guide.socket) openSession(); });
  loadCameraForm();
  listenToOrientation();
  setTimeout(() => {
    if (!guide.attitudeSeen) $("sensor").textContent = "Sensor path off: this browser gives no device orientation.";
  }, 2000);
  loadReferences();
  const id = new URLSearchParams(location.search).get("reference");
  if (id) chooseReference(id);
  state.ready = "true";
}

init();
