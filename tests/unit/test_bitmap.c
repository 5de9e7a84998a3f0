/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_bitmap.c - md's internal write-intent bitmap: the header format,
 * mdadm's sizing (md/bitmap_fmt.c), the sectors the bits cover
 * (md/layout.c) and those a write touches (the levels' bitmap_range,
 * through rf_bitmap_range()), and a running raid5 array's bits
 * (services/bitmap.c).
 *
 * The arrays are real (1.2 superblocks and a bitmap on member files,
 * rf_assemble(), rf_array_open()), with member IO on the synchronous
 * backend behind a check: every data write a member is about to get must
 * find the bits of its chunks already set in that member's on-disk bitmap
 * (md's rule, the one a crash relies on).  Threads race writes against
 * background passes shortened to a millisecond.
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
#include "raidfuse/bitmap.h"
#include "raidfuse/ctl.h"
#include "raidfuse/super.h"
#include "raidfuse/sync.h"
#include "services/sbstate.h"
#include "fixture.h"
#include "testreq.h"

#define N 4
#define MEMBER_SECTORS 32768ULL         /* 16 MiB */
#define DATA_OFFSET 2048ULL
#define CHUNK_SECTORS 128               /* the raid5 chunk: 64 KiB */
#define BM_CHUNK (256u << 10)           /* bitmap chunk: 512 member sectors */
#define BM_AT ((8 + 8) * 512)           /* the bitmap's byte offset on a member */

static char paths[N][FX_PATH];

/* ---- format ---- */

static struct rf_bitmap_sb sample_sb(void)
{
	struct rf_bitmap_sb b = {
		.version = RF_BITMAP_VERSION,
		.events = 77, .events_cleared = 70, .sync_size = 123456,
		.state = 0, .chunk_bytes = 1u << 20, .daemon_sleep = 5, .write_behind = 0,
		.sectors_reserved = 8,
	};
	int i;

	for (i = 0; i < 16; i++)
		b.uuid[i] = (uint8_t)(0xa0 + i);
	return b;
}

static void test_format_roundtrip(void **state)
{
	struct rf_bitmap_sb b = sample_sb(), back;
	uint8_t buf[RF_BITMAP_SB_BYTES];
	char err[256];

	rf_bitmap_sb_build(&b, buf);
	/* md's layout: "bitm" at 0, version at 4, uuid at 8, events at 24,
	 * sync_size at 40, chunksize at 52, daemon_sleep at 56. */
	assert_memory_equal(buf, "bitm", 4);
	assert_int_equal(buf[4], 4);
	assert_memory_equal(buf + 8, b.uuid, 16);
	assert_int_equal(buf[24], 77);
	assert_int_equal(buf[40] | buf[41] << 8 | buf[42] << 16, 123456);
	assert_int_equal(buf[52 + 2], 0x10);            /* 1 MiB = 0x00100000 LE */
	assert_int_equal(buf[56], 5);
	assert_int_equal(buf[64], 8);
	if (rf_bitmap_sb_parse(buf, "m0", &back, err, sizeof(err)))
		fail_msg("%s", err);
	assert_memory_equal(&back, &b, sizeof(b));
	assert_int_equal(rf_bitmap_bits(123456, 1u << 20), (123456 + 2047) / 2048);
	assert_int_equal(rf_bitmap_bytes(123456, 1u << 20), 256 + (61 + 7) / 8);
	assert_int_equal(rf_bitmap_disk_sectors(123456, 1u << 20), 8);
}

/* Each damage is refused with a message naming the member and the field. */
static void test_parse_rejects(void **state)
{
	static const struct {
		int off, len;
		uint64_t val;
		const char *says;
	} cases[] = {
		{ 0, 4, 0x6d746963, "bad magic" },
		{ 4, 4, 5, "clustered" },
		{ 4, 4, 7, "unknown version 7" },
		{ 52, 4, 3 << 20, "not a power of two" },
		{ 52, 4, 256, "not a power of two of at least 512" },
		{ 56, 4, 0, "daemon_sleep" },
		{ 60, 4, 20000, "write_behind" },
	};
	struct rf_bitmap_sb b = sample_sb(), out;
	uint8_t buf[RF_BITMAP_SB_BYTES];
	char err[256];
	size_t i;
	int k;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rf_bitmap_sb_build(&b, buf);
		for (k = 0; k < cases[i].len; k++)
			buf[cases[i].off + k] = (uint8_t)(cases[i].val >> (8 * k));
		err[0] = '\0';
		assert_int_equal(rf_bitmap_sb_parse(buf, "disk7.img", &out, err, sizeof(err)), -EINVAL);
		if (!strstr(err, "disk7.img: bitmap: ") || !strstr(err, cases[i].says))
			fail_msg("case %zu: message '%s' lacks '%s'", i, err, cases[i].says);
	}
}

/* mdadm 4.2's sizes: 4 KiB of room below 8 GiB, a 64 MiB floor, the
 * smallest chunk whose bits fit, a requested chunk checked. */
static void test_choose_chunk(void **state)
{
	uint32_t c;
	char err[256];

	assert_int_equal(rf_bitmap_choose_chunk(260096, 8, 0, &c, err, sizeof(err)), 0);
	assert_int_equal(c, 64u << 20);
	/* 4 TiB members with 128 KiB of room: bits = 2^30 + 1 halve to
	 * fit (128K - 256) * 8 = 1046528 bits: 2^11 times, chunk 8 MiB,
	 * below the floor. */
	assert_int_equal(rf_bitmap_choose_chunk(8ULL << 30, 256, 0, &c, err, sizeof(err)), 0);
	assert_int_equal(c, 64u << 20);
	/* 64 TiB: 128 MiB, past the floor. */
	assert_int_equal(rf_bitmap_choose_chunk(128ULL << 30, 256, 0, &c, err, sizeof(err)), 0);
	assert_int_equal(c, 128u << 20);
	assert_int_equal(rf_bitmap_choose_chunk(260096, 8, 65536, &c, err, sizeof(err)), 0);
	assert_int_equal(c, 65536);
	assert_int_equal(rf_bitmap_choose_chunk(260096, 8, 4096, &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "too small"));
	assert_int_equal(rf_bitmap_choose_chunk(260096, 8, 3 << 16, &c, err, sizeof(err)), -EINVAL);
	assert_int_equal(rf_bitmap_choose_chunk(260096, 0, 0, &c, err, sizeof(err)), -EINVAL);
}

/* A new array's plan, as mdadm lays it out: 10 GiB raid6 members keep
 * 64 KiB for the bitmap; 64 KiB chunks take 48 sectors of it, and the bad
 * block log goes right after (56 sectors from the superblock). */
static void test_plan_layout(void **state)
{
	struct rf_sb_new n = { .level = 6, .layout = 2, .chunk_sectors = 1024, .raid_disks = 4,
			       .size = 20953088, .data_offset = 18432, .ctime = 1 };
	struct rf_bitmap_sb bsb;
	uint8_t *buf = malloc(RF_SB_BYTES);
	struct rf_sb sb;
	char err[256];

	assert_int_equal(rf_bitmap_plan(&n, 65536, &bsb, err, sizeof(err)), 0);
	assert_int_equal(bsb.sync_size, 20953088);
	assert_int_equal(rf_bitmap_bits(bsb.sync_size, bsb.chunk_bytes), 163696);
	assert_int_equal(n.bitmap_sectors, 48);
	if (rf_sb_build12(&n, 1, 20971520, buf, err, sizeof(err)) ||
	    rf_sb_parse(buf, RF_SB_12, 20971520, "d1", &sb, err, sizeof(err)))
		fail_msg("%s", err);
	assert_true(sb.bitmap);
	assert_int_equal(sb.feature_map, RF_SB_FEAT_BITMAP);
	assert_int_equal(sb.bitmap_offset, 8);
	assert_int_equal(sb.bblog_offset, 56);
	/* 16 KiB chunks do not fit; raid0 has no bitmap. */
	assert_int_equal(rf_bitmap_plan(&n, 16384, &bsb, err, sizeof(err)), -EINVAL);
	n.level = 0;
	assert_int_equal(rf_bitmap_plan(&n, 0, &bsb, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "raid0"));
	free(buf);
}

/* Every member sector a write can touch lies in rf_bitmap_range(). */
static void test_range(void **state)
{
	struct rf_geom g = { .level = 5, .layout = 2, .raid_disks = 5, .chunk_sectors = 16,
			     .dev_sectors = 16 * 1000 };
	char err[256];
	int i;

	assert_int_equal(rf_geom_init(&g, err, sizeof(err)), 0);
	assert_int_equal(rf_bitmap_sync_size(&g), 16000);
	for (i = 0; i < 20000; i++) {
		uint64_t s0 = (uint64_t)fx_rand() % (g.array_sectors - 1), n = 1 + (uint64_t)fx_rand() % 200;
		uint64_t lo, hi, s;

		if (s0 + n > g.array_sectors)
			n = g.array_sectors - s0;
		rf_bitmap_range(&g, s0 * 512, n * 512, &lo, &hi);
		for (s = s0; s < s0 + n; s++) {
			struct rf_r5_map m;

			rf_r5_map_sector(&g, s, &m);
			if (m.dev_sector < lo || m.dev_sector >= hi)
				fail_msg("sector %llu (member sector %llu) outside [%llu, %llu) of a write at %llu+%llu",
					 (unsigned long long)s, (unsigned long long)m.dev_sector,
					 (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)s0,
					 (unsigned long long)n);
		}
		/* Inside one chunk it is exact. */
		if (s0 / 16 == (s0 + n - 1) / 16)
			assert_int_equal(hi - lo, n);
	}
	g = (struct rf_geom){ .level = 10, .layout = 0x102, .raid_disks = 4, .chunk_sectors = 16,
			      .dev_sectors = 1600 };
	assert_int_equal(rf_geom_init(&g, err, sizeof(err)), 0);
	assert_int_equal(rf_bitmap_sync_size(&g), g.array_sectors);
	{
		uint64_t lo, hi;

		rf_bitmap_range(&g, 1000, 600, &lo, &hi);
		assert_int_equal(lo, 1);
		assert_int_equal(hi, 4);
	}
}

/* ---- running arrays ---- */

static atomic_int nr_writes, nr_unmarked;
static atomic_bool checking;

/* Bit `chunk` of the 1.2 bitmap on the member file at path. */
static bool file_bit(const char *path, uint64_t chunk)
{
	uint8_t b = 0;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &b, 1, BM_AT + 256 + (off_t)(chunk / 8)), 1);
	close(fd);
	return b & (1u << (chunk % 8));
}

static bool disk_bit(int member, uint64_t chunk)
{
	return file_bit(paths[member], chunk);
}

/* A data write to member sector range [off, off + len): its chunks' bits
 * must be on that member's disk. */
static void note_write(struct rf_mio *m, uint64_t off, uint64_t len)
{
	uint64_t s0, s1, c;

	if (m->op != RF_MIO_WRITE || !atomic_load(&checking) || off < DATA_OFFSET * 512)
		return;
	atomic_fetch_add(&nr_writes, 1);
	s0 = off / 512 - DATA_OFFSET;
	s1 = (off + len + 511) / 512 - DATA_OFFSET;
	for (c = s0 / (BM_CHUNK / 512); c <= (s1 - 1) / (BM_CHUNK / 512); c++)
		if (!disk_bit(m->member, c))
			atomic_fetch_add(&nr_unmarked, 1);
}


/* Members of a raid5 with a bitmap of bm_chunk-byte chunks, as `create`
 * makes them: every bit set. */
static void make_members_chunk(bool clean, uint32_t bm_chunk)
{
	struct rf_sb_new n = { .level = 5, .layout = 2, .chunk_sectors = CHUNK_SECTORS, .raid_disks = N,
			       .data_offset = DATA_OFFSET,
			       .size = (MEMBER_SECTORS - DATA_OFFSET) / CHUNK_SECTORS * CHUNK_SECTORS,
			       .clean = clean };
	struct rf_bitmap_sb bsb;
	struct rf_sb_io io;
	char err[512];
	int i;

	for (i = 0; i < 16; i++)
		n.uuid[i] = (uint8_t)(0x30 + i * 5);    /* before rf_bitmap_plan copies it */
	snprintf(n.name, sizeof(n.name), "bitmap");
	if (rf_bitmap_plan(&n, bm_chunk, &bsb, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(n.bitmap_sectors, 8);
	fx_md_members(&n, "m", MEMBER_SECTORS, paths);
	for (i = 0; i < N; i++) {
		int fd = open(paths[i], O_RDWR);

		assert_true(fd >= 0);
		assert_int_equal(rf_sb_io_fd(&io, fd), 0);
		if (rf_bitmap_write_new(&io, paths[i], BM_AT, &bsb, err, sizeof(err)))
			fail_msg("%s", err);
		close(fd);
	}
}

static void make_members(bool clean)
{
	make_members_chunk(clean, BM_CHUNK);
}

static struct rf_array *open_array(int nmembers, int gtc)
{
	const char *p[N] = { paths[0], paths[1], paths[2], paths[3] };
	struct rf_array *a = fx_open_assembled(p, nmembers, false, gtc);

	testreq_on_io = note_write;
	fx_start(a, testreq_watch_init);
	/* The tests run the passes themselves. */
	rf_bitmap_stop(rf_array_bitmap(a));
	return a;
}


/* A check of the whole array finds every copy and parity in agreement. */
static void check_clean(struct rf_array *a)
{
	struct rf_sync_status ss;

	assert_int_equal(rf_sync_request(a, RF_SYNC_CHECK), 0);
	rf_sync_wait(a);
	rf_sync_get(a, &ss);
	assert_int_equal(ss.mismatch_cnt, 0);
}

/* The array byte offset of the start of member chunk row `row`. */
static uint64_t row_off(uint64_t row)
{
	return row * CHUNK_SECTORS * (N - 1) * 512;
}

static struct rf_bitmap_status status(struct rf_array *a)
{
	struct rf_bitmap_status st;

	rf_bitmap_get(rf_array_bitmap(a), &st);
	return st;
}

static int count_disk_bits(int member, uint64_t chunks)
{
	uint64_t c;
	int n = 0;

	for (c = 0; c < chunks; c++)
		n += disk_bit(member, c);
	return n;
}

/* Created clean: the bits mdadm sets go after idle passes; a write sets
 * its chunk's bit on every member before the data; idle clears it. */
static void test_mark_clear(void **state)
{
	char *buf = aligned_alloc(4096, 65536);
	struct rf_bitmap_status st;
	struct rf_array *a;
	uint64_t bm_sectors = BM_CHUNK / 512, c, lo, hi;
	int i;

	make_members(true);
	a = open_array(N, 0);
	assert_non_null(rf_array_bitmap(a));
	st = status(a);
	assert_int_equal(st.chunk_bytes, BM_CHUNK);
	assert_int_equal(st.sync_size, rf_array_geom(a)->dev_sectors);
	assert_int_equal(st.chunks, (rf_array_geom(a)->dev_sectors + bm_sectors - 1) / bm_sectors);
	assert_int_equal(st.dirty, st.chunks);  /* mdadm's all-ones */
	assert_int_equal(st.needed, 0);         /* clean: nothing to resync */
	assert_int_equal(rf_bitmap_daemon_pass(rf_array_bitmap(a)), 0);  /* idle once ... */
	assert_int_equal(rf_bitmap_daemon_pass(rf_array_bitmap(a)), (int)st.chunks);    /* ... then cleared */
	for (i = 0; i < N; i++)
		assert_int_equal(count_disk_bits(i, st.chunks), 0);

	atomic_store(&checking, true);
	atomic_store(&nr_writes, 0);
	atomic_store(&nr_unmarked, 0);
	/* Member row 9 is member sectors 1152..1279: bitmap chunk 2. */
	memset(buf, 0x6b, 65536);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, row_off(9) + 4096, 8192, buf), 0);
	assert_true(atomic_load(&nr_writes) > 0);
	assert_int_equal(atomic_load(&nr_unmarked), 0);
	c = 9 * CHUNK_SECTORS / bm_sectors;
	for (i = 0; i < N; i++) {
		assert_true(disk_bit(i, c));
		assert_int_equal(count_disk_bits(i, st.chunks), 1);
	}
	st = status(a);
	assert_int_equal(st.dirty, 1);
	assert_int_equal(rf_bitmap_next_dirty(rf_array_bitmap(a), 0, &lo, &hi), 0);
	assert_int_equal(lo, c * bm_sectors);
	assert_int_equal(hi, (c + 1) * bm_sectors);
	/* A second write to the chunk writes no bitmap. */
	st = status(a);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, row_off(10), 4096, buf), 0);
	assert_int_equal(status(a).nr_set_writes, st.nr_set_writes);
	/* Idle for a pass, then cleared, on every member. */
	assert_int_equal(rf_bitmap_daemon_pass(rf_array_bitmap(a)), 0);
	assert_true(disk_bit(0, c));
	/* A write between the passes keeps it. */
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, row_off(11), 4096, buf), 0);
	assert_int_equal(rf_bitmap_daemon_pass(rf_array_bitmap(a)), 0);
	assert_int_equal(rf_bitmap_daemon_pass(rf_array_bitmap(a)), 1);
	for (i = 0; i < N; i++)
		assert_false(disk_bit(i, c));
	assert_int_equal(rf_bitmap_next_dirty(rf_array_bitmap(a), 0, &lo, &hi), -ENOENT);
	atomic_store(&checking, false);
	rf_array_close(a);
	free(buf);
}

static void *writer_main(void *arg)
{
	struct fx_writer *w = arg;
	char *buf = aligned_alloc(4096, 16384);
	int i;

	memset(buf, 0x3c, 16384);
	for (i = 0; i < w->n; i++) {
		uint64_t row = (uint64_t)fx_rng_next(&w->rng) % 200;
		uint32_t len = 4096u * (1 + (unsigned)fx_rng_next(&w->rng) % 4);

		if (testreq_io(w->a, RF_REQ_WRITE, row_off(row) + 4096u * (unsigned)(fx_rng_next(&w->rng) % 8), len, buf))
			break;
	}
	free(buf);
	return NULL;
}

/* Writers on a few chunks race passes every millisecond: no data write
 * ever finds its bit clear on disk, and every count returns to zero. */
static void test_race_daemon(void **state)
{
	struct rf_array *a;
	int gtc;

	for (gtc = 0; gtc <= 2; gtc += 2) {
		make_members(true);
		a = open_array(N, gtc);
		rf_bitmap_set_period_ms(rf_array_bitmap(a), 1);
		assert_int_equal(rf_bitmap_start(rf_array_bitmap(a)), 0);
		atomic_store(&checking, true);
		atomic_store(&nr_writes, 0);
		atomic_store(&nr_unmarked, 0);
		fx_writers(a, 4, 300, 0, writer_main);
		assert_true(atomic_load(&nr_writes) > 1000);
		assert_int_equal(atomic_load(&nr_unmarked), 0);
		/* Stopped, nothing in flight: two passes clear everything,
		 * so every count is back at zero. */
		rf_bitmap_stop(rf_array_bitmap(a));
		rf_bitmap_daemon_pass(rf_array_bitmap(a));
		rf_bitmap_daemon_pass(rf_array_bitmap(a));
		assert_int_equal(status(a).dirty, 0);
		assert_true(status(a).nr_clear_writes > 1);
		atomic_store(&checking, false);
		rf_array_close(a);
	}
}

/* Degraded: bits stay, writes need a resync, the dirty run is reported
 * for a member added back. */
static void test_degraded_keeps(void **state)
{
	char *buf = aligned_alloc(4096, 65536);
	uint64_t lo, hi, bm_sectors = BM_CHUNK / 512;
	struct rf_bitmap_status st;
	struct rf_array *a;

	make_members(true);
	a = open_array(N - 1, 0);               /* member 3 missing */
	assert_non_null(rf_array_bitmap(a));
	assert_int_equal(rf_bitmap_daemon_pass(rf_array_bitmap(a)), 0);
	assert_int_equal(rf_bitmap_daemon_pass(rf_array_bitmap(a)), 0);
	/* Chunks mdadm set stay set; they were cleared (events_cleared)
	 * at this very events count, so they need no resync. */
	st = status(a);
	assert_int_equal(st.dirty, st.chunks);
	assert_int_equal(st.needed, 0);
	rf_array_close(a);
	/* Clean and whole again: cleared; then degraded again. */
	a = open_array(N, 0);
	rf_bitmap_daemon_pass(rf_array_bitmap(a));
	rf_bitmap_daemon_pass(rf_array_bitmap(a));
	assert_int_equal(status(a).dirty, 0);
	rf_array_close(a);
	a = open_array(N - 1, 0);
	memset(buf, 0x11, 65536);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, row_off(20), 65536, buf), 0);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, row_off(100), 4096, buf), 0);
	for (int k = 0; k < 4; k++)
		assert_int_equal(rf_bitmap_daemon_pass(rf_array_bitmap(a)), 0);
	st = status(a);
	assert_int_equal(st.dirty, 2);
	assert_int_equal(st.needed, 2);
	assert_int_equal(rf_bitmap_next_dirty(rf_array_bitmap(a), 0, &lo, &hi), 0);
	assert_int_equal(lo, 20 * CHUNK_SECTORS / bm_sectors * bm_sectors);
	assert_int_equal(hi, lo + bm_sectors);
	assert_int_equal(rf_bitmap_next_dirty(rf_array_bitmap(a), hi, &lo, &hi), 0);
	assert_int_equal(lo, 100 * CHUNK_SECTORS / bm_sectors * bm_sectors);
	assert_int_equal(rf_bitmap_next_dirty(rf_array_bitmap(a), hi, &lo, &hi), -ENOENT);
	/* A re-add's rebuild walk would go to the same two chunks. */
	{
		uint64_t n = 4096, total = status(a).sync_size, pos;

		pos = rf_bitmap_dirty_skip(rf_array_bitmap(a), 0, total, &n);
		assert_int_equal(pos, 20 * CHUNK_SECTORS / bm_sectors * bm_sectors);
		assert_int_equal(n, bm_sectors);
		n = 4096;
		pos = rf_bitmap_dirty_skip(rf_array_bitmap(a), pos + bm_sectors, total, &n);
		assert_int_equal(pos, 100 * CHUNK_SECTORS / bm_sectors * bm_sectors);
		n = 4096;
		assert_int_equal(rf_bitmap_dirty_skip(rf_array_bitmap(a), pos + bm_sectors, total, &n), total);
	}
	rf_array_close(a);
	/* Reopened degraded, the bits still need a resync. */
	a = open_array(N - 1, 0);
	assert_int_equal(status(a).needed, 2);
	rf_array_close(a);
	free(buf);
}

/* md/bitmap/<name> */
static const struct rf_ctl_attr *bm_attr(const char *name)
{
	size_t i;

	for (i = 0; i < rf_ctl_bitmap_nattrs; i++)
		if (!strcmp(rf_ctl_bitmap_attrs[i].name, name))
			return &rf_ctl_bitmap_attrs[i];
	fail_msg("no md/bitmap/%s", name);
	return NULL;
}

static const char *bm_show(struct rf_array *a, const char *name)
{
	static char buf[256];

	assert_true(rf_ctl_show(bm_attr(name), a, -1, buf, sizeof(buf)) >= 0);
	return buf;
}

static int bm_store(struct rf_array *a, const char *name, const char *val)
{
	return rf_ctl_store(bm_attr(name), a, -1, val, strlen(val));
}

/* md/bitmap/ with md's meanings: location, chunksize, metadata as the
 * bitmap is; time_base sets the pass period; backlog wants a
 * write-mostly device and is recorded in the header at once; can_clear
 * false keeps bits a pass would clear (negative control: true clears
 * them), and true is refused while degraded. */
struct wm_job {
	struct rf_array *a;
	int dev;
	bool on;
};

static int wm_fn(void *arg)
{
	struct wm_job *j = arg;

	rf_devs_lock(j->a);
	if (j->on)
		rf_dev_get(j->a, j->dev)->flags |= RF_DEV_WRITE_MOSTLY;
	else
		rf_dev_get(j->a, j->dev)->flags &= ~(unsigned)RF_DEV_WRITE_MOSTLY;
	rf_devs_unlock(j->a);
	return 0;
}

/* Device dev write-mostly or not, as the table is changed (every request
 * drained, reconf_lock and the device lock held: the management thread
 * reads the flags under reconf_lock). */
static void set_write_mostly(struct rf_array *a, int dev, bool on)
{
	struct wm_job j = { .a = a, .dev = dev, .on = on };

	assert_int_equal(rf_barrier_quiesced_all(a, wm_fn, &j), 0);
}

static void test_ctl_files(void **state)
{
	char *buf = aligned_alloc(4096, 65536);
	struct rf_bitmap_sb bsb;
	struct rf_sb_io io;
	struct rf_sb sb;
	uint8_t *bits;
	char err[512];
	struct rf_array *a;
	int fd;

	(void)state;
	make_members(true);
	a = open_array(N, 0);
	assert_string_equal(bm_show(a, "location"), "+8\n");
	assert_string_equal(bm_show(a, "chunksize"), "262144\n");
	assert_string_equal(bm_show(a, "metadata"), "internal\n");
	assert_string_equal(bm_show(a, "time_base"), "5\n");
	assert_string_equal(bm_show(a, "backlog"), "0\n");
	assert_string_equal(bm_show(a, "can_clear"), "true\n");

	assert_int_equal(bm_store(a, "time_base", "0.5\n"), 0);
	assert_string_equal(bm_show(a, "time_base"), "0.500\n");
	assert_int_equal(bm_store(a, "time_base", "2.0001"), 0);
	assert_string_equal(bm_show(a, "time_base"), "2\n");       /* whole ms */
	assert_int_equal(bm_store(a, "time_base", "2.00001"), -EINVAL);
	assert_int_equal(bm_store(a, "time_base", "x"), -EINVAL);
	assert_int_equal(bm_store(a, "time_base", "7"), 0);
	assert_string_equal(bm_show(a, "time_base"), "7\n");

	/* backlog: no write-mostly device yet */
	assert_int_equal(bm_store(a, "backlog", "100"), -EINVAL);
	set_write_mostly(a, 1, true);
	assert_int_equal(bm_store(a, "backlog", "16384"), -EINVAL);
	assert_int_equal(bm_store(a, "backlog", "100"), 0);
	assert_string_equal(bm_show(a, "backlog"), "100\n");
	fd = open(paths[2], O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(rf_sb_io_fd(&io, fd), 0);
	assert_int_equal(rf_sb_read_io(&io, paths[2], &sb, err, sizeof(err)), 0);
	assert_int_equal(rf_bitmap_read(&io, paths[2], &sb, &bsb, &bits, err, sizeof(err)), 0);
	assert_int_equal(bsb.write_behind, 100);
	free(bits);
	close(fd);
	set_write_mostly(a, 1, false);

	/* can_clear false: a written chunk's bit stays through idle passes */
	assert_int_equal(rf_bitmap_daemon_pass(rf_array_bitmap(a)), 0);
	assert_true(rf_bitmap_daemon_pass(rf_array_bitmap(a)) > 0);     /* mdadm's bits go */
	assert_int_equal(bm_store(a, "can_clear", "false"), 0);
	assert_string_equal(bm_show(a, "can_clear"), "false\n");
	memset(buf, 0x2c, 65536);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, row_off(9), 4096, buf), 0);
	for (int k = 0; k < 3; k++)
		assert_int_equal(rf_bitmap_daemon_pass(rf_array_bitmap(a)), 0);
	assert_int_equal(status(a).dirty, 1);
	assert_int_equal(bm_store(a, "can_clear", "maybe"), -EINVAL);
	assert_int_equal(bm_store(a, "can_clear", "true"), 0);
	rf_bitmap_daemon_pass(rf_array_bitmap(a));
	assert_int_equal(rf_bitmap_daemon_pass(rf_array_bitmap(a)), 1);
	assert_int_equal(status(a).dirty, 0);
	rf_array_close(a);

	/* degraded: can_clear reads false and true is refused */
	a = open_array(N - 1, 0);
	assert_string_equal(bm_show(a, "can_clear"), "false\n");
	assert_int_equal(bm_store(a, "can_clear", "true"), -EBUSY);
	assert_int_equal(bm_store(a, "can_clear", "false"), 0);
	rf_array_close(a);
	free(buf);
}

static void put_events(int fd, uint64_t ev)
{
	uint8_t b[8];
	int k;

	for (k = 0; k < 8; k++)
		b[k] = (uint8_t)(ev >> (8 * k));
	assert_int_equal(pwrite(fd, b, 8, BM_AT + 24), 8);
}

/* Members as a kill -9 leaves them with the bitmap's first nbytes bytes
 * set to bits (bit c: chunk c) and every other chunk clean: superblocks
 * dirty, the bitmap's events those of the superblocks. */
static void crashed_with(const uint8_t *bits, size_t nbytes)
{
	struct rf_array *a;
	struct rf_sb sb;
	char err[512];
	int i, fd;

	make_members(true);
	a = open_array(N, 0);
	rf_bitmap_daemon_pass(rf_array_bitmap(a));
	rf_bitmap_daemon_pass(rf_array_bitmap(a));
	rf_array_close(a);
	for (i = 0; i < N; i++) {
		fd = open(paths[i], O_RDWR);
		assert_true(fd >= 0);
		assert_int_equal(pwrite(fd, bits, nbytes, BM_AT + 256), (ssize_t)nbytes);
		if (rf_sb_read(fd, paths[i], &sb, err, sizeof(err)) ||
		    rf_sb_update(fd, paths[i], &sb, false, 0, err, sizeof(err)))
			fail_msg("%s", err);
		/* md writes the bitmap's events with the superblocks'. */
		put_events(fd, sb.events);
		close(fd);
	}
}

/* After a crash (superblocks dirty, a few bits set) a resync covers only
 * those chunks and clears them; a stale bitmap counts as all set. */
static void test_resync_dirty_only(void **state)
{
	uint64_t bm_sectors = BM_CHUNK / 512, cs;
	struct rf_bitmap_status st;
	struct rf_array *a;
	struct rf_sb sb;
	uint8_t bits[64];
	char err[512];
	int i, fd;

	/* What a kill -9 during writes to chunks 3 and 17 leaves. */
	memset(bits, 0, sizeof(bits));
	bits[0] = 1u << 3;
	bits[2] = 1u << 1;
	crashed_with(bits, sizeof(bits));
	a = open_array(N, 0);
	st = status(a);
	assert_int_equal(st.dirty, 2);
	assert_int_equal(st.needed, 2);
	assert_int_equal(rf_sync_request(a, RF_SYNC_RESYNC), 0);
	rf_sync_wait(a);
	st = status(a);
	cs = st.sync_size;
	assert_int_equal(st.needed, 0);
	assert_int_equal(st.resync_covered, 2 * bm_sectors);
	assert_int_equal(st.resync_skipped, cs - 2 * bm_sectors);
	rf_bitmap_daemon_pass(rf_array_bitmap(a));
	assert_int_equal(rf_bitmap_daemon_pass(rf_array_bitmap(a)), 2);
	/* A check still reads everything, and finds nothing wrong. */
	check_clean(a);
	rf_array_close(a);

	/* Stale: older events than the superblocks: every chunk set, and
	 * (dirty superblocks) needing a resync. */
	for (i = 0; i < N; i++) {
		fd = open(paths[i], O_RDWR);
		assert_true(fd >= 0);
		if (rf_sb_read(fd, paths[i], &sb, err, sizeof(err)) ||
		    rf_sb_update(fd, paths[i], &sb, false, 0, err, sizeof(err)))
			fail_msg("%s", err);
		put_events(fd, 0);
		close(fd);
	}
	a = open_array(N, 0);
	st = status(a);
	assert_int_equal(st.dirty, st.chunks);
	assert_int_equal(st.needed, st.chunks);
	assert_true(st.events >= sb.events);
	rf_array_close(a);
}

/* The walk pauses here, its lock let go, long enough for a short region
 * on /dev/shm to end (see test_resync_short_runs). */
static void pause_walk(void)
{
	usleep(5000);
}

/* Regression: a resync over many short bitmap runs (every other chunk
 * dirty) must end.  The walk hands out a run's last region, lets go of its
 * lock to look at the load, and must then see that region ended before it
 * waits for the window to drain; the buggy walk waited on its condition
 * for an end that had already been signalled, forever (while its workers
 * waited for work).  pause_walk makes every region end during that look.
 * Expected: each resync ends within seconds and clears every bit; buggy:
 * the first run's wait never returns. */
static void test_resync_short_runs(void **state)
{
	struct rf_bitmap_status st;
	struct rf_sync_status ss;
	struct rf_array *a;
	uint8_t bits[8];
	int round;

	memset(bits, 0x55, sizeof(bits));       /* chunks 0, 2, 4, ...: 30 runs of one chunk */
	for (round = 0; round < 2; round++) {
		time_t t0;

		crashed_with(bits, sizeof(bits));
		a = open_array(N, 0);
		assert_int_equal(status(a).needed, 30);
		rf_sync_test_looked = pause_walk;
		assert_int_equal(rf_sync_request(a, RF_SYNC_RESYNC), 0);
		t0 = time(NULL);
		do {
			usleep(10000);
			rf_sync_get(a, &ss);
			if (time(NULL) - t0 > 20)
				fail_msg("round %d: the resync hangs at sector %llu of %llu", round,
					 (unsigned long long)ss.done, (unsigned long long)ss.total);
		} while (ss.action == RF_SYNC_RESYNC);
		rf_sync_test_looked = NULL;
		rf_sync_wait(a);
		st = status(a);
		assert_int_equal(st.needed, 0);
		assert_int_equal(st.resync_covered, 30 * (BM_CHUNK / 512));
		check_clean(a);
		rf_array_close(a);
	}
}

/* The header follows the superblocks' events; a damaged one fails the
 * assembly with the member named. */
static void test_events_and_damage(void **state)
{
	char *buf = aligned_alloc(4096, 4096);
	struct rf_bitmap_sb bsb;
	struct rf_config cfg;
	struct rf_array *a;
	struct rf_sb sb;
	uint8_t *bits, magic = 0;
	struct rf_sb_io sio;
	char err[1024];
	const char *p[N] = { paths[0], paths[1], paths[2], paths[3] };
	int i, fd;

	make_members(true);
	a = open_array(N, 0);
	memset(buf, 1, 4096);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, 4096, buf), 0);
	rf_array_close(a);
	for (i = 0; i < N; i++) {
		fd = open(paths[i], O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(rf_sb_read(fd, paths[i], &sb, err, sizeof(err)), 0);
		assert_int_equal(rf_sb_io_fd(&sio, fd), 0);
		if (rf_bitmap_read(&sio, paths[i], &sb, &bsb, &bits, err, sizeof(err)))
			fail_msg("%s", err);
		assert_true(sb.clean);
		assert_true(sb.events >= 2);
		assert_int_equal(bsb.events, sb.events);
		/* Close cleared every bit, with all members there. */
		assert_int_equal(bsb.events_cleared, bsb.events);
		assert_int_equal(bits[256], 0);
		assert_int_equal(bsb.sync_size, (MEMBER_SECTORS - DATA_OFFSET) / CHUNK_SECTORS * CHUNK_SECTORS);
		free(bits);
		close(fd);
	}
	/* Member 0's bitmap is the freshest's only by order: damage all. */
	for (i = 0; i < N; i++) {
		fd = open(paths[i], O_RDWR);
		assert_int_equal(pwrite(fd, &magic, 1, BM_AT), 1);
		close(fd);
	}
	assert_int_equal(rf_assemble(p, N, NULL, false, &cfg, err, sizeof(err)), 0);
	assert_int_equal(rf_array_open(&cfg, &a, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "m"));
	assert_non_null(strstr(err, ": bitmap: bad magic"));
	rf_config_free(&cfg);
	/* A sync_size no member could back is refused before anything is
	 * read from it. */
	for (i = 0; i < N; i++) {
		uint8_t big[8] = { 0, 0, 0, 0, 0, 0, 0, 0x40 };

		magic = 0x62;
		fd = open(paths[i], O_RDWR);
		assert_int_equal(pwrite(fd, &magic, 1, BM_AT), 1);
		assert_int_equal(pwrite(fd, big, 8, BM_AT + 40), 8);
		close(fd);
	}
	assert_int_equal(rf_assemble(p, N, NULL, false, &cfg, err, sizeof(err)), 0);
	assert_int_equal(rf_array_open(&cfg, &a, err, sizeof(err)), -EINVAL);
	if (!strstr(err, ": bitmap: sync_size 4611686018427387904 sectors is more than"))
		fail_msg("%s", err);
	rf_config_free(&cfg);
	free(buf);
}

/* A member fails, writes go on degraded (their chunks need a resync),
 * a spare takes the slot: it gets the whole bitmap, the rebuild clears
 * what needed a resync, and idle passes clear the bits everywhere. */
/* A raid5 of N members with 4 KiB bitmap chunks, every bit clear, m2.img
 * failed. */
static struct rf_array *open_clean_fail_m2(void)
{
	struct rf_array *a;

	make_members_chunk(true, 4096);
	a = open_array(N, 0);
	rf_bitmap_daemon_pass(rf_array_bitmap(a));
	rf_bitmap_daemon_pass(rf_array_bitmap(a));
	assert_int_equal(status(a).dirty, 0);
	assert_int_equal(rf_memberctl_set_state(a, "m-2.img", "faulty"), 0);
	return a;
}

/* md's re-add: a member failed and added back rebuilds only the chunks
 * written while it was out (4 KiB bitmap chunks: one of them here), and
 * the data and parity come out right. */
static void test_readd(void **state)
{
	char *buf = aligned_alloc(4096, 65536), *back = aligned_alloc(4096, 65536);
	struct rf_dev_info info;
	struct rf_sync_status ss;
	struct rf_array *a;
	uint64_t total;
	int i;

	a = open_clean_fail_m2();
	total = rf_array_geom(a)->dev_sectors;
	memset(buf, 0x5a, 65536);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, row_off(200), 65536, buf), 0);
	assert_int_equal(rf_memberctl_set_state(a, "m-2.img", "re-add"), 0);
	for (i = 0; i < 1000; i++) {
		rf_sync_get(a, &ss);
		assert_int_equal(rf_member_info(a, 2, &info), 0);
		if ((info.flags & RF_DEV_IN_SYNC) && ss.action == RF_SYNC_IDLE)
			break;
		usleep(10000);
	}
	assert_true(info.flags & RF_DEV_IN_SYNC);
	assert_string_equal(info.name, "m-2.img");
	rf_sync_get(a, &ss);
	/* One 64 KiB write: the 4 KiB bitmap chunks of its row (a raid5
	 * chunk of member sectors) rebuilt, the rest jumped over. */
	if (!ss.skipped || total - ss.skipped > CHUNK_SECTORS)
		fail_msg("re-add rebuilt %llu of %llu sectors (skipped %llu), want at most %d",
			 (unsigned long long)(total - ss.skipped), (unsigned long long)total,
			 (unsigned long long)ss.skipped, CHUNK_SECTORS);
	assert_int_equal(testreq_io(a, RF_REQ_READ, row_off(200), 65536, back), 0);
	assert_memory_equal(back, buf, 65536);
	check_clean(a);
	rf_array_close(a);
	free(buf);
	free(back);
}

static void test_spare_rebuild(void **state)
{
	char *buf = aligned_alloc(4096, 65536), spare[600], err[1024];
	/* 4 KiB chunks: chunk c = 3200 lies in the bitmap's second sector. */
	uint64_t c = 200 * CHUNK_SECTORS / 8;
	struct rf_dev_info info;
	struct rf_bitmap_sb bsb;
	struct rf_sb_io sio;
	struct rf_array *a;
	struct rf_sb sb;
	uint8_t *bits;
	int i, fd;

	a = open_clean_fail_m2();
	memset(buf, 0x77, 65536);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, row_off(200), 4096, buf), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(rf_bitmap_daemon_pass(rf_array_bitmap(a)), 0);
	assert_int_equal(status(a).needed, 1);
	assert_true(disk_bit(0, c));

	fx_member_path(spare, sizeof(spare), "m", 4);
	fx_file_make(spare, MEMBER_SECTORS * 512);
	if (rf_memberctl_add_spare(a, spare, err, sizeof(err)))
		fail_msg("add spare: %s", err);
	for (i = 0; i < 1000; i++) {
		assert_int_equal(rf_member_info(a, 2, &info), 0);
		if (!strcmp(info.path, spare) && (info.flags & RF_DEV_IN_SYNC))
			break;
		usleep(10000);
	}
	assert_true(info.flags & RF_DEV_IN_SYNC);
	rf_sync_wait(a);
	/* The spare carries the array's bitmap, chunk c set as everywhere. */
	fd = open(spare, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(rf_sb_read(fd, spare, &sb, err, sizeof(err)), 0);
	assert_true(sb.bitmap);
	assert_int_equal(rf_sb_io_fd(&sio, fd), 0);
	if (rf_bitmap_read(&sio, spare, &sb, &bsb, &bits, err, sizeof(err)))
		fail_msg("%s", err);
	assert_true(bits[256 + c / 8] & (1u << (c % 8)));
	assert_true(256 + c / 8 >= 512);
	free(bits);
	close(fd);
	/* Rebuilt: nothing needs a resync; two idle passes clear the bit. */
	assert_int_equal(status(a).needed, 0);
	rf_bitmap_daemon_pass(rf_array_bitmap(a));
	assert_int_equal(rf_bitmap_daemon_pass(rf_array_bitmap(a)), 1);
	assert_false(file_bit(spare, c));
	assert_false(disk_bit(0, c));
	check_clean(a);
	rf_array_close(a);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_roundtrip),
		cmocka_unit_test(test_parse_rejects),
		cmocka_unit_test(test_choose_chunk),
		cmocka_unit_test(test_plan_layout),
		cmocka_unit_test(test_range),
		cmocka_unit_test(test_mark_clear),
		cmocka_unit_test(test_race_daemon),
		cmocka_unit_test(test_degraded_keeps),
		cmocka_unit_test(test_resync_dirty_only),
		cmocka_unit_test(test_resync_short_runs),
		cmocka_unit_test(test_events_and_damage),
		cmocka_unit_test(test_spare_rebuild),
		cmocka_unit_test(test_readd),
		cmocka_unit_test(test_ctl_files),
	};

	return fx_run_tests("bitmap", tests);
}
