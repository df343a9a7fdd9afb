/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/macro.h"
#include "pool-state.h"

#define HEADER "seatd-pools 1\n"
#define LINE_MAX_BYTES 256U

bool pool_egress_name_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;
        return n > 0 && n <= POOL_EGRESS_MAX && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

static bool spec_valid(const PoolSpec *p) {
        return image_name_valid(p->image) && (!p->egress[0] || pool_egress_name_valid(p->egress)) && p->ready >= 1 &&
               p->ready <= POOL_READY_MAX;
}

/* "key=value" at *s, the value up to the next space or the end; leaves *s at that space
 * or end (the caller says which it wants: the text must format back byte for byte). */
static int take_field(const char **s, const char *key, char *out, size_t size) {
        size_t k = strlen(key);
        if (strncmp(*s, key, k) != 0 || (*s)[k] != '=')
                return -EBADMSG;
        const char *v = *s + k + 1, *end = strchr(v, ' ');
        size_t n = end ? (size_t) (end - v) : strlen(v);
        if (n == 0 || n >= size)
                return -EBADMSG;
        memcpy(out, v, n);
        out[n] = '\0';
        *s = v + n;
        return 0;
}

static int parse_ready(const char *v, int64_t *ret) {
        int64_t n = 0;
        if (!*v || strlen(v) > 2 || strspn(v, "0123456789") != strlen(v) || v[0] == '0')
                return -EBADMSG;
        for (const char *p = v; *p; p++)
                n = n * 10 + (*p - '0');
        *ret = n;
        return 0;
}

static int parse_line(const char *line, PoolSpec *ret) {
        const char *s = line;
        char ready[8];
        PoolSpec p = {};
        if (strncmp(s, "pool ", 5) != 0)
                return -EBADMSG;
        s += 5;
        if (take_field(&s, "image", p.image, sizeof(p.image)) < 0 || *s++ != ' ' ||
            take_field(&s, "egress", p.egress, sizeof(p.egress)) < 0 || *s++ != ' ' ||
            take_field(&s, "ready", ready, sizeof(ready)) < 0 || *s || parse_ready(ready, &p.ready) < 0)
                return -EBADMSG;
        if (!strcmp(p.egress, "-"))
                p.egress[0] = '\0';
        else if (!pool_egress_name_valid(p.egress))
                return -EBADMSG;
        if (!spec_valid(&p))
                return -EBADMSG;
        *ret = p;
        return 0;
}

int pool_state_parse(const char *text, size_t len, PoolSpec **ret, size_t *ret_n) {
        if (len > POOL_STATE_MAX || len < strlen(HEADER) || memcmp(text, HEADER, strlen(HEADER)) != 0 ||
            memchr(text, '\0', len) || text[len - 1] != '\n')
                return -EBADMSG;
        _cleanup_free_ PoolSpec *specs = calloc(POOLS_MAX, sizeof(PoolSpec));
        size_t n = 0;
        if (!specs)
                return -ENOMEM;
        for (size_t off = strlen(HEADER); off < len;) {
                const char *nl = memchr(text + off, '\n', len - off);
                size_t l = (size_t) (nl - (text + off)); /* the text ends in '\n' */
                char line[LINE_MAX_BYTES];
                if (l >= sizeof(line) || n >= POOLS_MAX)
                        return -EBADMSG;
                memcpy(line, text + off, l);
                line[l] = '\0';
                if (parse_line(line, &specs[n]) < 0)
                        return -EBADMSG;
                for (size_t i = 0; i < n; i++)
                        if (!strcmp(specs[i].image, specs[n].image) && !strcmp(specs[i].egress, specs[n].egress))
                                return -EBADMSG; /* one pool per image and profile */
                n++;
                off += l + 1;
        }
        *ret = TAKE_PTR(specs);
        *ret_n = n;
        return 0;
}

int pool_state_format(const PoolSpec *specs, size_t n, char **ret, size_t *ret_len) {
        size_t cap = strlen(HEADER) + n * LINE_MAX_BYTES + 1, len = strlen(HEADER);
        if (n > POOLS_MAX)
                return -EINVAL;
        _cleanup_free_ char *out = malloc(cap);
        if (!out)
                return -ENOMEM;
        memcpy(out, HEADER, len + 1);
        for (size_t i = 0; i < n; i++) {
                if (!spec_valid(&specs[i]))
                        return -EINVAL;
                int k = snprintf(out + len, cap - len, "pool image=%s egress=%s ready=%" PRId64 "\n", specs[i].image,
                                 specs[i].egress[0] ? specs[i].egress : "-", specs[i].ready);
                if (k < 0 || (size_t) k >= LINE_MAX_BYTES)
                        return -EINVAL;
                len += (size_t) k;
        }
        *ret_len = len;
        *ret = TAKE_PTR(out);
        return 0;
}
