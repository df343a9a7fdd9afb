#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# dnsguard-upstreams.py SEAT_DNSGUARD: the DNS guard (network/seat-dnsguard.c) gives up on a
# query only when no upstream is left, on loopback only:
#   - upstreams it cannot even send to (255.255.255.255: connect() is refused locally,
#     EACCES, nothing leaves the machine) are skipped, however many come first;
#   - a datagram on the query's socket that is not the answer to its id is ignored, and the
#     real answer that follows still passes.
# A fake upstream on 127.0.0.1 answers "ok.test A 198.51.100.20" (a test-world address:
# the guard passes it), first with a stray datagram of another id when asked to.
# Speaks TAP.
import os
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tap import check, end  # noqa: E402

GUARD = sys.argv[1]
ANSWER_IP = bytes([198, 51, 100, 20])


def question(name):
    out = b""
    for label in name.split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0" + struct.pack("!HH", 1, 1)


def query(qid, name):
    return struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + question(name)


def answer(qid, name):
    return (struct.pack("!HHHHHH", qid, 0x8180, 1, 1, 0, 0) + question(name) +
            struct.pack("!HHHIH", 0xC00C, 1, 1, 60, 4) + ANSWER_IP)


class Upstream(threading.Thread):
    """Answers every query; first a datagram of another id when stray is set."""

    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.stray = False
        self.asked = 0

    def run(self):
        while True:
            try:
                m, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            if len(m) < 12:
                continue
            self.asked += 1
            qid = struct.unpack("!H", m[:2])[0]
            if self.stray:
                self.sock.sendto(answer(qid ^ 0x5A5A, "ok.test"), peer)
                time.sleep(0.05)
            self.sock.sendto(answer(qid, "ok.test"), peer)


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_guard(upstreams, log):
    """A guard on a free port, once it says it listens there: its own line, not the
    previous guard's in the same log (the log is appended to, and a sanitizer build
    starts slower than the 50 ms in which an earlier guard's line was found)."""
    port = free_port()
    listen = "127.0.0.1:%d" % port
    args = [GUARD, "--listen", listen, "--allow", "ok.test", "--timeout-ms", "2000"]
    for u in upstreams:
        args += ["--upstream", u]
    if os.geteuid() == 0:
        args += ["--user", "nobody"]
    log.seek(0, os.SEEK_END)
    start = log.tell()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log)
    said = "listening on %s " % listen
    deadline = time.monotonic() + 120  # sanitizers slow a start by up to 15x; never assume less
    while time.monotonic() < deadline and p.poll() is None:
        with open(log.name) as f:
            f.seek(start)
            if said in f.read():
                return p, port
        time.sleep(0.05)
    with open(log.name) as f:
        f.seek(start)
        text = f.read()
    p.kill()
    p.wait(5)
    sys.exit("seat-dnsguard did not say '%s' (exit %s): %s" % (said.strip(), p.returncode, text[-400:]))


def ask(port, qid=0x1234):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(60)  # (the guard's own upstream timeout is 2 s: this only catches a hang)
    try:
        s.sendto(query(qid, "ok.test"), ("127.0.0.1", port))
        m = s.recv(4096)
    except OSError as e:
        return None, str(e)
    finally:
        s.close()
    if len(m) < 12 or struct.unpack("!H", m[:2])[0] != qid:
        return None, "not an answer to the query: %r" % m[:40]
    rcode = m[3] & 15
    return rcode, ANSWER_IP in m[12:]


def main():
    up = Upstream()
    up.start()
    good = "127.0.0.1:%d" % up.port
    bad = "255.255.255.255:53"
    log = open("/tmp/dnsguard-upstreams-%d.log" % os.getpid(), "w+")
    guard = None
    try:
        guard, port = start_guard([bad, bad, good], log)
        rcode, has = ask(port)
        check(rcode == 0 and has is True,
              "two upstreams that cannot be sent to, then one that answers: the answer (rcode %s)" % rcode,
              open(log.name).read()[-400:])
        guard.terminate()
        guard.wait(60)

        guard, port = start_guard([bad, bad], log)
        rcode, _ = ask(port)
        check(rcode == 2, "no upstream that can be sent to: SERVFAIL (rcode %s)" % rcode)
        guard.terminate()
        guard.wait(60)

        up.stray = True
        asked = up.asked
        guard, port = start_guard([good], log)
        rcode, has = ask(port)
        check(rcode == 0 and has is True and up.asked == asked + 1,
              "a stray datagram of another id first is ignored: the real answer passes (rcode %s, asked %d)" %
              (rcode, up.asked - asked), open(log.name).read()[-400:])
        with open(log.name) as f:
            text = f.read()
        check("not the answer to our query" in text, "and the guard says it ignored one")
    finally:
        if guard and guard.poll() is None:
            guard.kill()
            guard.wait(60)
        log.close()
        os.unlink(log.name)
    return end()


sys.exit(main())
