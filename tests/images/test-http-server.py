#!/usr/bin/env python3
# test-http-server.py: a small HTTP(S) server for tests/images/image-pull.sh, on 127.0.0.1
# only, stdlib only. It serves the directory --root; the first path component picks how it
# misbehaves when serving a bundle file (the manifest and its .minisig are always served
# normally), e.g. GET /drop/b1/kernel serves ROOT/b1/kernel in mode "drop":
#
#   normal        200, or 206 for "Range: bytes=N-[M]" (Content-Range, Content-Length)
#   ignore-range  always 200 with the whole file
#   extra         the file, then --extra-bytes of garbage; no Content-Length (close-delimited)
#   biglen        the file plus --extra-bytes of garbage, with a Content-Length saying so
#   endless       the file, then garbage without end (until the client goes; at most 4 GiB)
#   stall         Content-Length of the whole body, half of it, then --stall-seconds of silence
#   drop          Content-Length of the whole body, --drop-after bytes of it, then the
#                 connection is closed
#   slow          the body at --rate bytes per second
#   corrupt       one bit of the byte at file offset --corrupt-offset flipped
#   redirect      302 to --redirect-base + the rest of the path
#   MODE-all      MODE for every file, the manifest and its .minisig included
#
# --mode MODE applies MODE to paths whose first component is no mode. Every request is
# logged to --log as "GET PATH" plus " Range: VALUE" when it carried one. The port the
# kernel picked is written to --port-file once the server listens.
import argparse
import http.server
import os
import socketserver
import ssl
import sys
import threading
import time

MODES = {"normal", "ignore-range", "extra", "biglen", "endless", "stall", "drop", "slow", "corrupt", "redirect"}
BLOCK = 16384

opts = None
log_lock = threading.Lock()


def log_request_line(path, rng):
    with log_lock, open(opts.log, "a") as f:
        f.write(f"GET {path}" + (f" Range: {rng}" if rng else "") + "\n")


def parse_range(value, size):
    """(start, end) inclusive for a single 'bytes=N-[M]' range, or None."""
    if not value or not value.startswith("bytes=") or "," in value:
        return None
    first, _, last = value[6:].partition("-")
    if not first.isdigit() or (last and not last.isdigit()):
        return None
    start, end = int(first), int(last) if last else size - 1
    if start >= size or end < start:
        return None
    return start, min(end, size - 1)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "test-http-server"

    def log_message(self, fmt, *args):
        pass

    def send_plain(self, code, text):
        body = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        rng = self.headers.get("Range")
        log_request_line(self.path, rng)
        parts = self.path.split("?", 1)[0].lstrip("/").split("/")
        mode, every_file = opts.mode, False
        if parts and parts[0].endswith("-all") and parts[0][:-4] in MODES:
            mode, every_file, parts = parts[0][:-4], True, parts[1:]
        elif parts and parts[0] in MODES:
            mode, parts = parts[0], parts[1:]
        rel = "/".join(parts)
        if mode == "redirect":
            self.send_response(302)
            self.send_header("Location", opts.redirect_base + "/" + rel)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path = os.path.realpath(os.path.join(opts.root, rel))
        if not path.startswith(os.path.realpath(opts.root) + os.sep) or not os.path.isfile(path):
            self.send_plain(404, "not found\n")
            return
        with open(path, "rb") as f:
            data = f.read()
        name = os.path.basename(path)
        if not every_file and (name.endswith(".json") or name.endswith(".minisig")):
            mode = "normal"
        try:
            getattr(self, "serve_" + mode.replace("-", "_"))(data, rng)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True

    # --- the modes ---
    def headers_for(self, data, rng, honour_range=True, length=None):
        """Sends the status line and headers; returns the file offset the body starts at."""
        r = parse_range(rng, len(data)) if honour_range else None
        if r:
            start, end = r
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        else:
            start, end = 0, len(data) - 1
            self.send_response(200)
        self.send_header("Accept-Ranges", "bytes" if honour_range else "none")
        self.send_header("Content-Type", "application/octet-stream")
        if length is False:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(length if length is not None else end - start + 1))
        self.end_headers()
        return start, end

    def serve_normal(self, data, rng):
        start, end = self.headers_for(data, rng)
        self.wfile.write(data[start:end + 1])

    def serve_ignore_range(self, data, rng):
        self.headers_for(data, rng, honour_range=False)
        self.wfile.write(data)

    def serve_extra(self, data, rng):
        self.headers_for(data, rng, honour_range=False, length=False)
        self.wfile.write(data)
        self.wfile.write(os.urandom(opts.extra_bytes))

    def serve_biglen(self, data, rng):
        self.headers_for(data, rng, honour_range=False, length=len(data) + opts.extra_bytes)
        self.wfile.write(data)
        self.wfile.write(os.urandom(opts.extra_bytes))

    def serve_endless(self, data, rng):
        self.headers_for(data, rng, honour_range=False, length=False)
        self.wfile.write(data)
        junk = os.urandom(BLOCK)
        for _ in range((4 << 30) // BLOCK):
            self.wfile.write(junk)

    def serve_stall(self, data, rng):
        start, end = self.headers_for(data, rng)
        body = data[start:end + 1]
        self.wfile.write(body[:len(body) // 2])
        self.wfile.flush()
        time.sleep(opts.stall_seconds)
        self.close_connection = True

    def serve_drop(self, data, rng):
        start, end = self.headers_for(data, rng)
        self.wfile.write(data[start:end + 1][:opts.drop_after])
        self.wfile.flush()
        self.close_connection = True

    def serve_slow(self, data, rng):
        start, end = self.headers_for(data, rng)
        body = data[start:end + 1]
        for off in range(0, len(body), BLOCK):
            self.wfile.write(body[off:off + BLOCK])
            self.wfile.flush()
            time.sleep(BLOCK / opts.rate)

    def serve_corrupt(self, data, rng):
        b = bytearray(data)
        if opts.corrupt_offset < len(b):
            b[opts.corrupt_offset] ^= 0x01
        self.serve_normal(bytes(b), rng)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global opts
    p = argparse.ArgumentParser(description="HTTP(S) test server with misbehaviour modes (127.0.0.1 only)")
    p.add_argument("--root", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--mode", default="normal", choices=sorted(MODES))
    p.add_argument("--extra-bytes", type=int, default=1 << 20)
    p.add_argument("--drop-after", type=int, default=150000)
    p.add_argument("--stall-seconds", type=float, default=10)
    p.add_argument("--rate", type=int, default=256 * 1024)
    p.add_argument("--corrupt-offset", type=int, default=3 * 65536 + 100)
    p.add_argument("--redirect-base", default="")
    opts = p.parse_args()

    httpd = Server(("127.0.0.1", 0), Handler)
    if opts.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(opts.tls_cert, opts.tls_key)
        # The handshake happens in the handler's thread, not in accept().
        httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
    tmp = opts.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{httpd.server_address[1]}\n")
    os.rename(tmp, opts.port_file)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
