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
 *
 * The _direct variants are for a descriptor opened O_DIRECT (a member in
 * direct mode, ioq.h): a transfer whose buffer, offset or length is not
 * aligned goes through an aligned buffer allocated for the call (these
 * paths are few and small: superblocks, bitmap pages, a log's header),
 * widened to whole aligned blocks; a write's partial first and last
 * blocks are read first.  The caller keeps writes to one block from
 * running at once (the superblock and bitmap services write under their
 * locks), or one of them would write back the other's old bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

int rf_fsync_name(int fd, const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
	char *dir = malloc(n + 1);
	uint64_t id;
	int dfd, r = 0;

	if (!dir)
		return -ENOMEM;
	memcpy(dir, slash ? path : ".", n);
	dir[n] = '\0';
	id = rf_iolog_on ? rf_iolog_submit(fd, RF_IOLOG_NAMED, NULL, 0, 0) : 0;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd))
		r = -errno;
	if (dfd >= 0)
		close(dfd);
	rf_iolog_complete(id, r);
	free(dir);
	return r;
}

/* One pread for the direct variant: whole blocks, what lies past the end
 * of the file zeros (a short read ends at the end of the file: the next
 * offset is not aligned and must not be asked). */
static int pread_blocks(int fd, char *p, size_t len, uint64_t off, uint32_t align)
{
	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0 || ((size_t)n < len && ((uint64_t)n & (align - 1)))) {
			memset(p + n, 0, len - (size_t)n);
			return 0;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static bool is_aligned(const void *buf, size_t len, uint64_t off, uint32_t align)
{
	return !(((uintptr_t)buf | len | off) & (align - 1));
}

int rf_pread_direct(int fd, uint32_t align, void *buf, size_t len, uint64_t off)
{
	uint64_t lo = off & ~(uint64_t)(align - 1), hi = (off + len + align - 1) & ~(uint64_t)(align - 1);
	char *b;
	int r;

	if (is_aligned(buf, len, off, align))
		return pread_blocks(fd, buf, len, off, align);
	if (posix_memalign((void **)&b, align, hi - lo))
		return -ENOMEM;
	r = pread_blocks(fd, b, hi - lo, lo, align);
	if (!r)
		memcpy(buf, b + (off - lo), len);
	free(b);
	return r;
}

int rf_pwrite_direct(int fd, uint32_t align, const void *buf, size_t len, uint64_t off)
{
	uint64_t lo = off & ~(uint64_t)(align - 1), hi = (off + len + align - 1) & ~(uint64_t)(align - 1);
	uint64_t end = off + len;
	struct stat st;
	off_t size_was;
	char *b;
	int r = 0;

	if (is_aligned(buf, len, off, align))
		return rf_pwrite_full(fd, buf, len, off);
	if (fstat(fd, &st))
		return -errno;
	size_was = st.st_size;
	if (posix_memalign((void **)&b, align, hi - lo))
		return -ENOMEM;
	/* The partial first and last blocks keep their other bytes. */
	if (off != lo)
		r = pread_blocks(fd, b, align, lo, align);
	if (!r && off + len != hi && !(hi - align == lo && off != lo))
		r = pread_blocks(fd, b + (hi - lo - align), align, hi - align, align);
	if (!r) {
		memcpy(b + (off - lo), buf, len);
		r = rf_pwrite_full(fd, b, hi - lo, lo);
	}
	/* A block written whole past the end of the file: the file ends
	 * where it did, or where the bytes asked end.  Only when this write
	 * made it longer (it ends where the block does): another process
	 * may extend the file meanwhile (a member grown while served), and
	 * what it added is not ours to cut. */
	if (!r && hi > (uint64_t)size_was && hi > end && !fstat(fd, &st) && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size == hi && ftruncate(fd, (off_t)(end > (uint64_t)size_was ? end : (uint64_t)size_was)))
		r = -errno;
	free(b);
	return r;
}
