/* SPDX-License-Identifier: GPL-2.0-or-later */
/* devstat.h - whether the block device under a member completes IO (devstat.c). */
#ifndef RAIDFUSE_DEVSTAT_H
#define RAIDFUSE_DEVSTAT_H

#include <stdint.h>

/* The block device under fd (fd itself when it is one, else the one its
 * file system is on): an open descriptor of its /sys/dev/block/MAJ:MIN/stat,
 * or -1 when there is none to read (a network or FUSE file system, tmpfs,
 * one that names no device: btrfs). */
int rf_devstat_open(int fd);
/* The IOs it completed so far (reads, writes, discards, flushes), read
 * again from statfd; 0 when it cannot be read. */
uint64_t rf_devstat_done(int statfd);

#endif
