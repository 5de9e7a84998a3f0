/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_member.c - device control (memberctl.c): md/new_dev and
 * md/dev-NAME/state on an array without superblocks.
 *
 * What it refuses, leaving the array as it was: a spare too small, one
 * already in the array, one that does not exist; "remove" of an active
 * member, "re-add" of one that is not faulty, a word md does not take;
 * any change to a read-only array.  What it does: a spare on a healthy
 * array stays a spare; a member failed and removed leaves its slot
 * missing, and a spare added then is rebuilt into that slot and holds
 * the data written before; writemostly sets and clears the flag.
 *
 * Hot replace (hotreplace.c with core/replace.c): a replacement attached to a
 * slot gets every write of the slot, at the same member offsets (its file
 * reads what the slot's does where written after the attach, zeros where
 * not), and never a read; a write it loses marks it, not the slot, and the
 * request succeeds.  want_replacement with a spare: the spare is filled
 * and takes the slot, the old device is left faulty, and the data reads
 * back whole with another member failed; refused on a spare.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "fake_ioq.h"
#include "fixture.h"
#include "raidfuse/sync.h"
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

/* The device named name.  Its index may change between the lookup and
 * the look (the management thread moves a spare into a slot): looked up
 * again until both agree. */
static struct rf_dev_info info_of(struct rf_array *a, const char *name)
{
	struct rf_dev_info d;
	int dev, i;

	for (i = 0; i < 1000; i++) {
		dev = rf_member_find(a, name);
		if (dev < 0)
			fail_msg("%s: no such device", name);
		if (!rf_member_info(a, dev, &d) && !strcmp(d.name, name))
			return d;
		usleep(1000);
	}
	fail_msg("%s: its index kept changing", name);
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
	int ndevs = rf_member_ndevs(a);

	snprintf(p, sizeof(p), "%s/as-small.img", fx_dir);
	fx_file_make(p, 4096);
	assert_int_equal(rf_memberctl_add_spare(a, p, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, "too small"));
	assert_non_null(strstr(err, "as-small.img"));

	fx_member_path(p, sizeof(p), "as", 2);
	assert_int_equal(rf_memberctl_add_spare(a, p, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "already in the array"));

	snprintf(p, sizeof(p), "%s/as-nosuch.img", fx_dir);
	assert_true(rf_memberctl_add_spare(a, p, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "as-nosuch.img"));
	assert_int_equal(rf_member_ndevs(a), ndevs);

	snprintf(p, sizeof(p), "%s/as-spare.img", fx_dir);
	fx_file_make(p, MEMBER_BYTES);
	if (rf_memberctl_add_spare(a, p, err, sizeof(err)))
		fail_msg("add spare: %s", err);
	assert_int_equal(rf_member_ndevs(a), ndevs + 1);
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

	assert_int_equal(rf_memberctl_set_state(a, "st-1.img", "remove"), -EBUSY);
	/* busy (it is in sync in its slot), not a word md refuses */
	assert_int_equal(rf_memberctl_set_state(a, "st-1.img", "re-add"), -EBUSY);
	assert_int_equal(rf_memberctl_set_state(a, "st-1.img", "blocked-forever"), -EINVAL);
	assert_int_equal(rf_memberctl_set_state(a, "nosuch.img", "faulty"), -ENOENT);
	assert_int_equal(info_of(a, "st-1.img").slot, 1);
	assert_true(info_of(a, "st-1.img").flags & RF_DEV_IN_SYNC);
	assert_int_equal(rf_array_faulty(a), 0);

	assert_int_equal(rf_memberctl_set_state(a, "st-0.img", "writemostly"), 0);
	assert_true(info_of(a, "st-0.img").flags & RF_DEV_WRITE_MOSTLY);
	assert_int_equal(rf_memberctl_set_state(a, "st-0.img", "-writemostly"), 0);
	assert_false(info_of(a, "st-0.img").flags & RF_DEV_WRITE_MOSTLY);
	assert_int_equal(rf_memberctl_set_state(a, "st-1.img", "failfast"), 0);
	assert_true(info_of(a, "st-1.img").flags & RF_DEV_FAILFAST);
	assert_true(info_of(a, "st-1.img").flags & RF_DEV_IN_SYNC);
	assert_int_equal(rf_memberctl_set_state(a, "st-1.img", "-failfast"), 0);
	assert_false(info_of(a, "st-1.img").flags & RF_DEV_FAILFAST);
	rf_array_close(a);
}

/* A read-only array takes no spare and no state change. */
static void test_readonly(void **state)
{
	struct rf_array *a = open_named("ro", 1, true);
	char err[1024], p[FX_PATH];

	assert_int_equal(rf_memberctl_set_state(a, "ro-1.img", "faulty"), -EROFS);
	assert_int_equal(rf_array_faulty(a), 0);
	snprintf(p, sizeof(p), "%s/ro-spare.img", fx_dir);
	fx_file_make(p, MEMBER_BYTES);
	assert_int_equal(rf_memberctl_add_spare(a, p, err, sizeof(err)), -EROFS);
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
	assert_int_equal(rf_memberctl_set_state(a, "rb-1.img", "faulty"), 0);
	assert_int_equal(rf_array_faulty(a), 1ull << 1);
	assert_int_equal(rf_memberctl_set_state(a, "rb-1.img", "remove"), 0);
	assert_int_equal(rf_member_find(a, "rb-1.img"), -ENOENT);
	assert_int_equal(rf_member_info(a, 1, &d), 0);
	assert_true(d.flags & RF_DEV_MISSING);

	snprintf(p, sizeof(p), "%s/rb-spare.img", fx_dir);
	fx_file_make(p, MEMBER_BYTES);
	if (rf_memberctl_add_spare(a, p, err, sizeof(err)))
		fail_msg("add spare: %s", err);
	wait_in_sync(a, "rb-spare.img");
	assert_int_equal(info_of(a, "rb-spare.img").slot, 1);
	assert_int_equal(rf_array_faulty(a), 0);
	/* Only the rebuilt copy left: it reads what was written. */
	assert_int_equal(rf_memberctl_set_state(a, "rb-0.img", "faulty"), 0);
	memset(back, 0, 65536);
	assert_int_equal(testreq_io(a, RF_REQ_READ, 131072, 65536, back), 0);
	assert_memory_equal(back, buf, 65536);
	rf_array_close(a);
	free(buf);
	free(back);
}

/* A spare named name (its path into p) added to a. */
static void spare(struct rf_array *a, const char *name, char *p)
{
	char err[1024];

	snprintf(p, FX_PATH, "%s/%s", fx_dir, name);
	fx_file_make(p, MEMBER_BYTES);
	if (rf_memberctl_add_spare(a, p, err, sizeof(err)))
		fail_msg("add spare: %s", err);
}

struct attach_job {
	struct rf_array *a;
	int slot, dev;
};

static int attach(void *arg)
{
	struct attach_job *j = arg;

	rf_replace_attach(j->a, j->slot, j->dev);
	return 0;
}

/* len bytes of file path at off. */
static void file_read(const char *path, char *buf, size_t len, uint64_t off)
{
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

/* The twin writes, by hand: a replacement attached (the walk frozen) gets
 * the slot's writes, no reads; one it loses marks it, not the slot. */
static void test_replace_twin(void **state)
{
	struct rf_array *a = open_named("rt", 5, false);
	char p[FX_PATH], m1[FX_PATH], *buf = aligned_alloc(4096, 1 << 20);
	char *x = malloc(65536), *y = malloc(65536);
	struct attach_job j = { .a = a, .slot = 1 };

	fx_rand_fill(buf, 1 << 20);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, 1 << 20, buf), 0);
	spare(a, "rt-spare.img", p);
	assert_int_equal(rf_sync_request(a, RF_SYNC_FROZEN), 0);
	j.dev = rf_member_find(a, "rt-spare.img");
	assert_true(j.dev >= rf_array_nslots(a));
	assert_int_equal(rf_barrier_quiesced_all(a, attach, &j), 0);
	assert_int_equal(rf_replace_dev_of(a, 1), j.dev);
	assert_true(info_of(a, "rt-spare.img").flags & RF_DEV_REPLACEMENT);

	/* Rows 0-1 (chunks of 64 KiB, 3 data columns): the first 384 KiB
	 * of the array written again; member 1's rows 0 and 1 with them. */
	fx_rand_fill(buf, 1 << 20);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, 384 << 10, buf), 0);
	fx_member_path(m1, sizeof(m1), "rt", 1);
	file_read(m1, x, 65536, 65536);
	file_read(p, y, 65536, 65536);
	assert_memory_equal(x, y, 65536);
	/* Row 4, not written since: the replacement has nothing there. */
	file_read(m1, x, 65536, 4 * 65536);
	file_read(p, y, 65536, 4 * 65536);
	assert_memory_not_equal(x, y, 65536);
	/* Reads never reach it. */
	fake_nlog = 0;
	fake_log_on = true;
	assert_int_equal(testreq_io(a, RF_REQ_READ, 0, 1 << 20, buf), 0);
	fake_log_on = false;
	assert_true(fake_nlog > 0);
	for (int i = 0; i < fake_nlog && i < FAKE_LOG_MAX; i++)
		assert_int_not_equal(fake_log[i].member, j.dev);
	/* A write it loses: the request succeeds, the slot stays. */
	fake_fail_member = j.dev;
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, 384 << 10, buf), 0);
	fake_fail_member = -1;
	assert_true(rf_replace_failed_mask(a) >> 1 & 1);
	assert_int_equal(rf_array_faulty(a), 0);
	/* Nothing more reaches it: row 1 moves on without it. */
	fx_rand_fill(buf, 1 << 20);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, 384 << 10, buf), 0);
	file_read(m1, x, 65536, 65536);
	file_read(p, y, 65536, 65536);
	assert_memory_not_equal(x, y, 65536);
	/* Out of frozen: the management thread detaches it, faulty. */
	assert_int_equal(rf_sync_request(a, RF_SYNC_IDLE), 0);
	for (int i = 0; i < 1000 && rf_replace_mask(a); i++)
		usleep(10000);
	assert_int_equal(rf_replace_mask(a), 0);
	assert_true(info_of(a, "rt-spare.img").flags & RF_DEV_FAULTY);
	assert_int_equal(rf_array_faulty(a), 0);
	rf_array_close(a);
	free(buf);
	free(x);
	free(y);
}

/* want_replacement: the spare is filled and takes the slot, alone it holds
 * the slot's data; refused on a spare. */
static void test_replace_flow(void **state)
{
	struct rf_array *a = open_named("rf", 5, false);
	char p[FX_PATH], *buf = aligned_alloc(4096, 1 << 20), *back = aligned_alloc(4096, 1 << 20);
	struct rf_dev_info d;

	fx_rand_fill(buf, 1 << 20);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, 1 << 20, buf), 0);
	spare(a, "rf-spare.img", p);
	assert_int_equal(rf_memberctl_set_state(a, "rf-spare.img", "want_replacement"), -EBUSY);
	assert_int_equal(rf_memberctl_set_state(a, "rf-2.img", "want_replacement"), 0);
	wait_in_sync(a, "rf-spare.img");
	assert_int_equal(info_of(a, "rf-spare.img").slot, 2);
	d = info_of(a, "rf-2.img");
	assert_int_equal(d.slot, -1);
	assert_true(d.flags & RF_DEV_FAULTY);
	assert_int_equal(rf_array_faulty(a), 0);
	assert_int_equal(rf_replace_mask(a), 0);
	/* Slot 0 gone: slot 2's data comes from the replacement. */
	assert_int_equal(rf_memberctl_set_state(a, "rf-0.img", "faulty"), 0);
	memset(back, 0, 1 << 20);
	assert_int_equal(testreq_io(a, RF_REQ_READ, 0, 1 << 20, back), 0);
	assert_memory_equal(back, buf, 1 << 20);
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
		cmocka_unit_test(test_replace_twin),
		cmocka_unit_test(test_replace_flow),
	};

	return fx_run_tests("member", tests);
}
