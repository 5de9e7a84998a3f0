/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lockcheck.c - the lock order checked as the program runs (lockcheck.h).
 *
 * The checker is always built (its unit test drives it directly); the
 * wraps that feed it pthread's mutex calls only with RF_LOCKCHECK (the
 * sanitizer builds, whose link wraps pthread_mutex_lock, _trylock,
 * _unlock and _destroy: -Wl,--wrap=...).
 *
 * Ranks live in a table keyed by the mutex's address, open addressing
 * with atomic keys (a key, once set, stays; a destroyed mutex's entry
 * keeps its key and drops its rank, so memory reused by an unranked mutex
 * is not checked, and a mutex ranked again at that address takes the slot
 * back).  Lookups take no lock.  Each thread keeps the ranked mutexes it
 * holds, in the order taken, in thread-local storage.
 *
 * It does NOT check read-write locks, spin locks or condition variables
 * (a wait gives its mutex back and takes it again inside the C library:
 * the mutex counts as held throughout), nor mutexes never ranked.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raidfuse/lockcheck.h"

#define SLOTS (1u << 16)        /* mutexes ever ranked, at distinct addresses */
#define HELD_MAX 32             /* ranked mutexes one thread holds at once */

struct slot {
	_Atomic uintptr_t key;
	_Atomic int rank;               /* 0: not ranked (now) */
	const char *_Atomic name;
};

struct held {
	const pthread_mutex_t *m;
	int rank;
	const char *name;
};

static struct slot table[SLOTS];
static atomic_int abort_on = 1;
static atomic_ulong violations;
static atomic_bool full_said;
static __thread struct held held[HELD_MAX];
static __thread int nheld;

static size_t hash(uintptr_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k & (SLOTS - 1);
}

/* m's slot; with insert, one claimed for it if it has none.  NULL: none
 * (or, inserting, the table is full). */
static struct slot *find(const pthread_mutex_t *m, int insert)
{
	uintptr_t k = (uintptr_t)m;
	size_t i = hash(k), n;

	for (n = 0; n < SLOTS; n++, i = (i + 1) & (SLOTS - 1)) {
		uintptr_t cur = atomic_load_explicit(&table[i].key, memory_order_acquire);

		if (cur == k)
			return &table[i];
		if (cur)
			continue;
		if (!insert)
			return NULL;
		if (atomic_compare_exchange_strong(&table[i].key, &cur, k) || cur == k)
			return &table[i];
	}
	return NULL;
}

void rf_lockcheck_rank(const pthread_mutex_t *m, enum rf_lock_rank rank, const char *name)
{
	struct slot *s = find(m, 1);

	if (!s) {
		if (!atomic_exchange(&full_said, 1))
			fprintf(stderr, "raidfuse: lock order: the table of %u ranked mutexes is full; %s and later "
				"ones go unchecked\n", SLOTS, name);
		return;
	}
	atomic_store_explicit(&s->name, name, memory_order_relaxed);
	atomic_store_explicit(&s->rank, (int)rank, memory_order_release);
}

void rf_lockcheck_set_abort(int on)
{
	atomic_store(&abort_on, on);
}

unsigned long rf_lockcheck_violations(void)
{
	return atomic_load(&violations);
}

int rf_lockcheck_held(void)
{
	return nheld;
}

static void held_list(char *buf, size_t len)
{
	size_t o = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < nheld && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s (%d)", i ? ", " : "", held[i].name, held[i].rank);
}

/* Taking m (rank, name) with what this thread holds: said and counted
 * (and the program aborted) where the order forbids it. */
static void check(const pthread_mutex_t *m, int rank, const char *name)
{
	char list[512];
	int i;

	for (i = 0; i < nheld; i++) {
		const struct held *h = &held[i];
		const char *why;

		if (h->m == m)
			why = "it is held already by this thread";
		else if (h->rank == RF_LOCK_LEAF)
			why = "a leaf lock is held";
		else if (rank != RF_LOCK_LEAF && h->rank >= rank)
			why = "a lock of its rank or a later one is held";
		else
			continue;
		held_list(list, sizeof(list));
		fprintf(stderr, "raidfuse: lock order: taking %s (rank %d) while holding %s (rank %d): %s; held: %s\n",
			name, rank, h->name, h->rank, why, list);
		atomic_fetch_add(&violations, 1);
		if (atomic_load(&abort_on))
			abort();
		return;
	}
}

static int rank_of(const pthread_mutex_t *m, const char **name)
{
	struct slot *s = find(m, 0);
	int rank;

	if (!s)
		return 0;
	rank = atomic_load_explicit(&s->rank, memory_order_acquire);
	*name = atomic_load_explicit(&s->name, memory_order_relaxed);
	return rank;
}

static void push(const pthread_mutex_t *m, int rank, const char *name)
{
	if (nheld < HELD_MAX)
		held[nheld++] = (struct held){ m, rank, name };
}

void rf_lockcheck_lock(const pthread_mutex_t *m, bool try)
{
	const char *name = NULL;
	int rank = rank_of(m, &name);

	if (rank && !try)
		check(m, rank, name);
}

void rf_lockcheck_locked(const pthread_mutex_t *m)
{
	const char *name = NULL;
	int rank = rank_of(m, &name);

	if (rank)
		push(m, rank, name);
}

void rf_lockcheck_unlock(const pthread_mutex_t *m)
{
	int i;

	/* The last one taken, usually; any order is allowed. */
	for (i = nheld - 1; i >= 0; i--) {
		if (held[i].m == m) {
			memmove(&held[i], &held[i + 1], (size_t)(nheld - i - 1) * sizeof(held[0]));
			nheld--;
			break;
		}
	}
}

void rf_lockcheck_destroy(const pthread_mutex_t *m)
{
	struct slot *s = find(m, 0);

	if (s)
		atomic_store_explicit(&s->rank, 0, memory_order_release);
}

#ifdef RF_LOCKCHECK
int __real_pthread_mutex_lock(pthread_mutex_t *m);
int __real_pthread_mutex_trylock(pthread_mutex_t *m);
int __real_pthread_mutex_unlock(pthread_mutex_t *m);
int __real_pthread_mutex_destroy(pthread_mutex_t *m);

int __wrap_pthread_mutex_lock(pthread_mutex_t *m)
{
	int r;

	rf_lockcheck_lock(m, false);
	r = __real_pthread_mutex_lock(m);
	if (!r)
		rf_lockcheck_locked(m);
	return r;
}

int __wrap_pthread_mutex_trylock(pthread_mutex_t *m)
{
	int r = __real_pthread_mutex_trylock(m);

	if (!r)
		rf_lockcheck_locked(m);
	return r;
}

int __wrap_pthread_mutex_unlock(pthread_mutex_t *m)
{
	rf_lockcheck_unlock(m);
	return __real_pthread_mutex_unlock(m);
}

int __wrap_pthread_mutex_destroy(pthread_mutex_t *m)
{
	rf_lockcheck_destroy(m);
	return __real_pthread_mutex_destroy(m);
}
#endif
