#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A scripted seatd participant socket for seat-web's login tests without seats.

usage: fake-seatd.py SOCKET SEAT=TOKEN...

Answers "hello" and "seat.status" as seatd does: the seat's record for its token, "denied"
for any other token or seat (seatd answers a wrong token and an unknown seat alike). One
line per call goes to stdout ("status SEAT ok|denied"), so a test can count what reached
seatd. A browser terminal's "seat.exec" (with its token) is a pty that echoes: every
"seat.exec.stdin" comes back at once as the exec's "output" event, as a shell's line
discipline would. Anything else is "invalid". The socket is 0666: seat-web runs as another
user."""

import json
import os
import socket
import sys
import threading


def serve(conn, seats):
    with conn, conn.makefile("rb") as rd:
        for line in rd:
            try:
                req = json.loads(line)
                rid, method, params = req["id"], req["method"], req.get("params", {})
            except (ValueError, KeyError, TypeError):
                return
            if method == "hello":
                reply = {"id": rid, "type": "result", "result": {"version": 1}}
            elif method == "seat.status":
                seat = params.get("seat")
                ok = seat in seats and params.get("token") == seats[seat]
                print(f"status {seat} {'ok' if ok else 'denied'}", flush=True)
                if ok:
                    reply = {"id": rid, "type": "result",
                             "result": {"id": seat, "state": "ready", "generation": 1}}
                else:
                    reply = {"id": rid, "type": "error",
                             "error": {"code": "denied", "message": f"this token does not open seat '{seat}'"}}
            elif method == "seat.exec":
                seat = params.get("seat")
                if seat in seats and params.get("token") == seats[seat]:
                    continue  # running: its output events follow its input
                reply = {"id": rid, "type": "error",
                         "error": {"code": "denied", "message": f"this token does not open seat '{seat}'"}}
            elif method in ("seat.exec.stdin", "seat.exec.resize"):
                if method == "seat.exec.stdin":
                    echo = {"id": params.get("exec"), "type": "output",
                            "output": {"stream": "stdout", "data": params.get("data", "")}}
                    conn.sendall((json.dumps(echo) + "\n").encode())
                reply = {"id": rid, "type": "result", "result": {}}
            else:
                reply = {"id": rid, "type": "error", "error": {"code": "invalid", "message": "not in this script"}}
            conn.sendall((json.dumps(reply) + "\n").encode())


def main():
    path = sys.argv[1]
    seats = dict(a.split("=", 1) for a in sys.argv[2:])
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    os.chmod(path, 0o666)
    srv.listen(64)
    print("listening", flush=True)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn, seats), daemon=True).start()


if __name__ == "__main__":
    main()
