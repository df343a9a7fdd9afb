/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seatctl host check: is this a qualified host for seats? */
#include <stdio.h>
#include <string.h>

#include "common/jsonframe.h"
#include "common/log.h"
#include "seatctl.h"

static void host_usage(FILE *f) {
        fprintf(f,
                "usage: seatctl host check\n"
                "\n"
                "Asks seatd whether this host can run seats: boots a probe guest under KVM with a\n"
                "timeout (the presence of /dev/kvm proves nothing), and reports libvirt and QEMU\n"
                "versions, nftables, cgroups, sVirt confinement of QEMU and free disk. Exits 0 when\n"
                "seats can run here with what the config allows, 1 otherwise.\n");
}

int verb_host(int argc, char *argv[], SeatError **ret_error) {
        if (argc != 2 || strcmp(argv[1], "check")) {
                bool help = argc == 2 && !strcmp(argv[1], "--help");
                host_usage(help ? stdout : stderr);
                return help ? 0 : 2;
        }
        _cleanup_(ctl_client_freep) CtlClient *c = NULL;
        _cleanup_json_ json_object *res = NULL;
        json_object *checks = NULL;
        bool ready = false;
        if (ctl_connect(ctl_opts.socket, &c, ret_error) < 0 ||
            ctl_call(c, "host.check", NULL, ctl_opts.quiet ? NULL : ctl_progress_bar, NULL, &res, NULL, ret_error) < 0)
                return 1;
        ctl_progress_end();
        (void) json_get_bool(res, "ready", false, &ready);
        if (ctl_print_json_if_asked(res))
                return ready ? 0 : 1;
        if (json_get_array(res, "checks", true, 64, &checks) < 0)
                return seat_error_set(ret_error, EPROTO, "seatd sent no checks"), 1;
        for (size_t i = 0; i < json_object_array_length(checks); i++) {
                json_object *ch = json_object_array_get_idx(checks, i);
                const char *name = "?", *detail = "";
                bool ok = false;
                (void) json_get_string(ch, "name", false, 64, &name);
                (void) json_get_string(ch, "detail", false, 1024, &detail);
                (void) json_get_bool(ch, "ok", false, &ok);
                _cleanup_free_ char *e = log_escape(detail, strlen(detail), 600);
                printf("%-4s %-12s %s\n", ok ? "ok" : "FAIL", name, e ? e : "?");
        }
        const char *accel = "none";
        (void) json_get_string(res, "accel", false, 16, &accel);
        printf("\nseats here run with: %s%s\n", accel,
               !strcmp(accel, "tcg") ? " (software emulation, allowed by the config)" :
               !strcmp(accel, "none") ? " — this host cannot run seats as configured" : "");
        return ready ? 0 : 1;
}
