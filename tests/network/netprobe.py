#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The test world's servers (tests/network/world.sh). They run until killed; every read
is bounded and every connection has a timeout. The clients are guest-probe's.

  serve-tcp ADDR PORT        per connection: reads one line (2 s); "GET /redirect/H:P/X"
                             gets a 302 to http://H:P/X; "GET PATH ..." gets an
                             HTTP/1.0 200 whose body names the server, anything else is
                             echoed back as one line
  serve-udp ADDR PORT        echoes every datagram
  serve-udp-stream ADDR PORT LOG
                             answers every datagram, then keeps sending "tick N" to
                             its sender every 200 ms for 180 s (a flow the world goes
                             on with, like a game or media server); one line per tick
                             sent, "tick peer=ADDR:PORT n=N", appended to LOG; at most
                             8 peers at a time
  serve-dns ADDR NAME=VALUE...
                             UDP and TCP 53: A queries for the NAMEs answered (TTL 60),
                             NXDOMAIN for any other name, FORMERR for what is not a plain
                             query. VALUE: an IPv4 address; an IPv6 address (answers
                             AAAA queries; an A query gets no records); "cname:TARGET" (the chain
                             followed through the zone in one answer); "malformed" (a
                             count that lies); "oversized" (6000 bytes)
  serve-record ADDR PORT LOG UDP: appends one line per datagram to LOG:
                             "key=KEY port=PORT src=ADDR" (KEY from a guest-probe payload
                             "seatd-probe key=KEY ...", "-" otherwise); never replies
ADDR may be IPv6 (link-local as fe80::1%IFACE).
"""
import os
import socket
import struct
import sys
import threading
import time

LINE_MAX = 4096


def sockaddr(addr, port):
    """(family, address tuple) for bind; fe80::1%eth0 carries its scope."""
    if ":" not in addr:
        return socket.AF_INET, (addr, int(port))
    host, _, scope = addr.partition("%")
    return socket.AF_INET6, (host, int(port), 0, socket.if_nametoindex(scope) if scope else 0)


def bound(kind, addr, port):
    fam, sa = sockaddr(addr, port)
    s = socket.socket(fam, kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    # The world's addresses may be added a moment after the server starts.
    s.setsockopt(socket.SOL_IP, 15, 1)  # IP_FREEBIND
    s.bind(sa)
    return s


def read_line(c):
    data = b""
    while b"\n" not in data and len(data) < LINE_MAX:
        chunk = c.recv(LINE_MAX - len(data))
        if not chunk:
            break
        data += chunk
    return data


def tcp_conn(c, addr, port):
    try:
        c.settimeout(2)
        line = read_line(c)
        if line.startswith(b"GET "):
            path = line.split(b" ")[1][:200].decode("ascii", "replace")
            # headers: read up to the blank line (bounded), then answer
            rest = line
            while b"\r\n\r\n" not in rest and len(rest) < 4 * LINE_MAX:
                chunk = c.recv(LINE_MAX)
                if not chunk:
                    break
                rest += chunk
            if path.startswith("/redirect/"):
                # "/redirect/HOST:PORT/PATH": 302 to http://HOST:PORT/PATH (the redirect egress case)
                target = "http://" + "".join(ch for ch in path[len("/redirect/"):] if ch.isalnum() or ch in ".:/-_")
                c.sendall(b"HTTP/1.0 302 Found\r\nLocation: %s\r\nContent-Length: 0\r\n\r\n" % target.encode())
                return
            body = ("seatd-world %s:%s %s\n" % (addr, port, path)).encode()
            c.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        elif line:
            c.sendall(line if line.endswith(b"\n") else line + b"\n")
    except OSError:
        pass
    finally:
        c.close()


def serve_tcp(addr, port):
    s = bound(socket.SOCK_STREAM, addr, port)
    s.listen(128)
    while True:
        c, _ = s.accept()
        threading.Thread(target=tcp_conn, args=(c, addr, port), daemon=True).start()


def serve_udp(addr, port):
    s = bound(socket.SOCK_DGRAM, addr, port)
    while True:
        data, peer = s.recvfrom(2048)
        s.sendto(data, peer)


STREAM_INTERVAL_S = 0.2
STREAM_DURATION_S = 180
STREAM_PEERS_MAX = 8


def serve_udp_stream(addr, port, log):
    s = bound(socket.SOCK_DGRAM, addr, port)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    lock = threading.Lock()
    streams = {}  # peer -> deadline (monotonic); a new datagram from it extends it

    def stream(peer):
        n = 0
        while True:
            with lock:
                if time.monotonic() >= streams[peer]:
                    del streams[peer]
                    return
            n += 1
            try:
                s.sendto(b"tick %d\n" % n, peer)
                os.write(fd, ("tick peer=%s:%d n=%d\n" % (peer[0], peer[1], n)).encode())
            except OSError:
                pass
            time.sleep(STREAM_INTERVAL_S)

    while True:
        data, peer = s.recvfrom(2048)
        s.sendto(data, peer)
        with lock:
            known = peer in streams
            if not known and len(streams) >= STREAM_PEERS_MAX:
                continue
            streams[peer] = time.monotonic() + STREAM_DURATION_S
        if not known:
            threading.Thread(target=stream, args=(peer,), daemon=True).start()


def dns_question(q):
    """(name, qtype, end) of the first question, or None. Bounded: no pointers allowed."""
    labels, off = [], 12
    while off < len(q) and q[off] != 0:
        n = q[off]
        if n > 63 or off + 1 + n > len(q):
            return None
        labels.append(q[off + 1:off + 1 + n].decode("ascii", "replace").lower())
        off += 1 + n
    if off + 5 > len(q):
        return None
    qtype = struct.unpack("!H", q[off + 1:off + 3])[0]
    return ".".join(labels), qtype, off + 5


def dns_name(name):
    return b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\x00"


def dns_rr(owner, rtype, rdata):
    """owner: bytes (a name or a pointer); TTL 60, class IN."""
    return owner + struct.pack("!HHIH", rtype, 1, 60, len(rdata)) + rdata


DNS_CHAIN_MAX = 8


def dns_reply(names, q, qd_end, name, qtype):
    """The reply to a parsed query. Zone values: an IPv4 address (A); "cname:TARGET" (a
    CNAME, followed through the zone in the same answer, as recursive resolvers do, with
    the A records at its end); "malformed" (ANCOUNT says 3, one record follows);
    "oversized" (a NOERROR answer of 6000 bytes: 370 A records)."""
    question = q[12:qd_end]
    value = names.get(name)
    if value is None:
        return q[:2] + b"\x81\x83" + b"\x00\x01\x00\x00\x00\x00\x00\x00" + question
    if value == "malformed":
        rr = dns_rr(b"\xc0\x0c", 1, socket.inet_aton("198.51.100.12"))
        return q[:2] + b"\x81\x80" + struct.pack("!HHHH", 1, 3, 0, 0) + question + rr
    if value == "oversized":
        rr = dns_rr(b"\xc0\x0c", 1, socket.inet_aton("198.51.100.11"))
        return q[:2] + b"\x81\x80" + struct.pack("!HHHH", 1, 370, 0, 0) + question + rr * 370
    answers, count, owner, seen = b"", 0, b"\xc0\x0c", set()
    while value is not None and value.startswith("cname:") and name not in seen and count < DNS_CHAIN_MAX:
        seen.add(name)
        name = value[len("cname:"):]
        answers += dns_rr(owner, 5, dns_name(name))
        count += 1
        owner = dns_name(name)
        value = names.get(name)
    if value is not None and not value.startswith("cname:"):
        if qtype == 1 and ":" not in value:
            answers += dns_rr(owner, 1, socket.inet_aton(value))
            count += 1
        elif qtype == 28 and ":" in value:
            answers += dns_rr(owner, 28, socket.inet_pton(socket.AF_INET6, value))
            count += 1
    return q[:2] + b"\x81\x80" + struct.pack("!HHHH", 1, count, 0, 0) + question + answers


def dns_answer(names, q):
    """The reply to the message q, or None for what is not worth one."""
    if len(q) < 12 or q[2] & 0x80:
        return None
    qd = struct.unpack("!H", q[4:6])[0]
    parsed = dns_question(q) if qd == 1 else None
    if parsed is None:
        return q[:2] + b"\x81\x01" + b"\x00" * 8  # FORMERR, no question
    name, qtype, end = parsed
    return dns_reply(names, q, end, name, qtype)


def dns_tcp_conn(c, names):
    try:
        c.settimeout(2)
        while True:
            head = b""
            while len(head) < 2:
                chunk = c.recv(2 - len(head))
                if not chunk:
                    return
                head += chunk
            want = struct.unpack("!H", head)[0]
            q = b""
            while len(q) < want:
                chunk = c.recv(want - len(q))
                if not chunk:
                    return
                q += chunk
            reply = dns_answer(names, q)
            if reply is None:
                return
            c.sendall(struct.pack("!H", len(reply)) + reply)
    except OSError:
        pass
    finally:
        c.close()


def serve_dns_tcp(addr, names):
    s = bound(socket.SOCK_STREAM, addr, 53)
    s.listen(32)
    while True:
        c, _ = s.accept()
        threading.Thread(target=dns_tcp_conn, args=(c, names), daemon=True).start()


def serve_dns(addr, *zone):
    names = dict(z.split("=", 1) for z in zone)
    threading.Thread(target=serve_dns_tcp, args=(addr, names), daemon=True).start()
    s = bound(socket.SOCK_DGRAM, addr, 53)
    while True:
        q, peer = s.recvfrom(512)
        reply = dns_answer(names, q)
        if reply is not None:
            s.sendto(reply, peer)


def serve_record(addr, port, log):
    s = bound(socket.SOCK_DGRAM, addr, port)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    while True:
        data, peer = s.recvfrom(2048)
        key = "-"
        if data.startswith(b"seatd-probe key="):
            key = data[16:].split(b" ")[0][:64].decode("ascii", "replace")
            key = "".join(ch if ch.isalnum() or ch in "-_." else "?" for ch in key)
        os.write(fd, ("key=%s port=%s src=%s\n" % (key, port, peer[0])).encode())


def main(argv):
    servers = {"serve-tcp": serve_tcp, "serve-udp": serve_udp, "serve-udp-stream": serve_udp_stream, "serve-dns": serve_dns, "serve-record": serve_record}
    if len(argv) < 2 or argv[1] not in servers:
        sys.stderr.write(__doc__)
        return 2
    servers[argv[1]](*argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
