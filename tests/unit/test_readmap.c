/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_readmap.c - the read map (readmap.h): a read of the array as the
 * member extents that hold it, for every level.
 *
 *  - extents right: each array is filled with random data through the
 *    array; for random reads (unaligned, crossing chunks, up to 1 MiB)
 *    the bytes the extents name, read straight from the member files,
 *    are the bytes the array reads;
 *  - refusals: a raid5 chunk on a failed member, or on a member being
 *    rebuilt at or past its recovery offset, is not mapped, while a chunk
 *    of the same array on an in-sync member is (md's chunk-aligned read);
 *    raid0 with a failed member; raid1 with no copy in sync (and with one,
 *    the other copy is named); an overlay, an NBD export or a layer on a
 *    member; reads held at the barrier; more extents than a map holds;
 *  - the barrier: a map counts as a read in flight until it is ended, a
 *    refused one leaves nothing counted;
 *  - fault injection is asked per extent, on the extent's member only;
 *  - mappings (fdmap.h): with members on tmpfs every extent carries the
 *    address of its bytes in the member's mapping, and those bytes are the
 *    array's; with mapping off, none does and the map still answers.
 *
 * Seed: RF_TEST_SEED (printed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "core/engine.h"
#include "fixture.h"
#include "raidfuse/fault.h"
#include "raidfuse/fdmap.h"
#include "raidfuse/readmap.h"
#include "testreq.h"

#define MEMBER_BYTES (4u << 20)
#define MAXLEN (1u << 20)

static char *abuf, *mbuf;
/* 1: every extent carries its mapped address, -1: none does, 0: checked
 * where there is one. */
static int want_addr;

/* Whether the scratch directory's files are mapped when opened. */
static bool members_mapped(void)
{
	struct statfs sf;

	return rf_fdmap_on() && !statfs(fx_dir, &sf) && sf.f_type == TMPFS_MAGIC;
}

/* Fill the whole array with random data through the array. */
static void fill(struct rf_array *a)
{
	uint64_t size = rf_array_size(a), off;

	for (off = 0; off < size; off += MAXLEN) {
		uint32_t len = size - off < MAXLEN ? (uint32_t)(size - off) : MAXLEN;

		fx_rand_fill(abuf, len);
		assert_int_equal(testreq_io(a, RF_REQ_WRITE, off, len, abuf), 0);
	}
}

/* Map [off, off + len), read the extents from the member files and
 * compare with the array's read; the map's result (the map is ended). */
static int map_check(struct rf_array *a, uint64_t off, uint32_t len)
{
	static struct rf_read_map m;
	uint32_t at = 0;
	int i, ret;

	ret = rf_read_map(a, off, len, &m);
	if (ret) {
		assert_int_equal(atomic_load(&a->inflight[0]), 0);
		return ret;
	}
	assert_int_equal(atomic_load(&a->inflight[0]), 1);
	assert_int_equal(m.len, len);
	for (i = 0; i < m.n; i++) {
		const struct rf_rextent *e = &m.ext[i];

		assert_true(e->member >= 0 && e->member < rf_array_nslots(a));
		assert_int_equal(e->fd, a->devs[e->member].io.fd);
		assert_true(at + e->len <= len);
		assert_int_equal(pread(e->fd, mbuf + at, e->len, (off_t)e->off), (ssize_t)e->len);
		if (want_addr > 0)
			assert_non_null(e->addr);
		if (want_addr < 0)
			assert_null(e->addr);
		if (e->addr)
			assert_memory_equal(e->addr, mbuf + at, e->len);
		at += e->len;
	}
	rf_read_unmap(&m);
	assert_int_equal(atomic_load(&a->inflight[0]), 0);
	assert_int_equal(at, len);
	assert_int_equal(testreq_io(a, RF_REQ_READ, off, len, abuf), 0);
	assert_memory_equal(mbuf, abuf, len);
	return 0;
}

static const struct fx_array arrays[] = {
	{ .what = "r0", .data_offset = 65536, .level = 0, .n = 3, .chunk = 65536 },
	{ .what = "r0c4k", .data_offset = 65536, .level = 0, .n = 2, .chunk = 4096 },
	{ .what = "r1", .data_offset = 65536, .level = 1, .n = 2 },
	{ .what = "r10n2", .data_offset = 65536, .level = 10, .layout = 0x102, .n = 4, .chunk = 65536 },
	{ .what = "r10f2", .data_offset = 65536, .level = 10, .layout = 0x201, .n = 4, .chunk = 65536 },
	{ .what = "r10o2", .data_offset = 65536, .level = 10, .layout = 0x10201, .n = 3, .chunk = 65536 },
	{ .what = "r4", .data_offset = 65536, .level = 4, .layout = 5, .n = 4, .chunk = 65536 },
	{ .what = "r5ls", .data_offset = 65536, .level = 5, .layout = 2, .n = 4, .chunk = 65536 },
	{ .what = "r5la", .data_offset = 65536, .level = 5, .layout = 0, .n = 5, .chunk = 16384 },
	{ .what = "r6", .data_offset = 65536, .level = 6, .layout = 2, .n = 5, .chunk = 65536 },
};

static struct rf_array *open_filled(const struct fx_array *sp)
{
	struct rf_array *a;

	fx_make_members(sp->what, sp->n, MEMBER_BYTES, false);
	a = fx_open_spec(sp, 0, NULL);
	fill(a);
	return a;
}

/* Random reads of every level: the extents hold the array's bytes. */
static void test_extents_right(void **state)
{
	size_t k;

	want_addr = members_mapped() ? 1 : -1;
	if (want_addr < 0)
		print_message("members not on tmpfs: extents are checked without addresses\n");
	for (k = 0; k < sizeof(arrays) / sizeof(arrays[0]); k++) {
		struct rf_array *a = open_filled(&arrays[k]);
		uint64_t size = rf_array_size(a);
		int i;

		assert_int_equal(rf_read_map_all_mapped(a), want_addr > 0);
		for (i = 0; i < 60; i++) {
			uint32_t len = (uint32_t)(fx_rand() % MAXLEN) + 1;
			uint64_t off;

			if (i % 3 == 0)
				len = (len + 4095) & ~4095u;
			if (len > size)
				len = (uint32_t)size;
			off = fx_rand() % (size - len + 1);
			if (i % 3 == 0)
				off &= ~4095ull;
			if (arrays[k].chunk == 4096 && len > MAXLEN / 2)
				len = MAXLEN / 2;       /* room in the map: see test_too_many */
			assert_int_equal(map_check(a, off, len), 0);
		}
		/* A whole 1 MiB, and 192 KiB across chunks. */
		if (arrays[k].chunk != 4096)
			assert_int_equal(map_check(a, 0, MAXLEN), 0);
		assert_int_equal(map_check(a, 3 * 65536 - 4096, 192 << 10), 0);
		rf_array_close(a);
	}
	want_addr = 0;
}

/* Mapping off: the same reads map, with no addresses; on again, an array
 * opened then has them. */
static void test_mapping_off(void **state)
{
	const struct fx_array *sp = &arrays[7];        /* raid5, left-symmetric */
	struct rf_array *a;

	(void)state;
	if (!members_mapped())
		skip();                 /* nothing would be mapped anyway */
	rf_fdmap_setup(false);
	a = open_filled(sp);
	assert_false(rf_read_map_all_mapped(a));
	want_addr = -1;
	assert_int_equal(map_check(a, 0, 65536), 0);
	assert_int_equal(map_check(a, 3 * 65536 - 4096, 192 << 10), 0);
	rf_array_close(a);
	rf_fdmap_setup(true);
	a = fx_open_spec(sp, 0, NULL);
	assert_true(rf_read_map_all_mapped(a));
	want_addr = 1;
	assert_int_equal(map_check(a, 3 * 65536 - 4096, 192 << 10), 0);
	want_addr = 0;
	rf_array_close(a);
}

/* The first array byte offset at or after from whose chunk lies on
 * member k (raid4/5/6, from < size). */
static uint64_t chunk_on(struct rf_array *a, int k, uint64_t from, bool want)
{
	uint64_t cb = rf_chunk_bytes(a), off;

	for (off = from & ~(cb - 1); off < a->size; off += cb) {
		struct rf_r5_map m;

		rf_r5_map_sector(&a->geom, off >> 9, &m);
		if ((m.dd_idx == k) == want)
			return off;
	}
	fail_msg("no chunk %s member %d", want ? "on" : "off", k);
	return 0;
}

static void test_raid5_degraded(void **state)
{
	struct rf_array *a = open_filled(&arrays[7]);
	uint64_t on = chunk_on(a, 1, 0, true), off = chunk_on(a, 1, 0, false);

	assert_int_equal(map_check(a, on, 4096), 0);
	rf_member_fail(a, 1, -EIO, "read", 0);
	/* The failed member's chunk is rebuilt through a stripe head. */
	assert_int_equal(map_check(a, on, 4096), -EAGAIN);
	assert_int_equal(map_check(a, on + 4096, 8192), -EAGAIN);
	/* A read that crosses into it neither. */
	assert_true(on >= 4096);
	assert_int_equal(map_check(a, on - 4096, 8192), -EAGAIN);
	/* Another member's chunk is read from it, as md's aligned read. */
	assert_int_equal(map_check(a, off, 65536), 0);
	rf_array_close(a);
}

/* A device being rebuilt holds its slot's data below its recovery offset
 * only. */
static void test_raid5_rebuilding(void **state)
{
	struct rf_array *a = open_filled(&arrays[7]);
	uint64_t lo = chunk_on(a, 2, 0, true), hi;
	struct rf_r5_map m;

	rf_r5_map_sector(&a->geom, lo >> 9, &m);
	/* Rebuilt up to just past lo's chunk on member 2. */
	atomic_store(&a->devs[2].recovery_offset, m.dev_sector + rf_chunk_bytes(a) / 512);
	atomic_store(&a->recovering, 1ull << 2);
	hi = chunk_on(a, 2, lo + rf_chunk_bytes(a), true);
	assert_int_equal(map_check(a, lo, 4096), 0);
	assert_int_equal(map_check(a, hi, 4096), -EAGAIN);
	atomic_store(&a->recovering, 0);
	assert_int_equal(map_check(a, hi, 4096), 0);
	rf_array_close(a);
}

/* raid0 fails no member (md's raid0_error): an error leaves the array
 * broken, and reads go on from every member, mapped as before. */
static void test_raid0_failed(void **state)
{
	struct rf_array *a = open_filled(&arrays[0]);

	assert_int_equal(map_check(a, 0, 4096), 0);
	assert_false(rf_member_fail(a, 2, -EIO, "read", 0));
	assert_true(atomic_load(&a->broken));
	assert_int_equal(rf_faulty(a), 0);
	assert_int_equal(map_check(a, 0, 4096), 0);
	rf_array_close(a);
}

/* raid1: a failed copy or one being rebuilt is never named; the last
 * copy is never failed (md's raid1_error): the array is broken and reads
 * go on from it. */
static void test_raid1_copies(void **state)
{
	struct rf_array *a = open_filled(&arrays[2]);
	static struct rf_read_map m;
	int i;

	assert_true(rf_member_fail(a, 0, -EIO, "read", 0));
	for (i = 0; i < 4; i++) {
		assert_int_equal(rf_read_map(a, 4096 * (uint64_t)i, 65536, &m), 0);
		assert_int_equal(m.n, 1);
		assert_int_equal(m.ext[0].member, 1);
		rf_read_unmap(&m);
		assert_int_equal(map_check(a, 4096 * (uint64_t)i, 65536), 0);
	}
	assert_false(rf_member_fail(a, 1, -EIO, "read", 0));
	assert_true(atomic_load(&a->broken));
	assert_int_equal(rf_faulty(a), 1);
	assert_int_equal(rf_read_map(a, 0, 65536, &m), 0);
	assert_int_equal(m.ext[0].member, 1);
	rf_read_unmap(&m);
	rf_array_close(a);

	a = open_filled(&arrays[2]);
	atomic_store(&a->recovering, 1ull << 1);
	for (i = 0; i < 4; i++) {
		assert_int_equal(rf_read_map(a, 0, 65536, &m), 0);
		assert_int_equal(m.ext[0].member, 0);
		rf_read_unmap(&m);
	}
	atomic_store(&a->recovering, 0);
	rf_array_close(a);
}

/* Whether [off, off + len) of a maps (the map ended at once). */
static int maps(struct rf_array *a, uint64_t off, uint32_t len)
{
	static struct rf_read_map m;
	int ret = rf_read_map(a, off, len, &m);

	if (!ret)
		rf_read_unmap(&m);
	assert_int_equal(atomic_load(&a->inflight[0]), 0);
	return ret;
}

/* Only plain members: an overlay, a layer or an NBD export on a member
 * it names refuses the map.  The array is not started (no thread reads
 * the fields the test changes); the map needs none. */
static void test_backends(void **state)
{
	struct rf_config cfg;
	struct rf_array *a;
	void *was;

	fx_make_members(arrays[0].what, arrays[0].n, MEMBER_BYTES, false);
	fx_config(&cfg, &arrays[0]);
	a = fx_open_only(&cfg, arrays[0].what);
	assert_int_equal(maps(a, 0, 65536 * 3), 0);
	a->overlay = true;
	assert_int_equal(maps(a, 0, 65536), -EAGAIN);
	a->overlay = false;
	was = a->devs[1].io.layer;
	a->devs[1].io.layer = a;        /* never used by the map: only looked at */
	assert_int_equal(maps(a, 65536, 4096), -EAGAIN);
	assert_int_equal(maps(a, 0, 65536 * 3), -EAGAIN);
	/* The other members' chunks still map. */
	assert_int_equal(maps(a, 0, 65536), 0);
	a->devs[1].io.layer = was;
	a->devs[1].io.nbd = (struct rf_nbd *)a;
	assert_int_equal(maps(a, 65536, 4096), -EAGAIN);
	a->devs[1].io.nbd = NULL;
	assert_int_equal(maps(a, 65536, 4096), 0);
	rf_array_close(a);
}

/* Held reads: the map refuses, counts nothing. */
static void test_barrier(void **state)
{
	struct rf_array *a = open_filled(&arrays[3]);
	static struct rf_read_map m;

	atomic_fetch_or(&a->hold, RF_HOLD_READS);
	assert_int_equal(rf_read_map(a, 0, 65536, &m), -EAGAIN);
	assert_int_equal(atomic_load(&a->inflight[0]), 0);
	atomic_store(&a->hold, RF_HOLD_WRITES);
	/* A write drain lets reads through. */
	assert_int_equal(rf_read_map(a, 0, 65536, &m), 0);
	assert_int_equal(atomic_load(&a->inflight[0]), 1);
	rf_read_unmap(&m);
	atomic_store(&a->hold, 0);
	assert_int_equal(atomic_load(&a->inflight[0]), 0);
	/* Out of the array. */
	assert_int_equal(rf_read_map(a, rf_array_size(a) - 4096, 8192, &m), -EINVAL);
	assert_int_equal(rf_read_map(a, 0, 0, &m), -EINVAL);
	rf_array_close(a);
}

static void test_too_many(void **state)
{
	struct rf_array *a = open_filled(&arrays[1]);
	static struct rf_read_map m;

	/* 4 KiB chunks: 1 MiB is 256 extents, one more page is 257. */
	assert_int_equal(map_check(a, 0, MAXLEN), 0);
	assert_int_equal(rf_read_map(a, 0, MAXLEN + 4096, &m), -E2BIG);
	assert_int_equal(atomic_load(&a->inflight[0]), 0);
	rf_array_close(a);
}

static void test_fault_per_extent(void **state)
{
	struct rf_array *a = open_filled(&arrays[0]);
	static struct rf_read_map m;
	struct rf_fault_spec s;
	char err[256];
	int i, hits = 0;

	assert_int_equal(rf_fault_parse("error=EIO ops=read", &s, err, sizeof(err)), 0);
	rf_fault_set(a->devs[1].io.fault, &s);
	assert_int_equal(rf_read_map(a, 0, 3 * 65536, &m), 0);
	assert_int_equal(m.n, 3);
	for (i = 0; i < m.n; i++) {
		int ret = rf_read_map_fault(&m, i);

		assert_int_equal(ret, m.ext[i].member == 1 ? -EIO : 0);
		hits += ret != 0;
	}
	assert_int_equal(hits, 1);
	rf_read_unmap(&m);
	rf_fault_parse("off", &s, err, sizeof(err));
	rf_fault_set(a->devs[1].io.fault, &s);
	assert_int_equal(rf_read_map(a, 0, 3 * 65536, &m), 0);
	for (i = 0; i < m.n; i++)
		assert_int_equal(rf_read_map_fault(&m, i), 0);
	rf_read_unmap(&m);
	rf_array_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extents_right),
		cmocka_unit_test(test_mapping_off),
		cmocka_unit_test(test_raid5_degraded),
		cmocka_unit_test(test_raid5_rebuilding),
		cmocka_unit_test(test_raid0_failed),
		cmocka_unit_test(test_raid1_copies),
		cmocka_unit_test(test_backends),
		cmocka_unit_test(test_barrier),
		cmocka_unit_test(test_too_many),
		cmocka_unit_test(test_fault_per_extent),
	};
	int ret;

	assert_int_equal(posix_memalign((void **)&abuf, 4096, MAXLEN + 4096), 0);
	assert_int_equal(posix_memalign((void **)&mbuf, 4096, MAXLEN + 4096), 0);
	ret = fx_run_tests("readmap", tests);
	free(abuf);
	free(mbuf);
	return ret;
}
