/* fuse.c - the FUSE front end: the array image and the control files.
 *
 * The tree is ctl.c's (struct rf_ctl_tree): the root holds the image,
 * mdstat and md/ with one file per md attribute.  Inode numbers are node
 * indexes plus one (the root is FUSE_ROOT_ID).
 *
 * libfuse low-level API, fuse_session_loop_mt with clone_fd.  A read or
 * write of the image takes a request from the pool, copies the write data
 * in (libfuse reuses its buffer once the callback returns) and submits it;
 * the FUSE thread goes back to /dev/fuse at once.  The worker that ends the
 * request replies and returns it to the pool.
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
 * The only file that includes fuse_lowlevel.h.
 */
#define FUSE_USE_VERSION 312
#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/ctl.h"
#include "raidfuse/fuse.h"
#include "raidfuse/log.h"

#define RF_MAX_IO (1u << 20)
#define RF_POOL_MAX 256

enum { INO_ROOT = FUSE_ROOT_ID };

struct fs {
	struct rf_array *a;
	struct fuse_session *se;
	struct rf_ctl_tree tree;        /* immutable while mounted */
	time_t start;
	uid_t uid;
	gid_t gid;
	/* request pool, protected by lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct rf_req *free;
	int nalloc, nwait;
};

struct io_ctx {
	struct fs *fs;
	fuse_req_t req;
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

/* The tree node of ino, or NULL. */
static const struct rf_ctl_node *node_of(struct fs *fs, fuse_ino_t ino)
{
	if (ino < INO_ROOT || ino - INO_ROOT >= (fuse_ino_t)fs->tree.n)
		return NULL;
	return &fs->tree.nodes[ino - INO_ROOT];
}

static fuse_ino_t ino_of(struct fs *fs, const struct rf_ctl_node *n)
{
	return INO_ROOT + (fuse_ino_t)(n - fs->tree.nodes);
}

static void fill_attr(struct fs *fs, const struct rf_ctl_node *n, struct stat *st)
{
	int i;

	memset(st, 0, sizeof(*st));
	st->st_ino = ino_of(fs, n);
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_atime = st->st_mtime = st->st_ctime = fs->start;
	st->st_blksize = 4096;
	st->st_nlink = 1;
	switch (n->kind) {
	case RF_CTL_DIR:
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;       /* and one per subdirectory's ".." */
		for (i = 1; i < fs->tree.n; i++)
			if (fs->tree.nodes[i].parent == n - fs->tree.nodes && fs->tree.nodes[i].kind == RF_CTL_DIR)
				st->st_nlink++;
		break;
	case RF_CTL_IMAGE:
		st->st_mode = S_IFREG | (rf_array_readonly(fs->a) ? 0444 : 0644);
		st->st_size = (off_t)rf_array_size(fs->a);
		st->st_blocks = st->st_size / 512;
		break;
	case RF_CTL_FILE:
		/* As sysfs: a page, whatever the content (reads end at EOF). */
		st->st_mode = S_IFREG | n->attr->mode;
		st->st_size = 4096;
		break;
	}
}

static void op_init(void *ud, struct fuse_conn_info *conn)
{
	conn->max_write = RF_MAX_IO;
	conn->max_read = RF_MAX_IO;
	conn->max_readahead = RF_MAX_IO;
	/* Async direct IO: let many requests be in flight at once. */
	conn->max_background = 128;
	conn->congestion_threshold = 96;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fuse_req_userdata(req);
	const struct rf_ctl_node *dir = node_of(fs, parent);
	struct fuse_entry_param e;
	int i;

	i = dir ? rf_ctl_lookup(&fs->tree, (int)(parent - INO_ROOT), name) : -ENOENT;
	if (i < 0) {
		fuse_reply_err(req, -i);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = INO_ROOT + (fuse_ino_t)i;
	e.attr_timeout = e.entry_timeout = 3600;
	fill_attr(fs, &fs->tree.nodes[i], &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	const struct rf_ctl_node *n = node_of(fs, ino);
	struct stat st;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(fs, n, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	const struct rf_ctl_node *n = node_of(fs, ino);
	struct stat st;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(fs, n, &st);
	if (to_set & FUSE_SET_ATTR_SIZE) {
		/* The image's size is the array's: truncating to it is a
		 * no-op, anything else is refused like on a block device.  A
		 * control file takes "truncate to 0" (echo VALUE > file) as
		 * sysfs does: the write that follows is the value. */
		if (n->kind == RF_CTL_FILE && !n->attr->set_int && !n->attr->store) {
			fuse_reply_err(req, EACCES);
			return;
		}
		if (n->kind == RF_CTL_DIR ||
		    attr->st_size != (n->kind == RF_CTL_FILE ? 0 : st.st_size)) {
			fuse_reply_err(req, n->kind == RF_CTL_DIR ? EISDIR : EPERM);
			return;
		}
	}
	fuse_reply_attr(req, &st, 3600);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	const struct rf_ctl_node *n = node_of(fs, ino);

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (n->kind == RF_CTL_DIR) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	/* A read-only attribute cannot be opened for writing (sysfs: EACCES). */
	if (n->kind == RF_CTL_FILE && (fi->flags & O_ACCMODE) != O_RDONLY && !n->attr->set_int &&
	    !n->attr->store) {
		fuse_reply_err(req, EACCES);
		return;
	}
	/* A read-only array (--ro) refuses to be opened for writing, as a
	 * read-only block device does; its control files still take values. */
	if (n->kind == RF_CTL_IMAGE && (fi->flags & O_ACCMODE) != O_RDONLY && rf_array_readonly(fs->a)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	/* O_TRUNC is ignored, as a block device ignores it (the kernel passes
	 * it here instead of a size change: FUSE_CAP_ATOMIC_O_TRUNC); a
	 * control file is rewritten by the value that follows. */
	/* The image: fh says whether this opener may write (its close then
	 * flushes).  A control file: its struct ctl_open. */
	fi->fh = (fi->flags & O_ACCMODE) != O_RDONLY;
	if (n->kind == RF_CTL_FILE) {
		struct ctl_open *c = calloc(1, sizeof(*c));

		if (!c) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		pthread_mutex_init(&c->lock, NULL);
		fi->fh = (uintptr_t)c;
	}
	fi->direct_io = 1;
	fi->keep_cache = 0;
	if (fuse_reply_open(req, fi) && n->kind == RF_CTL_FILE) {
		/* the opener is gone: no release will come */
		free((void *)(uintptr_t)fi->fh);
	}
}

static void io_done(struct rf_req *r, int err)
{
	struct io_ctx *c = r->priv;

	if (err)
		fuse_reply_err(c->req, -err);
	else if (r->op == RF_REQ_READ)
		fuse_reply_buf(c->req, r->buf, r->len);
	else if (r->op == RF_REQ_WRITE)
		fuse_reply_write(c->req, r->len);
	else
		fuse_reply_err(c->req, 0);
	pool_put(c->fs, r);
}

static void submit(struct fs *fs, fuse_req_t req, int op, uint64_t off, size_t len, const char *data)
{
	struct rf_req *r = pool_get(fs);
	struct io_ctx *c;

	if (!r) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	c = r->priv;
	c->req = req;
	r->op = (uint8_t)op;
	r->off = off;
	r->len = (uint32_t)len;
	r->done = io_done;
	if (data)
		memcpy(r->buf, data, len);
	rf_array_submit(fs->a, r);
}

static void ctl_read(struct fs *fs, fuse_req_t req, const struct rf_ctl_node *n, struct ctl_open *c,
		     size_t size, off_t off)
{
	char *out = NULL;
	size_t len = 0;
	int ret = 0;

	pthread_mutex_lock(&c->lock);
	if (off == 0 || !c->text) {
		char *buf = malloc(RF_CTL_SHOW_MAX);

		ret = buf ? rf_ctl_show(n->attr, fs->a, n->member, buf, RF_CTL_SHOW_MAX) : -ENOMEM;
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
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, out, len);
	free(out);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	const struct rf_ctl_node *n = node_of(fs, ino);
	uint64_t end = rf_array_size(fs->a);

	if (!n || n->kind == RF_CTL_DIR) {
		fuse_reply_err(req, n ? EISDIR : ENOENT);
		return;
	}
	if (n->kind == RF_CTL_FILE) {
		ctl_read(fs, req, n, (struct ctl_open *)(uintptr_t)fi->fh, size, off);
		return;
	}
	if (off < 0 || (uint64_t)off >= end || !size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > RF_MAX_IO)
		size = RF_MAX_IO;
	if (size > end - (uint64_t)off)
		size = end - (uint64_t)off;
	submit(fs, req, RF_REQ_READ, (uint64_t)off, size, NULL);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	const struct rf_ctl_node *n = node_of(fs, ino);
	uint64_t end = rf_array_size(fs->a);
	int ret;

	if (!n || n->kind == RF_CTL_DIR) {
		fuse_reply_err(req, n ? EISDIR : ENOENT);
		return;
	}
	if (n->kind == RF_CTL_FILE) {
		/* One write, one value, wherever it lands (sysfs ignores the
		 * offset too).  A setter that drains blocks this thread only. */
		ret = rf_ctl_store(n->attr, fs->a, n->member, buf, size);
		if (ret)
			fuse_reply_err(req, -ret);
		else
			fuse_reply_write(req, size);
		return;
	}
	if (rf_array_readonly(fs->a)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if ((uint64_t)off >= end) {
		fuse_reply_err(req, ENOSPC);
		return;
	}
	if (!size) {
		fuse_reply_write(req, 0);
		return;
	}
	if (size > RF_MAX_IO)
		size = RF_MAX_IO;
	if (size > end - (uint64_t)off)
		size = end - (uint64_t)off;
	submit(fs, req, RF_REQ_WRITE, (uint64_t)off, size, buf);
}

/* Only the image has data to flush.  A control file's close must not wait
 * for the members (nor behind writes a suspended array holds back). */
static bool is_image(struct fs *fs, fuse_ino_t ino)
{
	const struct rf_ctl_node *n = node_of(fs, ino);

	return n && n->kind == RF_CTL_IMAGE;
}

/* close(): the members are flushed for an opener that could write.  One
 * that only read has nothing to flush, and its close must not wait while
 * a suspended array holds writes (and flushes) back: reads go on. */
static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (!is_image(fuse_req_userdata(req), ino) || !fi->fh) {
		fuse_reply_err(req, 0);
		return;
	}
	submit(fuse_req_userdata(req), req, RF_REQ_FLUSH, 0, 0, NULL);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	if (!is_image(fuse_req_userdata(req), ino)) {
		fuse_reply_err(req, 0);
		return;
	}
	submit(fuse_req_userdata(req), req, RF_REQ_FLUSH, 0, 0, NULL);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const struct rf_ctl_node *n = node_of(fuse_req_userdata(req), ino);
	struct ctl_open *c = (struct ctl_open *)(uintptr_t)fi->fh;

	if (n && n->kind == RF_CTL_FILE && c) {
		pthread_mutex_destroy(&c->lock);
		free(c->text);
		free(c);
	}
	fuse_reply_err(req, 0);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	const struct rf_ctl_node *dir = node_of(fs, ino);
	char buf[4096];
	size_t n = 0, len;
	struct stat st;
	off_t pos = 0;
	int i;

	if (!dir || dir->kind != RF_CTL_DIR) {
		fuse_reply_err(req, dir ? ENOTDIR : ENOENT);
		return;
	}
	if (size > sizeof(buf))
		size = sizeof(buf);
	/* Entry k of the listing (".", "..", then the children in tree
	 * order) has offset k + 1: the offset of the entry after it. */
	memset(&st, 0, sizeof(st));
	for (i = -2; i < fs->tree.n; i++) {
		const struct rf_ctl_node *c;
		const char *name;

		if (i == -2) {
			c = dir;
			name = ".";
		} else if (i == -1) {
			c = &fs->tree.nodes[dir->parent];
			name = "..";
		} else {
			c = &fs->tree.nodes[i];
			name = c->name;
			if (i == 0 || c->parent != (int)(ino - INO_ROOT))
				continue;
		}
		if (pos++ < off)
			continue;
		st.st_ino = ino_of(fs, c);
		st.st_mode = c->kind == RF_CTL_DIR ? S_IFDIR : S_IFREG;
		len = fuse_add_direntry(req, buf + n, size - n, name, &st, pos);
		if (len > size - n)
			break;
		n += len;
	}
	fuse_reply_buf(req, buf, n);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = fuse_req_userdata(req);
	struct statvfs sv;

	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_blocks = rf_array_size(fs->a) / 4096;
	sv.f_files = (fsfilcnt_t)fs->tree.n;
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
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

/* Mount, serve until unmounted or signalled, unmount. */
static int serve(struct rf_array *a, const struct rf_fuse_opts *o, struct fs *fs)
{
	char *argv[8];
	int argc = 0, ret;
	struct fuse_args args;
	struct fuse_loop_config *lc;

	argv[argc++] = "raidfuse";
	argv[argc++] = "-o";
	argv[argc++] = "max_read=1048576";
	if (o->fuse_opts) {
		argv[argc++] = "-o";
		argv[argc++] = (char *)o->fuse_opts;
	}
	if (o->debug)
		argv[argc++] = "-d";
	argv[argc] = NULL;
	args = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);
	fs->se = fuse_session_new(&args, &ops, sizeof(ops), fs);
	fuse_opt_free_args(&args);
	if (!fs->se) {
		rf_err("cannot start a FUSE session (bad -o options?)");
		return 1;
	}
	if (fuse_set_signal_handlers(fs->se)) {
		fuse_session_destroy(fs->se);
		return 1;
	}
	if (fuse_session_mount(fs->se, o->mountpoint)) {
		rf_err("cannot mount on %s", o->mountpoint);
		fuse_remove_signal_handlers(fs->se);
		fuse_session_destroy(fs->se);
		return 1;
	}
	if (!o->foreground)
		rf_log_to_syslog(true);
	fuse_daemonize(o->foreground);
	mark_io_flusher();
	ret = rf_array_start(a);
	if (ret) {
		rf_err("cannot start the workers: %s", strerror(-ret));
		fuse_session_unmount(fs->se);
		fuse_remove_signal_handlers(fs->se);
		fuse_session_destroy(fs->se);
		return 1;
	}
	rf_info("serving %s (%llu bytes) on %s", rf_array_name(a), (unsigned long long)rf_array_size(a),
		o->mountpoint);
	/* As md runs an array: a resync that is due starts now (it goes on
	 * beside the FUSE threads; a failure to start it is logged). */
	rf_array_start_resync(a, o->freeze);
	lc = fuse_loop_cfg_create();
	fuse_loop_cfg_set_clone_fd(lc, 1);
	fuse_loop_cfg_set_max_threads(lc, o->max_threads > 0 ? (unsigned)o->max_threads : 16);
	/* FUSE threads never block on IO: keep them rather than churn. */
	fuse_loop_cfg_set_idle_threads(lc, o->max_threads > 0 ? (unsigned)o->max_threads : 16);
	ret = fuse_session_loop_mt(fs->se, lc);
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
	fuse_session_destroy(fs->se);
	pool_destroy(fs);
	return ret ? 1 : 0;
}

int rf_fuse_run(struct rf_array *a, const struct rf_fuse_opts *o)
{
	struct fs fs;
	int ret;

	memset(&fs, 0, sizeof(fs));
	fs.a = a;
	fs.start = time(NULL);
	fs.uid = getuid();
	fs.gid = getgid();
	pthread_mutex_init(&fs.lock, NULL);
	pthread_cond_init(&fs.cond, NULL);
	if (rf_ctl_tree_build(a, &fs.tree)) {
		rf_err("cannot build the file tree: %s", strerror(ENOMEM));
		return 1;
	}
	ret = serve(a, o, &fs);
	rf_ctl_tree_free(&fs.tree);
	return ret;
}
