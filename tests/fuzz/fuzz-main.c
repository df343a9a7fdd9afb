/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Replay driver (systemd's fuzz-main.c pattern): runs a fuzz target over every file of
 * the given files or directories, so corpora run as regression tests in every build,
 * sanitizers included, without libFuzzer.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/fileio.h"
#include "common/macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define INPUT_MAX (16u * 1024u * 1024u)

static int run_file(const char *path) {
        _cleanup_free_ char *buf = NULL;
        size_t n;
        int r = read_file_capped(path, INPUT_MAX, &buf, &n);
        if (r < 0) {
                fprintf(stderr, "cannot read '%s': %s\n", path, strerror(-r));
                return r;
        }
        /* Exactly n bytes in a buffer of its own, so ASan sees reads past the end. */
        _cleanup_free_ uint8_t *exact = malloc(n ? n : 1);
        if (!exact)
                return -ENOMEM;
        memcpy(exact, buf, n);
        (void) LLVMFuzzerTestOneInput(exact, n);
        return 0;
}

static int filter(const struct dirent *d) {
        return d->d_name[0] != '.';
}

static int run_path(const char *path, unsigned *count) {
        struct stat st;
        if (stat(path, &st) < 0) {
                fprintf(stderr, "cannot stat '%s': %m\n", path);
                return -errno;
        }
        if (!S_ISDIR(st.st_mode)) {
                (*count)++;
                return run_file(path);
        }

        struct dirent **list = NULL;
        int n = scandir(path, &list, filter, alphasort);
        if (n < 0) {
                fprintf(stderr, "cannot list '%s': %m\n", path);
                return -errno;
        }
        int r = 0;
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL;
                if (r >= 0 && asprintf(&p, "%s/%s", path, list[i]->d_name) >= 0)
                        r = run_path(p, count);
                free(list[i]);
        }
        free(list);
        return r;
}

int main(int argc, char *argv[]) {
        unsigned count = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
                return 2;
        }
        for (int i = 1; i < argc; i++)
                if (run_path(argv[i], &count) < 0)
                        return 1;
        if (count == 0) {
                fprintf(stderr, "no inputs found: an empty corpus tests nothing\n");
                return 1;
        }
        printf("%u inputs replayed without a crash\n", count);
        return 0;
}
