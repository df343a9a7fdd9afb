/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Pulling a signed image bundle over HTTPS (docs/image-format.md, "Pulling").
 *
 * In order: the URL is checked (https://, or http:// only when allowed); the manifest
 * (at most IMAGE_MANIFEST_MAX) and its signature (URL + ".minisig", at most
 * PULL_SIG_MAX) are fetched into memory and checked by the store (signature, trusted
 * key, expiry, rollback) before any file byte is fetched; each file is fetched from the
 * manifest's base URL + its name, capped at the size the signed manifest declares, and
 * every chunk is compared with its signed digest the moment it is complete; the verified
 * files are imported with image_store_import_from(), which checks them once more.
 *
 * Resume: a file's download lives in STAGING/IDENTITY.part. A later pull re-hashes its
 * prefix, keeps the complete chunks that verify and asks for the rest with a Range
 * request. An interrupted transfer (connection dropped, stalled, cancelled, server 5xx)
 * keeps that verified prefix; every other failure removes the .part files.
 *
 * Library code: never prints; thread-safe (one pull per thread).
 */

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "manifest.h"
#include "store.h"

#define PULL_SIG_MAX (64u * 1024u)
#define PULL_URL_MAX 8192u
#define PULL_MAX_REDIRECTS 5L
#define PULL_LOW_SPEED_LIMIT_DEFAULT 1L /* bytes per second ... */
#define PULL_LOW_SPEED_TIME_DEFAULT 30L /* ... over this many seconds: a stall */
#define PULL_CONNECT_TIMEOUT_DEFAULT 30L

typedef struct PullOptions {
        bool allow_plain_http;   /* http:// URLs (local mirrors only); https:// is always allowed */
        const char *ca_file;     /* CA bundle for HTTPS; NULL: the system store */
        const char *staging_dir; /* where downloads are kept until imported (created 0700) */
        uint64_t max_file_bytes; /* cap on one file, besides the store's own; 0: none */
        long low_speed_limit;    /* bytes/s; 0: PULL_LOW_SPEED_LIMIT_DEFAULT */
        long low_speed_time;     /* seconds; 0: PULL_LOW_SPEED_TIME_DEFAULT */
        long connect_timeout;    /* seconds; 0: PULL_CONNECT_TIMEOUT_DEFAULT */
} PullOptions;

/*
 * Pull the image whose manifest is at url into the store. cb (may be NULL): progress
 * per file ("download 'NAME'", bytes of that file) and cancellation (checked during
 * every transfer: -ECANCELED, the verified prefix is kept). ret (may be NULL) gets the
 * stored manifest. Errors name the URL (without credentials or query) and what to do:
 * EPERM (http:// not allowed), EINVAL (bad URL), EKEYREJECTED (certificate, signature),
 * ENOKEY, EKEYEXPIRED, ESTALE, EBADMSG (a chunk differs), EFBIG (more bytes than
 * declared), ETIMEDOUT (stalled), ECANCELED, EIO/ENOENT (transfer, HTTP status).
 */
int image_pull(ImageStore *s, const char *url, const PullOptions *opts, const StoreCallbacks *cb, ImageManifest **ret,
               SeatError **ret_error);

/* Pure: url checked against the rules above. ret_display (may be NULL) gets the URL
 * without user, password, query and fragment, fit for logs and messages. */
int image_pull_check_url(const char *url, bool allow_plain_http, char **ret_display, SeatError **ret_error);

/* Remove what an interrupted pull left in staging_dir besides the resumable .part
 * files (the pull-* directories). Call only while no pull runs (at daemon start). */
int image_pull_clean_staging(const char *staging_dir);
