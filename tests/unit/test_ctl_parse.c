/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_ctl_parse.c - the control files' value parsers (ctl_parse.c)
 * without an array: what each takes, what each refuses, and that a
 * refusal leaves the result alone.
 *
 * Regression: md/sync_action took "frozen" with two trailing newlines
 * (the value lost one, rf_sync_action_parse() dropped the second), where
 * every other file refuses a second newline as md does.  Found by
 * tests/fuzz/fuzz_ctl (corpus/ctl/regress-sync_action-two-newlines).
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "raidfuse/ctl_parse.h"
#include "raidfuse/sync.h"

static void test_value(void **state)
{
	char val[8];
	size_t n;

	assert_int_equal(rf_ctl_parse_value("512\n", 4, val, sizeof(val), &n), 0);
	assert_string_equal(val, "512");
	assert_int_equal(n, 3);
	/* only one newline goes */
	assert_int_equal(rf_ctl_parse_value("5\n\n", 3, val, sizeof(val), &n), 0);
	assert_string_equal(val, "5\n");
	assert_int_equal(rf_ctl_parse_value("1234567\n", 8, val, sizeof(val), &n), 0);
	assert_int_equal(rf_ctl_parse_value("12345678", 8, val, sizeof(val), &n), -E2BIG);
	assert_int_equal(n, 8);
	assert_int_equal(rf_ctl_parse_value("1\0002", 3, val, sizeof(val), &n), -EINVAL);
	assert_int_equal(rf_ctl_parse_value("", 0, val, sizeof(val), &n), 0);
	assert_string_equal(val, "");
}

static void test_numbers(void **state)
{
	int n = -1;
	unsigned k = 9;
	uint64_t s = 9;

	assert_int_equal(rf_ctl_parse_int("+17", &n), 0);
	assert_int_equal(n, 17);
	assert_int_equal(rf_ctl_parse_int("0500", &n), 0);       /* base 10, as md's kstrtoint(.., 10, ..) */
	assert_int_equal(n, 500);
	assert_int_equal(rf_ctl_parse_int("2147483647", &n), 0);
	n = -1;
	assert_int_equal(rf_ctl_parse_int("2147483648", &n), -EINVAL);
	assert_int_equal(rf_ctl_parse_int("-1", &n), -EINVAL);
	assert_int_equal(rf_ctl_parse_int("+", &n), -EINVAL);
	assert_int_equal(rf_ctl_parse_int("1 ", &n), -EINVAL);
	assert_int_equal(rf_ctl_parse_int("1\n", &n), -EINVAL);
	assert_int_equal(n, -1);
	assert_int_equal(rf_ctl_parse_speed("system", &k), 0);
	assert_int_equal(k, 0);
	assert_int_equal(rf_ctl_parse_speed("1000", &k), 0);
	assert_int_equal(k, 1000);
	assert_int_equal(rf_ctl_parse_speed("System", &k), -EINVAL);
	assert_int_equal(k, 1000);
	assert_int_equal(rf_ctl_parse_sectors("none", &s), 0);
	assert_true(s == UINT64_MAX);
	assert_int_equal(rf_ctl_parse_sectors("18446744073709551614", &s), 0);
	assert_true(s == UINT64_MAX - 1);
	assert_int_equal(rf_ctl_parse_sectors("18446744073709551616", &s), -EINVAL);
	assert_int_equal(rf_ctl_parse_sectors("+1", &s), -EINVAL);
	assert_int_equal(rf_ctl_parse_sectors("", &s), -EINVAL);
	assert_true(s == UINT64_MAX - 1);
	/* md/component_size, md/array_size: KiB, or their word */
	assert_int_equal(rf_ctl_parse_kib("max", "max", &s), 0);
	assert_true(s == UINT64_MAX);
	assert_int_equal(rf_ctl_parse_kib("65536", "max", &s), 0);
	assert_true(s == 65536);
	assert_int_equal(rf_ctl_parse_kib("0", "default", &s), 0);
	assert_true(s == 0);
	assert_int_equal(rf_ctl_parse_kib("9007199254740991", "max", &s), 0);
	assert_int_equal(rf_ctl_parse_kib("9007199254740992", "max", &s), -EINVAL);
	assert_int_equal(rf_ctl_parse_kib("default", "max", &s), -EINVAL);
	assert_int_equal(rf_ctl_parse_kib("none", "max", &s), -EINVAL);
	assert_int_equal(rf_ctl_parse_kib("64K", "max", &s), -EINVAL);
	assert_int_equal(rf_ctl_parse_kib("", "max", &s), -EINVAL);
	assert_true(s == 9007199254740991ull);
	/* md/bitmap/time_base: seconds with up to 4 decimals, into ms */
	assert_int_equal(rf_ctl_parse_time_base("5", &k), 0);
	assert_int_equal(k, 5000);
	assert_int_equal(rf_ctl_parse_time_base("0.5", &k), 0);
	assert_int_equal(k, 500);
	assert_int_equal(rf_ctl_parse_time_base(".25", &k), 0);
	assert_int_equal(k, 250);
	assert_int_equal(rf_ctl_parse_time_base("1.", &k), 0);
	assert_int_equal(k, 1000);
	assert_int_equal(rf_ctl_parse_time_base("0.0009", &k), 0);
	assert_int_equal(k, 0);
	assert_int_equal(rf_ctl_parse_time_base("86400", &k), 0);
	assert_int_equal(k, 86400000);
	k = 7;
	assert_int_equal(rf_ctl_parse_time_base("0.00001", &k), -EINVAL);
	assert_int_equal(rf_ctl_parse_time_base("86400.1", &k), -EINVAL);
	assert_int_equal(rf_ctl_parse_time_base("", &k), -EINVAL);
	assert_int_equal(rf_ctl_parse_time_base(".", &k), -EINVAL);
	assert_int_equal(rf_ctl_parse_time_base("-1", &k), -EINVAL);
	assert_int_equal(rf_ctl_parse_time_base("1s", &k), -EINVAL);
	assert_int_equal(k, 7);
	/* md/safe_mode_delay: seconds with up to 3 decimals, into ms */
	assert_int_equal(rf_ctl_parse_safe_mode_delay("0.200", &k), 0);
	assert_int_equal(k, 200);
	assert_int_equal(rf_ctl_parse_safe_mode_delay("0", &k), 0);
	assert_int_equal(k, 0);
	assert_int_equal(rf_ctl_parse_safe_mode_delay("2.5", &k), 0);
	assert_int_equal(k, 2500);
	k = 9;
	assert_int_equal(rf_ctl_parse_safe_mode_delay("0.0005", &k), -EINVAL);
	assert_int_equal(rf_ctl_parse_safe_mode_delay("200ms", &k), -EINVAL);
	assert_int_equal(rf_ctl_parse_safe_mode_delay("86401", &k), -EINVAL);
	assert_int_equal(k, 9);
}

static void test_words(void **state)
{
	enum rf_ctl_array_state st;
	int w = -1;

	assert_int_equal(rf_ctl_parse_array_state("suspended", &st), 0);
	assert_int_equal(st, RF_CTL_STATE_SUSPENDED);
	assert_int_equal(rf_ctl_parse_array_state("active", &st), 0);
	assert_int_equal(st, RF_CTL_STATE_ACTIVE);
	assert_int_equal(rf_ctl_parse_array_state("clean", &st), -EINVAL);
	assert_int_equal(rf_ctl_parse_dev_state("-writemostly", &w), 0);
	assert_string_equal(rf_ctl_dev_state_words[w], "-writemostly");
	assert_int_equal(rf_ctl_parse_dev_state("failfast", &w), 0);
	assert_string_equal(rf_ctl_dev_state_words[w], "failfast");
	assert_int_equal(rf_ctl_parse_dev_state("-failfast", &w), 0);
	assert_string_equal(rf_ctl_dev_state_words[w], "-failfast");
	w = -1;
	assert_int_equal(rf_ctl_parse_dev_state("faulty\n", &w), -EINVAL);
	assert_int_equal(rf_ctl_parse_dev_state("in_sync", &w), -EINVAL);
	assert_int_equal(w, -1);
	assert_int_equal(rf_ctl_parse_path(""), -EINVAL);
	assert_int_equal(rf_ctl_parse_path("/dev/shm/spare.img"), 0);
	{
		static char longp[PATH_MAX + 2];

		memset(longp, 'a', PATH_MAX);
		assert_int_equal(rf_ctl_parse_path(longp), -ENAMETOOLONG);
	}
	assert_int_equal(rf_ctl_parse_rd_slot("rd0", 128), 0);
	assert_int_equal(rf_ctl_parse_rd_slot("rd127", 128), 127);
	assert_int_equal(rf_ctl_parse_rd_slot("rd128", 128), -1);
	assert_int_equal(rf_ctl_parse_rd_slot("rd01", 128), -1);
	assert_int_equal(rf_ctl_parse_rd_slot("rd+1", 128), -1);
	assert_int_equal(rf_ctl_parse_rd_slot("dev-x", 128), -1);
}

/* The regression: one newline is the echo's, a second one is refused. */
static void test_sync_action(void **state)
{
	assert_int_equal(rf_ctl_parse_sync_action("frozen"), RF_SYNC_FROZEN);
	assert_int_equal(rf_ctl_parse_sync_action("check"), RF_SYNC_CHECK);
	assert_int_equal(rf_ctl_parse_sync_action("frozen\n"), -EINVAL);
	assert_int_equal(rf_ctl_parse_sync_action("check\n"), -EINVAL);
	assert_int_equal(rf_ctl_parse_sync_action("chec"), -EINVAL);
	assert_int_equal(rf_ctl_parse_sync_action(""), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_value),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_words),
		cmocka_unit_test(test_sync_action),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
