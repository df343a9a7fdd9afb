/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Counters and latency histograms for the `metrics` method (seat-web renders them as
 * Prometheus text at /metrics). Lock-free: they are bumped from seat jobs on many threads
 * and read whole only by a scrape, which may see one observation half counted (a bucket
 * before its sum), as Prometheus clients tolerate.
 */

#include <json-c/json.h>
#include <stdatomic.h>
#include <stdint.h>

typedef enum MetricLatency {
        METRIC_PROVISION, /* a seat booted for a provision */
        METRIC_CLAIM,     /* a provision answered from a pool's ready seat */
        METRIC_RESET,
        _METRIC_LATENCY_MAX,
} MetricLatency;

/* Upper bounds in milliseconds; a last, implicit bucket is +Inf. TCG boots take tens of
 * seconds, a claim from a pool milliseconds: the bounds span both. */
#define METRICS_BOUNDS_MS { 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000, 300000 }
#define METRICS_N_BOUNDS 12

typedef struct Metrics {
        atomic_uint_fast64_t bucket[_METRIC_LATENCY_MAX][METRICS_N_BOUNDS + 1];
        atomic_uint_fast64_t sum_ms[_METRIC_LATENCY_MAX];
        atomic_uint_fast64_t calls; /* agent calls started (exec, terminal, copy, forward) */
        atomic_uint_fast64_t seal_failures;
} Metrics;

void metrics_observe(Metrics *m, MetricLatency which, int64_t ms);
/* {"provision": {"buckets": [[le_seconds, cumulative], ...], "sum": seconds, "count": n}, ...};
 * the last bucket's le is the string "+Inf". */
json_object *metrics_latency_json(Metrics *m);
