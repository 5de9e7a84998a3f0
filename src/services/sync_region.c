/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sync_region.c - one region of the sync walk, on the thread of the
 * worker that took it: the work it is given (the level's, struct
 * rf_sync_ops' region, or a replacement's copy) and where what that work
 * finds goes (the walk's status: mismatch_cnt, the one wrong block a
 * check names, the member bytes lent from mappings).
 *
 * Each worker's IO queue is of the array's own backend (liburing, or
 * whatever the array was given: fault injection, overlays), so the
 * members see the same IO path as the workers'; a region queues its reads
 * (or writes) of every member at once and waits for them all
 * (core/syncwork.c).  The region's rows are locked at the array's range
 * lock for the whole of its run: the walk (sync_walk.c) locks them before
 * it and unlocks them after it, or when it retires the region (a
 * raid4/5/6 rebuild); the work here runs in a locked region and never
 * locks or unlocks them.  Every buffer lent from a member's mapping is
 * given back at the region's end.
 *
 * Locks: the findings are counted under s->lock (sync_int.h, a leaf), the
 * bytes lent from mappings in a relaxed atomic counter.
 *
 * It does NOT choose, pace or retire regions, lock their rows, or set up
 * a worker's buffers and IO queue (sync_walk.c), compute anything of a
 * level's (levels/raid1.c, levels/raid5_sync.c), nor do the member IO it
 * calls (core/syncwork.c).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "raidfuse/log.h"
#include "raidfuse/sync.h"
#include "core/syncwork.h"
#include "services/sync_int.h"

#define MAX_NAMED_LOGS 64               /* raid6 naming lines per run */

/* What a region's work found goes to the status (rf_sync_get()); the
 * walk gives every worker's work rf_sync_findings, with its struct
 * rf_sync as report_priv. */
static void report_mismatch(void *priv, uint64_t sectors)
{
	struct rf_sync *s = priv;

	pthread_mutex_lock(&s->lock);
	s->mismatches += sectors;
	pthread_mutex_unlock(&s->lock);
}

static bool report_found_bad(void *priv, int m, uint64_t where)
{
	struct rf_sync *s = priv;
	int nlogged;

	pthread_mutex_lock(&s->lock);
	s->bad_member = m;
	s->bad_sector = where;
	s->bad_found++;
	nlogged = ++s->nlogged;
	pthread_mutex_unlock(&s->lock);
	if (nlogged == MAX_NAMED_LOGS + 1)
		rf_warn("%s: more wrong blocks named; not logging them", rf_array_name(s->a));
	return nlogged <= MAX_NAMED_LOGS;
}

static void report_mapped(void *priv, uint32_t len)
{
	struct rf_sync *s = priv;

	atomic_fetch_add_explicit(&s->mapped, len, memory_order_relaxed);
}

const struct rf_sync_report rf_sync_findings = {
	.mismatch = report_mismatch,
	.found_bad = report_found_bad,
	.mapped = report_mapped,
};

/* A region of a replacement's copy (md's replace; core/replace.c): each
 * slot being replaced is read from its device and written to its
 * replacement, the region's rows locked by the walk.  The walk's units are
 * member sectors (the level's table, or its rebuild's).  Not the level's
 * work: the slot's device holds the data, nothing is computed. */
static int replace_region(struct rf_sync_work *work)
{
	struct rf_array *a = work->a;
	uint32_t len = (uint32_t)(work->n * 512);
	uint64_t rep = rf_replace_mask(a) & ~rf_replace_failed_mask(a), r;
	int ret;

	for (r = rep; r; r &= r - 1)
		rf_sync_io(work, __builtin_ctzll(r), false, work->buf[__builtin_ctzll(r)], len, work->pos);
	ret = rf_sync_io_wait(work);
	for (r = rep; r && !ret; r &= r - 1) {
		int k = __builtin_ctzll(r);

		rf_sync_io(work, rf_replace_dev_of(a, k), true, work->buf[k], len, work->pos);
	}
	if (!ret)
		ret = rf_sync_io_wait(work);
	return ret;
}

/* Run the region handed to w, its rows locked: the level's work, or a
 * replacement's copy. */
int rf_sync_region_run(struct sync_worker *w, enum rf_sync_action act)
{
	struct rf_sync_work *work = &w->work;
	int ret;

	work->act = act;
	work->pos = w->cur->lo;
	work->n = w->cur->n;
	ret = w->s->replace ? replace_region(work) : w->s->ops->region(work);
	rf_sync_unmap(work);
	return ret;
}
