/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* seatd's confinement (seatd/sandbox.c), for itself and everything it starts. Call both
 * before any thread, in this order. */

/* The seccomp deny list (libseccomp); also sets no_new_privs. 0, or -errno. */
int sandbox_seatd(void);
/* Landlock: no file under /proc opened for writing but /proc/sys/net/ipv4/conf/. 0,
 * -EOPNOTSUPP when the kernel has no Landlock or only ABI 1 (before Linux 5.19), or
 * -errno. */
int sandbox_seatd_proc(void);
