/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "common/fileio.h"
#include "common/log.h"
#include "profile.h"

#define MAX_TOKENS 8

/* Destinations no profile can open (network/nft.c drops them before any allow). */
const char *const egress_blocked_ipv4[] = {
        "0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "255.255.255.255", NULL,
};
const char *const egress_blocked_ipv6[] = {
        "::1", "fe80::/10", "ff00::/8", NULL,
};

static const char *const proto_names[_EGRESS_PROTO_MAX] = {
        [EGRESS_PROTO_TCP] = "tcp",
        [EGRESS_PROTO_UDP] = "udp",
        [EGRESS_PROTO_ICMP] = "icmp",
};

const char *egress_proto_to_string(EgressProto p) {
        return p >= 0 && p < _EGRESS_PROTO_MAX ? proto_names[p] : NULL;
}

static int proto_from_string(const char *s, EgressProto *ret) {
        for (size_t i = 0; i < _EGRESS_PROTO_MAX; i++)
                if (strcmp(s, proto_names[i]) == 0) {
                        *ret = (EgressProto) i;
                        return 0;
                }
        return -EINVAL;
}

EgressProfile *egress_profile_free(EgressProfile *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_rules; i++)
                free(p->rules[i].name);
        free(p->rules);
        return mfree(p);
}

static unsigned addr_bits(int family) {
        return family == AF_INET ? 32 : 128;
}

static bool addr_host_bits_zero(const EgressAddr *a) {
        unsigned bits = addr_bits(a->family);
        for (unsigned i = a->prefixlen; i < bits; i++)
                if (a->addr[i / 8] & (0x80u >> (i % 8)))
                        return false;
        return true;
}

static int parse_uint(const char *s, unsigned max, unsigned *ret) {
        unsigned v = 0;
        if (!*s || strlen(s) > 9 || (s[0] == '0' && s[1])) /* 9 digits: no overflow */
                return -EINVAL;
        for (const char *c = s; *c; c++) {
                if (*c < '0' || *c > '9')
                        return -EINVAL;
                v = v * 10 + (unsigned) (*c - '0');
        }
        if (v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

int egress_addr_parse(const char *s, EgressAddr *ret) {
        char host[INET6_ADDRSTRLEN];
        EgressAddr a = {};
        const char *slash = strchr(s, '/');
        size_t hlen = slash ? (size_t) (slash - s) : strlen(s);

        if (hlen == 0 || hlen >= sizeof(host))
                return -EINVAL;
        memcpy(host, s, hlen);
        host[hlen] = 0;
        if (inet_pton(AF_INET, host, a.addr) == 1)
                a.family = AF_INET;
        else if (inet_pton(AF_INET6, host, a.addr) == 1)
                a.family = AF_INET6;
        else
                return -EINVAL;
        a.prefixlen = addr_bits(a.family);
        if (slash && parse_uint(slash + 1, addr_bits(a.family), &a.prefixlen) < 0)
                return -EINVAL;
        if (!addr_host_bits_zero(&a))
                return -EINVAL;
        *ret = a;
        return 0;
}

int egress_addr_format(const EgressAddr *a, char *buf, size_t size) {
        char host[INET6_ADDRSTRLEN];
        if (!inet_ntop(a->family, a->addr, host, sizeof(host)))
                return -EINVAL;
        int n = a->prefixlen == addr_bits(a->family) ? snprintf(buf, size, "%s", host)
                                                     : snprintf(buf, size, "%s/%u", host, a->prefixlen);
        return n < 0 || (size_t) n >= size ? -ENOBUFS : 0;
}

bool egress_addr_within(const EgressAddr *a, const EgressAddr *b) {
        if (a->family != b->family || a->prefixlen < b->prefixlen)
                return false;
        for (unsigned i = 0; i < b->prefixlen; i++) {
                uint8_t m = (uint8_t) (0x80u >> (i % 8));
                if ((a->addr[i / 8] & m) != (b->addr[i / 8] & m))
                        return false;
        }
        return true;
}

static bool addr_always_blocked(const EgressAddr *a) {
        const char *const *l = a->family == AF_INET ? egress_blocked_ipv4 : egress_blocked_ipv6;
        for (; *l; l++) {
                EgressAddr b;
                if (egress_addr_parse(*l, &b) == 0 && egress_addr_within(a, &b))
                        return true;
        }
        return false;
}

static int parse_ports(const char *s, uint16_t *ret_lo, uint16_t *ret_hi) {
        char lo[8], hi[8];
        const char *dash = strchr(s, '-');
        unsigned l, h;

        if (!dash) {
                if (parse_uint(s, 65535, &l) < 0 || l == 0)
                        return -EINVAL;
                *ret_lo = *ret_hi = (uint16_t) l;
                return 0;
        }
        size_t ln = (size_t) (dash - s), hn = strlen(dash + 1);
        if (ln == 0 || ln >= sizeof(lo) || hn == 0 || hn >= sizeof(hi))
                return -EINVAL;
        memcpy(lo, s, ln);
        lo[ln] = 0;
        memcpy(hi, dash + 1, hn + 1);
        if (parse_uint(lo, 65535, &l) < 0 || parse_uint(hi, 65535, &h) < 0 || l == 0 || l >= h)
                return -EINVAL;
        *ret_lo = (uint16_t) l;
        *ret_hi = (uint16_t) h;
        return 0;
}

/* A DNS name: labels of [a-z0-9-], 1..63 bytes, no hyphen at either end, at least two
 * labels, at most EGRESS_NAME_MAX bytes; lowercased. A leading "*." (a wildcard: every
 * name below the rest, at any depth, not the rest itself) is allowed before them. */
static int parse_dns_name(const char *s, char **ret) {
        size_t n = strlen(s), label = 0, labels = 1, start = 0;
        if (n == 0 || n > EGRESS_NAME_MAX)
                return -EINVAL;
        _cleanup_free_ char *d = strdup(s);
        if (!d)
                return -ENOMEM;
        if (n > 2 && d[0] == '*' && d[1] == '.')
                start = 2;
        for (size_t i = start; i < n; i++) {
                char c = (char) tolower((unsigned char) d[i]);
                d[i] = c;
                if (c == '.') {
                        if (label == 0 || d[i - 1] == '-')
                                return -EINVAL;
                        label = 0;
                        labels++;
                        continue;
                }
                if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
                        return -EINVAL;
                if (c == '-' && label == 0)
                        return -EINVAL;
                if (++label > 63)
                        return -EINVAL;
        }
        if (label == 0 || d[n - 1] == '-' || labels < 2)
                return -EINVAL;
        *ret = TAKE_PTR(d);
        return 0;
}

typedef struct Parser {
        EgressProfile *p;
        size_t allocated;
        unsigned line;
        bool seen_dhcp, seen_capture, seen_ipv6, seen_dns_host;
        SeatError **error;
} Parser;

static int fail(Parser *ps, int err, const char *what) {
        return seat_error_set(ps->error, err, "egress profile line %u: %s", ps->line, what);
}

static int push_rule(Parser *ps, EgressRule *r) {
        if (ps->p->n_rules >= EGRESS_PROFILE_MAX_RULES)
                return seat_error_set(ps->error, E2BIG, "egress profile line %u: more than %u allow rules", ps->line,
                                      EGRESS_PROFILE_MAX_RULES);
        if (ps->p->n_rules == ps->allocated) {
                size_t n = ps->allocated ? ps->allocated * 2 : 8;
                EgressRule *rules = reallocarray(ps->p->rules, n, sizeof(*rules));
                if (!rules)
                        return -ENOMEM;
                ps->p->rules = rules;
                ps->allocated = n;
        }
        r->line = ps->line;
        ps->p->rules[ps->p->n_rules++] = *r;
        return 0;
}

/* "<tcp|udp> port N[-M]" or "icmp" starting at tok[0]; n tokens left. */
static int parse_proto_ports(Parser *ps, char **tok, size_t n, EgressRule *r) {
        if (n == 0 || proto_from_string(tok[0], &r->proto) < 0)
                return fail(ps, EINVAL, "expected 'tcp', 'udp' or 'icmp'");
        if (r->proto == EGRESS_PROTO_ICMP)
                return n == 1 ? 0 : fail(ps, EINVAL, "icmp takes no port");
        if (n != 3 || strcmp(tok[1], "port") != 0)
                return fail(ps, EINVAL, "expected 'port N' or 'port N-M' after the protocol");
        if (parse_ports(tok[2], &r->port_lo, &r->port_hi) < 0)
                return fail(ps, EINVAL, "ports are 1-65535, a range as N-M with N < M");
        return 0;
}

static int parse_allow(Parser *ps, char **tok, size_t n) {
        EgressRule r = {};
        int k;

        if (n >= 2 && strcmp(tok[1], "name") == 0) {
                /* allow name <dns-name> <proto> port <ports> */
                if (n < 4)
                        return fail(ps, EINVAL, "expected 'allow name NAME PROTO port N'");
                k = parse_proto_ports(ps, tok + 3, n - 3, &r);
                if (k < 0)
                        return k;
                if (r.proto == EGRESS_PROTO_ICMP)
                        return fail(ps, EINVAL, "'allow name' takes tcp or udp");
                k = parse_dns_name(tok[2], &r.name);
                if (k == -ENOMEM)
                        return k;
                if (k < 0)
                        return fail(ps, EINVAL, "not a DNS name (labels of a-z, 0-9, '-')");
                k = push_rule(ps, &r);
                if (k < 0)
                        free(r.name);
                return k;
        }

        /* allow <proto> <cidr> [port <ports>] */
        if (n < 3)
                return fail(ps, EINVAL, "expected 'allow PROTO ADDRESS[/LEN] port N'");
        if (egress_addr_parse(tok[2], &r.dest) < 0)
                return fail(ps, EINVAL, "not an address or a prefix without host bits");
        tok[2] = tok[1]; /* reuse parse_proto_ports on "<proto> port N" */
        k = parse_proto_ports(ps, tok + 2, n - 2, &r);
        if (k < 0)
                return k;
        if (addr_always_blocked(&r.dest))
                return fail(ps, EINVAL, "the destination is always blocked (loopback, link-local, metadata, multicast)");
        return push_rule(ps, &r);
}

static int parse_on_off(Parser *ps, char **tok, size_t n, const char *on, const char *off,
                        bool *seen, bool *ret) {
        if (*seen)
                return fail(ps, EINVAL, "directive given twice");
        if (n != 2 || (strcmp(tok[1], on) != 0 && strcmp(tok[1], off) != 0)) {
                char msg[64];
                (void) snprintf(msg, sizeof(msg), "expected '%s %s' or '%s %s'", tok[0], on, tok[0], off);
                return fail(ps, EINVAL, msg);
        }
        *seen = true;
        *ret = strcmp(tok[1], on) == 0;
        return 0;
}

/* capture on [snaplen N] [max_mib N] | capture off */
static int parse_capture(Parser *ps, char **tok, size_t n) {
        bool seen_snaplen = false, seen_max = false;
        if (n <= 2)
                return parse_on_off(ps, tok, n, "on", "off", &ps->seen_capture, &ps->p->capture);
        if (ps->seen_capture)
                return fail(ps, EINVAL, "directive given twice");
        if (strcmp(tok[1], "on") != 0)
                return fail(ps, EINVAL, "expected 'capture on [snaplen N] [max_mib N]' or 'capture off'");
        ps->seen_capture = ps->p->capture = true;
        for (size_t i = 2; i < n; i += 2) {
                unsigned v;
                if (i + 1 >= n)
                        return fail(ps, EINVAL, "expected a number after 'snaplen' or 'max_mib'");
                if (strcmp(tok[i], "snaplen") == 0 && !seen_snaplen) {
                        if (parse_uint(tok[i + 1], EGRESS_CAPTURE_SNAPLEN_MAX, &v) < 0 || v < EGRESS_CAPTURE_SNAPLEN_MIN)
                                return fail(ps, EINVAL, "snaplen is 64-262144 bytes");
                        ps->p->capture_snaplen = v;
                        seen_snaplen = true;
                } else if (strcmp(tok[i], "max_mib") == 0 && !seen_max) {
                        if (parse_uint(tok[i + 1], EGRESS_CAPTURE_MAX_MIB_MAX, &v) < 0 || v < EGRESS_CAPTURE_MAX_MIB_MIN)
                                return fail(ps, EINVAL, "max_mib is 1-4096");
                        ps->p->capture_max_mib = v;
                        seen_max = true;
                } else
                        return fail(ps, EINVAL, "expected 'snaplen N' or 'max_mib N', each at most once");
        }
        return 0;
}

static int parse_dns(Parser *ps, char **tok, size_t n) {
        EgressAddr a;
        if (n != 2)
                return fail(ps, EINVAL, "expected 'dns ADDRESS' or 'dns host'");
        if (strcmp(tok[1], "host") == 0) {
                if (ps->seen_dns_host)
                        return fail(ps, EINVAL, "directive given twice");
                ps->seen_dns_host = ps->p->dns_host = true;
                return 0;
        }
        if (egress_addr_parse(tok[1], &a) < 0 || a.prefixlen != addr_bits(a.family))
                return fail(ps, EINVAL, "not a single address");
        if (addr_always_blocked(&a))
                return fail(ps, EINVAL, "the destination is always blocked (loopback, link-local, metadata, multicast)");
        for (size_t i = 0; i < ps->p->n_dns; i++)
                if (memcmp(&ps->p->dns[i], &a, sizeof(a)) == 0)
                        return fail(ps, EINVAL, "DNS server given twice");
        if (ps->p->n_dns >= EGRESS_PROFILE_MAX_DNS)
                return fail(ps, E2BIG, "more than 4 DNS servers");
        ps->p->dns[ps->p->n_dns++] = a;
        return 0;
}

static int parse_line(Parser *ps, char *line) {
        char *tok[MAX_TOKENS];
        size_t n = 0;

        for (char *c = line; *c; c++)
                if ((unsigned char) *c >= 0x7f || ((unsigned char) *c < 0x20 && *c != '\t'))
                        return fail(ps, EINVAL, "control or non-ASCII byte");
        char *hash = strchr(line, '#');
        if (hash)
                *hash = 0;
        for (char *save = NULL, *t = strtok_r(line, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
                if (n == MAX_TOKENS)
                        return fail(ps, EINVAL, "too many words");
                tok[n++] = t;
        }
        if (n == 0)
                return 0;
        if (strcmp(tok[0], "allow") == 0)
                return parse_allow(ps, tok, n);
        if (strcmp(tok[0], "dns") == 0)
                return parse_dns(ps, tok, n);
        if (strcmp(tok[0], "dhcp") == 0)
                return parse_on_off(ps, tok, n, "on", "off", &ps->seen_dhcp, &ps->p->dhcp);
        if (strcmp(tok[0], "capture") == 0)
                return parse_capture(ps, tok, n);
        if (strcmp(tok[0], "ipv6") == 0)
                return parse_on_off(ps, tok, n, "allow", "deny", &ps->seen_ipv6, &ps->p->ipv6);
        return fail(ps, EINVAL, "unknown directive (allow, dns, dhcp, capture, ipv6)");
}

/* IPv6 destinations need "ipv6 allow", wherever it stands in the file. */
static int check_ipv6(Parser *ps) {
        if (ps->p->ipv6)
                return 0;
        for (size_t i = 0; i < ps->p->n_rules; i++)
                if (!ps->p->rules[i].name && ps->p->rules[i].dest.family == AF_INET6) {
                        ps->line = ps->p->rules[i].line;
                        return fail(ps, EINVAL, "an IPv6 destination needs 'ipv6 allow'");
                }
        for (size_t i = 0; i < ps->p->n_dns; i++)
                if (ps->p->dns[i].family == AF_INET6)
                        return seat_error_set(ps->error, EINVAL,
                                              "egress profile: an IPv6 DNS server needs 'ipv6 allow'");
        return 0;
}

int egress_profile_parse(const char *buf, size_t len, EgressProfile **ret, SeatError **ret_error) {
        _cleanup_egress_profile_ EgressProfile *p = calloc(1, sizeof(*p));
        Parser ps = { .p = p, .error = ret_error };
        char line[EGRESS_PROFILE_MAX_LINE + 1];
        int r;

        if (!p)
                return -ENOMEM;
        if (len > EGRESS_PROFILE_MAX_BYTES)
                return seat_error_set(ret_error, E2BIG, "egress profile is larger than %u bytes",
                                      EGRESS_PROFILE_MAX_BYTES);
        for (size_t pos = 0; pos < len;) {
                const char *nl = memchr(buf + pos, '\n', len - pos);
                size_t n = nl ? (size_t) (nl - (buf + pos)) : len - pos;

                ps.line++;
                if (n > EGRESS_PROFILE_MAX_LINE)
                        return fail(&ps, E2BIG, "line longer than 256 bytes");
                if (memchr(buf + pos, 0, n))
                        return fail(&ps, EINVAL, "NUL byte");
                memcpy(line, buf + pos, n);
                line[n] = 0;
                if (n > 0 && line[n - 1] == '\r')
                        line[n - 1] = 0;
                r = parse_line(&ps, line);
                if (r < 0)
                        return r;
                pos += n + (nl ? 1 : 0);
        }
        r = check_ipv6(&ps);
        if (r < 0)
                return r;
        if (p->capture && p->capture_snaplen == 0)
                p->capture_snaplen = EGRESS_CAPTURE_SNAPLEN_DEFAULT;
        if (p->capture && p->capture_max_mib == 0)
                p->capture_max_mib = EGRESS_CAPTURE_MAX_MIB_DEFAULT;
        *ret = TAKE_PTR(p);
        return 0;
}

int egress_profile_load(const char *path, EgressProfile **ret, SeatError **ret_error) {
        _cleanup_free_ char *buf = NULL;
        size_t n;
        int r = read_file_capped(path, EGRESS_PROFILE_MAX_BYTES, &buf, &n);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot read egress profile '%s': %s", path, strerror(-r));
        r = egress_profile_parse(buf, n, ret, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "egress profile '%s'", path);
        return 0;
}

bool egress_profile_has_names(const EgressProfile *p) {
        for (size_t i = 0; i < p->n_rules; i++)
                if (p->rules[i].name)
                        return true;
        return false;
}

int egress_profile_name_index(const EgressProfile *p, size_t i) {
        if (i >= p->n_rules || !p->rules[i].name)
                return -1;
        for (size_t j = 0; j < i; j++)
                if (p->rules[j].name && strcmp(p->rules[j].name, p->rules[i].name) == 0)
                        return (int) j;
        return (int) i;
}

static int format_rule(FILE *f, const EgressRule *r) {
        char addr[INET6_ADDRSTRLEN + 8];
        const char *proto = egress_proto_to_string(r->proto);

        if (!proto)
                return -EINVAL;
        if (r->name)
                fprintf(f, "allow name %s %s", r->name, proto);
        else {
                if (egress_addr_format(&r->dest, addr, sizeof(addr)) < 0)
                        return -EINVAL;
                fprintf(f, "allow %s %s", proto, addr);
        }
        if (r->proto != EGRESS_PROTO_ICMP) {
                if (r->port_lo == r->port_hi)
                        fprintf(f, " port %u", r->port_lo);
                else
                        fprintf(f, " port %u-%u", r->port_lo, r->port_hi);
        }
        fputc('\n', f);
        return 0;
}

int egress_profile_format(const EgressProfile *p, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        char addr[INET6_ADDRSTRLEN + 8];
        int r = 0;

        FILE *f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        fprintf(f, "ipv6 %s\ndhcp %s\n", p->ipv6 ? "allow" : "deny", p->dhcp ? "on" : "off");
        if (p->capture)
                fprintf(f, "capture on snaplen %u max_mib %u\n", p->capture_snaplen, p->capture_max_mib);
        else
                fputs("capture off\n", f);
        if (p->dns_host)
                fputs("dns host\n", f);
        for (size_t i = 0; i < p->n_dns && r >= 0; i++) {
                r = egress_addr_format(&p->dns[i], addr, sizeof(addr));
                if (r >= 0)
                        fprintf(f, "dns %s\n", addr);
        }
        for (size_t i = 0; i < p->n_rules && r >= 0; i++)
                r = format_rule(f, &p->rules[i]);
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        *ret = TAKE_PTR(buf);
        return 0;
}
