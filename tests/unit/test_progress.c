/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_progress.c - the progress line: sizes in binary units, percent,
 * rate and time left; a line per update on a stream that is not a
 * terminal only every RF_PROGRESS_LINE_SECS; the last line with its
 * result.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raidfuse/progress.h"

static void test_bytes(void **state)
{
	char b[16];

	assert_string_equal(rf_progress_bytes(0, b, sizeof(b)), "0 B");
	assert_string_equal(rf_progress_bytes(1023, b, sizeof(b)), "1023 B");
	assert_string_equal(rf_progress_bytes(1536, b, sizeof(b)), "1.5 KiB");
	assert_string_equal(rf_progress_bytes(3ull << 30, b, sizeof(b)), "3.0 GiB");
	assert_string_equal(rf_progress_bytes(UINT64_MAX, b, sizeof(b)), "16.0 EiB");
}

static void test_format(void **state)
{
	char line[160];

	rf_progress_format(line, sizeof(line), "check", 1ull << 29, 1ull << 30, -1);
	assert_string_equal(line, "check:  50.0%  512.0 MiB of 1.0 GiB");
	/* 512 MiB left at 1 MiB/s: 8:32 */
	rf_progress_format(line, sizeof(line), "check", 1ull << 29, 1ull << 30, 1 << 20);
	assert_string_equal(line, "check:  50.0%  512.0 MiB of 1.0 GiB  1.0 MiB/s  8:32 left");
	rf_progress_format(line, sizeof(line), "repair", 0, 1ull << 40, 1 << 20);
	assert_string_equal(line, "repair:   0.0%  0 B of 1.0 TiB  1.0 MiB/s  291:16:16 left");
	/* done past total (a total that shrank): 100% */
	rf_progress_format(line, sizeof(line), "x", 5, 4, -1);
	assert_string_equal(line, "x: 100.0%  4 B of 4 B");
	rf_progress_format(line, sizeof(line), "fill", 2048, 0, -1);
	assert_string_equal(line, "fill: 2.0 KiB");
}

static void test_lines(void **state)
{
	struct rf_progress p;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	rf_progress_start(&p, f, "check", 1000);
	assert_false(p.tty);
	for (int i = 0; i < 1000; i++)
		rf_progress_update(&p, (uint64_t)i, 0);
	fflush(f);
	assert_int_equal(len, 0);       /* not a terminal: not yet 5 s */
	rf_progress_end(&p, "mismatch_cnt 0");
	fclose(f);
	assert_string_equal(buf, "check:  99.9%  999 B of 1000 B: mismatch_cnt 0\n");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
