/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cli.c - what several raidfuse commands share (cli.h): the control files
 * under a mount, one mount read in a child, waits.
 *
 * status, ctl and grow only read and write the control files under a
 * mount (MOUNTPOINT/mdstat, MOUNTPOINT/md/ATTR): whatever the daemon
 * serves there is what they show, and what it refuses they report, saying
 * why a mount has no such file (rf_cli_not_served()).  Their --json
 * prints the same files as typed JSON (rf_cli_json_ctl_typed(),
 * raidfuse(8) JSON OUTPUT): md's attribute names as keys, numbers as
 * numbers, md's "none" as null, pairs as objects, other words as md's
 * text.
 *
 * list, status --detail and monitor read a mount's files in a child
 * (rf_cli_read_mount()) that is killed when the daemon does not answer in
 * time, so that a stopped or stuck daemon cannot hang them.
 *
 * What it does NOT do: parse options or print usage (cmds.c), or word an
 * array's state (detail.c): these only read files and wait.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "raidfuse/detail.h"
#include "raidfuse/holder.h"
#include "raidfuse/json.h"
#include "raidfuse/util.h"

#include "front/cli.h"

void rf_cli_not_served(const char *mnt, const char *what, int err)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/mdstat", mnt);
	if (stat(path, &st))
		fprintf(stderr, "raidfuse: %s is not a raidfuse mount (no %s: %s)\n", mnt, path, strerror(errno));
	else if (err == ENOENT)
		fprintf(stderr, "raidfuse: %s: no such attribute on this array\n", what);
	else
		fprintf(stderr, "raidfuse: %s: %s\n", what, strerror(err));
}

int rf_cli_read_attr(const char *mnt, const char *attr, char *buf, size_t size, bool report)
{
	char path[4096], what[300];
	int n;

	snprintf(path, sizeof(path), "%s/md/%s", mnt, attr);
	n = rf_read_text(path, buf, size);
	if (n < 0) {
		if (report) {
			snprintf(what, sizeof(what), "md/%s", attr);
			rf_cli_not_served(mnt, what, -n);
		}
		return n;
	}
	buf[strcspn(buf, "\n")] = '\0';
	return (int)strlen(buf);
}

void rf_cli_json_ctl_value(struct rf_json *j, char *text)
{
	size_t len = strlen(text);
	const char *p = text;

	if (len && text[len - 1] == '\n')
		text[--len] = '\0';
	if (*p == '-')
		p++;
	if (*p && strspn(p, "0123456789") == strlen(p) && (p[0] != '0' || !p[1]))
		rf_json_num_text(j, text);
	else
		rf_json_str(j, text);
}

/* The words of a fault spec ("error=EIO rate=0.5 ops=read,write") and its
 * counters' line ("matched=3 errors=1 delays=0") as members of the
 * object open in j: numbers as numbers, ops as an array of words. */
static void json_fault_words(struct rf_json *j, char *text)
{
	char *save = NULL, *w, *eq, *op, *save2 = NULL;

	for (w = strtok_r(text, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
		eq = strchr(w, '=');
		if (!eq)
			continue;
		*eq = '\0';
		rf_json_key(j, w);
		if (!strcmp(w, "ops")) {
			rf_json_arr(j);
			for (op = strtok_r(eq + 1, ",", &save2); op; op = strtok_r(NULL, ",", &save2))
				rf_json_str(j, op);
			rf_json_arr_end(j);
		} else {
			rf_json_num_text(j, eq + 1);
		}
	}
}

void rf_cli_json_ctl_typed(struct rf_json *j, const char *name, char *text)
{
	const char *kind = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	unsigned long long a, b;
	char src[16], key[300], num[32], *end;
	size_t len = strlen(text);
	double v;
	int n = 0;

	while (len && text[len - 1] == '\n')
		text[--len] = '\0';
	rf_json_key(j, name);
	if (!strcmp(text, "none")) {
		rf_json_null(j);
	} else if (!strcmp(kind, "set_name") || !strcmp(kind, "path")) {
		rf_json_str(j, text);   /* names, whatever they look like */
	} else if (!strcmp(kind, "fault")) {
		if (!strncmp(text, "off", 3) && (!text[3] || text[3] == '\n')) {
			rf_json_null(j);
		} else {
			rf_json_obj(j);
			json_fault_words(j, text);
			rf_json_obj_end(j);
		}
	} else if (sscanf(text, "%llu / %llu%n", &a, &b, &n) == 2 && !text[n]) {
		rf_json_obj(j);
		rf_json_kuint(j, "done", a);
		rf_json_kuint(j, "total", b);
		rf_json_obj_end(j);
	} else if (sscanf(text, "%llu (%15[a-z])%n", &a, src, &n) == 2 && !text[n]) {
		rf_json_uint(j, a);
		snprintf(key, sizeof(key), "%s_source", name);
		rf_json_kstr(j, key, src);
	} else if (!strcmp(kind, "timeout") && (v = strtod(text, &end)) >= 0 && end != text &&
		   (!*end || !strcmp(end, "ms"))) {
		snprintf(num, sizeof(num), "%g", *end ? v / 1000 : v);
		rf_json_num_text(j, num);
	} else {
		rf_cli_json_ctl_value(j, text);
	}
}

bool rf_cli_sync_running(const char *mnt)
{
	char act[64];

	if (rf_cli_read_attr(mnt, "sync_action", act, sizeof(act), false) < 0)
		return false;
	return strcmp(act, "idle") && strcmp(act, "frozen");
}

void rf_cli_sleep_secs(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

bool rf_cli_parse_secs(const char *s, double *out)
{
	char *end;
	double v;

	if (!*s || !strchr("0123456789.", *s))
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || v < 0.1 || v > 86400)
		return false;
	*out = v;
	return true;
}

bool rf_cli_listed_mount(const struct rf_mount_ent *m)
{
	return rf_mount_is_raidfuse(m) && (geteuid() == 0 || m->uid == (long)getuid());
}

int rf_cli_read_mount(const char *mnt, struct rf_cli_mount_read *mr, int timeout_ms)
{
	int st, pidfd;
	pid_t pid;

	mr->r = -EIO;
	snprintf(mr->err, sizeof(mr->err), "%s: its reader failed", mnt);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(mr->err, sizeof(mr->err), "%s: fork: %s", mnt, strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		mr->r = rf_detail_read(mnt, &mr->d, mr->err, sizeof(mr->err));
		_exit(0);
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (!rf_cli_wait_exit(pidfd, pid, rf_mono_ms() + timeout_ms)) {
		kill(pid, SIGKILL);
		mr->r = -ETIMEDOUT;
		snprintf(mr->err, sizeof(mr->err), "%s: its daemon has not answered within %d s (stopped or stuck)",
			 mnt, timeout_ms / 1000);
	}
	if (pidfd >= 0)
		close(pidfd);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return mr->r;
}

bool rf_cli_wait_exit(int pidfd, pid_t pid, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - rf_mono_ms();
		struct pollfd p = { .fd = pidfd, .events = POLLIN };

		if (pidfd < 0 ? kill(pid, 0) && errno == ESRCH : false)
			return true;
		if (left <= 0)
			return false;
		if (pidfd < 0) {
			rf_cli_sleep_secs(0.05);
			continue;
		}
		if (poll(&p, 1, (int)(left < 1000 ? left : 1000)) > 0)
			return true;
	}
}

int rf_cli_backup_file(const char *cmd, const char *arg, char *abs, size_t len)
{
	char cwd[PATH_MAX];
	int fd, n;

	if (!*arg) {
		fprintf(stderr, "raidfuse: %s: --backup-file wants a file\n", cmd);
		return 1;
	}
	if (arg[0] == '/')
		n = snprintf(abs, len, "%s", arg);
	else if (getcwd(cwd, sizeof(cwd)))
		n = snprintf(abs, len, "%s/%s", strcmp(cwd, "/") ? cwd : "", strncmp(arg, "./", 2) ? arg : arg + 2);
	else
		n = -1;
	if (n < 0 || (size_t)n >= len) {
		fprintf(stderr, "raidfuse: %s: backup file %s: cannot make its path absolute\n", cmd, arg);
		return 1;
	}
	fd = open(abs, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "raidfuse: %s: backup file %s: %s\n", cmd, abs, strerror(errno));
		return 1;
	}
	close(fd);
	return 0;
}
