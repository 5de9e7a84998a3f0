/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_lockcheck.c - the lock order checker (util/lockcheck.c), driven
 * directly: the order engine.h writes down passes, every way of breaking
 * it is found (an inversion, anything under a leaf, a lock taken twice),
 * a trylock is never refused, a destroyed or never-ranked mutex is not
 * checked, and with abort on (the default, as in the sanitizer builds) a
 * violation ends the process with SIGABRT.
 *
 * In the sanitizer builds (LOCKCHECK=1) the same checker also sees every
 * pthread_mutex_lock of the program; test_wrapped checks that there.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "raidfuse/lockcheck.h"

static pthread_mutex_t reconf, dev, sbs, bm, leaf1, leaf2, plain;

static int setup(void **state)
{
	rf_lockcheck_set_abort(0);
	rf_lockcheck_rank(&reconf, RF_LOCK_RECONF, "reconf_lock");
	rf_lockcheck_rank(&dev, RF_LOCK_DEV, "dev_lock");
	rf_lockcheck_rank(&sbs, RF_LOCK_SBSTATE, "superblock state lock");
	rf_lockcheck_rank(&bm, RF_LOCK_BITMAP, "bitmap lock");
	rf_lockcheck_rank(&leaf1, RF_LOCK_LEAF, "leaf one");
	rf_lockcheck_rank(&leaf2, RF_LOCK_LEAF, "leaf two");
	return 0;
}

static void take(pthread_mutex_t *m)
{
	rf_lockcheck_lock(m, false);
	rf_lockcheck_locked(m);
}

static void take_try(pthread_mutex_t *m)
{
	rf_lockcheck_lock(m, true);
	rf_lockcheck_locked(m);
}

static void give(pthread_mutex_t *m)
{
	rf_lockcheck_unlock(m);
}

/* The written order, every step of it, and leaves under any of it. */
static void test_order_kept(void **state)
{
	unsigned long v = rf_lockcheck_violations();

	take(&reconf);
	take(&dev);
	take(&sbs);
	take(&bm);
	take(&leaf1);
	assert_int_equal(rf_lockcheck_held(), 5);
	give(&leaf1);
	give(&bm);
	give(&sbs);
	take(&leaf2);           /* a leaf under dev_lock */
	give(&leaf2);
	give(&dev);
	take(&bm);              /* a rank skipped is fine */
	give(&bm);
	/* given back out of order */
	take(&dev);
	take(&sbs);
	give(&dev);
	give(&sbs);
	give(&reconf);
	assert_int_equal(rf_lockcheck_held(), 0);
	take(&plain);           /* never ranked: not held, not checked */
	assert_int_equal(rf_lockcheck_held(), 0);
	give(&plain);
	assert_int_equal(rf_lockcheck_violations(), v);
}

/* Each way of breaking it counts one violation. */
static void test_order_broken(void **state)
{
	unsigned long v = rf_lockcheck_violations();

	take(&dev);
	take(&reconf);          /* inversion */
	assert_int_equal(rf_lockcheck_violations(), v + 1);
	give(&reconf);
	take(&dev);             /* twice */
	assert_int_equal(rf_lockcheck_violations(), v + 2);
	give(&dev);
	give(&dev);
	take(&bm);
	take(&sbs);             /* bitmap lock before the superblock state's */
	assert_int_equal(rf_lockcheck_violations(), v + 3);
	give(&sbs);
	give(&bm);
	take(&leaf1);
	take(&leaf2);           /* two leaves */
	assert_int_equal(rf_lockcheck_violations(), v + 4);
	give(&leaf2);
	take(&reconf);          /* anything under a leaf */
	assert_int_equal(rf_lockcheck_violations(), v + 5);
	give(&reconf);
	give(&leaf1);
	assert_int_equal(rf_lockcheck_held(), 0);
}

/* A trylock cannot wait: not refused, and what it took is held. */
static void test_trylock(void **state)
{
	unsigned long v = rf_lockcheck_violations();

	take(&leaf1);
	take_try(&dev);
	assert_int_equal(rf_lockcheck_violations(), v);
	assert_int_equal(rf_lockcheck_held(), 2);
	take(&sbs);             /* under a leaf still */
	assert_int_equal(rf_lockcheck_violations(), v + 1);
	give(&sbs);
	give(&dev);
	give(&leaf1);
}

/* A destroyed mutex is not checked (its memory may become another's);
 * ranked again, it is. */
static void test_destroyed(void **state)
{
	pthread_mutex_t *m = malloc(sizeof(*m));
	unsigned long v = rf_lockcheck_violations();

	rf_lockcheck_rank(m, RF_LOCK_LEAF, "short-lived");
	rf_lockcheck_destroy(m);
	take(m);
	take(&dev);
	assert_int_equal(rf_lockcheck_violations(), v);
	give(&dev);
	give(m);
	rf_lockcheck_rank(m, RF_LOCK_LEAF, "short-lived again");
	take(m);
	take(&dev);
	assert_int_equal(rf_lockcheck_violations(), v + 1);
	give(&dev);
	give(m);
	rf_lockcheck_destroy(m);
	free(m);
}

/* Threads keep their own lists. */
static void *other_thread(void *arg)
{
	take(&dev);
	give(&dev);
	return (void *)(long)rf_lockcheck_held();
}

static void test_per_thread(void **state)
{
	unsigned long v = rf_lockcheck_violations();
	pthread_t t;
	void *held;

	take(&bm);
	assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
	assert_int_equal(pthread_join(t, &held), 0);
	assert_int_equal((long)held, 0);
	assert_int_equal(rf_lockcheck_violations(), v);
	give(&bm);
}

/* With abort on, a violation ends the process: the control that the
 * sanitizer builds' checks would stop a run. */
static void test_aborts(void **state)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (!pid) {
		rf_lockcheck_set_abort(1);
		take(&sbs);
		take(&dev);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGABRT);
}

/* In the sanitizer builds, pthread's own calls reach the checker. */
static void test_wrapped(void **state)
{
#ifdef RF_LOCKCHECK
	pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
	unsigned long v = rf_lockcheck_violations();

	rf_lock_rank(&a, RF_LOCK_DEV, "wrapped dev");
	rf_lock_rank(&b, RF_LOCK_RECONF, "wrapped reconf");
	pthread_mutex_lock(&a);
	assert_int_equal(rf_lockcheck_held(), 1);
	pthread_mutex_lock(&b);
	assert_int_equal(rf_lockcheck_violations(), v + 1);
	pthread_mutex_unlock(&b);
	pthread_mutex_unlock(&a);
	assert_int_equal(rf_lockcheck_held(), 0);
	pthread_mutex_destroy(&a);
	pthread_mutex_destroy(&b);
#else
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_kept),
		cmocka_unit_test(test_order_broken),
		cmocka_unit_test(test_trylock),
		cmocka_unit_test(test_destroyed),
		cmocka_unit_test(test_per_thread),
		cmocka_unit_test(test_aborts),
		cmocka_unit_test(test_wrapped),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
