/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "client.h"
#include "common/error.h"

/* Global options, set by main() before a verb runs. */
typedef struct CtlOptions {
        const char *socket;
        const char *token_file; /* a participant's token; else $SEATD_TOKEN */
        bool json;
        bool quiet;
} CtlOptions;

extern CtlOptions ctl_opts;

/* A verb returns the process exit code (0 ok, 1 failed, 2 usage) and prints nothing on
 * failure: main() prints ret_error. */

/* seatctl exec's status for every failure of seatctl's own (seatd unreachable, refused,
 * a seatd error, bad usage), docker's convention: all others are the command's. */
#define CTL_EXEC_FAILED 125

int verb_image(int argc, char *argv[], SeatError **ret_error);
int verb_provision(int argc, char *argv[], SeatError **ret_error);
int verb_list(int argc, char *argv[], SeatError **ret_error);
int verb_room(int argc, char *argv[], SeatError **ret_error); /* events, metrics (room.c) */
int verb_status(int argc, char *argv[], SeatError **ret_error);
int verb_exec(int argc, char *argv[], SeatError **ret_error);
int verb_shell(int argc, char *argv[], SeatError **ret_error);
int verb_cp(int argc, char *argv[], SeatError **ret_error);
int verb_forward(int argc, char *argv[], SeatError **ret_error);
int verb_console(int argc, char *argv[], SeatError **ret_error);
int verb_reset(int argc, char *argv[], SeatError **ret_error);
int verb_release(int argc, char *argv[], SeatError **ret_error);
int verb_host(int argc, char *argv[], SeatError **ret_error);
int verb_evidence(int argc, char *argv[], SeatError **ret_error);
int verb_pool(int argc, char *argv[], SeatError **ret_error);
int verb_mcp(int argc, char *argv[], SeatError **ret_error);

/* One request on a connection of its own to the operator socket (--socket), with a
 * progress bar when progress and not --quiet: the image, pool and evidence verbs each
 * opened one this way. Returns ctl_call()'s result. */
int ctl_call_operator(const char *method, json_object *params, bool progress, json_object **ret,
                      SeatError **ret_error);

/* Prints a JSON value (pretty) to stdout. */
void ctl_print_json(json_object *o);

/* With --json, prints the reply as it came and returns true: the verb's output is done,
 * its own table or text is only for people. */
bool ctl_print_json_if_asked(json_object *o);
