/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fake_ioq.h - an rf_ioq backend for tests: synchronous pread/pwrite on the
 * member fds, with injected faults.
 *
 * Faults are global (set before use, read by every queue):
 *   fake_fail_member     member whose every IO fails with fake_fail_errno
 *                        (-1: none); fake_fail_after lets that many of its
 *                        IOs through first
 *   fake_short_every     every Nth transfer moves only half its bytes (0: off)
 *   fake_again_every     every Nth operation completes with -EAGAIN (0: off)
 *   fake_inject_members  members (bit i: member i) short transfers and
 *                        -EAGAIN go to (default: all); per member counts in
 *                        fake_nr_short_m[] and fake_nr_again_m[]
 *   fake_busy_depth      prep refuses (-EBUSY) beyond this many queued ops
 *   fake_gate_close()    operations queued from now on wait in reap until
 *                        fake_gate_open(); fake_gate_waiting() counts the
 *                        queues blocked there (IO held "in flight")
 * Counters say what was injected, so tests can assert the faults happened.
 */
#ifndef FAKE_IOQ_H
#define FAKE_IOQ_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "raidfuse/ioq.h"

static atomic_int fake_fail_member = -1;
static atomic_int fake_fail_errno = -EIO;
static atomic_int fake_fail_after;
static atomic_int fake_short_every;
static atomic_int fake_again_every;
static int fake_busy_depth = 1 << 30;
static atomic_int fake_nr_short, fake_nr_again, fake_nr_failed, fake_nr_ops;
static _Atomic uint64_t fake_inject_members = ~0ull;
static atomic_int fake_nr_short_m[64], fake_nr_again_m[64];

/* Log of operations issued (when fake_log_on): member, op, offset, length. */
struct fake_logent {
	int member, op;
	uint64_t off;
	uint32_t len;
};
#define FAKE_LOG_MAX 4096
static struct fake_logent fake_log[FAKE_LOG_MAX];
static int fake_nlog;
static bool fake_log_on;
static pthread_mutex_t fake_log_lock = PTHREAD_MUTEX_INITIALIZER;

struct fake_op {
	struct rf_mio *m;
	int fd;
	char *buf;
	uint32_t len;
	uint64_t off;
	const struct iovec *iov;        /* vectored when set */
	int niov;
};

struct fake_priv {
	struct fake_op *ops;
	int nops, cap;
	pthread_mutex_t lock;           /* kicked */
	pthread_cond_t cond;
	int kicked;
	atomic_int member_ops[64];
};

static int fake_prep(struct rf_ioq *q, struct rf_mio *m, int fd, char *buf, uint32_t len, uint64_t off)
{
	struct fake_priv *f = q->priv;

	if (f->nops >= fake_busy_depth)
		return -EBUSY;
	if (f->nops == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 64;
		f->ops = realloc(f->ops, f->cap * sizeof(*f->ops));
	}
	f->ops[f->nops++] = (struct fake_op){ m, fd, buf, len, off, NULL, 0 };
	return 0;
}

static int fake_prepv(struct rf_ioq *q, struct rf_mio *m, int fd, const struct iovec *iov, int niov, uint64_t off)
{
	struct fake_priv *f = q->priv;
	uint32_t len = 0;
	int i, ret;

	for (i = 0; i < niov; i++)
		len += (uint32_t)iov[i].iov_len;
	ret = fake_prep(q, m, fd, NULL, len, off);
	if (!ret) {
		f->ops[f->nops - 1].iov = iov;
		f->ops[f->nops - 1].niov = niov;
	}
	return ret;
}

static int fake_submit(struct rf_ioq *q)
{
	return 0;
}

static int fake_do(struct fake_priv *f, struct fake_op *o)
{
	int n = atomic_fetch_add(&fake_nr_ops, 1) + 1;
	int fm = atomic_load(&fake_fail_member);
	ssize_t r;
	uint32_t len = o->len;

	if (fake_log_on) {
		pthread_mutex_lock(&fake_log_lock);
		if (fake_nlog < FAKE_LOG_MAX)
			fake_log[fake_nlog++] = (struct fake_logent){ o->m->member, o->m->op, o->off, o->len };
		pthread_mutex_unlock(&fake_log_lock);
	}

	if (fm == o->m->member && atomic_fetch_sub(&fake_fail_after, 1) <= 0) {
		atomic_fetch_add(&fake_nr_failed, 1);
		return atomic_load(&fake_fail_errno);
	}
	if (!((atomic_load(&fake_inject_members) >> (o->m->member & 63)) & 1))
		n = -1;                 /* not a member faults go to */
	if (fake_again_every && n > 0 && n % fake_again_every == 0) {
		atomic_fetch_add(&fake_nr_again, 1);
		atomic_fetch_add(&fake_nr_again_m[o->m->member & 63], 1);
		return -EAGAIN;
	}
	if (o->m->op == RF_MIO_FSYNC)
		return fsync(o->fd) ? -errno : 0;
	if (fake_short_every && n > 0 && n % fake_short_every == 0 && len >= 2) {
		len /= 2;
		atomic_fetch_add(&fake_nr_short, 1);
		atomic_fetch_add(&fake_nr_short_m[o->m->member & 63], 1);
	}
	if (o->iov) {
		/* Vectored: move up to len bytes over the iovecs. */
		uint32_t moved = 0;
		int i;

		for (i = 0; i < o->niov && moved < len; i++) {
			uint32_t l = (uint32_t)o->iov[i].iov_len;

			if (l > len - moved)
				l = len - moved;
			if (o->m->op == RF_MIO_READ)
				r = pread(o->fd, o->iov[i].iov_base, l, (off_t)(o->off + moved));
			else
				r = pwrite(o->fd, o->iov[i].iov_base, l, (off_t)(o->off + moved));
			if (r < 0)
				return moved ? (int)moved : -errno;
			moved += (uint32_t)r;
			if ((uint32_t)r < l)
				break;
		}
		return (int)moved;
	}
	if (o->m->op == RF_MIO_READ)
		r = pread(o->fd, o->buf, len, (off_t)o->off);
	else
		r = pwrite(o->fd, o->buf, len, (off_t)o->off);
	return r < 0 ? -errno : (int)r;
}

static pthread_mutex_t fake_gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fake_gate_cond = PTHREAD_COND_INITIALIZER;
static bool fake_gate_closed;
static int fake_gate_nwait;

static __attribute__((unused)) void fake_gate_close(void)
{
	pthread_mutex_lock(&fake_gate_lock);
	fake_gate_closed = true;
	pthread_mutex_unlock(&fake_gate_lock);
}

static __attribute__((unused)) void fake_gate_open(void)
{
	pthread_mutex_lock(&fake_gate_lock);
	fake_gate_closed = false;
	pthread_cond_broadcast(&fake_gate_cond);
	pthread_mutex_unlock(&fake_gate_lock);
}

static __attribute__((unused)) int fake_gate_waiting(void)
{
	int n;

	pthread_mutex_lock(&fake_gate_lock);
	n = fake_gate_nwait;
	pthread_mutex_unlock(&fake_gate_lock);
	return n;
}

static void fake_gate_pass(void)
{
	pthread_mutex_lock(&fake_gate_lock);
	if (fake_gate_closed) {
		fake_gate_nwait++;
		while (fake_gate_closed)
			pthread_cond_wait(&fake_gate_cond, &fake_gate_lock);
		fake_gate_nwait--;
	}
	pthread_mutex_unlock(&fake_gate_lock);
}

static int fake_reap(struct rf_ioq *q, bool wait)
{
	struct fake_priv *f = q->priv;
	int ended = 0;

	if (f->nops)
		fake_gate_pass();

	if (!f->nops && wait) {
		pthread_mutex_lock(&f->lock);
		while (!f->kicked)
			pthread_cond_wait(&f->cond, &f->lock);
		f->kicked = 0;
		pthread_mutex_unlock(&f->lock);
	}
	while (f->nops) {
		/* Take the batch: completions may queue more. */
		struct fake_op *ops = f->ops;
		int n = f->nops, i;

		f->ops = NULL;
		f->nops = f->cap = 0;
		for (i = 0; i < n; i++)
			ended += rf_ioq_complete(q, ops[i].m, fake_do(f, &ops[i]));
		free(ops);
	}
	return ended;
}

static void fake_kick(struct rf_ioq *q)
{
	struct fake_priv *f = q->priv;

	pthread_mutex_lock(&f->lock);
	f->kicked = 1;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

static void fake_destroy(struct rf_ioq *q)
{
	struct fake_priv *f = q->priv;

	free(f->ops);
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->cond);
	free(f);
}

static const struct rf_ioq_backend fake_backend = {
	.prep = fake_prep,
	.prepv = fake_prepv,
	.submit = fake_submit,
	.reap = fake_reap,
	.kick = fake_kick,
	.destroy = fake_destroy,
};

static int fake_ioq_init(struct rf_ioq *q, struct rf_ioq_devs devs, unsigned depth)
{
	struct fake_priv *f = calloc(1, sizeof(*f));

	if (!f || rf_ioq_init_common(q, devs, depth)) {
		free(f);
		return -ENOMEM;
	}
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	q->be = &fake_backend;
	q->priv = f;
	return 0;
}

static void fake_reset(void)
{
	fake_fail_member = -1;
	fake_fail_errno = -EIO;
	fake_fail_after = 0;
	fake_short_every = 0;
	fake_again_every = 0;
	fake_busy_depth = 1 << 30;
	fake_nr_short = fake_nr_again = fake_nr_failed = fake_nr_ops = 0;
	fake_inject_members = ~0ull;
	for (int i = 0; i < 64; i++)
		fake_nr_short_m[i] = fake_nr_again_m[i] = 0;
	fake_nlog = 0;
	fake_log_on = false;
}

/* Operations of kind op logged for member (-1: any). */
static __attribute__((unused)) int fake_count(int member, int op)
{
	int i, n = 0;

	for (i = 0; i < fake_nlog; i++)
		if ((member < 0 || fake_log[i].member == member) && fake_log[i].op == op)
			n++;
	return n;
}

/* Bytes of kind op logged for member (-1: any). */
static __attribute__((unused)) uint64_t fake_bytes(int member, int op)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < fake_nlog; i++)
		if ((member < 0 || fake_log[i].member == member) && fake_log[i].op == op)
			n += fake_log[i].len;
	return n;
}

/* A member extent: what a test expects a request to do to a member, or
 * what the log says was done (the queue merges adjacent operations, so
 * both sides are compared normalized). */
struct fake_ext {
	int member;
	uint64_t off, len;
};

static int fake_ext_cmp(const void *x, const void *y)
{
	const struct fake_ext *a = x, *b = y;

	if (a->member != b->member)
		return a->member < b->member ? -1 : 1;
	return a->off < b->off ? -1 : a->off > b->off;
}

/* Sort e[0..n) by member and offset and join each extent to the one
 * before it when it follows it; the new count. */
static __attribute__((unused)) int fake_ext_norm(struct fake_ext *e, int n)
{
	int i, k = 0;

	qsort(e, (size_t)n, sizeof(*e), fake_ext_cmp);
	for (i = 0; i < n; i++) {
		if (k && e[k - 1].member == e[i].member && e[k - 1].off + e[k - 1].len == e[i].off)
			e[k - 1].len += e[i].len;
		else
			e[k++] = e[i];
	}
	return k;
}

/* The logged operations of kind op as extents, normalized, into e (room
 * for max); the count. */
static __attribute__((unused)) int fake_log_ext(int op, struct fake_ext *e, int max)
{
	int i, n = 0;

	for (i = 0; i < fake_nlog && n < max; i++)
		if (fake_log[i].op == op)
			e[n++] = (struct fake_ext){ fake_log[i].member, fake_log[i].off, fake_log[i].len };
	return fake_ext_norm(e, n);
}

#endif
