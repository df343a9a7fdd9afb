/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seatd's seccomp filter (seatd/sandbox.c), installed in a child: what it denies fails with
 * EPERM, ordinary calls still work, and it is inherited and cannot be undone. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "sandbox.h"

static int denied_eperm(long nr) {
        errno = 0;
        long r = syscall(nr, 0, 0, 0, 0, 0);
        return r == -1 && errno == EPERM;
}

/* Exit codes say which check failed (0: all held). */
static int child(void) {
        if (sandbox_seatd() < 0)
                return 10;
        if (!denied_eperm(SYS_mount) || mount("none", "/", "tmpfs", 0, NULL) == 0)
                return 11;
        if (!denied_eperm(SYS_init_module) || !denied_eperm(SYS_finit_module) || !denied_eperm(SYS_kexec_load))
                return 12;
        if (!denied_eperm(SYS_bpf) || !denied_eperm(SYS_perf_event_open) || !denied_eperm(SYS_open_by_handle_at))
                return 13;
        if (getpid() <= 0 || prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
                return 14;
        if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 2)
                return 15;
        pid_t p = fork(); /* inherited by what seatd starts */
        if (p == 0)
                _exit(denied_eperm(SYS_mount) ? 0 : 1);
        int st = 0;
        if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                return 16;
        return 0;
}

static void test_filter(void **state) {
        pid_t p = fork();
        assert_true(p >= 0);
        if (p == 0)
                _exit(child());
        int st = 0;
        assert_int_equal(waitpid(p, &st, 0), p);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_filter),
        };
        return cmocka_run_group_tests_name("sandbox", tests, NULL, NULL);
}
