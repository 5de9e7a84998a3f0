/* SPDX-License-Identifier: GPL-2.0-or-later */
/* progress.c - the progress line of long commands (progress.h).
 *
 * Purpose: one place that decides how progress looks and how often it is
 * drawn, so every command a person waits for (ctl check/repair --wait
 * now; create, should it ever fill large members) reads alike.
 *
 * Invariants: on a terminal the line is redrawn in place, padded over
 * what the previous one left, and ends with exactly one newline at
 * rf_progress_end(); elsewhere each line is a whole line.  The rate is
 * measured from the first update, so an action that resumed half-way is
 * not credited with the half it did before.
 *
 * What it does NOT do: read the array (callers pass bytes done and
 * total), sleep, or handle terminal resizing (a line is kept short, under
 * 80 columns).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/progress.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

const char *rf_progress_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

int rf_progress_format(char *buf, size_t len, const char *what, uint64_t done, uint64_t total, double rate_bps)
{
	char d[16], t[16], r[16], eta[24] = "";
	int n;

	if (total && done > total)
		done = total;
	rf_progress_bytes(done, d, sizeof(d));
	if (!total)
		return snprintf(buf, len, "%s: %s", what, d);
	rf_progress_bytes(total, t, sizeof(t));
	n = snprintf(buf, len, "%s: %5.1f%%  %s of %s", what, done * 100.0 / total, d, t);
	if (rate_bps > 0 && n >= 0 && (size_t)n < len) {
		double left = (double)(total - done) / rate_bps;
		unsigned long s = left < 1e7 ? (unsigned long)(left + 0.5) : 9999999ul;

		if (s >= 3600)
			snprintf(eta, sizeof(eta), "%lu:%02lu:%02lu", s / 3600, s / 60 % 60, s % 60);
		else
			snprintf(eta, sizeof(eta), "%lu:%02lu", s / 60, s % 60);
		rf_progress_bytes((uint64_t)rate_bps, r, sizeof(r));
		n += snprintf(buf + n, len - (size_t)n, "  %s/s  %s left", r, eta);
	}
	return n;
}

void rf_progress_start(struct rf_progress *p, FILE *out, const char *what, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->out = out;
	p->tty = isatty(fileno(out));
	snprintf(p->what, sizeof(p->what), "%s", what);
	p->total = total;
	p->t0 = p->last = now();
}

static void draw(struct rf_progress *p, double t, const char *result)
{
	char line[160];
	double rate = -1;
	size_t n;

	/* the last line: how far it got, no time left */
	if (!result && t - p->t0 >= 0.5 && p->done > p->first)
		rate = (double)(p->done - p->first) / (t - p->t0);
	rf_progress_format(line, sizeof(line), p->what, p->done, p->total, rate);
	n = strlen(line);
	if (result)
		snprintf(line + n, sizeof(line) - n, ": %s", result);
	n = strlen(line);
	if (p->tty) {
		fprintf(p->out, "\r%s", line);
		/* blank out what a longer line before left */
		if (p->width > n)
			fprintf(p->out, "%*s", (int)(p->width - n), "");
		p->width = n;
		if (result)
			fputc('\n', p->out);
	} else {
		fprintf(p->out, "%s\n", line);
	}
	fflush(p->out);
	p->last = t;
}

void rf_progress_update(struct rf_progress *p, uint64_t done, uint64_t total)
{
	double t = now();

	if (total)
		p->total = total;
	if (!p->started) {
		p->started = true;
		p->first = done;
		p->t0 = t;
	}
	p->done = done;
	if (p->tty ? t - p->last >= 0.1 : t - p->last >= RF_PROGRESS_LINE_SECS)
		draw(p, t, NULL);
}

void rf_progress_end(struct rf_progress *p, const char *result)
{
	draw(p, now(), result ? result : "done");
}
