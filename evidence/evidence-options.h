/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The options of the two evidence front ends, seat-evidence and 'seatctl evidence': one
 * parser, and each front end names the options its verbs take.
 */
#include <stdbool.h>
#include <stdint.h>

#include "archive.h"
#include "common/error.h"

typedef enum EvidenceOption {
        EVIDENCE_OPTION_HOST_KEY = 1 << 0,   /* --host-key PATH */
        EVIDENCE_OPTION_KEY = 1 << 1,        /* --key PATH: the facilitator's secret box key */
        EVIDENCE_OPTION_OUT = 1 << 2,        /* --out PATH */
        EVIDENCE_OPTION_SEAT = 1 << 3,       /* --seat ID */
        EVIDENCE_OPTION_SESSION = 1 << 4,    /* --session HEX */
        EVIDENCE_OPTION_TO = 1 << 5,         /* --to PATH: the facilitator's public box key */
        EVIDENCE_OPTION_IMAGE = 1 << 6,      /* --image DIGEST */
        EVIDENCE_OPTION_AUDIT = 1 << 7,      /* --audit LOG */
        EVIDENCE_OPTION_AUDIT_KEY = 1 << 8,  /* --audit-key HEX */
        EVIDENCE_OPTION_CONSOLE = 1 << 9,    /* --console PATH */
        EVIDENCE_OPTION_CAPTURE = 1 << 10,   /* --capture PATH */
        EVIDENCE_OPTION_FILE = 1 << 11,      /* --file NAME=PATH, repeatable */
        EVIDENCE_OPTION_MAX_MEMBER = 1 << 12, /* --max-member-size BYTES */
        EVIDENCE_OPTION_RECORDS = 1 << 13,   /* --records N */
        EVIDENCE_OPTION_SESSION_OPEN = 1 << 14, /* --session-open */
        EVIDENCE_OPTION_NO_END = 1 << 15,    /* --no-end */
        EVIDENCE_OPTIONS_ALL = (1 << 16) - 1,
} EvidenceOption;

#define EVIDENCE_OPTIONS_FILES_MAX ARCHIVE_MEMBERS_MAX

typedef struct EvidenceOptions {
        const char *archive; /* the one positional argument: ARCHIVE, DIR or LOG */
        const char *host_key, *key, *out, *seat, *session, *to, *image, *audit, *audit_key, *console, *capture;
        const char *files[EVIDENCE_OPTIONS_FILES_MAX];
        size_t n_files;
        uint64_t max_member, records;
        bool session_open, no_end;
} EvidenceOptions;

/*
 * Parses a verb's arguments (argv[0] is the verb) into *o, which the caller initialises
 * (defaults stay where no option is given). Only the options in `accepted` (an
 * EvidenceOption mask) are known, abbreviations included; at most one positional
 * argument. A usage error returns -EINVAL, its message ending in " (see '<see>')".
 */
int evidence_options_parse(int argc, char *argv[], unsigned accepted, const char *see, EvidenceOptions *o,
                           SeatError **ret_error);
