/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_timedio.c - a member's metadata IO with a deadline, on its own.
 *
 * What must hold: a call the member answers returns its result and its
 * bytes; a call the member does not answer returns -ETIMEDOUT within the
 * timeout (not much later), and every call after it fails at once while
 * the stuck one has not returned (one thread waits on a hung member, not
 * one per call); the caller's buffer is never written after the call
 * returned (a stuck read lands in t's own buffer); once the member
 * answers, calls work again; freed while stuck, t's thread frees it
 * when the call returns (ASan: no leak, no use after free).  A flush
 * waits on while its device completes IO (a faked stat file whose counts
 * grow) and ends at the deadline once they stop; a read does not.  Negative
 * control: with no timeout (0) the same stuck call is still waiting
 * when the timeout would have ended it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/timedio.h"

/* A fake member: its calls block while `hung`, then read 0xAB bytes. */
struct fake {
	atomic_bool hung;
	atomic_int calls, ended;
};

static void wait_unhung(struct fake *f)
{
	atomic_fetch_add(&f->calls, 1);
	while (atomic_load(&f->hung))
		usleep(1000);
}

static int f_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct fake *f = ctx;

	wait_unhung(f);
	memset(buf, 0xAB, len);
	atomic_fetch_add(&f->ended, 1);
	return 0;
}

static int f_pwrite(void *ctx, const void *buf, size_t len, uint64_t off)
{
	struct fake *f = ctx;

	wait_unhung(f);
	atomic_fetch_add(&f->ended, 1);
	return off == 4096 ? -EIO : 0;
}

static int f_fsync(void *ctx)
{
	struct fake *f = ctx;

	wait_unhung(f);
	atomic_fetch_add(&f->ended, 1);
	return 0;
}

static int64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wrap(struct fake *f, struct rf_timed_io *t, struct rf_sb_io *io)
{
	struct rf_sb_io inner = { .pread = f_pread, .pwrite = f_pwrite, .fsync = f_fsync, .ctx = f,
				  .bytes = 1 << 20 };

	rf_timed_io_wrap(t, &inner, io);
}

static void test_answered(void **state)
{
	struct fake f = { 0 };
	struct rf_timed_io *t = rf_timed_io_new(2000);
	struct rf_sb_io io;
	char buf[512];

	assert_non_null(t);
	wrap(&f, t, &io);
	assert_int_equal(io.bytes, 1 << 20);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(io.pread(io.ctx, buf, sizeof(buf), 0), 0);
	assert_int_equal((unsigned char)buf[0], 0xAB);
	assert_int_equal((unsigned char)buf[511], 0xAB);
	assert_int_equal(io.pwrite(io.ctx, buf, sizeof(buf), 0), 0);
	assert_int_equal(io.pwrite(io.ctx, buf, sizeof(buf), 4096), -EIO);   /* its error, as is */
	assert_int_equal(io.fsync(io.ctx), 0);
	assert_false(rf_timed_io_stuck(t, NULL));
	rf_timed_io_free(t);
}

static void test_stuck(void **state)
{
	struct fake f = { 0 };
	struct rf_timed_io *t = rf_timed_io_new(1000);
	struct rf_sb_io io;
	char buf[512];
	int64_t t0, since = 0;

	wrap(&f, t, &io);
	atomic_store(&f.hung, true);
	memset(buf, 0x11, sizeof(buf));
	t0 = ms_now();
	assert_int_equal(io.pread(io.ctx, buf, sizeof(buf), 0), -ETIMEDOUT);
	assert_in_range(ms_now() - t0, 990, 6000);
	assert_true(rf_timed_io_stuck(t, &since));
	assert_in_range(since, t0 - 5, t0 + 900);
	/* While it hangs: at once (well inside one timeout, however loaded
	 * the machine), and no second call reaches the member. */
	t0 = ms_now();
	assert_int_equal(io.fsync(io.ctx), -ETIMEDOUT);
	assert_int_equal(io.pwrite(io.ctx, buf, sizeof(buf), 0), -ETIMEDOUT);
	assert_true(ms_now() - t0 < 500);
	assert_int_equal(atomic_load(&f.calls), 1);
	/* The member answers: the read lands in t's buffer, not ours. */
	atomic_store(&f.hung, false);
	while (atomic_load(&f.ended) < 1)
		usleep(1000);
	usleep(20000);
	assert_int_equal((unsigned char)buf[0], 0x11);
	assert_false(rf_timed_io_stuck(t, NULL));
	assert_int_equal(io.pread(io.ctx, buf, sizeof(buf), 0), 0);
	assert_int_equal((unsigned char)buf[0], 0xAB);
	rf_timed_io_free(t);
}

static void test_free_while_stuck(void **state)
{
	static struct fake f;   /* outlives the test: the thread still calls it */
	struct rf_timed_io *t = rf_timed_io_new(100);
	struct rf_sb_io io;
	char buf[64];

	wrap(&f, t, &io);
	atomic_store(&f.hung, true);
	assert_int_equal(io.pwrite(io.ctx, buf, sizeof(buf), 0), -ETIMEDOUT);
	rf_timed_io_free(t);
	atomic_store(&f.hung, false);
	while (atomic_load(&f.ended) < 1)
		usleep(1000);
	usleep(50000);  /* its thread frees t (ASan reports a leak otherwise) */
}

/* A block device's stat file, faked: a file whose completed counts a
 * thread raises every 5 ms while `busy` (many times per timeout, so a
 * loaded machine, sanitizers and nice 19 still see progress in each). */
struct fakedev {
	int fd;
	atomic_bool busy, stop;
};

static void *fakedev_main(void *arg)
{
	struct fakedev *d = arg;
	unsigned long long n = 1;
	char line[128];

	while (!atomic_load(&d->stop)) {
		if (atomic_load(&d->busy))
			n++;
		int k = snprintf(line, sizeof(line), "%llu 0 0 0 %llu 0 0 0 0 0 0 0 0 0 0 0 0\n", n, n);
		assert_int_equal(pwrite(d->fd, line, (size_t)k, 0), k);
		usleep(5000);
	}
	return NULL;
}

struct flusher {
	struct rf_sb_io io;
	atomic_int res;
	atomic_bool returned;
	int64_t ended_ms;
};

static void *flusher_main(void *arg)
{
	struct flusher *w = arg;

	atomic_store(&w->res, w->io.fsync(w->io.ctx));
	w->ended_ms = ms_now();
	atomic_store(&w->returned, true);
	return NULL;
}

/* A flush waits on while its device completes IO, and ends at the
 * deadline once the device stops; a read on the same busy device does
 * not wait on (only flushes write back). */
static void test_flush_progress(void **state)
{
	char path[] = "/tmp/rf-timedio-XXXXXX";
	struct fakedev d = { 0 };
	struct fake f = { 0 };
	struct flusher w = { 0 };
	struct rf_timed_io *t = rf_timed_io_new(400);
	struct rf_sb_io io;
	pthread_t dth, wth;
	int64_t t0, stopped;
	char buf[64];

	d.fd = mkstemp(path);
	assert_true(d.fd > 0);
	unlink(path);
	atomic_store(&d.busy, true);
	assert_int_equal(pthread_create(&dth, NULL, fakedev_main, &d), 0);
	usleep(20000);
	rf_timed_io_set_progress(t, d.fd);
	wrap(&f, t, &w.io);
	atomic_store(&f.hung, true);
	assert_int_equal(pthread_create(&wth, NULL, flusher_main, &w), 0);
	usleep(1400000);        /* 3.5 timeouts: the device is busy, the flush waits */
	assert_false(atomic_load(&w.returned));
	stopped = ms_now();
	atomic_store(&d.busy, false);
	pthread_join(wth, NULL);
	assert_int_equal(atomic_load(&w.res), -ETIMEDOUT);
	assert_in_range(w.ended_ms - stopped, 0, 4000);
	/* a read: the deadline is the deadline, busy device or not */
	atomic_store(&f.hung, false);
	while (rf_timed_io_stuck(t, NULL))
		usleep(1000);
	wrap(&f, t, &io);
	atomic_store(&d.busy, true);
	atomic_store(&f.hung, true);
	t0 = ms_now();
	assert_int_equal(io.pread(io.ctx, buf, sizeof(buf), 0), -ETIMEDOUT);
	assert_in_range(ms_now() - t0, 390, 4000);
	atomic_store(&f.hung, false);
	while (rf_timed_io_stuck(t, NULL))
		usleep(1000);
	atomic_store(&d.stop, true);
	pthread_join(dth, NULL);
	rf_timed_io_free(t);
	close(d.fd);
}

/* Two threads call at once from the first call on (the bitmap's and
 * the superblocks' threads on one member): every call answered, in
 * turn, none lost. */
struct caller {
	struct rf_sb_io io;
	int ok;
};

static void *caller_main(void *arg)
{
	struct caller *c = arg;
	char buf[128] = { 0 };
	int i;

	for (i = 0; i < 200; i++)
		c->ok += c->io.pwrite(c->io.ctx, buf, sizeof(buf), 0) == 0 && c->io.fsync(c->io.ctx) == 0;
	return NULL;
}

static void test_concurrent(void **state)
{
	struct fake f = { 0 };
	struct rf_timed_io *t = rf_timed_io_new(5000);
	struct caller c[2] = { 0 };
	pthread_t th[2];
	int i;

	for (i = 0; i < 2; i++) {
		wrap(&f, t, &c[i].io);
		assert_int_equal(pthread_create(&th[i], NULL, caller_main, &c[i]), 0);
	}
	for (i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(c[i].ok, 200);
	}
	assert_int_equal(atomic_load(&f.ended), 800);
	rf_timed_io_free(t);
}

/* Negative control: no timeout, the stuck call is still waiting. */
struct waiter {
	struct rf_sb_io io;
	atomic_bool returned;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->io.fsync(w->io.ctx);
	atomic_store(&w->returned, true);
	return NULL;
}

static void test_no_timeout(void **state)
{
	struct fake f = { 0 };
	struct rf_timed_io *t = rf_timed_io_new(0);
	struct waiter w = { 0 };
	pthread_t th;

	wrap(&f, t, &w.io);
	atomic_store(&f.hung, true);
	assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
	usleep(400000);
	assert_false(atomic_load(&w.returned));
	atomic_store(&f.hung, false);
	pthread_join(th, NULL);
	assert_true(atomic_load(&w.returned));
	rf_timed_io_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answered),
		cmocka_unit_test(test_stuck),
		cmocka_unit_test(test_free_while_stuck),
		cmocka_unit_test(test_flush_progress),
		cmocka_unit_test(test_concurrent),
		cmocka_unit_test(test_no_timeout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
