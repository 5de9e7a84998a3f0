/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cmd_grow.c - `raidfuse grow`: mdadm --grow's words over a mount's md
 * files.
 *
 * Each --add FILE goes to md/new_dev (a spare), --backup-file FILE to
 * md/backup_file (mdadm's, for a reshape with no room before the data;
 * made absolute, and created now), then --raid-devices N to
 * md/raid_disks, --level to md/level, --layout to md/layout or --chunk to
 * md/chunk_size; --size and --array-size to md/component_size and
 * md/array_size, the smaller image first.  Each write is `raidfuse ctl
 * MOUNTPOINT ATTR VALUE` (rf_cmd_ctl()).  --wait follows the reshape
 * until md/reshape_position says none, then the rebuild or resync after.
 *
 * What it does NOT do: reshape anything, or check what md would refuse:
 * the daemon does both (services/reshape.c), and says why in its log.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raidfuse/progress.h"
#include "raidfuse/util.h"

#include "front/cli.h"

/* grow --size S and/or --array-size A: md/component_size and
 * md/array_size.  With both, the smaller image comes first: array_size
 * before a component size that shrinks the array (md refuses a component
 * size under a set array_size), after one that grows it. */
static int grow_size(const char *mnt, const char *size_kib, const char *array_kib)
{
	const char *steps[2][2];
	char cur[64];
	int i, k = 0, rc;

	if (array_kib && size_kib && strcmp(array_kib, "default") &&
	    rf_cli_read_attr(mnt, "array_size", cur, sizeof(cur), true) >= 0 &&
	    strtoull(array_kib, NULL, 10) < strtoull(cur, NULL, 10)) {
		steps[k][0] = "array_size";
		steps[k++][1] = array_kib;
		array_kib = NULL;
	}
	if (size_kib) {
		steps[k][0] = "component_size";
		steps[k++][1] = size_kib;
	}
	if (array_kib) {
		steps[k][0] = "array_size";
		steps[k++][1] = array_kib;
	}
	for (i = 0; i < k; i++) {
		char *av[] = { "ctl", (char *)mnt, (char *)steps[i][0], (char *)steps[i][1], NULL };

		optind = 0;
		rc = rf_cmd_ctl(4, av);
		if (rc) {
			fprintf(stderr, "raidfuse: grow: the daemon's log says why\n");
			return rc;
		}
	}
	if (rf_cli_read_attr(mnt, "component_size", cur, sizeof(cur), true) >= 0)
		printf("component_size: %s", cur);
	if (rf_cli_read_attr(mnt, "array_size", cur, sizeof(cur), true) >= 0)
		printf("array_size: %s", cur);
	return 0;
}

/* grow: each of adds[0..n) to md/new_dev (a spare). */
static int grow_add(const char *mnt, const char *const *adds, int n)
{
	int i, rc;

	for (i = 0; i < n; i++) {
		char *av[] = { "ctl", (char *)mnt, "add", (char *)adds[i], NULL };

		optind = 0;
		rc = rf_cmd_ctl(4, av);
		if (rc)
			return rc;
	}
	return 0;
}

/* grow: val to md/attr. */
static int grow_set(const char *mnt, const char *attr, const char *val)
{
	char *av[] = { "ctl", (char *)mnt, (char *)attr, (char *)val, NULL };
	int rc;

	optind = 0;
	rc = rf_cmd_ctl(4, av);
	if (rc)
		fprintf(stderr, "raidfuse: grow: the daemon's log says why\n");
	return rc;
}

/* What `grow` was asked. */
struct grow_opts {
	const char *mnt, *adds[RF_MAX_MEMBERS];
	int nadd, n, level;
	const char *layout, *size_kib, *array_kib;
	uint64_t chunk;
	bool wait;
	char sizebuf[32], arraybuf[32];
	const char *backup_arg;         /* --backup-file as given */
	char backup[PATH_MAX];          /* --backup-file, absolute; "" none */
};

/* The options into o; -1 when they parsed, else the exit status. */
static int grow_parse(int argc, char **argv, struct grow_opts *o)
{
	static const struct option lo[] = {
		{ "raid-devices", required_argument, NULL, 'n' },
		{ "level", required_argument, NULL, 'l' },
		{ "layout", required_argument, NULL, 'p' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "add", required_argument, NULL, 'a' },
		{ "size", required_argument, NULL, 'z' },
		{ "array-size", required_argument, NULL, 'Z' },
		{ "wait", no_argument, NULL, 'W' },
		{ "backup-file", required_argument, NULL, 'B' },
		OPT_HELP,
		OPT_END
	};
	int ch, rc = -1;

	while ((ch = rf_cli_opt_next(argc, argv, "-:n:l:p:c:a:z:Z:WB:h", lo, &rc)) != -1) {
		if (ch == 'z' || ch == 'Z') {
			/* mdadm's --size and --array-size: KiB unless a suffix
			 * says; "max" (md/array_size's "default"). */
			uint64_t v;
			const char **to = ch == 'z' ? &o->size_kib : &o->array_kib;

			if (!strcmp(optarg, "max")) {
				*to = ch == 'z' ? "max" : "default";
				continue;
			}
			if (rf_parse_size(optarg, 1024, &v) || v < 1024 || v % 1024)
				return rf_cli_usage_error("grow: --%s wants a size (KiB unless suffixed, whole KiB) or max, got "
							  "'%s'", ch == 'z' ? "size" : "array-size", optarg);
			snprintf(ch == 'z' ? o->sizebuf : o->arraybuf, sizeof(o->sizebuf), "%" PRIu64, v / 1024);
			*to = ch == 'z' ? o->sizebuf : o->arraybuf;
		} else if (ch == 'p') {
			o->layout = optarg;
		} else if (ch == 'c') {
			/* mdadm's --chunk: KiB unless a suffix says */
			if (rf_parse_size(optarg, 1024, &o->chunk) || o->chunk < 4096 || (o->chunk & (o->chunk - 1)))
				return rf_cli_usage_error("grow: --chunk wants a power of two of 4K or more, got '%s'",
							  optarg);
		} else if (ch == 'l') {
			const char *v = strncmp(optarg, "raid", 4) ? optarg : optarg + 4;
			char *end;
			long l = strtol(v, &end, 10);

			if (*end || end == v || l < 0 || l > 10)
				return rf_cli_usage_error("grow: --level wants a raid level (6, raid6), got '%s'", optarg);
			o->level = (int)l;
		} else if (ch == 'n') {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (*end || v < 1 || v > RF_MAX_MEMBERS)
				return rf_cli_usage_error("grow: --raid-devices wants 1..%d, got '%s'", RF_MAX_MEMBERS,
							  optarg);
			o->n = (int)v;
		} else if (ch == 'a') {
			if (o->nadd >= RF_MAX_MEMBERS)
				return rf_cli_usage_error("grow: more than %d --add", RF_MAX_MEMBERS);
			o->adds[o->nadd++] = optarg;
		} else if (ch == 'W') {
			o->wait = true;
		} else if (ch == 'B') {
			o->backup_arg = optarg;
		} else if (ch == 1) {
			if (o->mnt)
				return rf_cli_usage_error("grow: expected one MOUNTPOINT, got also '%s'", optarg);
			o->mnt = optarg;
		}
	}
	if (rc >= 0)
		return rc;
	if (!o->mnt)
		return rf_cli_usage_error("grow: expected MOUNTPOINT");
	return -1;
}

/* A level change: the array's level and member count now (*cur_level,
 * *cur_n) and whether --raid-devices goes with it as mdadm takes it; -1
 * when it does, else the exit status. */
static int grow_level(const struct grow_opts *o, int *cur_level, int *cur_n)
{
	char cur[32], nbuf[64];

	if (rf_cli_read_attr(o->mnt, "level", cur, sizeof(cur), true) < 0 ||
	    rf_cli_read_attr(o->mnt, "raid_disks", nbuf, sizeof(nbuf), true) < 0)
		return 1;
	*cur_level = atoi(strncmp(cur, "raid", 4) ? cur : cur + 4);
	*cur_n = atoi(nbuf);
	/* mdadm --grow --level: raid6 takes one member more (md/level
	 * adds it); a raid1 of two becomes a raid5 of two, grown after
	 * to --raid-devices; a raid0 becomes a raid4/5 of one member
	 * more, that slot empty until a spare (--add, after the
	 * change: a raid0 takes none) is rebuilt into it; the other
	 * changes keep the count or drop P's or Q's member. */
	if (o->level == 6 && o->n && o->n != *cur_n + 1)
		return rf_cli_usage_error("grow: --level 6 with --raid-devices %d: the change takes one member "
					  "more", o->n);
	if (*cur_level == 0 && o->n && o->n != *cur_n + 1)
		return rf_cli_usage_error("grow: raid0 to raid%d with --raid-devices %d: the change takes one "
					  "member more (%d)", o->level, o->n, *cur_n + 1);
	if (o->n && o->level != 6 && *cur_level != 0 && !(*cur_level == 1 && o->level == 5))
		return rf_cli_usage_error("grow: --level %d goes without --raid-devices", o->level);
	return -1;
}

/* The control files written in mdadm's order: spares added (a raid0's
 * after its level changed), then the change. */
static int grow_apply(const struct grow_opts *o, int cur_level, int cur_n)
{
	char nbuf[64];
	int rc;

	if (cur_level != 0) {
		rc = grow_add(o->mnt, o->adds, o->nadd);
		if (rc)
			return rc;
	}
	if (o->backup[0]) {
		rc = grow_set(o->mnt, "backup_file", o->backup);
		if (rc)
			return rc;
	}
	if (o->layout) {
		rc = grow_set(o->mnt, "layout", o->layout);
	} else if (o->chunk) {
		snprintf(nbuf, sizeof(nbuf), "%" PRIu64, o->chunk);
		rc = grow_set(o->mnt, "chunk_size", nbuf);
	} else if (o->level >= 0) {
		snprintf(nbuf, sizeof(nbuf), "raid%d", o->level);
		rc = grow_set(o->mnt, "level", nbuf);
		if (!rc && cur_level == 0)
			rc = grow_add(o->mnt, o->adds, o->nadd);
		if (!rc && cur_level == 1 && o->n && o->n != cur_n) {
			snprintf(nbuf, sizeof(nbuf), "%d", o->n);
			rc = grow_set(o->mnt, "raid_disks", nbuf);
		}
	} else {
		snprintf(nbuf, sizeof(nbuf), "%d", o->n);
		rc = grow_set(o->mnt, "raid_disks", nbuf);
	}
	return rc;
}

/* --wait: the reshape's progress to its end, then the rebuild or resync
 * after it; prints the array size. */
static int grow_wait(const struct grow_opts *o, int cur_level)
{
	char pos[64], size[64];
	unsigned long long comp;
	struct rf_progress p;

	/* The walk ends at the new geometry's size: a grow's component_size
	 * KiB on each of N members, less the parity ones; the others' the
	 * array as it is. */
	if ((o->level >= 0 && !(cur_level == 1 && o->n)) || o->layout || o->chunk) {
		if (rf_cli_read_attr(o->mnt, "array_size", size, sizeof(size), true) < 0)
			return 1;
		comp = strtoull(size, NULL, 10) * 1024;
	} else {
		if (rf_cli_read_attr(o->mnt, "component_size", size, sizeof(size), true) < 0 ||
		    rf_cli_read_attr(o->mnt, "level", pos, sizeof(pos), true) < 0)
			return 1;
		comp = strtoull(size, NULL, 10) * 1024 *
		       (unsigned long long)(o->n - (!strncmp(pos, "raid6", 5) ? 2 : 1));
	}
	rf_progress_start(&p, stderr, "reshape", 0);
	for (;;) {
		unsigned long long done;

		if (rf_cli_read_attr(o->mnt, "reshape_position", pos, sizeof(pos), true) < 0)
			return 1;
		if (!strncmp(pos, "none", 4))
			break;
		if (sscanf(pos, "%llu", &done) == 1 && comp)
			rf_progress_update(&p, done * 512, comp);
		rf_cli_sleep_secs(0.2);
	}
	if (p.total)
		p.done = p.total;
	rf_progress_end(&p, "done");
	/* mdadm --wait: and the rebuild or resync after it (a raid0 made a
	 * raid4/5 rebuilds P onto its spare). */
	while (rf_cli_sync_running(o->mnt))
		rf_cli_sleep_secs(0.2);
	if (rf_cli_read_attr(o->mnt, "array_size", size, sizeof(size), true) < 0)
		return 1;
	printf("array_size: %s", size);
	return 0;
}

int rf_cmd_grow(int argc, char **argv)
{
	struct grow_opts o = { .level = -1 };
	int rc = grow_parse(argc, argv, &o), cur_level = -1, cur_n = 0;

	if (rc >= 0)
		return rc;
	if (o.size_kib || o.array_kib) {
		/* mdadm: "cannot change component size at the same time as
		 * other changes"; --array-size goes first when both are given
		 * and the array shrinks, last when it grows. */
		if (o.n || o.level >= 0 || o.layout || o.chunk || o.nadd || o.wait)
			return rf_cli_usage_error("grow: --size and --array-size go without other changes");
		return grow_size(o.mnt, o.size_kib, o.array_kib);
	}
	if ((o.n > 0) + (o.level >= 0) + !!o.layout + !!o.chunk == 0)
		return rf_cli_usage_error("grow: --raid-devices, --level, --layout, --chunk, --size or --array-size is "
					  "needed (what to change)");
	if (o.backup_arg && (o.level >= 0 || (!o.n && !o.layout && !o.chunk)))
		return rf_cli_usage_error("grow: --backup-file goes with --raid-devices, --layout or --chunk (a "
					  "reshape with no room before the data)");
	if ((o.layout || o.chunk) && (o.n || o.level >= 0 || (o.layout && o.chunk)))
		return rf_cli_usage_error("grow: --layout and --chunk go alone, one change at a time");
	if (o.level >= 0) {
		rc = grow_level(&o, &cur_level, &cur_n);
		if (rc >= 0)
			return rc;
	}
	if (o.backup_arg && rf_cli_backup_file("grow", o.backup_arg, o.backup, sizeof(o.backup)))
		return 1;
	rc = grow_apply(&o, cur_level, cur_n);
	if (rc || !o.wait)
		return rc;
	return grow_wait(&o, cur_level);
}
