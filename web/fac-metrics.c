/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/macro.h"
#include "fac-metrics.h"

#define LABEL_MAX 128

static json_object *get(json_object *o, const char *key, json_type type) {
        json_object *v;
        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, type))
                return NULL;
        return v;
}

/* A number of any JSON numeric type (an int64 stays exact). */
static bool number(json_object *v, double *ret) {
        if (v && (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))) {
                *ret = json_object_get_double(v);
                return isfinite(*ret);
        }
        return false;
}

static void print_number(FILE *f, json_object *v) {
        if (json_object_is_type(v, json_type_int))
                fprintf(f, "%lld", (long long) json_object_get_int64(v));
        else
                fprintf(f, "%.15g", json_object_get_double(v));
}

/* A label value: \, " and newline escaped (the format's rule), control bytes dropped. */
static void print_label(FILE *f, const char *s) {
        for (size_t i = 0; s[i] && i < LABEL_MAX; i++) {
                unsigned char ch = (unsigned char) s[i];
                if (ch == '\\' || ch == '"')
                        fprintf(f, "\\%c", ch);
                else if (ch == '\n')
                        fputs("\\n", f);
                else if (ch >= 0x20 && ch != 0x7f)
                        fputc(ch, f);
        }
}

static void head(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP seatd_%s %s\n# TYPE seatd_%s %s\n", name, help, name, type);
}

static void scalar(FILE *f, json_object *o, const char *key, const char *name, const char *type, const char *help) {
        double d;
        json_object *v = NULL;
        if (o && json_object_object_get_ex(o, key, &v) && number(v, &d)) {
                head(f, name, type, help);
                fprintf(f, "seatd_%s ", name);
                print_number(f, v);
                fputc('\n', f);
        }
}

/* {label: n, ...} as one sample per key. */
static void labelled(FILE *f, json_object *o, const char *label, const char *name, const char *type, const char *help) {
        if (!o)
                return;
        bool first = true;
        json_object_object_foreach(o, k, v) {
                double d;
                if (!number(v, &d))
                        continue;
                if (first)
                        head(f, name, type, help);
                first = false;
                fprintf(f, "seatd_%s{%s=\"", name, label);
                print_label(f, k);
                fputs("\"} ", f);
                print_number(f, v);
                fputc('\n', f);
        }
}

/* {buckets: [[le, cumulative]...], sum, count}: the buckets in order, +Inf last (added
 * with count when seatd's list does not end with it). */
static void histogram(FILE *f, json_object *h, const char *name, const char *help) {
        json_object *b = get(h, "buckets", json_type_array), *sum = NULL, *count = NULL;
        double s, c;
        if (!b || !json_object_object_get_ex(h, "sum", &sum) || !number(sum, &s) ||
            !json_object_object_get_ex(h, "count", &count) || !number(count, &c))
                return;
        /* Refuse the whole histogram if one bucket is malformed: a partial one would lie. */
        size_t n = json_object_array_length(b);
        double last_le = -INFINITY, last_count = 0;
        bool inf = false;
        for (size_t i = 0; i < n; i++) {
                json_object *pair = json_object_array_get_idx(b, i), *le, *cnt;
                double l, k;
                if (!json_object_is_type(pair, json_type_array) || json_object_array_length(pair) != 2 || inf)
                        return;
                le = json_object_array_get_idx(pair, 0);
                cnt = json_object_array_get_idx(pair, 1);
                if (json_object_is_type(le, json_type_string) && !strcmp(json_object_get_string(le), "+Inf"))
                        l = INFINITY, inf = true;
                else if (!number(le, &l))
                        return;
                if (!number(cnt, &k) || l <= last_le || k < last_count || k > c)
                        return;
                last_le = l;
                last_count = k;
        }
        head(f, name, "histogram", help);
        for (size_t i = 0; i < n; i++) {
                json_object *pair = json_object_array_get_idx(b, i), *le = json_object_array_get_idx(pair, 0);
                double l;
                fprintf(f, "seatd_%s_bucket{le=\"", name);
                if (number(le, &l))
                        fprintf(f, "%.15g", l);
                else
                        fputs("+Inf", f);
                fputs("\"} ", f);
                print_number(f, json_object_array_get_idx(pair, 1));
                fputc('\n', f);
        }
        if (!inf) {
                fprintf(f, "seatd_%s_bucket{le=\"+Inf\"} ", name);
                print_number(f, count);
                fputc('\n', f);
        }
        fprintf(f, "seatd_%s_sum ", name);
        print_number(f, sum);
        fprintf(f, "\nseatd_%s_count ", name);
        print_number(f, count);
        fputc('\n', f);
}

/* {name: {ready, target}} as two gauges labelled by pool. */
static void pools(FILE *f, json_object *p) {
        static const char *const fields[][2] = { { "ready", "ready seats in each pool" },
                                                 { "target", "seats each pool is to hold" } };
        if (!p)
                return;
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                bool first = true;
                json_object_object_foreach(p, k, v) {
                        json_object *x = NULL;
                        double d;
                        if (!json_object_is_type(v, json_type_object) || !json_object_object_get_ex(v, fields[i][0], &x) ||
                            !number(x, &d))
                                continue;
                        if (first) {
                                char name[32];
                                snprintf(name, sizeof(name), "pool_%s", fields[i][0]);
                                head(f, name, "gauge", fields[i][1]);
                        }
                        first = false;
                        fprintf(f, "seatd_pool_%s{pool=\"", fields[i][0]);
                        print_label(f, k);
                        fputs("\"} ", f);
                        print_number(f, x);
                        fputc('\n', f);
                }
        }
}

int fac_metrics_render(json_object *m, char **ret, size_t *ret_len) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                return -ENOMEM;
        labelled(f, get(m, "seats_by_state", json_type_object), "state", "seats", "gauge", "seats in each state");
        /* The histograms under "latency" (seatd today) or at the top (the first contract). */
        json_object *lat = get(m, "latency", json_type_object);
        histogram(f, get(lat ? lat : m, "provision", json_type_object), "provision_seconds", "time a seat.provision took");
        histogram(f, get(lat ? lat : m, "reset", json_type_object), "reset_seconds", "time a seat.reset took");
        histogram(f, get(lat ? lat : m, "claim", json_type_object), "claim_seconds", "time a claim of a pooled seat took");
        scalar(f, m, get(m, "calls_total", json_type_int) ? "calls_total" : "exec_total", "exec_total", "counter",
               "commands run in seats (agent calls started)");
        labelled(f, get(m, "egress_denied_packets", json_type_object), "seat", "egress_denied_packets_total", "counter",
                 "packets a seat sent that its egress profile denied");
        json_object *seal = get(m, "seal", json_type_object);
        scalar(f, seal, "queue", "seal_queue", "gauge", "sessions waiting to be sealed into evidence archives");
        scalar(f, seal, "failures", "seal_failures_total", "counter", "sessions that could not be sealed");
        pools(f, get(m, "pools", json_type_object));
        json_object *host = get(m, "host", json_type_object);
        scalar(f, host, "mem_total_bytes", "host_memory_total_bytes", "gauge", "the host's memory");
        scalar(f, host, "mem_available_bytes", "host_memory_available_bytes", "gauge", "the host's memory available");
        scalar(f, host, "disk_total_bytes", "host_disk_total_bytes", "gauge", "the size of seatd's state file system");
        scalar(f, host, "disk_free_bytes", "host_disk_free_bytes", "gauge", "free space on seatd's state file system");
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        *ret_len = len;
        return 0;
}
