/* sbstate.c - clean/dirty, events and failed members in the superblocks.
 *
 * Three writers of superblocks, all under s->lock, all through
 * rf_sb_update_io() on every present, in-sync member:
 *  - mark dirty: the first write request after the array was clean, on
 *    the submitting thread, before that request is split.  Every other
 *    writer that arrives meanwhile waits on s->lock and then finds DIRTY.
 *  - mark clean: the timer thread, after a whole period with no write
 *    request started, inside rf_array_quiesced(): writes are drained (none
 *    in flight, new ones held at the barrier), so none can start while the
 *    superblocks change to clean; release lets the held ones go, and the
 *    first of them marks dirty again.  Shutdown marks clean the same way
 *    once the engine has drained everything.
 *  - record a failure: the timer thread, woken by rf_sbstate_kick(), sets
 *    the failed member's slot to faulty (0xfffe) in the others.
 * Each change raises the array's events by one and writes the same count
 * to every member, as md does.  A member whose superblock cannot be
 * written is failed like one that lost a data write.
 *
 * What a clean superblock records as resync_offset is where a resync
 * stands (s->resync_offset): from the superblocks at assembly (0 after a
 * crash or a create without --assume-clean), then from the sync thread
 * (on_sync()): its checkpoints while a resync runs, where it stopped, and
 * RF_SB_MAX_SECTOR once it completed.  A checkpoint reached while the
 * array is clean is written at once (events + 1), as md updates
 * recovery_cp: a crash then resumes the resync there.  The resync's own
 * writes do not mark the array dirty (md's neither): what they change lies
 * at or after the recorded checkpoint, which a later resync covers again.
 * So the array never says "clean, in sync" while a resync is incomplete.
 *
 * rf_array_start_resync() starts the resync that is due once the array
 * serves, unless sync_action is frozen.
 *
 * The write fast path is one acquire load of s->mode.  Marking idle costs
 * writers nothing: the timer turns DIRTY into DIRTY_IDLE, and only the
 * first writer after that pays a compare-and-swap to turn it back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "raidfuse/overlay.h"
#include "raidfuse/sync.h"
#include "sbstate.h"

enum change { CH_DIRTY, CH_CLEAN, CH_FAULTY };

/* s->lock held.  Write one change to every in-sync member; a member that
 * fails it is failed.  Returns 0, or -EIO when the array failed. */
static int write_all(struct rf_sbstate *s, enum change what, int faulty_slot)
{
	struct rf_array *a = s->a;
	struct rf_sb_change c = {
		.clean = what == CH_CLEAN ||
			 (what == CH_FAULTY && atomic_load(&s->mode) == RF_SBS_CLEAN),
		.resync_offset = s->resync_offset,
		.events = s->events + 1,
		.faulty_slot = faulty_slot,
	};
	char err[1024];
	int i, r, nwritten = 0;

	for (i = 0; i < s->n; i++) {
		struct rf_sbs_member *m = &s->m[i];

		if (!m->has || (rf_faulty(a) & (1ull << i)))
			continue;
		r = rf_sb_update_io(&m->io, a->members[i].path, &m->sb, &c, err, sizeof(err));
		if (r) {
			rf_err("member %d: %s", i, err);
			rf_member_fail(a, i, r, "superblock write", m->sb.sb_offset * 512);
			continue;
		}
		nwritten++;
	}
	s->events = c.events;
	if (what == CH_DIRTY)
		atomic_fetch_add(&s->nr_dirty, 1);
	else if (what == CH_CLEAN)
		atomic_fetch_add(&s->nr_clean, 1);
	else
		atomic_fetch_add(&s->nr_faulty, 1);
	rf_dbg("%s: superblocks %s, events %llu (%d members)", a->name,
	       what == CH_DIRTY ? "dirty" : what == CH_CLEAN ? "clean" : "record a failed member",
	       (unsigned long long)s->events, nwritten);
	return rf_failed_now(a) ? -EIO : 0;
}

int rf_sbstate_write_start_slow(struct rf_sbstate *s)
{
	int r = 0, v;

	for (;;) {
		v = atomic_load(&s->mode);
		if (v == RF_SBS_DIRTY)
			return 0;
		if (v != RF_SBS_DIRTY_IDLE)
			break;
		/* Still dirty on disk: just say a write came. */
		if (atomic_compare_exchange_strong(&s->mode, &v, RF_SBS_DIRTY))
			return 0;
	}
	pthread_mutex_lock(&s->lock);
	if (atomic_load(&s->mode) == RF_SBS_CLEAN) {
		r = write_all(s, CH_DIRTY, -1);
		/* Pairs with the acquire load in rf_sbstate_write_start(). */
		if (!r)
			atomic_store_explicit(&s->mode, RF_SBS_DIRTY, memory_order_release);
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* Inside rf_array_quiesced(): no write in flight, none can start. */
static int clean_drained(void *arg)
{
	struct rf_sbstate *s = arg;

	pthread_mutex_lock(&s->lock);
	/* A write that came before the drain turned it DIRTY again: it has
	 * ended, but the array was not idle; the next period decides. */
	if (atomic_load(&s->mode) == RF_SBS_DIRTY_IDLE) {
		write_all(s, CH_CLEAN, -1);
		atomic_store(&s->mode, RF_SBS_CLEAN);
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* Record members that failed since the last time. */
static void record_failed(struct rf_sbstate *s)
{
	uint64_t f;

	pthread_mutex_lock(&s->lock);
	f = rf_faulty(s->a) & s->a->present & ~s->recorded;
	while (f) {
		int i = __builtin_ctzll(f);

		f &= f - 1;
		s->recorded |= 1ull << i;
		if (s->m[i].has)
			write_all(s, CH_FAULTY, (int)s->m[i].sb.dev_number);
	}
	pthread_mutex_unlock(&s->lock);
}

static void tick(struct rf_sbstate *s)
{
	int v = atomic_load(&s->mode);

	if (v == RF_SBS_DIRTY)
		atomic_compare_exchange_strong(&s->mode, &v, RF_SBS_DIRTY_IDLE);
	else if (v == RF_SBS_DIRTY_IDLE)
		rf_array_quiesced(s->a, clean_drained, s);
}

static void *timer_main(void *arg)
{
	struct rf_sbstate *s = arg;
	struct timespec t;

	pthread_mutex_lock(&s->tlock);
	while (!s->stop) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		t.tv_nsec += (long)atomic_load(&s->delay_ms) * 1000000L;
		t.tv_sec += t.tv_nsec / 1000000000L;
		t.tv_nsec %= 1000000000L;
		while (!s->stop && !s->kicked)
			if (pthread_cond_timedwait(&s->tcond, &s->tlock, &t) == ETIMEDOUT)
				break;
		if (s->stop)
			break;
		s->kicked = false;
		pthread_mutex_unlock(&s->tlock);
		record_failed(s);
		tick(s);
		pthread_mutex_lock(&s->tlock);
	}
	pthread_mutex_unlock(&s->tlock);
	return NULL;
}

/* The sync thread's news (see rf_sync_notify_fn), on its thread or on
 * the thread that set resync_start: record where a resync is due. */
static void on_sync(struct rf_array *a, enum rf_sync_action act, bool completed, uint64_t pos, void *priv)
{
	struct rf_sbstate *s = priv;
	uint64_t cp;

	if (act == RF_SYNC_CHECK)
		return;         /* it changes nothing */
	pthread_mutex_lock(&s->lock);
	cp = s->resync_offset;
	if (act == RF_SYNC_IDLE)
		cp = pos == RF_SYNC_NONE ? RF_SB_MAX_SECTOR : pos;     /* resync_start set */
	else if (completed)
		cp = RF_SB_MAX_SECTOR;  /* a whole resync or repair: every row agrees */
	else if (act == RF_SYNC_RESYNC || (cp != RF_SB_MAX_SECTOR && pos > cp))
		cp = pos;               /* a repair walks from 0: past cp, it covered [0, pos) */
	if (cp != s->resync_offset) {
		s->resync_offset = cp;
		/* Dirty: the clean mark writes it later. */
		if (atomic_load(&s->mode) == RF_SBS_CLEAN)
			write_all(s, CH_CLEAN, -1);
	}
	pthread_mutex_unlock(&s->lock);
}

int rf_array_start_resync(struct rf_array *a, bool frozen)
{
	struct rf_sbstate *s = a->sbstate;
	uint64_t cp;
	int r;

	if (frozen && a->sync)
		rf_sync_request(a, RF_SYNC_FROZEN);
	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	cp = s->resync_offset;
	pthread_mutex_unlock(&s->lock);
	if (cp == RF_SB_MAX_SECTOR)
		return 0;
	if (frozen) {
		rf_info("%s: resync due from sector %llu: sync_action frozen, not started", a->name,
			(unsigned long long)cp);
		return 0;
	}
	rf_info("%s: resync due from sector %llu: starting it", a->name, (unsigned long long)cp);
	r = rf_sync_request(a, RF_SYNC_RESYNC);
	if (r)
		rf_warn("%s: the resync due from sector %llu did not start: %s", a->name, (unsigned long long)cp,
			strerror(-r));
	return r;
}

int rf_sbstate_open(struct rf_array *a, struct rf_sbstate **out, char *err, size_t errlen)
{
	struct rf_sbstate *s;
	pthread_condattr_t ca;
	int i, r, fresh = -1;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->m = calloc((size_t)a->nmembers, sizeof(*s->m)))) {
		free(s);
		snprintf(err, errlen, "%s: out of memory for the superblock state", a->name);
		return -ENOMEM;
	}
	s->a = a;
	s->n = a->nmembers;
	atomic_init(&s->delay_ms, RF_SAFE_MODE_MS);
	for (i = 0; i < s->n; i++) {
		struct rf_sbs_member *m = &s->m[i];

		if (!(a->present & (1ull << i)))
			continue;
		if (a->iom[i].layer) {
			rf_ovl_sb_io(a->iom[i].layer, &m->io);
			r = 0;
		} else {
			r = rf_sb_io_fd(&m->io, a->members[i].fd);
			if (r)
				snprintf(err, errlen, "member %d (%s): %s", i, a->members[i].path, strerror(-r));
		}
		if (!r)
			r = rf_sb_read_io(&m->io, a->members[i].path, &m->sb, err, errlen);
		if (r == -ENOENT)
			continue;
		if (r) {
			free(s->m);
			free(s);
			return r;
		}
		m->has = true;
		if (fresh < 0 || m->sb.events > s->m[fresh].sb.events)
			fresh = i;
	}
	if (fresh < 0) {
		free(s->m);
		free(s);
		return 0;
	}
	s->events = s->m[fresh].sb.events;
	s->resync_offset = s->m[fresh].sb.resync_offset;
	atomic_init(&s->mode, RF_SBS_CLEAN);
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->tlock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->tcond, &ca);
	pthread_condattr_destroy(&ca);
	*out = s;
	return 0;
}

int rf_sbstate_start(struct rf_sbstate *s)
{
	int r;

	if (!s || s->running)
		return 0;
	/* The sync thread starts a resync where the superblocks say, and
	 * tells us where it got. */
	if (s->a->sync) {
		rf_sync_set_resync_cp(s->a, s->resync_offset);
		rf_sync_set_notify(s->a, on_sync, s);
	}
	s->stop = false;
	r = -pthread_create(&s->thread, NULL, timer_main, s);
	if (!r)
		s->running = true;
	return r;
}

void rf_sbstate_stop(struct rf_sbstate *s)
{
	if (!s || !s->running)
		return;
	pthread_mutex_lock(&s->tlock);
	s->stop = true;
	pthread_cond_signal(&s->tcond);
	pthread_mutex_unlock(&s->tlock);
	pthread_join(s->thread, NULL);
	s->running = false;
}

void rf_sbstate_kick(struct rf_sbstate *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->tlock);
	s->kicked = true;
	pthread_cond_signal(&s->tcond);
	pthread_mutex_unlock(&s->tlock);
}

void rf_sbstate_close(struct rf_sbstate *s)
{
	if (!s)
		return;
	rf_sbstate_stop(s);
	record_failed(s);
	pthread_mutex_lock(&s->lock);
	if (atomic_load(&s->mode) != RF_SBS_CLEAN) {
		write_all(s, CH_CLEAN, -1);
		atomic_store(&s->mode, RF_SBS_CLEAN);
	}
	pthread_mutex_unlock(&s->lock);
	pthread_cond_destroy(&s->tcond);
	pthread_mutex_destroy(&s->tlock);
	pthread_mutex_destroy(&s->lock);
	free(s->m);
	free(s);
}
