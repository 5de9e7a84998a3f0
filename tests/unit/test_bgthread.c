/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_bgthread.c - the background thread runs fn every period and on a
 * kick (kicks while it runs coalesce into one more run), a new period
 * takes effect from now without a run, period 0 runs only when kicked,
 * and stop ends it with no further run; the thread carries its name.  Also util.h's integer helpers
 * and deadlines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/bgthread.h"
#include "raidfuse/util.h"

struct probe {
	atomic_int runs;
	atomic_int hold;        /* fn spins while set */
	atomic_int inside;
	char name[16];          /* the thread's name, seen from fn */
};

static void fn(void *arg)
{
	struct probe *p = arg;

	pthread_getname_np(pthread_self(), p->name, sizeof(p->name));
	atomic_store(&p->inside, 1);
	while (atomic_load(&p->hold))
		usleep(1000);
	atomic_fetch_add(&p->runs, 1);
	atomic_store(&p->inside, 0);
}

/* Wait up to ms for p->runs to reach n; the count then. */
static int wait_runs(struct probe *p, int n, int ms)
{
	for (int i = 0; i < ms && atomic_load(&p->runs) < n; i++)
		usleep(1000);
	return atomic_load(&p->runs);
}

static void test_kick_only(void **state)
{
	struct rf_bgthread b;
	struct probe p = { 0 };

	assert_int_equal(rf_bg_init(&b, "rf-test", 0, fn, &p), 0);
	assert_int_equal(rf_bg_start(&b), 0);
	assert_int_equal(rf_bg_start(&b), 0);   /* idempotent */
	usleep(50000);
	assert_int_equal(atomic_load(&p.runs), 0);      /* period 0: never by itself */
	rf_bg_kick(&b);
	assert_int_equal(wait_runs(&p, 1, 2000), 1);
	assert_string_equal(p.name, "rf-test");         /* named as asked */
	/* Kicks while fn runs: one more run, not one per kick. */
	atomic_store(&p.hold, 1);
	rf_bg_kick(&b);
	while (!atomic_load(&p.inside))
		usleep(1000);
	for (int i = 0; i < 5; i++)
		rf_bg_kick(&b);
	atomic_store(&p.hold, 0);
	assert_int_equal(wait_runs(&p, 3, 2000), 3);
	usleep(50000);
	assert_int_equal(atomic_load(&p.runs), 3);
	rf_bg_destroy(&b);
	assert_int_equal(atomic_load(&b.nr_runs), 3);
}

static void test_period(void **state)
{
	struct rf_bgthread b;
	struct probe p = { 0 };
	int n;

	assert_int_equal(rf_bg_init(&b, "rf-test", 10, fn, &p), 0);
	assert_int_equal(rf_bg_start(&b), 0);
	assert_true(wait_runs(&p, 3, 3000) >= 3);
	/* A long period from now: at most the run already due, then none. */
	rf_bg_set_period(&b, 60000);
	usleep(30000);
	n = atomic_load(&p.runs);
	usleep(100000);
	assert_int_equal(atomic_load(&p.runs), n);
	/* Back to short: runs resume without a kick. */
	rf_bg_set_period(&b, 5);
	assert_true(wait_runs(&p, n + 2, 3000) >= n + 2);
	rf_bg_stop(&b);
	n = atomic_load(&p.runs);
	usleep(50000);
	assert_int_equal(atomic_load(&p.runs), n);      /* stopped: no run after */
	rf_bg_stop(&b);                                 /* idempotent */
	rf_bg_destroy(&b);
}

static void test_util(void **state)
{
	struct timespec t = { .tv_sec = 5, .tv_nsec = 999999999 }, now, d;

	assert_true(rf_is_pow2(1) && rf_is_pow2(4096) && rf_is_pow2(1ull << 63));
	assert_false(rf_is_pow2(0) || rf_is_pow2(3) || rf_is_pow2(4097));
	assert_int_equal(rf_round_up(0, 512), 0);
	assert_int_equal(rf_round_up(1, 512), 512);
	assert_int_equal(rf_round_up(1536, 1000), 2000);
	assert_int_equal(rf_div_round_up(1025, 1024), 2);
	rf_timespec_add_ns(&t, 1);
	assert_int_equal(t.tv_sec, 6);
	assert_int_equal(t.tv_nsec, 0);
	rf_timespec_add_ns(&t, 2 * RF_NSEC_PER_SEC + 999999999);
	assert_int_equal(t.tv_sec, 8);
	assert_int_equal(t.tv_nsec, 999999999);
	clock_gettime(CLOCK_MONOTONIC, &now);
	d = rf_deadline_ms(1500);
	assert_true(d.tv_nsec >= 0 && d.tv_nsec < RF_NSEC_PER_SEC);
	assert_true(d.tv_sec - now.tv_sec >= 1 && d.tv_sec - now.tv_sec <= 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kick_only),
		cmocka_unit_test(test_period),
		cmocka_unit_test(test_util),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
