/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_examine.c - `raidfuse examine` (examine.c): what it refuses to
 * read, and what it prints of a member raidfuse itself wrote, as text
 * (mdadm --examine's) and as JSON.
 *
 * The texts of kernel-made members against mdadm's own output are
 * test_super's; this file checks the fields follow the superblock: role,
 * level, clean or active, data offset, the array state map.
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

#include "fixture.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/super.h"

#define N 3
#define MEMBER_SECTORS 32768ULL         /* 16 MiB */

static char paths[N][FX_PATH];

/* What examine prints for member i of a fresh raid5 (clean as given), in a
 * static buffer (JSON or mdadm's text). */
static const char *printed(bool clean, int i, bool json)
{
	static char out[8192];
	struct rf_sb_new n = { .level = 5, .layout = 2, .chunk_sectors = 128, .raid_disks = N,
			       .data_offset = 2048, .size = (MEMBER_SECTORS - 2048) / 128 * 128, .clean = clean };
	struct rf_sb sb;
	char err[512];
	FILE *f = fmemopen(out, sizeof(out) - 1, "w");
	int fd;

	snprintf(n.name, sizeof(n.name), "exam");
	fx_md_members(&n, "m", MEMBER_SECTORS, paths);
	fd = open(paths[i], O_RDONLY);
	assert_true(fd >= 0);
	if (rf_sb_read(fd, paths[i], &sb, err, sizeof(err)))
		fail_msg("%s", err);
	close(fd);
	assert_non_null(f);
	if (json)
		assert_int_equal(rf_sb_examine_json(f, paths[i], &sb), 0);
	else
		rf_sb_examine(f, paths[i], &sb);
	assert_int_equal(fclose(f), 0);
	return out;
}

static void expect(const char *out, const char *want)
{
	if (!strstr(out, want))
		fail_msg("'%s' not in:\n%s", want, out);
}

/* Each of the NULL-ended want in out. */
static void expect_all(const char *out, const char *const *want)
{
	for (; *want; want++)
		expect(out, *want);
}

/* A directory, a FIFO and a character device cannot hold a superblock:
 * refused with the reason and the path; a file is read. */
static void test_refuse(void **state)
{
	char err[512], p[FX_PATH];
	int fd;

	fd = open(fx_dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(rf_examine_refuse(fd, fx_dir, err, sizeof(err)), -EISDIR);
	expect(err, "is a directory");
	expect(err, fx_dir);
	close(fd);

	snprintf(p, sizeof(p), "%s/fifo", fx_dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	fd = open(p, O_RDONLY | O_NONBLOCK);
	assert_true(fd >= 0);
	assert_int_equal(rf_examine_refuse(fd, p, err, sizeof(err)), -EINVAL);
	expect(err, "not a regular file or block device");
	close(fd);

	fd = open("/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(rf_examine_refuse(fd, "/dev/null", err, sizeof(err)), -EINVAL);
	close(fd);

	snprintf(p, sizeof(p), "%s/file.img", fx_dir);
	fd = fx_file_open(p, 4096);
	assert_int_equal(rf_examine_refuse(fd, p, err, sizeof(err)), 0);
	close(fd);
}

/* mdadm's words for what the superblock says. */
static void test_text(void **state)
{
	static const char *const clean1[] = {
		"        Version : 1.2\n", "     Raid Level : raid5\n", "   Raid Devices : 3\n",
		"    Data Offset : 2048 sectors\n", "          State : clean\n",
		"   Device Role : Active device 1\n", "   Array State : AAA", NULL,
	};
	static const char *const active2[] = {
		"          State : active\n", "   Device Role : Active device 2\n", NULL,
	};

	expect_all(printed(true, 1, false), clean1);
	expect_all(printed(false, 2, false), active2);
}

/* The same as JSON, with md's field names. */
static void test_json(void **state)
{
	static const char *const clean0[] = {
		"\"metadata_version\":\"1.2\"", "\"level\":\"raid5\"", "\"raid_disks\":3",
		"\"chunk_size\":65536", "\"array_state\":\"clean\"", "\"resync_offset\":null",
		"\"data_offset\":2048", "\"dev_role\":0", "\"device_map\":\"AAA\"", NULL,
	};
	static const char *const active2[] = {
		"\"array_state\":\"active\"", "\"resync_offset\":0", "\"dev_role\":2", NULL,
	};

	expect_all(printed(true, 0, true), clean0);
	expect_all(printed(false, 2, true), active2);
}

/* examine -X: set bits counted within nbits only (a tail byte's high bits
 * are not bits of the bitmap), and mdadm's text for chunk sizes, state,
 * write-behind and a 0.90 uuid (host-order words). */
static void test_bitmap_text(void **state)
{
	uint8_t bits[4] = { 0xff, 0x01, 0x80, 0xff };
	struct rf_bitmap_sb bsb = { .version = 4, .events = 7, .events_cleared = 3, .sync_size = 131072,
				    .chunk_bytes = 4096, .daemon_sleep = 5 };
	struct rf_sb sb = { .kind = RF_SB_12 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	assert_int_equal(rf_bitmap_count_dirty(bits, 0), 0);
	assert_int_equal(rf_bitmap_count_dirty(bits, 8), 8);
	assert_int_equal(rf_bitmap_count_dirty(bits, 9), 9);
	assert_int_equal(rf_bitmap_count_dirty(bits, 23), 9);          /* bit 23 is the 0x80 */
	assert_int_equal(rf_bitmap_count_dirty(bits, 24), 10);
	assert_int_equal(rf_bitmap_count_dirty(bits, 28), 14);
	for (int i = 0; i < 16; i++)
		bsb.uuid[i] = (uint8_t)(0x10 + i);
	f = open_memstream(&buf, &len);
	rf_bitmap_examine(f, "m.img", &sb, &bsb, 32, 3);
	bsb.chunk_bytes = 64u << 20;
	bsb.state = RF_BITMAP_STALE;
	bsb.write_behind = 256;
	sb.kind = RF_SB_090;
	rf_bitmap_examine(f, "n.img", &sb, &bsb, 1, 0);
	fclose(f);
	assert_non_null(strstr(buf, "        Filename : m.img\n           Magic : 6d746962\n         Version : 4\n"
				    "            UUID : 10111213:14151617:18191a1b:1c1d1e1f\n          Events : 7\n"
				    "  Events Cleared : 3\n           State : OK\n       Chunksize : 4 KB\n"
				    "          Daemon : 5s flush period\n      Write Mode : Normal\n"
				    "       Sync Size : 65536 (64.00 MiB 67.11 MB)\n"
				    "          Bitmap : 32 bits (chunks), 3 dirty (9.4%)\n"));
	assert_non_null(strstr(buf, "            UUID : 13121110:17161514:1b1a1918:1f1e1d1c\n"));
	assert_non_null(strstr(buf, "           State : Out of date\n       Chunksize : 64 MB\n"));
	assert_non_null(strstr(buf, "      Write Mode : Allow write behind, max 256\n"));
	assert_non_null(strstr(buf, "          Bitmap : 1 bits (chunks), 0 dirty (0.0%)\n"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refuse),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_bitmap_text),
	};

	return fx_run_tests("examine", tests);
}
