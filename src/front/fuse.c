/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuse.c - the FUSE front end: the array image and the control files.
 *
 * The tree is ctl.c's (struct rf_ctl_tree): the root holds the image,
 * mdstat and md/ with one file per md attribute.  Inode numbers are node
 * indexes plus one (the root is FUSE_ROOT_ID).
 *
 * md/ also holds an entry per device, which come and go while mounted:
 * dev-NAME/ (ctl.c's rf_ctl_dev_attrs) and the symbolic links rdN.  Their
 * inode numbers come from the device's name, not its number (numbers
 * move when a spare takes a slot): each name seen gets an id here, kept
 * until unmount, and dev-NAME/ and its files are INO_DEV_BASE + id *
 * DEV_STRIDE (+ 1 + attribute index); rdN is INO_RD_BASE + N.  Every use
 * asks the array again, so a removed device's files answer ENOENT, and
 * the kernel is told to cache none of these entries or attributes
 * (timeouts 0) while the static ones keep an hour.
 *
 * The ops (do_*) answer through fuse_reply.h's struct rf_fq, whichever
 * transport brought the request: libfuse's low-level API here
 * (fuse_session_loop_mt with clone_fd; the op_* callbacks and ll_*
 * replies are its glue).  A read or write of the image takes a request
 * from the pool and submits it; a write's data is lent (rf_req.lent: the
 * transport reuses its buffer once the call returns, and the core copies
 * it into the request's buffer whenever the write may outlive the call).  Whoever ends the request (the
 * FUSE thread itself when it serves the stripe work inline, or a worker)
 * replies and returns it to the pool.
 *
 * A read whose member bytes are all mapped (fdmap.h: members on tmpfs or
 * ramfs) is answered from the mappings: the read map (readmap.h) gives
 * each extent's address.  On libfuse's transport the reply's iovec points
 * there and the kernel copies the member pages straight into the reply;
 * on FUSE over io_uring they are copied into the ring entry's payload
 * (guarded against a member shrunk under its mapping).  No system call
 * on the members either way.  The read is held at the drain barrier
 * until the reply is written, as a spliced one is (below).
 *
 * Large reads on libfuse's transport go by splice when they can
 * (RAIDFUSE_SPLICE, below): a read of at least splice_min bytes that the
 * read map (readmap.h) finds to be a pure data read is spliced from the
 * member files into the thread's pipe (splice.c) and answered with
 * fuse_reply_data() from that pipe, on the FUSE thread, with the read
 * held at the drain barrier until the reply is sent.  The member pages
 * go to the kernel's reply by reference: two copies in all (member page
 * to the reply, reply to the reader) instead of three.  A read the map
 * refuses, or whose splice fails, is submitted the usual way, so a
 * member error is handled there (the member fails, the level serves the
 * bytes from the others).  The io_uring transport keeps its own path.
 *
 * The image behaves like a block device: its size is fixed, a write that
 * starts at or past the end fails with ENOSPC and one that crosses it is
 * cut short, a read past the end is short, O_TRUNC is ignored and any
 * other size change refused.  fsync, and the flush of a close by an
 * opener that could write, reach every member with fsync.
 *
 * A control file reads like a sysfs attribute: every read from its start
 * formats it afresh (direct_io, no page cache), a write is one value for the table's
 * store (a refused one fails with its errno, EINVAL for a bad value), and
 * truncating it to 0 (echo VALUE > file) is accepted.  A read-only one
 * refuses to be opened for writing (EACCES).
 *
 * Who may: every file belongs to the daemon's user; the image is 0600
 * (0400 with --ro), control files 0444, 0644 when they take values, and
 * md/new_dev 0200.  The image's mode, owner and group change like a
 * device node's (chmod by its owner or root, chown by root, chgrp by its
 * owner to one of the owner's groups), for as long as the array is
 * served: `chgrp kvm mnt/array.img; chmod 660 mnt/array.img` lets a qemu
 * of group kvm at it under allow_other.  With --ro no write bit is
 * taken.  With allow_other (or allow_root) the mount also gets
 * default_permissions, so the kernel checks the modes against each
 * caller; the daemon checks them again itself at open and truncation
 * (may_open), and only the owner or root may store into a control file
 * whoever opened it (ctl.c: rf_ctl_store_as, which opens md/new_dev's path
 * with the writer's credentials).
 *
 * The only file that includes fuse_lowlevel.h.
 */
#define FUSE_USE_VERSION 312
#include <errno.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/ctl.h"
#include "raidfuse/devopen.h"
#include "raidfuse/daemon.h"
#include "raidfuse/fuse.h"
#include "raidfuse/holder.h"
#include "raidfuse/lockcheck.h"
#include "raidfuse/log.h"
#include "raidfuse/notify.h"
#include "raidfuse/fdmap.h"
#include "raidfuse/readmap.h"
#include "front/fuse_ops.h"
#include "front/fuse_reply.h"
#include "front/fuse_uring.h"
#include "front/mount_opts.h"
#include "front/splice.h"

#define RF_MAX_IO (1u << 20)
#define RF_POOL_MAX 256
/* Reads spliced from this size on (RAIDFUSE_SPLICE_MIN overrides). */
#define RF_SPLICE_MIN (32u << 10)
/* A thread's splice pipe: a whole read, each extent a page more. */
#define RF_SPLICE_PIPE (2 * RF_MAX_IO)
/* What libfuse's own pipe holds beside a spliced read's data: the reply
 * header, and a page for each buffer and one more (fuse_reply_data()). */
#define RF_SPLICE_HDR (4u * 4096)
/* Supplementary groups taken from a writer of md/new_dev (more: none). */
#define RF_FUSE_GROUPS 1024

enum { INO_ROOT = FUSE_ROOT_ID };
#define INO_RD_BASE ((fuse_ino_t)1 << 32)
#define INO_DEV_BASE ((fuse_ino_t)1 << 33)
#define DEV_STRIDE 32
#define STATIC_TIMEOUT 3600.0
#define DYN_TIMEOUT 0.0

struct fs {
	struct rf_array *a;
	struct fuse_session *se;
	struct rf_ctl_tree tree;        /* immutable while mounted */
	int md;                         /* tree node of md/ */
	/* Device names given an inode id, protected by names_lock; an id
	 * stays until unmount, a name's string never moves. */
	pthread_mutex_t names_lock;
	char **names;
	int nnames, cap_names;
	time_t start;
	bool null;                      /* --null: reads are zeros, writes dropped */
	uid_t uid;
	gid_t gid;
	/* The image's attributes (chmod, chown); img_lock. */
	pthread_mutex_t img_lock;
	mode_t img_mode;
	uid_t img_uid;
	gid_t img_gid;
	/* request pool, protected by lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct rf_req *free;
	int nalloc, nwait;
	struct rf_uring *uring;         /* the transport of our own, if serving by it */
	/* Large reads by splice (libfuse's transport); set before the
	 * session starts (INIT may turn splice off), then read only.  splice_nofallback (tests only):
	 * a failed splice answers its error instead of going the usual way. */
	bool splice, splice_nofallback;
	uint32_t splice_min, splice_max;        /* reads of [min, max] bytes are spliced */
	uint32_t max_read;              /* the kernel's largest read request (mount and INIT) */
	atomic_uint_fast64_t nr_spliced, nr_splice_fallback;    /* relaxed counters */
	atomic_uint_fast64_t nr_mapped;                         /* reads answered from mappings */
};

struct io_ctx {
	struct fs *fs;
	struct rf_fq q;
	char *own_buf;                  /* r->buf while a read fills the transport's */
	struct rf_req *next_free;
};

static struct rf_req *pool_get(struct fs *fs)
{
	struct rf_req *r = NULL;

	pthread_mutex_lock(&fs->lock);
	for (;;) {
		if (fs->free) {
			r = fs->free;
			fs->free = ((struct io_ctx *)r->priv)->next_free;
			break;
		}
		if (fs->nalloc < RF_POOL_MAX) {
			fs->nalloc++;
			pthread_mutex_unlock(&fs->lock);
			r = rf_req_alloc(fs->a, RF_MAX_IO);
			struct io_ctx *c = calloc(1, sizeof(*c));
			if (r && c && !posix_memalign((void **)&r->buf, 4096, RF_MAX_IO)) {
				c->fs = fs;
				r->priv = c;
				return r;
			}
			free(c);
			rf_req_free(r);
			pthread_mutex_lock(&fs->lock);
			fs->nalloc--;
			r = NULL;
			if (!fs->nalloc)
				break;
		}
		/* Back-pressure: every request is in flight; one ends soon. */
		fs->nwait++;
		pthread_cond_wait(&fs->cond, &fs->lock);
		fs->nwait--;
	}
	pthread_mutex_unlock(&fs->lock);
	return r;
}

static void pool_put(struct fs *fs, struct rf_req *r)
{
	struct io_ctx *c = r->priv;

	pthread_mutex_lock(&fs->lock);
	c->next_free = fs->free;
	fs->free = r;
	if (fs->nwait)
		pthread_cond_signal(&fs->cond);
	pthread_mutex_unlock(&fs->lock);
}

/* Wait until every request taken from the pool has come home: each one
 * has been answered, and its end has run. */
static void pool_drain(struct fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	for (;;) {
		int n = 0;
		struct rf_req *r;

		for (r = fs->free; r; r = ((struct io_ctx *)r->priv)->next_free)
			n++;
		if (n == fs->nalloc)
			break;
		fs->nwait++;
		pthread_cond_wait(&fs->cond, &fs->lock);
		fs->nwait--;
	}
	pthread_mutex_unlock(&fs->lock);
}

static void pool_destroy(struct fs *fs)
{
	struct rf_req *r, *next;

	for (r = fs->free; r; r = next) {
		next = ((struct io_ctx *)r->priv)->next_free;
		free(r->buf);
		free(r->priv);
		rf_req_free(r);
	}
}

/* An open control file: the text its last read at offset 0 formatted.
 * Every read from the start formats afresh; a read further on continues
 * the same text (as sysfs does), so a reader taking it in pieces never
 * sees two versions stitched together. */
struct ctl_open {
	pthread_mutex_t lock;
	char *text;             /* lock */
	int len;                /* lock */
};

/* What an inode number stands for.  Only its shape: whether a device
 * named there still exists is checked by ref_live(). */
enum ref_kind { REF_NODE, REF_DEVDIR, REF_DEVFILE, REF_RD };

struct ref {
	enum ref_kind kind;
	const struct rf_ctl_node *n;    /* REF_NODE */
	const char *dev;                /* REF_DEVDIR, REF_DEVFILE: the device's name */
	int id;                         /* its name id */
	const struct rf_ctl_attr *attr; /* REF_DEVFILE; REF_NODE files: n->attr */
	int slot;                       /* REF_RD */
};

/* The name id of dev, given one if it has none.  -ENOMEM. */
static int name_id(struct fs *fs, const char *dev)
{
	int i, ret = -ENOMEM;

	pthread_mutex_lock(&fs->names_lock);
	for (i = 0; i < fs->nnames; i++)
		if (!strcmp(fs->names[i], dev))
			break;
	if (i < fs->nnames) {
		ret = i;
	} else if ((fuse_ino_t)i < (INO_RD_BASE - 1) / DEV_STRIDE) {
		if (fs->nnames == fs->cap_names) {
			int cap = fs->cap_names ? 2 * fs->cap_names : 16;
			char **n = realloc(fs->names, (size_t)cap * sizeof(*n));

			if (n) {
				fs->names = n;
				fs->cap_names = cap;
			}
		}
		if (fs->nnames < fs->cap_names && (fs->names[i] = strdup(dev)))
			ret = fs->nnames++;
	}
	pthread_mutex_unlock(&fs->names_lock);
	return ret;
}

static int ref_of(struct fs *fs, fuse_ino_t ino, struct ref *r)
{
	memset(r, 0, sizeof(*r));
	if (ino >= INO_DEV_BASE) {
		fuse_ino_t id = (ino - INO_DEV_BASE) / DEV_STRIDE, k = (ino - INO_DEV_BASE) % DEV_STRIDE;

		pthread_mutex_lock(&fs->names_lock);
		r->dev = id < (fuse_ino_t)fs->nnames ? fs->names[id] : NULL;
		pthread_mutex_unlock(&fs->names_lock);
		if (!r->dev || k > rf_ctl_dev_nattrs)
			return -ENOENT;
		r->id = (int)id;
		r->kind = k ? REF_DEVFILE : REF_DEVDIR;
		r->attr = k ? &rf_ctl_dev_attrs[k - 1] : NULL;
		return 0;
	}
	if (ino >= INO_RD_BASE) {
		if (ino - INO_RD_BASE >= RF_MAX_DEVS)
			return -ENOENT;
		r->kind = REF_RD;
		r->slot = (int)(ino - INO_RD_BASE);
		return 0;
	}
	if (ino < INO_ROOT || ino - INO_ROOT >= (fuse_ino_t)fs->tree.n)
		return -ENOENT;
	r->kind = REF_NODE;
	r->n = &fs->tree.nodes[ino - INO_ROOT];
	r->attr = r->n->attr;
	return 0;
}

/* ref_of() and the check that what it names exists now. */
static int ref_live(struct fs *fs, fuse_ino_t ino, struct ref *r)
{
	char target[300];
	int ret = ref_of(fs, ino, r);

	if (ret)
		return ret;
	if (r->kind == REF_NODE)
		return rf_ctl_node_present(fs->a, r->n) ? 0 : -ENOENT;
	if (r->kind == REF_RD)
		return rf_ctl_rd_target(fs->a, r->slot, target, sizeof(target)) < 0 ? -ENOENT : 0;
	return rf_array_dev_find(fs->a, r->dev) < 0 ? -ENOENT : 0;
}

static fuse_ino_t ino_of(struct fs *fs, const struct rf_ctl_node *n)
{
	return INO_ROOT + (fuse_ino_t)(n - fs->tree.nodes);
}

static fuse_ino_t ino_dev(int id, int k)
{
	return INO_DEV_BASE + (fuse_ino_t)id * DEV_STRIDE + (fuse_ino_t)k;
}

static bool ref_is_dir(const struct ref *r)
{
	return r->kind == REF_DEVDIR || (r->kind == REF_NODE && r->n->kind == RF_CTL_DIR);
}

/* A control file: md's attributes, mdstat, dev-NAME/'s files. */
static bool ref_is_ctl(const struct ref *r)
{
	return r->kind == REF_DEVFILE || (r->kind == REF_NODE && r->n->kind == RF_CTL_FILE);
}

static bool attr_writable(const struct rf_ctl_attr *at)
{
	return at->set_int || at->store || at->store_dev;
}

static void fill_attr(struct fs *fs, fuse_ino_t ino, const struct ref *r, struct stat *st)
{
	const struct rf_ctl_node *n = r->n;
	int i;

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_atime = st->st_mtime = st->st_ctime = fs->start;
	st->st_blksize = 4096;
	st->st_nlink = 1;
	if (ref_is_dir(r)) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;       /* and one per subdirectory's ".." */
		if (r->kind == REF_DEVDIR)
			return;
		for (i = 1; i < fs->tree.n; i++)
			if (fs->tree.nodes[i].parent == n - fs->tree.nodes && fs->tree.nodes[i].kind == RF_CTL_DIR)
				st->st_nlink++;
		if (n - fs->tree.nodes == fs->md)
			st->st_nlink += rf_array_ndevs(fs->a);
		return;
	}
	if (r->kind == REF_RD) {
		st->st_mode = S_IFLNK | 0777;
		st->st_size = rf_ctl_rd_target(fs->a, r->slot, (char[300]){ 0 }, 300);
		if (st->st_size < 0)
			st->st_size = 0;
		return;
	}
	if (r->kind == REF_NODE && n->kind == RF_CTL_IMAGE) {
		/* The array's data is its owner's alone unless chmod says
		 * otherwise (root may, as ever). */
		pthread_mutex_lock(&fs->img_lock);
		st->st_mode = S_IFREG | fs->img_mode;
		st->st_uid = fs->img_uid;
		st->st_gid = fs->img_gid;
		pthread_mutex_unlock(&fs->img_lock);
		st->st_size = (off_t)rf_array_size(fs->a);
		st->st_blocks = st->st_size / 512;
		return;
	}
	/* As sysfs: a page, whatever the content (reads end at EOF). */
	st->st_mode = S_IFREG | r->attr->mode;
	st->st_size = 4096;
}

/* Who sent q.  The supplementary groups are read only when asked for
 * (the transport reads them from /proc): into groups (max entries); none
 * are known when that fails, which only takes rights away. */
static void cred_of(struct rf_fq *q, struct rf_ctl_cred *who, gid_t *groups, int max)
{
	int n = groups ? q->ops->groups(q, groups, max) : -1;

	who->uid = q->uid;
	who->gid = q->gid;
	who->groups = n >= 0 && n <= max ? groups : NULL;
	who->ngroups = who->groups ? n : 0;
}

/* The daemon's own check of what the kernel checks with
 * default_permissions: may q's sender open a file of these attributes
 * for reading and/or writing?  0 or -EACCES. */
static int may_open(struct rf_fq *q, const struct stat *st, bool rd, bool wr)
{
	gid_t groups[RF_FUSE_GROUPS];
	struct rf_ctl_cred who;
	unsigned mode = st->st_mode & 0777;

	/* The groups matter only where the group bits differ from the others'. */
	cred_of(q, &who, ((mode >> 3) ^ mode) & 7 ? groups : NULL, RF_FUSE_GROUPS);
	return rf_ctl_may_open(&who, st->st_uid, st->st_gid, mode, rd, wr);
}

/* ---- large reads by splice (libfuse's transport) ---- */

static const struct rf_fq_ops ll_reply;

/* Whether the kernel may offer FUSE over io_uring (which serves then,
 * with no use for splice), as far as can be told before mounting. */
static bool uring_may_serve(int mode)
{
	char c = 'N';
	FILE *f;

	if (mode == RF_URING_OFF)
		return false;
	f = fopen("/sys/module/fuse/parameters/enable_uring", "re");
	if (f) {
		if (fread(&c, 1, 1, f) != 1)
			c = 'N';
		fclose(f);
	}
	return c == 'Y' || c == '1';
}

/* RAIDFUSE_SPLICE: unset or 1, on; 0, off (A/B runs); nofallback (tests
 * only), on, and a failed splice answers its error to the reader.
 * RAIDFUSE_SPLICE_MIN: the smallest read spliced, bytes (from 32 KiB on,
 * a splice measured faster than a copy here; SPLICE_F_MOVE measured no
 * faster, so the kernel is not asked to move pages).
 *
 * A spliced reply goes through libfuse's pipe whole, its header beside
 * it, and a pipe may not grow past /proc/sys/fs/pipe-max-size (1 MiB by
 * default) without CAP_SYS_RESOURCE: then a 1 MiB read cannot be spliced,
 * and libfuse would copy it twice over.  So the reads spliced stop at
 * what the largest pipe holds, and the kernel is asked for reads no
 * larger (max_read: the largest power of two that fits), so that a 1 MiB
 * read comes as two that are spliced.  Not when FUSE over io_uring may
 * serve (it keeps 1 MiB reads), nor when every member is mapped (its
 * reads are answered from the mappings, whatever their size). */
static void splice_config(struct fs *fs, int mode)
{
	const char *e = getenv("RAIDFUSE_SPLICE"), *min = getenv("RAIDFUSE_SPLICE_MIN");
	long pmax;

	fs->max_read = RF_MAX_IO;
	fs->splice = !e || strcmp(e, "0");
	fs->splice_nofallback = e && !strcmp(e, "nofallback");
	fs->splice_min = RF_SPLICE_MIN;
	if (fs->splice && e && strcmp(e, "1") && !fs->splice_nofallback)
		rf_warn("RAIDFUSE_SPLICE=%s: not 0, 1 or nofallback; splice stays on", e);
	if (min) {
		char *end;
		unsigned long v = strtoul(min, &end, 0);

		if (*min && !*end && v <= RF_MAX_IO)
			fs->splice_min = v < 8192 ? 8192 : (uint32_t)v;
		else
			rf_warn("RAIDFUSE_SPLICE_MIN=%s: not a byte count up to %u; %u kept", min, RF_MAX_IO,
				fs->splice_min);
	}
	if (!fs->splice || fs->null)
		return;
	pmax = rf_splice_pipe_max(RF_SPLICE_PIPE);
	if (pmax <= (long)RF_SPLICE_HDR + (long)fs->splice_min) {
		rf_info("pipes of %ld bytes hold no read of %u: reads are copied", pmax, fs->splice_min);
		fs->splice = false;
		return;
	}
	fs->splice_max = pmax - RF_SPLICE_HDR < (long)RF_MAX_IO ? (uint32_t)(pmax - RF_SPLICE_HDR) : RF_MAX_IO;
	/* Not below a quarter: more, smaller requests would cost more than
	 * the copies saved. */
	if (fs->splice_max < RF_MAX_IO && fs->splice_max >= RF_MAX_IO / 4 && !uring_may_serve(mode) &&
	    !rf_read_map_all_mapped(fs->a)) {
		while (fs->max_read > fs->splice_max)
			fs->max_read /= 2;
		rf_dbg("splice: pipes hold %ld bytes: reads up to %u bytes", pmax, fs->max_read);
	}
}

/* INIT: splice replies when the kernel takes them. */
static void splice_init(struct fs *fs, struct fuse_conn_info *conn)
{
	if (fs->splice && !(conn->capable & FUSE_CAP_SPLICE_WRITE)) {
		rf_info("the kernel takes no spliced replies: reads are copied");
		fs->splice = false;
	}
	if (!fs->splice)
		return;
	conn->want |= FUSE_CAP_SPLICE_WRITE;
}

/* Answer a read that m maps (held) from the members' mappings; false:
 * not answered (a member not mapped, a fault injected, a member shrunk
 * under its mapping), the caller goes on.  libfuse's transport replies
 * with an iovec into the mappings (the kernel copies); a transport that
 * gives the read a buffer, dst (FUSE over io_uring: the ring entry's
 * payload), gets the bytes copied there, guarded (fdmap.h). */
static bool mapped_reply(struct fs *fs, struct rf_fq *q, const struct rf_read_map *m, void *dst)
{
	struct iovec iov[RF_READ_MAP_MAX];
	int i;

	for (i = 0; i < m->n; i++) {
		if (!m->ext[i].addr || rf_read_map_fault(m, i))
			return false;
		iov[i].iov_base = (void *)m->ext[i].addr;
		iov[i].iov_len = m->ext[i].len;
	}
	/* A page that faults (a member shrunk under its mapping, a hole of a
	 * full tmpfs): the IO path reads it with pread, which fails a short
	 * member and reads a hole as zeros.  The kernel's copy from the iovec
	 * cannot fall back (its fault ends the request with EIO): its pages
	 * are touched first. */
	if (dst ? rf_fdmap_copy(dst, iov, m->n) : rf_fdmap_probe(iov, m->n))
		return false;
	/* One reply whatever happens: on libfuse's transport a member shrunk
	 * between the touch and the kernel's copy fails that copy, and the
	 * reader gets EIO. */
	if (dst)
		q->ops->buf(q, dst, m->len);
	else
		fuse_reply_iov(q->h, iov, m->n);
	atomic_fetch_add_explicit(&fs->nr_mapped, 1, memory_order_relaxed);
	return true;
}

/* Answer a read that m maps (held) by splice; false: not answered, the
 * caller goes on. */
static bool splice_reply(struct fs *fs, struct rf_fq *q, const struct rf_read_map *m)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(m->len);
	int fd;

	if (!fs->splice || m->len < fs->splice_min || m->len > fs->splice_max || q->ops != &ll_reply)
		return false;
	fd = rf_splice_fill(m, RF_SPLICE_PIPE);
	if (fd < 0) {
		if (fd == -ENOSPC)
			return false;   /* this thread's pipe is too small for it */
		atomic_fetch_add_explicit(&fs->nr_splice_fallback, 1, memory_order_relaxed);
		if (!fs->splice_nofallback)
			return false;
		q->ops->err(q, -fd);
		return true;
	}
	bv.buf[0].flags = FUSE_BUF_IS_FD;
	bv.buf[0].fd = fd;
	/* One reply whatever happens: libfuse answers its own errors. */
	fuse_reply_data(q->h, &bv, 0);
	/* The pipe's pages left before the barrier lets the members go
	 * (the caller's unmap). */
	rf_splice_after_reply();
	atomic_fetch_add_explicit(&fs->nr_spliced, 1, memory_order_relaxed);
	return true;
}

/* Answer the read [off, off + size) of the image straight from the
 * members, from their mappings or else by splice, under one read map;
 * false: not answered (not a pure data read now, or neither way took it),
 * the caller submits it. */
static bool direct_read(struct fs *fs, struct rf_fq *q, uint64_t off, size_t size)
{
	struct rf_read_map m;
	void *dst = NULL;
	bool done;

	/* Both ways reply on libfuse's transport; another one only takes
	 * the mappings' bytes, into the buffer it gives. */
	if (q->ops != &ll_reply && !(q->ops->read_buf && (dst = q->ops->read_buf(q, size))))
		return false;
	if (rf_read_map(fs->a, off, (uint32_t)size, &m))
		return false;
	done = mapped_reply(fs, q, &m, dst) || splice_reply(fs, q, &m);
	rf_read_unmap(&m);
	return done;
}

static void op_init(void *ud, struct fuse_conn_info *conn)
{
	conn->max_write = RF_MAX_IO;
	conn->max_read = ((struct fs *)ud)->max_read;
	conn->max_readahead = RF_MAX_IO;
	/* Async direct IO: let many requests be in flight at once. */
	conn->max_background = 128;
	conn->congestion_threshold = 96;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	splice_init(ud, conn);
}

/* md/'s per-device entries: dev-NAME and rdN.  The entry's inode or 0. */
static fuse_ino_t lookup_dev_entry(struct fs *fs, const char *name)
{
	int id, slot;

	if (!rf_ctl_dev_entry(fs->a, name)) {
		id = name_id(fs, name + 4);
		return id < 0 ? 0 : ino_dev(id, 0);
	}
	slot = rf_ctl_rd_entry(fs->a, name);
	return slot < 0 ? 0 : INO_RD_BASE + (fuse_ino_t)slot;
}

static void do_lookup(struct rf_fq *q, uint64_t parent, const char *name)
{
	struct fs *fs = q->fs;
	struct stat st;
	struct ref dir, r;
	double timeout = DYN_TIMEOUT;
	fuse_ino_t ino = 0;
	int i, ret;

	ret = ref_live(fs, parent, &dir);
	if (!ret && !ref_is_dir(&dir))
		ret = -ENOTDIR;
	if (!ret && dir.kind == REF_DEVDIR) {
		const struct rf_ctl_attr *at = rf_ctl_dev_find(name);

		ret = at ? 0 : -ENOENT;
		if (at)
			ino = ino_dev(dir.id, 1 + (int)(at - rf_ctl_dev_attrs));
	} else if (!ret) {
		i = rf_ctl_lookup(&fs->tree, fs->a, (int)(parent - INO_ROOT), name);
		if (i >= 0) {
			ino = INO_ROOT + (fuse_ino_t)i;
			timeout = STATIC_TIMEOUT;
		} else if (i == -ENOENT && (int)(parent - INO_ROOT) == fs->md) {
			ino = lookup_dev_entry(fs, name);
		}
		ret = ino ? 0 : i;
	}
	if (ret || (ret = ref_of(fs, ino, &r))) {
		q->ops->err(q, -ret);
		return;
	}
	fill_attr(fs, ino, &r, &st);
	q->ops->entry(q, ino, &st, timeout);
}

/* The array's size changed (a reshape ended): the kernel forgets the
 * image's cached attributes and pages, so the next stat sees the new
 * size.  On the reshape walk's thread. */
static void image_resized(void *priv)
{
	struct fs *fs = priv;
	int i, ret;

	for (i = 0; i < fs->tree.n; i++) {
		if (fs->tree.nodes[i].kind != RF_CTL_IMAGE)
			continue;
		ret = fuse_lowlevel_notify_inval_inode(fs->se, INO_ROOT + (fuse_ino_t)i, 0, 0);
		if (ret && ret != -ENOENT)
			rf_warn("the image's new size (%llu bytes) may show late: %s",
				(unsigned long long)rf_array_size(fs->a), strerror(-ret));
	}
}

static double attr_timeout(const struct ref *r)
{
	return r->kind == REF_NODE ? STATIC_TIMEOUT : DYN_TIMEOUT;
}

static void do_getattr(struct rf_fq *q, uint64_t ino)
{
	struct fs *fs = q->fs;
	struct ref r;
	struct stat st;
	int ret = ref_live(fs, ino, &r);

	if (ret) {
		q->ops->err(q, -ret);
		return;
	}
	fill_attr(fs, ino, &r, &st);
	q->ops->attr(q, &st, attr_timeout(&r));
}

static void do_readlink(struct rf_fq *q, uint64_t ino)
{
	struct fs *fs = q->fs;
	char target[300];
	struct ref r;
	int ret = ref_of(fs, ino, &r);

	if (!ret && r.kind != REF_RD)
		ret = -EINVAL;
	if (!ret)
		ret = rf_ctl_rd_target(fs->a, r.slot, target, sizeof(target));
	if (ret < 0)
		q->ops->err(q, -ret);
	else
		q->ops->readlink(q, target);
}

/* chmod, chown and chgrp of the image, with the rules of a device node:
 * the mode by its owner or root, the owner by root, the group by root or
 * by its owner to a group of the owner's.  Other files keep theirs
 * (EPERM).  0 or -errno. */
static int image_chown(struct rf_fq *q, struct fs *fs, const struct ref *r, const struct stat *attr, int to_set)
{
	gid_t groups[RF_FUSE_GROUPS];
	struct rf_ctl_cred who;
	int ret = 0, i;
	bool in_group;

	if (r->kind != REF_NODE || r->n->kind != RF_CTL_IMAGE)
		return -EPERM;
	cred_of(q, &who, groups, RF_FUSE_GROUPS);
	pthread_mutex_lock(&fs->img_lock);
	in_group = who.gid == attr->st_gid;
	for (i = 0; i < who.ngroups && !in_group; i++)
		in_group = who.groups[i] == attr->st_gid;
	if ((to_set & FUSE_SET_ATTR_UID) && attr->st_uid != fs->img_uid && who.uid != 0)
		ret = -EPERM;
	else if ((to_set & FUSE_SET_ATTR_GID) && attr->st_gid != fs->img_gid && who.uid != 0 &&
		 (who.uid != fs->img_uid || !in_group))
		ret = -EPERM;
	else if ((to_set & FUSE_SET_ATTR_MODE) && who.uid != 0 && who.uid != fs->img_uid)
		ret = -EPERM;
	if (!ret) {
		if (to_set & FUSE_SET_ATTR_UID)
			fs->img_uid = attr->st_uid;
		if (to_set & FUSE_SET_ATTR_GID)
			fs->img_gid = attr->st_gid;
		if (to_set & FUSE_SET_ATTR_MODE)
			fs->img_mode = attr->st_mode & (rf_array_readonly(fs->a) ? 0555 : 0777);
	}
	pthread_mutex_unlock(&fs->img_lock);
	return ret;
}

static void do_setattr(struct rf_fq *q, uint64_t ino, const struct stat *attr, int to_set)
{
	struct fs *fs = q->fs;
	struct ref r;
	struct stat st;
	int ret = ref_live(fs, ino, &r);

	if (ret) {
		q->ops->err(q, -ret);
		return;
	}
	fill_attr(fs, ino, &r, &st);
	if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		ret = image_chown(q, fs, &r, attr, to_set);
		if (ret) {
			q->ops->err(q, -ret);
			return;
		}
		fill_attr(fs, ino, &r, &st);
	}
	if ((to_set & FUSE_SET_ATTR_SIZE) && !ref_is_dir(&r) && may_open(q, &st, false, true)) {
		q->ops->err(q, EACCES);
		return;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		/* The image's size is the array's: truncating to it is a
		 * no-op, anything else is refused like on a block device.  A
		 * control file takes "truncate to 0" (echo VALUE > file) as
		 * sysfs does: the write that follows is the value. */
		if (ref_is_ctl(&r) && !attr_writable(r.attr)) {
			q->ops->err(q, EACCES);
			return;
		}
		if (ref_is_dir(&r) || r.kind == REF_RD ||
		    attr->st_size != (ref_is_ctl(&r) ? 0 : st.st_size)) {
			q->ops->err(q, ref_is_dir(&r) ? EISDIR : EPERM);
			return;
		}
	}
	q->ops->attr(q, &st, attr_timeout(&r));
}

static void do_open(struct rf_fq *q, uint64_t ino, int flags)
{
	struct fs *fs = q->fs;
	const struct rf_ctl_node *n;
	struct stat st;
	struct ref r;
	int ret = ref_live(fs, ino, &r);
	uint64_t fh;
	bool ctl;

	if (ret) {
		q->ops->err(q, -ret);
		return;
	}
	ctl = ref_is_ctl(&r);
	n = r.n;
	if (ref_is_dir(&r) || r.kind == REF_RD) {
		q->ops->err(q, ref_is_dir(&r) ? EISDIR : ELOOP);
		return;
	}
	/* The modes hold even where the kernel does not check them. */
	fill_attr(fs, ino, &r, &st);
	if (may_open(q, &st, (flags & O_ACCMODE) != O_WRONLY, (flags & O_ACCMODE) != O_RDONLY)) {
		q->ops->err(q, EACCES);
		return;
	}
	/* A read-only attribute cannot be opened for writing, a write-only
	 * one (md/new_dev) for reading (sysfs: EACCES). */
	if (ctl && (((flags & O_ACCMODE) != O_RDONLY && !attr_writable(r.attr)) ||
		    ((flags & O_ACCMODE) != O_WRONLY && !(r.attr->mode & 0444)))) {
		q->ops->err(q, EACCES);
		return;
	}
	/* A read-only array (--ro) refuses to be opened for writing, as a
	 * read-only block device does; its control files still take values. */
	if (!ctl && n->kind == RF_CTL_IMAGE && (flags & O_ACCMODE) != O_RDONLY && rf_array_readonly(fs->a)) {
		q->ops->err(q, EROFS);
		return;
	}
	/* O_TRUNC is ignored, as a block device ignores it (the kernel passes
	 * it here instead of a size change: FUSE_CAP_ATOMIC_O_TRUNC); a
	 * control file is rewritten by the value that follows. */
	/* The image: fh says whether this opener may write (its close then
	 * flushes).  A control file: its struct ctl_open. */
	fh = (flags & O_ACCMODE) != O_RDONLY;
	if (ctl) {
		struct ctl_open *c = calloc(1, sizeof(*c));

		if (!c) {
			q->ops->err(q, ENOMEM);
			return;
		}
		pthread_mutex_init(&c->lock, NULL);
		rf_lock_rank(&c->lock, RF_LOCK_CTL_OPEN, "control file lock");
		fh = (uintptr_t)c;
	}
	if (q->ops->open(q, fh, true) && ctl) {
		/* the opener is gone: no release will come */
		free((void *)(uintptr_t)fh);
	}
}

static void io_done(struct rf_req *r, int err)
{
	struct io_ctx *c = r->priv;
	struct rf_fq *q = &c->q;

	if (err)
		q->ops->err(q, -err);
	else if (r->op == RF_REQ_READ)
		q->ops->buf(q, r->buf, r->len);
	else if (r->op == RF_REQ_WRITE)
		q->ops->write(q, r->len);
	else
		q->ops->err(q, 0);
	if (c->own_buf) {
		r->buf = c->own_buf;
		c->own_buf = NULL;
	}
	pool_put(c->fs, r);
}

static void submit(struct fs *fs, struct rf_fq *q, int op, uint64_t off, size_t len, const char *data)
{
	struct rf_req *r = pool_get(fs);
	struct io_ctx *c;

	if (!r) {
		q->ops->err(q, ENOMEM);
		return;
	}
	c = r->priv;
	c->q = *q;
	if (op == RF_REQ_READ && q->ops->read_buf) {
		char *in_place = q->ops->read_buf(q, len);

		if (in_place) {
			c->own_buf = r->buf;
			r->buf = in_place;
		}
	}
	r->op = (uint8_t)op;
	r->off = off;
	r->len = (uint32_t)len;
	r->done = io_done;
	r->more_behind = q->more;
	/* The transport keeps data until this call returns: lend it (the core
	 * copies it when the write may outlive the call). */
	r->lent = data;
	rf_array_submit(fs->a, r);
}

static void ctl_read(struct fs *fs, struct rf_fq *q, const struct ref *r, struct ctl_open *c,
		     size_t size, off_t off)
{
	char *out = NULL;
	size_t len = 0;
	int ret = 0;

	pthread_mutex_lock(&c->lock);
	if (off == 0 || !c->text) {
		char *buf = malloc(RF_CTL_SHOW_MAX);

		if (!buf)
			ret = -ENOMEM;
		else if (r->kind == REF_DEVFILE)
			ret = rf_ctl_dev_show(r->attr, fs->a, r->dev, buf, RF_CTL_SHOW_MAX);
		else
			ret = rf_ctl_show(r->attr, fs->a, r->n->member, buf, RF_CTL_SHOW_MAX);
		if (ret >= 0) {
			char *fit = realloc(buf, (size_t)ret + 1);

			free(c->text);
			c->text = fit ? fit : buf;
			c->len = ret;
		} else {
			free(buf);
		}
	}
	/* Copy the piece out: once the reply is sent, the opener may close and
	 * the release (another thread) frees c. */
	if (ret >= 0 && off >= 0 && off < c->len) {
		len = (size_t)(c->len - off) < size ? (size_t)(c->len - off) : size;
		out = malloc(len);
		if (out)
			memcpy(out, c->text + off, len);
		else
			ret = -ENOMEM;
	}
	pthread_mutex_unlock(&c->lock);
	if (ret < 0)
		q->ops->err(q, -ret);
	else
		q->ops->buf(q, out, len);
	free(out);
}

static void do_read(struct rf_fq *q, uint64_t ino, size_t size, off_t off, uint64_t fh)
{
	struct fs *fs = q->fs;
	uint64_t end = rf_array_size(fs->a);
	struct ref r;
	int ret = ref_of(fs, ino, &r);

	if (ret || ref_is_dir(&r) || r.kind == REF_RD) {
		q->ops->err(q, ret ? -ret : ref_is_dir(&r) ? EISDIR : EINVAL);
		return;
	}
	if (ref_is_ctl(&r)) {
		ctl_read(fs, q, &r, (struct ctl_open *)(uintptr_t)fh, size, off);
		return;
	}
	if (off < 0 || (uint64_t)off >= end || !size) {
		q->ops->buf(q, NULL, 0);
		return;
	}
	if (size > RF_MAX_IO)
		size = RF_MAX_IO;
	if (size > end - (uint64_t)off)
		size = end - (uint64_t)off;
	if (fs->null) {
		static const char zeros[RF_MAX_IO];

		q->ops->buf(q, zeros, size);
		return;
	}
	if (direct_read(fs, q, (uint64_t)off, size))
		return;
	submit(fs, q, RF_REQ_READ, (uint64_t)off, size, NULL);
}

static void do_write(struct rf_fq *q, uint64_t ino, const char *buf, size_t size, off_t off, uint64_t fh)
{
	struct fs *fs = q->fs;
	uint64_t end = rf_array_size(fs->a);
	struct ref r;
	int ret = ref_of(fs, ino, &r);

	if (ret || ref_is_dir(&r) || r.kind == REF_RD) {
		q->ops->err(q, ret ? -ret : ref_is_dir(&r) ? EISDIR : EINVAL);
		return;
	}
	if (ref_is_ctl(&r)) {
		gid_t groups[RF_FUSE_GROUPS];
		struct rf_ctl_cred who;

		/* One write, one value, wherever it lands (sysfs ignores the
		 * offset too).  A setter that drains blocks this thread only.
		 * Only the owner and root store, whoever opened the file; a
		 * path is opened as the writer (md/new_dev). */
		cred_of(q, &who, r.attr->as_writer ? groups : NULL, RF_FUSE_GROUPS);
		ret = rf_ctl_store_as(&who, fs->uid, r.attr, fs->a, r.kind == REF_DEVFILE ? -1 : r.n->member,
				      r.kind == REF_DEVFILE ? r.dev : NULL, buf, size);
		if (ret)
			q->ops->err(q, -ret);
		else
			q->ops->write(q, size);
		return;
	}
	if (rf_array_readonly(fs->a)) {
		q->ops->err(q, EROFS);
		return;
	}
	if (off < 0) {
		q->ops->err(q, EINVAL);
		return;
	}
	if ((uint64_t)off >= end) {
		q->ops->err(q, ENOSPC);
		return;
	}
	if (!size) {
		q->ops->write(q, 0);
		return;
	}
	if (size > RF_MAX_IO)
		size = RF_MAX_IO;
	if (size > end - (uint64_t)off)
		size = end - (uint64_t)off;
	if (fs->null) {
		q->ops->write(q, size);
		return;
	}
	submit(fs, q, RF_REQ_WRITE, (uint64_t)off, size, buf);
}

/* Only the image has data to flush.  A control file's close must not wait
 * for the members (nor behind writes a suspended array holds back). */
static bool is_image(struct fs *fs, fuse_ino_t ino)
{
	struct ref r;

	return !ref_of(fs, ino, &r) && r.kind == REF_NODE && r.n->kind == RF_CTL_IMAGE;
}

/* close(): the members are flushed for an opener that could write.  One
 * that only read has nothing to flush, and its close must not wait while
 * a suspended array holds writes (and flushes) back: reads go on. */
static void do_flush(struct rf_fq *q, uint64_t ino, uint64_t fh)
{
	if (!is_image(q->fs, ino) || !fh) {
		q->ops->err(q, 0);
		return;
	}
	submit(q->fs, q, RF_REQ_FLUSH, 0, 0, NULL);
}

static void do_fsync(struct rf_fq *q, uint64_t ino, uint64_t fh)
{
	if (!is_image(q->fs, ino)) {
		q->ops->err(q, 0);
		return;
	}
	submit(q->fs, q, RF_REQ_FLUSH, 0, 0, NULL);
}

static void do_release(struct rf_fq *q, uint64_t ino, uint64_t fh)
{
	struct ctl_open *c = (struct ctl_open *)(uintptr_t)fh;
	struct ref r;

	/* By the inode's shape alone: the device may be gone by now. */
	if (!ref_of(q->fs, ino, &r) && ref_is_ctl(&r) && c) {
		pthread_mutex_destroy(&c->lock);
		free(c->text);
		free(c);
	}
	q->ops->err(q, 0);
}

/* A directory listing being built: entry k (".", "..", then the
 * children) has offset k + 1, the offset of the entry after it. */
struct listing {
	struct rf_fq *q;
	char *buf;
	size_t size, n;
	off_t pos, off;
	bool full;
};

static void list_add(struct listing *l, const char *name, fuse_ino_t ino, mode_t mode)
{
	size_t len;

	if (l->full || l->pos++ < l->off)
		return;
	len = l->q->ops->dirent(l->q, l->buf + l->n, l->size - l->n, name, ino, mode, l->pos);
	if (len > l->size - l->n)
		l->full = true;
	else
		l->n += len;
}

/* md/'s per-device entries, as they are now. */
static void list_devs(struct fs *fs, struct listing *l)
{
	struct rf_ctl_dev_ent *ents = malloc(2 * RF_MAX_DEVS * sizeof(*ents));
	int i, n, id;

	n = ents ? rf_ctl_dev_list(fs->a, ents, 2 * RF_MAX_DEVS) : 0;
	for (i = 0; i < n; i++) {
		if (ents[i].link) {
			list_add(l, ents[i].name, INO_RD_BASE + (fuse_ino_t)ents[i].slot, S_IFLNK);
			continue;
		}
		id = name_id(fs, ents[i].name + 4);
		if (id >= 0)
			list_add(l, ents[i].name, ino_dev(id, 0), S_IFDIR);
	}
	free(ents);
}

static void do_readdir(struct rf_fq *q, uint64_t ino, size_t size, off_t off)
{
	struct fs *fs = q->fs;
	char buf[4096];
	struct listing l = { .q = q, .buf = buf, .off = off };
	struct ref dir;
	size_t k;
	int i, ret = ref_live(fs, ino, &dir);

	if (!ret && !ref_is_dir(&dir))
		ret = -ENOTDIR;
	if (ret) {
		q->ops->err(q, -ret);
		return;
	}
	l.size = size < sizeof(buf) ? size : sizeof(buf);
	list_add(&l, ".", ino, S_IFDIR);
	if (dir.kind == REF_DEVDIR) {
		list_add(&l, "..", INO_ROOT + (fuse_ino_t)fs->md, S_IFDIR);
		for (k = 0; k < rf_ctl_dev_nattrs; k++)
			list_add(&l, rf_ctl_dev_attrs[k].name, ino_dev(dir.id, 1 + (int)k), S_IFREG);
	} else {
		list_add(&l, "..", ino_of(fs, &fs->tree.nodes[dir.n->parent]), S_IFDIR);
		for (i = 1; i < fs->tree.n; i++) {
			const struct rf_ctl_node *c = &fs->tree.nodes[i];

			if (c->parent == dir.n - fs->tree.nodes && rf_ctl_node_present(fs->a, c))
				list_add(&l, c->name, ino_of(fs, c), c->kind == RF_CTL_DIR ? S_IFDIR : S_IFREG);
		}
		if (dir.n - fs->tree.nodes == fs->md)
			list_devs(fs, &l);
	}
	q->ops->buf(q, buf, l.n);
}

static void do_statfs(struct rf_fq *q, uint64_t ino)
{
	struct fs *fs = q->fs;
	struct statvfs sv;

	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_blocks = rf_array_size(fs->a) / 4096;
	sv.f_files = (fsfilcnt_t)fs->tree.n + (fsfilcnt_t)rf_array_ndevs(fs->a) * (2 + rf_ctl_dev_nattrs);
	sv.f_namemax = 255;
	q->ops->statfs(q, &sv);
}

/* The libfuse transport: each request is a fuse_req_t, answered with
 * fuse_reply_*(). */
static int ll_err(struct rf_fq *q, int err)
{
	return fuse_reply_err(q->h, err);
}

static int ll_entry(struct rf_fq *q, uint64_t ino, const struct stat *st, double timeout)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = ino;
	e.attr = *st;
	e.attr_timeout = e.entry_timeout = timeout;
	return fuse_reply_entry(q->h, &e);
}

static int ll_attr(struct rf_fq *q, const struct stat *st, double timeout)
{
	return fuse_reply_attr(q->h, st, timeout);
}

static int ll_buf(struct rf_fq *q, const void *buf, size_t len)
{
	return fuse_reply_buf(q->h, buf, len);
}

static int ll_write(struct rf_fq *q, size_t count)
{
	return fuse_reply_write(q->h, count);
}

static int ll_open(struct rf_fq *q, uint64_t fh, bool direct_io)
{
	struct fuse_file_info fi;

	memset(&fi, 0, sizeof(fi));
	fi.fh = fh;
	fi.direct_io = direct_io;
	return fuse_reply_open(q->h, &fi);
}

static int ll_statfs(struct rf_fq *q, const struct statvfs *sv)
{
	return fuse_reply_statfs(q->h, sv);
}

static int ll_readlink(struct rf_fq *q, const char *target)
{
	return fuse_reply_readlink(q->h, target);
}

static size_t ll_dirent(struct rf_fq *q, char *buf, size_t size, const char *name, uint64_t ino, mode_t mode,
			off_t next)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	st.st_mode = mode;
	return fuse_add_direntry(q->h, buf, size, name, &st, next);
}

static int ll_groups(struct rf_fq *q, gid_t *groups, int max)
{
	return fuse_req_getgroups(q->h, max, groups);
}

static const struct rf_fq_ops ll_reply = {
	.err = ll_err,
	.entry = ll_entry,
	.attr = ll_attr,
	.buf = ll_buf,
	.write = ll_write,
	.open = ll_open,
	.statfs = ll_statfs,
	.readlink = ll_readlink,
	.dirent = ll_dirent,
	.groups = ll_groups,
};

static struct rf_fq ll_fq(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	return (struct rf_fq){ .ops = &ll_reply, .fs = fuse_req_userdata(req), .h = req,
			       .uid = ctx->uid, .gid = ctx->gid, .pid = ctx->pid };
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct rf_fq q = ll_fq(req);

	do_lookup(&q, parent, name);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	do_getattr(&q, ino);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct rf_fq q = ll_fq(req);

	do_readlink(&q, ino);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	do_setattr(&q, ino, attr, to_set);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	do_open(&q, ino, fi->flags);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	do_read(&q, ino, size, off, fi->fh);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	do_write(&q, ino, buf, size, off, fi->fh);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	do_flush(&q, ino, fi->fh);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	do_fsync(&q, ino, fi->fh);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	do_release(&q, ino, fi->fh);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	do_readdir(&q, ino, size, off);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct rf_fq q = ll_fq(req);

	do_statfs(&q, ino);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.setattr = op_setattr,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.fsync = op_fsync,
	.release = op_release,
	.readdir = op_readdir,
	.statfs = op_statfs,
};

/* The ops as the transport of our own calls them (and the unit tests:
 * fuse_ops.h). */
const struct rf_fops rf_fuse_fops = {
	.lookup = do_lookup,
	.getattr = do_getattr,
	.readlink = do_readlink,
	.setattr = do_setattr,
	.open = do_open,
	.read = do_read,
	.write = do_write,
	.flush = do_flush,
	.fsync = do_fsync,
	.release = do_release,
	.readdir = do_readdir,
	.statfs = do_statfs,
};

/* Serving a loop device: writes must not wait on memory reclaim that waits
 * on them.  Best effort: needs CAP_SYS_RESOURCE. */
static void mark_io_flusher(void)
{
#ifdef PR_SET_IO_FLUSHER
	if (prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0))
		rf_dbg("PR_SET_IO_FLUSHER not set: %s (fine unless the image backs a loop device under memory pressure)",
		       strerror(errno));
#endif
}

/* "fsname=raidfuse:NAME,subtype=raidfuse" into out: NAME with the
 * characters the option parser splits at (',') or unescapes ('\\')
 * escaped. */
static void mount_names(const char *name, char *out, size_t size)
{
	size_t n;

	n = (size_t)snprintf(out, size, "subtype=" RF_MOUNT_SUBTYPE ",fsname=" RF_MOUNT_SOURCE);
	for (; *name && n + 3 < size; name++) {
		if (*name == ',' || *name == '\\')
			out[n++] = '\\';
		out[n++] = *name;
	}
	out[n] = '\0';
}

/* FUSE threads by default: 4 per CPU, 8 to 16.  Enough for the large
 * writes a stripe head holds while the next request fills its row (each
 * lent write keeps its thread until it ends), few enough that busy threads
 * are not many more than the CPUs: a thread preempted in the middle of a
 * request holds it while every other runnable one takes its turn (16 on
 * 2 CPUs: raid6 4 KiB random writes at QD32 had a p99.9 of 18 ms and a
 * max of 81-93 ms; 8: 4-6 ms and 29-45 ms). */
static unsigned default_threads(void)
{
	long n = 4 * sysconf(_SC_NPROCESSORS_ONLN);

	return n < 8 ? 8 : n > 16 ? 16 : (unsigned)n;
}

static bool session_exited(void *arg)
{
	return fuse_session_exited(arg);
}

/* FUSE over io_uring: a store into a control file may drain the array
 * (stripe_cache_size, array_state, dev-NAME/state ...): not on a ring's
 * thread, whose other answers would wait for it. */
static bool uring_slow(void *arg, uint64_t ino)
{
	return !is_image(arg, ino);
}

/* The first request (INIT) for the transport of our own: read into
 * *init (freed by the caller), its length, or -errno (logged). */
static ssize_t read_init(struct fs *fs, char **init)
{
	size_t size = RF_MAX_IO + 4096;
	ssize_t n;

	*init = malloc(size);
	if (!*init)
		return -ENOMEM;
	n = rf_uring_read_req(fuse_session_fd(fs->se), *init, size);
	if (n < 0)
		rf_err("cannot read the FUSE INIT request: %s", strerror((int)-n));
	return n;
}

/* Serve through FUSE over io_uring; the kernel offered it in init.
 * 0, or -errno. */
static int serve_uring(struct fs *fs, const struct rf_fuse_opts *o, const char *init, size_t len)
{
	struct rf_uring_conf c = {
		.fd = fuse_session_fd(fs->se),
		.fs = fs,
		.fops = &rf_fuse_fops,
		.slow = uring_slow,
		.max_write = RF_MAX_IO,
		.max_background = 128,
		.congestion_threshold = 96,
		.stop = session_exited,
		.stop_arg = fs->se,
	};
	int ret = rf_uring_start(&fs->uring, &c, init, len);

	return ret ? ret : rf_uring_run(fs->uring);
}

/* Mount, serve until unmounted or signalled, unmount. */
static int serve(struct rf_array *a, const struct rf_fuse_opts *o, struct fs *fs)
{
	unsigned nthreads;
	struct statfs sfs;
	char *argv[16], max_read[32], names[2 * 256 + 64], mnt[PATH_MAX], err[256];
	char *init = NULL;
	struct rf_fuse_opts abs_o;
	struct rf_mount_opts mo;
	struct rf_mount_ent me;
	ssize_t init_len = 0;
	int argc = 0, ret, mark = -1;
	struct fuse_args args;
	struct fuse_loop_config *lc;

	/* A daemon that died with the image open leaves its mount behind;
	 * statfs always asks the daemon (stat may answer from the cache),
	 * so only a dead mount says ENOTCONN. */
	if (statfs(o->mountpoint, &sfs) && errno == ENOTCONN) {
		rf_err("cannot mount on %s: a FUSE daemon that served there died and left its mount behind "
		       "(%s); unmount it with `fusermount3 -uz %s` (lazy: it goes once the programs that still "
		       "hold the old image open let go), then mount again", o->mountpoint, strerror(ENOTCONN),
		       o->mountpoint);
		return 1;
	}
	/* libfuse unmounts by the path it mounted on, at the end, from the
	 * daemon's working directory: / (daemon.c).  A relative mount point
	 * would name another directory then, and a SIGTERM would leave the
	 * mount behind, dead. */
	if (!realpath(o->mountpoint, mnt)) {
		rf_err("cannot mount on %s: %s", o->mountpoint, strerror(errno));
		return 1;
	}
	abs_o = *o;
	abs_o.mountpoint = mnt;
	o = &abs_o;
	/* io_uring= out, the rest for libfuse (mount_opts.h) */
	if (rf_mount_opts_parse(o->fuse_opts, &mo, err, sizeof(err))) {
		rf_err("%s", err);
		rf_mount_opts_free(&mo);
		return 1;
	}
	splice_config(fs, mo.uring);
	/* -o max_read=BYTES: no larger reads than the daemon's own (4 KiB
	 * pages). */
	if (mo.max_read && mo.max_read < fs->max_read)
		fs->max_read = mo.max_read / 4096 * 4096;
	snprintf(max_read, sizeof(max_read), "max_read=%u", fs->max_read);
	argv[argc++] = "raidfuse";
	argv[argc++] = "-o";
	argv[argc++] = max_read;
	/* The mount's name, as findmnt and df show it: raidfuse:NAME, type
	 * fuse.raidfuse (holder.h).  Before the user's options: their
	 * fsname= or subtype= wins. */
	mount_names(rf_array_name(a), names, sizeof(names));
	argv[argc++] = "-o";
	argv[argc++] = names;
	if (mo.fuse) {
		argv[argc++] = "-o";
		argv[argc++] = mo.fuse;
		/* Other users on the mount: the kernel checks the modes
		 * against them (and the daemon again: may_open). */
		if (mo.others) {
			argv[argc++] = "-o";
			argv[argc++] = "default_permissions";
		}
	}
	if (o->debug)
		argv[argc++] = "-d";
	argv[argc] = NULL;
	args = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);
	fs->se = fuse_session_new(&args, &ops, sizeof(ops), fs);
	fuse_opt_free_args(&args);
	rf_mount_opts_free(&mo);
	if (!fs->se) {
		rf_err("cannot start a FUSE session (bad -o options?)");
		return 1;
	}
	if (fuse_set_signal_handlers(fs->se)) {
		fuse_session_destroy(fs->se);
		return 1;
	}
	/* With --log FILE, SIGHUP reopens the file instead (logrotate). */
	rf_log_reopen_on_hup();
	if (fuse_session_mount(fs->se, o->mountpoint)) {
		rf_err("cannot mount on %s", o->mountpoint);
		fuse_remove_signal_handlers(fs->se);
		fuse_session_destroy(fs->se);
		return 1;
	}
	/* The transport: the kernel's INIT says whether it offers FUSE over
	 * io_uring.  Read here, so that a refusal reaches the terminal. */
	if (mo.uring != RF_URING_OFF) {
		init_len = read_init(fs, &init);
		if (init_len >= 0 && mo.uring == RF_URING_ON && !rf_uring_offered(init, (size_t)init_len)) {
			rf_err("-o io_uring=on: the kernel does not offer FUSE over io_uring (Linux 6.14+ with "
			       "CONFIG_FUSE_IO_URING; as root: echo 1 > /sys/module/fuse/parameters/enable_uring)");
			init_len = -EOPNOTSUPP;
		}
		if (init_len < 0) {
			free(init);
			fuse_session_unmount(fs->se);
			fuse_remove_signal_handlers(fs->se);
			fuse_session_destroy(fs->se);
			return 1;
		}
	}
	/* The marker (holder.h): `raidfuse stop`, `raidfuse list` and a mount
	 * waiting for a member find this daemon by the mount's device and
	 * point, which the mount table gives (the last mount on the point:
	 * this one). */
	ret = rf_mount_find(o->mountpoint, 0, &me);
	if (!ret) {
		mark = rf_serve_mark(&me);
		ret = mark < 0 ? mark : 0;
	}
	if (ret)
		rf_warn("%s: cannot mark the mount as served by this process (%s): raidfuse stop and list "
			"will not find it", o->mountpoint, strerror(-ret));
	/* No member or spare may come from the file system served here. */
	if (rf_dev_set_served_mount(o->mountpoint))
		rf_warn("%s: not found in the mount table: a spare on it is not refused", o->mountpoint);
	mark_io_flusher();
	rf_array_on_resize(a, image_resized, fs);
	ret = rf_array_start(a);
	if (ret) {
		rf_err("cannot start the workers: %s", strerror(-ret));
		if (mark >= 0)
			close(mark);
		free(init);
		fuse_session_unmount(fs->se);
		fuse_remove_signal_handlers(fs->se);
		fuse_session_destroy(fs->se);
		return 1;
	}
	/* As md runs an array: a resync that is due starts now (it goes on
	 * beside the FUSE threads; a failure to start it is logged), or with
	 * --freeze sync_action is frozen, before anyone is told the array
	 * serves: what a script reads then is what it asked for. */
	rf_array_start_resync(a, o->freeze);
	/* Serving: the command that started a daemon may exit now (every
	 * thread above is the daemon's own: daemon.h). */
	/* The service manager first (notify.h): MAINPID= must reach it
	 * before the command it started exits. */
	rf_notify_serving(a);
	rf_daemon_ready();
	rf_info("serving %s (%llu bytes) on %s", rf_array_name(a), (unsigned long long)rf_array_size(a),
		o->mountpoint);
	lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(lc, 1);
	nthreads = o->max_threads > 0 ? (unsigned)o->max_threads : default_threads();
	fuse_loop_cfg_set_max_threads(lc, nthreads);
	/* FUSE threads never block on IO: keep them rather than churn. */
	fuse_loop_cfg_set_idle_threads(lc, nthreads);
	if (init && rf_uring_offered(init, (size_t)init_len)) {
		ret = serve_uring(fs, o, init, (size_t)init_len);
	} else {
		if (init) {
			/* libfuse answers the INIT read above, then serves. */
			struct fuse_buf fb = { .size = (size_t)init_len, .mem = init };

			fuse_session_process_buf(fs->se, &fb);
		}
		ret = fuse_session_loop_mt(fs->se, lc);
		if (fs->splice)
			rf_info("%llu reads spliced, %llu went the usual way after a failed splice",
				(unsigned long long)atomic_load(&fs->nr_spliced),
				(unsigned long long)atomic_load(&fs->nr_splice_fallback));
	}
	/* The mount is gone (or going): from here on this daemon is one
	 * that stops. */
	rf_notify_stopping();
	if (mark >= 0)
		close(mark);
	mark = -1;
	if (rf_fdmap_on())
		rf_info("%llu reads answered from the members' mappings",
			(unsigned long long)atomic_load(&fs->nr_mapped));
	free(init);
	/* A positive value is the signal that ended the loop: a clean stop.
	 * ECONNABORTED: the kernel tore the connection down (a lazy unmount
	 * racing the last requests); nothing is left to answer, and every
	 * acknowledged write is on the members. */
	if (ret == -ECONNABORTED) {
		rf_info("FUSE connection aborted by the kernel; stopping");
		ret = 0;
	}
	if (ret > 0)
		ret = 0;
	fuse_loop_cfg_destroy(lc);
	fuse_session_unmount(fs->se);
	fuse_remove_signal_handlers(fs->se);
	/* Writes held by a suspended array run now: the pool must come home. */
	rf_array_resume(a);
	/* Every request was answered before the loop ended (replies come from
	 * workers; wait for the pool to come home). */
	pool_drain(fs);
	rf_uring_free(fs->uring);
	fuse_session_destroy(fs->se);
	pool_destroy(fs);
	return ret ? 1 : 0;
}

/* The served file system of a, not mounted: the tree, the locks, an
 * empty pool.  0, or 1 (logged). */
static int fs_init(struct fs *fs, struct rf_array *a, bool null)
{
	int ret;

	memset(fs, 0, sizeof(*fs));
	fs->a = a;
	fs->start = time(NULL);
	fs->uid = getuid();
	fs->gid = getgid();
	fs->img_uid = fs->uid;
	fs->img_gid = fs->gid;
	fs->img_mode = rf_array_readonly(a) ? 0400 : 0600;
	fs->null = null;
	pthread_mutex_init(&fs->img_lock, NULL);
	rf_lock_rank(&fs->img_lock, RF_LOCK_LEAF, "img_lock");
	pthread_mutex_init(&fs->lock, NULL);
	rf_lock_rank(&fs->lock, RF_LOCK_LEAF, "request pool lock");
	pthread_cond_init(&fs->cond, NULL);
	pthread_mutex_init(&fs->names_lock, NULL);
	rf_lock_rank(&fs->names_lock, RF_LOCK_LEAF, "names_lock");
	ret = rf_ctl_tree_build(a, &fs->tree);
	if (ret == -EINVAL) {
		rf_err("cannot serve the image as '%s': not a plain file name, or one the control files use "
		       "(%s, %s)", rf_array_name(a), RF_CTL_ROOT_MD, RF_CTL_ROOT_MDSTAT);
		return 1;
	}
	if (ret) {
		rf_err("cannot build the file tree: %s", strerror(-ret));
		return 1;
	}
	fs->md = rf_ctl_lookup(&fs->tree, a, 0, RF_CTL_ROOT_MD);
	return 0;
}

static void fs_fini(struct fs *fs)
{
	rf_ctl_tree_free(&fs->tree);
	while (fs->nnames)
		free(fs->names[--fs->nnames]);
	free(fs->names);
}

int rf_fuse_run(struct rf_array *a, const struct rf_fuse_opts *o)
{
	struct fs fs;
	int ret;

	if (fs_init(&fs, a, o->null))
		return 1;
	ret = serve(a, o, &fs);
	fs_fini(&fs);
	return ret;
}

/* ---- the ops without a mount (fuse_ops.h) ---- */

void *rf_fuse_fs_new(struct rf_array *a)
{
	struct fs *fs = malloc(sizeof(*fs));

	if (fs && fs_init(fs, a, false)) {
		free(fs);
		fs = NULL;
	}
	return fs;
}

void rf_fuse_fs_drain(void *fs)
{
	pool_drain(fs);
}

void rf_fuse_fs_free(void *fs)
{
	if (!fs)
		return;
	pool_drain(fs);
	pool_destroy(fs);
	fs_fini(fs);
	free(fs);
}
