/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A terminal session recorded as an asciicast v2 file (docs/evidence-format.md): a JSON
 * header line, then one JSON array per event, [seconds, "o"|"i"|"r"|"m", text]. It is
 * evidence of what a participant saw (and, with record_input, typed) in a PTY exec, and
 * `asciinema play`/`cat` read it.
 *
 * What the guest prints is hostile: any bytes, any amount. Text is made valid UTF-8 (a
 * sequence split between two chunks is joined first), and the file stops growing at its
 * cap. What is left out is counted: a marker event says so at the end, and the count is
 * kept beside the file ("NAME.cast.dropped") for the archive's signed manifest.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/* Recordings of one session (each PTY exec makes one): beyond it, execs run unrecorded and
 * their exec.end audit record says so. */
#define RECORDINGS_MAX 256

typedef struct Recording Recording;

typedef struct RecordingSpec {
        int64_t cols, rows;
        const char *command;      /* the title: argv joined (cut) */
        uint64_t max_bytes;       /* the file's cap */
        bool record_input;        /* "i" events for what was typed */
} RecordingSpec;

/* Create path (O_EXCL, 0600) and write the header. */
int recording_open(const char *path, const RecordingSpec *spec, Recording **ret);
void recording_output(Recording *r, const void *data, size_t len);
void recording_input(Recording *r, const void *data, size_t len);
void recording_resize(Recording *r, int64_t cols, int64_t rows);
/* Flushes what is held, writes the truncation marker and the ".dropped" count when
 * anything was left out, and closes. Returns the bytes left out (NULL is fine). */
uint64_t recording_close(Recording *r);
