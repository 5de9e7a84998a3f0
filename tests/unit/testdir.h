/* SPDX-License-Identifier: GPL-2.0-or-later */
/* testdir.h - a scratch directory for a unit test's member files (on
 * /dev/shm when it is writable: fast, no disk; else /tmp), and the config
 * of a test array. */
#ifndef TESTDIR_H
#define TESTDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "raidfuse/config.h"

/* Make dir (size bytes) as BASE/rf-<what>-XXXXXX; returns 0 or -1. */
static inline int testdir_make(char *dir, size_t size, const char *what)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	snprintf(dir, size, "%s/rf-%s-XXXXXX", base, what);
	return mkdtemp(dir) ? 0 : -1;
}

static inline int testdir_remove_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	return remove(path);
}

/* rm -rf dir: depth first, not following links; 0 or -1. */
static inline int testdir_remove(const char *dir)
{
	return nftw(dir, testdir_remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

/* An array config as the engine tests want it: the shape given, a small
 * stripe cache (heads get recycled), 2 groups of 2 threads, no superblocks.
 * Members and whatever else differs are the caller's. */
static inline void testcfg_init(struct rf_config *cfg, int level, int layout, int n, uint32_t chunk)
{
	rf_config_defaults(cfg);
	cfg->path = "test";
	cfg->name = "array.img";
	cfg->level = level;
	cfg->layout = layout;
	cfg->chunk_bytes = chunk;
	cfg->nmembers = n;
	cfg->stripe_cache_size = 40;
	cfg->group_thread_cnt = 2;
	cfg->worker_groups = 2;
	cfg->stripe_size = 4096;
	cfg->rmw_level = 1;
	cfg->metadata = 0;              /* none */
}

#endif
