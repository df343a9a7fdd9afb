// SPDX-License-Identifier: LGPL-2.1-or-later
// browser.mjs: Debian's chromium, headless, driven by playwright-core (pinned in
// package-lock.json), against a real seat-web over TLS. Prints TAP lines ("ok - …",
// "not ok - …", "# …") that web.sh renumbers.
//   node browser.mjs SCENARIO URL SPKI_PIN SEAT TOKEN OTHER_SEAT SHOTS_DIR [RESET_CMD...]
// The browser trusts seat-web's self-signed certificate only through its public key pin
// (--ignore-certificate-errors-spki-list): the key seat-web --self-signed printed.
import { chromium } from "playwright-core";
import { execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";

const [scenario, url, pin, seat, token, other, shots, ...resetCmd] = process.argv.slice(2);
const results = [];
const ok = (cond, what, detail) => {
  console.log(`${cond ? "ok" : "not ok"} - ${what}`);
  if (!cond && detail) console.log(`# ${String(detail).split("\n").join("\n# ")}`);
  results.push(cond);
};

async function launch(spki) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    // --no-sandbox: the suite runs as root, where chromium's own sandbox cannot start.
    args: ["--no-sandbox", `--ignore-certificate-errors-spki-list=${spki}`, "--disable-gpu"],
  });
}

// Polls a predicate in the page until it holds (true) or ms pass (false). Not
// page.waitForFunction: once its first try fails it polls through eval, which the page's
// CSP (script-src 'self', no 'unsafe-eval') rightly refuses.
async function until(page, fn, ms = 30000, arg = undefined) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await page.evaluate(fn, arg).catch(() => false)) return true;
    await page.waitForTimeout(200);
  }
  return false;
}

async function login(page, s, tok) {
  await page.goto(url + "/");
  await page.fill("#seat", s);
  await page.fill("#token", tok);
  const [resp] = await Promise.all([
    page.waitForNavigation(),
    page.click("#login"),
  ]);
  return resp;
}

async function main() {
  if (scenario === "link") {
    // A one-time link (passed as TOKEN): it opens the seat's page; the second time 410.
    const link = token;
    const b = await launch(pin);
    const p1 = await (await b.newContext()).newPage();
    const r1 = await p1.goto(link);
    ok(r1 && r1.status() === 200 && p1.url() === `${url}/seat/${seat}`, "a one-time link opens the seat's page", `${r1 && r1.status()} ${p1.url()}`);
    const ready = await until(p1, () => document.body.dataset.state === "ready", 60000);
    ok(ready, "the seat's state shows, from seatd, with the link's session");
    const term = await p1.waitForSelector('.term[data-state="open"]', { timeout: 60000 }).then(() => true, () => false);
    ok(term, "and its terminal opens");
    const p2 = await (await b.newContext()).newPage();
    const r2 = await p2.goto(link);
    const body = r2 ? await r2.text() : "";
    ok(r2 && r2.status() === 410 && /used already/.test(body), "the same link again, in another browser: 410, used already", `${r2 && r2.status()} ${body}`);
    const o = await p2.goto(`${url}/seat/${seat}`);
    ok(p2.url() === `${url}/`, "and that browser has no session: the seat's page sends it to the login", p2.url());
    await b.close();
    return;
  }
  if (scenario === "forward") {
    // The seat's web pages through seat-web's forwarding: the page links to them; the
    // guest's busybox httpd answers under /seat/ID/port/80/, relative links stay under it;
    // guest-web (port 8080) tries to clobber the session cookie.
    const b = await launch(pin);
    const ctx = await b.newContext();
    const page = await ctx.newPage();
    await login(page, seat, token);
    const linked = await until(page, () => !!document.querySelector('#forward-links a[href$="/port/80/"]') &&
      !!document.querySelector('#forward-links a[href$="/port/8080/"]'), 60000);
    ok(linked, "the seat's page links to the seat's web pages on the forwarded ports (80, 8080)");
    let p2 = null;
    if (linked) {
      [p2] = await Promise.all([ctx.waitForEvent("page", { timeout: 60000 }).catch(() => null),
        page.click('#forward-links a[href$="/port/80/"]')]);
    }
    if (p2) await p2.waitForLoadState().catch(() => {});
    const first = p2 ? await p2.textContent("#msg").catch(() => "") : "";
    ok(p2 && p2.url() === `${url}/seat/${seat}/port/80/` && /busybox-page-in-the-seat/.test(first),
      "its link opens the page busybox httpd serves in the seat", `${p2 && p2.url()}: '${first}'`);
    const p = p2 || page;
    const nav = await Promise.all([p.waitForNavigation({ timeout: 60000 }).catch(() => null), p.click("#rel").catch(() => null)]);
    const second = await p.textContent("#msg").catch(() => "");
    ok(nav[0] && p.url() === `${url}/seat/${seat}/port/80/sub/two.html` && /second page/.test(second),
      "a relative link in it stays under the seat's prefix", `${p.url()}: '${second}'`);
    const r = await p.goto(`${url}/seat/${seat}/port/8080/hello`);
    const hello = await p.textContent("#msg").catch(() => "");
    ok(r && r.status() === 200 && /guest-web-hello/.test(hello), "the hostile server's page loads through the proxy too",
      `${r && r.status()} '${hello}'`);
    const cookies = await ctx.cookies();
    const sess = cookies.filter((c) => c.name === "__Host-seatweb");
    ok(sess.length === 1 && sess[0].value !== "stolen" && sess[0].value.length === 43,
      "its Set-Cookie of __Host-seatweb is dropped: the browser keeps its own session cookie", JSON.stringify(cookies));
    const app = cookies.find((c) => c.name === "app");
    ok(app && app.path.replace(/\/$/, "") === `/seat/${seat}/port/8080` && app.domain === new URL(url).hostname,
      "its own cookie is kept, scoped to its port's prefix, its Domain dropped", JSON.stringify(app));
    const st = await p.evaluate(async (s) => (await fetch(`/api/seat/${s}/status`)).status, seat);
    ok(st === 200, "the session still works after that page", st);
    // A page of the guest's whose script opens a WebSocket (relative URL) to its echo server:
    // relayed by seat-web; the guest's own ping is answered on the way ("pong-seen").
    await p.goto(`${url}/seat/${seat}/port/8080/ws-page`);
    const echoed = await until(p, () => /echo:hello-through-the-proxy/.test(document.getElementById("msg").textContent) &&
      /pong-seen/.test(document.getElementById("msg").textContent), 60000);
    ok(echoed, "a WebSocket echo page in the seat round-trips its messages through the proxy (and the guest's ping is answered)",
      await p.textContent("#msg").catch(() => ""));
    const o = await p.goto(`${url}/seat/${other}/port/80/`);
    ok(o && o.status() === 403, "this seat's session opens no web page of another seat: 403", o && o.status());
    await b.close();
    return;
  }
  if (scenario === "facilitator") {
    await facilitator();
    return;
  }
  if (scenario === "wrong-pin") {
    // A pin of another key: the browser must refuse the certificate.
    const b = await launch("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    const page = await b.newPage();
    let err = "";
    try { await page.goto(url + "/"); } catch (e) { err = String(e); }
    ok(/ERR_CERT/.test(err), "a browser pinned to another key refuses seat-web's certificate", err || "it loaded");
    await b.close();
    return;
  }

  const b = await launch(pin);
  const ctx = await b.newContext();
  const page = await ctx.newPage();

  // The page loads over TLS with the pinned key: what --self-signed printed is what the
  // browser sees.
  const first = await page.goto(url + "/");
  ok(first && first.status() === 200, "the login page loads over TLS, accepted through the printed key pin");
  const sec = first ? await first.securityDetails() : null;
  ok(sec && /^TLS 1\.[23]$/.test(sec.protocol), `TLS version ${sec ? sec.protocol : "?"}`);

  // A wrong token: 403, no cookie.
  const bad = await login(page, seat, token.replace(/.$/, (c) => (c === "0" ? "1" : "0")));
  ok(bad && bad.status() === 403, "a wrong token is refused with 403", bad && bad.status());
  ok((await ctx.cookies()).length === 0, "no cookie after a refused login");

  // The right token: the seat's page, its state from seatd.
  const good = await login(page, seat, token);
  ok(page.url() === `${url}/seat/${seat}`, "the token opens the seat's page", page.url());
  await until(page, () => !!document.body.dataset.state);
  const state = await page.textContent("#state");
  ok(state === "ready", `the page shows the seat's state from seatd ('${state}')`);
  ok((await page.textContent("#seat-id")) === seat, "and its id");
  await page.screenshot({ path: `${shots}/web-participant.png` });
  console.log(`# screenshot: ${shots}/web-participant.png`);

  const cookies = await ctx.cookies();
  const c = cookies.find((x) => x.name === "__Host-seatweb");
  ok(c && c.httpOnly && c.secure && c.sameSite === "Strict" && c.path === "/" && c.value.length === 43,
    "the session cookie: __Host- prefix, HttpOnly, Secure, SameSite=Strict, Path=/, 43 random characters",
    JSON.stringify(cookies));
  ok(!(await page.evaluate(() => document.cookie)).includes("seatweb"), "page scripts cannot read it (HttpOnly)");

  // The same session on another seat: 403, for the page and for its status.
  const o1 = await page.goto(`${url}/seat/${other}`);
  ok(o1 && o1.status() === 403, "this seat's cookie on another seat's page: 403", o1 && o1.status());
  const o2 = await page.evaluate(async (s) => (await fetch(`/api/seat/${s}/status`)).status, other);
  ok(o2 === 403, "and on its status: 403", o2);

  // ---- the terminal: a shell in the seat, in the page (xterm.js over a WebSocket).
  await page.goto(`${url}/seat/${seat}`);
  await until(page, () => document.body.dataset.state === "ready");
  const paneText = (i) => page.evaluate((k) => {
    const p = document.querySelectorAll(".term")[k];
    return p ? p.querySelector(".xterm-rows").innerText.replace(/\u00a0/g, " ") : "";
  }, i);
  const typeIn = async (i, text) => {
    await page.locator(".term .xterm-helper-textarea").nth(i).focus();
    await page.keyboard.type(text);
  };
  const waitText = async (i, re, ms = 60000) => {
    const end = Date.now() + ms;
    let t = "";
    while (Date.now() < end) {
      t = await paneText(i);
      const m = t.match(re);
      if (m) return m;
      await page.waitForTimeout(200);
    }
    return null;
  };
  let opened = await page.waitForSelector('.term[data-state="open"]', { timeout: 60000 }).then(() => true, () => false);
  ok(opened, "the seat's page opens a terminal (a WebSocket to seat-web)");
  await typeIn(0, "echo web-$((6*7)) $(hostname)\n");
  let m = await waitText(0, /web-42 (\S+)/);
  ok(m && m[1] === `seat-${seat}`, "typed in the page, run in the seat: the shell answers from the seat's guest", m ? m[0] : await paneText(0));
  await typeIn(0, "echo S1-$(stty size)-\n");
  const before = await waitText(0, /S1-(\d+) (\d+)-/);
  await page.setViewportSize({ width: 1600, height: 1000 });
  let wider = null;
  // (asked again until it shows: up to 120 s, a bound that only catches a hang)
  const resizeEnd = Date.now() + 120000;
  for (let i = 0; Date.now() < resizeEnd && !wider; i++) {
    await page.waitForTimeout(300);
    await typeIn(0, `echo S2${i}-$(stty size)-\n`);
    const got = await waitText(0, new RegExp(`S2${i}-(\\d+) (\\d+)-`), 5000);
    if (got && before && Number(got[2]) > Number(before[2])) wider = got;
  }
  ok(before && wider, "a wider window resizes the terminal in the seat (stty size follows)",
     `${before && before[0]} then ${wider && wider[0]}`);
  // seat-web's idle_timeout (3 s here) closes idle HTTP connections, not a terminal.
  await page.waitForTimeout(5000);
  await typeIn(0, "echo still-$((1+1))\n");
  ok(await waitText(0, /still-2/), "the terminal is still there after 5 s idle (idle_timeout = 3 s is for HTTP)");
  await page.screenshot({ path: `${shots}/web-terminal.png` });
  console.log(`# screenshot: ${shots}/web-terminal.png`);
  // The shell's end is shown with its status; "New terminal" then starts another shell.
  await typeIn(0, "exit 3\n");
  const endedMsg = await page.waitForSelector('.term[data-state="ended"]', { timeout: 30000 })
    .then(() => page.textContent(".term .term-state"), () => "");
  ok(/status 3/.test(endedMsg), `exit in the shell ends the terminal with its status ('${endedMsg}')`);
  const again = await page.waitForSelector("#new-terminal:not([hidden])", { timeout: 10000 }).then(() => true, () => false);
  if (again) await page.click("#new-terminal");
  opened = await page.waitForSelector('.term[data-state="open"]', { timeout: 60000 }).then(() => true, () => false);
  if (opened) await typeIn(0, "echo again-$((2*3))\n");
  ok(again && opened && await waitText(0, /again-6/), "then 'New terminal' opens a new shell in the seat");
  // Terminals side by side: a second one while the first stays open; both answer.
  const more = await page.waitForSelector("#new-terminal:not([hidden])", { timeout: 10000 }).then(() => true, () => false);
  if (more) await page.click("#new-terminal");
  const two = await until(page, () => document.querySelectorAll('.term[data-state="open"]').length === 2, 60000);
  if (two) {
    await typeIn(1, "sleep 2; echo second-$((3*3))\n");
    await typeIn(0, "echo first-$((4*4))\n");
  }
  const firstM = two && await waitText(0, /first-16/);
  const secondM = two && await waitText(1, /second-9/);
  ok(more && two && firstM && secondM, "a second terminal opens beside the first, and both shells answer",
     `more=${more} two=${two} first=${!!firstM} second=${!!secondM}`);
  // ---- files: an upload lands in the guest intact; a download comes back intact.
  const ctl = resetCmd.slice(0, 3); // env SEATD_SOCKET=… seatctl
  const inGuest = (...args) => execFileSync(ctl[0], [...ctl.slice(1), "exec", seat, "--", ...args], { encoding: "utf8" });
  const upBytes = crypto.randomBytes(1300 * 1024); // three chunks
  const upSum = crypto.createHash("sha256").update(upBytes).digest("hex");
  await page.setInputFiles("#upload-file", { name: "upload.bin", mimeType: "application/octet-stream", buffer: upBytes });
  await page.fill("#upload-path", "/tmp/");
  await page.click("#upload");
  const upDone = await until(page, () => /^Uploaded/.test(document.getElementById("upload-state").textContent), 120000);
  const guestSum = upDone ? inGuest("sha256sum", "/tmp/upload.bin").split(" ")[0] : "";
  ok(upDone && guestSum === upSum, "a 1.3 MB file uploaded through the page is in the guest, intact (sha256 there)",
     `${await page.textContent("#upload-state")}: ${guestSum} vs ${upSum}`);
  const dlSum = inGuest("sh", "-c", "head -c 900000 /dev/urandom >/tmp/dl.bin && sha256sum /tmp/dl.bin").split(" ")[0];
  await page.fill("#download-path", "/tmp/dl.bin");
  const [dl] = await Promise.all([page.waitForEvent("download", { timeout: 120000 }).catch(() => null), page.click("#download")]);
  let dlSumGot = "";
  if (dl) dlSumGot = crypto.createHash("sha256").update(fs.readFileSync(await dl.path())).digest("hex");
  ok(dl && dl.suggestedFilename() === "dl.bin" && dlSumGot === dlSum, "a file downloaded through the page is the guest's, intact (sha256)",
     `${dl && dl.suggestedFilename()} ${dlSumGot} vs ${dlSum}: ${await page.textContent("#download-state")}`);
  await page.fill("#download-path", "/tmp/no-such-file");
  await page.click("#download");
  const missing = await until(page, () => /^Download failed: .+/.test(document.getElementById("download-state").textContent), 60000);
  ok(missing, `a file that is not there: the page says the download failed and why ('${await page.textContent("#download-state")}')`);
  const wrongType = await page.evaluate(async (s) => (await fetch(`/api/seat/${s}/file?path=/tmp/x&offset=0`,
    { method: "POST", body: "x", headers: { "Content-Type": "text/plain" } })).status, seat);
  ok(wrongType === 415, "an upload that is not application/octet-stream: 415", wrongType);
  const badPath = await page.evaluate(async (s) => (await fetch(`/api/seat/${s}/file?path=/tmp/../etc/shadow&offset=0`)).status, seat);
  ok(badPath === 400, "a path with '..': 400", badPath);
  const otherFile = await page.evaluate(async (s) => (await fetch(`/api/seat/${s}/file?path=/etc/hostname&offset=0`)).status, other);
  ok(otherFile === 403, "this seat's cookie reads no file of another seat: 403", otherFile);

  // This session's cookie opens no terminal of another seat.
  const otherWs = await page.evaluate((s) => new Promise((res) => {
    const ws = new WebSocket(`wss://${location.host}/ws/seat/${s}/terminal`, "seat-terminal");
    ws.onopen = () => { ws.close(); res("open"); };
    ws.onclose = () => res("refused");
    setTimeout(() => res("timeout"), 60000);
  }), other);
  ok(otherWs === "refused", "this seat's cookie opens no terminal of another seat", otherWs);

  // A reset ends the session: the page says so; the old cookie opens nothing.
  execFileSync(resetCmd[0], resetCmd.slice(1), { stdio: ["ignore", "ignore", "inherit"] });
  let shown = "";
  try {
    await page.waitForSelector("#ended:not([hidden])", { timeout: 180000 });
    shown = await page.textContent("#ended");
  } catch (e) { shown = String(e); }
  ok(/reset or released/.test(shown), `after a reset the page says the session ended ('${shown}')`);
  const termEnd = await until(page, () => [...document.querySelectorAll(".term")].every((p) => p.dataset.state === "ended"), 60000);
  const termMsg = await page.evaluate(() => document.querySelector(".term .term-state").textContent);
  ok(termEnd && /reset|released|ended|closed/.test(termMsg), `and its terminals have ended, saying why ('${termMsg}')`);
  await page.screenshot({ path: `${shots}/web-ended.png` });
  console.log(`# screenshot: ${shots}/web-ended.png`);
  const after = await page.evaluate(async (s) => (await fetch(`/api/seat/${s}/status`)).status, seat);
  ok(after === 401, "the old session is gone: its status is 401", after);
  await b.close();
}

// The facilitator (FAC_NAME, FAC_PASSWORD in the environment) runs the room: SEAT (with
// TOKEN) has a participant on its page; OTHER is the other seat.
async function facilitator() {
  const b = await launch(pin);
  // The participant, on SEAT's page.
  const pctx = await b.newContext();
  const pp = await pctx.newPage();
  await login(pp, seat, token);
  ok(await until(pp, () => document.body.dataset.state === "ready", 60000), "a participant is on the seat's page");
  const oldCookie = (await pctx.cookies()).find((x) => x.name === "__Host-seatweb");

  // The facilitator logs in.
  const fctx = await b.newContext();
  const fp = await fctx.newPage();
  fp.on("dialog", (d) => d.accept()); // the confirm before a reset
  await fp.goto(url + "/facilitator/");
  ok(fp.url() === `${url}/facilitator/login`, "the dashboard without a login sends the browser to the facilitator login", fp.url());
  await fp.fill("#name", process.env.FAC_NAME);
  await fp.fill("#password", "not the password");
  const [wrong] = await Promise.all([fp.waitForNavigation(), fp.click("#login")]);
  ok(wrong && wrong.status() === 403, "a wrong password: 403", wrong && wrong.status());
  await fp.goto(url + "/facilitator/login");
  await fp.fill("#name", process.env.FAC_NAME);
  await fp.fill("#password", process.env.FAC_PASSWORD);
  await Promise.all([fp.waitForNavigation(), fp.click("#login")]);
  ok(fp.url() === `${url}/facilitator/`, "the right password opens the dashboard", fp.url());
  const fc = (await fctx.cookies()).find((x) => x.name === "__Host-seatfac");
  ok(fc && fc.httpOnly && fc.secure && fc.sameSite === "Strict" && fc.path === "/",
    "the facilitator's cookie: its own name (__Host-seatfac), HttpOnly, Secure, SameSite=Strict", JSON.stringify(fc));
  const both = await until(fp, ([a, o]) =>
    document.querySelector(`tr[data-seat="${a}"]`)?.dataset.state === "ready" &&
    document.querySelector(`tr[data-seat="${o}"]`)?.dataset.state === "ready", 30000, [seat, other]);
  ok(both, `the dashboard shows both seats (${seat}, ${other}) ready, from seatd`);
  const live = await until(fp, () => document.getElementById("live").textContent === "live" &&
    Number(document.body.dataset.snapshots) >= 1, 30000);
  ok(live, "and is live: seatd's snapshots arrive over the dashboard's WebSocket", await fp.textContent("#live"));
  await until(fp, () => document.getElementById("host").textContent.startsWith("Host check"), 120000);
  await fp.screenshot({ path: `${shots}/web-dashboard.png`, fullPage: true });
  console.log(`# screenshot: ${shots}/web-dashboard.png`);

  // A cross-site POST from a second origin's page (its HTML served to the browser as
  // https://evil.example; the POST itself goes to seat-web for real): refused.
  await fctx.route("https://evil.example/**", (r) => r.fulfill({
    contentType: "text/html",
    body: `<form id="f" method="post" action="${url}/facilitator/api/seat/${other}/reset">` +
      `<input name="csrf" value="${"A".repeat(43)}"></form>`,
  }));
  const evil = await fctx.newPage();
  await evil.goto("https://evil.example/");
  const [xs] = await Promise.all([evil.waitForNavigation(), evil.evaluate(() => document.getElementById("f").submit())]);
  ok(xs && xs.status() === 403, "a cross-site form POST from another origin (https://evil.example) to a reset: 403", xs && xs.status());
  await evil.close();

  // Reset the participant's seat from the dashboard.
  const snaps0 = Number(await fp.evaluate(() => document.body.dataset.snapshots));
  await fp.click(`tr[data-seat="${seat}"] button.reset`);
  const done = await until(fp, (s) => document.body.dataset.done === `reset ${s}`, 300000, seat);
  ok(done, `the dashboard's Reset of ${seat} is done`, await fp.textContent("#problem"));
  let shown = "";
  try {
    await pp.waitForSelector("#ended:not([hidden])", { timeout: 60000 });
    shown = await pp.textContent("#ended");
  } catch (e) { shown = String(e); }
  ok(/reset or released/.test(shown), `the participant's page shows the reset ('${shown}')`);
  // (Playwright's request API speaks TLS from node, not through chromium's pin.)
  const api = await b.newContext({ ignoreHTTPSErrors: true });
  const oldStatus = (await api.request.get(`${url}/api/seat/${seat}/status`,
    { headers: { Cookie: `__Host-seatweb=${oldCookie.value}` } })).status();
  ok(oldStatus === 401 || oldStatus === 403, `the participant's old cookie is dead (${oldStatus})`);
  ok(await until(fp, (s) => document.querySelector(`tr[data-seat="${s}"]`)?.dataset.state === "ready", 60000, seat),
    "the dashboard shows the seat ready again");
  // The reset reached the page over the feed, as it happened: new snapshots, and the seat
  // seen going through 'resetting' (the page polls seat.list only while the feed is down).
  const seen = await fp.evaluate((s) => ({ states: stateLog[s], snaps: Number(document.body.dataset.snapshots), live: document.getElementById("live").textContent }), seat);
  ok(seen.snaps > snaps0 && seen.live === "live" && seen.states.join(" ").includes("ready resetting") && seen.states[seen.states.length - 1] === "ready",
    `the dashboard saw the reset live over its WebSocket (${seen.states.join(" → ")}; ${seen.snaps - snaps0} snapshots)`, JSON.stringify(seen));
  const otherGen = await until(fp, (o) => document.querySelector(`tr[data-seat="${o}"]`)?.dataset.state === "ready", 5000, other);
  ok(otherGen, `the other seat (${other}) was not touched by the refused cross-site POST`);

  // A handout for two participants: the form is answered at once with the handout's own
  // page, which says how far it got (reloading itself) until it shows the one-time links
  // with QR codes: the browser is never left waiting for the seats to boot.
  await fp.fill("#names", "carol\ndave");
  const [ho] = await Promise.all([fp.waitForNavigation({ timeout: 60000 }), fp.click("#provision")]);
  const hpath = fp.url().slice(url.length);
  ok(ho && ho.status() === 200 && /^\/facilitator\/handout\/[A-Za-z0-9_-]{43}$/.test(hpath),
    "the handout form answers at once with the handout's own page", `${ho && ho.status()} ${fp.url()}`);
  // (the first answer as it was served: the page reloads itself every 2 s)
  const body = ho ? await ho.text().catch(() => "") : "";
  const first = { done: Number(/data-done="(\d+)"/.exec(body)?.[1]), total: Number(/data-total="(\d+)"/.exec(body)?.[1]),
    title: /<title>([^<]*)<\/title>/.exec(body)?.[1], refresh: body.includes('<meta http-equiv="refresh" content="2">') };
  ok(first.total === 2 && first.done >= 0 && first.done < 2 && /^Seat handout: \d of 2 seats$/.test(first.title) && first.refresh,
    `while the seats boot, the page says how far it got (${first.done} of ${first.total}) and reloads itself`, JSON.stringify(first));
  const made = await until(fp, () => document.querySelectorAll(".card").length === 2, 900000);
  ok(made && fp.url() === `${url}${hpath}`, "the page becomes the handout once both seats are made", fp.url());
  console.log(`# handout page: ${hpath}`);
  const cards = await fp.evaluate(() => [...document.querySelectorAll(".card")].map((c) => ({
    who: c.dataset.participant, link: c.querySelector("a.link")?.href, qr: !!c.querySelector("svg.qr path"),
    seat: c.querySelector(".seat")?.textContent, warn: c.querySelector(".warn")?.textContent })));
  ok(cards.length === 2 && cards.every((c) => c.link && c.qr && c.seat), "two cards, each with a seat, a one-time link and a QR code", JSON.stringify(cards));
  await fp.screenshot({ path: `${shots}/web-handout.png`, fullPage: true });
  console.log(`# screenshot: ${shots}/web-handout.png`);
  for (const c of cards.filter((x) => x.link)) {
    const lp = await (await b.newContext()).newPage();
    const r = await lp.goto(c.link);
    const seen = r && r.status() === 200 && lp.url() === `${url}/seat/${c.seat}` &&
      await until(lp, () => document.body.dataset.state === "ready", 60000);
    ok(seen, `${c.who}'s link opens seat ${c.seat}`, `${r && r.status()} ${lp.url()}`);
    const again = await (await b.newContext()).newPage();
    const r2 = await again.goto(c.link);
    ok(r2 && r2.status() === 410, `${c.who}'s link used again: 410`, r2 && r2.status());
  }
  console.log(`# handout seats: ${cards.map((c) => c.seat).join(" ")}`);

  // Logout ends the facilitator's session.
  await fp.goto(url + "/facilitator/");
  await until(fp, () => !!document.querySelector("input.csrf")?.value, 15000);
  // Two navigations race here, both to the login: the form's own (303), and the
  // dashboard's script when its next call gets 401. The one that loses is aborted
  // (ERR_ABORTED with waitForNavigation): wait for where both lead instead.
  await Promise.all([fp.waitForURL(`${url}/facilitator/login`, { timeout: 30000 }).catch(() => null), fp.click("#logout")]);
  const after = await api.request.get(`${url}/facilitator/api/session`, { headers: { Cookie: `__Host-seatfac=${fc.value}` } });
  ok(fp.url() === `${url}/facilitator/login` && after.status() === 401, "logout: back to the login, the old cookie opens nothing (401)",
    `${fp.url()} ${after.status()}`);
  await b.close();
}

main().then(
  () => process.exit(results.every(Boolean) ? 0 : 1),
  (e) => { console.log(`not ok - browser scenario ${scenario} ran`); console.log(`# ${e}`); process.exit(1); },
);
