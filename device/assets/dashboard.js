// The dashboard's code: plain JavaScript, no framework. Appended to dashboard.html by
// device/src/api.rs (one document at GET /). Reads only the API of the page's own origin: the
// daemon itself, or `pnctl dashboard`, which forwards with the API key.
"use strict";
const $ = (id) => document.getElementById(id);
const POLL_MS = 2000;

// ------------------------------------------------------------------ words for numbers

// Channel error types (IEC 61158-6-10 ChannelErrorType; Wireshark's names).
const ERROR_TYPES = {
  0x0001: "short circuit", 0x0002: "undervoltage", 0x0003: "overvoltage", 0x0004: "overload",
  0x0005: "overtemperature", 0x0006: "line break", 0x0007: "upper limit value exceeded",
  0x0008: "lower limit value exceeded", 0x0009: "error", 0x000A: "simulation active",
  0x000F: "parameter missing", 0x0010: "parameterization fault", 0x0011: "power supply fault",
  0x0012: "fuse blown / open", 0x0013: "communication fault", 0x0014: "ground error",
  0x0015: "reference point lost", 0x0016: "process event lost / sampling error",
  0x0017: "threshold warning", 0x0018: "output disabled", 0x0019: "functional safety event",
  0x001A: "external fault", 0x001F: "temporary error",
  0x8000: "data transmission impossible", 0x8001: "remote mismatch",
  0x8002: "media redundancy mismatch", 0x8003: "sync mismatch",
  0x8004: "isochronous mode mismatch", 0x8005: "multicast CR mismatch",
  0x8007: "fiber optic mismatch", 0x8008: "network component function mismatch",
  0x8009: "time mismatch", 0x800A: "dynamic frame packing function mismatch",
  0x800B: "MRPD mismatch", 0x800C: "system redundancy mismatch",
};
function errorTypeText(t) {
  if (ERROR_TYPES[t]) return ERROR_TYPES[t];
  if (t >= 0x0100 && t <= 0x7FFF) return "manufacturer specific";
  return "reserved";
}
const SEVERITY = ["fault", "maintenance required", "maintenance demanded", "qualified"];
const END_CAUSE = {
  fault: "fault", releasedByController: "released by the controller",
  abortedByController: "aborted by the controller", stopped: "stopped here",
};
const ERROR_CODES = {0: "Ok", "-1": "ErrInit", "-2": "ErrCfg", "-3": "ErrThread",
  "-4": "ErrRunning", "-5": "ErrPdi", "-6": "ErrDap"};
const WAIT_REASON = {
  "": "", NotStarted: "the slave is not started", LicenceInvalid: "the licence is not valid",
  ConfigError: "the configuration or the network port is not usable",
  LinkDown: "the network link is down", WaitingForController: "waiting for a controller to connect",
  ConnectionLost: "the connection to the controller was lost",
};
const hex2 = (n) => "0x" + n.toString(16).padStart(2, "0");
const hex4 = (n) => "0x" + n.toString(16).padStart(4, "0");
function ioxs(h) { return h === "80" ? "GOOD" : h === "" || h === undefined ? "-" : "BAD (" + h + ")"; }
function us(n) { return n >= 1000 ? (n / 1000) + " ms" : n + " µs"; }

// ------------------------------------------------------------------ API access

class ApiError extends Error {
  constructor(kind, status, message) { super(message); this.kind = kind; this.status = status; }
}
async function api(method, path, body) {
  let r;
  try {
    r = await fetch(path, {method, cache: "no-store",
      headers: body ? {"Content-Type": "application/json"} : {},
      body: body ? JSON.stringify(body) : undefined});
  } catch (e) {
    throw new ApiError("down", 0, "the pn-device service is not reachable (stopped?)");
  }
  let j = null;
  try { j = await r.json(); } catch (e) { j = null; }
  if (r.status === 401) throw new ApiError("auth", 401, "the service refused the API key (HTTP 401)");
  if (!r.ok) {
    const what = {400: "the service rejected the request", 404: "unknown request",
      413: "the request is too large", 500: "the service failed internally",
      503: "the service is busy; try again"}[r.status] || "the request failed";
    throw new ApiError("http", r.status, what + " (HTTP " + r.status + ")"
      + ((j && j.message) ? ": " + j.message : ""));
  }
  return j;
}
function showResult(text, bad) {
  const r = $("result"); r.textContent = text; r.className = bad ? "bad" : "good";
}
// A control's request: its answer in words (Track 2 answers are HTTP 200 with ok=false).
async function act(what, method, path, body) {
  try {
    const j = await api(method, path, body);
    const ok = j.ok !== false && j.success !== false;
    let text = what + (ok ? ": done" : ": refused");
    if (j.message) text += " \u2014 " + j.message;
    if (!ok && j.errorCode) text += " (errorCode " + j.errorCode + " " + (ERROR_CODES[j.errorCode] || "") + ")";
    showResult(text, !ok);
    await refresh();
    return j;
  } catch (e) {
    showResult(what + ": " + (e.message || e), true);
    return null;
  }
}

// ------------------------------------------------------------------ small DOM helpers

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
function kv(id, rows) {
  const t = $(id); t.textContent = "";
  for (const [key, label, value, cls] of rows) {
    const tr = t.insertRow(); tr.dataset.key = key;
    tr.insertCell().append(el("span", label)); tr.cells[0].className = "k";
    const td = tr.insertCell(); td.textContent = value; if (cls) td.className = cls;
  }
}
function table(id, head, rows) {
  const t = $(id); t.textContent = "";
  if (head) { const h = t.createTHead().insertRow(); for (const c of head) h.append(el("th", c)); }
  const b = t.createTBody();
  for (const r of rows) b.append(r);
  return t;
}
function row(cells, attrs) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    const td = document.createElement("td");
    if (c instanceof Node) td.append(c);
    else if (Array.isArray(c)) { td.textContent = c[0]; td.className = c[1]; }
    else td.textContent = c === undefined || c === null ? "" : String(c);
    tr.append(td);
  }
  for (const [k, v] of Object.entries(attrs || {})) tr.dataset[k] = v;
  return tr;
}
function bytes(hex) {
  const b = [];
  for (let i = 0; i + 1 < (hex || "").length; i += 2) b.push(parseInt(hex.slice(i, i + 2), 16));
  return b;
}
function dump(hex) {
  if (!hex) return "(empty)";
  const lines = [];
  for (let i = 0; i < hex.length; i += 32) {
    lines.push(String(i / 2).padStart(4, " ") + ": " + hex.slice(i, i + 32).match(/../g).join(" "));
  }
  return lines.join("\n");
}

// ------------------------------------------------------------------ process image

// Values of an area in the client address scheme (spec 4.1): big-endian words.
function readAt(b, off, n) { let v = 0; for (let i = 0; i < n; i++) v = v * 256 + (b[off + i] ?? 0); return v; }
function f32(b, off) {
  const dv = new DataView(new ArrayBuffer(4));
  for (let i = 0; i < 4; i++) dv.setUint8(i, b[off + i] ?? 0);
  return dv.getFloat32(0, false);
}
function toBytes(value, n, float) {
  const dv = new DataView(new ArrayBuffer(n));
  if (float) dv.setFloat32(0, value, false);
  else if (n === 1) dv.setUint8(0, value);
  else if (n === 2) dv.setUint16(0, value, false);
  else dv.setUint32(0, value, false);
  return [...new Uint8Array(dv.buffer)];
}
// Parse "IW2", "I0.3", "MB1", "DB1.DBD4" (spec 4.1) -> {area, offset, n, bit}.
function parseAddress(text) {
  const s = text.trim().toUpperCase();
  let m = /^DB(\d+)\.DB([XBWD])(\d+)(?:\.([0-7]))?$/.exec(s);
  let area, kind, off, bit;
  if (m) {
    if (m[1] !== "1") throw new Error(text + ": only DB1 exists in service mode");
    area = "I"; kind = m[2] === "X" ? "X" : m[2]; off = +m[3]; bit = m[4];
    if ((kind === "X") !== (bit !== undefined)) throw new Error(text + ": DBX needs a bit (DB1.DBX0.0)");
  } else {
    m = /^([IQM])([BWD]?)(\d+)(?:\.([0-7]))?$/.exec(s);
    if (!m) throw new Error("'" + text + "' is not an address (I0.0, IB0, IW2, ID4, M.., DB1.DBW0)");
    area = m[1] === "M" ? "I" : m[1]; kind = m[2] || "X"; off = +m[3]; bit = m[4];
    if ((kind === "X") !== (bit !== undefined)) throw new Error(text + ": a bit address needs .0 to .7, a byte address B/W/D");
  }
  if (area === "Q") throw new Error(text + " is a Q address (PLC output, controller \u2192 device): read-only for clients");
  return {offset: off, n: {X: 1, B: 1, W: 2, D: 4}[kind], bit: bit === undefined ? null : +bit};
}
function parseNumber(text, n, float) {
  const t = text.trim();
  if (float) { const v = Number(t); if (!Number.isFinite(v)) throw new Error("'" + t + "' is not a number"); return v; }
  let v = /^[-+]?0x[0-9a-f]+$/i.test(t) ? parseInt(t, 16) : /^[-+]?\d+$/.test(t) ? parseInt(t, 10) : NaN;
  if (!Number.isFinite(v)) throw new Error("'" + t + "' is not an integer (decimal or 0x hex)");
  const max = 2 ** (8 * n);
  if (v < 0 && v >= -max / 2) v += max;
  if (v < 0 || v >= max) throw new Error(t + " does not fit in " + n + " byte(s)");
  return v;
}
let lastIo = null;
// Write bytes at an I offset: the answer in words, including a write held for a down link.
async function writeBytes(label, offset, data) {
  const dataHex = data.map((x) => x.toString(16).padStart(2, "0")).join("");
  const j = await act("write " + label, "POST", "/api/io", {offset, data: dataHex});
  if (j && j.ok === false) {
    showResult("write " + label + ": kept in the device, not delivered to the controller yet ("
      + (j.reasonCode || "") + (j.message ? ": " + j.message : "") + ")", true);
  }
}
async function writeAddress(addrText, valueText, type) {
  let a;
  try {
    a = parseAddress(addrText);
    const b = lastIo ? bytes(lastIo.outputHex) : [];
    let data;
    if (a.bit !== null) {
      const on = /^(1|true|on)$/i.test(valueText.trim());
      if (!on && !/^(0|false|off)$/i.test(valueText.trim())) throw new Error("a bit is 0 or 1");
      const cur = b[a.offset] ?? 0;
      data = [on ? cur | (1 << a.bit) : cur & ~(1 << a.bit)];
    } else {
      const float = type === "float";
      if (float && a.n !== 4) throw new Error("a REAL needs a double-word address (ID)");
      data = toBytes(parseNumber(valueText, a.n, float), a.n, float);
    }
    await writeBytes(addrText.trim().toUpperCase() + " = " + valueText.trim(), a.offset, data);
  } catch (e) {
    showResult("write: " + e.message, true);
  }
}
// One area's values as the chosen format; the I values (the PLC's inputs) are editable.
function renderValues(id, letter, hex, editable) {
  const t = $(id);
  const fmt = $("fmt").value;
  // Rebuilt only when the values or the format change, and never under the user's typing.
  if (t.contains(document.activeElement) || t.dataset.shown === fmt + ":" + hex) return;
  t.dataset.shown = fmt + ":" + hex;
  const b = bytes(hex);
  const rows = [];
  if (fmt === "bit") {
    for (let i = 0; i < b.length; i++) {
      const box = el("span", null, "bits");
      for (let bit = 7; bit >= 0; bit--) {
        const lab = el("label");
        const c = document.createElement("input");
        c.type = "checkbox"; c.checked = (b[i] >> bit) & 1; c.disabled = !editable;
        c.dataset.addr = letter + i + "." + bit;
        c.title = letter + i + "." + bit;
        if (editable) c.onchange = () => writeAddress(c.dataset.addr, c.checked ? "1" : "0");
        lab.append(c, String(bit)); box.append(lab);
      }
      rows.push(row([letter + "B" + i, box], {addr: letter + "B" + i}));
    }
  } else {
    const n = {byte: 1, word: 2, dword: 4, float: 4}[fmt];
    const form = {1: "B", 2: "W", 4: "D"}[n];
    for (let off = 0; off + n <= b.length; off += n) {
      const addr = letter + form + off;
      const v = fmt === "float" ? f32(b, off) : readAt(b, off, n);
      const shown = fmt === "float" ? String(Number(v.toPrecision(7)))
        : "0x" + v.toString(16).padStart(2 * n, "0");
      let cell;
      if (editable) {
        cell = document.createElement("input");
        cell.className = "cell" + (fmt === "float" ? " f" : ""); cell.value = shown;
        cell.dataset.addr = addr;
        cell.onkeydown = (ev) => {
          if (ev.key === "Enter") { ev.preventDefault(); writeAddress(addr, cell.value, fmt === "float" ? "float" : ""); cell.blur(); }
        };
      } else cell = el("span", shown, "mono");
      const dec = fmt === "float" ? "" : String(v);
      rows.push(row([addr, cell, [dec, "muted"]], {addr}));
    }
  }
  table(id, ["address", fmt === "float" ? "REAL" : "value", fmt === "float" || fmt === "bit" ? "" : "decimal"], rows);
}
function range(letter, off, len) {
  if (!len) return "-";
  return len === 1 ? letter + "B" + off : letter + "B" + off + " \u2026 " + letter + "B" + (off + len - 1);
}
function renderLayout(io, ar) {
  const out = bytes(io.outputHex), inp = bytes(io.inputHex);
  const bad = new Set(((ar && ar.mismatchedSubmodules) || []).map((p) => p[0] + "/" + p[1]));
  const h = (b, off, len) => b.slice(off, off + len).map((x) => x.toString(16).padStart(2, "0")).join(" ");
  const rows = (io.layout || []).map((s) => {
    const mism = bad.has(s.slot + "/" + s.subslot);
    const st = (iops, iocs) => mism ? ["BAD (expected differently)", "bad"] : ioxs(iops) + " / " + ioxs(iocs);
    return row([s.slot, hex4(s.subslot), "0x" + s.moduleIdent.toString(16), "0x" + s.submoduleIdent.toString(16),
      range("I", s.outputOffset, s.outputLength), [h(out, s.outputOffset, s.outputLength), "hex"],
      s.outputLength ? st(io.outputIopsHex, io.outputIocsHex) : "",
      range("Q", s.inputOffset, s.inputLength), [h(inp, s.inputOffset, s.inputLength), "hex"],
      s.inputLength ? st(io.inputIopsHex, io.inputIocsHex) : ""],
    {slot: s.slot, subslot: s.subslot});
  });
  table("layout", ["slot", "subslot", "module", "submodule", "I (outputHex)", "bytes",
    "IOPS / IOCS", "Q (inputHex)", "bytes", "IOPS / IOCS"], rows);
}

// ------------------------------------------------------------------ status, AR

function renderStatus(s) {
  const st = $("state"); st.textContent = s.state; st.className = "state " + s.state;
  $("version").textContent = s.version;
  $("station").textContent = s.masterStationName || s.configStationName || "(no station name)";
  $("timer").checked = !!s.highResolutionTimer;
  const code = s.errorCode + (ERROR_CODES[s.errorCode] ? " (" + ERROR_CODES[s.errorCode] + ")" : "");
  kv("status", [
    ["state", "state", s.state],
    ["waitReason", "waiting", WAIT_REASON[s.waitReason] ?? s.waitReason],
    ["statusMessage", "message", s.statusMessage],
    ["errorCode", "errorCode", code, s.errorCode ? "bad" : ""],
    ["interfaceName", "network port", (s.interfaceName || "") + (s.hardwarePortPresent ? ", present" : ", missing")
      + (s.linkUp ? ", link up" : ", link down"), s.hardwarePortPresent && s.linkUp ? "" : "bad"],
    ["configStationName", "station name (configuration)", s.configStationName],
    ["masterStationName", "station name (controller)", s.masterStationName || "-"],
    ["masterAssignedIp", "IP (controller, DCP)", s.masterAssignedIp ? s.masterAssignedIp + " / "
      + s.masterAssignedMask + " gw " + s.masterAssignedGateway : "-"],
    ["dcpIpApplyMessage", "IP applied", s.masterAssignedIp ? (s.dcpIpApplied ? "yes " : "no ") + s.dcpIpApplyMessage : "-"],
    ["connected", "connected", s.connected ? "yes" : "no"],
    ["everConnected", "ever connected", s.everConnected ? "yes" : "no"],
    ["outputSyncedToDriver", "I values sent (outputSyncedToDriver)", s.outputSyncedToDriver ? "yes" : "no, held in the device"],
    ["configSource", "configuration", s.configSource],
  ]);
  // The states an engineer must act on get a sentence at the top.
  const b = $("banner");
  if (s.state === "ConfigError") {
    b.className = "state";
    b.textContent = "Configuration error: " + (s.statusMessage || "the network port or the configuration is not usable")
      + ". Fix it, press \u201cReload configuration\u201d, then \u201cStart\u201d.";
  } else if (s.state === "Aborted") {
    b.className = "state";
    b.textContent = "The connection to the controller ended: " + (s.statusMessage || "") + ". Waiting for the controller to connect again.";
  } else if (b.className === "state") { b.className = ""; b.textContent = ""; }
}
function renderAr(s) {
  const a = s.ar, hist = s.arHistory || [];
  if (a) {
    $("arNote").textContent = "In data exchange since " + a.since + ".";
    kv("ar", [
      ["controllerStationName", "controller", a.controllerStationName],
      ["controllerMac", "controller MAC", a.controllerMac || "-"],
      ["controllerIp", "controller IP", a.controllerIp || "-"],
      ["arUuid", "AR UUID", a.arUuid || "-", "mono"],
      ["sendClock", "send clock", a.sendClockFactor ? us(a.sendClockUs) + " (factor " + a.sendClockFactor + ")" : "-"],
      ["reductionRatio", "reduction ratio", a.reductionRatio || "-"],
      ["cycle", "cycle", a.cycleUs ? us(a.cycleUs) : "-"],
      ["watchdogFactor", "watchdog factor", a.watchdogFactor || "-"],
      ["dataHold", "data-hold time", a.dataHoldUs ? us(a.dataHoldUs) + " (factor " + a.dataHoldFactor + ")" : "-"],
      ["since", "since", a.since],
    ]);
  } else {
    $("arNote").textContent = hist.length ? "No AR now; the last one ended " + hist[0].endedAt + "." : "No AR since the service started.";
    kv("ar", []);
  }
  const rows = hist.map((h) => row([h.since, h.endedAt, h.controllerStationName + (h.controllerIp ? " (" + h.controllerIp + ")" : ""),
    h.cycleUs ? us(h.cycleUs) : "", [END_CAUSE[h.endCause] || h.endCause, h.endCause === "fault" ? "bad" : ""], h.endReason],
    {arUuid: h.arUuid}));
  table("arHistory", ["since", "ended", "controller", "cycle", "who ended it", "reason"],
    rows.length ? rows : [row(["none yet"])]);
}

// ------------------------------------------------------------------ diagnosis, alarms

let layoutKeys = "";
function renderDiagForm(io) {
  const subs = (io.layout || []).map((s) => s.slot + "/" + s.subslot);
  if (subs.join() === layoutKeys) return;
  layoutKeys = subs.join();
  const sel = $("dSub"); sel.textContent = "";
  for (const s of io.layout || []) {
    const o = el("option", "slot " + s.slot + " subslot " + hex4(s.subslot));
    o.value = s.slot + "/" + s.subslot; sel.append(o);
  }
  // Default to the first I/O submodule (not the DAP).
  const first = (io.layout || []).find((s) => s.slot > 0);
  if (first) sel.value = first.slot + "/" + first.subslot;
}
function renderDiagnoses(d) {
  const list = d.diagnoses || [];
  $("diagCount").textContent = list.length;
  const rows = list.map((e) => {
    const rm = el("button", "remove");
    rm.onclick = () => act("remove diagnosis", "POST", "/api/diag", {action: "remove", slot: e.slot,
      subslot: e.subslot, channel: e.channel, errorType: e.errorType});
    return row([e.slot, hex4(e.subslot), e.channel === 0x8000 ? "whole submodule" : e.channel,
      hex4(e.errorType) + " " + errorTypeText(e.errorType), [SEVERITY[e.severity] ?? e.severity, e.severity === 0 ? "bad" : ""],
      e.text, rm], {diagKey: [e.slot, e.subslot, e.channel, e.errorType].join("/")});
  });
  table("diagnoses", ["slot", "subslot", "channel", "error type", "severity", "text", ""],
    rows.length ? rows : [row([d.ok === false ? "the slave is not started: entries shown after start" : "no diagnosis entries"])]);
}
function alarmRows(list, withAck) {
  return list.map((a) => {
    const cells = [a.id, [a.severity, "sev-" + a.severity], a.source, a.message, a.count, a.occurredAt];
    if (withAck) {
      const b = el("button", "acknowledge");
      b.onclick = () => act("acknowledge alarm " + a.id, "POST", "/api/alarms/ack", {id: a.id});
      cells.push(b);
    } else cells.push(a.state || "");
    return row(cells, {alarmId: a.id});
  });
}
function renderAlarms(active, history) {
  $("alarmCount").textContent = active.length;
  const r = alarmRows(active, true);
  table("alarms", r.length ? ["id", "severity", "source", "message", "count", "occurred", ""] : null,
    r.length ? r : [row(["no active alarms"])]);
  const h = alarmRows(history, false);
  table("alarmHistory", ["id", "severity", "source", "message", "count", "occurred", "state"],
    h.length ? h : [row(["no alarms yet"])]);
}

// ------------------------------------------------------------------ cycle chart

const CHART_POINTS = 150; // 5 minutes at one point per poll
const series = [[], [], [], [], [], []]; // t, interval, mean jitter, max jitter, missed, trips
let prevDiag = null, chart = null;
function chartOpts() {
  return {
    width: Math.max(320, $("chart").clientWidth || 800), height: 240,
    series: [
      {},
      {label: "interval (µs)", stroke: "#2f6fb0", width: 1.5, scale: "us"},
      {label: "mean jitter (µs)", stroke: "#c48a00", width: 1.5, scale: "us"},
      {label: "max jitter so far (µs)", stroke: "#999", dash: [4, 3], scale: "us"},
      {label: "missed cycles", stroke: "#b00", width: 2, scale: "n", paths: uPlot.paths.stepped({align: 1})},
      {label: "watchdog trips", stroke: "#6a1b9a", width: 2, scale: "n", paths: uPlot.paths.stepped({align: 1})},
    ],
    scales: {x: {time: true}, us: {auto: true}, n: {auto: true, range: (u, lo, hi) => [0, Math.max(1, hi)]}},
    axes: [{}, {scale: "us", label: "µs"}, {scale: "n", side: 1, label: "count per window", grid: {show: false}}],
  };
}
function updateChart(d) {
  if (!d.ok || typeof d.stackCycles !== "number") { prevDiag = null; return; }
  const now = performance.now();
  const p = prevDiag;
  prevDiag = {t: now, d};
  if (!p) return;
  const dc = d.stackCycles - p.d.stackCycles;
  const interval = dc > 0 ? Math.round(((now - p.t) * 1000) / dc) : null;
  // One decimal: the lateness of a healthy cycle is a few microseconds.
  const jitter = dc > 0 && typeof d.stackJitterSumUs === "number"
    ? Math.round((10 * (d.stackJitterSumUs - p.d.stackJitterSumUs)) / dc) / 10 : null;
  const missed = d.stackMissedTicks - p.d.stackMissedTicks;
  const trips = d.watchdogTrips - p.d.watchdogTrips;
  const vals = [Date.now() / 1000, interval, jitter, d.stackMaxJitterUs, missed, trips];
  vals.forEach((v, i) => { series[i].push(v); if (series[i].length > CHART_POINTS) series[i].shift(); });
  $("cycleNow").textContent = "interval " + (interval ?? "-") + " µs, mean jitter " + (jitter ?? "-")
    + " µs, max jitter " + d.stackMaxJitterUs + " µs, missed " + missed + ", watchdog trips " + trips
    + " (since start: " + d.stackMissedTicks + " missed, " + d.watchdogTrips + " trips)";
  if (typeof uPlot === "undefined") return;
  if (!chart) chart = new uPlot(chartOpts(), series, $("chart"));
  else chart.setData(series);
}
window.addEventListener("resize", () => { if (chart) chart.setSize({width: Math.max(320, $("chart").clientWidth), height: 240}); });

// ------------------------------------------------------------------ counters, polling

function renderCounters(d) {
  $("diagMsg").textContent = d.ok ? "" : (d.message || "no counters: the slave is not started");
  const t = $("counters"); t.textContent = "";
  for (const [k, v] of Object.entries(d)) {
    if (["diagnoses", "timestamp", "message", "ok", "state"].includes(k)) continue;
    const flat = v && typeof v === "object" && !Array.isArray(v) ? Object.entries(v).map(([k2, v2]) => [k + "." + k2, v2]) : [[k, v]];
    for (const [key, val] of flat) {
      const tr = t.insertRow(); tr.dataset.key = key;
      tr.insertCell().textContent = key; tr.cells[0].className = "k";
      tr.insertCell().textContent = typeof val === "object" ? JSON.stringify(val) : String(val);
    }
  }
}
function setConn(kind, text) {
  const c = $("conn"); c.className = "pill " + kind; c.textContent = text;
  const b = $("banner");
  if (kind === "down") {
    b.className = "down";
    b.textContent = "The pn-device service is not reachable (stopped or restarting). "
      + "The values below are the last ones received; retrying every 2 s.";
  } else if (kind === "auth") {
    b.className = "auth";
    b.textContent = "The service requires its API key (header X-Vendor-Pnet-Api-Key): open this page "
      + "with `pnctl --api-key KEY dashboard` and the address it prints.";
  } else if (b.className === "down" || b.className === "auth") { b.className = ""; b.textContent = ""; }
  document.body.classList.toggle("stale", kind !== "live");
}
let busy = false;
async function refresh() {
  if (busy) return;
  busy = true;
  try {
    const s = await api("GET", "/api/status");
    renderStatus(s);
    renderAr(s);
    const io = await api("GET", "/api/io");
    lastIo = io;
    $("iLen").textContent = io.outputLength; $("qLen").textContent = io.inputLength;
    $("outputHex").textContent = dump(io.outputHex); $("inputHex").textContent = dump(io.inputHex);
    $("iIops").textContent = io.outputIopsHex; $("iIocs").textContent = io.outputIocsHex;
    $("qIops").textContent = io.inputIopsHex; $("qIocs").textContent = io.inputIocsHex;
    kv("io", ["epoch", "inputValid", "outputValid", "outputSyncedToDriver", "formatVersion"].map((k) => [k, k, String(io[k])]));
    renderLayout(io, s.ar);
    renderValues("iValues", "I", io.outputHex, true);
    renderValues("qValues", "Q", io.inputHex, false);
    renderDiagForm(io);
    const [active, history, d] = await Promise.all([api("GET", "/api/alarms"),
      api("GET", "/api/alarms/history"), api("GET", "/api/diag")]);
    renderAlarms(active, history);
    renderDiagnoses(d);
    renderCounters(d);
    updateChart(d);
    setConn("live", "live");
    $("updated").textContent = new Date().toLocaleTimeString();
  } catch (e) {
    if (e instanceof ApiError && e.kind === "down") setConn("down", "service unreachable");
    else if (e instanceof ApiError && e.kind === "auth") setConn("auth", "API key required");
    else { setConn("live", "live"); showResult(String(e.message || e), true); }
  } finally {
    busy = false;
  }
}

// ------------------------------------------------------------------ controls

$("start").onclick = () => act("start", "POST", "/api/start");
$("stop").onclick = () => act("stop", "POST", "/api/stop");
$("reload").onclick = () => act("reload configuration", "POST", "/api/config/reload", {});
$("timer").onchange = () => act("high-resolution timer " + ($("timer").checked ? "on" : "off"),
  "POST", "/api/high-resolution-timer", {enable: $("timer").checked});
$("ackall").onclick = () => act("acknowledge all alarms", "POST", "/api/alarms/ack-all");
$("fmt").onchange = () => { if (lastIo) { renderValues("iValues", "I", lastIo.outputHex, true); renderValues("qValues", "Q", lastIo.inputHex, false); } };
// Resets need a second, explicit confirmation: they drop the AR and erase remanent data.
function confirmReset(mode, text) {
  $("confirmText").textContent = text;
  $("confirmYes").dataset.mode = mode;
  $("confirm").showModal();
}
$("resetComm").onclick = () => confirmReset("communication", "Reset communication: the stored station name and IP go back "
  + "to the configuration's, and the controller's connection is released. Diagnosis, I&M and records are kept.");
$("resetFactory").onclick = () => confirmReset("factory", "Factory reset: everything of the communication reset, plus "
  + "I&M1-4, all stored records and all diagnosis entries are erased.");
$("confirmNo").onclick = () => { $("confirm").close(); showResult("reset cancelled", false); };
$("confirmYes").onclick = () => {
  const mode = $("confirmYes").dataset.mode;
  $("confirm").close();
  act("reset " + mode, "POST", "/api/reset", {mode});
};
$("writeForm").onsubmit = (ev) => { ev.preventDefault(); writeAddress($("wAddr").value, $("wVal").value, $("wType").value); };
for (const t of Object.keys(ERROR_TYPES).map(Number)) {
  const o = el("option", hex4(t) + " " + ERROR_TYPES[t]); o.value = t; $("dType").append(o);
}
$("diagForm").onsubmit = (ev) => {
  ev.preventDefault();
  const [slot, subslot] = ($("dSub").value || "").split("/").map(Number);
  let channel;
  try { channel = parseNumber($("dChannel").value, 2, false); } catch (e) { showResult("diagnosis: channel " + e.message, true); return; }
  act("add diagnosis", "POST", "/api/diag", {action: "add", slot, subslot, channel,
    errorType: Number($("dType").value), severity: Number($("dSev").value), text: $("dText").value});
};
refresh();
setInterval(refresh, POLL_MS);
