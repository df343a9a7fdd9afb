/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A test guest booted from the test image (images/recipes/test-image) under libvirt, on a
 * fresh qcow2 overlay, with its agent channel and a console log in a private directory.
 * Shared by the integration tests and tests/bench/agent. */

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "common/error.h"

typedef struct TestVm {
        char *name;
        char *dir;          /* private directory: overlay, console log, boot files */
        char *overlay;
        char *console_log;
        char *boot_files[3]; /* kernel, initrd, base disk: copies in dir */
        char *agent_socket; /* libvirt's end of org.seatd.agent.0 */
        virConnectPtr conn;
        virDomainPtr dom;
        int64_t started_ms; /* CLOCK_MONOTONIC when the domain was created */
} TestVm;

/* uri NULL: $SEATD_LIBVIRT_URI or qemu:///system. */
int testvm_boot(const char *uri, const char *image_dir, const char *name, TestVm **ret, SeatError **ret_error);
/* Destroys the domain (if still running) and removes the private directory. */
TestVm *testvm_free(TestVm *vm);
DEFINE_TRIVIAL_CLEANUP_FUNC(TestVm *, testvm_free)
/* Waits until the domain is shut off (1 when it is, 0 on timeout). */
int testvm_wait_shutoff(TestVm *vm, int timeout_ms);
/* Prints the last bytes of the console log to stderr (for failure reports). */
void testvm_dump_console(const TestVm *vm);
