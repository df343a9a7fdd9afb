/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* Mount /proc, /sys, /dev, /run, /tmp (EBUSY is fine). */
int pid1_mount_api_filesystems(void);
/* Send log lines to /dev/kmsg. */
int pid1_log_to_kmsg(void);
/* Load the modules listed one path per line in path (finit_module, in order). */
int pid1_load_modules(const char *path);
/* seatd.root= on the kernel command line: mount it and make it the root. 0 when absent. */
int pid1_switch_root(void);
/* seatd.init=PATH on the kernel command line (after a root switch): exec the image's own
 * init there (systemd), which then runs guest-init --agent as a service. Returns 0 when
 * none is named, -errno when it cannot be executed (the caller serves the agent itself). */
int pid1_exec_init(void);
/* Kill everything, sync, power off or reboot. Returns only on failure (-errno). */
int pid1_finish(bool reboot);
/* Make sure fds 0, 1, 2 are open (on /dev/null), so no later fd lands there. */
void std_fds_ensure_open(void);
