/* SPDX-License-Identifier: GPL-2.0-or-later */
/* barrier.c - the drain barrier: how a reconfiguration holds requests.
 *
 * Every request passes the barrier in rf_req_submit() and counts in
 * a->inflight[class] until its done() has returned.  A reconfiguration sets
 * hold bits, then waits for the held classes' inflight counts to reach
 * zero; requests that arrive meanwhile wait on a->held (no thread waits
 * with them).  Release resubmits a->held in arrival order while
 * RF_HOLD_RELEASING still sends newcomers to the back of that queue, so no
 * request is left behind and none overtakes an older one.
 *
 * The fast path is lock-free: the submitter bumps inflight, then re-reads
 * hold; the drainer sets hold, then reads inflight (both sequentially
 * consistent), so at least one of them sees the other.
 *
 * Locks: reconf_lock (outermost) serialises reconfigurations, and every
 * drain happens under it; bar_lock guards a->held and the changes of
 * a->hold, and is never held while waiting for another lock (lock order:
 * engine.h).  The sync thread's row lock (rf_writes_hold) is this
 * barrier's write hold.
 *
 * What it does NOT do: split or run requests (request.c), or decide what
 * a reconfiguration changes (its caller's fn).
 */

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/engine.h"

int rf_req_class(const struct rf_req *r)
{
	return r->op != RF_REQ_READ;
}

static unsigned rf_class_hold(int cls)
{
	return cls ? RF_HOLD_WRITES : RF_HOLD_READS;
}

void rf_barrier_exit(struct rf_array *a, int cls)
{
	if (atomic_fetch_sub(&a->inflight[cls], 1) == 1 && atomic_load(&a->hold)) {
		pthread_mutex_lock(&a->bar_lock);
		pthread_cond_broadcast(&a->bar_cond);
		pthread_mutex_unlock(&a->bar_lock);
	}
}

/* The lock-free way in: counted in inflight[cls] unless cls is held. */
static bool barrier_try(struct rf_array *a, int cls, unsigned bits)
{
	if (atomic_load(&a->hold) & bits)
		return false;
	atomic_fetch_add(&a->inflight[cls], 1);
	if (!(atomic_load(&a->hold) & bits))
		return true;
	rf_barrier_exit(a, cls);
	return false;
}

bool rf_barrier_try_read(struct rf_array *a)
{
	return barrier_try(a, 0, RF_HOLD_READS | RF_HOLD_RELEASING);
}

/* Whether r may go on now; false: it waits on a->held. */
bool rf_barrier_enter(struct rf_array *a, struct rf_req *r)
{
	int cls = rf_req_class(r);
	unsigned bits = rf_class_hold(cls) | RF_HOLD_RELEASING;
	bool go = false;

	if (barrier_try(a, cls, bits))
		return true;
	/* r may wait here past its submitter's call. */
	rf_req_unlend(r);
	pthread_mutex_lock(&a->bar_lock);
	if (!(atomic_load(&a->hold) & bits)) {
		/* Released since: hold only changes under bar_lock. */
		atomic_fetch_add(&a->inflight[cls], 1);
		go = true;
	} else {
		STAILQ_INSERT_TAIL(&a->held, r, held_link);
	}
	pthread_mutex_unlock(&a->bar_lock);
	return go;
}

/* Hold new requests of the classes in bits and wait until none of them is
 * in flight.  reconf_lock held. */
void rf_drain(struct rf_array *a, unsigned bits)
{
	pthread_mutex_lock(&a->bar_lock);
	atomic_fetch_or(&a->hold, bits);
	while (((bits & RF_HOLD_READS) && atomic_load(&a->inflight[0])) ||
	       ((bits & RF_HOLD_WRITES) && atomic_load(&a->inflight[1])))
		pthread_cond_wait(&a->bar_cond, &a->bar_lock);
	pthread_mutex_unlock(&a->bar_lock);
}

/* Stop holding, except the classes in keep, and resubmit every waiting
 * request that is no longer held, oldest first.  reconf_lock held.
 *
 * Requests that arrive meanwhile queue behind the held ones; the loop
 * ends when the queue is empty.  So the loop must be quick: it only
 * splits and queues (pieces on their heads, member IO on the releaser's
 * inline worker), and the member IO runs after the barrier is open. */
void rf_release(struct rf_array *a, unsigned keep)
{
	STAILQ_HEAD(, rf_req) kept = STAILQ_HEAD_INITIALIZER(kept);
	struct rf_worker *w, *saved = NULL;
	int err;

	w = rf_inline_begin(a, &saved, &err);
	pthread_mutex_lock(&a->bar_lock);
	atomic_store(&a->hold, keep | RF_HOLD_RELEASING);
	while (!STAILQ_EMPTY(&a->held)) {
		STAILQ_HEAD(, rf_req) batch = STAILQ_HEAD_INITIALIZER(batch);
		struct rf_req *r, *next;

		STAILQ_CONCAT(&batch, &a->held);
		pthread_mutex_unlock(&a->bar_lock);
		for (r = STAILQ_FIRST(&batch); r; r = next) {
			int cls = rf_req_class(r);

			next = STAILQ_NEXT(r, held_link);
			if (keep & rf_class_hold(cls)) {
				STAILQ_INSERT_TAIL(&kept, r, held_link);
				continue;
			}
			atomic_fetch_add(&a->inflight[cls], 1);
			if (!rf_range_enter(a, r))
				continue;               /* a sync region holds it now */
			if (err)
				rf_submit_now(a, r);       /* ends it: no inline worker */
			else
				rf_queue_req(a, r, w);
		}
		pthread_mutex_lock(&a->bar_lock);
	}
	/* What stays held keeps its order; nothing newer is queued now. */
	STAILQ_CONCAT(&a->held, &kept);
	atomic_store(&a->hold, keep);
	pthread_mutex_unlock(&a->bar_lock);
	/* reconf_lock is held: no drain reshapes the groups under w. */
	if (w)
		rf_inline_end(a, w, saved);
}

/* The services told of a change of the array's table (hooks.h reconf). */
static void reconf_hooks(struct rf_array *a, bool begin)
{
	int k;

	for (k = 0; k < a->nhooks; k++)
		if (a->hooks[k].h->reconf)
			a->hooks[k].h->reconf(a->hooks[k].priv, begin);
}

static int quiesced(struct rf_array *a, unsigned bits, int (*fn)(void *arg), void *arg)
{
	int ret;

	pthread_mutex_lock(&a->reconf_lock);
	rf_drain(a, bits);
	if (bits == RF_HOLD_ALL)
		reconf_hooks(a, true);
	ret = fn(arg);
	if (bits == RF_HOLD_ALL) {
		a->shape_gen++;
		reconf_hooks(a, false);
	}
	rf_release(a, a->suspended ? RF_HOLD_WRITES : 0);
	pthread_mutex_unlock(&a->reconf_lock);
	return ret;
}

int rf_barrier_quiesced(struct rf_array *a, int (*fn)(void *arg), void *arg)
{
	return quiesced(a, RF_HOLD_WRITES, fn, arg);
}

int rf_barrier_quiesced_all(struct rf_array *a, int (*fn)(void *arg), void *arg)
{
	return quiesced(a, RF_HOLD_ALL, fn, arg);
}

int rf_barrier_suspend(struct rf_array *a)
{
	pthread_mutex_lock(&a->reconf_lock);
	if (!a->suspended) {
		rf_drain(a, RF_HOLD_WRITES);
		a->suspended = true;
		rf_info("%s: suspended: writes wait until array_state is set to active", a->name);
	}
	pthread_mutex_unlock(&a->reconf_lock);
	return 0;
}

int rf_barrier_resume(struct rf_array *a)
{
	pthread_mutex_lock(&a->reconf_lock);
	if (a->suspended) {
		a->suspended = false;
		rf_release(a, 0);
		rf_info("%s: active again", a->name);
	}
	pthread_mutex_unlock(&a->reconf_lock);
	return 0;
}

void rf_writes_hold(struct rf_array *a)
{
	pthread_mutex_lock(&a->reconf_lock);
	rf_drain(a, RF_HOLD_WRITES);
}

void rf_writes_release(struct rf_array *a)
{
	rf_release(a, a->suspended ? RF_HOLD_WRITES : 0);
	pthread_mutex_unlock(&a->reconf_lock);
}

/* ---- the sync regions' range lock (rangelock.c) ----
 *
 * Past the barrier, while a sync walk runs (a->rl armed), a write is
 * admitted at the range lock over the rows it touches (rf_array_write_rows() maps them):
 * one that overlaps a region being synced is queued there and stops
 * counting at the barrier, so no drain ever waits for a region (a region
 * may take reconf_lock to drop cached heads); the region's unlock hands
 * it back through rf_range_resubmit(), which submits it afresh (barrier
 * first).  A write admitted is tracked until it ends (req_put()), so a
 * region waits for the writes in flight in its rows.  Unarmed, a write
 * pays one atomic load.  The walk arms with writes drained
 * (rf_sync_rows_begin()), so no write in flight then goes untracked.
 * Flushes and reads are not admitted: flushes change no rows, and reads
 * go on during a region (sync_walk.c says why that is right). */

bool rf_range_enter(struct rf_array *a, struct rf_req *r)
{
	uint64_t lo, hi;
	int cls = rf_req_class(r);

	if (r->op != RF_REQ_WRITE || !rf_rangelock_armed(&a->rl))
		return true;
	/* r may wait for a region past its submitter's call. */
	rf_req_unlend(r);
	rf_array_write_rows(a, r->off, r->len, &lo, &hi);
	if (!rf_rangelock_admit(&a->rl, &r->rl, lo, hi))
		return true;
	/* r may be handed back and end at any time from here. */
	rf_barrier_exit(a, cls);
	return false;
}

void rf_range_resubmit(struct rf_rl_ent *e, void *priv)
{
	struct rf_req *r = (struct rf_req *)((char *)e - offsetof(struct rf_req, rl));

	rf_req_submit(priv, r);
}

void rf_sync_rows_begin(struct rf_array *a, const struct rf_sync_ops *units)
{
	rf_writes_hold(a);
	a->rows_ops = units;
	rf_rangelock_arm(&a->rl);
	rf_writes_release(a);
}

void rf_sync_rows_end(struct rf_array *a)
{
	rf_rangelock_disarm(&a->rl);
}
