/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * captest: network/capture.c on an interface, as seatd runs it for a seat's bridge, until
 * SIGINT/SIGTERM; then its counters on stdout, one line of key=value. For the bench
 * (tests/bench/bench-egress.sh: throughput with capture on against the filter alone).
 *
 * usage: captest IFNAME DIR [SNAPLEN [MAX_MIB]]
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "network/capture.h"

int main(int argc, char *argv[]) {
        SeatError *err = NULL;
        Capture *c = NULL;
        CaptureStats st;
        sigset_t set;
        int sig;

        if (argc < 3 || argc > 5) {
                fprintf(stderr, "usage: captest IFNAME DIR [SNAPLEN [MAX_MIB]]\n");
                return 2;
        }
        CaptureParams p = { .ifname = argv[1], .dir = argv[2], .prefix = "captest-",
                            .snaplen = argc > 3 ? (uint32_t) strtoul(argv[3], NULL, 10) : 65535,
                            .max_bytes = (argc > 4 ? strtoull(argv[4], NULL, 10) : 64) << 20 };
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set, NULL); /* before the thread: it inherits the mask */
        if (capture_start(&p, &c, &err) < 0) {
                fprintf(stderr, "captest: %s\n", err ? err->message : "cannot start");
                seat_error_free(err);
                return 1;
        }
        printf("capturing\n");
        fflush(stdout);
        sigwait(&set, &sig);
        capture_stop(c, &st);
        printf("packets=%" PRIu64 " bytes=%" PRIu64 " files=%" PRIu64 " files_rotated=%" PRIu64 " packets_cut=%" PRIu64
               " kernel_drops=%" PRIu64 " unwritten=%" PRIu64 "\n",
               st.packets, st.bytes, st.files, st.files_rotated, st.packets_cut, st.kernel_drops, st.packets_unwritten);
        return 0;
}
