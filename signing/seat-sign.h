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

/* The options of the verbs: one parser, and each verb names the options it takes. */
typedef enum SignOption {
        SIGN_OPTION_BOX = 1 << 0,                /* --box (keygen's box key pair; no value) */
        SIGN_OPTION_PUBLIC_KEY = 1 << 1,         /* -p, --public-key PUBFILE */
        SIGN_OPTION_PUBLIC_KEY_BASE64 = 1 << 2,  /* -P, --public-key-base64 KEY */
        SIGN_OPTION_SECRET_KEY = 1 << 3,         /* -s, --secret-key SECFILE */
        SIGN_OPTION_FILE = 1 << 4,               /* -m, --file FILE */
        SIGN_OPTION_SIGNATURE = 1 << 5,          /* -x, --signature SIGFILE */
        SIGN_OPTION_TRUSTED_COMMENT = 1 << 6,    /* -t, --trusted-comment TEXT */
        SIGN_OPTION_UNTRUSTED_COMMENT = 1 << 7,  /* -c, --untrusted-comment TEXT */
        SIGN_OPTION_NO_PASSWORD = 1 << 8,        /* -W, --no-password */
        SIGN_OPTION_FORCE = 1 << 9,              /* -f, --force */
        SIGN_OPTION_QUIET = 1 << 10,             /* -q, --quiet */
        SIGN_OPTION_PRETTY_QUIET = 1 << 11,      /* -Q, --pretty-quiet */
        SIGN_OPTION_REQUIRE_PREHASHED = 1 << 12, /* -H, --require-prehashed */
        SIGN_OPTION_PASSWORD_FILE = 1 << 13,     /* --password-file FILE */
} SignOption;

typedef struct SignOptions {
        const char *pub_path, *pub_b64, *sec_path, *file, *sig_arg, *trusted_comment, *untrusted_comment,
                *password_file;
        bool no_password, force, require_prehashed;
        int quiet; /* 0; 1 (-q): print nothing; 2 (-Q): only the trusted comment */
} SignOptions;

/*
 * Parses a verb's arguments (argv[0] is the verb) into *o, which starts zeroed. Only the
 * options in `accepted` (a SignOption mask) and -h/--help are known; no verb takes
 * operands. Returns 1 to go on, 0 when verb_help() was shown (the verb is done), -EINVAL after
 * a usage error naming the word at fault.
 */
int sign_options_parse(int argc, char *argv[], unsigned accepted, const char *verb, void (*verb_help)(void),
                       SignOptions *o, SeatError **ret_error);

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
