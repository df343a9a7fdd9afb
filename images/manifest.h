/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The signed image manifest (docs/image-format.md). image_manifest_parse() is a pure
 * function of the manifest's bytes: every field checked, unknown fields refused. It does
 * not check the signature: callers verify the bytes first (images/store.c). */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "signing/hash.h"

#define IMAGE_MANIFEST_MAX (1024u * 1024u)
#define IMAGE_FILES_MAX 16
#define IMAGE_NAME_MAX 64
#define IMAGE_FILE_NAME_MAX 128
#define IMAGE_EVIDENCE_PATHS_MAX 64
#define IMAGE_CHUNK_MIN (64u * 1024u)

typedef enum ImageFileRole {
        IMAGE_ROLE_DISK,
        IMAGE_ROLE_KERNEL,
        IMAGE_ROLE_INITRD,
} ImageFileRole;

typedef enum ImageFormat {
        IMAGE_FORMAT_RAW,
        IMAGE_FORMAT_QCOW2,
} ImageFormat;

typedef struct ImageFile {
        char *name;
        ImageFileRole role;
        ImageFormat format;
        uint64_t size;
        size_t chunk_size;
        size_t n_chunks;
        uint8_t (*chunks)[SEAT_HASH_BYTES];
        uint8_t identity[SEAT_HASH_BYTES];
} ImageFile;

typedef struct ImageManifest {
        char *name;
        int64_t version;
        int64_t created, expires; /* seconds since the epoch */
        int64_t agent_protocol;
        bool direct_boot;
        char *kernel, *initrd;    /* file names (direct boot), else NULL */
        char *cmdline;
        int64_t memory_mib, vcpus;
        ImageFile *files;
        size_t n_files;
        char *guest_init_filesystem, *guest_init_path; /* may be NULL */
        char **evidence_paths;    /* NULL-terminated, may be empty */
        char *egress_profile;     /* may be NULL */
        uint8_t digest[SEAT_HASH_BYTES]; /* BLAKE2b-512 of the manifest's bytes */
        char key_id[17];          /* the trusted key that signed it, as minisign prints it; set by the store */
} ImageManifest;

int image_manifest_parse(const char *buf, size_t len, ImageManifest **ret, SeatError **ret_error);
ImageManifest *image_manifest_free(ImageManifest *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(ImageManifest *, image_manifest_free)

const ImageFile *image_manifest_find_file(const ImageManifest *m, const char *name);
const char *image_format_to_string(ImageFormat f);
const char *image_role_to_string(ImageFileRole r);
bool image_name_valid(const char *name);
bool image_file_name_valid(const char *name);

/* "YYYY-MM-DDTHH:MM:SSZ" only. */
int rfc3339_parse(const char *s, int64_t *ret);
int rfc3339_format(int64_t t, char *buf, size_t size);

/* The manifest as an image record for the control protocol (docs/protocol-control.md),
 * without the store's own fields. */
int image_manifest_to_json(const ImageManifest *m, json_object **ret);
