/* SPDX-License-Identifier: GPL-2.0-or-later */
/* monitor.c - mdadm --monitor's events for raidfuse arrays (monitor.h).
 *
 * An event is a difference between two looks at one array's control
 * files, each read whole into a struct rf_detail (detail.c reads them;
 * nothing here reads an md file).  The rules are mdadm's:
 *
 *   Fail            a member that was in sync is faulty, out of sync or gone
 *   FailSpare       a member that was not in sync (a spare, one being
 *                   rebuilt) is faulty
 *   SpareActive     a member is in sync that was not, or was not there
 *   RebuildStarted  a sync action's progress appears (md/sync_completed)
 *   RebuildNN       its percentage passed a multiple of the increment
 *                   (20): NN is the percentage seen
 *   RebuildFinished the progress is gone again (with " mismatches found:
 *                   N (on raid level L)" when md/mismatch_cnt is not 0)
 *   DegradedArray   degraded at the first look, or degraded further
 *                   without a Fail
 *   NewArray        an array that appeared after the start, or came back
 *   DeviceDisappeared  an array that could be read no longer can (or,
 *                   named, is of a level without redundancy: " Wrong-Level")
 *   TestMessage     --test, once per array at the start
 *
 * Members are matched by name (md/dev-NAME), which is what md's device
 * number stands for here.  A sync action is any of md's (resync,
 * recover, check, repair, reshape), as mdadm's percentage from mdstat
 * is.  mdadm also reports SparesMissing when its config names a count of
 * spares; a mount says nothing of the spares its config had, so there is
 * no such event here.
 *
 * rf_monitor_alert() tells an event: a line on stdout, the alert program
 * (fork and exec, no shell: PROGRAM EVENT ARRAY [DEVICE], in a process
 * group of its own that is killed when it outlives its deadline, so that
 * a program that hangs cannot stop the monitor), a mail through
 * sendmail -t for the events mdadm mails, a syslog line.
 *
 * What it does NOT do: read the arrays, keep their state between looks,
 * or loop (cmd_monitor.c does, with list's mount discovery).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/monitor.h"
#include "raidfuse/util.h"

struct out {
	struct rf_mon_event *ev;
	int max, n;
};

static void add(struct out *o, const char *name, const char *dev)
{
	if (o->n >= o->max)
		return;
	snprintf(o->ev[o->n].name, sizeof(o->ev[o->n].name), "%s", name);
	snprintf(o->ev[o->n].dev, sizeof(o->ev[o->n].dev), "%s", dev ? dev : "");
	o->n++;
}

/* In sync in a slot: what md's MD_DISK_SYNC says. */
static bool synced(const struct rf_detail_dev *v)
{
	return v && v->in_sync && !v->faulty && v->slot >= 0;
}

static const struct rf_detail_dev *find_dev(const struct rf_detail *d, const char *name)
{
	int i;

	for (i = 0; i < d->ndevs; i++)
		if (!strcmp(d->devs[i].name, name))
			return &d->devs[i];
	return NULL;
}

int rf_monitor_percent(const struct rf_detail *d)
{
	uint64_t pct;

	if (!d->syncing || !d->sync_total)
		return -1;
	pct = d->sync_done * 100 / d->sync_total;
	return pct > 99 ? 99 : (int)pct;    /* 100 is "finished", which idle says */
}

int rf_monitor_diff(const struct rf_detail *old, const struct rf_detail *now, unsigned flags, int increment,
		    struct rf_mon_event *ev, int max)
{
	struct out o = { ev, max, 0 };
	const struct rf_detail_dev *ov, *nv;
	char extra[96], name[24];
	int i, fails = 0, op, np;

	if (increment < 1)
		increment = RF_MON_INCREMENT;
	if (flags & RF_MON_TEST)
		add(&o, "TestMessage", NULL);
	if (!now) {
		if (old)
			add(&o, "DeviceDisappeared", NULL);
		return o.n;
	}
	if (now->level == 0) {
		/* md's raid0 loses no member: nothing to monitor (mdadm) */
		if (!old)
			add(&o, "DeviceDisappeared", " Wrong-Level");
		return o.n;
	}
	if (!old) {
		if (flags & RF_MON_NEW)
			add(&o, "NewArray", NULL);
		if (now->degraded > 0)
			add(&o, "DegradedArray", NULL);
		return o.n;
	}
	for (i = 0; i < old->ndevs; i++) {
		ov = &old->devs[i];
		nv = find_dev(now, ov->name);
		if (synced(ov) && !synced(nv)) {
			add(&o, "Fail", ov->path);
			fails++;
		} else if (!synced(ov) && !ov->faulty && nv && nv->faulty) {
			add(&o, "FailSpare", nv->path);
		}
	}
	if (now->degraded > old->degraded && !fails)
		add(&o, "DegradedArray", NULL);
	op = rf_monitor_percent(old);
	np = rf_monitor_percent(now);
	if (op < 0 && np >= 0)
		add(&o, "RebuildStarted", NULL);
	if (op >= 0 && np >= 0 && np / increment > op / increment) {
		snprintf(name, sizeof(name), "Rebuild%02d", np);
		add(&o, name, NULL);
	}
	if (op >= 0 && np < 0) {
		extra[0] = '\0';
		if (now->has_mismatch && now->mismatch_cnt)
			snprintf(extra, sizeof(extra), " mismatches found: %llu (on raid level %d)",
				 (unsigned long long)now->mismatch_cnt, now->level);
		add(&o, "RebuildFinished", extra);
	}
	for (i = 0; i < now->ndevs; i++) {
		nv = &now->devs[i];
		if (synced(nv) && !synced(find_dev(old, nv->name)))
			add(&o, "SpareActive", nv->path);
	}
	return o.n;
}

bool rf_monitor_mails(const char *event)
{
	return !strncmp(event, "Fail", 4) || !strcmp(event, "DegradedArray") || !strcmp(event, "SparesMissing") ||
	       !strcmp(event, "TestMessage");
}

int rf_monitor_priority(const char *event)
{
	if (!strncmp(event, "Fail", 4) || !strcmp(event, "DegradedArray") || !strcmp(event, "DeviceDisappeared"))
		return LOG_CRIT;
	return LOG_INFO;
}

/* ---------------------------------------------------------------- telling */

/* A problem of the monitor's own: stderr, and syslog when it logs. */
static void say(const struct rf_mon_alert *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const struct rf_mon_alert *a, const char *fmt, ...)
{
	char msg[PATH_MAX + 512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "raidfuse: monitor: %s\n", msg);
	if (a->syslog)
		syslog(LOG_ERR, "%s", msg);
}

/* Run argv[0] (PATH searched, no shell) with stdin from in_fd (-1:
 * /dev/null), in a process group of its own.  Its pid, or -1. */
static pid_t spawn(char *const argv[], int in_fd)
{
	sigset_t none;
	pid_t pid;
	int fd;

	fflush(NULL);
	pid = fork();
	if (pid != 0) {
		if (pid > 0)
			setpgid(pid, pid);      /* both sides: whichever runs first */
		return pid;
	}
	setpgid(0, 0);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	fd = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY);
	if (fd >= 0 && fd != STDIN_FILENO) {
		dup2(fd, STDIN_FILENO);
		close(fd);
	}
	execvp(argv[0], argv);
	fprintf(stderr, "raidfuse: monitor: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* Wait for pid until a->timeout_ms has passed (or a->stop is set), then
 * kill its process group.  what names it in the message. */
static void reap(const struct rf_mon_alert *a, pid_t pid, const char *what)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0), st = 0;
	int64_t deadline = rf_mono_ms() + a->timeout_ms, left;
	bool ended = false;

	for (;;) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };

		left = deadline - rf_mono_ms();
		if (left <= 0 || (a->stop && *a->stop))
			break;
		if (pidfd < 0) {
			if (waitpid(pid, &st, WNOHANG) == pid) {
				ended = true;
				break;
			}
			usleep(20000);
			continue;
		}
		if (poll(&p, 1, (int)(left < 1000 ? left : 1000)) > 0)
			break;
	}
	if (!ended) {
		if (waitpid(pid, &st, WNOHANG) != pid) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			if (!(a->stop && *a->stop))
				say(a, "%s did not end within %d s: killed", what, a->timeout_ms / 1000);
			while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
				;
		}
	}
	if (pidfd >= 0)
		close(pidfd);
}

static void run_program(const struct rf_mon_alert *a, const char *array, const struct rf_mon_event *e)
{
	char *argv[5] = { (char *)a->program, (char *)e->name, (char *)array, e->dev[0] ? (char *)e->dev : NULL,
			  NULL };
	char what[PATH_MAX * 2 + 64];
	pid_t pid = spawn(argv, -1);

	if (pid < 0) {
		say(a, "%s %s %s: fork: %s", a->program, e->name, array, strerror(errno));
		return;
	}
	snprintf(what, sizeof(what), "%s %s %s%s%s", a->program, e->name, array, e->dev[0] ? " " : "", e->dev);
	reap(a, pid, what);
}

static void send_mail(const struct rf_mon_alert *a, const char *array, const struct rf_mon_event *e)
{
	char *argv[] = { (char *)RF_MON_SENDMAIL, (char *)"-t", NULL };
	char host[256] = "localhost";
	int p[2];
	pid_t pid;
	FILE *f;

	if (access(RF_MON_SENDMAIL, X_OK)) {
		say(a, "cannot mail the %s event on %s to %s: %s: %s", e->name, array, a->mail, RF_MON_SENDMAIL,
		    strerror(errno));
		return;
	}
	if (pipe2(p, O_CLOEXEC)) {
		say(a, "cannot mail the %s event on %s: pipe: %s", e->name, array, strerror(errno));
		return;
	}
	pid = spawn(argv, p[0]);
	close(p[0]);
	if (pid < 0) {
		say(a, "cannot mail the %s event on %s: fork: %s", e->name, array, strerror(errno));
		close(p[1]);
		return;
	}
	gethostname(host, sizeof(host) - 1);
	f = fdopen(p[1], "w");
	if (f) {
		/* a message of a few hundred bytes: the pipe holds it whole */
		fprintf(f, "From: raidfuse monitor <root>\nTo: %s\nSubject: %s event on %s:%s\n\n", a->mail, e->name,
			array, host);
		fprintf(f, "raidfuse monitor on %s saw a %s event on the array served on %s.\n", host, e->name, array);
		if (e->dev[0] == ' ')
			fprintf(f, "\nMore:%s.\n", e->dev);
		else if (e->dev[0])
			fprintf(f, "\nThe member concerned: %s.\n", e->dev);
		fprintf(f, "\n`raidfuse status --detail %s` shows the array's state.\n", array);
		fclose(f);
	} else {
		close(p[1]);
	}
	reap(a, pid, RF_MON_SENDMAIL " -t");
}

void rf_monitor_alert(const struct rf_mon_alert *a, const char *array, const struct rf_mon_event *e)
{
	char when[32];
	time_t t;

	if (a->print) {
		t = time(NULL);
		strftime(when, sizeof(when), "%b %e %H:%M:%S", localtime(&t));
		printf("%s: %s on %s%s%s\n", when, e->name, array, e->dev[0] && e->dev[0] != ' ' ? " " : "", e->dev);
		fflush(stdout);
	}
	if (a->syslog) {
		if (e->dev[0] && e->dev[0] != ' ')
			syslog(rf_monitor_priority(e->name), "%s event on %s, member %s", e->name, array, e->dev);
		else
			syslog(rf_monitor_priority(e->name), "%s event on %s%s%s", e->name, array,
			       e->dev[0] ? ":" : "", e->dev);
	}
	if (a->program)
		run_program(a, array, e);
	if (a->mail && rf_monitor_mails(e->name))
		send_mail(a, array, e);
}

/* ---------------------------------------------------------------- pid file */

/* Whether pid is a raidfuse monitor: its command line's second word. */
static bool is_monitor(long pid)
{
	char path[64], cmd[256];
	size_t first;
	int n;

	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	n = rf_read_text(path, cmd, sizeof(cmd));
	if (n <= 0)
		return false;
	first = strnlen(cmd, (size_t)n);
	return first + 1 < (size_t)n && !strcmp(cmd + first + 1, "monitor") && strstr(cmd, "raidfuse");
}

static long pidfile_pid(const char *path)
{
	char buf[64], *end;
	long pid;

	if (rf_read_text(path, buf, sizeof(buf)) <= 0)
		return 0;
	pid = strtol(buf, &end, 10);
	return pid > 0 && (*end == '\n' || !*end) ? pid : 0;
}

int rf_monitor_pidfile_claim(const char *path, char *err, size_t errlen)
{
	long pid = pidfile_pid(path);
	int fd, e;

	if (pid && pid != getpid() && is_monitor(pid)) {
		snprintf(err, errlen, "%s names monitor %ld, which runs: stop it first", path, pid);
		return -EEXIST;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || dprintf(fd, "%d\n", (int)getpid()) < 0) {
		e = errno;
		snprintf(err, errlen, "cannot write the pid file %s: %s", path, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	close(fd);
	return 0;
}

void rf_monitor_pidfile_release(const char *path)
{
	if (path && pidfile_pid(path) == (long)getpid())
		unlink(path);
}
