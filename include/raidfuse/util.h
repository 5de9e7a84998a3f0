/* SPDX-License-Identifier: GPL-2.0-or-later */
/* util.h - the small helpers every layer needs, written once.
 *
 * Integer shapes (powers of two, rounding) and deadlines for
 * pthread_cond_timedwait().  Deadlines are on CLOCK_MONOTONIC: a
 * condition variable that waits on one is made with rf_cond_init_mono().
 * Nothing here allocates, locks or logs.
 */
#ifndef RAIDFUSE_UTIL_H
#define RAIDFUSE_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define RF_NSEC_PER_SEC 1000000000L

static inline bool rf_is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* v rounded up to a multiple of m (m > 0, any m). */
static inline uint64_t rf_round_up(uint64_t v, uint64_t m)
{
	return (v + m - 1) / m * m;
}

static inline uint64_t rf_div_round_up(uint64_t v, uint64_t m)
{
	return (v + m - 1) / m;
}

/* t moved on by ns nanoseconds (ns >= 0), normalised. */
static inline void rf_timespec_add_ns(struct timespec *t, int64_t ns)
{
	t->tv_sec += ns / RF_NSEC_PER_SEC;
	t->tv_nsec += ns % RF_NSEC_PER_SEC;
	if (t->tv_nsec >= RF_NSEC_PER_SEC) {
		t->tv_sec++;
		t->tv_nsec -= RF_NSEC_PER_SEC;
	}
}

/* The CLOCK_MONOTONIC time ns nanoseconds from now, for a condition
 * variable made with rf_cond_init_mono(). */
static inline struct timespec rf_deadline_ns(int64_t ns)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	rf_timespec_add_ns(&t, ns);
	return t;
}

static inline struct timespec rf_deadline_ms(uint64_t ms)
{
	return rf_deadline_ns((int64_t)ms * 1000000);
}

/* CLOCK_MONOTONIC now, in milliseconds. */
static inline int64_t rf_mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* A condition variable whose timed waits are on CLOCK_MONOTONIC (a
 * wall-clock step neither shortens nor stretches them). */
int rf_cond_init_mono(pthread_cond_t *c);

/* Name the calling thread (printf-style, cut to the kernel's 15 bytes),
 * so that ps, top and the tests tell the engine's threads apart:
 * rf-gG.W group workers, rf-sync and rf-syncwN the sync walk, rf-mgmt,
 * rf-watch, and the background threads by their service. */
void rf_thread_name(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "512K", "1G", "2048" (plain number in default_unit bytes; a
 * default_unit of 0 makes the suffix mandatory), "8s" (sectors).  Digits,
 * then at most one suffix letter (s, K, M, G, T); no sign, no spaces.
 * Returns 0 or -EINVAL (*out untouched). */
int rf_parse_size(const char *s, uint64_t default_unit, uint64_t *out);

#endif
