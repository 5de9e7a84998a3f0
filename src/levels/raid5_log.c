/* SPDX-License-Identifier: GPL-2.0-or-later */
/* raid5_log.c - a stripe round's update as the stripe log takes it
 * (core/hooks.h; md's raid5-log.h): which columns it writes, and their
 * partial parity.
 *
 * md's partial parity log names the columns an update writes as a run of
 * data columns [kmin, kmax] of the row; its partial parity is the xor of
 * the data columns outside the run.  Columns inside the run that are not
 * written count as written (their data stays what it was), so a
 * read-modify-write reads them too.
 *
 * A round is logged on raid5 with a log, its row's parity member in sync.
 * The descriptor (struct rf_log_stripe, hooks.h) is made at a head's
 * first logged round and stays with the head.  The functions run inside
 * a round, on the worker owning the head.
 *
 * It does NOT offer the update to the log, issue the writes or resume the
 * round (raid5_round.c), nor write or replay the log (services/ppl.c).
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "raidfuse/parity.h"
#include "levels/raid5_int.h"

/* Whether this round's writes go through the log: raid5, the row's parity
 * member in sync and written. */
static bool r5_log_wanted(const struct rf_array *a, const struct rf_r5_row_ctx *c)
{
	return a->log && a->geom.level == 5 && !(c->faulty & (1ull << c->row.pd_idx));
}

/* The run of data columns [*kmin, *kmax] holding the written ones. */
static void r5_log_run(const struct rf_array *a, const struct rf_r5_row_ctx *c, uint64_t wmask, int *kmin, int *kmax)
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
uint64_t rf_r5_log_gap(const struct rf_array *a, const struct rf_r5_row_ctx *c, uint64_t wmask)
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
bool rf_r5_log_prepare(struct rf_worker *w, struct rf_stripe *sh, const struct rf_r5_row_ctx *c, uint64_t wmask)
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
void rf_r5_log_rmw(struct rf_worker *w, struct rf_stripe *sh, const struct rf_r5_row_ctx *c, uint64_t wmask)
{
	struct rf_array *a = w->a;
	void *src[RF_MAX_MEMBERS];
	int i, k, kmin, kmax, n = 0;

	assert(c->row.qd_idx < 0);
	for (i = 0; i < a->nmembers; i++)
		if (wmask & (1ull << i))
			rf_r5_merge_col(sh, i);
	r5_log_run(a, c, wmask, &kmin, &kmax);
	src[n++] = sh->log->pp;
	for (k = kmin; k <= kmax; k++)
		src[n++] = sh->buf[c->row.data_member[k]];
	rf_xor_gen(n, a->stripe_size, src, sh->buf[c->row.pd_idx]);
}
