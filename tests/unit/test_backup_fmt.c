/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_backup_fmt.c - mdadm's backup file header (md/backup_fmt.c): the
 * bytes at mdadm's offsets, mdadm's checksum (a known value: its sum
 * takes the magic's first byte, 'm', at every step, so every header mdadm
 * writes carries 0x24924915 in both), encode/decode round trips of both
 * versions, bad input refused with a message naming the file, and the
 * sections a header holds in array order (mdadm's two alternating parts,
 * either holding the rows that come first; a header mdadm 4.2 wrote).
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

/* The first 80 bytes of the header mdadm 4.2 wrote for a raid5 of 3 grown
 * to 4 in place (512K chunks: its critical section, 6144 sectors, in one
 * part; devstart2 says where a second part would go, the magic says there
 * is none).  The rest of the 512 bytes are zeros. */
static const uint8_t mdadm_hdr[80] = {
	0x6d, 0x64, 0x5f, 0x62, 0x61, 0x63, 0x6b, 0x75, 0x70, 0x5f, 0x64, 0x61, 0x74, 0x61, 0x2d, 0x31,
	0x2c, 0xf3, 0x74, 0xe5, 0xaf, 0x09, 0x15, 0x0f, 0xf2, 0xe4, 0x86, 0xd6, 0x10, 0xb1, 0x1a, 0xe5,
	0xbd, 0xc9, 0x16, 0x6b, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x15, 0x49, 0x92, 0x24, 0x00, 0x00, 0x00, 0x00, 0x00, 0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

static void test_sections(void **state)
{
	struct rf_backup_sb two = one, got;
	struct rf_backup_section s[2];
	uint8_t buf[RF_BACKUP_SB_BYTES];
	char err[256];

	(void)state;
	/* mdadm's own: one part, its data right after the header */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, mdadm_hdr, sizeof(mdadm_hdr));
	assert_int_equal(rf_backup_decode(buf, "md.backup", &got, err, sizeof(err)), 0);
	assert_int_equal(got.version, 1);
	assert_int_equal(rf_backup_sections(&got, s), 1);
	assert_int_equal(s[0].devstart, 8);
	assert_int_equal(s[0].arraystart, 0);
	assert_int_equal(s[0].length, 6144);

	/* version 1: whatever the second section's fields say, one */
	two.devstart2 = 1024;
	two.arraystart2 = 3072;
	two.length2 = 512;
	assert_int_equal(rf_backup_sections(&two, s), 1);
	assert_int_equal(s[0].arraystart, 2048);

	/* version 2, part 1 after part 0 */
	two.version = 2;
	assert_int_equal(rf_backup_sections(&two, s), 2);
	assert_int_equal(s[0].devstart, 8);
	assert_int_equal(s[0].arraystart, 2048);
	assert_int_equal(s[0].length, 1024);
	assert_int_equal(s[1].devstart, 8 + 1024);
	assert_int_equal(s[1].arraystart, 3072);
	assert_int_equal(s[1].length, 512);

	/* part 0 refilled with the rows after part 1's: array order */
	two.arraystart = 3584;
	two.arraystart2 = 2048;
	two.length2 = 1536;
	assert_int_equal(rf_backup_sections(&two, s), 2);
	assert_int_equal(s[0].devstart, 8 + 1024);
	assert_int_equal(s[0].arraystart, 2048);
	assert_int_equal(s[0].length, 1536);
	assert_int_equal(s[1].devstart, 8);
	assert_int_equal(s[1].arraystart, 3584);
	assert_int_equal(s[1].length, 1024);

	/* part 0 forgotten (length 0): part 1 alone, at its own data */
	two.length = 0;
	assert_int_equal(rf_backup_sections(&two, s), 1);
	assert_int_equal(s[0].devstart, 8 + 1024);
	assert_int_equal(s[0].arraystart, 2048);
	two.length2 = 0;
	assert_int_equal(rf_backup_sections(&two, s), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_sections),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
