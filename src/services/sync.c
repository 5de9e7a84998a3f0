/* sync.c - the sync thread: md's resync, check and repair for raid1, raid10
 * and raid4/5/6.
 *
 * One thread per array walks it region by region (md's sync window) from
 * the start (or, for a resync, from where an interrupted one stopped) to
 * the end.  A region is a run of member sectors, the same on every member
 * (raid1, raid4/5/6: every block row in it, whatever chunk rows it
 * crosses), or a run of array sectors inside one chunk for raid10 (whose
 * far and offset copies sit at different member sectors).  For each
 * region it reads every member's part (every copy of the data), compares
 * in 4 KiB blocks (md's STRIPE_SIZE) and:
 *   check   adds 8 sectors to mismatch_cnt per block whose parity does not
 *           match its data, and per mirror copy that differs from the
 *           first in-sync copy (md counts per copy); writes nothing.
 *           raid6: when P and Q agree that exactly one block is wrong (only
 *           P, only Q, or one data block D_z with P ^ P' = e and
 *           Q ^ Q' = g^z e), the member is named in the log and in
 *           rf_sync_status.bad_member.
 *   repair  as check, then rewrites P [and Q] from the data, or the one
 *           raid6 data block P and Q identified, or the differing copies
 *           from the first in-sync copy.
 *   resync  as repair, counting nothing; mirrors read only the first copy
 *           and write it to every other copy, parity levels read the row
 *           (as md) and write the parity that differs.
 *
 * Racing foreground writes.  The thread locks the region against writes:
 * rf_writes_hold() drains the array's writes at the drain barrier (new
 * ones wait there, none blocks a FUSE thread; reads go on), the region is
 * read, compared and rewritten (on an IO queue of the thread's own, on
 * the array's backend, so overlays and fault injection apply), the
 * stripe cache drops the heads of the rewritten rows (their cached blocks
 * would be older than the members), and rf_writes_release() resubmits the
 * held writes in arrival order.  This was chosen over a sync piece that stripe
 * rounds understand because it covers every level with one mechanism, it
 * needs no change to the stripe state machine, and a region is small
 * (64 KiB per member while foreground IO is active): the writes held
 * wait for at most one region's IO.  The cost is that writes to other
 * rows wait too; a range-limited hold would remove that.
 *
 * Foreground first.  Between regions the thread looks at the barrier's
 * in-flight counters: while foreground requests are in flight it paces
 * itself to sync_speed_min and uses small regions (its own IO in flight is
 * at most one region: 64 KiB per member); while idle it takes 1 MiB
 * regions and paces to sync_speed_max.  Pacing is per region (a region of
 * n KiB takes at least n / speed seconds), so it reacts at once when the
 * foreground starts.  speed reports KiB/s over the last few seconds.
 *
 * Checkpoints.  A resync reports where it stands (every row below it in
 * sync) through the notify function every 1/16 of the walk or CP_SECONDS,
 * and where it ended: the superblock keeper records it as resync_offset,
 * so a resync interrupted by a crash or a stop resumes there.
 *
 * Stopping ("idle", "frozen", array close) takes effect between regions:
 * the region in flight is finished and written, so the rows are
 * consistent.  A member IO error marks the member faulty and ends the
 * action.  It does NOT rebuild a spare (recovery) or resync degraded parity
 * arrays.  With a write-intent bitmap, a resync skips the chunks the
 * bitmap says need none (bitmap.c keeps them; check and repair read all).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/engine.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/parity.h"
#include "raidfuse/sync.h"

#define BLK 4096u                       /* compare unit, md's STRIPE_SIZE */
#define BLK_SECTORS (BLK / 512)
#define REGION_IDLE (1u << 20)          /* bytes per member per region when idle */
#define REGION_BUSY (64u << 10)         /* while foreground IO is active */
#define REGION_MEM (16u << 20)          /* every member's region buffer together */
#define NMARKS 4                        /* speed marks, about a second apart */
#define MAX_NAMED_LOGS 64               /* raid6 naming lines per run */
#define SYNC_DEPTH 64                   /* the sync thread's IO queue */
#define BUSY_HOLD 0.5                   /* seconds a foreground request keeps the array busy */
#define BUSY_RECENT 5.0                 /* seconds after which an idle array is looked at once */
#define IDLE_LOOKS 4                    /* looks at the counters before calling the array idle */
#define IDLE_LOOK_US 100
#define IDLE_TRUST 0.02                 /* seconds an idle verdict from several looks holds */
#define PACE_POLL 0.005                 /* seconds between looks at the load while pacing */
#define CP_PARTS 16                     /* a resync checkpoint every 1/16 of the walk, */
#define CP_SECONDS 5.0                  /* or this often */

struct mark {
	double t;
	uint64_t done;
};

struct rf_sync {
	struct rf_array *a;
	pthread_mutex_t lock;
	pthread_cond_t cond;            /* the thread ended; a stop was asked (wakes pacing) */
	/* lock: */
	enum rf_sync_action action;     /* the running action, IDLE when none */
	bool frozen, stop, running, joinable;
	pthread_t thread;
	uint64_t done, total, resync_cp;
	unsigned speed_min, speed_max;
	bool speed_min_local, speed_max_local; /* set, not the defaults */
	struct mark marks[NMARKS];
	int nmarks;
	int bad_member;
	uint64_t bad_sector, bad_found;
	uint64_t skipped;               /* sectors a walk jumped over (bitmap) */
	uint64_t mismatches;
	/* the thread only: */
	uint32_t region_max;            /* bytes per member */
	char *mem;                      /* region buffers, then the scratch blocks */
	char *buf[RF_MAX_MEMBERS];      /* region_max each */
	char *p, *q, *delta, *qq, *zero; /* BLK each */
	uint8_t dirty[RF_MAX_MEMBERS][REGION_IDLE / BLK];
	int nlogged;
	double last_busy;               /* when foreground IO was last seen */
	double last_idle;               /* when several looks last found the array idle */
	double started;                 /* when this walk started */
	struct rf_ioq ioq;              /* the thread's member IO queue */
	struct rf_mio *mios;            /* a region's member IO */
	int nmios, io_pending, io_err;
	rf_sync_notify_fn notify;       /* lock (set), called by the thread */
	void *notify_priv;
};

static const char *const action_names[] = {
	[RF_SYNC_IDLE] = "idle",
	[RF_SYNC_FROZEN] = "frozen",
	[RF_SYNC_RESYNC] = "resync",
	[RF_SYNC_CHECK] = "check",
	[RF_SYNC_REPAIR] = "repair",
	[RF_SYNC_RECOVER] = "recover",
};

const char *rf_sync_action_name(enum rf_sync_action act)
{
	return (unsigned)act < sizeof(action_names) / sizeof(action_names[0]) ? action_names[act] : "?";
}

int rf_sync_action_parse(const char *word)
{
	size_t n = strlen(word);
	unsigned i;

	if (n && word[n - 1] == '\n')
		n--;
	for (i = 0; i < sizeof(action_names) / sizeof(action_names[0]); i++)
		if (strlen(action_names[i]) == n && !strncmp(word, action_names[i], n))
			return (int)i;
	return -EINVAL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Whether foreground IO ran lately.  The barrier's in-flight counters are
 * a snapshot, and a queue-depth-1 user leaves gaps between requests: a
 * request seen in flight keeps the array busy for BUSY_HOLD seconds, and
 * an array that was busy lately (or a walk that just started) is looked at
 * a few more times before it counts as idle; one idle for long is looked
 * at once.  Those extra looks sleep: done every region, they cost an idle
 * walk most of its speed (3 x 100 us beside a 1 MiB region that takes
 * 1-2 ms here; a raid5 resync ran at a third of its speed), so an idle
 * verdict from them holds for IDLE_TRUST seconds, during which one look
 * (no sleep) per call still catches any request in flight. */
static bool fg_active(struct rf_sync *s)
{
	struct rf_array *a = s->a;
	double t = now();
	int i, looks = t - s->last_busy < BUSY_RECENT || t < s->started + BUSY_RECENT ? IDLE_LOOKS : 1;

	if (t - s->last_idle < IDLE_TRUST)
		looks = 1;
	for (i = 0; i < looks; i++) {
		if (i)
			usleep(IDLE_LOOK_US);
		if (atomic_load(&a->inflight[0]) + atomic_load(&a->inflight[1]) > 0) {
			s->last_busy = now();
			return true;
		}
	}
	t = now();
	if (t - s->last_busy < BUSY_HOLD)
		return true;
	if (looks > 1)
		s->last_idle = t;
	return false;
}

static bool is_mirror(const struct rf_array *a)
{
	return a->geom.level == 1 || a->geom.level == 10;
}

/* Sectors the walk covers: member sectors, array sectors for raid10. */
static uint64_t walk_total(const struct rf_array *a)
{
	return a->geom.level == 10 ? a->geom.array_sectors : a->geom.dev_sectors;
}

/* ---- member IO ----
 *
 * Through an IO queue of the array's own backend (liburing, or whatever
 * the array was given: fault injection, overlays), so the members see the
 * same IO path as the workers'.  A region queues its reads (or writes) of
 * every member at once and waits for them all.
 */

static void sio_end(struct rf_mio *m)
{
	struct rf_sync *s = m->priv;

	if (m->res) {
		rf_member_fail(s->a, m->member, m->res, m->op == RF_MIO_WRITE ? "sync write" : "sync read",
			       m->off + m->done);
		if (!s->io_err)
			s->io_err = m->res;
	}
	s->io_pending--;
}

/* Queue a read or write of len bytes of member m at member sector sec. */
static void sio_queue(struct rf_sync *s, int m, bool write, char *buf, uint32_t len, uint64_t sec)
{
	struct rf_mio *mio = &s->mios[s->nmios++];

	memset(mio, 0, sizeof(*mio));
	mio->end = sio_end;
	mio->priv = s;
	mio->buf = buf;
	mio->len = len;
	mio->off = s->a->devs[m].data_offset + (sec << 9);
	mio->member = (int16_t)m;
	mio->op = write ? RF_MIO_WRITE : RF_MIO_READ;
	s->io_pending++;
	rf_ioq_queue(&s->ioq, mio);
}

/* Submit what was queued and wait for all of it.  Returns 0 or the first
 * error (its member is marked faulty). */
static int sio_wait(struct rf_sync *s)
{
	int ret;

	for (;;) {
		ret = rf_ioq_submit(&s->ioq);
		if (ret < 0 || !s->io_pending)
			break;
		/* Something waits for room and nothing is in flight: submit
		 * again rather than sleep. */
		ret = rf_ioq_reap(&s->ioq, !(s->ioq.retry && !s->ioq.inflight));
		if (ret < 0)
			break;
	}
	if (ret < 0 && !s->io_err) {
		rf_err("%s: sync: member IO queue: %s", s->a->name, strerror(-ret));
		s->io_err = ret;
	}
	ret = s->io_err;
	s->io_err = 0;
	s->nmios = 0;
	return ret;
}

/* Queue the dirty blocks of buf (nblk blocks, bytes long) for member m at
 * member sector sec, one write per contiguous run, and clear them. */
static void queue_dirty(struct rf_sync *s, int m, char *buf, uint8_t *dirty, int nblk, uint32_t bytes,
			uint64_t sec)
{
	int b = 0, e;

	while (b < nblk) {
		uint32_t off, len;

		if (!dirty[b]) {
			b++;
			continue;
		}
		for (e = b; e < nblk && dirty[e]; e++)
			dirty[e] = 0;
		off = (uint32_t)b * BLK;
		len = (uint32_t)e * BLK < bytes ? (uint32_t)(e - b) * BLK : bytes - off;
		sio_queue(s, m, true, buf + off, len, sec + off / 512);
		b = e;
	}
}

static void count_mismatch(struct rf_sync *s, uint32_t len)
{
	pthread_mutex_lock(&s->lock);
	s->mismatches += len / 512;
	pthread_mutex_unlock(&s->lock);
}

/* ---- raid1 and raid10 ---- */

/* Every copy of the region at pos (at most *n sectors; *n is set to what
 * the region covers): member and member sector. */
static int mirror_copies(struct rf_array *a, uint64_t pos, uint64_t *n, int *devs, uint64_t *secs)
{
	if (a->geom.level != 1 && *n > rf_geom_chunk_left(&a->geom, pos))
		*n = rf_geom_chunk_left(&a->geom, pos);
	return rf_mirror_map(&a->geom, pos, devs, secs);
}

static int mirror_region(struct rf_sync *s, enum rf_sync_action act, uint64_t pos, uint64_t *nsec)
{
	struct rf_array *a = s->a;
	int devs[RF_MAX_MEMBERS], live[RF_MAX_MEMBERS], n, m = 0, i, b, nblk, ret = 0;
	uint64_t secs[RF_MAX_MEMBERS], faulty = rf_faulty(a);
	uint32_t bytes;

	n = mirror_copies(a, pos, nsec, devs, secs);
	for (i = 0; i < n; i++)
		if (!(faulty & (1ull << devs[i])))
			live[m++] = i;
	if (m < 2)
		return 0;       /* one copy left: nothing to compare or copy to */
	bytes = (uint32_t)(*nsec << 9);
	nblk = (int)((bytes + BLK - 1) / BLK);
	rf_writes_hold(a);
	for (i = 0; i < m; i++)
		if (i == 0 || act != RF_SYNC_RESYNC)
			sio_queue(s, devs[live[i]], false, s->buf[i], bytes, secs[live[i]]);
	ret = sio_wait(s);
	for (b = 0; b < nblk && !ret; b++) {
		uint32_t off = (uint32_t)b * BLK, len = bytes - off < BLK ? bytes - off : BLK;

		for (i = 1; i < m; i++) {
			if (act != RF_SYNC_RESYNC) {
				if (!memcmp(s->buf[0] + off, s->buf[i] + off, len))
					continue;
				count_mismatch(s, len);
				if (act == RF_SYNC_CHECK)
					continue;
			}
			memcpy(s->buf[i] + off, s->buf[0] + off, len);
			s->dirty[i][b] = 1;
		}
	}
	/* Buffers are indexed by live copy, not by member. */
	for (i = 1; i < m; i++)
		if (ret)
			memset(s->dirty[i], 0, (size_t)nblk);
		else
			queue_dirty(s, devs[live[i]], s->buf[i], s->dirty[i], nblk, bytes, secs[live[i]]);
	if (!ret)
		ret = sio_wait(s);
	rf_writes_release(a);
	return ret;
}

/* Rebuild: copy the region from a copy that holds it to every copy on a
 * device being rebuilt. */
static int mirror_recover(struct rf_sync *s, uint64_t pos, uint64_t *nsec)
{
	struct rf_array *a = s->a;
	int devs[RF_MAX_MEMBERS], n, i, src = -1, ntarget = 0, ret;
	uint64_t secs[RF_MAX_MEMBERS], rec;
	uint32_t bytes;

	n = mirror_copies(a, pos, nsec, devs, secs);
	bytes = (uint32_t)(*nsec << 9);
	rf_writes_hold(a);
	rec = atomic_load(&a->recovering) & ~rf_faulty(a);
	for (i = 0; i < n; i++) {
		if (rec & (1ull << devs[i]))
			ntarget++;
		else if (src < 0 && !(rf_faulty_read(a) & (1ull << devs[i])))
			src = i;
	}
	ret = ntarget && src < 0 ? -EIO : 0;
	if (ntarget && src >= 0) {
		sio_queue(s, devs[src], false, s->buf[0], bytes, secs[src]);
		ret = sio_wait(s);
		for (i = 0; i < n && !ret; i++)
			if (rec & (1ull << devs[i]))
				sio_queue(s, devs[i], true, s->buf[0], bytes, secs[i]);
		if (!ret)
			ret = sio_wait(s);
	}
	rf_writes_release(a);
	return ret;
}

/* ---- raid4/5/6 ---- */

/* Rebuild: every missing block of the region's rows from the others
 * (xor, or raid6 recovery of any two), written to the devices being
 * rebuilt; then they serve these rows (recovery_cp). */
static int parity_recover(struct rf_sync *s, uint64_t pos, uint64_t *nsec)
{
	struct rf_array *a = s->a;
	const struct rf_geom *g = &a->geom;
	uint32_t bytes = (uint32_t)(*nsec << 9);
	int i, b, nblk = (int)(bytes / BLK), ret = 0;
	uint64_t row = UINT64_MAX, rec, missing;
	struct rf_r5_row r;
	void *blocks[RF_MAX_MEMBERS + 2];

	rf_writes_hold(a);
	rec = atomic_load(&a->recovering) & ~rf_faulty(a);
	missing = rf_faulty(a) | rec;
	if (!rec || a->ops->failed(a, missing)) {
		ret = rec ? -EIO : 0;
		goto out;
	}
	for (i = 0; i < a->nmembers; i++)
		if (!(missing & (1ull << i)))
			sio_queue(s, i, false, s->buf[i], bytes, pos);
	ret = sio_wait(s);
	for (b = 0; b < nblk && !ret; b++) {
		uint64_t ds = pos + (uint64_t)b * BLK_SECTORS;
		int off = b * (int)BLK, f[2] = { -1, -1 }, nf = 0, n;

		if (ds / g->chunk_sectors != row) {
			row = ds / g->chunk_sectors;
			rf_r5_row(g, row, &r);
		}
		if (g->level != 6) {
			int x = __builtin_ctzll(missing);

			for (i = 0, n = 0; i < a->nmembers; i++)
				if (i != x)
					blocks[n++] = s->buf[i] + off;
			rf_xor_gen(n, BLK, blocks, s->buf[x] + off);
			continue;
		}
		n = rf_r6_blocks(&r, g->data_disks, s->buf, (size_t)off, s->zero, blocks);
		for (i = 0; i < a->nmembers && nf < 2; i++)
			if (missing & (1ull << i))
				f[nf++] = rf_r6_index(&r, i);
		rf_raid6_recover(n, BLK, blocks, f[0], f[1]);
	}
	for (i = 0; i < a->nmembers && !ret; i++)
		if (rec & (1ull << i))
			sio_queue(s, i, true, s->buf[i], bytes, pos);
	if (!ret)
		ret = sio_wait(s);
	if (!ret) {
		/* Cached heads of these rows were planned without the new
		 * devices; from here on they serve these rows. */
		rf_stripe_cache_forget(a, pos, pos + *nsec);
		atomic_store_explicit(&a->recovery_cp, pos + *nsec, memory_order_release);
	}
out:
	rf_writes_release(a);
	return ret;
}

static void name_bad(struct rf_sync *s, enum rf_sync_action act, int member, uint64_t dev_sector,
		     const char *what)
{
	struct rf_array *a = s->a;
	int64_t as = rf_r5_array_sector(&a->geom, member, dev_sector);
	uint64_t where = as >= 0 ? (uint64_t)as : dev_sector;

	pthread_mutex_lock(&s->lock);
	s->bad_member = member;
	s->bad_sector = where;
	s->bad_found++;
	pthread_mutex_unlock(&s->lock);
	if (s->nlogged++ == MAX_NAMED_LOGS)
		rf_warn("%s: more wrong blocks named; not logging them", a->name);
	if (s->nlogged > MAX_NAMED_LOGS)
		return;
	if (as >= 0)
		rf_warn("%s: %s: member %d (%s) holds the wrong data block at array sector %llu (member sector %llu)",
			a->name, rf_sync_action_name(act), member, a->devs[member].path, (unsigned long long)as,
			(unsigned long long)dev_sector);
	else
		rf_warn("%s: %s: member %d (%s) holds the wrong %s block at member sector %llu", a->name,
			rf_sync_action_name(act), member, a->devs[member].path, what,
			(unsigned long long)dev_sector);
}

/* raid6, P and Q both wrong: the data member whose error explains both
 * (Q ^ Q' == g^slot (P ^ P')), or -1.  s->delta = P ^ P' on return. */
static int raid6_bad_data(struct rf_sync *s, const struct rf_r5_row *r, int off)
{
	struct rf_array *a = s->a;
	int k;

	memcpy(s->delta, s->buf[r->pd_idx] + off, BLK);
	rf_xor_into(BLK, s->p, s->delta);
	for (k = 0; k < a->geom.data_disks; k++) {
		int z = r->data_member[k];

		memcpy(s->qq, s->q, BLK);
		rf_q_update(BLK, r->qslot[z], s->delta, s->qq);
		if (!memcmp(s->qq, s->buf[r->qd_idx] + off, BLK))
			return z;
	}
	return -1;
}

static int parity_region(struct rf_sync *s, enum rf_sync_action act, uint64_t pos, uint64_t *nsec)
{
	struct rf_array *a = s->a;
	const struct rf_geom *g = &a->geom;
	uint32_t bytes = (uint32_t)(*nsec << 9);
	int i, k, b, nblk = (int)(bytes / BLK), ret = 0;
	uint64_t row = UINT64_MAX;
	bool raid6 = g->level == 6, wrote = false;
	struct rf_r5_row r;
	void *blocks[RF_MAX_MEMBERS + 2];

	rf_writes_hold(a);
	if (rf_faulty(a)) {
		ret = -EIO;     /* a member failed since the start: nothing to compare */
		goto out;
	}
	/* Every column: P and Q move from row to row inside the region. */
	for (i = 0; i < a->nmembers; i++)
		sio_queue(s, i, false, s->buf[i], bytes, pos);
	ret = sio_wait(s);
	for (b = 0; b < nblk && !ret; b++) {
		uint64_t ds = pos + (uint64_t)b * BLK_SECTORS;
		int off = b * (int)BLK, bad = -1;
		bool badp, badq;

		if (ds / g->chunk_sectors != row) {
			row = ds / g->chunk_sectors;
			rf_r5_row(g, row, &r);
		}
		if (raid6) {
			rf_pq_gen(rf_r6_blocks(&r, g->data_disks, s->buf, (size_t)off, s->zero, blocks), BLK, blocks,
				  s->p, s->q);
		} else {
			for (k = 0; k < g->data_disks; k++)
				blocks[k] = s->buf[r.data_member[k]] + off;
			rf_xor_gen(g->data_disks, BLK, blocks, s->p);
		}
		badp = memcmp(s->p, s->buf[r.pd_idx] + off, BLK) != 0;
		badq = raid6 && memcmp(s->q, s->buf[r.qd_idx] + off, BLK) != 0;
		if (!badp && !badq)
			continue;
		if (act != RF_SYNC_RESYNC) {
			count_mismatch(s, BLK);
			if (!raid6)
				bad = -1;       /* P alone cannot say which block is wrong */
			else if (!badq)
				name_bad(s, act, bad = r.pd_idx, ds, "P");
			else if (!badp)
				name_bad(s, act, bad = r.qd_idx, ds, "Q");
			else if ((bad = raid6_bad_data(s, &r, off)) >= 0)
				name_bad(s, act, bad, ds, "data");
			else
				rf_dbg("%s: %s: member sector %llu: P and Q wrong, no single member explains it",
				       a->name, rf_sync_action_name(act), (unsigned long long)ds);
			if (act == RF_SYNC_CHECK)
				continue;
		}
		if (bad >= 0 && bad != r.pd_idx && bad != r.qd_idx) {
			/* P and Q are right: the data block is what they say. */
			rf_xor_into(BLK, s->delta, s->buf[bad] + off);
			s->dirty[bad][b] = 1;
			continue;
		}
		if (badp) {
			memcpy(s->buf[r.pd_idx] + off, s->p, BLK);
			s->dirty[r.pd_idx][b] = 1;
		}
		if (badq) {
			memcpy(s->buf[r.qd_idx] + off, s->q, BLK);
			s->dirty[r.qd_idx][b] = 1;
		}
	}
	for (i = 0; i < a->nmembers; i++) {
		for (b = 0; b < nblk && !wrote; b++)
			wrote = s->dirty[i][b];
		if (!ret)
			queue_dirty(s, i, s->buf[i], s->dirty[i], nblk, bytes, pos);
		else
			memset(s->dirty[i], 0, (size_t)nblk);
	}
	if (!ret)
		ret = sio_wait(s);
	/* Cached heads of these rows hold what the members held before. */
	if (wrote)
		rf_stripe_cache_forget(a, pos, pos + *nsec);
out:
	rf_writes_release(a);
	return ret;
}

/* ---- the thread ---- */

/* Sleep until the region just done (sectors since t0) kept to the speed
 * the array's load allows, a stop was asked, or the load changed. */
static void pace(struct rf_sync *s, double t0, uint64_t sectors)
{
	pthread_mutex_lock(&s->lock);
	for (;;) {
		unsigned want = fg_active(s) ? s->speed_min : s->speed_max;
		double left = (double)sectors / 2 / want - (now() - t0);
		struct timespec ts;

		if (s->stop || left <= 0)
			break;
		if (left > PACE_POLL)
			left = PACE_POLL;       /* look at the load again soon */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)(left * 1e9);
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&s->cond, &s->lock, &ts);
	}
	pthread_mutex_unlock(&s->lock);
}

/* s->lock held: record progress, and a speed mark about once a second. */
static void progress(struct rf_sync *s, uint64_t pos)
{
	double t = now();

	s->done = pos;
	if (s->nmarks && t - s->marks[s->nmarks - 1].t < 1.0)
		return;
	if (s->nmarks == NMARKS) {
		memmove(s->marks, s->marks + 1, (NMARKS - 1) * sizeof(s->marks[0]));
		s->nmarks--;
	}
	s->marks[s->nmarks].t = t;
	s->marks[s->nmarks].done = pos;
	s->nmarks++;
}

/* A resync reached pos: every row below it is in sync.  A later resync
 * may start there; the notify function records it in the superblocks. */
static void checkpoint(struct rf_sync *s, uint64_t pos)
{
	rf_sync_notify_fn notify;
	void *priv;

	pthread_mutex_lock(&s->lock);
	s->resync_cp = pos;
	notify = s->notify;
	priv = s->notify_priv;
	pthread_mutex_unlock(&s->lock);
	if (notify)
		notify(s->a, RF_SYNC_RESYNC, false, pos, priv);
}

/* Region by region from *pos to total, until done, stopped or failed. */
static int walk(struct rf_sync *s, enum rf_sync_action act, uint64_t *pos, uint64_t total, const char **why)
{
	struct rf_array *a = s->a;
	uint64_t cp_pos = *pos;
	double cp_t = now();
	bool first = true;
	int ret = 0;

	while (*pos < total) {
		double t0 = now();
		uint64_t n = (fg_active(s) ? REGION_BUSY : s->region_max) / 512;
		bool stop;

		pthread_mutex_lock(&s->lock);
		stop = s->stop;
		pthread_mutex_unlock(&s->lock);
		if (stop) {
			*why = "interrupted";
			return 0;
		}
		/* With a bitmap a resync goes only where writes may have been
		 * in flight, and what it covered is in sync after. */
		if (act == RF_SYNC_RESYNC && a->bitmap) {
			*pos = rf_bitmap_resync_skip(a->bitmap, *pos, total, &n);
			if (*pos >= total)
				break;
		}
		/* A re-added device missed only what the bitmap marks.  The
		 * jump over clean chunks is made with writes held: none may
		 * be planned on the far side of the old position meanwhile. */
		if (act == RF_SYNC_RECOVER && a->bitmap && atomic_load(&a->recover_dirty_only)) {
			uint64_t np;

			rf_writes_hold(a);
			np = rf_bitmap_dirty_skip(a->bitmap, *pos, total, &n);
			if (np != *pos && !is_mirror(a)) {
				rf_stripe_cache_forget(a, *pos, np);
				atomic_store_explicit(&a->recovery_cp, np, memory_order_release);
			}
			rf_writes_release(a);
			pthread_mutex_lock(&s->lock);
			s->skipped += np - *pos;
			pthread_mutex_unlock(&s->lock);
			*pos = np;
			if (*pos >= total)
				break;
		}
		if (n > total - *pos)
			n = total - *pos;
		if (rf_failed_now(a))
			ret = -EIO;
		else if (act == RF_SYNC_RECOVER)
			ret = is_mirror(a) ? mirror_recover(s, *pos, &n) : parity_recover(s, *pos, &n);
		else
			ret = is_mirror(a) ? mirror_region(s, act, *pos, &n) : parity_region(s, act, *pos, &n);
		if (ret) {
			*why = "stopped by an IO error";
			return ret;
		}
		*pos += n;
		if (act == RF_SYNC_RESYNC)
			rf_bitmap_resync_done(a->bitmap, *pos - n, *pos);
		else if (act == RF_SYNC_RECOVER)
			rf_bitmap_rebuilt(a->bitmap, *pos - n, *pos);
		pthread_mutex_lock(&s->lock);
		/* The first region runs at once, unpaced: the speed counts from
		 * its end, or it would read above sync_speed_max for seconds. */
		if (first)
			s->nmarks = 0;
		progress(s, *pos);
		pthread_mutex_unlock(&s->lock);
		first = false;
		if (act == RF_SYNC_RESYNC && *pos < total &&
		    (*pos - cp_pos >= total / CP_PARTS || now() - cp_t >= CP_SECONDS)) {
			checkpoint(s, *pos);
			cp_pos = *pos;
			cp_t = now();
		}
		pace(s, t0, n);
	}
	return 0;
}

static void *sync_main(void *arg)
{
	struct rf_sync *s = arg;
	struct rf_array *a = s->a;
	enum rf_sync_action act;
	uint64_t pos, total;
	rf_sync_notify_fn notify;
	void *notify_priv;
	const char *why = "done";
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	act = s->action;
	pos = s->done;
	total = s->total;
	progress(s, pos);
	pthread_mutex_unlock(&s->lock);
	ret = a->ioq_init(&s->ioq, rf_devs_ioq(a), SYNC_DEPTH);
	if (ret) {
		rf_err("%s: %s: no member IO queue: %s", a->name, rf_sync_action_name(act), strerror(-ret));
		why = "not started";
	} else {
		rf_info("%s: %s started at sector %llu of %llu", a->name, rf_sync_action_name(act),
			(unsigned long long)pos, (unsigned long long)total);
		ret = walk(s, act, &pos, total, &why);
		rf_ioq_destroy(&s->ioq);
	}
	pthread_mutex_lock(&s->lock);
	if (act == RF_SYNC_RESYNC)
		s->resync_cp = pos < total ? pos : RF_SYNC_NONE;
	if (act == RF_SYNC_RESYNC || act == RF_SYNC_RECOVER)
		rf_info("%s: %s %s at sector %llu of %llu%s", a->name, rf_sync_action_name(act), why,
			(unsigned long long)pos, (unsigned long long)total,
			act == RF_SYNC_RECOVER && s->skipped ? " (only what the bitmap marks)" : "");
	else
		rf_info("%s: %s %s at sector %llu of %llu: mismatch_cnt %llu", a->name, rf_sync_action_name(act),
			why, (unsigned long long)pos, (unsigned long long)total, (unsigned long long)s->mismatches);
	notify = s->notify;
	notify_priv = s->notify_priv;
	pthread_mutex_unlock(&s->lock);
	/* Outside the lock: the callback may read the status. */
	if (notify)
		notify(a, act, !ret && pos >= total, pos, notify_priv);
	if (act == RF_SYNC_RECOVER)
		rf_recovery_ended(a, !ret && pos >= total, pos);
	pthread_mutex_lock(&s->lock);
	s->action = RF_SYNC_IDLE;
	s->running = false;
	s->joinable = true;
	s->done = 0;
	s->nmarks = 0;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	/* A spare may wait for a failed slot (or a rebuild for its turn). */
	rf_mgmt_kick(a);
	return NULL;
}

/* s->lock held: reap a thread that has ended. */
static void reap(struct rf_sync *s)
{
	if (s->joinable) {
		pthread_join(s->thread, NULL);
		s->joinable = false;
	}
}

static int start(struct rf_array *a, enum rf_sync_action act)
{
	struct rf_sync *s = a->sync;
	int ret;

	if (!is_mirror(a) && a->geom.level < 4)
		return -EINVAL;
	if (act != RF_SYNC_CHECK && a->readonly)
		return -EROFS;
	if (act == RF_SYNC_RECOVER ? rf_failed_now(a) : rf_failed_now(a) || (!is_mirror(a) && rf_faulty(a))) {
		rf_err("%s: %s: the array is degraded: no redundancy to compare", a->name,
		       rf_sync_action_name(act));
		return -EIO;
	}
	pthread_mutex_lock(&s->lock);
	if (s->running) {
		pthread_mutex_unlock(&s->lock);
		return -EBUSY;
	}
	reap(s);
	s->action = act;
	s->frozen = false;
	s->stop = false;
	s->total = walk_total(a);
	s->done = act == RF_SYNC_RESYNC && s->resync_cp < s->total ? s->resync_cp : 0;
	/* A rebuild resumes where its superblock says (raid10 walks array
	 * sectors: from the start). */
	if (act == RF_SYNC_RECOVER && a->geom.level != 10 && atomic_load(&a->recovery_cp) < s->total)
		s->done = atomic_load(&a->recovery_cp);
	s->nmarks = 0;
	s->nlogged = 0;
	s->skipped = 0;
	s->last_busy = -BUSY_RECENT;
	s->last_idle = -IDLE_TRUST;
	s->started = now();
	if (act != RF_SYNC_RESYNC) {
		s->mismatches = 0;
		s->bad_member = -1;
		s->bad_sector = s->bad_found = 0;
	}
	s->running = true;
	ret = -pthread_create(&s->thread, NULL, sync_main, s);
	if (ret) {
		s->running = false;
		s->action = RF_SYNC_IDLE;
		rf_err("%s: %s: no thread: %s", a->name, rf_sync_action_name(act), strerror(-ret));
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

void rf_sync_stop(struct rf_array *a, bool freeze)
{
	struct rf_sync *s = a->sync;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_broadcast(&s->cond);
	while (s->running)
		pthread_cond_wait(&s->cond, &s->lock);
	reap(s);
	s->frozen = freeze;
	pthread_mutex_unlock(&s->lock);
}

int rf_sync_request(struct rf_array *a, enum rf_sync_action act)
{
	switch (act) {
	case RF_SYNC_IDLE:
	case RF_SYNC_FROZEN:
		rf_sync_stop(a, act == RF_SYNC_FROZEN);
		return 0;
	case RF_SYNC_RESYNC:
	case RF_SYNC_CHECK:
	case RF_SYNC_REPAIR:
		return start(a, act);
	case RF_SYNC_RECOVER:
		/* md: nothing to rebuild is not an error; a failed slot and a
		 * spare that have not met yet are looked at again. */
		if (!atomic_load(&a->recovering)) {
			rf_mgmt_kick(a);
			return 0;
		}
		return start(a, act);
	}
	return -EINVAL;
}

void rf_sync_wait(struct rf_array *a)
{
	struct rf_sync *s = a->sync;

	pthread_mutex_lock(&s->lock);
	while (s->running)
		pthread_cond_wait(&s->cond, &s->lock);
	reap(s);
	pthread_mutex_unlock(&s->lock);
}

void rf_sync_get(struct rf_array *a, struct rf_sync_status *st)
{
	struct rf_sync *s = a->sync;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&s->lock);
	st->action = s->running ? s->action : s->frozen ? RF_SYNC_FROZEN : RF_SYNC_IDLE;
	st->done = s->running ? s->done : 0;
	st->total = s->running ? s->total : walk_total(a);
	st->mismatch_cnt = s->mismatches;
	st->speed_min = s->speed_min;
	st->speed_max = s->speed_max;
	st->speed_min_local = s->speed_min_local;
	st->speed_max_local = s->speed_max_local;
	st->resync_cp = s->resync_cp;
	st->bad_member = s->bad_member;
	st->bad_sector = s->bad_sector;
	st->bad_found = s->bad_found;
	st->skipped = s->skipped;
	if (s->running && s->nmarks) {
		/* At least a second, as md: a young run's first region says
		 * nothing about its pace. */
		double dt = now() - s->marks[0].t;

		st->speed = (unsigned)((s->done - s->marks[0].done) / 2 / (dt > 1.0 ? dt : 1.0));
	}
	pthread_mutex_unlock(&s->lock);
}

int rf_sync_progress_line(struct rf_array *a, char *buf, size_t len)
{
	struct rf_sync_status st;
	unsigned permille, i, x;
	char bar[22];
	uint64_t rt;
	int n;

	rf_sync_get(a, &st);
	if (!len)
		return -EOVERFLOW;
	buf[0] = '\0';
	if (st.action == RF_SYNC_IDLE || st.action == RF_SYNC_FROZEN)
		return 0;
	permille = st.total ? (unsigned)(st.done * 1000 / st.total) : 0;
	/* 21 characters: one '=' per 5 % done, the head '>', '.' to go. */
	x = permille / 50;
	for (i = 0; i < 21; i++)
		bar[i] = i < x ? '=' : i == x ? '>' : '.';
	bar[21] = '\0';
	/* md says "resync" for a repair: it is a resync that also counts. */
	rt = st.speed ? (st.total - st.done) / 2 / st.speed : 0;
	n = snprintf(buf, len, "[%s]  %s =%3u.%u%% (%llu/%llu) finish=%llu.%llumin speed=%uK/sec", bar,
		     st.action == RF_SYNC_CHECK ? "check" : st.action == RF_SYNC_RECOVER ? "recovery" : "resync",
		     permille / 10, permille % 10,
		     (unsigned long long)st.done / 2, (unsigned long long)st.total / 2,
		     (unsigned long long)rt / 60, (unsigned long long)rt % 60 / 6, st.speed);
	return n < 0 || (size_t)n >= len ? -EOVERFLOW : n;
}

static int set_speed(struct rf_array *a, unsigned kib, bool max)
{
	struct rf_sync *s = a->sync;
	unsigned def = max ? RF_SYNC_SPEED_MAX_DEFAULT : RF_SYNC_SPEED_MIN_DEFAULT;

	if (kib > INT32_MAX)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	/* 0: back to the default (md's "system" value). */
	if (max) {
		s->speed_max = kib ? kib : def;
		s->speed_max_local = kib != 0;
	} else {
		s->speed_min = kib ? kib : def;
		s->speed_min_local = kib != 0;
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int rf_sync_set_speed_min(struct rf_array *a, unsigned kib)
{
	return set_speed(a, kib, false);
}

int rf_sync_set_speed_max(struct rf_array *a, unsigned kib)
{
	return set_speed(a, kib, true);
}

void rf_sync_set_notify(struct rf_array *a, rf_sync_notify_fn fn, void *priv)
{
	struct rf_sync *s = a->sync;

	pthread_mutex_lock(&s->lock);
	s->notify = fn;
	s->notify_priv = priv;
	pthread_mutex_unlock(&s->lock);
}

int rf_sync_set_resync_cp(struct rf_array *a, uint64_t sector)
{
	struct rf_sync *s = a->sync;
	rf_sync_notify_fn notify = NULL;
	void *priv = NULL;
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	if (s->running && s->action == RF_SYNC_RESYNC) {
		ret = -EBUSY;
	} else {
		s->resync_cp = sector < walk_total(a) ? sector : RF_SYNC_NONE;
		sector = s->resync_cp;
		notify = s->notify;
		priv = s->notify_priv;
	}
	pthread_mutex_unlock(&s->lock);
	if (notify)
		notify(a, RF_SYNC_IDLE, false, sector, priv);
	return ret;
}

int rf_sync_init(struct rf_array *a)
{
	struct rf_sync *s = calloc(1, sizeof(*s));
	uint32_t per;
	size_t i;

	if (!s)
		return -ENOMEM;
	s->a = a;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->speed_min = RF_SYNC_SPEED_MIN_DEFAULT;
	s->speed_max = RF_SYNC_SPEED_MAX_DEFAULT;
	s->bad_member = -1;
	s->resync_cp = RF_SYNC_NONE;
	/* Reads: one per member; writes: at most a run per two blocks. */
	s->mios = calloc((size_t)a->nmembers * (REGION_IDLE / BLK / 2 + 1), sizeof(*s->mios));
	if (!s->mios) {
		free(s);
		return -ENOMEM;
	}
	per = REGION_MEM / (uint32_t)a->nmembers;
	if (per > REGION_IDLE)
		per = REGION_IDLE;
	per &= ~(BLK - 1);
	if (per < REGION_BUSY)
		per = REGION_BUSY;
	s->region_max = per;
	if (posix_memalign((void **)&s->mem, 4096, (size_t)per * a->nmembers + 5 * BLK)) {
		free(s->mios);
		free(s);
		return -ENOMEM;
	}
	for (i = 0; i < (size_t)a->nmembers; i++)
		s->buf[i] = s->mem + i * per;
	s->p = s->mem + (size_t)per * a->nmembers;
	s->q = s->p + BLK;
	s->delta = s->q + BLK;
	s->qq = s->delta + BLK;
	s->zero = s->qq + BLK;
	memset(s->zero, 0, BLK);
	a->sync = s;
	return 0;
}

void rf_sync_free(struct rf_array *a)
{
	struct rf_sync *s = a->sync;

	if (!s)
		return;
	rf_sync_stop(a, false);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s->mem);
	free(s->mios);
	free(s);
	a->sync = NULL;
}
