#!/usr/bin/env python3
"""The range's backend: a tiny flag/score API on the internal network (only the victim
reaches it). GET /health, GET /flag, POST /score. Each request is logged with its peer."""
import argparse, json, time
from http.server import BaseHTTPRequestHandler, HTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, default=8080)
ap.add_argument("--log", default="/dev/stderr")
args = ap.parse_args()
log = open(args.log, "a", buffering=1)
scores = {}

class H(BaseHTTPRequestHandler):
    def reply(self, code, obj):
        body = (json.dumps(obj) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/health":
            self.reply(200, {"ok": True})
        elif self.path == "/flag":
            self.reply(200, {"flag": "FLAG{purple-range-pivot}", "served_to": self.client_address[0]})
        elif self.path == "/scores":
            self.reply(200, scores)
        else:
            self.reply(404, {"error": "no such path"})

    def do_POST(self):
        n = min(int(self.headers.get("Content-Length") or 0), 4096)
        team = self.rfile.read(n).decode(errors="replace").strip()[:64] or "anonymous"
        scores[team] = scores.get(team, 0) + 1
        self.reply(200, {"team": team, "score": scores[team]})

    def log_message(self, fmt, *a):
        log.write("%s %s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), self.client_address[0], fmt % a))

HTTPServer(("0.0.0.0", args.port), H).serve_forever()
