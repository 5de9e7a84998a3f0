/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_sync.c - check, repair and resync on raid1, raid10, raid4/5 and
 * raid6 arrays opened on member files, corrupted behind the array's back
 * by writing a member file directly.
 *
 * What must hold: a clean array checks 0; one corrupt block counts exactly
 * 8 sectors and check changes no byte of any member; repair makes a second
 * check count 0 and leaves the data right where the level can know it
 * (mirrors: the first copy wins; raid6: P and Q name the bad data block;
 * parity blocks are recomputed); resync of members full of garbage makes
 * check count 0; foreground writes racing a repair land intact; raid6
 * with one member missing is checked and resynced on the parity left to
 * compare, so that a second failure reads what was written.
 *
 * Members in memory (the scratch directory is on /dev/shm) are mapped,
 * and raid4/5/6 walks take their bytes from the mappings: every test
 * above runs that way; test_io_paths runs some again with mapping off
 * (the reads through the IO queue) and checks which way each went, and
 * test_mapped_truncated shrinks a member under its mapping before a
 * check: the member fails, the check stops, the process lives.
 *
 * Seed: RF_TEST_SEED (printed).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>

#include "core/core_test.h"
#include "fake_ioq.h"
#include "fixture.h"
#include "testreq.h"
#include "raidfuse/fdmap.h"
#include "raidfuse/sync.h"

#define MEMBER_BYTES (2u << 20)
#define DATA_OFFSET (64u << 10)
#define IOMAX (256u << 10)

struct spec {
	const char *what;
	int level, layout, n;
	uint32_t chunk;
};

static const struct spec specs[] = {
	{ "raid1", 1, 0, 2, 0 },
	{ "raid1x3", 1, 0, 3, 0 },
	{ "raid10-n2", 10, 0x102, 4, 16384 },
	{ "raid10-f2", 10, 0x201, 4, 16384 },
	{ "raid10-o2", 10, 0x10201, 3, 16384 },
	{ "raid4", 4, 5, 4, 16384 },
	{ "raid5-ls", 5, 2, 4, 65536 },
	{ "raid5-ra", 5, 1, 3, 8192 },
	{ "raid6-ls", 6, 2, 5, 16384 },
	{ "raid6-la", 6, 0, 6, 65536 },
	{ "raid6-ddf-nc", 6, 10, 5, 16384 },
};
#define NSPECS (sizeof(specs) / sizeof(specs[0]))

static void member_path(char *buf, size_t len, const struct spec *sp, int i)
{
	fx_member_path(buf, len, sp->what, i);
}

/* Member files: zeros, or garbage when garbage is set. */
static void make_members(const struct spec *sp, bool garbage)
{
	fx_make_members(sp->what, sp->n, MEMBER_BYTES, garbage);
}

static struct rf_array *open_array_on(const struct spec *sp, int gtc, rf_ioq_init_fn ioq);

static struct rf_array *open_array(const struct spec *sp, int gtc)
{
	return open_array_on(sp, gtc, NULL);
}

/* ioq: the members' IO backend (NULL: liburing, as the daemon). */
static struct rf_array *open_array_on(const struct spec *sp, int gtc, rf_ioq_init_fn ioq)
{
	const struct fx_array fa = { .what = sp->what, .level = sp->level, .layout = sp->layout, .n = sp->n,
				     .chunk = sp->chunk, .data_offset = DATA_OFFSET };

	return fx_open_spec(&fa, gtc, ioq);
}

/* ---- synchronous requests ---- */

static int do_io(struct rf_array *a, int op, uint64_t off, uint32_t len, char *buf)
{
	return testreq_io(a, op, off, len, buf);
}

/* Write model over the whole array. */
static void write_all(struct rf_array *a, const char *model)
{
	uint64_t size = rf_array_size(a), off;

	for (off = 0; off < size; off += IOMAX) {
		uint32_t len = (uint32_t)(size - off < IOMAX ? size - off : IOMAX);

		assert_int_equal(do_io(a, RF_REQ_WRITE, off, len, (char *)model + off), 0);
	}
}

/* The array's 4 KiB block at array sector as, now taken as the truth. */
static void adopt_block(struct rf_array *a, char *model, uint64_t as, char *blk)
{
	assert_int_equal(do_io(a, RF_REQ_READ, as * 512, 4096, blk), 0);
	memcpy(model + as * 512, blk, 4096);
}

static void verify_all(struct rf_array *a, const char *model, const char *what)
{
	uint64_t size = rf_array_size(a), off;
	char *buf = malloc(IOMAX);

	for (off = 0; off < size; off += IOMAX) {
		uint32_t len = (uint32_t)(size - off < IOMAX ? size - off : IOMAX);

		assert_int_equal(do_io(a, RF_REQ_READ, off, len, buf), 0);
		if (memcmp(buf, model + off, len))
			fail_msg("%s: array read at %llu differs from what was written", what,
				 (unsigned long long)off);
	}
	free(buf);
}

static void close_verified(struct rf_array *a, char *model, const char *what)
{
	verify_all(a, model, what);
	rf_array_close(a);
	free(model);
}

/* ---- sync helpers ---- */

static uint64_t run_action(struct rf_array *a, enum rf_sync_action act)
{
	struct rf_sync_status st;

	assert_int_equal(rf_sync_request(a, act), 0);
	rf_sync_wait(a);
	rf_sync_get(a, &st);
	assert_int_equal(st.action, RF_SYNC_IDLE);
	assert_int_equal(st.done, 0);
	return st.mismatch_cnt;
}

/* A digest of every member file. */
static uint64_t members_digest(const struct spec *sp)
{
	static char buf[MEMBER_BYTES];
	uint64_t h = 1469598103934665603ull;
	int i;
	size_t k;

	for (i = 0; i < sp->n; i++) {
		char p[512];
		int fd;

		member_path(p, sizeof(p), sp, i);
		fd = open(p, O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
		close(fd);
		for (k = 0; k < sizeof(buf); k += 8) {
			uint64_t v;

			memcpy(&v, buf + k, 8);
			h = (h ^ v) * 1099511628211ull;
		}
	}
	return h;
}

static void read_member_block(const struct spec *sp, int m, uint64_t sec, char *blk)
{
	char p[512];
	int fd;

	member_path(p, sizeof(p), sp, m);
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, blk, 4096, DATA_OFFSET + sec * 512), 4096);
	close(fd);
}

/* Flip bytes of the 4 KiB block at member sector sec of member m. */
static void corrupt(const struct spec *sp, int m, uint64_t sec)
{
	char p[512], blk[4096];
	int fd, i;

	member_path(p, sizeof(p), sp, m);
	fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, blk, sizeof(blk), DATA_OFFSET + sec * 512), (ssize_t)sizeof(blk));
	for (i = 0; i < 64; i++)
		blk[(i * 97) % 4096] ^= (char)(1 + i);
	assert_int_equal(pwrite(fd, blk, sizeof(blk), DATA_OFFSET + sec * 512), (ssize_t)sizeof(blk));
	close(fd);
}

/* Where the 4 KiB block of the array at array sector as lives in its
 * second copy (mirrors) or its data member (parity levels). */
static void data_block(const struct rf_array *a, uint64_t as, int *m, uint64_t *sec)
{
	const struct rf_geom *g = rf_array_geom(a);

	if (g->level == 1) {
		*m = 1;
		*sec = as;
	} else if (g->level == 10) {
		int devs[RF_MAX_MEMBERS];
		uint64_t addrs[RF_MAX_MEMBERS];

		assert_true(rf_r10_map(g, as, devs, addrs) >= 2);
		*m = devs[1];
		*sec = addrs[1];
	} else {
		struct rf_r5_map map;

		rf_r5_map_sector(g, as, &map);
		*m = map.dd_idx;
		*sec = map.dev_sector;
	}
}

/* A 4 KiB-aligned array sector somewhere in the array. */
static uint64_t pick_sector(const struct rf_array *a)
{
	return (fx_rand() % (rf_array_size(a) / 4096)) * 8;
}

static uint64_t walk_sectors(const struct rf_array *a)
{
	const struct rf_geom *g = rf_array_geom(a);

	return g->level == 10 ? g->array_sectors : g->dev_sectors;
}

/* ---- tests ---- */

static void run_specs(void (*fn)(const struct spec *sp))
{
	unsigned si;

	for (si = 0; si < NSPECS; si++)
		fn(&specs[si]);
}

static char *fresh_array(const struct spec *sp, struct rf_array **out)
{
	struct rf_array *a;
	char *model;

	make_members(sp, false);
	a = open_array(sp, 2);
	model = malloc(rf_array_size(a));
	fx_rand_fill(model, rf_array_size(a));
	write_all(a, model);
	*out = a;
	return model;
}

/* A clean array checks 0; a corrupt copy or data block counts exactly
 * one block, check writes nothing, repair fixes it. */
static void data_block_one(const struct spec *sp)
{
	struct rf_array *a;
	char *model = fresh_array(sp, &a);
	const struct rf_geom *g = rf_array_geom(a);
	uint64_t as = pick_sector(a), sec, digest, mm;
	struct rf_sync_status st;
	int m;

	assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
	data_block(a, as, &m, &sec);
	corrupt(sp, m, sec);
	digest = members_digest(sp);
	mm = run_action(a, RF_SYNC_CHECK);
	if (mm != 8)
		fail_msg("%s: check counted %llu sectors for one bad block", sp->what, (unsigned long long)mm);
	assert_int_equal(members_digest(sp), digest);
	rf_sync_get(a, &st);
	if (g->level == 6) {
		if (st.bad_member != m || st.bad_sector != as || st.bad_found != 1)
			fail_msg("%s: check named member %d sector %llu, the bad block is on %d at %llu",
				 sp->what, st.bad_member, (unsigned long long)st.bad_sector, m,
				 (unsigned long long)as);
	} else {
		assert_int_equal(st.bad_member, -1);
	}
	assert_int_equal(run_action(a, RF_SYNC_REPAIR), 8);
	assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
	if (g->level == 4 || g->level == 5) {
		/* Parity cannot say which block is wrong: repair
		 * keeps the data and recomputes P, as md does. */
		char old[4096], blk[4096];

		memcpy(old, model + as * 512, 4096);
		adopt_block(a, model, as, blk);
		assert_memory_not_equal(blk, old, 4096);
	}
	close_verified(a, model, sp->what);
}

static void test_data_block(void **state)
{
	run_specs(data_block_one);
}

/* A corrupt parity block (raid4/5/6) or first copy (mirrors). */
static void parity_block_one(const struct spec *sp)
{
	struct rf_array *a;
	char *model = fresh_array(sp, &a);
	const struct rf_geom *g = rf_array_geom(a);
	uint64_t as = pick_sector(a), sec, digest, mm, want = 8;
	struct rf_sync_status st;
	char first[4096];
	int m, which = fx_rand() % 2;

	if (g->level >= 4 && g->level <= 6) {
		struct rf_r5_map map;

		rf_r5_map_sector(g, as, &map);
		m = which && map.qd_idx >= 0 ? map.qd_idx : map.pd_idx;
		sec = map.dev_sector;
	} else {
		/* The first copy is the one repair trusts: the other
		 * copies all differ from it now, and get its bytes. */
		data_block(a, as, &m, &sec);
		if (g->level == 1) {
			m = 0;
		} else {
			int devs[RF_MAX_MEMBERS];
			uint64_t addrs[RF_MAX_MEMBERS];
			int n = rf_r10_map(g, as, devs, addrs);

			m = devs[0];
			sec = addrs[0];
			want = 8 * (uint64_t)(n - 1);
		}
		if (g->level == 1)
			want = 8 * (uint64_t)(sp->n - 1);
	}
	corrupt(sp, m, sec);
	read_member_block(sp, m, sec, first);
	digest = members_digest(sp);
	mm = run_action(a, RF_SYNC_CHECK);
	if (mm != want)
		fail_msg("%s: check counted %llu sectors, want %llu", sp->what, (unsigned long long)mm,
			 (unsigned long long)want);
	assert_int_equal(members_digest(sp), digest);
	rf_sync_get(a, &st);
	if (g->level == 6 && (st.bad_member != m || st.bad_sector != sec))
		fail_msg("%s: check named member %d at %llu, the bad parity is on %d at %llu", sp->what,
			 st.bad_member, (unsigned long long)st.bad_sector, m, (unsigned long long)sec);
	assert_int_equal(run_action(a, RF_SYNC_REPAIR), want);
	assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
	if (g->level == 1 || g->level == 10) {
		/* The first copy's bytes won. */
		char blk[4096];

		adopt_block(a, model, as, blk);
		assert_memory_equal(blk, first, 4096);
	}
	close_verified(a, model, sp->what);
}

static void test_parity_block(void **state)
{
	run_specs(parity_block_one);
}

/* Members full of garbage: resync makes every row consistent, and what
 * is written afterwards reads back. */
static void resync_garbage_one(const struct spec *sp)
{
	struct rf_array *a;
	struct rf_sync_status st;
	uint64_t mm;
	char *model;

	make_members(sp, true);
	a = open_array(sp, 2);
	mm = run_action(a, RF_SYNC_CHECK);
	if (mm < 64)
		fail_msg("%s: garbage members checked %llu mismatched sectors", sp->what,
			 (unsigned long long)mm);
	run_action(a, RF_SYNC_RESYNC);
	rf_sync_get(a, &st);
	assert_true(st.resync_cp == RF_SYNC_NONE);
	assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
	model = malloc(rf_array_size(a));
	fx_rand_fill(model, rf_array_size(a));
	write_all(a, model);
	assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
	close_verified(a, model, sp->what);
}

static void test_resync_garbage(void **state)
{
	run_specs(resync_garbage_one);
}

/* ---- foreground writes racing a repair ---- */

#define NWRITERS 3

struct writer {
	struct rf_array *a;
	char *model;
	uint64_t lo, hi;        /* this writer's bytes of the array */
	struct fx_rng rng;
	volatile int *stop;
	int nwrites;
	double slowest;         /* seconds, the slowest write */
};

static double seconds(void);

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char *buf = malloc(64 << 10);

	while (!__atomic_load_n(w->stop, __ATOMIC_ACQUIRE) || w->nwrites < 20) {
		uint32_t len, i;
		uint64_t off, v;
		double t;

		len = 512 * (1 + fx_rng_next(&w->rng) % 128);
		v = fx_rng_next(&w->rng);
		off = w->lo + (v % ((w->hi - w->lo - len) / 512)) * 512;
		for (i = 0; i < len; i++)
			buf[i] = (char)(v + i * 131 + w->nwrites);
		t = seconds();
		assert_int_equal(do_io(w->a, RF_REQ_WRITE, off, len, buf), 0);
		t = seconds() - t;
		if (t > w->slowest)
			w->slowest = t;
		memcpy(w->model + off, buf, len);
		w->nwrites++;
	}
	free(buf);
	return NULL;
}

static void race_one(const struct spec *sp, int gtc)
{
	struct rf_array *a;
	struct writer w[NWRITERS];
	pthread_t t[NWRITERS];
	volatile int stop = 0;
	struct rf_sync_status st;
	uint64_t size, as, sec;
	char *model;
	int i, m;

	make_members(sp, false);
	a = open_array(sp, gtc);
	size = rf_array_size(a);
	model = malloc(size);
	fx_rand_fill(model, size);
	write_all(a, model);
	/* A corrupt parity block or second copy for the repair to fix. */
	as = pick_sector(a);
	data_block(a, as, &m, &sec);
	if (rf_array_geom(a)->level >= 4 && rf_array_geom(a)->level <= 6) {
		struct rf_r5_map map;

		rf_r5_map_sector(rf_array_geom(a), as, &map);
		m = map.pd_idx;
	}
	corrupt(sp, m, sec);
	/* Fast enough for a unit test while the writers run. */
	assert_int_equal(rf_sync_set_speed_min(a, 50000), 0);
	for (i = 0; i < NWRITERS; i++) {
		w[i].a = a;
		w[i].model = model;
		w[i].lo = size / NWRITERS * i;
		w[i].hi = size / NWRITERS * (i + 1);
		fx_rng_init(&w[i].rng, (uint64_t)i + 1);
		w[i].stop = &stop;
		w[i].nwrites = 0;
		w[i].slowest = 0;
		assert_int_equal(pthread_create(&t[i], NULL, writer_main, &w[i]), 0);
	}
	assert_int_equal(rf_sync_request(a, RF_SYNC_REPAIR), 0);
	assert_int_equal(rf_sync_request(a, RF_SYNC_CHECK), -EBUSY);
	rf_sync_wait(a);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < NWRITERS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		/* A region holds writes for its own IO only: nothing like
		 * the stall of a lost wake-up (which lasts until the walk
		 * ends).  Generous: a loaded machine stretches regions. */
		if (w[i].slowest > 2.0)
			fail_msg("%s: a write took %.3f s during the repair", sp->what, w[i].slowest);
	}
	rf_sync_get(a, &st);
	/* The writers may have rewritten the corrupt block first. */
	assert_true(st.mismatch_cnt <= 8);
	assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
	close_verified(a, model, sp->what);
}

static void test_foreground_race(void **state)
{
	static const int pick[] = { 0, 3, 6, 8 };      /* raid1, raid10-f2, raid5, raid6 */
	unsigned i;

	for (i = 0; i < sizeof(pick) / sizeof(pick[0]); i++) {
		race_one(&specs[pick[i]], 2);
		race_one(&specs[pick[i]], 0);
	}
}

/* ---- the region's lock on its rows ---- */

/* One request in flight: its end is posted on sem. */
struct waiter {
	sem_t sem;
	int err;
};

static void waiter_done(struct rf_req *r, int err)
{
	struct waiter *w = r->priv;

	w->err = err;
	sem_post(&w->sem);
}

static struct rf_req *submit_async(struct rf_array *a, int op, uint64_t off, uint32_t len, char *buf,
				   struct waiter *w)
{
	struct rf_req *r = rf_req_alloc(a, len);

	assert_non_null(r);
	sem_init(&w->sem, 0, 0);
	w->err = 0;
	r->off = off;
	r->len = len;
	r->op = (uint8_t)op;
	r->buf = buf;
	r->priv = w;
	r->done = waiter_done;
	rf_req_submit(a, r);
	return r;
}

static void wait_async(struct rf_req *r, struct waiter *w)
{
	while (sem_wait(&w->sem))
		;
	sem_destroy(&w->sem);
	assert_int_equal(w->err, 0);
	rf_req_free(r);
}

/* A region holds rows [lo, hi) of sp's array (what sync regions lock)
 * while one write goes to the array's first block (rows 0..) and one to
 * its last block (the last rows): whether each was held.  Deterministic:
 * the admission is made in rf_req_submit() itself, so once it returns a
 * held write is on the region's queue, and one not held is on its way
 * (and ends while the rows stay locked).  Either way both end once the
 * region unlocks, and read back what was written.  Unless the region
 * covers every row, a second region holds rows between the two writes
 * meanwhile: the held write waits for its own region alone, ending while
 * the second stays locked. */
static void window_writes(const struct spec *sp, uint64_t lo, uint64_t hi, bool *near_held, bool *far_held)
{
	struct rf_array *a;
	struct rf_range range, other;
	struct waiter wn, wf;
	uint64_t other_lo = 0;
	bool have_other = false;
	struct rf_req *rn, *rf;
	char *near = malloc(4096), *far = malloc(4096), *back = malloc(4096);
	uint64_t size, nlo, nhi, flo, fhi;
	unsigned q;

	make_members(sp, false);
	a = open_array(sp, 2);
	size = rf_array_size(a);
	fx_rand_fill(near, 4096);
	fx_rand_fill(far, 4096);
	/* Where the two writes land, in the walk's rows. */
	rf_array_write_rows(a, 0, 4096, &nlo, &nhi);
	rf_array_write_rows(a, size - 4096, 4096, &flo, &fhi);
	assert_true(nlo < hi && lo < nhi);
	assert_true(flo >= 256);

	rf_sync_rows_begin(a, NULL);
	rf_rangelock_lock(rf_array_rangelock(a), &range, lo, hi);
	/* Another region in flight, on rows neither write touches. */
	if (hi != UINT64_MAX) {
		other_lo = (hi > nhi ? hi : nhi) + 256;
		assert_true(other_lo + 256 <= flo);
		rf_rangelock_lock(rf_array_rangelock(a), &other, other_lo, other_lo + 256);
		have_other = true;
	}
	rf = submit_async(a, RF_REQ_WRITE, size - 4096, 4096, far, &wf);
	q = rf_rangelock_queued(rf_array_rangelock(a), &range);
	*far_held = q == 1;
	if (!*far_held)
		wait_async(rf, &wf);    /* ends with the region's rows locked */
	rn = submit_async(a, RF_REQ_WRITE, 0, 4096, near, &wn);
	*near_held = rf_rangelock_queued(rf_array_rangelock(a), &range) == q + 1;
	if (*near_held)
		assert_int_equal(sem_trywait(&wn.sem), -1);     /* not ended: waits for the region */
	rf_rangelock_unlock(rf_array_rangelock(a), &range);
	/* It waited for its region alone: it ends with the other one still
	 * locked. */
	if (have_other) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 10;
		while (sem_timedwait(&wn.sem, &ts))
			if (errno == ETIMEDOUT)
				fail_msg("%s: the write into [%llu, %llu) waits for the region at %llu too", sp->what,
					 (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)other_lo);
		sem_post(&wn.sem);      /* for wait_async */
	}
	wait_async(rn, &wn);
	if (*far_held)
		wait_async(rf, &wf);
	if (have_other) {
		assert_int_equal(rf_rangelock_queued(rf_array_rangelock(a), &other), 0);
		rf_rangelock_unlock(rf_array_rangelock(a), &other);
	}
	rf_sync_rows_end(a);
	assert_int_equal(atomic_load(&rf_array_rangelock(a)->nwaiting), 0);
	assert_true(LIST_EMPTY(&rf_array_rangelock(a)->inflight));

	assert_int_equal(do_io(a, RF_REQ_READ, 0, 4096, back), 0);
	assert_memory_equal(back, near, 4096);
	assert_int_equal(do_io(a, RF_REQ_READ, size - 4096, 4096, back), 0);
	assert_memory_equal(back, far, 4096);
	rf_array_close(a);
	free(near);
	free(far);
	free(back);
}

static void test_window_writes(void **state)
{
	static const int pick[] = { 0, 2, 6, 8 };      /* raid1, raid10-n2, raid5, raid6 */
	unsigned i;
	bool near, far;

	for (i = 0; i < sizeof(pick) / sizeof(pick[0]); i++) {
		const struct spec *sp = &specs[pick[i]];

		/* A region over rows [0, 256): the first block's write waits,
		 * the last block's never does. */
		window_writes(sp, 0, 256, &near, &far);
		if (!near || far)
			fail_msg("%s: region [0, 256): first block %s, last block %s", sp->what,
				 near ? "held" : "NOT held", far ? "HELD" : "not held");
		/* Negative control: a lock over every row (what a drain of
		 * every write amounts to) holds the far write too. */
		window_writes(sp, 0, UINT64_MAX, &near, &far);
		if (!near || !far)
			fail_msg("%s: control over every row: first block %s, last block %s", sp->what,
				 near ? "held" : "NOT held", far ? "held" : "NOT held");
	}
}

/* ---- foreground first ---- */

struct reader {
	struct rf_array *a;
	volatile int *stop;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	uint64_t blocks = rf_array_size(r->a) / 4096, i = 0;
	char *buf = malloc(4096);

	while (!__atomic_load_n(r->stop, __ATOMIC_ACQUIRE))
		assert_int_equal(do_io(r->a, RF_REQ_READ, (i++ * 7919 % blocks) * 4096, 4096, buf), 0);
	free(buf);
	return NULL;
}

/* How often a timed walk may miss its pace before the test says so. */
#define PACE_TRIES 3

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* While foreground reads run, a check keeps near sync_speed_min (and
 * reports that speed); on the idle array it is not held to it (printed). */
static void test_throttle(void **state)
{
	const struct spec *sp = &specs[6];     /* raid5 */
	volatile int stop = 0;
	struct rf_sync_status st;
	struct reader rd;
	struct rf_array *a;
	unsigned seen = 0;
	double t0, idle, busy, want;
	pthread_t t;
	int try;

	make_members(sp, false);
	a = open_array(sp, 2);
	t0 = seconds();
	run_action(a, RF_SYNC_CHECK);
	idle = seconds() - t0;
	/* dev_sectors / 2 KiB at 4000 KiB/s */
	want = (double)rf_array_geom(a)->dev_sectors / 2 / 4000;
	assert_int_equal(rf_sync_set_speed_min(a, 4000), 0);
	/* A check that runs fast beside the reads is measured PACE_TRIES
	 * times: a reader thread descheduled by other work on the machine
	 * leaves the array idle for a while (the walk is right to run then),
	 * a broken throttle runs fast every time. */
	for (try = 1;; try++) {
		stop = 0;
		seen = 0;
		rd.a = a;
		rd.stop = &stop;
		assert_int_equal(pthread_create(&t, NULL, reader_main, &rd), 0);
		usleep(20 * 1000);
		t0 = seconds();
		assert_int_equal(rf_sync_request(a, RF_SYNC_CHECK), 0);
		for (;;) {
			rf_sync_get(a, &st);
			if (st.action != RF_SYNC_CHECK)
				break;
			if (st.speed > seen)
				seen = st.speed;
			usleep(50 * 1000);
		}
		busy = seconds() - t0;
		__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
		assert_int_equal(pthread_join(t, NULL), 0);
		printf("check: idle %.3f s, with foreground reads %.3f s (paced: %.3f s), speed seen %u KiB/s\n",
		       idle, busy, want, seen);
		if (busy >= want * 0.8 || try == PACE_TRIES)
			break;
	}
	rf_array_close(a);
	if (busy < want * 0.8)
		fail_msg("check ran %.3f s beside foreground reads, %d times; sync_speed_min makes it %.3f s", busy,
			 PACE_TRIES, want);
	/* How fast the idle walk runs is a speed, measured by make bench
	 * (tools/bench-resync.sh), not asserted here: under a sanitizer on a
	 * loaded machine the idle check took 0.40 s beside 0.76 s paced. */
	assert_true(seen > 0 && seen <= 4000 * 1.2);
}

struct notice {
	int calls;
	enum rf_sync_action act;
	bool completed;
	uint64_t pos;
};

static void on_sync_end(struct rf_array *a, enum rf_sync_action act, bool completed, uint64_t pos, void *priv)
{
	struct notice *n = priv;

	n->calls++;
	n->act = act;
	n->completed = completed;
	n->pos = pos;
}

/* Stop ("idle") mid-way leaves the rows done consistent; a resync resumes
 * where it stopped; frozen shows until a start. */
static void test_stop_resume(void **state)
{
	const struct spec *sp = &specs[6];     /* raid5 */
	struct rf_sync_status st;
	struct rf_array *a;
	uint64_t cp;
	char line[200], bar[32];
	struct notice note = { 0 };
	int calls;
	unsigned pct, tenth, mins, speed;
	unsigned long long done, total;

	make_members(sp, true);
	a = open_array(sp, 2);
	rf_sync_set_notify(a, on_sync_end, &note);
	/* Slow: at 1 MiB/s a 1 MiB region takes about a second. */
	assert_int_equal(rf_sync_set_speed_max(a, 1024), 0);
	assert_int_equal(rf_sync_request(a, RF_SYNC_RESYNC), 0);
	rf_sync_get(a, &st);
	assert_int_equal(st.action, RF_SYNC_RESYNC);
	assert_int_equal(st.total, rf_array_geom(a)->dev_sectors);
	usleep(200 * 1000);
	/* mdstat's line, md's format. */
	assert_true(rf_sync_progress_line(a, line, sizeof(line)) > 0);
	printf("%s\n", line);
	assert_int_equal(sscanf(line, "[%21[=>.]]  resync = %u.%u%% (%llu/%llu) finish=%u.%umin speed=%uK/sec",
				bar, &pct, &tenth, &done, &total, &mins, &tenth, &speed), 8);
	assert_int_equal(strlen(bar), 21);
	assert_int_equal(total, rf_array_geom(a)->dev_sectors / 2);
	assert_true(done > 0 && done < total && pct <= 100);
	assert_int_equal(strchr(bar, '>') - bar, pct / 5);
	assert_int_equal(rf_sync_progress_line(a, line, 20), -EOVERFLOW);
	assert_int_equal(rf_sync_request(a, RF_SYNC_FROZEN), 0);
	assert_int_equal(rf_sync_progress_line(a, line, sizeof(line)), 0);
	rf_sync_get(a, &st);
	assert_int_equal(st.action, RF_SYNC_FROZEN);
	cp = st.resync_cp;
	assert_true(cp > 0 && cp < st.total);
	/* Checkpoints come before the end: the last call is the stop. */
	assert_true(note.calls >= 1);
	calls = note.calls;
	assert_int_equal(note.act, RF_SYNC_RESYNC);
	assert_false(note.completed);
	assert_int_equal(note.pos, cp);
	assert_true(st.speed_max_local);
	assert_int_equal(rf_sync_set_speed_max(a, 0), 0);
	rf_sync_get(a, &st);
	assert_false(st.speed_max_local);
	assert_int_equal(st.speed_max, RF_SYNC_SPEED_MAX_DEFAULT);
	assert_int_equal(rf_sync_set_speed_max(a, 1u << 31), -EINVAL);
	run_action(a, RF_SYNC_RESYNC);
	rf_sync_get(a, &st);
	assert_true(st.resync_cp == RF_SYNC_NONE);
	assert_true(note.calls > calls);
	assert_true(note.completed);
	assert_int_equal(note.pos, st.total);
	assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
	/* A resync_offset from the superblock: the next resync starts there. */
	assert_int_equal(rf_sync_set_resync_cp(a, 1024), 0);
	rf_sync_get(a, &st);
	assert_int_equal(st.resync_cp, 1024);
	assert_int_equal(note.act, RF_SYNC_IDLE);
	assert_int_equal(note.pos, 1024);
	assert_int_equal(rf_sync_set_resync_cp(a, st.total + 8), 0);
	rf_sync_get(a, &st);
	assert_true(st.resync_cp == RF_SYNC_NONE);
	assert_true(note.pos == RF_SYNC_NONE);
	assert_int_equal(rf_sync_request(a, RF_SYNC_IDLE), 0);
	rf_sync_get(a, &st);
	assert_int_equal(st.action, RF_SYNC_IDLE);
	rf_array_close(a);
}

/* The sync thread's IO goes through the array's IO backend: short
 * transfers, EAGAIN and a full queue change nothing; a member whose IO
 * fails is marked faulty and ends the action, not completed. */
static void test_faults(void **state)
{
	const struct spec *r5 = &specs[6], *r1 = &specs[1];   /* raid5, raid1 x3 */
	struct notice note = { 0 };
	struct rf_sync_status st;
	struct rf_array *a;

	make_members(r5, true);
	fake_reset();
	a = open_array_on(r5, 2, fake_ioq_init);
	fake_short_every = 3;
	fake_again_every = 5;
	fake_busy_depth = 2;
	run_action(a, RF_SYNC_RESYNC);
	assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
	assert_true(fake_nr_short > 0 && fake_nr_again > 0);
	rf_array_close(a);
	fake_reset();

	make_members(r1, false);
	a = open_array_on(r1, 2, fake_ioq_init);
	rf_sync_set_notify(a, on_sync_end, &note);
	corrupt(r1, 2, 64);
	fake_fail_member = 1;
	fake_fail_after = 1;
	run_action(a, RF_SYNC_REPAIR);
	assert_int_equal(note.calls, 1);
	assert_false(note.completed);
	assert_true(note.pos < walk_sectors(a));
	assert_true(rf_array_faulty(a) & (1u << 1));
	fake_fail_member = -1;
	/* Two copies left: they are compared still; the repair stopped
	 * before it reached the corrupt block, or fixed it. */
	run_action(a, RF_SYNC_REPAIR);
	assert_true(note.completed);
	assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
	rf_sync_get(a, &st);
	assert_int_equal(st.mismatch_cnt, 0);
	rf_array_close(a);

	/* A degraded parity array has nothing to compare against. */
	make_members(r5, false);
	a = open_array_on(r5, 2, fake_ioq_init);
	fake_fail_member = 0;
	{
		char blk[4096];

		assert_int_equal(do_io(a, RF_REQ_READ, 0, 4096, blk), 0);
	}
	assert_true(rf_array_faulty(a) & 1);
	assert_int_equal(rf_sync_request(a, RF_SYNC_CHECK), -EIO);
	fake_reset();
	rf_array_close(a);
}

/* ---- raid6 with one member missing ---- */

/* raid6, member x failed, then the parity that the compare of each row
 * checks corrupted in a few rows (Q where x holds data or P, P where x
 * holds Q), in rows where the second member to fail, y, is not the one
 * corrupted.  With resync: check counts them, resync rewrites them from
 * the data and P, check counts 0, and once y fails too every byte reads
 * as written.  Without (the control): a read after y fails comes from the
 * corrupt parity.  Returns whether every byte read as written. */
static bool one_missing_case(const struct spec *sp, bool resync)
{
	const int x = 0, y = 2;
	struct rf_array *a;
	char *model = fresh_array(sp, &a);
	const struct rf_geom *g = rf_array_geom(a);
	uint64_t c, nchunks = rf_array_size(a) / 512 / g->chunk_sectors, size = rf_array_size(a), off;
	int roles[3] = { 0 }, ncorrupt = 0;
	char *buf = malloc(IOMAX);
	bool same = true;

	assert_true(rf_member_fail(a, x, EIO, "test", 0));
	for (c = 0; c < nchunks && ncorrupt < 9; c += (uint64_t)g->data_disks) {
		struct rf_r5_map map;
		int role, bad;

		rf_r5_map_sector(g, c * g->chunk_sectors + 8 * (c % 5), &map);
		role = map.pd_idx == x ? 1 : map.qd_idx == x ? 2 : 0;
		bad = role == 2 ? map.pd_idx : map.qd_idx;
		if (bad == y || roles[role] >= 3)
			continue;
		roles[role]++;
		ncorrupt++;
		corrupt(sp, bad, map.dev_sector);
	}
	if (!roles[0] || !roles[1] || !roles[2])
		fail_msg("%s: rows with member %d as data, P and Q: %d %d %d", sp->what, x, roles[0], roles[1],
			 roles[2]);
	if (resync) {
		uint64_t mm = run_action(a, RF_SYNC_CHECK);

		if (mm != (uint64_t)ncorrupt * 8)
			fail_msg("%s, member %d missing: check counted %llu sectors for %d bad blocks", sp->what, x,
				 (unsigned long long)mm, ncorrupt);
		run_action(a, RF_SYNC_RESYNC);
		assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
	}
	assert_true(rf_member_fail(a, y, EIO, "test", 0));
	for (off = 0; off < size && same; off += IOMAX) {
		uint32_t len = (uint32_t)(size - off < IOMAX ? size - off : IOMAX);

		assert_int_equal(do_io(a, RF_REQ_READ, off, len, buf), 0);
		same = !memcmp(buf, model + off, len);
	}
	free(buf);
	rf_array_close(a);
	free(model);
	return same;
}

static void test_raid6_one_missing(void **state)
{
	unsigned si;

	for (si = 0; si < NSPECS; si++) {
		if (specs[si].level != 6)
			continue;
		if (!one_missing_case(&specs[si], true))
			fail_msg("%s: after the resync with one member missing, a second failure reads what was "
				 "not written", specs[si].what);
		if (one_missing_case(&specs[si], false))
			fail_msg("%s: the control read every byte right with the corrupt parity left in place",
				 specs[si].what);
	}
}

/* ---- rebuild onto spares ---- */

static void spare_path(char *buf, size_t len, const struct spec *sp, int i)
{
	snprintf(buf, len, "%s/%s-spare%d.img", fx_dir, sp->what, i);
}

/* Wait until no device is being rebuilt and no action runs. */
static void wait_rebuilt(struct rf_array *a, const char *what)
{
	struct rf_sync_status st;
	int i;

	for (i = 0; i < 3000; i++) {
		rf_sync_get(a, &st);
		if (!rf_array_recovering(a) && st.action == RF_SYNC_IDLE && !rf_array_faulty(a))
			return;
		usleep(10000);
	}
	fail_msg("%s: the rebuild did not end in 30 s (recovering %llx, faulty %llx, action %d)", what,
		 (unsigned long long)rf_array_recovering(a), (unsigned long long)rf_array_faulty(a),
		 (int)st.action);
}

/* Fail nfail members while writers run, add as many spares (garbage in
 * them): the array rebuilds onto them with the writers still going, then
 * reads back every write, checks clean, and the spares hold their slots'
 * data on disk (the array assembled again from them reads the same). */
static void rebuild_one(const struct spec *sp, int gtc, int nfail)
{
	static char junk[MEMBER_BYTES];
	struct writer w[NWRITERS];
	pthread_t t[NWRITERS];
	volatile int stop = 0;
	struct rf_dev_info di;
	struct rf_array *a;
	struct rf_config cfg;
	char err[512], p[512], name[64];
	uint64_t size;
	char *model;
	int i, f, fd, victim[2] = { 1, sp->n - 1 };

	make_members(sp, false);
	a = open_array(sp, gtc);
	size = rf_array_size(a);
	model = malloc(size);
	fx_rand_fill(model, size);
	write_all(a, model);
	assert_int_equal(rf_sync_set_speed_min(a, 100000), 0);
	for (i = 0; i < NWRITERS; i++) {
		w[i] = (struct writer){ .a = a, .model = model, .lo = size / NWRITERS * i,
					.hi = size / NWRITERS * (i + 1), .stop = &stop };
		fx_rng_init(&w[i].rng, (uint64_t)i + 1);
		assert_int_equal(pthread_create(&t[i], NULL, writer_main, &w[i]), 0);
	}
	for (f = 0; f < nfail; f++) {
		member_path(p, sizeof(p), sp, victim[f]);
		snprintf(name, sizeof(name), "%s", strrchr(p, '/') + 1);
		assert_int_equal(rf_memberctl_set_state(a, name, "faulty"), 0);
		assert_true(rf_array_faulty(a) & (1ull << victim[f]));
		/* An active member is not removed; a word md does not know is refused. */
		assert_int_equal(rf_memberctl_set_state(a, name, "bogus"), -EINVAL);
	}
	for (f = 0; f < nfail; f++) {
		spare_path(p, sizeof(p), sp, f);
		fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
		assert_true(fd >= 0);
		fx_rand_fill(junk, sizeof(junk));
		assert_int_equal(pwrite(fd, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
		close(fd);
		if (rf_memberctl_add_spare(a, p, err, sizeof(err)))
			fail_msg("%s: add %s: %s", sp->what, p, err);
		/* The same file twice is refused. */
		assert_int_equal(rf_memberctl_add_spare(a, p, err, sizeof(err)), -EEXIST);
	}
	wait_rebuilt(a, sp->what);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < NWRITERS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	verify_all(a, model, sp->what);
	assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
	/* The spares serve the failed slots; the failed devices are listed
	 * faulty, without a slot, until removed. */
	assert_int_equal(rf_member_ndevs(a), sp->n + nfail);
	for (f = 0; f < nfail; f++) {
		assert_int_equal(rf_member_info(a, victim[f], &di), 0);
		assert_true(strstr(di.name, "spare") != NULL);
		assert_int_equal(di.slot, victim[f]);
		assert_int_equal(di.flags & (RF_DEV_IN_SYNC | RF_DEV_FAULTY | RF_DEV_SPARE), RF_DEV_IN_SYNC);
		assert_int_equal(di.recovery_start, UINT64_MAX);
		member_path(p, sizeof(p), sp, victim[f]);
		i = rf_member_find(a, strrchr(p, '/') + 1);
		assert_true(i >= sp->n);
		assert_int_equal(rf_member_info(a, i, &di), 0);
		assert_int_equal(di.slot, -1);
		assert_true(di.flags & RF_DEV_FAULTY);
		assert_int_equal(rf_memberctl_set_state(a, di.name, "remove"), 0);
	}
	assert_int_equal(rf_member_ndevs(a), sp->n);
	rf_array_close(a);

	/* From the files: the spares in the failed slots. */
	testcfg_init(&cfg, sp->level, sp->layout, sp->n, sp->chunk);
	cfg.data_offset = DATA_OFFSET;
	for (i = 0; i < sp->n; i++) {
		member_path(p, sizeof(p), sp, i);
		for (f = 0; f < nfail; f++)
			if (victim[f] == i)
				spare_path(p, sizeof(p), sp, f);
		cfg.members[i] = strdup(p);
	}
	if (rf_array_open(&cfg, &a, err, sizeof(err)))
		fail_msg("%s: %s", sp->what, err);
	for (i = 0; i < sp->n; i++)
		free(cfg.members[i]);
	assert_int_equal(rf_array_start(a), 0);
	assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
	close_verified(a, model, sp->what);
}

/* raid10's rebuild checkpoint, for near, far and offset copies: md's
 * recovery_offset X recorded after a walk of [0, P) never claims a member
 * sector that a copy of an array sector at or past P lies at (every copy
 * of A >= P is at X or above), and the walk resumed from X starts at or
 * before P, past no array sector with a copy at X or above.  A checkpoint
 * of 0 would pass those: half-way through, X and the resume point must be
 * past 0. */
static void test_raid10_checkpoint(void **state)
{
	static const int pick[] = { 2, 3, 4 };  /* raid10 n2, f2, o2 */
	unsigned i;

	for (i = 0; i < sizeof(pick) / sizeof(pick[0]); i++) {
		const struct spec *sp = &specs[pick[i]];
		struct rf_array *a;
		const struct rf_geom *g;
		uint64_t p, x, p0, as;
		int devs[RF_MAX_MEMBERS], n, c;
		uint64_t secs[RF_MAX_MEMBERS];

		make_members(sp, false);
		a = open_array(sp, 2);
		g = rf_array_geom(a);
		assert_non_null(rf_array_sync_ops(a)->dev_offset);
		for (p = 0; p <= g->array_sectors; p += 8) {
			x = rf_array_sync_ops(a)->dev_offset(a, p);
			p0 = rf_array_sync_ops(a)->walk_start(a, x);
			if (p0 > p)
				fail_msg("%s: walked to %llu, checkpoint %llu resumes at %llu", sp->what,
					 (unsigned long long)p, (unsigned long long)x, (unsigned long long)p0);
			for (as = 0; as < g->array_sectors; as += 8) {
				n = rf_r10_map(g, as, devs, secs);
				for (c = 0; c < n; c++) {
					if (as >= p && secs[c] < x)
						fail_msg("%s: walked to %llu, checkpoint %llu claims member %d sector %llu of array sector %llu",
							 sp->what, (unsigned long long)p, (unsigned long long)x, devs[c],
							 (unsigned long long)secs[c], (unsigned long long)as);
					if (as < p0 && secs[c] >= x)
						fail_msg("%s: resumed from %llu at %llu skips member %d sector %llu of array sector %llu",
							 sp->what, (unsigned long long)x, (unsigned long long)p0, devs[c],
							 (unsigned long long)secs[c], (unsigned long long)as);
				}
			}
		}
		/* Far copies of the first chunks lie past every near copy: a
		 * walk in array order writes them early, but md's one offset
		 * can say so only once the near copies are all done, so a far
		 * layout resumes from the start in array order (the bitmap's
		 * rebuild; a whole one goes by member sector: the recover
		 * table). */
		x = rf_array_sync_ops(a)->dev_offset(a, g->array_sectors / 2);
		if (!x || (g->far_copies == 1 || g->far_offset) != (rf_array_sync_ops(a)->walk_start(a, x) > 0))
			fail_msg("%s: half-way checkpoint %llu resumes at %llu", sp->what, (unsigned long long)x,
				 (unsigned long long)rf_array_sync_ops(a)->walk_start(a, x));
		rf_array_close(a);
	}
}

/* The walk pauses here, its lock let go after a look at the load, long
 * enough for the idle workers to cut every region left. */
static void pause_walk(void)
{
	usleep(5000);
}

/* Regression: while the walk thread looks at the load (its lock let go),
 * idle workers cut regions themselves, up to the end of the array; the
 * walk must look at the cursor again before it cuts one.  The buggy walk
 * cut a region of 0 sectors at the end: its read failed, every member was
 * marked faulty and the check ended "stopped by an IO error".  Expected:
 * each action ends with the array whole and nothing found. */
static void test_cut_at_end(void **state)
{
	const struct spec *sp = &specs[6];     /* raid5, 2 MiB members: 2 idle regions */
	struct rf_array *a;
	int round;

	make_members(sp, false);
	a = open_array(sp, 2);
	/* Unpaced: a worker cuts the next region as soon as it may. */
	assert_int_equal(rf_sync_set_speed_max(a, INT32_MAX), 0);
	rf_sync_test_looked = pause_walk;
	for (round = 0; round < 4; round++) {
		assert_int_equal(run_action(a, round % 2 ? RF_SYNC_RESYNC : RF_SYNC_CHECK), 0);
		if (rf_array_faulty(a))
			fail_msg("round %d: members faulty after the walk: 0x%llx", round,
				 (unsigned long long)rf_array_faulty(a));
	}
	rf_sync_test_looked = NULL;
	rf_array_close(a);
}

/* The walk thread's look at the load, 6 ms late. */
static void late_walk(void)
{
	usleep(6000);
}

/* Regression: the pace keeps its schedule on a loaded machine.  The walk
 * thread comes back 6 ms late from every look at the load (late_walk), as
 * a thread of a busy machine is scheduled late; an idle check of 64 MiB
 * members, 128 KiB regions read inline (512 of them), with
 * sync_speed_max set for 1.5 s.  The buggy walk timed each region from
 * its cut and left a worker the pace held back waiting for the walk
 * thread's next look: a region per look at best, 512 x 6 ms and more.
 * Expected: about 1.5 s, not under it by more than a tenth of a second
 * of the walk's speed and a region or two (sync_speed_max caps it), and
 * not over 1.5x it and 0.25 s.  Skipped when the machine cannot run the
 * check unpaced in 1 s (then it measures the CPUs, not the pace). */
static void test_pace_late(void **state)
{
	const struct spec *sp = &specs[6];     /* raid5 */
	const uint64_t bytes = 64u << 20;
	struct rf_array *a;
	double t0, free_s, took, want;
	unsigned speed;
	int try;

	fx_make_members(sp->what, sp->n, bytes, false);
	assert_int_equal(setenv("RAIDFUSE_SYNC_IO", "inline", 1), 0);
	a = open_array(sp, 2);
	rf_sync_test_looked = late_walk;
	assert_int_equal(rf_sync_set_speed_max(a, INT32_MAX), 0);
	/* The first walk brings the members' pages in: not timed. */
	assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
	t0 = seconds();
	assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
	free_s = seconds() - t0;
	speed = (unsigned)(rf_array_geom(a)->dev_sectors / 2 / 1.5);
	want = (double)rf_array_geom(a)->dev_sectors / 2 / speed;
	assert_int_equal(rf_sync_set_speed_max(a, speed), 0);
	/* Running past the cap fails at once; falling behind is tried
	 * PACE_TRIES times (the bug fell behind every time; a machine busy
	 * with other work, now and then). */
	for (try = 1;; try++) {
		t0 = seconds();
		assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
		took = seconds() - t0;
		printf("check unpaced: %.3f s; at sync_speed_max %u: %.3f s (its limit: %.3f s)\n", free_s, speed,
		       took, want);
		if (free_s > 1.0 || took < want - 0.15 || took <= want * 1.5 + 0.25 || try == PACE_TRIES)
			break;
	}
	rf_sync_test_looked = NULL;
	rf_array_close(a);
	assert_int_equal(unsetenv("RAIDFUSE_SYNC_IO"), 0);
	make_members(sp, false);
	if (free_s > 1.0) {
		skip();
		return;
	}
	if (took < want - 0.15)
		fail_msg("check took %.3f s at sync_speed_max %u: ran past it (%.3f s at that rate)", took, speed,
			 want);
	if (took > want * 1.5 + 0.25)
		fail_msg("check took %.3f s at sync_speed_max %u, %d times: fell behind its pace (%.3f s at that rate)",
			 took, speed, PACE_TRIES, want);
}

/* Regression: a walk idle for longer than BUSY_RECENT keeps its workers
 * cutting.  An idle check of 64 MiB members (inline, 128 KiB regions),
 * its walk thread 6 ms late from every look (late_walk): paced to reach
 * half way in about 5.5 s, then sync_speed_max raised for the rest to
 * take 0.5 s.  The buggy walk stopped renewing the idle verdict once the
 * array had been idle that long (one look, no renewal), so the workers
 * stopped cutting and the walk thread cut every region itself, one per
 * look: 256 x 6 ms and more for the second half.  Expected: the second
 * half within 1.5x its time and 0.25 s. */
static void test_pace_settled(void **state)
{
	const struct spec *sp = &specs[6];     /* raid5 */
	const uint64_t bytes = 64u << 20;
	struct rf_sync_status st;
	struct rf_array *a;
	uint64_t total, done = 0;
	double t0, took, want;
	unsigned speed;
	int try;

	fx_make_members(sp->what, sp->n, bytes, false);
	assert_int_equal(setenv("RAIDFUSE_SYNC_IO", "inline", 1), 0);
	a = open_array(sp, 2);
	total = rf_array_geom(a)->dev_sectors;
	/* The first walk brings the members' pages in. */
	assert_int_equal(rf_sync_set_speed_max(a, INT32_MAX), 0);
	assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
	rf_sync_test_looked = late_walk;
	/* As test_pace_late: falling behind is tried PACE_TRIES times. */
	for (try = 1;; try++) {
		assert_int_equal(rf_sync_set_speed_max(a, (unsigned)(total / 2 / 2 / 5.5)), 0);
		t0 = seconds();
		assert_int_equal(rf_sync_request(a, RF_SYNC_CHECK), 0);
		for (;;) {
			rf_sync_get(a, &st);
			if (st.action != RF_SYNC_CHECK)
				fail_msg("the check ended before half way");
			if (st.done >= total / 2 || seconds() - t0 > 8)
				break;
			usleep(20 * 1000);
		}
		done = st.done;
		if (seconds() - t0 < 5.2)
			fail_msg("the check was half way after %.3f s at a pace of 5.5 s", seconds() - t0);
		speed = (unsigned)((total - done) / 2 / 0.5);
		want = (double)(total - done) / 2 / speed;
		assert_int_equal(rf_sync_set_speed_max(a, speed), 0);
		t0 = seconds();
		rf_sync_wait(a);
		took = seconds() - t0;
		rf_sync_get(a, &st);
		assert_int_equal(st.mismatch_cnt, 0);
		printf("check from sector %llu of %llu at sync_speed_max %u: %.3f s (its limit: %.3f s)\n",
		       (unsigned long long)done, (unsigned long long)total, speed, took, want);
		if (took <= want * 1.5 + 0.25 || try == PACE_TRIES)
			break;
	}
	rf_sync_test_looked = NULL;
	rf_array_close(a);
	assert_int_equal(unsetenv("RAIDFUSE_SYNC_IO"), 0);
	make_members(sp, false);
	if (took > want * 1.5 + 0.25)
		fail_msg("the rest of the check took %.3f s at sync_speed_max %u, %d times: fell behind its pace (%.3f s)",
			 took, speed, PACE_TRIES, want);
}

/* raid10's rebuild goes by member sector (its recover table): a write's
 * rows hold every member sector a copy of it lies at, so a region being
 * rebuilt holds every write that touches what it copies.  Writes of 4 KiB
 * and of 40 KiB (across chunks) everywhere, for near, far and offset
 * copies; and the rows of a near layout's write stay tight (a chunk row
 * or two), or every write would wait for every region. */
static void test_raid10_recover_rows(void **state)
{
	static const int pick[] = { 2, 3, 4 };  /* raid10 n2, f2, o2 */
	static const uint32_t lens[] = { 4096, 40960 };
	unsigned i, l;

	for (i = 0; i < sizeof(pick) / sizeof(pick[0]); i++) {
		const struct spec *sp = &specs[pick[i]];
		const struct rf_sync_ops *rec;
		const struct rf_geom *g;
		struct rf_array *a;
		uint64_t off, lo, hi, as;
		int devs[RF_MAX_MEMBERS], n, c;
		uint64_t secs[RF_MAX_MEMBERS];

		make_members(sp, false);
		a = open_array(sp, 2);
		g = rf_array_geom(a);
		rec = rf_array_sync_ops(a)->recover;
		assert_non_null(rec);
		assert_int_equal(rec->total(a), g->dev_sectors);
		for (l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
			for (off = 0; off + lens[l] <= g->array_sectors * 512; off += 4096) {
				rec->write_rows(a, off, lens[l], &lo, &hi);
				if (g->far_copies == 1 && hi - lo > 3 * g->chunk_sectors)
					fail_msg("%s: a write of %u at %llu holds rows [%llu, %llu)", sp->what, lens[l],
						 (unsigned long long)off, (unsigned long long)lo, (unsigned long long)hi);
				for (as = off / 512; as < (off + lens[l]) / 512; as += 8) {
					n = rf_r10_map(g, as, devs, secs);
					for (c = 0; c < n; c++)
						if (secs[c] < lo || secs[c] >= hi)
							fail_msg("%s: a write of %u at %llu: rows [%llu, %llu) miss member %d sector %llu",
								 sp->what, lens[l], (unsigned long long)off, (unsigned long long)lo,
								 (unsigned long long)hi, devs[c], (unsigned long long)secs[c]);
				}
			}
		}
		rf_array_close(a);
	}
}

static void test_rebuild(void **state)
{
	static const int pick[] = { 0, 2, 3, 4, 5, 6, 7 };   /* raid1, raid10 x3, raid4, raid5 x2 */
	unsigned i;

	for (i = 0; i < sizeof(pick) / sizeof(pick[0]); i++)
		rebuild_one(&specs[pick[i]], i % 2 ? 2 : 0, 1);
	rebuild_one(&specs[8], 0, 2);   /* raid6: two at once */
	rebuild_one(&specs[9], 2, 1);
	rebuild_one(&specs[10], 0, 2);  /* raid6 DDF: P/Q slots hold zeros */
}

/* The workers read inline on tmpfs and through io_uring elsewhere
 * (sync_walk.c: inline_io()): each way, forced, finds a corrupt data block
 * and rebuilds two raid6 members, whatever file system the test's
 * members are on. */
/* A resync and a check of sp: from the mappings (want_mapped) or not. */
static void walk_mapped(const struct spec *sp, bool want_mapped)
{
	struct rf_sync_status st;
	struct rf_array *a;

	make_members(sp, true);
	a = open_array(sp, 0);
	run_action(a, RF_SYNC_RESYNC);
	rf_sync_get(a, &st);
	if (want_mapped != (st.mapped > 0))
		fail_msg("%s: resync took %llu bytes from mappings (want %s)", sp->what,
			 (unsigned long long)st.mapped, want_mapped ? "some" : "none");
	assert_int_equal(run_action(a, RF_SYNC_CHECK), 0);
	rf_sync_get(a, &st);
	assert_int_equal(st.mapped > 0, want_mapped);
	rf_array_close(a);
}

static void test_io_paths(void **state)
{
	static const char *const how[] = { "ring", "inline" };
	unsigned i, map;
	struct statfs sf;
	bool in_memory = !statfs(fx_dir, &sf) && sf.f_type == TMPFS_MAGIC;

	for (map = 0; map < 2; map++) {
		rf_fdmap_setup(map == 1);
		for (i = 0; i < 2; i++) {
			assert_int_equal(setenv("RAIDFUSE_SYNC_IO", how[i], 1), 0);
			run_specs(data_block_one);
			rebuild_one(&specs[8], 0, 2);
			walk_mapped(&specs[6], map == 1 && in_memory);
			walk_mapped(&specs[9], map == 1 && in_memory);
		}
	}
	rf_fdmap_setup(true);
	unsetenv("RAIDFUSE_SYNC_IO");
}

/* A member shrunk under its mapping (no close: the member watch does not
 * see it): the check's computation faults on its pages, reads the
 * members the usual way, meets the short read and fails the member. */
static void test_mapped_truncated(void **state)
{
	const struct spec *sp = &specs[6];      /* raid5, 4 members */
	struct rf_sync_status st;
	struct rf_array *a;
	char p[512];
	int fd;

	if (!rf_fdmap_on())
		skip();
	rf_fdmap_catch_sigbus();        /* cmocka takes SIGBUS for each test */
	make_members(sp, true);
	a = open_array(sp, 0);
	run_action(a, RF_SYNC_RESYNC);
	member_path(p, sizeof(p), sp, 2);
	fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, DATA_OFFSET + 65536), 0);
	run_action(a, RF_SYNC_CHECK);
	rf_sync_get(a, &st);
	assert_true(st.mapped > 0);
	assert_true(rf_array_faulty(a) & (1u << 2));
	assert_false(rf_array_faulty(a) & ~(1u << 2));
	close(fd);
	rf_array_close(a);
}

/* Levels without redundancy refuse; words parse as md's. */
static void test_words(void **state)
{
	assert_int_equal(rf_sync_action_parse("check\n"), RF_SYNC_CHECK);
	assert_int_equal(rf_sync_action_parse("repair"), RF_SYNC_REPAIR);
	assert_int_equal(rf_sync_action_parse("resync"), RF_SYNC_RESYNC);
	assert_int_equal(rf_sync_action_parse("idle"), RF_SYNC_IDLE);
	assert_int_equal(rf_sync_action_parse("frozen"), RF_SYNC_FROZEN);
	assert_int_equal(rf_sync_action_parse("checkx"), -EINVAL);
	assert_int_equal(rf_sync_action_parse(""), -EINVAL);
	assert_string_equal(rf_sync_action_name(RF_SYNC_REPAIR), "repair");
}

static void test_raid0_refuses(void **state)
{
	static const struct spec r0 = { "raid0", 0, 0, 3, 16384 };
	struct rf_array *a;

	make_members(&r0, false);
	a = open_array(&r0, 2);
	assert_int_equal(rf_sync_request(a, RF_SYNC_CHECK), -EINVAL);
	rf_array_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_words),
		cmocka_unit_test(test_raid0_refuses),
		cmocka_unit_test(test_data_block),
		cmocka_unit_test(test_parity_block),
		cmocka_unit_test(test_resync_garbage),
		cmocka_unit_test(test_stop_resume),
		cmocka_unit_test(test_throttle),
		cmocka_unit_test(test_faults),
		cmocka_unit_test(test_raid6_one_missing),
		cmocka_unit_test(test_foreground_race),
		cmocka_unit_test(test_window_writes),
		cmocka_unit_test(test_rebuild),
		cmocka_unit_test(test_cut_at_end),
		cmocka_unit_test(test_pace_late),
		cmocka_unit_test(test_pace_settled),
		cmocka_unit_test(test_raid10_checkpoint),
		cmocka_unit_test(test_raid10_recover_rows),
		cmocka_unit_test(test_io_paths),
		cmocka_unit_test(test_mapped_truncated),
	};

	return fx_run_tests("sync", tests);
}
