/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cmd_monitor.c - `raidfuse monitor`: mdadm --monitor for raidfuse mounts.
 *
 * Every --delay seconds it reads each watched mount's files (in a child
 * that is killed when the daemon does not answer: cli.c) and tells what
 * changed since the last look as md's events.  Without MOUNTPOINT (or
 * with --scan) it watches every raidfuse mount of this user, those
 * mounted later too.  --oneshot looks once; --daemonise detaches, with a
 * pid file that refuses a second monitor; SIGTERM or SIGINT ends it.
 *
 * What it does NOT do: decide what an event is or tell one (the alert
 * program, mail, syslog): rf_monitor_diff() and rf_monitor_alert()
 * (monitor.c) do.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include "raidfuse/daemon.h"
#include "raidfuse/detail.h"
#include "raidfuse/holder.h"
#include "raidfuse/monitor.h"

#include "front/cli.h"

/* One array the monitor watches: what it read last (monitor.h). */
struct mon_array {
	char mnt[PATH_MAX];             /* its mount point, absolute */
	bool named;                     /* given on the command line: kept when gone */
	bool appeared;                  /* found after the first pass: NewArray */
	bool gone;                      /* DeviceDisappeared told: NewArray when back */
	bool ignored;                   /* found by --scan at a level md does not monitor */
	bool present;                   /* --scan: in the mount table this pass */
	bool seen;                      /* last holds a look */
	struct rf_detail *last;
};

static volatile sig_atomic_t mon_stop;

static void mon_signal(int sig)
{
	mon_stop = sig;
}

/* Sleep secs seconds, or until SIGTERM/SIGINT. */
static void sleep_until_stop(long secs)
{
	struct timespec ts = { .tv_sec = secs, .tv_nsec = 0 };

	while (!mon_stop && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static struct mon_array *mon_add(struct mon_array ***v, int *n, const char *mnt)
{
	struct mon_array **nv = realloc(*v, (size_t)(*n + 1) * sizeof(**v)), *a;

	if (!nv)
		return NULL;
	*v = nv;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->last = malloc(sizeof(*a->last));
	if (!a->last) {
		free(a);
		return NULL;
	}
	snprintf(a->mnt, sizeof(a->mnt), "%s", mnt);
	nv[(*n)++] = a;
	return a;
}

static void mon_free(struct mon_array *a)
{
	free(a->last);
	free(a);
}

/* --scan: the raidfuse mounts list shows, those not yet watched added. */
static void mon_discover(struct mon_array ***v, int *n, bool first)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	struct rf_mount_ent m;
	struct mon_array *a;
	int i;

	for (i = 0; i < *n; i++)
		(*v)[i]->present = (*v)[i]->named;
	if (!f) {
		fprintf(stderr, "raidfuse: monitor: /proc/self/mountinfo: %s\n", strerror(errno));
		for (i = 0; i < *n; i++)
			(*v)[i]->present = true;        /* nothing known gone */
		return;
	}
	while (!rf_mountinfo_next(f, &m)) {
		if (!rf_cli_listed_mount(&m))
			continue;
		for (i = 0; i < *n && strcmp((*v)[i]->mnt, m.point); i++)
			;
		if (i < *n) {
			(*v)[i]->present = true;
			continue;
		}
		a = mon_add(v, n, m.point);
		if (!a) {
			fprintf(stderr, "raidfuse: monitor: %s: %s\n", m.point, strerror(ENOMEM));
			continue;
		}
		a->present = true;
		a->appeared = !first;
	}
	fclose(f);
}

/* One look at a: read it, tell what changed.  False when a is to be
 * dropped (found by --scan, now gone). */
static bool mon_look(struct mon_array *a, struct rf_cli_mount_read *mr, const struct rf_mon_alert *al, bool test,
		     int increment)
{
	static struct rf_mon_event ev[RF_MON_MAX_EVENTS];   /* ~550 KiB: not on the stack */
	const struct rf_detail *old = a->seen && !a->gone ? a->last : NULL, *now = NULL;
	unsigned flags = test ? RF_MON_TEST : 0;
	int i, nev;

	if (a->ignored)
		return true;
	if (a->present && !rf_cli_read_mount(a->mnt, mr, LIST_MOUNT_TIMEOUT_MS))
		now = &mr->d;
	else if (a->present && old)
		fprintf(stderr, "raidfuse: monitor: %s\n", mr->err);
	if (now && !a->named && now->level == 0 && !a->seen) {
		a->ignored = true;      /* as mdadm --scan: raid0 is not watched */
		return true;
	}
	if (!old && (a->appeared || a->gone))
		flags |= RF_MON_NEW;
	nev = rf_monitor_diff(old, now, flags, increment, ev, RF_MON_MAX_EVENTS);
	for (i = 0; i < nev && !mon_stop; i++)
		rf_monitor_alert(al, a->mnt, &ev[i]);
	if (now) {
		memcpy(a->last, now, sizeof(*now));
		a->seen = true;
		a->gone = false;
	} else if (old) {
		a->gone = true;
	}
	return a->present || a->named;
}

/* What `monitor` was asked, and the mounts it watches. */
struct mon_opts {
	struct rf_mon_alert al;
	const char *pidfile;
	bool scan, oneshot, test, daemonise;
	long delay, increment;
	struct mon_array **v;
	int n;
	char prog[PATH_MAX], pidf[PATH_MAX];
};

static void mon_free_all(struct mon_opts *o)
{
	for (int i = 0; i < o->n; i++)
		mon_free(o->v[i]);
	free(o->v);
	o->v = NULL;
	o->n = 0;
}

/* The options into o, each named mount one to watch; -1 when they
 * parsed, else the exit status. */
static int mon_parse(int argc, char **argv, struct mon_opts *o)
{
	static const struct option lo[] = {
		{ "scan", no_argument, NULL, 's' },
		{ "program", required_argument, NULL, 'p' },
		{ "alert", required_argument, NULL, 'p' },
		{ "mail", required_argument, NULL, 'm' },
		{ "syslog", no_argument, NULL, 'y' },
		{ "oneshot", no_argument, NULL, '1' },
		{ "test", no_argument, NULL, 't' },
		{ "delay", required_argument, NULL, 'd' },
		{ "increment", required_argument, NULL, 'r' },
		{ "daemonise", no_argument, NULL, 'f' },
		{ "daemonize", no_argument, NULL, 'f' },
		{ "pid-file", required_argument, NULL, 'i' },
		{ "program-timeout", required_argument, NULL, 'T' },
		OPT_HELP,
		OPT_END
	};
	char abs[PATH_MAX];
	struct mon_array *a;
	struct rf_mount_ent m;
	int ch, rc = -1;
	long secs;
	char *end;

	while ((ch = rf_cli_opt_next(argc, argv, "-:sp:m:y1td:r:fi:h", lo, &rc)) != -1) {
		switch (ch) {
		case 's':
			o->scan = true;
			break;
		case 'p':
			o->al.program = optarg;
			break;
		case 'm':
			o->al.mail = optarg;
			break;
		case 'y':
			o->al.syslog = true;
			break;
		case '1':
			o->oneshot = true;
			break;
		case 't':
			o->test = true;
			break;
		case 'f':
			o->daemonise = true;
			break;
		case 'i':
			o->pidfile = optarg;
			break;
		case 'd':
		case 'r':
		case 'T':
			errno = 0;
			secs = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || secs < 1 || secs > (ch == 'r' ? 99 : 86400))
				return rf_cli_usage_error("monitor: --%s takes %s, not '%s'", rf_cli_long_name(lo, ch),
							  ch == 'r' ? "a percentage (1 to 99)" : "SECONDS (1 to 86400)", optarg);
			if (ch == 'd')
				o->delay = secs;
			else if (ch == 'r')
				o->increment = secs;
			else
				o->al.timeout_ms = (int)secs * 1000;
			break;
		case 1:
			if (!realpath(optarg, abs)) {
				fprintf(stderr, "raidfuse: monitor: %s: %s\n", optarg, strerror(errno));
				rc = 1;
				break;
			}
			if (rf_mount_find(abs, 0, &m)) {
				fprintf(stderr, "raidfuse: monitor: %s is not a raidfuse mount (nothing is mounted there)\n",
					optarg);
				rc = 1;
				break;
			}
			a = mon_add(&o->v, &o->n, abs);
			if (!a) {
				fprintf(stderr, "raidfuse: monitor: %s\n", strerror(ENOMEM));
				rc = 1;
				break;
			}
			a->named = a->present = true;
			break;
		}
		if (rc >= 0)
			break;
	}
	if (rc < 0 && o->scan && o->n)
		rc = rf_cli_usage_error("monitor: --scan takes no MOUNTPOINT (it watches every raidfuse mount)");
	if (rc < 0 && (o->daemonise || fcntl(STDOUT_FILENO, F_GETFD) < 0) && !o->al.program && !o->al.mail &&
	    !o->al.syslog) {
		fprintf(stderr, "raidfuse: monitor: No mail address or alert command - not monitoring.\n");
		rc = 1;
	}
	return rc;
}

/* Before watching: each named mount is a raidfuse one (its files say
 * so), the daemon forked (--daemonise), the pid file claimed; -1 when
 * the watch goes on here, else the exit status. */
static int mon_start(struct mon_opts *o, struct rf_cli_mount_read *mr)
{
	char abs[PATH_MAX], err[PATH_MAX + 512];
	int i, r, rc = -1;

	for (i = 0; i < o->n; i++) {
		r = rf_cli_read_mount(o->v[i]->mnt, mr, LIST_MOUNT_TIMEOUT_MS);
		if (r == -ENOENT && strstr(mr->err, "not a raidfuse mount")) {
			fprintf(stderr, "raidfuse: monitor: %s\n", mr->err);
			rc = 1;
		} else if (r == -ENOENT) {
			fprintf(stderr, "raidfuse: monitor: %s is not a raidfuse mount (%s)\n", o->v[i]->mnt, mr->err);
			rc = 1;
		} else if (r) {
			fprintf(stderr, "raidfuse: monitor: %s (watched until it answers)\n", mr->err);
		}
	}
	if (rc < 0 && o->daemonise) {
		/* the daemon leaves for /: the paths it keeps are absolute */
		if (o->al.program && strchr(o->al.program, '/') && realpath(o->al.program, o->prog))
			o->al.program = o->prog;
		if (o->pidfile && o->pidfile[0] != '/' && getcwd(abs, sizeof(abs)) &&
		    (size_t)snprintf(o->pidf, sizeof(o->pidf), "%s/%s", abs, o->pidfile) < sizeof(o->pidf))
			o->pidfile = o->pidf;
		rc = rf_daemon_fork(false);
		if (rc < 0)
			rc = -1;        /* the daemon goes on; the parent returns how its start went */
	}
	if (rc < 0 && o->pidfile && rf_monitor_pidfile_claim(o->pidfile, err, sizeof(err))) {
		fprintf(stderr, "raidfuse: monitor: %s\n", err);
		rc = 1;
	}
	return rc;
}

/* Every delay seconds a look at each mount (every raidfuse mount with
 * --scan) until a signal (or once, --oneshot). */
static void mon_watch(struct mon_opts *o, struct rf_cli_mount_read *mr)
{
	struct sigaction sa;
	bool first = true;
	int i, j;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = mon_signal;     /* no SA_RESTART: a sleep ends at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (o->al.syslog)
		openlog("raidfuse-monitor", LOG_PID, LOG_DAEMON);
	if (o->al.mail && access(RF_MON_SENDMAIL, X_OK))
		fprintf(stderr, "raidfuse: monitor: cannot mail %s: %s: %s\n", o->al.mail, RF_MON_SENDMAIL,
			strerror(errno));
	o->al.print = !o->daemonise;
	if (o->daemonise)
		rf_daemon_ready();
	while (!mon_stop) {
		if (o->scan)
			mon_discover(&o->v, &o->n, first);
		for (i = j = 0; i < o->n; i++) {
			if (!mon_stop && !mon_look(o->v[i], mr, &o->al, first && o->test, (int)o->increment)) {
				mon_free(o->v[i]);
				continue;
			}
			o->v[j++] = o->v[i];
		}
		o->n = j;
		if (o->oneshot)
			break;
		first = false;
		sleep_until_stop(o->delay);
	}
	rf_monitor_pidfile_release(o->pidfile);
	if (o->al.syslog)
		closelog();
}

int rf_cmd_monitor(int argc, char **argv)
{
	struct mon_opts o = { .al = { .timeout_ms = 30000, .stop = &mon_stop }, .delay = 60,
			      .increment = RF_MON_INCREMENT };
	struct rf_cli_mount_read *mr;
	int rc = mon_parse(argc, argv, &o);

	if (rc >= 0) {
		mon_free_all(&o);
		return rc;
	}
	o.scan = !o.n;
	mr = mmap(NULL, sizeof(*mr), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mr == MAP_FAILED) {
		fprintf(stderr, "raidfuse: monitor: %s\n", strerror(errno));
		mon_free_all(&o);
		return 1;
	}
	rc = mon_start(&o, mr);
	if (rc < 0) {
		mon_watch(&o, mr);
		rc = 0;
	}
	mon_free_all(&o);
	munmap(mr, sizeof(*mr));
	return rc;
}
