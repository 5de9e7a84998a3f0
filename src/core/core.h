/* core.h - what services see of the array core (not installed).
 *
 * The array's struct is private to src/core/ and the level modules
 * (core/engine.h).  A service (the superblock state, the bitmap) includes
 * this header instead: the device table (core/dev.h), the hooks it
 * registers (core/hooks.h), the array's public accessors (array.h), and
 * the few calls below.  None of them is on the IO fast path of the core
 * itself, which uses engine.h's inline versions.
 *
 * What it does NOT give: the array's fields, the groups, the barrier's
 * state.
 */
#ifndef RAIDFUSE_CORE_CORE_H
#define RAIDFUSE_CORE_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dev.h"
#include "core/hooks.h"
#include "raidfuse/array.h"

struct rf_bitmap;
struct rf_sbstate;

/* Slots (raid_disks): devices [0, n) of the table serve them. */
int rf_array_nslots(const struct rf_array *a);
/* Slots whose device was opened (not "missing"). */
uint64_t rf_array_present(const struct rf_array *a);
/* Faulty slots, and those being rebuilt (md's "degraded" for reads). */
uint64_t rf_array_faulty_read(const struct rf_array *a);
/* The array's bitmap, NULL: none (the superblock state records its
 * events in it). */
struct rf_bitmap *rf_array_bitmap(const struct rf_array *a);
/* The array's superblock state, NULL: none. */
struct rf_sbstate *rf_array_sbstate(const struct rf_array *a);
/* Whether the sync thread exists (from rf_array_start()). */
bool rf_array_has_sync(const struct rf_array *a);

/* Slots whose device is being rebuilt, and (raid4/5/6) the member sector
 * below which they are. */
uint64_t rf_array_recovering(const struct rf_array *a);
/* Whether the rebuild under way covers only what the bitmap marks (re-adds). */
bool rf_array_recover_dirty_only(const struct rf_array *a);
uint64_t rf_array_recovery_cp(const struct rf_array *a);
/* Whether the members are read-only under a copy-on-write overlay. */
bool rf_array_overlay(const struct rf_array *a);

/* The array's reconfiguration lock (outermost, engine.h): held to read the
 * device table from outside a drain, and around every drain. */
void rf_array_reconf_lock(struct rf_array *a);
void rf_array_reconf_unlock(struct rf_array *a);

/* The management thread's state (member.c), kept by the array. */
struct rf_mgmt;
struct rf_mgmt *rf_array_mgmt(const struct rf_array *a);
void rf_array_set_mgmt(struct rf_array *a, struct rf_mgmt *m);

/* The device called name (md/dev-NAME: its file's base name); its
 * number, or -ENOENT.  reconf_lock held. */
int rf_dev_lookup(struct rf_array *a, const char *name);

/* member.c: the management thread (spares taking failed slots, rebuild
 * start and end), and what the sync thread tells it.  The core starts,
 * stops and kicks it. */
int rf_mgmt_start(struct rf_array *a);
void rf_mgmt_stop(struct rf_array *a);
void rf_mgmt_free(struct rf_array *a);
void rf_mgmt_kick(struct rf_array *a);
/* The RECOVER walk ended: completed, or stopped at pos (member sectors). */
void rf_recovery_ended(struct rf_array *a, bool completed, uint64_t pos);

/* Slot member failed (idempotent, logs once). */
void rf_member_fail(struct rf_array *a, int member, int err, const char *what, uint64_t off);

/* Run fn(arg) with writes drained (none in flight, new ones held at the
 * barrier), then let the held ones go; fn's result.  Blocks the caller:
 * never from a worker, a req->done() callback or a hook. */
int rf_array_quiesced(struct rf_array *a, int (*fn)(void *arg), void *arg);
/* The same with reads drained too (member IO stops entirely): for
 * changes of the device table. */
int rf_array_quiesced_all(struct rf_array *a, int (*fn)(void *arg), void *arg);

#endif
