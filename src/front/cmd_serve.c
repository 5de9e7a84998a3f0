/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cmd_serve.c - `raidfuse mount` and `raidfuse assemble`: serve an array
 * through FUSE.
 *
 * mount serves the array a config describes, after checking it against the
 * members' superblocks, if they have any; assemble serves the array the
 * members' superblocks describe, no config needed.  Both start the resync
 * the superblocks say is due (not cleanly shut down, or created without
 * --assume-clean) once the array serves, as md does, unless --freeze.
 *
 * Both take the same serving options (-f -d -v -o OPTS --freeze --force
 * --allow-unsafe-dirs --log), refuse a config that names one device twice,
 * wait for members held by a raidfuse that is stopping and refuse those
 * held by one that serves (holder.h), and with --overlay DIR open the
 * members read-only, every write going to copy-on-write files in DIR.
 *
 * What it does NOT do: read superblocks, choose members or check the
 * geometry (rf_assemble(), rf_assemble_check_config(): commands/assemble.c),
 * open the array (rf_array_open()) or answer FUSE requests (rf_fuse_run():
 * fuse_serve.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "raidfuse/array.h"
#include "raidfuse/assemble.h"
#include "raidfuse/config.h"
#include "raidfuse/daemon.h"
#include "raidfuse/devopen.h"
#include "raidfuse/fuse.h"
#include "raidfuse/holder.h"
#include "raidfuse/log.h"
#include "raidfuse/memberid.h"
#include "raidfuse/nbd.h"

#include "front/cli.h"

static int load(const char *path, struct rf_config *cfg)
{
	char err[1024];
	int ret = rf_config_load(path, cfg, err, sizeof(err));

	if (ret)
		fprintf(stderr, "raidfuse: %s\n", err);
	return ret;
}

/* Options both mount and assemble take: -f -d -v -o OPTS --freeze (their vals:
 * cli.h). */
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
		rf_devopen_allow_unsafe_dirs(true);
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

int rf_cmd_mount(int argc, char **argv)
{
	static const struct option lo[] = {
		SERVE_LONGOPTS,
		{ "ro", no_argument, NULL, 'r' },
		{ "readonly", no_argument, NULL, 'r' },
		{ "overlay", required_argument, NULL, 'O' },
		{ "backup-file", required_argument, NULL, 'B' },
		OPT_END
	};
	struct rf_fuse_opts o = { 0 };
	struct rf_config cfg;
	const char *pos[2] = { NULL, NULL }, *overlay = NULL;
	const char *backup_arg = NULL;
	char backup[PATH_MAX] = "";
	bool ro = false;
	char err[1024];
	int npos = 0, ch, rc = -1;

	while ((ch = rf_cli_opt_next(argc, argv, "-:" SERVE_SHORTOPTS "rO:", lo, &rc)) != -1) {
		if (serve_option(ch, &o))
			continue;
		if (ch == 'r') {
			ro = true;
			continue;
		}
		if (ch == 'B') {
			backup_arg = optarg;
			continue;
		}
		if (ch == 'O') {
			overlay = optarg;
			continue;
		}
		if (npos >= 2)
			return rf_cli_usage_error("mount: expected CONFIG MOUNTPOINT, got also '%s'", optarg);
		pos[npos++] = optarg;
	}
	if (rc >= 0)
		return rc;
	if (npos < 2)
		return rf_cli_usage_error("mount: expected CONFIG MOUNTPOINT");
	if (log_option(&o) || (backup_arg && rf_cli_backup_file("mount", backup_arg, backup, sizeof(backup))))
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
	/* --backup-file over the config's array.backup_file */
	if (backup[0]) {
		free(cfg.backup_file);
		if (!(cfg.backup_file = strdup(backup))) {
			rf_config_free(&cfg);
			return 1;
		}
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
		return rf_cli_usage_error("assemble: more than %d members ('%s')", RF_MAX_MEMBERS, arg);
	return 0;
}

int rf_cmd_assemble(int argc, char **argv)
{
	static const struct option lo[] = {
		SERVE_LONGOPTS,
		{ "ro", no_argument, NULL, 'r' },
		{ "readonly", no_argument, NULL, 'r' },
		{ "overlay", required_argument, NULL, 'O' },
		{ "name", required_argument, NULL, 'N' },
		{ "backup-file", required_argument, NULL, 'B' },
		OPT_END
	};
	struct rf_fuse_opts o = { 0 };
	struct rf_config cfg;
	const char *name = NULL, *members[RF_MAX_MEMBERS], *overlay = NULL, *backup_arg = NULL;
	char backup[PATH_MAX] = "";
	bool ro = false;
	char err[1024];
	int n = 0, ch, rc = -1;

	while ((ch = rf_cli_opt_next(argc, argv, "-:" SERVE_SHORTOPTS "rO:N:", lo, &rc)) != -1) {
		if (serve_option(ch, &o))
			continue;
		switch (ch) {
		case 'r':
			ro = true;
			break;
		case 'O':
			overlay = optarg;
			break;
		case 'B':
			backup_arg = optarg;
			break;
		case 'N':
			name = optarg;
			if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
				return rf_cli_usage_error("assemble: --name '%s' is not a plain file name", name);
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
		return rf_cli_usage_error("assemble: expected MOUNTPOINT MEMBER...");
	if (ro && overlay)
		return rf_cli_usage_error("assemble: --ro and --overlay exclude each other (--overlay already keeps "
					  "the members as they are)");
	if (log_option(&o) || (backup_arg && rf_cli_backup_file("assemble", backup_arg, backup, sizeof(backup))))
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
	if (backup[0] && !(cfg.backup_file = strdup(backup))) {
		rf_config_free(&cfg);
		return 1;
	}
	return serve(&cfg, &o);
}
