/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The seat-sign tool's verbs (one file each) and the helpers they share. Only main()
 * (seat-sign.c) prints errors and picks the exit code: a verb returns 0 or -errno with
 * *ret_error set; -EINVAL means a usage error (exit 2), anything else exit 1. */

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"

int verb_keygen(int argc, char *argv[], SeatError **ret_error);
/* keygen with --box goes to seat-sign-box.c, otherwise to verb_keygen(). */
int verb_keygen_any(int argc, char *argv[], SeatError **ret_error);
int verb_sign(int argc, char *argv[], SeatError **ret_error);
int verb_verify(int argc, char *argv[], SeatError **ret_error);

/* Sets a usage error that points at the verb's --help; returns -EINVAL. */
int usage_error(SeatError **ret_error, const char *verb, const char *fmt, ...) _printf_(3, 4);
/* For getopt's '?' (opterr is 0, so getopt itself said nothing): names the word it
 * stopped at. Returns -EINVAL. */
int usage_bad_option(SeatError **ret_error, const char *verb, char *argv[]);
/* After the getopt loop: no verb takes operands. 0, or -EINVAL naming the first. */
int usage_no_operands(SeatError **ret_error, const char *verb, int argc, char *argv[]);

/* Where a signature of file goes: sig_arg (-x) if given, else "<file>.minisig", as
 * minisign does. 0 or -ENOMEM. */
int signature_path(const char *file, const char *sig_arg, char **ret);

/* keygen's checks on the two key files, shared by the signing and the box key pair: two
 * different paths, and neither may exist unless force (-f). 0 or -errno. */
int keygen_check_paths(const char *pub_path, const char *sec_path, bool force, SeatError **ret_error);

/* Where a password comes from: --password-file, else $SEAT_SIGN_PASSWORD, else the
 * terminal (/dev/tty, echo off; asked twice when confirm). */
typedef struct PasswordSource {
        const char *file;  /* --password-file, or NULL */
        const char *what;  /* "secret key '/x'": for prompts and messages */
        SeatError *error;  /* set by password_source_callback() on failure */
} PasswordSource;

#define SEAT_SIGN_PASSWORD_ENV "SEAT_SIGN_PASSWORD"

/* *ret is sodium_malloc'd: free with sodium_free(). */
int password_get(PasswordSource *src, bool confirm, char **ret, SeatError **ret_error);
/* A SeatPasswordFn; userdata is a PasswordSource. */
int password_source_callback(char *buf, size_t size, void *userdata);

/* Escape control characters of an untrusted string for the terminal (tabs stay). */
char *terminal_escape(const char *s);
