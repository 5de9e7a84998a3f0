/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cmd_ctl.c - `raidfuse ctl`: read or set one md attribute of a mount, and
 * md's device verbs (add, fail, remove, re-add, replace) and sync actions
 * (check, repair) over the same files.
 *
 * ctl only reads and writes the control files under a mount
 * (MOUNTPOINT/md/ATTR): whatever the daemon serves there is what it
 * shows, and what the daemon refuses it reports.  --json prints what is
 * read as typed JSON (rf_cli_json_ctl_typed(): cli.c).  A device is named
 * by md's name (md/dev-NAME) or by its path, as md/dev-NAME/path lists it;
 * a VALUE may start with '-' (md's "-faulty").  --wait follows a sync
 * action to its end, a progress line on stderr, then prints
 * md/mismatch_cnt.
 *
 * What it does NOT do: check a value before writing it (the daemon parses
 * what is written and refuses what it does not take: ctl.c; ctl only
 * words the refusal, with rf_ctl_takes()), or touch a member.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raidfuse/ctl.h"
#include "raidfuse/detail.h"
#include "raidfuse/json.h"
#include "raidfuse/nbd.h"
#include "raidfuse/progress.h"

#include "front/cli.h"

/* Wait for the sync action just started on mnt to end, a progress line on
 * stderr meanwhile (md/sync_completed), then print md/mismatch_cnt.  The
 * action has ended when md/sync_action reads idle; frozen means someone
 * stopped it (exit 1).  An idle written by someone else looks the same as
 * the end.  0 or 1. */
static int sync_wait(const char *mnt, const char *action, bool json)
{
	char act[64], done[128], cnt[64];
	unsigned long long d, t;
	struct rf_progress p;
	struct rf_json j;

	rf_progress_start(&p, stderr, action, 0);
	for (;;) {
		if (rf_cli_read_attr(mnt, "sync_action", act, sizeof(act), true) < 0)
			return 1;
		if (!strcmp(act, "idle") || !strcmp(act, "frozen"))
			break;
		if (rf_cli_read_attr(mnt, "sync_completed", done, sizeof(done), true) < 0)
			return 1;
		if (sscanf(done, "%llu / %llu", &d, &t) == 2 && t)
			rf_progress_update(&p, d * 512, t * 512);
		rf_cli_sleep_secs(0.2);
	}
	if (!strcmp(act, "frozen")) {
		rf_progress_end(&p, "stopped");
		fprintf(stderr, "raidfuse: %s: md/sync_action is frozen: the %s was stopped\n", mnt, action);
		return 1;
	}
	if (rf_cli_read_attr(mnt, "mismatch_cnt", cnt, sizeof(cnt), true) < 0)
		return 1;
	if (p.total)
		p.done = p.total;
	rf_progress_end(&p, "done");
	if (json) {
		rf_json_init(&j, stdout);
		rf_json_obj(&j);
		rf_json_kstr(&j, "sync_action", action);
		rf_json_key(&j, "mismatch_cnt");
		rf_cli_json_ctl_value(&j, cnt);
		rf_json_obj_end(&j);
		return rf_json_end(&j) ? 1 : 0;
	}
	printf("mismatch_cnt: %s\n", cnt);
	return 0;
}

/* A VALUE may start with '-' (md's "-faulty", "-writemostly"): after ATTR
 * an argument is an option only if it is one of ctl's, spelled out. */
static bool ctl_is_option(const char *arg)
{
	static const char *const opts[] = { "--", "-J", "-W", "-h", "-JW", "-WJ", NULL };
	int i;

	if (!strncmp(arg, "--", 2))
		return true;
	for (i = 0; opts[i]; i++)
		if (!strcmp(arg, opts[i]))
			return true;
	return false;
}

/* The device name (md/dev-NAME) of the device whose path is path, as
 * md/dev-NAME/path lists it: the path as given, or the file it names
 * (symlinks, ./ and ../ resolved).  0, or the exit status after saying
 * why. */
static int ctl_dev_by_path(const char *mnt, const char *path, char *name, size_t size)
{
	char md[PATH_MAX], p[PATH_MAX + 300], got[PATH_MAX], real[PATH_MAX];
	struct dirent *e;
	bool have_real = realpath(path, real) != NULL;
	int found = 0;
	DIR *d;

	snprintf(md, sizeof(md), "%s/md", mnt);
	d = opendir(md);
	if (!d) {
		rf_cli_not_served(mnt, "md/", errno);
		return 1;
	}
	while ((e = readdir(d))) {
		int n;

		if (strncmp(e->d_name, "dev-", 4))
			continue;
		snprintf(p, sizeof(p), "%s/%s/path", md, e->d_name);
		n = rf_read_text(p, got, sizeof(got));
		if (n <= 0)
			continue;
		got[strcspn(got, "\n")] = '\0';
		if (strcmp(got, path) && !(have_real && !strcmp(got, real)))
			continue;
		snprintf(name, size, "%s", e->d_name + 4);
		found = 1;
		break;
	}
	closedir(d);
	if (found)
		return 0;
	fprintf(stderr, "raidfuse: ctl: %s is not a device of the array at %s (each md/dev-NAME/path names "
		"one)\n", path, mnt);
	return 1;
}

int rf_cmd_ctl(int argc, char **argv)
{
	static const struct option lo[] = {
		OPT_JSON,
		{ "wait", no_argument, NULL, 'W' },
		OPT_HELP,
		OPT_END
	};
	static char buf[65536];
	char path[4096], what[4200], abs[PATH_MAX], devattr[300], devname[256];
	const char *mnt, *attr, *val, *pos[3], *wait_for = NULL;
	bool json = false, wait = false;
	int fd, n, err, npos = 0, ch, rc = -1;
	struct rf_json j;
	size_t len;

	while ((ch = rf_cli_opt_next(argc, argv, "-:JWh", lo, &rc)) != -1) {
		if (ch == 'J') {
			json = true;
		} else if (ch == 'W') {
			wait = true;
		} else if (ch == 1) {
			if (npos >= 3)
				return rf_cli_usage_error("ctl: expected MOUNTPOINT ATTR [VALUE], got also '%s'", optarg);
			pos[npos++] = optarg;
			if (npos == 2 && optind < argc && argv[optind][0] == '-' && !ctl_is_option(argv[optind]))
				pos[npos++] = argv[optind++];
		}
	}
	if (rc >= 0)
		return rc;
	if (npos < 2)
		return rf_cli_usage_error("ctl: expected MOUNTPOINT ATTR [VALUE]");
	mnt = pos[0];
	attr = pos[1];
	val = npos == 3 ? pos[2] : NULL;
	/* The device verbs: md's files with md's words, as mdadm --add,
	 * --fail and --remove write them; check and repair as md's
	 * sync_action takes them. */
	if (val && !strcmp(attr, "add")) {
		if (rf_nbd_is_uri(val)) {
			attr = "new_dev";       /* an NBD export, as written */
		} else if (!realpath(val, abs)) {
			fprintf(stderr, "raidfuse: ctl add: %s: %s\n", val, strerror(errno));
			return 1;
		} else {
			attr = "new_dev";
			val = abs;
		}
	} else if (val && (!strcmp(attr, "fail") || !strcmp(attr, "remove") || !strcmp(attr, "re-add") ||
			   !strcmp(attr, "replace"))) {
		if (!*val)
			return rf_cli_usage_error("ctl: %s expects a device NAME or path", attr);
		if (strchr(val, '/')) {
			/* the path the admin typed, as mdadm takes it */
			n = ctl_dev_by_path(mnt, val, devname, sizeof(devname));
			if (n)
				return n;
			val = devname;
		}
		snprintf(devattr, sizeof(devattr), "dev-%s/state", val);
		val = !strcmp(attr, "fail") ? "faulty" : !strcmp(attr, "replace") ? "want_replacement" : attr;
		attr = devattr;
	} else if (!strcmp(attr, "check") || !strcmp(attr, "repair")) {
		if (val)
			return rf_cli_usage_error("ctl: %s takes no VALUE, got '%s'", attr, val);
		val = attr;
		attr = "sync_action";
	} else if (!val && (!strcmp(attr, "add") || !strcmp(attr, "fail") || !strcmp(attr, "remove") ||
			    !strcmp(attr, "replace"))) {
		return rf_cli_usage_error("ctl: %s expects a %s", attr, !strcmp(attr, "add") ? "FILE" : "device NAME");
	}
	if (wait) {
		static const char *const actions[] = { "check", "repair", "resync", "recover", NULL };

		for (n = 0; val && !strcmp(attr, "sync_action") && actions[n]; n++)
			if (!strcmp(val, actions[n]))
				wait_for = actions[n];
		if (!wait_for)
			return rf_cli_usage_error("ctl: --wait goes with check, repair, or sync_action "
						  "check|repair|resync|recover");
	}
	if (!*attr || attr[0] == '/' || strstr(attr, ".."))
		return rf_cli_usage_error("ctl: '%s' is not an attribute name (e.g. stripe_cache_size)", attr);
	snprintf(path, sizeof(path), "%s/md/%s", mnt, attr);
	snprintf(what, sizeof(what), "md/%s", attr);
	if (!val) {
		n = rf_read_text(path, buf, sizeof(buf));
		if (n < 0) {
			rf_cli_not_served(mnt, what, -n);
			return 1;
		}
		if (!json) {
			fputs(buf, stdout);
			return 0;
		}
		rf_json_init(&j, stdout);
		rf_json_obj(&j);
		rf_cli_json_ctl_typed(&j, attr, buf);
		rf_json_obj_end(&j);
		return rf_json_end(&j) ? 1 : 0;
	}
	/* What `echo VALUE > file` does: one write of the value and a newline. */
	len = strlen(val);
	if (len + 2 > sizeof(buf)) {
		fprintf(stderr, "raidfuse: %s: a value of %zu bytes is too long\n", what, len);
		return 1;
	}
	snprintf(buf, sizeof(buf), "%s\n", val);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		if (err == EACCES || err == EPERM)
			fprintf(stderr, "raidfuse: %s is read-only\n", what);
		else
			rf_cli_not_served(mnt, what, err);
		return 1;
	}
	n = (int)write(fd, buf, len + 1);
	err = errno;
	if (close(fd) && n >= 0) {
		n = -1;
		err = errno;
	}
	if (n < 0) {
		if (err == EINVAL && rf_ctl_takes(attr))
			fprintf(stderr, "raidfuse: %s: '%s' refused: it takes %s\n", what, val, rf_ctl_takes(attr));
		else if (err == EINVAL)
			fprintf(stderr, "raidfuse: %s: '%s' refused: not a value it takes\n", what, val);
		else
			fprintf(stderr, "raidfuse: %s: cannot set '%s': %s\n", what, val, strerror(err));
		return 1;
	}
	if ((size_t)n != len + 1) {
		fprintf(stderr, "raidfuse: %s: short write (%d of %zu bytes)\n", what, n, len + 1);
		return 1;
	}
	return wait_for ? sync_wait(mnt, wait_for, json) : 0;
}
