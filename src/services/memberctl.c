/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memberctl.c - the device control files: md/dev-NAME/state, md/new_dev,
 * md/dev-NAME/timeout, md/dev-NAME/fault and md/dev-NAME/io_mode, taking
 * the words md's sysfs attributes of the same names take.
 *
 * md/dev-NAME/state: faulty, remove, re-add (-faulty), writemostly,
 * failfast, want_replacement and their negations.  md/new_dev: a file or
 * an NBD export becomes a spare, opened and checked as a member is at
 * array open, refused when it holds another array's superblock or is a
 * device already in the array.  timeout, fault and io_mode: a device's
 * member timeout, its fault injection and its IO mode.
 *
 * A word that changes the device table (state, new_dev, io_mode) is
 * carried out with every request drained (rf_barrier_quiesced_all) and the
 * device lock held, as member.c's table edits, and after a change of
 * state or a new spare the management thread is kicked.  The readers and
 * the settings that are a device's own (timeout, fault) take reconf_lock
 * only.  A re-add of an NBD device connects anew before the drain and
 * without a lock, so a server that does not answer holds nothing up.  A
 * refused word leaves the array as it was, with a message that says why.
 * This file sees the array only through core/core.h.
 *
 * It does NOT choose which spare takes a failed slot or start a rebuild
 * (member.c's management thread, once kicked), attach a replacement
 * (hotreplace.c: want_replacement only marks the device), nor open or
 * check a device's file itself (core/dev.c's rf_dev_open_into(), as at
 * array open).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "raidfuse/fault.h"
#include "raidfuse/log.h"
#include "raidfuse/nbd.h"
#include "raidfuse/super.h"
#include "raidfuse/sync.h"
#include "services/member_int.h"
#include "services/sbstate.h"

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

	dev = rf_member_lookup(a, j->name);
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
			if (rf_hotreplace_pick(a) < 0 && rf_replace_dev_of(a, dev) < 0)
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
			ret = rf_member_slot_vacate(a, dev, false);
		} else {
			rf_info("%s: %s removed", rf_array_name(a), m->path);
			rf_sbstate_mark_faulty(rf_array_sbstate(a), dev);
			rf_dev_drop(a, dev);
		}
	} else if (!strcmp(j->word, "re-add") || !strcmp(j->word, "-faulty")) {
		bool back;

		/* Failed while being rebuilt: once the rebuild is stopped
		 * (rf_memberctl_set_state()), it is just faulty. */
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
			ret = rf_member_slot_vacate(a, dev, true);
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
	dev = rf_member_lookup(a, name);
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

int rf_memberctl_set_state(struct rf_array *a, const char *name, const char *word)
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
		dev = rf_member_lookup(a, name);
		own = dev >= 0 && dev < rf_array_nslots(a) && (rf_array_faulty(a) & rf_array_recovering(a) & (1ull << dev));
		rf_array_reconf_unlock(a);
		rf_sync_get(a, &st);
		if (own && st.action == RF_SYNC_RECOVER)
			rf_sync_stop(a, false);
		ret = reconnect(a, name, &j.nbd);
		if (ret)
			return ret;
	}
	ret = rf_barrier_quiesced_all(a, set_state, &j);
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

int rf_memberctl_add_spare(struct rf_array *a, const char *path, char *err, size_t errlen)
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
	rf_member_spare_offsets(a, m, -1);
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
	ret = rf_barrier_quiesced_all(a, add_dev, &j);
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

int rf_memberctl_timeout_get(struct rf_array *a, const char *name, unsigned *ms)
{
	int dev, ret;

	rf_array_reconf_lock(a);
	dev = rf_member_lookup(a, name);
	ret = dev < 0 ? dev : rf_dev_timeout(rf_dev_get(a, dev), ms);
	rf_array_reconf_unlock(a);
	return ret;
}

int rf_memberctl_timeout_set(struct rf_array *a, const char *name, unsigned ms)
{
	int dev, ret;

	rf_array_reconf_lock(a);
	dev = rf_member_lookup(a, name);
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
	int dev = rf_member_lookup(a, name);

	return dev < 0 ? NULL : rf_dev_get(a, dev)->io.fault;
}

int rf_memberctl_fault_get(struct rf_array *a, const char *name, struct rf_fault_spec *s,
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

int rf_memberctl_fault_set(struct rf_array *a, const char *name, const struct rf_fault_spec *s)
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

int rf_memberctl_io_mode_get(struct rf_array *a, const char *name)
{
	int dev, ret;

	rf_array_reconf_lock(a);
	dev = rf_member_lookup(a, name);
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
	int dev = rf_member_lookup(j->a, j->name), ret;

	if (dev < 0)
		return dev;
	rf_devs_lock(j->a);
	ret = rf_dev_set_io_mode(rf_dev_get(j->a, dev), j->mode, j->err, sizeof(j->err));
	rf_devs_unlock(j->a);
	return ret;
}

int rf_memberctl_io_mode_set(struct rf_array *a, const char *name, int mode)
{
	struct io_mode_job j = { .a = a, .name = name, .mode = mode };
	int ret = rf_barrier_quiesced_all(a, set_io_mode, &j);

	if (ret && j.err[0])
		rf_err("%s: dev-%s/io_mode: %s", rf_array_name(a), name, j.err);
	else if (!ret)
		rf_info("%s: %s: member IO %s", rf_array_name(a), name,
			rf_member_io_name(rf_memberctl_io_mode_get(a, name)));
	return ret;
}
