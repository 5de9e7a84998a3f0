/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ppl.c - the partial parity log of a running raid5 (md's raid5-ppl.c).
 *
 * At open (after the superblock state read the superblocks, before
 * anything is served), for a writable array whose level takes the "ppl"
 * policy (rf_level_takes_policy(): the level says so, raid5 alone) and
 * whose superblocks keep md's partial parity log (md/ppl.h):
 *   - a dirty array (not shut down cleanly) has every present member's
 *     newest header replayed (rf_ppl_recover): each unfinished stripe gets
 *     parity = partial parity ^ the data written, so its parity matches
 *     every column again.  When nothing was refused the superblocks are
 *     marked clean and in sync at once (md does the same; through the
 *     superblock state, which then starts no resync);
 *   - every present member's area gets an empty header (md writes one at
 *     every start), so what is logged from now on starts at its beginning.
 *
 * While it runs, the parity level's stripe rounds (levels/raid5_round.c)
 * offer each stripe head's update to the log (core/hooks.h, struct
 * rf_log_ops) after computing its partial parity (levels/raid5_log.c) and
 * before issuing its data and parity writes.  The log of the row's parity
 * member takes it:
 *   - idle: the head opens the log's next unit on its worker's queue: the
 *     header's write is queued at once and filled only when that queue is
 *     submitted (an ioq plug, unit_close), so every head the same worker
 *     offers meanwhile (the other heads of its request, of its batch)
 *     joins the unit, its partial parity queued right behind the header
 *     (one write where nothing else came between);
 *   - busy (a unit in flight, or open on another worker): the head waits
 *     on the log's list; when the unit's last stripe is written,
 *     everything waiting (up to 148 entries, consecutive heads merged into
 *     one entry as md merges them, and RF_PPL_UNIT_MAX of partial parity)
 *     becomes the next unit, one header write for them all, issued at
 *     once.
 * The unit's IO is submitted as soon as it is queued (its header when it
 * opens from the waiting list, its stripes' writes when they resume), not
 * after the worker's next pass over its groups: the log's round trip is
 * what its waiting heads wait for.
 * A unit is written as md writes one: its header at the log's next place
 * in the area (after the previous unit's partial parity, back at the
 * start when the rest is short), its partial parity behind it, then the
 * member is flushed (where it has a cache to flush: not on tmpfs, as md
 * flushes only members with a write-back cache); only then are its
 * stripes' data and parity writes issued (ls->resume).  Once they all
 * ended, the members they wrote are flushed (those with a cache to
 * flush, as md's ppl_do_flush), and only then may the log's next unit
 * be written: its header makes this unit's entries unreachable to a
 * replay, so what they describe must not sit in a volatile cache a power
 * cut loses.  One unit per member log is in flight at a time (flush
 * included), so after a crash the newest header names every stripe whose
 * writes may be unfinished, which is all md's recovery replays.  Its member IO goes
 * on the queue of the worker that starts it (its completions come back
 * there); that worker then owns the unit's heads until they end.
 *
 * md/consistency_policy switches it off ("resync") and on again ("ppl")
 * with every request drained: every log emptied, the superblocks' feature
 * bit cleared or set, the log taken off or put on the IO path (off, raid5
 * prepares no partial parity for it).  A raid5 whose superblocks keep no
 * log (created or last run with resync) gets the service too, switched
 * off: its first "ppl" puts each member's log where md puts it
 * (md/ppl.h's rf_ppl_place, planned at open: the free space beside the
 * superblock), or is refused with the reason (no room, a bitmap, 0.90).
 * An area too small for two units holds one header at its start,
 * rewritten for every unit, as md's single log.
 *
 * Locks: each log's lock (a leaf) guards busy, open, its waiting list,
 * the unit's header entries and member mask while heads join it, and the
 * count of the unit's stripes not yet written; the unit's IO state (its
 * header buffer and mios, its stripe list, next) is its leader's, the
 * one worker whose queue it opened on (only that worker joins heads to
 * it, only while open); its flush state (fq, fl_left, fmio) the worker of
 * its last stripe's end.  The generation counter and the off switch are
 * atomic.
 *
 * What it does NOT do: write a log's next
 * header while the previous unit's data writes are in flight (md does not
 * either: its recovery replays the newest header only); raid6; give a
 * log to a member that joins later (a spare rebuilt into a slot); place
 * logs on members whose free space differs (one place is recorded for
 * all).
 */
#include <errno.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>

#include "core/core.h"
#include "services/sbstate.h"
#include "raidfuse/config.h"
#include "raidfuse/lockcheck.h"
#include "raidfuse/log.h"
#include "raidfuse/ppl.h"
#include "raidfuse/super.h"

struct ppl;

struct plog {
	struct ppl *p;
	int m;                          /* its member (slot) */
	/* Set at open, or by the first switch to ppl of an array that kept
	 * no log (every request drained), then immutable: */
	struct rf_ppl_area area;
	bool multi;                     /* headers one after another (rf_ppl_area_multi) */
	bool flush;                     /* the member has a cache to flush */
	pthread_mutex_t lock;           /* a leaf: busy, open, wait, unit_left */
	bool busy;                      /* lock: a unit open or in flight */
	bool open;                      /* lock: the unit's header is not issued yet: heads
					 * offered on q join it */
	STAILQ_HEAD(, rf_log_stripe) wait;      /* lock: waiting for the next unit, oldest first */
	int unit_left;                  /* lock: the unit's stripes not yet written */
	/* the unit in flight, its leader's (joined only on q's thread, open): */
	STAILQ_HEAD(, rf_log_stripe) unit;      /* its stripes, in the order they joined */
	struct rf_ioq *q;               /* the leader's queue: the unit's completions run there */
	struct rf_ioq_plug plug;        /* on q while open: closes the unit before q's submit */
	uint64_t upp;                   /* the unit's partial parity bytes */
	uint64_t nls;                   /* its stripes */
	int io_left, io_err;
	bool flushed;
	uint64_t at;                    /* the unit's header, bytes into the area */
	uint64_t next;                  /* the next unit's */
	uint64_t dmask;                 /* lock: the members the unit's stripes write */
	struct rf_ioq *fq;              /* the queue of the flush before the next unit */
	int fl_left;                    /* its flushes not yet ended (on fq's worker) */
	struct rf_mio fmio[RF_MAX_MEMBERS];
	char *hdr;                      /* RF_PPL_HEADER_SIZE, aligned */
	struct rf_mio hmio;
	struct rf_ppl_header h;
};

/* Partial parity one unit may carry.  md's own units carry up to 128 KiB
 * (PPL_SPACE_SIZE) but its recovery reads any size; larger units mean
 * fewer log round trips for long writes. */
#define RF_PPL_UNIT_MAX (512 * 1024)

struct ppl {
	struct rf_array *a;
	uint32_t sig;
	uint64_t chunk_sectors;         /* immutable: the geometry's */
	int data_disks;
	atomic_uint_fast64_t seq;       /* generations, as md's ppl_conf->seq */
	atomic_uint_fast64_t nr_units, nr_entries;      /* stats: headers, stripes */
	atomic_uint_fast64_t nr_flushes;                /* stats: data member flushes */
	uint64_t vol_mask;              /* immutable: members with a cache to flush */
	atomic_bool off;                /* md/consistency_policy "resync": no logging (changed
					 * with every request drained) */
	/* Immutable after open: where the superblocks record the log (as
	 * they did, or md's placement on an array that keeps none yet: the
	 * same on every member), or why it cannot be kept (place_err, why). */
	int16_t place_off;
	uint16_t place_size;
	int place_err;
	char why[256];
	struct rf_ppl_area plan[RF_MAX_MEMBERS];        /* present: a member to log on */
	bool areas;                     /* every request drained: the logs' areas are set */
	bool bitmap;                    /* immutable: a write-intent bitmap is kept */
	int n;
	struct plog log[RF_MAX_MEMBERS];
};

/* ---- running ---- */

static void unit_resume(struct plog *l, struct rf_ioq *q)
{
	STAILQ_HEAD(, rf_log_stripe) ready = STAILQ_HEAD_INITIALIZER(ready);
	struct rf_log_stripe *ls;

	/* Resuming the last one may end the unit and start the next (which
	 * takes over l->unit): the stripes are taken off it first, each off
	 * the list before it resumes. */
	STAILQ_CONCAT(&ready, &l->unit);
	while ((ls = STAILQ_FIRST(&ready))) {
		STAILQ_REMOVE_HEAD(&ready, link);
		ls->resume(ls, q);
	}
	/* The stripes' writes go out now, not after the worker's next pass
	 * over its groups: until they end, the log's next unit waits. */
	rf_ioq_submit(q);
}

static void unit_io_end(struct rf_mio *m)
{
	struct plog *l = m->priv;
	struct rf_array *a = l->p->a;

	if (m->res && !l->io_err) {
		l->io_err = m->res;
		rf_member_fail(a, l->m, m->res, "partial parity log write", m->off);
	}
	if (--l->io_left)
		return;
	if (!l->io_err && !l->flushed && l->flush) {
		/* md writes the unit with FUA: on the member before the data. */
		l->flushed = true;
		l->io_left = 1;
		l->hmio.op = RF_MIO_FSYNC;
		l->hmio.buf = NULL;
		l->hmio.len = 0;
		l->hmio.off = 0;
		rf_ioq_queue(l->q, &l->hmio);
		return;
	}
	/* Written (or the member failed: its parity is not written either). */
	unit_resume(l, l->q);
}

/* Whether ls extends entry e as md's ppl_log_stripe() merges them: the
 * next head of the same chunk row writing the same run of columns (with
 * partial parity), or the next full row (without), the entry's partial
 * parity kept below a chunk (md's recovery reads a strip of pp_size). */
static bool merges(const struct ppl *p, const struct rf_ppl_entry *e, const struct rf_log_stripe *ls)
{
	uint64_t cs = p->chunk_sectors, heads;

	if (e->data_sector / cs != ls->data_sector / cs)
		return false;
	if (!e->pp_size) {
		heads = e->data_size / ((uint64_t)p->data_disks * RF_PPL_BLOCK);
		return !ls->pp_size && ls->data_sector == e->data_sector + heads * (RF_PPL_BLOCK / 512);
	}
	return ls->pp_size && ls->pp_size == RF_PPL_BLOCK && e->data_size / e->pp_size == ls->data_size / ls->pp_size &&
	       ls->data_sector == e->data_sector + e->pp_size / 512 && (uint64_t)e->pp_size + ls->pp_size < cs * 512;
}

/* The members ls's head writes: its data columns (as its entry names
 * them, md/ppl_fmt.c's replay reads the same) and the parity. */
static uint64_t stripe_members(const struct ppl *p, const struct rf_log_stripe *ls)
{
	const struct rf_geom *g = rf_array_geom(p->a);
	uint64_t mask = 1ull << ls->parity;
	uint32_t cols = ls->pp_size ? ls->data_size / ls->pp_size : (uint32_t)p->data_disks, dd;
	struct rf_r5_map mp;

	for (dd = 0; dd < cols && dd < (uint32_t)p->data_disks; dd++) {
		rf_r5_map_sector(g, ls->data_sector + dd * p->chunk_sectors, &mp);
		mask |= 1ull << mp.dd_idx;
	}
	return mask;
}

/* Add ls to the entries of h (merged into the last one where md would). */
static void add_entry(const struct ppl *p, struct rf_ppl_header *h, int m, const struct rf_log_stripe *ls)
{
	struct rf_ppl_entry *e = h->entries_count ? &h->e[h->entries_count - 1] : NULL;

	if (!e || !merges(p, e, ls)) {
		e = &h->e[h->entries_count++];
		e->data_sector = ls->data_sector;
		e->pp_size = 0;
		e->data_size = 0;
		e->parity_disk = (uint32_t)m;
		e->checksum = 0;        /* set when the unit closes (unit_close) */
	}
	e->data_size += ls->data_size;
	e->pp_size += ls->pp_size;
}

/* Whether ls may join l's open unit (lock held): the area's room behind
 * the unit's header, RF_PPL_UNIT_MAX of partial parity, and the entries
 * one header holds (ls merged into the last one where md would). */
static bool fits(const struct plog *l, const struct rf_log_stripe *ls)
{
	const struct rf_ppl_entry *e = l->h.entries_count ? &l->h.e[l->h.entries_count - 1] : NULL;
	uint64_t pp = l->upp + ls->pp_size;

	if (pp > RF_PPL_UNIT_MAX || l->at + RF_PPL_HEADER_SIZE + pp > l->area.size)
		return false;
	return l->h.entries_count < RF_PPL_MAX_ENTRIES || (e && merges(l->p, e, ls));
}

/* ls joins l's open unit (lock held, on q's thread, fits()): its entry,
 * the members it writes, its partial parity queued right behind the
 * unit's (one write with the header where nothing else was queued for
 * the member in between). */
static void join(struct plog *l, struct rf_ioq *q, struct rf_log_stripe *ls)
{
	add_entry(l->p, &l->h, l->m, ls);
	l->dmask |= stripe_members(l->p, ls);
	l->unit_left++;
	l->nls++;
	STAILQ_INSERT_TAIL(&l->unit, ls, link);
	if (!ls->pp_size)
		return;
	ls->mio = (struct rf_mio){ .end = unit_io_end, .priv = l, .buf = ls->pp,
				   .off = l->area.start + l->at + RF_PPL_HEADER_SIZE + l->upp,
				   .len = ls->pp_size, .member = (int16_t)l->m, .op = RF_MIO_WRITE };
	l->upp += ls->pp_size;
	l->io_left++;
	rf_ioq_queue(q, &ls->mio);
}

static void unit_close(struct rf_ioq_plug *pl, struct rf_ioq *q);

/* Open l's next unit on q with ls (l idle, lock held): its header goes
 * at the log's next place (back at the start when the rest of the area
 * is short for ls, as md rewinds; always there in a single log), queued
 * on q now and filled when q is submitted (unit_close); until then,
 * heads offered on q join it. */
static void unit_open(struct plog *l, struct rf_ioq *q, struct rf_log_stripe *ls)
{
	l->busy = true;
	l->open = true;
	l->q = q;
	l->h.entries_count = 0;
	l->dmask = 0;
	l->unit_left = 0;
	STAILQ_INIT(&l->unit);
	l->upp = 0;
	l->nls = 0;
	l->io_err = 0;
	l->flushed = false;
	l->io_left = 1;
	if (!l->multi || l->next + RF_PPL_HEADER_SIZE + ls->pp_size > l->area.size)
		l->next = 0;
	l->at = l->next;
	l->hmio = (struct rf_mio){ .end = unit_io_end, .priv = l, .buf = l->hdr, .off = l->area.start + l->at,
				   .len = RF_PPL_HEADER_SIZE, .member = (int16_t)l->m, .op = RF_MIO_WRITE };
	rf_ioq_queue(q, &l->hmio);
	join(l, q, ls);
	rf_ioq_plug(q, &l->plug);
}

/* q is about to issue what it queued: close l's open unit and fill its
 * header (on q's thread, before the header's write is issued). */
static void unit_close(struct rf_ioq_plug *pl, struct rf_ioq *q)
{
	struct plog *l = (struct plog *)((char *)pl - offsetof(struct plog, plug));
	struct ppl *p = l->p;
	struct rf_log_stripe *ls = STAILQ_FIRST(&l->unit);
	uint32_t k;

	(void)q;
	pthread_mutex_lock(&l->lock);
	l->open = false;
	pthread_mutex_unlock(&l->lock);
	/* Only q's thread joins a unit, and only while it is open: its
	 * entries and stripes are final now.  Each entry's checksum is md's
	 * crc32c of its partial parity, its stripes' in order (those with
	 * partial parity: an entry has it or not for all its stripes),
	 * computed here, not while the log's lock is held. */
	l->h.signature = p->sig;
	l->h.generation = atomic_fetch_add(&p->seq, 1) + 1;
	for (k = 0; k < l->h.entries_count; k++) {
		struct rf_ppl_entry *e = &l->h.e[k];
		uint32_t crc = ~0u, left = e->pp_size;

		for (; left; ls = STAILQ_NEXT(ls, link)) {
			if (!ls->pp_size)
				continue;
			crc = rf_crc32c(crc, ls->pp, ls->pp_size);
			left -= ls->pp_size;
		}
		e->checksum = e->pp_size ? ~crc : 0;
	}
	rf_ppl_encode(&l->h, l->hdr);
	l->next = l->at + RF_PPL_HEADER_SIZE + l->upp;
	atomic_fetch_add(&p->nr_units, 1);
	atomic_fetch_add(&p->nr_entries, l->nls);
}

static int ppl_write_stripe(void *priv, struct rf_ioq *q, struct rf_log_stripe *ls)
{
	struct ppl *p = priv;
	struct plog *l;

	if (ls->parity < 0 || ls->parity >= p->n)
		return -EAGAIN;
	l = &p->log[ls->parity];
	if (atomic_load_explicit(&p->off, memory_order_relaxed) || !l->area.present ||
	    (rf_array_faulty_read(p->a) & (1ull << l->m)))
		return -EAGAIN;         /* md: no log on a missing parity member */
	pthread_mutex_lock(&l->lock);
	if (!l->busy) {
		unit_open(l, q, ls);
	} else if (l->open && l->q == q && fits(l, ls)) {
		join(l, q, ls);
	} else {
		STAILQ_INSERT_TAIL(&l->wait, ls, link);
	}
	pthread_mutex_unlock(&l->lock);
	return 0;
}

/* The unit is over (its stripes written and, where they need it,
 * flushed): what waits becomes the next unit, else the log is idle. */
static void unit_next(struct plog *l, struct rf_ioq *q)
{
	struct rf_log_stripe *ls;
	bool opened = false;

	pthread_mutex_lock(&l->lock);
	l->busy = false;
	while ((ls = STAILQ_FIRST(&l->wait)) && (!opened || fits(l, ls))) {
		STAILQ_REMOVE_HEAD(&l->wait, link);
		if (opened) {
			join(l, q, ls);
		} else {
			unit_open(l, q, ls);
			opened = true;
		}
	}
	pthread_mutex_unlock(&l->lock);
	/* The waiting heads waited a whole unit already: their header goes
	 * out now. */
	if (opened)
		rf_ioq_submit(q);
}

static void flush_end(struct rf_mio *m)
{
	struct plog *l = m->priv;

	if (m->res)
		rf_member_fail(l->p->a, m->member, m->res, "flush before the partial parity log's next unit", 0);
	if (--l->fl_left)
		return;
	unit_next(l, l->fq);
}

static void ppl_stripe_done(void *priv, struct rf_ioq *q, struct rf_log_stripe *ls)
{
	struct ppl *p = priv;
	struct plog *l = &p->log[ls->parity];
	uint64_t mask;
	int i;

	pthread_mutex_lock(&l->lock);
	if (--l->unit_left > 0) {
		pthread_mutex_unlock(&l->lock);
		return;
	}
	mask = l->dmask & p->vol_mask & ~rf_array_faulty_read(p->a);
	pthread_mutex_unlock(&l->lock);
	/* md (ppl_do_flush): the next unit's header makes this one's
	 * entries unreachable to a replay, so what its stripes wrote must
	 * be on the members first, not in a volatile cache a power cut
	 * loses.  The log stays busy meanwhile: stripes arriving now wait
	 * for the next unit. */
	if (!mask) {
		unit_next(l, q);
		return;
	}
	l->fq = q;
	l->fl_left = __builtin_popcountll(mask);
	atomic_fetch_add(&p->nr_flushes, (uint64_t)l->fl_left);
	for (i = 0; i < p->n; i++) {
		if (!(mask & (1ull << i)))
			continue;
		l->fmio[i] = (struct rf_mio){ .end = flush_end, .priv = l, .member = (int16_t)i, .op = RF_MIO_FSYNC };
		rf_ioq_queue(q, &l->fmio[i]);
	}
}

/* ---- md/consistency_policy: resync <-> ppl ---- */

struct switch_job {
	struct ppl *p;
	bool on;
};

/* md flushes a log write (FUA) only on members with a volatile write
 * cache (ppl_init_child_log: wb_cache_on).  A file on tmpfs or ramfs has
 * none: the page cache is all there is, what is written is as durable as
 * it gets; everything else (disk file systems, block devices, overlays,
 * NBD exports) is flushed. */
static bool needs_flush(const struct rf_dev *d)
{
	struct statfs fs;
	const char *e = getenv("RAIDFUSE_PPL_FLUSH");

	/* A test instrument: "1" flushes as if every member had a
	 * write-back cache (tmpfs, where the tests run, has none), "0" as if
	 * none had. */
	if (e && (!strcmp(e, "1") || !strcmp(e, "0")))
		return *e == '1';
	if (d->io.nbd || d->io.layer || d->io.fd < 0 || fstatfs(d->io.fd, &fs))
		return true;
	return fs.f_type != TMPFS_MAGIC && fs.f_type != RAMFS_MAGIC;
}

static void log_setup(struct plog *l, const struct rf_ppl_area *area)
{
	l->area = *area;
	l->multi = rf_ppl_area_multi(area->size);
	l->flush = needs_flush(rf_dev_get(l->p->a, l->m));
}

/* The first switch to ppl of an array that kept no log: each member's
 * log goes where md puts it (p->plan).  Everything is checked before
 * anything is written. */
static int place_logs(struct ppl *p)
{
	int i, r;

	for (i = 0; i < p->n; i++) {
		if (!p->plan[i].present || (rf_array_faulty_read(p->a) & (1ull << i)) || p->log[i].hdr)
			continue;
		r = posix_memalign((void **)&p->log[i].hdr, 4096, RF_PPL_HEADER_SIZE);
		if (r) {
			p->log[i].hdr = NULL;
			return -r;
		}
	}
	for (i = 0; i < p->n; i++)
		if (p->log[i].hdr)
			log_setup(&p->log[i], &p->plan[i]);
	return 0;
}

/* Every request drained: every log empty (a later crash replays nothing
 * stale, here or in md), then the superblocks say whether a log is kept,
 * then the level offers its stripes to the log or not. */
static int switch_drained(void *arg)
{
	struct switch_job *j = arg;
	struct ppl *p = j->p;
	struct rf_ppl_sbio sio;
	struct rf_ppl_io io;
	int i, r;

	if (j->on && !p->areas) {
		r = place_logs(p);
		if (r) {
			rf_err("%s: setting up the partial parity log: %s", rf_array_name(p->a), strerror(-r));
			return r;
		}
	}
	memset(&sio, 0, sizeof(sio));
	for (i = 0; i < p->n; i++)
		if (p->log[i].area.present && !(rf_array_faulty_read(p->a) & (1ull << i)))
			sio.dev[i] = &rf_dev_get(p->a, i)->sb_io;
	rf_ppl_io_sb(&io, &sio);
	for (i = 0; i < p->n; i++) {
		struct plog *l = &p->log[i];

		if (!sio.dev[i])
			continue;
		r = rf_ppl_write_empty(&io, i, &l->area, p->sig);
		if (r) {
			rf_err("member %d (%s): emptying the partial parity log: %s", i, rf_dev_get(p->a, i)->path,
			       strerror(-r));
			return r;
		}
		l->next = 0;
	}
	r = rf_sbstate_set_ppl(rf_array_sbstate(p->a), j->on, p->place_off, p->place_size);
	if (r)
		return r;
	p->areas = true;
	rf_array_log_active(p->a, j->on);
	atomic_store(&p->off, !j->on);
	rf_info("%s: consistency policy %s", rf_array_name(p->a), j->on ? "ppl" : "resync");
	return 0;
}

static int ppl_set_policy(void *priv, bool on)
{
	struct ppl *p = priv;
	struct switch_job j = { p, on };

	struct rf_sbstate *s = rf_array_sbstate(p->a);

	if (atomic_load(&p->off) == !on && !p->bitmap)
		return 0;
	if (p->bitmap && !on)
		return -EINVAL;         /* md: "bitmap" it stays */
	if (on && p->place_err) {
		rf_warn("%s: consistency policy ppl refused: %s", rf_array_name(p->a), p->why);
		return p->place_err;
	}
	/* A resync still due would be lost to the next replay, which
	 * marks the array in sync (md refuses it too: no resync with a log). */
	if (on && s) {
		uint64_t due;

		pthread_mutex_lock(&s->lock);   /* alone: a leaf here */
		due = s->resync_offset;
		pthread_mutex_unlock(&s->lock);
		if (due != RF_SB_MAX_SECTOR) {
			rf_warn("%s: consistency policy ppl refused: a resync is due from sector %llu; let it finish",
				rf_array_name(p->a), (unsigned long long)due);
			return -EBUSY;
		}
	}
	return rf_barrier_quiesced_all(p->a, switch_drained, &j);
}

static const struct rf_log_ops ppl_log_ops = {
	.write_stripe = ppl_write_stripe,
	.stripe_done = ppl_stripe_done,
	.set_policy = ppl_set_policy,
};

/* ---- open: replay, empty headers ---- */

static void ppl_close(void *priv)
{
	struct ppl *p = priv;
	int i;

	if (p->areas)
		rf_info("%s: partial parity log: %llu header writes for %llu stripes, %llu data member flushes",
			rf_array_name(p->a), (unsigned long long)atomic_load(&p->nr_units),
			(unsigned long long)atomic_load(&p->nr_entries),
			(unsigned long long)atomic_load(&p->nr_flushes));
	for (i = 0; i < p->n; i++) {
		pthread_mutex_destroy(&p->log[i].lock);
		free(p->log[i].hdr);
	}
	free(p);
}

static void ppl_info(void *priv, struct rf_array_info *out)
{
	struct ppl *p = priv;

	out->ppl = !atomic_load(&p->off);
}

static const struct rf_hooks ppl_hooks = {
	.name = "ppl",
	.info = ppl_info,
	.close = ppl_close,
};

/* Where md would put the log on each present member of an array that
 * keeps none (rf_ppl_place), kept in p for a later switch to ppl, or why
 * it cannot go anywhere. */
static void plan_logs(struct ppl *p)
{
	char why[200];
	bool first = true;
	int i, r;

	for (i = 0; i < p->n; i++) {
		struct rf_dev *d = rf_dev_get(p->a, i);
		int16_t off;
		uint16_t size;

		if (!d->sb_has || !(rf_array_present(p->a) & (1ull << i)) ||
		    (rf_array_faulty_read(p->a) & (1ull << i)))
			continue;
		r = rf_ppl_place(&d->sb, &off, &size, why, sizeof(why));
		if (!r && !first && (off != p->place_off || size != p->place_size)) {
			snprintf(why, sizeof(why), "its free space differs from the other members' (%u sectors at "
				 "%d, not %u at %d), and one log's place is recorded for all", size, off,
				 p->place_size, p->place_off);
			r = -ENOSPC;
		}
		if (r) {
			p->place_err = r;
			snprintf(p->why, sizeof(p->why), "member %d (%s): %s", i, d->path, why);
			return;
		}
		first = false;
		p->place_off = off;
		p->place_size = size;
		p->plan[i] = (struct rf_ppl_area){ .present = true,
						   .start = (uint64_t)((int64_t)d->sb.sb_offset + off) * 512,
						   .size = size * 512ull,
						   .data_offset = d->sb.data_offset * 512 };
	}
	if (first) {
		p->place_err = -ENODEV;
		snprintf(p->why, sizeof(p->why), "no member with a superblock to record it");
	}
}

static int service_open(struct rf_array *a, const struct rf_config *cfg, char *err, size_t errlen)
{
	const struct rf_geom *g = rf_array_geom(a);
	struct rf_ppl_area areas[RF_MAX_MEMBERS];
	struct rf_ppl_sbio sio;
	struct rf_ppl_io io;
	struct rf_ppl_stats st;
	struct ppl *p;
	bool any = false, dirty = false;
	const struct rf_dev *first = NULL;
	int i, n = rf_array_nslots(a), r, nlogs;

	if (cfg->readonly || !rf_level_takes_policy(a, "ppl"))
		return 0;
	memset(areas, 0, sizeof(areas));
	memset(&sio, 0, sizeof(sio));
	for (i = 0; i < n; i++) {
		struct rf_dev *d = rf_dev_get(a, i);

		if (!d->sb_has || !(rf_array_present(a) & (1ull << i)) || (rf_array_faulty_read(a) & (1ull << i)))
			continue;
		if (!first)
			first = d;
		if (rf_ppl_area_of(&d->sb, &areas[i]))
			continue;
		if (areas[i].start + areas[i].size > areas[i].data_offset &&
		    areas[i].start < areas[i].data_offset + d->sb.data_size * 512) {
			snprintf(err, errlen, "member %d (%s): its partial parity log (%llu bytes at %llu) runs into "
				 "its data", i, d->path, (unsigned long long)areas[i].size,
				 (unsigned long long)areas[i].start);
			return -EINVAL;
		}
		sio.dev[i] = &d->sb_io;
		any = true;
		dirty |= !d->sb.clean;
	}
	if (!first)
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->a = a;
	p->n = n;
	p->chunk_sectors = g->chunk_sectors;
	p->data_disks = g->data_disks;
	p->sig = rf_ppl_signature(first->sb.uuid);
	p->areas = any;
	p->bitmap = first->sb.bitmap;
	atomic_store(&p->off, !any);
	for (i = 0; i < n; i++) {
		struct plog *l = &p->log[i];

		/* (a slot filled later by a spare: flushed, to be safe) */
		if (!(rf_array_present(a) & (1ull << i)) || needs_flush(rf_dev_get(a, i)))
			p->vol_mask |= 1ull << i;
		l->p = p;
		l->m = i;
		STAILQ_INIT(&l->wait);
		STAILQ_INIT(&l->unit);
		l->plug.unplug = unit_close;
		pthread_mutex_init(&l->lock, NULL);
		rf_lock_rank(&l->lock, RF_LOCK_LEAF, "partial parity log lock");
	}
	if (any) {
		/* as recorded (the first logged member's) */
		for (i = 0; i < n && !areas[i].present; i++)
			;
		p->place_off = rf_dev_get(a, i)->sb.ppl_offset;
		p->place_size = rf_dev_get(a, i)->sb.ppl_size;
	} else {
		plan_logs(p);
	}
	rf_ppl_io_sb(&io, &sio);
	if (dirty) {
		r = rf_ppl_recover(&io, g, areas, p->sig, &st);
		if (r) {
			snprintf(err, errlen, "%s: replaying the partial parity log: %s", rf_array_name(a), strerror(-r));
			ppl_close(p);
			return r;
		}
		nlogs = 0;
		for (i = 0; i < n; i++)
			nlogs += areas[i].present;
		if (st.headers < nlogs)
			/* md's ppl_load: a member without a valid header has
			 * nothing to replay, and the rows being written at the
			 * crash stay as the crash left them. */
			rf_warn("%s: not cleanly shut down, and the partial parity log is empty (no valid header) on "
				"%d of %d members: %d entries replayed from the rest; the rows being written at the "
				"crash are not made consistent from it, so a resync is due%s", rf_array_name(a),
				nlogs - st.headers, nlogs, st.entries,
				__builtin_popcountll(rf_array_faulty(a)) ?
				"; degraded, there is no redundancy to resync with: in those rows the missing member "
				"reads as their parity says, which may not be what was written" : "");
		else
			rf_warn("%s: not cleanly shut down: partial parity log replayed: %d entries from %d members%s%s",
				rf_array_name(a), st.entries, st.headers,
				st.mismatches ? "; some headers or entries did not check out: resync needed" : "",
				st.skipped ? "; some entries' data columns are missing" : "");
		if (!st.mismatches) {
			r = rf_sbstate_in_sync(rf_array_sbstate(a));
			if (r) {
				snprintf(err, errlen, "%s: marking the superblocks in sync after the replay: %s",
					 rf_array_name(a), strerror(-r));
				ppl_close(p);
				return r;
			}
		}
	}
	for (i = 0; i < n; i++) {
		struct plog *l = &p->log[i];

		if (!areas[i].present)
			continue;
		log_setup(l, &areas[i]);
		r = posix_memalign((void **)&l->hdr, 4096, RF_PPL_HEADER_SIZE);
		if (r) {
			l->hdr = NULL;
			r = -r;
		} else {
			r = rf_ppl_write_empty(&io, i, &areas[i], p->sig);
		}
		if (r) {
			snprintf(err, errlen, "member %d (%s): writing an empty partial parity log: %s", i,
				 rf_dev_get(a, i)->path, strerror(-r));
			ppl_close(p);
			return r;
		}
	}
	r = rf_array_add_hooks(a, &ppl_hooks, p);
	if (!r)
		r = rf_array_set_log(a, &ppl_log_ops, p);
	if (r) {
		snprintf(err, errlen, "%s: no room for the partial parity log's hooks", rf_array_name(a));
		ppl_close(p);
		return r;
	}
	/* An array that keeps no log offers the log nothing until it is
	 * switched on (md/consistency_policy). */
	rf_array_log_active(a, any);
	return 0;
}

const struct rf_service rf_ppl_service = { .name = "ppl", .open = service_open };
