/* SPDX-License-Identifier: GPL-2.0-or-later */
/* reshapework.c - the reshape walk's member IO, as a level's window work
 * queues it (reshapework.h).
 *
 * One queue, the walk's own: a level queues reads or writes, the walk's
 * thread submits and waits.  A member IO that fails marks its member
 * faulty (md's error path for reshape IO) and fails the window; the walk
 * goes on degraded once the window is tried again.
 *
 * It does NOT retry: a failed window is the walk's to try again.
 */
#include <string.h>

#include "core/engine.h"
#include "core/reshapework.h"

const struct rf_reshape_ops *rf_array_reshape_ops(const struct rf_array *a)
{
	return a->ops->reshape;
}

const struct rf_reshape_ops *rf_level_reshape_ops(int level)
{
	const struct rf_level_ops *ops = rf_level_ops_of(level);

	return ops ? ops->reshape : NULL;
}

static void rio_end(struct rf_mio *m)
{
	struct rf_reshape_work *w = m->priv;

	w->pending--;
	if (m->res < 0) {
		if (!w->io_err)
			w->io_err = m->res;
		rf_member_fail(w->a, m->member, m->res, m->op == RF_MIO_READ ? "reshape read" : "reshape write",
			       m->off);
	}
}

void rf_reshape_io(struct rf_reshape_work *w, int m, bool write, char *buf, uint64_t off, uint32_t len)
{
	struct rf_mio *mio = &w->mios[w->nmios++];

	memset(mio, 0, sizeof(*mio));
	mio->end = rio_end;
	mio->priv = w;
	mio->buf = buf;
	mio->off = off;
	mio->len = len;
	mio->member = (int16_t)m;
	mio->op = write ? RF_MIO_WRITE : RF_MIO_READ;
	w->pending++;
	rf_ioq_queue(w->ioq, mio);
}

void rf_reshape_io_kick(struct rf_reshape_work *w)
{
	/* rf_reshape_io_wait() sees any error of the submission again. */
	if (rf_ioq_submit(w->ioq) >= 0)
		rf_ioq_reap(w->ioq, false);
}

int rf_reshape_io_wait(struct rf_reshape_work *w)
{
	int ret = 0;

	while (w->pending) {
		ret = rf_ioq_submit(w->ioq);
		if (ret < 0 || !w->pending)
			break;
		ret = rf_ioq_reap(w->ioq, !rf_ioq_stalled(w->ioq));
		if (ret < 0)
			break;
	}
	w->nmios = 0;
	if (ret < 0 && !w->io_err)
		w->io_err = ret;
	ret = w->io_err;
	w->io_err = 0;
	return ret < 0 ? ret : 0;
}
