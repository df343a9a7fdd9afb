/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seatctl evidence list, verify, open, retry: the archives seatd seals (evidence/archive.c
 * does the checking, the same code as seat-evidence's). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "evidence/archive.h"
#include "signing/boxkey.h"
#include "evidence/evidence-options.h"
#include "signing/hash.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "signing/minisign.h"
#include "seatctl.h"
#include "common/verbs.h"

static void evidence_usage(FILE *f) {
        fprintf(f,
"NAME\n"
"    seatctl evidence - list, verify and open sealed evidence archives; retry sealing\n"
"\n"
"SYNOPSIS\n"
"    seatctl [--json] evidence list\n"
"    seatctl [--json] evidence verify ARCHIVE [--host-key PUB] [--seat ID] [--session HEX]\n"
"    seatctl [--json] evidence open ARCHIVE --key FACILITATOR_KEY --out DIR [--host-key PUB]\n"
"    seatctl [--json] evidence retry [SEAT]\n"
"\n"
"DESCRIPTION\n"
"    After each reset and release seatd seals the finished session - its audit log,\n"
"    serial console log and the guest paths its image names, read from the stopped\n"
"    disk - into one archive: encrypted to the facilitator's box key, its plaintext\n"
"    manifest signed with the host's key (docs/evidence-format.md).\n"
"\n"
"    list     the archives seatd holds (name, seat, session, time, members, whether\n"
"             the manifest's signature verifies and the guest files are complete), and\n"
"             the sessions still waiting to be sealed, with the reason when sealing\n"
"             failed. Operators only.\n"
"\n"
"    verify   checks everything that needs no secret key: the host's signature over\n"
"             the manifest, the manifest itself, every chunk's length, no byte missing\n"
"             or added, and the BLAKE2b-512 of the encrypted payload against the\n"
"             signed manifest. A flipped byte, a truncated archive, or one re-sealed by\n"
"             someone holding only the facilitator's public key is refused. With --seat\n"
"             and --session an archive of another seat or session is refused too. The\n"
"             contents themselves (decryption, members' digests, the audit chain) need\n"
"             the facilitator's key: use open.\n"
"\n"
"    open     verifies as above, decrypts with the facilitator's secret box key\n"
"             (seat-sign keygen --box), checks the FINAL tag, every member's digest and\n"
"             the audit log's hash chain and forward-secure MACs, and only then writes\n"
"             the members into DIR (created 0700 if missing). Member names come from\n"
"             the signed manifest, sanitised: nothing is ever written outside DIR, DIR\n"
"             may not be a symlink, and an existing file refuses the whole open; on any\n"
"             failure DIR is left as it was.\n"
"\n"
"    retry    seals again the sessions of SEAT (of every seat without SEAT) that\n"
"             could not be sealed, e.g. after the disk was full, and waits for it. A\n"
"             seat FAULTED only because its evidence was not stored is READY again\n"
"             afterwards, and may be reset. Operators only.\n"
"\n"
"OPTIONS\n"
"    ARCHIVE            a path, or the name of an archive in seatd's archive directory\n"
"                       (as 'evidence list' shows it)\n"
"    --host-key PUB     the host's minisign public key (state_dir/trust/host.pub); by\n"
"                       default seatd is asked for it (trust it as far as you trust seatd)\n"
"    --key FILE         the facilitator's secret box key\n"
"    --out DIR          where open writes the members\n"
"    --seat ID, --session HEX\n"
"                       the seat and session the archive must be from\n"
"\n"
"EXIT STATUS\n"
"    0 success; 1 the archive is refused or the operation failed (the reason is\n"
"    printed); 2 bad usage.\n");
}

/* ---- talking to seatd ---- */

/* seatd's answer to evidence.list with limit (host key, archive directory, …). */
static int seatd_evidence(int64_t limit, json_object **ret, SeatError **ret_error) {
        _cleanup_json_ json_object *p = json_object_new_object();
        if (!p)
                return -ENOMEM;
        json_object_object_add(p, "limit", json_object_new_int64(limit));
        return ctl_call_operator("evidence.list", p, true, ret, ret_error);
}

typedef struct Target {
        char *path;               /* the archive */
        SeatPublicKey host;
} Target;

static void target_done(Target *t) {
        free(t->path);
}

/* The archive's path and the host key: from the options, else from seatd. */
static int resolve(const char *archive, const char *host_key, Target *t, SeatError **ret_error) {
        _cleanup_json_ json_object *info = NULL;
        struct stat st;
        bool local = strchr(archive, '/') || lstat(archive, &st) == 0;
        int r;
        if (!local || !host_key) {
                r = seatd_evidence(0, &info, ret_error);
                if (r < 0)
                        return seat_error_wrap(ret_error, "%s", local ? "ask seatd for the host key (or give --host-key PUB)"
                                                                       : "ask seatd where its archives are (or give a path)");
        }
        if (host_key)
                r = seat_public_key_load(host_key, &t->host, ret_error);
        else {
                const char *b64 = NULL;
                if (json_get_string(info, "host_key", true, 256, &b64) < 0)
                        return seat_error_set(ret_error, EPROTO, "seatd sent no host key: give --host-key PUB");
                r = seat_public_key_from_base64(b64, strlen(b64), &t->host, ret_error);
        }
        if (r < 0)
                return r;
        if (local)
                t->path = strdup(archive);
        else {
                const char *dir = NULL;
                if (json_get_string(info, "archive_dir", true, 4096, &dir) < 0)
                        return seat_error_set(ret_error, EPROTO, "seatd sent no archive directory: give the archive's path");
                if (asprintf(&t->path, "%s/%s", dir, archive) < 0)
                        t->path = NULL;
        }
        return t->path ? 0 : -ENOMEM;
}

/* ---- verbs ---- */

static void print_time_ms(int64_t ms, char *buf, size_t size) {
        time_t t = (time_t) (ms / 1000);
        struct tm tm;
        snprintf(buf, size, "?");
        if (gmtime_r(&t, &tm))
                strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int evidence_list(int argc, char *argv[], SeatError **ret_error) {
        _cleanup_json_ json_object *res = NULL;
        json_object *archives = NULL, *pending = NULL;
        if (seatd_evidence(10000, &res, ret_error) < 0)
                return 1;
        if (ctl_print_json_if_asked(res))
                return 0;
        if (json_get_array(res, "archives", true, 10000, &archives) < 0 || json_get_array(res, "pending", true, 10000, &pending) < 0)
                return seat_error_set(ret_error, EPROTO, "seatd's answer has no archive list"), 1;
        printf("%-40s %-10s %-20s %7s %-9s %s\n", "ARCHIVE", "SEAT", "CREATED", "MEMBERS", "SIGNATURE", "GUEST FILES");
        for (size_t i = 0; i < json_object_array_length(archives); i++) {
                json_object *a = json_object_array_get_idx(archives, i);
                const char *name = "?", *seat = "-", *sig = "?", *problem = "";
                int64_t created = 0, members = 0;
                bool complete = true, has_guest = json_object_object_get_ex(a, "guest_complete", NULL);
                char when[32];
                (void) json_get_string(a, "name", false, 1024, &name);
                (void) json_get_string(a, "seat", false, 64, &seat);
                (void) json_get_string(a, "signature", false, 16, &sig);
                (void) json_get_string(a, "problem", false, 2048, &problem);
                (void) json_get_int64(a, "created_ms", false, 0, INT64_MAX, &created);
                (void) json_get_int64(a, "members", false, 0, INT64_MAX, &members);
                (void) json_get_bool(a, "guest_complete", false, &complete);
                print_time_ms(created, when, sizeof(when));
                printf("%-40s %-10s %-20s %7" PRId64 " %-9s %s%s%s\n", name, seat, created ? when : "-", members, sig,
                       !has_guest ? "-" : complete ? "complete" : "INCOMPLETE (caps; see the manifest)",
                       *problem ? "  " : "", problem);
        }
        for (size_t i = 0; i < json_object_array_length(pending); i++) {
                json_object *p = json_object_array_get_idx(pending, i);
                const char *dir = "?", *state = "?", *problem = NULL;
                (void) json_get_string(p, "dir", false, 4096, &dir);
                (void) json_get_string(p, "state", false, 16, &state);
                (void) json_get_string(p, "problem", false, 4096, &problem);
                printf("%s session in %s%s%s\n", !strcmp(state, "failed") ? "UNSEALED" : "to seal:", dir,
                       problem ? ": " : "", problem ? problem : "");
        }
        if (json_object_array_length(pending) > 0)
                printf("(seal them again with 'seatctl evidence retry' once the cause is fixed)\n");
        return 0;
}

/* verify and open: ARCHIVE and the options of 'seatctl evidence --help'. */
static int parse_opts(const char *verb, int argc, char *argv[], EvidenceOptions *o, SeatError **ret_error) {
        const unsigned accepted = EVIDENCE_OPTION_HOST_KEY | EVIDENCE_OPTION_KEY | EVIDENCE_OPTION_OUT |
                                  EVIDENCE_OPTION_SEAT | EVIDENCE_OPTION_SESSION;
        if (evidence_options_parse(argc, argv, accepted, "seatctl evidence --help", o, ret_error) < 0)
                return seat_error_wrap(ret_error, "evidence %s", verb);
        if (!o->archive)
                return seat_error_set(ret_error, EINVAL, "evidence %s needs an ARCHIVE (see 'seatctl evidence --help')", verb);
        return 0;
}

static int print_result(const ArchiveManifest *m, const char *what, const char *text) {
        if (ctl_opts.json) {
                _cleanup_json_ json_object *o = json_object_new_object();
                json_object *man = NULL;
                if (!o || archive_manifest_to_json(m, &man) < 0)
                        return -ENOMEM;
                json_object_object_add(o, "verified", json_object_new_string(what));
                json_object_object_add(o, "manifest", man);
                ctl_print_json(o);
        } else {
                archive_manifest_describe(m, stdout);
                printf("%s\n", text);
        }
        return 0;
}

static int evidence_verify(int argc, char *argv[], SeatError **ret_error) {
        _cleanup_(archive_manifest_freep) ArchiveManifest *m = NULL;
        _cleanup_(target_done) Target t = {};
        EvidenceOptions o = {};
        if (parse_opts("verify", argc, argv, &o, ret_error) < 0)
                return 2;
        if (o.key || o.out)
                return seat_error_set(ret_error, EINVAL, "evidence verify needs no --key or --out: that is 'evidence open'"), 2;
        if (resolve(o.archive, o.host_key, &t, ret_error) < 0 ||
            archive_verify(t.path, &t.host, o.seat, o.session, &m, ret_error) < 0)
                return 1;
        return print_result(m, "signature, manifest, chunks, payload digest",
                            "OK: the host's signature, the manifest, the chunk structure and the payload's digest "
                            "verify (the contents need the facilitator's key: seatctl evidence open)") < 0 ? 1 : 0;
}

static int evidence_open(int argc, char *argv[], SeatError **ret_error) {
        _cleanup_(archive_manifest_freep) ArchiveManifest *m = NULL;
        _cleanup_(seat_box_secret_key_freep) SeatBoxSecretKey *sk = NULL;
        _cleanup_(target_done) Target t = {};
        _cleanup_free_ char *done = NULL;
        EvidenceOptions o = {};
        if (parse_opts("open", argc, argv, &o, ret_error) < 0)
                return 2;
        if (!o.key || !o.out)
                return seat_error_set(ret_error, EINVAL, "evidence open needs --key FACILITATOR_KEY and --out DIR"), 2;
        if (o.seat || o.session)
                return seat_error_set(ret_error, EINVAL, "--seat and --session belong to 'evidence verify'"), 2;
        if (resolve(o.archive, o.host_key, &t, ret_error) < 0 || seat_box_secret_key_load(o.key, &sk, ret_error) < 0 ||
            archive_open(t.path, &t.host, sk, o.out, &m, ret_error) < 0)
                return 1;
        if (asprintf(&done, "OK: every member and the audit chain verified; %zu file(s) written to %s", m->n_members, o.out) < 0)
                return 1;
        return print_result(m, "signature, manifest, payload digest, decryption, members, audit chain", done) < 0 ? 1 : 0;
}

static int evidence_retry(int argc, char *argv[], SeatError **ret_error) {
        _cleanup_json_ json_object *p = json_object_new_object(), *res = NULL;
        json_object *sealed = NULL, *seat = NULL;
        if (!p)
                return 1;
        if (argc == 2)
                json_object_object_add(p, "seat", json_object_new_string(argv[1]));
        if (ctl_call_operator("evidence.retry", p, true, &res, ret_error) < 0)
                return 1;
        if (ctl_print_json_if_asked(res))
                return 0;
        (void) json_get_array(res, "sealed", false, 100000, &sealed);
        size_t n = sealed ? json_object_array_length(sealed) : 0;
        for (size_t i = 0; i < n; i++)
                printf("sealed %s\n", json_object_get_string(json_object_array_get_idx(sealed, i)));
        if (n == 0)
                printf("nothing was waiting to be sealed%s%s\n", argc == 2 ? " for seat " : "", argc == 2 ? argv[1] : "");
        const char *state = NULL;
        if (json_get_object(res, "seat", false, &seat) >= 0 && seat && json_get_string(seat, "state", false, 32, &state) >= 0 && state)
                printf("seat %s is %s\n", argv[1], state);
        return 0;
}

int verb_evidence(int argc, char *argv[], SeatError **ret_error) {
        static const Verb sub[] = {
                { "list", 0, 0, evidence_list, "the archives seatd holds and the sessions waiting to be sealed" },
                { "verify", 0, VERB_ANY, evidence_verify, "check an archive with no secret key" },
                { "open", 0, VERB_ANY, evidence_open, "verify, decrypt and unpack an archive" },
                { "retry", 0, 1, evidence_retry, "seal again what could not be sealed" },
        };
        static const VerbTable table = { "evidence", "seatctl evidence --help", sub, ELEMENTSOF(sub) };
        if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
                evidence_usage(argc < 2 ? stderr : stdout);
                return argc < 2 ? 2 : 0;
        }
        for (int i = 2; i < argc; i++)
                if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                        evidence_usage(stdout);
                        return 0;
                }
        if (signing_init() < 0)
                return seat_error_set(ret_error, EIO, "cannot initialise libsodium"), 1;
        int r = dispatch_verb(&table, argc - 1, argv + 1, ret_error);
        return r < 0 ? 2 : r;
}
