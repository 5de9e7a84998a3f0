/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_reshape.c - growing arrays online (services/reshape.c, reshape.h).
 *
 * Arrays made as `raidfuse create` makes them (1.2 superblocks, spares
 * named in the config), assembled as the daemon assembles them, filled
 * against a model (fixture.h), then grown with rf_reshape_grow():
 *  - what md refuses is refused, and nothing changes: fewer members,
 *    too few spares;
 *  - raid5 3 -> 4 and raid6 4 -> 6: while the reshape runs, random reads
 *    and writes go on against the model; at the end the array has the
 *    new size, the model's bytes and zeros after them, a check counts 0,
 *    and assembled again it is one geometry with the same bytes;
 *  - raid1 2 -> 3: the new slot is rebuilt from the spare while IO runs,
 *    the array is whole again with the model's bytes;
 *  - raid10 n2 4 -> 5, n2 2 -> 3 and o2 2 -> 3 as raid5's, each stopped
 *    part way (the array closed, as a daemon stops) and served again: it
 *    resumes from the position its superblocks recorded; a far layout, a
 *    spare short, fewer members than the image holds and an in-place
 *    relayout are refused; a raid10 n2 of 5 shrunk to 4 as raid5's
 *    shrink below;
 *  - raid5 of 4 -> raid6 of 5 (rf_reshape_level()): the same, the size
 *    unchanged, assembled again a raid6 of md's left-symmetric layout;
 *    md/level refuses other levels and a change without a spare;
 *  - raid5 left-symmetric -> right-asymmetric and raid6 64K -> 128K chunks
 *    (rf_reshape_layout()): the same members restriped, the same checks;
 *    a chunk the component size is not a multiple of is refused;
 *  - md's takeovers that move no data (rf_reshape_level()): raid4 -> raid5
 *    parity-last -> raid4, and a raid6 relayed out to left-symmetric-6
 *    -> raid5 of one member fewer (that one a spare): each with the
 *    model's bytes, check 0, and assembled again as the new level;
 *  - a raid1 of 3 shrunk to 2 (md's raid1_reshape): refused while all
 *    three slots hold a device; with the middle one failed and removed,
 *    the third moves into its slot: the model, assembled again as 2;
 *  - a member failed mid-grow (raid5 3 -> 4, raid6 4 -> 5, raid10 n2
 *    4 -> 5): the walk goes
 *    on degraded, no spare takes the slot until it ended, then one is
 *    rebuilt: the model, check 0, assembled again the same;
 *  - a write into rows the walk moved but has not recorded yet has the
 *    position recorded before it goes on (test_record_first);
 *  - a raid5 3 -> 4 grow with no room before the data (data offset 12K):
 *    refused without a backup file; with one, the data stays in place and
 *    the walk is halted (RAIDFUSE_TEST_HALT=reshape-backup) right after the
 *    new rows of its first window, before the position moves: the state a
 *    crash there leaves.  Assembled again without the file it is refused
 *    (naming --backup-file), with a file that holds no header or another
 *    array's it is refused naming the file; with it, the backup is written back before the
 *    array serves, the walk goes on to the end under IO: the model, check
 *    0, the backup file removed (mdadm removes it; it was still there
 *    while the walk stood halted) and no longer named by the array (one
 *    it names no more is not dropped), assembled again one geometry
 *    (test_backup); the same for a raid5
 *    relayout in place (left-symmetric -> right-asymmetric), each of
 *    whose windows goes through the backup file (test_backup_relayout);
 *    the grow's file rewritten as mdadm's two parts (md_backup_data-2: the
 *    later rows in part 0 at the data's start, the earlier ones in part 1,
 *    devstart2 sectors further on): both are written back, the same model
 *    (test_backup_sections; control: part 1's data damaged, on copies of
 *    the members, and the model differs); parts with rows between them
 *    are refused, naming the file.
 * Negative control: one byte changed behind the grown array on a member
 * (a data column) is found by the model comparison or by the check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "fixture.h"
#include "raidfuse/backup.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/le.h"
#include "raidfuse/log.h"
#include "raidfuse/create.h"
#include "raidfuse/ctl.h"
#include "raidfuse/reshape.h"
#include "raidfuse/resize.h"
#include "raidfuse/sync.h"
#include "testreq.h"

#define MEMBER_SIZE "8M"

/* The bitmap chunk make() gives new arrays (0: none). */
static uint64_t bitmap_chunk;

/* fx_dir/<what>.conf with n members and nspare spares, an internal
 * bitmap of bitmap_chunk bytes if that is set. */
static void make(const char *what, int level, int n, int nspare, char (*paths)[FX_PATH])
{
	fx_create_md(what, level, n, nspare, MEMBER_SIZE, bitmap_chunk, paths);
}

/* The array on paths[0..n), started and serving. */
static struct rf_array *serve(char (*paths)[FX_PATH], int n)
{
	return fx_serve_md(paths, n);
}

static bool reshaping(struct rf_array *a)
{
	uint64_t pos;
	bool back;

	return rf_array_reshape(a, &pos, &back);
}

static int degraded(struct rf_array *a)
{
	struct rf_array_info info;

	rf_array_get_info(a, &info);
	return info.degraded;
}

/* Full speed: the reshape and any rebuild after it to their end (60 s
 * at most). */
static void to_end(struct rf_array *a)
{
	int i;

	assert_int_equal(rf_sync_set_speed_max(a, 0), 0);
	assert_int_equal(rf_sync_set_speed_min(a, 0), 0);
	for (i = 0; i < 6000 && (reshaping(a) || degraded(a)); i++)
		usleep(10000);
	assert_false(reshaping(a));
}

static void check_zero(struct rf_array *a)
{
	struct rf_sync_status st;

	assert_int_equal(rf_sync_request(a, RF_SYNC_CHECK), 0);
	rf_sync_wait(a);
	rf_sync_get(a, &st);
	assert_int_equal(st.mismatch_cnt, 0);
}

static void test_refused(void **state)
{
	char paths[6][FX_PATH], err[512];
	struct rf_array_info before, after;
	struct rf_array *a;

	(void)state;
	make("ref5", 5, 3, 0, paths);
	a = serve(paths, 3);
	rf_array_get_info(a, &before);
	assert_int_equal(rf_reshape_grow(a, 4, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "0 spare(s) to grow from 3 to 4 members, 1 needed"));
	/* Fewer members: the image must be cut first (md/array_size), and
	 * the data needs a chunk free after it to move up. */
	assert_int_equal(rf_reshape_grow(a, 2, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "set md/array_size first"));
	assert_int_equal(rf_resize_array(a, before.array_size / 2, err, sizeof(err)), 0);
	assert_int_equal(rf_reshape_grow(a, 2, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, "make md/component_size a chunk smaller first"));
	assert_int_equal(rf_resize_array(a, 0, err, sizeof(err)), 0);
	assert_int_equal(rf_reshape_grow(a, 3, err, sizeof(err)), 0);     /* as it is */
	assert_int_equal(rf_reshape_level(a, 6, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "0 spare(s) to grow from 3 to 4 members, 1 needed"));
	assert_int_equal(rf_reshape_level(a, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "raid5 to raid0: md takes over a raid5 of the parity-last layout only"));
	assert_int_equal(rf_reshape_level(a, 10, err, sizeof(err)), -EOPNOTSUPP);
	assert_non_null(strstr(err, "raid5 to raid10: not a change md makes"));
	assert_int_equal(rf_reshape_level(a, 4, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "parity-last layout only"));
	assert_int_equal(rf_reshape_level(a, 5, err, sizeof(err)), 0);    /* as it is */
	assert_int_equal(rf_reshape_layout(a, 2, 128, err, sizeof(err)), 0);     /* as it is */
	rf_array_close(a);
	/* Stripe heads of 64K (tuning.stripe_size): no chunk below them. */
	fx_stripe_size = 64 << 10;
	a = serve(paths, 3);
	fx_stripe_size = 0;
	assert_int_equal(rf_reshape_layout(a, -1, 64, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "a chunk of 32K is smaller than the stripe heads' 64K"));
	assert_false(reshaping(a));
	/* 8M members less the data offset: 7M, not a multiple of 2M */
	assert_int_equal(rf_reshape_layout(a, -1, 4096, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "is not a multiple of the chunk size 2048K"));
	rf_array_get_info(a, &after);
	assert_false(reshaping(a));
	assert_int_equal(after.raid_disks, before.raid_disks);
	assert_int_equal(after.array_size, before.array_size);
	rf_array_close(a);
	/* raid10 as md refuses it: a spare short, fewer members (md's
	 * backward raid10 reshape: not here), a far layout */
	make("ref10", 10, 4, 1, paths);
	a = serve(paths, 5);
	rf_array_get_info(a, &before);
	assert_int_equal(rf_reshape_grow(a, 6, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "1 spare(s) to grow from 4 to 6 members, 2 needed"));
	assert_int_equal(rf_reshape_grow(a, 3, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "set md/array_size first"));
	assert_int_equal(rf_reshape_grow(a, 1, err, sizeof(err)), -EINVAL);       /* fewer than the copies */
	/* md's in-place raid10 restripes (near <-> offset, a new chunk) */
	assert_int_equal(rf_reshape_layout(a, 0x10201, 0, err, sizeof(err)), -EOPNOTSUPP);
	assert_non_null(strstr(err, "member count only"));
	assert_int_equal(rf_reshape_layout(a, -1, 256, err, sizeof(err)), -EOPNOTSUPP);
	rf_array_get_info(a, &after);
	assert_false(reshaping(a));
	assert_int_equal(after.raid_disks, 4);
	assert_int_equal(after.array_size, before.array_size);
	rf_array_close(a);
	fx_md_layout = "f2";
	make("ref10f", 10, 4, 1, paths);
	fx_md_layout = NULL;
	a = serve(paths, 5);
	assert_int_equal(rf_reshape_grow(a, 5, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "Cannot reshape RAID10 in far-mode"));
	assert_false(reshaping(a));
	rf_array_close(a);
}

/* Grow what (level, n members, nspare spares) to n + nspare members with
 * IO against the model while the reshape runs; then check it all. */
enum change { GROW, TO_RAID6, LAYOUT_RA, CHUNK_128K };

static int start(struct rf_array *a, enum change how, int raid_disks, char *err, size_t errlen)
{
	switch (how) {
	case TO_RAID6:
		return rf_reshape_level(a, 6, err, errlen);
	case LAYOUT_RA:
		return rf_reshape_layout(a, 1, 0, err, errlen);
	case CHUNK_128K:
		return rf_reshape_layout(a, -1, 256, err, errlen);
	default:
		return rf_reshape_grow(a, raid_disks, err, errlen);
	}
}

/* An array made and served (n members, nspare spares), filled against a
 * model of room for twice its size, syncs slow enough that IO meets the
 * reshape under way. */
static struct rf_array *filled(const char *what, int level, int n, int nspare, char (*paths)[FX_PATH],
			       uint64_t *old, char **model)
{
	struct rf_array *a;

	make(what, level, n, nspare, paths);
	a = serve(paths, n + nspare);
	*old = rf_array_size(a);
	/* Zeros past the old end: what the array reads there once it grew
	 * (IO may reach there as soon as it has, before the test sees it). */
	*model = calloc(2, *old);
	assert_non_null(*model);
	fx_model_fill(a, *model, 256 << 10, 50);
	assert_int_equal(rf_sync_set_speed_max(a, 4096), 0);
	assert_int_equal(rf_sync_set_speed_min(a, 4096), 0);
	return a;
}

/* The array stopped (closed, as a daemon stops) mid-reshape and served
 * again from its members: it resumes from the position its superblocks
 * recorded, at or below where the walk was. */
static struct rf_array *stop_and_resume(struct rf_array *a, char (*paths)[FX_PATH], int n, const char *what)
{
	uint64_t pos, rec = rf_array_reshape_recorded(a), at, again;
	bool back;

	/* Held first: a window under way when the array closes would move
	 * the position past the one read here. */
	assert_int_equal(rf_reshape_hold(a, 30000), 0);
	rf_array_reshape(a, &pos, &back);
	rf_array_close(a);
	a = serve(paths, n);
	if (!rf_array_reshape(a, &again, &back))
		fail_msg("%s: served again, no reshape under way (stopped at %llu, recorded %llu)", what,
			 (unsigned long long)pos, (unsigned long long)rec);
	at = rf_array_reshape_recorded(a);
	assert_true(at >= rec && at <= pos);
	assert_int_equal(rf_sync_set_speed_max(a, 4096), 0);
	assert_int_equal(rf_sync_set_speed_min(a, 4096), 0);
	print_message("%s: stopped at array sector %llu (recorded %llu), resumed from %llu\n", what,
		      (unsigned long long)pos, (unsigned long long)rec, (unsigned long long)at);
	return a;
}

/* With resume_at (0: never), the array is stopped and served again once
 * the walk passed that array sector. */
static void grow_resumed(const char *what, int level, int n, int nspare, enum change how, uint64_t resume_at)
{
	char paths[RF_MAX_MEMBERS][FX_PATH], err[512];
	struct rf_array_info info;
	uint64_t old, size, pos;
	struct rf_array *a;
	char *model;
	int rounds = 0;
	bool back;

	a = filled(what, level, n, nspare, paths, &old, &model);
	if (start(a, how, n + nspare, err, sizeof(err)))
		fail_msg("%s: grow refused: %s", what, err);
	rf_array_get_info(a, &info);
	assert_int_equal(info.raid_disks, n + nspare);
	if (level != 1)
		assert_true(reshaping(a));
	/* IO until the end, or until it is stopped and resumed (30 s at
	 * most) */
	while ((reshaping(a) || degraded(a)) && (rounds < 200 || (resume_at && rounds < 3000))) {
		assert_int_equal(fx_model_io(a, model, 20, 64 << 10), 0);
		if (resume_at && rf_array_reshape(a, &pos, &back) && pos >= resume_at) {
			a = stop_and_resume(a, paths, n + nspare, what);
			resume_at = 0;
		} else if (resume_at) {
			usleep(10000);
		}
		rounds++;
	}
	if (resume_at)
		fail_msg("%s: the reshape ended before array sector %llu", what, (unsigned long long)resume_at);
	to_end(a);
	assert_int_equal(rf_array_faulty(a), 0);
	rf_sync_wait(a);
	size = rf_array_size(a);
	if (level == 1 || how != GROW)
		assert_int_equal(size, old);
	else
		assert_true(size > old && size <= 2 * old);
	/* IO over all of it, the grown part too (the model's zeros there
	 * are what it reads until written) */
	assert_int_equal(fx_model_io(a, model, 40, 64 << 10), 0);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	check_zero(a);
	rf_array_close(a);
	/* Assembled again: the new count, one geometry, the same bytes. */
	a = serve(paths, n + nspare);
	assert_false(reshaping(a));
	rf_array_get_info(a, &info);
	assert_int_equal(info.raid_disks, n + nspare);
	assert_int_equal(info.degraded, 0);
	assert_int_equal(info.level, how == TO_RAID6 ? 6 : level);
	if (how == TO_RAID6)
		assert_int_equal(info.layout, 2);       /* md's raid6 left-symmetric, as the raid5's */
	if (how == LAYOUT_RA)
		assert_int_equal(info.layout, 1);
	if (level != 1)
		assert_int_equal(info.chunk_bytes, how == CHUNK_128K ? 128 << 10 : 64 << 10);
	assert_int_equal(rf_array_size(a), size);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	rf_array_close(a);
	/* Negative control: a byte of member 0's data area changed behind
	 * the array shows (its data offset is 1664 sectors or more). */
	{
		int fd = open(paths[0], O_RDWR);
		char b;

		assert_true(fd >= 0);
		assert_int_equal(pread(fd, &b, 1, 4 << 20), 1);
		b ^= 0x5a;
		assert_int_equal(pwrite(fd, &b, 1, 4 << 20), 1);
		close(fd);
	}
	a = serve(paths, n + nspare);
	if (!fx_model_diff(a, model, 1 << 20)) {
		struct rf_sync_status st;

		assert_int_equal(rf_sync_request(a, RF_SYNC_CHECK), 0);
		rf_sync_wait(a);
		rf_sync_get(a, &st);
		assert_true(st.mismatch_cnt > 0);
	}
	rf_array_close(a);
	free(model);
	print_message("%s: reshaped (%d members -> %d) while %d rounds of IO ran\n", what, n, n + nspare, rounds);
}

static void grow(const char *what, int level, int n, int nspare, enum change how)
{
	grow_resumed(what, level, n, nspare, how, 0);
}

/* A shrink as mdadm runs one: raid5 (raid6, raid10) of n to n - 1 members,
 * md/array_size set to what n - 1 hold once the component size is a
 * chunk smaller (room for the data to move up), then md/raid_disks:
 * the walk goes backwards from the end with IO against the model; at the
 * end the last slot's device is a spare, the image the size set, the
 * model's bytes, check 0; assembled again (the spare listed) the same. */
static void shrink(const char *what, int level, int n)
{
	char paths[8][FX_PATH], err[512], *model;
	struct rf_array_info info;
	struct rf_array *a;
	uint64_t old, comp, keep;
	struct rf_geom to;
	int rounds = 0;

	make(what, level, n, 0, paths);
	a = serve(paths, n);
	old = rf_array_size(a);
	comp = rf_array_geom(a)->dev_sectors;
	model = malloc(old);
	assert_non_null(model);
	fx_model_fill(a, model, 256 << 10, 50);
	/* what n - 1 members of a chunk less hold */
	to = *rf_array_geom(a);
	to.raid_disks = n - 1;
	to.dev_sectors = comp - 128;
	assert_int_equal(rf_geom_init(&to, err, sizeof(err)), 0);
	keep = to.array_sectors * 512;
	assert_int_equal(rf_resize_array(a, keep, err, sizeof(err)), 0);
	assert_int_equal(rf_resize_component(a, comp - 128, err, sizeof(err)), 0);
	assert_int_equal(rf_sync_set_speed_max(a, 4096), 0);
	assert_int_equal(rf_sync_set_speed_min(a, 4096), 0);
	if (rf_reshape_grow(a, n - 1, err, sizeof(err)))
		fail_msg("%s: shrink to %d: %s", what, n - 1, err);
	assert_true(reshaping(a));
	while (reshaping(a) && rounds < 200) {
		assert_int_equal(fx_model_io(a, model, 20, 64 << 10), 0);
		rounds++;
	}
	to_end(a);
	rf_sync_wait(a);
	rf_array_get_info(a, &info);
	assert_int_equal(info.raid_disks, n - 1);
	assert_int_equal(info.degraded, 0);
	assert_int_equal(rf_array_size(a), keep);
	assert_true(rf_dev_get(a, n - 1)->flags == RF_DEV_SPARE);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	check_zero(a);
	rf_array_close(a);
	a = serve(paths, n);
	assert_false(reshaping(a));
	rf_array_get_info(a, &info);
	assert_int_equal(info.raid_disks, n - 1);
	assert_int_equal(rf_array_size(a), keep);
	assert_true(rf_dev_get(a, n - 1)->flags == RF_DEV_SPARE);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	check_zero(a);
	rf_array_close(a);
	free(model);
	print_message("%s: shrunk (%d members -> %d) while %d rounds of IO ran\n", what, n, n - 1, rounds);
}

static void test_shrink5(void **state)
{
	(void)state;
	shrink("s5", 5, 4);
}

static void test_shrink6(void **state)
{
	(void)state;
	shrink("s6", 6, 5);
}

/* md's backward raid10 reshape: n2 of 5 -> 4, the data offsets a chunk
 * higher. */
static void test_shrink10(void **state)
{
	(void)state;
	shrink("s10", 10, 5);
}

static void test_raid5(void **state)
{
	(void)state;
	grow("g5", 5, 3, 1, GROW);
}

static void test_raid6(void **state)
{
	(void)state;
	grow("g6", 6, 4, 2, GROW);
}

static void test_raid1(void **state)
{
	(void)state;
	grow("g1", 1, 2, 1, GROW);
}

/* raid10 grown by members as md grows one (near and offset copies),
 * stopped and served again part way: it resumes from its recorded
 * position and ends with the model's bytes. */
static void test_raid10(void **state)
{
	(void)state;
	grow_resumed("g10", 10, 4, 1, GROW, 4096);
}

static void test_raid10_two(void **state)
{
	(void)state;
	grow_resumed("g10b", 10, 2, 1, GROW, 2048);
	fx_md_layout = "o2";
	grow_resumed("g10o", 10, 2, 1, GROW, 2048);
	fx_md_layout = NULL;
}

static void test_raid5to6(void **state)
{
	(void)state;
	grow("g56", 5, 4, 1, TO_RAID6);
}

static void test_relayout(void **state)
{
	(void)state;
	grow("gl", 5, 4, 0, LAYOUT_RA);
}

static void test_rechunk(void **state)
{
	(void)state;
	grow("gc", 6, 5, 0, CHUNK_128K);
}

/* Wait for a reshape to end (the walk at full speed). */
static void settle(struct rf_array *a)
{
	int i;

	assert_int_equal(rf_sync_set_speed_max(a, 0), 0);
	for (i = 0; i < 6000 && reshaping(a); i++)
		usleep(10000);
	assert_false(reshaping(a));
	rf_sync_wait(a);
}

/* The array on paths[0..n) as level over raid_disks, the model's bytes. */
static void is_level(char (*paths)[FX_PATH], int n, int level, int raid_disks, const char *model)
{
	struct rf_array_info info;
	struct rf_array *a = serve(paths, n);

	rf_array_get_info(a, &info);
	assert_int_equal(info.level, level);
	assert_int_equal(info.raid_disks, raid_disks);
	assert_int_equal(info.degraded, 0);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	check_zero(a);
	rf_array_close(a);
}

static void test_takeover(void **state)
{
	char paths[RF_MAX_MEMBERS][FX_PATH], err[512];
	struct rf_array_info info;
	struct rf_array *a;
	char *model;

	(void)state;
	/* raid4 -> raid5 parity-last -> raid4 */
	make("t4", 4, 4, 0, paths);
	a = serve(paths, 4);
	model = malloc(rf_array_size(a));
	assert_non_null(model);
	fx_model_fill(a, model, 256 << 10, 50);
	if (rf_reshape_level(a, 5, err, sizeof(err)))
		fail_msg("raid4 -> raid5: %s", err);
	rf_array_get_info(a, &info);
	assert_int_equal(info.level, 5);
	assert_int_equal(info.layout, 5);
	assert_false(reshaping(a));
	assert_int_equal(fx_model_io(a, model, 20, 64 << 10), 0);
	rf_array_close(a);
	is_level(paths, 4, 5, 4, model);
	a = serve(paths, 4);
	if (rf_reshape_level(a, 4, err, sizeof(err)))
		fail_msg("raid5 -> raid4: %s", err);
	rf_array_close(a);
	is_level(paths, 4, 4, 4, model);
	free(model);
	/* raid6 left-symmetric -> left-symmetric-6 (a relayout), -> raid5 */
	make("t6", 6, 5, 0, paths);
	a = serve(paths, 5);
	model = malloc(rf_array_size(a));
	assert_non_null(model);
	fx_model_fill(a, model, 256 << 10, 50);
	assert_int_equal(rf_reshape_level(a, 5, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "a \"-6\" layout"));
	if (rf_reshape_layout(a, 18, 0, err, sizeof(err)))
		fail_msg("raid6 -> left-symmetric-6: %s", err);
	settle(a);
	if (rf_reshape_level(a, 5, err, sizeof(err)))
		fail_msg("raid6 -> raid5: %s", err);
	rf_array_get_info(a, &info);
	assert_int_equal(info.level, 5);
	assert_int_equal(info.layout, 2);
	assert_int_equal(info.raid_disks, 4);
	assert_int_equal(info.degraded, 0);
	assert_int_equal(fx_model_io(a, model, 20, 64 << 10), 0);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	rf_array_close(a);
	/* the fifth member is a spare now */
	is_level(paths, 5, 5, 4, model);
	free(model);
}

static void test_raid1_shrink(void **state)
{
	char paths[RF_MAX_MEMBERS][FX_PATH], err[512], name[64];
	const struct rf_ctl_attr *st = rf_ctl_dev_find("state");
	struct rf_array_info info;
	struct rf_array *a;
	char *model;

	(void)state;
	make("s1", 1, 3, 0, paths);
	a = serve(paths, 3);
	model = malloc(rf_array_size(a));
	assert_non_null(model);
	fx_model_fill(a, model, 256 << 10, 50);
	assert_int_equal(rf_reshape_grow(a, 2, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "3 slots hold a device, more than 2"));
	snprintf(name, sizeof(name), "%s", strrchr(paths[1], '/') + 1);
	assert_int_equal(rf_ctl_dev_store(st, a, name, "faulty", 6), 0);
	assert_int_equal(rf_ctl_dev_store(st, a, name, "remove", 6), 0);
	if (rf_reshape_grow(a, 2, err, sizeof(err)))
		fail_msg("raid1 3 -> 2: %s", err);
	rf_array_get_info(a, &info);
	assert_int_equal(info.raid_disks, 2);
	assert_int_equal(info.degraded, 0);
	assert_int_equal(fx_model_io(a, model, 20, 64 << 10), 0);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	rf_array_close(a);
	/* members 0 and 2, the second now in slot 1 */
	memcpy(paths[1], paths[2], FX_PATH);
	a = serve(paths, 2);
	rf_array_get_info(a, &info);
	assert_int_equal(info.raid_disks, 2);
	assert_int_equal(info.degraded, 0);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	check_zero(a);
	rf_array_close(a);
	free(model);
}

/* A member fails while the reshape runs: the walk goes on degraded (md's
 * does), computing its old chunks from their rows; no spare takes the
 * slot until the reshape ended, then one is rebuilt into it.  IO against
 * the model throughout; the model at the end, and assembled again.
 * raid5 3 -> 4 (a spare left over: rebuilt after, check 0) and raid6
 * 4 -> 5 (the same, two parities). */
static void grow_degraded(const char *what, int level, int n, int fail_slot)
{
	char paths[RF_MAX_MEMBERS][FX_PATH], err[512];
	uint64_t old, size, pos;
	struct rf_array *a;
	bool back, failed = false;
	char *model;
	int rounds = 0;

	a = filled(what, level, n, 2, paths, &old, &model);
	if (rf_reshape_grow(a, n + 1, err, sizeof(err)))
		fail_msg("%s: grow refused: %s", what, err);
	while (rf_array_reshape(a, &pos, &back) && rounds < 400) {
		if (!failed && pos > 0) {
			/* as md/dev-NAME/state "faulty" does it: drained, never
			 * in the middle of the walk's end (which changes the
			 * geometry the failure is judged by) */
			const char *name = strrchr(paths[fail_slot], '/');

			assert_int_equal(rf_memberctl_set_state(a, name ? name + 1 : paths[fail_slot], "faulty"), 0);
			failed = true;
		}
		assert_int_equal(fx_model_io(a, model, 20, 64 << 10), 0);
		if (failed && rf_array_reshape(a, &pos, &back))
			assert_int_equal(degraded(a), 1);       /* the spare waits */
		rounds++;
	}
	assert_true(failed);
	to_end(a);
	assert_int_equal(degraded(a), 0);
	rf_sync_wait(a);
	size = rf_array_size(a);
	assert_true(size > old && size <= 2 * old);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	check_zero(a);
	rf_array_close(a);
	memcpy(paths[fail_slot], paths[n + 1], FX_PATH);        /* the spare took its slot */
	a = serve(paths, n + 1);
	assert_false(reshaping(a));
	assert_int_equal(degraded(a), 0);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	rf_array_close(a);
	free(model);
	print_message("%s: slot %d failed mid-reshape; degraded to the end, rebuilt after (%d rounds of IO)\n", what,
		      fail_slot, rounds);
}

static void test_degraded(void **state)
{
	(void)state;
	grow_degraded("d5", 5, 3, 1);
	grow_degraded("d6", 6, 4, 0);
	grow_degraded("d10", 10, 4, 2);
}

/* The walk runs ahead of the recorded position between records; a write
 * into the rows between has the position recorded before it goes on (a
 * crash would read them from the old geometry).  The walk is frozen with
 * rows moved but not recorded (retried until the recorder left some), a
 * write lands in them, and the recorded position is then past it; the
 * model holds after the end.  Under RAIDFUSE_TEST_BREAK=reshape-lazy (the
 * write goes on unrecorded) the recorded position stays below the write:
 * this test fails. */
static void test_record_first(void **state)
{
	char paths[RF_MAX_MEMBERS][FX_PATH], err[512], *model, buf[4096];
	uint64_t old, pos, rec = 0, at = 0;
	struct rf_array *a;
	bool back, found = false;
	int tries;

	(void)state;
	a = filled("rf5", 5, 3, 1, paths, &old, &model);
	if (rf_reshape_grow(a, 4, err, sizeof(err)))
		fail_msg("grow refused: %s", err);
	for (tries = 0; tries < 60 && !found && reshaping(a); tries++) {
		/* a window or more (a frozen walk looks again every 100 ms) */
		assert_int_equal(rf_sync_request(a, RF_SYNC_IDLE), 0);
		usleep(150000 + 50000 * (tries % 4));
		/* the window under way ends, the recorder's write too */
		assert_int_equal(rf_reshape_hold(a, 30000), 0);
		usleep(50000);
		rec = rf_array_reshape_recorded(a);
		if (!rf_array_reshape(a, &pos, &back) || pos < rec + 16)
			continue;
		at = (rec + (pos - rec) / 2) / 8 * 8;
		found = at >= rec && at + 8 <= pos;
	}
	if (!found)
		fail_msg("no unrecorded rows seen in %d tries (recorded %llu, position %llu)", tries,
			 (unsigned long long)rec, (unsigned long long)pos);
	memset(buf, 0xa5, sizeof(buf));
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, at * 512, sizeof(buf), buf), 0);
	memcpy(model + at * 512, buf, sizeof(buf));
	if (rf_array_reshape_recorded(a) < at + 8)
		fail_msg("a write at array sector %llu (rows moved, recorded up to %llu) went on with the "
			 "superblocks recording %llu", (unsigned long long)at, (unsigned long long)rec,
			 (unsigned long long)rf_array_reshape_recorded(a));
	print_message("rf5: a write at %llu, between the recorded position %llu and the walk's %llu, had %llu "
		      "recorded first (%d tries)\n", (unsigned long long)at, (unsigned long long)rec,
		      (unsigned long long)pos, (unsigned long long)rf_array_reshape_recorded(a), tries);
	assert_int_equal(rf_sync_request(a, RF_SYNC_IDLE), 0);
	to_end(a);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	rf_array_close(a);
	free(model);
}

/* The bitmap header and bits of device i of a, as its file holds them
 * (header first: RF_BITMAP_SB_BYTES), into buf of len bytes. */
static void bitmap_of(struct rf_array *a, int i, uint8_t *buf, size_t len)
{
	const struct rf_dev *d = rf_dev_get(a, i);
	int fd = open(d->path, O_RDONLY);

	assert_true(fd >= 0);
	assert_true(d->bm_has);
	assert_int_equal(pread(fd, buf, len, (off_t)d->bm_at), (ssize_t)len);
	close(fd);
}

/* A raid5 with an internal bitmap (64 KiB chunks) grown 3 -> 4 as
 * test_raid5 (IO against the model during the walk, the model at the
 * end, check 0, assembled again): md keeps a bitmap through a reshape.
 * The new member carries the same bitmap as the others (header and bits
 * byte for byte), and the array assembled again loads it. */
static void test_bitmap_grow(void **state)
{
	char paths[RF_MAX_MEMBERS][FX_PATH];
	uint8_t b0[4096], b3[4096];
	struct rf_array *a;

	(void)state;
	bitmap_chunk = 64 << 10;
	grow("gb", 5, 3, 1, GROW);
	bitmap_chunk = 0;
	for (int i = 0; i < 4; i++)
		fx_member_path(paths[i], FX_PATH, "gb", i);
	a = serve(paths, 4);
	assert_non_null(rf_array_bitmap(a));
	bitmap_of(a, 0, b0, sizeof(b0));
	bitmap_of(a, 3, b3, sizeof(b3));
	assert_int_equal(memcmp(b0, "bitm", 4), 0);
	assert_memory_equal(b0, b3, sizeof(b0));
	rf_array_close(a);
}

/* raid5 of 4 -> raid6 of 5 and a raid5 shrink 4 -> 3 (backwards, the
 * data moving up), each with a bitmap: as without one. */
static void test_bitmap_other(void **state)
{
	(void)state;
	bitmap_chunk = 64 << 10;
	grow("gb6", 5, 4, 1, TO_RAID6);
	shrink("sb5", 5, 4);
	bitmap_chunk = 0;
}

/* The sync size (sectors) the bitmap header in member file path records
 * (1.2 superblock at 4 KiB, the bitmap 8 sectors after it: fx_create_md()). */
static uint64_t bitmap_sync_size(const char *path)
{
	uint8_t b[RF_BITMAP_SB_BYTES];
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, b, sizeof(b), 16 * 512), (ssize_t)sizeof(b));
	close(fd);
	assert_int_equal(memcmp(b, "bitm", 4), 0);
	return rf_get_le64(b + 40);     /* bitmap_super_t.sync_size */
}

/* Whether the bit of chunk c is set in the bitmap device 0 of a holds. */
static bool bit_on_disk(struct rf_array *a, uint64_t c)
{
	uint8_t b[RF_BITMAP_SB_BYTES + 512];

	assert_true(RF_BITMAP_SB_BYTES + c / 8 < sizeof(b));
	bitmap_of(a, 0, b, sizeof(b));
	return b[RF_BITMAP_SB_BYTES + c / 8] & (1u << (c % 8));
}

/* Every bit of a's bitmap cleared (the bitmap's clock sped up), then
 * held: none is cleared until rf_bitmap_ctl_can_clear(a, true). */
static void bits_clear_held(struct rf_array *a)
{
	struct rf_bitmap_status st;
	int i;

	assert_int_equal(rf_bitmap_ctl_time_base(a, 10), 0);
	for (i = 0; i < 500; i++) {
		rf_bitmap_get(rf_array_bitmap(a), &st);
		if (!st.dirty)
			break;
		usleep(10000);
	}
	assert_int_equal(st.dirty, 0);
	assert_int_equal(rf_bitmap_ctl_can_clear(a, false), 0);
}

/* raid10's bits count array sectors, so a reshape that changes its size
 * resizes the bitmap before the superblocks record it (md's
 * raid10_start_reshape).  An n2 of 4 with an internal bitmap (64 KiB
 * chunks) grown to 5: as soon as the grow begins, the running bitmap and
 * every member's header cover the new size, the grown chunks marked as
 * needing a resync (md's marks, which kernel md continuing relies on); stopped part way and served
 * again, the bitmap loads at that size; to the end against the model
 * (check 0); a write to the last chunk of the grown image then sets that
 * chunk's bit on disk.  An n2 of 5 shrunk to 4 with a bitmap: as without
 * one, its bitmap at the smaller size.  Under
 * RAIDFUSE_TEST_BREAK=reshape-bitmap-size (no resize) the bitmap keeps
 * the old size and the grown part's write sets no bit: this test fails. */
static void test_bitmap_raid10(void **state)
{
	char paths[RF_MAX_MEMBERS][FX_PATH], err[512], *model, buf[4096];
	uint64_t old, at, full, on_disk[5];
	struct rf_bitmap_status st, st2;
	struct rf_array *a;
	int i;

	(void)state;
	bitmap_chunk = 64 << 10;
	a = filled("gb10", 10, 4, 1, paths, &old, &model);
	bitmap_chunk = 0;
	assert_int_equal(rf_sync_request(a, RF_SYNC_FROZEN), 0);
	if (rf_reshape_grow(a, 5, err, sizeof(err)))
		fail_msg("grow refused: %s", err);
	rf_bitmap_get(rf_array_bitmap(a), &st);
	for (i = 0; i < 5; i++)
		on_disk[i] = bitmap_sync_size(paths[i]);
	/* stopped part way and served again: the bitmap loads at the size
	 * the reshape gave it, not the smaller one the array serves */
	assert_int_equal(rf_sync_request(a, RF_SYNC_IDLE), 0);
	for (i = 0; i < 3000 && rf_array_reshape_recorded(a) < 2048; i++)
		usleep(10000);
	a = stop_and_resume(a, paths, 5, "gb10");
	rf_bitmap_get(rf_array_bitmap(a), &st2);
	assert_int_equal(st2.sync_size, st.sync_size);
	to_end(a);
	assert_true(rf_array_size(a) > old);
	full = rf_array_geom(a)->array_sectors;
	if (st.sync_size != full)
		fail_msg("grow begun: the bitmap covered %llu sectors, the grown array %llu",
			 (unsigned long long)st.sync_size, (unsigned long long)full);
	for (i = 0; i < 5; i++)
		if (on_disk[i] != full)
			fail_msg("grow begun: member %d's bitmap header said %llu sectors, the grown array %llu", i,
				 (unsigned long long)on_disk[i], (unsigned long long)full);
	/* the grown chunks (64 KiB: 128 sectors) marked as needing a resync,
	 * as md marks them (kernel md continuing resyncs them after) */
	if (st.needed < (full - old / 512 + 127) / 128)
		fail_msg("grow begun: %llu chunks need a resync, the grown part has %llu",
			 (unsigned long long)st.needed, (unsigned long long)((full - old / 512 + 127) / 128));
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	rf_sync_wait(a);
	check_zero(a);
	bits_clear_held(a);
	at = rf_array_size(a) - sizeof(buf);
	memset(buf, 0x5a, sizeof(buf));
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, at, sizeof(buf), buf), 0);
	if (!bit_on_disk(a, at / 512 / 128))
		fail_msg("a write at array byte %llu of the grown raid10 (%llu before) left its chunk's bit (%llu) "
			 "clear", (unsigned long long)at, (unsigned long long)old,
			 (unsigned long long)(at / 512 / 128));
	assert_int_equal(rf_bitmap_ctl_can_clear(a, true), 0);
	rf_array_close(a);
	free(model);

	bitmap_chunk = 64 << 10;
	shrink("sb10", 10, 5);
	bitmap_chunk = 0;
	for (i = 0; i < 4; i++) {
		fx_member_path(paths[i], FX_PATH, "sb10", i);
		assert_int_equal(bitmap_sync_size(paths[i]), bitmap_sync_size(paths[0]));
	}
	a = serve(paths, 4);
	assert_int_equal(bitmap_sync_size(paths[0]), rf_array_geom(a)->array_sectors);
	rf_array_close(a);
}

/* A write ahead of a reshape lands in the previous geometry's rows: the
 * bits of those rows are set on disk before it (md's
 * raid5_bitmap_sector() marks both geometries), and those of the new
 * geometry's rows of the same array sectors too.  The grow is frozen part
 * way with every bit clear and held (can_clear false); a write at the old
 * array's end (rows near the members' end in the previous geometry, two
 * thirds of that in the new) must find both bits set.  Under
 * RAIDFUSE_TEST_BREAK=bitmap-reshape (the new geometry's rows only) the
 * previous geometry's bit stays clear: this test fails. */
static void test_bitmap_ahead(void **state)
{
	char paths[RF_MAX_MEMBERS][FX_PATH], err[512], *model, buf[4096];
	const struct rf_reshape *rs;
	uint64_t old, pos, at, lo, hi, plo, phi;
	struct rf_array *a;
	bool back;

	(void)state;
	bitmap_chunk = 64 << 10;
	a = filled("gba", 5, 3, 1, paths, &old, &model);
	bitmap_chunk = 0;
	bits_clear_held(a);
	if (rf_reshape_grow(a, 4, err, sizeof(err)))
		fail_msg("grow refused: %s", err);
	assert_int_equal(rf_sync_request(a, RF_SYNC_FROZEN), 0);
	assert_true(rf_array_reshape(a, &pos, &back));
	at = old - sizeof(buf);
	assert_true(at / 512 > pos);
	rs = rf_array_reshape_state(a);
	rf_bitmap_range(&rs->prev, at, sizeof(buf), &plo, &phi);
	rf_bitmap_range(rf_array_geom(a), at, sizeof(buf), &lo, &hi);
	/* 64 KiB chunks: 128 sectors each */
	assert_true(plo / 128 != lo / 128);
	assert_false(bit_on_disk(a, plo / 128));
	assert_false(bit_on_disk(a, lo / 128));
	memset(buf, 0x3c, sizeof(buf));
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, at, sizeof(buf), buf), 0);
	memcpy(model + at, buf, sizeof(buf));
	if (!bit_on_disk(a, plo / 128))
		fail_msg("a write at array byte %llu ahead of the reshape (position %llu) left the bit of its rows "
			 "in the previous geometry (chunk %llu) clear", (unsigned long long)at,
			 (unsigned long long)pos, (unsigned long long)(plo / 128));
	assert_true(bit_on_disk(a, lo / 128));
	print_message("gba: a write ahead of the reshape set bits %llu (previous geometry) and %llu (new)\n",
		      (unsigned long long)(plo / 128), (unsigned long long)(lo / 128));
	assert_int_equal(rf_bitmap_ctl_can_clear(a, true), 0);
	assert_int_equal(rf_sync_request(a, RF_SYNC_IDLE), 0);
	to_end(a);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	check_zero(a);
	rf_array_close(a);
	free(model);
}

/* Whether path holds needle (a log). */
static bool file_has(const char *path, const char *needle)
{
	static char buf[1 << 16];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strstr(buf, needle) != NULL;
}

/* The sectors of a new stripe of the 3 -> 4 grow (64K chunks). */
#define GROW_STRIPE (3 * 128)

/* Into out: the backup of array sectors [0, b->length) that bk holds (as
 * the walk writes it: one part, its data at sector 8) laid out as mdadm's
 * two parts (md_backup_data-2): part 0 holds the rows from split on, its
 * data at sector 8; part 1 the rows before split, its data devstart2
 * sectors further on (past part 0's and a gap), less its last hole
 * sectors.  damage: 4 KiB of part 1's data changed. */
static void mdadm_two_parts(const char *bk, const char *out, const struct rf_backup_sb *b, uint64_t split,
			    uint64_t hole, bool damage)
{
	struct rf_backup_sb two = *b;
	uint8_t hdr[RF_BACKUP_SB_BYTES];
	uint64_t len = b->length;
	char *data = malloc(len * 512);
	int in, fd;

	assert_non_null(data);
	assert_true(split > 0 && split < len);
	in = open(bk, O_RDONLY);
	assert_true(in >= 0);
	assert_int_equal(pread(in, data, len * 512, RF_BACKUP_DATA_SECTOR * 512), (ssize_t)(len * 512));
	close(in);
	two.version = 2;
	two.arraystart = split;
	two.length = len - split;
	two.devstart2 = len - split + 64;
	two.arraystart2 = 0;
	two.length2 = split - hole;
	if (damage)
		memset(data + 100 * 512, 0xa5, 4096);
	rf_backup_encode(&two, hdr);
	fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, hdr, sizeof(hdr), 0), (ssize_t)sizeof(hdr));
	assert_int_equal(pwrite(fd, data + split * 512, (len - split) * 512, RF_BACKUP_DATA_SECTOR * 512),
			 (ssize_t)((len - split) * 512));
	assert_int_equal(pwrite(fd, data, two.length2 * 512, (RF_BACKUP_DATA_SECTOR + two.devstart2) * 512),
			 (ssize_t)(two.length2 * 512));
	close(fd);
	free(data);
}

/* A copy of the file at from, at to. */
static void copy_file(const char *from, const char *to)
{
	char buf[1 << 16];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t got;

	assert_true(in >= 0 && out >= 0);
	while ((got = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, got), got);
	assert_int_equal(got, 0);
	close(in);
	close(out);
}

/* See the opening comment (test_backup).  Under
 * RAIDFUSE_TEST_BREAK=reshape-backup (the window goes on without its
 * backup) or reshape-restore (assembly does not write it back) the walk
 * goes on from rows its first window overwrote: the model differs. */
static void backup_case(const char *what, enum change how, int n, int nspare, const char *member_size, bool two)
{
	char paths[RF_MAX_MEMBERS][FX_PATH], err[1024], bk[FX_PATH], logf[FX_PATH], *model;
	uint8_t hdr[RF_BACKUP_SB_BYTES];
	struct rf_backup_sb b;
	struct rf_config cfg;
	struct rf_array *a;
	const char *p[RF_MAX_MEMBERS];
	uint64_t old, size, pos;
	int i, fd, rounds = 0;
	bool back;

	/* The log to a file until the halted array is closed, to see when
	 * the walk halts (the sink changes only with no array thread
	 * running). */
	snprintf(logf, sizeof(logf), "%s/%s.log", fx_dir, what);
	unlink(logf);
	assert_int_equal(rf_log_choose(logf, err, sizeof(err)), 0);
	rf_log_foreground();
	fx_md_data_offset = "12K";
	fx_create_md(what, 5, n, nspare, member_size, 0, paths);
	fx_md_data_offset = NULL;
	a = serve(paths, n + nspare);
	old = rf_array_size(a);
	model = calloc(2, old);
	assert_non_null(model);
	fx_model_fill(a, model, 256 << 10, 50);
	/* No room to move the data, no backup file: refused. */
	assert_int_equal(start(a, how, n + nspare, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, "--backup-file"));
	assert_false(reshaping(a));
	assert_int_equal(rf_reshape_set_backup_file(a, "bk5.backup", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "bk5.backup: not an absolute path"));
	snprintf(bk, sizeof(bk), "%s/no-such-dir/bk5.backup", fx_dir);
	assert_int_equal(rf_reshape_set_backup_file(a, bk, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, bk));
	snprintf(bk, sizeof(bk), "%s/%s.backup", fx_dir, what);
	unlink(bk);
	assert_int_equal(rf_reshape_set_backup_file(a, bk, err, sizeof(err)), 0);
	assert_true(rf_reshape_backup_file(a, err, sizeof(err)));
	/* A removed file is dropped only while the array still names it. */
	assert_false(rf_array_drop_backup_file(a, "/elsewhere.backup"));
	assert_true(rf_reshape_backup_file(a, err, sizeof(err)));
	assert_string_equal(err, bk);
	/* The walk halted in its critical section. */
	setenv("RAIDFUSE_TEST_HALT", "reshape-backup", 1);
	if (start(a, how, n + nspare, err, sizeof(err)))
		fail_msg("%s: with a backup file refused: %s", what, err);
	assert_int_equal(rf_sync_set_speed_max(a, 0), 0);
	for (i = 0; i < 2000 && !file_has(logf, "RAIDFUSE_TEST_HALT"); i++)
		usleep(10000);
	unsetenv("RAIDFUSE_TEST_HALT");
	if (i == 2000)
		fail_msg("the walk did not halt in its critical section");
	assert_true(file_has(logf, "mdadm's backup file holds its critical section"));
	assert_true(rf_array_reshape(a, &pos, &back));
	assert_int_equal(pos, 0);
	assert_int_equal(rf_array_reshape_recorded(a), 0);
	fd = open(bk, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, hdr, sizeof(hdr), 0), (ssize_t)sizeof(hdr));
	close(fd);
	assert_int_equal(rf_backup_decode(hdr, bk, &b, err, sizeof(err)), 0);
	print_message("%s: halted with array sectors [%llu, +%llu) in %s\n", what,
		      (unsigned long long)b.arraystart, (unsigned long long)b.length, bk);
	rf_array_close(a);
	assert_int_equal(rf_log_choose("stderr", err, sizeof(err)), 0);
	rf_log_foreground();

	/* Without the file: refused, naming --backup-file. */
	for (i = 0; i < n + nspare; i++)
		p[i] = paths[i];
	fx_assemble(&cfg, p, n + nspare, false);
	assert_int_not_equal(rf_array_open(&cfg, &a, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "--backup-file"));
	rf_config_free(&cfg);

	/* A file that holds no backup of it: refused, naming the file. */
	{
		char other[FX_PATH];
		struct stat st;

		/* None there (a typo in --backup-file): no such file, and
		 * none left behind. */
		snprintf(other, sizeof(other), "%s/%s.typo", fx_dir, what);
		fx_assemble(&cfg, p, n + nspare, false);
		assert_non_null(cfg.backup_file = strdup(other));
		assert_int_not_equal(rf_array_open(&cfg, &a, err, sizeof(err)), 0);
		if (!strstr(err, strerror(ENOENT)) || !strstr(err, other))
			fail_msg("%s: a missing backup file: %s", what, err);
		assert_int_equal(stat(other, &st), -1);
		assert_int_equal(errno, ENOENT);
		rf_config_free(&cfg);

		snprintf(other, sizeof(other), "%s/%s.other", fx_dir, what);
		fd = open(other, O_RDWR | O_CREAT | O_TRUNC, 0600);
		assert_true(fd >= 0);
		assert_int_equal(ftruncate(fd, 1 << 20), 0);
		close(fd);
		fx_assemble(&cfg, p, n + nspare, false);
		assert_non_null(cfg.backup_file = strdup(other));
		assert_int_not_equal(rf_array_open(&cfg, &a, err, sizeof(err)), 0);
		assert_non_null(strstr(err, "not an mdadm backup file"));
		assert_non_null(strstr(err, other));
		rf_config_free(&cfg);
		/* another array's header */
		b.uuid[0] ^= 0xff;
		rf_backup_encode(&b, hdr);
		fd = open(other, O_RDWR);
		assert_int_equal(pwrite(fd, hdr, sizeof(hdr), 0), (ssize_t)sizeof(hdr));
		close(fd);
		fx_assemble(&cfg, p, n + nspare, false);
		assert_non_null(cfg.backup_file = strdup(other));
		assert_int_not_equal(rf_array_open(&cfg, &a, err, sizeof(err)), 0);
		assert_non_null(strstr(err, "a backup of another array"));
		rf_config_free(&cfg);
		unlink(other);
	}

	/* The file as mdadm's two parts; the control first: part 1's data
	 * damaged, written back over copies of the members. */
	if (two) {
		char copies[RF_MAX_MEMBERS][FX_PATH], bad[FX_PATH];
		uint64_t split = b.length / 2 / GROW_STRIPE * GROW_STRIPE;

		/* the header as the walk wrote it (b's uuid was changed above) */
		fd = open(bk, O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(pread(fd, hdr, sizeof(hdr), 0), (ssize_t)sizeof(hdr));
		close(fd);
		assert_int_equal(rf_backup_decode(hdr, bk, &b, err, sizeof(err)), 0);
		assert_true(snprintf(bad, sizeof(bad), "%s.bad", bk) < (int)sizeof(bad));
		/* rows between the parts that neither holds: refused */
		mdadm_two_parts(bk, bad, &b, split, GROW_STRIPE, false);
		fx_assemble(&cfg, p, n + nspare, false);
		assert_non_null(cfg.backup_file = strdup(bad));
		assert_int_not_equal(rf_array_open(&cfg, &a, err, sizeof(err)), 0);
		assert_non_null(strstr(err, "two sections with rows between them"));
		assert_non_null(strstr(err, bad));
		rf_config_free(&cfg);
		mdadm_two_parts(bk, bad, &b, split, 0, true);
		for (i = 0; i < n + nspare; i++) {
			assert_true(snprintf(copies[i], sizeof(copies[i]), "%s.c", paths[i]) < (int)sizeof(copies[i]));
			copy_file(paths[i], copies[i]);
		}
		fx_backup_file = bad;
		a = serve(copies, n + nspare);
		fx_backup_file = NULL;
		assert_int_equal(rf_array_reshape_recorded(a), b.length);
		assert_int_not_equal(fx_model_diff(a, model, 1 << 20), 0);
		rf_array_close(a);
		for (i = 0; i < n + nspare; i++)
			unlink(copies[i]);
		unlink(bad);
		mdadm_two_parts(bk, bk, &b, split, 0, false);
		print_message("%s: as mdadm's two parts: [%llu, %llu) then [0, %llu); part 1 damaged: the model "
			      "differs\n", what, (unsigned long long)split, (unsigned long long)b.length,
			      (unsigned long long)split);
	}

	/* With it: restored before it serves, on to the end under IO. */
	fx_backup_file = bk;
	a = serve(paths, n + nspare);
	fx_backup_file = NULL;
	assert_true(reshaping(a));
	print_message("%s: served again from array sector %llu\n", what,
		      (unsigned long long)rf_array_reshape_recorded(a));
	if (how == GROW)
		assert_int_equal(rf_array_reshape_recorded(a), b.length);
	assert_int_equal(rf_sync_set_speed_max(a, 4096), 0);
	assert_int_equal(rf_sync_set_speed_min(a, 4096), 0);
	while (reshaping(a) && rounds++ < 200)
		assert_int_equal(fx_model_io(a, model, 20, 64 << 10), 0);
	to_end(a);
	/* The file removed (the walk is past the sections it held): the array
	 * names none, so a later reshape in place needs one named for it. */
	if (rf_reshape_backup_file(a, err, sizeof(err)))
		fail_msg("%s: the reshape ended, md/backup_file still names %s", what, err);
	size = rf_array_size(a);
	if (how == GROW)
		assert_true(size > old && size <= 2 * old);
	else
		assert_int_equal(size, old);
	assert_int_equal(fx_model_io(a, model, 40, 64 << 10), 0);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	check_zero(a);
	rf_array_close(a);
	/* Done with it (the walk's thread joined): the file is gone. */
	if (access(bk, F_OK) == 0 || errno != ENOENT)
		fail_msg("%s: the backup file %s is left after the reshape ended", what, bk);
	a = serve(paths, n + nspare);
	assert_false(reshaping(a));
	assert_int_equal(rf_array_size(a), size);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	if (how == LAYOUT_RA) {
		struct rf_array_info info;

		rf_array_get_info(a, &info);
		assert_int_equal(info.layout, 1);
	}
	rf_array_close(a);
	free(model);
}

static void test_backup(void **state)
{
	(void)state;
	backup_case("bk5", GROW, 3, 1, MEMBER_SIZE, false);
}

static void test_backup_sections(void **state)
{
	(void)state;
	backup_case("bk2", GROW, 3, 1, MEMBER_SIZE, true);
}

static void test_backup_relayout(void **state)
{
	(void)state;
	/* every window through the backup file: three of them */
	backup_case("bkl", LAYOUT_RA, 3, 0, "24M", false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused),
		cmocka_unit_test_setup(test_raid5, fx_threads2),
		cmocka_unit_test_setup(test_raid6, fx_inline0),
		cmocka_unit_test_setup(test_raid1, fx_threads2),
		cmocka_unit_test_setup(test_raid10, fx_threads2),
		cmocka_unit_test_setup(test_raid10_two, fx_inline0),
		cmocka_unit_test_setup(test_bitmap_raid10, fx_threads2),
		cmocka_unit_test_setup(test_raid5to6, fx_threads2),
		cmocka_unit_test_setup(test_relayout, fx_threads2),
		cmocka_unit_test_setup(test_rechunk, fx_inline0),
		cmocka_unit_test_setup(test_takeover, fx_threads2),
		cmocka_unit_test_setup(test_raid1_shrink, fx_threads2),
		cmocka_unit_test_setup(test_degraded, fx_threads2),
		cmocka_unit_test_setup(test_shrink5, fx_threads2),
		cmocka_unit_test_setup(test_shrink6, fx_inline0),
		cmocka_unit_test_setup(test_shrink10, fx_threads2),
		cmocka_unit_test_setup(test_record_first, fx_threads2),
		cmocka_unit_test_setup(test_backup, fx_threads2),
		cmocka_unit_test_setup(test_backup_sections, fx_threads2),
		cmocka_unit_test_setup(test_backup_relayout, fx_inline0),
		cmocka_unit_test_setup(test_bitmap_grow, fx_threads2),
		cmocka_unit_test_setup(test_bitmap_ahead, fx_threads2),
		cmocka_unit_test_setup(test_bitmap_other, fx_inline0),
	};

	return fx_run_tests("reshape", tests);
}
