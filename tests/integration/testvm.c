/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <json-c/json.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "fileio.h"
#include "jsonframe.h"
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

/* XML-escape a value we put between quotes or tags. */
static char *xml_escape(const char *s) {
        size_t n = 0;
        for (const char *p = s; *p; p++)
                n += strchr("<>&'\"", *p) ? 6 : 1;
        char *out = malloc(n + 1), *o = out;
        if (!out)
                return NULL;
        for (const char *p = s; *p; p++) {
                const char *rep = *p == '<' ? "&lt;" : *p == '>' ? "&gt;" : *p == '&' ? "&amp;" :
                                  *p == '\'' ? "&apos;" : *p == '"' ? "&quot;" : NULL;
                if (rep) {
                        strcpy(o, rep);
                        o += strlen(rep);
                } else
                        *o++ = *p;
        }
        *o = '\0';
        return out;
}

static int run_qemu_img_create(const char *base, const char *base_format, const char *overlay) {
        pid_t pid = fork();
        if (pid < 0)
                return negative_errno();
        if (pid == 0) {
                /* The backing format is pinned: never probed. */
                execlp("qemu-img", "qemu-img", "create", "-q", "-f", "qcow2", "-F", base_format, "-b", base,
                       overlay, (char *) NULL);
                _exit(127);
        }
        int status;
        if (waitpid(pid, &status, 0) < 0)
                return negative_errno();
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

static char *domain_xml(const TestVm *vm, const ImageInfo *img) {
        _cleanup_free_ char *name = xml_escape(vm->name), *kernel = xml_escape(img->kernel),
                            *initrd = xml_escape(img->initrd), *cmdline = xml_escape(img->cmdline),
                            *disk = xml_escape(vm->overlay), *log = xml_escape(vm->console_log),
                            *base = xml_escape(img->disk);
        char *xml = NULL;

        if (!name || !kernel || !initrd || !cmdline || !disk || !log || !base)
                return NULL;
        if (asprintf(&xml,
                     "<domain type='qemu'>\n"
                     "  <name>%s</name>\n"
                     "  <memory unit='MiB'>%lld</memory>\n"
                     "  <vcpu>%lld</vcpu>\n"
                     "  <os>\n"
                     "    <type arch='x86_64' machine='q35'>hvm</type>\n"
                     "    <loader readonly='yes' type='rom'>/usr/share/qemu/qboot.rom</loader>\n"
                     "    <kernel>%s</kernel>\n"
                     "    <initrd>%s</initrd>\n"
                     "    <cmdline>%s</cmdline>\n"
                     "  </os>\n"
                     "  <features><acpi/></features>\n"
                     "  <cpu mode='custom' match='exact' check='none'><model fallback='forbid'>qemu64</model>"
                     "<feature policy='require' name='rdrand'/></cpu>\n"
                     "  <clock offset='utc'/>\n"
                     "  <on_poweroff>destroy</on_poweroff>\n"
                     "  <on_reboot>destroy</on_reboot>\n"
                     "  <on_crash>destroy</on_crash>\n"
                     "  <devices>\n"
                     "    <disk type='file' device='disk'>\n"
                     "      <driver name='qemu' type='qcow2'/>\n"
                     "      <source file='%s'/>\n"
                     /* The verified base: read-only for QEMU, and never relabelled (chowned)
                      * to QEMU's user, who could otherwise chmod it writable. */
                     "      <backingStore type='file'><format type='%s'/>"
                     "<source file='%s'><seclabel model='dac' relabel='no'/></source><backingStore/></backingStore>\n"
                     "      <target dev='vda' bus='virtio'/>\n"
                     "    </disk>\n"
                     "    <channel type='unix'>\n"
                     "      <source mode='bind'/>\n"
                     "      <target type='virtio' name='org.seatd.agent.0'/>\n"
                     "    </channel>\n"
                     "    <serial type='file'><source path='%s'/><target port='0'/></serial>\n"
                     "    <controller type='usb' model='none'/>\n"
                     "    <memballoon model='none'/>\n"
                     "  </devices>\n"
                     "</domain>\n",
                     name, (long long) img->memory_mib, (long long) img->vcpus, kernel, initrd, cmdline, disk,
                     img->disk_format, base, log) < 0)
                return NULL;
        return xml;
}

/* libvirt picks the channel's socket path; read it back from the live XML. */
static int find_agent_socket(virDomainPtr dom, char **ret) {
        _cleanup_free_ char *xml = virDomainGetXMLDesc(dom, 0);
        if (!xml)
                return -EIO;
        const char *ch = strstr(xml, "<channel type='unix'>");
        const char *end = ch ? strstr(ch, "</channel>") : NULL;
        const char *src = ch ? strstr(ch, "path='") : NULL;
        if (!src || !end || src > end)
                return -ENOENT;
        src += strlen("path='");
        const char *q = strchr(src, '\'');
        if (!q || q > end)
                return -ENOENT;
        *ret = strndup(src, (size_t) (q - src));
        return *ret ? 0 : -ENOMEM;
}

static void silence_libvirt(void *userdata, virErrorPtr err) {
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
        if (asprintf(&vm->overlay, "%s/overlay.qcow2", vm->dir) < 0 ||
            asprintf(&vm->console_log, "%s/console.log", vm->dir) < 0)
                return -ENOMEM;
        r = run_qemu_img_create(img.disk, img.disk_format, vm->overlay);
        if (r < 0)
                return seat_error_set(ret_error, -r, "qemu-img create overlay of '%s' failed", img.disk);

        virSetErrorFunc(NULL, silence_libvirt);
        if (!uri)
                uri = getenv("SEATD_LIBVIRT_URI") ?: "qemu:///system";
        vm->conn = virConnectOpen(uri);
        if (!vm->conn)
                return seat_error_set(ret_error, ECONNREFUSED, "connect to libvirt at '%s': %s (is libvirtd running?)",
                                      uri, virGetLastErrorMessage());

        _cleanup_free_ char *xml = domain_xml(vm, &img);
        if (!xml)
                return -ENOMEM;
        vm->started_ms = now_monotonic_ms();
        vm->dom = virDomainCreateXML(vm->conn, xml, 0);
        if (!vm->dom)
                return seat_error_set(ret_error, EIO, "start domain '%s': %s", name, virGetLastErrorMessage());
        r = find_agent_socket(vm->dom, &vm->agent_socket);
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
                (void) rmdir(vm->dir);
        }
        free(vm->name);
        free(vm->dir);
        free(vm->overlay);
        free(vm->console_log);
        free(vm->agent_socket);
        free(vm);
        return NULL;
}
