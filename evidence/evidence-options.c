/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <getopt.h>
#include <stdlib.h>

#include "evidence-options.h"
#include "common/verbs.h"

/* Each option's getopt value is its EvidenceOption bit. */
static const struct option all_options[] = {
        { "host-key", required_argument, NULL, EVIDENCE_OPTION_HOST_KEY },
        { "key", required_argument, NULL, EVIDENCE_OPTION_KEY },
        { "out", required_argument, NULL, EVIDENCE_OPTION_OUT },
        { "seat", required_argument, NULL, EVIDENCE_OPTION_SEAT },
        { "session", required_argument, NULL, EVIDENCE_OPTION_SESSION },
        { "to", required_argument, NULL, EVIDENCE_OPTION_TO },
        { "image", required_argument, NULL, EVIDENCE_OPTION_IMAGE },
        { "audit", required_argument, NULL, EVIDENCE_OPTION_AUDIT },
        { "audit-key", required_argument, NULL, EVIDENCE_OPTION_AUDIT_KEY },
        { "console", required_argument, NULL, EVIDENCE_OPTION_CONSOLE },
        { "capture", required_argument, NULL, EVIDENCE_OPTION_CAPTURE },
        { "file", required_argument, NULL, EVIDENCE_OPTION_FILE },
        { "max-member-size", required_argument, NULL, EVIDENCE_OPTION_MAX_MEMBER },
        { "records", required_argument, NULL, EVIDENCE_OPTION_RECORDS },
        { "session-open", no_argument, NULL, EVIDENCE_OPTION_SESSION_OPEN },
        { "no-end", no_argument, NULL, EVIDENCE_OPTION_NO_END },
};

static int parse_number(const char *s, uint64_t *ret) {
        char *end;
        errno = 0;
        uint64_t v = strtoull(s, &end, 10);
        if (errno || *end || end == s)
                return -EINVAL;
        *ret = v;
        return 0;
}

int evidence_options_parse(int argc, char *argv[], unsigned accepted, const char *see, EvidenceOptions *o,
                           SeatError **ret_error) {
        struct option options[ELEMENTSOF(all_options) + 1] = {};
        size_t n = 0;
        int c;

        for (size_t i = 0; i < ELEMENTSOF(all_options); i++)
                if (accepted & (unsigned) all_options[i].val)
                        options[n++] = all_options[i];
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case EVIDENCE_OPTION_HOST_KEY: o->host_key = optarg; break;
                case EVIDENCE_OPTION_KEY: o->key = optarg; break;
                case EVIDENCE_OPTION_OUT: o->out = optarg; break;
                case EVIDENCE_OPTION_SEAT: o->seat = optarg; break;
                case EVIDENCE_OPTION_SESSION: o->session = optarg; break;
                case EVIDENCE_OPTION_TO: o->to = optarg; break;
                case EVIDENCE_OPTION_IMAGE: o->image = optarg; break;
                case EVIDENCE_OPTION_AUDIT: o->audit = optarg; break;
                case EVIDENCE_OPTION_AUDIT_KEY: o->audit_key = optarg; break;
                case EVIDENCE_OPTION_CONSOLE: o->console = optarg; break;
                case EVIDENCE_OPTION_CAPTURE: o->capture = optarg; break;
                case EVIDENCE_OPTION_FILE:
                        if (o->n_files >= EVIDENCE_OPTIONS_FILES_MAX)
                                return verb_usage_error(ret_error, see, "too many --file options");
                        o->files[o->n_files++] = optarg;
                        break;
                case EVIDENCE_OPTION_MAX_MEMBER:
                case EVIDENCE_OPTION_RECORDS:
                        if (parse_number(optarg, c == EVIDENCE_OPTION_RECORDS ? &o->records : &o->max_member) < 0)
                                return verb_usage_error(ret_error, see, "'%s' is not a number", optarg);
                        break;
                case EVIDENCE_OPTION_SESSION_OPEN: o->session_open = true; break;
                case EVIDENCE_OPTION_NO_END: o->no_end = true; break;
                default:
                        return verb_usage_error(ret_error, see, "unknown option or missing argument '%s'",
                                                argv[optind - 1]);
                }
        if (optind < argc)
                o->archive = argv[optind++];
        if (optind < argc)
                return verb_usage_error(ret_error, see, "unexpected argument '%s'", argv[optind]);
        return 0;
}
