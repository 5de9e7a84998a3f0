/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuse_uring.h - raidfuse's own FUSE transport: FUSE over io_uring.
 *
 * fuse_serve.c mounts with libfuse, reads the first request (INIT) itself and
 * asks rf_uring_offered() whether the kernel offers FUSE over io_uring.
 * If so, rf_uring_start() answers INIT and registers the ring entries,
 * rf_uring_run() serves until unmounted or told to stop, and
 * rf_uring_free() (once every request has been answered) lets the
 * buffers go.  Otherwise INIT goes to libfuse and its loop serves as
 * before.  See fuse_uring.c for the design.
 */
#ifndef RAIDFUSE_FRONT_FUSE_URING_H
#define RAIDFUSE_FRONT_FUSE_URING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "front/fuse_reply.h"

/* -o io_uring=auto|on|off */
enum rf_uring_mode { RF_URING_AUTO, RF_URING_ON, RF_URING_OFF };

/* "auto", "on", "off": the mode, or -EINVAL. */
int rf_uring_mode_parse(const char *s);

struct rf_uring_conf {
	int fd;                         /* the mounted session's /dev/fuse */
	void *fs;                       /* rf_fq.fs of every request */
	const struct rf_fops *fops;
	uint32_t max_write;             /* the largest read or write, bytes */
	uint16_t max_background;
	uint16_t congestion_threshold;
	int threads;                    /* threads (rings) per queue; 0: default */
	int entries;                    /* entries per thread; 0: default */
	/* Whether a write or setattr of node id ino may wait long (a control
	 * file store that drains the array): served on a thread of its own,
	 * not a ring's.  NULL: none. */
	bool (*slow)(void *fs, uint64_t ino);
	/* Polled several times a second by rf_uring_run: true ends it. */
	bool (*stop)(void *arg);
	void *stop_arg;
};

/* Read one request from fd into buf (size >= max_write + 4096), retrying
 * EINTR: its length, or -errno. */
ssize_t rf_uring_read_req(int fd, void *buf, size_t size);

/* Whether the INIT request in buf (len bytes) offers FUSE over io_uring. */
bool rf_uring_offered(const void *buf, size_t len);

struct rf_uring;

/* Answer the INIT request in init (len bytes), start the ring threads
 * and register their entries.  0 (also when the kernel refused the
 * entries: it then sends everything through /dev/fuse, which
 * rf_uring_run serves), or -errno (logged): the connection cannot be
 * served, and the caller unmounts (INIT said io_uring: there is no way
 * back to libfuse).  *up is set either way: rf_uring_free() it. */
int rf_uring_start(struct rf_uring **up, const struct rf_uring_conf *c, const void *init, size_t len);

/* Serve: read /dev/fuse (FORGET, INTERRUPT, whatever comes before the
 * queues are ready) until the connection ends or c->stop says so, then
 * stop the ring threads.  0 (unmounted or stopped), or -errno. */
int rf_uring_run(struct rf_uring *u);

/* Tell the kernel to forget inode ino's cached attributes (a size
 * change; not its pages), as libfuse's fuse_lowlevel_notify_inval_inode() does for
 * a session it answered INIT for.  0, -ENOENT (the kernel does not know
 * the inode), -ENOSYS (INIT not answered here), or -errno. */
int rf_uring_notify_inval_inode(struct rf_uring *u, uint64_t ino);

/* After every request has been answered: free the rings and buffers. */
void rf_uring_free(struct rf_uring *u);

#endif
