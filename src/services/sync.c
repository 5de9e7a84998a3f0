/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sync.c - the sync walk: md's md_do_sync for resync, check, repair and
 * rebuild, generic over the levels.  This file is the walk's service:
 * md's sync_action requests, the status, the speed limits, and the
 * array's hooks that make and end the walk's state.
 *
 * A walk goes over the array region by region (md's sync window) from the
 * start (or, for a resync or rebuild, from where an interrupted one
 * stopped) to the end.  The level says what a region is and does its work
 * (its struct rf_sync_ops, core.h: total, clip, region; md's sync_request):
 * raid1 and raid4/5/6 walk member sectors, a region the same run on every
 * member; raid10 walks array sectors inside one chunk, but for a rebuild,
 * which has a table of its own (core.h: recover; rf_sync_walk_ops()) and
 * goes by member sector as md's does, unless the bitmap drives it.  The
 * work of a region is check (count what disagrees: mismatch_cnt), repair
 * (count and rewrite), resync (rewrite what disagrees) or recover (compute
 * or copy the blocks of every device being rebuilt, one or two at once);
 * see the level files for each.  The walk (sync_walk.c) cuts, paces,
 * hands out, retires and checkpoints the regions, locks each region's
 * rows before its work and unlocks them after it (a raid4/5/6 rebuild's
 * when it retires the region), and sets up each worker's buffers and IO
 * queue, through which the level's work does its member IO
 * (core/syncwork.h: the calls are the core's, so the levels call nothing
 * of these files).  Nothing here depends on the level.
 *
 * The files, each calling only those below it:
 *   sync.c         a request starts a walk's thread (start()), stops it
 *                  (rf_sync_stop()) or waits for it; the status
 *                  (rf_sync_get(), mdstat's progress line), sync_speed_min
 *                  and sync_speed_max, the resync checkpoint and the
 *                  function told of it; the walk's state made and freed,
 *                  its hooks and its service entry
 *   sync_walk.c    the walk thread (rf_sync_main()) and its workers: the
 *                  look at the foreground load, the regions cut, paced,
 *                  handed out and retired in order, their rows locked
 *                  and unlocked, the checkpoints, the bitmap's jumps; the
 *                  workers' buffers, IO queues and number
 *   sync_region.c  one locked region on its worker's thread: the level's
 *                  work or a replacement's copy, and where what it finds
 *                  goes
 *   sync_int.h     the walk's state (struct rf_sync), its lock, and the
 *                  calls the files share
 *
 * Stopping ("idle", "frozen", array close) takes effect between regions:
 * no new region is handed out, those in flight finish and are written,
 * so the rows are consistent.  A member IO error marks the member faulty
 * and ends the action at the failed region.  With a write-intent bitmap,
 * a resync (and a re-added device's rebuild) skips the chunks the bitmap
 * says need none (bitmap.c keeps them; check and repair read all); a jump
 * is made only with no region in flight, so the bitmap's walk stays in
 * order.
 *
 * It does NOT resync parity arrays degraded to no redundancy (the level's
 * degraded() says which are; raid6 with one member missing is not), and
 * it does not order the regions' writes against each other (they are
 * disjoint).
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "raidfuse/lockcheck.h"
#include "raidfuse/log.h"
#include "raidfuse/sync.h"
#include "services/sync_int.h"

/* s->lock held: reap a thread that has ended. */
static void reap(struct rf_sync *s)
{
	if (s->joinable) {
		pthread_join(s->thread, NULL);
		s->joinable = false;
	}
}

static int start(struct rf_array *a, enum rf_sync_action act)
{
	struct rf_sync *s = rf_array_sync(a);
	const struct rf_sync_ops *ops = rf_array_sync_ops(a);
	uint64_t missing;
	int ret;

	if (!ops)
		return -EINVAL;         /* no redundancy: nothing to sync */
	if (act != RF_SYNC_CHECK && rf_array_readonly(a))
		return -EROFS;
	if (act != RF_SYNC_RECOVER && rf_replace_mask(a)) {
		rf_err("%s: %s: a replacement is being copied (md/dev-*/state replacement): that comes first",
		       rf_array_name(a), rf_sync_action_name(act));
		return -EBUSY;
	}
	missing = act == RF_SYNC_RECOVER ? 0 : rf_array_faulty(a);
	if (rf_array_failed(a) || (missing && !(ops->degraded && ops->degraded(a, missing)))) {
		rf_err("%s: %s: the array is degraded: no redundancy to compare", rf_array_name(a),
		       rf_sync_action_name(act));
		return -EIO;
	}
	pthread_mutex_lock(&s->lock);
	if (s->running || s->stopping) {
		pthread_mutex_unlock(&s->lock);
		return -EBUSY;
	}
	reap(s);
	s->action = act;
	s->frozen = false;
	s->stop = false;
	s->ops = rf_sync_walk_ops(a, act);
	s->replace = act == RF_SYNC_RECOVER && !rf_array_recovering(a) && rf_replace_mask(a);
	s->total = rf_sync_walk_total(a, s->ops);
	s->done = act == RF_SYNC_RESYNC && s->resync_cp < s->total ? s->resync_cp : 0;
	/* A rebuild resumes where its superblock says (recovery_cp, member
	 * sectors as md's recovery_offset), in the walk's units. */
	if (act == RF_SYNC_RECOVER && rf_sync_walk_start(a, s->ops, rf_array_recovery_cp(a)) < s->total)
		s->done = rf_sync_walk_start(a, s->ops, rf_array_recovery_cp(a));
	s->nmarks = 0;
	s->nlogged = 0;
	s->skipped = 0;
	atomic_store_explicit(&s->mapped, 0, memory_order_relaxed);
	s->last_busy = -BUSY_RECENT;
	s->last_idle = -IDLE_TRUST;
	s->started = rf_sync_now();
	if (act != RF_SYNC_RESYNC) {
		s->mismatches = 0;
		s->bad_member = -1;
		s->bad_sector = s->bad_found = 0;
	}
	s->running = true;
	ret = -pthread_create(&s->thread, NULL, rf_sync_main, s);
	if (ret) {
		s->running = false;
		s->action = RF_SYNC_IDLE;
		rf_err("%s: %s: no thread: %s", rf_array_name(a), rf_sync_action_name(act), strerror(-ret));
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

void rf_sync_stop(struct rf_array *a, bool freeze)
{
	struct rf_sync *s = rf_array_sync(a);

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	/* No walk starts until this stop is done: the ending walk kicks the
	 * management thread, which would otherwise start the rebuild again
	 * (not frozen yet, not stopping) and this stop wait for all of it. */
	s->stopping++;
	if (freeze)
		s->frozen = true;
	s->stop = true;
	pthread_cond_broadcast(&s->cond);
	while (s->running)
		pthread_cond_wait(&s->cond, &s->lock);
	reap(s);
	s->frozen = freeze;
	s->stopping--;
	pthread_mutex_unlock(&s->lock);
}

int rf_sync_request(struct rf_array *a, enum rf_sync_action act)
{
	switch (act) {
	case RF_SYNC_IDLE:
	case RF_SYNC_FROZEN:
		rf_sync_stop(a, act == RF_SYNC_FROZEN);
		/* md: idle (out of frozen too) looks for recovery to do. */
		if (act == RF_SYNC_IDLE)
			rf_mgmt_kick(a);
		return 0;
	case RF_SYNC_RESYNC:
	case RF_SYNC_CHECK:
	case RF_SYNC_REPAIR:
		return start(a, act);
	case RF_SYNC_RECOVER:
		/* md: nothing to rebuild is not an error; a failed slot and a
		 * spare that have not met yet are looked at again. */
		if (!rf_array_recovering(a) && !rf_replace_mask(a)) {
			rf_mgmt_kick(a);
			return 0;
		}
		return start(a, act);
	}
	return -EINVAL;
}

void rf_sync_wait(struct rf_array *a)
{
	struct rf_sync *s = rf_array_sync(a);

	pthread_mutex_lock(&s->lock);
	while (s->running)
		pthread_cond_wait(&s->cond, &s->lock);
	reap(s);
	pthread_mutex_unlock(&s->lock);
}

void rf_sync_get(struct rf_array *a, struct rf_sync_status *st)
{
	struct rf_sync *s = rf_array_sync(a);

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&s->lock);
	st->action = s->running ? s->action : s->frozen ? RF_SYNC_FROZEN : RF_SYNC_IDLE;
	st->done = s->running ? s->done : 0;
	st->total = s->running ? s->total : rf_sync_walk_total(a, rf_array_sync_ops(a));
	st->mismatch_cnt = s->mismatches;
	st->speed_min = s->speed_min;
	st->speed_max = s->speed_max;
	st->speed_min_local = s->speed_min_local;
	st->speed_max_local = s->speed_max_local;
	st->resync_cp = s->resync_cp;
	st->bad_member = s->bad_member;
	st->bad_sector = s->bad_sector;
	st->bad_found = s->bad_found;
	st->skipped = s->skipped;
	st->mapped = atomic_load_explicit(&s->mapped, memory_order_relaxed);
	if (s->running && s->nmarks) {
		/* At least a second, as md: a young run's first region says
		 * nothing about its pace. */
		double dt = rf_sync_now() - s->marks[0].t;

		st->speed = (unsigned)((s->done - s->marks[0].done) / 2 / (dt > 1.0 ? dt : 1.0));
	}
	pthread_mutex_unlock(&s->lock);
}

int rf_sync_progress_line(struct rf_array *a, char *buf, size_t len)
{
	struct rf_sync_status st;
	unsigned permille, i, x;
	char bar[22];
	uint64_t rt;
	int n;

	rf_sync_get(a, &st);
	if (!len)
		return -EOVERFLOW;
	buf[0] = '\0';
	if (st.action == RF_SYNC_IDLE || st.action == RF_SYNC_FROZEN)
		return 0;
	permille = st.total ? (unsigned)(st.done * 1000 / st.total) : 0;
	/* 21 characters: one '=' per 5 % done, the head '>', '.' to go. */
	x = permille / 50;
	for (i = 0; i < 21; i++)
		bar[i] = i < x ? '=' : i == x ? '>' : '.';
	bar[21] = '\0';
	/* md says "resync" for a repair: it is a resync that also counts. */
	rt = st.speed ? (st.total - st.done) / 2 / st.speed : 0;
	n = snprintf(buf, len, "[%s]  %s =%3u.%u%% (%llu/%llu) finish=%llu.%llumin speed=%uK/sec", bar,
		     st.action == RF_SYNC_CHECK ? "check" : st.action == RF_SYNC_RECOVER ? "recovery" : "resync",
		     permille / 10, permille % 10,
		     (unsigned long long)st.done / 2, (unsigned long long)st.total / 2,
		     (unsigned long long)rt / 60, (unsigned long long)rt % 60 / 6, st.speed);
	return n < 0 || (size_t)n >= len ? -EOVERFLOW : n;
}

static int set_speed(struct rf_array *a, unsigned kib, bool max)
{
	struct rf_sync *s = rf_array_sync(a);
	unsigned def = max ? RF_SYNC_SPEED_MAX_DEFAULT : RF_SYNC_SPEED_MIN_DEFAULT;

	if (kib > INT32_MAX)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	/* 0: back to the default (md's "system" value). */
	if (max) {
		s->speed_max = kib ? kib : def;
		s->speed_max_local = kib != 0;
	} else {
		s->speed_min = kib ? kib : def;
		s->speed_min_local = kib != 0;
	}
	/* The schedule restarts at the new speed: a region cut under a
	 * low one does not hold a higher one back. */
	if (s->running)
		s->k.pace_next = rf_sync_now();
	pthread_cond_broadcast(&s->cond);
	pthread_cond_broadcast(&s->wcond);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int rf_sync_set_speed_min(struct rf_array *a, unsigned kib)
{
	return set_speed(a, kib, false);
}

int rf_sync_set_speed_max(struct rf_array *a, unsigned kib)
{
	return set_speed(a, kib, true);
}

void rf_sync_set_notify(struct rf_array *a, rf_sync_notify_fn fn, void *priv)
{
	struct rf_sync *s = rf_array_sync(a);

	pthread_mutex_lock(&s->lock);
	s->notify = fn;
	s->notify_priv = priv;
	pthread_mutex_unlock(&s->lock);
}

int rf_sync_set_resync_cp(struct rf_array *a, uint64_t sector)
{
	struct rf_sync *s = rf_array_sync(a);
	rf_sync_notify_fn notify = NULL;
	void *priv = NULL;
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	if (s->running && s->action == RF_SYNC_RESYNC) {
		ret = -EBUSY;
	} else {
		s->resync_cp = sector < rf_sync_walk_total(a, rf_array_sync_ops(a)) ? sector : RF_SYNC_NONE;
		sector = s->resync_cp;
		notify = s->notify;
		priv = s->notify_priv;
	}
	pthread_mutex_unlock(&s->lock);
	if (notify)
		notify(a, RF_SYNC_IDLE, false, sector, priv);
	return ret;
}

/* The walk's state exists from the array's start (before the
 * superblock state's start hands it its checkpoint) to its stop. */
static int hook_start(void *priv)
{
	return rf_sync_init(priv);
}

/* The walk ends here; its state stays until close: the services stopped
 * after it (the reshape walk) still ask it for its pace. */
static void hook_stop(void *priv)
{
	rf_sync_stop(priv, false);
}

static void hook_close(void *priv)
{
	rf_sync_free(priv);
}

static const struct rf_hooks sync_hooks = {
	.name = "sync",
	.start = hook_start,
	.stop = hook_stop,
	.close = hook_close,
};

/* Every array has one (a level without sync work reports "idle"). */
static int service_open(struct rf_array *a, const struct rf_config *cfg, char *err, size_t errlen)
{
	int r = rf_array_add_hooks(a, &sync_hooks, a);

	(void)cfg;
	if (r)
		snprintf(err, errlen, "%s: no room for the sync walk's hooks", rf_array_name(a));
	return r;
}

const struct rf_service rf_sync_service = { .name = "sync", .open = service_open };

int rf_sync_init(struct rf_array *a)
{
	struct rf_sync *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->a = a;
	pthread_mutex_init(&s->lock, NULL);
	rf_lock_rank(&s->lock, RF_LOCK_LEAF, "sync walk lock");
	pthread_cond_init(&s->cond, NULL);
	pthread_cond_init(&s->wcond, NULL);
	s->speed_min = RF_SYNC_SPEED_MIN_DEFAULT;
	s->speed_max = RF_SYNC_SPEED_MAX_DEFAULT;
	s->bad_member = -1;
	s->resync_cp = RF_SYNC_NONE;
	rf_array_set_sync(a, s);
	return 0;
}

void rf_sync_free(struct rf_array *a)
{
	struct rf_sync *s = rf_array_sync(a);

	if (!s)
		return;
	rf_sync_stop(a, false);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	pthread_cond_destroy(&s->wcond);
	free(s);
	rf_array_set_sync(a, NULL);
}
