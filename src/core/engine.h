/* SPDX-License-Identifier: GPL-2.0-or-later */
/* engine.h - what the core and the level modules share (not installed):
 * the array's struct, private to them.  Services see core/core.h only.
 *
 * Objects and who protects what:
 *  - struct rf_array: immutable after rf_array_open() except `faulty`
 *    (atomic, bits only ever set while the array runs).
 *  - struct rf_group: one partition of the stripe cache and a queue of
 *    pieces; every list in it is protected by g->lock.  Lock order: a group
 *    lock is the innermost lock; no two group locks are ever held together.
 *  - struct rf_worker: one thread, its own rf_ioq; only that thread touches
 *    its ioq.  A stripe head is owned by one worker while `busy` is set;
 *    the owner alone touches its buffers, uptodate mask and IO.  With
 *    group_thread_cnt 0 the groups have no threads: a submitter borrows an
 *    inline worker from the array's pool and does the work itself.
 *  - The groups and their workers are rebuilt only while the drain barrier
 *    holds every request and none is in flight (rf_array_set_*()).
 *  - The device table a->devs[] (core/dev.h): changed under reconf_lock
 *    with every request drained, and dev_lock.
 *  - a->rl, the sync regions' range lock (rangelock.h): a write past the
 *    barrier whose rows a region has locked waits on that region's queue,
 *    not at the barrier; see "the sync regions' range lock" in barrier.c.
 *
 * Lock order, every lock of the program (outer first; a thread holding
 * one takes only locks below it):
 *    ctl_open->lock       an open control file's text (fuse.c): held while
 *                         the text is made, which may take any lock below;
 *                         never held across a store (so never across a drain)
 *    -> reconf_lock       one reconfiguration at a time; every drain (and so
 *                         every device table edit) happens under it; a sync
 *                         region takes it to drop the cached heads of its
 *                         rows (rf_sync_rows_forget())
 *       -> rec_lock       a reshape's recording of its position
 *                         (services/reshape.c): held across the members'
 *                         flush and the superblock writes, by the walk or
 *                         by a write to rows moved but not yet recorded
 *       -> dev_lock       the device table, for walks outside a drain (dev.h)
 *          -> s->lock     superblock state (sbstate.h)
 *             -> bm->lock bitmap image and writes (bitmap.c)
 *                -> c->lock  an NBD connection's (nbd.c): superblock and
 *                         bitmap writes to an NBD member wait under the
 *                         locks above; a command's end kicks its queue
 *                         (a leaf) under it
 * Leaf locks: nothing else is taken while one is held, and each may be
 * taken under any of the above:
 *    bar_lock             the drain barrier's queue (barrier.c)
 *    rl.lock              the sync regions' range lock (rangelock.c)
 *    pool_lock            the inline workers' pool (workers.c)
 *    g->lock              a group's lists and stripe heads; never two at once
 *    start_lock           worker start-up reports
 *    lw->lock             a submitter waiting for its lent write (request.c)
 *    b->lock              a background thread's wake-ups (bgthread.c): the
 *                         superblock timer, the bitmap daemon
 *    mgmt->lock           the management thread's wake-ups (member.c, hotreplace.c)
 *    the sync walk's lock (sync_int.h)
 *    the partial parity log's lock (services/ppl.c)
 *    io/: a queue's kick lock (ioq.c), an overlay's (overlay.c), a fault
 *    spec's (fault.h), the IO log's (iolog.c)
 *    front/: the request pool's fs->lock (fuse_pool.c), img_lock and
 *    names_lock (fuse_inode.c); a ring thread's lock, the slow and bulk
 *    hand-offs' locks and reg_lock (fuse_uring.c)
 * Each is ranked where it is initialised (rf_lock_rank(), lockcheck.h);
 * the sanitizer builds check the order on every pthread_mutex_lock and
 * abort on an inversion.
 * No lock is held across a drain that waits for requests, except
 * reconf_lock.  A drain waits only for requests counted at the barrier; a
 * write waiting for a sync region is not counted there, so no drain waits
 * for a region, and a region may take reconf_lock.
 *
 * Pieces: a request is split into pieces; each piece ends once through
 * rf_piece_end().  A DIRECT piece is one member IO the worker issues as it
 * is; a STRIPE piece is a part of one column block of one stripe head
 * (raid4/5/6 writes, and reads that need reconstruction); a FLUSH piece is
 * an fsync of one member.  Pieces move between queues (struct rf_piece_q,
 * <sys/queue.h> STAILQs through p->link): the submitter's bucket for a
 * group, g->incoming, then a STRIPE piece to its head's toread/towrite
 * (g->deferred while no head is free, back to g->incoming when one goes
 * idle), and the owner takes those as its round's batch (reading,
 * writing).  Every move appends at a queue's tail (one piece, or a whole
 * queue with STAILQ_CONCAT), so the writes to one head reach its rounds
 * in the order they arrived.
 */
#ifndef RAIDFUSE_ENGINE_H
#define RAIDFUSE_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "core/core.h"
#include "raidfuse/array.h"
#include "raidfuse/ioq.h"
#include "raidfuse/log.h"

#define RF_MAX_GROUPS 64
#define RF_MAX_GROUP_THREADS 64

enum rf_piece_kind { RF_PIECE_DIRECT, RF_PIECE_STRIPE, RF_PIECE_FLUSH };

struct rf_piece {
	STAILQ_ENTRY(rf_piece) link;    /* the piece queue it is on ("Pieces" above) */
	struct rf_req *req;
	struct rf_mio mio;              /* DIRECT and FLUSH: the member IO */
	uint64_t aoff;                  /* array byte offset of the piece's data */
	uint64_t key;                   /* group hash key; STRIPE: the stripe head's member sector */
	char *buf;                      /* the piece's data in req->buf */
	uint32_t len;
	uint32_t boff;                  /* STRIPE: byte offset in the column block */
	int16_t member;                 /* STRIPE: column */
	uint8_t kind;                   /* enum rf_piece_kind */
	uint8_t write;
	uint8_t tries;                  /* DIRECT reads: copies tried (raid1/10) */
};

/* A queue of pieces, oldest first ("Pieces" above); a piece is on one
 * queue at a time. */
STAILQ_HEAD(rf_piece_q, rf_piece);

struct rf_stripe;
struct rf_worker;
struct rf_sync_work;
struct rf_read_map;
struct rf_reshape_ops;

/* One per RAID level, each level's file fills its table (the program's
 * stack lists them: hooks.h); rf_level_ops_of() finds one by md level. */
struct rf_level_ops {
	const char *name;
	/* The md levels it serves: bit n for raid n (raid10: bit 10). */
	unsigned md_levels;
	/* Pieces a request of max_len bytes can need, worst case.  Called
	 * past the barrier (rf_queue_req()): the geometries are still. */
	int (*max_pieces)(const struct rf_array *a, uint32_t max_len);
	/* Split r into pieces with rf_piece_new() and queue them with
	 * rf_queue_piece(); returns 0 or -errno (nothing queued then). */
	int (*split)(struct rf_array *a, struct rf_req *r);
	/* A DIRECT piece's member IO ended with err < 0 (the member is already
	 * marked faulty when the error says so).  Retry elsewhere, or end it. */
	void (*direct_failed)(struct rf_worker *w, struct rf_piece *p, int err);
	/* Whether the faulty mask leaves the array unable to serve IO. */
	bool (*failed)(const struct rf_array *a, uint64_t faulty);
	/* Whether geometry g of the level has lost some data with the slots
	 * in out gone (md's enough(), from a geometry alone: a takeover's
	 * new one, before any array serves it). */
	bool (*lost)(const struct rf_geom *g, uint64_t out);
	/* What failed() tests, in words, where it is more than a count of
	 * members ("some chunk has every copy among them": raid10's copy
	 * sets); NULL: the level tolerates geom.max_degraded members out. */
	const char *loss_words;
	/* A failure that would leave data without a copy marks the array
	 * broken and the device stays in sync (md's raid0, raid1, raid10);
	 * false: the device is failed (parity levels). */
	bool keeps_last;
	/* Run the stripe state machine for sh (the worker owns it).  Optional:
	 * only levels with stripe pieces, which alone have md's stripe cache
	 * attributes (rf_level_has_stripe_cache()). */
	void (*handle_stripe)(struct rf_worker *w, struct rf_stripe *sh);
	/* The sync walk's work (core.h, md's sync_request).  Optional:
	 * levels without redundancy leave it NULL and have no sync action,
	 * nor md's sync attributes (rf_level_has_sync_work()). */
	const struct rf_sync_ops *sync;
	/* The level's words on mdstat's blocks line, as its md personality's
	 * status() prints them (" level 5, 64k chunk, algorithm 2 [4/4]
	 * [UUUU]"); at most len bytes with the NUL. */
	void (*status)(const struct rf_array *a, char *buf, size_t len);
	/* Where a read of [off, off + len) is when split() would make it
	 * DIRECT pieces only (readmap.h): each piece's member and member
	 * byte offset (data offset included) added with rf_read_map_add(),
	 * in array order; 0, or -EAGAIN when split() would do more (a
	 * STRIPE piece, no copy in sync), -E2BIG from rf_read_map_add().
	 * The caller holds the read at the barrier.  Optional: NULL, no
	 * read is mapped. */
	int (*read_map)(const struct rf_array *a, uint64_t off, uint32_t len, struct rf_read_map *m);
	/* md's bitmap_sector: the rows [*lo, *hi) of geometry g (one of this
	 * level's: the array's, or a reshape's previous one) that a write of
	 * len > 0 bytes at array byte off may touch on any member, its
	 * parity included, in the bitmap's units (rf_bitmap_sync_size():
	 * member sectors, raid10's array sectors); not clipped to them
	 * (rf_bitmap_range() does).  Optional: NULL, the level keeps no
	 * bitmap (raid0). */
	void (*bitmap_range)(const struct rf_geom *g, uint64_t off, uint64_t len, uint64_t *lo, uint64_t *hi);
	/* Whether geometry g of the level takes md's consistency policy
	 * `policy`, one of md/consistency_policy's words: "none" (md's for
	 * a personality without sync work), "resync", "bitmap", "ppl" (md's
	 * partial parity log, raid5 alone). */
	bool (*takes_policy)(const struct rf_geom *g, const char *policy);
	/* The sectors of slot's member that geometry g uses (md's
	 * rdev->sectors, md/dev-NAME/size).  Optional: NULL, g->dev_sectors
	 * on every member (raid0's may differ: md's zones). */
	uint64_t (*dev_sectors)(const struct rf_geom *g, int slot);
	/* Why md does not change the sectors each member uses for geometry
	 * g (md's personality resize: raid0 has none, raid10's refuses far
	 * layouts), in words; NULL: it does.  Optional: NULL, every geometry
	 * of the level resizes. */
	const char *(*resize_refused)(const struct rf_geom *g);
	/* The level's part of the reshape walk (core/reshapework.h, md's
	 * reshape_request).  Optional: NULL, the walk does not reshape the
	 * level (it may still take it over to one it does). */
	const struct rf_reshape_ops *reshape;
};

/* The level of the program's stack (hooks.h struct rf_stack) that serves
 * md level `level` (its md_levels); NULL: none does, or no stack is set.
 * For callers that hold a geometry and no array (a->ops is the array's). */
const struct rf_level_ops *rf_level_ops_of(int level);

/* readmap.c: append len bytes of member at member byte moff to m (joined
 * to the last extent when they follow it); 0 or -E2BIG. */
int rf_read_map_add(struct rf_read_map *m, int member, uint64_t moff, uint32_t len);
/* Whether slot k's backend is one the map answers for (the IO path reads
 * it with a plain pread): a level that picks among copies asks before it
 * commits to one. */
bool rf_read_map_plain(const struct rf_array *a, int k);

/* A stripe head: one stripe_size block of every member at `sector`.
 * States (owner-only `phase`): IDLE -> READ (member reads in flight) ->
 * WRITE (member writes in flight) -> IDLE; READ and WRITE are each
 * skipped when nothing needs reading or writing, and a failed read goes
 * READ -> READ (planned again, degraded).  A head with busy clear has no
 * IO in flight and sits on the handle list (pieces queued), the delayed
 * list (write pieces queued, the round held back: stripe_cache.c) or the
 * LRU list (nothing queued; its uptodate blocks stay cached).
 */
enum rf_sh_phase { RF_SH_IDLE, RF_SH_READ, RF_SH_WRITE };

struct rf_stripe {
	struct rf_stripe *hnext;                /* hash chain, g->lock */
	TAILQ_ENTRY(rf_stripe) lru;             /* g->lru, g->lock */
	STAILQ_ENTRY(rf_stripe) handle;         /* g->handle, g->lock */
	uint64_t sector;                        /* member sector, g->lock */
	struct rf_piece_q toread, towrite;      /* queued, in arrival order, g->lock */
	bool busy, hashed, on_lru, on_handle;   /* g->lock */
	/* Held back (stripe_cache.c "delayed heads"): on g->delayed, not
	 * busy, its write pieces queued on towrite.  g->lock: */
	TAILQ_ENTRY(rf_stripe) delay;
	bool on_delayed;
	bool no_delay;                          /* released by a bound: its next round runs at once */
	uint64_t delay_ns;                      /* when it was first held (CLOCK_MONOTONIC), 0: not held */
	/* owner only: */
	struct rf_piece_q reading, writing;     /* the batch being served: toread/towrite taken
						 * whole (rf_stripe_delay() appends what came since) */
	uint64_t uptodate;                      /* member blocks that hold the member's data */
	uint64_t faulty;                        /* faulty members when the round was planned */
	int pending;                            /* member IOs in flight */
	int phase;                              /* enum rf_sh_phase */
	bool rmw;
	int io_error;                           /* a member IO of this round failed */
	struct rf_group *g;
	struct rf_mio *mio;                     /* [raid_disks] */
	char **buf;                             /* [raid_disks] blocks */
	char **wsrc;                            /* owner: [raid_disks] where this round's write of each
						 * column comes from (buf[i], or a piece's own buffer) */
	struct rf_log_stripe *log;              /* owner: the stripe log's descriptor (raid5_log.c
						 * makes it at the first logged round), or NULL */
	bool logged;                            /* owner: this round's writes went through the log */
};

/* What the stripe heads' write rounds did (md has no file for these; the
 * unit tests and the debug log read them).  Relaxed atomics. */
struct rf_stripe_stats {
	atomic_uint_fast64_t delayed;   /* times a head was held back instead of pre-reading */
	atomic_uint_fast64_t released;  /* of those, released by a bound (time, pressure, drain, last
					 * submitter out) rather than filled */
	atomic_uint_fast64_t full;      /* write rounds that read nothing, every data column written */
	atomic_uint_fast64_t rmw;       /* write rounds that read old data and parity */
	atomic_uint_fast64_t rcw;       /* write rounds that read the columns not written */
	atomic_uint_fast64_t direct;    /* column blocks written from the request's own buffer */
	atomic_uint_fast64_t parity_mapped;     /* P or Q blocks computed in their member's mapping */
};

TAILQ_HEAD(rf_stripe_tq, rf_stripe);

struct rf_group {
	pthread_mutex_t lock;           /* innermost (lock order above); never two at once */
	struct rf_array *a;
	int id;
	/* g->lock: */
	struct rf_piece_q incoming;                     /* from submitters, in arrival order */
	struct rf_piece_q deferred;                     /* waiting for a free stripe head */
	STAILQ_HEAD(, rf_stripe) handle;                /* heads with queued pieces */
	struct rf_stripe_tq lru;                        /* idle heads, oldest first */
	struct rf_stripe_tq delayed;                    /* held heads, oldest first */
	int ndelayed;
	int nlru;
	struct rf_stripe **hash;
	uint32_t hash_mask;
	struct rf_worker *idle;                         /* sleeping workers */
	bool stop;
	/* immutable: */
	int nworkers;
	struct rf_worker *workers;
	int nstripes;
	struct rf_stripe *stripes;
	char *stripe_mem;               /* mmap()ed */
	size_t stripe_mem_len;
};

struct rf_worker {
	struct rf_array *a;
	struct rf_group *g;             /* the group served; NULL for an inline worker */
	struct rf_worker *idle_next;    /* g->lock */
	bool idle;                      /* g->lock */
	/* A group worker waiting for held heads' bound rather than in its
	 * ring (workers.c): woken through cond, with g->lock. */
	pthread_cond_t cond;
	bool cond_ok;                   /* cond was initialised */
	pthread_t thread;
	bool started;
	struct rf_worker *pool_next;    /* inline: a->pool_lock */
	struct rf_worker *all_next;     /* inline: a->pool_lock */
	uint64_t touched;               /* inline: groups this submitter queued work to */
	struct rf_ioq ioq;              /* this thread only */
	char *scratch;                  /* stripe_size bytes, this thread only */
	char *zero;                     /* stripe_size zero bytes */
	int ioq_ret;
};

struct rf_array {
	struct rf_geom geom;
	/* A raid4/5/6 or raid10 reshape under way (layout.h): geom is the new
	 * geometry, reshape.prev the old one (immutable).  reshape.position,
	 * reshape.active, geom.array_sectors and size change only with every
	 * request drained (the reshape walk: rf_array_reshape_commit(),
	 * rf_array_reshape_finish()), so a request sees one position from
	 * its split to its end; threads outside the IO path read
	 * reshape_pos and reshaping instead. */
	struct rf_reshape reshape;
	/* The level the array takes when the reshape ends (a raid0 grown
	 * through a raid4, as mdadm grows one); -1: as it is.  Not in the
	 * superblocks: a reshape resumed at assembly ends a raid0 where the
	 * config names the raid0 (cfg->reshape.then_raid0), else as it is.
	 * Set with every request drained; the walk reads it. */
	int reshape_then;
	/* mdadm's backup file of a reshape in place (rf_array_backup_file()),
	 * NULL: none.  dev_lock. */
	char *backup_file;
	atomic_uint_fast64_t reshape_pos;
	atomic_uint_fast64_t reshape_rec;       /* rf_array_reshape_recorded() */
	atomic_bool reshape_moving;     /* rf_array_reshape_moving() */
	atomic_bool reshaping;
	atomic_bool serving;            /* rf_array_set_serving() */
	void (*resize_fn)(void *priv);  /* rf_array_on_resize(); immutable once started */
	void *resize_priv;
	const struct rf_level_ops *ops;
	char *name;
	bool readonly;                  /* members opened read-only (--ro) */
	bool overlay;                   /* members read-only, written through devs[].io.layer */
	int member_io;                  /* enum rf_member_io: the IO mode of the devices opened
					 * from now on (array.member_io); set at open */
	unsigned member_timeout_ms;     /* NBD devices opened from now on (array.member_timeout);
					 * set at open */
	int metadata;                   /* enum rf_sb_kind the members carry (RF_SB_NONE: none) */
	_Atomic uint64_t size;          /* bytes (changes when a reshape ends, drained) */
	uint64_t ext_size;              /* bytes md/array_size set (md's external_size): the
					 * size served whatever the geometry's; 0: the
					 * geometry's.  Changes drained. */
	uint32_t stripe_size;           /* bytes per column per head */
	/* Bumped by every drain of all requests (rf_barrier_quiesced_all():
	 * a change of shape, level or table): a request counts its pieces
	 * again past the barrier when it was counted for another. */
	unsigned shape_gen;
	int rmw_level;
	int nmembers;                   /* slots: raid_disks (changes under reconf_lock and
					 * dev_lock: superblock writers read it under the
					 * latter) */
	/* Devices (core/dev.h): [0, nmembers) serve the slots, [nmembers,
	 * ndevs) are spares and faulty devices without a slot.  The table
	 * changes only under reconf_lock with every request drained, and
	 * dev_lock (lock order above). */
	int ndevs;
	struct rf_dev devs[RF_MAX_DEVS];
	pthread_mutex_t dev_lock;       /* after reconf_lock, before s->lock and bm->lock */
	/* Services (core/hooks.h), registered while the array opens. */
	int nhooks;
	struct { const struct rf_hooks *h; void *priv; } hooks[RF_MAX_HOOKS];
	const struct rf_log_ops *log;   /* the stripe log on the IO path (hooks.h), NULL: none or
					 * switched off; changed only with every request drained */
	const struct rf_log_ops *log_ops;       /* the log registered at open (its set_policy) */
	void *log_priv;
	uint64_t present;               /* members opened */
	atomic_uint_fast64_t faulty;    /* missing or failed members */
	atomic_bool broken;             /* md's MD_BROKEN: the last copy of some data failed
					 * and was kept (rf_member_fail()): writes fail */
	atomic_uint rr;                 /* read balancing counter */
	/* Engine shape; changed only under reconf_lock while drained. */
	int ngroups;
	struct rf_group *groups;
	int stripe_cache_size, group_thread_cnt, worker_groups;
	rf_ioq_init_fn ioq_init;        /* group workers' queues */
	rf_ioq_init_fn inline_ioq_init; /* inline workers' queues */
	pthread_mutex_t start_lock;     /* workers report their setup; taken alone */
	pthread_cond_t start_cond;
	int nready, nstart_err;         /* start_lock */
	/* Inline workers (group_thread_cnt 0), reused across requests. */
	atomic_int drivers;             /* inline workers being driven now (rf_inline_begin()
					 * to the end of rf_inline_drive()) */
	atomic_int nheld;               /* heads on the groups' delayed lists (changed under
					 * their g->lock): 0 lets the last one out skip them */
	pthread_mutex_t pool_lock;      /* taken alone (reconf_lock may be held) */
	struct rf_worker *pool;         /* free ones */
	struct rf_worker *pool_all;     /* every one, through all_next */
	/* The drain barrier. */
	pthread_mutex_t reconf_lock;    /* one reconfiguration at a time; outermost */
	pthread_mutex_t bar_lock;       /* a leaf: never held while waiting for another lock */
	pthread_cond_t bar_cond;
	atomic_uint hold;               /* RF_HOLD_* */
	atomic_long inflight[2];        /* requests past the barrier: reads, writes+flushes */
	STAILQ_HEAD(, rf_req) held;     /* bar_lock: waiting, in arrival order */
	bool suspended;                 /* reconf_lock */
	/* Sync regions' locks on rows, and the writes tracked while a walk
	 * runs (rangelock.h; its lock: order 2, a leaf). */
	struct rf_rangelock rl;
	/* The walk's sync ops while rl is armed (NULL: the level's): set
	 * with writes drained, read by the writes admitted at rl. */
	const struct rf_sync_ops *rows_ops;
	bool started;
	struct rf_sbstate *sbstate;     /* clean/dirty in the superblocks; NULL: none kept */
	struct rf_bitmap *bitmap;       /* internal write-intent bitmap; NULL: none */
	struct rf_sync *sync;           /* sync.c's, from rf_array_start() to close */
	/* Rebuild (member.c, sync.c): slots whose device is being rebuilt
	 * (each one's own recovery_offset, dev.h, says below which member
	 * sector it is), and where the walk last was (set with writes
	 * drained, or moved up by the walk). */
	atomic_uint_fast64_t recovering;
	atomic_uint_fast64_t recovery_cp;
	atomic_bool recover_dirty_only;  /* a re-added device: rebuild what the bitmap marks */
	/* Hot replace (replace.c, hotreplace.c): slots whose device has a
	 * replacement (repl_dev[k], a device without a slot) that every write
	 * of the slot reaches too while the walk copies the slot's data to
	 * it; both set with every request drained.  repl_failed: those whose
	 * replacement lost a write (set by the IO path, cleared with the
	 * replacement detached). */
	atomic_uint_fast64_t replacing;
	atomic_uint_fast64_t repl_failed;
	int16_t repl_dev[RF_MAX_MEMBERS];
	struct rf_mgmt *mgmt;           /* member.c's thread */
	atomic_uint_fast64_t write_mostly; /* slots whose device is write-mostly (raid1 reads) */
	/* Atomic counters, relaxed; padded to lines of their own, so that
	 * counting does not evict what the IO path reads (recovering ...). */
	char stats_pad0[64];
	struct rf_stripe_stats stats;
	char stats_pad1[64];
};

/* The member map md's redundant personalities end their status with:
 * " [raid_disks/working] [UU_U]" ('_' for a failed slot or one being
 * rebuilt), appended at buf + strlen(buf). */
void rf_status_map(const struct rf_array *a, char *buf, size_t len);

/* Pieces */
struct rf_piece *rf_piece_new(struct rf_req *r, enum rf_piece_kind kind, bool write,
			      uint64_t aoff, char *buf, uint32_t len, uint64_t key);
/* Queue p to the group its key hashes to (batched by the split). */
void rf_queue_piece(struct rf_array *a, struct rf_piece *p);
/* End p with err (0 or -errno); the last piece ends the request. */
void rf_piece_end(struct rf_piece *p, int err);
/* Issue a DIRECT piece's member IO on w (p->mio prepared by the caller). */
void rf_direct_issue(struct rf_worker *w, struct rf_piece *p);

/* Queue member IO m on w's queue; a write or fsync of a slot being
 * replaced goes to its replacement too (replace.c), and m ends once both
 * have. */
void rf_replace_twin(struct rf_worker *w, struct rf_mio *m);
static inline void rf_member_queue(struct rf_worker *w, struct rf_mio *m)
{
	const struct rf_array *a = w->a;
	uint64_t r = atomic_load_explicit(&a->replacing, memory_order_acquire);

	if (__builtin_expect(r != 0, 0) && m->op != RF_MIO_READ && m->member < RF_MAX_MEMBERS &&
	    ((r & ~atomic_load_explicit(&a->repl_failed, memory_order_acquire)) >> m->member & 1))
		rf_replace_twin(w, m);
	else
		rf_ioq_queue(&w->ioq, m);
}
/* Set up p->mio for member m at member byte offset moff. */
void rf_piece_set_mio(struct rf_array *a, struct rf_piece *p, int member, uint64_t moff);

static inline uint64_t rf_faulty(const struct rf_array *a)
{
	return atomic_load_explicit(&((struct rf_array *)a)->faulty, memory_order_acquire);
}
/* The members a stripe round at member sector msec must leave alone:
 * the faulty ones, and those being rebuilt that the rebuild has not
 * reached yet on that device (its recovery_offset; raid4/5/6).  Writes
 * stop at them too: the rebuild writes those rows later, locked. */
static inline uint64_t rf_faulty_at(const struct rf_array *a, uint64_t msec)
{
	struct rf_array *w = (struct rf_array *)a;
	uint64_t f = rf_faulty(a), r = atomic_load_explicit(&w->recovering, memory_order_acquire);

	while (r) {
		int k = __builtin_ctzll(r);

		r &= r - 1;
		if (msec >= atomic_load_explicit(&w->devs[k].recovery_offset, memory_order_acquire))
			f |= 1ull << k;
	}
	return f;
}
/* rf_faulty_at() for a row of the previous geometry of a reshape (prev)
 * or of the array's: a member a level change added is missing in the
 * previous one (struct rf_reshape's prev_absent, which changes only with
 * every request drained). */
static inline uint64_t rf_faulty_in(const struct rf_array *a, uint64_t msec, bool prev)
{
	return rf_faulty_at(a, msec) | (prev ? a->reshape.prev_absent : 0);
}
/* Mirrors: reads avoid a device being rebuilt, writes go to it (the
 * rebuild copies each region with writes drained, so what it copies and
 * what was written since agree). */
static inline uint64_t rf_faulty_read(const struct rf_array *a)
{
	return rf_faulty(a) | atomic_load_explicit(&((struct rf_array *)a)->recovering, memory_order_acquire);
}

/* The geometry array_sector lies in, and each member's data offset
 * there: a reshape under way puts rows it has not reached in the previous
 * geometry at the old data offsets, the rest in the new one (md's
 * raid5_compute_sector(previous) and use_new_offset()). */
static inline const struct rf_geom *rf_geom_at(const struct rf_array *a, uint64_t array_sector, bool *prev)
{
	*prev = rf_reshape_in_prev(&a->reshape, array_sector);
	return *prev ? &a->reshape.prev : &a->geom;
}

static inline uint64_t rf_dev_offset(const struct rf_array *a, int member, bool prev)
{
	return a->reshape.active && !prev ? a->devs[member].new_data_offset : a->devs[member].data_offset;
}

static inline bool rf_failed_now(const struct rf_array *a)
{
	/* A device being rebuilt does not hold the array's data yet. */
	uint64_t f = rf_faulty_read(a);

	if (atomic_load_explicit(&((struct rf_array *)a)->broken, memory_order_relaxed))
		return true;
	/* Healthy arrays (the common case) skip the level's check. */
	return f && a->ops->failed(a, f);
}




/* The worker running on this thread (NULL elsewhere). */
extern __thread struct rf_worker *rf_current_worker;

/* The owner ends a round of sh.  Returns true when pieces arrived meanwhile
 * (sh stays owned: run another round), false when sh went idle. */
bool rf_stripe_finish(struct rf_stripe *sh);
/* Queue p to its group from a worker (outside rf_req_submit()). */
void rf_requeue_piece(struct rf_array *a, struct rf_piece *p);

extern const struct rf_level_ops rf_raid0_ops, rf_raid1_ops, rf_raid10_ops, rf_raid5_ops;

/* Wake the management thread (hooks.h's struct rf_mgmt_ops), if any. */
void rf_array_kick_mgmt(struct rf_array *a);

/* ---- between the core's files (not for the level modules) ---- */

/* The drain barrier's hold bits (barrier.c). */
enum {
	RF_HOLD_WRITES = 1,
	RF_HOLD_READS = 2,
	RF_HOLD_ALL = RF_HOLD_WRITES | RF_HOLD_READS,
	RF_HOLD_RELEASING = 4,
};
/* barrier.c */
int rf_req_class(const struct rf_req *r);
/* Whether the write r (counted at the barrier) may go on now; false: it
 * waits on a sync region's queue and no longer counts at the barrier. */
bool rf_range_enter(struct rf_array *a, struct rf_req *r);
/* A region unlocked: submit a write it held, as if it had just arrived. */
void rf_range_resubmit(struct rf_rl_ent *e, void *priv);
bool rf_barrier_enter(struct rf_array *a, struct rf_req *r);
/* Count one read past the barrier unless reads are held now (no queue):
 * true, and rf_barrier_exit(a, 0) ends it. */
bool rf_barrier_try_read(struct rf_array *a);
void rf_barrier_exit(struct rf_array *a, int cls);
void rf_drain(struct rf_array *a, unsigned bits);
void rf_release(struct rf_array *a, unsigned keep);
/* request.c */
/* Copy a write's lent data into its own buffer: from here on it may
 * outlive rf_req_submit() (parked at the barrier or a sync region). */
void rf_req_unlend(struct rf_req *r);
void rf_submit_now(struct rf_array *a, struct rf_req *r);
void rf_queue_req(struct rf_array *a, struct rf_req *r, struct rf_worker *w);
struct rf_worker *rf_inline_begin(struct rf_array *a, struct rf_worker **saved, int *err);
void rf_inline_end(struct rf_array *a, struct rf_worker *w, struct rf_worker *saved);
struct rf_group *rf_group_of(struct rf_array *a, uint64_t key);
void rf_note_group(struct rf_group *g);
/* Append q's pieces to g->incoming (q is left empty) and wake a sleeping
 * worker of g. */
void rf_group_push(struct rf_group *g, struct rf_piece_q *q);
/* stripe_cache.c (g->lock held) */
struct rf_stripe *rf_stripe_get(struct rf_group *g, uint64_t sector);
struct rf_stripe *rf_stripe_attach(struct rf_group *g, struct rf_stripe *sh, struct rf_piece *p);
void rf_handle_add(struct rf_group *g, struct rf_stripe *sh);
void rf_lru_add_tail(struct rf_group *g, struct rf_stripe *sh);
/* Delayed heads (stripe_cache.c).  rf_stripe_delay(): the owner holds sh's
 * write round back; false when pieces arrived meanwhile (they are appended
 * to sh->writing/reading and the owner plans again), true when sh is held
 * and no longer the caller's.  rf_delayed_release_locked(): g->lock held;
 * move the heads held before `before` ns (UINT64_MAX: all) to the handle
 * list; returns how many.  rf_delayed_release_all(): every group's, the
 * groups' workers woken (a flush, the last inline submitter out). */
bool rf_stripe_delay(struct rf_stripe *sh);
int rf_delayed_release_locked(struct rf_group *g, uint64_t before);
int rf_delayed_release_all(struct rf_array *a);
/* How long a head may be held (ns: 1 ms; a test that must see a hold
 * whatever the machine's load sets it longer before the array starts),
 * and the clock it is measured with. */
extern uint64_t rf_delay_bound_ns;
uint64_t rf_now_ns(void);
/* g->lock held: release what the bound or a want of free heads says to. */
void rf_delayed_check_locked(struct rf_group *g);
/* workers.c */
/* Wake a group worker taken off g->idle (in its ring or on its cond). */
void rf_worker_wake(struct rf_worker *w);
void rf_run_pieces(struct rf_worker *w, struct rf_group *g, struct rf_piece_q *q);
struct rf_worker *rf_inline_get(struct rf_array *a);
void rf_inline_put(struct rf_array *a, struct rf_worker *w);
void rf_inline_drive(struct rf_worker *w);
void rf_inline_free_all(struct rf_array *a);
int rf_ngroups_for(int worker_groups);
/* Groups whose stripe heads have cols columns (the slots they serve). */
int rf_groups_alloc(struct rf_array *a, int ngroups, int nthreads, int cache, int cols, struct rf_group **out);
int rf_groups_start(struct rf_array *a, struct rf_group *groups, int n);
void rf_groups_stop(struct rf_group *groups, int n);
void rf_groups_free(struct rf_array *a, struct rf_group *groups, int n);

/* The array's chunk in bytes (its geometry's: the new one mid-reshape;
 * 0 for raid1). */
static inline uint32_t rf_chunk_bytes(const struct rf_array *a)
{
	return a->geom.chunk_sectors * 512;
}

#endif
