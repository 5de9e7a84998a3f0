/* SPDX-License-Identifier: GPL-2.0-or-later */
/* main.c - the raidfuse command line.
 *
 *   raidfuse create CONFIG [-f] [--assume-clean] [-b internal|none] [--bitmap-chunk SIZE]
 *   raidfuse mount [--ro | --overlay DIR] CONFIG MOUNTPOINT [-f] [-d] [-v] [-o OPTS] [--freeze] [--force]
 *   raidfuse CONFIG MOUNTPOINT -o OPTS   (mount.fuse3's form of mount: fstab.h)
 *   raidfuse assemble [--ro | --overlay DIR] [--name FILE] [-f] [-d] [-v] [-o OPTS] [--freeze]
 *                     [--force]   (create, mount, assemble: [--allow-unsafe-dirs])
 *                     MOUNTPOINT MEMBER...   (mount, assemble: [--log FILE|stderr|syslog|journal])
 *   raidfuse stop [--timeout SECONDS] MOUNTPOINT
 *   raidfuse examine [--json] [-X] MEMBER...
 *   raidfuse examine-bitmap [--json] MEMBER...
 *   raidfuse detect [--level L] [--members N] [--max-offset SIZE] [--json] [--write-config FILE]
 *                   MEMBER... [missing]
 *   raidfuse status [--json] [--watch [SECONDS]] MOUNTPOINT
 *   raidfuse ctl [--json] MOUNTPOINT ATTR [VALUE]
 *   raidfuse ctl MOUNTPOINT add FILE | fail NAME|PATH | remove NAME | re-add NAME
 *   raidfuse ctl MOUNTPOINT replace NAME|PATH
 *   raidfuse ctl [--wait] [--json] MOUNTPOINT check | repair
 *   raidfuse monitor [--scan | MOUNTPOINT...] [--program PROG] [--mail ADDR] [--syslog]
 *                    [--oneshot] [--test] [--delay N] [--increment N] [--daemonise]
 *                    [--pid-file FILE] [--program-timeout N]
 *   raidfuse help [COMMAND] | --help | --version
 *
 * Every command parses its options with getopt_long, long and short forms,
 * before, between or after the positional arguments (the option string
 * starts with '-', so positionals come back in order whatever
 * POSIXLY_CORRECT says; "--" ends the options).  A usage error names the
 * option or argument in one line, prints the command's usage and exits 2;
 * COMMAND --help prints the command's help and exits 0.  Exit status: 0
 * done, 1 failed (the message says what and where), 2 usage error.
 *
 * create makes the member files the config names (member_size bytes of
 * zeros: an array of zeros has zero parity, so it starts in sync) and
 * writes md 1.2 superblocks on them (unless metadata = "none"): without
 * --assume-clean they record that a resync is due, as mdadm --create's do.
 * It checks the whole config and every member, and works out every
 * superblock, before it creates, truncates or writes anything, and leaves
 * existing non-empty members alone unless --force.  --bitmap=internal (or
 * array.bitmap = "internal") adds md's internal write-intent bitmap beside
 * each superblock, as mdadm --create --bitmap=internal does.
 *
 * mount serves the array a config describes, after checking it against the
 * members' superblocks, if they have any; assemble serves the array the
 * members' superblocks describe, no config needed.  Both start the resync
 * the superblocks say is due (not cleanly shut down, or created without
 * --assume-clean) once the array serves, as md does, unless --freeze.
 *
 * status and ctl only read and write the control files under a mount
 * (MOUNTPOINT/mdstat, MOUNTPOINT/md/ATTR): whatever the daemon serves there
 * is what they show, and what it refuses they report.  Their --json prints
 * the same files as typed JSON (json_ctl_typed(), raidfuse(8) JSON
 * OUTPUT): md's attribute names as keys, numbers as numbers, md's "none"
 * as null, pairs as objects, other words as md's text.  list and status
 * --detail read the same files (detail.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/array.h"
#include "raidfuse/assemble.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/config.h"
#include "raidfuse/create.h"
#include "raidfuse/ctl.h"
#include "raidfuse/daemon.h"
#include "raidfuse/detail.h"
#include "raidfuse/detect.h"
#include "raidfuse/devopen.h"
#include "raidfuse/fstab.h"
#include "raidfuse/fuse.h"
#include "raidfuse/holder.h"
#include "raidfuse/json.h"
#include "raidfuse/log.h"
#include "raidfuse/memberid.h"
#include "raidfuse/monitor.h"
#include "raidfuse/nbd.h"
#include "raidfuse/progress.h"
#include "raidfuse/stack.h"
#include "raidfuse/super.h"
#include "raidfuse/util.h"

#define EXIT_USAGE 2

static const char exit_text[] =
	"Exit status: 0 done, 1 failed (the message says what and where), 2 usage error.\n";

/* Each command: its synopsis (one or more lines, for the usage) and its
 * help (what it does, its options). */
struct cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis;
	const char *help;
	const char *summary;            /* one line in raidfuse --help */
};

static const struct cmd cmds[];
static const struct cmd *cur_cmd;       /* the command running: its usage goes with errors */

static void print_synopsis(FILE *out, const struct cmd *c, bool *first)
{
	const char *s = c->synopsis, *nl;

	while (*s) {
		nl = strchrnul(s, '\n');
		fprintf(out, "%s%.*s\n", *first ? "usage: " : "       ", (int)(nl - s), s);
		*first = false;
		s = *nl ? nl + 1 : nl;
	}
}

static void print_usage(FILE *out, const struct cmd *c);

static void print_help(FILE *out, const struct cmd *c)
{
	bool first = true;

	print_synopsis(out, c, &first);
	fprintf(out, "\n%s\n%s", c->help, exit_text);
}

/* A usage error: one line naming what is wrong, then the usage of the
 * command running (all of it when none is).  Returns EXIT_USAGE. */
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "raidfuse: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	print_usage(stderr, cur_cmd);
	return EXIT_USAGE;
}

/* Every command's getopt_long has these; the read commands --json. */
#define OPT_HELP { "help", no_argument, NULL, 'h' }
#define OPT_END { NULL, 0, NULL, 0 }
#define OPT_JSON { "json", no_argument, NULL, 'J' }

/* The long name of the option whose val is v, for messages. */
static const char *long_name(const struct option *lo, int v)
{
	for (; lo->name; lo++)
		if (lo->val == v)
			return lo->name;
	return NULL;
}

/* The next option of argv (argv[0] the command), as getopt_long returns
 * it: 1 for a positional argument (in optarg; those after "--" too), -1
 * at the end.  shortopts must start with "-:".  -h/--help prints the
 * command's help, a mistake the error and the usage; both end the loop
 * (-1) with *rc set to the exit status (0 or EXIT_USAGE), which is
 * otherwise left alone.  One command runs per process: once getopt_long
 * has ended, the rest of argv are positionals. */
static int opt_next(int argc, char **argv, const char *shortopts, const struct option *lo, int *rc)
{
	static bool ended;
	const char *cmd = cur_cmd ? cur_cmd->name : "raidfuse";
	const char *name;
	int ch;

	if (ended) {
		if (optind >= argc)
			return -1;
		optarg = argv[optind++];
		return 1;
	}
	opterr = 0;
	ch = getopt_long(argc, argv, shortopts, lo, NULL);
	if (ch == -1 && optind < argc) {
		ended = true;
		optarg = argv[optind++];
		return 1;
	}
	if (ch == 'h') {
		print_help(stdout, cur_cmd);
		*rc = 0;
		return -1;
	}
	if (ch == ':') {
		/* the option was the last argument: argv[optind - 1] */
		name = argv[optind - 1];
		if (!strncmp(name, "--", 2))
			*rc = usage_error("%s: option '%s' needs a value", cmd, name);
		else
			*rc = usage_error("%s: option '-%c' needs a value", cmd, optopt);
		return -1;
	}
	if (ch == '?') {
		/* A known val means the long form was given a value it does
		 * not take (--force=1); glibc leaves optopt 0 for an unknown
		 * or ambiguous long option, which optind has passed. */
		name = optopt ? long_name(lo, optopt) : NULL;
		if (name)
			*rc = usage_error("%s: option '--%s' takes no value", cmd, name);
		else if (optopt)
			*rc = usage_error("%s: unknown option '-%c'", cmd, optopt);
		else
			*rc = usage_error("%s: unknown option '%s'", cmd, argv[optind - 1]);
		return -1;
	}
	return ch;
}

/* ---------------------------------------------------------------- create */

static int load(const char *path, struct rf_config *cfg)
{
	char err[1024];
	int ret = rf_config_load(path, cfg, err, sizeof(err));

	if (ret)
		fprintf(stderr, "raidfuse: %s\n", err);
	return ret;
}

/* create's options into the variables of cmd_create.  Returns -1 to go
 * on, else the exit status (0 after --help, EXIT_USAGE). */
static int create_options(int argc, char **argv, bool *force, bool *clean, const char **path,
			  const char **bitmap, const char **bitmap_chunk)
{
	enum { O_ASSUME_CLEAN = 256, O_BITMAP_CHUNK, O_UNSAFE_DIRS };
	static const struct option lo[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "assume-clean", no_argument, NULL, O_ASSUME_CLEAN },
		{ "allow-unsafe-dirs", no_argument, NULL, O_UNSAFE_DIRS },
		{ "bitmap", required_argument, NULL, 'b' },
		{ "bitmap-chunk", required_argument, NULL, O_BITMAP_CHUNK },
		OPT_HELP,
		OPT_END
	};
	int ch, rc = -1;

	while ((ch = opt_next(argc, argv, "-:fb:h", lo, &rc)) != -1) {
		switch (ch) {
		case 'f':
			*force = true;
			break;
		case O_ASSUME_CLEAN:
			*clean = true;
			break;
		case O_UNSAFE_DIRS:
			rf_dev_allow_unsafe_dirs(true);
			break;
		case 'b':
			*bitmap = optarg;
			break;
		case O_BITMAP_CHUNK:
			*bitmap_chunk = optarg;
			break;
		case 1:
			if (*path)
				return usage_error("create: expected one CONFIG, got also '%s'", optarg);
			*path = optarg;
			break;
		}
	}
	return rc;
}

static int cmd_create(int argc, char **argv)
{
	struct rf_create_opts o = { .bitmap = -1 };
	const char *path = NULL, *bitmap = NULL, *bitmap_chunk = NULL;
	struct rf_config cfg;
	char err[1024];
	int ret;

	ret = create_options(argc, argv, &o.force, &o.assume_clean, &path, &bitmap, &bitmap_chunk);
	if (ret >= 0)
		return ret;
	if (!path)
		return usage_error("create: expected CONFIG");
	if (bitmap && strcmp(bitmap, "internal") && strcmp(bitmap, "none"))
		return usage_error("create: --bitmap takes internal or none, not '%s'", bitmap);
	if (bitmap)
		o.bitmap = !strcmp(bitmap, "internal");
	if (bitmap_chunk && (rf_parse_size(bitmap_chunk, 1024, &o.bitmap_chunk) ||
			     o.bitmap_chunk < 4096 || (o.bitmap_chunk & (o.bitmap_chunk - 1))))
		return usage_error("create: --bitmap-chunk takes a power of two of at least 4K, not '%s'",
				   bitmap_chunk);
	if (rf_config_load(path, &cfg, err, sizeof(err))) {
		fprintf(stderr, "raidfuse: %s\n", err);
		return 1;
	}
	ret = rf_create(path, &cfg, &o);
	rf_config_free(&cfg);
	return ret;
}

/* ---------------------------------------------------------------- examine */

/* The size of the member's bitmap, which mdadm --examine counts in the
 * unused space; a bitmap that cannot be read is left for assembly to
 * report. */
static void examine_bitmap_size(const struct rf_sb_io *io, const char *path, struct rf_sb *sb)
{
	struct rf_bitmap_sb bsb;
	uint8_t *bits;
	char err[512];

	if (!sb->bitmap || rf_bitmap_read(io, path, sb, &bsb, &bits, err, sizeof(err)))
		return;
	sb->bitmap_sectors = rf_bitmap_disk_sectors(bsb.sync_size, bsb.chunk_bytes);
	free(bits);
}

/* examine -X: the member's internal bitmap as mdadm --examine-bitmap
 * prints it; 0, or 1 (the message names the member). */
static int examine_bitmap(const struct rf_sb_io *io, const char *path, const struct rf_sb *sb, bool json)
{
	struct rf_bitmap_sb bsb;
	uint8_t *bits = NULL;
	uint64_t nbits;
	char err[512] = "";
	int r;

	if (!sb->bitmap) {
		fprintf(stderr, "raidfuse: %s: the superblock records no internal bitmap\n", path);
		return 1;
	}
	r = rf_bitmap_read(io, path, sb, &bsb, &bits, err, sizeof(err));
	if (r) {
		fprintf(stderr, "raidfuse: %s\n", r == -ENOENT || !err[0] ? strerror(-r) : err);
		return 1;
	}
	nbits = rf_bitmap_bits(bsb.sync_size, bsb.chunk_bytes);
	if (json)
		r = rf_bitmap_examine_json(stdout, path, sb, &bsb, nbits,
					   rf_bitmap_count_dirty(bits + RF_BITMAP_SB_BYTES, nbits));
	else
		rf_bitmap_examine(stdout, path, sb, &bsb, nbits, rf_bitmap_count_dirty(bits + RF_BITMAP_SB_BYTES, nbits));
	free(bits);
	if (r)
		fprintf(stderr, "raidfuse: %s: writing JSON: %s\n", path, strerror(EIO));
	return r ? 1 : 0;
}

/* A member to examine, read-only: a file or block device (*fd), or an NBD
 * export (*nbd), and the superblock code's view of it.  0, or -errno with
 * a message naming path. */
static int examine_open(const char *path, int *fd, struct rf_nbd **nbd, struct rf_sb_io *io, char *err,
			size_t errlen)
{
	int r;

	if (rf_nbd_is_uri(path)) {
		r = rf_nbd_open(path, true, RF_NBD_TIMEOUT_MS_DEFAULT, nbd, err, errlen);
		if (!r)
			rf_nbd_sb_io(*nbd, io);
		return r;
	}
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	r = rf_examine_refuse(*fd, path, err, errlen);
	if (!r) {
		r = rf_sb_io_fd(io, *fd);
		if (r)
			snprintf(err, errlen, "%s: %s", path, strerror(-r));
	}
	if (r) {
		close(*fd);
		*fd = -1;
	}
	return r;
}

/* An array examine --scan has printed. */
struct scan_seen {
	uint8_t uuid[16];
};

/* examine --scan: one mdadm.conf ARRAY line per array among the members
 * (the first member of each names it), as mdadm --examine --scan. */
static void scan_member(const struct rf_sb *sb, struct scan_seen *seen, int *nseen)
{
	char uuid[40], name[16];
	int i;

	for (i = 0; i < *nseen; i++)
		if (!memcmp(seen[i].uuid, sb->uuid, 16))
			return;
	memcpy(seen[(*nseen)++].uuid, sb->uuid, 16);
	rf_sb_uuid_str(sb, uuid);
	/* 0.90 has no name: the array is known by its uuid's first word */
	snprintf(name, sizeof(name), "%.8s", uuid);
	rf_detail_array_line(stdout, rf_sb_kind_name(sb->kind), uuid, sb->name, name);
}

/* examine [--json] [-X] MEMBER...: each member's superblock as mdadm
 * --examine prints it (-X: its bitmap, as mdadm --examine-bitmap), or one
 * JSON object per member (a line each); exit 1 if any member has none or
 * a damaged one (the rest still print). */
static int examine_cmd(int argc, char **argv, bool bitmap)
{
	static const struct option lo[] = {
		OPT_JSON,
		{ "examine-bitmap", no_argument, NULL, 'X' },
		{ "scan", no_argument, NULL, 's' },
		OPT_HELP,
		OPT_END
	};
	const char **members;
	struct rf_sb *sb;
	struct scan_seen *seen = NULL;
	char err[1024];
	int i, n = 0, nseen = 0, ret = 0, ch, rc = -1;
	bool json = false, scan = false;

	members = calloc((size_t)argc, sizeof(*members));
	if (!members)
		return 1;
	while ((ch = opt_next(argc, argv, "-:JXsh", lo, &rc)) != -1) {
		if (ch == 'J')
			json = true;
		else if (ch == 'X')
			bitmap = true;
		else if (ch == 's')
			scan = true;
		else if (ch == 1)
			members[n++] = optarg;
	}
	if (rc < 0 && !n)
		rc = usage_error("examine: expected MEMBER...");
	if (rc < 0 && scan && (bitmap || json))
		rc = usage_error("examine: --scan goes without --json and -X");
	if (rc < 0 && scan && !(seen = calloc((size_t)n, sizeof(*seen))))
		rc = 1;
	sb = rc < 0 ? malloc(sizeof(*sb)) : NULL;
	if (!sb) {
		free(members);
		return rc < 0 ? 1 : rc;
	}
	for (i = 0; i < n; i++) {
		struct rf_nbd *nbd = NULL;
		struct rf_sb_io io;
		int fd = -1;

		if (examine_open(members[i], &fd, &nbd, &io, err, sizeof(err))) {
			fprintf(stderr, "raidfuse: %s\n", err);
			ret = 1;
			continue;
		}
		if (rf_sb_read_io(&io, members[i], sb, err, sizeof(err))) {
			fprintf(stderr, "raidfuse: %s\n", err);
			ret = 1;
		} else if (bitmap) {
			ret |= examine_bitmap(&io, members[i], sb, json);
		} else if (scan) {
			scan_member(sb, seen, &nseen);
		} else {
			examine_bitmap_size(&io, members[i], sb);
			if (!json)
				rf_sb_examine(stdout, members[i], sb);
			else if (rf_sb_examine_json(stdout, members[i], sb)) {
				fprintf(stderr, "raidfuse: %s: writing JSON: %s\n", members[i], strerror(EIO));
				ret = 1;
			}
		}
		if (fd >= 0)
			close(fd);
		rf_nbd_close(nbd);
	}
	free(seen);
	free(sb);
	free(members);
	return ret;
}

static int cmd_examine(int argc, char **argv)
{
	return examine_cmd(argc, argv, false);
}

static int cmd_examine_bitmap(int argc, char **argv)
{
	return examine_cmd(argc, argv, true);
}

/* ---------------------------------------------------------------- mount, assemble */

/* Options both mount and assemble take: -f -d -v -o OPTS --freeze. */
enum { O_FREEZE = 300, O_RO, O_OVERLAY, O_NAME, O_FORCE, O_ALLOW_UNSAFE, O_NULL, O_LOG };
#define SERVE_LONGOPTS                                          \
	{ "foreground", no_argument, NULL, 'f' },               \
	{ "debug", no_argument, NULL, 'd' },                    \
	{ "verbose", no_argument, NULL, 'v' },                  \
	{ "options", required_argument, NULL, 'o' },            \
	{ "freeze", no_argument, NULL, O_FREEZE },              \
	{ "force", no_argument, NULL, O_FORCE },                \
	{ "allow-unsafe-dirs", no_argument, NULL, O_ALLOW_UNSAFE }, \
	{ "null", no_argument, NULL, O_NULL },                  \
	{ "log", required_argument, NULL, O_LOG },              \
	OPT_HELP
#define SERVE_SHORTOPTS "fdvo:h"

/* Returns true if ch was one of them. */
static bool serve_option(int ch, struct rf_fuse_opts *o)
{
	switch (ch) {
	case 'f':
		o->foreground = true;
		return true;
	case 'd':
		o->debug = o->foreground = true;
		return true;
	case 'v':
		rf_log_verbose = 1;
		return true;
	case 'o':
		o->fuse_opts = optarg;
		return true;
	case O_FREEZE:
		o->freeze = true;
		return true;
	case O_NULL:
		/* Undocumented: the FUSE transport alone, for tools/bench.sh. */
		o->null = true;
		return true;
	case O_ALLOW_UNSAFE:
		rf_dev_allow_unsafe_dirs(true);
		return true;
	case O_FORCE:
		rf_assemble_set_force(true);
		return true;
	case O_LOG:
		o->log = optarg;
		return true;
	}
	return false;
}

/* --log: opened before the daemon forks, so that a path that cannot be
 * opened is said here.  0, or 1 (said). */
static int log_option(const struct rf_fuse_opts *o)
{
	char err[PATH_MAX + 128];

	if (o->log && rf_log_choose(o->log, err, sizeof(err))) {
		fprintf(stderr, "raidfuse: %s\n", err);
		return 1;
	}
	return 0;
}

/* Open the array cfg describes and serve it; cfg is freed. */
/* Every member and spare of cfg a device of its own, by whatever name
 * (memberid.h): checked before any superblock is read, so that one
 * device named twice is refused as that, naming both.  0, or 1 (said). */
static int members_distinct(const struct rf_config *cfg)
{
	const char *paths[2 * RF_MAX_MEMBERS], *names[2 * RF_MAX_MEMBERS];
	char (*who)[PATH_MAX + 32] = calloc(2 * RF_MAX_MEMBERS, sizeof(*who));
	char err[2 * PATH_MAX + 256];
	int i, n = 0, r;

	if (!who)
		return 1;
	for (i = 0; i < cfg->nmembers && n < 2 * RF_MAX_MEMBERS; i++, n++) {
		snprintf(who[n], sizeof(who[n]), "member %d (%s)", i, cfg->members[i] ? cfg->members[i] : "missing");
		paths[n] = cfg->members[i];
		names[n] = who[n];
	}
	for (i = 0; i < cfg->nspares && n < 2 * RF_MAX_MEMBERS; i++, n++) {
		snprintf(who[n], sizeof(who[n]), "spare %d (%s)", i, cfg->spares[i]);
		paths[n] = cfg->spares[i];
		names[n] = who[n];
	}
	r = rf_members_distinct(paths, names, n, cfg->member_timeout_ms, err, sizeof(err));
	if (r)
		fprintf(stderr, "raidfuse: %s: %s\n", cfg->path, err);
	free(who);
	return r ? 1 : 0;
}

static int serve(struct rf_config *cfg, const struct rf_fuse_opts *o)
{
	struct rf_array *a;
	char err[1024];
	int ret;

	ret = rf_array_open(cfg, &a, err, sizeof(err));
	rf_config_free(cfg);
	if (ret) {
		fprintf(stderr, "raidfuse: %s\n", err);
		return 1;
	}
	ret = rf_fuse_run(a, o);
	rf_array_close(a);
	return ret ? 1 : 0;
}

/* --overlay DIR: made if needed.  0, or 1 with a message. */
static int overlay_dir(const char *dir)
{
	if (dir && mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "raidfuse: overlay directory %s: %s\n", dir, strerror(errno));
		return 1;
	}
	return 0;
}

/* Members held by a raidfuse that is stopping (unmounted, still writing
 * its last superblocks) are waited for before their superblocks are read
 * (holder.h); one held by a daemon that serves is refused here, naming
 * it.  0, or 1 with the message. */
static int wait_members(const char *const *paths, int n, bool ro, const char *kind)
{
	char err[PATH_MAX + 256], who[PATH_MAX + 32];
	static pid_t said;      /* one line per daemon waited for, members and spares alike */
	int i;

	for (i = 0; i < n; i++) {
		if (!paths[i] || rf_nbd_is_uri(paths[i]))
			continue;
		if (kind)
			snprintf(who, sizeof(who), "%s %d (%s)", kind, i, paths[i]);
		else
			snprintf(who, sizeof(who), "%s", paths[i]);
		if (rf_holder_wait(paths[i], who, ro, RF_HOLDER_WAIT_MS, &said, err, sizeof(err))) {
			fprintf(stderr, "raidfuse: %s\n", err);
			return 1;
		}
	}
	return 0;
}

static int cmd_mount(int argc, char **argv)
{
	static const struct option lo[] = {
		SERVE_LONGOPTS,
		{ "ro", no_argument, NULL, 'r' },
		{ "readonly", no_argument, NULL, 'r' },
		{ "overlay", required_argument, NULL, 'O' },
		OPT_END
	};
	struct rf_fuse_opts o = { 0 };
	struct rf_config cfg;
	const char *pos[2] = { NULL, NULL }, *overlay = NULL;
	bool ro = false;
	char err[1024];
	int npos = 0, ch, rc = -1;

	while ((ch = opt_next(argc, argv, "-:" SERVE_SHORTOPTS "rO:", lo, &rc)) != -1) {
		if (serve_option(ch, &o))
			continue;
		if (ch == 'r') {
			ro = true;
			continue;
		}
		if (ch == 'O') {
			overlay = optarg;
			continue;
		}
		if (npos >= 2)
			return usage_error("mount: expected CONFIG MOUNTPOINT, got also '%s'", optarg);
		pos[npos++] = optarg;
	}
	if (rc >= 0)
		return rc;
	if (npos < 2)
		return usage_error("mount: expected CONFIG MOUNTPOINT");
	if (log_option(&o))
		return 1;
	o.mountpoint = pos[1];
	/* From here on the daemon (daemon.h): it opens everything itself. */
	rc = rf_daemon_fork(o.foreground);
	if (rc >= 0)
		return rc;
	if (overlay_dir(overlay) || load(pos[0], &cfg))
		return 1;
	cfg.readonly |= ro;
	/* As assemble --overlay: the members are opened read-only and every
	 * write goes to the overlay (the config's own readonly still holds). */
	if (overlay && !(cfg.overlay_dir = strdup(overlay))) {
		rf_config_free(&cfg);
		return 1;
	}
	if (members_distinct(&cfg) ||
	    wait_members((const char *const *)cfg.members, cfg.nmembers, cfg.readonly || overlay, "member") ||
	    wait_members((const char *const *)cfg.spares, cfg.nspares, cfg.readonly || overlay, "spare")) {
		rf_config_free(&cfg);
		return 1;
	}
	if (rf_assemble_check_config(&cfg, err, sizeof(err))) {
		fprintf(stderr, "raidfuse: %s\n", err);
		rf_config_free(&cfg);
		return 1;
	}
	return serve(&cfg, &o);
}

/* assemble's positional arguments: MOUNTPOINT, then members.  0 or
 * EXIT_USAGE. */
static int assemble_arg(struct rf_fuse_opts *o, const char **members, int *n, const char *arg)
{
	/* A member's path as typed, made absolute: the daemon, its control
	 * files (md/dev-NAME/path) and ctl fail PATH name it the same from
	 * anywhere. */
	static char abs[RF_MAX_MEMBERS][PATH_MAX];
	char cwd[PATH_MAX];

	if (!o->mountpoint) {
		o->mountpoint = arg;
	} else if (*n < RF_MAX_MEMBERS) {
		members[*n] = arg;
		if (arg[0] != '/' && !rf_nbd_is_uri(arg) && getcwd(cwd, sizeof(cwd)) &&
		    snprintf(abs[*n], sizeof(abs[*n]), "%s/%s", strcmp(cwd, "/") ? cwd : "",
			     strncmp(arg, "./", 2) ? arg : arg + 2) < (int)sizeof(abs[*n]))
			members[*n] = abs[*n];
		(*n)++;
	} else
		return usage_error("assemble: more than %d members ('%s')", RF_MAX_MEMBERS, arg);
	return 0;
}

static int cmd_assemble(int argc, char **argv)
{
	static const struct option lo[] = {
		SERVE_LONGOPTS,
		{ "ro", no_argument, NULL, 'r' },
		{ "readonly", no_argument, NULL, 'r' },
		{ "overlay", required_argument, NULL, 'O' },
		{ "name", required_argument, NULL, 'N' },
		OPT_END
	};
	struct rf_fuse_opts o = { 0 };
	struct rf_config cfg;
	const char *name = NULL, *members[RF_MAX_MEMBERS], *overlay = NULL;
	bool ro = false;
	char err[1024];
	int n = 0, ch, rc = -1;

	while ((ch = opt_next(argc, argv, "-:" SERVE_SHORTOPTS "rO:N:", lo, &rc)) != -1) {
		if (serve_option(ch, &o))
			continue;
		switch (ch) {
		case 'r':
			ro = true;
			break;
		case 'O':
			overlay = optarg;
			break;
		case 'N':
			name = optarg;
			if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
				return usage_error("assemble: --name '%s' is not a plain file name", name);
			break;
		case 1:
			if (assemble_arg(&o, members, &n, optarg))
				return EXIT_USAGE;
			break;
		}
	}
	if (rc >= 0)
		return rc;
	if (!o.mountpoint || !n)
		return usage_error("assemble: expected MOUNTPOINT MEMBER...");
	if (ro && overlay)
		return usage_error("assemble: --ro and --overlay exclude each other (--overlay already keeps "
				   "the members as they are)");
	if (log_option(&o))
		return 1;
	/* From here on the daemon (daemon.h): it opens everything itself. */
	rc = rf_daemon_fork(o.foreground);
	if (rc >= 0)
		return rc;
	if (overlay_dir(overlay) || wait_members(members, n, ro || overlay, NULL))
		return 1;
	if (overlay ? rf_assemble_overlay(members, n, name, overlay, &cfg, err, sizeof(err))
		    : rf_assemble(members, n, name, ro, &cfg, err, sizeof(err))) {
		fprintf(stderr, "raidfuse: %s\n", err);
		return 1;
	}
	return serve(&cfg, &o);
}

/* ---------------------------------------------------------------- control files */


/* Why MOUNTPOINT has no control files, for an error about one of them. */
static void not_served(const char *mnt, const char *what, int err)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/mdstat", mnt);
	if (stat(path, &st))
		fprintf(stderr, "raidfuse: %s is not a raidfuse mount (no %s: %s)\n", mnt, path, strerror(errno));
	else if (err == ENOENT)
		fprintf(stderr, "raidfuse: %s: no such attribute on this array\n", what);
	else
		fprintf(stderr, "raidfuse: %s: %s\n", what, strerror(err));
}

/* MOUNTPOINT/md/ATTR's first line into buf (size bytes), the newline
 * cut.  Returns its length or -errno (reported, when report). */
static int read_attr(const char *mnt, const char *attr, char *buf, size_t size, bool report)
{
	char path[4096], what[300];
	int n;

	snprintf(path, sizeof(path), "%s/md/%s", mnt, attr);
	n = rf_read_text(path, buf, size);
	if (n < 0) {
		if (report) {
			snprintf(what, sizeof(what), "md/%s", attr);
			not_served(mnt, what, -n);
		}
		return n;
	}
	buf[strcspn(buf, "\n")] = '\0';
	return (int)strlen(buf);
}

/* A control file's text as a JSON value: a decimal integer as a number,
 * anything else as a string without its last newline ("0.90" stays a
 * string: md's words, not a number). */
static void json_ctl_value(struct rf_json *j, char *text)
{
	size_t len = strlen(text);
	const char *p = text;

	if (len && text[len - 1] == '\n')
		text[--len] = '\0';
	if (*p == '-')
		p++;
	if (*p && strspn(p, "0123456789") == strlen(p) && (p[0] != '0' || !p[1]))
		rf_json_num_text(j, text);
	else
		rf_json_str(j, text);
}

/* The words of a fault spec ("error=EIO rate=0.5 ops=read,write") and its
 * counters' line ("matched=3 errors=1 delays=0") as members of the
 * object open in j: numbers as numbers, ops as an array of words. */
static void json_fault_words(struct rf_json *j, char *text)
{
	char *save = NULL, *w, *eq, *op, *save2 = NULL;

	for (w = strtok_r(text, " \n", &save); w; w = strtok_r(NULL, " \n", &save)) {
		eq = strchr(w, '=');
		if (!eq)
			continue;
		*eq = '\0';
		rf_json_key(j, w);
		if (!strcmp(w, "ops")) {
			rf_json_arr(j);
			for (op = strtok_r(eq + 1, ",", &save2); op; op = strtok_r(NULL, ",", &save2))
				rf_json_str(j, op);
			rf_json_arr_end(j);
		} else {
			rf_json_num_text(j, eq + 1);
		}
	}
}

/* name's control file text as typed JSON (typed by the file's base name),
 * the key(s) included: md's "none" as null, a number as a number, "done /
 * total" as {"done":N,"total":N}, "N (system)" as N with NAME_source
 * beside it, the fault spec as an object (null when off, its counters
 * then left out), a timeout ("5", "500ms") as seconds; any other text as
 * a string. */
static void json_ctl_typed(struct rf_json *j, const char *name, char *text)
{
	const char *kind = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	unsigned long long a, b;
	char src[16], key[300], num[32], *end;
	size_t len = strlen(text);
	double v;
	int n = 0;

	while (len && text[len - 1] == '\n')
		text[--len] = '\0';
	rf_json_key(j, name);
	if (!strcmp(text, "none")) {
		rf_json_null(j);
	} else if (!strcmp(kind, "set_name") || !strcmp(kind, "path")) {
		rf_json_str(j, text);   /* names, whatever they look like */
	} else if (!strcmp(kind, "fault")) {
		if (!strncmp(text, "off", 3) && (!text[3] || text[3] == '\n')) {
			rf_json_null(j);
		} else {
			rf_json_obj(j);
			json_fault_words(j, text);
			rf_json_obj_end(j);
		}
	} else if (sscanf(text, "%llu / %llu%n", &a, &b, &n) == 2 && !text[n]) {
		rf_json_obj(j);
		rf_json_kuint(j, "done", a);
		rf_json_kuint(j, "total", b);
		rf_json_obj_end(j);
	} else if (sscanf(text, "%llu (%15[a-z])%n", &a, src, &n) == 2 && !text[n]) {
		rf_json_uint(j, a);
		snprintf(key, sizeof(key), "%s_source", name);
		rf_json_kstr(j, key, src);
	} else if (!strcmp(kind, "timeout") && (v = strtod(text, &end)) >= 0 && end != text &&
		   (!*end || !strcmp(end, "ms"))) {
		snprintf(num, sizeof(num), "%g", *end ? v / 1000 : v);
		rf_json_num_text(j, num);
	} else {
		json_ctl_value(j, text);
	}
}

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
	json_ctl_typed(j, name, text);
}

/* ---------------------------------------------------------------- status */

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
		not_served(mnt, path, errno);
		return 1;
	}
	printf("\n");
	return each_ctl_file(path, print_ctl_line, NULL);
}

/* Whether a resync, recovery, check or repair runs: md/sync_action is
 * neither idle nor frozen (an array without one, raid0, runs none). */
static bool sync_running(const char *mnt)
{
	char act[64];

	if (read_attr(mnt, "sync_action", act, sizeof(act), false) < 0)
		return false;
	return strcmp(act, "idle") && strcmp(act, "frozen");
}

static void sleep_secs(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* A --watch interval: seconds, 0.1 to 86400 (watch(1) takes fractions). */
static bool parse_secs(const char *s, double *out)
{
	char *end;
	double v;

	if (!*s || !strchr("0123456789.", *s))
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || v < 0.1 || v > 86400)
		return false;
	*out = v;
	return true;
}

/* One status, or with watch one every secs until no sync action runs
 * (at once if none does): on a terminal each redraws the screen under a
 * header, as watch(1) does; otherwise they follow each other, a blank
 * line between. */
static int status_show(const char *mnt, bool json, bool watch, double secs)
{
	static char mdstat[65536];
	char path[4096], when[64];
	bool tty = isatty(STDOUT_FILENO), first = true;
	time_t now;
	int n, ret;

	snprintf(path, sizeof(path), "%s/mdstat", mnt);
	for (;;) {
		n = rf_read_text(path, mdstat, sizeof(mdstat));
		if (n < 0) {
			not_served(mnt, path, -n);
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
		if (ret || !watch || !sync_running(mnt))
			return ret;
		first = false;
		sleep_secs(secs);
	}
}

static bool wait_exit(int pidfd, pid_t pid, int64_t deadline);

/* How long list waits for one mount's files, and status --detail for its
 * mount's: a daemon that is stopped or stuck does not answer, and list
 * goes on without it. */
#define LIST_MOUNT_TIMEOUT_MS 5000
#define DETAIL_TIMEOUT_MS 30000

/* What a child read of one mount, in memory shared with the parent. */
struct mount_read {
	int r;
	char err[PATH_MAX + 512];
	struct rf_detail d;
};

static int read_mount(const char *mnt, struct mount_read *mr, int timeout_ms);

/* status --detail MOUNTPOINT: what mdadm --detail prints, exit status
 * as mdadm --detail --test's (RF_DETAIL_*); 4 also when the daemon does
 * not answer within DETAIL_TIMEOUT_MS. */
static int status_detail(const char *mnt, bool json)
{
	struct mount_read *mr = mmap(NULL, sizeof(*mr), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int r;

	if (mr == MAP_FAILED) {
		fprintf(stderr, "raidfuse: status: %s\n", strerror(errno));
		return RF_DETAIL_UNREADABLE;
	}
	if (read_mount(mnt, mr, DETAIL_TIMEOUT_MS)) {
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

/* Whether a mount is one `raidfuse list` shows: a raidfuse mount (by its
 * name) of this user (every user's for root). */
static bool listed_mount(const struct rf_mount_ent *m)
{
	return rf_mount_is_raidfuse(m) && (geteuid() == 0 || m->uid == (long)getuid());
}

/* Read mnt's files into *mr in a child, which is killed (a read of a FUSE
 * file that waits for its daemon ends on SIGKILL) when it has not ended
 * within timeout_ms.  0, or -errno with mr->err. */
static int read_mount(const char *mnt, struct mount_read *mr, int timeout_ms)
{
	int st, pidfd;
	pid_t pid;

	mr->r = -EIO;
	snprintf(mr->err, sizeof(mr->err), "%s: its reader failed", mnt);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(mr->err, sizeof(mr->err), "%s: fork: %s", mnt, strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		mr->r = rf_detail_read(mnt, &mr->d, mr->err, sizeof(mr->err));
		_exit(0);
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (!wait_exit(pidfd, pid, rf_mono_ms() + timeout_ms)) {
		kill(pid, SIGKILL);
		mr->r = -ETIMEDOUT;
		snprintf(mr->err, sizeof(mr->err), "%s: its daemon has not answered within %d s (stopped or stuck)",
			 mnt, timeout_ms / 1000);
	}
	if (pidfd >= 0)
		close(pidfd);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return mr->r;
}

/* fn(ctx, m, d, err) for every listed mount, d NULL when its files could
 * not be read (err says why).  Returns how many there were, or -errno. */
static int each_mount(void (*fn)(void *ctx, const struct rf_mount_ent *m, const struct rf_detail *d,
				 const char *err),
		      void *ctx)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	struct mount_read *mr = mmap(NULL, sizeof(*mr), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
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
		if (!listed_mount(&m))
			continue;
		if (read_mount(m.point, mr, LIST_MOUNT_TIMEOUT_MS)) {
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

/* list [--json]: every raidfuse mount of this user. */
static int cmd_list(int argc, char **argv)
{
	static const struct option lo[] = { OPT_JSON, OPT_HELP, OPT_END };
	bool json = false, header = false;
	struct rf_json j;
	int ch, rc = -1, n;

	while ((ch = opt_next(argc, argv, "-:Jh", lo, &rc)) != -1) {
		if (ch == 'J')
			json = true;
		else if (ch == 1)
			return usage_error("list: takes no argument, got '%s'", optarg);
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

/* status [--json] [--watch [SECONDS]] MOUNTPOINT, status --detail
 * [--json] MOUNTPOINT, status --scan */
static int cmd_status(int argc, char **argv)
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

	while ((ch = opt_next(argc, argv, "-:Jw::Dsh", lo, &rc)) != -1) {
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
			if (optarg && !parse_secs(optarg, &secs))
				return usage_error("status: --watch takes SECONDS (0.1 to 86400), not '%s'", optarg);
			break;
		case 1:
			if (secs_due && parse_secs(optarg, &secs)) {
				secs_due = false;
				break;
			}
			/* A number there is a --watch interval out of range,
			 * not a mount point. */
			if (secs_due && strchr("0123456789.", *optarg) && strtod(optarg, &end) >= 0 && !*end)
				return usage_error("status: --watch takes SECONDS (0.1 to 86400), not '%s'", optarg);
			secs_due = false;
			if (mnt)
				return usage_error("status: expected one MOUNTPOINT, got also '%s'", optarg);
			mnt = optarg;
			break;
		}
	}
	if (rc >= 0)
		return rc;
	if ((detail || scan) && watch)
		return usage_error("status: --watch goes without --detail and --scan");
	if (scan) {
		if (mnt || detail || json)
			return usage_error("status: --scan takes no MOUNTPOINT, --detail or --json (raidfuse list "
					   "--json lists the mounts)");
		n = each_mount(scan_line, NULL);
		if (n < 0)
			fprintf(stderr, "raidfuse: status --scan: %s\n", strerror(-n));
		return n < 0 ? 1 : 0;
	}
	if (!mnt)
		return usage_error("status: expected MOUNTPOINT");
	if (detail)
		return status_detail(mnt, json);
	return status_show(mnt, json, watch, secs);
}

/* ---------------------------------------------------------------- monitor */

/* One array the monitor watches: what it read last (monitor.h). */
struct mon_array {
	char mnt[PATH_MAX];             /* its mount point, absolute */
	bool named;                     /* given on the command line: kept when gone */
	bool appeared;                  /* found after the first pass: NewArray */
	bool gone;                      /* DeviceDisappeared told: NewArray when back */
	bool ignored;                   /* found by --scan at a level md does not monitor */
	bool present;                   /* --scan: in the mount table this pass */
	bool seen;                      /* last holds a look */
	struct rf_detail *last;
};

static volatile sig_atomic_t mon_stop;

static void mon_signal(int sig)
{
	mon_stop = sig;
}

/* Sleep secs seconds, or until SIGTERM/SIGINT. */
static void sleep_until_stop(long secs)
{
	struct timespec ts = { .tv_sec = secs, .tv_nsec = 0 };

	while (!mon_stop && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static struct mon_array *mon_add(struct mon_array ***v, int *n, const char *mnt)
{
	struct mon_array **nv = realloc(*v, (size_t)(*n + 1) * sizeof(**v)), *a;

	if (!nv)
		return NULL;
	*v = nv;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->last = malloc(sizeof(*a->last));
	if (!a->last) {
		free(a);
		return NULL;
	}
	snprintf(a->mnt, sizeof(a->mnt), "%s", mnt);
	nv[(*n)++] = a;
	return a;
}

static void mon_free(struct mon_array *a)
{
	free(a->last);
	free(a);
}

/* --scan: the raidfuse mounts list shows, those not yet watched added. */
static void mon_discover(struct mon_array ***v, int *n, bool first)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	struct rf_mount_ent m;
	struct mon_array *a;
	int i;

	for (i = 0; i < *n; i++)
		(*v)[i]->present = (*v)[i]->named;
	if (!f) {
		fprintf(stderr, "raidfuse: monitor: /proc/self/mountinfo: %s\n", strerror(errno));
		for (i = 0; i < *n; i++)
			(*v)[i]->present = true;        /* nothing known gone */
		return;
	}
	while (!rf_mountinfo_next(f, &m)) {
		if (!listed_mount(&m))
			continue;
		for (i = 0; i < *n && strcmp((*v)[i]->mnt, m.point); i++)
			;
		if (i < *n) {
			(*v)[i]->present = true;
			continue;
		}
		a = mon_add(v, n, m.point);
		if (!a) {
			fprintf(stderr, "raidfuse: monitor: %s: %s\n", m.point, strerror(ENOMEM));
			continue;
		}
		a->present = true;
		a->appeared = !first;
	}
	fclose(f);
}

/* One look at a: read it, tell what changed.  False when a is to be
 * dropped (found by --scan, now gone). */
static bool mon_look(struct mon_array *a, struct mount_read *mr, const struct rf_mon_alert *al, bool test,
		     int increment)
{
	static struct rf_mon_event ev[RF_MON_MAX_EVENTS];   /* ~550 KiB: not on the stack */
	const struct rf_detail *old = a->seen && !a->gone ? a->last : NULL, *now = NULL;
	unsigned flags = test ? RF_MON_TEST : 0;
	int i, nev;

	if (a->ignored)
		return true;
	if (a->present && !read_mount(a->mnt, mr, LIST_MOUNT_TIMEOUT_MS))
		now = &mr->d;
	else if (a->present && old)
		fprintf(stderr, "raidfuse: monitor: %s\n", mr->err);
	if (now && !a->named && now->level == 0 && !a->seen) {
		a->ignored = true;      /* as mdadm --scan: raid0 is not watched */
		return true;
	}
	if (!old && (a->appeared || a->gone))
		flags |= RF_MON_NEW;
	nev = rf_monitor_diff(old, now, flags, increment, ev, RF_MON_MAX_EVENTS);
	for (i = 0; i < nev && !mon_stop; i++)
		rf_monitor_alert(al, a->mnt, &ev[i]);
	if (now) {
		memcpy(a->last, now, sizeof(*now));
		a->seen = true;
		a->gone = false;
	} else if (old) {
		a->gone = true;
	}
	return a->present || a->named;
}

/* monitor [--scan | MOUNTPOINT...] [--program PROG] [--mail ADDR] [--syslog]
 * [--oneshot] [--test] [--delay N] [--increment N] [--daemonise]
 * [--pid-file FILE] [--program-timeout N]: mdadm --monitor for raidfuse
 * mounts. */
static int cmd_monitor(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "scan", no_argument, NULL, 's' },
		{ "program", required_argument, NULL, 'p' },
		{ "alert", required_argument, NULL, 'p' },
		{ "mail", required_argument, NULL, 'm' },
		{ "syslog", no_argument, NULL, 'y' },
		{ "oneshot", no_argument, NULL, '1' },
		{ "test", no_argument, NULL, 't' },
		{ "delay", required_argument, NULL, 'd' },
		{ "increment", required_argument, NULL, 'r' },
		{ "daemonise", no_argument, NULL, 'f' },
		{ "daemonize", no_argument, NULL, 'f' },
		{ "pid-file", required_argument, NULL, 'i' },
		{ "program-timeout", required_argument, NULL, 'T' },
		OPT_HELP,
		OPT_END
	};
	struct rf_mon_alert al = { .timeout_ms = 30000, .stop = &mon_stop };
	char prog[PATH_MAX], pidf[PATH_MAX], abs[PATH_MAX], err[PATH_MAX + 512];
	const char *pidfile = NULL;
	bool scan = false, oneshot = false, test = false, daemonise = false, first = true;
	long delay = 60, increment = RF_MON_INCREMENT, secs;
	struct mon_array **v = NULL, *a;
	struct mount_read *mr;
	struct rf_mount_ent m;
	struct sigaction sa;
	int ch, rc = -1, n = 0, i, j, r;
	char *end;

	while ((ch = opt_next(argc, argv, "-:sp:m:y1td:r:fi:h", lo, &rc)) != -1) {
		switch (ch) {
		case 's':
			scan = true;
			break;
		case 'p':
			al.program = optarg;
			break;
		case 'm':
			al.mail = optarg;
			break;
		case 'y':
			al.syslog = true;
			break;
		case '1':
			oneshot = true;
			break;
		case 't':
			test = true;
			break;
		case 'f':
			daemonise = true;
			break;
		case 'i':
			pidfile = optarg;
			break;
		case 'd':
		case 'r':
		case 'T':
			errno = 0;
			secs = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || secs < 1 || secs > (ch == 'r' ? 99 : 86400))
				return usage_error("monitor: --%s takes %s, not '%s'", long_name(lo, ch),
						   ch == 'r' ? "a percentage (1 to 99)" : "SECONDS (1 to 86400)", optarg);
			if (ch == 'd')
				delay = secs;
			else if (ch == 'r')
				increment = secs;
			else
				al.timeout_ms = (int)secs * 1000;
			break;
		case 1:
			if (!realpath(optarg, abs)) {
				fprintf(stderr, "raidfuse: monitor: %s: %s\n", optarg, strerror(errno));
				rc = 1;
				break;
			}
			if (rf_mount_find(abs, 0, &m)) {
				fprintf(stderr, "raidfuse: monitor: %s is not a raidfuse mount (nothing is mounted there)\n",
					optarg);
				rc = 1;
				break;
			}
			a = mon_add(&v, &n, abs);
			if (!a) {
				fprintf(stderr, "raidfuse: monitor: %s\n", strerror(ENOMEM));
				rc = 1;
				break;
			}
			a->named = a->present = true;
			break;
		}
		if (rc >= 0)
			break;
	}
	if (rc < 0 && scan && n)
		rc = usage_error("monitor: --scan takes no MOUNTPOINT (it watches every raidfuse mount)");
	if (rc < 0 && (daemonise || fcntl(STDOUT_FILENO, F_GETFD) < 0) && !al.program && !al.mail && !al.syslog) {
		fprintf(stderr, "raidfuse: monitor: No mail address or alert command - not monitoring.\n");
		rc = 1;
	}
	if (rc >= 0) {
		for (i = 0; i < n; i++)
			mon_free(v[i]);
		free(v);
		return rc;
	}
	scan = !n;
	mr = mmap(NULL, sizeof(*mr), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mr == MAP_FAILED) {
		fprintf(stderr, "raidfuse: monitor: %s\n", strerror(errno));
		for (i = 0; i < n; i++)
			mon_free(v[i]);
		free(v);
		return 1;
	}
	/* a named mount must be a raidfuse one: its files say so */
	for (i = 0; i < n; i++) {
		r = read_mount(v[i]->mnt, mr, LIST_MOUNT_TIMEOUT_MS);
		if (r == -ENOENT && strstr(mr->err, "not a raidfuse mount")) {
			fprintf(stderr, "raidfuse: monitor: %s\n", mr->err);
			rc = 1;
		} else if (r == -ENOENT) {
			fprintf(stderr, "raidfuse: monitor: %s is not a raidfuse mount (%s)\n", v[i]->mnt, mr->err);
			rc = 1;
		} else if (r) {
			fprintf(stderr, "raidfuse: monitor: %s (watched until it answers)\n", mr->err);
		}
	}
	if (rc < 0 && daemonise) {
		/* the daemon leaves for /: the paths it keeps are absolute */
		if (al.program && strchr(al.program, '/') && realpath(al.program, prog))
			al.program = prog;
		if (pidfile && pidfile[0] != '/' && getcwd(abs, sizeof(abs)) &&
		    (size_t)snprintf(pidf, sizeof(pidf), "%s/%s", abs, pidfile) < sizeof(pidf))
			pidfile = pidf;
		rc = rf_daemon_fork(false);
		if (rc < 0)
			rc = -1;        /* the daemon goes on; the parent returns how its start went */
	}
	if (rc < 0 && pidfile && rf_monitor_pidfile_claim(pidfile, err, sizeof(err))) {
		fprintf(stderr, "raidfuse: monitor: %s\n", err);
		rc = 1;
	}
	if (rc >= 0) {
		for (i = 0; i < n; i++)
			mon_free(v[i]);
		free(v);
		munmap(mr, sizeof(*mr));
		return rc;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = mon_signal;     /* no SA_RESTART: a sleep ends at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (al.syslog)
		openlog("raidfuse-monitor", LOG_PID, LOG_DAEMON);
	if (al.mail && access(RF_MON_SENDMAIL, X_OK))
		fprintf(stderr, "raidfuse: monitor: cannot mail %s: %s: %s\n", al.mail, RF_MON_SENDMAIL,
			strerror(errno));
	al.print = !daemonise;
	if (daemonise)
		rf_daemon_ready();
	while (!mon_stop) {
		if (scan)
			mon_discover(&v, &n, first);
		for (i = j = 0; i < n; i++) {
			if (!mon_stop && !mon_look(v[i], mr, &al, first && test, (int)increment)) {
				mon_free(v[i]);
				continue;
			}
			v[j++] = v[i];
		}
		n = j;
		if (oneshot)
			break;
		first = false;
		sleep_until_stop(delay);
	}
	for (i = 0; i < n; i++)
		mon_free(v[i]);
	free(v);
	munmap(mr, sizeof(*mr));
	rf_monitor_pidfile_release(pidfile);
	if (al.syslog)
		closelog();
	return 0;
}

/* ---------------------------------------------------------------- ctl */

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
		if (read_attr(mnt, "sync_action", act, sizeof(act), true) < 0)
			return 1;
		if (!strcmp(act, "idle") || !strcmp(act, "frozen"))
			break;
		if (read_attr(mnt, "sync_completed", done, sizeof(done), true) < 0)
			return 1;
		if (sscanf(done, "%llu / %llu", &d, &t) == 2 && t)
			rf_progress_update(&p, d * 512, t * 512);
		sleep_secs(0.2);
	}
	if (!strcmp(act, "frozen")) {
		rf_progress_end(&p, "stopped");
		fprintf(stderr, "raidfuse: %s: md/sync_action is frozen: the %s was stopped\n", mnt, action);
		return 1;
	}
	if (read_attr(mnt, "mismatch_cnt", cnt, sizeof(cnt), true) < 0)
		return 1;
	if (p.total)
		p.done = p.total;
	rf_progress_end(&p, "done");
	if (json) {
		rf_json_init(&j, stdout);
		rf_json_obj(&j);
		rf_json_kstr(&j, "sync_action", action);
		rf_json_key(&j, "mismatch_cnt");
		json_ctl_value(&j, cnt);
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

/* ctl [--json] MOUNTPOINT ATTR [VALUE], the device verbs, check/repair. */
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
		not_served(mnt, "md/", errno);
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

static int cmd_ctl(int argc, char **argv)
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

	while ((ch = opt_next(argc, argv, "-:JWh", lo, &rc)) != -1) {
		if (ch == 'J') {
			json = true;
		} else if (ch == 'W') {
			wait = true;
		} else if (ch == 1) {
			if (npos >= 3)
				return usage_error("ctl: expected MOUNTPOINT ATTR [VALUE], got also '%s'", optarg);
			pos[npos++] = optarg;
			if (npos == 2 && optind < argc && argv[optind][0] == '-' && !ctl_is_option(argv[optind]))
				pos[npos++] = argv[optind++];
		}
	}
	if (rc >= 0)
		return rc;
	if (npos < 2)
		return usage_error("ctl: expected MOUNTPOINT ATTR [VALUE]");
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
			return usage_error("ctl: %s expects a device NAME or path", attr);
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
			return usage_error("ctl: %s takes no VALUE, got '%s'", attr, val);
		val = attr;
		attr = "sync_action";
	} else if (!val && (!strcmp(attr, "add") || !strcmp(attr, "fail") || !strcmp(attr, "remove") ||
			    !strcmp(attr, "replace"))) {
		return usage_error("ctl: %s expects a %s", attr, !strcmp(attr, "add") ? "FILE" : "device NAME");
	}
	if (wait) {
		static const char *const actions[] = { "check", "repair", "resync", "recover", NULL };

		for (n = 0; val && !strcmp(attr, "sync_action") && actions[n]; n++)
			if (!strcmp(val, actions[n]))
				wait_for = actions[n];
		if (!wait_for)
			return usage_error("ctl: --wait goes with check, repair, or sync_action "
					   "check|repair|resync|recover");
	}
	if (!*attr || attr[0] == '/' || strstr(attr, ".."))
		return usage_error("ctl: '%s' is not an attribute name (e.g. stripe_cache_size)", attr);
	snprintf(path, sizeof(path), "%s/md/%s", mnt, attr);
	snprintf(what, sizeof(what), "md/%s", attr);
	if (!val) {
		n = rf_read_text(path, buf, sizeof(buf));
		if (n < 0) {
			not_served(mnt, what, -n);
			return 1;
		}
		if (!json) {
			fputs(buf, stdout);
			return 0;
		}
		rf_json_init(&j, stdout);
		rf_json_obj(&j);
		json_ctl_typed(&j, attr, buf);
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
			not_served(mnt, what, err);
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

/* ---------------------------------------------------------------- grow */

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
	    read_attr(mnt, "array_size", cur, sizeof(cur), true) >= 0 &&
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
		rc = cmd_ctl(4, av);
		if (rc) {
			fprintf(stderr, "raidfuse: grow: the daemon's log says why\n");
			return rc;
		}
	}
	if (read_attr(mnt, "component_size", cur, sizeof(cur), true) >= 0)
		printf("component_size: %s", cur);
	if (read_attr(mnt, "array_size", cur, sizeof(cur), true) >= 0)
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
		rc = cmd_ctl(4, av);
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
	rc = cmd_ctl(4, av);
	if (rc)
		fprintf(stderr, "raidfuse: grow: the daemon's log says why\n");
	return rc;
}

/* `raidfuse grow MNT --raid-devices N | --level 6 | --layout L | --chunk C
 * [--add FILE]...`: mdadm --grow's words over md's files: each FILE to
 * md/new_dev (a spare), then N to md/raid_disks, raid6 to md/level, L to
 * md/layout or C (KiB unless suffixed) to md/chunk_size; --wait: until
 * md/reshape_position says none. */
static int cmd_grow(int argc, char **argv)
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
		OPT_HELP,
		OPT_END
	};
	const char *mnt = NULL, *adds[RF_MAX_MEMBERS];
	char nbuf[64], pos[64], size[64], sizebuf[32], arraybuf[32];
	int ch, rc = -1, nadd = 0, n = 0, level = -1, cur_level = -1, cur_n = 0;
	const char *layout = NULL, *size_kib = NULL, *array_kib = NULL;
	uint64_t chunk = 0;
	unsigned long long comp;
	bool wait = false;
	struct rf_progress p;

	while ((ch = opt_next(argc, argv, "-:n:l:p:c:a:z:Z:Wh", lo, &rc)) != -1) {
		if (ch == 'z' || ch == 'Z') {
			/* mdadm's --size and --array-size: KiB unless a suffix
			 * says; "max" (md/array_size's "default"). */
			uint64_t v;
			const char **to = ch == 'z' ? &size_kib : &array_kib;

			if (!strcmp(optarg, "max")) {
				*to = ch == 'z' ? "max" : "default";
				continue;
			}
			if (rf_parse_size(optarg, 1024, &v) || v < 1024 || v % 1024)
				return usage_error("grow: --%s wants a size (KiB unless suffixed, whole KiB) or max, got "
						   "'%s'", ch == 'z' ? "size" : "array-size", optarg);
			snprintf(ch == 'z' ? sizebuf : arraybuf, sizeof(sizebuf), "%" PRIu64, v / 1024);
			*to = ch == 'z' ? sizebuf : arraybuf;
		} else if (ch == 'p') {
			layout = optarg;
		} else if (ch == 'c') {
			/* mdadm's --chunk: KiB unless a suffix says */
			if (rf_parse_size(optarg, 1024, &chunk) || chunk < 4096 || (chunk & (chunk - 1)))
				return usage_error("grow: --chunk wants a power of two of 4K or more, got '%s'",
						   optarg);
		} else if (ch == 'l') {
			const char *v = strncmp(optarg, "raid", 4) ? optarg : optarg + 4;
			char *end;
			long l = strtol(v, &end, 10);

			if (*end || end == v || l < 0 || l > 10)
				return usage_error("grow: --level wants a raid level (6, raid6), got '%s'", optarg);
			level = (int)l;
		} else if (ch == 'n') {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (*end || v < 1 || v > RF_MAX_MEMBERS)
				return usage_error("grow: --raid-devices wants 1..%d, got '%s'", RF_MAX_MEMBERS,
						   optarg);
			n = (int)v;
		} else if (ch == 'a') {
			if (nadd >= RF_MAX_MEMBERS)
				return usage_error("grow: more than %d --add", RF_MAX_MEMBERS);
			adds[nadd++] = optarg;
		} else if (ch == 'W') {
			wait = true;
		} else if (ch == 1) {
			if (mnt)
				return usage_error("grow: expected one MOUNTPOINT, got also '%s'", optarg);
			mnt = optarg;
		}
	}
	if (rc >= 0)
		return rc;
	if (!mnt)
		return usage_error("grow: expected MOUNTPOINT");
	if (size_kib || array_kib) {
		/* mdadm: "cannot change component size at the same time as
		 * other changes"; --array-size goes first when both are given
		 * and the array shrinks, last when it grows. */
		if (n || level >= 0 || layout || chunk || nadd || wait)
			return usage_error("grow: --size and --array-size go without other changes");
		return grow_size(mnt, size_kib, array_kib);
	}
	if ((n > 0) + (level >= 0) + !!layout + !!chunk == 0)
		return usage_error("grow: --raid-devices, --level, --layout, --chunk, --size or --array-size is "
				   "needed (what to change)");
	if ((layout || chunk) && (n || level >= 0 || (layout && chunk)))
		return usage_error("grow: --layout and --chunk go alone, one change at a time");
	if (level >= 0) {
		char cur[32];

		if (read_attr(mnt, "level", cur, sizeof(cur), true) < 0 ||
		    read_attr(mnt, "raid_disks", nbuf, sizeof(nbuf), true) < 0)
			return 1;
		cur_level = atoi(strncmp(cur, "raid", 4) ? cur : cur + 4);
		cur_n = atoi(nbuf);
		/* mdadm --grow --level: raid6 takes one member more (md/level
		 * adds it); a raid1 of two becomes a raid5 of two, grown after
		 * to --raid-devices; a raid0 becomes a raid4/5 of one member
		 * more, that slot empty until a spare (--add, after the
		 * change: a raid0 takes none) is rebuilt into it; the other
		 * changes keep the count or drop P's or Q's member. */
		if (level == 6 && n && n != cur_n + 1)
			return usage_error("grow: --level 6 with --raid-devices %d: the change takes one member "
					   "more", n);
		if (cur_level == 0 && n && n != cur_n + 1)
			return usage_error("grow: raid0 to raid%d with --raid-devices %d: the change takes one "
					   "member more (%d)", level, n, cur_n + 1);
		if (n && level != 6 && cur_level != 0 && !(cur_level == 1 && level == 5))
			return usage_error("grow: --level %d goes without --raid-devices", level);
	}
	if (cur_level != 0) {
		rc = grow_add(mnt, adds, nadd);
		if (rc)
			return rc;
	}
	if (layout) {
		rc = grow_set(mnt, "layout", layout);
	} else if (chunk) {
		snprintf(nbuf, sizeof(nbuf), "%" PRIu64, chunk);
		rc = grow_set(mnt, "chunk_size", nbuf);
	} else if (level >= 0) {
		snprintf(nbuf, sizeof(nbuf), "raid%d", level);
		rc = grow_set(mnt, "level", nbuf);
		if (!rc && cur_level == 0)
			rc = grow_add(mnt, adds, nadd);
		if (!rc && cur_level == 1 && n && n != cur_n) {
			snprintf(nbuf, sizeof(nbuf), "%d", n);
			rc = grow_set(mnt, "raid_disks", nbuf);
		}
	} else {
		snprintf(nbuf, sizeof(nbuf), "%d", n);
		rc = grow_set(mnt, "raid_disks", nbuf);
	}
	if (rc)
		return rc;
	if (!wait)
		return 0;
	/* The walk ends at the new geometry's size: a grow's component_size
	 * KiB on each of N members, less the parity ones; the others' the
	 * array as it is. */
	if ((level >= 0 && !(cur_level == 1 && n)) || layout || chunk) {
		if (read_attr(mnt, "array_size", size, sizeof(size), true) < 0)
			return 1;
		comp = strtoull(size, NULL, 10) * 1024;
	} else {
		if (read_attr(mnt, "component_size", size, sizeof(size), true) < 0 ||
		    read_attr(mnt, "level", pos, sizeof(pos), true) < 0)
			return 1;
		comp = strtoull(size, NULL, 10) * 1024 *
		       (unsigned long long)(n - (!strncmp(pos, "raid6", 5) ? 2 : 1));
	}
	rf_progress_start(&p, stderr, "reshape", 0);
	for (;;) {
		unsigned long long done;

		if (read_attr(mnt, "reshape_position", pos, sizeof(pos), true) < 0)
			return 1;
		if (!strncmp(pos, "none", 4))
			break;
		if (sscanf(pos, "%llu", &done) == 1 && comp)
			rf_progress_update(&p, done * 512, comp);
		sleep_secs(0.2);
	}
	if (p.total)
		p.done = p.total;
	rf_progress_end(&p, "done");
	/* mdadm --wait: and the rebuild or resync after it (a raid0 made a
	 * raid4/5 rebuilds P onto its spare). */
	while (sync_running(mnt))
		sleep_secs(0.2);
	if (read_attr(mnt, "array_size", size, sizeof(size), true) < 0)
		return 1;
	printf("array_size: %s", size);
	return 0;
}

/* ---------------------------------------------------------------- stop */

#define STOP_TIMEOUT_S 60
#define STOP_BUSY_MS 2000       /* how long stop retries an unmount that says busy */
/* How long fusermount3 -u may take (it does not wait for the daemon). */
#define UMOUNT_TIMEOUT_MS 10000

/* mnt as the mount table names it, without looking at mnt itself (that
 * would ask its daemon, which may not answer): the directory resolved,
 * the last component as given.  0, or -errno. */
static int stop_abs_path(const char *mnt, char *out, size_t len)
{
	char tmp[PATH_MAX], dir[PATH_MAX], *b;
	size_t n = strlen(mnt);

	if (!n || n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, mnt, n + 1);
	while (n > 1 && tmp[n - 1] == '/')
		tmp[--n] = '\0';
	b = strrchr(tmp, '/');
	if (!strcmp(tmp, "/") || !strcmp(b ? b + 1 : tmp, ".") || !strcmp(b ? b + 1 : tmp, ".."))
		return realpath(tmp, out) ? 0 : -errno;
	if (!b) {
		if (!getcwd(dir, sizeof(dir)))
			return -errno;
	} else {
		*b = '\0';
		if (!realpath(b == tmp ? "/" : tmp, dir))
			return -errno;
	}
	if ((size_t)snprintf(out, len, "%s/%s", strcmp(dir, "/") ? dir : "", b ? b + 1 : tmp) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* Wait for the process behind pidfd (or pid, without one) to exit, until
 * deadline (CLOCK_MONOTONIC ms).  True once it has. */
static bool wait_exit(int pidfd, pid_t pid, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - rf_mono_ms();
		struct pollfd p = { .fd = pidfd, .events = POLLIN };

		if (pidfd < 0 ? kill(pid, 0) && errno == ESRCH : false)
			return true;
		if (left <= 0)
			return false;
		if (pidfd < 0) {
			sleep_secs(0.05);
			continue;
		}
		if (poll(&p, 1, (int)(left < 1000 ? left : 1000)) > 0)
			return true;
	}
}

/* Unmount abs: umount2 as root, else fusermount3 -u (which may take no
 * longer than UMOUNT_TIMEOUT_MS).  0, or 1 with the message. */
static int stop_unmount(const char *abs)
{
	int st, pidfd;
	pid_t pid;

	if (geteuid() == 0) {
		int64_t until = rf_mono_ms() + STOP_BUSY_MS;
		int r;

		/* A program that just closed the image may hold the mount a
		 * moment longer (mdadm --stop retries EBUSY alike). */
		while ((r = umount2(abs, UMOUNT_NOFOLLOW)) && errno == EBUSY && rf_mono_ms() < until)
			usleep(50 * 1000);
		if (!r)
			return 0;
		fprintf(stderr, "raidfuse: stop: cannot unmount %s: %s%s\n", abs, strerror(errno),
			errno == EBUSY ? " (a program holds the image or a file under it open: close it, "
					 "losetup -d its loop device)" : "");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "raidfuse: stop: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		execlp("fusermount3", "fusermount3", "-u", "--", abs, (char *)NULL);
		fprintf(stderr, "raidfuse: stop: cannot run fusermount3: %s\n", strerror(errno));
		_exit(127);
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (!wait_exit(pidfd, pid, rf_mono_ms() + UMOUNT_TIMEOUT_MS)) {
		fprintf(stderr, "raidfuse: stop: fusermount3 -u %s did not end within %d s: killed\n", abs,
			UMOUNT_TIMEOUT_MS / 1000);
		kill(pid, SIGKILL);
	}
	if (pidfd >= 0)
		close(pidfd);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && !WEXITSTATUS(st))
		return 0;
	fprintf(stderr, "raidfuse: stop: fusermount3 -u %s failed (what it said is above)\n", abs);
	return 1;
}

/* stop [--timeout SECONDS] MOUNTPOINT: unmount, then wait until the daemon
 * has written its last superblocks and exited. */
static int cmd_stop(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "timeout", required_argument, NULL, 't' },
		OPT_HELP,
		OPT_END
	};
	const char *mnt = NULL;
	char abs[PATH_MAX];
	struct rf_mount_ent m;
	double secs = STOP_TIMEOUT_S;
	int ch, rc = -1, r, pidfd;
	pid_t pid;
	int64_t t0;

	while ((ch = opt_next(argc, argv, "-:t:h", lo, &rc)) != -1) {
		if (ch == 't') {
			if (!parse_secs(optarg, &secs))
				return usage_error("stop: --timeout takes SECONDS (0.1 to 86400), not '%s'", optarg);
		} else if (ch == 1) {
			if (mnt)
				return usage_error("stop: expected one MOUNTPOINT, got also '%s'", optarg);
			mnt = optarg;
		}
	}
	if (rc >= 0)
		return rc;
	if (!mnt)
		return usage_error("stop: expected MOUNTPOINT");
	r = stop_abs_path(mnt, abs, sizeof(abs));
	if (r) {
		fprintf(stderr, "raidfuse: stop: %s: %s\n", mnt, strerror(-r));
		return 1;
	}
	r = rf_mount_find(abs, 0, &m);
	if (r) {
		fprintf(stderr, "raidfuse: stop: %s: %s\n", abs,
			r == -ENOENT ? "nothing is mounted there" : strerror(-r));
		return 1;
	}
	/* The daemon: the process holding the mount's marker (holder.h). */
	pid = rf_serve_pid_of(&m);
	if (!pid && !rf_mount_is_raidfuse(&m)) {
		fprintf(stderr, "raidfuse: stop: %s is not a raidfuse mount (%s, type %s)\n", abs, m.source, m.type);
		return 1;
	}
	/* Before the unmount: the pid cannot be another process's by the
	 * time it is waited for. */
	pidfd = pid ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	if (!pid || (pidfd < 0 && errno == ESRCH)) {
		fprintf(stderr, "raidfuse: stop: no daemon serves %s (%s, type %s) any more (it crashed or was "
			"killed: its array was not shut down cleanly); unmounting what it left\n", abs, m.source,
			m.type);
		stop_unmount(abs);
		return 1;
	}
	if (stop_unmount(abs)) {
		if (pidfd >= 0)
			close(pidfd);
		return 1;
	}
	t0 = rf_mono_ms();
	if (!wait_exit(pidfd, pid, t0 + 1000)) {
		fprintf(stderr, "raidfuse: stop: %s unmounted; waiting for its daemon (pid %d) to write its last "
			"superblocks and exit (up to %g s)\n", abs, (int)pid, secs);
		if (!wait_exit(pidfd, pid, t0 + (int64_t)(secs * 1000))) {
			fprintf(stderr, "raidfuse: stop: the daemon (pid %d) that served %s has not exited %g s after "
				"the unmount: it still holds its members (its log, in syslog, says what it waits "
				"for)\n", (int)pid, abs, secs);
			if (pidfd >= 0)
				close(pidfd);
			return 1;
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	return 0;
}

/* ---------------------------------------------------------------- detect */

/* detect [--level L] [--members N] [--max-offset SIZE] [--json]
 * [--write-config FILE] MEMBER... [missing]: the ranked geometries the
 * members may be an array of (src/md/detect.c); exit 1 without a
 * confident answer. */
static int cmd_detect(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "level", required_argument, NULL, 'l' },
		{ "members", required_argument, NULL, 'n' },
		{ "max-offset", required_argument, NULL, 'm' },
		{ "write-config", required_argument, NULL, 'w' },
		{ "allow-unsafe-dirs", no_argument, NULL, O_ALLOW_UNSAFE },
		OPT_JSON,
		OPT_HELP,
		OPT_END
	};
	struct rf_detect_opts o = { .level = -1, .max_offset = 64ull << 20 };
	struct rf_detect_result *r;
	const char *members[RF_MAX_MEMBERS], *conf = NULL;
	char err[1024], *end;
	int n = 0, ch, rc = -1, ret;
	bool json = false;
	long v;

	while ((ch = opt_next(argc, argv, "-:l:n:m:w:Jh", lo, &rc)) != -1) {
		switch (ch) {
		case 'l':
			v = strtol(optarg, &end, 10);
			if (!strncmp(optarg, "raid", 4))
				v = strtol(optarg + 4, &end, 10);
			if (*end || (v != 0 && v != 1 && v != 4 && v != 5 && v != 6 && v != 10))
				return usage_error("detect: --level '%s' is not 0, 1, 4, 5, 6 or 10", optarg);
			o.level = (int)v;
			break;
		case 'n':
			v = strtol(optarg, &end, 10);
			if (*end || v < 2 || v > RF_MAX_MEMBERS)
				return usage_error("detect: --members '%s' is not 2 to %d", optarg, RF_MAX_MEMBERS);
			o.members = (int)v;
			break;
		case 'm':
			if (rf_parse_size(optarg, 1, &o.max_offset))
				return usage_error("detect: --max-offset '%s' is not a size", optarg);
			break;
		case 'w':
			conf = optarg;
			break;
		case O_ALLOW_UNSAFE:
			rf_dev_allow_unsafe_dirs(true);
			break;
		case 'J':
			json = true;
			break;
		case 1:
			if (n >= RF_MAX_MEMBERS)
				return usage_error("detect: more than %d members ('%s')", RF_MAX_MEMBERS, optarg);
			members[n++] = optarg;
			break;
		}
	}
	if (rc >= 0)
		return rc;
	if (n < 2)
		return usage_error("detect: expected two or more MEMBER... (\"missing\" for one that is not there)");
	r = malloc(sizeof(*r));
	if (!r)
		return 1;
	ret = rf_detect(members, n, &o, r, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "raidfuse: %s\n", err);
		free(r);
		return 1;
	}
	if (json ? rf_detect_print_json(stdout, r) : (rf_detect_print(stdout, r), 0))
		ret = 1;
	if (conf && r->ncand && rf_detect_write_config(conf, r, 0, err, sizeof(err))) {
		fprintf(stderr, "raidfuse: %s\n", err);
		ret = 1;
	}
	ret = ret || !r->confident;
	free(r);
	return ret;
}

/* ---------------------------------------------------------------- commands */

/* Option help that several commands share. */
#define HELP_FORCE                                                                      \
	"      --force            serve a degraded raid4/5/6 that was not shut down cleanly\n" \
	"                         (md's --run --force; data in the stripes being written at\n" \
	"                         the crash may be wrong)\n"
#define HELP_LOG                                                                        \
	"      --log=FILE|stderr|syslog|journal\n"                                    \
	"                         where messages go (default: stderr in the foreground,\n" \
	"                         syslog once detached); FILE is appended to and reopened\n" \
	"                         on SIGHUP (logrotate)\n"
#define HELP_UNSAFE_DIRS                                                                \
	"      --allow-unsafe-dirs\n"                                                     \
	"                         as root, accept members in directories other users may\n" \
	"                         write (refused by default: they could swap a member for\n" \
	"                         a link to any file)\n"

static int cmd_help(int argc, char **argv);

static const struct cmd cmds[] = {
	{ "create", cmd_create,
	  "raidfuse create CONFIG [-f] [--assume-clean] [-b internal|none] [--bitmap-chunk SIZE]\n"
	  "                [--allow-unsafe-dirs]",
	  "Make the member and spare files CONFIG names that do not exist yet (array.member_size\n"
	  "bytes each) and write md 1.2 superblocks on every one (metadata = \"none\" in CONFIG:\n"
	  "none).  Nothing is written before the whole config and every member are checked.\n"
	  "\n"
	  "  -f, --force            also recreate members that hold data\n"
	  "      --assume-clean     record the array in sync: no resync due\n"
	  "  -b, --bitmap=internal|none\n"
	  "                         md's internal write-intent bitmap, or none (over CONFIG's)\n"
	  "      --bitmap-chunk=SIZE\n"
	  "                         the bitmap's chunk: a power of two of at least 4K, KiB\n"
	  "                         unless suffixed (K, M, G); default mdadm's (64M at least)\n"
	  HELP_UNSAFE_DIRS
	  "  -h, --help             this help\n",
	  "make the members CONFIG names, write md 1.2 superblocks" },
	{ "mount", cmd_mount,
	  "raidfuse mount [--ro | --overlay DIR] CONFIG MOUNTPOINT [-f] [-d] [-v] [-o OPTS]\n"
	  "               [--freeze] [--force] [--allow-unsafe-dirs] [--log FILE|stderr|syslog|journal]\n"
	  "raidfuse CONFIG MOUNTPOINT -o OPTS   (mount.fuse3, /etc/fstab: type fuse.raidfuse)",
	  "Check the members and their superblocks (none with metadata \"none\") against\n"
	  "CONFIG and serve the array as MOUNTPOINT/<name>, with md's control files beside\n"
	  "it.  Stop it with raidfuse stop MOUNTPOINT.\n"
	  "\n"
	  "  -r, --ro, --readonly   serve the array read-only (as the config's readonly)\n"
	  "  -O, --overlay=DIR      open the members read-only; every write goes to\n"
	  "                         copy-on-write files in DIR, as assemble --overlay (for a\n"
	  "                         config detect wrote: nothing is written to the members)\n"
	  "  -f, --foreground       stay in the foreground\n"
	  "  -d, --debug            FUSE debug output (implies -f)\n"
	  "  -v, --verbose          verbose log\n"
	  "  -o, --options=OPTS     FUSE mount options (e.g. allow_other), and\n"
	  "                         io_uring=auto|on|off: FUSE over io_uring (default auto)\n"
	  "      --freeze           start with md/sync_action frozen: a resync that is due\n"
	  "                         waits until `resync` is written there\n"
	  HELP_FORCE
	  HELP_UNSAFE_DIRS
	  HELP_LOG
	  "  -h, --help             this help\n",
	  "serve the array CONFIG describes as MOUNTPOINT/<name>" },
	{ "assemble", cmd_assemble,
	  "raidfuse assemble [--ro | --overlay DIR] [--name FILE] [-f] [-d] [-v] [-o OPTS]\n"
	  "                  [--freeze] [--force] [--allow-unsafe-dirs] [--log FILE|stderr|syslog|journal]\n"
	  "                  MOUNTPOINT MEMBER...",
	  "Serve the array the members' md superblocks describe (0.90, 1.0, 1.1, 1.2) as\n"
	  "MOUNTPOINT/array.img, no config needed: members in any order, stale ones left out.\n"
	  "\n"
	  "  -r, --ro, --readonly   open the members read-only; writes fail (EROFS)\n"
	  "  -O, --overlay=DIR      open the members read-only; every write goes to\n"
	  "                         copy-on-write files in DIR (made if needed; the same DIR\n"
	  "                         again continues from there; delete it to throw it away)\n"
	  "  -N, --name=FILE        serve the image as MOUNTPOINT/FILE\n"
	  "  -f, --foreground       stay in the foreground\n"
	  "  -d, --debug            FUSE debug output (implies -f)\n"
	  "  -v, --verbose          verbose log\n"
	  "  -o, --options=OPTS     FUSE mount options (e.g. allow_other), and\n"
	  "                         io_uring=auto|on|off: FUSE over io_uring (default auto)\n"
	  "      --freeze           start with md/sync_action frozen\n"
	  HELP_FORCE
	  HELP_UNSAFE_DIRS
	  HELP_LOG
	  "  -h, --help             this help\n",
	  "serve the array the members' md superblocks describe" },
	{ "stop", cmd_stop,
	  "raidfuse stop [--timeout SECONDS] MOUNTPOINT",
	  "Stop the array served on MOUNTPOINT, as mdadm --stop does: unmount it, then wait\n"
	  "until its daemon has written its last superblocks (clean) and exited, so that the\n"
	  "members may be mounted, assembled or examined at once.  The daemon is the process\n"
	  "that holds the mount's marker (raidfuse list shows its pid); it is not asked\n"
	  "anything.  Exit 1, saying why, when MOUNTPOINT is no raidfuse mount, cannot be\n"
	  "unmounted (a program holds the image open), or the daemon has not exited within\n"
	  "the timeout.\n"
	  "\n"
	  "  -t, --timeout=SECONDS  how long to wait for the daemon (default 60)\n"
	  "  -h, --help             this help\n",
	  "unmount MOUNTPOINT and wait for its daemon to finish" },
	{ "examine", cmd_examine,
	  "raidfuse examine [--json] [-X] [--scan] MEMBER...",
	  "Print each member's md superblock as mdadm --examine does.\n"
	  "\n"
	  "  -s, --scan             one mdadm.conf ARRAY line per array among the members\n"
	  "                         (ARRAY /dev/md/NAME metadata=1.2 UUID=... name=...)\n"
	  "  -J, --json             one JSON object per member, one a line, md's field names\n"
	  "                         (uuid, level, raid_disks, chunk_size, layout, events,\n"
	  "                         dev_role, data_offset, ...; sizes in sectors)\n"
	  "  -X, --examine-bitmap   the member's internal bitmap instead (examine-bitmap)\n"
	  "  -h, --help             this help\n",
	  "print each member's superblock as mdadm --examine does" },
	{ "examine-bitmap", cmd_examine_bitmap,
	  "raidfuse examine-bitmap [--json] MEMBER...",
	  "Print each member's internal write-intent bitmap as mdadm --examine-bitmap (-X)\n"
	  "does: its header (uuid, events, events cleared, state, chunk size, daemon\n"
	  "sleep, write mode, sync size) and how many of its bits are set.\n"
	  "\n"
	  "  -J, --json             one JSON object per member, one a line\n"
	  "  -h, --help             this help\n",
	  "print each member's bitmap as mdadm --examine-bitmap does" },
	{ "list", cmd_list,
	  "raidfuse list [--json]",
	  "List every raidfuse mount of this user (every user's for root), from the mount\n"
	  "table (type fuse.raidfuse, or a source raidfuse:NAME): name, mount point, array\n"
	  "UUID, level, state (clean, active, degraded, resyncing, recovering, checking,\n"
	  "repairing, failed, ...; unreachable when its daemon does not answer), size and the\n"
	  "daemon's pid.\n"
	  "\n"
	  "  -J, --json             one JSON array, an object per mount (size in bytes)\n"
	  "  -h, --help             this help\n",
	  "list the raidfuse mounts: name, mount point, UUID, level, state" },
	{ "status", cmd_status,
	  "raidfuse status [--json] [--watch [SECONDS]] MOUNTPOINT\n"
	  "raidfuse status --detail [--json] MOUNTPOINT\n"
	  "raidfuse status --scan",
	  "Print MOUNTPOINT/mdstat and every attribute under MOUNTPOINT/md.\n"
	  "\n"
	  "  -D, --detail           what mdadm --detail prints (version, sizes, state, device\n"
	  "                         counts, layout, UUID, events, the device table), and exit\n"
	  "                         as mdadm --detail --test: 0 the array is whole, 1 degraded,\n"
	  "                         2 failed (cannot serve), 4 MOUNTPOINT is no raidfuse mount\n"
	  "                         or its files cannot be read\n"
	  "  -s, --scan             an mdadm.conf ARRAY line for each raidfuse mount (after a\n"
	  "                         comment line naming the mount and its mount point)\n"
	  "  -J, --json             one JSON object: md's attribute names and values (integers\n"
	  "                         as numbers), \"devices\" (md/dev-NAME/*), \"mdstat\"\n"
	  "  -w, --watch[=SECONDS]  print mdstat every SECONDS (default 2; also as the next\n"
	  "                         argument) until no resync, recovery, check or repair\n"
	  "                         runs (at once if none does); on a terminal each redraws\n"
	  "                         the screen, as watch cat /proc/mdstat does\n"
	  "  -h, --help             this help\n",
	  "print mdstat and every md attribute; --watch a resync" },
	{ "ctl", cmd_ctl,
	  "raidfuse ctl [--json] MOUNTPOINT ATTR [VALUE]\n"
	  "raidfuse ctl MOUNTPOINT add FILE | fail NAME|PATH | remove NAME | re-add NAME\n"
	  "raidfuse ctl MOUNTPOINT replace NAME|PATH\n"
	  "raidfuse ctl [--wait] [--json] MOUNTPOINT check | repair",
	  "Print md attribute ATTR of the array on MOUNTPOINT, or set it to VALUE, as `cat` and\n"
	  "`echo VALUE >` on MOUNTPOINT/md/ATTR do (VALUE may start with '-', as md's\n"
	  "-faulty).  md's names and units: stripe_cache_size (entries), group_thread_cnt,\n"
	  "worker_groups, rmw_level (0-2), array_state (suspended/active), sync_action,\n"
	  "sync_speed_min/max (KiB/s), dev-NAME/state, dev-NAME/fault (fault injection, e.g.\n"
	  "\"error=EIO rate=0.5 ops=write\" or \"off\"), ...  (man raidfuse lists them all)\n"
	  "\n"
	  "  add FILE|URI           add FILE (or an NBD export) as a spare (md/new_dev)\n"
	  "  fail NAME|PATH         mark device NAME (a member file's base name), or the one at\n"
	  "                         PATH, faulty (the last copy of some data: refused, busy)\n"
	  "  remove NAME            take faulty or spare device NAME out of the array\n"
	  "  re-add NAME            put failed device NAME back (md's --re-add: with a bitmap\n"
	  "                         only what it missed is rebuilt; an NBD member reconnects)\n"
	  "  replace NAME|PATH      hot replace (mdadm --replace, md's want_replacement): a\n"
	  "                         spare is filled with the device's data while it serves,\n"
	  "                         then takes its slot; the device is left faulty.  The first\n"
	  "                         spare is taken (add one first); none: the next one added\n"
	  "  check, repair          start md's check or repair (md/sync_action)\n"
	  "  -W, --wait             with check, repair or sync_action check|repair|resync|\n"
	  "                         recover: wait until it ends, a progress line on stderr,\n"
	  "                         then print mismatch_cnt (exit 0 whatever it is; 1 if the\n"
	  "                         action was frozen meanwhile)\n"
	  "  -J, --json             print what is read as a JSON object\n"
	  "  -h, --help             this help\n",
	  "read or set an md attribute; add, fail, remove; check, repair" },
	{ "grow", cmd_grow,
	  "raidfuse grow MOUNTPOINT (--raid-devices N | --level L | --layout L | --chunk C)\n"
	  "              [--add FILE]... [--wait]\n"
	  "raidfuse grow MOUNTPOINT [--size S|max] [--array-size A|max]",
	  "Grow the raid4/5/6 array on MOUNTPOINT to N members online, as mdadm --grow\n"
	  "--raid-devices does: each FILE is added as a spare (md/new_dev), then N is written to\n"
	  "md/raid_disks.  The spares take the new slots and the reshape moves the data to the\n"
	  "new geometry while the array is served; the image grows when it ends (man raidfuse:\n"
	  "Reshapes).  A raid0 grows as mdadm grows one: through a raid4 of one member more\n"
	  "whose P slot stays empty, a raid0 again at the end (after a restart too, when the\n"
	  "config names the raid0); a raid1 takes N mirrors.  --level 6 turns a raid4/5 into a\n"
	  "raid6 by one spare, as mdadm --grow --level=6 does (raid6 is written to md/level).\n"
	  "md's takeovers move no data:\n"
	  "--level 5 takes a raid4, a raid6 whose Q is on its last member (a -6 layout), or a\n"
	  "raid1 of two (then --raid-devices N grows it) over; --level 4 or 5 makes a raid0 a\n"
	  "parity-last array of one member more, that slot empty until a spare (--add) is\n"
	  "rebuilt into it; --level 4 takes a raid5 of the parity-last layout, --level 1 a\n"
	  "raid5 of two, --level 0 a parity-last raid4/5 (its P member leaves the array).\n"
	  "--level 10 makes a raid0 a near-2 raid10 of twice the members (member i in slot\n"
	  "2i, the copies' slots empty until spares are rebuilt into them); --level 0 keeps\n"
	  "one copy of each pair of a near-2 raid10, or one member of a raid1, as a raid0 (the\n"
	  "other copies leave the array).\n"
	  "--wait also waits for the rebuild or resync after.  --layout (md's name or number) and\n"
	  "--chunk (KiB, or with a suffix) restripe the same members (md/layout, md/chunk_size),\n"
	  "one change at a time.  --size (md/component_size) makes each member use S (KiB\n"
	  "unless suffixed), or with max all the smallest device holds now (members grown or\n"
	  "replaced by larger ones), as mdadm --grow --size: the superblocks record it, the\n"
	  "image grows and the new rows are resynced.  --array-size (md/array_size) makes the\n"
	  "image serve A, at most what the members hold, not recorded (max: all of it again);\n"
	  "a shrink sets it first, then --size.  Fewer --raid-devices shrink a raid4/5/6 once\n"
	  "--array-size cut the image to what they hold (md's backward reshape; each member\n"
	  "needs a chunk free after its data: --size a chunk smaller); the members dropped end\n"
	  "as spares.  A refusal's reason is in the daemon's log.\n"
	  "\n"
	  "  -n, --raid-devices=N   the member count to grow (or shrink) to\n"
	  "  -l, --level=L          6: raid4/5 to raid6, one member more; 5: raid4, raid6\n"
	  "                         of a -6 layout, raid1 of two or raid0 to raid5; 4: raid0\n"
	  "                         or raid5 parity-last to raid4; 1: raid5 of two; 0: raid4/5\n"
	  "                         parity-last, raid10 near-2 or raid1; 10: raid0\n"
	  "  -p, --layout=L         a raid5/6 layout of the level\n"
	  "  -c, --chunk=C          a chunk size (a power of two, 4K or more)\n"
	  "  -a, --add=FILE         a spare to add first (again for more)\n"
	  "  -z, --size=S|max       the size each member uses (raid1/4/5/6/10)\n"
	  "  -Z, --array-size=A|max the size the image serves\n"
	  "  -W, --wait             wait until the reshape ends, a progress line on stderr,\n"
	  "                         then print md/array_size\n"
	  "  -h, --help             this help\n",
	  "grow a raid4/5/6 by members, or any array's size, online" },
	{ "detect", cmd_detect,
	  "raidfuse detect [--level L] [--members N] [--max-offset SIZE] [--json]\n"
	  "                [--write-config FILE] [--allow-unsafe-dirs] MEMBER... [missing]",
	  "Find the array the members are, from their contents alone (no superblock needed):\n"
	  "level, member order, chunk, layout, data offset and size, ranked by evidence (parity\n"
	  "or copies, data running on across chunk boundaries, a partition table or file\n"
	  "system whose metadata lands where it says).  Members are only read, and only\n"
	  "samples of them.  Superblocks found are shown as hints.  Exit 1 when no candidate\n"
	  "is a confident answer (the list is still printed).\n"
	  "\n"
	  "  -l, --level=L          only this level (0, 1, 4, 5, 6, 10)\n"
	  "  -n, --members=N        the array has N members (those not given are missing)\n"
	  "  -m, --max-offset=SIZE  largest data offset to look for (default 64M)\n"
	  "  -w, --write-config=FILE\n"
	  "                         write a config for the best candidate (mount CONFIG); an\n"
	  "                         existing FILE is not overwritten\n"
	  "  -J, --json             one JSON object: verdict, bytes_read, candidates\n"
	  HELP_UNSAFE_DIRS
	  "  -h, --help             this help\n",
	  "find an array's geometry from its members' contents" },
	{ "monitor", cmd_monitor,
	  "raidfuse monitor [--scan | MOUNTPOINT...] [--program PROG] [--mail ADDR] [--syslog]\n"
	  "                 [--oneshot] [--test] [--delay N] [--increment N] [--daemonise]\n"
	  "                 [--pid-file FILE] [--program-timeout N]",
	  "Watch arrays as mdadm --monitor does: every N seconds read each mount's md files\n"
	  "and tell md's events: Fail, FailSpare, SpareActive, RebuildStarted, RebuildNN,\n"
	  "RebuildFinished, DegradedArray, NewArray, DeviceDisappeared, TestMessage.  Without\n"
	  "MOUNTPOINT (or with --scan): every raidfuse mount of this user, those mounted later\n"
	  "too.  Each event is printed on stdout (unless daemonised) and goes to each way given.\n"
	  "SIGTERM or SIGINT ends the monitor (exit 0; its pid file removed).\n"
	  "\n"
	  "  -s, --scan             every raidfuse mount (the default without MOUNTPOINT)\n"
	  "  -p, --program, --alert=PROG\n"
	  "                         run PROG EVENT MOUNTPOINT [MEMBER] for each event (no\n"
	  "                         shell); killed when it runs longer than --program-timeout\n"
	  "  -m, --mail=ADDR        mail Fail, FailSpare, DegradedArray and TestMessage to ADDR\n"
	  "                         through " RF_MON_SENDMAIL " -t\n"
	  "  -y, --syslog           log each event to syslog (LOG_DAEMON; crit for failures)\n"
	  "  -1, --oneshot          look once (DegradedArray for a degraded array), then exit\n"
	  "  -t, --test             a TestMessage for each array at the start\n"
	  "  -d, --delay=N          seconds between looks (default 60)\n"
	  "  -r, --increment=N      RebuildNN every N percent (default 20)\n"
	  "  -f, --daemonise        detach (needs --program, --mail or --syslog)\n"
	  "  -i, --pid-file=FILE    write the monitor's pid to FILE; refused while FILE names\n"
	  "                         a monitor that runs\n"
	  "      --program-timeout=N\n"
	  "                         seconds PROG and sendmail may run (default 30)\n"
	  "  -h, --help             this help\n",
	  "tell md's events (Fail, rebuilds, ...) as mdadm --monitor does" },
	{ "help", cmd_help, "raidfuse help [COMMAND]", "Print the help of COMMAND, or of raidfuse.\n",
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL }
};

static void print_usage(FILE *out, const struct cmd *c)
{
	bool first = true;

	if (c) {
		print_synopsis(out, c, &first);
		fprintf(out, "(raidfuse %s --help says what each option does)\n", c->name);
		return;
	}
	for (c = cmds; c->name; c++)
		if (c->summary)
			print_synopsis(out, c, &first);
	fprintf(out, "       raidfuse help [COMMAND] | --help | --version\n");
}

static void print_main_help(void)
{
	const struct cmd *c;

	print_usage(stdout, NULL);
	printf("\nraidfuse is Linux md in user space: it serves a RAID array of member files\n"
	       "(or block devices) through FUSE as one regular file.\n\nCommands:\n");
	for (c = cmds; c->name; c++)
		if (c->summary)
			printf("  %-16s%s\n", c->name, c->summary);
	printf("\nOptions go before, between or after the arguments; -- ends them.\n"
	       "`raidfuse COMMAND --help` lists the command's options; man raidfuse(8) says more.\n"
	       "Stop a mounted array with: raidfuse stop MOUNTPOINT\n\n%s", exit_text);
}

static const struct cmd *find_cmd(const char *name)
{
	const struct cmd *c;

	for (c = cmds; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

static int cmd_help(int argc, char **argv)
{
	static const struct option lo[] = { OPT_HELP, OPT_END };
	const struct cmd *c = NULL;
	int ch, rc = -1;

	while ((ch = opt_next(argc, argv, "-:h", lo, &rc)) != -1) {
		if (c)
			return usage_error("help: expected one COMMAND, got also '%s'", optarg);
		c = find_cmd(optarg);
		if (!c)
			return usage_error("help: no command '%s'", optarg);
	}
	if (rc >= 0)
		return rc;
	if (c)
		print_help(stdout, c);
	else
		print_main_help();
	return 0;
}

/* `raidfuse CONFIG MOUNTPOINT -o OPTS` (mount.fuse3, /etc/fstab: fstab.h) is
 * `raidfuse mount` with those options. */
static int fstab_mount(int argc, char **argv)
{
	char err[512], **av;
	int ac, rc;

	cur_cmd = find_cmd("mount");
	if (rf_fstab_args(argc, argv, &ac, &av, err, sizeof(err)))
		return usage_error("%s: %s", argv[1], err);
	rc = cur_cmd->run(ac, av);
	rf_fstab_free(av);
	return rc;
}

int main(int argc, char **argv)
{
	const struct cmd *c;

	rf_stack_set(&rf_stack_default);
	if (argc < 2)
		return usage_error("expected a command");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		print_main_help();
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
#ifdef RF_BREAK_STALE_ROLE
		printf("raidfuse %s (break: stale-role, a test build that takes back members md leaves out)\n",
		       RF_VERSION);
#else
		printf("raidfuse %s\n", RF_VERSION);
#endif
		return 0;
	}
	c = find_cmd(argv[1]);
	if (c) {
		cur_cmd = c;
		return c->run(argc - 1, argv + 1);
	}
	if (rf_fstab_form(argc, argv))
		return fstab_mount(argc, argv);
	if (argv[1][0] == '-')
		return usage_error("unknown option '%s' (options follow the command)", argv[1]);
	return usage_error("unknown command '%s' (expected create, mount, assemble, stop, list, examine, detect, status, ctl or monitor)",
			   argv[1]);
}
