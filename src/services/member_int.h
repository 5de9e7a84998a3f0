/* SPDX-License-Identifier: GPL-2.0-or-later */
/* member_int.h - what the device services share (not installed):
 * member.c (the table's names and edits, the management thread),
 * hotreplace.c (hot replace), memberwatch.c (the member watch) and
 * memberctl.c (the device control files).  The management thread's state
 * is member.c's; the others read the fields the comments name.
 *
 * Lock order (engine.h): reconf_lock, then the device lock; the
 * management lock is only ever held alone.
 */
#ifndef RAIDFUSE_MEMBER_INT_H
#define RAIDFUSE_MEMBER_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/core.h"

struct rf_mgmt {
	pthread_mutex_t lock;           /* alone: dropped before reconf_lock or a drain (engine.h) */
	pthread_cond_t cond;
	bool stop, kicked;
	pthread_t thread;
	bool started;                   /* thread runs */
	bool resync_waits;              /* a resync due once no rebuild is (protected by lock) */
	uint64_t repl_done;             /* slots whose replacement's copy completed, to be
					 * promoted (protected by lock) */
	uint64_t faulty_seen;           /* the faulty slots at the last recovery check
					 * (the management thread's own) */
	/* The member watch: an inotify descriptor on every device's inode
	 * (watches added by rf_memberwatch_all() under reconf_lock), read by
	 * its own thread; stop_fd (an eventfd) ends it. */
	int ino_fd, stop_fd;
	pthread_t watch_thread;
	bool watching;
	/* The blocks each device had allocated when last looked at
	 * (rf_memberwatch_blocks_freed()), by device index; reconf_lock. */
	struct blocks_seen {
		dev_t dev;
		ino_t ino;
		bool on;                /* a file system where only a deallocation lowers st_blocks */
		int64_t blocks;         /* st_blocks (512-byte units) */
		bool kept;              /* found changed, kept as the last copy of its data
					 * (rf_member_fail()): said once */
	} seen[RF_MAX_DEVS];
};

/* member.c */

/* A device's name (md/dev-NAME): a file's base name, an NBD export's
 * rf_nbd_name(); in buf (RF_DEV_NAME_MAX bytes). */
#define RF_DEV_NAME_MAX 256
const char *rf_member_dev_name(const char *path, char *buf);
/* Device d, a new spare: the data offset its superblock gets, modelled
 * on an in-sync member's other than slot skip.  reconf_lock held, or the
 * array drained. */
void rf_member_spare_offsets(struct rf_array *a, struct rf_dev *d, int skip);
/* Empty slot k (its device kept as a spare-to-be when keep, else
 * closed); 0 or -ENOSPC.  Every request drained, the device lock held. */
int rf_member_slot_vacate(struct rf_array *a, int k, bool keep);
/* Device path took slot k from old: warn that an array without
 * superblocks needs its config changed. */
void rf_member_config_note(struct rf_array *a, int k, const char *path, const char *old);

/* hotreplace.c */

/* What rf_hotreplace_fix() is given: copies completed (promote them). */
struct rf_hotreplace_job {
	struct rf_array *a;
	uint64_t done;                  /* copies completed: promote them */
};
/* reconf_lock held: slots whose replacement must be detached. */
uint64_t rf_hotreplace_broken(struct rf_array *a);
/* reconf_lock held: the first spare free to be a replacement; -1: none. */
int rf_hotreplace_pick(struct rf_array *a);
/* rf_barrier_quiesced_all()'s work (arg: a struct rf_hotreplace_job):
 * detach, promote and attach replacements; 0 or -errno. */
int rf_hotreplace_fix(void *arg);
/* The management thread, nothing to be rebuilt and no walk running:
 * replacements fixed, then copied; true when a copy runs. */
bool rf_hotreplace_check(struct rf_array *a);

/* memberwatch.c */

/* Watch every open regular-file device's inode.  reconf_lock held. */
void rf_memberwatch_all(struct rf_array *a);
/* Whether device i's file lost blocks since the last look (why says so);
 * the first look only records.  reconf_lock held. */
bool rf_memberwatch_blocks_freed(struct rf_mgmt *mg, int i, const struct rf_dev *m, char *why, size_t len);
/* Fail every device that is no longer what was opened; with_path: also
 * look at the paths.  Takes reconf_lock. */
void rf_memberwatch_check_devices(struct rf_array *a, bool with_path);
/* The watch thread (arg: the array): reads the inotify descriptor until
 * stop_fd is written. */
void *rf_memberwatch_main(void *arg);

#endif
