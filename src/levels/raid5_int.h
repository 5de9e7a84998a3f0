/* SPDX-License-Identifier: GPL-2.0-or-later */
/* raid5_int.h - what the files of the parity levels (md's raid4, raid5
 * and raid6) share (not installed):
 *
 *   raid5.c        the level's ops table; requests split into pieces
 *   raid5_round.c  the stripe rounds of a head: plan, hold, read,
 *                  compute, write
 *   raid5_log.c    a round's update as the stripe log takes it: the run
 *                  of written columns and its partial parity
 *   raid5_sync.c   the sync work of one region; the rows a write
 *                  touches (the sync walk's and the bitmap's)
 *   raid5_reshape.c  the level's part of the reshape walk: a window's
 *                  old data read, its new rows written with parity
 *
 * raid5.c reaches the rounds and the sync work only through its ops
 * table (rf_r5_handle_stripe, rf_r5_sync_ops, rf_r5_bitmap_range,
 * rf_r5_reshape_ops).  The rounds call the
 * stripe log's functions, inside a round on the worker owning the head;
 * those read the round's row context and call back only
 * rf_r5_merge_col().
 */
#ifndef RAIDFUSE_LEVELS_RAID5_INT_H
#define RAIDFUSE_LEVELS_RAID5_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/engine.h"

/* raid5.c */

/* The bits of every member slot. */
static inline uint64_t rf_r5_all_members(const struct rf_array *a)
{
	return a->nmembers == 64 ? ~0ull : (1ull << a->nmembers) - 1;
}

/* A stripe head key's mark: the head serves the previous geometry of a
 * reshape under way (member sectors stay far below 2^63). */
#define SH_PREV (1ull << 63)

/* raid5_round.c */

/* A round's view of its head's row. */
struct rf_r5_row_ctx {
	const struct rf_geom *g;        /* the head's geometry */
	uint64_t sector;                /* its member sector (the key without SH_PREV) */
	struct rf_r5_row row;
	uint64_t faulty;        /* snapshot for this round */
	uint64_t data_mask;     /* data columns */
	uint64_t par_mask;      /* P and Q columns */
};

/* Copy the round's write pieces of column col into the head's block. */
void rf_r5_merge_col(struct rf_stripe *sh, int col);
/* The level's handle_stripe (engine.h): run sh's rounds (the worker owns
 * it). */
void rf_r5_handle_stripe(struct rf_worker *w, struct rf_stripe *sh);

/* raid5_log.c */

/* Data columns inside the run of the written ones (wmask) that are not
 * written: a read-modify-write reads them too.  0 when the round is not
 * logged. */
uint64_t rf_r5_log_gap(const struct rf_array *a, const struct rf_r5_row_ctx *c, uint64_t wmask);
/* Before the new data is merged: describe the update in sh->log and
 * compute its partial parity from the blocks as they are.  false: the
 * round is not logged. */
bool rf_r5_log_prepare(struct rf_worker *w, struct rf_stripe *sh, const struct rf_r5_row_ctx *c, uint64_t wmask);
/* A logged read-modify-write with partial parity: merge the new data and
 * make the new parity from the partial parity, in one pass. */
void rf_r5_log_rmw(struct rf_worker *w, struct rf_stripe *sh, const struct rf_r5_row_ctx *c, uint64_t wmask);

/* raid5_sync.c */

/* The level's sync work (core.h struct rf_sync_ops). */
extern const struct rf_sync_ops rf_r5_sync_ops;

/* raid5_reshape.c: the level's part of the reshape walk
 * (core/reshapework.h). */
extern const struct rf_reshape_ops rf_r5_reshape_ops;
/* The level's bitmap_range (engine.h, md's raid5 bitmap_sector): the
 * member rows [*lo, *hi) a write of len > 0 bytes at array byte off of
 * geometry g touches on any member, parity included.  Inside one chunk
 * exactly its sectors' rows; across chunks whole chunk rows. */
void rf_r5_bitmap_range(const struct rf_geom *g, uint64_t off, uint64_t len, uint64_t *lo, uint64_t *hi);

#endif
