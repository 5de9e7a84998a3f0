/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lockcheck.h - the lock order (core/engine.h's list), checked as it runs.
 *
 * Every mutex of the program is given its place in the order where it is
 * initialised: rf_lock_rank(&m, RANK, "name").  In builds with
 * RF_LOCKCHECK (the sanitizer builds: make asan, make tsan, make
 * tsan-unit), pthread_mutex_lock, _trylock, _unlock and _destroy are
 * wrapped at link time (util/lockcheck.c) and each thread keeps the ranked
 * locks it holds; taking one that the order forbids prints both locks and
 * what the thread holds, and aborts:
 *   - a leaf lock (RF_LOCK_LEAF) is held: nothing else may be taken;
 *   - an ordered lock is taken while one of the same or a later rank is
 *     held (a thread holding one takes only locks below it).
 * A trylock cannot wait, so it is never refused; what it takes is held.
 * Mutexes never ranked are not checked.  Without RF_LOCKCHECK the calls
 * compile to nothing.
 */
#ifndef RAIDFUSE_LOCKCHECK_H
#define RAIDFUSE_LOCKCHECK_H

#include <pthread.h>
#include <stdbool.h>

/* Outer first (a smaller rank is taken first). */
enum rf_lock_rank {
	RF_LOCK_CTL_OPEN = 1,   /* an open control file's text (front/fuse.c) */
	RF_LOCK_RECONF = 2,     /* reconf_lock */
	RF_LOCK_RESHAPE = 3,    /* a reshape's recording of its position (services/reshape.c) */
	RF_LOCK_DEV = 4,        /* dev_lock */
	RF_LOCK_SBSTATE = 5,    /* the superblock state's lock */
	RF_LOCK_BITMAP = 6,     /* the bitmap's lock */
	RF_LOCK_NBD = 7,        /* an NBD connection's (a command's end kicks its queue under it) */
	RF_LOCK_LEAF = 100,     /* nothing else is taken while one is held */
};

/* The checker (util/lockcheck.c), always built: the wraps call it, and
 * so may a test.  rank: m's place (again, after a destroy); lock: before
 * taking m (try: a trylock, never refused); locked: m is taken; unlock:
 * m is given back; destroy: m's rank is dropped.  set_abort: abort on a
 * violation (the default) or only count it; violations: how many were
 * found; held: the ranked mutexes this thread holds. */
void rf_lockcheck_rank(const pthread_mutex_t *m, enum rf_lock_rank rank, const char *name);
void rf_lockcheck_lock(const pthread_mutex_t *m, bool try);
void rf_lockcheck_locked(const pthread_mutex_t *m);
void rf_lockcheck_unlock(const pthread_mutex_t *m);
void rf_lockcheck_destroy(const pthread_mutex_t *m);
void rf_lockcheck_set_abort(int on);
unsigned long rf_lockcheck_violations(void);
int rf_lockcheck_held(void);

static inline void rf_lock_rank(pthread_mutex_t *m, enum rf_lock_rank rank, const char *name)
{
#ifdef RF_LOCKCHECK
	rf_lockcheck_rank(m, rank, name);
#else
	(void)m;
	(void)rank;
	(void)name;
#endif
}

#endif
