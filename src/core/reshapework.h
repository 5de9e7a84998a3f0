/* SPDX-License-Identifier: GPL-2.0-or-later */
/* reshapework.h - what a level's part of a reshape gets from the walk
 * (not installed; the calls are core/reshapework.c's, the walk is
 * services/reshape.c).
 *
 * The reshape walk (services/reshape.c, md's reshape_request) is
 * generic: it picks each window, holds the writes, records the position
 * in the superblocks, paces, and ends the reshape.  What differs by level
 * is the level's (struct rf_reshape_ops, in its ops table): where the
 * rows of an array sector lie on the members in a geometry (md's
 * first_dev_address and last_dev_address: the walk's crash-safety test
 * is built on them), how the old geometry's data of a window is read (one
 * chunk from its data member, or from one copy in sync; a missing one
 * computed from its row), and how the new geometry's rows are written
 * (parity computed, or every copy).  The level queues member IO through
 * the walk's queue (rf_reshape_io()) and waits for it
 * (rf_reshape_io_wait()); every call is on the walk's thread.
 *
 * Invariant: the walk hands the level a window whose new rows land only
 * where no old row the superblocks' position still needs lies, with
 * writes drained; the level neither holds writes nor records anything.
 *
 * It does NOT pick windows, record positions or change the array's
 * geometry (the walk and core/array.c do).
 */
#ifndef RAIDFUSE_RESHAPEWORK_H
#define RAIDFUSE_RESHAPEWORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "raidfuse/ioq.h"
#include "raidfuse/layout.h"

/* The walk's state a level's window work uses, owned by the walk's
 * thread. */
struct rf_reshape_work {
	struct rf_array *a;
	uint64_t unit;                  /* sectors: the larger chunk of the two geometries */
	char *zero;                     /* unit sectors of zeros */
	char *scratch;                  /* the level's (rf_reshape_ops.bufs()) */
	char *par;                      /* the level's (rf_reshape_ops.bufs()) */
	/* The walk's, for the calls below (the level leaves them alone). */
	struct rf_ioq *ioq;
	struct rf_mio *mios;
	int nmios, pending, io_err;
};

/* A level's part of the reshape walk (md's reshape_request, per
 * personality).  Units: array sectors, and member sectors counted from a
 * member's data offset in the geometry given.
 *   granule: the array sectors windows are whole multiples of (raid4/5/6:
 *     a row of new stripes of unit chunks; raid10: unit);
 *   dev_first: the first member sector of the rows that may hold array
 *     sector s in geometry g (md's first_dev_address): every sector at or
 *     past s lies at or past it, on every member;
 *   dev_end: the member sector past the rows that may hold s (md's
 *     last_dev_address): every sector up to s lies below it;
 *   move: the sectors every data offset should move for a reshape from
 *     `from` to `to` (md's new_offset as mdadm picks it), and in *least
 *     the fewest that do (less room before the data than that: refused);
 *   bufs: the bytes of w->par and w->scratch for windows of at most
 *     window array sectors;
 *   queue_old: queue the reads of [x, x + n) of the previous geometry into
 *     buf (zeros past its end) from members not in miss; -EIO when some
 *     of it has no member left to read it from (nothing queued for it);
 *   fill_missing: after those reads ended, fill in what lay on members in
 *     miss (from the rest of its row); optional: NULL when queue_old finds
 *     every byte on a member present (copies);
 *   queue_new: queue the writes of [x, x + n) (whole granules, data in
 *     buf) in the new geometry at the new data offsets, on every member
 *     not faulty; submits as it goes (rf_reshape_io_kick()). */
struct rf_reshape_ops {
	uint64_t (*granule)(const struct rf_geom *g, uint64_t unit);
	uint64_t (*dev_first)(const struct rf_geom *g, uint64_t unit, uint64_t s);
	uint64_t (*dev_end)(const struct rf_geom *g, uint64_t unit, uint64_t s);
	uint64_t (*move)(const struct rf_geom *from, const struct rf_geom *to, uint64_t unit, uint64_t *least);
	void (*bufs)(const struct rf_geom *g, const struct rf_geom *prev, uint64_t unit, uint64_t window,
		     size_t *par, size_t *scratch);
	int (*queue_old)(struct rf_reshape_work *w, uint64_t x, uint64_t n, char *buf, uint64_t miss);
	int (*fill_missing)(struct rf_reshape_work *w, uint64_t x, uint64_t n, char *buf, uint64_t miss);
	void (*queue_new)(struct rf_reshape_work *w, uint64_t x, uint64_t n, char *buf);
};

/* The array's level's part, NULL: the level is not reshaped by the walk. */
const struct rf_reshape_ops *rf_array_reshape_ops(const struct rf_array *a);
/* The part of the level of the program's stack that serves md level
 * `level` (a level the array is yet to take), NULL: none. */
const struct rf_reshape_ops *rf_level_reshape_ops(int level);

/* Queue a read (or write) of len bytes of slot m at byte offset off on
 * its device (data offset included), into (from) buf. */
void rf_reshape_io(struct rf_reshape_work *w, int m, bool write, char *buf, uint64_t off, uint32_t len);
/* Submit what was queued and take what ended, without waiting. */
void rf_reshape_io_kick(struct rf_reshape_work *w);
/* Submit what was queued and wait for all of it: 0, or the first error
 * (its member is marked faulty). */
int rf_reshape_io_wait(struct rf_reshape_work *w);

#endif
