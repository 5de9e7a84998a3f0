/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_dev.c - the device table (core/dev.c).
 *
 * A device moves with everything it holds: rf_dev_swap() trades every
 * field (backend, path, data offset, superblock, the bitmap's place) and
 * tells every registered service of both places through dev_changed.
 * The member IO queues read a slot's backend in the table itself, so a
 * swap is what they see next, with no copy to refresh.  One open for
 * every device: a file already in the table is refused, by the message
 * of a member at array open ("the same file twice") or of a spare
 * ("already in the array"), and nothing stays open.  One flush over the
 * table: a device whose flush fails is failed (a slot's member in the
 * faulty mask, a spare by its flag), with a negative control that a
 * device with nothing to flush is left alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/engine.h"
#include "fixture.h"

#define MEMBER_BYTES (1u << 20)

/* A raid1 of 2 over members what-0 and what-1 plus a spare what-2, not
 * started (no threads: the table may be edited by hand). */
static struct rf_array *open_with_spare(const char *what)
{
	const struct fx_array fa = { .what = what, .level = 1, .n = 2 };
	struct rf_config cfg;
	char sp[FX_PATH];

	fx_make_members(what, 3, MEMBER_BYTES, false);
	fx_config(&cfg, &fa);
	fx_member_path(sp, sizeof(sp), what, 2);
	cfg.spares[0] = strdup(sp);
	cfg.nspares = 1;
	return fx_open_only(&cfg, what);
}

static int changed[8], nchanged;

static void note_changed(void *priv, int dev)
{
	(void)priv;
	if (nchanged < 8)
		changed[nchanged++] = dev;
}

static const struct rf_hooks watch_hooks = { .name = "test", .dev_changed = note_changed };

static void test_swap_moves_everything(void **state)
{
	struct rf_array *a = open_with_spare("swap");
	struct rf_ioq q;
	int fd0, fd2;

	(void)state;
	assert_int_equal(rf_devs_count(a), 3);
	assert_int_equal(rf_array_add_hooks(a, &watch_hooks, NULL), 0);
	assert_int_equal(rf_ioq_init_sync(&q, rf_devs_ioq(a), 4), 0);
	fd0 = rf_dev_get(a, 0)->io.fd;
	fd2 = rf_dev_get(a, 2)->io.fd;
	rf_dev_get(a, 0)->data_offset = 4096;
	rf_dev_get(a, 2)->data_offset = 8192;
	rf_dev_get(a, 2)->sb_has = true;
	rf_dev_get(a, 2)->sb.events = 42;
	rf_dev_get(a, 2)->bm_at = 12345;
	assert_int_equal(rf_ioq_dev(&q, 0)->fd, fd0);
	nchanged = 0;
	rf_dev_swap(a, 0, 2);
	/* Both places were told, once each. */
	assert_int_equal(nchanged, 2);
	assert_true((changed[0] == 0 && changed[1] == 2) || (changed[0] == 2 && changed[1] == 0));
	/* Everything moved with the device. */
	assert_int_equal(rf_dev_get(a, 0)->io.fd, fd2);
	assert_int_equal(rf_dev_get(a, 0)->data_offset, 8192);
	assert_true(rf_dev_get(a, 0)->sb_has);
	assert_int_equal(rf_dev_get(a, 0)->sb.events, 42);
	assert_int_equal(rf_dev_get(a, 0)->bm_at, 12345);
	assert_non_null(strstr(rf_dev_get(a, 0)->path, "swap-2.img"));
	assert_int_equal(rf_dev_get(a, 2)->io.fd, fd0);
	assert_int_equal(rf_dev_get(a, 2)->data_offset, 4096);
	assert_false(rf_dev_get(a, 2)->sb_has);
	/* The queue reads slot 0's backend where it is: the new device. */
	assert_int_equal(rf_ioq_dev(&q, 0)->fd, fd2);
	rf_ioq_destroy(&q);
	rf_dev_get(a, 0)->sb_has = rf_dev_get(a, 2)->sb_has = false;
	rf_array_close(a);
}

static void test_open_refuses_one_file_twice(void **state)
{
	struct rf_array *a = open_with_spare("twice");
	char path[FX_PATH], err[1024];
	struct rf_dev d;
	int before = rf_devs_count(a);

	(void)state;
	fx_member_path(path, sizeof(path), "twice", 1);
	/* A spare (not in the table yet) that is member 1. */
	rf_dev_init(&d);
	assert_int_equal(rf_dev_open_into(a, &d, path, path, false, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "already in the array"));
	assert_int_equal(d.io.fd, -1);
	/* A member of the table at open: named as a member. */
	rf_dev_init(&d);
	assert_int_equal(rf_dev_open_into(a, rf_dev_get(a, 2), path, "member 2 (x)", false, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "same file twice"));
	assert_int_equal(rf_devs_count(a), before);
	/* Negative control: a file not in the array opens, sized. */
	fx_member_path(path, sizeof(path), "twice", 7);
	fx_file_make(path, MEMBER_BYTES + 4096);
	rf_dev_init(&d);
	assert_int_equal(rf_dev_open_into(a, &d, path, path, false, err, sizeof(err)), 0);
	assert_true(d.io.fd >= 0);
	assert_int_equal(d.size, MEMBER_BYTES + 4096);
	rf_dev_release(&d);
	assert_int_equal(d.io.fd, -1);
	rf_array_close(a);
}

static int nr_fsync;

static int failing_fsync(void *ctx)
{
	(void)ctx;
	nr_fsync++;
	return -EIO;
}

static void test_flush_fails_the_device(void **state)
{
	struct rf_array *a = open_with_spare("flush");

	(void)state;
	nr_fsync = 0;
	/* Only slot 1 and the spare have a superblock to flush. */
	rf_dev_get(a, 1)->sb_has = true;
	rf_dev_get(a, 1)->sb_io.fsync = failing_fsync;
	rf_dev_get(a, 2)->sb_has = true;
	rf_dev_get(a, 2)->sb_io.fsync = failing_fsync;
	rf_devs_lock(a);
	rf_devs_flush(a, true, "in a test");
	rf_devs_unlock(a);
	/* slots_only: slot 1 failed, the spare not even asked. */
	assert_int_equal(nr_fsync, 1);
	assert_int_equal(rf_array_faulty(a), 1u << 1);
	assert_false(rf_dev_get(a, 2)->flags & RF_DEV_FAULTY);
	rf_devs_lock(a);
	rf_devs_flush(a, false, "in a test");
	rf_devs_unlock(a);
	/* Every device: slot 1 is faulty now (skipped), the spare fails by
	 * its flag; slot 0 (nothing to flush) is left alone. */
	assert_int_equal(nr_fsync, 2);
	assert_true(rf_dev_get(a, 2)->flags & RF_DEV_FAULTY);
	assert_int_equal(rf_array_faulty(a), 1u << 1);
	rf_dev_get(a, 1)->sb_has = rf_dev_get(a, 2)->sb_has = false;
	rf_array_close(a);
}

/* md's rule: failfast IO goes to a device only while the array could
 * lose it.  raid1 of three, members 1 and 2 failfast. */
static void test_failfast_spares_the_last_copy(void **state)
{
	struct fx_array sp = { .what = "ffast", .level = 1, .n = 3 };
	struct rf_config cfg;
	struct rf_array *a;

	(void)state;
	fx_make_members("ffast", 3, MEMBER_BYTES, false);
	fx_config(&cfg, &sp);
	cfg.failfast = 1u << 1 | 1u << 2;
	a = fx_open_only(&cfg, "ffast");
	assert_true(rf_dev_get(a, 1)->flags & RF_DEV_FAILFAST);
	/* Negative control: with every copy there, both are failfast, the
	 * member not named is not. */
	assert_int_equal(rf_dev_get(a, 0)->io.failfast, 0);
	assert_int_equal(rf_dev_get(a, 1)->io.failfast, 1);
	assert_int_equal(rf_dev_get(a, 2)->io.failfast, 1);
	/* One copy gone: two are left, each could still be lost. */
	rf_member_fail(a, 0, -EIO, "read", 0);
	assert_int_equal(rf_dev_get(a, 1)->io.failfast, 1);
	assert_int_equal(rf_dev_get(a, 2)->io.failfast, 1);
	/* The last copy is not failfast, though it stays flagged (md shows
	 * the flag and keeps it in the superblock). */
	rf_member_fail(a, 1, -EIO, "read", 0);
	assert_int_equal(rf_dev_get(a, 2)->io.failfast, 0);
	assert_true(rf_dev_get(a, 2)->flags & RF_DEV_FAILFAST);
	rf_array_close(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_swap_moves_everything),
		cmocka_unit_test(test_open_refuses_one_file_twice),
		cmocka_unit_test(test_flush_fails_the_device),
		cmocka_unit_test(test_failfast_spares_the_last_copy),
	};

	return fx_run_tests("dev", tests);
}
