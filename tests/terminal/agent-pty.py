#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""agent-pty.py GUEST_INIT_HOST: the agent's terminals and live stdin (docs/protocol-agent.md,
"Terminals" and "Live stdin"), against guest-init built for the host (--stdio). Speaks TAP.
Waits have deadlines; nothing asserts how long anything took."""
import base64
import hashlib
import json
import os
import select
import subprocess
import sys
import time

WAIT = 30
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tap import check, end  # noqa: E402


class Agent:
    def __init__(self, binary):
        self.p = subprocess.Popen([binary, "--stdio", "--log-level", "debug"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.buf = b""
        self.msgs = []

    def send(self, **m):
        self.p.stdin.write((json.dumps(m) + "\n").encode())
        self.p.stdin.flush()

    def pump(self, timeout):
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        if not r:
            return False
        d = os.read(self.p.stdout.fileno(), 1 << 20)
        if not d:
            return False
        self.buf += d
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            self.msgs.append(json.loads(line))
        return True

    def wait(self, pred):
        """The first message (consumed) that pred accepts, or None at the deadline."""
        deadline = time.monotonic() + WAIT
        while True:
            for i, m in enumerate(self.msgs):
                if pred(m):
                    return self.msgs.pop(i)
            if time.monotonic() > deadline:
                return None
            self.pump(0.5)

    def output(self, eid, pattern):
        """Output of exec eid until it holds pattern (bytes); all of it, or None at the deadline."""
        acc = b""
        deadline = time.monotonic() + WAIT
        while pattern not in acc:
            m = self.wait(lambda m: m["id"] == eid and m["type"] == "output")
            if m is None or time.monotonic() > deadline:
                return None
            acc += base64.b64decode(m["data"])
            self.last_stream = m["stream"]
        return acc


def main():
    a = Agent(sys.argv[1])
    a.send(type="hello", id=1, version=1)
    h = a.wait(lambda m: m["id"] == 1)
    check(h is not None and "pty" in h.get("capabilities", []), "hello lists the capability 'pty'", repr(h))

    a.send(type="exec", id=2, argv=["/bin/sh", "-c", "echo T-$(tty)-T; echo S-$(stty size)-S; read x; echo got-$x; "
                                    "stty size; echo READY; exec sleep 300"], stdin_eof=False, pty={"rows": 33, "cols": 101})
    check(a.wait(lambda m: m["id"] == 2 and m["type"] == "started") is not None, "pty exec started")
    out = a.output(2, b"-S")
    check(out is not None and b"T-/dev/pts/" in out, "the tool's stdout is a /dev/pts terminal", repr(out))
    check(out is not None and b"S-33 101-S" in out, "its size is the one asked for", repr(out))
    check(getattr(a, "last_stream", "") == "pty", "output comes as stream 'pty'")
    a.send(type="resize", id=3, exec=2, rows=40, cols=120)
    check((a.wait(lambda m: m["id"] == 3) or {}).get("type") == "ok", "resize is answered ok")
    a.send(type="stdin", id=4, exec=2, data=base64.b64encode(b"typed\r").decode())
    check((a.wait(lambda m: m["id"] == 4) or {}).get("type") == "ok", "stdin is answered ok")
    out = a.output(2, b"READY")
    check(out is not None and b"got-typed" in out, "typed input reaches read (echoed by the terminal)", repr(out))
    check(out is not None and b"40 120" in out, "the resize reached the terminal", repr(out))
    a.send(type="stdin", id=5, exec=2, data=base64.b64encode(b"\x03").decode())
    e = a.wait(lambda m: m["id"] == 2 and m["type"] == "exit")
    check(e is not None and e["signal"] == 2, "^C through the terminal ends the foreground process by SIGINT", repr(e))
    a.wait(lambda m: m["id"] == 5)

    a.send(type="exec", id=6, argv=["sleep", "300"])
    a.wait(lambda m: m["id"] == 6 and m["type"] == "started")
    a.send(type="resize", id=7, exec=6, rows=1, cols=1)
    r = a.wait(lambda m: m["id"] == 7)
    check(r is not None and r["type"] == "error" and r["code"] == "state", "resize of an exec on pipes is refused (state)", repr(r))
    a.send(type="kill", id=8, exec=6, signal=9)
    a.wait(lambda m: m["id"] == 6 and m["type"] == "exit")
    a.send(type="resize", id=9, exec=6, rows=1, cols=1)
    r = a.wait(lambda m: m["id"] == 9)
    check(r is not None and r["type"] == "error" and r["code"] == "not_found", "resize of an ended exec is not_found", repr(r))

    # Live stdin beyond the 1 MiB pending cap: a tool that starts reading late; each chunk
    # is sent after the ok of the last, so it gets through by flow control, never 'limit'.
    a.send(type="exec", id=10, argv=["/bin/sh", "-c", "sleep 1; sha256sum"], stdin_eof=False)
    a.wait(lambda m: m["id"] == 10 and m["type"] == "started")
    blob = os.urandom(4 * 1024 * 1024)
    chunk = 256 * 1024
    errors = []
    for i in range(0, len(blob), chunk):
        rid = 100 + i // chunk
        a.send(type="stdin", id=rid, exec=10, data=base64.b64encode(blob[i:i + chunk]).decode(),
               eof=i + chunk >= len(blob))
        r = a.wait(lambda m, rid=rid: m["id"] == rid)
        if r is None or r["type"] != "ok":
            errors.append(r)
            break
    check(not errors, "4 MiB of stdin in 256 KiB chunks, each after the last one's ok: all ok", repr(errors))
    out = a.output(10, b"-")
    check(out is not None and hashlib.sha256(blob).hexdigest().encode() in out, "the tool read all of it, intact", repr(out))

    # A terminal's end of input is its EOF character.
    a.send(type="exec", id=20, argv=["/bin/sh", "-c", "cat; echo CAT-ENDED"], stdin_eof=False, pty={"rows": 5, "cols": 20})
    a.wait(lambda m: m["id"] == 20 and m["type"] == "started")
    a.send(type="stdin", id=21, exec=20, data=base64.b64encode(b"abc\r").decode(), eof=True)
    out = a.output(20, b"CAT-ENDED")
    check(out is not None, "stdin eof on a terminal ends cat (^D)", repr(out))
    e = a.wait(lambda m: m["id"] == 20 and m["type"] == "exit")
    check(e is not None and e["code"] == 0, "and the exec exits 0", repr(e))

    a.p.stdin.close()
    a.p.wait(timeout=WAIT)
    return end()


if __name__ == "__main__":
    sys.exit(main())
