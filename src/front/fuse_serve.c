/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuse_serve.c - libfuse's glue and rf_fuse_run(): mount, serve until
 * unmounted or signalled, unmount.
 *
 * libfuse's low-level API is one transport of the ops (fuse.c): each
 * callback (op_*) makes a struct rf_fq of its fuse_req_t and calls the op
 * through rf_fuse_fops; the ll_* replies answer with fuse_reply_*().  The
 * loop is fuse_session_loop_mt with clone_fd.
 *
 * serve() goes in steps: the mount point checked and made absolute
 * (mount_point()), the session made with the mount's options and
 * mounted (session_mount()), the first request (INIT) read to choose the
 * transport: FUSE over io_uring when the kernel offers it (fuse_uring.c),
 * libfuse's loop otherwise; the mount marked as served by this process
 * (mark_served()), the array started and the command that started the
 * daemon told; the loop (serve_loop()); then the stop, once every
 * request has come home.
 *
 * What it does NOT do: answer a request itself (fuse.c), parse -o
 * (mount_opts.h), or detach from the terminal (daemon.c).
 */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "raidfuse/ctl.h"
#include "raidfuse/daemon.h"
#include "raidfuse/devopen.h"
#include "raidfuse/fdmap.h"
#include "raidfuse/fuse.h"
#include "raidfuse/holder.h"
#include "raidfuse/log.h"
#include "raidfuse/notify.h"
#include "front/fuse_int.h"
#include "front/fuse_ops.h"
#include "front/fuse_reply.h"
#include "front/fuse_uring.h"
#include "front/mount_opts.h"

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
	rf_fuse_direct_splice_init(ud, conn);
}

/* The array's size changed (a reshape ended, md/array_size): the kernel
 * forgets the image's cached attributes, so the next stat sees the new
 * size (and a smaller one drops the pages past it).  Attributes only: a
 * page invalidation could wait for writeback that needs this server's
 * answers, and notify_lock is held.  On the reshape walk's thread, or a
 * control file's. */
static void image_resized(void *priv)
{
	struct fs *fs = priv;
	int i, ret;

	pthread_mutex_lock(&fs->notify_lock);
	for (i = 0; fs->notify_live && i < fs->tree.n; i++) {
		if (fs->tree.nodes[i].kind != RF_CTL_IMAGE)
			continue;
		/* INIT answered by the io_uring transport: libfuse's session
		 * cannot send it (it says ENOSYS). */
		ret = rf_uring_notify_inval_inode(fs->uring, INO_ROOT + (uint64_t)i);
		if (ret == -ENOSYS)
			ret = fuse_lowlevel_notify_inval_inode(fs->se, INO_ROOT + (fuse_ino_t)i, -1, 0);
		if (ret && ret != -ENOENT)
			rf_warn("the image's new size (%llu bytes) may show late: %s",
				(unsigned long long)rf_array_size(fs->a), strerror(-ret));
	}
	pthread_mutex_unlock(&fs->notify_lock);
}

/* No notification from here on: the session and the rings go. */
static void notify_end(struct fs *fs)
{
	pthread_mutex_lock(&fs->notify_lock);
	fs->notify_live = false;
	pthread_mutex_unlock(&fs->notify_lock);
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

const struct rf_fq_ops rf_fuse_serve_ll_reply = {
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

	return (struct rf_fq){ .ops = &rf_fuse_serve_ll_reply, .fs = fuse_req_userdata(req), .h = req,
			       .uid = ctx->uid, .gid = ctx->gid, .pid = ctx->pid };
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct rf_fq q = ll_fq(req);

	rf_fuse_fops.lookup(&q, parent, name);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	rf_fuse_fops.getattr(&q, ino);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct rf_fq q = ll_fq(req);

	rf_fuse_fops.readlink(&q, ino);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	rf_fuse_fops.setattr(&q, ino, attr, to_set);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	rf_fuse_fops.open(&q, ino, fi->flags);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	rf_fuse_fops.read(&q, ino, size, off, fi->fh);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	rf_fuse_fops.write(&q, ino, buf, size, off, fi->fh);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	rf_fuse_fops.flush(&q, ino, fi->fh);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	rf_fuse_fops.fsync(&q, ino, fi->fh);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	rf_fuse_fops.release(&q, ino, fi->fh);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct rf_fq q = ll_fq(req);

	rf_fuse_fops.readdir(&q, ino, size, off);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct rf_fq q = ll_fq(req);

	rf_fuse_fops.statfs(&q, ino);
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
	return !rf_fuse_inode_is_image(arg, ino);
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

/* Refuse a mount point where a dead mount was left behind, and make it
 * absolute into mnt (PATH_MAX bytes).  0, or 1 (logged). */
static int mount_point(const struct rf_fuse_opts *o, char *mnt)
{
	struct statfs sfs;

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
	return 0;
}

/* fs's session with o's options (the splice settings and max_read made
 * first), its signal handlers, mounted on o->mountpoint; *uring: the -o
 * io_uring= mode.  0, or 1 (logged; nothing left behind). */
static int session_mount(struct rf_array *a, const struct rf_fuse_opts *o, struct fs *fs, int *uring)
{
	char *argv[16], max_read[32], names[2 * 256 + 64], err[256];
	struct rf_mount_opts mo;
	int argc = 0;
	struct fuse_args args;

	/* io_uring= out, the rest for libfuse (mount_opts.h) */
	if (rf_mount_opts_parse(o->fuse_opts, &mo, err, sizeof(err))) {
		rf_err("%s", err);
		rf_mount_opts_free(&mo);
		return 1;
	}
	*uring = mo.uring;
	rf_fuse_direct_splice_config(fs, mo.uring);
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
		 * against them (and the daemon again: rf_fuse_inode_may_open). */
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
	return 0;
}

/* Mark the mount as served by this process, and refuse its file system
 * to members and spares.  The marker's descriptor, or a negative value:
 * none (warned). */
static int mark_served(const struct rf_fuse_opts *o)
{
	struct rf_mount_ent me;
	int ret, mark = -1;

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
	if (rf_devopen_set_served_mount(o->mountpoint))
		rf_warn("%s: not found in the mount table: a spare on it is not refused", o->mountpoint);
	return mark;
}

/* Serve until unmounted or signalled: through FUSE over io_uring when
 * the kernel offered it in init (init_len bytes), else with libfuse's
 * loop (init, if read, answered first).  The loop's result. */
static int serve_loop(struct fs *fs, const struct rf_fuse_opts *o, char *init, ssize_t init_len)
{
	unsigned nthreads;
	struct fuse_loop_config *lc;
	int ret;

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
	fuse_loop_cfg_destroy(lc);
	return ret;
}

/* Mount, serve until unmounted or signalled, unmount. */
static int serve(struct rf_array *a, const struct rf_fuse_opts *o, struct fs *fs)
{
	char mnt[PATH_MAX];
	char *init = NULL;
	struct rf_fuse_opts abs_o;
	ssize_t init_len = 0;
	int ret, mark, uring;

	if (mount_point(o, mnt))
		return 1;
	abs_o = *o;
	abs_o.mountpoint = mnt;
	o = &abs_o;
	if (session_mount(a, o, fs, &uring))
		return 1;
	/* The transport: the kernel's INIT says whether it offers FUSE over
	 * io_uring.  Read here, so that a refusal reaches the terminal. */
	if (uring != RF_URING_OFF) {
		init_len = read_init(fs, &init);
		if (init_len >= 0 && uring == RF_URING_ON && !rf_uring_offered(init, (size_t)init_len)) {
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
	mark = mark_served(o);
	mark_io_flusher();
	fs->notify_live = true;
	rf_array_on_resize(a, image_resized, fs);
	ret = rf_array_start(a);
	if (ret) {
		rf_err("cannot start the workers: %s", strerror(-ret));
		notify_end(fs);
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
	rf_sbstate_start_resync(a, o->freeze);
	/* Serving: the command that started a daemon may exit now (every
	 * thread above is the daemon's own: daemon.h). */
	/* The service manager first (notify.h): MAINPID= must reach it
	 * before the command it started exits. */
	rf_notify_serving(a);
	rf_daemon_ready();
	rf_info("serving %s (%llu bytes) on %s", rf_array_name(a), (unsigned long long)rf_array_size(a),
		o->mountpoint);
	ret = serve_loop(fs, o, init, init_len);
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
	fuse_session_unmount(fs->se);
	fuse_remove_signal_handlers(fs->se);
	/* Writes held by a suspended array run now: the pool must come home. */
	rf_barrier_resume(a);
	/* Every request was answered before the loop ended (replies come from
	 * workers; wait for the pool to come home). */
	rf_fuse_pool_drain(fs);
	notify_end(fs);
	rf_uring_free(fs->uring);
	fuse_session_destroy(fs->se);
	rf_fuse_pool_destroy(fs);
	return ret ? 1 : 0;
}

int rf_fuse_run(struct rf_array *a, const struct rf_fuse_opts *o)
{
	struct fs fs;
	int ret;

	if (rf_fuse_fs_init(&fs, a, o->null))
		return 1;
	ret = serve(a, o, &fs);
	rf_fuse_fs_fini(&fs);
	return ret;
}
