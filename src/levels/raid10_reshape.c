/* SPDX-License-Identifier: GPL-2.0-or-later */
/* raid10_reshape.c - raid10's part of the reshape walk
 * (core/reshapework.h; the walk is services/reshape.c, md's raid10
 * reshape_request).
 *
 * md reshapes raid10 of the near and offset layouts (never far copies:
 * their places depend on the size), keeping the number of copies: more
 * members, fewer, or near <-> offset.  No backup file ever holds its rows:
 * every data offset moves, by a chunk times the far copies of the larger
 * of the two geometries at least (mdadm's min_offset_change; md refuses
 * less), lower for a grow.
 *
 * The rows of array sector s in a geometry are md's first_dev_address and
 * last_dev_address: s's chunk is near copy slot c * near_copies of a
 * raid0-like stream over the members, its copies in the chunk rows that
 * slot and the next near_copies - 1 fall in, each row far_copies chunks
 * high in an offset layout.  A window is whole chunks of the larger
 * chunk; its old data is read chunk by chunk from one copy in sync of
 * the previous geometry (the chunk's number picks which, so that reads
 * spread over the members), and written to every copy of the new one on
 * a member not faulty (md's reshape_request reads one copy through
 * read_balance and writes them all).  A member that failed leaves the
 * other copies to be read; a chunk with none left fails the window.  Past
 * the old array's end the window holds zeros.
 *
 * It does NOT pick windows or hold writes (the walk does), nor reshape a
 * far layout (md refuses it: rf_reshape_init()).
 */
#include <errno.h>
#include <string.h>

#include "core/engine.h"
#include "core/reshapework.h"
#include "raidfuse/iolog.h"

static uint64_t r10_granule(const struct rf_geom *g, uint64_t unit)
{
	(void)g;
	return unit;
}

/* md's first_dev_address: the start of the rows of s's chunk. */
static uint64_t r10_dev_first(const struct rf_geom *g, uint64_t unit, uint64_t s)
{
	uint64_t slot = s / g->chunk_sectors * (uint64_t)g->near_copies;

	(void)unit;
	return slot / (uint64_t)g->raid_disks * (uint64_t)g->far_copies * g->chunk_sectors;
}

/* md's last_dev_address: past the rows of s's chunk (its last near copy
 * may wrap to the next row). */
static uint64_t r10_dev_end(const struct rf_geom *g, uint64_t unit, uint64_t s)
{
	uint64_t slot = (s / g->chunk_sectors + 1) * (uint64_t)g->near_copies;

	(void)unit;
	return (slot + (uint64_t)g->raid_disks - 1) / (uint64_t)g->raid_disks * (uint64_t)g->far_copies *
	       g->chunk_sectors;
}

/* mdadm's min_offset_change for raid10: the larger chunk times the far
 * copies of either geometry, exactly (and no less: md checks it). */
static uint64_t r10_move(const struct rf_geom *from, const struct rf_geom *to, uint64_t unit, uint64_t *least)
{
	uint64_t a = (uint64_t)from->chunk_sectors * (uint64_t)from->far_copies,
		 b = (uint64_t)to->chunk_sectors * (uint64_t)to->far_copies;

	(void)unit;
	*least = a > b ? a : b;
	return *least;
}

/* Copies need no parity and no row to compute from. */
static void r10_bufs(const struct rf_geom *g, const struct rf_geom *prev, uint64_t unit, uint64_t window,
		     size_t *par, size_t *scratch)
{
	(void)g;
	(void)prev;
	(void)unit;
	(void)window;
	*par = 0;
	*scratch = 0;
}

/* The sectors of the chunk of g at s, up to lim. */
static uint64_t piece(const struct rf_geom *g, uint64_t s, uint64_t lim)
{
	uint64_t len = g->chunk_sectors - s % g->chunk_sectors;

	return len < lim - s ? len : lim - s;
}

static int r10_queue_old(struct rf_reshape_work *w, uint64_t x, uint64_t n, char *buf, uint64_t miss)
{
	const struct rf_geom *p = &rf_array_reshape_state(w->a)->prev;
	uint64_t s, len, lim = x + n < p->array_sectors ? x + n : p->array_sectors;
	int ret = 0;

	for (s = x; s < lim; s += len) {
		int devs[RF_MAX_MEMBERS], k, i, c = 0;
		uint64_t addrs[RF_MAX_MEMBERS];

		len = piece(p, s, lim);
		k = rf_r10_map(p, s, devs, addrs);
		for (i = 0; i < k; i++) {
			c = (int)((s / p->chunk_sectors + (uint64_t)i) % (uint64_t)k);
			if (!(miss & (1ull << devs[c])))
				break;
		}
		if (i == k) {
			ret = -EIO;     /* no copy in sync left */
			continue;
		}
		rf_reshape_io(w, devs[c], false, buf + (s - x) * 512,
			      rf_dev_get(w->a, devs[c])->data_offset + addrs[c] * 512, (uint32_t)(len * 512));
	}
	if (lim < x + n)
		memset(buf + (lim > x ? lim - x : 0) * 512, 0, (x + n - (lim > x ? lim : x)) * 512);
	return ret;
}

static void r10_queue_new(struct rf_reshape_work *w, uint64_t x, uint64_t n, char *buf)
{
	struct rf_array *a = w->a;
	const struct rf_geom *g = rf_array_geom(a);
	uint64_t s, len, faulty = rf_array_faulty(a);

	for (s = x; s < x + n; s += len) {
		int devs[RF_MAX_MEMBERS], k, i;
		uint64_t addrs[RF_MAX_MEMBERS];

		len = piece(g, s, x + n);
		k = rf_r10_map(g, s, devs, addrs);
		/* RAIDFUSE_TEST_BREAK=reshape-copies: the first copy alone is
		 * written (the others keep what their places held: a check
		 * must see it). */
		if (rf_test_break("reshape-copies"))
			k = 1;
		for (i = 0; i < k; i++)
			if (!(faulty & (1ull << devs[i])))
				rf_reshape_io(w, devs[i], true, buf + (s - x) * 512,
					      rf_dev_get(a, devs[i])->new_data_offset + addrs[i] * 512,
					      (uint32_t)(len * 512));
		/* The chunk's writes go now, beside the next chunk's. */
		rf_reshape_io_kick(w);
	}
}

const struct rf_reshape_ops rf_r10_reshape_ops = {
	.granule = r10_granule,
	.dev_first = r10_dev_first,
	.dev_end = r10_dev_end,
	.move = r10_move,
	.bufs = r10_bufs,
	.queue_old = r10_queue_old,
	.queue_new = r10_queue_new,
};
