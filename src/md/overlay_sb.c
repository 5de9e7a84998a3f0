/* SPDX-License-Identifier: GPL-2.0-or-later */
/* overlay_sb.c - an overlay named by its member's md superblock.
 *
 * The overlay (io/overlay.c) keeps a member's writes in files named by an
 * identity; for a member with a superblock that identity is the
 * superblock's (array UUID, device number, checksum): read here, in the
 * format's layer, and handed down.
 *
 * What it does NOT do: open members without superblocks (the overlay's
 * own rf_ovl_open_nosb() names those by the caller's key).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "raidfuse/overlay.h"
#include "raidfuse/super.h"

int rf_ovl_open(const char *dir, int fd, const char *path, struct rf_ovl **out, char *err, size_t errlen)
{
	struct rf_sb *sb = malloc(sizeof(*sb));
	int r;

	*out = NULL;
	if (!sb)
		return -ENOMEM;
	/* The member's own superblock names its files. */
	r = rf_sb_read(fd, path, sb, err, errlen);
	if (r) {
		if (r == -ENOENT) {
			char why[512];

			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errlen, "%s (an overlay needs md superblocks to name its files)", why);
		}
		free(sb);
		return r;
	}
	return rf_ovl_open_sb(dir, fd, path, sb, out, err, errlen);
}
