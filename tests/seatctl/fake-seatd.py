#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A stand-in for seatd's control socket (docs/protocol-control.md), for seatctl's own
tests: no libvirt, no VMs. It writes the params of every seat.exec to RECORD (one JSON
line each) so the test can see exactly which argv reached seatd, and answers:
  hello       operator
  seat.list   no seats
  seat.exec   seat 'sgone': error not_found; else output "ran: ARGV" on stdout, then
              argv "exit N" -> code N, "kill N" -> killed by signal N, anything else -> 0
usage: fake-seatd.py SOCKET RECORD   (prints "ready" once it listens)"""
import base64
import json
import socket
import sys


def reply(f, msg):
    f.write((json.dumps(msg) + "\n").encode())
    f.flush()


def exec_result(f, rid, params, record):
    with open(record, "a") as r:
        r.write(json.dumps(params) + "\n")
    argv = params.get("argv", [])
    if params.get("seat") == "sgone":
        reply(f, {"id": rid, "type": "error", "error": {"code": "not_found", "message": "no seat 'sgone'"}})
        return
    out = ("ran: " + " ".join(argv) + "\n").encode()
    reply(f, {"id": rid, "type": "output", "output": {"stream": "stdout", "data": base64.b64encode(out).decode()}})
    code, sig = 0, 0
    if len(argv) == 2 and argv[0] == "exit":
        code = int(argv[1])
    elif len(argv) == 2 and argv[0] == "kill":
        code, sig = -1, int(argv[1])
    reply(f, {"id": rid, "type": "result", "result": {
        "code": code, "signal": sig, "duration_ms": 1, "timed_out": False, "truncated": False,
        "stdout_bytes": len(out), "stderr_bytes": 0}})


def serve(conn, record):
    with conn, conn.makefile("rwb") as f:
        for line in f:
            req = json.loads(line)
            rid, method, params = req["id"], req["method"], req.get("params", {})
            if method == "hello":
                reply(f, {"id": rid, "type": "result", "result": {"version": 1, "server": "fake-seatd", "operator": True}})
            elif method == "seat.list":
                reply(f, {"id": rid, "type": "result", "result": {"seats": []}})
            elif method == "seat.exec":
                exec_result(f, rid, params, record)
            else:
                reply(f, {"id": rid, "type": "error", "error": {"code": "unknown_method", "message": method}})


def main():
    path, record = sys.argv[1], sys.argv[2]
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(8)
    print("ready", flush=True)
    while True:
        conn, _ = srv.accept()
        serve(conn, record)


main()
