/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_notify.c - what the service manager is told: the status line is
 * mdstat's state ("raid5 [4/3] [U_UU]", read-only marked); with
 * $NOTIFY_SOCKET a datagram with READY=1 and STATUS when the array
 * serves (no MAINPID: this process is the one started), the new STATUS
 * within a period when a member fails, and STOPPING=1; without it
 * nothing at all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fixture.h"
#include "raidfuse/array.h"
#include "raidfuse/ctl.h"
#include "raidfuse/notify.h"

static struct rf_array *open5(const char *what, uint64_t missing, bool ro)
{
	const struct fx_array fa = { .what = what, .level = 5, .layout = 2, .n = 4, .chunk = 64 << 10,
				     .missing = missing };
	struct rf_config cfg;
	int i;

	for (i = 0; i < 4; i++) {
		char p[FX_PATH];

		fx_member_path(p, sizeof(p), what, i);
		fx_file_make(p, 4u << 20);
	}
	fx_config(&cfg, &fa);
	cfg.readonly = ro;
	return fx_open(&cfg, what, NULL);
}

static void test_status_line(void **state)
{
	struct rf_array *a;
	char line[256];

	a = open5("whole", 0, false);
	rf_notify_status_line(a, line, sizeof(line));
	assert_string_equal(line, "raid5 [4/4] [UUUU]");
	rf_array_close(a);
	a = open5("degraded", 1u << 1, true);
	rf_notify_status_line(a, line, sizeof(line));
	assert_string_equal(line, "raid5 [4/3] [U_UU] (read-only)");
	/* cut, still a string */
	rf_notify_status_line(a, line, 8);
	assert_string_equal(line, "raid5 [");
	rf_array_close(a);
}

/* A bound datagram socket at path; its fd. */
static int receiver(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* The next datagram within ms into buf; its length, or -1 for none. */
static int next_msg(int fd, char *buf, size_t size, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, ms) != 1)
		return -1;
	n = recv(fd, buf, size - 1, 0);
	assert_true(n >= 0);
	buf[n] = '\0';
	return (int)n;
}

static void test_protocol(void **state)
{
	struct rf_array *a = open5("notify", 0, false);
	char path[FX_PATH + 16], buf[512];
	int fd;

	snprintf(path, sizeof(path), "%s/notify.sock", fx_dir);
	fd = receiver(path);
	setenv("NOTIFY_SOCKET", path, 1);
	rf_notify_serving(a);
	assert_true(next_msg(fd, buf, sizeof(buf), 2000) > 0);
	assert_string_equal(buf, "READY=1\nSTATUS=raid5 [4/4] [UUUU]");
	/* a member fails: the new state within a period or two */
	assert_int_equal(rf_ctl_dev_store(rf_ctl_dev_find("state"), a, "notify-1.img", "faulty", 6), 0);
	assert_true(next_msg(fd, buf, sizeof(buf), 4 * RF_NOTIFY_PERIOD_MS) > 0);
	assert_string_equal(buf, "STATUS=raid5 [4/3] [U_UU]");
	/* nothing while nothing changes */
	assert_int_equal(next_msg(fd, buf, sizeof(buf), 3 * RF_NOTIFY_PERIOD_MS), -1);
	rf_notify_stopping();
	assert_true(next_msg(fd, buf, sizeof(buf), 2000) > 0);
	assert_non_null(strstr(buf, "STOPPING=1\n"));
	unsetenv("NOTIFY_SOCKET");
	rf_array_close(a);
	close(fd);
	unlink(path);
}

/* Without $NOTIFY_SOCKET: nothing, whatever happens. */
static void test_unset(void **state)
{
	struct rf_array *a = open5("quiet", 0, false);
	char path[FX_PATH + 16], buf[512];
	int fd;

	snprintf(path, sizeof(path), "%s/quiet.sock", fx_dir);
	fd = receiver(path);
	unsetenv("NOTIFY_SOCKET");
	rf_notify_serving(a);
	assert_int_equal(rf_ctl_dev_store(rf_ctl_dev_find("state"), a, "quiet-1.img", "faulty", 6), 0);
	rf_notify_stopping();
	assert_int_equal(next_msg(fd, buf, sizeof(buf), 3 * RF_NOTIFY_PERIOD_MS), -1);
	rf_array_close(a);
	close(fd);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_line),
		cmocka_unit_test(test_protocol),
		cmocka_unit_test(test_unset),
	};

	return fx_run_tests("notify", tests);
}
