/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The verbs of a command line tool (seatctl, seat-sign, seat-evidence, and verb groups
 * such as "seatctl evidence"), after systemd's shared/verbs.h: one row per verb, and
 * dispatch_verb() finds the verb, checks how many arguments it got and runs it. A verb is
 * called with argv from its own name on (argv[0] is the verb, as getopt wants) and parses
 * its options itself.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "error.h"

#define VERB_ANY UINT_MAX

/* What a verb returns is its tool's convention: seat-sign's and seat-evidence's verbs
 * return 0 or -errno (-EINVAL: bad usage) and verbs_main() picks the exit status;
 * seatctl's verbs return the exit status itself. */
typedef int (*VerbFn)(int argc, char *argv[], SeatError **ret_error);

typedef struct Verb {
        const char *name;
        /* How many words may follow the verb's name (0: none); VERB_ANY: not checked here
         * (the verb parses options, or takes --help, and checks for itself). */
        unsigned min_args, max_args;
        VerbFn fn;
        const char *help; /* one line for the tool's help; NULL: not listed (tests' verbs) */
} Verb;

typedef struct VerbTable {
        const char *name; /* what messages call it: "seat-sign", "evidence" (seatctl's group) */
        const char *see;  /* where its help is: "seat-sign --help" */
        const Verb *verbs;
        size_t n_verbs;
} VerbTable;

/* Sets a usage error, "<message> (see '<see>')", and returns -EINVAL. */
int verb_usage_error(SeatError **ret_error, const char *see, const char *fmt, ...) _printf_(3, 4);
int verb_usage_errorv(SeatError **ret_error, const char *see, const char *fmt, va_list ap) _printf_(3, 0);

/* The verb called name, or NULL. */
const Verb *verb_find(const VerbTable *t, const char *name);

/* Runs the verb named argv[0] (argc >= 1) and returns what it returns. Without running
 * one it returns -ENOENT for an unknown verb and -EINVAL for too few or too many
 * arguments, with *ret_error saying so. */
int dispatch_verb(const VerbTable *t, int argc, char *argv[], SeatError **ret_error);

/* "keygen, sign or verify": the listed verbs (those with a help line), for messages;
 * "" when none is listed; NULL when out of memory. */
char *verbs_names(const VerbTable *t);

/* One line per listed verb: indent, the name padded to width, its help. */
void verbs_print_help(const VerbTable *t, FILE *f, const char *indent, int width);

/* A tool whose verbs return 0 or -errno (seat-sign, seat-evidence). */
typedef struct VerbTool {
        VerbTable table;    /* name: the program */
        void (*help)(void); /* --help, -h, help */
        bool version_v;     /* -v is --version too */
} VerbTool;

/*
 * The whole main() after the tool's own set-up: --help and --version, then the verb.
 * Only here is an error printed ("<program> <verb>: <message>") and the exit status
 * picked: 0 ok, 1 failure, 2 bad usage (no verb, an unknown verb, a verb's -EINVAL).
 */
int verbs_main(const VerbTool *tool, int argc, char *argv[]);
