/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seatd's own seccomp filter: a deny list of what a seat manager never needs (and what an
 * attacker who took over seatd would want next): loading kernel code, mounting, tracing
 * other processes, kexec, raw I/O ports, BPF and perf, handles that bypass path checks,
 * userfaultfd. Inherited by everything seatd starts (qemu-img, libguestfs' appliance).
 * Denied calls fail with EPERM; everything else is allowed. The x32 ABI and foreign
 * architectures are refused outright. Plain BPF through prctl(), no libseccomp.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "macro.h"
#include "sandbox.h"

#if defined(__x86_64__)
#define SANDBOX_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SANDBOX_ARCH AUDIT_ARCH_AARCH64
#endif

/* LeakSanitizer stops the process's threads with ptrace at exit: the ASan build keeps it. */
#if defined(__SANITIZE_ADDRESS__)
#define SANDBOX_KEEPS_PTRACE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANDBOX_KEEPS_PTRACE 1
#endif
#endif

static const int denied[] = {
#if !defined(SANDBOX_KEEPS_PTRACE)
        __NR_ptrace,
#endif
        __NR_process_vm_readv, __NR_process_vm_writev, __NR_kexec_load,
#ifdef __NR_kexec_file_load
        __NR_kexec_file_load,
#endif
        __NR_init_module, __NR_finit_module, __NR_delete_module, __NR_mount, __NR_umount2, __NR_pivot_root,
        __NR_swapon, __NR_swapoff, __NR_reboot, __NR_acct,
#ifdef __NR_iopl
        __NR_iopl, __NR_ioperm,
#endif
        __NR_bpf, __NR_perf_event_open, __NR_userfaultfd, __NR_open_by_handle_at, __NR_name_to_handle_at,
        __NR_fsopen, __NR_fsmount, __NR_move_mount, __NR_open_tree, __NR_lookup_dcookie,
};

int sandbox_seatd(void) {
#ifndef SANDBOX_ARCH
        return -EOPNOTSUPP;
#else
        /* load arch; refuse others; load nr; refuse x32; each denied nr -> EPERM; allow */
        struct sock_filter f[7 + 2 * ELEMENTSOF(denied)];
        size_t n = 0;
        f[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        f[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SANDBOX_ARCH, 1, 0);
        f[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
        f[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        f[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1); /* x32 */
        f[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
        for (size_t i = 0; i < ELEMENTSOF(denied); i++) {
                f[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned) denied[i], 0, 1);
                f[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
        }
        f[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        struct sock_fprog prog = { .len = (unsigned short) n, .filter = f };

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
                return -errno;
        return 0;
#endif
}
