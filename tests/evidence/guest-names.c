/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * guest-names: the hostile guest of tests/evidence/evidence-vm.sh that fills one evidence
 * directory with as many long names as it is told, fast enough under TCG: one process,
 * hard links (a name costs a directory entry, no inode; busybox would fork an `ln` per
 * name), to a new file every 60000 names (ext4 allows 65000 links to one inode). Static and plain libc, like guest-init: it runs in the busybox test image
 * (images/recipes/test-image --guest-tool).
 *   usage: guest-names DIR COUNT NAME_LENGTH
 * Prints "made N names" and exits 0, or says why not and exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv) {
        if (argc != 4) {
                fprintf(stderr, "usage: guest-names DIR COUNT NAME_LENGTH\n");
                return 1;
        }
        const char *dir = argv[1];
        unsigned long count = strtoul(argv[2], NULL, 10), len = strtoul(argv[3], NULL, 10);
        if (len < 12 || len > 255) {
                fprintf(stderr, "guest-names: NAME_LENGTH must be 12..255\n");
                return 1;
        }
        if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
                fprintf(stderr, "guest-names: mkdir %s: %s\n", dir, strerror(errno));
                return 1;
        }
        char target[4096 + 32], name[4096 + 256];
        size_t base = (size_t) snprintf(name, sizeof(name), "%s/", dir);
        memset(name + base, 'n', len);
        name[base + len] = '\0';
        unsigned long i;
        for (i = 0; i < count; i++) {
                if (i % 60000 == 0) {
                        snprintf(target, sizeof(target), "%s.target%lu", dir, i / 60000);
                        int fd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                        if (fd < 0 || write(fd, "x\n", 2) != 2 || close(fd) < 0) {
                                fprintf(stderr, "guest-names: %s: %s\n", target, strerror(errno));
                                return 1;
                        }
                }
                char num[24];
                int k = snprintf(num, sizeof(num), "%lu", i);
                memcpy(name + base + len - (size_t) k, num, (size_t) k); /* nnnn...123 */
                if (link(target, name) < 0 && errno != EEXIST) {
                        fprintf(stderr, "guest-names: link %lu: %s\n", i, strerror(errno));
                        break;
                }
        }
        sync();
        printf("made %lu names\n", i);
        return i == count ? 0 : 1;
}
