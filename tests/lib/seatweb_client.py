# A participant's client of seat-web, in Python's own sockets and ssl, with the WebSocket
# framing of RFC 6455 written out: nothing here is seat-web's code, so the tests and benches
# that use it (tests/bench/bench-web.sh, tests/web/load.sh) measure seat-web from outside.
import base64, os, socket, ssl


class Client:
    def __init__(self, port, cafile):
        self.port = port
        self.ctx = ssl.create_default_context(cafile=cafile)
        self.origin = "https://127.0.0.1:%d" % port

    def connect(self, timeout=60):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        return self.ctx.wrap_socket(s, server_hostname="127.0.0.1")

    def login(self, seat, token):
        """The session cookie ("__Host-seatweb=...") for a seat's token, as the login form posts it."""
        s = self.connect()
        body = "seat=%s&token=%s" % (seat, token)
        s.sendall(("POST /login HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                   "Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (self.port, len(body), body)).encode())
        head, _ = read_head(s)
        s.close()
        for line in head.split("\r\n"):
            if line.lower().startswith("set-cookie:") and "__Host-seatweb=" in line:
                return line.split(":", 1)[1].strip().split(";")[0]
        raise RuntimeError("login refused: " + head.split("\r\n")[0])

    def terminal(self, seat, cookie):
        return Term(self, seat, cookie)


def read_head(s):
    buf = b""
    while b"\r\n\r\n" not in buf:
        b = s.recv(4096)
        if not b:
            raise RuntimeError("closed during the headers")
        buf += b
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head.decode("latin-1"), rest


def frame(data, opcode=2, length=None):
    """A masked client frame; length (when given) is what the header claims."""
    mask = os.urandom(4)
    n = len(data) if length is None else length
    if n < 126:
        hdr = bytes([0x80 | opcode, 0x80 | n])
    elif n < 65536:
        hdr = bytes([0x80 | opcode, 0x80 | 126]) + n.to_bytes(2, "big")
    else:
        hdr = bytes([0x80 | opcode, 0x80 | 127]) + n.to_bytes(8, "big")
    return hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


class Term:
    """One browser terminal: the page's WebSocket to /ws/seat/ID/terminal."""

    def __init__(self, client, seat, cookie):
        self.s = client.connect()
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET /ws/seat/%s/terminal HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
                        "Sec-WebSocket-Protocol: seat-terminal\r\nOrigin: %s\r\nCookie: %s\r\n\r\n"
                        % (seat, client.port, key, client.origin, cookie)).encode())
        head, self.buf = read_head(self.s)
        if " 101 " not in head.split("\r\n")[0]:
            raise RuntimeError("handshake refused: " + head.split("\r\n")[0])

    def send(self, data, opcode=2):
        self.s.sendall(frame(data, opcode))

    def _need(self, k):
        while len(self.buf) < k:
            b = self.s.recv(65536)
            if not b:
                raise RuntimeError("closed")
            self.buf += b

    def recv(self):
        """The next data frame's payload (binary: output; text: a message)."""
        while True:
            self._need(2)
            op, n = self.buf[0] & 0x0f, self.buf[1] & 0x7f
            off = 2
            if n == 126:
                self._need(4); n = int.from_bytes(self.buf[2:4], "big"); off = 4
            elif n == 127:
                self._need(10); n = int.from_bytes(self.buf[2:10], "big"); off = 10
            self._need(off + n)
            payload, self.buf = self.buf[off:off + n], self.buf[off + n:]
            if op == 8:
                raise RuntimeError("closed by seat-web")
            if op in (1, 2, 0):
                return op, payload

    def wait_for(self, needle):
        seen = b""
        while needle not in seen:
            op, p = self.recv()
            if op in (0, 2):
                seen = (seen + p)[-4096:]
