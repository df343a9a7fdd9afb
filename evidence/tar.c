/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tar.c: the ustar stream inside an archive: headers written, and read back strictly member by member. */
#include "archive-internal.h"

uint64_t tar_padded(uint64_t n) {
        return (n + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;
}

static void octal(char *field, size_t width, uint64_t v) {
        /* width-1 octal digits (v fits: sizes are capped) and a NUL */
        field[width - 1] = '\0';
        for (size_t i = width - 1; i > 0; i--, v >>= 3)
                field[i - 1] = (char) ('0' + (v & 7));
}

void tar_header(const ArchiveMember *a, int64_t mtime_s, uint8_t block[TAR_BLOCK]) {
        char *h = (char *) block;
        unsigned sum = 0;

        memset(block, 0, TAR_BLOCK);
        memcpy(h, a->path, strlen(a->path));            /* name */
        octal(h + 100, 8, 0600);                          /* mode */
        octal(h + 108, 8, 0);                             /* uid */
        octal(h + 116, 8, 0);                             /* gid */
        octal(h + 124, 12, a->size);                      /* size */
        octal(h + 136, 12, (uint64_t) MAX(mtime_s, 0));   /* mtime */
        memset(h + 148, ' ', 8);                          /* chksum, spaces while summing */
        h[156] = '0';                                     /* regular file */
        memcpy(h + 257, "ustar", 6);                      /* magic "ustar\0" */
        memcpy(h + 263, "00", 2);                         /* version */
        memcpy(h + 265, "seatd", 5);                      /* uname */
        memcpy(h + 297, "seatd", 5);                      /* gname */
        for (size_t i = 0; i < TAR_BLOCK; i++)
                sum += block[i];
        snprintf(h + 148, 8, "%06o", sum);                /* 6 digits, NUL, space */
        h[155] = ' ';
}
/* ---- tar stream on open ---------------------------------------------------------- */

static uint64_t parse_octal(const char *f, size_t width, bool *ok) {
        uint64_t v = 0;
        size_t i = 0;
        for (; i < width && f[i] >= '0' && f[i] <= '7'; i++)
                v = v * 8 + (uint64_t) (f[i] - '0');
        *ok = i > 0 && i < width && (f[i] == '\0' || f[i] == ' ');
        return v;
}

static int tar_check_header(TarReader *t, SeatError **ret_error) {
        const ArchiveMember *a = t->m->members + t->member;
        const char *h = (const char *) t->block;
        unsigned sum = 0;
        bool ok1, ok2;

        for (size_t i = 0; i < TAR_BLOCK; i++)
                sum += (i >= 148 && i < 156) ? ' ' : t->block[i];
        uint64_t want_sum = parse_octal(h + 148, 8, &ok1), size = parse_octal(h + 124, 12, &ok2);
        if (!ok1 || want_sum != sum || memcmp(h + 257, "ustar", 6) != 0 || h[156] != '0')
                return seat_error_set(ret_error, EBADMSG, "tar header of member %zu is malformed", t->member + 1);
        if (strnlen(h, 100) != strlen(a->path) || memcmp(h, a->path, strlen(a->path)) != 0)
                return seat_error_set(ret_error, EBADMSG, "tar member %zu is not named '%s' as the manifest says",
                                      t->member + 1, a->path);
        if (!ok2 || size != a->size)
                return seat_error_set(ret_error, EBADMSG, "tar member %zu ('%s') has another size than the manifest",
                                      t->member + 1, a->name);
        return 0;
}

static void tar_next_member(TarReader *t) {
        t->member++;
        t->have = 0;
        if (t->member == t->m->n_members) {
                t->phase = TAR_TRAILER;
                t->left = 2 * TAR_BLOCK;
        } else
                t->phase = TAR_HEADER;
}

static int tar_end_data(TarReader *t, SeatError **ret_error) {
        const ArchiveMember *a = t->m->members + t->member;
        uint8_t d[64];
        crypto_generichash_final(&t->h, d, sizeof(d));
        if (sodium_memcmp(d, a->digest, sizeof(d)) != 0)
                return seat_error_set(ret_error, EKEYREJECTED,
                                      "member %zu ('%s'): its BLAKE2b-512 does not match the manifest", t->member + 1,
                                      a->name);
        t->left = tar_padded(a->size) - a->size;
        t->phase = TAR_PAD;
        if (t->left == 0)
                tar_next_member(t);
        return 0;
}

int tar_feed(TarReader *t, const uint8_t *p, size_t len, SeatError **ret_error) {
        int r;
        while (len > 0) {
                switch (t->phase) {
                case TAR_HEADER: {
                        size_t n = MIN(len, TAR_BLOCK - t->have);
                        memcpy(t->block + t->have, p, n);
                        t->have += n, p += n, len -= n;
                        if (t->have < TAR_BLOCK)
                                break;
                        r = tar_check_header(t, ret_error);
                        if (r < 0)
                                return r;
                        crypto_generichash_init(&t->h, NULL, 0, 64);
                        t->left = t->m->members[t->member].size;
                        t->phase = TAR_DATA;
                        if (t->left == 0) {
                                r = tar_end_data(t, ret_error);
                                if (r < 0)
                                        return r;
                        }
                        break;
                }
                case TAR_DATA: {
                        size_t n = (size_t) MIN((uint64_t) len, t->left);
                        crypto_generichash_update(&t->h, p, n);
                        r = loop_write(t->fds[t->member], p, n);
                        if (r < 0)
                                return seat_error_set(ret_error, -r, "cannot write member %zu: %s", t->member + 1,
                                                      strerror(-r));
                        t->left -= n, p += n, len -= n;
                        if (t->left == 0) {
                                r = tar_end_data(t, ret_error);
                                if (r < 0)
                                        return r;
                        }
                        break;
                }
                case TAR_PAD:
                case TAR_TRAILER: {
                        size_t n = (size_t) MIN((uint64_t) len, t->left);
                        for (size_t i = 0; i < n; i++)
                                if (p[i] != 0)
                                        return seat_error_set(ret_error, EBADMSG,
                                                              "the tar stream has non-zero padding after member %zu",
                                                              t->member + (t->phase == TAR_PAD));
                        t->left -= n, p += n, len -= n;
                        if (t->left == 0) {
                                if (t->phase == TAR_PAD)
                                        tar_next_member(t);
                                else
                                        t->phase = TAR_DONE;
                        }
                        break;
                }
                case TAR_DONE:
                        return seat_error_set(ret_error, EBADMSG, "data after the end of the tar stream");
                }
        }
        return 0;
}
