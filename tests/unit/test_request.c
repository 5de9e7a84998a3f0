/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_request.c - a request's way through the core (core/request.c):
 * what its essay promises, seen from outside the levels.
 *
 *  - exactly one done() per request, after its last piece, with nothing
 *    pending: every level, worker threads and inline, with short
 *    transfers and back-pressure injected, requests in batches;
 *  - pieces: a DIRECT level's pieces tile the request (raid0: each byte
 *    once, inside one chunk, at its place in the buffer; mirrors: each
 *    byte once per copy written, once read);
 *  - error aggregation: the first error a piece ends with is the
 *    request's, later errors and successes do not change it, done() runs
 *    at the last piece only and the barrier's count is released; a
 *    member's errno reaches the request as it came; a request whose
 *    split runs out of pieces ends with -EINVAL and no member IO;
 *  - write hooks: write_start once before any member IO of a write, and
 *    write_end once after with the request's result; an error from
 *    write_start fails the write with it and no member IO, write_end
 *    still runs; reads and flushes do not call them;
 *  - past what the level tolerates, writes fail (-EIO) without member
 *    IO, reads go on where the data is whole; a member IO error marks
 *    the member faulty (raid5), or the array broken when it held the last
 *    copy (raid1);
 *  - a flush is one fsync per member present and not faulty; a failed
 *    fsync fails the member, and the flush when that fails the array;
 *  - inline or group threads: without group threads done() runs on the
 *    submitter before rf_req_submit() returns; with them, a level with
 *    stripe heads ends on a worker; a level without serves a request on
 *    the submitter when nothing else is in flight or when it is 256 KiB
 *    or more, and hands it to a worker (the submit returning at once)
 *    when two others are in flight (RF_INLINE_QUIET), or when the
 *    submitter said it has more requests right behind (more_behind);
 *  - negative controls: the tiling check rejects a piece list with a
 *    piece dropped or moved; a request without the injected error ends
 *    with 0.
 *
 * Interleavings are forced with the fake backend's gate, never by sleep.
 * Seed: RF_TEST_SEED (printed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/engine.h"
#include "fake_ioq.h"
#include "fixture.h"
#include "testreq.h"

#define MEMBER_BYTES (2u << 20)
#define MAXLEN (300u << 10)
#define BATCH 8

static const struct fx_array specs[] = {
	{ .what = "r0", .level = 0, .n = 3, .chunk = 16384 },
	{ .what = "r1", .level = 1, .n = 3 },
	{ .what = "r10", .level = 10, .layout = 0x102, .n = 4, .chunk = 8192 },
	{ .what = "r10o", .level = 10, .layout = 0x10201, .n = 3, .chunk = 16384 },
	{ .what = "r5", .level = 5, .layout = 2, .n = 4, .chunk = 16384 },
	{ .what = "r6", .level = 6, .layout = 2, .n = 5, .chunk = 8192 },
};

static struct rf_array *open_spec(const struct fx_array *sp, int gtc)
{
	fx_make_members(sp->what, sp->n, MEMBER_BYTES, false);
	return fx_open_spec(sp, gtc, fake_ioq_init);
}

/* ---- requests that count their ends ---- */

struct creq {
	struct rf_req *r;
	char *buf;
	atomic_int ndone;               /* done() calls */
	atomic_int done;
	int err;
	int pending_at_done;            /* r->pending seen by done() */
	pthread_t thread;               /* where done() ran */
	atomic_int returned;            /* rf_req_submit() had returned when done() ran */
	atomic_int *submitted;
};

static void creq_done(struct rf_req *r, int err)
{
	struct creq *c = r->priv;

	c->err = err;
	c->pending_at_done = atomic_load(&r->pending);
	c->thread = pthread_self();
	atomic_store(&c->returned, c->submitted ? atomic_load(c->submitted) : 0);
	atomic_fetch_add(&c->ndone, 1);
	atomic_store(&c->done, 1);
}

static void creq_init(struct creq *c, struct rf_array *a, uint32_t maxlen)
{
	memset(c, 0, sizeof(*c));
	c->r = rf_req_alloc(a, maxlen);
	c->buf = malloc(maxlen);
	assert_true(c->r && c->buf);
	c->r->buf = c->buf;
	c->r->priv = c;
	c->r->done = creq_done;
}

static void creq_free(struct creq *c)
{
	rf_req_free(c->r);
	free(c->buf);
}

static void creq_submit(struct rf_array *a, struct creq *c, int op, uint64_t off, uint32_t len)
{
	atomic_store(&c->done, 0);
	atomic_store(&c->ndone, 0);
	c->r->op = (uint8_t)op;
	c->r->off = off;
	c->r->len = len;
	rf_req_submit(a, c->r);
}

/* Wait for c's end: 10 s means something is stuck. */
static void creq_wait(struct creq *c)
{
	int i;

	for (i = 0; i < 100000 && !atomic_load(&c->done); i++)
		usleep(100);
	if (!atomic_load(&c->done))
		fail_msg("request of %u at %llu: no end after 10 s", c->r->len, (unsigned long long)c->r->off);
}

/* Wait until n queues wait at the fake backend's gate. */
static void gate_wait(int n)
{
	int i;

	for (i = 0; i < 100000 && fake_gate_waiting() != n; i++)
		usleep(100);
	if (fake_gate_waiting() != n)
		fail_msg("%d queues at the gate after 10 s, not %d", fake_gate_waiting(), n);
}

/* ---- pieces ---- */

static int piece_cmp(const void *x, const void *y)
{
	const struct rf_piece *a = x, *b = y;

	return a->aoff < b->aoff ? -1 : a->aoff > b->aoff;
}

/* Whether pieces p[0..n) of request r cover each byte of it `copies`
 * times, each piece inside one unit (chunk bytes; 0: any), at its place
 * in r->buf. */
static bool tiles(const struct rf_req *r, struct rf_piece *p, int n, int copies, uint64_t chunk)
{
	uint8_t *cnt = calloc(1, r->len ? r->len : 1);
	bool ok = true;
	uint32_t b;
	int i;

	assert_non_null(cnt);
	qsort(p, (size_t)n, sizeof(*p), piece_cmp);
	for (i = 0; i < n && ok; i++) {
		if (p[i].aoff < r->off || p[i].aoff + p[i].len > r->off + r->len || !p[i].len ||
		    p[i].buf != r->buf + (p[i].aoff - r->off) ||
		    (chunk && p[i].aoff / chunk != (p[i].aoff + p[i].len - 1) / chunk)) {
			ok = false;
			break;
		}
		for (b = 0; b < p[i].len; b++)
			cnt[p[i].aoff - r->off + b]++;
	}
	for (b = 0; b < r->len && ok; b++)
		ok = cnt[b] == copies;
	free(cnt);
	return ok;
}

/* The pieces r ended with, copied out. */
static int pieces_of(const struct rf_req *r, struct rf_piece *out)
{
	int n = atomic_load(&r->npieces);

	assert_true(n <= r->maxpieces);
	memcpy(out, r->pieces, sizeof(*out) * (size_t)n);
	return n;
}

/* ---- exactly one end ---- */

static void test_done_once(void **state)
{
	static struct creq c[BATCH];
	struct rf_piece *pc = NULL;
	size_t s;
	int round, i;

	for (s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
		const struct fx_array *sp = &specs[s];
		struct rf_array *a;
		uint64_t size;
		int copies_w, npieces_max = 0;

		fake_reset();
		fake_short_every = 7;
		fake_again_every = 11;
		a = open_spec(sp, fx_gtc);
		size = rf_array_size(a);
		copies_w = sp->level == 1 ? sp->n : sp->level == 10 ? 2 : 1;
		for (i = 0; i < BATCH; i++)
			creq_init(&c[i], a, MAXLEN);
		for (round = 0; round < 12; round++) {
			/* disjoint requests in flight together */
			for (i = 0; i < BATCH; i++) {
				uint64_t off;
				uint32_t len;
				int op = fx_rand() % 3 ? (int)(fx_rand() % 2) : RF_REQ_FLUSH;

				fx_rand_extent(size / BATCH, MAXLEN, &off, &len);
				creq_submit(a, &c[i], op, size / BATCH * (uint64_t)i + off, op == RF_REQ_FLUSH ? 0 : len);
			}
			for (i = 0; i < BATCH; i++) {
				struct rf_req *r = c[i].r;
				int n;

				creq_wait(&c[i]);
				assert_int_equal(c[i].err, 0);
				assert_int_equal(c[i].pending_at_done, 0);
				/* counted past the barrier, for the level */
				if (r->maxpieces > npieces_max) {
					npieces_max = r->maxpieces;
					pc = realloc(pc, sizeof(*pc) * (size_t)npieces_max);
					assert_non_null(pc);
				}
				n = pieces_of(r, pc);
				if (r->op == RF_REQ_FLUSH) {
					assert_int_equal(n, sp->n);
					continue;
				}
				if (sp->level >= 4 && sp->level <= 6)
					continue;       /* stripe pieces: the heads' business */
				if (!tiles(r, pc, n, r->op == RF_REQ_WRITE ? copies_w : 1, sp->level == 1 ? 0 : sp->chunk))
					fail_msg("%s: %s of %u at %llu: pieces do not tile it", sp->what,
						 r->op == RF_REQ_WRITE ? "write" : "read", r->len, (unsigned long long)r->off);
			}
		}
		rf_array_close(a);
		/* Nothing more ended after close: once each. */
		for (i = 0; i < BATCH; i++) {
			assert_int_equal(atomic_load(&c[i].ndone), 1);
			creq_free(&c[i]);
		}
		assert_true(fake_nr_short > 0 && fake_nr_again > 0);
	}
	free(pc);
	fake_reset();
}

/* The tiling check rejects a piece dropped or moved (negative control). */
static void test_tiles_negative(void **state)
{
	const struct fx_array *sp = &specs[0];
	struct rf_array *a = open_spec(sp, 0);
	struct rf_piece pc[64];
	struct creq c;
	int n;

	fake_reset();
	creq_init(&c, a, MAXLEN);
	creq_submit(a, &c, RF_REQ_READ, 16384 - 100, 3 * 16384);
	assert_true(atomic_load(&c.done));
	assert_int_equal(c.err, 0);
	n = pieces_of(c.r, pc);
	assert_int_equal(n, 4);
	assert_true(tiles(c.r, pc, n, 1, 16384));
	assert_false(tiles(c.r, pc, n, 2, 16384));      /* read once, not twice */
	assert_false(tiles(c.r, pc + 1, n - 1, 1, 16384));
	n = pieces_of(c.r, pc);
	pc[2].aoff += 1;
	assert_false(tiles(c.r, pc, n, 1, 16384));
	n = pieces_of(c.r, pc);
	pc[1].buf += 1;
	assert_false(tiles(c.r, pc, n, 1, 16384));
	creq_free(&c);
	rf_array_close(a);
}

/* ---- errors ---- */

/* Pieces ended by hand: the first error stays, done() at the last. */
static void test_first_error_wins(void **state)
{
	struct rf_array *a = open_spec(&specs[0], 0);
	struct rf_piece *p[4];
	struct creq c;
	int i;

	creq_init(&c, a, MAXLEN);
	c.r->a = a;
	c.r->op = RF_REQ_READ;
	c.r->off = 0;
	c.r->len = 4 * 4096;
	c.r->rl.state = RF_RL_NONE;
	atomic_store(&c.r->pending, 0);
	atomic_store(&c.r->err, 0);
	atomic_store(&c.r->npieces, 0);
	for (i = 0; i < 4; i++) {
		p[i] = rf_piece_new(c.r, RF_PIECE_DIRECT, false, (uint64_t)i * 4096, c.buf + i * 4096, 4096, 0);
		assert_non_null(p[i]);
	}
	assert_int_equal(atomic_load(&c.r->pending), 4);
	/* counted at the barrier, as rf_req_submit() does */
	atomic_fetch_add(&a->inflight[0], 1);
	rf_piece_end(p[2], 0);
	rf_piece_end(p[0], -ENOSPC);
	rf_piece_end(p[3], -EIO);
	assert_false(atomic_load(&c.done));
	assert_int_equal(atomic_load(&a->inflight[0]), 1);
	rf_piece_end(p[1], 0);
	assert_int_equal(atomic_load(&c.ndone), 1);
	assert_int_equal(c.err, -ENOSPC);
	assert_int_equal(c.pending_at_done, 0);
	assert_int_equal(atomic_load(&a->inflight[0]), 0);
	creq_free(&c);
	rf_array_close(a);
}

/* A member's errno reaches the request as it came; without it the same
 * request ends with 0 (negative control).  A split that runs out of
 * pieces ends the request with -EINVAL and issues nothing. */
static void test_member_errno(void **state)
{
	struct rf_array *a;
	struct creq c;

	fake_reset();
	a = open_spec(&specs[0], fx_gtc);
	creq_init(&c, a, MAXLEN);
	creq_submit(a, &c, RF_REQ_READ, 1000, 3 * 16384);
	creq_wait(&c);
	assert_int_equal(c.err, 0);
	fake_fail_member = 1;
	fake_fail_errno = -EMEDIUMTYPE;
	creq_submit(a, &c, RF_REQ_READ, 1000, 3 * 16384);
	creq_wait(&c);
	assert_int_equal(c.err, -EMEDIUMTYPE);
	assert_int_equal(atomic_load(&c.ndone), 1);
	creq_free(&c);
	rf_array_close(a);

	/* room for 64 KiB of 16 KiB chunks (at least a piece per possible
	 * slot: 64); 2 MiB needs 128 */
	fake_reset();
	a = open_spec(&specs[0], fx_gtc);
	creq_init(&c, a, 64 << 10);
	assert_true(c.r->maxpieces < 128);
	free(c.buf);
	c.buf = calloc(1, 2u << 20);
	c.r->buf = c.buf;
	fake_log_on = true;
	creq_submit(a, &c, RF_REQ_WRITE, 0, 2u << 20);
	creq_wait(&c);
	assert_int_equal(c.err, -EINVAL);
	assert_int_equal(atomic_load(&c.ndone), 1);
	assert_int_equal(fake_nlog, 0);
	/* and the array goes on */
	creq_submit(a, &c, RF_REQ_WRITE, 0, 64 << 10);
	creq_wait(&c);
	assert_int_equal(c.err, 0);
	assert_true(fake_nlog > 0);
	creq_free(&c);
	rf_array_close(a);
	fake_reset();
}

/* ---- write hooks ---- */

struct hook_log {
	atomic_int starts, ends;
	int nlog_at_start;              /* member IO logged when write_start ran */
	int start_ret;                  /* what write_start returns */
	uint64_t off, len;              /* write_start's */
	uint64_t end_off, end_len;      /* write_end's */
	int end_err;
};

static int h_start(void *priv, uint64_t off, uint64_t len)
{
	struct hook_log *h = priv;

	h->nlog_at_start = fake_nlog;
	h->off = off;
	h->len = len;
	atomic_fetch_add(&h->starts, 1);
	return h->start_ret;
}

static void h_end(void *priv, uint64_t off, uint64_t len, int err)
{
	struct hook_log *h = priv;

	h->end_off = off;
	h->end_len = len;
	h->end_err = err;
	atomic_fetch_add(&h->ends, 1);
}

static const struct rf_hooks test_hooks = { .name = "test", .write_start = h_start, .write_end = h_end };

static void test_write_hooks(void **state)
{
	static struct hook_log h;
	static char buf[65536];
	struct rf_array *a;

	memset(&h, 0, sizeof(h));
	fake_reset();
	a = open_spec(&specs[1], fx_gtc);       /* raid1 of 3 */
	assert_int_equal(rf_array_add_hooks(a, &test_hooks, &h), 0);
	fake_log_on = true;
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 4096, 8192, buf), 0);
	assert_int_equal(h.starts, 1);
	assert_int_equal(h.ends, 1);
	assert_int_equal(h.nlog_at_start, 0);
	assert_int_equal(h.off, 4096);
	assert_int_equal(h.len, 8192);
	assert_int_equal(h.end_off, 4096);
	assert_int_equal(h.end_len, 8192);
	assert_int_equal(h.end_err, 0);
	assert_int_equal(fake_count(-1, RF_MIO_WRITE), 3);
	/* reads and flushes do not call them */
	assert_int_equal(testreq_io(a, RF_REQ_READ, 0, 65536, buf), 0);
	assert_int_equal(testreq_io(a, RF_REQ_FLUSH, 0, 0, NULL), 0);
	assert_int_equal(h.starts, 1);
	assert_int_equal(h.ends, 1);
	/* write_start refuses: the write fails with its error, no member IO,
	 * write_end still hears of it */
	h.start_ret = -EROFS;
	fake_nlog = 0;
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, 512, buf), -EROFS);
	assert_int_equal(fake_nlog, 0);
	assert_int_equal(h.starts, 2);
	assert_int_equal(h.ends, 2);
	assert_int_equal(h.end_err, -EROFS);
	/* a write failing on its members: write_end gets the error */
	h.start_ret = 0;
	fake_fail_member = 0;
	fake_fail_errno = -EIO;
	/* member 0 fails: the others carry the write */
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, 512, buf), 0);
	assert_int_equal(h.end_err, 0);
	rf_array_close(a);
	fake_reset();
}

/* ---- a failed array ---- */

/* raid5 of 4: a member IO error marks the member faulty (a parity level
 * fails the device) and the array serves on; a second one fails the
 * array: writes end with -EIO before any member IO, reads of whole data
 * go on. */
static void test_failed_array(void **state)
{
	struct rf_array *a;
	static char buf[65536], model[65536];

	fake_reset();
	a = open_spec(&specs[4], fx_gtc);
	fx_rand_fill(model, sizeof(model));
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, sizeof(model), model), 0);
	fake_fail_member = 2;
	assert_int_equal(testreq_io(a, RF_REQ_READ, 0, sizeof(buf), buf), 0);
	assert_memory_equal(buf, model, sizeof(buf));
	assert_int_equal(rf_array_faulty(a), 1ull << 2);
	assert_false(rf_array_failed(a));
	fake_fail_member = 3;
	assert_int_equal(testreq_io(a, RF_REQ_READ, 0, sizeof(buf), buf), -EIO);
	assert_int_equal(rf_array_faulty(a), (1ull << 2) | (1ull << 3));
	assert_true(rf_array_failed(a));
	fake_fail_member = -1;
	fake_log_on = true;
	fake_nlog = 0;
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, 4096, buf), -EIO);
	assert_int_equal(fake_nlog, 0);
	/* chunk 0 of row 0 lies on member 0 (left-symmetric: parity on 3) */
	assert_int_equal(testreq_io(a, RF_REQ_READ, 100, 4000, buf), 0);
	assert_memory_equal(buf, model + 100, 4000);
	rf_array_close(a);
	fake_reset();
}

/* ---- flush ---- */

static void test_flush(void **state)
{
	struct fx_array sp = specs[1];         /* raid1 of 3 */
	struct rf_array *a;

	fake_reset();
	sp.missing = 1ull << 2;
	fx_make_members(sp.what, sp.n, MEMBER_BYTES, false);
	a = fx_open_spec(&sp, fx_gtc, fake_ioq_init);
	fake_log_on = true;
	assert_int_equal(testreq_io(a, RF_REQ_FLUSH, 0, 0, NULL), 0);
	assert_int_equal(fake_nlog, 2);
	assert_int_equal(fake_count(0, RF_MIO_FSYNC), 1);
	assert_int_equal(fake_count(1, RF_MIO_FSYNC), 1);
	/* member 1's fsync fails: it is faulty, member 0 still holds the data */
	fake_fail_member = 1;
	assert_int_equal(testreq_io(a, RF_REQ_FLUSH, 0, 0, NULL), 0);
	assert_int_equal(rf_array_faulty(a), (1ull << 1) | (1ull << 2));
	fake_nlog = 0;
	assert_int_equal(testreq_io(a, RF_REQ_FLUSH, 0, 0, NULL), 0);
	assert_int_equal(fake_nlog, 1);
	assert_int_equal(fake_count(0, RF_MIO_FSYNC), 1);
	/* the last copy's fsync fails: the flush fails, the array is broken */
	fake_fail_member = 0;
	assert_int_equal(testreq_io(a, RF_REQ_FLUSH, 0, 0, NULL), -EIO);
	assert_true(rf_array_failed(a));
	rf_array_close(a);
	fake_reset();
}

/* ---- inline or group threads ---- */

struct bg_io {
	struct rf_array *a;
	uint64_t off;
	pthread_t th;
	int ret;
};

static void *bg_read(void *arg)
{
	struct bg_io *b = arg;
	char buf[4096];

	b->ret = testreq_io(b->a, RF_REQ_READ, b->off, sizeof(buf), buf);
	return NULL;
}

/* nheld reads held at the gate, in flight, each on its own thread. */
static void hold_reads(struct rf_array *a, struct bg_io *b, int nheld)
{
	int i;

	for (i = 0; i < nheld; i++) {
		b[i] = (struct bg_io){ .a = a, .off = (uint64_t)i * 65536 };
		assert_int_equal(pthread_create(&b[i].th, NULL, bg_read, &b[i]), 0);
		gate_wait(i + 1);
	}
	assert_true(atomic_load(&a->inflight[0]) >= nheld);
}

static void release_reads(struct bg_io *b, int nheld)
{
	int i;

	fake_gate_open();
	for (i = 0; i < nheld; i++) {
		pthread_join(b[i].th, NULL);
		assert_int_equal(b[i].ret, 0);
	}
}

struct opener {
	int want;                       /* queues waiting at the gate */
	atomic_int *submitted;          /* NULL: open at want; else also wait for it */
	pthread_t th;
};

/* Open the gate once want queues wait at it (and the submit returned,
 * when asked); after 10 s whatever they do. */
static void *opener_main(void *arg)
{
	struct opener *o = arg;
	int i;

	for (i = 0; i < 100000; i++) {
		if (fake_gate_waiting() >= o->want && (!o->submitted || atomic_load(o->submitted)))
			break;
		usleep(100);
	}
	fake_gate_open();
	return NULL;
}

/* Submit one read of len with nheld others in flight, the gate closed,
 * and check who serves it: inline, the submitter (done() on this thread,
 * before the submit returned: the submitter waits at the gate until the
 * others and it are there); else a worker (the submit returns while the
 * worker waits at the gate, done() comes on that thread after).  A wrong
 * expectation fails an assertion (inline expected but not: done() on
 * another thread; a worker expected but not: the submitter is let
 * through after 10 s, and done() ran on it). */
static void expect_served_as(struct rf_array *a, int nheld, uint32_t len, bool behind, bool inl)
{
	struct bg_io b[4];
	atomic_int submitted = 0;
	struct opener o = { .want = nheld + 1, .submitted = inl ? NULL : &submitted };
	struct creq c;

	fake_reset();
	creq_init(&c, a, len);
	c.submitted = &submitted;
	c.r->more_behind = behind;
	fake_gate_close();
	hold_reads(a, b, nheld);
	assert_int_equal(pthread_create(&o.th, NULL, opener_main, &o), 0);
	creq_submit(a, &c, RF_REQ_READ, 1u << 20, len);
	if (!inl)
		assert_false(atomic_load(&c.done));
	atomic_store(&submitted, 1);
	pthread_join(o.th, NULL);
	creq_wait(&c);
	if (inl != pthread_equal(c.thread, pthread_self()))
		fail_msg("%s, %d in flight, %u bytes: served %s, expected %s", a->ops->name, nheld, len,
			 inl ? "by a worker" : "by the submitter", inl ? "by the submitter" : "by a worker");
	assert_int_equal(atomic_load(&c.returned), !inl);
	release_reads(b, nheld);
	assert_int_equal(c.err, 0);
	assert_int_equal(atomic_load(&c.ndone), 1);
	creq_free(&c);
	fake_reset();
}

static void expect_served(struct rf_array *a, int nheld, uint32_t len, bool inl)
{
	expect_served_as(a, nheld, len, false, inl);
}

static void test_inline_or_groups(void **state)
{
	struct rf_array *a;

	/* no group threads: always the submitter */
	a = open_spec(&specs[0], 0);
	expect_served(a, 0, 4096, true);
	expect_served(a, 3, 4096, true);
	expect_served_as(a, 0, 4096, true, true);
	rf_array_close(a);
	/* raid0 with group threads: quiet or large on the submitter */
	a = open_spec(&specs[0], 2);
	expect_served(a, 0, 4096, true);
	expect_served(a, 1, 4096, true);
	expect_served(a, 2, 4096, false);
	expect_served(a, 3, (256u << 10) - 512, false);
	expect_served(a, 3, 256u << 10, true);
	/* the submitter has more requests behind this one (a ring thread's
	 * batch): a worker, however quiet the array */
	expect_served_as(a, 0, 4096, true, false);
	expect_served_as(a, 1, 4096, true, false);
	rf_array_close(a);
	/* raid1 alike */
	a = open_spec(&specs[1], 2);
	expect_served(a, 0, 4096, true);
	expect_served(a, 1, 4096, true);
	expect_served(a, 2, 4096, false);
	expect_served(a, 2, 512u << 10, true);
	rf_array_close(a);
	/* raid5 (stripe heads) with group threads: always a worker */
	a = open_spec(&specs[4], 2);
	expect_served(a, 0, 4096, false);
	expect_served(a, 0, 256u << 10, false);
	rf_array_close(a);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test_setup(test_done_once, fx_threads2),
	cmocka_unit_test_setup(test_done_once, fx_inline0),
	cmocka_unit_test(test_tiles_negative),
	cmocka_unit_test(test_first_error_wins),
	cmocka_unit_test_setup(test_member_errno, fx_threads2),
	cmocka_unit_test_setup(test_member_errno, fx_inline0),
	cmocka_unit_test_setup(test_write_hooks, fx_threads2),
	cmocka_unit_test_setup(test_write_hooks, fx_inline0),
	cmocka_unit_test_setup(test_failed_array, fx_threads2),
	cmocka_unit_test_setup(test_failed_array, fx_inline0),
	cmocka_unit_test_setup(test_flush, fx_threads2),
	cmocka_unit_test(test_inline_or_groups),
};

int main(void)
{
	return fx_run_tests("request", tests);
}
