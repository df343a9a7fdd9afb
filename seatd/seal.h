/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Sealing one quarantined session (docs/evidence-format.md, "How seatd seals a session"):
 * a quarantine directory holds what a reset or release set aside (overlay.qcow2,
 * console.log, audit.log + audit.key, audit-pre-* segments) and session.json, written
 * with them, saying whose session it is and which guest paths the image names. Sealing
 * reads the guest paths out of the overlay with libguestfs (caps from seatd.conf), seals
 * everything into one archive, and removes the directory only once the archive is
 * fsync'ed. A directory is sealed by one thread at a time (flock on it).
 *
 * Nothing here touches seats: seat.c turns a failure into a FAULTED seat.
 */

#include <stdbool.h>
#include <stdint.h>

#include "signing/boxkey.h"
#include "conf.h"
#include "common/error.h"
#include "signing/minisign.h"

#define SEAL_SESSION_INFO "session.json"
#define SEAL_FAILED_NOTE "seal-failed"
/* The packet capture's counters (seatd/seat-capture.c) beside its capture-NNNN.pcapng. */
#define SEAL_CAPTURE_STATS "capture.json"
#define SEAL_CAPTURE_PREFIX "capture-"
#define SEAL_CAPTURE_FILES_MAX 256

typedef struct SealContext {
        const SeatConfig *config;
        const char *archives_dir;
        const SeatSecretKey *host_key;
        const SeatBoxPublicKey *facilitator;
        /* Disk admission for what a seal writes (the guest copies beside the quarantine, the
         * archive): need bytes are promised before the guest is read, or -ENOSPC with a
         * message; settle gives the promise back once the seal is over. NULL: no admission. */
        int (*admit)(void *userdata, const char *seat_id, uint64_t need, SeatError **ret_error);
        void (*settle)(void *userdata, uint64_t need);
        void *userdata;
} SealContext;

typedef struct SealSessionInfo {
        const char *seat_id;
        int64_t generation;
        const char *image;              /* name */
        const char *image_digest;       /* hex, may be empty */
        const char *filesystem;         /* guest_init.filesystem of the image, or NULL */
        char *const *evidence_paths;    /* NULL-terminated, may be NULL */
} SealSessionInfo;

/* Write qdir/session.json (atomically). */
int seal_write_session_info(const char *qdir, const SealSessionInfo *info, SeatError **ret_error);

/* Whether qdir holds a session still to be sealed (its session.json is there). */
bool seal_dir_is_pending(const char *qdir);

/*
 * Seal qdir, a session of seat_id (named in log lines): -EBUSY when another thread is
 * sealing it right now. On success the directory is gone and *ret_archive (may be NULL)
 * is the archive's path. On failure everything is kept (guest copies excepted: they are
 * made again) and the reason is written to qdir/seal-failed as well as returned.
 */
int seal_session_dir(const SealContext *ctx, const char *seat_id, const char *qdir, char **ret_archive,
                     SeatError **ret_error);

/* The reason the last attempt on qdir failed (malloc'd), or NULL. */
char *seal_dir_failure(const char *qdir);
