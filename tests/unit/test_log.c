/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_log.c - the log's sinks: --log FILE appends one line per message
 * (time, pid, level, text) once in effect, not before; SIGHUP reopens the
 * file by its path after it was moved away (logrotate); a FILE that cannot
 * be opened is refused, naming it; unknown sink words are files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raidfuse/log.h"

static char dir[] = "/tmp/rf-log-XXXXXX";

static char *slurp(const char *path)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n;

	buf[0] = '\0';
	if (!f)
		return buf;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void test_file_and_hup(void **state)
{
	char path[128], moved[128], err[256], *s;

	snprintf(path, sizeof(path), "%s/r.log", dir);
	snprintf(moved, sizeof(moved), "%s/r.log.1", dir);
	assert_int_equal(rf_log_choose(path, err, sizeof(err)), 0);
	/* not yet in effect: a daemon's log goes to the terminal until it
	 * detaches */
	rf_warn("before %d", 1);
	assert_string_equal(slurp(path), "");
	rf_log_foreground();
	rf_err("member 1 (d1.img): write at %d: %s", 4096, strerror(EIO));
	s = slurp(path);
	assert_non_null(strstr(s, " raidfuse["));
	assert_non_null(strstr(s, "]: error: member 1 (d1.img): write at 4096: Input/output error\n"));
	assert_null(strstr(s, "before"));
	/* logrotate: moved, then SIGHUP; the next line goes to a new file */
	assert_int_equal(rename(path, moved), 0);
	rf_log_reopen_on_hup();
	assert_int_equal(raise(SIGHUP), 0);
	rf_info("after %s", "rotation");
	assert_non_null(strstr(slurp(path), "]: info: after rotation\n"));
	assert_null(strstr(slurp(moved), "after rotation"));
	unlink(path);
	unlink(moved);
	signal(SIGHUP, SIG_DFL);
}

static void test_bad_file(void **state)
{
	char path[128], err[256];

	snprintf(path, sizeof(path), "%s/no/such/dir/x.log", dir);
	assert_int_equal(rf_log_choose(path, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, path));
	assert_int_equal(rf_log_choose("", err, sizeof(err)), -EINVAL);
}

static void test_words(void **state)
{
	char err[256];

	assert_int_equal(rf_log_choose("stderr", err, sizeof(err)), 0);
	assert_int_equal(rf_log_choose("syslog", err, sizeof(err)), 0);
	assert_int_equal(rf_log_choose("journal", err, sizeof(err)), 0);
	rf_log_choose("stderr", err, sizeof(err));
	rf_log_foreground();
}

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_and_hup),
		cmocka_unit_test(test_bad_file),
		cmocka_unit_test(test_words),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
