/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Sealed evidence archives (docs/evidence-format.md, "Archive"):
 *
 *   "SEATDEV1"
 *   u32le manifest length, manifest JSON          (plaintext: anyone sees what it holds)
 *   u32le signature length, minisign signature    (host Ed25519 key, over the manifest)
 *   --- payload: its BLAKE2b-512 and size are in the signed manifest ---
 *   u32le 80, crypto_box_seal(stream key) to the facilitator's X25519 key
 *   crypto_secretstream_xchacha20poly1305 header (24 bytes)
 *   chunks: u32le length, ciphertext (64 KiB of plaintext each, the last shorter and
 *           tagged FINAL)
 *
 * The plaintext is a ustar stream of regular files named members/0001, members/0002, …;
 * the manifest maps each to a sanitised name, role, size and BLAKE2b-512.
 *
 * What a caller may touch: everything here. Nothing prints. Errors: -EINVAL (argument),
 * -EBADMSG (malformed), -EPIPE (truncated), -EKEYREJECTED (signature, digest, decryption
 * or audit MAC failure), -ENOKEY (another key), -EXDEV (another seat/session than
 * expected), -ENOSPC, -EEXIST, -ELOOP (a symlink), -EFBIG, -errno.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "audit.h"
#include "signing/boxkey.h"
#include "common/error.h"
#include "signing/minisign.h"

#define ARCHIVE_MAGIC "SEATDEV1"
#define ARCHIVE_MAGIC_LEN 8U
#define ARCHIVE_VERSION 1
#define ARCHIVE_CHUNK_SIZE (64U * 1024U)
#define ARCHIVE_MANIFEST_MAX (1024U * 1024U)
#define ARCHIVE_MEMBERS_MAX 4096U
#define ARCHIVE_NAME_MAX 100U
#define ARCHIVE_ORIGIN_MAX 256U
#define ARCHIVE_SEAT_ID_MAX 64U
#define ARCHIVE_SESSION_MAX 64U  /* hex characters */
#define ARCHIVE_IMAGE_MAX 160U
/* ustar's 11 octal digits. */
#define ARCHIVE_MEMBER_HARD_MAX ((1ULL << 33) - 1)
#define ARCHIVE_MEMBER_MAX_DEFAULT (1ULL << 30)
#define ARCHIVE_SEALED_KEY_BYTES (32U + 48U)
#define ARCHIVE_SEALED_AUDIT_KEY_BYTES (AUDIT_KEY_BYTES + 48U)

typedef struct ArchiveInput {
        const char *name; /* as given (e.g. the guest path): sanitised for the archive */
        const char *role; /* "audit", "console", "capture", "recording" (asciicast), "file" or "symlink" (the file
                           * holds the link's target, never followed) */
        const char *path; /* host path: a regular file, never followed if a symlink */
        uint64_t original_size; /* 0: the file's own size; else the size of what the file
                                 * was already cut from (≥ its size): marked truncated */
} ArchiveInput;

/* What was taken from the guest's evidence paths, and what not (signed, in the manifest's
 * "guest" object): counts, and the caps that applied. */
#define ARCHIVE_REASON_MAX 1000

typedef struct ArchiveCollection {
        bool complete;            /* nothing cut, nothing skipped */
        uint64_t files, symlinks; /* members taken */
        uint64_t bytes;           /* their bytes in the archive */
        uint64_t truncated;       /* files cut at a cap (they are members, marked truncated) */
        uint64_t skipped;         /* entries not taken: over max_files, special files, unreadable */
        uint64_t max_bytes, max_file_bytes, max_files;
        /* Why the guest's files could not all be read (its filesystem unreadable, the
         * appliance crashed or was killed at its timeout), printable ASCII; "" when nothing
         * went wrong. Signed with the manifest ("guest"."reason"); a reason makes the
         * collection incomplete. */
        char reason[ARCHIVE_REASON_MAX + 1];
} ArchiveCollection;
#define ARCHIVE_COUNT_MAX (1ULL << 53)

/* The session's packet capture (the egress profile's "capture on"; signed, in the
 * manifest's "capture" object): what is in its members (role "capture", pcapng), and every
 * way it is less than all the traffic. */
typedef struct ArchiveCapture {
        bool complete;            /* all counts of loss below are 0 and there is no reason */
        uint64_t snaplen, max_bytes;      /* the profile's caps */
        uint64_t files, bytes;            /* the capture members (set by archive_seal()) */
        uint64_t packets, bytes_on_wire;  /* every packet seen, and its length on the wire */
        uint64_t packets_cut, bytes_cut;  /* cut at snaplen: how many, and what was left out */
        uint64_t files_rotated, packets_rotated, bytes_rotated; /* removed to stay under max_bytes */
        uint64_t packets_unwritten;       /* a write failed (disk full) */
        uint64_t kernel_drops;            /* dropped before the capture read them (pcap_stats) */
        uint64_t restarts;                /* seatd restarted during the session: a gap */
        char reason[ARCHIVE_REASON_MAX + 1]; /* printable ASCII, "" when nothing went wrong */
} ArchiveCapture;

typedef struct ArchiveSealParams {
        const char *seat_id;              /* [A-Za-z0-9._-]{1,64} */
        const char *session;              /* 32-64 hex digits; NULL: 16 random bytes */
        const char *image_digest;         /* optional, printable, at most ARCHIVE_IMAGE_MAX */
        const ArchiveInput *inputs;
        size_t n_inputs;
        const SeatSecretKey *host_key;
        const SeatBoxPublicKey *facilitator;
        /* The audit chain's initial key: raw (sealed here) or already sealed at session
         * start (seatd should do that and wipe the raw key). At most one; with neither, an
         * "audit" member cannot be verified on open and is refused. */
        const uint8_t *audit_key;
        const uint8_t *audit_key_sealed;
        uint64_t max_member_size;         /* 0: ARCHIVE_MEMBER_MAX_DEFAULT; larger files are
                                           * cut there and marked "truncated" */
        const ArchiveCollection *collection; /* the guest files' summary, or NULL */
        const ArchiveCapture *capture;    /* the packet capture's summary, or NULL; its files
                                           * and bytes are counted from the members */
        int64_t created_ms;               /* 0: now */
} ArchiveSealParams;

typedef struct ArchiveMember {
        char path[24];                    /* members/NNNN in the tar stream */
        char name[ARCHIVE_NAME_MAX + 1];  /* the sanitised file name on open */
        char origin[ARCHIVE_ORIGIN_MAX + 1];
        char role[16];
        uint64_t size;
        uint64_t original_size;
        bool truncated;
        uint8_t digest[64];
} ArchiveMember;

typedef struct ArchiveManifest {
        char seat[ARCHIVE_SEAT_ID_MAX + 1];
        char session[ARCHIVE_SESSION_MAX + 1];
        char image[ARCHIVE_IMAGE_MAX + 1];
        int64_t created_ms;
        uint8_t facilitator_key_id[SEAT_BOX_KEY_ID_BYTES];
        uint64_t chunk_size, stream_size, chunks, payload_size;
        uint8_t payload_digest[64];
        bool has_audit_key;
        uint8_t audit_key_sealed[ARCHIVE_SEALED_AUDIT_KEY_BYTES];
        bool has_collection;
        ArchiveCollection collection;
        bool has_capture;
        ArchiveCapture capture;
        size_t n_members;
        ArchiveMember *members;
} ArchiveManifest;

ArchiveManifest *archive_manifest_free(ArchiveManifest *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(ArchiveManifest *, archive_manifest_free)

/* Pure parser with every consistency check that needs no key (fuzzed). */
int archive_manifest_parse(const char *json, size_t len, ArchiveManifest **ret, SeatError **ret_error);

/* The manifest as JSON (the fields of docs/evidence-format.md, digests in hex). */
int archive_manifest_to_json(const ArchiveManifest *m, json_object **ret);
/* For people: seat, session, times, the guest collection and every member, one per line,
 * written to f (the only function here that writes anywhere but its arguments). */
void archive_manifest_describe(const ArchiveManifest *m, FILE *f);

/* A uint64_t count of a struct, by its JSON key. The manifest's "guest" and "capture"
 * counts and seatd's saved capture counters are each a table of these, so that one loop
 * writes them and one reads them back, in the table's order. */
typedef struct ArchiveCount {
        const char *key;
        size_t offset; /* of the uint64_t in the struct */
} ArchiveCount;

/* Adds each count of base to o, in the table's order; -ENOMEM when one was not added. */
int archive_counts_to_json(json_object *o, const ArchiveCount *counts, size_t n, const void *base);
/* Reads each count (required, 0..ARCHIVE_COUNT_MAX) from o into base, but those whose key
 * is in skip (NULL-terminated, or NULL). NULL, or the key that is missing or bad. */
const char *archive_counts_parse(json_object *o, const ArchiveCount *counts, size_t n, char *const *skip,
                                 void *base);

/* No packet lost, cut or rotated away, no reason: what "complete" must say. */
bool archive_capture_is_complete(const ArchiveCapture *c);
/* The capture's counters from o (each 0..ARCHIVE_COUNT_MAX, all required) into c; without
 * with_files, "files" and "bytes" are left out (the seal counts them from the members).
 * NULL, or the key that is missing or bad. */
const char *archive_capture_counts_parse(json_object *o, bool with_files, ArchiveCapture *c);

/* A name safe to create under a directory: 1..100 of [A-Za-z0-9._-], not starting with '.'. */
bool archive_name_is_safe(const char *name);

int archive_seal_audit_key(const SeatBoxPublicKey *facilitator, const uint8_t key[AUDIT_KEY_BYTES],
                           uint8_t ret_sealed[ARCHIVE_SEALED_AUDIT_KEY_BYTES]);

/*
 * Seal the inputs into a new archive at path (refused if it exists). Written to a temp
 * file beside it, fsync'ed, renamed, directory fsync'ed; on any failure (ENOSPC
 * included) the temp file is removed and nothing is left at path.
 */
int archive_seal(const char *path, const ArchiveSealParams *p, SeatError **ret_error);

/*
 * Everything checkable without the facilitator's secret key: layout and caps, the host
 * signature over the manifest, the manifest's consistency, seat/session (if expected_*
 * are given), the sealed key's and every chunk's length against the manifest, the exact
 * end of the file, and the payload's BLAKE2b-512 and size against the signed manifest.
 * *ret_manifest (may be NULL) gets the verified manifest.
 */
int archive_verify(const char *path, const SeatPublicKey *host, const char *expected_seat,
                   const char *expected_session, ArchiveManifest **ret_manifest, SeatError **ret_error);
/* The same over a buffer (fuzzing). host NULL: the signature is not checked. */
int archive_verify_buffer(const void *buf, size_t len, const SeatPublicKey *host, const char *expected_seat,
                          const char *expected_session, ArchiveManifest **ret_manifest, SeatError **ret_error);

/* Header and manifest only (for listing); the signature is checked when host is given. */
int archive_inspect(const char *path, const SeatPublicKey *host, ArchiveManifest **ret_manifest,
                    SeatError **ret_error);

/*
 * verify, then decrypt (FINAL tag on exactly the last chunk), check the tar stream
 * against the manifest (names, sizes, BLAKE2b-512 of every member), verify the audit log
 * with the unsealed initial key, and only then move the members into out_dir (created
 * 0700 if missing) under their sanitised names. Members are written with openat() below
 * out_dir's fd, O_NOFOLLOW|O_EXCL: existing files are refused, nothing lands outside.
 * On failure nothing is left in out_dir.
 */
int archive_open(const char *path, const SeatPublicKey *host, const SeatBoxSecretKey *facilitator,
                 const char *out_dir, ArchiveManifest **ret_manifest, SeatError **ret_error);
