/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ctl.c - the control table: md's sysfs attributes and mdstat for one
 * array, as text in and text out.
 *
 * Every read formats afresh from rf_array_get_info() (one snapshot per
 * read, so the lines of mdstat agree with each other); nothing is cached
 * here.  Formats and units are md's (drivers/md/md.c and raid5.c attribute
 * show functions, md_seq_show and each level's status line), so scripts
 * written for /sys/block/mdX/md and /proc/mdstat read these files too.
 *
 * A store parses the value the way md does (a decimal with an optional
 * '+', one trailing newline allowed), then the engine's setter checks the
 * range and applies it; a setter that refuses changes nothing.  This file
 * logs every refusal, naming the attribute and the value: the writer only
 * sees EINVAL.
 *
 * Who may: every file belongs to the daemon's user.  Only that user and
 * root may store (rf_ctl_may_store), whatever the modes the kernel sees;
 * md/new_dev's path is opened with the writer's own file system
 * credentials (rf_ctl_as_writer: per-thread fsuid, fsgid and groups), so
 * no writer makes the daemon open a file it could not open itself.
 *
 * Which attributes an array has, and what its consistency policy is,
 * follow its level; the level answers (array.h: rf_level_has_sync_work(),
 * rf_level_has_stripe_cache(), rf_level_takes_policy(), rf_level_served()),
 * this file compares no level number.
 *
 * What it does NOT do: mount anything (fuse_serve.c mounts the tree, fuse.c's ops serve it), hold any
 * lock (the engine's getters and setters are thread-safe), or keep state.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "raidfuse/config.h"
#include "raidfuse/ctl.h"
#include "raidfuse/ctl_parse.h"
#include "raidfuse/fault.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/log.h"
#include "raidfuse/reshape.h"
#include "raidfuse/resize.h"
#include "raidfuse/super.h"
#include "raidfuse/sync.h"

struct rf_ctl_buf {
	char *buf;
	size_t size, len;
	bool overflow;
};

void rf_ctl_printf(struct rf_ctl_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->buf + b->len, b->size - b->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= b->size - b->len) {
		b->overflow = true;
		b->buf[b->len] = '\0';
		return;
	}
	b->len += (size_t)n;
}

/* The superblock format the members carry, as md names it ("1.2"), or
 * NULL for none (metadata = "none": md's "non-persistent", what mdadm
 * --build makes). */
static const char *metadata_version(struct rf_array *a, const struct rf_array_info *i)
{
	return i->metadata ? rf_sb_kind_name(i->metadata) : NULL;
}

/* ---------------------------------------------------------------- show */

#define SHOW_INT(field)                                                                        \
	static void show_##field(struct rf_array *a, const struct rf_array_info *i, int member,  \
				 struct rf_ctl_buf *b)                                          \
	{                                                                                      \
		rf_ctl_printf(b, "%d\n", i->field);                                            \
	}

SHOW_INT(layout)
SHOW_INT(degraded)
SHOW_INT(stripe_cache_size)
SHOW_INT(stripe_cache_active)
SHOW_INT(group_thread_cnt)
SHOW_INT(worker_groups)
SHOW_INT(rmw_level)

static void show_level(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	rf_ctl_printf(b, "raid%d\n", i->level);
}

/* md: bytes. */
static void show_chunk_size(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	rf_ctl_printf(b, "%u\n", i->chunk_bytes);
}

/* md: KiB of each member the array uses. */
static void show_component_size(struct rf_array *a, const struct rf_array_info *i, int member,
				struct rf_ctl_buf *b)
{
	rf_ctl_printf(b, "%llu\n", (unsigned long long)(i->component_size / 1024));
}

/* md's words: "clean" when no write is in flight, "active" otherwise,
 * "broken" for an idle array that lost too many members or the last copy
 * of some data (md's MD_BROKEN), "readonly" for
 * one assembled with --ro; "suspended" while md/array_state holds writes
 * back. */
static void show_array_state(struct rf_array *a, const struct rf_array_info *i, int member,
			     struct rf_ctl_buf *b)
{
	const char *st;

	if (rf_array_readonly(a))
		st = "readonly";
	else if (i->suspended)
		st = "suspended";
	else if (i->writes_in_flight)
		st = "active";
	else if (i->failed)
		st = "broken";          /* its superblocks stay dirty: no write ends clean */
	else if (i->sb_dirty)
		st = "active";          /* as md: also while the superblocks say dirty */
	else
		st = "clean";
	rf_ctl_printf(b, "%s\n", st);
}

static int store_array_state(struct rf_array *a, int member, const char *val)
{
	enum rf_ctl_array_state st;

	if (rf_ctl_parse_array_state(val, &st))
		return -EINVAL;
	return st == RF_CTL_STATE_SUSPENDED ? rf_barrier_suspend(a) : rf_barrier_resume(a);
}

static void show_metadata_version(struct rf_array *a, const struct rf_array_info *i, int member,
				  struct rf_ctl_buf *b)
{
	const char *v = metadata_version(a, i);

	rf_ctl_printf(b, "%s\n", v ? v : "none");
}

/* md: the array uuid as mdadm prints it, "none" without superblocks. */
static void show_uuid(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	rf_ctl_printf(b, "%s\n", i->uuid[0] ? i->uuid : "none");
}

/* md: KiB.  md shows "default" unless the size was set by hand, which
 * raidfuse has no way to do: here it is always the size served. */
static void show_array_size(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	rf_ctl_printf(b, "%llu\n", (unsigned long long)(i->array_size / 1024));
}

/* raidfuse's own, what mdadm --detail reads from a superblock: the
 * events count, the creation time (seconds since the epoch) and the
 * set name (mdadm's "Name"); "none" without superblocks. */
static void show_events(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	if (i->uuid[0])
		rf_ctl_printf(b, "%llu\n", (unsigned long long)i->events);
	else
		rf_ctl_printf(b, "none\n");
}

static void show_creation_time(struct rf_array *a, const struct rf_array_info *i, int member,
			       struct rf_ctl_buf *b)
{
	if (i->uuid[0] && i->ctime)
		rf_ctl_printf(b, "%llu\n", (unsigned long long)i->ctime);
	else
		rf_ctl_printf(b, "none\n");
}

static void show_set_name(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	rf_ctl_printf(b, "%s\n", i->set_name[0] ? i->set_name : "none");
}

/* md: "bitmap" with an internal write-intent bitmap, "ppl" with the
 * partial parity log, else "resync" for levels with redundancy (no
 * journal here), "none" for a level whose only policy it is (raid0). */
static void show_consistency_policy(struct rf_array *a, const struct rf_array_info *i, int member,
				    struct rf_ctl_buf *b)
{
	rf_ctl_printf(b, "%s\n", rf_level_takes_policy(a, "none") ? "none" : i->bitmap_chunk ? "bitmap" :
				 i->ppl ? "ppl" : "resync");
}

static int store_consistency_policy(struct rf_array *a, int member, const char *val)
{
	return rf_array_set_consistency_policy(a, val);
}

/* ---------------------------------------------------------------- sync */

static void show_sync_action(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	struct rf_sync_status st;
	uint64_t pos;
	bool back;

	rf_sync_get(a, &st);
	/* md's word while a reshape is under way ("frozen" holds it). */
	if (rf_array_reshape(a, &pos, &back) && st.action != RF_SYNC_FROZEN) {
		rf_ctl_printf(b, "reshape\n");
		return;
	}
	rf_ctl_printf(b, "%s\n", rf_sync_action_name(st.action));
}

/* How long a write of "frozen" waits for the reshape's window under way. */
#define CTL_HOLD_MS 30000

static int store_sync_action(struct rf_array *a, int member, const char *val)
{
	int act = rf_ctl_parse_sync_action(val);
	uint64_t pos;
	bool back;

	if (rf_array_reshape(a, &pos, &back)) {
		/* md: "frozen" holds a reshape, "idle" or "reshape" lets it
		 * go on; nothing else runs beside it. */
		if (act == RF_SYNC_FROZEN) {
			int ret = rf_reshape_hold(a, CTL_HOLD_MS);

			if (ret)
				rf_warn("md/sync_action: frozen: the reshape's window under way did not end in %d s",
					CTL_HOLD_MS / 1000);
			return ret;
		}
		if (act == RF_SYNC_IDLE)
			return rf_sync_request(a, RF_SYNC_IDLE);
		if (!strncmp(val, "reshape", 7) && (val[7] == '\0' || val[7] == '\n'))
			return rf_sync_request(a, RF_SYNC_IDLE);
		rf_warn("md/sync_action: %s: the array is mid-reshape (at array sector %llu): no sync action runs "
			"beside it (frozen holds it, idle or reshape lets it go on)", val, (unsigned long long)pos);
		return -EBUSY;
	}
	return act < 0 ? act : rf_sync_request(a, (enum rf_sync_action)act);
}

/* md/reshape_position: array sectors, "none" without a reshape; as md's,
 * the position the superblocks hold (the walk runs ahead of it between
 * records: sync_completed and mdstat show how far). */
static void show_reshape_position(struct rf_array *a, const struct rf_array_info *i, int member,
				  struct rf_ctl_buf *b)
{
	uint64_t pos;
	bool back;

	if (rf_array_reshape(a, &pos, &back))
		rf_ctl_printf(b, "%llu\n", (unsigned long long)rf_array_reshape_recorded(a));
	else
		rf_ctl_printf(b, "none\n");
}

static void show_reshape_direction(struct rf_array *a, const struct rf_array_info *i, int member,
				   struct rf_ctl_buf *b)
{
	uint64_t pos;
	bool back = false;

	rf_array_reshape(a, &pos, &back);
	rf_ctl_printf(b, "%s\n", back ? "backwards" : "forwards");
}

static void show_mismatch_cnt(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	struct rf_sync_status st;

	rf_sync_get(a, &st);
	rf_ctl_printf(b, "%llu\n", (unsigned long long)st.mismatch_cnt);
}

/* md: "<KiB/s> (local)" when set for this array, "(system)" for the default. */
static void show_speed_limit(struct rf_array *a, struct rf_ctl_buf *b, bool max)
{
	struct rf_sync_status st;

	rf_sync_get(a, &st);
	rf_ctl_printf(b, "%u (%s)\n", max ? st.speed_max : st.speed_min,
		      (max ? st.speed_max_local : st.speed_min_local) ? "local" : "system");
}

/* md takes "system" (back to the default) or KiB/s (0: the default). */
static int store_speed_limit(struct rf_array *a, const char *val, bool max)
{
	unsigned n;

	if (rf_ctl_parse_speed(val, &n))
		return -EINVAL;
	return max ? rf_sync_set_speed_max(a, n) : rf_sync_set_speed_min(a, n);
}

static void show_sync_speed_min(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	show_speed_limit(a, b, false);
}

static void show_sync_speed_max(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	show_speed_limit(a, b, true);
}

static int store_sync_speed_min(struct rf_array *a, int member, const char *val)
{
	return store_speed_limit(a, val, false);
}

static int store_sync_speed_max(struct rf_array *a, int member, const char *val)
{
	return store_speed_limit(a, val, true);
}

/* md's seconds with 3 decimals; present where the array keeps a
 * clean/dirty state. */
static bool has_safe_mode(const struct rf_array *a)
{
	unsigned ms;

	return !rf_sbstate_safe_mode_delay_get(a, &ms);
}

static void show_safe_mode_delay(struct rf_array *a, const struct rf_array_info *i, int member,
				 struct rf_ctl_buf *b)
{
	unsigned ms = 0;

	rf_sbstate_safe_mode_delay_get(a, &ms);
	rf_ctl_printf(b, "%u.%03u\n", ms / 1000, ms % 1000);
}

static int store_safe_mode_delay(struct rf_array *a, int member, const char *val)
{
	unsigned ms;

	if (rf_ctl_parse_safe_mode_delay(val, &ms)) {
		rf_warn("md/safe_mode_delay: '%s' is not a delay (seconds, at most 3 decimals; 0: clean only "
			"at shutdown)", val);
		return -EINVAL;
	}
	return rf_sbstate_safe_mode_delay_set(a, ms);
}

/* md: KiB/s, "none" while no action runs. */
static void show_sync_speed(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	struct rf_sync_status st;

	rf_sync_get(a, &st);
	if (st.action == RF_SYNC_IDLE || st.action == RF_SYNC_FROZEN)
		rf_ctl_printf(b, "none\n");
	else
		rf_ctl_printf(b, "%u\n", st.speed);
}

/* A reshape under way: how far the walk is, in sectors of each member
 * (from the end for a backward one), of the members' size: the position
 * over the new geometry's own size (the array serves the smaller of the
 * two meanwhile), scaled to the members' (raid4/5/6: the position over
 * the data disks; raid10 of 5 near-2 members: 2.5 array sectors a
 * member sector). */
static bool reshape_done(struct rf_array *a, uint64_t *done, uint64_t *total)
{
	const struct rf_geom *g = rf_array_geom(a);
	struct rf_geom own = *g;
	char why[160];
	uint64_t pos;
	bool back;

	*total = g->dev_sectors;
	if (!rf_array_reshape(a, &pos, &back) || rf_geom_init(&own, why, sizeof(why)) || !own.array_sectors)
		return false;
	*done = (uint64_t)((unsigned __int128)pos * g->dev_sectors / own.array_sectors);
	if (back)
		*done = *done < *total ? *total - *done : 0;
	if (*done > *total)
		*done = *total;
	return true;
}

/* md: "done / total" sectors of the sync action running, or of a reshape
 * (in sectors of each member, as md's reshape counts), "none" else. */
static void show_sync_completed(struct rf_array *a, const struct rf_array_info *i, int member,
				struct rf_ctl_buf *b)
{
	struct rf_sync_status st;
	uint64_t done, total;

	rf_sync_get(a, &st);
	if (st.action != RF_SYNC_FROZEN && reshape_done(a, &done, &total))
		rf_ctl_printf(b, "%llu / %llu\n", (unsigned long long)done, (unsigned long long)total);
	else if (st.action == RF_SYNC_IDLE || st.action == RF_SYNC_FROZEN)
		rf_ctl_printf(b, "none\n");
	else
		rf_ctl_printf(b, "%llu / %llu\n", (unsigned long long)st.done, (unsigned long long)st.total);
}

/* md: where the next resync starts, in sectors; "none" when none is due.
 * It takes the same (not while a resync runs: EBUSY). */
static void show_resync_start(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	struct rf_sync_status st;

	rf_sync_get(a, &st);
	if (st.resync_cp >= st.total)
		rf_ctl_printf(b, "none\n");
	else
		rf_ctl_printf(b, "%llu\n", (unsigned long long)st.resync_cp);
}

static int store_resync_start(struct rf_array *a, int member, const char *val)
{
	uint64_t n;

	if (rf_ctl_parse_sectors(val, &n))
		return -EINVAL;
	return rf_sync_set_resync_cp(a, n == UINT64_MAX ? RF_SYNC_NONE : n);
}

/* md/raid_disks: the count; while a reshape changes it, md's "new (old)". */
static void show_raid_disks(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	if (i->prev_raid_disks != i->raid_disks)
		rf_ctl_printf(b, "%d (%d)\n", i->raid_disks, i->prev_raid_disks);
	else
		rf_ctl_printf(b, "%d\n", i->raid_disks);
}

/* A whole number in [lo, hi] (a newline after it allowed): 0, or -EINVAL. */
static int store_number(const char *val, long lo, long hi, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(val, &end, 10);
	if (errno || end == val || (*end && strcmp(end, "\n")) || *out < lo || *out > hi)
		return -EINVAL;
	return 0;
}

/* A reshape a write to md/ATTR asked for (reshape.h), started or refused:
 * the log says which, and why; the writer gets ret. */
static int reshape_said(const char *attr, const char *val, int ret, const char *err)
{
	int n = (int)strcspn(val, "\n");

	if (ret)
		rf_warn("md/%s: %.*s: %s", attr, n, val, err);
	else
		rf_info("md/%s: %.*s: under way", attr, n, val);
	return ret;
}

/* md/raid_disks written on a running array: a grow. */
static int store_raid_disks(struct rf_array *a, int member, const char *val)
{
	char err[512];
	long n;

	(void)member;
	if (store_number(val, 1, RF_MAX_MEMBERS, &n))
		return -EINVAL;
	return reshape_said("raid_disks", val, rf_reshape_grow(a, (int)n, err, sizeof(err)), err);
}

/* md/backup_file: mdadm's backup file of a reshape in place, or none
 * (not one of md's files: mdadm --grow --backup-file keeps it itself). */
static void show_backup_file(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	char path[4096];

	(void)i;
	(void)member;
	rf_ctl_printf(b, "%s\n", rf_reshape_backup_file(a, path, sizeof(path)) ? path : "none");
}

/* md/backup_file written: an absolute path (made and written to now, so
 * a file that cannot be is refused at once), or none. */
static int store_backup_file(struct rf_array *a, int member, const char *val)
{
	char path[4096], err[512];
	int n = (int)strcspn(val, "\n"), ret;

	(void)member;
	if (n >= (int)sizeof(path))
		return -ENAMETOOLONG;
	snprintf(path, sizeof(path), "%.*s", n, val);
	ret = rf_reshape_set_backup_file(a, strcmp(path, "none") && *path ? path : NULL, err, sizeof(err));
	if (ret)
		rf_warn("md/backup_file: %s", err);
	return ret;
}

/* md/component_size written on a running array (mdadm --grow --size):
 * KiB each member uses, or "max" (md takes 0 for it too). */
static int store_component_size(struct rf_array *a, int member, const char *val)
{
	char err[512];
	uint64_t kib;
	int ret;

	(void)member;
	if (rf_ctl_parse_kib(val, "max", &kib))
		return -EINVAL;
	ret = rf_resize_component(a, kib == UINT64_MAX ? 0 : kib * 2, err, sizeof(err));
	if (ret)
		rf_warn("md/component_size: %s: %s", val, err);
	return ret;
}

/* md/array_size written (mdadm --grow --array-size): KiB the image
 * serves, or "default". */
static int store_array_size(struct rf_array *a, int member, const char *val)
{
	char err[512];
	uint64_t kib;
	int ret;

	(void)member;
	if (rf_ctl_parse_kib(val, "default", &kib) || kib == 0)
		return -EINVAL;
	ret = rf_resize_array(a, kib == UINT64_MAX ? 0 : kib * 1024, err, sizeof(err));
	if (ret)
		rf_warn("md/array_size: %s: %s", val, err);
	return ret;
}

/* md/level written on a running array (md's words: "raid6", "6"). */
static int store_level(struct rf_array *a, int member, const char *val)
{
	char err[512];
	long n;

	(void)member;
	if (store_number(strncmp(val, "raid", 4) ? val : val + 4, 0, 10, &n) || !rf_level_served((int)n))
		return -EINVAL;
	return reshape_said("level", val, rf_reshape_level(a, (int)n, err, sizeof(err)), err);
}

/* md/layout written on a running raid5/6: a relayout; md's number, or its
 * name. */
static int store_layout(struct rf_array *a, int member, const char *val)
{
	struct rf_array_info i;
	char err[512], name[64];
	int layout;

	(void)member;
	rf_array_get_info(a, &i);
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(val, "\n"), val);
	layout = rf_layout_parse(i.level, name);
	if (layout < 0)
		return -EINVAL;
	return reshape_said("layout", val, rf_reshape_layout(a, layout, 0, err, sizeof(err)), err);
}

/* md/chunk_size written on a running raid4/5/6: bytes, a power of two
 * of 4096 or more. */
static int store_chunk_size(struct rf_array *a, int member, const char *val)
{
	char err[512];
	long n;

	(void)member;
	if (store_number(val, 4096, 1L << 30, &n) || (n & (n - 1)))
		return -EINVAL;
	return reshape_said("chunk_size", val, rf_reshape_layout(a, -1, (uint32_t)(n / 512), err, sizeof(err)),
			    err);
}

/* ---------------------------------------------------------------- devices */

/* md/new_dev: a path, added as a spare.  The engine's message says what
 * was wrong with the file; the writer gets its errno. */
static int store_new_dev(struct rf_array *a, int member, const char *val)
{
	char err[512] = "";
	int ret = rf_ctl_parse_path(val);

	if (ret)
		return ret;
	ret = rf_memberctl_add_spare(a, val, err, sizeof(err));

	if (ret && err[0])
		rf_err("md/new_dev: %s", err);
	return ret;
}

/* md's state_show: its words in its order, comma separated.  "spare" is
 * any device neither failed nor in sync (a spare, or one being rebuilt). */
static void show_dev_state(struct rf_array *a, const struct rf_dev_info *d, struct rf_ctl_buf *b)
{
	static const struct {
		unsigned flag;
		const char *word;
	} words[] = {
		{ RF_DEV_FAULTY, "faulty" },
		{ RF_DEV_IN_SYNC, "in_sync" },
		{ RF_DEV_WRITE_MOSTLY, "write_mostly" },
	};
	const char *sep = "";
	size_t i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (d->flags & words[i].flag) {
			rf_ctl_printf(b, "%s%s", sep, words[i].word);
			sep = ",";
		}
	}
	if (!(d->flags & (RF_DEV_FAULTY | RF_DEV_IN_SYNC))) {
		rf_ctl_printf(b, "%sspare", sep);
		sep = ",";
	}
	if (d->flags & RF_DEV_WANT_REPLACEMENT) {
		rf_ctl_printf(b, "%swant_replacement", sep);
		sep = ",";
	}
	if (d->flags & RF_DEV_REPLACEMENT) {
		rf_ctl_printf(b, "%sreplacement", sep);
		sep = ",";
	}
	if (d->flags & RF_DEV_FAILFAST)
		rf_ctl_printf(b, "%sfailfast", sep);      /* md's place: after spare */
	rf_ctl_printf(b, "\n");
}

/* The words md's state_store takes that the engine knows; others are
 * refused here, before anything is asked of the engine. */
static int store_dev_state(struct rf_array *a, const char *dev, const char *val)
{
	int word;

	if (rf_ctl_parse_dev_state(val, &word))
		return -EINVAL;
	return rf_memberctl_set_state(a, dev, rf_ctl_dev_state_words[word]);
}

static void show_dev_errors(struct rf_array *a, const struct rf_dev_info *d, struct rf_ctl_buf *b)
{
	rf_ctl_printf(b, "%llu\n", (unsigned long long)d->errors);
}

static void show_dev_slot(struct rf_array *a, const struct rf_dev_info *d, struct rf_ctl_buf *b)
{
	if (d->slot < 0)
		rf_ctl_printf(b, "none\n");
	else
		rf_ctl_printf(b, "%d\n", d->slot);
}

static void show_dev_offset(struct rf_array *a, const struct rf_dev_info *d, struct rf_ctl_buf *b)
{
	rf_ctl_printf(b, "%llu\n", (unsigned long long)d->offset);
}

/* raidfuse's own: the member's path as the config or command line gave
 * it (md's dev-NAME/block links to the block device). */
static void show_dev_path(struct rf_array *a, const struct rf_dev_info *d, struct rf_ctl_buf *b)
{
	rf_ctl_printf(b, "%s\n", d->path);
}

static void show_dev_size(struct rf_array *a, const struct rf_dev_info *d, struct rf_ctl_buf *b)
{
	rf_ctl_printf(b, "%llu\n", (unsigned long long)d->size);
}

/* md: "none" for a device in sync, else the sectors rebuilt so far. */
static void show_dev_recovery_start(struct rf_array *a, const struct rf_dev_info *d, struct rf_ctl_buf *b)
{
	if ((d->flags & RF_DEV_IN_SYNC) || d->recovery_start == UINT64_MAX)
		rf_ctl_printf(b, "none\n");
	else
		rf_ctl_printf(b, "%llu\n", (unsigned long long)d->recovery_start);
}

/* raidfuse's own: the device's fault injection (fault.h), as text
 * rf_fault_parse() takes back, then what it has done since it was set. */
static void show_dev_fault(struct rf_array *a, const struct rf_dev_info *d, struct rf_ctl_buf *b)
{
	struct rf_fault_spec s;
	struct rf_fault_stats st;
	char text[512];

	if (rf_memberctl_fault_get(a, d->name, &s, &st) || rf_fault_format(&s, text, sizeof(text)) < 0) {
		rf_ctl_printf(b, "off\n");
		return;
	}
	rf_ctl_printf(b, "%s\nmatched=%llu errors=%llu delays=%llu\n", text, (unsigned long long)st.matched,
		      (unsigned long long)st.errors, (unsigned long long)st.delays);
}

static int store_dev_fault(struct rf_array *a, const char *dev, const char *val)
{
	struct rf_fault_spec s;
	char err[256];

	if (rf_fault_parse(val, &s, err, sizeof(err))) {
		rf_warn("md/dev-%s/fault: %s", dev, err);
		return -EINVAL;
	}
	return rf_memberctl_fault_set(a, dev, &s);
}

/* raidfuse's own: an NBD member's command timeout, as the config's
 * array.member_timeout is written (whole seconds, else "Nms"); "none" for
 * a file. */
static void show_dev_timeout(struct rf_array *a, const struct rf_dev_info *d, struct rf_ctl_buf *b)
{
	unsigned ms;

	if (rf_memberctl_timeout_get(a, d->name, &ms))
		rf_ctl_printf(b, "none\n");
	else if (ms % 1000)
		rf_ctl_printf(b, "%ums\n", ms);
	else
		rf_ctl_printf(b, "%u\n", ms / 1000);
}

static int store_dev_timeout(struct rf_array *a, const char *dev, const char *val)
{
	unsigned ms;

	if (rf_parse_timeout_ms(val, &ms)) {
		rf_warn("md/dev-%s/timeout: '%s' is not a timeout (seconds, or \"500ms\"; 10ms..3600s)", dev, val);
		return -EINVAL;
	}
	return rf_memberctl_timeout_set(a, dev, ms);
}

/* raidfuse's own: the member IO mode in force (direct, buffered; "none"
 * for an NBD export); written: auto, direct or buffered, at once. */
static void show_dev_io_mode(struct rf_array *a, const struct rf_dev_info *d, struct rf_ctl_buf *b)
{
	int mode = rf_memberctl_io_mode_get(a, d->name);

	rf_ctl_printf(b, "%s\n", mode < 0 ? "none" : rf_member_io_name(mode));
}

static int store_dev_io_mode(struct rf_array *a, const char *dev, const char *val)
{
	int mode = rf_member_io_parse(val);

	return mode < 0 ? -EINVAL : rf_memberctl_io_mode_set(a, dev, mode);
}

#define DEV_RO(n) { .name = #n, .mode = 0444, .show_dev = show_dev_##n }

const struct rf_ctl_attr rf_ctl_dev_attrs[] = {
	{ .name = "state", .mode = 0644, .show_dev = show_dev_state, .store_dev = store_dev_state,
	  .takes = "faulty, remove, re-add, -faulty, writemostly, -writemostly, failfast, -failfast, "
		   "want_replacement or -want_replacement" },
	DEV_RO(errors),
	DEV_RO(slot),
	DEV_RO(offset),
	DEV_RO(size),
	DEV_RO(recovery_start),
	DEV_RO(path),
	{ .name = "fault", .mode = 0644, .show_dev = show_dev_fault, .store_dev = store_dev_fault,
	  .takes = "off, or key=value words: error=EIO rate=P every=N ops=read,write,fsync after=N count=N "
		   "delay_us=N offset=SIZE length=SIZE seed=N" },
	{ .name = "timeout", .mode = 0644, .show_dev = show_dev_timeout, .store_dev = store_dev_timeout,
	  .takes = "seconds, or milliseconds as \"500ms\" (10ms..3600s); NBD members only" },
	{ .name = "io_mode", .mode = 0644, .show_dev = show_dev_io_mode, .store_dev = store_dev_io_mode,
	  .takes = "auto, direct or buffered; files and block devices only" },
};

const size_t rf_ctl_dev_nattrs = sizeof(rf_ctl_dev_attrs) / sizeof(rf_ctl_dev_attrs[0]);

/* The attribute called name in table t (n entries), or NULL. */
static const struct rf_ctl_attr *find_attr(const struct rf_ctl_attr *t, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	return NULL;
}

const struct rf_ctl_attr *rf_ctl_dev_find(const char *name)
{
	return find_attr(rf_ctl_dev_attrs, rf_ctl_dev_nattrs, name);
}

/* Device dev's state, by name: the number found may be stale by the time
 * its state is read (a reconfiguration in between), so the name read
 * back must match, else look again. */
static int dev_info_by_name(struct rf_array *a, const char *dev, struct rf_dev_info *d)
{
	int tries, n;

	for (tries = 0; tries < 8; tries++) {
		n = rf_member_find(a, dev);
		if (n < 0)
			return n;
		if (!rf_member_info(a, n, d) && !strcmp(d->name, dev) && !(d->flags & RF_DEV_MISSING))
			return 0;
	}
	return -ENOENT;
}

int rf_ctl_dev_entry(struct rf_array *a, const char *entry)
{
	if (strncmp(entry, "dev-", 4) || !entry[4])
		return -ENOENT;
	return rf_member_find(a, entry + 4) < 0 ? -ENOENT : 0;
}

/* "rdN" with N a plain decimal (no sign, no leading zero), or -1. */
static int rd_slot(const char *entry)
{
	return rf_ctl_parse_rd_slot(entry, RF_MAX_DEVS);
}

int rf_ctl_rd_target(struct rf_array *a, int slot, char *buf, size_t size)
{
	struct rf_dev_info d;
	int i, n, len;

	n = rf_member_ndevs(a);
	for (i = 0; i < n; i++) {
		if (rf_member_info(a, i, &d) || d.slot != slot || (d.flags & RF_DEV_MISSING))
			continue;
		len = snprintf(buf, size, "dev-%s", d.name);
		return (size_t)len < size ? len : -EOVERFLOW;
	}
	return -ENOENT;
}

int rf_ctl_rd_entry(struct rf_array *a, const char *entry)
{
	char target[300];
	int slot = rd_slot(entry);

	if (slot < 0 || rf_ctl_rd_target(a, slot, target, sizeof(target)) < 0)
		return -ENOENT;
	return slot;
}

int rf_ctl_dev_list(struct rf_array *a, struct rf_ctl_dev_ent *out, int max)
{
	struct rf_dev_info d;
	int i, n = rf_member_ndevs(a), k = 0, slot;
	uint64_t slots[RF_MAX_DEVS / 64] = { 0 };

	for (i = 0; i < n && k < max; i++) {
		if (rf_member_info(a, i, &d) || (d.flags & RF_DEV_MISSING))
			continue;
		snprintf(out[k].name, sizeof(out[k].name), "dev-%s", d.name);
		out[k].link = false;
		out[k++].slot = d.slot;
		if (d.slot >= 0 && d.slot < RF_MAX_DEVS)
			slots[d.slot / 64] |= 1ull << (d.slot % 64);
	}
	for (slot = 0; slot < RF_MAX_DEVS && k < max; slot++) {
		if (!(slots[slot / 64] >> (slot % 64) & 1))
			continue;
		snprintf(out[k].name, sizeof(out[k].name), "rd%d", slot);
		out[k].link = true;
		out[k++].slot = slot;
	}
	return k;
}

#define ATTR_RO(n, ...) { .name = #n, .mode = 0444, .show = show_##n, __VA_ARGS__ }
#define ATTR_INT(n, setter, range, ...) \
	{ .name = #n, .mode = 0644, .show = show_##n, .set_int = setter, .takes = range, __VA_ARGS__ }

const struct rf_ctl_attr rf_ctl_md_attrs[] = {
	{ .name = "level", .mode = 0644, .show = show_level, .store = store_level,
	  .takes = "a level: raid6 on a raid4/5 (a restripe by one spare, md/new_dev), raid5 on a raid4, a "
		   "raid6 of a -6 layout, a raid0 or a raid1 of two, raid4 on a parity-last raid5 or a raid0, "
		   "raid10 on a raid0, raid0 on a parity-last raid4/5, a near-2 raid10 or a raid1, raid1 on a "
		   "raid5 of two" },
	{ .name = "layout", .mode = 0644, .show = show_layout, .store = store_layout,
	  .takes = "a layout of the level (md's number or name): a relayout of the same members" },
	{ .name = "chunk_size", .mode = 0644, .show = show_chunk_size, .store = store_chunk_size,
	  .takes = "bytes, a power of two >= 4096 that divides the component size: a restripe" },
	{ .name = "raid_disks", .mode = 0644, .show = show_raid_disks, .store = store_raid_disks,
	  .takes = "more members than it has: a raid4/5/6 or raid10 (near, offset) grows by as many spares "
		   "(md/new_dev); a raid1 by mirrors, or fewer once no more slots hold a device" },
	{ .name = "backup_file", .mode = 0644, .show = show_backup_file, .store = store_backup_file,
	  .takes = "an absolute path, or none: mdadm's backup file for a reshape with no room before the data "
		   "(written before md/raid_disks, md/layout or md/chunk_size)" },
	{ .name = "component_size", .mode = 0644, .show = show_component_size, .store = store_component_size,
	  .takes = "KiB each member uses, or max: members grown or replaced by larger ones (raid1/4/5/6/10)" },
	{ .name = "array_size", .mode = 0644, .show = show_array_size, .store = store_array_size,
	  .takes = "KiB the image serves (at most what the members hold), or default" },
	ATTR_RO(metadata_version),
	ATTR_RO(uuid),
	ATTR_RO(set_name),
	ATTR_RO(creation_time),
	ATTR_RO(events),
	{ .name = "consistency_policy", .mode = 0644, .show = show_consistency_policy,
	  .store = store_consistency_policy, .takes = "resync or ppl (raid5, 1.x metadata, no bitmap, room for the log)" },
	ATTR_RO(reshape_position),
	ATTR_RO(reshape_direction),
	{ .name = "array_state", .mode = 0644, .show = show_array_state, .store = store_array_state,
	  .takes = "suspended or active" },
	ATTR_RO(degraded),
	ATTR_INT(stripe_cache_size, rf_array_set_stripe_cache_size, "17..32768", .present = rf_level_has_stripe_cache),
	ATTR_RO(stripe_cache_active, .present = rf_level_has_stripe_cache),
	ATTR_INT(rmw_level, rf_array_set_rmw_level, "0 (never), 1 (when it reads less) or 2 (whenever possible)",
		 .present = rf_level_has_stripe_cache),
	/* raidfuse's worker groups serve every level. */
	ATTR_INT(group_thread_cnt, rf_array_set_group_thread_cnt,
		 "0..64, with worker_groups x group_thread_cnt within the worker thread bound"),
	ATTR_INT(worker_groups, rf_array_set_worker_groups,
		 "1..64, with worker_groups x group_thread_cnt within the worker thread bound"),
	{ .name = "sync_action", .mode = 0644, .show = show_sync_action, .store = store_sync_action,
	  .takes = "check, repair, resync, recover, idle or frozen", .present = rf_level_has_sync_work },
	ATTR_RO(mismatch_cnt, .present = rf_level_has_sync_work),
	{ .name = "sync_speed_min", .mode = 0644, .show = show_sync_speed_min, .store = store_sync_speed_min,
	  .takes = "KiB/s, or system", .present = rf_level_has_sync_work },
	{ .name = "sync_speed_max", .mode = 0644, .show = show_sync_speed_max, .store = store_sync_speed_max,
	  .takes = "KiB/s, or system", .present = rf_level_has_sync_work },
	ATTR_RO(sync_speed, .present = rf_level_has_sync_work),
	ATTR_RO(sync_completed, .present = rf_level_has_sync_work),
	{ .name = "resync_start", .mode = 0644, .show = show_resync_start, .store = store_resync_start,
	  .takes = "sectors, or none", .present = rf_level_has_sync_work },
	{ .name = "safe_mode_delay", .mode = 0644, .show = show_safe_mode_delay, .store = store_safe_mode_delay,
	  .takes = "seconds, at most 3 decimals (0.200); 0: clean only at shutdown", .present = has_safe_mode },
	/* write-only, as md's */
	{ .name = "new_dev", .mode = 0200, .store = store_new_dev, .takes = "the path of a file to add as a spare",
	  .as_writer = true },
};

const size_t rf_ctl_md_nattrs = sizeof(rf_ctl_md_attrs) / sizeof(rf_ctl_md_attrs[0]);
#define NATTRS (sizeof(rf_ctl_md_attrs) / sizeof(rf_ctl_md_attrs[0]))

const struct rf_ctl_attr *rf_ctl_find(const char *name)
{
	return find_attr(rf_ctl_md_attrs, NATTRS, name);
}

/* ---------------------------------------------------------------- md/bitmap/ */

/* md's bitmap group (md-bitmap.c), on every array as md has it; without
 * a bitmap: location "none", md's defaults, and can_clear empty. */
static void show_location(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	struct rf_bitmap_ctl c;

	if (rf_bitmap_ctl_get(a, &c) || !c.location)
		rf_ctl_printf(b, "none\n");
	else
		rf_ctl_printf(b, "%+d\n", c.location);
}

static void show_chunksize(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	struct rf_bitmap_ctl c;

	rf_bitmap_ctl_get(a, &c);
	rf_ctl_printf(b, "%u\n", c.chunk_bytes);
}

static void show_time_base(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	struct rf_bitmap_ctl c;

	rf_bitmap_ctl_get(a, &c);
	rf_ctl_printf(b, "%u", c.time_base_ms / 1000);
	if (c.time_base_ms % 1000)
		rf_ctl_printf(b, ".%03u", c.time_base_ms % 1000);
	rf_ctl_printf(b, "\n");
}

static int store_time_base(struct rf_array *a, int member, const char *val)
{
	unsigned ms;

	if (rf_ctl_parse_time_base(val, &ms))
		return -EINVAL;
	return rf_bitmap_ctl_time_base(a, ms);
}

static void show_backlog(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	struct rf_bitmap_ctl c;

	rf_bitmap_ctl_get(a, &c);
	rf_ctl_printf(b, "%u\n", c.backlog);
}

static int store_backlog(struct rf_array *a, int member, const char *val)
{
	int n;

	if (rf_ctl_parse_int(val, &n) || n < 0)
		return -EINVAL;
	return rf_bitmap_ctl_backlog(a, (unsigned)n);
}

static void show_metadata(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	rf_ctl_printf(b, "internal\n");
}

static void show_can_clear(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	struct rf_bitmap_ctl c;

	if (rf_bitmap_ctl_get(a, &c))
		rf_ctl_printf(b, "\n");
	else
		rf_ctl_printf(b, "%s\n", c.can_clear ? "true" : "false");
}

static int store_can_clear(struct rf_array *a, int member, const char *val)
{
	if (strcmp(val, "true") && strcmp(val, "false"))
		return rf_bitmap_ctl_get(a, &(struct rf_bitmap_ctl){ 0 }) ? -ENOENT : -EINVAL;
	return rf_bitmap_ctl_can_clear(a, !strcmp(val, "true"));
}

const struct rf_ctl_attr rf_ctl_bitmap_attrs[] = {
	{ .name = "location", .mode = 0444, .show = show_location },
	{ .name = "time_base", .mode = 0644, .show = show_time_base, .store = store_time_base,
	  .takes = "seconds, up to 4 decimals (the bitmap's background pass period)" },
	{ .name = "backlog", .mode = 0644, .show = show_backlog, .store = store_backlog,
	  .takes = "0..16383, with a write-mostly device in the array" },
	{ .name = "chunksize", .mode = 0444, .show = show_chunksize },
	{ .name = "metadata", .mode = 0444, .show = show_metadata },
	{ .name = "can_clear", .mode = 0644, .show = show_can_clear, .store = store_can_clear,
	  .takes = "true (not while degraded) or false" },
};

const size_t rf_ctl_bitmap_nattrs = sizeof(rf_ctl_bitmap_attrs) / sizeof(rf_ctl_bitmap_attrs[0]);

const char *rf_ctl_takes(const char *rel)
{
	const struct rf_ctl_attr *at = NULL;
	const char *slash = strchr(rel, '/');

	if (!slash)
		at = rf_ctl_find(rel);
	else if (!strncmp(rel, RF_CTL_MD_BITMAP "/", slash - rel + 1) && !strchr(slash + 1, '/'))
		at = find_attr(rf_ctl_bitmap_attrs, rf_ctl_bitmap_nattrs, slash + 1);
	else if (!strncmp(rel, "dev-", 4) && !strchr(slash + 1, '/'))
		at = rf_ctl_dev_find(slash + 1);
	return at ? at->takes : NULL;
}

/* Whether at lives in md/bitmap/ (for messages). */
static bool is_bitmap_attr(const struct rf_ctl_attr *at)
{
	return at >= rf_ctl_bitmap_attrs && at < rf_ctl_bitmap_attrs + rf_ctl_bitmap_nattrs;
}

/* ---------------------------------------------------------------- mdstat */

/* /proc/mdstat with one array, md0.  md lists the members newest first,
 * which for an array assembled in role order is the highest role first;
 * the number in brackets is md's device number (a 1.x superblock's
 * dev_number: a spare that took over a slot keeps its own), (F) marks a
 * failed member and a missing one is not listed (md has no device to
 * name). */
/* mdstat's line for a reshape under way, as md prints it (the position
 * in KiB of each member, of the members' size), without md's speed and
 * finish (the walk keeps no rate); 0 without a reshape. */
static int reshape_line(struct rf_array *a, char *buf, size_t len)
{
	uint64_t done, total;
	unsigned permille, k, x;
	char bar[22];
	int n;

	buf[0] = '\0';
	if (!reshape_done(a, &done, &total))
		return 0;
	permille = total ? (unsigned)(done * 1000 / total) : 0;
	x = permille / 50;
	for (k = 0; k < 21; k++)
		bar[k] = k < x ? '=' : k == x ? '>' : '.';
	bar[21] = '\0';
	n = snprintf(buf, len, "[%s]  reshape =%3u.%u%% (%llu/%llu)", bar, permille / 10, permille % 10,
		     (unsigned long long)done / 2, (unsigned long long)total / 2);
	return n < 0 || (size_t)n >= len ? -EOVERFLOW : n;
}

static void show_mdstat(struct rf_array *a, const struct rf_array_info *i, int member, struct rf_ctl_buf *b)
{
	const char *meta = metadata_version(a, i);
	char line[256];
	int k;

	rf_ctl_printf(b, "Personalities : [raid0] [raid1] [raid10] [raid6] [raid5] [raid4] \n");
	rf_ctl_printf(b, "md0 : active%s raid%d", rf_array_readonly(a) ? " (read-only)" : "", i->level);
	/* md lists the devices newest first: spares (S) and failed ones (F)
	 * with the rest, each with its number. */
	for (k = rf_member_ndevs(a) - 1; k >= 0; k--) {
		struct rf_dev_info d;

		if (rf_member_info(a, k, &d) || (d.flags & RF_DEV_MISSING))
			continue;
		/* md's replacement has its slot's role: (R), not (S) */
		rf_ctl_printf(b, " %s[%d]%s%s", d.name, d.number, d.flags & RF_DEV_WRITE_MOSTLY ? "(W)" : "",
			      d.flags & RF_DEV_FAULTY	     ? "(F)" :
			      d.flags & RF_DEV_REPLACEMENT ? "(R)" :
			      d.slot < 0		     ? "(S)" :
							       "");
	}
	rf_ctl_printf(b, "\n      %llu blocks", (unsigned long long)(i->array_size / 1024));
	/* md names every format but its oldest, 0.90 */
	if (!meta)
		rf_ctl_printf(b, " super non-persistent");
	else if (strcmp(meta, "0.90"))
		rf_ctl_printf(b, " super %s", meta);
	rf_array_status(a, line, sizeof(line));
	rf_ctl_printf(b, "%s", line);
	rf_ctl_printf(b, "\n      ");
	/* md's progress line, while a resync, check or repair runs; with
	 * none running, a resync that is due (md's recovery_cp short of
	 * the end: not started, frozen, waiting for a rebuild, or refused)
	 * shows as md shows it. */
	if (reshape_line(a, line, sizeof(line)) > 0) {
		rf_ctl_printf(b, "%s\n      ", line);
	} else if (rf_level_has_sync_work(a) && rf_sync_progress_line(a, line, sizeof(line)) > 0) {
		rf_ctl_printf(b, "%s\n      ", line);
	} else if (rf_level_has_sync_work(a)) {
		struct rf_sync_status st;

		rf_sync_get(a, &st);
		if (st.resync_cp < st.total)
			rf_ctl_printf(b, "resync=PENDING\n      ");
	}
	/* md_bitmap_status(): pages of in-memory counters (2048 chunks
	 * each) in use, of all, and the chunk. */
	if (i->bitmap_chunk)
		rf_ctl_printf(b, "bitmap: %llu/%llu pages [%lluKB], %u%s chunk\n", (unsigned long long)i->bitmap_pages_used,
			      (unsigned long long)i->bitmap_pages, (unsigned long long)i->bitmap_pages_used * 4,
			      i->bitmap_chunk >= 1024 ? i->bitmap_chunk >> 10 : i->bitmap_chunk,
			      i->bitmap_chunk >= 1024 ? "KB" : "B");
	rf_ctl_printf(b, "\nunused devices: <none>\n");
}

const struct rf_ctl_attr rf_ctl_mdstat = { .name = "mdstat", .mode = 0444, .show = show_mdstat };

/* ---------------------------------------------------------------- show/store */

int rf_ctl_show(const struct rf_ctl_attr *at, struct rf_array *a, int member, char *buf, size_t size)
{
	struct rf_ctl_buf b = { .buf = buf, .size = size };
	struct rf_array_info info;

	if (!at->show)
		return -EACCES;         /* write-only */
	if (!size)
		return -EOVERFLOW;
	buf[0] = '\0';
	rf_array_get_info(a, &info);
	at->show(a, &info, member, &b);
	return b.overflow ? -EOVERFLOW : (int)b.len;
}

int rf_ctl_dev_show(const struct rf_ctl_attr *at, struct rf_array *a, const char *dev, char *buf, size_t size)
{
	struct rf_ctl_buf b = { .buf = buf, .size = size };
	struct rf_dev_info d;
	int ret;

	if (!size)
		return -EOVERFLOW;
	buf[0] = '\0';
	ret = dev_info_by_name(a, dev, &d);
	if (ret)
		return ret;
	at->show_dev(a, &d, &b);
	return b.overflow ? -EOVERFLOW : (int)b.len;
}

/* A value fit for a log line: printable, cut short. */
static void log_value(char *dst, size_t size, const char *val, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len && n + 4 < size; i++)
		dst[n++] = val[i] >= 0x20 && val[i] < 0x7f ? val[i] : '?';
	if (i < len) {
		dst[n - 3] = dst[n - 2] = dst[n - 1] = '.';
	}
	dst[n] = '\0';
}

/* One value for at, of the array (dev NULL) or of device dev. */
static int store_value(const struct rf_ctl_attr *at, struct rf_array *a, int member, const char *dev,
		       const char *buf, size_t len)
{
	char val[RF_CTL_VALUE_MAX + 1], shown[48], where[300];
	size_t vlen;
	int ret, n = 0;

	if (!at->set_int && !at->store && !at->store_dev)
		return -EACCES;
	if (dev)
		snprintf(where, sizeof(where), "md/dev-%s/%s", dev, at->name);
	else
		snprintf(where, sizeof(where), "md/%s%s", is_bitmap_attr(at) ? RF_CTL_MD_BITMAP "/" : "", at->name);
	ret = rf_ctl_parse_value(buf, len, val, sizeof(val), &vlen);
	log_value(shown, sizeof(shown), buf, vlen);
	if (ret == -E2BIG) {
		rf_warn("%s: refused a value of %zu bytes ('%s'): takes %s", where, vlen, shown, at->takes);
		return -EINVAL;
	}
	if (ret)
		ret = -EINVAL;          /* a NUL in the value */
	else if (at->set_int)
		ret = rf_ctl_parse_int(val, &n) ?: at->set_int(a, n);
	else if (dev)
		ret = at->store_dev(a, dev, val);
	else
		ret = at->store(a, member, val);
	if (ret == -EINVAL)
		rf_warn("%s: refused '%s': takes %s", where, shown, at->takes);
	else if (ret)
		rf_warn("%s: cannot set '%s': %s", where, shown, strerror(-ret));
	else if (at->set_int)
		rf_info("%s set to %d", where, n);
	else
		rf_info("%s set to '%s'", where, shown);
	return ret;
}

int rf_ctl_store(const struct rf_ctl_attr *at, struct rf_array *a, int member, const char *buf, size_t len)
{
	return store_value(at, a, member, NULL, buf, len);
}

int rf_ctl_dev_store(const struct rf_ctl_attr *at, struct rf_array *a, const char *dev, const char *buf,
		     size_t len)
{
	if (!at->store_dev)
		return -EACCES;
	if (rf_member_find(a, dev) < 0)
		return -ENOENT;
	return store_value(at, a, -1, dev, buf, len);
}

/* ---------------------------------------------------------------- who may */

int rf_ctl_may_open(const struct rf_ctl_cred *who, uid_t owner, gid_t group, unsigned mode, bool rd, bool wr)
{
	unsigned want = (rd ? 4u : 0u) | (wr ? 2u : 0u), bits;
	int i;

	if (who->uid == 0)
		return 0;               /* as CAP_DAC_OVERRIDE: root opens any file */
	if (who->uid == owner) {
		bits = mode >> 6;
	} else {
		bits = mode;
		if (who->gid == group)
			bits = mode >> 3;
		for (i = 0; who->groups && i < who->ngroups; i++)
			if (who->groups[i] == group)
				bits = mode >> 3;
	}
	return (bits & want) == want ? 0 : -EACCES;
}

int rf_ctl_may_store(const struct rf_ctl_cred *who, uid_t owner)
{
	return who->uid == owner || who->uid == 0 ? 0 : -EACCES;
}

/* The thread's own file system credentials, kept while it runs as a
 * writer. */
struct fs_cred {
	long fsuid, fsgid;
	gid_t *groups;
	int ngroups;
};

/* Raw system calls: glibc's setgroups() (and setfsuid's siblings
 * setresuid etc.) change every thread of the process; these change the
 * calling thread alone.  setfsuid(-1) changes nothing and returns the
 * current value. */
static long thread_setfsuid(long uid) { return syscall(SYS_setfsuid, uid); }
static long thread_setfsgid(long gid) { return syscall(SYS_setfsgid, gid); }
static long thread_setgroups(size_t n, const gid_t *g) { return syscall(SYS_setgroups, n, g); }

/* Back to the thread's own: if that fails the thread would serve other
 * requests as someone else, so it does not go on. */
static void cred_restore(struct fs_cred *c)
{
	thread_setfsuid(c->fsuid);
	thread_setfsgid(c->fsgid);
	if (thread_setfsuid(-1) != c->fsuid || thread_setfsgid(-1) != c->fsgid ||
	    thread_setgroups((size_t)c->ngroups, c->groups)) {
		rf_err("cannot take back the daemon's own credentials after a store: stopping");
		abort();
	}
	free(c->groups);
}

int rf_ctl_as_writer(const struct rf_ctl_cred *who, int (*fn)(void *arg), void *arg)
{
	struct fs_cred own = { 0 };
	int ret, n;

	if (geteuid() != 0)
		return fn(arg);
	n = getgroups(0, NULL);
	own.groups = n > 0 ? malloc((size_t)n * sizeof(gid_t)) : NULL;
	if (n < 0 || (n > 0 && !own.groups) || (n > 0 && (own.ngroups = getgroups(n, own.groups)) != n)) {
		free(own.groups);
		return -ENOMEM;
	}
	own.fsuid = thread_setfsuid(-1);
	own.fsgid = thread_setfsgid(-1);
	/* Groups and gid first: once the fsuid is not 0 the file system
	 * capabilities are gone (and come back with it). */
	if (thread_setgroups(who->groups ? (size_t)who->ngroups : 0, who->groups)) {
		rf_warn("cannot take the groups of uid %u for a store: %s", (unsigned)who->uid, strerror(errno));
		free(own.groups);
		return -EPERM;
	}
	thread_setfsgid(who->gid);
	thread_setfsuid(who->uid);
	if (thread_setfsgid(-1) != (long)who->gid || thread_setfsuid(-1) != (long)who->uid) {
		rf_warn("cannot take the credentials of uid %u gid %u for a store", (unsigned)who->uid,
			(unsigned)who->gid);
		cred_restore(&own);
		return -EPERM;
	}
	ret = fn(arg);
	cred_restore(&own);
	return ret;
}

struct store_job {
	const struct rf_ctl_attr *at;
	struct rf_array *a;
	int member;
	const char *dev, *buf;
	size_t len;
};

static int store_job_run(void *arg)
{
	struct store_job *j = arg;

	return j->dev ? rf_ctl_dev_store(j->at, j->a, j->dev, j->buf, j->len)
		      : rf_ctl_store(j->at, j->a, j->member, j->buf, j->len);
}

int rf_ctl_store_as(const struct rf_ctl_cred *who, uid_t owner, const struct rf_ctl_attr *at, struct rf_array *a,
		    int member, const char *dev, const char *buf, size_t len)
{
	struct store_job j = { .at = at, .a = a, .member = member, .dev = dev, .buf = buf, .len = len };
	int ret = rf_ctl_may_store(who, owner);

	if (ret) {
		if (dev)
			rf_warn("md/dev-%s/%s: uid %u may not write it (only its owner, uid %u, and root may)", dev,
				at->name, (unsigned)who->uid, (unsigned)owner);
		else
			rf_warn("md/%s%s: uid %u may not write it (only its owner, uid %u, and root may)",
				is_bitmap_attr(at) ? RF_CTL_MD_BITMAP "/" : "", at->name, (unsigned)who->uid,
				(unsigned)owner);
		return ret;
	}
	return at->as_writer ? rf_ctl_as_writer(who, store_job_run, &j) : store_job_run(&j);
}

/* ---------------------------------------------------------------- tree */

static int add_node(struct rf_ctl_tree *t, int cap, const char *name, int parent, enum rf_ctl_kind kind,
		    const struct rf_ctl_attr *attr, int member)
{
	struct rf_ctl_node *n;

	if (t->n >= cap)
		return -ENOMEM;
	n = &t->nodes[t->n];
	n->name = name;
	n->parent = parent;
	n->kind = kind;
	n->attr = attr;
	n->member = member;
	return t->n++;
}

int rf_ctl_tree_build(struct rf_array *a, struct rf_ctl_tree *t)
{
	const char *name = rf_array_name(a);
	int cap = 3 + 1 + (int)NATTRS + 1 + (int)rf_ctl_bitmap_nattrs, md, bitmap;
	size_t i;

	t->n = 0;
	t->nodes = NULL;
	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..") ||
	    rf_ctl_root_name_taken(name))
		return -EINVAL;
	t->nodes = calloc((size_t)cap, sizeof(*t->nodes));
	if (!t->nodes)
		return -ENOMEM;
	add_node(t, cap, "", 0, RF_CTL_DIR, NULL, -1);
	add_node(t, cap, name, 0, RF_CTL_IMAGE, NULL, -1);
	add_node(t, cap, RF_CTL_ROOT_MDSTAT, 0, RF_CTL_FILE, &rf_ctl_mdstat, -1);
	md = add_node(t, cap, RF_CTL_ROOT_MD, 0, RF_CTL_DIR, NULL, -1);
	/* Every attribute: which are there follows the level, which a
	 * takeover changes (rf_ctl_node_present()). */
	for (i = 0; i < NATTRS; i++)
		add_node(t, cap, rf_ctl_md_attrs[i].name, md, RF_CTL_FILE, &rf_ctl_md_attrs[i], -1);
	bitmap = add_node(t, cap, RF_CTL_MD_BITMAP, md, RF_CTL_DIR, NULL, -1);
	for (i = 0; i < rf_ctl_bitmap_nattrs; i++)
		add_node(t, cap, rf_ctl_bitmap_attrs[i].name, bitmap, RF_CTL_FILE, &rf_ctl_bitmap_attrs[i], -1);
	return 0;
}

void rf_ctl_tree_free(struct rf_ctl_tree *t)
{
	free(t->nodes);
	t->nodes = NULL;
	t->n = 0;
}

bool rf_ctl_node_present(const struct rf_array *a, const struct rf_ctl_node *n)
{
	return !n->attr || !n->attr->present || n->attr->present(a);
}

int rf_ctl_lookup(const struct rf_ctl_tree *t, const struct rf_array *a, int dir, const char *name)
{
	int i;

	if (dir < 0 || dir >= t->n || t->nodes[dir].kind != RF_CTL_DIR)
		return -ENOTDIR;
	for (i = 1; i < t->n; i++)
		if (t->nodes[i].parent == dir && !strcmp(t->nodes[i].name, name))
			return rf_ctl_node_present(a, &t->nodes[i]) ? i : -ENOENT;
	return -ENOENT;
}
