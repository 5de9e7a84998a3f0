/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_overlay.c - libFuzzer harness for the overlay's own files, as
 * rf_ovl_open() reads them from DIR: the .base record of what the overlay
 * was made over, and a member's .map of copied blocks.
 *
 * Input: byte 0 picks the file (bit 0: 0 .base, 1 .map) and for a .base
 * whether to repair its checksum first (bit 1: its last 4 bytes), so the
 * fuzzer gets past it to the fields.  For a .map,
 * bytes 1-4 are the member's size in bytes (little-endian, modulo 64 MiB)
 * and the rest is the file; for a .base, the rest is the file.  A .base
 * that parses must encode to as many bytes and parse back to the same
 * record (its reserved fields are not kept); a .map that parses must count
 * exactly the bits it set inside the member.  Anything else must be
 * refused with a message naming the file, its result untouched.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "raidfuse/overlay.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

static int base(const uint8_t *data, size_t size, bool fix)
{
	static struct rf_ovl_base b, again;
	static uint8_t out[64 * 1024], in[64 * 1024];
	char err[512];
	size_t len;
	int r;

	if (fix && size >= 4 && size <= sizeof(in)) {
		uint32_t c = htole32(rf_ovl_crc32c(data, size - 4));

		memcpy(in, data, size - 4);
		memcpy(in + size - 4, &c, 4);
		data = in;
	}
	err[0] = '\0';
	r = rf_ovl_base_parse(data, size, "/fuzz/x.base", &b, err, sizeof(err));
	if (r) {
		check(r == -EINVAL && !strncmp(err, "/fuzz/x.base", 12));
		return 0;
	}
	check(b.n <= RF_SB_MAX_DEV && size == 44 + (size_t)b.n * 32);
	len = rf_ovl_base_build(&b, out, sizeof(out));
	check(len == size);
	check(rf_ovl_base_parse(out, len, "/fuzz/x.base", &again, err, sizeof(err)) == 0);
	check(!memcmp(b.uuid, again.uuid, 16) && b.n == again.n &&
	      !memcmp(b.dev, again.dev, b.n * sizeof(b.dev[0])));
	return 0;
}

static int map(const uint8_t *data, size_t size)
{
	static uint8_t bits[(64u << 20) / RF_OVL_BLOCK / 8 + 1];
	uint64_t member, nblocks, n = 0, copied = UINT64_MAX;
	char err[512];
	int r;

	if (size < 4)
		return 0;
	member = ((uint64_t)data[0] | (uint64_t)data[1] << 8 | (uint64_t)data[2] << 16 | (uint64_t)data[3] << 24) %
		 (64u << 20);
	nblocks = (member + RF_OVL_BLOCK - 1) / RF_OVL_BLOCK;
	memset(bits, 0, (nblocks + 7) / 8);
	err[0] = '\0';
	r = rf_ovl_map_parse(data + 4, size - 4, member, bits, &copied, "/fuzz/x.map", "/fuzz/member", err,
			     sizeof(err));
	if (r) {
		check(r == -EINVAL && strstr(err, "/fuzz/x.map"));
		check(copied == UINT64_MAX);
		return 0;
	}
	check(size - 4 >= 4096 + (nblocks + 7) / 8);
	for (uint64_t b = 0; b < nblocks; b++)
		n += bits[b / 8] >> (b % 8) & 1;
	check(n == copied && n <= nblocks);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	return data[0] & 1 ? map(data + 1, size - 1) : base(data + 1, size - 1, data[0] & 2);
}
