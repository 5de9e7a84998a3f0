/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fstab.c - `raidfuse CONFIG MOUNTPOINT -o OPTS`: the mount helper's form.
 *
 * An /etc/fstab line (or `mount -t fuse.raidfuse CONFIG MNT -o OPTS`)
 * makes mount(8) run mount.fuse3 with type raidfuse, which runs
 * `raidfuse CONFIG MNT -o OPTS` through the shell ("raidfuse#CONFIG" as
 * the source, the older form, comes the same way).  OPTS hold what the
 * fstab line says, the generic options mount(8) and mount.fuse3 add
 * (dev, suid: mount.fuse3 always adds them unless told nodev, nosuid),
 * and raidfuse's own; this file turns them into `raidfuse mount`'s
 * arguments, with libfuse's option parser (fuse_opt_parse(), which also
 * unescapes "\,"):
 *
 *   - the kernel's mount flags FUSE takes (nodev, nosuid, noexec, sync,
 *     dirsync, noatime, ...) go to libfuse as they are, as any FUSE file
 *     system passes them;
 *   - ro serves the array read-only (mount --ro: the members opened
 *     read-only, writes fail with EROFS); rw and the other defaults
 *     (defaults, atime, exec, auto, user, ...) and what is meant for
 *     mount(8) or systemd alone (nofail, _netdev, x-*, comment=) are
 *     dropped;
 *   - FUSE's own (allow_other, allow_root, default_permissions,
 *     auto_unmount, fsname=, subtype=, max_read=) and io_uring= go to
 *     -o, as `raidfuse mount -o` takes them;
 *   - raidfuse mount's long options as -o words: freeze, force, verbose,
 *     allow_unsafe_dirs, overlay=DIR, log=FILE|stderr|syslog|journal;
 *     -f, -d and -v as on the command line.
 *
 * Any other option is an error naming it: a typing mistake in fstab must
 * not be served as something else.
 *
 * `-o OPTS` of raidfuse mount and assemble (so also what this form hands
 * on to -o) is split here too, with the same parser (mount_opts.h):
 * io_uring= taken out, allow_other and allow_root noted, the rest left
 * for libfuse.  This file and the FUSE front end's (fuse_int.h) are the only ones
 * that see libfuse's headers; this one only fuse_opt.h.
 *
 * What it does NOT do: read /etc/fstab (mount does), check CONFIG (mount
 * does, with the config's line and key), or check the words meant for
 * libfuse (fuse_serve.c's session does).
 */
#include <errno.h>
#include <fuse_opt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "raidfuse/fstab.h"
#include "front/fuse_uring.h"
#include "front/mount_opts.h"

#define SOURCE_PREFIX "raidfuse#"

enum {
	K_DROP,         /* means nothing here */
	K_FUSE,         /* to libfuse's -o, as it is */
	K_RO,           /* --ro */
	K_ARG,          /* a raidfuse mount option: the word's --option */
	K_ARG_VALUE,    /* --option VALUE from word=VALUE */
};

/* word -> raidfuse mount's option, for K_ARG and K_ARG_VALUE. */
static const struct {
	const char *word, *arg;
} own[] = {
	{ "freeze", "--freeze" },
	{ "force", "--force" },
	{ "verbose", "-v" },
	{ "allow_unsafe_dirs", "--allow-unsafe-dirs" },
	{ "-f", "-f" },
	{ "-d", "-d" },
	{ "-v", "-v" },
	{ "overlay=", "--overlay" },
	{ "log=", "--log" },
};

static const struct fuse_opt opts[] = {
	/* what mount(8), mount.fuse3 and systemd add or keep for themselves */
	FUSE_OPT_KEY("rw", K_DROP), FUSE_OPT_KEY("defaults", K_DROP), FUSE_OPT_KEY("auto", K_DROP),
	FUSE_OPT_KEY("noauto", K_DROP), FUSE_OPT_KEY("user", K_DROP), FUSE_OPT_KEY("nouser", K_DROP),
	FUSE_OPT_KEY("users", K_DROP), FUSE_OPT_KEY("owner", K_DROP), FUSE_OPT_KEY("group", K_DROP),
	FUSE_OPT_KEY("nofail", K_DROP), FUSE_OPT_KEY("_netdev", K_DROP), FUSE_OPT_KEY("comment=", K_DROP),
	FUSE_OPT_KEY("dev", K_DROP), FUSE_OPT_KEY("suid", K_DROP), FUSE_OPT_KEY("exec", K_DROP),
	FUSE_OPT_KEY("atime", K_DROP), FUSE_OPT_KEY("diratime", K_DROP), FUSE_OPT_KEY("async", K_DROP),
	FUSE_OPT_KEY("loud", K_DROP), FUSE_OPT_KEY("silent", K_DROP),
	/* the kernel's mount flags, as libfuse passes them */
	FUSE_OPT_KEY("nodev", K_FUSE), FUSE_OPT_KEY("nosuid", K_FUSE), FUSE_OPT_KEY("noexec", K_FUSE),
	FUSE_OPT_KEY("sync", K_FUSE), FUSE_OPT_KEY("dirsync", K_FUSE), FUSE_OPT_KEY("noatime", K_FUSE),
	FUSE_OPT_KEY("nodiratime", K_FUSE), FUSE_OPT_KEY("relatime", K_FUSE),
	FUSE_OPT_KEY("norelatime", K_FUSE), FUSE_OPT_KEY("strictatime", K_FUSE),
	FUSE_OPT_KEY("lazytime", K_FUSE), FUSE_OPT_KEY("nolazytime", K_FUSE),
	/* FUSE's own, and raidfuse mount -o's transport */
	FUSE_OPT_KEY("allow_other", K_FUSE), FUSE_OPT_KEY("allow_root", K_FUSE),
	FUSE_OPT_KEY("default_permissions", K_FUSE), FUSE_OPT_KEY("auto_unmount", K_FUSE),
	FUSE_OPT_KEY("fsname=", K_FUSE), FUSE_OPT_KEY("subtype=", K_FUSE), FUSE_OPT_KEY("max_read=", K_FUSE),
	FUSE_OPT_KEY("io_uring=", K_FUSE),
	/* the array */
	FUSE_OPT_KEY("ro", K_RO), FUSE_OPT_KEY("readonly", K_RO),
	FUSE_OPT_KEY("freeze", K_ARG), FUSE_OPT_KEY("force", K_ARG), FUSE_OPT_KEY("verbose", K_ARG),
	FUSE_OPT_KEY("allow_unsafe_dirs", K_ARG),
	FUSE_OPT_KEY("-f", K_ARG), FUSE_OPT_KEY("-d", K_ARG), FUSE_OPT_KEY("-v", K_ARG),
	FUSE_OPT_KEY("overlay=", K_ARG_VALUE), FUSE_OPT_KEY("log=", K_ARG_VALUE),
	FUSE_OPT_END
};

struct parse {
	const char *pos[2];             /* CONFIG, MOUNTPOINT */
	int npos;
	char *fuse_opts;                /* for -o, escaped (fuse_opt_add_opt_escaped) */
	char *args[2 * 16];             /* raidfuse mount's options, malloc'd */
	int nargs;
	bool ro;
	char *err;
	size_t errlen;
	int ret;
};

/* A copy of a into p->args (a may lie in fuse_opt_parse's copy of -o's
 * words).  0, or -1 with p->ret set. */
static int add_arg(struct parse *p, const char *a)
{
	char *c;

	if (p->nargs >= (int)(sizeof(p->args) / sizeof(p->args[0]))) {
		snprintf(p->err, p->errlen, "too many options");
		p->ret = -EINVAL;
		return -1;
	}
	c = strdup(a);
	if (!c) {
		p->ret = -ENOMEM;
		return -1;
	}
	p->args[p->nargs++] = c;
	return 0;
}

static void parse_free(struct parse *p)
{
	while (p->nargs)
		free(p->args[--p->nargs]);
	free(p->fuse_opts);
}

static const char *own_arg(const char *arg, const char **value)
{
	size_t i, n;

	for (i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		n = strlen(own[i].word);
		if (own[i].word[n - 1] == '=' ? !strncmp(arg, own[i].word, n) : !strcmp(arg, own[i].word)) {
			*value = arg + (own[i].word[n - 1] == '=' ? n : strlen(arg));
			return own[i].arg;
		}
	}
	return NULL;
}

/* fuse_opt_parse's callback: -1 stops it (p->ret says why). */
static int proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct parse *p = data;
	const char *value, *a;

	(void)outargs;
	switch (key) {
	case FUSE_OPT_KEY_NONOPT:
		if (p->npos >= 2) {
			snprintf(p->err, p->errlen, "expected CONFIG MOUNTPOINT -o OPTIONS, got also '%s'", arg);
			p->ret = -EINVAL;
			return -1;
		}
		p->pos[p->npos++] = arg;
		return 0;
	case FUSE_OPT_KEY_OPT:
		if (!strncmp(arg, "x-", 2))
			return 0;
		snprintf(p->err, p->errlen, "unknown mount option '%s' (raidfuse(8), FSTAB lists those taken)", arg);
		p->ret = -EINVAL;
		return -1;
	case K_DROP:
		return 0;
	case K_RO:
		p->ro = true;
		return 0;
	case K_FUSE:
		if (fuse_opt_add_opt_escaped(&p->fuse_opts, arg)) {
			p->ret = -ENOMEM;
			return -1;
		}
		return 0;
	case K_ARG:
	case K_ARG_VALUE:
		a = own_arg(arg, &value);
		if (!a)
			return 0;
		if (key == K_ARG_VALUE && !*value) {
			snprintf(p->err, p->errlen, "mount option '%s' needs a value", arg);
			p->ret = -EINVAL;
			return -1;
		}
		if (add_arg(p, a) || (key == K_ARG_VALUE && add_arg(p, value)))
			return -1;
		return 0;
	}
	return 0;
}

bool rf_fstab_form(int argc, char **argv)
{
	struct stat st;

	if (argc < 3 || argv[1][0] == '-')
		return false;
	if (!strncmp(argv[1], SOURCE_PREFIX, strlen(SOURCE_PREFIX)))
		return true;
	if (!stat(argv[1], &st) && S_ISREG(st.st_mode))
		return true;
	return !stat(argv[2], &st) && S_ISDIR(st.st_mode);
}

int rf_fstab_args(int argc, char **argv, int *outc, char ***out, char *err, size_t errlen)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct parse p = { .err = err, .errlen = errlen };
	char **v;
	int i, n = 0;

	err[0] = '\0';
	if (fuse_opt_parse(&args, &p, opts, proc)) {
		fuse_opt_free_args(&args);
		parse_free(&p);
		if (!p.ret || p.ret == -ENOMEM) {
			if (!err[0])
				snprintf(err, errlen, "cannot parse the options: %s", strerror(ENOMEM));
			return -ENOMEM;
		}
		return p.ret;
	}
	fuse_opt_free_args(&args);
	if (p.npos < 2) {
		snprintf(err, errlen, "expected CONFIG MOUNTPOINT -o OPTIONS");
		parse_free(&p);
		return -EINVAL;
	}
	if (!strncmp(p.pos[0], SOURCE_PREFIX, strlen(SOURCE_PREFIX)))
		p.pos[0] += strlen(SOURCE_PREFIX);
	/* "mount" [--ro] ARGS... [-o OPTS] -- CONFIG MOUNTPOINT NULL, each a
	 * copy of its own */
	v = calloc((size_t)p.nargs + 8, sizeof(*v));
	if (!v) {
		parse_free(&p);
		return -ENOMEM;
	}
	v[n++] = strdup("mount");
	if (p.ro)
		v[n++] = strdup("--ro");
	for (i = 0; i < p.nargs; i++)
		v[n++] = p.args[i];
	p.nargs = 0;
	if (p.fuse_opts) {
		v[n++] = strdup("-o");
		v[n++] = p.fuse_opts;
		p.fuse_opts = NULL;
	}
	v[n++] = strdup("--");
	v[n++] = strdup(p.pos[0]);
	v[n++] = strdup(p.pos[1]);
	v[n] = NULL;
	for (i = 0; i < n && v[i]; i++)
		;
	if (i < n) {
		for (i = 0; i < n; i++)
			free(v[i]);
		free(v);
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	*outc = n;
	*out = v;
	return 0;
}

/* ---- -o OPTS of raidfuse mount and assemble (mount_opts.h) ---- */

enum { M_URING = 1, M_OTHERS, M_MAX_READ, M_DROP };

static const struct fuse_opt mount_keys[] = {
	/* the bare word too: an error naming it, not libfuse's */
	FUSE_OPT_KEY("io_uring=", M_URING), FUSE_OPT_KEY("io_uring", M_URING),
	FUSE_OPT_KEY("max_read=", M_MAX_READ),
	/* access-time words mount(8) hands on that libfuse's mount does not
	 * take: the image's times are the daemon's, whatever they say */
	FUSE_OPT_KEY("diratime", M_DROP), FUSE_OPT_KEY("nodiratime", M_DROP),
	FUSE_OPT_KEY("relatime", M_DROP), FUSE_OPT_KEY("norelatime", M_DROP),
	FUSE_OPT_KEY("strictatime", M_DROP), FUSE_OPT_KEY("nostrictatime", M_DROP),
	FUSE_OPT_KEY("lazytime", M_DROP), FUSE_OPT_KEY("nolazytime", M_DROP),
	FUSE_OPT_KEY("allow_other", M_OTHERS), FUSE_OPT_KEY("allow_root", M_OTHERS),
	FUSE_OPT_END
};

struct mount_parse {
	struct rf_mount_opts *mo;
	char *err;
	size_t errlen;
	int ret;
};

/* fuse_opt_parse's callback, one word of -o at a time (unescaped): -1
 * stops it (p->ret says why). */
static int mount_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct mount_parse *p = data;
	int mode;

	(void)outargs;
	switch (key) {
	case M_URING:
		mode = strncmp(arg, "io_uring=", 9) ? -EINVAL : rf_uring_mode_parse(arg + 9);
		if (mode < 0) {
			snprintf(p->err, p->errlen, "-o %s: io_uring wants auto, on or off", arg);
			p->ret = -EINVAL;
			return -1;
		}
		p->mo->uring = mode;
		return 0;
	case M_OTHERS:
		p->mo->others = true;
		break;
	case M_DROP:
		return 0;
	case M_MAX_READ: {
		/* The daemon asks the kernel for its own largest read at
		 * mount and at INIT, which must agree: the word is its. */
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(arg + 9, &end, 10);
		if (errno || end == arg + 9 || *end || v < 4096 || v > UINT32_MAX) {
			snprintf(p->err, p->errlen, "-o %s: max_read wants bytes, at least 4096", arg);
			p->ret = -EINVAL;
			return -1;
		}
		p->mo->max_read = (uint32_t)v;
		return 0;
	}
	case FUSE_OPT_KEY_NONOPT:
		/* only "-o" OPTS is parsed: nothing comes here */
		snprintf(p->err, p->errlen, "-o: unexpected '%s'", arg);
		p->ret = -EINVAL;
		return -1;
	}
	if (!*arg)
		return 0;
	if (fuse_opt_add_opt_escaped(&p->mo->fuse, arg)) {
		snprintf(p->err, p->errlen, "-o: %s", strerror(ENOMEM));
		p->ret = -ENOMEM;
		return -1;
	}
	return 0;
}

int rf_mount_opts_parse(const char *words, struct rf_mount_opts *mo, char *err, size_t errlen)
{
	char *argv[] = { "raidfuse", "-o", (char *)words, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	struct mount_parse p = { .mo = mo, .err = err, .errlen = errlen };
	int ret = 0;

	memset(mo, 0, sizeof(*mo));
	mo->uring = RF_URING_AUTO;
	err[0] = '\0';
	if (!words)
		return 0;
	if (fuse_opt_parse(&args, &p, mount_keys, mount_proc)) {
		/* without p.ret: libfuse's own allocation failed */
		ret = p.ret ? p.ret : -ENOMEM;
		if (!err[0])
			snprintf(err, errlen, "-o: %s", strerror(-ret));
	}
	fuse_opt_free_args(&args);
	return ret;
}

void rf_mount_opts_free(struct rf_mount_opts *mo)
{
	free(mo->fuse);
	mo->fuse = NULL;
}

void rf_fstab_free(char **v)
{
	int i;

	if (!v)
		return;
	for (i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}
