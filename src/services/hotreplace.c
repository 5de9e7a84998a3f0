/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hotreplace.c - hot replace, the choices: md's want_replacement (mdadm
 * --replace), which spare replaces which device and when it takes the
 * slot.  The writes to a replacement are core/replace.c's.
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
 *
 * Replacements are attached, promoted and detached with every request
 * drained and the device lock held (rf_hotreplace_fix() under
 * rf_barrier_quiesced_all), as member.c's table edits.  A completed copy is
 * told by the sync walk's end (member.c's rf_recovery_ended()) in the
 * management thread's repl_done, under its lock.  This file sees the
 * array only through core/core.h.
 *
 * It does NOT decide when to run (the management thread calls
 * rf_hotreplace_check() once nothing is to be rebuilt, and stops a copy
 * for a failure), set or clear want_replacement (memberctl.c's
 * md/dev-NAME/state), issue the writes to a replacement (core/replace.c),
 * nor copy the data (sync.c's "recover" walk).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "core/core.h"
#include "raidfuse/log.h"
#include "raidfuse/super.h"
#include "raidfuse/sync.h"
#include "services/member_int.h"
#include "services/sbstate.h"

/* reconf_lock held: slots whose replacement must be detached: it lost a
 * write, or its slot no longer holds the data it copies. */
uint64_t rf_hotreplace_broken(struct rf_array *a)
{
	return rf_replace_mask(a) &
	       (rf_replace_failed_mask(a) | rf_array_faulty(a) | rf_array_recovering(a));
}

/* reconf_lock held: the first spare free to be a replacement; -1: none. */
int rf_hotreplace_pick(struct rf_array *a)
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
	uint64_t bad = rf_array_faulty(a) | rf_array_recovering(a) | rf_replace_mask(a), w = 0;
	int k;

	for (k = 0; k < rf_array_nslots(a); k++)
		if ((rf_dev_get(a, k)->flags & RF_DEV_WANT_REPLACEMENT) && !(bad >> k & 1))
			w |= 1ull << k;
	return w;
}

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
	rf_member_config_note(a, k, rf_dev_get(a, k)->path, old->path);
	return rf_sbstate_set_slot(rf_array_sbstate(a), k, k, RF_SB_MAX_SECTOR);
}

/* With every request drained: detach the replacements that cannot go on,
 * promote those whose copy is complete, attach a spare to each slot that
 * wants one. */
int rf_hotreplace_fix(void *arg)
{
	struct rf_hotreplace_job *j = arg;
	struct rf_array *a = j->a;
	uint64_t rep = rf_replace_mask(a), broken = rf_hotreplace_broken(a), want;
	int ret = 0;

	rf_devs_lock(a);
	while (rep) {
		int k = __builtin_ctzll(rep), dev = rf_replace_dev_of(a, k);
		struct rf_dev *d = rf_dev_get(a, dev);

		rep &= rep - 1;
		if (broken >> k & 1) {
			bool lost = rf_replace_failed_mask(a) >> k & 1;

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
		int k = __builtin_ctzll(want), sp = rf_hotreplace_pick(a);

		want &= want - 1;
		if (sp < 0)
			break;
		/* A spare named in the config gets its superblock now (as
		 * member.c's take_slot()), and with it the data offset it is
		 * copied at. */
		if (rf_array_sbstate(a) && !rf_dev_get(a, sp)->sb_has) {
			char err[1024];

			rf_member_spare_offsets(a, rf_dev_get(a, sp), -1);
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
 * attach replacements (rf_hotreplace_fix()), then copy to those
 * attached.  true when a copy runs. */
bool rf_hotreplace_check(struct rf_array *a)
{
	struct rf_hotreplace_job j = { .a = a, .done = repl_done_take(a) };
	bool fix;
	int ret;

	rf_array_reconf_lock(a);
	fix = j.done || rf_hotreplace_broken(a) || (replace_wanted(a) && rf_hotreplace_pick(a) >= 0);
	rf_array_reconf_unlock(a);
	if (fix) {
		ret = rf_barrier_quiesced_all(a, rf_hotreplace_fix, &j);
		if (ret)
			rf_err("%s: hot replace: recording the change in the superblocks: %s", rf_array_name(a),
			       strerror(-ret));
	}
	if (!rf_replace_mask(a))
		return false;
	ret = rf_sync_request(a, RF_SYNC_RECOVER);
	if (ret && ret != -EBUSY) {
		rf_err("%s: hot replace: the copy did not start: %s", rf_array_name(a), strerror(-ret));
		return false;
	}
	return true;
}
