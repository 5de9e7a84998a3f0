/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ioq.h - member IO queue, one per worker thread.
 *
 * A worker queues struct rf_mio (one read, write or fsync of one member) and
 * later reaps completions; each completed rf_mio has its end() called on the
 * same thread, with m->res = 0 or -errno.  Short transfers are resubmitted
 * for the remainder here, EAGAIN/EINTR are retried, so callers only ever see
 * "all bytes moved" or an error.  A transfer that makes no progress (end of
 * file) ends with -EIO.
 *
 * The queue runs on a backend: liburing (rf_ioq_init_uring) in the daemon, or
 * a test double (tests/unit) that injects errors, short IO and back-pressure.
 * Queued IO waits until rf_ioq_submit().  Reads or writes queued back to
 * back for one member at adjacent offsets are merged into one vectored
 * operation (up to RF_IOQ_MAX_MERGE of them, RF_IOQ_MAX_MERGE_BYTES): a row
 * of stripe heads becomes one writev per member.  A merged operation that
 * fails is retried piece by piece, so an error names the piece it hit.
 * A read that fails is issued once more, alone, before its error is
 * reported (md's read retry), unless its member is failfast: then the
 * error ends it at once, merged pieces and all.
 *
 * A queue is single-threaded except rf_ioq_kick(), which any thread may call
 * to end a blocking rf_ioq_reap(), and the ends of NBD commands (nbd.h),
 * which the connections' pollers hand to the queue (q->nbd_done).
 */
#ifndef RAIDFUSE_IOQ_H
#define RAIDFUSE_IOQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/uio.h>

#include "raidfuse/fdmap.h"
#include "raidfuse/iolog.h"

#define RF_IOQ_MAX_MEMBERS 128
#define RF_IOQ_MAX_MERGE 64
#define RF_IOQ_MAX_MERGE_BYTES (1u << 20)
#define RF_IOQ_BOUNCE_UNIT (64u << 10)
#define RF_IOQ_BOUNCE_UNITS 64
#define RF_IOQ_BOUNCE_BYTES (RF_IOQ_BOUNCE_UNIT * RF_IOQ_BOUNCE_UNITS)

enum rf_mio_op { RF_MIO_READ, RF_MIO_WRITE, RF_MIO_FSYNC };

struct rf_mio {
	/* On one of the queue's lists at a time (ioq.c); free for the owner
	 * otherwise. */
	union {
		STAILQ_ENTRY(rf_mio) link;      /* q->retry, q->injected, ioq.c's local lists */
		struct rf_mio *nbd_next;        /* q->nbd_done: a lock-free stack the NBD pollers
						 * push on (compare-and-swap, not a queue.h list) */
	};
	void *twin;                     /* not the queue's: the core's hot replace (a write
					 * that goes to a replacement too), NULL otherwise */
	void (*end)(struct rf_mio *m);  /* completion, on the queue's thread */
	void *priv;                     /* the owner's */
	char *buf;
	uint64_t off;                   /* byte offset on the member */
	uint32_t len;
	uint32_t done;                  /* bytes moved so far */
	int16_t member;
	uint8_t op;                     /* enum rf_mio_op */
	uint8_t nomerge;                /* ioq: retried alone */
	uint8_t fault_asked;            /* ioq: fault injection asked (once per issue) */
	uint8_t read_retried;           /* ioq: a failed read issued once more */
	int res;                        /* 0 or -errno, set before end() */
	/* ioq-private: the mios merged behind this one */
	struct rf_mio *chain, *ctail;
	uint16_t nchain;
	int16_t iov_slot;
	uint64_t iolog_id;              /* ioq: the io log's id of the op in flight, or 0 */
	int8_t bounce_at;               /* ioq: first unit of the queue's bounce buffer it
					 * moves through while in flight; -1: none */
	uint8_t bounce_n;               /* ioq: units of it */
	uint16_t bounce_head;           /* ioq: bytes read before the first one asked (a read
					 * widened to the member's alignment) */
	uint8_t dsync;                  /* ioq: a write through the buffered fd, written through
					 * (RWF_DSYNC: direct mode, offset or length unaligned) */
};

struct rf_nbd;

/* One member as the queue sees it.  Its IO mode (direct) says which of
 * its two descriptors carries its reads and writes:
 *  - direct: every read and write goes to fd_direct (O_DIRECT).  One
 *    whose buffer, offset or length is not aligned moves through the
 *    queue's bounce buffer (preallocated, aligned): a read is widened to
 *    whole aligned blocks and the bytes asked copied out; a write whose
 *    offset and length are aligned is copied in.  A write whose offset or
 *    length is not (a few bytes written in place: it cannot be widened
 *    without reading and racing the neighbours' writes) goes to fd with
 *    RWF_DSYNC: written through, acknowledged once on the device, as an
 *    O_DIRECT one;
 *  - buffered (direct 0): every read and write goes to fd, the page
 *    cache; what the array flushes (fsync) reaches the device.
 * fsync goes to fd in both. */
struct rf_ioq_member {
	int fd_direct;                  /* -1: none */
	int fd;                         /* buffered */
	uint32_t align;                 /* O_DIRECT alignment (offset, length, address) */
	uint8_t direct;                 /* the IO mode (above): set only with the queues idle */
	void *layer;                    /* a member layer's state (the overlay), or NULL */
	struct rf_nbd *nbd;             /* an NBD export (nbd.h): every operation is an
					 * asynchronous command on it; fds are -1 then */
	struct rf_fault *fault;         /* fault injection (fault.h), or NULL: asked before
					 * each operation is issued */
	struct rf_fdmap map;            /* the file mapped (fdmap.h: a file in memory), or
					 * not (map.base NULL): a read inside it is a copy
					 * from there, and with map.writable a write a copy
					 * to there, no system call (owned by the device,
					 * not the queue) */
	int stat_fd;                    /* > 0: its block device's stat (devstat.h): an
					 * overdue fsync waits one more timeout while the device
					 * completes IO (writing back, not hung); 0, -1: none */
	uint8_t failfast;               /* md's failfast: a failed read ends with its error
					 * at once (else it is issued once more first); the
					 * array changes it while IO runs: read atomically */
};

/* Whether mm is read and written with plain system calls on its file
 * (no layer over it, no NBD export). */
static inline bool rf_ioq_member_plain(const struct rf_ioq_member *mm)
{
	return !mm->layer && !mm->nbd;
}

/* Where member mm's bytes [off, off + len) are in its mapping, to be read
 * from there, or with write written there; NULL: not all of them mapped,
 * a member not read and written plainly, or a write the mapping may not
 * take (mapped for reads only, or the io log records writes: it sees
 * only those issued), or a member in direct mode (its IO is O_DIRECT,
 * whatever file system it is on).  The one rule for every use of a mapping (the IO
 * queue's copies, the read map's extents, a sync region's reads). */
static inline const char *rf_ioq_member_map(const struct rf_ioq_member *mm, uint64_t off, uint64_t len,
					    bool write)
{
	if (!rf_ioq_member_plain(mm) || mm->direct || (write && (!mm->map.writable || rf_iolog_on)))
		return NULL;
	return rf_fdmap_at(&mm->map, off, len);
}

/* The members a queue serves: n entries of struct rf_ioq_member, stride
 * bytes apart.  The array's entries sit inside its device objects (one
 * per device, no copy); a test passes a plain array (RF_IOQ_ARRAY).  The
 * entries are read at each issue, so the owner may change them while the
 * queue is idle. */
struct rf_ioq_devs {
	const struct rf_ioq_member *first;
	size_t stride;
	int n;
	/* A member that hangs (the io_uring queue; 0: no deadline): an
	 * operation the backend has not ended timeout_ms after its issue is
	 * overdue.  A write or fsync then ends with -ETIMEDOUT (its end()
	 * fails the member; what the kernel still does with it later goes to
	 * a failed member), unless it is an fsync whose device completes IO
	 * meanwhile (rf_ioq_member.stat_fd); a read cannot end before the
	 * kernel gives its buffer back, so overdue(overdue_priv, member, off)
	 * is told once and the read waits. */
	unsigned timeout_ms;
	void (*overdue)(void *overdue_priv, int member, uint64_t off);
	void *overdue_priv;
};
#define RF_IOQ_ARRAY(arr, cnt) ((struct rf_ioq_devs){ .first = (arr), .stride = sizeof(*(arr)), .n = (cnt) })

struct rf_ioq;
struct rf_fault;

struct rf_ioq_backend {
	/* Queue one operation on fd; 0, or -EBUSY when the backend is full. */
	int (*prep)(struct rf_ioq *q, struct rf_mio *m, int fd, char *buf, uint32_t len, uint64_t off);
	/* The same, vectored (merged mios; m is the first). */
	int (*prepv)(struct rf_ioq *q, struct rf_mio *m, int fd, const struct iovec *iov, int niov, uint64_t off);
	/* Push queued operations to the kernel; >= 0 or -errno. */
	int (*submit)(struct rf_ioq *q);
	/* Deliver completions through rf_ioq_complete(); with wait, block until
	 * at least one completion or a kick.  Returns completions seen or -errno. */
	int (*reap)(struct rf_ioq *q, bool wait);
	void (*kick)(struct rf_ioq *q);
	void (*destroy)(struct rf_ioq *q);
	/* Reads and writes inside a member's mapping are copied from and to
	 * it, not handed to prep: the backends that stand for the member
	 * files themselves (a test's fake member, which injects or records,
	 * sees every operation). */
	bool map_reads;
};

/* A plug: a client that gathers work into mios already queued (the
 * partial parity log fills a unit's header while heads join it) until
 * they are issued.  rf_ioq_submit() takes every plug off the queue and
 * runs its unplug() first, on the queue's thread, before it issues
 * anything; unplug() may queue more. */
struct rf_ioq_plug {
	struct rf_ioq_plug *next;       /* the queue's, while plugged */
	void (*unplug)(struct rf_ioq_plug *pl, struct rf_ioq *q);
};

struct rf_ioq {
	const struct rf_ioq_backend *be;
	void *priv;                     /* backend state */
	struct rf_ioq_devs devs;
	STAILQ_HEAD(, rf_mio) retry;    /* queued, not yet with the backend, in order */
	STAILQ_HEAD(, rf_mio) injected; /* ended by fault injection, not issued: completed
					 * by the next rf_ioq_reap() (counted in inflight),
					 * newest first */
	_Atomic(struct rf_mio *) nbd_done;   /* NBD commands ended, pushed by their connections'
					      * pollers (any thread); taken by rf_ioq_reap() */
	unsigned nbd_inflight;          /* of inflight: NBD commands not yet reaped */
	atomic_uint nbd_ending;         /* NBD ends between their push on nbd_done and the
					 * end of their kick: rf_ioq_destroy() waits for 0 */
	struct rf_mio *mtail[RF_IOQ_MAX_MEMBERS];   /* per member: queued mio open to merging */
	struct rf_ioq_plug *plugs;      /* run by the next rf_ioq_submit() */
	unsigned inflight;
	struct iovec *iov;              /* one array of RF_IOQ_MAX_MERGE per slot */
	int16_t *iov_free;
	int niov_free;
	uint64_t nr_short, nr_retry, nr_merged, nr_injected, nr_read_retry; /* stats */
	uint64_t nr_mapped;             /* reads copied from mappings (stats) */
	/* A walk over the members that touches each page once (a reshape,
	 * what a sync walk writes):
	 * members in memory get its transfers through the backend, not
	 * copied through their mappings, whose first touch of a page costs a
	 * fault of its own (more than the copy where page tables are
	 * expensive, as in virtual machines). */
	bool stream;
	uint64_t nr_abandoned;          /* overdue writes and fsyncs ended (stats) */
	/* Direct mode's bounce buffer (see struct rf_ioq_member): RF_IOQ_BOUNCE_UNITS
	 * units of RF_IOQ_BOUNCE_UNIT bytes, mapped at init (its pages are
	 * taken when first used); an operation takes a run of units while in
	 * flight, or waits for one (a longer one moves its first
	 * RF_IOQ_BOUNCE_BYTES and goes on as a short transfer). */
	char *bounce;
	uint64_t bounce_free;           /* bit i: unit i is free */
	uint64_t nr_bounced;            /* operations moved through it (stats) */
};

/* Common setup for backends: members, retry list, iovec slots.  0 or -ENOMEM. */
int rf_ioq_init_common(struct rf_ioq *q, struct rf_ioq_devs devs, unsigned slots);
/* liburing backend with `depth` entries.  Returns 0 or -errno. */
int rf_ioq_init_uring(struct rf_ioq *q, struct rf_ioq_devs devs, unsigned depth);
/* The same for a queue that threads hand between them (an inline
 * worker's): any thread may submit and reap, and a completion needs no
 * work from the thread that submitted it (no SINGLE_ISSUER, no
 * COOP_TASKRUN). */
int rf_ioq_init_uring_shared(struct rf_ioq *q, struct rf_ioq_devs devs, unsigned depth);
/* Synchronous backend: queued operations run in rf_ioq_submit() on the
 * calling thread (pread/pwrite), completions come from rf_ioq_reap(). */
int rf_ioq_init_sync(struct rf_ioq *q, struct rf_ioq_devs devs, unsigned depth);
/* The synchronous backend with each operation run by fn instead of
 * pread/pwrite/fsync (a member layer): fn returns the bytes moved or
 * -errno. */
typedef int (*rf_ioq_run_fn)(const struct rf_ioq_member *mm, int op, const struct iovec *iov, int niov,
			     uint64_t off);
int rf_ioq_init_sync_run(struct rf_ioq *q, struct rf_ioq_devs devs,
			 unsigned depth, rf_ioq_run_fn fn);
void rf_ioq_destroy(struct rf_ioq *q);

/* Queue m (its buf/off/len/op/member/end set).  Never fails: when the backend
 * is full, m waits on the retry list until rf_ioq_submit() finds room. */
void rf_ioq_queue(struct rf_ioq *q, struct rf_mio *m);
/* Plug pl (not plugged yet) on q, from q's thread: the next
 * rf_ioq_submit() runs pl->unplug() before it issues anything. */
static inline void rf_ioq_plug(struct rf_ioq *q, struct rf_ioq_plug *pl)
{
	pl->next = q->plugs;
	q->plugs = pl;
}
/* Submit everything queued (plugs first).  Returns 0 or -errno from the backend. */
int rf_ioq_submit(struct rf_ioq *q);
/* Reap completions (end() runs for each finished mio); wait: block until one
 * arrives or rf_ioq_kick().  Returns the number of end() calls or -errno. */
int rf_ioq_reap(struct rf_ioq *q, bool wait);
static inline void rf_ioq_kick(struct rf_ioq *q) { q->be->kick(q); }
/* Where a write of member `member`'s bytes [off, off + len) may be
 * computed in place: the bytes in its mapping, when the queue would copy
 * such a write there at issue (its backend takes mappings, the member's
 * fault injection is off, rf_ioq_member_map() allows it); NULL
 * otherwise.  Bytes stored there are the write (as the copy at issue is):
 * queue its mio with buf at that address, and it completes without a
 * second copy.  Computing there is a read of the mapping too: guarded
 * (rf_fdmap_guarded()). */
const char *rf_ioq_store_at(const struct rf_ioq *q, int member, uint64_t off, uint32_t len);
/* Member i's entry. */
static inline const struct rf_ioq_member *rf_ioq_dev(const struct rf_ioq *q, int i)
{
	return (const struct rf_ioq_member *)((const char *)q->devs.first + (size_t)i * q->devs.stride);
}
static inline bool rf_ioq_busy(const struct rf_ioq *q) { return q->inflight || !STAILQ_EMPTY(&q->retry); }
/* IO waits to be resubmitted and nothing is in flight whose end would
 * make room: submit again rather than wait. */
static inline bool rf_ioq_stalled(const struct rf_ioq *q) { return !STAILQ_EMPTY(&q->retry) && !q->inflight; }

/* For backends: one operation finished with res (bytes or -errno).
 * Returns 1 when m->end() ran, 0 when m was requeued. */
int rf_ioq_complete(struct rf_ioq *q, struct rf_mio *m, int res);

#endif
