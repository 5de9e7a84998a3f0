/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sync_walk.c - the sync walk itself (md's md_do_sync): its thread
 * (rf_sync_main()), which starts the workers, walks and reports the end,
 * and its workers, which run the regions; the regions cut at the walk's
 * cursor, paced, handed out and retired in order; the checkpoints; the
 * bitmap's jumps; the look at the foreground load that sets the pace.
 *
 * Several regions at once.  Workers (workers_wanted()), each with its own
 * buffers and its own IO queue on the array's backend (so overlays and
 * fault injection apply), run regions cut in order at the walk's cursor;
 * they are retired in the same order.  While the array is idle a worker
 * that ends a region retires what is done below it and cuts its next
 * region itself (may_cut()), up to WIN_PER_WORKER regions per worker
 * handed out, so the regions never wait for the walk thread: on a shared
 * machine a thread that must be woken for every region runs the walk at
 * the pace of its wake-ups (with the walk thread cutting every region,
 * the workers of an idle check on /dev/shm waited a quarter to half of
 * their time, and the daemon used about one of two cores).  The walk
 * thread (rf_sync_main) looks at the foreground load, renews the idle
 * verdict the workers cut under, cuts the regions itself while the
 * foreground is active (one at a time), makes the bitmap's jumps and
 * ends the walk.  It is not woken for every region: only when it waits
 * for one to end (busy, a bitmap jump, the end of the walk;
 * region_news()).
 *
 * Racing foreground writes: a lock on the region's rows, which the walk
 * owns (SPDK's process window).  A worker locks its region's rows at the
 * array's range lock (rangelock.c; the barrier admits every write there
 * while a walk runs) before it hands the region to its work, and unlocks
 * them when the work ends (run_region()), or at the region's retire()
 * (rebuild order, below): a write into them waits on the region's queue
 * (no FUSE thread waits with it), a write in flight in them ends first,
 * and writes to every other row never wait.  The work (the level's, or a
 * replacement's copy: sync_region.c) runs in the locked region and never
 * locks or unlocks rows itself: the region is read, compared and
 * rewritten, the stripe cache drops the heads of the rewritten rows
 * (their cached blocks would be older than the members), and then the
 * walk's unlock resubmits the writes that waited, in arrival order.  A
 * write is mapped to rows with its whole stripe heads (its parity's
 * read-modify-write), so a region's rows are exactly what no write may
 * touch meanwhile.  The walk arms the range lock once, with writes
 * drained at the barrier, so that no write in flight then escapes the
 * tracking; a write pays nothing but one atomic load while no walk runs.
 *
 * Reads go on during a region, as before the range lock: a non-degraded
 * read touches data blocks only, which a check never writes and a repair
 * or resync writes only where they were wrong (a read sees the old or the
 * new block, never a mix within 4 KiB); parity arrays are not checked
 * while degraded (nothing to compare against), and a rebuild writes only
 * the device being rebuilt, which reads of rows past recovery_cp do not
 * use.  Heads a read brings into the cache meanwhile are dropped with the
 * region's (rf_sync_rows_forget() waits for busy ones).
 *
 * Rebuild order.  On raid4/5/6 a write to rows at or past recovery_cp
 * skips the device being rebuilt, so a rebuilt region keeps its rows
 * locked until every region below it is done too: then recovery_cp moves
 * past it (with its cached heads dropped) and its rows unlock.  The level
 * says so (rf_sync_ops.hold_rebuilt) and the walk does it (hold_rows()):
 * the worker leaves the rows locked, and retire() unlocks them after the
 * region's checkpoint.  Mirrors write to the device being rebuilt always,
 * and every write of a slot being replaced reaches its replacement: their
 * regions unlock at once.
 *
 * Foreground first.  Before each region the walk looks at the barrier's
 * in-flight counters (and the writes waiting for regions): while
 * foreground requests are in flight it paces itself to sync_speed_min,
 * with one region of 64 KiB per member in flight; while idle it takes
 * 1 MiB regions (128 KiB when the workers read inline, inline_io()),
 * every worker busy, and paces to sync_speed_max.  Pacing is per region
 * handed out, so the walk reacts at once when the foreground starts, and
 * goes by a schedule (pace()): a region of n KiB moves the time the next
 * may be cut n / speed seconds on from where the schedule stood, not from
 * when the region was cut.  Timed from each cut, every region's interval
 * was n / speed plus however late its cut came (a worker held back by
 * the pace waited for the walk thread's next wake-up, 5 ms or more on a
 * loaded machine): a fixed cost per region, which held an idle check of
 * raid5 on /dev/shm to about 22 MiB/s per member whether sync_speed_max
 * was 50000 or 800000.  On the schedule a late cut is caught up, by at
 * most PACE_CREDIT seconds' worth, so over any T seconds a walk cuts at
 * most speed x (T + PACE_CREDIT) KiB and one region: sync_speed_max
 * caps it, and below the cap it runs as fast as the members and the CPUs
 * give.  A worker the pace holds back waits until the schedule lets it
 * cut, not for the walk thread.  speed reports KiB/s over the last few
 * seconds.
 *
 * Checkpoints.  The walk's position is the end of the last region retired
 * in order: every region below it is done, whatever regions above it are
 * in flight.  A resync reports it (every row below it in sync) through
 * the notify function every 1/16 of the walk or CP_SECONDS, and where it
 * ended: the superblock keeper records it as resync_offset, so a resync
 * interrupted by a crash or a stop resumes there.  recovery_cp (each
 * device's recovery_offset: one resumed from further along keeps its own
 * until the walk passes it) and the bitmap's walk (rf_bitmap_resync_done(),
 * rf_bitmap_rebuilt()) move the same way, in order; a rebuild reports its
 * checkpoints as a resync does, and the superblock keeper writes every
 * device's own.
 *
 * Locks: s->lock (sync_int.h), a leaf; retire() and skip_clean(), which
 * take others, run without it, and so do a region's lock and unlock of
 * its rows (the range lock's own mutex is a leaf too; a locked range is
 * no mutex held: the cached heads dropped meanwhile take reconf_lock).
 *
 * It does NOT take requests or report the status (sync.c starts
 * rf_sync_main() and reads what this file records), run a region's work
 * (sync_region.c: the level's, or a replacement's copy), nor do member IO
 * (core/syncwork.c, called by a region's work).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "core/core.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/ioq.h"
#include "raidfuse/log.h"
#include "raidfuse/rangelock.h"
#include "raidfuse/sync.h"
#include "raidfuse/util.h"
#include "core/syncwork.h"
#include "services/sync_int.h"

#define BLK RF_SYNC_BLK                 /* compare unit, md's STRIPE_SIZE */
#define REGION_IDLE RF_SYNC_REGION_MAX  /* bytes per member per region when idle */
#define REGION_BUSY (64u << 10)         /* while foreground IO is active */
#define REGION_INLINE (128u << 10)      /* idle, members read on the worker's thread */
#define SYNC_DEPTH 64                   /* each worker's IO queue */
#define SYNC_RING_WORKERS 3             /* workers when member IO goes through io_uring */
#define REGION_MEM_ALL (48u << 20)      /* every worker's region buffers together */
#define BUSY_HOLD 0.5                   /* seconds a foreground request keeps the array busy */
#define IDLE_LOOKS 4                    /* looks at the counters before calling the array idle */
#define IDLE_LOOK_US 100
#define PACE_POLL 0.005                 /* seconds between looks at the load while pacing */
#define PACE_CREDIT 0.1                 /* seconds of its speed a late walk may catch up at once */
#define CP_PARTS 16                     /* a resync checkpoint every 1/16 of the walk, */
#define CP_SECONDS 5.0                  /* or this often */

void (*rf_sync_test_looked)(void);

double rf_sync_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Whether foreground IO ran lately.  The barrier's in-flight counters are
 * a snapshot, and a queue-depth-1 user leaves gaps between requests: a
 * request seen in flight keeps the array busy for BUSY_HOLD seconds, and
 * an array that was busy lately (or a walk that just started) is looked at
 * a few more times before it counts as idle; one idle for long is looked
 * at once.  Those extra looks sleep: done every region, they cost an idle
 * walk most of its speed (3 x 100 us beside a 1 MiB region that takes
 * 1-2 ms here; a raid5 resync ran at a third of its speed), so an idle
 * verdict from them holds for IDLE_TRUST seconds, during which one look
 * (no sleep) per call still catches any request in flight. */
static bool fg_active(struct rf_sync *s)
{
	struct rf_array *a = s->a;
	double t = rf_sync_now();
	bool settled = t - s->last_busy >= BUSY_RECENT && t >= s->started + BUSY_RECENT;
	int i, looks = settled ? 1 : IDLE_LOOKS;

	/* Renewed before it runs out: the workers cut regions only under
	 * an idle verdict (may_cut()).  One idle for long gets it from its
	 * one look: without that renewal every walk longer than BUSY_RECENT
	 * fell back to this thread cutting every region, one per PACE_POLL
	 * (an idle check of raid5, 4 x 1 GiB on /dev/shm, at 18 MiB/s per
	 * member with sync_speed_max 150000). */
	if (t - s->last_idle < IDLE_TRUST / 2 && !settled)
		looks = 1;
	for (i = 0; i < looks; i++) {
		if (i) {
			pthread_mutex_unlock(&s->lock);
			usleep(IDLE_LOOK_US);
			pthread_mutex_lock(&s->lock);
		}
		/* Writes waiting for a region count: they left the barrier. */
		if (rf_array_fg_busy(a)) {
			s->last_busy = rf_sync_now();
			return true;
		}
	}
	t = rf_sync_now();
	if (t - s->last_busy < BUSY_HOLD)
		return true;
	if (looks > 1 || settled)
		s->last_idle = t;
	return false;
}

/* The sync ops a walk of act goes by: the level's, or its rebuild's own
 * (core.h: recover) unless the bitmap drives the rebuild (its chunks are
 * in the level's units). */
const struct rf_sync_ops *rf_sync_walk_ops(const struct rf_array *a, enum rf_sync_action act)
{
	const struct rf_sync_ops *ops = rf_array_sync_ops(a);

	if (ops && ops->recover && act == RF_SYNC_RECOVER &&
	    !(rf_array_bitmap(a) && rf_array_recover_dirty_only(a)))
		return ops->recover;
	return ops;
}

/* The walk's units: member sectors, or array sectors (the ops'; a level
 * without sync work has no walk, and reports its members' size). */
uint64_t rf_sync_walk_total(const struct rf_array *a, const struct rf_sync_ops *ops)
{
	return ops ? ops->total(a) : rf_array_geom(a)->dev_sectors;
}

/* The walk's position pos and md's recovery_offset (member sectors):
 * what a rebuild that walked [0, pos) wrote, and where one resumes. */
static uint64_t dev_offset(const struct rf_array *a, const struct rf_sync_ops *ops, uint64_t pos)
{
	return ops && ops->dev_offset ? ops->dev_offset(a, pos) : pos;
}

uint64_t rf_sync_walk_start(const struct rf_array *a, const struct rf_sync_ops *ops, uint64_t dev_off)
{
	return ops && ops->walk_start ? ops->walk_start(a, dev_off) : dev_off;
}

/* ---- the walk ----
 *
 * Regions are cut in order at the walk's cursor (s->k.next) and retired in
 * the same order (retire()): the walk's position, its checkpoints,
 * recovery_cp and the bitmap's walk move only past regions that are done,
 * all of whose lower neighbours are done too.  While the array is idle a
 * worker cuts its next region itself and retires what ended below it, so
 * the regions go from worker to worker without waiting for the walk
 * thread (on a shared machine that thread is scheduled when it is
 * scheduled: with workers waiting for it, the walk ran at the pace of its
 * wake-ups, its workers idle half the time).  The walk thread looks at
 * the foreground load, cuts the regions while it is busy (one at a time,
 * paced), makes the bitmap's jumps and ends the walk.
 */

/* s->lock held: a region of n sectors was cut at t, under a limit of
 * speed KiB/s: the next may be cut n / speed seconds further on the
 * schedule (a walk starts it at its start).  A schedule more than
 * PACE_CREDIT seconds behind t (the walk was held up: cut late, busy at
 * sync_speed_min, stopped for a bitmap jump) moves up to that first: a
 * walk catches up late cuts, and never more than that many seconds of
 * its speed at once. */
static void pace(struct walk *k, uint64_t n, unsigned speed, double t)
{
	if (k->pace_next < t - PACE_CREDIT)
		k->pace_next = t - PACE_CREDIT;
	k->pace_next += (double)n / 2 / (speed ? speed : 1);
}

/* s->lock held: cut the next region at the cursor, at the tail of the
 * window, READY; the load says how large. */
static struct region *cut(struct rf_sync *s, bool busy)
{
	struct walk *k = &s->k;
	struct region *g = &s->win[(s->win_head + s->win_count) % WIN_MAX];

	g->lo = k->next;
	g->n = (busy ? REGION_BUSY : s->region_max) / 512;
	if (g->n > k->run_end - k->next)
		g->n = k->run_end - k->next;
	g->n = s->ops->clip(s->a, k->next, g->n);
	g->state = REG_READY;
	g->ret = 0;
	s->win_count++;
	k->next += g->n;
	pace(k, g->n, busy ? s->speed_min : s->speed_max, rf_sync_now());
	return g;
}

/* s->lock held: whether a worker may cut the next region itself now.
 * Only while the walk thread's looks found the array idle lately (an idle
 * verdict holds IDLE_TRUST seconds) and one look finds nothing in flight
 * still, with room in the window, the schedule of sync_speed_max there
 * (pace()), and no bitmap jump, error or stop pending; otherwise the walk
 * thread cuts.  *at: when only the schedule holds the worker back, when
 * it lets it cut (rf_sync_now()'s clock); else 0. */
static bool may_cut(struct rf_sync *s, double *at)
{
	struct walk *k = &s->k;
	double t;

	*at = 0;
	if (s->stop || k->ret || k->next >= k->run_end || s->win_count >= s->win_limit)
		return false;
	t = rf_sync_now();
	if (t - s->last_idle >= IDLE_TRUST || t - s->last_busy < BUSY_HOLD)
		return false;
	if (rf_array_fg_busy(s->a)) {
		/* The walk thread goes to one region at a time. */
		s->last_busy = t;
		pthread_cond_broadcast(&s->cond);
		return false;
	}
	if (k->pace_next > t) {
		*at = k->pace_next;
		return false;
	}
	return true;
}

/* s->lock held: wait on cond until at (rf_sync_now()'s clock) at the latest. */
static void wait_until(struct rf_sync *s, pthread_cond_t *cond, double at)
{
	struct timespec ts;
	double secs = at - rf_sync_now();

	clock_gettime(CLOCK_REALTIME, &ts);
	if (secs > 0)
		rf_timespec_add_ns(&ts, (int64_t)(secs * 1e9));
	pthread_cond_timedwait(cond, &s->lock, &ts);
}

static void retire(struct rf_sync *s, struct region *g);

/* s->lock held: a region ended (or was retired).  Only the walk thread
 * waits for that, and only at times (busy, a bitmap jump, the end): a
 * wake-up for every region of an idle walk, whose workers cut their own,
 * took s->lock and a core from them (on 2 cores, members on /dev/shm,
 * 1.4 context switches per region and the daemon at 1.5 of 2 cores). */
static void region_news(struct rf_sync *s)
{
	if (s->news_wanted)
		pthread_cond_broadcast(&s->cond);
}

/* s->lock held: retire the regions done at the head of the window, in
 * order, unless another thread is retiring (it retires them).  s->lock is
 * let go meanwhile. */
static void retire_done(struct rf_sync *s)
{
	bool any = false;

	while (!s->retiring && s->win_count && s->win[s->win_head].state == REG_DONE) {
		/* Its slot is not reused before retire() is done. */
		s->retiring = true;
		pthread_mutex_unlock(&s->lock);
		retire(s, &s->win[s->win_head]);
		pthread_mutex_lock(&s->lock);
		s->retiring = false;
		s->win_head = (s->win_head + 1) % WIN_MAX;
		s->win_count--;
		s->taken--;
		any = true;
	}
	if (any) {
		region_news(s);
		/* Room in the window: a worker waiting for it cuts. */
		if (s->waiting)
			pthread_cond_signal(&s->wcond);
	}
}

/* The region handed to w, on w's thread, without s->lock: its rows
 * locked at the array's range lock, its work in them (sync_region.c),
 * and its rows unlocked, unless the walk holds them until retire()
 * (hold_rows()). */
static int run_region(struct sync_worker *w, enum rf_sync_action act)
{
	struct region *g = w->cur;
	int ret;

	rf_array_rows_lock(w->a, &g->range, g->lo, g->lo + g->n);
	ret = rf_sync_region_run(w, act);
	if (!w->s->hold_rows)
		rf_array_rows_unlock(w->a, &g->range);
	return ret;
}

static void *worker_main(void *arg)
{
	struct sync_worker *w = arg;
	struct rf_sync *s = w->s;
	struct rf_array *a = w->a;
	int ret;

	rf_thread_name("rf-syncw%d", (int)(w - s->workers));
	/* On this thread: an io_uring may take submissions from its
	 * creator only. */
	ret = s->inline_io ? rf_array_inline_ioq_open(a, &w->ioq, SYNC_DEPTH)
			   : rf_array_ioq_open(a, &w->ioq, SYNC_DEPTH);
	/* What a walk writes (a rebuilt member, repaired parity) goes
	 * through the backend, not stored through the members' mappings: a
	 * walk writes each page once, and a mapping's first store to a page
	 * takes a fault (a rebuild onto a spare on /dev/shm: 2.6 s -> 1.7 s
	 * for 4 x 512 MiB).  Reads still come from the mappings where they
	 * can (rf_sync_map()). */
	w->ioq.stream = true;

	pthread_mutex_lock(&s->lock);
	w->ioq_ok = !ret;
	w->init_ret = ret;
	w->ready = true;
	pthread_cond_broadcast(&s->cond);
	if (ret) {
		pthread_mutex_unlock(&s->lock);
		return NULL;
	}
	for (;;) {
		enum rf_sync_action act;
		double at;

		/* The oldest READY region, or (idle) the next one cut here:
		 * the next one is there when this one ends, without a round
		 * trip to the walk thread; held back by the pace only, until
		 * the schedule lets it cut. */
		while (s->taken == s->win_count && !s->quit && !may_cut(s, &at)) {
			s->waiting++;
			if (at > 0)
				wait_until(s, &s->wcond, at);
			else
				pthread_cond_wait(&s->wcond, &s->lock);
			s->waiting--;
		}
		if (s->taken == s->win_count && s->quit)
			break;
		if (s->taken == s->win_count)
			cut(s, false);
		w->cur = &s->win[(s->win_head + s->taken++) % WIN_MAX];
		w->cur->state = REG_RUNNING;
		act = s->action;
		pthread_mutex_unlock(&s->lock);
		ret = run_region(w, act);
		pthread_mutex_lock(&s->lock);
		w->cur->ret = ret;
		w->cur->state = REG_DONE;
		retire_done(s);
		region_news(s);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* s->lock held: wait for news (a stop, a change of the limits, and a
 * region's end if regions) at most secs. */
static void wait_news(struct rf_sync *s, double secs, bool regions)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	rf_timespec_add_ns(&ts, (int64_t)(secs * 1e9));
	s->news_wanted = regions;
	pthread_cond_timedwait(&s->cond, &s->lock, &ts);
	s->news_wanted = false;
}

/* s->lock held: wait for a region to end (or a stop). */
static void wait_region(struct rf_sync *s)
{
	s->news_wanted = true;
	pthread_cond_wait(&s->cond, &s->lock);
	s->news_wanted = false;
}

/* s->lock held: record progress, and a speed mark about once a second. */
static void progress(struct rf_sync *s, uint64_t pos)
{
	double t = rf_sync_now();

	s->done = pos;
	if (s->nmarks && t - s->marks[s->nmarks - 1].t < 1.0)
		return;
	if (s->nmarks == NMARKS) {
		memmove(s->marks, s->marks + 1, (NMARKS - 1) * sizeof(s->marks[0]));
		s->nmarks--;
	}
	s->marks[s->nmarks].t = t;
	s->marks[s->nmarks].done = pos;
	s->nmarks++;
}

/* A resync reached pos: every row below it is in sync.  A later resync
 * may start there; the notify function records it in the superblocks.
 * A rebuild reached pos: the devices being rebuilt hold their data below
 * it, each its own recovery_offset; the notify function records them. */
static void checkpoint(struct rf_sync *s, enum rf_sync_action act, uint64_t pos)
{
	rf_sync_notify_fn notify;
	void *priv;

	pthread_mutex_lock(&s->lock);
	if (act == RF_SYNC_RESYNC)
		s->resync_cp = pos;
	notify = s->notify;
	priv = s->notify_priv;
	pthread_mutex_unlock(&s->lock);
	if (notify)
		notify(s->a, act, false, pos, priv);
}

/* The oldest region handed out, g, is done: move the walk past it, and
 * unlock its rows if the walk held them (hold_rows()): after recovery_cp
 * and the checkpoint passed them.  Run by one thread at a time
 * (s->retiring), without s->lock. */
static void retire(struct rf_sync *s, struct region *g)
{
	struct rf_array *a = s->a;
	struct walk *k = &s->k;
	uint64_t lo = g->lo, hi = g->lo + g->n;
	bool ok, first;

	pthread_mutex_lock(&s->lock);
	if (g->ret && !k->ret)
		k->ret = g->ret;
	ok = !k->ret;
	pthread_mutex_unlock(&s->lock);
	if (ok) {
		if (s->hold_rows) {
			/* A rebuilt region, every one below it rebuilt too:
			 * from here on the new devices serve its rows.  Cached
			 * heads of them were planned without those devices. */
			rf_sync_rows_forget(a, lo, hi);
		}
		if (k->act == RF_SYNC_RECOVER)
			rf_array_set_recovery_cp(a, dev_offset(a, s->ops, hi));
		if (k->act == RF_SYNC_RESYNC)
			rf_bitmap_resync_done(rf_array_bitmap(a), lo, hi);
		else if (k->act == RF_SYNC_RECOVER && s->ops == rf_array_sync_ops(a))
			rf_bitmap_rebuilt(rf_array_bitmap(a), lo, hi);
		pthread_mutex_lock(&s->lock);
		k->pos = hi;
		/* The first region runs at once, unpaced: the speed counts
		 * from its end, or it would read above sync_speed_max for
		 * seconds. */
		first = k->first;
		if (first)
			s->nmarks = 0;
		progress(s, hi);
		k->first = false;
		pthread_mutex_unlock(&s->lock);
		if ((k->act == RF_SYNC_RESYNC || k->act == RF_SYNC_RECOVER) && hi < k->total &&
		    (hi - k->cp_pos >= k->total / CP_PARTS || rf_sync_now() - k->cp_t >= CP_SECONDS)) {
			checkpoint(s, k->act, hi);
			k->cp_pos = hi;
			k->cp_t = rf_sync_now();
		}
	}
	if (s->hold_rows)
		rf_array_rows_unlock(a, &g->range);
}

/* The window is empty and the walk reached the end of a bitmap run: jump
 * to the next run that needs the action.  No region is cut meanwhile (the
 * cursor is at the run's end). */
static void skip_clean(struct rf_sync *s)
{
	struct rf_array *a = s->a;
	struct walk *k = &s->k;
	uint64_t next = k->next, n = k->total - next, np;

	if (k->act == RF_SYNC_RESYNC) {
		/* A resync goes only where writes may have been in flight,
		 * and what it covered is in sync after. */
		np = rf_bitmap_resync_skip(rf_array_bitmap(a), next, k->total, &n);
	} else {
		/* A re-added device missed only what the bitmap marks.  The
		 * jump is made with writes held: none may be planned on the
		 * far side of the old position meanwhile. */
		rf_writes_hold(a);
		np = rf_bitmap_dirty_skip(rf_array_bitmap(a), next, k->total, &n);
		if (np != next) {
			/* raid4/5/6 writes skip the devices being rebuilt at
			 * and past recovery_cp (mirrors write them always). */
			rf_stripe_cache_forget(a, next, np);
			rf_array_set_recovery_cp(a, dev_offset(a, s->ops, np));
		}
		rf_writes_release(a);
	}
	pthread_mutex_lock(&s->lock);
	if (k->act != RF_SYNC_RESYNC)
		s->skipped += np - next;
	k->next = k->pos = np;
	k->run_end = np < k->total ? np + n : k->total;
	pthread_mutex_unlock(&s->lock);
}

/* Regions from *pos to total, several at once, until done, stopped or
 * failed; *pos: below it every region is done. */
static int walk(struct rf_sync *s, enum rf_sync_action act, uint64_t *pos, uint64_t total, const char **why)
{
	struct rf_array *a = s->a;
	bool skips = rf_array_bitmap(a) && (act == RF_SYNC_RESYNC ||
					    (act == RF_SYNC_RECOVER && rf_array_recover_dirty_only(a)));
	struct walk *k = &s->k;
	bool stopped = false;
	int ret;

	pthread_mutex_lock(&s->lock);
	*k = (struct walk){
		.act = act, .pos = *pos, .next = *pos, .total = total, .cp_pos = *pos, .cp_t = rf_sync_now(),
		.first = true, .run_end = skips ? *pos : total, .pace_next = rf_sync_now(),
	};
	for (;;) {
		double left;
		bool busy;

		retire_done(s);
		if (s->stop)
			stopped = true;
		if (!k->ret && !stopped && k->next < k->total && rf_array_failed(a))
			k->ret = -EIO;
		/* Every untimed wait below follows the look at the oldest
		 * region above within one hold of s->lock: a region that
		 * ended while the lock was let go (fg_active(), retire(),
		 * skip_clean()) signalled no one, and is seen here. */
		if (k->ret || stopped || k->next >= k->total) {
			/* Regions in flight finish; then the walk ends. */
			if (!s->win_count)
				break;
			wait_region(s);
			continue;
		}
		if (k->next >= k->run_end) {
			/* The bitmap's walk and recovery_cp jump only from
			 * where every region is done. */
			if (s->win_count) {
				wait_region(s);
				continue;
			}
			pthread_mutex_unlock(&s->lock);
			skip_clean(s);
			pthread_mutex_lock(&s->lock);
			/* Workers may cut in the new run. */
			pthread_cond_broadcast(&s->wcond);
			continue;
		}
		busy = fg_active(s);
		if (rf_sync_test_looked) {
			pthread_mutex_unlock(&s->lock);
			rf_sync_test_looked();
			pthread_mutex_lock(&s->lock);
		}
		/* The lock was let go: workers may have cut up to the end
		 * of the run meanwhile. */
		if (k->next >= k->run_end)
			continue;
		/* Foreground first: while it is active, one region at a time
		 * (its own IO in flight is at most REGION_BUSY per member);
		 * while idle, a window of them, cut by the workers too. */
		if (s->win_count >= (busy ? 1 : s->win_limit) || s->taken < s->win_count) {
			/* Idle, the workers cut the next regions themselves:
			 * this thread only renews the idle verdict. */
			wait_news(s, PACE_POLL, busy);
			continue;
		}
		if (!busy)
			/* An idle verdict: the workers may cut again. */
			pthread_cond_broadcast(&s->wcond);
		/* The schedule of the speed the load allows (pace()),
		 * looked at again soon. */
		left = k->pace_next - rf_sync_now();
		if (left > 0) {
			wait_news(s, left < PACE_POLL ? left : PACE_POLL, false);
			continue;
		}
		cut(s, busy);
		pthread_cond_signal(&s->wcond);
	}
	*pos = k->pos;
	ret = k->ret;
	pthread_mutex_unlock(&s->lock);
	if (ret)
		*why = "stopped by an IO error";
	else if (stopped && *pos < total)
		*why = "interrupted";
	return ret;
}

static void workers_stop(struct rf_sync *s)
{
	int i;

	pthread_mutex_lock(&s->lock);
	s->quit = true;
	pthread_cond_broadcast(&s->wcond);
	pthread_mutex_unlock(&s->lock);
	for (i = 0; i < s->nalloc; i++) {
		struct sync_worker *w = &s->workers[i];

		if (w->started)
			pthread_join(w->thread, NULL);
		if (w->ioq_ok)
			rf_ioq_destroy(&w->ioq);
		free(w->mem);
		free(w->work.mios);
	}
	free(s->workers);
	s->workers = NULL;
	s->nworkers = s->nalloc = 0;
}

/* One worker's buffers, IO queue and thread; 0 or -errno. */
static int worker_start(struct rf_sync *s, struct sync_worker *w)
{
	struct rf_array *a = s->a;
	size_t per = s->region_max;
	int ret, i;

	w->s = s;
	w->a = a;
	w->work.a = a;
	/* Reads: one per member; writes: at most a run per two blocks. */
	w->work.mios = calloc((size_t)rf_array_nslots(a) * (REGION_IDLE / BLK / 2 + 1), sizeof(*w->work.mios));
	if (!w->work.mios || posix_memalign((void **)&w->mem, 4096, per * (size_t)rf_array_nslots(a) + 5 * BLK))
		return -ENOMEM;
	for (i = 0; i < rf_array_nslots(a); i++)
		w->work.buf[i] = w->work.own[i] = w->mem + (size_t)i * per;
	w->work.ioq = &w->ioq;
	w->work.report = &rf_sync_findings;
	w->work.report_priv = s;
	w->work.p = w->mem + per * (size_t)rf_array_nslots(a);
	w->work.q = w->work.p + BLK;
	w->work.delta = w->work.q + BLK;
	w->work.qq = w->work.delta + BLK;
	w->work.zero = w->work.qq + BLK;
	memset(w->work.zero, 0, BLK);
	ret = -pthread_create(&w->thread, NULL, worker_main, w);
	if (ret)
		return ret;
	w->started = true;
	pthread_mutex_lock(&s->lock);
	while (!w->ready)
		pthread_cond_wait(&s->cond, &s->lock);
	ret = w->init_ret;
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* Whether a walk of act keeps each region's rows locked until retire()
 * rather than unlocking them as its work ends: a rebuild of a level whose
 * writes at and past recovery_cp skip the devices being rebuilt
 * (rf_sync_ops.hold_rebuilt: raid4/5/6), until recovery_cp passes them.
 * Not a replacement's copy: every write of the slot reaches its
 * replacement. */
static bool hold_rows(const struct rf_sync *s, enum rf_sync_action act)
{
	return act == RF_SYNC_RECOVER && !s->replace && s->ops->hold_rebuilt;
}

/* Whether the walk's workers read the members on their own threads (the
 * array's inline queue, rf_array_inline_ioq_open()) rather than through
 * io_uring.  A read of a file on tmpfs (or ramfs) through io_uring never
 * completes at submission: every one goes to an io-wq thread of the
 * ring, which copies the pages while the worker waits, one read after
 * another, into another core's cache, where the worker's xor or copy
 * then reads it a second time from memory.  Read on the worker's own
 * thread, in regions of REGION_INLINE bytes per member, a region's
 * columns are still in that core's cache when the level's xor runs:
 * measured on an idle check of raid5, 4 x 512 MiB on /dev/shm, the
 * daemon's CPU time per member GiB went from about 250 ms to 200 ms
 * (fio streaming the same files: 190 ms), with no thread hand-over per
 * region.  Block devices and files on other file systems keep io_uring,
 * which reads every member of a region at once.  RAIDFUSE_SYNC_IO=ring or
 * =inline overrides the choice (tests, measurements). */
static bool inline_io(struct rf_array *a)
{
	const char *env = getenv("RAIDFUSE_SYNC_IO");
	int i, n = rf_array_nslots(a);
	uint64_t present = rf_array_present(a);
	struct statfs st;
	bool ok = true;

	if (env && !strcmp(env, "ring"))
		return false;
	if (env && !strcmp(env, "inline"))
		return true;
	rf_devs_lock(a);
	for (i = 0; i < n && ok; i++) {
		const struct rf_dev *d = rf_dev_get(a, i);

		if (!(present & (1ull << i)))
			continue;
		if (d->io.fd < 0 || fstatfs(d->io.fd, &st) ||
		    ((unsigned long)st.f_type != TMPFS_MAGIC && (unsigned long)st.f_type != RAMFS_MAGIC))
			ok = false;
	}
	rf_devs_unlock(a);
	return ok;
}

/* How many workers a walk starts.  Workers that read inline are busy on
 * a CPU all the time (the copy out of the page cache, then xor and
 * compare): one per CPU the daemon may run on, no more, as a third one on
 * 2 CPUs only takes turns with the others (an idle check of raid5, 4 x
 * 512 MiB on /dev/shm: 0.224 s with 2 workers against 0.234 s with 3).
 * Through io_uring a worker mostly waits for its members: several keep
 * every member busy. */
static int workers_wanted(bool inl)
{
	cpu_set_t cpus;
	int n;

	if (!inl)
		return SYNC_RING_WORKERS;
	n = sched_getaffinity(0, sizeof(cpus), &cpus) ? 2 : CPU_COUNT(&cpus);
	return n < 1 ? 1 : n > SYNC_WINDOW ? SYNC_WINDOW : n;
}

/* The walk's workers: workers_wanted() of them, or as many as could
 * start; 0 or -errno when none could. */
static int workers_start(struct rf_sync *s)
{
	struct rf_array *a = s->a;
	bool inl = inline_io(a);
	int i, ret = 0, want = workers_wanted(inl);
	uint32_t per = REGION_MEM_ALL / (uint32_t)want / (uint32_t)rf_array_nslots(a);

	if (per > (inl ? REGION_INLINE : REGION_IDLE))
		per = inl ? REGION_INLINE : REGION_IDLE;
	per &= ~(BLK - 1);
	if (per < REGION_BUSY)
		per = REGION_BUSY;
	pthread_mutex_lock(&s->lock);
	s->region_max = per;
	s->inline_io = inl;
	s->hold_rows = hold_rows(s, s->action);
	s->quit = false;
	s->retiring = false;
	s->win_head = s->win_count = s->taken = 0;
	s->win_limit = WIN_PER_WORKER;
	s->k = (struct walk){ .next = 0, .run_end = 0 };  /* nothing to cut before walk() */
	pthread_mutex_unlock(&s->lock);
	s->workers = calloc((size_t)want, sizeof(*s->workers));
	if (!s->workers)
		return -ENOMEM;
	for (i = 0; i < want; i++) {
		ret = worker_start(s, &s->workers[i]);
		s->nalloc = i + 1;      /* workers_stop() frees what it got */
		if (ret)
			break;
		pthread_mutex_lock(&s->lock);
		s->nworkers = i + 1;
		s->win_limit = WIN_PER_WORKER * s->nworkers;
		pthread_mutex_unlock(&s->lock);
	}
	if (ret && i > 0) {
		/* The others go on: fewer regions at once. */
		rf_warn("%s: sync: %d of %d workers: %s", rf_array_name(a), i, want, strerror(-ret));
		ret = 0;
	}
	return ret;
}
void *rf_sync_main(void *arg)
{
	struct rf_sync *s = arg;
	struct rf_array *a = s->a;
	enum rf_sync_action act;
	uint64_t pos, total;
	rf_sync_notify_fn notify;
	void *notify_priv;
	const char *why = "done";
	int ret = 0;

	rf_thread_name("rf-sync");

	pthread_mutex_lock(&s->lock);
	act = s->action;
	pos = s->done;
	total = s->total;
	progress(s, pos);
	pthread_mutex_unlock(&s->lock);
	ret = workers_start(s);
	if (ret) {
		rf_err("%s: %s: no sync worker (buffers, member IO queue, thread): %s", rf_array_name(a),
		       rf_sync_action_name(act), strerror(-ret));
		why = "not started";
	} else {
		rf_info("%s: %s started at sector %llu of %llu", rf_array_name(a), rf_sync_action_name(act),
			(unsigned long long)pos, (unsigned long long)total);
		/* Writes are tracked at the range lock from here on. */
		rf_sync_rows_begin(a, s->ops);
		ret = walk(s, act, &pos, total, &why);
		rf_sync_rows_end(a);
	}
	workers_stop(s);
	pthread_mutex_lock(&s->lock);
	if (act == RF_SYNC_RESYNC)
		s->resync_cp = pos < total ? pos : RF_SYNC_NONE;
	if (act == RF_SYNC_RESYNC || act == RF_SYNC_RECOVER)
		rf_info("%s: %s %s at sector %llu of %llu%s", rf_array_name(a), rf_sync_action_name(act), why,
			(unsigned long long)pos, (unsigned long long)total,
			act == RF_SYNC_RECOVER && s->skipped ? " (only what the bitmap marks)" : "");
	else
		rf_info("%s: %s %s at sector %llu of %llu: mismatch_cnt %llu", rf_array_name(a), rf_sync_action_name(act),
			why, (unsigned long long)pos, (unsigned long long)total, (unsigned long long)s->mismatches);
	notify = s->notify;
	notify_priv = s->notify_priv;
	pthread_mutex_unlock(&s->lock);
	/* Outside the lock: the callback may read the status. */
	if (notify)
		notify(a, act, !ret && pos >= total, pos, notify_priv);
	if (act == RF_SYNC_RECOVER && !s->replace && !ret && pos >= total && s->ops != rf_array_sync_ops(a))
		/* The bitmap's chunks are in the level's units: every one of
		 * them is rebuilt. */
		rf_bitmap_rebuilt(rf_array_bitmap(a), 0, rf_sync_walk_total(a, rf_array_sync_ops(a)));
	if (act == RF_SYNC_RECOVER)
		rf_recovery_ended(a, !ret && pos >= total, dev_offset(a, s->ops, pos));
	pthread_mutex_lock(&s->lock);
	s->action = RF_SYNC_IDLE;
	s->running = false;
	s->joinable = true;
	s->done = 0;
	s->nmarks = 0;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	/* A spare may wait for a failed slot (or a rebuild for its turn). */
	rf_mgmt_kick(a);
	return NULL;
}
