/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * host.check: is this a qualified host? KVM is proved by booting a probe guest to its
 * agent with a timeout, never assumed from /dev/kvm; then libvirt and QEMU versions,
 * nftables, cgroups, sVirt confinement of QEMU, free disk.
 */
#include <fcntl.h>
#include <pthread.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "agent-client.h"
#include "common/control-proto.h"
#include "domain.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "methods.h"
#include "images/store.h"

#define PROBE_TIMEOUT_MS 25000

static void add_check(json_object *arr, const char *name, bool ok, const char *fmt, ...) _printf_(4, 5);
static void add_check(json_object *arr, const char *name, bool ok, const char *fmt, ...) {
        char detail[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(detail, sizeof(detail), fmt, ap);
        va_end(ap);
        json_object *c = json_object_new_object();
        json_object_object_add(c, "name", json_object_new_string(name));
        json_object_object_add(c, "ok", json_object_new_boolean(ok));
        json_object_object_add(c, "detail", json_object_new_string(detail));
        json_object_array_add(arr, c);
}

static void version_string(unsigned long v, char *buf, size_t size) {
        snprintf(buf, size, "%lu.%lu.%lu", v / 1000000, (v / 1000) % 1000, v % 1000);
}

/* The first stored image that boots directly: a probe needs nothing else. */
static ImageManifest *probe_image(ImageStore *store) {
        _cleanup_strv_free_ char **names = NULL;
        if (image_store_list(store, &names, NULL) < 0)
                return NULL;
        for (char **n = names; *n; n++) {
                ImageManifest *m = NULL;
                if (image_store_get(store, *n, &m, NULL) >= 0 && m->direct_boot)
                        return m;
                image_manifest_free(m);
        }
        return NULL;
}

/* Boot the image under KVM; usable only if guest-init answers in time. */
static int probe_kvm(virConnectPtr conn, ImageStore *store, const char *state_dir, uid_t uid, char *why, size_t why_size) {
        _cleanup_(image_manifest_freep) ImageManifest *m = probe_image(store);
        _cleanup_free_ char *dir = NULL, *overlay = NULL, *console = NULL, *kernel = NULL, *initrd = NULL, *base = NULL;
        _cleanup_error_ SeatError *err = NULL;
        const ImageFile *disk = NULL;

        if (!m) {
                snprintf(why, why_size, "no stored image boots directly: import one (seatctl image import) to probe KVM");
                return -ENOENT;
        }
        for (size_t i = 0; i < m->n_files && !disk; i++)
                if (m->files[i].role == IMAGE_ROLE_DISK)
                        disk = &m->files[i];
        if (asprintf(&dir, "%s/probe-XXXXXX", state_dir) < 0 || !mkdtemp(dir) || chmod(dir, 0755) < 0 ||
            asprintf(&overlay, "%s/overlay.qcow2", dir) < 0 || asprintf(&console, "%s/console.log", dir) < 0 || !disk ||
            !(base = image_store_blob_path(store, disk)) ||
            !(kernel = image_store_blob_path(store, image_manifest_find_file(m, m->kernel))) ||
            (m->initrd && !(initrd = image_store_blob_path(store, image_manifest_find_file(m, m->initrd))))) {
                snprintf(why, why_size, "cannot prepare a probe in '%s'", state_dir);
                return -EIO;
        }
        SeatRecord rec = { .image_version = m->version, .generation = 1 };
        snprintf(rec.id, sizeof(rec.id), "probe");
        snprintf(rec.state, sizeof(rec.state), "probe");
        snprintf(rec.image, sizeof(rec.image), "%s", m->name);
        char name[64];
        snprintf(name, sizeof(name), "seatd-probe-%d", (int) getpid());
        _cleanup_(domain_boot_copies_done) DomainBootCopies boot = {};
        virDomainPtr dom = NULL;
        int r = overlay_create(base, image_format_to_string(disk->format), overlay, &err);
        if (r >= 0)
                r = overlay_give(overlay, uid, &err);
        if (r >= 0)
                r = domain_boot_copies(kernel, initrd, overlay, &boot, &err);
        DomainSpec spec = { .name = name, .kvm = true, .manifest = m, .kernel = boot.kernel, .initrd = boot.initrd,
                            .base = base, .overlay = overlay, .console_log = console, .record = &rec, .qemu_uid = uid };
        if (r >= 0)
                r = domain_create(conn, &spec, &dom, &err);
        if (r >= 0) {
                _cleanup_free_ char *sock = NULL;
                _cleanup_agent_client_ AgentClient *c = NULL;
                int64_t t0 = now_monotonic_ms();
                r = domain_agent_socket(dom, &sock);
                if (r >= 0)
                        r = agent_client_connect_unix(sock, PROBE_TIMEOUT_MS, &c, &err);
                if (r >= 0)
                        r = agent_client_hello(c, PROBE_TIMEOUT_MS, NULL, &err);
                if (r >= 0)
                        snprintf(why, why_size, "a probe guest booted under KVM and its agent answered in %" PRId64 " ms",
                                 now_monotonic_ms() - t0);
                else
                        snprintf(why, why_size,
                                 "/dev/kvm is there but a probe guest did not reach its agent within %d s: KVM is not usable on this host",
                                 PROBE_TIMEOUT_MS / 1000);
                (void) domain_stop(dom);
                virDomainFree(dom);
        } else
                snprintf(why, why_size, "a KVM probe guest could not start: %s", err ? err->message : "?");
        domain_boot_copies_done(&boot);
        (void) unlink(overlay);
        (void) unlink(console);
        (void) rmdir(dir);
        return r;
}

static bool file_exists(const char *p) {
        return access(p, F_OK) == 0;
}

static int host_check_run(Request *req, json_object **ret_result, SeatError **ret_error) {
        const SeatConfig *c = server_config(req->server);
        ImageStore *store = request_manager(req)->store;
        _cleanup_(virConnectClosep) virConnectPtr conn = NULL;
        json_object *checks = json_object_new_array();
        char a[32], b[32], why[512];
        bool kvm_ok = false, ready;

        int r = domain_open(c->libvirt_uri, &conn, ret_error);
        if (r < 0) {
                json_object_put(checks);
                return r;
        }
        unsigned long lib = 0, hv = 0;
        (void) virConnectGetLibVersion(conn, &lib);
        (void) virConnectGetVersion(conn, &hv);
        version_string(lib, a, sizeof(a));
        version_string(hv, b, sizeof(b));
        add_check(checks, "libvirt", lib >= 8000000, "libvirt %s, QEMU %s at %s", a, b, c->libvirt_uri);

        /* The probe runs as the first uid of qemu_uid_range, never one a seat gets. */
        uid_t uid_first = 0, uid_last = 0;
        (void) seat_config_parse_uid_range(c->qemu_uid_range, &uid_first, &uid_last); /* checked at parse */
        job_progress(req, "probing KVM with a guest", 0, 1);
        struct stat kst;
        if (stat("/dev/kvm", &kst) < 0)
                add_check(checks, "kvm", false, "/dev/kvm is missing: no hardware virtualization here");
        else if ((kst.st_mode & 0006) != 0006)
                /* Each seat's QEMU has a uid and gid of its own and no supplementary
                 * groups (a static DAC label): the kvm group does not reach it. */
                add_check(checks, "kvm", false,
                          "/dev/kvm is mode %04o: seat QEMUs run as uids of their own (qemu_uid_range) outside its group; make it 0666 (systemd's default udev rule)",
                          (unsigned) (kst.st_mode & 07777));
        else {
                kvm_ok = probe_kvm(conn, store, c->state_dir, uid_first, why, sizeof(why)) >= 0;
                add_check(checks, "kvm", kvm_ok, "%s", why);
        }
        job_progress(req, "probing KVM with a guest", 1, 1);
        add_check(checks, "tcg", c->allow_tcg,
                  c->allow_tcg ? "software emulation allowed by the config (allow_tcg = true): slow, for tests"
                               : "software emulation refused by the config (allow_tcg = false)");

        /* What seats' QEMU will be confined by, against require_confinement (checked on every
         * seat's running process as well). */
        _cleanup_free_ char *caps = virConnectGetCapabilities(conn);
        bool has_dac = caps && strstr(caps, "<model>dac</model>"),
             has_mac = caps && (strstr(caps, "<model>apparmor</model>") || strstr(caps, "<model>selinux</model>"));
        const char *need = c->require_confinement;
        bool conf_ok = !strcmp(need, "none") || (!strcmp(need, "dac") && (has_dac || has_mac)) || (!strcmp(need, "mac") && has_mac);
        add_check(checks, "confinement", conf_ok, "QEMU runs %s%s; require_confinement = %s",
                  has_dac ? "as an unprivileged user (libvirt DAC)" : "without libvirt's DAC driver (as root?)",
                  has_mac ? " with an AppArmor/SELinux label" : ", with no AppArmor or SELinux label", need);
        _cleanup_free_ char *qconf = NULL;
        bool seccomp_off = read_file_capped("/etc/libvirt/qemu.conf", 1 << 20, &qconf, NULL) >= 0 &&
                           strstr(qconf, "\nseccomp_sandbox = 0");
        add_check(checks, "seccomp", !seccomp_off || !c->require_seccomp,
                  seccomp_off ? "QEMU's seccomp sandbox is off in /etc/libvirt/qemu.conf%s"
                              : "QEMU runs with its seccomp sandbox (-sandbox on)%s",
                  c->require_seccomp ? " (require_seccomp = true)" : "");
        bool v2 = file_exists("/sys/fs/cgroup/cgroup.controllers"), v1 = file_exists("/sys/fs/cgroup/memory");
        add_check(checks, "cgroups", v2 || v1,
                  v2 ? "cgroup v2 at /sys/fs/cgroup" : v1 ? "cgroup v1 at /sys/fs/cgroup (libvirt applies <memory> and CPU shares there)"
                                                       : "no cgroup hierarchy at /sys/fs/cgroup: each seat is bounded by its VM alone");
        bool nft = file_exists("/usr/sbin/nft") || file_exists("/sbin/nft");
        add_check(checks, "nftables", nft, nft ? "nft is installed" : "nftables is missing (apt-get install nftables)");
        /* qemu_uid_range is seatd's alone: a user or group of the host with one of those
         * ids would own seat overlays (and a seat QEMU its files). */
        uid_t clash = 0;
        for (uid_t u = uid_first; u && u <= uid_last && !clash; u++)
                if (getpwuid(u) || getgrgid((gid_t) u))
                        clash = u;
        if (clash)
                add_check(checks, "qemu_uids", false,
                          "id %u of qemu_uid_range %s belongs to a user or group of this host: choose a range no account uses",
                          (unsigned) clash, c->qemu_uid_range);
        else
                add_check(checks, "qemu_uids", true, "qemu_uid_range %s: no user or group of this host uses those ids",
                          c->qemu_uid_range);
        /* The seat QEMUs' own uids reach their per-domain files (master key, agent socket)
         * only through libvirt's state directories, which Debian ships 0750. */
        const char *need_x[] = { "/var/lib/libvirt/qemu", "/var/lib/libvirt/qemu/channel",
                                 "/var/lib/libvirt/qemu/channel/target" };
        const char *closed = NULL;
        for (size_t i = 0; i < ELEMENTSOF(need_x) && !closed; i++) {
                struct stat dst;
                if (stat(need_x[i], &dst) == 0 && !(dst.st_mode & S_IXOTH))
                        closed = need_x[i];
        }
        if (closed)
                add_check(checks, "libvirt_dirs", false,
                          "'%s' cannot be traversed by seat QEMUs' own uids: chmod o+x it (seatd's tmpfiles.d does)", closed);
        else
                add_check(checks, "libvirt_dirs", true, "libvirt's state directories can be traversed by seat QEMUs' uids");
        struct statvfs vfs;
        uint64_t free_bytes = statvfs(c->state_dir, &vfs) == 0 ? (uint64_t) vfs.f_bavail * vfs.f_frsize : 0;
        add_check(checks, "disk", free_bytes >= c->disk_reserve_bytes, "%.1f GiB free in '%s' (disk_reserve_bytes %.1f GiB)",
                  free_bytes / 1073741824.0, c->state_dir, c->disk_reserve_bytes / 1073741824.0);

        const char *accel = kvm_ok ? "kvm" : c->allow_tcg ? "tcg" : "none";
        ready = (kvm_ok || c->allow_tcg) && conf_ok && (!seccomp_off || !c->require_seccomp) && !clash && !closed;
        /* Remembered for accel = auto. */
        _cleanup_free_ char *mark = NULL;
        if (asprintf(&mark, "%s/kvm-usable", c->state_dir) >= 0)
                (void) write_file_atomic(mark, kvm_ok ? "1\n" : "0\n", 2, 0644);
        log_notice("host check: kvm %s, seats would run with %s", kvm_ok ? "usable" : "not usable", accel);

        json_object *o = json_object_new_object();
        json_object_object_add(o, "checks", checks);
        json_object_object_add(o, "accel", json_object_new_string(accel));
        json_object_object_add(o, "ready", json_object_new_boolean(ready));
        *ret_result = o;
        return 0;
}

/* One check at a time: each boots a probe guest (one domain name per process, and the
 * kvm-usable mark it writes decides accel = auto). The last result is kept: on the
 * facilitator socket, where every open dashboard asks, a result younger than
 * HOST_CHECK_SHARED_MS is answered without a new probe, so dashboards cannot make seatd
 * boot probe guests on end; an operator's `seatctl host check` always probes. */
#define HOST_CHECK_SHARED_MS 60000
static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;
static char *last_result; /* under check_lock: the JSON text of the last check */
static int64_t last_ms;

static int host_check_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        _cleanup_(pthread_mutex_unlockp) pthread_mutex_t *locked = &check_lock;
        pthread_mutex_lock(locked);
        if (req->facilitator && last_result && now_monotonic_ms() - last_ms < HOST_CHECK_SHARED_MS) {
                json_object *o = json_tokener_parse(last_result);
                if (o) {
                        json_object_object_add(o, "age_ms", json_object_new_int64(now_monotonic_ms() - last_ms));
                        *ret_result = o;
                        return 0;
                }
        }
        json_object *o = NULL;
        int r = host_check_run(req, &o, ret_error);
        if (r < 0)
                return r;
        char *text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        if (text) {
                free(last_result);
                last_result = text;
                last_ms = now_monotonic_ms();
        }
        json_object_object_add(o, "age_ms", json_object_new_int64(0));
        *ret_result = o;
        return 0;
}

static int host_check_method(Request *req) {
        return request_start_job(req, host_check_job, NULL, NULL);
}

static const Method host_methods[] = {
        { "host.check", host_check_method, true, true },
};

int host_methods_init(Manager *m, SeatError **ret_error) {
        return server_add_methods(m->server, host_methods, ELEMENTSOF(host_methods));
}
