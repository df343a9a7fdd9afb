/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* state-owner.c: root's commands that write into seat-web's state_dir drop to its owner. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state-owner.h"

int web_become_state_owner(const char *state_dir, SeatError **ret_error) {
        struct stat st;

        if (geteuid() != 0)
                return 0;
        /* lstat: state_dir itself is the package's (its parent is root's); a link there is
         * not seat-web's doing, and not followed either. */
        if (lstat(state_dir, &st) < 0)
                return seat_error_set(ret_error, errno, "seat-web's state_dir '%s': %m (start seat-web once, or make it)",
                                      state_dir);
        if (!S_ISDIR(st.st_mode))
                return seat_error_set(ret_error, ENOTDIR,
                                      "seat-web's state_dir '%s' is not a directory (a symbolic link?): the seat-web "
                                      "package makes it; point state_dir at a directory",
                                      state_dir);
        if (st.st_uid == 0)
                return 0;
        /* The owner's own group, as the daemon runs (User= brings it), not the directory's:
         * a state_dir of seat-web:root would have kept gid 0. */
        struct passwd *pw = getpwuid(st.st_uid);
        if (!pw)
                return seat_error_set(ret_error, ENOENT, "state_dir '%s' belongs to uid %u, which is no user: give it to seat-web's",
                                      state_dir, (unsigned) st.st_uid);
        if (pw->pw_gid == 0)
                return seat_error_set(ret_error, EPERM, "state_dir '%s' belongs to '%s', whose group is root's: not taken on",
                                      state_dir, pw->pw_name);
        gid_t gid = pw->pw_gid;
        if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(st.st_uid, st.st_uid, st.st_uid) < 0)
                return seat_error_set(ret_error, errno, "cannot become the owner of state_dir '%s' (uid %u): %m", state_dir,
                                      (unsigned) st.st_uid);
        /* for good: no way back to root from here */
        if (setuid(0) == 0)
                return seat_error_set(ret_error, EPERM, "dropped to uid %u, but could become root again", (unsigned) st.st_uid);
        return 0;
}
