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

enum { ARG_BOX = 0x100, ARG_PASSWORD_FILE };

/* In the order the verbs' --help list them; an option's getopt value is its letter (ARG_* for the
 * long-only ones). Every verb takes -h, --help too. */
static const struct {
        struct option option;
        SignOption bit;
} all_options[] = {
        { { "box", no_argument, NULL, ARG_BOX }, SIGN_OPTION_BOX },
        { { "public-key", required_argument, NULL, 'p' }, SIGN_OPTION_PUBLIC_KEY },
        { { "public-key-base64", required_argument, NULL, 'P' }, SIGN_OPTION_PUBLIC_KEY_BASE64 },
        { { "secret-key", required_argument, NULL, 's' }, SIGN_OPTION_SECRET_KEY },
        { { "file", required_argument, NULL, 'm' }, SIGN_OPTION_FILE },
        { { "signature", required_argument, NULL, 'x' }, SIGN_OPTION_SIGNATURE },
        { { "trusted-comment", required_argument, NULL, 't' }, SIGN_OPTION_TRUSTED_COMMENT },
        { { "untrusted-comment", required_argument, NULL, 'c' }, SIGN_OPTION_UNTRUSTED_COMMENT },
        { { "no-password", no_argument, NULL, 'W' }, SIGN_OPTION_NO_PASSWORD },
        { { "force", no_argument, NULL, 'f' }, SIGN_OPTION_FORCE },
        { { "quiet", no_argument, NULL, 'q' }, SIGN_OPTION_QUIET },
        { { "pretty-quiet", no_argument, NULL, 'Q' }, SIGN_OPTION_PRETTY_QUIET },
        { { "require-prehashed", no_argument, NULL, 'H' }, SIGN_OPTION_REQUIRE_PREHASHED },
        { { "password-file", required_argument, NULL, ARG_PASSWORD_FILE }, SIGN_OPTION_PASSWORD_FILE },
};

int sign_options_parse(int argc, char *argv[], unsigned accepted, const char *verb, void (*verb_help)(void),
                       SignOptions *o, SeatError **ret_error) {
        struct option options[ELEMENTSOF(all_options) + 2] = {};
        char shortopts[2 * ELEMENTSOF(all_options) + 2], *s = shortopts;
        size_t n = 0;
        int c;

        for (size_t i = 0; i < ELEMENTSOF(all_options); i++) {
                const struct option *opt = &all_options[i].option;
                if (!(accepted & all_options[i].bit))
                        continue;
                options[n++] = *opt;
                if (opt->val < 0x100) {
                        *s++ = (char) opt->val;
                        if (opt->has_arg == required_argument)
                                *s++ = ':';
                }
        }
        options[n] = (struct option) { "help", no_argument, NULL, 'h' };
        *s++ = 'h';
        *s = '\0';

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, shortopts, options, NULL)) >= 0)
                switch (c) {
                case ARG_BOX: break;
                case 'p': o->pub_path = optarg; break;
                case 'P': o->pub_b64 = optarg; break;
                case 's': o->sec_path = optarg; break;
                case 'm': o->file = optarg; break;
                case 'x': o->sig_arg = optarg; break;
                case 't': o->trusted_comment = optarg; break;
                case 'c': o->untrusted_comment = optarg; break;
                case 'W': o->no_password = true; break;
                case 'f': o->force = true; break;
                case 'q': o->quiet = 1; break;
                case 'Q': o->quiet = 2; break;
                case 'H': o->require_prehashed = true; break;
                case ARG_PASSWORD_FILE: o->password_file = optarg; break;
                case 'h':
                        verb_help();
                        return 0;
                default:
                        /* opterr is 0, so getopt itself said nothing: name the word it stopped at. */
                        if (accepted & SIGN_OPTION_BOX)
                                return usage_error(ret_error, verb,
                                                   "unknown option or missing argument '%s' (with --box)",
                                                   argv[optind - 1]);
                        return usage_error(ret_error, verb, "unknown option or missing argument '%s'",
                                           argv[optind - 1]);
                }
        if (optind < argc)
                return usage_error(ret_error, verb, "unexpected argument '%s'", argv[optind]);
        return 1;
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
