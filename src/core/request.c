/* SPDX-License-Identifier: GPL-2.0-or-later */
/* request.c - a request's way from rf_req_submit() to its pieces.
 *
 * A submitter (a FUSE thread) calls rf_req_submit(), which passes the
 * drain barrier (barrier.c); the services' write hooks run for a write
 * (core/hooks.h); the level's split() cuts the request into pieces and
 * rf_queue_piece() buckets them by group (hash of the piece's key: a
 * stripe head's sector, so one head's pieces always meet in one group).
 * Then one of two things happens:
 *  - group threads (group_thread_cnt > 0): each group's bucket is appended
 *    to g->incoming under g->lock, once per request, a sleeping worker of
 *    the group is kicked only if none is awake, and the submitter returns;
 *  - inline (group_thread_cnt 0; or a level without stripe heads while at
 *    most RF_INLINE_QUIET requests are in flight, or for a request of
 *    RF_INLINE_LARGE bytes or more): the submitter borrows an inline
 *    worker and serves its pieces itself (workers.c).
 * Each piece ends once through rf_piece_end(); the last one ends the
 * request: write_end hooks, done(), then the barrier's count.  A member
 * IO error marks the member faulty here (rf_member_fail()).
 *
 * Invariants: r->pending counts pieces not ended plus one while the
 * request is being split; done() runs exactly once.
 *
 * What it does NOT do: know level geometry (the level modules do), run
 * stripe heads (stripe_cache.c, workers.c) or hold requests (barrier.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/engine.h"
#include "raidfuse/lockcheck.h"

/* ---- pieces and requests ---- */

struct rf_req *rf_req_alloc(struct rf_array *a, uint32_t max_len)
{
	struct rf_req *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	/* A flush's one piece per slot (a grow may add slots while r lives:
	 * room for the most).  The level's worst case for data is counted
	 * past the barrier, where the geometry is still (rf_queue_req()). */
	(void)a;
	r->max_len = max_len;
	r->maxpieces = RF_MAX_MEMBERS;
	r->pieces = calloc(r->maxpieces, sizeof(*r->pieces));
	if (!r->pieces) {
		free(r);
		return NULL;
	}
	return r;
}

void rf_req_free(struct rf_req *r)
{
	if (!r)
		return;
	free(r->pieces);
	free(r);
}

struct rf_piece *rf_piece_new(struct rf_req *r, enum rf_piece_kind kind, bool write,
			      uint64_t aoff, char *buf, uint32_t len, uint64_t key)
{
	struct rf_piece *p;

	int i = atomic_fetch_add_explicit(&r->npieces, 1, memory_order_relaxed);

	if (i >= r->maxpieces)
		return NULL;
	p = &r->pieces[i];
	memset(p, 0, sizeof(*p));
	p->req = r;
	p->kind = kind;
	p->write = write;
	p->aoff = aoff;
	p->buf = buf;
	p->len = len;
	p->key = key;
	atomic_fetch_add_explicit(&r->pending, 1, memory_order_relaxed);
	return p;
}

/* The services' write hooks (core/hooks.h), in registration order. */
static int hooks_write_start(struct rf_array *a, struct rf_req *r)
{
	int k, ret = 0, e;

	r->hooks_started = a->nhooks > 0;
	for (k = 0; k < a->nhooks; k++) {
		if (!a->hooks[k].h->write_start)
			continue;
		e = a->hooks[k].h->write_start(a->hooks[k].priv, r->off, r->len);
		if (e && !ret)
			ret = e;
	}
	return ret;
}

static void hooks_write_end(struct rf_array *a, struct rf_req *r)
{
	int k, err = atomic_load(&r->err);

	for (k = 0; k < a->nhooks; k++)
		if (a->hooks[k].h->write_end)
			a->hooks[k].h->write_end(a->hooks[k].priv, r->off, r->len, err);
}

/* A submitter whose lent write may be served by other threads' stripe
 * work waits here for its end before it returns (rf_submit_now()): the
 * lent bytes stay valid until then.  On the submitter's stack; done is
 * set under lock by whoever ends the request, after which the ender
 * touches nothing of it but the unlock.  lock is a leaf: nothing is
 * taken while it is held. */
struct rf_lend_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;              /* protected by lock */
};

static void lend_wait_end(struct rf_lend_wait *lw)
{
	pthread_mutex_lock(&lw->lock);
	lw->done = true;
	pthread_cond_signal(&lw->cond);
	pthread_mutex_unlock(&lw->lock);
}

static void req_put(struct rf_req *r)
{
	if (atomic_fetch_sub_explicit(&r->pending, 1, memory_order_acq_rel) == 1) {
		/* done() may recycle r: read what the barrier and the waiting
		 * submitter need first. */
		struct rf_array *a = r->a;
		int cls = rf_req_class(r);
		struct rf_lend_wait *lw = r->lend_wait;

		rf_rangelock_end(&a->rl, &r->rl);
		if (r->hooks_started)
			hooks_write_end(a, r);
		if (r->own) {
			r->buf = r->own;
			r->own = NULL;
		}
		r->lend_wait = NULL;
		r->done(r, atomic_load_explicit(&r->err, memory_order_relaxed));
		if (lw)
			lend_wait_end(lw);
		rf_barrier_exit(a, cls);
	}
}

void rf_piece_end(struct rf_piece *p, int err)
{
	struct rf_req *r = p->req;

	if (err) {
		int zero = 0;

		atomic_compare_exchange_strong(&r->err, &zero, err);
	}
	req_put(r);
}

struct rf_group *rf_group_of(struct rf_array *a, uint64_t key)
{
	/* Fibonacci hashing spreads neighbouring heads over the groups. */
	return &a->groups[((key * 0x9E3779B97F4A7C15ull) >> 32) % (uint64_t)a->ngroups];
}

/* Per-request buckets, one queue per group, filled by rf_queue_piece()
 * and flushed once at the end of rf_req_submit(); they live on the
 * submitter's stack. */
static __thread struct rf_piece_q *tl_buckets;

void rf_queue_piece(struct rf_array *a, struct rf_piece *p)
{
	STAILQ_INSERT_TAIL(&tl_buckets[rf_group_of(a, p->key) - a->groups], p, link);
}

/* An inline worker remembers the groups it queued work to: it serves them
 * before it returns, so that work never waits for a thread that does not
 * exist. */
void rf_note_group(struct rf_group *g)
{
	struct rf_worker *w = rf_current_worker;

	if (w && !w->g)
		w->touched |= 1ull << g->id;
}

void rf_group_push(struct rf_group *g, struct rf_piece_q *q)
{
	struct rf_worker *w;

	pthread_mutex_lock(&g->lock);
	STAILQ_CONCAT(&g->incoming, q);
	w = g->idle;
	if (w) {
		g->idle = w->idle_next;
		w->idle = false;
	}
	pthread_mutex_unlock(&g->lock);
	rf_note_group(g);
	/* Wake only a sleeper: a running worker sees g->incoming on its next
	 * pass (it re-checks under g->lock before sleeping). */
	if (w)
		rf_worker_wake(w);
}

void rf_req_submit(struct rf_array *a, struct rf_req *r)
{
	r->a = a;
	r->hooks_started = false;
	r->lend_wait = NULL;
	r->rl.state = RF_RL_NONE;
	if (rf_barrier_enter(a, r) && rf_range_enter(a, r))
		rf_submit_now(a, r);
}

/* Split r and queue its pieces: to the groups' workers, or, when w is an
 * inline worker (the caller's rf_current_worker), on w: DIRECT pieces on
 * its queue, STRIPE pieces on their heads, nothing run yet. */
void rf_queue_req(struct rf_array *a, struct rf_req *r, struct rf_worker *w)
{
	struct rf_piece_q buckets[RF_MAX_GROUPS];
	int i, ret, need;

	tl_buckets = buckets;
	for (i = 0; i < a->ngroups; i++)
		STAILQ_INIT(&buckets[i]);
	atomic_store_explicit(&r->pending, 1, memory_order_relaxed);
	atomic_store_explicit(&r->err, 0, memory_order_relaxed);
	atomic_store_explicit(&r->npieces, 0, memory_order_relaxed);

	/* Room for the level's worst case at r's length, counted again when
	 * the array's shape changed since r was sized (a drain of every
	 * request: none of r's pieces is in use then). */
	need = 0;
	if ((!r->sized || r->sized_gen != a->shape_gen) && r->op != RF_REQ_FLUSH) {
		r->sized = true;
		r->sized_gen = a->shape_gen;
		need = a->ops->max_pieces(a, r->max_len);
	}
	if (need > r->maxpieces) {
		struct rf_piece *more = calloc((size_t)need, sizeof(*more));

		if (!more) {
			tl_buckets = NULL;
			atomic_store_explicit(&r->err, -ENOMEM, memory_order_relaxed);
			req_put(r);
			return;
		}
		free(r->pieces);
		r->pieces = more;
		r->maxpieces = need;
	}

	/* No write starts before the services let it (the superblocks say
	 * dirty, the bits of its chunks are on disk); they hear of its end. */
	ret = r->op == RF_REQ_WRITE ? hooks_write_start(a, r) : 0;
	/* Past what the level tolerates nothing is written; reads go on
	 * where the data is still whole (the level fails the others). */
	if (!ret && r->op != RF_REQ_READ && rf_failed_now(a))
		ret = -EIO;
	else if (!ret && r->op == RF_REQ_FLUSH) {
		/* Held stripe heads run now (md unplugs on a flush). */
		rf_delayed_release_all(a);
		ret = 0;
		for (i = 0; i < a->nmembers; i++) {
			struct rf_piece *p;

			if (!(a->present & (1ull << i)) || (rf_faulty(a) & (1ull << i)))
				continue;
			p = rf_piece_new(r, RF_PIECE_FLUSH, false, 0, NULL, 0, i);
			rf_piece_set_mio(a, p, i, 0);
			p->mio.op = RF_MIO_FSYNC;
			rf_queue_piece(a, p);
		}
	} else if (!ret) {
		ret = a->ops->split(a, r);
	}
	tl_buckets = NULL;
	if (ret) {
		/* Nothing was queued: end the request here. */
		atomic_store_explicit(&r->pending, 1, memory_order_relaxed);
		atomic_store_explicit(&r->err, ret, memory_order_relaxed);
		req_put(r);
		return;
	}
	for (i = 0; i < a->ngroups; i++) {
		if (STAILQ_EMPTY(&buckets[i]))
			continue;
		if (w)
			rf_run_pieces(w, &a->groups[i], &buckets[i]);
		else
			rf_group_push(&a->groups[i], &buckets[i]);
	}
	req_put(r);
}

/* Borrow an inline worker and make it this thread's.  *err: -ENOMEM
 * when none is left (NULL then). */
static struct rf_worker *inline_take(struct rf_array *a, struct rf_worker **saved, int *err)
{
	struct rf_worker *w;

	*err = 0;
	w = rf_inline_get(a);
	if (!w) {
		*err = -ENOMEM;
		return NULL;
	}
	/* Counted before any of its pieces can be held (workers.c,
	 * rf_inline_drive(): the last one out runs what is held). */
	atomic_fetch_add(&a->drivers, 1);
	*saved = rf_current_worker;
	rf_current_worker = w;
	return w;
}

/* With no group threads, borrow an inline worker (inline_take()); NULL
 * with group threads. */
struct rf_worker *rf_inline_begin(struct rf_array *a, struct rf_worker **saved, int *err)
{
	*err = 0;
	return a->group_thread_cnt ? NULL : inline_take(a, saved, err);
}

/* Requests past the barrier (r among them) up to which a level without
 * stripe heads serves r on the submitting thread although the array has
 * group threads: at queue depth 1 or 2 nothing is gained by handing the
 * member IO to a worker, and the hand-off is a thread wake-up on every
 * request (4 KiB writes at QD1 to members on a disk: 0.6-0.8x inline's
 * rate); deeper, the FUSE threads must go back for more requests so that
 * the members' queues fill. */
#define RF_INLINE_QUIET 2
/* A request of at least this many bytes on such a level is served on the
 * submitting thread whatever the depth: its member IO alone keeps the
 * disks busy, and a worker would copy a write's bytes first and send a
 * read's large reply itself (1 MiB reads at QD8 on raid0: 0.8x of the
 * FUSE threads doing it, however many workers). */
#define RF_INLINE_LARGE (256u << 10)

/* Whether this thread serves r itself: always without group threads;
 * with them, on a level whose pieces are all member IO (no stripe heads:
 * its IO is on this thread's own ring and ends before it returns, no
 * group's queue is touched) while the array is quiet or r is large,
 * unless the caller has more requests behind r (r->more_behind: a ring
 * thread serving its batch one by one would otherwise wait for each
 * one's member IO, the array always quiet, the disks' queue one deep). */
static bool serve_inline(struct rf_array *a, const struct rf_req *r)
{
	long n;

	if (!a->group_thread_cnt)
		return true;
	if (a->ops->handle_stripe || r->more_behind)
		return false;
	if (r->len >= RF_INLINE_LARGE)
		return true;
	/* A submitter serving its request counts twice at the barrier while
	 * it drives (its request, and itself: rf_submit_now()), and once in
	 * drivers. */
	n = atomic_load(&a->inflight[0]) + atomic_load(&a->inflight[1]) - atomic_load(&a->drivers);
	return n <= RF_INLINE_QUIET;
}

/* Serve what was queued on w, then give it back. */
void rf_inline_end(struct rf_array *a, struct rf_worker *w, struct rf_worker *saved)
{
	rf_inline_drive(w);
	rf_current_worker = saved;
	rf_inline_put(a, w);
}

void rf_req_unlend(struct rf_req *r)
{
	if (!r->lent)
		return;
	memcpy(r->buf, r->lent, r->len);
	r->lent = NULL;
}

/* Write from the lent bytes themselves: r->buf points at them until r
 * ends (req_put() gives the caller's buffer back before done()). */
static void lend_use(struct rf_req *r)
{
	r->own = r->buf;
	r->buf = (char *)r->lent;
	r->lent = NULL;
}

/* A write of up to this many bytes is copied, not lent, while the array
 * writes a stripe log (hooks.h: md's partial parity log).  A logged head
 * waits whenever its member's log has a unit in flight, and is then run
 * by the thread that ends that unit: the submitter of a lent write would
 * sleep until then and be woken after, two context switches a 4 KiB copy
 * is far cheaper than (4 KiB random writes with the log: 75k -> 86k IOPS
 * here).  At 64 KiB the two were even. */
#define RF_LOG_COPY_MAX (16u << 10)

void rf_submit_now(struct rf_array *a, struct rf_req *r)
{
	struct rf_worker *w, *saved = NULL;
	struct rf_lend_wait lw;
	int cls = rf_req_class(r), err = 0;
	bool wait = false, inl = serve_inline(a, r);

	/* A lent write's bytes go straight to the members (or into the
	 * stripe heads' parity) when they stay valid until its last piece
	 * ends: inline (no group threads, or on a level without stripe heads
	 * a quiet array or a large request: serve_inline()) this thread
	 * serves its pieces itself.  Without stripe heads (raid0, 1, 10:
	 * DIRECT pieces only; a failed write or a retry is issued again on
	 * the same worker) the request has ended when rf_inline_end()
	 * returns.  With stripe heads
	 * a piece may sit on a head another submitter runs, or one held for
	 * the rest of its row: this thread waits for the request's end after
	 * it has left its worker (a held head is released by the last
	 * submitter that leaves, so no submitter waits for one still
	 * driving).  Copying 1 MiB costs more than that wait, which a
	 * request whose pieces this thread ran itself never does.  Group
	 * threads run later: there the bytes are copied first, as are small
	 * writes while a stripe log is on (RF_LOG_COPY_MAX).  This thread
	 * is counted at the barrier, so group_thread_cnt cannot change under
	 * it. */
	if (r->lent) {
		if (a->log && r->len <= RF_LOG_COPY_MAX) {
			rf_req_unlend(r);
		} else if (inl && !a->ops->handle_stripe) {
			lend_use(r);
		} else if (inl) {
			lend_use(r);
			pthread_mutex_init(&lw.lock, NULL);
			rf_lock_rank(&lw.lock, RF_LOCK_LEAF, "lend wait lock");
			pthread_cond_init(&lw.cond, NULL);
			lw.done = false;
			r->lend_wait = &lw;
			wait = true;
		} else {
			rf_req_unlend(r);
		}
	}
	w = inl ? inline_take(a, &saved, &err) : NULL;
	if (err) {
		atomic_store_explicit(&r->pending, 1, memory_order_relaxed);
		atomic_store_explicit(&r->err, err, memory_order_relaxed);
		req_put(r);
	} else if (!w) {
		rf_queue_req(a, r, NULL);
	} else {
		/* The request may end before this thread is done with the
		 * stripe heads it serves: count the thread itself until it
		 * leaves them, so no drain reshapes the groups under it. */
		atomic_fetch_add(&a->inflight[cls], 1);
		rf_queue_req(a, r, w);
		rf_inline_end(a, w, saved);
		rf_barrier_exit(a, cls);
	}
	if (!wait)
		return;
	/* r may be recycled already: only lw is ours. */
	pthread_mutex_lock(&lw.lock);
	while (!lw.done)
		pthread_cond_wait(&lw.cond, &lw.lock);
	pthread_mutex_unlock(&lw.lock);
	pthread_cond_destroy(&lw.cond);
	pthread_mutex_destroy(&lw.lock);
}

/* ---- member failure ---- */

/* Whether failing member (in sync) would leave some data without a copy
 * on a level that keeps its last copies: md's raid1 and raid10 keep such
 * a device In_sync and mark the array broken instead (raid1_error,
 * raid10_error's enough()), and raid0 never fails a device at all; so
 * the superblocks never record the data's last holder faulty and the
 * array assembles with it again.  Parity levels fail the device. */
static bool keeps_last_copy(const struct rf_array *a, uint64_t out, uint64_t bit)
{
	return a->ops->keeps_last && !(out & bit) && a->ops->failed(a, out | bit);
}

void rf_replace_failed(struct rf_array *a, int k, int err, const char *what)
{
	uint64_t bit = 1ull << k;

	if (err)
		atomic_fetch_add_explicit(&a->devs[a->repl_dev[k]].nr_errors, 1, memory_order_relaxed);
	if (atomic_fetch_or(&a->repl_failed, bit) & bit)
		return;
	rf_err("%s: replacement %s of slot %d: %s%s%s; the replacement stops (faulty), slot %d keeps its device",
	       a->name, a->devs[a->repl_dev[k]].path, k, what, err ? ": " : "", err ? strerror(-err) : "", k);
	rf_array_kick_mgmt(a);
}

bool rf_member_fail(struct rf_array *a, int member, int err, const char *what, uint64_t off)
{
	uint64_t bit, old;
	const struct rf_dev *m;
	int k;
	char why[512];

	/* Not a slot's: a replacement (the sync walk's copy wrote to it). */
	if (member >= a->nmembers) {
		k = rf_replacement_slot(a, member);
		if (k >= 0)
			rf_replace_failed(a, k, err, what);
		return true;
	}
	bit = 1ull << member;
	old = atomic_load_explicit(&a->faulty, memory_order_acquire);
	m = &a->devs[member];

	atomic_fetch_add_explicit(&a->devs[member].nr_errors, 1, memory_order_relaxed);
	do {
		if (old & bit)
			return true;
		if (keeps_last_copy(a, old | atomic_load(&a->recovering), bit)) {
			if (!atomic_exchange(&a->broken, true))
				rf_err("member %d (%s): %s at %llu: %s; the last in-sync copy of its data: "
				       "kept in sync, array broken (writes fail, reads go on)",
				       member, m->path, what, (unsigned long long)off, strerror(-err));
			rf_array_kick_mgmt(a);
			return false;
		}
	} while (!atomic_compare_exchange_weak_explicit(&a->faulty, &old, old | bit, memory_order_acq_rel,
							memory_order_acquire));
	rf_err("member %d (%s): %s at %llu: %s; member marked faulty%s", member, m->path, what,
	       (unsigned long long)off, strerror(-err),
	       a->ops->failed(a, old | bit | atomic_load(&a->recovering)) ? "; array FAILED" : ", array degraded");
	/* A short transfer or an error may be the file changed under us:
	 * say so (the fds and id are stable while IO is in flight). */
	if (err != -ENODEV && rf_devopen_check(m->io.fd, &m->id, false, why, sizeof(why)))
		rf_err("member %d (%s): %s", member, m->path, why);
	/* The last devices that hold the data are no longer failfast. */
	rf_devs_flags_changed(a);
	for (k = 0; k < a->nhooks; k++)
		if (a->hooks[k].h->member_failed)
			a->hooks[k].h->member_failed(a->hooks[k].priv, member);
	rf_array_kick_mgmt(a);
	return true;
}

/* ---- direct member IO ---- */

static void direct_end(struct rf_mio *m)
{
	struct rf_piece *p = (struct rf_piece *)((char *)m - offsetof(struct rf_piece, mio));
	struct rf_array *a = rf_current_worker->a;

	if (!m->res) {
		rf_piece_end(p, 0);
		return;
	}
	if (p->kind == RF_PIECE_FLUSH) {
		rf_member_fail(a, m->member, m->res, "fsync", 0);
		rf_piece_end(p, rf_failed_now(a) ? -EIO : 0);
		return;
	}
	/* Whatever the errno, a member that lost an IO no longer holds the
	 * array's data there: it is faulty from now on. */
	rf_member_fail(a, m->member, m->res, m->op == RF_MIO_WRITE ? "write" : "read", m->off + m->done);
	a->ops->direct_failed(rf_current_worker, p, m->res);
}

void rf_piece_set_mio(struct rf_array *a, struct rf_piece *p, int member, uint64_t moff)
{
	p->mio.end = direct_end;
	p->mio.buf = p->buf;
	p->mio.len = p->len;
	p->mio.off = a->devs[member].data_offset + moff;
	p->mio.member = member;
	p->mio.op = p->write ? RF_MIO_WRITE : RF_MIO_READ;
}

void rf_direct_issue(struct rf_worker *w, struct rf_piece *p)
{
	rf_member_queue(w, &p->mio);
}

