/* SPDX-License-Identifier: GPL-2.0-or-later */
/* devopen.c - open one member or spare, checked, in one place.
 *
 * raidfuse is often run as root on files it did not make, so a path is
 * not trusted between the moment it is checked and the moment it is
 * opened.  rf_devopen_open():
 *  - resolves the directory once (realpath) and opens the last component
 *    relative to it with O_NOFOLLOW; a symbolic link there is resolved
 *    once and its target opened the same way (a dangling one is refused,
 *    never created through);
 *  - as root, refuses a directory another user may write (owned by
 *    another user, or group/other-writable, sticky or not) and ancestors
 *    another user could rename entries of (owned by another user, or
 *    writable and not sticky), as ssh's StrictModes does, unless
 *    rf_devopen_allow_unsafe_dirs();
 *  - checks that what it opened is what it looked at (st_dev/st_ino), a
 *    regular file or a block device, not on procfs, sysfs or another
 *    kernel file system whose files have no size to honour, not on the
 *    file system this daemon serves (nor a loop device over a file there):
 *    IO to it would wait on the daemon's own IO;
 *  - claims it: O_EXCL for a writable block device, flock (exclusive, or
 *    shared read-only), and opens the O_DIRECT twin through
 *    /proc/self/fd, so both descriptors are the one inode;
 *  - for a loop device, finds the file behind it (LOOP_GET_STATUS64:
 *    its st_dev/st_ino, which say which member it is, memberid.h) and
 *    locks that file too, opened by the path the loop driver gives
 *    (/sys/dev/block/M:m/loop/backing_file) and checked to be that inode:
 *    a server given the file and one given a loop device over it then
 *    exclude each other as two given the same name do.
 * rf_devopen_check() tells later whether the device still is what was
 * opened: not shrunk, not unlinked, not replaced at its path.
 *
 * Invariants: on error nothing stays open, and a file it created is
 * unlinked again.  The two process-wide settings (served st_dev, unsafe
 * directories allowed) are set before any array is opened or from the
 * FUSE mount on, read atomically.
 *
 * It does NOT read or write superblocks, nor decide what a failed check
 * means for an array (memberwatch.c fails the member).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <linux/magic.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "raidfuse/devopen.h"
#include "raidfuse/log.h"

#ifndef LOOP_MAJOR
#define LOOP_MAJOR 7
#endif

static int split(const char *path, char *dir, char *base, size_t len);

static atomic_ulong served_dev;         /* 0: this process serves no file system */
static atomic_bool allow_unsafe;
static char served_mnt[256];            /* written before served_dev is set */

void rf_devopen_set_served(dev_t dev, const char *mountpoint)
{
	snprintf(served_mnt, sizeof(served_mnt), "%s", mountpoint ? mountpoint : "");
	atomic_store(&served_dev, (unsigned long)dev);
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

int rf_devopen_set_served_mount(const char *mountpoint)
{
	char dir[PATH_MAX], base[NAME_MAX + 1], want[PATH_MAX + NAME_MAX + 2], *line = NULL;
	unsigned maj, min;
	dev_t dev = 0;
	size_t cap = 0;
	FILE *f;
	int ret;

	/* Not stat(mountpoint): that would ask this very daemon, which does
	 * not serve yet.  The mount table says which st_dev it has. */
	ret = split(mountpoint, dir, base, sizeof(base));
	if (ret)
		return ret;
	snprintf(want, sizeof(want), "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", base);
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char mnt[PATH_MAX], *sep = strstr(line, " - ");

		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mnt) != 3 || !sep ||
		    strncmp(sep + 3, "fuse", 4))
			continue;
		unescape(mnt);
		if (!strcmp(mnt, want))
			dev = makedev(maj, min);        /* the last one is on top */
	}
	free(line);
	fclose(f);
	if (!dev)
		return -ENOENT;
	rf_devopen_set_served(dev, mountpoint);
	return 0;
}

void rf_devopen_allow_unsafe_dirs(bool allow)
{
	atomic_store(&allow_unsafe, allow);
}

void rf_devopen_id_free(struct rf_devopen_id *id)
{
	free(id->real);
	id->real = NULL;
	free(id->lo_path);
	id->lo_path = NULL;
	if (id->has_lo_fd)
		close(id->lo_fd);
	id->has_lo_fd = false;
}

void rf_devopen_close(struct rf_devopen_fd *d)
{
	if (d->fd >= 0)
		close(d->fd);
	if (d->fd_direct >= 0)
		close(d->fd_direct);
	d->fd = d->fd_direct = -1;
	rf_devopen_id_free(&d->id);
}

/* Kernel file systems whose files are not storage: their sizes are 0 or
 * made up, and what reads and writes do is not keeping data. */
static const char *pseudo_fs(long type)
{
	switch (type) {
	case PROC_SUPER_MAGIC:  return "procfs";
	case SYSFS_MAGIC:       return "sysfs";
	case DEBUGFS_MAGIC:     return "debugfs";
	case TRACEFS_MAGIC:     return "tracefs";
	case SECURITYFS_MAGIC:  return "securityfs";
	case CGROUP_SUPER_MAGIC:
	case CGROUP2_SUPER_MAGIC: return "cgroupfs";
	case BPF_FS_MAGIC:      return "bpffs";
	case EFIVARFS_MAGIC:    return "efivarfs";
	case 0x62656570:        return "configfs";
	}
	return NULL;
}

/* Whether another user than root and us may change which file a name in
 * dir is (as root only).  why: what makes it unsafe. */
static bool dir_unsafe(const char *dir, char *why, size_t len)
{
	char p[PATH_MAX];
	uid_t me = geteuid();
	bool first = true;

	snprintf(p, sizeof(p), "%s", dir);
	for (;;) {
		struct stat st;
		char *s;

		if (stat(p, &st)) {
			snprintf(why, len, "directory %s: %s", p, strerror(errno));
			return true;
		}
		if (st.st_uid != 0 && st.st_uid != me) {
			snprintf(why, len, "directory %s belongs to uid %u", p, (unsigned)st.st_uid);
			return true;
		}
		/* The member's own directory: any other writer may swap the
		 * name (a sticky bit does not keep it from making one). */
		if (first && ((st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && st.st_gid != 0))) {
			snprintf(why, len, "directory %s is writable by %s", p,
				 (st.st_mode & S_IWOTH) ? "every user" : "its group");
			return true;
		}
		if (!first && !(st.st_mode & S_ISVTX) &&
		    ((st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && st.st_gid != 0))) {
			snprintf(why, len, "directory %s is writable by %s and not sticky", p,
				 (st.st_mode & S_IWOTH) ? "every user" : "its group");
			return true;
		}
		first = false;
		if (!strcmp(p, "/"))
			return false;
		s = strrchr(p, '/');
		if (s == p)
			p[1] = '\0';
		else if (s)
			*s = '\0';
		else
			return false;
	}
}

/* Split path into its resolved directory and last component. */
static int split(const char *path, char *dir, char *base, size_t len)
{
	char tmp[PATH_MAX], *b;

	if (!*path || strlen(path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%s", path);
	b = basename(tmp);
	if (!*b || !strcmp(b, ".") || !strcmp(b, "..") || !strcmp(b, "/")) {
		/* "dir/", "..": a directory, named as one */
		if (!realpath(path, dir))
			return -errno;
		snprintf(base, len, ".");
		return 0;
	}
	snprintf(base, len, "%s", b);
	snprintf(tmp, sizeof(tmp), "%s", path);
	if (!realpath(dirname(tmp), dir))
		return -errno;
	return 0;
}

static const char *kind(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file or block device";
}

/* The backing file of loop device fd is on the served file system. */
static bool loop_on_served(int fd, const struct stat *st, dev_t served)
{
	struct loop_info64 li;

	if (major(st->st_rdev) != LOOP_MAJOR || ioctl(fd, LOOP_GET_STATUS64, &li))
		return false;
	return (dev_t)li.lo_device == served;
}

/* A loop device's backing file, locked as the device is (rf_devopen_lock). */
static int lock_backing(const struct rf_devopen_fd *d, bool ro, const char *who, char *err, size_t errlen)
{
	int ret;

	if (!d->id.has_lo_fd || !flock(d->id.lo_fd, (ro ? LOCK_SH : LOCK_EX) | LOCK_NB))
		return 0;
	ret = -errno;
	if (ret == -EWOULDBLOCK)
		snprintf(err, errlen, "%s is in use by another raidfuse or process: it is a loop device over %s, "
			 "which another holds a lock on", who, d->id.lo_path);
	else
		snprintf(err, errlen, "%s: cannot lock its backing file %s: %s", who, d->id.lo_path, strerror(-ret));
	flock(d->fd, LOCK_UN);
	return ret;
}

/* The file behind loop device fd (st: its fstat) into d->id: its inode
 * (over_file), its path, and a descriptor of it to lock (has_lo_fd) when
 * that path still names that inode.  A loop device with no file bound, or
 * not a loop device: nothing.  0, or -errno with why in err. */
static int loop_backing(struct rf_devopen_fd *d, const struct stat *st, const char *who, char *err, size_t errlen)
{
	char sys[96], path[PATH_MAX + 16];
	struct loop_info64 li;
	struct stat bst;
	size_t n;
	FILE *f;
	int fd;

	if (major(st->st_rdev) != LOOP_MAJOR || ioctl(d->fd, LOOP_GET_STATUS64, &li))
		return 0;
	/* lo_device is the kernel's 32-bit encoding (new_encode_dev). */
	d->id.over_file = true;
	d->id.lo_dev = makedev((unsigned)((li.lo_device & 0xfff00) >> 8),
			       (unsigned)((li.lo_device & 0xff) | ((li.lo_device >> 12) & 0xfff00)));
	d->id.lo_ino = (ino_t)li.lo_inode;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/loop/backing_file", major(st->st_rdev),
		 minor(st->st_rdev));
	f = fopen(sys, "re");
	if (!f || !fgets(path, sizeof(path), f)) {
		if (f)
			fclose(f);
		snprintf(path, sizeof(path), "inode %llu on device %u:%u", (unsigned long long)d->id.lo_ino,
			 major(d->id.lo_dev), minor(d->id.lo_dev));
		d->id.lo_path = strdup(path);
		rf_warn("%s: a loop device whose backing file cannot be named (%s): it is not locked against a "
			"server given that file", who, path);
		return d->id.lo_path ? 0 : -ENOMEM;
	}
	fclose(f);
	n = strcspn(path, "\n");
	path[n] = '\0';
	d->id.lo_path = strdup(path);
	if (!d->id.lo_path) {
		snprintf(err, errlen, "%s: %s", who, strerror(ENOMEM));
		return -ENOMEM;
	}
	/* Not a FIFO to block on, and checked to be the file the device
	 * reads: a path swapped since is not locked in its place. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &bst) || bst.st_dev != d->id.lo_dev || bst.st_ino != d->id.lo_ino)) {
		close(fd);
		fd = -1;
		errno = ESTALE;
	}
	if (fd < 0) {
		rf_warn("%s: a loop device over %s, which cannot be opened as that file (%s): it is not locked "
			"against a server given that file", who, path, strerror(errno));
		return 0;
	}
	d->id.lo_fd = fd;
	d->id.has_lo_fd = true;
	return 0;
}

int rf_devopen_lock(const struct rf_devopen_fd *d, bool ro, const char *who, char *err, size_t errlen)
{
	int ret;

	if (!flock(d->fd, (ro ? LOCK_SH : LOCK_EX) | LOCK_NB))
		return lock_backing(d, ro, who, err, errlen);
	ret = -errno;
	if (ret == -EWOULDBLOCK)
		snprintf(err, errlen, "%s is in use by another raidfuse or process (it holds a lock on it)", who);
	else
		snprintf(err, errlen, "%s: cannot lock it: %s", who, strerror(-ret));
	return ret;
}

/* What rf_devopen_open() carries from one step to the next. */
struct opening {
	const char *path;               /* as given, or the target of its link once followed */
	const char *who;
	unsigned flags;                 /* enum rf_devopen_flags */
	bool root, ro, followed;        /* followed: path is a link's target now */
	int mode;                       /* O_RDONLY or O_RDWR */
	dev_t served;                   /* served_dev as the open began (0: none) */
	char dir[PATH_MAX], base[NAME_MAX + 1], target[PATH_MAX];
	int dfd;                        /* dir, O_PATH; -1: not open */
	struct stat lst, st;            /* base as looked at, and what was opened */
	struct rf_devopen_fd *d;
};

/* Path's directory resolved into o->dir (refused or warned about as root
 * when another user may write it) and opened as o->dfd, its last
 * component into o->base.  0, or -errno with err. */
static int open_dir(struct opening *o, char *err, size_t errlen)
{
	char why[PATH_MAX + 64];
	int ret;

	ret = split(o->path, o->dir, o->base, sizeof(o->base));
	if (ret) {
		snprintf(err, errlen, "%s: %s%s", o->who, strerror(-ret), ret == -ENOENT ? " (its directory)" : "");
		return ret;
	}
	if (o->root && dir_unsafe(o->dir, why, sizeof(why))) {
		if (!atomic_load(&allow_unsafe)) {
			snprintf(err, errlen, "%s: refused as root: %s, who could replace the member with a link "
				 "to any file (--allow-unsafe-dirs allows it)", o->who, why);
			return -EPERM;
		}
		rf_warn("%s: %s, who could replace the member with a link to any file (allowed by "
			"--allow-unsafe-dirs)", o->who, why);
	}
	o->dfd = open(o->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (o->dfd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: directory %s: %s", o->who, o->dir, strerror(-ret));
		return ret;
	}
	return 0;
}

/* The missing o->base made (RF_DEVOPEN_CREATE), so nobody else's: its
 * descriptor in o->d->fd, o->lst what it is.  0, or -errno with err. */
static int create_base(struct opening *o, char *err, size_t errlen)
{
	struct rf_devopen_fd *d = o->d;
	int ret;

	d->fd = openat(o->dfd, o->base, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (d->fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot create it in %s: %s", o->who, o->dir, strerror(-ret));
		return ret;
	}
	d->created = true;
	if (fstat(d->fd, &o->lst)) {
		ret = -errno;
		snprintf(err, errlen, "%s: created in %s, then fstat: %s", o->who, o->dir, strerror(-ret));
		return ret;
	}
	return 0;
}

/* What o->base is, in o->lst, without following a link: a regular file or
 * a block device, or missing and created; a symbolic link is followed once
 * (o->path its target, o->dfd closed).  0, 1 when the link's target is to
 * be opened in its place, or -errno with err. */
static int look(struct opening *o, char *err, size_t errlen)
{
	int ret;

	if (fstatat(o->dfd, o->base, &o->lst, AT_SYMLINK_NOFOLLOW)) {
		ret = -errno;
		if (ret != -ENOENT || !(o->flags & RF_DEVOPEN_CREATE)) {
			snprintf(err, errlen, "%s: %s%s", o->who, strerror(-ret),
				 ret == -ENOENT ? " (`raidfuse create CONFIG` makes missing member files)" : "");
			return ret;
		}
		return create_base(o, err, errlen);
	}
	if (S_ISLNK(o->lst.st_mode)) {
		if (o->followed || !realpath(o->path, o->target)) {
			ret = o->followed ? -ELOOP : -errno;
			snprintf(err, errlen, "%s: a symbolic link%s: %s", o->who,
				 ret == -ENOENT ? " to nothing (dangling)" : "", strerror(-ret));
			return ret;
		}
		/* Once: the target, its own directory checked the same way. */
		close(o->dfd);
		o->dfd = -1;
		o->followed = true;
		o->path = o->target;
		return 1;
	}
	if (!S_ISREG(o->lst.st_mode) && !S_ISBLK(o->lst.st_mode)) {
		snprintf(err, errlen, "%s: %s, not a regular file or block device", o->who, kind(o->lst.st_mode));
		return S_ISDIR(o->lst.st_mode) ? -EISDIR : -EINVAL;
	}
	return 0;
}

/* Refused when o->base is on the file system this daemon serves; else
 * opened into o->d->fd (unless create_base() made it), a writable block
 * device claimed.  0, or -errno with err. */
static int open_base(struct opening *o, char *err, size_t errlen)
{
	struct rf_devopen_fd *d = o->d;
	int ret;

	if (o->served && o->lst.st_dev == o->served) {
		snprintf(err, errlen, "%s: refused: it is on the file system this raidfuse serves (%s); its IO "
			 "would wait on the array's own", o->who, served_mnt);
		return -EDEADLK;
	}
	if (d->fd < 0) {
		/* A writer claims a block device: the kernel then refuses it to
		 * mounts, kernel md and other exclusive openers. */
		int m = o->mode | (S_ISBLK(o->lst.st_mode) && !o->ro ? O_EXCL : 0);

		d->fd = openat(o->dfd, o->base, m | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
		if (d->fd < 0) {
			ret = -errno;
			if (ret == -EBUSY && (m & O_EXCL))
				snprintf(err, errlen, "%s is in use by another raidfuse or process (the block device "
					 "is mounted, in an array, or opened exclusively)", o->who);
			else
				snprintf(err, errlen, "%s: %s", o->who, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* What was opened, in o->st: the inode looked at, not on a file system
 * that keeps no data.  0, or -errno with err. */
static int check_opened(struct opening *o, char *err, size_t errlen)
{
	struct statfs sfs;
	const char *fs;
	int ret;

	if (fstat(o->d->fd, &o->st) || fstatfs(o->d->fd, &sfs)) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", o->who, strerror(-ret));
		return ret;
	}
	if (o->st.st_dev != o->lst.st_dev || o->st.st_ino != o->lst.st_ino) {
		snprintf(err, errlen, "%s: changed while it was opened (another file is at its path now)", o->who);
		return -ESTALE;
	}
	fs = pseudo_fs((long)sfs.f_type);
	if (fs) {
		snprintf(err, errlen, "%s: a file on %s, which keeps no data: not a member", o->who, fs);
		return -EINVAL;
	}
	return 0;
}

/* o->d->id from what was opened: its inode, its size, and for a loop
 * device the file behind it (refused when that is on the served file
 * system).  0, or -errno with err. */
static int identify(struct opening *o, char *err, size_t errlen)
{
	struct rf_devopen_fd *d = o->d;
	int ret;

	d->id.dev = o->st.st_dev;
	d->id.ino = o->st.st_ino;
	d->id.blk = S_ISBLK(o->st.st_mode);
	d->id.rdev = d->id.blk ? o->st.st_rdev : 0;
	if (d->id.blk) {
		uint64_t sz;

		if (o->served && loop_on_served(d->fd, &o->st, o->served)) {
			snprintf(err, errlen, "%s: refused: a loop device over a file this raidfuse serves (%s); "
				 "its IO would wait on the array's own", o->who, served_mnt);
			return -EDEADLK;
		}
		ret = loop_backing(d, &o->st, o->who, err, errlen);
		if (ret)
			return ret;
		if (ioctl(d->fd, BLKGETSIZE64, &sz)) {
			ret = -errno;
			snprintf(err, errlen, "%s: cannot find its size: %s", o->who, strerror(-ret));
			return ret;
		}
		d->id.size = sz;
	} else {
		d->id.size = (uint64_t)o->st.st_size;
	}
	return 0;
}

/* The O_DIRECT twin (RF_DEVOPEN_DIRECT) into o->d->fd_direct, the same
 * inode as o->d->fd, with its alignment; where refused, -1 and why in
 * direct_err. */
static void open_direct(struct opening *o)
{
	struct rf_devopen_fd *d = o->d;
	char proc[64];
	struct stat twin;

	/* The same inode again, not the path again. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", d->fd);
	d->fd_direct = open(proc, o->mode | O_DIRECT | O_CLOEXEC);
	if (d->fd_direct < 0 && errno != EINVAL)
		d->fd_direct = openat(o->dfd, o->base, o->mode | O_DIRECT | O_NOFOLLOW | O_CLOEXEC);
	if (d->fd_direct < 0) {
		d->direct_err = errno;
		rf_dbg("%s: O_DIRECT refused (%s)", o->who, strerror(errno));
	} else if (fstat(d->fd_direct, &twin) || twin.st_ino != o->st.st_ino || twin.st_dev != o->st.st_dev) {
		close(d->fd_direct);
		d->fd_direct = -1;
		d->direct_err = ESTALE;
	} else {
		d->dio_align = rf_devopen_dio_align(d->fd_direct, d->id.blk);
	}
}

/* The open in steps: the directory (again for a link's target), the last
 * component looked at or created, opened, checked, identified, locked,
 * named, and its O_DIRECT twin. */
int rf_devopen_open(const char *path, const char *who, unsigned flags, struct rf_devopen_fd *d, char *err,
		    size_t errlen)
{
	struct opening o = {
		.path = path, .who = who, .flags = flags, .d = d, .dfd = -1,
		.root = geteuid() == 0, .ro = flags & RF_DEVOPEN_RDONLY,
		.served = (dev_t)atomic_load(&served_dev),
	};
	int ret;

	o.mode = o.ro ? O_RDONLY : O_RDWR;
	memset(d, 0, sizeof(*d));
	d->fd = d->fd_direct = -1;
	do {
		ret = open_dir(&o, err, errlen);
		if (ret)
			return ret;
		ret = look(&o, err, errlen);
	} while (ret == 1);
	if (!ret)
		ret = open_base(&o, err, errlen);
	if (!ret)
		ret = check_opened(&o, err, errlen);
	if (!ret)
		ret = identify(&o, err, errlen);
	if (!ret && !(flags & RF_DEVOPEN_NOLOCK))
		ret = rf_devopen_lock(d, o.ro, who, err, errlen);
	if (ret)
		goto fail;
	if (asprintf(&d->id.real, "%s%s%s", o.dir, strcmp(o.dir, "/") ? "/" : "", o.base) < 0) {
		d->id.real = NULL;
		ret = -ENOMEM;
		goto fail;
	}
	if (flags & RF_DEVOPEN_DIRECT)
		open_direct(&o);
	close(o.dfd);
	return 0;
fail:
	if (d->created)
		unlinkat(o.dfd, o.base, 0);
	d->created = false;
	if (o.dfd >= 0)
		close(o.dfd);
	rf_devopen_close(d);
	return ret;
}


uint32_t rf_devopen_dio_align(int fd, bool blk)
{
	struct statx sx;
	uint32_t a = 0;
	int ssz;

	if (!statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) && (sx.stx_mask & STATX_DIOALIGN) &&
	    sx.stx_dio_offset_align) {
		a = sx.stx_dio_offset_align > sx.stx_dio_mem_align ? sx.stx_dio_offset_align : sx.stx_dio_mem_align;
	} else if (blk && !ioctl(fd, BLKSSZGET, &ssz) && ssz > 0) {
		a = (uint32_t)ssz;
	} else {
		a = 4096;
	}
	if (a < 512)
		a = 512;
	/* A power of two (the IO queue masks with it). */
	return (a & (a - 1)) || a > 32768 ? 4096 : a;
}

int rf_devopen_size_now(int fd, const struct rf_devopen_id *id, uint64_t *bytes)
{
	struct stat st;

	if (fd < 0)
		return -EBADF;
	if (id->blk)
		return ioctl(fd, BLKGETSIZE64, bytes) ? -errno : 0;
	if (fstat(fd, &st))
		return -errno;
	*bytes = (uint64_t)st.st_size;
	return 0;
}

int rf_devopen_check(int fd, const struct rf_devopen_id *id, bool with_path, char *err, size_t errlen)
{
	struct stat st, pst;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st)) {
		snprintf(err, errlen, "cannot stat it: %s", strerror(errno));
		return -ENODEV;
	}
	if (id->blk) {
		uint64_t sz;

		if (!ioctl(fd, BLKGETSIZE64, &sz) && sz < id->size) {
			snprintf(err, errlen, "the block device shrank to %llu bytes (it had %llu)",
				 (unsigned long long)sz, (unsigned long long)id->size);
			return -ENODEV;
		}
	} else {
		if (st.st_nlink == 0) {
			snprintf(err, errlen, "unlinked: no path names it any more, what is written there is lost "
				 "at close");
			return -ENODEV;
		}
		if ((uint64_t)st.st_size < id->size) {
			snprintf(err, errlen, "truncated to %llu bytes (it had %llu) by another process",
				 (unsigned long long)st.st_size, (unsigned long long)id->size);
			return -ENODEV;
		}
	}
	if (with_path && id->real && !stat(id->real, &pst) &&
	    (id->blk ? pst.st_rdev != id->rdev : (pst.st_dev != st.st_dev || pst.st_ino != st.st_ino))) {
		snprintf(err, errlen, "replaced: its path %s names another file now", id->real);
		return -ENODEV;
	}
	return 0;
}
