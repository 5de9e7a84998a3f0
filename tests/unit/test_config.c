/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_config.c - rf_config_load() and rf_parse_size().
 *
 * Every config is a real file in a mkdtemp() directory, loaded the way the
 * daemon loads it.  Each rejected config is checked for the whole prefix of
 * its message, "FILE:LINE: key 'KEY': ", plus a fragment of the reason, so a
 * message that loses its line or names the wrong key fails the test.  The
 * rejected configs are rows of tables (bad_confs: text, line, key,
 * fragment), all checked by refused_as(), which test_bad_conf_check shows
 * failing rows that are wrong on purpose.  Member files are never created
 * except where realpath() matters (symlinks).
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "raidfuse/config.h"
#include "raidfuse/super.h"
#include "fixture.h"

static char tmpdir[PATH_MAX];   /* realpath of fx_dir */
#define PBUF (PATH_MAX + 256)   /* a path under tmpdir */

static int group_setup(void **state)
{
	if (fx_dir_make("config") || !realpath(fx_dir, tmpdir))
		return -1;
	return 0;
}

/* Write text to tmpdir/name (creating one level of subdirectory) and
 * return the file's path in a static buffer. */
static const char *conf(const char *name, const char *text)
{
	static char path[PBUF];
	char *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	slash = strrchr(path, '/');
	*slash = '\0';
	mkdir(path, 0755);
	*slash = '/';
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	return path;
}

static void in_tmp(char *buf, const char *rel)
{
	snprintf(buf, PBUF, "%s/%s", tmpdir, rel);
}

/* A config rf_config_load() must refuse: -EINVAL, a message starting
 * "PATH:LINE: key 'KEY': " (no ":LINE" when line is 0, no key part when key
 * is NULL) and holding frag, and the config left zeroed. */
struct bad_conf {
	const char *what;       /* its group, named when it fails */
	int line;
	const char *key, *frag, *text;
};

/* Load b->text: 0 when it is refused as b says, else -1 and what happened
 * in why. */
static int refused_as(const struct bad_conf *b, char *why, size_t len)
{
	struct rf_config cfg, zero;
	char err[1024], want[PBUF + 256];
	const char *path = conf("bad.conf", b->text);
	int n, r;

	memset(&zero, 0, sizeof(zero));
	memset(&cfg, 0xa5, sizeof(cfg));
	err[0] = '\0';
	r = rf_config_load(path, &cfg, err, sizeof(err));
	if (!r)
		rf_config_free(&cfg);
	n = b->line ? snprintf(want, sizeof(want), "%s:%d: ", path, b->line)
		    : snprintf(want, sizeof(want), "%s: ", path);
	if (b->key)
		snprintf(want + n, sizeof(want) - n, "key '%s': ", b->key);
	if (r != -EINVAL || strncmp(err, want, strlen(want)) || !strstr(err, b->frag)) {
		snprintf(why, len, "got rc %d, message\n  %s\nwanted rc %d, prefix\n  %s\nand \"%s\"", r,
			 r ? err : "(none)", -EINVAL, want, b->frag);
		return -1;
	}
	/* a failed load leaves nothing to free */
	if (memcmp(&cfg, &zero, sizeof(cfg))) {
		snprintf(why, len, "refused as it should, but the config is not left zeroed");
		return -1;
	}
	return 0;
}

static void check_err_at(const char *where, const char *text, int line, const char *key, const char *frag)
{
	const struct bad_conf b = { where, line, key, frag, text };
	char why[PBUF + 2048];

	if (refused_as(&b, why, sizeof(why))) {
		print_error("%s: %s; config:\n%s\n", where, why, text);
		fail();
	}
}

#define check_err(...) check_err_at(__func__, __VA_ARGS__)

static void load_ok(const char *text, struct rf_config *cfg)
{
	char err[1024];
	int r = rf_config_load(conf("ok.conf", text), cfg, err, sizeof(err));

	if (r) {
		print_error("rc %d: %s\nconfig:\n%s\n", r, err, text);
		fail();
	}
}

/* ------------------------------------------------------------------ */

static void test_round_trip(void **state)
{
	static const char text[] =
		"# a raid6 with every key\n"                            /* 1 */
		"array: {\n"                                            /* 2 */
		"  name = \"vol.img\";\n"                               /* 3 */
		"  level = 6;\n"                                        /* 4 */
		"  layout = \"right-asymmetric\";\n"                    /* 5 */
		"  chunk_size = \"64K\";\n"                             /* 6 */
		"  members = ( \"d0.img\",\n"                           /* 7 */
		"              \"/abs/d1.img\",\n"                      /* 8 */
		"              \"missing\",\n"                          /* 9 */
		"              \"sub/d3.img\",\n"                       /* 10 */
		"              \"d4.img\" );\n"                         /* 11 */
		"  member_size = \"1G\";\n"                             /* 12 */
		"  data_offset = 2048;\n"                               /* 13 */
		"  size = \"512M\";\n"                                  /* 14 */
		"};\n"                                                  /* 15 */
		"tuning: { stripe_cache_size = 4096; group_thread_cnt = 2;\n"
		"  worker_groups = 3; stripe_size = \"16K\"; rmw_level = 2; };\n";
	struct rf_config cfg;
	char p[PBUF];

	load_ok(text, &cfg);
	in_tmp(p, "ok.conf");
	assert_string_equal(cfg.path, p);
	assert_string_equal(cfg.name, "vol.img");
	assert_int_equal(cfg.level, 6);
	assert_int_equal(cfg.layout, RF_ALGO_RIGHT_ASYMMETRIC);
	assert_int_equal(cfg.chunk_bytes, 64 * 1024);
	assert_int_equal(cfg.nmembers, 5);
	in_tmp(p, "d0.img");
	assert_string_equal(cfg.members[0], p);
	assert_string_equal(cfg.members[1], "/abs/d1.img");
	assert_null(cfg.members[2]);
	in_tmp(p, "sub/d3.img");
	assert_string_equal(cfg.members[3], p);
	in_tmp(p, "d4.img");
	assert_string_equal(cfg.members[4], p);
	assert_null(cfg.members[5]);
	assert_int_equal(cfg.member_line[0], 7);
	assert_int_equal(cfg.member_line[1], 8);
	assert_int_equal(cfg.member_line[2], 9);
	assert_int_equal(cfg.member_line[3], 10);
	assert_int_equal(cfg.member_line[4], 11);
	assert_int_equal(cfg.member_size, 1ULL << 30);
	assert_int_equal(cfg.data_offset, 1 << 20);
	assert_int_equal(cfg.size, 512ULL << 20);
	assert_int_equal(cfg.stripe_cache_size, 4096);
	assert_int_equal(cfg.group_thread_cnt, 2);
	assert_int_equal(cfg.worker_groups, 3);
	assert_int_equal(cfg.stripe_size, 16384);
	assert_int_equal(cfg.rmw_level, 2);
	rf_config_free(&cfg);
	assert_null(cfg.path);
	assert_null(cfg.members[0]);
}

static void test_defaults(void **state)
{
	struct rf_config cfg;

	load_ok("array: { name = \"a.img\"; level = 5;\n"
		"  members = [ \"a\", \"b\", \"c\" ]; };\n", &cfg);
	assert_int_equal(cfg.layout, RF_ALGO_LEFT_SYMMETRIC);
	assert_int_equal(cfg.chunk_bytes, 512 * 1024);
	assert_int_equal(cfg.nmembers, 3);
	assert_int_equal(cfg.member_size, 0);
	assert_int_equal(cfg.data_offset, 0);
	assert_int_equal(cfg.size, 0);
	assert_int_equal(cfg.stripe_cache_size, 256);
	assert_int_equal(cfg.group_thread_cnt, -1);  /* unset: assembly chooses */
	assert_int_equal(cfg.worker_groups, 0);
	assert_int_equal(cfg.stripe_size, 4096);
	assert_int_equal(cfg.rmw_level, 2);
	rf_config_free(&cfg);

	/* raid1 keeps no chunk, even a valid one given */
	load_ok("array: { name = \"m.img\"; level = 1; chunk_size = \"64K\";\n"
		"  members = ( \"a\", \"b\" ); };\n", &cfg);
	assert_int_equal(cfg.chunk_bytes, 0);
	rf_config_free(&cfg);

	/* layout "" is md's default too */
	load_ok("array: { name = \"a.img\"; level = 6; layout = \"\";\n"
		"  members = ( \"a\", \"b\", \"c\", \"d\" ); };\n", &cfg);
	assert_int_equal(cfg.layout, RF_ALGO_LEFT_SYMMETRIC);
	rf_config_free(&cfg);

	/* an empty tuning group changes nothing */
	load_ok("array: { name = \"z.img\"; level = 0; members = ( \"a\", \"b\" ); };\n"
		"tuning: { };\n", &cfg);
	assert_int_equal(cfg.level, 0);
	assert_int_equal(cfg.stripe_cache_size, 256);
	rf_config_free(&cfg);
}

/* Integers: chunk in KiB, data_offset/size/member_size in sectors, 64-bit
 * values, layout as md's number. */
static void test_integer_sizes(void **state)
{
	struct rf_config cfg;

	load_ok("array: { name = \"a.img\"; level = 10; layout = \"f2\";\n"
		"  chunk_size = 128; members = ( \"a\", \"b\", \"c\", \"d\" );\n"
		"  member_size = 8589934592L; data_offset = 8; size = 2097152;\n"
		"};\n"
		"tuning: { stripe_size = 8192; };\n", &cfg);
	assert_int_equal(cfg.layout, 2 << 8 | 1);
	assert_int_equal(cfg.chunk_bytes, 128 * 1024);
	assert_int_equal(cfg.member_size, 8589934592ULL * 512);
	assert_int_equal(cfg.data_offset, 4096);
	assert_int_equal(cfg.size, 1ULL << 30);
	assert_int_equal(cfg.stripe_size, 8192);
	rf_config_free(&cfg);

	load_ok("array: { name = \"a.img\"; level = 5; layout = 2;\n"
		"  members = ( \"a\", \"b\", \"c\" ); data_offset = \"1M\"; };\n", &cfg);
	assert_int_equal(cfg.layout, RF_ALGO_LEFT_SYMMETRIC);
	assert_int_equal(cfg.data_offset, 1 << 20);
	rf_config_free(&cfg);
}

static void test_relative_paths(void **state)
{
	struct rf_config cfg;
	char err[512], cwd[PATH_MAX], p[PBUF];

	/* members beside the config, in a subdirectory, and above it */
	conf("sub/r.conf",
	     "array: { name = \"a.img\"; level = 1;\n"
	     "  members = ( \"x.img\", \"dir/y.img\", \"../z.img\" ); };\n");

	/* the config itself named relative to the working directory */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(tmpdir), 0);
	assert_int_equal(rf_config_load("sub/r.conf", &cfg, err, sizeof(err)), 0);
	assert_int_equal(chdir(cwd), 0);

	assert_string_equal(cfg.path, "sub/r.conf");
	in_tmp(p, "sub/x.img");
	assert_string_equal(cfg.members[0], p);
	in_tmp(p, "sub/dir/y.img");
	assert_string_equal(cfg.members[1], p);
	in_tmp(p, "sub/../z.img");
	assert_string_equal(cfg.members[2], p);
	rf_config_free(&cfg);

	/* a bare file name in the working directory */
	assert_int_equal(chdir(tmpdir), 0);
	conf("bare.conf", "array: { name = \"a.img\"; level = 0;\n"
	     "  members = ( \"x.img\", \"/dev/null\" ); };\n");
	assert_int_equal(rf_config_load("bare.conf", &cfg, err, sizeof(err)), 0);
	assert_int_equal(chdir(cwd), 0);
	in_tmp(p, "x.img");
	assert_string_equal(cfg.members[0], p);
	assert_string_equal(cfg.members[1], "/dev/null");
	rf_config_free(&cfg);
}

/* @include names a file beside the config, whatever the working directory. */
static void test_include(void **state)
{
	struct rf_config cfg;

	conf("inc/tune.conf", "tuning: { rmw_level = 0; };\n");
	load_ok("array: { name = \"a.img\"; level = 4;\n"
		"  members = ( \"a\", \"b\", \"c\" ); };\n"
		"@include \"inc/tune.conf\"\n", &cfg);
	assert_int_equal(cfg.rmw_level, 0);
	rf_config_free(&cfg);
}

static void test_free_zeroed(void **state)
{
	struct rf_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	rf_config_free(&cfg);
	rf_config_free(&cfg);
}

/* ------------------------------------------------------------------ */

/* Three lines every offsets row starts with. */
#define OFFS_HEAD "array: {\n  name = \"a.img\"; level = 5;\n  members = ( \"a\", \"b\", \"c\" );\n"

/* Configs refused at their line, each group a kind of mistake.  Groups
 * that vary one value over a fixed config (chunk_size, tuning, faults, the
 * name, too few members) have their own tables below, and configs that
 * need files beside them (duplicates through symlinks) their own tests. */
static const struct bad_conf bad_confs[] = {
	/* libconfig's own messages, at their line */
	{ "syntax", 3, NULL, "syntax error",
	  "array: {\n  name = \"a.img\";\n  level = ;\n};\n" },
	{ "syntax", 5, NULL, "syntax error",
	  "array: {\n  name = \"a.img\";\n  level = 5;\n"
	  "  members = ( \"a\", \"b\",\n    \"c\";\n};\n" },
	{ "syntax", 4, NULL, "mismatched element type",
	  "array: {\n  name = \"a.img\";\n  level = 5;\n"
	  "  members = [ \"a\", \"b\", 3 ];\n};\n" },
	{ "syntax", 2, NULL, "duplicate setting name",
	  "array: { name = \"a.img\"; level = 5; };\n"
	  "array: { };\n" },
	/* misspelt keys are errors, not warnings */
	{ "unknown key", 4, "array.chunk-size", "unknown key",
	  "array: {\n"
	  "  name = \"a.img\";\n"
	  "  level = 5;\n"
	  "  chunk-size = \"64K\";\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n"
	  "};\n" },
	{ "unknown key", 5, "tuning.stripe_cache", "unknown key",
	  "array: { name = \"a.img\"; level = 5;\n"
	  "  members = ( \"a\", \"b\", \"c\" ); };\n"
	  "tuning: {\n"
	  "  stripe_cache_size = 512;\n"
	  "  stripe_cache = 512;\n"
	  "};\n" },
	{ "unknown key", 4, "arrays", "unknown key",
	  "array: { name = \"a.img\"; level = 5;\n"
	  "  members = ( \"a\", \"b\", \"c\" ); };\n"
	  "\n"
	  "arrays: { };\n" },
	{ "unknown key", 1, "level", "known here: array, tuning",
	  "level = 5;\n" },
	/* a value of the wrong type */
	{ "type", 3, "array.level", "must be an integer (got a string)",
	  "array: {\n  name = \"a.img\";\n  level = \"5\";\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n};\n" },
	{ "type", 2, "array.name", "must be a string (got an integer)",
	  "array: {\n  name = 5;\n  level = 5;\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n};\n" },
	{ "type", 4, "array.members", "must be a list",
	  "array: {\n  name = \"a\";\n  level = 5;\n"
	  "  members = \"a\";\n};\n" },
	{ "type", 5, "array.members[1]", "must be a string",
	  "array: {\n  name = \"a\";\n  level = 5;\n"
	  "  members = ( \"a\",\n 7,\n \"c\" );\n};\n" },
	{ "type", 4, "array.layout", "must be a string (got a float)",
	  "array: {\n  name = \"a\";\n  level = 5;\n  layout = 2.0;\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n};\n" },
	{ "type", 4, "array.chunk_size", "must be a size",
	  "array: {\n  name = \"a\";\n  level = 5;\n  chunk_size = true;\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n};\n" },
	{ "type", 4, "array.member_size", "(got a list)",
	  "array: {\n  name = \"a\";\n  level = 5;\n  member_size = ( 1 );\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n};\n" },
	{ "type", 7, "tuning.rmw_level", "must be an integer (got a string)",
	  "array: {\n  name = \"a\";\n  level = 5;\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n};\n"
	  "tuning: {\n  rmw_level = \"1\";\n};\n" },
	{ "type", 2, "array", "must be a group",
	  "\narray = 5;\n" },
	{ "type", 3, "tuning", "must be a group",
	  "array: { name = \"a\"; level = 5;\n"
	  "  members = ( \"a\", \"b\", \"c\" ); };\n"
	  "tuning = ( 1 );\n" },
	/* a key that is missing: at its group's line (none for the root) */
	{ "missing key", 1, "array.level", "missing",
	  "array: {\n  name = \"a.img\";\n  members = ( \"a\", \"b\", \"c\" );\n};\n" },
	{ "missing key", 3, "array.members", "missing",
	  "\n\narray: {\n  name = \"a.img\";\n  level = 5;\n};\n" },
	{ "missing key", 0, "array", "missing",
	  "tuning: { };\n" },
	{ "missing key", 0, "array", "missing",
	  "" },
	/* metadata: "1.2" or "none" */
	{ "metadata", 3, "array.metadata", "\"none\"",
	  "array: {\n  level = 5;\n  metadata = \"0.90\";\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n};\n" },
	{ "metadata", 4, "array.metadata", "an integer",
	  "array: {\n  level = 5;\n\n  metadata = 1;\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n};\n" },
	/* bitmap and bitmap_chunk */
	{ "bitmap", 3, "array.bitmap", "\"internal\" or \"none\"",
	  "array: {\n  level = 5;\n  bitmap = \"external\";\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n};\n" },
	{ "bitmap", 3, "array.bitmap", "raid0",
	  "array: {\n  level = 0;\n  bitmap = \"internal\";\n"
	  "  members = ( \"a\", \"b\" );\n};\n" },
	{ "bitmap", 4, "array.bitmap", "metadata",
	  "array: {\n  level = 5;\n  metadata = \"none\";\n  bitmap = \"internal\";\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n};\n" },
	{ "bitmap", 3, "array.bitmap_chunk", "power of two",
	  "array: {\n  level = 5;\n  bitmap_chunk = \"3M\";\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n};\n" },
	{ "bitmap", 3, "array.bitmap_chunk", "from 4K",
	  "array: {\n  level = 5;\n  bitmap_chunk = 2;\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n};\n" },
	/* level: 0, 1, 4, 5, 6 or 10 */
	{ "level", 3, "array.level", "must be one of 0, 1, 4, 5, 6, 10 (got 3)",
	  "array: {\n  name = \"a.img\";\n  level = 3;\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n};\n" },
	{ "level", 3, "array.level", "(got -1)",
	  "array: {\n  name = \"a.img\";\n  level = -1;\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n};\n" },
	{ "level", 3, "array.level", "(got 4294967301)",
	  "array: {\n  name = \"a.img\";\n  level = 4294967301L;\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n};\n" },
	/* layout: a name of the level */
	{ "layout", 4, "array.layout", "\"n2\" is not a raid5 layout",
	  "array: {\n  name = \"a.img\";\n  level = 5;\n  layout = \"n2\";\n"
	  "  members = ( \"a\", \"b\", \"c\" );\n};\n" },
	{ "layout", 4, "array.layout", "is not a raid10 layout",
	  "array: {\n  name = \"a.img\";\n  level = 10;\n"
	  "  layout = \"left-symmetric\";\n  members = ( \"a\", \"b\" );\n};\n" },
	/* a member path */
	{ "member path", 4, "array.members[1]", "empty path",
	  "array: {\n  name = \"a.img\"; level = 0;\n"
	  "  members = ( \"a\",\n    \"\" );\n};\n" },
	/* spares: paths, none a member or another spare */
	{ "spares", 3, "array.spares[1]", "is already member 1",
	  "array: { name = \"a\"; level = 5; members = ( \"a\", \"b\", \"c\" );\n"
	  "  spares = ( \"s0\",\n \"b\" ); };\n" },
	{ "spares", 2, "array.spares[1]", "is already spare 0",
	  "array: { name = \"a\"; level = 5; members = ( \"a\", \"b\", \"c\" );\n"
	  "  spares = ( \"s0\", \"s0\" ); };\n" },
	{ "spares", 2, "array.spares[0]", "must be a path",
	  "array: { name = \"a\"; level = 5; members = ( \"a\", \"b\", \"c\" );\n"
	  "  spares = ( 5 ); };\n" },
	{ "spares", 2, "array.spares", "must be a list of paths",
	  "array: { name = \"a\"; level = 5; members = ( \"a\", \"b\", \"c\" );\n"
	  "  spares = \"s0\"; };\n" },
	/* NBD members and member_timeout */
	{ "nbd", 4, "array.members[1]", "is already member 0",
	  "array: {\n  name = \"a.img\"; level = 1;\n"
	  "  members = ( \"nbd://h/e\",\n    \"nbd://h/e\" );\n};\n" },
	{ "nbd", 3, "array.member_timeout", "must be 10ms..3600s",
	  "array: {\n  name = \"a.img\"; level = 1;\n  member_timeout = 0;\n"
	  "  members = ( \"a.img\", \"b.img\" );\n};\n" },
	{ "nbd", 3, "array.member_timeout", "\"5m\"",
	  "array: {\n  name = \"a.img\"; level = 1;\n  member_timeout = \"5m\";\n"
	  "  members = ( \"a.img\", \"b.img\" );\n};\n" },
	/* failfast and write_mostly: member indexes */
	{ "failfast", 4, "array.failfast", "from 0 to 1",
	  "array: {\n  name = \"a.img\"; level = 1;\n  members = ( \"a.img\", \"b.img\" );\n"
	  "  failfast = ( 0, 2 );\n};\n" },
	{ "failfast", 4, "array.failfast", "must be a list",
	  "array: {\n  name = \"a.img\"; level = 1;\n  members = ( \"a.img\", \"b.img\" );\n"
	  "  failfast = 1;\n};\n" },
	{ "failfast", 4, "array.write_mostly", "from 0 to 1",
	  "array: {\n  name = \"a.img\"; level = 1;\n  members = ( \"a.img\", \"b.img\" );\n"
	  "  write_mostly = ( \"b\" );\n};\n" },
	/* data_offset, size, member_size */
	{ "sizes", 4, "array.data_offset", "must be a multiple of 4096 bytes (got \"1001s\" = 512512 bytes)",
	  OFFS_HEAD "  data_offset = \"1001s\";\n};\n" },
	{ "sizes", 4, "array.data_offset", "multiple of 4096",
	  OFFS_HEAD "  data_offset = 7;\n};\n" },
	{ "sizes", 4, "array.data_offset", "not a size",
	  OFFS_HEAD "  data_offset = \"1x\";\n};\n" },
	{ "sizes", 4, "array.size", "less than one chunk",
	  OFFS_HEAD "  size = \"64K\";\n};\n" },
	{ "sizes", 5, "array.member_size", "no room for data_offset",
	  OFFS_HEAD "  data_offset = \"1M\";\n  member_size = \"1M\";\n};\n" },
	{ "sizes", 6, "array.member_size", "and size",
	  OFFS_HEAD "  data_offset = \"1M\";\n  size = \"4M\";\n  member_size = \"4M\";\n};\n" },
	{ "sizes", 4, "array.member_size", "no room",
	  OFFS_HEAD "  member_size = 0;\n};\n" },
	{ "sizes", 4, "array.member_size", "not a size",
	  OFFS_HEAD "  member_size = \"99999999999T\";\n};\n" },
	{ "sizes", 4, "array.member_size", "too large",
	  OFFS_HEAD "  member_size = 9223372036854775807L;\n};\n" },
};

static void test_bad_configs(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(bad_confs) / sizeof(bad_confs[0]); i++)
		check_err_at(bad_confs[i].what, bad_confs[i].text, bad_confs[i].line, bad_confs[i].key,
			     bad_confs[i].frag);
}

/* The check the tables go through fails a row that is wrong: another
 * line, no line, another key, a fragment the message lacks, a config that
 * loads; the right row passes. */
static void test_bad_conf_check(void **state)
{
	static const char text[] = "array: {\n  level = 3;\n  members = ( \"a\", \"b\" );\n};\n";
	static const struct bad_conf right = { "right", 2, "array.level", "must be one of", text };
	static const struct bad_conf wrong[] = {
		{ "line", 3, "array.level", "must be one of", text },
		{ "missing line", 0, "array.level", "must be one of", text },
		{ "key", 2, "array.members", "must be one of", text },
		{ "fragment", 2, "array.level", "must be 4", text },
		{ "config that loads", 1, "array.level", "must be one of",
		  "array: { level = 1; members = ( \"a\", \"b\" ); };\n" },
	};
	char why[PBUF + 2048];
	size_t i;

	assert_int_equal(refused_as(&right, why, sizeof(why)), 0);
	for (i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		if (!refused_as(&wrong[i], why, sizeof(why))) {
			print_error("a row with a wrong %s passed\n", wrong[i].what);
			fail();
		}
	}
}

static void test_err_file(void **state)
{
	struct rf_config cfg;
	char err[512], p[PBUF];

	in_tmp(p, "no-such.conf");
	assert_int_equal(rf_config_load(p, &cfg, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, p));
	assert_non_null(strstr(err, "No such file or directory"));
	assert_null(cfg.path);

	/* a directory opens, but is not a config */
	assert_int_equal(rf_config_load(tmpdir, &cfg, err, sizeof(err)), -EISDIR);
	assert_non_null(strstr(err, "Is a directory"));

	/* no message buffer: still fails cleanly */
	assert_int_equal(rf_config_load(p, &cfg, NULL, 0), -ENOENT);

	if (geteuid() == 0)
		return;         /* root reads mode 000 anyway */
	conf("noperm.conf", "array: { };\n");
	in_tmp(p, "noperm.conf");
	assert_int_equal(chmod(p, 0), 0);
	assert_int_equal(rf_config_load(p, &cfg, err, sizeof(err)), -EACCES);
	assert_non_null(strstr(err, "Permission denied"));
}

/* name defaults to array.img; metadata to md 1.2 superblocks, "none" keeps
 * superblock-less arrays, anything else is refused at its line (bad_confs). */
static void test_name_and_metadata(void **state)
{
	struct rf_config cfg;

	load_ok("array: {\n  level = 5;\n  members = ( \"a\", \"b\", \"c\" );\n};\n", &cfg);
	assert_string_equal(cfg.name, "array.img");
	assert_int_equal(cfg.metadata, RF_SB_12);
	assert_false(cfg.data_offset_given);
	rf_config_free(&cfg);
	load_ok("array: {\n  level = 5;\n  metadata = \"none\";\n  data_offset = 8;\n"
		"  members = ( \"a\", \"b\", \"c\" );\n};\n", &cfg);
	assert_int_equal(cfg.metadata, RF_SB_NONE);
	assert_true(cfg.data_offset_given);
	assert_int_equal(cfg.data_offset, 4096);
	rf_config_free(&cfg);
	load_ok("array: {\n  level = 5;\n  metadata = \"1.2\";\n"
		"  members = ( \"a\", \"b\", \"c\" );\n};\n", &cfg);
	assert_int_equal(cfg.metadata, RF_SB_12);
	rf_config_free(&cfg);
}

/* bitmap = "internal" and bitmap_chunk (KiB when plain) for `create`;
 * raid0, metadata "none" and bad chunks are refused at their line
 * (bad_confs). */
static void test_bitmap_keys(void **state)
{
	struct rf_config cfg;

	load_ok("array: {\n  level = 5;\n  members = ( \"a\", \"b\", \"c\" );\n};\n", &cfg);
	assert_false(cfg.bitmap);
	assert_int_equal(cfg.bitmap_chunk, 0);
	rf_config_free(&cfg);
	load_ok("array: {\n  level = 1;\n  bitmap = \"internal\";\n  bitmap_chunk = 2048;\n"
		"  members = ( \"a\", \"b\" );\n};\n", &cfg);
	assert_true(cfg.bitmap);
	assert_int_equal(cfg.bitmap_chunk, 2u << 20);
	rf_config_free(&cfg);
	load_ok("array: {\n  level = 6;\n  bitmap = \"none\";\n  bitmap_chunk = \"64M\";\n"
		"  members = ( \"a\", \"b\", \"c\", \"d\" );\n};\n", &cfg);
	assert_false(cfg.bitmap);
	assert_int_equal(cfg.bitmap_chunk, 64u << 20);
	rf_config_free(&cfg);
}

/* A raid0 config whose name (line 3) is name, in a static buffer. */
static const char *named_conf(const char *name)
{
	static char text[512];

	snprintf(text, sizeof(text),
		 "array: {\n  level = 0;\n  name = \"%s\";\n"
		 "  members = ( \"a\", \"b\" );\n};\n", name);
	return text;
}

static void test_err_name(void **state)
{
	static const char *const bad[] = { "dir/a.img", "", ".", "..", "/a.img" };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check_err(named_conf(bad[i]), 3, "array.name", "must be a plain file name");
}

/* The image sits at the mount's root beside mdstat and md/: a config
 * naming it after one of them would hide the control files (or they it).
 * Names that differ from them only in case or by a suffix are fine. */
static void test_err_name_reserved(void **state)
{
	static const char *const bad[] = { "md", "mdstat" };
	static const char *const good[] = { "MD", "mdstat.img", "md0", "md.img" };
	struct rf_config cfg;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check_err(named_conf(bad[i]), 3, "array.name", "a name the control files take");
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		load_ok(named_conf(good[i]), &cfg);
		assert_string_equal(cfg.name, good[i]);
		rf_config_free(&cfg);
	}
}

static void test_err_chunk(void **state)
{
	static const struct {
		const char *val, *frag;
	} bad[] = {
		{ "\"3K\"", "must be a power of two from 4K to 2G (got \"3K\")" },
		{ "\"2K\"", "power of two" },
		{ "\"0\"", "power of two" },
		{ "2", "power of two from 4K to 2G (got 2)" },
		{ "\"4G\"", "power of two" },
		{ "\"-4K\"", "not a size: \"-4K\"" },
		{ "\"64KB\"", "not a size" },
		{ "-64", "must not be negative (got -64)" },
	};
	char text[512];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text),
			 "array: {\n  name = \"a.img\";\n  level = 5;\n"
			 "  members = ( \"a\", \"b\", \"c\" );\n"
			 "  chunk_size = %s;\n};\n", bad[i].val);
		check_err(text, 5, "array.chunk_size", bad[i].frag);
	}
}

/* members = ( ... ) on line 3, level on line 2. */
static void member_err_meta(int level, const char *layout, const char *members, const char *meta,
			    const char *frag)
{
	char text[2048], lay[64] = "";

	if (layout)
		snprintf(lay, sizeof(lay), " layout = \"%s\";", layout);
	snprintf(text, sizeof(text),
		 "array: {\n  name = \"a.img\"; level = %d;%s%s\n  members = ( %s );\n};\n",
		 level, lay, meta, members);
	check_err(text, 3, "array.members", frag);
}

static void member_err(int level, const char *layout, const char *members, const char *frag)
{
	member_err_meta(level, layout, members, "", frag);
}

static void test_err_too_few(void **state)
{
	member_err(0, NULL, "\"a\"", "raid0 needs at least 2 members (got 1)");
	member_err(1, NULL, "\"a\"", "raid1 needs at least 2 members (got 1)");
	member_err(4, NULL, "\"a\"", "raid4 needs at least 2 members (got 1)");
	member_err(5, NULL, "\"a\"", "raid5 needs at least 2 members (got 1)");
	member_err(6, NULL, "\"a\", \"b\", \"c\"", "raid6 needs at least 4 members (got 3)");
	member_err(10, NULL, "\"a\"", "at least 2 members (got 1)");
	member_err(10, "n3", "\"a\", \"b\"", "at least 3 members (got 2)");
	member_err(0, NULL, "", "at least 2 members (got 0)");
}

static void test_err_too_many(void **state)
{
	char list[RF_MAX_MEMBERS * 16];
	size_t n = 0;
	int i;

	for (i = 0; i <= RF_MAX_MEMBERS; i++)
		n += snprintf(list + n, sizeof(list) - n, "%s\"d%d\"", i ? ", " : "", i);
	member_err(0, NULL, list, "at most 64 members (got 65)");

	/* exactly RF_MAX_MEMBERS is fine */
	{
		struct rf_config cfg;
		char text[sizeof(list) + 128];

		*strrchr(list, ',') = '\0';
		snprintf(text, sizeof(text),
			 "array: { name = \"a\"; level = 6; members = ( %s ); };\n", list);
		load_ok(text, &cfg);
		assert_int_equal(cfg.nmembers, RF_MAX_MEMBERS);
		assert_non_null(cfg.members[RF_MAX_MEMBERS - 1]);
		rf_config_free(&cfg);
	}
}

static void test_err_too_many_missing(void **state)
{
	struct rf_config cfg;

	/* Without superblocks the config's order is the array's: too many
	 * "missing" cannot be served. */
	static const char *none = " metadata = \"none\";";

	member_err_meta(0, NULL, "\"a\", \"missing\"", none, "1 of 2 members are \"missing\" but raid0");
	member_err_meta(1, NULL, "\"missing\", \"missing\"", none, "survives at most 1");
	member_err_meta(5, NULL, "\"a\", \"missing\", \"missing\"", none, "survives at most 1");
	member_err_meta(4, NULL, "\"missing\", \"b\", \"missing\"", none, "survives at most 1");
	member_err_meta(6, NULL, "\"missing\", \"b\", \"missing\", \"missing\"", none, "survives at most 2");
	member_err_meta(10, "n2", "\"a\", \"missing\", \"missing\", \"d\"", none, "survives at most 1");

	/* With md superblocks the roles place the files (a spare may hold a
	 * slot the config says is missing): the config loads, assembly
	 * decides, and create refuses (test_create). */
	load_ok("array: { name = \"a\"; level = 5;\n"
		"  members = ( \"missing\", \"b\", \"missing\", \"d\" ); spares = ( \"s\" ); };\n", &cfg);
	assert_null(cfg.members[0]);
	assert_null(cfg.members[2]);
	assert_int_equal(rf_config_tolerated(5, 2, 4), 1);
	assert_int_equal(rf_config_tolerated(10, 0x102, 4), 1);
	rf_config_free(&cfg);

	/* the limits themselves load */
	load_ok("array: { name = \"a\"; level = 1;\n"
		"  members = ( \"missing\", \"missing\", \"c\" ); };\n", &cfg);
	assert_null(cfg.members[0]);
	assert_null(cfg.members[1]);
	assert_non_null(cfg.members[2]);
	rf_config_free(&cfg);
	load_ok("array: { name = \"a\"; level = 6;\n"
		"  members = ( \"missing\", \"b\", \"c\", \"missing\" ); };\n", &cfg);
	rf_config_free(&cfg);
	load_ok("array: { name = \"a\"; level = 10; layout = \"n3\";\n"
		"  members = ( \"missing\", \"b\", \"missing\" ); };\n", &cfg);
	rf_config_free(&cfg);
}

static void test_err_duplicate(void **state)
{
	char text[PBUF + 256], p[PBUF], l[PBUF];

	/* not existing: compared after folding "." and ".." */
	check_err("array: {\n  name = \"a.img\"; level = 5;\n"
		  "  members = ( \"d0.img\", \"d1.img\",\n"
		  "    \"./x/../d0.img\" );\n};\n",
		  4, "array.members[2]", "is already member 0 (line 3)");

	/* absolute and relative names of one file */
	snprintf(text, sizeof(text),
		 "array: {\n  name = \"a.img\"; level = 1;\n"
		 "  members = ( \"d0.img\",\n    \"%s/d0.img\" );\n};\n", tmpdir);
	check_err(text, 4, "array.members[1]", "is already member 0");

	/* an existing file and a symlink to it */
	conf("real.img", "");
	in_tmp(p, "real.img");
	in_tmp(l, "link.img");
	unlink(l);
	assert_int_equal(symlink(p, l), 0);
	check_err("array: {\n  name = \"a.img\"; level = 1;\n"
		  "  members = ( \"real.img\",\n    \"link.img\" );\n};\n",
		  4, "array.members[1]", "is already member 0");

	/* a symlinked directory, file not created yet */
	in_tmp(p, "realdir");
	in_tmp(l, "linkdir");
	mkdir(p, 0755);
	unlink(l);
	assert_int_equal(symlink(p, l), 0);
	check_err("array: {\n  name = \"a.img\"; level = 1;\n"
		  "  members = ( \"realdir/m.img\",\n    \"linkdir/m.img\" );\n};\n",
		  4, "array.members[1]", "is already member 0");
}

static void test_err_tuning(void **state)
{
	static const struct {
		const char *kv, *key, *frag;
	} bad[] = {
		{ "stripe_cache_size = 16", "tuning.stripe_cache_size", "must be 17..32768 (got 16)" },
		{ "stripe_cache_size = 32769", "tuning.stripe_cache_size", "(got 32769)" },
		{ "group_thread_cnt = 65", "tuning.group_thread_cnt", "must be 0..64 (got 65)" },
		{ "group_thread_cnt = -1", "tuning.group_thread_cnt", "must be 0..64" },
		{ "worker_groups = 65", "tuning.worker_groups", "must be 0..64" },
		{ "rmw_level = 3", "tuning.rmw_level", "must be 0..2 (got 3)" },
		{ "stripe_size = 2048", "tuning.stripe_size", "power of two from 4096 to 65536 bytes (got 2048)" },
		{ "stripe_size = \"128K\"", "tuning.stripe_size", "(got \"128K\")" },
		{ "stripe_size = 6144", "tuning.stripe_size", "power of two" },
		{ "stripe_size = 1.0", "tuning.stripe_size", "must be a size" },
	};
	char text[512];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text),
			 "array: { name = \"a\"; level = 5; members = ( \"a\", \"b\", \"c\" ); };\n"
			 "tuning: {\n  %s;\n};\n", bad[i].kv);
		check_err(text, 3, bad[i].key, bad[i].frag);
	}
}

/* faults: one group per member, each key as md/dev-NAME/fault takes it. */
/* spares: paths resolved as members are; none may be a member or
 * another spare (bad_confs: the errors name the key and line). */
static void test_spares(void **state)
{
	struct rf_config cfg;

	load_ok("array: { name = \"a\"; level = 5; members = ( \"a\", \"b\", \"c\" );\n"
		"  spares = ( \"s0\", \"/abs/s1\" ); };\n", &cfg);
	assert_int_equal(cfg.nspares, 2);
	assert_non_null(strstr(cfg.spares[0], "/s0"));
	assert_string_equal(cfg.spares[1], "/abs/s1");
	rf_config_free(&cfg);
}

static void test_faults(void **state)
{
	static const char arr[] = "array: { name = \"a\"; level = 5; members = ( \"a\", \"b\", \"c\" ); };\n";
	static const struct {
		const char *entry, *key, *frag;
		int line;
	} bad[] = {
		{ "{ error = \"EIO\"; }", "faults.[0].member", "missing (the member's slot, 0..2)", 3 },
		{ "{ member = 3; error = \"EIO\"; }", "faults.[0].member", "must be 0..2 (got 3)", 3 },
		{ "{ member = 1;\n  error = \"EAGAIN\"; }", "faults.[0].error", "'EAGAIN' is not an errno name", 4 },
		{ "{ member = 1; rate = 2.0; }", "faults.[0].rate", "is not a probability", 3 },
		{ "{ member = 1; ops = \"trim\"; }", "faults.[0].ops", "'trim' is not read, write, fsync", 3 },
		{ "{ member = 1; delay_us = -5; }", "faults.[0].delay_us", "'-5' is not microseconds", 3 },
		{ "{ member = 1; error = true; }", "faults.[0].error", "must be a string or a number", 3 },
		{ "{ member = 1; oops = 1; }", "faults.[0].oops", "unknown key (known here: member, error", 3 },
		{ "{ member = 1; },\n{ member = 1; }", "faults.[1].member", "member 1 has a faults entry already", 4 },
		{ "5", "faults.[0]", "must be a group", 3 },
	};
	struct rf_config cfg;
	char text[1024];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "%sfaults = (\n%s );\n", arr, bad[i].entry);
		check_err(text, bad[i].line, bad[i].key, bad[i].frag);
	}
	snprintf(text, sizeof(text), "%sfaults = { member = 1; };\n", arr);
	check_err(text, 2, "faults", "must be a list");

	snprintf(text, sizeof(text),
		 "%sfaults = (\n  { member = 2; error = \"EIO\"; rate = 0.5; ops = \"write\"; after = 100; },\n"
		 "  { member = 0; delay_us = 2000; ops = \"read,fsync\"; offset = \"1M\"; length = 65536; count = 3; }\n);\n",
		 arr);
	load_ok(text, &cfg);
	assert_int_equal(cfg.nfaults, 2);
	assert_int_equal(cfg.faults[0].member, 2);
	assert_int_equal(cfg.faults[0].spec.error, EIO);
	assert_true(cfg.faults[0].spec.rate == 0.5);
	assert_int_equal(cfg.faults[0].spec.ops, 1u << 1);
	assert_int_equal(cfg.faults[0].spec.after, 100);
	assert_int_equal(cfg.faults[1].member, 0);
	assert_int_equal(cfg.faults[1].spec.error, 0);
	assert_int_equal(cfg.faults[1].spec.delay_us, 2000);
	assert_int_equal(cfg.faults[1].spec.ops, (1u << 0) | (1u << 2));
	assert_int_equal(cfg.faults[1].spec.offset, 1 << 20);
	assert_int_equal(cfg.faults[1].spec.length, 65536);
	assert_int_equal(cfg.faults[1].spec.count, 3);
	rf_config_free(&cfg);

	/* none by default */
	load_ok(arr, &cfg);
	assert_int_equal(cfg.nfaults, 0);
	assert_null(cfg.faults);
	rf_config_free(&cfg);
}

static void test_tuning_limits(void **state)
{
	struct rf_config cfg;

	load_ok("array: { name = \"a\"; level = 5; members = ( \"a\", \"b\", \"c\" ); };\n"
		"tuning: { stripe_cache_size = 17; group_thread_cnt = 0;\n"
		"  worker_groups = 64; stripe_size = \"64K\"; rmw_level = 0; };\n", &cfg);
	assert_int_equal(cfg.stripe_cache_size, 17);
	assert_int_equal(cfg.group_thread_cnt, 0);
	assert_int_equal(cfg.worker_groups, 64);
	assert_int_equal(cfg.stripe_size, 65536);
	assert_int_equal(cfg.rmw_level, 0);
	rf_config_free(&cfg);
	load_ok("array: { name = \"a\"; level = 5; members = ( \"a\", \"b\", \"c\" ); };\n"
		"tuning: { stripe_cache_size = 32768; worker_groups = 1; group_thread_cnt = 8; };\n", &cfg);
	assert_int_equal(cfg.stripe_cache_size, 32768);
	assert_int_equal(cfg.group_thread_cnt, 8);
	rf_config_free(&cfg);
}

/* Worker threads in all stay within rf_max_worker_threads(): 4 per CPU,
 * at least 8, at most 256.  64 groups of 64 threads (4096 threads) are
 * refused at the thread count's line; the bound itself is taken. */
static void test_err_worker_threads(void **state)
{
	int max = rf_max_worker_threads(), per = max / 8;
	struct rf_config cfg;
	char text[512];

	assert_true(max >= 8 && max <= 256);
	check_err("array: { name = \"a\"; level = 5; members = ( \"a\", \"b\", \"c\" ); };\n"
		  "tuning: {\n  worker_groups = 64;\n  group_thread_cnt = 64;\n};\n",
		  4, "tuning.group_thread_cnt", "make 4096 worker threads: more than the");
	snprintf(text, sizeof(text),
		 "array: { name = \"a\"; level = 5; members = ( \"a\", \"b\", \"c\" ); };\n"
		 "tuning: {\n  worker_groups = 8;\n  group_thread_cnt = %d;\n};\n", per);
	load_ok(text, &cfg);
	assert_int_equal(cfg.worker_groups * cfg.group_thread_cnt, 8 * per);
	rf_config_free(&cfg);
	snprintf(text, sizeof(text),
		 "array: { name = \"a\"; level = 5; members = ( \"a\", \"b\", \"c\" ); };\n"
		 "tuning: {\n  worker_groups = 8;\n  group_thread_cnt = %d;\n};\n", per + 1);
	check_err(text, 4, "tuning.group_thread_cnt", "at least 8, at most 256");
	/* worker_groups 0 is one group per CPU: the same bound counts them */
	snprintf(text, sizeof(text),
		 "array: { name = \"a\"; level = 5; members = ( \"a\", \"b\", \"c\" ); };\n"
		 "tuning: {\n  worker_groups = 0;\n  group_thread_cnt = %d;\n};\n", max / (int)sysconf(_SC_NPROCESSORS_ONLN) + 1);
	check_err(text, 4, "tuning.group_thread_cnt", "worker threads: more than the");
}

/* A message longer than the buffer is cut, still terminated. */
static void test_short_err_buffer(void **state)
{
	struct rf_config cfg;
	char err[16];

	memset(err, 'x', sizeof(err));
	assert_int_equal(rf_config_load(conf("bad.conf", "array: { level = 3; };\n"),
					&cfg, err, sizeof(err)), -EINVAL);
	assert_int_equal(strlen(err), sizeof(err) - 1);
	assert_int_equal(strncmp(err, tmpdir, sizeof(err) - 1), 0);
}

/* ------------------------------------------------------------------ */

static void test_parse_size(void **state)
{
	static const struct {
		const char *s;
		uint64_t unit, want;
	} good[] = {
		{ "0", 512, 0 },
		{ "123", 512, 123 * 512 },
		{ "123", 1024, 123 * 1024 },
		{ "7", 1, 7 },
		{ "8s", 1024, 4096 },
		{ "8S", 1, 4096 },
		{ "1k", 512, 1024 },
		{ "512K", 1, 512 * 1024 },
		{ "3m", 1, 3 << 20 },
		{ "1M", 512, 1 << 20 },
		{ "2g", 1, 2ULL << 30 },
		{ "1G", 1, 1ULL << 30 },
		{ "5t", 1, 5ULL << 40 },
		{ "16777215T", 1, 16777215ULL << 40 },
		{ "007K", 1, 7 << 10 },
		{ "18446744073709551615", 1, UINT64_MAX },
		{ "1K", 0, 1024 },      /* unit 0: suffix required */
	};
	static const struct {
		const char *s;
		uint64_t unit;
	} bad[] = {
		{ "", 1 }, { "K", 1 }, { "-1", 1 }, { "+1", 1 }, { " 1", 1 },
		{ "1 ", 1 }, { "1 K", 1 }, { "1KB", 1 }, { "1KiB", 1 }, { "1.5G", 1 },
		{ "0x10", 1 }, { "1b", 1 }, { "1P", 1 }, { "1e3", 1 },
		{ "18446744073709551616", 1 },  /* 2^64 */
		{ "16777216T", 1 },             /* 2^64 bytes */
		{ "36028797018963968", 512 },   /* 2^55 sectors */
		{ "99999999999999999999999", 1 },
		{ "5", 0 },
	};
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = 0xdead;
		if (rf_parse_size(good[i].s, good[i].unit, &v) || v != good[i].want) {
			print_error("\"%s\" unit %llu: got %llu\n", good[i].s,
				    (unsigned long long)good[i].unit, (unsigned long long)v);
			fail();
		}
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 0xdead;
		if (rf_parse_size(bad[i].s, bad[i].unit, &v) != -EINVAL || v != 0xdead) {
			print_error("\"%s\" accepted: %llu\n", bad[i].s, (unsigned long long)v);
			fail();
		}
	}
	assert_int_equal(rf_parse_size(NULL, 1, &v), -EINVAL);
}

/* NBD members: a URI is kept as written (not made relative to the config's
 * directory), one URI twice is a duplicate, spares may be URIs too;
 * member_timeout in seconds or with a unit, 30 s by default (bad values:
 * bad_confs). */
static void test_nbd_members(void **state)
{
	struct rf_config cfg;
	char p[PBUF];

	load_ok("array: { name = \"a.img\"; level = 1;\n"
		"  members = ( \"nbd://10.0.0.2/disk\", \"nbd+unix:///e?socket=/run/s.sock\", \"d.img\" );\n"
		"  spares = ( \"nbds://h:10810/x\" ); };\n", &cfg);
	assert_string_equal(cfg.members[0], "nbd://10.0.0.2/disk");
	assert_string_equal(cfg.members[1], "nbd+unix:///e?socket=/run/s.sock");
	in_tmp(p, "d.img");
	assert_string_equal(cfg.members[2], p);
	assert_string_equal(cfg.spares[0], "nbds://h:10810/x");
	assert_int_equal(cfg.member_timeout_ms, 30000);
	rf_config_free(&cfg);
	load_ok("array: { name = \"a.img\"; level = 1; member_timeout = 5;\n"
		"  members = ( \"a.img\", \"b.img\" ); };\n", &cfg);
	assert_int_equal(cfg.member_timeout_ms, 5000);
	rf_config_free(&cfg);
	load_ok("array: { name = \"a.img\"; level = 1; member_timeout = \"250ms\";\n"
		"  members = ( \"a.img\", \"b.img\" ); };\n", &cfg);
	assert_int_equal(cfg.member_timeout_ms, 250);
	rf_config_free(&cfg);
}

/* failfast and write_mostly: member indexes, a mask (out of range or not a
 * list: bad_confs). */
static void test_failfast(void **state)
{
	struct rf_config cfg;

	load_ok("array: { name = \"a.img\"; level = 1; members = ( \"a.img\", \"b.img\" ); };\n", &cfg);
	assert_int_equal(cfg.failfast, 0);
	rf_config_free(&cfg);
	load_ok("array: { name = \"a.img\"; level = 1; failfast = ( 1 );\n"
		"  members = ( \"a.img\", \"nbd://h/e\" ); };\n", &cfg);
	assert_int_equal(cfg.failfast, 2);
	rf_config_free(&cfg);
	/* write_mostly: the same kind of set. */
	load_ok("array: { name = \"a.img\"; level = 1; write_mostly = ( 0 ); failfast = ( 1 );\n"
		"  members = ( \"a.img\", \"b.img\" ); };\n", &cfg);
	assert_int_equal(cfg.write_mostly, 1);
	assert_int_equal(cfg.failfast, 2);
	rf_config_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_integer_sizes),
		cmocka_unit_test(test_relative_paths),
		cmocka_unit_test(test_nbd_members),
		cmocka_unit_test(test_failfast),
		cmocka_unit_test(test_include),
		cmocka_unit_test(test_free_zeroed),
		cmocka_unit_test(test_err_file),
		cmocka_unit_test(test_bad_conf_check),
		cmocka_unit_test(test_bad_configs),
		cmocka_unit_test(test_name_and_metadata),
		cmocka_unit_test(test_bitmap_keys),
		cmocka_unit_test(test_err_name),
		cmocka_unit_test(test_err_name_reserved),
		cmocka_unit_test(test_err_chunk),
		cmocka_unit_test(test_err_too_few),
		cmocka_unit_test(test_err_too_many),
		cmocka_unit_test(test_err_too_many_missing),
		cmocka_unit_test(test_err_duplicate),
		cmocka_unit_test(test_err_tuning),
		cmocka_unit_test(test_tuning_limits),
		cmocka_unit_test(test_err_worker_threads),
		cmocka_unit_test(test_faults),
		cmocka_unit_test(test_spares),
		cmocka_unit_test(test_short_err_buffer),
		cmocka_unit_test(test_parse_size),
	};

	return fx_run_tests_with(tests, group_setup, fx_group_teardown);
}
