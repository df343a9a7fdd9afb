/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seat-sign: minisign-compatible keys and signatures for seatd images.
 * A table of verbs, one file each; only verbs_main() prints errors and picks the exit
 * code (0 ok, 1 verification or operation failure, 2 usage).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "hash.h"
#include "common/log.h"
#include "seat-sign.h"
#include "common/verbs.h"

static const Verb verbs[] = {
        { "keygen", 0, VERB_ANY, verb_keygen_any, "create a key pair (--box: a facilitator box key pair)" },
        { "sign", 0, VERB_ANY, verb_sign, "sign a file" },
        { "verify", 0, VERB_ANY, verb_verify, "verify a file's signature and print its trusted comment" },
};

static void help(void);

static const VerbTool tool = {
        .table = { "seat-sign", "seat-sign --help", verbs, ELEMENTSOF(verbs) },
        .help = help,
        .version_v = true,
};

static void help(void) {
        printf("NAME\n"
               "    seat-sign - minisign-compatible signatures for seatd images\n"
               "\n"
               "SYNOPSIS\n"
               "    seat-sign keygen -p PUBFILE -s SECFILE [-W] [-f] [--password-file FILE]\n"
               "    seat-sign keygen --box -p PUBFILE -s SECFILE [-f]\n"
               "    seat-sign sign -s SECFILE -m FILE [-x SIGFILE] [-t COMMENT] [-c COMMENT]\n"
               "    seat-sign verify (-p PUBFILE | -P PUBKEY) -m FILE [-x SIGFILE] [-q | -Q] [-H]\n"
               "    seat-sign VERB --help\n"
               "    seat-sign --version\n"
               "\n"
               "DESCRIPTION\n"
               "    Keys and signatures are byte-compatible with minisign(1): minisign verifies what\n"
               "    seat-sign signs and the other way round, and secret keys work in both tools.\n"
               "    seat-sign writes prehashed signatures (algorithm 'ED': Ed25519 over the BLAKE2b-512\n"
               "    of the file) and accepts those and legacy 'Ed' ones. Every signature also carries a\n"
               "    trusted comment, covered by a second (global) signature.\n"
               "\n"
               "VERBS\n");
        verbs_print_help(&tool.table, stdout, "    ", 8);
        printf("\n"
               "EXIT STATUS\n"
               "    0 success, 1 the verification or operation failed (the reason is printed),\n"
               "    2 usage error.\n"
               "\n"
               "SEE ALSO\n"
               "    minisign(1), docs/signing.md\n");
}

int usage_error(SeatError **ret_error, const char *verb, const char *fmt, ...) {
        _cleanup_free_ char *see = NULL;
        va_list ap;

        if (asprintf(&see, "seat-sign %s --help", verb) < 0)
                see = NULL;
        va_start(ap, fmt);
        int r = verb_usage_errorv(ret_error, see ? see : "seat-sign --help", fmt, ap);
        va_end(ap);
        return r;
}

int usage_bad_option(SeatError **ret_error, const char *verb, char *argv[]) {
        return usage_error(ret_error, verb, "unknown option or missing argument '%s'", argv[optind - 1]);
}

int usage_no_operands(SeatError **ret_error, const char *verb, int argc, char *argv[]) {
        if (optind < argc)
                return usage_error(ret_error, verb, "unexpected argument '%s'", argv[optind]);
        return 0;
}

int signature_path(const char *file, const char *sig_arg, char **ret) {
        char *p;

        if (sig_arg)
                p = strdup(sig_arg);
        else if (asprintf(&p, "%s.minisig", file) < 0)
                p = NULL;
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

static int refuse_existing(const char *path, bool force, SeatError **ret_error) {
        struct stat st;
        if (force || lstat(path, &st) < 0)
                return 0;
        return seat_error_set(ret_error, EEXIST, "'%s' already exists: add -f to overwrite it", path);
}

int keygen_check_paths(const char *pub_path, const char *sec_path, bool force, SeatError **ret_error) {
        int r;

        if (strcmp(pub_path, sec_path) == 0)
                return usage_error(ret_error, "keygen", "the public and the secret key need two different files");
        r = refuse_existing(pub_path, force, ret_error);
        if (r < 0)
                return r;
        return refuse_existing(sec_path, force, ret_error);
}

int main(int argc, char *argv[]) {
        log_set_ident("seat-sign");
        if (signing_init() < 0) {
                fprintf(stderr, "seat-sign: cannot initialise libsodium\n");
                return 1;
        }
        return verbs_main(&tool, argc, argv);
}
