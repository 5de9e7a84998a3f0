/* SPDX-License-Identifier: GPL-2.0-or-later */
/* monitor.h - mdadm --monitor's events for raidfuse arrays, and the ways
 * they are told (raidfuse monitor).
 *
 * The monitor reads each array's control files every few seconds
 * (detail.h) and compares what it reads with what it read before
 * (rf_monitor_diff(), a pure function): md's events, with mdadm's names
 * and arguments, come out of that comparison.  Each event then goes to
 * the alert program, mail, syslog and standard output
 * (rf_monitor_alert()).
 */
#ifndef RAIDFUSE_MONITOR_H
#define RAIDFUSE_MONITOR_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>

#include "raidfuse/detail.h"

/* At most one event per device, and a few for the array. */
#define RF_MON_MAX_EVENTS (RF_MAX_DEVS + 8)

/* mdadm's default step of the RebuildNN events, in percent. */
#define RF_MON_INCREMENT 20

/* The mail program, run as `SENDMAIL -t` (mdadm's). */
#define RF_MON_SENDMAIL "/usr/sbin/sendmail"

struct rf_mon_event {
	char name[24];                  /* md's: "Fail", "Rebuild40", "TestMessage" */
	char dev[PATH_MAX];             /* the member's path; mdadm's extra words
					 * start with a space (" Wrong-Level");
					 * "" for none */
};

/* rf_monitor_diff()'s flags. */
#define RF_MON_TEST 1u                  /* --test: a TestMessage first */
#define RF_MON_NEW 2u                   /* the array appeared after the monitor
					 * started, or came back: NewArray */

/* The events between two looks at one array, in the order they are told,
 * into ev (at most max).  old NULL: the first look (DegradedArray when
 * degraded; NewArray with RF_MON_NEW); now NULL: the array could not be
 * read (DeviceDisappeared, when old was read).  increment: the step of
 * RebuildNN (1 to 99).  Returns how many events there are.
 *
 * Within one look: Fail and FailSpare, then DegradedArray (degraded
 * further without a Fail), RebuildStarted, RebuildNN, RebuildFinished,
 * then SpareActive: a failure before the rebuild it starts, a rebuild's
 * end before the spare it made active. */
int rf_monitor_diff(const struct rf_detail *old, const struct rf_detail *now, unsigned flags, int increment,
		    struct rf_mon_event *ev, int max);

/* The percentage of the sync action under way in d (0 to 99), -1 none. */
int rf_monitor_percent(const struct rf_detail *d);

/* Whether mdadm mails an event: Fail, FailSpare, DegradedArray,
 * SparesMissing, TestMessage. */
bool rf_monitor_mails(const char *event);

/* The syslog priority of an event: LOG_CRIT for Fail, FailSpare,
 * DegradedArray and DeviceDisappeared, LOG_INFO otherwise. */
int rf_monitor_priority(const char *event);

/* Where events go. */
struct rf_mon_alert {
	const char *program;            /* run as PROGRAM EVENT ARRAY [DEVICE]; NULL none */
	const char *mail;               /* the address; NULL none */
	bool syslog;                    /* LOG_DAEMON, opened by the caller */
	bool print;                     /* a line on stdout */
	int timeout_ms;                 /* the program's and sendmail's deadline */
	volatile sig_atomic_t *stop;    /* set by a signal: a program running is killed */
};

/* Tell event e of the array on mount point array every way a says.  A
 * program that has not ended by its deadline is killed (its process
 * group: what it started too).  Errors are reported (stderr, and syslog
 * with a->syslog); the monitor goes on. */
void rf_monitor_alert(const struct rf_mon_alert *a, const char *array, const struct rf_mon_event *e);

/* Claim pid file path for this process: refused (-EEXIST, err says who)
 * when it names another raidfuse process that runs; otherwise it is
 * (re)written with getpid().  0 or -errno with err. */
int rf_monitor_pidfile_claim(const char *path, char *err, size_t errlen);

/* Remove path if it still names this process. */
void rf_monitor_pidfile_release(const char *path);

#endif
