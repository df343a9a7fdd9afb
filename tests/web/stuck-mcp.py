#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A stand-in for `seatctl mcp` (seat-web's seatctl = this file) that hangs as a busy one
could: it answers initialize, then never reads its stdin again, and chatters on its stdout
(a progress notification every 2 ms, as a tool call streaming output does).

usage: stuck-mcp.py mcp [OPTIONS] -- SEAT   (seat-web's argv; all of it ignored)"""

import json
import sys
import time

line = sys.stdin.buffer.readline()
try:
    rid = json.loads(line).get("id")
except ValueError:
    sys.exit(1)
out = sys.stdout.buffer
out.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {
    "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
    "serverInfo": {"name": "stuck-mcp", "version": "0"}}}).encode() + b"\n")
out.flush()
chatter = json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": "nobody", "progress": 1, "message": "x" * 1024}}).encode() + b"\n"
while True:  # stdin is never read again: the pipe fills with what seat-web sends
    out.write(chatter)
    out.flush()
    time.sleep(0.002)
