/* SPDX-License-Identifier: GPL-2.0-or-later */
/* daemon.c - detach from the terminal the way a served array needs.
 *
 * A process that forks keeps only the thread that called fork(): every
 * thread started before is gone in the child, and whatever waited on one
 * waits forever.  libfuse's fuse_daemonize() forks after the mount, so a
 * daemon that opened its array first lost the array's threads: an NBD
 * member's poller (the first superblock update then waited forever on a
 * reply nothing read, the device lock held, every FUSE request queued
 * behind it), and an io_uring ring set up with SINGLE_ISSUER refuses the
 * child's submissions.  So mount and assemble fork first, before they
 * open anything (rf_daemon_fork()), and the child does all the rest:
 * it opens the members (its threads are its own), mounts, starts the
 * workers, and only then detaches (rf_daemon_ready()).
 *
 * Until then the child's messages go to the terminal as the command's
 * own, and the parent waits on a socket pair: one byte from the child
 * says it serves (exit 0); end of file without it says it failed, and the
 * parent exits with the child's status.  A mount that cannot be opened
 * thus fails with its message and exit status 1, as in the foreground.
 * The parent's wait is bounded by the child's: every step before the
 * child serves has its own deadline (NBD handshakes and commands the
 * member timeout, the FUSE INIT the kernel's), and the child ends the
 * wait whichever way it goes (its exit closes the socket).
 *
 * The child stays in the command's process group until it serves, so
 * that ^C at the terminal stops a mount still opening; it then makes a
 * session of its own, leaves its working directory for / (mount points
 * are absolute by then: fuse_serve.c) and puts /dev/null on stdin, stdout and
 * stderr, so that a caller reading the command's output ($(...)) sees
 * its end.
 *
 * In the foreground the log goes where --log said from the start; a
 * daemon switches to it (syslog by default) when it detaches (log.h).
 *
 * What it does NOT do: write a pid file (the daemon marks the mount it
 * serves: holder.h, fuse_serve.c), or handle signals (libfuse's handlers do).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "raidfuse/daemon.h"
#include "raidfuse/log.h"

static int ready_fd = -1;               /* the child's end, until it serves */
static bool detached;

/* The parent: wait for the child's byte or its end.  The exit status. */
static int parent_wait(int fd, pid_t child)
{
	char c;
	ssize_t n;
	int st;

	while ((n = read(fd, &c, 1)) < 0 && errno == EINTR)
		;
	close(fd);
	if (n == 1)
		return 0;
	while (waitpid(child, &st, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "raidfuse: the daemon (pid %d) ended before serving: %s\n", (int)child,
				strerror(errno));
			return 1;
		}
	}
	if (WIFEXITED(st))
		return WEXITSTATUS(st) ? WEXITSTATUS(st) : 1;
	fprintf(stderr, "raidfuse: the daemon (pid %d) was killed by signal %d (%s) before serving\n",
		(int)child, WTERMSIG(st), strsignal(WTERMSIG(st)));
	return 1;
}

int rf_daemon_fork(bool foreground)
{
	int sv[2];
	pid_t pid;

	if (foreground) {
		rf_log_foreground();
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		fprintf(stderr, "raidfuse: cannot detach: socketpair: %s\n", strerror(errno));
		return 1;
	}
	/* Nothing buffered may be written twice. */
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "raidfuse: cannot detach: fork: %s\n", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return 1;
	}
	if (pid > 0) {
		close(sv[1]);
		return parent_wait(sv[0], pid);
	}
	close(sv[0]);
	ready_fd = sv[1];
	detached = true;
	return -1;
}

void rf_daemon_ready(void)
{
	char c = 0;
	int fd;

	if (ready_fd < 0)
		return;
	/* From here on the log goes where --log says, syslog by default. */
	rf_log_detached();
	if (setsid() < 0)
		rf_warn("setsid: %s (the daemon stays in the command's session)", strerror(errno));
	if (chdir("/"))
		rf_warn("chdir /: %s", strerror(errno));
	fflush(NULL);
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	/* The parent may be gone (killed): no SIGPIPE for that. */
	if (send(ready_fd, &c, 1, MSG_NOSIGNAL) != 1)
		rf_dbg("the command that started the daemon is gone: %s", strerror(errno));
	close(ready_fd);
	ready_fd = -1;
}

bool rf_daemon_detached(void)
{
	return detached;
}
