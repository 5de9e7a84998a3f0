/* SPDX-License-Identifier: GPL-2.0-or-later */
/* raid5.c - parity levels: md's raid4, raid5 and raid6.
 *
 * Reads of in-sync members are DIRECT pieces, one per chunk (md's
 * chunk_aligned_read).  Writes, and reads of a faulty member's data, are
 * STRIPE pieces: parts of one stripe_size block of one column, served by
 * the stripe head for that block row.  A head runs rounds; each round takes
 * the pieces queued so far and:
 *
 *   plan     which blocks must be uptodate: for a write, the cheaper of
 *            read-modify-write (old data of written columns + P [+ Q]) and
 *            reconstruct-write (every data column not fully overwritten),
 *            as rmw_level says; a degraded row always reads every in-sync
 *            column.  Blocks still uptodate from an earlier round are not
 *            read again.
 *   hold     a write round that would read, written only by large
 *            requests while other writes are under way, is held back
 *            instead (stripe_cache.c, delayed heads): the next request of
 *            a stream may fill the row, which then reads nothing.
 *   read     member reads of the missing blocks; a failed read marks the
 *            member faulty and plans the round again, degraded.
 *   compute  rebuild faulty columns (xor, or raid6 recovery of any two),
 *            serve the reads, merge the new data and compute P [and Q]:
 *            rmw as P ^= old ^ new, Q ^= g^slot (old ^ new); rcw from all
 *            data.  A row written whole from the requests' own buffers,
 *            with no log to write first, has its parity computed in the
 *            parity members' mappings where they are in memory
 *            (rf_ioq_store_at()): stored once, not copied after.
 *   write    the written data columns and parity, on in-sync members.
 *
 * Rounds of one head never overlap, so concurrent writes to a row cannot
 * tear its parity, and a degraded read never rebuilds from a half-written
 * row.  A write ends successfully when the array has not failed: data on a
 * member that failed during the write is still held by parity.
 *
 * The sync work of one region (md's raid5 sync_request, run by the walk in
 * services/sync.c; the walk's units are member sectors, a region the same
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
 *           at or past it skip those devices).
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
 * raid6 with one member missing is checked, repaired and resynced as md
 * does: the missing member's blocks from P, Q compared (P alone where Q
 * is the one missing).
 *
 * It does NOT batch member IO across heads, does not resync raid4/5
 * while degraded, nor raid6 with two members missing (nothing to compare
 * against).
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "raidfuse/fdmap.h"
#include "raidfuse/parity.h"
#include "core/syncwork.h"

static inline uint64_t all_members(const struct rf_array *a)
{
	return a->nmembers == 64 ? ~0ull : (1ull << a->nmembers) - 1;
}

/* A stripe head key's mark: the head serves the previous geometry of a
 * reshape under way (member sectors stay far below 2^63). */
#define SH_PREV (1ull << 63)

static int r5_max_pieces(const struct rf_array *a, uint32_t max_len)
{
	/* A reshape's previous chunk (set at open, or a grow's, the same as
	 * the array's) may be the smaller one; reshape.active may change under
	 * a request being allocated (a grow begins), so it is not read here:
	 * room for the piece more a request crossing the position needs is
	 * always made. */
	uint32_t cb = a->reshape.prev.chunk_sectors && a->reshape.prev.chunk_sectors * 512 < a->chunk_bytes ?
		      a->reshape.prev.chunk_sectors * 512 : a->chunk_bytes;
	int chunks = max_len / cb + 3;

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
	return __builtin_popcountll(faulty & all_members(a)) > a->geom.max_degraded;
}

/* ---- stripe rounds ---- */

struct row_ctx {
	const struct rf_geom *g;        /* the head's geometry */
	uint64_t sector;                /* its member sector (the key without SH_PREV) */
	struct rf_r5_row row;
	uint64_t faulty;        /* snapshot for this round */
	uint64_t data_mask;     /* data columns */
	uint64_t par_mask;      /* P and Q columns */
};

static void row_setup(struct rf_array *a, struct rf_stripe *sh, struct row_ctx *c)
{
	int k;

	c->g = sh->sector & SH_PREV ? &a->reshape.prev : &a->geom;
	c->sector = sh->sector & ~SH_PREV;
	rf_r5_row(c->g, c->sector / c->g->chunk_sectors, &c->row);
	c->data_mask = 0;
	for (k = 0; k < c->g->data_disks; k++)
		c->data_mask |= 1ull << c->row.data_member[k];
	c->par_mask = 1ull << c->row.pd_idx;
	if (c->row.qd_idx >= 0)
		c->par_mask |= 1ull << c->row.qd_idx;
	/* The geometry's slots only: a slot a grow adds is no member of the
	 * previous rows (a raid0 grown through a raid4 leaves its new P
	 * slot empty). */
	c->faulty = rf_faulty_in(a, c->sector, sh->sector & SH_PREV) & all_members(a) &
		    (c->g->raid_disks >= 64 ? ~0ull : (1ull << c->g->raid_disks) - 1);
}

static void end_list(struct rf_piece *list, int err)
{
	struct rf_piece *p, *next;

	for (p = list; p; p = next) {
		next = p->next;
		rf_piece_end(p, err);
	}
}

/* Whether the write pieces cover every sector of column col's block. */
static bool col_full(const struct rf_array *a, struct rf_piece *list, int col)
{
	uint64_t cov[2] = { 0, 0 };
	uint32_t nsec = a->stripe_size / 512, s;
	struct rf_piece *p;

	for (p = list; p; p = p->next) {
		uint32_t first = (p->boff + 511) / 512, last = (p->boff + p->len) / 512;

		if (p->member != col)
			continue;
		for (s = first; s < last; s++)
			cov[s / 64] |= 1ull << (s % 64);
	}
	for (s = 0; s < nsec; s++)
		if (!(cov[s / 64] & (1ull << (s % 64))))
			return false;
	return true;
}

static void merge_col(struct rf_stripe *sh, int col)
{
	struct rf_piece *p;

	for (p = sh->writing; p; p = p->next)
		if (p->member == col)
			memcpy(sh->buf[col] + p->boff, p->buf, p->len);
}

static void r5_read_end(struct rf_mio *m);
static void r5_write_end(struct rf_mio *m);

static void issue(struct rf_worker *w, struct rf_stripe *sh, int col, bool write)
{
	struct rf_array *a = w->a;
	struct rf_mio *m = &sh->mio[col];

	m->priv = sh;
	m->end = write ? r5_write_end : r5_read_end;
	m->buf = write ? sh->wsrc[col] : sh->buf[col];
	m->len = a->stripe_size;
	m->off = rf_dev_offset(a, col, sh->sector & SH_PREV) + ((sh->sector & ~SH_PREV) << 9);
	m->member = (int16_t)col;
	m->op = write ? RF_MIO_WRITE : RF_MIO_READ;
	sh->pending++;
	rf_member_queue(w, m);
}

struct parity_job {
	struct rf_worker *w;
	struct rf_stripe *sh;
	const struct row_ctx *c;
};

/* P [and Q] into sh->wsrc's parity columns, from its data columns (the
 * head's blocks, or pieces' own buffers). */
static int parity_gen(void *arg)
{
	const struct parity_job *j = arg;
	const struct row_ctx *c = j->c;
	struct rf_stripe *sh = j->sh;
	uint32_t ss = j->w->a->stripe_size;
	void *blocks[RF_MAX_MEMBERS + 2];
	int k, n;

	if (c->row.qd_idx < 0) {
		for (k = 0; k < c->g->data_disks; k++)
			blocks[k] = sh->wsrc[c->row.data_member[k]];
		rf_xor_gen(c->g->data_disks, ss, blocks, sh->wsrc[c->row.pd_idx]);
		return 0;
	}
	n = rf_r6_blocks(&c->row, c->g->data_disks, sh->wsrc, 0, j->w->zero, blocks);
	rf_pq_gen(n, ss, blocks, blocks[n], blocks[n + 1]);
	return 0;
}

/* P [and Q] of the round, in the head's parity blocks; with in_place,
 * straight into the parity members' mappings where the IO queue would
 * copy their writes (rf_ioq_store_at()): the blocks are not copied again,
 * and the head's own are stale then.  Returns the columns computed in
 * place. */
static uint64_t compute_parity(struct rf_worker *w, struct rf_stripe *sh, const struct row_ctx *c, bool in_place)
{
	struct rf_array *a = w->a;
	struct parity_job j = { w, sh, c };
	int par[2] = { c->row.pd_idx, c->row.qd_idx };
	uint64_t mapped = 0, faulty = in_place ? rf_faulty_in(a, sh->sector & ~SH_PREV, sh->sector & SH_PREV) : 0;
	int k;

	for (k = 0; k < 2 && par[k] >= 0; k++) {
		const char *at = NULL;

		if (in_place && !(faulty & (1ull << par[k])))
			at = rf_ioq_store_at(&w->ioq, par[k],
					     rf_dev_offset(a, par[k], sh->sector & SH_PREV) +
					     ((sh->sector & ~SH_PREV) << 9), a->stripe_size);
		sh->wsrc[par[k]] = at ? (char *)at : sh->buf[par[k]];
		mapped |= at ? 1ull << par[k] : 0;
	}
	if (mapped && !rf_fdmap_guarded(parity_gen, &j)) {
		atomic_fetch_add_explicit(&a->stats.parity_mapped, (uint64_t)__builtin_popcountll(mapped),
					  memory_order_relaxed);
		return mapped;
	}
	/* Not in place, or a page of a mapping faulted (the member shrunk
	 * under it): into the head's blocks, whose writes meet the error at
	 * issue. */
	for (k = 0; k < 2 && par[k] >= 0; k++)
		sh->wsrc[par[k]] = sh->buf[par[k]];
	parity_gen(&j);
	return 0;
}

/* The one write piece of column col when it covers the whole block, or
 * NULL (none, part of it, or several: those are merged in order). */
static struct rf_piece *lone_full_piece(const struct rf_stripe *sh, int col, uint32_t ss)
{
	struct rf_piece *p, *only = NULL;

	for (p = sh->writing; p; p = p->next) {
		if (p->member != col)
			continue;
		if (only)
			return NULL;
		only = p;
	}
	return only && only->boff == 0 && only->len == ss ? only : NULL;
}

/* Rebuild the faulty columns of the row from the rest (all in-sync blocks
 * are uptodate). */
static void reconstruct(struct rf_worker *w, struct rf_stripe *sh, const struct row_ctx *c)
{
	struct rf_array *a = w->a;
	uint64_t bad = c->faulty & (c->data_mask | c->par_mask);
	void *blocks[RF_MAX_MEMBERS + 2];
	int i, n, f[2] = { -1, -1 }, nf = 0;

	if (!bad)
		return;
	if (c->row.qd_idx < 0) {
		int x = __builtin_ctzll(bad);

		if (x == c->row.pd_idx)
			return;         /* data is all there; P is recomputed on write */
		for (i = 0, n = 0; i < a->nmembers; i++)
			if (i != x && ((c->data_mask | c->par_mask) & (1ull << i)))
				blocks[n++] = sh->buf[i];
		rf_xor_gen(n, a->stripe_size, blocks, sh->buf[x]);
		sh->uptodate |= 1ull << x;
		return;
	}
	n = rf_r6_blocks(&c->row, c->g->data_disks, sh->buf, 0, w->zero, blocks);
	for (i = 0; i < a->nmembers && nf < 2; i++)
		if (bad & (1ull << i))
			f[nf++] = rf_r6_index(&c->row, i);
	if (nf == 2 && f[0] > f[1]) {
		int t = f[0];

		f[0] = f[1];
		f[1] = t;
	}
	rf_raid6_recover(n, a->stripe_size, blocks, f[0], f[1]);
	sh->uptodate |= bad;
}

static bool r5_compute(struct rf_worker *w, struct rf_stripe *sh);

/* ---- the stripe log (hooks.h; md's raid5-log.h) ----
 *
 * md's partial parity log names the columns an update writes as a run of
 * data columns [kmin, kmax] of the row; its partial parity is the xor of
 * the data columns outside the run.  Columns inside the run that are not
 * written count as written (their data stays what it was), so a
 * read-modify-write reads them too. */

/* Whether this round's writes go through the log: raid5, the row's parity
 * member in sync and written. */
static bool r5_log_wanted(const struct rf_array *a, const struct row_ctx *c)
{
	return a->log && a->geom.level == 5 && !(c->faulty & (1ull << c->row.pd_idx));
}

/* The run of data columns [*kmin, *kmax] holding the written ones. */
static void r5_log_run(const struct rf_array *a, const struct row_ctx *c, uint64_t wmask, int *kmin, int *kmax)
{
	int k;

	*kmin = -1;
	*kmax = -1;
	for (k = 0; k < a->geom.data_disks; k++) {
		if (!(wmask & (1ull << c->row.data_member[k])))
			continue;
		if (*kmin < 0)
			*kmin = k;
		*kmax = k;
	}
}

/* Data columns inside the run that are not written. */
static uint64_t r5_log_gap(const struct rf_array *a, const struct row_ctx *c, uint64_t wmask)
{
	uint64_t gap = 0;
	int k, kmin, kmax;

	if (!r5_log_wanted(a, c))
		return 0;
	r5_log_run(a, c, wmask, &kmin, &kmax);
	for (k = kmin; k >= 0 && k <= kmax; k++)
		gap |= 1ull << c->row.data_member[k];
	return gap & ~wmask;
}

/* Before the new data is merged: describe the update in sh->log and
 * compute its partial parity from the blocks as they are.  false: the
 * round is not logged. */
static bool r5_log_prepare(struct rf_worker *w, struct rf_stripe *sh, const struct row_ctx *c, uint64_t wmask)
{
	struct rf_array *a = w->a;
	uint32_t ss = a->stripe_size;
	struct rf_log_stripe *ls = sh->log;
	void *src[RF_MAX_MEMBERS];
	int k, kmin, kmax, n = 0;
	int64_t first;

	if (!r5_log_wanted(a, c) || !(wmask & c->data_mask))
		return false;
	if (!ls) {
		ls = calloc(1, sizeof(*ls));
		if (!ls || posix_memalign((void **)&ls->pp, 4096, ss)) {
			free(ls);
			return false;   /* unlogged, as md without memory for its log */
		}
		ls->head = sh;
		sh->log = ls;
	}
	r5_log_run(a, c, wmask, &kmin, &kmax);
	first = rf_r5_array_sector(&a->geom, c->row.data_member[kmin], sh->sector);
	if (first < 0)
		return false;
	ls->parity = c->row.pd_idx;
	ls->data_sector = (uint64_t)first;
	ls->data_size = (uint32_t)(kmax - kmin + 1) * ss;
	ls->pp_size = kmin == 0 && kmax == a->geom.data_disks - 1 ? 0 : ss;
	if (!ls->pp_size)
		return true;    /* a full row: recovery xors all its data */
	/* One pass: old parity ^ old data of the run (read-modify-write),
	 * else the data outside the run; both are the xor outside it. */
	if (sh->rmw) {
		src[n++] = sh->buf[c->row.pd_idx];
		for (k = kmin; k <= kmax; k++)
			src[n++] = sh->buf[c->row.data_member[k]];
	} else {
		for (k = 0; k < a->geom.data_disks; k++)
			if (k < kmin || k > kmax)
				src[n++] = sh->buf[c->row.data_member[k]];
	}
	if (n == 1)
		memcpy(ls->pp, src[0], ss);
	else
		rf_xor_gen(n, ss, src, ls->pp);
	return true;
}

/* A logged read-modify-write with partial parity: merge the new data and
 * make the new parity from the partial parity, in one pass: the xor
 * outside the run ^ the run's new data (its unwritten columns were read,
 * unchanged), instead of old ^ new of each column into the old parity. */
static void r5_log_rmw(struct rf_worker *w, struct rf_stripe *sh, const struct row_ctx *c, uint64_t wmask)
{
	struct rf_array *a = w->a;
	void *src[RF_MAX_MEMBERS];
	int i, k, kmin, kmax, n = 0;

	assert(c->row.qd_idx < 0);
	for (i = 0; i < a->nmembers; i++)
		if (wmask & (1ull << i))
			merge_col(sh, i);
	r5_log_run(a, c, wmask, &kmin, &kmax);
	src[n++] = sh->log->pp;
	for (k = kmin; k <= kmax; k++)
		src[n++] = sh->buf[c->row.data_member[k]];
	rf_xor_gen(n, a->stripe_size, src, sh->buf[c->row.pd_idx]);
}

/* Issue the round's writes of the columns in mask (those in sync).
 * Returns true when writes are in flight. */
static bool r5_issue_writes(struct rf_worker *w, struct rf_stripe *sh, uint64_t mask)
{
	struct rf_array *a = w->a;
	uint64_t towrite = mask & ~rf_faulty_in(a, sh->sector & ~SH_PREV, sh->sector & SH_PREV);
	int i;

	for (i = 0; i < a->nmembers; i++)
		if (towrite & (1ull << i))
			issue(w, sh, i, true);
	if (sh->pending)
		return true;
	if (sh->logged) {
		sh->logged = false;
		a->log->stripe_done(a->log_priv, &w->ioq, sh->log);
	}
	end_list(sh->writing, rf_failed_now(a) ? -EIO : 0);
	sh->writing = NULL;
	return false;
}

static void r5_round_done(struct rf_worker *w, struct rf_stripe *sh);

/* The log let the round's writes go (on the worker owning q now). */
static void r5_log_resume(struct rf_log_stripe *ls, struct rf_ioq *q)
{
	struct rf_stripe *sh = ls->head;
	struct rf_worker *w = rf_current_worker;
	struct row_ctx c;
	uint64_t wmask = 0;
	struct rf_piece *p;

	assert(w && &w->ioq == q);
	row_setup(w->a, sh, &c);
	for (p = sh->writing; p; p = p->next)
		wmask |= 1ull << p->member;
	if (!r5_issue_writes(w, sh, wmask | c.par_mask))
		r5_round_done(w, sh);
}

/* Whether a write round that would pre-read is held back instead
 * (stripe_cache.c, delayed heads): a healthy row, not released by a bound
 * already, written only by large requests (at least a chunk, and more
 * than a head's block: part of a stream whose next request may fill the
 * row; a small random write is not held), while other writes are under way that may fill it: another
 * write request past the barrier (group threads, whose worker releases
 * what it holds before it sleeps), or another inline submitter driving
 * (the last one out runs what is held). */
static bool r5_hold_wanted(struct rf_worker *w, struct rf_stripe *sh, const struct row_ctx *c)
{
	struct rf_array *a = w->a;
	struct rf_piece *p;

	if (sh->no_delay || sh->reading || (c->faulty & (c->data_mask | c->par_mask)))
		return false;
	for (p = sh->writing; p; p = p->next)
		if (p->req->len < a->chunk_bytes || p->req->len <= a->stripe_size)
			return false;
	if (w->g)
		return atomic_load_explicit(&a->inflight[1], memory_order_relaxed) > 1;
	return atomic_load_explicit(&a->drivers, memory_order_relaxed) > 1;
}

/* Plan the round and issue reads.  Returns true when IO is in flight, or
 * when the head was held (it is not the caller's then).  may_hold: a new
 * round (not one planned again after a failed read). */
static bool r5_plan(struct rf_worker *w, struct rf_stripe *sh, bool may_hold)
{
	struct rf_array *a = w->a;
	struct row_ctx c;
	uint64_t need = 0, alive, toread;
	struct rf_piece *p;
	bool whole;
	int i;

	row_setup(a, sh, &c);
	sh->faulty = c.faulty;
	sh->uptodate &= ~c.faulty;
	if (a->ops->failed(a, c.faulty)) {
		end_list(sh->reading, -EIO);
		end_list(sh->writing, -EIO);
		sh->reading = sh->writing = NULL;
		return false;
	}
	alive = (c.data_mask | c.par_mask) & ~c.faulty;
	for (p = sh->reading; p; p = p->next)
		need |= (c.faulty & (1ull << p->member)) ? alive : 1ull << p->member;
	sh->rmw = false;
	whole = false;
	if (sh->writing) {
		if (c.faulty & (c.data_mask | c.par_mask)) {
			need |= alive;
		} else {
			uint64_t wmask = 0, full = 0, rmw_need, rcw_need;
			int rmw_reads, rcw_reads;

			for (p = sh->writing; p; p = p->next)
				wmask |= 1ull << p->member;
			for (i = 0; i < a->nmembers; i++)
				if ((wmask & (1ull << i)) && col_full(a, sh->writing, i))
					full |= 1ull << i;
			rmw_need = wmask | c.par_mask | r5_log_gap(a, &c, wmask);
			rcw_need = c.data_mask & ~full;
			rmw_reads = __builtin_popcountll(rmw_need & ~sh->uptodate);
			rcw_reads = __builtin_popcountll(rcw_need & ~sh->uptodate);
			/* Every data column written whole: parity from the new
			 * data alone, whatever is cached (no old data to xor). */
			whole = full == c.data_mask;
			if (!whole && (a->rmw_level == 2 ? rmw_reads <= rcw_reads :
				       a->rmw_level == 1 && rmw_reads < rcw_reads)) {
				sh->rmw = true;
				need |= rmw_need;
			} else {
				need |= rcw_need;
			}
		}
	}
	toread = need & ~sh->uptodate & ~c.faulty;
	if (toread && may_hold && sh->writing && r5_hold_wanted(w, sh, &c)) {
		if (rf_stripe_delay(sh))
			return true;
		return r5_plan(w, sh, true);    /* more pieces came: plan with them */
	}
	if (sh->writing && !(c.faulty & (c.data_mask | c.par_mask))) {
		if (whole)
			atomic_fetch_add_explicit(&a->stats.full, 1, memory_order_relaxed);
		else if (toread)
			atomic_fetch_add_explicit(sh->rmw ? &a->stats.rmw : &a->stats.rcw, 1, memory_order_relaxed);
	}
	sh->io_error = 0;
	if (toread) {
		sh->phase = RF_SH_READ;
		for (i = 0; i < a->nmembers; i++)
			if (toread & (1ull << i))
				issue(w, sh, i, false);
		return true;
	}
	return r5_compute(w, sh);
}

/* Everything needed is uptodate: serve reads, compute, issue writes.
 * Returns true when writes are in flight. */
static bool r5_compute(struct rf_worker *w, struct rf_stripe *sh)
{
	struct rf_array *a = w->a;
	uint32_t ss = a->stripe_size;
	struct row_ctx c;
	struct rf_piece *p, *next;
	uint64_t wmask = 0, direct = 0;
	bool logging;
	int i;

	row_setup(a, sh, &c);
	for (i = 0; i < a->nmembers; i++)
		sh->wsrc[i] = sh->buf[i];
	/* Rebuild what was faulty when the round was planned; a column that
	 * failed since then holds what was read, or was not needed. */
	c.faulty = sh->faulty;
	if (sh->writing || sh->reading)
		reconstruct(w, sh, &c);
	for (p = sh->reading; p; p = next) {
		next = p->next;
		memcpy(p->buf, sh->buf[p->member] + p->boff, p->len);
		rf_piece_end(p, 0);
	}
	sh->reading = NULL;
	if (!sh->writing)
		return false;

	for (p = sh->writing; p; p = p->next)
		wmask |= 1ull << p->member;
	logging = r5_log_prepare(w, sh, &c, wmask);
	if (sh->rmw && logging && sh->log->pp_size) {
		r5_log_rmw(w, sh, &c, wmask);
	} else if (sh->rmw) {
		int slot;

		for (i = 0; i < a->nmembers; i++) {
			if (!(wmask & (1ull << i)))
				continue;
			memcpy(w->scratch, sh->buf[i], ss);
			merge_col(sh, i);
			rf_xor_into(ss, sh->buf[i], w->scratch);        /* scratch = old ^ new */
			rf_xor_into(ss, w->scratch, sh->buf[c.row.pd_idx]);
			if (c.row.qd_idx >= 0) {
				slot = c.row.qslot[i];
				rf_q_update(ss, slot, w->scratch, sh->buf[c.row.qd_idx]);
			}
		}
	} else {
		/* A column one piece writes whole goes to its member from the
		 * request's buffer, which lives until the piece ends after the
		 * write: no copy into the cache, whose block is stale then. */
		for (i = 0; i < a->nmembers; i++) {
			struct rf_piece *only;

			if (!(wmask & (1ull << i)))
				continue;
			only = lone_full_piece(sh, i, ss);
			if (only) {
				sh->wsrc[i] = only->buf;
				direct |= 1ull << i;
			} else {
				merge_col(sh, i);
			}
		}
		/* A row written whole from the requests' buffers, with no log
		 * to write first: its parity straight where its members keep
		 * it. */
		direct |= compute_parity(w, sh, &c, !logging && direct == c.data_mask);
		if (direct & c.data_mask)
			atomic_fetch_add_explicit(&a->stats.direct, (uint64_t)__builtin_popcountll(direct & c.data_mask),
						  memory_order_relaxed);
	}
	sh->uptodate |= wmask | c.par_mask;
	sh->uptodate &= ~direct;
	sh->phase = RF_SH_WRITE;
	sh->logged = false;
	if (logging) {
		/* Set before the log has it: once taken, another worker may
		 * resume the head and end its writes at once. */
		sh->log->resume = r5_log_resume;
		sh->logged = true;
		if (!a->log->write_stripe(a->log_priv, &w->ioq, sh->log))
			return true;    /* the log resumes it; the head is not ours now */
		sh->logged = false;
	}
	return r5_issue_writes(w, sh, wmask | c.par_mask);
}

/* Take the queued pieces as this round's batch and run it.  Returns true
 * when IO is in flight. */
static bool r5_round(struct rf_worker *w, struct rf_stripe *sh)
{
	struct rf_group *g = sh->g;

	pthread_mutex_lock(&g->lock);
	sh->reading = sh->toread;
	sh->toread = NULL;
	sh->toread_tail = &sh->toread;
	sh->writing = sh->towrite;
	sh->towrite = NULL;
	sh->towrite_tail = &sh->towrite;
	pthread_mutex_unlock(&g->lock);
	return r5_plan(w, sh, true);
}

/* The round ended without IO in flight: go idle or run the next one. */
static void r5_round_done(struct rf_worker *w, struct rf_stripe *sh)
{
	assert(!sh->pending);
	sh->phase = RF_SH_IDLE;
	while (rf_stripe_finish(sh))
		if (r5_round(w, sh))
			return;
}

static void r5_read_end(struct rf_mio *m)
{
	struct rf_stripe *sh = m->priv;
	struct rf_worker *w = rf_current_worker;
	struct rf_array *a = w->a;

	assert(sh->phase == RF_SH_READ && sh->pending > 0);
	if (m->res) {
		rf_member_fail(a, m->member, m->res, "read", m->off);
		sh->io_error = 1;
	} else {
		sh->uptodate |= 1ull << m->member;
	}
	if (--sh->pending)
		return;
	/* A failed read re-plans the round, degraded now. */
	if (sh->io_error ? r5_plan(w, sh, false) : r5_compute(w, sh))
		return;
	r5_round_done(w, sh);
}

static void r5_write_end(struct rf_mio *m)
{
	struct rf_stripe *sh = m->priv;
	struct rf_worker *w = rf_current_worker;
	struct rf_array *a = w->a;

	assert(sh->phase == RF_SH_WRITE && sh->pending > 0);
	if (m->res)
		rf_member_fail(a, m->member, m->res, "write", m->off);
	if (--sh->pending)
		return;
	if (sh->logged) {
		sh->logged = false;
		a->log->stripe_done(a->log_priv, &w->ioq, sh->log);
	}
	end_list(sh->writing, rf_failed_now(a) ? -EIO : 0);
	sh->writing = NULL;
	r5_round_done(w, sh);
}

static void r5_handle_stripe(struct rf_worker *w, struct rf_stripe *sh)
{
	if (!r5_round(w, sh))
		r5_round_done(w, sh);
}

/* ---- the sync work of one region ---- */

#define BLK RF_SYNC_BLK

static uint64_t r5_sync_total(const struct rf_array *a)
{
	return a->geom.dev_sectors;
}

static uint64_t r5_sync_clip(const struct rf_array *a, uint64_t pos, uint64_t n)
{
	return n;
}

/* A write's rows in member sectors, rounded out to whole stripe heads (a
 * read-modify-write of one block reads and writes its whole head's column
 * blocks and parity). */
static void r5_write_rows(const struct rf_array *a, uint64_t off, uint32_t len, uint64_t *lo, uint64_t *hi)
{
	uint64_t s0 = off >> 9, s1 = (off + len + 511) >> 9, head;

	if (s1 <= s0)
		s1 = s0 + 1;    /* an empty write still names its row */
	/* The bitmap's rows (md/layout.c), rounded out to stripe heads. */
	rf_r5_rows(&a->geom, s0, s1, lo, hi);
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

/* Rebuild: every missing block of the region's rows from the others
 * (xor, or raid6 recovery of any two), written to the devices being
 * rebuilt (raid6: both in this one pass).  The rows stay locked: writes
 * to them skip those devices until recovery_cp passes them, which waits
 * for every region below (the walk's retire()). */
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
 * stay locked: writes to them skip those devices until recovery_cp
 * passes them, which waits for every region below (the walk's retire()). */
static int r5_recover(struct rf_sync_work *w)
{
	struct rf_array *a = w->a;
	uint32_t bytes = (uint32_t)(w->n << 9);
	uint64_t rec, pos = w->pos;
	struct recover_rows c = { w, 0 };
	int i, ret;

	rf_sync_rows_lock(w, pos, pos + w->n);
	w->keep_locked = true;
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

	rf_sync_rows_lock(w, pos, pos + w->n);
	missing = rf_faulty_read(a);
	if (missing && !r5_sync_degraded(a, missing)) {
		ret = -EIO;     /* too many members failed since the start: nothing to compare */
		goto out;
	}
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
	/* Cached heads of these rows hold what the members held before. */
	if (c.wrote)
		rf_sync_rows_forget(a, pos, pos + w->n);
out:
	rf_sync_rows_unlock(w);
	return ret;
}

static int r5_sync_region(struct rf_sync_work *w)
{
	return w->act == RF_SYNC_RECOVER ? r5_recover(w) : r5_compare(w);
}

#undef BLK

static const struct rf_sync_ops raid5_sync_ops = {
	.total = r5_sync_total,
	.clip = r5_sync_clip,
	.write_rows = r5_write_rows,
	.degraded = r5_sync_degraded,
	.region = r5_sync_region,
};

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
	.handle_stripe = r5_handle_stripe,
	.sync = &raid5_sync_ops,
	.read_map = r5_read_map,
};
