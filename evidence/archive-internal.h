/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The evidence archive's format, private to archive*.c and tar.c: what the manifest,
 * sealing, reading and the tar stream share. The API is archive.h. */
#pragma once

#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>
#include "archive.h"
#include "common/fileio.h"
#include "signing/hash.h"
#include "signing/sodium-cleanup.h"
#include "common/jsonframe.h"

#define FORMAT_NAME "seatd-evidence"
#define TAR_BLOCK 512U
#define SS_ABYTES crypto_secretstream_xchacha20poly1305_ABYTES
#define SS_HEADER crypto_secretstream_xchacha20poly1305_HEADERBYTES
#define CT_CHUNK_MAX (ARCHIVE_CHUNK_SIZE + SS_ABYTES)
#define MANIFEST_DEPTH 8
#define PARTIAL_FMT ".seatd-partial-%04u"


/*
 * Sealing runs as two stages on two threads: this one reads the inputs straight into the
 * chunk buffer, hashes each member (BLAKE2b-512) and encrypts a chunk into a free slot of a
 * small ring; a writer thread hashes each sealed chunk into the payload digest and writes
 * it. The two hashes cost more than the encryption itself, so on two cores this keeps
 * sealing near raw crypto_secretstream speed (tests/bench/bench-evidence.c).
 */
#define RING_SLOTS 8U

typedef struct Writer {
        pthread_t thread;
        bool running;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        uint8_t *slots;              /* RING_SLOTS × SLOT_SIZE */
        size_t len[RING_SLOTS];
        unsigned head, tail, count;  /* filled at head, written from tail */
        bool done;                   /* no more slots will come */
        int error;                   /* the first write failure, -errno */
        int fd;
        crypto_generichash_state *payload_hash;
        uint64_t *written;
        uint64_t synced;             /* payload bytes handed to writeback */
} Writer;

typedef struct Sealer {
        int fd;
        const char *path;
        crypto_secretstream_xchacha20poly1305_state *ss; /* sodium_malloc'd */
        crypto_generichash_state payload_hash;
        uint8_t *plain;      /* ARCHIVE_CHUNK_SIZE */
        size_t plain_len;
        uint64_t chunks_left;
        uint64_t written;    /* payload bytes */
        Writer w;
} Sealer;

typedef struct SealInputs {
        int *fds;
        size_t n;
} SealInputs;


typedef struct Source {
        int fd;               /* or -1 with buf */
        const uint8_t *buf;
        size_t len, pos;
} Source;


typedef struct TarReader {
        const ArchiveManifest *m;
        int dfd;
        int *fds;               /* one partial file per member */
        size_t member;          /* index of the current member, n_members in the trailer */
        enum { TAR_HEADER, TAR_DATA, TAR_PAD, TAR_TRAILER, TAR_DONE } phase;
        uint8_t block[TAR_BLOCK];
        size_t have;            /* bytes of block */
        uint64_t left;          /* data / pad / trailer bytes left */
        crypto_generichash_state h;
} TarReader;


typedef struct Opener {
        const SeatBoxSecretKey *fac;
        crypto_secretstream_xchacha20poly1305_state *ss; /* sodium_malloc'd */
        uint8_t *plain;
        TarReader *tar;
} Opener;


typedef struct Partials {
        int dfd;
        int *fds;
        size_t n;
        bool keep;  /* renamed into place: do not unlink */
} Partials;

/* Shared between the archive files; each is defined in the file named above its group. */

/* archive.c */
int build_head(const ArchiveManifest *m, const SeatSecretKey *sk, uint8_t **ret, size_t *ret_len,
                      SeatError **ret_error);
uint64_t chunks_for(uint64_t stream_size);
uint32_t get_le32(const uint8_t *p);
void origin_text(const char *given, char out[ARCHIVE_ORIGIN_MAX + 1]);
uint64_t payload_size_for(uint64_t stream_size);
bool printable_ok(const char *s, size_t max);
void put_le32(uint8_t *p, uint32_t v);
int read_block(Source *s, uint32_t min, uint32_t max, const char *what, uint8_t **ret, uint32_t *ret_len,
                      SeatError **ret_error);
bool role_valid(const char *r);
void sanitise_name(size_t index, const char *given, char out[ARCHIVE_NAME_MAX + 1]);
int seal_payload(Sealer *s, ArchiveManifest *m, const SeatBoxPublicKey *fac, SealInputs *in,
                        SeatError **ret_error);
bool seat_id_valid(const char *s);
bool session_valid(const char *s);
char *trusted_comment(const char *seat, const char *session);

/* archive-manifest.c */
bool image_ok(const char *s);
int manifest_format(const ArchiveManifest *m, char **ret, size_t *ret_len);

/* archive-seal.c */
int seal_member(Sealer *s, ArchiveMember *a, int in_fd, int64_t mtime_s, SeatError **ret_error);
int sealer_feed(Sealer *s, const uint8_t *p, size_t len, SeatError **ret_error);
int sealer_flush(Sealer *s, SeatError **ret_error);
int sealer_write(Sealer *s, const void *buf, size_t len, SeatError **ret_error);
int write_failed(const Sealer *s, int r, SeatError **ret_error);
int writer_start(Sealer *s);
int writer_stop(Writer *w);

/* archive-open.c */
int archive_check_expected(const ArchiveManifest *m, const char *seat, const char *session, SeatError **ret_error);
/* libsodium first (whoever opens an archive goes on to verify it), then the file:
 * read-only, not through a link, and a regular file. */
int open_archive_fd(const char *path, SeatError **ret_error);
int open_out_dir(const char *out_dir, SeatError **ret_error);
int partials_commit(Partials *p, const ArchiveManifest *m, SeatError **ret_error);
int partials_create(Partials *p, const ArchiveManifest *m, SeatError **ret_error);
void partials_done(Partials *p);
int read_fail(SeatError **ret_error, int r, const char *what);
int read_head(Source *s, const SeatPublicKey *host, ArchiveManifest **ret, SeatError **ret_error);
int src_read(Source *s, void *dst, size_t n);
int walk_payload(Source *s, const ArchiveManifest *m, Opener *op, SeatError **ret_error);

/* tar.c */
int tar_feed(TarReader *t, const uint8_t *p, size_t len, SeatError **ret_error);
void tar_header(const ArchiveMember *a, int64_t mtime_s, uint8_t block[TAR_BLOCK]);
uint64_t tar_padded(uint64_t n);
