/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuse_ops.h - fuse.c's ops without a mount (fuse_fs.c), for the unit tests.
 *
 * rf_fuse_run() builds the served file system (the tree of the image and
 * the control files, the request pool), mounts and serves it.  Here the
 * same file system is built without /dev/fuse: a test makes a struct
 * rf_fq with a reply ops table of its own (fuse_reply.h), .fs the value
 * rf_fuse_fs_new() gave, and calls the ops of rf_fuse_fops as a
 * transport does.  Each op answers through q->ops exactly once, on the
 * calling thread or on a worker's; rf_fuse_fs_drain() returns once every
 * request taken from the pool (read, write, flush, fsync) has ended.
 *
 * The array must be started (rf_array_start()) before a read, write,
 * flush or fsync is submitted, and outlive the file system.
 *
 * What it does NOT do: INIT, splice or the mapped read replies (those
 * answer through libfuse's own replies, or through the transport's
 * read_buf), mounting, signals.
 */
#ifndef RAIDFUSE_FRONT_FUSE_OPS_H
#define RAIDFUSE_FRONT_FUSE_OPS_H

#include "raidfuse/array.h"
#include "front/fuse_reply.h"

/* The ops, as the transports call them. */
extern const struct rf_fops rf_fuse_fops;

/* The served file system of a, not mounted: what rf_fq.fs must point to.
 * NULL when the tree cannot be built (logged) or out of memory. */
void *rf_fuse_fs_new(struct rf_array *a);

/* Wait until every submitted request has been answered and has ended. */
void rf_fuse_fs_drain(void *fs);

/* rf_fuse_fs_drain(), then free it (the array stays). */
void rf_fuse_fs_free(void *fs);

#endif
