/* SPDX-License-Identifier: GPL-2.0-or-later */
/* log.h - messages to stderr (foreground) or syslog (daemon). */
#ifndef RAIDFUSE_LOG_H
#define RAIDFUSE_LOG_H

#include <stdbool.h>

enum rf_log_level { RF_LOG_ERR, RF_LOG_WARN, RF_LOG_INFO, RF_LOG_DEBUG };

extern int rf_log_verbose;
void rf_log_to_syslog(bool on);
void rf_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define rf_err(...) rf_log(RF_LOG_ERR, __VA_ARGS__)
#define rf_warn(...) rf_log(RF_LOG_WARN, __VA_ARGS__)
#define rf_info(...) rf_log(RF_LOG_INFO, __VA_ARGS__)
#define rf_dbg(...) do { if (rf_log_verbose) rf_log(RF_LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
