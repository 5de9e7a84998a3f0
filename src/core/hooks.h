/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hooks.h - how services plug into the array (not installed).
 *
 * The IO path calls a service only through these hooks, never its
 * internals (md's bitmap_operations and raid5-log.h are the model).  A
 * service (the superblock state, the write-intent bitmap) registers one
 * table with rf_array_add_hooks() when it is opened; the core calls each
 * registered table in registration order.  Every hook is optional.
 *
 * Life: every service of the stack's list (struct rf_stack below; the
 * program's is commands/stack.c's, in services/services.c's order) is
 * offered the array by rf_array_open(); one that applies registers its
 * table.  The core then starts, stops and closes them
 * through their start/stop/close hooks, in registration order: the sync
 * walk first (it stops before the superblock state it reports
 * checkpoints to, and its state exists before that one starts), then the
 * superblock state, then the bitmap it records events for.
 *
 * One service is not in that list: the management thread (member.c).
 * Its place is outside every other on both ends: it starts after all of
 * them (it may start a rebuild at once, which needs the walk and the
 * superblock state running) and stops before any (no rebuild starts, and
 * no spare takes a slot, while they stop).  Registration order cannot
 * say "last in, first out" for one service only, so the stack names it
 * apart (struct rf_mgmt_ops), and the core calls it there.
 *
 * What it does NOT do: let a service see the array's struct: services
 * reach the array through core/dev.h and the accessors of core.h.
 */
#ifndef RAIDFUSE_CORE_HOOKS_H
#define RAIDFUSE_CORE_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "raidfuse/ioq.h"
#include "raidfuse/stack.h"

struct rf_array;
struct rf_array_info;
struct rf_level_ops;
struct rf_config;

#define RF_MAX_HOOKS 8

struct rf_hooks {
	const char *name;
	/* Before a write request of len bytes at array byte off is split
	 * (it counts as in flight at the drain barrier): return once the
	 * write may reach the members.  0, or -errno to fail the request.
	 * Once any write_start ran, every write_end runs when it ends. */
	int (*write_start)(void *priv, uint64_t off, uint64_t len);
	/* The write ended with err (0 or -errno). */
	void (*write_end)(void *priv, uint64_t off, uint64_t len, int err);
	/* Slot dev's member was just marked faulty (any thread, any lock:
	 * only note it and wake a thread). */
	void (*member_failed)(void *priv, int dev);
	/* Device dev's entry of the table changed (another device moved
	 * there, it left, its superblock changed).  Device lock held, every
	 * request drained. */
	void (*dev_changed)(void *priv, int dev);
	/* Every request drained for a change of the array's shape or table
	 * (rf_barrier_quiesced_all(); begin true), and that change done (begin
	 * false): a service thread that reads the table outside the drain
	 * stays out of it meanwhile.  reconf_lock held. */
	void (*reconf)(void *priv, bool begin);
	/* Fill the service's fields of md's attributes. */
	void (*info)(void *priv, struct rf_array_info *out);
	/* Start its threads (after any fork, once the workers run): 0 or
	 * -errno. */
	int (*start)(void *priv);
	/* Stop its threads (state kept); before the array drains for good. */
	void (*stop)(void *priv);
	/* Nothing in flight any more: write the final state, free. */
	void (*close)(void *priv);
};

/* Register h (static storage) with priv.  0, or -ENOSPC. */
int rf_array_add_hooks(struct rf_array *a, const struct rf_hooks *h, void *priv);

/* The stripe log (md's raid5-log.h: log_write_stripe, log_stripe_write_finished):
 * a raid4/5/6 stripe head whose round writes data and parity describes
 * the update in one struct rf_log_stripe and offers it to the log before
 * it issues those writes.  One log per array, registered with
 * rf_array_set_log() while the array opens (services/ppl.c: md's partial
 * parity log).
 *
 * The descriptor (levels/raid5_log.c makes it) lives in the stripe head
 * from write_stripe() to stripe_done(); the log links it on its own lists
 * (link) meanwhile and touches nothing else of the head.  Every call runs
 * on a worker thread and q is that worker's IO queue: the log queues its
 * member IO there and its completions run on the same thread, where it
 * may call resume(). */
struct rf_log_stripe {
	STAILQ_ENTRY(rf_log_stripe) link;       /* the log's lists */
	/* Issue the head's data and parity writes now, on the worker whose
	 * queue is q (the head is owned by that worker from then on). */
	void (*resume)(struct rf_log_stripe *ls, struct rf_ioq *q);
	void *head;                     /* the head (the level's) */
	int parity;                     /* member holding the row's parity */
	uint64_t data_sector;           /* first array sector the entry covers */
	uint32_t data_size;             /* bytes of data it covers, all columns */
	uint32_t pp_size;               /* bytes of partial parity at pp (0: full stripe) */
	char *pp;                       /* the xor of the columns it leaves alone */
	struct rf_mio mio;              /* the log's, for pp */
};

struct rf_log_ops {
	/* Before the data and parity writes of ls's head: 0 when the log took
	 * it (it calls ls->resume() once they may be issued, maybe at once,
	 * maybe on another worker), -EAGAIN: issue them now. */
	int (*write_stripe)(void *priv, struct rf_ioq *q, struct rf_log_stripe *ls);
	/* The writes of a head the log took all ended. */
	void (*stripe_done)(void *priv, struct rf_ioq *q, struct rf_log_stripe *ls);
	/* md/consistency_policy written: keep the log (on) or stop (off);
	 * drains writes itself.  0 or -errno.  Optional. */
	int (*set_policy)(void *priv, bool on);
};

/* Register the array's log (static ops), on the IO path.  0, or -EBUSY:
 * one is there. */
int rf_array_set_log(struct rf_array *a, const struct rf_log_ops *ops, void *priv);
/* Put the registered log on the IO path (on) or take it off: the level
 * then offers it no stripe (and prepares none for it), while set_policy
 * still reaches it.  Only with every request drained
 * (rf_barrier_quiesced_all). */
void rf_array_log_active(struct rf_array *a, bool on);

/* A service as the core opens it.  open: look at the array (its devices
 * are open, nothing else runs yet) and cfg; a service that applies sets
 * itself up and registers its hooks, one that does not returns 0 with
 * nothing done.  0, or -errno with err filled (the array is not opened). */
struct rf_service {
	const char *name;
	int (*open)(struct rf_array *a, const struct rf_config *cfg, char *err, size_t errlen);
};

/* The services, in the order they are opened (and so started and
 * stopped, see above); NULL ends the list.  services/services.c. */
extern const struct rf_service *const rf_services[];

/* The management thread (see above): started after every service,
 * stopped before them, freed with the array, and kicked when a member
 * fails or a device changes (any thread). */
struct rf_mgmt_ops {
	int (*start)(struct rf_array *a);
	void (*stop)(struct rf_array *a);
	void (*free)(struct rf_array *a);
	void (*kick)(struct rf_array *a);
};

/* What the layers above the core hand it once, before the first
 * rf_array_open(): the levels it serves arrays of (a level's md_levels
 * says which), the services it offers every array and the management
 * thread, each list NULL-terminated.  The core names none of them
 * itself.  A program sets it first thing (front/main.c, the test
 * fixture); without it no array opens. */
struct rf_stack {
	const struct rf_level_ops *const *levels;
	const struct rf_service *const *services;
	const struct rf_mgmt_ops *mgmt;         /* NULL: none */
};

#endif
