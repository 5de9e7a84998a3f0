/* SPDX-License-Identifier: GPL-2.0-or-later */
/* resize.h - the members' used size and the image's size changed online
 * (services/resize.c): md's component_size and array_size stores, what
 * mdadm --grow --size and --array-size write.
 */
#ifndef RAIDFUSE_RESIZE_H
#define RAIDFUSE_RESIZE_H

#include <stddef.h>
#include <stdint.h>

struct rf_array;

/* Every member of a uses sectors (rounded down to whole 4 KiB blocks and
 * chunks; 0: as much as the smallest device holds now, spares included,
 * each device's size looked at again first).  The superblocks record it;
 * the image grows or shrinks (unless md/array_size set its size); a grow
 * is resynced from the old size up.  0, or -errno with why in err:
 * -EINVAL raid0 or raid10 of a far layout, a partial parity log, or a set
 * array_size past the new size; -ENOSPC a device too small (named);
 * -EBUSY a reshape, sync action or rebuild running; -EOPNOTSUPP no
 * superblocks; -EROFS read-only. */
int rf_resize_component(struct rf_array *a, uint64_t sectors, char *err, size_t errlen);
/* The image serves bytes (whole KiB, at most what the members hold; 0:
 * what they hold, md's "default"), not recorded anywhere, as md's
 * external_size.  0, or -errno with why in err: -E2BIG past the members,
 * -EBUSY a reshape under way, -EINVAL not whole KiB. */
int rf_resize_array(struct rf_array *a, uint64_t bytes, char *err, size_t errlen);

#endif
