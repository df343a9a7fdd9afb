/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "event.h"

struct EventSource {
        EventLoop *loop;
        int fd;
        EventIoFn fn;
        void *userdata;
        bool dead;
        EventSource *next_dead;
};

struct EventLoop {
        int epfd;
        bool exiting;
        int exit_code;
        EventSource *dead; /* freed after the current batch */
        bool dispatching;
};

int event_loop_new(EventLoop **ret) {
        _cleanup_free_ EventLoop *l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (l->epfd < 0)
                return negative_errno();
        *ret = TAKE_PTR(l);
        return 0;
}

static void release_dead(EventLoop *l) {
        while (l->dead) {
                EventSource *s = l->dead;
                l->dead = s->next_dead;
                free(s);
        }
}

EventLoop *event_loop_free(EventLoop *l) {
        if (!l)
                return NULL;
        release_dead(l);
        safe_close(l->epfd);
        return mfree(l);
}

int event_add_io(EventLoop *l, int fd, uint32_t events, EventIoFn fn, void *userdata, EventSource **ret) {
        _cleanup_free_ EventSource *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (EventSource) { .loop = l, .fd = fd, .fn = fn, .userdata = userdata };
        struct epoll_event ev = { .events = events, .data.ptr = s };
        if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
                return negative_errno();
        if (ret)
                *ret = s;
        TAKE_PTR(s); /* the loop's now: epoll hands it back */
        return 0;
}

int event_source_set_events(EventSource *s, uint32_t events) {
        struct epoll_event ev = { .events = events, .data.ptr = s };
        return epoll_ctl(s->loop->epfd, EPOLL_CTL_MOD, s->fd, &ev) < 0 ? negative_errno() : 0;
}

EventSource *event_source_free(EventSource *s) {
        if (!s)
                return NULL;
        (void) epoll_ctl(s->loop->epfd, EPOLL_CTL_DEL, s->fd, NULL);
        s->dead = true;
        if (s->loop->dispatching) {
                s->next_dead = s->loop->dead;
                s->loop->dead = s;
        } else
                free(s);
        return NULL;
}

void event_loop_exit(EventLoop *l, int code) {
        l->exiting = true;
        l->exit_code = code;
}

int event_loop_run(EventLoop *l) {
        struct epoll_event evs[32];

        while (!l->exiting) {
                int n = epoll_wait(l->epfd, evs, (int) ELEMENTSOF(evs), -1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                l->dispatching = true;
                for (int i = 0; i < n && !l->exiting; i++) {
                        EventSource *s = evs[i].data.ptr;
                        if (s->dead)
                                continue;
                        int r = s->fn(s, s->fd, evs[i].events, s->userdata);
                        if (r < 0)
                                event_loop_exit(l, r);
                }
                l->dispatching = false;
                release_dead(l);
        }
        return l->exit_code;
}
