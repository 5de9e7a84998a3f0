/* SPDX-License-Identifier: GPL-2.0-or-later */
/* holder.h - who holds a member file, and whether it still serves.
 *
 * A raidfuse daemon holds a flock on each member file (devopen.h) from the
 * moment it opens it until it exits, so the kernel's lock table
 * (/proc/locks) says which process holds a member.  While it serves a
 * mount it also holds a marker: an anonymous file (memfd) named
 * RF_SERVE_MARK, the mount's device and its mount point
 * ("raidfuse-serves:0:42:/mnt/x"), which /proc/PID/fd shows as
 * "/memfd:raidfuse-serves:0:42:/mnt/x (deleted)".  The mount table gives
 * each mount's device (a FUSE mount's minor is its connection) and point,
 * so the two relate a daemon and its mount both ways, with nothing
 * written to any file system and nothing left behind when the daemon
 * dies.  Both, because a device number is reused by the next mount as
 * soon as the last one is gone: a daemon that has not yet seen its mount
 * go (stopped) still holds the old marker.  A daemon closes its marker
 * when its mount goes away (unmounted, or told to stop): one that still
 * holds its members then is writing its last superblocks, and a new
 * mount waits for it (rf_holder_wait()); one still serving is refused at
 * once.
 *
 * Mounts are named "raidfuse:NAME" (NAME the image) and typed
 * "fuse.raidfuse" (RF_MOUNT_SOURCE, RF_MOUNT_TYPE), unless the user's -o
 * fsname= or subtype= said otherwise: the marker, not the name, says which
 * process serves a mount.
 */
#ifndef RAIDFUSE_HOLDER_H
#define RAIDFUSE_HOLDER_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#define RF_MOUNT_SOURCE "raidfuse:"         /* fsname=raidfuse:NAME */
#define RF_MOUNT_SUBTYPE "raidfuse"
#define RF_MOUNT_TYPE "fuse." RF_MOUNT_SUBTYPE
#define RF_SERVE_MARK "raidfuse-serves:"    /* the marker's name: then MAJOR:MINOR:POINT */
#define RF_SERVE_POINT_MAX 200              /* bytes of the point a marker keeps */
#define RF_HOLDER_WAIT_MS 10000         /* how long a mount waits for a daemon that is stopping */

struct rf_lock_holder {
	pid_t pid;
	bool write;                     /* an exclusive lock (else shared) */
};

struct rf_mount_ent {
	char point[PATH_MAX];           /* the mount point, unescaped */
	char type[64];                  /* "fuse", "fuse.NAME", ... */
	char source[256];
	dev_t dev;                      /* the mount's device (FUSE: 0:connection) */
	long uid;                       /* a FUSE mount's user_id= (who mounted it); -1: none */
};

/* The flock(2) holders of the file dev:ino in f (/proc/locks' format),
 * at most max of them into h (waiters, "->", left out).  Returns how many
 * there are (which may exceed max). */
int rf_locks_holders(FILE *f, dev_t dev, ino_t ino, struct rf_lock_holder *h, int max);

/* The next entry of f (/proc/self/mountinfo's format) into *m, lines it
 * cannot read skipped.  Returns 0, or -ENOENT at the end. */
int rf_mountinfo_next(FILE *f, struct rf_mount_ent *m);

/* The last mount in f on point (when not NULL) whose device is dev (when
 * not 0), into *m.  Returns 0, or -ENOENT when there is none. */
int rf_mountinfo_find(FILE *f, const char *point, dev_t dev, struct rf_mount_ent *m);

/* The same in this process's mount table: 0, -ENOENT, or -errno. */
int rf_mount_find(const char *point, dev_t dev, struct rf_mount_ent *m);

/* Whether m looks like a raidfuse mount by its name (type fuse.raidfuse,
 * or a source raidfuse:NAME): what `raidfuse list` shows. */
bool rf_mount_is_raidfuse(const struct rf_mount_ent *m);

/* The daemon's marker for mount m (its device and point): an fd to keep
 * open while it serves, or -errno. */
int rf_serve_mark(const struct rf_mount_ent *m);

/* The device and point a marker's /proc/PID/fd link names
 * ("/memfd:raidfuse-serves:0:42:/mnt/x (deleted)") into mark->dev and
 * mark->point: 0, or -EINVAL when the link is no marker. */
int rf_serve_mark_parse(const char *link, struct rf_mount_ent *mark);

/* Whether mount m is the one marker mark names: the same device and
 * point (the point's first RF_SERVE_POINT_MAX bytes, when longer). */
bool rf_serve_marks(const struct rf_mount_ent *mark, const struct rf_mount_ent *m);

/* The marker process pid holds into *mark: 0, -ENOENT when it holds
 * none, or -errno when its fds cannot be read (another user's process:
 * -EACCES). */
int rf_serve_mark_of(pid_t pid, struct rf_mount_ent *mark);

/* The process serving mount m (the one holding its marker), among those
 * whose fds this process may read; 0 when none. */
pid_t rf_serve_pid_of(const struct rf_mount_ent *m);

/* Before a member at path is read for assembly: while it is held, against
 * the lock this daemon will take (shared when ro), by a raidfuse whose
 * mount is gone (one that is stopping), wait for it to let go: at most
 * timeout_ms, saying on stderr which member waits for which pid, once per
 * pid: *said is the pid said last (0: none; kept across members).
 * Returns 0 when nothing is in the way any more, or when what is in the
 * way is no raidfuse (the lock then refuses it, saying so), or -EBUSY
 * with "who is in use by the raidfuse (pid N) serving MNT" or "still held
 * by ..." in err.  A path that is no file here (an NBD URI, missing) is
 * 0 at once. */
int rf_holder_wait(const char *path, const char *who, bool ro, unsigned timeout_ms, pid_t *said, char *err,
		   size_t errlen);

#endif
