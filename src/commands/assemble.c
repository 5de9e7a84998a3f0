/* SPDX-License-Identifier: GPL-2.0-or-later */
/* assemble.c - from md superblocks to a struct rf_config.
 *
 * rf_assemble() is what mdadm --assemble does for raidfuse, without a
 * config: read every member's superblock, keep the members that belong,
 * order them by role, and describe the array.  The freshest superblock
 * (highest events) speaks for the array: its dev_roles say which slot holds
 * which role, and a member whose own events are older by more than one is
 * stale (md tolerates one: a clean/dirty flip may not have reached every
 * member before a crash) and is left out, as md leaves it out.  What cannot
 * be served safely is refused with the reason, never guessed at:
 *  - members of different arrays, or the same role claimed twice;
 *  - fewer members than the level survives without;
 *  - a degraded raid4/5/6 that was not clean (its parity may be stale
 *    where writes were in flight, so rebuilt data could be wrong: md
 *    refuses to start it too);
 *  - a write journal, or clustering, which the engine does not do;
 *  - a raid4/5/6 or raid10 reshape under way, unless served read-only (--ro, or
 *    --overlay: nothing reaches the members): the superblocks then give
 *    the two geometries (layout.h struct rf_reshape) and each member's new
 *    data offset, and reads go where md reads them.  Served read-write, a
 *    reshape of a 1.x array without a partial parity log is continued
 *    to its end (services/reshape.c); the others need
 *    mdadm (a reshape in place has a critical section only mdadm's
 *    backup file covers).  A config names the geometry the reshape
 *    leaves; its members and spares together the devices of the new one.
 *
 * rf_assemble_check_config() holds a config file to the superblocks its
 * members carry, and rf_assemble_plan_create() works out the superblocks
 * `raidfuse create` writes.  Only reading superblocks happens here; the
 * writing is super.c's.
 */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/assemble.h"
#include "raidfuse/devopen.h"
#include "raidfuse/fdmap.h"
#include "raidfuse/layout.h"
#include "raidfuse/log.h"
#include "raidfuse/memberid.h"
#include "raidfuse/nbd.h"
#include "raidfuse/overlay.h"

/* raid0's layout as md reads it: recorded only with the feature bit. */
static int r0_layout(const struct rf_sb *sb)
{
	return (sb->feature_map & RF_SB_FEAT_RAID0_LAYOUT) ? sb->layout : 0;
}

/* A stored raid1/4/5/6/10 layout number as the config takes it: raid4's
 * stored 0 is md bookkeeping, not a different data layout. */
static int cfg_layout_of(int level, int layout)
{
	char buf[16];

	if (level == 1 || level == 4)
		return rf_layout_parse(level, NULL);
	snprintf(buf, sizeof(buf), "%d", layout);
	return rf_layout_parse(level, buf);
}

int rf_assemble_cfg_layout(const struct rf_sb *sb)
{
	/* raid0: the zone layout md recorded (0: none). */
	if (sb->level == 0)
		return r0_layout(sb);
	return cfg_layout_of(sb->level, sb->layout);
}

/* md's reshape_backwards (super_1_validate, super_90_validate). */
static bool reshape_backwards(const struct rf_sb *sb)
{
	return sb->delta_disks < 0 ||
	       (sb->delta_disks == 0 && sb->kind != RF_SB_090 && (sb->feature_map & RF_SB_FEAT_RESHAPE_BACK));
}

/* The member count before a reshape (raid_disks is the new one). */
static int64_t prev_disks(const struct rf_sb *sb)
{
	return (int64_t)sb->raid_disks - sb->delta_disks;
}

/* The slots an array has: a reshape that removes members still reads the
 * old ones above the position. */
static int slots_of(const struct rf_sb *sb)
{
	int64_t p = prev_disks(sb);

	return sb->reshape && p > sb->raid_disks && p <= RF_MAX_MEMBERS ? (int)p : sb->raid_disks;
}

/* Why a reshape under way cannot be served (NULL: it can, read-only);
 * into buf. */
static const char *reshape_unservable(const struct rf_sb *sb, bool writes, char *buf, size_t len)
{
	int64_t p = prev_disks(sb);

	if (sb->level != 4 && sb->level != 5 && sb->level != 6 && sb->level != 10) {
		snprintf(buf, len, "a reshape of raid%d is under way; raidfuse serves reshapes of raid4/5/6 and "
			 "raid10 only (finish it with mdadm first)", sb->level);
		return buf;
	}
	if (sb->new_level != sb->level) {
		snprintf(buf, len, "a reshape from raid%d to raid%d is under way; md itself serves only reshapes "
			 "that keep the level (finish it with mdadm first)", sb->level, sb->new_level);
		return buf;
	}
	if (p < 1 || p > RF_MAX_MEMBERS) {
		snprintf(buf, len, "a reshape from %lld to %d devices is under way: not a count raidfuse serves",
			 (long long)p, sb->raid_disks);
		return buf;
	}
	if (writes && (sb->kind == RF_SB_090 || (sb->feature_map & (RF_SB_FEAT_PPL | RF_SB_FEAT_MULTI_PPL)))) {
		snprintf(buf, len, "a reshape is under way (stopped at array sector %llu, %s%s%s); raidfuse "
			 "continues reshapes of 1.x arrays without a partial parity log (md keeps none through a "
			 "reshape), and serves this one read-only only: assemble with --ro, or --overlay DIR; or "
			 "continue it with mdadm (--assemble, with --backup-file if the reshape used one)",
			 (unsigned long long)sb->reshape_position, reshape_backwards(sb) ? "backwards" : "forwards",
			 sb->kind == RF_SB_090 ? ", 0.90 metadata" : "",
			 sb->feature_map & (RF_SB_FEAT_PPL | RF_SB_FEAT_MULTI_PPL) ? ", with a partial parity log" : "");
		return buf;
	}
	return NULL;
}

/* Members a level survives without (raid10: copies - 1; the engine checks
 * which ones exactly). */
static int survives(const struct rf_sb *sb)
{
	switch (sb->level) {
	case 1:  return sb->raid_disks - 1;
	case 4:
	case 5:  return 1;
	case 6:  return 2;
	case 10: return (sb->layout & 255) * ((sb->layout >> 8) & 255) - 1;
	}
	return 0;
}

/* A member's superblock, through its overlay in overlay_dir when given
 * (the overlay may hold newer superblocks than the member), and which
 * device it is (memberid.h) into id unless NULL. */
static int read_member(const char *path, const char *overlay_dir, struct rf_sb *sb, struct rf_member_id *id,
		       char *err, size_t errlen)
{
	struct rf_devopen_fd d;
	struct rf_ovl *o;
	struct rf_sb_io io;
	int fd, r;

	if (rf_nbd_is_uri(path)) {
		struct rf_nbd *c;

		if (overlay_dir) {
			snprintf(err, errlen, "%s: an overlay takes files and block devices, not NBD exports", path);
			return -EINVAL;
		}
		r = rf_nbd_open(path, true, RF_NBD_TIMEOUT_MS_DEFAULT, &c, err, errlen);
		if (r)
			return r;
		if (id)
			rf_nbd_member_id(c, id);
		rf_nbd_sb_io(c, &io);
		r = rf_sb_read_io(&io, path, sb, err, errlen);
		rf_nbd_close(c);
		return r;
	}
	/* Checked as every member is (no FIFO to block on, no procfs file),
	 * read-only, not locked: the engine locks what it serves. */
	r = rf_devopen_open(path, path, RF_DEVOPEN_RDONLY | RF_DEVOPEN_NOLOCK | RF_DEVOPEN_DIRECT, &d, err, errlen);
	if (r)
		return r;
	if (id)
		rf_member_id_of_dev(id, &d.id);
	fd = d.fd;
	if (!overlay_dir && d.fd_direct >= 0 && !rf_fdmap_in_memory(fd)) {
		/* On a disk: read around the page cache, as the member's IO
		 * will be (direct mode, ioq.h). */
		r = rf_sb_io_fd_direct(&io, d.fd_direct, d.dio_align);
		if (r)
			snprintf(err, errlen, "%s: cannot find its size: %s", path, strerror(-r));
		else
			r = rf_sb_read_io(&io, path, sb, err, errlen);
	} else if (!overlay_dir) {
		r = rf_sb_read(fd, path, sb, err, errlen);
	} else {
		r = rf_ovl_open(overlay_dir, fd, path, &o, err, errlen);
		if (!r) {
			rf_ovl_sb_io(o, &io);
			r = rf_sb_read_io(&io, path, sb, err, errlen);
			rf_ovl_close(o);
		}
	}
	rf_devopen_close(&d);
	return r;
}

static int read_one(const char *path, const char *overlay_dir, struct rf_sb *sb, char *err, size_t errlen)
{
	return read_member(path, overlay_dir, sb, NULL, err, errlen);
}

/* Features the engine cannot serve (writes: with writes reaching the
 * members; by_config: described by a config file); NULL if none.  buf
 * holds a message made here. */
static const char *unservable(const struct rf_sb *sb, bool writes, bool by_config, char *buf, size_t len)
{
	(void)by_config;
	if (sb->reshape) {
		const char *why = reshape_unservable(sb, writes, buf, len);

		if (why)
			return why;
	}
	/* md keeps a partial parity log for raid5 only (services/ppl.c
	 * writes and replays it); elsewhere a log writes would not keep up
	 * to date would be replayed over newer data. */
	if (writes && sb->level != 5 && (sb->feature_map & (RF_SB_FEAT_PPL | RF_SB_FEAT_MULTI_PPL)))
		return "it keeps md's partial parity log (consistency policy ppl) on a level other than raid5, "
		       "which raidfuse does not write: serve it with --ro, or --overlay DIR to keep writes off "
		       "the members";
	if (sb->feature_map & RF_SB_FEAT_JOURNAL)
		return "the array has a write journal";
	if (sb->feature_map & RF_SB_FEAT_CLUSTERED)
		return "the array is clustered";
	return NULL;
}

/* The geometry two superblocks of one array must share; the first field
 * that differs, or NULL. */
static const char *geometry_differs(const struct rf_sb *a, const struct rf_sb *b)
{
	if (a->kind != b->kind)
		return "metadata version";
	if (a->level != b->level)
		return "level";
	if (a->layout != b->layout)
		return "layout";
	if (a->chunk_sectors != b->chunk_sectors)
		return "chunk size";
	if (a->raid_disks != b->raid_disks)
		return "raid devices";
	if (a->level != 0 && a->size != b->size)
		return "used device size";
	if (a->reshape != b->reshape || (a->reshape && (a->new_level != b->new_level ||
							 a->new_layout != b->new_layout ||
							 a->new_chunk != b->new_chunk ||
							 a->delta_disks != b->delta_disks)))
		return "reshape under way";
	return NULL;
}

static bool added_by_level_change(const struct rf_sb *fresh, int role);

/* A member one event behind the freshest that missed a reshape's start
 * or end (a crash while every superblock was being written) read as the
 * freshest says: the reshape begun, with its own data offset and the new
 * offset the others record; or ended, its data at the new offset and in
 * the new shape.  Its superblock is brought up to date by the array's
 * next update (sbstate.c). */
static void reshape_as_fresh(struct rf_sb *s, const struct rf_sb *fresh)
{
	if (s->kind == RF_SB_090 || fresh->kind == RF_SB_090 || s->events + 1 != fresh->events ||
	    s->reshape == fresh->reshape)
		return;
	if (fresh->reshape) {
		s->reshape = true;
		s->feature_map |= fresh->feature_map & (RF_SB_FEAT_RESHAPE | RF_SB_FEAT_RESHAPE_BACK |
							RF_SB_FEAT_NEW_OFFSET);
		s->reshape_position = fresh->reshape_position;
		s->raid_disks = fresh->raid_disks;
		s->delta_disks = fresh->delta_disks;
		/* A level change's start records the previous geometry's
		 * level and layout too (raid5 -> raid6 of a "-6" layout). */
		s->level = fresh->level;
		s->layout = fresh->layout;
		s->new_level = fresh->new_level;
		s->new_layout = fresh->new_layout;
		s->new_chunk = fresh->new_chunk;
		s->new_offset = fresh->new_offset;
		return;
	}
	if (s->feature_map & RF_SB_FEAT_NEW_OFFSET) {
		s->data_offset = (uint64_t)((int64_t)s->data_offset + s->new_offset);
		s->data_size = (uint64_t)((int64_t)s->data_size - s->new_offset);
	}
	/* The member the change added in a slot that held only parity before
	 * (its recovery_offset followed the walk): every row was written
	 * before the end was recorded, so it is in sync. */
	if ((s->feature_map & RF_SB_FEAT_RECOVERY) && s->role < RF_SB_ROLE_MAX && added_by_level_change(s, s->role)) {
		s->feature_map &= ~(uint32_t)RF_SB_FEAT_RECOVERY;
		s->recovery_offset = RF_SB_MAX_SECTOR;
	}
	s->reshape = false;
	s->feature_map &= ~(uint32_t)(RF_SB_FEAT_RESHAPE | RF_SB_FEAT_RESHAPE_BACK | RF_SB_FEAT_NEW_OFFSET);
	s->level = s->new_level;
	s->layout = s->new_layout;
	s->chunk_sectors = s->new_chunk;
	s->new_offset = 0;
	s->delta_disks = 0;
}

/* The bytes each member serves, and where: every member's own data offset
 * (md keeps one per device: members added later or replaced may differ),
 * into cfg; for raid0 each member's data size (md makes zones of unequal
 * ones; *out = 0), else the used size.  role_sb[i]: role i's superblock,
 * NULL for a missing one; spare_sb[j] spare j's, NULL for one without. */
static void member_areas(struct rf_config *cfg, const struct rf_sb *const *role_sb, int nroles,
			 const struct rf_sb *const *spare_sb, int nspare, uint64_t *out)
{
	const struct rf_sb *first = NULL;
	int i;

	for (i = 0; i < nroles && !first; i++)
		first = role_sb[i];
	cfg->member_offsets = true;
	for (i = 0; i < nroles; i++) {
		const struct rf_sb *s = role_sb[i] ? role_sb[i] : first;

		cfg->member_offset[i] = s->data_offset * 512;
		cfg->member_data[i] = s->data_size * 512;
	}
	/* A spare without a superblock gets one modelled on an in-sync
	 * member's, data offset included (as mdadm --add does). */
	for (i = 0; i < nspare; i++) {
		const struct rf_sb *s = spare_sb[i] ? spare_sb[i] : first;
		int64_t move = s->kind != RF_SB_090 && s->reshape && (s->feature_map & RF_SB_FEAT_NEW_OFFSET) ?
			       s->new_offset : 0;

		cfg->spare_offset[i] = s->data_offset * 512;
		cfg->reshape.spare_new_offset[i] = (uint64_t)((int64_t)s->data_offset + move) * 512;
	}
	cfg->data_offset = first->data_offset * 512;
	*out = first->level == 0 ? 0 : first->size * 512;
}

static atomic_bool force_dirty;

void rf_assemble_set_force(bool force)
{
	atomic_store(&force_dirty, force);
}

/* A raid5 keeping md's partial parity log (services/ppl.c replays it). */
static bool has_ppl(const struct rf_sb *sb)
{
	return sb->level == 5 && (sb->feature_map & (RF_SB_FEAT_PPL | RF_SB_FEAT_MULTI_PPL));
}

/* md's start_dirty_degraded: a degraded raid4/5/6 that was not shut down
 * cleanly is refused (-EINVAL, why in err) unless forced, since its parity
 * may be stale in the stripes that were being written at the crash, and
 * what is rebuilt from it there would be wrong.  missing: the roles
 * missing, for the message; where: "CONFIG: " or "". */
static int dirty_degraded(const struct rf_sb *fresh, const char *missing, const char *where, char *err,
			  size_t errlen)
{
	char u[40];

	if (fresh->clean || fresh->level < 4 || fresh->level > 6)
		return 0;
	rf_sb_uuid_str(fresh, u);
	if (has_ppl(fresh)) {
		/* md starts it: the log's replay makes the stripes that were
		 * being written consistent before anything is rebuilt. */
		rf_warn("%sarray %s: degraded (role(s) %s missing) and not clean: its partial parity log is "
			"replayed before it serves", where, u, missing);
		return 0;
	}
	if (!atomic_load(&force_dirty)) {
		snprintf(err, errlen,
			 "%sarray %s: degraded (role(s) %s missing) and not clean (resync due at sector %llu): "
			 "parity may be stale where writes were in flight, so rebuilt data could be wrong; "
			 "not served (--force serves it anyway)", where, u, missing,
			 (unsigned long long)fresh->resync_offset);
		return -EINVAL;
	}
	rf_warn("%sarray %s: degraded (role(s) %s missing) and not clean, served because of --force: data in "
		"the stripes that were being written at the crash may be wrong (parity there may be stale, so "
		"what the missing member held is rebuilt from it); check the file system or data on it",
		where, u, missing);
	return 0;
}

/* The rest of a reshape under way, from the freshest superblock and each
 * slot's own (a missing slot's: the first present one's offsets). */
static void reshape_cfg(struct rf_config *cfg, const struct rf_sb *fresh, const struct rf_sb *const *role_sb,
			int slots)
{
	struct rf_config_reshape *rs = &cfg->reshape;
	const struct rf_sb *first = NULL;
	int i;

	for (i = 0; i < slots && !first; i++)
		first = role_sb[i];
	rs->active = true;
	rs->backwards = reshape_backwards(fresh);
	rs->position = fresh->reshape_position;
	rs->raid_disks = fresh->raid_disks;
	rs->prev_raid_disks = (int)prev_disks(fresh);
	rs->prev_layout = cfg->layout;
	rs->prev_chunk_bytes = cfg->chunk_bytes;
	cfg->layout = cfg_layout_of(fresh->new_level, fresh->new_layout);
	cfg->chunk_bytes = fresh->new_chunk * 512;
	for (i = 0; i < slots; i++) {
		const struct rf_sb *s = role_sb[i] ? role_sb[i] : first;
		int64_t off = (int64_t)s->data_offset;

		/* md: new_data_offset = data_offset (+ new_offset with the
		 * feature; 0.90 has no field). */
		if (s->kind != RF_SB_090 && (s->feature_map & RF_SB_FEAT_NEW_OFFSET))
			off += s->new_offset;
		rs->new_offset[i] = off >= 0 ? (uint64_t)off * 512 : UINT64_MAX;     /* the engine refuses it */
	}
}

/* A member one event behind the freshest that missed a change md records
 * in one superblock update (a raid1's mirrors given or given up, a
 * takeover's level and layout, a new component size: a crash while every
 * superblock was being written) read as the freshest says, as md takes an array's geometry
 * from its freshest superblock; the array's next update writes it
 * (sbstate.c). */
static void geometry_as_fresh(struct rf_sb *s, const struct rf_sb *fresh)
{
	/* RAIDFUSE_TEST_BREAK=stale-geometry: each member's own word (the
	 * crash-state tool's control: a takeover cut short is refused). */
	if (s->kind == RF_SB_090 || fresh->kind == RF_SB_090 || s->events + 1 != fresh->events || s->reshape ||
	    fresh->reshape || rf_test_break("stale-geometry"))
		return;
	/* A takeover from or to raid1 (raid5 of two) changes the chunk too;
	 * one to raid0 records the used size as every member's data_size
	 * (only then: a raid0's members may differ in size, md's zones). */
	if (s->level != fresh->level) {
		s->chunk_sectors = fresh->chunk_sectors;
		if (!fresh->level)
			s->data_size = fresh->data_size;
	}
	s->level = fresh->level;
	s->layout = fresh->layout;
	s->raid_disks = fresh->raid_disks;
	s->size = fresh->size;
}

/* More than one event behind the freshest: stale.  md tolerates one (a
 * clean/dirty flip may not have reached every member before a crash); the
 * difference is taken, never events + 1, which wraps at 2^64 - 1. */
static bool stale(const struct rf_sb *s, const struct rf_sb *fresh)
{
	return rf_sb_events_stale(s->events, fresh->events);
}

/* Member s's role as the array records it: the freshest superblock's
 * dev_roles entry for s's device number, as md's super_1_validate takes
 * it (s's own record may predate its failure or a spare taking over). */
static int role_of(const struct rf_sb *s, const struct rf_sb *fresh)
{
#ifdef RF_BREAK_STALE_ROLE
	/* A build for the lifecycle test's negative control (make
	 * lifecycle-break): the member's own role, the rule that takes a
	 * member back that failed one event before a crash. */
	if (!stale(s, fresh))
		return s->role;
#endif
	return s->dev_number < fresh->max_dev ? fresh->dev_roles[s->dev_number] : s->role;
}

/* The roles of the n members read (sbs[i] from paths[i]), by md's rules
 * against the freshest superblock: by_role[slot] is the member in each of
 * the slots (-1: none), spare[] the spares (*nspare of them).  A stale
 * member, or one the array records as faulty, is left out with a warning
 * naming it; a spare past RF_MAX_MEMBERS too.  A replacement (md's
 * replacement flag in its own superblock) shares its slot's role: it
 * takes the slot when the slot's device is not among them, else it is
 * one of the spares (the array attaches it again).  -EINVAL (why in err) when
 * two members claim one role or disagree with the freshest on the
 * geometry.  where: "CONFIG: " or "" for messages. */
static int place_members(const char *const *paths, const struct rf_sb *const *sbs, int n, int fi,
			 int slots, int *by_role, int *spare, int *nspare, const char *where, char *err,
			 size_t errlen)
{
	const struct rf_sb *fresh = sbs[fi];
	const char *why;
	char u[40];
	int i, j, role, repl[2 * RF_MAX_MEMBERS], nrepl = 0;

	rf_sb_uuid_str(fresh, u);
	*nspare = 0;
	for (i = 0; i < slots; i++)
		by_role[i] = -1;
	for (i = 0; i < n; i++) {
		const struct rf_sb *s = sbs[i];

		role = role_of(s, fresh);
		if (role == RF_SB_ROLE_FAULTY) {
			rf_warn("%s%s: the array (%s, events %llu) records it as faulty: left out", where, paths[i],
				paths[fi], (unsigned long long)fresh->events);
			continue;
		}
		/* A spare's events may lag (md writes spares' superblocks
		 * only when more than the clean/dirty state changes): it is
		 * a spare still.  A member that records itself active is
		 * stale. */
		if (stale(s, fresh) && s->role < RF_SB_ROLE_MAX && s->role < slots) {
			rf_warn("%s%s: events %llu, the array (%s) is at %llu: stale, left out", where, paths[i],
				(unsigned long long)s->events, paths[fi], (unsigned long long)fresh->events);
			continue;
		}
		/* Only after those: a member that failed or fell behind in the
		 * middle of a reshape records it under way (and a member that
		 * missed a grow, the old count); md leaves such a member out by
		 * its events, whatever it says of the geometry. */
		why = geometry_differs(s, fresh);
		if (why) {
			snprintf(err, errlen, "%s%s and %s disagree on the %s of array %s", where, paths[i],
				 paths[fi], why, u);
			return -EINVAL;
		}
		if (stale(s, fresh))
			role = RF_SB_ROLE_SPARE;
		if (role >= RF_SB_ROLE_MAX || role >= slots) {
			if (*nspare >= RF_MAX_MEMBERS) {
				rf_warn("%s%s: a spare past the first %d: left out", where, paths[i], RF_MAX_MEMBERS);
				continue;
			}
			spare[(*nspare)++] = i;
			continue;
		}
		/* A replacement shares its slot's role: placed once the
		 * slot's own device is known. */
		if (s->kind != RF_SB_090 && (s->feature_map & RF_SB_FEAT_REPLACEMENT)) {
			repl[nrepl++] = i;
			continue;
		}
		if (by_role[role] >= 0) {
			snprintf(err, errlen, "%s%s and %s both claim role %d of array %s", where,
				 paths[by_role[role]], paths[i], role, u);
			return -EINVAL;
		}
		by_role[role] = i;
	}
	/* md's raid5_run: a replacement whose slot's device is not here
	 * serves the slot (its copy, a rebuild from its recovery_offset);
	 * beside the device it is a spare, which the array makes the slot's
	 * replacement again (services/sbstate.c). */
	for (j = 0; j < nrepl; j++) {
		const struct rf_sb *s = sbs[repl[j]];

		role = role_of(s, fresh);
		if (by_role[role] < 0) {
			by_role[role] = repl[j];
			rf_info("%s%s: slot %d's replacement, its device not here: it takes the slot%s", where,
				paths[repl[j]], role, s->feature_map & RF_SB_FEAT_RECOVERY ?
				", rebuilt from where its copy stood" : " (its copy was complete)");
		} else if (*nspare < RF_MAX_MEMBERS) {
			spare[(*nspare)++] = repl[j];
			rf_info("%s%s: slot %d's replacement (copied to sector %llu)", where, paths[repl[j]], role,
				(unsigned long long)(s->feature_map & RF_SB_FEAT_RECOVERY ? s->recovery_offset : 0));
		} else {
			rf_warn("%s%s: a spare past the first %d: left out", where, paths[repl[j]], RF_MAX_MEMBERS);
		}
	}
	return 0;
}

/* raid10: whether some chunk has no copy left among the roles not in
 * missing (bit i: role i), as md's raid10 enough() asks, copy set by
 * copy set: two members of different mirror pairs may both be gone.  The
 * copy pattern repeats every raid_disks chunks; twice that covers the far
 * sets. */
static bool r10_lost_in(const struct rf_sb *sb, int layout, int raid_disks, uint32_t chunk, uint64_t missing)
{
	struct rf_geom g = { .level = 10, .layout = layout, .raid_disks = raid_disks, .chunk_sectors = chunk };
	int devs[RF_MAX_MEMBERS], n, i, c;
	uint64_t addrs[RF_MAX_MEMBERS];
	char why[160];

	g.dev_sectors = chunk ? sb->size / chunk * chunk : 0;
	if (!g.dev_sectors || rf_geom_init(&g, why, sizeof(why)))
		return __builtin_popcountll(missing) > survives(sb);
	for (c = 0; c < 2 * g.raid_disks; c++) {
		bool any = false;

		if ((uint64_t)c * g.chunk_sectors >= g.array_sectors)
			break;
		n = rf_r10_map(&g, (uint64_t)c * g.chunk_sectors, devs, addrs);
		for (i = 0; i < n; i++)
			any |= !(missing >> devs[i] & 1);
		if (!any)
			return true;
	}
	return false;
}

/* The same for the array sb describes; mid-reshape, in either geometry
 * (md's calc_degraded() of both sections). */
static bool r10_lost(const struct rf_sb *sb, uint64_t missing)
{
	int64_t p = prev_disks(sb);

	if (!sb->reshape)
		return r10_lost_in(sb, sb->layout, sb->raid_disks, sb->chunk_sectors, missing);
	if (p < 1 || p > RF_MAX_MEMBERS)
		return true;
	return r10_lost_in(sb, sb->new_layout, sb->raid_disks, sb->new_chunk, missing) ||
	       r10_lost_in(sb, sb->layout, (int)p, sb->chunk_sectors, missing);
}

/* Whether the roles in missing are more than the array survives. */
static bool too_few(const struct rf_sb *fresh, uint64_t missing)
{
	if (fresh->level == 10)
		return r10_lost(fresh, missing);
	return __builtin_popcountll(missing) > survives(fresh);
}

/* What a level survives, for a refusal; into buf. */
static const char *survival_rule(const struct rf_sb *fresh, char *buf, size_t len)
{
	if (fresh->level == 10)
		snprintf(buf, len, "some chunk has every copy among them");
	else
		snprintf(buf, len, "it survives at most %d missing", survives(fresh));
	return buf;
}

/* Appends ", N" (or "N" first) to the list of roles in buf. */
static void list_role(char *buf, size_t size, size_t *len, int *count, int role, const char *what)
{
	if (*len < size)
		*len += (size_t)snprintf(buf + *len, size - *len, "%s%d%s", *count ? ", " : "", role, what);
	if (*len >= size)
		*len = size - 1;
	(*count)++;
}

/* Whether role holds only parity in the geometry of level, layout and
 * disks (md's only_parity(): raid4's and parity-last raid5's last slot,
 * the last slot of a raid6 whose Q is there only). */
static bool only_parity(int level, int layout, int64_t disks, int role)
{
	if (role != disks - 1)
		return false;
	return level == 4 || (level == 5 && layout == RF_ALGO_PARITY_N) || (level == 6 && rf_r6_q_last(layout));
}

/* Whether role is the member a change under way added in a slot that held
 * only parity in the previous geometry: a raid4/5 -> raid6 change's Q
 * member, or the spare a raid0 grown through a raid4 put in that raid4's
 * empty P slot.  Its recovery_offset follows the reshape: it is no
 * rebuild, and the array is not degraded by it. */
static bool added_by_level_change(const struct rf_sb *fresh, int role)
{
	return fresh->reshape && !reshape_backwards(fresh) &&
	       only_parity(fresh->level, fresh->layout, prev_disks(fresh), role);
}


/* Whether every role in mask holds only parity in the array's geometry,
 * and in the previous one of a reshape under way (or is none of its
 * slots): nothing is computed from parity for them, so a crash that left
 * parity stale loses nothing (a raid0 grown through a raid4: its P slot
 * is empty). */
static bool parity_only_missing(const struct rf_sb *fresh, uint64_t mask)
{
	int role;

	for (role = 0; role < 64; role++) {
		if (!(mask >> role & 1))
			continue;
		if (!only_parity(fresh->reshape ? fresh->new_level : fresh->level,
				 fresh->reshape ? fresh->new_layout : fresh->layout, fresh->raid_disks, role))
			return false;
		if (fresh->reshape && role < prev_disks(fresh) &&
		    !only_parity(fresh->level, fresh->layout, prev_disks(fresh), role))
			return false;
	}
	return true;
}

/* Whether s's device, which the freshest superblock places in a slot,
 * still calls itself a spare: the update that gave it the slot (a
 * rebuild's start, which records its recovery_offset on it) did not reach
 * it before a crash, so nothing says how far it was rebuilt: from the
 * start (md takes its own word: a spare).  A reshape's new members are
 * the reshape's (sbstate.c, reshape_as_fresh()). */
static bool missed_rebuild_start(const struct rf_sb *s, const struct rf_sb *fresh)
{
	return !fresh->reshape && s->role >= RF_SB_ROLE_MAX && s->kind != RF_SB_090;
}

/* Whether the members placed can serve the array: no more roles missing,
 * or being rebuilt (a device holds its slot's data only below its
 * recovery_offset), than the level survives, and a degraded raid4/5/6
 * only when clean (dirty_degraded).  0, or -EINVAL with why in err. */
static int enough_members(const char *const *paths, const struct rf_sb *const *sbs, const struct rf_sb *fresh,
			  const int *by_role, int slots, const char *where, char *err, size_t errlen)
{
	char u[40], missing[256], rule[96];
	size_t ml = 0;
	int i, nmissing = 0, nuse = 0;
	uint64_t mask = 0;

	rf_sb_uuid_str(fresh, u);
	missing[0] = '\0';
	for (i = 0; i < slots; i++)
		if (by_role[i] >= 0) {
			nuse++;
		} else {
			list_role(missing, sizeof(missing), &ml, &nmissing, i, "");
			mask |= 1ull << i;
		}
	if (too_few(fresh, mask)) {
		snprintf(err, errlen,
			 "%sarray %s: too few members: raid%d with %d devices has %d, role(s) %s missing; %s", where,
			 u, fresh->level, fresh->raid_disks, nuse, missing, survival_rule(fresh, rule, sizeof(rule)));
		return -EINVAL;
	}
	for (i = 0; i < slots; i++) {
		if (by_role[i] < 0 || added_by_level_change(fresh, i))
			continue;
		if (!(sbs[by_role[i]]->feature_map & RF_SB_FEAT_RECOVERY) && !missed_rebuild_start(sbs[by_role[i]], fresh))
			continue;
		rf_info("%s%s: being rebuilt into role %d (done to sector %llu): the rebuild resumes", where,
			paths[by_role[i]], i, missed_rebuild_start(sbs[by_role[i]], fresh) ? 0ull :
			(unsigned long long)sbs[by_role[i]]->recovery_offset);
		list_role(missing, sizeof(missing), &ml, &nmissing, i, " (rebuilding)");
		mask |= 1ull << i;
	}
	if (too_few(fresh, mask)) {
		snprintf(err, errlen, "%sarray %s: too few in-sync members: role(s) %s missing; raid%d with %d devices: %s",
			 where, u, missing, fresh->level, fresh->raid_disks, survival_rule(fresh, rule, sizeof(rule)));
		return -EINVAL;
	}
	return nmissing && !parity_only_missing(fresh, mask) ? dirty_degraded(fresh, missing, where, err, errlen) : 0;
}

/* What the log says of an array that was not shut down cleanly. */
static void say_dirty(const struct rf_sb *fresh, const char *where)
{
	char u[40];

	rf_sb_uuid_str(fresh, u);
	if (fresh->clean)
		return;
	if (fresh->resync_offset)
		rf_info("%sarray %s: a resync was stopped at sector %llu: it resumes there", where, u,
			(unsigned long long)fresh->resync_offset);
	else if (has_ppl(fresh))
		rf_warn("%sarray %s was not cleanly shut down: its partial parity log is replayed", where, u);
	else if (!fresh->events)
		rf_info("%sarray %s: new, its initial resync runs%s", where, u,
			fresh->bitmap ? " (internal bitmap)" : "");
	else
		rf_warn("%sarray %s was not cleanly shut down: resync needed (due from sector %llu%s): "
			"copies or parity may disagree where writes were in flight", where, u,
			(unsigned long long)fresh->resync_offset, fresh->bitmap ? ", internal bitmap" : "");
}

static int assemble(const char *const *paths, int n, const char *image_name, bool readonly,
		    const char *overlay_dir, struct rf_config *cfg, char *err, size_t errlen);

int rf_assemble(const char *const *paths, int n, const char *image_name, bool readonly,
		struct rf_config *cfg, char *err, size_t errlen)
{
	return assemble(paths, n, image_name, readonly, NULL, cfg, err, errlen);
}

int rf_assemble_overlay(const char *const *paths, int n, const char *image_name, const char *overlay_dir,
			struct rf_config *cfg, char *err, size_t errlen)
{
	return assemble(paths, n, image_name, false, overlay_dir, cfg, err, errlen);
}

/* Member i's md flags, as its superblock records them (md's
 * super_*_validate), into the config's sets. */
static void devflags_cfg(struct rf_config *cfg, int i, const struct rf_sb *sb)
{
	if (sb->devflags & RF_SB_DEVFLAG_WRITE_MOSTLY)
		cfg->write_mostly |= 1ull << i;
	if (sb->devflags & RF_SB_DEVFLAG_FAILFAST)
		cfg->failfast |= 1ull << i;
}

static int assemble(const char *const *paths, int n, const char *image_name, bool readonly,
		    const char *overlay_dir, struct rf_config *cfg, char *err, size_t errlen)
{
	struct rf_sb *sbs = calloc((size_t)(n > 0 ? n : 1), sizeof(*sbs));
	const struct rf_sb *sbp[RF_MAX_MEMBERS];
	int by_role[RF_MAX_MEMBERS];
	struct rf_member_id ids[RF_MAX_MEMBERS];
	const struct rf_sb *fresh;
	char u0[40], u1[40], whybuf[400];
	int i, j, r = -EINVAL, nuse = 0, fi = 0, spare[RF_MAX_MEMBERS], nspare = 0, slots;
	const struct rf_sb *role_sb[RF_MAX_MEMBERS] = { NULL }, *spare_sb[RF_MAX_MEMBERS] = { NULL };
	const char *why;
	uint64_t size;

	rf_config_defaults(cfg);
	if (!sbs)
		return -ENOMEM;
	if (n < 1 || n > RF_MAX_MEMBERS) {
		snprintf(err, errlen, "expected 1 to %d members, got %d", RF_MAX_MEMBERS, n);
		goto out;
	}
	for (i = 0; i < n; i++) {
		r = read_member(paths[i], overlay_dir, &sbs[i], &ids[i], err, errlen);
		if (r)
			goto out;
		r = -EINVAL;
		sbp[i] = &sbs[i];
		/* One device by two names: a link, a loop device over the
		 * file, one NBD export, one device UUID (memberid.h). */
		rf_member_id_set_uuid(&ids[i], sbs[i].device_uuid);
		for (j = 0; j < i; j++)
			if (rf_member_same(&ids[j], &ids[i])) {
				rf_member_same_msg(err, errlen, paths[j], &ids[j], paths[i], &ids[i],
						   "each member must be given once");
				goto out;
			}
		if (memcmp(sbs[i].uuid, sbs[0].uuid, 16)) {
			snprintf(err, errlen, "%s belongs to array %s, but %s to array %s: not one array",
				 paths[i], rf_sb_uuid_str(&sbs[i], u1), paths[0], rf_sb_uuid_str(&sbs[0], u0));
			goto out;
		}
		if (sbs[i].events > sbs[fi].events)
			fi = i;
	}
	fresh = &sbs[fi];
	for (i = 0; i < n; i++) {
		reshape_as_fresh(&sbs[i], fresh);
		geometry_as_fresh(&sbs[i], fresh);
	}
	rf_sb_uuid_str(fresh, u0);
	why = unservable(fresh, !readonly && !overlay_dir, false, whybuf, sizeof(whybuf));
	if (why) {
		snprintf(err, errlen, "array %s (%s): %s%s", u0, paths[fi], why,
			 why == whybuf ? "" : "; raidfuse cannot serve it");
		goto out;
	}
	if (fresh->raid_disks > RF_MAX_MEMBERS) {
		snprintf(err, errlen, "array %s: %d raid devices, raidfuse serves at most %d", u0,
			 fresh->raid_disks, RF_MAX_MEMBERS);
		goto out;
	}
	slots = slots_of(fresh);
	if (place_members(paths, sbp, n, fi, slots, by_role, spare, &nspare, "", err, errlen) ||
	    enough_members(paths, sbp, fresh, by_role, slots, "", err, errlen))
		goto out;
	say_dirty(fresh, "");

	/* The config rf_array_open() serves. */
	r = -ENOMEM;
	if (asprintf(&cfg->path, "array %s", u0) < 0) {
		cfg->path = NULL;
		goto out;
	}
	cfg->name = strdup(image_name ? image_name : "array.img");
	if (!cfg->name)
		goto out;
	cfg->level = fresh->level;
	cfg->layout = rf_assemble_cfg_layout(fresh);
	cfg->chunk_bytes = fresh->level == 1 ? 0 : fresh->chunk_sectors * 512;
	cfg->nmembers = slots;
	for (i = 0; i < slots; i++) {
		if (by_role[i] < 0)
			continue;
		nuse++;
		cfg->members[i] = strdup(paths[by_role[i]]);
		if (!cfg->members[i])
			goto out;
		devflags_cfg(cfg, i, &sbs[by_role[i]]);
	}
	for (i = 0; i < nspare; i++) {
		cfg->spares[i] = strdup(paths[spare[i]]);
		if (!cfg->spares[i])
			goto out;
		cfg->nspares = i + 1;
		rf_info("%s: a spare", paths[spare[i]]);
	}
	for (i = 0; i < slots; i++)
		role_sb[i] = by_role[i] >= 0 ? &sbs[by_role[i]] : NULL;
	for (i = 0; i < nspare; i++)
		spare_sb[i] = &sbs[spare[i]];
	member_areas(cfg, role_sb, slots, spare_sb, nspare, &size);
	if (fresh->reshape)
		reshape_cfg(cfg, fresh, role_sb, slots);
	cfg->data_offset_given = true;
	cfg->size = size;
	cfg->metadata = fresh->kind;
	memcpy(cfg->uuid, fresh->uuid, 16);
	cfg->has_uuid = true;
	cfg->readonly = readonly;
	if (overlay_dir && !(cfg->overlay_dir = strdup(overlay_dir)))
		goto out;
	/* Mid-reshape: read-write, the reshape continued (unservable() said
	 * it can be), or read-only as asked (an overlay too: the reshape is
	 * the members' to finish). */
	if (fresh->reshape) {
		if (overlay_dir)
			cfg->readonly = true;
		rf_info("array %s: a reshape is under way (%s, at array sector %llu): %s", u0,
			cfg->reshape.backwards ? "backwards" : "forwards", (unsigned long long)cfg->reshape.position,
			cfg->readonly ? "served read-only, rows below and above it in their own geometry" :
					"served while it continues");
	}
	r = 0;
	rf_info("array %s: raid%d, %d of %d members, %s metadata", u0, cfg->level, nuse,
		fresh->raid_disks, rf_sb_kind_name(fresh->kind));
out:
	if (r)
		rf_config_free(cfg);
	free(sbs);
	return r;
}

/* Whether superblock s records an array the config's made another level
 * by a change raidfuse makes (services/reshape.c: md's takeovers, with
 * the member counts and layouts they leave; raid4/5 -> raid6 is
 * level_changed()'s), a grow after it allowed. */
static bool level_change(const struct rf_config *cfg, const struct rf_sb *s)
{
	int n = cfg->nmembers, m = s->raid_disks;
	bool pn = cfg->layout == RF_ALGO_PARITY_N || cfg->level == 4;

	/* The takeovers that move members between slots: a raid0 -> raid10
	 * near-2 of twice the members; a near-2 raid10 -> raid0 of half of
	 * them, a raid1 -> raid0 of one. */
	if (cfg->level == 0 && s->level == 10)
		return s->layout == RF_R10_NEAR2 && m >= 2 * n;
	if (cfg->level == 10 && s->level == 0)
		return cfg->layout == RF_R10_NEAR2 && n % 2 == 0 && m >= n / 2;
	if (cfg->level == 1 && s->level == 0)
		return m >= 1;
	switch (cfg->level * 10 + s->level) {
	case 4: case 5:         /* raid0 -> raid4/5 of one member more */
		return m >= n + 1 && (s->level == 4 || s->layout == RF_ALGO_PARITY_N);
	case 15:                /* a raid1 of two -> a raid5 of two */
		return n == 2 && m >= 2;
	case 40: case 50:       /* a parity-last raid4/5 -> raid0 of one member fewer */
		return pn && m >= n - 1;
	case 45:
		return s->layout == RF_ALGO_PARITY_N && m >= n;
	case 54:
		return pn && m >= n;
	case 51:                /* a raid5 of two -> raid1 */
		return n == 2 && m >= 2;
	case 46: case 56:
		return true;
	case 65:                /* a raid6 of a "-6" layout -> raid5 of one member fewer */
		return rf_r6_q_last(cfg->layout) && m == n - 1;
	default:
		return false;
	}
}

/* An array the config names that a level change made another level (md's
 * takeovers, mdadm --grow --level, md/level here): the config goes on
 * naming what was created, as it does after a grow, and takes the
 * superblocks' level and layout (and a raid1's chunk).  A raid4/5 -> raid6 change
 * mid-way is a raid6 of the "-6" form of the config's layout; done, the
 * raid6 layout of the same number (raid4: parity-last; a reshape after
 * it, of the chunk say, may be under way).  Returns the slots the change
 * added that the config cannot name (a raid0's new P slot: 1; a raid0's
 * copies' as a raid10: one a member), else 0. */
static int level_changed(struct rf_config *cfg, const struct rf_sb *fresh)
{
	int l6 = rf_r6_layout_of_r5(cfg->level, cfg->layout), from = cfg->level;

	if (fresh->level == cfg->level || !level_change(cfg, fresh))
		return 0;
	if (fresh->level == 6 && (fresh->layout != l6 && fresh->layout != (cfg->level == 4 ? l6 : cfg->layout)))
		return 0;
	rf_info("%s: the raid%d it names is a raid%d now (layout %d%s), as its superblocks record", cfg->path,
		cfg->level, fresh->level, fresh->layout, fresh->reshape ? ", a level change under way" : "");
	cfg->level = fresh->level;
	cfg->layout = fresh->level == 0 ? rf_assemble_cfg_layout(fresh) : cfg_layout_of(fresh->level, fresh->layout);
	/* A raid1 has no chunk (a chunk changed since is the key's to say,
	 * as after any reshape). */
	if (from == 1 || fresh->level == 1)
		cfg->chunk_bytes = fresh->level == 1 ? 0 : fresh->chunk_sectors * 512;
	/* A raid0's grow through a raid4 (its P slot empty), under way: a
	 * raid0 again at its end, as the grow that began it would have made
	 * it had the daemon not stopped (`raidfuse grow`; mdadm's grow of a
	 * raid0 does the same). */
	if (from == 0 && fresh->reshape && fresh->level != 10)
		cfg->reshape.then_raid0 = true;
	return from != 0 ? 0 : fresh->level == 10 ? cfg->nmembers : 1;
}

/* The config's geometry beside the superblocks': the first key that
 * disagrees (into field, want, got), or false.  The member count is the
 * config's list, "missing" entries included. */
static bool config_differs(const struct rf_config *cfg, int added, const struct rf_sb *s, const char **field,
			   char *want, char *got, size_t len)
{
	*field = NULL;
	if (s->level != cfg->level) {
		*field = "level";
		snprintf(want, len, "%d", cfg->level);
		snprintf(got, len, "%d", s->level);
	} else if (rf_assemble_cfg_layout(s) != cfg->layout &&
		   !(cfg->level == 0 && (!cfg->layout || !rf_assemble_cfg_layout(s)))) {
		/* raid0: a config without a layout takes the recorded one;
		 * one with a layout tells an array that records none (md's
		 * raid0.default_layout) */
		*field = "layout";
		snprintf(want, len, "%d", cfg->layout);
		snprintf(got, len, "%d", s->layout);
	} else if (cfg->level != 1 && (uint64_t)s->chunk_sectors * 512 != cfg->chunk_bytes) {
		*field = "chunk_size";
		snprintf(want, len, "%uK", cfg->chunk_bytes / 1024);
		snprintf(got, len, "%uK", s->chunk_sectors / 2);
	} else if (s->raid_disks != cfg->nmembers &&
		   !(s->raid_disks > cfg->nmembers && s->raid_disks <= cfg->nmembers + cfg->nspares + added) &&
		   !(s->raid_disks < cfg->nmembers && slots_of(s) <= cfg->nmembers + cfg->nspares)) {
		/* A grow gives spares the new slots: the config's members and
		 * spares together may hold them; a shrink leaves members it
		 * dropped as spares, and keeps them in their slots while it
		 * runs (the superblocks place them). */
		*field = "members";
		snprintf(want, len, "%d devices%s", cfg->nmembers,
			 s->raid_disks > cfg->nmembers ? " (and too few spares for a grown array)" : "");
		snprintf(got, len, "%d raid devices", s->raid_disks);
	}
	return *field != NULL;
}

/* A config member's or spare's place in the file list check_config
 * builds: cfg slot (member) or spare index, and whether it is a spare. */
struct cfile_ref {
	const char *path;
	int num;
	bool spare;
};

/* Fills *out with the config's n members and spares.  Returns how many. */
static int config_files(const struct rf_config *cfg, struct cfile_ref *out)
{
	int i, n = 0;

	for (i = 0; i < cfg->nmembers; i++)
		if (cfg->members[i])
			out[n++] = (struct cfile_ref){ cfg->members[i], i, false };
	for (i = 0; i < cfg->nspares; i++)
		out[n++] = (struct cfile_ref){ cfg->spares[i], i, true };
	return n;
}

/* "member 2 (d2.img, line 7)" or "spare 0 (s0.img)" into buf. */
static const char *cfile_who(const struct rf_config *cfg, const struct cfile_ref *f, char *buf, size_t len)
{
	if (f->spare)
		snprintf(buf, len, "spare %d (%s)", f->num, f->path);
	else
		snprintf(buf, len, "member %d (%s, line %d)", f->num, f->path, cfg->member_line[f->num]);
	return buf;
}

/* cfg's members and spares as the superblocks place them: members[] by
 * role, then the spares (recorded ones first, then those the config
 * lists without a superblock).  What the config says of a file (its
 * line, write-mostly, failfast, injected faults) follows the file. */
static int config_reorder(struct rf_config *cfg, const struct cfile_ref *files, const int *with_sb, int nsb,
			  const int *by_role, int slots, const int *spare, int nspare, const bool *blank, int nfiles)
{
	char *members[RF_MAX_MEMBERS] = { NULL }, *spares[RF_MAX_MEMBERS] = { NULL };
	int line[RF_MAX_MEMBERS] = { 0 }, slot_of[RF_MAX_MEMBERS], i, ns = 0;
	uint64_t wm = 0, ff = 0;

	(void)nsb;
	for (i = 0; i < RF_MAX_MEMBERS; i++)
		slot_of[i] = -1;
	for (i = 0; i < slots; i++) {
		const struct cfile_ref *f;

		if (by_role[i] < 0)
			continue;
		f = &files[with_sb[by_role[i]]];
		members[i] = strdup(f->path);
		if (!members[i])
			goto nomem;
		if (!f->spare) {
			line[i] = cfg->member_line[f->num];
			slot_of[f->num] = i;
			wm |= (cfg->write_mostly >> f->num & 1) << i;
			ff |= (cfg->failfast >> f->num & 1) << i;
		}
	}
	for (i = 0; i < nspare; i++)
		if (!(spares[ns++] = strdup(files[with_sb[spare[i]]].path)))
			goto nomem;
	for (i = 0; i < nfiles; i++)
		if (blank[i] && ns < RF_MAX_MEMBERS && !(spares[ns++] = strdup(files[i].path)))
			goto nomem;
	for (i = 0; i < cfg->nfaults; i++) {
		int m = cfg->faults[i].member;

		if (m >= 0 && m < RF_MAX_MEMBERS && slot_of[m] >= 0 && slot_of[m] != m)
			rf_info("%s: the faults entry for member %d follows %s into slot %d", cfg->path, m,
				cfg->members[m], slot_of[m]);
		cfg->faults[i].member = m >= 0 && m < RF_MAX_MEMBERS ? slot_of[m] : -1;
	}
	for (i = 0; i < RF_MAX_MEMBERS; i++) {
		free(cfg->members[i]);
		free(cfg->spares[i]);
		cfg->members[i] = members[i];
		cfg->spares[i] = spares[i];
		cfg->member_line[i] = line[i];
	}
	cfg->nmembers = slots;
	cfg->nspares = ns;
	cfg->write_mostly = wm;
	cfg->failfast = ff;
	return 0;
nomem:
	for (i = 0; i < RF_MAX_MEMBERS; i++) {
		free(members[i]);
		free(spares[i]);
	}
	return -ENOMEM;
}

/* The config's size key beside what the superblocks say (*size: the
 * members' used size, member_areas()'s): raid0 records none, so a
 * config's must be what every member holds (then *size is it); else it
 * must be the recorded one, rounded as create rounds it.  0, or -EINVAL
 * with err. */
static int config_size(const struct rf_config *cfg, const struct rf_sb *const *role_sb, int slots, uint64_t *size,
		       char *err, size_t errlen)
{
	int i;

	if (cfg->size && cfg->level == 0) {
		/* raid0 records no used size: a config's must be what every
		 * member holds (one zone; unequal members make md's zones). */
		for (i = 0; i < slots; i++) {
			const struct rf_sb *s = role_sb[i];
			uint64_t have;

			if (!s)
				continue;
			have = s->data_size / s->chunk_sectors * s->chunk_sectors * 512;
			if (have != cfg->size / cfg->chunk_bytes * cfg->chunk_bytes) {
				snprintf(err, errlen, "%s: key 'array.size' says %llu sectors, a member's superblock "
					 "%llu of data (raid0: leave size out, members of different sizes make "
					 "md's zones)", cfg->path, (unsigned long long)(cfg->size / 512),
					 (unsigned long long)(have / 512));
				return -EINVAL;
			}
		}
		*size = cfg->size / cfg->chunk_bytes * cfg->chunk_bytes;
	} else if (cfg->size) {
		/* create rounds the size down as mdadm does: whole chunks, or
		 * 64K for raid1 */
		uint64_t unit = cfg->chunk_bytes ? cfg->chunk_bytes : 65536;

		if (cfg->size / unit * unit != *size) {
			snprintf(err, errlen, "%s: key 'array.size' says %llu sectors, the superblocks %llu",
				 cfg->path, (unsigned long long)(cfg->size / 512),
				 (unsigned long long)(*size / 512));
			return -EINVAL;
		}
	}
	return 0;
}

/* What rf_assemble_check_config() reads of a config's files: each
 * file's superblock (through the overlay) in the order the config names
 * them, and which one speaks for the array. */
struct cfg_sbs {
	struct rf_sb sbs[2 * RF_MAX_MEMBERS];           /* [nsb] */
	struct cfile_ref files[2 * RF_MAX_MEMBERS];     /* [nfiles] */
	const struct rf_sb *sbp[2 * RF_MAX_MEMBERS];    /* &sbs[i] */
	const char *paths[2 * RF_MAX_MEMBERS];          /* [nsb]: the file of sbs[i] */
	int with_sb[2 * RF_MAX_MEMBERS];                /* [nsb]: files[] index of sbs[i] */
	bool blank[2 * RF_MAX_MEMBERS];                 /* [nfiles]: a spare without a superblock */
	int nfiles, nsb;
	int without;    /* a member (not a spare) without a superblock, or -1 */
	int fi;         /* sbs[] index that speaks for the array */
};

/* Step 1: every file's superblock.  A file that is not there, or whose
 * superblock cannot be read, is refused, naming the file. */
static int read_sbs(const struct rf_config *cfg, struct cfg_sbs *c, char *err, size_t errlen)
{
	char who[300];
	int i, r;

	c->without = c->fi = -1;
	c->nfiles = config_files(cfg, c->files);
	for (i = 0; i < c->nfiles; i++) {
		const char *m = c->files[i].path;

		/* Through the overlay, which may hold newer superblocks. */
		r = read_one(m, cfg->overlay_dir, &c->sbs[c->nsb], err, errlen);
		/* -ENOENT is "no superblock" unless the file itself is not
		 * there. */
		if (r == -ENOENT && !rf_nbd_is_uri(m) && access(m, F_OK)) {
			r = -errno;
			snprintf(err, errlen, "%s: %s: %s", cfg->path, cfile_who(cfg, &c->files[i], who, sizeof(who)),
				 strerror(-r));
			return r;
		}
		if (r == -ENOENT) {
			/* A spare without one is a new spare; a member
			 * without one is refused below. */
			if (c->files[i].spare)
				c->blank[i] = true;
			else
				c->without = i;
			continue;
		}
		if (r) {
			char why[768];

			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errlen, "%s: %s: %s", cfg->path, cfile_who(cfg, &c->files[i], who, sizeof(who)),
				 why);
			return r;
		}
		c->with_sb[c->nsb] = i;
		c->paths[c->nsb] = m;
		c->sbp[c->nsb] = &c->sbs[c->nsb];
		/* The array is the members' (a spare is checked against it) */
		if (c->fi < 0 || (c->files[c->with_sb[c->fi]].spare && !c->files[i].spare))
			c->fi = c->nsb;
		c->nsb++;
	}
	return 0;
}

/* Step 2, when no file has a superblock: an array without superblocks is
 * served only when the config says so: members that lack the superblocks
 * it names are not yet made (or are not the files meant), and serving
 * them from sector 0 would put data where `create` puts its own. */
static int no_sbs(const struct rf_config *cfg, char *err, size_t errlen)
{
	char at[32] = "the default";

	if (cfg->metadata == RF_SB_NONE)
		return 0;
	if (cfg->metadata_line > 0)
		snprintf(at, sizeof(at), "line %d", cfg->metadata_line);
	snprintf(err, errlen, "%s: no member has an md superblock, and the config says metadata \"%s\" (%s): "
		 "`raidfuse create %s` makes the array, or metadata = \"none\" serves members without one",
		 cfg->path, rf_sb_kind_name(cfg->metadata), at, cfg->path);
	return -EINVAL;
}

/* Step 2: every member has a superblock, all of one array; the freshest
 * speaks for it (c->fi), and the others are read as it says where a
 * reshape or a geometry change happened since they were written. */
static int one_array(const struct rf_config *cfg, struct cfg_sbs *c, char *err, size_t errlen)
{
	char u0[40], u1[40], who[300];
	int i;

	if (c->without >= 0) {
		snprintf(err, errlen, "%s: %s has no md superblock but %s has one", cfg->path,
			 cfile_who(cfg, &c->files[c->without], who, sizeof(who)), c->paths[c->fi]);
		return -EINVAL;
	}
	for (i = 0; i < c->nsb; i++)
		if (memcmp(c->sbs[i].uuid, c->sbs[c->fi].uuid, 16)) {
			snprintf(err, errlen, "%s: %s belongs to array %s, %s to %s", cfg->path,
				 cfile_who(cfg, &c->files[c->with_sb[i]], who, sizeof(who)),
				 rf_sb_uuid_str(&c->sbs[i], u1), c->paths[c->fi], rf_sb_uuid_str(&c->sbs[c->fi], u0));
			return -EINVAL;
		}
	for (i = 0; i < c->nsb; i++)
		if (c->sbs[i].events > c->sbs[c->fi].events)
			c->fi = i;
	for (i = 0; i < c->nsb; i++) {
		reshape_as_fresh(&c->sbs[i], &c->sbs[c->fi]);
		geometry_as_fresh(&c->sbs[i], &c->sbs[c->fi]);
	}
	return 0;
}

/* Step 3: the array is one raidfuse serves, and every key the config
 * gives says what each superblock says. */
static int keys_match(struct rf_config *cfg, const struct cfg_sbs *c, char *err, size_t errlen)
{
	const struct rf_sb *fresh = &c->sbs[c->fi];
	char whybuf[400], u0[40], who[300], want[64], got[64];
	const char *why = unservable(fresh, !cfg->readonly && !cfg->overlay_dir, true, whybuf, sizeof(whybuf)), *field;
	int added, i;

	if (why) {
		snprintf(err, errlen, "%s: array %s (%s): %s; raidfuse cannot serve it", cfg->path,
			 rf_sb_uuid_str(fresh, u0), c->paths[c->fi], why);
		return -EINVAL;
	}
	added = level_changed(cfg, fresh);
	for (i = 0; i < c->nsb; i++) {
		if (!config_differs(cfg, added, &c->sbs[i], &field, want, got, sizeof(want)))
			continue;
		snprintf(err, errlen, "%s: %s: key 'array.%s' says %s, its %s superblock %s%s", cfg->path,
			 cfile_who(cfg, &c->files[c->with_sb[i]], who, sizeof(who)), field, want,
			 rf_sb_kind_name(c->sbs[i].kind), got,
			 !c->sbs[i].reshape && (!strcmp(field, "layout") || !strcmp(field, "chunk_size") ||
						!strcmp(field, "level")) ?
			 " (a reshape changes them: the key wants the superblock's)" : "");
		return -EINVAL;
	}
	return 0;
}

/* Step 5: a config's one data_offset holds for the members it serves (a
 * spare that took over a slot may have been given its own); says which
 * file holds a slot other than the config's place for it.  *nuse: the
 * slots held. */
static int roles_held(const struct rf_config *cfg, const struct cfg_sbs *c, const int *by_role, int slots,
		      int *nuse, char *err, size_t errlen)
{
	char who[300];
	int i;

	*nuse = 0;
	for (i = 0; i < slots; i++) {
		const struct cfile_ref *f;
		const struct rf_sb *s;

		if (by_role[i] < 0)
			continue;
		(*nuse)++;
		f = &c->files[c->with_sb[by_role[i]]];
		s = c->sbp[by_role[i]];
		if (!f->spare && cfg->data_offset_given && s->data_offset * 512 != cfg->data_offset) {
			snprintf(err, errlen, "%s: %s: key 'array.data_offset' says %llu sectors, its %s superblock "
				 "%llu sectors", cfg->path, cfile_who(cfg, f, who, sizeof(who)),
				 (unsigned long long)(cfg->data_offset / 512), rf_sb_kind_name(s->kind),
				 (unsigned long long)s->data_offset);
			return -EINVAL;
		}
		if (!f->spare && f->num != i)
			rf_info("%s: %s holds role %d, as its superblocks record", cfg->path,
				cfile_who(cfg, f, who, sizeof(who)), i);
		else if (f->spare)
			rf_info("%s: %s holds role %d: it took over that slot", cfg->path,
				cfile_who(cfg, f, who, sizeof(who)), i);
	}
	return 0;
}

int rf_assemble_check_config(struct rf_config *cfg, char *err, size_t errlen)
{
	struct cfg_sbs *c = calloc(1, sizeof(*c));
	const struct rf_sb *role_sb[RF_MAX_MEMBERS], *spare_sb[RF_MAX_MEMBERS], *fresh;
	int by_role[RF_MAX_MEMBERS], spare[RF_MAX_MEMBERS];
	int i, r, nspare = 0, nuse = 0, slots;
	char u0[40], where[300];
	uint64_t size;

	if (!c)
		return -ENOMEM;
	r = read_sbs(cfg, c, err, errlen);
	if (r)
		goto out;
	if (c->nsb == 0) {
		r = no_sbs(cfg, err, errlen);
		goto out;
	}
	r = one_array(cfg, c, err, errlen);
	if (!r)
		r = keys_match(cfg, c, err, errlen);
	if (r)
		goto out;
	/* Step 4: which file holds which slot, and enough of them. */
	fresh = &c->sbs[c->fi];
	slots = slots_of(fresh);
	snprintf(where, sizeof(where), "%s: ", cfg->path);
	r = -EINVAL;
	if (place_members(c->paths, c->sbp, c->nsb, c->fi, slots, by_role, spare, &nspare, where, err, errlen) ||
	    enough_members(c->paths, c->sbp, fresh, by_role, slots, where, err, errlen))
		goto out;
	r = roles_held(cfg, c, by_role, slots, &nuse, err, errlen);
	if (!r)
		r = config_reorder(cfg, c->files, c->with_sb, c->nsb, by_role, slots, spare, nspare, c->blank,
				   c->nfiles);
	if (r)
		goto out;
	/* Step 6: the config takes what the superblocks record. */
	for (i = 0; i < slots; i++) {
		role_sb[i] = by_role[i] >= 0 ? c->sbp[by_role[i]] : NULL;
		/* What the config names beside what md recorded. */
		if (role_sb[i])
			devflags_cfg(cfg, i, role_sb[i]);
	}
	for (i = 0; i < cfg->nspares; i++)
		spare_sb[i] = i < nspare ? c->sbp[spare[i]] : NULL;
	member_areas(cfg, role_sb, slots, spare_sb, cfg->nspares, &size);
	/* A reshape under way: the config names the geometry it leaves
	 * (checked above); the superblocks give the rest. */
	if (fresh->reshape)
		reshape_cfg(cfg, fresh, role_sb, slots);
	r = config_size(cfg, role_sb, slots, &size, err, errlen);
	if (r)
		goto out;
	cfg->size = size;
	if (cfg->level == 0 && !cfg->layout)
		cfg->layout = rf_assemble_cfg_layout(fresh);
	cfg->metadata = fresh->kind;
	memcpy(cfg->uuid, fresh->uuid, 16);
	cfg->has_uuid = true;
	say_dirty(fresh, where);
	rf_info("%sarray %s: raid%d, %d of %d members, %d spare(s)", where, rf_sb_uuid_str(fresh, u0), cfg->level,
		nuse, fresh->raid_disks, cfg->nspares);
out:
	free(c);
	return r;
}

int rf_assemble_plan_create(const struct rf_config *cfg, const uint64_t *member_bytes, bool clean,
			    struct rf_sb_new *n, char *err, size_t errlen)
{
	uint32_t chunk = cfg->level == 1 ? 0 : cfg->chunk_bytes / 512;
	uint64_t off, comp = UINT64_MAX;
	int i, first = -1, r;

	memset(n, 0, sizeof(*n));
	for (i = 0; i < cfg->nmembers; i++)
		if (cfg->members[i] && first < 0)
			first = i;
	if (first < 0) {
		snprintf(err, errlen, "%s: no member to write a superblock on", cfg->path);
		return -EINVAL;
	}
	if (cfg->data_offset_given) {
		off = cfg->data_offset / 512;
		if (off < 16) {
			snprintf(err, errlen, "%s: key 'array.data_offset': %llu bytes leaves no room for the 1.2 "
				 "superblock (at 4K; give at least 8K, or metadata = \"none\")", cfg->path,
				 (unsigned long long)cfg->data_offset);
			return -EINVAL;
		}
	} else {
		/* mdadm picks it from the first member and uses it for all. */
		off = cfg->ppl ? rf_sb_data_offset_room(member_bytes[first] / 512, chunk, RF_SB_PPL_SECTORS) :
				 rf_sb_default_data_offset(member_bytes[first] / 512, chunk);
	}
	if (cfg->level == 0 && cfg->size) {
		snprintf(err, errlen, "%s: key 'array.size': raid0 with md metadata uses all of each member "
			 "(kernel md ignores a smaller size); leave it out, or metadata = \"none\"", cfg->path);
		return -EINVAL;
	}
	for (i = 0; i < cfg->nmembers; i++) {
		uint64_t s = member_bytes[i] / 512;

		if (!cfg->members[i])
			continue;
		if (s <= off) {
			snprintf(err, errlen, "%s: member %d (%s): %llu bytes leave no room for data after "
				 "data_offset %llu bytes%s", cfg->path, i, cfg->members[i],
				 (unsigned long long)member_bytes[i], (unsigned long long)(off * 512),
				 cfg->data_offset_given ? "" : " (md's default for this size; set array.data_offset)");
			return -EINVAL;
		}
		/* mdadm 4.2 records raid0's layout when the members hold
		 * different numbers of chunks (more than one zone). */
		if (chunk && comp != UINT64_MAX && (s - off) / chunk != comp / chunk)
			n->raid0_layout = cfg->level == 0;
		if (s - off < comp)
			comp = s - off;
	}
	if (cfg->size) {
		if (cfg->size / 512 > comp) {
			snprintf(err, errlen, "%s: key 'array.size': %llu bytes do not fit after data_offset "
				 "(%llu bytes there)", cfg->path, (unsigned long long)cfg->size,
				 (unsigned long long)(comp * 512));
			return -EINVAL;
		}
		comp = cfg->size / 512;
	}
	/* Whole chunks, and for raid1 whole 64K (mdadm's rounding, in case
	 * it is ever reshaped to a striped level). */
	if (comp < (chunk ? chunk : 128)) {
		snprintf(err, errlen, "%s: members too small for one %s (%llu bytes) after data_offset %llu bytes%s: "
			 "%llu bytes left on the smallest", cfg->path, chunk ? "chunk" : "64K",
			 (unsigned long long)(chunk ? chunk : 128) * 512, (unsigned long long)(off * 512),
			 cfg->data_offset_given ? "" : " (md's default for this size; set array.data_offset)",
			 (unsigned long long)(comp * 512));
		return -EINVAL;
	}
	comp -= comp % (chunk ? chunk : 128);
	r = rf_sb_random_uuid(n->uuid);
	if (r) {
		snprintf(err, errlen, "%s: no random bytes for the array uuid: %s", cfg->path, strerror(-r));
		return r;
	}
	snprintf(n->name, sizeof(n->name), "%.31s", cfg->name ? cfg->name : "");
	n->level = cfg->level;
	/* raid0: the "original" zone layout, as mdadm 4.2 records it (it only
	 * matters for members of unequal size); raid1 and raid4: 0. */
	n->layout = cfg->level == 5 || cfg->level == 6 || cfg->level == 10 ? cfg->layout :
		    cfg->level == 0 ? 1 : 0;
	n->chunk_sectors = chunk;
	n->raid_disks = cfg->nmembers;
	n->size = cfg->level == 0 ? 0 : comp;
	n->data_offset = off;
	n->ppl = cfg->ppl;
	n->write_mostly = cfg->write_mostly;
	n->failfast = cfg->failfast;
	n->clean = clean;
	n->ctime = (uint64_t)time(NULL);
	return 0;
}
