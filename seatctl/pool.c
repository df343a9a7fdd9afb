/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seatctl pool: set, status. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonframe.h"
#include "common/log.h"
#include "seatctl.h"

static void pool_usage(FILE *f) {
        fprintf(f,
                "usage: seatctl pool set IMAGE --ready N [--egress PROFILE]\n"
                "       seatctl pool status\n"
                "\n"
                "A pool keeps N seats of an image (and egress profile) booted and READY for\n"
                "nobody: 'seatctl provision' of that image and profile hands one out in\n"
                "milliseconds (a new token, the participant bound) instead of booting, and the\n"
                "pool boots a replacement in the background, within the host limits in\n"
                "seatd.conf (pool_max_seats, pool_max_memory_mib). A pooled seat whose agent\n"
                "does not answer when claimed is released and replaced, never handed out.\n"
                "\n"
                "  set IMAGE --ready N   keep N seats ready (0 removes the pool and releases its seats)\n"
                "      --egress PROFILE  for seats provisioned with this egress profile (default: the\n"
                "                        config's default_egress)\n"
                "  status                every pool: size, seats ready, claims, what holds it back\n"
                "\n"
                "Pools are saved in seatd's state directory and survive a restart of seatd.\n"
                "Options: --json (global) prints seatd's answer as JSON.\n");
}

static const char *str(json_object *o, const char *key) {
        const char *s = "";
        (void) json_get_string(o, key, false, 4096, &s);
        return s;
}

static int64_t num(json_object *o, const char *key) {
        int64_t v = 0;
        (void) json_get_int64(o, key, false, INT64_MIN + 1, INT64_MAX - 1, &v);
        return v;
}

static void print_cell(const char *s, int width) {
        _cleanup_free_ char *e = log_escape(s, strlen(s), 300);
        printf("%-*s", width, e ? e : "?");
}

static void print_pool(json_object *p) {
        print_cell(str(p, "image"), 24);
        printf(" ");
        print_cell(*str(p, "egress") ? str(p, "egress") : "-", 12);
        printf(" %5" PRId64 " %5" PRId64 " %8" PRId64 "  ", num(p, "ready"), num(p, "size"), num(p, "claimed"));
        print_cell(*str(p, "state") ? str(p, "state") : "removed", 0);
        printf("\n");
        if (*str(p, "held")) {
                printf("    held: ");
                print_cell(str(p, "held"), 0);
                printf("\n");
        }
        if (*str(p, "last_error")) {
                printf("    last error: ");
                print_cell(str(p, "last_error"), 0);
                printf("\n");
        }
}

static void print_header(void) {
        printf("%-24s %-12s %5s %5s %8s  %s\n", "IMAGE", "EGRESS", "READY", "SIZE", "CLAIMED", "STATE");
}

static int pool_status(SeatError **ret_error) {
        _cleanup_json_ json_object *res = NULL;
        json_object *pools = NULL, *host = NULL;
        if (ctl_call_operator("pool.status", NULL, false, &res, ret_error) < 0)
                return 1;
        if (ctl_print_json_if_asked(res))
                return 0;
        if (json_get_array(res, "pools", true, 4096, &pools) < 0)
                return seat_error_set(ret_error, EPROTO, "seatd sent no pool list"), 1;
        if (json_object_array_length(pools) == 0)
                printf("no pools (make one with 'seatctl pool set IMAGE --ready N')\n");
        else {
                print_header();
                for (size_t i = 0; i < json_object_array_length(pools); i++)
                        print_pool(json_object_array_get_idx(pools, i));
        }
        if (json_object_object_get_ex(res, "host", &host))
                printf("host: %" PRId64 " seats (pool_max_seats %" PRId64 "), %" PRId64 " MiB of seat memory (pool_max_memory_mib %" PRId64
                       ")\n",
                       num(host, "seats"), num(host, "pool_max_seats"), num(host, "memory_mib"), num(host, "pool_max_memory_mib"));
        return 0;
}

static int pool_set(int argc, char *argv[], SeatError **ret_error) {
        static const struct option options[] = {
                { "ready", required_argument, NULL, 'r' },
                { "egress", required_argument, NULL, 'e' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *egress = NULL;
        long ready = -1;
        int c;
        /* argv[0] is "set" */
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'r': {
                        char *end = NULL;
                        ready = strtol(optarg, &end, 10);
                        if (!*optarg || *end || ready < 0 || ready > 1000) {
                                fprintf(stderr, "seatctl: --ready takes a number of seats (0 removes the pool)\n");
                                return 2;
                        }
                        break;
                }
                case 'e':
                        egress = optarg;
                        break;
                case 'h':
                        pool_usage(stdout);
                        return 0;
                default:
                        pool_usage(stderr);
                        return 2;
                }
        if (optind != argc - 1 || ready < 0) {
                pool_usage(stderr);
                return 2;
        }
        _cleanup_json_ json_object *params = json_object_new_object(), *res = NULL;
        if (!params)
                return 1;
        json_object_object_add(params, "image", json_object_new_string(argv[optind]));
        json_object_object_add(params, "ready", json_object_new_int64(ready));
        if (egress)
                json_object_object_add(params, "egress", json_object_new_string(egress));
        if (ctl_call_operator("pool.set", params, false, &res, ret_error) < 0)
                return 1;
        if (ctl_opts.json)
                ctl_print_json(res);
        else if (ready == 0) {
                printf("pool of ");
                print_cell(argv[optind], 0);
                printf(" removed: its ready seats are released\n");
        } else {
                print_header();
                print_pool(res);
        }
        return 0;
}

int verb_pool(int argc, char *argv[], SeatError **ret_error) {
        if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
                pool_usage(argc < 2 ? stderr : stdout);
                return argc < 2 ? 2 : 0;
        }
        if (!strcmp(argv[1], "status")) {
                if (argc != 2) {
                        pool_usage(stderr);
                        return 2;
                }
                return pool_status(ret_error);
        }
        if (!strcmp(argv[1], "set"))
                return pool_set(argc - 1, argv + 1, ret_error);
        fprintf(stderr, "seatctl: unknown pool command '%s'\n", argv[1]);
        pool_usage(stderr);
        return 2;
}
