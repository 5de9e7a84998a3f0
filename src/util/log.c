/* SPDX-License-Identifier: GPL-2.0-or-later */
/* log.c - one line per message, to one sink: stderr ("raidfuse: "
 * prefixed), syslog, the systemd journal, or a file.
 *
 * The sink by default: stderr in the foreground and until the daemon has
 * detached, syslog once it has (rf_log_detached(), daemon.c).  --log
 * chooses another (rf_log_choose()): in the foreground it takes effect at
 * once, in a daemon once it detaches, so that what goes wrong while the
 * array opens still reaches the terminal of the command that waits.
 * stderr in a detached daemon is /dev/null: --log stderr there throws
 * the messages away, as asked.
 *
 * A file is opened when it is chosen (a path that cannot be opened is a
 * usage error at once, before anything is served), appended to with one
 * write() per line (O_APPEND: lines from different threads and processes
 * never mix), each line with the local time and the pid.  SIGHUP reopens
 * it by the same path (rf_log_reopen_on_hup()): logrotate moves the file
 * away, then signals.  The path is made absolute first (a daemon's
 * working directory is /).
 *
 * Thread-safe without a lock: each message is formatted into one buffer
 * and written with one call.  Debug messages cost one branch unless -v.
 * Messages say what, where and why (the member, the offset, the errno);
 * nothing here decides what is worth logging.  Lines longer than 1 KiB
 * are cut.  Only this file sees libsystemd's sd-journal.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "raidfuse/log.h"

int rf_log_verbose;

static enum rf_log_sink sink = RF_LOG_STDERR;   /* in effect */
static enum rf_log_sink chosen = RF_LOG_DEFAULT; /* by --log */
static int log_fd = -1;                          /* RF_LOG_FILE's */
static char log_path[PATH_MAX];

static void use(enum rf_log_sink s)
{
	if (s == RF_LOG_SYSLOG && sink != RF_LOG_SYSLOG)
		openlog("raidfuse", LOG_PID, LOG_DAEMON);
	sink = s;
}

void rf_log_to_syslog(bool on)
{
	use(on ? RF_LOG_SYSLOG : RF_LOG_STDERR);
}

static int open_log(const char *path)
{
	return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
}

int rf_log_choose(const char *spec, char *err, size_t errlen)
{
	char cwd[PATH_MAX];
	int fd;

	if (!strcmp(spec, "stderr")) {
		chosen = RF_LOG_STDERR;
	} else if (!strcmp(spec, "syslog")) {
		chosen = RF_LOG_SYSLOG;
	} else if (!strcmp(spec, "journal")) {
		chosen = RF_LOG_JOURNAL;
	} else {
		if (!*spec) {
			snprintf(err, errlen, "--log: expected FILE, stderr, syslog or journal");
			return -EINVAL;
		}
		if (spec[0] == '/') {
			if ((size_t)snprintf(log_path, sizeof(log_path), "%s", spec) >= sizeof(log_path))
				goto too_long;
		} else {
			if (!getcwd(cwd, sizeof(cwd)))
				goto too_long;
			if ((size_t)snprintf(log_path, sizeof(log_path), "%s/%s", cwd, spec) >= sizeof(log_path))
				goto too_long;
		}
		fd = open_log(log_path);
		if (fd < 0) {
			snprintf(err, errlen, "--log %s: cannot open it to append: %s", log_path, strerror(errno));
			return -errno;
		}
		if (log_fd >= 0)
			close(log_fd);
		log_fd = fd;
		chosen = RF_LOG_FILE;
	}
	return 0;
too_long:
	snprintf(err, errlen, "--log %s: path too long", spec);
	return -ENAMETOOLONG;
}

void rf_log_foreground(void)
{
	if (chosen != RF_LOG_DEFAULT)
		use(chosen);
}

void rf_log_detached(void)
{
	use(chosen == RF_LOG_DEFAULT ? RF_LOG_SYSLOG : chosen);
}

/* SIGHUP: the log file by its path again (open, dup2 and close are
 * async-signal-safe).  A path that cannot be opened keeps the old file. */
static void reopen(int sig)
{
	int saved = errno, fd = open_log(log_path);

	(void)sig;
	if (fd >= 0) {
		dup3(fd, log_fd, O_CLOEXEC);
		close(fd);
	}
	errno = saved;
}

void rf_log_reopen_on_hup(void)
{
	struct sigaction sa = { .sa_handler = reopen, .sa_flags = SA_RESTART };

	if (chosen != RF_LOG_FILE || log_fd < 0)
		return;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGHUP, &sa, NULL))
		rf_warn("--log %s: cannot reopen it on SIGHUP: %s", log_path, strerror(errno));
}

void rf_log(int level, const char *fmt, ...)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	static const char *const word[] = { "error", "warning", "info", "debug" };
	char line[1024], out[1024 + 96];
	struct tm tm;
	time_t now;
	va_list ap;
	int n;

	if (level > RF_LOG_INFO && !rf_log_verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	switch (sink) {
	case RF_LOG_SYSLOG:
		syslog(prio[level], "%s", line);
		break;
	case RF_LOG_JOURNAL:
		sd_journal_send("MESSAGE=%s", line, "PRIORITY=%d", prio[level], "SYSLOG_IDENTIFIER=raidfuse",
				NULL);
		break;
	case RF_LOG_FILE:
		now = time(NULL);
		localtime_r(&now, &tm);
		n = (int)strftime(out, sizeof(out), "%Y-%m-%d %H:%M:%S", &tm);
		n += snprintf(out + n, sizeof(out) - (size_t)n, " raidfuse[%d]: %s: %s\n", (int)getpid(),
			      word[level], line);
		if (n > (int)sizeof(out) - 1)
			n = (int)sizeof(out) - 1;
		if (write(log_fd, out, (size_t)n) < 0) {
			/* nowhere else to say it */
		}
		break;
	default:
		fprintf(stderr, "raidfuse: %s\n", line);
		break;
	}
}
