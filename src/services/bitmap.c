/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bitmap.c - md's internal write-intent bitmap while an array runs: the
 * chunks' counts and bits, the background pass that clears them, the
 * resync and rebuild walks' questions, and md/bitmap/.
 *
 * The bitmap on disk (its header, the bits, where they sit, a new one's
 * size) is md/bitmap_fmt.c's: this file reads it there at open, builds
 * its header there for every write, and asks it whether a resized
 * bitmap fits each member.
 *
 * The running bitmap.  Each chunk has one 32-bit word:
 *   bits 0-23  writes in flight in the chunk
 *   DISK       its bit is set on the members' disks
 *   PEND       a background pass saw it idle (no writes, nothing needed)
 *   NEED       it needs a resync (set at load from a crash's bits, by a
 *              failed write, by any write while degraded)
 * A writer adds one to each of its chunks' words (acquire) and is done
 * when DISK was set: no lock on the common path.  Otherwise it takes
 * bm->lock, sets the bits in the image, writes and fsyncs the changed
 * sectors on every in-sync member, then sets DISK (release, pairing with
 * the writers' acquire).  The background pass (every daemon_sleep,
 * under bm->lock) turns an idle DISK word into DISK|PEND, and a word
 * still exactly DISK|PEND a pass later into 0 with a compare-and-swap
 * (the members are flushed before the cleared bits are written, so the
 * data those bits covered is on disk first):
 * a writer that came in between changed the word, so the swap fails; a
 * writer that comes after it finds DISK clear and waits on bm->lock until
 * the cleared bits are written before it sets its bit again.  Nothing is
 * cleared while the array is degraded, nor while md/bitmap/can_clear was
 * set to false (hold).
 *
 * Which devices: every device in a slot that is not faulty carries a copy
 * (md writes to every active rdev, one being rebuilt included).  Where it
 * sits on each is that device's own field of the array's device table
 * (core/dev.h: bm_has, bm_at, bm_fresh), taken from its superblock by
 * the dev_changed hook whenever the table changes; a device new in a
 * slot gets the whole bitmap at the next bitmap write, which the
 * superblock update that puts it there makes at once.  "Degraded", for
 * keeping bits, is md's: a member missing, failed, or being rebuilt.
 * The array's IO path reaches this module only through its hooks
 * (core/hooks.h), registered by rf_bitmap_open().
 *
 * Lock order (engine.h): the device lock, then sbstate's s->lock, then
 * bm->lock (the superblock keeper calls rf_bitmap_set_events() holding
 * the first two; every other bitmap write takes the device lock first:
 * it walks the device table); its background thread's lock (bgthread.h) alone.
 *
 * Which chunks a write touches is the level's answer (md's bitmap_sector:
 * rf_bitmap_range() asks it through core/level.c, for each geometry of a
 * reshape), clipped here to the bits.
 *
 * What it does NOT do: choose what to resync or rebuild (sync_walk.c asks it,
 * and the engine's recovery can), map a write to rows by level (the level
 * does), write-behind, clustered bitmaps (md/bitmap_fmt.c refuses version
 * 5), or parse and lay out the bitmap on disk (md/bitmap_fmt.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "raidfuse/bgthread.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/util.h"
#include "raidfuse/iolog.h"
#include "raidfuse/lockcheck.h"
#include "raidfuse/log.h"
#include "services/sbstate.h"

#define CNT_MASK        0x00ffffffu
#define F_DISK          (1u << 24)
#define F_PEND          (1u << 25)
#define F_NEED          (1u << 26)

struct rf_bitmap {
	struct rf_array *a;
	uint32_t shift;                 /* chunk = 1 << shift sectors */
	uint64_t sync_size, nchunks;
	uint32_t area;                  /* bytes written at most: header + bits, whole sectors */
	uint64_t space;                 /* bytes the bitmap may take on a resize (md's
					 * bitmap_info.space): 1.1/1.2 record none, so md keeps
					 * to the area it had when loaded; 1.0 up to its
					 * superblock; 0.90 its reserved area */
	_Atomic uint32_t *ctr;          /* [nchunks] */
	struct rf_sbstate *s;
	pthread_mutex_t lock;           /* the image, the header, bitmap writes; the last of
					 * device lock -> s->lock -> bm->lock (engine.h) */
	uint8_t *img;                   /* lock: header + bits as on disk */
	struct rf_bitmap_sb sb;         /* lock */
	/* the resync walk's (sync thread only) */
	uint64_t run_lo, run_hi, walk_pos;
	atomic_uint_fast64_t covered, skipped, nr_set, nr_clear;
	/* the background pass, every daemon_sleep (md's bitmap daemon) */
	struct rf_bgthread daemon;
	int32_t location;               /* sectors from the superblock (md/bitmap/location) */
	atomic_bool hold;               /* md/bitmap/can_clear false: no bit is cleared */
};

/* md's "degraded": a member missing or failed, or one being rebuilt. */
static bool degraded(const struct rf_bitmap *bm)
{
	return rf_array_faulty_read(bm->a) != 0;
}

static void img_bit(struct rf_bitmap *bm, uint64_t c, bool set)
{
	uint8_t *p = bm->img + RF_BITMAP_SB_BYTES + c / 8;

	if (set)
		*p |= (uint8_t)(1u << (c % 8));
	else
		*p &= (uint8_t)~(1u << (c % 8));
}

static bool img_test(const uint8_t *bits, uint64_t c)
{
	return bits[RF_BITMAP_SB_BYTES + c / 8] & (1u << (c % 8));
}

static void write_dev(struct rf_bitmap *bm, int i, uint64_t lo, uint64_t hi, bool sync);

/* The device lock and bm->lock held: write bytes [lo, hi) of the image
 * (widened to whole sectors) to every in-sync member; a member that fails
 * it is failed.  0, or -EIO when the array failed. */
static int bm_write(struct rf_bitmap *bm, uint64_t lo, uint64_t hi, bool sync)
{
	struct rf_array *a = bm->a;
	int i;

	lo &= ~(uint64_t)511;
	hi = rf_round_up(hi, 512);
	if (hi > bm->area)
		hi = bm->area;
	for (i = 0; i < rf_array_nslots(a) && lo < hi; i++) {
		struct rf_dev *d = rf_dev_get(a, i);

		if (!d->bm_has || (rf_array_faulty(a) & (1ull << i)))
			continue;
		if (d->bm_fresh) {
			/* md writes its bitmap to every device in a slot:
			 * a new one gets all of it. */
			write_dev(bm, i, 0, bm->area, true);
			d->bm_fresh = false;
		} else {
			write_dev(bm, i, lo, hi, sync);
		}
	}
	return rf_array_failed(a) ? -EIO : 0;
}

/* bm->lock held: bytes [lo, hi) of the image to slot device i; a failure
 * fails it (rf_member_fail() names it). */
static void write_dev(struct rf_bitmap *bm, int i, uint64_t lo, uint64_t hi, bool sync)
{
	struct rf_dev *m = rf_dev_get(bm->a, i);
	int r = m->sb_io.pwrite(m->sb_io.ctx, bm->img + lo, hi - lo, m->bm_at + lo);

	if (!r && sync)
		r = m->sb_io.fsync(m->sb_io.ctx);
	if (r) {
		rf_err("%s: slot %d: bitmap write at byte %llu: %s", rf_array_name(bm->a), i,
		       (unsigned long long)(m->bm_at + lo), strerror(-r));
		rf_dev_fail(bm->a, i, r, "bitmap write", m->bm_at + lo);
	}
}

/* Device dev's place of the bitmap, from its superblock (device lock
 * and bm->lock held). */
static void snap_dev(struct rf_bitmap *bm, int dev)
{
	struct rf_dev *d = rf_dev_get(bm->a, dev);

	d->bm_has = d->sb_has && d->sb.bitmap;
	d->bm_at = d->bm_has ? rf_bitmap_offset_bytes(&d->sb) : 0;
}

/* The background thread's run, every daemon_sleep. */
static void daemon_run(void *arg)
{
	rf_bitmap_daemon_pass(arg);
}

/* The dev_changed hook: see bitmap.h. */
static void hook_dev_changed(void *priv, int dev)
{
	struct rf_bitmap *bm = priv;

	if (!bm || dev < 0 || dev >= RF_MAX_DEVS)
		return;
	pthread_mutex_lock(&bm->lock);
	snap_dev(bm, dev);
	/* The slot's faulty bit may still be the old device's: the next
	 * bitmap write (the superblocks' events follow at once) gives the
	 * new one everything. */
	rf_dev_get(bm->a, dev)->bm_fresh = dev < rf_array_nslots(bm->a) && rf_dev_get(bm->a, dev)->bm_has;
	pthread_mutex_unlock(&bm->lock);
}

static void bm_free(struct rf_bitmap *bm)
{
	if (!bm)
		return;
	rf_bg_destroy(&bm->daemon);
	pthread_mutex_destroy(&bm->lock);
	free(bm->ctr);
	free(bm->img);
	free(bm);
}

static void put_header(struct rf_bitmap *bm)
{
	rf_bitmap_sb_build(&bm->sb, bm->img);
}

static const struct rf_hooks bitmap_hooks;
static void hook_dev_changed(void *priv, int dev);

int rf_bitmap_open(struct rf_array *a, struct rf_sbstate *s, struct rf_bitmap **out, char *err, size_t errlen)
{
	struct rf_bitmap *bm;
	struct rf_bitmap_sb bsb;
	struct rf_bitmap_status st;
	struct rf_dev *fm = NULL;
	uint8_t *bits = NULL;
	uint64_t c, start, have_bits, disk_bytes;
	bool stale, rewrite = false;
	int i, r;

	*out = NULL;
	if (!s)
		return 0;
	/* md reads it from an in-sync member: the freshest one. */
	for (i = 0; i < rf_array_nslots(a); i++) {
		struct rf_dev *d = rf_dev_get(a, i);

		if (d->sb_has && !(rf_array_faulty(a) & (1ull << i)) && (!fm || d->sb.events > fm->sb.events))
			fm = d;
	}
	if (!fm || !fm->sb.bitmap)
		return 0;
	r = rf_bitmap_read(&fm->sb_io, fm->path, &fm->sb, &bsb, &bits, err, errlen);
	if (r)
		return r;
	bm = calloc(1, sizeof(*bm));
	if (!bm)
		goto nomem;
	bm->a = a;
	/* 0.90 keeps its bitmap 4 KiB after the superblock, recording no offset. */
	bm->location = fm->sb.kind == RF_SB_090 ? 8 : fm->sb.bitmap_offset;
	pthread_mutex_init(&bm->lock, NULL);
	rf_lock_rank(&bm->lock, RF_LOCK_BITMAP, "bitmap lock");
	r = rf_bg_init(&bm->daemon, "rf-bitmap", 0, daemon_run, bm);
	if (r) {
		pthread_mutex_destroy(&bm->lock);
		free(bm);
		snprintf(err, errlen, "%s: bitmap: its background thread: %s", rf_array_name(a), strerror(-r));
		return r;
	}
	bm->sync_size = rf_bitmap_sync_size(rf_array_geom(a));
	if (!bm->sync_size) {
		r = rf_bitmap_bad(err, errlen, fm->path, "raid%d has nothing to resync: md keeps no bitmap for it",
				  rf_array_geom(a)->level);
		goto fail;
	}
	if (bsb.sync_size > bm->sync_size && rf_array_reshape_state(a)->active && rf_array_geom(a)->level == 10) {
		/* A raid10 reshape under way serves the smaller of its two
		 * geometries; its bitmap covers the new one whole, as md
		 * resized it when the reshape began (raid10_start_reshape;
		 * services/reshape.c does the same). */
		struct rf_geom full = *rf_array_geom(a);
		char why[128];

		if (!rf_geom_init(&full, why, sizeof(why)) && bsb.sync_size == rf_bitmap_sync_size(&full))
			bm->sync_size = bsb.sync_size;
	}
	if (bsb.sync_size != bm->sync_size) {
		/* md too takes its own size and records it. */
		rf_warn("%s: bitmap: sync_size %llu sectors, the array resyncs %llu: using the array's",
			fm->path, (unsigned long long)bsb.sync_size, (unsigned long long)bm->sync_size);
		rewrite = true;
	}
	bm->shift = (uint32_t)__builtin_ctz(bsb.chunk_bytes / 512);
	bm->nchunks = rf_bitmap_bits(bm->sync_size, bsb.chunk_bytes);
	bm->area = (uint32_t)rf_round_up(rf_bitmap_bytes(bm->sync_size, bsb.chunk_bytes), 512);
	/* md's super_1_validate: "metadata doesn't record how much space is
	 * available"; md_bitmap_resize then takes the present size. */
	if (fm->sb.kind == RF_SB_10 && bm->location < 0)
		bm->space = (uint64_t)-bm->location * 512;
	else if (fm->sb.kind == RF_SB_10)
		bm->space = (uint64_t)(bm->location < 8 ? 8 - bm->location : 0) * 512;
	else if (fm->sb.kind == RF_SB_090)
		bm->space = UINT64_MAX;         /* its reserved area: rf_bitmap_check_place() */
	else
		bm->space = bm->area;
	if (bm->space < bm->area)
		bm->space = bm->area;
	for (i = 0; i < rf_array_nslots(a); i++) {
		const struct rf_dev *d = rf_dev_get(a, i);

		if (!d->sb_has)
			continue;
		r = rf_bitmap_check_place(&d->sb, d->path, bm->area, err, errlen);
		if (r)
			goto fail;
	}
	bm->ctr = calloc(bm->nchunks, sizeof(*bm->ctr));
	bm->img = calloc(1, (size_t)rf_bitmap_disk_sectors(bm->sync_size, bsb.chunk_bytes) * 512);
	if (!bm->ctr || !bm->img)
		goto nomem;
	bm->s = s;
	for (i = 0; i < rf_devs_count(a); i++)
		snap_dev(bm, i);
	disk_bytes = rf_bitmap_bytes(bsb.sync_size, bsb.chunk_bytes);
	memcpy(bm->img, bits, disk_bytes < bm->area ? disk_bytes : bm->area);
	have_bits = (disk_bytes - RF_BITMAP_SB_BYTES) * 8;      /* what was read */
	bm->sb = bsb;
	bm->sb.sync_size = bm->sync_size;
	if (bm->sb.events_cleared > bm->sb.events)
		bm->sb.events_cleared = bm->sb.events;  /* as md: never past events */

	/* md_bitmap_read_sb(): older than the superblocks, or marked so,
	 * and the bits mean nothing: all of them count as set. */
	stale = bsb.events < s->events || (bsb.state & RF_BITMAP_STALE);
	if (stale) {
		rf_warn("%s: bitmap is out of date (events %llu, superblocks %llu%s): every chunk counts as written",
			fm->path, (unsigned long long)bsb.events, (unsigned long long)s->events,
			bsb.state & RF_BITMAP_STALE ? ", marked stale" : "");
		bm->sb.state &= ~RF_BITMAP_STALE;
		bm->sb.events = s->events;
		bm->sb.events_cleared = s->events;
		rewrite = true;
	}
	/* md_bitmap_load(): set bits need a resync from where one is due;
	 * while degraded all of them, unless they were cleared with every
	 * member present at this very events count. */
	start = !degraded(bm) || bm->sb.events_cleared == s->events ? s->resync_offset : 0;
	for (c = 0; c < bm->nchunks; c++) {
		bool set = stale || (c < have_bits && img_test(bits, c));
		uint64_t end = (c + 1) << bm->shift;

		img_bit(bm, c, set);
		if (set)
			atomic_init(&bm->ctr[c], F_DISK | (end >= start ? F_NEED : 0));
	}
	put_header(bm);
	atomic_store(&bm->daemon.period_ms, bm->sb.daemon_sleep * 1000u);
	if (rewrite && bm_write(bm, 0, bm->area, true)) {
		snprintf(err, errlen, "%s: bitmap: the array failed while rewriting it", rf_array_name(a));
		r = -EIO;
		goto fail;
	}
	free(bits);
	r = rf_array_add_hooks(a, &bitmap_hooks, bm);
	if (r) {
		snprintf(err, errlen, "%s: no room for the bitmap's hooks", rf_array_name(a));
		goto fail;
	}
	rf_bitmap_get(bm, &st);
	rf_info("%s: internal bitmap: %llu chunks of %u KiB, %llu set, %llu need a resync", rf_array_name(a),
		(unsigned long long)st.chunks, st.chunk_bytes >> 10, (unsigned long long)st.dirty,
		(unsigned long long)st.needed);
	*out = bm;
	return 0;
nomem:
	snprintf(err, errlen, "%s: out of memory for the bitmap", rf_array_name(a));
	r = -ENOMEM;
fail:
	bm_free(bm);
	free(bits);
	return r;
}

/* The level says which rows (core/level.c); the bits stop at sync_size. */
void rf_bitmap_range(const struct rf_geom *g, uint64_t off, uint64_t len, uint64_t *lo, uint64_t *hi)
{
	uint64_t total;

	*lo = *hi = 0;
	if (!len || !rf_level_bitmap_range(g, off, len, lo, hi))
		return;
	total = rf_bitmap_sync_size(g);
	if (*hi > total)
		*hi = total;
	if (*lo > *hi)
		*lo = *hi;
}

/* The chunks a write touches; false when none.  While a reshape is under
 * way the write lands in whichever geometry its rows are in when it is
 * split (the position moves only with writes drained); the bits cover the
 * rows of both, as md's raid5_bitmap_sector() marks a write ahead of the
 * reshape in the previous geometry and the new. */
static bool chunks_of(const struct rf_bitmap *bm, uint64_t off, uint64_t len, uint64_t *c0, uint64_t *c1)
{
	const struct rf_reshape *rs = rf_array_reshape_state(bm->a);
	uint64_t lo, hi, plo, phi;

	rf_bitmap_range(rf_array_geom(bm->a), off, len, &lo, &hi);
	/* RAIDFUSE_TEST_BREAK=bitmap-reshape: the new geometry's rows only. */
	if (rs->active && !rf_test_break("bitmap-reshape")) {
		rf_bitmap_range(&rs->prev, off, len, &plo, &phi);
		if (plo < phi) {
			lo = lo < hi && lo < plo ? lo : plo;
			hi = hi > phi ? hi : phi;
		}
	}
	if (lo >= hi)
		return false;
	*c0 = lo >> bm->shift;
	*c1 = (hi - 1) >> bm->shift;
	if (*c1 >= bm->nchunks)
		*c1 = bm->nchunks - 1;
	return *c0 <= *c1;
}

/* Set the on-disk bits of chunks c0..c1 that are not yet. */
static int set_bits(struct rf_bitmap *bm, uint64_t c0, uint64_t c1)
{
	uint64_t c, lo = UINT64_MAX, hi = 0;
	int r = 0;

	rf_devs_lock(bm->a);
	pthread_mutex_lock(&bm->lock);
	for (c = c0; c <= c1; c++) {
		if (atomic_load_explicit(&bm->ctr[c], memory_order_acquire) & F_DISK)
			continue;
		img_bit(bm, c, true);
		if (lo == UINT64_MAX)
			lo = RF_BITMAP_SB_BYTES + c / 8;
		hi = RF_BITMAP_SB_BYTES + c / 8 + 1;
	}
	if (hi) {
		r = bm_write(bm, lo, hi, true);
		atomic_fetch_add(&bm->nr_set, 1);
	}
	if (!r)
		for (c = c0; c <= c1; c++)
			/* Pairs with the writers' acquire in
			 * the write_start hook: who sees DISK sees the
			 * bit on disk. */
			atomic_fetch_or_explicit(&bm->ctr[c], F_DISK, memory_order_release);
	pthread_mutex_unlock(&bm->lock);
	rf_devs_unlock(bm->a);
	return r;
}

/* The write_start hook: see bitmap.h. */
static int hook_write_start(void *priv, uint64_t off, uint64_t len)
{
	struct rf_bitmap *bm = priv;
	uint64_t c, c0, c1;
	bool slow = false;

	if (!bm || !chunks_of(bm, off, len, &c0, &c1))
		return 0;
	for (c = c0; c <= c1; c++) {
		uint32_t old = atomic_fetch_add_explicit(&bm->ctr[c], 1, memory_order_acquire);

		/* A write came: the chunk is not idle any more. */
		if (old & F_PEND)
			atomic_fetch_and(&bm->ctr[c], ~F_PEND);
		if (!(old & F_DISK))
			slow = true;
	}
	return slow && set_bits(bm, c0, c1) ? -EIO : 0;
}

/* The write_end hook. */
static void hook_write_end(void *priv, uint64_t off, uint64_t len, int err)
{
	struct rf_bitmap *bm = priv;
	uint64_t c, c0, c1;
	bool need;

	if (!bm || !chunks_of(bm, off, len, &c0, &c1))
		return;
	/* md_bitmap_endwrite(): what failed, or went to a degraded array,
	 * is not the same on every member. */
	need = err || degraded(bm);
	for (c = c0; c <= c1; c++) {
		if (need)
			atomic_fetch_or(&bm->ctr[c], F_NEED);
		atomic_fetch_sub_explicit(&bm->ctr[c], 1, memory_order_release);
	}
}

void rf_bitmap_set_events(struct rf_bitmap *bm, uint64_t events)
{
	if (!bm)
		return;
	pthread_mutex_lock(&bm->lock);
	bm->sb.events = events;
	if (bm->sb.events_cleared > events)
		bm->sb.events_cleared = events;
	put_header(bm);
	bm_write(bm, 0, RF_BITMAP_SB_BYTES, false);
	pthread_mutex_unlock(&bm->lock);
}

int rf_bitmap_daemon_pass(struct rf_bitmap *bm)
{
	uint64_t c, lo = UINT64_MAX, hi = 0;
	int cleared = 0;

	if (!bm)
		return 0;
	rf_devs_lock(bm->a);
	pthread_mutex_lock(&bm->lock);
	/* md keeps every bit while degraded: a member added back needs only
	 * the chunks written meanwhile; and while can_clear says false. */
	if (degraded(bm) || atomic_load(&bm->hold)) {
		pthread_mutex_unlock(&bm->lock);
		rf_devs_unlock(bm->a);
		return 0;
	}
	for (c = 0; c < bm->nchunks; c++) {
		uint32_t v = atomic_load_explicit(&bm->ctr[c], memory_order_acquire);

		if (!(v & F_DISK) || (v & (CNT_MASK | F_NEED)))
			continue;
		if (!(v & F_PEND)) {
			atomic_compare_exchange_strong(&bm->ctr[c], &v, v | F_PEND);
			continue;
		}
		if (!atomic_compare_exchange_strong(&bm->ctr[c], &v, 0))
			continue;
		img_bit(bm, c, false);
		if (lo == UINT64_MAX)
			lo = RF_BITMAP_SB_BYTES + c / 8;
		hi = RF_BITMAP_SB_BYTES + c / 8 + 1;
		cleared++;
	}
	if (cleared) {
		/* The data of the chunks about to be cleared goes to every
		 * disk before any bit says it need not be resynced (md writes
		 * its bitmap pages with a preflush): else a power cut could
		 * keep one member's cleared bit and lose another member's last
		 * data write, and the resync would skip a stripe whose parity
		 * no longer matches. */
		if (!rf_test_break("bitmap"))
			rf_devs_flush(bm->a, true, "before clearing bitmap bits");
		bm->sb.events_cleared = bm->sb.events;
		put_header(bm);
		bm_write(bm, 0, hi, true);
		atomic_fetch_add(&bm->nr_clear, 1);
	}
	pthread_mutex_unlock(&bm->lock);
	rf_devs_unlock(bm->a);
	if (cleared)
		rf_dbg("%s: bitmap: cleared %d idle chunks", rf_array_name(bm->a), cleared);
	return cleared;
}

/* Whether a bitmap of `bytes` fits every slot device's room (the
 * superblocks' used size about to be dev_sectors). */
static int fits_everywhere(struct rf_bitmap *bm, uint64_t bytes, uint64_t dev_sectors, char *err, size_t errlen)
{
	int i, r = 0;

	for (i = 0; i < rf_array_nslots(bm->a) && !r; i++) {
		const struct rf_dev *d = rf_dev_get(bm->a, i);
		struct rf_sb sb;

		if (!d->sb_has || !d->bm_has || (rf_array_faulty(bm->a) & (1ull << i)))
			continue;
		sb = d->sb;
		sb.size = dev_sectors;
		r = rf_bitmap_check_place(&sb, d->path, bytes, err, errlen);
	}
	return r;
}

int rf_bitmap_resize(struct rf_bitmap *bm, const struct rf_geom *g, bool grown_need, char *err, size_t errlen)
{
	uint64_t sync, n, c, from, grow_from;
	uint32_t shift, area, chunk;
	_Atomic uint32_t *ctr = NULL, *old_ctr;
	uint8_t *img = NULL, *old_img;
	char why[512] = "";
	int r;

	if (!bm)
		return 0;
	sync = rf_bitmap_sync_size(g);
	if (sync == bm->sync_size)
		return 0;
	rf_devs_lock(bm->a);
	pthread_mutex_lock(&bm->lock);
	/* md_bitmap_resize(): the chunk it has, doubled until the bits fit
	 * the room the bitmap has on every member. */
	for (shift = bm->shift;; shift++) {
		chunk = 512u << shift;
		if (shift > 30) {
			snprintf(err, errlen, "the bitmap's room holds no chunk size for %llu sectors: %s",
				 (unsigned long long)sync, why);
			r = -ENOSPC;
			goto out;
		}
		if (rf_bitmap_bytes(sync, chunk) > bm->space) {
			snprintf(why, sizeof(why), "%llu bytes, %llu kept for it", (unsigned long long)
				 rf_bitmap_bytes(sync, chunk), (unsigned long long)bm->space);
			continue;
		}
		if (!fits_everywhere(bm, rf_bitmap_bytes(sync, chunk), g->dev_sectors, why, sizeof(why)))
			break;
	}
	n = rf_bitmap_bits(sync, chunk);
	area = (uint32_t)rf_round_up(rf_bitmap_bytes(sync, chunk), 512);
	ctr = calloc(n, sizeof(*ctr));
	img = calloc(1, (size_t)rf_bitmap_disk_sectors(sync, chunk) * 512);
	if (!ctr || !img) {
		snprintf(err, errlen, "out of memory for a bitmap of %llu chunks", (unsigned long long)n);
		r = -ENOMEM;
		goto out;
	}
	/* Nothing in flight (drained): each word holds flags only, and the
	 * chunks a new one covers give it all of theirs. */
	for (c = 0; c < bm->nchunks; c++) {
		uint32_t v = atomic_load(&bm->ctr[c]) & (F_DISK | F_PEND | F_NEED);
		uint64_t nc = c >> (shift - bm->shift);

		if (nc < n && v)
			atomic_store(&ctr[nc], atomic_load(&ctr[nc]) | v);
	}
	/* The rows a grow adds need a resync, as md marks the new space
	 * NEEDED (the chunk the old end falls in included), unless the
	 * caller writes them all (a reshape's walk). */
	grow_from = sync > bm->sync_size && grown_need ? bm->sync_size >> shift : n;
	for (c = grow_from; c < n; c++)
		atomic_store(&ctr[c], F_DISK | F_NEED);
	memcpy(img, bm->img, RF_BITMAP_SB_BYTES);
	old_ctr = bm->ctr;
	old_img = bm->img;
	from = bm->sync_size;
	bm->ctr = ctr;
	bm->img = img;
	bm->nchunks = n;
	bm->shift = shift;
	bm->sync_size = sync;
	bm->area = area;
	for (c = 0; c < n; c++)
		img_bit(bm, c, atomic_load(&ctr[c]) & F_DISK);
	bm->sb.sync_size = sync;
	bm->sb.chunk_bytes = chunk;
	put_header(bm);
	ctr = NULL;
	img = NULL;
	free(old_ctr);
	free(old_img);
	r = bm_write(bm, 0, bm->area, true);
	if (r)
		snprintf(err, errlen, "the array failed while the bitmap was written");
	else
		rf_info("%s: bitmap: %llu -> %llu sectors, %llu chunks of %u KiB", rf_array_name(bm->a),
			(unsigned long long)from, (unsigned long long)sync, (unsigned long long)n, chunk >> 10);
out:
	pthread_mutex_unlock(&bm->lock);
	rf_devs_unlock(bm->a);
	free(ctr);
	free(img);
	return r;
}

int rf_bitmap_start(struct rf_bitmap *bm)
{
	return bm ? rf_bg_start(&bm->daemon) : 0;
}

void rf_bitmap_stop(struct rf_bitmap *bm)
{
	if (bm)
		rf_bg_stop(&bm->daemon);
}

void rf_bitmap_set_period_ms(struct rf_bitmap *bm, unsigned ms)
{
	if (bm)
		rf_bg_set_period(&bm->daemon, ms ? ms : 1);
}

void rf_bitmap_close(struct rf_bitmap *bm)
{
	if (!bm)
		return;
	rf_bitmap_stop(bm);
	/* md_bitmap_flush(): passes enough to clear every idle bit. */
	if (!rf_array_failed(bm->a)) {
		rf_bitmap_daemon_pass(bm);
		rf_bitmap_daemon_pass(bm);
	}
	bm_free(bm);
}

/* ---- resync and recovery ---- */

static uint64_t chunk_end(const struct rf_bitmap *bm, uint64_t c)
{
	uint64_t e = (c + 1) << bm->shift;

	return e < bm->sync_size ? e : bm->sync_size;
}

static void walk_summary(struct rf_bitmap *bm)
{
	rf_info("%s: bitmap: resync went over %llu of %llu sectors (%llu skipped as clean)", rf_array_name(bm->a),
		(unsigned long long)atomic_load(&bm->covered), (unsigned long long)bm->sync_size,
		(unsigned long long)atomic_load(&bm->skipped));
}

/* A call that goes back starts a new walk: count afresh. */
static void walk_at(struct rf_bitmap *bm, uint64_t pos)
{
	if (pos < bm->walk_pos || (pos == 0 && bm->walk_pos == 0)) {
		atomic_store(&bm->covered, 0);
		atomic_store(&bm->skipped, 0);
		bm->run_lo = bm->run_hi = UINT64_MAX;
	}
	bm->walk_pos = pos;
}

/* Where a walk at pos goes on: the first chunk at or after pos with a bit
 * of mask, or total; *n cut to the end of that run. */
static uint64_t skip_to(struct rf_bitmap *bm, uint64_t pos, uint64_t total, uint64_t *n, uint32_t mask)
{
	uint64_t c, e, to;

	for (c = pos >> bm->shift; c < bm->nchunks; c++)
		if (atomic_load(&bm->ctr[c]) & mask)
			break;
	to = c >= bm->nchunks ? total : c << bm->shift > pos ? c << bm->shift : pos;
	if (to >= total)
		return total;
	for (e = c + 1; e < bm->nchunks; e++)
		if (!(atomic_load(&bm->ctr[e]) & mask))
			break;
	if (*n > chunk_end(bm, e - 1) - to)
		*n = chunk_end(bm, e - 1) - to;
	return to;
}

uint64_t rf_bitmap_resync_skip(struct rf_bitmap *bm, uint64_t pos, uint64_t total, uint64_t *n)
{
	uint64_t to;

	if (!bm)
		return pos;
	walk_at(bm, pos);
	to = skip_to(bm, pos, total, n, F_NEED);
	atomic_fetch_add(&bm->skipped, to - pos);
	bm->walk_pos = to;
	if (to >= total && pos < total)
		walk_summary(bm);
	return to;
}

uint64_t rf_bitmap_dirty_skip(struct rf_bitmap *bm, uint64_t pos, uint64_t total, uint64_t *n)
{
	return bm ? skip_to(bm, pos, total, n, F_DISK | F_NEED) : pos;
}

void rf_bitmap_range_synced(struct rf_bitmap *bm, uint64_t lo, uint64_t hi)
{
	uint64_t c;

	/* A device being rebuilt does not count: what was rebuilt is on it. */
	if (!bm || rf_array_faulty(bm->a))
		return;
	/* Whole chunks only: the first at or after lo, up to the last
	 * that ends by hi. */
	for (c = (lo + ((1ull << bm->shift) - 1)) >> bm->shift; c < bm->nchunks && chunk_end(bm, c) <= hi; c++)
		atomic_fetch_and(&bm->ctr[c], ~F_NEED);
}

/* The walk did [lo, hi): extend its run (or start one after a jump) and
 * mark the whole chunks in it synced. */
static void run_synced(struct rf_bitmap *bm, uint64_t lo, uint64_t hi)
{
	if (lo != bm->run_hi)
		bm->run_lo = lo;
	bm->run_hi = hi;
	bm->walk_pos = hi;
	rf_bitmap_range_synced(bm, bm->run_lo, hi);
}

void rf_bitmap_resync_done(struct rf_bitmap *bm, uint64_t lo, uint64_t hi)
{
	if (!bm)
		return;
	walk_at(bm, lo);
	atomic_fetch_add(&bm->covered, hi - lo);
	run_synced(bm, lo, hi);
	if (hi >= bm->sync_size)
		walk_summary(bm);
}

void rf_bitmap_rebuilt(struct rf_bitmap *bm, uint64_t lo, uint64_t hi)
{
	if (!bm)
		return;
	if (lo < bm->walk_pos)
		bm->run_lo = bm->run_hi = UINT64_MAX;   /* a new walk */
	run_synced(bm, lo, hi);
}

int rf_bitmap_next_dirty(struct rf_bitmap *bm, uint64_t from, uint64_t *lo, uint64_t *hi)
{
	uint64_t c, e;

	if (!bm)
		return -ENOENT;
	for (c = from >> bm->shift; c < bm->nchunks; c++)
		if (atomic_load(&bm->ctr[c]) & (F_DISK | F_NEED))
			break;
	if (c >= bm->nchunks)
		return -ENOENT;
	for (e = c + 1; e < bm->nchunks; e++)
		if (!(atomic_load(&bm->ctr[e]) & (F_DISK | F_NEED)))
			break;
	*lo = c << bm->shift > from ? c << bm->shift : from;
	*hi = chunk_end(bm, e - 1);
	return 0;
}

/* The info hook: what md's mdstat line says of the bitmap. */
static void hook_info(void *priv, struct rf_array_info *out)
{
	struct rf_bitmap *bm = priv;
	uint64_t c;

	out->bitmap_chunk = bm->sb.chunk_bytes;         /* fixed once loaded */
	out->bitmap_pages = (bm->nchunks + 2047) / 2048;
	for (c = 0; c < bm->nchunks; c++)
		if (atomic_load_explicit(&bm->ctr[c], memory_order_relaxed) & (F_DISK | F_NEED)) {
			out->bitmap_pages_used++;
			c |= 2047;      /* on to the next page */
		}
}

/* ---- md/bitmap/ (md-bitmap.c's sysfs attributes) ---- */

int rf_bitmap_ctl_get(struct rf_array *a, struct rf_bitmap_ctl *out)
{
	struct rf_bitmap *bm = rf_array_bitmap(a);

	memset(out, 0, sizeof(*out));
	out->time_base_ms = RF_BITMAP_DAEMON_SLEEP * 1000u;
	if (!bm)
		return -ENOENT;
	pthread_mutex_lock(&bm->lock);
	out->chunk_bytes = bm->sb.chunk_bytes;
	out->backlog = bm->sb.write_behind;
	pthread_mutex_unlock(&bm->lock);
	out->location = bm->location;
	out->time_base_ms = atomic_load(&bm->daemon.period_ms);
	out->can_clear = !degraded(bm) && !atomic_load(&bm->hold);
	return 0;
}

int rf_bitmap_ctl_time_base(struct rf_array *a, unsigned ms)
{
	struct rf_bitmap *bm = rf_array_bitmap(a);

	if (!bm)
		return -ENOENT;
	if (!ms)
		ms = 1;                 /* md: at least one tick */
	rf_bitmap_set_period_ms(bm, ms);
	/* The header keeps whole seconds, at least 1 (what md's own load
	 * accepts); it reaches the disk with the next header write, as md's
	 * daemon_sleep does. */
	pthread_mutex_lock(&bm->lock);
	bm->sb.daemon_sleep = ms < 1000 ? 1 : ms / 1000;
	pthread_mutex_unlock(&bm->lock);
	return 0;
}

int rf_bitmap_ctl_backlog(struct rf_array *a, unsigned backlog)
{
	struct rf_bitmap *bm = rf_array_bitmap(a);
	bool wm = false;
	int i, r = 0;

	if (!bm)
		return -ENOENT;
	if (backlog > RF_BITMAP_COUNTER_MAX)
		return -EINVAL;
	rf_devs_lock(a);
	for (i = 0; i < rf_devs_count(a) && !wm; i++)
		wm = (rf_dev_get(a, i)->flags & RF_DEV_WRITE_MOSTLY) != 0;
	if (!wm) {
		rf_devs_unlock(a);
		return -EINVAL;         /* md: no write-mostly device, nothing to write behind */
	}
	pthread_mutex_lock(&bm->lock);
	if (bm->sb.write_behind != backlog) {
		/* md_bitmap_update_sb(): recorded at once */
		bm->sb.write_behind = backlog;
		put_header(bm);
		r = bm_write(bm, 0, RF_BITMAP_SB_BYTES, true);
	}
	pthread_mutex_unlock(&bm->lock);
	rf_devs_unlock(a);
	return r;
}

int rf_bitmap_ctl_can_clear(struct rf_array *a, bool can)
{
	struct rf_bitmap *bm = rf_array_bitmap(a);

	if (!bm)
		return -ENOENT;
	if (can && degraded(bm))
		return -EBUSY;
	atomic_store(&bm->hold, !can);
	return 0;
}

void rf_bitmap_get(struct rf_bitmap *bm, struct rf_bitmap_status *st)
{
	uint64_t c;

	memset(st, 0, sizeof(*st));
	if (!bm)
		return;
	pthread_mutex_lock(&bm->lock);
	st->chunk_bytes = bm->sb.chunk_bytes;
	st->events = bm->sb.events;
	st->events_cleared = bm->sb.events_cleared;
	pthread_mutex_unlock(&bm->lock);
	st->chunks = bm->nchunks;
	st->sync_size = bm->sync_size;
	for (c = 0; c < bm->nchunks; c++) {
		uint32_t v = atomic_load(&bm->ctr[c]);

		st->dirty += !!(v & F_DISK);
		st->needed += !!(v & F_NEED);
	}
	st->resync_covered = atomic_load(&bm->covered);
	st->resync_skipped = atomic_load(&bm->skipped);
	st->nr_set_writes = atomic_load(&bm->nr_set);
	st->nr_clear_writes = atomic_load(&bm->nr_clear);
}

/* ---- hooks (core/hooks.h): what the array calls ---- */

static int hook_start(void *priv)
{
	return rf_bitmap_start(priv);
}

static void hook_stop(void *priv)
{
	rf_bitmap_stop(priv);
}

static void hook_close(void *priv)
{
	rf_bitmap_close(priv);
}

static const struct rf_hooks bitmap_hooks = {
	.name = "bitmap",
	.write_start = hook_write_start,
	.write_end = hook_write_end,
	.dev_changed = hook_dev_changed,
	.info = hook_info,
	.start = hook_start,
	.stop = hook_stop,
	.close = hook_close,
};

/* An internal bitmap, where the superblock state found one. */
static int service_open(struct rf_array *a, const struct rf_config *cfg, char *err, size_t errlen)
{
	struct rf_bitmap *bm;
	int r;

	(void)cfg;
	r = rf_bitmap_open(a, rf_array_sbstate(a), &bm, err, errlen);
	if (!r)
		rf_array_set_bitmap(a, bm);
	return r;
}

const struct rf_service rf_bitmap_service = { .name = "bitmap", .open = service_open };
