/* SPDX-License-Identifier: GPL-2.0-or-later */
/* detect.c - find an array's geometry from what its members hold.
 *
 * For members whose superblocks are gone (or never were), this ranks the
 * geometries they could be an array of, by evidence, in four steps, each
 * cheap enough to run on samples:
 *
 *  1. Levels, from 256 sampled rows of 4 KiB at the same place on every
 *     member (independent of order, chunk and layout): copies identical
 *     (raid1: nothing else is tried), rows XOR to zero (raid4/5), rows
 *     where all but one member XOR to zero (raid6: that one is Q).  raid0
 *     and raid10 are always tried too: far and offset copies lie apart,
 *     mirrored pairs XOR to zero, and data made of counters can make any
 *     row XOR to zero.
 *  2. Data offsets: superblock hints, each place (in 4 KiB steps up to
 *     --max-offset) where a member's data starts after nothing or md's own
 *     metadata (superblock, bitmap, bad block log), rounded down to 1 MiB
 *     too, and the common 0, 1 MiB and 2 MiB.  Chunk sizes per offset,
 *     from where the data on each member stops running on ("breaks"):
 *     chunk boundaries break at every multiple of the chunk, inside a
 *     chunk the data runs on.  A clear answer is the one chunk tried; else
 *     all nine, best first.
 *  3. Every order (up to 6 members; up to 10, those along the best member
 *     cycles of successors(): the data runs on from one role's chunk into
 *     the next role's in the same row; raid10 and more members: the order
 *     given only, and the verdict says so), layout, chunk and offset is
 *     assembled and
 *     screened on a few rows and boundaries; the best KEEP are scored on
 *     more: parity or copies at sampled rows (ISA-L's P and Q for raid6),
 *     data running on across the array's chunk boundaries (the first
 *     ones, some spread over the array, and those next to the rows where
 *     step 1 saw such data), a signature at the array's start and its file
 *     system's metadata found where it says (detect_fs.c), data at the
 *     start and none just before the offset.  The score is the product of
 *     those shares (score_total()).
 *  4. The ranked list, equivalent candidates once (same_array()), and
 *     whether the best one stands out enough to be an answer: too little
 *     data (zeros), no structure (random or encrypted data), members of
 *     different arrays (no parity, nothing runs on), or a tie give no
 *     confident answer.
 *
 * "Runs on" is rf_detect_continues(): the next sector repeats the last or
 * carries on its step, 8 bytes at a time (counters, tables, fill), or is
 * text keeping the line length of the text before it.  It says nothing
 * about random data; there the file system's metadata has to decide.
 *
 * Invariants: members are opened read-only through rf_devopen_open() and
 * only pread; every read goes through one small cache that counts the
 * bytes it read (reported).  A missing member is rebuilt from parity
 * where the candidate allows it (one for raid4/5, two for raid6).  All
 * state is in struct dt and struct search, one detection at a time (no
 * threads).
 *
 * It does NOT: search member orders above 10 members (raid10: 6), data
 * offsets that differ between members or are not multiples of 4 KiB, arrays
 * mid-reshape, raid0 zones over unequal members (the first zone is what
 * it finds), or know the space md keeps at a member's end (the array size
 * is what fits on the smallest member).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/detect.h"
#include "raidfuse/devopen.h"
#include "raidfuse/le.h"
#include "raidfuse/parity.h"
#include "raidfuse/super.h"
#include "detect_int.h"

#define SEC 512
#define BLK 4096
#define CACHE_SLOTS 8192                /* 32 MiB of 4 KiB blocks, direct mapped */
#define LEVEL_ROWS 256                  /* step 1: sampled rows */
#define BREAK_WINDOWS 12                /* step 2: windows per member ... */
#define BREAK_WINDOW (1u << 20)         /* ... of 1 MiB */
#define SCREEN_ROWS 6
#define SCREEN_BOUNDS 10
#define FULL_ROWS 48
#define FULL_BOUNDS 96
#define KEEP 256                        /* candidates scored fully */
#define MAX_PERM_MEMBERS 6
#define MAX_CYCLE_MEMBERS 10            /* above: the order given only */
#define CYCLES 6                        /* member cycles tried per chunk and offset */
#define SUCC_ROWS 256
#define NCHUNKS 9                       /* 4K .. 1M */
#define MAX_OFFSETS 12
#define HOT_MAX 64
#define RUNS_ON 56                      /* of 64 words: the data runs on */

struct dt_member {
	const char *path;               /* NULL: missing */
	struct rf_devopen_fd dev;
	uint64_t size;
};

struct dt {
	int n, present, missing;
	struct dt_member m[RF_MAX_MEMBERS];
	uint64_t msize;                 /* smallest present member, bytes */
	uint64_t bytes_read;
	/* member byte offsets where some member holds data that runs on:
	 * where chunk boundaries say most about order and layout */
	uint64_t hot[HOT_MAX];
	int nhot;
	uint64_t clean_off;             /* before_clean()'s last answer */
	bool clean_known, clean;
	int err;                        /* first read error (-errno) */
	char errmsg[256];
	/* the cache: slot i holds block tag[i] of member who[i] (who -1: empty) */
	int who[CACHE_SLOTS];
	uint64_t tag[CACHE_SLOTS];
	uint8_t *data;
};

/* ---------------------------------------------------------------- member reads */

/* 4 KiB block blk of member m, through the cache; zeros past its end.
 * NULL on a read error (d->err says). */
static const uint8_t *blk_get(struct dt *d, int m, uint64_t blk)
{
	unsigned slot = (unsigned)((blk * 0x9e3779b97f4a7c15ull + (uint64_t)m * 0x632be59bd9b4e019ull) >> 51) %
			CACHE_SLOTS;
	uint8_t *p = d->data + (size_t)slot * BLK;
	ssize_t got = 0, r;

	if (d->who[slot] == m && d->tag[slot] == blk)
		return p;
	while (got < BLK) {
		r = pread(d->m[m].dev.fd, p + got, BLK - (size_t)got, (off_t)(blk * BLK + (uint64_t)got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			if (!d->err) {
				d->err = -errno;
				snprintf(d->errmsg, sizeof(d->errmsg), "member %d (%s): read at %llu: %s", m,
					 d->m[m].path, (unsigned long long)(blk * BLK), strerror(errno));
			}
			d->who[slot] = -1;
			return NULL;
		}
		if (!r)
			break;
		got += r;
	}
	d->bytes_read += (uint64_t)got;
	memset(p + got, 0, BLK - (size_t)got);
	d->who[slot] = m;
	d->tag[slot] = blk;
	return p;
}

/* len bytes of member m at off (512-aligned, within one 4 KiB block). */
static int mread(struct dt *d, int m, uint64_t off, void *buf, size_t len)
{
	const uint8_t *p;

	if (!d->m[m].path)
		return -ENODEV;
	p = blk_get(d, m, off / BLK);
	if (!p)
		return d->err;
	memcpy(buf, p + off % BLK, len);
	return 0;
}

static bool is_zero(const void *p, size_t len)
{
	const uint64_t *w = p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i])
			return false;
	return true;
}

/* A sector of text: tabs, newlines and printable ASCII only. */
static bool is_text(const uint8_t *p)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	int i, j;

	for (i = 0; i < SEC; i += 8) {
		uint64_t w = rf_get_le64(p + i), del = w ^ (0x7f * ones);

		/* a byte >= 0x80 or one that is 0x7f: not text */
		if ((w & high) || ((del - ones) & ~del & high))
			return false;
		/* a byte below 0x20: only tab, newline, return */
		if (((w - 0x20 * ones) & ~w & high))
			for (j = 0; j < 8; j++)
				if (p[i + j] < 0x20 && p[i + j] != '\t' && p[i + j] != '\n' && p[i + j] != '\r')
					return false;
	}
	return true;
}

/* Text runs on into y: where the lines of x0 and x have one length (a
 * table, a listing, base64), y's line ends must keep that step; other
 * text runs on into any text. */
static bool text_runs_on(const uint8_t *x0, const uint8_t *x, const uint8_t *y)
{
	const uint8_t *half[2] = { x0, x }, *p, *q;
	int h, i, last = -1, step = 0, lines = 0;

	for (h = 0; h < 2; h++)
		for (p = half[h]; (q = memchr(p, '\n', (size_t)(half[h] + SEC - p))); p = q + 1) {
			i = (int)(q - half[h]) + h * SEC;
			if (last >= 0) {
				if (step && i - last != step)
					return true;    /* lines of different lengths */
				step = i - last;
			}
			last = i;
			lines++;
		}
	if (lines < 3)
		return true;
	/* y's line ends: exactly where the step puts them */
	i = last + step - 2 * SEC;
	for (p = y; (q = memchr(p, '\n', (size_t)(y + SEC - p))); p = q + 1) {
		if (q - y != i)
			return false;
		i += step;
	}
	return i >= SEC;
}

int rf_detect_continues(const void *a0, const void *a, const void *b)
{
	const uint8_t *x0 = a0, *x = a, *y = b;
	int i, n = 0;

	if (is_text(x0) && is_text(x) && is_text(y))
		return text_runs_on(x0, x, y) ? SEC / 8 : 0;

	for (i = 0; i < SEC; i += 8) {
		uint64_t p = rf_get_le64(x0 + i), q = rf_get_le64(x + i), r = rf_get_le64(y + i);
		uint32_t plo = (uint32_t)p, qlo = (uint32_t)q, rlo = (uint32_t)r;
		uint32_t phi = (uint32_t)(p >> 32), qhi = (uint32_t)(q >> 32), rhi = (uint32_t)(r >> 32);

		if (r == q || r == 2 * q - p ||
		    ((rlo == qlo || rlo == 2 * qlo - plo) && (rhi == qhi || rhi == 2 * qhi - phi)))
			n++;
	}
	return n;
}

/* ---------------------------------------------------------------- candidates */

struct cand {
	struct rf_detect_cand c;
	struct dt *d;
};

/* Array sector s of the candidate into buf, rebuilding a missing member's
 * sector from the others where the level allows.  0 or -errno. */
static int cand_sector(struct cand *k, uint64_t s, void *buf)
{
	const struct rf_geom *g = &k->c.g;
	struct dt *d = k->d;
	uint64_t off = k->c.data_offset, addrs[RF_MAX_MEMBERS * 4];
	int devs[RF_MAX_MEMBERS * 4], i, nc, dev, ret;

	if (s >= g->array_sectors)
		return -ERANGE;
	switch (g->level) {
	case 0: {
		uint64_t ds;

		rf_r0_map(g, s, &dev, &ds);
		return k->c.role[dev] < 0 ? -ENODEV : mread(d, k->c.role[dev], off + ds * SEC, buf, SEC);
	}
	case 1:
	case 10:
		nc = rf_mirror_map(g, s, devs, addrs);
		for (i = 0; i < nc; i++)
			if (k->c.role[devs[i]] >= 0)
				return mread(d, k->c.role[devs[i]], off + addrs[i] * SEC, buf, SEC);
		return -ENODEV;
	default: {
		struct rf_r5_map m;
		struct rf_r5_row r;
		uint8_t col[RF_MAX_MEMBERS][SEC] __attribute__((aligned(64)));
		static const uint8_t zero[SEC] __attribute__((aligned(64)));
		char *bufs[RF_MAX_MEMBERS];
		void *blocks[RF_MAX_MEMBERS + 2];
		int fa = -1, fb = -1, nd;

		rf_r5_map_sector(g, s, &m);
		if (k->c.role[m.dd_idx] >= 0)
			return mread(d, k->c.role[m.dd_idx], off + m.dev_sector * SEC, buf, SEC);
		for (i = 0; i < g->raid_disks; i++) {
			bufs[i] = (char *)col[i];
			if (k->c.role[i] < 0) {
				if (fa < 0)
					fa = i;
				else if (fb < 0)
					fb = i;
				else
					return -ENODEV;         /* more missing than parity rebuilds */
				continue;
			}
			ret = mread(d, k->c.role[i], off + m.dev_sector * SEC, col[i], SEC);
			if (ret)
				return ret;
		}
		if (g->level != 6) {
			if (fb >= 0)
				return -ENODEV;
			memset(buf, 0, SEC);
			for (i = 0; i < g->raid_disks; i++)
				if (i != fa)
					rf_xor_into(SEC, col[i], buf);
			return 0;
		}
		rf_r5_row(g, m.stripe, &r);
		nd = rf_r6_blocks(&r, g->data_disks, bufs, 0, (void *)zero, blocks);
		fa = rf_r6_index(&r, fa);
		fb = fb >= 0 ? rf_r6_index(&r, fb) : -1;
		if (fb >= 0 && fb < fa) {
			int t = fa;

			fa = fb;
			fb = t;
		}
		ret = rf_raid6_recover(nd, SEC, blocks, fa, fb);
		if (ret)
			return ret;
		memcpy(buf, col[m.dd_idx], SEC);
		return 0;
	}
	}
}

static int cand_read(void *ctx, uint64_t s, void *buf)
{
	return cand_sector(ctx, s, buf);
}

int rf_detect_read_span(const struct rf_detect_reader *rd, uint64_t sector, void *buf, size_t len)
{
	size_t i;
	int ret;

	for (i = 0; i < len / SEC; i++) {
		ret = rd->read(rd->ctx, sector + i, (uint8_t *)buf + i * SEC);
		if (ret)
			return ret;
	}
	return 0;
}

/* Whether the row at member sector ds (of stripe, for raid4/5/6) agrees:
 * 1 yes, 0 no, -1 nothing to check (all zero, members missing). */
static int row_agrees(struct cand *k, uint64_t stripe, uint64_t ds)
{
	const struct rf_geom *g = &k->c.g;
	uint8_t col[RF_MAX_MEMBERS][SEC] __attribute__((aligned(64)));
	uint8_t p[SEC] __attribute__((aligned(64))), q[SEC] __attribute__((aligned(64)));
	static const uint8_t zero[SEC] __attribute__((aligned(64)));
	bool have[RF_MAX_MEMBERS], nonzero = false;
	char *bufs[RF_MAX_MEMBERS];
	void *blocks[RF_MAX_MEMBERS + 2];
	int i, nd, missing = 0, miss = -1;
	struct rf_r5_row r;

	for (i = 0; i < g->raid_disks; i++) {
		bufs[i] = (char *)col[i];
		have[i] = k->c.role[i] >= 0 && !mread(k->d, k->c.role[i], k->c.data_offset + ds * SEC, col[i], SEC);
		if (!have[i]) {
			missing++;
			miss = i;
			memset(col[i], 0, SEC);
		} else if (!is_zero(col[i], SEC)) {
			nonzero = true;
		}
	}
	if (!nonzero)
		return -1;
	if (g->level == 4 || g->level == 5) {
		if (missing)
			return -1;
		memset(p, 0, SEC);
		for (i = 0; i < g->raid_disks; i++)
			rf_xor_into(SEC, col[i], p);
		return is_zero(p, SEC);
	}
	rf_r5_row(g, stripe, &r);
	if (missing > 1 || (missing && miss != r.qd_idx))
		return -1;
	nd = rf_r6_blocks(&r, g->data_disks, bufs, 0, (void *)zero, blocks);
	rf_pq_gen(nd, SEC, blocks, p, q);
	return !memcmp(p, col[r.pd_idx], SEC) && (missing || !memcmp(q, col[r.qd_idx], SEC));
}

/* The same for the copies of array sector s (raid1/10). */
static int copies_agree(struct cand *k, uint64_t s)
{
	uint8_t a[SEC], b[SEC];
	uint64_t addrs[RF_MAX_MEMBERS * 4];
	int devs[RF_MAX_MEMBERS * 4], i, nc, got = 0;

	nc = rf_mirror_map(&k->c.g, s, devs, addrs);
	for (i = 0; i < nc; i++) {
		if (k->c.role[devs[i]] < 0 ||
		    mread(k->d, k->c.role[devs[i]], k->c.data_offset + addrs[i] * SEC, got ? b : a, SEC))
			continue;
		if (got++ && memcmp(a, b, SEC))
			return 0;
	}
	if (got < 2 || is_zero(a, SEC))
		return -1;
	return 1;
}

/* Parity or copies at rows rows spread over the array (the first few
 * first).  Stops early after two disagreeing rows when screening. */
static void score_redundancy(struct cand *k, int rows, bool screen)
{
	const struct rf_geom *g = &k->c.g;
	uint64_t span = g->level == 1 || g->level == 10 ? g->array_sectors : g->dev_sectors;
	uint64_t cs = g->chunk_sectors ? g->chunk_sectors : 8, nrows = span / cs, row, s;
	int i, v, bad = 0;

	k->c.red_ok = k->c.red_n = 0;
	if (g->level == 0 || !nrows)
		return;
	for (i = 0; i < rows; i++) {
		row = i < rows / 4 ? (uint64_t)i : (uint64_t)i * 2654435761u % nrows;
		if (row >= nrows)
			continue;
		s = row * cs + (uint64_t)(i * 37) % cs;
		v = g->level == 1 || g->level == 10 ? copies_agree(k, s) : row_agrees(k, row, s);
		if (v < 0)
			continue;
		k->c.red_n++;
		k->c.red_ok += v;
		if (!v && screen && ++bad >= 2)
			return;
	}
}

/* Does the data run on across the array's chunk boundary at sector s?
 * Counted only where it runs on just before it. */
static void boundary(struct cand *k, uint64_t s)
{
	uint8_t x[4][SEC];

	if (s < 3 || cand_sector(k, s - 3, x[0]) || cand_sector(k, s - 2, x[1]) || cand_sector(k, s - 1, x[2]) ||
	    cand_sector(k, s, x[3]))
		return;
	if (is_zero(x[2], SEC) || rf_detect_continues(x[0], x[1], x[2]) < RUNS_ON)
		return;
	k->c.cont_n++;
	if (rf_detect_continues(x[1], x[2], x[3]) >= RUNS_ON)
		k->c.cont_ok++;
}

/* The array sector where the chunk holding member sector ds of role
 * starts, or -1 (parity, or a level without the inverse here). */
static int64_t chunk_start(const struct rf_geom *g, int role, uint64_t ds)
{
	uint64_t cs = g->chunk_sectors;

	ds -= ds % cs;
	if (ds >= g->dev_sectors)
		return -1;
	if (g->level == 0)
		return g->nzones > 1 ? -1 : (int64_t)(((ds / cs) * (uint64_t)g->raid_disks + (uint64_t)role) * cs);
	if (g->level == 4 || g->level == 5 || g->level == 6)
		return rf_r5_array_sector(g, role, ds);
	return -1;
}

/* Data running on across the array's chunk boundaries: the first ones,
 * those at and after the chunks where the members hold such data, and
 * some spread over the array. */
static void score_continuity(struct cand *k, int bounds)
{
	const struct rf_geom *g = &k->c.g;
	uint64_t cs = g->chunk_sectors, nch, j, ds;
	int64_t s;
	int i, role;

	k->c.cont_ok = k->c.cont_n = 0;
	if (!cs)
		return;
	nch = g->array_sectors / cs;
	for (i = 0; i < bounds / 2; i++) {
		j = i < bounds / 4 ? (uint64_t)i + 1 : 1 + (uint64_t)i * 2654435761u % (nch ? nch - 1 : 1);
		if (j < nch)
			boundary(k, j * cs);
	}
	for (i = 0; i < k->d->nhot && i < bounds / 4; i++) {
		if (k->d->hot[i] < k->c.data_offset)
			continue;
		ds = (k->d->hot[i] - k->c.data_offset) / SEC;
		for (role = 0; role < g->raid_disks; role++) {
			s = chunk_start(g, role, ds);
			if (s > 0) {
				boundary(k, (uint64_t)s);
				boundary(k, (uint64_t)s + cs);
			}
		}
	}
}

/* md's own metadata blocks, which are not array data: a superblock, a
 * bitmap, a bad block log (empty entries are all ones). */
static bool md_block(const uint8_t *b)
{
	size_t i;

	if (rf_get_le32(b) == 0xa92b4efc || !memcmp(b, "bitm", 4))
		return true;
	for (i = 0; i < BLK && b[i] == 0xff; i++)
		;
	return i == BLK;
}

/* Nothing but zeros or md's metadata in the 64 KiB before off on any
 * member: md leaves the space before the data offset so.  The last
 * answer is kept (candidates come offset by offset). */
static bool before_clean(struct dt *d, uint64_t off)
{
	uint64_t pos;
	const uint8_t *b;
	int i;

	if (d->clean_known && d->clean_off == off)
		return d->clean;
	d->clean_known = true;
	d->clean_off = off;
	d->clean = false;
	for (i = 0; i < d->n; i++)
		for (pos = off > 64 * 1024 ? off - 64 * 1024 : 0; d->m[i].path && pos < off; pos += BLK) {
			b = blk_get(d, i, pos / BLK);
			if (b && !is_zero(b, BLK) && !md_block(b))
				return false;
		}
	return d->clean = true;
}

static void score_start(struct cand *k, bool full)
{
	struct rf_detect_reader rd = { cand_read, k };
	uint8_t b[BLK];

	k->c.start_data = !rf_detect_read_span(&rd, 0, b, BLK) && !is_zero(b, BLK);
	k->c.before_clean = before_clean(k->d, k->c.data_offset);
	/* screening looks further only where something starts the array */
	if (full || (k->c.start_data && rf_detect_signature(b, BLK)))
		rf_detect_volume(&rd, k->c.g.array_sectors, k->c.fs, sizeof(k->c.fs), &k->c.fs_ok, &k->c.fs_n);
}

/* The score, 0..100: a product of factors, one per kind of evidence,
 * each the share of its checks that passed; a kind with nothing to check
 * gives NONE.  Data running on counts cubed: parity alone cannot tell
 * member orders apart (any order XORs to zero), and counters in the data
 * can make a wrong level's rows XOR to zero, but a wrong order or chunk
 * breaks the data at its boundaries.  fs_any: some candidate has a
 * signature at its start (else that factor is 1 for all). */
#define NONE 0.7
#define RAID0 0.85      /* raid0 has no redundancy to check: that is no evidence against it */
static void score_total(struct rf_detect_cand *c, bool fs_any)
{
	double r = c->red_n ? (double)c->red_ok / c->red_n : c->g.level == 0 ? RAID0 : NONE;
	double k = c->g.level == 1 ? 1 : c->cont_n >= 4 ? (double)c->cont_ok / c->cont_n : NONE;
	double f = 1;

	if (fs_any) {
		f = c->fs[0] ? 1 : 0.5;
		if (c->fs_n)
			f *= (double)c->fs_ok / c->fs_n * c->fs_ok / c->fs_n;
	}
	c->score = 100.0 * r * k * k * k * f * (c->start_data ? 1 : 0.95) * (c->before_clean ? 1 : 0.95);
}

/* ---------------------------------------------------------------- search */

struct search {
	struct dt *d;
	struct rf_detect_result *r;
	struct cand keep[KEEP];
	int nkeep;
	int levels[8], nlevels;
	/* the best member cycles for (cyc_off, cyc_chunk) (arrays of more
	 * than MAX_PERM_MEMBERS members) */
	uint64_t cyc_off, cyc_chunk;
	int ncyc;
	int cyc[CYCLES][RF_MAX_MEMBERS];
	uint64_t offsets[MAX_OFFSETS];
	int noffsets;
	long evaluated;
};

/* Screening ranks by the same product, on fewer samples. */
static double screen_score(const struct rf_detect_cand *c)
{
	struct rf_detect_cand t = *c;

	score_total(&t, c->fs[0] != 0);
	return t.score;
}

static void keep_cand(struct search *S, struct cand *k)
{
	double sc = screen_score(&k->c);
	int i, worst = 0;

	k->c.score = sc;
	if (S->nkeep < KEEP) {
		S->keep[S->nkeep++] = *k;
		return;
	}
	for (i = 1; i < KEEP; i++)
		if (S->keep[i].c.score < S->keep[worst].c.score)
			worst = i;
	if (sc > S->keep[worst].c.score)
		S->keep[worst] = *k;
}

/* Screen one geometry (g and offset set, roles in perm). */
static void try_cand(struct search *S, const struct rf_geom *g0, uint64_t off, const int *perm)
{
	struct cand k;
	char err[128];

	memset(&k, 0, sizeof(k));
	k.d = S->d;
	k.c.g = *g0;
	k.c.data_offset = off;
	memcpy(k.c.role, perm, sizeof(int) * (size_t)g0->raid_disks);
	if (rf_geom_init(&k.c.g, err, sizeof(err)))
		return;
	S->evaluated++;
	score_redundancy(&k, SCREEN_ROWS, true);
	if (k.c.red_n >= 2 && k.c.red_ok * 2 < k.c.red_n)
		return;
	score_continuity(&k, SCREEN_BOUNDS);
	score_start(&k, false);
	keep_cand(S, &k);
}

static const int r5_layouts[] = { 0, 1, 2, 3, 4, 5 };
static const int r6_layouts[] = { 0, 1, 2, 3, 4, 5, 8, 9, 10, 16, 17, 18, 19, 20 };
static const int r10_layouts[] = { 0x102, 0x103, 0x201, 0x10201 };

/* Next permutation of a[0..n-1] in lexicographic order; false after the last. */
static bool next_perm(int *a, int n)
{
	int i = n - 2, j, t;

	while (i >= 0 && a[i] >= a[i + 1])
		i--;
	if (i < 0)
		return false;
	for (j = n - 1; a[j] <= a[i]; j--)
		;
	t = a[i], a[i] = a[j], a[j] = t;
	for (i++, j = n - 1; i < j; i++, j--)
		t = a[i], a[i] = a[j], a[j] = t;
	return true;
}

/* raid10 near layouts whose copy sets are whole groups of roles: orders
 * that only swap members inside a set are the same array; keep one. */
static bool r10_canonical(const struct rf_geom *g, const int *perm)
{
	int nc = g->layout & 0xff, fc = (g->layout >> 8) & 0xff, i;

	if (g->level != 10 || fc != 1 || g->raid_disks % nc)
		return true;
	for (i = 0; i < g->raid_disks; i++)
		if (i % nc && perm[i] < perm[i - 1])
			return false;
	return true;
}

/* succ[a][b]: of sampled rows of chunk cs (sectors) at off, those where
 * the data runs on from the end of member a's chunk into the start of
 * member b's.  Inside a row of every raid0/4/5/6 layout the data goes from
 * one role to the next, so the members' order is a cycle along which the
 * data runs on. */
static void successors(struct dt *d, uint64_t off, uint64_t cs, int succ[RF_MAX_MEMBERS][RF_MAX_MEMBERS])
{
	uint64_t rows = (d->msize - off) / SEC / cs, r, x, y;
	static uint8_t e[RF_MAX_MEMBERS][3][SEC], first[RF_MAX_MEMBERS][SEC];
	bool ok[RF_MAX_MEMBERS];
	int k, a, c;

	memset(succ, 0, sizeof(int) * RF_MAX_MEMBERS * RF_MAX_MEMBERS);
	for (k = 0; k < SUCC_ROWS && rows > 1; k++) {
		/* row r: its chunks start at x and end at y */
		r = (uint64_t)k * (rows - 1) / SUCC_ROWS;
		x = off + r * cs * SEC;
		y = x + cs * SEC;
		for (a = 0; a < d->n; a++)
			ok[a] = d->m[a].path && !mread(d, a, y - 3 * SEC, e[a][0], SEC) &&
				!mread(d, a, y - 2 * SEC, e[a][1], SEC) && !mread(d, a, y - SEC, e[a][2], SEC) &&
				!is_zero(e[a][2], SEC) && rf_detect_continues(e[a][0], e[a][1], e[a][2]) >= RUNS_ON;
		/* a chunk another member repeats (a mirror, or parity that
		 * equals a data chunk, as counters can make it) tells nothing */
		for (a = 0; a < d->n; a++)
			for (c = a + 1; c < d->n; c++)
				if (ok[a] && ok[c] && !memcmp(e[a][2], e[c][2], SEC))
					ok[a] = ok[c] = false;
		for (c = 0; c < d->n; c++)
			if (!d->m[c].path || mread(d, c, x, first[c], SEC))
				memset(first[c], 0, SEC);
		for (c = 0; c < d->n; c++) {
			if (!d->m[c].path || is_zero(first[c], SEC))
				continue;
			for (a = 0; a < d->n; a++)
				if (a != c && d->m[a].path && !memcmp(first[a], first[c], SEC))
					break;
			if (a < d->n)
				continue;
			for (a = 0; a < d->n; a++)
				if (a != c && ok[a] && rf_detect_continues(e[a][1], e[a][2], first[c]) >= RUNS_ON)
					succ[a][c]++;
		}
	}
}

/* The CYCLES member cycles (member 0 first) along which the most data runs
 * on, into S->cyc. */
static void best_cycles(struct search *S, uint64_t off, uint64_t cs)
{
	static int succ[RF_MAX_MEMBERS][RF_MAX_MEMBERS];
	int n = S->d->n, perm[RF_MAX_MEMBERS], best[CYCLES], i, j, w, sum;

	if (S->ncyc && S->cyc_off == off && S->cyc_chunk == cs)
		return;
	S->cyc_off = off;
	S->cyc_chunk = cs;
	S->ncyc = 0;
	successors(S->d, off, cs, succ);
	for (i = 0; i < n; i++)
		perm[i] = i;
	do {
		for (sum = 0, i = 0; i < n; i++)
			sum += succ[perm[i]][perm[(i + 1) % n]];
		if (S->ncyc < CYCLES) {
			w = S->ncyc++;
		} else {
			for (w = 0, j = 1; j < CYCLES; j++)
				if (best[j] < best[w])
					w = j;
			if (sum <= best[w])
				continue;
		}
		best[w] = sum;
		memcpy(S->cyc[w], perm, sizeof(perm));
	} while (next_perm(perm + 1, n - 1));
}

static void search_geom(struct search *S, struct rf_geom *g, uint64_t off)
{
	int perm[RF_MAX_MEMBERS], i, n = S->d->n;
	bool more;

	/* roles 0..n-1 get the members (missing ones included: index -1
	 * stands for "missing" only through dt_member.path == NULL, so the
	 * permutation is over argument indexes and role[] keeps them) */
	for (i = 0; i < n; i++)
		perm[i] = i;
	if (g->level != 1 && g->level != 10 && n > MAX_PERM_MEMBERS && n <= MAX_CYCLE_MEMBERS) {
		int roles[RF_MAX_MEMBERS], c, rot;

		best_cycles(S, off, g->chunk_sectors);
		for (c = 0; c < S->ncyc; c++)
			for (rot = 0; rot < n; rot++) {
				for (i = 0; i < n; i++) {
					int m = S->cyc[c][(i + rot) % n];

					roles[i] = S->d->m[m].path ? m : -1;
				}
				try_cand(S, g, off, roles);
			}
		return;
	}
	if (g->level == 1 || n > MAX_PERM_MEMBERS) {
		int roles[RF_MAX_MEMBERS];

		for (i = 0; i < n; i++)
			roles[i] = S->d->m[i].path ? i : -1;
		try_cand(S, g, off, roles);
		return;
	}
	do {
		int roles[RF_MAX_MEMBERS];

		for (i = 0; i < n; i++)
			roles[i] = S->d->m[perm[i]].path ? perm[i] : -1;
		if (r10_canonical(g, perm))
			try_cand(S, g, off, roles);
		more = next_perm(perm, n);
	} while (more);
}

/* ---------------------------------------------------------------- steps 1, 2 */

struct level_stats {
	int informative, eq_all, xor0, xor_but1, pair;
};

static int level_stats(struct dt *d, struct level_stats *ls)
{
	uint8_t *b = malloc((size_t)d->n * BLK), x[BLK];
	uint64_t lo = 64 * 1024, hi = d->msize > 2 * lo ? d->msize - lo : 0, pos;
	int i, j, k, np, first;

	memset(ls, 0, sizeof(*ls));
	if (!b)
		return -ENOMEM;
	for (k = 0; k < LEVEL_ROWS && hi > lo; k++) {
		pos = (lo + (hi - lo) / LEVEL_ROWS * (uint64_t)k) / BLK * BLK;
		np = 0;
		first = -1;
		memset(x, 0, BLK);
		for (i = 0; i < d->n; i++) {
			if (!d->m[i].path)
				continue;
			if (mread(d, i, pos, b + (size_t)i * BLK, BLK)) {
				free(b);
				return d->err;
			}
			if (first < 0)
				first = i;
			rf_xor_into(BLK, b + (size_t)i * BLK, x);
			np++;
		}
		bool nz = false, eq = true, pair = false, but1 = false;

		for (i = 0; i < d->n; i++) {
			if (!d->m[i].path)
				continue;
			if (!is_zero(b + (size_t)i * BLK, BLK))
				nz = true;
			if (memcmp(b + (size_t)i * BLK, b + (size_t)first * BLK, BLK))
				eq = false;
			for (j = i + 1; j < d->n; j++)
				if (d->m[j].path && !is_zero(b + (size_t)i * BLK, BLK) &&
				    !memcmp(b + (size_t)i * BLK, b + (size_t)j * BLK, BLK))
					pair = true;
			if (!is_zero(x, BLK) && !memcmp(x, b + (size_t)i * BLK, BLK))
				but1 = true;
		}
		if (!nz || np < 2)
			continue;
		for (i = 0; i < d->n && d->nhot < HOT_MAX; i++) {
			const uint8_t *q = b + (size_t)i * BLK;

			if (d->m[i].path && !is_zero(q + SEC, SEC) && rf_detect_continues(q, q + SEC, q + 2 * SEC) >= RUNS_ON) {
				d->hot[d->nhot++] = pos;
				break;
			}
		}
		ls->informative++;
		ls->eq_all += eq;
		ls->xor0 += is_zero(x, BLK);
		ls->xor_but1 += but1;
		ls->pair += pair;
	}
	free(b);
	return 0;
}

static void add_level(struct search *S, int level)
{
	int i;

	for (i = 0; i < S->nlevels; i++)
		if (S->levels[i] == level)
			return;
	S->levels[S->nlevels++] = level;
}

static void pick_levels(struct search *S, const struct level_stats *ls, int want)
{
	struct dt *d = S->d;
	double inf = ls->informative ? ls->informative : 1;
	double feq = ls->eq_all / inf, fx = ls->xor0 / inf, fq = ls->xor_but1 / inf, fp = ls->pair / inf;
	int n = d->n;

	snprintf(S->r->level_evidence, sizeof(S->r->level_evidence),
		 "%d sampled rows hold data: copies identical in %.0f%%, XOR to zero in %.0f%%, "
		 "all but one XOR to zero in %.0f%%, some pair identical in %.0f%%",
		 ls->informative, 100 * feq, 100 * fx, 100 * fq, 100 * fp);
	if (want >= 0) {
		add_level(S, want);
		return;
	}
	if (d->present >= 2 && feq >= 0.95) {
		add_level(S, 1);
		return;
	}
	if (!d->missing) {
		if (n >= 3 && fx >= 0.95) {
			add_level(S, 5);
			add_level(S, 4);
		}
		if (n >= 4 && fq >= 0.95)
			add_level(S, 6);
		/* raid0, and raid10 whose copies lie apart (far, offset),
		 * show nothing here, and counters in the data can make their
		 * rows XOR to zero (and mirrored pairs always do): always
		 * candidates */
		add_level(S, 10);
		add_level(S, 0);
		return;
	}
	if (d->missing == 1 && n >= 3) {
		add_level(S, 5);
		add_level(S, 4);
	}
	if (n >= 4 && d->missing <= 2)
		add_level(S, 6);
	add_level(S, 10);
}

static void add_offset(struct search *S, uint64_t off)
{
	int i;

	off = off / BLK * BLK;
	if (off + 64 * 1024 > S->d->msize)
		return;
	for (i = 0; i < S->noffsets; i++)
		if (S->offsets[i] == off)
			return;
	if (S->noffsets < MAX_OFFSETS)
		S->offsets[S->noffsets++] = off;
}

/* Superblock hints, and the first 4 KiB block holding data on any member. */
static void find_offsets(struct search *S, uint64_t max_offset)
{
	struct dt *d = S->d;
	struct rf_sb *sb = malloc(sizeof(*sb));
	uint64_t pos;
	char err[512], roles[64];
	size_t hl = 0;
	int i;

	for (i = 0; i < d->n && sb; i++) {
		if (!d->m[i].path || rf_sb_read(d->m[i].dev.fd, d->m[i].path, sb, err, sizeof(err)))
			continue;
		if (sb->role >= 0)
			snprintf(roles, sizeof(roles), "role %d", sb->role);
		else
			snprintf(roles, sizeof(roles), "no role");
		hl += (size_t)snprintf(S->r->hints + hl, hl < sizeof(S->r->hints) ? sizeof(S->r->hints) - hl : 0,
				       "%smember %d (%s): md superblock: raid%d, %d members, chunk %uK, "
				       "layout %d, data offset %llu sectors, %s",
				       hl ? "; " : "", i, d->m[i].path, sb->level, sb->raid_disks,
				       sb->chunk_sectors / 2, sb->layout, (unsigned long long)sb->data_offset, roles);
		add_offset(S, sb->data_offset * SEC);
	}
	free(sb);
	/* where data starts after nothing (or md's metadata), up to three
	 * times per member: the first is the data offset unless the array
	 * starts with zeros */
	for (i = 0; i < d->n; i++) {
		uint64_t edge = UINT64_MAX;
		bool empty = true;
		int edges = 0;

		for (pos = 0; d->m[i].path && pos <= max_offset && pos + BLK <= d->m[i].size; pos += BLK) {
			const uint8_t *b = blk_get(d, i, pos / BLK);
			bool data;

			if (!b)
				return;
			if (edges && pos >= edge + (1u << 20))
				break;
			data = !is_zero(b, BLK) && !md_block(b);
			if (data && empty && edges++ < 3) {
				edge = pos;
				add_offset(S, pos);
				add_offset(S, pos & ~(uint64_t)0xfffff);
			}
			empty = !data;
		}
	}
	add_offset(S, 0);
	add_offset(S, 1 << 20);
	add_offset(S, 2 << 20);
}

/* Where data stops running on, per member: at each 4 KiB position of the
 * windows, whether the data ran on before it (informative) and broke. */
struct breaks {
	int n;
	uint64_t *pos;
	uint8_t *brk;
};

static int collect_breaks(struct dt *d, struct breaks *B)
{
	uint64_t w, x, start, span = d->msize > BREAK_WINDOW ? d->msize - BREAK_WINDOW : 0;
	uint8_t s[4][SEC];
	int i;

	B->n = 0;
	B->pos = malloc(sizeof(*B->pos) * (size_t)d->n * BREAK_WINDOWS * (BREAK_WINDOW / BLK));
	B->brk = malloc((size_t)d->n * BREAK_WINDOWS * (BREAK_WINDOW / BLK));
	if (!B->pos || !B->brk)
		return -ENOMEM;
	for (i = 0; i < d->n; i++) {
		if (!d->m[i].path)
			continue;
		for (w = 0; w < BREAK_WINDOWS; w++) {
			start = (span / BREAK_WINDOWS * w) & ~(uint64_t)(BREAK_WINDOW - 1);
			for (x = start + BLK; x < start + BREAK_WINDOW && x + SEC <= d->msize; x += BLK) {
				if (mread(d, i, x - 3 * SEC, s[0], SEC) || mread(d, i, x - 2 * SEC, s[1], SEC) ||
				    mread(d, i, x - SEC, s[2], SEC) || mread(d, i, x, s[3], SEC))
					return d->err;
				if (is_zero(s[2], SEC) || rf_detect_continues(s[0], s[1], s[2]) < RUNS_ON)
					continue;
				B->pos[B->n] = x;
				B->brk[B->n++] = rf_detect_continues(s[1], s[2], s[3]) < RUNS_ON;
			}
		}
	}
	return 0;
}

/* Chunk candidates (log2 of bytes, 12..20) for data offset off, best
 * first; returns how many (all nine when the breaks say nothing). */
static int chunk_candidates(const struct breaks *B, uint64_t off, int *out)
{
	int cnt[NCHUNKS + 1] = { 0 }, brk[NCHUNKS + 1] = { 0 }, i, p, c, order[NCHUNKS], n = 0;
	double rate[NCHUNKS], score[NCHUNKS], hi, lo;
	bool known[NCHUNKS];

	for (i = 0; i < B->n; i++) {
		uint64_t rel;

		if (B->pos[i] <= off)
			continue;
		rel = B->pos[i] - off;
		p = __builtin_ctzll(rel) - 12;
		if (p >= NCHUNKS)
			p = NCHUNKS - 1;
		cnt[p]++;
		brk[p] += B->brk[i];
	}
	for (p = 0; p < NCHUNKS; p++) {
		known[p] = cnt[p] >= 3;
		rate[p] = known[p] ? (double)brk[p] / cnt[p] : 0;
	}
	for (c = 0; c < NCHUNKS; c++) {
		int nh = 0, nl = 0;

		hi = lo = 0;
		for (p = 0; p < NCHUNKS; p++) {
			if (!known[p])
				continue;
			if (p >= c)
				hi += rate[p], nh++;
			else
				lo += rate[p], nl++;
		}
		score[c] = (nh ? hi / nh : 0) - (nl ? lo / nl : 0);
		order[c] = c;
	}
	/* sort by score, descending (nine entries) */
	for (i = 1; i < NCHUNKS; i++)
		for (c = i; c > 0 && score[order[c]] > score[order[c - 1]]; c--) {
			int t = order[c];

			order[c] = order[c - 1];
			order[c - 1] = t;
		}
	/* a clear answer (the data runs on inside chunks and breaks at
	 * their boundaries) is the one candidate; else all, best first */
	if (score[order[0]] >= 0.8 && score[order[1]] < score[order[0]] - 0.3) {
		out[0] = order[0] + 12;
		return 1;
	}
	for (c = 0; c < NCHUNKS; c++)
		out[n++] = order[c] + 12;
	return n;
}

/* ---------------------------------------------------------------- the whole */

static int cmp_score(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->c.score != y->c.score)
		return x->c.score < y->c.score ? 1 : -1;
	/* equal: the simpler description first (raid4 before raid5 parity-first) */
	if (x->c.g.level != y->c.g.level)
		return x->c.g.level - y->c.g.level;
	return x->c.g.layout - y->c.g.layout;
}

/* Where array sector s lies: (member argument, byte offset) of each
 * copy, sorted (one for raid0/4/5/6). */
static int locate(const struct rf_detect_cand *c, uint64_t s, uint64_t *loc)
{
	uint64_t addrs[RF_MAX_MEMBERS * 4], t;
	int devs[RF_MAX_MEMBERS * 4], i, j, nc = 1;

	if (c->g.level == 0) {
		rf_r0_map(&c->g, s, &devs[0], &addrs[0]);
	} else if (c->g.level == 1 || c->g.level == 10) {
		nc = rf_mirror_map(&c->g, s, devs, addrs);
	} else {
		struct rf_r5_map m;

		rf_r5_map_sector(&c->g, s, &m);
		devs[0] = m.dd_idx;
		addrs[0] = m.dev_sector;
	}
	for (i = 0; i < nc; i++) {
		loc[i] = ((uint64_t)(c->role[devs[i]] + 1) << 56) | (c->data_offset + addrs[i] * SEC);
		for (j = i; j > 0 && loc[j] < loc[j - 1]; j--)
			t = loc[j], loc[j] = loc[j - 1], loc[j - 1] = t;
	}
	return nc;
}

/* Two candidates give the same array: every sampled sector lies in the
 * same places (raid4 and raid5 parity-first with the parity member moved,
 * raid10 orders that swap the members of one copy set). */
static bool same_array(const struct rf_detect_cand *a, const struct rf_detect_cand *b)
{
	uint64_t la[RF_MAX_MEMBERS * 4], lb[RF_MAX_MEMBERS * 4], s, cs;
	int i, na, nb;

	if (a->g.array_sectors != b->g.array_sectors)
		return false;
	cs = a->g.chunk_sectors ? a->g.chunk_sectors : 8;
	for (i = 0; i < 256; i++) {
		s = i < 128 ? (uint64_t)i * cs / 2 + (uint64_t)i % 3 : (uint64_t)i * 2654435761u % a->g.array_sectors;
		if (s >= a->g.array_sectors)
			continue;
		na = locate(a, s, la);
		nb = locate(b, s, lb);
		if (na != nb || memcmp(la, lb, sizeof(la[0]) * (size_t)na))
			return false;
	}
	return true;
}

static void verdict(struct search *S, int nperm_skipped)
{
	struct rf_detect_result *r = S->r;
	const struct rf_detect_cand *b = &r->cand[0], *s = r->ncand > 1 ? &r->cand[1] : NULL;
	char *v = r->verdict;
	size_t vl = sizeof(r->verdict);
	bool red = b->red_n >= 8 && b->red_ok * 100 >= b->red_n * 95;
	bool cont = b->cont_n >= 8 && b->cont_ok * 100 >= b->cont_n * 95;
	bool fs = b->fs_n >= 2 && b->fs_ok * 100 >= b->fs_n * 90;

	r->confident = false;
	if (!r->ncand) {
		snprintf(v, vl, "evidence too weak: no geometry fits the members");
		return;
	}
	if (nperm_skipped) {
		snprintf(v, vl, "not confident: more than %d members, member orders were not searched",
			 MAX_CYCLE_MEMBERS);
		return;
	}
	if (b->g.level == 10 && r->nmembers > MAX_PERM_MEMBERS) {
		snprintf(v, vl, "not confident: raid10 member orders of more than %d members were not searched",
			 MAX_PERM_MEMBERS);
		return;
	}
	if (b->g.level == 0 && !(fs || (b->cont_n >= 16 && b->cont_ok * 100 >= b->cont_n * 95))) {
		snprintf(v, vl, "evidence too weak: no redundancy, and neither data running on across chunk "
			 "boundaries nor file system metadata say the order (random, encrypted or unrelated data?)");
		return;
	}
	if (b->g.level != 0 && !red && !(b->red_n < 8 && (cont || fs))) {
		snprintf(v, vl, "evidence too weak: parity or copies agree in %d of %d sampled rows", b->red_ok,
			 b->red_n);
		return;
	}
	if (b->g.level != 1 && !cont && !fs) {
		snprintf(v, vl, "evidence too weak: order and chunk not settled (data runs on across %d of %d chunk "
			 "boundaries, file system checks %d of %d)", b->cont_ok, b->cont_n, b->fs_ok, b->fs_n);
		return;
	}
	if (s && b->score - s->score < 2.0) {
		snprintf(v, vl, "not confident: the first two candidates score %.1f and %.1f", b->score, s->score);
		return;
	}
	r->confident = true;
	snprintf(v, vl, "confident: score %.1f, next %.1f", b->score, s ? s->score : 0.0);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void dt_close(struct dt *d)
{
	int i;

	for (i = 0; i < d->n; i++)
		if (d->m[i].path)
			rf_devopen_close(&d->m[i].dev);
	free(d->data);
	free(d);
}

static int dt_open(const char *const *paths, int n, const struct rf_detect_opts *o, struct dt **out, char *err,
		   size_t errlen)
{
	struct dt *d = calloc(1, sizeof(*d));
	char who[64];
	int i, ret;

	if (!d)
		return -ENOMEM;
	d->n = o->members ? o->members : n;
	d->data = malloc((size_t)CACHE_SLOTS * BLK);
	if (!d->data) {
		free(d);
		return -ENOMEM;
	}
	for (i = 0; i < CACHE_SLOTS; i++)
		d->who[i] = -1;
	d->msize = UINT64_MAX;
	for (i = 0; i < d->n; i++) {
		d->m[i].dev.fd = d->m[i].dev.fd_direct = -1;
		if (i >= n || !paths[i] || !strcmp(paths[i], "missing")) {
			d->missing++;
			continue;
		}
		snprintf(who, sizeof(who), "member %d (%s)", i, paths[i]);
		ret = rf_devopen_open(paths[i], who, RF_DEVOPEN_RDONLY | RF_DEVOPEN_NOLOCK, &d->m[i].dev, err, errlen);
		if (ret) {
			d->n = i;
			dt_close(d);
			return ret;
		}
		d->m[i].path = paths[i];
		d->m[i].size = d->m[i].dev.id.size;
		if (d->m[i].size < d->msize)
			d->msize = d->m[i].size;
		d->present++;
	}
	*out = d;
	return 0;
}

int rf_detect(const char *const *paths, int n, const struct rf_detect_opts *o, struct rf_detect_result *r,
	      char *err, size_t errlen)
{
	struct search *S;
	struct level_stats ls;
	struct breaks B = { 0 };
	struct dt *d;
	double t0 = now();
	int i, j, li, oi, ci, lay, ret, chunks[NCHUNKS], nch, skipped = 0;
	bool fs_any = false;

	memset(r, 0, sizeof(*r));
	if (n < 1 || n > RF_MAX_MEMBERS || (o->members && (o->members < n || o->members > RF_MAX_MEMBERS))) {
		snprintf(err, errlen, "detect: %d members given, --members %d (at most %d)", n, o->members,
			 RF_MAX_MEMBERS);
		return -EINVAL;
	}
	ret = dt_open(paths, n, o, &d, err, errlen);
	if (ret)
		return ret;
	r->nmembers = d->n;
	for (i = 0; i < d->n; i++)
		r->paths[i] = d->m[i].path;
	if (d->present < 2 || d->msize < 256 * 1024) {
		snprintf(err, errlen, "detect: %s", d->present < 2 ? "at least two members must be present"
								     : "members are smaller than 256 KiB");
		dt_close(d);
		return -EINVAL;
	}
	S = calloc(1, sizeof(*S));
	if (!S) {
		dt_close(d);
		return -ENOMEM;
	}
	S->d = d;
	S->r = r;
	ret = level_stats(d, &ls);
	if (!ret)
		ret = collect_breaks(d, &B);
	if (ret)
		goto out;
	if (ls.informative < 8) {
		snprintf(r->level_evidence, sizeof(r->level_evidence), "%d of %d sampled rows hold data",
			 ls.informative, LEVEL_ROWS);
		snprintf(r->verdict, sizeof(r->verdict),
			 "evidence too weak: the members hold (almost) nothing where sampled (all zeros?)");
		goto out;
	}
	pick_levels(S, &ls, o->level);
	find_offsets(S, o->max_offset);
	if (d->err) {
		ret = d->err;
		goto out;
	}
	if (d->n > MAX_CYCLE_MEMBERS)
		skipped = 1;
	for (li = 0; li < S->nlevels; li++) {
		int level = S->levels[li];
		const int *lays = level == 5 ? r5_layouts : level == 6 ? r6_layouts : level == 10 ? r10_layouts
											      : NULL;
		int nlays = level == 5 ? 6 : level == 6 ? (int)(sizeof(r6_layouts) / sizeof(int))
			  : level == 10 ? (int)(sizeof(r10_layouts) / sizeof(int)) : 1;

		for (oi = 0; oi < S->noffsets; oi++) {
			nch = level == 1 ? 1 : chunk_candidates(&B, S->offsets[oi], chunks);
			for (ci = 0; ci < nch; ci++) {
				for (lay = 0; lay < nlays; lay++) {
					struct rf_geom g = { 0 };

					/* raid5 parity-last is raid4's array */
					if (level == 5 && lays[lay] == 5 && S->nlevels > 1 &&
					    (S->levels[0] == 4 || S->levels[1] == 4))
						continue;
					g.level = level;
					g.layout = lays ? lays[lay] : level == 4 ? 5 : 0;
					g.raid_disks = d->n;
					g.chunk_sectors = level == 1 ? 0 : (1u << chunks[ci]) / SEC;
					g.dev_sectors = (d->msize - S->offsets[oi]) / SEC;
					if (g.chunk_sectors)
						g.dev_sectors -= g.dev_sectors % g.chunk_sectors;
					else
						g.dev_sectors -= g.dev_sectors % 8;
					search_geom(S, &g, S->offsets[oi]);
					if (d->err) {
						ret = d->err;
						goto out;
					}
				}
			}
		}
	}
	for (i = 0; i < S->nkeep; i++) {
		struct cand *k = &S->keep[i];

		score_redundancy(k, FULL_ROWS, false);
		score_continuity(k, FULL_BOUNDS);
		score_start(k, true);
		if (k->c.fs[0])
			fs_any = true;
	}
	for (i = 0; i < S->nkeep; i++)
		score_total(&S->keep[i].c, fs_any);
	qsort(S->keep, (size_t)S->nkeep, sizeof(S->keep[0]), cmp_score);
	for (i = 0; i < S->nkeep && r->ncand < RF_DETECT_MAX_CANDS; i++) {
		for (j = 0; j < r->ncand; j++)
			if (same_array(&r->cand[j], &S->keep[i].c))
				break;
		if (j == r->ncand)
			r->cand[r->ncand++] = S->keep[i].c;
	}
	verdict(S, skipped);
	if (d->err)
		ret = d->err;
out:
	if (ret && d->err)
		snprintf(err, errlen, "%s", d->errmsg);
	else if (ret)
		snprintf(err, errlen, "detect: %s", strerror(-ret));
	r->bytes_read = d->bytes_read;
	r->seconds = now() - t0;
	free(B.pos);
	free(B.brk);
	free(S);
	dt_close(d);
	return ret;
}
