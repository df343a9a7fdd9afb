// SPDX-License-Identifier: LGPL-2.1-or-later
// The facilitator's dashboard: every seat, the pools, the host, the seal queue and the
// evidence archives, refreshed from seat-web (which asks seatd's facilitator socket).
// Actions POST with the session's CSRF token in X-CSRF-Token. No framework.
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

function lastExec(s) {
  const e = s.last_exec;
  if (!e) return "";
  if (typeof e === "string") return e;
  return [e.argv ? e.argv.join(" ") : e.command, e.exit_code !== undefined ? `→ ${e.exit_code}` : ""].join(" ");
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
    const tr = document.createElement("tr");
    tr.dataset.seat = s.id;
    tr.dataset.state = s.state;
    cell(tr, s.id);
    cell(tr, s.state, `state-${s.state}`);
    cell(tr, s.participant);
    cell(tr, s.image_version ? `${s.image} ${s.image_version}` : s.image);
    cell(tr, uptime(s.created));
    cell(tr, denied[s.id] !== undefined ? denied[s.id] : s.egress_denied !== undefined ? s.egress_denied : "");
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

function pools(p) {
  const tb = $("pools").tBodies[0];
  tb.replaceChildren();
  for (const pool of p.pools || []) {
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
  text($("seal"), `Seal queue: ${(e.pending || []).length} waiting${metrics.seal ? `, ${metrics.seal.failures} failed` : ""}`);
}

let slow = 0;
async function refresh() {
  try {
    metrics = await get("/facilitator/api/call/metrics").catch(() => ({}));
    seats((await get("/facilitator/api/call/seat.list")).seats || []);
    if (slow++ % 5 === 0) {
      pools(await get("/facilitator/api/call/pool.status"));
      const h = await get("/facilitator/api/call/host.check");
      text($("host"), `Host check: ${h.ready ? "ready" : "NOT ready"} (${h.accel || "?"})` +
        (h.checks || []).filter((c) => !c.ok).map((c) => ` — ${c.name}: ${c.detail}`).join(""));
      evidence(await get("/facilitator/api/call/evidence.list"));
    }
    $("live").className = "badge live";
    text($("live"), "live");
    problem("");
  } catch (e) {
    $("live").className = "badge";
    text($("live"), "stale");
    problem(e.message);
  }
}

async function start() {
  const s = await get("/facilitator/api/session");
  csrf = s.csrf;
  text($("who"), `logged in as ${s.name}`);
  for (const el of document.querySelectorAll("input.csrf")) el.value = csrf;
  $("viewer-close").onclick = () => ($("viewer").hidden = true);
  $("handout").onsubmit = () => {
    text($("provision"), "Provisioning… (a seat takes a while to boot)");
  };
  await refresh();
  setInterval(refresh, 2000);
}

start().catch((e) => problem(e.message));
