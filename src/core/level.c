/* SPDX-License-Identifier: GPL-2.0-or-later */
/* level.c - what a level decides, asked from above the core.
 *
 * Whatever differs by RAID level is the level's own (md's personality:
 * bitmap_sector, sync_request, ...): its file fills a field of its struct
 * rf_level_ops (engine.h).  The services and the front end do not see
 * that struct; when they need a level's answer they call here, and this
 * file asks the level: the array's ops (a->ops), or, for a caller that
 * holds only a geometry (a reshape's previous one, a bitmap's test), the
 * ops the program's stack serves that md level with (rf_level_ops_of()).
 * An optional field the level leaves NULL gets the default its comment
 * in engine.h names.
 *
 * What it does NOT do: decide anything by level itself (no level number
 * is compared here), keep state, or take a lock: every answer is a pure
 * function of the geometry or of the array's immutable ops.
 */
#include <stddef.h>

#include "core/core.h"
#include "core/engine.h"

bool rf_level_bitmap_range(const struct rf_geom *g, uint64_t off, uint64_t len, uint64_t *lo, uint64_t *hi)
{
	const struct rf_level_ops *ops = rf_level_ops_of(g->level);

	if (!ops || !ops->bitmap_range)
		return false;
	ops->bitmap_range(g, off, len, lo, hi);
	return true;
}

bool rf_level_takes_policy(const struct rf_array *a, const char *policy)
{
	return a->ops->takes_policy(&a->geom, policy);
}

bool rf_level_has_sync_work(const struct rf_array *a)
{
	return a->ops->sync != NULL;
}

bool rf_level_has_stripe_cache(const struct rf_array *a)
{
	return a->ops->handle_stripe != NULL;
}

bool rf_level_served(int level)
{
	return rf_level_ops_of(level) != NULL;
}

uint64_t rf_level_slot_sectors(const struct rf_array *a, int slot)
{
	return a->ops->dev_sectors ? a->ops->dev_sectors(&a->geom, slot) : a->geom.dev_sectors;
}

const char *rf_level_resize_refused(const struct rf_array *a)
{
	return a->ops->resize_refused ? a->ops->resize_refused(&a->geom) : NULL;
}
