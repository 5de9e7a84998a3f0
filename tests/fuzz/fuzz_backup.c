/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_backup.c - libFuzzer harness for mdadm's backup file header as a
 * reshape's assembly reads it (md/backup_fmt.c's rf_backup_decode).
 *
 * Input: the first 512 bytes of a backup file (zeros past the input).
 * Byte 0's bit 0 asks the harness to repair the checksums first, so the
 * fuzzer gets past them to the fields.  A header that decodes must encode
 * back to bytes that decode to the same, with sections below 2^63 and a
 * span that holds both; anything else must be refused with a message
 * naming the file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "raidfuse/backup.h"
#include "raidfuse/le.h"

#define PATH "/fuzz/backup"

static void check(int cond)
{
	if (!cond)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t buf[RF_BACKUP_SB_BYTES], again[RF_BACKUP_SB_BYTES];
	struct rf_backup_sb b, b2;
	uint64_t lo, hi;
	char err[512];

	if (size < 1)
		return 0;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, data + 1, size - 1 < sizeof(buf) ? size - 1 : sizeof(buf));
	if (data[0] & 1) {
		rf_put_le32(buf + 64, rf_backup_csum(buf, 64));
		rf_put_le32(buf + 96, rf_backup_csum(buf, 96));
	}
	if (rf_backup_decode(buf, PATH, &b, err, sizeof(err))) {
		check(!strncmp(err, PATH ": ", sizeof(PATH ": ") - 1));
		return 0;
	}
	check(b.version == 1 || b.version == 2);
	check(b.length < 1ull << 63 && b.arraystart < 1ull << 63);
	rf_backup_span(&b, &lo, &hi);
	check(lo <= hi);
	if (b.length)
		check(lo <= b.arraystart && b.arraystart + b.length <= hi);
	if (b.version == 2 && b.length2)
		check(lo <= b.arraystart2 && b.arraystart2 + b.length2 <= hi);
	rf_backup_encode(&b, again);
	check(rf_backup_decode(again, PATH, &b2, err, sizeof(err)) == 0);
	check(!memcmp(&b, &b2, sizeof(b)));
	return 0;
}
