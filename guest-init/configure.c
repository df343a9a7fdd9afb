/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * configure: wall clock, hostname, machine-id, entropy, IPv4 addresses. Each step is small and checked;
 * the first failure is the reply (steps already done stay done: they are idempotent, the
 * host can simply send the same configure again).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/random.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/netlink.h"

#ifndef RNDRESEEDCRNG
#define RNDRESEEDCRNG _IO('R', 0x07)
#endif

#define MACHINE_ID_PATH "/etc/machine-id"

/* A restored machine's clock resumes where it was saved: the host's time replaces it. */
static int configure_time(Agent *a, const AgentMsg *m) {
        struct timespec ts = { .tv_sec = (time_t) m->configure.time_sec, .tv_nsec = (long) m->configure.time_nsec };

        if (!m->configure.has_time)
                return 1;
        if (m->configure.time_sec < 0 || m->configure.time_sec > AGENT_TIME_SEC_MAX || m->configure.time_nsec < 0 ||
            m->configure.time_nsec > 999999999)
                return agent_send_error(a, m->id, AGENT_ERR_INVALID, "field 'time' is out of range");
        if (clock_settime(CLOCK_REALTIME, &ts) < 0)
                return agent_send_error(a, m->id, AGENT_ERR_IO, "clock_settime: %s", strerror(errno));
        log_info("Clock set to %" PRId64 ".%09" PRId64, m->configure.time_sec, m->configure.time_nsec);
        return 1;
}

static int configure_hostname(Agent *a, int64_t id, const char *hostname) {
        _cleanup_free_ char *e = NULL;

        if (!hostname)
                return 1;
        if (sethostname(hostname, strlen(hostname)) < 0)
                return agent_send_error(a, id, AGENT_ERR_IO, "sethostname '%s': %s", hostname, strerror(errno));
        e = log_escape(hostname, strlen(hostname), 128);
        log_info("Hostname set to '%s'", e ?: "?");
        return 1;
}

static bool machine_id_valid(const char *s) {
        if (strlen(s) != 32)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

static int configure_machine_id(Agent *a, int64_t id, const char *machine_id) {
        char line[34];
        int r;

        if (!machine_id)
                return 1;
        if (!machine_id_valid(machine_id))
                return agent_send_error(a, id, AGENT_ERR_INVALID, "field 'machine_id' must be 32 lowercase hex digits");

        if (mkdir("/etc", 0755) < 0 && errno != EEXIST)
                return agent_send_error(a, id, AGENT_ERR_IO, "mkdir '/etc': %s", strerror(errno));

        (void) snprintf(line, sizeof(line), "%s\n", machine_id);
        r = write_file_atomic(MACHINE_ID_PATH, line, 33, 0444);
        if (r < 0)
                return agent_send_error(a, id, AGENT_ERR_IO, "write '%s': %s", MACHINE_ID_PATH, strerror(-r));
        log_info("Machine ID set to %s", machine_id);
        return 1;
}

static int configure_entropy(Agent *a, int64_t id, const uint8_t *data, size_t len) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ struct rand_pool_info *info = NULL;

        if (!data || len == 0)
                return 1;
        if (len > AGENT_ENTROPY_MAX)
                return agent_send_error(a, id, AGENT_ERR_INVALID, "field 'entropy' is larger than %d bytes",
                                        AGENT_ENTROPY_MAX);

        info = calloc(1, sizeof(*info) + len + sizeof(uint32_t));
        if (!info)
                return agent_send_error(a, id, AGENT_ERR_IO, "out of memory");
        info->entropy_count = (int) (len * 8);
        info->buf_size = (int) len;
        memcpy(info->buf, data, len);

        fd = open("/dev/urandom", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return agent_send_error(a, id, AGENT_ERR_IO, "open '/dev/urandom': %s", strerror(errno));
        if (ioctl(fd, RNDADDENTROPY, info) < 0)
                return agent_send_error(a, id, AGENT_ERR_IO, "RNDADDENTROPY: %s", strerror(errno));
        /* On 6.1 adding entropy alone does not reseed an initialised crng. */
        if (ioctl(fd, RNDRESEEDCRNG) < 0)
                return agent_send_error(a, id, AGENT_ERR_IO, "RNDRESEEDCRNG: %s", strerror(errno));

        explicit_bzero(info->buf, len);
        log_info("Added %zu bytes of entropy and reseeded", len);
        return 1;
}

/* "A.B.C.D/N" */
static int parse_ipv4_prefix(const char *s, struct in_addr *ret_addr, unsigned *ret_prefix) {
        char buf[INET_ADDRSTRLEN];
        const char *slash = strchr(s, '/');
        size_t n;
        char *end;
        unsigned long p;

        if (!slash)
                return -EINVAL;
        n = (size_t) (slash - s);
        if (n == 0 || n >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, s, n);
        buf[n] = '\0';
        if (inet_pton(AF_INET, buf, ret_addr) != 1)
                return -EINVAL;
        if (slash[1] < '0' || slash[1] > '9')
                return -EINVAL;
        errno = 0;
        p = strtoul(slash + 1, &end, 10);
        if (errno != 0 || *end != '\0' || p > 32)
                return -EINVAL;
        *ret_prefix = (unsigned) p;
        return 0;
}

static int configure_address(Agent *a, int64_t id, const AgentAddress *addr) {
        struct in_addr ip, gw;
        unsigned prefix;
        int ifindex, r;

        if (!addr->ifname || !addr->address)
                return agent_send_error(a, id, AGENT_ERR_INVALID, "field 'addresses' needs 'ifname' and 'address'");
        if (parse_ipv4_prefix(addr->address, &ip, &prefix) < 0)
                return agent_send_error(a, id, AGENT_ERR_INVALID,
                                        "field 'addresses': '%s' is not an IPv4 address with a prefix length",
                                        addr->address);
        if (addr->gateway && inet_pton(AF_INET, addr->gateway, &gw) != 1)
                return agent_send_error(a, id, AGENT_ERR_INVALID, "field 'addresses': gateway '%s' is not an IPv4 address",
                                        addr->gateway);

        ifindex = (int) if_nametoindex(addr->ifname);
        if (ifindex <= 0)
                return agent_send_error(a, id, AGENT_ERR_IO, "interface '%s': %s", addr->ifname, strerror(errno));

        r = netlink_link_up(ifindex);
        if (r < 0)
                return agent_send_error(a, id, AGENT_ERR_IO, "interface '%s': set up: %s", addr->ifname, strerror(-r));
        r = netlink_add_ipv4_address(ifindex, ip, prefix);
        if (r < 0)
                return agent_send_error(a, id, AGENT_ERR_IO, "interface '%s': add address '%s': %s", addr->ifname,
                                        addr->address, strerror(-r));
        if (addr->gateway) {
                r = netlink_add_ipv4_default_route(ifindex, gw);
                if (r < 0)
                        return agent_send_error(a, id, AGENT_ERR_IO, "interface '%s': default route via '%s': %s",
                                                addr->ifname, addr->gateway, strerror(-r));
        }

        log_info("Interface '%s': %s%s%s", addr->ifname, addr->address, addr->gateway ? " via " : "",
                 addr->gateway ?: "");
        return 1;
}

int configure_handle(Agent *a, const AgentMsg *m) {
        int r;

        r = configure_time(a, m);
        if (r <= 0)
                return r;
        r = configure_hostname(a, m->id, m->configure.hostname);
        if (r <= 0)
                return r;
        r = configure_machine_id(a, m->id, m->configure.machine_id);
        if (r <= 0)
                return r;
        r = configure_entropy(a, m->id, m->configure.entropy, m->configure.entropy_len);
        if (r <= 0)
                return r;
        if (m->configure.n_addresses > AGENT_ADDR_MAX)
                return agent_send_error(a, m->id, AGENT_ERR_INVALID, "field 'addresses' has more than %d entries",
                                        AGENT_ADDR_MAX);
        for (size_t i = 0; i < m->configure.n_addresses; i++) {
                r = configure_address(a, m->id, &m->configure.addresses[i]);
                if (r <= 0)
                        return r;
        }
        if (m->configure.seat_id) {
                _cleanup_free_ char *e = log_escape(m->configure.seat_id, strlen(m->configure.seat_id), 128);
                log_info("Seat ID is '%s'", e ?: "?");
        }
        return agent_send_ok(a, m->id, -1);
}
