/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "common/error.h"
#include "conf.h"

/* Serve until SIGTERM/SIGINT. The config is borrowed. */
int web_server_run(const WebConfig *conf, SeatError **ret_error);
