/* raid1.c - mirrors: md's raid1 and raid10 (near, far and offset copies).
 *
 * Reads go to one copy whose member is in sync (rotating, so sequential
 * streams spread over the members); a read that fails moves to the next
 * copy.  Writes go to every in-sync copy as separate DIRECT pieces; a copy
 * that fails marks its member faulty, and the write still succeeds while
 * another copy holds the data (md's semantics).  The request fails only
 * when the array as a whole has failed.
 *
 * It does NOT resync diverged mirrors (a later resync does).
 */
#include <errno.h>

#include "core/engine.h"

/* Writes go to every copy whose member is not faulty (a device being
 * rebuilt included); reads only to copies that hold the data. */
static bool alive(const struct rf_array *a, int m)
{
	return !(rf_faulty(a) & (1ull << m));
}

static bool readable(const struct rf_array *a, int m)
{
	return !(rf_faulty_read(a) & (1ull << m));
}

/* Mirror copies of array byte offset off: members and member byte offsets. */
static int copies_of(const struct rf_array *a, uint64_t off, int *devs, uint64_t *moffs)
{
	int i, n = rf_mirror_map(&a->geom, off >> 9, devs, moffs);

	for (i = 0; i < n; i++)
		moffs[i] = (moffs[i] << 9) + (off & 511);
	return n;
}

static int mirror_max_pieces(const struct rf_array *a, uint32_t max_len)
{
	if (a->geom.level == 1)
		return a->nmembers;
	return a->geom.near_copies * a->geom.far_copies * (max_len / a->chunk_bytes + 2);
}

static int queue_segment(struct rf_array *a, struct rf_req *r, uint64_t off, uint32_t len)
{
	int devs[RF_MAX_MEMBERS], n, i, first;
	uint64_t moffs[RF_MAX_MEMBERS], wm;
	char *buf = r->buf + (off - r->off);
	uint64_t key = off >> 20;
	struct rf_piece *p;

	n = copies_of(a, off, devs, moffs);
	if (r->op == RF_REQ_WRITE) {
		for (i = 0; i < n; i++) {
			if (!alive(a, devs[i]))
				continue;
			p = rf_piece_new(r, RF_PIECE_DIRECT, true, off, buf, len, key + i);
			if (!p)
				return -EINVAL;
			rf_piece_set_mio(a, p, devs[i], moffs[i]);
			rf_queue_piece(a, p);
		}
		return 0;
	}
	/* Read: start at a rotating copy, take the first in-sync one that
	 * is not write-mostly, else the first in-sync one. */
	first = (int)(atomic_fetch_add_explicit(&a->rr, 1, memory_order_relaxed) % (unsigned)n);
	wm = atomic_load_explicit(&a->write_mostly, memory_order_relaxed);
	for (i = 0; i < 2 * n; i++) {
		int c = (first + i) % n;

		if (!readable(a, devs[c]) || (i < n && (wm & (1ull << devs[c]))))
			continue;
		p = rf_piece_new(r, RF_PIECE_DIRECT, false, off, buf, len, key);
		if (!p)
			return -EINVAL;
		p->tries = (uint8_t)c;
		rf_piece_set_mio(a, p, devs[c], moffs[c]);
		rf_queue_piece(a, p);
		return 0;
	}
	return -EIO;
}

static int mirror_split(struct rf_array *a, struct rf_req *r)
{
	uint64_t off = r->off, end = r->off + r->len;

	if (a->geom.level == 1)
		return queue_segment(a, r, off, r->len);
	while (off < end) {
		uint64_t len = a->chunk_bytes - (off & (a->chunk_bytes - 1));
		int ret;

		if (len > end - off)
			len = end - off;
		ret = queue_segment(a, r, off, (uint32_t)len);
		if (ret)
			return ret;
		off += len;
	}
	return 0;
}

static void mirror_direct_failed(struct rf_worker *w, struct rf_piece *p, int err)
{
	struct rf_array *a = w->a;
	int devs[RF_MAX_MEMBERS], n, i;
	uint64_t moffs[RF_MAX_MEMBERS];

	if (p->write) {
		/* The other copies carry the data unless the array is gone. */
		rf_piece_end(p, rf_failed_now(a) ? err : 0);
		return;
	}
	n = copies_of(a, p->aoff, devs, moffs);
	for (i = 1; i < n; i++) {
		int c = (p->tries + i) % n;

		if (!readable(a, devs[c]))
			continue;
		p->tries = (uint8_t)c;
		rf_piece_set_mio(a, p, devs[c], moffs[c]);
		rf_direct_issue(w, p);
		return;
	}
	rf_piece_end(p, err);
}

static bool raid1_failed(const struct rf_array *a, uint64_t faulty)
{
	uint64_t all = a->nmembers == 64 ? ~0ull : (1ull << a->nmembers) - 1;

	return (faulty & all) == all;
}

/* raid10 has failed when some chunk has no in-sync copy left.  The copy
 * pattern repeats every raid_disks chunks, twice that covers far sets. */
static bool raid10_failed(const struct rf_array *a, uint64_t faulty)
{
	const struct rf_geom *g = &a->geom;
	int devs[RF_MAX_MEMBERS], n, i, c;
	uint64_t addrs[RF_MAX_MEMBERS];

	for (c = 0; c < 2 * g->raid_disks; c++) {
		uint64_t sector = (uint64_t)c * g->chunk_sectors;
		bool any = false;

		if (sector >= g->array_sectors)
			break;
		n = rf_r10_map(g, sector, devs, addrs);
		for (i = 0; i < n; i++)
			any |= !(faulty & (1ull << devs[i]));
		if (!any)
			return true;
	}
	return false;
}

const struct rf_level_ops rf_raid1_ops = {
	.name = "raid1",
	.max_pieces = mirror_max_pieces,
	.split = mirror_split,
	.direct_failed = mirror_direct_failed,
	.failed = raid1_failed,
};

const struct rf_level_ops rf_raid10_ops = {
	.name = "raid10",
	.max_pieces = mirror_max_pieces,
	.split = mirror_split,
	.direct_failed = mirror_direct_failed,
	.failed = raid10_failed,
};
