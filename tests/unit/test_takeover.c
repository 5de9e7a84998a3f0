/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_takeover.c - md's level changes that move no data, between level
 * ops (services/reshape.c takeover(), core rf_array_takeover()).
 *
 * Arrays made as `raidfuse create` makes them (1.2 superblocks), filled
 * against a model (fixture.h), then given another level with
 * rf_reshape_level() while served:
 *  - raid1 of two -> raid5 of two (md's raid5_takeover_raid1: left-
 *    symmetric, md's chunk): a 1 MiB write by a request made while it
 *    was a raid1 (the level's pieces are made room for when it is
 *    queued), IO against the model at once, check 0,
 *    assembled again a raid5 of md's chunk; then grown to three members
 *    by a spare (the raid5 reshape) with IO running: the model and zeros
 *    after it, check 0;
 *  - raid5 of two -> raid1: the same bytes, assembled again a raid1;
 *  - raid0 of three -> raid5 parity-last of four, the fourth slot empty:
 *    degraded at once, the spare rebuilds P while IO runs, check 0,
 *    assembled again whole; -> raid0 again: the P member leaves the
 *    array, assembled again a raid0 of three with the model's bytes;
 *  - raid0 -> raid4 with no spare: served degraded, writes and reads go
 *    on, assembled again a degraded raid4;
 *  - raid0 of two -> raid10 near-2 of four (members in slots 0 and 2),
 *    the copies rebuilt onto spares while IO runs, check 0; with slot 0
 *    failed -> raid0 of slots 1 and 2's devices; raid1 of three with slot
 *    0 failed -> raid0 of slot 1's;
 *  - refused, nothing changed: raid1 of three -> raid5 (or raid10, not a
 *    change md makes), raid5 of three -> raid1, raid5 left-symmetric ->
 *    raid0, a raid4 with a data member failed -> raid0.
 * Negative control: a raid0 -> raid4 whose superblocks are then made to
 * say raid5 left-symmetric (the takeover recorded wrongly) reads other
 * bytes than the model.
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
#include "raidfuse/reshape.h"
#include "raidfuse/sync.h"
#include "testreq.h"

#define MEMBER_SIZE "8M"

static bool reshaping(struct rf_array *a)
{
	uint64_t pos;
	bool back;

	return rf_array_reshape(a, &pos, &back);
}

static struct rf_array_info info_of(struct rf_array *a)
{
	struct rf_array_info info;

	rf_array_get_info(a, &info);
	return info;
}

/* The reshape and any rebuild to their end at full speed (60 s at most),
 * leaving the array with `degraded` slots empty (no spare for them). */
static void to_end(struct rf_array *a, int degraded)
{
	int i;

	assert_int_equal(rf_sync_set_speed_max(a, 0), 0);
	assert_int_equal(rf_sync_set_speed_min(a, 0), 0);
	for (i = 0; i < 6000 && (reshaping(a) || info_of(a).degraded > degraded); i++)
		usleep(10000);
	assert_false(reshaping(a));
	rf_sync_wait(a);
	assert_int_equal(info_of(a).degraded, degraded);
}

static void check_zero(struct rf_array *a)
{
	struct rf_sync_status st;

	assert_int_equal(rf_sync_request(a, RF_SYNC_CHECK), 0);
	rf_sync_wait(a);
	rf_sync_get(a, &st);
	assert_int_equal(st.mismatch_cnt, 0);
}

/* Made and served (n members, nspare spares), filled against a model of
 * room for twice its size. */
static struct rf_array *filled(const char *what, int level, int n, int nspare, char (*paths)[FX_PATH],
			       char **model)
{
	struct rf_array *a;

	fx_create_md(what, level, n, nspare, MEMBER_SIZE, 0, paths);
	a = fx_serve_md(paths, n + nspare);
	*model = calloc(2, rf_array_size(a));
	assert_non_null(*model);
	fx_model_fill(a, *model, 256 << 10, 50);
	return a;
}

/* Assembled from paths[0..n): level over raid_disks, degraded as said,
 * the model's bytes; check 0 where the level has one. */
static void is_level(char (*paths)[FX_PATH], int n, int level, int raid_disks, int degraded, const char *model)
{
	struct rf_array *a = fx_serve_md(paths, n);
	struct rf_array_info info = info_of(a);

	assert_int_equal(info.level, level);
	assert_int_equal(info.raid_disks, raid_disks);
	assert_int_equal(info.degraded, degraded);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	if (level && !degraded)
		check_zero(a);
	rf_array_close(a);
}

static void test_mirror_to_raid5(void **state)
{
	char paths[4][FX_PATH], err[512];
	struct rf_array_info info;
	struct rf_req *kept;
	struct rf_array *a;
	uint64_t old;
	char *model;
	int rounds = 0;

	(void)state;
	a = filled("m", 1, 2, 1, paths, &model);
	old = rf_array_size(a);
	/* a request made while it is a raid1 (as the FUSE layer keeps a
	 * pool of them), used after: a 1 MiB write needs more pieces on a
	 * raid5 */
	kept = rf_req_alloc(a, 1 << 20);
	assert_non_null(kept);
	if (rf_reshape_level(a, 5, err, sizeof(err)))
		fail_msg("raid1 -> raid5: %s", err);
	{
		struct testreq_done d = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
		char *buf = aligned_alloc(4096, 1 << 20);

		assert_non_null(buf);
		fx_rand_fill(buf, 1 << 20);
		kept->op = RF_REQ_WRITE;
		kept->off = 1 << 20;
		kept->len = 1 << 20;
		kept->buf = buf;
		kept->priv = &d;
		kept->done = testreq_done_cb;
		rf_req_submit(a, kept);
		pthread_mutex_lock(&d.lock);
		while (!d.done)
			pthread_cond_wait(&d.cond, &d.lock);
		pthread_mutex_unlock(&d.lock);
		assert_int_equal(d.err, 0);
		memcpy(model + (1 << 20), buf, 1 << 20);
		free(buf);
		rf_req_free(kept);
	}
	info = info_of(a);
	assert_int_equal(info.level, 5);
	assert_int_equal(info.layout, 2);               /* md's left-symmetric */
	assert_int_equal(info.chunk_bytes, 64 << 10);   /* md's 64K: it divides the size */
	assert_int_equal(info.raid_disks, 2);
	assert_int_equal(rf_array_size(a), old);
	assert_int_equal(fx_model_io(a, model, 40, 128 << 10), 0);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	check_zero(a);
	rf_array_close(a);
	is_level(paths, 3, 5, 2, 0, model);
	/* grown by its spare: a raid5 of three */
	a = fx_serve_md(paths, 3);
	assert_int_equal(rf_sync_set_speed_max(a, 4096), 0);
	assert_int_equal(rf_sync_set_speed_min(a, 4096), 0);
	if (rf_reshape_grow(a, 3, err, sizeof(err)))
		fail_msg("raid5 2 -> 3: %s", err);
	while (reshaping(a) && rounds < 200) {
		assert_int_equal(fx_model_io(a, model, 20, 64 << 10), 0);
		rounds++;
	}
	to_end(a, 0);
	assert_int_equal(rf_array_size(a), 2 * old);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	check_zero(a);
	rf_array_close(a);
	is_level(paths, 3, 5, 3, 0, model);
	free(model);
	print_message("raid1 of 2 -> raid5 of 2 -> 3 members (%d rounds of IO during the reshape)\n", rounds);
}

static void test_raid5_to_mirror(void **state)
{
	char paths[2][FX_PATH], err[512];
	struct rf_array *a;
	char *model;

	(void)state;
	a = filled("r", 5, 2, 0, paths, &model);
	if (rf_reshape_level(a, 1, err, sizeof(err)))
		fail_msg("raid5 -> raid1: %s", err);
	assert_int_equal(info_of(a).level, 1);
	assert_int_equal(fx_model_io(a, model, 40, 128 << 10), 0);
	check_zero(a);
	rf_array_close(a);
	is_level(paths, 2, 1, 2, 0, model);
	free(model);
}

static void test_raid0_to_raid5(void **state)
{
	char paths[4][FX_PATH], err[512];
	struct rf_array_info info;
	struct rf_array *a;
	uint64_t old;
	char *model;
	int rounds = 0;

	(void)state;
	a = filled("z", 0, 3, 0, paths, &model);
	old = rf_array_size(a);
	assert_int_equal(rf_sync_set_speed_max(a, 2048), 0);
	assert_int_equal(rf_sync_set_speed_min(a, 2048), 0);
	if (rf_reshape_level(a, 5, err, sizeof(err)))
		fail_msg("raid0 -> raid5: %s", err);
	info = info_of(a);
	assert_int_equal(info.level, 5);
	assert_int_equal(info.layout, 5);               /* parity-last */
	assert_int_equal(info.raid_disks, 4);
	assert_int_equal(info.degraded, 1);
	assert_int_equal(rf_array_size(a), old);
	/* a spare added (mdadm --add) takes the empty slot */
	fx_member_path(paths[3], FX_PATH, "z", 3);
	fx_file_make(paths[3], 8 << 20);
	if (rf_memberctl_add_spare(a, paths[3], err, sizeof(err)))
		fail_msg("add: %s", err);
	/* the spare rebuilds the empty slot while IO runs */
	while (info_of(a).degraded && rounds < 400) {
		assert_int_equal(fx_model_io(a, model, 20, 64 << 10), 0);
		rounds++;
	}
	to_end(a, 0);
	assert_int_equal(info_of(a).degraded, 0);
	assert_true(rounds > 0);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	check_zero(a);
	rf_array_close(a);
	is_level(paths, 4, 5, 4, 0, model);
	/* and back: P's member leaves the array */
	a = fx_serve_md(paths, 4);
	if (rf_reshape_level(a, 0, err, sizeof(err)))
		fail_msg("raid5 -> raid0: %s", err);
	info = info_of(a);
	assert_int_equal(info.level, 0);
	assert_int_equal(info.raid_disks, 3);
	assert_int_equal(rf_devs_count(a), 3);
	assert_int_equal(rf_array_size(a), old);
	assert_int_equal(fx_model_io(a, model, 40, 128 << 10), 0);
	rf_array_close(a);
	is_level(paths, 3, 0, 3, 0, model);
	free(model);
	print_message("raid0 of 3 -> raid5 of 4 (P rebuilt beside %d rounds of IO) -> raid0 of 3\n", rounds);
}

static void test_raid0_no_spare(void **state)
{
	char paths[3][FX_PATH], err[512];
	struct rf_array *a;
	char *model;

	(void)state;
	a = filled("n", 0, 3, 0, paths, &model);
	if (rf_reshape_level(a, 4, err, sizeof(err)))
		fail_msg("raid0 -> raid4: %s", err);
	assert_int_equal(info_of(a).level, 4);
	assert_int_equal(info_of(a).degraded, 1);
	assert_int_equal(fx_model_io(a, model, 40, 128 << 10), 0);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	rf_array_close(a);
	is_level(paths, 3, 4, 4, 1, model);
	free(model);
}

/* raid0 of three grown to five as mdadm grows one (through a raid4 whose
 * P slot is empty), with IO against the model; stopped mid-way and
 * assembled again, the raid4 reshape goes on; it ends a degraded raid4
 * then (the way back is not recorded), which md/level makes a raid0. */
static void test_raid0_grow(void **state)
{
	char paths[5][FX_PATH], err[512];
	struct rf_array_info info;
	struct rf_array *a;
	uint64_t old, pos;
	char *model;
	bool back;
	int i, rounds = 0;

	(void)state;
	a = filled("g", 0, 3, 0, paths, &model);
	old = rf_array_size(a);
	for (i = 3; i < 5; i++) {
		fx_member_path(paths[i], FX_PATH, "g", i);
		fx_file_make(paths[i], 8 << 20);
		if (rf_memberctl_add_spare(a, paths[i], err, sizeof(err)))
			fail_msg("add: %s", err);
	}
	assert_int_equal(rf_sync_set_speed_max(a, 2048), 0);
	assert_int_equal(rf_sync_set_speed_min(a, 2048), 0);
	if (rf_reshape_grow(a, 5, err, sizeof(err)))
		fail_msg("raid0 3 -> 5: %s", err);
	info = info_of(a);
	assert_int_equal(info.level, 4);
	assert_int_equal(info.raid_disks, 6);
	assert_int_equal(info.degraded, 1);             /* the new P slot */
	assert_true(reshaping(a));
	while (rf_array_reshape(a, &pos, &back) && pos < 8192 && rounds < 400) {
		assert_int_equal(fx_model_io(a, model, 10, 64 << 10), 0);
		rounds++;
	}
	assert_true(reshaping(a));
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	rf_array_close(a);
	/* assembled again mid-way: the raid4 reshape goes on to its end */
	a = fx_serve_md(paths, 5);
	assert_true(reshaping(a));
	assert_int_equal(info_of(a).level, 4);
	assert_int_equal(fx_model_io(a, model, 20, 64 << 10), 0);
	to_end(a, 1);
	/* a reshape resumed at assembly ends a raid4 with its P slot empty (the
	 * way back to raid0 is not recorded: grow --level 0 takes it) */
	info = info_of(a);
	assert_int_equal(info.level, 4);
	assert_int_equal(info.raid_disks, 6);
	assert_int_equal(rf_array_size(a), old / 3 * 5);
	memset(model + old, 0, old / 3 * 2);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	if (rf_reshape_level(a, 0, err, sizeof(err)))
		fail_msg("raid4 -> raid0: %s", err);
	rf_array_close(a);
	is_level(paths, 5, 0, 5, 0, model);
	free(model);
	print_message("raid0 of 3 -> 5 through a raid4 (%d rounds of IO, stopped and assembled mid-way)\n", rounds);
}

/* raid0 of three grown by one, served to the end: a raid0 of four at once,
 * the new P slot gone. */
static void test_raid0_grow_served(void **state)
{
	char paths[4][FX_PATH], err[512];
	struct rf_array *a;
	uint64_t old, pos;
	bool back;
	char *model;
	int rounds = 0;

	(void)state;
	a = filled("gs", 0, 3, 0, paths, &model);
	old = rf_array_size(a);
	fx_member_path(paths[3], FX_PATH, "gs", 3);
	fx_file_make(paths[3], 8 << 20);
	if (rf_memberctl_add_spare(a, paths[3], err, sizeof(err)))
		fail_msg("add: %s", err);
	assert_int_equal(rf_sync_set_speed_max(a, 4096), 0);
	if (rf_reshape_grow(a, 4, err, sizeof(err)))
		fail_msg("raid0 3 -> 4: %s", err);
	/* IO while the first half moves (none beside the takeover at the
	 * end: this thread's requests would be made while the level
	 * changes) */
	while (rf_array_reshape(a, &pos, &back) && pos < 16384 && rounds < 200) {
		assert_int_equal(fx_model_io(a, model, 20, 64 << 10), 0);
		rounds++;
	}
	to_end(a, 0);
	assert_int_equal(info_of(a).level, 0);
	assert_int_equal(info_of(a).raid_disks, 4);
	assert_int_equal(rf_devs_count(a), 4);
	assert_int_equal(rf_array_size(a), old / 3 * 4);
	memset(model + old, 0, old / 3);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	rf_array_close(a);
	is_level(paths, 4, 0, 4, 0, model);
	free(model);
}

/* md's raid10 takeover of a raid0 and back (rf_array_takeover_slots()):
 * raid0 of two -> near-2 raid10 of four, member i in slot 2i, the copies'
 * slots empty until spares are rebuilt into them while IO runs; with slot
 * 0's device failed -> raid0 of one copy of each pair (slot 1's for the
 * first, mdadm's first in sync), the others out of the array. */
static void test_raid0_raid10(void **state)
{
	char paths[4][FX_PATH], kept[2][FX_PATH], err[512];
	struct rf_array_info info;
	struct rf_array *a;
	uint64_t old;
	char *model;
	int rounds = 0, i;

	(void)state;
	a = filled("t", 0, 2, 0, paths, &model);
	old = rf_array_size(a);
	assert_int_equal(rf_sync_set_speed_max(a, 2048), 0);
	assert_int_equal(rf_sync_set_speed_min(a, 2048), 0);
	if (rf_reshape_level(a, 10, err, sizeof(err)))
		fail_msg("raid0 -> raid10: %s", err);
	info = info_of(a);
	assert_int_equal(info.level, 10);
	assert_int_equal(info.layout, 0x102);
	assert_int_equal(info.raid_disks, 4);
	assert_int_equal(info.degraded, 2);
	assert_int_equal(rf_array_size(a), old);
	assert_string_equal(rf_dev_get(a, 0)->path, paths[0]);
	assert_string_equal(rf_dev_get(a, 2)->path, paths[1]);
	assert_true(rf_dev_get(a, 1)->flags & RF_DEV_MISSING);
	assert_true(rf_dev_get(a, 3)->flags & RF_DEV_MISSING);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	for (i = 2; i < 4; i++) {
		fx_member_path(paths[i], FX_PATH, "t", i);
		fx_file_make(paths[i], 8 << 20);
		if (rf_memberctl_add_spare(a, paths[i], err, sizeof(err)))
			fail_msg("add: %s", err);
	}
	while (info_of(a).degraded && rounds < 400) {
		assert_int_equal(fx_model_io(a, model, 20, 64 << 10), 0);
		rounds++;
	}
	to_end(a, 0);
	assert_true(rounds > 0);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	check_zero(a);
	rf_array_close(a);
	is_level(paths, 4, 10, 4, 0, model);

	a = fx_serve_md(paths, 4);
	snprintf(kept[0], FX_PATH, "%s", rf_dev_get(a, 1)->path);
	snprintf(kept[1], FX_PATH, "%s", rf_dev_get(a, 2)->path);
	rf_member_fail(a, 0, -EIO, "test", 0);
	if (rf_reshape_level(a, 0, err, sizeof(err)))
		fail_msg("raid10 -> raid0: %s", err);
	info = info_of(a);
	assert_int_equal(info.level, 0);
	assert_int_equal(info.raid_disks, 2);
	assert_int_equal(info.degraded, 0);
	assert_int_equal(rf_devs_count(a), 2);
	assert_string_equal(rf_dev_get(a, 0)->path, kept[0]);
	assert_string_equal(rf_dev_get(a, 1)->path, kept[1]);
	assert_int_equal(rf_array_size(a), old);
	assert_int_equal(fx_model_io(a, model, 40, 128 << 10), 0);
	rf_array_close(a);
	is_level(kept, 2, 0, 2, 0, model);
	free(model);
	print_message("raid0 of 2 -> raid10 of 4 (copies rebuilt beside %d rounds of IO) -> raid0 of 2\n", rounds);
}

/* raid1 of three, slot 0's device failed -> raid0 of slot 1's (md's
 * raid0_takeover_raid1 of the copy mdadm keeps), md's chunk. */
static void test_raid1_to_raid0(void **state)
{
	char paths[3][FX_PATH], kept[1][FX_PATH], err[512];
	struct rf_array_info info;
	struct rf_array *a;
	uint64_t old;
	char *model;

	(void)state;
	a = filled("o", 1, 3, 0, paths, &model);
	old = rf_array_size(a);
	rf_member_fail(a, 0, -EIO, "test", 0);
	if (rf_reshape_level(a, 0, err, sizeof(err)))
		fail_msg("raid1 -> raid0: %s", err);
	info = info_of(a);
	assert_int_equal(info.level, 0);
	assert_int_equal(info.raid_disks, 1);
	assert_int_equal(rf_devs_count(a), 1);
	assert_string_equal(rf_dev_get(a, 0)->path, paths[1]);
	assert_int_equal(rf_array_size(a), old);
	assert_true(info.chunk_bytes >= 4096 && old % info.chunk_bytes == 0);
	assert_int_equal(fx_model_io(a, model, 40, 128 << 10), 0);
	rf_array_close(a);
	snprintf(kept[0], FX_PATH, "%s", paths[1]);
	is_level(kept, 1, 0, 1, 0, model);
	free(model);
}

/* rf_array_takeover_slots() as the reshape service calls it: every
 * request drained, under reconf_lock (rf_barrier_quiesced_all()). */
struct slots_call {
	struct rf_array *a;
	int *to_slot;
	char *err;
	size_t errlen;
};

static int slots_fn(void *arg)
{
	struct slots_call *c = arg;

	return rf_array_takeover_slots(c->a, 0, 0, 1, 8, c->to_slot, c->err, c->errlen);
}

static void test_refused(void **state)
{
	char paths[4][FX_PATH], err[512];
	struct rf_array_info before, after;
	struct rf_array *a;
	char *model;

	(void)state;
	a = filled("x1", 1, 3, 0, paths, &model);
	before = info_of(a);
	assert_int_equal(rf_reshape_level(a, 5, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "raid1 of two members only"));
	assert_int_equal(rf_reshape_level(a, 10, err, sizeof(err)), -EOPNOTSUPP);
	assert_non_null(strstr(err, "not a change md makes"));
	after = info_of(a);
	assert_int_equal(after.level, before.level);
	assert_int_equal(after.raid_disks, before.raid_disks);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	rf_array_close(a);
	free(model);

	a = filled("x5", 5, 3, 0, paths, &model);
	assert_int_equal(rf_reshape_level(a, 1, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "raid5 of two members only"));
	assert_int_equal(rf_reshape_level(a, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "parity-last"));
	assert_int_equal(info_of(a).level, 5);
	rf_array_close(a);
	free(model);

	/* A takeover whose slots keep no in-sync copy of some data (the
	 * level's lost()): raid1 of two, slot 0 failed, to a raid0 of that
	 * slot alone, refused; of slot 1, taken. */
	a = filled("x0", 1, 2, 0, paths, &model);
	rf_member_fail(a, 0, -EIO, "test", 0);
	{
		int to_failed[2] = { 0, -1 }, to_kept[2] = { -1, 0 };
		struct slots_call c = { a, to_failed, err, sizeof(err) };

		assert_int_equal(rf_barrier_quiesced_all(a, slots_fn, &c), -EINVAL);
		assert_non_null(strstr(err, "some data would have no copy"));
		assert_int_equal(info_of(a).level, 1);
		assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
		c.to_slot = to_kept;
		if (rf_barrier_quiesced_all(a, slots_fn, &c))
			fail_msg("raid1 -> raid0 of the slot in sync: %s", err);
		assert_int_equal(info_of(a).level, 0);
		assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	}
	rf_array_close(a);
	free(model);

	/* raid4 with a data member out cannot become a raid0 */
	a = filled("x4", 4, 3, 0, paths, &model);
	rf_member_fail(a, 0, -EIO, "test", 0);
	assert_int_equal(rf_reshape_level(a, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "survives 0"));
	assert_int_equal(info_of(a).level, 4);
	assert_int_equal(info_of(a).raid_disks, 3);
	assert_int_equal(fx_model_diff(a, model, 1 << 20), 0);
	rf_array_close(a);
	free(model);
}

/* Negative control: a raid0 -> raid4 whose superblocks then say raid5
 * left-symmetric (a takeover recorded with the wrong layout): assembled,
 * the rows are read from other places and the model differs. */
static void test_negative(void **state)
{
	char paths[3][FX_PATH], err[512];
	struct rf_array *a;
	char *model;
	int i;

	(void)state;
	a = filled("neg", 0, 3, 0, paths, &model);
	if (rf_reshape_level(a, 4, err, sizeof(err)))
		fail_msg("raid0 -> raid4: %s", err);
	rf_array_close(a);
	is_level(paths, 3, 4, 4, 1, model);
	for (i = 0; i < 3; i++) {
		struct rf_sb_change c = { .faulty_slot = -1, .set_level = true, .level = 5, .layout = 2,
					  .chunk_sectors = 128, .clean = true, .resync_offset = RF_SB_MAX_SECTOR };
		struct rf_sb_io io;
		struct rf_sb sb;
		int fd = open(paths[i], O_RDWR);

		assert_true(fd >= 0);
		assert_int_equal(rf_sb_io_fd(&io, fd), 0);
		assert_int_equal(rf_sb_read_io(&io, paths[i], &sb, err, sizeof(err)), 0);
		c.level_size = sb.size;
		assert_int_equal(rf_sb_update_io(&io, paths[i], &sb, &c, err, sizeof(err)), 0);
		close(fd);
	}
	a = fx_serve_md(paths, 3);
	assert_int_equal(info_of(a).layout, 2);
	assert_true(fx_model_diff(a, model, 1 << 20) > 0);
	rf_array_close(a);
	free(model);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_mirror_to_raid5, fx_threads2),
		cmocka_unit_test_setup(test_raid5_to_mirror, fx_inline0),
		cmocka_unit_test_setup(test_raid0_to_raid5, fx_threads2),
		cmocka_unit_test_setup(test_raid0_no_spare, fx_inline0),
		cmocka_unit_test_setup(test_raid0_grow, fx_threads2),
		cmocka_unit_test_setup(test_raid0_grow_served, fx_inline0),
		cmocka_unit_test_setup(test_raid0_raid10, fx_threads2),
		cmocka_unit_test_setup(test_raid1_to_raid0, fx_inline0),
		cmocka_unit_test_setup(test_refused, fx_threads2),
		cmocka_unit_test_setup(test_negative, fx_threads2),
	};

	return fx_run_tests("takeover", tests);
}
