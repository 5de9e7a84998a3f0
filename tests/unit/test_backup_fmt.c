/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_backup_fmt.c - mdadm's backup file header (md/backup_fmt.c): the
 * bytes at mdadm's offsets, mdadm's checksum (a known value: its sum
 * takes the magic's first byte, 'm', at every step, so every header mdadm
 * writes carries 0x24924915 in both), encode/decode round trips of both
 * versions, and bad input refused with a message naming the file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "raidfuse/backup.h"
#include "raidfuse/le.h"

static const struct rf_backup_sb one = {
	.version = 1,
	.uuid = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 },
	.mtime = 1765000000,
	.devstart = RF_BACKUP_DATA_SECTOR,
	.arraystart = 2048,
	.length = 1024,
};

static void test_layout(void **state)
{
	uint8_t buf[RF_BACKUP_SB_BYTES];

	(void)state;
	rf_backup_encode(&one, buf);
	assert_memory_equal(buf, "md_backup_data-1", 16);
	assert_memory_equal(buf + 16, one.uuid, 16);
	assert_int_equal(rf_get_le64(buf + 32), one.mtime);
	assert_int_equal(rf_get_le64(buf + 40), 8);
	assert_int_equal(rf_get_le64(buf + 48), 2048);
	assert_int_equal(rf_get_le64(buf + 56), 1024);
	/* mdadm's bsb_csum over 64 bytes starting with 'm' */
	assert_int_equal(rf_get_le32(buf + 64), 0x24924915u);
	/* version 1: nothing of a second section, no second checksum */
	for (int i = 68; i < RF_BACKUP_SB_BYTES; i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(rf_backup_csum(buf, 64), 0x24924915u);
	assert_int_equal(rf_backup_csum(buf, 96), 0x24924915u);
}

static void test_round_trip(void **state)
{
	struct rf_backup_sb two = one, got;
	uint8_t buf[RF_BACKUP_SB_BYTES];
	char err[256];
	uint64_t lo, hi;

	(void)state;
	rf_backup_encode(&one, buf);
	assert_int_equal(rf_backup_decode(buf, "b.img", &got, err, sizeof(err)), 0);
	assert_memory_equal(&got, &one, sizeof(got));
	rf_backup_span(&got, &lo, &hi);
	assert_int_equal(lo, 2048);
	assert_int_equal(hi, 3072);

	two.version = 2;
	two.devstart2 = 1024;
	two.arraystart2 = 3072;
	two.length2 = 512;
	rf_backup_encode(&two, buf);
	assert_memory_equal(buf, "md_backup_data-2", 16);
	assert_int_equal(rf_get_le32(buf + 96), 0x24924915u);
	assert_int_equal(rf_backup_decode(buf, "b.img", &got, err, sizeof(err)), 0);
	assert_memory_equal(&got, &two, sizeof(got));
	rf_backup_span(&got, &lo, &hi);
	assert_int_equal(lo, 2048);
	assert_int_equal(hi, 3584);
}

static void test_bad(void **state)
{
	struct rf_backup_sb two = one, got;
	uint8_t buf[RF_BACKUP_SB_BYTES];
	char err[256];

	(void)state;
	memset(buf, 0, sizeof(buf));
	assert_int_equal(rf_backup_decode(buf, "b.img", &got, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "b.img: not an mdadm backup file"));

	rf_backup_encode(&one, buf);
	buf[64] ^= 1;
	assert_int_equal(rf_backup_decode(buf, "b.img", &got, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "b.img: backup header checksum"));

	two.version = 2;
	rf_backup_encode(&two, buf);
	buf[96] ^= 1;
	assert_int_equal(rf_backup_decode(buf, "b.img", &got, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "second checksum"));

	/* a field past 2^63 (checksums still hold: they see only byte 0) */
	rf_backup_encode(&one, buf);
	rf_put_le64(buf + 56, UINT64_MAX);
	assert_int_equal(rf_backup_decode(buf, "b.img", &got, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "past 2^63"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
