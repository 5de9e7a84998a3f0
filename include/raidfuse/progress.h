/* SPDX-License-Identifier: GPL-2.0-or-later */
/* progress.h - a progress line where a person waits for a long command.
 *
 *   struct rf_progress p;
 *   rf_progress_start(&p, stderr, "check", total_bytes);
 *   while (...) rf_progress_update(&p, done_bytes, total_bytes);
 *   rf_progress_end(&p, "mismatch_cnt 0");
 *
 * On a terminal, one line redrawn in place (\r) at most 10 times a second;
 * otherwise (a log, a pipe) a line every RF_PROGRESS_LINE_SECS seconds, so
 * logs stay short.  The line: what, percent, done / total, rate since
 * start, time left.  The command's real output goes elsewhere (stdout);
 * this writes only to the stream it was given.
 */
#ifndef RAIDFUSE_PROGRESS_H
#define RAIDFUSE_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RF_PROGRESS_LINE_SECS 5

struct rf_progress {
	FILE *out;
	bool tty;                       /* out is a terminal: redraw with \r */
	char what[48];
	uint64_t total, done;           /* bytes */
	uint64_t first;                 /* done at the first update (a resumed action) */
	double t0, last;                /* CLOCK_MONOTONIC seconds: start, last line */
	size_t width;                   /* length of the line on the terminal now */
	bool started;                   /* an update was seen */
};

/* Begin: nothing is printed yet.  total 0: not known yet. */
void rf_progress_start(struct rf_progress *p, FILE *out, const char *what, uint64_t total);

/* done of total bytes now (total 0: keep the one known); prints when due. */
void rf_progress_update(struct rf_progress *p, uint64_t done, uint64_t total);

/* The last line: the progress as it stands, then ": result" when result
 * is not NULL, and a newline. */
void rf_progress_end(struct rf_progress *p, const char *result);

/* The line itself, for a given state (rate_bps < 0: not known yet).
 * Returns its length, as snprintf. */
int rf_progress_format(char *buf, size_t len, const char *what, uint64_t done, uint64_t total, double rate_bps);

/* bytes as "512 B", "1.5 KiB", "2.0 GiB" ... into buf (16 bytes do). */
const char *rf_progress_bytes(uint64_t bytes, char *buf, size_t len);

#endif
