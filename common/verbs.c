/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "strprintf.h"
#include "verbs.h"

int verb_usage_errorv(SeatError **ret_error, const char *see, const char *fmt, va_list ap) {
        _cleanup_free_ char *msg = vstrprintf(fmt, ap);
        return seat_error_set(ret_error, EINVAL, "%s (see '%s')", msg ? msg : "usage error", see);
}

int verb_usage_error(SeatError **ret_error, const char *see, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = verb_usage_errorv(ret_error, see, fmt, ap);
        va_end(ap);
        return r;
}

const Verb *verb_find(const VerbTable *t, const char *name) {
        for (size_t i = 0; i < t->n_verbs; i++)
                if (!strcmp(t->verbs[i].name, name))
                        return &t->verbs[i];
        return NULL;
}

static int check_args(const VerbTable *t, const Verb *v, unsigned n, SeatError **ret_error) {
        if (v->max_args != VERB_ANY && n > v->max_args) {
                if (v->max_args == 0)
                        return seat_error_set(ret_error, EINVAL, "%s %s takes no arguments (see '%s')", t->name, v->name,
                                              t->see);
                return seat_error_set(ret_error, EINVAL, "%s %s takes at most %u argument%s (see '%s')", t->name,
                                      v->name, v->max_args, v->max_args == 1 ? "" : "s", t->see);
        }
        if (v->min_args != VERB_ANY && n < v->min_args)
                return seat_error_set(ret_error, EINVAL, "%s %s needs %s%u argument%s (see '%s')", t->name, v->name,
                                      v->min_args == v->max_args ? "" : "at least ", v->min_args,
                                      v->min_args == 1 ? "" : "s", t->see);
        return 0;
}

int dispatch_verb(const VerbTable *t, int argc, char *argv[], SeatError **ret_error) {
        if (argc < 1)
                return seat_error_set(ret_error, EINVAL, "a verb is needed (see '%s')", t->see);
        const Verb *v = verb_find(t, argv[0]);
        if (!v) {
                _cleanup_free_ char *names = verbs_names(t);
                return seat_error_set(ret_error, ENOENT, "unknown verb '%s'%s%s (see '%s')", argv[0],
                                      names && *names ? ": use " : "", names ? names : "", t->see);
        }
        int r = check_args(t, v, (unsigned) argc - 1, ret_error);
        if (r < 0)
                return r;
        return v->fn(argc, argv, ret_error);
}

char *verbs_names(const VerbTable *t) {
        size_t listed = 0, seen = 0, len = 1;
        for (size_t i = 0; i < t->n_verbs; i++)
                if (t->verbs[i].help) {
                        listed++;
                        len += strlen(t->verbs[i].name) + 4; /* ", " or " or " */
                }
        char *s = malloc(len), *p = s;
        if (!s)
                return NULL;
        *p = '\0';
        for (size_t i = 0; i < t->n_verbs; i++) {
                if (!t->verbs[i].help)
                        continue;
                seen++;
                p = stpcpy(p, seen == 1 ? "" : seen == listed ? " or " : ", ");
                p = stpcpy(p, t->verbs[i].name);
        }
        return s;
}

void verbs_print_help(const VerbTable *t, FILE *f, const char *indent, int width) {
        for (size_t i = 0; i < t->n_verbs; i++)
                if (t->verbs[i].help)
                        fprintf(f, "%s%-*s %s\n", indent, width, t->verbs[i].name, t->verbs[i].help);
}

int verbs_main(const VerbTool *tool, int argc, char *argv[]) {
        const VerbTable *t = &tool->table;
        _cleanup_error_ SeatError *error = NULL;

        if (argc < 2) {
                _cleanup_free_ char *names = verbs_names(t);
                fprintf(stderr, "%s: a verb is needed%s%s (see '%s')\n", t->name, names && *names ? ": " : "",
                        names ? names : "", t->see);
                return 2;
        }
        if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
                tool->help();
                return 0;
        }
        if (!strcmp(argv[1], "--version") || (tool->version_v && !strcmp(argv[1], "-v"))) {
                printf("%s %s (seatd)\n", t->name, SEATD_VERSION);
                return 0;
        }
        const Verb *v = verb_find(t, argv[1]);
        int r = dispatch_verb(t, argc - 1, argv + 1, &error);
        if (r >= 0)
                return 0;
        if (!v)
                fprintf(stderr, "%s: %s\n", t->name, error ? error->message : strerror(-r));
        else
                fprintf(stderr, "%s %s: %s\n", t->name, v->name, error ? error->message : strerror(-r));
        return r == -EINVAL || !v ? 2 : 1;
}
