/* SPDX-License-Identifier: GPL-2.0-or-later */
/* detect_fs.c - what lies at the start of a volume, and whether its own
 * metadata lands where it says.
 *
 * detect.c assembles a candidate geometry and asks two things of its
 * content: what signature starts the volume (a partition table, ext2/3/4,
 * XFS, btrfs, an LVM physical volume, LUKS, NTFS), and, for the file
 * systems that keep copies of their superblock far apart (ext2/3/4 backup
 * superblocks and group descriptors, XFS's allocation group headers),
 * whether those copies are found where the primary superblock puts them.
 * A copy found at its place is strong evidence for the geometry: it lies
 * chunks and members away from the primary, so only the right member
 * order, chunk and layout bring it there.
 *
 * Invariants: every field read from the volume is bounded before it is
 * used (a block size, a group count, an offset past the volume is no
 * copy to look for); nothing here reads a member, only sectors through the
 * reader it is given.  It does NOT mount, repair or walk a file system,
 * and does not know filesystems beyond the signatures above.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "raidfuse/detect.h"
#include "raidfuse/le.h"
#include "detect_int.h"

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

#define rd32 rf_get_le32
#define rd16 rf_get_le16

/* An MBR whose four entries look like partitions (boot flag 0 or 0x80,
 * some entry in use with a start past sector 0). */
static bool mbr_ok(const uint8_t *b)
{
	bool used = false;
	int i;

	if (b[510] != 0x55 || b[511] != 0xaa)
		return false;
	for (i = 0; i < 4; i++) {
		const uint8_t *e = b + 446 + 16 * i;

		if (e[0] != 0 && e[0] != 0x80)
			return false;
		if (e[4] && rd32(e + 8) && rd32(e + 12))
			used = true;
	}
	return used;
}

const char *rf_detect_signature(const uint8_t *b, size_t len)
{
	int k;

	if (len < 4096)
		return NULL;
	if (!memcmp(b, "LUKS\xba\xbe", 6))
		return "luks";
	if (!memcmp(b, "XFSB", 4))
		return "xfs";
	if (!memcmp(b + 3, "NTFS    ", 8))
		return "ntfs";
	for (k = 0; k < 4; k++)
		if (!memcmp(b + 512 * k, "LABELONE", 8))
			return "lvm";
	if (b[1024 + 56] == 0x53 && b[1024 + 57] == 0xef) {
		uint32_t compat = rd32(b + 1024 + 92), incompat = rd32(b + 1024 + 96);

		if (incompat & (0x40 | 0x80 | 0x200))
			return "ext4";
		return compat & 0x4 ? "ext3" : "ext2";
	}
	if (!memcmp(b + 512, "EFI PART", 8))
		return "gpt";
	if (mbr_ok(b))
		return "mbr";
	if (len >= 65536 + 72 && !memcmp(b + 65536 + 64, "_BHRfS_M", 8))
		return "btrfs";
	return NULL;
}

/* The 512-byte sector holding byte off of the volume at base into s;
 * returns off's place in it, or -1. */
static int vol_byte(const struct rf_detect_reader *rd, uint64_t base, uint64_t vsec, uint64_t off, uint8_t *s)
{
	if (off / 512 >= vsec || rd->read(rd->ctx, base + off / 512, s))
		return -1;
	return (int)(off % 512);
}

/* The first block an ext4 inode's extent tree maps (depth 0), or 0. */
static uint64_t ext_first_block(const uint8_t *ino)
{
	if (!(rd32(ino + 32) & 0x80000) || rd16(ino + 40) != 0xf30a || !rd16(ino + 42) || rd16(ino + 46))
		return 0;
	return (uint64_t)rd16(ino + 58) << 32 | rd32(ino + 60);
}

/* ext2/3/4 inside group 0 and beyond: the block and inode bitmaps of
 * group 0 (their first blocks and inodes are in use), the root inode (a
 * directory) and its first block ("." is inode 2), the journal's
 * superblock.  They lie blocks to megabytes apart from the superblock:
 * across chunks and members. */
static void ext_group0(const uint8_t *sb, const uint8_t *gd0, unsigned desc, uint64_t bs, uint64_t base,
		       uint64_t vsec, const struct rf_detect_reader *rd, int *ok, int *n)
{
	uint64_t bb = rd32(gd0), ib = rd32(gd0 + 4), it = rd32(gd0 + 8), blk;
	unsigned isz = rd32(sb + 76) ? rd16(sb + 88) : 128;
	uint8_t s[512], ino[512];
	int o;

	if (desc >= 64) {
		bb |= (uint64_t)rd32(gd0 + 0x20) << 32;
		ib |= (uint64_t)rd32(gd0 + 0x24) << 32;
		it |= (uint64_t)rd32(gd0 + 0x28) << 32;
	}
	if (isz < 128 || isz > 512 || (isz & (isz - 1)))
		return;
	(*n) += 2;
	o = vol_byte(rd, base, vsec, bb * bs, s);
	*ok += o >= 0 && s[o] == 0xff;
	o = vol_byte(rd, base, vsec, ib * bs, s);
	*ok += o >= 0 && s[o] == 0xff;
	/* inode 2, the root directory */
	(*n) += 2;
	o = vol_byte(rd, base, vsec, it * bs + isz, s);
	if (o < 0 || o + isz > 512)
		return;
	memcpy(ino, s + o, isz);
	if ((rd16(ino) & 0xf000) != 0x4000)
		return;
	(*ok)++;
	blk = ext_first_block(ino);
	if (!blk)
		blk = rd32(ino + 40);   /* ext2/3: i_block[0] */
	o = vol_byte(rd, base, vsec, blk * bs, s);
	*ok += o >= 0 && rd32(s + o) == 2 && s[o + 6] == 1 && s[o + 8] == '.';
	/* inode 8, the journal */
	if (!(rd32(sb + 92) & 0x4) || rd32(sb + 0xe0) != 8)
		return;
	(*n)++;
	o = vol_byte(rd, base, vsec, it * bs + 7 * isz, s);
	if (o < 0 || o + isz > 512)
		return;
	memcpy(ino, s + o, isz);
	blk = ext_first_block(ino);
	if (!blk)
		blk = rd32(ino + 40);
	o = vol_byte(rd, base, vsec, blk * bs, s);
	*ok += o >= 0 && be32(s + o) == 0xc03b3998;
}

/* ext2/3/4: the backup superblocks (magic and uuid) and the block, inode
 * bitmap and inode table addresses of the backup group descriptors. */
static void ext_check(const uint8_t *vol, uint64_t base, uint64_t vsec, const struct rf_detect_reader *rd,
		      int *ok, int *n)
{
	static const uint32_t sparse_groups[] = { 1, 3, 5, 7, 9, 25, 27, 49, 81, 125, 243, 343, 625, 729 };
	const uint8_t *sb = vol + 1024;
	uint8_t s[512], gd0[512], gd[512];
	uint64_t bs, bpg, first, blocks, groups, sec;
	uint32_t incompat = rd32(sb + 96), rocompat = rd32(sb + 100), g;
	unsigned desc, i, k, checked = 0;

	if (rd32(sb + 24) > 6)
		return;
	bs = 1024ull << rd32(sb + 24);
	bpg = rd32(sb + 32);
	first = rd32(sb + 20);
	blocks = rd32(sb + 4);
	if (incompat & 0x80)
		blocks |= (uint64_t)rd32(sb + 0x150) << 32;
	desc = incompat & 0x80 ? rd16(sb + 0xfe) : 32;
	if (!bpg || bpg > 8 * bs || first > 1 || blocks <= first || desc < 32 || desc > 512 || (desc & (desc - 1)))
		return;
	groups = (blocks - first + bpg - 1) / bpg;
	/* the primary group descriptors: the block after the superblock's */
	sec = (first + 1) * bs / 512;
	if (sec >= vsec || rd->read(rd->ctx, base + sec, gd0))
		return;
	ext_group0(sb, gd0, desc, bs, base, vsec, rd, ok, n);
	for (i = 0; i < 64 && checked < 8; i++) {
		g = rocompat & 1 ? (i < sizeof(sparse_groups) / sizeof(sparse_groups[0]) ? sparse_groups[i] : 0)
				 : i + 1;
		if (!g || g >= groups)
			break;
		sec = (g * bpg + first) * bs / 512;
		if (sec + (bs / 512) >= vsec)
			break;
		checked++;
		(*n)++;
		if (!rd->read(rd->ctx, base + sec, s) && s[56] == 0x53 && s[57] == 0xef &&
		    !memcmp(s + 104, sb + 104, 16))
			(*ok)++;
		/* its copy of the descriptors: the addresses, not the counts
		 * (only the primary's are kept up to date) */
		(*n)++;
		if (rd->read(rd->ctx, base + sec + bs / 512, gd))
			continue;
		for (k = 0; k + 12 <= 512; k += desc)
			if (memcmp(gd + k, gd0 + k, 12))
				break;
		if (k + 12 > 512 && rd32(gd0))
			(*ok)++;
	}
}

/* XFS: every allocation group starts with a copy of the superblock. */
static void xfs_check(const uint8_t *vol, uint64_t base, uint64_t vsec, const struct rf_detect_reader *rd,
		      int *ok, int *n)
{
	uint64_t bsz = be32(vol + 4), agb = be32(vol + 84), agc = be32(vol + 88), g, sec;
	uint8_t s[512];

	if (bsz < 512 || bsz > 65536 || !agb || agc < 2)
		return;
	for (g = 1; g < agc && g <= 8; g++) {
		sec = g * agb * bsz / 512;
		if (sec >= vsec)
			break;
		(*n)++;
		if (!rd->read(rd->ctx, base + sec, s) && !memcmp(s, "XFSB", 4) && !memcmp(s + 32, vol + 32, 16))
			(*ok)++;
	}
}

/* The first partition's start, sectors (0: none). */
static uint64_t first_partition(const char *fs, const uint8_t *vol, const struct rf_detect_reader *rd, uint64_t base)
{
	uint8_t e[512];
	uint64_t lba;
	int i;

	if (!strcmp(fs, "mbr")) {
		for (i = 0; i < 4; i++)
			if (vol[446 + 16 * i + 4] && vol[446 + 16 * i + 4] != 0xee)
				return rd32(vol + 446 + 16 * i + 8);
		return 0;
	}
	lba = rf_get_le64(vol + 512 + 72);  /* the partition entries */
	if (!lba || lba > 1u << 20 || rd->read(rd->ctx, base + lba, e))
		return 0;
	return rf_get_le64(e + 32);
}

void rf_detect_volume(const struct rf_detect_reader *rd, uint64_t vsec, char *name, size_t namelen, int *ok,
		      int *n)
{
	uint8_t vol[RF_DETECT_VOL_HEAD];
	uint64_t base = 0, part;
	const char *fs;
	int depth;

	*ok = *n = 0;
	name[0] = 0;
	for (depth = 0; depth < 2; depth++) {
		/* the first 4 KiB hold every signature but btrfs's */
		if (rf_detect_read_span(rd, base, vol, 4096))
			return;
		fs = rf_detect_signature(vol, 4096);
		if (!fs && !rf_detect_read_span(rd, base + 8, vol + 4096, sizeof(vol) - 4096))
			fs = rf_detect_signature(vol, sizeof(vol));
		if (!fs)
			return;
		snprintf(name + strlen(name), namelen - strlen(name), "%s%s", depth ? "+" : "", fs);
		if (!strncmp(fs, "ext", 3))
			ext_check(vol, base, vsec - base, rd, ok, n);
		else if (!strcmp(fs, "xfs"))
			xfs_check(vol, base, vsec - base, rd, ok, n);
		if (strcmp(fs, "mbr") && strcmp(fs, "gpt"))
			return;
		part = first_partition(fs, vol, rd, base);
		if (!part || part >= vsec)
			return;
		base = part;
	}
}
