/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sbstate.c - clean/dirty, events and failed members in the superblocks.
 *
 * Three writers of superblocks, all under the device lock and s->lock
 * (sb_lock(): they walk the array's device table, where each device's
 * superblock is kept), all through rf_sb_update_io() on every present,
 * in-sync member:
 *  - mark dirty: the first write request after the array was clean, on
 *    the submitting thread, before that request is split.  Every other
 *    writer that arrives meanwhile waits on s->lock and then finds DIRTY.
 *  - mark clean: the timer thread, after a whole period with no write
 *    request started, inside rf_barrier_quiesced(): writes are drained (none
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
 * A device being rebuilt keeps its own checkpoint (md's recovery_offset,
 * feature bit MD_FEATURE_RECOVERY_OFFSET, in its own superblock): every
 * flushed update writes each one's, and the rebuild's checkpoints (every
 * 1/16 of the walk or few seconds, on_sync()) make such an update, so a
 * crash resumes each device where it stood; two rebuilt in one pass may
 * stand at different offsets (one resumed from further along).
 *
 * rf_sbstate_start_resync() starts the resync that is due once the array
 * serves, unless sync_action is frozen.
 *
 * The write fast path is one acquire load of s->mode.  Marking idle costs
 * writers nothing: the timer turns DIRTY into DIRTY_IDLE, and only the
 * first writer after that pays a compare-and-swap to turn it back.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/iolog.h"
#include "raidfuse/lockcheck.h"
#include "raidfuse/log.h"
#include "raidfuse/overlay.h"
#include "raidfuse/sync.h"
#include "services/sbstate.h"

enum change { CH_DIRTY, CH_CLEAN, CH_FAULTY, CH_DEVICES };

/* Every writer of superblocks: the device lock (it walks the table),
 * then s->lock. */
static void sb_lock(struct rf_sbstate *s)
{
	rf_devs_lock(s->a);
	pthread_mutex_lock(&s->lock);
}

static void sb_unlock(struct rf_sbstate *s)
{
	pthread_mutex_unlock(&s->lock);
	rf_devs_unlock(s->a);
}

/* The freshest device with a superblock among [0, n), faulty ones left
 * out when in_sync; -1 if none. */
static int freshest(struct rf_array *a, int n, bool in_sync)
{
	int i, fresh = -1;

	for (i = 0; i < n; i++)
		if (rf_dev_get(a, i)->sb_has && !(in_sync && rf_dev_faulty(a, i)) &&
		    (fresh < 0 || rf_dev_get(a, i)->sb.events > rf_dev_get(a, fresh)->sb.events))
			fresh = i;
	return fresh;
}

/* A reshape's geometries in a start's record (the array's, as begun). */
static void reshape_geoms(struct rf_array *a, struct rf_sb_change *c)
{
	const struct rf_reshape *rs = rf_array_reshape_state(a);
	const struct rf_geom *g = rf_array_geom(a);

	c->reshape_geom = true;
	c->reshape_level = rs->prev.level;
	c->reshape_layout = rs->prev.layout;
	c->reshape_new_level = g->level;
	c->reshape_new_layout = g->layout;
	c->reshape_new_chunk = g->chunk_sectors;
}

/* s->lock held: device i's part of change c when its superblock missed a
 * reshape's start or end (a crash while it was written; assembly took the
 * freshest's word for it): the next update brings it up to date, so that
 * no later assembly finds two members disagreeing on the reshape. */
static void reshape_catch_up(struct rf_sbstate *s, int i, const struct rf_dev *m, struct rf_sb_change *mine)
{
	struct rf_array *a = s->a;
	const struct rf_reshape *rs = rf_array_reshape_state(a);
	bool on = rs->active;   /* the device lock held: it changes under it */

	if (m->sb.kind == RF_SB_090 || mine->set_reshape == RF_SB_RESHAPE_START ||
	    mine->set_reshape == RF_SB_RESHAPE_DONE)
		return;
	if (on && (!m->sb.reshape || mine->set_reshape == RF_SB_RESHAPE_AT) && i < rf_array_nslots(a)) {
		mine->set_reshape = RF_SB_RESHAPE_AT;
		mine->reshape_position = s->reshape_recorded;
		mine->reshape_raid_disks = rf_array_geom(a)->raid_disks;
		mine->reshape_delta = rf_array_geom(a)->raid_disks - rs->prev.raid_disks;
		mine->reshape_backwards = rs->backwards;
		mine->reshape_new_offset = (int32_t)(((int64_t)m->new_data_offset - (int64_t)m->data_offset) / 512);
		reshape_geoms(a, mine);
	} else if (!on && m->sb.reshape) {
		mine->set_reshape = RF_SB_RESHAPE_DONE;
	}
}

/* write_change()'s part for device i, on a thread of its own. */
static void write_one(void *arg, int i)
{
	struct rf_sbstate *s = arg;
	struct rf_dev *m = rf_dev_get(s->a, i);

	if (s->mine_do[i])
		s->mine_r[i] = rf_sb_update_io(&m->sb_io, m->path, &m->sb, &s->mine[i], s->mine_err[i],
					       sizeof(s->mine_err[i]));
}

/* s->lock held.  Write one change to every device that is not faulty
 * (slots and spares, as md); a device that fails it is failed.  own, when
 * not NULL, is device own_dev's part of the change (its recovery state).
 * Returns 0, or -EIO when the array failed. */
static int write_change(struct rf_sbstate *s, enum change what, struct rf_sb_change *c, int own_dev,
			uint64_t own_recovery)
{
	struct rf_array *a = s->a;
	uint64_t rec = rf_array_recovering(a), rec_off[RF_MAX_MEMBERS], repl_off;
	const struct rf_dev *model = NULL;
	int i, nwritten = 0, fresh;

	/* The rebuild's checkpoints as they are before the flush: what the
	 * rebuild wrote below them is on disk after it. */
	for (i = 0; i < rf_array_nslots(a) && i < RF_MAX_MEMBERS; i++)
		rec_off[i] = rec & (1ull << i) ? rf_dev_recovery_offset(a, i) : 0;
	/* A replacement's copy runs when nothing is rebuilt: its checkpoint
	 * is the walk's. */
	repl_off = rec ? 0 : rf_array_recovery_cp(a);
	c->clean = what == CH_CLEAN || (what != CH_DIRTY && atomic_load(&s->mode) == RF_SBS_CLEAN);
	/* Dirty vouches for nothing: the first write waits for it. */
	if (what != CH_DIRTY && !rf_test_break("clean"))
		rf_devs_flush(a, false, "before a superblock update");
	c->resync_offset = s->resync_offset;
	c->events = rf_sb_events_next(s->events);
	/* md writes the bitmap's events first: one older than its
	 * superblocks is stale. */
	rf_bitmap_set_events(rf_array_bitmap(a), c->events);
	/* Every device gets the whole role table of the freshest superblock
	 * (each written one got every change): one that missed changes while
	 * it was out, then came back (re-add), says what the others say, or an
	 * assembly that takes its superblock as the array's would leave out
	 * members that are in sync. */
	fresh = freshest(a, rf_devs_count(a), true);
	if (fresh >= 0) {
		model = rf_dev_get(a, fresh);
		/* the devices are written at once: the model's own superblock
		 * changes meanwhile */
		s->model_sb = model->sb;
	}
	c->roles_from = model && !rf_test_break("stale-roles") ? &s->model_sb : NULL;
	for (i = 0; i < rf_devs_count(a); i++) {
		struct rf_dev *m = rf_dev_get(a, i);
		struct rf_sb_change mine;

		s->mine_do[i] = m->sb_has && !rf_dev_faulty(a, i);
		if (!s->mine_do[i])
			continue;
		mine = *c;
		/* md's super_*_sync: each device's own flags, every time. */
		mine.set_devflags = true;
		mine.devflags = (uint8_t)((m->flags & RF_DEV_WRITE_MOSTLY ? RF_SB_DEVFLAG_WRITE_MOSTLY : 0) |
					  (m->flags & RF_DEV_FAILFAST ? RF_SB_DEVFLAG_FAILFAST : 0));
		/* md's super_1_sync: the replacement flag, and a
		 * replacement's own copy checkpoint, every time. */
		if (m->sb.kind != RF_SB_090) {
			mine.set_replacement = true;
			mine.replacement = rf_replacement_slot(a, i) >= 0;
		}
		reshape_catch_up(s, i, m, &mine);
		/* One that missed a takeover or a raid1's new count (a crash
		 * while they were written; assembly took the freshest's word)
		 * gets the freshest's level, layout and count. */
		if (model && m->sb.kind != RF_SB_090 && !m->sb.reshape && !model->sb.reshape &&
		    !mine.set_reshape && (m->sb.level != model->sb.level || m->sb.layout != model->sb.layout ||
					  m->sb.raid_disks != model->sb.raid_disks ||
					  m->sb.chunk_sectors != model->sb.chunk_sectors)) {
			if (!mine.set_level) {
				mine.set_level = true;
				mine.level = model->sb.level;
				mine.layout = model->sb.layout;
				mine.chunk_sectors = model->sb.chunk_sectors;
				mine.level_size = model->sb.level ? model->sb.size : model->sb.data_size;
			}
			if (!mine.set_raid_disks)
				mine.set_raid_disks = model->sb.raid_disks;
		}
		/* One that missed a size change (a crash while they were
		 * written) gets the freshest's used size. */
		if (model && m->sb.kind != RF_SB_090 && !mine.set_size && m->sb.size != model->sb.size &&
		    !m->sb.reshape && !model->sb.reshape)
			mine.set_size = model->sb.size;
		if (mine.set_size)
			mine.member_sectors = m->size / 512;
		if (i == own_dev) {
			mine.set_recovery = true;
			mine.recovery_offset = own_recovery;
		} else if (i < rf_array_nslots(a) && (rf_array_reshape_state(a)->prev_absent & (1ull << i)) &&
			   what != CH_DIRTY) {
			/* A member a level change added: in sync in the rows
			 * reshaped (md's reshape_request moves the
			 * recovery_offset of a device not in sync with the
			 * position, in member sectors; its end_reshape puts it
			 * in sync). */
			mine.set_recovery = true;
			mine.recovery_offset = mine.set_reshape == RF_SB_RESHAPE_DONE || !rf_array_reshape_state(a)->active ?
					       RF_SB_MAX_SECTOR :
					       s->reshape_recorded / (uint64_t)rf_array_geom(a)->data_disks;
		} else if (mine.replacement && what != CH_DIRTY) {
			mine.set_recovery = true;
			mine.recovery_offset = repl_off;
		} else if (what != CH_DIRTY && i < rf_array_nslots(a) && (rec & (1ull << i))) {
			/* A device being rebuilt records its own checkpoint
			 * with every flushed update, as md_update_sb writes
			 * each rdev's recovery_offset. */
			mine.set_recovery = true;
			mine.recovery_offset = rec_off[i];
		}
		s->mine[i] = mine;
	}
	/* md_update_sb: every device's write submitted, then all waited for */
	rf_run_parallel(rf_devs_count(a), write_one, s);
	for (i = 0; i < rf_devs_count(a); i++) {
		struct rf_dev *m = rf_dev_get(a, i);

		if (!s->mine_do[i])
			continue;
		if (s->mine_r[i]) {
			rf_err("device %d: %s", i, s->mine_err[i]);
			rf_dev_fail(a, i, s->mine_r[i], "superblock write", m->sb.sb_offset * 512);
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
	rf_dbg("%s: superblocks %s, events %llu (%d devices)", rf_array_name(a),
	       what == CH_DIRTY ? "dirty" : what == CH_CLEAN ? "clean" :
	       what == CH_FAULTY ? "record a failed member" : "record a device change",
	       (unsigned long long)s->events, nwritten);
	return rf_array_failed(a) ? -EIO : 0;
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
		sb_lock(s);
		record_failed_locked(s);
		sb_unlock(s);
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
	sb_lock(s);
	if (atomic_load(&s->mode) == RF_SBS_CLEAN) {
		r = write_all(s, CH_DIRTY, -1);
		/* Pairs with the acquire load in rf_sbstate_write_start(). */
		if (!r)
			atomic_store_explicit(&s->mode, RF_SBS_DIRTY, memory_order_release);
	}
	sb_unlock(s);
	return r;
}

/* Inside rf_barrier_quiesced(): no write in flight, none can start. */
static int clean_drained(void *arg)
{
	struct rf_sbstate *s = arg;

	sb_lock(s);
	/* A write that came before the drain turned it DIRTY again: it has
	 * ended, but the array was not idle; the next period decides. */
	if (atomic_load(&s->mode) == RF_SBS_DIRTY_IDLE) {
		write_all(s, CH_CLEAN, -1);
		atomic_store(&s->mode, RF_SBS_CLEAN);
	}
	sb_unlock(s);
	return 0;
}

/* s->lock held: record members that failed since the last time. */
static void record_failed_locked(struct rf_sbstate *s)
{
	uint64_t f;

	if (s->reconf)
		return;         /* the table moves: after it (hook_reconf()) */
	atomic_store(&s->unrecorded, false);
	f = rf_array_faulty(s->a) & rf_array_present(s->a) & ~s->recorded;
	while (f) {
		int i = __builtin_ctzll(f);

		f &= f - 1;
		s->recorded |= 1ull << i;
		if (rf_dev_get(s->a, i)->sb_has)
			write_all(s, CH_FAULTY, (int)rf_dev_get(s->a, i)->sb.dev_number);
	}
}

static void record_failed(struct rf_sbstate *s)
{
	sb_lock(s);
	record_failed_locked(s);
	sb_unlock(s);
}

static void tick(struct rf_sbstate *s)
{
	int v = atomic_load(&s->mode);

	if (v == RF_SBS_DIRTY)
		atomic_compare_exchange_strong(&s->mode, &v, RF_SBS_DIRTY_IDLE);
	else if (v == RF_SBS_DIRTY_IDLE)
		rf_barrier_quiesced(s->a, clean_drained, s);
}

/* The timer's run: a kick (a member failed) or an idle period passed.
 * With no period (safe_mode_delay 0) the array is marked clean only at
 * shutdown. */
static void timer_run(void *arg)
{
	struct rf_sbstate *s = arg;

	record_failed(s);
	if (atomic_load(&s->timer.period_ms))
		tick(s);
}

int rf_sbstate_safe_mode_delay_get(const struct rf_array *a, unsigned *ms)
{
	struct rf_sbstate *s = rf_array_sbstate(a);

	if (!s)
		return -ENOENT;
	*ms = atomic_load(&s->timer.period_ms);
	return 0;
}

int rf_sbstate_safe_mode_delay_set(struct rf_array *a, unsigned ms)
{
	struct rf_sbstate *s = rf_array_sbstate(a);

	if (!s)
		return -ENOENT;
	rf_bg_set_period(&s->timer, ms);
	return 0;
}

/* The sync thread's news (see rf_sync_notify_fn), on its thread or on
 * the thread that set resync_start: record where a resync is due. */
static void on_sync(struct rf_array *a, enum rf_sync_action act, bool completed, uint64_t pos, void *priv)
{
	struct rf_sbstate *s = priv;
	uint64_t cp;

	if (act == RF_SYNC_RECOVER) {
		/* A rebuild's checkpoint: every device being rebuilt writes
		 * its own recovery_offset (write_change()); where it ends,
		 * member.c's end of the rebuild writes them. */
		struct rf_sb_change c = { .faulty_slot = -1 };

		if (completed)
			return;
		sb_lock(s);
		write_change(s, CH_DEVICES, &c, -1, 0);
		sb_unlock(s);
		return;
	}
	if (act != RF_SYNC_RESYNC && act != RF_SYNC_REPAIR && act != RF_SYNC_IDLE)
		return;         /* check changes nothing */
	sb_lock(s);
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
	sb_unlock(s);
}

/* Whether the array, not failed, has as many members missing as its
 * level survives without, so that no row has redundancy left: the
 * level's sync work says (core.h no_redundancy; raid10's does not: which
 * rows keep a copy depends on which members are missing). */
static bool no_redundancy(const struct rf_array *a)
{
	const struct rf_sync_ops *ops = rf_array_sync_ops(a);

	return ops && ops->no_redundancy && !rf_array_failed(a) && ops->no_redundancy(a, rf_array_faulty(a));
}

int rf_sbstate_start_resync(struct rf_array *a, bool frozen)
{
	struct rf_sbstate *s = rf_array_sbstate(a);
	uint64_t cp;
	int r;

	if (frozen && rf_array_has_sync(a))
		rf_sync_request(a, RF_SYNC_FROZEN);
	/* A reshape under way goes on from here (frozen: once unfrozen). */
	rf_array_set_serving(a);
	/* raid0: nothing to resync (its superblocks may say otherwise). */
	if (!s || !rf_array_sync_ops(a))
		return 0;
	pthread_mutex_lock(&s->lock);
	cp = s->resync_offset;
	pthread_mutex_unlock(&s->lock);
	if (cp == RF_SB_MAX_SECTOR)
		return 0;
	if (no_redundancy(a)) {
		/* md's raid5/raid1 sync_request skips every row then: what
		 * the missing members hold is what the rest say, so the rows
		 * agree as they are.  Recorded done; a rebuild onto a spare
		 * computes the missing members.  Rows written at a crash
		 * keep md's write hole: their missing member reads as their
		 * parity says, which assembly's --force (or an empty partial
		 * parity log) accepted. */
		rf_warn("%s: resync due from sector %llu: recorded done without one, as md does: raid%d is degraded "
			"to no redundancy (%d member(s) missing), no row has copies or parity to compare; in rows "
			"being written at a crash the missing member now reads as their parity says, which may "
			"not be what was written", rf_array_name(a), (unsigned long long)cp, rf_array_geom(a)->level,
			__builtin_popcountll(rf_array_faulty(a)));
		return rf_sync_set_resync_cp(a, RF_SYNC_NONE);
	}
	if (frozen) {
		rf_info("%s: resync due from sector %llu: sync_action frozen, not started", rf_array_name(a),
			(unsigned long long)cp);
		return 0;
	}
	/* md runs nothing beside a reshape: the walk starts the resync once
	 * the reshape ends (services/reshape.c). */
	{
		uint64_t pos;
		bool back;

		if (rf_array_reshape(a, &pos, &back)) {
			rf_info("%s: resync due from sector %llu: it runs when the reshape under way ends",
				rf_array_name(a), (unsigned long long)cp);
			return 0;
		}
	}
	/* md rebuilds first and resyncs once recovery ends: a device being
	 * rebuilt (resumed from its recovery_offset at assembly) goes first. */
	if (rf_array_recovering(a) || rf_replace_mask(a)) {
		rf_info("%s: resync due from sector %llu: a %s is due first; the resync starts when it ends",
			rf_array_name(a), (unsigned long long)cp,
			rf_array_recovering(a) ? "rebuild" : "replacement's copy");
		rf_mgmt_resync_after_rebuild(a);
		return 0;
	}
	rf_info("%s: resync due from sector %llu: starting it", rf_array_name(a), (unsigned long long)cp);
	r = rf_sync_request(a, RF_SYNC_RESYNC);
	if (r == -EBUSY) {
		rf_info("%s: the resync due from sector %llu waits for the sync action under way; it starts when "
			"that ends", rf_array_name(a), (unsigned long long)cp);
		rf_mgmt_resync_after_rebuild(a);
		return 0;
	}
	if (r)
		rf_warn("%s: the resync due from sector %llu did not start: %s", rf_array_name(a), (unsigned long long)cp,
			strerror(-r));
	return r;
}

/* Hooks (core/hooks.h): the array calls these, nothing else of ours. */
static int hook_write_start(void *priv, uint64_t off, uint64_t len)
{
	struct rf_sbstate *s = priv;

	(void)off;
	(void)len;
	/* md marks no raid0 dirty: it has nothing to resync (the level
	 * changes only with every request drained). */
	if (!rf_array_geom(s->a)->level)
		return 0;
	return rf_sbstate_write_start(s);
}

static void hook_member_failed(void *priv, int dev)
{
	(void)dev;
	rf_sbstate_kick(priv);
}

/* A slot that changed device has recorded nothing of the new one. */
static void hook_dev_changed(void *priv, int dev)
{
	struct rf_sbstate *s = priv;

	pthread_mutex_lock(&s->lock);
	if (dev < s->n)
		s->recorded &= ~(1ull << dev);
	pthread_mutex_unlock(&s->lock);
}

static void hook_info(void *priv, struct rf_array_info *out)
{
	struct rf_sbstate *s = priv;
	const struct rf_sb *sb;
	int fresh;

	out->sb_dirty = atomic_load(&s->mode) != RF_SBS_CLEAN;
	/* What mdadm --detail prints of the superblocks: the array's
	 * identity from the freshest one, the events as last written. */
	pthread_mutex_lock(&s->lock);
	fresh = freshest(s->a, s->n, false);
	if (fresh >= 0) {
		sb = &rf_dev_get(s->a, fresh)->sb;
		rf_sb_uuid_str(sb, out->uuid);
		snprintf(out->set_name, sizeof(out->set_name), "%s", sb->name);
		out->ctime = sb->ctime;
	}
	out->events = s->events;
	pthread_mutex_unlock(&s->lock);
}

/* While the table changes the timer thread records nothing (it would
 * read slots being moved); what failed meanwhile is recorded after. */
static void hook_reconf(void *priv, bool begin)
{
	struct rf_sbstate *s = priv;

	sb_lock(s);
	s->reconf = begin;
	sb_unlock(s);
	if (!begin && atomic_load(&s->unrecorded))
		rf_sbstate_kick(s);
}

static int hook_start(void *priv)
{
	return rf_sbstate_start(priv);
}

static void hook_stop(void *priv)
{
	rf_sbstate_stop(priv);
}

static void hook_close(void *priv)
{
	rf_sbstate_close(priv);
}

static const struct rf_hooks sbstate_hooks = {
	.name = "superblocks",
	.write_start = hook_write_start,
	.member_failed = hook_member_failed,
	.dev_changed = hook_dev_changed,
	.reconf = hook_reconf,
	.info = hook_info,
	.start = hook_start,
	.stop = hook_stop,
	.close = hook_close,
};

/* Forget what was read: the devices' superblock fields. */
static void forget_all(struct rf_array *a)
{
	int i;

	for (i = 0; i < rf_devs_count(a); i++) {
		struct rf_dev *d = rf_dev_get(a, i);

		d->sb_has = false;
		memset(&d->sb_io, 0, sizeof(d->sb_io));
	}
}

/* Two of the first n devices whose superblocks carry one device UUID are
 * one member named twice in ways no file check ties together (two
 * servers of one file, a copy): -EINVAL, naming both. */
static int same_device_uuid(struct rf_array *a, int n, char *err, size_t errlen)
{
	struct rf_member_id mi, mj;
	char wi[PATH_MAX + 32], wj[PATH_MAX + 32];
	int i, j;

	for (i = 1; i < n; i++) {
		if (!rf_dev_get(a, i)->sb_has)
			continue;
		rf_dev_member_id(rf_dev_get(a, i), &mi);
		for (j = 0; j < i; j++) {
			if (!rf_dev_get(a, j)->sb_has)
				continue;
			rf_dev_member_id(rf_dev_get(a, j), &mj);
			if (!rf_member_same(&mj, &mi))
				continue;
			snprintf(wj, sizeof(wj), "member %d (%s)", j, rf_dev_get(a, j)->path);
			snprintf(wi, sizeof(wi), "member %d (%s)", i, rf_dev_get(a, i)->path);
			rf_member_same_msg(err, errlen, wj, &mj, wi, &mi, "each member must be given once");
			return -EINVAL;
		}
	}
	return 0;
}

/* Every device's copy of the role table (the next superblock write takes
 * the table from one of them): device numbers other than keep that hold
 * role hold to instead. */
static void roles_recast(struct rf_array *a, uint32_t keep, uint16_t role, uint16_t to)
{
	int i;
	uint32_t j;

	for (i = 0; i < rf_devs_count(a); i++) {
		struct rf_sb *sb = &rf_dev_get(a, i)->sb;

		if (!rf_dev_get(a, i)->sb_has || sb->kind == RF_SB_090)
			continue;
		for (j = 0; j < sb->max_dev && j < RF_SB_MAX_DEV; j++)
			if (j != keep && sb->dev_roles[j] == role)
				sb->dev_roles[j] = to;
	}
}

/* Device number dn holds role in every device's copy of the table. */
static void roles_set(struct rf_array *a, uint32_t dn, uint16_t role)
{
	int i;

	for (i = 0; i < rf_devs_count(a); i++) {
		struct rf_sb *sb = &rf_dev_get(a, i)->sb;

		if (rf_dev_get(a, i)->sb_has && sb->kind != RF_SB_090 && dn < sb->max_dev && dn < RF_SB_MAX_DEV)
			sb->dev_roles[dn] = role;
	}
}

/* A replacement md records (its own MD_FEATURE_REPLACEMENT, the slot's
 * role beside the device it replaces, recovery_offset: how far its copy
 * got), as kernel md or an earlier run left it: a spare of the table
 * becomes the slot's replacement again and the copy resumes from the
 * lowest such offset (member.c's management thread starts it).  One that
 * cannot (its slot missing, failed or being rebuilt, an overlay) is a
 * spare.  A replacement assembly put in a slot (the device it replaced
 * was not there, md's raid5_run does the same) is that slot's device, its
 * copy a rebuild resumed from its recovery_offset: the absent device
 * number is faulty. */
static void resume_replacements(struct rf_array *a, int nslots, int fresh)
{
	const struct rf_sb *f = &rf_dev_get(a, fresh)->sb;
	uint64_t cp = RF_SB_MAX_SECTOR;
	int i;

	if (f->kind == RF_SB_090)
		return;
	for (i = 0; i < rf_devs_count(a); i++) {
		struct rf_dev *m = rf_dev_get(a, i);
		uint32_t dn = m->sb.dev_number;
		int k = dn < f->max_dev ? f->dev_roles[dn] : RF_SB_ROLE_SPARE;
		uint64_t off;

		if (!m->sb_has || !(m->sb.feature_map & RF_SB_FEAT_REPLACEMENT))
			continue;
		if (i < nslots) {
			roles_recast(a, dn, (uint16_t)i, RF_SB_ROLE_FAULTY);
			rf_info("%s: %s replaced slot %d's device, which is not here: it serves the slot%s",
				rf_array_name(a), m->path, i,
				m->sb.feature_map & RF_SB_FEAT_RECOVERY ? ", rebuilt from where its copy stood" : "");
			continue;
		}
		if (k >= nslots)
			continue;
		if (rf_array_overlay(a) || !(rf_array_present(a) >> k & 1) || (rf_array_faulty(a) >> k & 1) ||
		    (rf_array_recovering(a) >> k & 1) || rf_replace_dev_of(a, k) >= 0) {
			roles_set(a, dn, RF_SB_ROLE_SPARE);
			rf_warn("%s: %s was slot %d's replacement; the slot cannot be copied now (%s): a spare",
				rf_array_name(a), m->path, k,
				rf_array_overlay(a) ? "an overlay" : rf_replace_dev_of(a, k) >= 0 ?
				"it has another replacement" : "it is missing, failed or being rebuilt");
			continue;
		}
		/* Without a recovery offset md's replacement is in sync: the
		 * copy is complete but was not taken over; it runs again. */
		off = m->sb.feature_map & RF_SB_FEAT_RECOVERY ? m->sb.recovery_offset : 0;
		/* TEST-ONLY FAULT (56-replace-resume's control): the copy
		 * resumes three quarters of the way past its checkpoint. */
		if (rf_test_break("replace-resume-late") && off < m->sb.data_size)
			off += (m->sb.data_size - off) / 4 * 3 / 128 * 128;
		rf_replace_attach(a, k, i);
		if (off < cp)
			cp = off;
		rf_info("%s: %s is slot %d's replacement (md's replacement flag): its copy resumes at sector %llu",
			rf_array_name(a), m->path, k, (unsigned long long)off);
	}
	if (cp != RF_SB_MAX_SECTOR)
		rf_array_set_recovery_cp(a, cp);
}

int rf_sbstate_open(struct rf_array *a, struct rf_sbstate **out, char *err, size_t errlen)
{
	struct rf_sbstate *s;
	int i, r, fresh, n = rf_devs_count(a);

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "%s: out of memory for the superblock state", rf_array_name(a));
		return -ENOMEM;
	}
	s->a = a;
	s->n = rf_array_nslots(a);
	{
		uint64_t pos;
		bool back;

		if (rf_array_reshape(a, &pos, &back))
			s->reshape_recorded = pos;
	}
	for (i = 0; i < n; i++) {
		struct rf_dev *m = rf_dev_get(a, i);

		if (i < s->n && !(rf_array_present(a) & (1ull << i)))
			continue;
		if (i < s->n && m->io.layer) {
			rf_ovl_sb_io(m->io.layer, &m->sb_io);
			r = 0;
		} else {
			r = rf_dev_sb_io(m, &m->sb_io);
			if (r)
				snprintf(err, errlen, "member %d (%s): %s", i, m->path, strerror(-r));
		}
		if (!r)
			r = rf_sb_read_io(&m->sb_io, m->path, &m->sb, err, errlen);
		if (r == -ENOENT)
			continue;
		if (r) {
			forget_all(a);
			free(s);
			return r;
		}
		m->sb_has = true;
	}
	fresh = freshest(a, s->n, false);
	if (fresh < 0) {
		forget_all(a);
		free(s);
		return 0;
	}
	for (i = s->n; i < n; i++) {
		const struct rf_dev *m = rf_dev_get(a, i), *f = rf_dev_get(a, fresh);
		char u1[40], u2[40];

		if (m->sb_has && memcmp(m->sb.uuid, f->sb.uuid, 16)) {
			snprintf(err, errlen, "spare %s belongs to another md array (uuid %s, this one %s); clear its "
				 "superblock first if that array is not needed", m->path,
				 rf_sb_uuid_str(&m->sb, u1), rf_sb_uuid_str(&f->sb, u2));
			forget_all(a);
			free(s);
			return -EEXIST;
		}
	}
	r = same_device_uuid(a, n, err, errlen);
	if (r) {
		forget_all(a);
		free(s);
		return r;
	}
	/* A rebuild that was under way resumes: below recovery_offset the
	 * device holds its slot's data.  But mid-reshape, the last slot of a
	 * previous geometry whose last member holds only Q or P (a raid5 ->
	 * raid6 change; a raid0 grown through a raid4, whose empty P slot a
	 * spare took) is the member the change added: md's recovery_offset
	 * follows the reshape there, and md's run() counts it as parity not
	 * yet written, not as a rebuild; here it is whole in the new
	 * geometry and missing in the previous one.  So is that slot's
	 * member when its own superblock missed the reshape's start (a crash
	 * while the start was written: it still says spare; md would take it
	 * as in sync). */
	for (i = 0; i < s->n; i++) {
		struct rf_dev *m = rf_dev_get(a, i);
		const struct rf_reshape *rs = rf_array_reshape_state(a);

		/* In a slot by the freshest superblock, a spare by its own: the
		 * rebuild's start never reached it (assembly says so too):
		 * rebuilt from the start. */
		if (m->sb_has && !rs->active && m->sb.kind != RF_SB_090 && m->sb.role >= RF_SB_ROLE_MAX) {
			rf_dev_resume_recovery(a, i, 0);
			continue;
		}
		if (!m->sb_has || (!(m->sb.feature_map & RF_SB_FEAT_RECOVERY) && m->sb.reshape))
			continue;
		if (rs->active && !rs->backwards && i == rs->prev.raid_disks - 1 &&
		    ((rs->prev.level == 6 && rf_r6_q_last(rs->prev.layout)) || rs->prev.level == 4 ||
		     (rs->prev.level == 5 && rs->prev.layout == RF_ALGO_PARITY_N))) {
			rf_array_set_prev_absent(a, 1ull << i);
			continue;
		}
		/* Its own superblock says it was that member, the freshest
		 * says the reshape ended (a crash while the end was
		 * recorded): every row was written before it; the next update
		 * records it in sync. */
		if (!rs->active && m->sb.reshape && m->sb.delta_disks >= 0 &&
		    i == (int)m->sb.raid_disks - m->sb.delta_disks - 1 &&
		    ((m->sb.level == 6 && rf_r6_q_last(m->sb.layout)) || m->sb.level == 4 ||
		     (m->sb.level == 5 && m->sb.layout == RF_ALGO_PARITY_N))) {
			rf_array_set_prev_absent(a, 1ull << i);
			continue;
		}
		if (m->sb.feature_map & RF_SB_FEAT_RECOVERY)
			rf_dev_resume_recovery(a, i, m->sb.recovery_offset);
	}
	resume_replacements(a, s->n, fresh);
	s->events = rf_dev_get(a, fresh)->sb.events;
	s->resync_offset = rf_dev_get(a, fresh)->sb.resync_offset;
	atomic_init(&s->mode, RF_SBS_CLEAN);
	pthread_mutex_init(&s->lock, NULL);
	rf_lock_rank(&s->lock, RF_LOCK_SBSTATE, "superblock state lock");
	r = rf_bg_init(&s->timer, "rf-sbstate", RF_SAFE_MODE_MS, timer_run, s);
	if (r) {
		snprintf(err, errlen, "%s: the superblock timer: %s", rf_array_name(a), strerror(-r));
		pthread_mutex_destroy(&s->lock);
		free(s);
		return r;
	}
	r = rf_array_add_hooks(a, &sbstate_hooks, s);
	if (r) {
		snprintf(err, errlen, "%s: no room for the superblock state's hooks", rf_array_name(a));
		rf_sbstate_close(s);
		return r;
	}
	*out = s;
	return 0;
}

/* md keeps the superblocks of arrays that carry them and are written:
 * clean/dirty where a resync can be needed, not a raid0's (its
 * superblocks change with a failure, a spare, a takeover). */
static int service_open(struct rf_array *a, const struct rf_config *cfg, char *err, size_t errlen)
{
	struct rf_sbstate *s;
	int r;

	if (!cfg->has_uuid || cfg->readonly)
		return 0;
	r = rf_sbstate_open(a, &s, err, errlen);
	if (!r)
		rf_array_set_sbstate(a, s);
	return r;
}

const struct rf_service rf_sbstate_service = { .name = "superblocks", .open = service_open };

/* Whether a member's superblock is not the freshest one's events or
 * clean state (before anything was written). */
static bool members_behind(const struct rf_sbstate *s)
{
	int i, fresh = freshest(s->a, s->n, false);

	for (i = 0; fresh >= 0 && i < s->n; i++) {
		const struct rf_dev *m = rf_dev_get(s->a, i), *f = rf_dev_get(s->a, fresh);

		if (m->sb_has && (m->sb.events != f->sb.events || m->sb.clean != f->sb.clean))
			return true;
	}
	return false;
}

int rf_sbstate_start(struct rf_sbstate *s)
{
	if (!s || s->timer.running)
		return 0;
	/* A crash in the middle of a superblock update leaves some members
	 * one event behind (assembly takes them, as md does).  A clean array
	 * writes nothing until its next change, and a crash in the middle of
	 * that one would leave them two behind: stale, left out.  So bring
	 * every member to the freshest state now.  (A dirty array gets the
	 * same from its resync's first checkpoint or its end.) */
	if (s->resync_offset == RF_SB_MAX_SECTOR && members_behind(s)) {
		sb_lock(s);
		write_all(s, CH_CLEAN, -1);
		sb_unlock(s);
	}
	/* The sync thread starts a resync where the superblocks say, and
	 * tells us where it got. */
	if (rf_array_has_sync(s->a)) {
		rf_sync_set_resync_cp(s->a, s->resync_offset);
		rf_sync_set_notify(s->a, on_sync, s);
	}
	return rf_bg_start(&s->timer);
}

int rf_sbstate_set_ppl(struct rf_sbstate *s, bool on, int16_t offset, uint16_t size)
{
	struct rf_sb_change c = { .faulty_slot = -1, .set_ppl = on ? 1 : -1, .ppl_offset = offset, .ppl_size = size };
	int r;

	if (!s)
		return -EINVAL;
	sb_lock(s);
	r = write_change(s, CH_DEVICES, &c, -1, 0);
	sb_unlock(s);
	return r;
}

int rf_sbstate_in_sync(struct rf_sbstate *s)
{
	int r;

	if (!s)
		return 0;
	sb_lock(s);
	s->resync_offset = RF_SB_MAX_SECTOR;
	r = write_all(s, CH_CLEAN, -1);
	sb_unlock(s);
	return r;
}

void rf_sbstate_stop(struct rf_sbstate *s)
{
	if (s)
		rf_bg_stop(&s->timer);
}

void rf_sbstate_kick(struct rf_sbstate *s)
{
	if (!s)
		return;
	atomic_store(&s->unrecorded, true);
	rf_bg_kick(&s->timer);
}

/* ---- device changes (member.c, hotreplace.c, memberctl.c): the device
 * lock held, every request drained; each takes s->lock ---- */

/* A device number no device of the array holds in dev_roles, from
 * `from` (0.90 numbers spares after the raid devices). */
static uint32_t free_dev_number(struct rf_sbstate *s, uint32_t from)
{
	int i, n = rf_devs_count(s->a);
	uint32_t k;

	for (k = from; k < RF_SB_MAX_DEV; k++) {
		for (i = 0; i < n; i++)
			if (rf_dev_get(s->a, i)->sb_has && rf_dev_get(s->a, i)->sb.dev_number == k)
				break;
		if (i == n)
			return k;
	}
	return RF_SB_MAX_DEV;
}

int rf_sbstate_add_spare(struct rf_sbstate *s, int dev, char *err, size_t errlen)
{
	struct rf_array *a;
	struct rf_dev *m, *model = NULL;
	struct rf_sb_change c = { .faulty_slot = -1, .set_role = true, .role_value = RF_SB_ROLE_SPARE };
	int r, fresh;

	if (!s)
		return 0;
	a = s->a;
	m = rf_dev_get(a, dev);
	pthread_mutex_lock(&s->lock);
	fresh = freshest(a, rf_array_nslots(a), true);
	if (fresh >= 0)
		model = rf_dev_get(a, fresh);
	if (!model) {
		snprintf(err, errlen, "%s: no member with a superblock to copy the array's from", m->path);
		r = -EIO;
		goto out;
	}
	m->sb_has = false;
	memset(&m->sb, 0, sizeof(m->sb));
	r = rf_dev_sb_io(m, &m->sb_io);
	if (r) {
		snprintf(err, errlen, "%s: %s", m->path, strerror(-r));
		goto out;
	}
	c.role_slot = free_dev_number(s, model->sb.kind == RF_SB_090 ? (uint32_t)model->sb.raid_disks : 0);
	r = rf_sb_write_spare(&model->sb_io, &model->sb, &m->sb_io, m->path, c.role_slot, &m->sb, err, errlen);
	if (r)
		goto out;
	c.role_slot = m->sb.dev_number;
	/* The others learn of it; the spare takes the events they get. */
	m->sb_has = true;
	r = write_change(s, CH_DEVICES, &c, -1, 0);
out:
	pthread_mutex_unlock(&s->lock);
	if (m->sb_has)
		rf_dev_changed(a, dev);
	return r;
}

/* Device dev's role in everyone's superblocks (role < 0: unchanged),
 * and with recovery its own rebuild position. */
static int dev_change(struct rf_sbstate *s, enum change what, int dev, int role, bool recovery, uint64_t off,
		      bool shared)
{
	struct rf_sb_change c = { .faulty_slot = -1, .role_shared = shared };
	const struct rf_dev *d;
	int r;

	if (!s)
		return 0;
	d = rf_dev_get(s->a, dev);
	if (!d->sb_has)
		return 0;
	if (role >= 0) {
		c.set_role = true;
		c.role_slot = d->sb.dev_number;
		c.role_value = (uint16_t)role;
		c.role_in_sync = !recovery || off == RF_SB_MAX_SECTOR;
	} else if (d->sb.kind == RF_SB_090 && recovery && off == RF_SB_MAX_SECTOR && dev < rf_array_nslots(s->a)) {
		/* 0.90 lists a device being rebuilt as a spare: in sync now,
		 * it moves into its slot's descriptor in every superblock. */
		c.set_role = true;
		c.role_slot = d->sb.dev_number;
		c.role_value = (uint16_t)dev;
		c.role_in_sync = true;
	}
	pthread_mutex_lock(&s->lock);
	r = write_change(s, what, &c, recovery ? dev : -1, off);
	pthread_mutex_unlock(&s->lock);
	return r;
}

int rf_sbstate_set_slot(struct rf_sbstate *s, int dev, int slot, uint64_t recovery_offset)
{
	return dev_change(s, CH_DEVICES, dev, slot < 0 ? RF_SB_ROLE_SPARE : slot, true, recovery_offset, false);
}

/* 0.90 records nothing of a replacement: md lists it as a spare there. */
static bool records_replacements(struct rf_sbstate *s, int dev)
{
	return s && rf_dev_get(s->a, dev)->sb_has && rf_dev_get(s->a, dev)->sb.kind != RF_SB_090;
}

int rf_sbstate_set_replacement(struct rf_sbstate *s, int dev, int slot, uint64_t recovery_offset)
{
	if (!records_replacements(s, dev))
		return 0;
	return dev_change(s, CH_DEVICES, dev, slot, true, recovery_offset, true);
}

int rf_sbstate_drop_replacement(struct rf_sbstate *s, int dev, bool lost)
{
	if (!records_replacements(s, dev))
		return 0;
	return lost ? rf_sbstate_mark_faulty(s, dev) : rf_sbstate_set_slot(s, dev, -1, RF_SB_MAX_SECTOR);
}

int rf_sbstate_mark_faulty(struct rf_sbstate *s, int dev)
{
	return dev_change(s, CH_FAULTY, dev, RF_SB_ROLE_FAULTY, false, 0, false);
}

int rf_sbstate_set_recovery(struct rf_sbstate *s, int dev, uint64_t recovery_offset)
{
	return dev_change(s, CH_DEVICES, dev, -1, true, recovery_offset, false);
}

int rf_sbstate_set_flags(struct rf_sbstate *s, int dev)
{
	return dev_change(s, CH_DEVICES, dev, -1, false, 0, false);
}

/* s->lock held: the slots changed (a grow's or a level change's start, a
 * raid1's new count, a takeover, a shrink's end): every copy of the role
 * table says what the device table does, each slot's device in its slot
 * and a device that left a slot a spare, then change c is written to
 * all (the superblocks' slot count is c's). */
static int slots_write(struct rf_sbstate *s, struct rf_sb_change *c)
{
	int n = rf_array_nslots(s->a), i;

	for (i = 0; i < rf_devs_count(s->a); i++) {
		const struct rf_dev *d = rf_dev_get(s->a, i);

		if (!d->sb_has || (d->flags & (RF_DEV_MISSING | RF_DEV_FAULTY)))
			continue;
		if (i < n)
			roles_set(s->a, d->sb.dev_number, (uint16_t)i);
		else if (i < s->n && (d->flags & RF_DEV_SPARE) && !(d->flags & RF_DEV_REPLACEMENT))
			roles_set(s->a, d->sb.dev_number, RF_SB_ROLE_SPARE);
	}
	s->n = n;
	return write_change(s, CH_DEVICES, c, -1, 0);
}

int rf_sbstate_reshape(struct rf_sbstate *s, bool done, uint64_t position)
{
	struct rf_sb_change c = { .faulty_slot = -1, .set_reshape = done ? RF_SB_RESHAPE_DONE : RF_SB_RESHAPE_AT,
				  .reshape_position = position };
	int r;

	if (!s)
		return 0;
	sb_lock(s);
	s->reshape_recorded = position;
	/* A shrink's end: the devices that left the slots are spares
	 * (md's raid5_finish_reshape). */
	r = done ? slots_write(s, &c) : write_change(s, CH_DEVICES, &c, -1, 0);
	sb_unlock(s);
	return r;
}

int rf_sbstate_set_raid_disks(struct rf_sbstate *s)
{
	struct rf_sb_change c = { .faulty_slot = -1 };
	int r;

	if (!s)
		return 0;
	sb_lock(s);
	c.set_raid_disks = rf_array_nslots(s->a);
	r = slots_write(s, &c);
	sb_unlock(s);
	return r;
}

int rf_sbstate_set_size(struct rf_sbstate *s, uint64_t sectors)
{
	struct rf_sb_change c = { .faulty_slot = -1, .set_size = sectors };
	int r;

	if (!s)
		return 0;
	sb_lock(s);
	r = write_change(s, CH_DEVICES, &c, -1, 0);
	sb_unlock(s);
	return r;
}

int rf_sbstate_takeover(struct rf_sbstate *s, int from_level)
{
	struct rf_sb_change c = { .faulty_slot = -1, .set_level = true };
	const struct rf_geom *g;
	int r;

	if (!s)
		return 0;
	g = rf_array_geom(s->a);
	c.level = g->level;
	c.layout = g->level == 4 ? 0 : g->layout;
	c.chunk_sectors = g->chunk_sectors;
	c.level_size = g->dev_sectors;
	/* RAIDFUSE_TEST_BREAK=takeover-layout: a parity-last array recorded
	 * as left-symmetric (the tests' negative control). */
	if (c.layout == RF_ALGO_PARITY_N && rf_test_break("takeover-layout"))
		c.layout = RF_ALGO_LEFT_SYMMETRIC;
	sb_lock(s);
	if (from_level == 0)
		s->resync_offset = RF_SB_MAX_SECTOR;
	c.set_raid_disks = rf_array_nslots(s->a);
	r = slots_write(s, &c);
	sb_unlock(s);
	if (from_level == 0 && rf_array_has_sync(s->a)) {
		rf_sync_set_resync_cp(s->a, s->resync_offset);
		rf_sync_set_notify(s->a, on_sync, s);
	}
	return r;
}

int rf_sbstate_reshape_start(struct rf_sbstate *s, int32_t new_offset)
{
	struct rf_sb_change c = { .faulty_slot = -1, .set_reshape = RF_SB_RESHAPE_START,
				  .reshape_new_offset = new_offset };
	const struct rf_geom *g;
	int r;

	if (!s)
		return 0;
	g = rf_array_geom(s->a);
	c.reshape_raid_disks = g->raid_disks;
	c.reshape_delta = g->raid_disks - rf_array_reshape_state(s->a)->prev.raid_disks;
	/* A backward one (a shrink) starts at the new geometry's end. */
	c.reshape_backwards = rf_array_reshape_state(s->a)->backwards;
	c.reshape_position = rf_array_reshape_state(s->a)->position;
	reshape_geoms(s->a, &c);
	sb_lock(s);
	s->reshape_recorded = c.reshape_position;
	r = slots_write(s, &c);
	sb_unlock(s);
	return r;
}

void rf_sbstate_close(struct rf_sbstate *s)
{
	if (!s)
		return;
	rf_sbstate_stop(s);
	record_failed(s);
	sb_lock(s);
	if (atomic_load(&s->mode) != RF_SBS_CLEAN) {
		write_all(s, CH_CLEAN, -1);
		atomic_store(&s->mode, RF_SBS_CLEAN);
	}
	sb_unlock(s);
	rf_bg_destroy(&s->timer);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
