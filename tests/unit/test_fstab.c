/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_fstab.c - the mount helper's form: which argument lists are that
 * form, and how `raidfuse CONFIG MNT -o OPTS` becomes `raidfuse mount`'s
 * arguments: generic options dropped, ro as --ro, FUSE's to -o (escaped
 * again), raidfuse's own as long options, an unknown one refused by name.
 * Then mount's and assemble's -o (mount_opts.h), table-driven: io_uring=
 * taken out or refused by name, allow_other/allow_root noted, every other
 * word on to libfuse as it came; the table's checker must fail on a
 * planted wrong row and on a parser that splits at every comma.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raidfuse/fstab.h"
#include "front/fuse_uring.h"
#include "front/mount_opts.h"

/* argv (NULL-terminated, argv[0] "raidfuse") translated and joined with
 * spaces into out; the return of rf_fstab_args. */
static int translate(char **argv, char *out, size_t size, char *err, size_t errlen)
{
	char **v;
	int argc = 0, n, i, r;
	size_t len = 0;

	while (argv[argc])
		argc++;
	r = rf_fstab_args(argc, argv, &n, &v, err, errlen);
	out[0] = '\0';
	if (r)
		return r;
	assert_null(v[n]);
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(out + len, size - len, "%s%s", i ? " " : "", v[i]);
	rf_fstab_free(v);
	return 0;
}

static void test_generic_dropped(void **state)
{
	char *argv[] = { "raidfuse", "/etc/raidfuse/a.conf", "/mnt", "-o",
			 "rw,noatime,nofail,_netdev,x-systemd.requires=network-online.target,defaults,dev,suid",
			 NULL };
	char out[512], err[256];

	assert_int_equal(translate(argv, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "mount -o noatime -- /etc/raidfuse/a.conf /mnt");
}

static void test_ro_and_own(void **state)
{
	char *argv[] = { "raidfuse", "raidfuse#/c.conf", "/m", "-o",
			 "ro,freeze,log=/var/log/r.log,allow_other,io_uring=off,overlay=/ov,nosuid", NULL };
	char out[512], err[256];

	assert_int_equal(translate(argv, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "mount --ro --freeze --log /var/log/r.log --overlay /ov "
				 "-o allow_other,io_uring=off,nosuid -- /c.conf /m");
}

/* fsname=a\,b arrives unescaped from fuse_opt_parse and goes on escaped. */
static void test_escaped(void **state)
{
	char *argv[] = { "raidfuse", "/c.conf", "/m", "-o", "fsname=a\\,b", NULL };
	char out[512], err[256];

	assert_int_equal(translate(argv, out, sizeof(out), err, sizeof(err)), 0);
	assert_string_equal(out, "mount -o fsname=a\\,b -- /c.conf /m");
}

static void test_unknown_refused(void **state)
{
	char *argv[] = { "raidfuse", "/c.conf", "/m", "-o", "noatime,bogus_opt", NULL };
	char *argv2[] = { "raidfuse", "/c.conf", "/m", "/extra", NULL };
	char *argv3[] = { "raidfuse", "/c.conf", "/m", "-o", "log=", NULL };
	char *argv4[] = { "raidfuse", "/c.conf", NULL };
	char out[512], err[256];

	assert_int_equal(translate(argv, out, sizeof(out), err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'bogus_opt'"));
	assert_int_equal(translate(argv2, out, sizeof(out), err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'/extra'"));
	assert_int_equal(translate(argv3, out, sizeof(out), err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'log='"));
	assert_int_equal(translate(argv4, out, sizeof(out), err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "CONFIG MOUNTPOINT"));
}

static void test_form(void **state)
{
	char dir[] = "/tmp/rf-fstab-XXXXXX", conf[64];
	char *a[] = { "raidfuse", conf, "/nonexistent-mnt", NULL };
	char *b[] = { "raidfuse", "/nonexistent.conf", dir, NULL };
	char *c[] = { "raidfuse", "raidfuse#/nonexistent.conf", "/nonexistent-mnt", NULL };
	char *d[] = { "raidfuse", "/nonexistent.conf", "/nonexistent-mnt", NULL };
	char *e[] = { "raidfuse", conf, NULL };
	char *f[] = { "raidfuse", "-x", dir, NULL };
	FILE *fp;

	assert_non_null(mkdtemp(dir));
	snprintf(conf, sizeof(conf), "%s/a.conf", dir);
	fp = fopen(conf, "w");
	assert_non_null(fp);
	fclose(fp);
	assert_true(rf_fstab_form(3, a));       /* CONFIG exists */
	assert_true(rf_fstab_form(3, b));       /* MOUNTPOINT is a directory */
	assert_true(rf_fstab_form(3, c));       /* raidfuse#CONFIG */
	assert_false(rf_fstab_form(3, d));      /* neither: an unknown command */
	assert_false(rf_fstab_form(2, e));      /* no MOUNTPOINT */
	assert_false(rf_fstab_form(3, f));      /* an option */
	unlink(conf);
	rmdir(dir);
}

/* ---- -o OPTS of mount and assemble ---- */

struct opts_row {
	const char *opts;       /* NULL: no -o */
	int ret;
	int uring;
	bool others;
	const char *fuse;       /* what goes to libfuse's -o; NULL: nothing */
	const char *err;        /* with ret != 0: the whole message */
};

/* Every word documented for -o (raidfuse(8), README, the fstab form's
 * words that go on to -o), each alone, and the mixes and mistakes. */
static const struct opts_row opts_rows[] = {
	{ NULL, 0, RF_URING_AUTO, false, NULL, NULL },
	{ "", 0, RF_URING_AUTO, false, NULL, NULL },
	{ ",,", 0, RF_URING_AUTO, false, NULL, NULL },
	{ "io_uring=auto", 0, RF_URING_AUTO, false, NULL, NULL },
	{ "io_uring=on", 0, RF_URING_ON, false, NULL, NULL },
	{ "io_uring=off", 0, RF_URING_OFF, false, NULL, NULL },
	{ "io_uring=on,io_uring=off", 0, RF_URING_OFF, false, NULL, NULL },     /* the last wins */
	{ "allow_other", 0, RF_URING_AUTO, true, "allow_other", NULL },
	{ "allow_root", 0, RF_URING_AUTO, true, "allow_root", NULL },
	{ "default_permissions", 0, RF_URING_AUTO, false, "default_permissions", NULL },
	{ "auto_unmount", 0, RF_URING_AUTO, false, "auto_unmount", NULL },
	{ "fsname=mine", 0, RF_URING_AUTO, false, "fsname=mine", NULL },
	{ "subtype=sub", 0, RF_URING_AUTO, false, "subtype=sub", NULL },
	/* the daemon's own (it sets the kernel's largest read at mount and
	 * at INIT, which must agree): not passed on */
	{ "max_read=65536", 0, RF_URING_AUTO, false, NULL, NULL },
	{ "ro", 0, RF_URING_AUTO, false, "ro", NULL },
	{ "rw", 0, RF_URING_AUTO, false, "rw", NULL },
	/* the access-time words libfuse's mount does not take are dropped */
	{ "nodev,nosuid,noexec,sync,dirsync,noatime,nodiratime,relatime,norelatime,strictatime,lazytime,nolazytime",
	  0, RF_URING_AUTO, false, "nodev,nosuid,noexec,sync,dirsync,noatime", NULL },
	{ "allow_other,io_uring=off,fsname=x", 0, RF_URING_OFF, true, "allow_other,fsname=x", NULL },
	{ ",,allow_root,,io_uring=on,", 0, RF_URING_ON, true, "allow_root", NULL },
	/* escapes: libfuse unescapes what it is given once more */
	{ "fsname=a\\,b", 0, RF_URING_AUTO, false, "fsname=a\\,b", NULL },
	{ "fsname=a\\\\b", 0, RF_URING_AUTO, false, "fsname=a\\\\b", NULL },
	{ "fsname=x\\,allow_other", 0, RF_URING_AUTO, false, "fsname=x\\,allow_other", NULL },
	{ "fsname=x\\,io_uring=on", 0, RF_URING_AUTO, false, "fsname=x\\,io_uring=on", NULL },
	/* libfuse's to judge (its session refuses them, naming them) */
	{ "bogus_opt", 0, RF_URING_AUTO, false, "bogus_opt", NULL },
	{ "allow_other=1", 0, RF_URING_AUTO, false, "allow_other=1", NULL },
	/* raidfuse's key, malformed: refused by name */
	{ "io_uring=maybe", -EINVAL, 0, false, NULL, "-o io_uring=maybe: io_uring wants auto, on or off" },
	{ "io_uring=", -EINVAL, 0, false, NULL, "-o io_uring=: io_uring wants auto, on or off" },
	{ "io_uring", -EINVAL, 0, false, NULL, "-o io_uring: io_uring wants auto, on or off" },
	{ "io_uring=On", -EINVAL, 0, false, NULL, "-o io_uring=On: io_uring wants auto, on or off" },
	{ "allow_other,io_uring=yes,noatime", -EINVAL, 0, false, NULL,
	  "-o io_uring=yes: io_uring wants auto, on or off" },
	{ "io_uring=off\\,x", -EINVAL, 0, false, NULL, "-o io_uring=off,x: io_uring wants auto, on or off" },
	{ "max_read=12", -EINVAL, 0, false, NULL, "-o max_read=12: max_read wants bytes, at least 4096" },
	{ "max_read=1M", -EINVAL, 0, false, NULL, "-o max_read=1M: max_read wants bytes, at least 4096" },
};

typedef int (*opts_parse_fn)(const char *opts, struct rf_mount_opts *mo, char *err, size_t errlen);

/* How many rows parse() disagrees with, each printed. */
static int opts_mismatches(opts_parse_fn parse, const struct opts_row *rows, size_t n)
{
	struct rf_mount_opts mo;
	char err[256];
	size_t i;
	int bad = 0, ret;

	for (i = 0; i < n; i++) {
		const struct opts_row *w = &rows[i];
		bool ok;

		ret = parse(w->opts, &mo, err, sizeof(err));
		if (w->ret)
			ok = ret == w->ret && !strcmp(err, w->err);
		else
			ok = !ret && mo.uring == w->uring && mo.others == w->others &&
			     (w->fuse ? mo.fuse && !strcmp(mo.fuse, w->fuse) : !mo.fuse);
		if (!ok) {
			print_message("row %zu: -o '%s': ret %d uring %d others %d fuse '%s' err '%s'\n", i,
				      w->opts ? w->opts : "(none)", ret, mo.uring, mo.others,
				      mo.fuse ? mo.fuse : "(none)", ret ? err : "");
			bad++;
		}
		rf_mount_opts_free(&mo);
	}
	return bad;
}

static void test_mount_opts(void **state)
{
	struct rf_mount_opts mo;
	char err[256];

	assert_int_equal(opts_mismatches(rf_mount_opts_parse, opts_rows, sizeof(opts_rows) / sizeof(opts_rows[0])),
			 0);
	/* max_read's value is the daemon's to use */
	assert_int_equal(rf_mount_opts_parse("noatime,max_read=131072", &mo, err, sizeof(err)), 0);
	assert_int_equal(mo.max_read, 131072);
	assert_string_equal(mo.fuse, "noatime");
	rf_mount_opts_free(&mo);
}

/* A splitter at every comma, blind to escapes (words are kept raw):
 * what a parser by hand does. */
static int naive_split(const char *opts, struct rf_mount_opts *mo, char *err, size_t errlen)
{
	char *copy, *w, *save, key[40];
	size_t len;

	memset(mo, 0, sizeof(*mo));
	err[0] = '\0';
	if (!opts)
		return 0;
	copy = strdup(opts);
	assert_non_null(copy);
	for (w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (!strncmp(w, "io_uring=", 9)) {
			mo->uring = rf_uring_mode_parse(w + 9);
			if (mo->uring < 0) {
				snprintf(err, errlen, "-o %s: io_uring wants auto, on or off", w);
				free(copy);
				return -EINVAL;
			}
			continue;
		}
		snprintf(key, sizeof(key), ",%.36s,", w);
		if (*w && strstr(",diratime,nodiratime,relatime,norelatime,strictatime,nostrictatime,lazytime,"
				 "nolazytime,", key))
			continue;
		if (!strncmp(w, "max_read=", 9)) {
			mo->max_read = (uint32_t)strtoul(w + 9, NULL, 10);
			continue;
		}
		mo->others |= !strcmp(w, "allow_other") || !strcmp(w, "allow_root");
		len = mo->fuse ? strlen(mo->fuse) : 0;
		mo->fuse = realloc(mo->fuse, len + strlen(w) + 2);
		assert_non_null(mo->fuse);
		sprintf(mo->fuse + len, "%s%s", len ? "," : "", w);
	}
	free(copy);
	return 0;
}

/* The negative controls: the checker finds a row planted wrong (one byte
 * of an expected word), and the splitter by hand on the escaped words. */
static void test_mount_opts_checker_fails(void **state)
{
	struct opts_row planted[] = {
		{ "allow_other,io_uring=off,fsname=x", 0, RF_URING_OFF, true, "allow_other,fsname=y", NULL },
		{ "io_uring=maybe", -EINVAL, 0, false, NULL, "-o io_uring=maybe: io_uring wants auto, on or of" },
	};

	assert_int_equal(opts_mismatches(rf_mount_opts_parse, planted, 2), 2);
	/* it agrees on the plain rows: only the escaped ones and the bare
	 * or empty io_uring tell it apart */
	assert_int_equal(opts_mismatches(naive_split, opts_rows, 19), 0);
	assert_true(opts_mismatches(naive_split, opts_rows, sizeof(opts_rows) / sizeof(opts_rows[0])) >= 4);
}

/* The fstab form hands its -o on to mount, whose parser reads it back:
 * the words arrive as the fstab line gave them. */
static void test_fstab_then_mount(void **state)
{
	char *argv[] = { "raidfuse", "/c.conf", "/m", "-o",
			 "ro,io_uring=off,allow_other,fsname=a\\,b,noatime,nofail,freeze", NULL };
	struct rf_mount_opts mo;
	char **v, err[256];
	int n, i;

	assert_int_equal(rf_fstab_args(5, argv, &n, &v, err, sizeof(err)), 0);
	for (i = 0; i < n && strcmp(v[i], "-o"); i++)
		;
	assert_true(i + 1 < n);
	assert_int_equal(rf_mount_opts_parse(v[i + 1], &mo, err, sizeof(err)), 0);
	assert_int_equal(mo.uring, RF_URING_OFF);
	assert_true(mo.others);
	assert_string_equal(mo.fuse, "allow_other,fsname=a\\,b,noatime");
	rf_mount_opts_free(&mo);
	rf_fstab_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generic_dropped),
		cmocka_unit_test(test_ro_and_own),
		cmocka_unit_test(test_escaped),
		cmocka_unit_test(test_unknown_refused),
		cmocka_unit_test(test_form),
		cmocka_unit_test(test_mount_opts),
		cmocka_unit_test(test_mount_opts_checker_fails),
		cmocka_unit_test(test_fstab_then_mount),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
