/* SPDX-License-Identifier: GPL-2.0-or-later */
/* member.c - the array's devices: spares, failed members, rebuild; the
 * device table's names and edits, and the management thread.
 *
 * The device table is the core's (core/dev.h): [0, nmembers) serve the
 * slots, [nmembers, ndevs) are spares and faulty devices that lost their
 * slot.  It changes only under reconf_lock with every request drained
 * (rf_barrier_quiesced_all: no member IO is in flight, so a slot's file
 * descriptors can change under the IO queues), and with the device lock
 * held (the services' threads walk the same table).  A device moves only
 * through rf_dev_swap(), which tells the services.  Readers of md/dev-*
 * take reconf_lock.  Whether a slot's device is faulty is the array's
 * faulty mask (atomic, set by the IO path); a device without a slot keeps
 * it in its flags.  This file sees the array only through core/core.h.
 *
 * What md does and this file does the same way:
 *  - a spare takes the lowest failed slot as soon as there is one (the
 *    management thread, woken by a failure or a new spare), and the
 *    failed device stays listed, faulty, until it is removed;
 *  - the rebuild (sync.c's "recover" walk) runs region by region with
 *    writes drained; below its position the new device serves like any
 *    other, above it raid4/5/6 treat it as missing (rf_faulty_at), and
 *    mirrors write to it but read elsewhere until it is complete;
 *  - its superblock records the slot at once and recovery_offset as the
 *    rebuild goes, so an interrupted rebuild resumes;
 *  - "idle" during a rebuild restarts it, "frozen" holds it.
 *
 * The management thread (rf-mgmt) does that work when kicked, and once a
 * second, woken or not, has the member watch look at every device.  Once
 * nothing is to be rebuilt it has hot replace run (hotreplace.c), then a
 * resync that waited for the rebuild.
 *
 * It does NOT choose, attach or promote replacements (hotreplace.c),
 * watch the members' files (memberwatch.c: this file owns the watch's
 * descriptors and starts and stops its thread), take the words of the
 * control files (memberctl.c: md/dev-NAME/state, md/new_dev,
 * md/dev-NAME/timeout, md/dev-NAME/fault, md/dev-NAME/io_mode), nor do
 * a rebuild's IO (sync.c's walk and the levels).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/lockcheck.h"
#include "raidfuse/log.h"
#include "raidfuse/nbd.h"
#include "raidfuse/super.h"
#include "raidfuse/sync.h"
#include "raidfuse/util.h"
#include "services/member_int.h"
#include "services/sbstate.h"

/* How often the management thread looks at every device even when
 * nothing woke it (ms): the backstop for what inotify does not report
 * (truncate(2) by path, a member replaced by rename). */
#define RF_MGMT_TICK_MS 1000

/* A device's name (md/dev-NAME): a file's base name, an NBD export's
 * rf_nbd_name(); in buf (RF_DEV_NAME_MAX bytes). */
const char *rf_member_dev_name(const char *path, char *buf)
{
	const char *s = strrchr(path, '/');

	if (rf_nbd_is_uri(path)) {
		rf_nbd_name(path, buf, RF_DEV_NAME_MAX);
		return buf;
	}
	return s ? s + 1 : path;
}

/* reconf_lock held. */
static unsigned dev_flags(struct rf_array *a, int dev)
{
	const struct rf_dev *m = rf_dev_get(a, dev);
	unsigned f = m->flags;

	if (dev < rf_array_nslots(a)) {
		if (rf_array_faulty(a) & (1ull << dev))
			f = (f | RF_DEV_FAULTY) & ~RF_DEV_IN_SYNC;
	} else if (rf_replacement_slot(a, dev) >= 0) {
		f |= RF_DEV_REPLACEMENT;
	}
	return f;
}

/* Device d, a new spare: the data offset (bytes) its superblock gets: mdadm --add and
 * the superblock module model it on an in-sync member's, the first by slot
 * (their events agree while the array runs), skipping slot skip.  Members
 * may differ (added later, replaced); with none in sync, slot 0's.
 * reconf_lock held, or the array drained. */
void rf_member_spare_offsets(struct rf_array *a, struct rf_dev *d, int skip)
{
	uint64_t bad = rf_array_faulty(a) | rf_array_recovering(a);
	const struct rf_dev *model = rf_dev_get(a, 0);
	int i;

	for (i = 0; i < rf_array_nslots(a); i++)
		if (i != skip && (rf_array_present(a) & (1ull << i)) && !(bad & (1ull << i))) {
			model = rf_dev_get(a, i);
			break;
		}
	/* and during a reshape the offset it moves to at the end, as the
	 * model's superblock records it */
	d->data_offset = model->data_offset;
	d->new_data_offset = model->new_data_offset;
}

int rf_member_ndevs(struct rf_array *a)
{
	int n;

	rf_array_reconf_lock(a);
	n = rf_devs_count(a);
	rf_array_reconf_unlock(a);
	return n;
}

int rf_member_info(struct rf_array *a, int dev, struct rf_dev_info *out)
{
	char nb[RF_DEV_NAME_MAX];
	const struct rf_dev *m;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	rf_array_reconf_lock(a);
	if (dev < 0 || dev >= rf_devs_count(a)) {
		ret = -ENOENT;
		goto out;
	}
	m = rf_dev_get(a, dev);
	snprintf(out->name, sizeof(out->name), "%s", rf_member_dev_name(m->path, nb));
	snprintf(out->path, sizeof(out->path), "%s", m->path);
	out->flags = dev_flags(a, dev);
	out->slot = dev < rf_array_nslots(a) && !(out->flags & RF_DEV_MISSING) ? dev : -1;
	rf_devs_lock(a);
	out->number = m->sb_has ? (int)m->sb.dev_number : dev;
	rf_devs_unlock(a);
	out->errors = atomic_load_explicit(&m->nr_errors, memory_order_relaxed);
	out->offset = m->data_offset / 512;
	/* a slot's as its level says (raid0's members may differ: md's
	 * zones); a spare's, what a slot uses */
	out->size = (dev < rf_array_nslots(a) ? rf_level_slot_sectors(a, dev) : rf_array_geom(a)->dev_sectors) / 2;
	out->recovery_start = UINT64_MAX;
	if (out->slot >= 0 && (rf_array_recovering(a) & (1ull << dev)))
		out->recovery_start = rf_array_recovery_cp(a);
	out->replaces = rf_replacement_slot(a, dev);
	if (out->replaces >= 0)
		out->recovery_start = rf_array_recovery_cp(a);
out:
	rf_array_reconf_unlock(a);
	return ret;
}

int rf_member_lookup(struct rf_array *a, const char *name)
{
	char nb[RF_DEV_NAME_MAX];
	int i;

	for (i = 0; i < rf_devs_count(a); i++)
		if (!(rf_dev_get(a, i)->flags & RF_DEV_MISSING) &&
		    !strcmp(rf_member_dev_name(rf_dev_get(a, i)->path, nb), name))
			return i;
	return -ENOENT;
}

int rf_member_find(struct rf_array *a, const char *name)
{
	int ret;

	rf_array_reconf_lock(a);
	ret = rf_member_lookup(a, name);
	rf_array_reconf_unlock(a);
	return ret;
}

/* ---- table edits: reconf_lock, everything drained, the device lock ---- */

/* Empty slot k: its device moves out (as a spare-to-be when keep, else
 * closed), a "missing" placeholder takes its place. */
int rf_member_slot_vacate(struct rf_array *a, int k, bool keep)
{
	struct rf_dev *m = rf_dev_get(a, k);
	char *missing = strdup("missing");
	uint64_t doff = m->data_offset;

	int e = keep ? rf_dev_append(a) : 0;

	if (!missing || e < 0) {
		free(missing);
		return -ENOSPC;
	}
	rf_sbstate_mark_faulty(rf_array_sbstate(a), k);
	if (keep) {
		rf_dev_swap(a, k, e);   /* e was an empty entry */
		rf_dev_get(a, e)->flags = RF_DEV_FAULTY;
		rf_dev_get(a, e)->prev_slot = k;
	} else {
		rf_dev_release(m);
	}
	m->path = missing;
	m->flags = RF_DEV_MISSING | RF_DEV_FAULTY;
	m->data_offset = doff;
	rf_dev_changed(a, k);
	rf_slot_vacated(a, k);
	return 0;
}

struct swap_job {
	struct rf_array *a;
	int slot, spare;
};

/* Device path took slot k from old: an array without superblocks has only
 * its config to say which file serves a slot, so say it needs changing. */
void rf_member_config_note(struct rf_array *a, int k, const char *path, const char *old)
{
	if (!rf_array_sbstate(a))
		rf_warn("%s: the array has no superblocks: its config must name %s in place of %s (slot %d) "
			"from now on", rf_array_name(a), path, old, k);
}

/* A spare takes failed slot k and starts being rebuilt. */
static int take_slot(void *arg)
{
	struct swap_job *j = arg;
	struct rf_array *a = j->a;
	int k = j->slot, sp = j->spare, ret = 0;
	bool missing = rf_dev_get(a, k)->flags & RF_DEV_MISSING, readd = false;

	rf_devs_lock(a);
	/* md's re-add with a bitmap: a device that left slot k after the
	 * bits were last cleared missed only the writes they mark. */
	if (rf_array_bitmap(a) && rf_dev_get(a, sp)->prev_slot == k && rf_dev_get(a, sp)->sb_has) {
		struct rf_bitmap_status st;

		rf_bitmap_get(rf_array_bitmap(a), &st);
		readd = rf_dev_get(a, sp)->sb.events >= st.events_cleared;
	}
	if (!missing)
		rf_sbstate_mark_faulty(rf_array_sbstate(a), k);
	rf_dev_swap(a, k, sp);
	if (missing) {
		rf_dev_drop(a, sp);
	} else {
		rf_dev_get(a, sp)->flags = RF_DEV_FAULTY;
		rf_dev_get(a, sp)->prev_slot = k;
	}
	rf_dev_get(a, k)->flags = RF_DEV_SPARE;
	rf_dev_get(a, k)->prev_slot = -1;
	/* Beside another device being rebuilt: both from the start, and
	 * only what the bitmap marks when both are re-added. */
	readd = readd && (!rf_array_recovering(a) || rf_array_recover_dirty_only(a));
	rf_slot_rebuild_start(a, k, readd);
	/* A spare named in the config gets its superblock now, and the data
	 * offset that superblock records. */
	if (rf_array_sbstate(a) && !rf_dev_get(a, k)->sb_has) {
		char err[1024];

		rf_member_spare_offsets(a, rf_dev_get(a, k), k);
		ret = rf_sbstate_add_spare(rf_array_sbstate(a), k, err, sizeof(err));
		if (ret)
			rf_err("%s: %s", rf_array_name(a), err);
	}
	if (!ret)
		ret = rf_sbstate_set_slot(rf_array_sbstate(a), k, k, 0);
	rf_devs_unlock(a);
	rf_info("%s: %s takes slot %d; rebuilding %s", rf_array_name(a), rf_dev_get(a, k)->path, k,
		readd ? "what the bitmap marks" : "all of it");
	if (!missing)
		rf_member_config_note(a, k, rf_dev_get(a, k)->path, rf_dev_get(a, sp)->path);
	return ret;
}

struct end_job {
	struct rf_array *a;
	bool completed;
	uint64_t pos;
};

static int end_rebuild(void *arg)
{
	struct end_job *j = arg;
	struct rf_array *a = j->a;
	uint64_t r = rf_array_recovering(a) & ~rf_array_faulty(a);

	rf_devs_lock(a);
	while (r) {
		int k = __builtin_ctzll(r);

		r &= r - 1;
		if (j->completed) {
			rf_dev_get(a, k)->flags = (rf_dev_get(a, k)->flags & RF_DEV_WRITE_MOSTLY) | RF_DEV_IN_SYNC;
			rf_slot_rebuilt(a, k);
			rf_info("%s: %s in slot %d is rebuilt", rf_array_name(a), rf_dev_get(a, k)->path, k);
		}
		/* Each its own (at or past j->pos): one resumed from further
		 * along keeps it. */
		rf_sbstate_set_recovery(rf_array_sbstate(a), k,
					j->completed ? RF_SB_MAX_SECTOR : rf_dev_recovery_offset(a, k));
	}
	if (j->completed)
		rf_recovery_reset(a);
	rf_devs_unlock(a);
	return 0;
}

void rf_recovery_ended(struct rf_array *a, bool completed, uint64_t pos)
{
	struct end_job j = { a, completed, pos };

	/* A replacement's copy (sync.c runs it when nothing is to be
	 * rebuilt): the management thread promotes it (rf_hotreplace_check()). */
	if (!rf_array_recovering(a) && rf_replace_mask(a)) {
		struct rf_mgmt *m = rf_array_mgmt(a);

		if (completed && m) {
			pthread_mutex_lock(&m->lock);
			m->repl_done |= rf_replace_mask(a) & ~rf_replace_failed_mask(a);
			pthread_mutex_unlock(&m->lock);
		}
		return;
	}

	rf_barrier_quiesced(a, end_rebuild, &j);
}

/* ---- the management thread ---- */

/* A spare for slot k: one that used to serve k first (re-added), else
 * the first spare; -1 if none. */
static int pick_spare(struct rf_array *a, int k)
{
	int i, any = -1;

	for (i = rf_array_nslots(a); i < rf_devs_count(a); i++) {
		unsigned f = rf_dev_get(a, i)->flags;

		if (!(f & RF_DEV_SPARE) || (f & RF_DEV_FAULTY) || rf_replacement_slot(a, i) >= 0)
			continue;
		if (rf_dev_get(a, i)->prev_slot == k)
			return i;
		if (any < 0)
			any = i;
	}
	return any;
}

/* reconf_lock held: the first failed slot (not being rebuilt) that a
 * spare can take, into j (slot -1: none). */
static void pick_slot(struct rf_array *a, struct swap_job *j)
{
	uint64_t bad = rf_array_faulty(a) & ~rf_array_recovering(a);
	int k;

	j->slot = j->spare = -1;
	for (k = 0; bad && k < rf_array_nslots(a); k++) {
		if (!(bad & (1ull << k)))
			continue;
		j->spare = pick_spare(a, k);
		if (j->spare >= 0) {
			j->slot = k;
			return;
		}
	}
}

/* A resync is due once no rebuild is to be done. */
static void resync_waits_set(struct rf_array *a)
{
	struct rf_mgmt *m = rf_array_mgmt(a);

	pthread_mutex_lock(&m->lock);
	m->resync_waits = true;
	pthread_mutex_unlock(&m->lock);
}

/* Whether a resync waited for the rebuild (it no longer waits). */
static bool resync_waits_take(struct rf_array *a)
{
	struct rf_mgmt *m = rf_array_mgmt(a);
	bool w;

	pthread_mutex_lock(&m->lock);
	w = m->resync_waits;
	m->resync_waits = false;
	pthread_mutex_unlock(&m->lock);
	return w;
}

void rf_mgmt_resync_after_rebuild(struct rf_array *a)
{
	if (!rf_array_mgmt(a))
		return;
	resync_waits_set(a);
	/* A rebuild that ended meanwhile kicked before the flag was set. */
	rf_mgmt_kick(a);
}

/* What md's recovery check does: start or resume a rebuild if a failed
 * slot and a spare meet, unless sync_action is frozen; once none is to be
 * done, start a resync that waited for it. */
static void check_recovery(struct rf_array *a)
{
	struct rf_sync_status st;
	struct swap_job j = { .a = a, .slot = -1, .spare = -1 };
	uint64_t r, fresh;
	bool broken, reshaping;
	int ret;

	if (rf_array_readonly(a) || rf_array_overlay(a))
		return;
	/* The slot count and geometry they read change under reconf_lock
	 * (a grow, a raid1's new count, a takeover, from a control file). */
	rf_array_reconf_lock(a);
	if (rf_array_failed(a)) {
		rf_array_reconf_unlock(a);
		return;
	}
	rf_sync_get(a, &st);
	fresh = rf_array_faulty(a) & ~rf_array_mgmt(a)->faulty_seen;
	rf_array_mgmt(a)->faulty_seen = rf_array_faulty(a);
	reshaping = rf_array_reshape_state(a)->active;
	rf_array_reconf_unlock(a);
	/* md recovers nothing while a reshape is under way: the reshape goes
	 * on degraded (services/reshape.c), and a spare takes a failed slot
	 * once it ended (the walk kicks this thread then).  A spare put in
	 * now would be read by the walk before anything was rebuilt on it. */
	if (reshaping)
		return;
	if (st.action == RF_SYNC_RECOVER) {
		/* md interrupts the rebuild at every failure (md_error sets
		 * MD_RECOVERY_INTR): a device being rebuilt that failed is
		 * dropped, and a slot that failed meanwhile is taken by a
		 * spare at once; the next pass rebuilds each device from its
		 * own checkpoint.  A device added (a re-add) waits for the
		 * pass to end. */
		int k, spare_for = -1;

		bool repl;

		rf_array_reconf_lock(a);
		r = rf_array_recovering(a) & rf_array_faulty(a);
		/* A replacement's copy stops for any failure (a spare, or
		 * the replacement itself, rebuilds a failed slot first). */
		repl = !rf_array_recovering(a) && rf_replace_mask(a) && (fresh || rf_hotreplace_broken(a));
		for (k = 0; !r && k < rf_array_nslots(a) && spare_for < 0; k++)
			if ((fresh & ~rf_array_recovering(a) & (1ull << k)) && pick_spare(a, k) >= 0)
				spare_for = k;
		rf_array_reconf_unlock(a);
		if (!r && !repl && (spare_for < 0 || rf_test_break("no-intr")))
			return;
		if (repl)
			rf_info("%s: a member or a replacement failed: the copy to the replacement stops",
				rf_array_name(a));
		else if (r)
			rf_info("%s: a device being rebuilt failed: the rebuild stops, and starts again without it",
				rf_array_name(a));
		else
			rf_info("%s: slot %d failed during a rebuild: the rebuild stops, and starts again with a "
				"spare in slot %d", rf_array_name(a), spare_for, spare_for);
		rf_sync_stop(a, false);
		rf_sync_get(a, &st);
	}
	if (st.action == RF_SYNC_FROZEN || st.action == RF_SYNC_RECOVER)
		return;
	/* A replacement whose slot failed is a spare again first: it may
	 * be the one that rebuilds the slot. */
	rf_array_reconf_lock(a);
	broken = rf_hotreplace_broken(a) != 0;
	rf_array_reconf_unlock(a);
	if (broken) {
		struct rf_hotreplace_job rj = { .a = a };

		rf_barrier_quiesced_all(a, rf_hotreplace_fix, &rj);
	}
	rf_array_reconf_lock(a);
	/* A device that failed while being rebuilt is just faulty. */
	rf_recovery_drop_faulty(a);
	r = rf_array_recovering(a);
	pick_slot(a, &j);
	rf_array_reconf_unlock(a);
	if (j.slot < 0 && !r) {
		/* Rebuilt: replacements are copied, then a resync it
		 * interrupted, or one that was due while it ran, goes on from
		 * where it stands (md starts the resync once recovery ends). */
		if (st.action != RF_SYNC_IDLE || rf_hotreplace_check(a))
			return;
		if (resync_waits_take(a))
			rf_sbstate_start_resync(a, false);
		return;
	}
	/* md interrupts a resync or check for a rebuild. */
	if (st.action != RF_SYNC_IDLE) {
		if (st.action == RF_SYNC_RESYNC)
			resync_waits_set(a);
		rf_sync_stop(a, false);
	}
	/* Every failed slot a spare meets now is rebuilt in this one pass
	 * (raid6: two at once). */
	while (j.slot >= 0) {
		ret = rf_barrier_quiesced_all(a, take_slot, &j);
		if (ret) {
			rf_err("%s: recording slot %d's new device in the superblocks: %s", rf_array_name(a), j.slot,
			       strerror(-ret));
			break;
		}
		rf_array_reconf_lock(a);
		pick_slot(a, &j);
		rf_array_reconf_unlock(a);
	}
	ret = rf_sync_request(a, RF_SYNC_RECOVER);
	if (ret && ret != -EBUSY)
		rf_err("%s: rebuild not started: %s", rf_array_name(a), strerror(-ret));
}

static void *mgmt_main(void *arg)
{
	struct rf_array *a = arg;
	struct rf_mgmt *m = rf_array_mgmt(a);

	rf_thread_name("rf-mgmt");
	pthread_mutex_lock(&m->lock);
	while (!m->stop) {
		if (!m->kicked) {
			struct timespec t;

			clock_gettime(CLOCK_REALTIME, &t);
			rf_timespec_add_ns(&t, (int64_t)RF_MGMT_TICK_MS * 1000000);
			if (pthread_cond_timedwait(&m->cond, &m->lock, &t) == ETIMEDOUT) {
				pthread_mutex_unlock(&m->lock);
				rf_memberwatch_check_devices(a, true);
				pthread_mutex_lock(&m->lock);
			}
			continue;
		}
		m->kicked = false;
		pthread_mutex_unlock(&m->lock);
		check_recovery(a);
		pthread_mutex_lock(&m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

int rf_mgmt_start(struct rf_array *a)
{
	struct rf_mgmt *m = calloc(1, sizeof(*m));
	int i, ret;

	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	rf_lock_rank(&m->lock, RF_LOCK_LEAF, "management lock");
	pthread_cond_init(&m->cond, NULL);
	m->kicked = true;       /* an assembled array may have a failed slot and a spare */
	m->ino_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	m->stop_fd = eventfd(0, EFD_CLOEXEC);
	rf_array_set_mgmt(a, m);
	/* The first look at the members' blocks (rf_memberwatch_blocks_freed()
	 * records). */
	rf_array_reconf_lock(a);
	for (i = 0; i < rf_devs_count(a); i++) {
		char why[8];

		if (rf_dev_get(a, i)->io.fd >= 0)
			rf_memberwatch_blocks_freed(m, i, rf_dev_get(a, i), why, sizeof(why));
	}
	rf_array_reconf_unlock(a);
	if (m->ino_fd >= 0 && m->stop_fd >= 0) {
		rf_array_reconf_lock(a);
		rf_memberwatch_all(a);
		rf_array_reconf_unlock(a);
		m->watching = !pthread_create(&m->watch_thread, NULL, rf_memberwatch_main, a);
	}
	if (!m->watching)
		rf_warn("%s: no inotify watch on the members (%s): changes to them are seen once a second",
			rf_array_name(a), strerror(errno));
	ret = -pthread_create(&m->thread, NULL, mgmt_main, a);
	if (ret) {
		rf_mgmt_free(a);
		return ret;
	}
	m->started = true;
	return 0;
}

/* The thread ends; the struct stays until rf_mgmt_free() (the sync
 * thread may still kick it while it stops). */
void rf_mgmt_stop(struct rf_array *a)
{
	struct rf_mgmt *m = rf_array_mgmt(a);
	bool joined;

	if (!m)
		return;
	if (m->watching) {
		uint64_t one = 1;

		if (write(m->stop_fd, &one, sizeof(one)) == sizeof(one))
			pthread_join(m->watch_thread, NULL);
		m->watching = false;
	}
	pthread_mutex_lock(&m->lock);
	joined = m->stop;
	m->stop = true;
	pthread_cond_signal(&m->cond);
	pthread_mutex_unlock(&m->lock);
	if (!joined && m->started)
		pthread_join(m->thread, NULL);
}

void rf_mgmt_free(struct rf_array *a)
{
	struct rf_mgmt *m = rf_array_mgmt(a);

	if (!m)
		return;
	rf_mgmt_stop(a);
	rf_array_set_mgmt(a, NULL);
	if (m->ino_fd >= 0)
		close(m->ino_fd);
	if (m->stop_fd >= 0)
		close(m->stop_fd);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void rf_mgmt_kick(struct rf_array *a)
{
	struct rf_mgmt *m = rf_array_mgmt(a);

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->kicked = true;
	pthread_cond_signal(&m->cond);
	pthread_mutex_unlock(&m->lock);
}

/* What the stack hands the core (hooks.h). */
const struct rf_mgmt_ops rf_mgmt_service = {
	.start = rf_mgmt_start,
	.stop = rf_mgmt_stop,
	.free = rf_mgmt_free,
	.kick = rf_mgmt_kick,
};
