/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The DNS guards' supervision in seatd (seatd/dnsguard-run.c): the restart policy, and
 * reaping an exited guard through its pidfd with the reason it exited. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../lib/seat-test.h"

#include "common/fileio.h"
#include "common/macro.h"
#include "seatd/dnsguard-run.h"

TEST(backoff) {
        int64_t at[DNSGUARD_RESTART_CAP];
        int64_t now = 1000000;
        /* 0.2 s, doubling with every restart in the window, at most 5 s */
        static const int64_t want[] = { 200, 400, 800, 1600, 3200, 5000, 5000, 5000, 5000, 5000 };
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                assert_int_equal(dnsguard_backoff(at, i, 1, now), want[i]);
                at[i] = now;
                now += 100;
        }
        /* the cap: 10 restarts within 60 s */
        assert_int_equal(dnsguard_backoff(at, DNSGUARD_RESTART_CAP, 1, now), DNSGUARD_GIVE_UP_WINDOW);
        /* the oldest out of the window: one more allowed, at the longest delay */
        assert_int_equal(dnsguard_backoff(at, DNSGUARD_RESTART_CAP, 1, at[0] + DNSGUARD_RESTART_WINDOW_MS), 5000);
        /* all of them out of it: a fresh start */
        assert_int_equal(dnsguard_backoff(at, DNSGUARD_RESTART_CAP, 1, at[9] + DNSGUARD_RESTART_WINDOW_MS), 200);
        assert_int_equal(dnsguard_backoff(NULL, 0, 0, 0), 200);
        assert_int_equal(dnsguard_backoff(NULL, 0, 1, 0), 200);
}

/* On a slow host the restarts spread past the window: a guard that never stays up is still
 * given up on, after the cap's restarts in a row; its delays grow with them meanwhile. */
TEST(backoff_in_a_row) {
        int64_t at[DNSGUARD_RESTART_CAP];
        int64_t now = 1000000;
        static const int64_t want[] = { 200, 400, 800, 1600, 3200, 5000, 5000, 5000, 5000, 5000 };
        size_t n = 0;
        for (unsigned end = 1; end <= ELEMENTSOF(want); end++) {
                /* each restart a window after the one before: never two in it */
                assert_int_equal(dnsguard_backoff(at, n, end, now), want[end - 1]);
                if (n == ELEMENTSOF(at)) {
                        memmove(at, at + 1, sizeof(at) - sizeof(at[0]));
                        n--;
                }
                at[n++] = now;
                now += DNSGUARD_RESTART_WINDOW_MS;
        }
        assert_int_equal(dnsguard_backoff(at, n, DNSGUARD_RESTART_CAP + 1, now), DNSGUARD_GIVE_UP_IN_A_ROW);
        /* both: in a row is what is said */
        assert_int_equal(dnsguard_backoff(at, n, DNSGUARD_RESTART_CAP + 1, at[n - 1]), DNSGUARD_GIVE_UP_IN_A_ROW);
}

TEST(describe) {
        char buf[128];
        dnsguard_describe_exit(1 << 8, buf, sizeof(buf));
        assert_string_equal(buf, "exited with status 1");
        dnsguard_describe_exit(SIGKILL, buf, sizeof(buf));
        assert_string_equal(buf, "killed by signal 9 (Killed)");
        dnsguard_describe_exit(SIGSEGV | 0x80, buf, sizeof(buf));
        assert_string_equal(buf, "killed by signal 11 (Segmentation fault), core dumped");
}

/* A child standing in for a guard, as dnsguard_run_start() hands it over. */
static DnsGuardProc child(int exit_code) {
        int p[2], s[2]; /* s: the child says its signals are set */
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(pipe2(s, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (exit_code >= 0)
                        _exit(exit_code);
                if (exit_code == -2) /* a guard deaf to SIGTERM */
                        signal(SIGTERM, SIG_IGN);
                (void) !write(s[1], "1", 1);
                for (;;)
                        pause();
        }
        close(p[0]);
        close(s[1]);
        if (exit_code < 0) {
                char c;
                assert_int_equal(read(s[0], &c, 1), 1);
        }
        close(s[0]);
        int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        assert_true(pidfd >= 0);
        return (DnsGuardProc) { .pid = pid, .lifeline = p[1], .pidfd = pidfd };
}

TEST(reap) {
        char why[128];
        DnsGuardProc g = child(-1);
        /* running: nothing to reap, nothing forgotten */
        assert_int_equal(dnsguard_run_reap(&g, why, sizeof(why)), -EAGAIN);
        assert_true(g.pid > 0);
        assert_int_equal(kill(g.pid, SIGKILL), 0);
        struct pollfd p = { .fd = g.pidfd, .events = POLLIN };
        assert_int_equal(poll(&p, 1, 5000), 1); /* the pidfd says it exited */
        assert_int_equal(dnsguard_run_reap(&g, why, sizeof(why)), 0);
        assert_string_equal(why, "killed by signal 9 (Killed)");
        assert_int_equal(g.pid, 0);
        assert_int_equal(g.pidfd, -1);
        assert_int_equal(g.lifeline, -1);

        g = child(3);
        p.fd = g.pidfd;
        assert_int_equal(poll(&p, 1, 5000), 1);
        assert_int_equal(dnsguard_run_reap(&g, why, sizeof(why)), 0);
        assert_string_equal(why, "exited with status 3");

        /* a deliberate stop of a running one: SIGTERM, reaped, fds closed */
        g = child(-1);
        pid_t pid = g.pid;
        dnsguard_run_stop(&g);
        assert_int_equal(g.pid, 0);
        assert_int_equal(kill(pid, 0) < 0 ? errno : 0, ESRCH);
        dnsguard_run_stop(&g); /* NONE: a no-op */

        /* one that ignores SIGTERM is killed after the grace time, and stopping returns */
        g = child(-2);
        pid = g.pid;
        int64_t t0 = now_monotonic_ms();
        dnsguard_run_stop(&g);
        int64_t took = now_monotonic_ms() - t0;
        assert_int_equal(kill(pid, 0) < 0 ? errno : 0, ESRCH);
        assert_true(took >= DNSGUARD_STOP_GRACE_MS - 50);

        /* and a stopped (SIGSTOP) one too: SIGKILL ends a stopped process */
        g = child(-1);
        pid = g.pid;
        assert_int_equal(kill(pid, SIGSTOP), 0);
        dnsguard_run_stop(&g);
        assert_int_equal(kill(pid, 0) < 0 ? errno : 0, ESRCH);
}

/* The event loop's side of a restart: the ready pipe read without blocking. */
TEST(ready) {
        int p[2];
        DnsGuardProc g = DNSGUARD_PROC_NONE;
        assert_int_equal(dnsguard_run_ready(&g), 0); /* no pipe: started the blocking way */

        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        g.ready = p[0];
        assert_int_equal(dnsguard_run_ready(&g), -EAGAIN); /* nothing yet */
        assert_int_equal(write(p[1], "1", 1), 1);
        assert_int_equal(dnsguard_run_ready(&g), 0);
        assert_int_equal(g.ready, -1); /* closed once ready */
        close(p[1]);

        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        g.ready = p[0];
        close(p[1]); /* it exited before it was ready */
        assert_int_equal(dnsguard_run_ready(&g), -EIO);
        assert_int_equal(g.ready, p[0]); /* kept for dnsguard_run_stop() */

        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        close(g.ready);
        g.ready = p[0];
        assert_int_equal(write(p[1], "x", 1), 1); /* anything but '1' */
        assert_int_equal(dnsguard_run_ready(&g), -EIO);
        close(p[1]);
        dnsguard_run_stop(&g); /* closes it */
        assert_int_equal(g.ready, -1);
}

TEST_MAIN("dnsguard-run")
