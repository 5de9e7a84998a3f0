/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sbstate.h - the array's clean/dirty state and events, kept in the
 * members' md superblocks as md keeps them (not installed).
 *
 * md's rule, which a crash must not break: no write reaches a member while
 * the superblocks say "clean".  So the first write after the array was
 * clean marks every in-sync member dirty (events + 1, resync_offset 0) and
 * waits until that is on disk; once writes have stopped for a while (md's
 * safe_mode_delay, 200 ms) and at shutdown, the array is marked clean
 * again (events + 1) with writes drained.  A member that fails is recorded
 * as faulty in the others' superblocks (events + 1).  After a kill -9 the
 * superblocks stay dirty, and the next assemble says a resync is due.
 *
 * Arrays without superblocks (metadata = "none"), read-only ones and raid0
 * (which md never marks dirty: there is nothing to resync) have no state:
 * a->sbstate is NULL and every call below is a no-op for NULL.
 *
 * Each device's superblock, as last written, and how it is written are
 * its own fields of the device table (core/dev.h: sb_has, sb_io, sb);
 * the array's IO path reaches this module only through its hooks
 * (core/hooks.h), registered by rf_sbstate_open().
 *
 * Lock order (engine.h): reconf_lock, then the device lock, then s->lock
 * (every writer of superblocks holds the device lock first: it walks the
 * device table); the timer's lock (bgthread.h) is only ever held alone.
 */
#ifndef RAIDFUSE_SBSTATE_H
#define RAIDFUSE_SBSTATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "raidfuse/bgthread.h"
#include "raidfuse/super.h"

struct rf_array;

/* s->mode.  DIRTY -> DIRTY_IDLE each timer period; a write turns
 * DIRTY_IDLE back into DIRTY; a whole period in DIRTY_IDLE makes it CLEAN. */
enum rf_sbs_mode { RF_SBS_CLEAN, RF_SBS_DIRTY_IDLE, RF_SBS_DIRTY };

#define RF_SAFE_MODE_MS 200

struct rf_sbstate {
	atomic_int mode;                /* enum rf_sbs_mode; CLEAN/DIRTY change under lock */
	atomic_bool unrecorded;         /* a member failed and is not recorded yet */
	struct rf_array *a;
	pthread_mutex_t lock;           /* superblock writes and the fields below; after the
					 * device lock, before bm->lock (engine.h) */
	uint64_t events;                /* the array's count, as last written */
	uint64_t resync_offset;         /* where a resync is due; RF_SB_MAX_SECTOR: none */
	uint64_t recorded;              /* slots recorded as faulty */
	bool reconf;                    /* the table changes (the reconf hook): failed
					 * members are recorded after */
	uint64_t reshape_recorded;      /* a reshape's position as the superblocks last say it */
	int n;                          /* slots */
	/* the timer thread: records failed members when kicked, and after
	 * each idle period (RF_SAFE_MODE_MS; tests change it with
	 * rf_bg_set_period(&s->timer, ms)) marks the array clean */
	struct rf_bgthread timer;
	atomic_uint nr_dirty, nr_clean, nr_faulty;   /* updates written (stats, tests) */
	/* lock: one update's work, each device's part written at once
	 * (write_change()) */
	struct rf_sb model_sb;          /* the freshest superblock's, as it was before */
	struct rf_sb_change mine[RF_MAX_DEVS];
	int mine_r[RF_MAX_DEVS];
	bool mine_do[RF_MAX_DEVS];
	char mine_err[RF_MAX_DEVS][256];
};

/* Read the superblocks of a's present devices (through their overlays,
 * if any) into the device table and set up the state; *out stays NULL
 * when no member has one.  0, or -errno with a message naming the
 * member. */
int rf_sbstate_open(struct rf_array *a, struct rf_sbstate **out, char *err, size_t errlen);
/* Start the idle timer (after any fork).  0 or -errno. */
int rf_sbstate_start(struct rf_sbstate *s);
/* Before the start: the array's parity is consistent again (a partial
 * parity log was replayed): no resync is due; the superblocks say clean
 * and in sync (events + 1).  0 or -errno. */
int rf_sbstate_in_sync(struct rf_sbstate *s);
/* Writes drained: record md's partial parity log switched on (its area
 * size sectors at offset from each superblock) or off in every
 * superblock (events + 1).  0 or -errno. */
int rf_sbstate_set_ppl(struct rf_sbstate *s, bool on, int16_t offset, uint16_t size);
/* Stop the timer thread (the state is kept). */
void rf_sbstate_stop(struct rf_sbstate *s);
/* Record what failed, mark clean if dirty (nothing may be in flight), free. */
void rf_sbstate_close(struct rf_sbstate *s);
/* A member was marked faulty: record it soon. */
void rf_sbstate_kick(struct rf_sbstate *s);

int rf_sbstate_write_start_slow(struct rf_sbstate *s);

/* Device changes (member.c, hotreplace.c, memberctl.c), each under the
 * engine's reconf_lock with every request drained and the device lock
 * held (rf_devs_lock()).  The writers return 0, or -errno (with a
 * message in err where there is one); a device whose superblock cannot
 * be written is failed.  Each is a no-op for NULL. */
/* Device dev (just added to the table) becomes a spare: its own
 * superblock, and a spare role for it in everyone's. */
int rf_sbstate_add_spare(struct rf_sbstate *s, int dev, char *err, size_t errlen);
/* Device dev serves slot (-1: a spare again), rebuilt up to
 * recovery_offset sectors (RF_SB_MAX_SECTOR: in sync). */
int rf_sbstate_set_slot(struct rf_sbstate *s, int dev, int slot, uint64_t recovery_offset);
/* Device dev (attached by rf_replace_attach()) is slot's replacement,
 * copied up to recovery_offset sectors (RF_SB_MAX_SECTOR: all of it):
 * the slot's role beside the device it replaces in everyone's roles, and
 * md's replacement flag in its own superblock (1.x; 0.90 keeps it a
 * spare, as md does). */
int rf_sbstate_set_replacement(struct rf_sbstate *s, int dev, int slot, uint64_t recovery_offset);
/* Device dev, detached, is no longer a replacement: faulty in everyone's
 * roles when it lost a write, else a spare again (1.x; 0.90 lists it as a
 * spare all along). */
int rf_sbstate_drop_replacement(struct rf_sbstate *s, int dev, bool lost);
/* A reshape under way (1.x): every member's superblock records that the
 * rows below position (array sectors) are in the new geometry, or (done)
 * that it ended (super.h RF_SB_RESHAPE_DONE); the members are flushed
 * first.  0, or -EIO when the array failed. */
int rf_sbstate_reshape(struct rf_sbstate *s, bool done, uint64_t position);
/* The slots changed (a raid1 given or giving up mirrors): every
 * superblock records the array's slot count and each slot's device in
 * its slot (1.x).  Every request drained.  0, or -EIO when the array
 * failed. */
int rf_sbstate_set_raid_disks(struct rf_sbstate *s);
/* A takeover (rf_array_takeover()) done: every superblock records the
 * array's level, layout, chunk, used size and slot count (md's raid4
 * layout 0), each slot's device in its slot, a device that left the last
 * slot a spare.  From a raid0: no resync is due (md's takeover sets
 * recovery_cp so), and the superblocks follow the sync walk from now on.
 * Every request drained.  0, or -EIO when the array failed. */
int rf_sbstate_takeover(struct rf_sbstate *s, int from_level);
/* The used size of the members changed (md's component_size): every
 * superblock records sectors, a 1.1/1.2 one its member's data area grown
 * to the member's size (struct rf_dev size, refreshed first).  Every
 * request drained.  0, or -EIO when the array failed. */
int rf_sbstate_set_size(struct rf_sbstate *s, uint64_t sectors);
/* A reshape begins (1.x), the array's two geometries set
 * (rf_array_reshape_begin()): the devices in the slots take those roles,
 * and every superblock records the reshape (super.h RF_SB_RESHAPE_START:
 * the geometries, raid_disks, delta_disks the change of the member count,
 * new_offset: sectors from each data offset).  Every request drained.
 * 0, or -EIO when the array failed. */
int rf_sbstate_reshape_start(struct rf_sbstate *s, int32_t new_offset);
/* Device dev is faulty in everyone's roles (before it leaves its slot). */
int rf_sbstate_mark_faulty(struct rf_sbstate *s, int dev);
/* Device dev's rebuild reached recovery_offset (RF_SB_MAX_SECTOR: done). */
int rf_sbstate_set_recovery(struct rf_sbstate *s, int dev, uint64_t recovery_offset);
/* Device dev's write-mostly or failfast flag changed: every superblock is
 * written again, each with its device's flags (md's devflags). */
int rf_sbstate_set_flags(struct rf_sbstate *s, int dev);

/* Before a write request is split: returns once the superblocks say
 * dirty.  The request must already count as in flight at the drain
 * barrier (so marking clean waits for it).  0, or -EIO when marking dirty
 * failed the array.  Lock-free while dirty: one atomic load. */
static inline int rf_sbstate_write_start(struct rf_sbstate *s)
{
	/* Pairs with the release store in rf_sbstate_write_start_slow(): a
	 * writer that sees DIRTY sees the superblocks on disk. */
	if (!s || (atomic_load_explicit(&s->mode, memory_order_acquire) == RF_SBS_DIRTY &&
		   !atomic_load_explicit(&s->unrecorded, memory_order_relaxed)))
		return 0;
	return rf_sbstate_write_start_slow(s);
}

#endif
