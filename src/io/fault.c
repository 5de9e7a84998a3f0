/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fault.c - fault injection on member IO (see fault.h for the keys).
 *
 * The decision for one operation is made under the fault's own lock: the
 * counters (matches, candidates, picks) and the random generator move
 * together, so "every=3 count=2" means exactly that even with several
 * workers issuing to the member at once.  The delay is slept after the
 * lock is dropped, so a slow member delays the operations picked, not the
 * other workers' bookkeeping.  A disarmed fault is never locked: the IO
 * path reads `armed` only (rf_fault_check), relaxed, as a flag that may be
 * seen one operation late.
 *
 * Which device owns which fault state is the array's business: each
 * device's backend (struct rf_ioq_member, inside the array's device
 * object) holds its own, which the member IO queues read there.  md/dev-NAME/fault
 * finds a device's state by name in memberctl.c, under the array's
 * reconfiguration lock, so a device being removed is never touched
 * half-way.
 *
 * What it does NOT do: decide what a failed operation means (the engine
 * marks the member faulty, as for a real error), or retry anything.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "raidfuse/fault.h"
#include "raidfuse/lockcheck.h"
#include "raidfuse/util.h"
#include "raidfuse/ioq.h"

#define OPS_DEFAULT ((1u << RF_MIO_READ) | (1u << RF_MIO_WRITE))
#define OPS_ALL (OPS_DEFAULT | (1u << RF_MIO_FSYNC))
#define SEED_DEFAULT 0x9e3779b97f4a7c15ull

/* The errno values a fault can end an operation with, by the names
 * glibc gives them (strerrorname_np).  Not EAGAIN or EINTR: the IO queue
 * retries those, so they would never end. */
static const int errnos[] = {
	EIO, ENOSPC, EROFS, ENXIO, ENODEV, EPERM, EACCES, EBADF,
	EINVAL, ENOMEM, EFBIG, ETIMEDOUT, EREMOTEIO, ENODATA, EILSEQ, EBUSY,
};
#define NERRNOS (sizeof(errnos) / sizeof(errnos[0]))

static const char *const op_names[] = { [RF_MIO_READ] = "read", [RF_MIO_WRITE] = "write",
					[RF_MIO_FSYNC] = "fsync" };

void rf_fault_spec_init(struct rf_fault_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->rate = 1.0;
	s->every = 1;
	s->ops = OPS_DEFAULT;
	s->seed = SEED_DEFAULT;
}

bool rf_fault_spec_active(const struct rf_fault_spec *s)
{
	return s->error || s->delay_us;
}

/* A decimal without sign or suffix. */
static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || __builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
			return -EINVAL;
	}
	*out = v;
	return 0;
}

/* 0..1, or 0%..100%. */
static int parse_rate(const char *s, double *out)
{
	char *end;
	double v;

	if (!*s || *s == ' ' || *s == '+' || *s == '-')
		return -EINVAL;
	v = strtod(s, &end);
	if (end == s)
		return -EINVAL;
	if (*end == '%' && !end[1]) {
		v /= 100;
	} else if (*end) {
		return -EINVAL;
	}
	if (!(v >= 0 && v <= 1))       /* NaN too */
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_ops(const char *s, unsigned *out)
{
	unsigned ops = 0, k;
	const char *p = s;

	if (!strcmp(s, "all")) {
		*out = OPS_ALL;
		return 0;
	}
	while (*p) {
		size_t n = strcspn(p, ",");

		for (k = 0; k < 3; k++)
			if (strlen(op_names[k]) == n && !strncmp(p, op_names[k], n))
				break;
		if (k == 3)
			return -EINVAL;
		ops |= 1u << k;
		p += n;
		if (*p == ',' && !*++p)
			return -EINVAL;
	}
	if (!ops)
		return -EINVAL;
	*out = ops;
	return 0;
}

static int parse_errno(const char *s, int *out)
{
	size_t i;

	if (!strcmp(s, "none")) {
		*out = 0;
		return 0;
	}
	for (i = 0; i < NERRNOS; i++) {
		if (!strcmp(s, strerrorname_np(errnos[i]))) {
			*out = errnos[i];
			return 0;
		}
	}
	return -EINVAL;
}

/* "EIO" ..., or "none" for 0 (a delay only). */
static const char *errno_name(int no)
{
	const char *name = no ? strerrorname_np(no) : NULL;

	return name ? name : "none";
}

int rf_fault_spec_set(struct rf_fault_spec *s, const char *key, const char *val, char *err, size_t errlen)
{
	const char *takes;
	uint64_t v;
	int ret;

	if (!strcmp(key, "error")) {
		takes = "an errno name: EIO, ENOSPC, EROFS, ENXIO, ENODEV, ETIMEDOUT, ... or none";
		ret = parse_errno(val, &s->error);
	} else if (!strcmp(key, "rate")) {
		takes = "a probability from 0 to 1, or 0% to 100%";
		ret = parse_rate(val, &s->rate);
	} else if (!strcmp(key, "every")) {
		takes = "a count of 1 or more";
		ret = parse_u64(val, &v) ?: (v ? 0 : -EINVAL);
		if (!ret)
			s->every = v;
	} else if (!strcmp(key, "ops")) {
		takes = "read, write, fsync (comma separated) or all";
		ret = parse_ops(val, &s->ops);
	} else if (!strcmp(key, "after") || !strcmp(key, "count") || !strcmp(key, "seed")) {
		takes = "a count";
		ret = parse_u64(val, !strcmp(key, "after") ? &s->after : !strcmp(key, "count") ? &s->count : &s->seed);
	} else if (!strcmp(key, "delay_us")) {
		takes = "microseconds, at most 10000000";
		ret = parse_u64(val, &v) ?: (v <= RF_FAULT_MAX_DELAY_US ? 0 : -EINVAL);
		if (!ret)
			s->delay_us = (uint32_t)v;
	} else if (!strcmp(key, "offset") || !strcmp(key, "length")) {
		takes = "a size in bytes (4096, 64K, 1M, 8s)";
		ret = rf_parse_size(val, 1, !strcmp(key, "offset") ? &s->offset : &s->length);
	} else {
		snprintf(err, errlen, "unknown key '%s' (takes error, rate, every, ops, after, count, delay_us, "
			 "offset, length, seed)", key);
		return -EINVAL;
	}
	if (ret)
		snprintf(err, errlen, "%s: '%s' is not %s", key, val, takes);
	return ret ? -EINVAL : 0;
}

int rf_fault_parse(const char *text, struct rf_fault_spec *s, char *err, size_t errlen)
{
	char word[256], *eq;
	const char *p = text;
	struct rf_fault_spec n;
	int ret;

	rf_fault_spec_init(&n);
	p += strspn(p, " \t");
	if (!strcmp(p, "off") || !*p) {
		*s = n;
		return 0;
	}
	while (*p) {
		size_t len = strcspn(p, " \t");

		if (len >= sizeof(word)) {
			snprintf(err, errlen, "a word of %zu bytes is too long", len);
			return -EINVAL;
		}
		memcpy(word, p, len);
		word[len] = '\0';
		p += len;
		p += strspn(p, " \t");
		eq = strchr(word, '=');
		if (!eq) {
			snprintf(err, errlen, "'%s' is not key=value (or the whole text \"off\")", word);
			return -EINVAL;
		}
		*eq = '\0';
		ret = rf_fault_spec_set(&n, word, eq + 1, err, errlen);
		if (ret)
			return ret;
	}
	*s = n;
	return 0;
}

int rf_fault_format(const struct rf_fault_spec *s, char *buf, size_t size)
{
	struct rf_fault_spec d;
	size_t n = 0;
	unsigned k;
	int r;

#define PUT(...)                                                                 \
	do {                                                                     \
		r = snprintf(buf + n, n < size ? size - n : 0, __VA_ARGS__);     \
		n += (size_t)(r > 0 ? r : 0);                                    \
	} while (0)
	if (!rf_fault_spec_active(s)) {
		PUT("off");
		return n < size ? (int)n : -EOVERFLOW;
	}
	rf_fault_spec_init(&d);
	PUT("error=%s", errno_name(s->error));
	if (s->rate != d.rate) {
		/* The fewest digits (6 at least) that read back as the same
		 * rate: "%.6g" of 0.99999999995 reads back as 1, the default. */
		char rs[32];
		int prec = 6;

		do
			snprintf(rs, sizeof(rs), "%.*g", prec, s->rate);
		while (strtod(rs, NULL) != s->rate && ++prec < 17);
		if (strtod(rs, NULL) != s->rate)
			snprintf(rs, sizeof(rs), "%.17g", s->rate);
		PUT(" rate=%s", rs);
	}
	if (s->every != d.every)
		PUT(" every=%llu", (unsigned long long)s->every);
	PUT(" ops=");
	for (k = 0; k < 3; k++)
		if (s->ops & (1u << k))
			PUT("%s%s", s->ops & ((1u << k) - 1) ? "," : "", op_names[k]);
	if (s->after)
		PUT(" after=%llu", (unsigned long long)s->after);
	if (s->count)
		PUT(" count=%llu", (unsigned long long)s->count);
	if (s->delay_us)
		PUT(" delay_us=%u", s->delay_us);
	if (s->offset)
		PUT(" offset=%llu", (unsigned long long)s->offset);
	if (s->length)
		PUT(" length=%llu", (unsigned long long)s->length);
	if (s->seed != d.seed)
		PUT(" seed=%llu", (unsigned long long)s->seed);
#undef PUT
	return n < size ? (int)n : -EOVERFLOW;
}

/* ---------------------------------------------------------------- state */

struct rf_fault *rf_fault_new(void)
{
	struct rf_fault *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	pthread_mutex_init(&f->lock, NULL);
	rf_lock_rank(&f->lock, RF_LOCK_LEAF, "fault spec lock");
	rf_fault_spec_init(&f->spec);
	f->rng = f->spec.seed;
	return f;
}

void rf_fault_free(struct rf_fault *f)
{
	if (!f)
		return;
	pthread_mutex_destroy(&f->lock);
	free(f);
}

void rf_fault_set(struct rf_fault *f, const struct rf_fault_spec *s)
{
	pthread_mutex_lock(&f->lock);
	f->spec = *s;
	memset(&f->st, 0, sizeof(f->st));
	f->candidates = f->picked = 0;
	f->rng = s->seed ? s->seed : SEED_DEFAULT;
	atomic_store_explicit(&f->armed, rf_fault_spec_active(s), memory_order_relaxed);
	pthread_mutex_unlock(&f->lock);
}

void rf_fault_get(struct rf_fault *f, struct rf_fault_spec *s, struct rf_fault_stats *st)
{
	pthread_mutex_lock(&f->lock);
	*s = f->spec;
	*st = f->st;
	pthread_mutex_unlock(&f->lock);
}

/* xorshift64*: a uniform double in [0, 1).  f->lock held. */
static double next_uniform(struct rf_fault *f)
{
	uint64_t x = f->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	f->rng = x;
	return (double)((x * 0x2545f4914f6cdd1dull) >> 11) / (double)(1ull << 53);
}

int rf_fault_hit(struct rf_fault *f, int op, uint64_t off, uint64_t len)
{
	const struct rf_fault_spec *s = &f->spec;
	uint32_t delay = 0;
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	if (!rf_fault_spec_active(s) || !(s->ops & (1u << op)))
		goto out;
	/* fsync has no range: it touches every byte */
	if (op != RF_MIO_FSYNC &&
	    (off + len <= s->offset || (s->length && off >= s->offset + s->length)))
		goto out;
	if (++f->st.matched <= s->after)
		goto out;
	if (s->count && f->picked >= s->count)
		goto out;
	if (++f->candidates % s->every)
		goto out;
	if (s->rate < 1 && next_uniform(f) >= s->rate)
		goto out;
	f->picked++;
	if (s->delay_us) {
		delay = s->delay_us;
		f->st.delays++;
	}
	if (s->error) {
		ret = -s->error;
		f->st.errors++;
	}
out:
	pthread_mutex_unlock(&f->lock);
	if (delay) {
		struct timespec ts = { .tv_sec = delay / 1000000, .tv_nsec = (long)(delay % 1000000) * 1000 };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	return ret;
}
