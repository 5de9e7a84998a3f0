/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_resize.c - the members' used size and the image's size changed
 * online (services/resize.c, resize.h; the bitmap's part in bitmap.c).
 *
 * Arrays made as `raidfuse create` makes them (1.2 superblocks), assembled
 * as the daemon assembles them, filled against a model; their member
 * files then extended with garbage, as a larger disk holds what it held:
 *  - what md refuses is refused, naming the device or the reason, and
 *    nothing changes: raid0, no superblocks, a size a device does not
 *    hold (the spare included, as md counts every device), max while a
 *    spare is still the old size (unchanged, not an error);
 *  - raid5 with a bitmap, raid6, raid1 and raid10 grown to "max": the
 *    image grows by the data members' share, the model's bytes stay, the
 *    new rows are resynced (check counts 0 over the garbage), the bitmap
 *    covers the new size; IO against the model over all of it; assembled
 *    again from the superblocks: the new size, the model, check 0;
 *  - a shrink as mdadm does it: array_size first (the image cut), a
 *    component size below it refused, then the component size; assembled
 *    again at the smaller size with the model's bytes;
 *  - a bitmap whose bits no longer fit its room doubles its chunk (md's
 *    md_bitmap_resize), and is read back so after assembly.
 * Negative control: raid5 and raid10 are grown with sync_action frozen,
 * so the grown rows are not resynced: the check finds the garbage's
 * mismatches; the resync asked for then clears them.
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
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "fixture.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/resize.h"
#include "raidfuse/sync.h"
#include "testreq.h"

#define EXTRA (4u << 20)        /* bytes each member file grows by */

/* Member files paths[0..n) grow by extra bytes of garbage. */
static void extend(char (*paths)[FX_PATH], int n, uint64_t extra)
{
	char *buf = malloc(extra);
	struct stat st;
	int i, fd;

	assert_non_null(buf);
	for (i = 0; i < n; i++) {
		fx_rand_fill(buf, extra);
		fd = open(paths[i], O_WRONLY);
		assert_true(fd >= 0);
		assert_int_equal(fstat(fd, &st), 0);
		assert_int_equal(pwrite(fd, buf, extra, st.st_size), (ssize_t)extra);
		assert_int_equal(close(fd), 0);
	}
	free(buf);
}

static uint64_t mismatches(struct rf_array *a)
{
	struct rf_sync_status st;

	rf_sync_wait(a);
	assert_int_equal(rf_sync_request(a, RF_SYNC_CHECK), 0);
	rf_sync_wait(a);
	rf_sync_get(a, &st);
	return st.mismatch_cnt;
}

/* The model's first have bytes read back; the bytes from there to the
 * array's end become the model's (what the grown rows hold). */
static void model_after_grow(struct rf_array *a, char *model, uint64_t have)
{
	uint64_t size = rf_array_size(a), off;

	for (off = have; off < size; off += 1u << 20)
		assert_int_equal(testreq_io(a, RF_REQ_READ, off, size - off < (1u << 20) ? (uint32_t)(size - off) : 1u << 20,
					    model + off), 0);
	assert_int_equal(fx_model_diff(a, model, 1u << 20), 0);
}

static void test_refused(void **state)
{
	char paths[6][FX_PATH], err[512];
	struct rf_array *a;
	uint64_t size, comp;
	struct fx_array sp = { .what = "rz-none", .level = 5, .n = 3, .chunk = 64 << 10 };
	int ret;

	(void)state;
	/* raid0: md has no resize for it. */
	fx_create_md("rz0", 0, 2, 0, "8M", 0, paths);
	a = fx_serve_md(paths, 2);
	size = rf_array_size(a);
	ret = rf_resize_component(a, 0, err, sizeof(err));
	assert_int_equal(ret, -EINVAL);
	assert_non_null(strstr(err, "raid0"));
	assert_int_equal(rf_array_size(a), size);
	rf_array_close(a);
	/* No superblocks: nothing to record it in. */
	fx_make_members(sp.what, sp.n, 8 << 20, false);
	a = fx_open_spec(&sp, fx_gtc, NULL);
	ret = rf_resize_component(a, 0, err, sizeof(err));
	assert_int_equal(ret, -EOPNOTSUPP);
	assert_non_null(strstr(err, "superblocks"));
	rf_array_close(a);
	/* raid5 and a spare: the members grown, the spare not. */
	fx_create_md("rz5", 5, 3, 1, "8M", 0, paths);
	a = fx_serve_md(paths, 4);
	size = rf_array_size(a);
	comp = rf_array_geom(a)->dev_sectors;
	extend(paths, 3, EXTRA);
	assert_int_equal(rf_resize_component(a, 0, err, sizeof(err)), 0);
	assert_int_equal(rf_array_size(a), size);
	assert_int_equal(rf_resize_component(a, comp + 128, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, paths[3]));
	assert_int_equal(rf_array_size(a), size);
	assert_int_equal(rf_array_geom(a)->dev_sectors, comp);
	/* An array_size past the members' is refused. */
	assert_int_equal(rf_resize_array(a, size + (1 << 20), err, sizeof(err)), -E2BIG);
	assert_int_equal(rf_array_size(a), size);
	rf_array_close(a);
}

/* level, n members (and one spare) of 8 MiB, a bitmap of bm bytes'
 * chunks (0: none), grown to max once every file is EXTRA longer.
 * frozen: sync_action frozen first, so the grown rows are not resynced:
 * the check must find their garbage (the negative control), then the
 * resync asked for makes them agree. */
static void grow_max(const char *what, int level, int n, uint64_t bm, bool frozen)
{
	char paths[8][FX_PATH], err[512], *model;
	struct rf_bitmap_status bs;
	struct rf_array *a;
	uint64_t old, comp, mm;
	int data;

	fx_create_md(what, level, n, 1, "8M", bm, paths);
	a = fx_serve_md(paths, n + 1);
	old = rf_array_size(a);
	comp = rf_array_geom(a)->dev_sectors;
	data = (int)(old / 512 / comp);
	model = calloc(1, old + (uint64_t)n * EXTRA);
	assert_non_null(model);
	fx_model_fill(a, model, 256 << 10, 50);
	extend(paths, n + 1, EXTRA);
	if (frozen)
		assert_int_equal(rf_sync_request(a, RF_SYNC_FROZEN), 0);
	if (rf_resize_component(a, 0, err, sizeof(err)))
		fail_msg("%s: grow to max: %s", what, err);
	assert_int_equal(rf_array_geom(a)->dev_sectors, comp + EXTRA / 512);
	assert_int_equal(rf_array_size(a), old + (uint64_t)data * EXTRA);
	if (frozen) {
		struct rf_sync_status st;

		/* The resync is due from the walk's old end, in its units
		 * (raid10 walks array sectors, md's recovery_cp = oldsize). */
		rf_sync_get(a, &st);
		assert_int_equal(st.resync_cp, level == 10 ? old / 512 : comp);
		mm = mismatches(a);
		if (!mm)
			fail_msg("%s: control: the grown rows were not resynced, and check found them consistent", what);
		printf("%s: control: %llu mismatched sectors in the rows not resynced\n", what, (unsigned long long)mm);
		assert_int_equal(rf_sync_request(a, RF_SYNC_RESYNC), 0);
	}
	mm = mismatches(a);
	if (mm)
		fail_msg("%s: check after the grow: %llu mismatched sectors", what, (unsigned long long)mm);
	model_after_grow(a, model, old);
	if (bm) {
		rf_bitmap_get(rf_array_bitmap(a), &bs);
		assert_int_equal(bs.chunks, (comp + EXTRA / 512 + bm / 512 - 1) / (bm / 512));
	}
	assert_int_equal(fx_model_io(a, model, 200, 256 << 10), 0);
	rf_array_close(a);
	a = fx_serve_md(paths, n + 1);
	assert_int_equal(rf_array_size(a), old + (uint64_t)data * EXTRA);
	assert_int_equal(fx_model_diff(a, model, 1u << 20), 0);
	assert_int_equal(mismatches(a), 0);
	rf_array_close(a);
	free(model);
}

static void test_raid5_bitmap(void **state)
{
	(void)state;
	grow_max("rz5b", 5, 3, 64 << 10, true);
}

static void test_raid6(void **state)
{
	(void)state;
	grow_max("rz6", 6, 4, 0, false);
}

static void test_raid1(void **state)
{
	(void)state;
	grow_max("rz1", 1, 2, 64 << 10, false);
}

static void test_raid10(void **state)
{
	(void)state;
	grow_max("rz10", 10, 4, 0, true);
}

/* mdadm's shrink: --array-size, then --size. */
static void test_shrink(void **state)
{
	char paths[6][FX_PATH], err[512], *model;
	struct rf_array *a;
	uint64_t old, comp;
	int i;

	(void)state;
	fx_create_md("rzs", 6, 4, 0, "8M", 0, paths);
	a = fx_serve_md(paths, 4);
	old = rf_array_size(a);
	comp = rf_array_geom(a)->dev_sectors;
	model = calloc(1, old);
	assert_non_null(model);
	fx_model_fill(a, model, 256 << 10, 50);
	assert_int_equal(rf_resize_array(a, old / 2, err, sizeof(err)), 0);
	assert_int_equal(rf_array_size(a), old / 2);
	/* A component size under the array size set: refused (md's
	 * raid5_resize), nothing cut. */
	assert_int_equal(rf_resize_component(a, comp / 4, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "array_size"));
	assert_int_equal(rf_array_geom(a)->dev_sectors, comp);
	assert_int_equal(rf_resize_component(a, comp / 2, err, sizeof(err)), 0);
	assert_int_equal(rf_array_geom(a)->dev_sectors, comp / 2);
	assert_int_equal(rf_resize_array(a, 0, err, sizeof(err)), 0);
	assert_int_equal(rf_array_size(a), old / 2);
	assert_int_equal(fx_model_diff(a, model, 1u << 20), 0);
	rf_array_close(a);
	a = fx_serve_md(paths, 4);
	assert_int_equal(rf_array_size(a), old / 2);
	for (i = 0; i < 4; i++)
		assert_int_equal(rf_dev_get(a, i)->sb.size, comp / 2);
	assert_int_equal(fx_model_diff(a, model, 1u << 20), 0);
	assert_int_equal(mismatches(a), 0);
	rf_array_close(a);
	free(model);
}

/* A raid1 of 8 MiB members with 4 KiB bitmap chunks: 1792 bits, one
 * sector with the header, all the room md counts on (1.2 records none:
 * md_bitmap_resize keeps to the size loaded).  Grown by 4 MiB the bits
 * no longer fit: the chunk doubles to 8 KiB (1408 bits), the chunks'
 * bits merged; assembled again the bitmap reads so, and the array is
 * the model. */
static void test_bitmap_chunk(void **state)
{
	char paths[3][FX_PATH], err[512], *model;
	struct rf_bitmap_status bs;
	struct rf_array *a;
	uint64_t old;

	(void)state;
	fx_create_md("rzbm", 1, 2, 0, "8M", 4096, paths);
	a = fx_serve_md(paths, 2);
	old = rf_array_size(a);
	model = calloc(1, old + EXTRA);
	assert_non_null(model);
	fx_model_fill(a, model, 256 << 10, 50);
	rf_bitmap_get(rf_array_bitmap(a), &bs);
	assert_int_equal(bs.chunk_bytes, 4096);
	assert_int_equal(bs.chunks, old / 4096);
	extend(paths, 2, EXTRA);
	if (rf_resize_component(a, 0, err, sizeof(err)))
		fail_msg("grow: %s", err);
	rf_bitmap_get(rf_array_bitmap(a), &bs);
	assert_int_equal(bs.chunk_bytes, 8192);
	assert_int_equal(bs.chunks, (old + EXTRA) / 8192);
	assert_int_equal(mismatches(a), 0);
	model_after_grow(a, model, old);
	assert_int_equal(fx_model_io(a, model, 100, 256 << 10), 0);
	rf_array_close(a);
	a = fx_serve_md(paths, 2);
	rf_bitmap_get(rf_array_bitmap(a), &bs);
	assert_int_equal(bs.chunk_bytes, 8192);
	assert_int_equal(bs.chunks, (old + EXTRA) / 8192);
	assert_int_equal(fx_model_diff(a, model, 1u << 20), 0);
	rf_array_close(a);
	free(model);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_refused, fx_threads2),
		cmocka_unit_test_setup(test_raid5_bitmap, fx_threads2),
		cmocka_unit_test_setup(test_raid6, fx_inline0),
		cmocka_unit_test_setup(test_raid1, fx_threads2),
		cmocka_unit_test_setup(test_raid10, fx_threads2),
		cmocka_unit_test_setup(test_shrink, fx_threads2),
		cmocka_unit_test_setup(test_bitmap_chunk, fx_threads2),
	};

	return fx_run_tests("resize", tests);
}
