/* SPDX-License-Identifier: GPL-2.0-or-later */
/* raid5_sync.c - the sync work of one region on raid4/5/6, and the rows
 * a write touches (the level's struct rf_sync_ops, core.h; the bitmap's
 * rows, md's raid5 bitmap_sector, are those before stripe heads round
 * them out: rf_r5_bitmap_range()).
 *
 * The sync work of one region (md's raid5 sync_request, run by the walk in
 * services/sync_walk.c; the walk's units are member sectors, a region the same
 * run on every member):
 *   check   adds 8 sectors to mismatch_cnt per 4 KiB block whose parity
 *           does not match its data; writes nothing.  raid6: when P and Q
 *           agree that exactly one block is wrong (only P, only Q, or one
 *           data block D_z with P ^ P' = e and Q ^ Q' = g^z e), the member
 *           is named in the log and in rf_sync_status.bad_member.
 *   repair  as check, then rewrites P [and Q] from the data, or the one
 *           raid6 data block P and Q identified.
 *   resync  reads the row (as md) and writes the parity that differs.
 *   recover computes the blocks of every device being rebuilt, one or
 *           (raid6) two at once, from the others, and writes them; the
 *           rows stay locked until recovery_cp passes them (writes to rows
 *           at or past it skip those devices): hold_rebuilt asks the walk
 *           for that.
 *
 * Every region's rows are locked by the walk before its work here and
 * unlocked by the walk after it (a rebuilt one's when recovery_cp passes
 * them); this file only does the work of a locked region.
 *
 * raid6 with one member missing is checked, repaired and resynced as md
 * does: the missing member's blocks from P, Q compared (P alone where Q
 * is the one missing).
 *
 * It does NOT resync raid4/5 while degraded, nor raid6 with two members
 * missing (nothing to compare against); nor walk the array, keep its
 * checkpoints or lock and unlock a region's rows (services/sync_walk.c),
 * nor own the member IO and buffers it uses (core/syncwork.c).
 */
#include <errno.h>
#include <string.h>

#include "core/engine.h"
#include "raidfuse/fdmap.h"
#include "raidfuse/parity.h"
#include "core/syncwork.h"
#include "levels/raid5_int.h"

#define BLK RF_SYNC_BLK

static uint64_t r5_sync_total(const struct rf_array *a)
{
	return a->geom.dev_sectors;
}

static uint64_t r5_sync_clip(const struct rf_array *a, uint64_t pos, uint64_t n)
{
	return n;
}

void rf_r5_bitmap_range(const struct rf_geom *g, uint64_t off, uint64_t len, uint64_t *lo, uint64_t *hi)
{
	uint64_t s0 = off >> 9, s1 = (off + len + 511) >> 9;
	uint64_t cs = g->chunk_sectors, row = cs * (uint64_t)g->data_disks;

	if (s0 / cs == (s1 - 1) / cs) {
		/* One chunk: its data and its parity sit at the same offsets
		 * of one chunk of the member row. */
		*lo = s0 / row * cs + s0 % cs;
		*hi = (s1 - 1) / row * cs + (s1 - 1) % cs + 1;
	} else {
		*lo = s0 / row * cs;
		*hi = ((s1 - 1) / row + 1) * cs;
	}
}

/* A write's rows in member sectors, rounded out to whole stripe heads (a
 * read-modify-write of one block reads and writes its whole head's column
 * blocks and parity). */
static void r5_write_rows(const struct rf_array *a, uint64_t off, uint32_t len, uint64_t *lo, uint64_t *hi)
{
	uint64_t head;

	/* The bitmap's rows (an empty write still names its row: that of
	 * its first byte), rounded out to stripe heads. */
	rf_r5_bitmap_range(&a->geom, off, len ? len : 1, lo, hi);
	head = a->stripe_size >> 9;
	if (head > 1) {
		*lo -= *lo % head;
		*hi += (head - *hi % head) % head;
	}
}

/* The members a rebuild of the devices in missing reads in row r: every
 * other one, but with one device missing on raid6 the syndrome that does
 * not rebuild it (a data block or P come from the xor row, Q from the
 * data: rf_raid6_recover() reads no other), a sixth fewer bytes on 6. */
static uint64_t recover_needs(const struct rf_geom *g, const struct rf_r5_row *r, uint64_t missing)
{
	uint64_t need = ~missing;

	if (g->level == 6 && __builtin_popcountll(missing) == 1)
		need &= ~(1ull << (missing == 1ull << r->qd_idx ? r->pd_idx : r->qd_idx));
	return need;
}

/* Queue the reads of member m for a rebuild of [pos, pos + bytes): one
 * per run of rows that need it. */
static void recover_reads(struct rf_sync_work *w, int m, uint64_t missing, uint64_t pos, uint32_t bytes)
{
	const struct rf_geom *g = &w->a->geom;
	uint64_t end = pos + bytes / 512, s = pos, run = pos;
	struct rf_r5_row r;

	while (s < end) {
		uint64_t next = (s / g->chunk_sectors + 1) * g->chunk_sectors;

		if (next > end)
			next = end;
		rf_r5_row(g, s / g->chunk_sectors, &r);
		if (!(recover_needs(g, &r, missing) & (1ull << m))) {
			if (run < s)
				rf_sync_io(w, m, false, w->buf[m] + (run - pos) * 512, (uint32_t)(s - run) * 512, run);
			run = next;
		}
		s = next;
	}
	if (run < end)
		rf_sync_io(w, m, false, w->buf[m] + (run - pos) * 512, (uint32_t)(end - run) * 512, run);
}

/* A region's rows, computed from its buffers: guarded when some of them
 * are members' mappings.  A fault there (a member shrunk under its
 * mapping) gives the buffers back to the worker, reads them the usual way
 * (reread: the short read fails the member) and runs fn once more. */
static int run_rows(struct rf_sync_work *w, int (*fn)(void *), void *arg,
		    void (*reread)(struct rf_sync_work *w, void *arg))
{
	int ret;

	if (!w->mapped)
		return fn(arg);
	ret = rf_fdmap_guarded(fn, arg);
	if (ret != -EFAULT)
		return ret;
	rf_sync_unmap(w);
	memset(w->dirty, 0, sizeof(w->dirty));
	reread(w, arg);
	ret = rf_sync_io_wait(w);
	return ret ? ret : fn(arg);
}

struct recover_rows {
	struct rf_sync_work *w;
	uint64_t missing;
};

/* Every missing block of the region's rows, into the buffers of the
 * devices being rebuilt.  A row's blocks in the region at once (one call
 * per row, not per block), but block by block where the row has zero
 * positions (DDF layouts: w->zero is one block). */
static int recover_rows(void *arg)
{
	struct recover_rows *c = arg;
	struct rf_sync_work *w = c->w;
	struct rf_array *a = w->a;
	const struct rf_geom *g = &a->geom;
	uint64_t row = UINT64_MAX, pos = w->pos, missing = c->missing;
	int i, b, run, nblk = (int)((w->n << 9) / BLK);
	void *blocks[RF_MAX_MEMBERS + 2];
	struct rf_r5_row r;

	for (b = 0; b < nblk; b += run) {
		uint64_t ds = pos + (uint64_t)b * RF_SYNC_BLK_SECTORS;
		int off = b * (int)BLK, f[2] = { -1, -1 }, nf = 0, n;
		size_t len;

		if (ds / g->chunk_sectors != row) {
			row = ds / g->chunk_sectors;
			rf_r5_row(g, row, &r);
		}
		run = (int)(((row + 1) * g->chunk_sectors - ds) / RF_SYNC_BLK_SECTORS);
		if (run > nblk - b)
			run = nblk - b;
		if (g->level == 6 && r.syndrome_disks != g->data_disks)
			run = 1;
		len = (size_t)run * BLK;
		if (g->level != 6) {
			int x = __builtin_ctzll(missing);

			for (i = 0, n = 0; i < a->nmembers; i++)
				if (i != x)
					blocks[n++] = w->buf[i] + off;
			rf_xor_gen(n, len, blocks, w->buf[x] + off);
			continue;
		}
		n = rf_r6_blocks(&r, g->data_disks, w->buf, (size_t)off, w->zero, blocks);
		for (i = 0; i < a->nmembers && nf < 2; i++)
			if (missing & (1ull << i))
				f[nf++] = rf_r6_index(&r, i);
		rf_raid6_recover(n, len, blocks, f[0], f[1]);
	}
	return 0;
}

static void recover_reread(struct rf_sync_work *w, void *arg)
{
	struct recover_rows *c = arg;
	int i;

	for (i = 0; i < w->a->nmembers; i++)
		if (!(c->missing & (1ull << i)))
			recover_reads(w, i, c->missing, w->pos, (uint32_t)(w->n << 9));
}

/* Rebuild: every missing block of the region's rows from the others
 * (xor, or raid6 recovery of any two), written to the devices being
 * rebuilt (raid6: both in this one pass).  A survivor in memory is not
 * read: its mapping is the region's buffer (rf_sync_map()).  The rows
 * stay locked after it (hold_rebuilt): writes to them skip those devices
 * until recovery_cp passes them, which waits for every region below (the
 * walk's retire(), which unlocks them). */
static int r5_recover(struct rf_sync_work *w)
{
	struct rf_array *a = w->a;
	uint32_t bytes = (uint32_t)(w->n << 9);
	uint64_t rec, pos = w->pos;
	struct recover_rows c = { w, 0 };
	int i, ret;

	/* The devices being rebuilt that hold some row of the region not
	 * yet (one resumed from further along serves the rows below its
	 * own checkpoint, as any member in sync). */
	rec = rf_faulty_at(a, pos + w->n - 1) & atomic_load(&a->recovering) & ~rf_faulty(a);
	c.missing = rf_faulty(a) | rec;
	if (!rec || a->ops->failed(a, c.missing))
		return rec ? -EIO : 0;
	for (i = 0; i < a->nmembers; i++)
		if (!(c.missing & (1ull << i)) && !rf_sync_map(w, i, bytes, pos))
			recover_reads(w, i, c.missing, pos, bytes);
	ret = rf_sync_io_wait(w);
	if (!ret)
		ret = run_rows(w, recover_rows, &c, recover_reread);
	for (i = 0; i < a->nmembers && !ret; i++)
		if (rec & (1ull << i))
			rf_sync_io(w, i, true, w->buf[i], bytes, pos);
	if (!ret)
		ret = rf_sync_io_wait(w);
	return ret;
}

static void name_bad(struct rf_sync_work *w, int member, uint64_t dev_sector, const char *what)
{
	struct rf_array *a = w->a;
	int64_t as = rf_r5_array_sector(&a->geom, member, dev_sector);

	if (!rf_sync_found_bad(w, member, as >= 0 ? (uint64_t)as : dev_sector))
		return;
	if (as >= 0)
		rf_warn("%s: %s: member %d (%s) holds the wrong data block at array sector %llu (member sector %llu)",
			a->name, rf_sync_action_name(w->act), member, a->devs[member].path, (unsigned long long)as,
			(unsigned long long)dev_sector);
	else
		rf_warn("%s: %s: member %d (%s) holds the wrong %s block at member sector %llu", a->name,
			rf_sync_action_name(w->act), member, a->devs[member].path, what,
			(unsigned long long)dev_sector);
}

/* raid6, P and Q both wrong: the data member whose error explains both
 * (Q ^ Q' == g^slot (P ^ P')), or -1.  w->delta = P ^ P' on return. */
static int raid6_bad_data(struct rf_sync_work *w, const struct rf_r5_row *r, int off)
{
	struct rf_array *a = w->a;
	int k;

	memcpy(w->delta, w->buf[r->pd_idx] + off, BLK);
	rf_xor_into(BLK, w->p, w->delta);
	for (k = 0; k < a->geom.data_disks; k++) {
		int z = r->data_member[k];

		memcpy(w->qq, w->q, BLK);
		rf_q_update(BLK, r->qslot[z], w->delta, w->qq);
		if (!memcmp(w->qq, w->buf[r->qd_idx] + off, BLK))
			return z;
	}
	return -1;
}

struct compare_rows {
	struct rf_sync_work *w;
	int missing;            /* raid6: the member missing, or -1 */
	bool wrote;
};

/* Block m of the region about to be rewritten: its buffer the worker's
 * own, if it was the mapping. */
static void rewrite(struct rf_sync_work *w, int m, int b)
{
	rf_sync_own(w, m, (uint32_t)(w->n << 9));
	w->dirty[m][b] = 1;
}

/* raid6 with member x missing, one block row at off: what x held comes
 * from the data and P, as md's handle_parity_checks6 has it (P rebuilds a
 * missing data block, so only Q can be checked; with P missing only Q is,
 * with Q missing only P).  x's block is computed into its buffer (never
 * written); w->p and w->q are P and Q of the row as it then stands.
 * Which parity to compare: *checkp, or else Q. */
static void compare_missing(struct rf_sync_work *w, const struct rf_r5_row *r, int x, int off, void **blocks,
			    bool *checkp)
{
	const struct rf_geom *g = &w->a->geom;
	int k, n;

	*checkp = x == r->qd_idx;
	if (x != r->pd_idx && x != r->qd_idx) {
		blocks[0] = w->buf[r->pd_idx] + off;
		for (k = 0, n = 1; k < g->data_disks; k++)
			if (r->data_member[k] != x)
				blocks[n++] = w->buf[r->data_member[k]] + off;
		rf_xor_gen(n, BLK, blocks, w->buf[x] + off);
	}
	rf_pq_gen(rf_r6_blocks(r, g->data_disks, w->buf, (size_t)off, w->zero, blocks), BLK, blocks, w->p, w->q);
}

/* Recompute P [and Q] of every block row of the region and compare; a
 * repair or resync marks what it rewrites.  raid6 with one member missing
 * compares the one parity left to compare (compare_missing()); a mismatch
 * there names no member: P and Q disagree, and nothing says which one is
 * right. */
static int compare_rows(void *arg)
{
	struct compare_rows *c = arg;
	struct rf_sync_work *w = c->w;
	struct rf_array *a = w->a;
	const struct rf_geom *g = &a->geom;
	enum rf_sync_action act = w->act;
	int k, b, nblk = (int)((w->n << 9) / BLK);
	uint64_t row = UINT64_MAX, pos = w->pos;
	bool raid6 = g->level == 6;
	void *blocks[RF_MAX_MEMBERS + 2];
	struct rf_r5_row r;

	for (b = 0; b < nblk; b++) {
		uint64_t ds = pos + (uint64_t)b * RF_SYNC_BLK_SECTORS;
		int off = b * (int)BLK, bad = -1;
		bool badp, badq;

		if (ds / g->chunk_sectors != row) {
			row = ds / g->chunk_sectors;
			rf_r5_row(g, row, &r);
		}
		if (c->missing >= 0) {
			bool checkp;

			compare_missing(w, &r, c->missing, off, blocks, &checkp);
			badp = checkp && memcmp(w->p, w->buf[r.pd_idx] + off, BLK) != 0;
			badq = !checkp && memcmp(w->q, w->buf[r.qd_idx] + off, BLK) != 0;
		} else {
			if (raid6) {
				rf_pq_gen(rf_r6_blocks(&r, g->data_disks, w->buf, (size_t)off, w->zero, blocks), BLK,
					  blocks, w->p, w->q);
			} else {
				for (k = 0; k < g->data_disks; k++)
					blocks[k] = w->buf[r.data_member[k]] + off;
				rf_xor_gen(g->data_disks, BLK, blocks, w->p);
			}
			badp = memcmp(w->p, w->buf[r.pd_idx] + off, BLK) != 0;
			badq = raid6 && memcmp(w->q, w->buf[r.qd_idx] + off, BLK) != 0;
		}
		if (!badp && !badq)
			continue;
		if (act != RF_SYNC_RESYNC) {
			rf_sync_mismatch(w, RF_SYNC_BLK_SECTORS);
			if (!raid6 || c->missing >= 0)
				bad = -1;       /* one parity alone cannot say which block is wrong */
			else if (!badq)
				name_bad(w, bad = r.pd_idx, ds, "P");
			else if (!badp)
				name_bad(w, bad = r.qd_idx, ds, "Q");
			else if ((bad = raid6_bad_data(w, &r, off)) >= 0)
				name_bad(w, bad, ds, "data");
			else
				rf_dbg("%s: %s: member sector %llu: P and Q wrong, no single member explains it",
				       a->name, rf_sync_action_name(act), (unsigned long long)ds);
			if (act == RF_SYNC_CHECK)
				continue;
		}
		c->wrote = true;
		if (bad >= 0 && bad != r.pd_idx && bad != r.qd_idx) {
			/* P and Q are right: the data block is what they say. */
			rewrite(w, bad, b);
			rf_xor_into(BLK, w->delta, w->buf[bad] + off);
			continue;
		}
		if (badp) {
			rewrite(w, r.pd_idx, b);
			memcpy(w->buf[r.pd_idx] + off, w->p, BLK);
		}
		if (badq) {
			rewrite(w, r.qd_idx, b);
			memcpy(w->buf[r.qd_idx] + off, w->q, BLK);
		}
	}
	return 0;
}

static void compare_reread(struct rf_sync_work *w, void *arg)
{
	struct compare_rows *c = arg;
	int i;

	c->wrote = false;
	for (i = 0; i < w->a->nmembers; i++)
		if (i != c->missing)
			rf_sync_io(w, i, false, w->buf[i], (uint32_t)(w->n << 9), w->pos);
}

/* Whether check, repair and resync compare with the members in missing
 * gone: raid6 with one (md resyncs while fewer than max_degraded are). */
static bool r5_sync_degraded(const struct rf_array *a, uint64_t missing)
{
	return a->geom.level == 6 && __builtin_popcountll(missing) == 1;
}

/* As many members missing as the level survives (md's raid5
 * sync_request: degraded >= max_degraded): no parity left to compare. */
static bool r5_no_redundancy(const struct rf_array *a, uint64_t missing)
{
	return __builtin_popcountll(missing) >= a->geom.max_degraded;
}

/* check, repair, resync: recompute P [and Q] of every block row.  A
 * member in memory is not read: its mapping is the region's buffer
 * (rf_sync_map()) until a block of it is rewritten. */
static int r5_compare(struct rf_sync_work *w)
{
	struct rf_array *a = w->a;
	uint32_t bytes = (uint32_t)(w->n << 9);
	int i, nblk = (int)(bytes / BLK), ret = 0;
	uint64_t pos = w->pos;
	struct compare_rows c = { w, -1, false };
	uint64_t missing;

	missing = rf_faulty_read(a);
	if (missing && !r5_sync_degraded(a, missing))
		return -EIO;    /* too many members failed since the start: nothing to compare */
	if (missing)
		c.missing = __builtin_ctzll(missing);
	/* Every column: P and Q move from row to row inside the region. */
	for (i = 0; i < a->nmembers; i++)
		if (i != c.missing && !rf_sync_map(w, i, bytes, pos))
			rf_sync_io(w, i, false, w->buf[i], bytes, pos);
	ret = rf_sync_io_wait(w);
	if (!ret)
		ret = run_rows(w, compare_rows, &c, compare_reread);
	for (i = 0; i < a->nmembers; i++)
		rf_sync_write_dirty(w, i, w->buf[i], w->dirty[i], nblk, bytes, pos, ret);
	if (!ret)
		ret = rf_sync_io_wait(w);
	/* Cached heads of these rows hold what the members held before
	 * (dropped while the walk holds the rows locked). */
	if (c.wrote)
		rf_sync_rows_forget(a, pos, pos + w->n);
	return ret;
}

static int r5_sync_region(struct rf_sync_work *w)
{
	return w->act == RF_SYNC_RECOVER ? r5_recover(w) : r5_compare(w);
}

#undef BLK

const struct rf_sync_ops rf_r5_sync_ops = {
	.total = r5_sync_total,
	.clip = r5_sync_clip,
	.write_rows = r5_write_rows,
	.degraded = r5_sync_degraded,
	.no_redundancy = r5_no_redundancy,
	.region = r5_sync_region,
	.hold_rebuilt = true,
};
