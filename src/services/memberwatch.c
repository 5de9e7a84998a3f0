/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memberwatch.c - the member watch: a device changed under the array by
 * another process fails as if its disk had gone.
 *
 * md's members are block devices that only the kernel writes; here they
 * are mostly files that anyone with the permission can truncate, replace
 * or unlink while the array runs.  Each look at the devices asks
 * rf_devopen_check() (io/devopen.c) whether each open device is still what
 * was opened (not shrunk, not unlinked, not replaced at its path) and
 * whether a file lost blocks (rf_memberwatch_blocks_freed()).  A slot's
 * member that is no longer what was opened fails (rf_member_fail():
 * marked faulty before anything else is read from it, or kept by the
 * level as the last copy of some data, which is said once); a spare is
 * marked faulty through md/dev-NAME/state, with everything drained.
 *
 * Two things look: the watch thread (rf-watch), woken by inotify on
 * every device's inode (not its path: the inode the array holds) for what
 * another process does to it, and the management thread's tick once a
 * second (member.c), for what inotify does not report (truncate(2) by
 * path, a member replaced by rename).  The descriptors, the blocks last
 * seen and the thread's handle are the management thread's state (struct
 * rf_mgmt, member_int.h), under reconf_lock where the comments say so.
 * This file sees the array only through core/core.h.
 *
 * It does NOT start or stop the watch thread nor open its descriptors
 * (member.c's rf_mgmt_start() and rf_mgmt_stop()), look at NBD exports
 * (no file: a silent server fails by its connection's timeout), see the
 * array's own writes (they report none of the events asked for, and only
 * add blocks), nor take a failed device out of its slot (the management
 * thread and md/dev-NAME/state).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "core/core.h"
#include "raidfuse/log.h"
#include "raidfuse/util.h"
#include "services/member_int.h"

/* What inotify reports of a member changed by another process: a writer
 * closed it (truncate -s, cp over it), its links changed (rm, mv over
 * it), it moved.  Our own writes report none of these. */
#define RF_WATCH_MASK (IN_CLOSE_WRITE | IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF)

/* Watch every open regular-file device's inode (not its path: the inode
 * we hold).  reconf_lock held. */
void rf_memberwatch_all(struct rf_array *a)
{
	char proc[64];
	int i;

	if (!rf_array_mgmt(a) || rf_array_mgmt(a)->ino_fd < 0)
		return;
	for (i = 0; i < rf_devs_count(a); i++) {
		const struct rf_dev *m = rf_dev_get(a, i);

		if (m->io.fd < 0 || m->id.blk)
			continue;
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", m->io.fd);
		inotify_add_watch(rf_array_mgmt(a)->ino_fd, proc, RF_WATCH_MASK);       /* the same wd if watched */
	}
}

/* Blocks freed in a member by another process.  A member truncated and
 * grown back to its size between two looks (truncate -s 1M d1.img;
 * truncate -s 32M d1.img) has its size and inode, and zeros where the
 * array's data was: md, on a block device that shrank, would have met IO
 * errors; nothing here would, and reads would serve the zeros.  What such
 * a file keeps as evidence is its allocated blocks: the truncate freed
 * them, and nothing the daemon does to a member frees any (it writes
 * inside the member's size, never truncates nor punches holes: there is
 * no fallocate or discard passthrough).  So each look (inotify's wake-up
 * on another process's close of the file, and the once-a-second tick)
 * compares st_blocks with the last look's, and a fall of RF_FREED_MIN or
 * more fails the member.  The daemon's own writes only add blocks.
 *
 * Why not the others: inotify's IN_MODIFY and fanotify's FAN_MODIFY fire
 * on every write of the daemon's own too (an event queued per write on
 * the IO path, a thread woken for each, and still no way to tell a
 * truncate from a write); a lease (F_SETLEASE) cannot be taken on a file
 * the daemon holds open for writing twice (fd and its O_DIRECT twin).
 * The look is one fstat per member, off the IO path.
 *
 * Only on file systems where st_blocks falls only when blocks are freed:
 * ext2/3/4, XFS, tmpfs.  A compressing one (btrfs, ZFS) lowers it when
 * the daemon overwrites data with data that compresses better, so there
 * the check is off.  Below RF_FREED_MIN a fall is let pass (an extent
 * tree's index block given back when extents merge; tmpfs's own count,
 * seen to fall by 264 KiB with nothing truncating the file while three
 * arrays on /dev/shm failed and re-added members beside each other).  What it misses: a
 * truncate of a range that held no blocks (it held zeros and still does),
 * and blocks freed and then taken again by the daemon's writes before
 * the next look (a truncate by path, seen only by the tick). */
#define RF_FREED_MIN (1024 * 2) /* 512-byte units: 1 MiB */

static bool blocks_fs(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf))
		return false;
	return sf.f_type == EXT4_SUPER_MAGIC || sf.f_type == XFS_SUPER_MAGIC || sf.f_type == TMPFS_MAGIC;
}

/* Whether device i's file lost RF_FREED_MIN blocks or more since the last
 * look (why says so); the first look at a file only records it.
 * reconf_lock held. */
bool rf_memberwatch_blocks_freed(struct rf_mgmt *mg, int i, const struct rf_dev *m, char *why, size_t len)
{
	struct blocks_seen *b = &mg->seen[i];
	struct stat st;

	if (m->id.blk || fstat(m->io.fd, &st) || !S_ISREG(st.st_mode))
		return false;
	if (b->dev != st.st_dev || b->ino != st.st_ino) {
		b->dev = st.st_dev;
		b->ino = st.st_ino;
		b->on = blocks_fs(m->io.fd);
		b->blocks = st.st_blocks;
		return false;
	}
	if (b->on && st.st_blocks + RF_FREED_MIN <= b->blocks) {
		snprintf(why, len, "%lld KiB of its blocks were freed since it was last looked at (%lld KiB "
			 "allocated, %lld before): another process truncated it (and grew it back?) or punched "
			 "holes in it", (long long)(b->blocks - st.st_blocks) / 2, (long long)st.st_blocks / 2,
			 (long long)b->blocks / 2);
		b->blocks = st.st_blocks;
		return true;
	}
	b->blocks = st.st_blocks;
	return false;
}

/* Every device that is no longer what was opened (shrunk, unlinked,
 * replaced at its path, blocks freed) fails as if the disk had gone: a slot's member
 * is marked faulty before anything else is read from it, a spare is
 * marked faulty.  with_path: also look at the paths (the tick). */
void rf_memberwatch_check_devices(struct rf_array *a, bool with_path)
{
	char why[512], name[RF_MAX_DEVS][256], nb[RF_DEV_NAME_MAX];
	int i, n = 0;

	rf_array_reconf_lock(a);
	rf_memberwatch_all(a);
	for (i = 0; i < rf_devs_count(a); i++) {
		struct rf_dev *m = rf_dev_get(a, i);
		bool slot = i < rf_array_nslots(a);

		if (m->io.fd < 0 || (slot && (rf_array_faulty(a) & (1ull << i))) || (!slot && (m->flags & RF_DEV_FAULTY))) {
			rf_array_mgmt(a)->seen[i].ino = 0;      /* looked at afresh if it comes back */
			rf_array_mgmt(a)->seen[i].kept = false;
			continue;
		}
		if (rf_array_mgmt(a)->seen[i].kept ||
		    (!rf_devopen_check(m->io.fd, &m->id, with_path, why, sizeof(why)) &&
		     !rf_memberwatch_blocks_freed(rf_array_mgmt(a), i, m, why, sizeof(why))))
			continue;
		if (slot) {
			rf_err("member %d (%s): %s: it no longer holds the array's data", i, m->path, why);
			if (!rf_member_fail(a, i, -ENODEV, "member check", m->id.size))
				rf_array_mgmt(a)->seen[i].kept = true;
		} else {
			rf_err("spare %s: %s: marking it faulty", m->path, why);
			snprintf(name[n++], sizeof(name[0]), "%s", rf_member_dev_name(m->path, nb));
		}
	}
	rf_array_reconf_unlock(a);
	/* A spare's flags change with everything drained. */
	for (i = 0; i < n; i++)
		rf_memberctl_set_state(a, name[i], "faulty");
}

void *rf_memberwatch_main(void *arg)
{
	struct rf_array *a = arg;
	struct rf_mgmt *m = rf_array_mgmt(a);
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	rf_thread_name("rf-watch");
	for (;;) {
		struct pollfd p[2] = { { .fd = m->ino_fd, .events = POLLIN }, { .fd = m->stop_fd, .events = POLLIN } };

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents)
			return NULL;
		if (p[0].revents && read(m->ino_fd, buf, sizeof(buf)) > 0)
			rf_memberwatch_check_devices(a, true);
	}
}
