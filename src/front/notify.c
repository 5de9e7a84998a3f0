/* SPDX-License-Identifier: GPL-2.0-or-later */
/* notify.c - the service manager's readiness protocol (sd_notify(3)).
 *
 * Under systemd with Type=notify the daemon says when it serves
 * (READY=1), what state the array is in (STATUS=, as `systemctl status`
 * shows it: mdstat's "raid5 [4/3] [UUU_]"), and when it begins to stop
 * (STOPPING=1).  A detached daemon (daemon.h) is not the process the
 * manager started: it names itself with MAINPID= in the same datagram as
 * READY=1, before the command that started it exits, so that the manager
 * follows the right process (the unit needs NotifyAccess=all for that
 * form; raidfuse@.service runs the daemon in the foreground instead).
 *
 * STATUS is kept up to date by a background thread (bgthread.h) that looks at the
 * array every RF_NOTIFY_PERIOD_MS and sends the line when it differs
 * from the last one sent: a member that fails, a rebuild that starts or
 * ends, whatever did it (an IO error, ctl, a spare taking over), shows
 * within that period, and the array's code knows nothing of this module.
 * Reading the state takes only what mdstat takes (rf_array_status(),
 * rf_sync_get()).
 *
 * Only this file sees libsystemd's sd-daemon.h.  With $NOTIFY_SOCKET
 * unset nothing is sent and no thread starts.  A datagram that cannot be
 * sent is logged once at debug level: the manager may be gone, the array
 * still serves.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "raidfuse/bgthread.h"
#include "raidfuse/daemon.h"
#include "raidfuse/log.h"
#include "raidfuse/notify.h"
#include "raidfuse/sync.h"

static struct {
	struct rf_bgthread bg;          /* looks every RF_NOTIFY_PERIOD_MS (bgthread.h) */
	bool running;                   /* bg was started */
	struct rf_array *a;
	char last[256];                 /* the STATUS last sent: bg's own */
} nt;

void rf_notify_status_line(struct rf_array *a, char *buf, size_t len)
{
	struct rf_array_info i;
	struct rf_sync_status st;
	char line[256];
	const char *map;
	size_t n;

	if (!len)
		return;
	rf_array_get_info(a, &i);
	rf_array_status(a, line, sizeof(line));
	/* mdstat's status: " level 5, 64k chunk, algorithm 2 [4/3] [UUU_]";
	 * the device counts and map from the first " [" on. */
	map = strstr(line, " [");
	n = (size_t)snprintf(buf, len, "raid%d%s", i.level, map ? map : "");
	if (n < len && rf_level_has_sync_work(a)) {
		rf_sync_get(a, &st);
		if (st.action != RF_SYNC_IDLE && st.action != RF_SYNC_FROZEN)
			n += (size_t)snprintf(buf + n, len - n, " %s", rf_sync_action_name(st.action));
	}
	if (n < len && rf_array_readonly(a))
		snprintf(buf + n, len - n, " (read-only)");
}

/* One datagram; a failure logged (at debug level) once. */
static void send_state(const char *state)
{
	static bool said;
	int r = sd_notify(0, state);

	if (r < 0 && !said) {
		said = true;
		rf_dbg("cannot tell the service manager '%s' ($NOTIFY_SOCKET %s): %s", state,
		       getenv("NOTIFY_SOCKET"), strerror(-r));
	}
}

static void send_status(const char *line)
{
	char msg[sizeof(nt.last) + 16];

	snprintf(msg, sizeof(msg), "STATUS=%s", line);
	send_state(msg);
}

static void status_look(void *arg)
{
	char line[sizeof(nt.last)];

	(void)arg;
	rf_notify_status_line(nt.a, line, sizeof(line));
	if (strcmp(line, nt.last)) {
		snprintf(nt.last, sizeof(nt.last), "%s", line);
		send_status(line);
	}
}

void rf_notify_serving(struct rf_array *a)
{
	char msg[sizeof(nt.last) + 64];
	int n = 0, r;

	if (!getenv("NOTIFY_SOCKET") || nt.running)
		return;
	nt.a = a;
	rf_notify_status_line(a, nt.last, sizeof(nt.last));
	if (rf_daemon_detached())
		n = snprintf(msg, sizeof(msg), "MAINPID=%d\n", (int)getpid());
	snprintf(msg + n, sizeof(msg) - (size_t)n, "READY=1\nSTATUS=%s", nt.last);
	send_state(msg);
	r = rf_bg_init(&nt.bg, "rf-notify", RF_NOTIFY_PERIOD_MS, status_look, NULL);
	if (!r) {
		r = rf_bg_start(&nt.bg);
		if (r)
			rf_bg_destroy(&nt.bg);
	}
	if (r)
		rf_warn("cannot start the thread that tells the service manager the array's state: %s "
			"(STATUS stays '%s')", strerror(-r), nt.last);
	nt.running = !r;
}

void rf_notify_stopping(void)
{
	if (!getenv("NOTIFY_SOCKET") || !nt.a)
		return;
	if (nt.running) {
		rf_bg_destroy(&nt.bg);
		nt.running = false;
	}
	send_state("STOPPING=1\nSTATUS=stopping: writing the last superblocks");
	nt.a = NULL;
}
