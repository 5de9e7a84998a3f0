/* SPDX-License-Identifier: GPL-2.0-or-later */
/* super.h - md's on-disk superblocks: read and check 0.90, 1.0, 1.1 and 1.2,
 * write 1.2, update one in place, and print one the way mdadm --examine does.
 *
 * Everything the rest of raidfuse needs from a superblock is copied into a
 * struct rf_sb, already checked and in host order, so no other module sees
 * md's layouts or byte orders.  Sizes and offsets in struct rf_sb are in
 * 512-byte sectors, md's unit, except where a name says bytes.
 */
#ifndef RAIDFUSE_SUPER_H
#define RAIDFUSE_SUPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum rf_sb_kind {
	RF_SB_NONE = 0,
	RF_SB_090,              /* host-endian, 64 KiB-aligned, 64 KiB before the end */
	RF_SB_10,               /* at the end: 8..12 KiB before it, 4 KiB aligned */
	RF_SB_11,               /* at offset 0 */
	RF_SB_12,               /* at 4 KiB */
};

/* Roles in dev_roles[], md's values (md_p.h MD_DISK_ROLE_*). */
#define RF_SB_ROLE_SPARE        0xffff
#define RF_SB_ROLE_FAULTY       0xfffe
#define RF_SB_ROLE_JOURNAL      0xfffd
#define RF_SB_ROLE_MAX          0xff00  /* active roles are below this */

/* feature_map bits of 1.x (md_p.h MD_FEATURE_*). */
#define RF_SB_FEAT_BITMAP       0x0001  /* internal write-intent bitmap */
#define RF_SB_FEAT_RECOVERY     0x0002  /* recovery_offset is valid */
#define RF_SB_FEAT_RESHAPE      0x0004  /* a reshape is under way */
#define RF_SB_FEAT_BAD_BLOCKS   0x0008  /* the bad block log has entries */
#define RF_SB_FEAT_REPLACEMENT  0x0010
#define RF_SB_FEAT_RESHAPE_BACK 0x0020
#define RF_SB_FEAT_NEW_OFFSET   0x0040
#define RF_SB_FEAT_RECOVERY_BM  0x0080
#define RF_SB_FEAT_CLUSTERED    0x0100
#define RF_SB_FEAT_JOURNAL      0x0200
#define RF_SB_FEAT_PPL          0x0400
#define RF_SB_FEAT_MULTI_PPL    0x0800
#define RF_SB_FEAT_RAID0_LAYOUT 0x1000
#define RF_SB_FEAT_ALL          0x1fff

#define RF_SB_MAX_SECTOR        UINT64_MAX      /* resync_offset of a clean array */
#define RF_SB_MAX_CHUNK_SECTORS (1u << 22)      /* 2 GiB: the largest chunk raidfuse serves (its
						 * chunk size in bytes is 32-bit, as a config's) */
#define RF_SB_BYTES             4096            /* what is read at each spot */
#define RF_SB_MAX_DEV           1920            /* (4096 - 256) / 2 roles in 1.x */

/* One member's superblock, checked and normalized. */
/* md's per-device flags (1.x devflags; 0.90 disk state bits 9 and 10). */
#define RF_SB_DEVFLAG_WRITE_MOSTLY 1    /* md's WriteMostly1 */
#define RF_SB_DEVFLAG_FAILFAST     2    /* md's FailFast1 */

struct rf_sb {
	enum rf_sb_kind kind;
	uint64_t member_sectors;        /* size of the member it was read from */
	uint64_t sb_offset;             /* where it is, sectors */
	uint8_t uuid[16];               /* array uuid, in md's byte order */
	uint8_t device_uuid[16];        /* 1.x only */
	char name[33];                  /* 1.x set_name; "" for 0.90 */
	int level;                      /* 0, 1, 4, 5, 6, 10 */
	int layout;                     /* as stored */
	uint32_t chunk_sectors;         /* 0 for raid1 */
	int raid_disks;
	uint64_t size;                  /* used per member (component), sectors; 0 for 1.x raid0 */
	uint64_t data_offset;           /* sectors */
	uint64_t data_size;             /* sectors available for data */
	uint32_t dev_number;            /* index into dev_roles */
	int role;                       /* 0..raid_disks-1 (a shrinking reshape: up to the old
					 * count, raid_disks - delta_disks), or RF_SB_ROLE_* */
	uint32_t max_dev;               /* entries in dev_roles */
	uint16_t dev_roles[RF_SB_MAX_DEV];
	uint64_t events;
	uint64_t resync_offset;         /* RF_SB_MAX_SECTOR when in sync */
	uint64_t recovery_offset;       /* valid with RF_SB_FEAT_RECOVERY */
	uint32_t feature_map;           /* 1.x; 0.90 sets RF_SB_FEAT_BITMAP only */
	bool bitmap;                    /* an internal write-intent bitmap */
	int32_t bitmap_offset;          /* sectors from the superblock (1.x) */
	uint32_t bitmap_sectors;        /* its size 4K-rounded, once someone read its header
					 * (examine); 0: not known */
	bool clean;
	uint64_t ctime, utime;          /* seconds since the epoch */
	uint32_t csum;                  /* as stored (it matched) */
	uint8_t devflags;               /* RF_SB_DEVFLAG_*: 1.x's devflags; 0.90's from this
					 * disk's descriptor state */
	uint16_t bblog_size;            /* 1.x bad block log, sectors */
	int32_t bblog_offset;           /* sectors from the superblock */
	/* A reshape under way (1.x: RF_SB_FEAT_RESHAPE; 0.90: minor version 91),
	 * as md records it; meaningful only then. */
	bool reshape;
	uint64_t reshape_position;      /* array sectors, from the start in either direction (a
					 * backward reshape starts at the end and counts down) */
	int new_level, new_layout;
	uint32_t new_chunk;             /* sectors */
	int32_t delta_disks;
	int32_t new_offset;             /* RF_SB_FEAT_NEW_OFFSET: sectors, from data_offset */
	/* RF_SB_FEAT_PPL or _MULTI_PPL (1.x): the partial parity log, in the
	 * bitmap's place. */
	int16_t ppl_offset;             /* sectors from the superblock */
	uint16_t ppl_size;              /* sectors */
	/* 0.90 only */
	struct {
		uint32_t minor, patch;
		uint32_t nr_disks, md_minor;
		uint32_t active, working, failed, spare;
		struct { uint32_t number, major, minor, raid_disk, state; } disks[27], this_disk;
	} v090;
};

/* "1.2", "0.90", ... */
const char *rf_sb_kind_name(enum rf_sb_kind k);

/* Where a superblock of kind k sits on a member of member_sectors, in
 * sectors; UINT64_MAX if the member is too small to hold one. */
uint64_t rf_sb_offset(enum rf_sb_kind k, uint64_t member_sectors);

/* Check and decode RF_SB_BYTES bytes read at rf_sb_offset(k, ...) of a
 * member of member_sectors.  Returns 0, -ENOENT when there is no md magic
 * (nothing of kind k there), or -EINVAL with a message in err that starts
 * with path ("PATH: 1.2 superblock: checksum 1234 should be 5678"). */
int rf_sb_parse(const void *buf, enum rf_sb_kind k, uint64_t member_sectors, const char *path,
		struct rf_sb *sb, char *err, size_t errlen);

/* md's checksum of RF_SB_BYTES bytes holding a superblock of kind k (what
 * its sb_csum field should hold), e.g. to repair one on purpose in tests. */
uint32_t rf_sb_csum(const void *buf, enum rf_sb_kind k);

/* How the superblock code reaches a member: the file itself, or a layer
 * over it (the copy-on-write overlay).  pread and pwrite move all of len
 * bytes or fail; pread past the end reads zeros.  Each returns 0 or -errno. */
struct rf_sb_io {
	int (*pread)(void *ctx, void *buf, size_t len, uint64_t off);
	int (*pwrite)(void *ctx, const void *buf, size_t len, uint64_t off);
	int (*fsync)(void *ctx);
	void *ctx;
	uint64_t bytes;                 /* the member's size */
};

/* io for a plain open file or block device (its size found now).  0 or
 * -errno. */
int rf_sb_io_fd(struct rf_sb_io *io, int fd);
/* io for a descriptor opened O_DIRECT (a member in direct mode) that
 * needs align: every transfer O_DIRECT, unaligned ones through an aligned
 * copy (fdio.h rf_pread_direct()).  0 or -errno. */
int rf_sb_io_fd_direct(struct rf_sb_io *io, int fd, uint32_t align);

/* Read the superblock of an open member: tries 1.2, 1.1, 1.0 and 0.90.
 * Returns 0 with sb filled; -ENOENT when none is there (err says where it
 * looked); -EINVAL for a damaged one or two valid ones of different kinds
 * (ambiguous: err names both); another -errno for an IO error. */
int rf_sb_read(int fd, const char *path, struct rf_sb *sb, char *err, size_t errlen);
/* The same through io. */
int rf_sb_read_io(const struct rf_sb_io *io, const char *path, struct rf_sb *sb, char *err, size_t errlen);

/* What a new 1.2 array is. */
struct rf_sb_new {
	uint8_t uuid[16];
	char name[33];                  /* at most 31 bytes are kept, as mdadm */
	int level;
	int layout;                     /* md's number as stored (raid4: 0) */
	uint32_t chunk_sectors;         /* 0 for raid1 */
	int raid_disks;
	uint64_t size;                  /* component sectors (0 for raid0, as mdadm) */
	uint64_t data_offset;           /* sectors, >= 16 */
	bool clean;                     /* --assume-clean: no resync due */
	uint64_t ctime;
	bool raid0_layout;              /* raid0 of members of different sizes: record the
					 * layout (md's RAID0_LAYOUT feature), as mdadm 4.2 */
	uint32_t bitmap_sectors;        /* an internal bitmap of this many sectors 8 sectors
					 * after the superblock (bitmap.h writes it); 0: none */
	bool ppl;                       /* md's partial parity log (raid5): RF_SB_PPL_SECTORS
					 * 8 sectors after the superblock, feature MULTI_PPL */
	uint64_t write_mostly, failfast;/* roles (bit i: role i) whose devflags say so */
	uint64_t spare_slots;           /* device numbers (bit i: i < raid_disks) whose
					 * dev_roles entry says spare, as mdadm leaves them: the
					 * missing members', and a member written as a spare
					 * (mdadm's raid6 created with one missing) */
};

/* The partial parity log area mdadm 4.2 makes (1 MiB). */
#define RF_SB_PPL_SECTORS 2048u

/* The room (sectors) mdadm 4.2 keeps after a 1.1/1.2 superblock for a
 * bitmap on members using `size` sectors (super1.c choose_bm_space). */
uint64_t rf_sb_bitmap_room(uint64_t size);

/* The data_offset (sectors) mdadm 4.2 gives a 1.2 array whose first member
 * has member_sectors, for a chunk of chunk_sectors (0: raid1). */
uint64_t rf_sb_default_data_offset(uint64_t member_sectors, uint32_t chunk_sectors);
/* The same with room sectors after the superblock instead of the bitmap
 * room (a partial parity log: RF_SB_PPL_SECTORS). */
uint64_t rf_sb_data_offset_room(uint64_t member_sectors, uint32_t chunk_sectors, uint64_t room);

/* A fresh random uuid (libuuid); 0 (libuuid cannot fail), as callers
 * expect of -errno functions. */
int rf_sb_random_uuid(uint8_t uuid[16]);

/* Build the RF_SB_BYTES-byte 1.2 superblock of role (dev_number = role) on a
 * member of member_sectors; a role past raid_disks is a spare's device
 * number (below max_dev).  Returns 0 or -EINVAL with a message. */
int rf_sb_build12(const struct rf_sb_new *n, int role, uint64_t member_sectors, void *buf,
		  char *err, size_t errlen);

/* Write it (and an empty bad block log) to fd and fsync.  0 or -errno with
 * a message naming path. */
int rf_sb_write12(int fd, const char *path, const struct rf_sb_new *n, int role,
		  uint64_t member_sectors, char *err, size_t errlen);
/* The same through io (an NBD export). */
int rf_sb_write12_io(const struct rf_sb_io *io, const char *path, const struct rf_sb_new *n, int role,
		     uint64_t member_sectors, char *err, size_t errlen);

/* Whether a member whose superblock has events ev is stale against the
 * freshest, at fresh: more than one behind (md's margin: a clean/dirty
 * flip may not have reached every member before a crash), compared
 * without overflow (ev + 1 wraps at the top of the range). */
static inline bool rf_sb_events_stale(uint64_t ev, uint64_t fresh)
{
	return ev < fresh && fresh - ev > 1;
}
/* The events count that follows ev: md never wraps it (at the top it
 * stays there, as md_update_sb does). */
static inline uint64_t rf_sb_events_next(uint64_t ev)
{
	return ev == UINT64_MAX ? ev : ev + 1;
}

/* Rewrite one member's superblock in place: events + 1, the clean/dirty
 * state and resync_offset (RF_SB_MAX_SECTOR when clean), utime now, then
 * fsync.  The superblock is read again first and must still be the one in
 * sb (same kind, array and device); sb is updated to what was written.
 * 0 or -errno with a message naming path. */
int rf_sb_update(int fd, const char *path, struct rf_sb *sb, bool clean, uint64_t resync_offset,
		 char *err, size_t errlen);

/* A state change md records in every member's superblock. */
struct rf_sb_change {
	bool clean;                     /* no writes in flight */
	uint64_t resync_offset;         /* where a resync is due (RF_SB_MAX_SECTOR: none);
					 * written only when clean: a dirty array records 0,
					 * as md does */
	uint64_t events;                /* the new events count; 0: the superblock's + 1 */
	int faulty_slot;                /* dev_roles slot to record as faulty; -1: none */
	/* 1.x: dev_roles[role_slot] = role_value (a spare added, a spare
	 * taking a slot); max_dev grows when role_slot needs it.
	 * 0.90 (its disk descriptors, as md's super_90_sync writes them):
	 * RF_SB_ROLE_SPARE puts a spare's descriptor at role_slot; an active
	 * role moves the device of descriptor role_slot into that role's
	 * descriptor once role_in_sync (md lists a device being rebuilt as
	 * a spare until it is in sync), else changes nothing. */
	bool set_role;
	uint32_t role_slot;
	uint16_t role_value;
	bool role_in_sync;
	/* 1.x: role_value is shared, as a replacement shares its slot's role
	 * with the device it is copied from (md's MD_FEATURE_REPLACEMENT):
	 * another device number holding it keeps it. */
	bool role_shared;
	/* 1.x: before the role changes above, dev_roles and max_dev become
	 * roles_from's (the array's freshest superblock), as md's
	 * super_1_sync writes every device the whole table: a device that
	 * was out while roles changed (failed, then re-added) must not keep
	 * what it last saw.  NULL: its own are kept. */
	const struct rf_sb *roles_from;
	/* 1.x, this device: rebuilt up to recovery_offset (sectors), or in
	 * sync (RF_SB_MAX_SECTOR: the recovery flag is cleared). */
	bool set_recovery;
	uint64_t recovery_offset;
	/* 1.x, this device: it is (or is no longer) a slot's replacement,
	 * md's MD_FEATURE_REPLACEMENT in its own feature_map.  0.90 has no
	 * such record: md lists a replacement there as a spare. */
	bool set_replacement;
	bool replacement;
	/* 1.x: md's partial parity log switched on (1: its area ppl_size
	 * sectors at ppl_offset from the superblock, feature MULTI_PPL when
	 * the area holds several logs (rf_ppl_area_multi), else PPL) or off
	 * (-1: the feature bits cleared, the fields kept, as md leaves
	 * them); 0: as it is. */
	int set_ppl;
	int16_t ppl_offset;
	uint16_t ppl_size;
	/* This device's md flags (RF_SB_DEVFLAG_*), as md's super_*_sync
	 * writes them from the device's state. */
	bool set_devflags;
	uint8_t devflags;
	/* 1.x, a reshape under way (RF_SB_FEAT_RESHAPE): RF_SB_RESHAPE_AT
	 * records how far it got (reshape_position, array sectors);
	 * RF_SB_RESHAPE_DONE records it finished, as md's end_reshape leaves
	 * the superblock: the new level, layout and chunk the array's, the
	 * new data offset the data offset (data_size grown or shrunk by the
	 * move), the reshape fields and feature bits cleared;
	 * RF_SB_RESHAPE_START records one begun, as md's start_reshape
	 * writes it: raid_disks the new count (delta_disks the change), the
	 * new level, layout and chunk the present ones, position 0, the data
	 * to move to new_offset sectors from each data offset
	 * (RF_SB_FEAT_NEW_OFFSET); RF_SB_RESHAPE_AT with reshape_raid_disks
	 * set gives a superblock that missed the start (a crash while it was
	 * written) the start's fields too.  0: as it is. */
	int set_reshape;
	uint64_t reshape_position;
	/* 1.x: raid_disks becomes this (a raid1 given more mirrors, which
	 * md records at once: no reshape); 0: as it is. */
	int set_raid_disks;
	/* 1.x: level, layout and chunk become these (md's takeovers that
	 * move no data: raid4 <-> raid5 parity-last, raid6 "-6" -> raid5,
	 * raid1 <-> raid5 of two, raid0 <-> raid4/5), and the used size
	 * level_size sectors: md's component size, or for a raid0 its
	 * members' data_size (md's rdev->sectors), the size field 0 as
	 * mdadm writes a raid0's. */
	bool set_level;
	int level, layout;
	uint32_t chunk_sectors;
	uint64_t level_size;
	int reshape_raid_disks;
	int reshape_delta;
	int32_t reshape_new_offset;
	/* With a start (or a missed start): md's reshape_backwards, walked
	 * down from reshape_position (RF_SB_FEAT_RESHAPE_BACK; a shrink). */
	bool reshape_backwards;
	/* With a start (or a missed start): the geometries, when
	 * reshape_geom: level and layout the previous one's as md records
	 * them (a raid5 -> raid6 change: raid6 of a "-6" layout), new_level,
	 * new_layout and new_chunk (sectors) the new one's; else the new ones
	 * are the present ones. */
	bool reshape_geom;
	int reshape_level, reshape_layout, reshape_new_level, reshape_new_layout;
	uint32_t reshape_new_chunk;
	/* The used size of every member becomes set_size sectors (md's
	 * component_size; 0.90 records it in KiB, at most 2^32 - 1).  1.1 and
	 * 1.2 raise data_size to what the member of member_sectors holds past
	 * the data offset, when that is more (md's rdev size change): the
	 * superblock sits at its start, the member may have grown.  1.0 and
	 * 0.90 keep theirs (their superblock sits at the end, where it was
	 * read).  set_size must fit in the data_size written.  0: as it is. */
	uint64_t set_size;
	uint64_t member_sectors;
};
enum { RF_SB_RESHAPE_AT = 1, RF_SB_RESHAPE_DONE = 2, RF_SB_RESHAPE_START = 3 };

/* Apply c to the superblock on a member through io: read it again (it must
 * still be the one in sb: same kind, array and device), change events,
 * utime, state, resync_offset and roles as md does, checksum, write, fsync.
 * sb is updated to what was written.  0 or -errno with a message naming
 * path. */
int rf_sb_update_io(const struct rf_sb_io *io, const char *path, struct rf_sb *sb,
		    const struct rf_sb_change *c, char *err, size_t errlen);

/* Make a new device of the array described by model (a member's
 * superblock, as on disk through model_io) a spare: write a superblock of
 * the same array to io, then fsync.  1.x: a fresh device uuid,
 * dev_number (its entry in dev_roles says spare), no recovery, no bad
 * block log, events as the model's.  0.90: the model's with a spare's
 * descriptor at dev_number (which must be past the raid devices, where
 * md numbers spares), the counts md keeps, and this_disk that
 * descriptor, as md's super_90_sync writes it.  out is what was written.
 * 0 or -errno, with a message naming path. */
int rf_sb_write_spare(const struct rf_sb_io *model_io, const struct rf_sb *model, const struct rf_sb_io *io,
		      const char *path, uint32_t dev_number, struct rf_sb *out, char *err, size_t errlen);

/* Print what mdadm --examine prints for this member. */
void rf_sb_examine(FILE *out, const char *path, const struct rf_sb *sb);
/* " (1.23 GiB 1.32 GB)" as mdadm prints sizes, "" below 5000 KiB; into buf. */
const char *rf_human_bytes(unsigned __int128 bytes, char *buf, size_t len);
/* Whether fd (opened from path) cannot hold a superblock at all: a
 * directory, a character device, a FIFO...  -EISDIR/-EINVAL with why in
 * err, or 0. */
int rf_examine_refuse(int fd, const char *path, char *err, size_t errlen);

/* The same as one JSON object on one line, with md's field names (sysfs
 * and md_p.h: uuid, level, raid_disks, chunk_size in bytes, layout,
 * events, data_offset and the other sizes in sectors, dev_role ...).
 * 0, or -EIO if writing failed. */
int rf_sb_examine_json(FILE *out, const char *path, const struct rf_sb *sb);

/* What mdadm --examine-bitmap (-X) prints for a member whose superblock is
 * sb and whose bitmap header is bsb, nbits bits of which dirty are set;
 * and the same as one JSON object.  rf_bitmap_count_dirty() counts the
 * set bits among the first nbits (bit i in byte i / 8). */
struct rf_bitmap_sb;
void rf_bitmap_examine(FILE *out, const char *path, const struct rf_sb *sb, const struct rf_bitmap_sb *bsb,
		       uint64_t nbits, uint64_t dirty);
int rf_bitmap_examine_json(FILE *out, const char *path, const struct rf_sb *sb, const struct rf_bitmap_sb *bsb,
			   uint64_t nbits, uint64_t dirty);
uint64_t rf_bitmap_count_dirty(const uint8_t *bits, uint64_t nbits);

/* The array uuid as mdadm prints it: 1.x "xxxxxxxx:xxxxxxxx:..." over the
 * bytes; 0.90 as four host-order words.  buf holds at least 36 bytes. */
const char *rf_sb_uuid_str(const struct rf_sb *sb, char *buf);

#endif
