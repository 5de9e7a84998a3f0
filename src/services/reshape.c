/* SPDX-License-Identifier: GPL-2.0-or-later */
/* reshape.c - continue a raid4/5/6 or raid10 reshape under way, online,
 * to its end.
 *
 * An array assembled mid-reshape (md's reshape_position in its 1.x
 * superblocks, engine.h struct rf_reshape) is served in two geometries:
 * array sectors below the position in the new one at each member's new
 * data offset, the rest in the previous one at the old offset.  This
 * service's thread moves the position forwards to the end, one window at
 * a time, as md's reshape_request does.  The walk is the same for every
 * level; what differs is the level's (core/reshapework.h, struct
 * rf_reshape_ops): the granule windows are made of (raid4/5/6: whole new
 * stripes of the larger chunk; raid10: chunks), where an array sector's
 * rows lie on the members in a geometry (md's first_dev_address and
 * last_dev_address, which the crash-safety rule below compares), how a
 * window's old data is read and how its new rows are written:
 *
 *   1. with writes drained (reads go on: nothing they read is written),
 *      read the window's data from the previous geometry (raid4/5/6: each
 *      chunk from its data member, a missing one from its row; raid10:
 *      each chunk from one copy in sync), zeros past the old array's end
 *      (md zeroes what the old array never held); going forwards with
 *      every member there, the next window's old rows are read beside
 *      this window's writes and kept unless a write touches them before
 *      that window moves (its write_start hook);
 *   2. write the window in the new geometry at the new data offsets
 *      (raid4/5/6: whole new stripes, parity computed; raid10: every copy);
 *   3. move the array's position there with reads drained too
 *      (rf_array_reshape_commit()), and let the held writes go: they land
 *      in the new geometry;
 *   4. when needed, flush the members and record the position as
 *      reshape_position in every superblock (rf_sbstate_reshape(),
 *      record()): not after every window, as md's reshape_request
 *      records it only when the next window's new rows would land on old
 *      rows the recorded position still needs, or 10 s after the last.
 * When the position reaches the end of the new geometry, with every
 * request drained, the new data offsets become the data offsets, the
 * superblocks say the reshape is done (md's end_reshape) and the image
 * grows to the new size (the FUSE layer is told).
 *
 * Crash safety.  A window is written only where the previous geometry
 * holds nothing still needed: for every member that has old rows, the
 * window's new rows (the level's dev_end() of its last sector, at the new
 * data offset) end at or below the first old row of the window itself
 * (dev_first(), at the old data offset: md's reshape_safe test), so after
 * a crash at any point the superblocks' position still finds every
 * sector at or past it in the old geometry, intact, and every sector
 * below it in the new one, flushed before the position was recorded.  So
 * windows move past the recorded position only as far as their new rows
 * stay below the old rows of the recorded position itself (window_at()'s
 * base): the rows between the two are in
 * both geometries, and a crash resumes at the recorded one.  A write to
 * those rows would be in the new geometry only: it first has the position
 * recorded (hook_write_start(); md holds such a write until the
 * superblocks caught up), so foreground writes reach the new geometry only
 * below a recorded position.  A window that would land on old rows not
 * yet read is not written without a backup file: the walk stops and says
 * so.
 *
 * mdadm's backup file (--backup-file, md/backup_file; its format is
 * md/backup_fmt.c's).  A grow, a layout or a chunk change with no room
 * before the data on every member keeps the data offsets where they are
 * when a backup file is set (plan(): struct rf_reshape backup), as mdadm
 * --grow --backup-file has md do.  Its first windows (the critical
 * section: the new rows of the position's granule land on old rows of its
 * own; a relayout's every window, its rows where the old ones were) then
 * cannot fit; each such window is as large as lands on no old rows past
 * its own end (window_backup()), and in it, every request drained (reads
 * too: its new rows land on the old rows reads of it would find): its old
 * data is read, written to the backup file (array order, at 4 KiB, then
 * flushed), the header that names it written after the data and at the
 * file's start (flushed: the header at the start is what makes the backup
 * count), then the new rows, and the position is recorded at the window's
 * end before the next window begins (record() with the members flushed:
 * nothing runs ahead of the record there).  A crash anywhere leaves either
 * a header that ends at or below the recorded position (stale: the old
 * rows at the position were never touched) or one that starts at it,
 * whose data restore() writes back in the new geometry at the next
 * assembly before the array serves, recording the position at the
 * backup's end (mdadm's Grow_restart).  Once a granule's new rows fall
 * below the old rows of the recorded position (a grow, after its first
 * rows), windows fit by themselves: no more backups, and once the
 * recorded position is there the file is removed (backup_done(); any
 * reshape in place at its end), as mdadm removes it when it stops
 * watching the reshape.  A reshape in place found at assembly inside its
 * critical section without the file is refused there (md/layout.c
 * rf_reshape_init(): md's "reshape_position too early for
 * auto-recovery").
 *
 * A grow begins with rf_reshape_grow() (md/raid_disks): the spares take
 * the new slots, every member's data is to move lower as the level says
 * (md's new_offset as mdadm sets it: raid4/5/6 a row of chunks where the
 * room before the data allows; raid10 a chunk times the far copies,
 * exactly, as md's raid10_start_reshape needs), the superblocks record
 * the reshape at position 0 (md's start_reshape), and the walk above
 * takes it from there.  A raid10 grows as md grows one (grow_r10(): near
 * and offset layouts, the copies kept, whole, a spare per new slot).
 *
 * A raid4/5 becomes a raid6 the same way (rf_reshape_level(), md/level):
 * md's takeover makes it a raid6 of the "-6" form of its layout (the
 * raid5 over the old members, Q on one new last member, which holds
 * nothing yet: struct rf_reshape prev_absent counts it missing in the
 * previous geometry), and the walk restripes that to the raid6 layout of
 * the same number, every row's P and Q computed here, as mdadm's
 * --grow --level=6 has md do.  The new member's superblock records md's
 * recovery_offset following the position (services/sbstate.c).
 *
 * A layout or chunk change (rf_reshape_layout(), md/layout, md/chunk_size)
 * is the same walk over the same members.
 *
 * A reshape md runs backwards (its data offsets move up: a relayout in
 * place, a shrink) is walked down from its position (window_below()), the
 * same steps mirrored; a shrink's dropped members end as spares.
 *
 * A member that fails during the walk leaves it degraded, as md's goes on:
 * its chunks of each old row are computed from the rest of the row (the
 * level's fill_missing(); raid10 reads another copy), its chunks of the
 * new rows are not written (the parity, or the other copies, cover them),
 * and no spare takes its slot until the
 * reshape ended (services/member.c waits; the walk kicks it at the end).
 * Every device's data offset moves at the end, the spares' too, as the
 * superblocks record it (md_finish_reshape).
 *
 * A shrink (rf_reshape_grow() to fewer members, as mdadm --grow
 * --raid-devices with the array size cut first) is md's backward reshape:
 * every data offset moves a chunk up (room after the data is needed), the
 * walk goes down from the new geometry's end, and the slots past the new
 * count stay until it ends, then their devices are spares.
 *
 * md's takeovers that move no data (rf_reshape_level(), takeover()) change
 * the level in place, the level ops too where they differ: raid4 <-> raid5,
 * raid6 -> raid5, raid1 of two <-> raid5 of two, raid0 <-> raid4/5, raid0
 * <-> raid10 near-2, raid1 -> raid0 (devices move between slots:
 * rf_array_takeover_slots()).  So a
 * raid1 or raid0 with 1.x superblocks has the walk too: it may become a
 * raid5 and grow.
 *
 * A write-intent bitmap stays (md keeps it): writes set the bits of their
 * rows in both geometries (services/bitmap.c), the data moves down only to
 * the bitmap's end (room_before()), and a resync a crash left due walks
 * the marked chunks once the reshape ended.  A raid10's bits count array
 * sectors: the bitmap covers the new geometry's before the reshape is
 * recorded (begin_fn(), as md's raid10_start_reshape resizes it).
 *
 * It does NOT: keep a partial parity log through a reshape (md refuses
 * one), go on while a device is being rebuilt (one found at assembly: it
 * waits for the rebuild), run a shrink or a level change in place through
 * the backup file (they need room to move the data), or restore a backup
 * file whose rows are off the new geometry's stripes, or whose two
 * sections (mdadm's md_backup_data-2) leave rows between them (refused,
 * naming the file).
 *
 * Pace: sync_speed_max (KiB of each member per second, as md counts), and
 * sync_speed_min while foreground IO is in flight or was within half a
 * second (md's yielding to it); sync_action "frozen" holds it.
 *
 * Member IO: one io_uring of its own, members in memory too (a mapping's
 * first touch of each page faults, and the walk touches each page once:
 * struct rf_ioq stream), buffers on huge pages where the kernel gives
 * them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "core/reshapework.h"
#include "raidfuse/iolog.h"
#include "raidfuse/backup.h"
#include "raidfuse/bgthread.h"
#include "raidfuse/fdio.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/layout.h"
#include "raidfuse/lockcheck.h"
#include "raidfuse/log.h"
#include "raidfuse/sync.h"
#include "raidfuse/util.h"
#include "raidfuse/reshape.h"
#include "services/sbstate.h"

/* Array data per window, at most. */
#define WINDOW_BYTES (16u << 20)
#define QDEPTH 64

struct reshape {
	struct rf_array *a;
	pthread_t thread;
	bool started;
	atomic_bool stop;
	/* The walk's thread only: */
	struct rf_ioq q;
	const struct rf_reshape_ops *ops;       /* the level's part (reshapework.h) */
	struct rf_reshape_work w;       /* its member IO, buffers and unit */
	char *data;                     /* the window's data, array order */
	/* The next window's old rows, read beside the writes of this one
	 * (forward, no member missing): [pf_x, pf_x + pf_n) array sectors
	 * in pf_data, good while pf_valid; a write admitted since that
	 * touches them clears it (hook_write_start(), any thread). */
	char *pf_data;
	uint64_t pf_x, pf_n;
	atomic_bool pf_valid;
	uint64_t gran;                  /* array sectors windows are whole multiples of */
	uint64_t end;                   /* array sectors of the new geometry */
	bool said_wait;
	int err;                        /* why the walk stopped; 0: done or stopped */
	int64_t pace_next_ms;           /* when the next window may start (pace()) */
	int64_t last_busy_ms;           /* foreground IO last seen */
	/* The position the superblocks hold (record()): rec_lock taken to
	 * move it; read by the write hook while rec_on (a walk runs). */
	pthread_mutex_t rec_lock;
	_Atomic uint64_t rec_pos;
	atomic_bool rec_on;
	/* rec_lock: */
	bool rec_back;                  /* the walk goes down (rec_pos only falls) */
	bool rec_done;                  /* the walk ended: nothing more is recorded */
	unsigned nrec, nrec_writes;     /* records this run, those a write asked for */
	/* The recorder: records rec_want (the walk's position after its
	 * last window) beside the next windows (a flush of every member
	 * takes as long as the writes since take to reach the media). */
	struct rf_bgthread recorder;
	_Atomic uint64_t rec_want;
	_Atomic int64_t rec_ms;         /* when the position was last recorded */
	/* mdadm's backup file of a reshape in place (rs->backup), the
	 * walk's thread only (and restore() before it starts): open while
	 * it runs (bk_fd; -1: none). */
	int bk_fd;
	char bk_path[PATH_MAX];
	bool bk_made;                   /* setup() made bk_path: it was not there */
	unsigned nbackups;              /* windows backed up this run */
};

/* md records a reshape's position at least this often (its 10 s). */
#define RECORD_MS 10000

/* A buffer for member IO; one of 2 MiB or more on huge pages where the
 * kernel gives them (each O_DIRECT transfer pins its pages, and the
 * parity pass walks them: on 4 KiB pages both pay per page). */
static char *alloc_aligned(size_t len)
{
	size_t huge = 2u << 20, n = (len + huge - 1) / huge * huge;
	void *p = NULL;

	if (len < huge)
		return posix_memalign(&p, 4096, len ? len : 4096) ? NULL : p;
	if (posix_memalign(&p, huge, n))
		return NULL;
	madvise(p, n, MADV_HUGEPAGE);
	return p;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Whether, on every member with old rows, the new rows from array sector
 * s up (the level's dev_first(), at the new data offset) start at or
 * above the end of the old rows of every array sector below base (its
 * dev_end() at the old data offset): a window going down to s writes
 * nothing a crash at base would still read. */
static bool fits_below(struct reshape *r, uint64_t s, uint64_t base)
{
	const struct rf_reshape *rs = rf_array_reshape_state(r->a);
	uint64_t nfirst = r->ops->dev_first(rf_array_geom(r->a), r->w.unit, s),
		 oend = base ? r->ops->dev_end(&rs->prev, r->w.unit, base - 1) : 0;
	int m;

	for (m = 0; m < rs->prev.raid_disks; m++) {
		const struct rf_dev *d = rf_dev_get(r->a, m);

		if (d->new_data_offset / 512 + nfirst < d->data_offset / 512 + oend)
			return false;
	}
	return true;
}

/* Whether, on every member with old rows, the new rows below array sector
 * e (the level's dev_end()) end at or below the first old row of every
 * array sector from base up (its dev_first()): a window up to e writes
 * nothing a crash at base would still read. */
static bool fits_at(struct reshape *r, uint64_t e, uint64_t base)
{
	const struct rf_reshape *rs = rf_array_reshape_state(r->a);
	uint64_t nend = r->ops->dev_end(rf_array_geom(r->a), r->w.unit, e - 1),
		 ofirst = r->ops->dev_first(&rs->prev, r->w.unit, base);
	int m;

	for (m = 0; m < rs->prev.raid_disks; m++) {
		const struct rf_dev *d = rf_dev_get(r->a, m);

		if (d->new_data_offset / 512 + nend > d->data_offset / 512 + ofirst)
			return false;
	}
	return true;
}

/* Granules a window may hold at most (WINDOW_BYTES of data). */
static uint64_t window_max(struct reshape *r)
{
	uint64_t k = WINDOW_BYTES / 512 / r->gran;

	return k ? k : 1;
}

/* Backwards (md's reshape_backwards: the data offsets move up): sectors
 * of array data the window ending at x may hold (whole granules below
 * x), 0 when even one would land on old rows not yet read: those of
 * every array sector below base, the position the superblocks hold (x
 * itself once recorded: the window's own old rows, read first but still
 * what a crash resumes from). */
static uint64_t window_below(struct reshape *r, uint64_t x, uint64_t base)
{
	uint64_t top = (x + r->gran - 1) / r->gran, lo = 1, hi = window_max(r), best = 0;

	if (hi > top)
		hi = top;
	/* The largest k whose window [(top - k) * gran, x) fits. */
	while (lo <= hi) {
		uint64_t k = lo + (hi - lo) / 2;

		if (fits_below(r, (top - k) * r->gran, base)) {
			best = k;
			lo = k + 1;
		} else {
			hi = k - 1;
		}
	}
	return best ? x - (top - best) * r->gran : 0;
}

/* Sectors of array data the window at x may hold (up to a granule's
 * end), 0 when even one would land on old rows a crash would still
 * read: those of every array sector from base, the position the
 * superblocks hold (x itself once recorded), up. */
static uint64_t window_at(struct reshape *r, uint64_t x, uint64_t base)
{
	uint64_t first = x / r->gran * r->gran, lo = 1, hi = window_max(r), best = 0;

	if (hi > (r->end - first + r->gran - 1) / r->gran)
		hi = (r->end - first + r->gran - 1) / r->gran;
	/* The largest k whose window [x, first + k * gran) fits. */
	while (lo <= hi) {
		uint64_t k = lo + (hi - lo) / 2, e = first + k * r->gran;

		if (fits_at(r, e < r->end ? e : r->end, base)) {
			best = k;
			lo = k + 1;
		} else {
			hi = k - 1;
		}
	}
	if (!best)
		return 0;
	return (first + best * r->gran < r->end ? first + best * r->gran : r->end) - x;
}

/* ---- mdadm's backup file (a reshape in place) ---- */

/* The array's uuid (its slots' superblocks) and their newest utime. */
static void array_ids(struct rf_array *a, uint8_t uuid[16], uint64_t *utime)
{
	int i;

	memset(uuid, 0, 16);
	*utime = 0;
	rf_devs_lock(a);
	for (i = 0; i < rf_array_nslots(a); i++) {
		const struct rf_dev *d = rf_dev_get(a, i);

		if (!d->sb_has)
			continue;
		memcpy(uuid, d->sb.uuid, 16);
		if (d->sb.utime > *utime)
			*utime = d->sb.utime;
	}
	rf_devs_unlock(a);
}

/* Into the backup file fd: the header naming array sectors [x, x + n)
 * (n 0: none), as mdadm lays a backup file out: the n sectors of data at
 * 4 KiB, flushed, then the header's copy after them and the header at
 * the file's start, flushed (the header at the start is what a restore
 * reads: until it is written, the one before still speaks).  0 or -errno. */
static int backup_put(struct rf_array *a, int fd, uint64_t x, uint64_t n, const char *data)
{
	struct rf_backup_sb b = { .version = 1, .mtime = (uint64_t)time(NULL), .devstart = RF_BACKUP_DATA_SECTOR,
				  .arraystart = x, .length = n };
	uint8_t hdr[RF_BACKUP_SB_BYTES];
	uint64_t utime;
	int ret = 0;

	array_ids(a, b.uuid, &utime);
	rf_backup_encode(&b, hdr);
	if (n) {
		ret = rf_pwrite_full(fd, data, n * 512, RF_BACKUP_DATA_SECTOR * 512);
		if (!ret)
			ret = rf_fsync_full(fd);
	}
	if (!ret)
		ret = rf_pwrite_full(fd, hdr, sizeof(hdr), (RF_BACKUP_DATA_SECTOR + n) * 512);
	if (!ret)
		ret = rf_pwrite_full(fd, hdr, sizeof(hdr), 0);
	/* RAIDFUSE_TEST_BREAK=reshape-backup-sync: the header and the data
	 * are left in the file's cache (a crash after the window's new rows
	 * may find neither). */
	if (!ret && !rf_test_break("reshape-backup-sync"))
		ret = rf_fsync_full(fd);
	return ret;
}

/* The backup file path, made if need be, opened for writing: the fd, or
 * -errno with why in err.  A file made here has its name made durable
 * before it is used: md/backup_file is written before md/raid_disks, so
 * no superblock records a reshape that needs the file before a power cut
 * would keep it (its data and header are flushed window by window).  A
 * file system that flushes no directories (EINVAL) is warned of. */
static int backup_open_path(const char *path, bool *madep, char *err, size_t errlen)
{
	bool made = false;
	int fd, ret;

	if (path[0] != '/') {
		snprintf(err, errlen, "backup file %s: not an absolute path", path);
		return -EINVAL;
	}
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		made = fd >= 0;
		if (fd < 0 && errno == EEXIST)
			fd = open(path, O_RDWR | O_CLOEXEC);
	}
	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "backup file %s: %s", path, strerror(e));
		return -e;
	}
	if (madep)
		*madep = made;
	/* TEST-ONLY FAULT (iolog.h): the name left to chance. */
	if (!made || rf_test_break("backup-name"))
		return fd;
	ret = rf_fsync_name(fd, path);
	if (ret == -EINVAL) {
		rf_warn("backup file %s: its directory cannot be flushed: a power cut may lose the file", path);
	} else if (ret) {
		snprintf(err, errlen, "backup file %s: flushing its directory: %s", path, strerror(-ret));
		close(fd);
		unlink(path);
		return ret;
	}
	return fd;
}

/* The walk needs its backup file no more: its position is recorded past
 * every window the file held, and no window ahead goes through it (a
 * grow past its critical section, or any reshape in place at its end).
 * The file is closed and removed, as mdadm's reshape_array() removes its
 * backup file once its monitor is done (a killed daemon leaves it), and
 * md/backup_file reads "none" again unless another file was written there
 * meanwhile: a later reshape in place needs a backup file named for it, as
 * mdadm's --backup-file is given for each grow.  The walk's thread only. */
static void backup_done(struct reshape *r, const char *why)
{
	if (r->bk_fd < 0)
		return;
	close(r->bk_fd);
	r->bk_fd = -1;
	if (unlink(r->bk_path) && errno != ENOENT) {
		rf_warn("%s: reshape: backup file %s not removed: %s", rf_array_name(r->a), r->bk_path,
			strerror(errno));
		return;
	}
	rf_info("%s: reshape: backup file %s removed (%s)", rf_array_name(r->a), r->bk_path, why);
	rf_array_drop_backup_file(r->a, r->bk_path);
}

/* Sectors of array data the window at x the backup file is to hold may
 * hold (up to a granule's end): its new rows land on its own old rows,
 * never on those of the sectors past it (which no backup holds), so as
 * many granules as that allows, WINDOW_BYTES at most; 0: not even one. */
static uint64_t window_backup(struct reshape *r, uint64_t x)
{
	uint64_t first = x / r->gran * r->gran, k, e;

	/* A grow's new rows fall behind its old ones as windows grow: the
	 * largest window fits first. */
	for (k = window_max(r); k > 0; k /= 2) {
		e = first + k * r->gran < r->end ? first + k * r->gran : r->end;
		if (e > x && fits_at(r, e, e))
			return e - x;
	}
	return 0;
}

/* The members an old row lacks: the faulty ones, and one a level change
 * added (absent in the previous geometry).  Faulty members change only
 * with writes drained or by a failure, which fails the window. */
static uint64_t old_missing(const struct rf_array *a)
{
	/* RAIDFUSE_TEST_BREAK=reshape-degraded: a failed member is read as
	 * if it were whole (what it missed since it failed comes back). */
	if (rf_test_break("reshape-degraded"))
		return rf_array_reshape_state(a)->prev_absent;
	return rf_array_faulty(a) | rf_array_reshape_state(a)->prev_absent;
}

/* Read [x, x + n) array sectors from the previous geometry into r->data
 * (zeros past the old array's end): what lies on members present first,
 * all at once, then what lay on missing ones, from the rest (the
 * level's). */
static int read_old(struct reshape *r, uint64_t x, uint64_t n)
{
	uint64_t miss = old_missing(r->a);
	int ret = r->ops->queue_old(&r->w, x, n, r->data, miss), ret2;

	ret2 = rf_reshape_io_wait(&r->w);
	ret = ret ? ret : ret2;
	if (!ret && miss && r->ops->fill_missing)
		ret = r->ops->fill_missing(&r->w, x, n, r->data, miss);
	return ret;
}

struct window {
	struct reshape *r;
	uint64_t x, n;                  /* array sectors [x, x + n) */
	uint64_t to;                    /* the position after it */
	bool backup;                    /* its old data goes to the backup file first */
	int bk_err;                     /* writing the backup file failed: -errno */
};

static uint64_t window_at(struct reshape *r, uint64_t x, uint64_t base);

/* Writes drained: move one window (steps 1-4 of the essay).  Its old rows
 * were read beside the last window's writes where nothing wrote them
 * since (pf_valid); the next window's are read beside its writes, going
 * forwards with every member there: they lie above this window's old
 * rows, which its new rows stay below (window_at()), and no write reaches
 * them while the writes are drained.  Those reads go first, then each new
 * row's writes as soon as the level has it (its parity computed).  Old rows read for a
 * larger window than this one (the recorded position held it back) serve
 * it all the same: the window starts where they do. */
static int move_window(void *arg)
{
	struct window *w = arg;
	struct reshape *r = w->r;
	const struct rf_reshape *rs = rf_array_reshape_state(r->a);
	uint64_t nx = w->to, nn = 0;
	int ret = 0;

	if (atomic_exchange(&r->pf_valid, false) && r->pf_x == w->x && r->pf_n >= w->n) {
		char *t = r->data;

		r->data = r->pf_data;
		r->pf_data = t;
	} else {
		ret = read_old(r, w->x, w->n);
	}
	if (ret)
		return ret;
	/* In the critical section: the old data to the backup file before a
	 * new row lands on it.  RAIDFUSE_TEST_BREAK=reshape-backup: the
	 * window goes on without it (a crash in it loses those rows). */
	if (w->backup && !rf_test_break("reshape-backup")) {
		w->bk_err = backup_put(r->a, r->bk_fd, w->x, w->n, r->data);
		if (w->bk_err)
			return w->bk_err;
	}
	if (!rs->backwards && !old_missing(r->a) && nx < r->end) {
		nn = window_at(r, nx, nx);
		if (nn && r->ops->queue_old(&r->w, nx, nn, r->pf_data, 0))
			nn = 0;
	}
	r->ops->queue_new(&r->w, w->x, w->n, r->data);
	ret = rf_reshape_io_wait(&r->w);
	if (!ret && w->backup && rf_test_halt("reshape-backup"))
		return -ECANCELED;
	if (!ret && nn) {
		r->pf_x = nx;
		r->pf_n = nn;
		atomic_store(&r->pf_valid, true);
	}
	if (!ret)
		rf_array_reshape_commit(r->a, w->to);
	return ret;
}

/* Step 4: the members flushed, pos recorded in every superblock as the
 * reshape's position, unless they hold it (or one further on) already or
 * the walk ended.  pos is one the array's position was at: every new row
 * below it (above it, going down) was written.  Called by the recorder
 * beside the walk, by the walk when its next window needs it, and by a
 * write to rows moved since the last record. */
static int record(struct reshape *r, uint64_t pos, bool by_write)
{
	uint64_t rec;
	int ret = 0;

	pthread_mutex_lock(&r->rec_lock);
	rec = atomic_load(&r->rec_pos);
	if (!r->rec_done && (r->rec_back ? pos < rec : pos > rec)) {
		/* RAIDFUSE_TEST_BREAK=reshape-record: the position moves in
		 * memory only, as if the superblocks need not know (a crash
		 * then resumes from an older position: writes since, to rows
		 * moved since, lost). */
		if (!rf_test_break("reshape-record"))
			ret = rf_sbstate_reshape(rf_array_sbstate(r->a), false, pos);
		if (!ret) {
			atomic_store(&r->rec_pos, pos);
			rf_array_set_reshape_recorded(r->a, pos);
		}
		r->nrec++;
		r->nrec_writes += by_write;
		r->rec_ms = rf_mono_ms();
	}
	pthread_mutex_unlock(&r->rec_lock);
	return ret;
}

/* After a window that ended at x: whether the window after the next one
 * would have to wait for a record (it may take less from the recorded
 * position than from its own), or md's 10 s passed: then the recorder
 * records x beside the next window. */
static bool record_soon(struct reshape *r, uint64_t x)
{
	uint64_t rec = atomic_load(&r->rec_pos), full, y;

	/* RAIDFUSE_TEST_BREAK=reshape-lazy (hook_write_start()): records
	 * only when the walk needs them, the rows unrecorded the most. */
	if (rec == x || rf_test_break("reshape-lazy"))
		return false;
	if (rf_mono_ms() - atomic_load(&r->rec_ms) >= RECORD_MS)
		return true;
	if (rf_array_reshape_state(r->a)->backwards) {
		full = window_below(r, x, x);
		if (!full || full >= x)
			return false;
		y = x - full;
		return window_below(r, y, rec) < window_below(r, y, y);
	}
	full = window_at(r, x, x);
	if (!full || x + full >= r->end)
		return false;
	y = x + full;
	return window_at(r, y, rec) < window_at(r, y, y);
}

static void recorder_fn(void *arg)
{
	struct reshape *r = arg;

	record(r, atomic_load(&r->rec_want), false);
}

struct finish {
	struct reshape *r;
	char err[256];
};

static int finish_fn(void *arg)
{
	struct finish *f = arg;
	int ret = rf_array_reshape_finish(f->r->a, f->err, sizeof(f->err));
	char why[256];

	/* A bitmap that counts array sectors covers the size the array
	 * serves from now on (begin_fn() resized it already, unless the
	 * reshape began elsewhere with another). */
	if (!ret && rf_bitmap_resize(rf_array_bitmap(f->r->a), rf_array_geom(f->r->a), false, why, sizeof(why)))
		rf_warn("%s: reshape: the bitmap was not resized: %s", rf_array_name(f->r->a), why);
	if (!ret) {
		/* One geometry again: no write has rows to wait for, and the
		 * recorder has no more to write (its position would undo the
		 * end). */
		atomic_store(&f->r->rec_on, false);
		pthread_mutex_lock(&f->r->rec_lock);
		f->r->rec_done = true;
		pthread_mutex_unlock(&f->r->rec_lock);
		ret = rf_sbstate_reshape(rf_array_sbstate(f->r->a), true, 0);
	}
	else
		rf_err("%s: reshape: %s", rf_array_name(f->r->a), f->err);
	return ret;
}

static bool stopping(struct reshape *r)
{
	return atomic_load(&r->stop);
}

/* md's sync_action "frozen" holds a reshape where it stands; "idle" (or
 * "reshape") lets it go on. */
static bool frozen(struct reshape *r)
{
	struct rf_sync_status st;

	rf_sync_get(r->a, &st);
	return st.action == RF_SYNC_FROZEN;
}

/* Foreground IO in flight now, or lately (md counts its own IO against
 * the members'; here the requests past the barrier). */
#define BUSY_HOLD_MS 500

static bool fg_busy(struct reshape *r)
{
	int64_t t = rf_mono_ms();

	if (rf_array_fg_busy(r->a))
		r->last_busy_ms = t;
	return t - r->last_busy_ms < BUSY_HOLD_MS;
}

/* md's pace, in KiB of each member per second: sync_speed_max, or
 * sync_speed_min while foreground IO runs (the reshape yields to it, as
 * md's does).  dev_sectors moved just now: sleep until the schedule
 * allows the next window. */
static void pace(struct reshape *r, uint64_t dev_sectors)
{
	struct rf_sync_status st;
	int64_t t = rf_mono_ms();
	unsigned rate;

	rf_sync_get(r->a, &st);
	rate = fg_busy(r) ? st.speed_min : st.speed_max;
	if (!rate)
		return;
	if (r->pace_next_ms < t - 1000)
		r->pace_next_ms = t - 1000;     /* an idle spell earns at most a second */
	r->pace_next_ms += (int64_t)(dev_sectors / 2 * 1000 / rate);
	/* frozen: held at once, as md's freeze stops its thread */
	while (!stopping(r) && !frozen(r) && rf_mono_ms() < r->pace_next_ms) {
		int64_t left = r->pace_next_ms - rf_mono_ms();

		sleep_ms(left > 50 ? 50 : (int)left);
		/* Foreground IO gone quiet, or rates changed: look again. */
		rf_sync_get(r->a, &st);
		if (!fg_busy(r) && st.speed_max && r->pace_next_ms - rf_mono_ms() >
						     (int64_t)(dev_sectors / 2 * 1000 / st.speed_max))
			r->pace_next_ms = rf_mono_ms() + (int64_t)(dev_sectors / 2 * 1000 / st.speed_max);
	}
}

/* The buffers for the reshape under way (sized by its geometries). */
static void free_bufs(struct reshape *r)
{
	atomic_store(&r->pf_valid, false);
	free(r->w.mios);
	free(r->data);
	free(r->pf_data);
	free(r->w.par);
	free(r->w.zero);
	free(r->w.scratch);
	r->w.mios = NULL;
	r->data = r->pf_data = r->w.par = r->w.zero = r->w.scratch = NULL;
	if (r->bk_fd >= 0)
		close(r->bk_fd);
	r->bk_fd = -1;
}

static int setup(struct reshape *r)
{
	const struct rf_reshape *rs = rf_array_reshape_state(r->a);
	const struct rf_geom *g = rf_array_geom(r->a);
	struct rf_geom t = *g;
	uint64_t win, nmios;
	size_t par, scratch;
	char why[256];

	free_bufs(r);
	r->err = 0;
	r->said_wait = false;
	r->ops = rf_array_reshape_ops(r->a);
	if (!r->ops)
		return -EOPNOTSUPP;
	r->w.a = r->a;
	r->w.ioq = &r->q;
	r->w.unit = g->chunk_sectors > rs->prev.chunk_sectors ? g->chunk_sectors : rs->prev.chunk_sectors;
	r->gran = r->ops->granule(g, r->w.unit);
	/* The new geometry's own size (the array serves the smaller of the
	 * two until the end). */
	if (rf_geom_init(&t, why, sizeof(why)))
		return -EINVAL;
	r->end = t.array_sectors / r->gran * r->gran;
	win = window_max(r) * r->gran;
	r->ops->bufs(g, &rs->prev, r->w.unit, win, &par, &scratch);
	/* Reads: one per old chunk of this window and the next; writes: at
	 * most every member per new chunk; a row's chunks for a missing one. */
	nmios = 2 * (win / rs->prev.chunk_sectors + 2) + (win / g->chunk_sectors + 2) * (uint64_t)g->raid_disks +
		(uint64_t)rs->prev.raid_disks;
	r->w.mios = calloc(nmios, sizeof(*r->w.mios));
	r->data = alloc_aligned(win * 512);
	r->pf_data = alloc_aligned(win * 512);
	r->w.par = alloc_aligned(par);
	r->w.zero = alloc_aligned(r->w.unit * 512);
	r->w.scratch = alloc_aligned(scratch);
	if (!r->w.mios || !r->data || !r->pf_data || !r->w.par || !r->w.zero || !r->w.scratch) {
		free_bufs(r);
		return -ENOMEM;
	}
	memset(r->w.zero, 0, r->w.unit * 512);
	r->nbackups = 0;
	/* A reshape in place: its backup file, for the windows of its
	 * critical section. */
	if (rs->backup && !rs->backwards) {
		int fd = -ENOENT;

		if (rf_array_backup_file(r->a, r->bk_path, sizeof(r->bk_path)))
			fd = backup_open_path(r->bk_path, &r->bk_made, why, sizeof(why));
		else
			snprintf(why, sizeof(why), "no backup file set");
		if (fd < 0) {
			rf_err("%s: reshape: the data stays in place and needs mdadm's backup file: %s",
			       rf_array_name(r->a), why);
			free_bufs(r);
			return fd;
		}
		r->bk_fd = fd;
	}
	return 0;
}

static int takeover(struct rf_array *a, int level, char *err, size_t errlen);

/* The reshape under way, to its end (or until the walk stops). */
static void run(struct reshape *r)
{
	struct rf_array *a = r->a;
	const struct rf_reshape *rs = rf_array_reshape_state(a);
	struct finish fin = { .r = r };
	int64_t t0 = rf_mono_ms();
	uint64_t moved = 0, rec, full, grew_from = 0;
	int ret;

	ret = setup(r);
	if (ret) {
		if (ret == -ENOMEM || ret == -EOPNOTSUPP)
			rf_err("%s: reshape: %s", rf_array_name(a),
			       ret == -ENOMEM ? "no memory for its buffers" : "the level has no reshape walk");
		r->err = ret;
		return;
	}
	r->pace_next_ms = rf_mono_ms();
	/* Where it starts is what the superblocks hold (assembly read it,
	 * or the grow recorded it). */
	pthread_mutex_lock(&r->rec_lock);
	atomic_store(&r->rec_pos, rs->position);
	atomic_store(&r->rec_want, rs->position);
	r->rec_back = rs->backwards;
	r->rec_done = false;
	r->rec_ms = rf_mono_ms();
	r->nrec = r->nrec_writes = 0;
	pthread_mutex_unlock(&r->rec_lock);
	atomic_store_explicit(&r->rec_on, true, memory_order_release);
	rf_info("%s: reshape: from array sector %" PRIu64 " to %" PRIu64 " (%d to %d members)",
		rf_array_name(a), rs->position, rs->backwards ? 0 : r->end, rs->prev.raid_disks,
		rf_array_geom(a)->raid_disks);
	while (!stopping(r) && (rs->backwards ? rs->position > 0 : rs->position < r->end)) {
		struct window w = { .r = r, .x = rs->position };

		/* Moving from here until it looks again (rf_reshape_hold()
		 * waits for that): set before it looks at sync_action, so
		 * that a freeze it does not see finds it set. */
		rf_array_set_reshape_moving(a, true);
		if (frozen(r)) {
			rf_array_set_reshape_moving(a, false);
			sleep_ms(100);
			r->pace_next_ms = rf_mono_ms();
			continue;
		}
		/* Degraded, it goes on (md's does): a missing member's old
		 * chunks are computed from their rows, its new ones left out;
		 * spares take failed slots once it ended.  Past what the level
		 * survives (or with a device being rebuilt, which a reshape
		 * found at assembly may have) it waits. */
		if (rf_array_failed(a) || rf_array_recovering(a)) {
			rf_array_set_reshape_moving(a, false);
			if (!r->said_wait)
				rf_warn("%s: reshape: waits at array sector %" PRIu64 ": %s", rf_array_name(a), w.x,
					rf_array_failed(a) ? "the array has failed" : "a device is being rebuilt");
			r->said_wait = true;
			sleep_ms(100);
			continue;
		}
		r->said_wait = false;
		/* The recorder records each window's end beside the next
		 * windows; the walk records here itself (waiting for the
		 * recorder's write under way) where the window it may take
		 * from the recorded position is under half what it may take
		 * from its own (or md's 10 s passed), and before a window
		 * the backup file holds (the critical section of a grow in
		 * place: no window fits; the file's header then speaks of
		 * the rows at the recorded position only). */
		rec = atomic_load(&r->rec_pos);
		/* A grow whose recorded position is past its critical
		 * section (windows fit there by themselves: a crash resumes
		 * there with no restore) is done with its backup file: with
		 * more data members the new rows only fall further behind
		 * the old ones. */
		if (r->bk_fd >= 0 && !rs->backwards && rf_array_geom(a)->data_disks > rs->prev.data_disks &&
		    window_at(r, rec, rec))
			backup_done(r, "past the critical section");
		full = rs->backwards ? window_below(r, w.x, w.x) : window_at(r, w.x, w.x);
		w.backup = !full && !rs->backwards && r->bk_fd >= 0;
		if (rec != w.x && (w.backup ||
				   (rs->backwards ? window_below(r, w.x, rec) : window_at(r, w.x, rec)) < (full + 1) / 2 ||
				   rf_mono_ms() - r->rec_ms >= RECORD_MS)) {
			ret = record(r, w.x, false);
			if (ret) {
				rf_warn("%s: reshape: recording its position (array sector %" PRIu64 "): %s",
					rf_array_name(a), w.x, strerror(-ret));
				sleep_ms(100);
				continue;
			}
			rec = w.x;
		}
		if (rs->backwards) {
			w.n = window_below(r, w.x, rec);
			w.x -= w.n;
			w.to = w.x;
		} else {
			w.n = window_at(r, w.x, rec);
			w.to = w.x + w.n;
		}
		if (w.backup) {
			w.n = window_backup(r, w.x);
			w.to = w.x + w.n;
			w.backup = w.n != 0;
		}
		if (!w.n) {
			rf_err("%s: reshape: stopped at array sector %" PRIu64 ": the next new rows would land on "
			       "old rows not yet read (a reshape that needs mdadm's backup file)", rf_array_name(a),
			       w.x);
			r->err = -ENOSPC;
			return;
		}
		/* A backup window's new rows land on its own old rows, which
		 * reads would find until the position moves: every request
		 * drained for it. */
		ret = w.backup ? rf_barrier_quiesced_all(a, move_window, &w) : rf_barrier_quiesced(a, move_window, &w);
		if (ret == -ECANCELED && w.backup) {
			rf_warn("%s: reshape: halted after the new rows of the window at array sector %" PRIu64
				" its backup file holds (RAIDFUSE_TEST_HALT)", rf_array_name(a), w.x);
			r->err = ret;
			return;
		}
		if (w.bk_err) {
			rf_err("%s: reshape: stopped at array sector %" PRIu64 ": writing backup file %s: %s",
			       rf_array_name(a), w.x, r->bk_path, strerror(-w.bk_err));
			r->err = w.bk_err;
			return;
		}
		if (ret) {
			/* A member failed (it is marked): wait for it as above. */
			rf_warn("%s: reshape: window at array sector %" PRIu64 ": %s", rf_array_name(a), w.x,
				strerror(-ret));
			continue;
		}
		moved += w.n;
		atomic_store(&r->rec_want, w.to);
		if (w.backup) {
			/* Recorded before the next window's backup replaces
			 * this one (a failure: the next window records first). */
			r->nbackups++;
			ret = record(r, w.to, false);
			if (ret)
				rf_warn("%s: reshape: recording its position (array sector %" PRIu64 "): %s",
					rf_array_name(a), w.to, strerror(-ret));
			else if (window_at(r, w.to, w.to))
				rf_info("%s: reshape: past its critical section at array sector %" PRIu64 " (%u "
					"window(s) through backup file %s)", rf_array_name(a), w.to, r->nbackups,
					r->bk_path);
		} else if (record_soon(r, w.to)) {
			rf_bg_kick(&r->recorder);
		}
		pace(r, r->ops->dev_end(rf_array_geom(a), r->w.unit, w.x + w.n - 1) -
			r->ops->dev_first(rf_array_geom(a), r->w.unit, w.x));
	}
	if (stopping(r))
		return;
	/* md's raid10_finish_reshape: a raid10 that grew resyncs from its
	 * old end, which with a bitmap walks only the chunks the grow marked
	 * as needing it (begin_fn(), as md's bitmap resize marks them).
	 * Without a bitmap nothing is due: the walk wrote every copy of the
	 * grown rows. */
	if (rs->prev.level == 10 && rf_array_geom(a)->level == 10 && !rs->backwards && rf_array_bitmap(a) &&
	    r->end > rs->prev.array_sectors)
		grew_from = rs->prev.array_sectors;
	ret = rf_barrier_quiesced_all(a, finish_fn, &fin);
	if (ret) {
		r->err = ret;
		return;
	}
	/* The superblocks say it ended: a relayout in place, whose every
	 * window went through the file, is done with it now. */
	backup_done(r, "the reshape ended");
	pthread_mutex_lock(&r->rec_lock);
	rf_info("%s: reshape done: %d members, %" PRIu64 " bytes (%" PRIu64 " MiB moved in %.1f s, its "
		"position recorded %u times, %u of them for writes to rows moved since)",
		rf_array_name(a), rf_array_geom(a)->raid_disks, rf_array_size(a), moved >> 11,
		(double)(rf_mono_ms() - t0) / 1000.0, r->nrec + 1, r->nrec_writes);
	pthread_mutex_unlock(&r->rec_lock);
	rf_array_resized(a);
	rf_array_reshape_ended(a);
	/* A raid0 grown through a raid4 is a raid0 again (its empty P
	 * slot goes), before a spare could take that slot. */
	if (rf_array_reshape_then(a) >= 0) {
		char err[512];
		int level = rf_array_reshape_then(a);

		rf_array_set_reshape_then(a, -1);
		ret = takeover(a, level, err, sizeof(err));
		if (ret)
			rf_warn("%s: the reshape ended a raid%d, not the raid%d it was to become: %s (md/level "
				"takes it)", rf_array_name(a), rf_array_geom(a)->level, level, err);
	}
	if (grew_from) {
		struct rf_sync_status st;

		rf_sync_get(a, &st);
		if (st.resync_cp > grew_from)
			rf_sync_set_resync_cp(a, grew_from);
	}
	/* A resync due since a crash mid-reshape runs now, in the one
	 * geometry left, as md's does after a reshape. */
	if (!frozen(r))
		rf_sbstate_start_resync(a, false);
	/* A slot that failed during it meets its spare now. */
	rf_mgmt_kick(a);
}

static void *walk_main(void *arg)
{
	struct reshape *r = arg;
	struct rf_array *a = r->a;
	uint64_t pos;
	bool back;
	int ret;

	rf_thread_name("rf-reshape");
	ret = rf_array_ioq_open(a, &r->q, QDEPTH);
	if (ret) {
		rf_err("%s: reshape: member IO queue: %s", rf_array_name(a), strerror(-ret));
		return NULL;
	}
	r->q.stream = true;     /* each member page read and written once */
	/* A reshape begins at assembly or with a grow (rf_reshape_grow()),
	 * and runs once the array serves; one that stopped for good (r->err)
	 * waits for the next assembly. */
	while (!stopping(r)) {
		if (!rf_array_serving(a) || r->err || !rf_array_reshape(a, &pos, &back)) {
			sleep_ms(50);
			continue;
		}
		run(r);
		rf_array_set_reshape_moving(a, false);
	}
	rf_ioq_destroy(&r->q);
	return NULL;
}

static int hook_start(void *priv)
{
	struct reshape *r = priv;
	int ret = rf_bg_start(&r->recorder);

	if (ret)
		return ret;
	ret = -pthread_create(&r->thread, NULL, walk_main, r);
	if (ret) {
		rf_bg_stop(&r->recorder);
		return ret;
	}
	r->started = true;
	return 0;
}

static void hook_stop(void *priv)
{
	struct reshape *r = priv;

	atomic_store(&r->stop, true);
	if (r->started)
		pthread_join(r->thread, NULL);
	r->started = false;
	rf_bg_stop(&r->recorder);
}

static void hook_close(void *priv)
{
	struct reshape *r = priv;

	hook_stop(r);
	free_bufs(r);
	rf_bg_destroy(&r->recorder);
	pthread_mutex_destroy(&r->rec_lock);
	free(r);
}

/* A write admitted (it counts at the barrier, so no window moves until it
 * ended): the next window's old rows read ahead are stale if it touches
 * them; rows moved since the position was last recorded are recorded
 * first (a crash would read them from the old geometry). */
static int hook_write_start(void *priv, uint64_t off, uint64_t len)
{
	struct reshape *r = priv;
	uint64_t s = off / 512, e = (off + len + 511) / 512, pos, rec, lo, hi;

	/* RAIDFUSE_TEST_BREAK=reshape-prefetch: what was read ahead is kept
	 * (the write is lost when that window moves). */
	if (atomic_load_explicit(&r->pf_valid, memory_order_acquire) && s < r->pf_x + r->pf_n && e > r->pf_x &&
	    !rf_test_break("reshape-prefetch"))
		atomic_store(&r->pf_valid, false);
	if (!atomic_load_explicit(&r->rec_on, memory_order_acquire))
		return 0;
	pos = rf_array_reshape_state(r->a)->position;
	rec = atomic_load(&r->rec_pos);
	lo = pos < rec ? pos : rec;
	hi = pos < rec ? rec : pos;
	/* RAIDFUSE_TEST_BREAK=reshape-lazy: the write goes on unrecorded
	 * (a crash then loses it: the old geometry is read there). */
	if (s >= hi || e <= lo || rf_test_break("reshape-lazy"))
		return 0;
	return record(r, pos, true) ? -EIO : 0;
}

static const struct rf_hooks reshape_hooks = {
	.name = "reshape",
	.write_start = hook_write_start,
	.start = hook_start,
	.stop = hook_stop,
	.close = hook_close,
};

/* What the slots' superblocks carry: their feature bits together, and
 * whether any is 0.90.  (They change with every update, under the device
 * lock: services/sbstate.c.) */
static uint32_t sb_features(struct rf_array *a, bool *v090)
{
	uint32_t f = 0;
	int i;

	*v090 = false;
	rf_devs_lock(a);
	for (i = 0; i < rf_array_nslots(a); i++) {
		const struct rf_dev *d = rf_dev_get(a, i);

		if (!d->sb_has)
			continue;
		*v090 |= d->sb.kind == RF_SB_090;
		f |= d->sb.feature_map;
	}
	rf_devs_unlock(a);
	return f;
}

/* Why no walk could ever run here (whatever the level), or NULL. */
static const char *cannot_walk(struct rf_array *a)
{
	bool v090;

	if (!rf_array_sbstate(a))
		return "no superblocks to record its position in";
	sb_features(a, &v090);
	return v090 ? "0.90 metadata" : NULL;
}

/* Why no reshape can run here, or NULL. */
static const char *cannot_reshape(struct rf_array *a)
{
	const char *why;
	uint32_t f;
	bool v090;

	if (!rf_array_reshape_ops(a))
		return "raidfuse reshapes raid4/5/6 and raid10 only";
	why = cannot_walk(a);
	if (why)
		return why;
	f = sb_features(a, &v090);
	/* md's ppl_init_log(): "PPL is not compatible with reshape". */
	if (f & (RF_SB_FEAT_PPL | RF_SB_FEAT_MULTI_PPL))
		return "the array keeps a partial parity log";
	return NULL;
}

/* At assembly, before the array serves: a grow in place found inside its
 * critical section (the position's new rows would land on its own old
 * rows) takes up its backup file as mdadm's Grow_restart does.  A header
 * of this array (uuid, checksums) whose rows end at or below the position
 * is stale (the walk writes the backup before any new row of a window, so
 * the old rows at the position are whole) and changes nothing.  One that
 * starts at or below the position and ends past it, written no more than
 * 2 h before the superblocks' last update and no more than 10 min after
 * (mdadm's window), has its rows written in the new geometry, flushed,
 * and the position recorded at its end; mdadm's two sections
 * (md_backup_data-2, each its own data in the file) count as one span when
 * one follows the other, each written back from its own data.  Anything
 * else (no file, no header of this array, a header past the position or
 * off the new geometry's stripes, two sections apart) is refused: 0, or
 * -errno with why in err (the array is not served). */
static int restore(struct reshape *r, char *err, size_t errlen)
{
	struct rf_array *a = r->a;
	const struct rf_reshape *rs = rf_array_reshape_state(a);
	uint64_t pos = rs->position, lo, hi, utime, x, n;
	uint8_t hdr[RF_BACKUP_SB_BYTES], copy[RF_BACKUP_SB_BYTES], uuid[16];
	char path[PATH_MAX], why[PATH_MAX + 512];
	struct rf_backup_section sec[2];
	struct rf_backup_sb b;
	struct rf_ioq q;
	int fd = -1, ret, nsec, i;

	if (!rs->active || !rs->backup || rs->backwards)
		return 0;
	ret = setup(r);
	if (ret) {
		snprintf(err, errlen, "%s: reshape: %s", rf_array_name(a),
			 ret == -ENOMEM ? "no memory for its buffers" : "its backup file cannot be opened");
		return ret;
	}
	if (window_at(r, pos, pos)) {
		free_bufs(r);
		return 0;
	}
	snprintf(path, sizeof(path), "%s", r->bk_path);
	if (r->bk_made) {
		/* Made empty just now: the file that holds the critical
		 * section is somewhere else (a typo in --backup-file). */
		unlink(path);
		snprintf(why, sizeof(why), "%s: %s", path, strerror(ENOENT));
		ret = -ENOENT;
		goto refuse;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ret = fd < 0 ? -errno : rf_pread_full(fd, hdr, sizeof(hdr), 0);
	if (ret) {
		snprintf(why, sizeof(why), "%s: %s", path, strerror(-ret));
		goto refuse;
	}
	ret = rf_backup_decode(hdr, path, &b, why, sizeof(why));
	if (ret)
		goto refuse;
	array_ids(a, uuid, &utime);
	ret = -EINVAL;
	if (memcmp(b.uuid, uuid, 16)) {
		snprintf(why, sizeof(why), "%s: a backup of another array (its uuid differs)", path);
		goto refuse;
	}
	rf_backup_span(&b, &lo, &hi);
	if (hi <= pos) {
		rf_info("%s: reshape: backup file %s holds array sectors [%" PRIu64 ", %" PRIu64 "), at or below "
			"the position %" PRIu64 ": nothing to restore", rf_array_name(a), path, lo, hi, pos);
		ret = 0;
		goto out;
	}
	if (lo > pos) {
		snprintf(why, sizeof(why), "%s holds array sectors [%" PRIu64 ", %" PRIu64 "), past the position %"
			 PRIu64 ": not this reshape's backup", path, lo, hi, pos);
		goto refuse;
	}
	if (utime > b.mtime + 2 * 3600 || utime + 600 < b.mtime) {
		snprintf(why, sizeof(why), "%s was written at %" PRIu64 ", the superblocks at %" PRIu64 ": too far "
			 "apart to be this reshape's backup (mdadm's too-old timestamp)", path, b.mtime, utime);
		goto refuse;
	}
	/* mdadm's two parts (md_backup_data-2) are windows one after the
	 * other: together one span, restored as one. */
	nsec = rf_backup_sections(&b, sec);
	if (nsec == 2 && sec[0].arraystart + sec[0].length != sec[1].arraystart) {
		snprintf(why, sizeof(why), "%s holds array sectors [%" PRIu64 ", %" PRIu64 ") and [%" PRIu64 ", %"
			 PRIu64 "): two sections with rows between them that it does not hold", path,
			 sec[0].arraystart, sec[0].arraystart + sec[0].length, sec[1].arraystart,
			 sec[1].arraystart + sec[1].length);
		goto refuse;
	}
	if (lo % r->gran || (nsec == 2 && sec[1].arraystart % r->gran) || (hi % r->gran && hi != r->end) ||
	    hi > r->end) {
		snprintf(why, sizeof(why), "%s holds array sectors [%" PRIu64 ", %" PRIu64 ")%s: not whole stripes "
			 "of the new geometry (%" PRIu64 " sectors), which raidfuse restores", path, lo, hi,
			 nsec == 2 ? " in two sections" : "", r->gran);
		goto refuse;
	}
	/* The header's copy after the data, where one is (raidfuse's; mdadm's
	 * own backup files have none): the same, or the backup was being
	 * written. */
	if (b.version == 1 && !rf_pread_full(fd, copy, sizeof(copy), (b.devstart + b.length) * 512) &&
	    !memcmp(copy, "md_backup_data", 14) && memcmp(copy, hdr, 100)) {
		snprintf(why, sizeof(why), "%s: the header's copy after the data differs from the header", path);
		goto refuse;
	}
	/* RAIDFUSE_TEST_BREAK=reshape-restore: the backup is not written
	 * back (the walk goes on from rows its last window overwrote). */
	if (rf_test_break("reshape-restore")) {
		ret = 0;
		goto out;
	}
	ret = rf_array_inline_ioq_open(a, &q, QDEPTH);
	if (ret) {
		snprintf(why, sizeof(why), "member IO queue: %s", strerror(-ret));
		goto refuse;
	}
	r->w.ioq = &q;
	for (i = 0; !ret && i < nsec; i++) {
		uint64_t end = sec[i].arraystart + sec[i].length;

		for (x = sec[i].arraystart; !ret && x < end; x += n) {
			n = end - x < window_max(r) * r->gran ? end - x : window_max(r) * r->gran;
			ret = rf_pread_full(fd, r->data, n * 512, (sec[i].devstart + (x - sec[i].arraystart)) * 512);
			if (ret) {
				snprintf(why, sizeof(why), "%s: read: %s", path, strerror(-ret));
				break;
			}
			r->ops->queue_new(&r->w, x, n, r->data);
			ret = rf_reshape_io_wait(&r->w);
			if (ret)
				snprintf(why, sizeof(why), "writing its rows back: %s", strerror(-ret));
		}
	}
	rf_ioq_destroy(&q);
	r->w.ioq = &r->q;
	if (ret)
		goto refuse;
	/* The members flushed, then the position at the backup's end. */
	ret = rf_sbstate_reshape(rf_array_sbstate(a), false, hi);
	if (ret) {
		snprintf(why, sizeof(why), "recording the position %" PRIu64 ": %s", hi, strerror(-ret));
		goto refuse;
	}
	rf_array_reshape_restored(a, hi);
	rf_info("%s: reshape: restored array sectors [%" PRIu64 ", %" PRIu64 ") from backup file %s (its critical "
		"section), the position now %" PRIu64, rf_array_name(a), lo, hi, path, hi);
	goto out;
refuse:
	snprintf(err, errlen, "%s: reshape at array sector %" PRIu64 " is inside its critical section and cannot "
		 "be restored: %s", rf_array_name(a), pos, why);
out:
	if (fd >= 0)
		close(fd);
	free_bufs(r);
	return ret;
}

/* Every raid0/1/4/5/6/10 array served read-write with 1.x superblocks has
 * the walk (idle until a reshape is under way); a reshape found at
 * assembly that it cannot continue leaves the array read-only. */
static int service_open(struct rf_array *a, const struct rf_config *cfg, char *err, size_t errlen)
{
	const struct rf_reshape *rs = rf_array_reshape_state(a);
	struct reshape *r;
	const char *why;
	int ret;

	(void)cfg;
	if (rf_array_readonly(a))
		return 0;
	/* A raid0 or raid1 may become a raid4/5 (takeover()) and grow. */
	why = cannot_reshape(a);
	if (why && !rs->active && (rf_array_geom(a)->level == 0 || rf_array_geom(a)->level == 1))
		why = cannot_walk(a);
	if (why) {
		if (rs->active)
			rf_array_reshape_readonly(a, why);
		return 0;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->a = a;
	r->bk_fd = -1;
	pthread_mutex_init(&r->rec_lock, NULL);
	rf_lock_rank(&r->rec_lock, RF_LOCK_RESHAPE, "reshape record lock");
	ret = rf_bg_init(&r->recorder, "rf-reshape-rec", 0, recorder_fn, r);
	if (ret) {
		snprintf(err, errlen, "%s: the reshape's recorder: %s", rf_array_name(a), strerror(-ret));
		pthread_mutex_destroy(&r->rec_lock);
		free(r);
		return ret;
	}
	ret = restore(r, err, errlen);
	if (!ret) {
		ret = rf_array_add_hooks(a, &reshape_hooks, r);
		if (ret)
			snprintf(err, errlen, "%s: no room for the reshape's hooks", rf_array_name(a));
	}
	if (ret) {
		free_bufs(r);
		rf_bg_destroy(&r->recorder);
		pthread_mutex_destroy(&r->rec_lock);
		free(r);
	}
	return ret;
}

int rf_reshape_set_backup_file(struct rf_array *a, const char *path, char *err, size_t errlen)
{
	int fd, ret;

	err[0] = '\0';
	if (path) {
		fd = backup_open_path(path, NULL, err, errlen);
		if (fd < 0)
			return fd;
		close(fd);
	}
	ret = rf_array_set_backup_file(a, path);
	if (ret)
		snprintf(err, errlen, "no memory");
	return ret;
}

bool rf_reshape_backup_file(struct rf_array *a, char *buf, size_t len)
{
	return rf_array_backup_file(a, buf, len);
}

const struct rf_service rf_reshape_service = { .name = "reshape", .open = service_open };

/* ---- a grow begins ---- */

struct begin {
	struct rf_geom to, from;        /* the new geometry and the previous one */
	uint64_t prev_absent;
	int first;                      /* the first slot a spare takes */
	int last;                       /* the slot after the last one a spare takes (0: to's count) */
	bool raid0;                     /* a raid0 grown through a raid4 (grow_raid0()) */
	int64_t move;                   /* sectors every data offset moves (lower: negative) */
	bool backwards;                 /* md's reshape_backwards (a shrink) */
	bool may_backup;                /* a grow whose backup file is set (rf_reshape_grow()) */
	bool backup;                    /* plan(): the data stays, the backup file covers it */
	char *err;
	size_t errlen;
	struct rf_array *a;
};

static int begin_fn(void *arg)
{
	struct begin *b = arg;
	struct rf_array *a = b->a;
	int k, j, ret;

	/* The spares that take the new slots go right after the slots. */
	rf_devs_lock(a);
	for (k = b->first; k < (b->last ? b->last : b->to.raid_disks); k++) {
		for (j = k; j < rf_devs_count(a) && rf_dev_get(a, j)->flags != RF_DEV_SPARE; j++)
			;
		if (j < rf_devs_count(a))
			rf_dev_swap(a, k, j);
	}
	rf_devs_unlock(a);
	/* A bitmap that counts array sectors (raid10's) covers the new
	 * geometry first, as md_bitmap_resize() at raid10_start_reshape: a
	 * crash before the superblocks record the reshape finds one larger
	 * than the array, which the next assembly takes at the array's size.
	 * The chunks a grow adds need a resync, as md marks them: kernel md
	 * continuing the reshape leaves their copies as they were and
	 * resyncs them after (so does the walk: walk()'s end).
	 * RAIDFUSE_TEST_BREAK=reshape-bitmap-size: the bitmap keeps the old
	 * size. */
	ret = rf_test_break("reshape-bitmap-size") ? 0 :
	      rf_bitmap_resize(rf_array_bitmap(a), &b->to, true, b->err, b->errlen);
	if (ret)
		return ret;
	ret = rf_array_reshape_begin(a, &b->to, &b->from, b->prev_absent, b->move, b->backwards, b->backup, b->err,
				     b->errlen);
	if (ret) {
		char why[256];

		/* Not begun: the bitmap back to the array's size. */
		if (rf_bitmap_resize(rf_array_bitmap(a), rf_array_geom(a), false, why, sizeof(why)))
			rf_warn("%s: the bitmap's size was not put back: %s", rf_array_name(a), why);
		return ret;
	}
	ret = rf_sbstate_reshape_start(rf_array_sbstate(b->a), (int32_t)b->move);
	if (ret)
		snprintf(b->err, b->errlen, "recording the reshape in the superblocks failed: %s", strerror(-ret));
	return ret;
}

/* Sectors free before device d's data (a 1.1/1.2 superblock, its bitmap
 * of bitmap_sectors and its bad block log sit before it; 1.0's after it). */
static uint64_t room_before(const struct rf_dev *d, uint64_t bitmap_sectors)
{
	uint64_t doff = d->data_offset / 512, end;

	if (!d->sb_has || d->sb.sb_offset >= doff)
		return doff;
	end = d->sb.sb_offset + 8;
	/* RAIDFUSE_TEST_BREAK=reshape-bitmap-room: the data may move over
	 * the bitmap. */
	if (d->sb.bitmap && d->sb.bitmap_offset > 0 && !rf_test_break("reshape-bitmap-room") &&
	    d->sb.sb_offset + (uint64_t)d->sb.bitmap_offset + bitmap_sectors > end)
		end = d->sb.sb_offset + (uint64_t)d->sb.bitmap_offset + bitmap_sectors;
	if (d->sb.bblog_size && d->sb.bblog_offset > 0 && d->sb.sb_offset + (uint64_t)d->sb.bblog_offset +
								   d->sb.bblog_size > end)
		end = d->sb.sb_offset + (uint64_t)d->sb.bblog_offset + d->sb.bblog_size;
	return doff > end ? doff - end : 0;
}

struct mirrors {
	struct rf_array *a;
	int raid_disks;
	char *err;
	size_t errlen;
};

static int mirrors_fn(void *arg)
{
	struct mirrors *m = arg;
	int ret;

	if (m->raid_disks < rf_array_nslots(m->a))
		ret = rf_array_remove_mirrors(m->a, m->raid_disks, m->err, m->errlen);
	else
		ret = rf_array_add_mirrors(m->a, m->raid_disks, m->err, m->errlen);
	return ret ? ret : rf_sbstate_set_raid_disks(rf_array_sbstate(m->a));
}

/* raid1: more mirrors, as md's raid1 takes them: raid_disks recorded at
 * once, the new slots empty (degraded) until spares take them, which the
 * management thread does as for failed slots (a rebuild each).  Fewer:
 * as md's raid1_reshape, once no more slots than that hold a device (the
 * devices move to the front). */
static int grow_mirrors(struct rf_array *a, int raid_disks, char *err, size_t errlen)
{
	struct mirrors m = { .a = a, .raid_disks = raid_disks, .err = err, .errlen = errlen };
	int n = rf_array_nslots(a), ret;
	struct rf_sync_status st;
	bool v090;

	if (!rf_array_sbstate(a)) {
		snprintf(err, errlen, "no superblocks to record the new member count in (the config names it)");
		return -EOPNOTSUPP;
	}
	sb_features(a, &v090);
	if (v090) {
		snprintf(err, errlen, "0.90 metadata");
		return -EOPNOTSUPP;
	}
	if (raid_disks < 1 || raid_disks > RF_MAX_MEMBERS) {
		snprintf(err, errlen, "%d members: a raid1 has 1 to %d", raid_disks, RF_MAX_MEMBERS);
		return -EINVAL;
	}
	if (raid_disks == n)
		return 0;
	rf_sync_get(a, &st);
	if (st.action != RF_SYNC_IDLE && st.action != RF_SYNC_FROZEN) {
		snprintf(err, errlen, "%s is running", rf_sync_action_name(st.action));
		return -EBUSY;
	}
	ret = rf_barrier_quiesced_all(a, mirrors_fn, &m);
	if (!ret)
		rf_mgmt_kick(a);
	return ret;
}

/* What every change a user starts needs: the array served read-write,
 * nothing that rules it out (why, or NULL), no reshape, rebuild, copy or
 * sync action under way (md's -EBUSY), and with whole no member out.  0,
 * or -errno with why in err. */
static int idle_for_change(struct rf_array *a, const char *why, bool whole, char *err, size_t errlen)
{
	struct rf_sync_status st;
	uint64_t pos;
	bool back;

	if (rf_array_readonly(a)) {
		snprintf(err, errlen, "the array is read-only");
		return -EROFS;
	}
	if (why) {
		snprintf(err, errlen, "%s", why);
		return -EOPNOTSUPP;
	}
	if (rf_array_reshape(a, &pos, &back)) {
		snprintf(err, errlen, "a reshape is under way (at array sector %" PRIu64 ")", pos);
		return -EBUSY;
	}
	if (whole && (rf_array_faulty(a) || rf_array_recovering(a) || rf_replace_mask(a))) {
		snprintf(err, errlen, "the array is degraded: rebuild it first");
		return -EBUSY;
	}
	if (rf_array_recovering(a) || rf_replace_mask(a)) {
		snprintf(err, errlen, "a %s is under way", rf_array_recovering(a) ? "rebuild" : "replacement's copy");
		return -EBUSY;
	}
	rf_sync_get(a, &st);
	if (st.action != RF_SYNC_IDLE && st.action != RF_SYNC_FROZEN) {
		snprintf(err, errlen, "%s is running", rf_sync_action_name(st.action));
		return -EBUSY;
	}
	return 0;
}

/* What every reshape a user starts needs: a raid4/5/6 served read-write
 * with 1.x superblocks, whole, and nothing else under way. */
static int can_start(struct rf_array *a, char *err, size_t errlen)
{
	return idle_for_change(a, rf_array_readonly(a) ? NULL : cannot_reshape(a), true, err, errlen);
}

/* b->to and b->from set, b->first the first slot a spare takes: enough
 * spares, and the gap the data moves by (md's new_offset: a whole new row
 * of chunks lower if there is room, else as many chunks as there are; none:
 * only mdadm's backup file would do); then the reshape begins. */
static int plan(struct begin *b)
{
	struct rf_array *a = b->a;
	int n = rf_array_nslots(a), need = (b->last ? b->last : b->to.raid_disks) - b->first + b->raid0, i,
	    spares = 0;
	uint64_t room = UINT64_MAX, unit = b->to.chunk_sectors > b->from.chunk_sectors ? b->to.chunk_sectors :
					   b->from.chunk_sectors, bm = 0, want, least, move;
	const struct rf_reshape_ops *ops = rf_level_reshape_ops(b->to.level);
	struct rf_bitmap_status st;

	if (!ops) {
		snprintf(b->err, b->errlen, "raidfuse reshapes raid4/5/6 and raid10 only");
		return -EOPNOTSUPP;
	}

	/* The bitmap sits between the superblock and the data (1.1, 1.2):
	 * the data may move down to its end, not over it. */
	if (rf_array_bitmap(a)) {
		uint64_t grown;

		rf_bitmap_get(rf_array_bitmap(a), &st);
		bm = rf_bitmap_disk_sectors(st.sync_size, st.chunk_bytes);
		/* raid10's bits count array sectors: the bitmap the reshape
		 * resizes it to (at its chunk size, the most it takes) */
		grown = rf_bitmap_disk_sectors(rf_bitmap_sync_size(&b->to), st.chunk_bytes);
		bm = grown > bm ? grown : bm;
	}
	rf_devs_lock(a);
	for (i = n; i < rf_devs_count(a); i++)
		if (rf_dev_get(a, i)->flags == RF_DEV_SPARE)
			spares++;
	for (i = 0; i < rf_devs_count(a); i++)
		if (i < n || rf_dev_get(a, i)->flags == RF_DEV_SPARE) {
			uint64_t r = room_before(rf_dev_get(a, i), bm);

			room = r < room ? r : room;
		}
	rf_devs_unlock(a);
	if (spares < need) {
		snprintf(b->err, b->errlen, "%d spare(s) to grow from %d to %d members, %d needed (md/new_dev adds one)",
			 spares, n, b->to.raid_disks - b->raid0, need);
		return -EINVAL;
	}
	/* The level's choice (md's new_offset as mdadm sets it), down to
	 * what the room allows in whole chunks, never below its least. */
	want = ops->move(&b->from, &b->to, unit, &least);
	move = room >= want ? want : room / unit * unit;
	/* None: with a backup file the data stays where it is (mdadm's
	 * --backup-file), the file holding each window of the critical
	 * section first. */
	if (move < least && b->may_backup) {
		move = 0;
		b->backup = true;
	}
	if (move < least && !b->backup) {
		snprintf(b->err, b->errlen, "no room before the data on every member to move it by %s (%" PRIu64
			 " sectors free, %" PRIu64 " needed): a reshape in place needs mdadm's backup file (grow "
			 "--backup-file FILE)", least == unit ? "a chunk" : "a chunk times the far copies", room, least);
		return -ENOSPC;
	}
	b->move = -(int64_t)move;
	return 0;
}

/* A grow in place: its backup file says "nothing held" before the
 * superblocks record the reshape (a crash before its first window finds
 * a header of this array there).  0, or -errno with why in b->err. */
static int backup_start(struct begin *b)
{
	char path[PATH_MAX], why[512];
	int fd, ret;

	if (!rf_array_backup_file(b->a, path, sizeof(path))) {
		snprintf(b->err, b->errlen, "no backup file set");
		return -EINVAL;
	}
	fd = backup_open_path(path, NULL, why, sizeof(why));
	if (fd < 0) {
		snprintf(b->err, b->errlen, "%s", why);
		return fd;
	}
	ret = backup_put(b->a, fd, 0, 0, NULL);
	close(fd);
	if (ret)
		snprintf(b->err, b->errlen, "backup file %s: write: %s", path, strerror(-ret));
	return ret;
}

/* Whether a backup file is set: a grow, relayout or rechunk with no room
 * before the data may then keep it in place (not a level change: its
 * takeover paths are not walked that way). */
static bool may_backup(struct rf_array *a)
{
	char path[PATH_MAX];

	return rf_array_backup_file(a, path, sizeof(path));
}

static int begin(struct begin *b)
{
	int ret = plan(b);

	if (!ret && b->backup) {
		ret = backup_start(b);
		if (!ret)
			rf_info("%s: grow in place: no room before the data, mdadm's backup file holds its "
				"critical section", rf_array_name(b->a));
	}
	return ret ? ret : rf_barrier_quiesced_all(b->a, begin_fn, b);
}

struct takeover {
	struct rf_array *a;
	int from_level, level, layout, raid_disks;
	uint32_t chunk_sectors;
	/* set: devices move between slots (rf_array_takeover_slots()) */
	bool remap;
	int to_slot[RF_MAX_MEMBERS];
	int ndropped;
	char dropped[RF_MAX_MEMBERS][256];      /* the devices that left the array */
	char *err;
	size_t errlen;
};

/* Device i (a spare now) leaves the array, as mdadm fails and removes
 * it: every superblock, its own too, says faulty.  Device lock held. */
static void leave_array(struct takeover *t, int i)
{
	snprintf(t->dropped[t->ndropped++], sizeof(t->dropped[0]), "%s", rf_dev_get(t->a, i)->path);
	rf_sbstate_mark_faulty(rf_array_sbstate(t->a), i);
	rf_dev_drop(t->a, i);
}

/* A takeover that moves devices between slots: those that leave the
 * slots (md's raid10 -> raid0: one copy of each pair stays) leave the
 * array (leave_array()). */
static int takeover_remap(struct takeover *t)
{
	struct rf_array *a = t->a;
	uint32_t leaving[RF_MAX_MEMBERS];
	int nleave = 0, i, j, ret;

	rf_devs_lock(a);
	for (i = 0; i < rf_array_nslots(a); i++) {
		const struct rf_dev *d = rf_dev_get(a, i);

		if (t->to_slot[i] < 0 && !(d->flags & RF_DEV_MISSING) && d->sb_has)
			leaving[nleave++] = d->sb.dev_number;
	}
	rf_devs_unlock(a);
	ret = rf_array_takeover_slots(a, t->level, t->layout, t->raid_disks, t->chunk_sectors, t->to_slot, t->err,
				      t->errlen);
	if (!ret)
		ret = rf_sbstate_takeover(rf_array_sbstate(a), t->from_level);
	if (ret)
		return ret;
	rf_devs_lock(a);
	for (i = rf_devs_count(a) - 1; i >= t->raid_disks; i--) {
		const struct rf_dev *d = rf_dev_get(a, i);

		for (j = 0; j < nleave && !(d->sb_has && d->sb.dev_number == leaving[j]); j++)
			;
		if (j < nleave && d->flags == RF_DEV_SPARE)
			leave_array(t, i);
	}
	rf_devs_unlock(a);
	return 0;
}

static int takeover_fn(void *arg)
{
	struct takeover *t = arg;
	struct rf_array *a = t->a;
	int ret;

	if (t->remap)
		return takeover_remap(t);
	ret = rf_array_takeover(a, t->level, t->layout, t->raid_disks, t->chunk_sectors, t->err, t->errlen);
	if (!ret)
		ret = rf_sbstate_takeover(rf_array_sbstate(a), t->from_level);
	if (ret || t->level != 0 || t->raid_disks >= rf_devs_count(a))
		return ret;
	/* A raid0 has no spares: P's device leaves the array. */
	rf_devs_lock(a);
	if (rf_dev_get(a, t->raid_disks)->flags == RF_DEV_SPARE)
		leave_array(t, t->raid_disks);
	rf_devs_unlock(a);
	return 0;
}

/* Which feature of the superblocks a takeover to level cannot keep, or
 * NULL: a partial parity log (raid5 only, and the walk does not keep it),
 * a bitmap on a raid0 (nothing to resync). */
static const char *takeover_blocked(struct rf_array *a, int level)
{
	bool v090;
	uint32_t f = sb_features(a, &v090);

	if (v090)
		return "0.90 metadata (md changes the level of 1.x arrays only)";
	if (f & (RF_SB_FEAT_PPL | RF_SB_FEAT_MULTI_PPL))
		return "the array keeps a partial parity log (set md/consistency_policy to resync first)";
	if (level == 0 && (f & RF_SB_FEAT_BITMAP))
		return "the array keeps a write-intent bitmap, which a raid0 cannot (remove it first)";
	return NULL;
}

/* md's chunk for a raid1 that becomes a raid5 (raid5_takeover_raid1): the
 * largest power of two up to 64 KiB that divides the array's size. */
static uint32_t chunk_of_mirror(uint64_t sectors)
{
	uint32_t c = 128;

	while (c > 8 && (sectors & (c - 1)))
		c >>= 1;
	return c;
}

/* mdadm's remove_disks_for_takeover(): of each group of `copies` slots,
 * the first whose device is in sync keeps the data (slot group number in
 * to_slot), the others leave (-1).  -1 with why when a group has none. */
static int mirror_keep(struct rf_array *a, int *to_slot, int copies, char *err, size_t errlen)
{
	uint64_t out = rf_array_faulty(a) | rf_array_recovering(a);
	int n = rf_array_nslots(a), i, k;

	for (i = 0; i < n; i += copies) {
		int keep = -1;

		for (k = i; k < i + copies; k++) {
			to_slot[k] = -1;
			if (keep < 0 && !(out >> k & 1))
				keep = k;
		}
		if (keep < 0) {
			snprintf(err, errlen, "slots %d-%d: no copy in sync", i, i + copies - 1);
			return -1;
		}
		to_slot[keep] = i / copies;
	}
	return 0;
}

/* md's takeovers that move no data (each personality's takeover()):
 *   raid4 <-> raid5 parity-last (the same rows);
 *   raid6 whose Q is on its last member only -> raid5 of the others (the
 *   "-6" layouts and parity-last: that member becomes a spare);
 *   raid1 of two <-> raid5 of two (each row's chunks are equal either
 *   way), md's chunk and left-symmetric;
 *   raid0 of one zone -> raid4/5 parity-last of one member more, that
 *   one missing (a spare rebuilds it: P over the raid0's rows);
 *   raid4/5 parity-last -> raid0 of the members before the last, whose
 *   device (P) leaves the array (mdadm fails and removes it);
 *   raid0 of one zone -> raid10 near-2 of twice the members, member i in
 *   slot 2i, slot 2i + 1 empty (spares rebuild the copies);
 *   raid10 near-2 -> raid0 of one copy of each pair, raid1 -> raid0 of
 *   one member: the other copies leave the array (mdadm's
 *   remove_disks_for_takeover()).
 * 1: not one of those; else 0 or -errno. */
static int takeover(struct rf_array *a, int level, char *err, size_t errlen)
{
	const struct rf_geom *g = rf_array_geom(a);
	struct takeover t = { .a = a, .from_level = g->level, .level = level, .layout = g->layout,
			      .raid_disks = rf_array_nslots(a), .chunk_sectors = g->chunk_sectors, .err = err,
			      .errlen = errlen };
	const char *why;
	int ret, i;

	if (g->level == 4 && level == 5) {
		t.layout = RF_ALGO_PARITY_N;
	} else if (g->level == 5 && level == 4) {
		if (g->layout != RF_ALGO_PARITY_N) {
			snprintf(err, errlen, "raid5 to raid4: md takes over a raid5 of the parity-last layout only "
				 "(raidfuse grow --layout parity-last first)");
			return -EINVAL;
		}
	} else if (g->level == 6 && level == 5) {
		if (!rf_r6_q_last(g->layout)) {
			snprintf(err, errlen, "raid6 to raid5: md takes over a raid6 whose Q is on its last member "
				 "only, a \"-6\" layout (raidfuse grow --layout left-symmetric-6 first)");
			return -EINVAL;
		}
		t.layout = g->layout == RF_ALGO_PARITY_N ? RF_ALGO_PARITY_N : g->layout - RF_ALGO_LEFT_ASYMMETRIC_6;
		t.raid_disks--;
	} else if (g->level == 1 && level == 5) {
		if (t.raid_disks != 2) {
			snprintf(err, errlen, "raid1 of %d to raid5: md takes over a raid1 of two members only "
				 "(grow --raid-devices 2 first)", t.raid_disks);
			return -EINVAL;
		}
		t.layout = RF_ALGO_LEFT_SYMMETRIC;
		t.chunk_sectors = chunk_of_mirror(g->array_sectors);
	} else if (g->level == 5 && level == 1) {
		if (t.raid_disks != 2) {
			snprintf(err, errlen, "raid5 of %d to raid1: md takes over a raid5 of two members only "
				 "(grow --raid-devices 2 first)", t.raid_disks);
			return -EINVAL;
		}
		t.layout = 0;
		t.chunk_sectors = 0;
	} else if (g->level == 0 && (level == 4 || level == 5)) {
		if (g->nzones != 1) {
			snprintf(err, errlen, "raid0 to raid%d: md takes over a raid0 whose members are of one size "
				 "only (this one has %d zones)", level, g->nzones);
			return -EINVAL;
		}
		t.layout = RF_ALGO_PARITY_N;
		t.raid_disks++;
	} else if (g->level == 0 && level == 10) {
		if (g->nzones != 1) {
			snprintf(err, errlen, "raid0 to raid10: md takes over a raid0 whose members are of one size "
				 "only (this one has %d zones)", g->nzones);
			return -EINVAL;
		}
		if (2 * t.raid_disks > RF_MAX_MEMBERS) {
			snprintf(err, errlen, "raid0 of %d to raid10: more than %d members", t.raid_disks,
				 RF_MAX_MEMBERS);
			return -EINVAL;
		}
		/* md's raid10_takeover_raid0: near-2 over twice the members,
		 * each one's copy an empty slot beside it. */
		t.remap = true;
		/* RAIDFUSE_TEST_BREAK=takeover-slots: the members in the
		 * other order (the tests' negative control). */
		for (i = 0; i < t.raid_disks; i++)
			t.to_slot[i] = 2 * (rf_test_break("takeover-slots") ? t.raid_disks - 1 - i : i);
		t.layout = RF_R10_NEAR2;
		t.raid_disks *= 2;
	} else if (g->level == 10 && level == 0) {
		if (g->layout != RF_R10_NEAR2 || t.raid_disks % 2) {
			snprintf(err, errlen, "raid10 to raid0: md takes over a raid10 of the near-2 layout (n2) over "
				 "an even number of members only (this one: layout 0x%x, %d members)",
				 (unsigned)g->layout, t.raid_disks);
			return -EINVAL;
		}
		if (mirror_keep(a, t.to_slot, 2, err, errlen))
			return -EINVAL;
		t.remap = true;
		t.layout = 0;
		t.raid_disks /= 2;
	} else if (g->level == 1 && level == 0) {
		/* md's raid0_takeover_raid1 of the one copy mdadm keeps; md's
		 * chunk, as for a raid5. */
		if (mirror_keep(a, t.to_slot, t.raid_disks, err, errlen))
			return -EINVAL;
		t.remap = true;
		t.layout = 0;
		t.raid_disks = 1;
		t.chunk_sectors = chunk_of_mirror(g->array_sectors);
	} else if ((g->level == 4 || g->level == 5) && level == 0) {
		if (g->layout != RF_ALGO_PARITY_N) {
			snprintf(err, errlen, "raid5 to raid0: md takes over a raid5 of the parity-last layout only "
				 "(raidfuse grow --layout parity-last first)");
			return -EINVAL;
		}
		t.layout = 0;
		t.raid_disks--;
	} else {
		return 1;
	}
	/* What every takeover needs: superblocks to record it in, nothing
	 * else under way (md's level_store: -EBUSY). */
	why = !rf_array_sbstate(a) ? "no superblocks to record the new level in (the config names it)" :
				     takeover_blocked(a, level);
	ret = idle_for_change(a, why, false, err, errlen);
	if (!ret)
		ret = rf_barrier_quiesced_all(a, takeover_fn, &t);
	if (!ret) {
		rf_info("%s: raid%d -> raid%d: %d members, layout %d, chunk %u KiB", rf_array_name(a), t.from_level,
			level, t.raid_disks, t.layout, (unsigned)(t.chunk_sectors / 2));
		for (i = 0; i < t.ndropped; i++)
			rf_info("%s: %s (%s) left the array: its superblock says faulty (clear it to use the device "
				"elsewhere)", rf_array_name(a), t.dropped[i], t.remap ? "a copy" : "P");
		/* An empty slot meets a spare (raid0 -> raid4/5). */
		rf_mgmt_kick(a);
	}
	return ret;
}

/* A raid0 grown by members, as mdadm grows one through md: inside one
 * drain, md's raid0 -> raid4 takeover (its P slot empty), the first spare
 * put in that slot (absent in the raid4's rows, a data member in the new
 * ones: md's raid5_add_disk fills the first free slot), the other spares
 * in the new slots but the last, which stays empty (the new P), and the
 * raid4 reshape begun; when the walk ends the raid4 is a raid0 again
 * (rf_array_set_reshape_then()). */
static int raid0_grow_fn(void *arg)
{
	struct begin *b = arg;
	struct rf_array *a = b->a;
	int n = b->from.raid_disks - 1, j, ret;

	ret = rf_array_takeover(a, 4, RF_ALGO_PARITY_N, n + 1, b->from.chunk_sectors, b->err, b->errlen);
	if (!ret)
		ret = rf_sbstate_takeover(rf_array_sbstate(a), 0);
	if (ret)
		return ret;
	/* The table only (begin_fn() puts the others, rf_array_reshape_begin()
	 * takes them in). */
	rf_devs_lock(a);
	for (j = n + 1; j < rf_devs_count(a) && rf_dev_get(a, j)->flags != RF_DEV_SPARE; j++)
		;
	if (j < rf_devs_count(a))
		rf_dev_swap(a, n, j);
	rf_devs_unlock(a);
	ret = begin_fn(b);
	if (ret) {
		/* Nothing began: the spare back, a degraded raid4 left (the
		 * superblocks say so). */
		rf_devs_lock(a);
		if (j < rf_devs_count(a) && rf_dev_get(a, n)->flags == RF_DEV_SPARE)
			rf_dev_swap(a, n, j);
		rf_devs_unlock(a);
		return ret;
	}
	rf_array_set_reshape_then(a, 0);
	return 0;
}

static int grow_raid0(struct rf_array *a, int raid_disks, char *err, size_t errlen)
{
	const struct rf_geom *g = rf_array_geom(a);
	struct begin b = { .a = a, .err = err, .errlen = errlen, .raid0 = true };
	int n = rf_array_nslots(a), ret;
	const char *why;

	if (raid_disks < n) {
		snprintf(err, errlen, "raid0 of %d to %d: md shrinks no raid0", n, raid_disks);
		return -EINVAL;
	}
	if (raid_disks + 1 > RF_MAX_MEMBERS) {
		snprintf(err, errlen, "%d members: raidfuse grows a raid0 (through a raid4 of one more) to at most %d",
			 raid_disks, RF_MAX_MEMBERS - 1);
		return -EINVAL;
	}
	if (g->nzones != 1) {
		snprintf(err, errlen, "raid0 of %d zones: md grows a raid0 whose members are of one size only "
			 "(through a raid4)", g->nzones);
		return -EINVAL;
	}
	why = cannot_walk(a);
	ret = idle_for_change(a, why ? why : takeover_blocked(a, 4), true, err, errlen);
	if (ret)
		return ret;
	if (rf_array_failed(a)) {
		snprintf(err, errlen, "the array has failed");
		return -EBUSY;
	}
	b.from = *g;
	b.from.level = 4;
	b.from.layout = RF_ALGO_PARITY_N;
	b.from.raid_disks = n + 1;
	b.to = b.from;
	b.to.raid_disks = raid_disks + 1;
	b.prev_absent = 1ull << n;
	b.first = n + 1;
	b.last = raid_disks;
	ret = plan(&b);
	if (!ret)
		ret = rf_barrier_quiesced_all(a, raid0_grow_fn, &b);
	if (!ret)
		rf_info("%s: raid0 of %d grows to %d through a raid4 of %d (its P slot empty), as mdadm grows one",
			rf_array_name(a), n, raid_disks, raid_disks + 1);
	return ret;
}

int rf_reshape_level(struct rf_array *a, int level, char *err, size_t errlen)
{
	const struct rf_geom *g = rf_array_geom(a);
	struct begin b = { .a = a, .err = err, .errlen = errlen };
	int n = rf_array_nslots(a), l6, ret;

	err[0] = '\0';
	if (level == g->level)
		return 0;
	/* md's level_store: -EBUSY while a reshape runs, whatever the level */
	{
		uint64_t pos;
		bool back;

		if (rf_array_reshape(a, &pos, &back)) {
			snprintf(err, errlen, "a reshape is under way (at array sector %" PRIu64 ")", pos);
			return -EBUSY;
		}
	}
	ret = takeover(a, level, err, errlen);
	if (ret <= 0)
		return ret;
	/* md's raid5 -> raid6 takeover, then mdadm's restripe to the raid6
	 * layout of the raid5's number (mdadm --grow --level=6: one member
	 * more, the data disks as they are). */
	l6 = rf_r6_layout_of_r5(g->level, g->layout);
	if (level != 6 || l6 < 0) {
		snprintf(err, errlen, "raid%d to raid%d: not a change md makes (raid0 <-> raid4/5, raid0 <-> raid10 "
			 "near-2, raid1 -> raid0, raid1 of two <-> raid5 of two, raid4 <-> raid5, raid4/5 -> raid6, "
			 "raid6 -> raid5)", g->level, level);
		return -EOPNOTSUPP;
	}
	ret = can_start(a, err, errlen);
	if (ret)
		return ret;
	if (n + 1 > RF_MAX_MEMBERS) {
		snprintf(err, errlen, "raid6 of %d members: more than %d", n + 1, RF_MAX_MEMBERS);
		return -EINVAL;
	}
	b.from = *g;
	b.from.level = 6;
	b.from.layout = l6;
	b.from.raid_disks = n + 1;
	b.to = b.from;
	b.to.layout = g->level == 4 ? l6 : g->layout;
	b.prev_absent = 1ull << n;
	b.first = n;
	return begin(&b);
}

int rf_reshape_layout(struct rf_array *a, int layout, uint32_t chunk_sectors, char *err, size_t errlen)
{
	const struct rf_geom *g = rf_array_geom(a);
	struct begin b = { .a = a, .err = err, .errlen = errlen };
	uint64_t unit;
	int ret;

	err[0] = '\0';
	if (layout < 0)
		layout = g->layout;
	if (!chunk_sectors)
		chunk_sectors = g->chunk_sectors;
	if (layout == g->layout && chunk_sectors == g->chunk_sectors)
		return 0;
	ret = can_start(a, err, errlen);
	if (ret)
		return ret;
	if (g->level == 4 && layout != g->layout) {
		snprintf(err, errlen, "raid4 has one layout (parity-last)");
		return -EINVAL;
	}
	/* md also restripes a raid10 in place (near <-> offset, a new chunk,
	 * the data offsets moved by half the room): not begun here. */
	if (g->level == 10) {
		snprintf(err, errlen, "raidfuse changes a raid10's member count only; a new layout or chunk needs "
			 "mdadm");
		return -EOPNOTSUPP;
	}
	/* md reshapes in units of the larger chunk: each member's size must
	 * stay whole units of both (mdadm refuses a chunk the component size
	 * is not a multiple of: the array would shrink). */
	unit = chunk_sectors > g->chunk_sectors ? chunk_sectors : g->chunk_sectors;
	if (g->dev_sectors % unit) {
		snprintf(err, errlen, "component size %" PRIu64 "K is not a multiple of the chunk size %uK",
			 g->dev_sectors / 2, (unsigned)(unit / 2));
		return -EINVAL;
	}
	/* A stripe head holds a block of one chunk, never of two: the heads
	 * (tuning.stripe_size, larger than md's 4 KiB) are made at the open. */
	if (g->level >= 4 && g->level <= 6 && (uint64_t)chunk_sectors * 512 < rf_array_stripe_size(a)) {
		snprintf(err, errlen, "a chunk of %uK is smaller than the stripe heads' %uK (tuning.stripe_size): "
			 "set a smaller stripe_size in the config and mount again first",
			 (unsigned)(chunk_sectors / 2), (unsigned)(rf_array_stripe_size(a) / 1024));
		return -EINVAL;
	}
	b.from = *g;
	b.to = *g;
	b.to.layout = layout;
	b.to.chunk_sectors = chunk_sectors;
	/* a layout the level has, a chunk md takes */
	ret = rf_geom_init(&b.to, err, errlen);
	if (ret)
		return ret;
	b.first = rf_array_nslots(a);
	b.may_backup = may_backup(a);
	return begin(&b);
}

/* Sectors free after device d's data of dev_sectors, inside the data
 * area its superblock records (md's rdev->sectors: a new offset may not
 * push the data past it). */
static uint64_t room_after(const struct rf_dev *d, uint64_t dev_sectors)
{
	uint64_t area = d->sb_has ? d->sb.data_size : d->size / 512 - d->data_offset / 512;

	return area > dev_sectors ? area - dev_sectors : 0;
}

/* b->from the array's geometry, b->to the same over raid_disks members
 * (a geometry the level has: 0, or -EINVAL with why in b->err). */
static int to_members(struct begin *b, int raid_disks)
{
	b->from = *rf_array_geom(b->a);
	b->to = b->from;
	b->to.raid_disks = raid_disks;
	return rf_geom_init(&b->to, b->err, b->errlen);
}

/* Fewer members (md's raid5 reshape with delta_disks < 0): the image
 * must already serve no more than the new geometry holds (mdadm: "use
 * --grow --array-size first"), every device must have a chunk free after
 * its data, which moves up by that much (md's new_offset: mdadm moves a
 * shrink's data up by the larger chunk), and the walk goes backwards from
 * the new geometry's end; the slots past the new count become spares when
 * it ends. */
static int shrink(struct rf_array *a, int raid_disks, char *err, size_t errlen)
{
	const struct rf_geom *g = rf_array_geom(a);
	struct begin b = { .a = a, .err = err, .errlen = errlen, .backwards = true };
	uint64_t room = UINT64_MAX, unit = g->chunk_sectors, least = unit;
	const struct rf_reshape_ops *ops = rf_array_reshape_ops(a);
	int n = rf_array_nslots(a), i, ret;
	const char *tight = NULL;

	ret = to_members(&b, raid_disks);
	if (ret)
		return ret;
	/* The data moves up by the least the level's reshape takes (md's
	 * min_offset_change: a chunk, raid10 a chunk times the far copies). */
	if (ops)
		ops->move(&b.from, &b.to, unit, &least);
	if (rf_array_size(a) > b.to.array_sectors * 512) {
		snprintf(err, errlen, "the image serves %" PRIu64 " KiB, %d members hold %" PRIu64 " KiB: this change "
			 "would reduce the size of the array; set md/array_size first (grow --array-size), as mdadm "
			 "and md ask", rf_array_size(a) / 1024, raid_disks, b.to.array_sectors / 2);
		return -EINVAL;
	}
	rf_devs_lock(a);
	for (i = 0; i < rf_devs_count(a); i++) {
		const struct rf_dev *d = rf_dev_get(a, i);

		if (i < n ? (d->flags & RF_DEV_MISSING) != 0 : d->flags != RF_DEV_SPARE)
			continue;
		if (room_after(d, g->dev_sectors) < room) {
			room = room_after(d, g->dev_sectors);
			tight = d->path;
		}
	}
	rf_devs_unlock(a);
	if (room < least) {
		snprintf(err, errlen, "%s has %" PRIu64 " KiB free after its data, and a shrink moves the data up by %s "
			 "(%" PRIu64 " KiB): make md/component_size %s smaller first (grow --size), or mdadm's backup "
			 "file would be needed", tight ? tight : "a device", room / 2,
			 least == unit ? "a chunk" : "a chunk times the far copies", least / 2,
			 least == unit ? "a chunk" : "that much");
		return -ENOSPC;
	}
	b.first = n;
	b.move = (int64_t)least;
	return rf_barrier_quiesced_all(a, begin_fn, &b);
}

/* A raid10 of more members, as mdadm --grow --raid-devices has md
 * reshape one (md's raid10_check_reshape and raid10_start_reshape, and
 * mdadm's raid10_reshape): near and offset layouts only, the copies as
 * they are, the array size a multiple of the chunk, whole (md wants enough
 * in-sync devices; like the parity levels here, every one), a spare for
 * each new slot, and every data offset a chunk times the far copies lower
 * (mdadm's min_offset_change, and no less: md's start_reshape refuses a
 * smaller offset_diff), which the room before the data must allow.  The
 * walk then copies each chunk from one copy of the old geometry to every
 * copy of the new one; the image grows at the end.  Fewer members are
 * md's backward raid10 reshape, as shrink() runs it: the image cut to what
 * they hold first (md/array_size), every data offset a chunk times the far
 * copies higher (mdadm's min_offset_change: room after the data), the walk
 * down from the new geometry's end, the slots past the new count spares
 * at its end. */
static int grow_r10(struct rf_array *a, int raid_disks, char *err, size_t errlen)
{
	const struct rf_geom *g = rf_array_geom(a);
	struct begin b = { .a = a, .err = err, .errlen = errlen };
	int n = rf_array_nslots(a), ret;

	if (raid_disks == n)
		return 0;
	ret = can_start(a, err, errlen);
	if (ret)
		return ret;
	/* md: "Cannot reshape RAID10 in far-mode" (raid10_check_reshape) */
	if (g->far_copies > 1 && !g->far_offset) {
		snprintf(err, errlen, "raid10 of a far layout (%d far copies): md reshapes near and offset layouts "
			 "only (Cannot reshape RAID10 in far-mode)", g->far_copies);
		return -EINVAL;
	}
	if (raid_disks > RF_MAX_MEMBERS) {
		snprintf(err, errlen, "%d members: raidfuse grows an array of %d to at most %d", raid_disks, n,
			 RF_MAX_MEMBERS);
		return -EINVAL;
	}
	/* md: the array size must be a multiple of the chunk */
	if (rf_array_size(a) % ((uint64_t)g->chunk_sectors * 512)) {
		snprintf(err, errlen, "the image serves %" PRIu64 " KiB, not a multiple of the chunk (%u KiB): md "
			 "refuses the reshape (md/array_size default first)", rf_array_size(a) / 1024,
			 (unsigned)(g->chunk_sectors / 2));
		return -EINVAL;
	}
	ret = to_members(&b, raid_disks);
	if (ret)
		return ret;
	if (raid_disks < n) {
		/* md's backward raid10 reshape, as for raid4/5/6 */
		ret = shrink(a, raid_disks, err, errlen);
		if (!ret)
			rf_info("%s: raid10 of %d shrinks to %d, backwards from the end, data offsets %" PRIu64
				" sectors higher", rf_array_name(a), n, raid_disks,
				(uint64_t)g->chunk_sectors * (uint64_t)g->far_copies);
		return ret;
	}
	b.first = n;
	ret = begin(&b);
	if (!ret)
		rf_info("%s: raid10 of %d grows to %d (%d copies of each chunk), data offsets %" PRId64 " sectors "
			"lower", rf_array_name(a), n, raid_disks, g->near_copies * g->far_copies, -b.move);
	return ret;
}

int rf_reshape_hold(struct rf_array *a, int timeout_ms)
{
	int64_t end = rf_mono_ms() + timeout_ms;
	int ret = rf_sync_request(a, RF_SYNC_FROZEN);

	if (ret)
		return ret;
	while (rf_array_reshape_moving(a)) {
		if (rf_mono_ms() >= end)
			return -ETIMEDOUT;
		sleep_ms(5);
	}
	return 0;
}

int rf_reshape_grow(struct rf_array *a, int raid_disks, char *err, size_t errlen)
{
	const struct rf_geom *g = rf_array_geom(a);
	struct begin b = { .a = a, .err = err, .errlen = errlen };
	int n = rf_array_nslots(a), ret;

	err[0] = '\0';
	if (rf_array_readonly(a)) {
		snprintf(err, errlen, "the array is read-only");
		return -EROFS;
	}
	if (g->level == 1)
		return grow_mirrors(a, raid_disks, err, errlen);
	if (raid_disks == n)
		return 0;
	if (g->level == 0)
		return grow_raid0(a, raid_disks, err, errlen);
	if (g->level == 10)
		return grow_r10(a, raid_disks, err, errlen);
	ret = can_start(a, err, errlen);
	if (ret)
		return ret;
	if (raid_disks < n)
		return shrink(a, raid_disks, err, errlen);
	if (raid_disks > RF_MAX_MEMBERS) {
		snprintf(err, errlen, "%d members: raidfuse grows an array of %d to at most %d", raid_disks, n,
			 RF_MAX_MEMBERS);
		return -EINVAL;
	}
	b.from = *g;
	b.to = *g;
	b.to.raid_disks = raid_disks;
	b.first = n;
	b.may_backup = may_backup(a);
	return begin(&b);
}
