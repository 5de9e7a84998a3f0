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
 *  - record a failure: the timer thread, woken by rf_sbstate_kick(), or
 *    the next write request, which waits for it (md holds writes until a
 *    failure is on disk), sets
 *    the failed member's slot to faulty (0xfffe) in the others.
 * Each change raises the array's events by one and writes the same count
 * to every member, as md does; every change but dirty first flushes every
 * member (md's preflush), so that what it says of the data is true on
 * disk.  A member whose superblock cannot be
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

#include "core/engine.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/iolog.h"
#include "raidfuse/overlay.h"
#include "raidfuse/sync.h"
#include "services/sbstate.h"

enum change { CH_DIRTY, CH_CLEAN, CH_FAULTY, CH_DEVICES };

/* Whether device i is faulty: a slot's device by the array's mask, the
 * others by their flags. */
static bool dev_faulty(const struct rf_array *a, int i)
{
	if (i < a->nmembers)
		return rf_faulty(a) & (1ull << i);
	return a->members[i].flags & RF_DEV_FAULTY;
}

static void dev_fail(struct rf_array *a, int i, int err, uint64_t off)
{
	if (i < a->nmembers) {
		rf_member_fail(a, i, err, "superblock write", off);
		return;
	}
	rf_err("%s: %s: superblock write failed: %s; the device is faulty", a->name, a->members[i].path,
	       strerror(-err));
	a->members[i].flags |= RF_DEV_FAULTY;
}

/* s->lock held: fsync every device that is not faulty before a change
 * that vouches for data already written: clean (no resync needed), a
 * resync checkpoint, a rebuilt device's recovery offset.  md writes its
 * superblocks with a preflush; without it, one member's clean superblock
 * could survive a power cut that loses another member's last data write,
 * and the stripe would never be resynced.  A device that fails it is
 * failed. */
static void flush_devices(struct rf_sbstate *s)
{
	struct rf_array *a = s->a;
	int i, r;

	for (i = 0; i < a->ndevs && i < RF_MAX_DEVS; i++) {
		struct rf_sbs_member *m = &s->m[i];

		if (!m->has || dev_faulty(a, i))
			continue;
		r = m->io.fsync(m->io.ctx);
		if (r) {
			rf_err("device %d (%s): flush before a superblock update: %s", i, a->members[i].path,
			       strerror(-r));
			dev_fail(a, i, r, 0);
		}
	}
}

/* s->lock held.  Write one change to every device that is not faulty
 * (slots and spares, as md); a device that fails it is failed.  own, when
 * not NULL, is device own_dev's part of the change (its recovery state).
 * Returns 0, or -EIO when the array failed. */
static int write_change(struct rf_sbstate *s, enum change what, struct rf_sb_change *c, int own_dev,
			uint64_t own_recovery)
{
	struct rf_array *a = s->a;
	char err[1024];
	int i, r, nwritten = 0;

	c->clean = what == CH_CLEAN || (what != CH_DIRTY && atomic_load(&s->mode) == RF_SBS_CLEAN);
	/* Dirty vouches for nothing: the first write waits for it. */
	if (what != CH_DIRTY && !rf_test_break("clean"))
		flush_devices(s);
	c->resync_offset = s->resync_offset;
	c->events = s->events + 1;
	/* md writes the bitmap's events first: one older than its
	 * superblocks is stale. */
	rf_bitmap_set_events(a->bitmap, c->events);
	for (i = 0; i < a->ndevs && i < RF_MAX_DEVS; i++) {
		struct rf_sbs_member *m = &s->m[i];
		struct rf_sb_change mine;

		if (!m->has || dev_faulty(a, i))
			continue;
		mine = *c;
		if (i == own_dev) {
			mine.set_recovery = true;
			mine.recovery_offset = own_recovery;
		}
		r = rf_sb_update_io(&m->io, a->members[i].path, &m->sb, &mine, err, sizeof(err));
		if (r) {
			rf_err("device %d: %s", i, err);
			dev_fail(a, i, r, m->sb.sb_offset * 512);
			continue;
		}
		nwritten++;
	}
	s->events = c->events;
	if (what == CH_DIRTY)
		atomic_fetch_add(&s->nr_dirty, 1);
	else if (what == CH_CLEAN)
		atomic_fetch_add(&s->nr_clean, 1);
	else if (what == CH_FAULTY)
		atomic_fetch_add(&s->nr_faulty, 1);
	rf_dbg("%s: superblocks %s, events %llu (%d devices)", a->name,
	       what == CH_DIRTY ? "dirty" : what == CH_CLEAN ? "clean" :
	       what == CH_FAULTY ? "record a failed member" : "record a device change",
	       (unsigned long long)s->events, nwritten);
	return rf_failed_now(a) ? -EIO : 0;
}

static int write_all(struct rf_sbstate *s, enum change what, int faulty_slot)
{
	struct rf_sb_change c = { .faulty_slot = faulty_slot };

	return write_change(s, what, &c, -1, 0);
}

static void record_failed_locked(struct rf_sbstate *s);

int rf_sbstate_write_start_slow(struct rf_sbstate *s)
{
	int r = 0, v;

	/* md: no write goes on while a failed member is not yet recorded as
	 * faulty (else after a crash the next assemble could take its stale
	 * data for the array's). */
	if (atomic_load(&s->unrecorded)) {
		pthread_mutex_lock(&s->lock);
		record_failed_locked(s);
		pthread_mutex_unlock(&s->lock);
	}
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

/* s->lock held: record members that failed since the last time. */
static void record_failed_locked(struct rf_sbstate *s)
{
	uint64_t f;

	atomic_store(&s->unrecorded, false);
	f = rf_faulty(s->a) & s->a->present & ~s->recorded;
	while (f) {
		int i = __builtin_ctzll(f);

		f &= f - 1;
		s->recorded |= 1ull << i;
		if (s->m[i].has)
			write_all(s, CH_FAULTY, (int)s->m[i].sb.dev_number);
	}
}

static void record_failed(struct rf_sbstate *s)
{
	pthread_mutex_lock(&s->lock);
	record_failed_locked(s);
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

	if (act != RF_SYNC_RESYNC && act != RF_SYNC_REPAIR && act != RF_SYNC_IDLE)
		return;         /* check changes nothing; a recovery rebuilds slots (recovery_offset) */
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
	if (!s || !(s->m = calloc(RF_MAX_DEVS, sizeof(*s->m)))) {
		free(s);
		snprintf(err, errlen, "%s: out of memory for the superblock state", a->name);
		return -ENOMEM;
	}
	s->a = a;
	s->n = a->nmembers;
	atomic_init(&s->delay_ms, RF_SAFE_MODE_MS);
	for (i = 0; i < a->ndevs; i++) {
		struct rf_sbs_member *m = &s->m[i];

		if (i < s->n && !(a->present & (1ull << i)))
			continue;
		if (i < s->n && a->iom[i].layer) {
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
		if (i < s->n && (fresh < 0 || m->sb.events > s->m[fresh].sb.events))
			fresh = i;
	}
	if (fresh < 0) {
		free(s->m);
		free(s);
		return 0;
	}
	for (i = s->n; i < a->ndevs; i++) {
		char u1[40], u2[40];

		if (s->m[i].has && memcmp(s->m[i].sb.uuid, s->m[fresh].sb.uuid, 16)) {
			snprintf(err, errlen, "spare %s belongs to another md array (uuid %s, this one %s); clear its "
				 "superblock first if that array is not needed", a->members[i].path,
				 rf_sb_uuid_str(&s->m[i].sb, u1), rf_sb_uuid_str(&s->m[fresh].sb, u2));
			free(s->m);
			free(s);
			return -EEXIST;
		}
	}
	/* A rebuild that was under way resumes: below recovery_offset the
	 * device holds its slot's data. */
	for (i = 0; i < s->n; i++) {
		struct rf_sb *sb = &s->m[i].sb;

		if (!s->m[i].has || !(sb->feature_map & RF_SB_FEAT_RECOVERY))
			continue;
		if (!atomic_load(&a->recovering) || sb->recovery_offset < atomic_load(&a->recovery_cp))
			atomic_store(&a->recovery_cp, sb->recovery_offset);
		atomic_fetch_or(&a->recovering, 1ull << i);
		a->members[i].flags = RF_DEV_SPARE;
		rf_info("%s: %s in slot %d was being rebuilt: resuming at sector %llu", a->name, a->members[i].path,
			i, (unsigned long long)atomic_load(&a->recovery_cp));
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

/* Whether a member's superblock is not the freshest one's events or
 * clean state (before anything was written). */
static bool members_behind(const struct rf_sbstate *s)
{
	int i, fresh = -1;

	for (i = 0; i < s->n; i++)
		if (s->m[i].has && (fresh < 0 || s->m[i].sb.events > s->m[fresh].sb.events))
			fresh = i;
	for (i = 0; fresh >= 0 && i < s->n; i++)
		if (s->m[i].has && (s->m[i].sb.events != s->m[fresh].sb.events ||
				    s->m[i].sb.clean != s->m[fresh].sb.clean))
			return true;
	return false;
}

int rf_sbstate_start(struct rf_sbstate *s)
{
	int r;

	if (!s || s->running)
		return 0;
	/* A crash in the middle of a superblock update leaves some members
	 * one event behind (assembly takes them, as md does).  A clean array
	 * writes nothing until its next change, and a crash in the middle of
	 * that one would leave them two behind: stale, left out.  So bring
	 * every member to the freshest state now.  (A dirty array gets the
	 * same from its resync's first checkpoint or its end.) */
	if (s->resync_offset == RF_SB_MAX_SECTOR && members_behind(s)) {
		pthread_mutex_lock(&s->lock);
		write_all(s, CH_CLEAN, -1);
		pthread_mutex_unlock(&s->lock);
	}
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
	atomic_store(&s->unrecorded, true);
	pthread_mutex_lock(&s->tlock);
	s->kicked = true;
	pthread_cond_signal(&s->tcond);
	pthread_mutex_unlock(&s->tlock);
}

/* ---- device changes (member.c), s->lock held through rf_sbstate_lock() ---- */

void rf_sbstate_lock(struct rf_sbstate *s)
{
	if (s)
		pthread_mutex_lock(&s->lock);
}

void rf_sbstate_unlock(struct rf_sbstate *s)
{
	if (s)
		pthread_mutex_unlock(&s->lock);
}

/* A device number no device of the array holds in dev_roles. */
static uint32_t free_dev_number(struct rf_sbstate *s)
{
	uint32_t n;
	int i;

	for (n = 0; n < RF_SB_MAX_DEV; n++) {
		for (i = 0; i < s->a->ndevs; i++)
			if (s->m[i].has && s->m[i].sb.dev_number == n)
				break;
		if (i == s->a->ndevs)
			return n;
	}
	return RF_SB_MAX_DEV;
}

int rf_sbstate_add_spare(struct rf_sbstate *s, int dev, char *err, size_t errlen)
{
	struct rf_array *a = s->a;
	struct rf_sbs_member *m = &s->m[dev], *model = NULL;
	struct rf_sb_change c = { .faulty_slot = -1, .set_role = true, .role_value = RF_SB_ROLE_SPARE };
	int i, r;

	for (i = 0; i < a->nmembers; i++)
		if (s->m[i].has && !dev_faulty(a, i) && (!model || s->m[i].sb.events > model->sb.events))
			model = &s->m[i];
	if (!model) {
		snprintf(err, errlen, "%s: no member with a superblock to copy the array's from",
			 a->members[dev].path);
		return -EIO;
	}
	memset(m, 0, sizeof(*m));
	r = rf_sb_io_fd(&m->io, a->members[dev].fd);
	if (r) {
		snprintf(err, errlen, "%s: %s", a->members[dev].path, strerror(-r));
		return r;
	}
	c.role_slot = free_dev_number(s);
	r = rf_sb_write_spare(&model->io, &model->sb, &m->io, a->members[dev].path, c.role_slot, &m->sb, err,
			      errlen);
	if (r)
		return r;
	/* The others learn of it; the spare takes the events they get. */
	m->has = true;
	return write_change(s, CH_DEVICES, &c, -1, 0);
}

bool rf_sbstate_has(struct rf_sbstate *s, int dev)
{
	return s && s->m[dev].has;
}

uint64_t rf_sbstate_dev_events(struct rf_sbstate *s, int dev)
{
	return s && s->m[dev].has ? s->m[dev].sb.events : 0;
}

void rf_sbstate_forget(struct rf_sbstate *s, int dev)
{
	memset(&s->m[dev], 0, sizeof(s->m[dev]));
	rf_bitmap_dev_changed(s->a->bitmap, dev);
}

void rf_sbstate_swap(struct rf_sbstate *s, int i, int j)
{
	struct rf_sbs_member t = s->m[i];

	s->m[i] = s->m[j];
	s->m[j] = t;
	if (i < s->n)
		s->recorded &= ~(1ull << i);
	if (j < s->n)
		s->recorded &= ~(1ull << j);
	rf_bitmap_dev_changed(s->a->bitmap, i);
	rf_bitmap_dev_changed(s->a->bitmap, j);
}

/* Device dev's role in everyone's superblocks (role < 0: unchanged),
 * and with recovery its own rebuild position. */
static int dev_change(struct rf_sbstate *s, enum change what, int dev, int role, bool recovery, uint64_t off)
{
	struct rf_sb_change c = { .faulty_slot = -1 };

	if (!s->m[dev].has)
		return 0;
	if (role >= 0) {
		c.set_role = true;
		c.role_slot = s->m[dev].sb.dev_number;
		c.role_value = (uint16_t)role;
	}
	return write_change(s, what, &c, recovery ? dev : -1, off);
}

int rf_sbstate_set_slot(struct rf_sbstate *s, int dev, int slot, uint64_t recovery_offset)
{
	return dev_change(s, CH_DEVICES, dev, slot < 0 ? RF_SB_ROLE_SPARE : slot, true, recovery_offset);
}

int rf_sbstate_mark_faulty(struct rf_sbstate *s, int dev)
{
	return dev_change(s, CH_FAULTY, dev, RF_SB_ROLE_FAULTY, false, 0);
}

int rf_sbstate_set_recovery(struct rf_sbstate *s, int dev, uint64_t recovery_offset)
{
	return dev_change(s, CH_DEVICES, dev, -1, true, recovery_offset);
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
