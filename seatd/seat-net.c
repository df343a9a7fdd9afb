/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-net.c: a seat's network and egress filter, and what happens when its rules are tampered with. */
#include "seat-internal.h"

/* ---- the seat's network ---- */

bool seat_egress_name_valid(const char *name) {
        return seatnet_profile_name_valid(name);
}

char *egress_saved_path(const Seat *s) {
        char *p = NULL;
        return asprintf(&p, "%s/egress.profile", s->dir) < 0 ? NULL : p;
}

/* Brings up the seat's network (a new one, or net_index with its saved profile text) and
 * hangs it on the seat: provisioning and adoption differ only in those two arguments. */
int seat_net_attach(SeatManager *m, Seat *s, const char *egress, int net_index, const char *profile_text,
                    SeatNet **ret_net, SeatError **ret_error) {
        SeatNet *n = NULL;
        virConnectPtr c = manager_conn(m, ret_error);
        if (!c)
                return -ECONNREFUSED;
        int r = seatnet_up(m->net, c, s->rec.id, egress, net_index, profile_text, &n, ret_error);
        virConnectClose(c);
        if (r < 0)
                return r;
        pthread_mutex_lock(&m->lock);
        s->net = n;
        pthread_mutex_unlock(&m->lock);
        if (ret_net)
                *ret_net = n;
        return 0;
}

/* The network before the machine: a seat whose filter cannot be installed and read back
 * does not boot. Its profile is kept beside it so a restarted seatd restores the same. */
int seat_net_up(SeatManager *m, Seat *s, const char *egress, SeatError **ret_error) {
        _cleanup_free_ char *saved_path = NULL;
        if (!m->config->network)
                return 0;
        SeatNet *n = NULL;
        int r = seat_net_attach(m, s, egress, -1, NULL, &n, ret_error);
        if (r < 0)
                return r;
        s->rec.net_index = seatnet_index(n);
        (void) snprintf(s->rec.egress, sizeof(s->rec.egress), "%s", seatnet_profile_name(n));
        const char *text = seatnet_profile_text(n);
        if (!(saved_path = egress_saved_path(s)))
                return -ENOMEM;
        r = write_file_atomic(saved_path, text, strlen(text), 0600);
        if (r < 0)
                return seat_error_set(ret_error, -r, "save the egress profile of seat '%s': %s", s->rec.id, strerror(-r));
        return 0;
}

void seat_net_down(SeatManager *m, Seat *s) {
        _cleanup_free_ char *saved_path = s->dir ? egress_saved_path(s) : NULL;
        pthread_mutex_lock(&m->lock);
        SeatNet *n = TAKE_PTR(s->net);
        pthread_mutex_unlock(&m->lock);
        if (n) {
                virConnectPtr c = manager_conn(m, NULL);
                seatnet_down(m->net, c, n);
                if (c)
                        virConnectClose(c);
        }
        if (saved_path)
                (void) unlink(saved_path);
        __atomic_store_n(&s->net_paused, false, __ATOMIC_RELEASE);
}

/* Before the next machine is connected (issue #13, finding 6): the old one off the seat's
 * network (seatnet_unplug()) and every flow tracked for the guest's address forgotten. A
 * machine that cannot be taken off is destroyed here and now, without its grace; one that
 * cannot even be destroyed fails the reset: two machines with one MAC and one address never
 * share the bridge. */
int handover_network(Seat *s, SeatError **ret_error) {
        _cleanup_error_ SeatError *err = NULL;
        if (!s->net)
                return 0;
        if (s->dom && seatnet_unplug(s->net, s->dom, &err) < 0) {
                log_seat_warning(s->rec.id, "seat '%s': %s: destroying the old machine now", s->rec.id,
                                 err ? err->message : "taking the old machine off the network failed");
                if (domain_stop(s->dom) < 0)
                        return seat_error_set(ret_error, EIO,
                                              "seat '%s': the old machine could be neither taken off the network (%s) nor destroyed (%s): the next one is not started beside it",
                                              s->rec.id, err ? err->message : "?", domain_last_error());
                s->dom = (virDomainFree(s->dom), NULL);
        }
        int r = seatnet_forget_flows(s->net, ret_error);
        return r < 0 ? r : 0;
}

/* Mark the seat's network paused and suspend its live domain: what a rule flush and a
 * failed DNS guard both do first. The domain and connection are the caller's to free (a
 * tamper repair resumes through them). */
static virDomainPtr net_pause(SeatManager *m, Seat *s, virConnectPtr *ret_conn, bool *ret_paused) {
        char name[64];
        pthread_mutex_lock(&m->lock);
        (void) snprintf(name, sizeof(name), "%s", s->live_domain);
        pthread_mutex_unlock(&m->lock);
        virConnectPtr c = manager_conn(m, NULL);
        virDomainPtr d = c && name[0] ? virDomainLookupByName(c, name) : NULL;
        __atomic_store_n(&s->net_paused, true, __ATOMIC_RELEASE);
        *ret_paused = d && virDomainSuspend(d) == 0;
        *ret_conn = c;
        return d;
}

/* Pause first (the filter is open or wrong right now), then, if the config says so, put
 * the rules back, read them back, and resume. Runs on the event loop: suspending a domain
 * takes milliseconds. */
void on_net_tamper(const char *seat_id, NftSeatState st, void *userdata) {
        SeatManager *m = userdata;
        _cleanup_(seat_unrefp) Seat *s = seat_manager_get(m, seat_id);
        _cleanup_error_ SeatError *err = NULL;
        int64_t detected = now_realtime_ms(), paused = 0, resumed = 0;
        bool ok_pause = false;

        if (!s)
                return;
        virConnectPtr c = NULL;
        virDomainPtr d = net_pause(m, s, &c, &ok_pause);
        if (d)
                paused = now_realtime_ms();
        log_seat_warning(seat_id, "seat '%s': its egress rules are %s (changed behind seatd's back): %s", seat_id,
                         nft_seat_state_to_string(st), ok_pause ? "paused" : "could not pause it");
        if (m->config->tamper_resume) {
                pthread_mutex_lock(&m->lock);
                int r = s->net ? seatnet_reinstall(m->net, s->net, &err) : -ENOENT;
                pthread_mutex_unlock(&m->lock);
                if (r >= 0 && (!d || virDomainResume(d) == 0 || !ok_pause)) {
                        resumed = now_realtime_ms();
                        __atomic_store_n(&s->net_paused, false, __ATOMIC_RELEASE);
                        log_seat_notice(seat_id, "seat '%s': egress rules restored and read back; resumed", seat_id);
                } else
                        log_seat_error(seat_id, "seat '%s' stays paused: %s", seat_id,
                                       err ? err->message : domain_last_error());
        }
        tamper_record(m, s, st, detected, paused, ok_pause, resumed, err ? err->message : NULL);
        if (d)
                virDomainFree(d);
        if (c)
                virConnectClose(c);
}

/* A seat's DNS guard kept exiting and is not restarted any more (seatnet.h): its names
 * fail already (closed), and the seat is paused as after a rule flush, for the same reason:
 * its network is not what its profile says, and a pause keeps the guest as it is for the
 * operator while nothing of it runs. A reset starts the guard again (seatnet_reinstall())
 * and resumes; a release stops the seat. Not a fault: that needs the seat's lock, which a
 * reset may hold for minutes, and this runs on the event loop. */
void on_guard_failed(const char *seat_id, const char *why, void *userdata) {
        SeatManager *m = userdata;
        _cleanup_(seat_unrefp) Seat *s = seat_manager_get(m, seat_id);
        bool ok_pause = false;

        if (!s)
                return;
        virConnectPtr c = NULL;
        virDomainPtr d = net_pause(m, s, &c, &ok_pause);
        log_seat_error(seat_id, "seat '%s' %s: %s; reset it to start the guard again, or release it", seat_id,
                       ok_pause ? "paused" : "could not be paused", why);
        json_object *o = json_object_new_object();
        if (o) {
                json_object_object_add(o, "error", json_object_new_string(why));
                json_object_object_add(o, "paused", json_object_new_boolean(ok_pause));
                (void) seat_audit(s, "egress.dnsguard_failed", o);
                json_object_put(o);
        }
        if (d)
                virDomainFree(d);
        if (c)
                virConnectClose(c);
}

/* ---- denied flows (seatd/deny-summary.h) ---- */

static void deny_emit(const char *seat, json_object *data, void *userdata) {
        SeatManager *m = userdata;
        _cleanup_(seat_unrefp) Seat *s = seat_manager_get(m, seat);
        if (s) /* a seat of another seatd logging to the same group, or one released: not ours */
                (void) seat_audit(s, "egress.denied", data);
}

/* Summaries need the group bound before any seat's rules name it; without it the rules log
 * to the kernel log, as before, and seats run all the same. */
void deny_summary_start(SeatManager *m) {
        _cleanup_error_ SeatError *err = NULL;
        const SeatConfig *c = m->config;
        if (!c->network || c->deny_log_group <= 0)
                return;
        int r = deny_summary_new((uint16_t) c->deny_log_group, (unsigned) c->deny_summary_interval, deny_emit, m, &m->deny,
                                 &err);
        if (r < 0) {
                log_warning("denied-flow summaries are off, denied packets go to the kernel log: %s",
                            err ? err->message : strerror(-r));
                return;
        }
        seatnet_set_log_group(m->net, (uint16_t) c->deny_log_group);
        log_info("denied flows: nfnetlink_log group %ld, summarised into the audit logs every %ld s", c->deny_log_group,
                 c->deny_summary_interval);
}

static void deny_emit_seat(const char *seat, json_object *data, void *userdata) {
        (void) seat;
        (void) seat_audit(userdata, "egress.denied", data);
}

/* Before the seat's session log closes: what its guest tried to reach up to now. */
void deny_summary_flush_seat(Seat *s) {
        deny_summary_flush(s->m->deny, s->rec.id, deny_emit_seat, s);
}

int seat_manager_net_fd(SeatManager *m) {
        return seatnet_fd(m->net);
}

void seat_manager_net_process(SeatManager *m) {
        seatnet_process(m->net);
}

int seat_manager_guard_fd(SeatManager *m) {
        return seatnet_guard_fd(m->net);
}

void seat_manager_guard_process(SeatManager *m) {
        seatnet_guard_process(m->net);
}

unsigned seat_manager_tick_ms(SeatManager *m) {
        return (unsigned) m->config->egress_check_interval * 1000u;
}

/* The periodic backstop: read every seat's rules back, and record denied packets. */
void seat_manager_tick(SeatManager *m) {
        Seat **all = seat_manager_all(m);
        seatnet_check(m->net);
        for (Seat **p = all; p && *p; p++) {
                pthread_mutex_lock(&m->lock);
                uint64_t d = (*p)->net ? seatnet_denied_delta(m->net, (*p)->net) : 0;
                pthread_mutex_unlock(&m->lock);
                if (d > 0) {
                        json_object *o = json_object_new_object();
                        json_object_object_add(o, "packets", json_object_new_int64((int64_t) d));
                        (void) seat_audit(*p, "egress.denied", o);
                        json_object_put(o);
                        log_seat_debug(seat_id(*p), "seat '%s': %" PRIu64 " packets denied by its egress filter",
                                       seat_id(*p), d);
                }
                seat_unref(*p);
        }
        free(all);
}
