/* SPDX-License-Identifier: GPL-2.0-or-later */
/* holder.c - who holds a member file, and whether it still serves
 * (holder.h).
 *
 * Tables of the kernel's, read as text: /proc/locks gives the pid that
 * took each flock (a daemon takes its members' locks itself: it forks
 * before it opens them, daemon.c), /proc/PID/fd the daemon's marker and
 * so the device of the mount it serves, /proc/self/mountinfo whether a
 * mount of that device is still there.  Nothing here asks a daemon
 * anything (a stuck daemon would not answer): a mount's presence in the
 * table is the kernel's word that it serves.  The table is this
 * process's mount namespace: a daemon serving in another one looks
 * stopping, and is waited for until the deadline, then refused by its
 * lock.  Another user's daemon cannot be looked into: it counts as
 * serving (its lock refuses the member anyway).
 *
 * What it does NOT do: take or release locks (devopen.c), or unmount.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/holder.h"
#include "raidfuse/util.h"

#define WAIT_STEP_MS 50

int rf_locks_holders(FILE *f, dev_t dev, ino_t ino, struct rf_lock_holder *h, int max)
{
	char *line = NULL, kind[16], mode[16];
	unsigned maj, min;
	unsigned long long in;
	size_t cap = 0;
	int n = 0, pid;

	while (getline(&line, &cap, f) > 0) {
		/* "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF" */
		if (strstr(line, "->") ||
		    sscanf(line, "%*d: %15s %*s %15s %d %x:%x:%llu", kind, mode, &pid, &maj, &min, &in) != 6)
			continue;
		if (strcmp(kind, "FLOCK") || pid <= 0 || makedev(maj, min) != dev || (ino_t)in != ino)
			continue;
		if (n < max)
			h[n] = (struct rf_lock_holder){ .pid = pid, .write = !strcmp(mode, "WRITE") };
		n++;
	}
	free(line);
	return n;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

int rf_mountinfo_next(FILE *f, struct rf_mount_ent *m)
{
	char *line = NULL, *sep, *uid;
	unsigned maj, min;
	size_t cap = 0;
	int r = -ENOENT;

	while (getline(&line, &cap, f) > 0) {
		/* "36 35 0:42 / /mnt/x rw,relatime shared:1 - fuse.raidfuse raidfuse:a.img rw,..." */
		sep = strstr(line, " - ");
		if (!sep || sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, m->point) != 3 ||
		    sscanf(sep + 3, "%63s %255s", m->type, m->source) != 2)
			continue;
		uid = strstr(sep + 3, ",user_id=");
		m->uid = uid ? strtol(uid + 9, NULL, 10) : -1;
		unescape(m->point);
		unescape(m->source);
		m->dev = makedev(maj, min);
		r = 0;
		break;
	}
	free(line);
	return r;
}

int rf_mountinfo_find(FILE *f, const char *point, dev_t dev, struct rf_mount_ent *m)
{
	struct rf_mount_ent e;
	bool found = false;

	while (!rf_mountinfo_next(f, &e)) {
		if ((point && strcmp(e.point, point)) || (dev && e.dev != dev))
			continue;
		*m = e;         /* the last one is on top */
		found = true;
	}
	return found ? 0 : -ENOENT;
}

int rf_mount_find(const char *point, dev_t dev, struct rf_mount_ent *m)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int r;

	if (!f)
		return -errno;
	r = rf_mountinfo_find(f, point, dev, m);
	fclose(f);
	return r;
}

bool rf_mount_is_raidfuse(const struct rf_mount_ent *m)
{
	return !strcmp(m->type, RF_MOUNT_TYPE) || !strncmp(m->source, RF_MOUNT_SOURCE, strlen(RF_MOUNT_SOURCE));
}

int rf_serve_mark(const struct rf_mount_ent *m)
{
	char name[32 + RF_SERVE_POINT_MAX];
	int fd;

	snprintf(name, sizeof(name), RF_SERVE_MARK "%u:%u:%.*s", major(m->dev), minor(m->dev), RF_SERVE_POINT_MAX,
		 m->point);
	fd = memfd_create(name, MFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int rf_serve_mark_parse(const char *link, struct rf_mount_ent *mark)
{
	static const char pre[] = "/memfd:" RF_SERVE_MARK, del[] = " (deleted)";
	unsigned maj, min;
	size_t len;
	int end = 0;

	if (strncmp(link, pre, sizeof(pre) - 1) ||
	    sscanf(link + sizeof(pre) - 1, "%u:%u:%n", &maj, &min, &end) != 2 || !end)
		return -EINVAL;
	link += sizeof(pre) - 1 + end;
	len = strlen(link);
	if (len >= sizeof(del) - 1 && !strcmp(link + len - (sizeof(del) - 1), del))
		len -= sizeof(del) - 1;
	if (link[0] != '/' || len > RF_SERVE_POINT_MAX)
		return -EINVAL;
	memset(mark, 0, sizeof(*mark));
	memcpy(mark->point, link, len);
	mark->dev = makedev(maj, min);
	return 0;
}

bool rf_serve_marks(const struct rf_mount_ent *mark, const struct rf_mount_ent *m)
{
	size_t len = strlen(mark->point);

	if (mark->dev != m->dev)
		return false;
	return len < RF_SERVE_POINT_MAX ? !strcmp(mark->point, m->point) : !strncmp(mark->point, m->point, len);
}

int rf_serve_mark_of(pid_t pid, struct rf_mount_ent *mark)
{
	char path[64], link[128 + RF_SERVE_POINT_MAX];
	struct dirent *de;
	ssize_t n;
	int dfd, r = -ENOENT;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	dfd = dirfd(d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		n = readlinkat(dfd, de->d_name, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (!rf_serve_mark_parse(link, mark)) {
			r = 0;
			break;
		}
	}
	closedir(d);
	return r;
}

/* The mount marker mark names, if it is in this process's mount table,
 * into *m: 0, -ENOENT, or -errno. */
static int marked_mount(const struct rf_mount_ent *mark, struct rf_mount_ent *m)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (!rf_mountinfo_next(f, m)) {
		if (rf_serve_marks(mark, m)) {
			r = 0;
			break;
		}
	}
	fclose(f);
	return r;
}

/* Whether pid is a raidfuse (its command name). */
static bool is_raidfuse(pid_t pid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	snprintf(comm, len, "?");
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fgets(comm, (int)len, f))
		comm[strcspn(comm, "\n")] = '\0';
	fclose(f);
	return !strcmp(comm, "raidfuse");
}

pid_t rf_serve_pid_of(const struct rf_mount_ent *m)
{
	struct rf_mount_ent mark;
	struct dirent *de;
	char comm[32], *end;
	pid_t found = 0;
	long v;
	DIR *p = opendir("/proc");

	if (!p)
		return 0;
	while (!found && (de = readdir(p))) {
		v = strtol(de->d_name, &end, 10);
		if (*end || v <= 0 || v > INT32_MAX || !is_raidfuse((pid_t)v, comm, sizeof(comm)))
			continue;
		if (!rf_serve_mark_of((pid_t)v, &mark) && rf_serve_marks(&mark, m))
			found = (pid_t)v;
	}
	closedir(p);
	return found;
}

/* One look at who holds dev:ino against a lock of ours (shared when ro):
 * 0 nobody (or only a process that is no raidfuse: the lock says so),
 * 1 a raidfuse that is stopping (*pid), -EBUSY one that serves (err). */
static int look(dev_t dev, ino_t ino, const char *who, bool ro, pid_t *pid, char *err, size_t errlen)
{
	struct rf_lock_holder h[16];
	struct rf_mount_ent m, mark;
	char comm[32];
	int n, i, r, stopping = 0;
	FILE *f = fopen("/proc/locks", "re");

	if (!f)
		return 0;
	n = rf_locks_holders(f, dev, ino, h, 16);
	fclose(f);
	for (i = 0; i < n && i < 16; i++) {
		if (h[i].pid == getpid() || (ro && !h[i].write))
			continue;
		r = rf_serve_mark_of(h[i].pid, &mark);
		if (!r && !marked_mount(&mark, &m)) {
			snprintf(err, errlen, "%s is in use by the raidfuse (pid %d) serving %s", who, (int)h[i].pid,
				 m.point);
			return -EBUSY;
		}
		if (is_raidfuse(h[i].pid, comm, sizeof(comm))) {
			if (r && r != -ENOENT) {
				snprintf(err, errlen, "%s is in use by raidfuse (pid %d), which this user cannot look "
					 "into (%s)", who, (int)h[i].pid, strerror(-r));
				return -EBUSY;
			}
			*pid = h[i].pid;
			stopping = 1;
		}
	}
	return stopping;
}

int rf_holder_wait(const char *path, const char *who, bool ro, unsigned timeout_ms, pid_t *said, char *err,
		   size_t errlen)
{
	int64_t start = rf_mono_ms();
	struct timespec step = { 0, WAIT_STEP_MS * 1000000L };
	struct stat st;
	pid_t pid = 0;
	int r;

	if (!path || stat(path, &st) || !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)))
		return 0;
	for (;;) {
		r = look(st.st_dev, st.st_ino, who, ro, &pid, err, errlen);
		if (r <= 0)
			break;
		if (rf_mono_ms() - start >= timeout_ms) {
			snprintf(err, errlen, "%s is still held by raidfuse (pid %d) %g s after its mount went away "
				 "(its log says what it waits for)", who, (int)pid, timeout_ms / 1000.0);
			r = -EBUSY;
			break;
		}
		if (*said != pid) {
			fprintf(stderr, "raidfuse: %s is held by raidfuse (pid %d), which is stopping: waiting for it "
				"(up to %g s)\n", who, (int)pid, timeout_ms / 1000.0);
			*said = pid;
		}
		nanosleep(&step, NULL);
	}
	return r;
}
