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

int rf_cmd_monitor(int argc, char **argv)
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
	struct rf_mon_alert al = { .timeout_ms = 30000, .stop = &mon_stop };
	char prog[PATH_MAX], pidf[PATH_MAX], abs[PATH_MAX], err[PATH_MAX + 512];
	const char *pidfile = NULL;
	bool scan = false, oneshot = false, test = false, daemonise = false, first = true;
	long delay = 60, increment = RF_MON_INCREMENT, secs;
	struct mon_array **v = NULL, *a;
	struct rf_cli_mount_read *mr;
	struct rf_mount_ent m;
	struct sigaction sa;
	int ch, rc = -1, n = 0, i, j, r;
	char *end;

	while ((ch = rf_cli_opt_next(argc, argv, "-:sp:m:y1td:r:fi:h", lo, &rc)) != -1) {
		switch (ch) {
		case 's':
			scan = true;
			break;
		case 'p':
			al.program = optarg;
			break;
		case 'm':
			al.mail = optarg;
			break;
		case 'y':
			al.syslog = true;
			break;
		case '1':
			oneshot = true;
			break;
		case 't':
			test = true;
			break;
		case 'f':
			daemonise = true;
			break;
		case 'i':
			pidfile = optarg;
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
				delay = secs;
			else if (ch == 'r')
				increment = secs;
			else
				al.timeout_ms = (int)secs * 1000;
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
			a = mon_add(&v, &n, abs);
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
	if (rc < 0 && scan && n)
		rc = rf_cli_usage_error("monitor: --scan takes no MOUNTPOINT (it watches every raidfuse mount)");
	if (rc < 0 && (daemonise || fcntl(STDOUT_FILENO, F_GETFD) < 0) && !al.program && !al.mail && !al.syslog) {
		fprintf(stderr, "raidfuse: monitor: No mail address or alert command - not monitoring.\n");
		rc = 1;
	}
	if (rc >= 0) {
		for (i = 0; i < n; i++)
			mon_free(v[i]);
		free(v);
		return rc;
	}
	scan = !n;
	mr = mmap(NULL, sizeof(*mr), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mr == MAP_FAILED) {
		fprintf(stderr, "raidfuse: monitor: %s\n", strerror(errno));
		for (i = 0; i < n; i++)
			mon_free(v[i]);
		free(v);
		return 1;
	}
	/* a named mount must be a raidfuse one: its files say so */
	for (i = 0; i < n; i++) {
		r = rf_cli_read_mount(v[i]->mnt, mr, LIST_MOUNT_TIMEOUT_MS);
		if (r == -ENOENT && strstr(mr->err, "not a raidfuse mount")) {
			fprintf(stderr, "raidfuse: monitor: %s\n", mr->err);
			rc = 1;
		} else if (r == -ENOENT) {
			fprintf(stderr, "raidfuse: monitor: %s is not a raidfuse mount (%s)\n", v[i]->mnt, mr->err);
			rc = 1;
		} else if (r) {
			fprintf(stderr, "raidfuse: monitor: %s (watched until it answers)\n", mr->err);
		}
	}
	if (rc < 0 && daemonise) {
		/* the daemon leaves for /: the paths it keeps are absolute */
		if (al.program && strchr(al.program, '/') && realpath(al.program, prog))
			al.program = prog;
		if (pidfile && pidfile[0] != '/' && getcwd(abs, sizeof(abs)) &&
		    (size_t)snprintf(pidf, sizeof(pidf), "%s/%s", abs, pidfile) < sizeof(pidf))
			pidfile = pidf;
		rc = rf_daemon_fork(false);
		if (rc < 0)
			rc = -1;        /* the daemon goes on; the parent returns how its start went */
	}
	if (rc < 0 && pidfile && rf_monitor_pidfile_claim(pidfile, err, sizeof(err))) {
		fprintf(stderr, "raidfuse: monitor: %s\n", err);
		rc = 1;
	}
	if (rc >= 0) {
		for (i = 0; i < n; i++)
			mon_free(v[i]);
		free(v);
		munmap(mr, sizeof(*mr));
		return rc;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = mon_signal;     /* no SA_RESTART: a sleep ends at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (al.syslog)
		openlog("raidfuse-monitor", LOG_PID, LOG_DAEMON);
	if (al.mail && access(RF_MON_SENDMAIL, X_OK))
		fprintf(stderr, "raidfuse: monitor: cannot mail %s: %s: %s\n", al.mail, RF_MON_SENDMAIL,
			strerror(errno));
	al.print = !daemonise;
	if (daemonise)
		rf_daemon_ready();
	while (!mon_stop) {
		if (scan)
			mon_discover(&v, &n, first);
		for (i = j = 0; i < n; i++) {
			if (!mon_stop && !mon_look(v[i], mr, &al, first && test, (int)increment)) {
				mon_free(v[i]);
				continue;
			}
			v[j++] = v[i];
		}
		n = j;
		if (oneshot)
			break;
		first = false;
		sleep_until_stop(delay);
	}
	for (i = 0; i < n; i++)
		mon_free(v[i]);
	free(v);
	munmap(mr, sizeof(*mr));
	rf_monitor_pidfile_release(pidfile);
	if (al.syslog)
		closelog();
	return 0;
}
