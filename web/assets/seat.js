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
}

show("seat-id", seat);
poll();
timer = setInterval(poll, 2000);
