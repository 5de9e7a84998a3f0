/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cmd_status.c - `raidfuse status` and `raidfuse list`: what the control
 * files of one mount, or of every raidfuse mount, say.
 *
 * status prints MOUNTPOINT/mdstat and every attribute under MOUNTPOINT/md
 * (--json: one typed object, the devices' files included), or with
 * --watch mdstat again every few seconds until no sync action runs, as
 * watch cat /proc/mdstat does; --detail what mdadm --detail prints, with
 * its exit status; --scan an mdadm.conf ARRAY line for each mount.  list
 * names every raidfuse mount of this user (every user's for root) from
 * the mount table, with its UUID, level, state, size and daemon's pid.
 *
 * What it does NOT do: write a control file, or ask the daemon anything
 * beyond reading its files (detail.c reads them for --detail and list,
 * in a child: cli.c).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "raidfuse/detail.h"
#include "raidfuse/holder.h"
#include "raidfuse/json.h"

#include "front/cli.h"

/* fn(ctx, name, text) for every readable regular file of dir (md/ or
 * md/dev-NAME/), in the daemon's order (a meaningful one: keep it).
 * 0, or 1 when dir or a file cannot be read (reported). */
static int each_ctl_file(const char *dir, void (*fn)(void *ctx, const char *name, char *text), void *ctx)
{
	static char buf[65536];
	char path[4096];
	struct dirent *de;
	DIR *d = opendir(dir);
	int n;

	if (!d) {
		fprintf(stderr, "raidfuse: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	while ((de = readdir(d))) {
		if (de->d_type != DT_REG)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n = rf_read_text(path, buf, sizeof(buf));
		if (n == -EACCES)
			continue;       /* write-only (md/new_dev) */
		if (n < 0) {
			fprintf(stderr, "raidfuse: %s: %s\n", path, strerror(-n));
			closedir(d);
			return 1;
		}
		fn(ctx, de->d_name, buf);
	}
	closedir(d);
	return 0;
}

static void json_ctl_member(void *j, const char *name, char *text)
{
	rf_cli_json_ctl_typed(j, name, text);
}

/* status --json: one object, md's attribute names as keys (level,
 * raid_disks, chunk_size, layout, array_state, degraded, sync_action,
 * mismatch_cnt, ...), then "devices" (the files of each md/dev-NAME, with "name") and
 * "mdstat" (the text).  0 or 1 (reported). */
static int status_json(const char *mnt, const char *mdstat)
{
	char path[4096], abs[PATH_MAX];
	struct dirent *de;
	struct rf_json j;
	DIR *d;
	int ret = 0;

	rf_json_init(&j, stdout);
	rf_json_obj(&j);
	rf_json_kstr(&j, "mountpoint", realpath(mnt, abs) ? abs : mnt);
	/* the image: the one regular file beside mdstat */
	d = opendir(mnt);
	while (d && (de = readdir(d)))
		if (de->d_type == DT_REG && strcmp(de->d_name, "mdstat"))
			rf_json_kstr(&j, "image", de->d_name);
	if (d)
		closedir(d);
	snprintf(path, sizeof(path), "%s/md", mnt);
	ret = each_ctl_file(path, json_ctl_member, &j);
	rf_json_key(&j, "devices");
	rf_json_arr(&j);
	d = ret ? NULL : opendir(path);
	while (d && (de = readdir(d))) {
		if (de->d_type != DT_DIR || strncmp(de->d_name, "dev-", 4))
			continue;
		rf_json_obj(&j);
		rf_json_kstr(&j, "name", de->d_name + 4);
		snprintf(path, sizeof(path), "%s/md/%s", mnt, de->d_name);
		ret |= each_ctl_file(path, json_ctl_member, &j);
		rf_json_obj_end(&j);
	}
	if (d)
		closedir(d);
	rf_json_arr_end(&j);
	rf_json_kstr(&j, "mdstat", mdstat);
	rf_json_obj_end(&j);
	if (rf_json_end(&j)) {
		fprintf(stderr, "raidfuse: status: writing JSON: %s\n", strerror(-j.err));
		ret = 1;
	}
	return ret;
}

/* The text status: mdstat, then each attribute's first line. */
static void print_ctl_line(void *ctx, const char *name, char *text)
{
	text[strcspn(text, "\n")] = '\0';
	printf("%-20s %s\n", name, text);
}

static int status_text(const char *mnt, const char *mdstat)
{
	char path[4096];
	struct stat st;

	fputs(mdstat, stdout);
	snprintf(path, sizeof(path), "%s/md", mnt);
	if (stat(path, &st)) {
		rf_cli_not_served(mnt, path, errno);
		return 1;
	}
	printf("\n");
	return each_ctl_file(path, print_ctl_line, NULL);
}

/* One status, or with watch one every secs until no sync action runs
 * (at once if none does): on a terminal each redraws the screen under a
 * header, as watch(1) does; otherwise they follow each other, a blank
 * line between. */
static int status_show(const char *mnt, bool json, bool watch, double secs)
{
	static char mdstat[65536];
	char path[4096], when[64];
	bool tty = isatty(STDOUT_FILENO), first = true, running;
	time_t now;
	int n, ret;

	snprintf(path, sizeof(path), "%s/mdstat", mnt);
	for (;;) {
		/* Read before the block it prints: a sync that ends while the
		 * block is read gets one block more, so the last one shows it
		 * ended. */
		running = watch && rf_cli_sync_running(mnt);
		n = rf_read_text(path, mdstat, sizeof(mdstat));
		if (n < 0) {
			rf_cli_not_served(mnt, path, -n);
			return 1;
		}
		if (watch && !json) {
			now = time(NULL);
			strftime(when, sizeof(when), "%a %b %e %H:%M:%S %Y", localtime(&now));
			printf("%sEvery %.1fs: raidfuse status %s  %s\n\n", tty ? "\033[H\033[2J" : first ? "" : "\n",
			       secs, mnt, when);
		}
		if (watch && !json) {
			fputs(mdstat, stdout);  /* what watch cat /proc/mdstat shows */
			ret = 0;
		} else {
			ret = json ? status_json(mnt, mdstat) : status_text(mnt, mdstat);
		}
		fflush(stdout);
		/* Ended only when idle before and after the block: a sync
		 * started in between shows in the next one. */
		if (ret || !watch || (!running && !rf_cli_sync_running(mnt)))
			return ret;
		first = false;
		rf_cli_sleep_secs(secs);
	}
}

/* How long status --detail waits for its mount's files: a daemon that is
 * stopped or stuck does not answer. */
#define DETAIL_TIMEOUT_MS 30000

/* status --detail MOUNTPOINT: what mdadm --detail prints, exit status
 * as mdadm --detail --test's (RF_DETAIL_*); 4 also when the daemon does
 * not answer within DETAIL_TIMEOUT_MS. */
static int status_detail(const char *mnt, bool json)
{
	struct rf_cli_mount_read *mr = mmap(NULL, sizeof(*mr), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int r;

	if (mr == MAP_FAILED) {
		fprintf(stderr, "raidfuse: status: %s\n", strerror(errno));
		return RF_DETAIL_UNREADABLE;
	}
	if (rf_cli_read_mount(mnt, mr, DETAIL_TIMEOUT_MS)) {
		fprintf(stderr, "raidfuse: status: %s\n", mr->err);
		munmap(mr, sizeof(*mr));
		return RF_DETAIL_UNREADABLE;
	}
	if (json ? rf_detail_print_json(stdout, &mr->d) : (rf_detail_print(stdout, &mr->d), 0)) {
		fprintf(stderr, "raidfuse: status: writing JSON: %s\n", strerror(EIO));
		munmap(mr, sizeof(*mr));
		return RF_DETAIL_UNREADABLE;
	}
	r = rf_detail_status(&mr->d);
	munmap(mr, sizeof(*mr));
	return r;
}

/* fn(ctx, m, d, err) for every listed mount, d NULL when its files could
 * not be read (err says why).  Returns how many there were, or -errno. */
static int each_mount(void (*fn)(void *ctx, const struct rf_mount_ent *m, const struct rf_detail *d,
				 const char *err),
		      void *ctx)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	struct rf_cli_mount_read *mr = mmap(NULL, sizeof(*mr), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct rf_mount_ent m;
	int n = 0;

	if (!f || mr == MAP_FAILED) {
		n = -errno;
		if (f)
			fclose(f);
		if (mr != MAP_FAILED)
			munmap(mr, sizeof(*mr));
		return n;
	}
	while (!rf_mountinfo_next(f, &m)) {
		if (!rf_cli_listed_mount(&m))
			continue;
		if (rf_cli_read_mount(m.point, mr, LIST_MOUNT_TIMEOUT_MS)) {
			fn(ctx, &m, NULL, mr->err);
		} else {
			if (!mr->d.pid)
				mr->d.pid = rf_serve_pid_of(&m);
			fn(ctx, &m, &mr->d, NULL);
		}
		n++;
	}
	fclose(f);
	munmap(mr, sizeof(*mr));
	return n;
}

/* The name list shows: the NAME of a raidfuse:NAME source, else the image. */
static const char *mount_name(const struct rf_mount_ent *m, const struct rf_detail *d)
{
	size_t len = strlen(RF_MOUNT_SOURCE);

	if (!strncmp(m->source, RF_MOUNT_SOURCE, len) && m->source[len])
		return m->source + len;
	return d && d->image[0] ? d->image : m->source;
}

/* A size in KiB as lsblk prints one: 1024-based, one decimal under 10. */
static const char *short_size(uint64_t kib, char *buf, size_t len)
{
	static const char units[] = "KMGTPE";
	double v = (double)kib;
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, v < 10 && u ? "%.1f%c" : "%.0f%c", v, units[u]);
	return buf;
}

static void list_text(void *ctx, const struct rf_mount_ent *m, const struct rf_detail *d, const char *err)
{
	char sz[32], lv[16], pid[16];

	if (!*(bool *)ctx) {
		printf("%-16s %-28s %-35s %-6s %-10s %7s %s\n", "NAME", "MOUNTPOINT", "UUID", "LEVEL", "STATE", "SIZE",
		       "PID");
		*(bool *)ctx = true;
	}
	if (!d) {
		printf("%-16s %-28s %-35s %-6s %-10s %7s %s\n", mount_name(m, d), m->point, "-", "-", "unreachable", "-",
		       "-");
		fprintf(stderr, "raidfuse: list: %s\n", err);
		return;
	}
	snprintf(lv, sizeof(lv), "raid%d", d->level);
	snprintf(pid, sizeof(pid), "%d", (int)d->pid);
	printf("%-16s %-28s %-35s %-6s %-10s %7s %s\n", mount_name(m, d), m->point, d->uuid[0] ? d->uuid : "-", lv,
	       rf_detail_state_word(d), short_size(d->array_kib, sz, sizeof(sz)), d->pid ? pid : "-");
}

static void list_json(void *ctx, const struct rf_mount_ent *m, const struct rf_detail *d, const char *err)
{
	struct rf_json *j = ctx;
	char lv[16];

	rf_json_obj(j);
	rf_json_kstr(j, "name", mount_name(m, d));
	rf_json_kstr(j, "mountpoint", m->point);
	rf_json_kstr(j, "source", m->source);
	rf_json_kstr(j, "fstype", m->type);
	if (!d) {
		rf_json_kstr(j, "state", "unreachable");
		rf_json_kstr(j, "error", err);
		rf_json_obj_end(j);
		return;
	}
	rf_json_kstr(j, "image", d->image[0] ? d->image : NULL);
	rf_json_kstr(j, "uuid", d->uuid[0] ? d->uuid : NULL);
	snprintf(lv, sizeof(lv), "raid%d", d->level);
	rf_json_kstr(j, "level", lv);
	rf_json_kstr(j, "state", rf_detail_state_word(d));
	rf_json_kint(j, "degraded", d->degraded);
	rf_json_kuint(j, "size", d->array_kib * 1024);
	rf_json_key(j, "pid");
	if (d->pid)
		rf_json_int(j, d->pid);
	else
		rf_json_null(j);
	rf_json_obj_end(j);
}

/* status --scan: an mdadm.conf ARRAY line for each mount, after a
 * comment naming the mount (mdadm.conf has no word for a mount point). */
static void scan_line(void *ctx, const struct rf_mount_ent *m, const struct rf_detail *d, const char *err)
{
	if (!d) {
		fprintf(stderr, "raidfuse: status --scan: %s\n", err);
		return;
	}
	if (!d->uuid[0])
		return;
	printf("# %s on %s\n", m->source, m->point);
	rf_detail_array_line(stdout, d->metadata, d->uuid, d->set_name, mount_name(m, d));
}

int rf_cmd_list(int argc, char **argv)
{
	static const struct option lo[] = { OPT_JSON, OPT_HELP, OPT_END };
	bool json = false, header = false;
	struct rf_json j;
	int ch, rc = -1, n;

	while ((ch = rf_cli_opt_next(argc, argv, "-:Jh", lo, &rc)) != -1) {
		if (ch == 'J')
			json = true;
		else if (ch == 1)
			return rf_cli_usage_error("list: takes no argument, got '%s'", optarg);
	}
	if (rc >= 0)
		return rc;
	if (!json) {
		n = each_mount(list_text, &header);
	} else {
		rf_json_init(&j, stdout);
		rf_json_arr(&j);
		n = each_mount(list_json, &j);
		rf_json_arr_end(&j);
		if (rf_json_end(&j) && n >= 0)
			n = -EIO;
	}
	if (n < 0) {
		fprintf(stderr, "raidfuse: list: %s\n", strerror(-n));
		return 1;
	}
	return 0;
}

int rf_cmd_status(int argc, char **argv)
{
	static const struct option lo[] = {
		OPT_JSON,
		{ "watch", optional_argument, NULL, 'w' },
		{ "detail", no_argument, NULL, 'D' },
		{ "scan", no_argument, NULL, 's' },
		OPT_HELP,
		OPT_END
	};
	const char *mnt = NULL;
	char *end;
	bool json = false, watch = false, secs_due = false, detail = false, scan = false;
	double secs = 2;
	int ch, rc = -1, n;

	while ((ch = rf_cli_opt_next(argc, argv, "-:Jw::Dsh", lo, &rc)) != -1) {
		switch (ch) {
		case 'D':
			detail = true;
			secs_due = false;
			break;
		case 's':
			scan = true;
			secs_due = false;
			break;
		case 'J':
			json = true;
			secs_due = false;
			break;
		case 'w':
			watch = true;
			secs_due = !optarg;     /* "--watch 5": the number may follow */
			if (optarg && !rf_cli_parse_secs(optarg, &secs))
				return rf_cli_usage_error("status: --watch takes SECONDS (0.1 to 86400), not '%s'", optarg);
			break;
		case 1:
			if (secs_due && rf_cli_parse_secs(optarg, &secs)) {
				secs_due = false;
				break;
			}
			/* A number there is a --watch interval out of range,
			 * not a mount point. */
			if (secs_due && strchr("0123456789.", *optarg) && strtod(optarg, &end) >= 0 && !*end)
				return rf_cli_usage_error("status: --watch takes SECONDS (0.1 to 86400), not '%s'", optarg);
			secs_due = false;
			if (mnt)
				return rf_cli_usage_error("status: expected one MOUNTPOINT, got also '%s'", optarg);
			mnt = optarg;
			break;
		}
	}
	if (rc >= 0)
		return rc;
	if ((detail || scan) && watch)
		return rf_cli_usage_error("status: --watch goes without --detail and --scan");
	if (scan) {
		if (mnt || detail || json)
			return rf_cli_usage_error("status: --scan takes no MOUNTPOINT, --detail or --json (raidfuse list "
						  "--json lists the mounts)");
		n = each_mount(scan_line, NULL);
		if (n < 0)
			fprintf(stderr, "raidfuse: status --scan: %s\n", strerror(-n));
		return n < 0 ? 1 : 0;
	}
	if (!mnt)
		return rf_cli_usage_error("status: expected MOUNTPOINT");
	if (detail)
		return status_detail(mnt, json);
	return status_show(mnt, json, watch, secs);
}
