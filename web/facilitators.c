/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fileio.h"
#include "facilitators.h"

bool fac_name_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > FAC_NAME_MAX)
                return false;
        if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
                return false;
        return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

bool fac_hash_valid(const char *s) {
        size_t n = strlen(s);
        if (n > FAC_HASH_MAX || strncmp(s, "$argon2id$", 10) != 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (s[i] <= ' ' || s[i] >= 0x7f || s[i] == ':')
                        return false;
        return true;
}

int fac_users_parse(const char *buf, size_t len, FacUsers *ret) {
        const char *p = buf, *end = buf + len;
        memset(ret, 0, sizeof(*ret));
        if (len > FAC_FILE_MAX)
                return -EBADMSG;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *le = nl ? nl : end;
                size_t n = (size_t) (le - p);
                if (n == 0 || p[0] == '#') {
                        p = nl ? nl + 1 : end;
                        continue;
                }
                const char *colon = memchr(p, ':', n);
                if (!colon || memchr(p, '\0', n))
                        goto bad;
                size_t nn = (size_t) (colon - p), hn = (size_t) (le - colon - 1);
                if (nn > FAC_NAME_MAX || hn > FAC_HASH_MAX || ret->n >= FAC_USERS_MAX)
                        goto bad;
                FacUser *u = &ret->u[ret->n];
                memcpy(u->name, p, nn);
                u->name[nn] = '\0';
                memcpy(u->hash, colon + 1, hn);
                u->hash[hn] = '\0';
                if (!fac_name_valid(u->name) || !fac_hash_valid(u->hash) || fac_users_find(ret, u->name))
                        goto bad;
                ret->n++;
                p = nl ? nl + 1 : end;
        }
        return 0;
bad:
        sodium_memzero(ret, sizeof(*ret));
        return -EBADMSG;
}

const FacUser *fac_users_find(const FacUsers *f, const char *name) {
        for (size_t i = 0; i < f->n; i++)
                if (!strcmp(f->u[i].name, name))
                        return &f->u[i];
        return NULL;
}

int fac_users_set(FacUsers *f, const char *name, const char *hash) {
        if (!fac_name_valid(name) || !fac_hash_valid(hash))
                return -EINVAL;
        FacUser *u = (FacUser *) fac_users_find(f, name);
        if (!u) {
                if (f->n >= FAC_USERS_MAX)
                        return -ENOSPC;
                u = &f->u[f->n++];
                snprintf(u->name, sizeof(u->name), "%s", name);
        }
        snprintf(u->hash, sizeof(u->hash), "%s", hash);
        return 0;
}

int fac_users_format(const FacUsers *f, char **ret, size_t *ret_len) {
        size_t size = f->n * (FAC_NAME_MAX + FAC_HASH_MAX + 2) + 1, len = 0;
        char *s = malloc(size);
        if (!s)
                return -ENOMEM;
        s[0] = '\0';
        for (size_t i = 0; i < f->n; i++)
                len += (size_t) snprintf(s + len, size - len, "%s:%s\n", f->u[i].name, f->u[i].hash);
        *ret = s;
        *ret_len = len;
        return 0;
}

int fac_users_load(const char *path, FacUsers *ret) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = read_file_capped(path, FAC_FILE_MAX, &text, &len);
        if (r < 0)
                return r;
        r = fac_users_parse(text, len, ret);
        sodium_memzero(text, len);
        return r;
}

int fac_users_save(const char *path, const FacUsers *f, uid_t uid, gid_t gid) {
        _cleanup_free_ char *text = NULL;
        char tmp[4200];
        size_t len;
        int r = fac_users_format(f, &text, &len);
        if (r < 0)
                return r;
        if (snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", path) >= (int) sizeof(tmp))
                return -ENAMETOOLONG;
        /* mkostemp makes it 0600 already; it is given to seat-web's user before it has a
         * name anyone reads, so the file at path is never someone else's for a moment. */
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if ((uid != (uid_t) -1 || gid != (gid_t) -1) && fchown(fd, uid, gid) < 0)
                r = -errno;
        if (r >= 0 && fchmod(fd, 0600) < 0)
                r = -errno;
        if (r >= 0)
                r = loop_write(fd, text, len);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                unlink(tmp);
                return r;
        }
        return fsync_parent_dir(path);
}

int fac_password_hash(const char *password, size_t len, char out[crypto_pwhash_STRBYTES]) {
        if (sodium_init() < 0)
                return -EIO;
        if (len == 0 || len > FAC_PASSWORD_MAX)
                return -EINVAL;
        if (crypto_pwhash_str(out, password, len, FAC_PWHASH_OPSLIMIT, FAC_PWHASH_MEMLIMIT) != 0)
                return -ENOMEM; /* argon2 could not have its memory */
        return 0;
}

static char dummy_hash[crypto_pwhash_STRBYTES];
static pthread_once_t dummy_once = PTHREAD_ONCE_INIT;

static void make_dummy(void) {
        char pw[32];
        randombytes_buf(pw, sizeof(pw));
        if (crypto_pwhash_str(dummy_hash, pw, sizeof(pw), FAC_PWHASH_OPSLIMIT, FAC_PWHASH_MEMLIMIT) != 0)
                dummy_hash[0] = '\0';
        sodium_memzero(pw, sizeof(pw));
}

bool fac_password_verify(const FacUser *user, const char *password, size_t len) {
        if (sodium_init() < 0)
                return false;
        pthread_once(&dummy_once, make_dummy);
        /* An unknown name, an empty or overlong password: still one verify of the same
         * cost, so the time taken does not say which names exist. */
        const char *hash = user ? user->hash : dummy_hash;
        int v = hash[0] ? crypto_pwhash_str_verify(hash, password, len > FAC_PASSWORD_MAX ? FAC_PASSWORD_MAX : len) : -1;
        return v == 0 && user != NULL && len > 0 && len <= FAC_PASSWORD_MAX;
}
