/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_splice.c - a mapped read's bytes into this thread's pipe
 * (front/splice.h), without FUSE:
 *  - the pipe holds exactly the array's bytes of the read, in order,
 *    over chunks of several members and extents starting inside a page;
 *  - an extent the member file ends inside fails with -EIO, a fault
 *    armed on the member with its error, and the pipe is closed (never
 *    reused with bytes in it);
 *  - a pipe left with bytes after the reply is closed, an empty one kept;
 *  - a read the pipe cannot hold is refused (-ENOSPC) before anything
 *    moves, the pipe kept;
 *  - the largest pipe is a power of two of at least 64 KiB.
 *
 * Seed: RF_TEST_SEED (printed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/engine.h"
#include "fixture.h"
#include "front/splice.h"
#include "raidfuse/fault.h"
#include "raidfuse/readmap.h"
#include "testreq.h"

#define MEMBER_BYTES (4u << 20)
#define PIPE (2u << 20)
#define LEN (512u << 10)

static char *abuf, *pbuf;
static struct rf_read_map m;

static const struct fx_array r0 = { .what = "sp0", .level = 0, .n = 3, .chunk = 65536, .data_offset = 65536 };

static struct rf_array *open_filled(void)
{
	struct rf_array *a;

	fx_make_members(r0.what, r0.n, MEMBER_BYTES, false);
	a = fx_open_spec(&r0, 0, NULL);
	fx_rand_fill(abuf, LEN);
	assert_int_equal(testreq_io(a, RF_REQ_WRITE, 0, LEN, abuf), 0);
	return a;
}

/* Read n bytes from the pipe's read end into pbuf; the count. */
static ssize_t drain(int fd, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, pbuf + got, n - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static void test_bytes_right(void **state)
{
	struct rf_array *a = open_filled();
	uint64_t offs[] = { 0, 100 * 512, 65536 - 512, 3 * 4096 + 512 };
	uint32_t lens[] = { LEN / 2, 192 << 10, 66 << 10, 130 << 10 };
	int k, fd, again;

	for (k = 0; k < 4; k++) {
		assert_int_equal(rf_read_map(a, offs[k], lens[k], &m), 0);
		fd = rf_splice_fill(&m, PIPE);
		assert_true(fd >= 0);
		assert_int_equal(drain(fd, lens[k]), lens[k]);
		assert_memory_equal(pbuf, abuf + offs[k], lens[k]);
		/* Emptied by the reply: kept. */
		rf_splice_after_reply();
		rf_read_unmap(&m);
		assert_true(is_open(fd));
		assert_int_equal(rf_read_map(a, 0, 65536, &m), 0);
		again = rf_splice_fill(&m, PIPE);
		assert_int_equal(again, fd);
		assert_int_equal(drain(fd, 65536), 65536);
		rf_splice_after_reply();
		rf_read_unmap(&m);
	}
	rf_splice_drop();
	assert_false(is_open(fd));
	rf_array_close(a);
}

static void test_left_bytes_dropped(void **state)
{
	struct rf_array *a = open_filled();
	int fd;

	assert_int_equal(rf_read_map(a, 0, 131072, &m), 0);
	fd = rf_splice_fill(&m, PIPE);
	assert_true(fd >= 0);
	assert_int_equal(drain(fd, 4096), 4096);
	rf_splice_after_reply();
	rf_read_unmap(&m);
	assert_false(is_open(fd));
	rf_array_close(a);
}

/* A hand-made map: one extent of the file at fd (as member 0). */
static void one_extent(struct rf_array *a, int fd, uint64_t off, uint32_t len)
{
	m.a = a;
	m.n = 1;
	m.len = len;
	m.ext[0] = (struct rf_rextent){ .fd = fd, .member = 0, .off = off, .len = len };
}

static void test_errors_close(void **state)
{
	struct rf_array *a = open_filled();
	char path[FX_PATH];
	struct rf_fault_spec s;
	char err[256];
	int f, fd;

	fx_member_path(path, sizeof(path), "short", 0);
	f = fx_file_open(path, 65536);
	/* Warm a pipe, then an extent past the file's end. */
	one_extent(a, f, 0, 65536);
	fd = rf_splice_fill(&m, PIPE);
	assert_true(fd >= 0);
	assert_int_equal(drain(fd, 65536), 65536);
	one_extent(a, f, 32768, 65536);
	assert_int_equal(rf_splice_fill(&m, PIPE), -EIO);
	assert_false(is_open(fd));
	/* A fault armed on the member: its error, the pipe closed. */
	one_extent(a, f, 0, 65536);
	fd = rf_splice_fill(&m, PIPE);
	assert_true(fd >= 0);
	assert_int_equal(drain(fd, 65536), 65536);
	assert_int_equal(rf_fault_parse("error=EIO ops=read", &s, err, sizeof(err)), 0);
	rf_fault_set(a->devs[0].io.fault, &s);
	assert_int_equal(rf_splice_fill(&m, PIPE), -EIO);
	assert_false(is_open(fd));
	rf_fault_parse("off", &s, err, sizeof(err));
	rf_fault_set(a->devs[0].io.fault, &s);
	/* A bad descriptor: splice's own error. */
	one_extent(a, -1, 0, 65536);
	assert_int_equal(rf_splice_fill(&m, PIPE), -EBADF);
	close(f);
	rf_array_close(a);
}

static void test_too_small(void **state)
{
	struct rf_array *a = open_filled();
	char path[FX_PATH];
	int fd, f;

	rf_splice_drop();
	/* A new pipe of 64 KiB: 128 KiB does not fit, 64 KiB does. */
	assert_int_equal(rf_read_map(a, 0, 131072, &m), 0);
	assert_int_equal(rf_splice_fill(&m, 65536), -ENOSPC);
	rf_read_unmap(&m);
	assert_int_equal(rf_read_map(a, 0, 65536, &m), 0);
	fd = rf_splice_fill(&m, 65536);
	assert_true(fd >= 0);
	assert_int_equal(drain(fd, 65536), 65536);
	rf_splice_after_reply();
	rf_read_unmap(&m);
	/* One page more than the bytes for an extent that starts inside one:
	 * 64 KiB from 512 takes 17 pages, and is refused before it moves. */
	fx_member_path(path, sizeof(path), "big", 0);
	f = fx_file_open(path, 131072);
	one_extent(a, f, 512, 65536);
	assert_int_equal(rf_splice_fill(&m, 65536), -ENOSPC);
	close(f);
	assert_int_equal(rf_read_map(a, 512, 61440, &m), 0);
	fd = rf_splice_fill(&m, 65536);
	assert_true(fd >= 0);
	assert_int_equal(drain(fd, 61440), 61440);
	assert_memory_equal(pbuf, abuf + 512, 61440);
	rf_splice_after_reply();
	rf_read_unmap(&m);
	rf_splice_drop();
	rf_array_close(a);
}

static void test_pipe_max(void **state)
{
	long max = rf_splice_pipe_max(PIPE);

	assert_true(max >= 65536 && max <= (long)PIPE);
	assert_int_equal(max & (max - 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes_right),
		cmocka_unit_test(test_left_bytes_dropped),
		cmocka_unit_test(test_errors_close),
		cmocka_unit_test(test_too_small),
		cmocka_unit_test(test_pipe_max),
	};
	int ret;

	assert_int_equal(posix_memalign((void **)&abuf, 4096, LEN), 0);
	assert_int_equal(posix_memalign((void **)&pbuf, 4096, LEN), 0);
	ret = fx_run_tests("splice", tests);
	free(abuf);
	free(pbuf);
	return ret;
}
