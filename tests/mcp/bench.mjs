// SPDX-License-Identifier: LGPL-2.1-or-later
// scripts/bench mcp (tests/bench/bench-mcp.sh starts seatd and the seat): a `true` exec
// through an initialised stdio session of the official SDK's client, against `seatctl
// exec` of the same, run here with the same clock; and the time to the first progress
// notification of a command that prints every 100 ms. Medians; asserts nothing.
//   node bench.mjs SEATCTL SEAT [ROUNDS]
import { spawnSync } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [seatctl, seat, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg || 15);
const median = (v) => { const s = [...v].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const now = () => Number(process.hrtime.bigint()) / 1e6;

const client = new Client({ name: "seatd-bench", version: "1" });
await client.connect(new StdioClientTransport({ command: seatctl, args: ["mcp", seat], env: { ...process.env }, stderr: "inherit" }));
await client.listTools();

const mcp = [], cli = [], first = [];
for (let i = 0; i < rounds; i++) {
  // Interleaved, so that drift in the guest hits both alike.
  let a = now();
  const r = await client.callTool({ name: "exec", arguments: { argv: ["true"] } });
  mcp.push(now() - a);
  if (r.structuredContent?.exit_code !== 0) throw new Error(`exec true failed: ${JSON.stringify(r)}`);
  a = now();
  const p = spawnSync(seatctl, ["exec", seat, "--", "true"], { stdio: "ignore" });
  cli.push(now() - a);
  if (p.status !== 0) throw new Error(`seatctl exec true exited ${p.status}`);
}
for (let i = 0; i < 5; i++) {
  const a = now();
  let at = null;
  await client.callTool({ name: "exec", arguments: { command: "for i in 1 2 3 4 5 6 7 8 9 10; do echo $i; sleep 0.1; done" } },
    undefined, { onprogress: () => { if (at === null) at = now() - a; }, timeout: 120000 });
  first.push(at ?? NaN);
}
await client.close();
const m = median(mcp), c = median(cli), f = median(first);
console.log(`exec true through MCP: median ${m.toFixed(1)} ms of ${rounds}; seatctl exec: median ${c.toFixed(1)} ms`);
console.log(`first progress notification: median ${f.toFixed(0)} ms of 5 (the command prints at once, then every 100 ms)`);
console.log(`mcp: exec_true_p50_ms=${m.toFixed(1)} exec_over_seatctl=${(m / c).toFixed(2)} first_progress_ms=${f.toFixed(0)}`);
