/* SPDX-License-Identifier: GPL-2.0-or-later */
/* assemble.h - arrays described by md superblocks: assemble one from its
 * members alone, check a config against the superblocks its members carry,
 * and plan the 1.2 superblocks `raidfuse create` writes.
 *
 * All three end in a struct rf_config that rf_array_open() serves as it
 * serves a config file.
 */
#ifndef RAIDFUSE_ASSEMBLE_H
#define RAIDFUSE_ASSEMBLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raidfuse/config.h"
#include "raidfuse/super.h"

/* Read the superblocks of the n members at paths, check that they make one
 * array and fill cfg (rf_config_free() it) with the members in role order,
 * missing roles NULL, name image_name (NULL: "array.img").  A member whose
 * events are behind the freshest (by more than one, as md allows), or that
 * the array records as faulty or spare, is left out with a warning on the
 * log.  Refuses (-EINVAL, message in err) members of different arrays, two
 * members in one role, too few members for the level, a dirty degraded
 * parity array, and features raidfuse cannot serve (reshape, journal,
 * clustered). */
int rf_assemble(const char *const *paths, int n, const char *image_name, bool readonly,
		struct rf_config *cfg, char *err, size_t errlen);

/* rf_assemble() for members served through copy-on-write overlays in
 * overlay_dir (overlay.h): the superblocks are read through them, and cfg
 * says to serve through them (cfg->overlay_dir). */
int rf_assemble_overlay(const char *const *paths, int n, const char *image_name, const char *overlay_dir,
			struct rf_config *cfg, char *err, size_t errlen);

/* For `raidfuse mount CONFIG`: if the members carry superblocks, they must
 * agree with cfg (level, layout, chunk, raid devices, role order,
 * data_offset, size, one array, none stale); cfg takes data_offset and size
 * from them when the config leaves those out.  Members without any
 * superblock leave cfg as it is.  0, or -EINVAL naming the member and the
 * field. */
int rf_assemble_check_config(struct rf_config *cfg, char *err, size_t errlen);

/* For `raidfuse create`: the 1.2 superblock fields for cfg's array on
 * members of member_bytes[role] bytes (0 for "missing"): data_offset as
 * mdadm 4.2 chooses it unless the config gives one, the used size, a random
 * uuid.  Nothing is written.  0 or -EINVAL naming the member or key. */
int rf_assemble_plan_create(const struct rf_config *cfg, const uint64_t *member_bytes, bool clean,
			    struct rf_sb_new *n, char *err, size_t errlen);

/* md's layout number in a superblock -> raidfuse's config layout; -EINVAL
 * if the level has no such layout. */
int rf_assemble_cfg_layout(const struct rf_sb *sb);

/* md's --run --force: rf_assemble() and rf_assemble_check_config() serve a
 * degraded raid4/5/6 that was not shut down cleanly (refused otherwise),
 * warning that data in the stripes written at the crash may be wrong.
 * Process-wide, set from the command line before assembling. */
void rf_assemble_set_force(bool force);

#endif
