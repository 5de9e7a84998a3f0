/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_devopen.c - the one checked open of members and spares: what it
 * refuses (dangling links, directories, FIFOs, procfs files, the served
 * file system), what it takes (files, a link followed once, a file it
 * creates and unlinks again on failure), the same file twice, and
 * rf_devopen_check() after the file was truncated, unlinked or replaced.
 * A loop device over a member file (as root, with a free loop device;
 * else skipped): it says which file it reads, that file is locked with it,
 * and a server holding either name keeps the other out.
 * The unsafe-directory rule (as root) is exercised by the functional test
 * 19-member-safety, which can switch users.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raidfuse/devopen.h"
#include "raidfuse/memberid.h"
#include "fixture.h"

static void path_of(char *p, size_t len, const char *name)
{
	snprintf(p, len, "%s/%s", fx_dir, name);
}

static void make_file(const char *name, off_t size)
{
	char p[512];

	path_of(p, sizeof(p), name);
	fx_file_make(p, (uint64_t)size);
}

static int setup(void **state)
{
	(void)state;
	rf_devopen_allow_unsafe_dirs(true);        /* the scratch dir may sit in a sticky /tmp */
	return fx_dir_make("devopen");
}

static int teardown(void **state)
{
	(void)state;
	return fx_dir_remove();
}

static void test_refused(void **state)
{
	struct rf_devopen_fd d;
	char p[512], q[512], err[1024];

	(void)state;
	path_of(p, sizeof(p), "dangling.img");
	path_of(q, sizeof(q), "nothing");
	assert_int_equal(symlink(q, p), 0);
	assert_int_equal(rf_devopen_open(p, "member 2 (x)", RF_DEVOPEN_CREATE, &d, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "member 2 (x): a symbolic link to nothing (dangling)"));
	assert_int_equal(access(q, F_OK), -1);  /* not created through the link */

	assert_int_equal(rf_devopen_open(fx_dir, "m", 0, &d, err, sizeof(err)), -EISDIR);
	assert_non_null(strstr(err, "a directory"));

	path_of(p, sizeof(p), "fifo");
	assert_int_equal(mkfifo(p, 0644), 0);
	assert_int_equal(rf_devopen_open(p, "m", 0, &d, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "a FIFO"));

	assert_int_equal(rf_devopen_open("/proc/self/mem", "m", RF_DEVOPEN_RDONLY, &d, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "procfs"));

	assert_int_equal(rf_devopen_open("/dev/null", "m", RF_DEVOPEN_RDONLY, &d, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "character device"));

	path_of(p, sizeof(p), "absent.img");
	assert_int_equal(rf_devopen_open(p, "m", 0, &d, err, sizeof(err)), -ENOENT);
}

static void test_opened(void **state)
{
	struct rf_devopen_fd d, e;
	struct stat st;
	char p[512], l[512], err[1024];

	(void)state;
	make_file("m0.img", 1 << 20);
	path_of(p, sizeof(p), "m0.img");
	assert_int_equal(rf_devopen_open(p, "m", RF_DEVOPEN_DIRECT, &d, err, sizeof(err)), 0);
	assert_int_equal(d.id.size, 1 << 20);
	assert_false(d.id.blk);
	assert_false(d.created);
	assert_int_equal(fstat(d.fd, &st), 0);
	assert_int_equal(st.st_ino, d.id.ino);
	assert_non_null(strstr(d.id.real, "/m0.img"));
	/* a second server is refused by the lock */
	assert_int_equal(rf_devopen_open(p, "member 0 (m0.img)", 0, &e, err, sizeof(err)), -EWOULDBLOCK);
	assert_non_null(strstr(err, "member 0 (m0.img) is in use by another raidfuse or process"));
	/* a link is followed once; the same file twice */
	path_of(l, sizeof(l), "link.img");
	assert_int_equal(symlink(p, l), 0);
	assert_int_equal(rf_devopen_open(l, "m", RF_DEVOPEN_NOLOCK, &e, err, sizeof(err)), 0);
	{
		struct rf_member_id a, b;

		rf_member_id_of_dev(&a, &d.id);
		rf_member_id_of_dev(&b, &e.id);
		assert_int_equal(rf_member_same(&a, &b), RF_MEMBER_SAME_FILE);
		rf_member_same_msg(err, sizeof(err), "member 0 (a)", &a, "member 1 (b)", &b, "given once");
		assert_non_null(strstr(err, "member 0 (a) and member 1 (b) are the same file twice"));
	}
	rf_devopen_close(&e);
	rf_devopen_close(&d);
	assert_int_equal(d.fd, -1);
}

static void test_create(void **state)
{
	struct rf_devopen_fd d;
	char p[512], err[1024];

	(void)state;
	path_of(p, sizeof(p), "new.img");
	assert_int_equal(rf_devopen_open(p, "m", RF_DEVOPEN_CREATE, &d, err, sizeof(err)), 0);
	assert_true(d.created);
	assert_int_equal(d.id.size, 0);
	assert_int_equal(access(p, F_OK), 0);
	rf_devopen_close(&d);
	/* A served file system: refused before the file is opened. */
	make_file("served.img", 4096);
	path_of(p, sizeof(p), "served.img");
	{
		struct stat st;

		assert_int_equal(stat(p, &st), 0);
		rf_devopen_set_served(st.st_dev, "/mnt/x");
		assert_int_equal(rf_devopen_open(p, "spare", 0, &d, err, sizeof(err)), -EDEADLK);
		assert_non_null(strstr(err, "on the file system this raidfuse serves (/mnt/x)"));
		/* a file it would create there is made and unlinked again */
		path_of(p, sizeof(p), "made-then-refused.img");
		assert_int_equal(rf_devopen_open(p, "m", RF_DEVOPEN_CREATE, &d, err, sizeof(err)), -EDEADLK);
		assert_int_equal(access(p, F_OK), -1);
		rf_devopen_set_served(0, NULL);
	}
}

static void test_check(void **state)
{
	struct rf_devopen_fd d;
	char p[512], err[1024];

	(void)state;
	make_file("c.img", 1 << 20);
	path_of(p, sizeof(p), "c.img");
	assert_int_equal(rf_devopen_open(p, "m", 0, &d, err, sizeof(err)), 0);
	assert_int_equal(rf_devopen_check(d.fd, &d.id, true, err, sizeof(err)), 0);
	/* grown is fine, shrunk is not, even when grown back later */
	assert_int_equal(truncate(p, 2 << 20), 0);
	assert_int_equal(rf_devopen_check(d.fd, &d.id, true, err, sizeof(err)), 0);
	assert_int_equal(truncate(p, 4096), 0);
	assert_int_equal(rf_devopen_check(d.fd, &d.id, false, err, sizeof(err)), -ENODEV);
	assert_non_null(strstr(err, "truncated to 4096 bytes (it had 1048576)"));
	assert_int_equal(truncate(p, 1 << 20), 0);
	/* replaced at its path (the old inode still linked elsewhere) */
	{
		char keep[512];

		path_of(keep, sizeof(keep), "c-old.img");
		assert_int_equal(link(p, keep), 0);
		assert_int_equal(unlink(p), 0);
		make_file("c.img", 1 << 20);
		assert_int_equal(rf_devopen_check(d.fd, &d.id, false, err, sizeof(err)), 0);
		assert_int_equal(rf_devopen_check(d.fd, &d.id, true, err, sizeof(err)), -ENODEV);
		assert_non_null(strstr(err, "replaced: its path"));
		/* unlinked */
		assert_int_equal(unlink(keep), 0);
		assert_int_equal(rf_devopen_check(d.fd, &d.id, false, err, sizeof(err)), -ENODEV);
		assert_non_null(strstr(err, "unlinked"));
	}
	rf_devopen_close(&d);
}

/* losetup -f --show path: the loop device's path into dev, or false. */
static bool loop_attach(const char *path, char *dev, size_t len)
{
	char cmd[600];
	FILE *p;
	bool ok;

	if (geteuid() != 0)
		return false;
	snprintf(cmd, sizeof(cmd), "losetup -f --show '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	if (!p)
		return false;
	ok = fgets(dev, (int)len, p) != NULL;
	if (pclose(p) != 0)
		ok = false;
	if (ok)
		dev[strcspn(dev, "\n")] = '\0';
	return ok && dev[0] == '/';
}

static void loop_detach(const char *dev)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "losetup -d '%s'", dev);
	assert_int_equal(system(cmd), 0);
}

static void test_loop_backing(void **state)
{
	struct rf_devopen_fd f, l;
	struct rf_member_id a, b;
	struct stat st;
	char p[512], dev[128], err[1024];

	(void)state;
	make_file("lb.img", 4 << 20);
	path_of(p, sizeof(p), "lb.img");
	if (!loop_attach(p, dev, sizeof(dev)))
		skip();
	assert_int_equal(stat(p, &st), 0);
	/* The device says which file it reads. */
	assert_int_equal(rf_devopen_open(dev, "spare (loop)", RF_DEVOPEN_NOLOCK, &l, err, sizeof(err)), 0);
	assert_true(l.id.blk);
	assert_true(l.id.over_file);
	assert_true(l.id.lo_dev == st.st_dev);
	assert_true(l.id.lo_ino == st.st_ino);
	assert_true(l.id.has_lo_fd);
	{
		char rp[PATH_MAX];

		assert_non_null(realpath(p, rp));
		assert_string_equal(l.id.lo_path, rp);
	}
	rf_member_id_of_dev(&b, &l.id);
	/* The file by its own name is the same member. */
	assert_int_equal(rf_devopen_open(p, "member 0 (lb.img)", 0, &f, err, sizeof(err)), 0);
	rf_member_id_of_dev(&a, &f.id);
	assert_int_equal(rf_member_same(&a, &b), RF_MEMBER_SAME_FILE);
	rf_member_same_msg(err, sizeof(err), "member 0 (lb.img)", &a, dev, &b, "already in the array");
	assert_non_null(strstr(err, "is a loop device over it"));
	assert_non_null(strstr(err, dev));
	/* The file locked by one server: the loop device is refused to
	 * another, naming the file. */
	assert_int_equal(rf_devopen_lock(&l, false, "member 0 (loop)", err, sizeof(err)), -EWOULDBLOCK);
	assert_non_null(strstr(err, "member 0 (loop) is in use by another raidfuse or process"));
	assert_non_null(strstr(err, p));
	/* ... not even shared (read-only) */
	assert_int_equal(rf_devopen_lock(&l, true, "m", err, sizeof(err)), -EWOULDBLOCK);
	rf_devopen_close(&f);
	/* And the other way: the loop device held, the file is refused. */
	assert_int_equal(rf_devopen_lock(&l, false, "member 0 (loop)", err, sizeof(err)), 0);
	assert_int_equal(rf_devopen_open(p, "member 0 (lb.img)", 0, &f, err, sizeof(err)), -EWOULDBLOCK);
	assert_non_null(strstr(err, "member 0 (lb.img) is in use by another raidfuse or process"));
	rf_devopen_close(&l);
	/* Control: neither held, each opens and locks. */
	assert_int_equal(rf_devopen_open(p, "m", 0, &f, err, sizeof(err)), 0);
	rf_devopen_close(&f);
	assert_int_equal(rf_devopen_open(dev, "m", 0, &l, err, sizeof(err)), 0);
	rf_devopen_close(&l);
	loop_detach(dev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_opened),
		cmocka_unit_test(test_create),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_loop_backing),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
