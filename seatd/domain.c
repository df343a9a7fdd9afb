/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

#include "conf.h"
#include "domain.h"
#include "common/fileio.h"
#include "common/log.h"

/* The TCG vCPU: qemu64 (the fastest model under TCG) raised to the x86-64-v2 level by the
 * four features it lacks. qemu64 already has sse3, cx16 and lahf_lm. Range images run
 * software built for v2 machines: suricata and DPDK's librte_eal (pinsrq, pcmpestri,
 * popcnt) died with SIGILL on plain qemu64, and so do RHEL 9 based container images. */
#define TCG_X86_64_V2                                                                                                \
        "<feature policy='require' name='ssse3'/><feature policy='require' name='sse4.1'/>"                        \
        "<feature policy='require' name='sse4.2'/><feature policy='require' name='popcnt'/>"

static void silence(void *userdata, virErrorPtr err) {
}

const char *domain_last_error(void) {
        const char *m = virGetLastErrorMessage();
        return m ? m : "unknown libvirt error";
}

int domain_open(const char *uri, virConnectPtr *ret, SeatError **ret_error) {
        virSetErrorFunc(NULL, silence);
        virConnectPtr c = virConnectOpen(uri);
        if (!c)
                return seat_error_set(ret_error, ECONNREFUSED, "connect to libvirt at '%s': %s (is libvirtd running?)", uri,
                                      domain_last_error());
        *ret = c;
        return 0;
}

static char *xml_escape(const char *s) {
        size_t n = 0;
        for (const char *p = s; *p; p++)
                n += strchr("<>&'\"", *p) ? 6 : 1;
        char *out = malloc(n + 1), *o = out;
        if (!out)
                return NULL;
        for (const char *p = s; *p; p++) {
                const char *rep = *p == '<' ? "&lt;" : *p == '>' ? "&gt;" : *p == '&' ? "&amp;" :
                                  *p == '\'' ? "&apos;" : *p == '"' ? "&quot;" : NULL;
                if (rep) {
                        strcpy(o, rep);
                        o += strlen(rep);
                } else
                        *o++ = *p;
        }
        *o = '\0';
        return out;
}

static char *record_xml(const SeatRecord *r) {
        _cleanup_free_ char *participant = xml_escape(r->participant), *image = xml_escape(r->image);
        char *x = NULL;
        if (!participant || !image)
                return NULL;
        if (asprintf(&x,
                     "<seat><id>%s</id><image>%s</image><image_version>%lld</image_version>"
                     "<image_digest>%s</image_digest><participant>%s</participant><token_hash>%s</token_hash>"
                     "<state>%s</state><generation>%lld</generation><created>%lld</created>"
                     "<net_index>%lld</net_index><egress>%s</egress><pooled>%d</pooled>"
                     "<qemu_uid>%lld</qemu_uid></seat>",
                     r->id, image, (long long) r->image_version, r->image_digest, participant, r->token_hash,
                     r->state, (long long) r->generation, (long long) r->created, (long long) r->net_index,
                     r->egress, r->pooled ? 1 : 0, (long long) r->qemu_uid) < 0)
                return NULL;
        return x;
}

char *domain_xml(const DomainSpec *s) {
        const ImageManifest *m = s->manifest;
        const ImageFile *disk = NULL;
        for (size_t i = 0; i < m->n_files && !disk; i++)
                if (m->files[i].role == IMAGE_ROLE_DISK)
                        disk = &m->files[i];
        _cleanup_free_ char *name = xml_escape(s->name), *kernel = s->kernel ? xml_escape(s->kernel) : strdup(""),
                            *initrd = s->initrd ? xml_escape(s->initrd) : strdup(""),
                            *cmdline = m->cmdline ? xml_escape(m->cmdline) : strdup(""),
                            *overlay = xml_escape(s->overlay), *base = xml_escape(s->base),
                            *log = xml_escape(s->console_log), *rec = record_xml(s->record), *os = NULL;
        char *xml = NULL;

        if (!disk || !name || !kernel || !initrd || !cmdline || !overlay || !base || !log || !rec || s->qemu_uid == 0)
                return NULL;
        if (m->direct_boot) {
                if (asprintf(&os,
                             "    <loader readonly='yes' type='rom'>/usr/share/qemu/qboot.rom</loader>\n"
                             "    <kernel>%s</kernel>\n%s%s%s    <cmdline>%s</cmdline>\n",
                             kernel, s->initrd ? "    <initrd>" : "", initrd, s->initrd ? "</initrd>\n" : "", cmdline) < 0)
                        return NULL;
        } else if (!(os = strdup("    <boot dev='hd'/>\n")))
                return NULL;

        if (asprintf(&xml,
                     "<domain type='%s'>\n"
                     "  <name>%s</name>\n%s%s%s"
                     "  <metadata><seatd:seat xmlns:seatd='" SEAT_METADATA_URI "'>%s</seatd:seat></metadata>\n"
                     "  <memory unit='MiB'>%lld</memory>\n"
                     "  <vcpu>%lld</vcpu>\n"
                     "  <os>\n"
                     "    <type arch='x86_64' machine='q35'>hvm</type>\n"
                     "%s"
                     "  </os>\n"
                     "  <features><acpi/></features>\n"
                     "  %s\n"
                     "  <clock offset='utc'/>\n"
                     "  <on_poweroff>destroy</on_poweroff>\n"
                     "  <on_reboot>destroy</on_reboot>\n"
                     "  <on_crash>destroy</on_crash>\n"
                     "  <devices>\n"
                     "    <disk type='file' device='disk'>\n"
                     "      <driver name='qemu' type='qcow2'/>\n"
                     "      <source file='%s'/>\n"
                     /* The verified base: read-only, never relabelled (chowned) to QEMU's user. */
                     "      <backingStore type='file'><format type='%s'/>"
                     "<source file='%s'><seclabel model='dac' relabel='no'/></source><backingStore/></backingStore>\n"
                     "      <target dev='vda' bus='virtio'/>\n"
                     "    </disk>\n"
                     "    <channel type='unix'>\n"
                     "      <source mode='bind'/>\n"
                     "      <target type='virtio' name='org.seatd.agent.0'/>\n"
                     "    </channel>\n"
                     "    <serial type='file'><source path='%s'/><target port='0'/></serial>\n"
                     "    <controller type='usb' model='none'/>\n"
                     "    <memballoon model='none'/>\n"
                     "%s"
                     "  </devices>\n"
                     /* QEMU runs as this seat machine's own uid and gid (docs/security.md).
                      * Relabelling stays on: libvirt must give QEMU its own per-domain
                      * files (the master key). It chows what the domain names to that
                      * uid, so the kernel and initrd are the machine's own copies
                      * (domain_boot_copies()), never the shared blobs. */
                     "  <seclabel type='static' model='dac' relabel='yes'><label>+%u:+%u</label></seclabel>\n"
                     "</domain>\n",
                     s->kvm ? "kvm" : "qemu", name, s->uuid ? "  <uuid>" : "", s->uuid ? s->uuid : "",
                     s->uuid ? "</uuid>\n" : "", rec, (long long) m->memory_mib, (long long) m->vcpus, os,
                     s->kvm ? "<cpu mode='host-passthrough' check='none'/>"
                            : "<cpu mode='custom' match='exact' check='none'><model fallback='forbid'>qemu64</model>"
                              "<feature policy='require' name='rdrand'/>" TCG_X86_64_V2 "</cpu>",
                     overlay, image_format_to_string(disk->format), base, log,
                     s->interface_xml ? s->interface_xml : "", (unsigned) s->qemu_uid, (unsigned) s->qemu_uid) < 0)
                return NULL;
        return xml;
}

int domain_create(virConnectPtr conn, const DomainSpec *spec, virDomainPtr *ret, SeatError **ret_error) {
        _cleanup_free_ char *xml = domain_xml(spec);
        if (!xml)
                return seat_error_set(ret_error, ENOMEM, "out of memory building the domain XML");
        virDomainPtr d = virDomainCreateXML(conn, xml, 0);
        if (!d)
                return seat_error_set(ret_error, EIO, "start domain '%s': %s", spec->name, domain_last_error());
        *ret = d;
        return 0;
}

int domain_save(virDomainPtr dom, const char *path, SeatError **ret_error) {
        if (virDomainSaveFlags(dom, path, NULL, VIR_DOMAIN_SAVE_RUNNING) < 0)
                return seat_error_set(ret_error, EIO, "save domain '%s' to '%s': %s", virDomainGetName(dom), path,
                                      domain_last_error());
        return 0;
}

int domain_restore(virConnectPtr conn, const char *path, const DomainSpec *spec, bool paused, virDomainPtr *ret,
                   SeatError **ret_error) {
        _cleanup_free_ char *xml = domain_xml(spec);
        if (!xml)
                return seat_error_set(ret_error, ENOMEM, "out of memory building the domain XML");
        if (virDomainRestoreFlags(conn, path, xml, paused ? VIR_DOMAIN_SAVE_PAUSED : VIR_DOMAIN_SAVE_RUNNING) < 0)
                return seat_error_set(ret_error, EIO, "restore domain '%s' from '%s': %s", spec->name, path,
                                      domain_last_error());
        virDomainPtr d = virDomainLookupByName(conn, spec->name);
        if (!d)
                return seat_error_set(ret_error, EIO, "domain '%s' is gone right after its restore: %s", spec->name,
                                      domain_last_error());
        *ret = d;
        return 0;
}

int domain_agent_socket(virDomainPtr dom, char **ret) {
        _cleanup_free_ char *xml = virDomainGetXMLDesc(dom, 0);
        if (!xml)
                return -EIO;
        const char *ch = strstr(xml, "<channel type='unix'>");
        const char *end = ch ? strstr(ch, "</channel>") : NULL;
        const char *src = ch ? strstr(ch, "path='") : NULL;
        if (!src || !end || src > end)
                return -ENOENT;
        src += strlen("path='");
        const char *q = strchr(src, '\'');
        if (!q || q > end || q - src > 4096)
                return -ENOENT;
        *ret = strndup(src, (size_t) (q - src));
        return *ret ? 0 : -ENOMEM;
}

int domain_set_record(virDomainPtr dom, const SeatRecord *rec, SeatError **ret_error) {
        _cleanup_free_ char *x = record_xml(rec);
        if (!x)
                return -ENOMEM;
        if (virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, x, "seatd", SEAT_METADATA_URI,
                                 VIR_DOMAIN_AFFECT_LIVE) < 0)
                return seat_error_set(ret_error, EIO, "record seat '%s' in libvirt: %s", rec->id, domain_last_error());
        return 0;
}

/* Text of <tag>…</tag> inside xml, unescaped for the few entities we write. */
static int extract(const char *xml, const char *tag, char *out, size_t size) {
        char open[40], close[40];
        snprintf(open, sizeof(open), "<%s>", tag);
        snprintf(close, sizeof(close), "</%s>", tag);
        const char *a = strstr(xml, open), *b;
        if (!a) {
                /* libvirt hands the metadata back through libxml2, which writes an empty
                 * element (a seat without a participant name) as <tag/>. */
                snprintf(open, sizeof(open), "<%s/>", tag);
                if (!strstr(xml, open) || size < 1)
                        return -ENOENT;
                out[0] = '\0';
                return 0;
        }
        a += strlen(open);
        b = strstr(a, close);
        if (!b)
                return -EBADMSG;
        size_t o = 0;
        for (const char *p = a; p < b; p++) {
                char c = *p;
                if (c == '&') {
                        static const struct { const char *ent; char c; } ents[] = {
                                { "&lt;", '<' }, { "&gt;", '>' }, { "&amp;", '&' }, { "&apos;", '\'' }, { "&quot;", '"' },
                        };
                        size_t k;
                        for (k = 0; k < ELEMENTSOF(ents); k++)
                                if (!strncmp(p, ents[k].ent, strlen(ents[k].ent)))
                                        break;
                        if (k == ELEMENTSOF(ents))
                                return -EBADMSG;
                        c = ents[k].c;
                        p += strlen(ents[k].ent) - 1;
                }
                if (o + 1 >= size)
                        return -E2BIG;
                out[o++] = c;
        }
        out[o] = '\0';
        return 0;
}

int domain_get_record(virDomainPtr dom, SeatRecord *ret) {
        _cleanup_free_ char *x = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, SEAT_METADATA_URI,
                                                      VIR_DOMAIN_AFFECT_LIVE);
        char num[32];
        SeatRecord r = {};
        if (!x)
                return -ENOENT;
        if (extract(x, "id", r.id, sizeof(r.id)) < 0 || extract(x, "image", r.image, sizeof(r.image)) < 0 ||
            extract(x, "image_digest", r.image_digest, sizeof(r.image_digest)) < 0 ||
            extract(x, "participant", r.participant, sizeof(r.participant)) < 0 ||
            extract(x, "token_hash", r.token_hash, sizeof(r.token_hash)) < 0 ||
            extract(x, "state", r.state, sizeof(r.state)) < 0)
                return -EBADMSG;
        if (extract(x, "image_version", num, sizeof(num)) < 0 || (r.image_version = atoll(num)) <= 0 ||
            extract(x, "generation", num, sizeof(num)) < 0 || (r.generation = atoll(num)) <= 0 ||
            extract(x, "created", num, sizeof(num)) < 0)
                return -EBADMSG;
        r.created = atoll(num);
        /* A seat recorded before networks existed has neither. */
        r.net_index = extract(x, "net_index", num, sizeof(num)) >= 0 && num[0] ? atoll(num) : -1;
        if (extract(x, "egress", r.egress, sizeof(r.egress)) < 0)
                r.egress[0] = '\0';
        /* A seat recorded before per-seat QEMU uids ran as libvirt's one user: 0, given
         * one at its next boot. */
        r.qemu_uid = extract(x, "qemu_uid", num, sizeof(num)) >= 0 && num[0] ? atoll(num) : 0;
        if (r.qemu_uid < 0 || r.qemu_uid > (int64_t) SEATD_QEMU_UID_MAX)
                return -EBADMSG;
        /* A seat recorded before pools existed was never pooled. */
        r.pooled = extract(x, "pooled", num, sizeof(num)) >= 0 && !strcmp(num, "1");
        if (r.net_index < -1 || r.net_index > 65535)
                return -EBADMSG;
        *ret = r;
        return 0;
}

int domain_stop(virDomainPtr dom) {
        int state = 0, reason = 0;
        if (virDomainGetState(dom, &state, &reason, 0) < 0 || state == VIR_DOMAIN_SHUTOFF)
                return 0;
        if (virDomainDestroy(dom) < 0) {
                if (virDomainGetState(dom, &state, &reason, 0) < 0)
                        return 0; /* gone meanwhile */
                return -EIO;
        }
        return 0;
}

int domain_stop_after(virDomainPtr dom, int grace_ms) {
        for (int waited = 0; waited < grace_ms; waited += 50) {
                int state = 0, reason = 0;
                if (virDomainGetState(dom, &state, &reason, 0) < 0 || state == VIR_DOMAIN_SHUTOFF)
                        return 0; /* powered off by itself (a transient domain is gone then) */
                struct timespec ts = { .tv_nsec = 50 * 1000000L };
                (void) nanosleep(&ts, NULL);
        }
        return domain_stop(dom);
}

int domain_list_seats(virConnectPtr conn, virDomainPtr **ret, size_t *ret_n) {
        virDomainPtr *all = NULL;
        int n = virConnectListAllDomains(conn, &all, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
        if (n < 0)
                return -EIO;
        size_t k = 0;
        for (int i = 0; i < n; i++) {
                const char *name = virDomainGetName(all[i]);
                if (name && !strncmp(name, SEAT_DOMAIN_PREFIX, strlen(SEAT_DOMAIN_PREFIX)))
                        all[k++] = all[i];
                else
                        virDomainFree(all[i]);
        }
        if (all)
                all[k] = NULL;
        *ret = all;
        *ret_n = k;
        return 0;
}

int overlay_create(const char *base, const char *base_format, const char *overlay, SeatError **ret_error) {
        pid_t pid = fork();
        if (pid < 0)
                return seat_error_set(ret_error, errno, "fork: %m");
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                if (null >= 0) {
                        dup2(null, STDIN_FILENO);
                        dup2(null, STDOUT_FILENO);
                }
                /* The backing format is pinned, never probed. */
                execlp("qemu-img", "qemu-img", "create", "-q", "-f", "qcow2", "-F", base_format, "-b", base, overlay,
                       (char *) NULL);
                _exit(127);
        }
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return seat_error_set(ret_error, errno, "waitpid: %m");
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return seat_error_set(ret_error, EIO, "qemu-img could not create overlay '%s' of '%s'", overlay, base);
        return 0;
}

static void boot_copies_unlink(char **path) {
        if (*path) {
                (void) unlink(*path);
                free(*path);
                *path = NULL;
        }
}

void domain_boot_copies_done(DomainBootCopies *b) {
        boot_copies_unlink(&b->kernel);
        boot_copies_unlink(&b->initrd);
}

static int boot_copy(const char *blob, const char *prefix, const char *suffix, char **ret, SeatError **ret_error) {
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s.%s", prefix, suffix) < 0)
                return -ENOMEM;
        (void) unlink(path); /* left by a seatd that died between the copy and the start */
        int r = file_copy(blob, path, 0400);
        if (r < 0) {
                (void) unlink(path);
                return seat_error_set(ret_error, -r, "copy '%s' to '%s' for the machine's boot: %s", blob, path,
                                      strerror(-r));
        }
        *ret = TAKE_PTR(path);
        return 0;
}

int domain_boot_copies(const char *kernel, const char *initrd, const char *prefix, DomainBootCopies *ret,
                       SeatError **ret_error) {
        DomainBootCopies b = {};
        int r = kernel ? boot_copy(kernel, prefix, "kernel", &b.kernel, ret_error) : 0;
        if (r >= 0 && initrd)
                r = boot_copy(initrd, prefix, "initrd", &b.initrd, ret_error);
        if (r < 0) {
                domain_boot_copies_done(&b);
                return r;
        }
        *ret = b;
        return 0;
}

int overlay_give(const char *overlay, uid_t uid, SeatError **ret_error) {
        if (uid == 0)
                return seat_error_set(ret_error, EINVAL, "no QEMU uid for overlay '%s'", overlay);
        /* Mode first: it is never readable by others, whoever owns it for a moment. */
        if (chmod(overlay, 0600) < 0 || chown(overlay, uid, (gid_t) uid) < 0)
                return seat_error_set(ret_error, errno, "give overlay '%s' to QEMU uid %u: %m", overlay, (unsigned) uid);
        return 0;
}

static int pid_of(const char *run_dir, const char *name, pid_t *ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        if (asprintf(&path, "%s/%s.pid", run_dir, name) < 0)
                return -ENOMEM;
        int r = read_file_capped(path, 64, &text, NULL);
        if (r < 0)
                return r;
        char *end = NULL;
        long v = strtol(text, &end, 10);
        if (v <= 1 || (end && *end && *end != '\n'))
                return -EBADMSG;
        *ret = (pid_t) v;
        return 0;
}

static int proc_uid(pid_t pid, uid_t *ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        if (asprintf(&path, "/proc/%d/status", (int) pid) < 0)
                return -ENOMEM;
        int r = read_file_capped(path, 16384, &text, NULL);
        if (r < 0)
                return r;
        const char *u = strstr(text, "\nUid:");
        if (!u)
                return -EBADMSG;
        *ret = (uid_t) strtoul(u + 5, NULL, 10); /* the real uid; QEMU drops all four alike */
        return 0;
}

/* "-sandbox on,..." among QEMU's arguments. */
static bool proc_seccomp(pid_t pid) {
        _cleanup_free_ char *path = NULL, *args = NULL;
        size_t len = 0;
        if (asprintf(&path, "/proc/%d/cmdline", (int) pid) < 0 || read_file_capped(path, 1 << 20, &args, &len) < 0)
                return false;
        for (size_t i = 0; i < len;) {
                const char *a = args + i;
                size_t n = strnlen(a, len - i);
                if (!strcmp(a, "-sandbox") && i + n + 1 < len)
                        return !strncmp(args + i + n + 1, "on", 2);
                i += n + 1;
        }
        return false;
}

int domain_confinement(virDomainPtr dom, const char *run_dir, DomainConfinement *ret) {
        DomainConfinement c = {};
        virSecurityLabelPtr labels = NULL;
        pid_t pid = 0;
        const char *name = virDomainGetName(dom);

        if (name && pid_of(run_dir, name, &pid) >= 0 && proc_uid(pid, &c.uid) >= 0) {
                c.known = true;
                c.seccomp = proc_seccomp(pid);
        }
        int n = virDomainGetSecurityLabelList(dom, &labels);
        for (int i = 0; i < n; i++) {
                virSecurityModel model = {};
                if (labels[i].enforcing && labels[i].label[0] && virNodeGetSecurityModel(virDomainGetConnect(dom), &model) == 0 &&
                    (!strcmp(model.model, "apparmor") || !strcmp(model.model, "selinux")))
                        (void) snprintf(c.mac, sizeof(c.mac), "%.15s", model.model);
        }
        free(labels);
        *ret = c;
        return c.known ? 0 : -ESRCH;
}
