/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_ppl.c - md's partial parity log format and its replay (md/ppl_fmt.c).
 *
 *  - crc32c is the kernel's crc32c_le (check value of "123456789");
 *  - the signature of a kernel-md array's uuid, and a header's checksum,
 *    are the bytes md wrote (r5-ls-4d-64k-ppl role 3, its first header);
 *  - on the members of a kernel-md PPL array that crashed mid-write
 *    (tests/data/md-images/r5-ls-4d-64k-ppl-crash, unpacked with xz; the
 *    test skips that part without them): every member's newest header is
 *    found, its entries' partial parity checksums hold, and the replay
 *    leaves every row's parity equal to the xor of its data;
 *  - on a fake member set: a partial write whose data reached its member
 *    but whose parity did not (the write hole) is closed by the replay;
 *    without the replay (negative control) the parity disagrees, and a
 *    rebuilt block not written by the update comes back wrong.  An entry
 *    whose checksum fails, or whose column is missing, is not replayed;
 *  - the running log (services/ppl.c) on an array served from fake
 *    members that record every operation: a unit's log write comes
 *    before its data and parity writes, and the members those wrote are
 *    flushed before the log's next unit is written (md's ppl_do_flush);
 *    negative control: with members that need no flush the same checker
 *    sees the log reused over unflushed data; the heads of one request,
 *    computed on one worker before its queue is submitted, go into one
 *    unit (one write of the header and all their partial parity, merged
 *    entries), not a unit of the first head alone and another of the
 *    rest; logged read-modify-writes leave every row's parity right (the
 *    new parity made from the partial parity);
 *  - where a log goes on an array switched to ppl (rf_ppl_place): mdadm's
 *    place before the bad block log, behind it when it sits right after
 *    the superblock, 1 MiB at most, a chunk's worth below that; refused
 *    without room, with a bitmap, on raid6 or 0.90.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_ioq.h"
#include "fixture.h"
#include "testreq.h"
#include "raidfuse/le.h"
#include "raidfuse/ppl.h"
#include "raidfuse/super.h"

/* ---- a fake member set in memory ---- */

#define FM 4
#define DEV_SECTORS 512ull              /* 256 KiB of data per member */
#define CHUNK_SECTORS 128u              /* 64 KiB */
#define SB_AT 4096ull
#define AREA_AT (SB_AT + 8 * 512)
#define AREA_SIZE (RF_PPL_AREA_SECTORS * 512ull)
#define DATA_AT (4096 * 512ull)
#define MEM_BYTES (DATA_AT + DEV_SECTORS * 512)

struct fake {
	uint8_t *m[FM];
	int writes;
};

static int fk_read(void *ctx, int m, void *buf, uint32_t len, uint64_t off)
{
	struct fake *f = ctx;

	if (off + len > MEM_BYTES)
		return -EIO;
	memcpy(buf, f->m[m] + off, len);
	return 0;
}

static int fk_write(void *ctx, int m, const void *buf, uint32_t len, uint64_t off)
{
	struct fake *f = ctx;

	if (off + len > MEM_BYTES)
		return -EIO;
	memcpy(f->m[m] + off, buf, len);
	f->writes++;
	return 0;
}

static void geom(struct rf_geom *g)
{
	char err[128];

	memset(g, 0, sizeof(*g));
	g->level = 5;
	g->layout = 2;
	g->raid_disks = FM;
	g->chunk_sectors = CHUNK_SECTORS;
	g->dev_sectors = DEV_SECTORS;
	assert_int_equal(rf_geom_init(g, err, sizeof(err)), 0);
}

/* Member byte offset of array sector s (its data), and its member. */
static uint64_t where(const struct rf_geom *g, uint64_t s, int *m, int *pd)
{
	struct rf_r5_map mp;

	rf_r5_map_sector(g, s, &mp);
	*m = mp.dd_idx;
	if (pd)
		*pd = mp.pd_idx;
	return DATA_AT + mp.dev_sector * 512;
}

/* Whether every 4 KiB row's parity is the xor of its data. */
static int bad_rows(struct fake *f)
{
	uint64_t off;
	int bad = 0, i, j;

	for (off = DATA_AT; off < MEM_BYTES; off += 4096) {
		for (j = 0; j < 4096; j++) {
			uint8_t x = 0;

			for (i = 0; i < FM; i++)
				x ^= f->m[i][off + j];
			if (x) {
				bad++;
				break;
			}
		}
	}
	return bad;
}

static void fake_init(struct fake *f, const struct rf_geom *g)
{
	uint64_t s;
	int i, m;

	memset(f, 0, sizeof(*f));
	for (i = 0; i < FM; i++) {
		f->m[i] = calloc(1, MEM_BYTES);
		assert_non_null(f->m[i]);
	}
	/* Data: each sector its number; parity: the xor of the row. */
	for (s = 0; s < g->array_sectors; s++) {
		uint64_t off = where(g, s, &m, NULL);
		int k;

		for (k = 0; k < 64; k++)
			rf_put_le64(f->m[m] + off + 8 * k, s);
	}
	/* Parity per row: recompute into the parity member. */
	for (s = 0; s < DEV_SECTORS; s += 8) {
		struct rf_r5_row r;
		int j;

		rf_r5_row(g, s / CHUNK_SECTORS, &r);
		memset(f->m[r.pd_idx] + DATA_AT + s * 512, 0, 4096);
		for (j = 0; j < 4096; j++) {
			uint8_t x = 0;

			for (i = 0; i < FM; i++)
				x ^= f->m[i][DATA_AT + s * 512 + j];
			f->m[r.pd_idx][DATA_AT + s * 512 + j] = x;
		}
	}
	assert_int_equal(bad_rows(f), 0);
}

static void fake_free(struct fake *f)
{
	int i;

	for (i = 0; i < FM; i++)
		free(f->m[i]);
}

static void areas_of(struct rf_ppl_area *a, uint64_t missing)
{
	int i;

	for (i = 0; i < FM; i++) {
		a[i].present = !(missing & (1ull << i));
		a[i].start = AREA_AT;
		a[i].size = AREA_SIZE;
		a[i].data_offset = DATA_AT;
	}
}

static const uint8_t uuid[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

/* Log a 4 KiB update of array sectors [s, s + 8) as md would: header at
 * the start of the parity member's area, pp = the row's other data. */
static int log_update(struct fake *f, const struct rf_geom *g, uint64_t s, uint64_t gen, bool corrupt_pp)
{
	struct rf_ppl_header h = { .signature = rf_ppl_signature(uuid), .generation = gen, .entries_count = 1 };
	uint8_t hb[RF_PPL_HEADER_SIZE], pp[4096];
	int m, pd, i;
	uint64_t off = where(g, s, &m, &pd);

	/* pp: xor of the data columns not written = parity ^ old data */
	memcpy(pp, f->m[pd] + off, 4096);
	for (i = 0; i < 4096; i++)
		pp[i] ^= f->m[m][off + i];
	h.e[0].data_sector = s;
	h.e[0].pp_size = 4096;
	h.e[0].data_size = 4096;
	h.e[0].parity_disk = (uint32_t)pd;
	h.e[0].checksum = ~rf_crc32c(~0u, pp, 4096);
	if (corrupt_pp)
		pp[17] ^= 1;
	rf_ppl_encode(&h, hb);
	memcpy(f->m[pd] + AREA_AT, hb, sizeof(hb));
	memcpy(f->m[pd] + AREA_AT + RF_PPL_HEADER_SIZE, pp, 4096);
	return m;
}

/* The update's data lands on its member, its parity does not (the crash). */
static void torn_write(struct fake *f, const struct rf_geom *g, uint64_t s)
{
	int m, k, j;
	uint64_t off = where(g, s, &m, NULL);

	for (j = 0; j < 8; j++)
		for (k = 0; k < 64; k++)
			rf_put_le64(f->m[m] + off + 512 * j + 8 * k, (s + j) | 1ull << 40);
}

/* Rebuild member lost's block at member offset off from the others. */
static void rebuild(struct fake *f, int lost, uint64_t off, uint8_t *out)
{
	int i, j;

	memset(out, 0, 4096);
	for (i = 0; i < FM; i++)
		if (i != lost)
			for (j = 0; j < 4096; j++)
				out[j] ^= f->m[i][off + j];
}

static void test_crc32c(void **state)
{
	(void)state;
	assert_int_equal(~rf_crc32c(~0u, "123456789", 9), 0xe3069283u);
}

/* r5-ls-4d-64k-ppl (kernel md 6.1, mdadm 4.2): array uuid
 * 5db3ce2a:0e950036:f274ff16:f12df00f; role 3's first header: signature
 * 0x02024711, generation 1, one full-stripe entry {0, 0, 98304, 3, 0},
 * checksum 0xd6242d58 as md wrote it. */
static void test_kernel_header(void **state)
{
	static const uint8_t u[16] = { 0x5d, 0xb3, 0xce, 0x2a, 0x0e, 0x95, 0x00, 0x36,
				       0xf2, 0x74, 0xff, 0x16, 0xf1, 0x2d, 0xf0, 0x0f };
	struct rf_ppl_header h = { .generation = 1, .entries_count = 1 }, d;
	uint8_t b[RF_PPL_HEADER_SIZE];

	(void)state;
	h.signature = rf_ppl_signature(u);
	assert_int_equal(h.signature, 0x02024711u);
	h.e[0] = (struct rf_ppl_entry){ 0, 0, 98304, 3, 0 };
	rf_ppl_encode(&h, b);
	assert_int_equal(h.checksum, 0xd6242d58u);
	assert_int_equal(rf_ppl_decode(b, 0x02024711u, &d), 0);
	assert_int_equal(d.generation, 1);
	assert_int_equal(d.entries_count, 1);
	assert_int_equal(d.e[0].data_size, 98304);
	assert_int_equal(d.e[0].parity_disk, 3);
	/* another array's signature, a flipped bit */
	assert_int_equal(rf_ppl_decode(b, 0x02024712u, &d), -ENOENT);
	b[600] ^= 4;
	assert_int_equal(rf_ppl_decode(b, 0x02024711u, &d), -EBADMSG);
}

static void test_replay_closes_hole(void **state)
{
	struct rf_geom g;
	struct fake f;
	struct rf_ppl_area a[FM];
	struct rf_ppl_io io = { fk_read, fk_write, NULL, &f };
	struct rf_ppl_stats st;
	uint8_t blk[4096];
	uint64_t s = 3 * CHUNK_SECTORS + 16, off;      /* row 1, its first data column */
	int m, other, pd;

	(void)state;
	geom(&g);
	fake_init(&f, &g);
	m = log_update(&f, &g, s, 5, false);
	torn_write(&f, &g, s);
	assert_int_equal(bad_rows(&f), 1);      /* the hole */
	/* negative control: rebuild another data column of that row from
	 * the stale parity: it comes back wrong though it was not written */
	off = where(&g, s + CHUNK_SECTORS, &other, &pd);
	assert_int_not_equal(other, m);
	rebuild(&f, other, off, blk);
	assert_int_not_equal(rf_get_le64(blk), s + CHUNK_SECTORS);

	areas_of(a, 0);
	assert_int_equal(rf_ppl_recover(&io, &g, a, rf_ppl_signature(uuid), &st), 0);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.mismatches, FM - 1);        /* the others have no header */
	assert_int_equal(bad_rows(&f), 0);
	rebuild(&f, other, off, blk);
	assert_int_equal(rf_get_le64(blk), s + CHUNK_SECTORS);
	/* the replay is idempotent */
	assert_int_equal(rf_ppl_recover(&io, &g, a, rf_ppl_signature(uuid), &st), 0);
	assert_int_equal(bad_rows(&f), 0);
	fake_free(&f);
}

static void test_replay_refuses(void **state)
{
	struct rf_geom g;
	struct fake f;
	struct rf_ppl_area a[FM];
	struct rf_ppl_io io = { fk_read, fk_write, NULL, &f };
	struct rf_ppl_stats st;
	uint64_t s = 8;
	int m;

	(void)state;
	geom(&g);
	/* a partial parity whose checksum fails is not used */
	fake_init(&f, &g);
	log_update(&f, &g, s, 9, true);
	torn_write(&f, &g, s);
	areas_of(a, 0);
	f.writes = 0;
	assert_int_equal(rf_ppl_recover(&io, &g, a, rf_ppl_signature(uuid), &st), 0);
	assert_int_equal(st.entries, 0);
	assert_int_equal(f.writes, 0);
	assert_int_equal(bad_rows(&f), 1);
	fake_free(&f);
	/* the written column missing: nothing to xor, nothing written */
	fake_init(&f, &g);
	m = log_update(&f, &g, s, 9, false);
	torn_write(&f, &g, s);
	areas_of(a, 1ull << m);
	f.writes = 0;
	assert_int_equal(rf_ppl_recover(&io, &g, a, rf_ppl_signature(uuid), &st), 0);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.skipped, 1);
	assert_int_equal(f.writes, 0);
	fake_free(&f);
}

/* Several headers in a row: the newest before the generation drops is the
 * one found; an empty header then makes the area read as no entries. */
static void test_find_latest(void **state)
{
	struct fake f;
	struct rf_geom g;
	struct rf_ppl_io io = { fk_read, fk_write, NULL, &f };
	struct rf_ppl_area a[FM];
	struct rf_ppl_header h, got;
	uint8_t b[RF_PPL_HEADER_SIZE];
	uint32_t sig = rf_ppl_signature(uuid);
	uint64_t at = 0, gens[3] = { 40, 41, 7 };
	int i;

	(void)state;
	geom(&g);
	fake_init(&f, &g);
	areas_of(a, 0);
	for (i = 0; i < 3; i++) {
		memset(&h, 0, sizeof(h));
		h.signature = sig;
		h.generation = gens[i];
		h.entries_count = 1;
		h.e[0] = (struct rf_ppl_entry){ 8u * (unsigned)i, i == 0 ? 4096u : 0u, 12288, 0, 0 };
		rf_ppl_encode(&h, b);
		memcpy(f.m[0] + AREA_AT + at, b, sizeof(b));
		at += RF_PPL_HEADER_SIZE + h.e[0].pp_size;
	}
	assert_int_equal(rf_ppl_find_latest(&io, 0, &a[0], sig, &got, &at), 0);
	assert_int_equal(got.generation, 41);
	assert_int_equal(at, RF_PPL_HEADER_SIZE + 4096);
	assert_int_equal(rf_ppl_find_latest(&io, 1, &a[1], sig, &got, &at), -ENOENT);
	assert_int_equal(rf_ppl_write_empty(&io, 0, &a[0], sig), 0);
	assert_int_equal(rf_ppl_find_latest(&io, 0, &a[0], sig, &got, &at), 0);
	assert_int_equal(got.generation, 0);
	assert_int_equal(got.entries_count, 0);
	assert_int_equal(at, 0);
	fake_free(&f);
}

/* ---- the kernel-md array that crashed mid-write ---- */

struct files {
	int fd[FM];
};

static int fl_read(void *ctx, int m, void *buf, uint32_t len, uint64_t off)
{
	struct files *f = ctx;

	return pread(f->fd[m], buf, len, (off_t)off) == (ssize_t)len ? 0 : -EIO;
}

static int fl_write(void *ctx, int m, const void *buf, uint32_t len, uint64_t off)
{
	struct files *f = ctx;

	return pwrite(f->fd[m], buf, len, (off_t)off) == (ssize_t)len ? 0 : -EIO;
}

static void test_kernel_crash(void **state)
{
	const char *src = getenv("RF_MD_IMAGES") ? getenv("RF_MD_IMAGES") : "tests/data/md-images";
	char dir[FX_PATH], cmd[4 * FX_PATH], path[2 * FX_PATH];
	struct files fl;
	struct rf_ppl_io io = { fl_read, fl_write, NULL, &fl };
	struct rf_ppl_area a[FM];
	struct rf_ppl_stats st;
	struct rf_ppl_header *h = malloc(sizeof(*h));
	struct rf_geom g;
	uint8_t sb[256], *row = malloc(FM * 4096), x;
	uint64_t at, s;
	uint32_t sig;
	int i, j, m, with_pp = 0;
	struct stat stt;

	(void)state;
	assert_non_null(h);
	assert_non_null(row);
	snprintf(path, sizeof(path), "%s/r5-ls-4d-64k-ppl-crash/role0.img.xz", src);
	if (stat(path, &stt) || system("command -v xz >/dev/null 2>&1")) {
		print_message("[  SKIP    ] no %s or no xz\n", path);
		free(h);
		free(row);
		skip();
	}
	assert_int_equal(testdir_make(dir, sizeof(dir), "ppl"), 0);
	for (i = 0; i < FM; i++) {
		snprintf(cmd, sizeof(cmd), "xz -dc '%s/r5-ls-4d-64k-ppl-crash/role%d.img.xz' > '%s/role%d.img'", src,
			 i, dir, i);
		assert_int_equal(system(cmd), 0);
		snprintf(path, sizeof(path), "%s/role%d.img", dir, i);
		fl.fd[i] = open(path, O_RDWR);
		assert_true(fl.fd[i] >= 0);
	}
	/* the superblock: uuid, ppl offset and size, data offset */
	assert_int_equal(pread(fl.fd[0], sb, sizeof(sb), 4096), (ssize_t)sizeof(sb));
	assert_int_equal(rf_get_le32(sb + 8), 0x800);   /* MULTIPLE_PPLS alone, as md leaves it */
	sig = rf_ppl_signature(sb + 16);
	assert_int_equal(sig, 0x6789f1ebu);
	assert_int_equal((int16_t)rf_get_le16(sb + 96), 8);
	assert_int_equal(rf_get_le16(sb + 98), RF_PPL_AREA_SECTORS);
	for (i = 0; i < FM; i++) {
		a[i].present = true;
		a[i].start = 4096 + 8 * 512;
		a[i].size = RF_PPL_AREA_SECTORS * 512;
		a[i].data_offset = 4096 * 512;
	}
	/* role 1's newest header (the scan stops after generation 450) */
	assert_int_equal(rf_ppl_find_latest(&io, 1, &a[1], sig, h, &at), 0);
	assert_int_equal(h->generation, 450);
	assert_int_equal(at, 216 * 512);
	assert_int_equal(h->entries_count, 2);
	assert_int_equal(h->e[0].data_sector, 34680);
	assert_int_equal(h->e[1].pp_size, 28672);
	assert_int_equal(h->e[1].parity_disk, 1);
	/* role 0 wrapped: its newest is the last of the rising run */
	assert_int_equal(rf_ppl_find_latest(&io, 0, &a[0], sig, h, &at), 0);
	assert_int_equal(h->generation, 445);
	for (i = 0; i < (int)h->entries_count; i++)
		with_pp += h->e[i].pp_size > 0;
	assert_true(with_pp > 0);

	memset(&g, 0, sizeof(g));
	g.level = 5;
	g.layout = 2;
	g.raid_disks = FM;
	g.chunk_sectors = 128;
	g.dev_sectors = 61440;
	assert_int_equal(rf_geom_init(&g, (char *)cmd, sizeof(cmd)), 0);
	assert_int_equal(rf_ppl_recover(&io, &g, a, sig, &st), 0);
	assert_int_equal(st.headers, FM);
	assert_int_equal(st.mismatches, 0);
	assert_true(st.entries >= FM);
	/* every row's parity agrees with its data after the replay */
	for (s = 0; s < g.dev_sectors; s += 8) {
		for (m = 0; m < FM; m++)
			assert_int_equal(pread(fl.fd[m], row + m * 4096, 4096, (off_t)(a[m].data_offset + s * 512)),
					 4096);
		for (j = 0; j < 4096; j++) {
			for (x = 0, m = 0; m < FM; m++)
				x ^= row[m * 4096 + j];
			if (x)
				fail_msg("member sector %llu: parity disagrees", (unsigned long long)s);
		}
	}
	for (i = 0; i < FM; i++)
		close(fl.fd[i]);
	testdir_remove(dir);
	free(h);
	free(row);
}

static struct rf_sb place_sb(enum rf_sb_kind kind, uint64_t data_offset, int32_t bblog)
{
	struct rf_sb sb;

	memset(&sb, 0, sizeof(sb));
	sb.kind = kind;
	sb.level = 5;
	sb.chunk_sectors = 128;
	sb.sb_offset = kind == RF_SB_12 ? 8 : 0;
	sb.data_offset = data_offset;
	sb.data_size = 16384;
	sb.bblog_offset = bblog;
	sb.bblog_size = bblog ? 8 : 0;
	return sb;
}

static void test_place(void **state)
{
	struct rf_sb sb;
	char why[200];
	int16_t off;
	uint16_t size;

	(void)state;
	/* small members: bad block log right behind the superblock, so the
	 * log goes behind it: a header and a 64 KiB chunk rounded up to md's
	 * 128 KiB, one log */
	sb = place_sb(RF_SB_12, 2048, 16);
	assert_int_equal(rf_ppl_place(&sb, &off, &size, why, sizeof(why)), 0);
	assert_int_equal(off, 24);
	assert_int_equal(size, 264);
	assert_false(rf_ppl_area_multi(size * 512ull));
	/* mdadm's own place: the room before the bad block log */
	sb = place_sb(RF_SB_12, 4096, 8 + 2048 + 100);
	assert_int_equal(rf_ppl_place(&sb, &off, &size, why, sizeof(why)), 0);
	assert_int_equal(off, 8);
	assert_int_equal(size, RF_PPL_AREA_SECTORS);
	assert_true(rf_ppl_area_multi(size * 512ull));
	sb = place_sb(RF_SB_12, 4096, 8 + 100);
	assert_int_equal(rf_ppl_place(&sb, &off, &size, why, sizeof(why)), 0);
	assert_int_equal(off, 8);
	assert_int_equal(size, 96);     /* 8 + whole pages */
	/* no bad block log: up to the data */
	sb = place_sb(RF_SB_12, 2048, 0);
	assert_int_equal(rf_ppl_place(&sb, &off, &size, why, sizeof(why)), 0);
	assert_int_equal(off, 8);
	assert_int_equal(size, 264);
	/* 1.0: the free space between the data and the superblock */
	sb = place_sb(RF_SB_10, 0, -8);
	sb.sb_offset = 16384 + 200;
	assert_int_equal(rf_ppl_place(&sb, &off, &size, why, sizeof(why)), 0);
	assert_int_equal(off, -200);
	assert_int_equal(size, 192);
	/* refused: no room, a bitmap, raid6, 0.90 */
	sb = place_sb(RF_SB_12, 32, 16);
	assert_int_equal(rf_ppl_place(&sb, &off, &size, why, sizeof(why)), -ENOSPC);
	assert_non_null(strstr(why, "8 sectors free"));
	sb = place_sb(RF_SB_12, 2048, 16);
	sb.bitmap = true;
	assert_int_equal(rf_ppl_place(&sb, &off, &size, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "bitmap"));
	sb = place_sb(RF_SB_12, 2048, 16);
	sb.level = 6;
	assert_int_equal(rf_ppl_place(&sb, &off, &size, why, sizeof(why)), -EINVAL);
	sb = place_sb(RF_SB_090, 2048, 16);
	assert_int_equal(rf_ppl_place(&sb, &off, &size, why, sizeof(why)), -EINVAL);
}

/* ---- the running log's order, on fake members ---- */

#define FL_DATA_OFFSET 4096ull          /* sectors: superblock, 1 MiB log, bad block log */
#define FL_SECTORS (FL_DATA_OFFSET + 2048)
#define FL_AREA ((8 + 8) * 512ull)      /* bytes: the log, 8 sectors after the superblock */

/* Replay the recorded operations: a data write (below the log of member
 * pm) must come after a log write with no flush round since, and no log
 * write may come while a member written since the last one has not been
 * flushed.  The violations, and the data member flushes seen. */
static int order_violations(int pm, int *flushes)
{
	uint64_t dirty = 0;
	bool logged = true;             /* the empty headers at open */
	int i, bad = 0;

	*flushes = 0;
	for (i = 0; i < fake_nlog; i++) {
		const struct fake_logent *e = &fake_log[i];
		uint64_t bit = 1ull << e->member;

		if (e->op == RF_MIO_FSYNC) {
			if (!(dirty & bit))
				continue;       /* the log's own flush, a superblock's */
			(*flushes)++;
			dirty &= ~bit;
			if (!dirty)
				logged = false; /* the unit is over */
			continue;
		}
		if (e->op != RF_MIO_WRITE)
			continue;
		if (e->off >= FL_DATA_OFFSET * 512) {
			if (!logged)
				bad++;          /* data without its log write */
			dirty |= bit;
		} else if (e->member == pm && e->off >= FL_AREA && e->off < FL_AREA + RF_PPL_AREA_SECTORS * 512ull) {
			if (dirty)
				bad++;          /* the log reused over unflushed data */
			logged = true;
		}
	}
	return bad;
}

/* A raid5 with md's log on FM members named what (their paths in paths),
 * gtc threads per group, started on the fake queue with every operation
 * recorded from now on. */
static struct rf_array *fl_open(const char *what, int gtc, char (*paths)[FX_PATH])
{
	struct rf_sb_new n = { .level = 5, .layout = 2, .chunk_sectors = CHUNK_SECTORS, .raid_disks = FM,
			       .data_offset = FL_DATA_OFFSET, .size = FL_SECTORS - FL_DATA_OFFSET, .clean = true,
			       .ppl = true };
	const char *p[FM];
	struct rf_array *a;
	int i;

	fx_md_members(&n, what, FL_SECTORS, paths);
	for (i = 0; i < FM; i++)
		p[i] = paths[i];
	a = fx_open_assembled(p, FM, false, gtc);
	fake_reset();
	fake_log_on = true;
	fx_start(a, fake_ioq_init);
	return a;
}

static int run_flush(const char *flush, int *flushes)
{
	char paths[FM][FX_PATH];
	char *buf = aligned_alloc(4096, 4096);
	struct rf_array *a;
	int i, r, bad;

	assert_non_null(buf);
	setenv("RAIDFUSE_PPL_FLUSH", flush, 1);
	a = fl_open("fl", 2, paths);
	/* rows 0, 4, 8 and 12 all keep their parity on member 3: four units
	 * of one log, one after another */
	for (i = 0; i < 4; i++) {
		fx_rand_fill(buf, 4096);
		r = testreq_io(a, RF_REQ_WRITE, (uint64_t)i * 4 * 3 * CHUNK_SECTORS * 512, 4096, buf);
		assert_int_equal(r, 0);
	}
	rf_array_close(a);
	fake_log_on = false;
	unsetenv("RAIDFUSE_PPL_FLUSH");
	free(buf);
	bad = order_violations(3, flushes);
	return bad;
}

static void test_flush_before_reuse(void **state)
{
	int flushes, bad;

	(void)state;
	bad = run_flush("1", &flushes);
	assert_int_equal(bad, 0);
	assert_true(flushes >= 3 * 2);  /* each unit's data and parity member, before the next */
	/* negative control: members that need no flush */
	bad = run_flush("0", &flushes);
	assert_int_equal(flushes, 0);
	assert_true(bad >= 3);
}

/* A 64 KiB write to one column of row 0 (16 heads of 4 KiB, the row's
 * parity on member 3): one log write on member 3, the header and the
 * partial parity of all 16 heads, and a header naming them all, each
 * entry with md's checksum of its partial parity.
 * (Each unit used to start at its first head: two log writes, the first
 * header naming one head.) */
static void test_unit_gathers(void **state)
{
	char paths[FM][FX_PATH];
	uint8_t id[16];
	char *buf = aligned_alloc(4096, 65536), *pp = malloc(65536);
	struct rf_ppl_header h;
	struct rf_array *a;
	int i, fd, logw = 0;

	(void)state;
	assert_non_null(buf);
	assert_non_null(pp);
	a = fl_open("ug", 0, paths);
	fx_rand_fill(buf, 65536);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, 65536, buf), 0);
	rf_array_close(a);
	fake_log_on = false;
	for (i = 0; i < fake_nlog; i++) {
		const struct fake_logent *e = &fake_log[i];

		if (e->op != RF_MIO_WRITE || e->member != 3 || e->off < FL_AREA ||
		    e->off >= FL_AREA + RF_PPL_AREA_SECTORS * 512ull)
			continue;
		logw++;
		assert_int_equal(e->off, FL_AREA);
		assert_int_equal(e->len, RF_PPL_HEADER_SIZE + 65536);
	}
	assert_int_equal(logw, 1);
	fd = open(paths[3], O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, pp, 65536, FL_AREA + RF_PPL_HEADER_SIZE), 65536);
	assert_int_equal(pread(fd, buf, RF_PPL_HEADER_SIZE, FL_AREA), RF_PPL_HEADER_SIZE);
	close(fd);
	for (i = 0; i < 16; i++)
		id[i] = (uint8_t)(0x40 + i * 7);
	assert_int_equal(rf_ppl_decode(buf, rf_ppl_signature(id), &h), 0);
	/* 15 heads merged, the 16th apart: md keeps an entry's partial
	 * parity below a chunk */
	assert_int_equal(h.entries_count, 2);
	assert_int_equal(h.e[0].data_sector, 0);
	assert_int_equal(h.e[0].data_size, 15 * 4096);
	assert_int_equal(h.e[0].pp_size, 15 * 4096);
	assert_int_equal(h.e[1].data_sector, 15 * 8);
	assert_int_equal(h.e[1].pp_size, 4096);
	assert_int_equal(h.e[0].parity_disk, 3);
	/* each entry's checksum is md's, of its partial parity as written */
	assert_int_equal(h.e[0].checksum, ~rf_crc32c(~0u, pp, 15 * 4096));
	assert_int_equal(h.e[1].checksum, ~rf_crc32c(~0u, pp + 15 * 4096, 4096));
	free(pp);
	free(buf);
}

/* Every row of members on paths holds parity: the xor of its blocks is
 * 0.  The rows where it is not. */
static int file_bad_rows(char (*paths)[FX_PATH])
{
	static uint8_t blk[FM][4096];
	uint64_t off;
	int fd[FM], i, j, bad = 0;

	for (i = 0; i < FM; i++) {
		fd[i] = open(paths[i], O_RDONLY);
		assert_true(fd[i] >= 0);
	}
	for (off = FL_DATA_OFFSET * 512; off < FL_SECTORS * 512; off += 4096) {
		uint8_t x = 0;

		for (i = 0; i < FM; i++)
			assert_int_equal(pread(fd[i], blk[i], 4096, (off_t)off), 4096);
		for (j = 0; j < 4096; j++) {
			uint8_t v = 0;

			for (i = 0; i < FM; i++)
				v ^= blk[i][j];
			x |= v;
		}
		bad += !!x;
	}
	for (i = 0; i < FM; i++)
		close(fd[i]);
	return bad;
}

/* Logged read-modify-writes make their new parity from the partial
 * parity (rf_r5_log_rmw()): after random 4 KiB writes (one column: rmw) and
 * 8 KiB ones across a chunk's end (two columns), every row's parity
 * holds on the members, and what was written reads back. */
static void test_logged_parity(void **state)
{
	char paths[FM][FX_PATH];
	char *buf = aligned_alloc(4096, 8192), *back = aligned_alloc(4096, 8192);
	uint64_t size = (FL_SECTORS - FL_DATA_OFFSET) * 512 * (FM - 1), off;
	struct rf_array *a;
	uint32_t len;
	int i;

	(void)state;
	assert_non_null(buf);
	assert_non_null(back);
	a = fl_open("lp", 0, paths);
	for (i = 0; i < 200; i++) {
		if (i % 4) {
			len = 4096;
			off = fx_rand() % (size / 4096) * 4096;
		} else {
			len = 8192;
			off = (fx_rand() % (size / (CHUNK_SECTORS * 512) - 1) + 1) * CHUNK_SECTORS * 512 - 4096;
		}
		fx_rand_fill(buf, len);
		assert_int_equal(testreq_io(a, RF_REQ_WRITE, off, len, buf), 0);
		assert_int_equal(testreq_io(a, RF_REQ_READ, off, len, back), 0);
		assert_memory_equal(buf, back, len);
	}
	rf_array_close(a);
	fake_log_on = false;
	assert_int_equal(file_bad_rows(paths), 0);
	free(buf);
	free(back);
}

/* A small write lent to an array with the log (rf_req.lent: the
 * submitter's bytes, reused when rf_req_submit() returns) is copied
 * first, and the call returns although its head waits for the log: B's
 * unit holds member 3's log (its header write held at the gate) when A's
 * write to another row with its parity there arrives.  A's call returns
 * before its request ends, and what the submitter scribbles over its
 * buffer afterwards never reaches the members.  Lent as writes without
 * the log are, A's call would return only once the gate opened. */
struct lent_w {
	struct rf_array *a;
	struct rf_req *r;
	char *buf;
	atomic_int returned;
};

static void *blocked_writer(void *arg)
{
	struct lent_w *w = arg;

	assert_int_equal(testreq_io(w->a, RF_REQ_WRITE, 0, 4096, w->buf), 0);
	return NULL;
}

static void *lent_writer(void *arg)
{
	struct lent_w *w = arg;

	rf_req_submit(w->a, w->r);
	atomic_store(&w->returned, 1);
	return NULL;
}

static void test_small_write_copied(void **state)
{
	const uint64_t row4 = 4ull * 3 * CHUNK_SECTORS * 512;
	struct testreq_done d = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	char paths[FM][FX_PATH];
	char *lent = aligned_alloc(4096, 4096), *want = malloc(4096), *back = aligned_alloc(4096, 4096);
	char *own = aligned_alloc(4096, 4096);          /* the request's buffer */
	struct lent_w b = { 0 }, w = { 0 };
	pthread_t tb, tw;
	int i;

	(void)state;
	assert_non_null(lent);
	assert_non_null(want);
	assert_non_null(back);
	assert_non_null(own);
	b.a = w.a = fl_open("sc", 0, paths);
	b.buf = back;
	fx_rand_fill(back, 4096);
	fx_rand_fill(want, 4096);
	memcpy(lent, want, 4096);
	w.r = rf_req_alloc(w.a, 4096);
	assert_non_null(w.r);
	w.r->op = RF_REQ_WRITE;
	w.r->off = row4;
	w.r->len = 4096;
	w.r->buf = own;
	w.r->lent = lent;
	w.r->priv = &d;
	w.r->done = testreq_done_cb;
	/* rows 0 and 4 in the cache, up to date: neither write reads, B's
	 * first member IO is its unit's log write */
	assert_int_equal(testreq_io(w.a, RF_REQ_WRITE, 0, 4096, back), 0);
	assert_int_equal(testreq_io(w.a, RF_REQ_WRITE, row4, 4096, back), 0);
	fx_rand_fill(back, 4096);
	fake_gate_close();
	assert_int_equal(pthread_create(&tb, NULL, blocked_writer, &b), 0);
	for (i = 0; i < 100000 && !fake_gate_waiting(); i++)
		usleep(100);
	assert_true(fake_gate_waiting() > 0);
	assert_int_equal(pthread_create(&tw, NULL, lent_writer, &w), 0);
	for (i = 0; i < 20000 && !atomic_load(&w.returned); i++)
		usleep(100);
	/* returned, its request not ended: its bytes were copied */
	assert_true(atomic_load(&w.returned));
	pthread_mutex_lock(&d.lock);
	assert_false(d.done);
	pthread_mutex_unlock(&d.lock);
	memset(lent, 0xee, 4096);
	fake_gate_open();
	pthread_join(tb, NULL);
	pthread_join(tw, NULL);
	pthread_mutex_lock(&d.lock);
	while (!d.done)
		pthread_cond_wait(&d.cond, &d.lock);
	pthread_mutex_unlock(&d.lock);
	assert_int_equal(d.err, 0);
	rf_req_free(w.r);
	assert_int_equal(testreq_io(w.a, RF_REQ_READ, row4, 4096, back), 0);
	assert_memory_equal(back, want, 4096);
	rf_array_close(w.a);
	fake_log_on = false;
	assert_int_equal(file_bad_rows(paths), 0);
	free(own);
	free(lent);
	free(want);
	free(back);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c),
		cmocka_unit_test(test_kernel_header),
		cmocka_unit_test(test_replay_closes_hole),
		cmocka_unit_test(test_replay_refuses),
		cmocka_unit_test(test_find_latest),
		cmocka_unit_test(test_kernel_crash),
		cmocka_unit_test(test_place),
		cmocka_unit_test(test_flush_before_reuse),
		cmocka_unit_test(test_unit_gathers),
		cmocka_unit_test(test_logged_parity),
		cmocka_unit_test(test_small_write_copied),
	};

	return fx_run_tests("ppl", tests);
}
