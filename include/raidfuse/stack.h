/* SPDX-License-Identifier: GPL-2.0-or-later */
/* stack.h - the levels and services a program serves arrays with.
 *
 * The core (core/hooks.h's struct rf_stack) names no level and no
 * service: a program hands it the stack once, first thing, before any
 * array opens.  Without one no array opens (rf_array_open() says so).
 */
#ifndef RAIDFUSE_STACK_H
#define RAIDFUSE_STACK_H

struct rf_stack;

/* Every level (raid0, raid1, raid10, raid4/5/6), the services of
 * services/services.c in their order, and the management thread
 * (commands/stack.c). */
extern const struct rf_stack rf_stack_default;

/* The stack every array from now on is opened with (core/array.c). */
void rf_stack_set(const struct rf_stack *s);

#endif
