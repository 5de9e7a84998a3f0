/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cli.h - what the raidfuse commands (src/front/cmd_*.c) share.
 *
 * cmds.c holds the command table and parses with getopt_long for every
 * command: rf_cli_main(), rf_cli_opt_next(), rf_cli_usage_error() and
 * rf_cli_long_name() are its.  cli.c holds the helpers several commands use: the control
 * files under a mount, one mount read in a child, waits.  Each command's
 * entry point, rf_cmd_NAME(argc, argv) (argv[0] the command), returns the
 * exit status: 0 done, 1 failed (the message says what and where),
 * EXIT_USAGE a usage error (status --detail: mdadm --detail --test's).
 *
 * What it does NOT do: hold anything one command alone uses; that stays
 * static in the command's file.
 */
#ifndef RAIDFUSE_FRONT_CLI_H
#define RAIDFUSE_FRONT_CLI_H

#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "raidfuse/detail.h"

struct rf_json;
struct rf_mount_ent;

#define EXIT_USAGE 2

/* Every command's getopt_long has these; the read commands --json. */
#define OPT_HELP { "help", no_argument, NULL, 'h' }
#define OPT_END { NULL, 0, NULL, 0 }
#define OPT_JSON { "json", no_argument, NULL, 'J' }

/* The long options' vals of mount and assemble (cmd_serve.c); detect's
 * --allow-unsafe-dirs is O_ALLOW_UNSAFE too. */
enum { O_FREEZE = 300, O_RO, O_OVERLAY, O_NAME, O_FORCE, O_ALLOW_UNSAFE, O_NULL, O_LOG };

/* cmds.c: the command line, options and usage errors. */

/* Run the command argv names (argv[0] the program): its exit status. */
int rf_cli_main(int argc, char **argv);

/* A usage error: one line naming what is wrong, then the usage of the
 * command running (all of it when none is).  Returns EXIT_USAGE. */
int rf_cli_usage_error(const char *fmt, ...);

/* The long name of the option whose val is v, for messages. */
const char *rf_cli_long_name(const struct option *lo, int v);

/* The next option of argv (argv[0] the command), as getopt_long returns
 * it: 1 for a positional argument (in optarg; those after "--" too), -1
 * at the end.  shortopts must start with "-:".  -h/--help prints the
 * command's help, a mistake the error and the usage; both end the loop
 * (-1) with *rc set to the exit status (0 or EXIT_USAGE), which is
 * otherwise left alone.  One command runs per process: once getopt_long
 * has ended, the rest of argv are positionals. */
int rf_cli_opt_next(int argc, char **argv, const char *shortopts, const struct option *lo, int *rc);

/* cli.c: the control files under a mount. */

/* Why MOUNTPOINT has no control files, for an error about one of them. */
void rf_cli_not_served(const char *mnt, const char *what, int err);

/* MOUNTPOINT/md/ATTR's first line into buf (size bytes), the newline
 * cut.  Returns its length or -errno (reported, when report). */
int rf_cli_read_attr(const char *mnt, const char *attr, char *buf, size_t size, bool report);
/* --backup-file FILE of cmd (mdadm's backup file of a reshape in place):
 * made absolute into abs (the daemon runs elsewhere), created if need be
 * and opened for writing now, so a file that cannot be is said at once.
 * 0, or 1 with a message naming it. */
int rf_cli_backup_file(const char *cmd, const char *arg, char *abs, size_t len);

/* A control file's text as a JSON value: a decimal integer as a number,
 * anything else as a string without its last newline ("0.90" stays a
 * string: md's words, not a number). */
void rf_cli_json_ctl_value(struct rf_json *j, char *text);

/* name's control file text as typed JSON (typed by the file's base name),
 * the key(s) included: md's "none" as null, a number as a number, "done /
 * total" as {"done":N,"total":N}, "N (system)" as N with NAME_source
 * beside it, the fault spec as an object (null when off, its counters
 * then left out), a timeout ("5", "500ms") as seconds; any other text as
 * a string. */
void rf_cli_json_ctl_typed(struct rf_json *j, const char *name, char *text);

/* Whether a resync, recovery, check or repair runs: md/sync_action is
 * neither idle nor frozen (an array without one, raid0, runs none). */
bool rf_cli_sync_running(const char *mnt);

/* cli.c: one mount read in a child, waits. */

/* How long list and monitor wait for one mount's files: a daemon that is
 * stopped or stuck does not answer, and list goes on without it. */
#define LIST_MOUNT_TIMEOUT_MS 5000

/* What a child read of one mount, in memory shared with the parent. */
struct rf_cli_mount_read {
	int r;
	char err[PATH_MAX + 512];
	struct rf_detail d;
};

/* Whether a mount is one `raidfuse list` shows: a raidfuse mount (by its
 * name) of this user (every user's for root). */
bool rf_cli_listed_mount(const struct rf_mount_ent *m);

/* Read mnt's files into *mr in a child, which is killed (a read of a FUSE
 * file that waits for its daemon ends on SIGKILL) when it has not ended
 * within timeout_ms.  0, or -errno with mr->err. */
int rf_cli_read_mount(const char *mnt, struct rf_cli_mount_read *mr, int timeout_ms);

/* Sleep s seconds (fractions too), a signal's interruption resumed. */
void rf_cli_sleep_secs(double s);

/* A --watch interval: seconds, 0.1 to 86400 (watch(1) takes fractions). */
bool rf_cli_parse_secs(const char *s, double *out);

/* Wait for the process behind pidfd (or pid, without one) to exit, until
 * deadline (CLOCK_MONOTONIC ms).  True once it has. */
bool rf_cli_wait_exit(int pidfd, pid_t pid, int64_t deadline);

/* The commands, each in its file: cmd_NAME.c, mount and assemble in
 * cmd_serve.c, examine-bitmap in cmd_examine.c, list in cmd_status.c. */

/* create CONFIG: make the members, write their superblocks. */
int rf_cmd_create(int argc, char **argv);
/* examine MEMBER...: each member's superblock as mdadm --examine prints it. */
int rf_cmd_examine(int argc, char **argv);
/* examine-bitmap MEMBER...: examine -X, each member's bitmap. */
int rf_cmd_examine_bitmap(int argc, char **argv);
/* mount CONFIG MOUNTPOINT: serve the array CONFIG describes. */
int rf_cmd_mount(int argc, char **argv);
/* assemble MOUNTPOINT MEMBER...: serve the array the superblocks describe. */
int rf_cmd_assemble(int argc, char **argv);
/* list [--json]: every raidfuse mount of this user. */
int rf_cmd_list(int argc, char **argv);
/* status [--json] [--watch [SECONDS]] MOUNTPOINT, status --detail
 * [--json] MOUNTPOINT, status --scan */
int rf_cmd_status(int argc, char **argv);
/* monitor [--scan | MOUNTPOINT...] [--program PROG] [--mail ADDR] [--syslog]
 * [--oneshot] [--test] [--delay N] [--increment N] [--daemonise]
 * [--pid-file FILE] [--program-timeout N]: mdadm --monitor for raidfuse
 * mounts. */
int rf_cmd_monitor(int argc, char **argv);
/* ctl [--json] MOUNTPOINT ATTR [VALUE], the device verbs, check/repair. */
int rf_cmd_ctl(int argc, char **argv);
/* `raidfuse grow MNT --raid-devices N | --level 6 | --layout L | --chunk C
 * [--add FILE]...`: mdadm --grow's words over md's files: each FILE to
 * md/new_dev (a spare), then N to md/raid_disks, raid6 to md/level, L to
 * md/layout or C (KiB unless suffixed) to md/chunk_size; --wait: until
 * md/reshape_position says none. */
int rf_cmd_grow(int argc, char **argv);
/* stop [--timeout SECONDS] MOUNTPOINT: unmount, then wait until the daemon
 * has written its last superblocks and exited. */
int rf_cmd_stop(int argc, char **argv);
/* detect [--level L] [--members N] [--max-offset SIZE] [--json]
 * [--write-config FILE] MEMBER... [missing]: the ranked geometries the
 * members may be an array of (src/commands/detect.c); exit 1 without a
 * confident answer. */
int rf_cmd_detect(int argc, char **argv);

#endif
