// SPDX-License-Identifier: LGPL-2.1-or-later
// The facilitator's dashboard: every seat, the pools, the host, the seal queue and the
// evidence archives. Seats, pools and the seal queue come live over a WebSocket
// (/ws/facilitator/events: seatd's snapshots, fanned out by seat-web); the metrics, the
// host check and the archives are asked every few seconds. Actions POST with the session's
// CSRF token in X-CSRF-Token. No framework.
"use strict";

const $ = (id) => document.getElementById(id);
let csrf = "";
let metrics = {};

function text(el, s) {
  el.textContent = s === undefined || s === null ? "" : String(s);
  return el;
}

function cell(tr, s, cls) {
  const td = text(document.createElement("td"), s);
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

function problem(msg) {
  $("problem").hidden = !msg;
  text($("problem"), msg || "");
}

async function get(what) {
  const r = await fetch(what, { credentials: "same-origin", cache: "no-store" });
  if (r.status === 401) {
    location.href = "/facilitator/login";
    throw new Error("logged out");
  }
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || `${what}: ${r.status}`);
  return body;
}

async function post(what) {
  const r = await fetch(what, { method: "POST", credentials: "same-origin", headers: { "X-CSRF-Token": csrf } });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || `${what}: ${r.status}`);
  return body;
}

function uptime(created) {
  const t = typeof created === "number" ? created : Date.parse(created);
  if (!t) return "";
  const s = Math.max(0, Math.round((Date.now() - (t > 1e12 ? t : t * 1000)) / 1000));
  return s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${Math.round(s / 3600)} h`;
}

// seatd's last_call: when the seat last ran something for anyone (exec, file, shell).
function lastExec(s) {
  return s.last_call ? `${uptime(s.last_call)} ago` : "";
}

// Each seat's states as the dashboard saw them, in order (a reset shows as ready →
// resetting → ready): the page's own record, which the tests read.
const stateLog = {};
function remember(s) {
  const h = (stateLog[s.id] = stateLog[s.id] || []);
  if (h[h.length - 1] !== s.state) h.push(s.state);
  if (h.length > 32) h.shift();
}

async function action(seat, what) {
  if (what === "release" && !confirm(`Release ${seat}? Its VM is destroyed and its participant's session ends.`)) return;
  if (what === "reset" && !confirm(`Reset ${seat}? The participant gets a fresh machine and a new token.`)) return;
  try {
    problem("");
    document.body.dataset.busy = `${what} ${seat}`;
    await post(`/facilitator/api/seat/${encodeURIComponent(seat)}/${what}`);
    document.body.dataset.done = `${what} ${seat}`;
  } catch (e) {
    problem(`${what} of ${seat}: ${e.message}`);
  } finally {
    delete document.body.dataset.busy;
    refresh();
  }
}

function decode(b64) {
  const bin = atob(b64 || "");
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new TextDecoder().decode(bytes);
}

async function view(seat, what) {
  $("viewer").hidden = false;
  text($("viewer-title"), `${what === "audit" ? "Audit log" : "Console"} of ${seat}`);
  text($("viewer-text"), "…");
  let out = "", offset = 0;
  try {
    for (let i = 0; i < 64; i++) {
      const r = await get(`/facilitator/api/seat/${encodeURIComponent(seat)}/${what}?offset=${offset}`);
      out += decode(r.data);
      if (r.offset === undefined || r.offset === offset || r.eof || (r.size !== undefined && r.offset >= r.size)) break;
      offset = r.offset;
    }
    text($("viewer-text"), out || "(empty)");
  } catch (e) {
    text($("viewer-text"), e.message);
  }
}

function seats(list) {
  const tb = $("seats").tBodies[0];
  tb.replaceChildren();
  const denied = metrics.egress_denied_packets || {};
  for (const s of list) {
    remember(s);
    const tr = document.createElement("tr");
    tr.dataset.seat = s.id;
    tr.dataset.state = s.state;
    cell(tr, s.id);
    cell(tr, s.state, `state-${s.state}`);
    cell(tr, s.participant);
    cell(tr, s.image_version ? `${s.image} ${s.image_version}` : s.image);
    cell(tr, uptime(s.created));
    const d = s.network && s.network.denied_packets !== undefined ? s.network.denied_packets : denied[s.id];
    cell(tr, d !== undefined ? d : "");
    cell(tr, lastExec(s));
    const td = cell(tr, "");
    for (const [what, label] of [["reset", "Reset"], ["release", "Release"], ["audit", "Audit"], ["console", "Console"]]) {
      const b = text(document.createElement("button"), label);
      b.type = "button";
      b.className = what;
      b.onclick = () => (what === "audit" || what === "console" ? view(s.id, what) : action(s.id, what));
      td.appendChild(b);
    }
    tb.appendChild(tr);
  }
  if (!$("image").value && list.length) $("image").value = list[0].image || "";
  document.body.dataset.seats = String(list.length);
}

function pools(list) {
  const tb = $("pools").tBodies[0];
  tb.replaceChildren();
  for (const pool of list || []) {
    const tr = document.createElement("tr");
    cell(tr, `${pool.image}${pool.egress ? " / " + pool.egress : ""}`);
    cell(tr, `${pool.ready} of ${pool.size} ready`);
    cell(tr, pool.state);
    tb.appendChild(tr);
  }
  if (!tb.rows.length) cell(tb.insertRow(), "no pools");
}

function evidence(e) {
  const tb = $("evidence").tBodies[0];
  tb.replaceChildren();
  for (const a of (e.archives || []).slice(-50).reverse()) {
    const tr = document.createElement("tr");
    const link = document.createElement("a");
    link.href = `/facilitator/evidence/${encodeURIComponent(a.name)}`;
    link.download = a.name;
    text(link, a.name);
    tr.appendChild(document.createElement("td")).appendChild(link);
    cell(tr, a.seat);
    cell(tr, `${a.size} bytes`);
    cell(tr, a.signature);
    tb.appendChild(tr);
  }
  if (!tb.rows.length) cell(tb.insertRow(), "no archives yet");
}

function seal(q) {
  if (q) text($("seal"), `Seal queue: ${q.queue} waiting, ${q.failed || 0} failed (${q.failures || 0} since seatd started)`);
}

// The live feed: a snapshot of the room at once and on every change. Until it is up (or
// when it breaks) the seats are polled instead.
let ws = null, snapshots = 0;
function connect() {
  ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/facilitator/events`, "seat-dashboard");
  ws.onmessage = (m) => {
    let msg;
    try { msg = JSON.parse(m.data); } catch (e) { return; }
    if (msg.type !== "snapshot" || !msg.snapshot) return;
    const snap = msg.snapshot;
    seats(snap.seats || []);
    if (snap.pools) pools(snap.pools.pools || snap.pools);
    seal(snap.seal);
    snapshots++;
    document.body.dataset.snapshots = String(snapshots);
    $("live").className = "badge live";
    text($("live"), "live");
  };
  ws.onclose = () => {
    ws = null;
    $("live").className = "badge";
    text($("live"), "reconnecting");
    setTimeout(connect, 2000);
  };
}

let slow = 0;
let refreshing = false; // one refresh at a time: a slow answer (a host check) must not pile them up
async function refresh() {
  if (refreshing) return;
  refreshing = true;
  try {
    metrics = await get("/facilitator/api/call/metrics").catch(() => ({}));
    seal(metrics.seal);
    const feed = ws && ws.readyState === WebSocket.OPEN && snapshots > 0;
    if (!feed) seats((await get("/facilitator/api/call/seat.list")).seats || []);
    if (slow++ % 5 === 0) {
      if (!feed) pools((await get("/facilitator/api/call/pool.status")).pools);
      const h = await get("/facilitator/api/call/host.check");
      text($("host"), `Host check: ${h.ready ? "ready" : "NOT ready"} (${h.accel || "?"})` +
        (h.checks || []).filter((c) => !c.ok).map((c) => ` — ${c.name}: ${c.detail}`).join(""));
      evidence(await get("/facilitator/api/call/evidence.list"));
    }
    if (!feed) text($("live"), "polling");
    problem("");
  } catch (e) {
    $("live").className = "badge";
    text($("live"), "stale");
    problem(e.message);
  } finally {
    refreshing = false;
  }
}

async function start() {
  const s = await get("/facilitator/api/session");
  csrf = s.csrf;
  text($("who"), `logged in as ${s.name}`);
  for (const el of document.querySelectorAll("input.csrf")) el.value = csrf;
  $("viewer-close").onclick = () => ($("viewer").hidden = true);
  $("handout").onsubmit = () => {
    text($("provision"), "Starting… (the next page shows each seat as it is made)");
  };
  connect();
  await refresh();
  setInterval(refresh, 2000);
}

start().catch((e) => problem(e.message));
