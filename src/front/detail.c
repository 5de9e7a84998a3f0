/* SPDX-License-Identifier: GPL-2.0-or-later */
/* detail.c - an array's state as mdadm --detail shows it (detail.h).
 *
 * Reads the control files of a mount, as a script would with cat: each
 * file's first line, md's units (KiB, bytes, sectors), md's words.  The
 * judgement of what the files say (degraded, failed, rebuilding) is
 * mdadm's: an array is usable when each slot's data is on some in-sync
 * member (enough()), degraded when a slot is not in sync, and its State
 * line lists md's array_state, then degraded, FAILED and the sync action
 * under way.
 *
 * What it does NOT do: ask the daemon anything beyond reading its files,
 * read a member, or decide anything the daemon decides (the daemon's
 * files are the truth; this only words them).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/detail.h"
#include "raidfuse/holder.h"
#include "raidfuse/json.h"
#include "raidfuse/layout.h"
#include "raidfuse/super.h"

int rf_read_text(const char *path, char *buf, size_t size)
{
	ssize_t n;
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), e;

	if (fd < 0)
		return -errno;
	while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			e = errno;
			close(fd);
			return -e;
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return (int)len;
}

/* The first line of path into buf (its newline cut).  0 or -errno. */
static int first_line(const char *path, char *buf, size_t size)
{
	int n = rf_read_text(path, buf, size);

	if (n < 0)
		return n;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* MNT/md/name's first line; "" when the array has no such file (md
 * leaves some out by level).  0, or -errno other than ENOENT with err. */
static int attr(const struct rf_detail *d, const char *name, char *buf, size_t size, char *err, size_t errlen)
{
	char path[PATH_MAX + 300];
	int n;

	snprintf(path, sizeof(path), "%s/md/%s", d->mnt, name);
	n = first_line(path, buf, size);
	if (n == -ENOENT) {
		buf[0] = '\0';
		return 0;
	}
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-n));
		return n;
	}
	return 0;
}

static uint64_t num(const char *s)
{
	return strtoull(s, NULL, 10);
}

/* md's device number: mdstat lists each device as " NAME[N]". */
static int mdstat_number(const char *mdstat, const char *name)
{
	size_t len = strlen(name);
	const char *p = mdstat;

	while ((p = strstr(p, name))) {
		if (p > mdstat && p[-1] == ' ' && p[len] == '[')
			return atoi(p + len + 1);
		p += len;
	}
	return -1;
}

/* Whether md's comma-separated state words hold word (whole: "replacement"
 * is not "want_replacement"). */
static bool state_has(const char *state, const char *word)
{
	size_t n = strlen(word);
	const char *p;

	for (p = state; (p = strstr(p, word)); p += n)
		if ((p == state || p[-1] == ',') && (p[n] == ',' || p[n] == '\n' || !p[n]))
			return true;
	return false;
}

static int read_dev(struct rf_detail *d, struct rf_detail_dev *v, const char *mdstat, char *err, size_t errlen)
{
	char f[300], state[256], slot[32], rs[64];
	struct stat st;
	int r;

	snprintf(f, sizeof(f), "dev-%s/state", v->name);
	r = attr(d, f, state, sizeof(state), err, errlen);
	snprintf(f, sizeof(f), "dev-%s/slot", v->name);
	r = r ? r : attr(d, f, slot, sizeof(slot), err, errlen);
	snprintf(f, sizeof(f), "dev-%s/recovery_start", v->name);
	r = r ? r : attr(d, f, rs, sizeof(rs), err, errlen);
	snprintf(f, sizeof(f), "dev-%s/path", v->name);
	r = r ? r : attr(d, f, v->path, sizeof(v->path), err, errlen);
	if (r)
		return r;
	v->faulty = state_has(state, "faulty");
	v->in_sync = state_has(state, "in_sync");
	v->write_mostly = state_has(state, "write_mostly");
	v->slot = slot[0] >= '0' && slot[0] <= '9' ? atoi(slot) : -1;
	v->rebuilding = (v->slot >= 0 && !v->in_sync && !v->faulty && strcmp(rs, "none")) ||
			(!v->faulty && state_has(state, "replacement"));
	v->number = mdstat_number(mdstat, v->name);
	if (!stat(v->path, &st) && S_ISBLK(st.st_mode)) {
		v->major = major(st.st_rdev);
		v->minor = minor(st.st_rdev);
	}
	return 0;
}

static int cmp_dev(const void *a, const void *b)
{
	const struct rf_detail_dev *x = a, *y = b;

	return x->number != y->number ? (x->number > y->number) - (x->number < y->number) : strcmp(x->name, y->name);
}

#define MDSTAT_MAX 65536

/* rf_detail_read() with mdstat a buffer of MDSTAT_MAX bytes. */
static int detail_read(const char *mnt, struct rf_detail *d, char *mdstat, char *err, size_t errlen)
{
	char path[PATH_MAX + 300], v[256];
	struct rf_mount_ent m;
	struct dirent *de;
	DIR *dir;
	int r;

	memset(d, 0, sizeof(*d));
	if (!realpath(mnt, d->mnt)) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", mnt, strerror(-r));
		return r;
	}
	snprintf(path, sizeof(path), "%s/mdstat", d->mnt);
	r = rf_read_text(path, mdstat, MDSTAT_MAX);
	if (r < 0) {
		snprintf(err, errlen, "%s is not a raidfuse mount (no %s: %s)", mnt, path, strerror(-r));
		return -r == ENOENT || -r == ENOTDIR ? -ENOENT : r;
	}
	if (!rf_mount_find(d->mnt, 0, &m))
		d->pid = rf_serve_pid_of(&m);
	r = attr(d, "metadata_version", d->metadata, sizeof(d->metadata), err, errlen);
	r = r ? r : attr(d, "level", v, sizeof(v), err, errlen);
	d->level = !strncmp(v, "raid", 4) ? atoi(v + 4) : -1;
	r = r ? r : attr(d, "layout", v, sizeof(v), err, errlen);
	d->layout = atoi(v);
	r = r ? r : attr(d, "raid_disks", v, sizeof(v), err, errlen);
	d->raid_disks = atoi(v);
	r = r ? r : attr(d, "degraded", v, sizeof(v), err, errlen);
	d->degraded = atoi(v);
	r = r ? r : attr(d, "chunk_size", v, sizeof(v), err, errlen);
	d->chunk_bytes = num(v);
	r = r ? r : attr(d, "array_size", v, sizeof(v), err, errlen);
	d->array_kib = num(v);
	r = r ? r : attr(d, "component_size", v, sizeof(v), err, errlen);
	d->component_kib = num(v);
	r = r ? r : attr(d, "array_state", d->array_state, sizeof(d->array_state), err, errlen);
	r = r ? r : attr(d, "sync_action", d->sync_action, sizeof(d->sync_action), err, errlen);
	r = r ? r : attr(d, "consistency_policy", d->consistency, sizeof(d->consistency), err, errlen);
	r = r ? r : attr(d, "sync_completed", v, sizeof(v), err, errlen);
	d->syncing = sscanf(v, "%llu / %llu", (unsigned long long *)&d->sync_done,
			    (unsigned long long *)&d->sync_total) == 2;
	r = r ? r : attr(d, "uuid", d->uuid, sizeof(d->uuid), err, errlen);
	if (!strcmp(d->uuid, "none"))
		d->uuid[0] = '\0';
	r = r ? r : attr(d, "set_name", d->set_name, sizeof(d->set_name), err, errlen);
	if (!strcmp(d->set_name, "none"))
		d->set_name[0] = '\0';
	r = r ? r : attr(d, "creation_time", v, sizeof(v), err, errlen);
	d->has_ctime = v[0] >= '0' && v[0] <= '9';
	d->ctime = num(v);
	r = r ? r : attr(d, "events", v, sizeof(v), err, errlen);
	d->has_events = v[0] >= '0' && v[0] <= '9';
	d->events = num(v);
	r = r ? r : attr(d, "mismatch_cnt", v, sizeof(v), err, errlen);
	d->has_mismatch = v[0] >= '0' && v[0] <= '9';
	d->mismatch_cnt = num(v);
	if (r)
		return r;
	/* the image: the regular file beside mdstat */
	dir = opendir(d->mnt);
	while (dir && (de = readdir(dir)))
		if (de->d_type == DT_REG && strcmp(de->d_name, "mdstat"))
			snprintf(d->image, sizeof(d->image), "%s", de->d_name);
	if (dir)
		closedir(dir);
	snprintf(path, sizeof(path), "%s/md", d->mnt);
	dir = opendir(path);
	if (!dir) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	while ((de = readdir(dir)) && d->ndevs < RF_MAX_DEVS) {
		struct rf_detail_dev *dv = &d->devs[d->ndevs];

		if (de->d_type != DT_DIR || strncmp(de->d_name, "dev-", 4))
			continue;
		snprintf(dv->name, sizeof(dv->name), "%s", de->d_name + 4);
		r = read_dev(d, dv, mdstat, err, errlen);
		if (r == -ENOENT)
			continue;       /* removed meanwhile */
		if (r) {
			closedir(dir);
			return r;
		}
		d->ndevs++;
	}
	closedir(dir);
	qsort(d->devs, (size_t)d->ndevs, sizeof(d->devs[0]), cmp_dev);
	return 0;
}

int rf_detail_read(const char *mnt, struct rf_detail *d, char *err, size_t errlen)
{
	char *mdstat = malloc(MDSTAT_MAX);
	int r;

	if (!mdstat) {
		snprintf(err, errlen, "%s: %s", mnt, strerror(ENOMEM));
		return -ENOMEM;
	}
	r = detail_read(mnt, d, mdstat, err, errlen);
	free(mdstat);
	return r;
}

bool rf_detail_enough(int level, int layout, int raid_disks, const bool *avail)
{
	int i, n = 0, near, far, copies, first, k, got;

	for (i = 0; i < raid_disks; i++)
		n += avail[i];
	switch (level) {
	case 0:
		return n == raid_disks;
	case 1:
		return n >= 1;
	case 4:
	case 5:
		return n >= raid_disks - 1;
	case 6:
		return n >= raid_disks - 2;
	case 10:
		/* Each run of near x far consecutive slots starting at a
		 * multiple of near holds every copy of some chunks: one of
		 * each run must be there. */
		near = layout & 255;
		far = (layout >> 8) & 255;
		copies = near * far;
		if (copies < 1 || raid_disks < 1)
			return false;
		first = 0;
		do {
			got = 0;
			for (k = 0; k < copies; k++)
				got += avail[(first + k) % raid_disks];
			if (!got)
				return false;
			first = (first + near) % raid_disks;
		} while (first);
		return true;
	}
	return n == raid_disks;
}

bool rf_detail_usable(const struct rf_detail *d)
{
	bool avail[RF_MAX_DEVS] = { false };
	int i;

	if (d->raid_disks < 1 || d->raid_disks > RF_MAX_DEVS || !strcmp(d->array_state, "broken"))
		return false;
	for (i = 0; i < d->ndevs; i++)
		if (d->devs[i].slot >= 0 && d->devs[i].slot < d->raid_disks && d->devs[i].in_sync &&
		    !d->devs[i].faulty)
			avail[d->devs[i].slot] = true;
	return rf_detail_enough(d->level, d->layout, d->raid_disks, avail);
}

int rf_detail_status(const struct rf_detail *d)
{
	if (!rf_detail_usable(d))
		return RF_DETAIL_FAILED;
	return d->degraded ? RF_DETAIL_DEGRADED : RF_DETAIL_OK;
}

/* md's sync action as mdadm words it ("resyncing"), NULL when none runs. */
static const char *action_word(const struct rf_detail *d)
{
	static const char *const words[][2] = {
		{ "resync", "resyncing" }, { "recover", "recovering" }, { "check", "checking" },
		{ "repair", "repairing" }, { "reshape", "reshaping" },
	};
	size_t i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(d->sync_action, words[i][0]))
			return words[i][1];
	return NULL;
}

const char *rf_detail_state(const struct rf_detail *d, char *buf, size_t len)
{
	const char *act = action_word(d);
	bool usable = rf_detail_usable(d);

	snprintf(buf, len, "%s%s%s%s%s", !strcmp(d->array_state, "readonly") ? "clean, readonly" : d->array_state,
		 d->degraded && usable ? ", degraded" : "", usable ? "" : ", FAILED", act && usable ? ", " : "",
		 act && usable ? act : "");
	return buf;
}

const char *rf_detail_state_word(const struct rf_detail *d)
{
	const char *act = action_word(d);

	if (!rf_detail_usable(d))
		return "failed";
	if (act)
		return act;
	if (d->degraded)
		return "degraded";
	return d->array_state;
}

static const char *level_text(int level, char *buf, size_t len)
{
	snprintf(buf, len, "raid%d", level);
	return buf;
}

/* mdadm's " (X.YY MiB X.YY MB)" after a size in KiB, from 5000 KiB on. */
static const char *human_kib(uint64_t kib, char *buf, size_t len)
{
	return rf_human_bytes((unsigned __int128)kib * 1024, buf, len);
}

/* The device's State column, as mdadm words it. */
static const char *dev_state(const struct rf_detail_dev *v, char *buf, size_t len)
{
	if (v->faulty)
		snprintf(buf, len, "faulty");
	else if (v->slot >= 0 && v->in_sync)
		snprintf(buf, len, "active sync%s", v->write_mostly ? " writemostly" : "");
	else if (v->rebuilding)
		snprintf(buf, len, "spare rebuilding");
	else
		snprintf(buf, len, "spare");
	return buf;
}

struct counts {
	int active, working, failed, spare;
};

static struct counts count(const struct rf_detail *d)
{
	struct counts c = { 0 };
	int i;

	for (i = 0; i < d->ndevs; i++) {
		const struct rf_detail_dev *v = &d->devs[i];

		if (v->faulty) {
			c.failed++;
			continue;
		}
		c.working++;
		if (v->slot >= 0 && v->in_sync)
			c.active++;
		else
			c.spare++;
	}
	return c;
}

/* The percentage of the sync action under way, -1 for none. */
static int sync_pct(const struct rf_detail *d)
{
	return d->syncing && d->sync_total ? (int)(d->sync_done * 100 / d->sync_total) : -1;
}

static bool has_chunk(const struct rf_detail *d)
{
	return d->level != 1 && d->chunk_bytes;
}

static bool has_layout(const struct rf_detail *d)
{
	return d->level == 4 || d->level == 5 || d->level == 6 || d->level == 10;
}

void rf_detail_print(FILE *out, const struct rf_detail *d)
{
	struct counts c = count(d);
	char h[64], st[128], lay[64], lv[16];
	time_t t = (time_t)d->ctime;
	char tb[64];
	bool slot_shown[RF_MAX_DEVS] = { false };
	int i, s, pct = sync_pct(d);

	fprintf(out, "%s:\n", d->mnt);
	fprintf(out, "           Version : %s\n", d->metadata);
	if (d->has_ctime && ctime_r(&t, tb))
		fprintf(out, "     Creation Time : %.24s\n", tb);
	fprintf(out, "        Raid Level : %s\n", level_text(d->level, lv, sizeof(lv)));
	fprintf(out, "        Array Size : %llu%s\n", (unsigned long long)d->array_kib,
		human_kib(d->array_kib, h, sizeof(h)));
	if (d->level != 0)
		fprintf(out, "     Used Dev Size : %llu%s\n", (unsigned long long)d->component_kib,
			human_kib(d->component_kib, h, sizeof(h)));
	fprintf(out, "      Raid Devices : %d\n", d->raid_disks);
	fprintf(out, "     Total Devices : %d\n", d->ndevs);
	fprintf(out, "       Persistence : %s\n\n",
		strcmp(d->metadata, "none") ? "Superblock is persistent" : "Superblock is not persistent");
	fprintf(out, "             State : %s\n", rf_detail_state(d, st, sizeof(st)));
	fprintf(out, "    Active Devices : %d\n", c.active);
	fprintf(out, "   Working Devices : %d\n", c.working);
	fprintf(out, "    Failed Devices : %d\n", c.failed);
	fprintf(out, "     Spare Devices : %d\n\n", c.spare);
	if (has_layout(d))
		fprintf(out, "            Layout : %s\n", rf_layout_name(d->level, d->layout, lay, sizeof(lay)));
	if (has_chunk(d))
		fprintf(out, "        Chunk Size : %lluK\n", (unsigned long long)(d->chunk_bytes / 1024));
	if (has_layout(d) || has_chunk(d))
		fprintf(out, "\n");
	fprintf(out, "Consistency Policy : %s\n\n", d->consistency);
	if (pct >= 0) {
		fprintf(out, "    %s Status : %d%% complete\n\n",
			!strcmp(d->sync_action, "recover") ? "Rebuild" : !strcmp(d->sync_action, "resync") ? " Resync" : "  Check",
			pct);
	}
	if (d->set_name[0])
		fprintf(out, "              Name : %s\n", d->set_name);
	if (d->uuid[0])
		fprintf(out, "              UUID : %s\n", d->uuid);
	if (d->has_events)
		fprintf(out, "            Events : %llu\n", (unsigned long long)d->events);
	if (d->set_name[0] || d->uuid[0] || d->has_events)
		fprintf(out, "\n");
	fprintf(out, "    Number   Major   Minor   RaidDevice State\n");
	/* the slots in order (an empty one as md's "removed"), then the rest */
	for (s = 0; s < d->raid_disks && s < RF_MAX_DEVS; s++) {
		bool any = false;

		for (i = 0; i < d->ndevs; i++) {
			const struct rf_detail_dev *v = &d->devs[i];

			if (v->slot != s || v->faulty)
				continue;
			fprintf(out, "   %5d   %5u   %5u    %5d      %-16s %s\n", v->number, v->major, v->minor, s,
				dev_state(v, st, sizeof(st)), v->path);
			slot_shown[i] = any = true;
		}
		if (!any)
			fprintf(out, "       -       0       0    %5d      removed\n", s);
	}
	for (i = 0; i < d->ndevs; i++) {
		const struct rf_detail_dev *v = &d->devs[i];

		if (slot_shown[i])
			continue;
		fprintf(out, "   %5d   %5u   %5u        -      %-16s %s\n", v->number, v->major, v->minor,
			dev_state(v, st, sizeof(st)), v->path);
	}
}

int rf_detail_print_json(FILE *out, const struct rf_detail *d)
{
	struct counts c = count(d);
	struct rf_json j;
	char st[128], lay[64], lv[16];
	int i, pct = sync_pct(d);

	rf_json_init(&j, out);
	rf_json_obj(&j);
	rf_json_kstr(&j, "mountpoint", d->mnt);
	rf_json_kstr(&j, "image", d->image[0] ? d->image : NULL);
	rf_json_key(&j, "pid");
	if (d->pid)
		rf_json_int(&j, d->pid);
	else
		rf_json_null(&j);
	rf_json_kstr(&j, "version", d->metadata);
	rf_json_key(&j, "creation_time");
	if (d->has_ctime)
		rf_json_uint(&j, d->ctime);
	else
		rf_json_null(&j);
	rf_json_kstr(&j, "raid_level", level_text(d->level, lv, sizeof(lv)));
	rf_json_kuint(&j, "array_size", d->array_kib);
	rf_json_key(&j, "used_dev_size");
	if (d->level != 0)
		rf_json_uint(&j, d->component_kib);
	else
		rf_json_null(&j);
	rf_json_kint(&j, "raid_devices", d->raid_disks);
	rf_json_kint(&j, "total_devices", d->ndevs);
	rf_json_kbool(&j, "persistent", strcmp(d->metadata, "none") != 0);
	rf_json_kstr(&j, "state", rf_detail_state(d, st, sizeof(st)));
	rf_json_kstr(&j, "state_word", rf_detail_state_word(d));
	rf_json_kint(&j, "status", rf_detail_status(d));
	rf_json_kint(&j, "active_devices", c.active);
	rf_json_kint(&j, "working_devices", c.working);
	rf_json_kint(&j, "failed_devices", c.failed);
	rf_json_kint(&j, "spare_devices", c.spare);
	rf_json_kstr(&j, "layout", has_layout(d) ? rf_layout_name(d->level, d->layout, lay, sizeof(lay)) : NULL);
	rf_json_key(&j, "chunk_size");
	if (has_chunk(d))
		rf_json_uint(&j, d->chunk_bytes);
	else
		rf_json_null(&j);
	rf_json_kstr(&j, "consistency_policy", d->consistency);
	rf_json_kstr(&j, "sync_action", d->sync_action[0] ? d->sync_action : NULL);
	rf_json_key(&j, "sync_percent");
	if (pct >= 0)
		rf_json_int(&j, pct);
	else
		rf_json_null(&j);
	rf_json_kstr(&j, "name", d->set_name[0] ? d->set_name : NULL);
	rf_json_kstr(&j, "uuid", d->uuid[0] ? d->uuid : NULL);
	rf_json_key(&j, "events");
	if (d->has_events)
		rf_json_uint(&j, d->events);
	else
		rf_json_null(&j);
	rf_json_key(&j, "devices");
	rf_json_arr(&j);
	for (i = 0; i < d->ndevs; i++) {
		const struct rf_detail_dev *v = &d->devs[i];

		rf_json_obj(&j);
		rf_json_key(&j, "number");
		if (v->number >= 0)
			rf_json_int(&j, v->number);
		else
			rf_json_null(&j);
		rf_json_kuint(&j, "major", v->major);
		rf_json_kuint(&j, "minor", v->minor);
		rf_json_key(&j, "raid_device");
		if (v->slot >= 0 && !v->faulty)
			rf_json_int(&j, v->slot);
		else
			rf_json_null(&j);
		rf_json_kstr(&j, "state", dev_state(v, st, sizeof(st)));
		rf_json_kstr(&j, "name", v->name);
		rf_json_kstr(&j, "path", v->path);
		rf_json_obj_end(&j);
	}
	rf_json_arr_end(&j);
	rf_json_obj_end(&j);
	return rf_json_end(&j);
}

void rf_detail_array_line(FILE *out, const char *metadata, const char *uuid, const char *set_name,
			  const char *name)
{
	const char *colon = strrchr(set_name, ':'), *dev;

	if (!uuid[0] || !strcmp(metadata, "none"))
		return;
	dev = set_name[0] ? colon ? colon + 1 : set_name : name;
	fprintf(out, "ARRAY /dev/md/%s metadata=%s UUID=%s", dev, metadata, uuid);
	if (set_name[0])
		fprintf(out, " name=%s", set_name);
	fprintf(out, "\n");
}
