/* SPDX-License-Identifier: GPL-2.0-or-later */
/* services.c - the services the core offers every array to, in order.
 *
 * rf_array_open() walks this list (core/hooks.h): each service looks at
 * the array and its configuration and, where it applies, sets itself up
 * and registers its hooks.  The order is the order of their start, stop
 * and close hooks too:
 *  - the sync walk first: its state exists before the superblock state
 *    starts (which hands it the resync checkpoint and asks for its news),
 *    and its thread stops before the superblock state's timer does (its
 *    last checkpoint goes to the superblocks);
 *  - the superblock state before the bitmap, which it records events in
 *    and which opens from the superblock it read, and before the partial
 *    parity log, which reads those superblocks and, after replaying a
 *    crashed array's log, has it mark them in sync before it starts (so
 *    no resync is due);
 *  - the reshape walk last: its open looks at what the others found (a
 *    bitmap, a parity log, the superblocks it records its position in);
 *    its thread stops after the superblock state's timer, whose writes
 *    it does not need (it writes its checkpoints itself, under the
 *    superblock state's locks).
 * The management thread is not listed: it starts after all of these and
 * stops before them: the stack names it apart (hooks.h says why).
 *
 * It does NOT decide what a service does: each one's open says whether it
 * applies.
 */
#include <stddef.h>

#include "core/hooks.h"

extern const struct rf_service rf_ppl_service, rf_sync_service, rf_sbstate_service, rf_bitmap_service,
	rf_reshape_service;

const struct rf_service *const rf_services[] = {
	&rf_sync_service,
	&rf_sbstate_service,
	&rf_ppl_service,
	&rf_bitmap_service,
	&rf_reshape_service,
	NULL,
};
