/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fdio.c - whole transfers on a file descriptor (see fdio.h).
 *
 * For the paths outside the member IO queues: superblocks, bitmaps, the
 * overlay's files.  A transfer either moves every byte or fails with
 * -errno: short transfers and EINTR are retried here, so callers never see
 * a partial one; a read past the end of the file returns zeros, as md
 * reads a member's unwritten tail.  Every call is reported to the IO log
 * (iolog.h) when that is on, so the crash-state tool sees superblock and
 * bitmap writes in order with the data.  No locks, no buffering: the
 * caller's buffer goes to the kernel as it is.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "raidfuse/fdio.h"
#include "raidfuse/iolog.h"

int rf_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0) {
			memset(p, 0, len);      /* past the end */
			return 0;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int pwrite_all(int fd, const char *p, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int rf_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	struct iovec v = { (void *)buf, len };
	uint64_t id;
	int r;

	/* The io log (iolog.h), one flag load while it is off. */
	if (!rf_iolog_on)
		return pwrite_all(fd, buf, len, off);
	id = rf_iolog_submit(fd, RF_IOLOG_WRITE, &v, 1, off);
	r = pwrite_all(fd, buf, len, off);
	rf_iolog_complete(id, r ? r : (int64_t)len);
	return r;
}

int rf_fsync_full(int fd)
{
	uint64_t id = rf_iolog_on ? rf_iolog_submit(fd, RF_IOLOG_FLUSH, NULL, 0, 0) : 0;
	int r = fsync(fd) ? -errno : 0;

	rf_iolog_complete(id, r);
	return r;
}
