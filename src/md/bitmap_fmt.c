/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bitmap_fmt.c - md's internal write-intent bitmap on disk: the header,
 * the bits, where they sit, and a new one's size.
 *
 * The 256-byte header is md's bitmap_super_t (little-endian; its
 * offsets asserted below), the bits follow it at byte 256, bit i of the
 * bitmap in byte i / 8 under 1 << (i % 8) (version 4; version 3 stored
 * host-order longs, which on a little-endian host is the same thing).
 * mdadm sizes a new one (super1.c add_internal_bitmap1): for 1.x members
 * it goes 8 sectors after the superblock, in the room mdadm keeps there
 * (choose_bm_space: 4 KiB, 64 KiB past 8 GiB, 128 KiB past 200 GiB); the
 * chunk is the smallest power of two from 4 KiB whose bits fit that room,
 * and at least 64 MiB unless one is asked for.  It writes the header and
 * sets every bit; what md does at the first assembly with them depends on
 * the superblock (resync due: those chunks are resynced; clean: the bits
 * are simply cleared once idle).
 *
 * Reading one checks it against the member's superblock: the same uuid,
 * a sync_size the array can have, and the bits on the member, clear of
 * the superblock and the data (rf_bitmap_check_place(), which the running
 * bitmap also asks before it writes a bigger one).  All member IO goes
 * through the caller's rf_sb_io.
 *
 * What it does NOT do: run a bitmap (services/bitmap.c counts writes,
 * sets and clears bits while an array is served), say which sectors a
 * write touches (the level's bitmap_range, through services/bitmap.c's
 * rf_bitmap_range()) or what the bits cover (md/layout.c:
 * rf_bitmap_sync_size()), or serve clustered bitmaps (version 5 is
 * refused).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raidfuse/bitmap.h"
#include "raidfuse/le.h"
#include "raidfuse/util.h"

#define BM_BLOCK        4096u   /* mdadm reserves the bitmap in 4 KiB units */

/* md's bitmap_super_t, its little-endian fields in le.h's types, so
 * nothing is read in host order. */
struct bm_disk_sb {
	rf_le32_t magic;
	rf_le32_t version;
	uint8_t uuid[16];
	rf_le64_t events;
	rf_le64_t events_cleared;
	rf_le64_t sync_size;
	rf_le32_t state;
	rf_le32_t chunksize;
	rf_le32_t daemon_sleep;
	rf_le32_t write_behind;
	rf_le32_t sectors_reserved;
	rf_le32_t nodes;
	uint8_t cluster_name[64];
	uint8_t pad[120];
};
_Static_assert(sizeof(struct bm_disk_sb) == RF_BITMAP_SB_BYTES, "bitmap header is 256 bytes");
_Static_assert(offsetof(struct bm_disk_sb, events) == 24, "events");
_Static_assert(offsetof(struct bm_disk_sb, sync_size) == 40, "sync_size");
_Static_assert(offsetof(struct bm_disk_sb, chunksize) == 52, "chunksize");
_Static_assert(offsetof(struct bm_disk_sb, sectors_reserved) == 64, "sectors_reserved");
_Static_assert(offsetof(struct bm_disk_sb, cluster_name) == 72, "cluster_name");

uint64_t rf_bitmap_bits(uint64_t sync_size, uint32_t chunk_bytes)
{
	uint64_t cs = chunk_bytes / 512;

	return cs ? (sync_size + cs - 1) / cs : 0;
}

uint64_t rf_bitmap_bytes(uint64_t sync_size, uint32_t chunk_bytes)
{
	return RF_BITMAP_SB_BYTES + (rf_bitmap_bits(sync_size, chunk_bytes) + 7) / 8;
}

uint32_t rf_bitmap_disk_sectors(uint64_t sync_size, uint32_t chunk_bytes)
{
	return (uint32_t)(rf_round_up(rf_bitmap_bytes(sync_size, chunk_bytes), BM_BLOCK) / 512);
}

__attribute__((format(printf, 4, 5)))
int rf_bitmap_bad(char *err, size_t errlen, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || !errlen)
		return -EINVAL;
	n = snprintf(err, errlen, "%s: bitmap: ", path);
	if (n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

int rf_bitmap_sb_parse(const void *buf, const char *path, struct rf_bitmap_sb *bsb, char *err, size_t errlen)
{
	const struct bm_disk_sb *d = buf;
	uint32_t magic = rf_le32(d->magic);

	memset(bsb, 0, sizeof(*bsb));
	if (magic != RF_BITMAP_MAGIC)
		return rf_bitmap_bad(err, errlen, path, "bad magic 0x%08x, expected 0x%08x (\"bitm\")", magic,
				     RF_BITMAP_MAGIC);
	bsb->version = rf_le32(d->version);
	memcpy(bsb->uuid, d->uuid, 16);
	bsb->events = rf_le64(d->events);
	bsb->events_cleared = rf_le64(d->events_cleared);
	bsb->sync_size = rf_le64(d->sync_size);
	bsb->state = rf_le32(d->state);
	bsb->chunk_bytes = rf_le32(d->chunksize);
	bsb->daemon_sleep = rf_le32(d->daemon_sleep);
	bsb->write_behind = rf_le32(d->write_behind);
	bsb->sectors_reserved = rf_le32(d->sectors_reserved);
	bsb->nodes = rf_le32(d->nodes);
	if (bsb->version == RF_BITMAP_VERSION_CLUSTER)
		return rf_bitmap_bad(err, errlen, path, "version 5 (a clustered bitmap) is not served");
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	if (bsb->version == RF_BITMAP_VERSION_HOST)
		return rf_bitmap_bad(err, errlen, path, "version 3 (host-endian bits) from another host is not served");
#endif
	if (bsb->version != RF_BITMAP_VERSION && bsb->version != RF_BITMAP_VERSION_HOST)
		return rf_bitmap_bad(err, errlen, path, "unknown version %u (md writes 4)", bsb->version);
	if (bsb->chunk_bytes < 512 || !rf_is_pow2(bsb->chunk_bytes))
		return rf_bitmap_bad(err, errlen, path, "chunk size %u bytes is not a power of two of at least 512",
				     bsb->chunk_bytes);
	if (bsb->daemon_sleep < 1)
		return rf_bitmap_bad(err, errlen, path, "daemon_sleep %u s is out of range (at least 1)",
				     bsb->daemon_sleep);
	if (bsb->write_behind > RF_BITMAP_COUNTER_MAX)
		return rf_bitmap_bad(err, errlen, path, "write_behind %u is out of range (0 - %d)", bsb->write_behind,
				     RF_BITMAP_COUNTER_MAX);
	return 0;
}

void rf_bitmap_sb_build(const struct rf_bitmap_sb *bsb, void *buf)
{
	struct bm_disk_sb *d = buf;

	memset(d, 0, sizeof(*d));
	d->magic = rf_to_le32(RF_BITMAP_MAGIC);
	d->version = rf_to_le32(bsb->version);
	memcpy(d->uuid, bsb->uuid, 16);
	d->events = rf_to_le64(bsb->events);
	d->events_cleared = rf_to_le64(bsb->events_cleared);
	d->sync_size = rf_to_le64(bsb->sync_size);
	d->state = rf_to_le32(bsb->state);
	d->chunksize = rf_to_le32(bsb->chunk_bytes);
	d->daemon_sleep = rf_to_le32(bsb->daemon_sleep);
	d->write_behind = rf_to_le32(bsb->write_behind);
	d->sectors_reserved = rf_to_le32(bsb->sectors_reserved);
	d->nodes = rf_to_le32(bsb->nodes);
}

int rf_bitmap_choose_chunk(uint64_t sync_size, uint64_t room_sectors, uint64_t want, uint32_t *chunk,
			   char *err, size_t errlen)
{
	uint64_t max_bits, min_chunk = RF_BITMAP_CHUNK_MIN, bits;

	if (!want && room_sectors > 256)
		room_sectors = 256;     /* mdadm: at most 128 KiB unless a chunk is asked for */
	if (room_sectors <= 1)
		return rf_bitmap_bad(err, errlen, "new array", "no room for a bitmap (%llu sectors kept for it)",
				     (unsigned long long)room_sectors);
	max_bits = (room_sectors * 512 - RF_BITMAP_SB_BYTES) * 8;
	bits = sync_size * 512 / min_chunk + 1;
	while (bits > max_bits) {
		min_chunk *= 2;
		bits = (bits + 1) / 2;
	}
	if (!want) {
		*chunk = (uint32_t)(min_chunk > RF_BITMAP_CHUNK_DEFAULT ? min_chunk : RF_BITMAP_CHUNK_DEFAULT);
		return 0;
	}
	if (!rf_is_pow2(want) || want > (1u << 31))
		return rf_bitmap_bad(err, errlen, "new array", "chunk %llu bytes is not a power of two up to 2G",
				     (unsigned long long)want);
	if (want < min_chunk)
		return rf_bitmap_bad(err, errlen, "new array",
				     "chunk %llu bytes is too small: %llu sectors need %llu bytes or more to fit the "
				     "%llu sectors kept for the bitmap", (unsigned long long)want,
				     (unsigned long long)sync_size, (unsigned long long)min_chunk,
				     (unsigned long long)room_sectors);
	*chunk = (uint32_t)want;
	return 0;
}

int rf_bitmap_write_new(const struct rf_sb_io *io, const char *path, uint64_t at, const struct rf_bitmap_sb *bsb,
			char *err, size_t errlen)
{
	uint64_t len = (uint64_t)rf_bitmap_disk_sectors(bsb->sync_size, bsb->chunk_bytes) * 512;
	uint8_t *buf = malloc(len);
	int r;

	if (!buf) {
		snprintf(err, errlen, "%s: bitmap: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	memset(buf, 0xff, len);
	rf_bitmap_sb_build(bsb, buf);
	r = io->pwrite(io->ctx, buf, len, at);
	if (!r)
		r = io->fsync(io->ctx);
	if (r)
		snprintf(err, errlen, "%s: writing the bitmap at byte %llu: %s", path, (unsigned long long)at,
			 strerror(-r));
	free(buf);
	return r;
}

int rf_bitmap_plan(struct rf_sb_new *n, uint64_t want, struct rf_bitmap_sb *bsb, char *err, size_t errlen)
{
	struct rf_geom g = {
		.level = n->level, .layout = n->layout, .raid_disks = n->raid_disks,
		.chunk_sectors = n->chunk_sectors, .dev_sectors = n->size,
	};
	uint32_t chunk;
	int r;

	if (n->level == 0)
		return rf_bitmap_bad(err, errlen, "new array",
				     "raid0 has nothing to resync: md keeps no bitmap for it");
	r = rf_geom_init(&g, err, errlen);
	if (r)
		return r;
	r = rf_bitmap_choose_chunk(rf_bitmap_sync_size(&g), rf_sb_bitmap_room(n->size), want, &chunk, err,
				   errlen);
	if (r)
		return r;
	memset(bsb, 0, sizeof(*bsb));
	bsb->version = RF_BITMAP_VERSION;
	memcpy(bsb->uuid, n->uuid, 16);
	bsb->sync_size = rf_bitmap_sync_size(&g);
	bsb->chunk_bytes = chunk;
	bsb->daemon_sleep = RF_BITMAP_DAEMON_SLEEP;
	n->bitmap_sectors = rf_bitmap_disk_sectors(bsb->sync_size, chunk);
	return 0;
}

uint64_t rf_bitmap_offset_bytes(const struct rf_sb *sb)
{
	/* 0.90 keeps it in the 60 KiB after its 4 KiB superblock. */
	int64_t off = sb->kind == RF_SB_090 ? 8 : sb->bitmap_offset;

	return (uint64_t)((int64_t)sb->sb_offset + off) * 512;
}

/* The bitmap of `bytes` must lie on the member, clear of the superblock
 * and the data (both places of it while a reshape moves the data
 * offset: md's new_offset). */
int rf_bitmap_check_place(const struct rf_sb *sb, const char *path, uint64_t bytes, char *err, size_t errlen)
{
	int64_t start = (int64_t)sb->sb_offset + (sb->kind == RF_SB_090 ? 8 : sb->bitmap_offset);
	uint64_t end = (uint64_t)start + (bytes + 511) / 512;
	uint64_t used = sb->size ? sb->size : sb->data_size, data_end = sb->data_offset + used;

	if (sb->reshape && sb->new_offset) {
		uint64_t moved = (uint64_t)((int64_t)sb->data_offset + sb->new_offset);

		if ((uint64_t)start < moved + used && end > moved)
			return rf_bitmap_bad(err, errlen, path,
					     "%llu sectors at sector %lld run into the data the reshape under "
					     "way moves (sectors %llu-%llu)",
					     (unsigned long long)(end - (uint64_t)start), (long long)start,
					     (unsigned long long)moved, (unsigned long long)(moved + used));
	}

	if (start < 0 || end > sb->member_sectors)
		return rf_bitmap_bad(err, errlen, path,
				     "%llu sectors at offset %ld from the superblock lie outside the member",
				     (unsigned long long)(end - (uint64_t)start),
				     (long)(start - (int64_t)sb->sb_offset));
	if ((uint64_t)start < sb->sb_offset + 2 && end > sb->sb_offset)
		return rf_bitmap_bad(err, errlen, path, "at sector %lld it overlaps the superblock at %llu",
				     (long long)start, (unsigned long long)sb->sb_offset);
	if ((uint64_t)start < data_end && end > sb->data_offset)
		return rf_bitmap_bad(err, errlen, path,
				     "%llu sectors at sector %lld run into the data (sectors %llu-%llu)",
				     (unsigned long long)(end - (uint64_t)start), (long long)start,
				     (unsigned long long)sb->data_offset, (unsigned long long)data_end);
	return 0;
}

int rf_bitmap_read(const struct rf_sb_io *io, const char *path, const struct rf_sb *sb, struct rf_bitmap_sb *bsb,
		   uint8_t **bits, char *err, size_t errlen)
{
	uint64_t at, bytes, len;
	uint8_t head[RF_BITMAP_SB_BYTES];
	int r;

	*bits = NULL;
	if (!sb->bitmap)
		return -ENOENT;
	at = rf_bitmap_offset_bytes(sb);
	r = io->pread(io->ctx, head, sizeof(head), at);
	if (r) {
		snprintf(err, errlen, "%s: bitmap: read at byte %llu: %s", path, (unsigned long long)at, strerror(-r));
		return r;
	}
	r = rf_bitmap_sb_parse(head, path, bsb, err, errlen);
	if (r)
		return r;
	if (memcmp(bsb->uuid, sb->uuid, 16))
		return rf_bitmap_bad(err, errlen, path, "uuid differs from the superblock's: another array's bitmap");
	/* raid10's array sectors are the most a bitmap covers: at most
	 * RF_MAX_MEMBERS members' worth. */
	if (bsb->sync_size / RF_MAX_MEMBERS > sb->member_sectors)
		return rf_bitmap_bad(err, errlen, path, "sync_size %llu sectors is more than the array can have",
				     (unsigned long long)bsb->sync_size);
	bytes = rf_bitmap_bytes(bsb->sync_size, bsb->chunk_bytes);
	r = rf_bitmap_check_place(sb, path, bytes, err, errlen);
	if (r)
		return r;
	len = rf_round_up(bytes, 512);
	*bits = malloc(len);
	if (!*bits) {
		snprintf(err, errlen, "%s: bitmap: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	r = io->pread(io->ctx, *bits, len, at);
	if (r) {
		snprintf(err, errlen, "%s: bitmap: read of %llu bytes at byte %llu: %s", path,
			 (unsigned long long)len, (unsigned long long)at, strerror(-r));
		free(*bits);
		*bits = NULL;
	}
	return r;
}
