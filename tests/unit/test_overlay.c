/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_overlay.c - copy-on-write overlays against a model.
 *
 * A member with an md superblock and random contents, then random reads
 * and writes through its overlay (unaligned, across blocks, vectored, the
 * last partial block too) checked byte for byte against an in-memory
 * model; the member itself must never change.  Reopened, the overlay
 * reads back the same; the files refuse a second user and a member of
 * another size; superblock updates through it land in the overlay.
 *
 * What it was made over (the .base record): a member whose own
 * superblock changed since the overlay was made is refused, naming the
 * member and its events then and now (regression: it was accepted, and
 * the image became a mix of both), while the overlay's own superblock
 * updates (test_superblock) do not count as a change; an overlay with
 * files but no record (an older raidfuse's) is refused; the record's
 * parser refuses a torn file, another version, a bad checksum.  And the
 * .map parser refuses a torn map rather than reading its end as zeros.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <endian.h>

#include "raidfuse/ioq.h"
#include "raidfuse/overlay.h"
#include "raidfuse/super.h"
#include "fixture.h"

#define SECTORS 2049ULL                 /* 1 MiB and a half block */
#define BYTES (SECTORS * 512)

static char ovdir[300], member[300];
static char *orig, *model;

static void make_member(const char *path, uint64_t bytes)
{
	struct rf_sb_new n;
	char err[512];
	int fd = fx_file_open(path, bytes);

	memset(&n, 0, sizeof(n));
	for (int i = 0; i < 16; i++)
		n.uuid[i] = (uint8_t)(i * 13 + 1);
	n.level = 1;
	n.raid_disks = 2;
	n.data_offset = 16;
	n.size = (bytes / 512 - 16) / 128 * 128;
	n.clean = true;
	if (rf_sb_write12(fd, path, &n, 1, bytes / 512, err, sizeof(err)))
		fail_msg("%s", err);
	close(fd);
}

static void read_file(const char *path, char *buf, uint64_t bytes)
{
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, bytes, 0), (ssize_t)bytes);
	close(fd);
}

static struct rf_ovl *open_ovl(int *fd)
{
	struct rf_ovl *o;
	char err[1024];

	*fd = open(member, O_RDONLY);
	assert_true(*fd >= 0);
	if (rf_ovl_open(ovdir, *fd, member, &o, err, sizeof(err)))
		fail_msg("%s", err);
	return o;
}

static void check_all(struct rf_ovl *o)
{
	char *buf = malloc(BYTES + 4096);
	struct iovec v = { buf, BYTES + 4096 };

	assert_int_equal(rf_ovl_preadv(o, &v, 1, 0), 0);
	assert_memory_equal(buf, model, BYTES);
	for (int i = 0; i < 4096; i++)          /* past the end: zeros */
		assert_int_equal(buf[BYTES + i], 0);
	free(buf);
}

static void test_model(void **state)
{
	char *buf = malloc(65536), *now = malloc(BYTES);
	struct rf_ovl *o;
	int fd, i, k;
	uint64_t blocks;

	o = open_ovl(&fd);
	check_all(o);
	for (i = 0; i < 3000; i++) {
		/* Past the superblock, which test_superblock needs intact. */
		uint64_t off = 8192 + (uint64_t)fx_rand() % (BYTES - 8192);
		uint32_t len = 1 + (uint32_t)fx_rand() % (i % 7 ? 9000 : 65536);
		struct iovec v[3];
		int niov = 1 + fx_rand() % 3;
		uint32_t used = 0;

		if (off + len > BYTES)
			len = (uint32_t)(BYTES - off);
		/* Cut [0, len) into niov pieces. */
		for (k = 0; k < niov; k++) {
			uint32_t piece = k == niov - 1 ? len - used : (uint32_t)fx_rand() % (len - used + 1);

			v[k].iov_base = buf + used;
			v[k].iov_len = piece;
			used += piece;
		}
		if (fx_rand() % 3) {
			fx_rand_fill(buf, len);
			assert_int_equal(rf_ovl_pwritev(o, v, niov, off), 0);
			memcpy(model + off, buf, len);
		} else {
			assert_int_equal(rf_ovl_preadv(o, v, niov, off), 0);
			assert_memory_equal(buf, model + off, len);
		}
	}
	check_all(o);
	/* A write past the end is refused. */
	{
		struct iovec v = { buf, 4096 };

		assert_int_equal(rf_ovl_pwritev(o, &v, 1, BYTES - 100), -ENOSPC);
	}
	assert_int_equal(rf_ovl_fsync(o), 0);
	blocks = rf_ovl_blocks(o);
	assert_true(blocks > 0 && blocks <= (BYTES + 4095) / 4096);
	rf_ovl_close(o);
	close(fd);
	/* The member never changed. */
	read_file(member, now, BYTES);
	assert_memory_equal(now, orig, BYTES);
	/* Reopened: the same view, the same blocks. */
	o = open_ovl(&fd);
	assert_int_equal(rf_ovl_blocks(o), blocks);
	check_all(o);
	rf_ovl_close(o);
	close(fd);
	free(buf);
	free(now);
}

static void test_refusals(void **state)
{
	struct rf_ovl *o, *o2;
	char err[1024], other[320], plain[320];
	int fd, fd2;

	/* Locked while in use. */
	o = open_ovl(&fd);
	fd2 = open(member, O_RDONLY);
	assert_int_equal(rf_ovl_open(ovdir, fd2, member, &o2, err, sizeof(err)), -EWOULDBLOCK);
	assert_non_null(strstr(err, "in use by another raidfuse"));
	close(fd2);
	rf_ovl_close(o);
	close(fd);
	/* The same superblock on a member of another size. */
	snprintf(other, sizeof(other), "%s/other.img", fx_dir);
	make_member(other, BYTES + 4096);
	fd = open(other, O_RDONLY);
	assert_int_equal(rf_ovl_open(ovdir, fd, other, &o, err, sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "was made for a member of"));
	close(fd);
	/* No superblock, no name for the files. */
	snprintf(plain, sizeof(plain), "%s/plain.img", fx_dir);
	fd = fx_file_open(plain, 1 << 20);
	assert_int_equal(rf_ovl_open(ovdir, fd, plain, &o, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "needs md superblocks"));
	close(fd);
}

/* Superblock updates through the overlay change the overlay's copy only. */
static void test_superblock(void **state)
{
	struct rf_sb sb, onmember;
	struct rf_sb_io io;
	struct rf_sb_change c = { .clean = false, .faulty_slot = 0 };
	struct rf_ovl *o;
	char err[1024];
	int fd;

	o = open_ovl(&fd);
	rf_ovl_sb_io(o, &io);
	assert_int_equal(rf_sb_read_io(&io, member, &sb, err, sizeof(err)), 0);
	assert_int_equal(rf_sb_update_io(&io, member, &sb, &c, err, sizeof(err)), 0);
	assert_int_equal(rf_sb_read_io(&io, member, &sb, err, sizeof(err)), 0);
	assert_false(sb.clean);
	assert_int_equal(sb.dev_roles[0], RF_SB_ROLE_FAULTY);
	assert_int_equal(rf_sb_read(fd, member, &onmember, err, sizeof(err)), 0);
	assert_true(onmember.clean);
	assert_int_equal(onmember.events + 1, sb.events);
	assert_int_equal(onmember.dev_roles[0], 0);
	{
		/* The model follows the overlay's new superblock. */
		struct iovec v = { model + 4096, 4096 };

		assert_int_equal(rf_ovl_preadv(o, &v, 1, 4096), 0);
		assert_memory_not_equal(model + 4096, orig + 4096, 4096);
	}
	rf_ovl_close(o);
	close(fd);
}

/* A member of its own with an overlay of its own: dir/name.img, dir/name. */
static void fresh(const char *name, char *mpath, char *odir, size_t size)
{
	snprintf(mpath, size, "%s/%s.img", fx_dir, name);
	snprintf(odir, size, "%s/%s", fx_dir, name);
	make_member(mpath, 1 << 20);
	assert_int_equal(mkdir(odir, 0755), 0);
}

static int try_open(const char *odir, const char *mpath, char *err, size_t errlen)
{
	struct rf_ovl *o;
	char buf[4096];
	struct iovec v = { buf, sizeof(buf) };
	int fd = open(mpath, O_RDONLY), r;

	assert_true(fd >= 0);
	memset(buf, 0x5a, sizeof(buf));
	r = rf_ovl_open(odir, fd, mpath, &o, err, errlen);
	if (!r) {
		/* a write through it, and a superblock update through it */
		struct rf_sb sb;
		struct rf_sb_io io;
		struct rf_sb_change c = { .clean = false, .faulty_slot = -1 };

		assert_int_equal(rf_ovl_pwritev(o, &v, 1, 65536), 0);
		rf_ovl_sb_io(o, &io);
		assert_int_equal(rf_sb_read_io(&io, mpath, &sb, err, errlen), 0);
		assert_int_equal(rf_sb_update_io(&io, mpath, &sb, &c, err, errlen), 0);
		rf_ovl_close(o);
	}
	close(fd);
	return r;
}

/* The members changed under the overlay: refused, saying how. */
static void test_stale_base(void **state)
{
	char mpath[320], odir[320], err[1024], want[1024];
	struct rf_sb sb;
	int fd;

	fresh("stale", mpath, odir, sizeof(mpath));
	assert_int_equal(try_open(odir, mpath, err, sizeof(err)), 0);
	/* Negative control: the member as it was (the overlay's own
	 * superblock update went into the overlay), accepted again. */
	assert_int_equal(try_open(odir, mpath, err, sizeof(err)), 0);
	/* Written without the overlay: events + 1 on the member itself. */
	fd = open(mpath, O_RDWR);
	assert_int_equal(rf_sb_read(fd, mpath, &sb, err, sizeof(err)), 0);
	assert_int_equal(rf_sb_update(fd, mpath, &sb, true, UINT64_MAX, err, sizeof(err)), 0);
	close(fd);
	assert_int_equal(try_open(odir, mpath, err, sizeof(err)), -ESTALE);
	snprintf(want, sizeof(want), "overlay %s was made over member 1 (%s) at events %llu; it is now at events "
		 "%llu: the members changed since; use a new DIR or remove it", odir, mpath,
		 (unsigned long long)sb.events - 1, (unsigned long long)sb.events);
	assert_string_equal(err, want);
	/* A fresh directory works. */
	strcat(odir, "-new");
	assert_int_equal(mkdir(odir, 0755), 0);
	assert_int_equal(try_open(odir, mpath, err, sizeof(err)), 0);
}

/* The same events, another superblock (mdadm --update, say): refused. */
static void test_stale_csum(void **state)
{
	char mpath[320], odir[320], err[1024];
	uint8_t b;
	int fd;

	fresh("csum", mpath, odir, sizeof(mpath));
	assert_int_equal(try_open(odir, mpath, err, sizeof(err)), 0);
	/* a byte of the name field (offset 32 of the superblock), checksum repaired */
	fd = open(mpath, O_RDWR);
	{
		uint8_t sbb[RF_SB_BYTES];
		uint32_t c;

		assert_int_equal(pread(fd, sbb, sizeof(sbb), 4096), (ssize_t)sizeof(sbb));
		b = sbb[32];
		sbb[32] = (uint8_t)(b ^ 'x');
		c = htole32(rf_sb_csum(sbb, RF_SB_12));
		memcpy(sbb + 216, &c, 4);
		assert_int_equal(pwrite(fd, sbb, sizeof(sbb), 4096), (ssize_t)sizeof(sbb));
	}
	close(fd);
	assert_int_equal(try_open(odir, mpath, err, sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "with superblock checksum 0x"));
}

/* A member without a superblock (a config's array): named by the caller's
 * key and slot; what was written is there again at the next open, and
 * not on the member; another key is another overlay; a sampled block
 * changed since is refused. */
static void test_nosb(void **state)
{
	uint8_t key[16], key2[16], byte = 0x5a, got[512];
	char plain[320], odir[320], err[1024];
	struct iovec v = { got, sizeof(got) };
	struct iovec w = { got, sizeof(got) };
	struct rf_ovl *o;
	int fd;

	(void)state;
	memset(key, 7, sizeof(key));
	memset(key2, 8, sizeof(key2));
	snprintf(plain, sizeof(plain), "%s/nosb.img", fx_dir);
	snprintf(odir, sizeof(odir), "%s/ovl-nosb", fx_dir);
	assert_int_equal(mkdir(odir, 0755), 0);
	fd = fx_file_open(plain, 64 * 4096);
	assert_int_equal(rf_ovl_open_nosb(odir, fd, plain, key, 2, &o, err, sizeof(err)), 0);
	memset(got, 0xa5, sizeof(got));
	assert_int_equal(rf_ovl_pwritev(o, &w, 1, 8192), 0);
	rf_ovl_close(o);
	/* the member itself is untouched */
	assert_int_equal(pread(fd, got, sizeof(got), 8192), (ssize_t)sizeof(got));
	assert_int_equal(got[0], 0);
	assert_int_equal(rf_ovl_open_nosb(odir, fd, plain, key, 2, &o, err, sizeof(err)), 0);
	assert_int_equal(rf_ovl_preadv(o, &v, 1, 8192), 0);
	assert_int_equal(got[0], 0xa5);
	rf_ovl_close(o);
	/* another key: another overlay, without that write */
	assert_int_equal(rf_ovl_open_nosb(odir, fd, plain, key2, 2, &o, err, sizeof(err)), 0);
	assert_int_equal(rf_ovl_preadv(o, &v, 1, 8192), 0);
	assert_int_equal(got[0], 0);
	rf_ovl_close(o);
	close(fd);
	/* a sampled block (the first) changed: refused */
	fd = open(plain, O_RDWR);
	assert_int_equal(pwrite(fd, &byte, 1, 100), 1);
	assert_int_equal(rf_ovl_open_nosb(odir, fd, plain, key, 2, &o, err, sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "sampled blocks' checksum"));
	close(fd);
}

/* An older raidfuse's overlay: files, no record. */
static void test_legacy(void **state)
{
	char mpath[320], odir[320], err[1024], rec[400], cmd[800];

	fresh("legacy", mpath, odir, sizeof(mpath));
	assert_int_equal(try_open(odir, mpath, err, sizeof(err)), 0);
	snprintf(rec, sizeof(rec), "%s/010e1b2835424f5c697683909daab7c4.base", odir);
	assert_int_equal(access(rec, F_OK), 0);
	assert_int_equal(unlink(rec), 0);
	assert_int_equal(try_open(odir, mpath, err, sizeof(err)), -ESTALE);
	assert_non_null(strstr(err, "no record of the member it was made over"));
	assert_non_null(strstr(err, "use a new DIR"));
	/* ... and a torn record is refused, not trusted or rewritten. */
	snprintf(cmd, sizeof(cmd), "rm -f '%s'/*; :", odir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(try_open(odir, mpath, err, sizeof(err)), 0);
	assert_int_equal(truncate(rec, 60), 0);
	assert_int_equal(try_open(odir, mpath, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "torn"));
}

/* The record's parser. */
static void test_base_parse(void **state)
{
	static struct rf_ovl_base b, back;
	uint8_t buf[4096], bad[4096];
	char err[512];
	size_t len;
	uint32_t v;

	memset(&b, 0, sizeof(b));
	for (int i = 0; i < 16; i++)
		b.uuid[i] = (uint8_t)i;
	b.n = 3;
	for (uint32_t i = 0; i < 3; i++)
		b.dev[i] = (struct rf_ovl_base_dev){ .dev_number = 2 - i, .role = i, .sb_csum = 0xabc0 + i,
						      .events = 40 + i, .member_bytes = 1 << 20 };
	len = rf_ovl_base_build(&b, buf, sizeof(buf));
	assert_int_equal(len, 40 + 3 * 32 + 4);
	assert_int_equal(rf_ovl_base_build(&b, buf, len - 1), 0);
	assert_int_equal(rf_ovl_base_parse(buf, len, "r.base", &back, err, sizeof(err)), 0);
	assert_int_equal(back.n, 3);
	assert_memory_equal(back.uuid, b.uuid, 16);
	assert_memory_equal(back.dev, b.dev, 3 * sizeof(b.dev[0]));
	/* torn: any shorter length */
	for (size_t cut = 0; cut < len; cut++) {
		err[0] = '\0';
		assert_int_equal(rf_ovl_base_parse(buf, cut, "r.base", &back, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, cut >= 8 && cut < 44 ? "torn" : "r.base: "));
	}
	assert_int_equal(rf_ovl_base_parse(buf, len - 1, "r.base", &back, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "r.base: torn: 139 bytes, its header says 140");
	/* another version, checksum made right */
	memcpy(bad, buf, len);
	v = htole32(2);
	memcpy(bad + 8, &v, 4);
	assert_int_equal(rf_ovl_base_parse(bad, len, "r.base", &back, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "r.base: an overlay record of version 2; this raidfuse reads version 1");
	/* a bit flipped anywhere */
	for (size_t i = 0; i < len; i++) {
		memcpy(bad, buf, len);
		bad[i] ^= 0x10;
		assert_int_equal(rf_ovl_base_parse(bad, len, "r.base", &back, err, sizeof(err)), -EINVAL);
	}
	memcpy(bad, buf, len);
	bad[60] ^= 1;           /* an entry's events */
	assert_int_equal(rf_ovl_base_parse(bad, len, "r.base", &back, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "r.base: checksum 0x"));
	/* foreign */
	memcpy(bad, buf, len);
	memcpy(bad, "RFOVL1\n\0", 8);
	assert_int_equal(rf_ovl_base_parse(bad, len, "r.base", &back, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "r.base: not a raidfuse overlay record");
	/* one device twice, checksum right */
	b.dev[2].dev_number = b.dev[0].dev_number;
	len = rf_ovl_base_build(&b, buf, sizeof(buf));
	assert_int_equal(rf_ovl_base_parse(buf, len, "r.base", &back, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "recorded twice"));
}

/* The map's parser: a torn map is refused, never read as zeros. */
static void test_map_parse(void **state)
{
	char mpath[320], odir[320], err[1024], map[400], cmd[800];
	int r;

	fresh("map", mpath, odir, sizeof(mpath));
	assert_int_equal(try_open(odir, mpath, err, sizeof(err)), 0);
	snprintf(map, sizeof(map), "%s/010e1b2835424f5c697683909daab7c4-1.map", odir);
	assert_int_equal(truncate(map, 4096 + 10), 0);        /* a 1 MiB member needs 4096 + 32 */
	r = try_open(odir, mpath, err, sizeof(err));
	assert_int_equal(r, -EINVAL);
	assert_non_null(strstr(err, "torn: 4106 bytes, a member of 1048576 bytes needs 4128"));
	snprintf(cmd, sizeof(cmd), "printf 'RFOVL2' | dd of='%s' conv=notrunc status=none", map);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(try_open(odir, mpath, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a raidfuse overlay map"));
}

static int ended;

static void mio_end(struct rf_mio *m)
{
	assert_int_equal(m->res, 0);
	ended++;
}

/* The member queue backend: merged writes, then reads, through the overlay. */
static void test_ioq_backend(void **state)
{
	struct rf_ioq_member mm = { .fd_direct = -1, .fd = -1, .align = 4096 };
	struct rf_mio m[4];
	struct rf_ioq q;
	char *w = malloc(16384), *r = malloc(16384);
	int fd, i;

	mm.layer = open_ovl(&fd);
	mm.fd = fd;
	assert_int_equal(rf_ioq_init_overlay(&q, RF_IOQ_ARRAY(&mm, 1), 16), 0);
	for (i = 0; i < 16384; i++)
		w[i] = (char)(i * 7);
	memset(m, 0, sizeof(m));
	for (i = 0; i < 4; i++) {
		m[i].end = mio_end;
		m[i].buf = w + i * 4096;
		m[i].off = 65536 + (uint64_t)i * 4096 - 512;
		m[i].len = 4096;
		m[i].op = RF_MIO_WRITE;
		rf_ioq_queue(&q, &m[i]);
	}
	ended = 0;
	assert_int_equal(rf_ioq_submit(&q), 0);
	while (ended < 4)
		assert_true(rf_ioq_reap(&q, true) >= 0);
	memcpy(model + 65536 - 512, w, 16384);
	for (i = 0; i < 4; i++) {
		m[i].buf = r + i * 4096;
		m[i].op = RF_MIO_READ;
		rf_ioq_queue(&q, &m[i]);
	}
	ended = 0;
	assert_int_equal(rf_ioq_submit(&q), 0);
	while (ended < 4)
		assert_true(rf_ioq_reap(&q, true) >= 0);
	assert_memory_equal(r, w, 16384);
	rf_ioq_destroy(&q);
	check_all(mm.layer);
	rf_ovl_close(mm.layer);
	close(fd);
	free(w);
	free(r);
}

static int setup(void **state)
{
	int fd;

	if (fx_dir_make("overlay"))
		return -1;
	snprintf(ovdir, sizeof(ovdir), "%s/ov", fx_dir);
	snprintf(member, sizeof(member), "%s/m.img", fx_dir);
	if (mkdir(ovdir, 0755))
		return -1;
	make_member(member, BYTES);
	orig = malloc(BYTES);
	model = malloc(BYTES);
	/* Random data after the superblock area. */
	fx_rand_fill(orig, BYTES);
	fd = open(member, O_RDWR);
	if (pwrite(fd, orig + 16 * 512, BYTES - 16 * 512, 16 * 512) != (ssize_t)(BYTES - 16 * 512))
		return -1;
	close(fd);
	read_file(member, orig, BYTES);
	memcpy(model, orig, BYTES);
	return 0;
}

static int teardown(void **state)
{
	free(orig);
	free(model);
	return fx_dir_remove();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_superblock),
		cmocka_unit_test(test_ioq_backend),
		cmocka_unit_test(test_stale_base),
		cmocka_unit_test(test_stale_csum),
		cmocka_unit_test(test_legacy),
		cmocka_unit_test(test_nosb),
		cmocka_unit_test(test_base_parse),
		cmocka_unit_test(test_map_parse),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
