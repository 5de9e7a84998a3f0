/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_layout.c - md's sector mapping: self-consistency, hand-worked rows,
 * and arrays that kernel md itself wrote.
 *
 * Three kinds of evidence, weakest first:
 *  - exhaustive checks on small geometries, every level, layout and member
 *    count: each array sector has one data place of its own, never on the
 *    row's P or Q, and the inverse map (written separately in layout.c, and
 *    here for raid10 after md's raid10_find_virt) leads back to it;
 *  - rows worked out by hand from the md algorithm descriptions;
 *  - the arrays in md-images/ (RF_MD_IMAGES overrides the folder), made by
 *    kernel md + mdadm, whose every sector s holds u64le(s) 64 times: sampled
 *    sectors must read back through our mapping, and sampled rows must carry
 *    md's P (xor) and Q (GF(2^8), poly 0x11d, in our qslot order).
 * Reshapes under way (rf_reshape_init()): raid4/5/6 as md's raid5 run()
 * takes them, raid10 as its raid10 run() and check_reshape do.
 *
 * It does NOT test IO paths, parity code or degraded reads: other modules.
 * Random samples come from a fixed seed, RF_TEST_SEED overrides it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "raidfuse/layout.h"

static const int r5_layouts[] = { 0, 1, 2, 3, 4, 5 };
static const int r6_layouts[] = { 0, 1, 2, 3, 4, 5, 8, 9, 10, 16, 17, 18, 19, 20 };

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static void geom_set(struct rf_geom *g, int level, int layout, int n, uint32_t chunk,
		     uint64_t dev)
{
	memset(g, 0, sizeof(*g));
	g->level = level;
	g->layout = layout;
	g->raid_disks = n;
	g->chunk_sectors = chunk;
	g->dev_sectors = dev;
}

static void geom_ok(struct rf_geom *g, int level, int layout, int n, uint32_t chunk,
		    uint64_t dev)
{
	char err[256];
	int rc;

	geom_set(g, level, layout, n, chunk, dev);
	rc = rf_geom_init(g, err, sizeof(err));
	if (rc)
		print_error("raid%d layout %d n=%d chunk=%u dev=%" PRIu64 ": %s\n",
			    level, layout, n, chunk, dev, err);
	assert_int_equal(rc, 0);
}

/* ---- raid4/5/6: exhaustive consistency ---- */

static void check_r5_row(const struct rf_geom *g, uint64_t stripe)
{
	struct rf_r5_row row;
	int n = g->raid_disks, nd = g->data_disks;
	int seen[RF_MAX_MEMBERS] = { 0 };
	int slot_seen[RF_MAX_MEMBERS] = { 0 };
	int k, i;

	rf_r5_row(g, stripe, &row);
	assert_in_range(row.pd_idx, 0, n - 1);
	seen[row.pd_idx]++;
	if (g->level == 6) {
		assert_in_range(row.qd_idx, 0, n - 1);
		seen[row.qd_idx]++;
	} else {
		assert_int_equal(row.qd_idx, -1);
	}
	for (k = 0; k < nd; k++) {
		assert_in_range(row.data_member[k], 0, n - 1);
		seen[row.data_member[k]]++;
	}
	/* data, P and Q partition the members */
	for (i = 0; i < n; i++)
		assert_int_equal(seen[i], 1);

	assert_int_equal(row.qslot[row.pd_idx], -1);
	if (g->level != 6) {
		assert_int_equal(row.syndrome_disks, nd);
		for (k = 0; k < nd; k++)
			assert_int_equal(row.qslot[row.data_member[k]], k);
		return;
	}
	assert_int_equal(row.qslot[row.qd_idx], -1);
	if (g->layout >= 8 && g->layout <= 10) {
		/* DDF: the syndrome runs over every member, P and Q as zeros */
		assert_int_equal(row.syndrome_disks, n);
		for (k = 0; k < nd; k++)
			assert_int_equal(row.qslot[row.data_member[k]], row.data_member[k]);
		return;
	}
	assert_int_equal(row.syndrome_disks, nd);
	for (k = 0; k < nd; k++) {
		int m = row.data_member[k], s = row.qslot[m], before = 0;

		assert_in_range(s, 0, nd - 1);
		slot_seen[s]++;
		/* slot = data members met walking on from just after Q */
		for (i = (row.qd_idx + 1) % n; i != m; i = (i + 1) % n)
			if (i != row.pd_idx && i != row.qd_idx)
				before++;
		assert_int_equal(s, before);
	}
	for (k = 0; k < nd; k++)
		assert_int_equal(slot_seen[k], 1);
	/* symmetric layouts: data column 0 follows Q, so slot == column */
	if (g->layout == RF_ALGO_LEFT_SYMMETRIC || g->layout == RF_ALGO_RIGHT_SYMMETRIC)
		for (k = 0; k < nd; k++)
			assert_int_equal(row.qslot[row.data_member[k]], k);
}

static void check_r5_geom(const struct rf_geom *g)
{
	int n = g->raid_disks, nd = g->data_disks;
	uint64_t dev = g->dev_sectors, chunk = g->chunk_sectors;
	int64_t *owner;
	uint64_t s, i, parity = 0;

	assert_int_equal(g->array_sectors, dev * (uint64_t)nd);
	owner = malloc(sizeof(*owner) * (size_t)n * dev);
	assert_non_null(owner);
	for (i = 0; i < (uint64_t)n * dev; i++)
		owner[i] = -1;

	for (s = 0; s < g->array_sectors; s++) {
		struct rf_r5_map m;
		struct rf_r5_row row;
		uint64_t chunk_nr = s / chunk;

		rf_r5_map_sector(g, s, &m);
		assert_in_range(m.dd_idx, 0, n - 1);
		assert_int_not_equal(m.dd_idx, m.pd_idx);
		assert_int_not_equal(m.dd_idx, m.qd_idx);
		assert_int_equal(m.stripe, chunk_nr / (uint64_t)nd);
		assert_int_equal(m.dev_sector, m.stripe * chunk + s % chunk);
		assert_true(m.dev_sector < dev);
		assert_int_equal(owner[(uint64_t)m.dd_idx * dev + m.dev_sector], -1);
		owner[(uint64_t)m.dd_idx * dev + m.dev_sector] = (int64_t)s;
		assert_int_equal(rf_r5_array_sector(g, m.dd_idx, m.dev_sector), (int64_t)s);
		if (s % chunk == 0) {
			rf_r5_row(g, m.stripe, &row);
			assert_int_equal(row.pd_idx, m.pd_idx);
			assert_int_equal(row.qd_idx, m.qd_idx);
			assert_int_equal(row.data_member[chunk_nr % (uint64_t)nd], m.dd_idx);
		}
		assert_int_equal(rf_geom_chunk_left(g, s), chunk - s % chunk);
	}
	/* every place left over is P or Q of its row */
	for (i = 0; i < (uint64_t)n * dev; i++) {
		int member = (int)(i / dev);
		uint64_t ds = i % dev;
		struct rf_r5_row row;

		if (owner[i] >= 0)
			continue;
		parity++;
		rf_r5_row(g, ds / chunk, &row);
		assert_true(member == row.pd_idx || member == row.qd_idx);
		assert_int_equal(rf_r5_array_sector(g, member, ds), -1);
	}
	assert_int_equal(parity, dev * (uint64_t)g->max_degraded);
	for (s = 0; s < dev / chunk; s++)
		check_r5_row(g, s);
	/* out of range places are no data either */
	assert_int_equal(rf_r5_array_sector(g, n, 0), -1);
	assert_int_equal(rf_r5_array_sector(g, -1, 0), -1);
	assert_int_equal(rf_r5_array_sector(g, 0, dev), -1);
	free(owner);
}

static void test_r5_exhaustive(void **state)
{
	static const int levels[] = { 4, 5, 6 };
	static const int r4_layouts[] = { 0, 5 };
	size_t li, ai;
	int n;
	uint32_t chunk;

	for (li = 0; li < ARRAY_LEN(levels); li++) {
		int level = levels[li];
		const int *layouts = level == 4 ? r4_layouts : level == 5 ? r5_layouts : r6_layouts;
		size_t nlayouts = level == 4 ? ARRAY_LEN(r4_layouts) :
				  level == 5 ? ARRAY_LEN(r5_layouts) : ARRAY_LEN(r6_layouts);

		for (ai = 0; ai < nlayouts; ai++)
			for (n = level == 6 ? 4 : 2; n <= 11; n++)
				for (chunk = 8; chunk <= 16; chunk *= 2) {
					struct rf_geom g;
					uint64_t rows = 2 * (uint64_t)n + 3;

					/* a ragged size: init rounds down to whole chunks */
					geom_ok(&g, level, layouts[ai], n, chunk, rows * chunk + 5);
					assert_int_equal(g.dev_sectors, rows * chunk);
					assert_int_equal(g.max_degraded, level == 6 ? 2 : 1);
					assert_int_equal(g.data_disks, n - g.max_degraded);
					if (level == 4)
						assert_int_equal(g.layout, RF_ALGO_PARITY_N);
					check_r5_geom(&g);
				}
	}
}

/* ---- raid4/5/6: rows worked out by hand ---- */

struct row_case {
	int level, layout, n;
	uint64_t stripe;
	int pd, qd;
	int data[4];		/* member of data column k */
	int qslot[6];		/* expected qslot per member; all 0 = not checked */
	int syndrome_disks;	/* 0 = not checked */
};

static const struct row_case row_cases[] = {
	/* raid5, 4 members */
	{ 5, RF_ALGO_LEFT_SYMMETRIC, 4, 0, 3, -1, { 0, 1, 2 }, { 0 }, 0 },
	{ 5, RF_ALGO_LEFT_SYMMETRIC, 4, 1, 2, -1, { 3, 0, 1 }, { 0 }, 0 },
	{ 5, RF_ALGO_LEFT_SYMMETRIC, 4, 3, 0, -1, { 1, 2, 3 }, { 0 }, 0 },
	{ 5, RF_ALGO_LEFT_SYMMETRIC, 4, 4, 3, -1, { 0, 1, 2 }, { 0 }, 0 },
	{ 5, RF_ALGO_LEFT_ASYMMETRIC, 4, 1, 2, -1, { 0, 1, 3 }, { 0 }, 0 },
	{ 5, RF_ALGO_LEFT_ASYMMETRIC, 4, 3, 0, -1, { 1, 2, 3 }, { 0 }, 0 },
	{ 5, RF_ALGO_RIGHT_ASYMMETRIC, 4, 0, 0, -1, { 1, 2, 3 }, { 0 }, 0 },
	{ 5, RF_ALGO_RIGHT_ASYMMETRIC, 4, 1, 1, -1, { 0, 2, 3 }, { 0 }, 0 },
	{ 5, RF_ALGO_RIGHT_SYMMETRIC, 4, 1, 1, -1, { 2, 3, 0 }, { 0 }, 0 },
	{ 5, RF_ALGO_RIGHT_SYMMETRIC, 4, 2, 2, -1, { 3, 0, 1 }, { 0 }, 0 },
	{ 5, RF_ALGO_PARITY_0, 4, 7, 0, -1, { 1, 2, 3 }, { 0 }, 0 },
	{ 5, RF_ALGO_PARITY_N, 4, 7, 3, -1, { 0, 1, 2 }, { 0 }, 0 },
	/* raid4: md says layout 0, means parity-last */
	{ 4, 0, 4, 5, 3, -1, { 0, 1, 2 }, { 0 }, 0 },
	/* raid5 on 2 members is a mirror with a rotating "parity" */
	{ 5, RF_ALGO_LEFT_SYMMETRIC, 2, 0, 1, -1, { 0 }, { 0 }, 0 },
	{ 5, RF_ALGO_LEFT_SYMMETRIC, 2, 1, 0, -1, { 1 }, { 0 }, 0 },
	/* raid6, 5 members; qslot: Q syndrome starts just after Q */
	{ 6, RF_ALGO_LEFT_SYMMETRIC, 5, 0, 4, 0, { 1, 2, 3 }, { -1, 0, 1, 2, -1 }, 3 },
	{ 6, RF_ALGO_LEFT_SYMMETRIC, 5, 1, 3, 4, { 0, 1, 2 }, { 0, 1, 2, -1, -1 }, 3 },
	{ 6, RF_ALGO_LEFT_SYMMETRIC, 5, 2, 2, 3, { 4, 0, 1 }, { 1, 2, -1, -1, 0 }, 3 },
	{ 6, RF_ALGO_LEFT_ASYMMETRIC, 5, 0, 4, 0, { 1, 2, 3 }, { -1, 0, 1, 2, -1 }, 3 },
	{ 6, RF_ALGO_LEFT_ASYMMETRIC, 5, 2, 2, 3, { 0, 1, 4 }, { 1, 2, -1, -1, 0 }, 3 },
	{ 6, RF_ALGO_RIGHT_ASYMMETRIC, 5, 0, 0, 1, { 2, 3, 4 }, { -1, -1, 0, 1, 2 }, 3 },
	{ 6, RF_ALGO_RIGHT_ASYMMETRIC, 5, 4, 4, 0, { 1, 2, 3 }, { -1, 0, 1, 2, -1 }, 3 },
	{ 6, RF_ALGO_RIGHT_SYMMETRIC, 5, 1, 1, 2, { 3, 4, 0 }, { 2, -1, -1, 0, 1 }, 3 },
	{ 6, RF_ALGO_PARITY_0, 5, 3, 0, 1, { 2, 3, 4 }, { -1, -1, 0, 1, 2 }, 3 },
	{ 6, RF_ALGO_PARITY_N, 5, 3, 3, 4, { 0, 1, 2 }, { 0, 1, 2, -1, -1 }, 3 },
	/* DDF: slot = member index, P and Q keep theirs (as zeros) */
	{ 6, RF_ALGO_ROTATING_ZERO_RESTART, 5, 0, 0, 1, { 2, 3, 4 }, { -1, -1, 2, 3, 4 }, 5 },
	{ 6, RF_ALGO_ROTATING_ZERO_RESTART, 5, 4, 4, 0, { 1, 2, 3 }, { -1, 1, 2, 3, -1 }, 5 },
	{ 6, RF_ALGO_ROTATING_N_RESTART, 5, 0, 3, 4, { 0, 1, 2 }, { 0, 1, 2, -1, -1 }, 5 },
	{ 6, RF_ALGO_ROTATING_N_RESTART, 5, 4, 4, 0, { 1, 2, 3 }, { -1, 1, 2, 3, -1 }, 5 },
	{ 6, RF_ALGO_ROTATING_N_RESTART, 5, 1, 2, 3, { 0, 1, 4 }, { 0, 1, -1, -1, 4 }, 5 },
	{ 6, RF_ALGO_ROTATING_N_CONTINUE, 5, 0, 4, 3, { 0, 1, 2 }, { 0, 1, 2, -1, -1 }, 5 },
	{ 6, RF_ALGO_ROTATING_N_CONTINUE, 5, 1, 3, 2, { 4, 0, 1 }, { 0, 1, -1, -1, 4 }, 5 },
	{ 6, RF_ALGO_ROTATING_N_CONTINUE, 5, 4, 0, 4, { 1, 2, 3 }, { -1, 1, 2, 3, -1 }, 5 },
	/* *_6: raid5 over members 0..3, Q always on 4 */
	{ 6, RF_ALGO_LEFT_ASYMMETRIC_6, 5, 0, 3, 4, { 0, 1, 2 }, { 0, 1, 2, -1, -1 }, 3 },
	{ 6, RF_ALGO_LEFT_ASYMMETRIC_6, 5, 1, 2, 4, { 0, 1, 3 }, { 0, 1, -1, 2, -1 }, 3 },
	{ 6, RF_ALGO_LEFT_ASYMMETRIC_6, 5, 4, 3, 4, { 0, 1, 2 }, { 0 }, 0 },
	{ 6, RF_ALGO_RIGHT_ASYMMETRIC_6, 5, 1, 1, 4, { 0, 2, 3 }, { 0, -1, 1, 2, -1 }, 3 },
	{ 6, RF_ALGO_LEFT_SYMMETRIC_6, 5, 1, 2, 4, { 3, 0, 1 }, { 0, 1, -1, 2, -1 }, 3 },
	{ 6, RF_ALGO_RIGHT_SYMMETRIC_6, 5, 1, 1, 4, { 2, 3, 0 }, { 0, -1, 1, 2, -1 }, 3 },
	{ 6, RF_ALGO_PARITY_0_6, 5, 2, 0, 4, { 1, 2, 3 }, { -1, 0, 1, 2, -1 }, 3 },
};

static void test_r5_known_rows(void **state)
{
	size_t i;
	int k, m;

	for (i = 0; i < ARRAY_LEN(row_cases); i++) {
		const struct row_case *c = &row_cases[i];
		struct rf_geom g;
		struct rf_r5_row row;
		bool check_slots = false;

		geom_ok(&g, c->level, c->layout, c->n, 8, 8 * 16);
		rf_r5_row(&g, c->stripe, &row);
		if (row.pd_idx != c->pd || row.qd_idx != c->qd)
			print_error("case %zu: raid%d layout %d stripe %" PRIu64 ": P %d Q %d\n",
				    i, c->level, c->layout, c->stripe, row.pd_idx, row.qd_idx);
		assert_int_equal(row.pd_idx, c->pd);
		assert_int_equal(row.qd_idx, c->qd);
		for (k = 0; k < g.data_disks; k++) {
			struct rf_r5_map map;
			uint64_t s = ((c->stripe * (uint64_t)g.data_disks) + (uint64_t)k) * 8 + 3;

			if (row.data_member[k] != c->data[k])
				print_error("case %zu: column %d on %d, want %d\n",
					    i, k, row.data_member[k], c->data[k]);
			assert_int_equal(row.data_member[k], c->data[k]);
			rf_r5_map_sector(&g, s, &map);
			assert_int_equal(map.dd_idx, c->data[k]);
			assert_int_equal(map.dev_sector, c->stripe * 8 + 3);
			assert_int_equal(rf_r5_array_sector(&g, c->data[k], c->stripe * 8 + 3),
					 (int64_t)s);
		}
		for (m = 0; m < c->n && m < 6; m++)
			if (c->qslot[m])
				check_slots = true;
		if (check_slots)
			for (m = 0; m < c->n; m++) {
				if (row.qslot[m] != c->qslot[m])
					print_error("case %zu: qslot[%d] = %d, want %d\n",
						    i, m, row.qslot[m], c->qslot[m]);
				assert_int_equal(row.qslot[m], c->qslot[m]);
			}
		if (c->syndrome_disks)
			assert_int_equal(row.syndrome_disks, c->syndrome_disks);
	}
}

/* ---- raid0 ---- */

static void test_r0(void **state)
{
	struct rf_geom g;
	int n, member;
	uint64_t dev, s, i;

	/* hand-worked: 3 members, chunk 8 */
	geom_ok(&g, 0, 0, 3, 8, 8 * 10 + 7);
	assert_int_equal(g.dev_sectors, 80);
	assert_int_equal(g.array_sectors, 240);
	assert_int_equal(g.data_disks, 3);
	assert_int_equal(g.max_degraded, 0);
	rf_r0_map(&g, 0, &member, &dev);
	assert_int_equal(member, 0);
	assert_int_equal(dev, 0);
	rf_r0_map(&g, 8, &member, &dev);
	assert_int_equal(member, 1);
	assert_int_equal(dev, 0);
	rf_r0_map(&g, 23, &member, &dev);
	assert_int_equal(member, 2);
	assert_int_equal(dev, 7);
	rf_r0_map(&g, 29, &member, &dev);
	assert_int_equal(member, 0);
	assert_int_equal(dev, 13);
	rf_r0_map(&g, 239, &member, &dev);
	assert_int_equal(member, 2);
	assert_int_equal(dev, 79);

	for (n = 2; n <= 9; n++) {
		uint8_t *used;

		geom_ok(&g, 0, 0, n, 16, 16 * 7);
		used = calloc((size_t)n * g.dev_sectors, 1);
		assert_non_null(used);
		for (s = 0; s < g.array_sectors; s++) {
			rf_r0_map(&g, s, &member, &dev);
			assert_in_range(member, 0, n - 1);
			assert_true(dev < g.dev_sectors);
			assert_int_equal(used[(uint64_t)member * g.dev_sectors + dev], 0);
			used[(uint64_t)member * g.dev_sectors + dev] = 1;
		}
		for (i = 0; i < (uint64_t)n * g.dev_sectors; i++)
			assert_int_equal(used[i], 1);
		free(used);
	}
}

/* hand-worked zones: member sizes 1, 3, 3, 3 chunks of 8 sectors make zone
 * 0 (all four, one row) and zone 1 (members 1-3 from sector 8, two rows);
 * the layouts differ in zone 1 (chunk 4 is zone 1's chunk 0). */
static void test_r0_zones_known(void **state)
{
	static const struct { int layout; uint64_t s; int member; uint64_t dev; } want[] = {
		{ 1, 0, 0, 0 }, { 1, 31, 3, 7 }, { 1, 32, 2, 8 }, { 1, 40, 3, 8 }, { 1, 48, 1, 8 },
		{ 1, 56, 2, 16 }, { 1, 79, 1, 23 },
		{ 2, 0, 0, 0 }, { 2, 32, 1, 8 }, { 2, 40, 2, 8 }, { 2, 48, 3, 8 }, { 2, 56, 1, 16 },
		{ 2, 79, 3, 23 },
	};
	struct rf_geom g;
	char err[512];
	size_t i;
	int member;
	uint64_t dev;

	(void)state;
	for (i = 0; i < ARRAY_LEN(want); i++) {
		geom_set(&g, 0, want[i].layout, 4, 8, 0);
		g.r0_sectors[0] = 8 + 5;        /* rounded down to one chunk */
		g.r0_sectors[1] = g.r0_sectors[2] = g.r0_sectors[3] = 24;
		assert_int_equal(rf_geom_init(&g, err, sizeof(err)), 0);
		assert_int_equal(g.nzones, 2);
		assert_int_equal(g.zone[0].end, 32);
		assert_int_equal(g.zone[1].end, 80);
		assert_int_equal(g.zone[1].dev_start, 8);
		assert_int_equal(g.zone[1].nb_dev, 3);
		assert_int_equal(g.array_sectors, 80);
		assert_int_equal(g.dev_sectors, 8);
		rf_r0_map(&g, want[i].s, &member, &dev);
		if (member != want[i].member || dev != want[i].dev)
			print_error("layout %d sector %" PRIu64 ": member %d sector %" PRIu64 ", want %d %" PRIu64 "\n",
				    want[i].layout, want[i].s, member, dev, want[i].member, want[i].dev);
		assert_int_equal(member, want[i].member);
		assert_int_equal(dev, want[i].dev);
	}
	/* More than one zone of 2+ members and no layout: refused, as md does. */
	geom_set(&g, 0, 0, 4, 8, 0);
	g.r0_sectors[0] = 8;
	g.r0_sectors[1] = g.r0_sectors[2] = g.r0_sectors[3] = 24;
	assert_int_equal(rf_geom_init(&g, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no raid0 layout recorded"));
	/* ... but a second zone of one member maps alike in both: md takes it. */
	geom_set(&g, 0, 0, 3, 8, 0);
	g.r0_sectors[0] = 16;
	g.r0_sectors[1] = 16;
	g.r0_sectors[2] = 40;
	assert_int_equal(rf_geom_init(&g, err, sizeof(err)), 0);
	assert_int_equal(g.nzones, 2);
	assert_int_equal(g.array_sectors, 72);
	rf_r0_map(&g, 71, &member, &dev);
	assert_int_equal(member, 2);
	assert_int_equal(dev, 39);
	/* Equal members: one zone, the layout does not matter. */
	geom_set(&g, 0, 0, 3, 8, 0);
	g.r0_sectors[0] = g.r0_sectors[1] = g.r0_sectors[2] = 80;
	assert_int_equal(rf_geom_init(&g, err, sizeof(err)), 0);
	assert_int_equal(g.nzones, 1);
	assert_int_equal(g.array_sectors, 240);
}

/*
 * The reference for unequal raid0, worked another way: lay the array out
 * chunk by chunk as md fills it.  The zone boundaries are the distinct
 * member sizes; inside a zone each array chunk goes to the next member in
 * turn (counted from the zone's first chunk for the alternate layout, from
 * array chunk 0 for the original one), at that member's next free chunk.
 * Fills map[chunk] = member << 32 | member chunk.
 */
static uint64_t r0_ref_layout(int n, const uint64_t *chunks, bool alt, uint64_t *map)
{
	uint64_t fill[RF_MAX_MEMBERS] = { 0 }, cut = 0, c = 0, zone_first;
	int zm[RF_MAX_MEMBERS], nb, i;

	for (;;) {
		uint64_t next = UINT64_MAX, k;

		nb = 0;
		for (i = 0; i < n; i++)
			if (chunks[i] > cut) {
				zm[nb++] = i;
				if (chunks[i] < next)
					next = chunks[i];
			}
		if (!nb)
			return c;
		zone_first = c;
		for (k = 0; k < (next - cut) * (uint64_t)nb; k++, c++) {
			int m = zm[(alt ? c - zone_first : c) % (uint64_t)nb];

			map[c] = (uint64_t)m << 32 | fill[m]++;
		}
		cut = next;
	}
}

/* rf_r0_map() against the reference over a matrix of member counts, chunk
 * sizes, member sizes (random in whole and part chunks, with repeats) and
 * both layouts; every chunk's first, last and one random sector. */
static void test_r0_zones_ref(void **state)
{
	static const uint32_t chunks_k[] = { 8, 16, 128 };
	uint64_t csz[RF_MAX_MEMBERS], *map = NULL;
	int n, round, member, lay;
	size_t ci;

	(void)state;
	for (n = 2; n <= 12; n++)
		for (ci = 0; ci < ARRAY_LEN(chunks_k); ci++)
			for (round = 0; round < 12; round++)
				for (lay = 1; lay <= 2; lay++) {
					uint32_t chunk = chunks_k[ci];
					uint64_t total = 0, c, sum = 0, dev;
					struct rf_geom g;
					char err[512];
					int i;

					geom_set(&g, 0, lay, n, chunk, 0);
					for (i = 0; i < n; i++) {
						/* a few sizes only, so zones share members */
						csz[i] = 1 + fx_rand() % (round % 3 == 0 ? 3 : 9);
						g.r0_sectors[i] = csz[i] * chunk + fx_rand() % chunk;
						total += csz[i];
					}
					map = realloc(map, total * sizeof(*map));
					assert_non_null(map);
					assert_int_equal(r0_ref_layout(n, csz, lay == 2, map), total);
					if (rf_geom_init(&g, err, sizeof(err)))
						print_error("n=%d chunk=%u: %s\n", n, chunk, err);
					assert_int_equal(rf_geom_init(&g, err, sizeof(err)), 0);
					for (i = 0; i < n; i++)
						sum += g.r0_sectors[i];
					assert_int_equal(sum, total * chunk);
					assert_int_equal(g.array_sectors, total * chunk);
					for (c = 0; c < total; c++) {
						uint64_t in[3] = { 0, chunk - 1, fx_rand() % chunk };
						int t;

						for (t = 0; t < 3; t++) {
							uint64_t s = c * chunk + in[t];

							rf_r0_map(&g, s, &member, &dev);
							if ((uint64_t)member != map[c] >> 32 ||
							    dev != (map[c] & 0xffffffffu) * chunk + in[t]) {
								print_error("n=%d chunk=%u layout %d sector %" PRIu64
									    ": member %d sector %" PRIu64 ", reference %d %" PRIu64
									    " (seed: RF_TEST_SEED)\n", n, chunk, lay, s, member,
									    dev, (int)(map[c] >> 32),
									    (map[c] & 0xffffffffu) * chunk + in[t]);
								fail();
							}
						}
					}
				}
	free(map);
}

/* ---- raid10 ---- */

/* md's raid10_find_virt, redone here: the array sector behind a copy. */
static uint64_t r10_virt(const struct rf_geom *g, int dev, uint64_t sector)
{
	int n = g->raid_disks, nc = g->near_copies, fc = g->far_copies;
	int fss = g->far_set_size;
	int set_start = dev / fss * fss, set_size = fss;
	uint64_t c = g->chunk_sectors, off = sector % c, chunk;

	if (n % fss) {
		int last = (n / fss - 1) * fss;

		if (dev >= last) {
			set_start = last;
			set_size = fss + n % fss;
		}
	}
	if (g->far_offset) {
		int f;

		chunk = sector / c;
		f = (int)(chunk % (uint64_t)fc);
		chunk /= (uint64_t)fc;
		dev -= f * nc;
		if (dev < set_start)
			dev += set_size;
	} else {
		while (sector >= g->stride) {
			sector -= g->stride;
			if (dev < nc + set_start)
				dev += set_size - nc;
			else
				dev -= nc;
		}
		chunk = sector / c;
	}
	return (chunk * (uint64_t)n + (uint64_t)dev) / (uint64_t)nc * c + off;
}

static void check_r10_geom(const struct rf_geom *g)
{
	int n = g->raid_disks, copies = g->near_copies * g->far_copies;
	uint64_t dev = g->dev_sectors, s, placed = 0;
	uint8_t *used = calloc((size_t)n * dev, 1);

	assert_non_null(used);
	for (s = 0; s < g->array_sectors; s++) {
		int devs[RF_MAX_MEMBERS];
		uint64_t addrs[RF_MAX_MEMBERS];
		int cnt = rf_r10_map(g, s, devs, addrs), i, j;

		assert_int_equal(cnt, copies);
		for (i = 0; i < cnt; i++) {
			assert_in_range(devs[i], 0, n - 1);
			if (addrs[i] >= dev)
				print_error("raid10 0x%x n=%d: sector %" PRIu64 " copy %d at %"
					    PRIu64 " beyond %" PRIu64 "\n", (unsigned int)g->layout,
					    n, s, i, addrs[i], dev);
			assert_true(addrs[i] < dev);
			for (j = 0; j < i; j++) {
				if (devs[i] == devs[j])
					print_error("raid10 0x%x n=%d: sector %" PRIu64 ": copies %d and %d both on %d\n",
						    (unsigned int)g->layout, n, s, j, i, devs[i]);
				assert_int_not_equal(devs[i], devs[j]);
			}
			assert_int_equal(used[(uint64_t)devs[i] * dev + addrs[i]], 0);
			used[(uint64_t)devs[i] * dev + addrs[i]] = 1;
			placed++;
			if (r10_virt(g, devs[i], addrs[i]) != s)
				print_error("raid10 0x%x n=%d: copy %d of %" PRIu64 " (%d, %" PRIu64
					    ") maps back to %" PRIu64 "\n", (unsigned int)g->layout,
					    n, i, s, devs[i], addrs[i],
					    r10_virt(g, devs[i], addrs[i]));
			assert_int_equal(r10_virt(g, devs[i], addrs[i]), s);
		}
		assert_int_equal(rf_geom_chunk_left(g, s),
				 g->chunk_sectors - s % g->chunk_sectors);
	}
	assert_int_equal(placed, g->array_sectors * (uint64_t)copies);
	assert_true(placed <= (uint64_t)n * dev);
	free(used);
}

static void test_r10_exhaustive(void **state)
{
	/* near | far << 8 | offset << 16, then with far sets (<< 17) */
	static const int base[] = {
		0x102, 0x103, 0x104, 0x201, 0x301, 0x401, 0x10201, 0x10301,
		0x202, 0x10202, 0x203, 0x302, 0x10203, 0x10302,
	};
	static const int sets[] = { 0, 2 };
	size_t bi, si;
	int n;

	for (bi = 0; bi < ARRAY_LEN(base); bi++)
		for (si = 0; si < ARRAY_LEN(sets); si++)
			for (n = 2; n <= 13; n++) {
				int layout = base[bi] | sets[si] << 17;
				int nc = base[bi] & 0xff, fc = (base[bi] >> 8) & 0xff;
				int fss = sets[si] ? nc * fc : n;
				/* shapes md maps onto themselves (see r10_init) */
				bool refused = nc * fc > n ||
					((base[bi] & 0x10000) && fc > 1 && nc > 1 && n % nc) ||
					(sets[si] && nc > 1 && n % fss && n / fss > 1);
				uint64_t rows;
				struct rf_geom g;
				int rc;

				/* sets = 0 and far = 1 is the plain layout: skip repeats */
				if (sets[si] && fc == 1)
					continue;
				for (rows = 5; rows <= 13; rows += 4) {
					geom_set(&g, 10, layout, n, 8, rows * 8 + 3);
					rc = rf_geom_init(&g, NULL, 0);
					if (refused != (rc != 0))
						print_error("raid10 0x%x n=%d: rc %d\n", layout, n, rc);
					if (refused) {
						assert_int_equal(rc, -EINVAL);
						continue;
					}
					assert_int_equal(rc, 0);
					assert_int_equal(g.near_copies, nc);
					assert_int_equal(g.far_copies, fc);
					assert_int_equal(g.max_degraded, nc * fc - 1);
					assert_true(g.dev_sectors <= rows * 8);
					assert_int_equal(g.dev_sectors % 8, 0);
					check_r10_geom(&g);
				}
			}
}

static void expect_copies(const struct rf_geom *g, uint64_t s, int cnt, const int *devs,
			  const uint64_t *addrs)
{
	int d[RF_MAX_MEMBERS];
	uint64_t a[RF_MAX_MEMBERS];
	int i;

	assert_int_equal(rf_r10_map(g, s, d, a), cnt);
	for (i = 0; i < cnt; i++) {
		if (d[i] != devs[i] || a[i] != addrs[i])
			print_error("raid10 0x%x n=%d sector %" PRIu64 " copy %d: (%d, %" PRIu64
				    "), want (%d, %" PRIu64 ")\n", (unsigned int)g->layout,
				    g->raid_disks, s, i, d[i], a[i], devs[i], addrs[i]);
		assert_int_equal(d[i], devs[i]);
		assert_int_equal(a[i], addrs[i]);
	}
}

static void test_r10_known(void **state)
{
	struct rf_geom g;

	/* n2 on 4: pairs (0,1) and (2,3) */
	geom_ok(&g, 10, 0x102, 4, 8, 80);
	assert_int_equal(g.array_sectors, 160);
	expect_copies(&g, 0, 2, (int[]){ 0, 1 }, (uint64_t[]){ 0, 0 });
	expect_copies(&g, 9, 2, (int[]){ 2, 3 }, (uint64_t[]){ 1, 1 });
	expect_copies(&g, 16, 2, (int[]){ 0, 1 }, (uint64_t[]){ 8, 8 });

	/* n2 on 3: the second copy of chunk 1 wraps to the next row */
	geom_ok(&g, 10, 0x102, 3, 8, 80);
	assert_int_equal(g.array_sectors, 10 * 3 / 2 * 8);
	expect_copies(&g, 8, 2, (int[]){ 2, 0 }, (uint64_t[]){ 0, 8 });
	expect_copies(&g, 16, 2, (int[]){ 1, 2 }, (uint64_t[]){ 8, 8 });

	/* f2 on 4, 10 chunks: array of 20 chunks, far copies 5 chunks down */
	geom_ok(&g, 10, 0x201, 4, 8, 85);
	assert_int_equal(g.dev_sectors, 80);
	assert_int_equal(g.array_sectors, 160);
	assert_int_equal(g.stride, 40);
	expect_copies(&g, 0, 2, (int[]){ 0, 1 }, (uint64_t[]){ 0, 40 });
	expect_copies(&g, 8, 2, (int[]){ 1, 2 }, (uint64_t[]){ 0, 40 });
	expect_copies(&g, 24, 2, (int[]){ 3, 0 }, (uint64_t[]){ 0, 40 });
	expect_copies(&g, 33, 2, (int[]){ 0, 1 }, (uint64_t[]){ 9, 49 });

	/* o2 on 4: far copy one chunk below, rows doubled */
	geom_ok(&g, 10, 0x10201, 4, 8, 80);
	assert_int_equal(g.stride, 8);
	expect_copies(&g, 0, 2, (int[]){ 0, 1 }, (uint64_t[]){ 0, 8 });
	expect_copies(&g, 8, 2, (int[]){ 1, 2 }, (uint64_t[]){ 0, 8 });
	expect_copies(&g, 24, 2, (int[]){ 3, 0 }, (uint64_t[]){ 0, 8 });
	expect_copies(&g, 32, 2, (int[]){ 0, 1 }, (uint64_t[]){ 16, 24 });

	/* f3 on 4, 10 chunks: md keeps 9 used chunks, stride 3 */
	geom_ok(&g, 10, 0x301, 4, 8, 80);
	assert_int_equal(g.array_sectors, 10 / 3 * 4 * 8);
	assert_int_equal(g.dev_sectors, 72);
	assert_int_equal(g.stride, 24);
	expect_copies(&g, 8, 3, (int[]){ 1, 2, 3 }, (uint64_t[]){ 0, 24, 48 });

	/* f2 on 5 with far sets of 2: sets {0,1} and {2,3,4} (the last one
	 * takes the odd member) */
	geom_ok(&g, 10, 0x201 | 2 << 17, 5, 8, 80);
	assert_int_equal(g.far_set_size, 2);
	expect_copies(&g, 0, 2, (int[]){ 0, 1 }, (uint64_t[]){ 0, 40 });
	expect_copies(&g, 8, 2, (int[]){ 1, 0 }, (uint64_t[]){ 0, 40 });
	expect_copies(&g, 16, 2, (int[]){ 2, 3 }, (uint64_t[]){ 0, 40 });
	expect_copies(&g, 24, 2, (int[]){ 3, 4 }, (uint64_t[]){ 0, 40 });
	expect_copies(&g, 32, 2, (int[]){ 4, 2 }, (uint64_t[]){ 0, 40 });

	/* n2 f2 on 4: near pair, then the far pair two members on */
	geom_ok(&g, 10, 0x202, 4, 8, 80);
	expect_copies(&g, 8, 4, (int[]){ 2, 0, 3, 1 }, (uint64_t[]){ 0, 40, 0, 40 });
}

/* ---- init: numbers and refusals ---- */

static void test_geom_values(void **state)
{
	struct rf_geom g;

	/* the shapes of the md-images arrays, from their manifest */
	geom_ok(&g, 0, 0, 3, 128, 129024);
	assert_int_equal(g.array_sectors, 387072);
	geom_ok(&g, 1, 0, 2, 0, 129024);
	assert_int_equal(g.array_sectors, 129024);
	assert_int_equal(g.max_degraded, 1);
	assert_int_equal(g.data_disks, 1);
	geom_ok(&g, 4, 0, 4, 128, 129024);
	assert_int_equal(g.array_sectors, 387072);
	assert_int_equal(g.layout, RF_ALGO_PARITY_N);
	geom_ok(&g, 5, 2, 4, 128, 130944);
	assert_int_equal(g.array_sectors, 392832);
	geom_ok(&g, 6, 2, 5, 128, 129024);
	assert_int_equal(g.array_sectors, 387072);
	assert_int_equal(g.data_disks, 3);
	assert_int_equal(g.max_degraded, 2);
	geom_ok(&g, 10, 0x102, 4, 128, 129024);
	assert_int_equal(g.array_sectors, 258048);
	assert_int_equal(g.stride, 129024);
	assert_int_equal(g.far_set_size, 4);
	assert_int_equal(g.max_degraded, 1);

	/* raid1 ignores chunks and does not round */
	geom_ok(&g, 1, 0, 3, 0, 1001);
	assert_int_equal(g.dev_sectors, 1001);
	assert_int_equal(g.array_sectors, 1001);
	assert_int_equal(g.max_degraded, 2);
	assert_int_equal(rf_geom_chunk_left(&g, 0), 1001);
	assert_int_equal(rf_geom_chunk_left(&g, 1000), 1);
	assert_int_equal(rf_geom_chunk_left(&g, 1001), 0);

	/* chunk_left stops at the chunk end, then at the array end */
	geom_ok(&g, 5, 2, 4, 128, 129024);
	assert_int_equal(rf_geom_chunk_left(&g, 0), 128);
	assert_int_equal(rf_geom_chunk_left(&g, 127), 1);
	assert_int_equal(rf_geom_chunk_left(&g, 128), 128);
	assert_int_equal(rf_geom_chunk_left(&g, 387071), 1);
	assert_int_equal(rf_geom_chunk_left(&g, 387072), 0);

	/* raid5 on 2 members; 64 members, the most there are */
	geom_ok(&g, 5, 2, 2, 8, 64);
	assert_int_equal(g.array_sectors, 64);
	geom_ok(&g, 6, 18, RF_MAX_MEMBERS, 1024, 1 << 20);
	assert_int_equal(g.array_sectors, (uint64_t)(RF_MAX_MEMBERS - 2) << 20);
	/* big members: no 32-bit overflow anywhere */
	geom_ok(&g, 5, 2, 16, 1024, 1ULL << 40);
	{
		struct rf_r5_map m;
		uint64_t last = g.array_sectors - 1;

		rf_r5_map_sector(&g, last, &m);
		assert_int_equal(m.dev_sector, (1ULL << 40) - 1);
		assert_int_equal(rf_r5_array_sector(&g, m.dd_idx, m.dev_sector), (int64_t)last);
	}
}

struct bad_geom {
	int level, layout, n;
	uint32_t chunk;
	uint64_t dev;
	const char *why;
};

static const struct bad_geom bad_geoms[] = {
	{ 3, 0, 4, 128, 1024, "raid3" },
	{ 7, 0, 4, 128, 1024, "raid7" },
	{ -1, 0, 4, 128, 1024, "linear" },
	{ 0, 0, 0, 128, 1024, "raid0 on no member" },   /* one is md's: what a raid1 taken over leaves */
	{ 1, 0, 1, 0, 1024, "raid1 on one member" },
	{ 5, 2, 1, 128, 1024, "raid5 on one member" },
	{ 6, 2, 3, 128, 1024, "raid6 on three" },
	{ 5, 2, RF_MAX_MEMBERS + 1, 128, 1024, "too many members" },
	{ 5, 2, 4, 0, 1024, "chunk 0" },
	{ 5, 2, 4, 4, 1024, "chunk below 4 KiB" },
	{ 5, 2, 4, 24, 1024, "chunk not a power of two" },
	{ 0, 0, 4, 12, 1024, "raid0 chunk not a power of two" },
	{ 10, 0x102, 4, 0, 1024, "raid10 chunk 0" },
	{ 5, 2, 4, 128, 127, "member smaller than a chunk" },
	{ 1, 0, 2, 0, 0, "raid1 of nothing" },
	{ 5, 6, 4, 128, 1024, "raid5 layout 6" },
	{ 5, 8, 4, 128, 1024, "raid5 with a DDF layout" },
	{ 5, 18, 4, 128, 1024, "raid5 with a raid6-only layout" },
	{ 5, -1, 4, 128, 1024, "raid5 layout -1" },
	{ 6, 6, 5, 128, 1024, "raid6 layout 6" },
	{ 6, 11, 5, 128, 1024, "raid6 layout 11" },
	{ 6, 21, 5, 128, 1024, "raid6 layout 21" },
	{ 4, 2, 4, 128, 1024, "raid4 left-symmetric" },
	{ 4, 4, 4, 128, 1024, "raid4 parity-first" },
	{ 1, 1, 2, 0, 1024, "raid1 layout 1" },
	{ 0, 3, 2, 128, 1024, "raid0 layout 3" },
	{ 10, 0x103, 2, 128, 1024, "n3 on two members" },
	{ 10, 0x202, 3, 128, 1024, "n2 f2 on three members" },
	{ 10, 0x101, 4, 128, 1024, "one copy" },
	{ 10, 0x100, 4, 128, 1024, "no near copies" },
	{ 10, 0x002, 4, 128, 1024, "no far copies" },
	{ 10, 0x201 | 1 << 17, 4, 128, 1024, "withdrawn far-set style 1" },
	{ 10, 0x102 | 3 << 17, 4, 128, 1024, "far-set style 3" },
	{ 10, 0x102 | 1 << 19, 4, 128, 1024, "layout bits above 18" },
	{ 10, 0x201, 4, 128, 128, "raid10 far: no room for a row" },
	/* md runs these two but puts copies of different chunks on one place:
	 * 0x10202 on 5 members stores chunk 1's offset copy and chunk 2's
	 * wrapped near copy both at member 0, row 1.  Refused, not copied. */
	{ 10, 0x10202, 5, 128, 1024, "offset copies with near copies wrapping rows" },
	{ 10, 0x202 | 2 << 17, 9, 128, 1024, "ragged far sets with near copies" },
};

static void test_geom_errors(void **state)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(bad_geoms); i++) {
		const struct bad_geom *b = &bad_geoms[i];
		struct rf_geom g;
		char err[200];
		int rc;

		geom_set(&g, b->level, b->layout, b->n, b->chunk, b->dev);
		err[0] = '\0';
		rc = rf_geom_init(&g, err, sizeof(err));
		if (rc != -EINVAL)
			print_error("%s: accepted (rc %d)\n", b->why, rc);
		assert_int_equal(rc, -EINVAL);
		assert_true(err[0] != '\0');
		/* a short buffer, or none, is fine */
		assert_int_equal(rf_geom_init(&g, err, 4), -EINVAL);
		assert_true(strlen(err) < 4);
		assert_int_equal(rf_geom_init(&g, NULL, 0), -EINVAL);
	}
}

/* ---- names ---- */

struct name_case {
	int level;
	const char *name;
	int layout;	/* or -EINVAL */
};

static const struct name_case name_cases[] = {
	{ 5, NULL, 2 }, { 5, "", 2 }, { 5, "default", 2 },
	{ 5, "left-asymmetric", 0 }, { 5, "right-asymmetric", 1 },
	{ 5, "left-symmetric", 2 }, { 5, "right-symmetric", 3 },
	{ 5, "parity-first", 4 }, { 5, "parity-last", 5 },
	{ 5, "la", 0 }, { 5, "ra", 1 }, { 5, "ls", 2 }, { 5, "rs", 3 },
	{ 5, "LS", 2 }, { 5, "3", 3 }, { 5, "0", 0 },
	{ 5, "6", -EINVAL }, { 5, "8", -EINVAL }, { 5, "ddf-N-restart", -EINVAL },
	{ 5, "left-symmetric-6", -EINVAL }, { 5, "left", -EINVAL }, { 5, "-1", -EINVAL },
	{ 5, "2x", -EINVAL }, { 5, "n2", -EINVAL }, { 5, "99999999999999999999", -EINVAL },
	{ 6, NULL, 2 }, { 6, "ls", 2 }, { 6, "parity-first", 4 }, { 6, "parity-last", 5 },
	{ 6, "ddf-zero-restart", 8 }, { 6, "ddf-N-restart", 9 }, { 6, "ddf-n-restart", 9 },
	{ 6, "ddf-N-continue", 10 },
	{ 6, "left-asymmetric-6", 16 }, { 6, "right-asymmetric-6", 17 },
	{ 6, "left-symmetric-6", 18 }, { 6, "right-symmetric-6", 19 },
	{ 6, "parity-first-6", 20 }, { 6, "9", 9 }, { 6, "20", 20 },
	{ 6, "11", -EINVAL }, { 6, "15", -EINVAL }, { 6, "21", -EINVAL },
	{ 6, "parity-last-6", -EINVAL },
	{ 4, NULL, 5 }, { 4, "parity-last", 5 }, { 4, "0", 5 }, { 4, "5", 5 },
	{ 4, "parity-first", -EINVAL }, { 4, "left-symmetric", -EINVAL }, { 4, "2", -EINVAL },
	{ 10, NULL, 0x102 }, { 10, "", 0x102 }, { 10, "n2", 0x102 }, { 10, "n3", 0x103 },
	{ 10, "f2", 0x201 }, { 10, "f3", 0x301 }, { 10, "o2", 0x10201 }, { 10, "o3", 0x10301 },
	{ 10, "N2", 0x102 }, { 10, "n1", 0x101 }, { 10, "n255", 0x1ff },
	{ 10, "258", 0x102 }, { 10, "66049", 0x10201 }, { 10, "262658", 0x40202 },
	{ 10, "n0", -EINVAL }, { 10, "n256", -EINVAL }, { 10, "n", -EINVAL },
	{ 10, "x2", -EINVAL }, { 10, "n2x", -EINVAL }, { 10, "n-2", -EINVAL },
	{ 10, "left-symmetric", -EINVAL }, { 10, "393474", -EINVAL }, { 10, "131585", -EINVAL },
	{ 0, NULL, 0 }, { 0, "", 0 }, { 0, "default", 0 }, { 0, "0", 0 },
	{ 0, "left-symmetric", -EINVAL }, { 0, "n2", -EINVAL },
	{ 1, NULL, 0 }, { 1, "default", 0 }, { 1, "1", -EINVAL }, { 1, "f2", -EINVAL },
	{ 3, NULL, -EINVAL }, { 7, "left-symmetric", -EINVAL },
};

static void test_layout_names(void **state)
{
	static const int r10_layouts[] = {
		0x102, 0x103, 0x201, 0x301, 0x10201, 0x10301, 0x202, 0x10202,
		0x201 | 2 << 17, 0x202 | 2 << 17, 0x1ff, 0xff01,
	};
	char buf[64];
	size_t i;

	for (i = 0; i < ARRAY_LEN(name_cases); i++) {
		const struct name_case *c = &name_cases[i];
		int got = rf_layout_parse(c->level, c->name);

		if (got != c->layout)
			print_error("raid%d \"%s\": %d, want %d\n", c->level,
				    c->name ? c->name : "(null)", got, c->layout);
		assert_int_equal(got, c->layout);
	}

	/* names of known layouts */
	assert_string_equal(rf_layout_name(5, 2, buf, sizeof(buf)), "left-symmetric");
	assert_string_equal(rf_layout_name(6, 9, buf, sizeof(buf)), "ddf-N-restart");
	assert_string_equal(rf_layout_name(6, 20, buf, sizeof(buf)), "parity-first-6");
	assert_string_equal(rf_layout_name(4, 5, buf, sizeof(buf)), "parity-last");
	assert_string_equal(rf_layout_name(4, 0, buf, sizeof(buf)), "parity-last");
	assert_string_equal(rf_layout_name(10, 0x102, buf, sizeof(buf)), "n2");
	assert_string_equal(rf_layout_name(10, 0x301, buf, sizeof(buf)), "f3");
	assert_string_equal(rf_layout_name(10, 0x10201, buf, sizeof(buf)), "o2");
	assert_string_equal(rf_layout_name(10, 0x202, buf, sizeof(buf)), "514");
	assert_string_equal(rf_layout_name(5, 9, buf, sizeof(buf)), "9");
	/* short buffers are cut, not overrun */
	assert_string_equal(rf_layout_name(5, 2, buf, 5), "left");

	/* every layout's name parses back to it */
	for (i = 0; i < ARRAY_LEN(r5_layouts); i++) {
		rf_layout_name(5, r5_layouts[i], buf, sizeof(buf));
		assert_int_equal(rf_layout_parse(5, buf), r5_layouts[i]);
	}
	for (i = 0; i < ARRAY_LEN(r6_layouts); i++) {
		rf_layout_name(6, r6_layouts[i], buf, sizeof(buf));
		assert_int_equal(rf_layout_parse(6, buf), r6_layouts[i]);
	}
	for (i = 0; i < ARRAY_LEN(r10_layouts); i++) {
		rf_layout_name(10, r10_layouts[i], buf, sizeof(buf));
		assert_int_equal(rf_layout_parse(10, buf), r10_layouts[i]);
	}
	rf_layout_name(4, 5, buf, sizeof(buf));
	assert_int_equal(rf_layout_parse(4, buf), 5);
	rf_layout_name(0, 0, buf, sizeof(buf));
	assert_int_equal(rf_layout_parse(0, buf), 0);
	rf_layout_name(1, 0, buf, sizeof(buf));
	assert_int_equal(rf_layout_parse(1, buf), 0);
}

/* ---- arrays that kernel md wrote ---- */

/* From md-images/manifest.jsonl.  raid0's component_sectors reads 0 there:
 * its members hold 129024 sectors after data_offset, like the others. */
struct md_image {
	const char *name;
	int level, layout, raid_disks;
	uint32_t chunk_sectors;
	uint64_t dev_sectors, array_sectors, data_offset;
	/* Optional: members whose data offsets (sectors) differ, and member
	 * sizes (MiB) other than 64; raid0 members of different sizes make
	 * md's zones (data size: all after the offset). */
	uint64_t doff[8];
	uint64_t mib[8];
};

static const struct md_image md_images[] = {
	{ "r0-3d-64k", 0, 0, 3, 128, 129024, 387072, 2048, { 0 }, { 0 } },
	{ "r1-2d", 1, 0, 2, 0, 129024, 129024, 2048, { 0 }, { 0 } },
	{ "r10-n2-4d-64k", 10, 258, 4, 128, 129024, 258048, 2048, { 0 }, { 0 } },
	{ "r4-4d-64k", 4, 0, 4, 128, 129024, 387072, 2048, { 0 }, { 0 } },
	{ "r5-la-4d-64k", 5, 0, 4, 128, 129024, 387072, 2048, { 0 }, { 0 } },
	{ "r5-ls-4d-64k-meta1.0", 5, 2, 4, 128, 130944, 392832, 0, { 0 }, { 0 } },
	{ "r5-ls-4d-64k", 5, 2, 4, 128, 129024, 387072, 2048, { 0 }, { 0 } },
	{ "r6-ls-5d-64k", 6, 2, 5, 128, 129024, 387072, 2048, { 0 }, { 0 } },
	/* md arrays as they are found: grown, a replaced member with another
	 * data offset, raid0 zones in both layouts, raid10 over an odd count,
	 * raid5 over 2 members */
	{ "r5-ls-3to4d-64k-grown", 5, 2, 4, 128, 63488, 190464, 1664, { 0 }, { 32, 32, 32, 32 } },
	{ "r5-ls-4d-64k-replaced", 5, 2, 4, 128, 63488, 190464, 2048, { 2048, 4096, 2048, 2048 },
	  { 32, 40, 32, 32 } },
	{ "r0-3d-64k-zones-original", 0, 1, 3, 128, 0, 419840, 2048, { 0 }, { 48, 64, 96 } },
	{ "r0-3d-64k-zones-alternate", 0, 2, 3, 128, 0, 419840, 2048, { 0 }, { 48, 64, 96 } },
	{ "r10-n2-3d-64k", 10, 258, 3, 128, 63488, 95232, 2048, { 0 }, { 32, 32, 32 } },
	{ "r10-f2-5d-64k", 10, 513, 5, 128, 63488, 158720, 2048, { 0 }, { 32, 32, 32, 32, 32 } },
	{ "r5-ls-2d-64k", 5, 2, 2, 128, 63488, 63488, 2048, { 0 }, { 32, 32 } },
};

#define MD_MEMBER_BYTES (64ULL << 20)

static uint64_t img_doff(const struct md_image *a, int member)
{
	return a->doff[0] ? a->doff[member] : a->data_offset;
}

static uint64_t img_bytes(const struct md_image *a, int member)
{
	return a->mib[0] ? a->mib[member] << 20 : MD_MEMBER_BYTES;
}
#define SAMPLES 4000
#define EDGE 256
#define PARITY_ROWS 32

/* What the md-images test has open, so teardown can clean up after a failed
 * assertion. */
static struct {
	char tmpdir[PATH_MAX];
	int fds[RF_MAX_MEMBERS];
	int nfds;
} img;

static const char *md_images_dir(void)
{
	static const char *const tries[] = {
		"tests/data/md-images", /* make runs the tests from the top */
	};
	static char found[PATH_MAX];
	const char *env = getenv("RF_MD_IMAGES");
	struct stat st;
	size_t i;

	if (env && *env)
		return env;
	for (i = 0; i < ARRAY_LEN(tries); i++) {
		snprintf(found, sizeof(found), "%s/manifest.jsonl", tries[i]);
		if (!stat(found, &st))
			return tries[i];
	}
	return NULL;
}

static void img_close(void)
{
	int i;
	char path[PATH_MAX + 32];

	for (i = 0; i < img.nfds; i++) {
		if (img.fds[i] >= 0)
			close(img.fds[i]);
		img.fds[i] = -1;
		snprintf(path, sizeof(path), "%s/role%d.img", img.tmpdir, i);
		unlink(path);
	}
	img.nfds = 0;
}

static int md_images_teardown(void **state)
{
	img_close();
	if (img.tmpdir[0])
		rmdir(img.tmpdir);
	img.tmpdir[0] = '\0';
	return 0;
}

/* Decompress the members of one array into img.tmpdir, all at once (xz is
 * the slow part), and open them. */
static void img_open(const char *dir, const struct md_image *a)
{
	char cmd[8192], path[PATH_MAX + 32];
	size_t len = 0;
	int i;
	struct stat st;

	for (i = 0; i < a->raid_disks; i++)
		len += (size_t)snprintf(cmd + len, sizeof(cmd) - len,
					"xz -dc '%s/%s/role%d.img.xz' > '%s/role%d.img' & p%d=$!; ",
					dir, a->name, i, img.tmpdir, i, i);
	for (i = 0; i < a->raid_disks; i++)
		len += (size_t)snprintf(cmd + len, sizeof(cmd) - len, "wait $p%d || exit 1; ", i);
	assert_true(len < sizeof(cmd));
	img.nfds = a->raid_disks;
	for (i = 0; i < a->raid_disks; i++)
		img.fds[i] = -1;
	if (system(cmd) != 0) {
		print_error("%s: xz failed: %s\n", a->name, cmd);
		fail();
	}
	for (i = 0; i < a->raid_disks; i++) {
		snprintf(path, sizeof(path), "%s/role%d.img", img.tmpdir, i);
		img.fds[i] = open(path, O_RDONLY);
		if (img.fds[i] < 0 || fstat(img.fds[i], &st) || (uint64_t)st.st_size != img_bytes(a, i)) {
			print_error("%s: member %d (%s): missing or not %" PRIu64 " MiB\n", a->name, i, path,
				    img_bytes(a, i) >> 20);
			fail();
		}
	}
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	int b;

	for (b = 7; b >= 0; b--)
		v = v << 8 | p[b];
	return v;
}

/* One sector of a member must hold u64le(want) 64 times. */
static void check_sector(const struct md_image *a, int member, uint64_t dev_sector,
			 uint64_t want)
{
	uint8_t buf[512];
	off_t off = (off_t)((img_doff(a, member) + dev_sector) * 512);
	ssize_t got = pread(img.fds[member], buf, sizeof(buf), off);
	int i;

	if (got != (ssize_t)sizeof(buf)) {
		print_error("%s: member %d: read at %lld: %s\n", a->name, member,
			    (long long)off, got < 0 ? strerror(errno) : "short read");
		fail();
	}
	for (i = 0; i < 64; i++) {
		uint64_t v = le64(buf + i * 8);

		if (v != want) {
			print_error("%s: array sector %" PRIu64 " -> member %d sector %" PRIu64
				    ": holds %" PRIu64 " (word %d)\n", a->name, want, member,
				    dev_sector, v, i);
			fail();
		}
	}
}

static void check_array_sector(const struct rf_geom *g, const struct md_image *a, uint64_t s)
{
	int devs[RF_MAX_MEMBERS], member, i, cnt;
	uint64_t addrs[RF_MAX_MEMBERS], dev;
	struct rf_r5_map m;

	switch (g->level) {
	case 0:
		rf_r0_map(g, s, &member, &dev);
		check_sector(a, member, dev, s);
		break;
	case 1:
		for (i = 0; i < g->raid_disks; i++)
			check_sector(a, i, s, s);
		break;
	case 10:
		cnt = rf_r10_map(g, s, devs, addrs);
		for (i = 0; i < cnt; i++)
			check_sector(a, devs[i], addrs[i], s);
		break;
	default:
		rf_r5_map_sector(g, s, &m);
		check_sector(a, m.dd_idx, m.dev_sector, s);
		break;
	}
}

static uint8_t gf_mul(uint8_t x, uint8_t y)
{
	uint8_t r = 0;

	while (y) {
		if (y & 1)
			r ^= x;
		x = (uint8_t)((x << 1) ^ (x & 0x80 ? 0x1d : 0));
		y >>= 1;
	}
	return r;
}

/* Read a whole chunk row and check its data, P and (raid6) Q. */
static void check_parity_row(const struct rf_geom *g, const struct md_image *a, uint64_t stripe,
			     uint8_t **col)
{
	size_t len = (size_t)g->chunk_sectors * 512, b;
	uint64_t off = stripe * g->chunk_sectors * 512;
	struct rf_r5_row row;
	uint8_t *p, *q;
	int i, k;

	rf_r5_row(g, stripe, &row);
	for (i = 0; i < g->raid_disks; i++)
		if (pread(img.fds[i], col[i], len, (off_t)(off + img_doff(a, i) * 512)) != (ssize_t)len) {
			print_error("%s: member %d: row %" PRIu64 ": short read\n", a->name, i, stripe);
			fail();
		}
	/* data columns hold what the row's array sectors should */
	for (k = 0; k < g->data_disks; k++) {
		uint64_t first = (stripe * (uint64_t)g->data_disks + (uint64_t)k) * g->chunk_sectors;
		uint8_t *c = col[row.data_member[k]];

		for (b = 0; b < g->chunk_sectors; b++) {
			uint64_t v = le64(c + b * 512 + 8 * (b % 64));

			if (v != first + b) {
				print_error("%s: row %" PRIu64 " column %d (member %d) sector %zu: %"
					    PRIu64 ", want %" PRIu64 "\n", a->name, stripe, k,
					    row.data_member[k], b, v, first + b);
				fail();
			}
		}
	}
	p = calloc(1, len);
	q = calloc(1, len);
	assert_non_null(p);
	assert_non_null(q);
	for (i = 0; i < g->raid_disks; i++) {
		uint8_t coef = 1, tab[256];
		int slot, t;

		if (i == row.pd_idx || i == row.qd_idx)
			continue;
		for (b = 0; b < len; b++)
			p[b] ^= col[i][b];
		if (g->level != 6)
			continue;
		slot = row.qslot[i];
		for (t = 0; t < slot; t++)
			coef = gf_mul(coef, 2);
		for (t = 0; t < 256; t++)
			tab[t] = gf_mul(coef, (uint8_t)t);
		for (b = 0; b < len; b++)
			q[b] ^= tab[col[i][b]];
	}
	if (memcmp(p, col[row.pd_idx], len)) {
		print_error("%s: row %" PRIu64 ": P on member %d is not the xor of the data\n",
			    a->name, stripe, row.pd_idx);
		fail();
	}
	if (g->level == 6 && memcmp(q, col[row.qd_idx], len)) {
		print_error("%s: row %" PRIu64 ": Q on member %d does not match the syndrome\n",
			    a->name, stripe, row.qd_idx);
		fail();
	}
	free(p);
	free(q);
}

static void check_md_image(const char *dir, const struct md_image *a)
{
	struct rf_geom g;
	uint64_t s, i, rows;
	uint8_t *col[RF_MAX_MEMBERS];
	int m;

	if (a->level == 0 && a->mib[0]) {
		char err[256];

		geom_set(&g, a->level, a->layout, a->raid_disks, a->chunk_sectors, 0);
		for (m = 0; m < a->raid_disks; m++)
			g.r0_sectors[m] = img_bytes(a, m) / 512 - img_doff(a, m);
		if (rf_geom_init(&g, err, sizeof(err)))
			print_error("%s: %s\n", a->name, err);
		assert_int_equal(rf_geom_init(&g, err, sizeof(err)), 0);
	} else {
		geom_ok(&g, a->level, a->layout, a->raid_disks, a->chunk_sectors, a->dev_sectors);
	}
	assert_int_equal(g.array_sectors, a->array_sectors);
	img_open(dir, a);

	for (s = 0; s < EDGE; s++) {
		check_array_sector(&g, a, s);
		check_array_sector(&g, a, g.array_sectors - 1 - s);
	}
	for (i = 0; i < SAMPLES; i++)
		check_array_sector(&g, a, fx_rand() % g.array_sectors);
	/* both sides of a few chunk edges */
	if (g.chunk_sectors)
		for (i = 1; i < 64; i++) {
			s = i * 7 * g.chunk_sectors;
			if (s >= g.array_sectors)
				break;
			check_array_sector(&g, a, s - 1);
			check_array_sector(&g, a, s);
		}

	if (g.level == 4 || g.level == 5 || g.level == 6) {
		rows = g.dev_sectors / g.chunk_sectors;
		for (m = 0; m < g.raid_disks; m++) {
			col[m] = malloc((size_t)g.chunk_sectors * 512);
			assert_non_null(col[m]);
		}
		/* first rows cover a whole turn of the parity rotation */
		for (i = 0; i < (uint64_t)g.raid_disks + 1; i++)
			check_parity_row(&g, a, i, col);
		check_parity_row(&g, a, rows - 1, col);
		for (i = 0; i < PARITY_ROWS; i++)
			check_parity_row(&g, a, fx_rand() % rows, col);
		for (m = 0; m < g.raid_disks; m++)
			free(col[m]);
	}
	img_close();
}

static void test_md_images(void **state)
{
	const char *dir = md_images_dir();
	size_t i;

	if (!dir) {
		print_message("[  SKIP    ] no md-images folder (set RF_MD_IMAGES)\n");
		skip();
	}
	if (system("command -v xz >/dev/null 2>&1") != 0) {
		print_message("[  SKIP    ] xz is not installed; cannot unpack %s\n", dir);
		skip();
	}
	if (strchr(dir, '\'')) {
		print_message("[  SKIP    ] md-images path has a quote in it: %s\n", dir);
		skip();
	}
	snprintf(img.tmpdir, sizeof(img.tmpdir), "/tmp/rf-test-layout-XXXXXX");
	if (!mkdtemp(img.tmpdir)) {
		print_error("mkdtemp %s: %s\n", img.tmpdir, strerror(errno));
		img.tmpdir[0] = '\0';
		fail();
	}
	fx_rand_restart(0);
	for (i = 0; i < ARRAY_LEN(md_images); i++)
		check_md_image(dir, &md_images[i]);
}

/* A reshape under way: md's raid5 run() checks and raid5_size(), and which
 * geometry a sector uses on each side of the position. */
static void reshape_setup(struct rf_geom *g, struct rf_reshape *rs, int disks, int prev_disks, int layout,
			  int prev_layout, uint32_t chunk, uint32_t prev_chunk, uint64_t dev, uint64_t pos, bool back)
{
	memset(g, 0, sizeof(*g));
	memset(rs, 0, sizeof(*rs));
	g->level = rs->prev.level = 5;
	g->raid_disks = disks;
	rs->prev.raid_disks = prev_disks;
	g->layout = layout;
	rs->prev.layout = prev_layout;
	g->chunk_sectors = chunk;
	rs->prev.chunk_sectors = prev_chunk;
	g->dev_sectors = rs->prev.dev_sectors = dev;
	rs->active = true;
	rs->position = pos;
	rs->backwards = back;
}

static void test_reshape(void **state)
{
	struct rf_geom g;
	struct rf_reshape rs;
	struct rf_r5_map m;
	char err[256];

	(void)state;
	/* The kernel's mid-grow array: 3 -> 4, 64K, at 81792, offsets 2048 ->
	 * 1664 (diff -384): md's old size, the new geometry below. */
	reshape_setup(&g, &rs, 4, 3, 2, 2, 128, 128, 63488, 81792, false);
	assert_int_equal(rf_reshape_init(&g, &rs, -384, err, sizeof(err)), 0);
	assert_int_equal(g.array_sectors, 126976);
	assert_int_equal(g.data_disks, 3);
	assert_int_equal(rs.prev.data_disks, 2);
	assert_false(rf_reshape_in_prev(&rs, 81791));
	assert_true(rf_reshape_in_prev(&rs, 81792));
	assert_int_equal(rf_reshape_left(&rs, 81790), 2);
	assert_int_equal(rf_reshape_left(&rs, 81792), UINT64_MAX);
	/* sector 81792 is old row 319 (2 data disks), 81791 new row 212 */
	rf_r5_map_sector(&rs.prev, 81792, &m);
	assert_int_equal(m.stripe, 319);
	rf_r5_map_sector(&g, 81791, &m);
	assert_int_equal(m.stripe, 212);
	/* Negative control: not active, nothing is in the previous geometry. */
	rs.active = false;
	assert_false(rf_reshape_in_prev(&rs, 100000));
	assert_int_equal(rf_reshape_left(&rs, 0), UINT64_MAX);

	/* Backwards (the mid-relayout array): done above the position. */
	reshape_setup(&g, &rs, 4, 4, 0, 2, 128, 128, 49152, 81408, true);
	assert_int_equal(rf_reshape_init(&g, &rs, 6144, err, sizeof(err)), 0);
	assert_int_equal(g.array_sectors, 147456);
	assert_true(rf_reshape_in_prev(&rs, 81407));
	assert_false(rf_reshape_in_prev(&rs, 81408));
	assert_int_equal(rs.prev.layout, 2);
	assert_int_equal(g.layout, 0);

	/* A shrink 5 -> 4: md's size is the new one (fewer data disks). */
	reshape_setup(&g, &rs, 4, 5, 2, 2, 128, 128, 4096, 3 * 128 * 4, true);
	assert_int_equal(rf_reshape_init(&g, &rs, 512, err, sizeof(err)), 0);
	assert_int_equal(g.array_sectors, 4096 * 3);

	/* Chunk change 64K -> 128K: dev_sectors in whole 128K, positions in
	 * new stripes of the larger chunk. */
	reshape_setup(&g, &rs, 4, 3, 2, 2, 256, 128, 63488 + 128, 256 * 3 * 2, false);
	assert_int_equal(rf_reshape_init(&g, &rs, -1024, err, sizeof(err)), 0);
	assert_int_equal(g.dev_sectors, 63488);
	assert_int_equal(rs.prev.dev_sectors, 63488);
	reshape_setup(&g, &rs, 4, 3, 2, 2, 256, 128, 63488, 128 * 3, false);
	assert_int_equal(rf_reshape_init(&g, &rs, -1024, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "stripe boundary"));

	/* Refused as md refuses them. */
	reshape_setup(&g, &rs, 4, 3, 2, 2, 128, 128, 63488, 81792 + 128, false);
	assert_int_equal(rf_reshape_init(&g, &rs, -384, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "stripe boundary"));
	/* a grow in place at its start: the first new row is the first old
	 * one (mdadm's backup file holds it) */
	reshape_setup(&g, &rs, 4, 3, 2, 2, 128, 128, 63488, 0, false);
	assert_int_equal(rf_reshape_init(&g, &rs, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "critical section"));
	assert_non_null(strstr(err, "--backup-file"));
	/* ... taken up where a backup file covers it (a forward reshape) */
	reshape_setup(&g, &rs, 4, 3, 2, 2, 128, 128, 63488, 0, false);
	rs.backup = true;
	assert_int_equal(rf_reshape_init(&g, &rs, 0, err, sizeof(err)), 0);
	/* ... but with room between the offsets it is fine */
	reshape_setup(&g, &rs, 4, 3, 2, 2, 128, 128, 63488, 0, false);
	assert_int_equal(rf_reshape_init(&g, &rs, -384, err, sizeof(err)), 0);
	/* a relayout in place without moving the data offsets */
	reshape_setup(&g, &rs, 4, 4, 0, 2, 128, 128, 49152, 81408, true);
	assert_int_equal(rf_reshape_init(&g, &rs, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "backup file"));
	/* a level change */
	reshape_setup(&g, &rs, 5, 4, 18, 2, 128, 128, 49152, 0, false);
	g.level = 6;
	assert_int_equal(rf_reshape_init(&g, &rs, -384, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "raid5 to raid6"));
	/* past the end */
	reshape_setup(&g, &rs, 4, 3, 2, 2, 128, 128, 63488, 63488 * 3 + 384, false);
	assert_int_equal(rf_reshape_init(&g, &rs, -384, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "past the array's end"));
}

/* reshape_setup() of raid10 layouts, then rf_reshape_init(); its result. */
static int r10_init(struct rf_geom *g, struct rf_reshape *rs, int disks, int prev_disks, int layout,
		    int prev_layout, uint32_t chunk, uint32_t prev_chunk, uint64_t dev, uint64_t pos, bool back,
		    int64_t diff, char *err)
{
	reshape_setup(g, rs, disks, prev_disks, layout, prev_layout, chunk, prev_chunk, dev, pos, back);
	g->level = rs->prev.level = 10;
	return rf_reshape_init(g, rs, diff, err, 256);
}

/* A raid10 reshape under way, as md's raid10 run() and check_reshape take
 * one: n2 4 -> 5 is served at md's old size (raid10_size of the fewer
 * members) with the data offsets a chunk lower, at any position; md's
 * refusals: too little offset difference (a chunk times the far copies
 * of either geometry), the wrong direction, a far layout, another number
 * of copies, a position past the end. */
static void test_reshape_r10(void **state)
{
	struct rf_geom g;
	struct rf_reshape rs;
	char err[256];

	(void)state;
	/* 4 x 63488 sectors of 64K chunks: 2 x 63488 in the array before */
	assert_int_equal(r10_init(&g, &rs, 5, 4, 0x102, 0x102, 128, 128, 63488, 23488, false, -128, err), 0);
	assert_int_equal(g.array_sectors, 126976);
	assert_true(rf_reshape_in_prev(&rs, 23488));
	assert_false(rf_reshape_in_prev(&rs, 23487));
	/* o2 2 -> 3 needs two chunks */
	assert_int_equal(r10_init(&g, &rs, 3, 2, 0x10201, 0x10201, 128, 128, 63488, 0, false, -256, err), 0);
	assert_int_equal(r10_init(&g, &rs, 3, 2, 0x10201, 0x10201, 128, 128, 63488, 0, false, -128, err), -EINVAL);
	assert_non_null(strstr(err, "offset difference not enough"));
	/* forwards with the offsets moved up */
	assert_int_equal(r10_init(&g, &rs, 5, 4, 0x102, 0x102, 128, 128, 63488, 0, false, 128, err), -EINVAL);
	/* far copies */
	assert_int_equal(r10_init(&g, &rs, 5, 4, 0x201, 0x201, 128, 128, 63488, 0, false, -256, err), -EINVAL);
	assert_non_null(strstr(err, "no far layout"));
	/* n2 -> n3: the copies change */
	assert_int_equal(r10_init(&g, &rs, 6, 4, 0x103, 0x102, 128, 128, 63488, 0, false, -256, err), -EINVAL);
	assert_non_null(strstr(err, "md keeps the copies"));
	/* past the end of both */
	assert_int_equal(r10_init(&g, &rs, 5, 4, 0x102, 0x102, 128, 128, 63488, 63488 * 5 / 2 + 128, false, -128,
				  err), -EINVAL);
	assert_non_null(strstr(err, "past the array's end"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_r5_known_rows),
		cmocka_unit_test(test_r5_exhaustive),
		cmocka_unit_test(test_r0),
		cmocka_unit_test(test_r0_zones_known),
		cmocka_unit_test(test_r0_zones_ref),
		cmocka_unit_test(test_r10_known),
		cmocka_unit_test(test_r10_exhaustive),
		cmocka_unit_test(test_geom_values),
		cmocka_unit_test(test_geom_errors),
		cmocka_unit_test(test_layout_names),
		cmocka_unit_test(test_reshape),
		cmocka_unit_test(test_reshape_r10),
		cmocka_unit_test_teardown(test_md_images, md_images_teardown),
	};

	fx_seed_init();
	return fx_run_tests_with(tests, NULL, NULL);
}
