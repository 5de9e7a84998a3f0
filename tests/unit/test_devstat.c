/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_devstat.c - the block device under a member, and its completed IOs.
 *
 * What must hold: a file on a file system with a block device (the
 * directory the tests run in, where it is on one) finds that device's stat,
 * whose count of completed IOs grows when the file is written through
 * (O_DSYNC); a file in memory (/dev/shm, tmpfs: no device) finds none
 * (the negative control: its deadline is the deadline); an unreadable
 * descriptor counts 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "raidfuse/devstat.h"

static void test_disk_file(void **state)
{
	char path[] = "rf-devstat-XXXXXX", buf[4096];
	struct stat st;
	uint64_t before, after;
	int fd, sfd, i;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(fstat(fd, &st), 0);
	sfd = rf_devstat_open(fd);
	if (!major(st.st_dev)) {
		/* the tree is on a file system without a device here */
		assert_int_equal(sfd, -1);
		close(fd);
		skip();
	}
	assert_true(sfd > 0);
	before = rf_devstat_done(sfd);
	assert_true(before > 0);
	close(fd);
	fd = open(".", O_TMPFILE | O_RDWR | O_DSYNC, 0600);
	assert_true(fd >= 0);
	memset(buf, 0x5a, sizeof(buf));
	for (i = 0; i < 16; i++)
		assert_int_equal(pwrite(fd, buf, sizeof(buf), (off_t)i * 4096), sizeof(buf));
	after = rf_devstat_done(sfd);
	assert_true(after > before);
	close(fd);
	close(sfd);
}

static void test_memory_file(void **state)
{
	char path[] = "/dev/shm/rf-devstat-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		skip();
	unlink(path);
	assert_int_equal(rf_devstat_open(fd), -1);
	close(fd);
}

static void test_unreadable(void **state)
{
	assert_int_equal(rf_devstat_done(-1), 0);
	assert_int_equal(rf_devstat_open(-1), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_disk_file),
		cmocka_unit_test(test_memory_file),
		cmocka_unit_test(test_unreadable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
