/* SPDX-License-Identifier: GPL-2.0-or-later */
/* dev.h - one object per device of an array (not installed).
 *
 * A struct rf_dev is everything the program knows of one device, as md's
 * md_rdev is: its backend (the descriptors and fault injector the member
 * IO queues use), what was opened, its own data offset and size, its
 * state, its superblock as last written and the bitmap's place on it.
 * The array holds ONE table of them, a->devs[]: [0, nmembers) serve the
 * slots (index = role), [nmembers, ndevs) are spares and faulty devices
 * without a slot.  No other module keeps a per-device array: services
 * read and write their own fields here and learn of a change of the
 * table through their dev_changed hook (core/hooks.h).
 *
 * Who protects what:
 *  - the table itself (which device sits at which index, ndevs, path,
 *    id, io, size, data_offset, flags, prev_slot): changed only by
 *    rf_dev_swap() and the table edits of the management code
 *    (member.c, hotreplace.c, memberctl.c), under reconf_lock with
 *    every request drained (rf_barrier_quiesced_all: no member IO in
 *    flight) AND the device lock (rf_devs_lock()), which the services'
 *    own threads take to walk the table outside a drain (superblock and
 *    bitmap writes);
 *  - nr_errors: atomic;
 *  - sb_has, sb_io, sb: the superblock state's (sbstate.c), device lock
 *    held;
 *  - bm_has, bm_at, bm_fresh: the bitmap's (bitmap.c), device lock and
 *    bm->lock held.
 * A slot's faulty state is the array's faulty mask (atomic, set by the IO
 * path); a device without a slot keeps it in flags.
 *
 * Lock order (every lock of the array, one place): see core/engine.h.
 */
#ifndef RAIDFUSE_CORE_DEV_H
#define RAIDFUSE_CORE_DEV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raidfuse/devopen.h"
#include "raidfuse/ioq.h"
#include "raidfuse/memberid.h"
#include "raidfuse/super.h"

struct rf_array;
struct rf_nbd;
struct rf_timed_io;

struct rf_dev {
	/* The backend: what the member IO queues read at each issue (the
	 * queues see a->devs[i].io for slot i, through their stride). */
	struct rf_ioq_member io;        /* fd (-1: missing), fd_direct, align, layer, fault,
					 * map (owned) */
	struct rf_devopen_id id;        /* what was opened, to tell it still is that */
	char *path;                     /* as given; "missing" for an empty slot */
	uint64_t size;                  /* bytes */
	uint64_t data_offset;           /* bytes: its own (md lets members differ) */
	uint64_t new_data_offset;       /* bytes: where the new geometry of a reshape under way
					 * starts on it (md's rdev->new_data_offset); = data_offset
					 * otherwise */
	unsigned flags;                 /* enum rf_dev_flags */
	int prev_slot;                  /* the slot a faulty device lost; -1: none */
	atomic_uint_fast64_t nr_errors; /* member IOs that failed */
	/* Being rebuilt in its slot (a->recovering): member sectors below
	 * it hold the slot's data (md's rdev->recovery_offset).  Set with
	 * writes drained, or moved up by the rebuild past rows it holds
	 * locked; read by the IO path (rf_faulty_at()). */
	atomic_uint_fast64_t recovery_offset;
	/* The superblock (sbstate.c): events are sb.events, as last written. */
	bool sb_has;                    /* it has one here */
	struct rf_sb_io sb_io;          /* how it is read and written (the overlay's, if any);
					 * a file's or block device's through tio */
	struct rf_timed_io *tio;        /* its metadata IO and flushes, each within the array's
					 * member_timeout (timedio.h); NULL: an NBD export (its
					 * commands have their own) or none yet */
	struct rf_sb sb;
	/* The bitmap's copy on it (bitmap.c). */
	bool bm_has;
	bool bm_fresh;                  /* new in its slot: gets all of the bitmap first */
	uint64_t bm_at;                 /* byte offset of the bitmap */
};

/* Device i of a's table. */
struct rf_dev *rf_dev_get(struct rf_array *a, int i);
/* How many devices the table holds now (device lock or reconf_lock held). */
int rf_devs_count(const struct rf_array *a);
/* The member IO queues' view of the devices' backends (all of the table:
 * slots, and the replacements writes reach too). */
struct rf_ioq_devs rf_devs_ioq(struct rf_array *a);

/* The device table's lock (see above); services take it before their own. */
void rf_devs_lock(struct rf_array *a);
void rf_devs_unlock(struct rf_array *a);

/* Which device d is (memberid.h): its file, block device or NBD export,
 * and the device UUID of its superblock when it has one (sb_has).  A
 * device with nothing open (a missing slot) is RF_MEMBER_NONE. */
void rf_dev_member_id(const struct rf_dev *d, struct rf_member_id *m);
/* The device of a->devs[0..n) that is the same device as m (memberid.h:
 * one file by a link or a loop device over it, one block device, one NBD
 * export, one md device UUID), or -1.  reconf_lock or the device lock
 * held. */
int rf_same_member(struct rf_array *a, int n, const struct rf_member_id *m);

/* Open, size (BLKGETSIZE64 for a block device, st_size for a file),
 * check and lock the file at path as device d of a (filled: io, id, size;
 * path, flags and data_offset are the caller's), refusing one that is the
 * same device as one already in the table (rf_same_member()).  who names it in messages
 * ("member 2 (d2.img)").  ro: read-only, a shared lock.  0, or -errno with
 * a one-line message in err; on error nothing stays open. */
int rf_dev_open_into(struct rf_array *a, struct rf_dev *d, const char *path, const char *who, bool ro,
		     char *err, size_t errlen);
/* The same for an NBD URI (nbd.h) as path, which rf_dev_open_into() does
 * itself: connected within the array's member_timeout, sized by the
 * export, io.nbd set and no fds; the same export as a device in the
 * table, by whatever URI, is refused. */

/* How d's superblock is read and written: through its NBD connection, or
 * its descriptor.  0 or -errno. */
int rf_dev_sb_io(struct rf_dev *d, struct rf_sb_io *io);
/* d's member IO mode in force (ioq.h struct rf_ioq_member): RF_MEMBER_IO_DIRECT
 * or _BUFFERED; -EOPNOTSUPP for an NBD export (no page cache). */
int rf_dev_io_mode(const struct rf_dev *d);
/* Put d in mode (auto: direct unless its file is in memory or refuses
 * O_DIRECT): going direct, what buffered writes left in the page cache is
 * flushed and the cache dropped; its superblock IO follows.  Table edit
 * rules (drained, device lock).  0, or -errno with why in err (an NBD
 * export, an overlay's member, O_DIRECT refused). */
int rf_dev_set_io_mode(struct rf_dev *d, int mode, char *err, size_t errlen);

/* What an NBD device's new connection must still be (its old one died
 * with a failure): taken under reconf_lock by rf_dev_nbd_was() (uri
 * malloc'ed, the caller frees it), then connected and checked without
 * any lock by rf_dev_nbd_reconnect(), which may take the timeout. */
struct rf_dev_nbd_was {
	char *uri;
	unsigned timeout_ms;
	uint64_t size;
	bool sb_has;
	uint8_t uuid[16], device_uuid[16];
	uint32_t dev_number;
};
/* 0, -EOPNOTSUPP for a file, -ENOMEM. */
int rf_dev_nbd_was(const struct rf_dev *d, struct rf_dev_nbd_was *was);
/* Connect to was->uri, checked to be the same device: the same
 * superblock (array, device) when it had one, at least its size.  0, or
 * -errno with a message naming the URI in err. */
int rf_dev_nbd_reconnect(const struct rf_dev_nbd_was *was, struct rf_nbd **out, char *err, size_t errlen);
/* d's connection is c from now on (the old one closed).  Table edit
 * rules: drained, device lock held. */
void rf_dev_nbd_replace(struct rf_dev *d, struct rf_nbd *c);
/* An NBD device's command timeout, ms; -EOPNOTSUPP for a file. */
int rf_dev_timeout(struct rf_dev *d, unsigned *ms);
int rf_dev_set_timeout(struct rf_dev *d, unsigned ms);

/* Close what d holds (descriptors, layer, fault injector, path) and zero
 * it; fd fields become -1. */
void rf_dev_release(struct rf_dev *d);
/* A device slot of the table set to nothing (fds -1, no slot). */
void rf_dev_init(struct rf_dev *d);

/* Devices i and j trade places in the table (a spare takes a slot, a
 * device leaves): the ONE way a device moves.  Every service hears of
 * both through dev_changed.  Table edit rules above. */
void rf_dev_swap(struct rf_array *a, int i, int j);
/* Device i's entry changed in place (its superblock, or it left): tell
 * the services. */
void rf_dev_changed(struct rf_array *a, int i);

/* At open: slot i's device was being rebuilt and holds its slot's data
 * below offset (sectors): it resumes as a spare in its slot, rebuilt
 * from the lowest such offset. */
void rf_dev_resume_recovery(struct rf_array *a, int i, uint64_t offset);
/* Device i's own rebuild checkpoint (its recovery_offset). */
uint64_t rf_dev_recovery_offset(struct rf_array *a, int i);

/* ---- table edits (reconf_lock, everything drained, the device lock) ---- */

/* A new empty entry at the end of the table: its index, or -ENOSPC. */
int rf_dev_append(struct rf_array *a);
/* Close device i (not a slot's) and close the gap with the last one. */
void rf_dev_drop(struct rf_array *a, int i);
/* Slot k lost its device (a "missing" placeholder is there now): faulty,
 * not present, not being rebuilt. */
void rf_slot_vacated(struct rf_array *a, int k);
/* Slot k's new device starts being rebuilt (from 0; dirty_only: only
 * what the bitmap marks): present, no longer faulty, and nothing the
 * stripe cache held of the old device survives. */
void rf_slot_rebuild_start(struct rf_array *a, int k, bool dirty_only);
/* Slot k's device is rebuilt. */
void rf_slot_rebuilt(struct rf_array *a, int k);
/* The rebuild walk is over: the next starts from 0, everything. */
void rf_recovery_reset(struct rf_array *a);
/* Slots being rebuilt whose device failed meanwhile are just faulty. */
void rf_recovery_drop_faulty(struct rf_array *a);
/* The devices' write-mostly or failfast flags, or which of them could be
 * lost, changed: the raid1 read mask and each slot's io.failfast (set
 * only while the array survives losing that device, as md) follow. */
void rf_devs_flags_changed(struct rf_array *a);

/* Whether device i is faulty: a slot's by the array's mask, the others by
 * their flags. */
bool rf_dev_faulty(struct rf_array *a, int i);
/* Device i failed a write of what (its superblock, the bitmap, a flush):
 * a slot's member is failed as by an IO error, another device is marked
 * faulty. */
void rf_dev_fail(struct rf_array *a, int i, int err, const char *what, uint64_t off);
/* fsync every device with a superblock that is not faulty (slots_only:
 * only those in a slot), through its sb_io; one that fails is failed.
 * why names what the flush is for in messages.  Device lock held. */
void rf_devs_flush(struct rf_array *a, bool slots_only, const char *why);

#endif
