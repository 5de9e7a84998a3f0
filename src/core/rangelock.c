/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rangelock.c - locks on ranges of rows for the sync walk (rangelock.h).
 *
 * Purpose.  A sync region reads, compares and rewrites a run of rows
 * behind the stripe cache's back.  No foreground write may be planned or
 * in flight on those rows meanwhile, or the region would compare (and
 * "repair") a half-written row, or a rebuild would copy data older than a
 * write that skipped the device being rebuilt.  Writes elsewhere have no
 * reason to wait, and several regions may run at once.
 *
 * How.  The lock keeps the locked ranges and the admitted writes in
 * flight, both under one mutex.  A write overlapping a locked range is
 * queued on that range: no thread waits with it (the submitter returns,
 * as at the drain barrier), and the unlocker hands back the whole queue,
 * oldest first, after taking it off the range under the same mutex that
 * queued it: a write is either seen by the unlock or does not see the
 * range, never neither (the drain barrier's lost wake-up cannot happen).
 * A locker first puts its range in the list (writes that come after are
 * queued), then waits until no tracked write in flight overlaps it.
 *
 * Why per-write tracking rather than an epoch.  An epoch scheme (count
 * writes per epoch, flip the epoch, wait for the old one to empty) costs
 * the same one atomic per write, but a region then waits for EVERY write
 * in flight, wherever it goes, and with several regions locking one after
 * another each flip waits again for the whole queue depth of the
 * foreground.  Tracking each write on a list costs a mutex round trip at
 * its start and its end while a walk runs, and a region waits only for
 * the writes in its own rows; the list is as long as the foreground's
 * queue depth (tens), scanned only by lockers.  While no walk runs
 * (unarmed) none of this happens: a write pays one atomic load.
 *
 * Invariants.  A range on rl->ranges has no tracked write in flight that
 * overlaps it once its lock() has returned, and none is admitted while it
 * is there.  An entry is on at most one list; state says which.
 *
 * It does NOT order ranges among themselves (the walk hands out disjoint
 * regions), know what a row is (the caller maps writes to rows), hold
 * reads (see sync_walk.c), or arm itself safely: arming needs the writes
 * drained, which is the array's barrier's job.
 */
#include <errno.h>
#include <stddef.h>

#include "raidfuse/lockcheck.h"
#include "raidfuse/rangelock.h"

int rf_rangelock_init(struct rf_rangelock *rl, rf_rl_resubmit_fn resubmit, void *priv)
{
	int ret;

	atomic_init(&rl->armed, 0);
	atomic_init(&rl->nwaiting, 0);
	LIST_INIT(&rl->ranges);
	LIST_INIT(&rl->inflight);
	rl->lockers = 0;
	rl->nheld = 0;
	rl->resubmit = resubmit;
	rl->priv = priv;
	ret = pthread_mutex_init(&rl->lock, NULL);
	if (ret)
		return -ret;
	rf_lock_rank(&rl->lock, RF_LOCK_LEAF, "range lock");
	ret = pthread_cond_init(&rl->cond, NULL);
	if (ret) {
		pthread_mutex_destroy(&rl->lock);
		return -ret;
	}
	return 0;
}

void rf_rangelock_destroy(struct rf_rangelock *rl)
{
	pthread_cond_destroy(&rl->cond);
	pthread_mutex_destroy(&rl->lock);
}

void rf_rangelock_arm(struct rf_rangelock *rl)
{
	atomic_fetch_add(&rl->armed, 1);
}

void rf_rangelock_disarm(struct rf_rangelock *rl)
{
	atomic_fetch_sub(&rl->armed, 1);
}

static bool overlaps(uint64_t lo1, uint64_t hi1, uint64_t lo2, uint64_t hi2)
{
	return lo1 < hi2 && lo2 < hi1;
}

/* rl->lock held: the locked range e overlaps, or NULL. */
static struct rf_range *range_of(struct rf_rangelock *rl, const struct rf_rl_ent *e)
{
	struct rf_range *r;

	LIST_FOREACH(r, &rl->ranges, link)
		if (overlaps(r->lo, r->hi, e->lo, e->hi))
			return r;
	return NULL;
}

int rf_rangelock_admit(struct rf_rangelock *rl, struct rf_rl_ent *e, uint64_t lo, uint64_t hi)
{
	struct rf_range *r;
	int queued = 0;

	e->lo = lo;
	e->hi = hi;
	pthread_mutex_lock(&rl->lock);
	r = range_of(rl, e);
	if (r) {
		e->state = RF_RL_QUEUED;
		STAILQ_INSERT_TAIL(&r->queue, e, wait);
		r->nqueued++;
		rl->nheld++;
		atomic_fetch_add(&rl->nwaiting, 1);
		queued = 1;
	} else {
		LIST_INSERT_HEAD(&rl->inflight, e, live);
		e->state = RF_RL_INFLIGHT;
	}
	pthread_mutex_unlock(&rl->lock);
	return queued;
}

void rf_rangelock_end(struct rf_rangelock *rl, struct rf_rl_ent *e)
{
	if (e->state != RF_RL_INFLIGHT)
		return;
	pthread_mutex_lock(&rl->lock);
	LIST_REMOVE(e, live);
	e->state = RF_RL_NONE;
	if (rl->lockers)
		pthread_cond_broadcast(&rl->cond);
	pthread_mutex_unlock(&rl->lock);
}

/* rl->lock held: whether a tracked write in flight overlaps r. */
static bool busy(struct rf_rangelock *rl, const struct rf_range *r)
{
	struct rf_rl_ent *e;

	LIST_FOREACH(e, &rl->inflight, live)
		if (overlaps(r->lo, r->hi, e->lo, e->hi))
			return true;
	return false;
}

void rf_rangelock_lock(struct rf_rangelock *rl, struct rf_range *r, uint64_t lo, uint64_t hi)
{
	r->lo = lo;
	r->hi = hi;
	STAILQ_INIT(&r->queue);
	r->nqueued = 0;
	pthread_mutex_lock(&rl->lock);
	LIST_INSERT_HEAD(&rl->ranges, r, link);
	while (busy(rl, r)) {
		rl->lockers++;
		pthread_cond_wait(&rl->cond, &rl->lock);
		rl->lockers--;
	}
	pthread_mutex_unlock(&rl->lock);
}

void rf_rangelock_unlock(struct rf_rangelock *rl, struct rf_range *r)
{
	STAILQ_HEAD(, rf_rl_ent) back = STAILQ_HEAD_INITIALIZER(back);
	struct rf_range *x;
	struct rf_rl_ent *e, *next;

	pthread_mutex_lock(&rl->lock);
	LIST_FOREACH(x, &rl->ranges, link)
		if (x == r)
			break;
	if (x)
		LIST_REMOVE(r, link);
	STAILQ_CONCAT(&back, &r->queue);
	atomic_fetch_sub(&rl->nwaiting, r->nqueued);
	r->nqueued = 0;
	STAILQ_FOREACH(e, &back, wait)
		e->state = RF_RL_NONE;
	pthread_mutex_unlock(&rl->lock);
	/* Off the lists: each entry is ours until handed back. */
	for (e = STAILQ_FIRST(&back); e; e = next) {
		next = STAILQ_NEXT(e, wait);
		rl->resubmit(e, rl->priv);
	}
}

unsigned rf_rangelock_queued(struct rf_rangelock *rl, struct rf_range *r)
{
	unsigned n;

	pthread_mutex_lock(&rl->lock);
	n = r->nqueued;
	pthread_mutex_unlock(&rl->lock);
	return n;
}
