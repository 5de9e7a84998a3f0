/* SPDX-License-Identifier: GPL-2.0-or-later */
/* member.c - the array's devices: spares, failed members, rebuild.
 *
 * The device table is the core's (core/dev.h): [0, nmembers) serve the
 * slots, [nmembers, ndevs) are spares and faulty devices that lost their
 * slot.  It changes only under reconf_lock with every request drained
 * (rf_array_quiesced_all: no member IO is in flight, so a slot's file
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
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/fault.h"
#include "raidfuse/lockcheck.h"
#include "raidfuse/log.h"
#include "raidfuse/nbd.h"
#include "raidfuse/super.h"
#include "raidfuse/sync.h"
#include "raidfuse/util.h"
#include "services/sbstate.h"

struct rf_mgmt {
	pthread_mutex_t lock;           /* alone: dropped before reconf_lock or a drain (engine.h) */
	pthread_cond_t cond;
	bool stop, kicked;
	pthread_t thread;
	bool started;                   /* thread runs */
	bool resync_waits;              /* a resync due once no rebuild is (protected by lock) */
	uint64_t repl_done;             /* slots whose replacement's copy completed, to be
					 * promoted (protected by lock) */
	uint64_t faulty_seen;           /* the faulty slots at the last recovery check
					 * (the management thread's own) */
	/* The member watch: an inotify descriptor on every device's inode
	 * (watches added by rf_dev_watch_all() under reconf_lock), read by
	 * its own thread; stop_fd (an eventfd) ends it. */
	int ino_fd, stop_fd;
	pthread_t watch_thread;
	bool watching;
	/* The blocks each device had allocated when last looked at
	 * (blocks_freed()), by device index; reconf_lock. */
	struct blocks_seen {
		dev_t dev;
		ino_t ino;
		bool on;                /* a file system where only a deallocation lowers st_blocks */
		int64_t blocks;         /* st_blocks (512-byte units) */
		bool kept;              /* found changed, kept as the last copy of its data
					 * (rf_member_fail()): said once */
	} seen[RF_MAX_DEVS];
};

/* How often the management thread looks at every device even when
 * nothing woke it (ms): the backstop for what inotify does not report
 * (truncate(2) by path, a member replaced by rename). */
#define RF_MGMT_TICK_MS 1000

/* A device's name (md/dev-NAME): a file's base name, an NBD export's
 * rf_nbd_name(); in buf (RF_DEV_NAME_MAX bytes). */
#define RF_DEV_NAME_MAX 256
static const char *dev_name(const char *path, char *buf)
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
static void spare_offsets(struct rf_array *a, struct rf_dev *d, int skip)
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

int rf_array_ndevs(struct rf_array *a)
{
	int n;

	rf_array_reconf_lock(a);
	n = rf_devs_count(a);
	rf_array_reconf_unlock(a);
	return n;
}

int rf_array_dev_info(struct rf_array *a, int dev, struct rf_dev_info *out)
{
	char nb[RF_DEV_NAME_MAX];
	const struct rf_geom *g;
	const struct rf_dev *m;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	rf_array_reconf_lock(a);
	if (dev < 0 || dev >= rf_devs_count(a)) {
		ret = -ENOENT;
		goto out;
	}
	m = rf_dev_get(a, dev);
	snprintf(out->name, sizeof(out->name), "%s", dev_name(m->path, nb));
	snprintf(out->path, sizeof(out->path), "%s", m->path);
	out->flags = dev_flags(a, dev);
	out->slot = dev < rf_array_nslots(a) && !(out->flags & RF_DEV_MISSING) ? dev : -1;
	rf_devs_lock(a);
	out->number = m->sb_has ? (int)m->sb.dev_number : dev;
	rf_devs_unlock(a);
	out->errors = atomic_load_explicit(&m->nr_errors, memory_order_relaxed);
	out->offset = m->data_offset / 512;
	/* raid0 members may differ (md's zones): each its own */
	g = rf_array_geom(a);
	out->size = (g->level == 0 && dev < rf_array_nslots(a) ? g->r0_sectors[dev] : g->dev_sectors) / 2;
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

int rf_dev_lookup(struct rf_array *a, const char *name)
{
	char nb[RF_DEV_NAME_MAX];
	int i;

	for (i = 0; i < rf_devs_count(a); i++)
		if (!(rf_dev_get(a, i)->flags & RF_DEV_MISSING) && !strcmp(dev_name(rf_dev_get(a, i)->path, nb), name))
			return i;
	return -ENOENT;
}

int rf_array_dev_find(struct rf_array *a, const char *name)
{
	int ret;

	rf_array_reconf_lock(a);
	ret = rf_dev_lookup(a, name);
	rf_array_reconf_unlock(a);
	return ret;
}

/* ---- table edits: reconf_lock, everything drained, the device lock ---- */

/* Empty slot k: its device moves out (as a spare-to-be when keep, else
 * closed), a "missing" placeholder takes its place. */
static int slot_vacate(struct rf_array *a, int k, bool keep)
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
static void config_note(struct rf_array *a, int k, const char *path, const char *old)
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

		spare_offsets(a, rf_dev_get(a, k), k);
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
		config_note(a, k, rf_dev_get(a, k)->path, rf_dev_get(a, sp)->path);
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
	 * rebuilt): the management thread promotes it (check_replace()). */
	if (!rf_array_recovering(a) && rf_array_replacing(a)) {
		struct rf_mgmt *m = rf_array_mgmt(a);

		if (completed && m) {
			pthread_mutex_lock(&m->lock);
			m->repl_done |= rf_array_replacing(a) & ~rf_array_repl_failed(a);
			pthread_mutex_unlock(&m->lock);
		}
		return;
	}

	rf_array_quiesced(a, end_rebuild, &j);
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

/* ---- hot replace (md's want_replacement; core/replace.c) ----
 *
 * A slot whose device wants replacing gets the first free spare as its
 * replacement once nothing is to be rebuilt; sync.c's "recover" walk then
 * copies the slot's data to it while every write of the slot reaches it
 * too, and once the copy is complete the replacement takes the slot and
 * the old device stays listed, faulty (md marks it so, and mdadm --replace
 * leaves it to be removed).  The superblocks record it as md does: from
 * the attach on, the replacement holds the slot's role beside the device
 * it replaces, its own superblock carries md's replacement flag and how
 * far the copy got (recovery_offset, at each of the walk's checkpoints);
 * at the end it is in sync, then the old device faulty.  So an array
 * stopped or crashed during a copy resumes it where it stood, here
 * (sbstate.c's resume_replacements()) and in kernel md, and one kernel md
 * left so resumes here.  "idle" or "frozen" during a copy keep the
 * replacement attached: the copy goes on from where it stood.  A
 * replacement that loses a write is detached and recorded faulty; one
 * whose slot fails (or is being rebuilt) is detached and a spare again,
 * and may then take the slot through a rebuild as any spare.  A rebuild
 * goes first, as md's recovery does.
 */

/* reconf_lock held: slots whose replacement must be detached: it lost a
 * write, or its slot no longer holds the data it copies. */
static uint64_t replace_broken(struct rf_array *a)
{
	return rf_array_replacing(a) &
	       (rf_array_repl_failed(a) | rf_array_faulty(a) | rf_array_recovering(a));
}

/* reconf_lock held: the first spare free to be a replacement; -1: none. */
static int pick_replacement(struct rf_array *a)
{
	int i;

	for (i = rf_array_nslots(a); i < rf_devs_count(a); i++) {
		unsigned f = rf_dev_get(a, i)->flags;

		if ((f & RF_DEV_SPARE) && !(f & RF_DEV_FAULTY) && rf_replacement_slot(a, i) < 0)
			return i;
	}
	return -1;
}

/* reconf_lock held: slots in sync that want a replacement and have none. */
static uint64_t replace_wanted(struct rf_array *a)
{
	uint64_t bad = rf_array_faulty(a) | rf_array_recovering(a) | rf_array_replacing(a), w = 0;
	int k;

	for (k = 0; k < rf_array_nslots(a); k++)
		if ((rf_dev_get(a, k)->flags & RF_DEV_WANT_REPLACEMENT) && !(bad >> k & 1))
			w |= 1ull << k;
	return w;
}

struct repl_job {
	struct rf_array *a;
	uint64_t done;                  /* copies completed: promote them */
};

/* Replacement dev takes slot k; the device lock held, every request
 * drained. */
static int promote(struct rf_array *a, int k, int dev)
{
	struct rf_dev *old;
	int r;

	/* md's order: the replacement in sync first (a crash here leaves
	 * it, complete, beside the slot's device), then the old device
	 * faulty (the replacement holds the role alone), then the table. */
	r = rf_sbstate_set_replacement(rf_array_sbstate(a), dev, k, RF_SB_MAX_SECTOR);
	if (r)
		return r;
	rf_replace_detach(a, k);
	rf_sbstate_mark_faulty(rf_array_sbstate(a), k);
	rf_dev_swap(a, k, dev);
	old = rf_dev_get(a, dev);
	old->flags = RF_DEV_FAULTY;
	old->prev_slot = k;
	rf_dev_get(a, k)->flags = RF_DEV_IN_SYNC;
	rf_dev_get(a, k)->prev_slot = -1;
	rf_devs_flags_changed(a);
	rf_info("%s: %s replaced %s in slot %d; %s is marked faulty", rf_array_name(a), rf_dev_get(a, k)->path,
		old->path, k, old->path);
	config_note(a, k, rf_dev_get(a, k)->path, old->path);
	return rf_sbstate_set_slot(rf_array_sbstate(a), k, k, RF_SB_MAX_SECTOR);
}

/* With every request drained: detach the replacements that cannot go on,
 * promote those whose copy is complete, attach a spare to each slot that
 * wants one. */
static int replace_fix(void *arg)
{
	struct repl_job *j = arg;
	struct rf_array *a = j->a;
	uint64_t rep = rf_array_replacing(a), broken = replace_broken(a), want;
	int ret = 0;

	rf_devs_lock(a);
	while (rep) {
		int k = __builtin_ctzll(rep), dev = rf_array_replacement(a, k);
		struct rf_dev *d = rf_dev_get(a, dev);

		rep &= rep - 1;
		if (broken >> k & 1) {
			bool lost = rf_array_repl_failed(a) >> k & 1;

			rf_replace_detach(a, k);
			d->flags = lost ? RF_DEV_FAULTY : RF_DEV_SPARE;
			rf_sbstate_drop_replacement(rf_array_sbstate(a), dev, lost);
			rf_info("%s: %s is no longer slot %d's replacement: %s", rf_array_name(a), d->path, k,
				lost ? "it lost a write, faulty" : "the slot failed; a spare again");
		} else if (j->done >> k & 1) {
			ret = promote(a, k, dev);
		}
	}
	want = replace_wanted(a);
	while (want && !ret) {
		int k = __builtin_ctzll(want), sp = pick_replacement(a);

		want &= want - 1;
		if (sp < 0)
			break;
		/* A spare named in the config gets its superblock now (as
		 * take_slot()), and with it the data offset it is copied at. */
		if (rf_array_sbstate(a) && !rf_dev_get(a, sp)->sb_has) {
			char err[1024];

			spare_offsets(a, rf_dev_get(a, sp), -1);
			ret = rf_sbstate_add_spare(rf_array_sbstate(a), sp, err, sizeof(err));
			if (ret) {
				rf_err("%s: %s", rf_array_name(a), err);
				break;
			}
		}
		rf_replace_attach(a, k, sp);
		rf_info("%s: %s replaces %s in slot %d: the slot's data is copied to it while the slot serves",
			rf_array_name(a), rf_dev_get(a, sp)->path, rf_dev_get(a, k)->path, k);
		ret = rf_sbstate_set_replacement(rf_array_sbstate(a), sp, k, 0);
	}
	rf_devs_unlock(a);
	return ret;
}

/* Take the completed copies. */
static uint64_t repl_done_take(struct rf_array *a)
{
	struct rf_mgmt *m = rf_array_mgmt(a);
	uint64_t d;

	pthread_mutex_lock(&m->lock);
	d = m->repl_done;
	m->repl_done = 0;
	pthread_mutex_unlock(&m->lock);
	return d;
}

/* Nothing is to be rebuilt and no walk runs (st): detach, promote and
 * attach replacements (replace_fix()), then copy to those attached.  true
 * when a copy runs. */
static bool check_replace(struct rf_array *a)
{
	struct repl_job j = { .a = a, .done = repl_done_take(a) };
	bool fix;
	int ret;

	rf_array_reconf_lock(a);
	fix = j.done || replace_broken(a) || (replace_wanted(a) && pick_replacement(a) >= 0);
	rf_array_reconf_unlock(a);
	if (fix) {
		ret = rf_array_quiesced_all(a, replace_fix, &j);
		if (ret)
			rf_err("%s: hot replace: recording the change in the superblocks: %s", rf_array_name(a),
			       strerror(-ret));
	}
	if (!rf_array_replacing(a))
		return false;
	ret = rf_sync_request(a, RF_SYNC_RECOVER);
	if (ret && ret != -EBUSY) {
		rf_err("%s: hot replace: the copy did not start: %s", rf_array_name(a), strerror(-ret));
		return false;
	}
	return true;
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
		repl = !rf_array_recovering(a) && rf_array_replacing(a) && (fresh || replace_broken(a));
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
	broken = replace_broken(a) != 0;
	rf_array_reconf_unlock(a);
	if (broken) {
		struct repl_job rj = { .a = a };

		rf_array_quiesced_all(a, replace_fix, &rj);
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
		if (st.action != RF_SYNC_IDLE || check_replace(a))
			return;
		if (resync_waits_take(a))
			rf_array_start_resync(a, false);
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
		ret = rf_array_quiesced_all(a, take_slot, &j);
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

/* ---- the member watch ---- */

/* What inotify reports of a member changed by another process: a writer
 * closed it (truncate -s, cp over it), its links changed (rm, mv over
 * it), it moved.  Our own writes report none of these. */
#define RF_WATCH_MASK (IN_CLOSE_WRITE | IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF)

/* Watch every open regular-file device's inode (not its path: the inode
 * we hold).  reconf_lock held. */
static void watch_all(struct rf_array *a)
{
	char proc[64];
	int i;

	if (!rf_array_mgmt(a) || rf_array_mgmt(a)->ino_fd < 0)
		return;
	for (i = 0; i < rf_devs_count(a); i++) {
		const struct rf_dev *m = rf_dev_get(a, i);

		if (m->io.fd < 0 || m->id.blk)
			continue;
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", m->io.fd);
		inotify_add_watch(rf_array_mgmt(a)->ino_fd, proc, RF_WATCH_MASK);       /* the same wd if watched */
	}
}

/* Blocks freed in a member by another process.  A member truncated and
 * grown back to its size between two looks (truncate -s 1M d1.img;
 * truncate -s 32M d1.img) has its size and inode, and zeros where the
 * array's data was: md, on a block device that shrank, would have met IO
 * errors; nothing here would, and reads would serve the zeros.  What such
 * a file keeps as evidence is its allocated blocks: the truncate freed
 * them, and nothing the daemon does to a member frees any (it writes
 * inside the member's size, never truncates nor punches holes: there is
 * no fallocate or discard passthrough).  So each look (inotify's wake-up
 * on another process's close of the file, and the once-a-second tick)
 * compares st_blocks with the last look's, and a fall of RF_FREED_MIN or
 * more fails the member.  The daemon's own writes only add blocks.
 *
 * Why not the others: inotify's IN_MODIFY and fanotify's FAN_MODIFY fire
 * on every write of the daemon's own too (an event queued per write on
 * the IO path, a thread woken for each, and still no way to tell a
 * truncate from a write); a lease (F_SETLEASE) cannot be taken on a file
 * the daemon holds open for writing twice (fd and its O_DIRECT twin).
 * The look is one fstat per member, off the IO path.
 *
 * Only on file systems where st_blocks falls only when blocks are freed:
 * ext2/3/4, XFS, tmpfs.  A compressing one (btrfs, ZFS) lowers it when
 * the daemon overwrites data with data that compresses better, so there
 * the check is off.  Below RF_FREED_MIN a fall is let pass (an extent
 * tree's index block given back when extents merge; tmpfs's own count,
 * seen to fall by 264 KiB with nothing truncating the file while three
 * arrays on /dev/shm failed and re-added members beside each other).  What it misses: a
 * truncate of a range that held no blocks (it held zeros and still does),
 * and blocks freed and then taken again by the daemon's writes before
 * the next look (a truncate by path, seen only by the tick). */
#define RF_FREED_MIN (1024 * 2) /* 512-byte units: 1 MiB */

static bool blocks_fs(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf))
		return false;
	return sf.f_type == EXT4_SUPER_MAGIC || sf.f_type == XFS_SUPER_MAGIC || sf.f_type == TMPFS_MAGIC;
}

/* Whether device i's file lost RF_FREED_MIN blocks or more since the last
 * look (why says so); the first look at a file only records it.
 * reconf_lock held. */
static bool blocks_freed(struct rf_mgmt *mg, int i, const struct rf_dev *m, char *why, size_t len)
{
	struct blocks_seen *b = &mg->seen[i];
	struct stat st;

	if (m->id.blk || fstat(m->io.fd, &st) || !S_ISREG(st.st_mode))
		return false;
	if (b->dev != st.st_dev || b->ino != st.st_ino) {
		b->dev = st.st_dev;
		b->ino = st.st_ino;
		b->on = blocks_fs(m->io.fd);
		b->blocks = st.st_blocks;
		return false;
	}
	if (b->on && st.st_blocks + RF_FREED_MIN <= b->blocks) {
		snprintf(why, len, "%lld KiB of its blocks were freed since it was last looked at (%lld KiB "
			 "allocated, %lld before): another process truncated it (and grew it back?) or punched "
			 "holes in it", (long long)(b->blocks - st.st_blocks) / 2, (long long)st.st_blocks / 2,
			 (long long)b->blocks / 2);
		b->blocks = st.st_blocks;
		return true;
	}
	b->blocks = st.st_blocks;
	return false;
}

/* Every device that is no longer what was opened (shrunk, unlinked,
 * replaced at its path, blocks freed) fails as if the disk had gone: a slot's member
 * is marked faulty before anything else is read from it, a spare is
 * marked faulty.  with_path: also look at the paths (the tick). */
static void check_devices(struct rf_array *a, bool with_path)
{
	char why[512], name[RF_MAX_DEVS][256], nb[RF_DEV_NAME_MAX];
	int i, n = 0;

	rf_array_reconf_lock(a);
	watch_all(a);
	for (i = 0; i < rf_devs_count(a); i++) {
		struct rf_dev *m = rf_dev_get(a, i);
		bool slot = i < rf_array_nslots(a);

		if (m->io.fd < 0 || (slot && (rf_array_faulty(a) & (1ull << i))) || (!slot && (m->flags & RF_DEV_FAULTY))) {
			rf_array_mgmt(a)->seen[i].ino = 0;      /* looked at afresh if it comes back */
			rf_array_mgmt(a)->seen[i].kept = false;
			continue;
		}
		if (rf_array_mgmt(a)->seen[i].kept ||
		    (!rf_dev_check(m->io.fd, &m->id, with_path, why, sizeof(why)) &&
		     !blocks_freed(rf_array_mgmt(a), i, m, why, sizeof(why))))
			continue;
		if (slot) {
			rf_err("member %d (%s): %s: it no longer holds the array's data", i, m->path, why);
			if (!rf_member_fail(a, i, -ENODEV, "member check", m->id.size))
				rf_array_mgmt(a)->seen[i].kept = true;
		} else {
			rf_err("spare %s: %s: marking it faulty", m->path, why);
			snprintf(name[n++], sizeof(name[0]), "%s", dev_name(m->path, nb));
		}
	}
	rf_array_reconf_unlock(a);
	/* A spare's flags change with everything drained. */
	for (i = 0; i < n; i++)
		rf_array_dev_set_state(a, name[i], "faulty");
}

static void *watch_main(void *arg)
{
	struct rf_array *a = arg;
	struct rf_mgmt *m = rf_array_mgmt(a);
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	rf_thread_name("rf-watch");
	for (;;) {
		struct pollfd p[2] = { { .fd = m->ino_fd, .events = POLLIN }, { .fd = m->stop_fd, .events = POLLIN } };

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents)
			return NULL;
		if (p[0].revents && read(m->ino_fd, buf, sizeof(buf)) > 0)
			check_devices(a, true);
	}
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
				check_devices(a, true);
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
	/* The first look at the members' blocks (blocks_freed() records). */
	rf_array_reconf_lock(a);
	for (i = 0; i < rf_devs_count(a); i++) {
		char why[8];

		if (rf_dev_get(a, i)->io.fd >= 0)
			blocks_freed(m, i, rf_dev_get(a, i), why, sizeof(why));
	}
	rf_array_reconf_unlock(a);
	if (m->ino_fd >= 0 && m->stop_fd >= 0) {
		rf_array_reconf_lock(a);
		watch_all(a);
		rf_array_reconf_unlock(a);
		m->watching = !pthread_create(&m->watch_thread, NULL, watch_main, a);
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

/* ---- md/dev-NAME/state ---- */

struct state_job {
	struct rf_array *a;
	const char *name, *word;
	struct rf_nbd *nbd;             /* re-add of an NBD device: its new connection */
	int ret;
};

/* What a re-add did to device m (a spare now), that served slot k (-1:
 * none): md puts it back into k through the rebuild the management thread
 * starts at once, unless a rebuild is under way (it waits for its end) or
 * the array has failed (no rebuild can run).  The device lock held. */
static void readd_said(struct rf_array *a, const struct rf_dev *m, int k)
{
	uint64_t r = rf_array_recovering(a);

	if (rf_array_failed(a))
		rf_warn("%s: %s re-added as a spare, not to slot %d: the array has failed (%d of %d slots hold "
			"no data), so no rebuild can put it back", rf_array_name(a), m->path, k,
			__builtin_popcountll(rf_array_faulty(a) | r), rf_array_nslots(a));
	else if (k >= 0 && k < rf_array_nslots(a) && !(rf_array_faulty(a) & (1ull << k)))
		rf_info("%s: %s re-added as a spare: slot %d %s another device now", rf_array_name(a), m->path, k,
			r & (1ull << k) ? "is being rebuilt onto" : "holds");
	else if (r)
		rf_info("%s: %s re-added as a spare: the rebuild of slot %d under way goes on; %s is rebuilt "
			"once it ends", rf_array_name(a), m->path, __builtin_ctzll(r), k >= 0 ? "its old slot" : "a failed slot");
	else if (k >= 0)
		rf_info("%s: %s re-added as a spare for its old slot %d: rebuilt into it now", rf_array_name(a),
			m->path, k);
	else
		rf_info("%s: %s re-added as a spare", rf_array_name(a), m->path);
}

static int set_state(void *arg)
{
	struct state_job *j = arg;
	struct rf_array *a = j->a;
	struct rf_dev *m;
	bool slot;
	int dev, repl, ret = 0;

	dev = rf_dev_lookup(a, j->name);
	if (dev < 0)
		return dev;
	m = rf_dev_get(a, dev);
	slot = dev < rf_array_nslots(a);
	rf_devs_lock(a);
	repl = slot ? -1 : rf_replacement_slot(a, dev);
	if (!strcmp(j->word, "want_replacement") || !strcmp(j->word, "-want_replacement")) {
		if (j->word[0] == '-') {
			/* md: always allowed; a copy under way goes on */
			m->flags &= ~RF_DEV_WANT_REPLACEMENT;
		} else if (!slot || (m->flags & RF_DEV_MISSING)) {
			rf_err("%s: dev-%s/state: want_replacement: %s is not in a slot (%s)", rf_array_name(a), j->name,
			       m->path, repl >= 0 ? "it is a replacement" : "only a slot's device is replaced");
			ret = -EBUSY;
		} else if (!rf_array_sync_ops(a)) {
			rf_err("%s: dev-%s/state: want_replacement: raid%d has no redundancy to copy with (md "
			       "replaces devices of raid1, raid4/5/6 and raid10)", rf_array_name(a), j->name,
			       rf_array_geom(a)->level);
			ret = -EOPNOTSUPP;
		} else if ((rf_array_faulty(a) | rf_array_recovering(a)) >> dev & 1) {
			rf_err("%s: dev-%s/state: want_replacement: %s is %s: a spare rebuilds its slot", rf_array_name(a),
			       j->name, m->path, rf_array_faulty(a) >> dev & 1 ? "faulty" : "being rebuilt");
			ret = -EBUSY;
		} else {
			m->flags |= RF_DEV_WANT_REPLACEMENT;
			if (pick_replacement(a) < 0 && rf_array_replacement(a, dev) < 0)
				rf_info("%s: %s wants a replacement: the next spare added takes its place",
					rf_array_name(a), m->path);
		}
	} else if (repl >= 0 && !strcmp(j->word, "faulty")) {
		/* md fails the replacement; the slot keeps its device.  The
		 * management thread stops the copy, then detaches it. */
		rf_replace_failed(a, repl, 0, "marked faulty (md/dev-*/state)");
	} else if (repl >= 0 && strcmp(j->word, "writemostly") && strcmp(j->word, "-writemostly") &&
		   strcmp(j->word, "failfast") && strcmp(j->word, "-failfast")) {
		rf_err("%s: dev-%s/state: %s: %s is slot %d's replacement (mark it faulty first)", rf_array_name(a),
		       j->name, j->word, m->path, repl);
		ret = -EBUSY;
	} else if (!strcmp(j->word, "faulty")) {
		if (slot) {
			/* md's state_store: -EBUSY when the level keeps the
			 * device (the last copy of some data) */
			if (!rf_member_fail(a, dev, -EIO, "md/dev-*/state \"faulty\"", 0))
				ret = -EBUSY;
		} else if (!(m->flags & RF_DEV_FAULTY)) {
			m->flags = (m->flags & ~RF_DEV_SPARE) | RF_DEV_FAULTY;
			rf_info("%s: spare %s marked faulty", rf_array_name(a), m->path);
		}
	} else if (!strcmp(j->word, "remove")) {
		if (slot && !(rf_array_faulty(a) & (1ull << dev))) {
			rf_err("%s: dev-%s/state: remove: %s is active in slot %d (mark it faulty first)", rf_array_name(a),
			       j->name, m->path, dev);
			ret = -EBUSY;
		} else if (slot) {
			rf_info("%s: %s removed from slot %d", rf_array_name(a), m->path, dev);
			ret = slot_vacate(a, dev, false);
		} else {
			rf_info("%s: %s removed", rf_array_name(a), m->path);
			rf_sbstate_mark_faulty(rf_array_sbstate(a), dev);
			rf_dev_drop(a, dev);
		}
	} else if (!strcmp(j->word, "re-add") || !strcmp(j->word, "-faulty")) {
		bool back;

		/* Failed while being rebuilt: once the rebuild is stopped
		 * (rf_array_dev_set_state()), it is just faulty. */
		if (slot && (rf_array_faulty(a) & (1ull << dev)) && (rf_array_recovering(a) & (1ull << dev))) {
			struct rf_sync_status st;

			rf_sync_get(a, &st);
			if (st.action == RF_SYNC_RECOVER) {
				rf_err("%s: dev-%s/state: %s: %s failed while being rebuilt into slot %d, and that "
				       "rebuild runs again: try once it stopped", rf_array_name(a), j->name, j->word,
				       m->path, dev);
				rf_devs_unlock(a);
				return -EBUSY;
			}
			rf_recovery_drop_faulty(a);
		}
		back = (slot && (rf_array_faulty(a) & (1ull << dev)) && !(rf_array_recovering(a) & (1ull << dev))) ||
		       (!slot && (m->flags & RF_DEV_FAULTY));

		/* An NBD device comes back on its new connection. */
		if (back && j->nbd && m->io.nbd && !strcmp(rf_nbd_uri(j->nbd), m->path)) {
			rf_dev_nbd_replace(m, j->nbd);
			j->nbd = NULL;
		}
		if (slot && (rf_array_faulty(a) & (1ull << dev)) && !(rf_array_recovering(a) & (1ull << dev))) {
			/* Out of the slot, then back in through a rebuild. */
			ret = slot_vacate(a, dev, true);
			if (!ret) {
				struct rf_dev *out = rf_dev_get(a, rf_devs_count(a) - 1);

				out->flags = RF_DEV_SPARE;
				readd_said(a, out, dev);
			}
		} else if (!slot && (m->flags & RF_DEV_FAULTY)) {
			m->flags = RF_DEV_SPARE;
			readd_said(a, m, m->prev_slot);
		} else {
			/* md's -EINVAL, but not "a word it does not take". */
			rf_err("%s: dev-%s/state: %s: %s is not faulty: %s", rf_array_name(a), j->name, j->word, m->path,
			       !slot ? "it is a spare" :
			       rf_array_recovering(a) & (1ull << dev) ? "it is being rebuilt in its slot" :
			       "it is in sync in its slot");
			ret = -EBUSY;
		}
	} else if (!strcmp(j->word, "writemostly") || !strcmp(j->word, "-writemostly") ||
		   !strcmp(j->word, "failfast") || !strcmp(j->word, "-failfast")) {
		unsigned f = j->word[j->word[0] == '-'] == 'w' ? RF_DEV_WRITE_MOSTLY : RF_DEV_FAILFAST;

		if (j->word[0] == '-')
			m->flags &= ~f;
		else
			m->flags |= f;
		rf_devs_flags_changed(a);
		/* md records both in the device's superblock. */
		rf_sbstate_set_flags(rf_array_sbstate(a), dev);
	} else {
		rf_err("%s: dev-%s/state: refused '%s': takes faulty, remove, re-add, -faulty, writemostly, "
		       "-writemostly, failfast, -failfast, want_replacement or -want_replacement", rf_array_name(a),
		       j->name, j->word);
		ret = -EINVAL;
	}
	rf_devs_unlock(a);
	return ret;
}

/* re-add of device name: when it is an NBD export, a new connection to
 * it (its old one died with the failure), made before the drain and
 * without a lock: a server that does not answer holds nothing up.
 * set_state() puts it in place if the device is still that export.  0
 * with *out NULL for a file. */
static int reconnect(struct rf_array *a, const char *name, struct rf_nbd **out)
{
	struct rf_dev_nbd_was was = { 0 };
	char err[1024];
	int dev, ret = -EOPNOTSUPP;

	*out = NULL;
	rf_array_reconf_lock(a);
	dev = rf_dev_lookup(a, name);
	if (dev >= 0 && rf_dev_faulty(a, dev)) {
		/* its superblock's identity: the device lock, as the
		 * superblock writers (services/sbstate.c) */
		rf_devs_lock(a);
		ret = rf_dev_nbd_was(rf_dev_get(a, dev), &was);
		rf_devs_unlock(a);
	}
	rf_array_reconf_unlock(a);
	if (ret == -EOPNOTSUPP)
		return 0;
	if (!ret)
		ret = rf_dev_nbd_reconnect(&was, out, err, sizeof(err));
	else
		snprintf(err, sizeof(err), "%s", strerror(-ret));
	if (ret)
		rf_err("%s: dev-%s/state: re-add: %s", rf_array_name(a), name, err);
	free(was.uri);
	return ret;
}

int rf_array_dev_set_state(struct rf_array *a, const char *name, const char *word)
{
	struct state_job j = { .a = a, .name = name, .word = word };
	int ret;

	if (rf_array_readonly(a) || rf_array_overlay(a)) {
		rf_err("%s: dev-%s/state: the array is read-only", rf_array_name(a), name);
		return -EROFS;
	}
	if (!strcmp(word, "re-add") || !strcmp(word, "-faulty")) {
		struct rf_sync_status st;
		int dev;
		bool own;

		/* A device that failed during its own rebuild: that rebuild
		 * stops first (md's recovery is interrupted by the failure),
		 * so that the device is just faulty. */
		rf_array_reconf_lock(a);
		dev = rf_dev_lookup(a, name);
		own = dev >= 0 && dev < rf_array_nslots(a) && (rf_array_faulty(a) & rf_array_recovering(a) & (1ull << dev));
		rf_array_reconf_unlock(a);
		rf_sync_get(a, &st);
		if (own && st.action == RF_SYNC_RECOVER)
			rf_sync_stop(a, false);
		ret = reconnect(a, name, &j.nbd);
		if (ret)
			return ret;
	}
	ret = rf_array_quiesced_all(a, set_state, &j);
	rf_nbd_close(j.nbd);    /* not taken: the device was not faulty */
	if (!ret)
		rf_mgmt_kick(a);
	return ret;
}

/* ---- md/new_dev ---- */

struct add_job {
	struct rf_array *a;
	struct rf_dev m;                /* not in the table until add_dev() */
	char *err;
	size_t errlen;
};

static int add_dev(void *arg)
{
	struct add_job *j = arg;
	struct rf_array *a = j->a;
	int dev, ret = 0;

	rf_devs_lock(a);
	dev = rf_dev_append(a);
	if (dev < 0) {
		rf_devs_unlock(a);
		snprintf(j->err, j->errlen, "%s: the array holds %d devices already", j->m.path, rf_devs_count(a));
		return -ENOSPC;
	}
	memcpy(rf_dev_get(a, dev), &j->m, sizeof(j->m));
	ret = rf_sbstate_add_spare(rf_array_sbstate(a), dev, j->err, j->errlen);
	if (ret) {
		/* What it holds is still j->m's, which the caller closes:
		 * the entry goes empty. */
		rf_dev_init(rf_dev_get(a, dev));
		rf_dev_drop(a, dev);
	}
	rf_devs_unlock(a);
	return ret;
}

/* A device of this array written to new_dev (its superblock sb) that
 * carries the device UUID of one still in the array is that device again,
 * or a copy of it, under another name: refused, naming both.  reconf_lock
 * held. */
static int check_device_uuid(struct rf_array *a, struct rf_dev *m, const char *path, const struct rf_sb *sb,
			     char *err, size_t errlen)
{
	struct rf_member_id id, o;
	char w2[PATH_MAX + 32];
	int j;

	rf_dev_member_id(m, &id);
	rf_member_id_set_uuid(&id, sb->device_uuid);
	/* Lock order: reconf_lock (held), then dev_lock (engine.h). */
	rf_devs_lock(a);
	j = rf_same_member(a, rf_devs_count(a), &id);
	if (j >= 0)
		rf_dev_member_id(rf_dev_get(a, j), &o);
	rf_devs_unlock(a);
	if (j < 0)
		return 0;
	snprintf(w2, sizeof(w2), "device %d (%s)", j, rf_dev_get(a, j)->path);
	rf_member_same_msg(err, errlen, path, &id, w2, &o, "already in the array");
	return -EEXIST;
}

/* Refuse a file that holds another md array's superblock (or a damaged
 * one): writing a spare superblock would destroy it. */
static int check_foreign_sb(struct rf_array *a, struct rf_dev *m, const char *path, char *err, size_t errlen)
{
	char why[1024], u1[40], u2[40];
	struct rf_sb sb, mine;
	struct rf_sb_io io;
	int i, r = rf_dev_sb_io(m, &io);

	if (!r)
		r = rf_sb_read_io(&io, path, &sb, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "%s", strerror(-r));

	if (r == -ENOENT)
		return 0;
	if (r) {
		snprintf(err, errlen, "%s: refused: it holds an md superblock that does not read (%s); clear it "
			 "first if it is not needed", path, why);
		return -EINVAL;
	}
	for (i = 0; i < rf_array_nslots(a); i++) {
		struct rf_dev *d = rf_dev_get(a, i);

		if ((d->io.fd < 0 && !d->io.nbd) || rf_dev_sb_io(d, &io) ||
		    rf_sb_read_io(&io, d->path, &mine, why, sizeof(why)))
			continue;
		if (!memcmp(mine.uuid, sb.uuid, 16))
			return check_device_uuid(a, m, path, &sb, err, errlen);     /* one of ours: a spare again */
		snprintf(err, errlen, "%s: refused: it belongs to another md array (uuid %s, this one %s); clear "
			 "its superblock first if that array is not needed", path, rf_sb_uuid_str(&sb, u1),
			 rf_sb_uuid_str(&mine, u2));
		return -EEXIST;
	}
	return 0;
}

int rf_array_add_spare(struct rf_array *a, const char *path, char *err, size_t errlen)
{
	struct add_job j = { .a = a, .err = err, .errlen = errlen };
	struct rf_dev *m = &j.m;
	uint64_t need;
	int ret;

	rf_dev_init(m);
	if (rf_array_readonly(a) || rf_array_overlay(a)) {
		snprintf(err, errlen, "%s: the array is %s: no spares", path, rf_array_readonly(a) ? "read-only" : "an overlay");
		return -EROFS;
	}
	/* Opened, sized, compared with every device and locked as a
	 * member is at array open. */
	ret = rf_dev_open_into(a, m, path, path, false, err, errlen);
	if (ret)
		return ret;
	m->flags = RF_DEV_SPARE;
	rf_array_reconf_lock(a);
	spare_offsets(a, m, -1);
	need = m->data_offset + rf_array_geom(a)->dev_sectors * 512;
	rf_array_reconf_unlock(a);
	if (m->size < need) {
		snprintf(err, errlen, "%s: %llu bytes is too small: this array needs %llu (data offset %llu + %llu)",
			 path, (unsigned long long)m->size, (unsigned long long)need,
			 (unsigned long long)m->data_offset, (unsigned long long)(need - m->data_offset));
		ret = -ENOSPC;
		goto fail;
	}
	if (rf_array_sbstate(a)) {
		rf_array_reconf_lock(a);
		ret = check_foreign_sb(a, m, path, err, errlen);
		rf_array_reconf_unlock(a);
		if (ret)
			goto fail;
	}
	m->path = strdup(path);
	if (!m->path) {
		ret = -ENOMEM;
		goto fail;
	}
	m->io.fault = rf_fault_new();
	if (!m->io.fault) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = rf_array_quiesced_all(a, add_dev, &j);
	if (ret)
		goto fail;
	rf_info("%s: %s added as a spare", rf_array_name(a), path);
	rf_mgmt_kick(a);
	return 0;
fail:
	rf_dev_release(m);
	return ret;
}

/* ---- md/dev-NAME/timeout ---- */

int rf_array_dev_timeout_get(struct rf_array *a, const char *name, unsigned *ms)
{
	int dev, ret;

	rf_array_reconf_lock(a);
	dev = rf_dev_lookup(a, name);
	ret = dev < 0 ? dev : rf_dev_timeout(rf_dev_get(a, dev), ms);
	rf_array_reconf_unlock(a);
	return ret;
}

int rf_array_dev_timeout_set(struct rf_array *a, const char *name, unsigned ms)
{
	int dev, ret;

	rf_array_reconf_lock(a);
	dev = rf_dev_lookup(a, name);
	ret = dev < 0 ? dev : rf_dev_set_timeout(rf_dev_get(a, dev), ms);
	rf_array_reconf_unlock(a);
	if (!ret)
		rf_info("%s: %s: member timeout %u ms", rf_array_name(a), name, ms);
	return ret;
}

/* ---- md/dev-NAME/fault ---- */

/* The fault state of device name; reconf_lock held.  NULL: no such
 * device. */
static struct rf_fault *dev_fault(struct rf_array *a, const char *name)
{
	int dev = rf_dev_lookup(a, name);

	return dev < 0 ? NULL : rf_dev_get(a, dev)->io.fault;
}

int rf_array_dev_fault_get(struct rf_array *a, const char *name, struct rf_fault_spec *s,
			   struct rf_fault_stats *st)
{
	struct rf_fault *f;

	rf_array_reconf_lock(a);
	f = dev_fault(a, name);
	if (f)
		rf_fault_get(f, s, st);
	rf_array_reconf_unlock(a);
	return f ? 0 : -ENOENT;
}

int rf_array_dev_fault_set(struct rf_array *a, const char *name, const struct rf_fault_spec *s)
{
	struct rf_fault *f;

	rf_array_reconf_lock(a);
	f = dev_fault(a, name);
	if (f)
		rf_fault_set(f, s);
	rf_array_reconf_unlock(a);
	return f ? 0 : -ENOENT;
}

/* ---- md/dev-NAME/io_mode ---- */

int rf_array_dev_io_mode_get(struct rf_array *a, const char *name)
{
	int dev, ret;

	rf_array_reconf_lock(a);
	dev = rf_dev_lookup(a, name);
	ret = dev < 0 ? dev : rf_dev_io_mode(rf_dev_get(a, dev));
	rf_array_reconf_unlock(a);
	return ret;
}

struct io_mode_job {
	struct rf_array *a;
	const char *name;
	int mode;
	char err[512];
};

/* Drained (no member IO in flight, superblock and bitmap writers out
 * behind the device lock): the queues read the mode at their next issue. */
static int set_io_mode(void *arg)
{
	struct io_mode_job *j = arg;
	int dev = rf_dev_lookup(j->a, j->name), ret;

	if (dev < 0)
		return dev;
	rf_devs_lock(j->a);
	ret = rf_dev_set_io_mode(rf_dev_get(j->a, dev), j->mode, j->err, sizeof(j->err));
	rf_devs_unlock(j->a);
	return ret;
}

int rf_array_dev_io_mode_set(struct rf_array *a, const char *name, int mode)
{
	struct io_mode_job j = { .a = a, .name = name, .mode = mode };
	int ret = rf_array_quiesced_all(a, set_io_mode, &j);

	if (ret && j.err[0])
		rf_err("%s: dev-%s/io_mode: %s", rf_array_name(a), name, j.err);
	else if (!ret)
		rf_info("%s: %s: member IO %s", rf_array_name(a), name,
			rf_member_io_name(rf_array_dev_io_mode_get(a, name)));
	return ret;
}
