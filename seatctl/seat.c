/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seatctl provision, list, status, exec, cp, console, reset, release. */
#include <fcntl.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/base64.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "seatctl.h"
#include "terminal.h"

#define CHUNK (512u * 1024u)
/* seatctl cp SEAT:PATH LOCAL writes at most this much to the operator's disk unless
 * --max-size says otherwise: the guest decides what it sends, and could send for ever. */
#define CP_MAX_DEFAULT (UINT64_C(1) << 30)
#define STDIN_MAX (512u * 1024u)

/* Connected for a call on params' seat: with a token (added to params), as a participant
 * on the participant socket. */
static int seat_connect(json_object *params, CtlClient **ret, SeatError **ret_error) {
        _cleanup_free_ char *token = NULL;
        int r = ctl_load_token(ctl_opts.token_file, &token, ret_error);
        if (r < 0)
                return r;
        if (token)
                json_object_object_add(params, "token", json_object_new_string(token));
        return ctl_connect_as(ctl_opts.socket, token != NULL, ret, ret_error);
}

static int seat_call(const char *method, json_object *params, CtlEventFn on_event, void *userdata, json_object **ret,
                     SeatError **ret_error) {
        _cleanup_(ctl_client_freep) CtlClient *c = NULL;
        int r = seat_connect(params, &c, ret_error);
        if (r < 0)
                return r;
        r = ctl_call(c, method, params, on_event, userdata, ret, NULL, ret_error);
        ctl_progress_end();
        return r;
}

static json_object *params_with_seat(const char *seat) {
        json_object *p = json_object_new_object();
        if (p)
                json_object_object_add(p, "seat", json_object_new_string(seat));
        return p;
}

static const char *str(json_object *o, const char *key) {
        const char *s = "";
        (void) json_get_string(o, key, false, 4096, &s);
        return s;
}

static void print_cell(const char *s, int width) {
        _cleanup_free_ char *e = log_escape(s, strlen(s), 64);
        printf("%-*s", width, e ? e : "?");
}

static void print_seat_header(void) {
        printf("%-10s %-12s %-16s %7s %4s  %-20s  %s\n", "SEAT", "STATE", "IMAGE", "VERSION", "GEN", "CREATED", "PARTICIPANT");
}

static void print_seat_row(json_object *s) {
        int64_t version = 0, gen = 0;
        (void) json_get_int64(s, "image_version", false, 0, INT64_MAX - 1, &version);
        (void) json_get_int64(s, "generation", false, 0, INT64_MAX - 1, &gen);
        print_cell(str(s, "id"), 10);
        printf(" ");
        print_cell(str(s, "state"), 12);
        printf(" ");
        print_cell(str(s, "image"), 16);
        printf(" %7" PRId64 " %4" PRId64 "  ", version, gen);
        print_cell(str(s, "created"), 20);
        printf("  ");
        if (json_object_get_boolean(json_object_object_get(s, "pool")))
                printf("(pool: ready for provision)");
        else
                print_cell(str(s, "participant"), 0);
        printf("\n");
        const char *progress = str(s, "progress");
        if (*progress) {
                _cleanup_free_ char *e = log_escape(progress, strlen(progress), 300);
                printf("           progress: %s\n", e ? e : "?");
        }
        const char *fault = str(s, "fault");
        if (*fault) {
                _cleanup_free_ char *e = log_escape(fault, strlen(fault), 300);
                printf("           fault: %s\n", e ? e : "?");
        }
}

/* Each allowed name: its ports, the addresses its resolver answered that are in its sets
 * now (seconds to expiry), and the packets its accept rules counted. */
static void print_names(json_object *net) {
        json_object *names = NULL;
        if (*str(net, "names_error"))
                printf("names: cannot read their sets: %s\n", str(net, "names_error"));
        if (!json_object_object_get_ex(net, "names", &names) || !json_object_is_type(names, json_type_array))
                return;
        for (size_t i = 0; i < json_object_array_length(names); i++) {
                json_object *n = json_object_array_get_idx(names, i), *ports = NULL, *addrs = NULL;
                int64_t pk = 0;
                (void) json_get_int64(n, "packets", false, 0, INT64_MAX - 1, &pk);
                _cleanup_free_ char *e = log_escape(str(n, "name"), strlen(str(n, "name")), 260);
                printf("name %s (%" PRId64 " packets;", e ? e : "?", pk);
                if (json_object_object_get_ex(n, "ports", &ports) && json_object_is_type(ports, json_type_array))
                        for (size_t j = 0; j < json_object_array_length(ports); j++)
                                printf(" %s", json_object_get_string(json_object_array_get_idx(ports, j)));
                printf("):");
                if (!json_object_object_get_ex(n, "addresses", &addrs) || !json_object_is_type(addrs, json_type_array) ||
                    json_object_array_length(addrs) == 0)
                        printf(" no address resolved");
                for (size_t j = 0; addrs && j < json_object_array_length(addrs); j++) {
                        json_object *a = json_object_array_get_idx(addrs, j);
                        int64_t exp = -1;
                        (void) json_get_int64(a, "expires_s", false, 0, INT64_MAX - 1, &exp);
                        printf(" %s (%" PRId64 " s)", str(a, "address"), exp);
                }
                printf("\n");
        }
}

/* The seat's DNS guard (docs/egress.md, "The DNS guard"), when its profile has names. */
static void print_dnsguard(json_object *net) {
        json_object *g = NULL;
        int64_t pid = 0, restarts = 0;
        if (!json_object_object_get_ex(net, "dnsguard", &g) || !json_object_is_type(g, json_type_object))
                return;
        (void) json_get_int64(g, "pid", false, 0, INT64_MAX - 1, &pid);
        (void) json_get_int64(g, "restarts", false, 0, INT64_MAX - 1, &restarts);
        printf("dnsguard: %s on %s:53", str(g, "state"), str(g, "address"));
        if (pid > 0)
                printf(", pid %" PRId64, pid);
        printf(", %" PRId64 " restarts", restarts);
        if (*str(g, "last_exit")) {
                _cleanup_free_ char *e = log_escape(str(g, "last_exit"), strlen(str(g, "last_exit")), 300);
                printf(", last exit: %s", e ? e : "?");
        }
        printf("\n");
        if (*str(g, "error")) {
                _cleanup_free_ char *e = log_escape(str(g, "error"), strlen(str(g, "error")), 600);
                printf("dnsguard: FAILED: %s\n", e ? e : "?");
        }
}

/* The profile's packet capture (docs/egress.md, "Capture"), when it has one. */
static void print_capture(json_object *net) {
        json_object *c = NULL;
        int64_t v[6] = {};
        static const char *const keys[] = { "packets", "files", "bytes", "files_rotated", "packets_cut", "drops" };
        if (!json_object_object_get_ex(net, "capture", &c) || !json_object_is_type(c, json_type_object))
                return;
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                (void) json_get_int64(c, keys[i], false, 0, INT64_MAX - 1, &v[i]);
        printf("capture: %s, %" PRId64 " packets seen, %" PRId64 " file(s) of %" PRId64 " bytes; %" PRId64
               " file(s) rotated away, %" PRId64 " packets cut at the snaplen, %" PRId64 " packets not in the files\n",
               json_object_get_boolean(json_object_object_get(c, "on")) ? "on" : "OFF (not running)", v[0], v[1], v[2], v[3],
               v[4], v[5]);
}

/* The seat's network and its filter, rule by rule with counters. */
static void print_network(json_object *seat) {
        json_object *net = NULL, *rules = NULL, *last = NULL;
        int64_t denied = 0, events = 0;
        if (!json_object_object_get_ex(seat, "network", &net) || !json_object_is_type(net, json_type_object)) {
                printf("network: none (the seat has no NIC)\n");
                return;
        }
        (void) json_get_int64(net, "denied_packets", false, 0, INT64_MAX - 1, &denied);
        (void) json_get_int64(net, "tamper_events", false, 0, INT64_MAX - 1, &events);
        printf("network: profile ");
        print_cell(str(net, "profile"), 0);
        printf(", guest %s via %s on bridge %s, uplink %s\n", str(net, "guest"), str(net, "host"), str(net, "bridge"),
               *str(net, "uplink") ? str(net, "uplink") : "(none: nothing leaves the host)");
        json_object *guard = NULL;
        bool guard_failed = json_object_object_get_ex(net, "dnsguard", &guard) && !strcmp(str(guard, "state"), "failed");
        printf("egress: %" PRId64 " packets denied%s", denied,
               !json_object_get_boolean(json_object_object_get(net, "paused")) ? ""
               : guard_failed ? "; PAUSED: its DNS guard failed"
                              : "; PAUSED: its rules were changed");
        if (events > 0 && json_object_object_get_ex(net, "last_tamper", &last))
                printf("; %" PRId64 " tamper events, last: rules %s", events, str(last, "state"));
        printf("\n");
        if (*str(net, "rules_error"))
                printf("rules: cannot read them: %s\n", str(net, "rules_error"));
        print_capture(net);
        print_dnsguard(net);
        print_names(net);
        if (!json_object_object_get_ex(net, "rules", &rules) || !json_object_is_type(rules, json_type_array))
                return;
        printf("  %-5s %10s %12s  %s\n", "CHAIN", "PACKETS", "BYTES", "RULE");
        for (size_t i = 0; i < json_object_array_length(rules); i++) {
                json_object *r = json_object_array_get_idx(rules, i);
                int64_t pk = 0, by = 0;
                (void) json_get_int64(r, "packets", false, 0, INT64_MAX - 1, &pk);
                (void) json_get_int64(r, "bytes", false, 0, INT64_MAX - 1, &by);
                printf("  %-5s %10" PRId64 " %12" PRId64 "  ", str(r, "chain"), pk, by);
                _cleanup_free_ char *e = log_escape(str(r, "rule"), strlen(str(r, "rule")), 300);
                printf("%s", e ? e : "?");
                printf("\n");
        }
}

/* ---- provision ---- */

static void provision_usage(FILE *f) {
        fprintf(f,
                "usage: seatctl provision --image NAME [--participant WHO] [--egress PROFILE] [--count N]\n"
                "\n"
                "Boots N new seats (default 1) from the verified image NAME, each in its own VM, and\n"
                "prints each seat's id and its participant token. Hand the token to the participant\n"
                "(in a file: seatctl --token-file FILE exec SEAT -- ...); it opens that one seat's\n"
                "exec, cp, console and status, and nothing else. seatd keeps only its hash.\n"
                "\n"
                "Each seat gets a network of its own. --egress names the profile of what its guest\n"
                "may reach (the file PROFILE.profile in seatd's egress_dir, see docs/egress.md); the\n"
                "default is the config's default_egress, normally 'none': nothing at all. A seat whose\n"
                "filter cannot be installed and read back exactly is not started.\n");
}

int verb_provision(int argc, char *argv[], SeatError **ret_error) {
        static const struct option options[] = {
                { "image", required_argument, NULL, 'i' }, { "participant", required_argument, NULL, 'p' },
                { "count", required_argument, NULL, 'n' }, { "egress", required_argument, NULL, 'e' },
                { "help", no_argument, NULL, 'h' }, {},
        };
        const char *image = NULL, *participant = NULL, *egress = NULL;
        long count = 1;
        int c;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'i': image = optarg; break;
                case 'p': participant = optarg; break;
                case 'n': count = atol(optarg); break;
                case 'e': egress = optarg; break;
                case 'h': provision_usage(stdout); return 0;
                default: provision_usage(stderr); return 2;
                }
        if (!image || count < 1 || optind < argc) {
                provision_usage(stderr);
                return 2;
        }
        _cleanup_json_ json_object *p = json_object_new_object(), *res = NULL;
        json_object *seats = NULL;
        json_object_object_add(p, "image", json_object_new_string(image));
        if (participant)
                json_object_object_add(p, "participant", json_object_new_string(participant));
        if (egress)
                json_object_object_add(p, "egress", json_object_new_string(egress));
        json_object_object_add(p, "count", json_object_new_int64(count));
        if (seat_call("seat.provision", p, ctl_opts.quiet ? NULL : ctl_progress_bar, NULL, &res, ret_error) < 0)
                return 1;
        if (ctl_print_json_if_asked(res))
                return 0;
        if (json_get_array(res, "seats", true, 1000, &seats) < 0)
                return seat_error_set(ret_error, EPROTO, "seatd sent no seats"), 1;
        printf("%-10s %-64s %s\n", "SEAT", "TOKEN", "PARTICIPANT");
        for (size_t i = 0; i < json_object_array_length(seats); i++) {
                json_object *s = json_object_array_get_idx(seats, i);
                print_cell(str(s, "id"), 10);
                printf(" %-64s ", str(s, "token"));
                print_cell(str(s, "participant"), 0);
                printf("\n");
        }
        return 0;
}

/* ---- list, status ---- */

int verb_list(int argc, char *argv[], SeatError **ret_error) {
        _cleanup_json_ json_object *p = json_object_new_object(), *res = NULL;
        json_object *seats = NULL;
        if (argc > 1) {
                fprintf(argc > 1 && !strcmp(argv[1], "--help") ? stdout : stderr,
                        "usage: seatctl list\n\nEvery seat seatd runs, with its state, image and participant.\n");
                return !strcmp(argv[1], "--help") ? 0 : 2;
        }
        if (seat_call("seat.list", p, NULL, NULL, &res, ret_error) < 0)
                return 1;
        if (ctl_print_json_if_asked(res))
                return 0;
        if (json_get_array(res, "seats", true, 100000, &seats) < 0)
                return seat_error_set(ret_error, EPROTO, "seatd sent no seat list"), 1;
        if (json_object_array_length(seats) == 0) {
                printf("no seats (make some with 'seatctl provision --image NAME')\n");
                return 0;
        }
        print_seat_header();
        for (size_t i = 0; i < json_object_array_length(seats); i++)
                print_seat_row(json_object_array_get_idx(seats, i));
        return 0;
}

static int one_seat_verb(const char *verb, const char *method, int argc, char *argv[], SeatError **ret_error) {
        bool cold = !strcmp(method, "seat.reset") && argc == 3 && !strcmp(argv[1], "--cold");
        if (cold) {
                argc--;
                argv++;
        }
        if (argc != 2 || !strcmp(argv[1], "--help")) {
                fprintf(argc == 2 ? stdout : stderr, "usage: seatctl %s %sSEAT\n", verb,
                        !strcmp(method, "seat.reset") ? "[--cold] " : "");
                return argc == 2 ? 0 : 2;
        }
        _cleanup_json_ json_object *p = params_with_seat(argv[1]), *res = NULL;
        if (cold)
                json_object_object_add(p, "cold", json_object_new_boolean(true));
        if (seat_call(method, p, ctl_opts.quiet ? NULL : ctl_progress_bar, NULL, &res, ret_error) < 0)
                return 1;
        if (ctl_print_json_if_asked(res))
                return 0;
        if (!strcmp(method, "seat.release")) {
                printf("released %s (its session is set aside for evidence)\n", argv[1]);
                return 0;
        }
        print_seat_header();
        print_seat_row(res);
        if (!strcmp(method, "seat.status"))
                print_network(res);
        /* How the machine came up, and whether the next reset can be warm. */
        if (*str(res, "reset_mode")) {
                printf("reset_mode: %s\n", str(res, "reset_mode"));
                if (*str(res, "reset_reason"))
                        printf("reset_reason: %s\n", str(res, "reset_reason"));
                printf("warm_standby: %s\n", str(res, "warm_standby"));
        }
        if (*str(res, "token"))
                printf("new participant token: %s\n", str(res, "token"));
        return 0;
}

int verb_status(int argc, char *argv[], SeatError **ret_error) {
        return one_seat_verb("status", "seat.status", argc, argv, ret_error);
}

int verb_reset(int argc, char *argv[], SeatError **ret_error) {
        return one_seat_verb("reset", "seat.reset", argc, argv, ret_error);
}

int verb_release(int argc, char *argv[], SeatError **ret_error) {
        return one_seat_verb("release", "seat.release", argc, argv, ret_error);
}

/* ---- exec ---- */

static void exec_usage(FILE *f) {
        fprintf(f,
                "usage: seatctl exec [OPTIONS] SEAT [OPTIONS] -- COMMAND [ARG...]\n"
                "\n"
                "Runs COMMAND in the seat's guest; its stdout and stderr stream here as it produces\n"
                "them. When stdin is not a terminal it is sent to the command (at most 512 KiB; use\n"
                "'seatctl cp' or -i for more). With -t the command gets a terminal of this one's size\n"
                "(this one in raw mode meanwhile; '~.' after Enter disconnects and kills the command).\n"
                "Exits with the command's exit code, 128+N when a signal N\n"
                "ended it, 124 when the timeout killed it, and 125 when seatctl itself failed: seatd\n"
                "unreachable, the token refused, a seatd error, bad usage (127: no such command in\n"
                "the guest). Options go before or after SEAT; nothing after '--' is seatctl's.\n"
                "\n"
                "  --timeout SECONDS   kill the command's process group then (default: seatd's, 600;\n"
                "                      at most seatd's exec_max_timeout, 3600 unless configured)\n"
                "  --max-output BYTES  output to send back at most (K, M, G suffixes; default: the\n"
                "                      agent's, 16 MiB; beyond it output is dropped, 'truncated')\n"
                "  --cwd DIR           its working directory in the guest (default /)\n"
                "  --env NAME=VALUE    set a variable for it (repeatable)\n"
                "  --user UID[:GID]    the guest user it runs as (default 0, the guest's root; a\n"
                "                      UID alone brings the GID of the same number): the image's\n"
                "                      own permissions then apply, e.g. a read-only system\n"
                "  -i, --interactive   stream stdin to the command as it comes (no size cap)\n"
                "  -t, --tty           run the command on a terminal (window size follows this one;\n"
                "                      implies -i)\n"
                "  --json              after the output, print the result (exit code, signal,\n"
                "                      duration, byte counts) as JSON\n"
                "  -q, --quiet         accepted as everywhere (exec shows no progress anyway)\n");
}

static int exec_event(const char *type, json_object *body, void *userdata) {
        return strcmp(type, "output") ? 0 : ctl_write_output(body);
}

static int read_stdin(char **ret, size_t *ret_len, SeatError **ret_error) {
        _cleanup_free_ char *buf = malloc(STDIN_MAX + 1);
        if (!buf)
                return -ENOMEM;
        ssize_t n = loop_read(STDIN_FILENO, buf, STDIN_MAX + 1);
        if (n < 0)
                return seat_error_set(ret_error, (int) -n, "read stdin: %s", strerror((int) -n));
        if ((size_t) n > STDIN_MAX)
                return seat_error_set(ret_error, E2BIG, "stdin is larger than 512 KiB: copy it in with 'seatctl cp' instead");
        *ret = TAKE_PTR(buf);
        *ret_len = (size_t) n;
        return 0;
}

/* "123", "64K", "2M", "1G", "1T" (powers of 1024; an "iB" or "B" after the unit is fine). */
static int parse_size(const char *s, uint64_t *ret) {
        char *end = NULL;
        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno != 0)
                return -EINVAL;
        unsigned shift = 0;
        switch (*end) {
        case 'k': case 'K': shift = 10; end++; break;
        case 'm': case 'M': shift = 20; end++; break;
        case 'g': case 'G': shift = 30; end++; break;
        case 't': case 'T': shift = 40; end++; break;
        default: break;
        }
        if (shift && (!strcmp(end, "iB") || !strcmp(end, "B")))
                end += strlen(end);
        if (*end || (shift && v > (UINT64_MAX >> shift)))
                return -EINVAL;
        *ret = (uint64_t) v << shift;
        return 0;
}

/*
 * exec's options in argv[1..], up to "--" or the first word that is not one (getopt's
 * '+'); *ret_next is where that stopped, and a word must stand there (SEAT, or the
 * command): none is bad usage. Returns -1 to carry on, or the exit status (help, bad
 * usage). main() left --json and -q here: it cannot tell where the command begins.
 */
typedef struct ExecFlags {
        double timeout;
        bool interactive, tty;
} ExecFlags;

static int exec_options(int argc, char *argv[], json_object *p, json_object *env, ExecFlags *f, void (*usage)(FILE *),
                        int *ret_next) {
        static const struct option options[] = {
                { "timeout", required_argument, NULL, 'T' }, { "cwd", required_argument, NULL, 'c' },
                { "env", required_argument, NULL, 'e' },     { "json", no_argument, NULL, 'j' },
                { "quiet", no_argument, NULL, 'q' },         { "help", no_argument, NULL, 'h' },
                { "interactive", no_argument, NULL, 'i' },   { "tty", no_argument, NULL, 't' },
                { "max-output", required_argument, NULL, 'M' }, { "user", required_argument, NULL, 'u' },
                {},
        };
        uint64_t max_output;
        int64_t uid, gid;
        int c;
        optind = 0;
        /* ':' and opterr = 0: our own messages; getopt's would name SEAT as the program
         * on the pass after it. */
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+:hqit", options, NULL)) >= 0)
                switch (c) {
                case 'T': f->timeout = atof(optarg); break;
                case 'i': f->interactive = true; break;
                case 't': f->tty = true; break;
                case 'c': json_object_object_add(p, "cwd", json_object_new_string(optarg)); break;
                case 'e': json_object_array_add(env, json_object_new_string(optarg)); break;
                case 'M':
                        /* seatd's own bound is 1 GiB: said here before anything is sent. */
                        if (parse_size(optarg, &max_output) < 0 || max_output == 0 || max_output > (UINT64_C(1) << 30)) {
                                fprintf(stderr, "seatctl: exec: --max-output '%s' is not a size from 1 byte to 1G (e.g. 64K, 200M)\n",
                                        optarg);
                                return CTL_EXEC_FAILED;
                        }
                        json_object_object_add(p, "max_output", json_object_new_int64((int64_t) max_output));
                        break;
                case 'u':
                        if (ctl_parse_user(optarg, &uid, &gid) < 0) {
                                fprintf(stderr, "seatctl: exec: --user takes UID or UID:GID (numbers up to 4294967294), not '%s'\n",
                                        optarg);
                                return CTL_EXEC_FAILED;
                        }
                        json_object_object_add(p, "uid", json_object_new_int64(uid));
                        json_object_object_add(p, "gid", json_object_new_int64(gid));
                        break;
                case 'j': ctl_opts.json = true; break;
                case 'q': ctl_opts.quiet = true; break;
                case 'h': usage(stdout); return 0;
                case ':':
                        fprintf(stderr, "seatctl: exec: option '%s' needs a value\n", argv[optind - 1]);
                        usage(stderr);
                        return CTL_EXEC_FAILED;
                default:
                        if (optopt)
                                fprintf(stderr, "seatctl: exec: unknown option '-%c'\n", optopt);
                        else
                                fprintf(stderr, "seatctl: exec: unknown option '%s'\n", argv[optind - 1]);
                        usage(stderr);
                        return CTL_EXEC_FAILED;
                }
        if (optind >= argc) {
                usage(stderr);
                return CTL_EXEC_FAILED;
        }
        *ret_next = optind;
        return -1;
}

/* A terminal's command needs TERM (the local one's) and a PATH, as the guest's default
 * environment is replaced by any env given. Entries the user set are kept. */
static void exec_env_terminal(json_object *env) {
        bool have_term = false, have_path = false;
        for (size_t i = 0; i < json_object_array_length(env); i++) {
                const char *e = json_object_get_string(json_object_array_get_idx(env, i));
                have_term |= e && !strncmp(e, "TERM=", 5);
                have_path |= e && !strncmp(e, "PATH=", 5);
        }
        if (!have_path)
                json_object_array_add(env, json_object_new_string("PATH=/usr/sbin:/usr/bin:/sbin:/bin"));
        if (!have_term) {
                const char *t = getenv("TERM");
                _cleanup_free_ char *s = NULL;
                if (asprintf(&s, "TERM=%s", t && *t && strlen(t) < 64 ? t : "vt100") >= 0)
                        json_object_array_add(env, json_object_new_string(s));
        }
}

/* The rest of an exec or shell request: its seat, the command line av (taken), the
 * environment (when it holds any; on a terminal, completed with TERM and PATH) and the
 * timeout. */
static void exec_request(json_object *p, const char *seat, json_object *av, json_object *env, const ExecFlags *f) {
        json_object_object_add(p, "seat", json_object_new_string(seat));
        json_object_object_add(p, "argv", av);
        if (f->tty)
                exec_env_terminal(env);
        if (json_object_array_length(env) > 0)
                json_object_object_add(p, "env", json_object_get(env));
        if (f->timeout > 0)
                json_object_object_add(p, "timeout_ms", json_object_new_int64((int64_t) (f->timeout * 1000)));
}

/* Every failure here is seatctl's own, never the command's: CTL_EXEC_FAILED. */
/* The command's end as seatctl's exit status (exec_usage). */
static int exec_status(json_object *res, SeatError **ret_error) {
        int64_t code = 0, sig = 0;
        bool timed_out = false;
        /* Without it, 0 would report a success nobody saw. */
        if (json_get_int64(res, "code", true, -1, 255, &code) < 0)
                return seat_error_set(ret_error, EPROTO, "seatd sent no exit code"), CTL_EXEC_FAILED;
        (void) json_get_int64(res, "signal", false, 0, 64, &sig);
        (void) json_get_bool(res, "timed_out", false, &timed_out);
        if (ctl_opts.json)
                ctl_print_json(res);
        else if (*str(res, "error"))
                fprintf(stderr, "seatctl: %s\n", str(res, "error"));
        if (timed_out)
                return 124;
        return sig ? 128 + (int) sig : (int) code;
}

/* exec -i / -t and shell: one connection carries the exec and its live input. */
static int exec_live(json_object *p, bool tty, SeatError **ret_error) {
        _cleanup_(ctl_client_freep) CtlClient *c = NULL;
        _cleanup_json_ json_object *res = NULL;
        if (seat_connect(p, &c, ret_error) < 0)
                return CTL_EXEC_FAILED;
        int r = terminal_exec(c, p, tty, &res, ret_error);
        if (r <= 0)
                return CTL_EXEC_FAILED; /* failed, or "~." */
        return exec_status(res, ret_error);
}

int verb_exec(int argc, char *argv[], SeatError **ret_error) {
        _cleanup_json_ json_object *p = json_object_new_object(), *res = NULL, *env = json_object_new_array();
        ExecFlags f = {};
        int next = 0, r;
        if (!p || !env)
                return CTL_EXEC_FAILED;
        /* [OPTIONS] SEAT [OPTIONS] [--] COMMAND...: the second pass sees SEAT as its argv[0]. */
        r = exec_options(argc, argv, p, env, &f, exec_usage, &next);
        if (r >= 0)
                return r;
        int i = next;
        const char *seat = argv[i];
        r = exec_options(argc - i, argv + i, p, env, &f, exec_usage, &next);
        if (r >= 0)
                return r;
        i += next;
        json_object *av = json_object_new_array();
        for (; i < argc; i++)
                json_object_array_add(av, json_object_new_string(argv[i]));
        exec_request(p, seat, av, env, &f);
        if (f.interactive || f.tty)
                return exec_live(p, f.tty, ret_error);
        if (!isatty(STDIN_FILENO)) {
                _cleanup_free_ char *in = NULL, *b64 = NULL;
                size_t n = 0;
                if (read_stdin(&in, &n, ret_error) < 0 || base64_encode(in, n, &b64, NULL) < 0)
                        return CTL_EXEC_FAILED;
                if (n > 0)
                        json_object_object_add(p, "stdin", json_object_new_string(b64));
        }
        if (seat_call("seat.exec", p, exec_event, NULL, &res, ret_error) < 0)
                return CTL_EXEC_FAILED;
        return exec_status(res, ret_error);
}

/* ---- shell ---- */

static void shell_usage(FILE *f) {
        fprintf(f,
                "usage: seatctl shell [OPTIONS] SEAT [-- SHELL [ARG...]]\n"
                "\n"
                "An interactive login shell in the seat's guest (default: /bin/sh -l) on a terminal\n"
                "of this one's size: 'seatctl exec -it SEAT -- /bin/sh -l' with TERM and HOME set.\n"
                "Type '~.' after Enter to disconnect (the shell is killed); '~~' sends one '~'.\n"
                "Exits with the shell's exit status, 125 when seatctl itself failed or on '~.'.\n"
                "\n"
                "  --cwd DIR           its working directory in the guest (default /)\n"
                "  --env NAME=VALUE    set a variable for it (repeatable)\n"
                "  --user UID[:GID]    the guest user it runs as (default 0, the guest's root)\n"
                "  --timeout SECONDS   end it then (default: seatd's exec_max_timeout)\n");
}

int verb_shell(int argc, char *argv[], SeatError **ret_error) {
        _cleanup_json_ json_object *p = json_object_new_object(), *env = json_object_new_array();
        ExecFlags f = {};
        int next = 0, r;
        if (!p || !env)
                return CTL_EXEC_FAILED;
        r = exec_options(argc, argv, p, env, &f, shell_usage, &next);
        if (r >= 0)
                return r;
        const char *seat = argv[next];
        int i = next + 1;
        if (i < argc && !strcmp(argv[i], "--"))
                i++;
        json_object *av = json_object_new_array();
        if (i < argc)
                for (; i < argc; i++)
                        json_object_array_add(av, json_object_new_string(argv[i]));
        else {
                json_object_array_add(av, json_object_new_string("/bin/sh"));
                json_object_array_add(av, json_object_new_string("-l"));
        }
        /* A login shell, always on a terminal. */
        json_object_array_add(env, json_object_new_string("HOME=/root"));
        f.tty = true;
        exec_request(p, seat, av, env, &f);
        return exec_live(p, f.tty, ret_error);
}

/* ---- cp ---- */

static void cp_usage(FILE *f) {
        fprintf(f,
                "usage: seatctl cp LOCAL SEAT:/PATH                    copy a file into a seat\n"
                "       seatctl cp [--max-size SIZE] SEAT:/PATH LOCAL  copy a file out of a seat\n"
                "\n"
                "Files move in 512 KiB chunks through the seat's agent. Guest paths are absolute.\n"
                "\n"
                "Options:\n"
                "  --max-size SIZE  copying out, write at most SIZE bytes (default 1G): a file the\n"
                "                   guest says is larger is refused before anything is copied, and a\n"
                "                   copy that goes past it is stopped and removed. The guest decides\n"
                "                   what it sends. SIZE is bytes, or a number with K, M, G or T\n"
                "                   (powers of 1024).\n");
}

static int cp_in(const char *local, const char *seat, const char *path, SeatError **ret_error) {
        _cleanup_close_ int fd = open(local, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ uint8_t *buf = malloc(CHUNK);
        struct stat st;
        uint64_t off = 0;
        if (fd < 0)
                return seat_error_set(ret_error, errno, "open '%s': %m", local);
        if (!buf || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return seat_error_set(ret_error, EINVAL, "'%s' is not a regular file", local);
        do {
                ssize_t n = loop_read(fd, buf, CHUNK);
                if (n < 0)
                        return seat_error_set(ret_error, (int) -n, "read '%s': %s", local, strerror((int) -n));
                _cleanup_free_ char *b64 = NULL;
                if (base64_encode(buf, (size_t) n, &b64, NULL) < 0)
                        return -ENOMEM;
                _cleanup_json_ json_object *p = params_with_seat(seat), *res = NULL;
                json_object_object_add(p, "path", json_object_new_string(path));
                json_object_object_add(p, "offset", json_object_new_int64((int64_t) off));
                json_object_object_add(p, "data", json_object_new_string(b64));
                json_object_object_add(p, "mode", json_object_new_int(st.st_mode & 0777));
                json_object_object_add(p, "final", json_object_new_boolean(off + (uint64_t) n >= (uint64_t) st.st_size));
                if (seat_call("seat.file_put", p, NULL, NULL, &res, ret_error) < 0)
                        return -EIO;
                off += (uint64_t) n;
                if (n == 0)
                        break;
        } while (off < (uint64_t) st.st_size);
        return 0;
}

static int cp_out(const char *seat, const char *path, const char *local, uint64_t max_size, SeatError **ret_error) {
        _cleanup_free_ char *tmp = NULL;
        uint64_t off = 0;
        if (asprintf(&tmp, "%s.seatctl-XXXXXX", local) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return seat_error_set(ret_error, errno, "create '%s': %m", tmp);
        for (;;) {
                _cleanup_json_ json_object *p = params_with_seat(seat), *res = NULL;
                _cleanup_free_ void *bytes = NULL;
                const char *data = NULL;
                bool eof = false;
                int64_t size = -1;
                size_t n = 0;
                json_object_object_add(p, "path", json_object_new_string(path));
                json_object_object_add(p, "offset", json_object_new_int64((int64_t) off));
                if (seat_call("seat.file_get", p, NULL, NULL, &res, ret_error) < 0 ||
                    json_get_string(res, "data", true, 1 << 20, &data) < 0 || json_get_bool(res, "eof", false, &eof) < 0 ||
                    json_get_int64(res, "size", false, -1, INT64_MAX - 1, &size) < 0 ||
                    base64_decode(data, strlen(data), CHUNK, &bytes, &n) < 0) {
                        (void) unlink(tmp);
                        if (!*ret_error)
                                seat_error_set(ret_error, EPROTO, "copying '%s' out failed", path);
                        return -EIO;
                }
                /* What the guest says the file holds, then what it sends: either over the cap
                 * ends the copy, and nothing of it stays on the operator's disk. */
                if (size > 0 && (uint64_t) size > max_size) {
                        (void) unlink(tmp);
                        return seat_error_set(ret_error, EFBIG,
                                              "'%s' in seat '%s' is %" PRId64 " bytes, over the cap of %" PRIu64
                                              " bytes: nothing copied (--max-size raises the cap)",
                                              path, seat, size, max_size);
                }
                if (n > max_size - off) {
                        (void) unlink(tmp);
                        return seat_error_set(ret_error, EFBIG,
                                              "seat '%s' sent more than the cap of %" PRIu64 " bytes for '%s': "
                                              "stopped, '%s' not written (--max-size raises the cap)",
                                              seat, max_size, path, local);
                }
                if (loop_write(fd, bytes, n) < 0) {
                        int e = errno;
                        (void) unlink(tmp);
                        return seat_error_set(ret_error, e, "write '%s': %s", tmp, strerror(e));
                }
                off += n;
                if (eof)
                        break;
                if (n == 0) {
                        (void) unlink(tmp);
                        return seat_error_set(ret_error, EPROTO, "seat sent an empty chunk before the end of '%s'", path);
                }
        }
        if (rename(tmp, local) < 0) {
                (void) unlink(tmp);
                return seat_error_set(ret_error, errno, "rename to '%s': %m", local);
        }
        return 0;
}

static bool split_remote(const char *arg, char *seat, size_t size, const char **path) {
        const char *colon = strchr(arg, ':');
        if (!colon || colon == arg || (size_t) (colon - arg) >= size || colon[1] != '/')
                return false;
        memcpy(seat, arg, (size_t) (colon - arg));
        seat[colon - arg] = '\0';
        *path = colon + 1;
        return true;
}

int verb_cp(int argc, char *argv[], SeatError **ret_error) {
        static const struct option options[] = {
                { "max-size", required_argument, NULL, 'm' }, { "help", no_argument, NULL, 'h' }, {},
        };
        uint64_t max_size = CP_MAX_DEFAULT;
        bool max_given = false;
        char seat[64];
        const char *path = NULL;
        int c;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'm':
                        if (parse_size(optarg, &max_size) < 0)
                                return seat_error_set(ret_error, EINVAL, "--max-size '%s' is not a size (bytes, or e.g. 64K, 2M, 1G)",
                                                      optarg), 2;
                        max_given = true;
                        break;
                case 'h': cp_usage(stdout); return 0;
                default: cp_usage(stderr); return 2;
                }
        if (argc - optind != 2) {
                cp_usage(stderr);
                return 2;
        }
        const char *from = argv[optind], *to = argv[optind + 1];
        if (split_remote(to, seat, sizeof(seat), &path)) {
                if (max_given)
                        return seat_error_set(ret_error, EINVAL, "--max-size caps copies out of a seat, not into one"), 2;
                return cp_in(from, seat, path, ret_error) < 0 ? 1 : 0;
        }
        if (split_remote(from, seat, sizeof(seat), &path))
                return cp_out(seat, path, to, max_size, ret_error) < 0 ? 1 : 0;
        cp_usage(stderr);
        return 2;
}

/* ---- console ---- */

int verb_console(int argc, char *argv[], SeatError **ret_error) {
        bool follow = false, raw = false;
        const char *seat = NULL;
        for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--follow") || !strcmp(argv[i], "-f"))
                        follow = true;
                else if (!strcmp(argv[i], "--raw"))
                        raw = true;
                else if (!strcmp(argv[i], "--help")) {
                        printf("usage: seatctl console [--follow] [--raw] SEAT\n\n"
                               "Prints the seat's serial console log (read-only). Control characters from the\n"
                               "guest are escaped unless --raw. --follow keeps printing what is added.\n");
                        return 0;
                } else if (!seat)
                        seat = argv[i];
                else
                        return fprintf(stderr, "usage: seatctl console [--follow] [--raw] SEAT\n"), 2;
        }
        if (!seat)
                return fprintf(stderr, "usage: seatctl console [--follow] [--raw] SEAT\n"), 2;
        int64_t off = 0;
        for (;;) {
                _cleanup_json_ json_object *p = params_with_seat(seat), *res = NULL;
                _cleanup_free_ void *bytes = NULL;
                const char *data = NULL;
                size_t n = 0;
                json_object_object_add(p, "offset", json_object_new_int64(off));
                if (seat_call("seat.console", p, NULL, NULL, &res, ret_error) < 0)
                        return 1;
                if (json_get_string(res, "data", true, 1 << 20, &data) < 0 ||
                    base64_decode(data, strlen(data), 1 << 20, &bytes, &n) < 0)
                        return seat_error_set(ret_error, EPROTO, "seatd sent a bad console chunk"), 1;
                if (raw)
                        (void) loop_write(STDOUT_FILENO, bytes, n);
                else {
                        /* Keep lines; escape everything else a guest could use on a terminal. */
                        const char *b = bytes;
                        size_t start = 0;
                        for (size_t i = 0; i <= n; i++)
                                if (i == n || b[i] == '\n') {
                                        _cleanup_free_ char *e = log_escape(b + start, i - start, (i - start) * 4 + 4);
                                        printf("%s%s", e ? e : "", i < n ? "\n" : "");
                                        start = i + 1;
                                }
                        fflush(stdout);
                }
                off += (int64_t) n;
                if (n > 0)
                        continue;
                if (!follow)
                        return 0;
                (void) nanosleep(&(struct timespec) { .tv_nsec = 500 * 1000 * 1000 }, NULL);
        }
}
