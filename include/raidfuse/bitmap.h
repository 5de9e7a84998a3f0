/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bitmap.h - md's write-intent bitmap: the internal bitmap beside the
 * members' superblocks, on disk and while an array runs.
 *
 * On disk (md-bitmap.h's bitmap_super_t, mdadm's super1.c): a 256-byte
 * little-endian header, then one bit per bitmap chunk, bit i in byte i / 8
 * under the mask 1 << (i % 8).  It sits bitmap_offset sectors (signed)
 * from each member's superblock (1.2: 8 sectors, the 4 KiB after it; 0.90:
 * always 8) and every in-sync member carries the same copy.  A set bit
 * says "writes may have been in flight in this chunk": after a crash only
 * the chunks whose bits are set need a resync, and a member that comes
 * back after missing writes needs only those chunks.
 *
 * Units.  A chunk covers chunk_bytes / 512 sectors of what md resyncs: a
 * member's data sectors for raid1 and raid4/5/6, array sectors for raid10
 * (sync_size, the same units as the walk in sync_walk.c; see rf_bitmap_sync_size()).
 *
 * While an array runs (the struct rf_bitmap calls; every one is a no-op
 * for NULL, which an array without a bitmap has), md's rule holds: no
 * data write reaches a member before the bits of the chunks it touches
 * are set on the members' disks.  Each chunk counts the writes in flight
 * in it; a background pass every daemon_sleep seconds clears the bit of
 * a chunk that was idle for a whole pass, unless the array is degraded
 * (then bits stay, so a member added back needs only those chunks) or
 * the chunk still needs a resync.  Degraded means what md means: a
 * member missing or failed, or one being rebuilt.
 *
 * One header for both halves, as ppl.h is: the format is md/bitmap_fmt.c
 * (and md/layout.c for rf_bitmap_sync_size()), the running bitmap
 * services/bitmap.c (with rf_bitmap_range(), which asks the level).
 */
#ifndef RAIDFUSE_BITMAP_H
#define RAIDFUSE_BITMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raidfuse/layout.h"
#include "raidfuse/super.h"

#define RF_BITMAP_MAGIC         0x6d746962u     /* "bitm" */
#define RF_BITMAP_VERSION       4               /* little-endian bits */
#define RF_BITMAP_VERSION_HOST  3               /* host-endian bits (older md) */
#define RF_BITMAP_VERSION_CLUSTER 5
#define RF_BITMAP_SB_BYTES      256
#define RF_BITMAP_STALE         (1u << 1)       /* state: out of date, bits mean nothing */
#define RF_BITMAP_WRITE_ERROR   (1u << 2)
#define RF_BITMAP_DAEMON_SLEEP  5               /* seconds, md's default */
#define RF_BITMAP_CHUNK_MIN     4096            /* mdadm: no sub-page chunks */
#define RF_BITMAP_CHUNK_DEFAULT (64u << 20)     /* mdadm's floor for an internal bitmap */
#define RF_BITMAP_COUNTER_MAX   16383           /* md's 14-bit counter: write_behind's limit */

/* The header, decoded. */
struct rf_bitmap_sb {
	uint32_t version;
	uint8_t uuid[16];               /* the array's, as in the md superblock */
	uint64_t events;                /* >= the superblocks' or the bitmap is stale */
	uint64_t events_cleared;        /* events when bits were last cleared */
	uint64_t sync_size;             /* sectors the bits cover */
	uint32_t state;                 /* RF_BITMAP_STALE, RF_BITMAP_WRITE_ERROR */
	uint32_t chunk_bytes;           /* power of two */
	uint32_t daemon_sleep;          /* seconds */
	uint32_t write_behind;
	uint32_t sectors_reserved;      /* 0: not recorded (mdadm leaves it so) */
	uint32_t nodes;                 /* clustered only */
};

/* Bits for sync_size sectors in chunks of chunk_bytes (mdadm's
 * bitmap_bits()), and the bytes header + bits take. */
uint64_t rf_bitmap_bits(uint64_t sync_size, uint32_t chunk_bytes);
uint64_t rf_bitmap_bytes(uint64_t sync_size, uint32_t chunk_bytes);

/* What the bits cover for geometry g: member sectors (raid1, raid4/5/6) or
 * array sectors (raid10); 0 for raid0, which md gives no bitmap. */
uint64_t rf_bitmap_sync_size(const struct rf_geom *g);
/* The sectors (in the units above) a write of len bytes at array byte off
 * can touch on any member: [*lo, *hi), inside [0, rf_bitmap_sync_size()).
 * The level's math (md's bitmap_sector: its ops table's bitmap_range,
 * found by g->level in the program's stack), clipped to the bits here
 * (services/bitmap.c); empty for a level without a bitmap (raid0) or
 * len 0.  Conservative: a raid4/5/6 write that crosses chunks covers
 * whole chunk rows. */
void rf_bitmap_range(const struct rf_geom *g, uint64_t off, uint64_t len, uint64_t *lo, uint64_t *hi);

/* Decode and check RF_BITMAP_SB_BYTES bytes.  Returns 0, or -EINVAL with a
 * message starting "PATH: bitmap: " (bad magic, unknown version, chunk
 * size not a power of two of at least 512, daemon_sleep or write_behind
 * out of md's range). */
int rf_bitmap_sb_parse(const void *buf, const char *path, struct rf_bitmap_sb *bsb, char *err, size_t errlen);
/* Encode bsb into RF_BITMAP_SB_BYTES bytes (reserved bytes zero). */
void rf_bitmap_sb_build(const struct rf_bitmap_sb *bsb, void *buf);

/* mdadm 4.2's chunk for a new internal bitmap over sync_size sectors that
 * must fit in room_sectors (header included; room is capped to 128 KiB
 * when no chunk is asked for): the smallest power of two from 4 KiB whose
 * bits fit, and at least 64 MiB unless want asks for one.  want 0: that
 * default; else want itself, refused (-EINVAL with a message) when it is
 * not a power of two or its bits do not fit. */
int rf_bitmap_choose_chunk(uint64_t sync_size, uint64_t room_sectors, uint64_t want, uint32_t *chunk,
			   char *err, size_t errlen);
/* Sectors a bitmap takes on disk, rounded to 4 KiB as mdadm reserves it
 * (where the bad block log goes after it). */
uint32_t rf_bitmap_disk_sectors(uint64_t sync_size, uint32_t chunk_bytes);

/* Write a new bitmap as mdadm --create does: the header, then every bit
 * set (the first assembly resyncs what the superblock says; an array
 * created clean clears the bits in its first idle passes), through the
 * 4 KiB-rounded size, at byte `at` of the member through io, then fsync.
 * 0 or -errno with a message naming path. */
int rf_bitmap_write_new(const struct rf_sb_io *io, const char *path, uint64_t at, const struct rf_bitmap_sb *bsb,
			char *err, size_t errlen);

/* For `raidfuse create`: the bitmap of the new array n, with a chunk of
 * want bytes (0: mdadm's default): sets n->bitmap_sectors and fills bsb
 * (events 0, every other field as mdadm writes it).  0, or -EINVAL with a
 * message (raid0, a chunk that does not fit). */
int rf_bitmap_plan(struct rf_sb_new *n, uint64_t want, struct rf_bitmap_sb *bsb, char *err, size_t errlen);

/* Read and check the bitmap of one member whose superblock is sb (through
 * io): header, and the bits into *bits (malloc()ed, rf_bitmap_bytes()
 * bytes for the header's own sync_size, header included).  Checks the
 * uuid against sb and that the bits lie outside the data.  0, -ENOENT
 * when sb has no bitmap, or -errno with a message naming path. */
int rf_bitmap_read(const struct rf_sb_io *io, const char *path, const struct rf_sb *sb, struct rf_bitmap_sb *bsb,
		   uint8_t **bits, char *err, size_t errlen);
/* Where the bitmap of a member with superblock sb starts, in bytes. */
uint64_t rf_bitmap_offset_bytes(const struct rf_sb *sb);
/* Whether a bitmap of `bytes` (header and bits) lies on the member whose
 * superblock is sb, clear of the superblock and the data (both places of
 * the data while a reshape moves its offset: md's new_offset).  0, or
 * -EINVAL with a message naming path. */
int rf_bitmap_check_place(const struct rf_sb *sb, const char *path, uint64_t bytes, char *err, size_t errlen);
/* The bitmap's messages: "PATH: bitmap: " and fmt's text into err.
 * Returns -EINVAL. */
__attribute__((format(printf, 4, 5)))
int rf_bitmap_bad(char *err, size_t errlen, const char *path, const char *fmt, ...);

/* ---- a running array's bitmap ---- */

struct rf_array;
struct rf_sbstate;
struct rf_bitmap;

/* Load the bitmap of an array whose superblocks s keeps (read from the
 * freshest in-sync member).  *out stays NULL when the array has none.
 * Chunks whose bits are set need a resync when the superblocks say one is
 * due from below their end (md's recovery_cp), or always while the array
 * is degraded; a stale bitmap (older events, or STALE) counts as all set.
 * 0, or -errno with a message naming the member. */
int rf_bitmap_open(struct rf_array *a, struct rf_sbstate *s, struct rf_bitmap **out, char *err, size_t errlen);
/* Every request drained, the array about to take (or given) geometry g
 * of another size (md/component_size; a raid10 reshape, whose bits count
 * array sectors): the bitmap covers g's sync size, at its chunk size, or
 * doubled until the bits fit the room it has on every member
 * (md_bitmap_resize()).  With grown_need, the chunks a grow adds count as
 * written and needing a resync, as md marks them; without, they start
 * clean (the caller writes every row of them before they are served).
 * Written to every member.  0 (also for NULL, or nothing to change), or
 * -errno with why in err. */
int rf_bitmap_resize(struct rf_bitmap *bm, const struct rf_geom *g, bool grown_need, char *err, size_t errlen);
/* Start the background clearing (after any fork).  0 or -errno. */
int rf_bitmap_start(struct rf_bitmap *bm);
/* Stop it (the state is kept). */
void rf_bitmap_stop(struct rf_bitmap *bm);
/* Nothing in flight: clear every idle bit that may go (as md does when an
 * array stops), write, free. */
void rf_bitmap_close(struct rf_bitmap *bm);

/* The array calls the bitmap only through its hooks (core/hooks.h),
 * which rf_bitmap_open() registers:
 *  - write_start, before a write request of len bytes at array byte off
 *    is split: returns once the bits of its chunks are set on every
 *    in-sync member's disk, and counts the write in each chunk.  Cheap
 *    while the bits are set already: one atomic add per chunk, no lock.
 *    0, or -EIO when setting them failed the array (counted even then:
 *    write_end follows always);
 *  - write_end: the write ended with err.  A failed write, or any write
 *    while the array is degraded, leaves its chunks needing a resync;
 *  - dev_changed: device dev's entry of the table changed (a spare took
 *    a slot, a device left, its superblock was written): the bitmap's
 *    place on it is taken from its superblock, and a device that now
 *    serves a slot gets the whole bitmap at the next bitmap write;
 *  - info: md's mdstat figures (chunk, pages of 2048 counters, and those
 *    holding a chunk whose bit is set);
 *  - start, stop, close: as rf_bitmap_start/stop/close below. */

/* The superblocks are about to record events: the header on every
 * in-sync member says so first (md's order: a bitmap older than its
 * superblocks is stale).  No fsync: the superblock write's follows.
 * The device lock held (the superblock writer's). */
void rf_bitmap_set_events(struct rf_bitmap *bm, uint64_t events);

/* The resync walk's hooks (sync_walk.c, act RESYNC only).  skip: where the
 * walk at pos goes on: pos if its chunk needs a resync, else the start
 * of the next chunk that does, or total; *n, the sectors the walk means
 * to do next, is cut to the end of that run of chunks.  done: [lo, hi)
 * was resynced;
 * chunks wholly inside the run the walk has made without a jump are in
 * sync now (their bits go at the next idle passes), unless the array is
 * degraded. */
uint64_t rf_bitmap_resync_skip(struct rf_bitmap *bm, uint64_t pos, uint64_t total, uint64_t *n);
void rf_bitmap_resync_done(struct rf_bitmap *bm, uint64_t lo, uint64_t hi);

/* The rebuild walk's hook (sync_walk.c, act RECOVER): [lo, hi) was rebuilt
 * onto the device(s) being recovered; whole chunks of the walk's run need
 * no resync any more (unless another member is missing). */
void rf_bitmap_rebuilt(struct rf_bitmap *bm, uint64_t lo, uint64_t hi);

/* For recovering a member added back: the first run of chunks at or
 * after sector from whose bits are set (written since the bits were last
 * cleared, or needing a resync), as sectors [*lo, *hi) clipped to
 * sync_size.  0, or -ENOENT when there is none (or no bitmap). */
int rf_bitmap_next_dirty(struct rf_bitmap *bm, uint64_t from, uint64_t *lo, uint64_t *hi);
/* The same as a walk's hook, for rebuilding a member added back (md's
 * re-add with a bitmap): where the walk at pos goes on (pos, the start of
 * the next chunk whose bit is set, or total), *n cut to the end of that
 * run.  With rf_bitmap_rebuilt() after each region. */
uint64_t rf_bitmap_dirty_skip(struct rf_bitmap *bm, uint64_t pos, uint64_t total, uint64_t *n);
/* [lo, hi) was rebuilt: its whole chunks need no resync any more. */
void rf_bitmap_range_synced(struct rf_bitmap *bm, uint64_t lo, uint64_t hi);

/* One background pass now; returns the bits it cleared (tests, flush). */
int rf_bitmap_daemon_pass(struct rf_bitmap *bm);
/* Period of the background pass in milliseconds (tests shorten it). */
void rf_bitmap_set_period_ms(struct rf_bitmap *bm, unsigned ms);

struct rf_bitmap_status {
	uint32_t chunk_bytes;
	uint64_t chunks;                /* bits */
	uint64_t sync_size;             /* sectors */
	uint64_t dirty;                 /* bits set on disk */
	uint64_t needed;                /* chunks that need a resync */
	uint64_t events, events_cleared;
	uint64_t resync_covered;        /* sectors the last resync walked */
	uint64_t resync_skipped;        /* sectors it skipped as clean */
	uint64_t nr_set_writes;         /* bitmap writes that set bits */
	uint64_t nr_clear_writes;       /* that cleared bits */
};
void rf_bitmap_get(struct rf_bitmap *bm, struct rf_bitmap_status *st);

/* md/bitmap/ of a running array, with md's meanings (md-bitmap.c's
 * sysfs attributes).  rf_bitmap_ctl_get() fills c (md's defaults for an
 * array without a bitmap) and returns 0, or -ENOENT when there is none.
 * The setters return 0, -ENOENT (no bitmap) or: */
struct rf_bitmap_ctl {
	int32_t location;               /* sectors from the superblock ("+8") */
	uint32_t chunk_bytes;
	unsigned time_base_ms;          /* the background pass's period (daemon_sleep) */
	unsigned backlog;               /* write_behind, as recorded (no write-behind is done) */
	bool can_clear;                 /* bits of in-sync chunks may be cleared */
};
int rf_bitmap_ctl_get(struct rf_array *a, struct rf_bitmap_ctl *c);
/* time_base: any period (0 is one millisecond, as md's one tick); the
 * header records whole seconds, at least 1, at its next write. */
int rf_bitmap_ctl_time_base(struct rf_array *a, unsigned ms);
/* backlog: -EINVAL past RF_BITMAP_COUNTER_MAX or without a write-mostly
 * device (md's checks); recorded in the header at once (-EIO: the array
 * failed writing it). */
int rf_bitmap_ctl_backlog(struct rf_array *a, unsigned backlog);
/* can_clear: false holds every bit; true lets the background pass clear
 * again, -EBUSY while the array is degraded. */
int rf_bitmap_ctl_can_clear(struct rf_array *a, bool can);

#endif
