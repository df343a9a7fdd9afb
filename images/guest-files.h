/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Evidence from a stopped seat's disk (docs/evidence-format.md, "Guest files"): libguestfs
 * opens the session's overlay read-only in its own appliance (never mounted on the host,
 * the in-guest agent never asked), mounts the guest's filesystem read-only there, and
 * copies what the image manifest's evidence_paths name into a host staging directory.
 *
 * Everything on that disk is hostile: names are any bytes (they never become host paths:
 * the copies are named g000001, g000002, … by this code), symlinks are taken as records
 * of their target text and never followed, special files are skipped, and sizes, counts,
 * depth and the entries looked at are capped. What was cut or skipped is counted and
 * listed in an index, one escaped line per entry.
 *
 * What a caller may touch: everything here. Nothing prints.
 */

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "inspect.h"
#include "manifest.h"

#define GUEST_FILES_DEPTH_MAX 64         /* directory levels below an evidence path */
#define GUEST_FILES_VISIT_MAX 200000U    /* entries looked at (lstat) in one collection */
#define GUEST_FILES_DIR_NAMES_MAX 100000U /* names read from one directory */
#define GUEST_FILES_LISTING_MAX (4U << 20) /* bytes of one directory's listing, read into memory */
#define GUEST_FILES_INDEX_MAX (4U << 20) /* bytes of the index */

typedef struct GuestFilesLimits {
        uint64_t max_bytes;      /* all copies together */
        uint64_t max_file_bytes; /* one file (cut there) */
        uint64_t max_files;      /* files and symlinks taken */
} GuestFilesLimits;

typedef enum GuestEntryKind {
        GUEST_ENTRY_FILE,
        GUEST_ENTRY_SYMLINK,
} GuestEntryKind;

typedef struct GuestEntry {
        char *guest_path;        /* as found on the disk: any bytes but NUL, never a host path */
        char *host_path;         /* the copy: staging_dir/gNNNNNN (a symlink: its target text) */
        GuestEntryKind kind;
        uint64_t size;           /* bytes copied */
        uint64_t original_size;  /* the size on the guest's disk */
} GuestEntry;

typedef struct GuestFiles {
        GuestEntry *entries;
        size_t n_entries;
        uint64_t files, symlinks, bytes, truncated, skipped;
        uint64_t listings_cut;   /* directories whose listing was over GUEST_FILES_LISTING_MAX */
        char *index_path;        /* staging_dir/index.txt: every entry looked at, escaped */
} GuestFiles;

GuestFiles *guest_files_free(GuestFiles *f);
DEFINE_TRIVIAL_CLEANUP_FUNC(GuestFiles *, guest_files_free)

/*
 * disk: the overlay (its backing file is the verified image blob), opened read-only as
 * format. filesystem: the device holding the paths (the manifest's guest_init filesystem);
 * NULL: the disk's only filesystem. paths: absolute guest paths, NULL-terminated.
 * staging_dir must exist and be empty, owned by the caller. Missing paths are not an
 * error (listed as absent); a disk that cannot be opened or mounted is: -ENODEV when the
 * guest's filesystem cannot be found or mounted, -EPIPE when the appliance was up and died
 * or stopped answering while it read the guest (both the guest's doing), anything else
 * the host's (the appliance does not start, the staging disk is full).
 */
int guest_files_collect(const char *disk, ImageFormat format, const char *filesystem, char *const *paths,
                        const GuestFilesLimits *limits, const ImageInspectOptions *opts, const char *context,
                        const char *staging_dir, GuestFiles **ret, SeatError **ret_error);
