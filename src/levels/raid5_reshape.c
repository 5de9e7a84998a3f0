/* SPDX-License-Identifier: GPL-2.0-or-later */
/* raid5_reshape.c - the parity levels' part of the reshape walk
 * (core/reshapework.h; the walk is services/reshape.c, md's raid5
 * reshape_request).
 *
 * md reshapes raid4/5/6 in units of the larger chunk of the two
 * geometries (its reshape_sectors): a window is whole rows of new stripes
 * of that unit, and the rows of array sector s in a geometry are the unit
 * row s falls in (on every member alike), which is what the walk's
 * crash-safety test compares.  A window's old data is read chunk by
 * chunk from each chunk's data member; a chunk on a missing member (a
 * failed one, or one a level change added, absent in the previous rows)
 * is computed from the rest of its row as a degraded read computes it.
 * The new rows are written whole, P (and Q) computed here, on every
 * member but the faulty ones (the parity covers theirs).  Past the old
 * array's end the window holds zeros (md zeroes what the old array never
 * held).
 *
 * Where the data moves: a whole new row of chunks lower where the room
 * before the data allows (windows then grow at once), a chunk at least.
 *
 * It does NOT pick windows or hold writes (the walk does).
 */
#include <errno.h>
#include <string.h>

#include "core/reshapework.h"
#include "levels/raid5_int.h"
#include "raidfuse/iolog.h"
#include "raidfuse/parity.h"

static uint64_t r5_granule(const struct rf_geom *g, uint64_t unit)
{
	return unit * (uint64_t)g->data_disks;
}

static uint64_t r5_dev_first(const struct rf_geom *g, uint64_t unit, uint64_t s)
{
	return s / (unit * (uint64_t)g->data_disks) * unit;
}

static uint64_t r5_dev_end(const struct rf_geom *g, uint64_t unit, uint64_t s)
{
	return (s / (unit * (uint64_t)g->data_disks) + 1) * unit;
}

static uint64_t r5_move(const struct rf_geom *from, const struct rf_geom *to, uint64_t unit, uint64_t *least)
{
	(void)from;
	*least = unit;
	return (uint64_t)(to->raid_disks - (to->level == 6 ? 2 : 1)) * unit;
}

/* P and Q of each new row of a window; one old row's chunks, to compute
 * a missing one. */
static void r5_bufs(const struct rf_geom *g, const struct rf_geom *prev, uint64_t unit, uint64_t window,
		    size_t *par, size_t *scratch)
{
	*par = (size_t)(2 * (window / r5_granule(g, unit) + 1) * unit * 512);
	*scratch = (size_t)prev->raid_disks * prev->chunk_sectors * 512;
}

/* len bytes of old row mp->stripe's chunk on a missing member (at
 * mp->dev_sector), into out: computed from the rest of the row, as a
 * degraded read computes it (md's reshape reads through its stripe cache,
 * which does the same).  -EIO when the row lacks more than its parity
 * covers. */
static int read_missing(struct rf_reshape_work *w, const struct rf_r5_map *mp, char *out, uint32_t len,
			uint64_t miss)
{
	struct rf_array *a = w->a;
	const struct rf_geom *p = &rf_array_reshape_state(a)->prev;
	void *blocks[RF_MAX_MEMBERS + 2];
	char *bufs[RF_MAX_MEMBERS];
	struct rf_r5_row row;
	int m, k = 0, fa = -1, fb = -1, ret;

	rf_r5_row(p, mp->stripe, &row);
	for (m = 0; m < p->raid_disks; m++) {
		bufs[m] = m == mp->dd_idx ? out : w->scratch + (size_t)m * p->chunk_sectors * 512;
		if (!(miss & (1ull << m)))
			rf_reshape_io(w, m, false, bufs[m], rf_dev_get(a, m)->data_offset + mp->dev_sector * 512, len);
	}
	ret = rf_reshape_io_wait(w);
	if (ret)
		return ret;
	if (p->level != 6) {
		/* raid4/5: the xor of every other member, parity included */
		if (__builtin_popcountll(miss & ((1ull << p->raid_disks) - 1)) > 1)
			return -EIO;
		for (m = 0; m < p->raid_disks; m++)
			if (m != mp->dd_idx)
				blocks[k++] = bufs[m];
		rf_xor_gen(k, len, blocks, out);
		return 0;
	}
	for (m = 0; m < p->raid_disks; m++) {
		if (!(miss & (1ull << m)))
			continue;
		if (fb >= 0)
			return -EIO;
		*(fa < 0 ? &fa : &fb) = rf_r6_index(&row, m);
	}
	return rf_raid6_recover(rf_r6_blocks(&row, p->data_disks, bufs, 0, w->zero, blocks), len, blocks, fa, fb);
}

/* The piece of old chunk at array sector s, up to lim: its place (mp),
 * its length in sectors. */
static uint64_t old_piece(const struct rf_geom *p, uint64_t s, uint64_t lim, struct rf_r5_map *mp)
{
	uint64_t len = p->chunk_sectors - s % p->chunk_sectors;

	rf_r5_map_sector(p, s, mp);
	return len < lim - s ? len : lim - s;
}

/* The end of [x, x + n) inside the old array. */
static uint64_t old_lim(const struct rf_geom *p, uint64_t x, uint64_t n)
{
	return x + n < p->array_sectors ? x + n : p->array_sectors;
}

static int r5_queue_old(struct rf_reshape_work *w, uint64_t x, uint64_t n, char *buf, uint64_t miss)
{
	const struct rf_geom *p = &rf_array_reshape_state(w->a)->prev;
	uint64_t s, len, lim = old_lim(p, x, n);
	struct rf_r5_map mp;

	for (s = x; s < lim; s += len) {
		len = old_piece(p, s, lim, &mp);
		if (!(miss & (1ull << mp.dd_idx)))
			rf_reshape_io(w, mp.dd_idx, false, buf + (s - x) * 512,
				      rf_dev_get(w->a, mp.dd_idx)->data_offset + mp.dev_sector * 512,
				      (uint32_t)(len * 512));
	}
	if (lim < x + n)
		memset(buf + (lim > x ? lim - x : 0) * 512, 0, (x + n - (lim > x ? lim : x)) * 512);
	return 0;
}

/* Each chunk on a missing member, from its row. */
static int r5_fill_missing(struct rf_reshape_work *w, uint64_t x, uint64_t n, char *buf, uint64_t miss)
{
	const struct rf_geom *p = &rf_array_reshape_state(w->a)->prev;
	uint64_t s, len, lim = old_lim(p, x, n);
	struct rf_r5_map mp;
	int ret = 0;

	for (s = x; !ret && s < lim; s += len) {
		len = old_piece(p, s, lim, &mp);
		if (miss & (1ull << mp.dd_idx))
			ret = read_missing(w, &mp, buf + (s - x) * 512, (uint32_t)(len * 512), miss);
	}
	return ret;
}

static void r5_queue_new(struct rf_reshape_work *w, uint64_t x, uint64_t n, char *buf)
{
	struct rf_array *a = w->a;
	const struct rf_geom *g = rf_array_geom(a);
	uint64_t cs = g->chunk_sectors, rows = n / (cs * (uint64_t)g->data_disks), first = x / (cs * (uint64_t)g->data_disks);
	size_t clen = cs * 512;
	uint64_t i, faulty = rf_array_faulty(a);

	for (i = 0; i < rows; i++) {
		struct rf_r5_row row;
		char *bufs[RF_MAX_MEMBERS];
		void *blocks[RF_MAX_MEMBERS + 2];
		char *pp = w->par + 2 * i * clen;
		int k, m;

		rf_r5_row(g, first + i, &row);
		for (k = 0; k < g->data_disks; k++)
			bufs[row.data_member[k]] = buf + ((i * g->data_disks + k) * cs) * 512;
		bufs[row.pd_idx] = pp;
		if (g->level == 6) {
			int nd;

			bufs[row.qd_idx] = pp + clen;
			nd = rf_r6_blocks(&row, g->data_disks, bufs, 0, w->zero, blocks);
			rf_pq_gen(nd, clen, blocks, blocks[nd], blocks[nd + 1]);
		} else {
			for (k = 0; k < g->data_disks; k++)
				blocks[k] = bufs[row.data_member[k]];
			rf_xor_gen(g->data_disks, clen, blocks, pp);
		}
		for (m = 0; m < g->raid_disks; m++) {
			/* A faulty member is missing in the new rows too: the
			 * others and the parity computed here hold its part. */
			if (faulty & (1ull << m))
				continue;
			/* RAIDFUSE_TEST_BREAK=reshape-level-q: the member a level
			 * change added is never written (its rows stay what
			 * they were: the test's model must see it). */
			if ((rf_array_reshape_state(a)->prev_absent & (1ull << m)) && rf_test_break("reshape-level-q"))
				continue;
			rf_reshape_io(w, m, true, bufs[m], rf_dev_get(a, m)->new_data_offset + (first + i) * clen,
				      (uint32_t)clen);
		}
		/* The row's writes go now, beside the next row's parity. */
		rf_reshape_io_kick(w);
	}
}

const struct rf_reshape_ops rf_r5_reshape_ops = {
	.granule = r5_granule,
	.dev_first = r5_dev_first,
	.dev_end = r5_dev_end,
	.move = r5_move,
	.bufs = r5_bufs,
	.queue_old = r5_queue_old,
	.fill_missing = r5_fill_missing,
	.queue_new = r5_queue_new,
};
