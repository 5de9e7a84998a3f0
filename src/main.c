/* main.c - the raidfuse command line.
 *
 *   raidfuse create CONFIG [--force] [--assume-clean] [--bitmap=internal|none] [--bitmap-chunk=SIZE]
 *   raidfuse mount CONFIG MOUNTPOINT [-f] [-d] [-v] [-o OPTS] [--freeze]
 *   raidfuse assemble [--ro | --overlay DIR] [--name FILE] [-f] [-d] [-v] [-o OPTS] [--freeze]
 *                     MOUNTPOINT MEMBER...
 *   raidfuse examine MEMBER...
 *   raidfuse status MOUNTPOINT
 *   raidfuse ctl MOUNTPOINT ATTR [VALUE]
 *   raidfuse ctl MOUNTPOINT add FILE | fail NAME | remove NAME
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
 * is what they show, and what it refuses they report.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raidfuse/array.h"
#include "raidfuse/assemble.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/config.h"
#include "raidfuse/create.h"
#include "raidfuse/devopen.h"
#include "raidfuse/fuse.h"
#include "raidfuse/log.h"
#include "raidfuse/super.h"

static const char usage_text[] =
	"usage: raidfuse create CONFIG [--force] [--assume-clean] [--bitmap=internal|none]\n"
	"                [--bitmap-chunk=SIZE]\n"
	"       raidfuse mount CONFIG MOUNTPOINT [-f] [-d] [-v] [-o OPTS] [--freeze]\n"
	"       raidfuse assemble [--ro | --overlay DIR] [--name FILE] [-f] [-d] [-v] [-o OPTS]\n"
	"                [--freeze] MOUNTPOINT MEMBER...\n"
	"       raidfuse examine MEMBER...\n"
	"       raidfuse status MOUNTPOINT\n"
	"       raidfuse ctl MOUNTPOINT ATTR [VALUE]\n"
	"       raidfuse ctl MOUNTPOINT add FILE | fail NAME | remove NAME\n"
	"       raidfuse --help | --version\n"
	"\n"
	"  create    make the member files CONFIG names that do not exist yet\n"
	"            (member_size bytes each) and write md 1.2 superblocks on every\n"
	"            member (metadata = \"none\" in CONFIG: none); --force also\n"
	"            recreates non-empty ones; --assume-clean: no resync due;\n"
	"            --bitmap=internal: md's write-intent bitmap (chunk SIZE, KiB\n"
	"            unless suffixed; default mdadm's)\n"
	"    --allow-unsafe-dirs  (create, mount, assemble) as root, accept members\n"
	"            in directories other users may write (refused by default:\n"
	"            they could swap a member for a link to any file)\n"
	"  mount     assemble the array and serve it as MOUNTPOINT/<name>;\n"
	"            stop with: fusermount3 -u MOUNTPOINT\n"
	"  assemble  serve the array the members' md superblocks describe (0.90,\n"
	"            1.0, 1.1, 1.2) as MOUNTPOINT/array.img, no config needed\n"
	"    --ro    open the members read-only; writes fail (EROFS)\n"
	"    --overlay DIR  open the members read-only; every write goes to\n"
	"            copy-on-write files in DIR (made if needed; the same DIR\n"
	"            again continues from there; delete it to throw it away)\n"
	"    --name FILE  serve the image as MOUNTPOINT/FILE\n"
	"  examine   print each member's superblock as mdadm --examine does\n"
	"    -f      stay in the foreground\n"
	"    -d      FUSE debug output (implies -f)\n"
	"    -v      verbose log\n"
	"    -o OPTS FUSE mount options (e.g. allow_other)\n"
	"    --force (mount, assemble) serve a degraded raid4/5/6 that was not shut\n"
	"            down cleanly (md's --run --force; refused without it: data in\n"
	"            the stripes written at the crash may be wrong)\n"
	"    --freeze  start with md/sync_action frozen: a resync that is due\n"
	"            (unclean shutdown, create without --assume-clean) waits until\n"
	"            `resync` is written there; otherwise it starts at once\n"
	"  status    print MOUNTPOINT/mdstat and every attribute under MOUNTPOINT/md\n"
	"  ctl       print md attribute ATTR of the array on MOUNTPOINT, or set it\n"
	"            to VALUE, as `cat`/`echo VALUE >` on MOUNTPOINT/md/ATTR do;\n"
	"            md's names and units: stripe_cache_size (entries), group_thread_cnt,\n"
	"            worker_groups, rmw_level (0-2), array_state (suspended/active),\n"
	"            dev-NAME/state, dev-NAME/fault (fault injection, e.g.\n"
	"            \"error=EIO rate=0.5 ops=write\" or \"off\"), ...\n"
	"    add FILE     add FILE as a spare (writes its path to md/new_dev)\n"
	"    fail NAME    mark device NAME (a member file's base name) faulty\n"
	"    remove NAME  take faulty or spare device NAME out of the array\n";

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
	struct rf_create_opts o = { .bitmap = -1 };
	const char *path = NULL, *bitmap = NULL, *bitmap_chunk = NULL;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--force"))
			o.force = true;
		else if (!strcmp(argv[i], "--assume-clean"))
			o.assume_clean = true;
		else if (!strcmp(argv[i], "--allow-unsafe-dirs"))
			rf_dev_allow_unsafe_dirs(true);
		else if (!strncmp(argv[i], "--bitmap=", 9))
			bitmap = argv[i] + 9;
		else if (!strcmp(argv[i], "--bitmap") && i + 1 < argc)
			bitmap = argv[++i];
		else if (!strncmp(argv[i], "--bitmap-chunk=", 15))
			bitmap_chunk = argv[i] + 15;
		else if (!strcmp(argv[i], "--bitmap-chunk") && i + 1 < argc)
			bitmap_chunk = argv[++i];
		else if (argv[i][0] == '-')
			return usage_error("create: unknown option '%s'", argv[i]);
		else if (!path)
			path = argv[i];
		else
			return usage_error("create: expected one CONFIG, got also '%s'", argv[i]);
	}
	if (!path)
		return usage_error("create: expected CONFIG%s", "");
	if (bitmap && strcmp(bitmap, "internal") && strcmp(bitmap, "none"))
		return usage_error("create: --bitmap takes internal or none, not '%s'", bitmap);
	if (bitmap)
		o.bitmap = !strcmp(bitmap, "internal");
	if (bitmap_chunk && (rf_parse_size(bitmap_chunk, 1024, &o.bitmap_chunk) ||
			     o.bitmap_chunk < 4096 || (o.bitmap_chunk & (o.bitmap_chunk - 1))))
		return usage_error("create: --bitmap-chunk takes a power of two of at least 4K, not '%s'",
				   bitmap_chunk);
	return rf_create(path, &o);
}

/* The size of the member's bitmap, which mdadm --examine counts in the
 * unused space; a bitmap that cannot be read is left for assembly to
 * report. */
static void examine_bitmap_size(int fd, const char *path, struct rf_sb *sb)
{
	struct rf_bitmap_sb bsb;
	struct rf_sb_io io;
	uint8_t *bits;
	char err[512];

	if (!sb->bitmap || rf_sb_io_fd(&io, fd) || rf_bitmap_read(&io, path, sb, &bsb, &bits, err, sizeof(err)))
		return;
	sb->bitmap_sectors = rf_bitmap_disk_sectors(bsb.sync_size, bsb.chunk_bytes);
	free(bits);
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
		if (rf_examine_refuse(fd, argv[i], err, sizeof(err))) {
			fprintf(stderr, "raidfuse: %s\n", err);
			close(fd);
			ret = 1;
			continue;
		}
		if (rf_sb_read(fd, argv[i], sb, err, sizeof(err))) {
			fprintf(stderr, "raidfuse: %s\n", err);
			ret = 1;
		} else {
			examine_bitmap_size(fd, argv[i], sb);
			rf_sb_examine(stdout, argv[i], sb);
		}
		close(fd);
	}
	free(sb);
	return ret;
}

/* Options both mount and assemble take: -f -d -v -o OPTS --freeze.  Returns 1 if
 * argv[*i] was one (advancing *i past its value), 0 if not, -1 on error. */
static int serve_option(int argc, char **argv, int *i, struct rf_fuse_opts *o, const char *cmd)
{
	if (!strcmp(argv[*i], "-f")) {
		o->foreground = true;
	} else if (!strcmp(argv[*i], "-d")) {
		o->debug = o->foreground = true;
	} else if (!strcmp(argv[*i], "-v")) {
		rf_log_verbose = 1;
	} else if (!strcmp(argv[*i], "--freeze")) {
		o->freeze = true;
	} else if (!strcmp(argv[*i], "--allow-unsafe-dirs")) {
		rf_dev_allow_unsafe_dirs(true);
	} else if (!strcmp(argv[*i], "--force")) {
		rf_assemble_set_force(true);
	} else if (!strcmp(argv[*i], "-o")) {
		if (++*i >= argc) {
			usage_error("%s: -o expects mount options", cmd);
			return -1;
		}
		o->fuse_opts = argv[*i];
	} else {
		return 0;
	}
	return 1;
}

/* Open the array cfg describes and serve it; cfg is freed. */
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

static int cmd_mount(int argc, char **argv)
{
	struct rf_fuse_opts o = { 0 };
	struct rf_config cfg;
	const char *pos[2] = { NULL, NULL };
	char err[1024];
	int i, npos = 0, r;

	for (i = 1; i < argc; i++) {
		r = serve_option(argc, argv, &i, &o, "mount");
		if (r < 0)
			return 2;
		if (r)
			continue;
		if (argv[i][0] == '-')
			return usage_error("mount: unknown option '%s'", argv[i]);
		if (npos >= 2)
			return usage_error("mount: expected CONFIG MOUNTPOINT, got also '%s'", argv[i]);
		pos[npos++] = argv[i];
	}
	if (npos < 2)
		return usage_error("mount: expected CONFIG MOUNTPOINT%s", "");
	o.mountpoint = pos[1];
	if (load(pos[0], &cfg))
		return 1;
	if (rf_assemble_check_config(&cfg, err, sizeof(err))) {
		fprintf(stderr, "raidfuse: %s\n", err);
		rf_config_free(&cfg);
		return 1;
	}
	return serve(&cfg, &o);
}

static int cmd_assemble(int argc, char **argv)
{
	struct rf_fuse_opts o = { 0 };
	struct rf_config cfg;
	const char *name = NULL, *members[RF_MAX_MEMBERS], *overlay = NULL;
	bool ro = false;
	char err[1024];
	int i, n = 0, r;

	for (i = 1; i < argc; i++) {
		r = serve_option(argc, argv, &i, &o, "assemble");
		if (r < 0)
			return 2;
		if (r)
			continue;
		if (!strcmp(argv[i], "--ro")) {
			ro = true;
		} else if (!strcmp(argv[i], "--overlay")) {
			if (++i >= argc)
				return usage_error("assemble: --overlay expects a DIR%s", "");
			overlay = argv[i];
		} else if (!strcmp(argv[i], "--name")) {
			if (++i >= argc)
				return usage_error("assemble: --name expects a FILE name%s", "");
			name = argv[i];
			if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
				return usage_error("assemble: --name '%s' is not a plain file name", name);
		} else if (argv[i][0] == '-') {
			return usage_error("assemble: unknown option '%s'", argv[i]);
		} else if (!o.mountpoint) {
			o.mountpoint = argv[i];
		} else if (n < RF_MAX_MEMBERS) {
			members[n++] = argv[i];
		} else {
			return usage_error("assemble: more than 64 members ('%s')", argv[i]);
		}
	}
	if (!o.mountpoint || !n)
		return usage_error("assemble: expected MOUNTPOINT MEMBER...%s", "");
	if (ro && overlay)
		return usage_error("assemble: --ro and --overlay exclude each other (--overlay already keeps "
				   "the members as they are)%s", "");
	if (overlay && mkdir(overlay, 0755) && errno != EEXIST) {
		fprintf(stderr, "raidfuse: overlay directory %s: %s\n", overlay, strerror(errno));
		return 1;
	}
	if (overlay ? rf_assemble_overlay(members, n, name, overlay, &cfg, err, sizeof(err))
		    : rf_assemble(members, n, name, ro, &cfg, err, sizeof(err))) {
		fprintf(stderr, "raidfuse: %s\n", err);
		return 1;
	}
	return serve(&cfg, &o);
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
		if (n == -EACCES)
			continue;       /* write-only (md/new_dev) */
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
	char path[4096], what[4200], abs[PATH_MAX], devattr[300];
	const char *mnt, *attr, *val;
	int fd, n, err;
	size_t len;

	if (argc != 3 && argc != 4)
		return usage_error("ctl: expected MOUNTPOINT ATTR [VALUE]%s", "");
	mnt = argv[1];
	attr = argv[2];
	val = argc == 4 ? argv[3] : NULL;
	/* The device verbs: md's files with md's words, as mdadm --add,
	 * --fail and --remove write them. */
	if (val && !strcmp(attr, "add")) {
		if (!realpath(val, abs)) {
			fprintf(stderr, "raidfuse: ctl add: %s: %s\n", val, strerror(errno));
			return 1;
		}
		attr = "new_dev";
		val = abs;
	} else if (val && (!strcmp(attr, "fail") || !strcmp(attr, "remove"))) {
		if (!*val || strchr(val, '/'))
			return usage_error("ctl: '%s' is not a device name (a member file's base name)", val);
		snprintf(devattr, sizeof(devattr), "dev-%s/state", val);
		val = !strcmp(attr, "fail") ? "faulty" : "remove";
		attr = devattr;
	}
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
	if (!strcmp(argv[1], "examine"))
		return cmd_examine(argc - 1, argv + 1);
	if (!strcmp(argv[1], "assemble"))
		return cmd_assemble(argc - 1, argv + 1);
	if (!strcmp(argv[1], "status"))
		return cmd_status(argc - 1, argv + 1);
	if (!strcmp(argv[1], "ctl"))
		return cmd_ctl(argc - 1, argv + 1);
	return usage_error("unknown command '%s' (expected create, mount, assemble, examine, status or ctl)", argv[1]);
}
