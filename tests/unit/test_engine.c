/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_engine.c - the array core end to end, without FUSE: random requests
 * of every level against an in-memory model, on member files, through the
 * worker groups and the fake IO backend (injected short IO, EAGAIN and
 * member failures) or liburing.  After each run the members are read
 * directly and checked: data where md's layout puts it, every mirror copy
 * equal, P and Q right for every row.
 *
 * Seed: RF_TEST_SEED (printed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "core/engine.h"
#include "fake_ioq.h"
#include "fixture.h"
#include "raidfuse/parity.h"
#include "raidfuse/stack.h"

#define MEMBER_BYTES (2u << 20)
#define DATA_OFFSET (64u << 10)

/* Each level test runs with worker threads (fx_threads2) and inline, the
 * submitter doing the work (fx_inline0). */

struct spec {
	const char *what;
	int level, layout, n;
	uint32_t chunk;
	uint32_t stripe_size;   /* 0: 4096 */
};

static const struct spec specs[] = {
	{ "raid0", 0, 0, 3, 16384, 0 },
	{ "raid1", 1, 0, 2, 0, 0 },
	{ "raid1x3", 1, 0, 3, 0, 0 },
	{ "raid4", 4, 5, 4, 16384, 0 },
	{ "raid5-la", 5, 0, 4, 16384, 0 },
	{ "raid5-ra", 5, 1, 3, 8192, 0 },
	{ "raid5-ls", 5, 2, 5, 16384, 0 },
	{ "raid5-rs", 5, 3, 4, 4096, 0 },
	{ "raid5-p0", 5, 4, 4, 16384, 0 },
	{ "raid5-pn", 5, 5, 4, 16384, 0 },
	{ "raid6-ls", 6, 2, 5, 16384, 0 },
	{ "raid6-la", 6, 0, 6, 8192, 0 },
	{ "raid6-ddf-nc", 6, 10, 5, 16384, 0 },
	{ "raid6-ddf-zr", 6, 8, 4, 16384, 0 },
	{ "raid6-ls6", 6, 18, 5, 16384, 0 },
	{ "raid5-ss16k", 5, 2, 4, 65536, 16384 },
	{ "raid6-ss8k", 6, 2, 6, 32768, 8192 },
	{ "raid10-n2", 10, 0x102, 4, 16384, 0 },
	{ "raid10-f2", 10, 0x201, 4, 16384, 0 },
	{ "raid10-o2", 10, 0x10201, 3, 16384, 0 },
	{ "raid10-n3", 10, 0x103, 3, 16384, 0 },
};

#define MAXLEN (192u << 10)

struct sync_req {
	struct rf_req *r;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done, err;
};

static void sync_done(struct rf_req *r, int err)
{
	struct sync_req *s = r->priv;

	pthread_mutex_lock(&s->lock);
	s->done = 1;
	s->err = err;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* A request of up to MAXLEN bytes on buf, ended through sync_done(). */
static void sync_init(struct sync_req *s, struct rf_array *a, char *buf)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->r = rf_req_alloc(a, MAXLEN);
	s->r->buf = buf;
	s->r->priv = s;
	s->r->done = sync_done;
}

static struct rf_array *open_array(const struct spec *sp, uint64_t missing, bool fresh, bool fake)
{
	const struct fx_array fa = { .what = sp->what, .level = sp->level, .layout = sp->layout, .n = sp->n,
				     .chunk = sp->chunk, .stripe_size = sp->stripe_size,
				     .data_offset = DATA_OFFSET, .missing = missing };

	if (fresh)
		fx_make_members(sp->what, sp->n, MEMBER_BYTES, false);
	return fx_open_spec(&fa, fx_gtc, fake ? fake_ioq_init : NULL);
}

/* Run a batch of requests at once and wait for all. */
static void run_batch(struct rf_array *a, struct sync_req *s, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		s[i].done = 0;
		rf_req_submit(a, s[i].r);
	}
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&s[i].lock);
		while (!s[i].done)
			pthread_cond_wait(&s[i].cond, &s[i].lock);
		pthread_mutex_unlock(&s[i].lock);
	}
}

#define BATCH 8

/* Random IO against model; expect_err: requests may fail with -EIO. */
static void random_io(struct rf_array *a, char *model, int rounds, bool check_reads)
{
	uint64_t size = rf_array_size(a);
	static struct sync_req s[BATCH];
	int round, i, j;

	for (i = 0; i < BATCH; i++)
		sync_init(&s[i], a, malloc(MAXLEN));
	for (round = 0; round < rounds; round++) {
		for (i = 0; i < BATCH; i++) {
			struct rf_req *r = s[i].r;
			uint64_t len = 1 + fx_rand() % MAXLEN;
			bool overlap;

			switch (fx_rand() % 4) {
			case 0: len = 4096 * (1 + fx_rand() % 48); break;     /* aligned */
			case 1: len = 512 * (1 + fx_rand() % 300); break;     /* sectors */
			default: break;                                   /* bytes */
			}
			do {
				r->off = fx_rand() % size;
				if (fx_rand() % 2)
					r->off &= ~4095ull;
				if (r->off + len > size)
					r->off = size - len;
				overlap = false;
				for (j = 0; j < i; j++)
					if (r->off < s[j].r->off + s[j].r->len && s[j].r->off < r->off + len)
						overlap = true;
			} while (overlap);
			r->len = (uint32_t)len;
			r->op = fx_rand() % 2 ? RF_REQ_WRITE : RF_REQ_READ;
			if (r->op == RF_REQ_WRITE)
				fx_rand_fill(r->buf, len);
		}
		run_batch(a, s, BATCH);
		for (i = 0; i < BATCH; i++) {
			struct rf_req *r = s[i].r;

			assert_int_equal(s[i].err, 0);
			if (r->op == RF_REQ_WRITE)
				memcpy(model + r->off, r->buf, r->len);
			else if (check_reads && memcmp(model + r->off, r->buf, r->len))
				fail_msg("read %u bytes at %llu differs from what was written", r->len,
					 (unsigned long long)r->off);
		}
	}
	/* A flush reaches every member. */
	s[0].r->op = RF_REQ_FLUSH;
	run_batch(a, s, 1);
	assert_int_equal(s[0].err, 0);
	for (i = 0; i < BATCH; i++) {
		free(s[i].r->buf);
		rf_req_free(s[i].r);
	}
}

/* Read the whole array back through the engine. */
static void read_all(struct rf_array *a, const char *model)
{
	uint64_t size = rf_array_size(a), off;
	struct sync_req s;

	sync_init(&s, a, malloc(MAXLEN));
	for (off = 0; off < size; off += MAXLEN) {
		s.r->off = off;
		s.r->len = (uint32_t)(size - off < MAXLEN ? size - off : MAXLEN);
		s.r->op = RF_REQ_READ;
		run_batch(a, &s, 1);
		assert_int_equal(s.err, 0);
		if (memcmp(s.r->buf, model + off, s.r->len))
			fail_msg("array read at %llu differs from the model", (unsigned long long)off);
	}
	free(s.r->buf);
	rf_req_free(s.r);
}

/* Check the members on disk: every data sector where md puts it, mirror
 * copies, P and Q.  skip: members not to look at (failed ones). */
static void check_members(const struct spec *sp, const struct rf_geom *g, const char *model, uint64_t skip)
{
	int fds[RF_MAX_MEMBERS], i, k, n;
	uint64_t s, nsec = g->array_sectors;
	char blk[512];

	for (i = 0; i < sp->n; i++) {
		char p[512];

		fx_member_path(p, sizeof(p), sp->what, i);
		fds[i] = open(p, O_RDONLY);
		assert_true(fds[i] >= 0);
	}
	for (s = 0; s < nsec; s++) {
		int devs[RF_MAX_MEMBERS];
		uint64_t addrs[RF_MAX_MEMBERS];

		if (g->level == 0) {
			n = 1;
			rf_r0_map(g, s, &devs[0], &addrs[0]);
		} else if (g->level == 1) {
			n = sp->n;
			for (i = 0; i < n; i++) {
				devs[i] = i;
				addrs[i] = s;
			}
		} else if (g->level == 10) {
			n = rf_r10_map(g, s, devs, addrs);
		} else {
			struct rf_r5_map m;

			rf_r5_map_sector(g, s, &m);
			n = 1;
			devs[0] = m.dd_idx;
			addrs[0] = m.dev_sector;
		}
		for (i = 0; i < n; i++) {
			if (skip & (1ull << devs[i]))
				continue;
			assert_int_equal(pread(fds[devs[i]], blk, 512, DATA_OFFSET + addrs[i] * 512), 512);
			if (memcmp(blk, model + s * 512, 512))
				fail_msg("%s: sector %llu: member %d at %llu is not the data", sp->what,
					 (unsigned long long)s, devs[i], (unsigned long long)addrs[i]);
		}
	}
	if (g->level >= 4 && g->level <= 6 && !skip) {
		uint64_t row, ds;
		static char cols[RF_MAX_MEMBERS][4096], p[4096], q[4096], zero[4096];

		for (ds = 0; ds < g->dev_sectors; ds += 8) {
			struct rf_r5_row r;
			void *data[RF_MAX_MEMBERS];

			row = ds / g->chunk_sectors;
			rf_r5_row(g, row, &r);
			for (i = 0; i < sp->n; i++)
				assert_int_equal(pread(fds[i], cols[i], 4096, DATA_OFFSET + ds * 512), 4096);
			if (r.qd_idx < 0) {
				for (k = 0; k < g->data_disks; k++)
					data[k] = cols[r.data_member[k]];
				rf_ref_xor_gen(g->data_disks, 4096, data, p);
			} else {
				for (k = 0; k < r.syndrome_disks; k++)
					data[k] = zero;
				for (k = 0; k < g->data_disks; k++)
					data[r.qslot[r.data_member[k]]] = cols[r.data_member[k]];
				rf_ref_pq_gen(r.syndrome_disks, 4096, data, p, q);
				if (memcmp(q, cols[r.qd_idx], 4096))
					fail_msg("%s: Q wrong at member sector %llu", sp->what, (unsigned long long)ds);
			}
			if (memcmp(p, cols[r.pd_idx], 4096))
				fail_msg("%s: P wrong at member sector %llu", sp->what, (unsigned long long)ds);
		}
	}
	for (i = 0; i < sp->n; i++)
		close(fds[i]);
}

/* Every level, healthy, liburing backend (members in memory: mapped). */
static void test_levels_uring(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		const struct spec *sp = &specs[i];
		struct rf_array *a = open_array(sp, 0, true, false);
		struct rf_geom g = *rf_array_geom(a);
		char *model = calloc(1, rf_array_size(a));

		random_io(a, model, 40, true);
		read_all(a, model);
		/* Members in memory: rows written whole got their parity
		 * computed in the parity members' mappings (checked below,
		 * with the rows written in part after them). */
		if (g.level >= 4 && g.level <= 6 && rf_fdmap_on() && fx_in_memory(sp->what))
			assert_true(atomic_load(&a->stats.parity_mapped) > 0);
		rf_array_close(a);
		check_members(sp, &g, model, 0);
		free(model);
	}
}

/* Short transfers and EAGAIN everywhere: same results. */
/* Random IO on fresh members of sp through the fake backend, faults as
 * set; then every member checked against what was written. */
static void faulted_run(const struct spec *sp)
{
	struct rf_array *a = open_array(sp, 0, true, true);
	struct rf_geom g = *rf_array_geom(a);
	char *model = calloc(1, rf_array_size(a));

	random_io(a, model, 20, true);
	rf_array_close(a);
	check_members(sp, &g, model, 0);
	free(model);
}

static void test_levels_short_again(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		fake_reset();
		fake_short_every = 7;
		fake_again_every = 11;
		fake_busy_depth = 5;
		faulted_run(&specs[i]);
		assert_true(fake_nr_short > 0 && fake_nr_again > 0);
	}
	fake_reset();
}

/* Short transfers and back-pressure on one member only (the slow or
 * congested disk): every level retries that member's IO and nothing else
 * sees a fault; the data on every member is still right. */
static void test_one_member_short_again(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		const struct spec *sp = &specs[i];
		int m;

		fake_reset();
		fake_inject_members = 1ull << 1;
		fake_short_every = 3;
		fake_again_every = 5;
		faulted_run(sp);
		if (!fake_nr_short_m[1] || !fake_nr_again_m[1])
			fail_msg("%s: member 1: %d short, %d -EAGAIN injected", sp->what, fake_nr_short_m[1],
				 fake_nr_again_m[1]);
		for (m = 0; m < sp->n; m++)
			if (m != 1 && (fake_nr_short_m[m] || fake_nr_again_m[m]))
				fail_msg("%s: member %d got faults meant for member 1", sp->what, m);
	}
	fake_reset();
}

/* A member fails in the middle of the run (every IO to it returns EIO
 * after a while): redundant levels go on serving right data, and the
 * surviving members still hold it (the failed one reconstructs from them
 * on a fresh assembly with it "missing"). */
static void test_member_fails(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		const struct spec *sp = &specs[i];
		struct rf_array *a;
		struct rf_geom g;
		char *model;
		int victim = 1;

		if (sp->level == 0)
			continue;
		fake_reset();
		fake_fail_member = victim;
		fake_fail_after = 60;
		a = open_array(sp, 0, true, true);
		g = *rf_array_geom(a);
		model = calloc(1, rf_array_size(a));
		random_io(a, model, 30, true);
		assert_true(fake_nr_failed > 0);
		assert_true(rf_array_faulty(a) == (1ull << victim));
		read_all(a, model);
		rf_array_close(a);
		fake_reset();
		check_members(sp, &g, model, 1ull << victim);
		/* Reassemble without the failed member: everything reads back. */
		a = open_array(sp, 1ull << victim, false, false);
		read_all(a, model);
		rf_array_close(a);
		free(model);
	}
}

/* raid6 with one member missing from the start and another failing during
 * the run: still right; a third failure fails the array with EIO. */
static void test_raid6_double(void **state)
{
	const struct spec sp = { "raid6-double", 6, 2, 5, 16384, 0 };
	struct rf_array *a;
	struct sync_req s;
	char *model;

	/* Fill healthy first, then lose two. */
	a = open_array(&sp, 0, true, false);
	model = calloc(1, rf_array_size(a));
	random_io(a, model, 20, true);
	rf_array_close(a);

	fake_reset();
	fake_fail_member = 3;
	fake_fail_after = 10;
	a = open_array(&sp, 1ull << 0, false, true);
	random_io(a, model, 20, true);
	read_all(a, model);
	assert_true(rf_array_faulty(a) == ((1ull << 0) | (1ull << 3)));
	assert_false(rf_array_failed(a));
	fake_fail_member = 4;
	fake_fail_after = 0;
	/* A write that hits member 4 fails the array; afterwards every request ends with EIO. */
	sync_init(&s, a, calloc(1, MAXLEN));
	s.r->op = RF_REQ_WRITE;
	s.r->off = 0;
	s.r->len = MAXLEN;
	run_batch(a, &s, 1);
	assert_true(rf_array_failed(a));
	assert_int_equal(s.err, -EIO);
	s.r->op = RF_REQ_READ;
	run_batch(a, &s, 1);
	assert_int_equal(s.err, -EIO);
	free(s.r->buf);
	rf_req_free(s.r);
	rf_array_close(a);
	fake_reset();
	free(model);
}

static void one_req(struct rf_array *a, int op, uint64_t off, uint32_t len, char *buf)
{
	struct sync_req s;

	sync_init(&s, a, buf);
	s.r->op = (uint8_t)op;
	s.r->off = off;
	s.r->len = len;
	run_batch(a, &s, 1);
	assert_int_equal(s.err, 0);
	rf_req_free(s.r);
}

/* A flush is one fsync per member, whatever the level counts per byte: a
 * raid0 of 6 members whose chunk is larger than the largest request once
 * had room for 2 pieces, and its flush ran off the end (a NULL piece, a
 * daemon crash on fsync).  Here: requests of at most 192 KiB, chunk 1 MiB. */
static void test_flush_every_member(void **state)
{
	const struct spec sp = { "flush0", 0, 0, 6, 1u << 20, 0 };
	struct rf_array *a;

	fake_reset();
	a = open_array(&sp, 0, true, true);
	fake_log_on = true;
	one_req(a, RF_REQ_FLUSH, 0, 0, NULL);
	assert_int_equal(fake_nlog, 6);
	for (int i = 0; i < 6; i++)
		assert_int_equal(fake_count(i, RF_MIO_FSYNC), 1);
	rf_array_close(a);
	fake_reset();
}

/* Request splitting, seen from the member IO it causes. */
static void test_split_raid0(void **state)
{
	const struct spec sp = { "split0", 0, 0, 3, 16384, 0 };
	struct rf_array *a;
	static char buf[MAXLEN];

	fake_reset();
	a = open_array(&sp, 0, true, true);
	fake_log_on = true;
	/* 36 KiB from 12 KiB: 4 KiB of chunk 0 (member 0), chunk 1 (member 1),
	 * chunk 2 (member 2). */
	one_req(a, RF_REQ_WRITE, 12288, 36864, buf);
	assert_int_equal(fake_nlog, 3);
	assert_int_equal(fake_count(0, RF_MIO_WRITE), 1);
	assert_int_equal(fake_count(1, RF_MIO_WRITE), 1);
	assert_int_equal(fake_count(2, RF_MIO_WRITE), 1);
	for (int i = 0; i < 3; i++) {
		const struct fake_logent *e = &fake_log[i];

		/* member 0: the last 4 KiB of chunk 0; members 1, 2: whole chunks */
		assert_int_equal(e->off, DATA_OFFSET + (e->member == 0 ? 12288 : 0));
		assert_int_equal(e->len, e->member == 0 ? 4096 : 16384);
	}
	/* One unaligned byte range inside one chunk is one member IO. */
	fake_nlog = 0;
	one_req(a, RF_REQ_READ, 16384 * 4 + 100, 333, buf);
	assert_int_equal(fake_nlog, 1);
	assert_int_equal(fake_log[0].member, 1);
	assert_int_equal(fake_log[0].off, DATA_OFFSET + 16384 + 100);
	assert_int_equal(fake_log[0].len, 333);
	rf_array_close(a);
	fake_reset();
}

/* rmw vs rcw as md plans them (rmw_level 1): a 4 KiB write into a cold
 * 5-member raid5 row reads old data + P and writes both (rmw: 2 reads
 * < 3 for rcw); a full-stripe write reads nothing; a healthy read is one
 * direct read; a write into a cached row reads nothing. */
static void test_rmw_rcw_plan(void **state)
{
	const struct spec sp = { "plan5", 5, 2, 5, 16384, 0 };
	struct rf_array *a;
	static char buf[MAXLEN];

	fake_reset();
	a = open_array(&sp, 0, true, true);
	fake_log_on = true;
	/* rmw */
	one_req(a, RF_REQ_WRITE, 4096, 4096, buf);
	assert_int_equal(fake_count(-1, RF_MIO_READ), 2);
	assert_int_equal(fake_count(-1, RF_MIO_WRITE), 2);
	/* same block again: data and P are cached, no reads */
	fake_nlog = 0;
	one_req(a, RF_REQ_WRITE, 4096 + 512, 1024, buf);
	assert_int_equal(fake_count(-1, RF_MIO_READ), 0);
	assert_int_equal(fake_count(-1, RF_MIO_WRITE), 2);
	/* full stripe of a second row: 4 data chunks, every 4 KiB block
	 * fully written: no reads, all 5 columns written, each member's
	 * blocks merged where one worker handled neighbouring heads */
	fake_nlog = 0;
	one_req(a, RF_REQ_WRITE, 4 * 16384, 4 * 16384, buf);
	assert_int_equal(fake_count(-1, RF_MIO_READ), 0);
	for (int m = 0; m < 5; m++)
		assert_int_equal(fake_bytes(m, RF_MIO_WRITE), 16384);
	assert_in_range(fake_count(-1, RF_MIO_WRITE), 5, 5 * 4);
	/* a healthy read: one member read, straight from the member */
	fake_nlog = 0;
	one_req(a, RF_REQ_READ, 8 * 16384 + 4096, 8192, buf);
	assert_int_equal(fake_nlog, 1);
	assert_int_equal(fake_log[0].op, RF_MIO_READ);
	assert_int_equal(fake_log[0].len, 8192);
	rf_array_close(a);
	fake_reset();
}

static void wait_req(struct sync_req *s)
{
	pthread_mutex_lock(&s->lock);
	while (!s->done)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

static void submit(struct rf_array *a, struct sync_req *s, uint64_t off, uint32_t len)
{
	s->r->off = off;
	s->r->len = len;
	s->done = 0;
	rf_req_submit(a, s->r);
}

/* Delayed stripe heads, inline (group_thread_cnt 0).  A 4-member raid5,
 * chunk 16 KiB: a 32 KiB write at 0 fills columns 0 and 1 of row 0's four
 * heads, and the 16 KiB write after it fills column 2.  While another
 * submitter drives (here: this thread holds an inline worker of its own
 * around the two), the first one's heads are held instead of reading
 * column 2, and the second one fills them: no member read at all, each
 * head written once (without the hold: 4 reads, parity written twice).
 * Negative controls: a lone partial write, with nobody else driving, is
 * not held and pre-reads; one held with nobody coming to fill it runs
 * when the last submitter leaves (no hang), pre-reading, or at a flush. */
static void test_delayed_full_stripe(void **state)
{
	const struct spec sp = { "delay5", 5, 2, 4, 16384, 0 };
	struct rf_worker *outer, *saved;
	struct sync_req s[2];
	struct rf_array *a;
	static char buf[2][MAXLEN];
	uint64_t held, released, full;
	int err;

	fake_reset();
	/* The hold is what is tested, not its 1 ms bound: a loaded machine
	 * (a sanitizer build beside other tests) may take longer than that
	 * between the two submissions. */
	rf_delay_bound_ns = 10000000000ull;
	a = open_array(&sp, 0, true, true);
	for (int i = 0; i < 2; i++) {
		fx_rand_fill(buf[i], MAXLEN);
		sync_init(&s[i], a, buf[i]);
		s[i].r->op = RF_REQ_WRITE;
	}
	fake_log_on = true;

	/* Two requests back to back while another submitter drives. */
	outer = rf_inline_begin(a, &saved, &err);
	assert_non_null(outer);
	submit(a, &s[0], 0, 2 * 16384);
	assert_int_equal(s[0].done, 0);         /* held: not acknowledged */
	assert_int_equal(atomic_load(&a->stats.delayed), 4);
	submit(a, &s[1], 2 * 16384, 16384);
	rf_inline_end(a, outer, saved);
	wait_req(&s[0]);
	wait_req(&s[1]);
	assert_int_equal(s[0].err, 0);
	assert_int_equal(s[1].err, 0);
	assert_int_equal(fake_count(-1, RF_MIO_READ), 0);
	for (int m = 0; m < 4; m++)
		assert_int_equal(fake_bytes(m, RF_MIO_WRITE), 16384);
	assert_int_equal(atomic_load(&a->stats.full), 4);
	assert_int_equal(atomic_load(&a->stats.released), 0);
	/* each data column went to its member from the request's buffer */
	assert_int_equal(atomic_load(&a->stats.direct), 4 * 3);

	/* Negative control: nobody else drives, so nothing is held; the
	 * lone partial write of row 1 reads column 2 and ends. */
	fake_nlog = 0;
	held = atomic_load(&a->stats.delayed);
	submit(a, &s[0], 3 * 16384, 2 * 16384);
	wait_req(&s[0]);
	assert_int_equal(s[0].err, 0);
	assert_int_equal(atomic_load(&a->stats.delayed), held);
	assert_int_equal(fake_bytes(-1, RF_MIO_READ), 16384);

	/* Held with nobody to fill it: the last submitter out runs it. */
	fake_nlog = 0;
	released = atomic_load(&a->stats.released);
	full = atomic_load(&a->stats.full);
	outer = rf_inline_begin(a, &saved, &err);
	assert_non_null(outer);
	submit(a, &s[0], 6 * 16384, 2 * 16384);
	assert_int_equal(s[0].done, 0);
	assert_int_equal(atomic_load(&a->stats.delayed), held + 4);
	assert_int_equal(fake_count(-1, RF_MIO_READ), 0);
	rf_inline_end(a, outer, saved);
	assert_int_equal(s[0].done, 1);         /* served before the last one left */
	assert_int_equal(s[0].err, 0);
	assert_int_equal(atomic_load(&a->stats.released), released + 4);
	assert_int_equal(atomic_load(&a->stats.full), full);
	assert_int_equal(fake_bytes(-1, RF_MIO_READ), 16384);

	/* Held, another submitter still driving: a flush runs it. */
	outer = rf_inline_begin(a, &saved, &err);
	assert_non_null(outer);
	submit(a, &s[0], 9 * 16384, 2 * 16384);
	assert_int_equal(s[0].done, 0);
	s[1].r->op = RF_REQ_FLUSH;
	submit(a, &s[1], 0, 0);
	wait_req(&s[1]);
	assert_int_equal(s[1].err, 0);
	assert_int_equal(s[0].done, 1);
	assert_int_equal(s[0].err, 0);
	rf_inline_end(a, outer, saved);

	rf_array_close(a);
	rf_delay_bound_ns = 1000000;
	for (int i = 0; i < 2; i++)
		rf_req_free(s[i].r);
	fake_reset();
}

/* Delayed stripe heads with group threads: while another write is in
 * flight (here: counted at the barrier by the test), the worker holds a
 * partial row of a large write and waits; with nothing coming to fill it,
 * the bound releases it and it pre-reads and ends (no hang). */
static void test_delayed_bound_threads(void **state)
{
	const struct spec sp = { "delay5t", 5, 2, 4, 16384, 0 };
	struct sync_req s;
	struct rf_array *a;
	static char buf[MAXLEN];

	fake_reset();
	a = open_array(&sp, 0, true, true);
	fx_rand_fill(buf, MAXLEN);
	sync_init(&s, a, buf);
	s.r->op = RF_REQ_WRITE;
	fake_log_on = true;
	atomic_fetch_add(&a->inflight[1], 1);
	submit(a, &s, 0, 2 * 16384);
	wait_req(&s);
	atomic_fetch_sub(&a->inflight[1], 1);
	assert_int_equal(s.err, 0);
	assert_int_equal(atomic_load(&a->stats.delayed), 4);
	assert_int_equal(atomic_load(&a->stats.released), 4);
	assert_int_equal(fake_bytes(-1, RF_MIO_READ), 16384);
	rf_array_close(a);
	rf_req_free(s.r);
	fake_reset();
}

/* group_thread_cnt that the config leaves unset (-1): the array takes one
 * worker thread per group where a member is on a disk file system (the
 * FUSE thread must not wait for its member IO there), none (inline) where
 * every member is in memory; a value given is kept (0 on a disk: the
 * control that the choice is the unset value's alone). */
static int auto_threads(const char *dir, int gtc)
{
	struct rf_config cfg;
	struct rf_array_info info;
	struct rf_array *a;
	char err[512];
	int i;

	testcfg_init(&cfg, 5, 2, 4, 16384);
	cfg.group_thread_cnt = gtc;
	for (i = 0; i < 4; i++) {
		char p[FX_PATH];

		snprintf(p, sizeof(p), "%s/auto-%d.img", dir, i);
		close(fx_file_open(p, 1u << 20));
		cfg.members[i] = strdup(p);
	}
	if (rf_array_open(&cfg, &a, err, sizeof(err)))
		fail_msg("%s: %s", dir, err);
	rf_array_get_info(a, &info);
	rf_array_close(a);
	for (i = 0; i < 4; i++) {
		unlink(cfg.members[i]);
		free(cfg.members[i]);
	}
	return info.group_thread_cnt;
}

static bool dir_in_memory(const char *dir)
{
	struct statfs sf;

	assert_int_equal(statfs(dir, &sf), 0);
	return sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC;
}

static void test_auto_threads(void **state)
{
	char disk[] = "/var/tmp/rf-auto-XXXXXX";

	if (dir_in_memory(fx_dir))
		assert_int_equal(auto_threads(fx_dir, -1), 0);
	assert_int_equal(auto_threads(fx_dir, 3), 3);
	assert_non_null(mkdtemp(disk));
	if (!dir_in_memory(disk)) {
		assert_int_equal(auto_threads(disk, -1), 1);
		assert_int_equal(auto_threads(disk, 0), 0);
	} else {
		print_message("/var/tmp is in memory here: the disk case is not run\n");
	}
	rmdir(disk);
}

/* Opening refuses what it cannot serve, naming the member. */
static void test_open_errors(void **state)
{
	struct rf_config cfg;
	struct rf_array *a;
	char err[512], p[512];

	memset(&cfg, 0, sizeof(cfg));
	cfg.path = "test.conf";
	cfg.name = "x";
	cfg.level = 5;
	cfg.layout = 2;
	cfg.chunk_bytes = 65536;
	cfg.nmembers = 3;
	cfg.stripe_cache_size = 64;
	cfg.stripe_size = 4096;
	snprintf(p, sizeof(p), "%s/nonexistent.img", fx_dir);
	cfg.members[0] = p;
	assert_int_equal(rf_array_open(&cfg, &a, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "member 0"));
	assert_non_null(strstr(err, "nonexistent.img"));

	snprintf(p, sizeof(p), "%s/small.img", fx_dir);
	fx_file_make(p, 4096);
	assert_int_equal(rf_array_open(&cfg, &a, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, "small.img"));
	/* Two missing of a raid5. */
	cfg.members[0] = NULL;
	assert_int_equal(rf_array_open(&cfg, &a, err, sizeof(err)), -EINVAL);
	/* Nothing was written: the small member is still 4096 zero bytes. */
	{
		struct stat st;

		assert_int_equal(stat(p, &st), 0);
		assert_int_equal(st.st_size, 4096);
	}
	/* Levels come from the stack (hooks.h): an md level no level of it
	 * serves, and a program that set none, are refused by name. */
	cfg.level = 3;
	assert_int_equal(rf_array_open(&cfg, &a, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "level 3 is not supported"));
	cfg.level = 5;
	rf_stack_set(NULL);
	assert_int_equal(rf_array_open(&cfg, &a, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "set no levels"));
	rf_stack_set(&rf_stack_default);

	/* Spares too small: every one named, not only the first. */
	{
		char mp[3][FX_PATH], sp[3][FX_PATH];
		int i;

		for (i = 0; i < 3; i++) {
			snprintf(mp[i], FX_PATH, "%s/whole-%d.img", fx_dir, i);
			fx_file_make(mp[i], 1 << 20);
			cfg.members[i] = mp[i];
			snprintf(sp[i], FX_PATH, "%s/spare-%d.img", fx_dir, i);
			fx_file_make(sp[i], i == 1 ? 1 << 20 : 8192);
			cfg.spares[i] = sp[i];
		}
		cfg.nspares = 3;
		assert_int_equal(rf_array_open(&cfg, &a, err, sizeof(err)), -ENOSPC);
		if (!strstr(err, "spare 0 (") || !strstr(err, sp[0]) || !strstr(err, "spare 2 (") ||
		    !strstr(err, sp[2]) || strstr(err, sp[1]))
			fail_msg("too small spares: %s", err);
		/* Whole ones are served. */
		fx_file_make(sp[0], 1 << 20);
		fx_file_make(sp[2], 1 << 20);
		assert_int_equal(rf_array_open(&cfg, &a, err, sizeof(err)), 0);
		rf_array_close(a);
		cfg.nspares = 0;
	}
}

/* Each md level finds its level's ops in the program's stack. */
static void test_stack_levels(void **state)
{
	static const struct {
		int level;
		const struct rf_level_ops *ops;
	} want[] = { { 0, &rf_raid0_ops }, { 1, &rf_raid1_ops }, { 4, &rf_raid5_ops }, { 5, &rf_raid5_ops },
		     { 6, &rf_raid5_ops }, { 10, &rf_raid10_ops } };
	const struct rf_level_ops *const *l;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct rf_level_ops *found = NULL;

		for (l = rf_stack_default.levels; *l; l++)
			if ((*l)->md_levels >> want[i].level & 1) {
				assert_null(found);     /* one level per md level */
				found = *l;
			}
		assert_ptr_equal(found, want[i].ops);
	}
	assert_non_null(rf_stack_default.mgmt);
	assert_non_null(rf_stack_default.services[0]);
}

static int setup(void **state)
{
	return fx_dir_make("engine");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_auto_threads),
		cmocka_unit_test(test_stack_levels),
		cmocka_unit_test(test_split_raid0),
		cmocka_unit_test(test_flush_every_member),
		cmocka_unit_test(test_rmw_rcw_plan),
		cmocka_unit_test_setup(test_delayed_full_stripe, fx_inline0),
		cmocka_unit_test_setup(test_delayed_bound_threads, fx_threads2),
		cmocka_unit_test_setup(test_levels_uring, fx_threads2),
		cmocka_unit_test_setup(test_levels_short_again, fx_threads2),
		cmocka_unit_test_setup(test_one_member_short_again, fx_threads2),
		cmocka_unit_test_setup(test_member_fails, fx_threads2),
		cmocka_unit_test_setup(test_raid6_double, fx_threads2),
		cmocka_unit_test_setup(test_levels_uring, fx_inline0),
		cmocka_unit_test_setup(test_levels_short_again, fx_inline0),
		cmocka_unit_test_setup(test_one_member_short_again, fx_inline0),
		cmocka_unit_test_setup(test_member_fails, fx_inline0),
		cmocka_unit_test_setup(test_raid6_double, fx_inline0),
	};

	return fx_run_tests_with(tests, setup, fx_group_teardown);
}
