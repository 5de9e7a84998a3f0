/* SPDX-License-Identifier: GPL-2.0-or-later */
/* stack.c - what the core serves arrays with (core/hooks.h's struct
 * rf_stack): the levels, the services in their order, the management
 * thread.
 *
 * The core names none of these: it sits below the levels and the
 * services, and looks a level up by the md levels each says it serves
 * (SPDK's raid module list, found by level).  This file is the one place
 * above both that puts them together; a program hands it to the core
 * once, before its first array (rf_stack_set()).
 *
 * It does NOT order the services: services/services.c does (its comment
 * says why that order).
 */
#include <stddef.h>

#include "core/core.h"
#include "core/engine.h"
#include "raidfuse/stack.h"

static const struct rf_level_ops *const levels[] = {
	&rf_raid0_ops,
	&rf_raid1_ops,
	&rf_raid10_ops,
	&rf_raid5_ops,
	NULL,
};

const struct rf_stack rf_stack_default = {
	.levels = levels,
	.services = rf_services,
	.mgmt = &rf_mgmt_service,
};
