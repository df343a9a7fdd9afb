#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""agent-forward.py GUEST_INIT_HOST: the agent's connections (docs/protocol-agent.md,
"Connections", capability "tcp") against guest-init built for the host (--stdio) and TCP
servers on this machine's loopback. Speaks TAP. Waits have deadlines; nothing asserts how
long anything took."""
import base64
import hashlib
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time

WAIT = 30
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tap import check, end  # noqa: E402


class Agent:
    def __init__(self, binary):
        self.p = subprocess.Popen([binary, "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.buf = b""

    def send(self, **m):
        self.p.stdin.write((json.dumps(m) + "\n").encode())
        self.p.stdin.flush()

    def recv(self):
        deadline = time.monotonic() + WAIT
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                raise TimeoutError("no frame from the agent")
            d = os.read(self.p.stdout.fileno(), 1 << 20)
            if not d:
                raise EOFError("agent closed stdout")
            self.buf += d
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def until(self, pred):
        got = []
        while True:
            m = self.recv()
            got.append(m)
            if pred(m):
                return got


def server(handler):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(4)

    def run():
        c, _ = s.accept()
        handler(c)
    threading.Thread(target=run, daemon=True).start()
    return s.getsockname()[1]


def read_all(c):
    out = b""
    while True:
        d = c.recv(65536)
        if not d:
            return out
        out += d


def sha_after_eof(c):
    # reads to the client's half-close, then answers on the same connection
    data = read_all(c)
    c.sendall(hashlib.sha256(data).hexdigest().encode())
    c.close()


def main():
    a = Agent(sys.argv[1])
    a.send(type="hello", id=1, version=1)
    h = a.recv()
    check("tcp" in h.get("capabilities", []), "hello lists capability tcp")

    # Upload 3 MiB (over the 1 MiB pending cap: only flow control gets it through), half-close,
    # and the reply still comes back.
    port = server(sha_after_eof)
    a.send(type="connect", id=2, host="127.0.0.1", port=port)
    m = a.recv()
    check(m.get("type") == "started" and m.get("pid") == 0, "connect: started with pid 0", m)
    blob = os.urandom(3 * 1024 * 1024)
    rid, off, out, acks = 10, 0, [], True
    chunk = 256 * 1024
    while off < len(blob):
        part = blob[off:off + chunk]
        off += len(part)
        a.send(type="stdin", id=rid, exec=2, data=base64.b64encode(part).decode(), eof=off >= len(blob))
        got = a.until(lambda x, r=rid: x.get("id") == r)  # the next chunk only after the ok
        out += [x for x in got if x.get("id") == 2]
        acks = acks and got[-1].get("type") == "ok"
        rid += 1
    check(acks, "every chunk acknowledged (after the tool-side read, over the 1 MiB pending cap)")
    rest = a.until(lambda x: x.get("id") == 2 and x.get("type") == "exit")
    out += [x for x in rest if x.get("id") == 2]
    data = b"".join(base64.b64decode(x["data"]) for x in out if x.get("type") == "output")
    check(data.decode() == hashlib.sha256(blob).hexdigest(), "3 MiB up, half-closed, the peer's answer came back")
    check(any(x.get("type") == "output" and x.get("eof") for x in out), "the peer's end is an output with eof")
    ex = out[-1]
    check(ex.get("type") == "exit" and ex.get("code") == 0 and ex.get("stdout_bytes") == 64,
          "exit code 0 once both directions ended, stdout_bytes counts what came", ex)

    # A refused connect is the request's one error.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    closed_port = s.getsockname()[1]
    s.close()
    a.send(type="connect", id=3, host="127.0.0.1", port=closed_port)
    m = a.recv()
    check(m.get("type") == "error" and m.get("code") == "io" and "refused" in m.get("message", ""),
          "a refused connect is error io, saying why", m)
    a.send(type="connect", id=4, host="example.org", port=80)
    m = a.recv()
    check(m.get("type") == "error" and m.get("code") == "invalid", "a name is not resolved: invalid", m)
    a.send(type="connect", id=5, host="a/../b", port=80)
    m = a.recv()
    check(m.get("type") == "error" and m.get("code") == "invalid" and "host" in m.get("message", ""),
          "a host with '/' is refused by the codec", m)

    # kill resets the connection: the peer sees a reset or an end, the host an exit with the signal.
    seen = []

    def watch(c):
        try:
            seen.append(read_all(c))
        except ConnectionResetError:
            seen.append("reset")
    port = server(watch)
    a.send(type="connect", id=6, host="localhost", port=port)
    check(a.recv().get("type") == "started", "connect to localhost")
    a.send(type="kill", id=7, exec=6)
    got = a.until(lambda x: x.get("id") == 6 and x.get("type") == "exit")
    check(any(x.get("id") == 7 and x.get("type") == "ok" for x in got), "kill of a connection: ok")
    check(got[-1].get("code") == -1 and got[-1].get("signal") == 9, "its exit says the signal", got[-1])
    for _ in range(2400):  # (up to 120 s: the peer's thread runs late on a loaded host)
        if seen:
            break
        time.sleep(0.05)
    check(seen == ["reset"] or seen == [b""], "the peer's connection ended", seen)
    a.send(type="stdin", id=8, exec=6, data="", eof=True)
    m = a.recv()
    check(m.get("type") == "error" and m.get("code") == "not_found", "stdin for an ended connection: not_found", m)

    # A peer that closes first: eof comes, the host may still send, then both ends close.
    def early(c):
        c.sendall(b"bye")
        c.shutdown(socket.SHUT_WR)
        seen2.append(read_all(c))
        c.close()
    seen2 = []
    port = server(early)
    a.send(type="connect", id=9, host="127.0.0.1", port=port)
    got = a.until(lambda x: x.get("id") == 9 and x.get("type") == "output" and x.get("eof"))
    a.send(type="stdin", id=11, exec=9, data=base64.b64encode(b"late").decode(), eof=True)
    got += a.until(lambda x: x.get("id") == 9 and x.get("type") == "exit")
    check(got[-1].get("code") == 0, "a peer's half-close first: the host still sends, then exit 0", got[-1])
    for _ in range(2400):  # (up to 120 s: the peer's thread runs late on a loaded host)
        if seen2:
            break
        time.sleep(0.05)
    check(seen2 == [b"late"], "the peer read what the host sent after its own end", seen2)

    a.p.stdin.close()
    a.p.wait(WAIT)
    sys.exit(end())


main()
