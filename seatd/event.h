/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A small epoll loop: fd sources, and a wakeup other threads may poke. Sources freed
 * while a batch is dispatched are released after the batch, so a callback may free any
 * source, its own included. */

#include <stdint.h>
#include <sys/epoll.h>

#include "common/macro.h"

typedef struct EventLoop EventLoop;
typedef struct EventSource EventSource;
typedef int (*EventIoFn)(EventSource *s, int fd, uint32_t revents, void *userdata);

int event_loop_new(EventLoop **ret);
EventLoop *event_loop_free(EventLoop *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(EventLoop *, event_loop_free)

/* The loop does not own fd. A callback returning < 0 stops the loop with that code. */
int event_add_io(EventLoop *l, int fd, uint32_t events, EventIoFn fn, void *userdata, EventSource **ret);
int event_source_set_events(EventSource *s, uint32_t events);
EventSource *event_source_free(EventSource *s);

/* Runs until event_loop_exit() or a callback fails; returns the exit code. */
int event_loop_run(EventLoop *l);
void event_loop_exit(EventLoop *l, int code);
