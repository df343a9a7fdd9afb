/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Running seatd-collect for one seal (seatd/collect.h), as a short list of checked steps:
 * resolve the user; hand it the overlay, a staging directory and its appliance cache;
 * start it under a shepherd (proc-tree.h); in its process: own process group, die with the
 * shepherd, stdout a pipe, no other fd, the user's ids, a fixed environment, exec. The
 * parent reads the report under a size cap and a deadline; at the deadline, or once it has
 * exited, everything it started is killed: its group (the appliance's QEMU) and whatever
 * left the group (setsid) or was orphaned, which the shepherd reaps. Then the staging
 * directory is taken back and each copy checked before anything of it is sealed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/base64.h"
#include "collect.h"
#include "common/fileio.h"
#include "common/strprintf.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "proc-tree.h"

#ifndef SEATD_COLLECT_DIR
#define SEATD_COLLECT_DIR "/usr/libexec/seatd"
#endif

/* ---- at most COLLECT_PARALLEL_MAX at once ---- */

static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slots_free = PTHREAD_COND_INITIALIZER;
static unsigned slots_used;

static void slot_take(void) {
        pthread_mutex_lock(&slots_lock);
        while (slots_used >= COLLECT_PARALLEL_MAX)
                pthread_cond_wait(&slots_free, &slots_lock);
        slots_used++;
        pthread_mutex_unlock(&slots_lock);
}

static void slot_give(bool *taken) {
        if (!*taken)
                return;
        pthread_mutex_lock(&slots_lock);
        slots_used--;
        pthread_cond_signal(&slots_free);
        pthread_mutex_unlock(&slots_lock);
}

/* ---- the helper's path ---- */

static char helper_path[PATH_MAX];
static pthread_once_t helper_once = PTHREAD_ONCE_INIT;

static void helper_find(void) {
        static const char *const rel[] = { "/seatd-collect" };
        sibling_program_path(rel, ELEMENTSOF(rel), SEATD_COLLECT_DIR "/seatd-collect", helper_path, sizeof(helper_path));
}

const char *collect_helper_path(void) {
        pthread_once(&helper_once, helper_find);
        return helper_path;
}

/* ---- the user ---- */

typedef struct CollectUser {
        uid_t uid;
        gid_t gid;
        gid_t groups[2];          /* its group, and kvm where there is one (/dev/kvm) */
        size_t n_groups;
} CollectUser;

static int user_resolve(const char *name, CollectUser *ret, SeatError **ret_error) {
        struct passwd pw, *pwp = NULL;
        struct group gr, *grp = NULL;
        char buf[16384];
        int e = getpwnam_r(name, &pw, buf, sizeof(buf), &pwp);
        if (e != 0 || !pwp)
                return seat_error_set(ret_error, e ? e : ENOENT,
                                      "evidence_collect_user '%s' does not exist: the package makes it (sysusers.d); guest files are never read as root",
                                      name);
        if (pw.pw_uid == 0 || pw.pw_gid == 0)
                return seat_error_set(ret_error, EPERM, "evidence_collect_user '%s' is root or in group root: name an unprivileged user",
                                      name);
        *ret = (CollectUser) { .uid = pw.pw_uid, .gid = pw.pw_gid, .groups = { pw.pw_gid }, .n_groups = 1 };
        if (getgrnam_r("kvm", &gr, buf, sizeof(buf), &grp) == 0 && grp && gr.gr_gid != 0)
                ret->groups[ret->n_groups++] = gr.gr_gid;
        return 0;
}

/* ---- handing files over and taking them back ---- */

static int give(const char *path, const CollectUser *u, mode_t mode, bool dir) {
        _cleanup_close_ int fd = open(path, (dir ? O_DIRECTORY : 0) | O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0 || fchown(fd, u->uid, u->gid) < 0 || fchmod(fd, mode) < 0)
                return -errno;
        return 0;
}

/* libguestfs keeps the appliance of each uid in <cache>/.guestfs-UID, which it wants owned
 * by that uid and not writable by others; the cache itself only needs to be passable. */
static int give_cache(const char *cache, const CollectUser *u) {
        struct stat st;
        _cleanup_free_ char *mine = NULL;
        if (stat(cache, &st) < 0)
                return -errno;
        if ((st.st_mode & 0011) != 0011 && chmod(cache, (st.st_mode & 07777) | 0011) < 0)
                return -errno;
        if (asprintf(&mine, "%s/.guestfs-%u", cache, (unsigned) u->uid) < 0)
                return -ENOMEM;
        if (mkdir(mine, 0755) < 0 && errno != EEXIST)
                return -errno;
        return give(mine, u, 0755, true);
}

/* The staging directory back to root, its regular files dropped when drop (a fault: no copy
 * of it is sealed). Returns its fd. */
static int take_back(const char *staging, bool drop) {
        int dfd = open(staging, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        if (fchown(dfd, 0, 0) < 0 || fchmod(dfd, 0700) < 0) {
                int e = -errno;
                safe_close(dfd);
                return e;
        }
        if (drop) {
                int d2 = dup(dfd);
                DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
                struct dirent *de;
                if (!d)
                        safe_close(d2);
                while (d && (de = readdir(d)))
                        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                                (void) unlinkat(dfd, de->d_name, 0);
                if (d)
                        closedir(d);
        }
        return dfd;
}

/* One reported copy: a plain file of the user with one link, of the size reported; then root's. */
static int check_copy(int dfd, const char *name, const CollectUser *u, uint64_t size, uint64_t max, const char **ret_why) {
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return *ret_why = "a copy it reported is missing or not a plain file", -EBADMSG;
        if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != u->uid)
                return *ret_why = "a copy it reported is not a plain file of its own", -EBADMSG;
        if ((uint64_t) st.st_size != size || size > max)
                return *ret_why = "a copy it reported has another size, or one over the caps", -EBADMSG;
        if (fchown(fd, 0, 0) < 0 || fchmod(fd, 0600) < 0)
                return -errno;
        return 0;
}

static bool copy_name_ok(const char *n) {
        if (strlen(n) != 7 || n[0] != 'g')
                return false;
        for (size_t i = 1; i < 7; i++)
                if (n[i] < '0' || n[i] > '9')
                        return false;
        return true;
}

/* The report of a successful run, checked entry by entry against the staging directory. */
static int take_report(const CollectRequest *req, const CollectUser *u, int dfd, json_object *o, GuestFiles **ret,
                       const char **ret_why) {
        _cleanup_(guest_files_freep) GuestFiles *f = calloc(1, sizeof(GuestFiles));
        json_object *entries = NULL;
        int64_t skipped = 0, cut = 0;
        if (!f)
                return -ENOMEM;
        if (json_get_array(o, "entries", true, (size_t) req->limits.max_files, &entries) < 0 ||
            json_get_int64(o, "skipped", true, 0, INT64_C(1) << 53, &skipped) < 0 ||
            json_get_int64(o, "listings_cut", false, 0, INT64_C(1) << 53, &cut) < 0)
                return *ret_why = "its report is malformed (or lists more than max_files)", -EBADMSG;
        size_t n = json_object_array_length(entries);
        f->entries = calloc(n + 1, sizeof(GuestEntry));
        if (!f->entries)
                return -ENOMEM;
        unsigned long last = 0;
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(entries, i);
                const char *copy = NULL, *kind = NULL;
                int64_t size = 0, original = 0;
                _cleanup_free_ void *guest = NULL;
                size_t guest_len = 0;
                if (!json_object_is_type(e, json_type_object) || json_get_string(e, "copy", true, 16, &copy) < 0 ||
                    json_get_string(e, "kind", true, 16, &kind) < 0 ||
                    json_get_int64(e, "size", true, 0, INT64_MAX, &size) < 0 ||
                    json_get_int64(e, "original_size", true, 0, INT64_MAX, &original) < 0 ||
                    json_get_base64(e, "guest", true, 8192, &guest, &guest_len) < 0)
                        return *ret_why = "an entry of its report is malformed", -EBADMSG;
                bool link = !strcmp(kind, "symlink");
                /* Copies are named g000001, g000002, ... in order: distinct, never a path. */
                if (!copy_name_ok(copy) || strtoul(copy + 1, NULL, 10) <= last || (!link && strcmp(kind, "file")) ||
                    guest_len == 0 || memchr(guest, '\0', guest_len) || ((char *) guest)[0] != '/' || size > original ||
                    (link && size != original))
                        return *ret_why = "an entry of its report is not one it can have made", -EBADMSG;
                last = strtoul(copy + 1, NULL, 10);
                if (f->bytes + (uint64_t) size > req->limits.max_bytes)
                        return *ret_why = "its copies add up to more than max_bytes", -EBADMSG;
                int r = check_copy(dfd, copy, u, (uint64_t) size, link ? 4096 : req->limits.max_file_bytes, ret_why);
                if (r < 0)
                        return r;
                GuestEntry *g = f->entries + f->n_entries;
                g->guest_path = strndup(guest, guest_len);
                if (!g->guest_path || asprintf(&g->host_path, "%s/%s", req->staging, copy) < 0)
                        return -ENOMEM;
                g->kind = link ? GUEST_ENTRY_SYMLINK : GUEST_ENTRY_FILE;
                g->size = (uint64_t) size;
                g->original_size = (uint64_t) original;
                f->n_entries++;
                f->bytes += g->size;
                if (link)
                        f->symlinks++;
                else
                        f->files++;
                if (g->size < g->original_size)
                        f->truncated++;
        }
        struct stat st;
        int r = fstatat(dfd, "index.txt", &st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
        if (r < 0 || check_copy(dfd, "index.txt", u, (uint64_t) st.st_size, GUEST_FILES_INDEX_MAX + 65536, ret_why) < 0)
                return *ret_why = "its index is missing, not a plain file of its own, or over its cap", -EBADMSG;
        if (asprintf(&f->index_path, "%s/index.txt", req->staging) < 0)
                return -ENOMEM;
        f->skipped = (uint64_t) skipped;
        f->listings_cut = (uint64_t) cut;
        *ret = TAKE_PTR(f);
        return 0;
}

/* ---- the run ---- */

static char *argv_u64(uint64_t v) {
        char *s = NULL;
        return asprintf(&s, "%" PRIu64, v) < 0 ? NULL : s;
}

/* What the helper's process needs between fork and exec, all made before the fork. */
typedef struct HelperExec {
        const CollectUser *u;
        int null, out, err, exe;
        const char *const *argv;
        char *const *envp;
} HelperExec;

/* In the helper's process: only async-signal-safe calls from here to exec (seatd has
 * threads). fd 3 is the helper, closed by the exec itself (an ELF needs no path). */
static void helper_exec(void *userdata) {
        const HelperExec *h = userdata;
        if (setpgid(0, 0) < 0 || dup2(h->null, STDIN_FILENO) < 0 || dup2(h->out, STDOUT_FILENO) < 0 ||
            dup2(h->err, STDERR_FILENO) < 0 || dup2(h->exe, 3) < 0 || fcntl(3, F_SETFD, FD_CLOEXEC) < 0 ||
            close_range(4, ~0U, 0) < 0 || setgroups(h->u->n_groups, h->u->groups) < 0 ||
            setresgid(h->u->gid, h->u->gid, h->u->gid) < 0 || setresuid(h->u->uid, h->u->uid, h->u->uid) < 0 ||
            getuid() == 0 || geteuid() == 0 ||
            prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) /* after the uid change: it clears it */
                _exit(126);
        execveat(3, "", (char *const *) h->argv, h->envp, AT_EMPTY_PATH);
        _exit(127);
}

static int spawn(const CollectRequest *req, const CollectUser *u, int wfd, int ewfd, ProcTree *ret, SeatError **ret_error) {
        _cleanup_free_ char *max_bytes = argv_u64(req->limits.max_bytes), *max_file = argv_u64(req->limits.max_file_bytes),
                            *max_files = argv_u64(req->limits.max_files);
        size_t n_paths = 0;
        while (req->paths && req->paths[n_paths])
                n_paths++;
        _cleanup_free_ const char **argv = calloc(11 + n_paths, sizeof(char *));
        if (!argv || !max_bytes || !max_file || !max_files)
                return -ENOMEM;
        const char *fixed[] = { "seatd-collect", req->disk, req->filesystem ? req->filesystem : "-", req->staging,
                                req->cache_dir, max_bytes, max_file, max_files, req->force_tcg ? "1" : "0", req->context };
        memcpy(argv, fixed, sizeof(fixed));
        for (size_t i = 0; i < n_paths; i++)
                argv[10 + i] = req->paths[i];
        char *const envp[] = { (char *) "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                               (char *) "LC_ALL=C", (char *) "HOME=/",
                               (char *) (log_get_max_level() >= LOG_LEVEL_DEBUG ? "SEATD_COLLECT_DEBUG=1" : NULL), NULL };
        _cleanup_close_ int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0)
                return seat_error_set(ret_error, errno, "cannot open /dev/null: %m");
        /* Opened here, as root, and executed through the descriptor: the helper's user need
         * not be able to reach it by its path (a build tree under /root, mode 0700). */
        _cleanup_close_ int exe = open(req->helper, O_PATH | O_CLOEXEC);
        if (exe < 0)
                return seat_error_set(ret_error, errno, "%s: cannot open the collect helper '%s': %m", req->context,
                                      req->helper);

        HelperExec h = { .u = u, .null = null, .out = wfd, .err = ewfd, .exe = exe, .argv = argv, .envp = envp };
        int r = proc_tree_spawn(helper_exec, &h, ret);
        if (r < 0)
                return seat_error_set(ret_error, -r, "%s: cannot start seatd-collect: %s", req->context, strerror(-r));
        return 0;
}

#define COLLECT_STDERR_MAX 65536U

/* Everything it prints on stdout (up to the cap) and stderr (its log lines: the first
 * COLLECT_STDERR_MAX bytes), until it closes both, or the deadline. 1: the deadline
 * passed; 2: over the cap. */
static int read_report(int rfd, int efd, int64_t deadline, char **ret, size_t *ret_len, char *err, size_t *err_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;
        bool out_open = true, err_open = true;
        while (out_open || err_open) {
                int64_t left = deadline - now_monotonic_ms();
                if (left <= 0)
                        return 1;
                struct pollfd p[2] = { { .fd = out_open ? rfd : -1, .events = POLLIN },
                                       { .fd = err_open ? efd : -1, .events = POLLIN } };
                int n = poll(p, 2, (int) MIN(left, (int64_t) 1000));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (p[1].revents) {
                        char chunk[4096];
                        ssize_t r = read(efd, chunk, sizeof(chunk));
                        if (r <= 0 && !(r < 0 && errno == EINTR))
                                err_open = false;
                        else if (r > 0) {
                                size_t take = MIN((size_t) r, COLLECT_STDERR_MAX - *err_len);
                                memcpy(err + *err_len, chunk, take);
                                *err_len += take;
                        }
                }
                if (!p[0].revents)
                        continue;
                if (len + 65536 + 1 > cap) {
                        if (len >= COLLECT_OUTPUT_MAX)
                                return 2;
                        cap = MIN((size_t) COLLECT_OUTPUT_MAX + 65536 + 1, cap ? 2 * cap : 65536 + 1);
                        char *nb = realloc(buf, cap);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                }
                ssize_t r = read(rfd, buf + len, MIN((size_t) 65536, cap - len - 1));
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -errno;
                if (r == 0)
                        out_open = false;
                len += (size_t) r;
                if (len > COLLECT_OUTPUT_MAX)
                        return 2;
        }
        if (!buf && !(buf = calloc(1, 1)))
                return -ENOMEM;
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

/* Its log lines into seatd's log, escaped (they may quote the guest). */
static void log_stderr(const char *context, const char *err, size_t len) {
        for (size_t i = 0; i < len;) {
                const char *nl = memchr(err + i, '\n', len - i);
                size_t l = nl ? (size_t) (nl - (err + i)) : len - i;
                _cleanup_free_ char *esc = log_escape(err + i, l, 2000);
                if (l > 0)
                        log_debug("%s: seatd-collect: %s", context, esc ? esc : "?");
                i += l + 1;
        }
}

/* Until the helper has exited (it closed stdout as it exits) or the deadline: its
 * shepherd exits just after it, once it has killed what the helper left running. */
static bool wait_exit(pid_t pid, int64_t deadline) {
        for (;;) {
                siginfo_t si = {};
                if (waitid(P_PID, (id_t) pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
                        return true;
                if (now_monotonic_ms() >= deadline)
                        return false;
                usleep(20000);
        }
}

static int reason_set(char **ret_reason, const char *fmt, ...) _printf_(2, 3);
static int reason_set(char **ret_reason, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *s = vstrprintf(fmt, ap);
        va_end(ap);
        if (!s)
                return -ENOMEM;
        *ret_reason = s;
        return 1;
}

int collect_run(const CollectRequest *req, GuestFiles **ret, char **ret_reason, SeatError **ret_error) {
        CollectUser u;
        int r = user_resolve(req->user, &u, ret_error);
        if (r < 0)
                return r;
        if ((r = give(req->disk, &u, 0600, false)) < 0 || (r = give(req->staging, &u, 0700, true)) < 0 ||
            (r = give_cache(req->cache_dir, &u)) < 0)
                return seat_error_set(ret_error, -r, "%s: cannot hand the disk, staging and cache to '%s': %s", req->context,
                                      req->user, strerror(-r));

        int fds[2], efds[2];
        if (pipe2(fds, O_CLOEXEC) < 0)
                return seat_error_set(ret_error, errno, "%s: pipe: %m", req->context);
        _cleanup_close_ int rfd = fds[0], wfd = fds[1];
        if (pipe2(efds, O_CLOEXEC) < 0)
                return seat_error_set(ret_error, errno, "%s: pipe: %m", req->context);
        _cleanup_close_ int erfd = efds[0], ewfd = efds[1];

        _cleanup_(slot_give) bool taken = false;
        slot_take();
        taken = true;
        int64_t t0 = now_monotonic_ms(), deadline = t0 + (int64_t) req->timeout_s * 1000;
        _cleanup_(proc_tree_finish) ProcTree child = {};
        r = spawn(req, &u, wfd, ewfd, &child, ret_error);
        if (r < 0)
                return r;
        wfd = safe_close(wfd);
        ewfd = safe_close(ewfd);
        log_debug("%s: seatd-collect started under shepherd pid %d (user '%s', uid %u), timeout %d s", req->context, (int) child.pid,
                  req->user, (unsigned) u.uid, req->timeout_s);

        _cleanup_free_ char *report = NULL;
        size_t len = 0;
        _cleanup_free_ char *err = malloc(COLLECT_STDERR_MAX);
        size_t err_len = 0;
        if (!err)
                return -ENOMEM;
        int rr = read_report(rfd, erfd, deadline, &report, &len, err, &err_len);
        log_stderr(req->context, err, err_len);
        bool exited = rr == 0 && wait_exit(child.pid, deadline);
        proc_tree_finish(&child); /* stragglers of a normal exit too: the tree goes whole */
        _cleanup_close_ int dfd = -EBADF;
        _cleanup_free_ char *reason = NULL;
        int64_t took = now_monotonic_ms() - t0;

        if (rr < 0)
                r = seat_error_set(ret_error, -rr, "%s: cannot read seatd-collect's report: %s", req->context, strerror(-rr));
        else if (rr == 1 || (rr == 0 && !exited))
                r = reason_set(&reason, "the guest files were not read within %d s (evidence_collect_timeout): the appliance was killed",
                               req->timeout_s);
        else if (rr == 2)
                r = reason_set(&reason, "the collector reported more than %u bytes: it was killed", COLLECT_OUTPUT_MAX);
        else if (WIFSIGNALED(child.status))
                r = reason_set(&reason, "the collector died of signal %d (%s) after %" PRId64 " ms", WTERMSIG(child.status),
                               strsignal(WTERMSIG(child.status)), took);
        else if (WEXITSTATUS(child.status) == 126 || WEXITSTATUS(child.status) == 127 || WEXITSTATUS(child.status) == 2)
                r = seat_error_set(ret_error, EPERM, "%s: seatd-collect ('%s') could not be run as '%s' (exit status %d)",
                                   req->context, req->helper, req->user, WEXITSTATUS(child.status));
        else {
                _cleanup_json_ json_object *o = NULL;
                const char *result = NULL, *message = NULL, *why = NULL;
                int64_t e = 0;
                /* Its shape: an object, an array of max_files objects of 5 members each. */
                JsonFrameLimits lim = { .max_depth = 4, .max_containers = 4 + (size_t) req->limits.max_files,
                                        .max_values = 32 + 16 * (size_t) req->limits.max_files };
                int pr = json_frame_parse_limited(report, len, &lim, &o);
                if (pr < 0 || json_get_string(o, "result", true, 32, &result) < 0)
                        r = reason_set(&reason, "the collector's report is not valid (%zu bytes, %s, exit status %d)", len,
                                       pr < 0 ? strerror(-pr) : "no result", WEXITSTATUS(child.status));
                else if (!strcmp(result, "ok")) {
                        dfd = take_back(req->staging, false);
                        if (dfd < 0)
                                return seat_error_set(ret_error, -dfd, "%s: cannot take back '%s': %s", req->context,
                                                      req->staging, strerror(-dfd));
                        r = take_report(req, &u, dfd, o, ret, &why);
                        if (r == -EBADMSG)
                                r = reason_set(&reason, "the collector's report failed a check: %s", why);
                        else if (r < 0)
                                r = seat_error_set(ret_error, -r, "%s: cannot take the guest files: %s", req->context, strerror(-r));
                } else if (json_get_string(o, "message", true, 1024, &message) < 0 ||
                           json_get_int64(o, "errno", true, 0, 4095, &e) < 0)
                        r = reason_set(&reason, "the collector's report is not valid");
                else if (!strcmp(result, "guest-fault"))
                        r = reason_set(&reason, "%s", message);
                else if (!strcmp(result, "host-fault"))
                        r = seat_error_set(ret_error, e > 0 ? (int) e : EIO, "%s", message);
                else
                        r = reason_set(&reason, "the collector's report is not valid");
        }
        if (r == 0)
                return 0;
        /* No copy of a failed run is sealed, and the directory is root's again. */
        safe_close(dfd);
        dfd = take_back(req->staging, true);
        if (r > 0) {
                for (char *p = reason; *p; p++)
                        if (*p < 0x20 || *p > 0x7e)
                                *p = '?';
                *ret_reason = TAKE_PTR(reason);
        }
        return r;
}
