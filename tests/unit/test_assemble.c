/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_assemble.c - md arrays as kernel md leaves them, assembled from their
 * superblocks and served: members whose data offsets differ (a member added
 * later or replaced), raid0 over members of different sizes (md's zones and
 * its raid0 layout feature) and raid5 over two members.
 *
 * Each array is written here the way md lays it out (layout.c's maps, which
 * test_layout checks against kernel-made arrays and an independent
 * reference), every array sector s holding u64le(s) 64 times, at each
 * member's own data offset; then rf_assemble() reads the superblocks and
 * the engine must read the pattern back, whole and degraded, and put new
 * writes at each member's own offset.  A negative control serves the same
 * members with one offset for all and must see wrong data.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raidfuse/array.h"
#include "raidfuse/assemble.h"
#include "raidfuse/layout.h"
#include "raidfuse/super.h"
#include "raidfuse/sync.h"
#include "testdir.h"
#include "testreq.h"

#define SECT 512u
#define CHUNK_SECTORS 32u       /* 16 KiB */

static char dir[256];

struct md_array {
	int level, layout, n;
	uint64_t member_sectors[RF_MAX_MEMBERS];
	uint64_t data_offset[RF_MAX_MEMBERS];   /* sectors */
	bool raid0_layout;                      /* record it (feature bit) */
	struct rf_geom g;                       /* as md maps it */
	char paths[RF_MAX_MEMBERS][300];
	const char *pathv[RF_MAX_MEMBERS];
};

static void fill_sector(uint8_t *p, uint64_t s)
{
	int i, b;

	for (i = 0; i < 64; i++)
		for (b = 0; b < 8; b++)
			p[i * 8 + b] = (uint8_t)(s >> (8 * b));
}

static void put(int fd, uint64_t byte_off, const void *buf, size_t len)
{
	assert_int_equal(pwrite(fd, buf, len, (off_t)byte_off), (ssize_t)len);
}

static void get(int fd, uint64_t byte_off, void *buf, size_t len)
{
	assert_int_equal(pread(fd, buf, len, (off_t)byte_off), (ssize_t)len);
}

/* Make the members: superblocks (one array, each its own data offset),
 * then (with pattern) the pattern where md puts it, and raid5's parity. */
static void md_make_as(struct md_array *m, bool pattern)
{
	struct rf_sb_new n;
	uint64_t min = UINT64_MAX, s;
	char err[512];
	int fds[RF_MAX_MEMBERS], i;
	uint8_t sec[SECT];

	memset(&n, 0, sizeof(n));
	assert_int_equal(rf_sb_random_uuid(n.uuid), 0);
	snprintf(n.name, sizeof(n.name), "found");
	n.level = m->level;
	n.layout = m->level == 0 ? 1 : m->layout;
	n.chunk_sectors = CHUNK_SECTORS;
	n.raid_disks = m->n;
	n.clean = true;
	n.raid0_layout = m->raid0_layout;
	for (i = 0; i < m->n; i++) {
		uint64_t d = m->member_sectors[i] - m->data_offset[i];

		if (d < min)
			min = d;
	}
	min -= min % CHUNK_SECTORS;
	n.size = m->level == 0 ? 0 : min;

	memset(&m->g, 0, sizeof(m->g));
	m->g.level = m->level;
	m->g.layout = m->level == 0 ? (m->raid0_layout ? 1 : 0) : m->layout;
	m->g.raid_disks = m->n;
	m->g.chunk_sectors = CHUNK_SECTORS;
	m->g.dev_sectors = min;
	for (i = 0; m->level == 0 && i < m->n; i++)
		m->g.r0_sectors[i] = m->member_sectors[i] - m->data_offset[i];
	if (m->level == 0 && !m->raid0_layout)
		m->g.layout = 1;        /* how the test writes it; the array records none */
	assert_int_equal(rf_geom_init(&m->g, err, sizeof(err)), 0);

	for (i = 0; i < m->n; i++) {
		snprintf(m->paths[i], sizeof(m->paths[i]), "%s/m%d.img", dir, i);
		m->pathv[i] = m->paths[i];
		fds[i] = open(m->paths[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
		assert_true(fds[i] >= 0);
		assert_int_equal(ftruncate(fds[i], (off_t)(m->member_sectors[i] * SECT)), 0);
		n.data_offset = m->data_offset[i];
		if (rf_sb_write12(fds[i], m->paths[i], &n, i, m->member_sectors[i], err, sizeof(err)))
			print_error("%s\n", err);
		assert_int_equal(rf_sb_write12(fds[i], m->paths[i], &n, i, m->member_sectors[i], err,
					       sizeof(err)), 0);
	}
	for (s = 0; pattern && s < m->g.array_sectors; s++) {
		int member;
		uint64_t dev;

		fill_sector(sec, s);
		if (m->level == 0) {
			rf_r0_map(&m->g, s, &member, &dev);
		} else {
			struct rf_r5_map map;

			rf_r5_map_sector(&m->g, s, &map);
			member = map.dd_idx;
			dev = map.dev_sector;
			/* 2 members: P is a copy of the one data column; 3: P
			 * is written below */
			if (m->n == 2)
				put(fds[map.pd_idx], (m->data_offset[map.pd_idx] + dev) * SECT, sec, SECT);
		}
		put(fds[member], (m->data_offset[member] + dev) * SECT, sec, SECT);
	}
	if (pattern && m->level == 5 && m->n > 2) {
		for (s = 0; s < m->g.dev_sectors; s++) {
			struct rf_r5_row row;
			uint8_t p[SECT] = { 0 }, d[SECT];
			int k, b;

			rf_r5_row(&m->g, s / CHUNK_SECTORS, &row);
			for (k = 0; k < m->g.data_disks; k++) {
				int mm = row.data_member[k];

				get(fds[mm], (m->data_offset[mm] + s) * SECT, d, SECT);
				for (b = 0; b < (int)SECT; b++)
					p[b] ^= d[b];
			}
			put(fds[row.pd_idx], (m->data_offset[row.pd_idx] + s) * SECT, p, SECT);
		}
	}
	for (i = 0; i < m->n; i++)
		close(fds[i]);
}

static void md_make(struct md_array *m)
{
	md_make_as(m, true);
}

/* The members hold the pattern where md puts it, each at its own data
 * offset, and raid5's rows XOR to zero. */
static void md_check_members(const struct md_array *m)
{
	uint8_t want[SECT], got[SECT];
	int fds[RF_MAX_MEMBERS], i;
	uint64_t s;

	for (i = 0; i < m->n; i++) {
		fds[i] = open(m->paths[i], O_RDONLY);
		assert_true(fds[i] >= 0);
	}
	for (s = 0; s < m->g.array_sectors; s++) {
		struct rf_r5_map map;

		rf_r5_map_sector(&m->g, s, &map);
		fill_sector(want, s);
		get(fds[map.dd_idx], (m->data_offset[map.dd_idx] + map.dev_sector) * SECT, got, SECT);
		if (memcmp(want, got, SECT))
			print_error("array sector %" PRIu64 ": member %d sector %" PRIu64 " (offset %" PRIu64
				    ") does not hold it\n", s, map.dd_idx, map.dev_sector, m->data_offset[map.dd_idx]);
		assert_memory_equal(want, got, SECT);
	}
	for (s = 0; s < m->g.dev_sectors; s++) {
		uint8_t x[SECT] = { 0 };
		int b;

		for (i = 0; i < m->n; i++) {
			get(fds[i], (m->data_offset[i] + s) * SECT, got, SECT);
			for (b = 0; b < (int)SECT; b++)
				x[b] ^= got[b];
		}
		for (b = 0; b < (int)SECT; b++)
			assert_int_equal(x[b], 0);
	}
	for (i = 0; i < m->n; i++)
		close(fds[i]);
}

/* Sectors of the served array that do not hold the pattern. */
static uint64_t bad_grown(struct rf_array *a, uint64_t old_sectors);

static uint64_t bad_sectors(struct rf_array *a)
{
	return bad_grown(a, UINT64_MAX);
}

/* Assemble m's members (leaving out role `without`, -1: none) and serve
 * them; flat: one data offset for all, the negative control. */
static struct rf_array *serve_rw(struct md_array *m, int without, bool flat, bool ro, struct rf_config *cfg)
{
	const char *paths[RF_MAX_MEMBERS];
	struct rf_array *a = NULL;
	char err[1024];
	int i, k = 0, r;

	for (i = 0; i < m->n; i++)
		if (i != without)
			paths[k++] = m->pathv[i];
	r = rf_assemble(paths, k, NULL, ro, cfg, err, sizeof(err));
	if (r)
		print_error("assemble: %s\n", err);
	assert_int_equal(r, 0);
	cfg->stripe_cache_size = 40;
	cfg->worker_groups = 1;
	cfg->group_thread_cnt = 0;
	if (flat)
		cfg->member_offsets = false;
	r = rf_array_open(cfg, &a, err, sizeof(err));
	if (r)
		print_error("open: %s\n", err);
	assert_int_equal(r, 0);
	assert_int_equal(rf_array_start(a), 0);
	return a;
}

static struct rf_array *serve(struct md_array *m, int without, bool flat, struct rf_config *cfg)
{
	return serve_rw(m, without, flat, true, cfg);
}

/* Write the pattern over the whole array. */
static void write_pattern(struct rf_array *a)
{
	uint64_t size = rf_array_size(a), off;
	const uint32_t step = 64 << 10;
	char *buf = malloc(step);
	uint32_t i;

	assert_non_null(buf);
	for (off = 0; off < size; off += step) {
		uint32_t len = size - off < step ? (uint32_t)(size - off) : step;

		for (i = 0; i < len; i += SECT)
			fill_sector((uint8_t *)buf + i, (off + i) / SECT);
		assert_int_equal(testreq_io(a, RF_REQ_WRITE, off, len, buf), 0);
	}
	assert_int_equal(testreq_io(a, RF_REQ_FLUSH, 0, 0, NULL), 0);
	free(buf);
}

/* A raid5 of 3 whose role `replaced` is a replacement with a larger data
 * offset (and a larger device), as mdadm --replace leaves it; the others
 * as created. */
static void make_replaced(struct md_array *m, int replaced)
{
	int i;

	for (i = 0; i < m->n; i++) {
		m->member_sectors[i] = i == replaced ? 12288 : 8192;
		m->data_offset[i] = i == replaced ? 4096 : 2048;
	}
	md_make(m);
}

static void test_offsets_differ(void **state)
{
	struct md_array m = { .level = 5, .layout = 2, .n = 3 };
	struct rf_config cfg;
	struct rf_array *a;
	int i, without;

	(void)state;
	make_replaced(&m, 2);
	for (without = -1; without < m.n; without++) {
		a = serve(&m, without, false, &cfg);
		assert_true(cfg.member_offsets);
		for (i = 0; i < m.n; i++)
			if (i != without)
				assert_int_equal(cfg.member_offset[i], m.data_offset[i] * SECT);
		assert_int_equal(rf_array_size(a), m.g.array_sectors * SECT);
		if (bad_sectors(a))
			print_error("without member %d: %" PRIu64 " sectors wrong\n", without, bad_sectors(a));
		assert_int_equal(bad_sectors(a), 0);
		rf_array_close(a);
		rf_config_free(&cfg);
	}
	/* Negative control: one offset (role 0's) for all reads garbage
	 * from role 2. */
	a = serve(&m, -1, true, &cfg);
	assert_true(bad_sectors(a) > 0);
	rf_array_close(a);
	rf_config_free(&cfg);

	/* Writes: an array of zeros written through the engine holds the
	 * pattern and parity at each member's own offset. */
	md_make_as(&m, false);
	a = serve_rw(&m, -1, false, false, &cfg);
	write_pattern(a);
	rf_array_close(a);
	rf_config_free(&cfg);
	md_check_members(&m);
}

/* A spare added at run time (md/new_dev) gets the data offset mdadm --add
 * gives it, an in-sync member's (slot 0 failed here: slot 1's), and its
 * superblock records the same offset the engine uses (slot 0's, what the
 * engine used to take, would put the rebuilt data 2048 sectors off). */
static void test_spare_offset(void **state)
{
	struct md_array m = { .level = 5, .layout = 2, .n = 3 };
	struct rf_dev_info info;
	struct rf_config cfg;
	struct rf_array *a;
	struct rf_sb sb;
	char path[300], err[1024];
	int fd, dev, r;

	(void)state;
	make_replaced(&m, 1);
	a = serve_rw(&m, -1, false, false, &cfg);
	assert_int_equal(rf_memberctl_set_state(a, "m0.img", "faulty"), 0);
	snprintf(path, sizeof(path), "%s/spare.img", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 12288 * SECT), 0);
	close(fd);
	r = rf_memberctl_add_spare(a, path, err, sizeof(err));
	if (r)
		print_error("add spare: %s\n", err);
	assert_int_equal(r, 0);
	/* The management thread moves the spare into slot 0 (the device
	 * table's entries swap): its index is read once it is there. */
	for (r = 0; r < 500 && rf_member_find(a, "spare.img") != 0; r++)
		usleep(10000);
	dev = rf_member_find(a, "spare.img");
	assert_int_equal(dev, 0);
	assert_int_equal(rf_member_info(a, dev, &info), 0);
	assert_int_equal(info.offset, 4096);
	rf_array_close(a);
	rf_config_free(&cfg);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(rf_sb_read(fd, path, &sb, err, sizeof(err)), 0);
	close(fd);
	assert_int_equal(sb.data_offset, 4096);
	unlink(path);
}

static void test_raid5_two(void **state)
{
	int layout;

	(void)state;
	for (layout = 0; layout <= 5; layout++) {
		struct md_array m = { .level = 5, .layout = layout, .n = 2 };
		struct rf_config cfg;
		struct rf_array *a;
		int without;

		m.member_sectors[0] = m.member_sectors[1] = 6144;
		m.data_offset[0] = m.data_offset[1] = 2048;
		md_make(&m);
		for (without = -1; without < m.n; without++) {
			a = serve(&m, without, false, &cfg);
			assert_int_equal(rf_array_size(a), (6144 - 2048) * SECT);
			if (bad_sectors(a))
				print_error("raid5 layout %d without member %d: wrong\n", layout, without);
			assert_int_equal(bad_sectors(a), 0);
			rf_array_close(a);
			rf_config_free(&cfg);
		}
	}
}

static void test_raid0_zones(void **state)
{
	/* 48, 64 and 96 units, as the kernel-made test array; and four
	 * members whose second zone holds three (the layouts differ) */
	static const uint64_t sizes[][4] = { { 3072, 4096, 6144, 0 }, { 2560, 4608, 4608, 4608 } };
	size_t t;

	(void)state;
	for (t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
		struct md_array m = { .level = 0, .n = sizes[t][3] ? 4 : 3, .raid0_layout = true };
		struct rf_config cfg;
		struct rf_array *a;
		uint64_t sum = 0;
		int i;

		for (i = 0; i < m.n; i++) {
			m.member_sectors[i] = sizes[t][i];
			m.data_offset[i] = 2048;
			sum += (sizes[t][i] - 2048) / CHUNK_SECTORS * CHUNK_SECTORS;
		}
		md_make(&m);
		assert_true(m.g.nzones >= 2);
		a = serve(&m, -1, false, &cfg);
		assert_int_equal(rf_array_size(a), sum * SECT);
		assert_int_equal(bad_sectors(a), 0);
		rf_array_close(a);
		rf_config_free(&cfg);
	}
}

/* A multi-zone raid0 that records no layout: refused with a clear
 * message, as md refuses it (nothing is written). */
static void test_raid0_no_layout(void **state)
{
	struct md_array m = { .level = 0, .n = 4, .raid0_layout = false };
	struct rf_config cfg;
	struct rf_array *a = NULL;
	char err[1024];
	int i;

	(void)state;
	for (i = 0; i < 4; i++) {
		m.member_sectors[i] = i ? 4608 : 2560;
		m.data_offset[i] = 2048;
	}
	md_make(&m);
	assert_int_equal(rf_assemble(m.pathv, m.n, NULL, true, &cfg, err, sizeof(err)), 0);
	assert_int_equal(rf_array_open(&cfg, &a, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no raid0 layout recorded"));
	rf_config_free(&cfg);
}

static int setup(void **state)
{
	(void)state;
	return testdir_make(dir, sizeof(dir), "assemble");
}

static int teardown(void **state)
{
	(void)state;
	return testdir_remove(dir);
}

/* ---- arrays md stopped mid-reshape ----
 *
 * Written here as md leaves them: superblocks of the old geometry with
 * md's reshape fields (raid_disks the new count, delta_disks, new layout
 * and chunk, new_offset, reshape_position), the rows the reshape did in
 * the new geometry at the new data offset, the others in the old one at
 * the old offset, each geometry's parity over the rows it holds (the two
 * never share member sectors at a position md accepts). */
struct reshape_case {
	const char *what;
	int prev_n, n, prev_layout, layout;
	uint32_t prev_chunk, chunk;     /* sectors */
	uint64_t member_sectors, off, new_off, pos;
	bool back;
	int level;                      /* 0: raid5 */
};

static int case_level(const struct reshape_case *c)
{
	return c->level ? c->level : 5;
}

/* Change the 1.2 superblock on path to describe c, in place. */
static void sb_make_reshape(const char *path, const struct reshape_case *c, int slots)
{
	uint8_t b[RF_SB_BYTES];
	int fd = open(path, O_RDWR), i;
	uint32_t fm;

	assert_true(fd >= 0);
	get(fd, 4096, b, sizeof(b));
#define LE32(o, v) do { uint32_t v_ = (uint32_t)(v); for (int k_ = 0; k_ < 4; k_++) b[(o) + k_] = (uint8_t)(v_ >> (8 * k_)); } while (0)
	fm = (uint32_t)b[8] | (uint32_t)b[9] << 8;
	fm |= RF_SB_FEAT_RESHAPE | RF_SB_FEAT_NEW_OFFSET | (c->back && c->n == c->prev_n ? RF_SB_FEAT_RESHAPE_BACK : 0);
	LE32(8, fm);
	LE32(92, c->n);                                 /* raid_disks: the new count */
	LE32(100, case_level(c));                       /* new_level */
	LE32(104, c->pos);                              /* reshape_position (low half) */
	LE32(108, c->pos >> 32);
	LE32(112, c->n - c->prev_n);                    /* delta_disks */
	LE32(116, c->layout);
	LE32(120, c->chunk);
	LE32(124, (int32_t)(c->new_off - c->off));      /* new_offset */
	for (i = 0; i < slots; i++) {
		b[256 + 2 * i] = (uint8_t)i;
		b[257 + 2 * i] = 0;
	}
	LE32(216, rf_sb_csum(b, RF_SB_12));
#undef LE32
	put(fd, 4096, b, sizeof(b));
	close(fd);
}

/* Parity of rows [lo, hi) (chunk rows) of g at data offset doff. */
static void put_parity(int *fds, const struct rf_geom *g, uint64_t doff, uint64_t lo, uint64_t hi)
{
	uint64_t s;

	for (s = lo * g->chunk_sectors; s < hi * g->chunk_sectors && s < g->dev_sectors; s++) {
		struct rf_r5_row row;
		uint8_t p[SECT] = { 0 }, d[SECT];
		int k, b;

		rf_r5_row(g, s / g->chunk_sectors, &row);
		for (k = 0; k < g->data_disks; k++) {
			get(fds[row.data_member[k]], (doff + s) * SECT, d, SECT);
			for (b = 0; b < (int)SECT; b++)
				p[b] ^= d[b];
		}
		put(fds[row.pd_idx], (doff + s) * SECT, p, SECT);
	}
}

static void make_midreshape(const struct reshape_case *c, struct md_array *m)
{
	int slots = c->n > c->prev_n ? c->n : c->prev_n, fds[RF_MAX_MEMBERS], i;
	uint64_t room = c->member_sectors - (c->off > c->new_off ? c->off : c->new_off), s, nrows, prow;
	struct rf_geom g;
	struct rf_reshape rs;
	struct rf_sb_new n;
	uint8_t sec[SECT];
	char err[512];

	memset(m, 0, sizeof(*m));
	m->level = case_level(c);
	m->n = slots;
	memset(&g, 0, sizeof(g));
	memset(&rs, 0, sizeof(rs));
	g.level = rs.prev.level = case_level(c);
	g.raid_disks = c->n;
	rs.prev.raid_disks = c->prev_n;
	g.layout = c->layout;
	rs.prev.layout = c->prev_layout;
	g.chunk_sectors = c->chunk;
	rs.prev.chunk_sectors = c->prev_chunk;
	g.dev_sectors = rs.prev.dev_sectors = room;
	rs.active = true;
	rs.position = c->pos;
	rs.backwards = c->back;
	assert_int_equal(rf_reshape_init(&g, &rs, (int64_t)c->new_off - (int64_t)c->off, err, sizeof(err)), 0);
	m->g = g;

	memset(&n, 0, sizeof(n));
	assert_int_equal(rf_sb_random_uuid(n.uuid), 0);
	n.level = case_level(c);
	n.layout = c->prev_layout;
	n.chunk_sectors = c->prev_chunk;
	n.raid_disks = slots;
	n.size = g.dev_sectors;
	n.data_offset = c->off;
	n.clean = true;
	for (i = 0; i < slots; i++) {
		snprintf(m->paths[i], sizeof(m->paths[i]), "%s/r%d.img", dir, i);
		m->pathv[i] = m->paths[i];
		m->member_sectors[i] = c->member_sectors;
		fds[i] = open(m->paths[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
		assert_true(fds[i] >= 0);
		assert_int_equal(ftruncate(fds[i], (off_t)(c->member_sectors * SECT)), 0);
		assert_int_equal(rf_sb_write12(fds[i], m->paths[i], &n, i, c->member_sectors, err, sizeof(err)), 0);
	}
	for (s = 0; s < g.array_sectors; s++) {
		bool prev = rf_reshape_in_prev(&rs, s);
		struct rf_r5_map map;
		int devs[RF_MAX_MEMBERS], k, j;
		uint64_t addrs[RF_MAX_MEMBERS];

		fill_sector(sec, s);
		if (m->level == 10) {
			/* every copy of the sector's geometry */
			k = rf_r10_map(prev ? &rs.prev : &g, s, devs, addrs);
			for (j = 0; j < k; j++)
				put(fds[devs[j]], ((prev ? c->off : c->new_off) + addrs[j]) * SECT, sec, SECT);
			continue;
		}
		rf_r5_map_sector(prev ? &rs.prev : &g, s, &map);
		put(fds[map.dd_idx], ((prev ? c->off : c->new_off) + map.dev_sector) * SECT, sec, SECT);
	}
	/* The rows each geometry holds: the new one's on the done side of the
	 * position, the old one's every row with a sector on the other. */
	nrows = c->pos / ((uint64_t)g.chunk_sectors * (uint64_t)g.data_disks);
	prow = c->pos / ((uint64_t)rs.prev.chunk_sectors * (uint64_t)rs.prev.data_disks);
	if (m->level == 10) {
		/* copies: no parity */
	} else if (!c->back) {
		put_parity(fds, &g, c->new_off, 0, nrows);
		put_parity(fds, &rs.prev, c->off, prow, UINT64_MAX);
	} else {
		put_parity(fds, &g, c->new_off, nrows, UINT64_MAX);
		put_parity(fds, &rs.prev, c->off, 0, prow + 1);
	}
	for (i = 0; i < slots; i++) {
		close(fds[i]);
		sb_make_reshape(m->paths[i], c, slots);
	}
}

/* Sectors of a that do not hold the pattern below old_sectors or zeros
 * from there to its end (bad_sectors(): the pattern everywhere). */
static uint64_t bad_grown(struct rf_array *a, uint64_t old_sectors)
{
	uint64_t size = rf_array_size(a), off, bad = 0;
	const uint32_t step = 64 << 10;
	char *buf = malloc(step);
	uint8_t want[SECT];

	assert_non_null(buf);
	for (off = 0; off < size; off += step) {
		uint32_t len = size - off < step ? (uint32_t)(size - off) : step, i;

		assert_int_equal(testreq_io(a, RF_REQ_READ, off, len, buf), 0);
		for (i = 0; i < len; i += SECT) {
			if ((off + i) / SECT < old_sectors)
				fill_sector(want, (off + i) / SECT);
			else
				memset(want, 0, SECT);
			bad += memcmp(buf + i, want, SECT) != 0;
		}
	}
	free(buf);
	return bad;
}

/* A reshape assembled read-write runs to its end (services/
 * reshape.c), forwards or backwards (a shrink's dropped slots become
 * spares): the array takes the new geometry's size, holds the pattern
 * (zeros past the old end), its parity checks, and the superblocks say
 * no reshape any more, so it assembles again in one geometry. */
static void continue_reshape(const struct reshape_case *c, struct md_array *m)
{
	struct rf_sync_status st;
	struct rf_config cfg;
	struct rf_array *a;
	uint64_t pos, old = m->g.array_sectors, want;
	bool back;
	int i;

	a = serve_rw(m, -1, false, false, &cfg);
	assert_false(rf_array_readonly(a));
	want = m->g.dev_sectors / (c->chunk > c->prev_chunk ? c->chunk : c->prev_chunk) *
	       (c->chunk > c->prev_chunk ? c->chunk : c->prev_chunk) * (uint64_t)(c->n - 1);
	if (m->level == 10) {
		/* the new geometry's own size */
		struct rf_geom t = m->g;
		char err[256];

		assert_int_equal(rf_geom_init(&t, err, sizeof(err)), 0);
		want = t.array_sectors;
	}
	assert_int_equal(rf_sbstate_start_resync(a, false), 0);
	for (i = 0; i < 2000 && rf_array_reshape(a, &pos, &back); i++)
		usleep(10000);
	if (rf_array_reshape(a, &pos, &back))
		fail_msg("%s: the reshape did not end in 20 s (at %" PRIu64 ")", c->what, pos);
	assert_int_equal(rf_array_size(a), want * SECT);
	if (bad_grown(a, old))
		print_error("%s: %" PRIu64 " wrong sectors after the reshape\n", c->what, bad_grown(a, old));
	assert_int_equal(bad_grown(a, old), 0);
	assert_int_equal(rf_sync_request(a, RF_SYNC_CHECK), 0);
	rf_sync_wait(a);
	rf_sync_get(a, &st);
	assert_int_equal(st.mismatch_cnt, 0);
	rf_array_close(a);
	rf_config_free(&cfg);
	a = serve(m, -1, false, &cfg);
	assert_false(cfg.reshape.active);
	assert_int_equal(cfg.layout, c->layout);
	assert_int_equal(cfg.chunk_bytes, c->chunk * SECT);
	assert_int_equal(rf_array_size(a), want * SECT);
	assert_int_equal(bad_grown(a, old), 0);
	rf_array_close(a);
	rf_config_free(&cfg);
}

static void test_midreshape(void **state)
{
	static const struct reshape_case cases[] = {
		{ "grow 3 -> 4, data offset down", 3, 4, 2, 2, 32, 32, 8192, 2048, 1664, 4800, false, 0 },
		{ "shrink 5 -> 4, data offset up", 5, 4, 2, 2, 32, 32, 8192, 2048, 2304, 9600, true, 0 },
		{ "relayout ls -> la and chunk 16K -> 32K in place, offset up", 4, 4, 2, 0, 32, 64, 8192, 2048,
		  2560, 7680, true, 0 },
		{ "grow 4 -> 5, ra -> ls, chunk 16K -> 8K", 4, 5, 1, 2, 32, 16, 8192, 2048, 1536, 7680, false, 0 },
		/* raid10: data offsets a chunk (times the far copies) lower */
		{ "raid10 n2 grow 4 -> 5", 4, 5, 0x102, 0x102, 32, 32, 8192, 2048, 2016, 1280 + 8, false, 10 },
		{ "raid10 o2 grow 2 -> 3", 2, 3, 0x10201, 0x10201, 32, 32, 8192, 2048, 1984, 960, false, 10 },
	};
	size_t k;

	(void)state;
	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct reshape_case *c = &cases[k];
		struct md_array m;
		struct rf_config cfg;
		struct rf_array *a;
		const char *paths[RF_MAX_MEMBERS];
		char err[1024];
		int without, i;

		make_midreshape(c, &m);
		/* every member, then each left out */
		for (without = -1; without < m.n; without++) {
			a = serve(&m, without, false, &cfg);
			assert_true(cfg.reshape.active);
			assert_int_equal(cfg.reshape.backwards, c->back);
			assert_true(rf_array_readonly(a));
			{
				uint64_t pos;
				bool back;

				assert_true(rf_array_reshape(a, &pos, &back));
				assert_int_equal(pos, c->pos);
				assert_int_equal(back, c->back);
			}
			assert_int_equal(rf_array_size(a), m.g.array_sectors * SECT);
			if (bad_sectors(a))
				print_error("%s without member %d: %" PRIu64 " wrong sectors\n", c->what, without,
					    bad_sectors(a));
			assert_int_equal(bad_sectors(a), 0);
			rf_array_close(a);
			rf_config_free(&cfg);
		}
		/* Negative control: the same members in one geometry, the
		 * position ignored. */
		for (i = 0; i < m.n; i++)
			paths[i] = m.pathv[i];
		assert_int_equal(rf_assemble(paths, m.n, NULL, true, &cfg, err, sizeof(err)), 0);
		cfg.reshape.active = false;
		cfg.nmembers = c->n;
		cfg.stripe_cache_size = 40;
		cfg.worker_groups = 1;
		assert_int_equal(rf_array_open(&cfg, &a, err, sizeof(err)), 0);
		assert_int_equal(rf_array_start(a), 0);
		assert_true(bad_sectors(a) > 0);
		rf_array_close(a);
		rf_config_free(&cfg);
		/* Read-write: continued to the end, forwards or backwards. */
		continue_reshape(c, &m);
		for (i = 0; i < m.n; i++)
			unlink(m.paths[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offsets_differ),
		cmocka_unit_test(test_spare_offset),
		cmocka_unit_test(test_raid5_two),
		cmocka_unit_test(test_raid0_zones),
		cmocka_unit_test(test_raid0_no_layout),
		cmocka_unit_test(test_midreshape),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
