/* SPDX-License-Identifier: GPL-2.0-or-later */
/* raid5.c - parity levels: md's raid4, raid5 and raid6.
 *
 * Reads of in-sync members are DIRECT pieces, one per chunk (md's
 * chunk_aligned_read).  Writes, and reads of a faulty member's data, are
 * STRIPE pieces: parts of one stripe_size block of one column, served by
 * the stripe head for that block row.
 *
 * The level's files (what they share: raid5_int.h):
 *
 *   raid5.c        the ops table (rf_raid5_ops), requests split into
 *                  DIRECT and STRIPE pieces, a failed direct read sent
 *                  to the stripe heads, the mdstat status line
 *   raid5_round.c  the stripe rounds of a head: plan, hold, read,
 *                  compute, write
 *   raid5_log.c    a round's update as the stripe log takes it (md's
 *                  partial parity log): the run of written columns and
 *                  its partial parity
 *   raid5_sync.c   the sync work of one region: check, repair, resync,
 *                  recover (md's raid5 sync_request); the rows a write
 *                  touches, the sync walk's and the write-intent
 *                  bitmap's (md's raid5 bitmap_sector)
 *
 * A reshape md left under way (engine.h rf_geom_at()) is two geometries
 * over the members: each array sector maps through the one its side of
 * the reshape position uses, at that geometry's data offsets, and a
 * piece never crosses the position.  A stripe head serves one geometry:
 * its key (member sector) carries SH_PREV for the previous one, so rows
 * of the two never share a head even where their member sectors are
 * equal.  The walk that moves rows from one geometry to the other is
 * services/reshape.c's; it drops every head when the position moves.
 *
 * It does NOT run a stripe head's rounds (raid5_round.c), nor the sync
 * work of a region (raid5_sync.c): it says which member or head each
 * piece of a request goes to.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/engine.h"
#include "levels/raid5_int.h"

static int r5_max_pieces(const struct rf_array *a, uint32_t max_len)
{
	/* The smaller chunk of a reshape's two geometries; a request that
	 * crosses its position needs a piece more. */
	uint32_t cb = a->geom.chunk_sectors * 512;
	int chunks;

	if (a->reshape.active && a->reshape.prev.chunk_sectors * 512 < cb)
		cb = a->reshape.prev.chunk_sectors * 512;
	chunks = max_len / cb + 3;

	/* Direct pieces per chunk, plus a stripe piece per block should they
	 * fall back to reconstruction (each chunk boundary adds a block). */
	return chunks + max_len / a->stripe_size + 2 * chunks;
}

/* Queue STRIPE pieces for [moff, moff + len) of member col (bytes from the
 * member's data start in its geometry: the previous one of a reshape when
 * prev), data at buf. */
static int queue_stripe_pieces(struct rf_array *a, struct rf_req *r, bool write, int col, bool prev,
			       uint64_t moff, uint64_t aoff, char *buf, uint32_t len, bool requeue)
{
	uint32_t ss = a->stripe_size;

	while (len) {
		uint64_t blk = moff & ~(uint64_t)(ss - 1);
		uint32_t boff = (uint32_t)(moff - blk);
		uint32_t l = ss - boff < len ? ss - boff : len;
		struct rf_piece *p = rf_piece_new(r, RF_PIECE_STRIPE, write, aoff, buf, l,
						  blk >> 9 | (prev ? SH_PREV : 0));

		if (!p)
			return -EINVAL;
		p->member = (int16_t)col;
		p->boff = boff;
		if (requeue)
			rf_requeue_piece(a, p);
		else
			rf_queue_piece(a, p);
		moff += l;
		aoff += l;
		buf += l;
		len -= l;
	}
	return 0;
}

/* The piece of [off, end) in off's chunk (not across a reshape's
 * position): its length, where it is (m), its member byte offset in its
 * geometry (the previous one when *prev), and whether a read of it is
 * DIRECT (md's chunk-aligned read: its member is in sync there). */
static uint32_t r5_chunk(const struct rf_array *a, uint64_t off, uint64_t end, struct rf_r5_map *m, bool *prev,
			 uint64_t *moff, bool *direct)
{
	const struct rf_geom *g = rf_geom_at(a, off >> 9, prev);
	uint64_t cb = (uint64_t)g->chunk_sectors << 9;
	uint64_t len = cb - (off & (cb - 1));

	if (len > end - off)
		len = end - off;
	/* Not across a reshape's position (a whole sector). */
	if (a->reshape.active && off < a->reshape.position << 9 && len > (a->reshape.position << 9) - off)
		len = (a->reshape.position << 9) - off;
	rf_r5_map_sector(g, off >> 9, m);
	*moff = (m->dev_sector << 9) + (off & 511);
	*direct = !(rf_faulty_in(a, m->dev_sector, *prev) & (1ull << m->dd_idx));
	return (uint32_t)len;
}

static int r5_split(struct rf_array *a, struct rf_req *r)
{
	uint64_t off = r->off, end = r->off + r->len;
	bool write = r->op == RF_REQ_WRITE;

	while (off < end) {
		struct rf_r5_map m;
		bool prev, direct;
		uint64_t moff;
		uint32_t len = r5_chunk(a, off, end, &m, &prev, &moff, &direct);
		char *buf = r->buf + (off - r->off);
		int ret;

		if (!write && direct) {
			struct rf_piece *p = rf_piece_new(r, RF_PIECE_DIRECT, false, off, buf, (uint32_t)len,
							  moff >> 9 & ~(uint64_t)(a->stripe_size / 512 - 1));

			if (!p)
				return -EINVAL;
			p->member = (int16_t)m.dd_idx;
			rf_piece_set_mio(a, p, m.dd_idx, moff);
			p->mio.off = rf_dev_offset(a, m.dd_idx, prev) + moff;
			rf_queue_piece(a, p);
		} else {
			ret = queue_stripe_pieces(a, r, write, m.dd_idx, prev, moff, off, buf, (uint32_t)len, false);
			if (ret)
				return ret;
		}
		off += len;
	}
	return 0;
}

/* Every chunk DIRECT, as r5_split() would read it; a chunk it would
 * rebuild through a stripe head is not a pure data read. */
static int r5_read_map(const struct rf_array *a, uint64_t off, uint32_t len, struct rf_read_map *m)
{
	uint64_t end = off + len;

	while (off < end) {
		struct rf_r5_map rm;
		bool prev, direct;
		uint64_t moff;
		uint32_t l = r5_chunk(a, off, end, &rm, &prev, &moff, &direct);
		int ret;

		if (!direct)
			return -EAGAIN;
		ret = rf_read_map_add(m, rm.dd_idx, rf_dev_offset(a, rm.dd_idx, prev) + moff, l);
		if (ret)
			return ret;
		off += l;
	}
	return 0;
}

/* A direct read failed (its member is faulty now): read the same bytes
 * through the stripe heads, rebuilt from the other members. */
static void r5_direct_failed(struct rf_worker *w, struct rf_piece *p, int err)
{
	struct rf_array *a = w->a;
	bool prev;
	uint64_t moff;

	rf_geom_at(a, p->aoff >> 9, &prev);
	moff = p->mio.off - rf_dev_offset(a, p->mio.member, prev);
	if (rf_failed_now(a) || queue_stripe_pieces(a, p->req, false, p->mio.member, prev, moff, p->aoff, p->buf,
						    p->len, true)) {
		rf_piece_end(p, err);
		return;
	}
	/* The new pieces hold the request now. */
	rf_piece_end(p, 0);
}

static bool r5_failed(const struct rf_array *a, uint64_t faulty)
{
	return __builtin_popcountll(faulty & rf_r5_all_members(a)) > a->geom.max_degraded;
}

static bool r5_lost(const struct rf_geom *g, uint64_t out)
{
	return __builtin_popcountll(out & rf_geom_all_slots(g)) > g->max_degraded;
}

/* resync, a bitmap, and on raid5 alone md's partial parity log (md's
 * ppl_init_log() refuses raid4 and raid6). */
static bool r5_takes_policy(const struct rf_geom *g, const char *policy)
{
	return !strcmp(policy, "resync") || !strcmp(policy, "bitmap") || (g->level == 5 && !strcmp(policy, "ppl"));
}

/* md's raid5_status() (raid4 and raid6 alike): level, chunk, algorithm,
 * the member map. */
static void r5_status(const struct rf_array *a, char *buf, size_t len)
{
	snprintf(buf, len, " level %d, %uk chunk, algorithm %d", a->geom.level, a->geom.chunk_sectors / 2,
		 a->geom.layout);
	rf_status_map(a, buf, len);
}

const struct rf_level_ops rf_raid5_ops = {
	.status = r5_status,
	.name = "raid5",
	.md_levels = 1u << 4 | 1u << 5 | 1u << 6,
	.max_pieces = r5_max_pieces,
	.split = r5_split,
	.direct_failed = r5_direct_failed,
	.failed = r5_failed,
	.lost = r5_lost,
	.handle_stripe = rf_r5_handle_stripe,
	.sync = &rf_r5_sync_ops,
	.reshape = &rf_r5_reshape_ops,
	.read_map = r5_read_map,
	.bitmap_range = rf_r5_bitmap_range,
	.takes_policy = r5_takes_policy,
};
