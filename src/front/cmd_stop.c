/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cmd_stop.c - `raidfuse stop MOUNTPOINT`: unmount, then wait for the
 * daemon, as mdadm --stop does.
 *
 * The mount point is resolved without looking at it (that would ask its
 * daemon, which may not answer), unmounted (umount2 as root, else
 * fusermount3 -u, a busy mount retried for a while), and then the daemon
 * that held the mount's marker is waited for until it has written its
 * last superblocks and exited, so that the members may be used at once.
 *
 * What it does NOT do: ask or signal the daemon: the unmount is all it
 * is told.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "raidfuse/holder.h"
#include "raidfuse/util.h"

#include "front/cli.h"

#define STOP_TIMEOUT_S 60
#define STOP_BUSY_MS 2000       /* how long stop retries an unmount that says busy */
/* How long fusermount3 -u may take (it does not wait for the daemon). */
#define UMOUNT_TIMEOUT_MS 10000

/* mnt as the mount table names it, without looking at mnt itself (that
 * would ask its daemon, which may not answer): the directory resolved,
 * the last component as given.  0, or -errno. */
static int stop_abs_path(const char *mnt, char *out, size_t len)
{
	char tmp[PATH_MAX], dir[PATH_MAX], *b;
	size_t n = strlen(mnt);

	if (!n || n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, mnt, n + 1);
	while (n > 1 && tmp[n - 1] == '/')
		tmp[--n] = '\0';
	b = strrchr(tmp, '/');
	if (!strcmp(tmp, "/") || !strcmp(b ? b + 1 : tmp, ".") || !strcmp(b ? b + 1 : tmp, ".."))
		return realpath(tmp, out) ? 0 : -errno;
	if (!b) {
		if (!getcwd(dir, sizeof(dir)))
			return -errno;
	} else {
		*b = '\0';
		if (!realpath(b == tmp ? "/" : tmp, dir))
			return -errno;
	}
	if ((size_t)snprintf(out, len, "%s/%s", strcmp(dir, "/") ? dir : "", b ? b + 1 : tmp) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* Unmount abs: umount2 as root, else fusermount3 -u (which may take no
 * longer than UMOUNT_TIMEOUT_MS).  0, or 1 with the message. */
static int stop_unmount(const char *abs)
{
	int st, pidfd;
	pid_t pid;

	if (geteuid() == 0) {
		int64_t until = rf_mono_ms() + STOP_BUSY_MS;
		int r;

		/* A program that just closed the image may hold the mount a
		 * moment longer (mdadm --stop retries EBUSY alike). */
		while ((r = umount2(abs, UMOUNT_NOFOLLOW)) && errno == EBUSY && rf_mono_ms() < until)
			usleep(50 * 1000);
		if (!r)
			return 0;
		fprintf(stderr, "raidfuse: stop: cannot unmount %s: %s%s\n", abs, strerror(errno),
			errno == EBUSY ? " (a program holds the image or a file under it open: close it, "
					 "losetup -d its loop device)" : "");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "raidfuse: stop: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "--", abs, (char *)NULL);
		fprintf(stderr, "raidfuse: stop: cannot run fusermount3: %s\n", strerror(errno));
		_exit(127);
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (!rf_cli_wait_exit(pidfd, pid, rf_mono_ms() + UMOUNT_TIMEOUT_MS)) {
		fprintf(stderr, "raidfuse: stop: fusermount3 -u %s did not end within %d s: killed\n", abs,
			UMOUNT_TIMEOUT_MS / 1000);
		kill(pid, SIGKILL);
	}
	if (pidfd >= 0)
		close(pidfd);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && !WEXITSTATUS(st))
		return 0;
	fprintf(stderr, "raidfuse: stop: fusermount3 -u %s failed (what it said is above)\n", abs);
	return 1;
}

int rf_cmd_stop(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "timeout", required_argument, NULL, 't' },
		OPT_HELP,
		OPT_END
	};
	const char *mnt = NULL;
	char abs[PATH_MAX];
	struct rf_mount_ent m;
	double secs = STOP_TIMEOUT_S;
	int ch, rc = -1, r, pidfd;
	pid_t pid;
	int64_t t0;

	while ((ch = rf_cli_opt_next(argc, argv, "-:t:h", lo, &rc)) != -1) {
		if (ch == 't') {
			if (!rf_cli_parse_secs(optarg, &secs))
				return rf_cli_usage_error("stop: --timeout takes SECONDS (0.1 to 86400), not '%s'", optarg);
		} else if (ch == 1) {
			if (mnt)
				return rf_cli_usage_error("stop: expected one MOUNTPOINT, got also '%s'", optarg);
			mnt = optarg;
		}
	}
	if (rc >= 0)
		return rc;
	if (!mnt)
		return rf_cli_usage_error("stop: expected MOUNTPOINT");
	r = stop_abs_path(mnt, abs, sizeof(abs));
	if (r) {
		fprintf(stderr, "raidfuse: stop: %s: %s\n", mnt, strerror(-r));
		return 1;
	}
	r = rf_mount_find(abs, 0, &m);
	if (r) {
		fprintf(stderr, "raidfuse: stop: %s: %s\n", abs,
			r == -ENOENT ? "nothing is mounted there" : strerror(-r));
		return 1;
	}
	/* The daemon: the process holding the mount's marker (holder.h). */
	pid = rf_serve_pid_of(&m);
	if (!pid && !rf_mount_is_raidfuse(&m)) {
		fprintf(stderr, "raidfuse: stop: %s is not a raidfuse mount (%s, type %s)\n", abs, m.source, m.type);
		return 1;
	}
	/* Before the unmount: the pid cannot be another process's by the
	 * time it is waited for. */
	pidfd = pid ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	if (!pid || (pidfd < 0 && errno == ESRCH)) {
		fprintf(stderr, "raidfuse: stop: no daemon serves %s (%s, type %s) any more (it crashed or was "
			"killed: its array was not shut down cleanly); unmounting what it left\n", abs, m.source,
			m.type);
		stop_unmount(abs);
		return 1;
	}
	if (stop_unmount(abs)) {
		if (pidfd >= 0)
			close(pidfd);
		return 1;
	}
	t0 = rf_mono_ms();
	if (!rf_cli_wait_exit(pidfd, pid, t0 + 1000)) {
		fprintf(stderr, "raidfuse: stop: %s unmounted; waiting for its daemon (pid %d) to write its last "
			"superblocks and exit (up to %g s)\n", abs, (int)pid, secs);
		if (!rf_cli_wait_exit(pidfd, pid, t0 + (int64_t)(secs * 1000))) {
			fprintf(stderr, "raidfuse: stop: the daemon (pid %d) that served %s has not exited %g s after "
				"the unmount: it still holds its members (its log, in syslog, says what it waits "
				"for)\n", (int)pid, abs, secs);
			if (pidfd >= 0)
				close(pidfd);
			return 1;
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	return 0;
}
