/* SPDX-License-Identifier: GPL-2.0-or-later */
/* size.c - sizes as people write them: "512K", "1G", "8s", "2048".
 *
 * What it does NOT do: know what the size is of (the config, the command
 * line and the fault specs each check their own bounds).
 */
#include <errno.h>
#include <stdint.h>

#include "raidfuse/util.h"

/* Digits, then at most one suffix letter; no sign, no spaces.  A
 * default_unit of 0 makes the suffix mandatory.  *out is untouched on error. */
int rf_parse_size(const char *s, uint64_t default_unit, uint64_t *out)
{
	uint64_t v = 0, unit;
	const char *p = s;

	if (!s || *p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++)
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
			return -EINVAL;
	switch (*p) {
	case '\0':           unit = default_unit; break;
	case 's': case 'S':  unit = 512ULL; break;
	case 'k': case 'K':  unit = 1ULL << 10; break;
	case 'm': case 'M':  unit = 1ULL << 20; break;
	case 'g': case 'G':  unit = 1ULL << 30; break;
	case 't': case 'T':  unit = 1ULL << 40; break;
	default:             return -EINVAL;
	}
	if (*p && p[1])
		return -EINVAL;
	if (!unit || __builtin_mul_overflow(v, unit, &v))
		return -EINVAL;
	*out = v;
	return 0;
}
