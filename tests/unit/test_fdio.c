/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_fdio.c - whole transfers on a file descriptor (fdio.c).
 *
 * rf_pread_full reads what the file holds and zeros past its end (a read
 * the kernel cuts short at the end is finished with zeros, not retried
 * forever), rf_pwrite_full writes all of it, errors come back as -errno,
 * and the io log sees writes and flushes only while it is on.  The
 * _direct variants on an O_DIRECT descriptor (a file on disk, /var/tmp):
 * unaligned buffers, offsets and lengths read and written right, a
 * partial block's other bytes kept (head and tail in one block or two),
 * the file's odd end read as zeros past it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "raidfuse/fdio.h"
#include "raidfuse/iolog.h"

static int scratch(const char *name, uint64_t bytes)
{
	char p[FX_PATH];

	snprintf(p, sizeof(p), "%s/%s", fx_dir, name);
	return fx_file_open(p, bytes);
}

/* A write of random bytes reads back as written, at an offset that is
 * no multiple of anything. */
static void test_roundtrip(void **state)
{
	const size_t len = 300001;
	char *w = malloc(len), *r = malloc(len);
	int fd = scratch("rt.img", 0);

	fx_rand_fill(w, len);
	assert_int_equal(rf_pwrite_full(fd, w, len, 12345), 0);
	memset(r, 0x5a, len);
	assert_int_equal(rf_pread_full(fd, r, len, 12345), 0);
	assert_memory_equal(r, w, len);
	assert_int_equal(rf_fsync_full(fd), 0);
	close(fd);
	free(w);
	free(r);
}

/* Past the end: the bytes there read as zeros, the ones before the end
 * as they are; a read wholly past the end is all zeros. */
static void test_past_end(void **state)
{
	char w[1000], r[4096], zero[4096] = { 0 };
	int fd = scratch("short.img", 0);

	fx_rand_fill(w, sizeof(w));
	assert_int_equal(rf_pwrite_full(fd, w, sizeof(w), 0), 0);
	memset(r, 0x77, sizeof(r));
	assert_int_equal(rf_pread_full(fd, r, sizeof(r), 0), 0);
	assert_memory_equal(r, w, sizeof(w));
	assert_memory_equal(r + sizeof(w), zero, sizeof(r) - sizeof(w));
	memset(r, 0x77, sizeof(r));
	assert_int_equal(rf_pread_full(fd, r, sizeof(r), 1 << 20), 0);
	assert_memory_equal(r, zero, sizeof(r));
	close(fd);
}

/* Errors are -errno: a closed fd, a read-only fd written, a directory. */
static void test_errors(void **state)
{
	char buf[512] = { 0 }, p[FX_PATH];
	int fd = scratch("ro.img", 4096), ro, d;

	close(fd);
	assert_int_equal(rf_pread_full(fd, buf, sizeof(buf), 0), -EBADF);
	assert_int_equal(rf_pwrite_full(fd, buf, sizeof(buf), 0), -EBADF);
	assert_int_equal(rf_fsync_full(fd), -EBADF);
	snprintf(p, sizeof(p), "%s/ro.img", fx_dir);
	ro = open(p, O_RDONLY);
	assert_true(ro >= 0);
	assert_int_equal(rf_pwrite_full(ro, buf, sizeof(buf), 0), -EBADF);
	close(ro);
	d = open(fx_dir, O_RDONLY | O_DIRECTORY);
	assert_true(d >= 0);
	assert_int_equal(rf_pread_full(d, buf, sizeof(buf), 0), -EISDIR);
	close(d);
}

/* The io log records a write and a flush while it is on, nothing once it
 * is closed: its file grows by the records, then stays. */
static void test_iolog_sees(void **state)
{
	char buf[4096], p[FX_PATH];
	struct stat st;
	off_t on_size;
	int fd = scratch("logged.img", 8192);

	snprintf(p, sizeof(p), "%s/io.log", fx_dir);
	assert_int_equal(rf_iolog_open(p), 0);
	fx_rand_fill(buf, sizeof(buf));
	assert_int_equal(rf_pwrite_full(fd, buf, sizeof(buf), 4096), 0);
	assert_int_equal(rf_fsync_full(fd), 0);
	rf_iolog_close();
	assert_int_equal(stat(p, &st), 0);
	on_size = st.st_size;
	assert_true(on_size >= (off_t)sizeof(buf));     /* the write's data is in the log */
	assert_int_equal(rf_pwrite_full(fd, buf, sizeof(buf), 0), 0);
	assert_int_equal(rf_fsync_full(fd), 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, on_size);
	close(fd);
}


/* The _direct variants: every shape of unaligned transfer against a copy
 * kept in memory. */
static void test_direct(void **state)
{
	const size_t size = 64 * 1024 + 512;
	char path[] = "/var/tmp/rf-fdio-XXXXXX";
	char *ref = malloc(size), *b = malloc(size + 4096);
	static const struct { uint64_t off; size_t len; } w[] = {
		{ 0, 4096 }, { 100, 50 }, { 4000, 200 }, { 8191, 2 }, { 12288, 8192 }, { 5, 20000 }, { size - 10, 10 },
	};
	int fd = mkstemp(path), dfd;
	size_t i, k;

	assert_true(fd >= 0);
	dfd = open(path, O_RDWR | O_DIRECT);
	unlink(path);
	if (dfd < 0) {
		close(fd);
		free(ref);
		free(b);
		skip();
		return;
	}
	for (i = 0; i < size; i++)
		ref[i] = (char)(i * 13);
	assert_int_equal(rf_pwrite_full(fd, ref, size, 0), 0);
	assert_int_equal(fsync(fd), 0);
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		char *src = b + 1;      /* unaligned whatever the rest */

		for (k = 0; k < w[i].len; k++)
			src[k] = (char)(i * 31 + k);
		assert_int_equal(rf_pwrite_direct(dfd, 4096, src, w[i].len, w[i].off), 0);
		memcpy(ref + w[i].off, src, w[i].len);
		memset(b, 0, size + 1);
		assert_int_equal(rf_pread_direct(dfd, 4096, b + 3, size, 0), 0);
		assert_memory_equal(b + 3, ref, size);
		assert_int_equal(lseek(dfd, 0, SEEK_END), (off_t)size);        /* no block past the end kept */
	}
	/* Past the end (not a whole block): the file's bytes, then zeros. */
	memset(b, 0x77, 8192);
	assert_int_equal(rf_pread_direct(dfd, 4096, b, 8192, size - 100), 0);
	assert_memory_equal(b, ref + size - 100, 100);
	for (k = 100; k < 8192; k++)
		assert_int_equal(b[k], 0);
	close(dfd);
	close(fd);
	free(ref);
	free(b);
}

struct appender {
	int fd;
	int n;
	int done;
};

/* Chunks of 512 bytes, each its sequence number, appended one by one. */
static void *append_main(void *arg)
{
	struct appender *ap = arg;
	char chunk[512];
	int i;

	for (i = 0; i < ap->n; i++) {
		memset(chunk, 0, sizeof(chunk));
		memcpy(chunk, &i, sizeof(i));
		if (write(ap->fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
			break;
	}
	__atomic_store_n(&ap->done, 1, __ATOMIC_RELEASE);
	return i < ap->n ? (void *)1 : NULL;
}

/* Regression: an unaligned write inside a file another process extends
 * meanwhile (a member grown while served) cut what that process added:
 * the write looked at the size before and after itself and truncated
 * back anything past the first look.  An appender writes 512-byte chunks
 * numbered 0..n-1 while the file's first block is rewritten unaligned;
 * every chunk must be there, in order. */
static void test_direct_grown_beside(void **state)
{
	const int n = 20000;
	char path[] = "/var/tmp/rf-fdio-XXXXXX", *src = malloc(8192), *all;
	struct appender ap = { .n = n };
	pthread_t t;
	int fd = mkstemp(path), dfd, i, writes = 0;
	void *ret;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	dfd = open(path, O_RDWR | O_DIRECT);
	ap.fd = open(path, O_WRONLY | O_APPEND);
	unlink(path);
	assert_true(ap.fd >= 0);
	if (dfd < 0) {
		close(fd);
		close(ap.fd);
		free(src);
		skip();
		return;
	}
	memset(src, 0x5a, 8192);
	assert_int_equal(pthread_create(&t, NULL, append_main, &ap), 0);
	while (!__atomic_load_n(&ap.done, __ATOMIC_ACQUIRE)) {
		assert_int_equal(rf_pwrite_direct(dfd, 4096, src + 1, 100, 1000), 0);
		writes++;
	}
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_null(ret);
	all = calloc((size_t)n, 512);
	assert_non_null(all);
	if (lseek(fd, 0, SEEK_END) != 4096 + (off_t)n * 512)
		fail_msg("after %d unaligned writes beside the appender: %lld bytes, %lld appended after 4096",
			 writes, (long long)lseek(fd, 0, SEEK_END), (long long)n * 512);
	assert_int_equal(rf_pread_full(fd, all, (size_t)n * 512, 4096), 0);
	for (i = 0; i < n; i++) {
		int seq;

		memcpy(&seq, all + (size_t)i * 512, sizeof(seq));
		if (seq != i)
			fail_msg("after %d unaligned writes beside the appender: chunk %d holds %d", writes, i, seq);
	}
	assert_int_equal(lseek(fd, 0, SEEK_END), 4096 + (off_t)n * 512);
	close(dfd);
	close(ap.fd);
	close(fd);
	free(all);
	free(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_past_end),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_iolog_sees),
		cmocka_unit_test(test_direct),
		cmocka_unit_test(test_direct_grown_beside),
	};

	return fx_run_tests("fdio", tests);
}
