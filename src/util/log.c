/* log.c - one line per message, "raidfuse: " prefixed on stderr, or syslog
 * once the daemon has detached.  Thread-safe: one write per line. */
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
