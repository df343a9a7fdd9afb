/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* /metrics: seatd's `metrics` answer (docs/protocol-control.md) in Prometheus' text
 * exposition format 0.0.4, every name prefixed seatd_, with HELP and TYPE lines. A pure
 * function of the JSON: a field that is missing or of another type is left out, label
 * values are escaped and capped (they are seatd's seat ids and pool names, but nothing
 * seat-web prints goes unchecked). */

#include <json-c/json.h>
#include <stddef.h>

int fac_metrics_render(json_object *metrics, char **ret, size_t *ret_len);
