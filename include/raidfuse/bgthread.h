/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bgthread.h - one background thread that runs a function every period
 * and whenever it is kicked, until it is stopped.
 *
 * The superblock timer, the bitmap's clearing pass and the management
 * thread's tick are all this shape.  fn runs on the thread with no lock
 * of the helper held; kicks that arrive while it runs make it run once
 * more right after (they are not counted).  Changing the period wakes
 * the thread to wait again from now, without running fn.
 *
 * Locks: b->lock is a leaf: fn is never called with it, and nothing else
 * is taken under it.  rf_bg_stop() must not be called from fn.
 */
#ifndef RAIDFUSE_BGTHREAD_H
#define RAIDFUSE_BGTHREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct rf_bgthread {
	void (*fn)(void *arg);
	void *arg;
	char name[16];                  /* the thread's name (rf_thread_name) */
	atomic_uint period_ms;          /* 0: only when kicked */
	pthread_mutex_t lock;
	pthread_cond_t cond;            /* lock, CLOCK_MONOTONIC */
	bool stop, kicked, rearm;       /* lock */
	bool running;                   /* the owner's: between start and stop */
	pthread_t thread;
	atomic_uint nr_runs;            /* fn calls (tests) */
};

/* Prepare b (no thread yet), its thread to be called name; 0 or -errno. */
int rf_bg_init(struct rf_bgthread *b, const char *name, unsigned period_ms,
	       void (*fn)(void *arg), void *arg);
/* Start the thread (idempotent); 0 or -errno. */
int rf_bg_start(struct rf_bgthread *b);
/* Run fn soon, once even if kicked several times meanwhile. */
void rf_bg_kick(struct rf_bgthread *b);
/* A new period, counted from now. */
void rf_bg_set_period(struct rf_bgthread *b, unsigned period_ms);
/* End the thread and wait for it (idempotent; a run in progress finishes). */
void rf_bg_stop(struct rf_bgthread *b);
/* Stop, and release what init made. */
void rf_bg_destroy(struct rf_bgthread *b);

/* fn(arg, i) for every i below n at once: i = 0 on the calling thread, the
 * others on threads of their own (inline where one cannot be made); returns
 * when all have.  For blocking calls on independent devices (a flush of
 * each member, md's superblock writes submitted together and waited for
 * together); fn takes no lock the caller holds. */
void rf_run_parallel(int n, void (*fn)(void *arg, int i), void *arg);

#endif
