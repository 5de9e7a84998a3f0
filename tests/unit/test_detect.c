/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_detect.c - the detector on arrays laid out by layout.c in memory.
 *
 * What runs on (counters, fixed-length text lines) and what does not
 * (random data, a jump); the signatures detect_fs.c knows; then whole
 * detections: member files of raid0/4/5/6/10 arrays whose every sector s
 * holds a counter derived from s, written shuffled, with no superblock,
 * must come back with their level, layout, chunk, data offset and order
 * (one member missing for raid5, two for raid6), confidently; random and
 * all-zero members, and members of two different arrays, must not.
 *
 * It does NOT cover file systems in arrays (tests/func/27-detect.sh makes
 * a real ext4) nor the md arrays of tests/data (the functional test).
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
#include <sys/stat.h>
#include <unistd.h>

#include "raidfuse/detect.h"
#include "raidfuse/le.h"
#include "raidfuse/layout.h"
#include "raidfuse/parity.h"
#include "testdir.h"

#define MEMBER (6u << 20)

static void fill_counter(uint8_t *s, uint64_t v)
{
	int i;

	for (i = 0; i < 512; i += 8)
		rf_put_le64(s + i, v * 3 + 11 + (uint64_t)i / 8 * 0x100000000ull);
}

static void test_continues(void **state)
{
	uint8_t a0[512], a[512], b[512];
	int i;

	fill_counter(a0, 10);
	fill_counter(a, 11);
	fill_counter(b, 12);
	assert_int_equal(rf_detect_continues(a0, a, b), 64);
	fill_counter(b, 12 + 128);
	assert_true(rf_detect_continues(a0, a, b) < 56);
	/* the same data repeated runs on; random data does not */
	memset(a0, 0x5a, 512);
	memset(a, 0x5a, 512);
	memset(b, 0x5a, 512);
	assert_int_equal(rf_detect_continues(a0, a, b), 64);
	srandom(7);
	for (i = 0; i < 512; i++)
		a0[i] = (uint8_t)random(), a[i] = (uint8_t)random(), b[i] = (uint8_t)random();
	assert_true(rf_detect_continues(a0, a, b) < 8);
	/* lines of 64 bytes: the next sector keeps their ends, or breaks */
	for (i = 0; i < 512; i++)
		a0[i] = a[i] = b[i] = i % 64 == 63 ? '\n' : 'A' + i % 26;
	assert_int_equal(rf_detect_continues(a0, a, b), 64);
	memmove(b, b + 5, 507);
	memset(b + 507, 'x', 5);
	assert_int_equal(rf_detect_continues(a0, a, b), 0);
}

static void test_signatures(void **state)
{
	uint8_t *b = calloc(1, 70 * 1024);

	assert_non_null(b);
	assert_null(rf_detect_signature(b, 70 * 1024));
	b[1024 + 56] = 0x53;
	b[1024 + 57] = 0xef;
	assert_string_equal(rf_detect_signature(b, 4096), "ext2");
	b[1024 + 96] = 0x40;            /* extents */
	assert_string_equal(rf_detect_signature(b, 4096), "ext4");
	memset(b, 0, 70 * 1024);
	memcpy(b, "XFSB", 4);
	assert_string_equal(rf_detect_signature(b, 4096), "xfs");
	memset(b, 0, 70 * 1024);
	memcpy(b, "LUKS\xba\xbe", 6);
	assert_string_equal(rf_detect_signature(b, 4096), "luks");
	memset(b, 0, 70 * 1024);
	memcpy(b + 3, "NTFS    ", 8);
	assert_string_equal(rf_detect_signature(b, 4096), "ntfs");
	memset(b, 0, 70 * 1024);
	memcpy(b + 512, "LABELONE", 8);
	assert_string_equal(rf_detect_signature(b, 4096), "lvm");
	memset(b, 0, 70 * 1024);
	memcpy(b + 512, "EFI PART", 8);
	assert_string_equal(rf_detect_signature(b, 4096), "gpt");
	memset(b, 0, 70 * 1024);
	b[510] = 0x55;
	b[511] = 0xaa;
	assert_null(rf_detect_signature(b, 4096));     /* no partition in it */
	b[446 + 4] = 0x83;
	rf_put_le32(b + 446 + 8, 2048);
	rf_put_le32(b + 446 + 12, 4096);
	assert_string_equal(rf_detect_signature(b, 4096), "mbr");
	memset(b, 0, 70 * 1024);
	memcpy(b + 65536 + 64, "_BHRfS_M", 8);
	assert_null(rf_detect_signature(b, 4096));      /* needs 68 KiB */
	assert_string_equal(rf_detect_signature(b, 70 * 1024), "btrfs");
	free(b);
}

/* ---------------------------------------------------------------- arrays */

struct arr {
	char dir[256];
	char path[RF_MAX_MEMBERS][300];
	const char *arg[RF_MAX_MEMBERS];
	int perm[RF_MAX_MEMBERS];       /* argument k is member role perm[k] */
};

/* Lay out g (dev_sectors filled in from MEMBER and off) with its counter
 * data, parity computed, into n member files, argument k holding role
 * perm[k]; kind: 0 counter data, 1 random, 2 zeros. */
static void make_array(struct arr *A, struct rf_geom *g, uint64_t off, int kind, unsigned seed)
{
	int n = g->raid_disks, k, i, fd;
	uint8_t **m = calloc((size_t)n, sizeof(*m));
	uint64_t s, cs = g->chunk_sectors ? g->chunk_sectors : 8;
	char err[128], dir[sizeof(A->dir)];

	assert_non_null(m);
	g->dev_sectors = (MEMBER - off) / 512 / cs * cs;
	assert_int_equal(rf_geom_init(g, err, sizeof(err)), 0);
	for (i = 0; i < n; i++) {
		m[i] = calloc(1, MEMBER);
		assert_non_null(m[i]);
	}
	srandom(seed);
	for (k = 0; k < n; k++)
		A->perm[k] = k;
	for (k = n - 1; k > 0; k--) {
		int j = (int)(random() % (k + 1)), t = A->perm[k];

		A->perm[k] = A->perm[j];
		A->perm[j] = t;
	}
	if (kind == 1) {
		for (i = 0; i < n; i++)
			for (s = 0; s < MEMBER; s++)
				m[i][s] = (uint8_t)random();
	} else if (kind == 0) {
		for (s = 0; s < g->array_sectors; s++) {
			uint64_t addrs[RF_MAX_MEMBERS * 4];
			int devs[RF_MAX_MEMBERS * 4], nc = 1;

			if (g->level == 0) {
				rf_r0_map(g, s, &devs[0], &addrs[0]);
			} else if (g->level == 1 || g->level == 10) {
				nc = rf_mirror_map(g, s, devs, addrs);
			} else {
				struct rf_r5_map mp;

				rf_r5_map_sector(g, s, &mp);
				devs[0] = mp.dd_idx;
				addrs[0] = mp.dev_sector;
			}
			for (i = 0; i < nc; i++)
				fill_counter(m[devs[i]] + off + addrs[i] * 512, s);
		}
		if (g->level >= 4 && g->level <= 6) {
			static uint8_t zero[512] __attribute__((aligned(64)));

			for (s = 0; s < g->dev_sectors; s++) {
				struct rf_r5_row r;
				char *bufs[RF_MAX_MEMBERS];
				void *blocks[RF_MAX_MEMBERS + 2], *src[RF_MAX_MEMBERS];
				int nd, j = 0;

				rf_r5_row(g, s / g->chunk_sectors, &r);
				for (i = 0; i < n; i++)
					bufs[i] = (char *)m[i] + off + s * 512;
				if (g->level == 6) {
					nd = rf_r6_blocks(&r, g->data_disks, bufs, 0, zero, blocks);
					rf_pq_gen(nd, 512, blocks, blocks[nd], blocks[nd + 1]);
					continue;
				}
				for (i = 0; i < g->data_disks; i++)
					src[j++] = bufs[r.data_member[i]];
				rf_xor_gen(j, 512, src, bufs[r.pd_idx]);
			}
		}
	}
	memcpy(dir, A->dir, sizeof(dir));
	for (k = 0; k < n; k++) {
		snprintf(A->path[k], sizeof(A->path[k]), "%s/m%d", dir, k);
		fd = open(A->path[k], O_WRONLY | O_CREAT | O_TRUNC, 0600);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, m[A->perm[k]], MEMBER), (ssize_t)MEMBER);
		close(fd);
		A->arg[k] = A->path[k];
	}
	for (i = 0; i < n; i++)
		free(m[i]);
	free(m);
}

/* Detect, and check the best candidate is g at off in the right order
 * (roles of missing members aside). */
static void expect(struct arr *A, const struct rf_geom *g, uint64_t off, int n)
{
	struct rf_detect_opts o = { .level = -1, .max_offset = 4u << 20 };
	struct rf_detect_result *r = malloc(sizeof(*r));
	const struct rf_detect_cand *c;
	char err[512];
	int k;

	assert_non_null(r);
	assert_int_equal(rf_detect(A->arg, n, &o, r, err, sizeof(err)), 0);
	if (!r->confident || !r->ncand)
		rf_detect_print(stderr, r);
	assert_true(r->confident);
	c = &r->cand[0];
	assert_int_equal(c->g.level, g->level);
	assert_int_equal(c->g.layout, g->layout);
	assert_int_equal(c->g.chunk_sectors, g->chunk_sectors);
	assert_int_equal(c->data_offset, off);
	for (k = 0; k < n; k++)
		if (A->arg[k])
			assert_int_equal(c->role[A->perm[k]], k);
	free(r);
}

static void weak(struct arr *A, int n, int level)
{
	struct rf_detect_opts o = { .level = level, .max_offset = 4u << 20 };
	struct rf_detect_result *r = malloc(sizeof(*r));
	char err[512];

	assert_non_null(r);
	assert_int_equal(rf_detect(A->arg, n, &o, r, err, sizeof(err)), 0);
	assert_false(r->confident);
	assert_non_null(strstr(r->verdict, "not confident") ? r->verdict : strstr(r->verdict, "too weak"));
	free(r);
}

static int setup(void **state)
{
	struct arr *A = calloc(1, sizeof(*A));

	if (!A || testdir_make(A->dir, sizeof(A->dir), "detect"))
		return -1;
	*state = A;
	return 0;
}

static int teardown(void **state)
{
	struct arr *A = *state;

	testdir_remove(A->dir);
	free(A);
	return 0;
}

static void one(void **state, int level, int layout, int n, uint32_t chunk_kib, uint64_t off, unsigned seed)
{
	struct arr *A = *state;
	struct rf_geom g = { .level = level, .layout = layout, .raid_disks = n, .chunk_sectors = chunk_kib * 2 };

	make_array(A, &g, off, 0, seed);
	expect(A, &g, off, n);
}

static void test_raid5(void **state)
{
	one(state, 5, RF_ALGO_LEFT_SYMMETRIC, 4, 64, 1 << 20, 1);
	one(state, 5, RF_ALGO_RIGHT_ASYMMETRIC, 3, 16, 0, 2);
	one(state, 5, RF_ALGO_LEFT_ASYMMETRIC, 5, 128, 2 << 20, 3);
	one(state, 5, RF_ALGO_RIGHT_SYMMETRIC, 7, 32, 1 << 20, 14);   /* orders along member cycles */
	/* (parity-first is raid4 with the parity member first: found as raid4) */
}

static void test_raid6_raid0_raid10(void **state)
{
	one(state, 6, RF_ALGO_LEFT_SYMMETRIC, 5, 64, 1 << 20, 4);
	one(state, 6, RF_ALGO_ROTATING_N_CONTINUE, 4, 32, 1 << 20, 5);
	one(state, 0, 0, 3, 8, 1 << 20, 6);
	one(state, 10, 0x201, 4, 64, 1 << 20, 7);       /* far 2 */
}

static void test_missing(void **state)
{
	struct arr *A = *state;
	struct rf_geom g = { .level = 5, .layout = RF_ALGO_LEFT_ASYMMETRIC, .raid_disks = 4, .chunk_sectors = 64 };

	make_array(A, &g, 1 << 20, 0, 8);
	A->arg[2] = NULL;
	expect(A, &g, 1 << 20, 4);
	g = (struct rf_geom){ .level = 6, .layout = RF_ALGO_LEFT_SYMMETRIC, .raid_disks = 5, .chunk_sectors = 128 };
	make_array(A, &g, 1 << 20, 0, 9);
	A->arg[0] = NULL;
	A->arg[3] = NULL;
	expect(A, &g, 1 << 20, 5);
}

static void test_negative(void **state)
{
	struct arr *A = *state, B;
	struct rf_geom g = { .level = 5, .layout = RF_ALGO_LEFT_SYMMETRIC, .raid_disks = 4, .chunk_sectors = 128 };

	make_array(A, &g, 1 << 20, 1, 10);              /* random */
	weak(A, 4, -1);
	make_array(A, &g, 1 << 20, 2, 11);              /* zeros */
	weak(A, 4, -1);
	/* two members of one array, two of another (other layout and chunk) */
	make_array(A, &g, 1 << 20, 0, 12);
	B = *A;
	assert_true(strlen(A->dir) + 3 < sizeof(B.dir));
	strcat(B.dir, "/b");
	assert_int_equal(mkdir(B.dir, 0700), 0);
	g = (struct rf_geom){ .level = 5, .layout = RF_ALGO_RIGHT_SYMMETRIC, .raid_disks = 4, .chunk_sectors = 32 };
	make_array(&B, &g, 1 << 20, 0, 13);
	A->arg[2] = B.path[2];
	A->arg[3] = B.path[3];
	weak(A, 4, -1);
	weak(A, 4, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_continues),
		cmocka_unit_test(test_signatures),
		cmocka_unit_test_setup_teardown(test_raid5, setup, teardown),
		cmocka_unit_test_setup_teardown(test_raid6_raid0_raid10, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_negative, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
