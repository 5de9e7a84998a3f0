/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bgthread.c - a periodic, kickable background thread (bgthread.h).
 *
 * The thread sleeps on b->cond until the period's deadline, a kick, a
 * new period or stop.  A deadline or a kick runs fn once with b->lock
 * dropped; a new period only recomputes the deadline.  Stop is seen
 * before anything else, so a kick racing with stop may not run.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "raidfuse/bgthread.h"
#include "raidfuse/lockcheck.h"
#include "raidfuse/util.h"

int rf_cond_init_mono(pthread_cond_t *c)
{
	pthread_condattr_t ca;
	int r;

	r = pthread_condattr_init(&ca);
	if (r)
		return -r;
	r = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!r)
		r = pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
	return -r;
}

void rf_thread_name(const char *fmt, ...)
{
	char name[16];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	pthread_setname_np(pthread_self(), name);
}

int rf_bg_init(struct rf_bgthread *b, const char *name, unsigned period_ms,
	       void (*fn)(void *arg), void *arg)
{
	int r;

	*b = (struct rf_bgthread){ .fn = fn, .arg = arg };
	snprintf(b->name, sizeof(b->name), "%s", name);
	atomic_init(&b->period_ms, period_ms);
	r = -pthread_mutex_init(&b->lock, NULL);
	if (r)
		return r;
	rf_lock_rank(&b->lock, RF_LOCK_LEAF, "background thread lock");
	r = rf_cond_init_mono(&b->cond);
	if (r)
		pthread_mutex_destroy(&b->lock);
	return r;
}

static void *bg_main(void *arg)
{
	struct rf_bgthread *b = arg;

	rf_thread_name("%s", b->name);
	pthread_mutex_lock(&b->lock);
	while (!b->stop) {
		unsigned ms = atomic_load(&b->period_ms);
		struct timespec t = rf_deadline_ms(ms);
		bool due = false;

		b->rearm = false;
		while (!b->stop && !b->kicked && !b->rearm) {
			int r = ms ? pthread_cond_timedwait(&b->cond, &b->lock, &t)
				   : pthread_cond_wait(&b->cond, &b->lock);

			if (r == ETIMEDOUT) {
				due = true;
				break;
			}
		}
		if (b->stop)
			break;
		if (!due && !b->kicked)
			continue;       /* a new period: wait again from now */
		b->kicked = false;
		pthread_mutex_unlock(&b->lock);
		b->fn(b->arg);
		atomic_fetch_add(&b->nr_runs, 1);
		pthread_mutex_lock(&b->lock);
	}
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

int rf_bg_start(struct rf_bgthread *b)
{
	int r;

	if (b->running)
		return 0;
	b->stop = false;
	r = -pthread_create(&b->thread, NULL, bg_main, b);
	if (!r)
		b->running = true;
	return r;
}

/* Set one of the wake flags and signal. */
static void wake(struct rf_bgthread *b, bool *flag)
{
	pthread_mutex_lock(&b->lock);
	*flag = true;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

void rf_bg_kick(struct rf_bgthread *b)
{
	wake(b, &b->kicked);
}

void rf_bg_set_period(struct rf_bgthread *b, unsigned period_ms)
{
	atomic_store(&b->period_ms, period_ms);
	wake(b, &b->rearm);
}

void rf_bg_stop(struct rf_bgthread *b)
{
	if (!b->running)
		return;
	wake(b, &b->stop);
	pthread_join(b->thread, NULL);
	b->running = false;
}

void rf_bg_destroy(struct rf_bgthread *b)
{
	rf_bg_stop(b);
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->lock);
}

struct par_one {
	void (*fn)(void *arg, int i);
	void *arg;
	int i;
};

static void *par_main(void *p)
{
	struct par_one *o = p;

	o->fn(o->arg, o->i);
	return NULL;
}

void rf_run_parallel(int n, void (*fn)(void *arg, int i), void *arg)
{
	enum { MAX = 64 };
	struct par_one one[MAX];
	pthread_t t[MAX];
	bool made[MAX] = { false };
	int i;

	for (i = 1; i < n; i++) {
		if (i < MAX) {
			one[i] = (struct par_one){ .fn = fn, .arg = arg, .i = i };
			made[i] = !pthread_create(&t[i], NULL, par_main, &one[i]);
			if (made[i])
				continue;
		}
		fn(arg, i);
	}
	if (n > 0)
		fn(arg, 0);
	for (i = 1; i < n && i < MAX; i++)
		if (made[i])
			pthread_join(t[i], NULL);
}
