/* arrayio.h - one array request, submitted and waited for: what a test
 * that drives a real array (workers started) needs to read or write it.
 * Include after cmocka.h. */
#ifndef ARRAYIO_H
#define ARRAYIO_H

#include <pthread.h>

#include "raidfuse/array.h"

struct arrayio_done {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done, err;
};

static void arrayio_end(struct rf_req *r, int err)
{
	struct arrayio_done *d = r->priv;

	pthread_mutex_lock(&d->lock);
	d->done = 1;
	d->err = err;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

/* One request (enum rf_req_op) of len bytes at array offset off on buf,
 * waited for; its error. */
static inline int array_io(struct rf_array *a, int op, uint64_t off, uint32_t len, char *buf)
{
	struct arrayio_done d = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct rf_req *r = rf_req_alloc(a, len);

	assert_non_null(r);
	r->op = (uint8_t)op;
	r->off = off;
	r->len = len;
	r->buf = buf;
	r->priv = &d;
	r->done = arrayio_end;
	rf_array_submit(a, r);
	pthread_mutex_lock(&d.lock);
	while (!d.done)
		pthread_cond_wait(&d.cond, &d.lock);
	pthread_mutex_unlock(&d.lock);
	rf_req_free(r);
	return d.err;
}

#endif
