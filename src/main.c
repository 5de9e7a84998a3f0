/* main.c - the raidfuse command line.
 *
 *   raidfuse create CONFIG [--force]
 *   raidfuse mount CONFIG MOUNTPOINT [-f] [-d] [-v] [-o OPTS]
 *
 * create makes the member files the config names (member_size bytes of
 * zeros: an array of zeros has zero parity, so it starts in sync).  It
 * checks the whole config and every member before it creates or truncates
 * anything, and leaves existing non-empty members alone unless --force.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raidfuse/array.h"
#include "raidfuse/config.h"
#include "raidfuse/fuse.h"
#include "raidfuse/log.h"
#include "raidfuse/super.h"

static const char usage_text[] =
	"usage: raidfuse create CONFIG [--force]\n"
	"       raidfuse mount CONFIG MOUNTPOINT [-f] [-d] [-v] [-o OPTS]\n"
	"       raidfuse --help | --version\n"
	"\n"
	"  create    make the member files CONFIG names that do not exist yet\n"
	"            (member_size bytes each); --force also recreates non-empty ones\n"
	"  mount     assemble the array and serve it as MOUNTPOINT/<name>;\n"
	"            stop with: fusermount3 -u MOUNTPOINT\n"
	"    -f      stay in the foreground\n"
	"    -d      FUSE debug output (implies -f)\n"
	"    -v      verbose log\n"
	"    -o OPTS FUSE mount options (e.g. allow_other)\n";

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "raidfuse: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n%s", usage_text);
	return 2;
}

static int load(const char *path, struct rf_config *cfg)
{
	char err[1024];
	int ret = rf_config_load(path, cfg, err, sizeof(err));

	if (ret)
		fprintf(stderr, "raidfuse: %s\n", err);
	return ret;
}

static int cmd_create(int argc, char **argv)
{
	struct rf_config cfg;
	bool force = false;
	const char *path = NULL;
	int i, bad = 0, ret;
	uint8_t action[RF_MAX_MEMBERS];     /* 0 keep, 1 create/resize */

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--force"))
			force = true;
		else if (argv[i][0] == '-')
			return usage_error("create: unknown option '%s'", argv[i]);
		else if (!path)
			path = argv[i];
		else
			return usage_error("create: expected one CONFIG, got also '%s'", argv[i]);
	}
	if (!path)
		return usage_error("create: expected CONFIG%s", "");
	if (load(path, &cfg))
		return 1;
	/* Look at every member first; touch none until all are fine. */
	for (i = 0; i < cfg.nmembers; i++) {
		const char *m = cfg.members[i];
		struct stat st;

		action[i] = 0;
		if (!m)
			continue;
		if (stat(m, &st)) {
			if (errno != ENOENT) {
				fprintf(stderr, "raidfuse: member %d (%s): %s\n", i, m, strerror(errno));
				bad++;
				continue;
			}
			action[i] = 1;
		} else if (S_ISBLK(st.st_mode)) {
			continue;       /* a device is used as it is */
		} else if (!S_ISREG(st.st_mode)) {
			fprintf(stderr, "raidfuse: member %d (%s): not a regular file or block device\n", i, m);
			bad++;
			continue;
		} else if (st.st_size && !force) {
			fprintf(stderr, "raidfuse: member %d (%s): exists with data (%lld bytes); not touched "
				"(--force recreates it)\n", i, m, (long long)st.st_size);
			bad++;
			continue;
		} else {
			action[i] = 1;
		}
		if (action[i] && !cfg.member_size) {
			fprintf(stderr, "raidfuse: %s: key 'array.member_size' is needed to create member %d (%s)\n",
				path, i, m);
			bad++;
		}
	}
	if (bad) {
		rf_config_free(&cfg);
		return 1;
	}
	ret = 0;
	for (i = 0; i < cfg.nmembers; i++) {
		int fd;

		if (!action[i])
			continue;
		fd = open(cfg.members[i], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0 || ftruncate(fd, 0) || ftruncate(fd, (off_t)cfg.member_size)) {
			fprintf(stderr, "raidfuse: member %d (%s): %s\n", i, cfg.members[i], strerror(errno));
			ret = 1;
		} else {
			printf("member %d: %s (%llu bytes)\n", i, cfg.members[i], (unsigned long long)cfg.member_size);
		}
		if (fd >= 0)
			close(fd);
	}
	rf_config_free(&cfg);
	return ret;
}

/* examine MEMBER...: each member's superblock as mdadm --examine prints it;
 * exit 1 if any member has none or a damaged one (the rest still print). */
static int cmd_examine(int argc, char **argv)
{
	struct rf_sb *sb;
	char err[1024];
	int i, ret = 0;

	if (argc < 2)
		return usage_error("examine: expected MEMBER...%s", "");
	for (i = 1; i < argc; i++)
		if (argv[i][0] == '-')
			return usage_error("examine: unknown option '%s'", argv[i]);
	sb = malloc(sizeof(*sb));
	if (!sb)
		return 1;
	for (i = 1; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			fprintf(stderr, "raidfuse: %s: %s\n", argv[i], strerror(errno));
			ret = 1;
			continue;
		}
		if (rf_sb_read(fd, argv[i], sb, err, sizeof(err))) {
			fprintf(stderr, "raidfuse: %s\n", err);
			ret = 1;
		} else {
			rf_sb_examine(stdout, argv[i], sb);
		}
		close(fd);
	}
	free(sb);
	return ret;
}

static int cmd_mount(int argc, char **argv)
{
	struct rf_fuse_opts o = { 0 };
	struct rf_config cfg;
	struct rf_array *a;
	const char *pos[2] = { NULL, NULL };
	char err[1024];
	int i, npos = 0, ret;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-f")) {
			o.foreground = true;
		} else if (!strcmp(argv[i], "-d")) {
			o.debug = o.foreground = true;
		} else if (!strcmp(argv[i], "-v")) {
			rf_log_verbose = 1;
		} else if (!strcmp(argv[i], "-o")) {
			if (++i >= argc)
				return usage_error("mount: -o expects mount options%s", "");
			o.fuse_opts = argv[i];
		} else if (argv[i][0] == '-') {
			return usage_error("mount: unknown option '%s'", argv[i]);
		} else if (npos < 2) {
			pos[npos++] = argv[i];
		} else {
			return usage_error("mount: expected CONFIG MOUNTPOINT, got also '%s'", argv[i]);
		}
	}
	if (npos < 2)
		return usage_error("mount: expected CONFIG MOUNTPOINT%s", "");
	o.mountpoint = pos[1];
	if (load(pos[0], &cfg))
		return 1;
	ret = rf_array_open(&cfg, &a, err, sizeof(err));
	rf_config_free(&cfg);
	if (ret) {
		fprintf(stderr, "raidfuse: %s\n", err);
		return 1;
	}
	ret = rf_fuse_run(a, &o);
	rf_array_close(a);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage_error("expected a command%s", "");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("raidfuse %s\n", RF_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "create"))
		return cmd_create(argc - 1, argv + 1);
	if (!strcmp(argv[1], "mount"))
		return cmd_mount(argc - 1, argv + 1);
	if (!strcmp(argv[1], "examine"))
		return cmd_examine(argc - 1, argv + 1);
	return usage_error("unknown command '%s' (expected create or mount)", argv[1]);
}
