/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * guest-web: a hostile web server for the web suite, run inside a seat (the test image
 * carries it: images/recipes/test-image --guest-tool). Static, plain libc, like guest-init.
 *
 *   guest-web PORT LOGFILE
 *
 * Every request's head is appended, raw, to LOGFILE (the suite reads it to prove what
 * seat-web sent the guest: never the participant's session cookie). Then, by path:
 *   /hello      a page, with cookies that try to clobber seat-web's session and a CORS header
 *   /redirect   302 to /hello (root-relative: seat-web puts it under its prefix)
 *   /echo       the request's body back (POST)
 *   /malformed  a header line without a colon
 *   /hugehead   a 32 KiB header
 *   /huge       a 1 MiB body
 *   /garbage    bytes that are not HTTP at all
 *   /short      a Content-Length larger than the body
 *   /slow       nothing for 60 s
 *   /ws-page    a page whose script opens a WebSocket to "echo" (relative) and shows the echo
 *   /echo (with Upgrade: websocket) a WebSocket echo server: each message back, prefixed
 *               "echo:", a ping of its own first (seat-web must answer it)
 * One process per connection; each answer ends with the connection.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEAD_MAX 65536

/* SHA-1 (RFC 3174), for the WebSocket handshake's Sec-WebSocket-Accept only. */
static uint32_t rol(uint32_t x, int n) {
        return (x << n) | (x >> (32 - n));
}

static void sha1(const uint8_t *msg, size_t len, uint8_t out[20]) {
        uint32_t h[5] = { 0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0 };
        size_t total = ((len + 8) / 64 + 1) * 64;
        uint8_t *m = calloc(1, total);
        if (!m)
                abort();
        memcpy(m, msg, len);
        m[len] = 0x80;
        uint64_t bits = (uint64_t) len * 8;
        for (int i = 0; i < 8; i++)
                m[total - 1 - i] = (uint8_t) (bits >> (8 * i));
        for (size_t off = 0; off < total; off += 64) {
                uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
                for (int i = 0; i < 16; i++)
                        w[i] = (uint32_t) m[off + 4 * i] << 24 | (uint32_t) m[off + 4 * i + 1] << 16 |
                               (uint32_t) m[off + 4 * i + 2] << 8 | m[off + 4 * i + 3];
                for (int i = 16; i < 80; i++)
                        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
                for (int i = 0; i < 80; i++) {
                        uint32_t f, k;
                        if (i < 20)
                                f = (b & c) | (~b & d), k = 0x5A827999;
                        else if (i < 40)
                                f = b ^ c ^ d, k = 0x6ED9EBA1;
                        else if (i < 60)
                                f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
                        else
                                f = b ^ c ^ d, k = 0xCA62C1D6;
                        uint32_t t = rol(a, 5) + f + e + k + w[i];
                        e = d, d = c, c = rol(b, 30), b = a, a = t;
                }
                h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
        }
        free(m);
        for (int i = 0; i < 20; i++)
                out[i] = (uint8_t) (h[i / 4] >> (24 - 8 * (i % 4)));
}

static void base64(const uint8_t *in, size_t n, char *out) {
        static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        size_t o = 0;
        for (size_t i = 0; i < n; i += 3) {
                uint32_t v = (uint32_t) in[i] << 16 | (i + 1 < n ? (uint32_t) in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
                out[o++] = t[v >> 18 & 63];
                out[o++] = t[v >> 12 & 63];
                out[o++] = i + 1 < n ? t[v >> 6 & 63] : '=';
                out[o++] = i + 2 < n ? t[v & 63] : '=';
        }
        out[o] = '\0';
}

static void put(int fd, const char *s, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, s, n);
                if (k <= 0)
                        return;
                s += k;
                n -= (size_t) k;
        }
}

static void puts_fd(int fd, const char *s) {
        put(fd, s, strlen(s));
}

static void answer(int fd, const char *status, const char *extra, const char *body, size_t len) {
        char head[1024];
        snprintf(head, sizeof(head), "HTTP/1.1 %s\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %zu\r\n%s\r\n",
                 status, len, extra);
        puts_fd(fd, head);
        put(fd, body, len);
}

static int read_full(int fd, uint8_t *buf, size_t n) {
        for (size_t got = 0; got < n;) {
                ssize_t k = read(fd, buf + got, n - got);
                if (k <= 0)
                        return -1;
                got += (size_t) k;
        }
        return 0;
}

static void ws_send(int fd, unsigned op, const uint8_t *data, size_t n) {
        uint8_t h[4] = { (uint8_t) (0x80 | op) };
        size_t hl = 2;
        if (n < 126)
                h[1] = (uint8_t) n;
        else {
                h[1] = 126, h[2] = (uint8_t) (n >> 8), h[3] = (uint8_t) n;
                hl = 4;
        }
        put(fd, (const char *) h, hl);
        put(fd, (const char *) data, n);
}

/* The WebSocket echo: a ping first (seat-web must answer it), then every message back. */
static void ws_echo(int fd, const char *head) {
        const char *k = strcasestr(head, "\r\nSec-WebSocket-Key:");
        char key[128], both[200], accept[64], resp[256];
        uint8_t md[20];
        if (!k || sscanf(k + 20, " %100[^\r]", key) != 1)
                return;
        snprintf(both, sizeof(both), "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
        sha1((const uint8_t *) both, strlen(both), md);
        base64(md, 20, accept);
        snprintf(resp, sizeof(resp), "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                     "Sec-WebSocket-Accept: %s\r\n\r\n", accept);
        puts_fd(fd, resp);
        ws_send(fd, 0x9, (const uint8_t *) "are-you-there", 13);
        bool ponged = false;
        for (;;) {
                uint8_t h[2], ext[8], mask[4];
                if (read_full(fd, h, 2) < 0)
                        return;
                uint64_t n = h[1] & 0x7f;
                if (n == 126) {
                        if (read_full(fd, ext, 2) < 0)
                                return;
                        n = (uint64_t) ext[0] << 8 | ext[1];
                } else if (n == 127)
                        return; /* not for a test */
                if (!(h[1] & 0x80) || read_full(fd, mask, 4) < 0 || n > 65536)
                        return; /* a client must mask */
                uint8_t *p = malloc(n + 6);
                if (!p || read_full(fd, p + 5, n) < 0)
                        return;
                for (uint64_t i = 0; i < n; i++)
                        p[5 + i] ^= mask[i & 3];
                unsigned op = h[0] & 0x0f;
                if (op == 0xa)
                        ponged = n == 13 && !memcmp(p + 5, "are-you-there", 13);
                else if (op == 0x8) {
                        ws_send(fd, 0x8, NULL, 0);
                        return;
                } else if (op == 0x1 || op == 0x2) {
                        /* "echo:" and the message, and whether the ping was answered */
                        memcpy(p, "echo:", 5);
                        ws_send(fd, op, p, (size_t) n + 5);
                        if (op == 0x1 && n == 4 && !memcmp(p + 5, "ping", 4))
                                ws_send(fd, 0x1, (const uint8_t *) (ponged ? "pong-seen" : "no-pong"), ponged ? 9 : 7);
                }
                free(p);
        }
}

static void serve(int fd, const char *logfile) {
        static char buf[HEAD_MAX + 1];
        size_t len = 0;
        char *end = NULL;
        while (len < HEAD_MAX && !(end = strstr(buf, "\r\n\r\n"))) {
                ssize_t k = read(fd, buf + len, HEAD_MAX - len);
                if (k <= 0)
                        return;
                len += (size_t) k;
                buf[len] = '\0';
        }
        if (!end)
                return;
        size_t head_len = (size_t) (end - buf) + 4;
        FILE *log = fopen(logfile, "a");
        if (log) {
                fwrite(buf, 1, head_len, log);
                fclose(log);
        }
        char method[16] = "", path[1024] = "";
        if (sscanf(buf, "%15s %1023s", method, path) != 2)
                return;
        if (!strcmp(path, "/hello")) {
                const char *page = "<!doctype html><title>guest</title><p id=msg>guest-web-hello from the seat</p>\n";
                answer(fd, "200 OK",
                       "Set-Cookie: __Host-seatweb=stolen; Path=/; Secure\r\n"
                       "Set-Cookie: app=guest-cookie; Path=/; Domain=evil.example; HttpOnly\r\n"
                       "Access-Control-Allow-Origin: *\r\nX-Guest: 1\r\n",
                       page, strlen(page));
        } else if (!strcmp(path, "/redirect")) {
                answer(fd, "302 Found", "Location: /hello\r\n", "", 0);
        } else if (!strcmp(path, "/echo") && strcasestr(buf, "\r\nUpgrade: websocket")) {
                ws_echo(fd, buf);
        } else if (!strcmp(path, "/ws-page")) {
                /* A page of the seat's own, its script inline: the guest's pages are not
                 * under seat-web's policy. */
                const char *page =
                        "<!doctype html><title>ws</title><p id=msg>waiting</p><script>"
                        "const u = new URL('echo', location.href); u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';"
                        "const ws = new WebSocket(u); const got = [];"
                        "ws.onopen = () => ws.send('hello-through-the-proxy');"
                        /* "ping" after the first echo: by then the guest's ping has been answered */
                        "ws.onmessage = (e) => { got.push(e.data); document.getElementById('msg').textContent = got.join(' ');"
                        " if (got.length === 1) ws.send('ping'); };"
                        "ws.onclose = () => { document.body.dataset.closed = '1'; };"
                        "</script>\n";
                answer(fd, "200 OK", "", page, strlen(page));
        } else if (!strcmp(path, "/echo")) {
                const char *cl = strcasestr(buf, "\r\nContent-Length:");
                size_t want = cl ? strtoul(cl + 17, NULL, 10) : 0, have = len - head_len;
                char *body = malloc(want + 1);
                if (!body || want > 4u << 20)
                        return;
                memcpy(body, buf + head_len, have < want ? have : want);
                while (have < want) {
                        ssize_t k = read(fd, body + have, want - have);
                        if (k <= 0)
                                break;
                        have += (size_t) k;
                }
                answer(fd, "200 OK", "", body, have);
                free(body);
        } else if (!strcmp(path, "/malformed")) {
                puts_fd(fd, "HTTP/1.1 200 OK\r\nThis line has no colon\r\nContent-Length: 2\r\n\r\nhi");
        } else if (!strcmp(path, "/hugehead")) {
                puts_fd(fd, "HTTP/1.1 200 OK\r\nX-Big: ");
                for (int i = 0; i < 32 * 1024; i++)
                        put(fd, "a", 1);
                puts_fd(fd, "\r\nContent-Length: 2\r\n\r\nhi");
        } else if (!strcmp(path, "/huge")) {
                static char mib[1024 * 1024];
                memset(mib, 'x', sizeof(mib));
                answer(fd, "200 OK", "", mib, sizeof(mib));
        } else if (!strcmp(path, "/garbage")) {
                puts_fd(fd, "\x01\x02not http at all\xff\r\n\r\n");
        } else if (!strcmp(path, "/short")) {
                puts_fd(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly a little");
        } else if (!strcmp(path, "/slow")) {
                sleep(60);
        } else {
                answer(fd, "404 Not Found", "", "no\n", 3);
        }
}

int main(int argc, char *argv[]) {
        if (argc != 3) {
                fprintf(stderr, "usage: guest-web PORT LOGFILE\n");
                return 2;
        }
        signal(SIGCHLD, SIG_IGN); /* children reaped by the kernel */
        signal(SIGPIPE, SIG_IGN);
        int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t) atoi(argv[1])) };
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (s < 0 || bind(s, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(s, 16) < 0) {
                perror("guest-web: listen");
                return 1;
        }
        for (;;) {
                int c = accept(s, NULL, NULL);
                if (c < 0)
                        continue;
                if (fork() == 0) {
                        close(s);
                        serve(c, argv[2]);
                        shutdown(c, SHUT_WR);
                        close(c);
                        _exit(0);
                }
                close(c);
        }
}
