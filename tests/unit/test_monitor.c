/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_monitor.c - mdadm --monitor's events from two looks at an array
 * (monitor.c): a member failing, the spare rebuilt in its place, the
 * rebuild's progress, an array found degraded, appearing, going; and a
 * steady array telling nothing.  Plus which events mail and at what
 * syslog priority.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "raidfuse/monitor.h"

static struct rf_mon_event ev[RF_MON_MAX_EVENTS];

/* A raid5 of d0.img, d1.img, ...: mask[i] 'U' d<i> in sync in slot i, 'F'
 * faulty, 'R' being rebuilt in slot i, 'S' a spare (no slot); each but
 * 'S' one slot, each 'F' and 'R' one degraded (a test that puts an 'R'
 * in an 'F's slot sets raid_disks and degraded itself). */
static struct rf_detail *snap(const char *mask)
{
	struct rf_detail *d = calloc(1, sizeof(*d));
	int i;

	assert_non_null(d);
	snprintf(d->mnt, sizeof(d->mnt), "/mnt/a");
	d->level = 5;
	d->layout = 2;
	snprintf(d->array_state, sizeof(d->array_state), "clean");
	snprintf(d->sync_action, sizeof(d->sync_action), "idle");
	for (i = 0; mask[i]; i++) {
		struct rf_detail_dev *v = &d->devs[d->ndevs++];

		snprintf(v->name, sizeof(v->name), "d%d.img", i);
		snprintf(v->path, sizeof(v->path), "/data/d%d.img", i);
		v->number = i;
		v->slot = mask[i] == 'S' || mask[i] == 'F' ? -1 : i;
		v->in_sync = mask[i] == 'U';
		v->faulty = mask[i] == 'F';
		v->rebuilding = mask[i] == 'R';
		if (mask[i] != 'S')
			d->raid_disks++;
		if (mask[i] != 'U' && mask[i] != 'S')
			d->degraded++;
	}
	return d;
}

/* A sync action under way at pct percent. */
static void syncing(struct rf_detail *d, const char *action, int pct)
{
	snprintf(d->sync_action, sizeof(d->sync_action), "%s", action);
	d->syncing = true;
	d->sync_total = 100000;
	d->sync_done = d->sync_total * (uint64_t)pct / 100;
}

/* The events of diff(old, now) as "Name dev|Name dev|...". */
static const char *diff(const struct rf_detail *old, const struct rf_detail *now, unsigned flags)
{
	static char buf[8192];
	int i, n = rf_monitor_diff(old, now, flags, RF_MON_INCREMENT, ev, RF_MON_MAX_EVENTS);

	buf[0] = '\0';
	for (i = 0; i < n; i++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s%s%s", i ? "|" : "", ev[i].name,
			 ev[i].dev[0] && ev[i].dev[0] != ' ' ? " " : "", ev[i].dev);
	return buf;
}

/* Negative control: the same look twice, whole or degraded, idle or
 * mid-rebuild, says nothing. */
static void test_steady(void **state)
{
	struct rf_detail *a = snap("UUUUS"), *b = snap("UUUUS"), *c = snap("UFUUR");

	assert_string_equal(diff(a, b, 0), "");
	assert_string_equal(diff(b, a, 0), "");
	assert_string_equal(diff(c, c, 0), "");
	syncing(c, "recover", 33);
	assert_string_equal(diff(c, c, 0), "");
	free(a);
	free(b);
	free(c);
}

/* A member fails, the spare is rebuilt, becomes active: the events in
 * order, each naming the member. */
static void test_fail_and_rebuild(void **state)
{
	struct rf_detail *whole = snap("UUUUS");
	struct rf_detail *failed = snap("UFUUS");
	struct rf_detail *r10 = snap("UFUUR"), *r45 = snap("UFUUR"), *r50 = snap("UFUUR"), *r85 = snap("UFUUR");
	struct rf_detail *done = snap("UFUUU");

	/* the spare (d4) takes slot 1 in these looks: four slots, one degraded */
	r10->devs[4].slot = r45->devs[4].slot = r50->devs[4].slot = r85->devs[4].slot = done->devs[4].slot = 1;
	r10->raid_disks = r45->raid_disks = r50->raid_disks = r85->raid_disks = done->raid_disks = 4;
	r10->degraded = r45->degraded = r50->degraded = r85->degraded = 1;
	done->degraded = 0;
	syncing(r10, "recover", 10);
	syncing(r45, "recover", 45);
	syncing(r50, "recover", 50);
	syncing(r85, "recover", 85);
	assert_string_equal(diff(whole, failed, 0), "Fail /data/d1.img");
	assert_string_equal(diff(failed, r10, 0), "RebuildStarted");
	/* fail and start within one look: the failure first */
	assert_string_equal(diff(whole, r10, 0), "Fail /data/d1.img|RebuildStarted");
	assert_string_equal(diff(r10, r45, 0), "Rebuild45");
	assert_string_equal(diff(r45, r50, 0), "");    /* 50: still in the 40s step */
	assert_string_equal(diff(r50, r85, 0), "Rebuild85");
	assert_string_equal(diff(r85, done, 0), "RebuildFinished|SpareActive /data/d4.img");
	/* the faulty member taken out (ctl remove) says nothing more */
	memcpy(r85, done, sizeof(*done));
	memmove(&done->devs[1], &done->devs[2], 3 * sizeof(done->devs[0]));
	done->ndevs = 4;
	assert_string_equal(diff(r85, done, 0), "");
	free(whole);
	free(failed);
	free(r10);
	free(r45);
	free(r50);
	free(r85);
	free(done);
}

/* The spare being rebuilt fails: FailSpare, and the rebuild ends. */
static void test_fail_spare(void **state)
{
	struct rf_detail *rb = snap("UFUUR"), *bad = snap("UFUUF");

	syncing(rb, "recover", 30);
	rb->devs[4].slot = 1;
	rb->raid_disks = bad->raid_disks = 4;
	rb->degraded = bad->degraded = 1;
	assert_string_equal(diff(rb, bad, 0), "FailSpare /data/d4.img|RebuildFinished");
	free(rb);
	free(bad);
}

/* A member in sync taken out (gone from md/) is a Fail too; a member that
 * appears in sync is active. */
static void test_gone_and_appeared(void **state)
{
	struct rf_detail *four = snap("UUUU"), *three = snap("UUUU");

	three->ndevs = 3;
	three->degraded = 1;
	assert_string_equal(diff(four, three, 0), "Fail /data/d3.img");
	assert_string_equal(diff(three, four, 0), "SpareActive /data/d3.img");
	free(four);
	free(three);
}

/* Degraded further without any Fail (a slot empty): DegradedArray. */
static void test_degraded_without_fail(void **state)
{
	struct rf_detail *a = snap("UUUR"), *b = snap("UUUR");

	b->devs[3].slot = -1;
	b->devs[3].rebuilding = false;
	b->degraded = 2;
	assert_string_equal(diff(a, b, 0), "DegradedArray");
	free(a);
	free(b);
}

/* The first look: DegradedArray when degraded, NewArray when the array
 * appeared later, TestMessage with --test; an array that can no longer
 * be read: DeviceDisappeared; a raid0 named: DeviceDisappeared Wrong-Level. */
static void test_first_look_and_gone(void **state)
{
	struct rf_detail *whole = snap("UUUU"), *deg = snap("UFUU"), *r0 = snap("UUUU");

	r0->level = 0;
	assert_string_equal(diff(NULL, whole, 0), "");
	assert_string_equal(diff(NULL, deg, 0), "DegradedArray");
	assert_string_equal(diff(NULL, deg, RF_MON_NEW), "NewArray|DegradedArray");
	assert_string_equal(diff(NULL, whole, RF_MON_TEST), "TestMessage");
	assert_string_equal(diff(whole, whole, RF_MON_TEST), "TestMessage");
	assert_string_equal(diff(whole, NULL, 0), "DeviceDisappeared");
	assert_string_equal(diff(NULL, NULL, 0), "");
	assert_string_equal(diff(NULL, r0, 0), "DeviceDisappeared Wrong-Level");
	assert_string_equal(diff(r0, r0, 0), "");
	free(whole);
	free(deg);
	free(r0);
}

/* A check that found mismatches says so when it finishes. */
static void test_finished_mismatches(void **state)
{
	struct rf_detail *chk = snap("UUUU"), *idle = snap("UUUU");

	syncing(chk, "check", 95);
	idle->has_mismatch = true;
	idle->mismatch_cnt = 24;
	assert_string_equal(diff(chk, idle, 0), "RebuildFinished mismatches found: 24 (on raid level 5)");
	idle->mismatch_cnt = 0;
	assert_string_equal(diff(chk, idle, 0), "RebuildFinished");
	free(chk);
	free(idle);
}

/* No more events than room. */
static void test_max(void **state)
{
	struct rf_detail *a = snap("UUUU"), *b = snap("FFFF");

	assert_int_equal(rf_monitor_diff(a, b, 0, 20, ev, 2), 2);
	assert_int_equal(rf_monitor_diff(a, b, 0, 20, ev, RF_MON_MAX_EVENTS), 4);
	free(a);
	free(b);
}

static void test_mail_and_priority(void **state)
{
	assert_true(rf_monitor_mails("Fail"));
	assert_true(rf_monitor_mails("FailSpare"));
	assert_true(rf_monitor_mails("DegradedArray"));
	assert_true(rf_monitor_mails("TestMessage"));
	assert_false(rf_monitor_mails("RebuildStarted"));
	assert_false(rf_monitor_mails("SpareActive"));
	assert_false(rf_monitor_mails("NewArray"));
	assert_int_equal(rf_monitor_priority("Fail"), LOG_CRIT);
	assert_int_equal(rf_monitor_priority("FailSpare"), LOG_CRIT);
	assert_int_equal(rf_monitor_priority("DegradedArray"), LOG_CRIT);
	assert_int_equal(rf_monitor_priority("Rebuild40"), LOG_INFO);
	assert_int_equal(rf_monitor_priority("SpareActive"), LOG_INFO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steady),
		cmocka_unit_test(test_fail_and_rebuild),
		cmocka_unit_test(test_fail_spare),
		cmocka_unit_test(test_gone_and_appeared),
		cmocka_unit_test(test_degraded_without_fail),
		cmocka_unit_test(test_first_look_and_gone),
		cmocka_unit_test(test_finished_mismatches),
		cmocka_unit_test(test_max),
		cmocka_unit_test(test_mail_and_priority),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
