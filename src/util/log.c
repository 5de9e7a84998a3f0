/* SPDX-License-Identifier: GPL-2.0-or-later */
/* log.c - one line per message, "raidfuse: " prefixed on stderr, or syslog
 * once the daemon has detached.
 *
 * Thread-safe without a lock: each message is formatted into one buffer
 * and written with one call, so lines from different threads never mix.
 * Debug messages cost one branch unless -v.  Messages say what, where and
 * why (the member, the offset, the errno); nothing here decides what is
 * worth logging.  Lines longer than 1 KiB are cut. */
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>

#include "raidfuse/log.h"

int rf_log_verbose;
static bool use_syslog;

void rf_log_to_syslog(bool on)
{
	if (on && !use_syslog)
		openlog("raidfuse", LOG_PID, LOG_DAEMON);
	use_syslog = on;
}

void rf_log(int level, const char *fmt, ...)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char line[1024];
	va_list ap;

	if (level > RF_LOG_INFO && !rf_log_verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (use_syslog)
		syslog(prio[level], "%s", line);
	else
		fprintf(stderr, "raidfuse: %s\n", line);
}
