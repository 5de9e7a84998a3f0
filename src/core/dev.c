/* SPDX-License-Identifier: GPL-2.0-or-later */
/* dev.c - the array's device table: open, move, fail, flush, close.
 *
 * Purpose: one place for what is done to a device as a whole.  Every
 * device, a member at array open or a spare written to md/new_dev, is
 * opened by rf_dev_open_into() (checked by rf_devopen_open(), sized,
 * compared with the devices already there, locked) and closed by
 * rf_dev_release().  A device changes place only through rf_dev_swap(),
 * which tells every service through its dev_changed hook.  Services that
 * write to every device (superblocks, the bitmap) flush them through
 * rf_devs_flush() and fail one through rf_dev_fail().
 *
 * Invariants: index i < nmembers is slot i; a->devs[i].io is what the
 * member IO queues use for slot i (no copy of it anywhere); a device's fd
 * is -1 only for an empty ("missing") slot or an unused entry.
 *
 * A device may be an NBD export (path is a URI, nbd.h): it is connected
 * with the array's member_timeout, sized by the export, and its IO, data
 * and superblock alike, goes through the connection (io.nbd; its fds stay
 * -1).  Two devices are the same export when they reach one export of
 * one server (nbd.h), whatever their URIs.  File checks (inotify, links,
 * inode) do not apply to it.  A failed connection stays dead; re-add makes a new one
 * (rf_dev_nbd_reconnect) and puts it in place (rf_dev_nbd_replace).
 *
 * What it does NOT do: decide which spare takes which slot, or when a
 * device fails (member.c, memberwatch.c, memberctl.c and the IO path
 * do), nor read superblocks.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dev.h"
#include "core/engine.h"
#include "raidfuse/bgthread.h"
#include "raidfuse/devstat.h"
#include "raidfuse/fault.h"
#include "raidfuse/fdio.h"
#include "raidfuse/iolog.h"
#include "raidfuse/log.h"
#include "raidfuse/nbd.h"
#include "raidfuse/overlay.h"
#include "raidfuse/timedio.h"

struct rf_dev *rf_dev_get(struct rf_array *a, int i)
{
	return &a->devs[i];
}

int rf_devs_count(const struct rf_array *a)
{
	return a->ndevs;
}

/* Every entry of the table, not only the slots: a write of a slot being
 * replaced goes to its replacement's too (replace.c). */
_Static_assert(RF_MAX_DEVS <= RF_IOQ_MAX_MEMBERS, "the IO queues address every device");

/* A read a member has not answered within member_timeout (ioq.h): the
 * member fails now, so that nothing more waits on it; the read itself
 * ends when the kernel gives its buffer back. */
static void read_overdue(void *priv, int i, uint64_t off)
{
	struct rf_array *a = priv;

	if (!rf_dev_faulty(a, i))
		rf_dev_fail(a, i, -ETIMEDOUT, "read (no answer within member_timeout)", off);
}

struct rf_ioq_devs rf_devs_ioq(struct rf_array *a)
{
	return (struct rf_ioq_devs){ .first = &a->devs[0].io, .stride = sizeof(a->devs[0]), .n = RF_MAX_DEVS,
				     .timeout_ms = rf_test_break("member-deadline") ? 0 : a->member_timeout_ms,
				     .overdue = read_overdue, .overdue_priv = a };
}

/* Lock order: reconf_lock, then dev_lock, then sbstate's lock, then the
 * bitmap's (engine.h). */
void rf_devs_lock(struct rf_array *a)
{
	pthread_mutex_lock(&a->dev_lock);
	/* RAIDFUSE_TEST_BREAK=lock-order plants an inversion, which the
	 * sanitizer builds' lock check must stop (test 11); elsewhere it
	 * deadlocks. */
	if (rf_test_break("lock-order")) {
		pthread_mutex_lock(&a->reconf_lock);
		pthread_mutex_unlock(&a->reconf_lock);
	}
}

void rf_devs_unlock(struct rf_array *a)
{
	pthread_mutex_unlock(&a->dev_lock);
}

void rf_dev_init(struct rf_dev *d)
{
	memset(d, 0, sizeof(*d));
	d->io.fd = d->io.fd_direct = d->io.stat_fd = -1;
	d->prev_slot = -1;
}

void rf_dev_member_id(const struct rf_dev *d, struct rf_member_id *m)
{
	memset(m, 0, sizeof(*m));
	if (d->io.nbd)
		rf_nbd_member_id(d->io.nbd, m);
	else if (d->io.fd >= 0)
		rf_member_id_of_dev(m, &d->id);
	else
		return;
	if (d->sb_has)
		rf_member_id_set_uuid(m, d->sb.device_uuid);
}

int rf_same_member(struct rf_array *a, int n, const struct rf_member_id *m)
{
	struct rf_member_id o;
	int j;

	for (j = 0; j < n; j++) {
		rf_dev_member_id(&a->devs[j], &o);
		if (rf_member_same(&o, m))
			return j;
	}
	return -1;
}

/* Refuse device d (who; path as given), whose identity is m, when it is
 * one of the first n devices of the table: -EINVAL for a device of the
 * table at array open, -EEXIST for a spare being added; 0 if it is none
 * of them.  reconf_lock held; takes the device lock (the superblocks'
 * device UUIDs are read). */
static int refuse_same(struct rf_array *a, int n, bool in_table, const char *who, const struct rf_member_id *m,
		       char *err, size_t errlen)
{
	char w2[PATH_MAX + 32];
	struct rf_member_id o;
	int j;

	/* Lock order: reconf_lock, then dev_lock (engine.h). */
	rf_devs_lock(a);
	j = rf_same_member(a, n, m);
	if (j >= 0)
		rf_dev_member_id(&a->devs[j], &o);
	rf_devs_unlock(a);
	if (j < 0)
		return 0;
	snprintf(w2, sizeof(w2), "%s %d (%s)", j < a->nmembers ? "member" : "device", j, a->devs[j].path);
	if (in_table)
		rf_member_same_msg(err, errlen, w2, &o, who, m, "each member must be given once");
	else
		rf_member_same_msg(err, errlen, who, m, w2, &o, "already in the array");
	return in_table ? -EINVAL : -EEXIST;
}

/* rf_dev_open_into() for an NBD URI. */
static int open_nbd(struct rf_array *a, struct rf_dev *d, const char *uri, const char *who, bool ro, char *err,
		    size_t errlen)
{
	bool in_table = d >= a->devs && d < a->devs + RF_MAX_DEVS;
	struct rf_member_id m;
	struct rf_nbd *c;
	char why[1024];
	int ret;

	/* Connected first: which export a URI reaches is known only then. */
	ret = rf_nbd_open(uri, ro, a->member_timeout_ms, &c, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "%s: %s", who, rf_nbd_why(why, uri));
		return ret;
	}
	rf_nbd_member_id(c, &m);
	pthread_mutex_lock(&a->reconf_lock);
	ret = refuse_same(a, in_table ? (int)(d - a->devs) : a->ndevs, in_table, who, &m, err, errlen);
	pthread_mutex_unlock(&a->reconf_lock);
	if (ret) {
		rf_nbd_close(c);
		return ret;
	}
	d->io.nbd = c;
	d->io.align = 512;
	d->size = rf_nbd_size(c);
	d->id.size = d->size;
	return 0;
}

int rf_dev_open_into(struct rf_array *a, struct rf_dev *d, const char *path, const char *who, bool ro,
		     char *err, size_t errlen)
{
	/* A member at array open is compared with the ones before it; a
	 * spare written to md/new_dev (not in the table yet) with all. */
	bool in_table = d >= a->devs && d < a->devs + RF_MAX_DEVS;
	struct rf_member_id m;
	struct rf_devopen_fd f;
	char f_err[256];
	int ret;

	if (rf_nbd_is_uri(path))
		return open_nbd(a, d, path, who, ro, err, errlen);
	ret = rf_devopen_open(path, who, RF_DEVOPEN_DIRECT | RF_DEVOPEN_NOLOCK | (ro ? RF_DEVOPEN_RDONLY : 0), &f, err,
			      errlen);
	if (ret == -EBUSY && !rf_member_id_of_path(path, who, 0, &m, f_err, sizeof(f_err))) {
		/* A block device claimed already (O_EXCL): by a device of
		 * this array under another name?  Said as that. */
		int r;

		pthread_mutex_lock(&a->reconf_lock);
		r = refuse_same(a, in_table ? (int)(d - a->devs) : a->ndevs, in_table, who, &m, err, errlen);
		pthread_mutex_unlock(&a->reconf_lock);
		return r ? r : ret;
	}
	if (ret)
		return ret;
	rf_member_id_of_dev(&m, &f.id);
	pthread_mutex_lock(&a->reconf_lock);
	ret = refuse_same(a, in_table ? (int)(d - a->devs) : a->ndevs, in_table, who, &m, err, errlen);
	pthread_mutex_unlock(&a->reconf_lock);
	if (ret) {
		rf_devopen_close(&f);
		return ret;
	}
	/* Locked only now: the lock would refuse our own second name. */
	ret = rf_devopen_lock(&f, ro, who, err, errlen);
	if (ret) {
		rf_devopen_close(&f);
		return ret;
	}
	if (a->member_io == RF_MEMBER_IO_DIRECT && f.fd_direct < 0) {
		snprintf(err, errlen, "%s: member_io \"direct\": its file system refuses O_DIRECT (%s)", who,
			 strerror(f.direct_err ? f.direct_err : EINVAL));
		rf_devopen_close(&f);
		return -EINVAL;
	}
	/* A disk that hangs fails within member_timeout, not the array.
	 * RAIDFUSE_TEST_BREAK=member-deadline: no deadline (test 57's
	 * negative control: the array hangs with the member). */
	d->tio = rf_timed_io_new(rf_test_break("member-deadline") ? 0 : a->member_timeout_ms);
	if (!d->tio) {
		snprintf(err, errlen, "%s: out of memory", who);
		rf_devopen_close(&f);
		return -ENOMEM;
	}
	d->io.stat_fd = rf_devstat_open(f.fd);
	if (d->io.stat_fd > 0)
		rf_timed_io_set_progress(d->tio, d->io.stat_fd);
	d->io.fd = f.fd;
	d->io.fd_direct = f.fd_direct;
	d->io.align = f.fd_direct >= 0 ? f.dio_align : 4096;
	d->io.direct = f.fd_direct >= 0 && (a->member_io == RF_MEMBER_IO_DIRECT ||
					    (a->member_io == RF_MEMBER_IO_AUTO && !rf_fdmap_in_memory(f.fd)));
	if (a->member_io == RF_MEMBER_IO_AUTO && f.fd_direct < 0 && !rf_fdmap_in_memory(f.fd))
		rf_info("%s: O_DIRECT refused (%s): its IO is buffered", who,
			strerror(f.direct_err ? f.direct_err : EINVAL));
	d->size = f.id.size;
	d->id = f.id;
	/* A member in memory is also mapped, for reads and writes that need
	 * no system call (readmap.h, the IO queue); without it they take
	 * the IO path as usual. */
	ret = rf_fdmap_open(&d->io.map, f.fd, f.id.size, !ro);
	if (ret && ret != -ENOTSUP)
		rf_dbg("%s: not mapped: %s", who, strerror(-ret));
	return 0;
}

void rf_dev_release(struct rf_dev *d)
{
	rf_fdmap_close(&d->io.map);
	rf_ovl_close(d->io.layer);
	rf_nbd_close(d->io.nbd);
	if (d->io.fd >= 0)
		close(d->io.fd);
	if (d->io.fd_direct >= 0)
		close(d->io.fd_direct);
	if (d->io.stat_fd > 0)
		close(d->io.stat_fd);
	rf_fault_free(d->io.fault);
	rf_timed_io_free(d->tio);
	free(d->path);
	rf_devopen_id_free(&d->id);
	rf_dev_init(d);
}

int rf_dev_sb_io(struct rf_dev *d, struct rf_sb_io *io)
{
	struct rf_sb_io inner;
	int r;

	if (d->io.nbd) {
		rf_nbd_sb_io(d->io.nbd, io);
		return 0;
	}
	/* A device in direct mode: its superblock, bitmap and log too. */
	if (d->io.direct && d->io.fd_direct >= 0)
		r = rf_sb_io_fd_direct(&inner, d->io.fd_direct, d->io.align);
	else
		r = rf_sb_io_fd(&inner, d->io.fd);
	if (r)
		return r;
	if (d->tio)
		rf_timed_io_wrap(d->tio, &inner, io);
	else
		*io = inner;
	return 0;
}

int rf_dev_io_mode(const struct rf_dev *d)
{
	if (d->io.nbd)
		return -EOPNOTSUPP;
	return d->io.direct ? RF_MEMBER_IO_DIRECT : RF_MEMBER_IO_BUFFERED;
}

int rf_dev_set_io_mode(struct rf_dev *d, int mode, char *err, size_t errlen)
{
	bool direct;
	int r;

	if (d->io.nbd) {
		snprintf(err, errlen, "%s: an NBD export: its IO is commands on its connection, no page cache", d->path);
		return -EOPNOTSUPP;
	}
	if (d->io.layer) {
		snprintf(err, errlen, "%s: written through its overlay, which keeps its own (buffered) IO", d->path);
		return -EOPNOTSUPP;
	}
	if (d->io.fd < 0) {
		snprintf(err, errlen, "%s: not open", d->path);
		return -ENODEV;
	}
	direct = mode == RF_MEMBER_IO_DIRECT || (mode == RF_MEMBER_IO_AUTO && !rf_fdmap_in_memory(d->io.fd));
	if (mode == RF_MEMBER_IO_AUTO && d->io.fd_direct < 0)
		direct = false;
	if (direct && d->io.fd_direct < 0) {
		snprintf(err, errlen, "%s: its file system refuses O_DIRECT", d->path);
		return -EOPNOTSUPP;
	}
	if (direct == (bool)d->io.direct)
		return 0;
	if (direct) {
		/* What buffered writes left in the page cache reaches the
		 * device before IO goes around it, and the cache goes. */
		r = rf_fsync_full(d->io.fd);
		if (r) {
			snprintf(err, errlen, "%s: fsync before direct IO: %s", d->path, strerror(-r));
			return r;
		}
		posix_fadvise(d->io.fd, 0, 0, POSIX_FADV_DONTNEED);
	}
	d->io.direct = direct;
	if (d->sb_has) {
		r = rf_dev_sb_io(d, &d->sb_io);
		if (r) {
			d->io.direct = !direct;
			rf_dev_sb_io(d, &d->sb_io);
			snprintf(err, errlen, "%s: %s", d->path, strerror(-r));
			return r;
		}
	}
	return 0;
}

int rf_dev_nbd_reconnect(const struct rf_dev_nbd_was *was, struct rf_nbd **out, char *err, size_t errlen)
{
	struct rf_sb_io io;
	struct rf_sb sb;
	char why[1024];
	int ret;

	ret = rf_nbd_open(was->uri, false, was->timeout_ms, out, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "%s: reconnecting: %s", was->uri, rf_nbd_why(why, was->uri));
		return ret;
	}
	/* Still the device that left: the same array's superblock, the same
	 * device (md's re-add looks at the superblock too). */
	if (was->sb_has) {
		rf_nbd_sb_io(*out, &io);
		ret = rf_sb_read_io(&io, was->uri, &sb, why, sizeof(why));
		if (ret) {
			snprintf(err, errlen, "%s: reconnected, but its superblock: %s", was->uri, why);
		} else if (memcmp(sb.uuid, was->uuid, 16) || memcmp(sb.device_uuid, was->device_uuid, 16) ||
			   sb.dev_number != was->dev_number) {
			snprintf(err, errlen, "%s: reconnected, but the export is no longer the device that left "
				 "(another array's or another device's superblock)", was->uri);
			ret = -EINVAL;
		}
	}
	if (!ret && rf_nbd_size(*out) < was->size) {
		snprintf(err, errlen, "%s: reconnected, but the export shrank to %llu bytes (it had %llu)", was->uri,
			 (unsigned long long)rf_nbd_size(*out), (unsigned long long)was->size);
		ret = -ENOSPC;
	}
	if (ret) {
		rf_nbd_close(*out);
		*out = NULL;
	}
	return ret;
}

int rf_dev_nbd_was(const struct rf_dev *d, struct rf_dev_nbd_was *was)
{
	if (!d->io.nbd)
		return -EOPNOTSUPP;
	memset(was, 0, sizeof(*was));
	was->uri = strdup(d->path);
	if (!was->uri)
		return -ENOMEM;
	was->timeout_ms = rf_nbd_timeout(d->io.nbd);
	was->size = d->size;
	was->sb_has = d->sb_has;
	memcpy(was->uuid, d->sb.uuid, 16);
	memcpy(was->device_uuid, d->sb.device_uuid, 16);
	was->dev_number = d->sb.dev_number;
	return 0;
}

void rf_dev_nbd_replace(struct rf_dev *d, struct rf_nbd *c)
{
	rf_nbd_close(d->io.nbd);
	d->io.nbd = c;
	if (d->sb_has)
		rf_nbd_sb_io(c, &d->sb_io);
}

int rf_dev_timeout(struct rf_dev *d, unsigned *ms)
{
	if (!d->io.nbd)
		return -EOPNOTSUPP;
	*ms = rf_nbd_timeout(d->io.nbd);
	return 0;
}

int rf_dev_set_timeout(struct rf_dev *d, unsigned ms)
{
	if (!d->io.nbd)
		return -EOPNOTSUPP;
	if (!ms)
		return -EINVAL;
	rf_nbd_set_timeout(d->io.nbd, ms);
	return 0;
}

void rf_dev_changed(struct rf_array *a, int i)
{
	int k;

	for (k = 0; k < a->nhooks; k++)
		if (a->hooks[k].h->dev_changed)
			a->hooks[k].h->dev_changed(a->hooks[k].priv, i);
}

void rf_dev_swap(struct rf_array *a, int i, int j)
{
	struct rf_dev t;
	int k;

	if (i == j)
		return;
	/* nr_errors is atomic: moved by value, as everything else, while
	 * nothing can count (every request drained). */
	memcpy(&t, &a->devs[i], sizeof(t));
	memcpy(&a->devs[i], &a->devs[j], sizeof(t));
	memcpy(&a->devs[j], &t, sizeof(t));
	/* A replacement keeps its slot's link wherever it moves. */
	for (k = 0; k < a->nmembers; k++) {
		if (!(atomic_load(&a->replacing) >> k & 1))
			continue;
		if (a->repl_dev[k] == i)
			a->repl_dev[k] = (int16_t)j;
		else if (a->repl_dev[k] == j)
			a->repl_dev[k] = (int16_t)i;
	}
	rf_dev_changed(a, i);
	rf_dev_changed(a, j);
}

int rf_dev_append(struct rf_array *a)
{
	if (a->ndevs >= RF_MAX_DEVS)
		return -ENOSPC;
	return a->ndevs++;
}

void rf_dev_drop(struct rf_array *a, int i)
{
	rf_dev_release(&a->devs[i]);
	rf_dev_changed(a, i);
	rf_dev_swap(a, i, a->ndevs - 1);
	a->ndevs--;
}

void rf_devs_flags_changed(struct rf_array *a)
{
	uint64_t wm = 0, out = rf_faulty(a) | atomic_load(&a->recovering);
	int i;

	for (i = 0; i < a->nmembers; i++) {
		struct rf_dev *d = &a->devs[i];
		uint64_t bit = 1ull << i;
		/* md sends failfast IO to a device only while another could
		 * serve it: never to the last one that holds the data. */
		bool ff = (d->flags & RF_DEV_FAILFAST) && !(out & bit) && !a->ops->failed(a, out | bit);

		if (d->flags & RF_DEV_WRITE_MOSTLY)
			wm |= bit;
		__atomic_store_n(&d->io.failfast, (uint8_t)ff, __ATOMIC_RELAXED);
	}
	atomic_store(&a->write_mostly, wm);
}

void rf_slot_vacated(struct rf_array *a, int k)
{
	a->present &= ~(1ull << k);
	atomic_fetch_or(&a->faulty, 1ull << k);
	atomic_fetch_and(&a->recovering, ~(1ull << k));
	rf_devs_flags_changed(a);
}

void rf_slot_rebuild_start(struct rf_array *a, int k, bool dirty_only)
{
	a->present |= 1ull << k;
	/* What stripe heads cached of slot k was the failed device's. */
	rf_stripe_cache_forget(a, 0, UINT64_MAX);
	atomic_store(&a->recovery_cp, 0);
	atomic_store(&a->devs[k].recovery_offset, 0);
	atomic_store(&a->recover_dirty_only, dirty_only);
	atomic_fetch_or(&a->recovering, 1ull << k);
	atomic_fetch_and(&a->faulty, ~(1ull << k));
	rf_devs_flags_changed(a);
}

void rf_slot_rebuilt(struct rf_array *a, int k)
{
	atomic_fetch_and(&a->recovering, ~(1ull << k));
	rf_devs_flags_changed(a);
}

void rf_recovery_reset(struct rf_array *a)
{
	atomic_store(&a->recovery_cp, 0);
	atomic_store(&a->recover_dirty_only, false);
}

void rf_recovery_drop_faulty(struct rf_array *a)
{
	uint64_t r = atomic_load(&a->recovering);

	if (r & rf_faulty(a))
		atomic_fetch_and(&a->recovering, ~(r & rf_faulty(a)));
}

void rf_dev_resume_recovery(struct rf_array *a, int i, uint64_t offset)
{
	if (!atomic_load(&a->recovering) || offset < atomic_load(&a->recovery_cp))
		atomic_store(&a->recovery_cp, offset);
	atomic_store(&a->devs[i].recovery_offset, offset);
	atomic_fetch_or(&a->recovering, 1ull << i);
	a->devs[i].flags = RF_DEV_SPARE;
	rf_info("%s: %s in slot %d was being rebuilt: resuming at sector %llu", a->name, a->devs[i].path, i,
		(unsigned long long)offset);
}

uint64_t rf_dev_recovery_offset(struct rf_array *a, int i)
{
	return atomic_load(&a->devs[i].recovery_offset);
}

bool rf_dev_faulty(struct rf_array *a, int i)
{
	if (i < a->nmembers)
		return rf_faulty(a) & (1ull << i);
	return a->devs[i].flags & RF_DEV_FAULTY;
}

void rf_dev_fail(struct rf_array *a, int i, int err, const char *what, uint64_t off)
{
	if (i < a->nmembers) {
		rf_member_fail(a, i, err, what, off);
		return;
	}
	rf_err("%s: %s: %s failed: %s; the device is faulty", a->name, a->devs[i].path, what, strerror(-err));
	a->devs[i].flags |= RF_DEV_FAULTY;
}

struct flush_all {
	struct rf_array *a;
	int r[RF_MAX_DEVS];
	bool skip[RF_MAX_DEVS];
};

static void flush_one(void *arg, int i)
{
	struct flush_all *f = arg;
	struct rf_dev *d = &f->a->devs[i];

	if (!f->skip[i])
		f->r[i] = d->sb_io.fsync(d->sb_io.ctx);
}

/* Every device flushed at once (one flush's wait, not one per device, as
 * md submits its flushes together); a device whose flush fails fails. */
void rf_devs_flush(struct rf_array *a, bool slots_only, const char *why)
{
	struct flush_all f = { .a = a };
	int i, n = slots_only ? a->nmembers : a->ndevs;

	for (i = 0; i < n; i++)
		f.skip[i] = !a->devs[i].sb_has || rf_dev_faulty(a, i);
	rf_run_parallel(n, flush_one, &f);
	for (i = 0; i < n; i++) {
		if (f.skip[i] || !f.r[i])
			continue;
		rf_err("device %d (%s): flush %s: %s", i, a->devs[i].path, why, strerror(-f.r[i]));
		rf_dev_fail(a, i, f.r[i], "flush", 0);
	}
}
