/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "common/error.h"
#include "conf.h"

/* seat-web passwd [--file F] NAME: read a password (twice from a terminal, once from a
 * pipe) and set NAME's argon2id hash in the facilitators file, other names kept. file
 * NULL: the config's facilitators_file. */
int fac_passwd(const WebConfig *c, const char *file, const char *name, SeatError **ret_error);
