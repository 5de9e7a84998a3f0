/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fault.h - fault injection on member IO: failure behaviour testable
 * without broken disks.
 *
 * Each device of an array owns one struct rf_fault, off by default.  Armed
 * with a spec, it picks some of the member's operations (by kind, byte
 * range, a skip count, every Nth, a probability, a limit) and for each one
 * picked sleeps delay_us first and/or ends it with -error instead of
 * issuing it.  The member IO queue (ioq.c) asks it before it issues an
 * operation; while a device's fault is off, that costs one load of a flag.
 *
 * A spec is set from text (md/dev-NAME/fault, "error=EIO rate=0.5
 * ops=read,write", "off") or from the config file's faults list; both go
 * through rf_fault_spec_set(), so they take the same keys and values:
 *
 *   error=NAME     errno to end a picked operation with (EIO, ENOSPC, ...;
 *                  "none": delays only)
 *   rate=P         probability a candidate is picked, 0..1 or N% (default 1)
 *   every=N        only every Nth candidate is one (default 1: each)
 *   ops=LIST       read, write, fsync, comma separated, or all (default
 *                  read,write)
 *   after=N        let the first N matching operations through
 *   count=N        pick at most N operations, then go quiet (0: no limit)
 *   delay_us=N     sleep before a picked operation (at most 10 s)
 *   offset=SIZE, length=SIZE   member byte range an operation must touch
 *                  (sizes as in the config: 4096, 64K, 8s; length 0: to
 *                  the end)
 *   seed=N         the random generator's seed (default: fixed per spec)
 *
 * An operation "matches" when its kind is in ops and it touches the range
 * (fsync always does); after `after` matches, each match is a candidate;
 * every Nth candidate, drawn with probability rate, is picked, until count.
 */
#ifndef RAIDFUSE_FAULT_H
#define RAIDFUSE_FAULT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RF_FAULT_MAX_DELAY_US 10000000u

struct rf_fault_spec {
	int error;                      /* positive errno; 0: none */
	double rate;                    /* 0..1 */
	uint64_t every;                 /* >= 1 */
	unsigned ops;                   /* 1 << enum rf_mio_op */
	uint64_t after, count;
	uint32_t delay_us;
	uint64_t offset, length;        /* bytes; length 0: to the end */
	uint64_t seed;
};

struct rf_fault_stats {
	uint64_t matched;               /* operations of its kinds and range */
	uint64_t errors;                /* ended with -error */
	uint64_t delays;                /* delayed */
};

struct rf_fault {
	atomic_bool armed;              /* a spec with an error or a delay is set */
	pthread_mutex_t lock;
	struct rf_fault_spec spec;      /* lock */
	struct rf_fault_stats st;       /* lock */
	uint64_t candidates, picked;    /* lock */
	uint64_t rng;                   /* lock */
};

/* A spec that is off: no error, no delay, the defaults of every key. */
void rf_fault_spec_init(struct rf_fault_spec *s);
/* One key=value of a spec.  0, or -EINVAL with a message in err naming
 * the key, the value and what it takes. */
int rf_fault_spec_set(struct rf_fault_spec *s, const char *key, const char *val, char *err, size_t errlen);
/* A whole spec from text: "off", or key=value words separated by blanks
 * (defaults for the keys not named).  0 or -EINVAL with a message. */
int rf_fault_parse(const char *text, struct rf_fault_spec *s, char *err, size_t errlen);
/* Whether s does anything (an error or a delay). */
bool rf_fault_spec_active(const struct rf_fault_spec *s);
/* s as text rf_fault_parse() takes back ("off" for one that does
 * nothing); the length, or -EOVERFLOW. */
int rf_fault_format(const struct rf_fault_spec *s, char *buf, size_t size);

/* A device's fault state, off; NULL on ENOMEM.  rf_fault_free(NULL) is
 * fine. */
struct rf_fault *rf_fault_new(void);
void rf_fault_free(struct rf_fault *f);
/* Arm f with s (or disarm: a spec that does nothing); the counts start
 * again from 0.  Safe while IO runs. */
void rf_fault_set(struct rf_fault *f, const struct rf_fault_spec *s);
void rf_fault_get(struct rf_fault *f, struct rf_fault_spec *s, struct rf_fault_stats *st);

/* The IO path: an operation op (enum rf_mio_op) of len bytes at member
 * byte off is about to be issued.  Sleeps the delay if one is due, and
 * returns 0 (issue it) or -error (end it with that instead). */
int rf_fault_hit(struct rf_fault *f, int op, uint64_t off, uint64_t len);
/* Whether f may pick operations at all: one flag load. */
static inline bool rf_fault_armed(const struct rf_fault *f)
{
	return f && atomic_load_explicit(&f->armed, memory_order_relaxed);
}
static inline int rf_fault_check(struct rf_fault *f, int op, uint64_t off, uint64_t len)
{
	if (!rf_fault_armed(f))
		return 0;
	return rf_fault_hit(f, op, off, len);
}

struct rf_array;

/* md/dev-NAME/fault: the spec and counts of device name, or set its spec.
 * -ENOENT when the array holds no such device. */
int rf_memberctl_fault_get(struct rf_array *a, const char *name, struct rf_fault_spec *s,
			   struct rf_fault_stats *st);
int rf_memberctl_fault_set(struct rf_array *a, const char *name, const struct rf_fault_spec *s);

#endif
