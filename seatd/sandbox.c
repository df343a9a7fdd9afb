/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seatd's own confinement, set up before any thread, library or child and inherited by
 * everything seatd starts (qemu-img, libguestfs' appliance):
 *
 * - a seccomp deny list, built with libseccomp as crun builds its filters: what a seat
 *   manager never needs and what an attacker who took over seatd would want next. Loading
 *   kernel code, kexec, reboot, swap, raw I/O ports; mounting, by mount(2) and by the new
 *   mount API; reading and writing other processes' memory (ptrace, process_vm_*) and taking
 *   their file descriptors (pidfd_getfd); BPF, perf, userfaultfd; file handles that bypass
 *   path checks; the kernel keyrings. Denied calls fail with EPERM, everything else is
 *   allowed. A call of a foreign ABI (x32, i386 on x86_64) kills the process: the filter
 *   only knows the native numbers.
 * - a Landlock ruleset: files may be opened for writing anywhere but under /proc, where
 *   only /proc/sys/net/ipv4/conf (the seat bridges' forwarding switches) stays writable.
 *   It also handles LANDLOCK_ACCESS_FS_REFER (ABI 2, Linux 5.19), granted with the writes:
 *   a ruleset that does not handle it makes every rename or link into another directory
 *   fail with EXDEV (seatd moves a session into its quarantine that way), so on a kernel
 *   with ABI 1 there is no ruleset at all.
 *   So no /proc/PID/mem (another process's memory, seatd's children included, or seatd's
 *   own past W^X), no /proc/sys/kernel/core_pattern, no /proc/sysrq-trigger.
 *   systemd's ProtectProc= cannot do this: it hides other users' processes, and seatd
 *   reads /proc/PID of the seat QEMUs (libvirt-qemu's) to check their confinement.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <seccomp.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "common/macro.h"
#include "sandbox.h"

/* LeakSanitizer stops the process's threads with ptrace at exit: the ASan build keeps it. */
#if defined(__SANITIZE_ADDRESS__)
#define SANDBOX_KEEPS_PTRACE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANDBOX_KEEPS_PTRACE 1
#endif
#endif

static const char *const denied[] = {
#if !defined(SANDBOX_KEEPS_PTRACE)
        "ptrace",
#endif
        /* other processes */
        "process_vm_readv", "process_vm_writev", "pidfd_getfd",
        /* kernel code, the machine */
        "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon",
        "swapoff", "acct", "iopl", "ioperm",
        /* mounts, old and new API */
        "mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
        "mount_setattr",
        /* kernel interfaces seatd has no use for */
        "bpf", "perf_event_open", "userfaultfd", "open_by_handle_at", "name_to_handle_at", "lookup_dcookie",
        "keyctl", "add_key", "request_key",
};

DEFINE_TRIVIAL_CLEANUP_FUNC(scmp_filter_ctx, seccomp_release)

static int sandbox_seccomp(void) {
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        int r;

        if (!ctx)
                return -ENOMEM;
        /* seccomp_init() takes the native architecture only; anything else (the x32 numbers
         * included) gets this action. no_new_privs is libseccomp's default. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(denied); i++) {
                int nr = seccomp_syscall_resolve_name(denied[i]);
                if (nr == __NR_SCMP_ERROR)
                        return -ENOSYS; /* a libseccomp older than the list: do not guess */
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
                /* -EDOM: no such call on this architecture (iopl on aarch64) */
                if (r < 0 && r != -EDOM)
                        return r;
        }
        return seccomp_load(ctx);
}

/* fd: a directory (writes and renames beneath it) or another file (writes to it). */
static int landlock_allow_writes(int ruleset, int fd, bool dir) {
        struct landlock_path_beneath_attr rule = {
                .allowed_access = LANDLOCK_ACCESS_FS_WRITE_FILE | (dir ? LANDLOCK_ACCESS_FS_REFER : 0),
                .parent_fd = fd,
        };
        return syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) < 0 ? -errno : 0;
}

/* The directory whose rule allows writes in /proc stays open for seatd's lifetime: procfs
 * makes a new inode for a sysctl directory whose dentry was dropped, and Landlock's rule is
 * on the inode. An open descriptor keeps the dentry. */
static int proc_conf_fd = -EBADF;

static int sandbox_landlock(void) {
        const struct landlock_ruleset_attr attr = {
                .handled_access_fs = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REFER,
        };
        _cleanup_close_ int ruleset = -EBADF, conf = -EBADF;
        int r;

        long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        if (abi < 0)
                return errno == ENOSYS || errno == EOPNOTSUPP ? -EOPNOTSUPP : -errno;
        if (abi < 2)
                return -EOPNOTSUPP; /* no REFER: renames across directories would fail */
        ruleset = (int) syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
        if (ruleset < 0)
                return -errno;

        /* Everything under / but /proc. Symbolic links are left out: their targets are
         * under / (merged /usr), or they would lead back into /proc. */
        DIR *root = opendir("/");
        if (!root)
                return -errno;
        struct dirent *de;
        r = 0;
        while (r >= 0 && (de = readdir(root))) {
                struct stat st;
                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, "proc"))
                        continue;
                int fd = openat(dirfd(root), de->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        continue; /* gone meanwhile */
                if (fstat(fd, &st) == 0 && !S_ISLNK(st.st_mode))
                        r = landlock_allow_writes(ruleset, fd, S_ISDIR(st.st_mode));
                (void) close(fd);
        }
        closedir(root);
        if (r < 0)
                return r;

        /* seatd switches forwarding on for its bridges (seatd/seatnet.c). A host without it
         * (no IPv4) simply has nothing writable in /proc. */
        conf = open("/proc/sys/net/ipv4/conf", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (conf >= 0) {
                r = landlock_allow_writes(ruleset, conf, false);
                if (r < 0)
                        return r;
        }
        /* Landlock wants no_new_privs (or CAP_SYS_ADMIN, which the unit drops). */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
                return -errno;
        if (conf >= 0) {
                safe_close(proc_conf_fd);
                proc_conf_fd = TAKE_FD(conf);
        }
        return 0;
}

int sandbox_seatd(void) {
        return sandbox_seccomp();
}

int sandbox_seatd_proc(void) {
        return sandbox_landlock();
}
