/* SPDX-License-Identifier: GPL-2.0-or-later */
/* devopen.h - open one member or spare, checked, in one place.
 *
 * Every path that becomes a device of an array (create's members, a
 * mount's or assemble's members and spares, a spare written to md/new_dev)
 * goes through rf_devopen_open(): what it returns is a regular file or a
 * block device that is what the path named when it was checked
 * (st_dev/st_ino), not on procfs/sysfs, not on the file system this daemon
 * serves, locked against a second server, with its size.
 * rf_devopen_check() tells later whether it still is (shrunk, unlinked,
 * replaced at its path).
 */
#ifndef RAIDFUSE_DEVOPEN_H
#define RAIDFUSE_DEVOPEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum rf_devopen_flags {
	RF_DEVOPEN_RDONLY = 1 << 0,     /* read-only; a shared lock */
	RF_DEVOPEN_CREATE = 1 << 1,     /* create it if missing (O_EXCL; d->created says so) */
	RF_DEVOPEN_DIRECT = 1 << 2,     /* a second descriptor with O_DIRECT (fd_direct, -1 if refused) */
	RF_DEVOPEN_NOLOCK = 1 << 3,     /* no flock yet: rf_devopen_lock() later (after a same-file
					 * check: the lock would refuse our own second name) */
};

/* How a member's data reaches its device (array.member_io,
 * md/dev-NAME/io_mode; ioq.h struct rf_ioq_member): */
enum rf_member_io {
	RF_MEMBER_IO_AUTO,              /* direct, but buffered for a file in memory (tmpfs,
					 * ramfs: mapped, fdmap.h) or one whose file system
					 * refuses O_DIRECT */
	RF_MEMBER_IO_DIRECT,            /* every read and write O_DIRECT */
	RF_MEMBER_IO_BUFFERED,          /* the page cache; durable at the flush points */
};
/* "auto", "direct", "buffered": the mode, or -EINVAL. */
int rf_member_io_parse(const char *s);
const char *rf_member_io_name(int mode);

struct rf_devopen_id {
	dev_t dev;                      /* st_dev of the open file */
	ino_t ino;
	dev_t rdev;                     /* block devices: the device number */
	bool blk;                       /* a block device (else a regular file) */
	uint64_t size;                  /* bytes: st_size, or BLKGETSIZE64 */
	char *real;                     /* the path it was opened by, its directory resolved (malloc'ed) */
	/* A loop device: the file it reads and writes (LOOP_GET_STATUS64),
	 * which is the member's data as much as the device is. */
	bool over_file;
	dev_t lo_dev;                   /* the backing file's st_dev */
	ino_t lo_ino;
	char *lo_path;                  /* its path as the loop driver gives it (malloc'ed), or NULL */
	bool has_lo_fd;                 /* lo_fd is that file, opened to be locked with the device */
	int lo_fd;
};

struct rf_devopen_fd {
	int fd;                         /* O_RDWR (O_RDONLY with RF_DEVOPEN_RDONLY), O_CLOEXEC */
	int fd_direct;                  /* -1: none */
	int direct_err;                 /* RF_DEVOPEN_DIRECT refused: why (errno), else 0 */
	uint32_t dio_align;             /* fd_direct's alignment of offsets, lengths and
					 * buffers (rf_devopen_dio_align()) */
	bool created;                   /* RF_DEVOPEN_CREATE made it (unlink d->id.real to undo) */
	struct rf_devopen_id id;
};

/* Open path for an array's device; who names it in messages ("member 2
 * (d2.img)").  Refuses with a one-line reason in err ("who: why"): a
 * dangling or (as root) any symbolic link as the last component, a path
 * whose directory another user may write (as root, unless
 * rf_devopen_allow_unsafe_dirs()), anything but a regular file or block
 * device, files on procfs/sysfs-like file systems, a file on the file
 * system this daemon serves (rf_devopen_set_served()) or a loop device
 * backed by one, a device another raidfuse or process has locked or
 * claimed.  Returns 0 or -errno; on error nothing stays open and a file it
 * created is unlinked. */
int rf_devopen_open(const char *path, const char *who, unsigned flags, struct rf_devopen_fd *d, char *err,
		    size_t errlen);
/* flock(2) d: exclusive, or shared when ro; a loop device's backing file
 * too, so that a second server reaching the file by either name finds it
 * locked.  0, or -errno with "who is in use by another raidfuse or
 * process" in err. */
int rf_devopen_lock(const struct rf_devopen_fd *d, bool ro, const char *who, char *err, size_t errlen);
/* The alignment O_DIRECT IO on fd needs (offset, length and buffer
 * address alike): what statx says (STATX_DIOALIGN), else a block
 * device's logical block size, else 4096, never below 512. */
uint32_t rf_devopen_dio_align(int fd, bool blk);
/* Close what rf_devopen_open() opened (d may be partly filled: fds -1). */
void rf_devopen_close(struct rf_devopen_fd *d);
/* Free what id holds (its paths, the backing file's descriptor). */
void rf_devopen_id_free(struct rf_devopen_id *id);

/* Whether the open file fd still is the device id describes, with at least
 * id->size bytes: 0, or -ENODEV with why in err ("truncated to 1048576
 * bytes (expected 33554432)", "unlinked", "replaced at its path").
 * with_path: also stat id->real (a slower check, for the timer tick). */
int rf_devopen_check(int fd, const struct rf_devopen_id *id, bool with_path, char *err, size_t errlen);
/* The size of the open file or block device fd now (st_size, or
 * BLKGETSIZE64 as id says): a member grown since it was opened (a file
 * extended, a volume enlarged).  0, or -errno. */
int rf_devopen_size_now(int fd, const struct rf_devopen_id *id, uint64_t *bytes);

/* The file system this process serves through FUSE (its st_dev), set once
 * mounted: a device on it would wait on the daemon's own IO. */
void rf_devopen_set_served(dev_t dev, const char *mountpoint);
/* The same for the FUSE mount on mountpoint, found in the mount table
 * (the mount point itself is not looked at: this daemon would be asked).
 * 0, -ENOENT if no FUSE mount is there, or -errno. */
int rf_devopen_set_served_mount(const char *mountpoint);
/* Allow, as root, members in directories other users may write
 * (--allow-unsafe-dirs): warned about instead of refused. */
void rf_devopen_allow_unsafe_dirs(bool allow);

#endif
