/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The facilitators file: "NAME:HASH" lines, HASH libsodium's argon2id string
 * (crypto_pwhash_str), written by `seat-web passwd` and read by seat-web at each login (so
 * a new password needs no restart). '#' comments and empty lines are kept out of the
 * table. A pure parser of a buffer with hard caps (fuzzed: tests/fuzz/fuzz-web-facilitators.c).
 */

#include <stdbool.h>
#include <stddef.h>
#include <sodium.h>

#include "common/macro.h"

#define FAC_FILE_MAX (64u * 1024u)
#define FAC_USERS_MAX 256
#define FAC_NAME_MAX 32
#define FAC_PASSWORD_MAX 1024 /* bytes of a password; argon2 takes more, a form does not need it */
#define FAC_HASH_MAX (crypto_pwhash_STRBYTES - 1)

/* Work factors of the hash. argon2id at 3 passes over 64 MiB takes about 0.2-0.4 s here:
 * a guess then costs an attacker with the file that much per try and core, while a login
 * costs seat-web one such verify, done one at a time off the event loop (fac-login.c), so
 * a flood of logins holds at most 64 MiB and is slowed further by the rate limits.
 * libsodium's MODERATE (256 MiB, ~1 s) would let four logins ask for a gigabyte. */
#define FAC_PWHASH_OPSLIMIT 3
#define FAC_PWHASH_MEMLIMIT (64u * 1024u * 1024u)

typedef struct FacUser {
        char name[FAC_NAME_MAX + 1];
        char hash[FAC_HASH_MAX + 1];
} FacUser;

typedef struct FacUsers {
        size_t n;
        FacUser u[FAC_USERS_MAX];
} FacUsers;

/* A facilitator's name: 1..FAC_NAME_MAX of [a-z0-9._-], starting with a letter or digit. */
bool fac_name_valid(const char *s);
/* An argon2id string as crypto_pwhash_str makes them: "$argon2id$", printable, no ':'. */
bool fac_hash_valid(const char *s);

/* The file's text into *ret (zeroed first). -EBADMSG: a line that is not NAME:HASH, a
 * name given twice, over FAC_USERS_MAX names or FAC_FILE_MAX bytes. */
int fac_users_parse(const char *buf, size_t len, FacUsers *ret);
/* The user of that name, or NULL. */
const FacUser *fac_users_find(const FacUsers *f, const char *name);
/* Set name's hash, adding the name at the end if new. -ENOSPC when full, -EINVAL. */
int fac_users_set(FacUsers *f, const char *name, const char *hash);
/* The file's text (every line NAME:HASH\n) into a new string. */
int fac_users_format(const FacUsers *f, char **ret, size_t *ret_len);

/* Read path (at most FAC_FILE_MAX); -ENOENT when it is missing. */
int fac_users_load(const char *path, FacUsers *ret);
/* Replace path atomically with f: a temp file beside it (0600, given to uid:gid when they
 * are not -1), fsync, rename, fsync of the directory. */
int fac_users_save(const char *path, const FacUsers *f, uid_t uid, gid_t gid);

/* argon2id of password (FAC_PWHASH_* limits) into out. */
int fac_password_hash(const char *password, size_t len, char out[crypto_pwhash_STRBYTES]);
/* Whether password matches user's hash. With user NULL (an unknown name) the password is
 * checked against a hash of a random password made once with the same limits, so an
 * unknown name costs the same time as a wrong password. */
bool fac_password_verify(const FacUser *user, const char *password, size_t len);
