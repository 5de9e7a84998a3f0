/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cmds.c - the raidfuse command line: the commands and their options.
 *
 *   raidfuse create CONFIG [-f] [--assume-clean] [-b internal|none] [--bitmap-chunk SIZE]
 *   raidfuse mount [--ro | --overlay DIR] CONFIG MOUNTPOINT [-f] [-d] [-v] [-o OPTS] [--freeze] [--force]
 *                  [--backup-file FILE]   (assemble too)
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
 * This file holds the command table (each command's synopsis, help and
 * one-line summary), the option helpers every command parses with
 * (rf_cli_opt_next(), rf_cli_usage_error(): cli.h), help and usage, the
 * fstab form and the dispatch (rf_cli_main(), main.c's whole work).  Each
 * command runs in a file of its own:
 * cmd_create.c, cmd_examine.c (examine, examine-bitmap), cmd_serve.c
 * (mount, assemble), cmd_status.c (status, list), cmd_monitor.c,
 * cmd_ctl.c, cmd_grow.c, cmd_stop.c and cmd_detect.c; cli.c holds what
 * several of them share (the control files under a mount, one mount read
 * in a child, waits).
 *
 * What it does NOT do: any command's work beyond help and usage; the
 * cmd_*.c files do it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "raidfuse/fstab.h"
#include "raidfuse/monitor.h"

#include "front/cli.h"

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

int rf_cli_usage_error(const char *fmt, ...)
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

const char *rf_cli_long_name(const struct option *lo, int v)
{
	for (; lo->name; lo++)
		if (lo->val == v)
			return lo->name;
	return NULL;
}

int rf_cli_opt_next(int argc, char **argv, const char *shortopts, const struct option *lo, int *rc)
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
			*rc = rf_cli_usage_error("%s: option '%s' needs a value", cmd, name);
		else
			*rc = rf_cli_usage_error("%s: option '-%c' needs a value", cmd, optopt);
		return -1;
	}
	if (ch == '?') {
		/* A known val means the long form was given a value it does
		 * not take (--force=1); glibc leaves optopt 0 for an unknown
		 * or ambiguous long option, which optind has passed. */
		name = optopt ? rf_cli_long_name(lo, optopt) : NULL;
		if (name)
			*rc = rf_cli_usage_error("%s: option '--%s' takes no value", cmd, name);
		else if (optopt)
			*rc = rf_cli_usage_error("%s: unknown option '-%c'", cmd, optopt);
		else
			*rc = rf_cli_usage_error("%s: unknown option '%s'", cmd, argv[optind - 1]);
		return -1;
	}
	return ch;
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
	{ "create", rf_cmd_create,
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
	{ "mount", rf_cmd_mount,
	  "raidfuse mount [--ro | --overlay DIR] CONFIG MOUNTPOINT [-f] [-d] [-v] [-o OPTS]\n"
	  "               [--freeze] [--force] [--allow-unsafe-dirs] [--log FILE|stderr|syslog|journal]\n"
	  "               [--backup-file FILE]\n"
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
	  "      --backup-file=FILE mdadm's backup file of a grow in place (as array.backup_file):\n"
	  "                         a reshape stopped in its critical section is restored\n"
	  "                         from it before the array serves (needed there)\n"
	  HELP_FORCE
	  HELP_UNSAFE_DIRS
	  HELP_LOG
	  "  -h, --help             this help\n",
	  "serve the array CONFIG describes as MOUNTPOINT/<name>" },
	{ "assemble", rf_cmd_assemble,
	  "raidfuse assemble [--ro | --overlay DIR] [--name FILE] [-f] [-d] [-v] [-o OPTS]\n"
	  "                  [--freeze] [--force] [--allow-unsafe-dirs] [--log FILE|stderr|syslog|journal]\n"
	  "                  [--backup-file FILE] MOUNTPOINT MEMBER...",
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
	  "      --backup-file=FILE mdadm's backup file of a grow in place (grow --backup-file):\n"
	  "                         a reshape stopped in its critical section is restored\n"
	  "                         from it before the array serves (needed there)\n"
	  HELP_FORCE
	  HELP_UNSAFE_DIRS
	  HELP_LOG
	  "  -h, --help             this help\n",
	  "serve the array the members' md superblocks describe" },
	{ "stop", rf_cmd_stop,
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
	{ "examine", rf_cmd_examine,
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
	{ "examine-bitmap", rf_cmd_examine_bitmap,
	  "raidfuse examine-bitmap [--json] MEMBER...",
	  "Print each member's internal write-intent bitmap as mdadm --examine-bitmap (-X)\n"
	  "does: its header (uuid, events, events cleared, state, chunk size, daemon\n"
	  "sleep, write mode, sync size) and how many of its bits are set.\n"
	  "\n"
	  "  -J, --json             one JSON object per member, one a line\n"
	  "  -h, --help             this help\n",
	  "print each member's bitmap as mdadm --examine-bitmap does" },
	{ "list", rf_cmd_list,
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
	{ "status", rf_cmd_status,
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
	{ "ctl", rf_cmd_ctl,
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
	{ "grow", rf_cmd_grow,
	  "raidfuse grow MOUNTPOINT (--raid-devices N | --level L | --layout L | --chunk C)\n"
	  "              [--add FILE]... [--backup-file FILE] [--wait]\n"
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
	  "as spares.  A grow, --layout or --chunk with no room before the data takes\n"
	  "--backup-file FILE, as mdadm's: the data stays in place and FILE holds each window\n"
	  "of the reshape's critical section first (a relayout's every window; keep it until\n"
	  "the reshape ended; assemble and mount take it after a crash).  A refusal's reason\n"
	  "is in the daemon's log.\n"
	  "\n"
	  "  -n, --raid-devices=N   the member count to grow (or shrink) to\n"
	  "  -l, --level=L          6: raid4/5 to raid6, one member more; 5: raid4, raid6\n"
	  "                         of a -6 layout, raid1 of two or raid0 to raid5; 4: raid0\n"
	  "                         or raid5 parity-last to raid4; 1: raid5 of two; 0: raid4/5\n"
	  "                         parity-last, raid10 near-2 or raid1; 10: raid0\n"
	  "  -p, --layout=L         a raid5/6 layout of the level\n"
	  "  -c, --chunk=C          a chunk size (a power of two, 4K or more)\n"
	  "  -a, --add=FILE         a spare to add first (again for more)\n"
	  "  -B, --backup-file=FILE with --raid-devices, --layout or --chunk: mdadm's backup\n"
	  "                         file, for a reshape with no room before the data\n"
	  "                         (written to md/backup_file)\n"
	  "  -z, --size=S|max       the size each member uses (raid1/4/5/6/10)\n"
	  "  -Z, --array-size=A|max the size the image serves\n"
	  "  -W, --wait             wait until the reshape ends, a progress line on stderr,\n"
	  "                         then print md/array_size\n"
	  "  -h, --help             this help\n",
	  "grow a raid4/5/6 by members, or any array's size, online" },
	{ "detect", rf_cmd_detect,
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
	{ "monitor", rf_cmd_monitor,
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

	while ((ch = rf_cli_opt_next(argc, argv, "-:h", lo, &rc)) != -1) {
		if (c)
			return rf_cli_usage_error("help: expected one COMMAND, got also '%s'", optarg);
		c = find_cmd(optarg);
		if (!c)
			return rf_cli_usage_error("help: no command '%s'", optarg);
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
		return rf_cli_usage_error("%s: %s", argv[1], err);
	rc = cur_cmd->run(ac, av);
	rf_fstab_free(av);
	return rc;
}

int rf_cli_main(int argc, char **argv)
{
	const struct cmd *c;

	if (argc < 2)
		return rf_cli_usage_error("expected a command");
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
		return rf_cli_usage_error("unknown option '%s' (options follow the command)", argv[1]);
	return rf_cli_usage_error("unknown command '%s' (expected create, mount, assemble, stop, list, examine, detect, status, ctl or monitor)",
				  argv[1]);
}
