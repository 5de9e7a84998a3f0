/* SPDX-License-Identifier: GPL-2.0-or-later */
/* array.h - an assembled array: members, geometry, failure state, and the
 * request interface the FUSE front end (or a test) drives.
 *
 * A request (struct rf_req) is one read, write or flush of the array image.
 * rf_req_submit() splits it into pieces, hands them to the worker groups
 * and returns at once: it never waits for member IO.  The worker that ends
 * the last piece calls req->done() exactly once, with 0 or -errno.
 */
#ifndef RAIDFUSE_ARRAY_H
#define RAIDFUSE_ARRAY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "raidfuse/config.h"
#include "raidfuse/devopen.h"
#include "raidfuse/ioq.h"
#include "raidfuse/layout.h"
#include "raidfuse/rangelock.h"

enum rf_req_op { RF_REQ_READ, RF_REQ_WRITE, RF_REQ_FLUSH };

struct rf_piece;
struct rf_array;
struct rf_lend_wait;

struct rf_req {
	uint64_t off;                   /* array byte offset */
	uint32_t len;                   /* bytes; off + len <= array size */
	uint8_t op;                     /* enum rf_req_op */
	char *buf;                      /* len bytes, owned by the caller */
	/* A write's data, lent instead of copied into buf: the caller's bytes,
	 * valid only until rf_req_submit() returns (NULL: buf holds the
	 * data).  The core writes straight from them when the write surely
	 * ends before that call returns, and copies them into buf first
	 * otherwise; buf is the caller's again when done() runs. */
	const char *lent;
	void (*done)(struct rf_req *r, int err);
	void *priv;                     /* the caller's */
	/* The caller's thread has more requests to submit right after this
	 * one (a FUSE over io_uring ring thread working through a batch):
	 * where group threads could take it, r is not served on the calling
	 * thread, whose member IO would hold the requests behind it. */
	bool more_behind;
	/* engine-private below */
	char *own;                      /* the caller's buf while buf points at lent data */
	struct rf_lend_wait *lend_wait; /* the submitter waiting for the end of a lent write */
	atomic_int pending;             /* pieces not ended, +1 while splitting */
	atomic_int err;                 /* first error */
	struct rf_array *a;
	STAILQ_ENTRY(rf_req) held_link; /* the drain barrier's queue */
	struct rf_piece *pieces;        /* rf_req_alloc()'s array */
	atomic_int npieces;             /* used entries of pieces[] */
	int maxpieces;
	uint32_t max_len;               /* rf_req_alloc()'s: the longest r may carry */
	bool sized;                     /* maxpieces counted for the level's data */
	unsigned sized_gen;             /* for that shape of the array (its shape_gen) */
	bool hooks_started;             /* a write the services' write_start saw: write_end follows */
	struct rf_rl_ent rl;            /* a write's place at the sync regions' range lock */
};


/* What the level says of itself on mdstat's blocks line (md's personality
 * status(): " level 5, 64k chunk, algorithm 2 [4/4] [UUUU]"), into buf. */
void rf_array_status(const struct rf_array *a, char *buf, size_t len);

/* What the array's level has of md's attributes (the level's answer,
 * core/level.c): sync work (md's sync_request: sync_action, mismatch_cnt,
 * the sync speeds, mdstat's resync line; raid0 has none), and a stripe
 * cache (stripe_cache_size, stripe_cache_active, rmw_level: raid4/5/6). */
bool rf_level_has_sync_work(const struct rf_array *a);
bool rf_level_has_stripe_cache(const struct rf_array *a);
/* Whether the program's stack has a level serving md level `level`
 * (raid0, 1, 4, 5, 6 and 10 in raidfuse's: commands/stack.c). */
bool rf_level_served(int level);

/* Open and check every member named by cfg (nothing is written).  Returns 0
 * or -errno with a message naming the member in err. */
int rf_array_open(const struct rf_config *cfg, struct rf_array **out, char *err, size_t errlen);
/* Replace the liburing backend of the workers' IO queues (tests, fault
 * injection); call before rf_array_start(). */
typedef int (*rf_ioq_init_fn)(struct rf_ioq *q, struct rf_ioq_devs devs,
			      unsigned depth);
void rf_array_set_ioq_init(struct rf_array *a, rf_ioq_init_fn fn);
/* Start the worker threads (after any fork). */
int rf_array_start(struct rf_array *a);
/* After rf_array_start(): start the resync the superblocks say is due
 * (not cleanly shut down, or created without --assume-clean), from their
 * resync_offset, as md does when it runs an array; frozen: set
 * sync_action frozen instead, so that none starts until asked.  0 (also
 * when none is due, or the array keeps no superblocks), or -errno from
 * starting it (logged). */
int rf_sbstate_start_resync(struct rf_array *a, bool frozen);
/* Stop the workers after every request in flight has ended, close members. */
void rf_array_close(struct rf_array *a);

uint64_t rf_array_size(const struct rf_array *a);
const struct rf_geom *rf_array_geom(const struct rf_array *a);
const char *rf_array_name(const struct rf_array *a);
/* Whether the members were opened read-only: writes must fail (EROFS). */
bool rf_array_readonly(const struct rf_array *a);
/* Whether a reshape is under way (layout.h struct rf_reshape: continued
 * by services/reshape.c, or served read-only); if so its position (array
 * sectors) and direction. */
bool rf_array_reshape(const struct rf_array *a, uint64_t *position, bool *backwards);
/* The position the superblocks hold, md's reshape_position (the walk's
 * own runs ahead of it between records: rf_array_reshape()); the reshape
 * service sets it as it records. */
uint64_t rf_array_reshape_recorded(const struct rf_array *a);
void rf_array_set_reshape_recorded(struct rf_array *a, uint64_t position);
/* Whether the reshape walk may move rows now: it has looked at
 * sync_action and found it not frozen (rf_reshape_hold() waits for it to
 * become false); the reshape service sets it. */
bool rf_array_reshape_moving(const struct rf_array *a);
void rf_array_set_reshape_moving(struct rf_array *a, bool moving);
/* fn(priv) runs (on some thread of the array's) after the array's size
 * changed: a reshape ended.  Set before rf_array_start(). */
void rf_array_on_resize(struct rf_array *a, void (*fn)(void *priv), void *priv);
/* Members that are missing or faulty, as a bit mask by role. */
uint64_t rf_array_faulty(const struct rf_array *a);
/* Whether too many members failed to serve IO. */
bool rf_array_failed(const struct rf_array *a);

/* A request with room for the pieces of max_len bytes; NULL on ENOMEM. */
struct rf_req *rf_req_alloc(struct rf_array *a, uint32_t max_len);
void rf_req_free(struct rf_req *r);
/* Split and queue r; r->done() runs later on a worker (or at once on a
 * split error).  The caller must keep r and r->buf until then. */
void rf_req_submit(struct rf_array *a, struct rf_req *r);

/* ---- runtime control: what md shows and takes in sysfs ----
 *
 * Setters check the value first (-EINVAL, nothing changed).  Those that
 * reshape the engine drain the array: new requests are held at the
 * barrier (the caller's FUSE thread is not blocked by them), requests in
 * flight end, the change is made, and every held request is resubmitted in
 * arrival order.  A setter blocks its caller for the drain: never call one
 * from a req->done() callback or a worker. */
struct rf_array_info {
	int level, layout, raid_disks;
	int prev_raid_disks;            /* a reshape under way changes raid_disks from this; else raid_disks */
	uint32_t chunk_bytes;           /* 0 for raid1 */
	uint64_t component_size;        /* bytes of each member the array uses */
	uint64_t array_size;            /* bytes */
	uint64_t faulty;                /* missing or failed members, by role */
	uint64_t recovering;            /* slots whose device is being rebuilt */
	int degraded;                   /* slots not in sync: faulty or being rebuilt */
	int metadata;                   /* enum rf_sb_kind of the members' superblocks (0: none) */
	bool failed;                    /* too many to serve IO */
	int stripe_cache_size;          /* md's unit: stripe heads */
	int stripe_cache_active;        /* heads in use now */
	int group_thread_cnt, worker_groups, rmw_level;
	bool suspended;
	bool writes_in_flight;          /* "active" rather than "clean" */
	bool sb_dirty;                  /* the superblocks say dirty (md's "active"); false
					 * when none are kept */
	uint64_t stripe_cache_bytes;    /* memory the stripe cache holds */
	uint32_t bitmap_chunk;          /* internal write-intent bitmap's chunk, bytes; 0: none */
	uint64_t bitmap_pages;          /* md's counter pages (2048 chunks each) */
	uint64_t bitmap_pages_used;     /* those with a chunk whose bit is set */
	bool ppl;                       /* md's partial parity log is kept */
	/* From the freshest superblock (all empty/0 without superblocks). */
	char uuid[40];                  /* as mdadm prints it; "" without superblocks */
	char set_name[33];              /* 1.x set_name; "" for 0.90 */
	uint64_t ctime;                 /* creation, seconds since the epoch; 0: not known */
	uint64_t events;                /* the array's events count, as last written */
};
void rf_array_get_info(struct rf_array *a, struct rf_array_info *out);
/* Member i's path as given ("missing" for a missing one). */
const char *rf_array_member_path(const struct rf_array *a, int i);

/* Worker threads in all (worker_groups x group_thread_cnt), 4 per online
 * CPU within these: the config and the runtime setters refuse more. */
#define RF_MIN_WORKER_THREADS 8
#define RF_MAX_WORKER_THREADS 256
/* The most worker threads an array may have in all (groups x
 * group_thread_cnt): 4 per online CPU, at least 8, at most 256.  More
 * threads than cores only add context switches (and each has its ring,
 * buffers and stack); the bound leaves room for threads that wait on
 * member IO.  The config and the runtime setters refuse more. */
int rf_max_worker_threads(void);
int rf_array_set_stripe_cache_size(struct rf_array *a, int n);   /* 17..32768, as md */
int rf_array_set_group_thread_cnt(struct rf_array *a, int n);    /* 0..64 */
int rf_array_set_worker_groups(struct rf_array *a, int n);       /* 1..64 */
int rf_array_set_rmw_level(struct rf_array *a, int n);           /* 0..2 */
/* md/consistency_policy: "resync" or "ppl" on a raid5 with a partial
 * parity log's area (md's switch; writes are drained meanwhile); 0, or
 * -EINVAL for anything else (and "resync" on a resync array is 0). */
int rf_array_set_consistency_policy(struct rf_array *a, const char *policy);
/* Whether the array's level takes md/consistency_policy's word policy:
 * "none" (a level without sync work: raid0), "resync", "bitmap", or
 * "ppl" (raid5 alone).  The level's answer (core/level.c), for its
 * geometry. */
bool rf_level_takes_policy(const struct rf_array *a, const char *policy);
/* ---- devices: md/dev-NAME, md/rdN, md/new_dev ----
 *
 * A device is one member file the array holds: active in a slot (md's
 * role), a spare, or faulty.  Device numbers 0..raid_disks-1 are the
 * slots (the device serving that role, or a "missing" placeholder with
 * RF_DEV_MISSING); spares and members that lost their slot come after.
 * A number is good only until the next reconfiguration (a spare taking a
 * slot moves devices); a device's name does not change.  Every change
 * below drains the array's writes first (the drain barrier).
 */
#define RF_MAX_DEVS 128

enum rf_dev_flags {
	RF_DEV_IN_SYNC = 1 << 0,        /* holds its slot's data */
	RF_DEV_FAULTY = 1 << 1,         /* failed: no IO reaches it */
	RF_DEV_SPARE = 1 << 2,          /* no slot, or a slot it is being rebuilt into */
	RF_DEV_WRITE_MOSTLY = 1 << 3,   /* raid1: read only when no other copy can serve */
	RF_DEV_MISSING = 1 << 4,        /* an empty slot: no file */
	RF_DEV_FAILFAST = 1 << 5,       /* md's failfast: a failed read fails it, no retry,
					 * while the array could lose it (io.failfast) */
	RF_DEV_WANT_REPLACEMENT = 1 << 6, /* in a slot: a spare is to take its place, copied
					   * from it while it serves (md's want_replacement) */
	RF_DEV_REPLACEMENT = 1 << 7,    /* no slot: being filled with a slot's data, every
					 * write of the slot reaching it too (md's replacement) */
};

struct rf_dev_info {
	char name[256];                 /* md/dev-NAME: the file's base name */
	char path[4096];                /* as given */
	int slot;                       /* role served (md's "slot"); -1: none */
	int number;                     /* md's device number (1.x: the superblock's
					 * dev_number; else the device's index): what
					 * mdstat shows in brackets */
	unsigned flags;                 /* enum rf_dev_flags */
	uint64_t errors;                /* member IOs that failed (md's "errors") */
	uint64_t offset;                /* data offset, sectors (md's "offset") */
	uint64_t size;                  /* KiB of the device the array uses (md's "size") */
	uint64_t recovery_start;        /* sectors rebuilt so far; UINT64_MAX: in sync ("none") */
	int replaces;                   /* RF_DEV_REPLACEMENT: the slot it is to take; else -1 */
};

/* How many device numbers there are now (raid_disks at least). */
int rf_member_ndevs(struct rf_array *a);
/* Device dev's state; -ENOENT when there is none of that number. */
int rf_member_info(struct rf_array *a, int dev, struct rf_dev_info *out);
/* The number of the device called name (md/dev-NAME), or -ENOENT. */
int rf_member_find(struct rf_array *a, const char *name);
/* md/dev-NAME/state writes, md's words: "faulty" fails the device (the
 * array goes on degraded); "remove" takes a faulty device or a spare out
 * of the array (-EBUSY for an active one); "re-add" and "-faulty" put a
 * failed device back into its old slot and rebuild it (only the regions
 * the write-intent bitmap marks, when there is one); "writemostly" and
 * "-writemostly" (raid1).  -EINVAL for another word, with a message. */
int rf_memberctl_set_state(struct rf_array *a, const char *name, const char *word);
/* md/safe_mode_delay: how long a written array stays idle before its
 * superblocks say clean again, ms (md's 200 by default); 0: never by
 * itself, only at shutdown (md's).  -ENOENT: the array keeps no
 * clean/dirty state (no superblocks, read-only, raid0). */
int rf_sbstate_safe_mode_delay_get(const struct rf_array *a, unsigned *ms);
int rf_sbstate_safe_mode_delay_set(struct rf_array *a, unsigned ms);
/* md/dev-NAME/timeout: an NBD device's command timeout, ms (nbd.h): a
 * command not done within it fails the device.  -ENOENT: no such device;
 * -EOPNOTSUPP: not an NBD export; set: -EINVAL for 0. */
int rf_memberctl_timeout_get(struct rf_array *a, const char *name, unsigned *ms);
int rf_memberctl_timeout_set(struct rf_array *a, const char *name, unsigned ms);
/* md/dev-NAME/io_mode: how a device's data reaches it (devopen.h enum
 * rf_member_io): get says RF_MEMBER_IO_DIRECT or _BUFFERED, -ENOENT (no
 * such device), -EOPNOTSUPP (an NBD export); set (auto, direct,
 * buffered) drains member IO as a device table edit does, then changes
 * it: -EOPNOTSUPP with a message for an NBD export, an overlay's member
 * or a file that refuses O_DIRECT. */
int rf_memberctl_io_mode_get(struct rf_array *a, const char *name);
int rf_memberctl_io_mode_set(struct rf_array *a, const char *name, int mode);
/* md/new_dev: open path, check it (size, not already in the array, not
 * in use), write a spare superblock if the array keeps superblocks, and
 * add it as a spare; a degraded array starts rebuilding onto it at once.
 * 0 or -errno with a message naming the file in err. */
int rf_memberctl_add_spare(struct rf_array *a, const char *path, char *err, size_t errlen);

/* md/array_state "suspended": drain, then hold every write (reads go on)
 * until rf_barrier_resume() ("active").  Both are idempotent. */
int rf_barrier_suspend(struct rf_array *a);
int rf_barrier_resume(struct rf_array *a);

#endif
