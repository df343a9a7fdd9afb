/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A seat's packet capture on disk (docs/egress.md, "Capture"): pcapng files
 * PREFIX0001.pcapng, PREFIX0002.pcapng, … in one directory, together never larger than
 * max_bytes.
 *
 * Rotation keeps the head and a ring: the cap is cut into CAPTURE_RING_FILES files of equal
 * size; the first file (the session's start) is never rotated away, and when the cap is
 * reached the oldest file after it goes. Why not a plain ring, nor stop-at-cap: with a
 * plain ring a guest that floods at the end erases how its session began; with stop-at-cap
 * a guest that floods first blinds the capture for the rest of its session. Head plus ring
 * loses only the middle, and every packet and byte lost there is counted.
 *
 * Nothing here touches the network: the writer is a function of the packets it is handed
 * (tests/network/test-capture-ring.c). Not thread-safe: one writer per ring.
 */

#include <stdbool.h>
#include <stdint.h>

#include "common/macro.h"

#define CAPTURE_RING_FILES 8u
#define CAPTURE_RING_PREFIX_MAX 64u
#define CAPTURE_RING_IFNAME_MAX 32u
/* A file holds at least one packet of the largest snaplen, with its headers. */
#define CAPTURE_RING_FILE_MIN (128u * 1024u)

typedef struct CaptureStats {
        uint64_t packets;         /* handed to the ring */
        uint64_t bytes_on_wire;   /* their original length */
        uint64_t packets_cut;     /* shorter in the file than on the wire (snaplen) */
        uint64_t bytes_cut;       /* what snaplen left out */
        uint64_t files;           /* files in the directory now */
        uint64_t bytes;           /* their size */
        uint64_t files_rotated;   /* removed to stay under the cap */
        uint64_t packets_rotated; /* in those files */
        uint64_t bytes_rotated;   /* their size */
        uint64_t packets_unwritten; /* a write failed (disk full): not in any file */
        uint64_t kernel_drops;    /* pcap_stats(): dropped before they reached the ring */
        int write_error;          /* the first write failure (an errno), 0 if none */
        bool read_failed;         /* the capture stopped reading the interface early (it went
                                   * away): nothing after that was captured (capture.c) */
} CaptureStats;

typedef struct CaptureRing CaptureRing;

/*
 * A ring in dir_fd (kept open by the caller for the ring's life) for packets of link type
 * linktype (LINKTYPE_ETHERNET: 1) cut at snaplen, every file naming the interface ifname.
 * Files of this prefix already there (a seatd restarted mid-session) are counted and
 * numbered after: nothing is overwritten. Returns 0, -EINVAL (prefix or caps), -ENOMEM,
 * -errno.
 */
int capture_ring_new(int dir_fd, const char *prefix, const char *ifname, uint16_t linktype, uint32_t snaplen,
                     uint64_t max_bytes, CaptureRing **ret);
/* Write one packet: caplen bytes of data, of len on the wire, at ts_usec (µs since 1970).
 * A failed write is counted (packets_unwritten, write_error) and the ring writes no more. */
void capture_ring_write(CaptureRing *r, uint64_t ts_usec, const uint8_t *data, uint32_t caplen, uint32_t len);
/* Flush what is buffered to the current file. */
int capture_ring_flush(CaptureRing *r);
void capture_ring_stats(const CaptureRing *r, CaptureStats *ret);
/* Flush, fsync and close the current file, fsync the others; what fails is counted in its
 * stats (write_error; packets still buffered: packets_unwritten), so read them after. Once;
 * the ring writes no more. (The head is fsync'ed when the next file opens; the ring's files
 * only here.) */
void capture_ring_finish(CaptureRing *r);
/* capture_ring_finish() if not done yet, and free r. NULL is fine. */
CaptureRing *capture_ring_close(CaptureRing *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(CaptureRing *, capture_ring_close)
/* The bytes a packet of caplen takes in a file (its Enhanced Packet Block). */
uint32_t capture_ring_block_bytes(uint32_t caplen);
/* The size of one file of the ring under max_bytes. */
uint64_t capture_ring_file_max(uint64_t max_bytes);
/* Is name PREFIXnnnn.pcapng (4+ digits)? Returns the number, or 0. */
unsigned capture_ring_file_number(const char *prefix, const char *name);
