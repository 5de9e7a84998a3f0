/* SPDX-License-Identifier: GPL-2.0-or-later */
/* timedio.h - a member's metadata IO with a deadline (timedio.c). */
#ifndef RAIDFUSE_TIMEDIO_H
#define RAIDFUSE_TIMEDIO_H

#include <stdbool.h>
#include <stdint.h>

#include "raidfuse/super.h"

struct rf_timed_io;

/* A timed IO object for one member: timeout_ms bounds each call (0: a
 * call waits as long as the IO takes, as without the object).  NULL when
 * out of memory. */
struct rf_timed_io *rf_timed_io_new(unsigned timeout_ms);
/* Point io at t, every call going to inner (copied: its ctx must live as
 * long as t).  Each of io's pread, pwrite and fsync then runs on t's own
 * thread and returns what inner's did, or -ETIMEDOUT once timeout_ms
 * passed without an answer (the call is left to t's thread; while it has
 * not returned, every further call returns -ETIMEDOUT at once). */
void rf_timed_io_wrap(struct rf_timed_io *t, const struct rf_sb_io *inner, struct rf_sb_io *io);
/* A flush's deadline moves on while statfd (devstat.h: the member's block
 * device, > 0; borrowed, open as long as t) shows IO completed since the
 * last look: a flush that writes back much, not a hung disk. */
void rf_timed_io_set_progress(struct rf_timed_io *t, int statfd);
/* Whether a call t gave up on has not returned yet; *since_ms: since when
 * (CLOCK_MONOTONIC ms), if not NULL. */
bool rf_timed_io_stuck(struct rf_timed_io *t, int64_t *since_ms);
/* Free t (NULL: nothing).  A call still stuck keeps what it needs until it
 * returns, then its thread frees it. */
void rf_timed_io_free(struct rf_timed_io *t);

#endif
