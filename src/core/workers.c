/* SPDX-License-Identifier: GPL-2.0-or-later */
/* workers.c - worker groups, their threads, and inline workers.
 *
 * A worker loops: take g->incoming and g->handle lists, issue DIRECT
 * pieces on its own ring, attach STRIPE pieces to stripe heads, run the
 * heads it took, submit, reap completions (which run pieces' ends and
 * stripe state machines), and sleeps in its ring when there is nothing to
 * do.  With group_thread_cnt 0 the groups have no threads: a submitter
 * borrows an inline worker from the array's pool and does the work itself.
 *
 * Locks: g->lock (innermost) for a group's lists; pool_lock for the
 * inline pool; start_lock for start-up reports.  A worker's ring is its
 * own thread's only.  The groups are made and freed here; they are
 * swapped only with every request drained (array.c reshape).
 *
 * What it does NOT do: decide the cache's size or the thread count
 * (array.c), or hold requests (barrier.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/engine.h"
#include "raidfuse/lockcheck.h"
#include "raidfuse/util.h"

__thread struct rf_worker *rf_current_worker;

#define RF_RING_DEPTH 256
#define HANDLE_BATCH 64          /* stripe heads a worker takes per pass */

/* ---- limits ---- */

int rf_max_worker_threads(void)
{
	long n = 4 * sysconf(_SC_NPROCESSORS_ONLN);

	if (n < RF_MIN_WORKER_THREADS)
		return RF_MIN_WORKER_THREADS;
	return n > RF_MAX_WORKER_THREADS ? RF_MAX_WORKER_THREADS : (int)n;
}

/* ---- workers ---- */

#define SEEN_SLOTS 32

/* g->lock held: take every piece off q, attach its STRIPE pieces to their
 * heads (or to g->deferred when no head is free) and append its DIRECT
 * pieces, in order, to *direct for the caller to issue.  Taking
 * g->incoming and attaching its pieces in one critical section keeps the
 * order of writes to one head: no other worker can attach later pieces in
 * between. */
static void attach_locked(struct rf_group *g, struct rf_piece_q *q, struct rf_piece_q *direct)
{
	struct rf_stripe *seen[SEEN_SLOTS] = { NULL };
	struct rf_piece *p;

	/* One hash lookup per head: a request's pieces of one head (its data
	 * columns) find the head again here.  A head found in this round
	 * cannot be recycled before the lock is dropped: it is off the LRU. */
	while ((p = STAILQ_FIRST(q))) {
		struct rf_stripe **slot, *sh;

		STAILQ_REMOVE_HEAD(q, link);
		if (p->kind != RF_PIECE_STRIPE) {
			STAILQ_INSERT_TAIL(direct, p, link);
			continue;
		}
		slot = &seen[(p->key ^ p->key >> 5) % SEEN_SLOTS];
		sh = *slot && (*slot)->sector == p->key ? *slot : NULL;
		sh = rf_stripe_attach(g, sh, p);
		if (sh) {
			*slot = sh;
		} else {
			STAILQ_INSERT_TAIL(&g->deferred, p, link);
			/* An inline submitter passes the group again (held
			 * heads may have to go for it). */
			rf_note_group(g);
		}
	}
}

/* Issue q's DIRECT pieces on w, in order; q is left empty. */
static void issue_direct(struct rf_worker *w, struct rf_piece_q *q)
{
	struct rf_piece *p;

	while ((p = STAILQ_FIRST(q))) {
		STAILQ_REMOVE_HEAD(q, link);
		rf_direct_issue(w, p);
	}
}

/* Attach q's STRIPE pieces to their heads in g (waiting on g->deferred
 * when no head is free), then issue its DIRECT pieces on w; q is left
 * empty. */
void rf_run_pieces(struct rf_worker *w, struct rf_group *g, struct rf_piece_q *q)
{
	struct rf_piece_q direct = STAILQ_HEAD_INITIALIZER(direct);

	pthread_mutex_lock(&g->lock);
	attach_locked(g, q, &direct);
	pthread_mutex_unlock(&g->lock);
	issue_direct(w, &direct);
}

/* One pass of w over g: take the incoming pieces, then a batch of heads
 * (their IO goes out in one submit) and run them.  Returns how many things
 * it took. */
static int group_pass(struct rf_worker *w, struct rf_group *g, bool *stop)
{
	struct rf_stripe *batch[HANDLE_BATCH];
	struct rf_piece_q direct = STAILQ_HEAD_INITIALIZER(direct);
	bool took_in;
	int i, nsh = 0;

	pthread_mutex_lock(&g->lock);
	took_in = !STAILQ_EMPTY(&g->incoming);
	if (stop)
		*stop = g->stop;
	attach_locked(g, &g->incoming, &direct);
	pthread_mutex_unlock(&g->lock);
	issue_direct(w, &direct);

	pthread_mutex_lock(&g->lock);
	rf_delayed_check_locked(g);
	while (!STAILQ_EMPTY(&g->handle) && nsh < HANDLE_BATCH) {
		struct rf_stripe *sh = STAILQ_FIRST(&g->handle);

		STAILQ_REMOVE_HEAD(&g->handle, handle);
		sh->busy = true;
		sh->on_handle = false;
		batch[nsh++] = sh;
	}
	pthread_mutex_unlock(&g->lock);
	for (i = 0; i < nsh; i++)
		w->a->ops->handle_stripe(w, batch[i]);
	return took_in + nsh;
}

/* g->lock held: w sleeps from now on / no longer (whether or not a
 * waker took it off g->idle meanwhile). */
static void idle_add(struct rf_group *g, struct rf_worker *w)
{
	w->idle = true;
	w->idle_next = g->idle;
	g->idle = w;
}

static void idle_del(struct rf_group *g, struct rf_worker *w)
{
	struct rf_worker **pp = &g->idle;

	if (!w->idle)
		return;
	while (*pp != w)
		pp = &(*pp)->idle_next;
	*pp = w->idle_next;
	w->idle = false;
}

void rf_worker_wake(struct rf_worker *w)
{
	/* Whichever way it sleeps; cond is waited on with g->lock and the
	 * waker took w off g->idle under it first. */
	if (w->cond_ok)
		pthread_cond_signal(&w->cond);
	rf_ioq_kick(&w->ioq);
}

/* g->lock held, heads held (stripe_cache.c, delayed heads) and nothing
 * else to do.  With IO of w's own in flight, sleep in the ring as usual;
 * else, with other writes in flight that may fill them, wait on w->cond
 * until the oldest one's bound, a piece or a stop; else release them all.  Returns true (g->lock
 * dropped) when w should go round again, false (g->lock held) when it may
 * sleep in its ring. */
static bool held_wait(struct rf_worker *w, struct rf_group *g)
{
	struct rf_array *a = g->a;

	/* IO of w's own in flight: its end wakes w, which looks again. */
	if (!STAILQ_EMPTY(&g->incoming) || !STAILQ_EMPTY(&g->handle) || (!g->stop && rf_ioq_busy(&w->ioq)))
		return false;
	if (w->cond_ok && !g->stop && atomic_load(&a->inflight[1]) > 1) {
		uint64_t until = TAILQ_FIRST(&g->delayed)->delay_ns + rf_delay_bound_ns;
		struct timespec ts = { .tv_sec = (time_t)(until / 1000000000ull),
				       .tv_nsec = (long)(until % 1000000000ull) };

		idle_add(g, w);
		while (w->idle && !g->stop && rf_now_ns() < until)
			if (pthread_cond_timedwait(&w->cond, &g->lock, &ts))
				break;
		idle_del(g, w);
		pthread_mutex_unlock(&g->lock);
		return true;
	}
	rf_delayed_release_locked(g, UINT64_MAX);
	pthread_mutex_unlock(&g->lock);
	return true;
}

static void *worker_main(void *arg)
{
	struct rf_worker *w = arg;
	struct rf_group *g = w->g;
	struct rf_array *a = g->a;

	rf_current_worker = w;
	rf_thread_name("rf-g%d.%d", g->id, (int)(w - g->workers));
	w->ioq_ret = a->ioq_init(&w->ioq, rf_devs_ioq(a), RF_RING_DEPTH);
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
		if (took || n > 0 || rf_ioq_stalled(&w->ioq))
			continue;
		if (stop && !rf_ioq_busy(&w->ioq))
			break;

		/* Nothing to do: sleep in the ring unless work arrived since the
		 * check above (the submitter takes us off g->idle under the lock
		 * it queued with, then kicks). */
		pthread_mutex_lock(&g->lock);
		if (!TAILQ_EMPTY(&g->delayed) && held_wait(w, g))
			continue;       /* g->lock dropped */
		if (!STAILQ_EMPTY(&g->incoming) || !STAILQ_EMPTY(&g->handle) || g->stop) {
			pthread_mutex_unlock(&g->lock);
			if (!g->stop)
				continue;
			if (!rf_ioq_busy(&w->ioq))
				break;
		} else {
			idle_add(g, w);
			pthread_mutex_unlock(&g->lock);
		}
		rf_ioq_reap(&w->ioq, true);
		pthread_mutex_lock(&g->lock);
		idle_del(g, w);
		pthread_mutex_unlock(&g->lock);
	}
	/* The ring outlives the thread: rf_array_close() may still kick it. */
	return NULL;
}

static int rf_worker_buffers(struct rf_array *a, struct rf_worker *w)
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
struct rf_worker *rf_inline_get(struct rf_array *a)
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
	if (rf_worker_buffers(a, w) || a->inline_ioq_init(&w->ioq, rf_devs_ioq(a), RF_RING_DEPTH)) {
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

void rf_inline_put(struct rf_array *a, struct rf_worker *w)
{
	pthread_mutex_lock(&a->pool_lock);
	w->pool_next = a->pool;
	a->pool = w;
	pthread_mutex_unlock(&a->pool_lock);
}

void rf_inline_drive(struct rf_worker *w)
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
		if (took || n > 0 || w->touched || rf_ioq_stalled(&w->ioq))
			continue;
		if (rf_ioq_busy(&w->ioq)) {
			rf_ioq_reap(&w->ioq, true);
			continue;
		}
		/* Leaving.  Heads held while others were driving wait for the
		 * ones still here; the last one out runs them itself (it takes
		 * its place again to do so).  A hold happens only while its
		 * holder is counted, and each holder's leave comes after its
		 * hold, so some leave that reaches 0 sees every head held. */
		if (atomic_fetch_sub(&a->drivers, 1) == 1 && a->ops->handle_stripe) {
			atomic_fetch_add(&a->drivers, 1);
			if (rf_delayed_release_all(a))
				continue;
			atomic_fetch_sub(&a->drivers, 1);
		}
		break;
	}
}

void rf_inline_free_all(struct rf_array *a)
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

static int rf_group_init(struct rf_array *a, struct rf_group *g, int id, int nstripes, int nworkers, int cols)
{
	size_t blk = a->stripe_size, nd = (size_t)cols;
	size_t per = nd * blk;
	int i, j;

	pthread_mutex_init(&g->lock, NULL);
	rf_lock_rank(&g->lock, RF_LOCK_LEAF, "group lock");
	g->a = a;
	g->id = id;
	STAILQ_INIT(&g->incoming);
	STAILQ_INIT(&g->deferred);
	STAILQ_INIT(&g->handle);
	TAILQ_INIT(&g->lru);
	TAILQ_INIT(&g->delayed);
	g->nworkers = nworkers;
	g->workers = calloc(nworkers ? nworkers : 1, sizeof(*g->workers));
	if (!g->workers)
		return -ENOMEM;
	for (i = 0; i < nworkers; i++) {
		struct rf_worker *w = &g->workers[i];
		pthread_condattr_t ca;

		w->g = g;
		if (rf_worker_buffers(a, w))
			return -ENOMEM;
		if (pthread_condattr_init(&ca))
			return -ENOMEM;
		w->cond_ok = !pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) && !pthread_cond_init(&w->cond, &ca);
		pthread_condattr_destroy(&ca);
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
		STAILQ_INIT(&sh->toread);
		STAILQ_INIT(&sh->towrite);
		STAILQ_INIT(&sh->reading);
		STAILQ_INIT(&sh->writing);
		sh->mio = calloc(nd, sizeof(*sh->mio));
		sh->buf = calloc(nd, sizeof(*sh->buf));
		sh->wsrc = calloc(nd, sizeof(*sh->wsrc));
		if (!sh->mio || !sh->buf || !sh->wsrc)
			return -ENOMEM;
		for (j = 0; j < (int)nd; j++)
			sh->buf[j] = g->stripe_mem + (size_t)i * per + (size_t)j * blk;
		rf_lru_add_tail(g, sh);
	}
	return 0;
}

/* Free groups[0..n) (their threads stopped or never started). */
void rf_groups_free(struct rf_array *a, struct rf_group *groups, int n)
{
	int i, j;

	for (i = 0; groups && i < n; i++) {
		struct rf_group *g = &groups[i];

		for (j = 0; g->workers && j < g->nworkers; j++) {
			if (g->workers[j].started && !g->workers[j].ioq_ret)
				rf_ioq_destroy(&g->workers[j].ioq);
			free(g->workers[j].scratch);
			if (g->workers[j].cond_ok)
				pthread_cond_destroy(&g->workers[j].cond);
		}
		for (j = 0; g->stripes && j < g->nstripes; j++) {
			free(g->stripes[j].mio);
			free(g->stripes[j].buf);
			free(g->stripes[j].wsrc);
			if (g->stripes[j].log)
				free(g->stripes[j].log->pp);
			free(g->stripes[j].log);
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

int rf_ngroups_for(int worker_groups)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int n = worker_groups > 0 ? worker_groups : ncpu > 0 ? (int)ncpu : 1;

	return n > RF_MAX_GROUPS ? RF_MAX_GROUPS : n;
}

/* Allocate groups for this shape; nothing is started and a->groups is not
 * touched, so a failure leaves the array as it was. */
int rf_groups_alloc(struct rf_array *a, int ngroups, int nthreads, int cache, int cols, struct rf_group **out)
{
	struct rf_group *groups = calloc(ngroups, sizeof(*groups));
	int i, ret = 0, per = cache / ngroups;

	if (!groups)
		return -ENOMEM;
	if (per < 16)
		per = 16;
	for (i = 0; i < ngroups && !ret; i++)
		ret = rf_group_init(a, &groups[i], i, per, nthreads, cols);
	if (ret) {
		rf_groups_free(a, groups, ngroups);
		return ret;
	}
	*out = groups;
	return 0;
}

/* Start the threads of groups[0..n) and wait until each has its ring. */
int rf_groups_start(struct rf_array *a, struct rf_group *groups, int n)
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

/* Stop and join the threads of groups[0..n) (nothing queued to them). */
void rf_groups_stop(struct rf_group *groups, int n)
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
			rf_worker_wake(w);
	}
	for (i = 0; groups && i < n; i++)
		for (j = 0; j < groups[i].nworkers; j++)
			if (groups[i].workers[j].started)
				pthread_join(groups[i].workers[j].thread, NULL);
}

