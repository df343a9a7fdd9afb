/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <unistd.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "common/fileio.h"
#include "common/jsonframe.h"
#include "seatd/domain.h"
#include "testvm.h"

typedef struct ImageInfo {
        char *kernel, *initrd, *disk, *disk_format, *cmdline;
        int64_t memory_mib, vcpus;
} ImageInfo;

static void image_info_done(ImageInfo *i) {
        free(i->kernel);
        free(i->initrd);
        free(i->disk);
        free(i->disk_format);
        free(i->cmdline);
}

static int image_path(json_object *o, const char *dir, const char *key, char **ret) {
        const char *v = NULL;
        if (json_get_string(o, key, true, 4096, &v) < 0 || strchr(v, '/'))
                return -EINVAL;
        return asprintf(ret, "%s/%s", dir, v) < 0 ? -ENOMEM : 0;
}

static int image_info_load(const char *dir, ImageInfo *ret, SeatError **ret_error) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        _cleanup_json_ json_object *o = NULL;
        const char *s = NULL;
        int r;

        if (asprintf(&path, "%s/image.json", dir) < 0)
                return -ENOMEM;
        r = read_file_capped(path, 64 * 1024, &text, NULL);
        if (r < 0)
                return seat_error_set(ret_error, -r, "read '%s': %s (build the test image first)", path, strerror(-r));
        o = json_tokener_parse(text);
        if (!o || !json_object_is_type(o, json_type_object))
                return seat_error_set(ret_error, EINVAL, "'%s' is not a JSON object", path);
        if (image_path(o, dir, "kernel", &ret->kernel) < 0 || image_path(o, dir, "initrd", &ret->initrd) < 0 ||
            image_path(o, dir, "disk", &ret->disk) < 0)
                return seat_error_set(ret_error, EINVAL, "'%s' lacks kernel, initrd or disk file names", path);
        if (json_get_string(o, "cmdline", true, 4096, &s) < 0 || !(ret->cmdline = strdup(s)))
                return seat_error_set(ret_error, EINVAL, "'%s': bad 'cmdline'", path);
        s = "qcow2";
        if (json_get_string(o, "disk_format", false, 16, &s) < 0 || (strcmp(s, "qcow2") && strcmp(s, "raw")) ||
            !(ret->disk_format = strdup(s)))
                return seat_error_set(ret_error, EINVAL, "'%s': 'disk_format' must be qcow2 or raw", path);
        ret->memory_mib = 256;
        ret->vcpus = 1;
        if (json_get_int64(o, "memory_mib", false, 64, 65536, &ret->memory_mib) < 0 ||
            json_get_int64(o, "vcpus", false, 1, 64, &ret->vcpus) < 0)
                return seat_error_set(ret_error, EINVAL, "'%s': bad 'memory_mib' or 'vcpus'", path);
        return 0;
}

/* Test VMs run as the first uid of seatd's default qemu_uid_range (the host check's probe
 * uid): never one a seat of a seatd under test gets. */
#define TESTVM_QEMU_UID 70000u

/* The boot files into the VM's own directory: QEMU runs as libvirt's unprivileged user,
 * and a build tree in a home directory (a clone in /root, say) is not reachable by it. */
static int copy_into(const char *dir, char **path, SeatError **ret_error) {
        const char *slash = strrchr(*path, '/');
        _cleanup_free_ char *dst = NULL;
        if (asprintf(&dst, "%s/%s", dir, slash ? slash + 1 : *path) < 0)
                return -ENOMEM;
        _cleanup_close_ int in = open(*path, O_RDONLY | O_CLOEXEC);
        _cleanup_close_ int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (in < 0 || out < 0)
                return seat_error_set(ret_error, errno, "copy '%s' to '%s': %m", *path, dst);
        for (;;) {
                ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
                if (n < 0)
                        return seat_error_set(ret_error, errno, "copy '%s' to '%s': %m", *path, dst);
                if (n == 0)
                        break;
        }
        free(*path);
        *path = TAKE_PTR(dst);
        return 0;
}

int testvm_boot(const char *uri, const char *image_dir, const char *name, TestVm **ret, SeatError **ret_error) {
        _cleanup_(image_info_done) ImageInfo img = {};
        _cleanup_(testvm_freep) TestVm *vm = calloc(1, sizeof(TestVm));
        int r;

        if (!vm)
                return -ENOMEM;
        /* Overlays name their backing file: it must be an absolute path. */
        _cleanup_free_ char *abs_dir = realpath(image_dir, NULL);
        if (!abs_dir)
                return seat_error_set(ret_error, errno, "image directory '%s': %m", image_dir);
        r = image_info_load(abs_dir, &img, ret_error);
        if (r < 0)
                return r;
        vm->name = strdup(name);
        const char *base = getenv("SEATD_TEST_TMPDIR") ?: "/var/tmp";
        if (!vm->name || asprintf(&vm->dir, "%s/seatd-vm-XXXXXX", base) < 0)
                return -ENOMEM;
        if (!mkdtemp(vm->dir)) {
                free(vm->dir);
                vm->dir = NULL;
                return seat_error_set(ret_error, errno, "create a private directory under '%s': %m", base);
        }
        /* QEMU runs as libvirt's unprivileged user: it must reach the overlay. */
        (void) chmod(vm->dir, 0755);
        char **files[] = { &img.kernel, &img.initrd, &img.disk };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                if (!*files[i])
                        continue;
                r = copy_into(vm->dir, files[i], ret_error);
                if (r < 0)
                        return r;
                if (!(vm->boot_files[i] = strdup(*files[i])))
                        return -ENOMEM;
        }
        if (asprintf(&vm->overlay, "%s/overlay.qcow2", vm->dir) < 0 ||
            asprintf(&vm->console_log, "%s/console.log", vm->dir) < 0)
                return -ENOMEM;
        r = overlay_create(img.disk, img.disk_format, vm->overlay, ret_error);
        if (r >= 0)
                r = overlay_give(vm->overlay, TESTVM_QEMU_UID, ret_error);
        if (r < 0)
                return r;

        if (!uri)
                uri = getenv("SEATD_LIBVIRT_URI") ?: "qemu:///system";
        r = domain_open(uri, &vm->conn, ret_error);
        if (r < 0)
                return r;

        /* The same domain seatd makes for a seat, from a manifest of the image.json. */
        ImageFile disk = { .name = (char *) "disk", .role = IMAGE_ROLE_DISK,
                           .format = strcmp(img.disk_format, "raw") ? IMAGE_FORMAT_QCOW2 : IMAGE_FORMAT_RAW };
        ImageManifest man = { .name = (char *) "test-image", .version = 1, .direct_boot = true, .cmdline = img.cmdline,
                              .memory_mib = img.memory_mib, .vcpus = img.vcpus, .files = &disk, .n_files = 1 };
        SeatRecord rec = { .image_version = 1, .generation = 1 };
        snprintf(rec.id, sizeof(rec.id), "test");
        snprintf(rec.state, sizeof(rec.state), "test");
        snprintf(rec.image, sizeof(rec.image), "test-image");
        DomainSpec spec = { .name = name, .kvm = false, .manifest = &man, .kernel = img.kernel, .initrd = img.initrd,
                            .base = img.disk, .overlay = vm->overlay, .console_log = vm->console_log, .record = &rec,
                            .qemu_uid = TESTVM_QEMU_UID };
        vm->started_ms = now_monotonic_ms();
        r = domain_create(vm->conn, &spec, &vm->dom, ret_error);
        if (r < 0)
                return r;
        r = domain_agent_socket(vm->dom, &vm->agent_socket);
        if (r < 0)
                return seat_error_set(ret_error, -r, "domain '%s' has no agent channel socket", name);
        *ret = TAKE_PTR(vm);
        return 0;
}

int testvm_wait_shutoff(TestVm *vm, int timeout_ms) {
        int64_t deadline = now_monotonic_ms() + timeout_ms;
        do {
                int state = 0, reason = 0;
                if (virDomainGetState(vm->dom, &state, &reason, 0) < 0)
                        return 1; /* a transient domain that is gone has shut off */
                if (state == VIR_DOMAIN_SHUTOFF)
                        return 1;
                (void) nanosleep(&(struct timespec) { .tv_nsec = 50 * 1000 * 1000 }, NULL);
        } while (now_monotonic_ms() < deadline);
        return 0;
}

void testvm_dump_console(const TestVm *vm) {
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        if (!vm || !vm->console_log || read_file_capped(vm->console_log, 4 << 20, &text, &n) < 0)
                return;
        size_t from = n > 4096 ? n - 4096 : 0;
        fprintf(stderr, "--- last of %s ---\n%s\n---\n", vm->console_log, text + from);
}

TestVm *testvm_free(TestVm *vm) {
        if (!vm)
                return NULL;
        if (vm->dom) {
                int state = 0, reason = 0;
                if (virDomainGetState(vm->dom, &state, &reason, 0) >= 0 && state != VIR_DOMAIN_SHUTOFF)
                        (void) virDomainDestroy(vm->dom);
                virDomainFree(vm->dom);
        }
        if (vm->conn)
                virConnectClose(vm->conn);
        if (vm->dir && !getenv("SEATD_TEST_KEEP")) {
                if (vm->overlay)
                        (void) unlink(vm->overlay);
                if (vm->console_log)
                        (void) unlink(vm->console_log);
                for (size_t i = 0; i < ELEMENTSOF(vm->boot_files); i++)
                        if (vm->boot_files[i])
                                (void) unlink(vm->boot_files[i]);
                (void) rmdir(vm->dir);
        }
        free(vm->name);
        free(vm->dir);
        free(vm->overlay);
        free(vm->console_log);
        for (size_t i = 0; i < ELEMENTSOF(vm->boot_files); i++)
                free(vm->boot_files[i]);
        free(vm->agent_socket);
        return mfree(vm);
}
