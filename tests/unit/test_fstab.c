/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_fstab.c - the mount helper's form: which argument lists are that
 * form, and how `raidfuse CONFIG MNT -o OPTS` becomes `raidfuse mount`'s
 * arguments: generic options dropped, ro as --ro, FUSE's to -o (escaped
 * again), raidfuse's own as long options, an unknown one refused by name.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generic_dropped),
		cmocka_unit_test(test_ro_and_own),
		cmocka_unit_test(test_escaped),
		cmocka_unit_test(test_unknown_refused),
		cmocka_unit_test(test_form),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
