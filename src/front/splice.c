/* SPDX-License-Identifier: GPL-2.0-or-later */
/* splice.c - a mapped read's member bytes into this thread's pipe (see
 * splice.h).
 *
 * The pipe is per thread (__thread, so no lock): the thread that fills it
 * is the one that replies from it, within one request.  Its ends are
 * non-blocking and every splice says SPLICE_F_NONBLOCK, so a pipe that
 * turns out too small ends the fill with an error instead of blocking the
 * FUSE thread.  Its size is checked before the first splice: each extent
 * may start inside a page and take one slot more than its bytes.
 *
 * Invariant: outside rf_splice_fill() and the reply that follows it, a
 * thread's pipe is empty or closed.
 *
 * What it does NOT do: fall back to a copy (the caller submits the read
 * the usual way), or mark members faulty.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "front/splice.h"
#include "raidfuse/readmap.h"

#define SLOT 4096u

struct spipe {
	int fd[2];                      /* -1: none */
	size_t size;                    /* bytes it holds, as F_GETPIPE_SZ says */
	bool keyed;                     /* registered for the thread's end */
};

static __thread struct spipe tl_pipe = { { -1, -1 }, 0, false };
static pthread_key_t pipe_key;
static pthread_once_t pipe_once = PTHREAD_ONCE_INIT;

static void pipe_close(struct spipe *p)
{
	if (p->fd[0] >= 0) {
		close(p->fd[0]);
		close(p->fd[1]);
	}
	p->fd[0] = p->fd[1] = -1;
	p->size = 0;
}

static void pipe_thread_end(void *arg)
{
	pipe_close(arg);
}

static void pipe_key_make(void)
{
	if (pthread_key_create(&pipe_key, pipe_thread_end))
		pipe_key = (pthread_key_t)-1;
}

void rf_splice_drop(void)
{
	pipe_close(&tl_pipe);
}

/* This thread's pipe, made when it has none; 0 or -errno. */
static int pipe_get(struct spipe *p, size_t want)
{
	int got;

	if (p->fd[0] >= 0)
		return 0;
	if (!p->keyed) {
		pthread_once(&pipe_once, pipe_key_make);
		if (pipe_key == (pthread_key_t)-1 || pthread_setspecific(pipe_key, p))
			return -ENOMEM;
		p->keyed = true;
	}
	if (pipe2(p->fd, O_CLOEXEC | O_NONBLOCK)) {
		p->fd[0] = p->fd[1] = -1;
		return -errno;
	}
	/* The size asked, else half of it (pipe-max-size for a user without
	 * CAP_SYS_RESOURCE), else what the pipe has. */
	got = fcntl(p->fd[0], F_SETPIPE_SZ, (int)want);
	if (got < 0)
		got = fcntl(p->fd[0], F_SETPIPE_SZ, (int)(want / 2));
	if (got < 0)
		got = fcntl(p->fd[0], F_GETPIPE_SZ);
	if (got < 0) {
		int err = -errno;

		pipe_close(p);
		return err;
	}
	p->size = (size_t)got;
	return 0;
}

/* Splice len bytes of fd at off into the pipe; 0 or -errno. */
static int splice_extent(struct spipe *p, int fd, uint64_t off, uint32_t len)
{
	off64_t pos = (off64_t)off;

	while (len) {
		ssize_t n = splice(fd, &pos, p->fd[1], NULL, len, SPLICE_F_NONBLOCK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;    /* the member ends before the extent does */
		len -= (uint32_t)n;
	}
	return 0;
}

int rf_splice_fill(const struct rf_read_map *m, size_t pipe_size)
{
	struct spipe *p = &tl_pipe;
	size_t slots = 0;
	int i, ret;

	ret = pipe_get(p, pipe_size);
	if (ret)
		return ret;
	for (i = 0; i < m->n; i++)
		slots += (m->ext[i].off % SLOT + m->ext[i].len + SLOT - 1) / SLOT;
	if (slots * SLOT > p->size)
		return -ENOSPC;         /* nothing in it yet: it stays */
	for (i = 0; i < m->n; i++) {
		ret = rf_read_map_fault(m, i);
		if (!ret)
			ret = splice_extent(p, m->ext[i].fd, m->ext[i].off, m->ext[i].len);
		if (ret) {
			pipe_close(p);
			return ret;
		}
	}
	return p->fd[0];
}

void rf_splice_after_reply(void)
{
	struct spipe *p = &tl_pipe;
	int left = 0;

	if (p->fd[0] >= 0 && (ioctl(p->fd[0], FIONREAD, &left) || left))
		pipe_close(p);
}

long rf_splice_pipe_max(size_t want)
{
	int fd[2];
	long got = -1;

	if (pipe2(fd, O_CLOEXEC))
		return -errno;
	for (; want >= 65536 && got < 0; want /= 2)
		got = fcntl(fd[0], F_SETPIPE_SZ, (int)want);
	if (got < 0)
		got = fcntl(fd[0], F_GETPIPE_SZ);
	if (got < 0)
		got = -errno;
	close(fd[0]);
	close(fd[1]);
	return got;
}
