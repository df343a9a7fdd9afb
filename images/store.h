/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The verified image store (docs/image-format.md): only bytes that were verified against
 * a signed manifest are kept, content-addressed and read-only, and only they boot.
 * Thread-safe: imports run on worker threads; the commit step is serialised.
 */

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "manifest.h"

typedef struct ImageStore ImageStore;

typedef struct StoreCallbacks {
        void (*progress)(void *userdata, const char *what, uint64_t done, uint64_t total);
        bool (*cancelled)(void *userdata); /* checked between chunks: -ECANCELED */
        void *userdata;
} StoreCallbacks;

/* images_dir: state_dir/images; trust_dir: state_dir/trust (high-water marks);
 * keys_dir: trusted minisign public keys (*.pub). */
int image_store_open(const char *images_dir, const char *trust_dir, const char *keys_dir, uint64_t max_file_bytes,
                     ImageStore **ret, SeatError **ret_error);
ImageStore *image_store_free(ImageStore *s);
/* Import-time libguestfs inspection of the disk holding guest-init (images/inspect.h): on
 * by default. cache_dir keeps the appliance between launches (NULL: libguestfs' default);
 * force_tcg when /dev/kvm is absent or unusable. A refused inspection fails the import
 * (EPROTO, ENODEV, ENOENT, ENOEXEC, ...) and removes the blobs it stored. */
int image_store_set_inspect(ImageStore *s, bool enabled, const char *cache_dir, bool force_tcg);
DEFINE_TRIVIAL_CLEANUP_FUNC(ImageStore *, image_store_free)

/* Verify the manifest at path (signature beside it: path + ".minisig") and copy its files,
 * found beside it, into the store. Refusals: EKEYREJECTED/ENOKEY (signature, untrusted
 * key), EKEYEXPIRED (expired), ESTALE (rollback), EBADMSG (digest mismatch), EMEDIUMTYPE
 * (format), EFBIG (size), ECANCELED. Nothing is left behind on failure. */
int image_store_import(ImageStore *s, const char *manifest_path, const StoreCallbacks *cb, ImageManifest **ret,
                       SeatError **ret_error);
/* Same, from bytes already in memory and files in dir (a pull's staging directory). */
int image_store_import_from(ImageStore *s, const char *manifest, size_t manifest_len, const char *sig,
                            size_t sig_len, const char *dir, const StoreCallbacks *cb, ImageManifest **ret,
                            SeatError **ret_error);

/* Checks a manifest's signature against the trusted keys and the store's policy (expiry,
 * rollback) without touching any file: what a pull does before downloading a byte. */
int image_store_check_manifest(ImageStore *s, const char *manifest, size_t len, const char *sig, size_t sig_len,
                               ImageManifest **ret, SeatError **ret_error);

/* The current version of name, its stored manifest's signature checked again. */
int image_store_get(ImageStore *s, const char *name, ImageManifest **ret, SeatError **ret_error);
/* Names of the stored images (NULL-terminated, sorted). */
int image_store_list(ImageStore *s, char ***ret, SeatError **ret_error);
/* Re-hash the stored blobs of name in parallel. 0 verified; -EBADMSG with the problem. */
int image_store_verify(ImageStore *s, const char *name, const StoreCallbacks *cb, ImageManifest **ret,
                       SeatError **ret_error);
int image_store_remove(ImageStore *s, const char *name, SeatError **ret_error);
/* Path of a verified file's blob (malloc'd). */
char *image_store_blob_path(ImageStore *s, const ImageFile *f);
/* The high-water mark of name (0 when none). */
int image_store_high_water(ImageStore *s, const char *name, int64_t *ret);
