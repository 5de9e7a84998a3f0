/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fdio.h - whole transfers on a file descriptor at an offset. */
#ifndef RAIDFUSE_FDIO_H
#define RAIDFUSE_FDIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Read len bytes at off, retrying short reads and EINTR; what lies past
 * the end of the file reads as zeros.  0 or -errno. */
int rf_pread_full(int fd, void *buf, size_t len, uint64_t off);
/* Write len bytes at off, retrying short writes and EINTR.  0 or -errno. */
int rf_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);
/* The same on a descriptor opened O_DIRECT that needs align (a power of
 * two, 512..32768) for buffers, offsets and lengths: an unaligned
 * transfer goes through an aligned copy, a write's partial blocks read
 * first (see fdio.c for who may write one block at a time).  0 or
 * -errno. */
int rf_pread_direct(int fd, uint32_t align, void *buf, size_t len, uint64_t off);
int rf_pwrite_direct(int fd, uint32_t align, const void *buf, size_t len, uint64_t off);
/* fsync(fd), seen by the io log (iolog.h).  0 or -errno. */
int rf_fsync_full(int fd);
/* The name path of the file open as fd made durable: the directory that
 * holds it flushed (a file just made is otherwise lost by a power cut
 * whatever its own fsyncs did), seen by the io log as RF_IOLOG_NAMED on
 * fd.  0 or -errno (-EINVAL: that directory's file system flushes no
 * directories). */
int rf_fsync_name(int fd, const char *path);

#endif
