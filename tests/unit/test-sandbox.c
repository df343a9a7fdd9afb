/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seatd's confinement (seatd/sandbox.c), installed in a child: what the seccomp filter
 * denies fails with EPERM, ordinary calls still work, a foreign ABI is killed, it is
 * inherited and cannot be undone; and under the Landlock ruleset nothing in /proc but the
 * forwarding switches opens for writing, while files elsewhere do. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../lib/seat-test.h"

#include "seatd/sandbox.h"

#define CHILD_SKIP 77

static int denied_eperm(long nr) {
        errno = 0;
        long r = syscall(nr, 0, 0, 0, 0, 0);
        return r == -1 && errno == EPERM;
}

/* Runs fn in a child; its exit code (0: every check held). Killed: 128 + the signal. */
static int in_child(int (*fn)(void)) {
        fflush(NULL);
        pid_t p = fork();
        if (p < 0)
                return -1;
        if (p == 0)
                _exit(fn());
        int st = 0;
        if (waitpid(p, &st, 0) != p)
                return -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

static const struct {
        long nr;
        const char *name;
} must_fail[] = {
        { SYS_mount, "mount" },
        { SYS_init_module, "init_module" },
        { SYS_finit_module, "finit_module" },
        { SYS_kexec_load, "kexec_load" },
        { SYS_bpf, "bpf" },
        { SYS_perf_event_open, "perf_event_open" },
        { SYS_open_by_handle_at, "open_by_handle_at" },
        /* issue #13: other processes' memory and descriptors, the new mount API, keyrings */
        { SYS_process_vm_readv, "process_vm_readv" },
        { SYS_process_vm_writev, "process_vm_writev" },
        { SYS_pidfd_getfd, "pidfd_getfd" },
        { SYS_fsopen, "fsopen" },
        { SYS_fsconfig, "fsconfig" },
        { SYS_fsmount, "fsmount" },
        { SYS_fspick, "fspick" },
        { SYS_move_mount, "move_mount" },
        { SYS_open_tree, "open_tree" },
        { SYS_mount_setattr, "mount_setattr" },
        { SYS_keyctl, "keyctl" },
        { SYS_add_key, "add_key" },
        { SYS_request_key, "request_key" },
};

#if defined(__x86_64__)
static int x32_getpid(void) {
        (void) syscall(0x40000000 /* __X32_SYSCALL_BIT */ | SYS_getpid);
        return 0; /* not killed */
}
#endif

static int seccomp_child(void) {
        if (sandbox_seatd() < 0)
                return 10;
        for (size_t i = 0; i < sizeof(must_fail) / sizeof(must_fail[0]); i++)
                if (!denied_eperm(must_fail[i].nr)) {
                        fprintf(stderr, "%s was not denied with EPERM (errno %d)\n", must_fail[i].name, errno);
                        return 11;
                }
        if (mount("none", "/", "tmpfs", 0, NULL) == 0)
                return 12;
        if (getpid() <= 0 || prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
                return 14;
        if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 2)
                return 15;
        /* inherited by what seatd starts */
        pid_t p = fork();
        if (p == 0)
                _exit(denied_eperm(SYS_mount) && denied_eperm(SYS_keyctl) && denied_eperm(SYS_fsopen) ? 0 : 1);
        int wst = 0;
        if (p < 0 || waitpid(p, &wst, 0) != p || !WIFEXITED(wst) || WEXITSTATUS(wst) != 0)
                return 16;
#if defined(__x86_64__)
        /* The filter knows the native numbers only: an x32 call is another ABI, killed. */
        if (in_child(x32_getpid) != 128 + SIGSYS)
                return 17;
#endif
        return 0;
}

TEST(seccomp) {
        assert_int_equal(in_child(seccomp_child), 0);
}

/* Opening for writing: 0 when it opened, else the errno. */
static int open_w(const char *path) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return errno;
        close(fd);
        return 0;
}

static int landlock_child(void) {
        char parent_mem[64], tmp[] = "/tmp/test-sandbox.XXXXXX";
        int r = sandbox_seatd_proc();
        if (r == -EOPNOTSUPP)
                return CHILD_SKIP;
        if (r < 0)
                return 20;
        snprintf(parent_mem, sizeof(parent_mem), "/proc/%d/mem", (int) getppid());

        /* another process's memory, seatd's own, the kernel's switches */
        if (open("/proc/self/mem", O_RDWR | O_CLOEXEC) >= 0 || errno != EACCES)
                return 21;
        if (open_w(parent_mem) != EACCES)
                return 22;
        if (open_w("/proc/sys/kernel/core_pattern") != EACCES)
                return 23;
        r = open_w("/proc/sysrq-trigger"); /* absent from kernels without CONFIG_MAGIC_SYSRQ */
        if (r != EACCES && r != ENOENT)
                return 23;
        if (open_w("/proc/self/oom_score_adj") != EACCES)
                return 24;
        /* reading /proc stays: seatd reads the seat QEMUs' status */
        int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 25;
        close(fd);
        /* files elsewhere: created, written */
        fd = mkstemp(tmp);
        if (fd < 0 || write(fd, "x", 1) != 1)
                return 26;
        close(fd);
        r = open_w(tmp);
        unlink(tmp);
        if (r != 0)
                return 27;
        /* moved into another directory, as seatd moves a session into its quarantine (a
         * ruleset without LANDLOCK_ACCESS_FS_REFER makes this EXDEV) */
        char dir[] = "/tmp/test-sandbox-dir.XXXXXX", a[64], b[64], fa[80], fb[80];
        if (!mkdtemp(dir))
                return 31;
        snprintf(a, sizeof(a), "%s/a", dir);
        snprintf(b, sizeof(b), "%s/b", dir);
        snprintf(fa, sizeof(fa), "%s/f", a);
        snprintf(fb, sizeof(fb), "%s/f", b);
        r = mkdir(a, 0700) == 0 && mkdir(b, 0700) == 0 && (fd = open(fa, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) >= 0 ? 0 : 32;
        if (r == 0) {
                close(fd);
                if (rename(fa, fb) < 0)
                        r = errno == EXDEV ? 33 : 34;
                else if (link(fb, fa) < 0)
                        r = 35;
        }
        unlink(fa);
        unlink(fb);
        rmdir(a);
        rmdir(b);
        rmdir(dir);
        if (r != 0)
                return r;
        if (open_w("/dev/null") != 0)
                return 28;
        /* the forwarding switches seatd sets (opened only, nothing written); as root only */
        if (geteuid() == 0 && open_w("/proc/sys/net/ipv4/conf/lo/forwarding") != 0)
                return 29;
        /* inherited */
        pid_t p = fork();
        if (p == 0)
                _exit(open_w("/proc/self/mem") == EACCES && open_w("/dev/null") == 0 ? 0 : 1);
        int st = 0;
        if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                return 30;
        return 0;
}

TEST(proc_writes) {
        int r = in_child(landlock_child);
        if (r == CHILD_SKIP)
                skip(); /* the kernel has no Landlock ABI 2 (not enabled, or older than 5.19) */
        assert_int_equal(r, 0);
}

TEST_MAIN("sandbox")
