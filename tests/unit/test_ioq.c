/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_ioq.c - the member IO queue: short transfers resubmitted, EAGAIN
 * retried, errors delivered once, back-pressure queued, a failed read
 * retried once unless its member is failfast, on a fake backend; a
 * plug runs before the queue issues anything, once; one real round
 * trip through liburing; and reads of a member in memory copied from its
 * mapping (merged ones too), a read past the mapping and one of a file
 * shrunk under it issued instead (the latter failing; merged, the
 * pieces still in the file read), writes copied to a mapping for writes
 * (merged too) and in the file at once, past it or into a shrunk file
 * issued (merged: whole, after a copy cut short), a walk's queue (stream)
 * issuing both inside the mapping, and a backend that sees every read (a
 * test's) given them all; the rule for a mapping's use
 * (rf_ioq_member_map()) on its own; a member in direct mode, on a file
 * on disk, on both real backends: aligned IO as it is, unaligned buffers,
 * offsets and odd lengths at the member's end through the bounce buffer
 * (merged pieces too, and one longer than the bounce buffer), a write
 * whose offset is not aligned written through, and none of it in the page
 * cache, where buffered mode (the control) leaves it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_ioq.h"
#include "raidfuse/devopen.h"
#include "raidfuse/fault.h"
#include "raidfuse/fdmap.h"
#include "miorec.h"

static void run_all(struct rf_ioq *q)
{
	int guard = 0;

	while (rf_ioq_busy(q)) {
		assert_int_equal(rf_ioq_submit(q), 0);
		rf_ioq_reap(q, false);
		assert_true(++guard < 100000);
	}
}

/* Write 64 blocks with short IO, EAGAIN and a 4-deep backend, read them
 * back: every byte lands, every mio ends once with res 0.  (Gaps between
 * the blocks keep them from merging.) */
static void test_short_again_busy(void **state)
{
	struct rf_ioq_member mm = { .fd_direct = -1, .align = 4096 };
	struct rf_ioq q;
	static struct rec recs[64];
	static char data[64][4096], back[64][4096];
	int i;

	fake_reset();
	mm.fd = tmpfile_fd(128 * 4096);
	fake_short_every = 3;
	fake_again_every = 5;
	fake_busy_depth = 4;
	assert_int_equal(fake_ioq_init(&q, RF_IOQ_ARRAY(&mm, 1), 8), 0);
	for (i = 0; i < 64; i++) {
		memset(data[i], 'a' + i % 26, sizeof(data[i]));
		recs[i] = (struct rec){ .m = { .end = rec_end, .buf = data[i], .off = (uint64_t)i * 8192,
					       .len = 4096, .op = RF_MIO_WRITE } };
		rf_ioq_queue(&q, &recs[i].m);
	}
	run_all(&q);
	for (i = 0; i < 64; i++) {
		assert_int_equal(recs[i].ends, 1);
		assert_int_equal(recs[i].m.res, 0);
		assert_int_equal(recs[i].m.done, 4096);
	}
	assert_true(fake_nr_short > 0);
	assert_true(fake_nr_again > 0);
	assert_true(q.nr_short > 0 && q.nr_retry > 0);
	for (i = 0; i < 64; i++) {
		recs[i] = (struct rec){ .m = { .end = rec_end, .buf = back[i], .off = (uint64_t)i * 8192,
					       .len = 4096, .op = RF_MIO_READ } };
		rf_ioq_queue(&q, &recs[i].m);
	}
	run_all(&q);
	for (i = 0; i < 64; i++) {
		assert_int_equal(recs[i].ends, 1);
		assert_memory_equal(back[i], data[i], 4096);
	}
	rf_ioq_destroy(&q);
	close(mm.fd);
}

/* An error ends the mio once with the errno; a read past the end of the
 * member (no progress) ends with -EIO. */
static void test_errors(void **state)
{
	struct rf_ioq_member mm[2] = { { .fd_direct = -1, .align = 4096 }, { .fd_direct = -1, .align = 4096 } };
	struct rf_ioq q;
	struct rec a, b;
	char buf[4096];

	fake_reset();
	mm[0].fd = tmpfile_fd(8192);
	mm[1].fd = tmpfile_fd(8192);
	fake_fail_member = 1;
	assert_int_equal(fake_ioq_init(&q, RF_IOQ_ARRAY(mm, 2), 8), 0);
	a = (struct rec){ .m = { .end = rec_end, .buf = buf, .off = 0, .len = 4096, .member = 1, .op = RF_MIO_WRITE } };
	b = (struct rec){ .m = { .end = rec_end, .buf = buf, .off = 8192, .len = 4096, .member = 0, .op = RF_MIO_READ } };
	rf_ioq_queue(&q, &a.m);
	rf_ioq_queue(&q, &b.m);
	run_all(&q);
	assert_int_equal(a.ends, 1);
	assert_int_equal(a.m.res, -EIO);
	assert_int_equal(b.ends, 1);
	assert_int_equal(b.m.res, -EIO);
	assert_int_equal(fake_nr_failed, 1);
	rf_ioq_destroy(&q);
	close(mm[0].fd);
	close(mm[1].fd);
}

/* Adjacent writes of one member become one vectored operation; a failure
 * of the merged operation is retried piece by piece and lands on the
 * piece it belongs to. */
static void test_merge(void **state)
{
	struct rf_ioq_member mm[2] = { { .fd_direct = -1, .align = 4096 }, { .fd_direct = -1, .align = 4096 } };
	struct rf_ioq q;
	static struct rec recs[16];
	static char data[16][4096], back[16 * 4096];
	int i;

	fake_reset();
	mm[0].fd = tmpfile_fd(64 * 4096);
	mm[1].fd = tmpfile_fd(64 * 4096);
	assert_int_equal(fake_ioq_init(&q, RF_IOQ_ARRAY(mm, 2), 8), 0);
	fake_log_on = true;
	/* 8 adjacent blocks on member 0 interleaved with 8 on member 1,
	 * buffers scattered (reverse order in memory). */
	for (i = 0; i < 16; i++) {
		memset(data[15 - i], 'A' + i, 4096);
		recs[i] = (struct rec){ .m = { .end = rec_end, .buf = data[15 - i], .member = (int16_t)(i % 2),
					       .off = (uint64_t)(i / 2) * 4096, .len = 4096, .op = RF_MIO_WRITE } };
		rf_ioq_queue(&q, &recs[i].m);
	}
	run_all(&q);
	assert_int_equal(fake_nlog, 2);
	assert_int_equal(fake_log[0].len, 8 * 4096);
	assert_true(q.nr_merged == 14);
	for (i = 0; i < 16; i++)
		assert_int_equal(recs[i].ends, 1);
	assert_int_equal(pread(mm[1].fd, back, 8 * 4096, 0), 8 * 4096);
	for (i = 0; i < 8; i++)
		assert_int_equal(back[i * 4096], 'A' + 2 * i + 1);

	/* Member 1 fails after 2 more operations: the merged read of 8 blocks
	 * fails, is retried alone; the first block read works, the rest end
	 * with the error. */
	fake_nlog = 0;
	fake_fail_member = 1;
	fake_fail_after = 2;
	for (i = 0; i < 8; i++) {
		recs[i] = (struct rec){ .m = { .end = rec_end, .buf = back + i * 4096, .member = 1,
					       .off = (uint64_t)i * 4096, .len = 4096, .op = RF_MIO_READ } };
		rf_ioq_queue(&q, &recs[i].m);
	}
	/* Split by short IO: make the first try fail as a whole. */
	fake_fail_after = 0;
	run_all(&q);
	for (i = 0; i < 8; i++) {
		assert_int_equal(recs[i].ends, 1);
		assert_int_equal(recs[i].m.res, -EIO);
	}
	assert_int_equal(fake_nlog, 1 + 8);    /* merged try, then each alone */
	rf_ioq_destroy(&q);
	close(mm[0].fd);
	close(mm[1].fd);
	fake_reset();
}

/* A plug fills what was queued before it: its unplug() runs at the next
 * rf_ioq_submit(), before the write it fills is issued (the synchronous
 * backend writes in submit), and may queue more; a later submit does not
 * run it again. */
struct fill_plug {
	struct rf_ioq_plug pl;
	char *buf;
	struct rec *more;
	int runs;
};

static void fill_unplug(struct rf_ioq_plug *pl, struct rf_ioq *q)
{
	struct fill_plug *f = (struct fill_plug *)pl;

	f->runs++;
	memset(f->buf, 'P', 4096);
	rf_ioq_queue(q, &f->more->m);
}

static void test_plug(void **state)
{
	struct rf_ioq_member mm = { .fd_direct = -1, .align = 4096 };
	struct rf_ioq q;
	struct rec w, more;
	static char buf[4096], buf2[4096], back[8192];
	struct fill_plug f = { .pl = { .unplug = fill_unplug }, .buf = buf, .more = &more };

	(void)state;
	mm.fd = tmpfile_fd(16384);
	assert_int_equal(rf_ioq_init_sync(&q, RF_IOQ_ARRAY(&mm, 1), 8), 0);
	memset(buf, 0, sizeof(buf));
	memset(buf2, 'M', sizeof(buf2));
	w = (struct rec){ .m = { .end = rec_end, .buf = buf, .off = 0, .len = 4096, .op = RF_MIO_WRITE } };
	more = (struct rec){ .m = { .end = rec_end, .buf = buf2, .off = 4096, .len = 4096, .op = RF_MIO_WRITE } };
	rf_ioq_queue(&q, &w.m);
	rf_ioq_plug(&q, &f.pl);
	run_all(&q);
	assert_int_equal(f.runs, 1);
	assert_int_equal(w.ends, 1);
	assert_int_equal(more.ends, 1);
	assert_int_equal(pread(mm.fd, back, sizeof(back), 0), (ssize_t)sizeof(back));
	assert_int_equal(back[0], 'P');        /* filled before it was written */
	assert_int_equal(back[4095], 'P');
	assert_int_equal(back[4096], 'M');     /* what the plug queued went too */
	w.ends = 0;
	rf_ioq_queue(&q, &w.m);
	run_all(&q);
	assert_int_equal(f.runs, 1);
	assert_int_equal(w.ends, 1);
	rf_ioq_destroy(&q);
	close(mm.fd);
}

/* A short merged transfer: the pieces it covered end, the rest go on. */
static void test_merge_short(void **state)
{
	struct rf_ioq_member mm = { .fd_direct = -1, .align = 4096 };
	struct rf_ioq q;
	static struct rec recs[6];
	static char data[6][4096], back[6 * 4096];
	int i;

	fake_reset();
	mm.fd = tmpfile_fd(64 * 4096);
	assert_int_equal(fake_ioq_init(&q, RF_IOQ_ARRAY(&mm, 1), 8), 0);
	fake_short_every = 1;           /* every transfer moves half */
	for (i = 0; i < 6; i++) {
		memset(data[i], '0' + i, 4096);
		recs[i] = (struct rec){ .m = { .end = rec_end, .buf = data[i], .off = (uint64_t)i * 4096,
					       .len = 4096, .op = RF_MIO_WRITE } };
		rf_ioq_queue(&q, &recs[i].m);
	}
	run_all(&q);
	fake_short_every = 0;
	for (i = 0; i < 6; i++) {
		assert_int_equal(recs[i].ends, 1);
		assert_int_equal(recs[i].m.res, 0);
	}
	assert_int_equal(pread(mm.fd, back, sizeof(back), 0), (ssize_t)sizeof(back));
	for (i = 0; i < 6; i++)
		assert_memory_equal(back + i * 4096, data[i], 4096);
	rf_ioq_destroy(&q);
	close(mm.fd);
	fake_reset();
}

/* The liburing backend: a write and a read back, and a kick ends a wait. */
/* md's read retry: a read that fails once (fault injection, count=1) is
 * issued once more and ends well; a write that fails is not retried; on
 * a failfast member the same read ends with the error at once, and a
 * failed merged read ends every piece with it, none tried again. */
static void test_read_retry(void **state)
{
	struct rf_ioq_member mm = { .fd_direct = -1, .align = 4096 };
	struct rf_fault_spec spec;
	static char buf[4][4096];
	struct rec r[4];
	struct rf_ioq q;
	char err[128];

	fake_reset();
	mm.fd = tmpfile_fd(16 * 4096);
	mm.fault = rf_fault_new();
	assert_non_null(mm.fault);
	assert_int_equal(fake_ioq_init(&q, RF_IOQ_ARRAY(&mm, 1), 8), 0);
	for (int ff = 0; ff < 2; ff++) {
		mm.failfast = (uint8_t)ff;
		assert_int_equal(rf_fault_parse("error=EIO ops=read count=1", &spec, err, sizeof(err)), 0);
		rf_fault_set(mm.fault, &spec);
		q.nr_read_retry = 0;
		r[0] = (struct rec){ .m = { .end = rec_end, .buf = buf[0], .off = 4096, .len = 4096, .op = RF_MIO_READ } };
		rf_ioq_queue(&q, &r[0].m);
		run_all(&q);
		assert_int_equal(r[0].ends, 1);
		print_message("failfast %d: a read failing once ends with %d after %llu retries\n", ff, r[0].m.res,
			      (unsigned long long)q.nr_read_retry);
		assert_int_equal(r[0].m.res, ff ? -EIO : 0);
		assert_int_equal(q.nr_read_retry, ff ? 0 : 1);
	}
	/* A write is not retried, failfast or not. */
	mm.failfast = 0;
	assert_int_equal(rf_fault_parse("error=EIO ops=write count=1", &spec, err, sizeof(err)), 0);
	rf_fault_set(mm.fault, &spec);
	r[0] = (struct rec){ .m = { .end = rec_end, .buf = buf[0], .off = 4096, .len = 4096, .op = RF_MIO_WRITE } };
	rf_ioq_queue(&q, &r[0].m);
	run_all(&q);
	assert_int_equal(r[0].m.res, -EIO);
	/* failfast, four adjacent reads merged into one that fails once:
	 * all four end with the error, nothing issued again. */
	mm.failfast = 1;
	assert_int_equal(rf_fault_parse("error=EIO ops=read count=1", &spec, err, sizeof(err)), 0);
	rf_fault_set(mm.fault, &spec);
	fake_log_on = true;
	fake_nlog = 0;
	for (int i = 0; i < 4; i++) {
		r[i] = (struct rec){ .m = { .end = rec_end, .buf = buf[i], .off = (uint64_t)i * 4096, .len = 4096,
					    .op = RF_MIO_READ } };
		rf_ioq_queue(&q, &r[i].m);
	}
	run_all(&q);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(r[i].ends, 1);
		assert_int_equal(r[i].m.res, -EIO);
	}
	assert_int_equal(fake_nlog, 0);         /* the injected error ended it before the backend */
	rf_ioq_destroy(&q);
	rf_fault_free(mm.fault);
	close(mm.fd);
	fake_reset();
}

static void test_uring(void **state)
{
	struct rf_ioq_member mm = { .fd_direct = -1, .align = 4096 };
	struct rf_ioq q;
	struct rec w, r;
	static char out[8192], in[8192];
	int ret;

	mm.fd = tmpfile_fd(16384);
	ret = rf_ioq_init_uring(&q, RF_IOQ_ARRAY(&mm, 1), 8);
	if (ret == -ENOSYS || ret == -EPERM) {
		skip();
		return;
	}
	assert_int_equal(ret, 0);
	memset(out, 0x5a, sizeof(out));
	w = (struct rec){ .m = { .end = rec_end, .buf = out, .off = 100, .len = 8192, .op = RF_MIO_WRITE } };
	rf_ioq_queue(&q, &w.m);
	while (!w.ends) {
		rf_ioq_submit(&q);
		rf_ioq_reap(&q, true);
	}
	assert_int_equal(w.m.res, 0);
	r = (struct rec){ .m = { .end = rec_end, .buf = in, .off = 100, .len = 8192, .op = RF_MIO_READ } };
	rf_ioq_queue(&q, &r.m);
	while (!r.ends) {
		rf_ioq_submit(&q);
		rf_ioq_reap(&q, true);
	}
	assert_int_equal(r.m.res, 0);
	assert_memory_equal(in, out, sizeof(out));
	/* A kick wakes a wait with nothing in flight. */
	rf_ioq_kick(&q);
	assert_int_equal(rf_ioq_reap(&q, true), 0);
	rf_ioq_destroy(&q);
	close(mm.fd);
}

/* Queue r (len bytes at off into buf) and run the queue. */
static void read_one(struct rf_ioq *q, struct rec *r, char *buf, uint64_t off, uint32_t len)
{
	*r = (struct rec){ .m = { .end = rec_end, .buf = buf, .off = off, .len = len, .op = RF_MIO_READ } };
	rf_ioq_queue(q, &r->m);
	run_all(q);
	assert_int_equal(r->ends, 1);
}

static void test_mapped_reads(void **state)
{
	struct rf_ioq_member mm = { .fd_direct = -1, .align = 4096 };
	static char data[16384], in[16384];
	char path[] = "/dev/shm/rf-ioq-map-XXXXXX";
	struct rf_ioq q;
	struct rec r[3];
	int i;

	(void)state;
	mm.fd = mkstemp(path);
	if (mm.fd < 0)
		skip();                 /* no /dev/shm */
	unlink(path);
	for (i = 0; i < (int)sizeof(data); i++)
		data[i] = (char)(i * 7 + 3);
	assert_int_equal(pwrite(mm.fd, data, sizeof(data), 0), (ssize_t)sizeof(data));
	rf_fdmap_setup(true);
	rf_fdmap_catch_sigbus();        /* cmocka takes SIGBUS for each test */
	assert_int_equal(rf_fdmap_open(&mm.map, mm.fd, 12288, false), 0);
	assert_int_equal(rf_ioq_init_sync(&q, RF_IOQ_ARRAY(&mm, 1), 8), 0);

	/* Three adjacent reads: merged, one copy from the mapping. */
	for (i = 0; i < 3; i++) {
		r[i] = (struct rec){ .m = { .end = rec_end, .buf = in + 4096 * i, .off = 4096 * (uint64_t)i,
					    .len = 4096, .op = RF_MIO_READ } };
		rf_ioq_queue(&q, &r[i].m);
	}
	run_all(&q);
	for (i = 0; i < 3; i++) {
		assert_int_equal(r[i].ends, 1);
		assert_int_equal(r[i].m.res, 0);
	}
	assert_memory_equal(in, data, 12288);
	assert_int_equal(q.nr_mapped, 1);

	/* Past the mapped 12 KiB: issued, read from the file. */
	memset(in, 0, sizeof(in));
	read_one(&q, &r[0], in, 8192, 8192);
	assert_int_equal(r[0].m.res, 0);
	assert_memory_equal(in, data + 8192, 8192);
	assert_int_equal(q.nr_mapped, 1);

	/* Shrunk to 4 KiB under the mapping: the copy faults, the read is
	 * issued and finds nothing there. */
	assert_int_equal(ftruncate(mm.fd, 4096), 0);
	read_one(&q, &r[0], in, 4096, 4096);
	assert_int_equal(r[0].m.res, -EIO);
	assert_int_equal(q.nr_mapped, 1);
	read_one(&q, &r[0], in, 0, 4096);
	assert_int_equal(r[0].m.res, 0);
	assert_int_equal(q.nr_mapped, 2);
	/* Merged over the shrunk end: the one copy faults in its second
	 * piece, the operation is issued, its first piece reads from the
	 * file and the others, alone, fail. */
	memset(in, 0, sizeof(in));
	for (i = 0; i < 3; i++) {
		r[i] = (struct rec){ .m = { .end = rec_end, .buf = in + 4096 * i, .off = 4096 * (uint64_t)i,
					    .len = 4096, .op = RF_MIO_READ } };
		rf_ioq_queue(&q, &r[i].m);
	}
	run_all(&q);
	assert_int_equal(r[0].m.res, 0);
	assert_memory_equal(in, data, 4096);
	assert_int_equal(r[1].m.res, -EIO);
	assert_int_equal(r[2].m.res, -EIO);
	assert_int_equal(q.nr_mapped, 2);
	rf_ioq_destroy(&q);

	rf_fdmap_close(&mm.map);

	/* Writable: adjacent writes merged, one copy to the mapping, in the
	 * file at once; a write past the mapping is issued. */
	assert_int_equal(ftruncate(mm.fd, 16384), 0);
	assert_int_equal(rf_fdmap_open(&mm.map, mm.fd, 12288, true), 0);
	assert_int_equal(rf_ioq_init_sync(&q, RF_IOQ_ARRAY(&mm, 1), 8), 0);
	for (i = 0; i < (int)sizeof(data); i++)
		data[i] = (char)(i * 13 + 5);
	for (i = 0; i < 2; i++) {
		r[i] = (struct rec){ .m = { .end = rec_end, .buf = data + 4096 * i, .off = 4096 + 4096 * (uint64_t)i,
					    .len = 4096, .op = RF_MIO_WRITE } };
		rf_ioq_queue(&q, &r[i].m);
	}
	run_all(&q);
	assert_int_equal(r[0].m.res, 0);
	assert_int_equal(r[1].m.res, 0);
	assert_int_equal(q.nr_mapped, 1);
	assert_int_equal(pread(mm.fd, in, 8192, 4096), 8192);
	assert_memory_equal(in, data, 8192);
	r[2] = (struct rec){ .m = { .end = rec_end, .buf = data + 8192, .off = 12288, .len = 4096, .op = RF_MIO_WRITE } };
	rf_ioq_queue(&q, &r[2].m);
	run_all(&q);
	assert_int_equal(r[2].m.res, 0);
	assert_int_equal(q.nr_mapped, 1);
	assert_int_equal(pread(mm.fd, in, 4096, 12288), 4096);
	assert_memory_equal(in, data + 8192, 4096);
	/* Shrunk under the mapping: the copy faults, the write is issued
	 * (a file write, which grows it again) and lands. */
	assert_int_equal(ftruncate(mm.fd, 0), 0);
	r[0] = (struct rec){ .m = { .end = rec_end, .buf = data, .off = 0, .len = 4096, .op = RF_MIO_WRITE } };
	rf_ioq_queue(&q, &r[0].m);
	run_all(&q);
	assert_int_equal(r[0].m.res, 0);
	assert_int_equal(q.nr_mapped, 1);
	assert_int_equal(pread(mm.fd, in, 4096, 0), 4096);
	assert_memory_equal(in, data, 4096);
	/* Merged, over a file shrunk to its first 4 KiB: the copy lands its
	 * first piece and faults in the second, and the write is issued
	 * whole and lands. */
	assert_int_equal(ftruncate(mm.fd, 4096), 0);
	for (i = 0; i < 3; i++) {
		r[i] = (struct rec){ .m = { .end = rec_end, .buf = data + 4096 * i, .off = 4096 * (uint64_t)i,
					    .len = 4096, .op = RF_MIO_WRITE } };
		rf_ioq_queue(&q, &r[i].m);
	}
	run_all(&q);
	for (i = 0; i < 3; i++)
		assert_int_equal(r[i].m.res, 0);
	assert_int_equal(q.nr_mapped, 1);
	assert_int_equal(pread(mm.fd, in, 12288, 0), 12288);
	assert_memory_equal(in, data, 12288);
	rf_ioq_destroy(&q);

	/* A walk's queue (stream): inside the mapping too, its writes and
	 * reads are issued, not copied, and land the same. */
	assert_int_equal(ftruncate(mm.fd, 16384), 0);
	assert_int_equal(rf_ioq_init_sync(&q, RF_IOQ_ARRAY(&mm, 1), 8), 0);
	q.stream = true;
	for (i = 0; i < (int)sizeof(data); i++)
		data[i] = (char)(i * 11 + 1);
	r[0] = (struct rec){ .m = { .end = rec_end, .buf = data, .off = 0, .len = 8192, .op = RF_MIO_WRITE } };
	rf_ioq_queue(&q, &r[0].m);
	run_all(&q);
	assert_int_equal(r[0].m.res, 0);
	memset(in, 0, sizeof(in));
	read_one(&q, &r[1], in, 0, 8192);
	assert_int_equal(r[1].m.res, 0);
	assert_memory_equal(in, data, 8192);
	assert_int_equal(q.nr_mapped, 0);
	assert_int_equal(pread(mm.fd, in, 8192, 0), 8192);
	assert_memory_equal(in, data, 8192);
	/* control: the same queue otherwise copies both */
	q.stream = false;
	read_one(&q, &r[1], in, 0, 8192);
	assert_int_equal(q.nr_mapped, 1);
	rf_ioq_destroy(&q);

	/* A backend that sees every read gets this one too. */
	fake_reset();
	assert_int_equal(fake_ioq_init(&q, RF_IOQ_ARRAY(&mm, 1), 8), 0);
	read_one(&q, &r[0], in, 0, 4096);
	assert_int_equal(q.nr_mapped, 0);
	rf_ioq_destroy(&q);
	rf_fdmap_close(&mm.map);
	close(mm.fd);
}

/* The one rule for a mapping's use: inside it, a plain member, a write
 * only on a mapping for writes and not while the io log records. */
static void test_member_map(void **state)
{
	static char bytes[8192];
	struct rf_ioq_member mm = { .fd = 3, .fd_direct = -1, .align = 4096,
				    .map = { .base = bytes, .len = sizeof(bytes) } };
	int layer;

	(void)state;
	assert_ptr_equal(rf_ioq_member_map(&mm, 4096, 4096, false), bytes + 4096);
	assert_null(rf_ioq_member_map(&mm, 4096, 4097, false));
	assert_null(rf_ioq_member_map(&mm, 0, 4096, true));
	mm.map.writable = true;
	assert_ptr_equal(rf_ioq_member_map(&mm, 0, 4096, true), bytes);
	rf_iolog_on = true;             /* only read here: nothing is logged */
	assert_null(rf_ioq_member_map(&mm, 0, 4096, true));
	assert_ptr_equal(rf_ioq_member_map(&mm, 0, 4096, false), bytes);
	rf_iolog_on = false;
	mm.layer = &layer;
	assert_null(rf_ioq_member_map(&mm, 0, 4096, false));
	mm.layer = NULL;
	mm.nbd = (struct rf_nbd *)&layer;
	assert_null(rf_ioq_member_map(&mm, 0, 4096, false));
	mm.nbd = NULL;
	mm.map.base = NULL;
	assert_null(rf_ioq_member_map(&mm, 0, 4096, false));
}


/* ---- direct mode (struct rf_ioq_member.direct) ---- */

#define DSZ ((8u << 20) + 512)  /* past the bounce buffer, an odd tail */

/* Queue one mio and run it on a real backend to its end. */
static void run_one(struct rf_ioq *q, struct rec *r, int op, char *buf, uint64_t off, uint32_t len)
{
	*r = (struct rec){ .m = { .end = rec_end, .buf = buf, .off = off, .len = len, .op = (uint8_t)op } };
	rf_ioq_queue(q, &r->m);
	while (!r->ends) {
		assert_int_equal(rf_ioq_submit(q), 0);
		assert_true(rf_ioq_reap(q, true) >= 0);
	}
	assert_int_equal(r->ends, 1);
}

/* Pages of fd's file in the page cache. */
static size_t cached_pages(int fd, size_t size)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t n = (size + (size_t)pg - 1) / (size_t)pg, i, in = 0;
	unsigned char *vec = malloc(n);
	void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);

	assert_non_null(vec);
	assert_true(p != MAP_FAILED);
	assert_int_equal(mincore(p, size, vec), 0);
	for (i = 0; i < n; i++)
		in += vec[i] & 1;
	munmap(p, size);
	free(vec);
	return in;
}

/* A member file on a disk file system (not tmpfs: /var/tmp), DSZ bytes of
 * a known pattern, out of the page cache; fd and fd_direct in mm.  false:
 * no such file system or no O_DIRECT there. */
static bool direct_member(struct rf_ioq_member *mm, char *pat)
{
	char path[] = "/var/tmp/rf-ioq-direct-XXXXXX";
	size_t i;

	memset(mm, 0, sizeof(*mm));
	mm->fd = mkstemp(path);
	if (mm->fd < 0)
		return false;
	mm->fd_direct = open(path, O_RDWR | O_DIRECT);
	unlink(path);
	if (mm->fd_direct < 0 || rf_fdmap_in_memory(mm->fd)) {
		close(mm->fd);
		if (mm->fd_direct >= 0)
			close(mm->fd_direct);
		return false;
	}
	for (i = 0; i < DSZ; i++)
		pat[i] = (char)(i * 131 + i / 4096);
	assert_int_equal(pwrite(mm->fd, pat, DSZ, 0), (ssize_t)DSZ);
	assert_int_equal(fsync(mm->fd), 0);
	assert_int_equal(posix_fadvise(mm->fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	mm->align = rf_devopen_dio_align(mm->fd_direct, false);
	mm->direct = 1;
	return true;
}

static void direct_round(bool uring)
{
	struct rf_ioq_member mm;
	struct rf_ioq q;
	struct rec r, m3[3];
	char *pat = malloc(DSZ), *raw = malloc(DSZ + 8192), *buf, *w = malloc(64 << 10), *back = malloc(64 << 10);
	uint32_t al;
	int i, ret;

	assert_non_null(pat);
	assert_non_null(raw);
	if (!direct_member(&mm, pat)) {
		free(pat);
		free(raw);
		free(w);
		free(back);
		skip();
		return;
	}
	al = mm.align;
	ret = uring ? rf_ioq_init_uring(&q, RF_IOQ_ARRAY(&mm, 1), 16) : rf_ioq_init_sync(&q, RF_IOQ_ARRAY(&mm, 1), 16);
	if (ret == -ENOSYS || ret == -EPERM) {
		skip();
		return;
	}
	assert_int_equal(ret, 0);
	/* An address off any alignment. */
	buf = (char *)(((uintptr_t)raw + 4095) & ~(uintptr_t)4095) + 1;

	/* Aligned as it is: not bounced. */
	run_one(&q, &r, RF_MIO_READ, buf - 1, 8192, 8192);
	assert_int_equal(r.m.res, 0);
	assert_memory_equal(buf - 1, pat + 8192, 8192);
	assert_int_equal(q.nr_bounced, 0);
	/* An unaligned buffer. */
	run_one(&q, &r, RF_MIO_READ, buf, 4096, 3 * 4096);
	assert_int_equal(r.m.res, 0);
	assert_memory_equal(buf, pat + 4096, 3 * 4096);
	assert_int_equal(q.nr_bounced, 1);
	/* An unaligned offset and an odd length: widened. */
	run_one(&q, &r, RF_MIO_READ, buf, al + 7, 5001);
	assert_int_equal(r.m.res, 0);
	assert_memory_equal(buf, pat + al + 7, 5001);
	/* The member's last bytes, an odd count of them, then one past. */
	run_one(&q, &r, RF_MIO_READ, buf, DSZ - 300, 300);
	assert_int_equal(r.m.res, 0);
	assert_memory_equal(buf, pat + DSZ - 300, 300);
	run_one(&q, &r, RF_MIO_READ, buf, DSZ - 300, 600);
	assert_int_equal(r.m.res, -EIO);
	/* Longer than the bounce buffer: in turns, all of it. */
	run_one(&q, &r, RF_MIO_READ, buf, 0, DSZ);
	assert_int_equal(r.m.res, 0);
	assert_memory_equal(buf, pat, DSZ);
	assert_true(q.nr_short > 0);
	/* Three reads into odd addresses, adjacent: merged, one bounce. */
	for (i = 0; i < 3; i++) {
		m3[i] = (struct rec){ .m = { .end = rec_end, .buf = buf + i * 5000, .off = 65536 + (uint64_t)i * 4096,
					     .len = 4096, .op = RF_MIO_READ } };
		rf_ioq_queue(&q, &m3[i].m);
	}
	assert_int_equal(q.nr_merged, 2);
	while (!m3[0].ends || !m3[1].ends || !m3[2].ends) {
		assert_int_equal(rf_ioq_submit(&q), 0);
		assert_true(rf_ioq_reap(&q, true) >= 0);
	}
	for (i = 0; i < 3; i++) {
		assert_int_equal(m3[i].m.res, 0);
		assert_memory_equal(buf + i * 5000, pat + 65536 + i * 4096, 4096);
	}
	/* Writes from an unaligned buffer, aligned offset and length. */
	for (i = 0; i < (64 << 10); i++)
		w[i] = (char)(i * 7 + 3);
	memcpy(buf, w, 64 << 10);
	run_one(&q, &r, RF_MIO_WRITE, buf, 1 << 20, 64 << 10);
	assert_int_equal(r.m.res, 0);
	memcpy(pat + (1 << 20), w, 64 << 10);
	/* Nothing of it went through the page cache. */
	assert_int_equal(cached_pages(mm.fd, DSZ), 0);
	assert_int_equal(pread(mm.fd_direct, buf - 1, 64 << 10, 1 << 20), 64 << 10);
	assert_memory_equal(buf - 1, w, 64 << 10);
	/* A write at an unaligned offset: written through the buffered
	 * descriptor (RWF_DSYNC), not bounced; its neighbours kept. */
	i = (int)q.nr_bounced;
	run_one(&q, &r, RF_MIO_WRITE, buf, 3, 10);
	assert_int_equal(r.m.res, 0);
	assert_int_equal((int)q.nr_bounced, i);
	memcpy(pat + 3, buf, 10);
	run_one(&q, &r, RF_MIO_READ, back, 0, 4096);
	assert_memory_equal(back, pat, 4096);

	/* The control: buffered mode, the same reads fill the page cache. */
	assert_int_equal(posix_fadvise(mm.fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	mm.direct = 0;
	i = (int)q.nr_bounced;
	run_one(&q, &r, RF_MIO_READ, buf, 0, 1 << 20);
	assert_int_equal(r.m.res, 0);
	assert_memory_equal(buf, pat, 1 << 20);
	assert_int_equal((int)q.nr_bounced, i);
	assert_true(cached_pages(mm.fd, DSZ) >= 256);

	rf_ioq_destroy(&q);
	close(mm.fd);
	close(mm.fd_direct);
	free(pat);
	free(raw);
	free(w);
	free(back);
}

static void test_direct_sync(void **state)
{
	direct_round(false);
}

static void test_direct_uring(void **state)
{
	direct_round(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_again_busy),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_merge_short),
		cmocka_unit_test(test_read_retry),
		cmocka_unit_test(test_plug),
		cmocka_unit_test(test_uring),
		cmocka_unit_test(test_mapped_reads),
		cmocka_unit_test(test_member_map),
		cmocka_unit_test(test_direct_sync),
		cmocka_unit_test(test_direct_uring),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
