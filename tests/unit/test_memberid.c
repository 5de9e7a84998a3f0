/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_memberid.c - one identity per member, whatever name reaches it.
 *
 * Files: a symbolic link and a hard link are the file; two files are
 * not.  Block devices: one device number is one device; a loop device is
 * the file behind it, and two loop devices over one file are one member.
 * NBD exports: one export of one server is one member, another export or
 * another server is not, and an export name is compared whole (two long
 * names that differ past what a message shows differ).  Superblocks: one
 * md device UUID is one member; an all-zero one (0.90) says nothing.  An
 * identity with nothing known is never the same as anything.  Each "same"
 * has a message naming both and saying why.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fixture.h"
#include "raidfuse/devopen.h"
#include "raidfuse/memberid.h"

static void open_id(const char *name, struct rf_member_id *m)
{
	struct rf_devopen_fd d;
	char p[FX_PATH], err[1024];

	snprintf(p, sizeof(p), "%s/%s", fx_dir, name);
	if (rf_devopen_open(p, name, RF_DEVOPEN_NOLOCK, &d, err, sizeof(err)))
		fail_msg("%s", err);
	rf_member_id_of_dev(m, &d.id);
	rf_devopen_close(&d);
}

static void test_files(void **state)
{
	struct rf_member_id a, b, c, h;
	char p[FX_PATH], q[FX_PATH], err[1024];

	(void)state;
	rf_devopen_allow_unsafe_dirs(true);
	snprintf(p, sizeof(p), "%s/f0.img", fx_dir);
	fx_file_make(p, 1 << 20);
	snprintf(q, sizeof(q), "%s/f1.img", fx_dir);
	fx_file_make(q, 1 << 20);
	snprintf(q, sizeof(q), "%s/sym.img", fx_dir);
	assert_int_equal(symlink(p, q), 0);
	snprintf(q, sizeof(q), "%s/hard.img", fx_dir);
	assert_int_equal(link(p, q), 0);
	open_id("f0.img", &a);
	open_id("sym.img", &b);
	open_id("f1.img", &c);
	open_id("hard.img", &h);
	assert_int_equal(a.kind, RF_MEMBER_FILE);
	assert_int_equal(rf_member_same(&a, &b), RF_MEMBER_SAME_FILE);
	assert_int_equal(rf_member_same(&b, &h), RF_MEMBER_SAME_FILE);
	assert_int_equal(rf_member_same(&a, &c), RF_MEMBER_DIFFERENT);
	rf_member_same_msg(err, sizeof(err), "member 0 (f0.img)", &a, "member 2 (sym.img)", &b,
			   "each member must be given once");
	assert_non_null(strstr(err, "member 0 (f0.img) and member 2 (sym.img) are the same file twice (device "));
	assert_non_null(strstr(err, "): each member must be given once"));
	assert_null(strstr(err, "loop device"));
}

/* What devopen.c finds for a block device (a loop device over dev/ino
 * when over). */
static void blk_id(struct rf_member_id *m, dev_t rdev, bool over, dev_t dev, ino_t ino)
{
	struct rf_devopen_id id = { .blk = true, .rdev = rdev, .over_file = over, .lo_dev = dev, .lo_ino = ino };

	rf_member_id_of_dev(m, &id);
}

static void test_block_and_loop(void **state)
{
	struct rf_devopen_id fid = { .dev = makedev(0, 45), .ino = 1234 };
	struct rf_member_id file, l0, l1, l2, sd, sd2;
	char err[1024];

	(void)state;
	rf_member_id_of_dev(&file, &fid);
	blk_id(&l0, makedev(7, 0), true, makedev(0, 45), 1234);
	blk_id(&l1, makedev(7, 1), true, makedev(0, 45), 1234);
	blk_id(&l2, makedev(7, 2), true, makedev(0, 45), 1235);
	blk_id(&sd, makedev(8, 16), false, 0, 0);
	blk_id(&sd2, makedev(8, 16), false, 0, 0);
	/* A loop device over the file is the file. */
	assert_int_equal(rf_member_same(&file, &l0), RF_MEMBER_SAME_FILE);
	rf_member_same_msg(err, sizeof(err), "member 0 (d0.img)", &file, "/dev/loop0", &l0, "already in the array");
	assert_string_equal(err, "member 0 (d0.img) and /dev/loop0 are the same file twice (device 0:45, inode 1234; "
			    "/dev/loop0 is a loop device over it): already in the array");
	/* Two loop devices over one file. */
	assert_int_equal(rf_member_same(&l0, &l1), RF_MEMBER_SAME_FILE);
	rf_member_same_msg(err, sizeof(err), "a", &l0, "b", &l1, "t");
	assert_non_null(strstr(err, "both are loop devices over it"));
	/* Over another file, or not over a file: another member. */
	assert_int_equal(rf_member_same(&l0, &l2), RF_MEMBER_DIFFERENT);
	assert_int_equal(rf_member_same(&file, &l2), RF_MEMBER_DIFFERENT);
	assert_int_equal(rf_member_same(&sd, &l0), RF_MEMBER_DIFFERENT);
	/* A disk by two nodes (/dev/sdb, /dev/disk/by-id/...): one rdev. */
	assert_int_equal(rf_member_same(&sd, &sd2), RF_MEMBER_SAME_BLK);
	rf_member_same_msg(err, sizeof(err), "/dev/sdb", &sd, "/dev/disk/by-id/x", &sd2, "t");
	assert_string_equal(err, "/dev/sdb and /dev/disk/by-id/x are the same block device twice (device 8:16): t");
	/* A plain block device with device number 0:45 is not the file on 0:45. */
	assert_int_equal(rf_member_same(&file, &sd), RF_MEMBER_DIFFERENT);
}

static void test_nbd(void **state)
{
	struct rf_member_id a, b, c, d, l1, l2;
	char long1[300], long2[300], err[1024];

	(void)state;
	rf_member_id_nbd(&a, "unix socket 0:45 inode 99", "exp");
	rf_member_id_nbd(&b, "unix socket 0:45 inode 99", "exp");
	rf_member_id_nbd(&c, "unix socket 0:45 inode 99", "other");
	rf_member_id_nbd(&d, "127.0.0.1 port 10809", "exp");
	assert_int_equal(rf_member_same(&a, &b), RF_MEMBER_SAME_NBD);
	assert_int_equal(rf_member_same(&a, &c), RF_MEMBER_DIFFERENT);
	assert_int_equal(rf_member_same(&a, &d), RF_MEMBER_DIFFERENT);
	rf_member_same_msg(err, sizeof(err), "member 0 (nbd+unix:///exp?socket=/a/s)", &a,
			   "member 1 (nbd+unix:///exp?socket=/l/s)", &b, "each member must be given once");
	assert_string_equal(err, "member 0 (nbd+unix:///exp?socket=/a/s) and member 1 (nbd+unix:///exp?socket=/l/s) "
			    "are the same NBD export twice (export \"exp\" of the server at unix socket 0:45 inode 99): "
			    "each member must be given once");
	/* Long names differing only past what is shown. */
	memset(long1, 'x', sizeof(long1) - 1);
	long1[sizeof(long1) - 1] = '\0';
	memcpy(long2, long1, sizeof(long2));
	long2[sizeof(long2) - 2] = 'y';
	rf_member_id_nbd(&l1, "s", long1);
	rf_member_id_nbd(&l2, "s", long2);
	assert_int_equal(rf_member_same(&l1, &l2), RF_MEMBER_DIFFERENT);
	rf_member_id_nbd(&l2, "s", long1);
	assert_int_equal(rf_member_same(&l1, &l2), RF_MEMBER_SAME_NBD);
	/* ... and a shorter one whose every byte is a prefix. */
	long2[10] = '\0';
	rf_member_id_nbd(&l2, "s", long2);
	assert_int_equal(rf_member_same(&l1, &l2), RF_MEMBER_DIFFERENT);
}

static void test_uuid(void **state)
{
	static const uint8_t zero[16], u[16] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	struct rf_devopen_id f0 = { .dev = 1, .ino = 1 }, f1 = { .dev = 1, .ino = 2 };
	struct rf_member_id a, b, n, none;
	char err[1024];

	(void)state;
	rf_member_id_of_dev(&a, &f0);
	rf_member_id_of_dev(&b, &f1);
	rf_member_id_nbd(&n, "127.0.0.1 port 10809", "exp");
	assert_int_equal(rf_member_same(&a, &b), RF_MEMBER_DIFFERENT);
	/* All zero (0.90, or none read): no identity. */
	rf_member_id_set_uuid(&a, zero);
	rf_member_id_set_uuid(&b, zero);
	assert_false(a.has_uuid);
	assert_int_equal(rf_member_same(&a, &b), RF_MEMBER_DIFFERENT);
	/* One UUID on two files, or on a file and an export: one member. */
	rf_member_id_set_uuid(&a, u);
	assert_int_equal(rf_member_same(&a, &b), RF_MEMBER_DIFFERENT);
	rf_member_id_set_uuid(&b, u);
	rf_member_id_set_uuid(&n, u);
	assert_int_equal(rf_member_same(&a, &b), RF_MEMBER_SAME_UUID);
	assert_int_equal(rf_member_same(&a, &n), RF_MEMBER_SAME_UUID);
	rf_member_same_msg(err, sizeof(err), "d0.img", &a, "copy.img", &b, "each member must be given once");
	assert_string_equal(err, "d0.img and copy.img carry the same md device UUID (deadbeef:01020304:05060708:"
			    "090a0b0c): one member twice, or a copy of it: each member must be given once");
	/* Nothing known: never the same, even as itself. */
	memset(&none, 0, sizeof(none));
	assert_int_equal(rf_member_same(&none, &none), RF_MEMBER_DIFFERENT);
	assert_int_equal(rf_member_same(&none, &a), RF_MEMBER_DIFFERENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_block_and_loop),
		cmocka_unit_test(test_nbd),
		cmocka_unit_test(test_uuid),
	};

	return fx_run_tests("memberid", tests);
}
