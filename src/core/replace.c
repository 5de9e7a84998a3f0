/* SPDX-License-Identifier: GPL-2.0-or-later */
/* replace.c - hot replace in the IO path: what md's raid1/raid10/raid5
 * do for a device with a replacement (md's rdev->replacement, mdadm
 * --replace), the writes.
 *
 * A slot whose device is to be replaced keeps serving reads and writes
 * from that device while the sync walk (services/sync_walk.c, action
 * "recover") copies its data to the replacement, a device of the table
 * without a slot (hotreplace.c attaches it).  Every write of the slot, and
 * every fsync of it, is issued to the replacement too: at the same member
 * sector, its own data offset.  So a row the walk copied stays current,
 * and a row it has not copied yet is copied after the writes into it
 * (the walk locks a region's rows while it reads and writes them).  The
 * original request ends only when both writes ended: its buffer is read
 * by both.
 *
 * A write the replacement loses (an error, no memory for the second
 * write) does not fail the slot or the request: the replacement no longer
 * holds the slot's data, it is marked in repl_failed, no more writes are
 * issued to it, and the management thread detaches it (faulty) and stops
 * the walk, as md fails a replacement (raid5_end_write_request: md_error
 * on the replacement).
 *
 * Invariants: replacing and repl_dev change only with every request
 * drained (hotreplace.c, under rf_barrier_quiesced_all), so a write sees the
 * same replacement at issue and at its end; both IOs are on the issuing
 * worker's queue and end on its thread, so the twin's count needs no
 * atomics.  Reads never go to a replacement.
 *
 * rf_replace_failed() is request.c's, beside rf_member_fail().
 *
 * It does NOT choose, attach, promote or detach replacements (hotreplace.c),
 * copy data (sync_walk.c), or record anything in the superblocks (sbstate.c
 * records a replacement as md does, with its copy's checkpoint).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "raidfuse/iolog.h"
#include "raidfuse/log.h"

struct rf_twin {
	struct rf_mio mio;              /* the replacement's IO */
	struct rf_array *a;
	struct rf_mio *orig;            /* the slot's */
	void (*orig_end)(struct rf_mio *m);
	int slot;
	int left;                       /* IOs not ended yet */
	int orig_res;
};

static void twin_finish(struct rf_twin *t)
{
	struct rf_mio *m = t->orig;

	m->end = t->orig_end;
	m->twin = NULL;
	m->res = t->orig_res;
	free(t);
	m->end(m);
}

static void twin_orig_end(struct rf_mio *m)
{
	struct rf_twin *t = m->twin;

	t->orig_res = m->res;
	if (!--t->left)
		twin_finish(t);
}

static void twin_end(struct rf_mio *tm)
{
	struct rf_twin *t = (struct rf_twin *)tm;

	if (tm->res)
		rf_replace_failed(t->a, t->slot, tm->res, tm->op == RF_MIO_FSYNC ? "fsync failed" : "write failed");
	if (!--t->left)
		twin_finish(t);
}

void rf_replace_twin(struct rf_worker *w, struct rf_mio *m)
{
	struct rf_array *a = w->a;
	int k = m->member, r = a->repl_dev[k];
	struct rf_twin *t;

	/* TEST-ONLY FAULT (55-replace's control): the slot's writes miss
	 * the replacement. */
	if (rf_test_break("replace-no-twin")) {
		rf_ioq_queue(&w->ioq, m);
		return;
	}
	t = malloc(sizeof(*t));
	if (!t) {
		rf_replace_failed(a, k, -ENOMEM, "write not issued");
		rf_ioq_queue(&w->ioq, m);
		return;
	}
	t->mio = (struct rf_mio){ .buf = m->buf, .len = m->len, .op = m->op, .member = (int16_t)r,
				  .end = twin_end };
	if (m->op != RF_MIO_FSYNC)
		t->mio.off = m->off - a->devs[k].data_offset + a->devs[r].data_offset;
	t->a = a;
	t->orig = m;
	t->orig_end = m->end;
	t->slot = k;
	t->left = 2;
	m->twin = t;
	m->end = twin_orig_end;
	rf_ioq_queue(&w->ioq, m);
	rf_ioq_queue(&w->ioq, &t->mio);
}

uint64_t rf_replace_mask(const struct rf_array *a)
{
	return atomic_load_explicit(&a->replacing, memory_order_acquire);
}

uint64_t rf_replace_failed_mask(const struct rf_array *a)
{
	return atomic_load_explicit(&a->repl_failed, memory_order_acquire);
}

int rf_replace_dev_of(const struct rf_array *a, int k)
{
	return rf_replace_mask(a) >> k & 1 ? a->repl_dev[k] : -1;
}

int rf_replacement_slot(const struct rf_array *a, int dev)
{
	uint64_t r = rf_replace_mask(a);

	while (r) {
		int k = __builtin_ctzll(r);

		r &= r - 1;
		if (a->repl_dev[k] == dev)
			return k;
	}
	return -1;
}

void rf_replace_attach(struct rf_array *a, int k, int dev)
{
	a->repl_dev[k] = (int16_t)dev;
	atomic_fetch_and(&a->repl_failed, ~(1ull << k));
	atomic_fetch_or(&a->replacing, 1ull << k);
	atomic_store(&a->recovery_cp, 0);
}

void rf_replace_detach(struct rf_array *a, int k)
{
	atomic_fetch_and(&a->replacing, ~(1ull << k));
	atomic_fetch_and(&a->repl_failed, ~(1ull << k));
	a->repl_dev[k] = -1;
}
