/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seatctl events, seatctl metrics: the room as the facilitator's dashboard sees it, for an
 * operator at a terminal or a script (--json). Both work on the operator socket and, with
 * --socket, on the facilitator socket. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonframe.h"
#include "common/log.h"
#include "seatctl.h"

static void room_usage(FILE *f) {
        fprintf(f,
                "usage: seatctl events [--count N]\n"
                "       seatctl metrics\n"
                "\n"
                "  events     follow the room: a line each time a seat, a pool or the seal queue\n"
                "             changes (and every 15 s), until interrupted or N lines were printed\n"
                "  metrics    seats by state, provision/claim/reset latency, calls, denied\n"
                "             packets, seal queue, pools, host memory and disk\n"
                "\n"
                "Options: --json (global) prints each snapshot (one per line) or the metrics as JSON.\n"
                "Also on the facilitator socket (--socket /run/seatd/facilitator.sock).\n");
}

static int64_t num(json_object *o, const char *key) {
        int64_t v = 0;
        (void) json_get_int64(o, key, false, INT64_MIN + 1, INT64_MAX - 1, &v);
        return v;
}

typedef struct Follow {
        int64_t left; /* lines still to print; < 0: no end */
} Follow;

/* One line: the time, seats per state, each pool's fill, the seal queue. */
static int on_snapshot(const char *type, json_object *body, void *userdata) {
        Follow *f = userdata;
        json_object *seats = NULL, *pools = NULL, *seal = NULL, *v;
        if (strcmp(type, "snapshot"))
                return 0;
        if (ctl_opts.json)
                ctl_print_json(body);
        else {
                static const char *const states[] = { "provisioning", "ready", "resetting", "faulted", "released" };
                int64_t count[ELEMENTSOF(states)] = {};
                const char *when = "?";
                (void) json_get_string(body, "time", false, 64, &when);
                if (json_object_object_get_ex(body, "seats", &seats) && json_object_is_type(seats, json_type_array))
                        for (size_t i = 0; i < json_object_array_length(seats); i++) {
                                const char *st = "";
                                (void) json_get_string(json_object_array_get_idx(seats, i), "state", false, 32, &st);
                                for (size_t k = 0; k < ELEMENTSOF(states); k++)
                                        count[k] += !strcmp(st, states[k]);
                        }
                printf("%s  ready %" PRId64 "  provisioning %" PRId64 "  resetting %" PRId64 "  faulted %" PRId64, when,
                       count[1], count[0], count[2], count[3]);
                if (json_object_object_get_ex(body, "pools", &v) && json_object_object_get_ex(v, "pools", &pools) &&
                    json_object_is_type(pools, json_type_array))
                        for (size_t i = 0; i < json_object_array_length(pools); i++) {
                                json_object *p = json_object_array_get_idx(pools, i);
                                const char *image = "?";
                                (void) json_get_string(p, "image", false, 128, &image);
                                _cleanup_free_ char *e = log_escape(image, strlen(image), 64);
                                printf("  pool %s %" PRId64 "/%" PRId64, e ? e : "?", num(p, "ready"), num(p, "size"));
                        }
                if (json_object_object_get_ex(body, "seal", &seal))
                        printf("  sealing %" PRId64 " (failed %" PRId64 ")", num(seal, "queue"), num(seal, "failed"));
                printf("\n");
        }
        fflush(stdout);
        if (f->left > 0 && --f->left == 0)
                return -ECANCELED; /* enough: ends the call */
        return 0;
}

static int verb_events(int argc, char *argv[], SeatError **ret_error) {
        static const struct option opts[] = { { "count", required_argument, NULL, 'n' }, { "help", no_argument, NULL, 'h' }, {} };
        Follow f = { .left = -1 };
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "n:h", opts, NULL)) >= 0)
                switch (c) {
                case 'n':
                        if (sscanf(optarg, "%" SCNd64, &f.left) != 1 || f.left < 1)
                                return seat_error_set(ret_error, EINVAL, "--count takes a number of lines (1 or more)"), 2;
                        break;
                case 'h':
                        room_usage(stdout);
                        return 0;
                default:
                        room_usage(stderr);
                        return 2;
                }
        if (optind != argc)
                return room_usage(stderr), 2;
        _cleanup_(ctl_client_freep) CtlClient *cl = NULL;
        if (ctl_connect(ctl_opts.socket, &cl, ret_error) < 0)
                return 1;
        int r = ctl_call(cl, "events.subscribe", NULL, on_snapshot, &f, NULL, NULL, ret_error);
        if (r == -ECANCELED && f.left == 0) {
                if (ret_error)
                        *ret_error = seat_error_free(*ret_error); /* the count was reached: no error */
                return 0;
        }
        return 1;
}

static void print_histogram(const char *name, json_object *h) {
        json_object *b = NULL;
        int64_t count = num(h, "count");
        double sum = 0;
        if (json_object_object_get_ex(h, "sum", &b))
                sum = json_object_get_double(b);
        printf("%-10s %6" PRId64 "  mean %8.3f s", name, count, count ? sum / (double) count : 0.0);
        /* The smallest bound half the observations are under: a median's upper bound. */
        if (count && json_object_object_get_ex(h, "buckets", &b) && json_object_is_type(b, json_type_array))
                for (size_t i = 0; i < json_object_array_length(b); i++) {
                        json_object *pair = json_object_array_get_idx(b, i);
                        if (json_object_get_int64(json_object_array_get_idx(pair, 1)) * 2 >= count) {
                                printf("  median ≤ %s s", json_object_get_string(json_object_array_get_idx(pair, 0)));
                                break;
                        }
                }
        printf("\n");
}

static int verb_metrics(int argc, char *argv[], SeatError **ret_error) {
        if (argc != 1) {
                bool help = argc == 2 && !strcmp(argv[1], "--help");
                room_usage(help ? stdout : stderr);
                return help ? 0 : 2;
        }
        _cleanup_(ctl_client_freep) CtlClient *cl = NULL;
        _cleanup_json_ json_object *res = NULL;
        json_object *o;
        if (ctl_connect(ctl_opts.socket, &cl, ret_error) < 0 || ctl_call(cl, "metrics", NULL, NULL, NULL, &res, NULL, ret_error) < 0)
                return 1;
        if (ctl_print_json_if_asked(res))
                return 0;
        if (json_object_object_get_ex(res, "seats_by_state", &o)) {
                printf("seats     ");
                json_object_object_foreach(o, state, n) printf("  %s %" PRId64, state, json_object_get_int64(n));
                printf("\n");
        }
        printf("calls      %" PRId64 "\n", num(res, "calls_total"));
        if (json_object_object_get_ex(res, "latency", &o)) {
                json_object_object_foreach(o, name, h) print_histogram(name, h);
        }
        if (json_object_object_get_ex(res, "seal", &o))
                printf("sealing    %" PRId64 " waiting, %" PRId64 " failed, %" PRId64 " failures since seatd started\n",
                       num(o, "queue"), num(o, "failed"), num(o, "failures"));
        if (json_object_object_get_ex(res, "host", &o))
                printf("host       memory %" PRId64 " of %" PRId64 " MiB available, disk %" PRId64 " of %" PRId64 " MiB free\n",
                       num(o, "mem_available_bytes") >> 20, num(o, "mem_total_bytes") >> 20, num(o, "disk_free_bytes") >> 20,
                       num(o, "disk_total_bytes") >> 20);
        return 0;
}

int verb_room(int argc, char *argv[], SeatError **ret_error) {
        return !strcmp(argv[0], "events") ? verb_events(argc, argv, ret_error) : verb_metrics(argc, argv, ret_error);
}
