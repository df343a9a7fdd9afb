/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seatd-collect's run (seatd/collect.c) against a stand-in collector: whatever the collector
 * started is gone when collect_run returns, even a process that left its process group
 * (setsid, setpgid) or was orphaned, at the timeout and after a normal exit alike.
 *
 * The stand-in is this executable itself: collect_run starts it with argv[0]
 * "seatd-collect", and its context argument (argv[9]) says how to behave. It runs as
 * nobody, as the real collector runs as evidence_collect_user; so the test needs root. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/seat-test.h"

#include "common/fileio.h"
#include "common/macro.h"
#include "seatd/collect.h"
#include "seatd/proc-tree.h"

#define STANDIN_PIDS_MAX 16

/* ---- the stand-in collector ---- */

static void standin_note(const char *pids) {
        char line[32];
        int fd = open(pids, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        int n = snprintf(line, sizeof(line), "%d\n", (int) getpid());
        if (fd < 0 || write(fd, line, (size_t) n) != n)
                _exit(3);
        close(fd);
}

/* A straggler: off its own way (how), noted, then asleep long past any timeout. With
 * quiet it lets go of the report's pipes, so that the collector's exit is seen at once. */
static void standin_straggler(const char *pids, const char *how, bool quiet) {
        pid_t p = fork();
        if (p < 0)
                _exit(3);
        if (p > 0)
                return;
        if (quiet) {
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                if (null < 0 || dup2(null, STDOUT_FILENO) < 0 || dup2(null, STDERR_FILENO) < 0)
                        _exit(3);
        }
        if (!strcmp(how, "setsid")) {
                /* a session of its own, and in it a child: a tree outside the group */
                if (setsid() < 0)
                        _exit(3);
                if (fork() == 0) {
                        standin_note(pids);
                        sleep(60);
                        _exit(0);
                }
        } else if (!strcmp(how, "setpgid")) {
                if (setpgid(0, 0) < 0)
                        _exit(3);
        } else if (!strcmp(how, "orphan")) {
                /* a daemon's double fork: its parent gone, it is nobody's child here */
                if (setsid() < 0)
                        _exit(3);
                if (fork() != 0)
                        _exit(0);
        }
        standin_note(pids);
        sleep(60);
        _exit(0);
}

/* argv as collect.c's spawn() passes it: ... [4] cache_dir ... [9] context. */
static int standin_main(int argc, char **argv) {
        char pids[PATH_MAX];
        if (argc < 10)
                return 2;
        snprintf(pids, sizeof(pids), "%s/.guestfs-%u/pids", argv[4], (unsigned) getuid());
        bool hang = !strcmp(argv[9], "hang");
        standin_note(pids);
        standin_straggler(pids, "setsid", !hang);
        standin_straggler(pids, "setpgid", !hang);
        standin_straggler(pids, "orphan", !hang);
        /* the orphan's parent must be gone before its pid is noted: wait for all four more */
        for (int i = 0; i < 500; i++) {
                struct stat st;
                if (stat(pids, &st) == 0 && st.st_size > 0) {
                        char buf[256] = "";
                        int fd = open(pids, O_RDONLY | O_CLOEXEC);
                        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
                        if (fd >= 0)
                                close(fd);
                        int lines = 0;
                        for (ssize_t j = 0; j < n; j++)
                                lines += buf[j] == '\n';
                        if (lines >= 5)
                                break;
                }
                usleep(10000);
        }
        if (hang) {
                sleep(60); /* past the timeout */
                return 0;
        }
        printf("{\"result\":\"guest-fault\",\"message\":\"stand-in done\",\"errno\":0}\n");
        return 0;
}

/* ---- the test ---- */

typedef struct Fixture {
        char dir[64];
        char disk[96], staging[96], cache[96], pids[128];
        char helper[PATH_MAX];
} Fixture;

static bool fixture_make(Fixture *f) {
        const struct passwd *pw = getpwnam("nobody");
        if (geteuid() != 0 || !pw)
                return false;
        strcpy(f->dir, "/tmp/test-collect-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        assert_int_equal(chmod(f->dir, 0711), 0);
        snprintf(f->disk, sizeof(f->disk), "%s/disk", f->dir);
        snprintf(f->staging, sizeof(f->staging), "%s/staging", f->dir);
        snprintf(f->cache, sizeof(f->cache), "%s/cache", f->dir);
        snprintf(f->pids, sizeof(f->pids), "%s/.guestfs-%u/pids", f->cache, (unsigned) pw->pw_uid);
        int fd = open(f->disk, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(mkdir(f->staging, 0700), 0);
        assert_int_equal(mkdir(f->cache, 0755), 0);
        ssize_t n = readlink("/proc/self/exe", f->helper, sizeof(f->helper) - 1);
        assert_true(n > 0);
        f->helper[n] = '\0';
        return true;
}

static void fixture_remove(Fixture *f) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
        assert_int_equal(system(cmd), 0);
}

/* Alive: signalable and not a zombie (an orphan's zombie waits for a reaper that may be
 * slow; it runs nothing). */
static bool pid_alive(pid_t pid) {
        char path[64], buf[512];
        if (kill(pid, 0) < 0)
                return false;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
                close(fd);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        const char *rp = strrchr(buf, ')');
        return !(rp && rp[1] == ' ' && rp[2] == 'Z');
}

/* The noted pids that still run, killed (so a failing run leaves nothing behind). */
static size_t survivors(const Fixture *f, size_t *ret_noted) {
        char buf[1024] = "";
        size_t alive = 0, noted = 0;
        int fd = open(f->pids, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
                close(fd);
        for (char *p = buf, *nl; n > 0 && (nl = strchr(p, '\n')); p = nl + 1) {
                pid_t pid = (pid_t) strtol(p, NULL, 10);
                noted++;
                if (pid > 1 && pid_alive(pid)) {
                        fprintf(stderr, "# pid %d outlived the collector\n", (int) pid);
                        alive++;
                        (void) kill(pid, SIGKILL);
                }
        }
        *ret_noted = noted;
        return alive;
}

static void run(const char *mode, int want_r, const char *want_reason) {
        Fixture f;
        if (!fixture_make(&f)) {
                fprintf(stderr, "# skip: needs root and a user 'nobody' (the collector drops to it)\n");
                skip();
        }
        char *paths[] = { (char *) "/etc", NULL };
        CollectRequest req = {
                .helper = f.helper, .user = "nobody", .disk = f.disk, .paths = paths,
                .staging = f.staging, .cache_dir = f.cache, .context = mode,
                .limits = { .max_files = 16, .max_bytes = 1 << 20, .max_file_bytes = 1 << 20 },
                .timeout_s = 2,
        };
        GuestFiles *files = NULL;
        char *reason = NULL;
        SeatError *error = NULL;
        int r = collect_run(&req, &files, &reason, &error);
        if (r < 0)
                fprintf(stderr, "# collect_run: %s\n", error ? error->message : "?");
        size_t noted = 0, alive = survivors(&f, &noted);
        fixture_remove(&f);
        assert_int_equal(r, want_r);
        assert_non_null(reason);
        assert_non_null(strstr(reason, want_reason));
        free(reason);
        seat_error_free(error);
        assert_int_equal(noted, 5); /* the collector and its four */
        assert_int_equal(alive, 0);
}

/* Hung past the timeout: killed with all it started. */
TEST(timeout_kills_the_tree) {
        run("hang", 1, "not read within 2 s");
}

/* Exited normally: what it left running goes too. */
TEST(exit_kills_the_tree) {
        run("exit", 1, "stand-in done");
}

/* ---- the shepherd alone (seatd/proc-tree.h), as any user ---- */

typedef struct TreeCase {
        int pipe_w;
        bool hang;
} TreeCase;

static void tree_note(int fd) {
        pid_t pid = getpid();
        if (write(fd, &pid, sizeof(pid)) != (ssize_t) sizeof(pid))
                _exit(3);
}

/* The program: a setsid child with a child of its own, a double-forked orphan, then
 * either hangs or exits 7. Each notes its pid on the pipe. */
static void tree_program(void *userdata) {
        const TreeCase *c = userdata;
        int ack[2]; /* each of the three noted: before the program may exit */
        char buf[3];
        if (pipe(ack) < 0)
                _exit(3);
        tree_note(c->pipe_w);
        if (fork() == 0) {
                if (setsid() < 0)
                        _exit(3);
                if (fork() == 0) {
                        tree_note(c->pipe_w);
                        if (write(ack[1], "", 1) != 1)
                                _exit(3);
                        sleep(60);
                        _exit(0);
                }
                tree_note(c->pipe_w);
                if (write(ack[1], "", 1) != 1)
                        _exit(3);
                sleep(60);
                _exit(0);
        }
        pid_t mid = fork();
        if (mid == 0) {
                if (setsid() < 0 || fork() != 0)
                        _exit(0);
                tree_note(c->pipe_w);
                if (write(ack[1], "", 1) != 1)
                        _exit(3);
                sleep(60);
                _exit(0);
        }
        (void) waitpid(mid, NULL, 0); /* the orphan's parent gone */
        for (size_t got = 0; got < sizeof(buf);) {
                ssize_t n = read(ack[0], buf, sizeof(buf) - got);
                if (n <= 0)
                        _exit(3);
                got += (size_t) n;
        }
        if (c->hang)
                sleep(60);
        _exit(7);
}

static void tree_run(bool hang) {
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        TreeCase c = { .pipe_w = p[1], .hang = hang };
        ProcTree t = {};
        assert_int_equal(proc_tree_spawn(tree_program, &c, &t), 0);
        close(p[1]);
        pid_t pids[4];
        for (size_t i = 0; i < ELEMENTSOF(pids); i++)
                assert_int_equal(read(p[0], &pids[i], sizeof(pids[i])), (ssize_t) sizeof(pids[i]));
        if (!hang) /* the shepherd ends the tree itself once the program exits */
                for (int i = 0;; i++) {
                        siginfo_t si = {};
                        assert_int_equal(waitid(P_PID, (id_t) t.pid, &si, WEXITED | WNOHANG | WNOWAIT), 0);
                        if (si.si_pid == t.pid)
                                break;
                        assert_true(i < 500); /* 5 s */
                        usleep(10000);
                }
        proc_tree_finish(&t);
        proc_tree_finish(&t); /* twice: nothing more */
        close(p[0]);
        size_t alive = 0;
        for (size_t i = 0; i < ELEMENTSOF(pids); i++)
                if (pid_alive(pids[i])) {
                        fprintf(stderr, "# pid %d outlived the tree\n", (int) pids[i]);
                        (void) kill(pids[i], SIGKILL);
                        alive++;
                }
        assert_int_equal(alive, 0);
        if (hang) {
                assert_true(WIFSIGNALED(t.status));
                assert_int_equal(WTERMSIG(t.status), SIGKILL);
        } else {
                assert_true(WIFEXITED(t.status));
                assert_int_equal(WEXITSTATUS(t.status), 7);
        }
}

TEST(tree_finish_kills_escapees) {
        tree_run(true);
}

TEST(tree_exit_kills_escapees) {
        tree_run(false);
}

int main(int argc, char **argv) {
        if (argc > 0 && !strcmp(argv[0], "seatd-collect"))
                return standin_main(argc, argv);
        return seat_tests_run("collect", NULL, NULL);
}
