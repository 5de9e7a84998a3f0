/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_workers.c - worker groups, their threads and inline workers
 * (core/workers.c), seen from the requests and the member IO they make.
 *
 * Every member IO is watched as the worker issues it (the fake backend
 * wrapped): which worker issued it (rf_current_worker: a group's thread,
 * or an inline worker on the submitting thread), and how many bytes.
 *  - hand-off: with group threads, a raid5's member IO is issued by
 *    threads of the group its stripe head hashes to, never by the
 *    submitter, and the submitter returns while that IO is still held;
 *    with group_thread_cnt 0, by an inline worker on the submitter's own
 *    thread, the request ended when rf_req_submit() returns;
 *  - exactly once under reshapes: submitters on several threads keep
 *    requests in flight (reads and writes, each thread in its own slots
 *    of the array) while another thread changes group_thread_cnt,
 *    worker_groups and stripe_cache_size at random; every request's
 *    done() runs exactly once (none lost, none twice), the array reads
 *    back what was written, and on a raid1 the member bytes written and
 *    read are exactly the requests' (a write lost or issued twice would
 *    show), on a raid5 the parity of every row is right.
 * Negative controls: the hand-off checks fail on the other mode's log
 * and on a wrong group; a request submitted twice on purpose is counted
 * twice and its bytes show in the member accounting.
 *
 * Seed: RF_TEST_SEED (printed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/engine.h"
#include "fake_ioq.h"
#include "fixture.h"
#include "testreq.h"

#define MEMBER_BYTES (1u << 20)
#define CHUNK 16384u

/* ---- the watched backend ---- */

struct seen_io {
	uint64_t off;
	int member, op, group;          /* group -1: an inline worker */
	bool on_submitter;
};

#define SEEN_MAX 8192
static struct seen_io seen[SEEN_MAX];
static atomic_int nseen;
static pthread_t submitter;
static atomic_uint_fast64_t bytes_w, bytes_r;
static const struct rf_ioq_backend *inner;
static struct rf_ioq_backend watched;
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;

static void note(struct rf_mio *m, uint64_t off, uint64_t len)
{
	struct rf_worker *w = rf_current_worker;
	int i = atomic_fetch_add(&nseen, 1);

	if (m->op == RF_MIO_WRITE)
		atomic_fetch_add(&bytes_w, len);
	else if (m->op == RF_MIO_READ)
		atomic_fetch_add(&bytes_r, len);
	if (i >= SEEN_MAX)
		return;
	seen[i] = (struct seen_io){ off, m->member, m->op, w && w->g ? w->g->id : -1,
				    pthread_equal(pthread_self(), submitter) != 0 };
}

static int w_prep(struct rf_ioq *q, struct rf_mio *m, int fd, char *buf, uint32_t len, uint64_t off)
{
	int ret = inner->prep(q, m, fd, buf, len, off);

	if (!ret)
		note(m, off, len);
	return ret;
}

static int w_prepv(struct rf_ioq *q, struct rf_mio *m, int fd, const struct iovec *iov, int niov, uint64_t off)
{
	int ret = inner->prepv(q, m, fd, iov, niov, off);
	uint64_t len = 0;

	for (int i = 0; !ret && i < niov; i++)
		len += iov[i].iov_len;
	if (!ret)
		note(m, off, len);
	return ret;
}

static int watch_init(struct rf_ioq *q, struct rf_ioq_devs devs, unsigned depth)
{
	int r = fake_ioq_init(q, devs, depth);

	if (r)
		return r;
	pthread_mutex_lock(&watch_lock);
	if (!inner) {
		inner = q->be;
		watched = *inner;
		watched.prep = w_prep;
		watched.prepv = w_prepv;
	}
	pthread_mutex_unlock(&watch_lock);
	q->be = &watched;
	return 0;
}

static void watch_reset(void)
{
	fake_reset();
	atomic_store(&nseen, 0);
	atomic_store(&bytes_w, 0);
	atomic_store(&bytes_r, 0);
	submitter = pthread_self();
}

static struct rf_array *open_level(const char *what, int level, int gtc)
{
	const struct fx_array fa = { .what = what, .level = level, .layout = level == 5 ? 2 : 0,
				     .n = level == 5 ? 4 : 2, .chunk = level == 5 ? CHUNK : 0 };

	fx_make_members(what, fa.n, MEMBER_BYTES, false);
	watch_reset();
	return fx_open_spec(&fa, gtc, watch_init);
}

/* ---- hand-off ---- */

/* How many logged IOs break the group-thread rule: issued by the
 * submitter or an inline worker, or by a group other than the one its
 * stripe head hashes to (plus shift: a wrong group, for the control). */
static int off_group(struct rf_array *a, int shift)
{
	uint64_t head = a->stripe_size / 512;
	int i, bad = 0, n = atomic_load(&nseen);

	for (i = 0; i < n && i < SEEN_MAX; i++) {
		const struct seen_io *s = &seen[i];
		uint64_t key = (s->off >> 9) / head * head;     /* data offset 0 */

		if (s->op == RF_MIO_FSYNC)
			continue;
		if (s->on_submitter || s->group < 0 ||
		    s->group != (rf_group_of(a, key)->id + shift) % a->ngroups)
			bad++;
	}
	return bad;
}

/* How many logged IOs were not issued inline on the submitting thread. */
static int off_inline(void)
{
	int i, bad = 0, n = atomic_load(&nseen);

	for (i = 0; i < n && i < SEEN_MAX; i++)
		if (!seen[i].on_submitter || seen[i].group >= 0)
			bad++;
	return bad;
}

/* Random 4 KiB-aligned reads and writes of up to 64 KiB, one at a time. */
static void some_io(struct rf_array *a, int n)
{
	static char buf[65536];
	int i;

	for (i = 0; i < n; i++) {
		uint32_t len = 4096 * (1 + (uint32_t)(fx_rand() % 16));
		uint64_t off = (fx_rand() % ((rf_array_size(a) - len) / 4096)) * 4096;

		fx_rand_fill(buf, len);
		assert_int_equal(testreq_io(a, i % 3 ? RF_REQ_WRITE : RF_REQ_READ, off, len, buf), 0);
	}
}

/* A write of len bytes at 5 chunks, ended through d. */
static struct rf_req *write_req(struct rf_array *a, struct testreq_done *d, char *buf, uint32_t len)
{
	struct rf_req *r = rf_req_alloc(a, len);

	testreq_batch_init(r, d);
	r->op = RF_REQ_WRITE;
	r->off = 5 * CHUNK;
	r->len = len;
	r->buf = buf;
	return r;
}

static void test_handoff(void **state)
{
	struct rf_array *a = open_level("hand", 5, 2);
	struct testreq_done d;
	struct rf_req *r;
	uint64_t groups = 0;
	int i, n, inline_log_bad;
	static char buf[8192];

	some_io(a, 60);
	n = atomic_load(&nseen);
	assert_true(n > 60 && n < SEEN_MAX);
	assert_int_equal(off_group(a, 0), 0);
	for (i = 0; i < n; i++)
		groups |= 1ull << seen[i].group;
	assert_int_equal(groups, (1ull << a->ngroups) - 1);     /* spread over every group */
	/* Negative control: the same log against a wrong group. */
	assert_true(off_group(a, 1) > 0);
	inline_log_bad = off_inline();
	assert_int_equal(inline_log_bad, n);    /* and as an inline log: all wrong */

	/* The submitter does not wait for member IO: held in the fake
	 * backend, the request is still in flight when submit returns. */
	r = write_req(a, &d, buf, sizeof(buf));
	fake_gate_close();
	rf_req_submit(a, r);
	assert_int_equal(d.done, 0);
	for (i = 0; i < 2000 && !fake_gate_waiting(); i++)
		usleep(1000);
	assert_true(fake_gate_waiting() > 0);
	pthread_mutex_lock(&d.lock);
	assert_int_equal(d.done, 0);
	pthread_mutex_unlock(&d.lock);
	fake_gate_open();
	pthread_mutex_lock(&d.lock);
	while (!d.done)
		pthread_cond_wait(&d.cond, &d.lock);
	pthread_mutex_unlock(&d.lock);
	assert_int_equal(d.err, 0);
	rf_req_free(r);
	rf_array_close(a);

	/* Inline: the submitter's own thread, done before submit returns. */
	a = open_level("hand0", 5, 0);
	some_io(a, 60);
	n = atomic_load(&nseen);
	assert_true(n > 60 && n < SEEN_MAX);
	assert_int_equal(off_inline(), 0);
	assert_int_equal(off_group(a, 0), n);   /* control: as a group log, all wrong */
	r = write_req(a, &d, buf, sizeof(buf));
	rf_req_submit(a, r);
	assert_int_equal(d.done, 1);
	assert_int_equal(d.err, 0);
	rf_req_free(r);
	rf_array_close(a);
	fake_reset();
}

/* ---- exactly once, under reshapes ---- */

#define SUBMITTERS 3
#define SLOTS 6                         /* requests in flight per submitter */
#define PER_THREAD 150                  /* requests per submitter, at least */
#define MIN_RESHAPES 30                 /* the submitters go on until this many */
#define MAX_PER_THREAD 50000

static atomic_int reshapes;

struct slot_req {
	struct rf_req *r;
	atomic_int ended;               /* done() calls */
	int err;
	char *buf;
};

struct sub {
	struct rf_array *a;
	struct fx_rng rng;
	int id;
	char *model;                    /* the whole array's */
	uint64_t slot_bytes;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int free_slots;
	bool busy[SLOTS];
	struct slot_req s[SLOTS];
	uint64_t wbytes, rbytes;        /* asked of the array */
	uint64_t nreq;
	char err[200];
};

static void sub_done(struct rf_req *r, int err)
{
	struct sub *t = r->priv;
	int k;

	for (k = 0; k < SLOTS && t->s[k].r != r; k++)
		;
	t->s[k].err = err;
	atomic_fetch_add(&t->s[k].ended, 1);
	pthread_mutex_lock(&t->lock);
	t->busy[k] = false;
	t->free_slots++;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

/* Slot k ended: check it, update the model. */
static void sub_reap(struct sub *t, int k)
{
	struct slot_req *s = &t->s[k];
	struct rf_req *r = s->r;

	if (atomic_load(&s->ended) != 1 && !t->err[0])
		snprintf(t->err, sizeof(t->err), "a request ended %d times", atomic_load(&s->ended));
	if (s->err && !t->err[0])
		snprintf(t->err, sizeof(t->err), "a request failed: %d", s->err);
	if (r->op == RF_REQ_WRITE)
		memcpy(t->model + r->off, s->buf, r->len);
	else if (memcmp(t->model + r->off, s->buf, r->len) && !t->err[0])
		snprintf(t->err, sizeof(t->err), "read at %llu is not what was written", (unsigned long long)r->off);
	atomic_store(&s->ended, 0);
}

/* Wait (10 s at most) for slot k to be free; false if it never is. */
static bool sub_wait(struct sub *t, int k)
{
	struct timespec ts;
	bool ok = true;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&t->lock);
	while (t->busy[k] && ok)
		ok = pthread_cond_timedwait(&t->cond, &t->lock, &ts) == 0;
	ok = !t->busy[k];
	pthread_mutex_unlock(&t->lock);
	return ok;
}

static void *sub_main(void *arg)
{
	struct sub *t = arg;
	uint64_t base = (uint64_t)t->id * SLOTS * t->slot_bytes;
	bool used[SLOTS] = { false };
	int i, k;

	for (i = 0; (i < PER_THREAD || atomic_load(&reshapes) < MIN_RESHAPES) && i < MAX_PER_THREAD && !t->err[0];
	     i++) {
		struct rf_req *r;
		uint32_t len;

		k = (int)(fx_rng_next(&t->rng) % SLOTS);
		if (!sub_wait(t, k)) {
			snprintf(t->err, sizeof(t->err), "a request did not end in 10 s");
			break;
		}
		if (used[k])
			sub_reap(t, k);
		used[k] = true;
		r = t->s[k].r;
		len = 512 * (1 + (uint32_t)(fx_rng_next(&t->rng) % 64));
		if (len > t->slot_bytes)
			len = (uint32_t)t->slot_bytes;
		r->off = base + (uint64_t)k * t->slot_bytes + (fx_rng_next(&t->rng) % (t->slot_bytes - len + 1));
		r->len = len;
		r->op = fx_rng_next(&t->rng) % 3 ? RF_REQ_WRITE : RF_REQ_READ;
		r->buf = t->s[k].buf;
		if (r->op == RF_REQ_WRITE) {
			fx_rng_fill(&t->rng, r->buf, len);
			t->wbytes += len;
		} else {
			t->rbytes += len;
		}
		pthread_mutex_lock(&t->lock);
		t->busy[k] = true;
		t->free_slots--;
		pthread_mutex_unlock(&t->lock);
		t->nreq++;
		rf_req_submit(t->a, r);
	}
	for (k = 0; k < SLOTS; k++) {
		if (!sub_wait(t, k)) {
			snprintf(t->err, sizeof(t->err), "a request did not end in 10 s");
			break;
		}
		if (used[k])
			sub_reap(t, k);
	}
	return NULL;
}

struct reshaper {
	struct rf_array *a;
	atomic_bool stop;
	int changes, refused;
	char err[200];
};

/* group_thread_cnt 0-2, worker_groups 1-4, stripe_cache_size 17-400 at
 * random; a shape over the thread bound is the only refusal allowed. */
static void *reshape_main(void *arg)
{
	struct reshaper *z = arg;
	struct fx_rng r;

	fx_rng_init(&r, 4242);
	while (!atomic_load(&z->stop) && !z->err[0]) {
		struct rf_array_info info;
		int v, ret, what = (int)(fx_rng_next(&r) % 3);

		rf_array_get_info(z->a, &info);
		if (what == 0) {
			v = (int)(fx_rng_next(&r) % 3);
			ret = rf_array_set_group_thread_cnt(z->a, v);
			if (ret && !(ret == -EINVAL && v * info.worker_groups > rf_max_worker_threads()))
				snprintf(z->err, sizeof(z->err), "group_thread_cnt %d: %d", v, ret);
		} else if (what == 1) {
			v = 1 + (int)(fx_rng_next(&r) % 4);
			ret = rf_array_set_worker_groups(z->a, v);
			if (ret && !(ret == -EINVAL && v * info.group_thread_cnt > rf_max_worker_threads()))
				snprintf(z->err, sizeof(z->err), "worker_groups %d: %d", v, ret);
		} else {
			v = 17 + (int)(fx_rng_next(&r) % 384);
			ret = rf_array_set_stripe_cache_size(z->a, v);
			if (ret)
				snprintf(z->err, sizeof(z->err), "stripe_cache_size %d: %d", v, ret);
		}
		if (ret) {
			z->refused++;
		} else {
			z->changes++;
			atomic_fetch_add(&reshapes, 1);
		}
		usleep(200);
	}
	return NULL;
}

static struct sub subs[SUBMITTERS];

static void subs_init(struct rf_array *a, char *model)
{
	int i, k;

	for (i = 0; i < SUBMITTERS; i++) {
		struct sub *t = &subs[i];

		memset(t, 0, sizeof(*t));
		t->a = a;
		t->id = i;
		t->model = model;
		t->slot_bytes = rf_array_size(a) / (SUBMITTERS * SLOTS) / 512 * 512;
		fx_rng_init(&t->rng, 300 + (uint64_t)i);
		pthread_mutex_init(&t->lock, NULL);
		pthread_cond_init(&t->cond, NULL);
		t->free_slots = SLOTS;
		for (k = 0; k < SLOTS; k++) {
			t->s[k].r = rf_req_alloc(a, 64 * 512);
			t->s[k].buf = malloc(64 * 512);
			t->s[k].r->priv = t;
			t->s[k].r->done = sub_done;
		}
	}
}

static void subs_free(void)
{
	for (int i = 0; i < SUBMITTERS; i++)
		for (int k = 0; k < SLOTS; k++) {
			rf_req_free(subs[i].s[k].r);
			free(subs[i].s[k].buf);
		}
}

static uint64_t subs_requests(void)
{
	uint64_t n = 0;

	for (int i = 0; i < SUBMITTERS; i++)
		n += subs[i].nreq;
	return n;
}

/* Member bytes against the requests' (raid1 of 2: every written byte
 * twice, every read byte once): the difference, written then read. */
static int64_t accounting(int64_t *dr)
{
	uint64_t w = 0, r = 0;

	for (int i = 0; i < SUBMITTERS; i++) {
		w += subs[i].wbytes;
		r += subs[i].rbytes;
	}
	*dr = (int64_t)atomic_load(&bytes_r) - (int64_t)r;
	return (int64_t)atomic_load(&bytes_w) - 2 * (int64_t)w;
}

static void reshape_run(const char *what, int level)
{
	struct rf_array *a = open_level(what, level, 2);
	char *model = calloc(1, rf_array_size(a));
	struct reshaper z = { .a = a };
	pthread_t t[SUBMITTERS], zt;
	int64_t at, dw, dr;
	int i;

	subs_init(a, model);
	atomic_store(&reshapes, 0);
	assert_int_equal(pthread_create(&zt, NULL, reshape_main, &z), 0);
	for (i = 0; i < SUBMITTERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, sub_main, &subs[i]), 0);
	for (i = 0; i < SUBMITTERS; i++)
		pthread_join(t[i], NULL);
	atomic_store(&z.stop, true);
	pthread_join(zt, NULL);
	for (i = 0; i < SUBMITTERS; i++)
		if (subs[i].err[0])
			fail_msg("%s: submitter %d: %s", what, i, subs[i].err);
	if (z.err[0])
		fail_msg("%s: %s", what, z.err);
	print_message("%s: %d reshapes (%d refused over the thread bound) under %llu requests\n", what,
		      z.changes, z.refused, (unsigned long long)subs_requests());
	assert_true(z.changes >= MIN_RESHAPES);
	at = testreq_diff_all(a, model, 256u << 10);
	if (at != -1)
		fail_msg("%s: array byte %lld is not what was written", what, (long long)at);
	if (level == 1) {
		uint64_t whole_read = rf_array_size(a);

		dw = accounting(&dr);
		if (dw || dr != (int64_t)whole_read)
			fail_msg("%s: members got %lld bytes of writes and %lld of reads more than asked", what,
				 (long long)dw, (long long)(dr - (int64_t)whole_read));
		/* Negative control: one write submitted twice is counted twice,
		 * ended twice, and its bytes show at the members. */
		{
			struct sub *s = &subs[0];
			struct rf_req *r = s->s[0].r;

			r->op = RF_REQ_WRITE;
			r->off = 0;
			r->len = 4096;
			s->busy[0] = true;
			rf_req_submit(a, r);
			assert_true(sub_wait(s, 0));
			s->busy[0] = true;
			rf_req_submit(a, r);
			assert_true(sub_wait(s, 0));
			assert_int_equal(atomic_load(&s->s[0].ended), 2);
			s->wbytes += 4096;
			dw = accounting(&dr);
			assert_int_equal(dw, 2 * 4096);
		}
	}
	rf_array_close(a);
	subs_free();
	free(model);
	if (level == 5) {
		/* raid5: every row's parity (xor over the members) right */
		static char m[4][MEMBER_BYTES];

		for (i = 0; i < 4; i++) {
			char p[FX_PATH];
			int fd;

			fx_member_path(p, sizeof(p), what, i);
			fd = open(p, O_RDONLY);
			assert_int_equal(pread(fd, m[i], MEMBER_BYTES, 0), MEMBER_BYTES);
			close(fd);
		}
		for (i = 0; i < (int)MEMBER_BYTES; i++)
			if (m[0][i] ^ m[1][i] ^ m[2][i] ^ m[3][i])
				fail_msg("%s: member byte %d: parity wrong", what, i);
	}
	fake_reset();
}

static void test_reshape_raid5(void **state)
{
	reshape_run("rs5", 5);
}

static void test_reshape_raid1(void **state)
{
	reshape_run("rs1", 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handoff),
		cmocka_unit_test(test_reshape_raid5),
		cmocka_unit_test(test_reshape_raid1),
	};

	return fx_run_tests("workers", tests);
}
