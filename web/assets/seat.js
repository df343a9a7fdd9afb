// SPDX-License-Identifier: LGPL-2.1-or-later
// The participant's page: the seat's state, asked of seat-web (which asks seatd with the
// session's token) every few seconds. No framework, nothing from elsewhere.
"use strict";

const seat = decodeURIComponent(location.pathname.split("/")[2] || "");
const $ = (id) => document.getElementById(id);
let timer = null;

function show(id, text) {
  $(id).textContent = text === undefined || text === null ? "" : String(text);
}

function ended(message) {
  clearInterval(timer);
  $("status").hidden = true;
  $("problem").hidden = true;
  $("ended").hidden = false;
  $("ended").textContent = message;
  $("again").hidden = false;
  $("logout").hidden = true;
  $("new-terminal").hidden = true;
  document.body.dataset.state = "ended";
}

async function poll() {
  let r;
  try {
    r = await fetch(`/api/seat/${encodeURIComponent(seat)}/status`, { credentials: "same-origin", cache: "no-store" });
  } catch (e) {
    $("problem").hidden = false;
    $("problem").textContent = "seat-web cannot be reached: retrying.";
    return;
  }
  if (r.status === 401) {
    const body = await r.json().catch(() => ({}));
    ended(body.message || "Your session has ended: log in again with your token.");
    return;
  }
  if (r.status === 403) {
    ended("This session is not for this seat.");
    return;
  }
  if (!r.ok) {
    $("problem").hidden = false;
    $("problem").textContent = "The seat's state cannot be read now: retrying.";
    return;
  }
  const s = await r.json();
  $("problem").hidden = true;
  show("state", s.state + (s.fault ? ` (${s.fault})` : ""));
  show("image", s.image_version ? `${s.image} ${s.image_version}` : s.image);
  show("participant", s.participant);
  show("generation", s.generation);
  show("updated", new Date().toLocaleTimeString());
  document.body.dataset.state = s.state;
  showForwardLinks(s.forward_ports);
  if (Number.isInteger(s.terminals_per_session) && s.terminals_per_session !== maxTerminals) {
    maxTerminals = s.terminals_per_session;
    offerNew();
  }
}

// ---- the seat's web pages: a link for each port seat-web forwards to (forward_ports),
// under /seat/ID/port/N/, made once (the list only changes with seat-web's config).
function showForwardLinks(ports) {
  const list = $("forward-links");
  if (!Array.isArray(ports) || list.dataset.ports === ports.join(",")) return;
  list.dataset.ports = ports.join(",");
  list.replaceChildren();
  for (const port of ports) {
    if (!Number.isInteger(port)) continue;
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = `/seat/${encodeURIComponent(seat)}/port/${port}/`;
    a.target = "_blank";
    a.rel = "noopener";
    a.textContent = `port ${port}`;
    li.append(a);
    list.append(li);
  }
  $("forward").hidden = ports.length === 0;
}

// ---- terminals: a login shell in the seat per pane, over a WebSocket to seat-web, which
// runs it through seatd with this session's token. Keystrokes go up as binary messages,
// the terminal's size as {"type":"resize"}; output comes back as binary, the end as
// {"type":"exit"}.
// Several side by side, as many as seat-web's terminals_per_session (the status says how
// many); "New terminal" is offered while there is room.
let maxTerminals = 1;
let terminals = 0;

function offerNew() {
  $("new-terminal").hidden = document.body.dataset.state === "ended" || terminals >= maxTerminals;
}

function openTerminal() {
  if (terminals >= maxTerminals || typeof Terminal === "undefined") return;
  terminals++;
  offerNew();
  for (const old of document.querySelectorAll('.term[data-state="ended"]')) old.remove();
  const pane = document.createElement("div");
  pane.className = "term";
  pane.dataset.state = "connecting";
  const box = document.createElement("div");
  box.className = "term-box";
  const state = document.createElement("div");
  state.className = "term-state";
  state.textContent = "connecting…";
  pane.append(box, state);
  $("terminals").append(pane);

  const term = new Terminal({ cursorBlink: true, scrollback: 5000, fontFamily: "ui-monospace, monospace" });
  const fit = new FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(box);
  fit.fit();
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}/ws/seat/${encodeURIComponent(seat)}/terminal`, "seat-terminal");
  ws.binaryType = "arraybuffer";
  const enc = new TextEncoder();
  const sendSize = () => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: "resize", rows: term.rows, cols: term.cols }));
  };
  ws.onopen = () => {
    pane.dataset.state = "open";
    state.textContent = "connected";
    sendSize();
    term.focus();
  };
  ws.onmessage = (e) => {
    if (typeof e.data !== "string") {
      term.write(new Uint8Array(e.data));
      return;
    }
    let m = {};
    try { m = JSON.parse(e.data); } catch (err) { return; }
    if (m.type === "exit") {
      pane.dataset.state = "ended";
      state.textContent = m.message || "The terminal has ended.";
    }
  };
  ws.onclose = () => {
    terminals--;
    offerNew();
    if (pane.dataset.state !== "ended") {
      pane.dataset.state = "ended";
      state.textContent = "The terminal was closed (the seat was reset or released, or seat-web went away).";
    }
  };
  term.onData((d) => { if (ws.readyState === WebSocket.OPEN) ws.send(enc.encode(d)); });
  term.onBinary((d) => {
    if (ws.readyState !== WebSocket.OPEN) return;
    const b = new Uint8Array(d.length);
    for (let i = 0; i < d.length; i++) b[i] = d.charCodeAt(i) & 255;
    ws.send(b);
  });
  term.onResize(sendSize);
  window.addEventListener("resize", () => fit.fit());
}

// ---- files: uploads and downloads in chunks of 512 KiB, one request each (seat-web asks
// seatd for each, with this session's token); the page shows how far it got.
const CHUNK = 512 * 1024;
const fileUrl = (path, offset, final) =>
  `/api/seat/${encodeURIComponent(seat)}/file?path=${encodeURIComponent(path)}&offset=${offset}` + (final ? "&final=1" : "");

async function fileError(r) {
  const body = await r.json().catch(() => ({}));
  if (r.status === 401) ended(body.error || "Your session has ended: log in again with your token.");
  return body.error || `seat-web answered ${r.status}`;
}

async function upload() {
  const file = $("upload-file").files[0];
  let path = $("upload-path").value.trim();
  if (!file) { show("upload-state", "Choose a file first."); return; }
  if (path.endsWith("/")) path += file.name;
  const bar = $("upload-progress");
  bar.hidden = false; bar.max = Math.max(file.size, 1); bar.value = 0;
  $("upload").disabled = true;
  try {
    let offset = 0;
    do {
      const end = Math.min(offset + CHUNK, file.size);
      const r = await fetch(fileUrl(path, offset, end === file.size), {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/octet-stream" }, body: file.slice(offset, end),
      });
      if (!r.ok) { show("upload-state", `Upload failed: ${await fileError(r)}`); return; }
      offset = end;
      bar.value = offset;
      show("upload-state", `${offset} of ${file.size} bytes`);
    } while (offset < file.size);
    show("upload-state", `Uploaded ${path} (${file.size} bytes).`);
  } catch (e) {
    show("upload-state", "Upload failed: seat-web cannot be reached.");
  } finally {
    $("upload").disabled = false;
  }
}

async function download() {
  const path = $("download-path").value.trim();
  if (!path) { show("download-state", "Name the file in the seat first."); return; }
  const bar = $("download-progress");
  bar.hidden = false; bar.value = 0;
  $("download").disabled = true;
  try {
    const parts = [];
    let offset = 0;
    for (;;) {
      const r = await fetch(fileUrl(path, offset, false), { credentials: "same-origin", cache: "no-store" });
      if (!r.ok) { show("download-state", `Download failed: ${await fileError(r)}`); return; }
      const c = await r.json();
      const bin = atob(c.data || "");
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      parts.push(bytes);
      offset += bytes.length;
      bar.max = Math.max(c.size, offset, 1); bar.value = offset;
      show("download-state", `${offset} of ${c.size} bytes`);
      if (c.eof) break;
      if (bytes.length === 0) { show("download-state", "Download failed: the seat sent an empty chunk."); return; }
    }
    const a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob(parts, { type: "application/octet-stream" }));
    a.download = path.split("/").pop();
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
    show("download-state", `Downloaded ${path} (${offset} bytes).`);
  } catch (e) {
    show("download-state", "Download failed: seat-web cannot be reached.");
  } finally {
    $("download").disabled = false;
  }
}

$("upload").addEventListener("click", upload);
$("download").addEventListener("click", download);

show("seat-id", seat);
poll();
timer = setInterval(poll, 2000);
$("new-terminal").addEventListener("click", openTerminal);
openTerminal();
