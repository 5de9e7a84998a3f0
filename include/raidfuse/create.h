/* SPDX-License-Identifier: GPL-2.0-or-later */
/* create.h - `raidfuse create`: members and superblocks from a config. */
#ifndef RAIDFUSE_CREATE_H
#define RAIDFUSE_CREATE_H

#include <stdbool.h>
#include <stdint.h>

struct rf_create_opts {
	bool force;                     /* recreate members that hold data */
	bool assume_clean;              /* superblocks say no resync is due */
	int bitmap;                     /* 1 internal, 0 none, -1 as the config says */
	uint64_t bitmap_chunk;          /* bytes; 0: as the config says */
};

struct rf_config;

/* Check cfg (loaded from the config at path, which messages name) and
 * every member and spare it names, then make the missing member files and
 * write their superblocks; nothing is written unless everything checks
 * out.  It takes over what cfg holds (cfg is left empty).  Messages go to
 * stderr, what was made to stdout.  Returns the exit status: 0, or 1. */
int rf_create(const char *path, struct rf_config *cfg, const struct rf_create_opts *o);

#endif
