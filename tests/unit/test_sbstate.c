/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_sbstate.c - clean/dirty, events and failed members in the md
 * superblocks of a served array.
 *
 * The arrays are real (1.2 superblocks on member files, rf_assemble(),
 * rf_array_open()), their member IO runs on the synchronous backend with a
 * check in front of it: every data write a member is about to get must
 * find that member's superblock on disk already dirty.  That is md's rule,
 * the one a crash relies on, and the test hammers it with writers racing
 * an idle timer shortened to a few milliseconds.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/core.h"
#include "raidfuse/assemble.h"
#include "raidfuse/super.h"
#include "raidfuse/sync.h"
#include "services/sbstate.h"
#include "fixture.h"
#include "testreq.h"

#define N 4
#define MEMBER_SECTORS 32768ULL         /* 16 MiB */
#define DATA_OFFSET 2048ULL

static char paths[N][FX_PATH];

/* ---- the checking member backend ---- */

static atomic_int nr_writes, nr_clean_writes;
static atomic_bool checking;

/* A data write is about to reach member: its superblock must say dirty. */
static void note_write(struct rf_mio *m, uint64_t off, uint64_t len)
{
	struct rf_sb sb;
	char err[512];
	int fd;

	if (m->op != RF_MIO_WRITE || !atomic_load(&checking))
		return;
	atomic_fetch_add(&nr_writes, 1);
	fd = open(paths[m->member], O_RDONLY);
	if (fd < 0 || rf_sb_read(fd, paths[m->member], &sb, err, sizeof(err)) || sb.clean)
		atomic_fetch_add(&nr_clean_writes, 1);
	if (fd >= 0)
		close(fd);
}


/* ---- arrays and requests ---- */

static void make_members(int level, bool clean)
{
	struct rf_sb_new n = { .level = level, .layout = level == 5 ? 2 : level == 0 ? 1 : 0,
			       .chunk_sectors = 128, .raid_disks = N, .data_offset = DATA_OFFSET,
			       .size = level == 0 ? 0 : (MEMBER_SECTORS - DATA_OFFSET) / 128 * 128,
			       .clean = clean };

	snprintf(n.name, sizeof(n.name), "state");
	fx_md_members(&n, "m", MEMBER_SECTORS, paths);
}

static struct rf_array *open_array(bool readonly, unsigned delay_ms)
{
	const char *p[N] = { paths[0], paths[1], paths[2], paths[3] };
	struct rf_array *a = fx_open_assembled(p, N, readonly, fx_gtc);

	if (rf_array_sbstate(a))
		rf_bg_set_period(&rf_array_sbstate(a)->timer, delay_ms);
	testreq_on_io = note_write;
	fx_start(a, testreq_watch_init);
	return a;
}

static void read_sb(int i, struct rf_sb *sb)
{
	char err[512];
	int fd = open(paths[i], O_RDONLY);

	assert_true(fd >= 0);
	if (rf_sb_read(fd, paths[i], sb, err, sizeof(err)))
		fail_msg("%s", err);
	close(fd);
}


static void sleep_ms(unsigned ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

/* Wait (10 s at most) until *counter reaches want. */
static void wait_for(atomic_uint *counter, unsigned want)
{
	int i;

	for (i = 0; i < 2000 && atomic_load(counter) < want; i++)
		sleep_ms(5);
	assert_true(atomic_load(counter) >= want);
}

static void reset_checks(void)
{
	atomic_store(&nr_writes, 0);
	atomic_store(&nr_clean_writes, 0);
	atomic_store(&checking, true);
}

/* ---- tests ---- */

/* Clean -> a write -> dirty on disk before the data -> idle -> clean;
 * reads change nothing; close marks clean; events count every change. */
static void test_cycle(void **state)
{
	char *buf = aligned_alloc(4096, 65536);
	struct rf_array_info info;
	struct rf_sb sb;
	struct rf_array *a;
	int i;

	make_members(5, true);
	/* No clean marking while the dirty state is checked. */
	a = open_array(false, 600000);
	assert_non_null(rf_array_sbstate(a));
	reset_checks();
	for (i = 0; i < N; i++) {
		read_sb(i, &sb);
		assert_true(sb.clean);
		assert_int_equal(sb.events, 0);
	}
	memset(buf, 0x5a, 65536);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, 65536, buf), 0);
	assert_true(atomic_load(&nr_writes) > 0);
	assert_int_equal(atomic_load(&nr_clean_writes), 0);
	rf_array_get_info(a, &info);
	assert_true(info.sb_dirty);
	for (i = 0; i < N; i++) {
		read_sb(i, &sb);
		assert_false(sb.clean);
		assert_int_equal(sb.resync_offset, 0);
		assert_int_equal(sb.events, 1);
	}
	/* Idle: clean again, one event later. */
	rf_bg_set_period(&rf_array_sbstate(a)->timer, 10);
	rf_sbstate_kick(rf_array_sbstate(a));
	wait_for(&rf_array_sbstate(a)->nr_clean, 1);
	for (i = 0; i < N; i++) {
		read_sb(i, &sb);
		assert_true(sb.clean);
		assert_int_equal(sb.resync_offset, RF_SB_MAX_SECTOR);
		assert_int_equal(sb.events, 2);
	}
	rf_array_get_info(a, &info);
	assert_false(info.sb_dirty);
	/* Reads leave the superblocks alone. */
	assert_int_equal(testreq_io(a, RF_REQ_READ, 0, 65536, buf), 0);
	sleep_ms(100);
	read_sb(0, &sb);
	assert_int_equal(sb.events, 2);
	assert_int_equal(atomic_load(&rf_array_sbstate(a)->nr_dirty), 1);
	/* A write, then close at once: close marks clean. */
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 1 << 20, 4096, buf), 0);
	rf_array_close(a);
	for (i = 0; i < N; i++) {
		read_sb(i, &sb);
		assert_true(sb.clean);
		assert_int_equal(sb.events, 4);
	}
	assert_int_equal(atomic_load(&nr_clean_writes), 0);
	atomic_store(&checking, false);
	free(buf);
}

static void *writer_main(void *arg)
{
	struct fx_writer *w = arg;
	char *buf = aligned_alloc(4096, 16384);
	int i;

	for (i = 0; i < w->n; i++) {
		uint32_t len = 4096u << (fx_rng_next(&w->rng) % 3);
		uint64_t off = (uint64_t)(fx_rng_next(&w->rng) % 2048) * 4096;

		memset(buf, i, len);
		if (testreq_io(w->a, RF_REQ_WRITE, off, len, buf))
			break;
		if (fx_rng_next(&w->rng) % 4 == 0)
			sleep_ms(fx_rng_next(&w->rng) % 6);
	}
	free(buf);
	return NULL;
}

/* Writers in bursts against a 2 ms idle timer: the superblocks flip
 * between clean and dirty many times, and no data write ever finds its
 * member's superblock clean. */
static void test_race_timer(void **state)
{
	struct rf_sb sb, first;
	struct rf_array *a;
	unsigned dirty, clean;
	int i;

	int round;

	make_members(5, true);
	a = open_array(false, 2);
	reset_checks();
	/* Bursts, each ended by an idle period long enough to mark clean;
	 * within a burst the writers' pauses race the timer. */
	for (round = 0; round < 5; round++) {
		unsigned before = atomic_load(&rf_array_sbstate(a)->nr_clean);

		fx_writers(a, 4, 40, (uint64_t)(round * 4), writer_main);
		wait_for(&rf_array_sbstate(a)->nr_clean, before + 1);
	}
	dirty = atomic_load(&rf_array_sbstate(a)->nr_dirty);
	clean = atomic_load(&rf_array_sbstate(a)->nr_clean);
	rf_array_close(a);
	printf("# %d member writes, %u dirty and %u clean marks\n", atomic_load(&nr_writes), dirty, clean);
	assert_true(dirty >= 5);
	assert_int_equal(atomic_load(&nr_clean_writes), 0);
	/* Every change is one event on every member; close made the last. */
	read_sb(0, &first);
	assert_true(first.clean);
	for (i = 1; i < N; i++) {
		read_sb(i, &sb);
		assert_int_equal(sb.events, first.events);
	}
	assert_true(first.events >= dirty + clean);
	atomic_store(&checking, false);
}

/* An array assembled dirty (a crash) keeps its resync due when it is
 * marked clean: md's resync_offset stays where it was. */
static void test_dirty_stays_due(void **state)
{
	char *buf = aligned_alloc(4096, 4096);
	struct rf_sb sb;
	struct rf_array *a;
	int i;

	make_members(5, false);         /* resync due from 0, as after a crash */
	a = open_array(false, 10);
	memset(buf, 1, 4096);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, 4096, buf), 0);
	rf_array_close(a);
	for (i = 0; i < N; i++) {
		read_sb(i, &sb);
		assert_false(sb.clean);
		assert_int_equal(sb.resync_offset, 0);
		assert_int_equal(sb.events, 2);
	}
	free(buf);
}

/* Every member's superblock says resync_offset want. */
static void expect_resync_offset(uint64_t want)
{
	struct rf_sb sb;
	int i;

	for (i = 0; i < N; i++) {
		read_sb(i, &sb);
		if (sb.resync_offset != want)
			fail_msg("member %d: resync_offset %llu, expected %llu", i,
				 (unsigned long long)sb.resync_offset, (unsigned long long)want);
		assert_int_equal(sb.clean, want == RF_SB_MAX_SECTOR);
	}
}

/* The resync that is due: frozen keeps it from starting; once started,
 * its checkpoints reach the (clean) superblocks while it runs, idle
 * records where it stopped, the next one resumes there, and completion
 * records none due.  resync_start's value reaches them too. */
static void test_resync_recorded(void **state)
{
	struct rf_sync_status st;
	struct rf_array *a;
	uint64_t cp;
	struct rf_sb sb;
	int i;

	make_members(5, false);         /* created without --assume-clean */
	a = open_array(false, 10);
	assert_int_equal(rf_sbstate_start_resync(a, true), 0);
	rf_sync_get(a, &st);
	assert_int_equal(st.action, RF_SYNC_FROZEN);
	assert_int_equal(st.resync_cp, 0);
	expect_resync_offset(0);

	/* 2 MiB/s: a 1 MiB region per half second, each a checkpoint (1/16
	 * of 15 MiB is less than a region). */
	assert_int_equal(rf_sync_set_speed_max(a, 2048), 0);
	assert_int_equal(rf_sbstate_start_resync(a, false), 0);
	rf_sync_get(a, &st);
	assert_int_equal(st.action, RF_SYNC_RESYNC);
	for (i = 0; i < 100; i++) {
		read_sb(0, &sb);
		if (sb.resync_offset)
			break;
		usleep(20 * 1000);
	}
	assert_true(sb.resync_offset > 0 && sb.resync_offset < st.total);
	assert_false(sb.clean);
	assert_int_equal(rf_sync_request(a, RF_SYNC_IDLE), 0);
	rf_sync_get(a, &st);
	cp = st.resync_cp;
	assert_true(cp >= sb.resync_offset && cp < st.total);
	expect_resync_offset(cp);

	assert_int_equal(rf_sync_set_speed_max(a, 0), 0);
	assert_int_equal(rf_sync_request(a, RF_SYNC_RESYNC), 0);
	rf_sync_wait(a);
	rf_sync_get(a, &st);
	assert_true(st.resync_cp == RF_SYNC_NONE);
	expect_resync_offset(RF_SB_MAX_SECTOR);
	/* Nothing due any more: nothing starts. */
	assert_int_equal(rf_sbstate_start_resync(a, false), 0);
	rf_sync_get(a, &st);
	assert_int_equal(st.action, RF_SYNC_IDLE);

	assert_int_equal(rf_sync_set_resync_cp(a, 1024), 0);
	expect_resync_offset(1024);
	rf_array_close(a);
	expect_resync_offset(1024);     /* due after a clean stop too */
	a = open_array(false, 10);
	rf_sync_get(a, &st);
	assert_int_equal(st.resync_cp, 1024);
	assert_int_equal(rf_sync_set_resync_cp(a, RF_SYNC_NONE), 0);
	expect_resync_offset(RF_SB_MAX_SECTOR);
	rf_array_close(a);
}

/* A failed member is recorded as faulty (md's role 0xfffe) in the
 * others' superblocks; the next assemble leaves it out. */
static void test_faulty_recorded(void **state)
{
	const char *p[N] = { paths[0], paths[1], paths[2], paths[3] };
	struct rf_config cfg;
	struct rf_sb sb;
	struct rf_array *a;
	char err[1024];
	int i;

	make_members(5, true);
	a = open_array(false, 10);
	rf_member_fail(a, 2, -EIO, "test", 0);
	wait_for(&rf_array_sbstate(a)->nr_faulty, 1);
	rf_array_close(a);
	for (i = 0; i < N; i++) {
		read_sb(i, &sb);
		if (i == 2) {
			assert_int_equal(sb.events, 0);   /* not written to */
			continue;
		}
		assert_int_equal(sb.dev_roles[2], RF_SB_ROLE_FAULTY);
		assert_int_equal(sb.dev_roles[1], 1);
		assert_int_equal(sb.events, 1);
		assert_true(sb.clean);
	}
	assert_int_equal(rf_assemble(p, N, NULL, true, &cfg, err, sizeof(err)), 0);
	assert_null(cfg.members[2]);
	assert_non_null(cfg.members[3]);
	rf_config_free(&cfg);
}

/* The next write waits until the failure is on disk (the timer is not
 * there to do it): a crash after that write cannot bring the failed
 * member's stale data back. */
static void test_write_waits_for_record(void **state)
{
	struct rf_sb sb;
	struct rf_array *a;
	char *buf = calloc(1, 4096);

	make_members(5, true);
	a = open_array(false, 10);
	rf_sbstate_stop(rf_array_sbstate(a));
	rf_member_fail(a, 2, -EIO, "test", 0);
	read_sb(0, &sb);
	assert_int_equal(sb.dev_roles[2], 2);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, 4096, buf), 0);
	assert_int_equal(atomic_load(&rf_array_sbstate(a)->nr_faulty), 1);
	read_sb(0, &sb);
	assert_int_equal(sb.dev_roles[2], RF_SB_ROLE_FAULTY);
	assert_false(sb.clean);
	rf_array_close(a);
	free(buf);
}

/* No state where md keeps none: read-only, no superblocks; a raid0's
 * superblocks are kept (a failure, a takeover change them) but never
 * marked dirty: md has nothing to resync there. */
static void test_no_state(void **state)
{
	struct rf_array *a;
	struct rf_config cfg;
	struct rf_sb sb;
	char err[512], *buf = calloc(1, 4096);
	int i;

	assert_non_null(buf);
	make_members(0, true);
	a = open_array(false, 10);
	assert_non_null(rf_array_sbstate(a));
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, 4096, buf), 0);
	read_sb(0, &sb);
	assert_true(sb.clean);
	rf_array_close(a);
	free(buf);
	make_members(5, true);
	a = open_array(true, 10);
	assert_null(rf_array_sbstate(a));
	rf_array_close(a);

	memset(&cfg, 0, sizeof(cfg));
	rf_config_defaults(&cfg);
	cfg.path = strdup("test");
	cfg.name = strdup("array.img");
	cfg.level = 5;
	cfg.layout = 2;
	cfg.chunk_bytes = 65536;
	cfg.nmembers = N;
	cfg.data_offset = DATA_OFFSET * 512;
	for (i = 0; i < N; i++)
		cfg.members[i] = strdup(paths[i]);
	assert_int_equal(rf_array_open(&cfg, &a, err, sizeof(err)), 0);
	assert_null(rf_array_sbstate(a));        /* a config's array without superblocks (has_uuid unset) */
	rf_array_close(a);
	rf_config_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_cycle, fx_inline0),
		cmocka_unit_test_setup(test_race_timer, fx_inline0),
		cmocka_unit_test_setup(test_cycle, fx_threads2),
		cmocka_unit_test_setup(test_race_timer, fx_threads2),
		cmocka_unit_test_setup(test_dirty_stays_due, fx_inline0),
		cmocka_unit_test_setup(test_resync_recorded, fx_inline0),
		cmocka_unit_test_setup(test_faulty_recorded, fx_inline0),
		cmocka_unit_test_setup(test_write_waits_for_record, fx_inline0),
		cmocka_unit_test_setup(test_no_state, fx_inline0),
	};

	return fx_run_tests("sbstate", tests);
}
