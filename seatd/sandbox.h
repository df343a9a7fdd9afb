/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* seatd's seccomp deny list (seatd/sandbox.c), for itself and all it starts. Also sets
 * no_new_privs. 0, or -errno (-EOPNOTSUPP on an architecture it does not know). */
int sandbox_seatd(void);
