/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ctl_parse.c - parsing of control-file values, apart from the array.
 *
 * md's stores parse with kstrto*() and sysfs_streq(): one trailing newline
 * is part of every echo, a second one or a blank is not.  These functions
 * keep to that, so scripts written for /sys/block/mdX/md work unchanged,
 * and refuse everything else before the engine is asked to change
 * anything (ctl.c logs the refusal with the attribute's name).
 *
 * Invariants: pure functions of their input (no allocation, no global
 * state, no errno left behind); a refusal leaves the out-parameter as it
 * was.  What it does NOT do: range checks that depend on the array (the
 * engine's setters do those), or look at files (new_dev's path is only
 * checked to be a path; opening it is the engine's).
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "raidfuse/ctl_parse.h"
#include "raidfuse/sync.h"

int rf_ctl_parse_value(const char *buf, size_t len, char *val, size_t size, size_t *vlen)
{
	if (len && buf[len - 1] == '\n')
		len--;
	*vlen = len;
	if (!size || len > size - 1)
		return -E2BIG;
	if (memchr(buf, '\0', len))
		return -EINVAL;
	memcpy(val, buf, len);
	val[len] = '\0';
	return 0;
}

int rf_ctl_parse_int(const char *s, int *out)
{
	long long v = 0;

	if (*s == '+')
		s++;
	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		v = v * 10 + (*s - '0');
		if (v > INT_MAX)
			return -EINVAL;
	}
	*out = (int)v;
	return 0;
}

int rf_ctl_parse_array_state(const char *s, enum rf_ctl_array_state *out)
{
	if (!strcmp(s, "suspended"))
		*out = RF_CTL_STATE_SUSPENDED;
	else if (!strcmp(s, "active"))
		*out = RF_CTL_STATE_ACTIVE;
	else
		return -EINVAL;
	return 0;
}

int rf_ctl_parse_sync_action(const char *s)
{
	/* rf_sync_action_parse() drops a newline of its own */
	if (strchr(s, '\n'))
		return -EINVAL;
	return rf_sync_action_parse(s);
}

int rf_ctl_parse_speed(const char *s, unsigned *kibs)
{
	int n = 0;

	if (strcmp(s, "system") && rf_ctl_parse_int(s, &n))
		return -EINVAL;
	*kibs = (unsigned)n;
	return 0;
}

int rf_ctl_parse_sectors(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!strcmp(s, "none")) {
		*out = UINT64_MAX;
		return 0;
	}
	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

int rf_ctl_parse_kib(const char *s, const char *word, uint64_t *out)
{
	uint64_t v;

	if (!strcmp(s, word)) {
		*out = UINT64_MAX;
		return 0;
	}
	if (!strcmp(s, "none") || rf_ctl_parse_sectors(s, &v) || v > UINT64_MAX / 1024 / 2)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Seconds with at most `decimals` decimals (1..4), as md's
 * strict_strtoul_scaled() takes them, into whole ms; at most a day. */
static int parse_seconds(const char *s, int decimals, unsigned *ms)
{
	uint64_t v = 0;         /* 1/10000 s */
	int digits = 0;

	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > 86400)
			return -EINVAL;
	}
	v *= 10000;
	if (*s == '.') {
		uint64_t scale = 1000;

		for (s++; *s >= '0' && *s <= '9' && decimals > 0; s++, decimals--, digits++) {
			v += (uint64_t)(*s - '0') * scale;
			scale /= 10;
		}
	}
	if (*s || !digits || v > 86400ull * 10000)
		return -EINVAL;
	*ms = (unsigned)(v / 10);
	return 0;
}

int rf_ctl_parse_time_base(const char *s, unsigned *ms)
{
	return parse_seconds(s, 4, ms);
}

int rf_ctl_parse_safe_mode_delay(const char *s, unsigned *ms)
{
	return parse_seconds(s, 3, ms);
}

const char *const rf_ctl_dev_state_words[] = {
	"faulty", "remove", "re-add", "-faulty", "writemostly", "-writemostly", "failfast", "-failfast",
	"want_replacement", "-want_replacement", NULL
};

int rf_ctl_parse_dev_state(const char *s, int *word)
{
	int i;

	for (i = 0; rf_ctl_dev_state_words[i]; i++) {
		if (!strcmp(s, rf_ctl_dev_state_words[i])) {
			*word = i;
			return 0;
		}
	}
	return -EINVAL;
}

int rf_ctl_parse_path(const char *s)
{
	if (!*s)
		return -EINVAL;
	if (strnlen(s, PATH_MAX) >= PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int rf_ctl_parse_rd_slot(const char *entry, int max)
{
	int n;

	if (strncmp(entry, "rd", 2) || entry[2] < '0' || entry[2] > '9' || (entry[2] == '0' && entry[3]))
		return -1;
	return rf_ctl_parse_int(entry + 2, &n) || n >= max ? -1 : n;
}
