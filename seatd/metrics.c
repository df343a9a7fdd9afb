/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "common/macro.h"
#include "metrics.h"

static const int64_t bounds_ms[METRICS_N_BOUNDS] = METRICS_BOUNDS_MS;
static const char *const latency_names[_METRIC_LATENCY_MAX] = {
        [METRIC_PROVISION] = "provision",
        [METRIC_CLAIM] = "claim",
        [METRIC_RESET] = "reset",
};

void metrics_observe(Metrics *m, MetricLatency which, int64_t ms) {
        size_t i = 0;
        if (ms < 0)
                ms = 0;
        while (i < METRICS_N_BOUNDS && ms > bounds_ms[i])
                i++;
        atomic_fetch_add(&m->bucket[which][i], 1);
        atomic_fetch_add(&m->sum_ms[which], (uint64_t) ms);
}

json_object *metrics_latency_json(Metrics *m) {
        json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        for (int w = 0; w < _METRIC_LATENCY_MAX; w++) {
                json_object *h = json_object_new_object(), *b = json_object_new_array();
                uint64_t cum = 0;
                for (size_t i = 0; i <= METRICS_N_BOUNDS; i++) {
                        json_object *pair = json_object_new_array();
                        cum += atomic_load(&m->bucket[w][i]);
                        json_object_array_add(pair, i < METRICS_N_BOUNDS ? json_object_new_double((double) bounds_ms[i] / 1000.0)
                                                                         : json_object_new_string("+Inf"));
                        json_object_array_add(pair, json_object_new_int64((int64_t) cum));
                        json_object_array_add(b, pair);
                }
                json_object_object_add(h, "buckets", b);
                json_object_object_add(h, "sum", json_object_new_double((double) atomic_load(&m->sum_ms[w]) / 1000.0));
                json_object_object_add(h, "count", json_object_new_int64((int64_t) cum));
                json_object_object_add(o, latency_names[w], h);
        }
        return o;
}
