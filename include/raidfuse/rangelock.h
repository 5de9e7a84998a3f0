/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rangelock.h - locks on ranges of rows, for the sync walk's regions.
 *
 * A range is [lo, hi) in the walk's units (member sectors; array sectors
 * for raid10).  A region locks its range; a write whose rows overlap a
 * locked range is queued on it and handed back, in arrival order, when
 * the range unlocks; any other write goes on and is tracked in flight
 * until it ends, so that a region about to lock waits for the writes
 * already in its range.
 *
 * Tracking is on only while the lock is armed (a walk runs).  Arming and
 * disarming are the caller's: arm with no write in flight and none being
 * admitted (the array's drain barrier), so that every write admitted
 * after is tracked; disarm only with no range locked.  Unarmed, a write
 * pays one atomic load (rf_rangelock_armed()) and nothing else.
 *
 * Lock order: rl->lock is a leaf; it is never held while calling out
 * (the resubmit function runs after it is dropped).
 */
#ifndef RAIDFUSE_RANGELOCK_H
#define RAIDFUSE_RANGELOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

enum rf_rl_state {
	RF_RL_NONE,             /* not known to the lock */
	RF_RL_INFLIGHT,         /* admitted, on rl->inflight until rf_rangelock_end() */
	RF_RL_QUEUED,           /* waiting on a range's queue */
};

/* One write, embedded in its request.  rl->lock, except that its owner
 * may read state once the admission or the resubmit has returned it. */
struct rf_rl_ent {
	uint64_t lo, hi;
	LIST_ENTRY(rf_rl_ent) live;     /* rl->inflight */
	STAILQ_ENTRY(rf_rl_ent) wait;   /* a range's queue */
	uint8_t state;                  /* enum rf_rl_state */
};

/* One locked range: the locker's, from rf_rangelock_lock() to
 * rf_rangelock_unlock(); rl->lock for the fields. */
struct rf_range {
	uint64_t lo, hi;
	LIST_ENTRY(rf_range) link;              /* rl->ranges */
	STAILQ_HEAD(, rf_rl_ent) queue;         /* writes waiting for it, oldest first */
	unsigned nqueued;                       /* how many are queued now */
};

/* Hand a queued write back to its submitter's path: called by the
 * unlocker, outside rl->lock, once per write, oldest first.  It usually
 * admits the write again (it may meet another locked range). */
typedef void (*rf_rl_resubmit_fn)(struct rf_rl_ent *e, void *priv);

struct rf_rangelock {
	atomic_uint armed;              /* walks that want writes tracked; see above */
	atomic_uint nwaiting;           /* writes queued on ranges now (written under lock) */
	pthread_mutex_t lock;
	pthread_cond_t cond;            /* a tracked write ended: lockers look again */
	/* lock: */
	LIST_HEAD(, rf_range) ranges;   /* locked ranges (disjoint, the walk's regions) */
	LIST_HEAD(, rf_rl_ent) inflight; /* admitted writes not ended */
	unsigned lockers;               /* threads waiting in rf_rangelock_lock() */
	uint64_t nheld;                 /* writes ever queued (a statistic) */
	rf_rl_resubmit_fn resubmit;     /* immutable */
	void *priv;
};

/* Returns 0 or -errno (pthread). */
int rf_rangelock_init(struct rf_rangelock *rl, rf_rl_resubmit_fn resubmit, void *priv);
void rf_rangelock_destroy(struct rf_rangelock *rl);

/* See the essay: with no write in flight or being admitted. */
void rf_rangelock_arm(struct rf_rangelock *rl);
void rf_rangelock_disarm(struct rf_rangelock *rl);

/* The write fast path: whether writes must be admitted at all. */
static inline bool rf_rangelock_armed(struct rf_rangelock *rl)
{
	/* Pairs with the barrier the caller arms under (see the essay). */
	return atomic_load(&rl->armed) != 0;
}

/* Admit the write e over [lo, hi): 0 when it may go on (tracked in flight
 * until rf_rangelock_end()), 1 when it was queued on a locked range that
 * overlaps it (the resubmit function gets it back).  e->state must be
 * RF_RL_NONE. */
int rf_rangelock_admit(struct rf_rangelock *rl, struct rf_rl_ent *e, uint64_t lo, uint64_t hi);
/* The admitted write e ended (a no-op unless it is in flight). */
void rf_rangelock_end(struct rf_rangelock *rl, struct rf_rl_ent *e);

/* Lock [lo, hi) with r (owned by the caller until unlocked): from now on
 * writes that overlap it are queued; then wait until no write in flight
 * overlaps it.  Blocks the caller.  Ranges locked at once must not
 * overlap each other. */
void rf_rangelock_lock(struct rf_rangelock *rl, struct rf_range *r, uint64_t lo, uint64_t hi);
/* Unlock r and hand back every write queued on it, oldest first. */
void rf_rangelock_unlock(struct rf_rangelock *rl, struct rf_range *r);

/* Writes queued on r now (tests and statistics). */
unsigned rf_rangelock_queued(struct rf_rangelock *rl, struct rf_range *r);

#endif
