/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the facilitator's requests carry that seat-web must read: the CSRF header and the
 * handout's list of participant names. Pure functions of a buffer with hard caps (fuzzed:
 * tests/fuzz/fuzz-web-csrf.c, fuzz-web-names.c). */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "http-parse.h"

#define FAC_CSRF_LEN WEB_SESSION_ID_LEN /* 32 random bytes, base64url */
#define FAC_PARTICIPANT_MAX 64          /* seatd's PARTICIPANT_MAX */
#define FAC_HANDOUT_MAX 64              /* participants of one handout */

/* The value of field key in a facilitator's form (application/x-www-form-urlencoded, at
 * most WEB_FORM_MAX), decoded into out: web_form_get()'s rules, but for a textarea's line
 * breaks and tabs (CR, LF, TAB), which the handout's list of names holds. -ENOENT,
 * -ENOTUNIQ (given twice), -EBADMSG (a bad escape, another control byte, NUL, an empty
 * name, anywhere in the body), -E2BIG. */
int fac_form_get(const char *body, size_t len, const char *key, char *out, size_t out_size);

/* The token of an "X-CSRF-Token" header's value: exactly FAC_CSRF_LEN base64url
 * characters, optional spaces or tabs around them. -EBADMSG otherwise. */
int fac_csrf_get(const char *header, size_t len, char out[FAC_CSRF_LEN + 1]);

/* A participant's name as seatd takes them: 1..FAC_PARTICIPANT_MAX of letters, digits,
 * spaces and @._+-, not starting or ending with a space. */
bool fac_participant_valid(const char *s);

/* The names of a handout: one per line (CR LF or LF), spaces around each trimmed, empty
 * lines skipped, into names (at most FAC_HANDOUT_MAX). -EBADMSG: a name seatd would
 * refuse, the same name twice; -E2BIG: more than FAC_HANDOUT_MAX. */
int fac_names_parse(const char *text, size_t len, char names[][FAC_PARTICIPANT_MAX + 1], size_t *ret_n);

/* Drops every "token" from a seatd answer (objects and arrays, 4 levels down) before a
 * dashboard sees it: a seat's token is for its participant (and the handout's one-time
 * links), never for a facilitator's browser. */
void fac_strip_tokens(json_object *o);
