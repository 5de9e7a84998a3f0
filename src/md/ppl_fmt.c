/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ppl_fmt.c - md's Partial Parity Log: headers, entries, and their replay.
 *
 * The format is ppl.h's (md's raid5-ppl.c and md_p.h): encode and decode a
 * 4 KiB header with its checksums, find a member's newest header in its
 * area as md scans it, replay its entries (md's ppl_recover_entry), write
 * an empty header.  Everything goes through the caller's rf_ppl_io, so the
 * same code runs on real members at assembly and on fake ones in the unit
 * tests.
 *
 * Invariants: an entry is replayed only when its partial parity's
 * checksum holds and every data column it names is present; the parity it
 * writes is on the entry's parity member, which must be the row's parity
 * member of the geometry (anything else is a foreign or corrupt header and
 * is refused).  Replay is idempotent: parity = pp ^ data depends only on
 * what the members hold.
 *
 * What it does NOT do: decide when to replay (services/ppl.c: a dirty
 * array at assembly), nor log running writes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raidfuse/le.h"
#include "raidfuse/ppl.h"
#include "raidfuse/super.h"

#define OFF_SIG     512
#define OFF_GEN     520
#define OFF_COUNT   528
#define OFF_CSUM    532
#define OFF_ENTRIES 536

_Static_assert(OFF_ENTRIES + RF_PPL_MAX_ENTRIES * RF_PPL_ENTRY_SIZE <= RF_PPL_HEADER_SIZE, "entries fit");
_Static_assert(RF_PPL_MAX_ENTRIES == 148, "md's PPL_HDR_MAX_ENTRIES");

uint32_t rf_ppl_signature(const uint8_t uuid[16])
{
	return ~rf_crc32c(~0u, uuid, 16);
}

void rf_ppl_encode(struct rf_ppl_header *h, void *buf)
{
	uint8_t *b = buf;
	uint32_t i;

	memset(b, 0, RF_PPL_HEADER_SIZE);
	memset(b, 0xff, RF_PPL_HDR_RESERVED);
	rf_put_le32(b + OFF_SIG, h->signature);
	rf_put_le64(b + OFF_GEN, h->generation);
	rf_put_le32(b + OFF_COUNT, h->entries_count);
	for (i = 0; i < h->entries_count && i < RF_PPL_MAX_ENTRIES; i++) {
		uint8_t *e = b + OFF_ENTRIES + i * RF_PPL_ENTRY_SIZE;

		rf_put_le64(e, h->e[i].data_sector);
		rf_put_le32(e + 8, h->e[i].pp_size);
		rf_put_le32(e + 12, h->e[i].data_size);
		rf_put_le32(e + 16, h->e[i].parity_disk);
		rf_put_le32(e + 20, h->e[i].checksum);
	}
	h->checksum = ~rf_crc32c(~0u, b, RF_PPL_HEADER_SIZE);
	rf_put_le32(b + OFF_CSUM, h->checksum);
}

int rf_ppl_decode(const void *buf, uint32_t sig, struct rf_ppl_header *h)
{
	const uint8_t *b = buf;
	static const uint8_t zero4[4];
	uint32_t crc, i;

	/* The checksum covers the header with its own field zero. */
	crc = rf_crc32c(~0u, b, OFF_CSUM);
	crc = rf_crc32c(crc, zero4, 4);
	crc = ~rf_crc32c(crc, b + OFF_CSUM + 4, RF_PPL_HEADER_SIZE - OFF_CSUM - 4);
	h->checksum = rf_get_le32(b + OFF_CSUM);
	if (crc != h->checksum)
		return -EBADMSG;
	h->signature = rf_get_le32(b + OFF_SIG);
	if (h->signature != sig)
		return -ENOENT;
	h->generation = rf_get_le64(b + OFF_GEN);
	h->entries_count = rf_get_le32(b + OFF_COUNT);
	if (h->entries_count > RF_PPL_MAX_ENTRIES)
		return -EINVAL;
	for (i = 0; i < h->entries_count; i++) {
		const uint8_t *e = b + OFF_ENTRIES + i * RF_PPL_ENTRY_SIZE;

		h->e[i].data_sector = rf_get_le64(e);
		h->e[i].pp_size = rf_get_le32(e + 8);
		h->e[i].data_size = rf_get_le32(e + 12);
		h->e[i].parity_disk = rf_get_le32(e + 16);
		h->e[i].checksum = rf_get_le32(e + 20);
	}
	return 0;
}

/* Bytes of partial parity behind header h. */
static uint64_t pp_bytes(const struct rf_ppl_header *h)
{
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < h->entries_count; i++)
		n += h->e[i].pp_size;
	return n;
}

int rf_ppl_find_latest(const struct rf_ppl_io *io, int m, const struct rf_ppl_area *a, uint32_t sig,
		       struct rf_ppl_header *h, uint64_t *at)
{
	struct rf_ppl_header *cur = malloc(sizeof(*cur));
	uint8_t *buf = malloc(RF_PPL_HEADER_SIZE);
	uint64_t off = 0;
	bool found = false;
	int ret = 0;

	if (!cur || !buf) {
		ret = -ENOMEM;
		goto out;
	}
	/* md: headers follow each other with rising generations; the newest
	 * is the one before a bad checksum, another signature or a drop. */
	while (off + RF_PPL_HEADER_SIZE <= a->size) {
		ret = io->read(io->ctx, m, buf, RF_PPL_HEADER_SIZE, a->start + off);
		if (ret)
			goto out;
		if (rf_ppl_decode(buf, sig, cur))
			break;
		if (found && h->generation > cur->generation)
			break;
		*h = *cur;
		*at = off;
		found = true;
		if (!rf_ppl_area_multi(a->size))
			break;          /* md: one header, at the start */
		off += RF_PPL_HEADER_SIZE + pp_bytes(cur);
	}
	ret = found ? 0 : -ENOENT;
out:
	free(cur);
	free(buf);
	return ret;
}

/* Replay entry e, whose partial parity starts at byte pp_at of member
 * pm's backend (md's ppl_recover_entry, for 1.x: 512-byte sectors). */
static int recover_entry(const struct rf_ppl_io *io, const struct rf_geom *g, const struct rf_ppl_area *areas,
			 int pm, const struct rf_ppl_entry *e, uint64_t pp_at, uint8_t *acc, uint8_t *tmp,
			 struct rf_ppl_stats *st)
{
	uint64_t first = e->data_sector, last, cs = g->chunk_sectors;
	uint32_t strip, blk = 512, i;
	int dd, disks;

	if (e->pp_size / 512 < cs) {
		if (e->pp_size) {
			disks = (int)(e->data_size / e->pp_size);
			strip = e->pp_size / 512;
		} else {
			disks = g->data_disks;
			strip = e->data_size / 512 / (uint32_t)disks;
		}
		last = first + (uint64_t)(disks - 1) * cs + strip;
	} else {
		disks = g->data_disks;
		strip = (uint32_t)cs;
		last = first + e->data_size / 512;
	}
	if (disks < 1 || disks > g->data_disks || last > g->array_sectors)
		return -EINVAL;
	if (!(first & 7) && !(last & 7))
		blk = RF_PPL_BLOCK;
	for (i = 0; i < strip; i += blk / 512) {
		struct rf_r5_map pm_map;
		bool update = false;
		int ret;

		memset(acc, 0, blk);
		for (dd = 0; dd < disks; dd++) {
			uint64_t r = first + i + (uint64_t)dd * cs;
			struct rf_r5_map mp;

			if (r >= last)
				continue;
			rf_r5_map_sector(g, r, &mp);
			if (!areas[mp.dd_idx].present) {
				/* md: a column missing, no update of this block */
				update = false;
				st->skipped++;
				break;
			}
			update = true;
			ret = io->read(io->ctx, mp.dd_idx, tmp, blk, areas[mp.dd_idx].data_offset + mp.dev_sector * 512);
			if (ret)
				return ret;
			rf_xor_into(blk, tmp, acc);
		}
		if (!update)
			continue;
		if (e->pp_size) {
			ret = io->read(io->ctx, pm, tmp, blk, pp_at + (uint64_t)i * 512);
			if (ret)
				return ret;
			rf_xor_into(blk, tmp, acc);
		}
		rf_r5_map_sector(g, first + i, &pm_map);
		if (pm_map.pd_idx != (int)e->parity_disk || pm_map.pd_idx != pm)
			return -EINVAL;
		ret = io->write(io->ctx, pm, acc, blk, areas[pm].data_offset + pm_map.dev_sector * 512);
		if (ret)
			return ret;
	}
	return 0;
}

/* Replay member m's newest header. */
static int recover_member(const struct rf_ppl_io *io, const struct rf_geom *g, const struct rf_ppl_area *areas,
			  int m, uint32_t sig, struct rf_ppl_stats *st)
{
	const struct rf_ppl_area *a = &areas[m];
	struct rf_ppl_header *h = malloc(sizeof(*h));
	uint8_t *acc = aligned_alloc(64, RF_PPL_BLOCK), *tmp = aligned_alloc(64, RF_PPL_BLOCK);
	uint64_t at = 0, pp_at;
	uint32_t i;
	int ret;

	if (!h || !acc || !tmp) {
		ret = -ENOMEM;
		goto out;
	}
	ret = rf_ppl_find_latest(io, m, a, sig, h, &at);
	if (ret == -ENOENT) {
		st->mismatches++;       /* md counts a member without a valid header */
		ret = 0;
		goto out;
	}
	if (ret)
		goto out;
	st->headers++;
	pp_at = a->start + at + RF_PPL_HEADER_SIZE;
	for (i = 0; i < h->entries_count; i++) {
		const struct rf_ppl_entry *e = &h->e[i];
		uint32_t crc = ~0u, left = e->pp_size;
		uint64_t off = pp_at;

		if (pp_at + e->pp_size > a->start + a->size) {
			st->mismatches++;
			break;
		}
		while (left) {
			uint32_t n = left < RF_PPL_BLOCK ? left : RF_PPL_BLOCK;

			ret = io->read(io->ctx, m, tmp, n, off);
			if (ret)
				goto out;
			crc = rf_crc32c(crc, tmp, n);
			off += n;
			left -= n;
		}
		if (~crc != e->checksum) {
			st->mismatches++;
		} else {
			ret = recover_entry(io, g, areas, m, e, pp_at, acc, tmp, st);
			if (ret == -EINVAL) {
				st->mismatches++;
				ret = 0;
			} else if (ret) {
				goto out;
			} else {
				st->entries++;
			}
		}
		pp_at += e->pp_size;
	}
	if (io->flush)
		ret = io->flush(io->ctx, m);
out:
	free(h);
	free(acc);
	free(tmp);
	return ret;
}

int rf_ppl_recover(const struct rf_ppl_io *io, const struct rf_geom *g, const struct rf_ppl_area *areas,
		   uint32_t sig, struct rf_ppl_stats *st)
{
	int m, ret;

	memset(st, 0, sizeof(*st));
	if (g->level != 5)
		return -EINVAL;
	for (m = 0; m < g->raid_disks; m++) {
		if (!areas[m].present)
			continue;
		ret = recover_member(io, g, areas, m, sig, st);
		if (ret)
			return ret;
	}
	return 0;
}

int rf_ppl_write_empty(const struct rf_ppl_io *io, int m, const struct rf_ppl_area *a, uint32_t sig)
{
	uint8_t *buf = calloc(1, RF_PPL_SPACE_SIZE);
	struct rf_ppl_header h = { .signature = sig };
	uint64_t off;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	/* Zero the area first: old headers past the new one must not read
	 * as its successors. */
	for (off = RF_PPL_HEADER_SIZE; off < a->size && !ret; off += RF_PPL_SPACE_SIZE) {
		uint64_t n = a->size - off < RF_PPL_SPACE_SIZE ? a->size - off : RF_PPL_SPACE_SIZE;

		ret = io->write(io->ctx, m, buf, (uint32_t)n, a->start + off);
	}
	if (!ret) {
		rf_ppl_encode(&h, buf);
		ret = io->write(io->ctx, m, buf, RF_PPL_HEADER_SIZE, a->start);
	}
	if (!ret && io->flush)
		ret = io->flush(io->ctx, m);
	free(buf);
	return ret;
}

static int sb_read(void *ctx, int m, void *buf, uint32_t len, uint64_t off)
{
	const struct rf_sb_io *io = ((struct rf_ppl_sbio *)ctx)->dev[m];

	return io ? io->pread(io->ctx, buf, len, off) : -ENODEV;
}

static int sb_write(void *ctx, int m, const void *buf, uint32_t len, uint64_t off)
{
	const struct rf_sb_io *io = ((struct rf_ppl_sbio *)ctx)->dev[m];

	return io ? io->pwrite(io->ctx, buf, len, off) : -ENODEV;
}

static int sb_flush(void *ctx, int m)
{
	const struct rf_sb_io *io = ((struct rf_ppl_sbio *)ctx)->dev[m];

	return io ? io->fsync(io->ctx) : -ENODEV;
}

void rf_ppl_io_sb(struct rf_ppl_io *io, struct rf_ppl_sbio *s)
{
	io->read = sb_read;
	io->write = sb_write;
	io->flush = sb_flush;
	io->ctx = s;
}

int rf_ppl_area_of(const struct rf_sb *sb, struct rf_ppl_area *a)
{
	if (sb->kind == RF_SB_090 || !(sb->feature_map & (RF_SB_FEAT_PPL | RF_SB_FEAT_MULTI_PPL)) ||
	    sb->ppl_size <= RF_PPL_HEADER_SIZE / 512)
		return -ENOENT;
	a->present = true;
	a->start = (uint64_t)((int64_t)sb->sb_offset + sb->ppl_offset) * 512;
	a->size = (uint64_t)sb->ppl_size * 512;
	a->data_offset = sb->data_offset * 512;
	return 0;
}

/* The smallest area md takes: a header and one page of partial parity. */
#define MIN_SECTORS ((RF_PPL_HEADER_SIZE + RF_PPL_BLOCK) / 512)

int rf_ppl_place(const struct rf_sb *sb, int16_t *offset, uint16_t *size, char *why, size_t whylen)
{
	int64_t off, space, bb = sb->bblog_offset, optimal;

	if (sb->kind == RF_SB_090) {
		snprintf(why, whylen, "0.90 metadata records no partial parity log (md needs 1.x)");
		return -EINVAL;
	}
	if (sb->level != 5) {
		snprintf(why, whylen, "md keeps a partial parity log for raid5 only (this is raid%d)", sb->level);
		return -EINVAL;
	}
	if (sb->bitmap) {
		snprintf(why, whylen, "the array keeps a write-intent bitmap, and md keeps no partial parity log "
			 "beside one");
		return -EINVAL;
	}
	if (sb->feature_map & RF_SB_FEAT_JOURNAL) {
		snprintf(why, whylen, "the array keeps a journal, and md keeps no partial parity log beside one");
		return -EINVAL;
	}
	if (sb->sb_offset < sb->data_offset) {
		/* 1.1, 1.2: behind the superblock's 4 KiB, up to the bad
		 * block log or the data (mdadm). */
		off = 8;
		space = bb > 0 ? bb - off : (int64_t)(sb->data_offset - sb->sb_offset) - off;
		/* Where the bad block log sits right behind the superblock
		 * (mdadm and create do so on members of 8 GiB or less,
		 * leaving no room before it), the free space behind it: md
		 * takes any area clear of the superblock and the data. */
		if (space < MIN_SECTORS && bb > 0 && sb->bblog_size &&
		    bb + sb->bblog_size + MIN_SECTORS <= (int64_t)(sb->data_offset - sb->sb_offset)) {
			off = bb + sb->bblog_size;
			space = (int64_t)(sb->data_offset - sb->sb_offset) - off;
		}
		if (off > INT16_MAX) {
			snprintf(why, whylen, "the free space starts %lld sectors from the superblock, past what "
				 "the superblock records", (long long)off);
			return -ENOSPC;
		}
	} else {
		/* 1.0: between the data's end and the bad block log (or the
		 * superblock), as mdadm places it. */
		off = -(int64_t)(sb->sb_offset - sb->data_offset - sb->data_size);
		if (off < INT16_MIN)
			off = INT16_MIN;
		space = (bb < 0 ? bb : 0) - off;
	}
	if (space < MIN_SECTORS) {
		snprintf(why, whylen, "%lld sectors free beside the superblock; a partial parity log needs %d",
			 (long long)(space > 0 ? space : 0), MIN_SECTORS);
		return -ENOSPC;
	}
	/* mdadm: the whole 1 MiB of several logs where it fits, else one
	 * log of a header and a chunk (at least 128 KiB) of partial parity;
	 * md rounds the partial parity down to whole pages. */
	optimal = RF_PPL_HEADER_SIZE / 512 + (sb->chunk_sectors > 256 ? sb->chunk_sectors : 256);
	if (space >= RF_PPL_AREA_SECTORS)
		space = RF_PPL_AREA_SECTORS;
	else if (space > optimal)
		space = optimal;
	space = RF_PPL_HEADER_SIZE / 512 + (space - RF_PPL_HEADER_SIZE / 512) / (RF_PPL_BLOCK / 512) *
		(RF_PPL_BLOCK / 512);
	*offset = (int16_t)off;
	*size = (uint16_t)space;
	return 0;
}
