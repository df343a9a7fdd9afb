/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "common/error.h"

/* seat-web --link and --self-signed are run by root (the facilitator's shell) but write
 * into state_dir, which seat-web's own user owns. Whatever that user left there (a
 * symbolic link state_dir/tls -> /etc, planted by a compromised seat-web) must not steer
 * root's writes and chowns. So, before touching state_dir, root becomes its owner for
 * good (groups, gid, uid): the files come out as the daemon's without a chown, and a
 * planted link reaches only what seat-web could reach anyway. Not root, or state_dir
 * root's own: nothing to do. 0, or -errno with ret_error set. */
int web_become_state_owner(const char *state_dir, SeatError **ret_error);
