/* SPDX-License-Identifier: GPL-2.0-or-later */
/* reshape.h - growing a raid4/5/6 array online (services/reshape.c).
 *
 * md's raid_disks store on a running array: the array grows by spares
 * (md/new_dev adds them) while it is served; the reshape walk moves the
 * data to the new geometry and the image grows when it ends.  md's level
 * store turns a raid4/5 into a raid6 the same way, by one spare.  Its
 * progress is md/reshape_position, mdstat's reshape line; sync_action
 * "frozen" holds it.
 */
#ifndef RAIDFUSE_RESHAPE_H
#define RAIDFUSE_RESHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rf_array;

/* Grow a to raid_disks members (more than it has; as many spares as it
 * takes more), or shrink it to fewer (md's backward reshape: the image
 * must serve no more than they hold, md/array_size set first, and every
 * device needs a chunk free after its data; the members dropped end as
 * spares).  Returns 0 once the reshape is recorded and under way (at
 * once when raid_disks is the present count), or -errno with why in err:
 * -EROFS read-only, -EOPNOTSUPP a level or array it cannot reshape (not
 * raid4/5/6, no 1.x superblocks, a bitmap or a partial parity log),
 * -EBUSY a reshape or sync action running, or degraded, -EINVAL too few
 * spares, too few members for the level, or a shrink past the image's
 * size, -ENOSPC no room before the data to move it and no backup file set
 * (rf_reshape_set_backup_file(): with one, a grow keeps its data in place)
 * or, for a shrink, none after it. */
int rf_reshape_grow(struct rf_array *a, int raid_disks, char *err, size_t errlen);
/* Change a raid4/5 to raid6 (md/level), as mdadm --grow --level=6 does:
 * one spare more takes a new last slot, and the reshape restripes the
 * array from md's raid6 "-6" form of its layout (Q on the new member) to
 * the raid6 layout of the same number (raid4: parity-last), the data
 * disks as they are.  0 once recorded and under way (at once when the
 * level is the present one), or -errno as rf_reshape_grow(); -EOPNOTSUPP
 * for any other change of level. */
int rf_reshape_level(struct rf_array *a, int level, char *err, size_t errlen);
/* Change a raid5/6's layout (md's number, -1: as it is) or a raid4/5/6's
 * chunk (sectors, 0: as it is) online, as mdadm --grow --layout/--chunk
 * has md do: the same members, every row restriped, the data a row of
 * chunks lower.  0 once recorded and under way (at once when nothing
 * changes), or -errno as rf_reshape_grow(); -EINVAL a layout the level
 * does not have, or a chunk that would change the array's size (the
 * component size not a multiple of it). */
int rf_reshape_layout(struct rf_array *a, int layout, uint32_t chunk_sectors, char *err, size_t errlen);
/* sync_action "frozen", and wait (timeout_ms at most) until the walk
 * holds: the window under way written, no other begun, its position
 * (rf_array_reshape()) still until it is let go (md's freeze waits for
 * its sync thread to stop).  0, or -ETIMEDOUT with the freeze set and the
 * walk still in its window. */
int rf_reshape_hold(struct rf_array *a, int timeout_ms);

/* mdadm's backup file (--backup-file) for a grow with no room before the
 * data: an absolute path, created if need be and opened for writing now
 * (one that cannot be is refused: -errno with why, naming it), or NULL:
 * none.  A grow, layout or chunk change begun while one is set may keep
 * its data where it is
 * (services/reshape.c: the backup file holds each window of its critical
 * section first); a reshape under way keeps the file it began with. */
int rf_reshape_set_backup_file(struct rf_array *a, const char *path, char *err, size_t errlen);
/* The backup file set, into buf; false: none. */
bool rf_reshape_backup_file(struct rf_array *a, char *buf, size_t len);

#endif
