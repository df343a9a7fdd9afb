/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What guest-init does as PID 1 before it serves the agent protocol: API filesystems,
 * kernel modules, switch to the real root, and at the end power off or reboot.
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/log.h"
#include "pid1.h"

#define ROOT_WAIT_MS 10000
#define SYSROOT "/sysroot"
#define CMDLINE_MAX (64u * 1024u)
#define MODULES_LIST_MAX (64u * 1024u)

typedef struct MountEntry {
        const char *what, *where, *type;
        unsigned long flags;
        const char *options;
} MountEntry;

static const MountEntry api_mounts[] = {
        { "proc", "/proc", "proc", MS_NOSUID | MS_NOEXEC | MS_NODEV, NULL },
        { "sysfs", "/sys", "sysfs", MS_NOSUID | MS_NOEXEC | MS_NODEV, NULL },
        { "devtmpfs", "/dev", "devtmpfs", MS_NOSUID | MS_STRICTATIME, "mode=0755" },
        { "devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "mode=0620,gid=5,ptmxmode=0666" },
        { "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777" },
        { "tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755" },
        { "tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777" },
};

static void sleep_ms(unsigned ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static int mount_one(const MountEntry *m) {
        if (mkdir(m->where, 0755) < 0 && errno != EEXIST)
                return log_warning_errno(errno, "Cannot create '%s': %m", m->where);
        if (mount(m->what, m->where, m->type, m->flags, m->options) < 0) {
                if (errno == EBUSY)
                        return 0;
                return log_warning_errno(errno, "Cannot mount %s on '%s': %m", m->type, m->where);
        }
        log_debug("Mounted %s on '%s'", m->type, m->where);
        return 0;
}

int pid1_mount_api_filesystems(void) {
        int ret = 0;

        for (size_t i = 0; i < ELEMENTSOF(api_mounts); i++) {
                int r = mount_one(&api_mounts[i]);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}

void std_fds_ensure_open(void) {
        for (int fd = 0; fd <= 2; fd++) {
                int n;

                if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
                        continue;
                /* Lowest free fd: lands on fd. Deliberately not O_CLOEXEC. */
                n = open("/dev/null", O_RDWR | O_NOCTTY);
                if (n < 0)
                        return;
                if (n != fd) {
                        (void) dup2(n, fd);
                        (void) close(n);
                }
        }
}

int pid1_log_to_kmsg(void) {
        int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return log_warning_errno(errno, "Cannot open /dev/kmsg, logging to stderr: %m");
        log_set_fd(fd); /* kept open for good */
        log_set_kmsg_format(true);
        return 0;
}

static bool ends_with(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int load_module(const char *path) {
        _cleanup_close_ int fd = -EBADF;

        if (!ends_with(path, ".ko"))
                return log_warning_errno(EOPNOTSUPP, "Module '%s': only uncompressed .ko files are supported", path);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return log_warning_errno(errno, "Cannot open module '%s': %m", path);
        if (syscall(SYS_finit_module, fd, "", 0) < 0) {
                if (errno == EEXIST)
                        return 0;
                return log_warning_errno(errno, "Cannot load module '%s': %m", path);
        }
        log_debug("Loaded module '%s'", path);
        return 0;
}

int pid1_load_modules(const char *path) {
        _cleanup_free_ char *list = NULL;
        size_t len;
        char *line, *save = NULL;
        int r, ret = 0, n = 0;

        r = read_file_capped(path, MODULES_LIST_MAX, &list, &len);
        if (r == -ENOENT) {
                log_debug("No module list at '%s'", path);
                return 0;
        }
        if (r < 0)
                return log_warning_errno(r, "Cannot read '%s': %m", path);

        for (line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *end;

                line += strspn(line, " \t\r");
                end = line + strlen(line);
                while (end > line && strchr(" \t\r", end[-1]))
                        *--end = '\0';
                if (*line == '\0' || *line == '#')
                        continue;
                r = load_module(line);
                if (r < 0 && ret == 0)
                        ret = r;
                if (r >= 0)
                        n++;
        }
        log_info("Loaded %d kernel modules", n);
        return ret;
}

/* The value of key=... on the kernel command line, or NULL. */
static int cmdline_get(const char *cmdline, const char *key, char **ret) {
        size_t k = strlen(key);
        const char *p = cmdline;

        for (;;) {
                size_t n;

                p += strspn(p, " \t\n");
                if (*p == '\0')
                        break;
                n = strcspn(p, " \t\n");
                if (n > k && strncmp(p, key, k) == 0 && p[k] == '=') {
                        char *v = strndup(p + k + 1, n - k - 1);
                        if (!v)
                                return -ENOMEM;
                        free(*ret);
                        *ret = v; /* the last one wins, like the kernel */
                }
                p += n;
        }
        return 0;
}

/* The values of keys on the kernel command line (each left NULL when absent) into
 * *ret_values[i]; logs why not. The switch to the root disk and the hand-over to the
 * image's init both start here. */
static int kernel_cmdline_values(const char *const *keys, char **ret_values[], size_t n) {
        _cleanup_free_ char *cmdline = NULL;
        size_t len;
        int r = read_file_capped("/proc/cmdline", CMDLINE_MAX, &cmdline, &len);
        if (r < 0)
                return log_warning_errno(r, "Cannot read /proc/cmdline: %m");
        for (size_t i = 0; i < n; i++) {
                r = cmdline_get(cmdline, keys[i], ret_values[i]);
                if (r < 0)
                        return log_error_errno(r, "Cannot parse the kernel command line: %m");
        }
        return 0;
}

static int wait_for_block_device(const char *dev) {
        int64_t deadline = now_monotonic_ms() + ROOT_WAIT_MS;
        struct stat st;

        for (;;) {
                if (stat(dev, &st) >= 0 && S_ISBLK(st.st_mode))
                        return 0;
                if (now_monotonic_ms() >= deadline)
                        return -ETIMEDOUT;
                sleep_ms(50);
        }
}

static int sysroot_move_mount(const char *from) {
        char to[64];

        (void) snprintf(to, sizeof(to), SYSROOT "%s", from);
        if (mkdir(to, 0755) < 0 && errno != EEXIST)
                return log_warning_errno(errno, "Cannot create '%s': %m", to);
        if (mount(from, to, NULL, MS_MOVE, NULL) < 0)
                return log_warning_errno(errno, "Cannot move '%s' to '%s': %m", from, to);
        return 0;
}

int pid1_switch_root(void) {
        _cleanup_free_ char *dev = NULL, *fstype = NULL, *flags = NULL;
        static const MountEntry new_tmp = { "tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777" };
        static const char *const keys[] = { "seatd.root", "seatd.rootfstype", "seatd.rootflags" };
        char **values[] = { &dev, &fstype, &flags };
        int r;

        r = kernel_cmdline_values(keys, values, ELEMENTSOF(keys));
        if (r < 0)
                return r;
        if (!dev) {
                log_info("No seatd.root= on the kernel command line: staying in the initramfs");
                return 0;
        }

        r = wait_for_block_device(dev);
        if (r < 0)
                return log_error_errno(r, "Root device '%s' did not appear: %m", dev);

        if (mkdir(SYSROOT, 0755) < 0 && errno != EEXIST)
                return log_error_errno(errno, "Cannot create '" SYSROOT "': %m");
        if (mount(dev, SYSROOT, fstype ?: "ext4", 0, flags && *flags ? flags : NULL) < 0)
                return log_error_errno(errno, "Cannot mount '%s' (%s) on " SYSROOT ": %m", dev, fstype ?: "ext4");

        /* From here on a failure leaves a half-moved tree: carry on regardless, but say so. */
        (void) sysroot_move_mount("/proc");
        (void) sysroot_move_mount("/sys");
        (void) sysroot_move_mount("/dev");
        (void) sysroot_move_mount("/run");

        if (chdir(SYSROOT) < 0)
                return log_error_errno(errno, "chdir '" SYSROOT "': %m");
        if (mount(".", "/", NULL, MS_MOVE, NULL) < 0)
                return log_error_errno(errno, "Cannot move " SYSROOT " to /: %m");
        if (chroot(".") < 0)
                return log_error_errno(errno, "chroot: %m");
        if (chdir("/") < 0)
                return log_error_errno(errno, "chdir '/': %m");

        (void) mount_one(&new_tmp);
        log_info("Switched root to '%s'", dev);
        return 1;
}

/* A path the image's own init may have: absolute, no "..", no odd bytes (it comes from the
 * kernel command line, which the image's manifest sets, but a typo must not exec junk). */
static bool init_path_ok(const char *p) {
        if (p[0] != '/' || strlen(p) > 255 || strstr(p, "/../") || ends_with(p, "/.."))
                return false;
        for (const char *c = p; *c; c++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+", *c))
                        return false;
        return true;
}

int pid1_exec_init(void) {
        _cleanup_free_ char *init = NULL;
        static const char *const keys[] = { "seatd.init" };
        char **values[] = { &init };
        int r;

        r = kernel_cmdline_values(keys, values, ELEMENTSOF(keys));
        if (r < 0)
                return r;
        if (!init)
                return 0;
        if (!init_path_ok(init))
                return log_error_errno(EINVAL, "seatd.init='%s' is not an absolute path: serving the agent as PID 1", init);
        if (access(init, X_OK) < 0)
                return log_error_errno(errno, "seatd.init='%s' is not executable: %m; serving the agent as PID 1", init);

        /* The image's init (systemd) starts its own guest-init --agent from a unit. What we
         * changed for ourselves must not leak into it: SIGPIPE was ignored for the agent. */
        (void) signal(SIGPIPE, SIG_DFL);
        log_info("Handing PID 1 over to '%s'", init);
        execv(init, (char *[]) { init, NULL });
        return log_error_errno(errno, "Cannot execute seatd.init='%s': %m; serving the agent as PID 1", init);
}

int pid1_finish(bool reboot_after) {
        int64_t deadline;

        log_notice("%s", reboot_after ? "Rebooting" : "Powering off");

        (void) kill(-1, SIGKILL); /* everything but us */
        deadline = now_monotonic_ms() + 1000;
        while (now_monotonic_ms() < deadline) {
                pid_t p = waitpid(-1, NULL, WNOHANG);
                if (p < 0 && errno == ECHILD)
                        break;
                if (p <= 0)
                        sleep_ms(10);
        }

        sync();
        if (mount(NULL, "/", NULL, MS_REMOUNT | MS_RDONLY, NULL) < 0)
                log_debug_errno(errno, "Cannot remount / read-only: %m");
        sync();

        if (reboot(reboot_after ? RB_AUTOBOOT : RB_POWER_OFF) < 0)
                return -errno;
        return -EIO;
}
