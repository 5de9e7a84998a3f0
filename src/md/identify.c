/* SPDX-License-Identifier: GPL-2.0-or-later */
/* identify.c - a member's identity from a path, superblock included
 * (memberid.h).
 *
 * rf_member_id_of_path() opens a file, block device or NBD export
 * (devopen.c, nbd.c: read-only, unlocked, closed at once), takes what
 * io/memberid.c makes of it, and adds the device UUID of the md
 * superblock on it; rf_members_distinct() compares a list of names that
 * way before a caller holds them to a config or serves them.
 *
 * What it does NOT do: decide what two names of one device mean (the
 * callers refuse them, with rf_member_same_msg()'s words).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raidfuse/devopen.h"
#include "raidfuse/memberid.h"
#include "raidfuse/nbd.h"
#include "raidfuse/super.h"

int rf_member_id_of_path(const char *path, const char *who, unsigned timeout_ms, struct rf_member_id *m,
			 char *err, size_t errlen)
{
	struct rf_devopen_fd d;
	struct rf_sb *sb = malloc(sizeof(*sb));
	char why[1024];
	int r;

	if (!sb)
		return -ENOMEM;
	if (rf_nbd_is_uri(path)) {
		struct rf_nbd *c;
		struct rf_sb_io io;

		r = rf_nbd_open(path, true, timeout_ms, &c, why, sizeof(why));
		if (r) {
			snprintf(err, errlen, "%s: %s", who, rf_nbd_why(why, path));
			free(sb);
			return r;
		}
		rf_nbd_member_id(c, m);
		rf_nbd_sb_io(c, &io);
		if (!rf_sb_read_io(&io, path, sb, why, sizeof(why)))
			rf_member_id_set_uuid(m, sb->device_uuid);
		rf_nbd_close(c);
		free(sb);
		return 0;
	}
	r = rf_devopen_open(path, who, RF_DEVOPEN_RDONLY | RF_DEVOPEN_NOLOCK, &d, err, errlen);
	if (!r) {
		rf_member_id_of_dev(m, &d.id);
		/* No superblock (or one that does not read): no UUID to
		 * compare; whoever serves it reads it again and says why. */
		if (!rf_sb_read(d.fd, path, sb, why, sizeof(why)))
			rf_member_id_set_uuid(m, sb->device_uuid);
		rf_devopen_close(&d);
	}
	free(sb);
	return r;
}

int rf_members_distinct(const char *const *paths, const char *const *names, int n, unsigned timeout_ms,
			char *err, size_t errlen)
{
	struct rf_member_id *ids = calloc((size_t)(n > 0 ? n : 1), sizeof(*ids));
	int i, j, r = 0;

	if (!ids)
		return -ENOMEM;
	for (i = 0; i < n && !r; i++) {
		/* One that does not open is no second name of another: the
		 * caller opens it again and says why it does not. */
		if (!paths[i] || rf_member_id_of_path(paths[i], names[i], timeout_ms, &ids[i], err, errlen))
			continue;
		for (j = 0; j < i && !r; j++) {
			if (!rf_member_same(&ids[j], &ids[i]))
				continue;
			rf_member_same_msg(err, errlen, names[j], &ids[j], names[i], &ids[i],
					   "each member must be given once");
			r = -EINVAL;
		}
	}
	free(ids);
	return r;
}
