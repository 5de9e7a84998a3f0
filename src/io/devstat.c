/* SPDX-License-Identifier: GPL-2.0-or-later */
/* devstat.c - whether the block device under a member completes IO.
 *
 * A member's deadline (member_timeout) tells a disk that hangs from one
 * that answers.  One flush can take long on a disk that answers: fsync
 * of a member file in buffered mode writes back whatever the page cache
 * holds of it.  The deadline of a flush is therefore extended while the
 * block device under the member keeps completing IO: the kernel's own
 * count, the completed reads, writes, discards and flushes of
 * /sys/dev/block/MAJ:MIN/stat.  A device that completes nothing while a
 * flush waits is not writing it back.
 *
 * It does NOT look at one IO: a device that completes others while one
 * of its IOs is retried counts as progressing (the kernel's own command
 * timeouts end that IO); it does NOT find a device under a network or
 * FUSE file system, or one that names none (btrfs: an anonymous st_dev):
 * there the deadline is the deadline.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "raidfuse/devstat.h"

int rf_devstat_open(int fd)
{
	char path[64];
	struct stat st;
	dev_t dev;

	if (fstat(fd, &st))
		return -1;
	dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
	if (!major(dev))
		return -1;      /* anonymous: tmpfs, FUSE, NFS, btrfs */
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/stat", major(dev), minor(dev));
	return open(path, O_RDONLY | O_CLOEXEC);
}

uint64_t rf_devstat_done(int statfd)
{
	unsigned long long f[17] = { 0 };
	char buf[512];
	ssize_t n;
	int k;

	n = pread(statfd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* reads completed (1), writes (5), discards (12), flushes (16);
	 * older kernels give fewer fields (the rest stay 0). */
	k = sscanf(buf, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		   &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10], &f[11], &f[12],
		   &f[13], &f[14], &f[15], &f[16]);
	if (k < 5)
		return 0;
	return f[0] + f[4] + f[11] + f[15];
}
