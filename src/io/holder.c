/* holder.c - who holds a member file, and whether it still serves
 * (holder.h).
 *
 * Two tables of the kernel's, read as text: /proc/locks gives the pid
 * that took each flock (a daemon takes its members' locks itself: it
 * forks before it opens them, daemon.c), /proc/self/mountinfo each
 * mount's source, which for a raidfuse mount is "raidfuse:PID".  Nothing
 * here asks a daemon anything (a stuck daemon would not answer): a
 * mount's presence in the table is the kernel's word that it serves.
 * The table is this process's mount namespace: a daemon serving in
 * another one looks stopping, and is waited for until the deadline, then
 * refused by its lock.
 *
 * What it does NOT do: take or release locks (devopen.c), or unmount.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/holder.h"

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

pid_t rf_mount_source_pid(const char *source)
{
	size_t len = strlen(RF_MOUNT_SOURCE);
	char *end;
	long v;

	if (strncmp(source, RF_MOUNT_SOURCE, len) || source[len] < '1' || source[len] > '9')
		return 0;
	v = strtol(source + len, &end, 10);
	return *end || v <= 0 || v > INT32_MAX ? 0 : (pid_t)v;
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

int rf_mountinfo_find(FILE *f, const char *point, pid_t pid, struct rf_mount_ent *m)
{
	struct rf_mount_ent e;
	char *line = NULL, *sep;
	size_t cap = 0;
	bool found = false;

	while (getline(&line, &cap, f) > 0) {
		/* "36 35 0:42 / /mnt/x rw,relatime shared:1 - fuse raidfuse:1234 rw,..." */
		sep = strstr(line, " - ");
		if (!sep || sscanf(line, "%*u %*u %*u:%*u %*s %4095s", e.point) != 1 ||
		    sscanf(sep + 3, "%63s %255s", e.type, e.source) != 2)
			continue;
		unescape(e.point);
		unescape(e.source);
		e.pid = rf_mount_source_pid(e.source);
		if ((point && strcmp(e.point, point)) || (pid > 0 && e.pid != pid))
			continue;
		*m = e;         /* the last one is on top */
		found = true;
	}
	free(line);
	return found ? 0 : -ENOENT;
}

int rf_mount_find(const char *point, pid_t pid, struct rf_mount_ent *m)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int r;

	if (!f)
		return -errno;
	r = rf_mountinfo_find(f, point, pid, m);
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

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* One look at who holds dev:ino against a lock of ours (shared when ro):
 * 0 nobody (or only a process that is no raidfuse: the lock says so),
 * 1 a raidfuse that is stopping (*pid), -EBUSY one that serves (err). */
static int look(dev_t dev, ino_t ino, const char *who, bool ro, pid_t *pid, char *err, size_t errlen)
{
	struct rf_lock_holder h[16];
	struct rf_mount_ent m;
	char comm[32];
	int n, i, stopping = 0;
	FILE *f = fopen("/proc/locks", "re");

	if (!f)
		return 0;
	n = rf_locks_holders(f, dev, ino, h, 16);
	fclose(f);
	for (i = 0; i < n && i < 16; i++) {
		if (h[i].pid == getpid() || (ro && !h[i].write))
			continue;
		if (!rf_mount_find(NULL, h[i].pid, &m)) {
			snprintf(err, errlen, "%s is in use by the raidfuse (pid %d) serving %s", who, (int)h[i].pid,
				 m.point);
			return -EBUSY;
		}
		if (is_raidfuse(h[i].pid, comm, sizeof(comm))) {
			*pid = h[i].pid;
			stopping = 1;
		}
	}
	return stopping;
}

int rf_holder_wait(const char *path, const char *who, bool ro, unsigned timeout_ms, pid_t *said, char *err,
		   size_t errlen)
{
	int64_t start = now_ms();
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
		if (now_ms() - start >= timeout_ms) {
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
