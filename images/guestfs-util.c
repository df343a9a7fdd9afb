/* SPDX-License-Identifier: LGPL-2.1-or-later */
#if HAVE_LIBGUESTFS
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "guestfs-util.h"
#include "common/log.h"

#define GUESTFS_MEMSIZE_MIB 384

int image_guestfs_error(guestfs_h *g, const char *context, int fallback_errno, const char *what, SeatError **ret_error) {
        const char *msg = guestfs_last_error(g);
        int e = guestfs_last_errno(g);
        if (!msg)
                msg = "unknown libguestfs error";
        /* Its multi-line messages on one line; anything else unprintable escaped (it may
         * quote guest data). */
        _cleanup_free_ char *flat = strndup(msg, 1024);
        if (!flat)
                return -ENOMEM;
        for (char *c = flat; *c; c++)
                if (*c == '\n' || *c == '\r' || *c == '\t')
                        *c = ' ';
        _cleanup_free_ char *esc = log_escape(flat, strlen(flat), 1024);
        return seat_error_set(ret_error, e > 0 ? e : fallback_errno, "%s: %s: %s", context, what,
                              esc ? esc : "(out of memory)");
}

int image_guestfs_new(const char *context, const ImageInspectOptions *opts, guestfs_h **ret, SeatError **ret_error) {
        /* No environment: LIBGUESTFS_* variables must not change how a disk is opened. */
        _cleanup_(guestfs_closep) guestfs_h *g = guestfs_create_flags(GUESTFS_CREATE_NO_ENVIRONMENT);
        if (!g)
                return seat_error_set(ret_error, errno > 0 ? errno : ENOMEM, "%s: create a libguestfs handle: %m", context);
        guestfs_set_error_handler(g, NULL, NULL); /* a library does not print: errors come back to the caller */

        char *tcg[] = { (char *) "force_tcg", NULL }, *none[] = { NULL };
        if (guestfs_set_backend(g, "direct") < 0 || guestfs_set_backend_settings(g, opts && opts->force_tcg ? tcg : none) < 0 ||
            guestfs_set_memsize(g, GUESTFS_MEMSIZE_MIB) < 0 || guestfs_set_smp(g, 1) < 0 ||
            guestfs_set_network(g, 0) < 0 || guestfs_set_autosync(g, 0) < 0 ||
            (opts && opts->cache_dir && guestfs_set_cachedir(g, opts->cache_dir) < 0) ||
            (opts && opts->qemu_sandbox && guestfs_config(g, "-sandbox", IMAGE_GUESTFS_QEMU_SANDBOX) < 0) ||
            /* after libguestfs' own -cpu on QEMU's command line: the last one counts */
            (opts && opts->force_tcg && guestfs_config(g, "-cpu", IMAGE_GUESTFS_TCG_CPU) < 0))
                return image_guestfs_error(g, context, EINVAL, "configure libguestfs", ret_error);
        *ret = TAKE_PTR(g);
        return 0;
}

int image_guestfs_add_and_launch(guestfs_h *g, const char *context, const char *disk, const char *format,
                                 const ImageInspectOptions *opts, SeatError **ret_error) {
        /* Read-only (libguestfs writes to an overlay of its own) and the format pinned:
         * never probed, so a raw disk can never be read as a qcow2 pointing elsewhere. */
        if (guestfs_add_drive_opts(g, disk, GUESTFS_ADD_DRIVE_OPTS_READONLY, 1, GUESTFS_ADD_DRIVE_OPTS_FORMAT, format,
                                   -1) < 0)
                return image_guestfs_error(g, context, EIO, "add the disk", ret_error);

        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (guestfs_launch(g) < 0) {
                _cleanup_error_ SeatError *inner = NULL;
                (void) image_guestfs_error(g, context, EIO, "launch the libguestfs appliance", &inner);
                return seat_error_set(ret_error, inner ? inner->code : EIO, "%s%s",
                                      inner ? inner->message : "launch the libguestfs appliance",
                                      opts && opts->force_tcg ? "" : " (if /dev/kvm is unusable on this host, set accel = tcg in seatd.conf)");
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        log_debug("%s: appliance up in %.1f s%s", context,
                  (double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9,
                  opts && opts->force_tcg ? " (TCG)" : "");
        return 0;
}

#endif
