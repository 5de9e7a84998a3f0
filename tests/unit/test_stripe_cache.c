/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_stripe_cache.c - stripe heads (core/stripe_cache.c): lookup, LRU,
 * ownership, delayed heads, forgetting, and the cache's size.
 *
 * The state machine, against a model: one group of 16 heads (made by
 * rf_groups_alloc() on an array that is not started, no threads), driven
 * by a random sequence of what the workers and the level do to it -
 * attach a piece, take a head off the handle list and run a round, end
 * the round, hold a write round back, release held heads, forget a range
 * of rows - under g->lock where the cache's contract asks for it.  After
 * every step the group is compared with the model:
 *  - every head is in exactly one place: the LRU (idle), the handle list
 *    (pieces queued), the delayed list (held, its writes queued) or owned
 *    by one worker (busy); the lists' links, lengths and counters
 *    (nlru, ndelayed, a->nheld) agree with that;
 *  - at most one hashed head per sector, and a lookup of a cached sector
 *    finds that head whatever its state (never a second one for it);
 *  - a sector not cached takes the least recently idle head, whose old
 *    sector is forgotten and whose blocks are no longer uptodate; with no
 *    idle head, attach refuses (the piece waits on g->deferred and goes
 *    back to g->incoming when a head goes idle);
 *  - every piece attached reaches a round exactly once, in attach order;
 *  - the delayed list stays in first-held order and releases the oldest
 *    first; the bound and the pressure rule release what they say.
 * Through a running raid5 (fake backend): a head keeps its blocks
 * between requests (a second write of a block reads nothing) until
 * rf_stripe_cache_forget(); eviction under pressure from concurrent
 * writers with the smallest cache, and the cache resized through
 * rf_array_set_stripe_cache_size() while they write, keep the data and
 * parity right and leave every head idle at the end.
 * Negative controls: the invariant check finds a busy head put on the
 * LRU; a member rewritten behind a cached head (data and P both, as a
 * repair does) without forgetting it leaves the row's parity wrong
 * after the next write.
 *
 * Seed: RF_TEST_SEED (printed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/engine.h"
#include "fake_ioq.h"
#include "fixture.h"
#include "testreq.h"

#define MEMBER_BYTES (1u << 20)
#define CHUNK 16384u
#define NS 16                   /* heads in the model's group */
#define NPIECES 8192

/* ---- the model ---- */

enum { S_LRU, S_HANDLE, S_DELAYED, S_BUSY };

struct mhead {
	int state;
	bool hashed;
	uint64_t sector;
	uint64_t uptodate;
	int pend[64], npend;            /* pieces attached, not yet in a round */
	int round[64], nround;          /* pieces of the round under way */
};

static struct {
	struct rf_array *a;
	struct rf_group *g;
	struct mhead h[NS];
	int lru[NS], nlru;
	int handle[NS], nhandle;
	int ndelayed, ndeferred;
	struct rf_piece p[NPIECES];
	int np;
	uint64_t seen[NPIECES / 64];    /* pieces that reached a round */
	/* What the random steps did, so the test can say they did it: */
	int recycled, refused, held, joined, forgotten;
} M;

static int idx(const struct rf_stripe *sh)
{
	return (int)(sh - M.g->stripes);
}

static void qdel(int *q, int *n, int v)
{
	int i;

	for (i = 0; i < *n && q[i] != v; i++)
		;
	assert_true(i < *n);
	memmove(q + i, q + i + 1, (size_t)(*n - i - 1) * sizeof(*q));
	(*n)--;
}

/* The group's lists and flags against their own invariants and the
 * model; g->lock held.  The first violation, or NULL. */
static const char *check_group(struct rf_group *g, bool with_model)
{
	static char why[160];
	struct rf_stripe *sh, *prev;
	int i, j, n;

	for (n = 0, prev = NULL, sh = TAILQ_FIRST(&g->lru); sh; prev = sh, sh = TAILQ_NEXT(sh, lru), n++) {
		if (!sh->on_lru || sh->busy || sh->on_handle || sh->on_delayed ||
		    TAILQ_PREV(sh, rf_stripe_tq, lru) != prev)
			return "a head on the LRU list is busy, queued, held or badly linked";
		if (with_model && (n >= M.nlru || M.lru[n] != idx(sh)))
			return "LRU order differs from the model (least recently idle first)";
	}
	if (n != g->nlru || TAILQ_LAST(&g->lru, rf_stripe_tq) != prev || (with_model && n != M.nlru))
		return "LRU length or tail wrong";
	for (n = 0, prev = NULL, sh = STAILQ_FIRST(&g->handle); sh; prev = sh, sh = STAILQ_NEXT(sh, handle), n++) {
		if (!sh->on_handle || sh->busy || sh->on_lru || sh->on_delayed)
			return "a head on the handle list is busy, idle or held";
		if (with_model && (n >= M.nhandle || M.handle[n] != idx(sh)))
			return "handle order differs from the model";
	}
	/* (the tail pointer: glibc's queue.h has no STAILQ_LAST) */
	if (g->handle.stqh_last != (prev ? &STAILQ_NEXT(prev, handle) : &STAILQ_FIRST(&g->handle)) ||
	    (with_model && n != M.nhandle))
		return "handle list length or tail wrong";
	for (n = 0, prev = NULL, sh = TAILQ_FIRST(&g->delayed); sh; prev = sh, sh = TAILQ_NEXT(sh, delay), n++)
		if (!sh->on_delayed || sh->busy || sh->on_handle || sh->on_lru || STAILQ_EMPTY(&sh->towrite) ||
		    TAILQ_PREV(sh, rf_stripe_tq, delay) != prev || (prev && prev->delay_ns > sh->delay_ns))
			return "a held head is busy, listed elsewhere, has no writes, or is out of order";
	if (n != g->ndelayed || TAILQ_LAST(&g->delayed, rf_stripe_tq) != prev || atomic_load(&g->a->nheld) != n)
		return "delayed count, tail or a->nheld wrong";
	for (i = 0; i < g->nstripes; i++) {
		sh = &g->stripes[i];
		if (sh->busy + sh->on_lru + sh->on_handle + sh->on_delayed != 1) {
			snprintf(why, sizeof(why), "head %d is in %d places (busy %d lru %d handle %d held %d)", i,
				 sh->busy + sh->on_lru + sh->on_handle + sh->on_delayed, sh->busy, sh->on_lru,
				 sh->on_handle, sh->on_delayed);
			return why;
		}
		for (j = 0; sh->hashed && j < i; j++)
			if (g->stripes[j].hashed && g->stripes[j].sector == sh->sector)
				return "two hashed heads for one sector";
		if (sh->hashed && rf_stripe_get(g, sh->sector) != sh)
			return "a cached sector's lookup finds another head";
		if (!with_model)
			continue;
		if (M.h[i].hashed != sh->hashed || (sh->hashed && M.h[i].sector != sh->sector))
			return "hashed sector differs from the model";
		if (M.h[i].state != (sh->busy ? S_BUSY : sh->on_lru ? S_LRU : sh->on_handle ? S_HANDLE : S_DELAYED))
			return "head state differs from the model";
		if (M.h[i].uptodate != sh->uptodate)
			return "uptodate differs from the model";
	}
	return NULL;
}

static void check_now(void)
{
	const char *why;

	pthread_mutex_lock(&M.g->lock);
	why = check_group(M.g, true);
	pthread_mutex_unlock(&M.g->lock);
	if (why)
		fail_msg("%s", why);
}

/* A piece of head sector, read or write. */
static struct rf_piece *piece(uint64_t sector, bool write)
{
	struct rf_piece *p;

	assert_true(M.np < NPIECES);
	p = &M.p[M.np++];
	memset(p, 0, sizeof(*p));
	p->kind = RF_PIECE_STRIPE;
	p->write = write;
	p->key = sector;
	p->len = 512;
	return p;
}

static int pid(const struct rf_piece *p)
{
	return (int)(p - M.p);
}

/* Attach p as a worker does (attach_locked() in workers.c): to its head,
 * or to g->deferred when none is free; the model says which. */
static void m_attach(struct rf_piece *p)
{
	struct rf_group *g = M.g;
	struct rf_stripe *sh;
	int want = -1, i;

	for (i = 0; i < NS; i++)
		if (M.h[i].hashed && M.h[i].sector == p->key)
			want = i;
	if (want < 0 && M.nlru) {
		want = M.lru[0];
		M.recycled += M.h[want].hashed;
		M.h[want].hashed = true;
		M.h[want].sector = p->key;
		M.h[want].uptodate = 0;
	}
	pthread_mutex_lock(&g->lock);
	sh = rf_stripe_attach(g, NULL, p);
	if (!sh)
		STAILQ_INSERT_TAIL(&g->deferred, p, link);
	pthread_mutex_unlock(&g->lock);
	if (want < 0) {
		if (sh)
			fail_msg("attach gave head %d with every head in use", idx(sh));
		M.ndeferred++;
		M.refused++;
		return;
	}
	if (!sh || idx(sh) != want)
		fail_msg("sector %llu: attach gave head %d, the model %d", (unsigned long long)p->key,
			 sh ? idx(sh) : -1, want);
	struct mhead *h = &M.h[want];

	h->pend[h->npend++] = pid(p);
	if (h->state == S_LRU)
		qdel(M.lru, &M.nlru, want);
	if (h->state == S_DELAYED)
		M.ndelayed--;
	if (h->state == S_LRU || h->state == S_DELAYED) {
		h->state = S_HANDLE;
		M.handle[M.nhandle++] = want;
	}
}

/* The owner takes its queued pieces as the round's batch (r5_round()):
 * they must be the model's, in order, each seen once. */
static void m_take_batch(int i)
{
	struct rf_stripe *sh = &M.g->stripes[i];
	struct mhead *h = &M.h[i];
	struct rf_piece_q rd = STAILQ_HEAD_INITIALIZER(rd), wr = STAILQ_HEAD_INITIALIZER(wr);
	struct rf_piece *p;
	int k, r = 0, w = 0, nr = 0, nw = 0;

	pthread_mutex_lock(&M.g->lock);
	STAILQ_CONCAT(&rd, &sh->toread);
	STAILQ_CONCAT(&wr, &sh->towrite);
	pthread_mutex_unlock(&M.g->lock);
	STAILQ_FOREACH(p, &rd, link)
		nr++;
	STAILQ_FOREACH(p, &wr, link)
		nw++;
	for (k = 0; k < h->npend; k++) {
		struct rf_piece *want = &M.p[h->pend[k]];

		p = STAILQ_FIRST(want->write ? &wr : &rd);
		for (int s = want->write ? w++ : r++; s > 0 && p; s--)
			p = STAILQ_NEXT(p, link);
		if (p != want)
			fail_msg("head %d: piece %d missing or out of order in its round", i, h->pend[k]);
		if (M.seen[h->pend[k] / 64] >> (h->pend[k] % 64) & 1)
			fail_msg("piece %d reached a round twice", h->pend[k]);
		M.seen[h->pend[k] / 64] |= 1ull << (h->pend[k] % 64);
		h->round[h->nround++] = h->pend[k];
	}
	assert_int_equal(nr + nw, h->npend);
	h->npend = 0;
	STAILQ_CONCAT(&sh->reading, &rd);
	STAILQ_CONCAT(&sh->writing, &wr);
}

/* A worker takes the head at the front of the handle list (group_pass()). */
static void m_take(void)
{
	struct rf_group *g = M.g;
	struct rf_stripe *sh;
	int i;

	pthread_mutex_lock(&g->lock);
	sh = STAILQ_FIRST(&g->handle);
	if (sh) {
		STAILQ_REMOVE_HEAD(&g->handle, handle);
		sh->busy = true;
		sh->on_handle = false;
	}
	pthread_mutex_unlock(&g->lock);
	if (!M.nhandle) {
		assert_null(sh);
		return;
	}
	assert_non_null(sh);
	i = idx(sh);
	assert_int_equal(i, M.handle[0]);
	qdel(M.handle, &M.nhandle, i);
	M.h[i].state = S_BUSY;
	M.h[i].nround = 0;
	m_take_batch(i);
}

static int random_busy(void)
{
	int i, k = (int)(fx_rand() % NS);

	for (i = 0; i < NS; i++)
		if (M.h[(k + i) % NS].state == S_BUSY)
			return (k + i) % NS;
	return -1;
}

/* The owner ends the round (its blocks uptodate now): another round
 * when pieces came meanwhile, else idle at the LRU's tail; pieces that
 * waited for a head go back to g->incoming and are attached again. */
static void m_finish(int i)
{
	struct rf_stripe *sh = &M.g->stripes[i];
	struct mhead *h = &M.h[i];
	struct rf_piece_q in = STAILQ_HEAD_INITIALIZER(in);
	struct rf_piece *p;
	bool again;
	int n = 0, waited;

	sh->uptodate = h->uptodate = 0xf;
	STAILQ_INIT(&sh->reading);
	STAILQ_INIT(&sh->writing);
	h->nround = 0;
	again = rf_stripe_finish(sh);
	assert_int_equal(again, h->npend > 0);
	if (again) {
		m_take_batch(i);
		return;
	}
	h->state = S_LRU;
	M.lru[M.nlru++] = i;
	pthread_mutex_lock(&M.g->lock);
	assert_true(STAILQ_EMPTY(&M.g->deferred));
	STAILQ_CONCAT(&in, &M.g->incoming);
	pthread_mutex_unlock(&M.g->lock);
	/* Every piece that waited comes back (and may wait again). */
	waited = M.ndeferred;
	M.ndeferred = 0;
	for (; (p = STAILQ_FIRST(&in)); n++) {
		STAILQ_REMOVE_HEAD(&in, link);
		m_attach(p);
	}
	assert_int_equal(n, waited);
}

/* The owner holds a write round back (the level's hold): when pieces
 * came meanwhile they join the round instead. */
static void m_delay(int i)
{
	struct rf_stripe *sh = &M.g->stripes[i];
	struct mhead *h = &M.h[i];
	bool came = h->npend > 0;
	int k;

	for (k = 0; k < h->nround; k++)
		if (!M.p[h->round[k]].write)
			return;         /* the level holds write rounds only */
	if (!h->nround)
		return;
	if (rf_stripe_delay(sh) != !came)
		fail_msg("head %d: delay says %s with %d pieces queued", i, came ? "held" : "not held", h->npend);
	if (came) {
		struct rf_piece *p;

		/* The new pieces follow the round's, in order. */
		for (k = 0; k < h->npend; k++) {
			h->round[h->nround++] = h->pend[k];
			M.seen[h->pend[k] / 64] |= 1ull << (h->pend[k] % 64);
		}
		h->npend = 0;
		M.joined++;
		k = 0;
		STAILQ_FOREACH(p, &sh->writing, link)
			k++;
		STAILQ_FOREACH(p, &sh->reading, link)
			k++;
		assert_int_equal(k, h->nround);
		return;
	}
	/* Held: its writes are queued again (they reach a round again). */
	for (k = 0; k < h->nround; k++) {
		h->pend[h->npend++] = h->round[k];
		M.seen[h->round[k] / 64] &= ~(1ull << (h->round[k] % 64));
	}
	h->nround = 0;
	h->state = S_DELAYED;
	M.ndelayed++;
	M.held++;
}

/* Release every held head onto the handle list, oldest first. */
static void m_release(void)
{
	struct rf_group *g = M.g;
	struct rf_stripe *sh;
	int order[NS], n = 0, k;

	pthread_mutex_lock(&g->lock);
	TAILQ_FOREACH(sh, &g->delayed, delay)
		order[n++] = idx(sh);
	k = rf_delayed_release_locked(g, UINT64_MAX);
	pthread_mutex_unlock(&g->lock);
	assert_int_equal(k, M.ndelayed);
	assert_int_equal(n, M.ndelayed);
	for (k = 0; k < n; k++) {
		assert_true(M.g->stripes[order[k]].no_delay);
		M.h[order[k]].state = S_HANDLE;
		M.handle[M.nhandle++] = order[k];
	}
	M.ndelayed = 0;
}

/* Heads a release moved from the delayed list to the handle list, into
 * the model (in the list's order). */
static void sync_released(void)
{
	struct rf_stripe *sh;

	STAILQ_FOREACH(sh, &M.g->handle, handle)
		if (M.h[idx(sh)].state == S_DELAYED) {
			M.h[idx(sh)].state = S_HANDLE;
			M.handle[M.nhandle++] = idx(sh);
			M.ndelayed--;
		}
}

/* Forget the heads of sectors [lo, hi): idle ones go, queued or held
 * ones lose their blocks (none of them busy: the call waits for busy
 * ones, which nobody here would end). */
static void m_forget(uint64_t lo, uint64_t hi)
{
	int i;

	for (i = 0; i < NS; i++)
		if (M.h[i].hashed && M.h[i].sector >= lo && M.h[i].sector < hi && M.h[i].state == S_BUSY)
			return;
	rf_stripe_cache_forget(M.a, lo, hi);
	for (i = 0; i < NS; i++) {
		if (!M.h[i].hashed || M.h[i].sector < lo || M.h[i].sector >= hi)
			continue;
		if (M.h[i].state == S_LRU) {
			M.h[i].hashed = false;
			M.forgotten++;
		} else {
			/* queued or held: kept, its blocks forgotten */
			M.h[i].uptodate = 0;
		}
	}
}

/* A raid5 of 4 not started, its groups replaced by one group of NS heads
 * without threads; the model of it, every head idle and unhashed. */
static void model_open(void)
{
	const struct fx_array fa = { .what = "sm", .level = 5, .layout = 2, .n = 4, .chunk = CHUNK };
	struct rf_config cfg;
	int i;

	memset(&M, 0, sizeof(M));
	fx_make_members(fa.what, 4, MEMBER_BYTES, false);
	fx_config(&cfg, &fa);
	M.a = fx_open_only(&cfg, "sm");
	assert_int_equal(rf_groups_alloc(M.a, 1, 0, NS, M.a->nmembers, &M.a->groups), 0);
	M.a->ngroups = 1;
	M.g = &M.a->groups[0];
	assert_int_equal(M.g->nstripes, NS);
	for (i = 0; i < NS; i++)
		M.lru[M.nlru++] = i;
	check_now();
}

static void model_close(void)
{
	rf_groups_free(M.a, M.a->groups, M.a->ngroups);
	M.a->groups = NULL;
	M.a->ngroups = 0;
	rf_array_close(M.a);
}

/* ---- tests of the state machine ---- */

/* A random sequence of steps against the model; sectors over more rows
 * than heads, so heads are recycled and attach runs out of them. */
static void test_model(void **state)
{
	int step, i;

	model_open();
	for (step = 0; step < 6000; step++) {
		unsigned op = (unsigned)(fx_rand() % 100);

		if (op < 40) {
			m_attach(piece((fx_rand() % (NS + 8)) * 8, fx_rand() % 4 != 0));
		} else if (op < 60) {
			m_take();
		} else if (op < 85) {
			if ((i = random_busy()) >= 0)
				m_finish(i);
		} else if (op < 93) {
			if ((i = random_busy()) >= 0)
				m_delay(i);
		} else if (op < 97) {
			m_release();
		} else {
			uint64_t lo = (fx_rand() % (NS + 8)) * 8;

			m_forget(lo, lo + (fx_rand() % 6) * 8);
		}
		check_now();
	}
	/* Run everything to its end: nothing is lost on the way. */
	for (step = 0; step < 10000 && (M.nhandle || M.ndelayed || random_busy() >= 0 || M.ndeferred); step++) {
		m_release();
		m_take();
		while ((i = random_busy()) >= 0)
			m_finish(i);
		check_now();
	}
	assert_int_equal(M.nlru, NS);
	assert_int_equal(M.ndeferred, 0);
	print_message("%d pieces: %d heads recycled, %d attaches refused, %d rounds held, %d joined by "
		      "pieces, %d heads forgotten\n", M.np, M.recycled, M.refused, M.held, M.joined, M.forgotten);
	assert_true(M.recycled > 0 && M.refused > 0 && M.held > 0 && M.joined > 0 && M.forgotten > 0);
	for (i = 0; i < M.np; i++)
		if (!(M.seen[i / 64] >> (i % 64) & 1))
			fail_msg("piece %d never reached a round", i);
	model_close();
}

/* Negative control of the check: a busy head put on the LRU as well
 * (handed out twice, were it recycled) is found. */
static void test_check_fails(void **state)
{
	struct rf_stripe *sh;
	const char *why;

	model_open();
	m_attach(piece(8, true));
	m_take();
	sh = &M.g->stripes[random_busy()];
	assert_true(sh->busy);
	pthread_mutex_lock(&M.g->lock);
	assert_null(check_group(M.g, true));
	rf_lru_add_tail(M.g, sh);
	why = check_group(M.g, false);
	pthread_mutex_unlock(&M.g->lock);
	assert_non_null(why);
	print_message("found, as it should: %s\n", why);
	/* Put it back as it was for the close. */
	pthread_mutex_lock(&M.g->lock);
	TAILQ_REMOVE(&M.g->lru, sh, lru);
	sh->on_lru = false;
	M.g->nlru--;
	assert_null(check_group(M.g, false));
	pthread_mutex_unlock(&M.g->lock);
	model_close();
}

/* Every head in use: the next sector is refused; a head going idle sends
 * the waiting piece back to g->incoming, and it then gets that head. */
/* A head with a piece queued (on the handle list) in a range forgotten
 * keeps its place but none of its blocks: its round reads them again
 * (before, it kept serving what the members held before the rewrite). */
static void test_forget_queued_head(void **state)
{
	struct rf_stripe *sh;
	int i;

	(void)state;
	model_open();
	m_attach(piece(8, false));
	m_take();
	i = random_busy();
	m_finish(i);                    /* cached, idle on the LRU */
	m_attach(piece(8, false));      /* a read queued: on the handle list */
	sh = &M.g->stripes[i];
	assert_true(sh->on_handle && sh->uptodate);
	rf_stripe_cache_forget(M.a, 0, 16);
	assert_true(sh->hashed);
	assert_int_equal(sh->uptodate, 0);
	model_close();
}

static void test_pressure(void **state)
{
	struct rf_stripe *first;
	int i;

	model_open();
	for (i = 0; i < NS; i++)
		m_attach(piece((uint64_t)i * 8, true));
	first = STAILQ_FIRST(&M.g->handle);
	assert_int_equal(M.nlru, 0);
	m_attach(piece(1000, true));            /* refused: waits */
	assert_int_equal(M.ndeferred, 1);
	assert_false(STAILQ_EMPTY(&M.g->deferred));
	m_take();                               /* the first head, owned */
	check_now();
	m_finish(idx(first));                   /* idle: the piece comes back and takes it */
	assert_int_equal(M.ndeferred, 0);
	assert_true(first->hashed && first->sector == 1000 && first->on_handle);
	assert_int_equal(first->uptodate, 0);   /* a new sector: nothing cached */
	check_now();
	model_close();
}

/* Held heads: the list stays in first-held order whatever order they are
 * held in; a release by time takes exactly those held before it, oldest
 * first; the bound (rf_delayed_check_locked) releases those older than
 * rf_delay_bound_ns and keeps the others; with pieces waiting for a head
 * and none busy or queued, it releases the older half. */
static void test_delayed(void **state)
{
	static const uint64_t at[6] = { 500, 100, 400, 200, 600, 300 };
	struct rf_group *g;
	struct rf_stripe *sh;
	uint64_t released;
	int i, n;

	model_open();
	g = M.g;
	for (i = 0; i < 6; i++) {
		m_attach(piece((uint64_t)i * 8, true));
		m_take();
	}
	/* Held in the order 0..5 with first-held times out of order. */
	for (i = 0; i < 6; i++) {
		int h = -1;

		for (int k = 0; k < NS; k++)
			if (M.h[k].state == S_BUSY && M.h[k].sector == (uint64_t)i * 8)
				h = k;
		g->stripes[h].delay_ns = at[i];
		m_delay(h);
		check_now();
	}
	assert_int_equal(g->ndelayed, 6);
	/* Release those held before 350: 100, 200, 300, in that order. */
	released = atomic_load(&M.a->stats.released);
	pthread_mutex_lock(&g->lock);
	n = rf_delayed_release_locked(g, 350);
	pthread_mutex_unlock(&g->lock);
	assert_int_equal(n, 3);
	assert_int_equal(atomic_load(&M.a->stats.released) - released, 3);
	i = 0;
	STAILQ_FOREACH(sh, &g->handle, handle)
		assert_int_equal(sh->delay_ns, 100 * (uint64_t)(++i));
	TAILQ_FOREACH(sh, &g->delayed, delay)
		assert_true(sh->delay_ns > 350);
	sync_released();
	check_now();
	/* The bound: one held long ago goes, one held just now stays. */
	TAILQ_FOREACH(sh, &g->delayed, delay)
		sh->delay_ns = sh == TAILQ_FIRST(&g->delayed) ? 1 : rf_now_ns() + 10 * rf_delay_bound_ns;
	pthread_mutex_lock(&g->lock);
	n = g->ndelayed;
	rf_delayed_check_locked(g);
	assert_int_equal(g->ndelayed, n - 1);
	STAILQ_FOREACH(sh, &g->handle, handle)
		if (!STAILQ_NEXT(sh, handle))
			assert_int_equal(sh->delay_ns, 1);      /* the last one queued */
	pthread_mutex_unlock(&g->lock);
	sync_released();
	check_now();
	/* Pressure: everything else busy-free, a piece waiting: drain the
	 * handle list and fill every idle head with held ones. */
	m_release();
	while (M.nhandle) {
		m_take();
		m_finish(random_busy());
	}
	for (i = 0; i < NS; i++) {
		int h;

		m_attach(piece(5000 + (uint64_t)i * 8, true));
		m_take();
		h = random_busy();
		g->stripes[h].delay_ns = 1000 + (uint64_t)i;
		m_delay(h);
	}
	check_now();
	m_attach(piece(99999, true));           /* no head left: waits */
	assert_int_equal(M.ndeferred, 1);
	pthread_mutex_lock(&g->lock);
	assert_int_equal(g->nstripes - g->nlru - g->ndelayed, 0);
	rf_delayed_check_locked(g);
	n = NS - g->ndelayed;
	i = 0;
	STAILQ_FOREACH(sh, &g->handle, handle)
		assert_int_equal(sh->delay_ns, 1000 + (uint64_t)i++);   /* the oldest */
	pthread_mutex_unlock(&g->lock);
	assert_true(n >= 1 && n <= NS / 2);
	model_close();
}

/* ---- through a running array ---- */

static uint64_t reads_logged(void)
{
	return fake_bytes(-1, RF_MIO_READ);
}

/* raid5 of 4, parity-last (member k holds data column k, member 3 P),
 * chunk 16 KiB, heads of 4 KiB, on fake IO, fresh members. */
static struct rf_array *open_r5(const char *what, int cache)
{
	const struct fx_array fa = { .what = what, .level = 5, .layout = 5, .n = 4, .chunk = CHUNK };
	struct rf_config cfg;

	fx_make_members(what, 4, MEMBER_BYTES, false);
	fx_config(&cfg, &fa);
	cfg.group_thread_cnt = fx_gtc;
	if (cache)
		cfg.stripe_cache_size = cache;
	fake_reset();
	return fx_open(&cfg, what, fake_ioq_init);
}

/* Whether every member byte offset's xor over the members is zero (any
 * raid5 layout: P is the xor of its row's data); the first offset where
 * it is not, or -1. */
static int64_t xor_check(const char *what)
{
	static char buf[4][MEMBER_BYTES];
	int64_t off;
	int i;

	for (i = 0; i < 4; i++) {
		char p[FX_PATH];
		int fd;

		fx_member_path(p, sizeof(p), what, i);
		fd = open(p, O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(pread(fd, buf[i], MEMBER_BYTES, 0), MEMBER_BYTES);
		close(fd);
	}
	for (off = 0; off < MEMBER_BYTES; off++)
		if (buf[0][off] ^ buf[1][off] ^ buf[2][off] ^ buf[3][off])
			return off;
	return -1;
}

/* Rewrite member m's bytes [off, off + len) xored with x, behind the
 * array. */
static void behind(const char *what, int m, uint64_t off, uint32_t len, uint8_t x)
{
	char p[FX_PATH], *b = malloc(len);
	int fd;

	fx_member_path(p, sizeof(p), what, m);
	fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, b, len, (off_t)off), (ssize_t)len);
	for (uint32_t i = 0; i < len; i++)
		b[i] ^= (char)x;
	assert_int_equal(pwrite(fd, b, len, (off_t)off), (ssize_t)len);
	close(fd);
	free(b);
}

/* A head keeps its blocks: a second write of a block reads nothing.
 * Rows rewritten behind the array (a data block and P, consistently, as
 * a repair does): forgotten, the next write reads them again and parity
 * stays right; not forgotten (the negative control), the next write
 * computes parity from the stale cache and the row's parity is wrong. */
static void cached_run(bool forget)
{
	static char buf[4096];
	struct rf_array *a = open_r5(forget ? "keep-f" : "keep-n", 0);
	const char *what = forget ? "keep-f" : "keep-n";

	fake_log_on = true;
	/* Row 1 (member sectors 32..63): array chunk 3 is its column 0. */
	fx_rand_fill(buf, sizeof(buf));
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 3 * CHUNK, 4096, buf), 0);
	assert_int_equal(reads_logged(), 2 * 4096);     /* old data and P */
	fake_nlog = 0;
	fx_rand_fill(buf, sizeof(buf));
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 3 * CHUNK, 4096, buf), 0);
	assert_int_equal(reads_logged(), 0);            /* cached */
	assert_int_equal(xor_check(what), -1);
	/* Behind the array: data column 1 and P of that block change by the
	 * same byte (the row's xor stays 0); column 0 is written next, and
	 * parity then comes from column 1 (and 2) as cached, or from P. */
	behind(what, 1, CHUNK, 4096, 0x5a);
	behind(what, 3, CHUNK, 4096, 0x5a);
	assert_int_equal(xor_check(what), -1);
	if (forget) {
		rf_writes_hold(a);
		rf_stripe_cache_forget(a, 32, 64);
		rf_writes_release(a);
	}
	fake_nlog = 0;
	fx_rand_fill(buf, sizeof(buf));
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 3 * CHUNK, 4096, buf), 0);
	assert_int_equal(reads_logged(), forget ? 2 * 4096 : 0);
	rf_array_close(a);
	if (forget)
		assert_int_equal(xor_check(what), -1);
	else
		assert_true(xor_check(what) >= 0);
	fake_reset();
}

static void test_cached_blocks(void **state)
{
	cached_run(true);
	cached_run(false);
}

/* Concurrent writers, each in its own slice of the array, small random
 * writes and reads of what they wrote, over many rows: with the smallest
 * cache the heads are recycled under pressure; with resize, the main
 * thread changes the cache's size meanwhile. */
static char *shared_model;
/* Threads do not fail the test themselves (cmocka's asserts are the main
 * thread's): the first failure is kept here. */
static char thread_err[256];
static atomic_bool thread_failed;

#define TCHECK(cond, ...) do { \
	if (!(cond) && !atomic_exchange(&thread_failed, true)) \
		snprintf(thread_err, sizeof(thread_err), __VA_ARGS__); \
} while (0)

static void *writer(void *arg)
{
	struct fx_writer *w = arg;
	uint64_t size = rf_array_size(w->a), slice = size / 4, base = slice * (uint64_t)w->id;
	char *buf = malloc(3 * CHUNK);
	int i;

	for (i = 0; i < w->n; i++) {
		uint32_t len = 512 + (uint32_t)(fx_rng_next(&w->rng) % (3 * CHUNK - 512));
		uint64_t off = base + fx_rng_next(&w->rng) % (slice - len);

		fx_rng_fill(&w->rng, buf, len);
		TCHECK(!testreq_io(w->a, RF_REQ_WRITE, off, len, buf), "write at %llu failed",
		       (unsigned long long)off);
		memcpy(shared_model + off, buf, len);
		if (i % 4 == 3) {
			off = base + fx_rng_next(&w->rng) % (slice - len);
			TCHECK(!testreq_io(w->a, RF_REQ_READ, off, len, buf), "read at %llu failed",
			       (unsigned long long)off);
			TCHECK(!memcmp(buf, shared_model + off, len), "read at %llu: not what was written",
			       (unsigned long long)off);
		}
	}
	free(buf);
	return NULL;
}

/* Every head of every group idle on its LRU (within a second: a head
 * may finish its round just after its request ended). */
static void all_idle(struct rf_array *a)
{
	int i, tries;

	for (tries = 0; tries < 1000; tries++) {
		bool idle = atomic_load(&a->nheld) == 0;

		rf_array_reconf_lock(a);
		for (i = 0; i < a->ngroups; i++) {
			struct rf_group *g = &a->groups[i];
			const char *why;

			pthread_mutex_lock(&g->lock);
			why = check_group(g, false);
			idle = idle && g->nlru == g->nstripes && STAILQ_EMPTY(&g->deferred) &&
			       STAILQ_EMPTY(&g->incoming);
			pthread_mutex_unlock(&g->lock);
			if (why)
				fail_msg("group %d: %s", i, why);
		}
		rf_array_reconf_unlock(a);
		if (idle)
			return;
		usleep(1000);
	}
	fail_msg("heads still in use a second after every request ended");
}

struct resizer {
	struct rf_array *a;
	atomic_bool stop;
	int changes;
};

static void *resize_main(void *arg)
{
	struct resizer *z = arg;
	struct fx_rng r;

	fx_rng_init(&r, 77);
	while (!atomic_load(&z->stop)) {
		int n = 17 + (int)(fx_rng_next(&r) % 500), per;
		struct rf_array_info info;

		TCHECK(!rf_array_set_stripe_cache_size(z->a, n), "stripe_cache_size %d refused", n);
		rf_array_get_info(z->a, &info);
		/* groups of max(16, n / groups) heads, each a block of every member */
		per = n / info.worker_groups < 16 ? 16 : n / info.worker_groups;
		TCHECK(info.stripe_cache_size == n, "stripe_cache_size %d after setting %d", info.stripe_cache_size, n);
		TCHECK(info.stripe_cache_bytes == (uint64_t)info.worker_groups * (uint64_t)per * 4 * 4096,
		       "%llu bytes of cache for %d heads", (unsigned long long)info.stripe_cache_bytes, n);
		TCHECK(info.stripe_cache_active <= info.worker_groups * per, "%d heads active of %d",
		       info.stripe_cache_active, info.worker_groups * per);
		z->changes++;
		usleep(2000);
	}
	return NULL;
}

static void concurrent_run(const char *what, bool resize)
{
	struct rf_array *a = open_r5(what, 17);
	struct resizer z = { .a = a };
	struct rf_array_info info;
	pthread_t t;
	int64_t at;

	shared_model = calloc(1, rf_array_size(a));
	rf_array_get_info(a, &info);
	assert_int_equal(info.stripe_cache_size, 17);
	if (resize) {
		/* md's bounds: refused, nothing changed */
		assert_int_equal(rf_array_set_stripe_cache_size(a, 16), -EINVAL);
		assert_int_equal(rf_array_set_stripe_cache_size(a, 32769), -EINVAL);
		rf_array_get_info(a, &info);
		assert_int_equal(info.stripe_cache_size, 17);
		assert_int_equal(pthread_create(&t, NULL, resize_main, &z), 0);
	}
	fx_writers(a, 4, 60, 100, writer);
	if (resize) {
		atomic_store(&z.stop, true);
		pthread_join(t, NULL);
		assert_true(z.changes > 0);
	}
	if (atomic_load(&thread_failed))
		fail_msg("%s: %s", what, thread_err);
	all_idle(a);
	at = testreq_diff_all(a, shared_model, 256u << 10);
	if (at != -1)
		fail_msg("%s: array byte %lld is not what was written", what, (long long)at);
	rf_array_close(a);
	assert_int_equal(xor_check(what), -1);
	free(shared_model);
}

static void test_eviction(void **state)
{
	concurrent_run("evict", false);
}

static void test_resize(void **state)
{
	concurrent_run("resize", true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_check_fails),
		cmocka_unit_test(test_forget_queued_head),
		cmocka_unit_test(test_pressure),
		cmocka_unit_test(test_delayed),
		cmocka_unit_test_setup(test_cached_blocks, fx_threads2),
		cmocka_unit_test_setup(test_eviction, fx_threads2),
		cmocka_unit_test_setup(test_eviction, fx_inline0),
		cmocka_unit_test_setup(test_resize, fx_threads2),
		cmocka_unit_test_setup(test_resize, fx_inline0),
	};

	return fx_run_tests("stripe-cache", tests);
}
