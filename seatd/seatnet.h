/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A seat's network, end to end (docs/egress.md): its own libvirt network and bridge from
 * the configured pool, the egress filter for its profile installed and read back, a policy
 * route that sends its traffic only to the configured uplink, the watch for tampering, and
 * what the guest is told to configure. A seat whose network cannot be made exactly as its
 * profile says does not start.
 *
 * Thread-safe: one lock around the pool, the nftables context and the watch. Tamper
 * reports are queued by the watch and handed to the daemon's callback outside that lock.
 */

#include <json-c/json.h>
#include <libvirt/libvirt.h>
#include <stdbool.h>

#include "common/agent-proto.h"
#include "conf.h"
#include "common/error.h"
#include "common/macro.h"
#include "network/nft.h"

#define SEATNET_PROFILE_NONE "none" /* the built-in profile that allows nothing */
#define SEATNET_PROFILE_NAME_MAX 32
#define SEATNET_GUEST_IFNAME "eth0"

typedef struct SeatNetManager SeatNetManager;
typedef struct SeatNet SeatNet;

/* Called from seatnet_process()/seatnet_check() for each seat whose rules are not intact. */
typedef void (*SeatNetTamperFn)(const char *seat_id, NftSeatState state, void *userdata);

int seatnet_manager_new(const SeatConfig *config, SeatNetTamperFn fn, void *userdata, SeatNetManager **ret,
                        SeatError **ret_error);
SeatNetManager *seatnet_manager_free(SeatNetManager *nm);
DEFINE_TRIVIAL_CLEANUP_FUNC(SeatNetManager *, seatnet_manager_free)

/* Where the deny rules of seats set up from now on log: nfnetlink_log group `group` (someone
 * reads it: seatd/deny-summary.h), or 0, the kernel log. Before any seat is set up. */
void seatnet_set_log_group(SeatNetManager *nm, uint16_t group);
/* Make the standby network when it is missing (see seatnet_standby_interface_xml()). */
int seatnet_ensure_standby(SeatNetManager *nm, virConnectPtr conn, SeatError **ret_error);

/* The watch's netlink socket, for the event loop; -1 when networks are off. */
int seatnet_fd(SeatNetManager *nm);
/* The socket is readable: drain it, verify, report. */
void seatnet_process(SeatNetManager *nm);
/* The periodic backstop: verify every seat's rules, report. Also records denied-packet
 * growth through the callback's owner (see seatnet_denied_delta()). */
void seatnet_check(SeatNetManager *nm);

/*
 * The seats' DNS guards (seatd/dnsguard-run.h), supervised: seatnet_guard_fd() is readable
 * when one exited or a restart is due; seatnet_guard_process() (on the daemon's loop)
 * reaps, logs and restarts, with a growing delay; a guard restarted DNSGUARD_RESTART_CAP
 * times within DNSGUARD_RESTART_WINDOW_MS is left stopped and fn is called (outside every
 * lock of ours) with the seat and why. seatnet_reinstall() starts such a guard again.
 * Release and seatd's exit stop a guard without a restart.
 */
typedef enum SeatNetGuardState {
        SEATNET_GUARD_NONE,       /* no names, or stopped */
        SEATNET_GUARD_RUNNING,
        SEATNET_GUARD_RESTARTING, /* exited: a restart is due after the delay */
        SEATNET_GUARD_FAILED,     /* past the cap: not restarted until a reinstall */
        SEATNET_GUARD_STARTING,   /* restarted, not ready yet (the event loop waits on its pipe) */
} SeatNetGuardState;
typedef void (*SeatNetGuardFn)(const char *seat_id, const char *why, void *userdata);
void seatnet_set_guard_fn(SeatNetManager *nm, SeatNetGuardFn fn, void *userdata);
int seatnet_guard_fd(SeatNetManager *nm);
void seatnet_guard_process(SeatNetManager *nm);
const char *seatnet_guard_state_to_string(SeatNetGuardState st);

/* A profile name is [a-z0-9_-]{1,32}; it names <egress_dir>/<name>.profile. */
bool seatnet_profile_name_valid(const char *name);

/*
 * Bring a seat's network up. profile_name NULL means the config's default. index < 0
 * allocates a subnet from the pool; index >= 0 (adoption) takes that one. saved_profile,
 * when not NULL, is the profile text the seat was made with (adoption: the file may have
 * changed since). On any failure everything made so far is removed.
 */
int seatnet_up(SeatNetManager *nm, virConnectPtr conn, const char *seat_id, const char *profile_name, int index,
               const char *saved_profile, SeatNet **ret, SeatError **ret_error);
/* Remove the watch, the rules, the route and the network; free n. NULL is fine. */
void seatnet_down(SeatNetManager *nm, virConnectPtr conn, SeatNet *n);
/* Free n's memory only (seatd stops; the seat keeps running and its network with it). */
void seatnet_forget(SeatNetManager *nm, SeatNet *n);
/* Remove whatever network, rules and route a seat id may have left (a half-made seat). */
void seatnet_remove_orphan(SeatNetManager *nm, virConnectPtr conn, const char *seat_id);
/* Install the seat's rules again (a reset, a restore after tampering), read back. */
int seatnet_reinstall(SeatNetManager *nm, SeatNet *n, SeatError **ret_error);

int seatnet_index(const SeatNet *n);
const char *seatnet_profile_name(const SeatNet *n);
/* The seat's own bridge ("seatbr3"). */
const char *seatnet_bridge(const SeatNet *n);
/* Does its profile say "capture on"? Then its snaplen and max_mib. */
bool seatnet_capture(const SeatNet *n, unsigned *ret_snaplen, unsigned *ret_max_mib);
/* The canonical profile text (saved with the seat for adoption). */
const char *seatnet_profile_text(const SeatNet *n);
/* <interface> for the domain's <devices>. */
int seatnet_interface_xml(const SeatNet *n, char **ret);
/* The same NIC (MAC, model) on the host-wide standby network "seatd-standby" (no address,
 * no route, nothing listening): where a warm reset's spare machine boots and is saved. */
int seatnet_standby_interface_xml(const SeatNet *n, char **ret);
/*
 * The reset's handover (issue #13, finding 6): the next machine has the old one's MAC and
 * address on the same bridge, while the old one may still run (its grace to power off, or
 * on when its destroy fails). seatnet_unplug() takes a running machine of the seat off the
 * network before the next one is connected: its NIC's link goes down through libvirt (QEMU
 * neither sends nor receives on it), and its tap goes down on the host (a disabled bridge
 * port: nothing is forwarded to or from it, and the bridge forgets the MAC there, whatever
 * QEMU does). A domain that is gone already is fine (0).
 */
int seatnet_unplug(SeatNet *n, virDomainPtr dom, SeatError **ret_error);
/* Remove every conntrack entry whose original or reply tuple names the guest's address, so
 * no flow an earlier machine opened is carried on (its filter accepts `ct state
 * established`). Returns how many were removed, or -errno. */
int seatnet_forget_flows(SeatNet *n, SeatError **ret_error);
/* What the guest configures: eth0, its address/prefix, the bridge as its gateway. The
 * strings point into n. */
void seatnet_guest_address(const SeatNet *n, AgentAddress *ret);
/* {profile, network, bridge, guest, host, uplink, rules: [...counters...], denied_packets}. */
int seatnet_to_json(SeatNetManager *nm, const SeatNet *n, json_object **ret);
/* Denied packets counted since the last call (for the audit log); 0 on error. */
uint64_t seatnet_denied_delta(SeatNetManager *nm, SeatNet *n);
