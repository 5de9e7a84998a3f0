/* SPDX-License-Identifier: GPL-2.0-or-later */
/* detail.h - an array's state as mdadm --detail shows it, read from the
 * control files of its mount; the raidfuse mounts of this user.
 *
 * Everything here is read from the files under MOUNTPOINT/md, from
 * MOUNTPOINT/mdstat (what the daemon serves there) and from the mount
 * table: nothing asks the daemon otherwise, nothing reads a member.  The words and numbers are
 * mdadm's (Detail.c): "clean, degraded, recovering", Active/Working/
 * Failed/Spare Devices, the device table; the exit status is mdadm
 * --detail --test's.
 */
#ifndef RAIDFUSE_DETAIL_H
#define RAIDFUSE_DETAIL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "raidfuse/array.h"

/* mdadm --detail --test's exit status. */
#define RF_DETAIL_OK 0
#define RF_DETAIL_DEGRADED 1            /* serves, without all its redundancy */
#define RF_DETAIL_FAILED 2              /* too few members to serve */
#define RF_DETAIL_UNREADABLE 4          /* no raidfuse mount, or its files unreadable */

struct rf_detail_dev {
	char name[256];                 /* md/dev-NAME */
	char path[PATH_MAX];            /* md/dev-NAME/path */
	int number;                     /* md's device number (mdstat's NAME[N]); -1: not known */
	int slot;                       /* -1: none */
	bool in_sync, faulty, write_mostly;
	bool rebuilding;                /* in a slot, not yet in sync; or a replacement
					 * being filled (md's "spare rebuilding" both) */
	unsigned major, minor;          /* a block device's; 0 0 for a file */
};

struct rf_detail {
	char mnt[PATH_MAX];
	char image[256];                /* the image's file name */
	pid_t pid;                      /* the daemon (holder.h); 0: not found */
	char metadata[16];              /* md/metadata_version: "1.2", "none" */
	int level, layout, raid_disks, degraded;
	uint64_t chunk_bytes;           /* 0 for raid1 */
	uint64_t array_kib, component_kib;
	char array_state[32], sync_action[32], consistency[32];
	bool syncing;                   /* sync_completed gave done / total */
	uint64_t sync_done, sync_total; /* sectors */
	char uuid[40], set_name[40];    /* "" when there are none */
	bool has_ctime, has_events, has_mismatch;
	uint64_t ctime, events;
	uint64_t mismatch_cnt;          /* md/mismatch_cnt (sectors), when has_mismatch */
	int ndevs;
	struct rf_detail_dev devs[RF_MAX_DEVS];
};

/* Read the array served on mnt into *d (large: allocate it).  0, or
 * -errno with a message naming mnt and the file in err (-ENOENT: mnt is
 * no raidfuse mount). */
int rf_detail_read(const char *mnt, struct rf_detail *d, char *err, size_t errlen);

/* Whether the in-sync members (avail[slot]) are enough to serve a
 * level/layout array of raid_disks members (mdadm's enough()). */
bool rf_detail_enough(int level, int layout, int raid_disks, const bool *avail);

/* Whether d's array can serve: rf_detail_enough() over its devices. */
bool rf_detail_usable(const struct rf_detail *d);

/* RF_DETAIL_OK, _DEGRADED or _FAILED. */
int rf_detail_status(const struct rf_detail *d);

/* mdadm's State line ("clean, degraded, recovering") into buf. */
const char *rf_detail_state(const struct rf_detail *d, char *buf, size_t len);

/* One word for raidfuse list: failed, recovering, resyncing, checking,
 * repairing, degraded, or md/array_state's (clean, active, readonly,
 * suspended). */
const char *rf_detail_state_word(const struct rf_detail *d);

/* What mdadm --detail prints. */
void rf_detail_print(FILE *out, const struct rf_detail *d);

/* The same as one JSON object (a line).  0, or -errno. */
int rf_detail_print_json(FILE *out, const struct rf_detail *d);

/* An mdadm.conf line for the array: "ARRAY /dev/md/NAME metadata=1.2
 * UUID=... name=...", NAME the set name after its host part, else name
 * (the image); nothing for an array without superblocks.  The text of
 * each field as given. */
void rf_detail_array_line(FILE *out, const char *metadata, const char *uuid, const char *set_name,
			  const char *name);

/* The whole of path (a small control file) into buf, NUL-terminated.
 * Its length or -errno. */
int rf_read_text(const char *path, char *buf, size_t size);

#endif
