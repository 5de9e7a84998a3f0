/* main.c - the raidfuse command line.
 *
 *   raidfuse create CONFIG [--force]
 *   raidfuse mount CONFIG MOUNTPOINT [-f] [-d] [-v] [-o OPTS]
 *   raidfuse status MOUNTPOINT
 *   raidfuse ctl MOUNTPOINT ATTR [VALUE]
 *
 * create makes the member files the config names (member_size bytes of
 * zeros: an array of zeros has zero parity, so it starts in sync).  It
 * checks the whole config and every member before it creates or truncates
 * anything, and leaves existing non-empty members alone unless --force.
 *
 * status and ctl only read and write the control files under a mount
 * (MOUNTPOINT/mdstat, MOUNTPOINT/md/ATTR): whatever the daemon serves there
 * is what they show, and what it refuses they report.
 */
#include <dirent.h>
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

static const char usage_text[] =
	"usage: raidfuse create CONFIG [--force]\n"
	"       raidfuse mount CONFIG MOUNTPOINT [-f] [-d] [-v] [-o OPTS]\n"
	"       raidfuse status MOUNTPOINT\n"
	"       raidfuse ctl MOUNTPOINT ATTR [VALUE]\n"
	"       raidfuse --help | --version\n"
	"\n"
	"  create    make the member files CONFIG names that do not exist yet\n"
	"            (member_size bytes each); --force also recreates non-empty ones\n"
	"  mount     assemble the array and serve it as MOUNTPOINT/<name>;\n"
	"            stop with: fusermount3 -u MOUNTPOINT\n"
	"    -f      stay in the foreground\n"
	"    -d      FUSE debug output (implies -f)\n"
	"    -v      verbose log\n"
	"    -o OPTS FUSE mount options (e.g. allow_other)\n"
	"  status    print MOUNTPOINT/mdstat and every attribute under MOUNTPOINT/md\n"
	"  ctl       print md attribute ATTR of the array on MOUNTPOINT, or set it\n"
	"            to VALUE, as `cat`/`echo VALUE >` on MOUNTPOINT/md/ATTR do;\n"
	"            md's names and units: stripe_cache_size (entries), group_thread_cnt,\n"
	"            worker_groups, rmw_level (0-2), array_state (suspended/active), ...\n";

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

/* The whole content of a control file (small), NUL-terminated, into buf.
 * Returns its length or -errno. */
static int read_ctl_file(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			close(fd);
			return -err;
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return (int)len;
}

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

static int cmd_status(int argc, char **argv)
{
	static char buf[65536];
	char path[4096];
	const char *mnt;
	struct dirent *de;
	DIR *d;
	int n;

	if (argc != 2)
		return usage_error("status: expected MOUNTPOINT%s", "");
	mnt = argv[1];
	snprintf(path, sizeof(path), "%s/mdstat", mnt);
	n = read_ctl_file(path, buf, sizeof(buf));
	if (n < 0) {
		not_served(mnt, path, -n);
		return 1;
	}
	fputs(buf, stdout);
	snprintf(path, sizeof(path), "%s/md", mnt);
	d = opendir(path);
	if (!d) {
		not_served(mnt, path, errno);
		return 1;
	}
	printf("\n");
	/* The daemon lists the attributes in a meaningful order: keep it. */
	while ((de = readdir(d))) {
		char *nl;

		if (de->d_type != DT_REG)
			continue;
		snprintf(path, sizeof(path), "%s/md/%s", mnt, de->d_name);
		n = read_ctl_file(path, buf, sizeof(buf));
		if (n < 0) {
			fprintf(stderr, "raidfuse: %s: %s\n", path, strerror(-n));
			closedir(d);
			return 1;
		}
		nl = strchr(buf, '\n');
		if (nl)
			*nl = '\0';
		printf("%-20s %s\n", de->d_name, buf);
	}
	closedir(d);
	return 0;
}

static int cmd_ctl(int argc, char **argv)
{
	static char buf[65536];
	char path[4096], what[4200];
	const char *mnt, *attr, *val;
	int fd, n, err;
	size_t len;

	if (argc != 3 && argc != 4)
		return usage_error("ctl: expected MOUNTPOINT ATTR [VALUE]%s", "");
	mnt = argv[1];
	attr = argv[2];
	val = argc == 4 ? argv[3] : NULL;
	if (!*attr || attr[0] == '/' || strstr(attr, ".."))
		return usage_error("ctl: '%s' is not an attribute name (e.g. stripe_cache_size)", attr);
	snprintf(path, sizeof(path), "%s/md/%s", mnt, attr);
	snprintf(what, sizeof(what), "md/%s", attr);
	if (!val) {
		n = read_ctl_file(path, buf, sizeof(buf));
		if (n < 0) {
			not_served(mnt, what, -n);
			return 1;
		}
		fputs(buf, stdout);
		return 0;
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
		if (err == EINVAL)
			fprintf(stderr, "raidfuse: %s: '%s' refused: not a value it takes (the daemon's log says which)\n",
				what, val);
		else
			fprintf(stderr, "raidfuse: %s: cannot set '%s': %s\n", what, val, strerror(err));
		return 1;
	}
	if ((size_t)n != len + 1) {
		fprintf(stderr, "raidfuse: %s: short write (%d of %zu bytes)\n", what, n, len + 1);
		return 1;
	}
	return 0;
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
	if (!strcmp(argv[1], "status"))
		return cmd_status(argc - 1, argv + 1);
	if (!strcmp(argv[1], "ctl"))
		return cmd_ctl(argc - 1, argv + 1);
	return usage_error("unknown command '%s' (expected create, mount, status or ctl)", argv[1]);
}
