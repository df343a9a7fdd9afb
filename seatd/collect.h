/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The guest files of a quarantined session, read by seatd-collect (seatd/seatd-collect.c)
 * in a process of its own: dropped to evidence_collect_user (never root), under seatd's
 * seccomp filter and no_new_privs, its QEMU with -sandbox on, under a subreaper that kills
 * everything it started at the timeout or its exit, in its process group or not
 * (seatd/proc-tree.h). What it reports is checked here: every copy must be a plain file of
 * that user in the staging directory, of the size it says, before its ownership is taken
 * back. At most COLLECT_PARALLEL_MAX appliances run at once, each bounded by its timeout:
 * a hung one holds up nobody for long.
 */

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "images/guest-files.h"

#define COLLECT_PARALLEL_MAX 2
#define COLLECT_OUTPUT_MAX (32U << 20) /* bytes of seatd-collect's report */

typedef struct CollectRequest {
        const char *helper;         /* the seatd-collect binary */
        const char *user;           /* evidence_collect_user */
        const char *disk;           /* the overlay (qcow2), made readable to user here */
        const char *filesystem;     /* NULL: the disk's only one */
        char *const *paths;
        const char *staging;        /* made here, handed to user, taken back */
        const char *cache_dir;      /* libguestfs' appliance cache; user's part made here */
        const char *context;
        GuestFilesLimits limits;
        bool force_tcg;
        int timeout_s;
} CollectRequest;

/*
 * 0: *ret holds the copies (checked). 1: the guest's disk could not be read (its filesystem
 * unreadable, the appliance crashed, hung past the timeout or was killed): *ret_reason says
 * why (printable ASCII, malloc'd), the copies are gone. -errno: the host's failure
 * (the user is missing, the staging disk full, ...), with a message.
 */
int collect_run(const CollectRequest *req, GuestFiles **ret, char **ret_reason, SeatError **ret_error);

/* The seatd-collect beside the running seatd (a build tree), else libexecdir's. */
const char *collect_helper_path(void);
