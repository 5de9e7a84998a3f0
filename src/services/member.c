/* member.c - the array's devices: spares, failed members, rebuild.
 *
 * The device table is a->members[]: [0, nmembers) serve the slots,
 * [nmembers, ndevs) are spares and faulty devices that lost their slot.
 * It changes only under reconf_lock with every request drained
 * (rf_array_quiesced_all: no member IO is in flight, so a slot's file
 * descriptors can be swapped under the IO queues), and with the superblock
 * state's lock held (its timer thread walks the same table).  Readers of
 * md/dev-* take reconf_lock.  Whether a slot's device is faulty is
 * a->faulty (atomic, set by the IO path); a device without a slot keeps it
 * in its flags.
 *
 * What md does and this file does the same way:
 *  - a spare takes the lowest failed slot as soon as there is one (the
 *    management thread, woken by a failure or a new spare), and the
 *    failed device stays listed, faulty, until it is removed;
 *  - the rebuild (sync.c's "recover" walk) runs region by region with
 *    writes drained; below its position the new device serves like any
 *    other, above it raid4/5/6 treat it as missing (rf_faulty_at), and
 *    mirrors write to it but read elsewhere until it is complete;
 *  - its superblock records the slot at once and recovery_offset as the
 *    rebuild goes, so an interrupted rebuild resumes;
 *  - "idle" during a rebuild restarts it, "frozen" holds it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/engine.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/fault.h"
#include "raidfuse/log.h"
#include "raidfuse/super.h"
#include "raidfuse/sync.h"
#include "services/sbstate.h"

struct rf_mgmt {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, kicked;
	pthread_t thread;
	bool started;                   /* thread runs */
	bool resync_waits;              /* the thread's: a resync stopped for a rebuild */
	/* The member watch: an inotify descriptor on every device's inode
	 * (watches added by rf_dev_watch_all() under reconf_lock), read by
	 * its own thread; stop_fd (an eventfd) ends it. */
	int ino_fd, stop_fd;
	pthread_t watch_thread;
	bool watching;
};

/* How often the management thread looks at every device even when
 * nothing woke it (ms): the backstop for what inotify does not report
 * (truncate(2) by path, a member replaced by rename). */
#define RF_MGMT_TICK_MS 1000

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* reconf_lock held. */
static unsigned dev_flags(struct rf_array *a, int dev)
{
	const struct rf_member *m = &a->members[dev];
	unsigned f = m->flags;

	if (dev < a->nmembers) {
		if (rf_faulty(a) & (1ull << dev))
			f = (f | RF_DEV_FAULTY) & ~RF_DEV_IN_SYNC;
	}
	return f;
}

/* The data offset (bytes) a new spare's superblock gets: mdadm --add and
 * the superblock module model it on an in-sync member's, the first by slot
 * (their events agree while the array runs), skipping slot skip.  Members
 * may differ (added later, replaced); with none in sync, slot 0's.
 * reconf_lock held, or the array drained. */
static uint64_t spare_data_offset(struct rf_array *a, int skip)
{
	uint64_t bad = rf_faulty(a) | atomic_load(&a->recovering);
	int i;

	for (i = 0; i < a->nmembers; i++)
		if (i != skip && (a->present & (1ull << i)) && !(bad & (1ull << i)))
			return a->members[i].data_offset;
	return a->members[0].data_offset;
}

int rf_array_ndevs(struct rf_array *a)
{
	int n;

	pthread_mutex_lock(&a->reconf_lock);
	n = a->ndevs;
	pthread_mutex_unlock(&a->reconf_lock);
	return n;
}

int rf_array_dev_info(struct rf_array *a, int dev, struct rf_dev_info *out)
{
	const struct rf_member *m;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&a->reconf_lock);
	if (dev < 0 || dev >= a->ndevs) {
		ret = -ENOENT;
		goto out;
	}
	m = &a->members[dev];
	snprintf(out->name, sizeof(out->name), "%s", base_name(m->path));
	snprintf(out->path, sizeof(out->path), "%s", m->path);
	out->flags = dev_flags(a, dev);
	out->slot = dev < a->nmembers && !(out->flags & RF_DEV_MISSING) ? dev : -1;
	out->errors = atomic_load_explicit(&m->nr_errors, memory_order_relaxed);
	out->offset = m->data_offset / 512;
	/* raid0 members may differ (md's zones): each its own */
	out->size = (a->geom.level == 0 && dev < a->nmembers ? a->geom.r0_sectors[dev] : a->geom.dev_sectors) / 2;
	out->recovery_start = UINT64_MAX;
	if (out->slot >= 0 && (atomic_load(&a->recovering) & (1ull << dev)))
		out->recovery_start = atomic_load(&a->recovery_cp);
out:
	pthread_mutex_unlock(&a->reconf_lock);
	return ret;
}

int rf_dev_lookup(struct rf_array *a, const char *name)
{
	int i;

	for (i = 0; i < a->ndevs; i++)
		if (!(a->members[i].flags & RF_DEV_MISSING) && !strcmp(base_name(a->members[i].path), name))
			return i;
	return -ENOENT;
}

int rf_array_dev_find(struct rf_array *a, const char *name)
{
	int ret;

	pthread_mutex_lock(&a->reconf_lock);
	ret = rf_dev_lookup(a, name);
	pthread_mutex_unlock(&a->reconf_lock);
	return ret;
}

/* ---- table edits: reconf_lock, everything drained, sbstate locked ---- */
/* Close what device m holds. */
static void dev_close(struct rf_member *m)
{
	if (m->fd >= 0)
		close(m->fd);
	if (m->fd_direct >= 0)
		close(m->fd_direct);
	rf_fault_free(m->fault);
	free(m->path);
	rf_dev_id_free(&m->id);
}


static void dev_swap(struct rf_array *a, int i, int j)
{
	struct rf_member t = a->members[i];

	a->members[i] = a->members[j];
	a->members[j] = t;
	if (a->sbstate)
		rf_sbstate_swap(a->sbstate, i, j);
}

/* Close device i (not a slot) and close the gap with the last one. */
static void dev_drop(struct rf_array *a, int i)
{
	dev_close(&a->members[i]);
	if (a->sbstate)
		rf_sbstate_forget(a->sbstate, i);
	if (i != a->ndevs - 1)
		dev_swap(a, i, a->ndevs - 1);
	memset(&a->members[a->ndevs - 1], 0, sizeof(a->members[0]));
	a->ndevs--;
}

static void slot_io(struct rf_array *a, int k)
{
	a->iom[k].fd = a->members[k].fd;
	a->iom[k].fd_direct = a->members[k].fd_direct;
	a->iom[k].align = a->members[k].align;
	a->iom[k].fault = a->members[k].fault;
}


static void update_write_mostly(struct rf_array *a)
{
	uint64_t wm = 0;
	int i;

	for (i = 0; i < a->nmembers; i++)
		if (a->members[i].flags & RF_DEV_WRITE_MOSTLY)
			wm |= 1ull << i;
	atomic_store(&a->write_mostly, wm);
}

/* Empty slot k: its device moves out (as a spare-to-be when keep, else
 * closed), a "missing" placeholder takes its place. */
static int slot_vacate(struct rf_array *a, int k, bool keep)
{
	struct rf_member *m = &a->members[k];
	char *missing = strdup("missing");
	uint64_t doff = m->data_offset;

	if (!missing || (keep && a->ndevs >= RF_MAX_DEVS)) {
		free(missing);
		return -ENOSPC;
	}
	if (a->sbstate)
		rf_sbstate_mark_faulty(a->sbstate, k);
	if (keep) {
		int e = a->ndevs++;

		a->members[e] = *m;
		a->members[e].flags = RF_DEV_FAULTY;
		a->members[e].prev_slot = k;
		if (a->sbstate)
			rf_sbstate_swap(a->sbstate, k, e);
	} else {
		dev_close(m);
	}
	if (a->sbstate)
		rf_sbstate_forget(a->sbstate, k);
	memset(m, 0, sizeof(*m));
	m->path = missing;
	m->fd = m->fd_direct = -1;
	m->prev_slot = -1;
	m->flags = RF_DEV_MISSING | RF_DEV_FAULTY;
	m->data_offset = doff;
	slot_io(a, k);
	a->present &= ~(1ull << k);
	atomic_fetch_or(&a->faulty, 1ull << k);
	atomic_fetch_and(&a->recovering, ~(1ull << k));
	update_write_mostly(a);
	return 0;
}

struct swap_job {
	struct rf_array *a;
	int slot, spare;
};

/* A spare takes failed slot k and starts being rebuilt. */
static int take_slot(void *arg)
{
	struct swap_job *j = arg;
	struct rf_array *a = j->a;
	int k = j->slot, sp = j->spare, ret = 0;
	bool missing = a->members[k].flags & RF_DEV_MISSING, readd = false;

	rf_sbstate_lock(a->sbstate);
	/* md's re-add with a bitmap: a device that left slot k after the
	 * bits were last cleared missed only the writes they mark. */
	if (a->bitmap && a->members[sp].prev_slot == k && rf_sbstate_has(a->sbstate, sp)) {
		struct rf_bitmap_status st;

		rf_bitmap_get(a->bitmap, &st);
		readd = rf_sbstate_dev_events(a->sbstate, sp) >= st.events_cleared;
	}
	if (!missing && a->sbstate)
		rf_sbstate_mark_faulty(a->sbstate, k);
	dev_swap(a, k, sp);
	if (missing) {
		dev_drop(a, sp);
	} else {
		a->members[sp].flags = RF_DEV_FAULTY;
		a->members[sp].prev_slot = k;
	}
	a->members[k].flags = RF_DEV_SPARE;
	a->members[k].prev_slot = -1;
	slot_io(a, k);
	a->present |= 1ull << k;
	/* What stripe heads cached of slot k was the failed device's. */
	rf_stripe_cache_forget(a, 0, UINT64_MAX);
	/* Beside another device being rebuilt: both from the start, and
	 * only what the bitmap marks when both are re-added. */
	readd = readd && (!atomic_load(&a->recovering) || atomic_load(&a->recover_dirty_only));
	atomic_store(&a->recovery_cp, 0);
	atomic_store(&a->recover_dirty_only, readd);
	atomic_fetch_or(&a->recovering, 1ull << k);
	atomic_fetch_and(&a->faulty, ~(1ull << k));
	update_write_mostly(a);
	/* A spare named in the config gets its superblock now, and the data
	 * offset that superblock records. */
	if (a->sbstate && !rf_sbstate_has(a->sbstate, k)) {
		char err[1024];

		a->members[k].data_offset = spare_data_offset(a, k);
		ret = rf_sbstate_add_spare(a->sbstate, k, err, sizeof(err));
		if (ret)
			rf_err("%s: %s", a->name, err);
	}
	if (a->sbstate && !ret)
		ret = rf_sbstate_set_slot(a->sbstate, k, k, 0);
	rf_sbstate_unlock(a->sbstate);
	rf_info("%s: %s takes slot %d; rebuilding %s", a->name, a->members[k].path, k,
		readd ? "what the bitmap marks" : "all of it");
	return ret;
}

struct end_job {
	struct rf_array *a;
	bool completed;
	uint64_t pos;
};

static int end_rebuild(void *arg)
{
	struct end_job *j = arg;
	struct rf_array *a = j->a;
	uint64_t r = atomic_load(&a->recovering) & ~rf_faulty(a);

	rf_sbstate_lock(a->sbstate);
	while (r) {
		int k = __builtin_ctzll(r);

		r &= r - 1;
		if (j->completed) {
			a->members[k].flags = (a->members[k].flags & RF_DEV_WRITE_MOSTLY) | RF_DEV_IN_SYNC;
			atomic_fetch_and(&a->recovering, ~(1ull << k));
			rf_info("%s: %s in slot %d is rebuilt", a->name, a->members[k].path, k);
		}
		if (a->sbstate)
			rf_sbstate_set_recovery(a->sbstate, k, j->completed ? RF_SB_MAX_SECTOR :
						j->pos);
	}
	if (j->completed) {
		atomic_store(&a->recovery_cp, 0);
		atomic_store(&a->recover_dirty_only, false);
	}
	rf_sbstate_unlock(a->sbstate);
	return 0;
}

void rf_recovery_ended(struct rf_array *a, bool completed, uint64_t pos)
{
	struct end_job j = { a, completed, pos };

	rf_array_quiesced(a, end_rebuild, &j);
}

/* ---- the management thread ---- */

/* A spare for slot k: one that used to serve k first (re-added), else
 * the first spare; -1 if none. */
static int pick_spare(struct rf_array *a, int k)
{
	int i, any = -1;

	for (i = a->nmembers; i < a->ndevs; i++) {
		unsigned f = a->members[i].flags;

		if (!(f & RF_DEV_SPARE) || (f & RF_DEV_FAULTY))
			continue;
		if (a->members[i].prev_slot == k)
			return i;
		if (any < 0)
			any = i;
	}
	return any;
}

/* reconf_lock held: the first failed slot (not being rebuilt) that a
 * spare can take, into j (slot -1: none). */
static void pick_slot(struct rf_array *a, struct swap_job *j)
{
	uint64_t bad = rf_faulty(a) & ~atomic_load(&a->recovering);
	int k;

	j->slot = j->spare = -1;
	for (k = 0; bad && k < a->nmembers; k++) {
		if (!(bad & (1ull << k)))
			continue;
		j->spare = pick_spare(a, k);
		if (j->spare >= 0) {
			j->slot = k;
			return;
		}
	}
}

/* What md's recovery check does: start or resume a rebuild if a failed
 * slot and a spare meet, unless sync_action is frozen. */
static void check_recovery(struct rf_array *a)
{
	struct rf_sync_status st;
	struct swap_job j = { .a = a, .slot = -1, .spare = -1 };
	uint64_t r;
	int ret;

	if (a->readonly || a->overlay || rf_failed_now(a))
		return;
	rf_sync_get(a, &st);
	if (st.action == RF_SYNC_FROZEN || st.action == RF_SYNC_RECOVER)
		return;
	pthread_mutex_lock(&a->reconf_lock);
	/* A device that failed while being rebuilt is just faulty. */
	r = atomic_load(&a->recovering);
	if (r & rf_faulty(a))
		atomic_fetch_and(&a->recovering, ~(r & rf_faulty(a)));
	r = atomic_load(&a->recovering);
	pick_slot(a, &j);
	pthread_mutex_unlock(&a->reconf_lock);
	if (j.slot < 0 && !r) {
		/* Rebuilt: a resync it interrupted goes on from where it stopped. */
		if (a->mgmt->resync_waits && st.action == RF_SYNC_IDLE) {
			a->mgmt->resync_waits = false;
			rf_array_start_resync(a, false);
		}
		return;
	}
	/* md interrupts a resync or check for a rebuild. */
	if (st.action != RF_SYNC_IDLE) {
		if (st.action == RF_SYNC_RESYNC)
			a->mgmt->resync_waits = true;
		rf_sync_stop(a, false);
	}
	/* Every failed slot a spare meets now is rebuilt in this one pass
	 * (raid6: two at once). */
	while (j.slot >= 0) {
		ret = rf_array_quiesced_all(a, take_slot, &j);
		if (ret) {
			rf_err("%s: recording slot %d's new device in the superblocks: %s", a->name, j.slot,
			       strerror(-ret));
			break;
		}
		pthread_mutex_lock(&a->reconf_lock);
		pick_slot(a, &j);
		pthread_mutex_unlock(&a->reconf_lock);
	}
	ret = rf_sync_request(a, RF_SYNC_RECOVER);
	if (ret && ret != -EBUSY)
		rf_err("%s: rebuild not started: %s", a->name, strerror(-ret));
}

/* ---- the member watch ---- */

/* What inotify reports of a member changed by another process: a writer
 * closed it (truncate -s, cp over it), its links changed (rm, mv over
 * it), it moved.  Our own writes report none of these. */
#define RF_WATCH_MASK (IN_CLOSE_WRITE | IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF)

/* Watch every open regular-file device's inode (not its path: the inode
 * we hold).  reconf_lock held. */
static void watch_all(struct rf_array *a)
{
	char proc[64];
	int i;

	if (!a->mgmt || a->mgmt->ino_fd < 0)
		return;
	for (i = 0; i < a->ndevs; i++) {
		const struct rf_member *m = &a->members[i];

		if (m->fd < 0 || m->id.blk)
			continue;
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", m->fd);
		inotify_add_watch(a->mgmt->ino_fd, proc, RF_WATCH_MASK);       /* the same wd if watched */
	}
}

/* Every device that is no longer what was opened (shrunk, unlinked,
 * replaced at its path) fails as if the disk had gone: a slot's member
 * is marked faulty before anything else is read from it, a spare is
 * marked faulty.  with_path: also look at the paths (the tick). */
static void check_devices(struct rf_array *a, bool with_path)
{
	char why[512], name[RF_MAX_DEVS][256];
	int i, n = 0;

	pthread_mutex_lock(&a->reconf_lock);
	watch_all(a);
	for (i = 0; i < a->ndevs; i++) {
		struct rf_member *m = &a->members[i];
		bool slot = i < a->nmembers;

		if (m->fd < 0 || (slot && (rf_faulty(a) & (1ull << i))) || (!slot && (m->flags & RF_DEV_FAULTY)))
			continue;
		if (!rf_dev_check(m->fd, &m->id, with_path, why, sizeof(why)))
			continue;
		if (slot) {
			rf_err("member %d (%s): %s: it no longer holds the array's data", i, m->path, why);
			rf_member_fail(a, i, -ENODEV, "member check", m->id.size);
		} else {
			rf_err("spare %s: %s: marking it faulty", m->path, why);
			snprintf(name[n++], sizeof(name[0]), "%s", base_name(m->path));
		}
	}
	pthread_mutex_unlock(&a->reconf_lock);
	/* A spare's flags change with everything drained. */
	for (i = 0; i < n; i++)
		rf_array_dev_set_state(a, name[i], "faulty");
}

static void *watch_main(void *arg)
{
	struct rf_array *a = arg;
	struct rf_mgmt *m = a->mgmt;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		struct pollfd p[2] = { { .fd = m->ino_fd, .events = POLLIN }, { .fd = m->stop_fd, .events = POLLIN } };

		if (poll(p, 2, -1) < 0)
			continue;
		if (p[1].revents)
			return NULL;
		if (p[0].revents && read(m->ino_fd, buf, sizeof(buf)) > 0)
			check_devices(a, true);
	}
}

static void *mgmt_main(void *arg)
{
	struct rf_array *a = arg;
	struct rf_mgmt *m = a->mgmt;

	pthread_mutex_lock(&m->lock);
	while (!m->stop) {
		if (!m->kicked) {
			struct timespec t;

			clock_gettime(CLOCK_REALTIME, &t);
			t.tv_sec += RF_MGMT_TICK_MS / 1000;
			t.tv_nsec += (RF_MGMT_TICK_MS % 1000) * 1000000L;
			if (t.tv_nsec >= 1000000000L) {
				t.tv_sec++;
				t.tv_nsec -= 1000000000L;
			}
			if (pthread_cond_timedwait(&m->cond, &m->lock, &t) == ETIMEDOUT) {
				pthread_mutex_unlock(&m->lock);
				check_devices(a, true);
				pthread_mutex_lock(&m->lock);
			}
			continue;
		}
		m->kicked = false;
		pthread_mutex_unlock(&m->lock);
		check_recovery(a);
		pthread_mutex_lock(&m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

int rf_mgmt_start(struct rf_array *a)
{
	struct rf_mgmt *m = calloc(1, sizeof(*m));
	int ret;

	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cond, NULL);
	m->kicked = true;       /* an assembled array may have a failed slot and a spare */
	m->ino_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	m->stop_fd = eventfd(0, EFD_CLOEXEC);
	a->mgmt = m;
	if (m->ino_fd >= 0 && m->stop_fd >= 0) {
		pthread_mutex_lock(&a->reconf_lock);
		watch_all(a);
		pthread_mutex_unlock(&a->reconf_lock);
		m->watching = !pthread_create(&m->watch_thread, NULL, watch_main, a);
	}
	if (!m->watching)
		rf_warn("%s: no inotify watch on the members (%s): changes to them are seen once a second",
			a->name, strerror(errno));
	ret = -pthread_create(&m->thread, NULL, mgmt_main, a);
	if (ret) {
		rf_mgmt_free(a);
		return ret;
	}
	m->started = true;
	return 0;
}

/* The thread ends; the struct stays until rf_mgmt_free() (the sync
 * thread may still kick it while it stops). */
void rf_mgmt_stop(struct rf_array *a)
{
	struct rf_mgmt *m = a->mgmt;
	bool joined;

	if (!m)
		return;
	if (m->watching) {
		uint64_t one = 1;

		if (write(m->stop_fd, &one, sizeof(one)) == sizeof(one))
			pthread_join(m->watch_thread, NULL);
		m->watching = false;
	}
	pthread_mutex_lock(&m->lock);
	joined = m->stop;
	m->stop = true;
	pthread_cond_signal(&m->cond);
	pthread_mutex_unlock(&m->lock);
	if (!joined && m->started)
		pthread_join(m->thread, NULL);
}

void rf_mgmt_free(struct rf_array *a)
{
	struct rf_mgmt *m = a->mgmt;

	if (!m)
		return;
	rf_mgmt_stop(a);
	a->mgmt = NULL;
	if (m->ino_fd >= 0)
		close(m->ino_fd);
	if (m->stop_fd >= 0)
		close(m->stop_fd);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void rf_mgmt_kick(struct rf_array *a)
{
	struct rf_mgmt *m = a->mgmt;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->kicked = true;
	pthread_cond_signal(&m->cond);
	pthread_mutex_unlock(&m->lock);
}

/* ---- md/dev-NAME/state ---- */

struct state_job {
	struct rf_array *a;
	const char *name, *word;
	int ret;
};

static int set_state(void *arg)
{
	struct state_job *j = arg;
	struct rf_array *a = j->a;
	struct rf_member *m;
	bool slot;
	int dev, ret = 0;

	dev = rf_dev_lookup(a, j->name);
	if (dev < 0)
		return dev;
	m = &a->members[dev];
	slot = dev < a->nmembers;
	rf_sbstate_lock(a->sbstate);
	if (!strcmp(j->word, "faulty")) {
		if (slot) {
			rf_member_fail(a, dev, -EIO, "md/dev-*/state \"faulty\"", 0);
		} else if (!(m->flags & RF_DEV_FAULTY)) {
			m->flags = (m->flags & ~RF_DEV_SPARE) | RF_DEV_FAULTY;
			rf_info("%s: spare %s marked faulty", a->name, m->path);
		}
	} else if (!strcmp(j->word, "remove")) {
		if (slot && !(rf_faulty(a) & (1ull << dev))) {
			rf_err("%s: dev-%s/state: remove: %s is active in slot %d (mark it faulty first)", a->name,
			       j->name, m->path, dev);
			ret = -EBUSY;
		} else if (slot) {
			rf_info("%s: %s removed from slot %d", a->name, m->path, dev);
			ret = slot_vacate(a, dev, false);
		} else {
			rf_info("%s: %s removed", a->name, m->path);
			if (a->sbstate)
				rf_sbstate_mark_faulty(a->sbstate, dev);
			dev_drop(a, dev);
		}
	} else if (!strcmp(j->word, "re-add") || !strcmp(j->word, "-faulty")) {
		if (slot && (rf_faulty(a) & (1ull << dev)) && !(atomic_load(&a->recovering) & (1ull << dev))) {
			/* Out of the slot, then back in through a rebuild. */
			ret = slot_vacate(a, dev, true);
			if (!ret) {
				a->members[a->ndevs - 1].flags = RF_DEV_SPARE;
				rf_info("%s: %s re-added to slot %d", a->name, a->members[a->ndevs - 1].path, dev);
			}
		} else if (!slot && (m->flags & RF_DEV_FAULTY)) {
			m->flags = RF_DEV_SPARE;
			rf_info("%s: %s re-added%s", a->name, m->path, m->prev_slot >= 0 ? " for its old slot" : "");
		} else {
			rf_err("%s: dev-%s/state: %s: %s is not faulty", a->name, j->name, j->word, m->path);
			ret = -EINVAL;
		}
	} else if (!strcmp(j->word, "writemostly") || !strcmp(j->word, "-writemostly")) {
		if (j->word[0] == '-')
			m->flags &= ~RF_DEV_WRITE_MOSTLY;
		else
			m->flags |= RF_DEV_WRITE_MOSTLY;
		update_write_mostly(a);
	} else {
		rf_err("%s: dev-%s/state: refused '%s': takes faulty, remove, re-add, -faulty, writemostly or "
		       "-writemostly", a->name, j->name, j->word);
		ret = -EINVAL;
	}
	rf_sbstate_unlock(a->sbstate);
	return ret;
}

int rf_array_dev_set_state(struct rf_array *a, const char *name, const char *word)
{
	struct state_job j = { a, name, word, 0 };
	int ret;

	if (a->readonly || a->overlay) {
		rf_err("%s: dev-%s/state: the array is read-only", a->name, name);
		return -EROFS;
	}
	ret = rf_array_quiesced_all(a, set_state, &j);
	if (!ret)
		rf_mgmt_kick(a);
	return ret;
}

/* ---- md/new_dev ---- */

struct add_job {
	struct rf_array *a;
	struct rf_member m;
	char *err;
	size_t errlen;
};

static int add_dev(void *arg)
{
	struct add_job *j = arg;
	struct rf_array *a = j->a;
	int dev = a->ndevs, ret = 0;

	if (dev >= RF_MAX_DEVS) {
		snprintf(j->err, j->errlen, "%s: the array holds %d devices already", j->m.path, dev);
		return -ENOSPC;
	}
	rf_sbstate_lock(a->sbstate);
	a->members[dev] = j->m;
	a->ndevs++;
	if (a->sbstate)
		ret = rf_sbstate_add_spare(a->sbstate, dev, j->err, j->errlen);
	if (ret) {
		rf_sbstate_forget(a->sbstate, dev);
		memset(&a->members[dev], 0, sizeof(a->members[0]));
		a->ndevs--;
	}
	rf_sbstate_unlock(a->sbstate);
	return ret;
}

/* Refuse a file that holds another md array's superblock (or a damaged
 * one): writing a spare superblock would destroy it. */
static int check_foreign_sb(struct rf_array *a, int fd, const char *path, char *err, size_t errlen)
{
	char why[1024], u1[40], u2[40];
	struct rf_sb sb, mine;
	int i, r = rf_sb_read(fd, path, &sb, why, sizeof(why));

	if (r == -ENOENT)
		return 0;
	if (r) {
		snprintf(err, errlen, "%s: refused: it holds an md superblock that does not read (%s); clear it "
			 "first if it is not needed", path, why);
		return -EINVAL;
	}
	for (i = 0; i < a->nmembers; i++) {
		if (a->members[i].fd < 0 || rf_sb_read(a->members[i].fd, a->members[i].path, &mine, why, sizeof(why)))
			continue;
		if (!memcmp(mine.uuid, sb.uuid, 16))
			return 0;       /* one of ours: it becomes a spare again */
		snprintf(err, errlen, "%s: refused: it belongs to another md array (uuid %s, this one %s); clear "
			 "its superblock first if that array is not needed", path, rf_sb_uuid_str(&sb, u1),
			 rf_sb_uuid_str(&mine, u2));
		return -EEXIST;
	}
	return 0;
}

int rf_array_add_spare(struct rf_array *a, const char *path, char *err, size_t errlen)
{
	struct add_job j = { .a = a, .err = err, .errlen = errlen };
	struct rf_member *m = &j.m;
	uint64_t need;
	struct rf_dev_fd d;
	int ret, other;

	m->fd = m->fd_direct = -1;
	if (a->readonly || a->overlay) {
		snprintf(err, errlen, "%s: the array is %s: no spares", path, a->readonly ? "read-only" : "an overlay");
		return -EROFS;
	}
	ret = rf_dev_open(path, path, RF_DEV_DIRECT | RF_DEV_NOLOCK, &d, err, errlen);
	if (ret)
		return ret;
	m->fd = d.fd;
	m->fd_direct = d.fd_direct;
	m->id = d.id;
	m->size = d.id.size;
	m->prev_slot = -1;
	m->flags = RF_DEV_SPARE;
	m->align = 4096;
	pthread_mutex_lock(&a->reconf_lock);
	m->data_offset = spare_data_offset(a, -1);
	need = m->data_offset + a->geom.dev_sectors * 512;
	other = rf_same_file(a, a->ndevs, &m->id);
	if (other >= 0)
		snprintf(err, errlen, "%s: already in the array (as %s)", path, a->members[other].path);
	pthread_mutex_unlock(&a->reconf_lock);
	if (other >= 0) {
		ret = -EEXIST;
		goto fail;
	}
	ret = rf_dev_lock(&d, false, path, err, errlen);
	if (ret)
		goto fail;
	if (m->size < need) {
		snprintf(err, errlen, "%s: %llu bytes is too small: this array needs %llu (data offset %llu + %llu)",
			 path, (unsigned long long)m->size, (unsigned long long)need,
			 (unsigned long long)m->data_offset, (unsigned long long)(need - m->data_offset));
		ret = -ENOSPC;
		goto fail;
	}
	if (a->sbstate) {
		pthread_mutex_lock(&a->reconf_lock);
		ret = check_foreign_sb(a, m->fd, path, err, errlen);
		pthread_mutex_unlock(&a->reconf_lock);
		if (ret)
			goto fail;
	}
	m->path = strdup(path);
	if (!m->path) {
		ret = -ENOMEM;
		goto fail;
	}
	m->fault = rf_fault_new();
	if (!m->fault) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = rf_array_quiesced_all(a, add_dev, &j);
	if (ret)
		goto fail;
	rf_info("%s: %s added as a spare", a->name, path);
	rf_mgmt_kick(a);
	return 0;
fail:
	dev_close(m);
	return ret;
}

/* ---- md/dev-NAME/fault ---- */

/* The fault state of device name; reconf_lock held.  NULL: no such
 * device. */
static struct rf_fault *dev_fault(struct rf_array *a, const char *name)
{
	int dev = rf_dev_lookup(a, name);

	return dev < 0 ? NULL : a->members[dev].fault;
}

int rf_array_dev_fault_get(struct rf_array *a, const char *name, struct rf_fault_spec *s,
			   struct rf_fault_stats *st)
{
	struct rf_fault *f;

	pthread_mutex_lock(&a->reconf_lock);
	f = dev_fault(a, name);
	if (f)
		rf_fault_get(f, s, st);
	pthread_mutex_unlock(&a->reconf_lock);
	return f ? 0 : -ENOENT;
}

int rf_array_dev_fault_set(struct rf_array *a, const char *name, const struct rf_fault_spec *s)
{
	struct rf_fault *f;

	pthread_mutex_lock(&a->reconf_lock);
	f = dev_fault(a, name);
	if (f)
		rf_fault_set(f, s);
	pthread_mutex_unlock(&a->reconf_lock);
	return f ? 0 : -ENOENT;
}
