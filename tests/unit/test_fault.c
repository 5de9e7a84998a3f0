/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_fault.c - fault injection: the spec's text (parse, refuse with a
 * message, format back), which operations a spec picks (kinds, range,
 * after, every, count, rate over many draws with a fixed seed), the delay,
 * and the effect in the member IO queue (an injected error ends the
 * operation without issuing it, on both backends, merged operations
 * included) and in an array whose config arms a fault.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testreq.h"
#include "fake_ioq.h"
#include "miorec.h"
#include "raidfuse/ctl.h"
#include "raidfuse/fault.h"
#include "raidfuse/ioq.h"
#include "fixture.h"


static struct rf_fault *armed(const char *text)
{
	struct rf_fault *f = rf_fault_new();
	struct rf_fault_spec s;
	char err[256];

	assert_non_null(f);
	if (rf_fault_parse(text, &s, err, sizeof(err)))
		fail_msg("'%s': %s", text, err);
	rf_fault_set(f, &s);
	return f;
}

/* ---------------------------------------------------------------- text */

static void parse_bad(const char *text, const char *msg)
{
	struct rf_fault_spec s;
	char err[256] = "";

	assert_int_equal(rf_fault_parse(text, &s, err, sizeof(err)), -EINVAL);
	if (!strstr(err, msg))
		fail_msg("'%s': message '%s' lacks '%s'", text, err, msg);
}

static void test_parse(void **state)
{
	struct rf_fault_spec s, back;
	char err[256], text[512];

	assert_int_equal(rf_fault_parse("error=EIO rate=0.5 ops=read,write", &s, err, sizeof(err)), 0);
	assert_int_equal(s.error, EIO);
	assert_true(s.rate == 0.5);
	assert_int_equal(s.ops, (1u << RF_MIO_READ) | (1u << RF_MIO_WRITE));
	assert_true(rf_fault_spec_active(&s));
	assert_int_equal(rf_fault_parse("  delay_us=2000\tops=fsync  ", &s, err, sizeof(err)), 0);
	assert_int_equal(s.error, 0);
	assert_int_equal(s.delay_us, 2000);
	assert_int_equal(s.ops, 1u << RF_MIO_FSYNC);
	assert_true(rf_fault_spec_active(&s));
	assert_int_equal(rf_fault_parse("rate=25% error=ENOSPC every=3 after=10 count=7 offset=64K length=8s seed=9 ops=all",
					&s, err, sizeof(err)), 0);
	assert_true(s.rate == 0.25);
	assert_int_equal(s.error, ENOSPC);
	assert_int_equal(s.every, 3);
	assert_int_equal(s.after, 10);
	assert_int_equal(s.count, 7);
	assert_int_equal(s.offset, 65536);
	assert_int_equal(s.length, 4096);
	assert_int_equal(s.seed, 9);
	assert_int_equal(s.ops, 7);
	/* format gives text that parses back to the same spec */
	assert_true(rf_fault_format(&s, text, sizeof(text)) > 0);
	assert_string_equal(text, "error=ENOSPC rate=0.25 every=3 ops=read,write,fsync after=10 count=7 "
				  "offset=65536 length=4096 seed=9");
	assert_int_equal(rf_fault_parse(text, &back, err, sizeof(err)), 0);
	assert_memory_equal(&s, &back, sizeof(s));
	assert_int_equal(rf_fault_format(&s, text, 10), -EOVERFLOW);
	/* off: the whole text, or a spec with neither error nor delay */
	assert_int_equal(rf_fault_parse("off", &s, err, sizeof(err)), 0);
	assert_false(rf_fault_spec_active(&s));
	assert_int_equal(rf_fault_format(&s, text, sizeof(text)), 3);
	assert_string_equal(text, "off");
	assert_int_equal(rf_fault_parse("rate=0.5", &s, err, sizeof(err)), 0);
	assert_false(rf_fault_spec_active(&s));

	parse_bad("error=EAGAIN", "error: 'EAGAIN' is not an errno name");
	parse_bad("error=eio", "is not an errno name");
	parse_bad("rate=1.5", "rate: '1.5' is not a probability");
	parse_bad("rate=-0.1", "is not a probability");
	parse_bad("rate=nan", "is not a probability");
	parse_bad("rate=", "is not a probability");
	parse_bad("every=0", "every: '0' is not a count of 1 or more");
	parse_bad("ops=read,", "ops: 'read,' is not read, write, fsync");
	parse_bad("ops=trim", "is not read, write, fsync");
	parse_bad("delay_us=10000001", "at most 10000000");
	parse_bad("count=-1", "count: '-1' is not a count");
	parse_bad("offset=12Q", "offset: '12Q' is not a size");
	parse_bad("error=EIO frequency=2", "unknown key 'frequency'");
	parse_bad("error=EIO off", "'off' is not key=value");
}

/* ---------------------------------------------------------------- picks */

static void test_rate(void **state)
{
	struct rf_fault_spec s;
	struct rf_fault_stats st;
	const int n = 200000;
	struct rf_fault *f = armed("error=EIO rate=0.25 seed=7");
	int i, hits = 0;

	for (i = 0; i < n; i++)
		hits += rf_fault_check(f, RF_MIO_WRITE, (uint64_t)i * 4096, 4096) == -EIO;
	/* binomial: sd = sqrt(n p (1-p)) ~ 194; 1% of n is 10 sd */
	assert_in_range(hits, n / 4 - n / 100, n / 4 + n / 100);
	rf_fault_get(f, &s, &st);
	assert_int_equal(st.matched, n);
	assert_int_equal(st.errors, hits);
	rf_fault_free(f);

	/* the same seed, the same draws */
	f = armed("error=EIO rate=0.25 seed=7");
	for (i = 0; i < n; i++)
		hits -= rf_fault_check(f, RF_MIO_WRITE, 0, 4096) == -EIO;
	assert_int_equal(hits, 0);
	rf_fault_free(f);

	f = armed("error=EIO rate=0");
	for (i = 0; i < 1000; i++)
		assert_int_equal(rf_fault_check(f, RF_MIO_READ, 0, 512), 0);
	rf_fault_free(f);
	f = armed("error=EIO rate=100%");
	for (i = 0; i < 1000; i++)
		assert_int_equal(rf_fault_check(f, RF_MIO_READ, 0, 512), -EIO);
	rf_fault_free(f);
}

static void test_every_after_count(void **state)
{
	struct rf_fault_spec s;
	struct rf_fault_stats st;
	struct rf_fault *f = armed("error=EROFS every=3 after=10 count=5 ops=write");
	int i, ret;

	for (i = 1; i <= 40; i++) {
		ret = rf_fault_check(f, RF_MIO_WRITE, 0, 4096);
		/* matches 11.. are candidates 1..; every 3rd, five of them */
		if (i > 10 && (i - 10) % 3 == 0 && i - 10 <= 15)
			assert_int_equal(ret, -EROFS);
		else
			assert_int_equal(ret, 0);
		/* reads are not its kind: never matched, never counted */
		assert_int_equal(rf_fault_check(f, RF_MIO_READ, 0, 4096), 0);
	}
	rf_fault_get(f, &s, &st);
	assert_int_equal(st.matched, 40);
	assert_int_equal(st.errors, 5);
	/* set again: counts start over */
	rf_fault_set(f, &s);
	rf_fault_get(f, &s, &st);
	assert_int_equal(st.matched, 0);
	for (i = 1; i <= 13; i++)
		ret = rf_fault_check(f, RF_MIO_WRITE, 0, 4096);
	assert_int_equal(ret, -EROFS);
	rf_fault_free(f);
}

static void test_ops_range(void **state)
{
	struct rf_fault *f = armed("error=EIO ops=write,fsync offset=64K length=4K");
	struct rf_fault_spec off;

	assert_int_equal(rf_fault_check(f, RF_MIO_WRITE, 60 << 10, 4096), 0);    /* ends where it starts */
	assert_int_equal(rf_fault_check(f, RF_MIO_WRITE, 62 << 10, 4096), -EIO); /* overlaps */
	assert_int_equal(rf_fault_check(f, RF_MIO_WRITE, 64 << 10, 512), -EIO);
	assert_int_equal(rf_fault_check(f, RF_MIO_WRITE, 67 << 10, 1 << 20), -EIO);
	assert_int_equal(rf_fault_check(f, RF_MIO_WRITE, 68 << 10, 4096), 0);     /* past the end */
	assert_int_equal(rf_fault_check(f, RF_MIO_READ, 64 << 10, 4096), 0);      /* not its kind */
	assert_int_equal(rf_fault_check(f, RF_MIO_FSYNC, 0, 0), -EIO);            /* fsync: no range */
	/* off: nothing, and no state consulted */
	rf_fault_spec_init(&off);
	rf_fault_set(f, &off);
	assert_false(atomic_load(&f->armed));
	assert_int_equal(rf_fault_check(f, RF_MIO_WRITE, 64 << 10, 4096), 0);
	assert_int_equal(rf_fault_check(NULL, RF_MIO_WRITE, 0, 4096), 0);
	rf_fault_free(f);
	/* no length: to the end */
	f = armed("error=EIO offset=1M");
	assert_int_equal(rf_fault_check(f, RF_MIO_READ, (1 << 20) - 4096, 4096), 0);
	assert_int_equal(rf_fault_check(f, RF_MIO_READ, 1ull << 40, 4096), -EIO);
	rf_fault_free(f);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_delay(void **state)
{
	struct rf_fault *f = armed("delay_us=30000 ops=read count=2");
	struct rf_fault_spec s;
	struct rf_fault_stats st;
	double t;

	t = now();
	assert_int_equal(rf_fault_check(f, RF_MIO_READ, 0, 4096), 0);  /* delay only: no error */
	assert_true(now() - t >= 0.030);
	t = now();
	assert_int_equal(rf_fault_check(f, RF_MIO_WRITE, 0, 4096), 0);
	assert_true(now() - t < 0.030);
	assert_int_equal(rf_fault_check(f, RF_MIO_READ, 0, 4096), 0);
	t = now();
	assert_int_equal(rf_fault_check(f, RF_MIO_READ, 0, 4096), 0);  /* count reached */
	assert_true(now() - t < 0.030);
	rf_fault_get(f, &s, &st);
	assert_int_equal(st.delays, 2);
	assert_int_equal(st.errors, 0);
	rf_fault_free(f);

	/* both: the error comes after the delay */
	f = armed("delay_us=20000 error=ETIMEDOUT");
	t = now();
	assert_int_equal(rf_fault_check(f, RF_MIO_READ, 0, 4096), -ETIMEDOUT);
	assert_true(now() - t >= 0.020);
	rf_fault_free(f);
}

/* ---------------------------------------------------------------- ioq */

/* Member 1's writes fail by injection: each of its mios ends once with
 * -EIO, none reaches the file (merged ones are split and each asks); the
 * other member's land.  Then off: they land. */
static void ioq_injection(rf_ioq_init_fn init)
{
	static struct rec recs[8];
	static char data[8][4096], back[4096], zero[4096];
	struct rf_ioq_member mm[2];
	struct rf_fault *f = armed("error=EIO ops=write");
	struct rf_fault_spec s;
	struct rf_fault_stats st;
	struct rf_ioq q;
	int i, guard;

	memset(mm, 0, sizeof(mm));
	for (i = 0; i < 2; i++) {
		mm[i].fd = tmpfile_fd(1 << 20);
		mm[i].fd_direct = -1;
		mm[i].align = 4096;
	}
	mm[1].fault = f;
	assert_int_equal(init(&q, RF_IOQ_ARRAY(mm, 2), 16), 0);
	for (int round = 0; round < 2; round++) {
		memset(recs, 0, sizeof(recs));
		for (i = 0; i < 8; i++) {
			memset(data[i], 'a' + i + round, 4096);
			recs[i].m.buf = data[i];
			recs[i].m.off = (uint64_t)(i % 4) * 4096;     /* adjacent: merged */
			recs[i].m.len = 4096;
			recs[i].m.member = (int16_t)(i / 4);
			recs[i].m.op = RF_MIO_WRITE;
			recs[i].m.end = rec_end;
			rf_ioq_queue(&q, &recs[i].m);
		}
		for (guard = 0; rf_ioq_busy(&q); guard++) {
			assert_int_equal(rf_ioq_submit(&q), 0);
			assert_true(rf_ioq_reap(&q, STAILQ_EMPTY(&q.retry)) >= 0);
			assert_true(guard < 1000);
		}
		for (i = 0; i < 8; i++) {
			assert_int_equal(recs[i].ends, 1);
			assert_int_equal(pread(mm[i / 4].fd, back, 4096, (off_t)(i % 4) * 4096), 4096);
			if (i >= 4 && round == 0) {
				assert_int_equal(recs[i].m.res, -EIO);
				assert_memory_equal(back, zero, 4096);
			} else {
				assert_int_equal(recs[i].m.res, 0);
				assert_memory_equal(back, data[i], 4096);
			}
		}
		if (round == 0) {
			assert_true(q.nr_injected >= 4);
			rf_fault_get(f, &s, &st);
			assert_true(st.errors >= 4);
			rf_fault_spec_init(&s);
			rf_fault_set(f, &s);
		}
	}
	rf_ioq_destroy(&q);
	close(mm[0].fd);
	close(mm[1].fd);
	rf_fault_free(f);
}

static void test_ioq_sync(void **state)
{
	ioq_injection(rf_ioq_init_sync);
}

static void test_ioq_uring(void **state)
{
	ioq_injection(rf_ioq_init_uring);
}

/* An operation the backend has no room for (-EBUSY) waits and is issued
 * later: it is asked once, not at every try (after/count/every stay
 * exact, a delay is not slept twice). */
static void test_ioq_busy_asked_once(void **state)
{
	static struct rec recs[16];
	static char data[4096];
	struct rf_ioq_member mm;
	struct rf_fault *f = armed("error=EIO after=10 count=2");
	struct rf_fault_spec s;
	struct rf_fault_stats st;
	struct rf_ioq q;
	int i, guard, failed = 0;

	memset(&mm, 0, sizeof(mm));
	mm.fd = tmpfile_fd(1 << 20);
	mm.fd_direct = -1;
	mm.align = 4096;
	mm.fault = f;
	fake_reset();
	fake_busy_depth = 2;
	assert_int_equal(fake_ioq_init(&q, RF_IOQ_ARRAY(&mm, 1), 16), 0);
	memset(recs, 0, sizeof(recs));
	for (i = 0; i < 16; i++) {
		recs[i].m.buf = data;
		recs[i].m.off = (uint64_t)i * 8192;     /* gaps: never merged */
		recs[i].m.len = 4096;
		recs[i].m.op = RF_MIO_WRITE;
		recs[i].m.end = rec_end;
		rf_ioq_queue(&q, &recs[i].m);
	}
	for (guard = 0; rf_ioq_busy(&q); guard++) {
		assert_int_equal(rf_ioq_submit(&q), 0);
		assert_true(rf_ioq_reap(&q, false) >= 0);
		assert_true(guard < 1000);
	}
	for (i = 0; i < 16; i++) {
		assert_int_equal(recs[i].ends, 1);
		failed += recs[i].m.res == -EIO;
		/* the first 10 through; the next two fail */
		assert_int_equal(recs[i].m.res, i == 10 || i == 11 ? -EIO : 0);
	}
	assert_int_equal(failed, 2);
	rf_fault_get(f, &s, &st);
	assert_int_equal(st.matched, 16);
	assert_int_equal(st.errors, 2);
	rf_ioq_destroy(&q);
	fake_reset();
	close(mm.fd);
	rf_fault_free(f);
}

/* ---------------------------------------------------------------- array */

/* A raid5 whose config fails member 1's writes after 2 of them: the
 * array writes on degraded, the member shows faulty, its fault file the
 * count, and everything written reads back.  md/dev-NAME/fault takes a
 * new spec at run time. */
static void test_array_config(void **state)
{
	const uint32_t len = 256 << 10;
	const struct fx_array fa = { .what = "cf", .level = 5, .layout = 2, .n = 4, .chunk = 65536 };
	struct rf_config cfg;
	struct rf_config_fault cf = { .member = 1 };
	struct rf_array *a;
	const struct rf_ctl_attr *fat = rf_ctl_dev_find("fault");
	char err[512], show[512], *buf = malloc(len), *back = malloc(len);
	int i;

	fx_config(&cfg, &fa);
	fx_make_members("cf", 4, 4 << 20, false);
	rf_fault_spec_init(&cf.spec);
	assert_int_equal(rf_fault_spec_set(&cf.spec, "error", "EIO", err, sizeof(err)), 0);
	assert_int_equal(rf_fault_spec_set(&cf.spec, "ops", "write", err, sizeof(err)), 0);
	assert_int_equal(rf_fault_spec_set(&cf.spec, "after", "2", err, sizeof(err)), 0);
	cfg.faults = &cf;
	cfg.nfaults = 1;
	a = fx_open(&cfg, "cf", NULL);
	assert_non_null(fat);
	assert_true(rf_ctl_dev_show(fat, a, "cf-1.img", show, sizeof(show)) > 0);
	assert_string_equal(show, "error=EIO ops=write after=2\nmatched=0 errors=0 delays=0\n");
	assert_true(rf_ctl_dev_show(fat, a, "cf-0.img", show, sizeof(show)) > 0);
	assert_string_equal(show, "off\nmatched=0 errors=0 delays=0\n");

	for (i = 0; i < (int)len; i++)
		buf[i] = (char)(i * 7 + i / 4096);
	for (i = 0; i < 8; i++)
		assert_int_equal(testreq_io(a, RF_REQ_WRITE, (uint64_t)i * len, len, buf), 0);
	assert_int_equal(rf_array_faulty(a), 1u << 1);
	assert_false(rf_array_failed(a));
	assert_true(rf_ctl_dev_show(rf_ctl_dev_find("state"), a, "cf-1.img", show, sizeof(show)) > 0);
	assert_string_equal(show, "faulty\n");
	assert_true(rf_ctl_dev_show(fat, a, "cf-1.img", show, sizeof(show)) > 0);
	{
		unsigned long long matched, errors;
		const char *nl = strchr(show, '\n');

		/* 2 let through, every later one failed: the first failure
		 * fails the member, and only writes already on their way (other
		 * workers) reach it after that */
		assert_non_null(nl);
		assert_int_equal(sscanf(nl + 1, "matched=%llu errors=%llu", &matched, &errors), 2);
		assert_true(errors >= 1);
		assert_int_equal(matched, errors + 2);
	}
	for (i = 0; i < 8; i++) {
		assert_int_equal(testreq_io(a, RF_REQ_READ, (uint64_t)i * len, len, back), 0);
		assert_memory_equal(buf, back, len);
	}

	/* at run time: member 3's reads fail too; two failed members are too
	 * many for raid5 */
	assert_int_equal(rf_ctl_dev_store(fat, a, "cf-3.img", "error=EIO ops=read", 18), 0);
	assert_int_equal(rf_ctl_dev_store(fat, a, "cf-3.img", "error=EIO bogus=1", 17), -EINVAL);
	assert_int_equal(rf_ctl_dev_store(fat, a, "nosuch.img", "off", 3), -ENOENT);
	assert_int_equal(testreq_io(a, RF_REQ_READ, 0, len, back), -EIO);
	assert_true(rf_array_failed(a));
	rf_array_close(a);
	free(buf);
	free(back);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_every_after_count),
		cmocka_unit_test(test_ops_range),
		cmocka_unit_test(test_delay),
		cmocka_unit_test(test_ioq_sync),
		cmocka_unit_test(test_ioq_uring),
		cmocka_unit_test(test_ioq_busy_asked_once),
		cmocka_unit_test(test_array_config),
	};

	return fx_run_tests("fault", tests);
}
