/* SPDX-License-Identifier: GPL-2.0-or-later */
/* raid0.c - striping without redundancy (md's raid0).
 *
 * A request becomes one DIRECT piece per chunk it touches; layout.c's
 * rf_r0_map() says where each chunk lives, over md's strip zones when the
 * members differ in size (each member's data size comes from its
 * superblock; a config without superblocks uses the smallest for all, one
 * zone, as before).  Any member error ends the request with that error:
 * there is nothing to rebuild from.  It does NOT resync, rebuild or take
 * spares.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/engine.h"

static int r0_max_pieces(const struct rf_array *a, uint32_t max_len)
{
	return max_len / rf_chunk_bytes(a) + 2;
}

/* The piece of [off, end) in off's chunk: its length, member and member
 * byte offset (from the member's data start). */
static uint32_t r0_chunk(const struct rf_array *a, uint64_t off, uint64_t end, int *member, uint64_t *moff)
{
	uint64_t len = rf_chunk_bytes(a) - (off & (rf_chunk_bytes(a) - 1)), dev_sector;

	if (len > end - off)
		len = end - off;
	rf_r0_map(&a->geom, off >> 9, member, &dev_sector);
	*moff = (dev_sector << 9) + (off & 511);
	return (uint32_t)len;
}

static int r0_split(struct rf_array *a, struct rf_req *r)
{
	uint64_t off = r->off, end = r->off + r->len;

	while (off < end) {
		uint64_t moff;
		int member;
		uint32_t len = r0_chunk(a, off, end, &member, &moff);
		struct rf_piece *p = rf_piece_new(r, RF_PIECE_DIRECT, r->op == RF_REQ_WRITE, off,
						  r->buf + (off - r->off), len, off / rf_chunk_bytes(a));

		if (!p)
			return -EINVAL;
		rf_piece_set_mio(a, p, member, moff);
		rf_queue_piece(a, p);
		off += len;
	}
	return 0;
}

/* Every chunk is read from its one member; a faulty member's reads are
 * left to the IO path (which ends them with its error). */
static int r0_read_map(const struct rf_array *a, uint64_t off, uint32_t len, struct rf_read_map *m)
{
	uint64_t end = off + len;

	if (rf_faulty(a))
		return -EAGAIN;
	while (off < end) {
		uint64_t moff;
		int member, ret;
		uint32_t l = r0_chunk(a, off, end, &member, &moff);

		ret = rf_read_map_add(m, member, a->devs[member].data_offset + moff, l);
		if (ret)
			return ret;
		off += l;
	}
	return 0;
}

static void r0_direct_failed(struct rf_worker *w, struct rf_piece *p, int err)
{
	rf_piece_end(p, err);
}

static bool r0_failed(const struct rf_array *a, uint64_t faulty)
{
	return faulty != 0;
}

static bool r0_lost(const struct rf_geom *g, uint64_t out)
{
	return (out & rf_geom_all_slots(g)) != 0;
}

/* No sync work: md's "none", and no bitmap. */
static bool r0_takes_policy(const struct rf_geom *g, const char *policy)
{
	return !strcmp(policy, "none");
}

/* Each member its own size (md's zones: md/layout.c r0_init()). */
static uint64_t r0_dev_sectors(const struct rf_geom *g, int slot)
{
	return g->r0_sectors[slot];
}

/* md's raid0 has no resize. */
static const char *r0_resize_refused(const struct rf_geom *g)
{
	return "component size change is not supported for raid0 (md has no resize for it)";
}

/* md's raid0_status(): the chunk size, no member map. */
static void r0_status(const struct rf_array *a, char *buf, size_t len)
{
	snprintf(buf, len, " %uk chunks", a->geom.chunk_sectors / 2);
}

const struct rf_level_ops rf_raid0_ops = {
	.status = r0_status,
	.name = "raid0",
	.md_levels = 1u << 0,
	.max_pieces = r0_max_pieces,
	.split = r0_split,
	.direct_failed = r0_direct_failed,
	.failed = r0_failed,
	.lost = r0_lost,
	.keeps_last = true,
	.read_map = r0_read_map,
	.takes_policy = r0_takes_policy,
	.dev_sectors = r0_dev_sectors,
	.resize_refused = r0_resize_refused,
};
