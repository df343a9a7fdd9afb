/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seat-manifest: write an image manifest (docs/image-format.md) for files in one
 * directory, hashing each in chunks. Sign the result with `seat-sign sign`.
 */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "config.h"
#include "common/fileio.h"
#include "signing/hash.h"
#include "common/jsonframe.h"
#include "manifest.h"

#define FILES_MAX IMAGE_FILES_MAX

typedef struct FileArg {
        const char *path;
        const char *role;
        const char *format;
} FileArg;

static void usage(FILE *f) {
        fprintf(f,
                "usage: seat-manifest --name NAME --version N --out MANIFEST [options] FILES...\n"
                "\n"
                "Writes a seatd image manifest listing the BLAKE2b-512 digest of every chunk of\n"
                "every file. The files must sit in the manifest's directory; sign the result with\n"
                "'seat-sign sign -s KEY -m MANIFEST'.\n"
                "\n"
                "Files:\n"
                "  --disk FILE[:FORMAT]    a disk (FORMAT raw or qcow2; default from the file's name)\n"
                "  --kernel FILE           a kernel for direct boot (raw)\n"
                "  --initrd FILE           an initramfs for direct boot (raw)\n"
                "Settings:\n"
                "  --name NAME             [a-z0-9][a-z0-9._-]{0,63}\n"
                "  --version N             1..2^53, higher than every version published before\n"
                "  --created TIME          RFC 3339 UTC (default: now)\n"
                "  --expires TIME          RFC 3339 UTC (default: --expires-days after created)\n"
                "  --expires-days N        default 365\n"
                "  --cmdline TEXT          kernel command line (direct boot)\n"
                "  --memory-mib N          default 256\n"
                "  --vcpus N               default 1\n"
                "  --guest-init FS:PATH    where guest-init lives, e.g. /dev/sda:/sbin/guest-init\n"
                "  --evidence-path PATH    a guest path for the evidence archive (repeatable)\n"
                "  --egress-profile NAME   the default egress profile\n"
                "  --chunk-size BYTES      power of two, 64 KiB..1 GiB (default 4 MiB)\n"
                "  --out MANIFEST          where to write it (required)\n");
}

static int hash_file(const char *path, size_t chunk_size, ChunkDigests *ret) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        return chunk_hash_fd(fd, chunk_size, (uint64_t) 1 << 50, ret);
}

static json_object *hexs(const uint8_t *d) {
        char hex[SEAT_HASH_HEX_LEN + 1];
        digest_to_hex(d, SEAT_HASH_BYTES, hex, sizeof(hex));
        return json_object_new_string(hex);
}

static int add_file(json_object *files, const FileArg *fa, size_t chunk_size) {
        _cleanup_(chunk_digests_done) ChunkDigests d = {};
        _cleanup_free_ char *copy = strdup(fa->path);
        int r = hash_file(fa->path, chunk_size, &d);
        if (r < 0) {
                fprintf(stderr, "seat-manifest: cannot hash '%s': %s\n", fa->path, strerror(-r));
                return r;
        }
        json_object *f = json_object_new_object(), *chunks = json_object_new_array();
        json_object_object_add(f, "name", json_object_new_string(basename(copy)));
        json_object_object_add(f, "role", json_object_new_string(fa->role));
        json_object_object_add(f, "format", json_object_new_string(fa->format));
        json_object_object_add(f, "size", json_object_new_int64((int64_t) d.total_size));
        json_object_object_add(f, "chunk_size", json_object_new_int64((int64_t) chunk_size));
        for (size_t i = 0; i < d.n_chunks; i++)
                json_object_array_add(chunks, hexs(d.chunks[i]));
        json_object_object_add(f, "chunks", chunks);
        json_object_object_add(f, "identity", hexs(d.identity));
        json_object_array_add(files, f);
        return 0;
}

static const char *format_from_name(const char *path) {
        size_t n = strlen(path);
        return n > 6 && !strcmp(path + n - 6, ".qcow2") ? "qcow2" : "raw";
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "disk", required_argument, NULL, 'd' },   { "kernel", required_argument, NULL, 'k' },
                { "initrd", required_argument, NULL, 'i' }, { "name", required_argument, NULL, 'n' },
                { "version", required_argument, NULL, 'v' }, { "created", required_argument, NULL, 'c' },
                { "expires", required_argument, NULL, 'e' }, { "expires-days", required_argument, NULL, 'E' },
                { "cmdline", required_argument, NULL, 'C' }, { "memory-mib", required_argument, NULL, 'm' },
                { "vcpus", required_argument, NULL, 'p' },  { "guest-init", required_argument, NULL, 'g' },
                { "evidence-path", required_argument, NULL, 'P' }, { "egress-profile", required_argument, NULL, 'x' },
                { "chunk-size", required_argument, NULL, 's' }, { "out", required_argument, NULL, 'o' },
                { "help", no_argument, NULL, 'h' },         {},
        };
        FileArg files[FILES_MAX];
        size_t n_files = 0;
        const char *name = NULL, *created_s = NULL, *expires_s = NULL, *cmdline = NULL, *guest_init = NULL;
        const char *egress = NULL, *out = NULL, *kernel = NULL, *initrd = NULL;
        const char *evidence[IMAGE_EVIDENCE_PATHS_MAX];
        size_t n_evidence = 0;
        long long version = 0, memory = 256, vcpus = 1, days = 365, chunk = SEAT_CHUNK_SIZE_DEFAULT;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'd': case 'k': case 'i': {
                        if (n_files >= FILES_MAX) {
                                fprintf(stderr, "seat-manifest: at most %d files\n", FILES_MAX);
                                return 2;
                        }
                        char *colon = c == 'd' ? strrchr(optarg, ':') : NULL;
                        FileArg *fa = &files[n_files++];
                        fa->path = optarg;
                        fa->role = c == 'd' ? "disk" : c == 'k' ? "kernel" : "initrd";
                        fa->format = "raw";
                        if (colon && (!strcmp(colon + 1, "raw") || !strcmp(colon + 1, "qcow2"))) {
                                *colon = '\0';
                                fa->format = colon + 1;
                        } else if (c == 'd')
                                fa->format = format_from_name(optarg);
                        if (c == 'k')
                                kernel = optarg;
                        if (c == 'i')
                                initrd = optarg;
                        break;
                }
                case 'n': name = optarg; break;
                case 'v': version = atoll(optarg); break;
                case 'c': created_s = optarg; break;
                case 'e': expires_s = optarg; break;
                case 'E': days = atoll(optarg); break;
                case 'C': cmdline = optarg; break;
                case 'm': memory = atoll(optarg); break;
                case 'p': vcpus = atoll(optarg); break;
                case 'g': guest_init = optarg; break;
                case 'P':
                        if (n_evidence >= IMAGE_EVIDENCE_PATHS_MAX)
                                return fprintf(stderr, "seat-manifest: too many evidence paths\n"), 2;
                        evidence[n_evidence++] = optarg;
                        break;
                case 'x': egress = optarg; break;
                case 's': chunk = atoll(optarg); break;
                case 'o': out = optarg; break;
                case 'h': usage(stdout); return 0;
                default: usage(stderr); return 2;
                }
        }
        if (!name || !out || version < 1 || n_files == 0 || optind < argc) {
                usage(stderr);
                return 2;
        }

        int64_t created = (int64_t) time(NULL), expires;
        if (created_s && rfc3339_parse(created_s, &created) < 0)
                return fprintf(stderr, "seat-manifest: --created '%s' is not like 2027-01-31T12:00:00Z\n", created_s), 2;
        expires = created + days * 86400;
        if (expires_s && rfc3339_parse(expires_s, &expires) < 0)
                return fprintf(stderr, "seat-manifest: --expires '%s' is not like 2027-01-31T12:00:00Z\n", expires_s), 2;
        char cbuf[32], ebuf[32];
        rfc3339_format(created, cbuf, sizeof(cbuf));
        rfc3339_format(expires, ebuf, sizeof(ebuf));

        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *jfiles = json_object_new_array(), *boot = json_object_new_object();
        json_object_object_add(o, "format", json_object_new_string("seatd-image"));
        json_object_object_add(o, "format_version", json_object_new_int(1));
        json_object_object_add(o, "name", json_object_new_string(name));
        json_object_object_add(o, "version", json_object_new_int64(version));
        json_object_object_add(o, "created", json_object_new_string(cbuf));
        json_object_object_add(o, "expires", json_object_new_string(ebuf));
        json_object_object_add(o, "agent_protocol", json_object_new_int(1));
        json_object_object_add(boot, "mode", json_object_new_string(kernel ? "direct" : "disk"));
        if (kernel) {
                _cleanup_free_ char *k = strdup(kernel);
                json_object_object_add(boot, "kernel", json_object_new_string(basename(k)));
        }
        if (initrd) {
                _cleanup_free_ char *i = strdup(initrd);
                json_object_object_add(boot, "initrd", json_object_new_string(basename(i)));
        }
        if (cmdline)
                json_object_object_add(boot, "cmdline", json_object_new_string(cmdline));
        json_object_object_add(boot, "memory_mib", json_object_new_int64(memory));
        json_object_object_add(boot, "vcpus", json_object_new_int64(vcpus));
        json_object_object_add(o, "boot", boot);
        for (size_t i = 0; i < n_files; i++)
                if (add_file(jfiles, &files[i], (size_t) chunk) < 0)
                        return 1;
        json_object_object_add(o, "files", jfiles);
        if (guest_init) {
                const char *colon = strchr(guest_init, ':');
                if (!colon)
                        return fprintf(stderr, "seat-manifest: --guest-init wants FS:PATH\n"), 2;
                json_object *g = json_object_new_object();
                json_object_object_add(g, "filesystem", json_object_new_string_len(guest_init, (int) (colon - guest_init)));
                json_object_object_add(g, "path", json_object_new_string(colon + 1));
                json_object_object_add(o, "guest_init", g);
        }
        json_object *ev = json_object_new_array();
        for (size_t i = 0; i < n_evidence; i++)
                json_object_array_add(ev, json_object_new_string(evidence[i]));
        json_object_object_add(o, "evidence_paths", ev);
        if (egress)
                json_object_object_add(o, "egress_profile", json_object_new_string(egress));

        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        _cleanup_free_ char *doc = NULL;
        if (asprintf(&doc, "%s\n", text) < 0)
                return 1;

        /* What we write must be what seatd accepts. */
        _cleanup_(image_manifest_freep) ImageManifest *check = NULL;
        _cleanup_error_ SeatError *err = NULL;
        if (image_manifest_parse(doc, strlen(doc), &check, &err) < 0)
                return fprintf(stderr, "seat-manifest: %s\n", err ? err->message : "invalid manifest"), 1;
        int r = write_file_atomic(out, doc, strlen(doc), 0644);
        if (r < 0)
                return fprintf(stderr, "seat-manifest: write '%s': %s\n", out, strerror(-r)), 1;
        return 0;
}
