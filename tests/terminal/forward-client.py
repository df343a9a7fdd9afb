#!/usr/bin/env python3
"""forward-client.py: TCP clients of `seatctl forward` for tests/terminal/forward.sh.
Each scenario prints PASS/FAIL lines (the suite turns them into TAP) and diagnostics.
  upload PORT FILE          send FILE, half-close, read the reply (the guest's sha256sum)
  download PORT             read until EOF: prints the sha256 of what came
  echo PORT FILE            send FILE while reading the echo at once, half-close, compare
  parallel PORT N SIZE      N connections open at once (each echoed before any goes on), SIZE each
  refused PORT              the connection is closed without data
  stranger PORT             another local user's: what it sends gets nothing back, the connection is closed
  hold PORT                 connect, echo once, then wait for the connection's end (a reset)
"""
import hashlib
import os
import socket
import sys
import threading

TIMEOUT = 300


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    s.settimeout(TIMEOUT)
    return s


def read_all(s):
    chunks = []
    while True:
        d = s.recv(65536)
        if not d:
            return b"".join(chunks)
        chunks.append(d)


def upload(port, path):
    data = open(path, "rb").read()
    s = connect(port)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)  # half-close: the reply still comes back
    reply = read_all(s).decode(errors="replace").split()
    want = hashlib.sha256(data).hexdigest()
    print(("PASS" if reply and reply[0] == want else "FAIL") +
          f" {len(data)} bytes sent then half-closed; the guest's sha256 of them came back ({reply[:1]} vs {want})")


def download(port):
    s = connect(port)
    s.shutdown(socket.SHUT_WR)
    data = read_all(s)
    print(f"SHA {hashlib.sha256(data).hexdigest()} {len(data)}")


def echo_one(port, data, barrier=None, results=None, i=0):
    try:
        s = connect(port)
        s.sendall(b"hi\n")
        got = b""
        while len(got) < 3:
            d = s.recv(3 - len(got))
            if not d:
                raise RuntimeError("closed before the first echo")
            got += d
        if barrier:
            barrier.wait(TIMEOUT)  # every connection is open and echoing at this point
        out = []

        def reader():
            out.append(read_all(s))
        t = threading.Thread(target=reader)
        t.start()
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        t.join(TIMEOUT)
        ok = out and out[0] == data
        if results is not None:
            results[i] = ok
        return ok
    except Exception as e:
        print(f"connection {i}: {e!r}")
        if results is not None:
            results[i] = False
        return False


def echo(port, path):
    data = open(path, "rb").read()
    ok = echo_one(port, data)
    print(("PASS" if ok else "FAIL") + f" {len(data)} bytes both ways at once through an echo server, intact")


def parallel(port, n, size):
    barrier = threading.Barrier(n)
    results = [False] * n
    threads = [threading.Thread(target=echo_one, args=(port, os.urandom(size), barrier, results, i)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    print(("PASS" if all(results) else "FAIL") +
          f" {n} connections open at once, each echoed {size} bytes intact ({sum(results)} of {n})")


def refused(port):
    s = connect(port)
    try:
        d = s.recv(100)
        ok = d == b""
    except ConnectionResetError:
        ok = True
    print(("PASS" if ok else "FAIL") + " a connection to a refused target is closed")


def stranger(port):
    s = connect(port)
    s.settimeout(30)
    got = b""
    try:
        s.sendall(b"hi\n")  # an echo server would answer this at once
        while True:
            d = s.recv(100)
            if not d:
                break
            got += d
    except (ConnectionResetError, BrokenPipeError):
        pass
    except socket.timeout:
        print(f"FAIL another local user's connection was left open (30 s), {len(got)} bytes came: {got[:20]!r}")
        return
    print(("PASS" if got == b"" else "FAIL") +
          f" another local user's connection is closed without data ({len(got)} bytes came: {got[:20]!r})")


def hold(port):
    s = connect(port)
    s.sendall(b"hi\n")
    first = s.recv(3)
    print(f"READY {first!r}", flush=True)
    try:
        rest = read_all(s)
        print(f"ENDED {len(rest)}")
    except (ConnectionResetError, socket.timeout) as e:
        print(f"ENDED {e!r}")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    port = int(args[0])
    if cmd == "upload":
        upload(port, args[1])
    elif cmd == "download":
        download(port)
    elif cmd == "echo":
        echo(port, args[1])
    elif cmd == "parallel":
        parallel(port, int(args[1]), int(args[2]))
    elif cmd == "refused":
        refused(port)
    elif cmd == "stranger":
        stranger(port)
    elif cmd == "hold":
        hold(port)
