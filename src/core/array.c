/* SPDX-License-Identifier: GPL-2.0-or-later */
/* array.c - the array: open, start, close, tunables, what md shows.
 *
 * rf_array_open() opens every device (core/dev.c), sets the geometry up
 * and opens the services the superblocks call for (which register their
 * hooks); rf_array_start() makes the worker groups and starts threads;
 * rf_array_close() stops the services, drains, stops the workers and
 * frees everything.  The tunables (stripe_cache_size, group_thread_cnt,
 * worker_groups, rmw_level) are changed by building new groups first and
 * swapping them in with every request drained.
 *
 * The core's files: array.c (this), dev.c (the device table), request.c
 * (submit, pieces, member failure), barrier.c (the drain barrier),
 * stripe_cache.c (stripe heads), workers.c (groups, threads, inline
 * workers).  The lock order of every lock is in engine.h.
 *
 * What it does NOT do: know level geometry (the level modules do), FUSE,
 * or the services' internals (they plug in through core/hooks.h).
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/core_test.h"
#include "core/engine.h"
#include "raidfuse/fault.h"
#include "raidfuse/lockcheck.h"
#include "raidfuse/nbd.h"
#include "raidfuse/overlay.h"

/* ---- the stack (hooks.h) ---- */

/* Set once, before any array opens (hooks.h). */
static const struct rf_stack *stack;

void rf_stack_set(const struct rf_stack *s)
{
	stack = s;
}

const struct rf_level_ops *rf_level_ops_of(int level)
{
	int i;

	for (i = 0; stack && level >= 0 && level < 32 && stack->levels[i]; i++)
		if (stack->levels[i]->md_levels >> level & 1)
			return stack->levels[i];
	return NULL;
}

/* What an unset group_thread_cnt becomes where a member can make IO
 * wait: one thread in each group (a group per CPU by default). */
#define RF_AUTO_GROUP_THREADS 1

static int mgmt_start(struct rf_array *a)
{
	return stack && stack->mgmt ? stack->mgmt->start(a) : 0;
}

static void mgmt_stop(struct rf_array *a)
{
	if (stack && stack->mgmt)
		stack->mgmt->stop(a);
}

static void mgmt_free(struct rf_array *a)
{
	if (stack && stack->mgmt)
		stack->mgmt->free(a);
}

void rf_array_kick_mgmt(struct rf_array *a)
{
	if (stack && stack->mgmt)
		stack->mgmt->kick(a);
}

/* ---- array setup ---- */

static void array_free(struct rf_array *a)
{
	int i;

	for (i = 0; i < a->nhooks; i++)
		if (a->hooks[i].h->close)
			a->hooks[i].h->close(a->hooks[i].priv);
	mgmt_free(a);
	for (i = 0; i < a->ndevs; i++)
		rf_dev_release(&a->devs[i]);
	pthread_mutex_destroy(&a->dev_lock);
	free(a->name);
	free(a->backup_file);
	free(a);
}

/* The name of an overlay over members without md superblocks (a config
 * array): what the config says of the geometry, hashed (overlay.h
 * rf_ovl_open_nosb()); the same config gives the same files. */
static void overlay_key(const struct rf_array *a, uint8_t key[16])
{
	uint64_t words[4 + RF_MAX_MEMBERS];
	int i, k;

	memset(words, 0, sizeof(words));
	words[0] = (uint64_t)a->geom.level << 32 | (uint32_t)a->geom.layout;
	words[1] = (uint64_t)a->geom.chunk_sectors << 32 | (uint32_t)a->nmembers;
	words[2] = a->geom.dev_sectors;
	for (i = 0; i < a->nmembers; i++)
		words[4 + i] = a->devs[i].data_offset;
	for (k = 0; k < 4; k++) {
		uint32_t c;

		words[3] = 0x7266206e6f736230ull + (uint64_t)k;         /* "rf nosb0" + k */
		c = rf_ovl_crc32c(words, sizeof(words));
		memcpy(key + 4 * k, &c, 4);
	}
}

/* Every write to the members goes to copy-on-write files in dir; the
 * overlay runs on the synchronous queue (its own locking, no O_DIRECT).
 * Members without superblocks (metadata none) are named by overlay_key(). */
static int overlay_open(struct rf_array *a, const char *dir, char *err, size_t errlen)
{
	uint8_t key[16];
	int i, ret;

	overlay_key(a, key);
	for (i = 0; i < a->nmembers; i++) {
		struct rf_ovl *o;

		if (!(a->present & (1ull << i)))
			continue;
		if (a->devs[i].io.nbd) {
			snprintf(err, errlen, "member %d (%s): an overlay takes files and block devices, not NBD "
				 "exports", i, a->devs[i].path);
			return -EINVAL;
		}
		ret = a->metadata ? rf_ovl_open(dir, a->devs[i].io.fd, a->devs[i].path, &o, err, errlen) :
				    rf_ovl_open_nosb(dir, a->devs[i].io.fd, a->devs[i].path, key, (uint32_t)i, &o, err,
						     errlen);
		if (ret)
			return ret;
		a->devs[i].io.layer = o;
		/* The layer does all of the IO, buffered. */
		if (a->devs[i].io.fd_direct >= 0)
			close(a->devs[i].io.fd_direct);
		a->devs[i].io.fd_direct = -1;
		a->devs[i].io.direct = 0;
	}
	a->ioq_init = a->inline_ioq_init = rf_ioq_init_overlay;
	return 0;
}

/* The previous geometry of a reshape under way, checked as md checks it,
 * and every member's room for both (core/engine.h rf_geom_at()).  0 or
 * -EINVAL/-ENOSPC with a message. */
static int reshape_open(struct rf_array *a, const struct rf_config *cfg, char *err, size_t errlen)
{
	const struct rf_config_reshape *c = &cfg->reshape;
	struct rf_reshape *rs = &a->reshape;
	int64_t min_diff = 0;
	bool first = true;
	char why[256];
	int i, ret;

	rs->active = true;
	rs->backwards = c->backwards;
	rs->position = c->position;
	rs->prev.level = cfg->level;
	rs->prev.layout = c->prev_layout;
	rs->prev.raid_disks = c->prev_raid_disks;
	rs->prev.chunk_sectors = c->prev_chunk_bytes / 512;
	rs->prev.dev_sectors = a->geom.dev_sectors;
	/* A backup file given: a position in the critical section is taken
	 * up (services/reshape.c restores it before the array serves). */
	rs->backup = cfg->backup_file && !a->readonly && !c->backwards;
	if (a->nmembers != (c->raid_disks > c->prev_raid_disks ? c->raid_disks : c->prev_raid_disks)) {
		snprintf(err, errlen, "%s: a reshape from %d to %d devices over %d slots", cfg->path,
			 c->prev_raid_disks, c->raid_disks, a->nmembers);
		return -EINVAL;
	}
	for (i = 0; i < a->nmembers; i++) {
		const struct rf_dev *m = &a->devs[i];
		int64_t diff;

		if (m->new_data_offset == UINT64_MAX) {
			snprintf(err, errlen, "member %d (%s): its superblock puts the reshape's new data offset "
				 "before the member's start", i, m->path);
			return -EINVAL;
		}
		if (!(a->present & (1ull << i)))
			continue;
		/* md's run(): the least room any member leaves between the
		 * geometries, in the reshape's direction. */
		diff = (int64_t)(m->new_data_offset / 512) - (int64_t)(m->data_offset / 512);
		if (first || (rs->backwards ? diff < min_diff : diff > min_diff))
			min_diff = diff;
		first = false;
	}
	ret = rf_reshape_init(&a->geom, rs, min_diff, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "%s: %s", cfg->path, why);
		return ret;
	}
	for (i = 0; i < a->nmembers; i++) {
		const struct rf_dev *m = &a->devs[i];
		uint64_t need = m->new_data_offset + a->geom.dev_sectors * 512;

		if ((a->present & (1ull << i)) && m->size < need) {
			snprintf(err, errlen, "member %d (%s): %llu bytes, the reshape's new geometry needs %llu "
				 "(new data offset %llu)", i, m->path, (unsigned long long)m->size,
				 (unsigned long long)need, (unsigned long long)m->new_data_offset);
			return -ENOSPC;
		}
	}
	return 0;
}
/* The fault state of member slot `member` at open: off, then armed with
 * the config's faults entry for that member, if it has one.  0 or
 * -ENOMEM. */
static int fault_from_config(const struct rf_config *cfg, int member, struct rf_fault **out)
{
	struct rf_fault *f = rf_fault_new();
	int i;

	if (!f)
		return -ENOMEM;
	for (i = 0; i < cfg->nfaults; i++)
		if (cfg->faults[i].member == member)
			rf_fault_set(f, &cfg->faults[i].spec);
	*out = f;
	return 0;
}


/* A new array's fields from cfg, its locks and lists (no device open). */
static struct rf_array *array_new(const struct rf_config *cfg)
{
	struct rf_array *a = calloc(1, sizeof(*a));
	int i;

	if (!a)
		return NULL;
	a->nmembers = a->ndevs = cfg->nmembers;
	for (i = 0; i < RF_MAX_DEVS; i++)
		rf_dev_init(&a->devs[i]);
	pthread_mutex_init(&a->dev_lock, NULL);
	rf_lock_rank(&a->dev_lock, RF_LOCK_DEV, "dev_lock");
	a->name = strdup(cfg->name);
	a->reshape_then = cfg->reshape.active && cfg->reshape.then_raid0 ? 0 : -1;
	a->backup_file = cfg->backup_file ? strdup(cfg->backup_file) : NULL;
	/* Mid-reshape behind an overlay: read-only (the reshape is the
	 * members' to continue, services/reshape.c). */
	a->readonly = cfg->readonly || (cfg->reshape.active && cfg->overlay_dir);
	a->member_timeout_ms = cfg->member_timeout_ms ? cfg->member_timeout_ms : RF_NBD_TIMEOUT_MS_DEFAULT;
	a->member_io = cfg->member_io;
	a->overlay = cfg->overlay_dir != NULL;
	a->metadata = cfg->has_uuid ? cfg->metadata : 0;
	a->stripe_size = cfg->stripe_size ? cfg->stripe_size : 4096;
	a->rmw_level = cfg->rmw_level;
	a->stripe_cache_size = cfg->stripe_cache_size;
	a->group_thread_cnt = cfg->group_thread_cnt;
	a->worker_groups = cfg->worker_groups;
	a->ops = rf_level_ops_of(cfg->level);
	a->ioq_init = rf_ioq_init_uring;
	a->inline_ioq_init = rf_ioq_init_sync;
	pthread_mutex_init(&a->start_lock, NULL);
	rf_lock_rank(&a->start_lock, RF_LOCK_LEAF, "start_lock");
	pthread_cond_init(&a->start_cond, NULL);
	pthread_mutex_init(&a->pool_lock, NULL);
	rf_lock_rank(&a->pool_lock, RF_LOCK_LEAF, "pool_lock");
	pthread_mutex_init(&a->reconf_lock, NULL);
	rf_lock_rank(&a->reconf_lock, RF_LOCK_RECONF, "reconf_lock");
	pthread_mutex_init(&a->bar_lock, NULL);
	rf_lock_rank(&a->bar_lock, RF_LOCK_LEAF, "bar_lock");
	pthread_cond_init(&a->bar_cond, NULL);
	STAILQ_INIT(&a->held);
	rf_rangelock_init(&a->rl, rf_range_resubmit, a);   /* default attributes: cannot fail */
	return a;
}

/* What opening the members found: the bytes each may give the array
 * (the smallest after its data offset, or the config's size), which member
 * that is (-1: the size key), how many are missing. */
struct members_found {
	uint64_t usable;
	int smallest, nmissing;
};

/* Open cfg's members into their slots, each checked for room; a missing
 * one is marked faulty.  0, or -errno with err. */
static int open_members(struct rf_array *a, const struct rf_config *cfg, struct members_found *f, char *err,
			size_t errlen)
{
	uint64_t usable = UINT64_MAX;
	int i, ret;

	f->smallest = -1;
	f->nmissing = 0;
	for (i = 0; i < a->nmembers; i++) {
		struct rf_dev *m = &a->devs[i];
		char who[PATH_MAX + 32];

		m->data_offset = cfg->member_offsets ? cfg->member_offset[i] : cfg->data_offset;
		m->new_data_offset = cfg->reshape.active ? cfg->reshape.new_offset[i] : m->data_offset;
		if (!cfg->members[i]) {
			m->path = strdup("missing");
			m->flags = RF_DEV_MISSING | RF_DEV_FAULTY;
			a->faulty |= 1ull << i;
			f->nmissing++;
			continue;
		}
		m->path = strdup(cfg->members[i]);
		snprintf(who, sizeof(who), "member %d (%s)", i, cfg->members[i]);
		/* Read-only (--ro, overlays) opens nothing for writing and takes
		 * a shared lock: other read-only servers may share the member, a
		 * writer may not. */
		ret = rf_dev_open_into(a, m, cfg->members[i], who, a->readonly || a->overlay, err, errlen);
		if (ret)
			return ret;
		a->present |= 1ull << i;
		m->flags = RF_DEV_IN_SYNC | ((cfg->failfast >> i) & 1 ? RF_DEV_FAILFAST : 0) |
			   ((cfg->write_mostly >> i) & 1 ? RF_DEV_WRITE_MOSTLY : 0);
		if (m->size < m->data_offset + 2 * a->stripe_size) {
			snprintf(err, errlen, "member %d (%s): %llu bytes is too small: data_offset %llu and two "
				 "blocks of %u bytes need %llu", i, m->path, (unsigned long long)m->size,
				 (unsigned long long)m->data_offset, a->stripe_size,
				 (unsigned long long)(m->data_offset + 2 * a->stripe_size));
			return -ENOSPC;
		}
		if (m->size - m->data_offset < usable) {
			usable = m->size - m->data_offset;
			f->smallest = i;
		}
		/* raid0 with md superblocks: each member's own data size (md's
		 * zones when they differ). */
		if (cfg->level == 0 && cfg->member_offsets && !cfg->size)
			a->geom.r0_sectors[i] = (cfg->member_data[i] && cfg->member_data[i] < m->size - m->data_offset ?
						 cfg->member_data[i] : m->size - m->data_offset) / 512;
	}
	if (cfg->size) {
		for (i = 0; i < a->nmembers; i++) {
			struct rf_dev *m = &a->devs[i];

			if ((a->present & (1ull << i)) && m->size - m->data_offset < cfg->size) {
				snprintf(err, errlen, "member %d (%s): %llu bytes after data_offset, size needs %llu",
					 i, m->path, (unsigned long long)(m->size - m->data_offset),
					 (unsigned long long)cfg->size);
				return -ENOSPC;
			}
		}
		usable = cfg->size;
	}
	f->usable = usable;
	return 0;
}

/* The geometry from cfg and what the members give; an error names the
 * member (or the size key) that set the limit.  0, or -errno with err. */
static int open_geom(struct rf_array *a, const struct rf_config *cfg, const struct members_found *f, char *err,
		     size_t errlen)
{
	uint64_t usable = f->usable;
	int smallest = f->smallest, ret;

	a->geom.level = cfg->level;
	a->geom.layout = cfg->layout;
	a->geom.raid_disks = cfg->reshape.active ? cfg->reshape.raid_disks : cfg->nmembers;
	a->geom.chunk_sectors = cfg->level == 1 ? 0 : cfg->chunk_bytes / 512;
	/* md keeps whole 4 KiB blocks (and whole chunks, which geom rounds to) */
	a->geom.dev_sectors = (usable & ~(uint64_t)(a->stripe_size - 1)) / 512;
	ret = rf_geom_init(&a->geom, err, errlen);
	if (ret) {
		char why[256];

		/* Say which member and sizes led there. */
		snprintf(why, sizeof(why), "%s", err);
		if (cfg->size || smallest < 0)
			snprintf(err, errlen, "%s: %s (size gives each member %llu bytes)", cfg->path, why,
				 (unsigned long long)usable);
		else
			snprintf(err, errlen, "%s: %s (the smallest, member %d (%s), holds %llu bytes after data_offset %llu)",
				 cfg->path, why, smallest, a->devs[smallest].path, (unsigned long long)usable,
				 (unsigned long long)a->devs[smallest].data_offset);
		return ret;
	}
	if (cfg->reshape.active) {
		ret = reshape_open(a, cfg, err, errlen);
		if (ret)
			return ret;
		atomic_store(&a->reshape_pos, a->reshape.position);
		atomic_store(&a->reshape_rec, a->reshape.position);
		atomic_store(&a->reshaping, true);
	}
	return 0;
}

/* Refused where the members missing are more than the level survives:
 * -EINVAL with err. */
static int enough_members(struct rf_array *a, const struct rf_config *cfg, int nmissing, char *err, size_t errlen)
{
	/* The level's rule (md's enough()): raid10's by its copy sets, one
	 * member of each pair may be missing, more than copies - 1 in all. */
	if (a->ops->failed(a, a->faulty)) {
		if (a->ops->loss_words)
			snprintf(err, errlen, "%s: %d member(s) missing, and %s", cfg->path, nmissing,
				 a->ops->loss_words);
		else
			snprintf(err, errlen, "%s: %d member(s) missing, level %d tolerates %d", cfg->path, nmissing,
				 cfg->level, a->geom.max_degraded);
		return -EINVAL;
	}
	return 0;
}

/* Open cfg's spares after the members, each checked to hold what the
 * members use.  0, or -errno with err: a spare that cannot be opened ends
 * it; those too small are named together (-ENOSPC), so that one fix
 * covers them all. */
static int open_spares(struct rf_array *a, const struct rf_config *cfg, char *err, size_t errlen)
{
	size_t used = 0;
	int i, ret, small = 0;

	for (i = 0; i < cfg->nspares; i++) {
		struct rf_dev *m = &a->devs[a->ndevs];
		uint64_t doff = cfg->member_offsets ? cfg->spare_offset[i] : cfg->data_offset;
		uint64_t need = doff + a->geom.dev_sectors * 512;
		char who[PATH_MAX + 32];

		m->data_offset = doff;
		m->new_data_offset = cfg->reshape.active ? cfg->reshape.spare_new_offset[i] : doff;
		m->flags = RF_DEV_SPARE;
		m->path = strdup(cfg->spares[i]);
		m->io.fault = rf_fault_new();
		a->ndevs++;
		if (!m->io.fault)
			return -ENOMEM;
		snprintf(who, sizeof(who), "member %d (%s)", a->ndevs - 1, cfg->spares[i]);
		ret = m->path ? rf_dev_open_into(a, m, cfg->spares[i], who, a->readonly || a->overlay, err, errlen) :
				-ENOMEM;
		if (ret)
			return ret;
		if (m->size < need && used < errlen) {
			int k = snprintf(err + used, errlen - used, "%s%s: spare %d (%s): %llu bytes is too small: the "
					 "members use %llu", small ? "; " : "", cfg->path, i, m->path,
					 (unsigned long long)m->size, (unsigned long long)need);

			used += k > 0 ? (size_t)k : 0;
		}
		small += m->size < need;
	}
	return small ? -ENOSPC : 0;
}

/* How member IO is submitted, from where the devices live. */
static void choose_io(struct rf_array *a)
{
	bool can_wait;           /* some member or spare on a disk, a block device or NBD */
	int i;

	/* An inline submitter runs member IO on its own thread (the
	 * synchronous queue) only where no device can hang a system call:
	 * every file in memory (NBD commands have their own deadline).  On
	 * a disk, a FUSE thread stuck in pwrite() would hold its request,
	 * and every drain behind it, past any deadline; on an io_uring
	 * queue it waits on its ring, and a write the member does not
	 * answer ends at member_timeout (ioq.h). */
	can_wait = false;
	for (i = 0; i < a->ndevs; i++) {
		const struct rf_dev *d = &a->devs[i];

		if (d->io.nbd) {
			can_wait = true;
		} else if (d->io.fd >= 0 && !rf_fdmap_in_memory(d->io.fd)) {
			a->inline_ioq_init = rf_ioq_init_uring_shared;
			can_wait = true;
		}
	}
	/* group_thread_cnt unset: where a member can make IO wait (a disk,
	 * a block device, NBD), worker threads do the stripe work and the
	 * member IO, each with many IOs in flight on its ring, and the FUSE
	 * thread goes back for the next request as soon as it queued one:
	 * a FUSE thread that waited for its member IO itself would bound
	 * the disk's queue by the number of FUSE threads.  Every member in
	 * memory: the submitter does it inline (no hand-off; tmpfs IO does
	 * not wait). */
	if (a->group_thread_cnt < 0)
		a->group_thread_cnt = can_wait ? RF_AUTO_GROUP_THREADS : 0;
	if (rf_chunk_bytes(a) && rf_chunk_bytes(a) < a->stripe_size)
		a->stripe_size = rf_chunk_bytes(a);
}

int rf_array_open(const struct rf_config *cfg, struct rf_array **out, char *err, size_t errlen)
{
	struct rf_array *a = array_new(cfg);
	struct members_found f;
	int i, ret;

	if (!a)
		return -ENOMEM;
	if (!a->ops) {
		if (!stack)
			snprintf(err, errlen, "%s: this program set no levels (rf_stack_set)", cfg->path);
		else
			snprintf(err, errlen, "%s: level %d is not supported", cfg->path, cfg->level);
		ret = -EINVAL;
		goto fail;
	}
	ret = open_members(a, cfg, &f, err, errlen);
	if (!ret)
		ret = open_geom(a, cfg, &f, err, errlen);
	if (!ret)
		ret = enough_members(a, cfg, f.nmissing, err, errlen);
	if (ret)
		goto fail;
	rf_devs_flags_changed(a);
	ret = open_spares(a, cfg, err, errlen);
	if (ret)
		goto fail;
	choose_io(a);
	a->size = a->geom.array_sectors * 512;
	for (i = 0; i < a->nmembers; i++) {
		ret = fault_from_config(cfg, i, &a->devs[i].io.fault);
		if (ret)
			goto fail;
	}
	if (cfg->overlay_dir) {
		ret = overlay_open(a, cfg->overlay_dir, err, errlen);
		if (ret)
			goto fail;
	}
	/* The services (hooks.h), each deciding whether it applies. */
	for (i = 0; stack && stack->services[i]; i++) {
		ret = stack->services[i]->open(a, cfg, err, errlen);
		if (ret)
			goto fail;
	}
	*out = a;
	return 0;
fail:
	array_free(a);
	return ret;
}

bool rf_array_readonly(const struct rf_array *a)
{
	return a->readonly;
}

bool rf_array_reshape(const struct rf_array *a, uint64_t *position, bool *backwards)
{
	struct rf_array *w = (struct rf_array *)a;
	/* reshape is written before reshaping is set (a grow begins): read
	 * after it only (pairs with the store in rf_array_reshape_begin()). */
	bool on = atomic_load(&w->reshaping);

	*position = atomic_load(&w->reshape_pos);
	*backwards = on && a->reshape.backwards;
	return on;
}

uint64_t rf_array_reshape_recorded(const struct rf_array *a)
{
	return atomic_load(&((struct rf_array *)a)->reshape_rec);
}

void rf_array_set_reshape_recorded(struct rf_array *a, uint64_t position)
{
	atomic_store(&a->reshape_rec, position);
}

bool rf_array_reshape_moving(const struct rf_array *a)
{
	return atomic_load(&((struct rf_array *)a)->reshape_moving);
}

void rf_array_set_reshape_moving(struct rf_array *a, bool moving)
{
	atomic_store(&a->reshape_moving, moving);
}

void rf_array_reshape_restored(struct rf_array *a, uint64_t position)
{
	a->reshape.position = position;
	atomic_store(&a->reshape_pos, position);
	atomic_store(&a->reshape_rec, position);
}

void rf_array_on_resize(struct rf_array *a, void (*fn)(void *priv), void *priv)
{
	a->resize_fn = fn;
	a->resize_priv = priv;
}

void rf_array_set_prev_absent(struct rf_array *a, uint64_t mask)
{
	a->reshape.prev_absent |= mask;
}

void rf_array_reshape_ended(struct rf_array *a)
{
	/* Kept until the superblocks said the reshape ended (sbstate.c
	 * clears the added member's recovery_offset by it). */
	rf_devs_lock(a);
	a->reshape.prev_absent = 0;
	rf_devs_unlock(a);
	atomic_store(&a->reshaping, false);
	atomic_store(&a->reshape_pos, 0);
}

void rf_array_set_serving(struct rf_array *a)
{
	atomic_store(&a->serving, true);
}

bool rf_array_serving(const struct rf_array *a)
{
	return atomic_load(&((struct rf_array *)a)->serving);
}

void rf_array_resized(struct rf_array *a)
{
	if (a->resize_fn)
		a->resize_fn(a->resize_priv);
}

const struct rf_reshape *rf_array_reshape_state(const struct rf_array *a)
{
	return &a->reshape;
}

void rf_array_reshape_readonly(struct rf_array *a, const char *why)
{
	a->readonly = true;
	rf_warn("%s: served read-only: the reshape under way is not continued: %s", a->name, why);
}

/* Writes drained (reconf_lock held): hold reads too, so that no request
 * is between its split and its end while the position moves. */
void rf_array_reshape_commit(struct rf_array *a, uint64_t position)
{
	rf_drain(a, RF_HOLD_READS);
	a->reshape.position = position;
	atomic_store(&a->reshape_pos, position);
	/* Heads of either geometry at the rows that moved hold what the
	 * members held before: gone. */
	rf_stripe_cache_forget(a, 0, UINT64_MAX);
	rf_release(a, RF_HOLD_WRITES);
}

/* Every request drained: the slot count becomes raid_disks, with new
 * groups whose stripe heads have a column per slot (nothing is in flight
 * on the old ones).  0, or -errno with why (nothing changed). */
static int regroup(struct rf_array *a, int raid_disks, char *err, size_t errlen)
{
	struct rf_group *groups;
	int ret;

	ret = rf_groups_alloc(a, a->ngroups, a->group_thread_cnt, a->stripe_cache_size, raid_disks, &groups);
	if (!ret) {
		ret = rf_groups_start(a, groups, a->ngroups);
		if (ret) {
			rf_groups_stop(groups, a->ngroups);
			rf_groups_free(a, groups, a->ngroups);
		}
	}
	if (ret) {
		snprintf(err, errlen, "stripe heads for %d members: %s", raid_disks, strerror(-ret));
		return ret;
	}
	rf_groups_stop(a->groups, a->ngroups);
	rf_groups_free(a, a->groups, a->ngroups);
	rf_devs_lock(a);
	a->nmembers = raid_disks;
	rf_devs_unlock(a);
	a->groups = groups;
	return 0;
}

/* dev_lock held: a new empty place (md's missing device) at the end of
 * the table; its index. */
static int new_missing(struct rf_array *a)
{
	int i = rf_dev_append(a);

	rf_dev_init(&a->devs[i]);
	a->devs[i].path = strdup("missing");
	a->devs[i].io.fault = rf_fault_new();
	a->devs[i].flags = RF_DEV_MISSING | RF_DEV_FAULTY;
	a->devs[i].data_offset = a->devs[i].new_data_offset = a->devs[0].data_offset;
	return i;
}

/* dev_lock held: slot k an empty place, put where the first spare was;
 * the spares move behind.  a->nmembers counts it. */
static void empty_slot(struct rf_array *a, int k)
{
	rf_dev_swap(a, k, new_missing(a));
	a->present &= ~(1ull << k);
	atomic_fetch_or(&a->faulty, 1ull << k);
}

int rf_array_add_mirrors(struct rf_array *a, int raid_disks, char *err, size_t errlen)
{
	struct rf_geom g = a->geom;
	int oldn = a->nmembers, k, ret;

	if (a->geom.level != 1 || raid_disks <= oldn || a->ndevs + raid_disks - oldn > RF_MAX_DEVS) {
		snprintf(err, errlen, "raid%d of %d: no %d mirrors here", a->geom.level, oldn, raid_disks);
		return -EINVAL;
	}
	g.raid_disks = raid_disks;
	ret = rf_geom_init(&g, err, errlen);
	if (!ret)
		ret = regroup(a, raid_disks, err, errlen);
	if (ret)
		return ret;
	/* Each new slot an empty place (md's missing device). */
	rf_devs_lock(a);
	for (k = oldn; k < raid_disks; k++)
		empty_slot(a, k);
	rf_devs_unlock(a);
	a->geom = g;
	rf_devs_flags_changed(a);
	return 0;
}

/* Slots i and j of a mask trade bits. */
static uint64_t bits_swap(uint64_t m, int i, int j)
{
	uint64_t bi = m >> i & 1, bj = m >> j & 1;

	m &= ~(1ull << i | 1ull << j);
	return m | bi << j | bj << i;
}

int rf_array_remove_mirrors(struct rf_array *a, int raid_disks, char *err, size_t errlen)
{
	struct rf_geom g = a->geom;
	int oldn = a->nmembers, used = __builtin_popcountll(a->present & ((1ull << oldn) - 1)), i, d2, ret;
	uint64_t faulty;

	if (a->geom.level != 1 || raid_disks >= oldn || raid_disks < 1) {
		snprintf(err, errlen, "raid%d of %d: no shrink to %d mirrors here", a->geom.level, oldn, raid_disks);
		return -EINVAL;
	}
	if (atomic_load(&a->recovering) || atomic_load(&a->replacing)) {
		snprintf(err, errlen, "a rebuild or a replacement is under way");
		return -EBUSY;
	}
	if (used > raid_disks) {
		snprintf(err, errlen, "%d slots hold a device, more than %d: fail and remove one first (md keeps "
			 "every device a slot holds)", used, raid_disks);
		return -EBUSY;
	}
	g.raid_disks = raid_disks;
	ret = rf_geom_init(&g, err, errlen);
	if (ret)
		return ret;
	/* The devices to the front, in slot order (md's raid1_reshape);
	 * the empty slots behind them. */
	rf_devs_lock(a);
	faulty = atomic_load(&a->faulty);
	for (i = d2 = 0; i < oldn; i++) {
		if (!(a->present >> i & 1))
			continue;
		if (i != d2) {
			rf_dev_swap(a, d2, i);
			a->present = bits_swap(a->present, d2, i);
			faulty = bits_swap(faulty, d2, i);
		}
		d2++;
	}
	rf_devs_unlock(a);
	ret = regroup(a, raid_disks, err, errlen);
	rf_devs_lock(a);
	if (!ret) {
		/* The empty slots past the new count: their placeholders go. */
		for (i = oldn - 1; i >= raid_disks; i--)
			if (a->devs[i].flags & RF_DEV_MISSING)
				rf_dev_drop(a, i);
		faulty &= (1ull << raid_disks) - 1;
		a->present &= (1ull << raid_disks) - 1;
		a->geom = g;
	}
	atomic_store(&a->faulty, faulty);
	rf_devs_unlock(a);
	rf_devs_flags_changed(a);
	return ret;
}

/* The geometry a takeover makes of the array's: level, layout, chunk
 * over raid_disks slots, the same size.  0, or -EINVAL with why. */
static int takeover_geom(const struct rf_array *a, int level, int layout, int raid_disks, uint32_t chunk_sectors,
			 struct rf_geom *g, char *err, size_t errlen)
{
	int i, ret;

	*g = a->geom;
	g->level = level;
	g->layout = layout;
	g->raid_disks = raid_disks;
	g->chunk_sectors = level == 1 ? 0 : chunk_sectors;
	/* raid0 of one zone: every member its dev_sectors. */
	memset(g->r0_sectors, 0, sizeof(g->r0_sectors));
	for (i = 0; level == 0 && i < raid_disks; i++)
		g->r0_sectors[i] = a->geom.dev_sectors;
	ret = rf_geom_init(g, err, errlen);
	if (ret)
		return ret;
	if (!rf_level_ops_of(level) || g->array_sectors != a->geom.array_sectors || a->reshape.active) {
		snprintf(err, errlen, "raid%d of %d to raid%d of %d: not a takeover in place", a->geom.level,
			 a->nmembers, level, raid_disks);
		return -EINVAL;
	}
	return 0;
}

/* The level ops and worker groups of geometry g (the groups' stripe heads
 * are the level's, or none, with a column per slot).  0, or -errno with
 * why (nothing changed). */
static int takeover_ops(struct rf_array *a, const struct rf_geom *g, char *err, size_t errlen)
{
	const struct rf_level_ops *ops = rf_level_ops_of(g->level), *old_ops = a->ops;
	uint32_t old_stripe = a->stripe_size, chunk = g->chunk_sectors * 512;
	int ret;

	a->ops = ops;
	if (chunk && chunk < a->stripe_size)
		a->stripe_size = chunk;
	if (ops == old_ops && g->raid_disks == a->nmembers)
		return 0;
	ret = regroup(a, g->raid_disks, err, errlen);
	if (ret) {
		a->ops = old_ops;
		a->stripe_size = old_stripe;
	}
	return ret;
}

/* dev_lock held: device i, out of the slots now, a spare; an empty
 * place gone (a drop moves the last device into i). */
static void left_slot(struct rf_array *a, int i)
{
	if (a->devs[i].flags & RF_DEV_MISSING)
		rf_dev_drop(a, i);
	else
		a->devs[i].flags = RF_DEV_SPARE;
}

/* The takeover's geometry in force, the devices' changes told. */
static void takeover_done(struct rf_array *a, const struct rf_geom *g)
{
	int i;

	a->geom = *g;
	rf_stripe_cache_forget(a, 0, UINT64_MAX);
	rf_devs_flags_changed(a);
	for (i = 0; i < a->ndevs; i++)
		rf_dev_changed(a, i);
}

int rf_array_takeover(struct rf_array *a, int level, int layout, int raid_disks, uint32_t chunk_sectors, char *err,
		      size_t errlen)
{
	struct rf_geom g;
	int oldn = a->nmembers, i, ret;

	ret = takeover_geom(a, level, layout, raid_disks, chunk_sectors, &g, err, errlen);
	if (ret)
		return ret;
	if (raid_disks > oldn + 1 || raid_disks < oldn - 1 || (raid_disks > oldn && a->ndevs >= RF_MAX_DEVS)) {
		snprintf(err, errlen, "raid%d of %d to raid%d of %d: not a takeover in place", a->geom.level, oldn,
			 level, raid_disks);
		return -EINVAL;
	}
	{
		/* The slots left, and the one added: no more out than the new
		 * level survives. */
		uint64_t keep = raid_disks < oldn ? (1ull << raid_disks) - 1 : ~0ull;
		uint64_t out = (rf_faulty(a) & keep) | (raid_disks > oldn ? 1ull << oldn : 0);

		if (__builtin_popcountll(out) > g.max_degraded) {
			snprintf(err, errlen, "raid%d of %d with %d member(s) out: raid%d of %d survives %d", a->geom.level,
				 oldn, __builtin_popcountll(out) - (raid_disks > oldn), level, raid_disks,
				 g.max_degraded);
			return -EINVAL;
		}
	}
	ret = takeover_ops(a, &g, err, errlen);
	if (ret)
		return ret;
	rf_devs_lock(a);
	/* A slot more (md's raid0 -> raid4/5): empty. */
	if (raid_disks > oldn)
		empty_slot(a, oldn);
	/* A slot fewer (Q's or P's member, which held no data): its device
	 * a spare, an empty place gone. */
	for (i = oldn - 1; i >= raid_disks; i--) {
		atomic_fetch_and(&a->faulty, ~(1ull << i));
		a->present &= ~(1ull << i);
		left_slot(a, i);
	}
	rf_devs_unlock(a);
	takeover_done(a, &g);
	return 0;
}

int rf_array_takeover_slots(struct rf_array *a, int level, int layout, int raid_disks, uint32_t chunk_sectors,
			    const int *to_slot, char *err, size_t errlen)
{
	struct rf_geom g;
	int oldn = a->nmembers, where[RF_MAX_MEMBERS], from[RF_MAX_MEMBERS], at[RF_MAX_DEVS], kept = 0, i, k, ret;
	uint64_t taken = 0, in_sync = 0, present = 0, faulty = 0, old_present = a->present,
		 old_faulty = rf_faulty(a);

	ret = takeover_geom(a, level, layout, raid_disks, chunk_sectors, &g, err, errlen);
	if (ret)
		return ret;
	for (k = 0; k < raid_disks; k++)
		from[k] = -1;
	for (i = 0; i < oldn; i++) {
		if (to_slot[i] < 0)
			continue;
		if (to_slot[i] >= raid_disks || (taken >> to_slot[i] & 1)) {
			snprintf(err, errlen, "slot %d to slot %d: not a slot of the new %d, or taken twice", i,
				 to_slot[i], raid_disks);
			return -EINVAL;
		}
		taken |= 1ull << to_slot[i];
		from[to_slot[i]] = i;
		kept++;
		if (!(old_faulty >> i & 1))
			in_sync |= 1ull << to_slot[i];
	}
	if (rf_level_ops_of(g.level)->lost(&g, ~in_sync)) {
		snprintf(err, errlen, "raid%d of %d with the slots 0x%llx in sync: some data would have no copy",
			 level, raid_disks, (unsigned long long)in_sync);
		return -EINVAL;
	}
	if (raid_disks > RF_MAX_MEMBERS || a->ndevs + raid_disks - kept > RF_MAX_DEVS) {
		snprintf(err, errlen, "raid%d of %d: more devices than raidfuse keeps (%d)", level, raid_disks,
			 RF_MAX_DEVS);
		return -EINVAL;
	}
	ret = takeover_ops(a, &g, err, errlen);
	if (ret)
		return ret;
	rf_devs_lock(a);
	/* Slot k takes the device of the old slot that maps to it, or a new
	 * empty place; at[] says whose device each index holds (-1: a spare
	 * or an empty place), where[] where each old slot's device is. */
	for (i = 0; i < a->ndevs; i++)
		at[i] = i < oldn ? i : -1;
	for (i = 0; i < oldn; i++)
		where[i] = i;
	for (k = 0; k < raid_disks; k++) {
		int s = from[k], cur;

		if (s >= 0) {
			cur = where[s];
			present |= (old_present >> s & 1) << k;
			faulty |= (old_faulty >> s & 1) << k;
		} else {
			cur = new_missing(a);
			at[cur] = -1;
			faulty |= 1ull << k;
		}
		rf_dev_swap(a, k, cur);
		if (at[k] >= 0)
			where[at[k]] = cur;
		at[cur] = at[k];
		at[k] = s;
	}
	a->present = present;
	atomic_store(&a->faulty, faulty);
	/* The devices that left their slots: spares (the caller may take
	 * them out of the array), empty places gone; from the highest index
	 * down, as a drop moves the last device into its place. */
	for (i = a->ndevs - 1; i >= raid_disks; i--)
		if (at[i] >= 0 && to_slot[at[i]] < 0)
			left_slot(a, i);
	rf_devs_unlock(a);
	takeover_done(a, &g);
	return 0;
}

int rf_array_reshape_begin(struct rf_array *a, const struct rf_geom *to, const struct rf_geom *from,
			   uint64_t prev_absent, int64_t move, bool backwards, bool backup, char *err,
			   size_t errlen)
{
	struct rf_reshape rs = { .active = true, .prev = a->geom, .prev_absent = prev_absent,
				 .backwards = backwards, .backup = backup && !backwards };
	struct rf_geom g = a->geom;
	int oldn = a->nmembers, raid_disks = to->raid_disks, i, ret;

	g.level = to->level;
	g.layout = to->layout;
	g.raid_disks = raid_disks;
	g.chunk_sectors = to->chunk_sectors;
	rs.prev.level = from->level;
	rs.prev.layout = from->layout;
	rs.prev.raid_disks = from->raid_disks;
	rs.prev.chunk_sectors = from->chunk_sectors;
	ret = rf_geom_init(&g, err, errlen);
	if (!ret)
		ret = rf_reshape_init(&g, &rs, move, err, errlen);
	if (!ret && backwards) {
		/* md's raid5_start_reshape: a backward one from the end (the
		 * smaller of the two geometries, as rf_reshape_init() sized). */
		rs.position = g.array_sectors;
		ret = rf_reshape_init(&g, &rs, move, err, errlen);
	}
	if (ret)
		return ret;
	for (i = oldn; i < raid_disks; i++)
		if (i >= a->ndevs || (a->devs[i].flags != RF_DEV_SPARE && !(a->devs[i].flags & RF_DEV_MISSING))) {
			snprintf(err, errlen, "device %d is not a spare to take slot %d", i, i);
			return -EINVAL;
		}
	/* A shrink keeps its slots until it ends (rf_array_reshape_finish()). */
	if (raid_disks > oldn) {
		ret = regroup(a, raid_disks, err, errlen);
		if (ret)
			return ret;
	}
	rf_devs_lock(a);
	/* Every device's offset moves, the spares' too: the superblocks
	 * record the one new_offset on each (md's start_reshape). */
	for (i = 0; i < a->ndevs; i++) {
		int64_t to_off = (int64_t)a->devs[i].data_offset + move * 512;

		if (i < oldn || i < raid_disks || to_off >= 0)
			a->devs[i].new_data_offset = (uint64_t)to_off;
		else
			a->devs[i].new_data_offset = a->devs[i].data_offset;
		/* A new slot takes its spare, or stays an empty place (a
		 * raid0's growth: its new P); a slot absent in the previous
		 * rows whose spare was put there (a raid0's old P) is in. */
		if ((i >= oldn && i < raid_disks && a->devs[i].flags == RF_DEV_SPARE) ||
		    (i < oldn && (prev_absent >> i & 1) && a->devs[i].flags == RF_DEV_SPARE)) {
			a->devs[i].flags = RF_DEV_IN_SYNC;
			a->present |= 1ull << i;
			atomic_fetch_and(&a->faulty, ~(1ull << i));
		} else if (i >= oldn && i < raid_disks) {
			a->present &= ~(1ull << i);
			atomic_fetch_or(&a->faulty, 1ull << i);
		}
	}
	a->reshape = rs;
	rf_devs_unlock(a);
	a->geom = g;
	atomic_store(&a->reshape_pos, rs.position);
	atomic_store(&a->reshape_rec, rs.position);
	atomic_store(&a->reshaping, true);
	rf_devs_flags_changed(a);
	for (i = 0; i < raid_disks; i++)
		if (i >= oldn || (prev_absent >> i & 1))
			rf_dev_changed(a, i);
	return 0;
}

void rf_array_set_reshape_then(struct rf_array *a, int level)
{
	a->reshape_then = level;
}

int rf_array_reshape_then(const struct rf_array *a)
{
	return a->reshape_then;
}

uint32_t rf_array_stripe_size(const struct rf_array *a)
{
	return a->stripe_size;
}

int rf_array_set_backup_file(struct rf_array *a, const char *path)
{
	char *p = path ? strdup(path) : NULL, *old;

	if (path && !p)
		return -ENOMEM;
	rf_devs_lock(a);
	old = a->backup_file;
	a->backup_file = p;
	rf_devs_unlock(a);
	free(old);
	return 0;
}

bool rf_array_drop_backup_file(struct rf_array *a, const char *path)
{
	char *old = NULL;

	rf_devs_lock(a);
	if (a->backup_file && !strcmp(a->backup_file, path)) {
		old = a->backup_file;
		a->backup_file = NULL;
	}
	rf_devs_unlock(a);
	free(old);
	return old != NULL;
}

bool rf_array_backup_file(struct rf_array *a, char *buf, size_t len)
{
	bool has;

	rf_devs_lock(a);
	has = a->backup_file != NULL;
	snprintf(buf, len, "%s", has ? a->backup_file : "");
	rf_devs_unlock(a);
	return has;
}

int rf_array_reshape_finish(struct rf_array *a, char *err, size_t errlen)
{
	struct rf_geom g = a->geom;
	int i, ret, oldn = a->nmembers;

	ret = rf_geom_init(&g, err, errlen);
	if (ret)
		return ret;
	/* A shrink: the slots past the new count go (md's
	 * raid5_finish_reshape: their devices become spares). */
	if (g.raid_disks < oldn) {
		ret = regroup(a, g.raid_disks, err, errlen);
		if (ret)
			return ret;
		rf_devs_lock(a);
		for (i = g.raid_disks; i < oldn; i++) {
			if (!(a->devs[i].flags & RF_DEV_MISSING))
				a->devs[i].flags = RF_DEV_SPARE;
			a->devs[i].data_offset = a->devs[i].new_data_offset;
		}
		a->present &= (1ull << g.raid_disks) - 1;
		atomic_fetch_and(&a->faulty, (1ull << g.raid_disks) - 1);
		rf_devs_unlock(a);
		rf_devs_flags_changed(a);
	}
	/* The device lock too: superblock writers outside the drain read
	 * the offsets and whether a reshape is under way under it. */
	rf_devs_lock(a);
	/* Spares too, as their superblocks' end of the reshape moves them
	 * (md_finish_reshape: every device). */
	for (i = 0; i < a->ndevs; i++)
		a->devs[i].data_offset = a->devs[i].new_data_offset;
	a->reshape.active = false;
	rf_devs_unlock(a);
	a->geom = g;
	a->size = a->ext_size ? a->ext_size : g.array_sectors * 512;
	rf_stripe_cache_forget(a, 0, UINT64_MAX);
	return 0;
}

int rf_array_set_dev_sectors(struct rf_array *a, uint64_t dev_sectors, char *err, size_t errlen)
{
	struct rf_geom g = a->geom;
	int ret;

	g.dev_sectors = dev_sectors;
	ret = rf_geom_init(&g, err, errlen);
	if (ret)
		return ret;
	if (a->ext_size > g.array_sectors * 512) {
		snprintf(err, errlen, "md/array_size is %llu KiB, more than the %llu KiB a used size of %llu KiB "
			 "gives (write \"default\" there, or a smaller size, first)",
			 (unsigned long long)(a->ext_size / 1024), (unsigned long long)(g.array_sectors / 2),
			 (unsigned long long)(dev_sectors / 2));
		return -EINVAL;
	}
	a->geom = g;
	a->size = a->ext_size ? a->ext_size : g.array_sectors * 512;
	rf_stripe_cache_forget(a, 0, UINT64_MAX);
	return 0;
}

int rf_array_set_ext_size(struct rf_array *a, uint64_t bytes)
{
	if (bytes > a->geom.array_sectors * 512)
		return -E2BIG;
	a->ext_size = bytes;
	a->size = bytes ? bytes : a->geom.array_sectors * 512;
	return 0;
}

uint64_t rf_array_ext_size(const struct rf_array *a)
{
	return a->ext_size;
}

int rf_array_start(struct rf_array *a)
{
	int i, ret;

	a->ngroups = rf_ngroups_for(a->worker_groups);
	ret = rf_groups_alloc(a, a->ngroups, a->group_thread_cnt, a->stripe_cache_size, a->nmembers, &a->groups);
	if (ret)
		return ret;
	a->started = true;
	ret = rf_groups_start(a, a->groups, a->ngroups);
	for (i = 0; !ret && i < a->nhooks; i++)
		if (a->hooks[i].h->start)
			ret = a->hooks[i].h->start(a->hooks[i].priv);
	/* Last: it may start a rebuild at once (hooks.h). */
	return ret ? ret : mgmt_start(a);
}

void rf_array_close(struct rf_array *a)
{
	int i;

	if (!a)
		return;
	/* No spare takes a slot from now on (first: hooks.h). */
	mgmt_stop(a);
	/* The services in registration order: the sync thread finishes its
	 * regions and leaves; the superblock state's idle timer drains too:
	 * stop it before the barrier drains for good.  The state is marked
	 * clean once nothing is in flight (array_free()). */
	for (i = 0; i < a->nhooks; i++)
		if (a->hooks[i].h->stop)
			a->hooks[i].h->stop(a->hooks[i].priv);
	if (a->started) {
		/* Whatever waits at the barrier still runs, then nothing may
		 * start: every request has ended when the groups go. */
		pthread_mutex_lock(&a->reconf_lock);
		a->suspended = false;
		rf_release(a, 0);
		rf_drain(a, RF_HOLD_ALL);
		pthread_mutex_unlock(&a->reconf_lock);
	}
	if (a->ops->handle_stripe)
		rf_dbg("%s: stripe write rounds: %llu full, %llu rcw, %llu rmw; %llu held, %llu released by a bound; "
		       "%llu column blocks written from the request, %llu parity blocks computed in place", a->name,
		       (unsigned long long)a->stats.full, (unsigned long long)a->stats.rcw,
		       (unsigned long long)a->stats.rmw, (unsigned long long)a->stats.delayed,
		       (unsigned long long)a->stats.released, (unsigned long long)a->stats.direct,
		       (unsigned long long)a->stats.parity_mapped);
	rf_groups_stop(a->groups, a->ngroups);
	rf_groups_free(a, a->groups, a->ngroups);
	a->groups = NULL;
	rf_inline_free_all(a);
	for (i = 0; i < a->nmembers; i++)
		if (a->devs[i].io.fd >= 0)
			fsync(a->devs[i].io.fd);
	array_free(a);
}

/* ---- runtime control ---- */

enum reshape_what { RESHAPE_CACHE, RESHAPE_THREADS, RESHAPE_GROUPS };

/* Rebuild the groups with one tunable changed.  The new groups are made
 * and their threads started first; the drain covers only the swap, so
 * held requests wait for in-flight ones to end and nothing else.  On
 * failure nothing changes. */
static int reshape(struct rf_array *a, enum reshape_what what, int value)
{
	struct rf_group *groups, *old;
	int ngroups, oldn, ret, wg, nthreads, cache;
	bool shrink;

	pthread_mutex_lock(&a->reconf_lock);
	wg = what == RESHAPE_GROUPS ? value : a->worker_groups;
	nthreads = what == RESHAPE_THREADS ? value : a->group_thread_cnt;
	cache = what == RESHAPE_CACHE ? value : a->stripe_cache_size;
	ngroups = rf_ngroups_for(wg);
	if (ngroups * nthreads > rf_max_worker_threads()) {
		rf_warn("%s: %d group(s) of %d thread(s) would be %d worker threads: the bound is %d (4 per CPU, at "
			"least 8, at most 256; more threads than cores only add context switches)",
			a->name, ngroups, nthreads, ngroups * nthreads, rf_max_worker_threads());
		ret = -EINVAL;
		goto out;
	}
	ret = rf_groups_alloc(a, ngroups, nthreads, cache, a->nmembers, &groups);
	if (ret) {
		rf_err("%s: no memory for %d group(s) with %d stripe heads: %s", a->name, ngroups, cache,
		       strerror(-ret));
		goto out;
	}
	ret = rf_groups_start(a, groups, ngroups);
	if (ret) {
		rf_err("%s: starting %d group thread(s) failed: %s", a->name, nthreads, strerror(-ret));
		rf_groups_stop(groups, ngroups);
		rf_groups_free(a, groups, ngroups);
		goto out;
	}
	/* Fewer threads or stripe heads (groups_alloc: at least 16 a group)
	 * than the old groups had: memory to give back below. */
	shrink = ngroups * nthreads < a->ngroups * a->group_thread_cnt ||
		 ngroups * (cache / ngroups < 16 ? 16 : cache / ngroups) <
			 a->ngroups * (a->stripe_cache_size / a->ngroups < 16 ? 16 : a->stripe_cache_size / a->ngroups);
	rf_drain(a, RF_HOLD_ALL);
	old = a->groups;
	oldn = a->ngroups;
	a->groups = groups;
	a->ngroups = ngroups;
	a->worker_groups = wg;
	a->group_thread_cnt = nthreads;
	a->stripe_cache_size = cache;
	rf_release(a, a->suspended ? RF_HOLD_WRITES : 0);
	/* Drained: nothing was left on the old groups, nothing reaches them. */
	rf_groups_stop(old, oldn);
	rf_groups_free(a, old, oldn);
	/* The old groups' stripe memory went back with munmap; after a
	 * shrink, what their threads and heads took from the heap (every
	 * thread's arena) goes back too, or the peak would stay resident.
	 * (About 0.2 ms; a grow has nothing to give back.) */
	if (shrink)
		malloc_trim(0);
out:
	pthread_mutex_unlock(&a->reconf_lock);
	return ret;
}

int rf_array_set_stripe_cache_size(struct rf_array *a, int n)
{
	if (n < 17 || n > 32768)
		return -EINVAL;
	return reshape(a, RESHAPE_CACHE, n);
}

int rf_array_set_group_thread_cnt(struct rf_array *a, int n)
{
	if (n < 0 || n > RF_MAX_GROUP_THREADS)
		return -EINVAL;
	return reshape(a, RESHAPE_THREADS, n);
}

int rf_array_set_worker_groups(struct rf_array *a, int n)
{
	if (n < 1 || n > RF_MAX_GROUPS)
		return -EINVAL;
	return reshape(a, RESHAPE_GROUPS, n);
}

int rf_array_set_rmw_level(struct rf_array *a, int n)
{
	if (n < 0 || n > 2)
		return -EINVAL;
	/* Stripe rounds read it while they plan: change it between rounds. */
	pthread_mutex_lock(&a->reconf_lock);
	rf_drain(a, RF_HOLD_WRITES);
	a->rmw_level = n;
	rf_release(a, a->suspended ? RF_HOLD_WRITES : 0);
	pthread_mutex_unlock(&a->reconf_lock);
	return 0;
}

void rf_array_get_info(struct rf_array *a, struct rf_array_info *out)
{
	uint64_t f = rf_faulty(a);
	int i;

	memset(out, 0, sizeof(*out));
	/* The shape (geometry, level ops, groups) is stable while
	 * reconf_lock is held: a takeover or a reshape's end changes it. */
	pthread_mutex_lock(&a->reconf_lock);
	out->level = a->geom.level;
	out->layout = a->geom.layout;
	out->raid_disks = a->geom.raid_disks;
	out->prev_raid_disks = atomic_load(&a->reshaping) ? a->reshape.prev.raid_disks : a->geom.raid_disks;
	out->chunk_bytes = a->geom.chunk_sectors * 512;
	out->component_size = a->geom.dev_sectors * 512;
	out->array_size = a->size;
	out->faulty = f;
	out->recovering = atomic_load(&a->recovering) & ~f;
	out->degraded = __builtin_popcountll(f | out->recovering);
	out->metadata = a->metadata;
	out->failed = atomic_load(&a->broken) || (f && a->ops->failed(a, f));
	out->writes_in_flight = atomic_load(&a->inflight[1]) > 0;
	for (i = 0; i < a->nhooks; i++)
		if (a->hooks[i].h->info)
			a->hooks[i].h->info(a->hooks[i].priv, out);
	out->stripe_cache_size = a->stripe_cache_size;
	out->group_thread_cnt = a->group_thread_cnt;
	out->worker_groups = a->ngroups;
	out->rmw_level = a->rmw_level;
	out->suspended = a->suspended;
	for (i = 0; a->ops->handle_stripe && a->groups && i < a->ngroups; i++) {
		struct rf_group *g = &a->groups[i];

		pthread_mutex_lock(&g->lock);
		out->stripe_cache_active += g->nstripes - g->nlru;
		pthread_mutex_unlock(&g->lock);
		out->stripe_cache_bytes += (uint64_t)g->nstripes * a->nmembers * a->stripe_size;
	}
	pthread_mutex_unlock(&a->reconf_lock);
}

const char *rf_array_member_path(const struct rf_array *a, int i)
{
	return i >= 0 && i < a->nmembers ? a->devs[i].path : NULL;
}

void rf_array_set_ioq_init(struct rf_array *a, rf_ioq_init_fn fn)
{
	a->ioq_init = fn;
	a->inline_ioq_init = fn;
}

int rf_array_nslots(const struct rf_array *a)
{
	return a->nmembers;
}

uint64_t rf_array_present(const struct rf_array *a)
{
	return a->present;
}

uint64_t rf_array_faulty_read(const struct rf_array *a)
{
	return rf_faulty_read(a);
}

struct rf_bitmap *rf_array_bitmap(const struct rf_array *a)
{
	return a->bitmap;
}

bool rf_array_has_sync(const struct rf_array *a)
{
	return a->sync != NULL;
}

struct rf_sbstate *rf_array_sbstate(const struct rf_array *a)
{
	return a->sbstate;
}

void rf_array_set_sbstate(struct rf_array *a, struct rf_sbstate *s)
{
	a->sbstate = s;
}

void rf_array_set_bitmap(struct rf_array *a, struct rf_bitmap *bm)
{
	a->bitmap = bm;
}

bool rf_array_recover_dirty_only(const struct rf_array *a)
{
	return atomic_load(&((struct rf_array *)a)->recover_dirty_only);
}

uint64_t rf_array_recovering(const struct rf_array *a)
{
	return atomic_load(&((struct rf_array *)a)->recovering);
}

uint64_t rf_array_recovery_cp(const struct rf_array *a)
{
	struct rf_array *w = (struct rf_array *)a;
	uint64_t r = atomic_load(&w->recovering), cp = UINT64_MAX;

	/* The lowest of the devices being rebuilt: a rebuild resumes there. */
	while (r) {
		int k = __builtin_ctzll(r);
		uint64_t off = atomic_load(&w->devs[k].recovery_offset);

		r &= r - 1;
		if (off < cp)
			cp = off;
	}
	return cp == UINT64_MAX ? atomic_load(&w->recovery_cp) : cp;
}

bool rf_array_overlay(const struct rf_array *a)
{
	return a->overlay;
}

void rf_array_reconf_lock(struct rf_array *a)
{
	pthread_mutex_lock(&a->reconf_lock);
}

void rf_array_reconf_unlock(struct rf_array *a)
{
	pthread_mutex_unlock(&a->reconf_lock);
}

struct rf_mgmt *rf_array_mgmt(const struct rf_array *a)
{
	return a->mgmt;
}

void rf_array_set_mgmt(struct rf_array *a, struct rf_mgmt *m)
{
	a->mgmt = m;
}

uint64_t rf_array_size(const struct rf_array *a) { return a->size; }
const struct rf_geom *rf_array_geom(const struct rf_array *a) { return &a->geom; }
const char *rf_array_name(const struct rf_array *a) { return a->name; }
uint64_t rf_array_faulty(const struct rf_array *a) { return rf_faulty(a); }
bool rf_array_failed(const struct rf_array *a) { return rf_failed_now(a); }


/* ---- the sync walk's ---- */

const struct rf_sync_ops *rf_array_sync_ops(const struct rf_array *a)
{
	/* Mid-reshape: no walk of one geometry covers the array (md runs
	 * nothing but the reshape then). */
	if (atomic_load(&((struct rf_array *)a)->reshaping))
		return NULL;
	return a->ops->sync;
}

/* core_test.h: tests only. */
struct rf_rangelock *rf_array_rangelock(struct rf_array *a)
{
	return &a->rl;
}

struct rf_sync *rf_array_sync(const struct rf_array *a)
{
	return a->sync;
}

void rf_array_set_sync(struct rf_array *a, struct rf_sync *s)
{
	a->sync = s;
}

bool rf_array_fg_busy(const struct rf_array *a)
{
	struct rf_array *w = (struct rf_array *)a;

	return atomic_load(&w->inflight[0]) + atomic_load(&w->inflight[1]) + atomic_load(&w->rl.nwaiting) > 0;
}

uint64_t rf_array_dev_sector_off(const struct rf_array *a, int m, uint64_t sec)
{
	return a->devs[m].data_offset + (sec << 9);
}

int rf_array_ioq_open(struct rf_array *a, struct rf_ioq *q, int depth)
{
	return a->ioq_init(q, rf_devs_ioq(a), depth);
}

int rf_array_inline_ioq_open(struct rf_array *a, struct rf_ioq *q, int depth)
{
	return a->inline_ioq_init(q, rf_devs_ioq(a), depth);
}

void rf_array_set_recovery_cp(struct rf_array *a, uint64_t cp)
{
	uint64_t r = atomic_load(&a->recovering);

	/* Every device being rebuilt holds its data below cp now; one that
	 * was further along (resumed from its own checkpoint) stays there.
	 * Pairs with the acquire loads of rf_faulty_at() (engine.h). */
	while (r) {
		int k = __builtin_ctzll(r);

		r &= r - 1;
		if (atomic_load(&a->devs[k].recovery_offset) < cp)
			atomic_store_explicit(&a->devs[k].recovery_offset, cp, memory_order_release);
	}
	atomic_store_explicit(&a->recovery_cp, cp, memory_order_release);
}

void rf_array_rows_lock(struct rf_array *a, struct rf_range *r, uint64_t lo, uint64_t hi)
{
	rf_rangelock_lock(&a->rl, r, lo, hi);
}

void rf_array_rows_unlock(struct rf_array *a, struct rf_range *r)
{
	rf_rangelock_unlock(&a->rl, r);
}

void rf_array_write_rows(const struct rf_array *a, uint64_t off, uint32_t len, uint64_t *lo, uint64_t *hi)
{
	(a->rows_ops ? a->rows_ops : a->ops->sync)->write_rows(a, off, len, lo, hi);
}

void rf_status_map(const struct rf_array *a, char *buf, size_t len)
{
	uint64_t f = rf_faulty(a), gone = f | (atomic_load(&((struct rf_array *)a)->recovering) & ~f);
	size_t n = strlen(buf);
	int k;

	n += (size_t)snprintf(buf + n, n < len ? len - n : 0, " [%d/%d] [", a->geom.raid_disks,
			      a->geom.raid_disks - __builtin_popcountll(gone));
	for (k = 0; k < a->geom.raid_disks && n + 1 < len; k++)
		buf[n++] = (gone >> k) & 1 ? '_' : 'U';
	if (n + 1 < len)
		buf[n++] = ']';
	buf[n < len ? n : len - 1] = '\0';
}

void rf_array_status(const struct rf_array *a, char *buf, size_t len)
{
	buf[0] = '\0';
	if (a->ops->status)
		a->ops->status(a, buf, len);
}

/* The services' hooks and the stripe log (core.h). */
int rf_array_add_hooks(struct rf_array *a, const struct rf_hooks *h, void *priv)
{
	if (a->nhooks >= RF_MAX_HOOKS)
		return -ENOSPC;
	a->hooks[a->nhooks].h = h;
	a->hooks[a->nhooks].priv = priv;
	a->nhooks++;
	return 0;
}

int rf_array_set_consistency_policy(struct rf_array *a, const char *policy)
{
	bool ppl = !strcmp(policy, "ppl");

	if (!ppl && strcmp(policy, "resync"))
		return -EINVAL;
	/* md switches between resync and ppl on a raid5 that has a log's
	 * area; anything else stays as it is ("resync" on a level that
	 * takes it and keeps no bitmap). */
	if (!a->log_ops || !a->log_ops->set_policy)
		return ppl || a->bitmap || !rf_level_takes_policy(a, "resync") ? -EINVAL : 0;
	return a->log_ops->set_policy(a->log_priv, ppl);
}

int rf_array_set_log(struct rf_array *a, const struct rf_log_ops *ops, void *priv)
{
	if (a->log_ops)
		return -EBUSY;
	a->log_ops = ops;
	a->log = ops;
	a->log_priv = priv;
	return 0;
}

void rf_array_log_active(struct rf_array *a, bool on)
{
	a->log = on ? a->log_ops : NULL;
}
