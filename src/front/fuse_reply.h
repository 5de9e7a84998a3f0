/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuse_reply.h - the seam between the FUSE ops and the transports.
 *
 * The op implementations in fuse.c (lookup, read, write, ...) do not know
 * how a request reached them: through libfuse's loop (/dev/fuse read and
 * write) or through raidfuse's own FUSE-over-io_uring transport
 * (fuse_uring.c).  Each request in flight is a struct rf_fq: who sent it
 * and how to answer it.  An op answers exactly once, through q->ops, from
 * whichever thread ends it (the FUSE thread, or a worker when the IO ends
 * there); q may be copied by value to carry the request past the call
 * (the transport's handle, h, stays valid until the reply).
 *
 * Every reply returns 0, or -errno when the answer could not be delivered
 * (the requester is gone: an interrupted open must free what it made).
 *
 * What it does NOT do: parse requests (each transport decodes its own
 * and calls struct rf_fops), or negotiate the connection (INIT).
 */
#ifndef RAIDFUSE_FRONT_FUSE_REPLY_H
#define RAIDFUSE_FRONT_FUSE_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

struct rf_fq;

struct rf_fq_ops {
	/* errno (positive), 0 for success without data. */
	int (*err)(struct rf_fq *q, int err);
	/* A lookup's answer: the entry and its attributes, both cached for timeout seconds. */
	int (*entry)(struct rf_fq *q, uint64_t ino, const struct stat *st, double timeout);
	int (*attr)(struct rf_fq *q, const struct stat *st, double timeout);
	/* Data of a read or readdir (len may be 0). */
	int (*buf)(struct rf_fq *q, const void *buf, size_t len);
	int (*write)(struct rf_fq *q, size_t count);
	int (*open)(struct rf_fq *q, uint64_t fh, bool direct_io);
	int (*statfs)(struct rf_fq *q, const struct statvfs *sv);
	int (*readlink)(struct rf_fq *q, const char *target);
	/* Append one directory entry to buf (size bytes left): the size it
	 * takes, written only when it fits (a larger value: buf is full). */
	size_t (*dirent)(struct rf_fq *q, char *buf, size_t size, const char *name, uint64_t ino, mode_t mode,
			 off_t next);
	/* The sender's supplementary groups into groups (max): how many, or -errno. */
	int (*groups)(struct rf_fq *q, gid_t *groups, int max);
	/* Optional.  Where a read of len bytes may put its data so that
	 * buf() finds it in place (4 KiB aligned, valid until the reply), or
	 * NULL. */
	void *(*read_buf)(struct rf_fq *q, size_t len);
};

/* One FUSE request in flight. */
struct rf_fq {
	const struct rf_fq_ops *ops;
	void *fs;               /* the served file system (struct fs: fuse_int.h) */
	void *h;                /* the transport's handle of the request */
	uid_t uid;              /* the sender */
	gid_t gid;
	pid_t pid;
	bool more;              /* the transport has more requests for this thread right after it */
};

/* The ops, as the transports call them (fuse.c).  ino are FUSE inode
 * numbers, fh what open answered; to_set holds FATTR_* bits (the same
 * values as libfuse's FUSE_SET_ATTR_*). */
struct rf_fops {
	void (*lookup)(struct rf_fq *q, uint64_t parent, const char *name);
	void (*getattr)(struct rf_fq *q, uint64_t ino);
	void (*readlink)(struct rf_fq *q, uint64_t ino);
	void (*setattr)(struct rf_fq *q, uint64_t ino, const struct stat *attr, int to_set);
	void (*open)(struct rf_fq *q, uint64_t ino, int flags);
	void (*read)(struct rf_fq *q, uint64_t ino, size_t size, off_t off, uint64_t fh);
	void (*write)(struct rf_fq *q, uint64_t ino, const char *buf, size_t size, off_t off, uint64_t fh);
	void (*flush)(struct rf_fq *q, uint64_t ino, uint64_t fh);
	void (*fsync)(struct rf_fq *q, uint64_t ino, uint64_t fh);
	void (*release)(struct rf_fq *q, uint64_t ino, uint64_t fh);
	void (*readdir)(struct rf_fq *q, uint64_t ino, size_t size, off_t off);
	void (*statfs)(struct rf_fq *q, uint64_t ino);
};

#endif
