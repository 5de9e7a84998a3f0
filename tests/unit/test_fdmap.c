/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_fdmap.c - member files in memory mapped for reads (fdmap.h).
 *
 *  - a file on tmpfs is mapped over the length asked; the mapping holds
 *    the file's bytes, and a pwrite made after mapping shows through it
 *    at once (one page cache, nothing to keep coherent);
 *  - what is not mapped, and says so with -ENOTSUP: a file on a file
 *    system with a disk under it (the working directory, when it is not
 *    tmpfs itself), a directory, a length of 0, and any file once mapping
 *    is switched off;
 *  - rf_fdmap_at() gives an address only for a range wholly inside the
 *    mapping (its last byte included, one past it not, no wrap-around);
 *  - close unmaps, and a second close does nothing;
 *  - the guarded copy: pieces from a mapping land one after the other;
 *    from a file shrunk under its mapping it returns -EFAULT (the SIGBUS
 *    caught), again on a second try (the signal is not left blocked), on a
 *    thread that blocks every signal too, and the part still in the file
 *    copies; the negative control: a child
 *    that touches the same page outside a guarded copy dies of SIGBUS;
 *  - the probe touches every page of its pieces: one past the end of the
 *    shrunk file faults even when the piece starts inside it.
 *
 * Seed: RF_TEST_SEED (printed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "raidfuse/fdmap.h"

#define BYTES (1u << 20)

static int shm_file(const char *name, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", fx_dir, name);
	return fx_file_open(path, BYTES);
}

static void test_tmpfs_mapped(void **state)
{
	static char buf[BYTES];
	struct rf_fdmap m;
	char path[FX_PATH];
	int fd = shm_file("mapped", path, sizeof(path));
	struct statfs sf;

	(void)state;
	assert_int_equal(fstatfs(fd, &sf), 0);
	if (sf.f_type != TMPFS_MAGIC) {
		close(fd);
		skip();                 /* the scratch directory is not on /dev/shm */
	}
	rf_fdmap_setup(true);
	fx_rand_fill(buf, BYTES);
	assert_int_equal(pwrite(fd, buf, BYTES, 0), BYTES);
	assert_int_equal(rf_fdmap_open(&m, fd, BYTES, false), 0);
	assert_non_null(m.base);
	assert_int_equal(m.len, BYTES);
	assert_memory_equal(m.base, buf, BYTES);
	/* A write after the mapping is seen through it. */
	fx_rand_fill(buf, 8192);
	assert_int_equal(pwrite(fd, buf, 8192, 65536 + 100), 8192);
	assert_memory_equal(m.base + 65536 + 100, buf, 8192);
	assert_ptr_equal(rf_fdmap_at(&m, 0, BYTES), m.base);
	assert_ptr_equal(rf_fdmap_at(&m, BYTES - 4096, 4096), m.base + BYTES - 4096);
	assert_ptr_equal(rf_fdmap_at(&m, BYTES, 0), m.base + BYTES);
	assert_null(rf_fdmap_at(&m, BYTES - 4096, 4097));
	assert_null(rf_fdmap_at(&m, BYTES + 1, 0));
	assert_null(rf_fdmap_at(&m, 4096, UINT64_MAX));
	rf_fdmap_close(&m);
	assert_null(m.base);
	assert_int_equal(m.len, 0);
	assert_null(rf_fdmap_at(&m, 0, 1));
	rf_fdmap_close(&m);
	close(fd);
}

static void test_not_mapped(void **state)
{
	struct rf_fdmap m;
	char path[FX_PATH], here[FX_PATH];
	int fd = shm_file("plain", path, sizeof(path));
	int dfd, disk;
	struct statfs sf;

	(void)state;
	rf_fdmap_setup(true);
	assert_int_equal(rf_fdmap_open(&m, fd, 0, false), -ENOTSUP);
	assert_null(m.base);
	dfd = open(fx_dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(rf_fdmap_open(&m, dfd, BYTES, false), -ENOTSUP);
	close(dfd);

	/* Off: not even a file on tmpfs. */
	rf_fdmap_setup(false);
	assert_false(rf_fdmap_on());
	assert_int_equal(rf_fdmap_open(&m, fd, BYTES, false), -ENOTSUP);
	assert_null(m.base);
	rf_fdmap_setup(true);
	close(fd);

	/* A file on the working directory's file system, when it has a disk. */
	assert_non_null(getcwd(here, sizeof(here) - 32));
	assert_int_equal(statfs(here, &sf), 0);
	if (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC) {
		print_message("the working directory is in memory: no disk-backed file to try\n");
		return;
	}
	strcat(here, "/.rf-fdmap-XXXXXX");
	disk = mkstemp(here);
	assert_true(disk >= 0);
	unlink(here);
	assert_int_equal(ftruncate(disk, BYTES), 0);
	assert_int_equal(rf_fdmap_open(&m, disk, BYTES, true), -ENOTSUP);
	assert_null(m.base);
	close(disk);
}

/* In a child with SIGBUS at its default action (cmocka catches it in
 * tests), then the handler installed over it: a guarded copy past the end
 * of the shrunk file returns -EFAULT (and the child says so on fd), then
 * the same page touched outside a guarded copy must end the child with
 * SIGBUS.  Exit 2: the guarded copy did not fail; 0: the touch survived. */
static void child_touch(const char *past, char *out, int fd)
{
	struct iovec p = { (void *)past, 4096 };
	volatile const char *c = past;

	signal(SIGBUS, SIG_DFL);
	rf_fdmap_catch_sigbus();
	if (rf_fdmap_copy(out, &p, 1) != -EFAULT)
		_exit(2);
	if (write(fd, "g", 1) != 1)
		_exit(3);
	(void)*c;
	_exit(0);
}

/* A guarded copy past the end on a thread that blocks every signal, as
 * the daemon's threads do: still -EFAULT (a blocked SIGBUS from a fault
 * would end the process). */
static void *blocked_copy(void *arg)
{
	static char out[4096];
	struct iovec p = { arg, sizeof(out) };
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	return (void *)(intptr_t)rf_fdmap_copy(out, &p, 1);
}

static void test_copy_guarded(void **state)
{
	static char buf[BYTES], out[BYTES];
	struct rf_fdmap m;
	char path[FX_PATH];
	int fd = shm_file("guarded", path, sizeof(path));
	struct iovec p[4];
	int status, pfd[2];
	char said;
	pid_t pid;

	(void)state;
	rf_fdmap_setup(true);
	fx_rand_fill(buf, BYTES);
	assert_int_equal(pwrite(fd, buf, BYTES, 0), BYTES);
	if (rf_fdmap_open(&m, fd, BYTES, false)) {
		close(fd);
		skip();                 /* the scratch directory is not on tmpfs */
	}
	/* Shrunk to 64 KiB under the mapping. */
	assert_int_equal(ftruncate(fd, 65536), 0);
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		child_touch(m.base + 700000, out, pfd[1]);
	close(pfd[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(read(pfd[0], &said, 1), 1);    /* the guarded copy failed cleanly first */
	close(pfd[0]);
	if (WIFEXITED(status))
		fail_msg("the child exited %d: %s", WEXITSTATUS(status),
			 WEXITSTATUS(status) == 2 ? "the guarded copy did not fail" : "an unguarded fault was swallowed");
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGBUS);

	/* Here: what is left copies, piece after piece; past it, -EFAULT,
	 * twice (the signal is not left blocked after the first). */
	p[0] = (struct iovec){ (void *)m.base + 8192, 100 };
	p[1] = (struct iovec){ (void *)m.base + 30000, 20000 };
	p[2] = (struct iovec){ (void *)m.base, 4096 };
	p[3] = (struct iovec){ (void *)m.base + 65536 - 100, 4096 };
	assert_int_equal(rf_fdmap_copy(out, p, 3), 0);
	assert_memory_equal(out, buf + 8192, 100);
	assert_memory_equal(out + 100, buf + 30000, 20000);
	assert_memory_equal(out + 20100, buf, 4096);
	assert_int_equal(rf_fdmap_copy(out, p, 4), -EFAULT);
	assert_int_equal(rf_fdmap_copy(out, &p[3], 1), -EFAULT);
	assert_int_equal(rf_fdmap_copy(out, &p[2], 1), 0);
	{
		pthread_t t;
		void *res;

		assert_int_equal(pthread_create(&t, NULL, blocked_copy, (void *)(m.base + 700000)), 0);
		assert_int_equal(pthread_join(t, &res), 0);
		assert_int_equal((intptr_t)res, -EFAULT);
	}
	rf_fdmap_close(&m);
	close(fd);
}

/* rf_fdmap_probe(): pieces wholly in the file touch fine; a piece whose
 * first byte is in the file and whose next page is not faults (every
 * page is touched, not only the first byte); an empty piece past the end
 * touches nothing. */
static void test_probe(void **state)
{
	static char buf[BYTES];
	struct rf_fdmap m;
	char path[FX_PATH];
	int fd = shm_file("probe", path, sizeof(path));
	struct iovec p[3];

	(void)state;
	rf_fdmap_setup(true);
	fx_rand_fill(buf, BYTES);
	assert_int_equal(pwrite(fd, buf, BYTES, 0), BYTES);
	if (rf_fdmap_open(&m, fd, BYTES, false)) {
		close(fd);
		skip();                 /* the scratch directory is not on tmpfs */
	}
	assert_int_equal(ftruncate(fd, 65536), 0);
	rf_fdmap_catch_sigbus();        /* cmocka set its own for this test */
	p[0] = (struct iovec){ (void *)m.base, 65536 };
	p[1] = (struct iovec){ (void *)m.base + 4000, 200 };
	p[2] = (struct iovec){ (void *)m.base + 700000, 0 };
	assert_int_equal(rf_fdmap_probe(p, 3), 0);
	p[1] = (struct iovec){ (void *)m.base + 65536 - 100, 200 };
	assert_int_equal(rf_fdmap_probe(p, 2), -EFAULT);
	p[1] = (struct iovec){ (void *)m.base + 65536 - 100, 100 };
	assert_int_equal(rf_fdmap_probe(p, 2), 0);
	p[1] = (struct iovec){ (void *)m.base + 8192, 3 * 65536 };
	assert_int_equal(rf_fdmap_probe(&p[1], 1), -EFAULT);
	rf_fdmap_close(&m);
	close(fd);
}

/* rf_fdmap_store() puts exactly the bytes asked for at dst, whatever the
 * alignment of either end and the length (the streamed body, its 16-byte
 * rest and the unaligned ends), and nothing beside them. */
static void test_store(void **state)
{
	enum { SPAN = 8192 + 256 };
	unsigned char *src = malloc(SPAN), *dst = aligned_alloc(64, SPAN), *want = malloc(SPAN);
	static const size_t lens[] = { 0, 1, 15, 16, 17, 63, 64, 65, 100, 511, 4096, 4097, 8192 };
	size_t i, l, d, o;

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	assert_non_null(want);
	for (i = 0; i < SPAN; i++)
		src[i] = (unsigned char)(i * 7 + 3);
	for (l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		for (d = 0; d < 20; d++)
			for (o = 0; o < 20; o += 3) {
				memset(dst, 0xa5, SPAN);
				memset(want, 0xa5, SPAN);
				memcpy(want + d, src + o, lens[l]);
				rf_fdmap_store(dst + d, src + o, lens[l]);
				if (memcmp(dst, want, SPAN))
					fail_msg("store of %zu bytes to +%zu from +%zu differs", lens[l], d, o);
			}
	free(src);
	free(dst);
	free(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tmpfs_mapped),
		cmocka_unit_test(test_not_mapped),
		cmocka_unit_test(test_copy_guarded),
		cmocka_unit_test(test_probe),
		cmocka_unit_test(test_store),
	};

	return fx_run_tests("fdmap", tests);
}
