// SPDX-License-Identifier: LGPL-2.1-or-later
// The official MCP TypeScript SDK's client against `seatctl mcp SEAT` (tests/mcp/mcp.sh
// starts seatd and the seat). One session per run; prints "ok - ..." / "not ok - ..."
// lines (mcp.sh numbers them into TAP) and "# ..." diagnostics.
//   node client.mjs SCENARIO SEATCTL SEAT TOKEN_FILE [--user UID]
// SCENARIO: main (a first session: tools, exec with progress, files, cancellation, bad
// arguments, the guest user's permissions), volatile (after a reset, with the new token:
// the first session's files are gone), refused (after a reset, with the old token).
// With MCP_URL set (seat-web's https://HOST:PORT/mcp/SEAT), the same scenarios run over
// the SDK's StreamableHTTPClientTransport with the token as a bearer (SEATCTL unused; node
// trusts seat-web's certificate through NODE_EXTRA_CA_CERTS), and these too: wrong-token
// (401), other-seat (the token of OTHER_SEAT refused on this seat's URL), reset (a session
// open across a reset, run by RESET_CMD: its next call is refused, saying why, and so is a
// new session with the old token).
// CONNECT_AS (stdio): a program that prints what 127.0.0.1:PORT sends to a connection made
// as seatctl mcp's own user: forward_port carries no other user's connections, so this
// client's own (mcp.sh runs it as root, seatctl as nobody) must be refused.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { readFileSync } from "node:fs";
import net from "node:net";
import { McpError, LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";

const [scenario, seatctl, seat, tokenFile, ...rest] = process.argv.slice(2);
const httpUrl = process.env.MCP_URL;
let failed = 0;
const ok = (cond, what, detail) => {
  if (cond) console.log(`ok - ${what}`);
  else {
    failed++;
    console.log(`not ok - ${what}`);
    if (detail !== undefined) console.log(`# ${JSON.stringify(detail).slice(0, 2000)}`);
  }
};
const text = (r) => (r.content || []).map((c) => c.text || "").join("");

async function connect(token = tokenFile, url = httpUrl) {
  if (httpUrl) {
    const bearer = readFileSync(token, "utf8").trim();
    const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${bearer}` } } });
    const client = new Client({ name: "seatd-tests-http", version: "1.0.0" });
    await client.connect(transport);
    // close() ends the session on seat-web too (DELETE), as a well-behaved client does.
    const close = client.close.bind(client);
    client.close = async () => { await transport.terminateSession(); await close(); };
    client.transport_ = transport;
    return client;
  }
  const transport = new StdioClientTransport({
    command: seatctl,
    args: ["--token-file", tokenFile, "mcp", ...rest, seat],
    env: { ...process.env },
    stderr: "inherit",
  });
  const client = new Client({ name: "seatd-tests", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

async function expectError(client, params, want, what) {
  try {
    const r = await client.callTool(params);
    ok(false, what, r);
  } catch (e) {
    ok(e instanceof McpError && e.code === -32602 && want.test(e.message), what, { code: e.code, message: e.message });
  }
}

// ps in the guest: whether a process with this command line runs.
async function running(client, marker) {
  const r = await client.callTool({ name: "exec", arguments: { argv: ["ps", "-o", "args"] } });
  return r.structuredContent.stdout.split("\n").some((l) => l.trim() === marker);
}

async function main() {
  const client = await connect();
  ok(client.getServerVersion()?.name === "seatd", "initialize: the server names itself seatd", client.getServerVersion());

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  // forward_port only on stdio: over HTTP its port would open on seat-web's host.
  const want = httpUrl ? ["exec", "list_directory", "read_file", "seat_status", "write_file"]
                       : ["exec", "forward_port", "list_directory", "read_file", "seat_status", "write_file"];
  ok(JSON.stringify(names) === JSON.stringify(want), `tools/list: ${want.join(", ")}`, names);
  ok(tools.every((t) => t.inputSchema?.type === "object" && t.outputSchema?.type === "object" &&
                        t.inputSchema.additionalProperties === false && /isolated/.test(t.description)),
     "every tool has an object input schema (no extra properties), an output schema, and says it runs in an isolated VM");
  const exec = tools.find((t) => t.name === "exec");
  ok(exec.inputSchema.properties.argv?.type === "array" && exec.inputSchema.properties.timeout_ms?.type === "integer",
     "exec's schema: argv an array, timeout_ms an integer", exec.inputSchema);

  // exec with progress: a command that prints every 100 ms.
  const progress = [];
  const t0 = Date.now();
  const r = await client.callTool(
    { name: "exec", arguments: { command: "for i in 1 2 3 4 5 6 7 8; do echo tick $i; sleep 0.1; done; echo done >&2; exit 3" } },
    undefined, { onprogress: (p) => progress.push({ ...p, at: Date.now() - t0 }), timeout: 120000 });
  const s = r.structuredContent;
  ok(s && s.exit_code === 3 && /tick 8/.test(s.stdout) && s.stderr === "done\n" && !s.stdout_truncated,
     "exec: exit status 3, stdout and stderr in the structured result", s);
  ok(progress.length >= 2 && progress.some((p) => /tick 1/.test(p.message)) &&
     progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress),
     `exec: output streamed as ${progress.length} progress notifications, increasing`, progress);
  if (progress.length) console.log(`# first progress after ${progress[0].at} ms, result after ${Date.now() - t0} ms`);
  ok(JSON.parse(text(r)).exit_code === 3, "exec: the text content is the structured result as JSON");

  const argvRun = await client.callTool({ name: "exec", arguments: { argv: ["sh", "-c", 'echo "$X:$(pwd)"; cat'], env: { X: "ex" }, cwd: "/tmp", stdin: "in\n" } });
  ok(argvRun.structuredContent?.stdout === "ex:/tmp\nin\n", "exec: argv, env, cwd and stdin reach the command", argvRun.structuredContent);

  // Files, as the tools' guest user (mcp.sh passes --user 65534: nobody).
  const w = await client.callTool({ name: "write_file", arguments: { path: "/tmp/mcp-note.txt", content: "hello from MCP\n" } });
  ok(!w.isError && w.structuredContent?.bytes === 15, "write_file: /tmp/mcp-note.txt, 15 bytes", w);
  const rd = await client.callTool({ name: "read_file", arguments: { path: "/tmp/mcp-note.txt" } });
  ok(rd.structuredContent?.content === "hello from MCP\n" && rd.structuredContent.truncated === false, "read_file: reads it back", rd);
  const bin = Buffer.from([0, 1, 2, 255, 254, 10]).toString("base64");
  await client.callTool({ name: "write_file", arguments: { path: "/tmp/mcp-bin", content: bin, encoding: "base64", mode: "0600" } });
  const rb = await client.callTool({ name: "read_file", arguments: { path: "/tmp/mcp-bin", encoding: "base64" } });
  ok(rb.structuredContent?.content === bin, "write_file/read_file base64: binary bytes round-trip", rb);
  const rt = await client.callTool({ name: "read_file", arguments: { path: "/tmp/mcp-bin" } });
  ok(rt.isError === true && /not UTF-8/.test(text(rt)), "read_file as text of a binary file: refused, saying why", rt);
  const cut = await client.callTool({ name: "read_file", arguments: { path: "/tmp/mcp-note.txt", max_bytes: 5 } });
  ok(cut.structuredContent?.content === "hello" && cut.structuredContent.truncated === true, "read_file max_bytes: cut, and says so", cut);
  const ls = await client.callTool({ name: "list_directory", arguments: { path: "/tmp" } });
  const e = (ls.structuredContent?.entries || []).find((x) => x.name === "mcp-note.txt");
  ok(e?.type === "file", "list_directory: /tmp lists mcp-note.txt as a file", ls.structuredContent);
  const lsRoot = await client.callTool({ name: "list_directory", arguments: { path: "/" } });
  ok((lsRoot.structuredContent?.entries || []).some((x) => x.name === "bin" && x.type === "directory"), "list_directory: / has the directory bin", lsRoot.structuredContent);
  const missing = await client.callTool({ name: "read_file", arguments: { path: "/nonexistent/x" } });
  ok(missing.isError === true && /No such file/.test(text(missing)), "read_file of a missing file: refused, saying why", missing);

  // The seed's first acceptance test: the system is not the agent's to change.
  const ro = await client.callTool({ name: "write_file", arguments: { path: "/bin/agent-dropped", content: "x" } });
  ok(ro.isError === true && /Permission denied/.test(text(ro)), "write_file into /bin as the tools' user: denied", ro);
  const ro2 = await client.callTool({ name: "exec", arguments: { command: "echo x > /bin/agent-dropped2" } });
  ok(ro2.structuredContent?.exit_code !== 0 && /Permission denied/.test(ro2.structuredContent?.stderr), "exec writing into /bin: denied", ro2.structuredContent);
  const who = await client.callTool({ name: "exec", arguments: { argv: ["id", "-u"] } });
  ok(who.structuredContent?.stdout === "65534\n", "exec runs as the --user given (65534)", who.structuredContent);

  // Bad arguments: a JSON-RPC error naming what is wrong; the session goes on.
  await expectError(client, { name: "exec", arguments: { argv: "ls" } }, /'argv' must be an array/, "exec with argv a string: -32602 naming argv");
  await expectError(client, { name: "exec", arguments: {} }, /either 'argv'.*or 'command'/, "exec with neither argv nor command: -32602");
  await expectError(client, { name: "read_file", arguments: { path: "etc/passwd" } }, /absolute path/, "read_file of a relative path: -32602");
  await expectError(client, { name: "write_file", arguments: { path: "/tmp/x", content: "x", bogus: 1 } }, /unknown argument 'bogus'/, "an unknown argument: -32602 naming it");
  await expectError(client, { name: "no_such_tool", arguments: {} }, /Unknown tool/, "an unknown tool: -32602");

  // Cancellation: a long sleep, cancelled by the client, dies in the guest. (Calls on a
  // seat run side by side, so the check may come before the cancellation reached the
  // guest: it looks until the sleep is gone, a minute at most. The sealed log shows it
  // ran and ended "cancelled".) A ping is answered while the call runs.
  const ac = new AbortController();
  const sleeping = client.callTool({ name: "exec", arguments: { argv: ["sleep", "3001"] } }, undefined, { signal: ac.signal, timeout: 600000 });
  // (cancelled once it runs in the guest, however slowly it starts: up to 120 s)
  for (let i = 0; i < 240 && !(await running(client, "sleep 3001")); i++) await new Promise((res) => setTimeout(res, 500));
  const pinged = await client.ping().then(() => true, () => false);
  ac.abort("test cancels it");
  let rejected = false;
  try { await sleeping; } catch { rejected = true; }
  ok(pinged && rejected, "a ping is answered during a long exec; cancelling the exec ends the call", { pinged, rejected });
  let gone = false;
  for (let i = 0; i < 120 && !gone; i++) {
    gone = !(await running(client, "sleep 3001"));
    if (!gone) await new Promise((res) => setTimeout(res, 500));
  }
  ok(gone, "the cancelled sleep is gone from the guest");

  if (!httpUrl) {
    // forward_port: a service on the guest's loopback (as the tools' user: no root), reached
    // from here through the seat's agent channel.
    await client.callTool({ name: "exec", arguments: { command: "setsid nc -ll -p 7100 -e echo forwarded-$((40+2)) </dev/null >/dev/null 2>&1 & sleep 0.5" } });
    const fw = await client.callTool({ name: "forward_port", arguments: { host: "127.0.0.1", port: 7100 } });
    const lp = fw.structuredContent?.local_port;
    ok(!fw.isError && fw.structuredContent?.local_address === "127.0.0.1" && lp > 0,
       "forward_port: a local port on 127.0.0.1 for the seat's 127.0.0.1:7100", fw.structuredContent || text(fw));
    const mine = lp ? await new Promise((res) => {
      let data = "";
      const sock = net.connect(lp, "127.0.0.1");
      sock.on("data", (d) => { data += d; });
      sock.on("end", () => res(data));
      sock.on("error", (e) => res(data + String(e)));
      setTimeout(() => { sock.destroy(); res(data + "timeout"); }, 30000);
    }) : "no port";
    ok(mine === "" || /^Error: .*ECONNRESET/.test(mine),
       "forward_port refuses another local user's connection (this client's): closed without data", mine);
    const connectAs = process.env.CONNECT_AS;
    const got = !connectAs ? "CONNECT_AS is not set" : lp ? await promisify(execFile)(connectAs, [String(lp)], { timeout: 60000 })
      .then((r) => r.stdout, (e) => String(e)) : "";
    ok(/forwarded-42/.test(got), "a connection to that port made as seatctl mcp's own user reaches the service inside the seat", got);
    const badHost = await client.callTool({ name: "forward_port", arguments: { host: "not a host!", port: 80 } });
    ok(badHost.isError && /cannot be forwarded/.test(text(badHost)), "forward_port to a malformed host: a tool error saying why", text(badHost));
    await expectError(client, { name: "forward_port", arguments: { host: "127.0.0.1", port: 70000 } }, /port/,
                      "forward_port with port 70000: -32602 naming the argument");
  }

  const st = await client.callTool({ name: "seat_status", arguments: {} });
  ok(st.structuredContent?.id === seat && st.structuredContent.state === "ready", "seat_status: the seat's record, ready", st.structuredContent);

  // Left for the volatile scenario, after the reset.
  await client.callTool({ name: "write_file", arguments: { path: "/tmp/volatile.txt", content: "gone after reset\n" } });
  await client.close();
}

async function volatile() {
  const client = await connect();
  const r = await client.callTool({ name: "read_file", arguments: { path: "/tmp/volatile.txt" } });
  ok(r.isError === true && /No such file/.test(text(r)), "after the reset, the previous session's /tmp/volatile.txt is gone", r);
  await client.close();
}

async function refused() {
  const client = await connect();
  const r = await client.callTool({ name: "exec", arguments: { argv: ["true"] } });
  ok(r.isError === true && /token/i.test(text(r)), "after the reset, the old token is refused (the tool says so)", r);
  await client.close();
}

// upload and download, with --transfer-dir $XFER (mcp.sh made it, holding a.bin and a
// symlink "escape" to /etc/shadow).
async function transfer() {
  const fs = await import("node:fs");
  const xfer = process.env.XFER;
  const client = await connect();
  const { tools } = await client.listTools();
  ok(tools.some((t) => t.name === "upload") && tools.some((t) => t.name === "download"), "--transfer-dir: upload and download are offered");
  const up = await client.callTool({ name: "upload", arguments: { host_path: "a.bin", seat_path: "/tmp/up.bin" } });
  const local = fs.readFileSync(`${xfer}/a.bin`);
  ok(!up.isError && up.structuredContent?.bytes === local.length, `upload: a.bin (${local.length} bytes, several chunks) into the seat`, up);
  const back = await client.callTool({ name: "read_file", arguments: { path: "/tmp/up.bin", encoding: "base64", max_bytes: 1048576 } });
  ok(Buffer.from(back.structuredContent?.content || "", "base64").equals(local.subarray(0, 1048576)), "the seat holds the same bytes");
  const down = await client.callTool({ name: "download", arguments: { seat_path: "/tmp/up.bin", host_path: "back.bin" } });
  ok(!down.isError && fs.readFileSync(`${xfer}/back.bin`).equals(local), "download: the same bytes back on the host, as a new file", down);
  for (const [args, want, what] of [
    [{ host_path: "../token1", seat_path: "/tmp/x" }, /leads out/, "upload of ../token1: refused, it leads out of the transfer directory"],
    [{ host_path: "escape", seat_path: "/tmp/x" }, /symbolic link/, "upload of a symlink (to /etc/shadow): refused, not followed"],
    [{ host_path: "sub/shadow", seat_path: "/tmp/x" }, /leads out/, "upload through a symlinked directory (to /etc): refused, it leads out"],
    [{ host_path: "/etc/passwd", seat_path: "/tmp/x" }, /relative/, "upload of an absolute host path: refused"],
  ]) {
    const r = await client.callTool({ name: "upload", arguments: args });
    ok(r.isError === true && want.test(text(r)), what, r);
  }
  const exists = await client.callTool({ name: "download", arguments: { seat_path: "/tmp/up.bin", host_path: "a.bin" } });
  ok(exists.isError === true && /exists already/.test(text(exists)) && fs.readFileSync(`${xfer}/a.bin`).equals(local),
     "download onto an existing file: refused, the file untouched", exists);
  const missing = await client.callTool({ name: "download", arguments: { seat_path: "/nonexistent", host_path: "missing.bin" } });
  ok(missing.isError === true && !fs.existsSync(`${xfer}/missing.bin`), "download of a missing seat file: refused, no host file left", missing);
  await client.close();
}

// ---- over Streamable HTTP only

// A session that must not open: the HTTP status and the message seat-web gave.
async function refusedAt(token, url, what, wantStatus, wantText) {
  try {
    const c = await connect(token, url);
    ok(false, what, "a session opened");
    await c.close();
  } catch (e) {
    ok(e instanceof StreamableHTTPError && e.code === wantStatus && wantText.test(e.message), what, { code: e.code, message: e.message });
  }
}

async function wrongToken() {
  await refusedAt(process.env.WRONG_TOKEN_FILE, httpUrl, "HTTP: a wrong token: 401, saying the token does not open the seat", 401, /does not open seat/);
}

async function otherSeat() {
  // This seat's token on the other seat's URL, and the other seat's token on this one.
  await refusedAt(tokenFile, process.env.OTHER_URL, "HTTP: this seat's token on another seat's URL: 401", 401, /does not open seat/);
  await refusedAt(process.env.OTHER_TOKEN_FILE, httpUrl, "HTTP: another seat's token on this seat's URL: 401", 401, /does not open seat/);
}

async function reset() {
  const client = await connect();
  const before = await client.callTool({ name: "exec", arguments: { argv: ["true"] } });
  ok(before.structuredContent?.exit_code === 0, "HTTP: a session works before the reset", before);
  const sid = client.transport_.sessionId;
  // Not execFileSync: a client whose event loop is blocked for longer than seat-web keeps an
  // idle connection sends its next request into the connection seat-web has closed meanwhile
  // (undici: "fetch failed", EPIPE or "other side closed"; a POST is not sent again). That
  // is the client's doing, and a reset under load takes longer than idle_timeout.
  await promisify(execFile)("sh", ["-c", process.env.RESET_CMD]);
  try {
    const r = await client.callTool({ name: "exec", arguments: { argv: ["true"] } });
    ok(false, "HTTP: after the reset, the open session's next call is refused", r);
  } catch (e) {
    ok(e instanceof StreamableHTTPError && e.code === 401 && /was reset or released/.test(e.message) && /session has ended/.test(e.message),
       "HTTP: after the reset, the open session's next call: 401, saying the seat was reset and the session ended",
       { code: e.code, message: e.message, cause: e.cause?.code ?? e.cause?.message });
  }
  console.log(`# session ${sid ? sid.slice(0, 6) : "?"}... ended by the reset`);
  await refusedAt(tokenFile, httpUrl, "HTTP: after the reset, a new session with the old token: 401", 401, /does not open seat/);
}

// An agent that thinks for longer than seat-web keeps an idle connection (idle_timeout):
// seat-web closes that connection meanwhile, and the next call must still be answered.
async function pause() {
  const client = await connect();
  const first = await client.callTool({ name: "exec", arguments: { argv: ["true"] } });
  const idle = Number(process.env.IDLE_S);
  await new Promise((resolve) => setTimeout(resolve, (idle + 2) * 1000));
  try {
    const r = await client.callTool({ name: "exec", arguments: { argv: ["true"] } });
    ok(first.structuredContent?.exit_code === 0 && r.structuredContent?.exit_code === 0,
       `HTTP: a client idle ${idle + 2} s (past seat-web's idle_timeout, ${idle} s): its next call is answered`, r);
  } catch (e) {
    ok(false, `HTTP: a client idle ${idle + 2} s: its next call is answered`,
       { message: e.message, cause: e.cause?.code ?? e.cause?.message });
  }
  await client.close();
}

const scenarios = { main, volatile, refused, transfer, pause, "wrong-token": wrongToken, "other-seat": otherSeat, reset };
try {
  if (!scenarios[scenario]) throw new Error(`unknown scenario ${scenario}`);
  await scenarios[scenario]();
} catch (e) {
  failed++;
  console.log(`not ok - scenario ${scenario} threw: ${e?.stack?.split("\n").slice(0, 3).join(" | ")}`);
}
console.log(`# protocol revision of the SDK: ${LATEST_PROTOCOL_VERSION}`);
process.exit(failed ? 1 : 0);
