/* SPDX-License-Identifier: GPL-2.0-or-later */
/* core_test.h - what the services' unit tests may look at inside the
 * core (not installed; tests only).
 *
 * The services' tests (bitmap, ctl, fault, sbstate, sync) are clients of
 * the core like the services themselves: they include core/core.h and
 * use its accessors.  A few of them must see one more thing to show a
 * property deterministically, and this header names those things, each
 * with the test that needs it.  Only tests include it: no file of src/
 * may, and the core's own tests (test_engine, test_barrier, test_dev)
 * include core/engine.h instead.
 *
 * It does NOT give the array's struct, and nothing here is stable: it
 * changes with the tests.
 */
#ifndef RAIDFUSE_CORE_CORE_TEST_H
#define RAIDFUSE_CORE_CORE_TEST_H

#include "core/core.h"

struct rf_rangelock;

/* The array's stripe-range lock (rangelock.h), which the sync walk's
 * regions lock through rf_array_rows_lock(): test_sync locks rows there
 * itself, to hold a write in a region and see which writes wait. */
struct rf_rangelock *rf_array_rangelock(struct rf_array *a);

#endif
