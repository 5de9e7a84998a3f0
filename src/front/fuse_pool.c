/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuse_pool.c - the request pool: a read, write or flush of the image
 * submitted to the array, and its answer.
 *
 * A read or write of the image takes a request from the pool and submits
 * it.  The pool grows on demand to RF_POOL_MAX requests, each with an
 * RF_MAX_IO buffer (4 KiB aligned); when all are in flight, the next
 * caller waits for one to come home (back-pressure: one ends soon).
 * A write's data is lent (rf_req.lent: the transport reuses its buffer
 * once the call returns, and the core copies it into the request's
 * buffer whenever the write may outlive the call).  A read lands in the
 * transport's own buffer when it offers one (rf_fq_ops.read_buf: FUSE
 * over io_uring's ring entry), else in the request's.  Whoever ends the
 * request (the FUSE thread itself when it serves the stripe work inline,
 * or a worker) replies through the request's copy of struct rf_fq and
 * returns the request to the pool.
 *
 * Locks: fs->lock (a leaf) guards the free list and the counts; fs->cond
 * wakes a caller waiting for a request, and the drain.
 *
 * What it does NOT do: decide what is submitted (fuse.c's ops check the
 * inode, the range and the array's state first), or answer a read
 * without the array (fuse_direct.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "raidfuse/array.h"
#include "front/fuse_int.h"
#include "front/fuse_reply.h"

#define RF_POOL_MAX 256

struct io_ctx {
	struct fs *fs;
	struct rf_fq q;
	char *own_buf;                  /* r->buf while a read fills the transport's */
	struct rf_req *next_free;
};

static struct rf_req *pool_get(struct fs *fs)
{
	struct rf_req *r = NULL;

	pthread_mutex_lock(&fs->lock);
	for (;;) {
		if (fs->free) {
			r = fs->free;
			fs->free = ((struct io_ctx *)r->priv)->next_free;
			break;
		}
		if (fs->nalloc < RF_POOL_MAX) {
			fs->nalloc++;
			pthread_mutex_unlock(&fs->lock);
			r = rf_req_alloc(fs->a, RF_MAX_IO);
			struct io_ctx *c = calloc(1, sizeof(*c));
			if (r && c && !posix_memalign((void **)&r->buf, 4096, RF_MAX_IO)) {
				c->fs = fs;
				r->priv = c;
				return r;
			}
			free(c);
			rf_req_free(r);
			pthread_mutex_lock(&fs->lock);
			fs->nalloc--;
			r = NULL;
			if (!fs->nalloc)
				break;
		}
		/* Back-pressure: every request is in flight; one ends soon. */
		fs->nwait++;
		pthread_cond_wait(&fs->cond, &fs->lock);
		fs->nwait--;
	}
	pthread_mutex_unlock(&fs->lock);
	return r;
}

static void pool_put(struct fs *fs, struct rf_req *r)
{
	struct io_ctx *c = r->priv;

	pthread_mutex_lock(&fs->lock);
	c->next_free = fs->free;
	fs->free = r;
	if (fs->nwait)
		pthread_cond_signal(&fs->cond);
	pthread_mutex_unlock(&fs->lock);
}

/* Wait until every request taken from the pool has come home: each one
 * has been answered, and its end has run. */
void rf_fuse_pool_drain(struct fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	for (;;) {
		int n = 0;
		struct rf_req *r;

		for (r = fs->free; r; r = ((struct io_ctx *)r->priv)->next_free)
			n++;
		if (n == fs->nalloc)
			break;
		fs->nwait++;
		pthread_cond_wait(&fs->cond, &fs->lock);
		fs->nwait--;
	}
	pthread_mutex_unlock(&fs->lock);
}

void rf_fuse_pool_destroy(struct fs *fs)
{
	struct rf_req *r, *next;

	for (r = fs->free; r; r = next) {
		next = ((struct io_ctx *)r->priv)->next_free;
		free(r->buf);
		free(r->priv);
		rf_req_free(r);
	}
}

static void io_done(struct rf_req *r, int err)
{
	struct io_ctx *c = r->priv;
	struct rf_fq *q = &c->q;

	if (err)
		q->ops->err(q, -err);
	else if (r->op == RF_REQ_READ)
		q->ops->buf(q, r->buf, r->len);
	else if (r->op == RF_REQ_WRITE)
		q->ops->write(q, r->len);
	else
		q->ops->err(q, 0);
	if (c->own_buf) {
		r->buf = c->own_buf;
		c->own_buf = NULL;
	}
	pool_put(c->fs, r);
}

void rf_fuse_pool_submit(struct fs *fs, struct rf_fq *q, int op, uint64_t off, size_t len, const char *data)
{
	struct rf_req *r = pool_get(fs);
	struct io_ctx *c;

	if (!r) {
		q->ops->err(q, ENOMEM);
		return;
	}
	c = r->priv;
	c->q = *q;
	if (op == RF_REQ_READ && q->ops->read_buf) {
		char *in_place = q->ops->read_buf(q, len);

		if (in_place) {
			c->own_buf = r->buf;
			r->buf = in_place;
		}
	}
	r->op = (uint8_t)op;
	r->off = off;
	r->len = (uint32_t)len;
	r->done = io_done;
	r->more_behind = q->more;
	/* The transport keeps data until this call returns: lend it (the core
	 * copies it when the write may outlive the call). */
	r->lent = data;
	rf_req_submit(fs->a, r);
}
