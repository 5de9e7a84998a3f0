/* SPDX-License-Identifier: GPL-2.0-or-later */
/* splice.h - a mapped read's member bytes into a pipe, by page reference.
 *
 * The FUSE front end answers a large read of the image without copying
 * its data: the read map (raidfuse/readmap.h) names the member extents,
 * rf_splice_fill() splices each into this thread's pipe (a member on
 * tmpfs or in the page cache moves by page reference), and the reply
 * splices the pipe on into /dev/fuse.
 *
 * One pipe per thread, made at first use and sized to hold a whole read
 * (F_SETPIPE_SZ; a size the system refuses leaves a smaller pipe, and the
 * reads that do not fit it are refused, -ENOSPC).  A pipe is never reused
 * with bytes in it: after an error, or a reply that left bytes behind
 * (rf_splice_after_reply()), it is closed and the next read makes a new
 * one.  It is closed when its thread ends.
 *
 * What it does NOT do: decide which reads are spliced, hold the barrier
 * (the caller keeps the map until the reply is sent), or touch FUSE.
 */
#ifndef RAIDFUSE_FRONT_SPLICE_H
#define RAIDFUSE_FRONT_SPLICE_H

#include <stddef.h>

struct rf_read_map;

/* Fill this thread's pipe with m's extents in order, each after asking
 * its member's fault injection (rf_read_map_fault()).  pipe_size: the
 * size to ask for a new pipe.  The pipe's read end, holding exactly
 * m->len bytes; or -errno (the fault's error, the splice's, -EIO for a
 * member that ended early, -ENOSPC when the pipe is too small for m), and
 * the pipe is emptied (closed). */
int rf_splice_fill(const struct rf_read_map *m, size_t pipe_size);
/* The reply was sent (or failed): drop this thread's pipe if anything is
 * left in it. */
void rf_splice_after_reply(void);
/* Close this thread's pipe (the next fill makes a new one). */
void rf_splice_drop(void);
/* The largest pipe this process may make, up to want bytes (a power of
 * two; at least the default pipe's size), or -errno. */
long rf_splice_pipe_max(size_t want);

#endif
