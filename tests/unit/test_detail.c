/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_detail.c - mdadm's judgement of an array's state from its control
 * files (detail.c): enough() by level, the State line and list's word,
 * the exit status, and the mdadm.conf ARRAY line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "raidfuse/detail.h"

/* mask: 'U' an in-sync member in that slot, '_' none. */
static bool enough(int level, int layout, const char *mask)
{
	bool a[64] = { false };
	size_t i;

	for (i = 0; mask[i]; i++)
		a[i] = mask[i] == 'U';
	return rf_detail_enough(level, layout, (int)strlen(mask), a);
}

static void test_enough(void **state)
{
	assert_true(enough(0, 0, "UUU"));
	assert_false(enough(0, 0, "U_U"));
	assert_true(enough(1, 0, "_U_"));
	assert_false(enough(1, 0, "___"));
	assert_true(enough(5, 2, "U_UU"));
	assert_false(enough(5, 2, "U__U"));
	assert_true(enough(4, 0, "_UU"));
	assert_true(enough(6, 2, "U__U"));
	assert_false(enough(6, 2, "U___"));
	/* raid10 near=2 on 4: slots 0,1 hold one copy set, 2,3 the other */
	assert_true(enough(10, 0x102, "U_U_"));
	assert_true(enough(10, 0x102, "_UU_"));
	assert_false(enough(10, 0x102, "__UU"));
	assert_false(enough(10, 0x102, "UU__"));
	/* near=2 on 3 members: the copy sets wrap (0-1, 2-0, 1-2): any
	 * two left serve, one alone does not */
	assert_true(enough(10, 0x102, "UU_"));
	assert_true(enough(10, 0x102, "_UU"));
	assert_false(enough(10, 0x102, "U__"));
	assert_false(enough(10, 0x102, "_U_"));
	/* far=2 on 4: each slot's copies are on it and the next one */
	assert_true(enough(10, 0x201, "U_U_"));
	assert_true(enough(10, 0x201, "_U_U"));
	assert_false(enough(10, 0x201, "UU__"));
	assert_false(enough(10, 0x201, "U__U"));
}

static struct rf_detail *raid5(int ndevs, const char *mask)
{
	struct rf_detail *d = calloc(1, sizeof(*d));
	int i;

	assert_non_null(d);
	d->level = 5;
	d->layout = 2;
	d->raid_disks = ndevs;
	snprintf(d->array_state, sizeof(d->array_state), "clean");
	snprintf(d->sync_action, sizeof(d->sync_action), "idle");
	d->ndevs = ndevs;
	for (i = 0; i < ndevs; i++) {
		d->devs[i].slot = mask[i] == '_' ? -1 : i;
		d->devs[i].in_sync = mask[i] == 'U';
		d->devs[i].faulty = mask[i] == '_';
		d->devs[i].rebuilding = mask[i] == 'R';
		d->degraded += mask[i] != 'U';
	}
	return d;
}

static void test_state(void **state)
{
	struct rf_detail *d = raid5(4, "UUUU");
	char buf[128];

	assert_int_equal(rf_detail_status(d), RF_DETAIL_OK);
	assert_string_equal(rf_detail_state(d, buf, sizeof(buf)), "clean");
	assert_string_equal(rf_detail_state_word(d), "clean");
	free(d);

	d = raid5(4, "U_UU");
	assert_int_equal(rf_detail_status(d), RF_DETAIL_DEGRADED);
	assert_string_equal(rf_detail_state(d, buf, sizeof(buf)), "clean, degraded");
	assert_string_equal(rf_detail_state_word(d), "degraded");
	free(d);

	/* a member being rebuilt: degraded until it is in sync */
	d = raid5(4, "URUU");
	snprintf(d->sync_action, sizeof(d->sync_action), "recover");
	snprintf(d->array_state, sizeof(d->array_state), "active");
	assert_int_equal(rf_detail_status(d), RF_DETAIL_DEGRADED);
	assert_string_equal(rf_detail_state(d, buf, sizeof(buf)), "active, degraded, recovering");
	assert_string_equal(rf_detail_state_word(d), "recovering");
	free(d);

	d = raid5(4, "U__U");
	assert_int_equal(rf_detail_status(d), RF_DETAIL_FAILED);
	assert_string_equal(rf_detail_state(d, buf, sizeof(buf)), "clean, FAILED");
	assert_string_equal(rf_detail_state_word(d), "failed");
	free(d);

	d = raid5(3, "UUU");
	snprintf(d->sync_action, sizeof(d->sync_action), "resync");
	assert_string_equal(rf_detail_state(d, buf, sizeof(buf)), "clean, resyncing");
	assert_string_equal(rf_detail_state_word(d), "resyncing");
	free(d);
}

static void test_array_line(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	rf_detail_array_line(f, "1.2", "01234567:89abcdef:01234567:89abcdef", "host:data", "x.img");
	rf_detail_array_line(f, "1.2", "01234567:89abcdef:01234567:89abcdef", "data", "x.img");
	rf_detail_array_line(f, "0.90", "01234567:89abcdef:01234567:89abcdef", "", "x.img");
	/* no superblocks: no line */
	rf_detail_array_line(f, "none", "", "", "x.img");
	fclose(f);
	assert_string_equal(text,
			    "ARRAY /dev/md/data metadata=1.2 UUID=01234567:89abcdef:01234567:89abcdef name=host:data\n"
			    "ARRAY /dev/md/data metadata=1.2 UUID=01234567:89abcdef:01234567:89abcdef name=data\n"
			    "ARRAY /dev/md/x.img metadata=0.90 UUID=01234567:89abcdef:01234567:89abcdef\n");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enough),
		cmocka_unit_test(test_state),
		cmocka_unit_test(test_array_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
