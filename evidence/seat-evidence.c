/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seat-evidence: the offline path to sealed evidence archives (docs/evidence-format.md).
 * A table of verbs; only verbs_main() prints errors and picks the exit code (0 ok,
 * 1 failure, 2 usage).
 */
#include <dirent.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "archive.h"
#include "audit.h"
#include "signing/boxkey.h"
#include "evidence-options.h"
#include "signing/hash.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "signing/minisign.h"
#include "common/verbs.h"

#define INPUTS_MAX EVIDENCE_OPTIONS_FILES_MAX

#define usage_error(ret_error, ...) verb_usage_error(ret_error, "seat-evidence --help", __VA_ARGS__)

static void help(void) {
        printf("NAME\n"
               "    seat-evidence - verify, open, list and seal seatd evidence archives\n"
               "\n"
               "SYNOPSIS\n"
               "    seat-evidence verify ARCHIVE --host-key PUB [--seat ID] [--session HEX]\n"
               "    seat-evidence open ARCHIVE --host-key PUB --key FACILITATOR_SEC --out DIR\n"
               "    seat-evidence list DIR [--host-key PUB]\n"
               "    seat-evidence seal --seat ID --host-key SEC --to FACILITATOR_PUB --out ARCHIVE\n"
               "                  [--audit LOG --audit-key HEX] [--console PATH] [--capture PATH]\n"
               "                  [--file NAME=PATH]... [--session HEX] [--image DIGEST]\n"
               "                  [--max-member-size BYTES]\n"
               "    seat-evidence audit-verify LOG --audit-key HEX [--session-open]\n"
               "    seat-evidence audit-write LOG --audit-key HEX [--records N] [--no-end]   (tests)\n"
               "\n"
               "DESCRIPTION\n"
               "    verify checks what needs no secret key: the host signature over the manifest,\n"
               "    the manifest, every chunk's length, and the BLAKE2b-512 of the encrypted payload.\n"
               "    open also decrypts with the facilitator's box key, checks every member and the\n"
               "    audit chain, and only then writes the members into DIR.\n"
               "    The host key of seal is a minisign secret key ($SEAT_SIGN_PASSWORD if protected).\n"
               "\n"
               "EXIT STATUS\n"
               "    0 success, 1 verification or operation failure (the reason is printed), 2 usage.\n");
}

static int parse_key_hex(const char *hex, uint8_t key[AUDIT_KEY_BYTES], SeatError **ret_error) {
        if (!hex || strlen(hex) != 2 * AUDIT_KEY_BYTES || digest_from_hex(hex, strlen(hex), key, AUDIT_KEY_BYTES) < 0)
                return seat_error_set(ret_error, EINVAL, "--audit-key wants %u hex digits", 2 * AUDIT_KEY_BYTES);
        return 0;
}

static void print_manifest(const ArchiveManifest *m) {
        archive_manifest_describe(m, stdout);
}

/* Every verb takes every option; each checks those it needs. */
static int parse_opts(int argc, char *argv[], EvidenceOptions *o, SeatError **ret_error) {
        return evidence_options_parse(argc, argv, EVIDENCE_OPTIONS_ALL, "seat-evidence --help", o, ret_error);
}

/* ---- verify / open ------------------------------------------------------------------ */

/* Both take ARCHIVE and --host-key PUB, the key loaded into pk; open also --key and --out. */
static int parse_archive_opts(int argc, char *argv[], bool to_open, EvidenceOptions *o, SeatPublicKey *pk,
                              SeatError **ret_error) {
        int r = parse_opts(argc, argv, o, ret_error);
        if (r < 0)
                return r;
        if (!o->archive || !o->host_key || (to_open && (!o->key || !o->out)))
                return usage_error(ret_error, "%s",
                                   to_open ? "open needs ARCHIVE, --host-key PUB, --key SEC and --out DIR"
                                           : "verify needs ARCHIVE and --host-key PUB");
        return seat_public_key_load(o->host_key, pk, ret_error);
}

static int verb_verify(int argc, char *argv[], SeatError **ret_error) {
        _cleanup_(archive_manifest_freep) ArchiveManifest *m = NULL;
        SeatPublicKey pk;
        EvidenceOptions o = {};
        int r = parse_archive_opts(argc, argv, false, &o, &pk, ret_error);
        if (r >= 0)
                r = archive_verify(o.archive, &pk, o.seat, o.session, &m, ret_error);
        if (r < 0)
                return r;
        print_manifest(m);
        printf("OK: signature, manifest, chunk structure and payload digest verified "
               "(contents need the facilitator key: seat-evidence open)\n");
        return 0;
}

static int verb_open(int argc, char *argv[], SeatError **ret_error) {
        _cleanup_(archive_manifest_freep) ArchiveManifest *m = NULL;
        _cleanup_(seat_box_secret_key_freep) SeatBoxSecretKey *sk = NULL;
        SeatPublicKey pk;
        EvidenceOptions o = {};
        int r = parse_archive_opts(argc, argv, true, &o, &pk, ret_error);
        if (r >= 0)
                r = seat_box_secret_key_load(o.key, &sk, ret_error);
        if (r >= 0)
                r = archive_open(o.archive, &pk, sk, o.out, &m, ret_error);
        if (r < 0)
                return r;
        print_manifest(m);
        printf("OK: every member and the audit chain verified; written to %s\n", o.out);
        return 0;
}

static int filter_visible(const struct dirent *d) {
        return d->d_name[0] != '.';
}

static int verb_list(int argc, char *argv[], SeatError **ret_error) {
        struct dirent **list = NULL;
        SeatPublicKey pk;
        EvidenceOptions o = {};
        int r = parse_opts(argc, argv, &o, ret_error);
        if (r < 0)
                return r;
        if (!o.archive)
                return usage_error(ret_error, "list needs DIR");
        if (o.host_key) {
                r = seat_public_key_load(o.host_key, &pk, ret_error);
                if (r < 0)
                        return r;
        }
        int n = scandir(o.archive, &list, filter_visible, alphasort);
        if (n < 0)
                return seat_error_set(ret_error, errno, "cannot list '%s': %m", o.archive);
        printf("%-32s %-16s %-32s %-20s %7s %s\n", "ARCHIVE", "SEAT", "SESSION", "CREATED", "MEMBERS",
               o.host_key ? "SIGNATURE" : "");
        for (int i = 0; i < n; i++) {
                _cleanup_(archive_manifest_freep) ArchiveManifest *m = NULL;
                _cleanup_error_ SeatError *e = NULL;
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/%s", o.archive, list[i]->d_name) >= 0 &&
                    archive_inspect(p, NULL, &m, &e) >= 0) {
                        char when[32] = "?";
                        time_t t = (time_t) (m->created_ms / 1000);
                        struct tm tm;
                        if (gmtime_r(&t, &tm))
                                strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
                        const char *sig = "";
                        if (o.host_key) {
                                _cleanup_(archive_manifest_freep) ArchiveManifest *m2 = NULL;
                                sig = archive_inspect(p, &pk, &m2, NULL) >= 0 ? "ok (manifest only)" : "BAD";
                        }
                        _cleanup_free_ char *shown = strdup(list[i]->d_name);
                        for (char *c = shown; c && *c; c++)
                                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                                        *c = '?';
                        printf("%-32s %-16s %-32s %-20s %7zu %s\n", shown ? shown : "?", m->seat, m->session, when,
                               m->n_members, sig);
                }
                free(list[i]);
        }
        free(list);
        return 0;
}

/* ---- seal ------------------------------------------------------------------------ */

static int verb_seal(int argc, char *argv[], SeatError **ret_error) {
        _cleanup_(seat_secret_key_freep) SeatSecretKey *sk = NULL;
        ArchiveInput inputs[INPUTS_MAX + 3];
        uint8_t audit_key[AUDIT_KEY_BYTES];
        SeatBoxPublicKey fac;
        size_t n = 0;
        EvidenceOptions o = {};
        int r = parse_opts(argc, argv, &o, ret_error);
        if (r < 0)
                return r;
        if (o.archive)
                return usage_error(ret_error, "seal takes no positional argument (use --out)");
        if (!o.seat || !o.host_key || !o.to || !o.out)
                return usage_error(ret_error, "seal needs --seat, --host-key SEC, --to PUB and --out ARCHIVE");
        if (!!o.audit != !!o.audit_key)
                return usage_error(ret_error, "--audit and --audit-key go together");
        if (o.audit_key && parse_key_hex(o.audit_key, audit_key, ret_error) < 0)
                return -EINVAL;
        const char *pw = getenv("SEAT_SIGN_PASSWORD");
        r = seat_secret_key_load(o.host_key, pw ? seat_password_from_string : NULL, (void *) pw, &sk, ret_error);
        if (r >= 0)
                r = seat_box_public_key_load(o.to, &fac, ret_error);
        if (r < 0)
                return r;
        if (o.audit)
                inputs[n++] = (ArchiveInput) { .name = "audit.log", .role = "audit", .path = o.audit };
        if (o.console)
                inputs[n++] = (ArchiveInput) { .name = "console.log", .role = "console", .path = o.console };
        if (o.capture)
                inputs[n++] = (ArchiveInput) { .name = "capture.pcap", .role = "capture", .path = o.capture };
        _cleanup_strv_free_ char **names = calloc(o.n_files + 1, sizeof(char *));
        if (!names)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        for (size_t i = 0; i < o.n_files; i++) {
                const char *eq = strchr(o.files[i], '=');
                if (!eq || eq == o.files[i] || !eq[1])
                        return usage_error(ret_error, "--file wants NAME=PATH, not '%s'", o.files[i]);
                names[i] = strndup(o.files[i], (size_t) (eq - o.files[i]));
                if (!names[i])
                        return seat_error_set(ret_error, ENOMEM, "out of memory");
                inputs[n++] = (ArchiveInput) { .name = names[i], .role = "file", .path = eq + 1 };
        }
        ArchiveSealParams p = {
                .seat_id = o.seat,
                .session = o.session,
                .image_digest = o.image,
                .inputs = inputs,
                .n_inputs = n,
                .host_key = sk,
                .facilitator = &fac,
                .audit_key = o.audit_key ? audit_key : NULL,
                .max_member_size = o.max_member,
        };
        r = archive_seal(o.out, &p, ret_error);
        sodium_memzero(audit_key, sizeof(audit_key));
        if (r < 0)
                return r;
        printf("sealed %zu file(s) into %s\n", n, o.out);
        return 0;
}

/* ---- audit logs -------------------------------------------------------------------- */

/* Both audit verbs take LOG and --audit-key HEX; the key goes to key (the caller wipes it). */
static int parse_audit_opts(int argc, char *argv[], const char *verb, EvidenceOptions *o,
                            uint8_t key[AUDIT_KEY_BYTES], SeatError **ret_error) {
        int r = parse_opts(argc, argv, o, ret_error);
        if (r < 0)
                return r;
        if (!o->archive || !o->audit_key)
                return usage_error(ret_error, "%s needs LOG and --audit-key HEX", verb);
        return parse_key_hex(o->audit_key, key, ret_error);
}

static int verb_audit_verify(int argc, char *argv[], SeatError **ret_error) {
        uint8_t key[AUDIT_KEY_BYTES];
        uint64_t count = 0;
        EvidenceOptions o = {};
        int r = parse_audit_opts(argc, argv, "audit-verify", &o, key, ret_error);
        if (r >= 0)
                r = audit_log_verify(o.archive, key, o.session_open ? AUDIT_VERIFY_SESSION_OPEN : 0, &count, ret_error);
        sodium_memzero(key, sizeof(key));
        if (r < 0)
                return r;
        printf("OK: %" PRIu64 " audit records verified\n", count);
        return 0;
}

static int verb_audit_write(int argc, char *argv[], SeatError **ret_error) {
        _cleanup_(audit_log_freep) AuditLog *log = NULL;
        uint8_t key[AUDIT_KEY_BYTES];
        EvidenceOptions o = { .records = 5 };
        int r = parse_audit_opts(argc, argv, "audit-write", &o, key, ret_error);
        if (r >= 0)
                r = audit_log_open(o.archive, key, 0, &log, ret_error);
        sodium_memzero(key, sizeof(key));
        for (uint64_t i = 0; r >= 0 && i < o.records; i++) {
                _cleanup_json_ json_object *d = json_object_new_object();
                if (!d)
                        return seat_error_set(ret_error, ENOMEM, "out of memory");
                json_object_object_add(d, "n", json_object_new_int64((int64_t) i));
                json_object_object_add(d, "argv", json_object_new_string("echo test"));
                r = audit_log_append(log, "tool.exec", d, ret_error);
        }
        if (r < 0)
                return r;
        if (!o.no_end)
                return audit_log_close(TAKE_PTR(log), ret_error);
        return 0;
}

/* No help lines: seat-evidence's help is its synopsis. */
static const Verb verbs[] = {
        { "verify", 0, VERB_ANY, verb_verify, NULL },
        { "open", 0, VERB_ANY, verb_open, NULL },
        { "list", 0, VERB_ANY, verb_list, NULL },
        { "seal", 0, VERB_ANY, verb_seal, NULL },
        { "audit-verify", 0, VERB_ANY, verb_audit_verify, NULL },
        { "audit-write", 0, VERB_ANY, verb_audit_write, NULL },
};

int main(int argc, char *argv[]) {
        static const VerbTool tool = {
                .table = { "seat-evidence", "seat-evidence --help", verbs, ELEMENTSOF(verbs) },
                .help = help,
        };

        log_set_ident("seat-evidence");
        if (signing_init() < 0) {
                fprintf(stderr, "seat-evidence: cannot initialise libsodium\n");
                return 1;
        }
        return verbs_main(&tool, argc, argv);
}
