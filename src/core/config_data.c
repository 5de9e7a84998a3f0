/* SPDX-License-Identifier: GPL-2.0-or-later */
/* config_data.c - struct rf_config as data: its defaults, what it owns,
 * and the redundancy rule the config's "missing" members meet.
 *
 * The parser (front/config.c, libconfig) fills one; the commands and the
 * core read it.  What it does NOT do: read a file, check one.
 */
#include <stdlib.h>
#include <string.h>

#include "raidfuse/config.h"
#include "raidfuse/nbd.h"
#include "raidfuse/super.h"

/* Defaults, md's where md has one (raid5.c, md.c). */
#define DEF_STRIPE_CACHE_SIZE   256
/* group_thread_cnt unset: chosen at assembly from where the members live
 * (array.c: worker threads where a member can make IO wait, inline where
 * every member is in memory). */
#define DEF_GROUP_THREAD_CNT    (-1)
#define DEF_WORKER_GROUPS       0
#define DEF_STRIPE_SIZE         4096
/* Not md's 1: on a tie (4-member raid5, 6-member raid6: rmw and rcw read
 * as many blocks) rmw reads exactly the blocks it then writes, rcw reads
 * two and writes two others; on members in a page cache rmw's writes hit
 * the pages its reads just brought in (1.6x the 4k random writes). */
#define DEF_RMW_LEVEL           2

void rf_config_defaults(struct rf_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->stripe_cache_size = DEF_STRIPE_CACHE_SIZE;
	cfg->group_thread_cnt = DEF_GROUP_THREAD_CNT;
	cfg->worker_groups = DEF_WORKER_GROUPS;
	cfg->stripe_size = DEF_STRIPE_SIZE;
	cfg->rmw_level = DEF_RMW_LEVEL;
	cfg->member_timeout_ms = RF_NBD_TIMEOUT_MS_DEFAULT;
	cfg->metadata = RF_SB_12;
}

void rf_config_free(struct rf_config *cfg)
{
	int i;

	free(cfg->path);
	free(cfg->name);
	free(cfg->overlay_dir);
	free(cfg->backup_file);
	for (i = 0; i < RF_MAX_MEMBERS; i++) {
		free(cfg->members[i]);
		free(cfg->spares[i]);
	}
	free(cfg->faults);
	memset(cfg, 0, sizeof(*cfg));
}

/* Members that may be missing, the level's redundancy. */
int rf_config_tolerated(int level, int layout, int n)
{
	switch (level) {
	case 1:  return n - 1;
	case 4:
	case 5:  return 1;
	case 6:  return 2;
	case 10: return (layout & 255) * ((layout >> 8) & 255) - 1;
	}
	return 0;
}
