/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_raid0.c - raid0 (levels/raid0.c) against a model of md's raid0.
 *
 * The model is the test's own: every array byte in memory, and md's
 * placement worked out here from md's definitions (raid0.c's
 * create_strip_zones, find_zone and map_sector), not by asking layout.c.
 * Members are sized in whole chunks (rounded down); the distinct sizes,
 * ascending, bound md's strip zones: zone k holds, in role order, every
 * member larger than the zone before it, from where that zone stopped on
 * them.  Inside a zone chunks are dealt round robin: the member is picked
 * by the array's chunk number (layout 1, "original") or the zone's
 * (layout 2, "alternate"), the member chunk is the zone's start plus the
 * zone's chunk number over its member count.  The model checks itself:
 * every chunk of every member's data area holds exactly one array chunk.
 *
 *  - equal members, several chunk sizes and member counts, with worker
 *    threads and inline: the array written whole in random pieces (odd
 *    lengths and offsets, across every chunk), random reads and writes
 *    against the model, then every member file read directly: each array
 *    chunk where the model puts it, nothing outside the data areas;
 *  - members of different sizes and data offsets (md's zones, both
 *    layouts, 2-3 zones, a last zone of one member, sizes not whole
 *    chunks): the same, and the array's size is the model's;
 *  - splitting: each request's member IO, as the fake backend logs it, is
 *    exactly the model's extents (no more, no less), across chunk and
 *    zone boundaries;
 *  - member errors: a read that touches a failing member ends with its
 *    errno; a read elsewhere goes on, right; writes fail at once (md's
 *    raid0 keeps the device and calls the array broken), and no member is
 *    marked faulty;
 *  - kernel md's own zones (tests/data/md-images/r0-3d-64k-zones-*, where
 *    xz is installed): the model finds md's pattern on the members, and
 *    the array serves it, across the zone boundaries.  Those two arrays
 *    place their data alike (zone 0 has an even number of chunks, zone 1
 *    two members), so they cannot tell the layouts apart; the shapes
 *    above are chosen so that the layouts differ, and the test says so;
 *  - negative controls: a byte changed on a member behind the array is
 *    found by the member check and read back changed; a model with the
 *    other zone layout disagrees with the members.
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
#include <sys/stat.h>
#include <unistd.h>

#include "fake_ioq.h"
#include "fixture.h"
#include "testreq.h"

#define KIB 1024ull
#define MAXLEN (200u << 10)
#define SLACK 3072u             /* bytes past each member's data: less than a chunk */
#define MAXEXT 1024

struct shape {
	const char *what;
	int n, layout;          /* layout: md's raid0 layout (0, 1 original, 2 alternate) */
	uint32_t chunk;         /* bytes */
	uint32_t kib[8];        /* each member's data, KiB (0 everywhere: 1 MiB each) */
	uint32_t doff_kib[8];   /* each member's data offset, KiB (0 everywhere: 64 each) */
	bool zones;             /* members keep their own sizes (md superblocks' data_size) */
};

static const struct shape equal[] = {
	{ "e2c4k", 2, 0, 4096, { 0 }, { 0 }, false },
	{ "e3c16k", 3, 0, 16384, { 0 }, { 0 }, false },
	{ "e4c64k", 4, 0, 65536, { 0 }, { 0 }, false },
	{ "e5c8k", 5, 0, 8192, { 0 }, { 0 }, false },
	{ "e3c512k", 3, 0, 512 << 10, { 0 }, { 0 }, false },
	/* one member smaller: without per-member sizes all use the smallest */
	{ "e3small", 3, 0, 16384, { 1024, 700, 1024 }, { 0 }, false },
};

static const struct shape zoned[] = {
	/* the md-images' zones scaled down (48, 64, 96 MiB), both layouts;
	 * an odd number of chunks in zone 0, so that the layouts differ in
	 * zone 1 (in the md-images they do not: 2256 chunks there) */
	{ "z3orig", 3, 1, 65536, { 320, 512, 768 }, { 0 }, true },
	{ "z3alt", 3, 2, 65536, { 320, 512, 768 }, { 0 }, true },
	/* three zones, sizes not in role order, data offsets differing */
	{ "z4orig", 4, 1, 16384, { 512, 128, 320, 320 }, { 64, 128, 68, 1024 }, true },
	{ "z4alt", 4, 2, 16384, { 512, 128, 320, 320 }, { 64, 128, 68, 1024 }, true },
	/* a last zone of one member: no layout recorded, md maps it alike */
	{ "z2last1", 2, 0, 8192, { 256, 640 }, { 0 }, true },
	/* sizes that are not whole chunks: md rounds each down */
	{ "z3odd", 3, 2, 32768, { 300, 170, 500 }, { 0 }, true },
};

static uint64_t sh_data(const struct shape *sh, int i)
{
	return (sh->kib[0] ? sh->kib[i] : 1024) * KIB;
}

static uint64_t sh_doff(const struct shape *sh, int i)
{
	return (sh->doff_kib[0] ? sh->doff_kib[i] : 64) * KIB;
}

/* ---- the model ---- */

struct r0_model {
	int n;
	uint64_t chunk;                         /* bytes */
	uint64_t doff[RF_MAX_MEMBERS];          /* bytes */
	uint64_t used[RF_MAX_MEMBERS];          /* data bytes each member holds */
	uint64_t size;                          /* array bytes */
	uint64_t nchunks;
	int *member;                            /* array chunk -> member */
	uint64_t *mchunk;                       /* array chunk -> chunk number on the member */
	uint64_t zone_end[RF_MAX_MEMBERS];      /* array byte offset where each zone ends */
	int nzones;
};

/* md's zones over n members holding data[i] bytes each (all the smallest
 * unless zones), chunks dealt by layout. */
static void model_build(struct r0_model *m, int n, uint64_t chunk, int layout, const uint64_t *data,
			const uint64_t *doff, bool zones)
{
	uint64_t sz[RF_MAX_MEMBERS], min = UINT64_MAX, prev = 0, c = 0, k, total = 0;
	uint8_t *seen;
	int i;

	memset(m, 0, sizeof(*m));
	m->n = n;
	m->chunk = chunk;
	for (i = 0; i < n; i++) {
		sz[i] = data[i] / chunk;
		if (sz[i] < min)
			min = sz[i];
		m->doff[i] = doff[i];
	}
	for (i = 0; i < n; i++) {
		if (!zones)
			sz[i] = min;
		m->used[i] = sz[i] * chunk;
		total += sz[i];
	}
	m->member = calloc(total, sizeof(*m->member));
	m->mchunk = calloc(total, sizeof(*m->mchunk));
	assert_true(m->member && m->mchunk);
	for (;;) {
		uint64_t next = UINT64_MAX;
		int devs[RF_MAX_MEMBERS], nb = 0;

		for (i = 0; i < n; i++) {
			if (sz[i] <= prev)
				continue;
			devs[nb++] = i;
			if (sz[i] < next)
				next = sz[i];
		}
		if (!nb)
			break;
		for (k = 0; k < (next - prev) * (uint64_t)nb; k++, c++) {
			m->member[c] = devs[(layout == 1 ? c : k) % (uint64_t)nb];
			m->mchunk[c] = prev + k / (uint64_t)nb;
		}
		m->zone_end[m->nzones++] = c * chunk;
		prev = next;
	}
	m->nchunks = c;
	m->size = c * chunk;
	assert_int_equal(c, total);
	/* Every chunk of every member's data holds one array chunk. */
	seen = calloc((size_t)n, (size_t)total);
	assert_non_null(seen);
	for (c = 0; c < m->nchunks; c++) {
		assert_true(m->mchunk[c] < sz[m->member[c]]);
		assert_false(seen[(uint64_t)m->member[c] * total + m->mchunk[c]]++);
	}
	free(seen);
}

static void model_free(struct r0_model *m)
{
	free(m->member);
	free(m->mchunk);
}

static void model_of(struct r0_model *m, const struct shape *sh, int layout)
{
	uint64_t data[RF_MAX_MEMBERS], doff[RF_MAX_MEMBERS];
	int i;

	for (i = 0; i < sh->n; i++) {
		data[i] = sh_data(sh, i) + (sh->zones ? 0 : SLACK);
		doff[i] = sh_doff(sh, i);
	}
	model_build(m, sh->n, sh->chunk, layout, data, doff, sh->zones);
}

/* Member byte offset (file offset) of array byte off. */
static int model_map(const struct r0_model *m, uint64_t off, uint64_t *moff)
{
	uint64_t c = off / m->chunk;

	*moff = m->doff[m->member[c]] + m->mchunk[c] * m->chunk + off % m->chunk;
	return m->member[c];
}

/* The member extents of [off, off + len), normalized; the count. */
static int model_extents(const struct r0_model *m, uint64_t off, uint64_t len, struct fake_ext *e)
{
	uint64_t end = off + len;
	int n = 0;

	while (off < end) {
		uint64_t l = m->chunk - off % m->chunk;

		if (l > end - off)
			l = end - off;
		assert_true(n < MAXEXT);
		e[n].member = model_map(m, off, &e[n].off);
		e[n++].len = l;
		off += l;
	}
	return fake_ext_norm(e, n);
}

/* Bytes of the member files of what that differ from the model: each
 * array chunk where the model puts it, zeros outside the data areas. */
static uint64_t members_diff(const struct r0_model *m, const char *what, const char *model)
{
	char *f[RF_MAX_MEMBERS];
	uint64_t flen[RF_MAX_MEMBERS], c, b, bad = 0;
	int i;

	for (i = 0; i < m->n; i++)
		f[i] = fx_member_slurp(what, i, &flen[i]);
	for (c = 0; c < m->nchunks; c++) {
		uint64_t moff;
		int k = model_map(m, c * m->chunk, &moff);

		assert_true(moff + m->chunk <= flen[k]);
		bad += fx_bytes_differ(f[k] + moff, model + c * m->chunk, m->chunk);
	}
	for (i = 0; i < m->n; i++) {
		b = m->doff[i] + m->used[i];
		bad += fx_bytes_nonzero(f[i], m->doff[i]) + fx_bytes_nonzero(f[i] + b, flen[i] - b);
		free(f[i]);
	}
	return bad;
}

/* ---- arrays ---- */

/* The array of sh on its member files (made anew, zeros, when fresh). */
static struct rf_array *open_shape(const struct shape *sh, int gtc, bool fresh)
{
	const struct fx_array fa = { .what = sh->what, .level = 0, .layout = sh->layout, .n = sh->n,
				     .chunk = sh->chunk, .data_offset = sh_doff(sh, 0) };
	struct rf_config cfg;
	int i;

	for (i = 0; i < sh->n && fresh; i++) {
		char p[FX_PATH];

		fx_member_path(p, sizeof(p), sh->what, i);
		fx_file_make(p, sh_doff(sh, i) + sh_data(sh, i) + SLACK);
	}
	fx_config(&cfg, &fa);
	cfg.group_thread_cnt = gtc;
	if (sh->zones) {
		/* As assemble reads md superblocks: each member's own data
		 * offset and data size. */
		cfg.member_offsets = true;
		for (i = 0; i < sh->n; i++) {
			cfg.member_offset[i] = sh_doff(sh, i);
			cfg.member_data[i] = sh_data(sh, i);
		}
	}
	return fx_open(&cfg, sh->what, fake_ioq_init);
}

/* Fill, random IO against the model, read back whole, members checked. */
static void run_shape(const struct shape *sh)
{
	struct r0_model m;
	struct rf_array *a;
	char *model;

	fake_reset();
	model_of(&m, sh, sh->layout);
	a = open_shape(sh, fx_gtc, true);
	if (rf_array_size(a) != m.size)
		fail_msg("%s: array of %llu bytes, md's zones make %llu", sh->what,
			 (unsigned long long)rf_array_size(a), (unsigned long long)m.size);
	model = calloc(1, m.size);
	assert_non_null(model);
	fx_model_fill(a, model, MAXLEN, 20);
	assert_int_equal(fx_model_io(a, model, 80, MAXLEN), 0);
	assert_int_equal(fx_model_diff(a, model, MAXLEN), 0);
	rf_array_close(a);
	if (members_diff(&m, sh->what, model))
		fail_msg("%s: member files differ from md's raid0 placement", sh->what);
	if (sh->layout) {
		/* The other layout would have placed the data elsewhere. */
		struct r0_model other;

		model_of(&other, sh, 3 - sh->layout);
		if (!members_diff(&other, sh->what, model))
			fail_msg("%s: both raid0 layouts place the data alike: the shape tests neither", sh->what);
		model_free(&other);
	}
	free(model);
	model_free(&m);
}

static void test_equal_members(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(equal) / sizeof(equal[0]); i++)
		run_shape(&equal[i]);
}

static void test_zones(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(zoned) / sizeof(zoned[0]); i++)
		run_shape(&zoned[i]);
}

/* One request's member IO is exactly the model's extents. */
static void check_split(struct rf_array *a, const struct r0_model *m, int op, uint64_t off, uint32_t len,
			char *buf)
{
	static struct fake_ext want[MAXEXT], got[MAXEXT];
	int nw, ng, i;

	fake_nlog = 0;
	fake_log_on = true;
	assert_int_equal(testreq_io(a, op, off, len, buf), 0);
	fake_log_on = false;
	nw = model_extents(m, off, len, want);
	ng = fake_log_ext(op == RF_REQ_WRITE ? RF_MIO_WRITE : RF_MIO_READ, got, MAXEXT);
	assert_int_equal(fake_nlog, fake_count(-1, op == RF_REQ_WRITE ? RF_MIO_WRITE : RF_MIO_READ));
	if (ng != nw)
		fail_msg("%s of %u at %llu: %d member extents, the model says %d", op == RF_REQ_WRITE ? "write" : "read",
			 len, (unsigned long long)off, ng, nw);
	for (i = 0; i < nw; i++)
		if (got[i].member != want[i].member || got[i].off != want[i].off || got[i].len != want[i].len)
			fail_msg("%u at %llu: extent %d: member %d %llu+%llu, the model says member %d %llu+%llu", len,
				 (unsigned long long)off, i, got[i].member, (unsigned long long)got[i].off,
				 (unsigned long long)got[i].len, want[i].member, (unsigned long long)want[i].off,
				 (unsigned long long)want[i].len);
}

static void test_split_exact(void **state)
{
	const struct shape *shapes[] = { &equal[0], &equal[3], &zoned[0], &zoned[3], &zoned[5] };
	static char buf[MAXLEN];
	size_t s;
	int i, z;

	for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		struct r0_model m;
		struct rf_array *a;

		fake_reset();
		model_of(&m, shapes[s], shapes[s]->layout);
		a = open_shape(shapes[s], fx_gtc, true);
		for (i = 0; i < 60; i++) {
			uint64_t off;
			uint32_t len;

			fx_rand_extent(m.size, MAXLEN, &off, &len);
			fx_rand_fill(buf, len);
			check_split(a, &m, i % 2 ? RF_REQ_READ : RF_REQ_WRITE, off, len, buf);
		}
		/* Across each zone's end, odd bytes either side. */
		for (z = 0; z + 1 < m.nzones; z++) {
			check_split(a, &m, RF_REQ_WRITE, m.zone_end[z] - 5001, 3 * (uint32_t)m.chunk + 7, buf);
			check_split(a, &m, RF_REQ_READ, m.zone_end[z] - 1, 2, buf);
		}
		/* The last byte, the first, one whole chunk. */
		check_split(a, &m, RF_REQ_READ, m.size - 1, 1, buf);
		check_split(a, &m, RF_REQ_WRITE, 0, 1, buf);
		check_split(a, &m, RF_REQ_WRITE, m.chunk, (uint32_t)(m.chunk < MAXLEN ? m.chunk : MAXLEN), buf);
		rf_array_close(a);
		model_free(&m);
	}
	fake_reset();
}

/* A member's errors end the requests that touch it with its errno; raid0
 * has nothing to fail over to and never fails a device (md's raid0): the
 * array is broken, writes fail before any member IO, reads of the other
 * members go on. */
static void member_errors(int err)
{
	const struct shape *sh = &equal[1];    /* 3 members, 16 KiB chunks */
	struct r0_model m;
	struct rf_array *a;
	char *model, *buf = malloc(MAXLEN);
	int writes;

	fake_reset();
	model_of(&m, sh, 0);
	a = open_shape(sh, fx_gtc, true);
	model = calloc(1, m.size);
	assert_true(model && buf);
	fx_model_fill(a, model, MAXLEN, 0);
	fake_fail_member = 1;
	fake_fail_errno = err;
	/* chunk 0 is on member 0: untouched by the fault */
	assert_int_equal(m.member[0], 0);
	assert_int_equal(testreq_io(a, RF_REQ_READ, 100, 5000, buf), 0);
	assert_memory_equal(buf, model + 100, 5000);
	assert_int_equal(fake_nr_failed, 0);
	/* chunks 0-2: member 1's part fails the request */
	assert_int_equal(m.member[1], 1);
	assert_int_equal(testreq_io(a, RF_REQ_READ, 1000, 3 * 16384, buf), err);
	assert_true(fake_nr_failed > 0);
	assert_true(rf_array_failed(a));
	assert_int_equal(rf_array_faulty(a), 0);
	/* member 2's chunk still reads right */
	assert_int_equal(m.member[2], 2);
	assert_int_equal(testreq_io(a, RF_REQ_READ, 2 * 16384 + 3, 16000, buf), 0);
	assert_memory_equal(buf, model + 2 * 16384 + 3, 16000);
	/* a write fails without reaching any member, even one not failing */
	fake_nlog = 0;
	fake_log_on = true;
	writes = fake_count(-1, RF_MIO_WRITE);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, 4096, buf), -EIO);
	assert_int_equal(fake_count(-1, RF_MIO_WRITE), writes);
	assert_int_equal(fake_nlog, 0);
	rf_array_close(a);
	/* nothing written after the fault */
	fake_reset();
	assert_int_equal(members_diff(&m, sh->what, model), 0);
	free(model);
	free(buf);
	model_free(&m);
}

static void test_member_errors(void **state)
{
	member_errors(-EIO);
	member_errors(-ENOSPC);        /* passed through as it came */
}

/* A write that meets the failing member fails; the array is broken. */
static void test_write_error(void **state)
{
	const struct shape *sh = &equal[2];    /* 4 members, 64 KiB chunks */
	struct r0_model m;
	struct rf_array *a;
	char *buf = calloc(1, MAXLEN);

	assert_non_null(buf);
	fake_reset();
	model_of(&m, sh, 0);
	assert_true(m.member[2] == 2 && m.member[3] == 3);
	a = open_shape(sh, fx_gtc, true);
	fake_fail_member = 3;
	/* chunk 2 from its second byte to its end: member 2 only */
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 2 * 65536 + 1, 65535, buf), 0);
	assert_false(rf_array_failed(a));
	/* the last byte of chunk 2 and the first of chunk 3 */
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 3 * 65536 - 1, 2, buf), -EIO);
	assert_true(fake_nr_failed > 0);
	assert_true(rf_array_failed(a));
	assert_int_equal(rf_array_faulty(a), 0);
	rf_array_close(a);
	fake_reset();
	model_free(&m);
	free(buf);
}

/* ---- kernel md's zones ---- */

/* Byte off of an md-images array: each sector holds its number, u64 LE,
 * 64 times. */
static unsigned char pattern_byte(uint64_t off)
{
	return (unsigned char)((off / 512) >> (8 * (off % 8)));
}

static const char *md_images_dir(void)
{
	const char *env = getenv("RF_MD_IMAGES");
	struct stat st;

	if (env && *env)
		return env;
	/* make runs the tests from the top of the tree */
	return stat("tests/data/md-images/manifest.jsonl", &st) ? NULL : "tests/data/md-images";
}

/* Unpack the members of both zone arrays (one xz each, all at once: the
 * unpacking is most of this test's time); false: cannot. */
static bool unpack_zones(const char *dir, const char *const *names, const char *const *whats)
{
	char cmd[8192], p[FX_PATH];
	size_t len = 0;
	int k, i;

	if (strchr(dir, '\'') || strchr(fx_dir, '\'') || system("command -v xz >/dev/null 2>&1"))
		return false;
	for (k = 0; k < 2; k++)
		for (i = 0; i < 3; i++) {
			fx_member_path(p, sizeof(p), whats[k], i);
			len += (size_t)snprintf(cmd + len, sizeof(cmd) - len,
						"xz -dc '%s/%s/role%d.img.xz' >'%s' & p%d=$!; ", dir, names[k], i, p,
						k * 3 + i);
		}
	for (i = 0; i < 6; i++)
		len += (size_t)snprintf(cmd + len, sizeof(cmd) - len, "wait $p%d || exit 1; ", i);
	assert_true(len < sizeof(cmd));
	return system(cmd) == 0;
}

/* Where the model puts array sector s, the member holds md's pattern. */
static void check_md_sector(const struct r0_model *m, const int *fds, const char *name, uint64_t s)
{
	unsigned char blk[512];
	uint64_t moff;
	int k = model_map(m, s * 512, &moff), b;

	assert_int_equal(pread(fds[k], blk, 512, (off_t)moff), 512);
	for (b = 0; b < 512; b++)
		if (blk[b] != pattern_byte(s * 512 + (uint64_t)b))
			fail_msg("%s: array sector %llu: member %d at %llu does not hold it (md put it elsewhere)", name,
				 (unsigned long long)s, k, (unsigned long long)moff);
}

/* Read [off, off + len) through the array: md's pattern. */
static void check_md_read(struct rf_array *a, const char *name, uint64_t off, uint32_t len, unsigned char *buf)
{
	uint32_t b;

	assert_int_equal(testreq_io(a, RF_REQ_READ, off, len, (char *)buf), 0);
	for (b = 0; b < len; b++)
		if (buf[b] != pattern_byte(off + b))
			fail_msg("%s: array byte %llu reads %u, md wrote %u", name, (unsigned long long)(off + b), buf[b],
				 pattern_byte(off + b));
}

static void test_md_zones(void **state)
{
	static const char *const names[] = { "r0-3d-64k-zones-original", "r0-3d-64k-zones-alternate" };
	static const char *const whats[] = { "mdz-orig", "mdz-alt" };
	const char *dir = md_images_dir();
	unsigned char *buf = malloc(1u << 20);
	int k, i, z;

	assert_non_null(buf);
	if (!dir || !unpack_zones(dir, names, whats)) {
		print_message("[  SKIP    ] no md-images (RF_MD_IMAGES) or no xz\n");
		free(buf);
		skip();
	}
	for (k = 0; k < 2; k++) {
		char paths[3][FX_PATH];
		const char *pp[3];
		uint64_t data[3], doff[3], s;
		struct r0_model m;
		struct rf_array *a;
		int fds[3];

		for (i = 0; i < 3; i++) {
			struct stat st;

			fx_member_path(paths[i], FX_PATH, whats[k], i);
			pp[i] = paths[i];
			fds[i] = open(paths[i], O_RDONLY);
			assert_true(fds[i] >= 0 && !fstat(fds[i], &st));
			doff[i] = 2048 * 512;   /* the manifest's data_offset_sectors */
			data[i] = (uint64_t)st.st_size - doff[i];
		}
		model_build(&m, 3, 65536, k + 1, data, doff, true);
		assert_int_equal(m.size, 419840ull * 512);     /* the manifest's array_sectors */
		assert_int_equal(m.nzones, 3);
		/* The model agrees with what kernel md wrote. */
		for (s = 0; s < 256; s++) {
			check_md_sector(&m, fds, names[k], s);
			check_md_sector(&m, fds, names[k], m.size / 512 - 1 - s);
		}
		for (z = 0; z + 1 < m.nzones; z++)
			for (s = m.zone_end[z] / 512 - 256; s < m.zone_end[z] / 512 + 256; s++)
				check_md_sector(&m, fds, names[k], s);
		for (i = 0; i < 2000; i++)
			check_md_sector(&m, fds, names[k], fx_rand() % (m.size / 512));
		for (i = 0; i < 3; i++)
			close(fds[i]);
		/* The array serves it, across the zones. */
		a = fx_open_assembled(pp, 3, true, fx_gtc);
		fx_start(a, fake_ioq_init);
		assert_int_equal(rf_array_size(a), m.size);
		for (z = 0; z + 1 < m.nzones; z++)
			check_md_read(a, names[k], m.zone_end[z] - (512 << 10) + 3, (1u << 20) - 5, buf);
		for (i = 0; i < 40; i++) {
			uint64_t off;
			uint32_t len;

			fx_rand_extent(m.size, 1u << 20, &off, &len);
			check_md_read(a, names[k], off, len, buf);
		}
		rf_array_close(a);
		for (i = 0; i < 3; i++)
			unlink(paths[i]);
		model_free(&m);
	}
	free(buf);
}

/* Negative controls: the checks above can fail. */
static void test_negative_controls(void **state)
{
	const struct shape *sh = &zoned[2];    /* three zones, original layout */
	struct r0_model m, wrong;
	struct rf_array *a;
	char *model, p[FX_PATH];
	uint64_t off, moff;
	unsigned char byte;
	int fd, k;

	fake_reset();
	model_of(&m, sh, sh->layout);
	a = open_shape(sh, fx_gtc, true);
	model = calloc(1, m.size);
	assert_non_null(model);
	fx_model_fill(a, model, MAXLEN, 0);
	rf_array_close(a);
	assert_int_equal(members_diff(&m, sh->what, model), 0);
	/* The other layout places zone 1 elsewhere: the check sees it. */
	model_of(&wrong, sh, 2);
	assert_true(members_diff(&wrong, sh->what, model) > 0);
	model_free(&wrong);
	/* One byte changed on a member, in zone 1: the member check finds
	 * that one byte, and the array reads it changed. */
	off = m.zone_end[0] + 3 * m.chunk + 777;
	k = model_map(&m, off, &moff);
	fx_member_path(p, sizeof(p), sh->what, k);
	fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	byte = (unsigned char)(model[off] ^ 0x40);
	assert_int_equal(pwrite(fd, &byte, 1, (off_t)moff), 1);
	close(fd);
	assert_int_equal(members_diff(&m, sh->what, model), 1);
	a = open_shape(sh, fx_gtc, false);
	assert_int_equal(fx_model_diff(a, model, MAXLEN), 1);
	rf_array_close(a);
	free(model);
	model_free(&m);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test_setup(test_equal_members, fx_threads2),
	cmocka_unit_test_setup(test_equal_members, fx_inline0),
	cmocka_unit_test_setup(test_zones, fx_threads2),
	cmocka_unit_test_setup(test_zones, fx_inline0),
	cmocka_unit_test_setup(test_split_exact, fx_threads2),
	cmocka_unit_test_setup(test_split_exact, fx_inline0),
	cmocka_unit_test_setup(test_member_errors, fx_threads2),
	cmocka_unit_test_setup(test_member_errors, fx_inline0),
	cmocka_unit_test_setup(test_write_error, fx_threads2),
	cmocka_unit_test_setup(test_negative_controls, fx_threads2),
	cmocka_unit_test_setup(test_md_zones, fx_threads2),
};

int main(void)
{
	return fx_run_tests("raid0", tests);
}
