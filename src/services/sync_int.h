/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sync_int.h - what the sync walk's files share (not installed): sync.c
 * (requests, status, speed limits, the service), sync_walk.c (the walk
 * thread, its workers and pace) and sync_region.c (one region's run and
 * its findings).  The walk's state, struct rf_sync, is sync.c's: made by
 * rf_sync_init(), kept by the array, freed by rf_sync_free(); each field
 * says who writes it and under what.  The calls go one way: sync.c ->
 * sync_walk.c -> sync_region.c.
 *
 * Locks: s->lock (the walk's state and cursor, the workers' hand-over,
 * the status) is a leaf in engine.h's lock order: no other lock is taken
 * while it is held; retire() and skip_clean(), which take others, run
 * without it (one thread at a time: s->retiring, an empty window).
 */
#ifndef RAIDFUSE_SYNC_INT_H
#define RAIDFUSE_SYNC_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "core/syncwork.h"
#include "raidfuse/ioq.h"
#include "raidfuse/rangelock.h"
#include "raidfuse/sync.h"

#define NMARKS 4                        /* speed marks, about a second apart */
#define SYNC_WINDOW 4                   /* workers at most: regions running at once while idle */
#define WIN_PER_WORKER 4                /* regions handed out per worker while idle */
#define WIN_MAX (WIN_PER_WORKER * SYNC_WINDOW)
#define BUSY_RECENT 5.0                 /* seconds after which an idle array is looked at once */
#define IDLE_TRUST 0.02                 /* seconds an idle verdict from several looks holds */

struct mark {
	double t;
	uint64_t done;
};

/* The walk's cursor and position.  act and total are set before any
 * worker sees the walk; next, run_end, pace_next, pos and ret are
 * under s->lock; cp_pos, cp_t and first belong to the thread retiring
 * (s->retiring). */
struct walk {
	enum rf_sync_action act;
	uint64_t pos;           /* every region below is done */
	uint64_t next;          /* where the next region starts */
	uint64_t run_end;       /* the bitmap's run being walked ends here */
	uint64_t total;
	uint64_t cp_pos;        /* the last checkpoint */
	double cp_t;
	double pace_next;       /* the next region may be cut from then on (pace()) */
	bool first;
	int ret;                /* the first error, in walk order */
};

/* A region handed out: READY (waiting for a worker), RUNNING, DONE.  The
 * walk writes lo and n before READY; the worker that took it owns ret and
 * range until DONE; then the thread retiring it does.  range holds the
 * region's rows at the array's range lock: locked by the worker before
 * the region's work, unlocked by it after the work, or (s->hold_rows) by
 * the thread retiring it.  state: s->lock. */
enum { REG_READY, REG_RUNNING, REG_DONE };

struct region {
	uint64_t lo, n;
	int state;
	int ret;
	struct rf_range range;
};

/* One walker thread: runs one region at a time on buffers and an IO queue
 * of its own. */
struct sync_worker {
	struct rf_sync_work work;       /* the region's, given to the level (first) */
	struct rf_sync *s;
	struct rf_array *a;
	pthread_t thread;
	bool started;
	/* s->lock: */
	bool ready;                     /* the thread set up its IO queue: init_ret */
	int init_ret;
	/* the thread: */
	struct region *cur;             /* the region it runs */
	char *mem;                      /* region buffers, then the scratch blocks */
	struct rf_ioq ioq;              /* the worker's member IO queue, made on its thread */
	bool ioq_ok;                    /* s->lock until ready */
};

struct rf_sync {
	struct rf_array *a;
	pthread_mutex_t lock;           /* a leaf (engine.h's lock order) */
	pthread_cond_t cond;            /* the thread ended; a stop was asked; a region ended */
	pthread_cond_t wcond;           /* workers: a region was handed out, or quit */
	/* lock: */
	enum rf_sync_action action;     /* the running action, IDLE when none */
	const struct rf_sync_ops *ops;  /* the running walk's (rf_sync_walk_ops()); set before its thread */
	bool replace;                   /* the running recover walk copies to replacements
					 * (replace_region()); set before its thread */
	bool frozen, stop, running, joinable;
	int stopping;                   /* rf_sync_stop() calls under way: no walk starts */
	bool quit;                      /* workers leave */
	pthread_t thread;
	uint64_t done, total, resync_cp;
	unsigned speed_min, speed_max;
	bool speed_min_local, speed_max_local; /* set, not the defaults */
	struct mark marks[NMARKS];
	int nmarks;
	int bad_member;
	uint64_t bad_sector, bad_found;
	uint64_t skipped;               /* sectors a walk jumped over (bitmap) */
	atomic_uint_fast64_t mapped;    /* member bytes a walk read from mappings (relaxed) */
	uint64_t mismatches;
	int nlogged;
	/* set by rf_sync_main's thread before the workers start: */
	uint32_t region_max;            /* bytes per member */
	bool inline_io;                 /* the workers read on their own threads (inline_io()) */
	bool hold_rows;                 /* a region's rows stay locked until retire() (hold_rows()) */
	int nworkers;                   /* workers the walk hands regions to */
	int nalloc;                     /* workers[] entries to free */
	int win_limit;                  /* regions handed out at most while idle */
	struct sync_worker *workers;
	/* lock: regions handed out, oldest first; the first `taken` are
	 * RUNNING or DONE, the rest READY. */
	struct region win[WIN_MAX];
	int win_head, win_count, taken;
	bool retiring;                  /* a thread retires the head (retire_done()) */
	bool news_wanted;               /* the walk thread waits for a region to end */
	int waiting;                    /* workers waiting for a region to run */
	struct walk k;
	double last_busy;               /* when foreground IO was last seen */
	double last_idle;               /* when several looks last found the array idle */
	double started;                 /* when this walk started */
	rf_sync_notify_fn notify;       /* lock (set), called by the thread */
	void *notify_priv;
};

/* sync_walk.c */

/* Now, in seconds (CLOCK_MONOTONIC). */
double rf_sync_now(void);
/* The sync ops a walk of act goes by: the level's, or its rebuild's own
 * (core.h: recover) unless the bitmap drives the rebuild. */
const struct rf_sync_ops *rf_sync_walk_ops(const struct rf_array *a, enum rf_sync_action act);
/* The walk's units: member sectors, or array sectors (the ops'; a level
 * without sync work has no walk, and reports its members' size). */
uint64_t rf_sync_walk_total(const struct rf_array *a, const struct rf_sync_ops *ops);
/* Where a rebuild resumes, in the walk's units, from md's
 * recovery_offset dev_off (member sectors). */
uint64_t rf_sync_walk_start(const struct rf_array *a, const struct rf_sync_ops *ops, uint64_t dev_off);
/* The walk thread (arg: the struct rf_sync), started by sync.c's start()
 * with the action, ops, replace, done and total set: starts the workers,
 * walks, tells the notify function and the management thread how it
 * ended, and leaves the state idle and joinable. */
void *rf_sync_main(void *arg);

/* sync_region.c */

/* Where a region's findings go (report_priv: the struct rf_sync). */
extern const struct rf_sync_report rf_sync_findings;
/* Run the region handed to w (w->cur) on w's thread, without s->lock,
 * its rows locked by the walk: the level's work, or a replacement's copy;
 * 0 or -errno. */
int rf_sync_region_run(struct sync_worker *w, enum rf_sync_action act);

#endif
