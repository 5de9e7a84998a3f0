/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_member.c - device control (member.c): md/new_dev and
 * md/dev-NAME/state on an array without superblocks.
 *
 * What it refuses, leaving the array as it was: a spare too small, one
 * already in the array, one that does not exist; "remove" of an active
 * member, "re-add" of one that is not faulty, a word md does not take;
 * any change to a read-only array.  What it does: a spare on a healthy
 * array stays a spare; a member failed and removed leaves its slot
 * missing, and a spare added then is rebuilt into that slot and holds
 * the data written before; writemostly sets and clears the flag.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_ioq.h"
#include "fixture.h"
#include "testreq.h"

#define MEMBER_BYTES (2u << 20)

/* A raid1 of 2 (or a raid5 of 4) on fresh members named what. */
static struct rf_array *open_named(const char *what, int level, bool readonly)
{
	const struct fx_array fa = { .what = what, .level = level, .layout = level == 5 ? 2 : 0,
				     .n = level == 5 ? 4 : 2, .chunk = level == 5 ? 65536 : 0 };
	struct rf_config cfg;

	fx_make_members(what, fa.n, MEMBER_BYTES, false);
	fx_config(&cfg, &fa);
	cfg.readonly = readonly;
	fake_reset();
	return fx_open(&cfg, what, fake_ioq_init);
}

static struct rf_dev_info info_of(struct rf_array *a, const char *name)
{
	struct rf_dev_info d;
	int dev = rf_array_dev_find(a, name);

	if (dev < 0)
		fail_msg("%s: no such device", name);
	assert_int_equal(rf_array_dev_info(a, dev, &d), 0);
	return d;
}

/* Wait (at most 10 s) until name holds a slot in sync. */
static void wait_in_sync(struct rf_array *a, const char *name)
{
	struct rf_dev_info d;
	int i;

	for (i = 0; i < 1000; i++) {
		d = info_of(a, name);
		if ((d.flags & RF_DEV_IN_SYNC) && d.slot >= 0)
			return;
		usleep(10000);
	}
	fail_msg("%s: not in sync after 10 s (slot %d, flags 0x%x)", name, d.slot, d.flags);
}

/* Spares refused with the file and the reason, nothing added; a good one
 * on a healthy array stays a spare. */
static void test_add_spare(void **state)
{
	struct rf_array *a = open_named("as", 5, false);
	char err[1024], p[FX_PATH];
	struct rf_dev_info d;
	int ndevs = rf_array_ndevs(a);

	snprintf(p, sizeof(p), "%s/as-small.img", fx_dir);
	fx_file_make(p, 4096);
	assert_int_equal(rf_array_add_spare(a, p, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, "too small"));
	assert_non_null(strstr(err, "as-small.img"));

	fx_member_path(p, sizeof(p), "as", 2);
	assert_int_equal(rf_array_add_spare(a, p, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "already in the array"));

	snprintf(p, sizeof(p), "%s/as-nosuch.img", fx_dir);
	assert_true(rf_array_add_spare(a, p, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "as-nosuch.img"));
	assert_int_equal(rf_array_ndevs(a), ndevs);

	snprintf(p, sizeof(p), "%s/as-spare.img", fx_dir);
	fx_file_make(p, MEMBER_BYTES);
	if (rf_array_add_spare(a, p, err, sizeof(err)))
		fail_msg("add spare: %s", err);
	assert_int_equal(rf_array_ndevs(a), ndevs + 1);
	usleep(100000);                 /* a healthy array: nothing for it to do */
	d = info_of(a, "as-spare.img");
	assert_int_equal(d.slot, -1);
	assert_true(d.flags & RF_DEV_SPARE);
	assert_false(d.flags & RF_DEV_IN_SYNC);
	rf_array_close(a);
}

/* The words md refuses in these states, each leaving the device as it
 * was; writemostly and failfast set and clear their flags. */
static void test_state_refusals(void **state)
{
	struct rf_array *a = open_named("st", 1, false);

	assert_int_equal(rf_array_dev_set_state(a, "st-1.img", "remove"), -EBUSY);
	/* busy (it is in sync in its slot), not a word md refuses */
	assert_int_equal(rf_array_dev_set_state(a, "st-1.img", "re-add"), -EBUSY);
	assert_int_equal(rf_array_dev_set_state(a, "st-1.img", "blocked-forever"), -EINVAL);
	assert_int_equal(rf_array_dev_set_state(a, "nosuch.img", "faulty"), -ENOENT);
	assert_int_equal(info_of(a, "st-1.img").slot, 1);
	assert_true(info_of(a, "st-1.img").flags & RF_DEV_IN_SYNC);
	assert_int_equal(rf_array_faulty(a), 0);

	assert_int_equal(rf_array_dev_set_state(a, "st-0.img", "writemostly"), 0);
	assert_true(info_of(a, "st-0.img").flags & RF_DEV_WRITE_MOSTLY);
	assert_int_equal(rf_array_dev_set_state(a, "st-0.img", "-writemostly"), 0);
	assert_false(info_of(a, "st-0.img").flags & RF_DEV_WRITE_MOSTLY);
	assert_int_equal(rf_array_dev_set_state(a, "st-1.img", "failfast"), 0);
	assert_true(info_of(a, "st-1.img").flags & RF_DEV_FAILFAST);
	assert_true(info_of(a, "st-1.img").flags & RF_DEV_IN_SYNC);
	assert_int_equal(rf_array_dev_set_state(a, "st-1.img", "-failfast"), 0);
	assert_false(info_of(a, "st-1.img").flags & RF_DEV_FAILFAST);
	rf_array_close(a);
}

/* A read-only array takes no spare and no state change. */
static void test_readonly(void **state)
{
	struct rf_array *a = open_named("ro", 1, true);
	char err[1024], p[FX_PATH];

	assert_int_equal(rf_array_dev_set_state(a, "ro-1.img", "faulty"), -EROFS);
	assert_int_equal(rf_array_faulty(a), 0);
	snprintf(p, sizeof(p), "%s/ro-spare.img", fx_dir);
	fx_file_make(p, MEMBER_BYTES);
	assert_int_equal(rf_array_add_spare(a, p, err, sizeof(err)), -EROFS);
	assert_non_null(strstr(err, "read-only"));
	rf_array_close(a);
}

/* faulty, remove, then a spare: it is rebuilt into the missing slot and
 * holds what was written before, alone (the other member failed after). */
static void test_fail_remove_rebuild(void **state)
{
	struct rf_array *a = open_named("rb", 1, false);
	char err[1024], p[FX_PATH], *buf = aligned_alloc(4096, 65536), *back = aligned_alloc(4096, 65536);
	struct rf_dev_info d;

	fx_rand_fill(buf, 65536);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 131072, 65536, buf), 0);
	assert_int_equal(rf_array_dev_set_state(a, "rb-1.img", "faulty"), 0);
	assert_int_equal(rf_array_faulty(a), 1ull << 1);
	assert_int_equal(rf_array_dev_set_state(a, "rb-1.img", "remove"), 0);
	assert_int_equal(rf_array_dev_find(a, "rb-1.img"), -ENOENT);
	assert_int_equal(rf_array_dev_info(a, 1, &d), 0);
	assert_true(d.flags & RF_DEV_MISSING);

	snprintf(p, sizeof(p), "%s/rb-spare.img", fx_dir);
	fx_file_make(p, MEMBER_BYTES);
	if (rf_array_add_spare(a, p, err, sizeof(err)))
		fail_msg("add spare: %s", err);
	wait_in_sync(a, "rb-spare.img");
	assert_int_equal(info_of(a, "rb-spare.img").slot, 1);
	assert_int_equal(rf_array_faulty(a), 0);
	/* Only the rebuilt copy left: it reads what was written. */
	assert_int_equal(rf_array_dev_set_state(a, "rb-0.img", "faulty"), 0);
	memset(back, 0, 65536);
	assert_int_equal(testreq_io(a, RF_REQ_READ, 131072, 65536, back), 0);
	assert_memory_equal(back, buf, 65536);
	rf_array_close(a);
	free(buf);
	free(back);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_spare),
		cmocka_unit_test(test_state_refusals),
		cmocka_unit_test(test_readonly),
		cmocka_unit_test(test_fail_remove_rebuild),
	};

	return fx_run_tests("member", tests);
}
