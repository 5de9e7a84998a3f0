/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_rangelock.c - the sync regions' range lock on its own.
 *
 * What must hold: while a range is locked, a write whose rows lie outside
 * it is admitted at once and a write into it is queued (negative control:
 * a range over every row queues the outside write too); unlock hands the
 * queued writes back, every one, oldest first; a lock waits for the
 * admitted writes in flight in its rows, and only for those; a write
 * handed back may meet another locked range and wait there.  Under load
 * (threads writing random rows while ranges lock and unlock), no
 * admitted write is ever in flight in a locked range and none is lost.
 *
 * Seed: RF_TEST_SEED (printed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/rangelock.h"

#define MAXBACK 16

/* What the resubmit function got, in order. */
static struct rf_rl_ent *back[MAXBACK];
static int nback;

static void record(struct rf_rl_ent *e, void *priv)
{
	(void)priv;
	assert_true(nback < MAXBACK);
	assert_int_equal(e->state, RF_RL_NONE);
	back[nback++] = e;
}

/* The scenario of a sync region at rows [1000, 2000) seen by a write
 * outside it ([0, 8)) and one into it ([1500, 1508)), with the region's
 * range lo..hi: whether each was held. */
static void region_and_two_writes(uint64_t lo, uint64_t hi, bool *outside_held, bool *inside_held)
{
	struct rf_rangelock rl;
	struct rf_range r;
	struct rf_rl_ent out = { 0 }, in = { 0 };

	nback = 0;
	assert_int_equal(rf_rangelock_init(&rl, record, NULL), 0);
	rf_rangelock_arm(&rl);
	rf_rangelock_lock(&rl, &r, lo, hi);
	*outside_held = rf_rangelock_admit(&rl, &out, 0, 8) == 1;
	*inside_held = rf_rangelock_admit(&rl, &in, 1500, 1508) == 1;
	assert_int_equal(rf_rangelock_queued(&rl, &r), (unsigned)*outside_held + (unsigned)*inside_held);
	assert_int_equal(atomic_load(&rl.nwaiting), (unsigned)*outside_held + (unsigned)*inside_held);
	/* Nothing is handed back while the range is locked. */
	assert_int_equal(nback, 0);
	if (!*outside_held)
		rf_rangelock_end(&rl, &out);
	rf_rangelock_unlock(&rl, &r);
	/* Every held write came back, in arrival order. */
	assert_int_equal(nback, (int)*outside_held + (int)*inside_held);
	if (*outside_held)
		assert_ptr_equal(back[0], &out);
	if (*inside_held)
		assert_ptr_equal(back[nback - 1], &in);
	assert_int_equal(atomic_load(&rl.nwaiting), 0);
	rf_rangelock_disarm(&rl);
	rf_rangelock_destroy(&rl);
}

static void test_outside_never_held(void **state)
{
	bool out, in;

	(void)state;
	region_and_two_writes(1000, 2000, &out, &in);
	assert_false(out);
	assert_true(in);
	/* Negative control: a lock over everything (the old drain of every
	 * write) holds the outside write as well. */
	region_and_two_writes(0, UINT64_MAX, &out, &in);
	assert_true(out);
	assert_true(in);
}

/* Edges: [lo, hi) is half open, for the range and for writes. */
static void test_edges(void **state)
{
	struct rf_rangelock rl;
	struct rf_range r;
	struct rf_rl_ent e[4] = { 0 };
	int i;

	(void)state;
	nback = 0;
	assert_int_equal(rf_rangelock_init(&rl, record, NULL), 0);
	rf_rangelock_lock(&rl, &r, 100, 200);
	assert_int_equal(rf_rangelock_admit(&rl, &e[0], 92, 100), 0);
	assert_int_equal(rf_rangelock_admit(&rl, &e[1], 200, 208), 0);
	assert_int_equal(rf_rangelock_admit(&rl, &e[2], 96, 101), 1);
	assert_int_equal(rf_rangelock_admit(&rl, &e[3], 199, 200), 1);
	assert_int_equal(e[0].state, RF_RL_INFLIGHT);
	assert_int_equal(e[2].state, RF_RL_QUEUED);
	rf_rangelock_unlock(&rl, &r);
	assert_int_equal(nback, 2);
	assert_ptr_equal(back[0], &e[2]);
	assert_ptr_equal(back[1], &e[3]);
	for (i = 0; i < 2; i++)
		rf_rangelock_end(&rl, &e[i]);
	assert_true(LIST_EMPTY(&rl.inflight));
	rf_rangelock_destroy(&rl);
}

/* Many writes queued on one range come back in arrival order. */
static void test_order(void **state)
{
	struct rf_rangelock rl;
	struct rf_range r;
	struct rf_rl_ent e[MAXBACK] = { 0 };
	int i;

	(void)state;
	nback = 0;
	assert_int_equal(rf_rangelock_init(&rl, record, NULL), 0);
	rf_rangelock_lock(&rl, &r, 0, 64);
	for (i = 0; i < MAXBACK; i++)
		assert_int_equal(rf_rangelock_admit(&rl, &e[i], (uint64_t)(i * 37 % 64), (uint64_t)(i * 37 % 64) + 1), 1);
	rf_rangelock_unlock(&rl, &r);
	assert_int_equal(nback, MAXBACK);
	for (i = 0; i < MAXBACK; i++)
		assert_ptr_equal(back[i], &e[i]);
	rf_rangelock_destroy(&rl);
}

/* A write handed back is admitted again by its resubmit path: it may
 * meet a second locked range and wait there. */
static struct rf_rangelock *readmit_rl;
static int readmit_queued;

static void readmit(struct rf_rl_ent *e, void *priv)
{
	(void)priv;
	readmit_queued += rf_rangelock_admit(readmit_rl, e, e->lo, e->hi);
}

static void test_two_ranges(void **state)
{
	struct rf_rangelock rl;
	struct rf_range r1, r2, *first, *second;
	struct rf_rl_ent e = { 0 };

	(void)state;
	assert_int_equal(rf_rangelock_init(&rl, readmit, NULL), 0);
	readmit_rl = &rl;
	readmit_queued = 0;
	rf_rangelock_lock(&rl, &r1, 0, 100);
	rf_rangelock_lock(&rl, &r2, 100, 200);
	assert_int_equal(rf_rangelock_admit(&rl, &e, 90, 110), 1);
	/* It waits on one of them; unlocked, that one hands it back and it
	 * waits on the other. */
	first = rf_rangelock_queued(&rl, &r1) ? &r1 : &r2;
	second = first == &r1 ? &r2 : &r1;
	assert_int_equal(rf_rangelock_queued(&rl, first) + rf_rangelock_queued(&rl, second), 1);
	rf_rangelock_unlock(&rl, first);
	assert_int_equal(readmit_queued, 1);
	assert_int_equal(rf_rangelock_queued(&rl, second), 1);
	rf_rangelock_unlock(&rl, second);
	assert_int_equal(readmit_queued, 1);
	assert_int_equal(e.state, RF_RL_INFLIGHT);
	rf_rangelock_end(&rl, &e);
	rf_rangelock_destroy(&rl);
}

/* ---- a lock waits for the writes in flight in its rows ---- */

struct locker {
	struct rf_rangelock *rl;
	struct rf_range r;
	uint64_t lo, hi;
	atomic_int locked;
};

static void *locker_main(void *arg)
{
	struct locker *l = arg;

	rf_rangelock_lock(l->rl, &l->r, l->lo, l->hi);
	atomic_store(&l->locked, 1);
	return NULL;
}

static unsigned lockers(struct rf_rangelock *rl)
{
	unsigned n;

	pthread_mutex_lock(&rl->lock);
	n = rl->lockers;
	pthread_mutex_unlock(&rl->lock);
	return n;
}

static void test_waits_for_inflight(void **state)
{
	struct rf_rangelock rl;
	struct rf_rl_ent away = { 0 }, in = { 0 }, late = { 0 };
	struct locker l = { .rl = &rl, .lo = 1000, .hi = 2000 };
	pthread_t t;

	(void)state;
	nback = 0;
	assert_int_equal(rf_rangelock_init(&rl, record, NULL), 0);
	/* In flight before the lock: one away from it, one in it. */
	assert_int_equal(rf_rangelock_admit(&rl, &away, 0, 8), 0);
	assert_int_equal(rf_rangelock_admit(&rl, &in, 1500, 1508), 0);
	assert_int_equal(pthread_create(&t, NULL, locker_main, &l), 0);
	/* The locker sleeps on the write in its rows (deterministic: it
	 * says so under the lock). */
	while (lockers(&rl) != 1)
		usleep(100);
	assert_int_equal(atomic_load(&l.locked), 0);
	/* Its range is in place already: a new write into it is queued. */
	assert_int_equal(rf_rangelock_admit(&rl, &late, 1800, 1808), 1);
	/* The write away from it ending does not let it go... */
	rf_rangelock_end(&rl, &away);
	assert_int_equal(atomic_load(&l.locked), 0);
	/* ...the one in its rows does. */
	rf_rangelock_end(&rl, &in);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&l.locked), 1);
	rf_rangelock_unlock(&rl, &l.r);
	assert_int_equal(nback, 1);
	assert_ptr_equal(back[0], &late);
	rf_rangelock_destroy(&rl);
}

/* ---- under load ---- */

#define ROWS 64
#define WRITERS 4
#define WRITES 3000

static struct rf_rangelock srl;
static atomic_int row_busy[ROWS];       /* admitted writes in flight per row */
static atomic_int row_locked[ROWS];     /* a range holds the row */
static atomic_int ended, violations;

static void do_write(struct rf_rl_ent *e)
{
	uint64_t r;

	for (r = e->lo; r < e->hi; r++) {
		if (atomic_load(&row_locked[r]))
			atomic_fetch_add(&violations, 1);
		atomic_fetch_add(&row_busy[r], 1);
	}
	sched_yield();
	for (r = e->lo; r < e->hi; r++)
		atomic_fetch_sub(&row_busy[r], 1);
	rf_rangelock_end(&srl, e);
	atomic_fetch_add(&ended, 1);
}

static void stress_back(struct rf_rl_ent *e, void *priv)
{
	(void)priv;
	if (!rf_rangelock_admit(&srl, e, e->lo, e->hi))
		do_write(e);
}

static void *writer_main(void *arg)
{
	struct rf_rl_ent *ents = calloc(WRITES, sizeof(*ents));
	unsigned s = (unsigned)(uintptr_t)arg;
	int i;

	assert_non_null(ents);
	for (i = 0; i < WRITES; i++) {
		uint64_t lo;

		s = s * 1103515245u + 12345u;
		lo = (s >> 16) % (ROWS - 2);
		if (!rf_rangelock_admit(&srl, &ents[i], lo, lo + 1 + (s >> 8) % 2))
			do_write(&ents[i]);
	}
	/* Queued ones end on the unlocker's thread: ents stays until all
	 * have. */
	while (atomic_load(&ended) < WRITERS * WRITES)
		usleep(100);
	free(ents);
	return NULL;
}

static void test_stress(void **state)
{
	const char *env = getenv("RF_TEST_SEED");
	unsigned seed = env ? (unsigned)strtoul(env, NULL, 0) : (unsigned)time(NULL);
	pthread_t t[WRITERS];
	struct rf_range r[2];
	int i, round = 0;

	(void)state;
	printf("RF_TEST_SEED=%u\n", seed);
	assert_int_equal(rf_rangelock_init(&srl, stress_back, NULL), 0);
	for (i = 0; i < WRITERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, writer_main, (void *)(uintptr_t)(seed + (unsigned)i)), 0);
	/* Two regions at once, disjoint, walking the rows. */
	while (atomic_load(&ended) < WRITERS * WRITES) {
		uint64_t lo[2], k, j;

		lo[0] = (uint64_t)(round * 8) % ROWS;
		lo[1] = (lo[0] + 32) % ROWS;
		for (j = 0; j < 2; j++) {
			rf_rangelock_lock(&srl, &r[j], lo[j], lo[j] + 8);
			for (k = lo[j]; k < lo[j] + 8; k++) {
				atomic_store(&row_locked[k], 1);
				if (atomic_load(&row_busy[k]))
					atomic_fetch_add(&violations, 1);
			}
		}
		sched_yield();
		for (j = 0; j < 2; j++) {
			for (k = lo[j]; k < lo[j] + 8; k++)
				atomic_store(&row_locked[k], 0);
			rf_rangelock_unlock(&srl, &r[j]);
		}
		round++;
	}
	for (i = 0; i < WRITERS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(atomic_load(&violations), 0);
	assert_int_equal(atomic_load(&ended), WRITERS * WRITES);
	assert_true(LIST_EMPTY(&srl.inflight));
	assert_true(LIST_EMPTY(&srl.ranges));
	printf("stress: %d rounds of two regions, %llu of %d writes held\n", round,
	       (unsigned long long)srl.nheld, WRITERS * WRITES);
	rf_rangelock_destroy(&srl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_outside_never_held),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_two_ranges),
		cmocka_unit_test(test_waits_for_inflight),
		cmocka_unit_test(test_stress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
