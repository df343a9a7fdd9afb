/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _cleanup_(f) __attribute__((cleanup(f)))

/* Hand ownership over: returns the value and clears the variable. */
#define TAKE_PTR(p)                     \
        ({                              \
                __typeof__(p) _p_ = (p); \
                (p) = NULL;             \
                _p_;                    \
        })
#define TAKE_FD(fd)                 \
        ({                          \
                int _fd_ = (fd);    \
                (fd) = -EBADF;      \
                _fd_;               \
        })

/* free(NULL) is fine; the pointer is cleared so a second free is harmless. */
static inline void freep(void *p) {
        free(*(void **) p);
        *(void **) p = NULL;
}
#define _cleanup_free_ _cleanup_(freep)

/* Closes fd if >= 0 and keeps errno: cleanups run on error paths. */
static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}
static inline void closep(int *fd) {
        *fd = safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

/* x = mfree(x), or "return mfree(x);" at the end of a destructor: free() that gives back
 * the NULL the pointer should now hold (systemd's mfree()). */
static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

/* FREE_MANY(s->dir, s->overlay, s->meta): frees each pointer given (systemd's free_many()),
 * so a destructor of many owned buffers reads as one list, not a column of free() calls. */
static inline void free_many(void **p, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(p[i]);
}
#define FREE_MANY(...) free_many((void *[]) { __VA_ARGS__ }, ELEMENTSOF(((void *[]) { __VA_ARGS__ })))

/* DEFINE_TRIVIAL_CLEANUP_FUNC(json_object *, json_object_put) gives json_object_putp(). */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)   \
        static inline void func##p(type *p) {     \
                if (*p)                           \
                        (void) func(*p);          \
                *p = NULL;                        \
        }

/* _cleanup_(pthread_mutex_unlockp) pthread_mutex_t *held = &s->lock: unlocked on every
 * return from there on (seat_reset() has many early ones). */
static inline void pthread_mutex_unlockp(pthread_mutex_t **m) {
        if (*m)
                pthread_mutex_unlock(*m);
}

/* Free a NULL-terminated string array. */
static inline char **strv_free(char **l) {
        if (!l)
                return NULL;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free)
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* Whether the NULL-terminated string array l (or NULL: none) holds s. */
static inline bool strv_contains(char *const *l, const char *s) {
        for (; l && *l; l++)
                if (!strcmp(*l, s))
                        return true;
        return false;
}

/* Negative errno from a failed libc call that set errno (never 0). */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}
