/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fileio.h"
#include "warm-state.h"

#define MAGIC "seatd-warm-state 1"
#define SIZE_MAX_ACCEPTED ((uint64_t) 1 << 50) /* 1 PiB: a save file is never bigger */

static bool charset_ok(const char *s, const char *allowed) {
        return *s && strspn(s, allowed) == strlen(s);
}

#define LOWER_ALNUM "abcdefghijklmnopqrstuvwxyz0123456789"
#define NAME_CHARS LOWER_ALNUM "ABCDEFGHIJKLMNOPQRSTUVWXYZ._-"
#define HEX "0123456789abcdef"

static bool hex_ok(const char *s, size_t len) {
        return strlen(s) == len && charset_ok(s, HEX);
}

static bool uuid_ok(const char *s) {
        if (strlen(s) != WARM_UUID_LEN)
                return false;
        for (size_t i = 0; i < WARM_UUID_LEN; i++)
                if ((i == 8 || i == 13 || i == 18 || i == 23) ? s[i] != '-' : !strchr(HEX, s[i]) || !s[i])
                        return false;
        return true;
}

static bool meta_valid(const WarmMeta *m) {
        return charset_ok(m->slot, LOWER_ALNUM) && charset_ok(m->domain, NAME_CHARS) && uuid_ok(m->uuid) &&
               charset_ok(m->image, NAME_CHARS) && hex_ok(m->image_digest, SEAT_HASH_HEX_LEN) &&
               hex_ok(m->state_hash, SEAT_HASH_HEX_LEN) && hex_ok(m->overlay_hash, SEAT_HASH_HEX_LEN) &&
               m->state_size > 0 && m->state_size <= SIZE_MAX_ACCEPTED && m->overlay_size > 0 &&
               m->overlay_size <= SIZE_MAX_ACCEPTED && m->created >= 0;
}

static void mac_of(const char *body, size_t len, const uint8_t key[WARM_KEY_BYTES], uint8_t out[WARM_MAC_BYTES]) {
        crypto_generichash(out, WARM_MAC_BYTES, (const uint8_t *) body, len, key, WARM_KEY_BYTES);
}

int warm_meta_format(const WarmMeta *m, const uint8_t key[WARM_KEY_BYTES], char **ret, size_t *ret_len) {
        char *body = NULL, *out = NULL, mac_hex[2 * WARM_MAC_BYTES + 1];
        uint8_t mac[WARM_MAC_BYTES];
        if (!meta_valid(m))
                return -EINVAL;
        int n = asprintf(&body,
                         MAGIC "\nslot=%s\ndomain=%s\nuuid=%s\nimage=%s\nimage_digest=%s\nstate_blake2b=%s\n"
                               "state_size=%" PRIu64 "\noverlay_blake2b=%s\noverlay_size=%" PRIu64 "\ncreated=%" PRId64 "\n",
                         m->slot, m->domain, m->uuid, m->image, m->image_digest, m->state_hash, m->state_size,
                         m->overlay_hash, m->overlay_size, m->created);
        if (n < 0)
                return -ENOMEM;
        mac_of(body, (size_t) n, key, mac);
        (void) digest_to_hex(mac, sizeof(mac), mac_hex, sizeof(mac_hex));
        int k = asprintf(&out, "%smac=%s\n", body, mac_hex);
        free(body);
        if (k < 0)
                return -ENOMEM;
        *ret = out;
        *ret_len = (size_t) k;
        return 0;
}

/* "key=value\n" at *pos, key as expected; the value (without newline) into out. */
static int take_line(const char *text, size_t len, size_t *pos, const char *key, char *out, size_t size) {
        size_t kl = strlen(key);
        const char *p = text + *pos;
        size_t left = len - *pos;
        if (left < kl + 1 || memcmp(p, key, kl) != 0 || p[kl] != '=')
                return -EBADMSG;
        const char *v = p + kl + 1, *nl = memchr(v, '\n', left - kl - 1);
        if (!nl || (size_t) (nl - v) >= size)
                return -EBADMSG;
        memcpy(out, v, (size_t) (nl - v));
        out[nl - v] = '\0';
        *pos = (size_t) (nl - text) + 1;
        return 0;
}

static int parse_u64(const char *s, uint64_t *ret) {
        if (!*s || strlen(s) > 19 || strspn(s, "0123456789") != strlen(s) || (s[0] == '0' && s[1]))
                return -EBADMSG;
        *ret = strtoull(s, NULL, 10);
        return 0;
}

int warm_meta_parse(const char *text, size_t len, const uint8_t key[WARM_KEY_BYTES], WarmMeta *ret) {
        WarmMeta m = {};
        char num[24], mac_hex[2 * WARM_MAC_BYTES + 1];
        uint8_t mac[WARM_MAC_BYTES], want[WARM_MAC_BYTES];
        uint64_t created;
        size_t pos = sizeof(MAGIC);

        if (len > WARM_META_MAX || len < sizeof(MAGIC) || memchr(text, '\0', len) ||
            memcmp(text, MAGIC "\n", sizeof(MAGIC)) != 0)
                return -EBADMSG;
        if (take_line(text, len, &pos, "slot", m.slot, sizeof(m.slot)) < 0 ||
            take_line(text, len, &pos, "domain", m.domain, sizeof(m.domain)) < 0 ||
            take_line(text, len, &pos, "uuid", m.uuid, sizeof(m.uuid)) < 0 ||
            take_line(text, len, &pos, "image", m.image, sizeof(m.image)) < 0 ||
            take_line(text, len, &pos, "image_digest", m.image_digest, sizeof(m.image_digest)) < 0 ||
            take_line(text, len, &pos, "state_blake2b", m.state_hash, sizeof(m.state_hash)) < 0 ||
            take_line(text, len, &pos, "state_size", num, sizeof(num)) < 0 || parse_u64(num, &m.state_size) < 0 ||
            take_line(text, len, &pos, "overlay_blake2b", m.overlay_hash, sizeof(m.overlay_hash)) < 0 ||
            take_line(text, len, &pos, "overlay_size", num, sizeof(num)) < 0 || parse_u64(num, &m.overlay_size) < 0 ||
            take_line(text, len, &pos, "created", num, sizeof(num)) < 0 || parse_u64(num, &created) < 0 ||
            created > INT64_MAX)
                return -EBADMSG;
        m.created = (int64_t) created;
        size_t body_len = pos;
        /* lowercase only, as written: what parses must format back byte for byte */
        if (take_line(text, len, &pos, "mac", mac_hex, sizeof(mac_hex)) < 0 || pos != len ||
            !hex_ok(mac_hex, 2 * WARM_MAC_BYTES) || digest_from_hex(mac_hex, strlen(mac_hex), mac, sizeof(mac)) < 0 ||
            !meta_valid(&m))
                return -EBADMSG;
        mac_of(text, body_len, key, want);
        if (sodium_memcmp(mac, want, sizeof(mac)) != 0)
                return -EKEYREJECTED;
        *ret = m;
        return 0;
}

int warm_meta_matches(const WarmMeta *m, const char *slot, const char *domain, const char *image_digest,
                      const char **ret_why) {
        if (strcmp(m->slot, slot) != 0) {
                *ret_why = "it belongs to another seat slot";
                return -ESTALE;
        }
        if (strcmp(m->domain, domain) != 0) {
                *ret_why = "it was saved for another domain identity";
                return -ESTALE;
        }
        if (strcmp(m->image_digest, image_digest) != 0) {
                *ret_why = "it was made from another image version";
                return -ESTALE;
        }
        return 0;
}

int warm_file_hash(const char *path, char hex[SEAT_HASH_HEX_LEN + 1], uint64_t *ret_size) {
        uint8_t d[SEAT_HASH_BYTES];
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0)
                return -errno;
        int r = blake2b_fd(fd, SIZE_MAX_ACCEPTED, d, ret_size);
        if (r < 0)
                return r;
        return digest_to_hex(d, sizeof(d), hex, SEAT_HASH_HEX_LEN + 1);
}

int warm_key_load(const char *path, uint8_t key[WARM_KEY_BYTES], SeatError **ret_error) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        struct stat st;
        if (fd < 0 && errno == ENOENT) {
                uint8_t k[WARM_KEY_BYTES];
                randombytes_buf(k, sizeof(k));
                int r = write_file_atomic(path, k, sizeof(k), 0600);
                if (r < 0) {
                        sodium_memzero(k, sizeof(k));
                        return seat_error_set(ret_error, -r, "make the warm-state key '%s': %s", path, strerror(-r));
                }
                memcpy(key, k, sizeof(k));
                sodium_memzero(k, sizeof(k));
                return 0;
        }
        if (fd < 0)
                return seat_error_set(ret_error, errno, "open the warm-state key '%s': %m", path);
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != WARM_KEY_BYTES || (st.st_mode & 0077))
                return seat_error_set(ret_error, EBADMSG,
                                      "the warm-state key '%s' is not a %u-byte file of mode 0600: remove it (and the saved states in its directory) and restart seatd",
                                      path, WARM_KEY_BYTES);
        ssize_t n = loop_read(fd, key, WARM_KEY_BYTES);
        if (n != (ssize_t) WARM_KEY_BYTES)
                return seat_error_set(ret_error, EIO, "read the warm-state key '%s': short read", path);
        return 0;
}
