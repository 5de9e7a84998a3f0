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
 * What it does NOT do: plan or issue member IO (the levels and workers
 * do), or size the cache (array.c reshapes the groups).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/engine.h"

/* ---- stripe cache ---- */

static uint32_t hash_of(struct rf_group *g, uint64_t sector)
{
	return (uint32_t)((sector * 0x9E3779B97F4A7C15ull) >> 40) & g->hash_mask;
}

static void lru_del(struct rf_group *g, struct rf_stripe *sh)
{
	if (sh->lru_prev)
		sh->lru_prev->lru_next = sh->lru_next;
	else
		g->lru_head = sh->lru_next;
	if (sh->lru_next)
		sh->lru_next->lru_prev = sh->lru_prev;
	else
		g->lru_tail = sh->lru_prev;
	sh->lru_prev = sh->lru_next = NULL;
	sh->on_lru = false;
	g->nlru--;
}

void rf_lru_add_tail(struct rf_group *g, struct rf_stripe *sh)
{
	sh->lru_next = NULL;
	sh->lru_prev = g->lru_tail;
	if (g->lru_tail)
		g->lru_tail->lru_next = sh;
	else
		g->lru_head = sh;
	g->lru_tail = sh;
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
	sh->handle_next = NULL;
	if (g->handle_tail)
		g->handle_tail->handle_next = sh;
	else
		g->handle_head = sh;
	g->handle_tail = sh;
	sh->on_handle = true;
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
	sh = g->lru_head;
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
	p->next = NULL;
	if (p->write) {
		*sh->towrite_tail = p;
		sh->towrite_tail = &p->next;
	} else {
		*sh->toread_tail = p;
		sh->toread_tail = &p->next;
	}
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
	if (sh->toread || sh->towrite) {
		again = true;
	} else {
		sh->busy = false;
		rf_lru_add_tail(g, sh);
		if (g->deferred) {
			/* A head is free: let the waiting pieces try again. */
			*g->incoming_tail = g->deferred;
			g->incoming_tail = g->deferred_tail;
			g->deferred = NULL;
			g->deferred_tail = &g->deferred;
			rf_note_group(g);
		}
	}
	pthread_mutex_unlock(&g->lock);
	return again;
}

void rf_requeue_piece(struct rf_array *a, struct rf_piece *p)
{
	p->next = NULL;
	rf_group_push(rf_group_of(a, p->key), p, &p->next);
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
			 * another one and reads from the members again. */
			if (sh->on_lru && sh->hashed && sh->sector >= lo && sh->sector < hi)
				unhash(g, sh);
		}
		pthread_mutex_unlock(&g->lock);
	}
}

