/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sync.h - the sync thread: md's resync, check and repair of an array.
 *
 * One thread per array at most, started by rf_sync_start() and ended by
 * rf_sync_stop(), by reaching the end of the array, or by rf_array_close().
 * Actions and states use md's words (sync_action): "resync", "check",
 * "repair", "idle", "frozen".  Units are md's: sectors of 512 bytes for
 * progress and mismatch_cnt, KiB/s for speeds.
 *
 * Progress counts member sectors for raid1 and raid4/5/6 and array sectors
 * for raid10, as md's sync_completed does.
 */
#ifndef RAIDFUSE_SYNC_H
#define RAIDFUSE_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rf_array;

enum rf_sync_action {
	RF_SYNC_IDLE,
	RF_SYNC_FROZEN,         /* idle, and no resync may start until unfrozen */
	RF_SYNC_RESYNC,         /* write parity / copies everywhere, count nothing */
	RF_SYNC_CHECK,          /* count mismatches, change nothing */
	RF_SYNC_REPAIR,         /* count mismatches and rewrite what differs */
	RF_SYNC_RECOVER,        /* rebuild the devices taking failed members' slots */
};

#define RF_SYNC_SPEED_MIN_DEFAULT 1000          /* KiB/s, md's */
#define RF_SYNC_SPEED_MAX_DEFAULT 200000
#define RF_SYNC_NONE UINT64_MAX                 /* resync_cp: no resync due (md's MaxSector) */

struct rf_sync_status {
	enum rf_sync_action action;     /* running, or IDLE / FROZEN */
	uint64_t done, total;           /* sectors; done is 0 while idle */
	uint64_t mismatch_cnt;          /* sectors found different by the last check/repair */
	unsigned speed;                 /* KiB/s over the last few seconds; 0 while idle */
	unsigned speed_min, speed_max;  /* KiB/s */
	bool speed_min_local, speed_max_local; /* set for this array (md's "local"), not the default ("system") */
	uint64_t resync_cp;             /* where the next resync starts (an interrupted one
					 * resumes; a running one's last checkpoint);
					 * RF_SYNC_NONE: none due (a resync starts at 0) */
	/* raid6: the last block a check pinned on one member (-1: none yet). */
	int bad_member;
	uint64_t bad_sector;            /* array sector of that data block, or member sector of P/Q */
	uint64_t bad_found;             /* how many blocks were pinned so far */
	uint64_t skipped;               /* sectors the running or last walk jumped over as
					 * clean (a re-added device's rebuild with a bitmap) */
	uint64_t mapped;                /* member bytes the running or last walk took from
					 * the members' mappings instead of reading them */
};

/* md's word for an action, and back (-EINVAL for an unknown word; a
 * trailing newline is accepted). */
const char *rf_sync_action_name(enum rf_sync_action act);
int rf_sync_action_parse(const char *word);

/* Start act (RESYNC, CHECK or REPAIR) on a thread of its own; IDLE stops a
 * running action and unfreezes, FROZEN stops it and freezes (md's
 * sync_action store).  Returns 0, -EBUSY when another action runs, -EINVAL
 * for a level with no redundancy, -EROFS to write a read-only array, or
 * -EIO for a degraded parity array (nothing to compare against). */
int rf_sync_request(struct rf_array *a, enum rf_sync_action act);
/* Stop a running action after the region in flight (its writes done);
 * freeze: keep it from starting again until a start or IDLE. */
void rf_sync_stop(struct rf_array *a, bool freeze);
/* Wait until no action runs. */
void rf_sync_wait(struct rf_array *a);

void rf_sync_get(struct rf_array *a, struct rf_sync_status *st);
/* mdstat's progress line while an action runs, as md prints it (no
 * indent, no newline):
 *   [====>................]  check = 22.5% (460800/2046976) finish=0.1min speed=230400K/sec
 * ("resync" for repair, as md).  Returns its length, 0 (buf "") while
 * idle, or -EOVERFLOW. */
int rf_sync_progress_line(struct rf_array *a, char *buf, size_t len);
/* KiB/s up to INT32_MAX (-EINVAL above); 0 restores the default (md's
 * "system").  They take effect at once, also on a running action. */
int rf_sync_set_speed_min(struct rf_array *a, unsigned kib);
int rf_sync_set_speed_max(struct rf_array *a, unsigned kib);

/* Where the next resync starts (md's resync_offset / recovery_cp, in
 * the walk's sectors; the superblock's value after an unclean stop).  At
 * or past the end (RF_SYNC_NONE): none is due.  The notify function hears
 * of it (act IDLE).  -EBUSY while a resync runs. */
int rf_sync_set_resync_cp(struct rf_array *a, uint64_t sector);
/* Called on the sync thread when an action ends: completed (it reached
 * the end) or not (stopped, or an IO error), and the sector it reached;
 * while a resync runs, also at checkpoints (every 1/16 of the walk or a
 * few seconds, as md updates recovery_cp): act RESYNC, completed false,
 * pos the sector below which every row is in sync; and on the caller's
 * thread when rf_sync_set_resync_cp() sets pos (act IDLE, completed false,
 * RF_SYNC_NONE for none).  The superblock keeper records resync_offset
 * from it.  It must not call rf_sync_request(), rf_sync_stop() or
 * rf_sync_wait() (they wait for this thread). */
typedef void (*rf_sync_notify_fn)(struct rf_array *a, enum rf_sync_action act, bool completed, uint64_t pos,
				  void *priv);
void rf_sync_set_notify(struct rf_array *a, rf_sync_notify_fn fn, void *priv);

/* The engine's hooks: rf_array_start() and rf_array_close(). */
int rf_sync_init(struct rf_array *a);
void rf_sync_free(struct rf_array *a);

/* Tests only (NULL otherwise): called by the walk each time it has let go
 * of its lock to look at the foreground load, so that a test can make
 * regions end right there. */
extern void (*rf_sync_test_looked)(void);

#endif
