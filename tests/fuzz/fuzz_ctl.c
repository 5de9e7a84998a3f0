/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_ctl.c - libFuzzer harness for what the control files under md/
 * take (ctl_parse.h).
 *
 * Input: byte 0 picks the file (below), the rest is the bytes of one
 * write, as FUSE hands them to a store.  The write becomes a value
 * (rf_ctl_parse_value: one newline dropped, no NUL, at most a page) and
 * goes to that file's parser.  What one takes must print back to the same
 * text (numbers have one spelling, but for a leading '+' or zeros), and what
 * one refuses must leave its result untouched.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raidfuse/ctl.h"
#include "raidfuse/ctl_parse.h"
#include "raidfuse/sync.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

/* s, without one leading '+' and leading zeros (md's kstrto* base 10
 * takes both), is the decimal v. */
static void same_number(const char *s, unsigned long long v)
{
	char back[32];

	snprintf(back, sizeof(back), "%llu", v);
	s += *s == '+';
	while (s[0] == '0' && s[1])
		s++;
	check(!strcmp(s, back));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char val[RF_CTL_VALUE_MAX + 1];
	size_t vlen;
	int r;

	if (size < 1)
		return 0;
	r = rf_ctl_parse_value((const char *)data + 1, size - 1, val, sizeof(val), &vlen);
	check(vlen == size - 1 || (vlen == size - 2 && data[size - 1] == '\n'));
	if (r == -E2BIG) {
		check(vlen > RF_CTL_VALUE_MAX);
		return 0;
	}
	if (r) {
		check(r == -EINVAL && memchr(data + 1, '\0', vlen));
		return 0;
	}
	check(strlen(val) == vlen && !memcmp(val, data + 1, vlen));

	switch (data[0] % 9) {
	case 0: {       /* stripe_cache_size, group_thread_cnt, rmw_level, ... */
		int n = -1;

		if (!rf_ctl_parse_int(val, &n)) {
			check(n >= 0);
			same_number(val, (unsigned long long)n);
		} else {
			check(n == -1);
		}
		break;
	}
	case 1: {       /* array_state */
		enum rf_ctl_array_state st;

		if (!rf_ctl_parse_array_state(val, &st))
			check(!strcmp(val, st == RF_CTL_STATE_SUSPENDED ? "suspended" : "active"));
		break;
	}
	case 2: {       /* sync_action */
		int act = rf_ctl_parse_sync_action(val);

		if (act >= 0)
			check(!strcmp(rf_sync_action_name((enum rf_sync_action)act), val));
		else
			check(act == -EINVAL);
		break;
	}
	case 3: {       /* sync_speed_min, sync_speed_max */
		unsigned k = 12345;

		if (!rf_ctl_parse_speed(val, &k)) {
			if (strcmp(val, "system"))
				same_number(val, k);
			else
				check(k == 0);
			check(k <= INT_MAX);
		} else {
			check(k == 12345);
		}
		break;
	}
	case 4: {       /* resync_start */
		uint64_t n = 7;

		if (!rf_ctl_parse_sectors(val, &n)) {
			if (strcmp(val, "none")) {
				check(*val != '+');
				same_number(val, n);
			} else {
				check(n == UINT64_MAX);
			}
		} else {
			check(n == 7);
		}
		break;
	}
	case 5: {       /* dev-NAME/state */
		int w = -1;

		if (!rf_ctl_parse_dev_state(val, &w))
			check(w >= 0 && !strcmp(rf_ctl_dev_state_words[w], val));
		else
			check(w == -1);
		break;
	}
	case 6:         /* new_dev */
		r = rf_ctl_parse_path(val);
		check(r == 0 ? *val && vlen < PATH_MAX : r == -EINVAL ? !*val : r == -ENAMETOOLONG);
		break;
	case 7: {       /* rdN entries */
		char back[16];
		int slot = rf_ctl_parse_rd_slot(val, RF_MAX_DEVS);

		if (slot >= 0) {
			check(slot < RF_MAX_DEVS);
			snprintf(back, sizeof(back), "rd%d", slot);
			check(!strcmp(back, val));
		} else {
			check(slot == -1);
		}
		break;
	}
	case 8: {       /* component_size ("max"), array_size ("default"): KiB */
		const char *word = (data[0] / 9) & 1 ? "default" : "max";
		uint64_t k = 7;

		if (!rf_ctl_parse_kib(val, word, &k)) {
			if (strcmp(val, word)) {
				check(*val != '+' && k <= UINT64_MAX / 2048);
				same_number(val, k);
			} else {
				check(k == UINT64_MAX);
			}
		} else {
			check(k == 7);
		}
		break;
	}
	}
	return 0;
}
