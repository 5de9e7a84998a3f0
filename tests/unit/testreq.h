/* SPDX-License-Identifier: GPL-2.0-or-later */
/* testreq.h - what the tests of served arrays share: one request run to
 * its end, and a member backend that shows the test every data write
 * before it is issued (to check md's ordering rules against the disk). */
#ifndef TESTREQ_H
#define TESTREQ_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "raidfuse/array.h"
#include "raidfuse/ioq.h"

struct testreq_done {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done, err;
};

static inline void testreq_done_cb(struct rf_req *r, int err)
{
	struct testreq_done *d = r->priv;

	pthread_mutex_lock(&d->lock);
	d->done = 1;
	d->err = err;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

/* One request of op, waited for; its error. */
static inline int testreq_io(struct rf_array *a, int op, uint64_t off, uint32_t len, char *buf)
{
	struct testreq_done d = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct rf_req *r = rf_req_alloc(a, len);

	if (!r)
		return -ENOMEM;
	r->op = (uint8_t)op;
	r->off = off;
	r->len = len;
	r->buf = buf;
	r->priv = &d;
	r->done = testreq_done_cb;
	rf_req_submit(a, r);
	pthread_mutex_lock(&d.lock);
	while (!d.done)
		pthread_cond_wait(&d.cond, &d.lock);
	pthread_mutex_unlock(&d.lock);
	rf_req_free(r);
	return d.err;
}

/* Requests run at once: r[i] each with d[i] (its done state, set up by
 * testreq_batch_init()), submitted together and waited for; each one's
 * error is in d[i].err. */
static inline void testreq_batch_init(struct rf_req *r, struct testreq_done *d)
{
	*d = (struct testreq_done){ .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	r->priv = d;
	r->done = testreq_done_cb;
}

static inline void testreq_batch(struct rf_array *a, struct rf_req **r, struct testreq_done *d, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		d[i].done = 0;
		rf_req_submit(a, r[i]);
	}
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&d[i].lock);
		while (!d[i].done)
			pthread_cond_wait(&d[i].cond, &d[i].lock);
		pthread_mutex_unlock(&d[i].lock);
	}
}

/* Read the whole array in requests of step bytes and compare with
 * model: the first byte that differs, -1 when none does, or -2 when a
 * read fails. */
static inline int64_t testreq_diff_all(struct rf_array *a, const char *model, uint32_t step)
{
	uint64_t size = rf_array_size(a), off;
	char *buf = malloc(step);
	int64_t at = -1;

	if (!buf)
		return -2;
	for (off = 0; off < size && at == -1; off += step) {
		uint32_t len = (uint32_t)(size - off < step ? size - off : step), i;

		if (testreq_io(a, RF_REQ_READ, off, len, buf)) {
			at = -2;
			break;
		}
		for (i = 0; i < len; i++)
			if (buf[i] != model[off + i]) {
				at = (int64_t)(off + i);
				break;
			}
	}
	free(buf);
	return at;
}

/* The watching backend: the synchronous one, calling testreq_on_io (the
 * test's) with each member IO, its byte offset and length, before it is
 * prepared. */
static void (*testreq_on_io)(struct rf_mio *m, uint64_t off, uint64_t len);
static const struct rf_ioq_backend *testreq_inner;
static struct rf_ioq_backend testreq_watched;
static pthread_mutex_t testreq_lock = PTHREAD_MUTEX_INITIALIZER;

static inline int testreq_prep(struct rf_ioq *q, struct rf_mio *m, int fd, char *buf, uint32_t len, uint64_t off)
{
	testreq_on_io(m, off, len);
	return testreq_inner->prep(q, m, fd, buf, len, off);
}

static inline int testreq_prepv(struct rf_ioq *q, struct rf_mio *m, int fd, const struct iovec *iov, int niov,
				uint64_t off)
{
	uint64_t len = 0;
	int i;

	for (i = 0; i < niov; i++)
		len += iov[i].iov_len;
	testreq_on_io(m, off, len);
	return testreq_inner->prepv(q, m, fd, iov, niov, off);
}

static inline int testreq_watch_init(struct rf_ioq *q, struct rf_ioq_devs devs,
				     unsigned depth)
{
	int r = rf_ioq_init_sync(q, devs, depth);

	if (r)
		return r;
	/* Every queue has the same inner backend; workers start at once. */
	pthread_mutex_lock(&testreq_lock);
	if (!testreq_inner) {
		testreq_inner = q->be;
		testreq_watched = *testreq_inner;
		testreq_watched.prep = testreq_prep;
		testreq_watched.prepv = testreq_prepv;
		testreq_watched.map_reads = false;      /* every read is watched */
	}
	pthread_mutex_unlock(&testreq_lock);
	q->be = &testreq_watched;
	return 0;
}

#endif
