/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_ctl.c - the control table without FUSE: every md attribute's text
 * for small arrays of each level, mdstat line by line against md's
 * format, what a store takes and refuses (and that a refusal changes
 * nothing and is logged), and the file tree the mount serves.
 *
 * Arrays are real (rf_array_open on member files, workers started) with
 * the fake IO backend, so the setters run the engine's own checks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/core.h"
#include "fake_ioq.h"
#include "raidfuse/ctl.h"
#include "raidfuse/super.h"
#include "raidfuse/sync.h"
#include "fixture.h"

#define MEMBER_BYTES (2u << 20)

/* The image name of the arrays opened next (NULL: testcfg's). */
static const char *open_name;

enum {
	OPEN_RO = 1,            /* as `assemble --ro` */
	OPEN_SB12 = 2,          /* members carry md 1.2 superblocks */
};

/* level, layout, members (NULL entries: "missing"), chunk; tuning as in
 * a config file. */
static struct rf_array *open_array_flags(const char *what, int level, int layout, int n, uint32_t chunk,
					 uint64_t missing, int flags)
{
	const struct fx_array fa = { .what = what, .level = level, .layout = layout, .n = n, .chunk = chunk,
				     .data_offset = flags & OPEN_SB12 ? 64 << 10 : 0,   /* after the superblock */
				     .missing = missing };
	struct rf_config cfg;
	char err[512];
	int i;

	fx_config(&cfg, &fa);
	if (open_name)
		cfg.name = (char *)open_name;
	cfg.readonly = flags & OPEN_RO;
	if (flags & OPEN_SB12) {
		/* what mount and assemble find in the superblocks */
		cfg.metadata = RF_SB_12;
		cfg.has_uuid = true;
	}
	for (i = 0; i < n; i++) {
		char p[FX_PATH];
		int fd;

		fx_member_path(p, sizeof(p), what, i);
		fd = fx_file_open(p, MEMBER_BYTES);
		if (flags & OPEN_SB12) {
			struct rf_sb_new sn = { .level = level, .layout = layout, .raid_disks = n,
						.chunk_sectors = chunk / 512, .data_offset = 128,
						.size = (MEMBER_BYTES >> 9) - 128 };

			if (rf_sb_write12(fd, p, &sn, i, MEMBER_BYTES >> 9, err, sizeof(err)))
				fail_msg("%s", err);
		}
		close(fd);
	}
	fake_reset();   /* no injected faults */
	return fx_open(&cfg, what, fake_ioq_init);
}

static struct rf_array *open_array(const char *what, int level, int layout, int n, uint32_t chunk,
				   uint64_t missing)
{
	return open_array_flags(what, level, layout, n, chunk, missing, 0);
}

/* The content of md/<name> (or mdstat), in a static buffer. */
static const char *show(struct rf_array *a, const char *name)
{
	static char buf[RF_CTL_SHOW_MAX];
	const struct rf_ctl_attr *at = strcmp(name, "mdstat") ? rf_ctl_find(name) : &rf_ctl_mdstat;
	int n;

	if (!at)
		fail_msg("no attribute %s", name);
	n = rf_ctl_show(at, a, -1, buf, sizeof(buf));
	if (n < 0)
		fail_msg("show %s: %s", name, strerror(-n));
	assert_int_equal((size_t)n, strlen(buf));
	return buf;
}

static int store(struct rf_array *a, const char *name, const char *val)
{
	return rf_ctl_store(rf_ctl_find(name), a, -1, val, strlen(val));
}

/* ---------------------------------------------------------------- show */

static void test_show_raid5(void **state)
{
	struct rf_array *a = open_array("r5", 5, 2, 4, 65536, 0);
	const char *active;
	char *end;
	long n;

	assert_string_equal(show(a, "level"), "raid5\n");
	assert_string_equal(show(a, "layout"), "2\n");
	assert_string_equal(show(a, "chunk_size"), "65536\n");
	assert_string_equal(show(a, "raid_disks"), "4\n");
	/* 2 MiB members, whole chunks, no data offset: 2048 KiB each */
	assert_string_equal(show(a, "component_size"), "2048\n");
	assert_string_equal(show(a, "array_state"), "clean\n");
	assert_string_equal(show(a, "degraded"), "0\n");
	assert_string_equal(show(a, "stripe_cache_size"), "40\n");
	assert_string_equal(show(a, "group_thread_cnt"), "2\n");
	assert_string_equal(show(a, "worker_groups"), "2\n");
	assert_string_equal(show(a, "rmw_level"), "1\n");
	assert_string_equal(show(a, "metadata_version"), "none\n");
	assert_string_equal(show(a, "consistency_policy"), "resync\n");
	assert_string_equal(show(a, "reshape_position"), "none\n");
	assert_string_equal(show(a, "reshape_direction"), "forwards\n");
	/* Heads in use: a count no larger than the cache. */
	active = show(a, "stripe_cache_active");
	n = strtol(active, &end, 10);
	assert_string_equal(end, "\n");
	assert_true(n >= 0 && n <= 40);
	rf_array_close(a);
}

static void test_show_other_levels(void **state)
{
	struct rf_array *a;

	a = open_array("r0", 0, 0, 3, 16384, 0);
	assert_string_equal(show(a, "level"), "raid0\n");
	assert_string_equal(show(a, "chunk_size"), "16384\n");
	assert_string_equal(show(a, "raid_disks"), "3\n");
	assert_string_equal(show(a, "consistency_policy"), "none\n");
	rf_array_close(a);

	a = open_array("r1", 1, 0, 2, 0, 0);
	assert_string_equal(show(a, "level"), "raid1\n");
	assert_string_equal(show(a, "chunk_size"), "0\n");
	assert_string_equal(show(a, "component_size"), "2048\n");
	rf_array_close(a);

	a = open_array("r10", 10, 0x102, 4, 65536, 1u << 1);
	assert_string_equal(show(a, "level"), "raid10\n");
	assert_string_equal(show(a, "layout"), "258\n");
	assert_string_equal(show(a, "degraded"), "1\n");
	rf_array_close(a);
}

/* Too small a buffer is an error, not a cut value. */
static void test_show_overflow(void **state)
{
	struct rf_array *a = open_array("ov", 5, 2, 4, 65536, 0);
	char buf[8];

	assert_int_equal(rf_ctl_show(rf_ctl_find("level"), a, -1, buf, sizeof(buf)), 6);
	assert_int_equal(rf_ctl_show(rf_ctl_find("level"), a, -1, buf, 6), -EOVERFLOW);
	assert_int_equal(rf_ctl_show(&rf_ctl_mdstat, a, -1, buf, sizeof(buf)), -EOVERFLOW);
	rf_array_close(a);
}

/* ---------------------------------------------------------------- mdstat */

static void test_mdstat_raid5(void **state)
{
	struct rf_array *a = open_array("m5", 5, 2, 4, 65536, 0);

	/* As /proc/mdstat for md0 (see tests/data/md-images/ * /info/mdstat.txt):
	 * members highest role first, blocks in KiB. */
	assert_string_equal(show(a, "mdstat"),
			    "Personalities : [raid0] [raid1] [raid10] [raid6] [raid5] [raid4] \n"
			    "md0 : active raid5 m5-3.img[3] m5-2.img[2] m5-1.img[1] m5-0.img[0]\n"
			    "      6144 blocks super non-persistent level 5, 64k chunk, algorithm 2 [4/4] [UUUU]\n"
			    "      \n"
			    "unused devices: <none>\n");
	/* A member fails: listed with (F), a hole in the map, degraded. */
	rf_member_fail(a, 1, -EIO, "test", 0);
	assert_string_equal(show(a, "mdstat"),
			    "Personalities : [raid0] [raid1] [raid10] [raid6] [raid5] [raid4] \n"
			    "md0 : active raid5 m5-3.img[3] m5-2.img[2] m5-1.img[1](F) m5-0.img[0]\n"
			    "      6144 blocks super non-persistent level 5, 64k chunk, algorithm 2 [4/3] [U_UU]\n"
			    "      \n"
			    "unused devices: <none>\n");
	assert_string_equal(show(a, "degraded"), "1\n");
	rf_array_close(a);
}

/* Members with md superblocks: md names their format; a read-only array
 * says so. */
static void test_metadata_readonly(void **state)
{
	struct rf_array *a = open_array_flags("sb", 5, 2, 4, 65536, 1u << 2, OPEN_SB12 | OPEN_RO);

	assert_string_equal(show(a, "metadata_version"), "1.2\n");
	assert_string_equal(show(a, "array_state"), "readonly\n");
	assert_string_equal(show(a, "mdstat"),
			    "Personalities : [raid0] [raid1] [raid10] [raid6] [raid5] [raid4] \n"
			    "md0 : active (read-only) raid5 sb-3.img[3] sb-1.img[1] sb-0.img[0]\n"
			    /* 3 x (2048 - 64 KiB of data offset) */
			    "      5952 blocks super 1.2 level 5, 64k chunk, algorithm 2 [4/3] [UU_U]\n"
			    "      \n"
			    "unused devices: <none>\n");
	rf_array_close(a);
}

static void test_mdstat_levels(void **state)
{
	static const struct {
		const char *what;
		int level, layout, n;
		uint32_t chunk;
		uint64_t missing;
		const char *line1, *line2;      /* NULL line1: not checked */
	} t[] = {
		/* a missing member is not listed (md has no device to name) */
		{ "m6", 6, 2, 5, 65536, 1u << 0,
		  "md0 : active raid6 m6-4.img[4] m6-3.img[3] m6-2.img[2] m6-1.img[1]",
		  "      6144 blocks super non-persistent level 6, 64k chunk, algorithm 2 [5/4] [_UUUU]" },
		{ "m4", 4, 5, 3, 16384, 0, NULL,
		  "      4096 blocks super non-persistent level 4, 16k chunk, algorithm 5 [3/3] [UUU]" },
		{ "m0", 0, 0, 3, 65536, 0, "md0 : active raid0 m0-2.img[2] m0-1.img[1] m0-0.img[0]",
		  "      6144 blocks super non-persistent 64k chunks" },
		{ "m1", 1, 0, 2, 0, 1u << 1, "md0 : active raid1 m1-0.img[0]",
		  "      2048 blocks super non-persistent [2/1] [U_]" },
		{ "m10", 10, 0x102, 4, 65536, 0, NULL,
		  "      4096 blocks super non-persistent 64K chunks 2 near-copies [4/4] [UUUU]" },
		{ "m10f", 10, 0x201, 4, 65536, 0, NULL,
		  "      4096 blocks super non-persistent 64K chunks 2 far-copies [4/4] [UUUU]" },
		{ "m10o", 10, 0x10201, 3, 65536, 0, NULL,
		  "      3072 blocks super non-persistent 64K chunks 2 offset-copies [3/3] [UUU]" },
	};
	size_t k;

	for (k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
		struct rf_array *a = open_array(t[k].what, t[k].level, t[k].layout, t[k].n, t[k].chunk,
						t[k].missing);
		const char *l1 = strchr(show(a, "mdstat"), '\n') + 1;
		const char *l2 = strchr(l1, '\n') + 1;
		const char *l3 = strchr(l2, '\n') + 1;

		if (t[k].line1 && strncmp(l1, t[k].line1, strlen(t[k].line1)))
			fail_msg("%s: mdstat line 1 is %.*s", t[k].what, (int)(l2 - l1 - 1), l1);
		if (strncmp(l2, t[k].line2, strlen(t[k].line2)) || l2[strlen(t[k].line2)] != '\n')
			fail_msg("%s: mdstat line 2 is %.*s", t[k].what, (int)(l3 - l2 - 1), l2);
		assert_string_equal(l3, "      \nunused devices: <none>\n");
		rf_array_close(a);
	}
}

/* ---------------------------------------------------------------- store */

/* Values that must be refused, whatever the attribute's range. */
static const char *const garbage[] = {
	"", "\n", "abc", "12abc", " 12", "12 ", "-5", "0x20", "1.5", "99999999999999999999",
	"300\n\n", "\n300",
};

/* name takes [lo, hi] (and nothing outside): check both ends, both
 * neighbours outside, and the garbage; after each refusal the shown value
 * is the last accepted one. */
static void check_int_store(struct rf_array *a, const char *name, int lo, int hi)
{
	char v[32], want[32];
	size_t i;

	snprintf(v, sizeof(v), "%d\n", lo);
	assert_int_equal(store(a, name, v), 0);
	assert_string_equal(show(a, name), v);
	snprintf(v, sizeof(v), "%d", hi);       /* no newline: also fine */
	assert_int_equal(store(a, name, v), 0);
	snprintf(want, sizeof(want), "%d\n", hi);
	assert_string_equal(show(a, name), want);
	snprintf(v, sizeof(v), "%d", lo - 1);
	assert_int_equal(store(a, name, v), -EINVAL);
	snprintf(v, sizeof(v), "%d", hi + 1);
	assert_int_equal(store(a, name, v), -EINVAL);
	for (i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++)
		if (store(a, name, garbage[i]) != -EINVAL)
			fail_msg("%s took '%s'", name, garbage[i]);
	assert_string_equal(show(a, name), want);
	/* md's kstrto*: a leading '+' and leading zeros are fine */
	snprintf(v, sizeof(v), "+%d\n", lo);
	assert_int_equal(store(a, name, v), 0);
	snprintf(want, sizeof(want), "%d\n", lo);
	assert_string_equal(show(a, name), want);
	snprintf(v, sizeof(v), "00%d", hi);
	assert_int_equal(store(a, name, v), 0);
	snprintf(want, sizeof(want), "%d\n", hi);
	assert_string_equal(show(a, name), want);
}

static void test_store_ranges(void **state)
{
	struct rf_array *a = open_array("st", 5, 2, 4, 65536, 0);

	check_int_store(a, "stripe_cache_size", 17, 32768);
	/* 2 groups: as many threads each as the bound on all of them takes */
	check_int_store(a, "group_thread_cnt", 0, rf_max_worker_threads() / 2);
	assert_int_equal(store(a, "group_thread_cnt", "0"), 0);
	check_int_store(a, "worker_groups", 1, 64);
	check_int_store(a, "rmw_level", 0, 2);
	/* back to something small, and IO still works through the engine */
	assert_int_equal(store(a, "stripe_cache_size", "64\n"), 0);
	assert_string_equal(show(a, "stripe_cache_size"), "64\n");
	rf_array_close(a);
}

/* Worker threads in all stay within rf_max_worker_threads(), whichever
 * of the two attributes would pass it: 64 groups of 64 threads (4096)
 * are refused and change nothing. */
static void test_store_thread_bound(void **state)
{
	struct rf_array *a = open_array("tb", 5, 2, 4, 65536, 0);
	int max = rf_max_worker_threads();
	char v[16];

	/* opened with 2 groups of 2 threads: 64 of them would be 128 */
	assert_int_equal(store(a, "worker_groups", "64"), max >= 128 ? 0 : -EINVAL);
	assert_int_equal(store(a, "group_thread_cnt", "0"), 0);
	assert_int_equal(store(a, "worker_groups", "64"), 0);
	assert_int_equal(store(a, "group_thread_cnt", "64"), -EINVAL);
	assert_string_equal(show(a, "group_thread_cnt"), "0\n");
	assert_string_equal(show(a, "worker_groups"), "64\n");
	/* 8 groups at the bound; one more thread each, or more groups, no */
	assert_int_equal(store(a, "worker_groups", "8"), 0);
	snprintf(v, sizeof(v), "%d", max / 8);
	assert_int_equal(store(a, "group_thread_cnt", v), 0);
	snprintf(v, sizeof(v), "%d", max / 8 + 1);
	assert_int_equal(store(a, "group_thread_cnt", v), -EINVAL);
	assert_int_equal(store(a, "worker_groups", "64"), max >= 64 * (max / 8) ? 0 : -EINVAL);
	assert_int_equal(store(a, "group_thread_cnt", "0"), 0);
	assert_int_equal(store(a, "worker_groups", "2"), 0);
	rf_array_close(a);
}

static void test_store_limits(void **state)
{
	struct rf_array *a = open_array("lim", 5, 2, 4, 65536, 0);
	char *big = malloc(RF_CTL_VALUE_MAX + 2);
	const struct rf_ctl_attr *at = rf_ctl_find("stripe_cache_size");

	assert_int_equal(store(a, "stripe_cache_size", "100"), 0);
	/* a value longer than a page is refused, even if it is digits */
	memset(big, '0', RF_CTL_VALUE_MAX + 1);
	big[RF_CTL_VALUE_MAX - 3] = '1';
	big[RF_CTL_VALUE_MAX + 1] = '\0';
	assert_int_equal(rf_ctl_store(at, a, -1, big, RF_CTL_VALUE_MAX + 1), -EINVAL);
	/* the longest one allowed (zeros, then 200) is parsed */
	memset(big, '0', RF_CTL_VALUE_MAX);
	memcpy(big + RF_CTL_VALUE_MAX - 3, "200", 3);
	assert_int_equal(rf_ctl_store(at, a, -1, big, RF_CTL_VALUE_MAX), 0);
	assert_string_equal(show(a, "stripe_cache_size"), "200\n");
	/* ... and with its newline */
	memcpy(big + RF_CTL_VALUE_MAX - 3, "300\n", 4);
	assert_int_equal(rf_ctl_store(at, a, -1, big, RF_CTL_VALUE_MAX + 1), 0);
	assert_string_equal(show(a, "stripe_cache_size"), "300\n");
	/* a NUL inside the buffer is garbage, not an end */
	assert_int_equal(rf_ctl_store(at, a, -1, "50\0" "9", 4), -EINVAL);
	assert_string_equal(show(a, "stripe_cache_size"), "300\n");
	free(big);
	rf_array_close(a);
}

static void test_array_state(void **state)
{
	struct rf_array *a = open_array("as", 5, 2, 4, 65536, 0);

	assert_int_equal(store(a, "array_state", "suspended\n"), 0);
	assert_string_equal(show(a, "array_state"), "suspended\n");
	assert_int_equal(store(a, "array_state", "suspended"), 0);     /* idempotent */
	assert_string_equal(show(a, "array_state"), "suspended\n");
	assert_int_equal(store(a, "array_state", "bogus"), -EINVAL);
	assert_int_equal(store(a, "array_state", "clean"), -EINVAL);
	assert_int_equal(store(a, "array_state", "active "), -EINVAL);
	assert_string_equal(show(a, "array_state"), "suspended\n");
	assert_int_equal(store(a, "array_state", "active\n"), 0);
	assert_string_equal(show(a, "array_state"), "clean\n");
	assert_int_equal(store(a, "array_state", "active"), 0);
	assert_string_equal(show(a, "array_state"), "clean\n");
	rf_array_close(a);
}

static void test_read_only(void **state)
{
	struct rf_array *a = open_array("ro", 5, 2, 4, 65536, 0);
	const char *ro[] = { "degraded", "events",
			     "stripe_cache_active", "metadata_version", "reshape_position",
			     "reshape_direction" };
	const char *rw[] = { "array_state", "stripe_cache_size", "group_thread_cnt", "rmw_level",
			     "worker_groups", "consistency_policy", "raid_disks", "level", "layout",
			     "chunk_size", "component_size", "array_size" };
	size_t i;

	for (i = 0; i < sizeof(ro) / sizeof(ro[0]); i++) {
		const struct rf_ctl_attr *at = rf_ctl_find(ro[i]);

		assert_non_null(at);
		assert_int_equal(at->mode, 0444);
		assert_int_equal(rf_ctl_store(at, a, -1, "1\n", 2), -EACCES);
	}
	for (i = 0; i < sizeof(rw) / sizeof(rw[0]); i++)
		assert_int_equal(rf_ctl_find(rw[i])->mode, 0644);
	/* md switches resync <-> ppl only where a log's area is: none here */
	assert_int_equal(rf_ctl_store(rf_ctl_find("consistency_policy"), a, -1, "ppl\n", 4), -EINVAL);
	assert_int_equal(rf_ctl_store(rf_ctl_find("consistency_policy"), a, -1, "resync\n", 7), 0);
	assert_string_equal(show(a, "consistency_policy"), "resync\n");
	assert_int_equal(rf_ctl_mdstat.mode, 0444);
	assert_int_equal(rf_ctl_store(&rf_ctl_mdstat, a, -1, "x", 1), -EACCES);
	assert_string_equal(show(a, "level"), "raid5\n");
	assert_null(rf_ctl_find("no_such_attribute"));
	rf_array_close(a);
}

/* A refused value leaves a log line naming the attribute and the value. */
/* What the code under test logs (stderr) between log_capture() and
 * log_captured(), which returns it (valid until the next capture). */
struct logcap {
	int fd, saved;
};

static void log_capture(struct logcap *lc)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/log", fx_dir);
	lc->fd = fx_file_open(path, 0);
	fflush(stderr);
	lc->saved = dup(2);
	dup2(lc->fd, 2);
}

static const char *log_captured(struct logcap *lc)
{
	static char buf[4096];
	ssize_t n;

	fflush(stderr);
	dup2(lc->saved, 2);
	close(lc->saved);
	n = pread(lc->fd, buf, sizeof(buf) - 1, 0);
	close(lc->fd);
	assert_true(n > 0);
	buf[n] = '\0';
	return buf;
}

static void test_refusal_logged(void **state)
{
	struct rf_array *a = open_array("lg", 5, 2, 4, 65536, 0);
	struct logcap lc;
	const char *buf;

	log_capture(&lc);
	assert_int_equal(store(a, "stripe_cache_size", "16\n"), -EINVAL);
	assert_int_equal(store(a, "rmw_level", "x\ty"), -EINVAL);
	buf = log_captured(&lc);
	assert_non_null(strstr(buf, "md/stripe_cache_size: refused '16': takes 17..32768"));
	/* control characters are not written to the log as they are */
	assert_non_null(strstr(buf, "md/rmw_level: refused 'x?y'"));
	rf_array_close(a);
}

/* ---------------------------------------------------------------- tree */

static void test_tree(void **state)
{
	struct rf_array *a = open_array("tr", 5, 2, 4, 65536, 0);
	struct rf_ctl_tree t;
	int i, md, img, nmd = 0;

	assert_int_equal(rf_ctl_tree_build(a, &t), 0);
	assert_int_equal(t.nodes[0].kind, RF_CTL_DIR);
	assert_int_equal(t.nodes[0].parent, 0);
	img = rf_ctl_lookup(&t, a, 0, "array.img");
	assert_true(img > 0);
	assert_int_equal(t.nodes[img].kind, RF_CTL_IMAGE);
	i = rf_ctl_lookup(&t, a, 0, "mdstat");
	assert_true(i > 0);
	assert_ptr_equal(t.nodes[i].attr, &rf_ctl_mdstat);
	md = rf_ctl_lookup(&t, a, 0, "md");
	assert_true(md > 0);
	assert_int_equal(t.nodes[md].kind, RF_CTL_DIR);
	assert_int_equal(rf_ctl_lookup(&t, a, 0, "stripe_cache_size"), -ENOENT);
	assert_int_equal(rf_ctl_lookup(&t, a, img, "x"), -ENOTDIR);
	assert_int_equal(rf_ctl_lookup(&t, a, t.n, "x"), -ENOTDIR);
	for (i = 1; i < t.n; i++) {
		assert_true(t.nodes[i].parent < i);
		assert_int_equal(t.nodes[i].member, -1);
		if (t.nodes[i].parent == md && t.nodes[i].kind == RF_CTL_DIR) {
			/* md/bitmap/, md's bitmap group */
			assert_string_equal(t.nodes[i].name, RF_CTL_MD_BITMAP);
			assert_null(t.nodes[i].attr);
		} else if (t.nodes[i].parent == md) {
			nmd++;
			assert_int_equal(t.nodes[i].kind, RF_CTL_FILE);
			assert_string_equal(t.nodes[i].name, t.nodes[i].attr->name);
			if (!rf_ctl_node_present(a, &t.nodes[i])) {
				/* safe_mode_delay: this array keeps no superblocks */
				assert_string_equal(t.nodes[i].name, "safe_mode_delay");
				assert_int_equal(rf_ctl_lookup(&t, a, md, t.nodes[i].name), -ENOENT);
				continue;
			}
			assert_int_equal(rf_ctl_lookup(&t, a, md, t.nodes[i].name), i);
		}
	}
	/* raid5 has every attribute (one absent, above) */
	assert_int_equal(nmd, (int)rf_ctl_md_nattrs);
	/* and every md/bitmap/ one, even without a bitmap, as md */
	{
		int bmd = rf_ctl_lookup(&t, a, md, RF_CTL_MD_BITMAP), nbm = 0;
		char buf[64];

		assert_true(bmd > 0);
		for (i = 1; i < t.n; i++)
			if (t.nodes[i].parent == bmd) {
				nbm++;
				assert_int_equal(t.nodes[i].kind, RF_CTL_FILE);
				assert_string_equal(t.nodes[i].name, t.nodes[i].attr->name);
			}
		assert_int_equal(nbm, (int)rf_ctl_bitmap_nattrs);
		i = rf_ctl_lookup(&t, a, bmd, "location");
		assert_true(rf_ctl_show(t.nodes[i].attr, a, -1, buf, sizeof(buf)) > 0);
		assert_string_equal(buf, "none\n");
		i = rf_ctl_lookup(&t, a, bmd, "time_base");
		assert_true(rf_ctl_show(t.nodes[i].attr, a, -1, buf, sizeof(buf)) > 0);
		assert_string_equal(buf, "5\n");
		i = rf_ctl_lookup(&t, a, bmd, "can_clear");
		assert_true(rf_ctl_show(t.nodes[i].attr, a, -1, buf, sizeof(buf)) > 0);
		assert_string_equal(buf, "\n");
		assert_int_equal(rf_ctl_store(t.nodes[i].attr, a, -1, "true", 4), -ENOENT);
		i = rf_ctl_lookup(&t, a, bmd, "time_base");
		assert_int_equal(rf_ctl_store(t.nodes[i].attr, a, -1, "1", 1), -ENOENT);
	}
	rf_ctl_tree_free(&t);
	rf_array_close(a);

	/* raid1 has no stripe cache: md shows none of its attributes */
	a = open_array("tr1", 1, 0, 2, 0, 0);
	assert_int_equal(rf_ctl_tree_build(a, &t), 0);
	md = rf_ctl_lookup(&t, a, 0, "md");
	assert_int_equal(rf_ctl_lookup(&t, a, md, "stripe_cache_size"), -ENOENT);
	assert_int_equal(rf_ctl_lookup(&t, a, md, "stripe_cache_active"), -ENOENT);
	assert_int_equal(rf_ctl_lookup(&t, a, md, "rmw_level"), -ENOENT);
	assert_true(rf_ctl_lookup(&t, a, md, "group_thread_cnt") > 0);
	assert_true(rf_ctl_lookup(&t, a, md, "array_state") > 0);
	rf_ctl_tree_free(&t);
	rf_array_close(a);
}

/* An array whose image would be called like one of the tree's own root
 * entries gets no tree: it would hide mdstat or md/ (or they it). */
static void test_tree_name_taken(void **state)
{
	static const char *const names[] = { "md", "mdstat" };
	struct rf_ctl_tree t;
	struct rf_array *a;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		open_name = names[i];
		a = open_array("trn", 1, 0, 2, 0, 0);
		open_name = NULL;
		assert_true(rf_ctl_root_name_taken(names[i]));
		assert_int_equal(rf_ctl_tree_build(a, &t), -EINVAL);
		assert_null(t.nodes);
		rf_array_close(a);
	}
	/* a name beside them is served */
	open_name = "md0";
	a = open_array("trn", 1, 0, 2, 0, 0);
	open_name = NULL;
	assert_false(rf_ctl_root_name_taken("md0"));
	assert_int_equal(rf_ctl_tree_build(a, &t), 0);
	assert_true(rf_ctl_lookup(&t, a, 0, "md0") > 0);
	rf_ctl_tree_free(&t);
	rf_array_close(a);
}

/* ---------------------------------------------------------------- devices */

/* md/dev-NAME/<attr> of the array's device NAME, in a static buffer. */
static const char *dev_show(struct rf_array *a, const char *dev, const char *attr)
{
	static char buf[4096];
	const struct rf_ctl_attr *at = rf_ctl_dev_find(attr);
	int n;

	if (!at)
		fail_msg("no device attribute %s", attr);
	n = rf_ctl_dev_show(at, a, dev, buf, sizeof(buf));
	if (n < 0)
		fail_msg("show dev-%s/%s: %s", dev, attr, strerror(-n));
	assert_int_equal((size_t)n, strlen(buf));
	return buf;
}

static int dev_store(struct rf_array *a, const char *dev, const char *attr, const char *val)
{
	return rf_ctl_dev_store(rf_ctl_dev_find(attr), a, dev, val, strlen(val));
}

/* Each device's files say what md's would: state words, slot, offset in
 * sectors, size in KiB, recovery_start "none" when in sync. */
static void test_dev_show(void **state)
{
	struct rf_array *a = open_array_flags("dv", 5, 2, 4, 65536, 1u << 2, OPEN_SB12);
	char buf[64];

	assert_string_equal(dev_show(a, "dv-0.img", "state"), "in_sync\n");
	assert_string_equal(dev_show(a, "dv-3.img", "slot"), "3\n");
	assert_string_equal(dev_show(a, "dv-1.img", "errors"), "0\n");
	/* data_offset 64 KiB = 128 sectors; the rest of 2 MiB, whole chunks, in KiB */
	assert_string_equal(dev_show(a, "dv-1.img", "offset"), "128\n");
	assert_string_equal(dev_show(a, "dv-1.img", "size"), "1984\n");
	assert_string_equal(dev_show(a, "dv-1.img", "recovery_start"), "none\n");
	/* the missing slot has no device: no dev- entry, no rd2 */
	assert_int_equal(rf_ctl_dev_show(rf_ctl_dev_find("state"), a, "dv-2.img", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(rf_ctl_dev_entry(a, "dev-dv-2.img"), -ENOENT);
	assert_int_equal(rf_ctl_dev_entry(a, "dev-dv-1.img"), 0);
	assert_int_equal(rf_ctl_dev_entry(a, "dv-1.img"), -ENOENT);
	assert_int_equal(rf_ctl_dev_entry(a, "dev-"), -ENOENT);
	assert_int_equal(rf_ctl_rd_entry(a, "rd2"), -ENOENT);
	assert_null(rf_ctl_dev_find("nosuch"));

	/* Another device in slot 3 (what a remove and a spare taking the
	 * slot leave): the old name's files are gone, not the new one's. */
	{
		char *saved, other[] = "/x/other.img";

		rf_array_reconf_lock(a);
		saved = rf_dev_get(a, 3)->path;
		rf_dev_get(a, 3)->path = other;
		rf_array_reconf_unlock(a);
		assert_int_equal(rf_ctl_dev_show(rf_ctl_dev_find("slot"), a, "dv-3.img", buf, sizeof(buf)), -ENOENT);
		assert_int_equal(rf_ctl_dev_store(rf_ctl_dev_find("state"), a, "dv-3.img", "faulty", 6), -ENOENT);
		assert_int_equal(rf_ctl_dev_entry(a, "dev-dv-3.img"), -ENOENT);
		assert_string_equal(dev_show(a, "other.img", "slot"), "3\n");
		assert_true(rf_ctl_rd_target(a, 3, buf, sizeof(buf)) > 0);
		assert_string_equal(buf, "dev-other.img");
		rf_array_reconf_lock(a);
		rf_dev_get(a, 3)->path = saved;
		rf_array_reconf_unlock(a);
	}
	rf_array_close(a);
}

/* rdN names slot N's device; the listing has every device, then the links. */
static void test_dev_links(void **state)
{
	struct rf_array *a = open_array("ln", 6, 2, 5, 65536, 1u << 1);
	struct rf_ctl_dev_ent ents[16];
	char buf[300];
	int n;

	assert_int_equal(rf_ctl_rd_target(a, 0, buf, sizeof(buf)), (int)strlen("dev-ln-0.img"));
	assert_string_equal(buf, "dev-ln-0.img");
	assert_true(rf_ctl_rd_target(a, 4, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "dev-ln-4.img");
	assert_int_equal(rf_ctl_rd_target(a, 1, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(rf_ctl_rd_target(a, 5, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(rf_ctl_rd_target(a, 0, buf, 4), -EOVERFLOW);
	assert_int_equal(rf_ctl_rd_entry(a, "rd3"), 3);
	assert_int_equal(rf_ctl_rd_entry(a, "rd03"), -ENOENT);
	assert_int_equal(rf_ctl_rd_entry(a, "rd+3"), -ENOENT);
	assert_int_equal(rf_ctl_rd_entry(a, "rd"), -ENOENT);
	assert_int_equal(rf_ctl_rd_entry(a, "rd1"), -ENOENT);
	n = rf_ctl_dev_list(a, ents, 16);
	assert_int_equal(n, 8);
	assert_string_equal(ents[0].name, "dev-ln-0.img");
	assert_false(ents[0].link);
	assert_string_equal(ents[1].name, "dev-ln-2.img");
	assert_string_equal(ents[3].name, "dev-ln-4.img");
	assert_string_equal(ents[4].name, "rd0");
	assert_true(ents[4].link);
	assert_int_equal(ents[4].slot, 0);
	assert_string_equal(ents[5].name, "rd2");
	assert_string_equal(ents[7].name, "rd4");
	/* a short room is filled, not overrun */
	assert_int_equal(rf_ctl_dev_list(a, ents, 3), 3);
	rf_array_close(a);
}

/* state takes md's words; another word is refused (EINVAL) and logged;
 * "faulty" fails the device, the array shows it. */
static void test_dev_state_store(void **state)
{
	struct rf_array *a = open_array("ds", 5, 2, 4, 65536, 0);
	struct logcap lc;
	const char *buf;

	log_capture(&lc);
	assert_int_equal(dev_store(a, "ds-1.img", "state", "broken\n"), -EINVAL);
	assert_int_equal(dev_store(a, "ds-1.img", "state", "faulty,in_sync"), -EINVAL);
	assert_int_equal(dev_store(a, "ds-1.img", "state", ""), -EINVAL);
	buf = log_captured(&lc);
	assert_non_null(strstr(buf, "md/dev-ds-1.img/state: refused 'broken': takes faulty, remove"));
	assert_string_equal(dev_show(a, "ds-1.img", "state"), "in_sync\n");
	assert_string_equal(show(a, "degraded"), "0\n");

	/* read-only files, and devices that are not there */
	assert_int_equal(dev_store(a, "ds-1.img", "slot", "2"), -EACCES);
	assert_int_equal(dev_store(a, "ds-9.img", "state", "faulty"), -ENOENT);

	assert_int_equal(dev_store(a, "ds-2.img", "state", "faulty\n"), 0);
	assert_string_equal(dev_show(a, "ds-2.img", "state"), "faulty\n");
	assert_string_equal(show(a, "degraded"), "1\n");
	assert_non_null(strstr(show(a, "mdstat"), "[4/3] [UU_U]"));
	assert_string_equal(dev_show(a, "ds-1.img", "state"), "in_sync\n");
	rf_array_close(a);
}

/* md/new_dev is write-only; its store asks the engine to add the file. */
static void test_new_dev(void **state)
{
	struct rf_array *a = open_array("nd", 5, 2, 4, 65536, 0);
	const struct rf_ctl_attr *at = rf_ctl_find("new_dev");
	char buf[64], path[300];
	int ret;

	assert_non_null(at);
	assert_int_equal(at->mode, 0200);
	assert_int_equal(rf_ctl_show(at, a, -1, buf, sizeof(buf)), -EACCES);
	snprintf(path, sizeof(path), "%s/nd-nosuch.img", fx_dir);
	ret = rf_ctl_store(at, a, -1, path, strlen(path));
	/* whatever the engine says, the array is unchanged by a refusal */
	assert_true(ret < 0);
	assert_int_equal(rf_member_ndevs(a), 4);
	rf_array_close(a);
}

/* ---------------------------------------------------------------- who may */

/* The daemon's own check of the modes, as the kernel's
 * default_permissions makes it: owner bits for the owner, group bits for
 * its group (primary or supplementary), the rest for others; root opens
 * anything. */
static void test_may_open(void **state)
{
	static const gid_t g7[] = { 5, 7 };
	const struct rf_ctl_cred owner = { .uid = 1000, .gid = 1000 }, other = { .uid = 1001, .gid = 1001 },
				 root = { .uid = 0, .gid = 0 }, member = { .uid = 1002, .gid = 1002, .groups = g7, .ngroups = 2 },
				 primary = { .uid = 1003, .gid = 7 };

	/* a writable control file, 0644 */
	assert_int_equal(rf_ctl_may_open(&owner, 1000, 7, 0644, true, true), 0);
	assert_int_equal(rf_ctl_may_open(&other, 1000, 7, 0644, true, false), 0);
	assert_int_equal(rf_ctl_may_open(&other, 1000, 7, 0644, false, true), -EACCES);
	assert_int_equal(rf_ctl_may_open(&other, 1000, 7, 0644, true, true), -EACCES);
	assert_int_equal(rf_ctl_may_open(&root, 1000, 7, 0644, true, true), 0);
	/* read-only, 0444: the owner may not write either (root's write is
	 * refused by the file itself, not by its mode) */
	assert_int_equal(rf_ctl_may_open(&owner, 1000, 7, 0444, false, true), -EACCES);
	assert_int_equal(rf_ctl_may_open(&other, 1000, 7, 0444, true, false), 0);
	/* md/new_dev, 0200 */
	assert_int_equal(rf_ctl_may_open(&owner, 1000, 7, 0200, false, true), 0);
	assert_int_equal(rf_ctl_may_open(&owner, 1000, 7, 0200, true, false), -EACCES);
	assert_int_equal(rf_ctl_may_open(&other, 1000, 7, 0200, false, true), -EACCES);
	/* the image, 0600: others may not even read it */
	assert_int_equal(rf_ctl_may_open(&other, 1000, 7, 0600, true, false), -EACCES);
	assert_int_equal(rf_ctl_may_open(&owner, 1000, 7, 0600, true, true), 0);
	/* group bits, by supplementary or primary group */
	assert_int_equal(rf_ctl_may_open(&member, 1000, 7, 0640, true, false), 0);
	assert_int_equal(rf_ctl_may_open(&primary, 1000, 7, 0640, true, false), 0);
	assert_int_equal(rf_ctl_may_open(&other, 1000, 7, 0640, true, false), -EACCES);
	assert_int_equal(rf_ctl_may_open(&member, 1000, 7, 0604, true, false), -EACCES);
}

/* Only the owner and root store, into any control file, whatever its
 * mode; a refusal changes nothing. */
static void test_may_store(void **state)
{
	struct rf_array *a = open_array("ms", 5, 2, 4, 65536, 0);
	const struct rf_ctl_cred owner = { .uid = 1000, .gid = 1000 }, other = { .uid = 1001, .gid = 1000 },
				 root = { 0 };
	const struct rf_ctl_attr *at = rf_ctl_find("stripe_cache_size"), *st = rf_ctl_dev_find("state");

	assert_int_equal(rf_ctl_may_store(&owner, 1000), 0);
	assert_int_equal(rf_ctl_may_store(&root, 1000), 0);
	assert_int_equal(rf_ctl_may_store(&other, 1000), -EACCES);
	assert_int_equal(rf_ctl_store_as(&other, 1000, at, a, -1, NULL, "64", 2), -EACCES);
	assert_string_equal(show(a, "stripe_cache_size"), "40\n");
	assert_int_equal(rf_ctl_store_as(&other, 1000, st, a, -1, "ms-1.img", "faulty", 6), -EACCES);
	assert_int_equal(rf_array_failed(a), false);
	assert_int_equal(rf_array_faulty(a), 0);
	assert_int_equal(rf_ctl_store_as(&owner, 1000, at, a, -1, NULL, "64", 2), 0);
	assert_string_equal(show(a, "stripe_cache_size"), "64\n");
	assert_int_equal(rf_ctl_store_as(&root, 1000, at, a, -1, NULL, "80", 2), 0);
	assert_string_equal(show(a, "stripe_cache_size"), "80\n");
	rf_array_close(a);
}

static long thread_fsuid(void)
{
	return syscall(SYS_setfsuid, -1);
}

/* A thread started before a switch, asked for its fsuid during it. */
struct peer {
	pthread_t th;
	int ask[2], answer[2];
};

static void *peer_main(void *arg)
{
	struct peer *p = arg;
	char c;
	long uid;

	while (read(p->ask[0], &c, 1) == 1) {
		uid = thread_fsuid();
		if (write(p->answer[1], &uid, sizeof(uid)) != sizeof(uid))
			break;
	}
	return NULL;
}

struct as_job {
	const char *path;
	struct peer *peer;
	long fsuid, peer_fsuid;
	int ngroups;
};

static int open_as(void *arg)
{
	struct as_job *j = arg;
	int fd;

	j->fsuid = thread_fsuid();
	j->ngroups = getgroups(0, NULL);
	if (write(j->peer->ask[1], "?", 1) != 1 || read(j->peer->answer[0], &j->peer_fsuid, sizeof(long)) != sizeof(long))
		return -EIO;
	fd = open(j->path, O_RDWR);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* A file written to md/new_dev is opened with the writer's credentials,
 * in the storing thread alone: a root-owned 0600 file is out of reach of
 * uid 1000 through the (root) daemon, a file of its own is not, and
 * root's own is root's.  Needs root (to switch). */
static void test_as_writer(void **state)
{
	const struct rf_ctl_cred user = { .uid = 1000, .gid = 1000 }, root = { 0 };
	const struct rf_ctl_attr *at = rf_ctl_find("new_dev");
	char secret[300], mine[300], before[4096], after[4096];
	struct rf_array *a;
	struct as_job j;
	struct peer p;
	int fd, ngroups = getgroups(0, NULL);

	if (geteuid() != 0)
		skip();
	/* uid 1000 may look into the directory: only the files' modes stop it */
	assert_int_equal(chmod(fx_dir, 0755), 0);
	snprintf(secret, sizeof(secret), "%s/aw-secret.img", fx_dir);
	snprintf(mine, sizeof(mine), "%s/aw-mine.img", fx_dir);
	fd = fx_file_open(secret, MEMBER_BYTES);
	memset(before, 0x5a, sizeof(before));
	assert_int_equal(pwrite(fd, before, sizeof(before), 0), sizeof(before));
	close(fd);
	fd = fx_file_open(mine, MEMBER_BYTES);
	assert_int_equal(fchown(fd, 1000, 1000), 0);
	close(fd);

	/* the switch itself: this thread only, and back after */
	assert_int_equal(pipe(p.ask), 0);
	assert_int_equal(pipe(p.answer), 0);
	assert_int_equal(pthread_create(&p.th, NULL, peer_main, &p), 0);
	j = (struct as_job){ .path = secret, .peer = &p };
	assert_int_equal(rf_ctl_as_writer(&user, open_as, &j), -EACCES);
	assert_int_equal(j.fsuid, 1000);
	assert_int_equal(j.ngroups, 0);
	assert_int_equal(j.peer_fsuid, 0);
	j.path = mine;
	assert_int_equal(rf_ctl_as_writer(&user, open_as, &j), 0);
	j.path = secret;
	assert_int_equal(rf_ctl_as_writer(&root, open_as, &j), 0);
	assert_int_equal(thread_fsuid(), 0);
	assert_int_equal(getgroups(0, NULL), ngroups);
	close(p.ask[1]);
	pthread_join(p.th, NULL);
	close(p.ask[0]);
	close(p.answer[0]);
	close(p.answer[1]);

	/* through md/new_dev: the files' owner given as uid 1000 lets it
	 * store; what opens is then up to its credentials */
	a = open_array("aw", 5, 2, 4, 65536, 0);
	assert_int_equal(rf_ctl_store_as(&user, 1000, at, a, -1, NULL, secret, strlen(secret)), -EACCES);
	assert_int_equal(rf_member_ndevs(a), 4);
	fd = open(secret, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, after, sizeof(after), 0), sizeof(after));
	close(fd);
	assert_memory_equal(before, after, sizeof(before));
	assert_int_equal(rf_ctl_store_as(&user, 1000, at, a, -1, NULL, mine, strlen(mine)), 0);
	assert_int_equal(rf_member_ndevs(a), 5);
	assert_int_equal(thread_fsuid(), 0);
	rf_array_close(a);
}

/* ---------------------------------------------------------------- sync */

/* md/sync_action and its companions: md's words and units, the limits'
 * (local)/(system), mdstat's progress line while a check runs. */
static void test_sync_attrs(void **state)
{
	static const char *const sync_files[] = { "sync_action", "mismatch_cnt", "sync_speed_min", "sync_speed_max",
						  "sync_speed", "sync_completed", "resync_start", NULL };
	struct rf_array *a = open_array("sy", 5, 2, 4, 65536, 0);
	const char *m;
	int i;

	assert_string_equal(show(a, "sync_action"), "idle\n");
	assert_string_equal(show(a, "mismatch_cnt"), "0\n");
	assert_string_equal(show(a, "sync_speed_min"), "1000 (system)\n");
	assert_string_equal(show(a, "sync_speed_max"), "200000 (system)\n");
	assert_string_equal(show(a, "sync_speed"), "none\n");
	assert_string_equal(show(a, "sync_completed"), "none\n");
	assert_int_equal(store(a, "sync_speed_min", "5000\n"), 0);
	assert_string_equal(show(a, "sync_speed_min"), "5000 (local)\n");
	assert_int_equal(store(a, "sync_speed_min", "system"), 0);
	assert_string_equal(show(a, "sync_speed_min"), "1000 (system)\n");
	assert_int_equal(store(a, "sync_speed_min", "fast"), -EINVAL);
	/* md: nothing to rebuild, so "recover" does nothing and succeeds */
	assert_int_equal(store(a, "sync_action", "recover"), 0);
	assert_int_equal(store(a, "sync_action", "bogus"), -EINVAL);
	assert_int_equal(store(a, "mismatch_cnt", "0"), -EACCES);
	/* md's resync_start: sectors, or none. */
	assert_string_equal(show(a, "resync_start"), "none\n");
	assert_int_equal(store(a, "resync_start", "1024\n"), 0);
	assert_string_equal(show(a, "resync_start"), "1024\n");
	assert_int_equal(store(a, "resync_start", "-1"), -EINVAL);
	assert_int_equal(store(a, "resync_start", "12x"), -EINVAL);
	assert_int_equal(store(a, "resync_start", "none"), 0);
	assert_string_equal(show(a, "resync_start"), "none\n");

	/* 1 MiB/s: the first 1 MiB region, then a second of pacing (the
	 * io_uring walk's region: on tmpfs the walk reads inline, in
	 * smaller ones). */
	assert_int_equal(setenv("RAIDFUSE_SYNC_IO", "ring", 1), 0);
	assert_int_equal(store(a, "sync_speed_max", "1000"), 0);
	assert_int_equal(store(a, "sync_action", "check\n"), 0);
	for (i = 0; i < 200 && !strcmp(show(a, "sync_completed"), "0 / 4096\n"); i++)
		usleep(10 * 1000);
	assert_string_equal(show(a, "sync_action"), "check\n");
	assert_int_equal(store(a, "sync_action", "repair"), -EBUSY);
	assert_string_equal(show(a, "sync_completed"), "2048 / 4096\n");
	m = show(a, "mdstat");
	if (!strstr(m, "[UUUU]\n      [==========>..........]  check = 50.0% (1024/2048) finish=0.") ||
	    !strstr(m, "K/sec\n      \nunused devices: <none>\n"))
		fail_msg("mdstat during a check:\n%s", m);
	assert_int_equal(store(a, "sync_action", "idle"), 0);
	assert_string_equal(show(a, "sync_action"), "idle\n");
	assert_string_equal(show(a, "sync_completed"), "none\n");
	assert_null(strstr(show(a, "mdstat"), "check ="));
	assert_int_equal(store(a, "sync_action", "frozen"), 0);
	assert_string_equal(show(a, "sync_action"), "frozen\n");
	assert_int_equal(store(a, "sync_speed_max", "system"), 0);
	assert_int_equal(store(a, "sync_action", "repair"), 0);
	rf_sync_wait(a);
	assert_string_equal(show(a, "sync_action"), "idle\n");
	assert_string_equal(show(a, "mismatch_cnt"), "0\n");
	rf_array_close(a);
	unsetenv("RAIDFUSE_SYNC_IO");

	/* raid0 has nothing to sync: no such files (as md); raid1 has them. */
	for (i = 0; sync_files[i]; i++) {
		a = open_array("sy0", 0, 0, 3, 16384, 0);
		assert_false(rf_ctl_find(sync_files[i])->present(a));
		rf_array_close(a);
		a = open_array("sy1", 1, 0, 2, 0, 0);
		assert_true(rf_ctl_find(sync_files[i])->present(a));
		rf_array_close(a);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_show_raid5),
		cmocka_unit_test(test_show_other_levels),
		cmocka_unit_test(test_show_overflow),
		cmocka_unit_test(test_mdstat_raid5),
		cmocka_unit_test(test_mdstat_levels),
		cmocka_unit_test(test_metadata_readonly),
		cmocka_unit_test(test_store_ranges),
		cmocka_unit_test(test_store_thread_bound),
		cmocka_unit_test(test_store_limits),
		cmocka_unit_test(test_array_state),
		cmocka_unit_test(test_read_only),
		cmocka_unit_test(test_refusal_logged),
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_tree_name_taken),
		cmocka_unit_test(test_sync_attrs),
		cmocka_unit_test(test_dev_show),
		cmocka_unit_test(test_dev_links),
		cmocka_unit_test(test_dev_state_store),
		cmocka_unit_test(test_new_dev),
		cmocka_unit_test(test_may_open),
		cmocka_unit_test(test_may_store),
		cmocka_unit_test(test_as_writer),
	};

	return fx_run_tests("ctl", tests);
}
