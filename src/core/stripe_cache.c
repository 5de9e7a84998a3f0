/* SPDX-License-Identifier: GPL-2.0-or-later */
/* stripe_cache.c - stripe heads: lookup, LRU, ownership, forgetting.
 *
 * Each group owns stripe_cache_size / groups heads, hashed by member
 * sector, idle ones on an LRU list with their blocks kept uptodate.  A
 * piece that finds no free head waits on g->deferred until a head goes
 * idle.  The state machine a head runs (phase, uptodate, IO) is the
 * level's (handle_stripe) and is documented with struct rf_stripe in
 * engine.h.
 *
 * Locks: every list and the hash are g->lock's, the innermost lock of the
 * program (engine.h); a head with busy set belongs to one worker, which
 * alone touches its buffers.
 *
 * Delayed heads (md's STRIPE_DELAYED and delayed_list).  A write round
 * that would pre-read (a reconstruct-write reading the columns not
 * written, or a read-modify-write) because a large write filled only part
 * of the row is held back instead, when other writes are under way that
 * may fill the rest: a 1 MiB write fills two of a 4-member row's three
 * 512 KiB columns, and the next one fills the third.  The head goes on
 * g->delayed with its pieces put back on towrite, not busy; a piece that
 * attaches to it moves it to the handle list (its next plan may find the
 * row whole and read nothing).  Every hold ends, and each of these
 * releases it with no_delay set (its next round runs at once):
 *   - rf_delay_bound_ns after it was first held (checked on each pass of
 *     a worker over the group);
 *   - a piece waiting for a free head (g->deferred) while no head is
 *     busy or queued to run: the older half of the held ones;
 *   - a group worker with nothing else to do and no other write in
 *     flight, before it sleeps (with other writes in flight it waits for
 *     the oldest one's bound instead, or a piece);
 *   - the last inline submitter leaving (a->drivers reaching 0): it
 *     serves what it released before it returns;
 *   - a flush (rf_delayed_release_all()).
 * A drain, or a sync region waiting for the writes of its rows, waits
 * for held writes like any other: the rules above end them.  Nothing is
 * acknowledged while held: its request ends when the round's writes do.
 * Invariant: on_delayed implies !busy, !on_handle, !on_lru, towrite set.
 *
 * What it does NOT do: plan or issue member IO (the levels and workers
 * do), decide which rounds to hold (the level does), or size the cache
 * (array.c reshapes the groups).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/engine.h"

uint64_t rf_delay_bound_ns = 1000000;

/* ---- stripe cache ---- */

static uint32_t hash_of(struct rf_group *g, uint64_t sector)
{
	return (uint32_t)((sector * 0x9E3779B97F4A7C15ull) >> 40) & g->hash_mask;
}

static void lru_del(struct rf_group *g, struct rf_stripe *sh)
{
	TAILQ_REMOVE(&g->lru, sh, lru);
	sh->on_lru = false;
	g->nlru--;
}

void rf_lru_add_tail(struct rf_group *g, struct rf_stripe *sh)
{
	TAILQ_INSERT_TAIL(&g->lru, sh, lru);
	sh->on_lru = true;
	g->nlru++;
}

static void unhash(struct rf_group *g, struct rf_stripe *sh)
{
	struct rf_stripe **pp = &g->hash[hash_of(g, sh->sector)];

	while (*pp != sh)
		pp = &(*pp)->hnext;
	*pp = sh->hnext;
	sh->hnext = NULL;
	sh->hashed = false;
}

void rf_handle_add(struct rf_group *g, struct rf_stripe *sh)
{
	STAILQ_INSERT_TAIL(&g->handle, sh, handle);
	sh->on_handle = true;
}

/* ---- delayed heads ---- */

uint64_t rf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void delayed_del(struct rf_group *g, struct rf_stripe *sh)
{
	TAILQ_REMOVE(&g->delayed, sh, delay);
	sh->on_delayed = false;
	g->ndelayed--;
	atomic_fetch_sub(&g->a->nheld, 1);
}

/* Insert in delay_ns order: a head held again keeps its first time, and
 * the bound is checked from the oldest. */
static void delayed_add(struct rf_group *g, struct rf_stripe *sh)
{
	struct rf_stripe *after = TAILQ_LAST(&g->delayed, rf_stripe_tq);

	while (after && after->delay_ns > sh->delay_ns)
		after = TAILQ_PREV(after, rf_stripe_tq, delay);
	if (after)
		TAILQ_INSERT_AFTER(&g->delayed, after, sh, delay);
	else
		TAILQ_INSERT_HEAD(&g->delayed, sh, delay);
	sh->on_delayed = true;
	g->ndelayed++;
	atomic_fetch_add(&g->a->nheld, 1);
}

bool rf_stripe_delay(struct rf_stripe *sh)
{
	struct rf_group *g = sh->g;

	pthread_mutex_lock(&g->lock);
	if (!STAILQ_EMPTY(&sh->towrite) || !STAILQ_EMPTY(&sh->toread)) {
		/* Pieces arrived since the round took its batch: plan again
		 * with them, after the ones taken (writes keep their order). */
		STAILQ_CONCAT(&sh->writing, &sh->towrite);
		STAILQ_CONCAT(&sh->reading, &sh->toread);
		pthread_mutex_unlock(&g->lock);
		return false;
	}
	/* Nothing queued: the round's writes are towrite again, in order. */
	STAILQ_CONCAT(&sh->towrite, &sh->writing);
	sh->busy = false;
	if (!sh->delay_ns)
		sh->delay_ns = rf_now_ns();
	delayed_add(g, sh);
	pthread_mutex_unlock(&g->lock);
	atomic_fetch_add_explicit(&g->a->stats.delayed, 1, memory_order_relaxed);
	return true;
}

int rf_delayed_release_locked(struct rf_group *g, uint64_t before)
{
	int n = 0;

	while (!TAILQ_EMPTY(&g->delayed) && TAILQ_FIRST(&g->delayed)->delay_ns < before) {
		struct rf_stripe *sh = TAILQ_FIRST(&g->delayed);

		delayed_del(g, sh);
		sh->no_delay = true;
		rf_handle_add(g, sh);
		n++;
	}
	if (n) {
		rf_note_group(g);
		atomic_fetch_add_explicit(&g->a->stats.released, (uint64_t)n, memory_order_relaxed);
	}
	return n;
}

void rf_delayed_check_locked(struct rf_group *g)
{
	uint64_t now;

	if (TAILQ_EMPTY(&g->delayed))
		return;
	if (!STAILQ_EMPTY(&g->deferred) && g->nstripes - g->nlru - g->ndelayed == 0) {
		/* Pieces wait for a free head and none is busy or queued to
		 * run (whose end would free one): the older half of the held
		 * heads go (the newer ones are the likelier to be filled). */
		struct rf_stripe *sh = TAILQ_FIRST(&g->delayed);
		int k;

		for (k = 1; k < g->ndelayed / 2; k++)
			sh = TAILQ_NEXT(sh, delay);
		rf_delayed_release_locked(g, sh->delay_ns + 1);
		return;
	}
	now = rf_now_ns();
	if (now > rf_delay_bound_ns)
		rf_delayed_release_locked(g, now - rf_delay_bound_ns);
}

int rf_delayed_release_all(struct rf_array *a)
{
	int i, n = 0;

	/* Seen after the hold that made it non-zero: a hold is under
	 * g->lock, before its holder's leave (workers.c) or the flush. */
	if (!atomic_load(&a->nheld))
		return 0;
	for (i = 0; a->ops->handle_stripe && i < a->ngroups; i++) {
		struct rf_group *g = &a->groups[i];
		struct rf_worker *w = NULL;
		int k;

		pthread_mutex_lock(&g->lock);
		k = rf_delayed_release_locked(g, UINT64_MAX);
		if (k && g->idle) {
			w = g->idle;
			g->idle = w->idle_next;
			w->idle = false;
		}
		pthread_mutex_unlock(&g->lock);
		if (w)
			rf_worker_wake(w);
		n += k;
	}
	return n;
}

/* g->lock held.  The head for sector, found or recycled from the LRU; NULL
 * when every head is busy. */
struct rf_stripe *rf_stripe_get(struct rf_group *g, uint64_t sector)
{
	uint32_t h = hash_of(g, sector);
	struct rf_stripe *sh;

	for (sh = g->hash[h]; sh; sh = sh->hnext)
		if (sh->sector == sector)
			return sh;
	sh = TAILQ_FIRST(&g->lru);
	if (!sh)
		return NULL;
	lru_del(g, sh);
	if (sh->hashed)
		unhash(g, sh);
	sh->sector = sector;
	sh->uptodate = 0;
	sh->hnext = g->hash[h];
	g->hash[h] = sh;
	sh->hashed = true;
	return sh;
}

/* g->lock held.  Queue p on its head sh (whose sector is p->key), found by
 * the caller, or looked up (sh NULL).  Returns the head, or NULL when p must
 * wait for one. */
struct rf_stripe *rf_stripe_attach(struct rf_group *g, struct rf_stripe *sh, struct rf_piece *p)
{
	if (!sh) {
		sh = rf_stripe_get(g, p->key);
		if (!sh)
			return NULL;
		if (sh->on_lru)
			lru_del(g, sh);
	}
	STAILQ_INSERT_TAIL(p->write ? &sh->towrite : &sh->toread, p, link);
	if (sh->on_delayed)
		delayed_del(g, sh);     /* more of the row: plan it again */
	if (!sh->busy && !sh->on_handle) {
		rf_handle_add(g, sh);
		rf_note_group(g);
	}
	return sh;
}

/* The owner is done with a round.  Either another round is due (pieces
 * arrived meanwhile) or the head goes idle. */
bool rf_stripe_finish(struct rf_stripe *sh)
{
	struct rf_group *g = sh->g;
	bool again = false;

	pthread_mutex_lock(&g->lock);
	/* The round ran: a later hold starts its own bound. */
	sh->delay_ns = 0;
	sh->no_delay = false;
	if (!STAILQ_EMPTY(&sh->toread) || !STAILQ_EMPTY(&sh->towrite)) {
		again = true;
	} else {
		sh->busy = false;
		rf_lru_add_tail(g, sh);
		if (!STAILQ_EMPTY(&g->deferred)) {
			/* A head is free: let the waiting pieces try again. */
			STAILQ_CONCAT(&g->incoming, &g->deferred);
			rf_note_group(g);
		}
	}
	pthread_mutex_unlock(&g->lock);
	return again;
}

void rf_requeue_piece(struct rf_array *a, struct rf_piece *p)
{
	struct rf_piece_q one = STAILQ_HEAD_INITIALIZER(one);

	STAILQ_INSERT_TAIL(&one, p, link);
	rf_group_push(rf_group_of(a, p->key), &one);
}

void rf_sync_rows_forget(struct rf_array *a, uint64_t lo, uint64_t hi)
{
	/* The groups stay while reconf_lock is held; no drain waits for a
	 * region (rf_range_enter()), so taking it here cannot deadlock. */
	pthread_mutex_lock(&a->reconf_lock);
	rf_stripe_cache_forget(a, lo, hi);
	pthread_mutex_unlock(&a->reconf_lock);
}

void rf_stripe_cache_forget(struct rf_array *a, uint64_t lo, uint64_t hi)
{
	int i, j;

	for (i = 0; a->ops->handle_stripe && i < a->ngroups; i++) {
		struct rf_group *g = &a->groups[i];

		pthread_mutex_lock(&g->lock);
		for (j = 0; j < g->nstripes; j++) {
			struct rf_stripe *sh = &g->stripes[j];

			if (!sh->hashed || sh->sector < lo || sh->sector >= hi)
				continue;
			/* With writes drained, or the rows locked against
			 * them, a busy head is only finishing the round that
			 * ended its last write, or serving a read. */
			while (sh->busy) {
				pthread_mutex_unlock(&g->lock);
				sched_yield();
				pthread_mutex_lock(&g->lock);
			}
			/* An idle head on the LRU may go: a lookup recycles
			 * another one and reads from the members again.  One
			 * with pieces queued (handle or delayed list) stays,
			 * but forgets its blocks: its next round reads them. */
			if (sh->on_lru && sh->hashed && sh->sector >= lo && sh->sector < hi)
				unhash(g, sh);
			else if (sh->hashed && sh->sector >= lo && sh->sector < hi)
				sh->uptodate = 0;
		}
		pthread_mutex_unlock(&g->lock);
	}
}

