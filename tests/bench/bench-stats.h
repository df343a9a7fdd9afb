/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the C benches share: a microsecond clock and percentiles of their samples. */

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline int64_t now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline int cmp_i64(const void *a, const void *b) {
        int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
        return x < y ? -1 : x > y;
}

/* The pct-th percentile of v[0..n), sorting v in place (n > 0). */
static inline int64_t percentile(int64_t *v, size_t n, int pct) {
        qsort(v, n, sizeof(*v), cmp_i64);
        return v[(n - 1) * (size_t) pct / 100];
}
