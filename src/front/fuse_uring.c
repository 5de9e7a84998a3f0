/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuse_uring.c - FUSE over io_uring: raidfuse serves the kernel's FUSE
 * requests through io_uring instead of read/write on /dev/fuse.
 *
 * Why: on this kind of machine the /dev/fuse round trip (a read to fetch
 * each request, a write to answer it, a wake-up between them) is most of
 * the cost of an IO; with FUSE over io_uring (Linux 6.14+, the fuse
 * module's enable_uring parameter) a request arrives as the completion of
 * an IORING_OP_URING_CMD and its answer is the next command, which also
 * fetches the following request: one io_uring_enter per request, no
 * copy through a read buffer.  libfuse 3.14 cannot negotiate it (its INIT
 * flags are 32 bits), so this file answers INIT and serves the requests;
 * libfuse still mounts, unmounts and handles signals.
 *
 * Shape:
 *   - one queue per possible CPU (the kernel sends a request to the queue
 *     of the CPU its sender runs on, and switches to the rings only once
 *     every queue has an entry registered);
 *   - per queue, several threads, each with its own ring (SQE128) and
 *     its own entries, so that one request that blocks (a control file
 *     whose store drains the array, a full request pool) does not stall
 *     its CPU's queue;
 *   - an entry is a header (struct rf_uring_hdr: fuse_in_header, the
 *     op's fixed argument, the entry's in/out trailer) and a payload of
 *     max_write bytes (a write's data, a lookup's name; a reply's data),
 *     registered once as an iovec pair;
 *   - whoever answers a request (the ring's thread, or a worker when the
 *     IO ends there) writes the reply into the entry; only the ring's own
 *     thread submits the COMMIT_AND_FETCH: its own answers with the batch
 *     of completions it works through (one io_uring_enter for all), the
 *     others' from a completion list, woken by an eventfd whose read is
 *     always in flight on its ring.  The kernel runs a command's later
 *     work (copying the next request in) in the task that submitted it,
 *     so a command submitted by a worker would die with that worker
 *     (group_thread_cnt changes end workers);
 *   - an entry is taken until its request is answered, and there is no
 *     way to give it back without an answer (COMMIT_AND_FETCH names the
 *     request), so a write that the array holds back (suspended, a
 *     drain) keeps its entry.  The kernel sends at most max_background
 *     background requests (async direct IO) at a time, kept at 3/4 of a
 *     queue's entries; but synchronous writes (buffered, one per writer)
 *     have no such bound, and more writers on one CPU than its queue has
 *     entries took them all: the store that resumes the array (echo
 *     active > md/array_state), sent from that CPU, waited for an entry
 *     forever.  So a ring grows: when the kernel holds fewer than a
 *     quarter of its entries, its thread registers half as many again
 *     (grow(), up to ENT_GROW_MAX times the first count; a payload's
 *     pages cost memory only once a request used them).  Reserving
 *     entries for control files cannot be done (the kernel gives a
 *     request the first free entry of its queue, whatever the op), and
 *     entries must be there before the request comes: one the kernel
 *     queued while none was free is fetched only by the next
 *     COMMIT_AND_FETCH on its queue, not by a new registration.  Such a
 *     request (a burst faster than the ring's thread) is therefore
 *     served once any other request of that queue is answered;
 *   - a read lands in the entry's payload (rf_fq_ops.read_buf): no copy;
 *   - /dev/fuse is still read by one small reader (rf_uring_run): the
 *     kernel sends FORGET and INTERRUPT there (no answer needed), and
 *     anything before the queues are ready; what it must answer, it
 *     answers with writev.
 *
 * Locks: each ring's lock guards its completion list and its flags
 * (woken, stop, stopped); it is a leaf (nothing is taken under it).  A
 * ring's SQ and CQ are its own thread's alone.
 *
 * Invariants: an entry holds at most one request, answered exactly once;
 * its payload (lent to the core for a write) stays until rf_uring_free,
 * which runs only after every request came home.  After a ring stopped,
 * an answer for one of its entries is dropped: the connection is gone.
 *
 * Notifications: it sends the one raidfuse needs (the image's size
 * changed: rf_uring_notify_inval_inode), on /dev/fuse, as libfuse would;
 * libfuse cannot, since it never saw INIT.
 *
 * What it does NOT do: other notifications, interrupts (requests
 * are not cancelled), splice, readdirplus, any op fuse.c does not
 * implement (those answer ENOSYS, as libfuse's defaults do).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "front/fuse_uring.h"
#include "raidfuse/lockcheck.h"
#include "raidfuse/log.h"
#include "raidfuse/util.h"

/* ---------------------------------------------------------------- kernel ABI (7.42)
 * Debian 12's linux/fuse.h is 7.38: what FUSE over io_uring adds. */
#define RF_FUSE_OVER_IO_URING (1ULL << 41)
#define RF_URING_MINOR 42
#define RF_URING_IN_OUT_SZ 128
#define RF_URING_OP_IN_SZ 128

enum { RF_URING_CMD_REGISTER = 1, RF_URING_CMD_COMMIT_AND_FETCH = 2 };

/* The entry's trailer: the kernel fills it with a request, we with a reply. */
struct rf_uring_ent_io {
	uint64_t flags;
	uint64_t commit_id;     /* echoed in rf_uring_cmd.commit_id */
	uint32_t payload_sz;    /* bytes of the payload in use */
	uint32_t padding;
	uint64_t reserved;
};

/* iov[0] of an entry. */
struct rf_uring_hdr {
	char in_out[RF_URING_IN_OUT_SZ];        /* fuse_in_header / fuse_out_header */
	char op_in[RF_URING_OP_IN_SZ];          /* the op's fixed argument */
	struct rf_uring_ent_io ent;
};

/* In the SQE's 80-byte command area. */
struct rf_uring_cmd {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};

_Static_assert(sizeof(struct rf_uring_ent_io) == 32, "fuse_uring_ent_in_out");
_Static_assert(sizeof(struct rf_uring_hdr) == 288, "fuse_uring_req_header");
_Static_assert(sizeof(struct rf_uring_cmd) == 24, "fuse_uring_cmd_req");

#define DEF_THREADS 2
#define DEF_ENTRIES 32
/* A ring grows to at most this many times its first entries. */
#define ENT_GROW_MAX 16
/* user_data of the eventfd read that wakes a ring's thread. */
#define WAKE_TAG 1

struct uthr;

/* What rf_fq.h points to: a ring entry, or a request read from /dev/fuse. */
struct uh {
	bool ring;
	uint64_t unique;
};

struct ent {
	struct uh uh;
	struct uthr *t;
	struct ent *next_done;          /* on t->done; t->lock */
	struct rf_uring_hdr *hdr;
	char *payload;
	struct iovec iov[2];
	int fails;                      /* commands refused in a row (own thread) */
};

struct devreq {
	struct uh uh;
	int fd;
};

struct uthr {
	struct rf_uring *u;
	int qid;
	pthread_t tid;
	bool started;
	/* The ring, its SQ and CQ: this thread's alone (the kernel runs a
	 * command's later work in the task that submitted it, so no other
	 * thread may: a worker that exits would take its entries along). */
	struct io_uring ring;
	bool ring_ok;
	int evfd;               /* wakes the thread: answers on done, stop */
	uint64_t evbuf;         /* the eventfd read in flight (own thread) */
	/* lock (a leaf): done, woken, stop, stopped. */
	pthread_mutex_t lock;
	struct ent *done;       /* answered by other threads, to commit (LIFO) */
	bool woken;             /* evfd written since the thread last looked */
	bool stop;              /* told to stop */
	bool stopped;           /* no longer commits: answers are dropped */
	int nent;               /* entries registered (own thread; read at free) */
	int cap;                /* room in ents: nent grows up to it */
	struct ent *ents;
	int live;               /* entries registered and not ended (own thread) */
	int out;                /* entries whose request is ours to answer (own thread) */
	bool capped;            /* said that nent reached cap (own thread) */
};

#define BULK_THREADS_MAX 8
#define BULK_MIN_DEFAULT (256u << 10)

/* Entries served by threads of their own, in arrival order.  lock (a
 * leaf) guards head, tail and stop. */
struct handoff {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct ent *head, **tail;
	bool stop;
	int nthreads;                   /* started */
	pthread_t tid[BULK_THREADS_MAX];
	const char *name;               /* the threads' */
};

struct rf_uring {
	struct rf_uring_conf c;
	int nq, nt;             /* queues, threads per queue */
	struct uthr *thr;       /* nq * nt */
	/* Requests that may wait long (c.slow: a control file store that
	 * drains the array) are served on their own thread, so that a ring's
	 * thread goes on answering: the answers it has made wait for its next
	 * submit, and its entries for it. */
	struct handoff slow;
	/* Large reads and writes are served off the rings' threads too, by
	 * threads free to run on any CPU (bulk_min: from what size; 0: none
	 * are).  The kernel queues a request on the CPU its sender runs on,
	 * and a ring's thread is pinned there: a 1 MiB read served there
	 * copies the members into the payload on the CPU where the kernel
	 * then copies the payload to the reader, while the other CPU idles. */
	struct handoff bulk;
	size_t bulk_min;
	atomic_ulong bulk_served;       /* requests handed to the bulk threads */
	size_t payload_sz;
	unsigned minor;
	pthread_mutex_t reg_lock;       /* registered, reg_err, reg_cond */
	pthread_cond_t reg_cond;
	int registered, reg_err;
};

/* The ring whose thread this is (NULL elsewhere). */
static __thread struct uthr *self;

/* ---------------------------------------------------------------- replies */

/* Queue e's answer on its ring: its own thread only.  Submitted with the
 * batch.  One SQE per entry at most is queued at a time, and the SQ holds
 * every entry and the eventfd read: there is room. */
static void prep_commit(struct ent *e)
{
	struct uthr *t = e->t;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
	struct rf_uring_cmd *cmd;

	if (!sqe) {
		io_uring_submit(&t->ring);
		sqe = io_uring_get_sqe(&t->ring);
	}
	if (!sqe) {
		rf_err("FUSE over io_uring: queue %d: no room to answer a request", t->qid);
		return;
	}
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = t->u->c.fd;
	sqe->cmd_op = RF_URING_CMD_COMMIT_AND_FETCH;
	sqe->user_data = (uintptr_t)e;
	cmd = (struct rf_uring_cmd *)sqe->cmd;
	cmd->commit_id = e->hdr->ent.commit_id;
	cmd->qid = (uint16_t)t->qid;
	t->out--;
}

static void wake(struct uthr *t)
{
	uint64_t one = 1;

	if (write(t->evfd, &one, sizeof(one)) < 0)
		rf_err("FUSE over io_uring: queue %d: cannot wake its thread: %s", t->qid, strerror(errno));
}

/* e is answered: commit it, or hand it to its ring's thread. */
static void commit(struct ent *e)
{
	struct uthr *t = e->t;
	bool need_wake;

	if (self == t) {
		prep_commit(e);
		return;
	}
	pthread_mutex_lock(&t->lock);
	if (t->stopped) {
		pthread_mutex_unlock(&t->lock);
		return;
	}
	e->next_done = t->done;
	t->done = e;
	need_wake = !t->woken;
	t->woken = true;
	pthread_mutex_unlock(&t->lock);
	if (need_wake)
		wake(t);
}

/* Answer q: error err (positive errno) or the concatenation of a and b. */
static int reply(struct rf_fq *q, int err, const void *a, size_t alen, const void *b, size_t blen)
{
	struct uh *h = q->h;
	struct fuse_out_header oh = { .error = -err, .unique = h->unique };

	if (err)
		alen = blen = 0;
	oh.len = (uint32_t)(sizeof(oh) + alen + blen);
	if (h->ring) {
		struct ent *e = (struct ent *)h;

		if (alen + blen > e->t->u->payload_sz) {
			oh.error = -EIO;
			alen = blen = 0;
		}
		memcpy(e->hdr->in_out, &oh, sizeof(oh));
		if (alen && a != e->payload)
			memcpy(e->payload, a, alen);
		if (blen)
			memcpy(e->payload + alen, b, blen);
		e->hdr->ent.payload_sz = (uint32_t)(alen + blen);
		commit(e);
		return 0;
	} else {
		struct devreq *d = (struct devreq *)h;
		struct iovec iov[3] = { { &oh, sizeof(oh) }, { (void *)a, alen }, { (void *)b, blen } };
		ssize_t n = writev(d->fd, iov, 3);
		int ret = n < 0 ? -errno : 0;

		free(d);
		return ret;
	}
}

static int r_err(struct rf_fq *q, int err)
{
	return reply(q, err, NULL, 0, NULL, 0);
}

static void to_attr(const struct stat *st, struct fuse_attr *fa)
{
	memset(fa, 0, sizeof(*fa));
	fa->ino = st->st_ino;
	fa->size = (uint64_t)st->st_size;
	fa->blocks = (uint64_t)st->st_blocks;
	fa->atime = (uint64_t)st->st_atim.tv_sec;
	fa->mtime = (uint64_t)st->st_mtim.tv_sec;
	fa->ctime = (uint64_t)st->st_ctim.tv_sec;
	fa->atimensec = (uint32_t)st->st_atim.tv_nsec;
	fa->mtimensec = (uint32_t)st->st_mtim.tv_nsec;
	fa->ctimensec = (uint32_t)st->st_ctim.tv_nsec;
	fa->mode = st->st_mode;
	fa->nlink = (uint32_t)st->st_nlink;
	fa->uid = st->st_uid;
	fa->gid = st->st_gid;
	fa->rdev = (uint32_t)st->st_rdev;
	fa->blksize = (uint32_t)st->st_blksize;
}

static void split_timeout(double t, uint64_t *sec, uint32_t *nsec)
{
	if (t < 0)
		t = 0;
	*sec = (uint64_t)t;
	*nsec = (uint32_t)((t - (double)*sec) * 1e9);
}

static int r_entry(struct rf_fq *q, uint64_t ino, const struct stat *st, double timeout)
{
	struct fuse_entry_out o;

	memset(&o, 0, sizeof(o));
	o.nodeid = ino;
	split_timeout(timeout, &o.entry_valid, &o.entry_valid_nsec);
	split_timeout(timeout, &o.attr_valid, &o.attr_valid_nsec);
	to_attr(st, &o.attr);
	return reply(q, 0, &o, sizeof(o), NULL, 0);
}

static int r_attr(struct rf_fq *q, const struct stat *st, double timeout)
{
	struct fuse_attr_out o;

	memset(&o, 0, sizeof(o));
	split_timeout(timeout, &o.attr_valid, &o.attr_valid_nsec);
	to_attr(st, &o.attr);
	return reply(q, 0, &o, sizeof(o), NULL, 0);
}

static int r_buf(struct rf_fq *q, const void *buf, size_t len)
{
	return reply(q, 0, buf, len, NULL, 0);
}

static int r_write(struct rf_fq *q, size_t count)
{
	struct fuse_write_out o = { .size = (uint32_t)count };

	return reply(q, 0, &o, sizeof(o), NULL, 0);
}

static int r_open(struct rf_fq *q, uint64_t fh, bool direct_io)
{
	struct fuse_open_out o = { .fh = fh, .open_flags = direct_io ? FOPEN_DIRECT_IO : 0 };

	return reply(q, 0, &o, sizeof(o), NULL, 0);
}

static int r_statfs(struct rf_fq *q, const struct statvfs *sv)
{
	struct fuse_statfs_out o;

	memset(&o, 0, sizeof(o));
	o.st.blocks = sv->f_blocks;
	o.st.bfree = sv->f_bfree;
	o.st.bavail = sv->f_bavail;
	o.st.files = sv->f_files;
	o.st.ffree = sv->f_ffree;
	o.st.bsize = (uint32_t)sv->f_bsize;
	o.st.namelen = (uint32_t)sv->f_namemax;
	o.st.frsize = (uint32_t)sv->f_frsize;
	return reply(q, 0, &o, sizeof(o), NULL, 0);
}

static int r_readlink(struct rf_fq *q, const char *target)
{
	return reply(q, 0, target, strlen(target), NULL, 0);
}

static size_t r_dirent(struct rf_fq *q, char *buf, size_t size, const char *name, uint64_t ino, mode_t mode,
		       off_t next)
{
	size_t namelen = strlen(name), len = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + namelen);
	struct fuse_dirent *d = (struct fuse_dirent *)buf;

	if (len > size)
		return len;
	memset(buf, 0, len);
	d->ino = ino;
	d->off = (uint64_t)next;
	d->namelen = (uint32_t)namelen;
	d->type = (mode & S_IFMT) >> 12;
	memcpy(d->name, name, namelen);
	return len;
}

/* The sender's supplementary groups, from /proc (as libfuse reads them). */
static int r_groups(struct rf_fq *q, gid_t *groups, int max)
{
	char path[64], line[4096];
	FILE *f;
	int n = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)q->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + 7, *end;

		if (strncmp(line, "Groups:", 7))
			continue;
		for (n = 0;; n++) {
			unsigned long g = strtoul(p, &end, 10);

			if (end == p)
				break;
			if (n < max)
				groups[n] = (gid_t)g;
			p = end;
		}
		break;
	}
	fclose(f);
	return n;
}

/* A ring entry's read lands in its payload: no copy at the reply. */
static void *r_read_buf(struct rf_fq *q, size_t len)
{
	struct uh *h = q->h;
	struct ent *e = (struct ent *)h;

	return h->ring && len <= e->t->u->payload_sz ? e->payload : NULL;
}

static const struct rf_fq_ops uring_reply = {
	.err = r_err,
	.entry = r_entry,
	.attr = r_attr,
	.buf = r_buf,
	.write = r_write,
	.open = r_open,
	.statfs = r_statfs,
	.readlink = r_readlink,
	.dirent = r_dirent,
	.groups = r_groups,
	.read_buf = r_read_buf,
};

/* ---------------------------------------------------------------- dispatch */

/* The size of op's fixed argument (what the kernel puts in op_in), or -1
 * for an op that is not served. */
static ssize_t op_in_size(uint32_t op)
{
	switch (op) {
	case FUSE_LOOKUP:
	case FUSE_READLINK:
	case FUSE_STATFS:
	case FUSE_DESTROY:
		return 0;
	case FUSE_GETATTR:
		return sizeof(struct fuse_getattr_in);
	case FUSE_SETATTR:
		return sizeof(struct fuse_setattr_in);
	case FUSE_OPEN:
	case FUSE_OPENDIR:
		return sizeof(struct fuse_open_in);
	case FUSE_READ:
	case FUSE_READDIR:
		return sizeof(struct fuse_read_in);
	case FUSE_WRITE:
		return sizeof(struct fuse_write_in);
	case FUSE_FLUSH:
		return sizeof(struct fuse_flush_in);
	case FUSE_FSYNC:
		return sizeof(struct fuse_fsync_in);
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
		return sizeof(struct fuse_release_in);
	}
	return -1;
}

/* Serve one request: ih its header, in its fixed argument (op_in_size
 * bytes), pl/plen what follows (a name, a write's data).  Exactly one
 * reply goes through q (none for the ops that take none). */
static void dispatch(const struct rf_fops *f, struct rf_fq *q, const struct fuse_in_header *ih, const void *in,
		     const char *pl, size_t plen)
{
	switch (ih->opcode) {
	case FUSE_LOOKUP:
		if (!plen || pl[plen - 1]) {
			r_err(q, EINVAL);
			return;
		}
		f->lookup(q, ih->nodeid, pl);
		return;
	case FUSE_GETATTR:
		f->getattr(q, ih->nodeid);
		return;
	case FUSE_READLINK:
		f->readlink(q, ih->nodeid);
		return;
	case FUSE_SETATTR: {
		const struct fuse_setattr_in *a = in;
		struct stat st;

		memset(&st, 0, sizeof(st));
		st.st_mode = a->mode;
		st.st_uid = a->uid;
		st.st_gid = a->gid;
		st.st_size = (off_t)a->size;
		st.st_atim.tv_sec = (time_t)a->atime;
		st.st_mtim.tv_sec = (time_t)a->mtime;
		f->setattr(q, ih->nodeid, &st, (int)a->valid);
		return;
	}
	case FUSE_OPEN:
		f->open(q, ih->nodeid, (int)((const struct fuse_open_in *)in)->flags);
		return;
	case FUSE_OPENDIR:
		r_open(q, 0, false);
		return;
	case FUSE_READ: {
		const struct fuse_read_in *a = in;

		f->read(q, ih->nodeid, a->size, (off_t)a->offset, a->fh);
		return;
	}
	case FUSE_WRITE: {
		const struct fuse_write_in *a = in;

		if (a->size > plen) {
			r_err(q, EINVAL);
			return;
		}
		f->write(q, ih->nodeid, pl, a->size, (off_t)a->offset, a->fh);
		return;
	}
	case FUSE_FLUSH:
		f->flush(q, ih->nodeid, ((const struct fuse_flush_in *)in)->fh);
		return;
	case FUSE_FSYNC:
		f->fsync(q, ih->nodeid, ((const struct fuse_fsync_in *)in)->fh);
		return;
	case FUSE_RELEASE:
		f->release(q, ih->nodeid, ((const struct fuse_release_in *)in)->fh);
		return;
	case FUSE_RELEASEDIR:
	case FUSE_DESTROY:
		r_err(q, 0);
		return;
	case FUSE_READDIR: {
		const struct fuse_read_in *a = in;

		f->readdir(q, ih->nodeid, a->size, (off_t)a->offset);
		return;
	}
	case FUSE_STATFS:
		f->statfs(q, ih->nodeid);
		return;
	}
	r_err(q, ENOSYS);
}

static struct rf_fq fq_of(struct rf_uring *u, struct uh *h, const struct fuse_in_header *ih)
{
	h->unique = ih->unique;
	return (struct rf_fq){ .ops = &uring_reply, .fs = u->c.fs, .h = h,
			       .uid = ih->uid, .gid = ih->gid, .pid = (pid_t)ih->pid };
}

/* A request read from /dev/fuse (n bytes in buf). */
static void dev_request(struct rf_uring *u, const char *buf, size_t n)
{
	const struct fuse_in_header *ih = (const void *)buf;
	struct devreq *d;
	struct rf_fq q;
	ssize_t in;

	if (n < sizeof(*ih))
		return;
	switch (ih->opcode) {
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT:
	case FUSE_NOTIFY_REPLY:
		return;         /* nothing to answer */
	}
	d = malloc(sizeof(*d));
	if (!d)
		return;
	d->uh.ring = false;
	d->fd = u->c.fd;
	q = fq_of(u, &d->uh, ih);
	in = op_in_size(ih->opcode);
	if (in < 0 || n < sizeof(*ih) + (size_t)in) {
		r_err(&q, in < 0 ? ENOSYS : EINVAL);
		return;
	}
	dispatch(u->c.fops, &q, ih, buf + sizeof(*ih), buf + sizeof(*ih) + in, n - sizeof(*ih) - (size_t)in);
}

/* Serve the request entry e holds (its answer: commit()); more: this
 * thread has other requests to serve right after it (rf_fq.more). */
static void serve_ent(struct ent *e, bool more)
{
	struct rf_uring *u = e->t->u;
	struct fuse_in_header ih;
	struct rf_fq q;
	size_t plen = e->hdr->ent.payload_sz;

	memcpy(&ih, e->hdr->in_out, sizeof(ih));
	q = fq_of(u, &e->uh, &ih);
	q.more = more;
	if (plen > u->payload_sz) {
		r_err(&q, EINVAL);
		return;
	}
	if (op_in_size(ih.opcode) < 0) {
		r_err(&q, ENOSYS);
		return;
	}
	dispatch(u->c.fops, &q, &ih, e->hdr->op_in, e->payload, plen);
}

static void handoff_put(struct handoff *h, struct ent *e)
{
	e->next_done = NULL;
	pthread_mutex_lock(&h->lock);
	*h->tail = e;
	h->tail = &e->next_done;
	pthread_cond_signal(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

/* The bytes a READ or WRITE moves; 0 for other requests. */
static size_t io_size(const struct ent *e, uint32_t opcode)
{
	const struct fuse_read_in *r = (const void *)e->hdr->op_in;
	const struct fuse_write_in *w = (const void *)e->hdr->op_in;

	if (opcode == FUSE_READ)
		return r->size;
	if (opcode == FUSE_WRITE)
		return w->size;
	return 0;
}

/* A ring's thread has e's request: serve it, or hand it to the slow
 * thread when it may wait long, or to the bulk threads when it is large.
 * more: other requests of its batch follow. */
static void ring_request(struct ent *e, bool more)
{
	struct rf_uring *u = e->t->u;
	struct fuse_in_header ih;

	memcpy(&ih, e->hdr->in_out, sizeof(ih));
	if (u->slow.nthreads && (ih.opcode == FUSE_WRITE || ih.opcode == FUSE_SETATTR) &&
	    u->c.slow(u->c.fs, ih.nodeid)) {
		handoff_put(&u->slow, e);
		return;
	}
	if (u->bulk.nthreads && io_size(e, ih.opcode) >= u->bulk_min) {
		atomic_fetch_add_explicit(&u->bulk_served, 1, memory_order_relaxed);
		handoff_put(&u->bulk, e);
		return;
	}
	serve_ent(e, more);
}

struct handoff_arg {
	struct handoff *h;
	int i;
};

static void *handoff_thread(void *arg)
{
	struct handoff_arg a = *(struct handoff_arg *)arg;
	struct handoff *h = a.h;
	sigset_t all;

	free(arg);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	rf_thread_name("%s%d", h->name, a.i);
	pthread_mutex_lock(&h->lock);
	for (;;) {
		struct ent *e = h->head;

		if (!e) {
			if (h->stop)
				break;
			pthread_cond_wait(&h->cond, &h->lock);
			continue;
		}
		h->head = e->next_done;
		if (!h->head)
			h->tail = &h->head;
		pthread_mutex_unlock(&h->lock);
		/* The entry is off every list until commit() puts it on its
		 * ring's done list: next_done is free for that. */
		serve_ent(e, h->head != NULL);
		pthread_mutex_lock(&h->lock);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

static void handoff_init(struct handoff *h, const char *name)
{
	pthread_mutex_init(&h->lock, NULL);
	rf_lock_rank(&h->lock, RF_LOCK_LEAF, "hand-off lock");
	pthread_cond_init(&h->cond, NULL);
	h->tail = &h->head;
	h->name = name;
}

/* Start n threads for h (at most BULK_THREADS_MAX); how many started. */
static int handoff_start(struct handoff *h, int n)
{
	while (h->nthreads < n && h->nthreads < BULK_THREADS_MAX) {
		struct handoff_arg *a = malloc(sizeof(*a));

		if (!a)
			break;
		*a = (struct handoff_arg){ h, h->nthreads };
		if (pthread_create(&h->tid[h->nthreads], NULL, handoff_thread, a)) {
			free(a);
			break;
		}
		h->nthreads++;
	}
	return h->nthreads;
}

/* What h still has is served (its answers go nowhere once the rings
 * stop), then its threads end. */
static void handoff_stop(struct handoff *h)
{
	int i;

	pthread_mutex_lock(&h->lock);
	h->stop = true;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	for (i = 0; i < h->nthreads; i++)
		pthread_join(h->tid[i], NULL);
	h->nthreads = 0;
}

/* ---------------------------------------------------------------- INIT */

static size_t bulk_min_of(const char *env)
{
	char *end;
	unsigned long v;

	if (!env || !*env)
		return BULK_MIN_DEFAULT;
	v = strtoul(env, &end, 0);
	if (*end) {
		rf_warn("RAIDFUSE_URING_BULK=%s: not a byte count; %u", env, BULK_MIN_DEFAULT);
		return BULK_MIN_DEFAULT;
	}
	return v;
}

int rf_uring_mode_parse(const char *s)
{
	if (!strcmp(s, "auto"))
		return RF_URING_AUTO;
	if (!strcmp(s, "on"))
		return RF_URING_ON;
	if (!strcmp(s, "off"))
		return RF_URING_OFF;
	return -EINVAL;
}

ssize_t rf_uring_read_req(int fd, void *buf, size_t size)
{
	ssize_t n;

	do
		n = read(fd, buf, size);
	while (n < 0 && (errno == EINTR || errno == EAGAIN));
	return n < 0 ? -errno : n;
}

static const struct fuse_init_in *init_of(const void *buf, size_t len)
{
	const struct fuse_in_header *ih = buf;

	if (len < sizeof(*ih) + sizeof(struct fuse_init_in) || ih->opcode != FUSE_INIT)
		return NULL;
	return (const void *)(ih + 1);
}

bool rf_uring_offered(const void *buf, size_t len)
{
	const struct fuse_init_in *in = init_of(buf, len);

	return in && in->major == FUSE_KERNEL_VERSION && in->minor >= RF_URING_MINOR && (in->flags & FUSE_INIT_EXT) &&
	       (in->flags2 & (RF_FUSE_OVER_IO_URING >> 32));
}

static int reply_init(struct rf_uring *u, const void *buf, size_t len)
{
	const struct fuse_in_header *ih = buf;
	const struct fuse_init_in *in = init_of(buf, len);
	uint64_t offered = (uint64_t)in->flags | (uint64_t)in->flags2 << 32, want;
	struct fuse_init_out o;
	struct fuse_out_header oh;
	struct iovec iov[2] = { { &oh, sizeof(oh) }, { &o, sizeof(o) } };

	want = FUSE_ASYNC_READ | FUSE_ATOMIC_O_TRUNC | FUSE_BIG_WRITES | FUSE_ASYNC_DIO | FUSE_PARALLEL_DIROPS |
	       FUSE_MAX_PAGES | FUSE_INIT_EXT | RF_FUSE_OVER_IO_URING;
	want &= offered;
	memset(&o, 0, sizeof(o));
	o.major = FUSE_KERNEL_VERSION;
	o.minor = in->minor < RF_URING_MINOR ? in->minor : RF_URING_MINOR;
	o.max_readahead = in->max_readahead < u->c.max_write ? in->max_readahead : u->c.max_write;
	o.flags = (uint32_t)want;
	o.flags2 = (uint32_t)(want >> 32);
	o.max_background = u->c.max_background;
	o.congestion_threshold = u->c.congestion_threshold;
	o.max_write = u->c.max_write;
	o.time_gran = 1;
	o.max_pages = (uint16_t)(u->c.max_write / 4096);
	u->minor = o.minor;
	oh.len = sizeof(oh) + sizeof(o);
	oh.error = 0;
	oh.unique = ih->unique;
	if (writev(u->c.fd, iov, 2) < 0) {
		int ret = -errno;

		rf_err("FUSE over io_uring: cannot answer INIT: %s", strerror(-ret));
		return ret;
	}
	return 0;
}

int rf_uring_notify_inval_inode(struct rf_uring *u, uint64_t ino)
{
	struct fuse_notify_inval_inode_out o = { .ino = ino, .off = -1, .len = 0 };
	struct fuse_out_header oh = { .len = sizeof(oh) + sizeof(o), .error = FUSE_NOTIFY_INVAL_INODE };
	struct iovec iov[2] = { { &oh, sizeof(oh) }, { &o, sizeof(o) } };

	/* Version 7.12 brought it. */
	if (!u || u->minor < 12)
		return -ENOSYS;
	return writev(u->c.fd, iov, 2) < 0 ? -errno : 0;
}

/* ---------------------------------------------------------------- ring threads */

static int nr_cpu_ids(void)
{
	char buf[256];
	int fd = open("/sys/devices/system/cpu/possible", O_RDONLY | O_CLOEXEC), last = -1;
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	char *p;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return (int)sysconf(_SC_NPROCESSORS_CONF);
	buf[n] = 0;
	/* "0-3", "0-3,8-11", "0": the last number ends the range. */
	for (p = buf; *p;) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);

		if (*p < '0' || *p > '9' || end == p) {
			p++;
			continue;
		}
		last = (int)v;
		p = end;
	}
	return last >= 0 ? last + 1 : (int)sysconf(_SC_NPROCESSORS_CONF);
}

static int ring_register(struct uthr *t, struct ent *e)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
	struct rf_uring_cmd *cmd;

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 2 * sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = t->u->c.fd;
	sqe->cmd_op = RF_URING_CMD_REGISTER;
	sqe->addr = (uintptr_t)e->iov;
	sqe->len = 2;
	sqe->user_data = (uintptr_t)e;
	cmd = (struct rf_uring_cmd *)sqe->cmd;
	cmd->qid = (uint16_t)t->qid;
	return 0;
}

/* e's header and payload, for its ring t: 0 or -ENOMEM. */
static int ent_init(struct uthr *t, struct ent *e)
{
	e->uh.ring = true;
	e->t = t;
	if (posix_memalign((void **)&e->hdr, 64, sizeof(*e->hdr)) ||
	    posix_memalign((void **)&e->payload, 4096, t->u->payload_sz))
		return -ENOMEM;
	memset(e->hdr, 0, sizeof(*e->hdr));
	e->iov[0] = (struct iovec){ e->hdr, sizeof(*e->hdr) };
	e->iov[1] = (struct iovec){ e->payload, t->u->payload_sz };
	return 0;
}

/* After a batch of requests: if the kernel holds fewer than a quarter of
 * t's entries (the others wait for answers: writes a suspended array
 * holds back, a drain), register more, up to t->cap.  An entry cannot be
 * given back without answering its request, and a request the kernel
 * queues while none is free waits for the next COMMIT_AND_FETCH of its
 * queue (registering does not fetch it): so entries must not run out,
 * or the store that lets the held writes go would find none. */
static void grow(struct uthr *t)
{
	int first = t->u->c.entries, n = 0;

	if (t->nent - t->out >= (first + 3) / 4)
		return;
	while (n < (first + 1) / 2 && t->nent < t->cap) {
		struct ent *e = &t->ents[t->nent];

		if (!e->hdr && ent_init(t, e))
			break;
		if (ring_register(t, e)) {
			io_uring_submit(&t->ring);
			if (ring_register(t, e))
				break;
		}
		t->nent++;
		t->live++;
		n++;
	}
	if (n)
		rf_info("FUSE over io_uring: queue %d: %d of a ring's %d entries wait for answers: %d more registered",
			t->qid, t->out, t->nent - n, n);
	else if (t->nent >= t->cap && !t->capped && t->nent == t->out) {
		t->capped = true;
		rf_warn("FUSE over io_uring: queue %d: all %d entries of a ring wait for answers, and it has no room "
			"for more: requests from this CPU wait until some are answered", t->qid, t->nent);
	}
}

static void reg_done(struct rf_uring *u, int err)
{
	pthread_mutex_lock(&u->reg_lock);
	u->registered++;
	if (err && !u->reg_err)
		u->reg_err = err;
	pthread_cond_broadcast(&u->reg_cond);
	pthread_mutex_unlock(&u->reg_lock);
}

/* Keep a read of the eventfd in flight. */
static int arm_wake(struct uthr *t)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, t->evfd, &t->evbuf, sizeof(t->evbuf), 0);
	sqe->user_data = WAKE_TAG;
	return 0;
}

/* The eventfd was written: commit what other threads answered, note a
 * stop, read the eventfd again. */
static void take_done(struct uthr *t)
{
	struct ent *e, *next;

	pthread_mutex_lock(&t->lock);
	e = t->done;
	t->done = NULL;
	t->woken = false;
	if (t->stop)
		t->stopped = true;
	pthread_mutex_unlock(&t->lock);
	for (; e; e = next) {
		next = e->next_done;
		prep_commit(e);
	}
	if (arm_wake(t))
		rf_err("FUSE over io_uring: queue %d: no room to wait for answers", t->qid);
}

static void *ring_thread(void *arg)
{
	struct uthr *t = arg;
	struct rf_uring *u = t->u;
	struct io_uring_cqe *cqe;
	sigset_t all;
	cpu_set_t cpus;
	int i, ret;

	/* Signals belong to the /dev/fuse reader (libfuse's handlers). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* Near the requests of its CPU (best effort). */
	CPU_ZERO(&cpus);
	CPU_SET(t->qid, &cpus);
	(void)sched_setaffinity(0, sizeof(cpus), &cpus);

	/* Registration: the kernel answers only when it has a request, so
	 * success is the absence of an error after the submit. */
	self = t;
	for (i = 0, ret = 0; i < t->nent && !ret; i++)
		ret = ring_register(t, &t->ents[i]);
	if (!ret)
		ret = arm_wake(t);
	if (!ret)
		ret = io_uring_submit(&t->ring);
	if (ret < 0) {
		pthread_mutex_lock(&t->lock);
		t->stopped = true;
		pthread_mutex_unlock(&t->lock);
		reg_done(u, ret);
		return NULL;
	}
	{
		unsigned head;

		/* A refused entry completes within the submit; an accepted
		 * one only when a request comes. */
		ret = 0;
		io_uring_for_each_cqe(&t->ring, head, cqe)
			if (cqe->user_data != WAKE_TAG && cqe->res < 0 && !ret)
				ret = cqe->res;
	}
	t->live = t->nent;
	reg_done(u, ret);
	while (t->live > 0) {
		unsigned head, n = 0;

		ret = io_uring_wait_cqe(&t->ring, &cqe);
		if (ret == -EINTR)
			continue;
		if (ret < 0) {
			rf_err("FUSE over io_uring: queue %d: waiting for requests: %s", t->qid, strerror(-ret));
			break;
		}
		io_uring_for_each_cqe(&t->ring, head, cqe) {
			struct ent *e = (struct ent *)(uintptr_t)cqe->user_data;

			n++;
			if (cqe->user_data == WAKE_TAG) {
				take_done(t);
				continue;
			}
			if (cqe->res < 0) {
				/* The connection ends (-ENOTCONN ...): the entry is
				 * done.  Any other refusal (a commit whose request
				 * the kernel no longer knows): register it afresh,
				 * once. */
				if (cqe->res != -ENOTCONN && cqe->res != -ECANCELED && cqe->res != -ECONNABORTED &&
				    !e->fails++) {
					rf_warn("FUSE over io_uring: queue %d: a command failed (%s): registering its "
						"entry again", t->qid, strerror(-cqe->res));
					if (!ring_register(t, e))
						continue;
				}
				t->live--;
				continue;
			}
			e->fails = 0;
			t->out++;
			/* Served one after another, each knowing whether
			 * more wait behind it (the CQ is not advanced yet:
			 * what is ready counts from the batch's start). */
			ring_request(e, io_uring_cq_ready(&t->ring) > n);
		}
		io_uring_cq_advance(&t->ring, n);
		grow(t);
		/* Set by this thread (take_done): read without the lock. */
		if (t->stopped)
			break;
		if (io_uring_sq_ready(&t->ring))
			io_uring_submit(&t->ring);
	}
	pthread_mutex_lock(&t->lock);
	t->stopped = true;
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

static void stop_threads(struct rf_uring *u)
{
	int i;

	handoff_stop(&u->slow);
	if (u->bulk.nthreads)
		rf_info("FUSE over io_uring: %lu reads and writes of %zu bytes or more served by %d bulk threads",
			atomic_load(&u->bulk_served), u->bulk_min, u->bulk.nthreads);
	handoff_stop(&u->bulk);

	for (i = 0; i < u->nq * u->nt; i++) {
		struct uthr *t = &u->thr[i];

		if (!t->started)
			continue;
		pthread_mutex_lock(&t->lock);
		t->stop = true;
		pthread_mutex_unlock(&t->lock);
		wake(t);
	}
	for (i = 0; i < u->nq * u->nt; i++) {
		struct uthr *t = &u->thr[i];

		if (t->started)
			pthread_join(t->tid, NULL);
		t->started = false;
	}
}

static int setup_thread(struct rf_uring *u, struct uthr *t, int qid)
{
	struct io_uring_params p;
	int i, ret;

	t->u = u;
	t->qid = qid;
	pthread_mutex_init(&t->lock, NULL);
	rf_lock_rank(&t->lock, RF_LOCK_LEAF, "ring thread lock");
	t->evfd = eventfd(0, EFD_CLOEXEC);
	if (t->evfd < 0)
		return -errno;
	t->nent = u->c.entries;
	t->cap = u->c.entries * ENT_GROW_MAX;
	t->ents = calloc((size_t)t->cap, sizeof(*t->ents));
	if (!t->ents)
		return -ENOMEM;
	for (i = 0; i < t->nent; i++)
		if (ent_init(t, &t->ents[i]))
			return -ENOMEM;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE;
	/* Each entry has at most one completion pending, and the eventfd
	 * one; entries registered later (grow) need room too. */
	p.cq_entries = (unsigned)t->cap + 2;
	ret = io_uring_queue_init_params((unsigned)t->nent + 2, &t->ring, &p);
	if (ret)
		return ret;
	t->ring_ok = true;
	return 0;
}

int rf_uring_start(struct rf_uring **up, const struct rf_uring_conf *c, const void *init, size_t len)
{
	struct rf_uring *u = calloc(1, sizeof(*u));
	int i, ret, per_queue;

	*up = NULL;
	if (!u)
		return -ENOMEM;
	u->c = *c;
	if (u->c.threads <= 0)
		u->c.threads = DEF_THREADS;
	if (u->c.entries <= 0)
		u->c.entries = DEF_ENTRIES;
	u->nq = nr_cpu_ids();
	u->nt = u->c.threads;
	u->payload_sz = u->c.max_write;
	/* An entry stays taken until its request is answered, and a write
	 * the array holds back (suspended, a drain) is answered late: were
	 * every entry of a queue taken by held writes, the one that lets them
	 * go (echo active > md/array_state) would find none.  The kernel
	 * gives a queue at most max_background background requests (async
	 * direct IO): keep a quarter of the entries for the others. */
	per_queue = u->nt * u->c.entries;
	if (u->c.max_background > per_queue * 3 / 4) {
		u->c.max_background = (uint16_t)(per_queue * 3 / 4);
		u->c.congestion_threshold = (uint16_t)(u->c.max_background * 3 / 4);
	}
	pthread_mutex_init(&u->reg_lock, NULL);
	rf_lock_rank(&u->reg_lock, RF_LOCK_LEAF, "ring registration lock");
	pthread_cond_init(&u->reg_cond, NULL);
	handoff_init(&u->slow, "rf-uring-slow");
	handoff_init(&u->bulk, "rf-uring-bulk");
	*up = u;
	ret = reply_init(u, init, len);
	if (ret)
		return ret;
	u->thr = calloc((size_t)(u->nq * u->nt), sizeof(*u->thr));
	if (!u->thr)
		ret = -ENOMEM;
	for (i = 0; !ret && i < u->nq * u->nt; i++)
		ret = setup_thread(u, &u->thr[i], i / u->nt);
	/* INIT said io_uring: the kernel holds every request back until all
	 * queues have entries, so failing here must end the mount (a
	 * refusal by the kernel, below, lets it fall back by itself). */
	if (ret) {
		rf_err("FUSE over io_uring: cannot set up the rings: %s", strerror(-ret));
		return ret;
	}
	/* Before the rings: their first requests may be slow ones. */
	if (u->c.slow && handoff_start(&u->slow, 1) != 1) {
		rf_err("FUSE over io_uring: cannot start the thread for control file stores");
		return -EAGAIN;
	}
	/* One bulk thread per queue (CPU), created here, off the rings'
	 * threads, so not pinned; none started is no error (the rings serve
	 * everything).  RAIDFUSE_URING_BULK: the size from which a read or
	 * write goes to them, 0 for never (measurements). */
	u->bulk_min = bulk_min_of(getenv("RAIDFUSE_URING_BULK"));
	if (u->bulk_min && !handoff_start(&u->bulk, u->nq))
		u->bulk_min = 0;
	for (i = 0; i < u->nq * u->nt; i++) {
		if (pthread_create(&u->thr[i].tid, NULL, ring_thread, &u->thr[i])) {
			ret = -EAGAIN;
			reg_done(u, 0);
			continue;
		}
		u->thr[i].started = true;
	}
	pthread_mutex_lock(&u->reg_lock);
	while (u->registered < u->nq * u->nt)
		pthread_cond_wait(&u->reg_cond, &u->reg_lock);
	pthread_mutex_unlock(&u->reg_lock);
	if (ret) {
		rf_err("FUSE over io_uring: cannot start the ring threads: %s", strerror(-ret));
		return ret;
	}
	pthread_mutex_lock(&u->reg_lock);
	ret = u->reg_err;
	pthread_mutex_unlock(&u->reg_lock);
	if (ret)
		rf_warn("FUSE over io_uring: the kernel refused the entries: %s; serving through /dev/fuse",
			strerror(-ret));
	else
		rf_info("FUSE over io_uring: %d queues x %d entries (%d threads x %d), max_background %u", u->nq,
			u->nt * u->c.entries, u->nt, u->c.entries, u->c.max_background);
	return 0;
}

int rf_uring_run(struct rf_uring *u)
{
	size_t size = u->payload_sz + 4096;
	char *buf = malloc(size);
	int ret = 0;

	if (!buf) {
		stop_threads(u);
		return -ENOMEM;
	}
	for (;;) {
		struct pollfd pfd = { .fd = u->c.fd, .events = POLLIN };
		ssize_t n;

		if (u->c.stop && u->c.stop(u->c.stop_arg))
			break;
		n = poll(&pfd, 1, 200);
		if (n < 0 && errno != EINTR) {
			ret = -errno;
			break;
		}
		if (n <= 0)
			continue;
		n = read(u->c.fd, buf, size);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == ENOENT)
				continue;
			/* ENODEV: unmounted.  ECONNABORTED: torn down. */
			if (errno != ENODEV && errno != ECONNABORTED)
				ret = -errno;
			break;
		}
		dev_request(u, buf, (size_t)n);
	}
	free(buf);
	stop_threads(u);
	return ret;
}

void rf_uring_free(struct rf_uring *u)
{
	int i, k;

	if (!u)
		return;
	stop_threads(u);
	for (i = 0; u->thr && i < u->nq * u->nt; i++) {
		struct uthr *t = &u->thr[i];

		if (t->ring_ok)
			io_uring_queue_exit(&t->ring);
		for (k = 0; t->ents && k < t->cap; k++) {
			free(t->ents[k].hdr);
			free(t->ents[k].payload);
		}
		free(t->ents);
		if (t->evfd > 0)
			close(t->evfd);
		pthread_mutex_destroy(&t->lock);
	}
	free(u->thr);
	pthread_mutex_destroy(&u->reg_lock);
	pthread_cond_destroy(&u->reg_cond);
	free(u);
}
