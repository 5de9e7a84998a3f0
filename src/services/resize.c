/* SPDX-License-Identifier: GPL-2.0-or-later */
/* resize.c - the used size of the members and the size the image serves,
 * changed online: md's component_size and array_size stores.
 *
 * component_size (mdadm --grow --size).  Members replaced by larger ones,
 * image files extended, volumes enlarged: each device's size is looked at
 * again (md's dev-NAME/size "0", which mdadm writes first), and every
 * member then uses the size asked for, or (0, "max") as much as the
 * smallest device holds, spares included, as md's update_size takes every
 * rdev.  With every request drained the geometry takes the new size, the
 * superblocks record it (1.1/1.2 their data_size grown to the member's
 * end; 1.0 and 0.90 keep the superblock where it was read, at the old
 * end, so their members use no more than before), and the requests go on.
 * A grow is then resynced from the old size up, as md's resize sets its
 * recovery_cp there (rows nobody wrote may not agree on members extended
 * by other means); a shrink cuts the image.  The superblocks are written
 * before any request reaches the new rows: after a crash the array comes
 * back at the size its writes went to.
 *
 * array_size (mdadm --grow --array-size).  The image serves that many KiB
 * whatever the geometry holds (md's external_size), at most all of it;
 * "default" gives the geometry's size back.  md records none of it: an
 * assembly serves the geometry's size again.  A component size whose
 * array would be smaller than a set array_size is refused (md's
 * raid5_resize), which is what makes a shrink safe: array_size first, the
 * file system checked, then component_size.
 *
 * Refused as md refuses: where the level says md does not resize it
 * (rf_level_resize_refused(): raid0, raid10 of a far layout), a partial
 * parity log, a sync action or a reshape running, a
 * device being rebuilt (EBUSY); and what raidfuse cannot record: an array
 * without superblocks (the config's size key fixes it), a read-only one.
 * The write-intent bitmap follows the new size (services/bitmap.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/iolog.h"
#include "raidfuse/log.h"
#include "raidfuse/resize.h"
#include "raidfuse/sync.h"
#include "services/sbstate.h"

struct resize {
	struct rf_array *a;
	uint64_t sectors;               /* asked for; 0: as much as every device holds */
	uint64_t bytes[RF_MAX_DEVS];    /* each device's size now (0: not looked at) */
	const char *paths[RF_MAX_DEVS]; /* to tell the table is the one looked at */
	int ndevs;
	uint64_t old, used;             /* dev_sectors before and after */
	char *err;
	size_t errlen;
};

/* Whether device i takes part: in the table, not missing, not faulty. */
static bool counted(struct rf_array *a, int i)
{
	const struct rf_dev *d = rf_dev_get(a, i);

	return !(d->flags & (RF_DEV_MISSING | RF_DEV_FAULTY)) && !rf_dev_faulty(a, i) && d->path;
}

/* Sectors device d may give the array (md's rdev->sectors after a size
 * change to "max"), its size now bytes: 1.1/1.2 up to its end; 1.0 the
 * data_size it records (its superblock sits right after it); 0.90 up to
 * its superblock, as md's super_90 counts. */
static uint64_t dev_room(const struct rf_dev *d, uint64_t bytes)
{
	uint64_t doff = d->data_offset / 512, end = bytes / 512;

	if (d->sb_has && d->sb.kind == RF_SB_10)
		return d->sb.data_size;
	if (d->sb_has && d->sb.kind == RF_SB_090)
		return d->sb.sb_offset < 2ull * UINT32_MAX ? d->sb.sb_offset : 2ull * UINT32_MAX;
	return end > doff ? end - doff : 0;
}

/* why into err; ret. */
static int say(char *err, size_t errlen, int ret, const char *why)
{
	snprintf(err, errlen, "%s", why);
	return ret;
}

/* Why a's members cannot change size now, as md would refuse, into
 * err: -errno as md gives it, or 0 if they can. */
static int refused(struct rf_array *a, char *err, size_t errlen)
{
	const char *why = rf_level_resize_refused(a);
	struct rf_sync_status st;
	uint64_t pos;
	bool back;
	int i;

	if (why)
		return say(err, errlen, -EINVAL, why);
	if (rf_array_readonly(a) || rf_array_overlay(a))
		return say(err, errlen, -EROFS, "the array is read-only");
	if (!rf_array_sbstate(a))
		return say(err, errlen, -EOPNOTSUPP, "no superblocks to record the size in (the config's size key "
			   "gives it)");
	rf_devs_lock(a);
	for (i = 0; i < rf_array_nslots(a) && !why; i++) {
		const struct rf_dev *d = rf_dev_get(a, i);

		if (d->sb_has && (d->sb.feature_map & (RF_SB_FEAT_PPL | RF_SB_FEAT_MULTI_PPL)))
			why = "the array keeps a partial parity log: md does not resize it (switch it off in "
			      "md/consistency_policy first)";
	}
	rf_devs_unlock(a);
	if (why)
		return say(err, errlen, -EINVAL, why);
	if (rf_array_reshape(a, &pos, &back))
		return say(err, errlen, -EBUSY, "a reshape is under way");
	if (rf_array_recovering(a) || rf_replace_mask(a))
		return say(err, errlen, -EBUSY, "a device is being rebuilt");
	rf_sync_get(a, &st);
	if (st.action != RF_SYNC_IDLE && st.action != RF_SYNC_FROZEN) {
		snprintf(err, errlen, "%s is running", rf_sync_action_name(st.action));
		return -EBUSY;
	}
	return 0;
}

/* Drained: the size every device holds, the geometry, the superblocks,
 * the bitmap. */
static int resize_fn(void *arg)
{
	struct resize *r = arg;
	struct rf_array *a = r->a;
	uint64_t want = r->sectors, room = UINT64_MAX;
	const char *tight = NULL;
	int i, ret;

	rf_devs_lock(a);
	if (rf_devs_count(a) != r->ndevs) {
		rf_devs_unlock(a);
		snprintf(r->err, r->errlen, "the devices changed while they were looked at: try again");
		return -EAGAIN;
	}
	for (i = 0; i < r->ndevs; i++) {
		struct rf_dev *d = rf_dev_get(a, i);
		uint64_t s;

		if (!r->bytes[i] || !counted(a, i))
			continue;
		if (d->path != r->paths[i]) {
			rf_devs_unlock(a);
			snprintf(r->err, r->errlen, "the devices changed while they were looked at: try again");
			return -EAGAIN;
		}
		s = dev_room(d, r->bytes[i]);
		if (want && s < want) {
			rf_devs_unlock(a);
			snprintf(r->err, r->errlen, "%s holds %" PRIu64 " KiB past its data offset%s, %" PRIu64
				 " KiB asked for", d->path, s / 2,
				 d->sb_has && (d->sb.kind == RF_SB_10 || d->sb.kind == RF_SB_090) ?
					 " (its superblock sits at the end it had: mdadm --update=devicesize moves it)" : "",
				 want / 2);
			return -ENOSPC;
		}
		if (s < room) {
			room = s;
			tight = d->path;
		}
	}
	if (!want)
		want = room;
	rf_devs_unlock(a);
	if (want == UINT64_MAX) {
		snprintf(r->err, r->errlen, "no device to size it by");
		return -ENODEV;
	}
	ret = rf_array_set_dev_sectors(a, want, r->err, r->errlen);
	if (ret) {
		if (tight && !r->sectors) {
			char why[512];

			snprintf(why, sizeof(why), "%s", r->err);
			snprintf(r->err, r->errlen, "%s (the smallest device, %s, gives %" PRIu64 " KiB)", why, tight,
				 want / 2);
		}
		return ret;
	}
	r->used = rf_array_geom(a)->dev_sectors;
	/* Each device's size as it is now: its data past the old end is
	 * the array's from here on (a truncation back is a failure). */
	rf_devs_lock(a);
	for (i = 0; i < r->ndevs; i++) {
		struct rf_dev *d = rf_dev_get(a, i);

		if (!r->bytes[i] || !counted(a, i) || r->bytes[i] <= d->size)
			continue;
		d->size = r->bytes[i];
		d->id.size = r->bytes[i];
	}
	rf_devs_unlock(a);
	ret = rf_bitmap_resize(rf_array_bitmap(a), rf_array_geom(a), true, r->err, r->errlen);
	if (!ret) {
		ret = rf_sbstate_set_size(rf_array_sbstate(a), r->used);
		if (ret)
			snprintf(r->err, r->errlen, "recording the size in the superblocks failed: %s", strerror(-ret));
	}
	if (ret) {
		char why[512];

		/* Back to the size the superblocks record. */
		snprintf(why, sizeof(why), "%s", r->err);
		rf_array_set_dev_sectors(a, r->old, r->err, r->errlen);
		rf_bitmap_resize(rf_array_bitmap(a), rf_array_geom(a), true, r->err, r->errlen);
		snprintf(r->err, r->errlen, "%s", why);
	}
	return ret;
}

int rf_resize_component(struct rf_array *a, uint64_t sectors, char *err, size_t errlen)
{
	struct resize r = { .a = a, .sectors = sectors, .err = err, .errlen = errlen };
	struct rf_sync_status st;
	uint64_t old_total;
	int i, ret;

	err[0] = '\0';
	ret = refused(a, err, errlen);
	if (ret)
		return ret;
	/* Each device's size, looked at without a lock (a stat may wait on
	 * its file system); the drain below takes them if the table is the
	 * same. */
	rf_array_reconf_lock(a);
	r.ndevs = rf_devs_count(a);
	for (i = 0; i < r.ndevs; i++) {
		const struct rf_dev *d = rf_dev_get(a, i);

		r.paths[i] = d->path;
		r.bytes[i] = 0;
		if (!counted(a, i))
			continue;
		if (d->io.nbd || d->io.fd < 0 || rf_devopen_size_now(d->io.fd, &d->id, &r.bytes[i]))
			r.bytes[i] = d->size;   /* an NBD export keeps the size it had */
	}
	r.old = rf_array_geom(a)->dev_sectors;
	rf_array_reconf_unlock(a);
	/* Where the resync of a grow starts: the walk's end before it, in
	 * the walk's units (member sectors; raid10's array sectors). */
	rf_sync_get(a, &st);
	old_total = st.total;
	ret = rf_barrier_quiesced_all(a, resize_fn, &r);
	if (ret)
		return ret;
	if (r.used == r.old) {
		rf_info("%s: component size unchanged at %" PRIu64 " KiB", rf_array_name(a), r.used / 2);
		return 0;
	}
	rf_info("%s: component size %" PRIu64 " KiB -> %" PRIu64 " KiB; the image serves %" PRIu64 " KiB",
		rf_array_name(a), r.old / 2, r.used / 2, rf_array_size(a) / 1024);
	rf_array_resized(a);
	/* RAIDFUSE_TEST_BREAK=resize-resync: the grown rows not resynced
	 * (test_resize's control: check finds them inconsistent). */
	if (r.used < r.old || rf_test_break("resize-resync"))
		return 0;
	/* md's resize: a resync from the old size up, unless one is due
	 * lower already. */
	rf_sync_get(a, &st);
	if (st.resync_cp > old_total)
		rf_sync_set_resync_cp(a, old_total);
	ret = rf_sbstate_start_resync(a, st.action == RF_SYNC_FROZEN);
	if (ret)
		rf_warn("%s: the resync of the grown rows did not start: %s", rf_array_name(a), strerror(-ret));
	return 0;
}

/* Drained: the size the image serves. */
struct ext {
	struct rf_array *a;
	uint64_t bytes;
};

static int ext_fn(void *arg)
{
	struct ext *e = arg;

	return rf_array_set_ext_size(e->a, e->bytes);
}

int rf_resize_array(struct rf_array *a, uint64_t bytes, char *err, size_t errlen)
{
	struct ext e = { .a = a, .bytes = bytes };
	uint64_t was = rf_array_size(a), pos;
	bool back;
	int ret;

	err[0] = '\0';
	if (rf_array_reshape(a, &pos, &back)) {
		snprintf(err, errlen, "a reshape is under way");
		return -EBUSY;
	}
	if (bytes % 1024) {
		snprintf(err, errlen, "%" PRIu64 " bytes: md/array_size takes whole KiB", bytes);
		return -EINVAL;
	}
	ret = rf_barrier_quiesced_all(a, ext_fn, &e);
	if (ret == -E2BIG) {
		snprintf(err, errlen, "%" PRIu64 " KiB is more than the %" PRIu64 " KiB the members hold", bytes / 1024,
			 rf_array_geom(a)->array_sectors / 2);
		return ret;
	}
	if (ret)
		return ret;
	if (rf_array_size(a) != was) {
		rf_info("%s: the image serves %" PRIu64 " KiB (it served %" PRIu64 " KiB)%s", rf_array_name(a),
			rf_array_size(a) / 1024, was / 1024, bytes ? "" : ": the members' size again");
		rf_array_resized(a);
	}
	return 0;
}
