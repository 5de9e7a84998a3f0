/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_super.c - libFuzzer harness for md superblock parsing and printing.
 *
 * Input: byte 0 picks the kind (bits 0-1: 1.2, 1.1, 1.0, 0.90) and whether
 * to repair the checksum first (bit 2), so the fuzzer gets past the
 * checksum and into the field checks; bytes 1-4 are the member size in
 * sectors (little-endian, 0 = 64 MiB); the rest is the superblock, zero
 * padded to 4 KiB.  Whatever parses is printed (examine) and must keep the
 * promises struct rf_sb makes; anything else must be refused with a
 * message naming the member.  Any crash, sanitizer report or abort() is a
 * finding.
 *
 *   make fuzz                      (FUZZ_SECONDS per harness, default 30)
 *   build-fuzz/fuzz_super DIR...   (libFuzzer options as usual)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raidfuse/super.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum rf_sb_kind kinds[] = { RF_SB_12, RF_SB_11, RF_SB_10, RF_SB_090 };
	static uint8_t buf[RF_SB_BYTES];
	static struct rf_sb sb;
	enum rf_sb_kind k;
	uint64_t sectors;
	char err[1024];
	FILE *out;
	int r;

	if (size < 5)
		return 0;
	k = kinds[data[0] & 3];
	sectors = (uint64_t)data[1] | (uint64_t)data[2] << 8 | (uint64_t)data[3] << 16 |
		  (uint64_t)data[4] << 24;
	if (!sectors)
		sectors = 131072;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, data + 5, size - 5 < sizeof(buf) ? size - 5 : sizeof(buf));
	if (data[0] & 4) {
		uint32_t c = rf_sb_csum(buf, k);

		if (k == RF_SB_090)
			memcpy(buf + 38 * 4, &c, 4);
		else
			for (int i = 0; i < 4; i++)
				buf[216 + i] = (uint8_t)(c >> (8 * i));
	}
	err[0] = '\0';
	r = rf_sb_parse(buf, k, sectors, "/fuzz/member", &sb, err, sizeof(err));
	if (r == -ENOENT)
		return 0;
	if (r) {
		check(r == -EINVAL);
		check(!strncmp(err, "/fuzz/member: ", 14));
		return 0;
	}
	check(sb.kind == k);
	check(sb.data_offset + sb.data_size <= sb.member_sectors);
	check(sb.dev_number < sb.max_dev && sb.max_dev <= RF_SB_MAX_DEV);
	/* A shrinking reshape keeps the old geometry's roles until it ends. */
	check(sb.role < sb.raid_disks || (sb.reshape && sb.delta_disks < 0 && (int64_t)sb.role < (int64_t)sb.raid_disks - sb.delta_disks) ||
	      sb.role >= RF_SB_ROLE_JOURNAL);
	check(sb.level == 1 || (sb.chunk_sectors >= 8 && !(sb.chunk_sectors & (sb.chunk_sectors - 1))));
	check(sb.level == 0 || (sb.size && sb.size <= sb.data_size));
	out = fopen("/dev/null", "w");
	if (out) {
		rf_sb_examine(out, "/fuzz/member", &sb);
		fclose(out);
	}
	return 0;
}
