/* holder.h - who holds a member file, and whether it still serves.
 *
 * A raidfuse daemon holds a flock on each member file (devopen.h) from the
 * moment it opens it until it exits, and mounts with the source
 * RF_MOUNT_SOURCE followed by its pid ("raidfuse:1234"), so the kernel's
 * lock table (/proc/locks) says which process holds a member and the
 * mount table says whether that process still serves a mount.  A daemon
 * whose mount went away (unmounted, or told to stop) but that still holds
 * its members is writing its last superblocks: a new mount waits for it
 * (rf_holder_wait()); one still serving is refused at once.
 */
#ifndef RAIDFUSE_HOLDER_H
#define RAIDFUSE_HOLDER_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#define RF_MOUNT_SOURCE "raidfuse:"
#define RF_HOLDER_WAIT_MS 10000         /* how long a mount waits for a daemon that is stopping */

struct rf_lock_holder {
	pid_t pid;
	bool write;                     /* an exclusive lock (else shared) */
};

struct rf_mount_ent {
	char point[PATH_MAX];           /* the mount point, unescaped */
	char type[64];                  /* "fuse", "fuse.NAME", ... */
	char source[256];
	pid_t pid;                      /* the raidfuse daemon its source names, else 0 */
};

/* The flock(2) holders of the file dev:ino in f (/proc/locks' format),
 * at most max of them into h (waiters, "->", left out).  Returns how many
 * there are (which may exceed max). */
int rf_locks_holders(FILE *f, dev_t dev, ino_t ino, struct rf_lock_holder *h, int max);

/* The pid a mount source names ("raidfuse:1234" -> 1234), else 0. */
pid_t rf_mount_source_pid(const char *source);

/* The last mount in f (/proc/self/mountinfo's format) on point (when not
 * NULL) or whose source names pid (when pid > 0), into *m.  Returns 0, or
 * -ENOENT when there is none. */
int rf_mountinfo_find(FILE *f, const char *point, pid_t pid, struct rf_mount_ent *m);

/* The same in this process's mount table: 0, -ENOENT, or -errno. */
int rf_mount_find(const char *point, pid_t pid, struct rf_mount_ent *m);

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
