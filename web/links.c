/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/macro.h"
#include "links.h"
#include "slots.h"

#define LINK_MAGIC "seat-web-link 1\n"

/* "KEY VALUE\n" at *p: the value (NUL-terminated in out, at most out_size - 1 bytes). */
static int field(const char **p, const char *end, const char *key, char *out, size_t out_size) {
        size_t k = strlen(key);
        if ((size_t) (end - *p) < k + 1 || memcmp(*p, key, k) != 0 || (*p)[k] != ' ')
                return -EBADMSG;
        const char *v = *p + k + 1, *nl = memchr(v, '\n', (size_t) (end - v));
        if (!nl || (size_t) (nl - v) >= out_size || nl == v)
                return -EBADMSG;
        memcpy(out, v, (size_t) (nl - v));
        out[nl - v] = '\0';
        *p = nl + 1;
        return 0;
}

int web_link_parse(const char *buf, size_t len, WebLink *ret) {
        const char *p = buf, *end = buf + len;
        char expires[24];
        WebLink l = {};
        if (len > WEB_LINK_RECORD_MAX || len < strlen(LINK_MAGIC) || memcmp(buf, LINK_MAGIC, strlen(LINK_MAGIC)) != 0)
                return -EBADMSG;
        p += strlen(LINK_MAGIC);
        if (field(&p, end, "seat", l.seat, sizeof(l.seat)) < 0 || !web_seat_id_valid(l.seat) ||
            field(&p, end, "token", l.token, sizeof(l.token)) < 0 || !web_token_valid(l.token) ||
            field(&p, end, "expires", expires, sizeof(expires)) < 0 || p != end)
                return -EBADMSG;
        uint64_t e;
        if (web_parse_u64(expires, INT64_MAX, &e) < 0)
                return -EBADMSG;
        l.expires = (int64_t) e;
        *ret = l;
        sodium_memzero(&l, sizeof(l));
        return 0;
}

int web_link_format(const WebLink *l, char *buf, size_t size) {
        int n = snprintf(buf, size, LINK_MAGIC "seat %s\ntoken %s\nexpires %lld\n", l->seat, l->token, (long long) l->expires);
        return n < 0 || (size_t) n >= size ? -ENOBUFS : n;
}

static int links_dir(const WebConfig *c, char *out, size_t size) {
        int n = snprintf(out, size, "%s/links", c->state_dir);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

int web_link_issue(const WebConfig *c, const WebLink *l, char ret_id[WEB_SESSION_ID_LEN + 1], SeatError **ret_error) {
        slot_random_id(ret_id);
        return web_link_put(c, ret_id, l, ret_error);
}

int web_link_put(const WebConfig *c, const char *id, const WebLink *l, SeatError **ret_error) {
        char dir[4096], path[4200], text[WEB_LINK_RECORD_MAX + 1];
        struct stat st;
        int r;

        if (!web_session_id_valid(id))
                return seat_error_set(ret_error, EINVAL, "'%s' is not a link id", id);
        if (!web_seat_id_valid(l->seat) || !web_token_valid(l->token))
                return seat_error_set(ret_error, EINVAL, "a seat id and its 64-hex-digit token are needed");
        if (stat(c->state_dir, &st) < 0)
                return seat_error_set(ret_error, errno, "seat-web's state_dir '%s': %m (start seat-web once, or make it)",
                                      c->state_dir);
        if ((r = links_dir(c, dir, sizeof(dir))) < 0)
                return seat_error_set(ret_error, -r, "state_dir '%s' is too long", c->state_dir);
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return seat_error_set(ret_error, errno, "cannot make '%s': %m", dir);
        /* seat-web's user reads them: the directory and the record are state_dir's owner's. */
        if (chown(dir, st.st_uid, st.st_gid) < 0 && errno != EPERM)
                return seat_error_set(ret_error, errno, "cannot give '%s' to seat-web's user: %m", dir);
        (void) snprintf(path, sizeof(path), "%s/%s", dir, id);
        int n = web_link_format(l, text, sizeof(text));
        if (n < 0)
                return seat_error_set(ret_error, -n, "the link's record does not fit");
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                r = -errno;
        else if (fchown(fd, st.st_uid, st.st_gid) < 0 && errno != EPERM)
                r = -errno;
        else if (loop_write(fd, text, (size_t) n) < 0 || fsync(fd) < 0)
                r = -EIO;
        sodium_memzero(text, sizeof(text));
        if (r < 0) {
                (void) unlink(path);
                return seat_error_set(ret_error, -r, "cannot write the link '%s': %s", path, strerror(-r));
        }
        return 0;
}

int web_link_take(const WebConfig *c, const char *id, int64_t now_s, WebLink *ret) {
        char dir[4096], path[4200], text[WEB_LINK_RECORD_MAX + 1];
        if (!web_session_id_valid(id) || links_dir(c, dir, sizeof(dir)) < 0)
                return -ENOENT;
        (void) snprintf(path, sizeof(path), "%s/%s", dir, id);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
                return -ENOENT;
        /* Gone before it is read: whatever follows, it is never used twice. */
        if (unlink(path) < 0)
                return -ENOENT;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return -ENOENT;
        ssize_t n = loop_read(fd, text, sizeof(text));
        int r = n < 0 ? -ENOENT : web_link_parse(text, (size_t) n, ret);
        sodium_memzero(text, sizeof(text));
        if (r < 0)
                return -ENOENT;
        if (ret->expires <= now_s) {
                sodium_memzero(ret, sizeof(*ret));
                return -ETIME;
        }
        return 0;
}
