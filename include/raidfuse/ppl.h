/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ppl.h - md's Partial Parity Log for raid5: its on-disk format and its
 * recovery (md's drivers/md/raid5-ppl.c, include/uapi/linux/raid/md_p.h).
 *
 * A 1.x superblock with feature bit 1024 (PPL) or 2048 (several PPLs in a
 * row, as mdadm 4.2 makes them) keeps on every member a PPL area (ppl.offset
 * sectors from the superblock, ppl.size sectors).  Before md writes the data
 * and parity of a partial-stripe update, it writes to the area of the
 * stripe's parity member a 4 KiB header whose entries name the array
 * sectors written, followed by their partial parity: the xor of the data
 * columns the update leaves alone.  After a crash, for every entry,
 * parity = partial parity ^ the data columns written is right whether or
 * not each of those writes reached its member, so a stripe never holds a
 * parity that disagrees with data that was not being written.  An entry
 * of a full-stripe write has no partial parity (pp_size 0): its parity is
 * the xor of all data.
 *
 * Layout of a header (little endian): 512 reserved bytes of 0xff,
 * signature (~crc32c of the array uuid), padding, generation, entries
 * count, checksum (~crc32c of the 4 KiB with the checksum field zero),
 * then up to RF_PPL_MAX_ENTRIES entries {data_sector (array sector, in
 * 512-byte units for 1.x), pp_size, data_size (bytes), parity_disk,
 * checksum (~crc32c of the entry's partial parity)}.  Partial parity
 * follows the header, entry after entry.  With several PPLs each new
 * header goes after the last one's partial parity, back to the start when
 * the area is short; the newest valid header is the one before the
 * generation drops, a checksum fails or the signature differs, and only
 * it is replayed (one header per member is ever unfinished).
 *
 * Invariants: crc32c here is the kernel's crc32c_le (no inversion; the
 * callers invert as md does).  rf_ppl_decode() accepts a header only when
 * its checksum and signature hold.
 *
 * What it does NOT do: member IO (recovery reads and writes through the
 * caller's callbacks) nor the logging of running writes
 * (services/ppl.c).
 */
#ifndef RAIDFUSE_PPL_H
#define RAIDFUSE_PPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raidfuse/layout.h"
#include "raidfuse/parity.h"     /* rf_crc32c */

#define RF_PPL_HEADER_SIZE 4096
#define RF_PPL_HDR_RESERVED 512
#define RF_PPL_ENTRY_SIZE 24
#define RF_PPL_MAX_ENTRIES ((RF_PPL_HEADER_SIZE - RF_PPL_HDR_RESERVED - 4 * 4 - 8) / RF_PPL_ENTRY_SIZE)
#define RF_PPL_SPACE_SIZE (128 * 1024)  /* partial parity per header with several PPLs */
#define RF_PPL_AREA_SECTORS 2048        /* mdadm 4.2's area: 1 MiB */
#define RF_PPL_BLOCK 4096               /* md's stripe (page) size */

struct rf_ppl_entry {
	uint64_t data_sector;   /* first array sector written */
	uint32_t pp_size;       /* bytes of partial parity (0: full stripe) */
	uint32_t data_size;     /* bytes of data written, all columns */
	uint32_t parity_disk;   /* member holding the parity */
	uint32_t checksum;      /* ~crc32c of the partial parity */
};

struct rf_ppl_header {
	uint32_t signature;
	uint64_t generation;
	uint32_t entries_count;
	uint32_t checksum;      /* as read (decode) or written (encode) */
	struct rf_ppl_entry e[RF_PPL_MAX_ENTRIES];
};

/* md's signature of a 1.x array: ~crc32c(~0, uuid, 16). */
uint32_t rf_ppl_signature(const uint8_t uuid[16]);

/* Write h into the 4 KiB at buf (reserved bytes, fields, entries, the
 * header checksum, which is also stored in h->checksum). */
void rf_ppl_encode(struct rf_ppl_header *h, void *buf);
/* Read the 4 KiB at buf into h.  0; -EBADMSG: the checksum fails;
 * -ENOENT: another array's signature (not sig); -EINVAL: more entries
 * than a header holds. */
int rf_ppl_decode(const void *buf, uint32_t sig, struct rf_ppl_header *h);

/* Member IO for recovery: read or write len bytes at byte off of member
 * m's backend (absolute offsets, data_offset included by the caller's
 * layout below).  0 or -errno. */
struct rf_ppl_io {
	int (*read)(void *ctx, int m, void *buf, uint32_t len, uint64_t off);
	int (*write)(void *ctx, int m, const void *buf, uint32_t len, uint64_t off);
	int (*flush)(void *ctx, int m);
	void *ctx;
};

/* One member's PPL area and where its data starts, in bytes. */
struct rf_ppl_area {
	bool present;           /* the member is there (in sync) */
	uint64_t start;         /* the area's first byte */
	uint64_t size;          /* its bytes */
	uint64_t data_offset;   /* the member's data start */
};

/* Recovery counts (md's recovered_entries and mismatch_count). */
struct rf_ppl_stats {
	int headers;            /* members whose newest header was found */
	int entries;            /* entries replayed */
	int mismatches;         /* headers or entries refused (checksum, signature) */
	int skipped;            /* entries whose data columns are not all present */
};

/* Find member m's newest valid header: scan area a (through io) as md
 * does.  0 with *h filled and *at its byte offset in the area; -ENOENT: no
 * valid header at the start; -errno from io. */
int rf_ppl_find_latest(const struct rf_ppl_io *io, int m, const struct rf_ppl_area *a, uint32_t sig,
		       struct rf_ppl_header *h, uint64_t *at);

/* Replay the newest header of every present member's area over geometry
 * g (raid5): for each entry whose partial parity's checksum holds and
 * whose written columns are all present, parity = pp ^ data, written to
 * the parity member (md's ppl_recover); then flush.  areas has
 * g->raid_disks entries.  0 or -errno (st counts what was done). */
int rf_ppl_recover(const struct rf_ppl_io *io, const struct rf_geom *g, const struct rf_ppl_area *areas,
		   uint32_t sig, struct rf_ppl_stats *st);

/* Write an empty header (generation 0) at the start of area a of member
 * m, after zeroing the area (md's ppl_write_empty_header), then flush.
 * 0 or -errno. */
int rf_ppl_write_empty(const struct rf_ppl_io *io, int m, const struct rf_ppl_area *a, uint32_t sig);

/* Recovery IO over superblock IO objects (super.h's rf_sb_io: a file, an
 * overlay, an NBD export), one per slot; dev[m] NULL: not present. */
struct rf_sb_io;
struct rf_sb;
struct rf_ppl_sbio {
	const struct rf_sb_io *dev[RF_MAX_MEMBERS];
};
void rf_ppl_io_sb(struct rf_ppl_io *io, struct rf_ppl_sbio *s);
/* Member sb's PPL area (1.x with RF_SB_FEAT_PPL or _MULTI_PPL).  0, or
 * -ENOENT when it keeps none. */
int rf_ppl_area_of(const struct rf_sb *sb, struct rf_ppl_area *a);

/* Whether an area of size bytes holds headers one after another (md's
 * use_multippl: room for two units of RF_PPL_SPACE_SIZE) or one header
 * at its start, rewritten for every unit. */
static inline bool rf_ppl_area_multi(uint64_t size)
{
	return size >= 2ull * (RF_PPL_SPACE_SIZE + RF_PPL_HEADER_SIZE);
}

/* Where md would put a partial parity log on the member of sb, whose
 * array has none yet (mdadm's update_super1 "ppl", md's
 * ppl_validate_rdev): *offset sectors from the superblock, *size
 * sectors.  0; -EINVAL: not a 1.x raid5 without a bitmap or journal;
 * -ENOSPC: no room for a header and a page of partial parity.  why gets
 * the reason. */
int rf_ppl_place(const struct rf_sb *sb, int16_t *offset, uint16_t *size, char *why, size_t whylen);

#endif
