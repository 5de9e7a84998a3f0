/* SPDX-License-Identifier: GPL-2.0-or-later */
/* raid5_round.c - the stripe rounds of raid4/5/6: what a stripe head does
 * with the STRIPE pieces raid5.c queues to it.
 *
 * A head runs rounds; each round takes the pieces queued so far and:
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
 * A round whose writes go through the stripe log (core/hooks.h) has
 * raid5_log.c describe its update and compute the partial parity before
 * the new data is merged, offers the update to the log before its
 * writes, and goes on in r5_log_resume() once the log lets them go.
 *
 * It does NOT batch member IO across heads, map requests to heads
 * (raid5.c), say what the log is given (raid5_log.c), nor keep the heads
 * (core/stripe_cache.c).
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "core/engine.h"
#include "raidfuse/fdmap.h"
#include "raidfuse/parity.h"
#include "levels/raid5_int.h"

static void row_setup(struct rf_array *a, struct rf_stripe *sh, struct rf_r5_row_ctx *c)
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
	c->faulty = rf_faulty_in(a, c->sector, sh->sector & SH_PREV) & rf_r5_all_members(a) &
		    rf_geom_all_slots(c->g);
}

/* End q's pieces with err, in order; q is left empty. */
static void end_list(struct rf_piece_q *q, int err)
{
	struct rf_piece *p;

	while ((p = STAILQ_FIRST(q))) {
		STAILQ_REMOVE_HEAD(q, link);
		rf_piece_end(p, err);
	}
}

/* Whether the write pieces of q cover every sector of column col's block. */
static bool col_full(const struct rf_array *a, const struct rf_piece_q *q, int col)
{
	uint64_t cov[2] = { 0, 0 };
	uint32_t nsec = a->stripe_size / 512, s;
	struct rf_piece *p;

	STAILQ_FOREACH(p, q, link) {
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

void rf_r5_merge_col(struct rf_stripe *sh, int col)
{
	struct rf_piece *p;

	STAILQ_FOREACH(p, &sh->writing, link)
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
	const struct rf_r5_row_ctx *c;
};

/* P [and Q] into sh->wsrc's parity columns, from its data columns (the
 * head's blocks, or pieces' own buffers). */
static int parity_gen(void *arg)
{
	const struct parity_job *j = arg;
	const struct rf_r5_row_ctx *c = j->c;
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
static uint64_t compute_parity(struct rf_worker *w, struct rf_stripe *sh, const struct rf_r5_row_ctx *c, bool in_place)
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

	STAILQ_FOREACH(p, &sh->writing, link) {
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
static void reconstruct(struct rf_worker *w, struct rf_stripe *sh, const struct rf_r5_row_ctx *c)
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
	end_list(&sh->writing, rf_failed_now(a) ? -EIO : 0);
	return false;
}

static void r5_round_done(struct rf_worker *w, struct rf_stripe *sh);

/* The log let the round's writes go (on the worker owning q now). */
static void r5_log_resume(struct rf_log_stripe *ls, struct rf_ioq *q)
{
	struct rf_stripe *sh = ls->head;
	struct rf_worker *w = rf_current_worker;
	struct rf_r5_row_ctx c;
	uint64_t wmask = 0;
	struct rf_piece *p;

	assert(w && &w->ioq == q);
	row_setup(w->a, sh, &c);
	STAILQ_FOREACH(p, &sh->writing, link)
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
static bool r5_hold_wanted(struct rf_worker *w, struct rf_stripe *sh, const struct rf_r5_row_ctx *c)
{
	struct rf_array *a = w->a;
	struct rf_piece *p;

	if (sh->no_delay || !STAILQ_EMPTY(&sh->reading) || (c->faulty & (c->data_mask | c->par_mask)))
		return false;
	STAILQ_FOREACH(p, &sh->writing, link)
		if (p->req->len < rf_chunk_bytes(a) || p->req->len <= a->stripe_size)
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
	struct rf_r5_row_ctx c;
	uint64_t need = 0, alive, toread;
	struct rf_piece *p;
	bool whole;
	int i;

	row_setup(a, sh, &c);
	sh->faulty = c.faulty;
	sh->uptodate &= ~c.faulty;
	if (a->ops->failed(a, c.faulty)) {
		end_list(&sh->reading, -EIO);
		end_list(&sh->writing, -EIO);
		return false;
	}
	alive = (c.data_mask | c.par_mask) & ~c.faulty;
	STAILQ_FOREACH(p, &sh->reading, link)
		need |= (c.faulty & (1ull << p->member)) ? alive : 1ull << p->member;
	sh->rmw = false;
	whole = false;
	if (!STAILQ_EMPTY(&sh->writing)) {
		if (c.faulty & (c.data_mask | c.par_mask)) {
			need |= alive;
		} else {
			uint64_t wmask = 0, full = 0, rmw_need, rcw_need;
			int rmw_reads, rcw_reads;

			STAILQ_FOREACH(p, &sh->writing, link)
				wmask |= 1ull << p->member;
			for (i = 0; i < a->nmembers; i++)
				if ((wmask & (1ull << i)) && col_full(a, &sh->writing, i))
					full |= 1ull << i;
			rmw_need = wmask | c.par_mask | rf_r5_log_gap(a, &c, wmask);
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
	if (toread && may_hold && !STAILQ_EMPTY(&sh->writing) && r5_hold_wanted(w, sh, &c)) {
		if (rf_stripe_delay(sh))
			return true;
		return r5_plan(w, sh, true);    /* more pieces came: plan with them */
	}
	if (!STAILQ_EMPTY(&sh->writing) && !(c.faulty & (c.data_mask | c.par_mask))) {
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
	struct rf_r5_row_ctx c;
	struct rf_piece *p;
	uint64_t wmask = 0, direct = 0;
	bool logging;
	int i;

	row_setup(a, sh, &c);
	for (i = 0; i < a->nmembers; i++)
		sh->wsrc[i] = sh->buf[i];
	/* Rebuild what was faulty when the round was planned; a column that
	 * failed since then holds what was read, or was not needed. */
	c.faulty = sh->faulty;
	if (!STAILQ_EMPTY(&sh->writing) || !STAILQ_EMPTY(&sh->reading))
		reconstruct(w, sh, &c);
	while ((p = STAILQ_FIRST(&sh->reading))) {
		STAILQ_REMOVE_HEAD(&sh->reading, link);
		memcpy(p->buf, sh->buf[p->member] + p->boff, p->len);
		rf_piece_end(p, 0);
	}
	if (STAILQ_EMPTY(&sh->writing))
		return false;

	STAILQ_FOREACH(p, &sh->writing, link)
		wmask |= 1ull << p->member;
	logging = rf_r5_log_prepare(w, sh, &c, wmask);
	if (sh->rmw && logging && sh->log->pp_size) {
		rf_r5_log_rmw(w, sh, &c, wmask);
	} else if (sh->rmw) {
		int slot;

		for (i = 0; i < a->nmembers; i++) {
			if (!(wmask & (1ull << i)))
				continue;
			memcpy(w->scratch, sh->buf[i], ss);
			rf_r5_merge_col(sh, i);
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
				rf_r5_merge_col(sh, i);
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
	STAILQ_CONCAT(&sh->reading, &sh->toread);
	STAILQ_CONCAT(&sh->writing, &sh->towrite);
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
	end_list(&sh->writing, rf_failed_now(a) ? -EIO : 0);
	r5_round_done(w, sh);
}

void rf_r5_handle_stripe(struct rf_worker *w, struct rf_stripe *sh)
{
	if (!r5_round(w, sh))
		r5_round_done(w, sh);
}
