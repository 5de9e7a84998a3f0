/* SPDX-License-Identifier: GPL-2.0-or-later */
/* syncwork.h - what a level's sync work of one region gets from the walk
 * (not installed; the calls are core/syncwork.c's, the walk is
 * services/sync_walk.c).
 *
 * The sync walk (sync_walk.c, md's md_do_sync) is generic: it cuts the array
 * into regions, hands them to its workers, paces them, retires them in
 * order and keeps checkpoints and progress.  It also owns each region's
 * rows: it locks them at the array's range lock before the region's work
 * and unlocks them when the work ends, or, for a rebuild whose level says
 * so (rf_sync_ops.hold_rebuilt, raid4/5/6), when it retires the region
 * after recovery_cp passed it.  What one region needs done (md's
 * sync_request) is the level's: rf_sync_ops.region (core.h), given a
 * struct rf_sync_work of a region whose rows are locked.  The level reads
 * and writes the members through the worker's own IO queue (rf_sync_io(),
 * rf_sync_io_wait()) and reports what it found (rf_sync_mismatch(),
 * rf_sync_found_bad()).  Every function here is called on the worker's
 * thread only, and takes no lock but the walk's leaf s->lock (sync_int.h;
 * engine.h's lock order) for the counters.
 *
 * Invariant: the rows a level's work reads and writes are the region's,
 * locked for the whole of the work; the level neither locks nor unlocks
 * them.
 *
 * It does NOT pace, order or checkpoint regions, or lock their rows (the
 * walk does), and the level never waits for another region.
 */
#ifndef RAIDFUSE_SYNCWORK_H
#define RAIDFUSE_SYNCWORK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "raidfuse/ioq.h"
#include "raidfuse/sync.h"

#define RF_SYNC_BLK 4096u                       /* compare unit, md's STRIPE_SIZE */
#define RF_SYNC_BLK_SECTORS (RF_SYNC_BLK / 512)
#define RF_SYNC_REGION_MAX (1u << 20)           /* bytes per member per region, at most */
#define RF_SYNC_REGION_BLKS (RF_SYNC_REGION_MAX / RF_SYNC_BLK)

/* One region's work, owned by the worker running it. */
struct rf_sync_work {
	struct rf_array *a;
	enum rf_sync_action act;
	uint64_t pos;                   /* where the region starts, in the walk's units */
	uint64_t n;                     /* its sectors (the walk clipped it with sync_clip) */
	/* Buffers: RF_SYNC_REGION_MAX bytes per member, and scratch blocks
	 * of RF_SYNC_BLK bytes (zero holds zeros). */
	char *buf[RF_MAX_MEMBERS];
	char *p, *q, *delta, *qq, *zero;
	/* Blocks of buf[m] to write back (rf_sync_write_dirty clears them). */
	uint8_t dirty[RF_MAX_MEMBERS][RF_SYNC_REGION_BLKS];
	/* Members whose buf[m] points into their mapping (rf_sync_map()):
	 * read-only, and read only under rf_fdmap_guarded(). */
	uint64_t mapped;
	/* The walk's, for the calls below (the level leaves them alone):
	 * its worker's member IO queue and room for a region's member IO,
	 * each member's buffer of the worker's own (buf[m] again after a
	 * mapping), and where findings go. */
	struct rf_ioq *ioq;
	struct rf_mio *mios;
	int nmios, io_pending, io_err;
	char *own[RF_MAX_MEMBERS];
	const struct rf_sync_report *report;
	void *report_priv;
};

/* Where a region's findings go (the walk's status), on the worker's
 * thread. */
struct rf_sync_report {
	void (*mismatch)(void *priv, uint64_t sectors);
	/* true: the level logs it (the first few of a run). */
	bool (*found_bad)(void *priv, int m, uint64_t where);
	/* len bytes were lent from a member's mapping instead of read. */
	void (*mapped)(void *priv, uint32_t len);
};

/* Queue a read (or write) of len bytes of member m at member sector sec,
 * into (from) buf. */
void rf_sync_io(struct rf_sync_work *w, int m, bool write, char *buf, uint32_t len, uint64_t sec);
/* Instead of a read of the region's len bytes of member m from member
 * sector sec (the region's start): buf[m] pointed at them in the
 * member's mapping, when it is mapped (fdmap.h: a file in memory) and its
 * reads are plain (no layer, NBD export, fault injection or io log).
 * true: done, no read to queue; the level may not write into buf[m]
 * (rf_sync_own() first) and reads it under rf_fdmap_guarded() only, where
 * a fault (a member shrunk under its mapping) ends the computation with
 * -EFAULT: the level then calls rf_sync_unmap() and reads the usual way,
 * whose short read fails the member.  The walk gives every buf[m] back
 * after the region. */
bool rf_sync_map(struct rf_sync_work *w, int m, uint32_t len, uint64_t sec);
/* buf[m] the worker's own buffer again, holding the first len bytes the
 * mapping held (guarded: it reads the mapping); nothing if not mapped. */
void rf_sync_own(struct rf_sync_work *w, int m, uint32_t len);
/* Every buf[m] the worker's own again, with nothing copied. */
void rf_sync_unmap(struct rf_sync_work *w);
/* Submit what was queued and wait for all of it: 0, or the first error
 * (its member is marked faulty). */
int rf_sync_io_wait(struct rf_sync_work *w);
/* Queue writes of the dirty blocks of buf (nblk blocks, bytes long) to
 * member m at member sector sec, one per run, and clear them; with err
 * set only clear them. */
void rf_sync_write_dirty(struct rf_sync_work *w, int m, char *buf, uint8_t *dirty, int nblk, uint32_t bytes,
			 uint64_t sec, int err);
/* A check or repair found sectors sectors that disagree (mismatch_cnt). */
void rf_sync_mismatch(struct rf_sync_work *w, uint64_t sectors);
/* A check or repair found the one wrong block of a row on member m, at
 * where (array sector, or member sector): recorded in the status; true
 * when the level should log it (the first few of a run). */
bool rf_sync_found_bad(struct rf_sync_work *w, int m, uint64_t where);

#endif
