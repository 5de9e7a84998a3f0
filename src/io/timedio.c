/* SPDX-License-Identifier: GPL-2.0-or-later */
/* timedio.c - a member's metadata IO with a deadline.
 *
 * A disk that hangs does not fail its IO: the system call never returns.
 * The superblock, bitmap and log writes and every member flush (struct
 * rf_sb_io) are made under the array's locks, so one member that hangs
 * there would stop the whole array.  Here each call is handed to a
 * thread of the member's own and waited for until the array's
 * member_timeout: past it the caller gets -ETIMEDOUT (the array fails the
 * member, as for an IO error) and goes on; the call stays with the
 * thread until the kernel returns it.
 *
 * Invariants:
 *  - the caller's buffer is never touched after the call returned: a
 *    write is copied into t's buffer before it is handed over, a read
 *    lands in t's buffer and is copied out only to a caller still
 *    waiting (both under t->lock);
 *  - one call at a time reaches the thread (busy); a caller behind a
 *    busy one waits within its own deadline;
 *  - while a call that was given up on has not returned (stuck), every
 *    new call fails at once: at most one thread per member ever waits on
 *    it, however long it hangs;
 *  - the thread is started by the first call of the process that makes
 *    it (pid): a daemon that forked after assembling has none of its
 *    parent's threads, and starts its own;
 *  - t is freed by the last of its owner (rf_timed_io_free) and its
 *    thread (refs), so a thread stuck past the array's end still finds
 *    its state.
 *
 * A flush may take long on a disk that answers (fsync writes back what
 * the page cache holds of a buffered member): its deadline moves on
 * while the block device under the member completes IO (devstat.h).
 *
 * It does NOT cancel anything: a call stuck in the kernel cannot be; it
 * does NOT decide what a timeout means (the caller fails the member);
 * it does NOT carry the data path (the IO queues, ioq.c).
 *
 * Lock: t->lock, a leaf (taken under the array's device, superblock and
 * bitmap locks; nothing is taken under it, no IO is made with it held).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/devstat.h"
#include "raidfuse/lockcheck.h"
#include "raidfuse/timedio.h"
#include "raidfuse/util.h"

enum { OP_NONE, OP_PREAD, OP_PWRITE, OP_FSYNC };

struct rf_timed_io {
	pthread_mutex_t lock;           /* a leaf: everything below */
	pthread_cond_t cond;            /* lock, CLOCK_MONOTONIC: a call handed over, ended, or freed */
	unsigned timeout_ms;
	int statfd;                     /* > 0: the member's block device's stat (devstat.h,
					 * borrowed): a flush waits on while it progresses */
	struct rf_sb_io inner;
	_Atomic pid_t pid;              /* the process whose thread serves t; 0: none yet
					 * (written under lock, read without it first) */
	int refs;                       /* the owner's and the thread's */
	bool closing;                   /* the owner freed t */
	bool busy;                      /* a call is with the thread (or waiting to be) */
	bool pending;                   /* handed over, not yet taken by the thread */
	bool done;                      /* the thread ended the call: res holds its result */
	bool stuck;                     /* the caller gave up on the call in progress */
	int64_t since_ms;               /* when the stuck call was handed over */
	int op;
	size_t len;
	uint64_t off;
	int res;
	char *buf;                      /* t's, cap bytes */
	size_t cap;
};

/* Drop one reference; t->lock held, released here.  The last frees t. */
static void put_locked(struct rf_timed_io *t)
{
	bool last = --t->refs == 0;

	pthread_mutex_unlock(&t->lock);
	if (!last)
		return;
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	free(t->buf);
	free(t);
}

static void *serve(void *arg)
{
	struct rf_timed_io *t = arg;

	rf_thread_name("rf-tio");
	pthread_mutex_lock(&t->lock);
	for (;;) {
		struct rf_sb_io io;
		int op, r;

		while (!t->pending && !t->closing)
			pthread_cond_wait(&t->cond, &t->lock);
		if (!t->pending)
			break;  /* closing, nothing handed over */
		t->pending = false;
		io = t->inner;
		op = t->op;
		pthread_mutex_unlock(&t->lock);
		/* buf, len, off are the call's until done is set: no caller
		 * changes them while busy. */
		if (op == OP_PREAD)
			r = io.pread(io.ctx, t->buf, t->len, t->off);
		else if (op == OP_PWRITE)
			r = io.pwrite(io.ctx, t->buf, t->len, t->off);
		else
			r = io.fsync(io.ctx);
		pthread_mutex_lock(&t->lock);
		t->res = r;
		t->done = true;
		if (t->stuck) {
			/* Its caller is gone: t is free for the next call. */
			t->stuck = false;
			t->busy = false;
		}
		pthread_cond_broadcast(&t->cond);
	}
	put_locked(t);
	return NULL;
}

/* Start the thread of this process; t->lock held.  0 or -errno. */
static int start_locked(struct rf_timed_io *t)
{
	pthread_attr_t at;
	pthread_t th;
	int r;

	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 64 << 10);
	t->refs++;
	r = pthread_create(&th, &at, serve, t);
	pthread_attr_destroy(&at);
	if (r) {
		t->refs--;
		return -r;
	}
	atomic_store(&t->pid, getpid());
	return 0;
}

/* A forked child: t's state as the parent left it, without its thread
 * (the parent's calls all ended: none is made across a fork). */
static void forked(struct rf_timed_io *t)
{
	pthread_mutex_init(&t->lock, NULL);
	rf_lock_rank(&t->lock, RF_LOCK_LEAF, "member metadata IO lock");
	rf_cond_init_mono(&t->cond);
	t->refs = 1;
	t->busy = t->pending = t->done = t->stuck = false;
	atomic_store(&t->pid, 0);
}

/* Whether the member's device completed IO since *seen (updated): a
 * flush that waits on it is being written back.  t->lock held, dropped
 * for the read. */
static bool progressed(struct rf_timed_io *t, uint64_t *seen)
{
	uint64_t d;

	pthread_mutex_unlock(&t->lock);
	d = rf_devstat_done(t->statfd);
	pthread_mutex_lock(&t->lock);
	if (!d || d == *seen)
		return false;
	*seen = d;
	return true;
}

/* Whether t's thread was started by another process (this one forked). */
static bool forked_from(struct rf_timed_io *t)
{
	pid_t p = atomic_load(&t->pid);

	return p && p != getpid();
}

static int call(struct rf_timed_io *t, int op, void *buf, size_t len, uint64_t off)
{
	struct timespec dl = rf_deadline_ms(t->timeout_ms);
	bool watch = op == OP_FSYNC && t->statfd > 0;
	uint64_t seen = watch ? rf_devstat_done(t->statfd) : 0;
	int r;

	if (forked_from(t))
		forked(t);
	pthread_mutex_lock(&t->lock);
	while (t->busy && !t->stuck) {
		if (pthread_cond_timedwait(&t->cond, &t->lock, &dl) == ETIMEDOUT) {
			pthread_mutex_unlock(&t->lock);
			return -ETIMEDOUT;
		}
	}
	if (t->stuck) {
		pthread_mutex_unlock(&t->lock);
		return -ETIMEDOUT;
	}
	if (!atomic_load(&t->pid)) {
		r = start_locked(t);
		if (r) {
			pthread_mutex_unlock(&t->lock);
			return r;
		}
	}
	if (op != OP_FSYNC && len > t->cap) {
		char *nb = realloc(t->buf, len);

		if (!nb) {
			pthread_mutex_unlock(&t->lock);
			return -ENOMEM;
		}
		t->buf = nb;
		t->cap = len;
	}
	if (op == OP_PWRITE)
		memcpy(t->buf, buf, len);
	t->op = op;
	t->len = len;
	t->off = off;
	t->busy = t->pending = true;
	t->done = false;
	t->since_ms = rf_mono_ms();
	pthread_cond_broadcast(&t->cond);
	while (!t->done) {
		if (pthread_cond_timedwait(&t->cond, &t->lock, &dl) == ETIMEDOUT && !t->done) {
			if (watch && progressed(t, &seen)) {
				dl = rf_deadline_ms(t->timeout_ms);
				continue;
			}
			if (t->done)
				break;
			t->stuck = true;        /* the thread frees t for others when it returns */
			pthread_mutex_unlock(&t->lock);
			return -ETIMEDOUT;
		}
	}
	r = t->res;
	if (op == OP_PREAD && !r)
		memcpy(buf, t->buf, len);
	t->busy = false;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	return r;
}

static int timed_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	return call(ctx, OP_PREAD, buf, len, off);
}

static int timed_pwrite(void *ctx, const void *buf, size_t len, uint64_t off)
{
	return call(ctx, OP_PWRITE, (void *)buf, len, off);
}

static int timed_fsync(void *ctx)
{
	return call(ctx, OP_FSYNC, NULL, 0, 0);
}

struct rf_timed_io *rf_timed_io_new(unsigned timeout_ms)
{
	struct rf_timed_io *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	if (rf_cond_init_mono(&t->cond)) {
		free(t);
		return NULL;
	}
	pthread_mutex_init(&t->lock, NULL);
	rf_lock_rank(&t->lock, RF_LOCK_LEAF, "member metadata IO lock");
	t->timeout_ms = timeout_ms;
	t->refs = 1;
	return t;
}

void rf_timed_io_wrap(struct rf_timed_io *t, const struct rf_sb_io *inner, struct rf_sb_io *io)
{
	if (!t->timeout_ms) {
		*io = *inner;
		return;
	}
	pthread_mutex_lock(&t->lock);
	t->inner = *inner;
	pthread_mutex_unlock(&t->lock);
	io->pread = timed_pread;
	io->pwrite = timed_pwrite;
	io->fsync = timed_fsync;
	io->ctx = t;
	io->bytes = inner->bytes;
}

void rf_timed_io_set_progress(struct rf_timed_io *t, int statfd)
{
	t->statfd = statfd;
}

bool rf_timed_io_stuck(struct rf_timed_io *t, int64_t *since_ms)
{
	bool s;

	if (forked_from(t))
		return false;
	pthread_mutex_lock(&t->lock);
	s = t->stuck;
	if (s && since_ms)
		*since_ms = t->since_ms;
	pthread_mutex_unlock(&t->lock);
	return s;
}

void rf_timed_io_free(struct rf_timed_io *t)
{
	if (!t)
		return;
	if (forked_from(t))
		forked(t);
	pthread_mutex_lock(&t->lock);
	t->closing = true;
	pthread_cond_broadcast(&t->cond);
	put_locked(t);
}
