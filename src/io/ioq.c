/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ioq.c - member IO queue: the retry and short-IO logic, and the liburing
 * backend.
 *
 * Invariants:
 *  - every queued rf_mio ends exactly once, through rf_ioq_complete(), with
 *    m->done == m->len and res 0, or with res < 0;
 *  - a transfer that was cut short is resubmitted for the remainder, from
 *    the retry list, in the order it was cut;
 *  - an operation that fault injection (fault.h) ends is not issued: it
 *    waits on q->injected, counted in flight, and the next rf_ioq_reap()
 *    completes it with the injected -errno, before (and then without)
 *    waiting on the backend; a merged one is retried piece by piece, as
 *    after a real error, each piece asking again;
 *  - a read or write inside its member's mapping (rf_ioq_member.map: a
 *    file in memory) is not issued either: it is copied from or to there
 *    at issue, after fault injection was asked, and completes the same
 *    way, with its bytes moved; a copy that faults (the file shrunk, or
 *    full) is issued, and a write copied in part is written again whole;
 *  - an NBD member's operation (mm->nbd) is one asynchronous command on
 *    its connection (nbd.c; merged pieces go as one): its end comes on the
 *    connection's poller thread, which pushes it on q->nbd_done and kicks
 *    the queue when the list was empty; the next rf_ioq_reap() completes
 *    it, with the bytes moved or -errno (-ETIMEDOUT, -ENOTCONN: the caller
 *    fails it).  One refused at issue (a dead connection) completes like an
 *    injected one.  While it is in flight, nothing of the queue reads its
 *    link, whose storage the push uses (nbd_next): rf_ioq_submit() takes
 *    it off the retry list before the issue;
 *  - a read that failed (alone, or its merged operation) is issued once
 *    more, alone, unless its member is failfast (rf_ioq_member.failfast):
 *    then it ends with the error at once, every merged piece with it;
 *  - the uring backend keeps one read armed on its eventfd so that a kick
 *    from another thread ends a blocking wait; that read's completion carries
 *    user_data 0, which no rf_mio has.
 *
 * It does NOT decide what an error means for the array: a failed member is
 * the caller's business (end() sees -EIO and acts).
 *
 * This is the only file that includes liburing.h.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "raidfuse/devstat.h"
#include "raidfuse/fault.h"
#include "raidfuse/fdmap.h"
#include "raidfuse/iolog.h"
#include "raidfuse/ioq.h"
#include "raidfuse/lockcheck.h"
#include "raidfuse/nbd.h"
#include "raidfuse/util.h"

/* Whether mm's IO goes to its O_DIRECT descriptor (direct mode, a plain
 * file or block device that has one). */
static bool mio_direct(const struct rf_ioq_member *mm)
{
	return mm->direct && mm->fd_direct >= 0 && rf_ioq_member_plain(mm);
}

/* Whether a transfer can go to mm's O_DIRECT descriptor as it is. */
static bool mio_aligned(const struct rf_ioq_member *mm, const char *buf, uint32_t len, uint64_t off)
{
	uintptr_t mask = mm->align - 1;

	return mio_direct(mm) && !((uintptr_t)buf & mask) && !(len & mask) && !(off & mask);
}

/* A run of n free bounce units taken: the first one's index, or -1. */
static int bounce_take(struct rf_ioq *q, unsigned n)
{
	uint64_t run = n >= 64 ? ~0ull : (1ull << n) - 1;
	unsigned i;

	for (i = 0; i + n <= RF_IOQ_BOUNCE_UNITS; i++) {
		if ((q->bounce_free & (run << i)) == run << i) {
			q->bounce_free &= ~(run << i);
			return (int)i;
		}
	}
	return -1;
}

static void bounce_put_units(struct rf_ioq *q, int at, unsigned n)
{
	uint64_t run = n >= 64 ? ~0ull : (1ull << n) - 1;

	q->bounce_free |= run << at;
}

static void bounce_put(struct rf_ioq *q, struct rf_mio *m)
{
	bounce_put_units(q, m->bounce_at, m->bounce_n);
	m->bounce_at = -1;
	m->bounce_n = 0;
}

/* Move n bytes between b and the chain's remaining bytes (m's from
 * m->done, then each piece merged behind it): into b, or out of it. */
static void chain_move(struct rf_mio *m, char *b, uint64_t n, bool into)
{
	struct rf_mio *x;

	for (x = m; x && n; x = x->chain) {
		uint32_t skip = x == m ? m->done : 0;
		uint32_t k = x->len - skip < n ? x->len - skip : (uint32_t)n;

		if (into)
			memcpy(b, x->buf + skip, k);
		else
			memcpy(x->buf + skip, b, k);
		b += k;
		n -= k;
	}
}

/* Direct mode, a read or a write whose buffer is not aligned (a write's
 * offset and length are): through the bounce buffer, on fd_direct.  A
 * read is widened to whole aligned blocks; at most RF_IOQ_BOUNCE_BYTES
 * go at once (the rest follows as after a short transfer).  0, or
 * -EBUSY: no room in the bounce buffer or the backend yet. */
static int bounce_issue(struct rf_ioq *q, const struct rf_ioq_member *mm, struct rf_mio *m, uint64_t off)
{
	uint64_t mask = mm->align - 1, total = m->ctail->off + m->ctail->len - off;
	uint32_t head = (uint32_t)(off & mask);
	uint64_t span = (head + total + mask) & ~mask;
	uint32_t cap = span < RF_IOQ_BOUNCE_BYTES ? (uint32_t)span : RF_IOQ_BOUNCE_BYTES;
	unsigned n = (cap + RF_IOQ_BOUNCE_UNIT - 1) / RF_IOQ_BOUNCE_UNIT;
	int at = bounce_take(q, n), ret;
	char *b;

	if (at < 0)
		return -EBUSY;  /* every unit is in flight: wait for one */
	b = q->bounce + (size_t)at * RF_IOQ_BOUNCE_UNIT;
	m->bounce_at = (int8_t)at;
	m->bounce_n = (uint8_t)n;
	m->bounce_head = (uint16_t)head;
	if (m->op == RF_MIO_WRITE)
		chain_move(m, b, cap, true);
	ret = q->be->prep(q, m, mm->fd_direct, b, cap, off - head);
	if (ret) {
		bounce_put(q, m);
		return ret;
	}
	if (rf_iolog_on && m->op == RF_MIO_WRITE) {
		struct iovec v = { b, cap };

		m->iolog_id = rf_iolog_submit(mm->fd_direct, RF_IOLOG_WRITE, &v, 1, off);
	}
	q->inflight++;
	q->nr_bounced++;
	return 0;
}

/* A bounced operation ended with res (bytes of the widened transfer, or
 * -errno): a read's bytes asked are copied out; the bytes of the
 * operation moved, or -errno. */
static int bounce_end(struct rf_ioq *q, struct rf_mio *m, int res)
{
	uint64_t want = m->ctail->off + m->ctail->len - (m->off + m->done);
	uint64_t got;

	if (m->op == RF_MIO_READ && res > 0) {
		got = (uint32_t)res > m->bounce_head ? (uint32_t)res - m->bounce_head : 0;
		if (got > want)
			got = want;     /* the widened tail */
		chain_move(m, q->bounce + (size_t)m->bounce_at * RF_IOQ_BOUNCE_UNIT + m->bounce_head, got, false);
		res = (int)got;
	}
	bounce_put(q, m);
	return res;
}

static void retry_push(struct rf_ioq *q, struct rf_mio *m)
{
	STAILQ_INSERT_TAIL(&q->retry, m, link);
}

/* An NBD command ended (on its connection's poller, any thread): hand m
 * to its queue. */
static void nbd_end(void *ctx, void *arg, int res)
{
	struct rf_ioq *q = ctx;
	struct rf_mio *m = arg, *old = atomic_load_explicit(&q->nbd_done, memory_order_relaxed);

	/* Once m is on the list its queue may reap it and be destroyed:
	 * counted until the kick is done with q (rf_ioq_destroy() waits). */
	atomic_fetch_add_explicit(&q->nbd_ending, 1, memory_order_relaxed);
	m->res = res;
	/* Release: m->res (and the data read) before m is seen on the list;
	 * pairs with the acquire exchange in reap_nbd(). */
	do
		m->nbd_next = old;
	while (!atomic_compare_exchange_weak_explicit(&q->nbd_done, &old, m, memory_order_release,
						      memory_order_relaxed));
	if (!old)
		rf_ioq_kick(q);
	/* Release: the kick's use of q before the destroyer sees 0. */
	atomic_fetch_sub_explicit(&q->nbd_ending, 1, memory_order_release);
}

_Static_assert(RF_IOQ_MAX_MERGE <= RF_NBD_MAX_IOV, "a merged operation is one NBD command");

/* Issue m (and what is merged behind it) as one command on NBD export c.
 * 0: in flight; 1: ended at once (m->res), for q->injected. */
static int nbd_issue(struct rf_ioq *q, struct rf_mio *m, struct rf_nbd *c)
{
	static const int ops[] = { [RF_MIO_READ] = RF_NBD_READ, [RF_MIO_WRITE] = RF_NBD_WRITE,
				   [RF_MIO_FSYNC] = RF_NBD_FLUSH };
	struct iovec iov[RF_IOQ_MAX_MERGE];
	struct rf_mio *x;
	int n = 0, r;

	for (x = m; m->op != RF_MIO_FSYNC && x; x = x->chain) {
		uint32_t skip = x == m ? m->done : 0;

		iov[n].iov_base = x->buf + skip;
		iov[n++].iov_len = x->len - skip;
	}
	r = rf_nbd_aio(c, ops[m->op], iov, n, m->off + m->done, nbd_end, q, m);
	q->inflight++;
	if (!r) {
		q->nbd_inflight++;
		return 0;
	}
	m->res = r < 0 ? r : 0;         /* 1: a flush with nothing to flush */
	return 1;
}

struct chain_copy {
	struct rf_mio *m;
	char *at;                       /* m's remaining bytes in the mapping */
	bool write;
};

/* Copy a chain between its buffers and the mapping: m's remaining bytes,
 * then every piece merged behind it, one after the other there.  A piece
 * written from the mapping itself (computed in place: rf_ioq_store_at())
 * is there already. */
static int chain_copy(void *arg)
{
	const struct chain_copy *c = arg;
	char *at = c->at;
	struct rf_mio *x;

	for (x = c->m; x; x = x->chain) {
		uint32_t skip = x == c->m ? c->m->done : 0;
		uint32_t n = x->len - skip;

		if (c->write && x->buf + skip != at)
			rf_fdmap_store(at, x->buf + skip, n);
		else
			memcpy(x->buf + skip, at, n);
		at += n;
	}
	return 0;
}

/* A read or write done in the member's mapping: m's remaining bytes and
 * every piece merged behind it copied from there (a read) or to there (a
 * write), in one guarded call (fdmap.h).  false: not for the mapping (the
 * rule is rf_ioq_member_map()'s), or a page faulted (the member shrunk
 * under it, or its file system is full): the operation is issued, and
 * meets the error there. */
static bool mapped_copy(const struct rf_ioq_member *mm, struct rf_mio *m, uint64_t off)
{
	uint64_t len = m->ctail->off + m->ctail->len - off;
	struct chain_copy c = { m, NULL, m->op == RF_MIO_WRITE };

	if ((m->op != RF_MIO_READ && !c.write) || len > INT32_MAX)
		return false;
	c.at = (char *)rf_ioq_member_map(mm, off, len, c.write);
	return c.at && !rf_fdmap_guarded(chain_copy, &c);
}

const char *rf_ioq_store_at(const struct rf_ioq *q, int member, uint64_t off, uint32_t len)
{
	const struct rf_ioq_member *mm = rf_ioq_dev(q, member);

	if (!q->be->map_reads || rf_fault_armed(mm->fault))
		return NULL;
	return rf_ioq_member_map(mm, off, len, true);
}

/* Hand m (and what is merged behind it) to the backend.  0, -EBUSY, or
 * 1: fault injection ended it (m->res), for the caller to put on
 * q->injected once m is off the retry list. */
static int mio_issue(struct rf_ioq *q, struct rf_mio *m)
{
	const struct rf_ioq_member *mm = rf_ioq_dev(q, m->member);
	char *buf = m->buf + m->done;
	uint32_t len = m->len - m->done;
	uint64_t off = m->off + m->done;
	int fd = mm->fd;
	int ret;

	if (q->mtail[m->member] == m)
		q->mtail[m->member] = NULL;
	/* One flag load while the member's fault is off.  Asked once: an
	 * operation the backend has no room for yet comes back here. */
	ret = m->fault_asked ? 0 : rf_fault_check(mm->fault, m->op, off, m->ctail->off + m->ctail->len - off);
	m->fault_asked = 1;
	if (ret) {
		m->res = ret;
		q->inflight++;
		q->nr_injected++;
		return 1;
	}
	if (q->be->map_reads && !q->stream && mapped_copy(mm, m, off)) {
		m->res = (int)(m->ctail->off + m->ctail->len - off);
		q->inflight++;
		q->nr_mapped++;
		return 1;
	}
	if (mm->nbd)
		return nbd_issue(q, m, mm->nbd);
	m->dsync = 0;
	if (m->op != RF_MIO_FSYNC && mio_direct(mm)) {
		uint64_t mask = mm->align - 1, end = m->ctail->off + m->ctail->len;

		if (mio_aligned(mm, buf, len, off))
			fd = mm->fd_direct;
		else if (m->op == RF_MIO_READ || !((off | end) & mask))
			return bounce_issue(q, mm, m, off);
		else
			m->dsync = 1;   /* see struct rf_ioq_member */
	}
	if (m->op == RF_MIO_FSYNC) {
		ret = q->be->prep(q, m, mm->fd, NULL, 0, 0);
		/* The io log (iolog.h), one flag load while it is off. */
		if (!ret && rf_iolog_on)
			m->iolog_id = rf_iolog_submit(mm->fd, RF_IOLOG_FLUSH, NULL, 0, 0);
	} else if (m->nchain > 1) {
		struct iovec *iov;
		struct rf_mio *x;
		int n = 0;

		if (!q->niov_free)
			return -EBUSY;  /* every slot is in flight: wait for one */
		m->iov_slot = q->iov_free[--q->niov_free];
		iov = q->iov + (size_t)m->iov_slot * RF_IOQ_MAX_MERGE;
		for (x = m; x; x = x->chain) {
			iov[n].iov_base = x->buf;
			iov[n++].iov_len = x->len;
		}
		ret = q->be->prepv(q, m, fd, iov, n, off);
		if (ret)
			q->iov_free[q->niov_free++] = m->iov_slot;
		else if (rf_iolog_on && m->op == RF_MIO_WRITE)
			m->iolog_id = rf_iolog_submit(fd, RF_IOLOG_WRITE, iov, n, off);
	} else {
		ret = q->be->prep(q, m, fd, buf, len, off);
		if (!ret && rf_iolog_on && m->op == RF_MIO_WRITE) {
			struct iovec v = { buf, len };

			m->iolog_id = rf_iolog_submit(fd, RF_IOLOG_WRITE, &v, 1, off);
		}
	}
	if (!ret)
		q->inflight++;
	return ret;
}

/* Whether m can go behind the queued mio h as one vectored operation. */
static bool can_merge(struct rf_ioq *q, struct rf_mio *h, struct rf_mio *m)
{
	const struct rf_ioq_member *mm = rf_ioq_dev(q, m->member);
	struct rf_mio *t = h->ctail;

	return h->op == m->op && m->op != RF_MIO_FSYNC && !h->nomerge && !h->done &&
	       t->off + t->len == m->off && h->nchain < RF_IOQ_MAX_MERGE &&
	       m->off + m->len - h->off <= RF_IOQ_MAX_MERGE_BYTES &&
	       mio_aligned(mm, h->buf, h->len, h->off) == mio_aligned(mm, m->buf, m->len, m->off);
}

void rf_ioq_queue(struct rf_ioq *q, struct rf_mio *m)
{
	struct rf_mio *h;

	assert(m->member >= 0 && m->member < q->devs.n);
	h = q->mtail[m->member];

	m->done = 0;
	m->res = 0;
	m->nomerge = 0;
	m->fault_asked = 0;
	m->read_retried = 0;
	m->chain = NULL;
	m->ctail = m;
	m->nchain = 1;
	m->iov_slot = -1;
	m->iolog_id = 0;
	m->bounce_at = -1;
	m->bounce_n = 0;
	m->dsync = 0;
	if (h && can_merge(q, h, m)) {
		h->ctail->chain = m;
		h->ctail = m;
		h->nchain++;
		q->nr_merged++;
		return;
	}
	retry_push(q, m);
	q->mtail[m->member] = m;
}

int rf_ioq_submit(struct rf_ioq *q)
{
	struct rf_ioq_plug *pl;

	while ((pl = q->plugs)) {
		q->plugs = pl->next;
		pl->next = NULL;
		pl->unplug(pl, q);
	}
	for (;;) {
		struct rf_mio *m;
		int ret;

		while ((m = STAILQ_FIRST(&q->retry))) {
			/* Off the list before the issue: an NBD completion may
			 * reuse m's link (nbd_next) as soon as m is issued. */
			STAILQ_REMOVE_HEAD(&q->retry, link);
			ret = mio_issue(q, m);
			if (ret < 0) {
				/* Not issued: first in line again. */
				STAILQ_INSERT_HEAD(&q->retry, m, link);
				break;
			}
			if (ret)
				STAILQ_INSERT_HEAD(&q->injected, m, link);
		}
		ret = q->be->submit(q);
		if (ret == -EBUSY || ret == -EAGAIN)
			return 0;       /* the kernel is full: completions make room */
		if (ret < 0)
			return ret;
		/* Submitting made room in the ring: issue what still waits. */
		if (STAILQ_EMPTY(&q->retry) || ret == 0)
			return 0;
	}
}

/* Requeue m alone for its remaining bytes. */
static void requeue_alone(struct rf_ioq *q, struct rf_mio *m)
{
	m->chain = NULL;
	m->ctail = m;
	m->nchain = 1;
	m->nomerge = 1;
	m->fault_asked = 0;     /* a piece on its own asks again */
	retry_push(q, m);
}

/* Whether member's reads are failfast now (the array changes it while
 * IO runs: rf_devs_flags_changed()). */
static bool ff(struct rf_ioq *q, int member)
{
	return __atomic_load_n(&rf_ioq_dev(q, member)->failfast, __ATOMIC_RELAXED);
}

/* A merged operation ended with res.  Pieces fully moved end; the rest
 * go back alone (an error is retried piece by piece to find its piece). */
static int complete_chain(struct rf_ioq *q, struct rf_mio *h, int res)
{
	STAILQ_HEAD(, rf_mio) ended = STAILQ_HEAD_INITIALIZER(ended);
	struct rf_mio *x, *next;
	bool failfast = res < 0 && h->op == RF_MIO_READ && ff(q, h->member);
	int n = 0;

	if (failfast) {
		/* No retry of any piece: each ends with the error. */
		for (x = h; x; x = next) {
			next = x->chain;
			x->res = res;
			x->end(x);
			n++;
		}
		return n;
	}

	for (x = h; x; x = next) {
		uint32_t take = res > 0 ? ((uint32_t)res < x->len ? (uint32_t)res : x->len) : 0;

		next = x->chain;
		if (res > 0)
			res -= (int)take;
		x->done = take;
		if (take == x->len) {
			x->res = 0;
			STAILQ_INSERT_TAIL(&ended, x, link);
		} else {
			if (take)
				q->nr_short++;
			requeue_alone(q, x);
			/* Alone is its one more try after a failed read. */
			if (res < 0 && x->op == RF_MIO_READ)
				x->read_retried = 1;
		}
	}
	while ((x = STAILQ_FIRST(&ended))) {
		STAILQ_REMOVE_HEAD(&ended, link);
		x->end(x);
		n++;
	}
	return n;
}

int rf_ioq_complete(struct rf_ioq *q, struct rf_mio *m, int res)
{
	q->inflight--;
	if (m->iolog_id) {
		rf_iolog_complete(m->iolog_id, res);
		m->iolog_id = 0;
	}
	if (m->iov_slot >= 0) {
		q->iov_free[q->niov_free++] = m->iov_slot;
		m->iov_slot = -1;
	}
	if (m->bounce_n)
		res = bounce_end(q, m, res);
	if (res == -EAGAIN || res == -EINTR) {
		q->nr_retry++;
		retry_push(q, m);
		return 0;
	}
	if (m->nchain > 1)
		return complete_chain(q, m, res);
	if (res < 0 && m->op == RF_MIO_READ && !m->read_retried && !ff(q, m->member)) {
		m->read_retried = 1;
		q->nr_read_retry++;
		requeue_alone(q, m);
		return 0;
	}
	if (res < 0) {
		m->res = res;
		m->end(m);
		return 1;
	}
	if (m->op != RF_MIO_FSYNC) {
		if (res == 0) {
			/* No progress: the member ended before the transfer. */
			m->res = -EIO;
			m->end(m);
			return 1;
		}
		m->done += (uint32_t)res;
		if (m->done < m->len) {
			q->nr_short++;
			retry_push(q, m);
			return 0;
		}
	}
	m->res = 0;
	m->end(m);
	return 1;
}

/* An overdue write or fsync (rf_ioq_devs.timeout_ms) ends with
 * -ETIMEDOUT, every piece merged into it too, without a retry: its
 * member hangs.  What it holds in the backend (iovec slot, bounce units)
 * the backend keeps until the kernel returns it.  Returns end() calls. */
static int abandon(struct rf_ioq *q, struct rf_mio *m)
{
	struct rf_mio *x, *next;
	int n = 0;

	q->inflight--;
	q->nr_abandoned++;
	if (m->iolog_id) {
		rf_iolog_complete(m->iolog_id, -ETIMEDOUT);
		m->iolog_id = 0;
	}
	for (x = m; x; x = next) {
		next = x->chain;
		x->res = -ETIMEDOUT;
		x->end(x);
		n++;
	}
	return n;
}

int rf_ioq_init_common(struct rf_ioq *q, struct rf_ioq_devs devs, unsigned slots)
{
	int i;

	memset(q, 0, sizeof(*q));
	q->devs = devs;
	STAILQ_INIT(&q->retry);
	STAILQ_INIT(&q->injected);
	q->iov = calloc((size_t)slots * RF_IOQ_MAX_MERGE, sizeof(*q->iov));
	q->iov_free = calloc(slots, sizeof(*q->iov_free));
	if (!q->iov || !q->iov_free) {
		free(q->iov);
		free(q->iov_free);
		return -ENOMEM;
	}
	for (i = 0; i < (int)slots; i++)
		q->iov_free[i] = (int16_t)i;
	q->niov_free = (int)slots;
	/* Mapped, not allocated: a queue that bounces nothing takes no
	 * memory for it. */
	q->bounce = mmap(NULL, RF_IOQ_BOUNCE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			 -1, 0);
	if (q->bounce == MAP_FAILED) {
		q->bounce = NULL;
		free(q->iov);
		free(q->iov_free);
		return -ENOMEM;
	}
	q->bounce_free = ~0ull;
	return 0;
}

/* Complete the operations fault injection ended.  Returns end() calls. */
static int reap_injected(struct rf_ioq *q)
{
	STAILQ_HEAD(, rf_mio) list = STAILQ_HEAD_INITIALIZER(list);
	struct rf_mio *m;
	int n = 0;

	/* Detach first: an end() may queue, submit and be injected again. */
	STAILQ_CONCAT(&list, &q->injected);
	while ((m = STAILQ_FIRST(&list))) {
		STAILQ_REMOVE_HEAD(&list, link);
		n += rf_ioq_complete(q, m, m->res);
	}
	return n;
}

/* Complete the NBD commands that ended.  Returns end() calls. */
static int reap_nbd(struct rf_ioq *q)
{
	STAILQ_HEAD(, rf_mio) fifo = STAILQ_HEAD_INITIALIZER(fifo);
	struct rf_mio *m, *next;
	int n = 0;

	/* Acquire: pairs with the release in nbd_end(). */
	m = atomic_exchange_explicit(&q->nbd_done, NULL, memory_order_acquire);
	for (; m; m = next) {   /* pushed last first: in the order they ended */
		next = m->nbd_next;
		STAILQ_INSERT_HEAD(&fifo, m, link);
	}
	while ((m = STAILQ_FIRST(&fifo))) {
		STAILQ_REMOVE_HEAD(&fifo, link);
		q->nbd_inflight--;
		n += rf_ioq_complete(q, m, m->res);
	}
	return n;
}

int rf_ioq_reap(struct rf_ioq *q, bool wait)
{
	int n = 0, ret;

	if (!STAILQ_EMPTY(&q->injected)) {
		n = reap_injected(q);
		wait = false;   /* there was something to reap */
	}
	if (atomic_load_explicit(&q->nbd_done, memory_order_relaxed)) {
		n += reap_nbd(q);
		wait = false;
	}
	ret = q->be->reap(q, wait);
	if (ret < 0)
		return ret;
	/* What woke a wait may have been an NBD command's end. */
	if (wait && atomic_load_explicit(&q->nbd_done, memory_order_relaxed))
		n += reap_nbd(q);
	return n + ret;
}

void rf_ioq_destroy(struct rf_ioq *q)
{
	/* Acquire: pairs with the release at the end of nbd_end(). */
	while (atomic_load_explicit(&q->nbd_ending, memory_order_acquire))
		sched_yield();
	if (q->be)
		q->be->destroy(q);
	q->be = NULL;
	free(q->iov);
	free(q->iov_free);
	if (q->bounce)
		munmap(q->bounce, RF_IOQ_BOUNCE_BYTES);
	q->iov = NULL;
	q->iov_free = NULL;
	q->bounce = NULL;
}

/* ---- liburing backend ---- */

/* One operation with the kernel: its SQE's user_data.  An overdue write
 * is abandoned (m NULL): the slot, and the iovec slot and bounce units
 * it names, stay taken until its CQE comes. */
struct uring_slot {
	struct rf_mio *m;               /* NULL: abandoned */
	int64_t issued_ms;              /* CLOCK_MONOTONIC */
	struct uring_slot *prev, *next; /* the timed list, in issue order; next: the free list */
	uint64_t seen;                  /* an fsync: its device's IOs completed at the last look */
	bool timed;                     /* on the timed list */
	int16_t iov_slot;               /* abandoned: what it still holds */
	int8_t bounce_at;
	uint8_t bounce_n;
};

struct uring_priv {
	struct io_uring ring;
	int efd;
	uint64_t ebuf;          /* target of the armed eventfd read */
	bool armed;
	unsigned queued;        /* SQEs not yet submitted */
	struct uring_slot *slots, *free;
	struct uring_slot timed;        /* sentinel: the oldest is timed.next */
};

static void timed_unlink(struct uring_slot *s)
{
	if (!s->timed)
		return;
	s->prev->next = s->next;
	s->next->prev = s->prev;
	s->timed = false;
}

static void timed_append(struct uring_priv *u, struct uring_slot *s, int64_t now)
{
	s->issued_ms = now;
	s->prev = u->timed.prev;
	s->next = &u->timed;
	u->timed.prev->next = s;
	u->timed.prev = s;
	s->timed = true;
}

/* Whether an overdue fsync's device completed IO since the last look
 * (then it waits one more timeout: writing back, not hung). */
static bool fsync_progressed(struct rf_ioq *q, struct uring_slot *s)
{
	const struct rf_ioq_member *mm = rf_ioq_dev(q, s->m->member);
	uint64_t d;

	if (s->m->op != RF_MIO_FSYNC || mm->stat_fd <= 0)
		return false;
	d = rf_devstat_done(mm->stat_fd);
	if (!d || d == s->seen)
		return false;
	s->seen = d;
	return true;
}

/* A free slot for m, on the timed list when the queue has a deadline;
 * NULL: every slot is with the kernel. */
static struct uring_slot *slot_take(struct rf_ioq *q, struct uring_priv *u, struct rf_mio *m)
{
	struct uring_slot *s = u->free;

	if (!s)
		return NULL;
	u->free = s->next;
	s->m = m;
	s->timed = false;
	if (q->devs.timeout_ms) {
		const struct rf_ioq_member *mm = rf_ioq_dev(q, m->member);

		s->seen = m->op == RF_MIO_FSYNC && mm->stat_fd > 0 ? rf_devstat_done(mm->stat_fd) : 0;
		timed_append(u, s, rf_mono_ms());
	}
	return s;
}

static void slot_put(struct uring_priv *u, struct uring_slot *s)
{
	timed_unlink(s);
	s->m = NULL;
	s->next = u->free;
	u->free = s;
}

/* The operations overdue now (rf_ioq_devs.timeout_ms): writes and fsyncs
 * end with -ETIMEDOUT, reads are reported once and wait.  Returns end()
 * calls. */
static int uring_expire(struct rf_ioq *q, struct uring_priv *u)
{
	int64_t now = 0;
	struct uring_slot *s;
	int ended = 0;

	while ((s = u->timed.next) != &u->timed) {
		struct rf_mio *m = s->m;

		if (!now)
			now = rf_mono_ms();
		if (now - s->issued_ms < (int64_t)q->devs.timeout_ms)
			break;
		timed_unlink(s);
		if (fsync_progressed(q, s)) {
			timed_append(u, s, now);
			continue;
		}
		if (m->op == RF_MIO_READ) {
			if (q->devs.overdue)
				q->devs.overdue(q->devs.overdue_priv, m->member, m->off + m->done);
			continue;
		}
		s->m = NULL;
		s->iov_slot = m->iov_slot;
		s->bounce_at = m->bounce_at;
		s->bounce_n = m->bounce_n;
		m->iov_slot = -1;
		m->bounce_at = -1;
		m->bounce_n = 0;
		ended += abandon(q, m);
	}
	return ended;
}

/* How long a wait may last before the oldest timed operation is overdue;
 * NULL: no limit. */
static struct __kernel_timespec *uring_wait_limit(struct rf_ioq *q, struct uring_priv *u,
						  struct __kernel_timespec *ts)
{
	int64_t left;

	if (u->timed.next == &u->timed)
		return NULL;
	left = u->timed.next->issued_ms + (int64_t)q->devs.timeout_ms - rf_mono_ms();
	if (left < 0)
		left = 0;
	ts->tv_sec = left / 1000;
	ts->tv_nsec = (left % 1000) * 1000000;
	return ts;
}

static int uring_prep(struct rf_ioq *q, struct rf_mio *m, int fd, char *buf, uint32_t len, uint64_t off)
{
	struct uring_priv *u = q->priv;
	struct io_uring_sqe *sqe = u->free ? io_uring_get_sqe(&u->ring) : NULL;
	struct uring_slot *s;

	if (!sqe)
		return -EBUSY;
	switch (m->op) {
	case RF_MIO_READ:
		io_uring_prep_read(sqe, fd, buf, len, off);
		break;
	case RF_MIO_WRITE:
		io_uring_prep_write(sqe, fd, buf, len, off);
		if (m->dsync)
			sqe->rw_flags = RWF_DSYNC;
		break;
	default:
		io_uring_prep_fsync(sqe, fd, 0);
		break;
	}
	s = slot_take(q, u, m);
	io_uring_sqe_set_data(sqe, s);
	u->queued++;
	return 0;
}

static int uring_prepv(struct rf_ioq *q, struct rf_mio *m, int fd, const struct iovec *iov, int niov,
		       uint64_t off)
{
	struct uring_priv *u = q->priv;
	struct io_uring_sqe *sqe = u->free ? io_uring_get_sqe(&u->ring) : NULL;

	if (!sqe)
		return -EBUSY;
	if (m->op == RF_MIO_READ)
		io_uring_prep_readv(sqe, fd, iov, niov, off);
	else
		io_uring_prep_writev(sqe, fd, iov, niov, off);
	if (m->op == RF_MIO_WRITE && m->dsync)
		sqe->rw_flags = RWF_DSYNC;
	io_uring_sqe_set_data(sqe, slot_take(q, u, m));
	u->queued++;
	return 0;
}

static void uring_arm(struct uring_priv *u)
{
	struct io_uring_sqe *sqe;

	if (u->armed)
		return;
	sqe = io_uring_get_sqe(&u->ring);
	if (!sqe)
		return;         /* next submit makes room; armed again then */
	io_uring_prep_read(sqe, u->efd, &u->ebuf, sizeof(u->ebuf), 0);
	io_uring_sqe_set_data(sqe, NULL);
	u->armed = true;
	u->queued++;
}

static int uring_submit(struct rf_ioq *q)
{
	struct uring_priv *u = q->priv;
	int ret;

	if (!u->queued)
		return 0;
	ret = io_uring_submit(&u->ring);
	if (ret >= 0)
		u->queued = 0;
	return ret;
}

static int uring_reap(struct rf_ioq *q, bool wait)
{
	struct uring_priv *u = q->priv;
	struct io_uring_cqe *cqes[64];
	int ended = 0, ret;
	unsigned n, i;

	uring_arm(u);
	if (wait) {
		struct __kernel_timespec ts, *lim = uring_wait_limit(q, u, &ts);
		struct io_uring_cqe *cqe;

		if (lim)
			ret = io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, lim, NULL);
		else
			ret = io_uring_submit_and_wait(&u->ring, 1);
		if (ret < 0 && ret != -EINTR && ret != -ETIME)
			return ret;
		u->queued = 0;
	} else if (u->queued) {
		uring_submit(q);
	}
	do {
		struct { struct rf_mio *m; int res; } done[64];
		unsigned nd = 0;

		n = io_uring_peek_batch_cqe(&u->ring, cqes, 64);
		for (i = 0; i < n; i++) {
			struct uring_slot *s = io_uring_cqe_get_data(cqes[i]);

			if (!s) {
				u->armed = false;
				continue;
			}
			if (!s->m) {
				/* An abandoned one, back at last. */
				if (s->iov_slot >= 0)
					q->iov_free[q->niov_free++] = s->iov_slot;
				if (s->bounce_n)
					bounce_put_units(q, s->bounce_at, s->bounce_n);
				slot_put(u, s);
				continue;
			}
			done[nd].m = s->m;
			done[nd++].res = cqes[i]->res;
			slot_put(u, s);
		}
		/* Consume the CQEs before end() runs: end() may queue more IO. */
		io_uring_cq_advance(&u->ring, n);
		for (i = 0; i < nd; i++)
			ended += rf_ioq_complete(q, done[i].m, done[i].res);
	} while (n == 64);
	if (u->timed.next != &u->timed)
		ended += uring_expire(q, u);
	return ended;
}

static void uring_kick(struct rf_ioq *q)
{
	struct uring_priv *u = q->priv;
	uint64_t one = 1;
	ssize_t n;

	do
		n = write(u->efd, &one, sizeof(one));
	while (n < 0 && errno == EINTR);
}

static void uring_destroy(struct rf_ioq *q)
{
	struct uring_priv *u = q->priv;

	if (!u)
		return;
	io_uring_queue_exit(&u->ring);
	close(u->efd);
	free(u->slots);
	free(u);
	q->priv = NULL;
}

static const struct rf_ioq_backend uring_backend = {
	.prep = uring_prep,
	.prepv = uring_prepv,
	.submit = uring_submit,
	.reap = uring_reap,
	.kick = uring_kick,
	.destroy = uring_destroy,
	.map_reads = true,
};

static int uring_init(struct rf_ioq *q, struct rf_ioq_devs devs, unsigned depth, bool shared)
{
	struct uring_priv *u = calloc(1, sizeof(*u));
	struct io_uring_params p;
	unsigned i;
	int ret;

	if (!u)
		return -ENOMEM;
	u->efd = eventfd(0, EFD_CLOEXEC);
	if (u->efd < 0) {
		ret = -errno;
		free(u);
		return ret;
	}
	memset(&p, 0, sizeof(p));
#ifdef IORING_SETUP_SINGLE_ISSUER
	if (!shared)
		p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN;
#endif
	ret = io_uring_queue_init_params(depth, &u->ring, &p);
	if (ret < 0) {
		memset(&p, 0, sizeof(p));
		ret = io_uring_queue_init_params(depth, &u->ring, &p);
	}
	if (ret < 0) {
		close(u->efd);
		free(u);
		return ret;
	}
	ret = rf_ioq_init_common(q, devs, depth);
	/* Twice the ring: room for what the kernel holds beyond the SQ
	 * (submitted SQEs are free again) and for abandoned operations. */
	u->slots = ret ? NULL : calloc(2 * (size_t)depth, sizeof(*u->slots));
	if (ret || !u->slots) {
		if (!ret)
			rf_ioq_destroy(q);
		io_uring_queue_exit(&u->ring);
		close(u->efd);
		free(u);
		return ret ? ret : -ENOMEM;
	}
	for (i = 0; i < 2 * depth; i++) {
		u->slots[i].next = u->free;
		u->free = &u->slots[i];
	}
	u->timed.next = u->timed.prev = &u->timed;
	q->be = &uring_backend;
	q->priv = u;
	return 0;
}

int rf_ioq_init_uring(struct rf_ioq *q, struct rf_ioq_devs devs, unsigned depth)
{
	return uring_init(q, devs, depth, false);
}

int rf_ioq_init_uring_shared(struct rf_ioq *q, struct rf_ioq_devs devs, unsigned depth)
{
	return uring_init(q, devs, depth, true);
}

/* ---- synchronous backend ----
 *
 * For a submitter that does its own stripe work (group_thread_cnt 0): the
 * operations queued by prep run in submit(), one system call each, on the
 * calling thread; reap() hands their results to rf_ioq_complete().  On
 * members where the kernel would punt an io_uring request to a helper
 * thread anyway (tmpfs, buffered files), this saves two context switches
 * per IO.  reap() blocks only while nothing but NBD commands is in flight
 * (their ends come from another thread), until kick() or 100 ms.
 */

struct sync_op {
	struct rf_mio *m;
	const struct iovec *iov;        /* NULL: buf/len */
	char *buf;
	uint32_t len;
	int niov;
	int fd;
	uint64_t off;
	int res;
};

struct sync_priv {
	rf_ioq_run_fn run;              /* NULL: the system calls */
	pthread_mutex_t lock;           /* a leaf: kicked */
	pthread_cond_t cond;            /* lock, CLOCK_MONOTONIC: kicked became true */
	bool kicked;                    /* lock */
	unsigned depth;
	unsigned nq, ndone;             /* ops[0, ndone) ran, [ndone, nq) wait for submit */
	struct sync_op ops[];
};

static int sync_push(struct rf_ioq *q, struct rf_mio *m, int fd, char *buf, uint32_t len,
		     const struct iovec *iov, int niov, uint64_t off)
{
	struct sync_priv *s = q->priv;
	struct sync_op *o;

	if (s->nq == s->depth)
		return -EBUSY;
	o = &s->ops[s->nq++];
	o->m = m;
	o->fd = fd;
	o->buf = buf;
	o->len = len;
	o->iov = iov;
	o->niov = niov;
	o->off = off;
	return 0;
}

static int sync_prep(struct rf_ioq *q, struct rf_mio *m, int fd, char *buf, uint32_t len, uint64_t off)
{
	return sync_push(q, m, fd, buf, len, NULL, 0, off);
}

static int sync_prepv(struct rf_ioq *q, struct rf_mio *m, int fd, const struct iovec *iov, int niov, uint64_t off)
{
	return sync_push(q, m, fd, NULL, 0, iov, niov, off);
}

static int sync_run(const struct sync_op *o)
{
	struct iovec one = { o->buf, o->len };
	ssize_t n;

	if (o->m->op == RF_MIO_FSYNC)
		n = fsync(o->fd);
	else if (o->m->op == RF_MIO_WRITE && o->m->dsync)
		n = pwritev2(o->fd, o->iov ? o->iov : &one, o->iov ? o->niov : 1, (off_t)o->off, RWF_DSYNC);
	else if (o->iov)
		n = o->m->op == RF_MIO_READ ? preadv(o->fd, o->iov, o->niov, (off_t)o->off)
					    : pwritev(o->fd, o->iov, o->niov, (off_t)o->off);
	else
		n = o->m->op == RF_MIO_READ ? pread(o->fd, o->buf, o->len, (off_t)o->off)
					    : pwrite(o->fd, o->buf, o->len, (off_t)o->off);
	return n < 0 ? -errno : (int)n;
}

static int sync_submit(struct rf_ioq *q)
{
	struct sync_priv *s = q->priv;
	int n = 0;

	for (; s->ndone < s->nq; s->ndone++, n++) {
		struct sync_op *o = &s->ops[s->ndone];
		struct iovec one = { o->buf, o->len };

		if (s->run)
			o->res = s->run(rf_ioq_dev(q, o->m->member), o->m->op, o->iov ? o->iov : &one,
					o->iov ? o->niov : 1, o->off);
		else
			o->res = sync_run(o);
	}
	return n;
}

static int sync_reap(struct rf_ioq *q, bool wait)
{
	struct sync_priv *s = q->priv;
	int ended = 0;

	if (wait && !s->ndone && q->nbd_inflight) {
		struct timespec t = rf_deadline_ms(100);

		pthread_mutex_lock(&s->lock);
		if (!s->kicked)
			pthread_cond_timedwait(&s->cond, &s->lock, &t);
		s->kicked = false;
		pthread_mutex_unlock(&s->lock);
	}
	while (s->ndone) {
		/* Take the finished ops out first: a completion may queue more
		 * (short transfer, the next stripe round). */
		struct sync_op done[64];
		unsigned n = s->ndone < 64 ? s->ndone : 64, i;

		memcpy(done, s->ops, n * sizeof(*done));
		memmove(s->ops, s->ops + n, (s->nq - n) * sizeof(*s->ops));
		s->nq -= n;
		s->ndone -= n;
		for (i = 0; i < n; i++)
			ended += rf_ioq_complete(q, done[i].m, done[i].res);
	}
	return ended;
}

static void sync_kick(struct rf_ioq *q)
{
	struct sync_priv *s = q->priv;

	pthread_mutex_lock(&s->lock);
	s->kicked = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static void sync_destroy(struct rf_ioq *q)
{
	struct sync_priv *s = q->priv;

	if (!s)
		return;
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
	q->priv = NULL;
}

static const struct rf_ioq_backend sync_backend = {
	.prep = sync_prep,
	.prepv = sync_prepv,
	.submit = sync_submit,
	.reap = sync_reap,
	.kick = sync_kick,
	.destroy = sync_destroy,
	.map_reads = true,
};

int rf_ioq_init_sync(struct rf_ioq *q, struct rf_ioq_devs devs, unsigned depth)
{
	return rf_ioq_init_sync_run(q, devs, depth, NULL);
}

int rf_ioq_init_sync_run(struct rf_ioq *q, struct rf_ioq_devs devs,
			 unsigned depth, rf_ioq_run_fn fn)
{
	struct sync_priv *s = calloc(1, sizeof(*s) + depth * sizeof(s->ops[0]));
	int ret;

	if (!s)
		return -ENOMEM;
	s->depth = depth;
	s->run = fn;
	ret = rf_cond_init_mono(&s->cond);
	if (ret) {
		free(s);
		return ret;
	}
	pthread_mutex_init(&s->lock, NULL);
	rf_lock_rank(&s->lock, RF_LOCK_LEAF, "queue kick lock");
	ret = rf_ioq_init_common(q, devs, depth);
	if (ret) {
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return ret;
	}
	q->be = &sync_backend;
	q->priv = s;
	return 0;
}
