/* SPDX-License-Identifier: GPL-2.0-or-later */
/* log.h - messages to stderr (foreground), syslog (daemon), the journal
 * or a file (--log). */
#ifndef RAIDFUSE_LOG_H
#define RAIDFUSE_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum rf_log_level { RF_LOG_ERR, RF_LOG_WARN, RF_LOG_INFO, RF_LOG_DEBUG };

enum rf_log_sink { RF_LOG_DEFAULT, RF_LOG_STDERR, RF_LOG_SYSLOG, RF_LOG_JOURNAL, RF_LOG_FILE };

extern int rf_log_verbose;
void rf_log_to_syslog(bool on);

/* --log SPEC: "stderr", "syslog", "journal", or a file to append to
 * (opened now, by its absolute path), in effect from rf_log_foreground()
 * or rf_log_detached() on.  0, or -errno with the message in err. */
int rf_log_choose(const char *spec, char *err, size_t errlen);

/* The daemon stays in the foreground: the sink chosen, at once. */
void rf_log_foreground(void);

/* The daemon has detached: the sink chosen, syslog if none was. */
void rf_log_detached(void);

/* With a log file: SIGHUP reopens it (after logrotate moved it).
 * Call after libfuse's handlers are set (they take SIGHUP to unmount). */
void rf_log_reopen_on_hup(void);

void rf_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define rf_err(...) rf_log(RF_LOG_ERR, __VA_ARGS__)
#define rf_warn(...) rf_log(RF_LOG_WARN, __VA_ARGS__)
#define rf_info(...) rf_log(RF_LOG_INFO, __VA_ARGS__)
#define rf_dbg(...) do { if (rf_log_verbose) rf_log(RF_LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
