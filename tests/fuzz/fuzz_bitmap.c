/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_bitmap.c - libFuzzer harness for md's write-intent bitmap as it is
 * read from a member: the superblock that points at it, the bitmap
 * superblock (rf_bitmap_sb_parse) and its pages of bits (rf_bitmap_read),
 * both md/bitmap_fmt.c's.
 *
 * Input: byte 0 picks the superblock kind (bit 0: 1.1 rather than 1.2;
 * both keep the bitmap after the superblock) and whether to repair the
 * superblock's checksum first (bit 1), so the fuzzer gets to the bitmap;
 * bytes 1-4 are the member size in sectors (little-endian, modulo 64 MiB,
 * 0 = 64 MiB);
 * the rest is the member from its superblock on (superblock, then from
 * byte 4096 of it the bitmap where 1.x puts it), zeros past the input.
 * A bitmap that reads must keep bitmap.h's promises (chunk a power of two
 * of at least 512, its bits inside what was read and outside the data),
 * encode back to what was decoded, and the write ranges of the array's
 * geometry must lie inside the bits' sync_size.  Anything else must be
 * refused with a message naming the member.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "raidfuse/bitmap.h"
#include "raidfuse/layout.h"
#include "raidfuse/stack.h"
#include "raidfuse/super.h"

#define PATH "/fuzz/member"

static void check(int cond)
{
	if (!cond)
		abort();
}

struct region {
	const uint8_t *data;
	size_t len;
	uint64_t at, bytes;             /* where data sits on the member; its size */
};

static int mem_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	const struct region *r = ctx;
	uint64_t lo, hi;

	if (off > r->bytes || len > r->bytes - off)
		return -EIO;            /* past the member: the parser must not ask */
	memset(buf, 0, len);
	lo = off > r->at ? off : r->at;
	hi = off + len < r->at + r->len ? off + len : r->at + r->len;
	if (lo < hi)
		memcpy((uint8_t *)buf + (lo - off), r->data + (lo - r->at), hi - lo);
	return 0;
}

static int mem_pwrite(void *ctx, const void *buf, size_t len, uint64_t off)
{
	abort();                        /* reading never writes */
}

static int mem_fsync(void *ctx)
{
	abort();
}

/* Which bits a write touches is the level's (rf_bitmap_range() finds it
 * in the program's stack), so the harness sets the stack as main() does. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	rf_stack_set(&rf_stack_default);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t mem[(1 << 20) + RF_SB_BYTES];
	static struct rf_sb sb;
	enum rf_sb_kind k;
	struct rf_bitmap_sb bsb, again;
	uint8_t head[RF_BITMAP_SB_BYTES];
	uint64_t sectors, bytes, nbits, c, set = 0;
	struct region reg;
	struct rf_sb_io io;
	struct rf_geom g;
	uint8_t *bits;
	char err[1024];
	int r;

	if (size < 5)
		return 0;
	k = data[0] & 1 ? RF_SB_11 : RF_SB_12;
	sectors = (uint64_t)data[1] | (uint64_t)data[2] << 8 | (uint64_t)data[3] << 16 | (uint64_t)data[4] << 24;
	/* at most 64 MiB: a bitmap as large as a member is read whole */
	sectors %= 131072;
	if (!sectors)
		sectors = 131072;
	/* The member from its superblock on, the checksum repaired if asked. */
	size -= 5;
	if (size > sizeof(mem))
		size = sizeof(mem);
	memcpy(mem, data + 5, size);
	memset(mem + size, 0, RF_SB_BYTES);
	if (data[0] & 2) {
		uint32_t csum = rf_sb_csum(mem, k);

		for (int i = 0; i < 4; i++)
			mem[216 + i] = (uint8_t)(csum >> (8 * i));
		if (size < 220)
			size = 220;
	}
	reg = (struct region){ mem, size, rf_sb_offset(k, sectors) * 512, sectors * 512 };
	if (reg.at + RF_SB_BYTES > reg.bytes)
		return 0;
	if (rf_sb_parse(mem, k, sectors, PATH, &sb, err, sizeof(err)))
		return 0;

	/* The bitmap superblock alone, wherever the superblock says. */
	io = (struct rf_sb_io){ .pread = mem_pread, .pwrite = mem_pwrite, .fsync = mem_fsync, .ctx = &reg,
				.bytes = reg.bytes };
	r = rf_bitmap_read(&io, PATH, &sb, &bsb, &bits, err, sizeof(err));
	if (r == -ENOENT) {
		check(!sb.bitmap && !bits);
		return 0;
	}
	if (r) {
		check(!bits);
		check(r == -EINVAL || r == -EIO || r == -ENOMEM);
		check(!strncmp(err, PATH ": ", sizeof(PATH ": ") - 1));
		return 0;
	}
	check(bits != NULL);
	check(bsb.chunk_bytes >= 512 && !(bsb.chunk_bytes & (bsb.chunk_bytes - 1)));
	check(bsb.version == RF_BITMAP_VERSION || bsb.version == RF_BITMAP_VERSION_HOST);
	check(!memcmp(bsb.uuid, sb.uuid, 16));
	bytes = rf_bitmap_bytes(bsb.sync_size, bsb.chunk_bytes);
	nbits = rf_bitmap_bits(bsb.sync_size, bsb.chunk_bytes);
	check(bytes >= RF_BITMAP_SB_BYTES + (nbits + 7) / 8);
	check(rf_bitmap_offset_bytes(&sb) + bytes <= reg.bytes);
	/* Every page of bits is inside what was read (ASan says if not). */
	for (c = 0; c < nbits; c++)
		set += bits[RF_BITMAP_SB_BYTES + c / 8] >> (c % 8) & 1;
	check(set <= nbits);
	/* The header encodes back to itself. */
	rf_bitmap_sb_build(&bsb, head);
	check(rf_bitmap_sb_parse(head, PATH, &again, err, sizeof(err)) == 0);
	check(!memcmp(&bsb, &again, sizeof(bsb)));
	free(bits);

	/* Which bits a write touches, for the array the superblock names. */
	memset(&g, 0, sizeof(g));
	g.level = (int)sb.level;
	g.layout = (int)sb.layout;
	g.raid_disks = (int)sb.raid_disks;
	g.chunk_sectors = sb.chunk_sectors;
	g.dev_sectors = sb.size;
	if (!rf_geom_init(&g, err, sizeof(err)) && g.array_sectors) {
		uint64_t total = rf_bitmap_sync_size(&g), lo, hi, off = 0, len = 0;

		/* the last 16 bytes: a write's offset and length */
		if (size >= 16) {
			memcpy(&off, mem + size - 16, 8);
			memcpy(&len, mem + size - 8, 8);
		}
		off %= g.array_sectors * 512;
		len = len % (g.array_sectors * 512 - off) + 1;
		rf_bitmap_range(&g, off, len, &lo, &hi);
		check(lo <= hi && hi <= total);
	}
	return 0;
}
