/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seatctl: the command line of seatd. One verb group per file; only main() prints errors
 * and picks the exit code.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "common/log.h"
#include "seatctl.h"
#include "common/verbs.h"

CtlOptions ctl_opts;

static const Verb verbs[] = {
        { "provision", 0, VERB_ANY, verb_provision, "boot new seats from a verified image; prints ids and tokens" },
        { "list", 0, VERB_ANY, verb_list, "every seat, its state, image and participant" },
        { "status", 0, VERB_ANY, verb_status, "one seat's state" },
        { "exec", 0, VERB_ANY, verb_exec, "run a command in a seat, output streamed, its exit code returned" },
        { "shell", 0, VERB_ANY, verb_shell, "an interactive login shell in a seat (a terminal; '~.' disconnects)" },
        { "cp", 0, VERB_ANY, verb_cp, "copy a file into or out of a seat (out: at most 1 GiB, --max-size)" },
        { "forward", 0, VERB_ANY, verb_forward, "carry local TCP connections to a host:port as the seat's guest sees it" },
        { "mcp", 0, VERB_ANY, verb_mcp, "serve one seat to an AI agent: a Model Context Protocol server on stdio" },
        { "console", 0, VERB_ANY, verb_console, "the seat's serial console log (read-only, --follow)" },
        { "reset", 0, VERB_ANY, verb_reset, "wipe a seat: a new machine from the verified image, new token" },
        { "release", 0, VERB_ANY, verb_release, "stop and remove a seat, its session set aside for evidence" },
        { "pool", 0, VERB_ANY, verb_pool, "keep seats of an image booted and ready: provision hands them out" },
        { "image", 0, VERB_ANY, verb_image, "import, pull, list, verify and remove signed guest images" },
        { "evidence", 0, VERB_ANY, verb_evidence, "list, verify and open sealed evidence archives; retry sealing" },
        { "events", 0, VERB_ANY, verb_room, "follow the room: a line per change of seats, pools and sealing (--count N)" },
        { "metrics", 0, VERB_ANY, verb_room, "seats by state, latencies, calls, denied packets, seal queue, host" },
        { "host", 0, VERB_ANY, verb_host, "host check: can this host run seats? (probes KVM with a guest)" },
};
/* Every verb takes --help and checks its own arguments: no bounds here. */
static const VerbTable table = { "seatctl", "seatctl --help", verbs, ELEMENTSOF(verbs) };

/* exec: what follows its SEAT is the command's, where main() looks for no options (the
 * verb takes --json and -q itself); every failure of seatctl's own, bad usage included,
 * exits CTL_EXEC_FAILED there, so that all other statuses are the command's. */
static bool runs_command(const Verb *v) {
        return v->fn == verb_exec || v->fn == verb_shell;
}

static void usage(FILE *f) {
        fprintf(f,
                "usage: seatctl [--socket PATH] [--token-file FILE] [--json] [-q] COMMAND [ARGS...]\n"
                "\n"
                "Drives seatd, the seat manager: signed guest images, seats (disposable VMs),\n"
                "their tools and evidence.\n"
                "\n"
                "Commands:\n");
        verbs_print_help(&table, f, "  ", 10);
        fprintf(f,
                "\n"
                "Options:\n"
                "  --socket PATH   seatd's control socket (default $SEATD_SOCKET or /run/seatd/control.sock)\n"
                "  --token-file F  a participant's seat token (default $SEATD_TOKEN); never on the\n"
                "                  command line, where every user of the host could read it\n"
                "  --json          machine-readable output on stdout (one JSON document)\n"
                "  -q, --quiet     no progress output\n"
                "  -h, --help      this text; 'seatctl COMMAND --help' for a command\n"
                "  --version       print the version\n"
                "--json and -q may also come after the command (seatctl list --json), though never\n"
                "after a '--': what follows it is an argument.\n"
                "\n"
                "Exit status: 0 on success, 1 when the operation failed, 2 on bad usage. 'seatctl exec'\n"
                "exits with its command's status and keeps 125 for failures of seatctl's own (seatd\n"
                "unreachable, refused, bad usage).\n");
}

/*
 * --json and -q/--quiet after the verb (seatctl list --json, seatctl image list -q) are
 * taken out of its arguments here, up to a "--", so that each verb's own parser (getopt or
 * by hand) never sees them. Returns the new argc; argv stays NULL-terminated.
 */
static int take_global_options(int argc, char *argv[]) {
        bool end = false;
        int n = 1;
        for (int i = 1; i < argc; i++) {
                if (!end && !strcmp(argv[i], "--"))
                        end = true;
                else if (!end && !strcmp(argv[i], "--json")) {
                        ctl_opts.json = true;
                        continue;
                } else if (!end && (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet"))) {
                        ctl_opts.quiet = true;
                        continue;
                }
                argv[n++] = argv[i];
        }
        argv[n] = NULL;
        return n;
}

int ctl_call_operator(const char *method, json_object *params, bool progress, json_object **ret,
                      SeatError **ret_error) {
        _cleanup_(ctl_client_freep) CtlClient *c = NULL;
        int r = ctl_connect(ctl_opts.socket, &c, ret_error);
        if (r < 0)
                return r;
        r = ctl_call(c, method, params, progress && !ctl_opts.quiet ? ctl_progress_bar : NULL, NULL, ret, NULL, ret_error);
        ctl_progress_end();
        return r;
}

void ctl_print_json(json_object *o) {
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
}

bool ctl_print_json_if_asked(json_object *o) {
        if (!ctl_opts.json)
                return false;
        ctl_print_json(o);
        return true;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "socket", required_argument, NULL, 's' },
                { "token-file", required_argument, NULL, 't' },
                /* Listed so that "--token" is not taken as an abbreviation of --token-file. */
                { "token", required_argument, NULL, 'T' },
                { "json", no_argument, NULL, 'j' },
                { "quiet", no_argument, NULL, 'q' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        _cleanup_error_ SeatError *err = NULL;
        bool bad_usage = false, explained = false;
        int c;

        log_set_ident("seatctl");
        signal(SIGPIPE, SIG_IGN);
        /* '+': stop at the first non-option, the verb. */
        while ((c = getopt_long(argc, argv, "+qh", options, NULL)) >= 0)
                switch (c) {
                case 's':
                        ctl_opts.socket = optarg;
                        break;
                case 't':
                        ctl_opts.token_file = optarg;
                        break;
                case 'T':
                        fprintf(stderr, "seatctl: tokens are never taken on the command line, where every user of the host "
                                        "can read them: put it in a file (--token-file FILE) or in $SEATD_TOKEN\n");
                        bad_usage = explained = true;
                        break;
                case 'j':
                        ctl_opts.json = true;
                        break;
                case 'q':
                        ctl_opts.quiet = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        printf("seatctl " SEATD_VERSION "\n");
                        return 0;
                default:
                        /* Read on to the verb: a bad option before exec is exec's failure too. */
                        bad_usage = true;
                        break;
                }
        if (optind >= argc) {
                if (!explained)
                        usage(stderr);
                return 2;
        }
        const Verb *v = verb_find(&table, argv[optind]);
        if (bad_usage) {
                if (!explained)
                        usage(stderr);
                return v && runs_command(v) ? CTL_EXEC_FAILED : 2;
        }
        if (!v) {
                fprintf(stderr, "seatctl: unknown command '%s' (see 'seatctl --help')\n", argv[optind]);
                return 2;
        }
        int argc2 = argc - optind;
        char **argv2 = argv + optind;
        if (!runs_command(v))
                argc2 = take_global_options(argc2, argv2);
        optind = 0; /* reset getopt for the verb */
        int status = dispatch_verb(&table, argc2, argv2, &err);
        if (status != 0 && err)
                fprintf(stderr, "seatctl: %s\n", err->message);
        return status;
}
