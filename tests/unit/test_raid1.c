/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_raid1.c - mirrors (levels/raid1.c): md's raid1 and raid10 near,
 * far and offset copies, against a model.
 *
 * The model is the test's own: every array byte in memory, and where md
 * keeps each copy worked out here from md's definitions (md(4) and
 * raid10.c's setup_geo, calc_sectors and __raid10_find_phys), not by
 * asking layout.c.  The array is cut in units (raid10: chunks; raid1:
 * sectors) and unit c's near copies are the consecutive slots c * nc + k
 * of a raid0-like stream over the members (member: slot mod n, row: slot
 * over n); far copy f of each lies f * nc members on, at row + f * stride
 * (stride: the member's used chunks over the far copies), offset copy f
 * at row * fc + f.  The array holds (member chunks / fc) * n / nc chunks.
 * raid1 is the case of n near copies on n members.
 *
 *  - every shape, with worker threads and inline: written whole in random
 *    pieces, random reads and writes against the model, then every member
 *    file read directly: each copy of each unit where the model puts it,
 *    zeros where no copy lies;
 *  - member IO: a write goes to every copy exactly (the fake backend's
 *    log against the model's extents); a read to one copy per unit, raid1
 *    a whole request from one member, rotating over the members;
 *  - reads come from a copy: members filled with different random bytes,
 *    so that copies differ, each unit of a read is one of its copies;
 *  - a member failing mid-way (every IO to it failing from some point):
 *    every request succeeds and reads right, the member is faulty and
 *    gets no more IO, the others hold the model;
 *  - a failed read is retried on another copy: right data, the member
 *    faulty;
 *  - degraded: members missing (raid10: as many as leave each unit a
 *    copy, one of each pair) read right what was written before and take
 *    writes; a missing member's file is not touched; raid1 losing its
 *    last copy fails writes (array broken) and keeps that member in sync;
 *  - negative controls: a byte changed on one copy is found by the member
 *    check, and some reads of it return it changed, others not; a model
 *    with another layout disagrees with the members;
 *  - a raid10 reshape under way (n2 4 -> 5 and 2 -> 3, o2 2 -> 3): two
 *    geometries split at the position, each at its data offsets, whole
 *    and degraded (test_reshape_midway, below).
 *
 * Seed: RF_TEST_SEED (printed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/engine.h"
#include "fake_ioq.h"
#include "fixture.h"
#include "raidfuse/stack.h"
#include "testreq.h"

#define DOFF 65536u
#define MEMBER_BYTES (DOFF + (1u << 20) + 3072u)        /* not whole chunks */
#define MAXLEN (160u << 10)
#define MAXEXT 2048

struct shape {
	const char *what;
	int level, layout, n;
	uint32_t chunk;                 /* bytes; 0 for raid1 */
};

static const struct shape shapes[] = {
	{ "r1n2", 1, 0, 2, 0 },
	{ "r1n3", 1, 0, 3, 0 },
	{ "n2d4", 10, 0x102, 4, 16384 },
	{ "n2d3", 10, 0x102, 3, 8192 },
	{ "n3d3", 10, 0x103, 3, 4096 },
	{ "f2d4", 10, 0x201, 4, 16384 },
	{ "f2d5", 10, 0x201, 5, 4096 },
	{ "f3d4", 10, 0x301, 4, 8192 },
	{ "o2d3", 10, 0x10201, 3, 16384 },
	{ "o2d4", 10, 0x10201, 4, 65536 },
};

#define NSHAPES ((int)(sizeof(shapes) / sizeof(shapes[0])))

static const struct shape *shape_named(const char *what)
{
	int i;

	for (i = 0; i < NSHAPES; i++)
		if (!strcmp(shapes[i].what, what))
			return &shapes[i];
	fail_msg("no shape %s", what);
	return NULL;
}

/* ---- the model ---- */

struct model {
	int n, nc, fc;
	bool offset;
	uint64_t unit;                  /* bytes: raid10's chunk, raid1's sector */
	uint64_t nunits;                /* the array's */
	uint64_t used;                  /* units of each member that hold copies */
	uint64_t stride;                /* units between far copies */
};

static void model_of(struct model *m, const struct shape *sh, int layout)
{
	uint64_t dev;

	memset(m, 0, sizeof(*m));
	m->n = sh->n;
	if (sh->level == 1) {
		m->nc = sh->n;
		m->fc = 1;
		m->unit = 512;
	} else {
		m->nc = layout & 0xff;
		m->fc = (layout >> 8) & 0xff;
		m->offset = (layout >> 16) & 1;
		m->unit = sh->chunk;
	}
	/* A member's data: whole 4 KiB blocks (what the array keeps of a
	 * member without a superblock), then whole units. */
	dev = ((MEMBER_BYTES - DOFF) & ~4095ull) / m->unit;
	m->nunits = dev / (uint64_t)m->fc * (uint64_t)m->n / (uint64_t)m->nc;
	m->used = (m->nunits * (uint64_t)(m->nc * m->fc) + (uint64_t)m->n - 1) / (uint64_t)m->n;
	m->stride = m->offset ? 1 : m->used / (uint64_t)m->fc;
}

/* Unit c's copies: members and member units; the count. */
static int model_copies(const struct model *m, uint64_t c, int *dev, uint64_t *mu)
{
	int k, f, i = 0;

	for (k = 0; k < m->nc; k++) {
		uint64_t slot = c * (uint64_t)m->nc + (uint64_t)k, row = slot / (uint64_t)m->n;
		int d = (int)(slot % (uint64_t)m->n);

		for (f = 0; f < m->fc; f++, i++) {
			dev[i] = (d + f * m->nc) % m->n;
			mu[i] = m->offset ? row * (uint64_t)m->fc + (uint64_t)f : row + (uint64_t)f * m->stride;
		}
	}
	return i;
}

/* The member extents every copy of [off, off + len) covers, members in
 * skip left out, normalized; the count. */
static int model_extents(const struct model *m, uint64_t off, uint64_t len, uint64_t skip, struct fake_ext *e)
{
	uint64_t end = off + len, mu[RF_MAX_MEMBERS];
	int dev[RF_MAX_MEMBERS], n = 0, i, k;

	while (off < end) {
		uint64_t l = m->unit - off % m->unit;

		if (l > end - off)
			l = end - off;
		k = model_copies(m, off / m->unit, dev, mu);
		for (i = 0; i < k; i++) {
			if ((skip >> dev[i]) & 1)
				continue;
			assert_true(n < MAXEXT);
			e[n++] = (struct fake_ext){ dev[i], DOFF + mu[i] * m->unit + off % m->unit, l };
		}
		off += l;
	}
	return fake_ext_norm(e, n);
}

/* Bytes of the member files of what (but those in skip) that differ from
 * the model: every copy of every unit, zeros where no copy lies. */
static uint64_t members_diff(const struct model *m, const char *what, const char *model, uint64_t skip)
{
	char *f[RF_MAX_MEMBERS] = { NULL };
	uint8_t *cover[RF_MAX_MEMBERS] = { NULL };
	uint64_t flen, c, b, bad = 0, mu[RF_MAX_MEMBERS];
	int dev[RF_MAX_MEMBERS], i, k;

	for (i = 0; i < m->n; i++) {
		if ((skip >> i) & 1)
			continue;
		f[i] = fx_member_slurp(what, i, &flen);
		assert_int_equal(flen, MEMBER_BYTES);
		cover[i] = calloc(1, MEMBER_BYTES / m->unit);     /* by member unit */
		assert_non_null(cover[i]);
	}
	for (c = 0; c < m->nunits; c++) {
		k = model_copies(m, c, dev, mu);
		for (i = 0; i < k; i++) {
			uint64_t at = DOFF + mu[i] * m->unit;

			if (!f[dev[i]])
				continue;
			assert_true(at + m->unit <= MEMBER_BYTES);
			assert_false(cover[dev[i]][mu[i]]);     /* one copy per place */
			cover[dev[i]][mu[i]] = 1;
			bad += fx_bytes_differ(f[dev[i]] + at, model + c * m->unit, m->unit);
		}
	}
	for (i = 0; i < m->n; i++) {
		if (!f[i])
			continue;
		/* zeros before the data, in units without a copy, after */
		bad += fx_bytes_nonzero(f[i], DOFF);
		for (b = 0; (b + 1) * m->unit <= MEMBER_BYTES - DOFF; b++)
			if (!cover[i][b])
				bad += fx_bytes_nonzero(f[i] + DOFF + b * m->unit, m->unit);
		bad += fx_bytes_nonzero(f[i] + DOFF + b * m->unit, MEMBER_BYTES - DOFF - b * m->unit);
		free(f[i]);
		free(cover[i]);
	}
	return bad;
}

/* ---- arrays ---- */

static struct rf_array *open_shape(const struct shape *sh, uint64_t missing, bool fresh, int gtc)
{
	const struct fx_array fa = { .what = sh->what, .level = sh->level, .layout = sh->layout, .n = sh->n,
				     .chunk = sh->chunk, .data_offset = DOFF, .missing = missing };

	if (fresh)
		fx_make_members(sh->what, sh->n, MEMBER_BYTES, false);
	return fx_open_spec(&fa, gtc, fake_ioq_init);
}

/* A fresh array of sh, its model, and the model's bytes written whole. */
static struct rf_array *open_filled(const struct shape *sh, struct model *m, char **model)
{
	struct rf_array *a;

	fake_reset();
	model_of(m, sh, sh->layout);
	a = open_shape(sh, 0, true, fx_gtc);
	if (rf_array_size(a) != m->nunits * m->unit)
		fail_msg("%s: array of %llu bytes, md's geometry makes %llu", sh->what,
			 (unsigned long long)rf_array_size(a), (unsigned long long)(m->nunits * m->unit));
	*model = calloc(1, rf_array_size(a));
	assert_non_null(*model);
	fx_model_fill(a, *model, MAXLEN, 10);
	return a;
}

static void test_shapes(void **state)
{
	int s;

	for (s = 0; s < NSHAPES; s++) {
		struct model m;
		char *model;
		struct rf_array *a = open_filled(&shapes[s], &m, &model);

		assert_int_equal(fx_model_io(a, model, 60, MAXLEN), 0);
		assert_int_equal(fx_model_diff(a, model, MAXLEN), 0);
		rf_array_close(a);
		if (members_diff(&m, shapes[s].what, model, 0))
			fail_msg("%s: member files differ from md's copies", shapes[s].what);
		free(model);
	}
}

/* Member IO of each request: a write is every copy, exactly; a read is
 * its length in all, each operation inside a copy of the request's
 * bytes; raid1 reads one member per request, every member in turn. */
static void test_member_io(void **state)
{
	static struct fake_ext want[MAXEXT], got[MAXEXT];
	static char buf[MAXLEN];
	int s, i, j, k, nw, ng;

	for (s = 0; s < NSHAPES; s++) {
		const struct shape *sh = &shapes[s];
		int reads_on[RF_MAX_MEMBERS] = { 0 };
		struct model m;
		struct rf_array *a;

		fake_reset();
		model_of(&m, sh, sh->layout);
		a = open_shape(sh, 0, true, fx_gtc);
		for (i = 0; i < 80; i++) {
			bool write = i % 2 == 0;
			uint64_t off;
			uint32_t len;

			fx_rand_extent(rf_array_size(a), MAXLEN, &off, &len);
			fx_rand_fill(buf, len);
			fake_nlog = 0;
			fake_log_on = true;
			assert_int_equal(testreq_io(a, write ? RF_REQ_WRITE : RF_REQ_READ, off, len, buf), 0);
			fake_log_on = false;
			nw = model_extents(&m, off, len, 0, want);
			ng = fake_log_ext(write ? RF_MIO_WRITE : RF_MIO_READ, got, MAXEXT);
			assert_int_equal(fake_count(-1, write ? RF_MIO_READ : RF_MIO_WRITE), 0);
			if (write) {
				if (ng != nw || memcmp(got, want, sizeof(*got) * (size_t)nw))
					fail_msg("%s: write of %u at %llu: member writes are not md's copies", sh->what,
						 len, (unsigned long long)off);
				continue;
			}
			assert_int_equal(fake_bytes(-1, RF_MIO_READ), len);
			for (j = 0; j < fake_nlog; j++) {
				const struct fake_logent *e = &fake_log[j];

				for (k = 0; k < nw; k++)
					if (want[k].member == e->member && want[k].off <= e->off &&
					    e->off + e->len <= want[k].off + want[k].len)
						break;
				if (k == nw)
					fail_msg("%s: read of %u at %llu: member %d read at %llu, not a copy", sh->what,
						 len, (unsigned long long)off, e->member, (unsigned long long)e->off);
				reads_on[e->member]++;
			}
			if (sh->level == 1)
				assert_int_equal(ng, 1);
		}
		for (j = 0; j < sh->n && sh->level == 1; j++)
			if (!reads_on[j])
				fail_msg("%s: no read went to member %d", sh->what, j);
		rf_array_close(a);
	}
	fake_reset();
}

/* Members of random bytes: each unit of a read is one of its copies, and
 * every copy serves some read. */
static void test_reads_from_a_copy(void **state)
{
	static char buf[MAXLEN];
	int s, i, k;

	for (s = 0; s < NSHAPES; s++) {
		const struct shape *sh = &shapes[s];
		const struct fx_array fa = { .what = sh->what, .level = sh->level, .layout = sh->layout,
					     .n = sh->n, .chunk = sh->chunk, .data_offset = DOFF };
		char *f[RF_MAX_MEMBERS];
		int used[RF_MAX_MEMBERS] = { 0 }, dev[RF_MAX_MEMBERS];
		uint64_t flen, mu[RF_MAX_MEMBERS];
		struct model m;
		struct rf_array *a;

		fake_reset();
		model_of(&m, sh, sh->layout);
		fx_make_members(sh->what, sh->n, MEMBER_BYTES, true);
		for (i = 0; i < sh->n; i++)
			f[i] = fx_member_slurp(sh->what, i, &flen);
		a = fx_open_spec(&fa, fx_gtc, fake_ioq_init);
		for (i = 0; i < 60; i++) {
			uint64_t off, at;
			uint32_t len;

			fx_rand_extent(rf_array_size(a), MAXLEN, &off, &len);
			assert_int_equal(testreq_io(a, RF_REQ_READ, off, len, buf), 0);
			for (at = off; at < off + len;) {
				uint64_t l = m.unit - at % m.unit, c = at / m.unit;
				int n = model_copies(&m, c, dev, mu);

				if (l > off + len - at)
					l = off + len - at;
				for (k = 0; k < n; k++)
					if (!memcmp(buf + (at - off), f[dev[k]] + DOFF + mu[k] * m.unit + at % m.unit, l))
						break;
				if (k == n)
					fail_msg("%s: read at %llu: unit %llu is none of its copies", sh->what,
						 (unsigned long long)off, (unsigned long long)c);
				used[k]++;
				at += l;
			}
		}
		for (k = 0; k < m.nc * m.fc; k++)
			if (!used[k])
				fail_msg("%s: copy %d of a unit served no read", sh->what, k);
		rf_array_close(a);
		for (i = 0; i < sh->n; i++)
			free(f[i]);
	}
	fake_reset();
}

/* Member 1 fails after a while: every request still succeeds and reads
 * right; member 1 is faulty and sees no IO after; the others hold it. */
static void test_fail_midway(void **state)
{
	static const char *const names[] = { "r1n2", "r1n3", "n2d4", "f2d5", "o2d3", "n3d3" };
	size_t s;

	for (s = 0; s < sizeof(names) / sizeof(names[0]); s++) {
		const struct shape *sh = shape_named(names[s]);
		struct model m;
		char *model;
		struct rf_array *a = open_filled(sh, &m, &model);

		fake_fail_member = 1;
		fake_fail_after = 25;
		assert_int_equal(fx_model_io(a, model, 120, MAXLEN), 0);
		assert_true(fake_nr_failed > 0);
		assert_int_equal(rf_array_faulty(a), 1ull << 1);
		assert_false(rf_array_failed(a));
		fake_nlog = 0;
		fake_log_on = true;
		assert_int_equal(fx_model_io(a, model, 30, MAXLEN), 0);
		assert_int_equal(fx_model_diff(a, model, MAXLEN), 0);
		assert_int_equal(fake_count(1, RF_MIO_READ) + fake_count(1, RF_MIO_WRITE), 0);
		rf_array_close(a);
		fake_reset();
		assert_int_equal(members_diff(&m, sh->what, model, 1ull << 1), 0);
		free(model);
	}
}

/* Every read of member 0 fails: each read is served whole, from the other
 * copies, right; member 0 is faulty after the first. */
static void test_read_retry(void **state)
{
	static const char *const names[] = { "r1n2", "f2d4", "o2d4" };
	static char buf[MAXLEN];
	size_t s;
	int i;

	for (s = 0; s < sizeof(names) / sizeof(names[0]); s++) {
		const struct shape *sh = shape_named(names[s]);
		bool retried = false;
		struct model m;
		char *model;
		struct rf_array *a = open_filled(sh, &m, &model);

		fake_fail_member = 0;
		for (i = 0; i < 20; i++) {
			uint64_t off;
			uint32_t len;
			int failed = fake_nr_failed;

			fx_rand_extent(rf_array_size(a), MAXLEN, &off, &len);
			fake_nlog = 0;
			fake_log_on = true;
			assert_int_equal(testreq_io(a, RF_REQ_READ, off, len, buf), 0);
			fake_log_on = false;
			assert_memory_equal(buf, model + off, len);
			if (fake_nr_failed > failed) {
				/* What member 0 failed to read came from others. */
				assert_true(fake_bytes(0, RF_MIO_READ) > 0);
				assert_int_equal(fake_bytes(-1, RF_MIO_READ) - fake_bytes(0, RF_MIO_READ), len);
				retried = true;
			}
		}
		assert_true(retried);
		assert_int_equal(rf_array_faulty(a), 1ull << 0);
		rf_array_close(a);
		fake_reset();
		free(model);
	}
}

/* The largest set of members (greedy, in member order) whose loss leaves
 * every unit a copy: one of each pair. */
static uint64_t survivable(const struct model *m)
{
	uint64_t set = 0, c, mu[RF_MAX_MEMBERS];
	int dev[RF_MAX_MEMBERS], i, k, n;

	for (i = 0; i < m->n; i++) {
		uint64_t t = set | (1ull << i);
		bool ok = true;

		for (c = 0; c < m->nunits && ok; c++) {
			n = model_copies(m, c, dev, mu);
			for (k = 0; k < n && ((t >> dev[k]) & 1); k++)
				;
			ok = k < n;
		}
		if (ok)
			set = t;
	}
	return set;
}

/* Written whole while healthy, then opened without every member it can
 * lose: reads right, takes writes (none to the missing), and the members
 * left hold the model. */
static void test_degraded(void **state)
{
	int s, i;

	for (s = 0; s < NSHAPES; s++) {
		const struct shape *sh = &shapes[s];
		char *before[RF_MAX_MEMBERS] = { NULL }, *after;
		uint64_t miss, flen;
		struct model m;
		char *model;
		struct rf_array *a = open_filled(sh, &m, &model);

		rf_array_close(a);
		miss = survivable(&m);
		assert_true(miss != 0 && __builtin_popcountll(miss) >= sh->n / (m.nc * m.fc));
		for (i = 0; i < sh->n; i++)
			if ((miss >> i) & 1)
				before[i] = fx_member_slurp(sh->what, i, &flen);
		a = open_shape(sh, miss, false, fx_gtc);
		assert_int_equal(rf_array_faulty(a), miss);
		assert_false(rf_array_failed(a));
		assert_int_equal(fx_model_diff(a, model, MAXLEN), 0);
		assert_int_equal(fx_model_io(a, model, 60, MAXLEN), 0);
		assert_int_equal(fx_model_diff(a, model, MAXLEN), 0);
		rf_array_close(a);
		assert_int_equal(members_diff(&m, sh->what, model, miss), 0);
		for (i = 0; i < sh->n; i++) {
			if (!before[i])
				continue;
			after = fx_member_slurp(sh->what, i, &flen);
			assert_int_equal(fx_bytes_differ(before[i], after, MEMBER_BYTES), 0);
			free(before[i]);
			free(after);
		}
		free(model);
	}
}

/* raid1 of 2 without member 1: member 0 is the last copy.  A write it
 * fails fails the request; the array is broken (writes fail, reads go
 * on) and member 0 stays in sync, as md keeps the last one. */
static void test_last_copy(void **state)
{
	const struct shape *sh = shape_named("r1n2");
	static char buf[8192];
	struct model m;
	char *model;
	struct rf_array *a = open_filled(sh, &m, &model);

	rf_array_close(a);
	a = open_shape(sh, 1ull << 1, false, fx_gtc);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 4096, 4096, model + 4096), 0);
	fake_fail_member = 0;
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 8192, 4096, buf), -EIO);
	assert_true(rf_array_failed(a));
	assert_int_equal(rf_array_faulty(a), 1ull << 1);
	fake_fail_member = -1;
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, 4096, buf), -EIO);
	assert_int_equal(testreq_io(a, RF_REQ_READ, 4096, 4096, buf), 0);
	assert_memory_equal(buf, model + 4096, 4096);
	assert_int_equal(rf_array_faulty(a), 1ull << 1);
	rf_array_close(a);
	fake_reset();
	free(model);
}

/* Negative controls: the checks above can fail. */
static void test_negative_controls(void **state)
{
	const struct shape *f2 = shape_named("f2d4"), *r1 = shape_named("r1n2");
	struct model m, wrong;
	char *model, p[FX_PATH], *buf = malloc(4096);
	struct rf_array *a;
	int fd, i, seen = 0;
	char byte;

	/* far copies read as offset copies: the member check disagrees */
	a = open_filled(f2, &m, &model);
	rf_array_close(a);
	assert_int_equal(members_diff(&m, f2->what, model, 0), 0);
	model_of(&wrong, f2, 0x10201);
	assert_true(members_diff(&wrong, f2->what, model, 0) > 0);
	free(model);
	/* one byte changed on member 1 of a raid1: found by the member check;
	 * reads of it see it from member 1 only */
	a = open_filled(r1, &m, &model);
	rf_array_close(a);
	fx_member_path(p, sizeof(p), r1->what, 1);
	fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	byte = (char)(model[40000] ^ 0x40);
	assert_int_equal(pwrite(fd, &byte, 1, DOFF + 40000), 1);
	close(fd);
	assert_int_equal(members_diff(&m, r1->what, model, 0), 1);
	a = open_shape(r1, 0, false, fx_gtc);
	for (i = 0; i < 8; i++) {
		assert_int_equal(testreq_io(a, RF_REQ_READ, 36864, 4096, buf), 0);
		seen += memcmp(buf, model + 36864, 4096) != 0;
	}
	assert_true(seen > 0 && seen < 8);
	rf_array_close(a);
	free(model);
	free(buf);
}

/* ---- a raid10 reshape under way ----
 *
 * Members laid out as md leaves a raid10 it grows (raid10.c's
 * reshape_request): the array's bytes below the reshape position as the
 * new geometry keeps them at the new data offset (a chunk times the far
 * copies lower, mdadm's min_offset_change), the rest as the previous one
 * keeps them at the old one.  Opened with the reshape in its config and
 * a stack of the levels alone (no reshape walk moves the position): reads
 * and writes against the model, then every member byte where the two
 * geometries put it; with members missing (one copy of a pair) the same;
 * the same members read as one geometry differ (negative control). */

struct r10_midway {
	const char *what;
	int layout, prev_n, n;
	uint32_t chunk;                 /* bytes */
	uint64_t pos;                   /* array sectors */
	uint64_t missing;               /* slots left out in a second round */
};

/* The new data offset (bytes). */
static uint64_t midway_noff(const struct r10_midway *c)
{
	return DOFF - (uint64_t)c->chunk * (uint64_t)((c->layout >> 8) & 0xff);
}

/* Expected member images of c holding model (zeros elsewhere), one
 * malloc'd buffer of MEMBER_BYTES per slot, into img. */
static void midway_images(const struct r10_midway *c, const char *model, uint64_t size, char **img)
{
	const struct shape ps = { c->what, 10, c->layout, c->prev_n, c->chunk };
	const struct shape ns = { c->what, 10, c->layout, c->n, c->chunk };
	struct model mp, mn;
	uint64_t off, mu[RF_MAX_MEMBERS];
	int dev[RF_MAX_MEMBERS], i, k;

	model_of(&mp, &ps, c->layout);
	model_of(&mn, &ns, c->layout);
	for (i = 0; i < c->n; i++) {
		img[i] = calloc(1, MEMBER_BYTES);
		assert_non_null(img[i]);
	}
	for (off = 0; off < size; off += 512) {
		bool done = off / 512 < c->pos;
		const struct model *m = done ? &mn : &mp;
		uint64_t base = done ? midway_noff(c) : DOFF;

		k = model_copies(m, off / m->unit, dev, mu);
		for (i = 0; i < k; i++)
			memcpy(img[dev[i]] + base + mu[i] * m->unit + off % m->unit, model + off, 512);
	}
}

/* Bytes of c's member files (those in skip left out) that differ from
 * where the two geometries put model. */
static uint64_t midway_diff(const struct r10_midway *c, const char *model, uint64_t size, uint64_t skip)
{
	char *img[RF_MAX_MEMBERS];
	uint64_t bad = 0, flen;
	int i;

	midway_images(c, model, size, img);
	for (i = 0; i < c->n; i++) {
		if (!((skip >> i) & 1)) {
			char *f = fx_member_slurp(c->what, i, &flen);

			assert_int_equal(flen, MEMBER_BYTES);
			bad += fx_bytes_differ(f, img[i], MEMBER_BYTES);
			free(f);
		}
		free(img[i]);
	}
	return bad;
}

/* c's members written as md leaves them with model (random bytes). */
static void midway_make(const struct r10_midway *c, char *model, uint64_t size)
{
	char *img[RF_MAX_MEMBERS], p[FX_PATH];
	int i, fd;

	fx_rand_fill(model, size);
	midway_images(c, model, size, img);
	for (i = 0; i < c->n; i++) {
		fx_member_path(p, sizeof(p), c->what, i);
		fd = fx_file_open(p, MEMBER_BYTES);
		assert_int_equal(pwrite(fd, img[i], MEMBER_BYTES, 0), (ssize_t)MEMBER_BYTES);
		close(fd);
		free(img[i]);
	}
}

static const struct rf_level_ops *const levels_only[] = { &rf_raid0_ops, &rf_raid1_ops, &rf_raid10_ops,
							  &rf_raid5_ops, NULL };
static const struct rf_service *const no_services[] = { NULL };
static const struct rf_stack levels_stack = { .levels = levels_only, .services = no_services };

/* c's members as an array mid-reshape (reshape: false, the position
 * ignored: the previous geometry alone), slots in missing left out. */
static struct rf_array *midway_open(const struct r10_midway *c, bool reshape, uint64_t missing)
{
	const struct fx_array fa = { .what = c->what, .level = 10, .layout = c->layout,
				     .n = reshape ? c->n : c->prev_n, .chunk = c->chunk, .data_offset = DOFF,
				     .missing = missing };
	struct rf_config cfg;
	struct rf_array *a;
	int i;

	fx_config(&cfg, &fa);
	if (reshape) {
		cfg.reshape.active = true;
		cfg.reshape.position = c->pos;
		cfg.reshape.raid_disks = c->n;
		cfg.reshape.prev_raid_disks = c->prev_n;
		cfg.reshape.prev_layout = c->layout;
		cfg.reshape.prev_chunk_bytes = c->chunk;
		for (i = 0; i < c->n; i++)
			cfg.reshape.new_offset[i] = midway_noff(c);
	}
	cfg.group_thread_cnt = fx_gtc;
	rf_stack_set(&levels_stack);
	a = fx_open(&cfg, c->what, fake_ioq_init);
	rf_stack_set(&rf_stack_default);
	return a;
}

static void test_reshape_midway(void **state)
{
	static const struct r10_midway cases[] = {
		/* n2 of 4 -> 5, the position inside chunk 37 */
		{ "mw-n2d4", 0x102, 4, 5, 16384, 37 * 32 + 16, 1ull << 1 | 1ull << 3 },
		/* n2 of 2 -> 3, on a chunk boundary */
		{ "mw-n2d2", 0x102, 2, 3, 8192, 40 * 16, 1ull << 0 },
		/* o2 of 2 -> 3 */
		{ "mw-o2d2", 0x10201, 2, 3, 16384, 21 * 32 + 8, 1ull << 2 },
	};
	size_t k;

	(void)state;
	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct r10_midway *c = &cases[k];
		const struct shape ps = { c->what, 10, c->layout, c->prev_n, c->chunk };
		struct model mp;
		uint64_t size, pos;
		struct rf_array *a;
		char *model;
		bool back;

		fake_reset();
		model_of(&mp, &ps, c->layout);
		size = mp.nunits * mp.unit;     /* the previous geometry's: the smaller */
		model = malloc(size);
		assert_non_null(model);
		midway_make(c, model, size);
		a = midway_open(c, true, 0);
		assert_true(rf_array_reshape(a, &pos, &back));
		assert_int_equal(pos, c->pos);
		assert_int_equal(rf_array_size(a), size);
		assert_int_equal(fx_model_diff(a, model, MAXLEN), 0);
		assert_int_equal(fx_model_io(a, model, 80, MAXLEN), 0);
		assert_int_equal(fx_model_diff(a, model, MAXLEN), 0);
		rf_array_close(a);
		if (midway_diff(c, model, size, 0))
			fail_msg("%s: members differ from the two geometries", c->what);
		/* degraded: one copy of some pairs gone */
		a = midway_open(c, true, c->missing);
		assert_false(rf_array_failed(a));
		assert_int_equal(fx_model_diff(a, model, MAXLEN), 0);
		assert_int_equal(fx_model_io(a, model, 40, MAXLEN), 0);
		assert_int_equal(fx_model_diff(a, model, MAXLEN), 0);
		rf_array_close(a);
		assert_int_equal(midway_diff(c, model, size, c->missing), 0);
		/* negative control: the previous geometry alone, the
		 * position ignored */
		a = midway_open(c, false, 0);
		assert_int_equal(rf_array_size(a), size);
		assert_true(fx_model_diff(a, model, MAXLEN) > 0);
		rf_array_close(a);
		free(model);
	}
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test_setup(test_shapes, fx_threads2),
	cmocka_unit_test_setup(test_shapes, fx_inline0),
	cmocka_unit_test_setup(test_member_io, fx_threads2),
	cmocka_unit_test_setup(test_member_io, fx_inline0),
	cmocka_unit_test_setup(test_reads_from_a_copy, fx_threads2),
	cmocka_unit_test_setup(test_fail_midway, fx_threads2),
	cmocka_unit_test_setup(test_fail_midway, fx_inline0),
	cmocka_unit_test_setup(test_read_retry, fx_threads2),
	cmocka_unit_test_setup(test_read_retry, fx_inline0),
	cmocka_unit_test_setup(test_degraded, fx_threads2),
	cmocka_unit_test_setup(test_last_copy, fx_inline0),
	cmocka_unit_test_setup(test_negative_controls, fx_threads2),
	cmocka_unit_test_setup(test_reshape_midway, fx_threads2),
	cmocka_unit_test_setup(test_reshape_midway, fx_inline0),
};

int main(void)
{
	return fx_run_tests("raid1", tests);
}
