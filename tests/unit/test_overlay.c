/* test_overlay.c - copy-on-write overlays against a model.
 *
 * A member with an md superblock and random contents, then random reads
 * and writes through its overlay (unaligned, across blocks, vectored, the
 * last partial block too) checked byte for byte against an in-memory
 * model; the member itself must never change.  Reopened, the overlay
 * reads back the same; the files refuse a second user and a member of
 * another size; superblock updates through it land in the overlay.
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

#include "raidfuse/ioq.h"
#include "raidfuse/overlay.h"
#include "raidfuse/super.h"
#include "testdir.h"

#define SECTORS 2049ULL                 /* 1 MiB and a half block */
#define BYTES (SECTORS * 512)

static char dir[256], ovdir[300], member[300];
static unsigned seed = 20261130u;
static char *orig, *model;

static void make_member(const char *path, uint64_t bytes)
{
	struct rf_sb_new n;
	char err[512];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)bytes), 0);
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
		uint64_t off = 8192 + (uint64_t)rand_r(&seed) % (BYTES - 8192);
		uint32_t len = 1 + (uint32_t)rand_r(&seed) % (i % 7 ? 9000 : 65536);
		struct iovec v[3];
		int niov = 1 + rand_r(&seed) % 3;
		uint32_t used = 0;

		if (off + len > BYTES)
			len = (uint32_t)(BYTES - off);
		/* Cut [0, len) into niov pieces. */
		for (k = 0; k < niov; k++) {
			uint32_t piece = k == niov - 1 ? len - used : (uint32_t)rand_r(&seed) % (len - used + 1);

			v[k].iov_base = buf + used;
			v[k].iov_len = piece;
			used += piece;
		}
		if (rand_r(&seed) % 3) {
			for (k = 0; k < (int)len; k++)
				buf[k] = (char)rand_r(&seed);
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
	snprintf(other, sizeof(other), "%s/other.img", dir);
	make_member(other, BYTES + 4096);
	fd = open(other, O_RDONLY);
	assert_int_equal(rf_ovl_open(ovdir, fd, other, &o, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "was made for a member of"));
	close(fd);
	/* No superblock, no name for the files. */
	snprintf(plain, sizeof(plain), "%s/plain.img", dir);
	fd = open(plain, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
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
	assert_int_equal(rf_ioq_init_overlay(&q, &mm, 1, 16), 0);
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
	const char *env = getenv("RF_TEST_SEED");
	int fd;

	if (env)
		seed = (unsigned)strtoul(env, NULL, 0);
	printf("# seed %u (RF_TEST_SEED overrides)\n", seed);
	if (testdir_make(dir, sizeof(dir), "overlay"))
		return -1;
	snprintf(ovdir, sizeof(ovdir), "%s/ov", dir);
	snprintf(member, sizeof(member), "%s/m.img", dir);
	if (mkdir(ovdir, 0755))
		return -1;
	make_member(member, BYTES);
	orig = malloc(BYTES);
	model = malloc(BYTES);
	/* Random data after the superblock area. */
	for (uint64_t i = 0; i < BYTES; i++)
		orig[i] = (char)rand_r(&seed);
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
	return testdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_superblock),
		cmocka_unit_test(test_ioq_backend),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
