/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_barrier.c - the drain barrier, with interleavings forced by the
 * fake IO backend's gate (member IO held "in flight" until the test opens
 * it), never by sleeping and hoping:
 *  - a write that arrives during a drain is held, then runs after the change;
 *  - several held writes run in arrival order (the last one's data wins);
 *  - writes racing the release and back-to-back drains all complete;
 *  - a drain while every stripe head is busy and pieces wait for one;
 *  - suspend holds writes but lets reads through; resume releases them;
 *  - switching between worker threads and inline submitters under load.
 * Every test ends by reading the data back through the array.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/engine.h"
#include "fake_ioq.h"
#include "fixture.h"

#define MEMBER_BYTES (4u << 20)
#define BLK 4096u

static atomic_int done_seq;

struct treq {
	struct rf_req *r;
	char *buf;
	atomic_int done;
	int err, order;
};

static void t_done(struct rf_req *r, int err)
{
	struct treq *t = r->priv;

	t->err = err;
	t->order = atomic_fetch_add(&done_seq, 1) + 1;
	atomic_store(&t->done, 1);
}

static void treq_init(struct treq *t, struct rf_array *a)
{
	memset(t, 0, sizeof(*t));
	t->r = rf_req_alloc(a, 64 * BLK);
	assert_non_null(t->r);
	assert_int_equal(posix_memalign((void **)&t->buf, 4096, 64 * BLK), 0);
	t->r->buf = t->buf;
	t->r->priv = t;
	t->r->done = t_done;
}

static void treq_free(struct treq *t)
{
	rf_req_free(t->r);
	free(t->buf);
}

static void submit(struct rf_array *a, struct treq *t, int op, uint64_t off, uint32_t len, int fill)
{
	atomic_store(&t->done, 0);
	t->err = -1;
	t->r->op = (uint8_t)op;
	t->r->off = off;
	t->r->len = len;
	if (op == RF_REQ_WRITE)
		memset(t->buf, fill, len);
	rf_req_submit(a, t->r);
}

/* Poll a condition the test forced; 10 s means something is stuck. */
#define WAIT_FOR(cond)                                                          \
	do {                                                                    \
		int _i;                                                         \
		for (_i = 0; !(cond) && _i < 100000; _i++)                      \
			usleep(100);                                            \
		if (!(cond))                                                    \
			fail_msg("stuck waiting for %s", #cond);                \
	} while (0)

static int nheld(struct rf_array *a)
{
	struct rf_req *r;
	int n;

	pthread_mutex_lock(&a->bar_lock);
	n = 0;
	STAILQ_FOREACH(r, &a->held, held_link)
		n++;
	pthread_mutex_unlock(&a->bar_lock);
	return n;
}

static bool draining_all(struct rf_array *a)
{
	return (atomic_load(&a->hold) & 3) == 3;
}

static void wait_done(struct treq *t)
{
	WAIT_FOR(atomic_load(&t->done));
}

/* Read [off, off + len) back and check every byte is fill. */
static void expect_fill(struct rf_array *a, uint64_t off, uint32_t len, int fill)
{
	struct treq t;
	uint32_t i;

	treq_init(&t, a);
	submit(a, &t, RF_REQ_READ, off, len, 0);
	wait_done(&t);
	assert_int_equal(t.err, 0);
	for (i = 0; i < len; i++)
		if ((unsigned char)t.buf[i] != (unsigned char)fill)
			fail_msg("byte %llu: %d, expected %d", (unsigned long long)(off + i),
				 (unsigned char)t.buf[i], fill);
	treq_free(&t);
}

/* A raid5 of 4 members, 64 KiB chunks, on the gated fake backend. */
static struct rf_array *mk(int gtc, int groups, int cache)
{
	const struct fx_array fa = { .what = "m", .level = 5, .layout = 2, .n = 4, .chunk = 65536 };
	struct rf_config cfg;

	fx_config(&cfg, &fa);
	cfg.stripe_cache_size = cache;
	cfg.group_thread_cnt = gtc;
	cfg.worker_groups = groups;
	fx_make_members("m", 4, MEMBER_BYTES, false);
	return fx_open(&cfg, "barrier", fake_ioq_init);
}

enum { SET_CACHE, SET_THREADS, SET_GROUPS, SET_RMW };

struct setter {
	struct rf_array *a;
	int what, value, ret;
	pthread_t th;
};

static int set(struct rf_array *a, int what, int value)
{
	switch (what) {
	case SET_CACHE:
		return rf_array_set_stripe_cache_size(a, value);
	case SET_THREADS:
		return rf_array_set_group_thread_cnt(a, value);
	case SET_GROUPS:
		return rf_array_set_worker_groups(a, value);
	default:
		return rf_array_set_rmw_level(a, value);
	}
}

static void *setter_main(void *p)
{
	struct setter *s = p;

	s->ret = set(s->a, s->what, s->value);
	return NULL;
}

static void setter_start(struct setter *s, struct rf_array *a, int what, int value)
{
	s->a = a;
	s->what = what;
	s->value = value;
	s->ret = -1;
	assert_int_equal(pthread_create(&s->th, NULL, setter_main, s), 0);
}

static int setter_join(struct setter *s)
{
	pthread_join(s->th, NULL);
	return s->ret;
}

/* One write held in flight by the gate, a drain waiting on it, a second
 * write arriving: held, not lost, run after the change. */
static void test_write_queued_during_drain(void **state)
{
	struct rf_array *a = mk(1, 1, 64);
	struct treq w0, w1;
	struct setter s;

	treq_init(&w0, a);
	treq_init(&w1, a);
	fake_gate_close();
	submit(a, &w0, RF_REQ_WRITE, 0, BLK, 0x11);
	WAIT_FOR(fake_gate_waiting() > 0);
	setter_start(&s, a, SET_CACHE, 128);
	WAIT_FOR(draining_all(a));
	submit(a, &w1, RF_REQ_WRITE, 5 * BLK, BLK, 0x22);
	assert_int_equal(nheld(a), 1);
	assert_false(atomic_load(&w0.done));
	assert_false(atomic_load(&w1.done));
	fake_gate_open();
	assert_int_equal(setter_join(&s), 0);
	wait_done(&w0);
	wait_done(&w1);
	assert_int_equal(w0.err, 0);
	assert_int_equal(w1.err, 0);
	/* w1 ran after the change, not before it. */
	assert_int_equal(a->stripe_cache_size, 128);
	assert_int_equal(nheld(a), 0);
	expect_fill(a, 0, BLK, 0x11);
	expect_fill(a, 5 * BLK, BLK, 0x22);
	treq_free(&w0);
	treq_free(&w1);
	rf_array_close(a);
}

/* Several writes of one block held during a drain run in arrival order:
 * the last one's data is what stays. */
static void test_several_in_order(void **state)
{
	enum { N = 8 };
	struct rf_array *a = mk(1, 2, 64);
	struct treq w0, w[N];
	struct setter s;
	int i;

	treq_init(&w0, a);
	fake_gate_close();
	submit(a, &w0, RF_REQ_WRITE, 1 << 20, BLK, 0x01);
	WAIT_FOR(fake_gate_waiting() > 0);
	setter_start(&s, a, SET_THREADS, 2);
	WAIT_FOR(draining_all(a));
	for (i = 0; i < N; i++) {
		treq_init(&w[i], a);
		submit(a, &w[i], RF_REQ_WRITE, 3 * BLK, BLK, 0x40 + i);
	}
	assert_int_equal(nheld(a), N);
	fake_gate_open();
	assert_int_equal(setter_join(&s), 0);
	wait_done(&w0);
	for (i = 0; i < N; i++) {
		wait_done(&w[i]);
		assert_int_equal(w[i].err, 0);
	}
	assert_int_equal(a->group_thread_cnt, 2);
	expect_fill(a, 3 * BLK, BLK, 0x40 + N - 1);
	treq_free(&w0);
	for (i = 0; i < N; i++)
		treq_free(&w[i]);
	rf_array_close(a);
}

struct writer {
	struct rf_array *a;
	int id, n;
	pthread_t th;
};

/* Write blocks id, id + 4, id + 8 ... one at a time, each filled with its
 * index, and check each one's completion. */
static void *writer_main(void *p)
{
	struct writer *wr = p;
	struct treq t;
	int i;

	treq_init(&t, wr->a);
	for (i = 0; i < wr->n; i++) {
		submit(wr->a, &t, RF_REQ_WRITE, (uint64_t)(wr->id + 4 * i) * BLK, BLK, (i + wr->id) & 0xff);
		wait_done(&t);
		assert_int_equal(t.err, 0);
	}
	treq_free(&t);
	return NULL;
}

static void check_writers(struct rf_array *a, struct writer *wr, int nw)
{
	int k, i;

	for (k = 0; k < nw; k++)
		for (i = 0; i < wr[k].n; i++)
			expect_fill(a, (uint64_t)(wr[k].id + 4 * i) * BLK, BLK, (i + wr[k].id) & 0xff);
}

/* Writers keep submitting while drains come and go: each write lands on
 * either side of a release, none is lost. */
static void test_write_racing_release(void **state)
{
	struct rf_array *a = mk(1, 2, 64);
	struct writer wr[3];
	int k, i;

	for (k = 0; k < 3; k++) {
		wr[k] = (struct writer){ .a = a, .id = k, .n = 300 };
		assert_int_equal(pthread_create(&wr[k].th, NULL, writer_main, &wr[k]), 0);
	}
	for (i = 0; i < 30; i++) {
		assert_int_equal(rf_array_set_stripe_cache_size(a, i & 1 ? 17 : 300), 0);
		assert_int_equal(rf_array_set_group_thread_cnt(a, i % 3), 0);
	}
	for (k = 0; k < 3; k++)
		pthread_join(wr[k].th, NULL);
	assert_int_equal(nheld(a), 0);
	check_writers(a, wr, 3);
	rf_array_close(a);
}

/* Two drains requested at once, with IO in flight and writes held: both
 * changes happen, one after the other, and every write completes. */
static void test_two_drains_back_to_back(void **state)
{
	struct rf_array *a = mk(1, 2, 64);
	struct treq w0, w[4];
	struct setter s1, s2;
	int i;

	treq_init(&w0, a);
	fake_gate_close();
	submit(a, &w0, RF_REQ_WRITE, 0, 8 * BLK, 0x5a);
	WAIT_FOR(fake_gate_waiting() > 0);
	setter_start(&s1, a, SET_CACHE, 40);
	WAIT_FOR(draining_all(a));
	setter_start(&s2, a, SET_GROUPS, 3);
	for (i = 0; i < 4; i++) {
		treq_init(&w[i], a);
		submit(a, &w[i], RF_REQ_WRITE, (uint64_t)(100 + 17 * i) * BLK, 2 * BLK, 0x60 + i);
	}
	assert_int_equal(nheld(a), 4);
	fake_gate_open();
	assert_int_equal(setter_join(&s1), 0);
	assert_int_equal(setter_join(&s2), 0);
	assert_int_equal(a->stripe_cache_size, 40);
	assert_int_equal(a->ngroups, 3);
	wait_done(&w0);
	assert_int_equal(w0.err, 0);
	for (i = 0; i < 4; i++) {
		wait_done(&w[i]);
		assert_int_equal(w[i].err, 0);
		expect_fill(a, (uint64_t)(100 + 17 * i) * BLK, 2 * BLK, 0x60 + i);
	}
	expect_fill(a, 0, 8 * BLK, 0x5a);
	treq_free(&w0);
	for (i = 0; i < 4; i++)
		treq_free(&w[i]);
	rf_array_close(a);
}

struct one {
	struct rf_array *a;
	struct treq *t;
	uint64_t off;
	int fill;
	pthread_t th;
};

static void *one_main(void *p)
{
	struct one *o = p;

	submit(o->a, o->t, RF_REQ_WRITE, o->off, BLK, o->fill);
	return NULL;
}

/* Every stripe head busy (its owner held at the gate) and more pieces
 * waiting for a head when the drain starts: the waiting pieces still run,
 * then the change, then the held write.  Inline submitters: each of the
 * first NH owns one of the NH heads the cache has. */
static void test_drain_cache_full(void **state)
{
	struct rf_array *a = mk(0, 1, 17);
	const int NH = a->groups[0].nstripes, N = NH + 8;
	struct treq w[64], late;
	struct one o[64];
	struct rf_array_info info;
	struct setter s;
	int i;

	assert_true(N <= 64);
	fake_gate_close();
	for (i = 0; i < N; i++) {
		/* One block in each of N different rows. */
		treq_init(&w[i], a);
		if (i < NH) {
			o[i] = (struct one){ a, &w[i], (uint64_t)i * 3 * 65536, 0x80 + i, 0 };
			assert_int_equal(pthread_create(&o[i].th, NULL, one_main, &o[i]), 0);
			WAIT_FOR(fake_gate_waiting() == i + 1);
		} else {
			/* No head free: the piece waits, the submitter returns. */
			submit(a, &w[i], RF_REQ_WRITE, (uint64_t)i * 3 * 65536, BLK, 0x80 + i);
		}
	}
	rf_array_get_info(a, &info);
	assert_int_equal(info.stripe_cache_active, NH);
	pthread_mutex_lock(&a->groups[0].lock);
	assert_false(STAILQ_EMPTY(&a->groups[0].deferred));
	pthread_mutex_unlock(&a->groups[0].lock);
	setter_start(&s, a, SET_CACHE, 64);
	WAIT_FOR(draining_all(a));
	treq_init(&late, a);
	submit(a, &late, RF_REQ_WRITE, 7 * BLK, BLK, 0x77);
	assert_int_equal(nheld(a), 1);
	fake_gate_open();
	assert_int_equal(setter_join(&s), 0);
	for (i = 0; i < NH; i++)
		pthread_join(o[i].th, NULL);
	for (i = 0; i < N; i++) {
		wait_done(&w[i]);
		assert_int_equal(w[i].err, 0);
	}
	wait_done(&late);
	assert_int_equal(late.err, 0);
	rf_array_get_info(a, &info);
	assert_int_equal(info.stripe_cache_size, 64);
	assert_int_equal(info.stripe_cache_active, 0);
	for (i = 0; i < N; i++)
		expect_fill(a, (uint64_t)i * 3 * 65536, BLK, 0x80 + i);
	expect_fill(a, 7 * BLK, BLK, 0x77);
	for (i = 0; i < N; i++)
		treq_free(&w[i]);
	treq_free(&late);
	rf_array_close(a);
}

/* Suspended: writes wait, reads go on; a reshape while suspended keeps the
 * writes held; resume runs them in order. */
static void test_suspend_resume(void **state)
{
	struct rf_array *a = mk(1, 2, 64);
	struct treq w[3], r;
	struct rf_array_info info;
	int i;

	treq_init(&r, a);
	submit(a, &r, RF_REQ_WRITE, 0, BLK, 0x33);
	wait_done(&r);
	assert_int_equal(rf_barrier_suspend(a), 0);
	assert_int_equal(rf_barrier_suspend(a), 0);
	rf_array_get_info(a, &info);
	assert_true(info.suspended);
	for (i = 0; i < 3; i++) {
		treq_init(&w[i], a);
		submit(a, &w[i], RF_REQ_WRITE, 0, BLK, 0x90 + i);
	}
	assert_int_equal(nheld(a), 3);
	/* A read is not held, and sees the data from before. */
	submit(a, &r, RF_REQ_READ, 0, BLK, 0);
	wait_done(&r);
	assert_int_equal(r.err, 0);
	assert_int_equal((unsigned char)r.buf[0], 0x33);
	assert_int_equal(rf_array_set_stripe_cache_size(a, 100), 0);
	assert_int_equal(nheld(a), 3);
	for (i = 0; i < 3; i++)
		assert_false(atomic_load(&w[i].done));
	assert_int_equal(rf_barrier_resume(a), 0);
	for (i = 0; i < 3; i++) {
		wait_done(&w[i]);
		assert_int_equal(w[i].err, 0);
	}
	rf_array_get_info(a, &info);
	assert_false(info.suspended);
	expect_fill(a, 0, BLK, 0x92);
	for (i = 0; i < 3; i++)
		treq_free(&w[i]);
	treq_free(&r);
	rf_array_close(a);
}

/* A write's lent data (rf_req.lent) is the submitter's only until
 * rf_req_submit() returns (libfuse reuses the buffer then).  Served
 * inline on a raid0 it is written straight from there and has ended when
 * the call returns; held at the barrier (suspended), or queued to a group
 * thread of a raid5, it is copied first: bytes scribbled over the lent
 * buffer after the call never reach the members.  Without the copies the
 * held write lands the request's stale buffer, the raid5 one the
 * scribbled bytes. */
static void lent_submit(struct rf_array *a, struct treq *t, char *lent, uint64_t off, int fill)
{
	atomic_store(&t->done, 0);
	t->err = -1;
	memset(t->buf, 0, BLK);
	memset(lent, fill, BLK);
	t->r->op = RF_REQ_WRITE;
	t->r->off = off;
	t->r->len = BLK;
	t->r->lent = lent;
	rf_req_submit(a, t->r);
	memset(lent, 0xee, BLK);        /* the submitter's buffer is reused */
}

static void test_lent_write_outlives_call(void **state)
{
	const struct fx_array fa = { .what = "z", .level = 0, .n = 4, .chunk = 65536 };
	struct rf_config cfg;
	struct rf_array *a;
	struct treq t;
	char *lent = NULL;

	assert_int_equal(posix_memalign((void **)&lent, 4096, BLK), 0);
	fx_config(&cfg, &fa);
	cfg.group_thread_cnt = 0;
	fx_make_members("z", 4, MEMBER_BYTES, false);
	a = fx_open(&cfg, "barrier", fake_ioq_init);
	treq_init(&t, a);
	/* inline raid0: straight from the lent bytes, ended in the call */
	lent_submit(a, &t, lent, 3 * BLK, 0x5a);
	assert_true(atomic_load(&t.done));
	assert_int_equal(t.err, 0);
	assert_ptr_equal(t.r->buf, t.buf);      /* the request's buffer is its own again */
	expect_fill(a, 3 * BLK, BLK, 0x5a);
	/* held at the barrier past the call */
	assert_int_equal(rf_barrier_suspend(a), 0);
	lent_submit(a, &t, lent, 70 * BLK, 0x6b);
	assert_int_equal(nheld(a), 1);
	assert_int_equal(rf_barrier_resume(a), 0);
	wait_done(&t);
	assert_int_equal(t.err, 0);
	expect_fill(a, 70 * BLK, BLK, 0x6b);
	treq_free(&t);
	rf_array_close(a);

	/* raid5, a group thread serves it after the call */
	a = mk(1, 1, 64);
	treq_init(&t, a);
	fake_gate_close();
	lent_submit(a, &t, lent, 9 * BLK, 0x7c);
	WAIT_FOR(fake_gate_waiting() > 0);
	fake_gate_open();
	wait_done(&t);
	assert_int_equal(t.err, 0);
	expect_fill(a, 9 * BLK, BLK, 0x7c);
	treq_free(&t);
	rf_array_close(a);
	free(lent);
}

/* Inline raid5: a lent write is written from the lent bytes themselves,
 * and rf_req_submit() returns only once it has ended, also when its
 * piece waits on a stripe head another submitter runs.  Here submitter B
 * owns the head (its member IO held at the gate) when A's write to the
 * same block arrives.  Copied first (as before), A's request buffer holds
 * its bytes afterwards; lent without waiting, A's call returns at once
 * and the bytes scribbled over its buffer reach the members. */
struct lent_sub {
	struct rf_array *a;
	struct treq *t;
	char *lent;
	atomic_int returned;
};

static void *lent_sub_main(void *arg)
{
	struct lent_sub *s = arg;

	lent_submit(s->a, s->t, s->lent, 9 * BLK, 0x7c);
	atomic_store(&s->returned, 1);
	return NULL;
}

static void *plain_sub_main(void *arg)
{
	struct lent_sub *s = arg;

	submit(s->a, s->t, RF_REQ_WRITE, 9 * BLK, BLK, 0x11);
	atomic_store(&s->returned, 1);
	return NULL;
}

static bool head_has_towrite(struct rf_array *a)
{
	struct rf_group *g = &a->groups[0];
	bool any = false;
	int i;

	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->nstripes; i++)
		any |= !STAILQ_EMPTY(&g->stripes[i].towrite);
	pthread_mutex_unlock(&g->lock);
	return any;
}

static void test_lent_write_inline_stripe(void **state)
{
	struct rf_array *a = mk(0, 1, 64);
	struct treq ta, tb;
	struct lent_sub sa = { .a = a, .t = &ta }, sb = { .a = a, .t = &tb };
	pthread_t tha, thb;
	char *zero = calloc(1, BLK);
	char *lent = NULL;

	assert_non_null(zero);
	assert_int_equal(posix_memalign((void **)&lent, 4096, BLK), 0);
	sa.lent = lent;
	treq_init(&ta, a);
	treq_init(&tb, a);
	fake_gate_close();
	assert_int_equal(pthread_create(&thb, NULL, plain_sub_main, &sb), 0);
	WAIT_FOR(fake_gate_waiting() > 0);
	assert_int_equal(pthread_create(&tha, NULL, lent_sub_main, &sa), 0);
	/* A's piece waits on B's head. */
	WAIT_FOR(head_has_towrite(a));
	assert_false(atomic_load(&sa.returned));
	assert_false(atomic_load(&ta.done));
	fake_gate_open();
	pthread_join(thb, NULL);
	pthread_join(tha, NULL);
	/* A's call returned after its end, not before. */
	assert_true(atomic_load(&ta.done));
	assert_int_equal(ta.err, 0);
	assert_int_equal(tb.err, 0);
	assert_ptr_equal(ta.r->buf, ta.buf);
	/* Not copied into the request's buffer: written from the lent one. */
	assert_memory_equal(ta.buf, zero, BLK);
	expect_fill(a, 9 * BLK, BLK, 0x7c);
	treq_free(&ta);
	treq_free(&tb);
	rf_array_close(a);
	free(lent);
	free(zero);
}

/* From worker threads to inline submitters and back, under load. */
static void test_inline_switch(void **state)
{
	struct rf_array *a = mk(0, 2, 64);
	struct writer wr[3];
	int k, i;

	for (k = 0; k < 3; k++) {
		wr[k] = (struct writer){ .a = a, .id = k, .n = 300 };
		assert_int_equal(pthread_create(&wr[k].th, NULL, writer_main, &wr[k]), 0);
	}
	for (i = 0; i < 20; i++) {
		assert_int_equal(rf_array_set_group_thread_cnt(a, i & 1), 0);
		assert_int_equal(rf_array_set_rmw_level(a, i % 3), 0);
	}
	for (k = 0; k < 3; k++)
		pthread_join(wr[k].th, NULL);
	check_writers(a, wr, 3);
	rf_array_close(a);
}

/* Out-of-range values change nothing. */
static void test_setters_einval(void **state)
{
	struct rf_array *a = mk(0, 2, 64);
	struct rf_array_info info;

	assert_int_equal(rf_array_set_stripe_cache_size(a, 16), -EINVAL);
	assert_int_equal(rf_array_set_stripe_cache_size(a, 32769), -EINVAL);
	assert_int_equal(rf_array_set_group_thread_cnt(a, -1), -EINVAL);
	assert_int_equal(rf_array_set_group_thread_cnt(a, 65), -EINVAL);
	assert_int_equal(rf_array_set_worker_groups(a, 0), -EINVAL);
	assert_int_equal(rf_array_set_worker_groups(a, 65), -EINVAL);
	assert_int_equal(rf_array_set_rmw_level(a, 3), -EINVAL);
	rf_array_get_info(a, &info);
	assert_int_equal(info.stripe_cache_size, 64);
	assert_int_equal(info.group_thread_cnt, 0);
	assert_int_equal(info.worker_groups, 2);
	assert_int_equal(info.rmw_level, 1);
	assert_int_equal(info.stripe_cache_bytes, 64ull * 4 * BLK);
	rf_array_close(a);
}

static int setup(void **state)
{

	fake_reset();
	return fx_dir_make("barrier");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_queued_during_drain),
		cmocka_unit_test(test_several_in_order),
		cmocka_unit_test(test_write_racing_release),
		cmocka_unit_test(test_two_drains_back_to_back),
		cmocka_unit_test(test_drain_cache_full),
		cmocka_unit_test(test_suspend_resume),
		cmocka_unit_test(test_inline_switch),
		cmocka_unit_test(test_setters_einval),
		cmocka_unit_test(test_lent_write_outlives_call),
		cmocka_unit_test(test_lent_write_inline_stripe),
	};

	return fx_run_tests_with(tests, setup, fx_group_teardown);
}
