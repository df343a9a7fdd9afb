#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Test servers and clients for tests/network/egress.sh. Every client is bounded by a
timeout; servers run until killed. Clients exit 0 when the peer answered, 1 when not.

  serve-tcp ADDR PORT        answers "ok\\n" to every connection
  serve-udp ADDR PORT        answers "ok" to every datagram
  serve-dns ADDR             UDP 53: answers every A query with 198.51.100.10
  tcp ADDR PORT [SRC]        connect (from SRC), expect "ok"
  udp ADDR PORT              send, expect "ok"
  icmp ADDR                  one echo request (IPv4), expect the reply
  dns SERVER NAME            one A query, expect an answer
  scan ADDR                  connect to every TCP port 1-65535; exit 0 when none answered
                             (no accept, no RST) and 1 when any did
"""
import errno
import os
import resource
import selectors
import socket
import struct
import sys
import threading
import time

TIMEOUT = float(os.environ.get("NETPROBE_TIMEOUT", "1.5"))


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def serve_tcp(addr, port):
    s = socket.socket(family(addr), socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, int(port)))
    s.listen(64)
    while True:
        c, _ = s.accept()
        try:
            c.settimeout(1)
            c.sendall(b"ok\n")
        except OSError:
            pass
        c.close()


def serve_udp(addr, port):
    s = socket.socket(family(addr), socket.SOCK_DGRAM)
    s.bind((addr, int(port)))
    while True:
        _, peer = s.recvfrom(2048)
        s.sendto(b"ok", peer)


def serve_dns(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))
    while True:
        q, peer = s.recvfrom(512)
        if len(q) < 12:
            continue
        # Copy id and question; one A answer pointing at the question name.
        qid = q[:2]
        end = 12
        while end < len(q) and q[end] != 0:
            end += q[end] + 1
        question = q[12:end + 5]
        header = qid + b"\x81\x80" + b"\x00\x01\x00\x01\x00\x00\x00\x00"
        answer = b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04" + socket.inet_aton("198.51.100.10")
        s.sendto(header + question + answer, peer)


def tcp(addr, port, src=None):
    s = socket.socket(family(addr), socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    try:
        if src:
            s.bind((src, 0))
        s.connect((addr, int(port)))
        return 0 if s.recv(16).startswith(b"ok") else 1
    except OSError:
        return 1
    finally:
        s.close()


def udp(addr, port):
    s = socket.socket(family(addr), socket.SOCK_DGRAM)
    s.settimeout(TIMEOUT)
    try:
        s.sendto(b"hi", (addr, int(port)))
        data, _ = s.recvfrom(16)
        return 0 if data == b"ok" else 1
    except OSError:
        return 1
    finally:
        s.close()


def checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return ~s & 0xffff


def icmp(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    ident = os.getpid() & 0xffff
    body = b"seatd-netprobe"
    hdr = struct.pack("!BBHHH", 8, 0, 0, ident, 1)
    pkt = struct.pack("!BBHHH", 8, 0, checksum(hdr + body), ident, 1) + body
    s.sendto(pkt, (addr, 0))
    deadline = time.monotonic() + TIMEOUT
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return 1
        s.settimeout(left)
        try:
            data, peer = s.recvfrom(2048)
        except OSError:
            return 1
        ihl = (data[0] & 0x0f) * 4
        t, _, _, rid, _ = struct.unpack("!BBHHH", data[ihl:ihl + 8])
        if t == 0 and rid == ident and peer[0] == addr:
            return 0


def dns(server, name):
    q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\x00\x00\x01\x00\x01"
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(TIMEOUT)
    try:
        s.sendto(q, (server, 53))
        data, _ = s.recvfrom(512)
        return 0 if data[:2] == b"\x12\x34" and struct.unpack("!H", data[6:8])[0] > 0 else 1
    except OSError:
        return 1
    finally:
        s.close()


def scan(addr):
    """Non-blocking connects in batches; a dropped SYN never answers, a closed port
    answers RST (ECONNREFUSED) and an open one accepts: both count as answered."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    batch = max(64, min(4096, hard - 64))
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, batch + 64), hard))
    answered = []
    for start in range(1, 65536, batch):
        sel = selectors.DefaultSelector()
        socks = []
        for port in range(start, min(start + batch, 65536)):
            s = socket.socket(family(addr), socket.SOCK_STREAM)
            s.setblocking(False)
            e = s.connect_ex((addr, port))
            if e not in (errno.EINPROGRESS, 0):
                if e == errno.ECONNREFUSED:
                    answered.append(port)
                s.close()
                continue
            sel.register(s, selectors.EVENT_WRITE, port)
            socks.append(s)
        deadline = time.monotonic() + 0.5
        while socks and time.monotonic() < deadline:
            for key, _ in sel.select(max(0.0, deadline - time.monotonic())):
                err = key.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err in (0, errno.ECONNREFUSED):
                    answered.append(key.data)
                sel.unregister(key.fileobj)
        for s in socks:
            s.close()
        sel.close()
    if answered:
        print("answered: %s" % answered[:20])
        return 1
    return 0


def main(argv):
    cmd, args = argv[1], argv[2:]
    servers = {"serve-tcp": serve_tcp, "serve-udp": serve_udp, "serve-dns": serve_dns}
    clients = {"tcp": tcp, "udp": udp, "icmp": icmp, "dns": dns, "scan": scan}
    if cmd in servers:
        servers[cmd](*args)
        return 0
    return clients[cmd](*args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
