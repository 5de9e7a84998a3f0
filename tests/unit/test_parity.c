/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_parity.c - the ISA-L paths of parity.c against its byte-at-a-time
 * references, and both against hand-computed values.
 *
 * Matrix (after ISA-L's raid/pq_gen_test.c): 1..16 data blocks, lengths
 * 32, 64, 4096, 4096+32 and 65536, and five placements of the blocks:
 * all 64-byte aligned, all at +32, mixed 0/+32 (these take xor_gen and
 * pq_gen), one block at +8, and every block at an odd offset (these take the
 * fallbacks).  Every block is surrounded by guard bytes, checked after each
 * call, so a write past len is caught even where ASan cannot see it.
 *
 * Data is random from a fixed seed, printed at start; set RF_TEST_SEED
 * (decimal or 0x...) to replay a failure.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fixture.h"
#include "raidfuse/parity.h"

#define GUARD           64
#define GUARD_BYTE      0xa5
#define MAX_BLK         (257 + 2)
#define NMODES          5

/* One block at a chosen offset from a 64-byte boundary, guarded both sides. */
struct blk {
	uint8_t *base;
	uint8_t *p;
	size_t off, len;
};

static void blk_alloc(struct blk *b, size_t len, size_t off)
{
	size_t total = (off + len + GUARD + 63) & ~(size_t)63;

	b->base = aligned_alloc(64, total);
	assert_non_null(b->base);
	memset(b->base, GUARD_BYTE, total);
	b->p = b->base + off;
	b->off = off;
	b->len = len;
}

static void blk_check(const struct blk *b, const char *what)
{
	size_t i;

	for (i = 0; i < b->off; i++)
		if (b->base[i] != GUARD_BYTE)
			fail_msg("%s: guard byte %zu before the block overwritten", what, b->off - i);
	for (i = 0; i < GUARD; i++)
		if (b->p[b->len + i] != GUARD_BYTE)
			fail_msg("%s: guard byte %zu after the block (len %zu) overwritten", what, i, b->len);
}

/* Offset of block i of cnt in placement mode m. */
static size_t mode_off(int m, int i, int cnt)
{
	switch (m) {
	case 0:
		return 0;
	case 1:
		return 32;
	case 2:
		return (i & 1) ? 32 : 0;
	case 3:
		return i == cnt / 2 ? 8 : 0;
	default:
		return 1 + (size_t)(i % 7) * 2;
	}
}

static const char *mode_name[NMODES] = {
	"aligned64", "aligned+32", "mixed0/32", "one+8", "odd",
};

/* A row of cnt blocks. */
struct row {
	int cnt;
	struct blk b[MAX_BLK];
	void *v[MAX_BLK];
};

static void row_alloc(struct row *r, int cnt, size_t len, int mode)
{
	int i;

	r->cnt = cnt;
	for (i = 0; i < cnt; i++) {
		blk_alloc(&r->b[i], len, mode_off(mode, i, cnt));
		r->v[i] = r->b[i].p;
	}
}

static void row_check(const struct row *r, const char *what)
{
	int i;

	for (i = 0; i < r->cnt; i++)
		blk_check(&r->b[i], what);
}

static void row_free(struct row *r)
{
	int i;

	for (i = 0; i < r->cnt; i++)
		free(r->b[i].base);
	r->cnt = 0;
}

static void expect_same(const void *got, const void *want, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void expect_same(const void *got, const void *want, size_t len, const char *fmt, ...)
{
	const uint8_t *g = got, *w = want;
	char what[160];
	va_list ap;
	size_t i;

	if (!memcmp(g, w, len))
		return;
	for (i = 0; g[i] == w[i]; i++)
		;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	fail_msg("%s: byte %zu of %zu is 0x%02x, expected 0x%02x (seed 0x%llx)", what, i, len,
		 g[i], w[i], (unsigned long long)fx_seed);
}

static const size_t gen_lens[] = { 32, 64, 4096, 4096 + 32, 65536 };
#define NLENS (sizeof(gen_lens) / sizeof(gen_lens[0]))

/* ---------------------------------------------------------------------- */

/*
 * First use from several threads at once: the lazy tables (pthread_once)
 * and the per-thread ec tables.  Runs first, before anything has built the
 * tables; meant for the TSan build as much as for the result.
 */
#define NTHREADS 4

struct thread_job {
	uint64_t seed;
	int n;
	bool ok;
};

static void *thread_recover(void *arg)
{
	struct thread_job *job = arg;
	const size_t len = 4096;
	uint8_t *mem, *want[2];
	void *v[16 + 2];
	int i, round;

	job->ok = false;
	mem = aligned_alloc(64, (size_t)(job->n + 2) * len);
	want[0] = malloc(len);
	want[1] = malloc(len);
	if (!mem || !want[0] || !want[1])
		goto out;
	for (i = 0; i < job->n + 2; i++)
		v[i] = mem + (size_t)i * len;
	for (i = 0; i < job->n * (int)len; i++)
		mem[i] = (uint8_t)((uint64_t)i * job->seed >> 7);
	rf_pq_gen(job->n, len, v, v[job->n], v[job->n + 1]);
	for (round = 0; round < 50; round++) {
		int fa = round % job->n, fb = (round + 1 + round / job->n) % (job->n + 2);

		if (fa == fb)
			continue;
		memcpy(want[0], v[fa], len);
		memcpy(want[1], v[fb], len);
		memset(v[fa], 0, len);
		memset(v[fb], 0, len);
		if (rf_raid6_recover(job->n, len, v, fa, fb) ||
		    memcmp(v[fa], want[0], len) || memcmp(v[fb], want[1], len))
			goto out;
	}
	job->ok = true;
out:
	free(mem);
	free(want[0]);
	free(want[1]);
	return NULL;
}

static void test_threads_first_use(void **state)
{
	struct thread_job job[NTHREADS];
	pthread_t tid[NTHREADS];
	int i;

	for (i = 0; i < NTHREADS; i++) {
		job[i].seed = fx_seed + (uint64_t)i * 2 + 1;
		job[i].n = 4 + 3 * i;
		assert_int_equal(pthread_create(&tid[i], NULL, thread_recover, &job[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++) {
		assert_int_equal(pthread_join(tid[i], NULL), 0);
		assert_true(job[i].ok);
	}
}

static void test_known_answers(void **state)
{
	struct row r;
	uint8_t want[64];
	int i;

	/* multiply: g^7 * g = g^8 = x^8 mod 0x11d = 0x1d */
	assert_int_equal(rf_ref_gf_mul(2, 0x80), 0x1d);
	assert_int_equal(rf_ref_gf_mul(0x80, 2), 0x1d);
	/* g^7 * g^7 = g^14: 0x1d 0x3a 0x74 0xe8 0xcd 0x87 0x13 */
	assert_int_equal(rf_ref_gf_mul(0x80, 0x80), 0x13);
	/* (x + 1)(x^2 + x + 1) = x^3 + 1 */
	assert_int_equal(rf_ref_gf_mul(3, 7), 9);
	/* 2 * 0x8e = 0x11c = 1 mod 0x11d: 0x8e is 2's inverse */
	assert_int_equal(rf_ref_gf_mul(2, 0x8e), 1);
	assert_int_equal(rf_ref_gf_mul(0, 0xff), 0);
	assert_int_equal(rf_ref_gf_mul(1, 0xc3), 0xc3);

	/* D0 = 0x01, D1 = 0x80, D2 = 0x01: P = 0x80, Q = 1 + 2*0x80 + 4*1 =
	 * 0x01 ^ 0x1d ^ 0x04 = 0x18.  Data 0 has coefficient 1 (md's order).
	 * Aligned (pq_gen) and odd (the fallback) placements. */
	for (int mode = 0; mode < NMODES; mode += NMODES - 1) {
		row_alloc(&r, 5, 64, mode);
		memset(r.v[0], 0x01, 64);
		memset(r.v[1], 0x80, 64);
		memset(r.v[2], 0x01, 64);
		rf_pq_gen(3, 64, r.v, r.v[3], r.v[4]);
		memset(want, 0x80, 64);
		expect_same(r.v[3], want, 64, "known P, %s", mode_name[mode]);
		memset(want, 0x18, 64);
		expect_same(r.v[4], want, 64, "known Q, %s", mode_name[mode]);
		row_check(&r, "known P/Q");

		/* a single 1 in slot 8 adds g^8 = 0x1d; slot 255 wraps to g^0 */
		memset(r.v[4], 0, 64);
		memset(r.v[0], 1, 64);
		rf_q_update(64, 8, r.v[0], r.v[4]);
		memset(want, 0x1d, 64);
		expect_same(r.v[4], want, 64, "q_update slot 8, %s", mode_name[mode]);
		rf_q_update(64, 255, r.v[0], r.v[4]);
		memset(want, 0x1c, 64);
		expect_same(r.v[4], want, 64, "q_update slot 255, %s", mode_name[mode]);
		row_free(&r);
	}

	/* the references agree with the same numbers */
	{
		uint8_t d0 = 1, d1 = 0x80, d2 = 1, p, q;
		void *d[3] = { &d0, &d1, &d2 };

		rf_ref_pq_gen(3, 1, d, &p, &q);
		assert_int_equal(p, 0x80);
		assert_int_equal(q, 0x18);
		q = 0;
		rf_ref_q_update(1, 8, &d0, &q);
		assert_int_equal(q, 0x1d);
	}

	/* the reference multiply is a field: commutative, and every nonzero
	 * element has exactly one inverse */
	for (i = 1; i < 256; i++) {
		int j, inv = 0;

		for (j = 1; j < 256; j++) {
			if (rf_ref_gf_mul((uint8_t)i, (uint8_t)j) == 1)
				inv++;
			if ((j & 15) == 0)
				assert_int_equal(rf_ref_gf_mul((uint8_t)i, (uint8_t)j),
						 rf_ref_gf_mul((uint8_t)j, (uint8_t)i));
		}
		assert_int_equal(inv, 1);
	}
}

static void test_xor_gen_matrix(void **state)
{
	struct row r;
	int n, mode;
	size_t li;

	fx_rand_restart(1);
	for (n = 1; n <= 16; n++) {
		for (li = 0; li < NLENS; li++) {
			size_t len = gen_lens[li];

			for (mode = 0; mode < NMODES; mode++) {
				uint8_t *want = malloc(len), *copy = malloc(len);
				int i;

				assert_non_null(want);
				assert_non_null(copy);
				row_alloc(&r, n + 1, len, mode);
				for (i = 0; i <= n; i++)
					fx_rand_fill(r.v[i], len);
				memcpy(copy, r.v[0], len);
				rf_ref_xor_gen(n, len, r.v, want);
				rf_xor_gen(n, len, r.v, r.v[n]);
				expect_same(r.v[n], want, len, "xor_gen n=%d len=%zu %s", n, len,
					    mode_name[mode]);
				expect_same(r.v[0], copy, len, "xor_gen source 0 changed, n=%d len=%zu %s",
					    n, len, mode_name[mode]);
				row_check(&r, "xor_gen");
				row_free(&r);
				free(want);
				free(copy);
			}
		}
	}
}

static void test_pq_gen_matrix(void **state)
{
	struct row r;
	int n, mode;
	size_t li;

	fx_rand_restart(2);
	for (n = 1; n <= 16; n++) {
		for (li = 0; li < NLENS; li++) {
			size_t len = gen_lens[li];

			for (mode = 0; mode < NMODES; mode++) {
				uint8_t *wp = malloc(len), *wq = malloc(len), *copy = malloc(len);
				int i;

				assert_non_null(wp);
				assert_non_null(wq);
				assert_non_null(copy);
				row_alloc(&r, n + 2, len, mode);
				for (i = 0; i < n + 2; i++)
					fx_rand_fill(r.v[i], len);
				memcpy(copy, r.v[n - 1], len);
				rf_ref_pq_gen(n, len, r.v, wp, wq);
				rf_pq_gen(n, len, r.v, r.v[n], r.v[n + 1]);
				expect_same(r.v[n], wp, len, "pq_gen P n=%d len=%zu %s", n, len,
					    mode_name[mode]);
				expect_same(r.v[n + 1], wq, len, "pq_gen Q n=%d len=%zu %s", n, len,
					    mode_name[mode]);
				expect_same(r.v[n - 1], copy, len, "pq_gen last source changed, n=%d len=%zu %s",
					    n, len, mode_name[mode]);
				row_check(&r, "pq_gen");
				row_free(&r);
				free(wp);
				free(wq);
				free(copy);
			}
		}
	}
}

/* Lengths that are not multiples of 32: outside the header's promise, but
 * they must still be right (pq_gen refuses them, xor_gen takes them). */
static void test_gen_odd_lengths(void **state)
{
	static const size_t lens[] = { 8, 100, 4096 + 8 };
	static const int ns[] = { 1, 2, 3, 7 };
	unsigned li, ni;
	int mode, i;

	fx_rand_restart(8);
	for (ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
		for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
			for (mode = 0; mode < NMODES; mode++) {
				int n = ns[ni];
				size_t len = lens[li];
				uint8_t *wp = malloc(len), *wq = malloc(len);
				struct row r;

				assert_non_null(wp);
				assert_non_null(wq);
				row_alloc(&r, n + 2, len, mode);
				for (i = 0; i < n; i++)
					fx_rand_fill(r.v[i], len);
				rf_ref_pq_gen(n, len, r.v, wp, wq);
				rf_pq_gen(n, len, r.v, r.v[n], r.v[n + 1]);
				expect_same(r.v[n], wp, len, "odd P n=%d len=%zu %s", n, len, mode_name[mode]);
				expect_same(r.v[n + 1], wq, len, "odd Q n=%d len=%zu %s", n, len,
					    mode_name[mode]);
				rf_xor_gen(n, len, r.v, r.v[n + 1]);
				expect_same(r.v[n + 1], wp, len, "odd xor n=%d len=%zu %s", n, len,
					    mode_name[mode]);
				row_check(&r, "odd lengths");
				row_free(&r);
				free(wp);
				free(wq);
			}
		}
	}
}

/* Bigger rows than the matrix: md's limit and beyond ISA-L's 256. */
static void test_pq_gen_wide(void **state)
{
	static const int ns[] = { 64, 254, 255, 256, 257 };
	const size_t len = 4096 + 32;
	struct row r;
	unsigned k;

	fx_rand_restart(3);
	for (k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		int n = ns[k], mode, i;

		for (mode = 0; mode < NMODES; mode += NMODES - 1) {
			uint8_t *wp = malloc(len), *wq = malloc(len);

			assert_non_null(wp);
			assert_non_null(wq);
			row_alloc(&r, n + 2, len, mode);
			for (i = 0; i < n; i++)
				fx_rand_fill(r.v[i], len);
			rf_ref_pq_gen(n, len, r.v, wp, wq);
			rf_pq_gen(n, len, r.v, r.v[n], r.v[n + 1]);
			expect_same(r.v[n], wp, len, "wide P n=%d %s", n, mode_name[mode]);
			expect_same(r.v[n + 1], wq, len, "wide Q n=%d %s", n, mode_name[mode]);
			rf_xor_gen(n, len, r.v, r.v[n + 1]);
			expect_same(r.v[n + 1], wp, len, "wide xor n=%d %s", n, mode_name[mode]);
			row_check(&r, "wide");
			row_free(&r);
			free(wp);
			free(wq);
		}
	}
}

static void test_xor_into(void **state)
{
	static const size_t lens[] = { 0, 1, 31, 32, 64, 100, 4096, 4096 + 32, 65536 };
	static const size_t offs[][2] = { { 0, 0 }, { 32, 0 }, { 1, 0 }, { 0, 3 }, { 5, 9 } };
	unsigned li, oi;

	fx_rand_restart(4);
	for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		for (oi = 0; oi < sizeof(offs) / sizeof(offs[0]); oi++) {
			size_t len = lens[li], i;
			struct blk s, d;
			uint8_t *want = malloc(len + 1);

			assert_non_null(want);
			blk_alloc(&s, len, offs[oi][0]);
			blk_alloc(&d, len, offs[oi][1]);
			fx_rand_fill(s.p, len);
			fx_rand_fill(d.p, len);
			for (i = 0; i < len; i++)
				want[i] = s.p[i] ^ d.p[i];
			rf_xor_into(len, s.p, d.p);
			expect_same(d.p, want, len, "xor_into len=%zu offs %zu/%zu", len,
				    offs[oi][0], offs[oi][1]);
			blk_check(&s, "xor_into src");
			blk_check(&d, "xor_into dst");
			free(s.base);
			free(d.base);
			free(want);
		}
	}
}

/* Read-modify-write: Q + g^slot (old + new) == Q of the new row. */
static void test_q_update(void **state)
{
	static const int ns[] = { 1, 2, 5, 16 };
	static const size_t lens[] = { 32, 64, 96, 4096 + 32, 65536 };
	unsigned ni, li;
	int mode, slot, n;

	fx_rand_restart(5);
	for (ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
		n = ns[ni];
		for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
			size_t len = lens[li], i;

			for (mode = 0; mode < NMODES; mode++) {
				struct row r;
				uint8_t *delta = malloc(len), *q2 = malloc(len), *wp = malloc(len),
					*wq = malloc(len);

				assert_non_null(delta);
				assert_non_null(q2);
				assert_non_null(wp);
				assert_non_null(wq);
				row_alloc(&r, n + 2, len, mode);
				for (i = 0; i < (size_t)n; i++)
					fx_rand_fill(r.v[i], len);
				rf_pq_gen(n, len, r.v, r.v[n], r.v[n + 1]);
				for (slot = 0; slot < n; slot++) {
					uint8_t *d = r.v[slot];

					fx_rand_fill(delta, len);
					for (i = 0; i < len; i++)
						d[i] ^= delta[i];
					memcpy(q2, r.v[n + 1], len);
					rf_q_update(len, slot, delta, r.v[n + 1]);
					rf_ref_q_update(len, slot, delta, q2);
					rf_ref_pq_gen(n, len, r.v, wp, wq);
					expect_same(r.v[n + 1], wq, len, "q_update n=%d slot=%d len=%zu %s",
						    n, slot, len, mode_name[mode]);
					expect_same(q2, wq, len, "ref q_update n=%d slot=%d len=%zu", n,
						    slot, len);
					/* keep P in step for the next slot */
					rf_xor_into(len, delta, r.v[n]);
				}
				expect_same(r.v[n], wp, len, "P kept by xor_into, n=%d len=%zu", n, len);
				row_check(&r, "q_update");
				row_free(&r);
				free(delta);
				free(q2);
				free(wp);
				free(wq);
			}
		}
	}
}

/* Every power of g times every byte value: q_update against the reference. */
static void test_q_update_every_coefficient(void **state)
{
	uint8_t delta[256] __attribute__((aligned(64)));
	uint8_t q[256] __attribute__((aligned(64)));
	uint8_t want[256];
	int slot, i;

	for (i = 0; i < 256; i++)
		delta[i] = (uint8_t)i;
	for (slot = 0; slot < 256; slot++) {
		memset(q, 0, sizeof(q));
		memset(want, 0, sizeof(want));
		rf_q_update(sizeof(q), slot, delta, q);
		rf_ref_q_update(sizeof(want), slot, delta, want);
		expect_same(q, want, sizeof(q), "q_update every byte, slot %d", slot);
	}
}

/*
 * Lose every single block and every pair (P and Q included), rebuild with
 * the fast and the reference recovery, compare both to the originals.
 */
static void recover_row(int n, size_t len, int mode, bool with_ref)
{
	struct row r, w;
	uint8_t **orig;
	int fa, fb, i;

	orig = calloc(n + 2, sizeof(*orig));
	assert_non_null(orig);
	row_alloc(&r, n + 2, len, mode);
	row_alloc(&w, n + 2, len, mode);
	for (i = 0; i < n; i++)
		fx_rand_fill(r.v[i], len);
	rf_pq_gen(n, len, r.v, r.v[n], r.v[n + 1]);
	for (i = 0; i < n + 2; i++) {
		orig[i] = malloc(len);
		assert_non_null(orig[i]);
		memcpy(orig[i], r.v[i], len);
	}

	for (fa = 0; fa < n + 2; fa++) {
		for (fb = -1; fb < n + 2; fb++) {
			if (fb >= 0 && fb <= fa)
				continue;
			for (int ref = 0; ref <= (int)with_ref; ref++) {
				int a = fa, b = fb, rc;

				for (i = 0; i < n + 2; i++)
					memcpy(w.v[i], orig[i], len);
				fx_rand_fill(w.v[fa], len);
				if (fb >= 0)
					fx_rand_fill(w.v[fb], len);
				/* the reference also sees the pair reversed */
				if (ref && b >= 0) {
					a = fb;
					b = fa;
				}
				if (ref)
					rc = rf_ref_raid6_recover(n, len, w.v, a, b);
				else
					rc = rf_raid6_recover(n, len, w.v, a, b);
				assert_int_equal(rc, 0);
				for (i = 0; i < n + 2; i++)
					expect_same(w.v[i], orig[i], len,
						    "%srecover n=%d len=%zu %s lost %d,%d: block %d",
						    ref ? "ref " : "", n, len, mode_name[mode], fa, fb, i);
				row_check(&w, "recover");
			}
		}
	}
	for (i = 0; i < n + 2; i++)
		free(orig[i]);
	free(orig);
	row_free(&r);
	row_free(&w);
}

static void test_recover_all_pairs(void **state)
{
	static const int ns[] = { 1, 2, 3, 4, 5, 8, 16 };
	unsigned ni;
	int mode;

	fx_rand_restart(6);
	for (ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
		for (mode = 0; mode < NMODES; mode++) {
			recover_row(ns[ni], 32, mode, true);
			recover_row(ns[ni], 4096 + 32, mode, ns[ni] <= 8);
		}
		recover_row(ns[ni], 64, 0, true);
		recover_row(ns[ni], 65536, 1, false);
	}
}

/* md's widest rows: the largest Q coefficients, g^253 and g^254. */
static void test_recover_wide(void **state)
{
	static const int ns[] = { 64, 254, 255 };
	static const int pairs[][2] = {
		{ 0, -1 }, { 0, 1 }, { 0, -2 }, { 0, -3 }, { -3, -2 }, { -3, -1 }, { 1, -4 }, { 0, -4 },
	};
	const size_t len = 4096 + 32;
	unsigned ni, pi;

	fx_rand_restart(7);
	for (ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
		int n = ns[ni], i;
		struct row r, w;

		row_alloc(&r, n + 2, len, 0);
		row_alloc(&w, n + 2, len, 4);
		for (i = 0; i < n; i++)
			fx_rand_fill(r.v[i], len);
		rf_pq_gen(n, len, r.v, r.v[n], r.v[n + 1]);
		for (pi = 0; pi < sizeof(pairs) / sizeof(pairs[0]); pi++) {
			/* negative: counted from the end, -1 = Q, -2 = P, -3 = last data */
			int fa = pairs[pi][0] < 0 ? n + 2 + pairs[pi][0] : pairs[pi][0];
			int fb = pairs[pi][1] < 0 ? n + 2 + pairs[pi][1] : pairs[pi][1];

			if (fa > fb) {
				int t = fa;

				fa = fb;
				fb = t;
			}
			for (i = 0; i < n + 2; i++)
				memcpy(w.v[i], r.v[i], len);
			memset(w.v[fa], 0, len);
			memset(w.v[fb], 0xff, len);
			assert_int_equal(rf_raid6_recover(n, len, w.v, fa, fb), 0);
			for (i = 0; i < n + 2; i++)
				expect_same(w.v[i], r.v[i], len, "wide recover n=%d lost %d,%d: block %d",
					    n, fa, fb, i);
			row_check(&w, "wide recover");
		}
		row_free(&r);
		row_free(&w);
	}
}

static void test_recover_einval(void **state)
{
	uint8_t buf[6][32];
	void *v[6] = { buf[0], buf[1], buf[2], buf[3], buf[4], buf[5] };
	static const int bad[][3] = {
		/* n, fa, fb */
		{ 4, 1, 1 },            /* the same block twice */
		{ 4, -1, -1 },
		{ 4, -1, 2 },
		{ 4, 6, -1 },           /* past Q */
		{ 4, 0, 6 },
		{ 4, 0, -2 },
		{ 0, 0, -1 },           /* no data */
		{ -1, 0, -1 },
		{ 256, 0, 1 },          /* Q coefficients repeat past 255 */
	};
	unsigned k;

	memset(buf, 0x5a, sizeof(buf));
	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		assert_int_equal(rf_raid6_recover(bad[k][0], 32, v, bad[k][1], bad[k][2]), -EINVAL);
		assert_int_equal(rf_ref_raid6_recover(bad[k][0], 32, v, bad[k][1], bad[k][2]),
				 -EINVAL);
	}
	/* nothing written on -EINVAL */
	for (k = 0; k < 6; k++)
		for (unsigned i = 0; i < 32; i++)
			assert_int_equal(buf[k][i], 0x5a);
	/* len 0 is a no-op */
	assert_int_equal(rf_raid6_recover(4, 0, v, 0, 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_first_use),
		cmocka_unit_test(test_known_answers),
		cmocka_unit_test(test_xor_gen_matrix),
		cmocka_unit_test(test_pq_gen_matrix),
		cmocka_unit_test(test_gen_odd_lengths),
		cmocka_unit_test(test_pq_gen_wide),
		cmocka_unit_test(test_xor_into),
		cmocka_unit_test(test_q_update),
		cmocka_unit_test(test_q_update_every_coefficient),
		cmocka_unit_test(test_recover_all_pairs),
		cmocka_unit_test(test_recover_wide),
		cmocka_unit_test(test_recover_einval),
	};
	fx_seed_init();
	return fx_run_tests_with(tests, NULL, NULL);
}
