/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_create.c - `raidfuse create` (create.c): members and superblocks
 * from a config file.
 *
 * What it makes: every member at member_size with a 1.2 superblock of its
 * role, one array uuid, clean when asked, a bitmap when asked.  What it
 * refuses, writing nothing: members too small for the data, and members
 * that already hold data unless forced (a negative control beside each:
 * the same create, allowed, does write).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "raidfuse/create.h"
#include "raidfuse/super.h"

/* rf_create() of the config at path, loaded as `raidfuse create` loads it. */
static int create(const char *path, const struct rf_create_opts *o)
{
	struct rf_config cfg;
	char err[1024];
	int ret;

	if (rf_config_load(path, &cfg, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	ret = rf_create(path, &cfg, o);
	rf_config_free(&cfg);
	return ret;
}

#define MEMBER_BYTES (16u << 20)

/* fx_dir/<what>.conf: a 1.2 array of n members <what>-<i>.img (relative
 * to the config) with the extra keys given; its path in conf. */
static void write_conf(char *conf, size_t len, const char *what, int level, int n, const char *member_size,
		       const char *extra)
{
	FILE *f;
	int i;

	snprintf(conf, len, "%s/%s.conf", fx_dir, what);
	f = fopen(conf, "w");
	assert_non_null(f);
	fprintf(f, "array: {\n\tname = \"array.img\";\n\tmetadata = \"1.2\";\n\tlevel = %d;\n", level);
	fprintf(f, "\tmember_size = \"%s\";\n\t%s\n\tmembers = (", member_size, extra ? extra : "");
	for (i = 0; i < n; i++)
		fprintf(f, "%s\"%s-%d.img\"", i ? ", " : " ", what, i);
	fprintf(f, " );\n};\n");
	assert_int_equal(fclose(f), 0);
}

static void read_member_sb(const char *what, int i, struct rf_sb *sb)
{
	char p[FX_PATH], err[512];
	int fd;

	fx_member_path(p, sizeof(p), what, i);
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	if (rf_sb_read(fd, p, sb, err, sizeof(err)))
		fail_msg("%s", err);
	close(fd);
}

static bool member_exists(const char *what, int i)
{
	char p[FX_PATH];
	struct stat st;

	fx_member_path(p, sizeof(p), what, i);
	return stat(p, &st) == 0;
}

/* A raid5 and a raid6: every member made at member_size, its role in
 * its superblock, one uuid, clean as asked; with bitmap = 1 a bitmap
 * right after the superblock. */
static void test_makes_members(void **state)
{
	const struct rf_create_opts clean = { .assume_clean = true, .bitmap = -1 };
	const struct rf_create_opts dirty_bm = { .bitmap = 1 };
	char conf[FX_PATH];
	struct rf_sb sb, first;
	struct stat st;
	int i;

	write_conf(conf, sizeof(conf), "r5", 5, 3, "16M", "chunk_size = \"64K\";");
	assert_int_equal(create(conf, &clean), 0);
	for (i = 0; i < 3; i++) {
		char p[FX_PATH];

		fx_member_path(p, sizeof(p), "r5", i);
		assert_int_equal(stat(p, &st), 0);
		assert_int_equal(st.st_size, MEMBER_BYTES);
		read_member_sb("r5", i, &sb);
		if (!i)
			first = sb;
		assert_int_equal(sb.level, 5);
		assert_int_equal(sb.raid_disks, 3);
		assert_int_equal(sb.role, i);
		assert_true(sb.clean);
		assert_false(sb.bitmap);
		assert_memory_equal(sb.uuid, first.uuid, sizeof(sb.uuid));
	}

	write_conf(conf, sizeof(conf), "r6", 6, 4, "16M", "chunk_size = \"64K\";");
	assert_int_equal(create(conf, &dirty_bm), 0);
	for (i = 0; i < 4; i++) {
		read_member_sb("r6", i, &sb);
		assert_int_equal(sb.level, 6);
		assert_int_equal(sb.role, i);
		assert_false(sb.clean);         /* a resync is due */
		assert_true(sb.bitmap);
	}
}

/* Members too small for md's data offset: refused, nothing made.  The
 * same config with room enough makes them. */
static void test_refuses_small(void **state)
{
	const struct rf_create_opts o = { .bitmap = -1 };
	char conf[FX_PATH];
	int i;

	write_conf(conf, sizeof(conf), "small", 5, 3, "1M", "");
	assert_int_equal(create(conf, &o), 1);
	for (i = 0; i < 3; i++)
		assert_false(member_exists("small", i));
	write_conf(conf, sizeof(conf), "small", 5, 3, "16M", "");
	assert_int_equal(create(conf, &o), 0);
	for (i = 0; i < 3; i++)
		assert_true(member_exists("small", i));
}

/* More members "missing" than the level survives: refused before any
 * file is made (the config itself loads: with superblocks, assembly
 * decides what a config's "missing" means). */
static void test_refuses_too_many_missing(void **state)
{
	const struct rf_create_opts o = { .bitmap = -1 };
	char conf[FX_PATH];
	FILE *f;
	int i;

	snprintf(conf, sizeof(conf), "%s/miss.conf", fx_dir);
	f = fopen(conf, "w");
	assert_non_null(f);
	fprintf(f, "array: {\n\tname = \"array.img\";\n\tlevel = 5;\n\tmember_size = \"16M\";\n"
		"\tmembers = ( \"missing\", \"miss-1.img\", \"missing\", \"miss-3.img\" );\n};\n");
	assert_int_equal(fclose(f), 0);
	assert_int_equal(create(conf, &o), 1);
	for (i = 0; i < 4; i++)
		assert_false(member_exists("miss", i));
}

/* A member that holds data is left alone unless forced, and the other
 * members are not made either; forced, it is recreated. */
static void test_keeps_data_unless_forced(void **state)
{
	const struct rf_create_opts plain = { .bitmap = -1 }, force = { .force = true, .bitmap = -1 };
	char conf[FX_PATH], p[FX_PATH], data[4096], back[4096];
	struct rf_sb sb;
	int fd;

	fx_member_path(p, sizeof(p), "held", 1);
	fd = fx_file_open(p, MEMBER_BYTES);
	fx_rand_fill(data, sizeof(data));
	assert_int_equal(pwrite(fd, data, sizeof(data), 0), (ssize_t)sizeof(data));
	close(fd);
	write_conf(conf, sizeof(conf), "held", 1, 2, "16M", "");
	assert_int_equal(create(conf, &plain), 1);
	assert_false(member_exists("held", 0));
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, back, sizeof(back), 0), (ssize_t)sizeof(back));
	close(fd);
	assert_memory_equal(back, data, sizeof(data));

	assert_int_equal(create(conf, &force), 0);
	read_member_sb("held", 1, &sb);
	assert_int_equal(sb.level, 1);
	assert_int_equal(sb.role, 1);
	assert_true(member_exists("held", 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_makes_members),
		cmocka_unit_test(test_refuses_small),
		cmocka_unit_test(test_refuses_too_many_missing),
		cmocka_unit_test(test_keeps_data_unless_forced),
	};

	return fx_run_tests("create", tests);
}
