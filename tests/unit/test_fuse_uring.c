/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_fuse_uring.c - what decides the transport: the -o io_uring= value,
 * and whether a kernel's INIT request offers FUSE over io_uring (bit 41
 * of the 64-bit flags: flags2 bit 9 with FUSE_INIT_EXT, ABI 7.42+).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <linux/fuse.h>
#include <string.h>

#include "front/fuse_uring.h"

struct init_req {
	struct fuse_in_header h;
	struct fuse_init_in in;
};

static struct init_req init_req(uint32_t minor, uint32_t flags, uint32_t flags2)
{
	struct init_req r;

	memset(&r, 0, sizeof(r));
	r.h.len = sizeof(r);
	r.h.opcode = FUSE_INIT;
	r.h.unique = 2;
	r.in.major = 7;
	r.in.minor = minor;
	r.in.flags = flags;
	r.in.flags2 = flags2;
	return r;
}

static void test_mode(void **state)
{
	assert_int_equal(rf_uring_mode_parse("auto"), RF_URING_AUTO);
	assert_int_equal(rf_uring_mode_parse("on"), RF_URING_ON);
	assert_int_equal(rf_uring_mode_parse("off"), RF_URING_OFF);
	assert_int_equal(rf_uring_mode_parse("yes"), -EINVAL);
	assert_int_equal(rf_uring_mode_parse(""), -EINVAL);
	assert_int_equal(rf_uring_mode_parse("On"), -EINVAL);
}

static void test_offered(void **state)
{
	struct init_req r = init_req(44, FUSE_INIT_EXT, 1u << 9);

	assert_true(rf_uring_offered(&r, sizeof(r)));
	/* the bit without FUSE_INIT_EXT: flags2 means nothing */
	r = init_req(44, 0, 1u << 9);
	assert_false(rf_uring_offered(&r, sizeof(r)));
	/* FUSE_INIT_EXT without the bit (enable_uring off) */
	r = init_req(44, FUSE_INIT_EXT, 1u << 8);
	assert_false(rf_uring_offered(&r, sizeof(r)));
	/* an ABI before 7.42 has no such bit */
	r = init_req(41, FUSE_INIT_EXT, 1u << 9);
	assert_false(rf_uring_offered(&r, sizeof(r)));
	/* another major */
	r = init_req(44, FUSE_INIT_EXT, 1u << 9);
	r.in.major = 8;
	assert_false(rf_uring_offered(&r, sizeof(r)));
	/* not INIT, or cut short */
	r = init_req(44, FUSE_INIT_EXT, 1u << 9);
	r.h.opcode = FUSE_LOOKUP;
	assert_false(rf_uring_offered(&r, sizeof(r)));
	r = init_req(44, FUSE_INIT_EXT, 1u << 9);
	assert_false(rf_uring_offered(&r, sizeof(r.h) + 8));
	/* Not serving (INIT answered by libfuse): its notification is
	 * libfuse's to send (35-fuse-uring checks the one sent here). */
	assert_int_equal(rf_uring_notify_inval_inode(NULL, 1), -ENOSYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mode),
		cmocka_unit_test(test_offered),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
