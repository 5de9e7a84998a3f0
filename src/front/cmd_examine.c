/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cmd_examine.c - `raidfuse examine` and `raidfuse examine-bitmap`: each
 * member's md superblock, or its internal write-intent bitmap, as mdadm
 * --examine and --examine-bitmap (-X) print them.
 *
 * A member is a file, a block device or an NBD export, opened read-only.
 * examine prints each superblock in mdadm's words, or one JSON object a
 * line (--json), or with --scan one mdadm.conf ARRAY line per array among
 * the members (the first member of each names it); with the bitmap, the
 * size mdadm counts in the unused space.  -X (examine-bitmap) prints the
 * bitmap's header and how many of its bits are set.  A member without a
 * superblock, or with a damaged one, makes the exit status 1; the others
 * still print.
 *
 * What it does NOT do: write to a member or assemble anything; the
 * superblock and bitmap code (md/examine.c, md/bitmap_fmt.c) reads the
 * fields and words them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raidfuse/bitmap.h"
#include "raidfuse/detail.h"
#include "raidfuse/nbd.h"
#include "raidfuse/super.h"

#include "front/cli.h"

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
	while ((ch = rf_cli_opt_next(argc, argv, "-:JXsh", lo, &rc)) != -1) {
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
		rc = rf_cli_usage_error("examine: expected MEMBER...");
	if (rc < 0 && scan && (bitmap || json))
		rc = rf_cli_usage_error("examine: --scan goes without --json and -X");
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

int rf_cmd_examine(int argc, char **argv)
{
	return examine_cmd(argc, argv, false);
}

int rf_cmd_examine_bitmap(int argc, char **argv)
{
	return examine_cmd(argc, argv, true);
}
