/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What one seatd runs, owned by main() and handed to every method module: each request
 * reaches it through its server (request_manager()), so no module keeps a static of its
 * own and the order in which they need each other is written in one place
 * (seatd_methods_init()). */

#include <stdatomic.h>

#include "conf.h"
#include "event.h"
#include "pool.h"
#include "seat.h"
#include "server.h"
#include "images/store.h"

typedef struct Manager {
        const SeatConfig *config;
        Server *server;
        ImageStore *store;   /* verified images (image.*) */
        SeatManager *seats;  /* the seats (seat.*, evidence.*) */
        PoolManager *pools;  /* ready seats kept per image (pool.*) */

        /* The egress watch and its periodic backstop, on the server's loop. */
        EventSource *net_src, *tick_src;
        EventSource *guard_src; /* the DNS guards' exits and restarts */
        int tick_fd;
        atomic_uint subscribers; /* events.subscribe streams open (each holds a worker thread) */
} Manager;

static inline Manager *request_manager(Request *req) {
        return server_userdata(req->server);
}
