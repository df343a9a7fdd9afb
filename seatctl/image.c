/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seatctl image: import, pull, list, verify, remove. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonframe.h"
#include "common/log.h"
#include "seatctl.h"

static void image_usage(FILE *f) {
        fprintf(f,
                "usage: seatctl image COMMAND [ARGS...]\n"
                "\n"
                "Guest images are signed bundles: a manifest (name, version, expiry, disk digests)\n"
                "with a minisign signature beside it (MANIFEST.minisig). seatd verifies the signature\n"
                "against its trusted keys, refuses older versions than it has seen (no rollback) and\n"
                "expired images, copies the disks into its store while hashing them, and boots only\n"
                "those verified copies.\n"
                "\n"
                "Commands:\n"
                "  import MANIFEST   verify and store the image whose manifest is at MANIFEST\n"
                "                    (a path on the seatd host; disks are found beside it)\n"
                "  pull URL          download and verify an image over HTTPS (manifest first,\n"
                "                    then the disks, each capped at its declared size and\n"
                "                    checked chunk by chunk; an interrupted pull resumes)\n"
                "  list              the stored images\n"
                "  verify NAME       re-hash the stored bytes of NAME against its signed manifest\n"
                "  remove NAME       delete NAME from the store (refused while a seat uses it)\n"
                "\n"
                "Options: --json (global) prints the image records as JSON.\n");
}

static char *fmt_size(int64_t n, char *buf, size_t len) {
        const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
        double v = (double) n;
        size_t u = 0;
        while (v >= 1024 && u + 1 < ELEMENTSOF(units)) {
                v /= 1024;
                u++;
        }
        snprintf(buf, len, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
        return buf;
}

static const char *str_field(json_object *o, const char *key) {
        const char *s = "-";
        (void) json_get_string(o, key, false, 4096, &s);
        return s;
}

static int64_t total_size(json_object *img) {
        json_object *disks = NULL;
        int64_t sum = 0;
        if (json_get_array(img, "disks", false, 64, &disks) < 0 || !disks)
                return 0;
        for (size_t i = 0; i < json_object_array_length(disks); i++) {
                int64_t n = 0;
                (void) json_get_int64(json_object_array_get_idx(disks, i), "size", false, 0, INT64_MAX - 1, &n);
                sum += n;
        }
        return sum;
}

/* Prints a string from seatd, escaped: it may have come from a manifest. */
static void print_cell(const char *s, int width) {
        _cleanup_free_ char *e = log_escape(s, strlen(s), 64);
        printf("%-*s", width, e ? e : "?");
}

static void print_table(json_object *images) {
        printf("%-24s %8s %10s  %-20s  %-16s  %s\n", "NAME", "VERSION", "SIZE", "EXPIRES", "KEY", "DIGEST");
        for (size_t i = 0; i < json_object_array_length(images); i++) {
                json_object *img = json_object_array_get_idx(images, i);
                int64_t version = 0;
                char size[32];
                (void) json_get_int64(img, "version", false, 0, INT64_MAX - 1, &version);
                print_cell(str_field(img, "name"), 24);
                printf(" %8lld %10s  ", (long long) version, fmt_size(total_size(img), size, sizeof(size)));
                print_cell(str_field(img, "expires"), 20);
                printf("  ");
                print_cell(str_field(img, "key_id"), 16);
                printf("  %.16s\n", str_field(img, "digest"));
        }
}

static int one_image_verb(const char *method, const char *key, const char *value, SeatError **ret_error) {
        _cleanup_json_ json_object *params = json_object_new_object(), *result = NULL;
        if (!params)
                return 1;
        json_object_object_add(params, key, json_object_new_string(value));
        if (ctl_call_operator(method, params, true, &result, ret_error) < 0)
                return 1;
        if (ctl_print_json_if_asked(result))
                return 0;
        if (!strcmp(method, "image.remove")) {
                printf("removed %s\n", value);
                return 0;
        }
        bool verified = true;
        (void) json_get_bool(result, "verified", false, &verified);
        _cleanup_json_ json_object *one = json_object_new_array();
        json_object_array_add(one, json_object_get(result));
        print_table(one);
        if (!strcmp(method, "image.verify")) {
                if (!verified) {
                        printf("NOT VERIFIED: %s\n", str_field(result, "problem"));
                        return 1;
                }
                printf("verified: every stored byte matches the signed manifest\n");
        }
        return 0;
}

int verb_image(int argc, char *argv[], SeatError **ret_error) {
        if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
                image_usage(argc < 2 ? stderr : stdout);
                return argc < 2 ? 2 : 0;
        }
        const char *sub = argv[1];
        if (!strcmp(sub, "list")) {
                _cleanup_json_ json_object *result = NULL;
                json_object *images = NULL;
                if (argc != 2) {
                        image_usage(stderr);
                        return 2;
                }
                if (ctl_call_operator("image.list", NULL, false, &result, ret_error) < 0)
                        return 1;
                if (ctl_print_json_if_asked(result))
                        return 0;
                if (json_get_array(result, "images", true, 100000, &images) < 0)
                        return seat_error_set(ret_error, EPROTO, "seatd sent no image list"), 1;
                if (json_object_array_length(images) == 0)
                        printf("no images (add one with 'seatctl image import MANIFEST')\n");
                else
                        print_table(images);
                return 0;
        }
        if (argc != 3) {
                image_usage(stderr);
                return 2;
        }
        if (!strcmp(sub, "import")) {
                char abs[PATH_MAX];
                /* seatd reads the path itself: make it absolute here, where it was typed. */
                if (!realpath(argv[2], abs))
                        return seat_error_set(ret_error, errno, "manifest '%s': %m", argv[2]), 1;
                return one_image_verb("image.import", "manifest", abs, ret_error);
        }
        if (!strcmp(sub, "pull"))
                return one_image_verb("image.pull", "url", argv[2], ret_error);
        if (!strcmp(sub, "verify"))
                return one_image_verb("image.verify", "name", argv[2], ret_error);
        if (!strcmp(sub, "remove"))
                return one_image_verb("image.remove", "name", argv[2], ret_error);
        fprintf(stderr, "seatctl: unknown image command '%s'\n", sub);
        image_usage(stderr);
        return 2;
}
