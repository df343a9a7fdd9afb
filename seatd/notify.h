/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Tells the service manager how seatd is doing: sd_notify(3) without libsystemd. state is
 * one or more "NAME=value" lines ("READY=1", "STOPPING=1"). Returns 1 when sent, 0 when
 * nobody asked ($NOTIFY_SOCKET unset: not started by systemd with Type=notify), -errno.
 * The variable is left set (sd_notify's unset_environment = 0): under NotifyAccess=main
 * systemd listens to seatd's own pid only, whatever its children send.
 */
int notify_send(const char *state);
