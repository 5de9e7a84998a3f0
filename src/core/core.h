/* SPDX-License-Identifier: GPL-2.0-or-later */
/* core.h - what services see of the array core (not installed).
 *
 * The array's struct is private to src/core/ and the level modules
 * (core/engine.h).  A service (the superblock state, the bitmap, the sync
 * walk, the management thread) includes this header instead: the device
 * table (core/dev.h), the hooks it registers (core/hooks.h), the array's
 * public accessors (array.h), and the few calls below.  The sync walk
 * (services/sync_walk.c) gets the level's sync work (struct rf_sync_ops, which
 * the level modules fill), the members through an IO queue of its own,
 * the rows' range lock and the recovery checkpoint, all named below.
 * None of them is on the IO fast path of the core itself, which uses
 * engine.h's inline versions.
 *
 * The services' unit tests are clients of this header too (with
 * core/core_test.h, the tests' few looks inside); only the core's own
 * tests (test_engine, test_barrier, test_dev) include engine.h.
 *
 * What it does NOT give: the array's fields, the groups, the barrier's
 * state.
 */
#ifndef RAIDFUSE_CORE_CORE_H
#define RAIDFUSE_CORE_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dev.h"
#include "core/hooks.h"
#include "raidfuse/array.h"

struct rf_bitmap;
struct rf_ioq;
struct rf_range;
struct rf_sbstate;
struct rf_sync;
struct rf_sync_work;

/* Slots (raid_disks): devices [0, n) of the table serve them. */
int rf_array_nslots(const struct rf_array *a);
/* Slots whose device was opened (not "missing"). */
uint64_t rf_array_present(const struct rf_array *a);
/* Faulty slots, and those being rebuilt (md's "degraded" for reads). */
uint64_t rf_array_faulty_read(const struct rf_array *a);
/* The array's bitmap, NULL: none (the superblock state records its
 * events in it). */
struct rf_bitmap *rf_array_bitmap(const struct rf_array *a);
/* The array's superblock state, NULL: none. */
struct rf_sbstate *rf_array_sbstate(const struct rf_array *a);
/* Their services record them as they open (rf_services[]). */
void rf_array_set_sbstate(struct rf_array *a, struct rf_sbstate *s);
void rf_array_set_bitmap(struct rf_array *a, struct rf_bitmap *bm);
/* Whether the sync thread exists (from rf_array_start()). */
bool rf_array_has_sync(const struct rf_array *a);

/* Slots whose device is being rebuilt, and (raid4/5/6) the member sector
 * below which they are. */
uint64_t rf_array_recovering(const struct rf_array *a);
/* Whether the rebuild under way covers only what the bitmap marks (re-adds). */
bool rf_array_recover_dirty_only(const struct rf_array *a);
uint64_t rf_array_recovery_cp(const struct rf_array *a);
/* Whether the members are read-only under a copy-on-write overlay. */
bool rf_array_overlay(const struct rf_array *a);

/* The array's reconfiguration lock (outermost, engine.h): held to read the
 * device table from outside a drain, and around every drain. */
void rf_array_reconf_lock(struct rf_array *a);
void rf_array_reconf_unlock(struct rf_array *a);

/* The management thread's state (member.c), kept by the array. */
struct rf_mgmt;
struct rf_mgmt *rf_array_mgmt(const struct rf_array *a);
void rf_array_set_mgmt(struct rf_array *a, struct rf_mgmt *m);

/* The device called name (md/dev-NAME: its file's base name); its
 * number, or -ENOENT.  reconf_lock held. */
int rf_member_lookup(struct rf_array *a, const char *name);

/* member.c: the management thread (spares taking failed slots, rebuild
 * start and end), and what the sync thread tells it.  The core starts it
 * after every registered service and stops it before them, through the
 * stack's rf_mgmt_ops (hooks.h says why it stands apart):
 * rf_mgmt_service is those four. */
extern const struct rf_mgmt_ops rf_mgmt_service;
int rf_mgmt_start(struct rf_array *a);
void rf_mgmt_stop(struct rf_array *a);
void rf_mgmt_free(struct rf_array *a);
void rf_mgmt_kick(struct rf_array *a);
/* A resync is due but a rebuild runs or is to run first: the management
 * thread starts the resync once no rebuild is left (md's order). */
void rf_mgmt_resync_after_rebuild(struct rf_array *a);
/* The RECOVER walk ended: completed, or stopped at pos (member sectors). */
void rf_recovery_ended(struct rf_array *a, bool completed, uint64_t pos);

/* Hot replace (core/replace.c).  Slots with a replacement attached,
 * and those whose replacement lost a write (detach it). */
uint64_t rf_replace_mask(const struct rf_array *a);
uint64_t rf_replace_failed_mask(const struct rf_array *a);
/* Slot k's replacement (a device index), or -1. */
int rf_replace_dev_of(const struct rf_array *a, int k);
/* The slot device dev is the replacement of, or -1. */
int rf_replacement_slot(const struct rf_array *a, int dev);
/* Device dev (no slot) becomes slot k's replacement: from now on every
 * write of slot k reaches it too.  Or no longer.  Both with every request
 * drained (rf_barrier_quiesced_all()). */
void rf_replace_attach(struct rf_array *a, int k, int dev);
void rf_replace_detach(struct rf_array *a, int k);
/* Slot k's replacement lost a write or an fsync (what happened, with err;
 * or err 0: it was marked faulty): it is marked, no more writes reach it,
 * the management thread is kicked.  Any thread; logs once. */
void rf_replace_failed(struct rf_array *a, int k, int err, const char *what);

/* ---- what the level decides (core/level.c asks it) ---- */

/* md's bitmap_sector for geometry g (its level's, found in the program's
 * stack): the rows [*lo, *hi) a write of len > 0 bytes at array byte off
 * may touch on any member, in the bitmap's units, not clipped to them.
 * false (nothing set): the level keeps no bitmap (raid0), or none of the
 * stack serves g->level. */
bool rf_level_bitmap_range(const struct rf_geom *g, uint64_t off, uint64_t len, uint64_t *lo, uint64_t *hi);
/* The sectors of slot's member the array's geometry uses (md's
 * rdev->sectors): the level's answer, dev_sectors unless its members
 * differ (raid0's zones). */
uint64_t rf_level_slot_sectors(const struct rf_array *a, int slot);
/* Why the array's level does not change the sectors its members use
 * (md's resize), in words; NULL: it does. */
const char *rf_level_resize_refused(const struct rf_array *a);

/* Slot member failed (idempotent, logs once): true when it is faulty
 * now; false when the level keeps it as the last copy of some data (the
 * array is broken then: see rf_level_ops.keeps_last). */
bool rf_member_fail(struct rf_array *a, int member, int err, const char *what, uint64_t off);

/* Run fn(arg) with writes drained (none in flight, new ones held at the
 * barrier), then let the held ones go; fn's result.  Blocks the caller:
 * never from a worker, a req->done() callback or a hook. */
int rf_barrier_quiesced(struct rf_array *a, int (*fn)(void *arg), void *arg);
/* The same with reads drained too (member IO stops entirely): for
 * changes of the device table. */
int rf_barrier_quiesced_all(struct rf_array *a, int (*fn)(void *arg), void *arg);

/* ---- a reshape under way (services/reshape.c) ---- */

/* Its geometries and position (layout.h); the walk alone moves it. */
const struct rf_reshape *rf_array_reshape_state(const struct rf_array *a);
/* Before the array serves: the reshape will not be continued (why, in
 * the log); the array is served read-only, as the two geometries
 * stand. */
void rf_array_reshape_readonly(struct rf_array *a, const char *why);
/* Inside rf_barrier_quiesced() (writes drained), with the rows below
 * position written in the new geometry and recorded: reads are drained
 * too while the position moves there, and cached stripe heads dropped. */
void rf_array_reshape_commit(struct rf_array *a, uint64_t position);
/* Inside rf_barrier_quiesced_all(): a reshape of a raid4/5/6 array begins:
 * the devices at [slots, to->raid_disks) (spares put there by the caller,
 * or empty places that stay empty) take the new slots, the array takes two
 * geometries (from as the previous, to as the new one; level, layout,
 * raid_disks and chunk given, the rest the array's; position 0,
 * forwards), the slots in prev_absent hold nothing in the previous one (a
 * raid5 -> raid6 change: from is the raid6 whose Q the added member would
 * hold; a raid0 grown through a raid4: its P slot, which a spare the
 * caller put there takes), and each device's data is
 * to move by `move` sectors (its new data offset: lower when negative).
 * backwards: md's reshape_backwards, from the new geometry's end down (a
 * shrink: fewer slots than it has, which stay until it ends).  backup:
 * the walk keeps mdadm's backup file of its critical section (struct
 * rf_reshape backup: the data may stay where it is).  0, or -errno with
 * why (nothing changed). */
int rf_array_reshape_begin(struct rf_array *a, const struct rf_geom *to, const struct rf_geom *from,
			   uint64_t prev_absent, int64_t move, bool backwards, bool backup, char *err, size_t errlen);
/* Inside rf_barrier_quiesced_all(): a raid1 takes raid_disks slots, the
 * new ones empty (missing and faulty, as md's grown raid1 is degraded
 * until spares take them: the management thread's rebuild).  0, or
 * -errno with why (nothing changed). */
int rf_array_add_mirrors(struct rf_array *a, int raid_disks, char *err, size_t errlen);
/* Inside rf_barrier_quiesced_all(): a raid1 keeps raid_disks slots (fewer),
 * as md's raid1 shrinks: the slots with a device (faulty ones too: md
 * wants them removed first) move to the front in their order, the empty
 * ones behind them go.  0, or -EBUSY (more devices than raid_disks: with
 * why; nothing changed). */
int rf_array_remove_mirrors(struct rf_array *a, int raid_disks, char *err, size_t errlen);
/* Inside rf_barrier_quiesced_all(): md's takeovers that move no data: the
 * array becomes level/layout/chunk_sectors over raid_disks slots, the
 * same size: as many slots as it has, one more (an empty one: raid0 ->
 * raid4/5, degraded), or one fewer (the last slot's device, which held
 * only P or Q, becomes a spare).  The level ops may change (raid1 <->
 * raid5 of two, raid0 <-> raid4/5): the worker groups are made again for
 * them.  0, or -errno with why (nothing changed). */
int rf_array_takeover(struct rf_array *a, int level, int layout, int raid_disks, uint32_t chunk_sectors, char *err,
		      size_t errlen);
/* Inside rf_barrier_quiesced_all(): a takeover that moves devices between
 * slots (md's raid0 <-> raid10 near-2, raid1 -> raid0): old slot i's
 * device takes slot to_slot[i] of the new raid_disks, or (-1) leaves the
 * slots as a spare (an empty place: gone); a new slot no device maps to
 * is an empty place.  The caller knows the result survives (every copy
 * it needs is kept).  0, or -errno with why (nothing changed). */
int rf_array_takeover_slots(struct rf_array *a, int level, int layout, int raid_disks, uint32_t chunk_sectors,
			    const int *to_slot, char *err, size_t errlen);
/* The level the array takes when the reshape under way ends (-1: as it
 * is; not recorded).  Set inside rf_barrier_quiesced_all(). */
void rf_array_set_reshape_then(struct rf_array *a, int level);
int rf_array_reshape_then(const struct rf_array *a);
/* Bytes of each member a stripe head holds (tuning.stripe_size, at most
 * the chunk). */
uint32_t rf_array_stripe_size(const struct rf_array *a);
/* mdadm's backup file for a reshape in place (array.backup_file,
 * --backup-file, md/backup_file): set (path absolute; NULL: none), 0 or
 * -ENOMEM; read into buf, false when there is none.  Device lock taken:
 * not with it held. */
int rf_array_set_backup_file(struct rf_array *a, const char *path);
bool rf_array_backup_file(struct rf_array *a, char *buf, size_t len);
/* The file at path was removed: the array names no backup file any more,
 * unless another was set meanwhile (then it stays).  Whether it was
 * dropped.  Device lock taken. */
bool rf_array_drop_backup_file(struct rf_array *a, const char *path);
/* Inside rf_barrier_quiesced_all(), every row in the new geometry: the
 * reshape ends; each slot's new data offset becomes its data offset, the
 * array takes the new geometry's size.  0, or -EINVAL with why. */
int rf_array_reshape_finish(struct rf_array *a, char *err, size_t errlen);
/* Inside rf_barrier_quiesced_all(): every member's used size becomes
 * dev_sectors (md's update_size, the level's resize): the geometry's size
 * follows, the image's too unless md/array_size set it.  -EINVAL with why
 * (nothing changed): a geometry that does not take it, or a set
 * array_size past the new geometry's (md's raid5_resize). */
int rf_array_set_dev_sectors(struct rf_array *a, uint64_t dev_sectors, char *err, size_t errlen);
/* Inside rf_barrier_quiesced_all(): the image serves bytes (md/array_size,
 * md's external_size), at most the geometry's size; 0: the geometry's
 * size again (md's "default").  Not recorded in the superblocks, as md
 * records none.  0, or -E2BIG. */
int rf_array_set_ext_size(struct rf_array *a, uint64_t bytes);
/* md/array_size as set, in bytes; 0: none set. */
uint64_t rf_array_ext_size(const struct rf_array *a);
/* After that, once whoever shows the size was told (rf_array_resized()):
 * rf_array_reshape() says no reshape from now on, and sync actions may
 * run. */
void rf_array_reshape_ended(struct rf_array *a);
/* At open, before the array serves: a reshape's position moved to
 * position, recorded there already (its critical section restored from
 * mdadm's backup file, services/reshape.c). */
void rf_array_reshape_restored(struct rf_array *a, uint64_t position);
/* At open, before the array serves: the slots in mask hold nothing in a
 * reshape's previous geometry (layout.h struct rf_reshape prev_absent). */
void rf_array_set_prev_absent(struct rf_array *a, uint64_t mask);

/* The array serves (rf_sbstate_start_resync() says so, after a frozen
 * start has frozen the sync actions): background work that waits for it
 * may begin. */
void rf_array_set_serving(struct rf_array *a);
bool rf_array_serving(const struct rf_array *a);
/* The array's size changed: tell whoever rf_array_on_resize() named.
 * No lock held. */
void rf_array_resized(struct rf_array *a);

/* ---- the sync walk (services/sync.c, sync_walk.c) ---- */

/* A level's sync work (md's sync_request), the level's table.
 * total: the sectors the walk covers, in its units (member sectors, or
 * array sectors); clip: the sectors of a region at pos, at most n;
 * write_rows: the rows [*lo, *hi) a write of len bytes at array byte off
 * may touch, its parity included, rounded out to whole stripe heads;
 * degraded: whether check, repair and resync still compare with the
 * members in missing (faulty or being rebuilt) gone, NULL: never;
 * no_redundancy: whether with the members in missing gone no row keeps
 * copies or parity to compare, so that a resync has nothing to do (md's
 * raid1 and raid5 sync_request skip every row then), NULL: never said
 * (raid10: which rows keep a copy depends on which members are missing);
 * region: the work of one region (core/syncwork.h), its rows locked by
 * the walk, 0 or -errno; hold_rebuilt: a rebuilt region's rows stay
 * locked until recovery_cp passes them (the walk unlocks them when it
 * retires the region, in order), as the level's writes at and past
 * recovery_cp skip the devices being rebuilt (raid4/5/6); false: they
 * unlock when the region's work ends (mirrors write those devices
 * always).
 * dev_offset: the member sector below which a rebuild that walked
 * [0, pos) wrote every device being rebuilt (md's recovery_offset);
 * walk_start: where a rebuild resumes from such an offset.  Optional, both: NULL when the walk goes in member sectors.
 * recover: optional, the table a rebuild walks by when its units differ
 * (raid10: member sectors, md's recovery by device sector); a rebuild
 * that the bitmap drives keeps this one (the bitmap's units). */
struct rf_sync_ops {
	uint64_t (*total)(const struct rf_array *a);
	uint64_t (*clip)(const struct rf_array *a, uint64_t pos, uint64_t n);
	uint64_t (*dev_offset)(const struct rf_array *a, uint64_t pos);
	uint64_t (*walk_start)(const struct rf_array *a, uint64_t dev_offset);
	void (*write_rows)(const struct rf_array *a, uint64_t off, uint32_t len, uint64_t *lo, uint64_t *hi);
	bool (*degraded)(const struct rf_array *a, uint64_t missing);
	bool (*no_redundancy)(const struct rf_array *a, uint64_t missing);
	int (*region)(struct rf_sync_work *w);
	bool hold_rebuilt;
	const struct rf_sync_ops *recover;
};

/* The level's sync work; NULL: the level has none (no redundancy). */
const struct rf_sync_ops *rf_array_sync_ops(const struct rf_array *a);
/* The walk's state (sync.c's), kept by the array: from rf_sync_init()
 * to rf_sync_free(). */
struct rf_sync *rf_array_sync(const struct rf_array *a);
void rf_array_set_sync(struct rf_array *a, struct rf_sync *s);
/* Whether foreground IO is in flight now: requests past the drain
 * barrier, and writes waiting for a sync region (they left it). */
bool rf_array_fg_busy(const struct rf_array *a);
/* The byte offset on device m's backend of its data sector sec (its own
 * data_offset added). */
uint64_t rf_array_dev_sector_off(const struct rf_array *a, int m, uint64_t sec);
/* Open q over the slots' devices on the array's member backend (the
 * workers' own: liburing, an overlay, what a test gave), depth entries;
 * on the thread that will use it.  0 or -errno. */
int rf_array_ioq_open(struct rf_array *a, struct rf_ioq *q, int depth);
/* The same with the inline workers' backend: every operation runs on the
 * calling thread in rf_ioq_submit() (pread/pwrite, an overlay's layer,
 * what a test gave), through the same fault injection and NBD paths. */
int rf_array_inline_ioq_open(struct rf_array *a, struct rf_ioq *q, int depth);
/* A rebuild's checkpoint: raid4/5/6 writes at and past it skip the
 * devices being rebuilt.  Set it only with the rows it passes written
 * (a region retired, or writes held). */
void rf_array_set_recovery_cp(struct rf_array *a, uint64_t cp);

/* Hold every new foreground write at the barrier and wait for those in
 * flight to end; then resubmit the held ones.  Reads go on.  Blocks the
 * caller; takes reconf_lock until the release. */
void rf_writes_hold(struct rf_array *a);
void rf_writes_release(struct rf_array *a);
/* Writes held: drop the cached blocks of stripe heads at member sectors
 * [lo, hi), which the caller rewrote behind them. */
void rf_stripe_cache_forget(struct rf_array *a, uint64_t lo, uint64_t hi);

/* The sync walk's rows (rangelock.h).  begin: arm the array's range lock
 * with writes drained (from now on every write is admitted there and
 * tracked, its rows those of units, the walk's sync ops: NULL, the
 * level's own); end: disarm, with no range locked.  Blocks the caller.
 * The walk locks each region's rows [lo, hi) with rf_array_rows_lock()
 * (writes into them wait, those in flight end first) before the level's
 * work and unlocks them with rf_array_rows_unlock() (the writes that
 * waited go on, oldest first). */
void rf_sync_rows_begin(struct rf_array *a, const struct rf_sync_ops *units);
void rf_sync_rows_end(struct rf_array *a);
void rf_array_rows_lock(struct rf_array *a, struct rf_range *r, uint64_t lo, uint64_t hi);
void rf_array_rows_unlock(struct rf_array *a, struct rf_range *r);
/* Rows [lo, hi) locked: drop their cached stripe heads (takes
 * reconf_lock). */
void rf_sync_rows_forget(struct rf_array *a, uint64_t lo, uint64_t hi);
/* The rows [*lo, *hi) of a write of len bytes at array byte off: the
 * walk's units' write_rows, else the level's (a level with sync work
 * only). */
void rf_array_write_rows(const struct rf_array *a, uint64_t off, uint32_t len, uint64_t *lo, uint64_t *hi);

#endif
