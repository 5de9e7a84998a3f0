/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_raid5.c - the parity levels (levels/raid5.c, raid5_round.c):
 * raid4, raid5 and raid6 against a model of what every member byte must
 * hold.
 *
 * The model is the test's own: md's placement of data, P and Q
 * (raid5_compute_sector, written here from md's definitions, anchored to
 * the layout tables of md's documentation), P as a plain byte xor and Q
 * as md's syndrome over GF(2^8) (polynomial 0x11d, generator 2, data in
 * md's order: from the member after Q, or member order for the DDF
 * layouts, whose P and Q positions count as zero blocks), computed with
 * log tables built here.  Nothing of layout.c or parity.c is called.
 *
 * What is shown:
 *  - every layout the code accepts (raid4; raid5 0-5; raid6 0-5, the
 *    DDF layouts 8-10 and the -6 layouts 16-20): after random writes of
 *    512 B to several rows, unaligned, concurrent, on group threads and
 *    inline, reads return the model and every member holds the model's
 *    image (data where md puts it, P and Q of every row);
 *  - read-modify-write and reconstruct-write: which members a write
 *    reads (the fake backend's log) is the plan rmw_level asks for, and
 *    parity is right either way;
 *  - degraded: with one member missing (two for raid6, every pair of a
 *    5-member raid6) reads and writes return the model; the missing
 *    members rebuilt by the test from the survivors hold what the model
 *    says, and the array reassembled with them reads the model;
 *  - member IO failures (fake_ioq): a write that loses its member fails
 *    the member, the request succeeds, the array stays right; a direct
 *    read that fails is served rebuilt.
 * Negative controls: one member byte changed behind the array, a model
 * with the wrong layout, and Q summed in member order instead of md's,
 * each make the member check fail.
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

#define DOFF 8192u                      /* data offset, bytes */
#define MAXLEN (256u << 10)
#define BATCH 8

/* ---- the model: md's layouts ---- */

struct mgeo {
	int level, layout, n, nd;
	uint32_t chunk;                 /* bytes */
	uint32_t ss;                    /* stripe_size */
	uint64_t rows;                  /* chunk rows on each member */
	const char *what;
	bool qorder_wrong;              /* negative control: Q over members in member order */
};

/* md's raid5_compute_sector: logical data column k of chunk row s lives
 * on the member returned; *pd and *qd get P and Q (-1: none). */
static int m_place(const struct mgeo *g, uint64_t s, int k, int *pd, int *qd)
{
	int n = g->n, nd = g->nd, d = k, p = 0, q = -1;

	if (g->level == 4) {
		*pd = nd;
		*qd = -1;
		return d;
	}
	if (g->level == 5) {
		int r = (int)(s % (uint64_t)n);

		switch (g->layout) {
		case 0: p = nd - r; d += d >= p; break;
		case 1: p = r; d += d >= p; break;
		case 2: p = nd - r; d = (p + 1 + d) % n; break;
		case 3: p = r; d = (p + 1 + d) % n; break;
		case 4: p = 0; d++; break;
		case 5: p = nd; break;
		default: fail_msg("raid5 layout %d", g->layout);
		}
		*pd = p;
		*qd = -1;
		return d;
	}
	switch (g->layout) {
	case 0: case 1: case 8: case 9:
		if (g->layout == 0)
			p = n - 1 - (int)(s % (uint64_t)n);
		else if (g->layout == 9)
			p = n - 1 - (int)((s + 1) % (uint64_t)n);
		else
			p = (int)(s % (uint64_t)n);
		q = p + 1;
		if (p == n - 1) {
			d++;
			q = 0;
		} else if (d >= p) {
			d += 2;
		}
		break;
	case 2: case 3:
		p = g->layout == 2 ? n - 1 - (int)(s % (uint64_t)n) : (int)(s % (uint64_t)n);
		q = (p + 1) % n;
		d = (p + 2 + d) % n;
		break;
	case 4: p = 0; q = 1; d += 2; break;
	case 5: p = nd; q = nd + 1; break;
	case 10:
		p = n - 1 - (int)(s % (uint64_t)n);
		q = (p + n - 1) % n;
		d = (p + 1 + d) % n;
		break;
	case 16: case 17: case 18: case 19: {
		int r = (int)(s % (uint64_t)(n - 1));

		p = g->layout == 16 || g->layout == 18 ? nd - r : r;
		if (g->layout <= 17)
			d += d >= p;
		else
			d = (p + 1 + d) % (n - 1);
		q = n - 1;
		break;
	}
	case 20: p = 0; d++; q = n - 1; break;
	default: fail_msg("raid6 layout %d", g->layout);
	}
	*pd = p;
	*qd = q;
	return d;
}

/* One row: the member of each data column, P, Q, and each member's
 * coefficient in the P equation (c1) and the Q equation (c2): the xor of
 * c1[i] * X_i over the row is zero, and of c2[i] * X_i (GF(2^8)). */
struct mrow {
	int dm[RF_MAX_MEMBERS], pd, qd;
	uint8_t c1[RF_MAX_MEMBERS], c2[RF_MAX_MEMBERS];
};

static uint8_t gexp[512], glog[256];

static void gf_init(void)
{
	unsigned x = 1, i;

	for (i = 0; i < 255; i++) {
		gexp[i] = (uint8_t)x;
		glog[x] = (uint8_t)i;
		x <<= 1;
		if (x & 0x100)
			x ^= 0x11d;
	}
	for (i = 255; i < 512; i++)
		gexp[i] = gexp[i - 255];
}

static uint8_t gmul(uint8_t a, uint8_t b)
{
	return a && b ? gexp[glog[a] + glog[b]] : 0;
}

static uint8_t gdiv(uint8_t a, uint8_t b)
{
	return a ? gexp[glog[a] + 255 - glog[b]] : 0;
}

static bool m_ddf(const struct mgeo *g)
{
	return g->level == 6 && g->layout >= 8 && g->layout <= 10;
}

static void m_row(const struct mgeo *g, uint64_t s, struct mrow *r)
{
	int k, i, slot = 0, d0;

	uint64_t seen = 0;

	for (k = 0; k < g->nd; k++) {
		r->dm[k] = m_place(g, s, k, &r->pd, &r->qd);
		seen |= 1ull << r->dm[k];
	}
	/* Every member holds one thing in the row. */
	seen |= 1ull << r->pd | (r->qd >= 0 ? 1ull << r->qd : 0);
	assert_int_equal(__builtin_popcountll(seen), g->nd + 1 + (r->qd >= 0));
	assert_int_equal(seen, (1ull << g->n) - 1);
	for (i = 0; i < g->n; i++) {
		r->c1[i] = 1;
		r->c2[i] = 0;
	}
	if (r->qd < 0)
		return;
	r->c1[r->qd] = 0;
	r->c2[r->qd] = 1;
	/* md's set_syndrome_sources: data in order from the member after Q
	 * (member 0 when Q is last); DDF: every member its own index. */
	d0 = m_ddf(g) || r->qd == g->n - 1 ? 0 : r->qd + 1;
	for (i = 0; i < g->n; i++) {
		int m = (d0 + i) % g->n;

		if (m_ddf(g))
			slot = m;
		if (g->qorder_wrong)
			slot = m;
		if (m != r->pd && m != r->qd)
			r->c2[m] = gexp[m_ddf(g) || g->qorder_wrong ? slot : slot++];
	}
}

static uint64_t m_array_bytes(const struct mgeo *g)
{
	return g->rows * g->chunk * (uint64_t)g->nd;
}

/* What each member's data area must hold for the array contents model:
 * img[i] is rows * chunk bytes. */
static void m_images(const struct mgeo *g, const char *model, char **img)
{
	uint64_t s;
	uint32_t c = g->chunk, b;
	int k;

	for (s = 0; s < g->rows; s++) {
		struct mrow r;
		uint64_t at = s * c;

		m_row(g, s, &r);
		memset(img[r.pd] + at, 0, c);
		if (r.qd >= 0)
			memset(img[r.qd] + at, 0, c);
		for (k = 0; k < g->nd; k++) {
			const char *d = model + (s * g->nd + (uint64_t)k) * c;
			int m = r.dm[k];

			memcpy(img[m] + at, d, c);
			for (b = 0; b < c; b++) {
				img[r.pd][at + b] ^= d[b];
				if (r.qd >= 0)
					img[r.qd][at + b] ^= (char)gmul(r.c2[m], (uint8_t)d[b]);
			}
		}
	}
}

/* ---- members ---- */

static uint64_t member_bytes(const struct mgeo *g)
{
	/* A tail smaller than a chunk: the array rounds it away. */
	return DOFF + g->rows * g->chunk + 3072;
}

static char **imgs_alloc(const struct mgeo *g)
{
	char **img = calloc(g->n, sizeof(*img));
	int i;

	for (i = 0; i < g->n; i++)
		img[i] = calloc(1, g->rows * g->chunk);
	return img;
}

static void imgs_free(const struct mgeo *g, char **img)
{
	for (int i = 0; i < g->n; i++)
		free(img[i]);
	free(img);
}

static void member_io(const struct mgeo *g, int i, char *buf, bool write)
{
	char p[FX_PATH];
	size_t len = g->rows * g->chunk;
	int fd;

	fx_member_path(p, sizeof(p), g->what, i);
	fd = open(p, write ? O_WRONLY : O_RDONLY);
	assert_true(fd >= 0);
	if (write)
		assert_int_equal(pwrite(fd, buf, len, DOFF), (ssize_t)len);
	else
		assert_int_equal(pread(fd, buf, len, DOFF), (ssize_t)len);
	close(fd);
}

/* Members not in skip against the model's image: the number of members
 * that differ (the first difference is printed). */
static int check_members(const struct mgeo *g, const char *model, uint64_t skip)
{
	char **want = imgs_alloc(g), *have = malloc(g->rows * g->chunk);
	int i, bad = 0;

	m_images(g, model, want);
	for (i = 0; i < g->n; i++) {
		size_t j, len = g->rows * g->chunk;

		if (skip >> i & 1)
			continue;
		member_io(g, i, have, false);
		for (j = 0; j < len && have[j] == want[i][j]; j++)
			;
		if (j < len) {
			struct mrow r;

			m_row(g, j / g->chunk, &r);
			print_message("%s: member %d byte %zu (row %zu, %s) differs from the model\n", g->what, i, j,
				      j / g->chunk, i == r.pd ? "P" : i == r.qd ? "Q" : "data");
			bad++;
		}
	}
	free(have);
	imgs_free(g, want);
	return bad;
}

/* Rebuild the members in missing (one, or two on raid6) from the others
 * on their files, byte by byte from the row equations (Cramer's rule in
 * GF(2^8) for two). */
static void rebuild_members(const struct mgeo *g, uint64_t missing)
{
	char **img = imgs_alloc(g);
	int i, x[2] = { -1, -1 }, nx = 0;
	uint64_t s;

	for (i = 0; i < g->n; i++) {
		if (missing >> i & 1)
			x[nx++] = i;
		else
			member_io(g, i, img[i], false);
	}
	assert_true(nx >= 1 && nx <= (g->level == 6 ? 2 : 1));
	for (s = 0; s < g->rows; s++) {
		struct mrow r;
		uint32_t b;

		m_row(g, s, &r);
		for (b = 0; b < g->chunk; b++) {
			uint64_t at = s * g->chunk + b;
			uint8_t k1 = 0, k2 = 0;

			for (i = 0; i < g->n; i++) {
				if (missing >> i & 1)
					continue;
				k1 ^= gmul(r.c1[i], (uint8_t)img[i][at]);
				k2 ^= gmul(r.c2[i], (uint8_t)img[i][at]);
			}
			if (nx == 1) {
				int a = x[0];

				img[a][at] = (char)(r.c1[a] ? gdiv(k1, r.c1[a]) : gdiv(k2, r.c2[a]));
			} else {
				int a = x[0], c = x[1];
				uint8_t det = gmul(r.c1[a], r.c2[c]) ^ gmul(r.c1[c], r.c2[a]);

				assert_true(det != 0);
				img[a][at] = (char)gdiv(gmul(k1, r.c2[c]) ^ gmul(r.c1[c], k2), det);
				img[c][at] = (char)gdiv(gmul(r.c1[a], k2) ^ gmul(r.c2[a], k1), det);
			}
		}
	}
	for (i = 0; i < nx; i++)
		member_io(g, x[i], img[x[i]], true);
	imgs_free(g, img);
}

/* ---- the array ---- */

static struct rf_array *open_g(const struct mgeo *g, uint64_t missing, bool fresh, rf_ioq_init_fn ioq)
{
	const struct fx_array fa = { .what = g->what, .level = g->level, .layout = g->layout, .n = g->n,
				     .chunk = g->chunk, .stripe_size = g->ss, .data_offset = DOFF,
				     .missing = missing };
	struct rf_array *a;

	if (fresh)
		fx_make_members(g->what, g->n, member_bytes(g), false);
	a = fx_open_spec(&fa, fx_gtc, ioq);
	/* The model's size, not the code's. */
	assert_int_equal(rf_array_size(a), m_array_bytes(g));
	return a;
}

struct reqs {
	struct rf_req *r[BATCH];
	struct testreq_done d[BATCH];
	char *buf[BATCH];
};

static void reqs_init(struct reqs *q, struct rf_array *a)
{
	for (int i = 0; i < BATCH; i++) {
		q->r[i] = rf_req_alloc(a, MAXLEN);
		q->buf[i] = malloc(MAXLEN);
		q->r[i]->buf = q->buf[i];
		testreq_batch_init(q->r[i], &q->d[i]);
	}
}

static void reqs_free(struct reqs *q)
{
	for (int i = 0; i < BATCH; i++) {
		rf_req_free(q->r[i]);
		free(q->buf[i]);
	}
}

/* rounds batches of BATCH concurrent requests, none overlapping another
 * of its batch: lengths 512 B to maxlen (several rows), offsets and
 * lengths unaligned about half the time; writes pct percent.  Every
 * request must succeed; reads return the model, writes update it. */
static void random_io(struct rf_array *a, char *model, int rounds, uint32_t maxlen, int pct)
{
	uint64_t size = rf_array_size(a);
	struct reqs q;
	int round, i, j;

	if (maxlen > MAXLEN)
		maxlen = MAXLEN;
	reqs_init(&q, a);
	for (round = 0; round < rounds; round++) {
		for (i = 0; i < BATCH; i++) {
			struct rf_req *r = q.r[i];
			uint64_t len = 512 + fx_rand() % (maxlen - 511);
			bool overlap;
			int tries = 0;

			if (fx_rand() % 2)
				len &= ~511ull;
			do {
				/* No room among the others: shorter. */
				if (++tries % 16 == 0 && len > 512)
					len /= 2;
				r->off = fx_rand() % (size - len + 1);
				if (fx_rand() % 2)
					r->off &= ~4095ull;
				overlap = false;
				for (j = 0; j < i; j++)
					if (r->off < q.r[j]->off + q.r[j]->len && q.r[j]->off < r->off + len)
						overlap = true;
			} while (overlap);
			r->len = (uint32_t)len;
			r->op = (int)(fx_rand() % 100) < pct ? RF_REQ_WRITE : RF_REQ_READ;
			if (r->op == RF_REQ_WRITE)
				fx_rand_fill(r->buf, len);
		}
		testreq_batch(a, q.r, q.d, BATCH);
		for (i = 0; i < BATCH; i++) {
			struct rf_req *r = q.r[i];

			if (q.d[i].err)
				fail_msg("%s of %u bytes at %llu: %d", r->op == RF_REQ_WRITE ? "write" : "read", r->len,
					 (unsigned long long)r->off, q.d[i].err);
			if (r->op == RF_REQ_WRITE)
				memcpy(model + r->off, r->buf, r->len);
			else if (memcmp(model + r->off, r->buf, r->len))
				fail_msg("read of %u bytes at %llu is not the model", r->len, (unsigned long long)r->off);
		}
	}
	reqs_free(&q);
}

/* The whole array read back: the model. */
static void read_all(struct rf_array *a, const char *model)
{
	int64_t at = testreq_diff_all(a, model, MAXLEN);

	if (at >= 0)
		fail_msg("array byte %lld is not the model", (long long)at);
}

/* Every layout the code accepts; rows (geo_of()) cover each rotation. */
static const struct mgeo layouts[] = {
	{ 4, 0, 4, 0, 16384, 0, 0, "r4-0", false },
	{ 4, 5, 3, 0, 8192, 0, 0, "r4-5", false },
	{ 5, 0, 4, 0, 16384, 0, 0, "r5-la", false },
	{ 5, 1, 3, 0, 8192, 0, 0, "r5-ra", false },
	{ 5, 2, 5, 0, 16384, 0, 0, "r5-ls", false },
	{ 5, 3, 4, 0, 4096, 0, 0, "r5-rs", false },
	{ 5, 4, 4, 0, 16384, 0, 0, "r5-p0", false },
	{ 5, 5, 4, 0, 16384, 0, 0, "r5-pn", false },
	{ 5, 2, 4, 0, 65536, 16384, 0, "r5-ss16k", false },
	{ 6, 0, 5, 0, 16384, 0, 0, "r6-la", false },
	{ 6, 1, 4, 0, 8192, 0, 0, "r6-ra", false },
	{ 6, 2, 6, 0, 16384, 0, 0, "r6-ls", false },
	{ 6, 3, 5, 0, 8192, 0, 0, "r6-rs", false },
	{ 6, 4, 5, 0, 16384, 0, 0, "r6-p0", false },
	{ 6, 5, 5, 0, 16384, 0, 0, "r6-pn", false },
	{ 6, 8, 5, 0, 16384, 0, 0, "r6-ddf-zr", false },
	{ 6, 9, 6, 0, 8192, 0, 0, "r6-ddf-nr", false },
	{ 6, 10, 5, 0, 16384, 0, 0, "r6-ddf-nc", false },
	{ 6, 16, 5, 0, 16384, 0, 0, "r6-la6", false },
	{ 6, 17, 6, 0, 8192, 0, 0, "r6-ra6", false },
	{ 6, 18, 5, 0, 16384, 0, 0, "r6-ls6", false },
	{ 6, 19, 4, 0, 16384, 0, 0, "r6-rs6", false },
	{ 6, 20, 5, 0, 16384, 0, 0, "r6-p06", false },
	{ 6, 2, 6, 0, 32768, 8192, 0, "r6-ss8k", false },
};
#define NLAYOUTS (sizeof(layouts) / sizeof(layouts[0]))

static struct mgeo geo_of(const struct mgeo *l)
{
	struct mgeo g = *l;

	g.nd = g.n - (g.level == 6 ? 2 : 1);
	if (!g.ss)
		g.ss = 4096;
	g.rows = (uint64_t)g.n + 3;
	return g;
}

/* ---- tests ---- */

/* The model against md's own tables (md(4), the four raid5 layouts of a
 * 4-member array: the data chunk each member holds in rows 0-3, -1 for
 * P), and the raid6 DDF rotations' first rows as the DDF standard draws
 * them.  Ties the model to md, not to the code under test. */
static void test_model_anchor(void **state)
{
	static const int r5[4][4][4] = {
		{ { 0, 1, 2, -1 }, { 3, 4, -1, 5 }, { 6, -1, 7, 8 }, { -1, 9, 10, 11 } },       /* left-asymmetric */
		{ { -1, 0, 1, 2 }, { 3, -1, 4, 5 }, { 6, 7, -1, 8 }, { 9, 10, 11, -1 } },       /* right-asymmetric */
		{ { 0, 1, 2, -1 }, { 4, 5, -1, 3 }, { 8, -1, 6, 7 }, { -1, 9, 10, 11 } },       /* left-symmetric */
		{ { -1, 0, 1, 2 }, { 5, -1, 3, 4 }, { 7, 8, -1, 6 }, { 9, 10, 11, -1 } },       /* right-symmetric */
	};
	/* raid6 of 5, P and Q members of rows 0-4: -2 marks Q, -1 P. */
	static const struct { int layout; int pq[5][2]; } r6[] = {
		{ 8, { { 0, 1 }, { 1, 2 }, { 2, 3 }, { 3, 4 }, { 4, 0 } } },   /* rotating zero restart */
		{ 9, { { 3, 4 }, { 2, 3 }, { 1, 2 }, { 0, 1 }, { 4, 0 } } },   /* rotating N restart */
		{ 10, { { 4, 3 }, { 3, 2 }, { 2, 1 }, { 1, 0 }, { 0, 4 } } },  /* rotating N continue */
		{ 2, { { 4, 0 }, { 3, 4 }, { 2, 3 }, { 1, 2 }, { 0, 1 } } },   /* left-symmetric */
		{ 18, { { 3, 4 }, { 2, 4 }, { 1, 4 }, { 0, 4 }, { 3, 4 } } },  /* left-symmetric-6 */
	};
	int l, s, k, i;

	(void)state;
	for (l = 0; l < 4; l++) {
		struct mgeo g = { .level = 5, .layout = l, .n = 4, .nd = 3 };

		for (s = 0; s < 4; s++) {
			int pd, qd, row[4];

			for (i = 0; i < 4; i++)
				row[i] = -1;
			for (k = 0; k < 3; k++)
				row[m_place(&g, (uint64_t)s, k, &pd, &qd)] = s * 3 + k;
			assert_memory_equal(row, r5[l][s], sizeof(row));
			assert_int_equal(row[pd], -1);
		}
	}
	for (l = 0; l < (int)(sizeof(r6) / sizeof(r6[0])); l++) {
		struct mgeo g = { .level = 6, .layout = r6[l].layout, .n = 5, .nd = 3 };

		for (s = 0; s < 5; s++) {
			int pd, qd, seen = 0;

			for (k = 0; k < 3; k++)
				seen |= 1 << m_place(&g, (uint64_t)s, k, &pd, &qd);
			assert_int_equal(pd, r6[l].pq[s][0]);
			assert_int_equal(qd, r6[l].pq[s][1]);
			/* data fills the other three members */
			assert_int_equal(seen | 1 << pd | 1 << qd, 0x1f);
		}
	}
	/* GF(2^8): 2^8 = 0x1d under 0x11d, and division undoes multiplication. */
	assert_int_equal(gexp[8], 0x1d);
	for (i = 1; i < 256; i++)
		assert_int_equal(gdiv(gmul((uint8_t)i, 0x53), 0x53), i);
}

/* raid4 refuses a parity-first layout (md's raid4 is parity-last; the
 * parity-first array is raid5 layout 4, in the sweep below). */
static void test_raid4_parity_first_refused(void **state)
{
	const struct fx_array fa = { .what = "r4-p0", .level = 4, .layout = 4, .n = 4, .chunk = 16384 };
	struct rf_config cfg;
	struct rf_array *a;
	char err[512];

	fx_make_members(fa.what, 4, 1u << 20, false);
	fx_config(&cfg, &fa);
	assert_int_equal(rf_array_open(&cfg, &a, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "layout 4"));
	for (int i = 0; i < 4; i++)
		free(cfg.members[i]);
}

/* Random IO on every layout: reads are the model, the members hold its
 * image.  Run on group threads and inline (the setups). */
static void test_layouts(void **state)
{
	size_t l;

	for (l = 0; l < NLAYOUTS; l++) {
		struct mgeo g = geo_of(&layouts[l]);
		struct rf_array *a = open_g(&g, 0, true, NULL);
		char *model = calloc(1, m_array_bytes(&g));

		random_io(a, model, 8, 3 * g.nd * g.chunk, 70);
		read_all(a, model);
		rf_array_close(a);
		if (check_members(&g, model, 0))
			fail_msg("%s: the members are not the model's image", g.what);
		free(model);
	}
}

/* Fresh members of g written at random; the model, the members checked
 * against it (the array closed). */
static char *written(const struct mgeo *g, rf_ioq_init_fn ioq)
{
	struct rf_array *a = open_g(g, 0, true, ioq);
	char *model = calloc(1, m_array_bytes(g));

	random_io(a, model, 6, 3 * g->nd * g->chunk, 100);
	rf_array_close(a);
	assert_int_equal(check_members(g, model, 0), 0);
	return model;
}

/* Negative controls of the member check: it fails on one byte changed
 * behind the array (in data, then in P, then in Q), on an array of
 * another layout, and with Q summed in member order. */
static void test_check_fails(void **state)
{
	struct mgeo g = geo_of(&layouts[11]);   /* raid6 left-symmetric, 6 */
	char *model = written(&g, fake_ioq_init), *img = malloc(g.rows * g.chunk);
	struct mrow r;
	int which, victim;

	m_row(&g, 3, &r);
	for (which = 0; which < 3; which++) {
		victim = which == 0 ? r.dm[1] : which == 1 ? r.pd : r.qd;
		member_io(&g, victim, img, false);
		img[3 * g.chunk + 777] ^= 0x20;
		member_io(&g, victim, img, true);
		assert_int_equal(check_members(&g, model, 0), 1);
		img[3 * g.chunk + 777] ^= 0x20;
		member_io(&g, victim, img, true);
	}
	assert_int_equal(check_members(&g, model, 0), 0);
	/* The same members judged as left-asymmetric: P, Q and data move. */
	g.layout = 0;
	assert_true(check_members(&g, model, 0) > 0);
	/* The member order instead of md's for Q. */
	g = geo_of(&layouts[11]);
	g.qorder_wrong = true;
	assert_true(check_members(&g, model, 0) > 0);
	free(model);
	/* rotating-zero-restart places as right-asymmetric; only Q's order
	 * differs: an array of 8 judged as 1 fails on Q alone. */
	g = geo_of(&layouts[15]);
	model = written(&g, NULL);
	g.layout = 1;
	assert_true(check_members(&g, model, 0) > 0);
	free(img);
	free(model);
}

/* Bytes of the fake log's reads, by member, that lie in chunk row s. */
static void reads_of_row(const struct mgeo *g, uint64_t s, uint64_t *bytes)
{
	int i;

	for (i = 0; i < g->n; i++)
		bytes[i] = 0;
	for (i = 0; i < fake_nlog; i++) {
		const struct fake_logent *e = &fake_log[i];

		if (e->op != RF_MIO_READ)
			continue;
		if (e->off < DOFF + s * g->chunk || e->off + e->len > DOFF + (s + 1) * g->chunk)
			fail_msg("a read at %llu outside row %llu", (unsigned long long)e->off, (unsigned long long)s);
		bytes[e->member] += e->len;
	}
}

/* One write w of [off, off + len) in row s; then the members it read
 * must be exactly want (each one ss bytes per head written), and the
 * array's rmw/rcw counters move by drmw/drcw. */
static void planned_write(struct rf_array *a, const struct mgeo *g, char *model, uint64_t s, uint64_t off,
			  uint32_t len, uint64_t want, uint64_t per, int drmw, int drcw)
{
	uint64_t rmw = atomic_load(&a->stats.rmw), rcw = atomic_load(&a->stats.rcw), got[RF_MAX_MEMBERS];
	char *buf = malloc(len);
	int i;

	fx_rand_fill(buf, len);
	fake_nlog = 0;
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, off, len, buf), 0);
	memcpy(model + off, buf, len);
	reads_of_row(g, s, got);
	for (i = 0; i < g->n; i++)
		if (got[i] != (want >> i & 1 ? per : 0))
			fail_msg("%s: row %llu: member %d read %llu bytes, the plan says %llu", g->what,
				 (unsigned long long)s, i, (unsigned long long)got[i],
				 (unsigned long long)(want >> i & 1 ? per : 0));
	assert_int_equal(atomic_load(&a->stats.rmw) - rmw, drmw);
	assert_int_equal(atomic_load(&a->stats.rcw) - rcw, drcw);
	free(buf);
}

/* Which members a write reads: a 4 KiB write into a cold row of a
 * 6-member raid5 reads its old data and P (rmw: 2 < 4); one that fills
 * 4 of 5 data chunks reads the fifth (rcw: 1 < 5); rmw_level 0 reads every
 * data column, the written one too when written in part; a 7-member raid6 reads D, P, Q for one block
 * (3 < 4); a 6-member raid6 ties (3 = 3): rmw_level 1 takes rcw, 2 rmw.
 * Rows are fresh each time (nothing cached).  Parity is right after all
 * of them, and after random writes under each rmw_level (rmw and rcw
 * both used, none rmw at level 0). */
static void test_rmw_rcw(void **state)
{
	struct mgeo g5 = geo_of(&(struct mgeo){ 5, 2, 6, 0, 16384, 0, 0, "plan5", false });
	struct mgeo g6 = geo_of(&(struct mgeo){ 6, 2, 7, 0, 16384, 0, 0, "plan6", false });
	struct mgeo g66 = geo_of(&(struct mgeo){ 6, 18, 6, 0, 16384, 0, 0, "plan66", false });
	uint32_t c = 16384;
	struct rf_array *a;
	char *model;
	struct mrow r;
	int k, lvl;
	uint64_t s, want;

	fake_reset();
	fake_log_on = true;
	a = open_g(&g5, 0, true, fake_ioq_init);
	model = calloc(1, m_array_bytes(&g5));
	/* rmw_level 1 (the config's): one block of column 2 of row 1 */
	s = 1;
	m_row(&g5, s, &r);
	planned_write(a, &g5, model, s, (s * 5 + 2) * c + 4096, 4096, 1ull << r.dm[2] | 1ull << r.pd, 4096, 1, 0);
	/* chunks 0-3 of row 2 whole: rcw reads column 4, every head */
	s = 2;
	m_row(&g5, s, &r);
	planned_write(a, &g5, model, s, s * 5 * c, 4 * c, 1ull << r.dm[4], c, 0, 4);
	/* rmw_level 0: one block of row 3 reads the other four columns */
	assert_int_equal(rf_array_set_rmw_level(a, 0), 0);
	s = 3;
	m_row(&g5, s, &r);
	for (want = 0, k = 0; k < 5; k++)
		want |= 1ull << r.dm[k];        /* column 0 too: written in part */
	planned_write(a, &g5, model, s, s * 5 * c + 100, 3000, want, 4096, 0, 1);
	rf_array_close(a);
	assert_int_equal(check_members(&g5, model, 0), 0);
	free(model);

	a = open_g(&g6, 0, true, fake_ioq_init);
	model = calloc(1, m_array_bytes(&g6));
	s = 4;
	m_row(&g6, s, &r);
	planned_write(a, &g6, model, s, (s * 5 + 3) * c + 8192, 4096,
		      1ull << r.dm[3] | 1ull << r.pd | 1ull << r.qd, 4096, 1, 0);
	rf_array_close(a);
	assert_int_equal(check_members(&g6, model, 0), 0);
	free(model);

	a = open_g(&g66, 0, true, fake_ioq_init);
	model = calloc(1, m_array_bytes(&g66));
	s = 5;
	m_row(&g66, s, &r);
	for (want = 0, k = 0; k < 4; k++)
		if (k != 1)
			want |= 1ull << r.dm[k];
	planned_write(a, &g66, model, s, (s * 4 + 1) * c, 4096, want, 4096, 0, 1);
	assert_int_equal(rf_array_set_rmw_level(a, 2), 0);
	s = 6;
	m_row(&g66, s, &r);
	planned_write(a, &g66, model, s, (s * 4 + 1) * c, 4096, 1ull << r.dm[1] | 1ull << r.pd | 1ull << r.qd,
		      4096, 1, 0);
	rf_array_close(a);
	assert_int_equal(check_members(&g66, model, 0), 0);
	free(model);
	fake_reset();

	/* Random writes under each rmw_level: parity right both ways. */
	for (lvl = 0; lvl <= 2; lvl++) {
		struct mgeo *gs[2] = { &g5, &g66 };

		for (k = 0; k < 2; k++) {
			a = open_g(gs[k], 0, true, fake_ioq_init);
			model = calloc(1, m_array_bytes(gs[k]));
			assert_int_equal(rf_array_set_rmw_level(a, lvl), 0);
			random_io(a, model, 10, 2 * c, 100);
			if (lvl == 0)
				assert_int_equal(atomic_load(&a->stats.rmw), 0);
			else
				assert_true(atomic_load(&a->stats.rmw) > 0);
			if (lvl < 2)
				assert_true(atomic_load(&a->stats.rcw) > 0);
			rf_array_close(a);
			if (check_members(gs[k], model, 0))
				fail_msg("%s: rmw_level %d: members not the model", gs[k]->what, lvl);
			free(model);
		}
	}
}

/* Fill g healthy, then serve it with missing gone: random reads and
 * writes return the model, the survivors hold their image; the test
 * rebuilds the missing members from the survivors, which gives the
 * model's image of them, and the array with them reads the model. */
static void degraded_run(const struct mgeo *g, uint64_t missing, int rounds)
{
	struct rf_array *a = open_g(g, 0, true, NULL);
	char *model = calloc(1, m_array_bytes(g));

	random_io(a, model, 4, 3 * g->nd * g->chunk, 100);
	rf_array_close(a);
	a = open_g(g, missing, false, NULL);
	assert_int_equal(rf_array_faulty(a), missing);
	random_io(a, model, rounds, 3 * g->nd * g->chunk, 60);
	read_all(a, model);
	rf_array_close(a);
	if (check_members(g, model, missing))
		fail_msg("%s: missing 0x%llx: survivors not the model", g->what, (unsigned long long)missing);
	rebuild_members(g, missing);
	if (check_members(g, model, 0))
		fail_msg("%s: missing 0x%llx: rebuilt members not the model", g->what, (unsigned long long)missing);
	a = open_g(g, 0, false, NULL);
	read_all(a, model);
	rf_array_close(a);
	free(model);
}

static void test_degraded(void **state)
{
	static const int pick[] = { 0, 1, 3, 5, 7, 8, 16, 17, 18, 20, 21 };
	size_t i;
	int x, y;

	for (i = 0; i < sizeof(pick) / sizeof(pick[0]); i++) {
		struct mgeo g = geo_of(&layouts[pick[i]]);
		uint64_t missing = 1ull << (fx_rand() % g.n);

		if (g.level == 6)
			while (__builtin_popcountll(missing) < 2)
				missing |= 1ull << (fx_rand() % g.n);
		degraded_run(&g, missing, 6);
	}
	/* Every pair of a raid6 of 5: each row loses two data, data and P,
	 * data and Q, or P and Q somewhere (on group threads; inline, the
	 * picks above). */
	if (fx_gtc) {
		struct mgeo g = geo_of(&layouts[12]);   /* raid6 right-symmetric, 5 */

		for (x = 0; x < g.n; x++)
			for (y = x + 1; y < g.n; y++)
				degraded_run(&g, 1ull << x | 1ull << y, 2);
	}
}

/* A member whose IO fails during writes (fake_ioq, after some IO of
 * it): it is failed, every request still succeeds and reads the model,
 * the survivors hold their image and rebuild the failed one.  raid6
 * with one member missing from the start loses a second.  Then a direct
 * read that fails (member failed at its first IO) is served rebuilt. */
static void fail_run(const struct mgeo *g, uint64_t missing, int victim)
{
	struct rf_array *a;
	char *model = calloc(1, m_array_bytes(g));
	uint64_t gone = missing | 1ull << victim;

	fake_reset();
	a = open_g(g, missing, true, fake_ioq_init);
	fake_fail_member = victim;
	fake_fail_after = 25;
	random_io(a, model, 12, 3 * g->nd * g->chunk, 80);
	assert_true(fake_nr_failed > 0);
	assert_int_equal(rf_array_faulty(a), gone);
	assert_false(rf_array_failed(a));
	read_all(a, model);
	rf_array_close(a);
	fake_reset();
	if (check_members(g, model, gone))
		fail_msg("%s: member %d failed: survivors not the model", g->what, victim);
	rebuild_members(g, gone);
	if (check_members(g, model, 0))
		fail_msg("%s: member %d failed: rebuilt members not the model", g->what, victim);

	/* Healthy again; the victim fails at its first read (raid4's parity
	 * member is never read). */
	if (g->level == 4 && victim == g->n - 1) {
		free(model);
		return;
	}
	a = open_g(g, 0, false, fake_ioq_init);
	fake_fail_member = victim;
	fake_fail_after = 0;
	read_all(a, model);
	assert_true(fake_nr_failed > 0);
	assert_int_equal(rf_array_faulty(a), 1ull << victim);
	rf_array_close(a);
	fake_reset();
	free(model);
}

static void test_member_fails(void **state)
{
	struct mgeo g4 = geo_of(&layouts[0]), g5 = geo_of(&layouts[4]), g6 = geo_of(&layouts[17]);
	struct mgeo g66 = geo_of(&layouts[11]);

	fail_run(&g4, 0, 3);            /* raid4: the parity member */
	fail_run(&g4, 0, 1);
	fail_run(&g5, 0, 2);
	fail_run(&g6, 0, 4);
	fail_run(&g66, 1ull << 0, 3);
}

static int setup(void **state)
{
	gf_init();
	return fx_dir_make("raid5");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model_anchor),
		cmocka_unit_test(test_raid4_parity_first_refused),
		cmocka_unit_test_setup(test_layouts, fx_threads2),
		cmocka_unit_test_setup(test_layouts, fx_inline0),
		cmocka_unit_test_setup(test_check_fails, fx_threads2),
		cmocka_unit_test_setup(test_rmw_rcw, fx_threads2),
		cmocka_unit_test_setup(test_degraded, fx_threads2),
		cmocka_unit_test_setup(test_degraded, fx_inline0),
		cmocka_unit_test_setup(test_member_fails, fx_threads2),
		cmocka_unit_test_setup(test_member_fails, fx_inline0),
	};

	return fx_run_tests_with(tests, setup, fx_group_teardown);
}
