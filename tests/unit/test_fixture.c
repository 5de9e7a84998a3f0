/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_fixture.c - the unit tests' own fixtures (fixture.c): a failing
 * run must replay from its printed seed, and member files must be what
 * the tests ask for.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fixture.h"

/* The same seed and tag, the same numbers; another tag, others. */
static void test_rng_replays(void **state)
{
	struct fx_rng a, b, c;
	uint8_t x[1000], y[1000];
	int i, same = 0;

	fx_rng_init(&a, 7);
	fx_rng_init(&b, 7);
	fx_rng_init(&c, 8);
	for (i = 0; i < 1000; i++) {
		uint64_t va = fx_rng_next(&a);

		assert_int_equal(va, fx_rng_next(&b));
		same += va == fx_rng_next(&c);
	}
	assert_int_equal(same, 0);
	fx_rand_restart(3);
	fx_rand_fill(x, sizeof(x));
	fx_rand_restart(3);
	fx_rand_fill(y, sizeof(y));
	assert_memory_equal(x, y, sizeof(x));
	for (i = 0, same = 0; i < (int)sizeof(x); i++)
		same += x[i] == 0;
	assert_true(same < 20);                 /* bytes, not zeros (1000/256 expected) */
}

/* RF_TEST_SEED sets the seed; another seed, another stream. */
static void test_seed_from_env(void **state)
{
	uint64_t saved = fx_seed, first;

	setenv("RF_TEST_SEED", "12345", 1);
	fx_seed_init();
	assert_int_equal(fx_seed, 12345);
	first = fx_rand();
	setenv("RF_TEST_SEED", "0x3039", 1);    /* the same number */
	fx_seed_init();
	assert_int_equal(fx_rand(), first);
	setenv("RF_TEST_SEED", "54321", 1);
	fx_seed_init();
	assert_int_not_equal(fx_rand(), first);
	unsetenv("RF_TEST_SEED");
	fx_seed = saved;
	fx_rand_restart(0);
}

/* The non-zero bytes among the first len of path. */
static int nonzero(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t k;
	int n = 0;

	assert_non_null(f);
	assert_int_equal(fread(buf, 1, len, f), len);
	fclose(f);
	for (k = 0; k < len; k++)
		n += buf[k] != 0;
	return n;
}

/* Members of the size asked, zeros or garbage, under fx_dir. */
static void test_members(void **state)
{
	char p[FX_PATH], buf[4096];
	struct stat st;
	int i;

	fx_make_members("z", 3, 65536, false);
	fx_make_members("g", 2, 8192, true);
	for (i = 0; i < 3; i++) {
		fx_member_path(p, sizeof(p), "z", i);
		assert_int_equal(strncmp(p, fx_dir, strlen(fx_dir)), 0);
		assert_int_equal(stat(p, &st), 0);
		assert_int_equal(st.st_size, 65536);
		assert_int_equal(nonzero(p, buf, sizeof(buf)), 0);
	}
	for (i = 0; i < 2; i++) {
		fx_member_path(p, sizeof(p), "g", i);
		assert_true(nonzero(p, buf, sizeof(buf)) > 4000);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rng_replays),
		cmocka_unit_test(test_seed_from_env),
		cmocka_unit_test(test_members),
	};

	return fx_run_tests("fixture", tests);
}
