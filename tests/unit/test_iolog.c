/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_iolog.c - the member IO log: what rf_pwrite_full(), rf_fsync_full()
 * and the IO queue record, in which order, with which data; and nothing
 * once it is closed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raidfuse/fdio.h"
#include "raidfuse/iolog.h"
#include "raidfuse/ioq.h"
#include "fixture.h"

static char logpath[300], member[300];

struct rec {
	struct rf_iolog_rec r;
	char data[8192];
};

/* The log's records (at most max) into out; their number. */
static int read_log(struct rec *out, int max)
{
	int fd = open(logpath, O_RDONLY), n = 0;

	assert_true(fd >= 0);
	while (n < max && read(fd, &out[n].r, sizeof(out[n].r)) == (ssize_t)sizeof(out[n].r)) {
		assert_int_equal(out[n].r.magic, RF_IOLOG_MAGIC);
		assert_true(out[n].r.len <= sizeof(out[n].data));
		assert_int_equal(read(fd, out[n].data, out[n].r.len), (ssize_t)out[n].r.len);
		/* one counter, in file order */
		assert_int_equal(out[n].r.seq, (uint64_t)n + 1);
		n++;
	}
	close(fd);
	return n;
}

static int setup(void **state)
{
	assert_int_equal(fx_dir_make("iolog"), 0);
	snprintf(logpath, sizeof(logpath), "%s/io.log", fx_dir);
	snprintf(member, sizeof(member), "%s/m0.img", fx_dir);
	return 0;
}

static int teardown(void **state)
{
	rf_iolog_close();
	return fx_dir_remove();
}

/* A superblock-style write and fsync: the file named once, the write
 * with its data, each completion naming its submission, a note between. */
static void test_fdio(void **state)
{
	static struct rec recs[16];
	char data[1000];
	int fd, n;

	memset(data, 0xa5, sizeof(data));
	fd = fx_file_open(member, 0);
	assert_int_equal(rf_iolog_open(logpath), 0);
	assert_int_equal(rf_pwrite_full(fd, data, sizeof(data), 4096), 0);
	rf_iolog_note(7, 1, 2, -3);
	assert_int_equal(rf_fsync_full(fd), 0);
	rf_iolog_close();
	close(fd);

	n = read_log(recs, 16);
	assert_int_equal(n, 6);
	assert_int_equal(recs[0].r.type, RF_IOLOG_FILE);
	assert_int_equal(recs[0].r.file, 0);
	recs[0].data[recs[0].r.len] = '\0';
	assert_string_equal(recs[0].data, member);
	assert_int_equal(recs[1].r.type, RF_IOLOG_SUBMIT);
	assert_int_equal(recs[1].r.op, RF_IOLOG_WRITE);
	assert_int_equal(recs[1].r.off, 4096);
	assert_int_equal(recs[1].r.len, sizeof(data));
	assert_memory_equal(recs[1].data, data, sizeof(data));
	assert_int_equal(recs[2].r.type, RF_IOLOG_COMPLETE);
	assert_int_equal(recs[2].r.id, recs[1].r.seq);
	assert_int_equal(recs[2].r.res, sizeof(data));
	assert_int_equal(recs[3].r.type, RF_IOLOG_NOTE);
	assert_int_equal(recs[3].r.op, 7);
	assert_int_equal(recs[3].r.id, 1);
	assert_int_equal(recs[3].r.off, 2);
	assert_int_equal(recs[3].r.res, -3);
	assert_int_equal(recs[4].r.type, RF_IOLOG_SUBMIT);
	assert_int_equal(recs[4].r.op, RF_IOLOG_FLUSH);
	assert_int_equal(recs[4].r.file, 0);      /* the same file, not named again */
	assert_int_equal(recs[5].r.type, RF_IOLOG_COMPLETE);
	assert_int_equal(recs[5].r.id, recs[4].r.seq);
	assert_int_equal(recs[5].r.res, 0);
}

/* A file's name made durable (rf_fsync_name): its directory flushed,
 * logged as NAMED on the file, after the writes before it; a directory
 * that is not there: the error, logged as the op's result. */
static void test_name(void **state)
{
	static struct rec recs[16];
	char data[512], gone[400];
	int fd, n;

	memset(data, 0x5a, sizeof(data));
	fd = fx_file_open(member, 0);
	assert_int_equal(rf_iolog_open(logpath), 0);
	assert_int_equal(rf_pwrite_full(fd, data, sizeof(data), 0), 0);
	assert_int_equal(rf_fsync_name(fd, member), 0);
	snprintf(gone, sizeof(gone), "%s/no-such-dir/file", fx_dir);
	assert_int_equal(rf_fsync_name(fd, gone), -ENOENT);
	rf_iolog_close();
	close(fd);

	n = read_log(recs, 16);
	assert_int_equal(n, 7);
	assert_int_equal(recs[1].r.op, RF_IOLOG_WRITE);
	assert_int_equal(recs[3].r.type, RF_IOLOG_SUBMIT);
	assert_int_equal(recs[3].r.op, RF_IOLOG_NAMED);
	assert_int_equal(recs[3].r.file, 0);
	assert_int_equal(recs[3].r.len, 0);
	assert_true(recs[3].r.seq > recs[2].r.seq);
	assert_int_equal(recs[4].r.type, RF_IOLOG_COMPLETE);
	assert_int_equal(recs[4].r.id, recs[3].r.seq);
	assert_int_equal(recs[4].r.res, 0);
	assert_int_equal(recs[5].r.op, RF_IOLOG_NAMED);
	assert_int_equal(recs[6].r.id, recs[5].r.seq);
	assert_int_equal(recs[6].r.res, -ENOENT);
}

static void end_mio(struct rf_mio *m)
{
	(*(int *)m->priv)++;
}

/* Through the IO queue (synchronous backend): two adjacent writes merged
 * into one logged write with both pieces' data, a read not logged, an
 * fsync; every submission before its completion. */
static void test_ioq(void **state)
{
	static struct rec recs[16];
	static char a[4096], b[4096], back[4096];
	struct rf_ioq_member mm = { .fd_direct = -1, .align = 4096 };
	struct rf_mio m[4];
	struct rf_ioq q;
	int ended = 0, i, n, guard = 0;

	memset(a, 1, sizeof(a));
	memset(b, 2, sizeof(b));
	mm.fd = fx_file_open(member, 65536);
	assert_int_equal(rf_iolog_open(logpath), 0);
	assert_int_equal(rf_ioq_init_sync(&q, RF_IOQ_ARRAY(&mm, 1), 8), 0);
	memset(m, 0, sizeof(m));
	for (i = 0; i < 4; i++) {
		m[i].member = 0;
		m[i].end = end_mio;
		m[i].priv = &ended;
		m[i].len = 4096;
	}
	m[0].op = RF_MIO_WRITE, m[0].buf = a, m[0].off = 8192;
	m[1].op = RF_MIO_WRITE, m[1].buf = b, m[1].off = 12288;
	m[2].op = RF_MIO_READ, m[2].buf = back, m[2].off = 0;
	for (i = 0; i < 3; i++)
		rf_ioq_queue(&q, &m[i]);
	while (rf_ioq_busy(&q) && guard++ < 1000) {
		assert_int_equal(rf_ioq_submit(&q), 0);
		rf_ioq_reap(&q, false);
	}
	m[3].op = RF_MIO_FSYNC, m[3].len = 0;
	rf_ioq_queue(&q, &m[3]);
	while (rf_ioq_busy(&q) && guard++ < 2000) {
		assert_int_equal(rf_ioq_submit(&q), 0);
		rf_ioq_reap(&q, false);
	}
	assert_int_equal(ended, 4);
	rf_ioq_destroy(&q);
	rf_iolog_close();
	close(mm.fd);

	n = read_log(recs, 16);
	assert_int_equal(n, 5);
	assert_int_equal(recs[0].r.type, RF_IOLOG_FILE);
	assert_int_equal(recs[1].r.type, RF_IOLOG_SUBMIT);
	assert_int_equal(recs[1].r.op, RF_IOLOG_WRITE);
	assert_int_equal(recs[1].r.off, 8192);
	assert_int_equal(recs[1].r.len, 8192);
	assert_memory_equal(recs[1].data, a, 4096);
	assert_memory_equal(recs[1].data + 4096, b, 4096);
	assert_int_equal(recs[2].r.type, RF_IOLOG_COMPLETE);
	assert_int_equal(recs[2].r.id, recs[1].r.seq);
	assert_int_equal(recs[2].r.res, 8192);
	assert_int_equal(recs[3].r.type, RF_IOLOG_SUBMIT);
	assert_int_equal(recs[3].r.op, RF_IOLOG_FLUSH);
	assert_int_equal(recs[4].r.type, RF_IOLOG_COMPLETE);
	assert_int_equal(recs[4].r.id, recs[3].r.seq);
}

/* Closed, the hooks record nothing. */
static void test_off(void **state)
{
	struct stat st;
	char data[512] = { 0 };
	int fd;

	assert_int_equal(rf_iolog_open(logpath), 0);
	rf_iolog_close();
	fd = open(member, O_RDWR | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(rf_pwrite_full(fd, data, sizeof(data), 0), 0);
	assert_int_equal(rf_fsync_full(fd), 0);
	rf_iolog_note(1, 0, 0, 0);
	close(fd);
	assert_int_equal(stat(logpath, &st), 0);
	assert_int_equal(st.st_size, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fdio),
		cmocka_unit_test(test_name),
		cmocka_unit_test(test_ioq),
		cmocka_unit_test(test_off),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
