/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seatd-collect: reads a quarantined session's guest files for its evidence archive. seatd
 * (seatd/collect.c) starts it for each seal, already dropped to evidence_collect_user, in a
 * process group of its own that it kills at evidence_collect_timeout; seatd's seccomp filter
 * and no_new_privs are inherited. Here libguestfs opens the overlay in its appliance (direct
 * backend: QEMU is this process's child, so it runs as this user, and with QEMU's own
 * seccomp sandbox), and images/guest-files.c copies the evidence paths under their caps into
 * the staging directory, which this user owns.
 *
 * The guest's filesystem is hostile and parsed by the appliance's kernel: whatever it does to
 * the appliance ends here, never in seatd. seatd trusts nothing this prints: it takes the
 * copies' ownership back and checks every one of them (seatd/collect.c).
 *
 *   usage: seatd-collect DISK FILESYSTEM|- STAGING CACHE MAX_BYTES MAX_FILE_BYTES MAX_FILES
 *                        TCG(0|1) CONTEXT PATH...
 * Prints one JSON object on stdout and exits 0:
 *   {"result":"ok", "skipped":N, "listings_cut":N,
 *    "entries":[{"guest":BASE64, "copy":"g000001", "kind":"file"|"symlink", "size":N,
 *                "original_size":N}, ...]}
 *   {"result":"guest-fault", "message":TEXT}   the guest's disk could not be read
 *   {"result":"host-fault", "errno":N, "message":TEXT}
 * Exit 2: bad arguments, or run as root.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base64.h"
#include "images/appliance-kernel.h"
#include "images/guest-files.h"
#include "common/jsonframe.h"
#include "common/log.h"

static int parse_u64(const char *s, uint64_t *ret) {
        char *end = NULL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || !end || *end || end == s || s[0] == '-')
                return -EINVAL;
        *ret = v;
        return 0;
}

static int emit(json_object *o) {
        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        size_t len = strlen(text);
        for (size_t off = 0; off < len;) {
                ssize_t n = write(STDOUT_FILENO, text + off, len - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return 1;
                off += (size_t) n;
        }
        return 0;
}

static int fault(const char *result, int e, const char *message) {
        _cleanup_json_ json_object *o = json_object_new_object();
        if (!o)
                return 1;
        json_object_object_add(o, "result", json_object_new_string(result));
        json_object_object_add(o, "errno", json_object_new_int(e));
        /* Messages may quote guest data: escaped, so they are printable ASCII. */
        _cleanup_free_ char *esc = log_escape(message, strlen(message), 900);
        json_object_object_add(o, "message", json_object_new_string(esc ? esc : "?"));
        return emit(o);
}

static int result(const GuestFiles *f) {
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *entries = json_object_new_array();
        if (!o || !entries) {
                json_object_put(entries);
                return fault("host-fault", ENOMEM, "out of memory");
        }
        json_object_object_add(o, "result", json_object_new_string("ok"));
        json_object_object_add(o, "skipped", json_object_new_int64((int64_t) f->skipped));
        json_object_object_add(o, "listings_cut", json_object_new_int64((int64_t) f->listings_cut));
        json_object_object_add(o, "entries", entries);
        for (size_t i = 0; i < f->n_entries; i++) {
                const GuestEntry *e = f->entries + i;
                _cleanup_free_ char *b64 = NULL;
                const char *copy = strrchr(e->host_path, '/');
                json_object *j = json_object_new_object();
                if (!j || base64_encode(e->guest_path, strlen(e->guest_path), &b64, NULL) < 0 || !copy) {
                        json_object_put(j);
                        return fault("host-fault", ENOMEM, "out of memory");
                }
                json_object_object_add(j, "guest", json_object_new_string(b64));
                json_object_object_add(j, "copy", json_object_new_string(copy + 1));
                json_object_object_add(j, "kind", json_object_new_string(e->kind == GUEST_ENTRY_SYMLINK ? "symlink" : "file"));
                json_object_object_add(j, "size", json_object_new_int64((int64_t) e->size));
                json_object_object_add(j, "original_size", json_object_new_int64((int64_t) e->original_size));
                json_object_array_add(entries, j);
        }
        return emit(o);
}

/* Under TCG: the appliance boots the host kernel's vmlinux, extracted once into this user's
 * part of the cache (images/appliance-kernel.h), with a libguestfs cache of its own. supermin
 * (which libguestfs runs, with this environment) reads SUPERMIN_*; this process has one
 * thread, so setenv() is safe here. On any failure the appliance boots the bzImage, as
 * libguestfs would: slower, nothing else. */
static void use_vmlinux(const char *cache, ApplianceKernel *k, ImageInspectOptions *opts) {
        _cleanup_free_ char *mine = NULL;
        if (asprintf(&mine, "%s/.guestfs-%u", cache, (unsigned) getuid()) < 0)
                return;
        int r = appliance_kernel_prepare("/boot", "/lib/modules", mine, k);
        if (r < 0) {
                /* a warning: seatd logs what its helper says at that level (a host whose
                 * every seal falls back should see why) */
                log_warning("the appliance boots the host's compressed kernel, slower under TCG (no vmlinux: %s)",
                            strerror(-r));
                return;
        }
        if (setenv("SUPERMIN_KERNEL", k->vmlinux, 1) < 0 || setenv("SUPERMIN_KERNEL_VERSION", k->version, 1) < 0 ||
            setenv("SUPERMIN_MODULES", k->modules, 1) < 0) {
                (void) unsetenv("SUPERMIN_KERNEL");
                (void) unsetenv("SUPERMIN_KERNEL_VERSION");
                (void) unsetenv("SUPERMIN_MODULES");
                return;
        }
        opts->cache_dir = k->cache_dir;
        log_debug("the appliance boots %s (%s)", k->vmlinux, k->version);
}

int main(int argc, char *argv[]) {
        GuestFilesLimits lim = {};
        uint64_t tcg = 0;
        if (argc < 11 || parse_u64(argv[5], &lim.max_bytes) < 0 || parse_u64(argv[6], &lim.max_file_bytes) < 0 ||
            parse_u64(argv[7], &lim.max_files) < 0 || parse_u64(argv[8], &tcg) < 0 || tcg > 1) {
                fprintf(stderr, "usage: seatd-collect DISK FILESYSTEM|- STAGING CACHE MAX_BYTES MAX_FILE_BYTES MAX_FILES TCG CONTEXT PATH...\n");
                return 2;
        }
        /* Log lines on stderr: seatd puts them into its own log, escaped. */
        log_set_ident("seatd-collect");
        log_set_max_level(getenv("SEATD_COLLECT_DEBUG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_WARNING);
        /* Started by seatd as evidence_collect_user: never the appliance as root. */
        if (geteuid() == 0 || getuid() == 0) {
                fprintf(stderr, "seatd-collect: refusing to run as root (seatd starts it as evidence_collect_user)\n");
                return 2;
        }
        const char *fs = strcmp(argv[2], "-") ? argv[2] : NULL;
        ImageInspectOptions opts = { .cache_dir = argv[4], .force_tcg = tcg == 1, .qemu_sandbox = true };
        _cleanup_(appliance_kernel_done) ApplianceKernel kernel = { .lock_fd = -1 };
        if (opts.force_tcg)
                use_vmlinux(argv[4], &kernel, &opts);
        _cleanup_(guest_files_freep) GuestFiles *f = NULL;
        _cleanup_error_ SeatError *err = NULL;
        int r = guest_files_collect(argv[1], IMAGE_FORMAT_QCOW2, fs, argv + 10, &lim, &opts, argv[9], argv[3], &f, &err);
        const char *msg = err ? err->message : strerror(r < 0 ? -r : EIO);
        /* The guest's doing: its filesystem does not mount, or the appliance died while it
         * read it, or while it booted with the disk attached (its kernel parses the
         * partition table then): libguestfs' words for a QEMU that went away. */
        if (r == -EPIPE || strstr(msg, "closed the connection unexpectedly") ||
            strstr(msg, "child process died unexpectedly")) {
                _cleanup_free_ char *why = NULL;
                if (asprintf(&why, "the appliance died or stopped answering while it read the guest's disk: %s", msg) < 0)
                        return fault("host-fault", ENOMEM, "out of memory");
                return fault("guest-fault", EPIPE, why);
        }
        if (r == -ENODEV)
                return fault("guest-fault", -r, msg);
        if (r < 0)
                return fault("host-fault", -r, msg);
        return result(f);
}
