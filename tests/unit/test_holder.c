/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_holder.c - who holds a member file, and whether it still serves.
 *
 * The two kernel tables as text: /proc/locks lines pick the flock holders
 * of one dev:ino (waiters, other files, POSIX locks left out; shared and
 * exclusive told apart); mountinfo lines find a mount by its point
 * (escaped, the last one on top) or by the pid its source names, and only
 * "raidfuse:PID" names one.  Then the wait itself, against a child that
 * holds a file: a holder that is no raidfuse is not waited for (the lock
 * says so later), one named raidfuse without a mount is waited for until
 * it lets go, and the deadline ends a wait it does not (-EBUSY, naming the
 * member and the pid); a shared holder is no obstacle to a read-only
 * mount.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "raidfuse/holder.h"

static FILE *text(const char *s)
{
	FILE *f = fmemopen((void *)s, strlen(s), "r");

	assert_non_null(f);
	return f;
}

static void test_locks(void **state)
{
	const char *locks =
		"1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF\n"
		"1: -> FLOCK  ADVISORY  WRITE 999 fd:01:5678 0 EOF\n"
		"2: FLOCK  ADVISORY  READ 42 fd:01:5678 0 EOF\n"
		"3: FLOCK  ADVISORY  WRITE 77 fd:01:5679 0 EOF\n"
		"4: POSIX  ADVISORY  WRITE 55 fd:01:5678 0 EOF\n"
		"5: OFDLCK ADVISORY  READ  -1 fd:01:5678 0 EOF\n"
		"6: FLOCK  ADVISORY  WRITE 66 00:1f:5678 0 EOF\n";
	struct rf_lock_holder h[4];
	FILE *f = text(locks);

	assert_int_equal(rf_locks_holders(f, makedev(0xfd, 1), 5678, h, 4), 2);
	fclose(f);
	assert_int_equal(h[0].pid, 1234);
	assert_true(h[0].write);
	assert_int_equal(h[1].pid, 42);
	assert_false(h[1].write);
	/* a device number in hex, another file system */
	f = text(locks);
	assert_int_equal(rf_locks_holders(f, makedev(0, 0x1f), 5678, h, 4), 1);
	fclose(f);
	assert_int_equal(h[0].pid, 66);
	/* more than max: counted, not written past */
	f = text(locks);
	assert_int_equal(rf_locks_holders(f, makedev(0xfd, 1), 5678, h, 1), 2);
	fclose(f);
	f = text("");
	assert_int_equal(rf_locks_holders(f, makedev(0xfd, 1), 5678, h, 4), 0);
	fclose(f);
}

static void test_mark_parse(void **state)
{
	struct rf_mount_ent k, m = { .point = "/mnt/x y", .dev = makedev(0, 42) };
	char longp[RF_SERVE_POINT_MAX + 40], link[RF_SERVE_POINT_MAX + 80];

	assert_int_equal(rf_serve_mark_parse("/memfd:raidfuse-serves:0:42:/mnt/x y (deleted)", &k), 0);
	assert_true(k.dev == makedev(0, 42));
	assert_string_equal(k.point, "/mnt/x y");
	assert_true(rf_serve_marks(&k, &m));
	/* the same device on another point: a mount that came after */
	strcpy(m.point, "/mnt/z");
	assert_false(rf_serve_marks(&k, &m));
	/* the same point on another device */
	strcpy(m.point, "/mnt/x y");
	m.dev = makedev(0, 43);
	assert_false(rf_serve_marks(&k, &m));
	assert_int_equal(rf_serve_mark_parse("/memfd:raidfuse-serves:0:1234:/m", &k), 0);
	assert_true(k.dev == makedev(0, 1234));
	assert_int_equal(rf_serve_mark_parse("/memfd:raidfuse-serves:0:42x:/m (deleted)", &k), -EINVAL);
	assert_int_equal(rf_serve_mark_parse("/memfd:raidfuse-serves:0:42 (deleted)", &k), -EINVAL);
	assert_int_equal(rf_serve_mark_parse("/memfd:raidfuse-serves:0:42:m (deleted)", &k), -EINVAL);
	assert_int_equal(rf_serve_mark_parse("/memfd:other:0:42:/m (deleted)", &k), -EINVAL);
	assert_int_equal(rf_serve_mark_parse("/tmp/raidfuse-serves:0:42:/m", &k), -EINVAL);
	assert_int_equal(rf_serve_mark_parse("/dev/fuse", &k), -EINVAL);
	/* a point longer than a marker keeps: its first bytes */
	memset(longp, 'p', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	snprintf(link, sizeof(link), "/memfd:raidfuse-serves:0:7:%.*s (deleted)", RF_SERVE_POINT_MAX, longp);
	assert_int_equal(rf_serve_mark_parse(link, &k), 0);
	m.dev = makedev(0, 7);
	strcpy(m.point, longp);
	assert_true(rf_serve_marks(&k, &m));
	m.point[RF_SERVE_POINT_MAX - 1] = 'q';
	assert_false(rf_serve_marks(&k, &m));
}

/* A marker made here is found in this process's fds, and only while it
 * is open. */
static void test_mark_own(void **state)
{
	struct rf_mount_ent k, m = { .point = "/mnt/own", .dev = makedev(0, 4242) };
	int fd = rf_serve_mark(&m);

	assert_true(fd >= 0);
	assert_int_equal(rf_serve_mark_of(getpid(), &k), 0);
	assert_true(k.dev == makedev(0, 4242));
	assert_string_equal(k.point, "/mnt/own");
	close(fd);
	assert_int_equal(rf_serve_mark_of(getpid(), &k), -ENOENT);
}

static void test_mountinfo(void **state)
{
	const char *mi =
		"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
		"40 22 0:41 / /mnt/a\\040b rw,nosuid shared:9 - fuse.raidfuse raidfuse:a.img rw,user_id=0,group_id=0\n"
		"41 22 0:42 / /mnt/c rw,nosuid - fuse.sshfs me@host:/ rw\n"
		"42 22 0:43 / /mnt/c rw,nosuid - fuse mine rw,user_id=0\n"
		"garbage\n";
	struct rf_mount_ent m;
	FILE *f;

	f = text(mi);
	assert_int_equal(rf_mountinfo_find(f, "/mnt/a b", 0, &m), 0);
	fclose(f);
	assert_string_equal(m.type, "fuse.raidfuse");
	assert_string_equal(m.source, "raidfuse:a.img");
	assert_true(m.dev == makedev(0, 41));
	assert_int_equal(m.uid, 0);
	assert_true(rf_mount_is_raidfuse(&m));
	/* two mounts on one point: the last is on top */
	f = text(mi);
	assert_int_equal(rf_mountinfo_find(f, "/mnt/c", 0, &m), 0);
	fclose(f);
	assert_true(m.dev == makedev(0, 43));
	assert_false(rf_mount_is_raidfuse(&m));
	f = text(mi);
	assert_int_equal(rf_mountinfo_find(f, NULL, makedev(0, 42), &m), 0);
	fclose(f);
	assert_string_equal(m.point, "/mnt/c");
	assert_string_equal(m.type, "fuse.sshfs");
	f = text(mi);
	assert_int_equal(rf_mountinfo_find(f, NULL, makedev(0, 44), &m), -ENOENT);
	fclose(f);
	f = text(mi);
	assert_int_equal(rf_mountinfo_find(f, "/mnt/a", 0, &m), -ENOENT);
	fclose(f);
	f = text(mi);
	assert_int_equal(rf_mountinfo_find(f, "/", 0, &m), 0);
	fclose(f);
	assert_true(m.dev == makedev(8, 1));
	assert_int_equal(m.uid, -1);
	assert_false(rf_mount_is_raidfuse(&m));
}

static int64_t ms_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* A child named comm that holds path locked (op: LOCK_EX or LOCK_SH) for
 * hold_ms, then exits; returns once it holds it.  With mark, it holds a
 * marker for that mount device too, as a daemon serving it does. */
static pid_t holder_marked(const char *path, const char *comm, int op, int hold_ms,
			   const struct rf_mount_ent *mark)
{
	int p[2];
	char c;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(path, O_RDONLY);
		struct timespec t = { hold_ms / 1000, (hold_ms % 1000) * 1000000L };

		prctl(PR_SET_NAME, comm, 0, 0, 0);
		if (mark && rf_serve_mark(mark) < 0)
			_exit(1);
		if (fd < 0 || flock(fd, op))
			_exit(1);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		nanosleep(&t, NULL);
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	return pid;
}

static pid_t holder(const char *path, const char *comm, int op, int hold_ms)
{
	return holder_marked(path, comm, op, hold_ms, NULL);
}

static void reap(pid_t pid)
{
	int st;

	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

static void test_wait(void **state)
{
	char path[300], err[512];
	int64_t t0;
	pid_t pid, said = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/m.img", fx_dir);
	fd = open(path, O_CREAT | O_RDWR, 0644);
	assert_true(fd >= 0);
	close(fd);

	/* nobody holds it */
	assert_int_equal(rf_holder_wait(path, "member 0 (m.img)", false, 2000, &said, err, sizeof(err)), 0);
	/* not a file here: nothing to wait for */
	assert_int_equal(rf_holder_wait("nbd://host/x", "member 1", false, 2000, &said, err, sizeof(err)), 0);

	/* another program's lock: not waited for */
	pid = holder(path, "flock", LOCK_EX, 5000);
	t0 = ms_now();
	assert_int_equal(rf_holder_wait(path, "member 0 (m.img)", false, 2000, &said, err, sizeof(err)), 0);
	assert_true(ms_now() - t0 < 500);
	reap(pid);

	/* a raidfuse with no mount (stopping): waited for until it lets go */
	pid = holder(path, "raidfuse", LOCK_EX, 400);
	t0 = ms_now();
	assert_int_equal(rf_holder_wait(path, "member 0 (m.img)", false, 5000, &said, err, sizeof(err)), 0);
	assert_true(ms_now() - t0 >= 250);
	assert_true(ms_now() - t0 < 3000);
	reap(pid);

	/* ... but not past the deadline */
	pid = holder(path, "raidfuse", LOCK_EX, 5000);
	t0 = ms_now();
	assert_int_equal(rf_holder_wait(path, "member 0 (m.img)", false, 300, &said, err, sizeof(err)), -EBUSY);
	assert_true(ms_now() - t0 >= 300);
	assert_true(ms_now() - t0 < 2000);
	assert_non_null(strstr(err, "member 0 (m.img) is still held by raidfuse (pid "));
	reap(pid);

	/* a raidfuse whose marker names a mount that is there serves it:
	 * refused at once, naming the mount; a marker of the same device
	 * on another point (a mount that took the device number of one
	 * gone) is a daemon stopping */
	{
		struct rf_mount_ent root, other;

		/* /proc: a mount in a chroot too, where / may be none */
		assert_int_equal(rf_mount_find("/proc", 0, &root), 0);
		pid = holder_marked(path, "raidfuse", LOCK_EX, 5000, &root);
		t0 = ms_now();
		assert_int_equal(rf_holder_wait(path, "member 0 (m.img)", false, 2000, &said, err, sizeof(err)), -EBUSY);
		assert_true(ms_now() - t0 < 500);
		assert_non_null(strstr(err, "member 0 (m.img) is in use by the raidfuse (pid "));
		assert_non_null(strstr(err, " serving /proc"));
		assert_int_equal(rf_serve_pid_of(&root), pid);
		reap(pid);
		other = root;
		strcpy(other.point, "/gone");
		pid = holder_marked(path, "raidfuse", LOCK_EX, 5000, &other);
		assert_int_equal(rf_holder_wait(path, "member 0 (m.img)", false, 300, &said, err, sizeof(err)), -EBUSY);
		assert_non_null(strstr(err, "is still held by raidfuse (pid "));
		assert_int_equal(rf_serve_pid_of(&root), 0);
		reap(pid);
	}

	/* a shared holder does not stand in a read-only mount's way */
	pid = holder(path, "raidfuse", LOCK_SH, 5000);
	t0 = ms_now();
	assert_int_equal(rf_holder_wait(path, "member 0 (m.img)", true, 2000, &said, err, sizeof(err)), 0);
	assert_true(ms_now() - t0 < 500);
	reap(pid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_locks),
		cmocka_unit_test(test_mark_parse),
		cmocka_unit_test(test_mark_own),
		cmocka_unit_test(test_mountinfo),
		cmocka_unit_test(test_wait),
	};

	return fx_run_tests("holder", tests);
}
