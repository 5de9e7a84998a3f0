/* SPDX-License-Identifier: GPL-2.0-or-later */
/* raid1.c - mirrors: md's raid1 and raid10 (near, far and offset copies).
 *
 * A raid10 reshape under way (engine.h rf_geom_at()) is two geometries:
 * each segment, cut at the reshape's position too, goes to the copies of
 * the geometry its side of the position uses, at that geometry's data
 * offsets (md's raid10_find_phys() of R10BIO_Previous, and
 * choose_data_offset()).  services/reshape.c moves the position.
 *
 * Reads go to one copy whose member is in sync (rotating, so sequential
 * streams spread over the members); a read that fails moves to the next
 * copy.  Writes go to every in-sync copy as separate DIRECT pieces; a copy
 * that fails marks its member faulty, and the write still succeeds while
 * another copy holds the data (md's semantics).  The request fails only
 * when the array as a whole has failed.
 *
 * The sync work of one region (md's raid1/raid10 sync_request, run by the
 * walk in services/sync_walk.c): check and repair compare every in-sync copy
 * with the first in 4 KiB blocks, md counting a mismatch per differing
 * copy, repair rewriting the others from the first; resync reads the
 * first copy and writes it over the others; rebuild copies from a copy in
 * sync to every copy on a device being rebuilt.  The walk's units are
 * member sectors for raid1 (the same on every copy) and array sectors
 * inside one chunk for raid10 (whose far and offset copies sit at other
 * member sectors), but for raid10's rebuild, which goes by member sector
 * as md's does (below).  The walk locks a region's rows before its work
 * here and unlocks them when it ends (writes reach a device being rebuilt
 * at once, so nothing holds them longer: no hold_rebuilt).
 *
 * It does NOT resync diverged mirrors by itself (the walk asks it to), nor
 * lock or unlock a region's rows (services/sync_walk.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/engine.h"
#include "core/syncwork.h"

/* raid10_reshape.c: raid10's part of the reshape walk. */
extern const struct rf_reshape_ops rf_r10_reshape_ops;

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

/* Mirror copies of array byte offset off: members and their byte offsets
 * on them, data offset included (a reshape under way: the geometry of
 * off's side of the position, at that side's data offsets). */
static int copies_of(const struct rf_array *a, uint64_t off, int *devs, uint64_t *moffs)
{
	bool prev;
	const struct rf_geom *g = rf_geom_at(a, off >> 9, &prev);
	int i, n = rf_mirror_map(g, off >> 9, devs, moffs);

	for (i = 0; i < n; i++)
		moffs[i] = rf_dev_offset(a, devs[i], prev) + (moffs[i] << 9) + (off & 511);
	return n;
}

/* p's member IO on member m at byte offset moff (copies_of()'s). */
static void set_mio(struct rf_array *a, struct rf_piece *p, int m, uint64_t moff)
{
	rf_piece_set_mio(a, p, m, 0);
	p->mio.off = moff;
}

/* The bytes of a raid10 segment at off, at most len: to the end of off's
 * chunk in its geometry, never across a reshape's position. */
static uint64_t segment_len(const struct rf_array *a, uint64_t off, uint64_t len)
{
	bool prev;
	uint64_t cb = (uint64_t)rf_geom_at(a, off >> 9, &prev)->chunk_sectors * 512, left, l;

	l = cb - (off & (cb - 1));
	left = rf_reshape_left(&a->reshape, off >> 9);
	if (left != UINT64_MAX && l > (left << 9) - (off & 511))
		l = (left << 9) - (off & 511);
	return l < len ? l : len;
}

static int raid1_max_pieces(const struct rf_array *a, uint32_t max_len)
{
	(void)a;
	(void)max_len;
	return RF_MAX_MEMBERS;          /* a copy per slot; a grow may add slots */
}

static int raid10_max_pieces(const struct rf_array *a, uint32_t max_len)
{
	const struct rf_geom *g = &a->geom;
	uint32_t seg = g->chunk_sectors * 512;
	int copies = g->near_copies * g->far_copies;

	/* The smaller chunk of a reshape's geometries; one segment more
	 * where its position cuts the request. */
	if (a->reshape.active && a->reshape.prev.chunk_sectors * 512 < seg)
		seg = a->reshape.prev.chunk_sectors * 512;
	return (copies > 1 ? copies : 1) * (int)(max_len / seg + 3);
}

/* The copy (index into devs[n]) to read, the round robin's next from
 * first on (md's read_balance, simplified): in sync, and not write-mostly
 * unless all are; -1: none is in sync. */
static int pick_copy(const struct rf_array *a, const int *devs, int n, unsigned first)
{
	uint64_t wm = atomic_load_explicit(&a->write_mostly, memory_order_relaxed);
	int i;

	for (i = 0; i < 2 * n; i++) {
		int c = (int)((first + (unsigned)i) % (unsigned)n);

		if (readable(a, devs[c]) && (i >= n || !(wm & (1ull << devs[c]))))
			return c;
	}
	return -1;
}

static int read_copy(const struct rf_array *a, const int *devs, int n)
{
	struct rf_array *w = (struct rf_array *)a;

	return pick_copy(a, devs, n, (unsigned)atomic_fetch_add_explicit(&w->rr, 1, memory_order_relaxed));
}

static int queue_segment(struct rf_array *a, struct rf_req *r, uint64_t off, uint32_t len)
{
	int devs[RF_MAX_MEMBERS], n, i, c;
	uint64_t moffs[RF_MAX_MEMBERS];
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
			set_mio(a, p, devs[i], moffs[i]);
			rf_queue_piece(a, p);
		}
		return 0;
	}
	c = read_copy(a, devs, n);
	if (c < 0)
		return -EIO;
	p = rf_piece_new(r, RF_PIECE_DIRECT, false, off, buf, len, key);
	if (!p)
		return -EINVAL;
	p->tries = (uint8_t)c;
	set_mio(a, p, devs[c], moffs[c]);
	rf_queue_piece(a, p);
	return 0;
}

static int mirror_split(struct rf_array *a, struct rf_req *r)
{
	uint64_t off = r->off, end = r->off + r->len;

	if (a->geom.level == 1)
		return queue_segment(a, r, off, r->len);
	while (off < end) {
		uint64_t len = segment_len(a, off, end - off);
		int ret;

		ret = queue_segment(a, r, off, (uint32_t)len);
		if (ret)
			return ret;
		off += len;
	}
	return 0;
}

/* One copy per segment (raid1: the whole read; raid10: per chunk), the
 * one split() would pick; no copy in sync: the IO path's to answer. */
static int mirror_read_map(const struct rf_array *a, uint64_t off, uint32_t len, struct rf_read_map *m)
{
	uint64_t end = off + len;

	while (off < end) {
		int devs[RF_MAX_MEMBERS], n, c, ret;
		uint64_t moffs[RF_MAX_MEMBERS], l = end - off;

		if (a->geom.level != 1)
			l = segment_len(a, off, l);
		/* The copy the IO path would pick next; the round robin moves
		 * on only when it can be mapped, so that a read refused here
		 * goes to the same copy there (a mirror of a file and an NBD
		 * export keeps its balance). */
		n = copies_of(a, off, devs, moffs);
		c = pick_copy(a, devs, n, (unsigned)atomic_load_explicit(&a->rr, memory_order_relaxed));
		if (c < 0 || !rf_read_map_plain(a, devs[c]))
			return -EAGAIN;
		atomic_fetch_add_explicit(&((struct rf_array *)a)->rr, 1, memory_order_relaxed);
		ret = rf_read_map_add(m, devs[c], moffs[c], (uint32_t)l);
		if (ret)
			return ret;
		off += l;
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
		set_mio(a, p, devs[c], moffs[c]);
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

/* raid10 has failed when some chunk has no in-sync copy left, in either
 * geometry of a reshape under way (md's calc_degraded() looks at both). */
static bool raid10_failed(const struct rf_array *a, uint64_t faulty)
{
	return rf_r10_lost(&a->geom, faulty) || (a->reshape.active && rf_r10_lost(&a->reshape.prev, faulty));
}

static bool raid1_lost(const struct rf_geom *g, uint64_t out)
{
	uint64_t all = rf_geom_all_slots(g);

	return (out & all) == all;
}

/* ---- the sync work of one region ---- */

static uint64_t raid1_sync_total(const struct rf_array *a)
{
	return a->geom.dev_sectors;
}

static uint64_t raid10_sync_total(const struct rf_array *a)
{
	return a->geom.array_sectors;
}

static uint64_t raid1_sync_clip(const struct rf_array *a, uint64_t pos, uint64_t n)
{
	return n;
}

static uint64_t raid10_sync_clip(const struct rf_array *a, uint64_t pos, uint64_t n)
{
	uint64_t left = rf_geom_chunk_left(&a->geom, pos);

	return n < left ? n : left;
}

/* md's raid1 and raid10 bitmap_sector: a write's rows are its own
 * sectors (raid1's member sectors are the array's; raid10's bits count
 * array sectors). */
static void mirror_bitmap_range(const struct rf_geom *g, uint64_t off, uint64_t len, uint64_t *lo, uint64_t *hi)
{
	(void)g;
	*lo = off >> 9;
	*hi = (off + len + 511) >> 9;
}

/* The sync walk's rows of a write are the bitmap's (raid10's walk goes
 * in array sectors too); an empty write still names its row, that of its
 * first byte. */
static void mirror_write_rows(const struct rf_array *a, uint64_t off, uint32_t len, uint64_t *lo, uint64_t *hi)
{
	mirror_bitmap_range(&a->geom, off, len ? len : 1, lo, hi);
}

/* check, repair, resync: compare (or copy) every in-sync copy with the
 * first. */
static int mirror_compare(struct rf_sync_work *w, int n, const int *devs, const uint64_t *secs)
{
	struct rf_array *a = w->a;
	int live[RF_MAX_MEMBERS], m = 0, i, b, nblk, ret;
	uint64_t faulty = rf_faulty(a);
	uint32_t bytes = (uint32_t)(w->n << 9);

	for (i = 0; i < n; i++)
		if (!(faulty & (1ull << devs[i])))
			live[m++] = i;
	if (m < 2)
		return 0;       /* one copy left: nothing to compare or copy to */
	nblk = (int)((bytes + RF_SYNC_BLK - 1) / RF_SYNC_BLK);
	for (i = 0; i < m; i++)
		if (i == 0 || w->act != RF_SYNC_RESYNC)
			rf_sync_io(w, devs[live[i]], false, w->buf[i], bytes, secs[live[i]]);
	ret = rf_sync_io_wait(w);
	for (b = 0; b < nblk && !ret; b++) {
		uint32_t off = (uint32_t)b * RF_SYNC_BLK, len = bytes - off < RF_SYNC_BLK ? bytes - off : RF_SYNC_BLK;

		for (i = 1; i < m; i++) {
			if (w->act != RF_SYNC_RESYNC) {
				if (!memcmp(w->buf[0] + off, w->buf[i] + off, len))
					continue;
				rf_sync_mismatch(w, len / 512);
				if (w->act == RF_SYNC_CHECK)
					continue;
			}
			memcpy(w->buf[i] + off, w->buf[0] + off, len);
			w->dirty[i][b] = 1;
		}
	}
	/* Buffers are indexed by live copy, not by member. */
	for (i = 1; i < m; i++)
		rf_sync_write_dirty(w, devs[live[i]], w->buf[i], w->dirty[i], nblk, bytes, secs[live[i]], ret);
	if (!ret)
		ret = rf_sync_io_wait(w);
	return ret;
}

/* Rebuild: copy the region from a copy that holds it to every copy on a
 * device being rebuilt (one or several: each takes the same data).
 * Writes go to those devices meanwhile too, so the rows unlock at once
 * (the walk unlocks them when this returns). */
static int mirror_recover(struct rf_sync_work *w, int n, const int *devs, const uint64_t *secs)
{
	struct rf_array *a = w->a;
	int i, src = -1, ntarget = 0, ret;
	uint64_t rec;
	uint32_t bytes = (uint32_t)(w->n << 9);

	rec = atomic_load(&a->recovering) & ~rf_faulty(a);
	for (i = 0; i < n; i++) {
		if (rec & (1ull << devs[i]))
			ntarget++;
		else if (src < 0 && !(rf_faulty_read(a) & (1ull << devs[i])))
			src = i;
	}
	ret = ntarget && src < 0 ? -EIO : 0;
	if (ntarget && src >= 0) {
		rf_sync_io(w, devs[src], false, w->buf[0], bytes, secs[src]);
		ret = rf_sync_io_wait(w);
		for (i = 0; i < n && !ret; i++)
			if (rec & (1ull << devs[i]))
				rf_sync_io(w, devs[i], true, w->buf[0], bytes, secs[i]);
		if (!ret)
			ret = rf_sync_io_wait(w);
	}
	return ret;
}

/* raid10's rebuild checkpoint.  The walk goes in array sectors, md's
 * recovery_offset in member sectors.  Each copy (an index into
 * rf_r10_map()'s answer: near copy, then its far copies) lies at a member
 * sector that never decreases as the array sector grows, in every layout
 * (near rows, far sections at stride, offset rows of far_copies chunks).
 * So a rebuild that walked [0, pos) has written every member sector below
 * the chunk row start of each copy of pos, and one that resumes from
 * member sector off need not walk the chunks all of whose copies lie
 * below off. */

/* The largest member sector that a copy of array chunk c's last sector
 * lies at. */
static uint64_t r10_chunk_top(const struct rf_geom *g, uint64_t c)
{
	int devs[RF_MAX_MEMBERS], n, i;
	uint64_t secs[RF_MAX_MEMBERS], top = 0;

	n = rf_r10_map(g, c * g->chunk_sectors + g->chunk_sectors - 1, devs, secs);
	for (i = 0; i < n; i++)
		if (secs[i] > top)
			top = secs[i];
	return top;
}

static uint64_t raid10_sync_dev_offset(const struct rf_array *a, uint64_t pos)
{
	const struct rf_geom *g = &a->geom;
	int devs[RF_MAX_MEMBERS], n, i;
	uint64_t secs[RF_MAX_MEMBERS], off = g->dev_sectors;

	if (pos >= g->array_sectors)
		return g->dev_sectors;
	n = rf_r10_map(g, pos, devs, secs);
	for (i = 0; i < n; i++)
		if (secs[i] - secs[i] % g->chunk_sectors < off)
			off = secs[i] - secs[i] % g->chunk_sectors;
	return off;
}

static uint64_t raid10_sync_walk_start(const struct rf_array *a, uint64_t off)
{
	const struct rf_geom *g = &a->geom;
	uint64_t lo = 0, hi = g->array_sectors / g->chunk_sectors;

	/* The first chunk with a copy at or past off (r10_chunk_top never
	 * decreases). */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (r10_chunk_top(g, mid) >= off)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo * g->chunk_sectors;
}

/* ---- raid10's rebuild by member sector ----
 *
 * md's raid10 sync_request recovers by device sector: the walk goes over
 * member sectors [0, dev_sectors), a region the same run of one chunk row
 * on every member, and recovery_offset is the walk's position itself.  In
 * array order a far layout writes the far copies of the first chunks
 * first, past every near copy, and one offset cannot say that (an
 * interrupted far rebuild started over); in member order it can.
 *
 * A region finds, for each device being rebuilt, which array chunk it
 * holds there (md's raid10_find_virt, here by asking rf_r10_map() of the
 * few chunks whose near copies start in that row or the one before:
 * every layout's copies of a chunk lie in those rows or stride below) and
 * copies it from a copy in sync.  A write's rows are every member sector
 * its copies lie at, from its first sector's lowest copy to its last
 * sector's highest (each copy's member sector never decreases as the
 * array sector grows): for near and offset copies a row or two, for far
 * copies the span between a near copy and its far copy, so a write to a
 * far array may wait for a region that lies between them (md holds every
 * write during each of its recovery windows).
 *
 * A rebuild driven by the bitmap (a re-added device) keeps the array
 * sector walk above: the bitmap's chunks are array sectors. */

/* The array sector whose copy device t holds at member sector s (the
 * start of a chunk row), or UINT64_MAX when t keeps nothing there. */
static uint64_t r10_virt(const struct rf_geom *g, int t, uint64_t s)
{
	uint64_t chunk = g->chunk_sectors, nchunks = g->array_sectors / chunk;
	int n = g->raid_disks, nc = g->near_copies;
	int nsec = g->far_offset ? 1 : g->far_copies, f;

	for (f = 0; f < nsec; f++) {
		uint64_t near, row, c, c0, c1;
		int devs[RF_MAX_MEMBERS], k, i;
		uint64_t secs[RF_MAX_MEMBERS];

		if (s < (uint64_t)f * g->stride)
			break;
		near = s - (uint64_t)f * g->stride;
		row = near / chunk;
		if (g->far_offset)
			row /= (uint64_t)g->far_copies;
		/* Chunks whose near copies start in rows row - 1 and row. */
		c0 = row ? (row - 1) * (uint64_t)n / (uint64_t)nc : 0;
		c1 = (row + 1) * (uint64_t)n / (uint64_t)nc + 1;
		for (c = c0; c <= c1 && c < nchunks; c++) {
			k = rf_r10_map(g, c * chunk, devs, secs);
			for (i = 0; i < k; i++)
				if (devs[i] == t && secs[i] == s)
					return c * chunk;
		}
	}
	return UINT64_MAX;
}

static uint64_t raid10_recover_total(const struct rf_array *a)
{
	return a->geom.dev_sectors;
}

static uint64_t raid10_recover_clip(const struct rf_array *a, uint64_t pos, uint64_t n)
{
	uint64_t left = a->geom.chunk_sectors - pos % a->geom.chunk_sectors;

	return n < left ? n : left;
}

static void raid10_recover_rows(const struct rf_array *a, uint64_t off, uint32_t len, uint64_t *lo, uint64_t *hi)
{
	const struct rf_geom *g = &a->geom;
	uint64_t chunk = g->chunk_sectors, first = off >> 9, last = (off + len + 511) >> 9;
	int devs[RF_MAX_MEMBERS], n, i;
	uint64_t secs[RF_MAX_MEMBERS];

	if (last > first)
		last--;         /* an empty write still names its row */
	if (last >= g->array_sectors)
		last = g->array_sectors - 1;
	if (first > last)
		first = last;
	*lo = UINT64_MAX;
	*hi = 0;
	n = rf_r10_map(g, first, devs, secs);
	for (i = 0; i < n; i++)
		if (secs[i] < *lo)
			*lo = secs[i];
	n = rf_r10_map(g, last, devs, secs);
	for (i = 0; i < n; i++)
		if (secs[i] + 1 > *hi)
			*hi = secs[i] + 1;
	*lo -= *lo % chunk;
	*hi += (chunk - *hi % chunk) % chunk;
}

/* The rebuild of member sectors [pos, pos + n) (inside one chunk row) on
 * every device being rebuilt, from a copy in sync of what each holds
 * there: each device has at most one such chunk in the region, so one
 * buffer per slot does; every read at once, then every write. */
static int raid10_recover(struct rf_sync_work *w)
{
	struct rf_array *a = w->a;
	const struct rf_geom *g = &a->geom;
	uint64_t row = w->pos - w->pos % g->chunk_sectors, in = w->pos % g->chunk_sectors, rec, bad;
	uint32_t bytes = (uint32_t)(w->n << 9);
	int dst[RF_MAX_MEMBERS], t, nj = 0, j, ret = 0;

	rec = atomic_load(&a->recovering) & ~rf_faulty(a);
	bad = rf_faulty_read(a);
	for (t = 0; t < g->raid_disks; t++) {
		int devs[RF_MAX_MEMBERS], k, i;
		uint64_t secs[RF_MAX_MEMBERS], v;

		if (!(rec & (1ull << t)))
			continue;
		v = r10_virt(g, t, row);
		if (v == UINT64_MAX)
			continue;       /* nothing of the array's there */
		k = rf_r10_map(g, v + in, devs, secs);
		for (i = 0; i < k && (bad & (1ull << devs[i])); i++)
			;
		if (i == k) {
			ret = -EIO;     /* no copy in sync left */
			break;
		}
		rf_sync_io(w, devs[i], false, w->buf[nj], bytes, secs[i]);
		dst[nj++] = t;
	}
	if (nj) {
		int r = rf_sync_io_wait(w);

		ret = ret ? ret : r;
	}
	for (j = 0; j < nj && !ret; j++)
		rf_sync_io(w, dst[j], true, w->buf[j], bytes, w->pos);
	if (nj && !ret)
		ret = rf_sync_io_wait(w);
	return ret;
}

static int mirror_sync_region(struct rf_sync_work *w)
{
	int devs[RF_MAX_MEMBERS], n;
	uint64_t secs[RF_MAX_MEMBERS];

	/* Every copy of the region (the walk kept raid10's in one chunk). */
	n = rf_mirror_map(&w->a->geom, w->pos, devs, secs);
	if (w->act == RF_SYNC_RECOVER)
		return mirror_recover(w, n, devs, secs);
	return mirror_compare(w, n, devs, secs);
}

/* Mirrors compare the copies a row still has, however many are gone. */
static bool mirror_sync_degraded(const struct rf_array *a, uint64_t missing)
{
	return true;
}

/* One copy left (md's raid1 sync_request: degraded to raid_disks - 1):
 * nothing to compare it with. */
static bool raid1_no_redundancy(const struct rf_array *a, uint64_t missing)
{
	return __builtin_popcountll(missing) >= a->geom.max_degraded;
}

static const struct rf_sync_ops raid1_sync_ops = {
	.total = raid1_sync_total,
	.clip = raid1_sync_clip,
	.write_rows = mirror_write_rows,
	.degraded = mirror_sync_degraded,
	.no_redundancy = raid1_no_redundancy,
	.region = mirror_sync_region,
};

/* Mirrors resync, with or without a bitmap; md gives them no partial
 * parity log. */
static bool mirror_takes_policy(const struct rf_geom *g, const char *policy)
{
	return !strcmp(policy, "resync") || !strcmp(policy, "bitmap");
}

/* md's raid10_resize() refuses far copies (their places move with the
 * size); near and offset copies resize. */
static const char *r10_resize_refused(const struct rf_geom *g)
{
	return g->far_copies > 1 && !g->far_offset ? "raid10 of a far layout: md does not resize it" : NULL;
}

/* md's raid1_status(): the member map alone. */
static void r1_status(const struct rf_array *a, char *buf, size_t len)
{
	buf[0] = '\0';
	rf_status_map(a, buf, len);
}

/* md's raid10_status(): the chunk (unless every member is a near copy),
 * the copies, the far set size when it is not every member, the map. */
static void r10_status(const struct rf_array *a, char *buf, size_t len)
{
	const struct rf_geom *g = &a->geom;
	size_t n = 0;

	buf[0] = '\0';
	if (g->near_copies < g->raid_disks)
		n += (size_t)snprintf(buf + n, len - n, " %uK chunks", g->chunk_sectors / 2);
	if (g->near_copies > 1 && n < len)
		n += (size_t)snprintf(buf + n, len - n, " %d near-copies", g->near_copies);
	if (g->far_copies > 1 && n < len) {
		n += (size_t)snprintf(buf + n, len - n, " %d %s-copies", g->far_copies, g->far_offset ? "offset" : "far");
		if (g->far_set_size && g->far_set_size != g->raid_disks && n < len)
			snprintf(buf + n, len - n, " %d devices per set", g->far_set_size);
	}
	rf_status_map(a, buf, len);
}

const struct rf_level_ops rf_raid1_ops = {
	.status = r1_status,
	.name = "raid1",
	.md_levels = 1u << 1,
	.max_pieces = raid1_max_pieces,
	.split = mirror_split,
	.direct_failed = mirror_direct_failed,
	.failed = raid1_failed,
	.lost = raid1_lost,
	.keeps_last = true,
	.sync = &raid1_sync_ops,
	.read_map = mirror_read_map,
	.bitmap_range = mirror_bitmap_range,
	.takes_policy = mirror_takes_policy,
};

/* A rebuild's walk, by member sector (not from the bitmap: sync_walk.c). */
static const struct rf_sync_ops raid10_recover_ops = {
	.total = raid10_recover_total,
	.clip = raid10_recover_clip,
	.write_rows = raid10_recover_rows,
	.degraded = mirror_sync_degraded,
	.region = raid10_recover,
};

static const struct rf_sync_ops raid10_sync_ops = {
	.total = raid10_sync_total,
	.clip = raid10_sync_clip,
	.dev_offset = raid10_sync_dev_offset,
	.walk_start = raid10_sync_walk_start,
	.write_rows = mirror_write_rows,
	.degraded = mirror_sync_degraded,
	.region = mirror_sync_region,
	.recover = &raid10_recover_ops,
};

const struct rf_level_ops rf_raid10_ops = {
	.status = r10_status,
	.name = "raid10",
	.md_levels = 1u << 10,
	.max_pieces = raid10_max_pieces,
	.split = mirror_split,
	.direct_failed = mirror_direct_failed,
	.failed = raid10_failed,
	.lost = rf_r10_lost,
	.loss_words = "some chunk has every copy among them",
	.keeps_last = true,
	.sync = &raid10_sync_ops,
	.read_map = mirror_read_map,
	.bitmap_range = mirror_bitmap_range,
	.takes_policy = mirror_takes_policy,
	.resize_refused = r10_resize_refused,
	.reshape = &rf_r10_reshape_ops,
};
