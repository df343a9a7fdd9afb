/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * guest-probe: the hostile guest's network toolbox for the egress tests (docs/egress.md).
 * Static, plain libc, nothing from the guest's /etc: it runs inside a seat's busybox image
 * (images/recipes/test-image --guest-tool) and, being a normal binary, on the host in a
 * network namespace standing in for a guest (tests/network/egress.sh).
 *
 * Every subcommand prints exactly one line of key=value pairs on stdout, starting with
 * "probe=CMD result=ok|fail reason=WHY", ending with "us=N ms=N", and exits 0 (ok), 1 (fail) or
 * 2 (usage). Every wait is bounded by --timeout-ms (default 2000). Everything read from
 * the network is bounded and printed escaped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/macro.h"
#include "probe-dns.h"

#define EXIT_OK 0
#define EXIT_FAIL 1
#define EXIT_USAGE 2

#define DEFAULT_TIMEOUT_MS 2000
#define DEFAULT_SCAN_WAIT_MS 250
#define DEFAULT_SCAN_WINDOW 4096
#define SCAN_WINDOW_MAX 16384
#define REPLY_MAX 1024          /* tcp/udp reply bytes kept */
#define HTTP_MAX (64 * 1024)    /* http response bytes read */
#define SHOW_MAX 64             /* bytes of any reply shown in the result line */
#define LINE_MAX_OUT 4096

typedef struct Options {
        int timeout_ms;
        bool timeout_set;
        const char *send;
        const char *expect;
        const char *bind;
        const char *resolver;
        const char *key;
        const char *gw;
        const char *gw_mac;
        const char *src6;
        unsigned window;
        unsigned count;
        unsigned sport;
        bool raw;
} Options;

/* ---------------------------------------------------------------- the result line */

static const char *probe_name = "?";
static int64_t t_start_us;
static char extra[LINE_MAX_OUT];
static size_t extra_len;

static int64_t now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t now_ms(void) {
        return now_us() / 1000;
}

static int remaining_ms(int64_t deadline) {
        int64_t left = deadline - now_ms();
        return left < 0 ? 0 : (int) MIN(left, (int64_t) 1 << 30);
}

static bool plain_char(unsigned char c) {
        return c > ' ' && c < 0x7f && c != '"' && c != '\\' && c != '=';
}

/* Appends " key=value", value quoted and escaped unless it is plain. */
static void add_field(const char *key, const char *value, size_t len) {
        char buf[LINE_MAX_OUT];
        size_t n = 0;
        bool plain = len > 0;

        for (size_t i = 0; i < len; i++)
                plain = plain && plain_char((unsigned char) value[i]);
        if (plain) {
                n = (size_t) snprintf(buf, sizeof(buf), "%.*s", (int) MIN(len, sizeof(buf) - 1), value);
        } else {
                buf[n++] = '"';
                for (size_t i = 0; i < len && n + 6 < sizeof(buf); i++) {
                        unsigned char c = (unsigned char) value[i];
                        if (c == '"' || c == '\\')
                                n += (size_t) snprintf(buf + n, sizeof(buf) - n, "\\%c", c);
                        else if (c >= ' ' && c < 0x7f)
                                buf[n++] = (char) c;
                        else
                                n += (size_t) snprintf(buf + n, sizeof(buf) - n, "\\x%02x", c);
                }
                buf[n++] = '"';
                buf[n] = 0;
        }
        int w = snprintf(extra + extra_len, sizeof(extra) - extra_len, " %s=%s", key, buf);
        if (w > 0)
                extra_len = MIN(extra_len + (size_t) w, sizeof(extra) - 1);
}

_printf_(2, 3) static void field(const char *key, const char *fmt, ...) {
        char v[LINE_MAX_OUT];
        va_list ap;

        va_start(ap, fmt);
        int n = vsnprintf(v, sizeof(v), fmt, ap);
        va_end(ap);
        add_field(key, v, n < 0 ? 0 : MIN((size_t) n, sizeof(v) - 1));
}

static int finish(bool ok, const char *reason) {
        /* us= too: a probe of a few ms is timed to the µs (bench-egress.sh's ratios) */
        int64_t us = now_us() - t_start_us;
        printf("probe=%s result=%s reason=%s%s us=%" PRId64 " ms=%" PRId64 "\n", probe_name, ok ? "ok" : "fail", reason,
               extra, us, us / 1000);
        fflush(stdout);
        return ok ? EXIT_OK : EXIT_FAIL;
}

/* reason for a socket error */
static const char *errno_reason(int e) {
        switch (e) {
        case ECONNREFUSED:
                return "refused";
        case ETIMEDOUT:
                return "timeout";
        case EHOSTUNREACH:
        case ENETUNREACH:
                return "unreachable";
        case EPERM:
        case EACCES:
                return "not-permitted";
        case ECONNRESET:
                return "reset";
        default:
                return "error";
        }
}

static int finish_errno(int e) {
        field("errno", "%s", strerrorname_np(e) ?: "?");
        return finish(false, errno_reason(e));
}

/* ---------------------------------------------------------------- addresses */

typedef struct Addr {
        struct sockaddr_storage ss;
        socklen_t len;
} Addr;

static void addr_set_port(Addr *a, uint16_t port) {
        if (a->ss.ss_family == AF_INET)
                ((struct sockaddr_in *) &a->ss)->sin_port = htons(port);
        else
                ((struct sockaddr_in6 *) &a->ss)->sin6_port = htons(port);
}

static const char *addr_str(const Addr *a, char buf[static INET6_ADDRSTRLEN]) {
        if (a->ss.ss_family == AF_INET)
                return inet_ntop(AF_INET, &((const struct sockaddr_in *) &a->ss)->sin_addr, buf, INET6_ADDRSTRLEN);
        return inet_ntop(AF_INET6, &((const struct sockaddr_in6 *) &a->ss)->sin6_addr, buf, INET6_ADDRSTRLEN);
}

/* A numeric IPv4 or IPv6 address ("fe80::1%eth0" for a scope). */
static int parse_numeric(const char *s, Addr *ret) {
        Addr a = {};
        struct sockaddr_in *in = (struct sockaddr_in *) &a.ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &a.ss;
        char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 1];

        if (inet_pton(AF_INET, s, &in->sin_addr) == 1) {
                in->sin_family = AF_INET;
                a.len = sizeof(*in);
                *ret = a;
                return 0;
        }
        if (strlen(s) >= sizeof(host))
                return -EINVAL;
        strcpy(host, s);
        char *pct = strchr(host, '%');
        if (pct) {
                *pct++ = 0;
                in6->sin6_scope_id = if_nametoindex(pct);
                if (in6->sin6_scope_id == 0)
                        return -ENODEV;
        }
        if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
                return -EINVAL;
        in6->sin6_family = AF_INET6;
        a.len = sizeof(*in6);
        *ret = a;
        return 0;
}

static int parse_port(const char *s, uint16_t *ret) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || end == s || *end || v == 0 || v > 65535)
                return -EINVAL;
        *ret = (uint16_t) v;
        return 0;
}

static uint64_t random_u64(void) {
        uint64_t v;
        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t) sizeof(v))
                return v;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t) getpid() << 32 ^ (uint64_t) ts.tv_sec;
}

static int dns_query(const Addr *server, const char *name, uint16_t qtype, int64_t deadline, DnsReply *ret);

/* HOST: numeric, or a name looked up with our own query to --resolver (no /etc needed). */
static int resolve_host(const char *host, const Options *o, int64_t deadline, Addr *ret) {
        DnsReply reply;
        Addr server;
        int r;

        if (parse_numeric(host, ret) == 0)
                return 0;
        if (!o->resolver) {
                field("error", "'%s' is not a numeric address; give --resolver IP to look names up", host);
                return -EINVAL;
        }
        if (parse_numeric(o->resolver, &server) < 0) {
                field("error", "--resolver '%s' is not a numeric address", o->resolver);
                return -EINVAL;
        }
        addr_set_port(&server, DNS_PORT);
        /* lookup_us: the lookup's share of us= (bench-egress.sh: what a name's first
         * connection spends on the lookup, and what on the connection after it) */
        int64_t t0 = now_us();
        r = dns_query(&server, host, DNS_TYPE_A, deadline, &reply);
        field("lookup_us", "%" PRId64, now_us() - t0);
        if (r < 0)
                return r;
        if (reply.rcode != 0 || reply.n_a == 0) {
                field("rcode", "%u", reply.rcode);
                return -ENOENT;
        }
        struct sockaddr_in *in = (struct sockaddr_in *) &ret->ss;
        *ret = (Addr) { .len = sizeof(*in) };
        in->sin_family = AF_INET;
        in->sin_addr = reply.a[0];
        char b[INET6_ADDRSTRLEN];
        field("resolved", "%s", addr_str(ret, b));
        return 0;
}

static int finish_resolve(int r) {
        if (r == -EINVAL)
                return EXIT_USAGE;
        return finish(false, r == -ENOENT ? "no-such-name" : "resolve-failed");
}

/* ---------------------------------------------------------------- tcp, udp, http */

/* Connects a non-blocking socket within the deadline; returns the fd or -errno. */
/* bind_addr, sport: the source address and port (NULL, 0: the kernel's choice). */
static int connect_bounded(int type, const Addr *dst, const char *bind_addr, uint16_t sport, int64_t deadline) {
        _cleanup_close_ int fd = socket(dst->ss.ss_family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return negative_errno();
        if (bind_addr || sport) {
                Addr src = { .ss.ss_family = dst->ss.ss_family,
                             .len = dst->ss.ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6) };
                if (bind_addr && (parse_numeric(bind_addr, &src) < 0 || src.ss.ss_family != dst->ss.ss_family))
                        return -EINVAL;
                addr_set_port(&src, sport);
                if (bind(fd, (struct sockaddr *) &src.ss, src.len) < 0)
                        return negative_errno();
        }
        if (connect(fd, (const struct sockaddr *) &dst->ss, dst->len) < 0) {
                if (errno != EINPROGRESS)
                        return negative_errno();
                struct pollfd p = { .fd = fd, .events = POLLOUT };
                int n = poll(&p, 1, remaining_ms(deadline));
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        return -ETIMEDOUT;
                int err = 0;
                socklen_t l = sizeof(err);
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
                        return negative_errno();
                if (err)
                        return -err;
        }
        return TAKE_FD(fd);
}

static int send_all(int fd, const char *data, size_t len, int64_t deadline) {
        while (len > 0) {
                ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno != EAGAIN && errno != EINTR)
                                return negative_errno();
                        struct pollfd p = { .fd = fd, .events = POLLOUT };
                        if (poll(&p, 1, remaining_ms(deadline)) == 0)
                                return -ETIMEDOUT;
                        continue;
                }
                data += n;
                len -= (size_t) n;
        }
        return 0;
}

/* Reads into buf (at most size bytes) until EOF, the deadline, or (stop_at_newline) a
 * newline. Returns the byte count; -errno only when nothing at all was read. */
static ssize_t recv_bounded(int fd, char *buf, size_t size, bool stop_at_newline, int64_t deadline) {
        size_t got = 0;
        int err = 0;

        while (got < size) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int n = poll(&p, 1, remaining_ms(deadline));
                if (n <= 0) {
                        err = n == 0 ? ETIMEDOUT : errno;
                        break;
                }
                ssize_t r = recv(fd, buf + got, size - got, 0);
                if (r < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                continue;
                        err = errno;
                        break;
                }
                if (r == 0)
                        break;
                got += (size_t) r;
                if (stop_at_newline && memchr(buf + got - r, '\n', (size_t) r))
                        break;
        }
        if (got == 0 && err)
                return -err;
        return (ssize_t) got;
}

/* host (resolved as the options say) at port, connected before deadline from o->bind and
 * sport: the socket, or -1 with the exit code the command ends with in *ret_exit (its
 * result already printed). */
static int dial(const Options *o, const char *host, uint16_t port, int type, uint16_t sport, int64_t deadline,
                int *ret_exit) {
        Addr dst;
        int r = resolve_host(host, o, deadline, &dst);
        if (r < 0)
                return *ret_exit = finish_resolve(r), -1;
        addr_set_port(&dst, port);
        int fd = connect_bounded(type, &dst, o->bind, sport, deadline);
        if (fd == -EINVAL)
                return *ret_exit = EXIT_USAGE, -1;
        if (fd < 0)
                return *ret_exit = finish_errno(-fd), -1;
        return fd;
}

static bool contains(const char *hay, size_t len, const char *needle) {
        return memmem(hay, len, needle, strlen(needle)) != NULL;
}

static int cmd_tcp(const Options *o, char **args) {
        int64_t deadline = now_ms() + o->timeout_ms;
        char reply[REPLY_MAX];
        uint16_t port;
        int r;

        if (parse_port(args[1], &port) < 0)
                return EXIT_USAGE;
        int ex;
        _cleanup_close_ int fd = dial(o, args[0], port, SOCK_STREAM, 0, deadline, &ex);
        if (fd < 0)
                return ex;
        if (!o->send && !o->expect)
                return finish(true, "connected");

        if (o->send) {
                _cleanup_free_ char *line = NULL;
                if (asprintf(&line, "%s\n", o->send) < 0)
                        return finish_errno(ENOMEM);
                r = send_all(fd, line, strlen(line), deadline);
                if (r < 0)
                        return finish_errno(-r);
        }
        ssize_t n = recv_bounded(fd, reply, sizeof(reply), true, deadline);
        if (n < 0)
                return finish_errno((int) -n);
        add_field("reply", reply, MIN((size_t) n, SHOW_MAX));
        if (n == 0)
                return finish(false, "no-reply");
        if (o->expect && !contains(reply, (size_t) n, o->expect))
                return finish(false, "reply-mismatch");
        return finish(true, "reply");
}

static const char *probe_key(const Options *o) {
        static char buf[32];
        if (o->key)
                return o->key;
        if (!buf[0])
                snprintf(buf, sizeof(buf), "k%016" PRIx64, random_u64());
        return buf;
}

static int cmd_udp(const Options *o, char **args) {
        int64_t deadline = now_ms() + o->timeout_ms;
        char reply[REPLY_MAX];
        _cleanup_free_ char *payload = NULL;
        uint16_t port;

        if (parse_port(args[1], &port) < 0)
                return EXIT_USAGE;
        /* connect(): only the peer's replies are taken, and an ICMP port unreachable shows
         * up as ECONNREFUSED. */
        int ex;
        _cleanup_close_ int fd = dial(o, args[0], port, SOCK_DGRAM, (uint16_t) o->sport, deadline, &ex);
        if (fd < 0)
                return ex;
        if (o->send)
                payload = strdup(o->send);
        else if (asprintf(&payload, "seatd-probe key=%s probe=udp", probe_key(o)) < 0)
                payload = NULL;
        if (!payload)
                return finish_errno(ENOMEM);
        field("key", "%s", probe_key(o));
        if (send(fd, payload, strlen(payload), 0) < 0)
                return finish_errno(errno);

        struct pollfd p = { .fd = fd, .events = POLLIN };
        int n = poll(&p, 1, remaining_ms(deadline));
        if (n == 0)
                return finish(false, "timeout");
        ssize_t got = recv(fd, reply, sizeof(reply), 0);
        if (got < 0)
                return finish_errno(errno);
        add_field("reply", reply, MIN((size_t) got, SHOW_MAX));
        if (o->expect && !contains(reply, (size_t) got, o->expect))
                return finish(false, "reply-mismatch");
        return finish(true, "reply");
}

/* Datagrams that reach the guest on a port nothing here asked for: what is left of a flow
 * (issue #13, finding 6: one the seat's last machine opened). Counts every datagram until
 * the timeout; ok when any came. */
static int cmd_listen_udp(const Options *o, char **args) {
        int64_t deadline = now_ms() + o->timeout_ms;
        struct sockaddr_in any = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
        char buf[REPLY_MAX], first[REPLY_MAX], from[INET_ADDRSTRLEN] = "-";
        size_t first_len = 0;
        unsigned count = 0;
        uint16_t port;

        if (parse_port(args[0], &port) < 0)
                return EXIT_USAGE;
        _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return finish_errno(errno);
        any.sin_port = htons(port);
        if (bind(fd, (struct sockaddr *) &any, sizeof(any)) < 0)
                return finish_errno(errno);
        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int n = poll(&p, 1, remaining_ms(deadline));
                if (n < 0 && errno != EINTR)
                        return finish_errno(errno);
                if (n == 0)
                        break;
                struct sockaddr_in peer;
                socklen_t pl = sizeof(peer);
                ssize_t got = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *) &peer, &pl);
                if (got < 0)
                        continue;
                if (count++ == 0) {
                        first_len = (size_t) got;
                        memcpy(first, buf, first_len);
                        (void) inet_ntop(AF_INET, &peer.sin_addr, from, sizeof(from));
                }
        }
        field("received", "%u", count);
        field("from", "%s", from);
        if (count > 0)
                add_field("first", first, MIN(first_len, SHOW_MAX));
        return finish(count > 0, count > 0 ? "received" : "nothing");
}

static int cmd_http(const Options *o, char **args) {
        int64_t deadline = now_ms() + o->timeout_ms;
        _cleanup_free_ char *req = NULL, *resp = NULL;
        uint16_t port;
        int r;

        if (parse_port(args[1], &port) < 0 || args[2][0] != '/' || strpbrk(args[2], " \r\n"))
                return EXIT_USAGE;
        int ex;
        _cleanup_close_ int fd = dial(o, args[0], port, SOCK_STREAM, 0, deadline, &ex);
        if (fd < 0)
                return ex;
        if (asprintf(&req, "GET %s HTTP/1.0\r\nHost: %s\r\nUser-Agent: guest-probe\r\nConnection: close\r\n\r\n",
                     args[2], args[0]) < 0)
                return finish_errno(ENOMEM);
        r = send_all(fd, req, strlen(req), deadline);
        if (r < 0)
                return finish_errno(-r);

        resp = malloc(HTTP_MAX);
        if (!resp)
                return finish_errno(ENOMEM);
        ssize_t n = recv_bounded(fd, resp, HTTP_MAX, false, deadline);
        if (n < 0)
                return finish_errno((int) -n);
        const char *eol = memmem(resp, (size_t) n, "\r\n", 2);
        if (!eol || n < 12 || memcmp(resp, "HTTP/1.", 7) != 0) {
                add_field("reply", resp, MIN((size_t) n, SHOW_MAX));
                return finish(false, n == 0 ? "no-reply" : "not-http");
        }
        add_field("status", resp, MIN((size_t) (eol - resp), SHOW_MAX));
        const char *body = memmem(resp, (size_t) n, "\r\n\r\n", 4);
        size_t body_len = body ? (size_t) n - (size_t) (body + 4 - resp) : 0;
        field("body_bytes", "%zu", body_len);
        if (body)
                add_field("body", body + 4, MIN(body_len, SHOW_MAX));
        if (n == HTTP_MAX)
                field("capped", "%d", HTTP_MAX);
        if (resp[8] == ' ' && resp[9] >= '1' && resp[9] <= '5' && resp[10] >= '0' && resp[10] <= '9' &&
            resp[11] >= '0' && resp[11] <= '9')
                field("code", "%c%c%c", resp[9], resp[10], resp[11]);
        return finish(true, "response");
}

/* ---------------------------------------------------------------- dns */

static int dns_query(const Addr *server, const char *name, uint16_t qtype, int64_t deadline, DnsReply *ret) {
        uint8_t q[DNS_UDP_MAX], buf[DNS_UDP_MAX];
        uint16_t id = (uint16_t) random_u64();
        size_t qlen;
        int r;

        r = dns_build_query(id, name, qtype, q, sizeof(q), &qlen);
        if (r < 0) {
                field("error", "'%s' is not a valid DNS name", name);
                return -EINVAL;
        }
        _cleanup_close_ int fd = connect_bounded(SOCK_DGRAM, server, NULL, 0, deadline);
        if (fd < 0)
                return fd;
        if (send(fd, q, qlen, 0) < 0)
                return negative_errno();
        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int n = poll(&p, 1, remaining_ms(deadline));
                if (n == 0)
                        return -ETIMEDOUT;
                if (n < 0)
                        return negative_errno();
                ssize_t got = recv(fd, buf, sizeof(buf), 0);
                if (got < 0)
                        return negative_errno();
                r = dns_parse_reply(buf, (size_t) got, id, name, qtype, ret);
                if (r == 0)
                        return 0;
                /* not ours or malformed: note it, keep waiting for the real reply */
                field(r == -ESRCH ? "ignored" : "malformed", "%zd", got);
        }
}

static const char *rcode_name(unsigned rcode) {
        static const char *const names[] = { "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED" };
        return rcode < ELEMENTSOF(names) ? names[rcode] : "OTHER";
}

/* One query of qtype to SERVER for NAME: rcode, the answers' count, and the addresses. */
static int dns_lookup(const Options *o, char **args, uint16_t qtype) {
        int64_t deadline = now_ms() + o->timeout_ms;
        DnsReply reply;
        Addr server;
        char list[DNS_MAX_A * (INET6_ADDRSTRLEN + 1) + 1] = "";
        int r;

        if (parse_numeric(args[0], &server) < 0)
                return EXIT_USAGE;
        addr_set_port(&server, DNS_PORT);
        r = dns_query(&server, args[1], qtype, deadline, &reply);
        if (r == -EINVAL)
                return EXIT_USAGE;
        if (r < 0)
                return finish_errno(-r);
        unsigned n = qtype == DNS_TYPE_A ? reply.n_a : reply.n_aaaa;
        for (unsigned i = 0; i < n; i++) {
                char b[INET6_ADDRSTRLEN];
                if (qtype == DNS_TYPE_A)
                        inet_ntop(AF_INET, &reply.a[i], b, sizeof(b));
                else
                        inet_ntop(AF_INET6, &reply.aaaa[i], b, sizeof(b));
                if (i)
                        strcat(list, ",");
                strcat(list, b);
        }
        field("rcode", "%s", rcode_name(reply.rcode));
        field("answers", "%u", reply.n_answers);
        if (n)
                field(qtype == DNS_TYPE_A ? "a" : "aaaa", "%s", list);
        if (reply.truncated)
                field("truncated", "1");
        return finish(true, "reply");
}

static int cmd_dns(const Options *o, char **args) {
        return dns_lookup(o, args, DNS_TYPE_A);
}

/* Only DNS data: nothing is sent to the addresses (a seat network has no IPv6 transport). */
static int cmd_dns_aaaa(const Options *o, char **args) {
        return dns_lookup(o, args, DNS_TYPE_AAAA);
}

/* ---------------------------------------------------------------- icmp */

static uint16_t inet_csum(const void *data, size_t len, uint32_t sum) {
        const uint8_t *p = data;
        for (size_t i = 0; i + 1 < len; i += 2)
                sum += (uint32_t) (p[i] << 8 | p[i + 1]);
        if (len & 1)
                sum += (uint32_t) p[len - 1] << 8;
        while (sum >> 16)
                sum = (sum & 0xffff) + (sum >> 16);
        return (uint16_t) ~sum;
}

static int cmd_icmp(const Options *o, char **args) {
        int64_t deadline = now_ms() + o->timeout_ms;
        uint8_t pkt[64], buf[1500];
        Addr dst;
        bool raw = false;
        int r;

        r = resolve_host(args[0], o, deadline, &dst);
        if (r < 0)
                return finish_resolve(r);
        if (dst.ss.ss_family != AF_INET)
                return EXIT_USAGE;

        /* A ping socket needs net.ipv4.ping_group_range to include our group; the default
         * ("1 0") includes nobody, root included. Then a raw socket (root in the guest). */
        _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP);
        if (fd < 0) {
                fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
                raw = true;
        }
        if (fd < 0)
                return finish_errno(errno);
        field("socket", "%s", raw ? "raw" : "ping");

        uint16_t ident = (uint16_t) getpid(), seq = (uint16_t) random_u64();
        struct icmphdr *h = (struct icmphdr *) pkt;
        memset(pkt, 0, sizeof(pkt));
        h->type = ICMP_ECHO;
        h->un.echo.id = htons(ident);
        h->un.echo.sequence = htons(seq);
        memcpy(pkt + sizeof(*h), "seatd-guest-probe", 17);
        h->checksum = htons(inet_csum(pkt, sizeof(pkt), 0));
        if (sendto(fd, pkt, sizeof(pkt), 0, (struct sockaddr *) &dst.ss, dst.len) < 0)
                return finish_errno(errno);

        for (;;) {
                struct sockaddr_in from;
                socklen_t fl = sizeof(from);
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int n = poll(&p, 1, remaining_ms(deadline));
                if (n == 0)
                        return finish(false, "timeout");
                ssize_t got = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *) &from, &fl);
                if (got < 0)
                        return finish_errno(errno);
                size_t off = 0;
                if (raw) {
                        if (got < 20)
                                continue;
                        off = (size_t) (buf[0] & 0x0f) * 4;
                }
                if ((size_t) got < off + sizeof(struct icmphdr))
                        continue;
                const struct icmphdr *rh = (const struct icmphdr *) (buf + off);
                if (from.sin_addr.s_addr != ((struct sockaddr_in *) &dst.ss)->sin_addr.s_addr)
                        continue;
                if (rh->type != ICMP_ECHOREPLY || ntohs(rh->un.echo.sequence) != seq)
                        continue; /* (a ping socket rewrites the id: match the sequence) */
                if (raw && ntohs(rh->un.echo.id) != ident)
                        continue;
                return finish(true, "echo-reply");
        }
}

/* ---------------------------------------------------------------- scan */

typedef struct ScanSlot {
        int fd;
        uint16_t port;
        int64_t deadline;
} ScanSlot;

typedef struct ScanCount {
        unsigned open, refused, unreach, silent, errors;
        uint16_t open_ports[16]; /* the first ones found open */
        int first_errno;
} ScanCount;

static void scan_result(ScanCount *c, uint16_t port, int err) {
        switch (err) {
        case 0:
                if (c->open < ELEMENTSOF(c->open_ports))
                        c->open_ports[c->open] = port;
                c->open++;
                break;
        case ECONNREFUSED:
                c->refused++;
                break;
        case EHOSTUNREACH:
        case ENETUNREACH:
                c->unreach++;
                break;
        default:
                c->errors++;
                if (!c->first_errno)
                        c->first_errno = err;
        }
}

/* As many fds as the window needs, raising the limit if we may. */
static unsigned scan_window(unsigned want) {
        struct rlimit rl;
        rlim_t need = want + 32;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return 64;
        if (rl.rlim_cur < need) {
                struct rlimit up = { .rlim_cur = MAX(need, rl.rlim_cur), .rlim_max = MAX(need, rl.rlim_max) };
                if (setrlimit(RLIMIT_NOFILE, &up) < 0) {
                        rl.rlim_cur = MIN(rl.rlim_max, need);
                        (void) setrlimit(RLIMIT_NOFILE, &rl);
                }
                (void) getrlimit(RLIMIT_NOFILE, &rl);
        }
        if (rl.rlim_cur < need)
                return rl.rlim_cur > 96 ? (unsigned) rl.rlim_cur - 32 : 64;
        return want;
}

/* Non-blocking connects in a sliding window: at most `window` attempts in flight, each
 * given wait_ms for an answer (SYN-ACK: open; RST: refused; ICMP: unreachable), then
 * closed as silent. A SYN_SENT socket sends nothing when closed. */
static int scan_run(const Addr *dst, unsigned from, unsigned to, unsigned window, int wait_ms, ScanCount *c) {
        _cleanup_free_ ScanSlot *ring = calloc(window, sizeof(*ring));
        _cleanup_close_ int ep = epoll_create1(EPOLL_CLOEXEC);
        unsigned head = 0, tail = 0, next = from; /* ring positions count up; slot = pos % window */

        if (!ring || ep < 0)
                return -ENOMEM;
        while (next <= to || head != tail) {
                while (next <= to && tail - head < window) {
                        Addr a = *dst;
                        uint16_t port = (uint16_t) next++;
                        addr_set_port(&a, port);
                        int fd = socket(a.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                        if (fd < 0)
                                return negative_errno();
                        int err = connect(fd, (struct sockaddr *) &a.ss, a.len) < 0 ? errno : 0;
                        if (err != EINPROGRESS) { /* answered at once (loopback) or refused locally */
                                scan_result(c, port, err);
                                close(fd);
                                continue;
                        }
                        ScanSlot *s = &ring[tail % window];
                        *s = (ScanSlot) { .fd = fd, .port = port, .deadline = now_ms() + wait_ms };
                        struct epoll_event ev = { .events = EPOLLOUT, .data.u32 = tail % window };
                        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
                                close(fd);
                                return negative_errno();
                        }
                        tail++;
                }

                /* Take every answer there is (epoll_wait hands over a bounded batch)
                 * before judging anyone silent at its deadline. */
                struct epoll_event evs[256];
                int timeout = head == tail ? 0 : remaining_ms(ring[head % window].deadline);
                if (next <= to && tail - head < window)
                        timeout = 0;
                int n;
                do {
                        n = epoll_wait(ep, evs, ELEMENTSOF(evs), timeout);
                        if (n < 0) {
                                if (errno != EINTR)
                                        return negative_errno();
                                break;
                        }
                        for (int i = 0; i < n; i++) {
                                ScanSlot *s = &ring[evs[i].data.u32];
                                int err = 0;
                                socklen_t l = sizeof(err);
                                if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
                                        err = errno;
                                scan_result(c, s->port, err);
                                close(s->fd); /* also removes it from the epoll set */
                                s->fd = -1;
                        }
                        timeout = 0;
                } while (n == (int) ELEMENTSOF(evs));
                int64_t now = now_ms();
                while (head != tail && (ring[head % window].fd < 0 || ring[head % window].deadline <= now)) {
                        ScanSlot *s = &ring[head % window];
                        if (s->fd >= 0) {
                                c->silent++;
                                close(s->fd);
                                s->fd = -1;
                        }
                        head++;
                }
        }
        return 0;
}

static int cmd_scan(const Options *o, char **args) {
        unsigned from, to;
        ScanCount c = {};
        Addr dst;
        char tail;
        int r;

        if (parse_numeric(args[0], &dst) < 0)
                return EXIT_USAGE;
        if (sscanf(args[1], "%u-%u%c", &from, &to, &tail) != 2 || from < 1 || to > 65535 || from > to)
                return EXIT_USAGE;
        int wait_ms = o->timeout_set ? o->timeout_ms : DEFAULT_SCAN_WAIT_MS;
        unsigned window = scan_window(o->window ? o->window : DEFAULT_SCAN_WINDOW);

        r = scan_run(&dst, from, to, window, wait_ms, &c);
        field("ports", "%u-%u", from, to);
        field("window", "%u", window);
        field("wait_ms", "%d", wait_ms);
        field("open", "%u", c.open);
        field("refused", "%u", c.refused);
        field("unreach", "%u", c.unreach);
        field("silent", "%u", c.silent);
        field("errors", "%u", c.errors);
        if (c.first_errno)
                field("first_errno", "%s", strerrorname_np(c.first_errno) ?: "?");
        if (c.open) {
                char list[ELEMENTSOF(c.open_ports) * 6 + 1] = "";
                for (unsigned i = 0; i < MIN(c.open, ELEMENTSOF(c.open_ports)); i++)
                        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%u", i ? "," : "", c.open_ports[i]);
                field("open_ports", "%s", list);
        }
        if (r < 0)
                return finish_errno(-r);
        return finish(c.open + c.refused > 0, c.open + c.refused > 0 ? "answered" : "none-answered");
}

/* ---------------------------------------------------------------- crafted frames */

typedef struct Iface {
        char name[IF_NAMESIZE];
        int index;
        uint8_t mac[ETH_ALEN];
        struct in_addr ip, mask;
        bool has_ip;
} Iface;

static int iface_get(const char *name, Iface *ret) {
        Iface i = {};
        struct ifreq ifr = {};

        if (strlen(name) >= IF_NAMESIZE)
                return -EINVAL;
        strcpy(i.name, name);
        _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        strcpy(ifr.ifr_name, name);
        if (ioctl(fd, SIOCGIFINDEX, &ifr) < 0)
                return negative_errno();
        i.index = ifr.ifr_ifindex;
        if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0)
                return negative_errno();
        memcpy(i.mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
        if (ioctl(fd, SIOCGIFADDR, &ifr) == 0) {
                i.ip = ((struct sockaddr_in *) &ifr.ifr_addr)->sin_addr;
                if (ioctl(fd, SIOCGIFNETMASK, &ifr) == 0)
                        i.mask = ((struct sockaddr_in *) &ifr.ifr_netmask)->sin_addr;
                i.has_ip = true;
        }
        *ret = i;
        return 0;
}

static int parse_mac(const char *s, uint8_t mac[static ETH_ALEN]) {
        unsigned v[ETH_ALEN];
        char tail;
        if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
                return -EINVAL;
        for (int i = 0; i < ETH_ALEN; i++)
                mac[i] = (uint8_t) v[i];
        return 0;
}

static void mac_str(const uint8_t mac[static ETH_ALEN], char out[static 18]) {
        snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
}

static void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}

/* The default gateway of an interface from /proc/net/route (no `ip` needed). */
static int default_gateway(const Iface *i, struct in_addr *ret) {
        char line[256], ifname[IF_NAMESIZE + 1];
        unsigned dest, gw, flags;
        _cleanup_(fclosep) FILE *f = fopen("/proc/net/route", "re");

        if (!f)
                return negative_errno();
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "%16s %x %x %x", ifname, &dest, &gw, &flags) == 4 && dest == 0 && (flags & 2) &&
                    strcmp(ifname, i->name) == 0) {
                        ret->s_addr = gw; /* the file holds them in network order, as hex */
                        return 0;
                }
        return -ENOENT;
}

/* Who has next_hop? Asked from the interface's real MAC and address (ARP is not IP: the
 * egress filter does not see it; the host's bridge answers for itself). */
static int arp_resolve(const Iface *i, struct in_addr next_hop, int64_t deadline, uint8_t ret[static ETH_ALEN]) {
        struct __attribute__((packed)) {
                struct arphdr h;
                uint8_t sha[ETH_ALEN], spa[4], tha[ETH_ALEN], tpa[4];
        } req = {}, rep;
        struct sockaddr_ll to = {
                .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ARP), .sll_ifindex = i->index, .sll_halen = ETH_ALEN,
        };

        _cleanup_close_ int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_ARP));
        if (fd < 0)
                return negative_errno();
        if (bind(fd, (struct sockaddr *) &to, sizeof(to)) < 0)
                return negative_errno();
        memset(to.sll_addr, 0xff, ETH_ALEN);
        req.h.ar_hrd = htons(ARPHRD_ETHER);
        req.h.ar_pro = htons(ETH_P_IP);
        req.h.ar_hln = ETH_ALEN;
        req.h.ar_pln = 4;
        req.h.ar_op = htons(ARPOP_REQUEST);
        memcpy(req.sha, i->mac, ETH_ALEN);
        memcpy(req.spa, &i->ip, 4);
        memcpy(req.tpa, &next_hop, 4);

        for (int attempt = 0; attempt < 3; attempt++) {
                if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *) &to, sizeof(to)) < 0)
                        return negative_errno();
                int64_t retry = MIN(deadline, now_ms() + 500);
                for (;;) {
                        struct pollfd p = { .fd = fd, .events = POLLIN };
                        int n = poll(&p, 1, remaining_ms(retry));
                        if (n <= 0)
                                break;
                        ssize_t got = recv(fd, &rep, sizeof(rep), 0);
                        if (got < (ssize_t) sizeof(rep))
                                continue;
                        if (ntohs(rep.h.ar_op) == ARPOP_REPLY && ntohs(rep.h.ar_pro) == ETH_P_IP &&
                            rep.h.ar_hln == ETH_ALEN && memcmp(rep.spa, &next_hop, 4) == 0) {
                                memcpy(ret, rep.sha, ETH_ALEN);
                                return 0;
                        }
                }
                if (now_ms() >= deadline)
                        break;
        }
        return -ETIMEDOUT;
}

/* The destination MAC for a frame towards dst: --gw-mac, else ARP for the next hop
 * (--gw, dst itself when on the interface's subnet, else its default gateway). */
static int frame_next_hop(const Iface *i, const Options *o, struct in_addr dst, int64_t deadline,
                          uint8_t ret[static ETH_ALEN]) {
        struct in_addr hop;
        char b[INET_ADDRSTRLEN], m[18];
        int r;

        if (o->gw_mac)
                return parse_mac(o->gw_mac, ret) < 0 ? -EINVAL : 0;
        if (!i->has_ip) {
                field("error", "'%s' has no IPv4 address to ask ARP from; give --gw-mac MAC", i->name);
                return -EADDRNOTAVAIL;
        }
        if (o->gw) {
                if (inet_pton(AF_INET, o->gw, &hop) != 1)
                        return -EINVAL;
        } else if (((dst.s_addr ^ i->ip.s_addr) & i->mask.s_addr) == 0) {
                hop = dst;
        } else if ((r = default_gateway(i, &hop)) < 0) {
                field("error", "no default route on '%s'; give --gw IP or --gw-mac MAC", i->name);
                return r;
        }
        field("next_hop", "%s", inet_ntop(AF_INET, &hop, b, sizeof(b)));
        r = arp_resolve(i, hop, deadline, ret);
        if (r < 0) {
                field("error", "no ARP reply from %s", b);
                return r;
        }
        mac_str(ret, m);
        field("next_hop_mac", "%s", m);
        return 0;
}

typedef struct Frame {
        uint8_t dst_mac[ETH_ALEN], src_mac[ETH_ALEN];
        int vid; /* -1: untagged */
        int family;
        struct in_addr src4, dst4;
        struct in6_addr src6, dst6;
        uint16_t sport, dport;
        const char *payload;
} Frame;

static void put16(uint8_t *p, uint16_t v) {
        p[0] = (uint8_t) (v >> 8);
        p[1] = (uint8_t) v;
}

/* Ethernet [+ 802.1Q] + IPv4|IPv6 + UDP, checksums filled in. Returns the length. */
static size_t frame_build(const Frame *f, uint8_t *buf, size_t size) {
        size_t plen = strlen(f->payload), off = 0;
        size_t ulen = 8 + plen;
        uint32_t sum = 0;

        if (size < 14 + 4 + 40 + ulen)
                return 0;
        memcpy(buf, f->dst_mac, ETH_ALEN);
        memcpy(buf + 6, f->src_mac, ETH_ALEN);
        off = 12;
        if (f->vid >= 0) {
                put16(buf + off, ETH_P_8021Q);
                put16(buf + off + 2, (uint16_t) f->vid);
                off += 4;
        }
        put16(buf + off, f->family == AF_INET ? ETH_P_IP : ETH_P_IPV6);
        off += 2;

        uint8_t *ip = buf + off;
        if (f->family == AF_INET) {
                memset(ip, 0, 20);
                ip[0] = 0x45;
                put16(ip + 2, (uint16_t) (20 + ulen));
                put16(ip + 4, (uint16_t) random_u64());
                put16(ip + 6, 0x4000); /* DF */
                ip[8] = 64;
                ip[9] = IPPROTO_UDP;
                memcpy(ip + 12, &f->src4, 4);
                memcpy(ip + 16, &f->dst4, 4);
                put16(ip + 10, inet_csum(ip, 20, 0));
                for (int k = 12; k < 20; k += 2)
                        sum += (uint32_t) (ip[k] << 8 | ip[k + 1]);
                sum += IPPROTO_UDP + (uint32_t) ulen;
                off += 20;
        } else {
                memset(ip, 0, 40);
                ip[0] = 0x60;
                put16(ip + 4, (uint16_t) ulen);
                ip[6] = IPPROTO_UDP;
                ip[7] = 64;
                memcpy(ip + 8, &f->src6, 16);
                memcpy(ip + 24, &f->dst6, 16);
                for (int k = 8; k < 40; k += 2)
                        sum += (uint32_t) (ip[k] << 8 | ip[k + 1]);
                sum += IPPROTO_UDP + (uint32_t) ulen;
                off += 40;
        }
        uint8_t *udp = buf + off;
        put16(udp, f->sport);
        put16(udp + 2, f->dport);
        put16(udp + 4, (uint16_t) ulen);
        put16(udp + 6, 0);
        memcpy(udp + 8, f->payload, plen);
        uint16_t c = inet_csum(udp, ulen, sum);
        put16(udp + 6, c ? c : 0xffff);
        return off + ulen;
}

/* Sends count copies, 100 ms apart (a single datagram may be lost to a neighbour lookup). */
static int send_copies(int fd, const void *buf, size_t len, const struct sockaddr *to, socklen_t tolen, unsigned count) {
        for (unsigned k = 0; k < count; k++) {
                if (k)
                        (void) poll(NULL, 0, 100);
                if (sendto(fd, buf, len, 0, to, tolen) < 0)
                        return negative_errno();
        }
        return 0;
}

static int frame_send(const Iface *i, const Frame *f, unsigned count) {
        uint8_t buf[1514];
        char m[18];
        size_t len = frame_build(f, buf, sizeof(buf));
        struct sockaddr_ll to = {
                .sll_family = AF_PACKET, .sll_ifindex = i->index, .sll_halen = ETH_ALEN,
        };

        if (len == 0)
                return -EMSGSIZE;
        memcpy(to.sll_addr, f->dst_mac, ETH_ALEN);
        _cleanup_close_ int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        int r = send_copies(fd, buf, len, (struct sockaddr *) &to, sizeof(to), count);
        if (r < 0)
                return r;
        mac_str(f->src_mac, m);
        field("src_mac", "%s", m);
        field("bytes", "%zu", len);
        return 0;
}

static uint16_t frame_sport(const Options *o) {
        return o->sport ? (uint16_t) o->sport : (uint16_t) (40000 + random_u64() % 20000);
}

static int frame_payload(const Options *o, const char *what, char **ret) {
        field("key", "%s", probe_key(o));
        return asprintf(ret, "seatd-probe key=%s probe=%s", probe_key(o), what) < 0 ? -ENOMEM : 0;
}

/* raw, spoof-ip, spoof-mac, vlan: one UDP/IPv4 frame through AF_PACKET. */
static int send_udp4_frame(const Options *o, const char *ifname, const char *src_ip, const char *src_mac, int vid,
                           const char *dst, const char *port) {
        int64_t deadline = now_ms() + o->timeout_ms;
        _cleanup_free_ char *payload = NULL;
        Frame f = { .vid = vid, .family = AF_INET };
        char b[INET_ADDRSTRLEN];
        Iface i;
        int r;

        if (inet_pton(AF_INET, dst, &f.dst4) != 1 || parse_port(port, &f.dport) < 0)
                return EXIT_USAGE;
        if (src_ip && inet_pton(AF_INET, src_ip, &f.src4) != 1)
                return EXIT_USAGE;
        if (src_mac && parse_mac(src_mac, f.src_mac) < 0)
                return EXIT_USAGE;
        r = iface_get(ifname, &i);
        if (r < 0) {
                field("error", "no interface '%s'", ifname);
                return finish_errno(-r);
        }
        if (!src_mac)
                memcpy(f.src_mac, i.mac, ETH_ALEN);
        if (!src_ip) {
                if (!i.has_ip) {
                        field("error", "'%s' has no IPv4 address", ifname);
                        return finish(false, "no-address");
                }
                f.src4 = i.ip;
        }
        r = frame_next_hop(&i, o, f.dst4, deadline, f.dst_mac);
        if (r == -EINVAL)
                return EXIT_USAGE;
        if (r < 0)
                return finish_errno(-r);
        r = frame_payload(o, probe_name, &payload);
        if (r < 0)
                return finish_errno(-r);
        f.payload = payload;
        f.sport = frame_sport(o);
        field("src", "%s", inet_ntop(AF_INET, &f.src4, b, sizeof(b)));
        if (vid >= 0)
                field("vid", "%d", vid);
        r = frame_send(&i, &f, o->count);
        if (r < 0)
                return finish_errno(-r);
        return finish(true, "sent");
}

static int cmd_raw(const Options *o, char **args) {
        return send_udp4_frame(o, args[0], NULL, NULL, -1, args[1], args[2]);
}

static int cmd_spoof_ip(const Options *o, char **args) {
        return send_udp4_frame(o, args[0], args[1], NULL, -1, args[2], args[3]);
}

static int cmd_spoof_mac(const Options *o, char **args) {
        return send_udp4_frame(o, args[0], NULL, args[1], -1, args[2], args[3]);
}

static int cmd_vlan(const Options *o, char **args) {
        char *end;
        long vid = strtol(args[1], &end, 10);
        if (end == args[1] || *end || vid < 0 || vid > 4095)
                return EXIT_USAGE;
        return send_udp4_frame(o, args[0], NULL, NULL, (int) vid, args[2], args[3]);
}

/* ipv6: a UDP datagram to an IPv6 address. Through a socket when the guest kernel has a
 * route; otherwise (or with --raw) a crafted frame from the interface's EUI-64 link-local
 * address (or --src6) to the next hop's MAC (--gw-mac, or the IPv4 gateway's from ARP:
 * the host's bridge has one MAC for both). */
static int cmd_ipv6(const Options *o, char **args) {
        int64_t deadline = now_ms() + o->timeout_ms;
        _cleanup_free_ char *payload = NULL;
        Frame f = { .vid = -1, .family = AF_INET6 };
        Addr dst;
        Iface i;
        char b[INET6_ADDRSTRLEN];
        int r;

        if (parse_port(args[2], &f.dport) < 0)
                return EXIT_USAGE;
        if (parse_numeric(args[1], &dst) < 0 || dst.ss.ss_family != AF_INET6)
                return EXIT_USAGE;
        f.dst6 = ((struct sockaddr_in6 *) &dst.ss)->sin6_addr;
        r = iface_get(args[0], &i);
        if (r < 0) {
                field("error", "no interface '%s'", args[0]);
                return finish_errno(-r);
        }
        r = frame_payload(o, "ipv6", &payload);
        if (r < 0)
                return finish_errno(-r);

        if (!o->raw) {
                struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &dst.ss;
                if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr) && in6->sin6_scope_id == 0)
                        in6->sin6_scope_id = (uint32_t) i.index;
                addr_set_port(&dst, f.dport);
                _cleanup_close_ int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                if (fd >= 0 && send_copies(fd, payload, strlen(payload), (struct sockaddr *) &dst.ss, dst.len, o->count) >= 0) {
                        field("via", "socket");
                        return finish(true, "sent");
                }
                field("socket_errno", "%s", strerrorname_np(errno) ?: "?");
        }

        if (o->src6) {
                if (inet_pton(AF_INET6, o->src6, &f.src6) != 1)
                        return EXIT_USAGE;
        } else {
                /* fe80::/64 + EUI-64 of the MAC */
                f.src6.s6_addr[0] = 0xfe;
                f.src6.s6_addr[1] = 0x80;
                f.src6.s6_addr[8] = i.mac[0] ^ 0x02;
                f.src6.s6_addr[9] = i.mac[1];
                f.src6.s6_addr[10] = i.mac[2];
                f.src6.s6_addr[11] = 0xff;
                f.src6.s6_addr[12] = 0xfe;
                f.src6.s6_addr[13] = i.mac[3];
                f.src6.s6_addr[14] = i.mac[4];
                f.src6.s6_addr[15] = i.mac[5];
        }
        memcpy(f.src_mac, i.mac, ETH_ALEN);
        if (IN6_IS_ADDR_MULTICAST(&f.dst6)) {
                uint8_t m[ETH_ALEN] = { 0x33, 0x33, f.dst6.s6_addr[12], f.dst6.s6_addr[13], f.dst6.s6_addr[14],
                                        f.dst6.s6_addr[15] };
                memcpy(f.dst_mac, m, ETH_ALEN);
        } else {
                /* the next hop is the IPv4 default gateway (--gw, --gw-mac to choose) */
                struct in_addr hop = {};
                if (!o->gw && !o->gw_mac && (!i.has_ip || default_gateway(&i, &hop) < 0)) {
                        field("error", "no IPv4 default route on '%s' to find the next hop; give --gw IP or --gw-mac MAC",
                              i.name);
                        return finish(false, "no-next-hop");
                }
                r = frame_next_hop(&i, o, hop, deadline, f.dst_mac);
                if (r == -EINVAL)
                        return EXIT_USAGE;
                if (r < 0)
                        return finish_errno(-r);
        }
        f.payload = payload;
        f.sport = frame_sport(o);
        field("via", "packet");
        field("src", "%s", inet_ntop(AF_INET6, &f.src6, b, sizeof(b)));
        r = frame_send(&i, &f, o->count);
        if (r < 0)
                return finish_errno(-r);
        return finish(true, "sent");
}

/* ---------------------------------------------------------------- main */

typedef struct Command {
        const char *name;
        unsigned nargs;
        int (*run)(const Options *o, char **args);
        const char *args, *help;
} Command;

static const Command commands[] = {
        { "tcp", 2, cmd_tcp, "HOST PORT", "connect; with --send LINE send it and read a reply line; --expect STR" },
        { "udp", 2, cmd_udp, "HOST PORT", "send a datagram (--send TEXT, default a keyed line), wait for a reply" },
        { "listen-udp", 1, cmd_listen_udp, "PORT", "count the datagrams that reach PORT until the timeout; ok when any" },
        { "icmp", 1, cmd_icmp, "HOST", "one ICMP echo request (ping socket, else raw socket)" },
        { "scan", 2, cmd_scan, "HOST FROM-TO", "TCP connects to every port in the range; ok when any answered\n"
                                               "                                (--timeout-ms is per port here, default 250; --window N)" },
        { "dns", 2, cmd_dns, "SERVER NAME", "one A query over UDP; prints rcode and the A records" },
        { "dns-aaaa", 2, cmd_dns_aaaa, "SERVER NAME", "one AAAA query over UDP; prints rcode and the AAAA records" },
        { "http", 3, cmd_http, "HOST PORT PATH", "HTTP/1.0 GET; prints the status line and the body size" },
        { "raw", 3, cmd_raw, "IFACE DST PORT", "a UDP frame via AF_PACKET from the real MAC and IP (the control)" },
        { "spoof-ip", 4, cmd_spoof_ip, "IFACE SRC DST PORT", "the same frame from a forged source IP" },
        { "spoof-mac", 4, cmd_spoof_mac, "IFACE MAC DST PORT", "the same frame from a forged source MAC" },
        { "vlan", 4, cmd_vlan, "IFACE VID DST PORT", "the same frame with an 802.1Q tag" },
        { "ipv6", 3, cmd_ipv6, "IFACE DST6 PORT", "a UDP datagram to an IPv6 address (socket; AF_PACKET when\n"
                                                  "                                the kernel has no route, or with --raw)" },
};

static void usage(FILE *f) {
        fprintf(f, "usage: guest-probe [OPTIONS] COMMAND ARGS...\n\n"
                   "Network probes for the egress tests. One result line on stdout:\n"
                   "  probe=CMD result=ok|fail reason=WHY [key=value...] us=N ms=N\n"
                   "Exit status: 0 ok, 1 fail, 2 usage. HOST is a numeric IPv4/IPv6 address, or a\n"
                   "name looked up through --resolver. Frames sent by raw/spoof-*/vlan/ipv6 carry\n"
                   "\"seatd-probe key=KEY\" (printed as key=KEY) for a receiver to record.\n\nCommands:\n");
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                fprintf(f, "  %-9s %-19s %s\n", commands[i].name, commands[i].args, commands[i].help);
        fprintf(f, "\nOptions:\n"
                   "  --timeout-ms N   bound on every wait (default %d)\n"
                   "  --send TEXT      tcp: line to send; udp: payload\n"
                   "  --expect STR     the reply must contain STR\n"
                   "  --bind ADDR      tcp/udp: source address\n"
                   "  --resolver IP    look up non-numeric HOSTs with this DNS server\n"
                   "  --key KEY        the key in crafted payloads (default: random)\n"
                   "  --gw IP          next hop to ARP for (default: on-link dst or default route)\n"
                   "  --gw-mac MAC     destination MAC for crafted frames (skips ARP)\n"
                   "  --src6 ADDR      ipv6 --raw: source address (default: EUI-64 link-local)\n"
                   "  --sport N        crafted frames, udp: UDP source port\n"
                   "  --window N       scan: connects in flight (default %d)\n"
                   "  --raw            ipv6: always AF_PACKET\n"
                   "  --count N        crafted frames, ipv6: send N copies 100 ms apart (default 1)\n",
                DEFAULT_TIMEOUT_MS, DEFAULT_SCAN_WINDOW);
}

static int parse_uint(const char *s, unsigned max, unsigned *ret) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || end == s || *end || v > max)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "timeout-ms", required_argument, NULL, 't' }, { "send", required_argument, NULL, 's' },
                { "expect", required_argument, NULL, 'e' },     { "bind", required_argument, NULL, 'b' },
                { "resolver", required_argument, NULL, 'r' },   { "key", required_argument, NULL, 'k' },
                { "gw", required_argument, NULL, 'g' },         { "gw-mac", required_argument, NULL, 'm' },
                { "src6", required_argument, NULL, '6' },       { "sport", required_argument, NULL, 'p' },
                { "window", required_argument, NULL, 'w' },     { "raw", no_argument, NULL, 'R' },
                { "count", required_argument, NULL, 'c' },
                { "help", no_argument, NULL, 'h' },             {},
        };
        Options o = { .timeout_ms = DEFAULT_TIMEOUT_MS, .count = 1 };
        unsigned v;
        int c;

        t_start_us = now_us();
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 't':
                        if (parse_uint(optarg, 600000, &v) < 0 || v == 0)
                                goto bad;
                        o.timeout_ms = (int) v;
                        o.timeout_set = true;
                        break;
                case 's':
                        o.send = optarg;
                        break;
                case 'e':
                        o.expect = optarg;
                        break;
                case 'b':
                        o.bind = optarg;
                        break;
                case 'r':
                        o.resolver = optarg;
                        break;
                case 'k':
                        for (const char *p = optarg; *p; p++)
                                if (!plain_char((unsigned char) *p))
                                        goto bad;
                        if (!*optarg || strlen(optarg) > 64)
                                goto bad;
                        o.key = optarg;
                        break;
                case 'g':
                        o.gw = optarg;
                        break;
                case 'm':
                        o.gw_mac = optarg;
                        break;
                case '6':
                        o.src6 = optarg;
                        break;
                case 'p':
                        if (parse_uint(optarg, 65535, &o.sport) < 0 || o.sport == 0)
                                goto bad;
                        break;
                case 'w':
                        if (parse_uint(optarg, SCAN_WINDOW_MAX, &o.window) < 0 || o.window == 0)
                                goto bad;
                        break;
                case 'c':
                        if (parse_uint(optarg, 100, &o.count) < 0 || o.count == 0)
                                goto bad;
                        break;
                case 'R':
                        o.raw = true;
                        break;
                case 'h':
                        usage(stdout);
                        return EXIT_OK;
                default:
                        goto bad;
                }
        if (optind >= argc)
                goto bad;
        for (size_t i = 0; i < ELEMENTSOF(commands); i++) {
                if (strcmp(argv[optind], commands[i].name) != 0)
                        continue;
                if ((unsigned) (argc - optind - 1) != commands[i].nargs)
                        goto bad;
                probe_name = commands[i].name;
                int r = commands[i].run(&o, argv + optind + 1);
                if (r == EXIT_USAGE)
                        goto bad;
                return r;
        }
bad:
        finish(false, "usage");
        usage(stderr);
        return EXIT_USAGE;
}
