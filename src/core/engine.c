/* engine.c - the array core: members, worker groups, pieces, stripe cache.
 *
 * Data flow.  A submitter (a FUSE thread) calls rf_array_submit(), which
 * passes the drain barrier (below); the level's split() cuts the request
 * into pieces and rf_queue_piece() buckets them by group (hash of the
 * piece's key: a stripe head's sector, so one head's pieces always meet in
 * one group).  Then one of two things happens:
 *  - group threads (group_thread_cnt > 0): each group's bucket is appended
 *    to g->incoming under g->lock, once per request, a sleeping worker of
 *    the group is kicked only if none is awake, and the submitter returns;
 *  - inline (group_thread_cnt 0): the submitter borrows an inline worker
 *    and serves its pieces itself, on a synchronous member queue, until
 *    every head it took is idle again (see inline_drive()).
 *
 * A worker loops: take g->incoming and g->handle lists, issue DIRECT pieces
 * on its own ring, attach STRIPE pieces to stripe heads, run the heads it
 * took, submit, reap completions (which run pieces' ends and stripe state
 * machines), and sleeps in its ring when there is nothing to do.
 *
 * Stripe cache: each group owns stripe_cache_size / groups heads, hashed by
 * member sector, idle ones on an LRU list with their blocks kept uptodate.
 * A piece that finds no free head waits on g->deferred until a head goes
 * idle.
 *
 * It does NOT know level geometry (the level modules do) nor FUSE.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <malloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/engine.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/overlay.h"
#include "raidfuse/sync.h"
#include "services/sbstate.h"

__thread struct rf_worker *rf_current_worker;

#define RF_RING_DEPTH 256
#define HANDLE_BATCH 64          /* stripe heads a worker takes per pass */

/* ---- pieces and requests ---- */

struct rf_req *rf_req_alloc(struct rf_array *a, uint32_t max_len)
{
	struct rf_req *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->maxpieces = a->ops->max_pieces(a, max_len);
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

/* ---- the drain barrier ----
 *
 * Every request passes the barrier in rf_array_submit() and counts in
 * a->inflight[class] until its done() has returned.  A reconfiguration sets
 * hold bits, then waits for the held classes' inflight counts to reach
 * zero; requests that arrive meanwhile wait on a->held (no thread waits
 * with them).  Release resubmits a->held in arrival order while
 * RF_HOLD_RELEASING still sends newcomers to the back of that queue, so no
 * request is left behind and none overtakes an older one.
 *
 * The fast path is lock-free: the submitter bumps inflight, then re-reads
 * hold; the drainer sets hold, then reads inflight (both sequentially
 * consistent), so at least one of them sees the other.
 */
enum {
	RF_HOLD_WRITES = 1,
	RF_HOLD_READS = 2,
	RF_HOLD_ALL = RF_HOLD_WRITES | RF_HOLD_READS,
	RF_HOLD_RELEASING = 4,
};

static int req_class(const struct rf_req *r)
{
	return r->op != RF_REQ_READ;
}

static unsigned class_hold(int cls)
{
	return cls ? RF_HOLD_WRITES : RF_HOLD_READS;
}

static void barrier_exit(struct rf_array *a, int cls)
{
	if (atomic_fetch_sub(&a->inflight[cls], 1) == 1 && atomic_load(&a->hold)) {
		pthread_mutex_lock(&a->bar_lock);
		pthread_cond_broadcast(&a->bar_cond);
		pthread_mutex_unlock(&a->bar_lock);
	}
}

/* Whether r may go on now; false: it waits on a->held. */
static bool barrier_enter(struct rf_array *a, struct rf_req *r)
{
	int cls = req_class(r);
	unsigned bits = class_hold(cls) | RF_HOLD_RELEASING;
	bool go = false;

	if (!(atomic_load(&a->hold) & bits)) {
		atomic_fetch_add(&a->inflight[cls], 1);
		if (!(atomic_load(&a->hold) & bits))
			return true;
		barrier_exit(a, cls);
	}
	pthread_mutex_lock(&a->bar_lock);
	if (!(atomic_load(&a->hold) & bits)) {
		/* Released since: hold only changes under bar_lock. */
		atomic_fetch_add(&a->inflight[cls], 1);
		go = true;
	} else {
		r->held_next = NULL;
		*a->held_tail = r;
		a->held_tail = &r->held_next;
	}
	pthread_mutex_unlock(&a->bar_lock);
	return go;
}

/* Hold new requests of the classes in bits and wait until none of them is
 * in flight.  reconf_lock held. */
static void drain(struct rf_array *a, unsigned bits)
{
	pthread_mutex_lock(&a->bar_lock);
	atomic_fetch_or(&a->hold, bits);
	while (((bits & RF_HOLD_READS) && atomic_load(&a->inflight[0])) ||
	       ((bits & RF_HOLD_WRITES) && atomic_load(&a->inflight[1])))
		pthread_cond_wait(&a->bar_cond, &a->bar_lock);
	pthread_mutex_unlock(&a->bar_lock);
}

static void submit_now(struct rf_array *a, struct rf_req *r);
static void queue_req(struct rf_array *a, struct rf_req *r, struct rf_worker *w);

/* ---- the sync regions' range lock (rangelock.c) ----
 *
 * Past the barrier, while a sync walk runs (a->rl armed), a write is
 * admitted at the range lock over the rows it touches (sync.c maps them):
 * one that overlaps a region being synced is queued there and stops
 * counting at the barrier, so no drain ever waits for a region (a region
 * may take reconf_lock to drop cached heads); the region's unlock hands
 * it back through range_resubmit(), which submits it afresh (barrier
 * first).  A write admitted is tracked until it ends (req_put()), so a
 * region waits for the writes in flight in its rows.  Unarmed, a write
 * pays one atomic load.  The walk arms with writes drained
 * (rf_sync_rows_begin()), so no write in flight then goes untracked.
 * Flushes and reads are not admitted: flushes change no rows, and reads
 * go on during a region (sync.c says why that is right). */

/* Whether the write r (counted at the barrier) may go on now; false: it
 * waits on a region's queue and no longer counts at the barrier. */
static bool range_enter(struct rf_array *a, struct rf_req *r)
{
	uint64_t lo, hi;
	int cls = req_class(r);

	if (r->op != RF_REQ_WRITE || !rf_rangelock_armed(&a->rl))
		return true;
	rf_sync_write_rows(a, r->off, r->len, &lo, &hi);
	if (!rf_rangelock_admit(&a->rl, &r->rl, lo, hi))
		return true;
	/* r may be handed back and end at any time from here. */
	barrier_exit(a, cls);
	return false;
}

/* A region unlocked: submit a write it held, as if it had just arrived. */
static void range_resubmit(struct rf_rl_ent *e, void *priv)
{
	struct rf_req *r = (struct rf_req *)((char *)e - offsetof(struct rf_req, rl));

	rf_array_submit(priv, r);
}

void rf_sync_rows_begin(struct rf_array *a)
{
	rf_writes_hold(a);
	rf_rangelock_arm(&a->rl);
	rf_writes_release(a);
}

void rf_sync_rows_end(struct rf_array *a)
{
	rf_rangelock_disarm(&a->rl);
}

static struct rf_worker *inline_begin(struct rf_array *a, struct rf_worker **saved, int *err);
static void inline_end(struct rf_array *a, struct rf_worker *w, struct rf_worker *saved);

/* Stop holding, except the classes in keep, and resubmit every waiting
 * request that is no longer held, oldest first.  reconf_lock held.
 *
 * Requests that arrive meanwhile queue behind the held ones; the loop
 * ends when the queue is empty.  So the loop must be quick: it only
 * splits and queues (pieces on their heads, member IO on the releaser's
 * inline worker), and the member IO runs after the barrier is open. */
static void release(struct rf_array *a, unsigned keep)
{
	struct rf_req *kept = NULL, **ktail = &kept;
	struct rf_worker *w, *saved = NULL;
	int err;

	w = inline_begin(a, &saved, &err);
	pthread_mutex_lock(&a->bar_lock);
	atomic_store(&a->hold, keep | RF_HOLD_RELEASING);
	for (;;) {
		struct rf_req *r = a->held, *next;

		if (!r)
			break;
		a->held = NULL;
		a->held_tail = &a->held;
		pthread_mutex_unlock(&a->bar_lock);
		for (; r; r = next) {
			int cls = req_class(r);

			next = r->held_next;
			if (keep & class_hold(cls)) {
				r->held_next = NULL;
				*ktail = r;
				ktail = &r->held_next;
				continue;
			}
			atomic_fetch_add(&a->inflight[cls], 1);
			if (!range_enter(a, r))
				continue;               /* a sync region holds it now */
			if (err)
				submit_now(a, r);       /* ends it: no inline worker */
			else
				queue_req(a, r, w);
		}
		pthread_mutex_lock(&a->bar_lock);
	}
	/* What stays held keeps its order; nothing newer is queued now. */
	a->held = kept;
	a->held_tail = kept ? ktail : &a->held;
	atomic_store(&a->hold, keep);
	pthread_mutex_unlock(&a->bar_lock);
	/* reconf_lock is held: no drain reshapes the groups under w. */
	if (w)
		inline_end(a, w, saved);
}

static void req_put(struct rf_req *r)
{
	if (atomic_fetch_sub_explicit(&r->pending, 1, memory_order_acq_rel) == 1) {
		/* done() may recycle r: read what the barrier needs first. */
		struct rf_array *a = r->a;
		int cls = req_class(r);

		rf_rangelock_end(&a->rl, &r->rl);
		if (r->bitmap_counted)
			rf_bitmap_write_end(a->bitmap, r->off, r->len, atomic_load(&r->err));
		r->done(r, atomic_load_explicit(&r->err, memory_order_relaxed));
		barrier_exit(a, cls);
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

static struct rf_group *group_of(struct rf_array *a, uint64_t key)
{
	/* Fibonacci hashing spreads neighbouring heads over the groups. */
	return &a->groups[((key * 0x9E3779B97F4A7C15ull) >> 32) % (uint64_t)a->ngroups];
}

/* Per-request buckets, one per group, filled by rf_queue_piece() and
 * flushed once at the end of rf_array_submit(); they live on the
 * submitter's stack. */
struct bucket {
	struct rf_piece *head, **tail;
};
static __thread struct bucket *tl_buckets;

void rf_queue_piece(struct rf_array *a, struct rf_piece *p)
{
	struct bucket *b = &tl_buckets[group_of(a, p->key) - a->groups];

	p->next = NULL;
	*b->tail = p;
	b->tail = &p->next;
}

/* An inline worker remembers the groups it queued work to: it serves them
 * before it returns, so that work never waits for a thread that does not
 * exist. */
static void note_group(struct rf_group *g)
{
	struct rf_worker *w = rf_current_worker;

	if (w && !w->g)
		w->touched |= 1ull << g->id;
}

static void group_push(struct rf_group *g, struct rf_piece *head, struct rf_piece **tail)
{
	struct rf_worker *w;

	pthread_mutex_lock(&g->lock);
	*g->incoming_tail = head;
	g->incoming_tail = tail;
	w = g->idle;
	if (w) {
		g->idle = w->idle_next;
		w->idle = false;
	}
	pthread_mutex_unlock(&g->lock);
	note_group(g);
	/* Wake only a sleeper: a running worker sees g->incoming on its next
	 * pass (it re-checks under g->lock before sleeping). */
	if (w)
		rf_ioq_kick(&w->ioq);
}

static void run_pieces(struct rf_worker *w, struct rf_group *g, struct rf_piece *list);
static struct rf_worker *inline_get(struct rf_array *a);
static void inline_put(struct rf_array *a, struct rf_worker *w);
static void inline_drive(struct rf_worker *w);

void rf_array_submit(struct rf_array *a, struct rf_req *r)
{
	r->a = a;
	r->bitmap_counted = false;
	r->rl.state = RF_RL_NONE;
	if (barrier_enter(a, r) && range_enter(a, r))
		submit_now(a, r);
}

/* Split r and queue its pieces: to the groups' workers, or, when w is an
 * inline worker (the caller's rf_current_worker), on w: DIRECT pieces on
 * its queue, STRIPE pieces on their heads, nothing run yet. */
static void queue_req(struct rf_array *a, struct rf_req *r, struct rf_worker *w)
{
	struct bucket buckets[RF_MAX_GROUPS];
	int i, ret;

	tl_buckets = buckets;
	for (i = 0; i < a->ngroups; i++) {
		tl_buckets[i].head = NULL;
		tl_buckets[i].tail = &tl_buckets[i].head;
	}
	atomic_store_explicit(&r->pending, 1, memory_order_relaxed);
	atomic_store_explicit(&r->err, 0, memory_order_relaxed);
	atomic_store_explicit(&r->npieces, 0, memory_order_relaxed);

	/* No write starts while the superblocks say clean. */
	ret = r->op == RF_REQ_WRITE ? rf_sbstate_write_start(a->sbstate) : 0;
	/* Nor before the bits of its chunks are on disk; counted until it ends. */
	if (r->op == RF_REQ_WRITE && a->bitmap) {
		r->bitmap_counted = true;
		if (rf_bitmap_write_start(a->bitmap, r->off, r->len) && !ret)
			ret = -EIO;
	}
	/* Past what the level tolerates nothing is written; reads go on
	 * where the data is still whole (the level fails the others). */
	if (!ret && r->op != RF_REQ_READ && rf_failed_now(a))
		ret = -EIO;
	else if (!ret && r->op == RF_REQ_FLUSH) {
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
		if (!buckets[i].head)
			continue;
		if (w)
			run_pieces(w, &a->groups[i], buckets[i].head);
		else
			group_push(&a->groups[i], buckets[i].head, buckets[i].tail);
	}
	req_put(r);
}

/* With no group threads, borrow an inline worker and make it this
 * thread's; NULL with group threads.  *err: -ENOMEM when none is left. */
static struct rf_worker *inline_begin(struct rf_array *a, struct rf_worker **saved, int *err)
{
	struct rf_worker *w;

	*err = 0;
	if (a->group_thread_cnt)
		return NULL;
	w = inline_get(a);
	if (!w) {
		*err = -ENOMEM;
		return NULL;
	}
	*saved = rf_current_worker;
	rf_current_worker = w;
	return w;
}

/* Serve what was queued on w, then give it back. */
static void inline_end(struct rf_array *a, struct rf_worker *w, struct rf_worker *saved)
{
	inline_drive(w);
	rf_current_worker = saved;
	inline_put(a, w);
}

static void submit_now(struct rf_array *a, struct rf_req *r)
{
	struct rf_worker *w, *saved = NULL;
	int cls = req_class(r), err;

	w = inline_begin(a, &saved, &err);
	if (err) {
		atomic_store_explicit(&r->pending, 1, memory_order_relaxed);
		atomic_store_explicit(&r->err, err, memory_order_relaxed);
		req_put(r);
		return;
	}
	if (!w) {
		queue_req(a, r, NULL);
		return;
	}
	/* The request may end before this thread is done with the stripe
	 * heads it serves: count the thread itself until it leaves them, so
	 * no drain reshapes the groups under it. */
	atomic_fetch_add(&a->inflight[cls], 1);
	queue_req(a, r, w);
	inline_end(a, w, saved);
	barrier_exit(a, cls);
}

/* ---- member failure ---- */

void rf_member_fail(struct rf_array *a, int member, int err, const char *what, uint64_t off)
{
	uint64_t bit = 1ull << member;
	uint64_t old = atomic_fetch_or_explicit(&a->faulty, bit, memory_order_acq_rel);

	atomic_fetch_add_explicit(&a->members[member].nr_errors, 1, memory_order_relaxed);
	if (!(old & bit)) {
		const struct rf_member *m = &a->members[member];
		char why[512];

		rf_err("member %d (%s): %s at %llu: %s; member marked faulty%s", member,
		       m->path, what, (unsigned long long)off, strerror(-err),
		       a->ops->failed(a, old | bit) ? "; array FAILED" : ", array degraded");
		/* A short transfer or an error may be the file changed under us:
		 * say so (the fds and id are stable while IO is in flight). */
		if (err != -ENODEV && rf_dev_check(m->fd, &m->id, false, why, sizeof(why)))
			rf_err("member %d (%s): %s", member, m->path, why);
		rf_sbstate_kick(a->sbstate);
		rf_mgmt_kick(a);
	}
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
	p->mio.off = a->members[member].data_offset + moff;
	p->mio.member = member;
	p->mio.op = p->write ? RF_MIO_WRITE : RF_MIO_READ;
}

void rf_direct_issue(struct rf_worker *w, struct rf_piece *p)
{
	rf_ioq_queue(&w->ioq, &p->mio);
}

/* ---- stripe cache ---- */

static uint32_t hash_of(struct rf_group *g, uint64_t sector)
{
	return (uint32_t)((sector * 0x9E3779B97F4A7C15ull) >> 40) & g->hash_mask;
}

static void lru_del(struct rf_group *g, struct rf_stripe *sh)
{
	if (sh->lru_prev)
		sh->lru_prev->lru_next = sh->lru_next;
	else
		g->lru_head = sh->lru_next;
	if (sh->lru_next)
		sh->lru_next->lru_prev = sh->lru_prev;
	else
		g->lru_tail = sh->lru_prev;
	sh->lru_prev = sh->lru_next = NULL;
	sh->on_lru = false;
	g->nlru--;
}

static void lru_add_tail(struct rf_group *g, struct rf_stripe *sh)
{
	sh->lru_next = NULL;
	sh->lru_prev = g->lru_tail;
	if (g->lru_tail)
		g->lru_tail->lru_next = sh;
	else
		g->lru_head = sh;
	g->lru_tail = sh;
	sh->on_lru = true;
	g->nlru++;
}

static void unhash(struct rf_group *g, struct rf_stripe *sh)
{
	struct rf_stripe **pp = &g->hash[hash_of(g, sh->sector)];

	while (*pp != sh)
		pp = &(*pp)->hnext;
	*pp = sh->hnext;
	sh->hnext = NULL;
	sh->hashed = false;
}

static void handle_add(struct rf_group *g, struct rf_stripe *sh)
{
	sh->handle_next = NULL;
	if (g->handle_tail)
		g->handle_tail->handle_next = sh;
	else
		g->handle_head = sh;
	g->handle_tail = sh;
	sh->on_handle = true;
}

/* g->lock held.  The head for sector, found or recycled from the LRU; NULL
 * when every head is busy. */
static struct rf_stripe *stripe_get(struct rf_group *g, uint64_t sector)
{
	uint32_t h = hash_of(g, sector);
	struct rf_stripe *sh;

	for (sh = g->hash[h]; sh; sh = sh->hnext)
		if (sh->sector == sector)
			return sh;
	sh = g->lru_head;
	if (!sh)
		return NULL;
	lru_del(g, sh);
	if (sh->hashed)
		unhash(g, sh);
	sh->sector = sector;
	sh->uptodate = 0;
	sh->hnext = g->hash[h];
	g->hash[h] = sh;
	sh->hashed = true;
	return sh;
}

/* g->lock held.  Queue p on its head sh (whose sector is p->key), found by
 * the caller, or looked up (sh NULL).  Returns the head, or NULL when p must
 * wait for one. */
static struct rf_stripe *stripe_attach(struct rf_group *g, struct rf_stripe *sh, struct rf_piece *p)
{
	if (!sh) {
		sh = stripe_get(g, p->key);
		if (!sh)
			return NULL;
		if (sh->on_lru)
			lru_del(g, sh);
	}
	p->next = NULL;
	if (p->write) {
		*sh->towrite_tail = p;
		sh->towrite_tail = &p->next;
	} else {
		*sh->toread_tail = p;
		sh->toread_tail = &p->next;
	}
	if (!sh->busy && !sh->on_handle) {
		handle_add(g, sh);
		note_group(g);
	}
	return sh;
}

/* The owner is done with a round.  Either another round is due (pieces
 * arrived meanwhile) or the head goes idle. */
bool rf_stripe_finish(struct rf_stripe *sh)
{
	struct rf_group *g = sh->g;
	bool again = false;

	pthread_mutex_lock(&g->lock);
	if (sh->toread || sh->towrite) {
		again = true;
	} else {
		sh->busy = false;
		lru_add_tail(g, sh);
		if (g->deferred) {
			/* A head is free: let the waiting pieces try again. */
			*g->incoming_tail = g->deferred;
			g->incoming_tail = g->deferred_tail;
			g->deferred = NULL;
			g->deferred_tail = &g->deferred;
			note_group(g);
		}
	}
	pthread_mutex_unlock(&g->lock);
	return again;
}

void rf_requeue_piece(struct rf_array *a, struct rf_piece *p)
{
	p->next = NULL;
	group_push(group_of(a, p->key), p, &p->next);
}

/* ---- workers ---- */

#define SEEN_SLOTS 32

/* g->lock held: attach list's STRIPE pieces to their heads (or to
 * g->deferred when no head is free) and return its DIRECT pieces, in
 * order, for the caller to issue.  Taking g->incoming and attaching its
 * pieces in one critical section keeps the order of writes to one head:
 * no other worker can attach later pieces in between. */
static struct rf_piece *attach_locked(struct rf_group *g, struct rf_piece *list)
{
	struct rf_piece *p, *next, *direct = NULL, **dtail = &direct;
	struct rf_stripe *seen[SEEN_SLOTS] = { NULL };

	/* One hash lookup per head: a request's pieces of one head (its data
	 * columns) find the head again here.  A head found in this round
	 * cannot be recycled before the lock is dropped: it is off the LRU. */
	for (p = list; p; p = next) {
		struct rf_stripe **slot, *sh;

		next = p->next;
		p->next = NULL;
		if (p->kind != RF_PIECE_STRIPE) {
			*dtail = p;
			dtail = &p->next;
			continue;
		}
		slot = &seen[(p->key ^ p->key >> 5) % SEEN_SLOTS];
		sh = *slot && (*slot)->sector == p->key ? *slot : NULL;
		sh = stripe_attach(g, sh, p);
		if (sh) {
			*slot = sh;
		} else {
			*g->deferred_tail = p;
			g->deferred_tail = &p->next;
		}
	}
	return direct;
}

static void issue_direct(struct rf_worker *w, struct rf_piece *list)
{
	struct rf_piece *p, *next;

	for (p = list; p; p = next) {
		next = p->next;
		rf_direct_issue(w, p);
	}
}

/* Attach list's STRIPE pieces to their heads in g (waiting on
 * g->deferred when no head is free), then issue its DIRECT pieces on w. */
static void run_pieces(struct rf_worker *w, struct rf_group *g, struct rf_piece *list)
{
	struct rf_piece *direct;

	pthread_mutex_lock(&g->lock);
	direct = attach_locked(g, list);
	pthread_mutex_unlock(&g->lock);
	issue_direct(w, direct);
}

/* One pass of w over g: take the incoming pieces, then a batch of heads
 * (their IO goes out in one submit) and run them.  Returns how many things
 * it took. */
static int group_pass(struct rf_worker *w, struct rf_group *g, bool *stop)
{
	struct rf_stripe *batch[HANDLE_BATCH];
	struct rf_piece *in, *direct;
	int i, nsh = 0;

	pthread_mutex_lock(&g->lock);
	in = g->incoming;
	g->incoming = NULL;
	g->incoming_tail = &g->incoming;
	if (stop)
		*stop = g->stop;
	direct = attach_locked(g, in);
	pthread_mutex_unlock(&g->lock);
	issue_direct(w, direct);

	pthread_mutex_lock(&g->lock);
	while (g->handle_head && nsh < HANDLE_BATCH) {
		struct rf_stripe *sh = g->handle_head;

		g->handle_head = sh->handle_next;
		if (!g->handle_head)
			g->handle_tail = NULL;
		sh->busy = true;
		sh->on_handle = false;
		batch[nsh++] = sh;
	}
	pthread_mutex_unlock(&g->lock);
	for (i = 0; i < nsh; i++)
		w->a->ops->handle_stripe(w, batch[i]);
	return !!in + nsh;
}

static void *worker_main(void *arg)
{
	struct rf_worker *w = arg;
	struct rf_group *g = w->g;
	struct rf_array *a = g->a;

	rf_current_worker = w;
	w->ioq_ret = a->ioq_init(&w->ioq, a->iom, a->nmembers, RF_RING_DEPTH);
	if (w->ioq_ret)
		rf_err("group %d: io_uring setup failed: %s", g->id, strerror(-w->ioq_ret));
	pthread_mutex_lock(&a->start_lock);
	a->nready++;
	a->nstart_err += !!w->ioq_ret;
	pthread_cond_broadcast(&a->start_cond);
	pthread_mutex_unlock(&a->start_lock);
	if (w->ioq_ret)
		return NULL;
	for (;;) {
		bool stop;
		int took, n;

		took = group_pass(w, g, &stop);
		rf_ioq_submit(&w->ioq);
		n = rf_ioq_reap(&w->ioq, false);
		/* Work done, or IO waiting to be resubmitted with nothing in
		 * flight to wait for: go round again. */
		if (took || n > 0 || (w->ioq.retry && !w->ioq.inflight))
			continue;
		if (stop && !rf_ioq_busy(&w->ioq))
			break;

		/* Nothing to do: sleep in the ring unless work arrived since the
		 * check above (the submitter takes us off g->idle under the lock
		 * it queued with, then kicks). */
		pthread_mutex_lock(&g->lock);
		if (g->incoming || g->handle_head || g->stop) {
			pthread_mutex_unlock(&g->lock);
			if (!g->stop)
				continue;
			if (!rf_ioq_busy(&w->ioq))
				break;
		} else {
			w->idle = true;
			w->idle_next = g->idle;
			g->idle = w;
			pthread_mutex_unlock(&g->lock);
		}
		rf_ioq_reap(&w->ioq, true);
		pthread_mutex_lock(&g->lock);
		if (w->idle) {
			struct rf_worker **pp = &g->idle;

			while (*pp != w)
				pp = &(*pp)->idle_next;
			*pp = w->idle_next;
			w->idle = false;
		}
		pthread_mutex_unlock(&g->lock);
	}
	/* The ring outlives the thread: rf_array_close() may still kick it. */
	return NULL;
}

static int worker_buffers(struct rf_array *a, struct rf_worker *w)
{
	size_t blk = a->stripe_size;

	w->a = a;
	if (posix_memalign((void **)&w->scratch, 4096, 2 * blk))
		return -ENOMEM;
	w->zero = w->scratch + blk;
	memset(w->zero, 0, blk);
	return 0;
}

/* ---- inline workers (group_thread_cnt 0) ----
 *
 * A submitter borrows one, issues its pieces on it and runs it until its
 * ring is idle and every group it queued work to has been served (whoever
 * queues work to a group with no threads serves it).  Its own request may
 * still be waiting on a head another submitter owns: that owner ends it.
 * Each inline worker has a ring of its own and is handed between threads
 * only through pool_lock.
 */
static struct rf_worker *inline_get(struct rf_array *a)
{
	struct rf_worker *w;

	pthread_mutex_lock(&a->pool_lock);
	w = a->pool;
	if (w)
		a->pool = w->pool_next;
	pthread_mutex_unlock(&a->pool_lock);
	if (w)
		return w;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	if (worker_buffers(a, w) || a->inline_ioq_init(&w->ioq, a->iom, a->nmembers, RF_RING_DEPTH)) {
		rf_err("inline worker: out of memory for its IO queue");
		free(w->scratch);
		free(w);
		return NULL;
	}
	pthread_mutex_lock(&a->pool_lock);
	w->all_next = a->pool_all;
	a->pool_all = w;
	pthread_mutex_unlock(&a->pool_lock);
	return w;
}

static void inline_put(struct rf_array *a, struct rf_worker *w)
{
	pthread_mutex_lock(&a->pool_lock);
	w->pool_next = a->pool;
	a->pool = w;
	pthread_mutex_unlock(&a->pool_lock);
}

static void inline_drive(struct rf_worker *w)
{
	struct rf_array *a = w->a;

	for (;;) {
		uint64_t t = w->touched;
		int took = 0, n;

		while (t) {
			int i = __builtin_ctzll(t);
			int k;

			t &= t - 1;
			/* Cleared first: serving the group may queue to it again. */
			w->touched &= ~(1ull << i);
			k = group_pass(w, &a->groups[i], NULL);
			if (k)
				w->touched |= 1ull << i;
			took += k;
		}
		rf_ioq_submit(&w->ioq);
		n = rf_ioq_reap(&w->ioq, false);
		if (took || n > 0 || w->touched || (w->ioq.retry && !w->ioq.inflight))
			continue;
		if (!rf_ioq_busy(&w->ioq))
			break;
		rf_ioq_reap(&w->ioq, true);
	}
}

static void inline_free_all(struct rf_array *a)
{
	struct rf_worker *w, *next;

	for (w = a->pool_all; w; w = next) {
		next = w->all_next;
		rf_ioq_destroy(&w->ioq);
		free(w->scratch);
		free(w);
	}
	a->pool = a->pool_all = NULL;
}

/* ---- array setup ---- */

static const struct rf_level_ops *level_ops(int level)
{
	switch (level) {
	case 0:
		return &rf_raid0_ops;
	case 1:
		return &rf_raid1_ops;
	case 10:
		return &rf_raid10_ops;
	case 4:
	case 5:
	case 6:
		return &rf_raid5_ops;
	}
	return NULL;
}

int rf_same_file(struct rf_array *a, int i, const struct rf_dev_id *id)
{
	int j;

	for (j = 0; j < i; j++)
		if (a->members[j].fd >= 0 && rf_dev_same(&a->members[j].id, id))
			return j;
	return -1;
}

/* Open device i of the table (a member slot or a spare) through
 * rf_dev_open(), so every device is checked the same way. */
static int open_member(struct rf_array *a, int i, const char *path, char *err, size_t errlen)
{
	struct rf_member *m = &a->members[i];
	/* Read-only (--ro, overlays) opens nothing for writing and takes a
	 * shared lock: other read-only servers may share the member, a writer
	 * may not. */
	bool ro = a->readonly || a->overlay;
	struct rf_dev_fd d;
	char who[PATH_MAX + 32], w2[PATH_MAX + 32];
	int ret, j;

	snprintf(who, sizeof(who), "member %d (%s)", i, path);
	ret = rf_dev_open(path, who, RF_DEV_DIRECT | RF_DEV_NOLOCK | (ro ? RF_DEV_RDONLY : 0), &d, err, errlen);
	if (ret)
		return ret;
	j = rf_same_file(a, i, &d.id);
	if (j >= 0) {
		snprintf(w2, sizeof(w2), "member %d (%s)", j, a->members[j].path);
		rf_dev_same_msg(err, errlen, w2, who, d.id.dev, d.id.ino);
		rf_dev_close(&d);
		return -EINVAL;
	}
	ret = rf_dev_lock(&d, ro, who, err, errlen);
	if (ret) {
		rf_dev_close(&d);
		return ret;
	}
	m->fd = d.fd;
	m->fd_direct = d.fd_direct;
	m->size = d.id.size;
	m->id = d.id;
	m->align = 4096;
	return 0;
}

static void array_free(struct rf_array *a)
{
	int i;

	rf_sbstate_close(a->sbstate);
	rf_bitmap_close(a->bitmap);
	rf_mgmt_free(a);
	for (i = 0; i < a->nmembers; i++)
		rf_ovl_close(a->iom[i].layer);
	for (i = 0; i < a->ndevs; i++) {
		if (a->members[i].fd >= 0)
			close(a->members[i].fd);
		if (a->members[i].fd_direct >= 0)
			close(a->members[i].fd_direct);
		rf_fault_free(a->members[i].fault);
		free(a->members[i].path);
		rf_dev_id_free(&a->members[i].id);
	}
	free(a->name);
	free(a);
}

/* Every write to the members goes to copy-on-write files in dir; the
 * overlay runs on the synchronous queue (its own locking, no O_DIRECT). */
static int overlay_open(struct rf_array *a, const char *dir, char *err, size_t errlen)
{
	int i, ret;

	for (i = 0; i < a->nmembers; i++) {
		struct rf_ovl *o;

		if (!(a->present & (1ull << i)))
			continue;
		ret = rf_ovl_open(dir, a->members[i].fd, a->members[i].path, &o, err, errlen);
		if (ret)
			return ret;
		a->iom[i].layer = o;
		a->iom[i].fd_direct = -1;
	}
	a->ioq_init = a->inline_ioq_init = rf_ioq_init_overlay;
	return 0;
}

int rf_array_open(const struct rf_config *cfg, struct rf_array **out, char *err, size_t errlen)
{
	struct rf_array *a = calloc(1, sizeof(*a));
	uint64_t usable = UINT64_MAX;
	int i, ret, nmissing = 0, smallest = -1;

	if (!a)
		return -ENOMEM;
	a->nmembers = a->ndevs = cfg->nmembers;
	for (i = 0; i < a->nmembers; i++) {
		a->members[i].fd = a->members[i].fd_direct = -1;
		a->members[i].prev_slot = -1;
	}
	a->name = strdup(cfg->name);
	a->readonly = cfg->readonly;
	a->overlay = cfg->overlay_dir != NULL;
	a->metadata = cfg->has_uuid ? cfg->metadata : 0;
	a->chunk_bytes = cfg->chunk_bytes;
	a->stripe_size = cfg->stripe_size ? cfg->stripe_size : 4096;
	a->rmw_level = cfg->rmw_level;
	a->stripe_cache_size = cfg->stripe_cache_size;
	a->group_thread_cnt = cfg->group_thread_cnt;
	a->worker_groups = cfg->worker_groups;
	a->ops = level_ops(cfg->level);
	a->ioq_init = rf_ioq_init_uring;
	a->inline_ioq_init = rf_ioq_init_sync;
	pthread_mutex_init(&a->start_lock, NULL);
	pthread_cond_init(&a->start_cond, NULL);
	pthread_mutex_init(&a->pool_lock, NULL);
	pthread_mutex_init(&a->reconf_lock, NULL);
	pthread_mutex_init(&a->bar_lock, NULL);
	pthread_cond_init(&a->bar_cond, NULL);
	a->held_tail = &a->held;
	rf_rangelock_init(&a->rl, range_resubmit, a);   /* default attributes: cannot fail */
	if (!a->ops) {
		snprintf(err, errlen, "%s: level %d is not supported", cfg->path, cfg->level);
		ret = -EINVAL;
		goto fail;
	}
	for (i = 0; i < a->nmembers; i++) {
		struct rf_member *m = &a->members[i];

		m->data_offset = cfg->member_offsets ? cfg->member_offset[i] : cfg->data_offset;
		if (!cfg->members[i]) {
			m->path = strdup("missing");
			m->flags = RF_DEV_MISSING | RF_DEV_FAULTY;
			a->faulty |= 1ull << i;
			nmissing++;
			continue;
		}
		m->path = strdup(cfg->members[i]);
		ret = open_member(a, i, cfg->members[i], err, errlen);
		if (ret)
			goto fail;
		a->present |= 1ull << i;
		m->flags = RF_DEV_IN_SYNC;
		if (m->size < m->data_offset + 2 * a->stripe_size) {
			snprintf(err, errlen, "member %d (%s): %llu bytes is too small for data_offset %llu",
				 i, m->path, (unsigned long long)m->size, (unsigned long long)m->data_offset);
			ret = -ENOSPC;
			goto fail;
		}
		if (m->size - m->data_offset < usable) {
			usable = m->size - m->data_offset;
			smallest = i;
		}
		/* raid0 with md superblocks: each member's own data size (md's
		 * zones when they differ). */
		if (cfg->level == 0 && cfg->member_offsets && !cfg->size)
			a->geom.r0_sectors[i] = (cfg->member_data[i] && cfg->member_data[i] < m->size - m->data_offset ?
						 cfg->member_data[i] : m->size - m->data_offset) / 512;
	}
	if (cfg->size) {
		for (i = 0; i < a->nmembers; i++) {
			struct rf_member *m = &a->members[i];

			if ((a->present & (1ull << i)) && m->size - m->data_offset < cfg->size) {
				snprintf(err, errlen, "member %d (%s): %llu bytes after data_offset, size needs %llu",
					 i, m->path, (unsigned long long)(m->size - m->data_offset),
					 (unsigned long long)cfg->size);
				ret = -ENOSPC;
				goto fail;
			}
		}
		usable = cfg->size;
	}
	a->geom.level = cfg->level;
	a->geom.layout = cfg->layout;
	a->geom.raid_disks = cfg->nmembers;
	a->geom.chunk_sectors = cfg->level == 1 ? 0 : cfg->chunk_bytes / 512;
	/* md keeps whole 4 KiB blocks (and whole chunks, which geom rounds to) */
	a->geom.dev_sectors = (usable & ~(uint64_t)(a->stripe_size - 1)) / 512;
	ret = rf_geom_init(&a->geom, err, errlen);
	if (ret) {
		char why[256];

		/* Say which member and sizes led there. */
		snprintf(why, sizeof(why), "%s", err);
		if (cfg->size || smallest < 0)
			snprintf(err, errlen, "%s: %s (size gives each member %llu bytes)", cfg->path, why,
				 (unsigned long long)usable);
		else
			snprintf(err, errlen, "%s: %s (the smallest, member %d (%s), holds %llu bytes after data_offset %llu)",
				 cfg->path, why, smallest, a->members[smallest].path, (unsigned long long)usable,
				 (unsigned long long)a->members[smallest].data_offset);
		goto fail;
	}
	if (nmissing > a->geom.max_degraded || a->ops->failed(a, a->faulty)) {
		snprintf(err, errlen, "%s: %d member(s) missing, level %d tolerates %d", cfg->path, nmissing,
			 cfg->level, a->geom.max_degraded);
		ret = -EINVAL;
		goto fail;
	}
	for (i = 0; i < cfg->nspares; i++) {
		struct rf_member *m = &a->members[a->ndevs];
		uint64_t doff = cfg->member_offsets ? cfg->spare_offset[i] : cfg->data_offset;
		uint64_t need = doff + a->geom.dev_sectors * 512;

		m->fd = m->fd_direct = -1;
		m->prev_slot = -1;
		m->data_offset = doff;
		m->flags = RF_DEV_SPARE;
		m->path = strdup(cfg->spares[i]);
		m->fault = rf_fault_new();
		a->ndevs++;
		if (!m->fault) {
			ret = -ENOMEM;
			goto fail;
		}
		ret = m->path ? open_member(a, a->ndevs - 1, cfg->spares[i], err, errlen) : -ENOMEM;
		if (ret)
			goto fail;
		if (m->size < need) {
			snprintf(err, errlen, "%s: spare %d (%s): %llu bytes is too small: the members use %llu",
				 cfg->path, i, m->path, (unsigned long long)m->size, (unsigned long long)need);
			ret = -ENOSPC;
			goto fail;
		}
	}
	if (a->chunk_bytes && a->chunk_bytes < a->stripe_size)
		a->stripe_size = a->chunk_bytes;
	a->size = a->geom.array_sectors * 512;
	for (i = 0; i < a->nmembers; i++) {
		a->iom[i].fd = a->members[i].fd;
		a->iom[i].fd_direct = a->members[i].fd_direct;
		a->iom[i].align = a->members[i].align;
		ret = rf_fault_from_config(cfg, i, &a->members[i].fault);
		if (ret)
			goto fail;
		a->iom[i].fault = a->members[i].fault;
	}
	if (cfg->overlay_dir) {
		ret = overlay_open(a, cfg->overlay_dir, err, errlen);
		if (ret)
			goto fail;
	}
	/* md keeps clean/dirty for arrays that can need a resync. */
	if (cfg->has_uuid && !a->readonly && cfg->level != 0) {
		ret = rf_sbstate_open(a, &a->sbstate, err, errlen);
		if (!ret)
			ret = rf_bitmap_open(a, a->sbstate, &a->bitmap, err, errlen);
		if (ret)
			goto fail;
	}
	*out = a;
	return 0;
fail:
	array_free(a);
	return ret;
}

bool rf_array_readonly(const struct rf_array *a)
{
	return a->readonly;
}

static int group_init(struct rf_array *a, struct rf_group *g, int id, int nstripes, int nworkers)
{
	size_t blk = a->stripe_size, nd = a->nmembers;
	size_t per = nd * blk;
	int i, j;

	pthread_mutex_init(&g->lock, NULL);
	g->a = a;
	g->id = id;
	g->incoming_tail = &g->incoming;
	g->deferred_tail = &g->deferred;
	g->nworkers = nworkers;
	g->workers = calloc(nworkers ? nworkers : 1, sizeof(*g->workers));
	if (!g->workers)
		return -ENOMEM;
	for (i = 0; i < nworkers; i++) {
		g->workers[i].g = g;
		if (worker_buffers(a, &g->workers[i]))
			return -ENOMEM;
	}
	if (!a->ops->handle_stripe)
		return 0;
	g->nstripes = nstripes;
	for (g->hash_mask = 1; g->hash_mask < (uint32_t)nstripes; g->hash_mask <<= 1)
		;
	g->hash = calloc(g->hash_mask, sizeof(*g->hash));
	g->hash_mask--;
	g->stripes = calloc(nstripes, sizeof(*g->stripes));
	if (!g->hash || !g->stripes)
		return -ENOMEM;
	/* Blocks are touched lazily: untouched heads cost address space only.
	 * A mapping of its own goes back to the system whole when the cache
	 * is resized (the heap would keep it). */
	g->stripe_mem_len = per * nstripes;
	g->stripe_mem = mmap(NULL, g->stripe_mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g->stripe_mem == MAP_FAILED) {
		g->stripe_mem = NULL;
		return -ENOMEM;
	}
	for (i = 0; i < nstripes; i++) {
		struct rf_stripe *sh = &g->stripes[i];

		sh->g = g;
		sh->toread_tail = &sh->toread;
		sh->towrite_tail = &sh->towrite;
		sh->mio = calloc(nd, sizeof(*sh->mio));
		sh->buf = calloc(nd, sizeof(*sh->buf));
		if (!sh->mio || !sh->buf)
			return -ENOMEM;
		for (j = 0; j < (int)nd; j++)
			sh->buf[j] = g->stripe_mem + (size_t)i * per + (size_t)j * blk;
		lru_add_tail(g, sh);
	}
	return 0;
}

/* Free groups[0..n) (their threads stopped or never started). */
static void groups_free(struct rf_array *a, struct rf_group *groups, int n)
{
	int i, j;

	for (i = 0; groups && i < n; i++) {
		struct rf_group *g = &groups[i];

		for (j = 0; g->workers && j < g->nworkers; j++) {
			if (g->workers[j].started && !g->workers[j].ioq_ret)
				rf_ioq_destroy(&g->workers[j].ioq);
			free(g->workers[j].scratch);
		}
		for (j = 0; g->stripes && j < g->nstripes; j++) {
			free(g->stripes[j].mio);
			free(g->stripes[j].buf);
		}
		free(g->workers);
		free(g->stripes);
		if (g->stripe_mem)
			munmap(g->stripe_mem, g->stripe_mem_len);
		free(g->hash);
		if (g->a)
			pthread_mutex_destroy(&g->lock);
	}
	free(groups);
}

static int ngroups_for(int worker_groups)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int n = worker_groups > 0 ? worker_groups : ncpu > 0 ? (int)ncpu : 1;

	return n > RF_MAX_GROUPS ? RF_MAX_GROUPS : n;
}

/* Allocate groups for this shape; nothing is started and a->groups is not
 * touched, so a failure leaves the array as it was. */
static int groups_alloc(struct rf_array *a, int ngroups, int nthreads, int cache, struct rf_group **out)
{
	struct rf_group *groups = calloc(ngroups, sizeof(*groups));
	int i, ret = 0, per = cache / ngroups;

	if (!groups)
		return -ENOMEM;
	if (per < 16)
		per = 16;
	for (i = 0; i < ngroups && !ret; i++)
		ret = group_init(a, &groups[i], i, per, nthreads);
	if (ret) {
		groups_free(a, groups, ngroups);
		return ret;
	}
	*out = groups;
	return 0;
}

/* Start the threads of groups[0..n) and wait until each has its ring. */
static int groups_start(struct rf_array *a, struct rf_group *groups, int n)
{
	int i, j, ret = 0, nthreads = 0;

	pthread_mutex_lock(&a->start_lock);
	a->nready = a->nstart_err = 0;
	pthread_mutex_unlock(&a->start_lock);
	for (i = 0; i < n && !ret; i++) {
		struct rf_group *g = &groups[i];

		for (j = 0; j < g->nworkers && !ret; j++) {
			ret = -pthread_create(&g->workers[j].thread, NULL, worker_main, &g->workers[j]);
			if (!ret) {
				g->workers[j].started = true;
				nthreads++;
			}
		}
	}
	pthread_mutex_lock(&a->start_lock);
	while (a->nready < nthreads)
		pthread_cond_wait(&a->start_cond, &a->start_lock);
	if (!ret && a->nstart_err)
		ret = -EIO;
	pthread_mutex_unlock(&a->start_lock);
	return ret;
}

/* Stop and join the group threads (nothing may be in flight). */
/* Stop and join the threads of groups[0..n) (nothing queued to them). */
static void groups_stop(struct rf_group *groups, int n)
{
	int i, j;

	for (i = 0; groups && i < n; i++) {
		struct rf_group *g = &groups[i];
		struct rf_worker *w, *idle;

		/* Workers check g->stop under g->lock before they sleep; wake
		 * the ones already asleep. */
		pthread_mutex_lock(&g->lock);
		g->stop = true;
		idle = g->idle;
		g->idle = NULL;
		for (w = idle; w; w = w->idle_next)
			w->idle = false;
		pthread_mutex_unlock(&g->lock);
		for (w = idle; w; w = w->idle_next)
			rf_ioq_kick(&w->ioq);
	}
	for (i = 0; groups && i < n; i++)
		for (j = 0; j < groups[i].nworkers; j++)
			if (groups[i].workers[j].started)
				pthread_join(groups[i].workers[j].thread, NULL);
}

int rf_array_start(struct rf_array *a)
{
	int ret;

	a->ngroups = ngroups_for(a->worker_groups);
	ret = rf_sync_init(a);
	if (ret)
		return ret;
	ret = groups_alloc(a, a->ngroups, a->group_thread_cnt, a->stripe_cache_size, &a->groups);
	if (ret)
		return ret;
	a->started = true;
	ret = groups_start(a, a->groups, a->ngroups);
	if (!ret)
		ret = rf_sbstate_start(a->sbstate);
	if (!ret)
		ret = rf_bitmap_start(a->bitmap);
	return ret ? ret : rf_mgmt_start(a);
}

void rf_array_close(struct rf_array *a)
{
	int i;

	if (!a)
		return;
	/* No spare takes a slot from now on; the sync thread finishes its
	 * region and leaves. */
	rf_mgmt_stop(a);
	rf_sync_free(a);
	/* The idle timer drains too: stop it first.  The state is marked
	 * clean once nothing is in flight (array_free()). */
	rf_sbstate_stop(a->sbstate);
	rf_bitmap_stop(a->bitmap);
	if (a->started) {
		/* Whatever waits at the barrier still runs, then nothing may
		 * start: every request has ended when the groups go. */
		pthread_mutex_lock(&a->reconf_lock);
		a->suspended = false;
		release(a, 0);
		drain(a, RF_HOLD_ALL);
		pthread_mutex_unlock(&a->reconf_lock);
	}
	groups_stop(a->groups, a->ngroups);
	groups_free(a, a->groups, a->ngroups);
	a->groups = NULL;
	inline_free_all(a);
	for (i = 0; i < a->nmembers; i++)
		if (a->members[i].fd >= 0)
			fsync(a->members[i].fd);
	array_free(a);
}

/* ---- runtime control ---- */

enum reshape_what { RESHAPE_CACHE, RESHAPE_THREADS, RESHAPE_GROUPS };

/* Rebuild the groups with one tunable changed.  The new groups are made
 * and their threads started first; the drain covers only the swap, so
 * held requests wait for in-flight ones to end and nothing else.  On
 * failure nothing changes. */
static int reshape(struct rf_array *a, enum reshape_what what, int value)
{
	struct rf_group *groups, *old;
	int ngroups, oldn, ret, wg, nthreads, cache;
	bool shrink;

	pthread_mutex_lock(&a->reconf_lock);
	wg = what == RESHAPE_GROUPS ? value : a->worker_groups;
	nthreads = what == RESHAPE_THREADS ? value : a->group_thread_cnt;
	cache = what == RESHAPE_CACHE ? value : a->stripe_cache_size;
	ngroups = ngroups_for(wg);
	if (ngroups * nthreads > rf_max_worker_threads()) {
		rf_warn("%s: %d group(s) of %d thread(s) would be %d worker threads: the bound is %d (4 per CPU, at "
			"least 8, at most 256; more threads than cores only add context switches)",
			a->name, ngroups, nthreads, ngroups * nthreads, rf_max_worker_threads());
		ret = -EINVAL;
		goto out;
	}
	ret = groups_alloc(a, ngroups, nthreads, cache, &groups);
	if (ret) {
		rf_err("%s: no memory for %d group(s) with %d stripe heads: %s", a->name, ngroups, cache,
		       strerror(-ret));
		goto out;
	}
	ret = groups_start(a, groups, ngroups);
	if (ret) {
		rf_err("%s: starting %d group thread(s) failed: %s", a->name, nthreads, strerror(-ret));
		groups_stop(groups, ngroups);
		groups_free(a, groups, ngroups);
		goto out;
	}
	/* Fewer threads or stripe heads (groups_alloc: at least 16 a group)
	 * than the old groups had: memory to give back below. */
	shrink = ngroups * nthreads < a->ngroups * a->group_thread_cnt ||
		 ngroups * (cache / ngroups < 16 ? 16 : cache / ngroups) <
			 a->ngroups * (a->stripe_cache_size / a->ngroups < 16 ? 16 : a->stripe_cache_size / a->ngroups);
	drain(a, RF_HOLD_ALL);
	old = a->groups;
	oldn = a->ngroups;
	a->groups = groups;
	a->ngroups = ngroups;
	a->worker_groups = wg;
	a->group_thread_cnt = nthreads;
	a->stripe_cache_size = cache;
	release(a, a->suspended ? RF_HOLD_WRITES : 0);
	/* Drained: nothing was left on the old groups, nothing reaches them. */
	groups_stop(old, oldn);
	groups_free(a, old, oldn);
	/* The old groups' stripe memory went back with munmap; after a
	 * shrink, what their threads and heads took from the heap (every
	 * thread's arena) goes back too, or the peak would stay resident.
	 * (About 0.2 ms; a grow has nothing to give back.) */
	if (shrink)
		malloc_trim(0);
out:
	pthread_mutex_unlock(&a->reconf_lock);
	return ret;
}

int rf_array_set_stripe_cache_size(struct rf_array *a, int n)
{
	if (n < 17 || n > 32768)
		return -EINVAL;
	return reshape(a, RESHAPE_CACHE, n);
}

int rf_array_set_group_thread_cnt(struct rf_array *a, int n)
{
	if (n < 0 || n > RF_MAX_GROUP_THREADS)
		return -EINVAL;
	return reshape(a, RESHAPE_THREADS, n);
}

int rf_array_set_worker_groups(struct rf_array *a, int n)
{
	if (n < 1 || n > RF_MAX_GROUPS)
		return -EINVAL;
	return reshape(a, RESHAPE_GROUPS, n);
}

int rf_array_set_rmw_level(struct rf_array *a, int n)
{
	if (n < 0 || n > 2)
		return -EINVAL;
	/* Stripe rounds read it while they plan: change it between rounds. */
	pthread_mutex_lock(&a->reconf_lock);
	drain(a, RF_HOLD_WRITES);
	a->rmw_level = n;
	release(a, a->suspended ? RF_HOLD_WRITES : 0);
	pthread_mutex_unlock(&a->reconf_lock);
	return 0;
}

static int quiesced(struct rf_array *a, unsigned bits, int (*fn)(void *arg), void *arg)
{
	int ret;

	pthread_mutex_lock(&a->reconf_lock);
	drain(a, bits);
	ret = fn(arg);
	release(a, a->suspended ? RF_HOLD_WRITES : 0);
	pthread_mutex_unlock(&a->reconf_lock);
	return ret;
}

int rf_array_quiesced(struct rf_array *a, int (*fn)(void *arg), void *arg)
{
	return quiesced(a, RF_HOLD_WRITES, fn, arg);
}

int rf_array_quiesced_all(struct rf_array *a, int (*fn)(void *arg), void *arg)
{
	return quiesced(a, RF_HOLD_ALL, fn, arg);
}

int rf_array_suspend(struct rf_array *a)
{
	pthread_mutex_lock(&a->reconf_lock);
	if (!a->suspended) {
		drain(a, RF_HOLD_WRITES);
		a->suspended = true;
		rf_info("%s: suspended: writes wait until array_state is set to active", a->name);
	}
	pthread_mutex_unlock(&a->reconf_lock);
	return 0;
}

int rf_array_resume(struct rf_array *a)
{
	pthread_mutex_lock(&a->reconf_lock);
	if (a->suspended) {
		a->suspended = false;
		release(a, 0);
		rf_info("%s: active again", a->name);
	}
	pthread_mutex_unlock(&a->reconf_lock);
	return 0;
}

void rf_writes_hold(struct rf_array *a)
{
	pthread_mutex_lock(&a->reconf_lock);
	drain(a, RF_HOLD_WRITES);
}

void rf_writes_release(struct rf_array *a)
{
	release(a, a->suspended ? RF_HOLD_WRITES : 0);
	pthread_mutex_unlock(&a->reconf_lock);
}

void rf_sync_rows_forget(struct rf_array *a, uint64_t lo, uint64_t hi)
{
	/* The groups stay while reconf_lock is held; no drain waits for a
	 * region (range_enter()), so taking it here cannot deadlock. */
	pthread_mutex_lock(&a->reconf_lock);
	rf_stripe_cache_forget(a, lo, hi);
	pthread_mutex_unlock(&a->reconf_lock);
}

void rf_stripe_cache_forget(struct rf_array *a, uint64_t lo, uint64_t hi)
{
	int i, j;

	for (i = 0; a->ops->handle_stripe && i < a->ngroups; i++) {
		struct rf_group *g = &a->groups[i];

		pthread_mutex_lock(&g->lock);
		for (j = 0; j < g->nstripes; j++) {
			struct rf_stripe *sh = &g->stripes[j];

			if (!sh->hashed || sh->sector < lo || sh->sector >= hi)
				continue;
			/* With writes drained, or the rows locked against
			 * them, a busy head is only finishing the round that
			 * ended its last write, or serving a read. */
			while (sh->busy) {
				pthread_mutex_unlock(&g->lock);
				sched_yield();
				pthread_mutex_lock(&g->lock);
			}
			/* An idle head on the LRU may go: a lookup recycles
			 * another one and reads from the members again. */
			if (sh->on_lru && sh->hashed && sh->sector >= lo && sh->sector < hi)
				unhash(g, sh);
		}
		pthread_mutex_unlock(&g->lock);
	}
}

void rf_array_get_info(struct rf_array *a, struct rf_array_info *out)
{
	uint64_t f = rf_faulty(a);
	int i;

	memset(out, 0, sizeof(*out));
	out->level = a->geom.level;
	out->layout = a->geom.layout;
	out->raid_disks = a->geom.raid_disks;
	out->chunk_bytes = a->geom.chunk_sectors * 512;
	out->component_size = a->geom.dev_sectors * 512;
	out->array_size = a->size;
	out->faulty = f;
	out->recovering = atomic_load(&a->recovering) & ~f;
	out->degraded = __builtin_popcountll(f | out->recovering);
	out->metadata = a->metadata;
	out->failed = f && a->ops->failed(a, f);
	out->writes_in_flight = atomic_load(&a->inflight[1]) > 0;
	out->sb_dirty = a->sbstate && atomic_load(&a->sbstate->mode) != RF_SBS_CLEAN;
	rf_bitmap_pages(a->bitmap, &out->bitmap_chunk, &out->bitmap_pages, &out->bitmap_pages_used);
	/* The shape is stable while reconf_lock is held. */
	pthread_mutex_lock(&a->reconf_lock);
	out->stripe_cache_size = a->stripe_cache_size;
	out->group_thread_cnt = a->group_thread_cnt;
	out->worker_groups = a->ngroups;
	out->rmw_level = a->rmw_level;
	out->suspended = a->suspended;
	for (i = 0; a->ops->handle_stripe && a->groups && i < a->ngroups; i++) {
		struct rf_group *g = &a->groups[i];

		pthread_mutex_lock(&g->lock);
		out->stripe_cache_active += g->nstripes - g->nlru;
		pthread_mutex_unlock(&g->lock);
		out->stripe_cache_bytes += (uint64_t)g->nstripes * a->nmembers * a->stripe_size;
	}
	pthread_mutex_unlock(&a->reconf_lock);
}

const char *rf_array_member_path(const struct rf_array *a, int i)
{
	return i >= 0 && i < a->nmembers ? a->members[i].path : NULL;
}

void rf_array_set_ioq_init(struct rf_array *a, rf_ioq_init_fn fn)
{
	a->ioq_init = fn;
	a->inline_ioq_init = fn;
}

uint64_t rf_array_size(const struct rf_array *a) { return a->size; }
const struct rf_geom *rf_array_geom(const struct rf_array *a) { return &a->geom; }
const char *rf_array_name(const struct rf_array *a) { return a->name; }
uint64_t rf_array_faulty(const struct rf_array *a) { return rf_faulty(a); }
bool rf_array_failed(const struct rf_array *a) { return rf_failed_now(a); }
