/* SPDX-License-Identifier: GPL-2.0-or-later */
/* stallfs.c - a member that stops answering, for the stuck-member tests.
 *
 * A disk that hangs does not fail its IO: the IO never ends.  The tests
 * need that on demand, with the kernel in the middle as it is for a real
 * disk (an io_uring request or a pread() waiting in the kernel, not a fake
 * in raidfuse's own IO layer).  stallfs serves one file through FUSE:
 *
 *   stallfs FILE MNT [-f]
 *
 * MNT/member is FILE (same size; read, write, fsync go to FILE with
 * pread/pwrite/fsync).  SIGUSR1 stalls it: from then on every read,
 * write and fsync that arrives waits, and answers nothing, not even an
 * interrupt, as a hung disk would.  SIGUSR2 lets them all go on.
 * SIGTERM, SIGINT: unmount and exit (what waits is released first).
 * Without -f it detaches once the mount is up, so that a test's
 * `stallfs FILE MNT && use MNT/member` has the member when it returns.
 *
 * Truncation and statfs go to FILE too (raidfuse create sizes members).
 * It does NOT stall getattr or open: a disk that hangs still has its
 * device node, and raidfuse's status files stat members.
 *
 * Exit status: 0 unmounted, 1 an error (printed), 2 usage.
 */
#define FUSE_USE_VERSION 312
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define MEMBER_INO 2
#define MEMBER_NAME "member"

static int backing = -1;
static atomic_bool stalled;
static struct fuse_session *session;

static void on_stall(int sig)
{
	atomic_store(&stalled, sig == SIGUSR1);
}

/* Wait while stalled; the request is never interrupted, as a hung disk's
 * is not. */
static void stall_point(void)
{
	while (atomic_load(&stalled) && !fuse_session_exited(session))
		usleep(2000);
}

static int member_stat(struct stat *st)
{
	struct stat b;

	if (fstat(backing, &b))
		return -errno;
	memset(st, 0, sizeof(*st));
	st->st_ino = MEMBER_INO;
	st->st_mode = S_IFREG | 0600;
	st->st_nlink = 1;
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_size = b.st_size;
	st->st_blocks = b.st_blocks;
	st->st_mtim = b.st_mtim;
	st->st_ctim = b.st_ctim;
	return 0;
}

static void reply_member_attr(fuse_req_t req)
{
	struct stat st;
	int r = member_stat(&st);

	if (r)
		fuse_reply_err(req, -r);
	else
		fuse_reply_attr(req, &st, 0);
}

static void do_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	int r;

	if (parent != FUSE_ROOT_ID || strcmp(name, MEMBER_NAME)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	r = member_stat(&e.attr);
	if (r) {
		fuse_reply_err(req, -r);
		return;
	}
	e.ino = MEMBER_INO;
	fuse_reply_entry(req, &e);
}

static void do_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	if (ino == FUSE_ROOT_ID) {
		memset(&st, 0, sizeof(st));
		st.st_ino = FUSE_ROOT_ID;
		st.st_mode = S_IFDIR | 0755;
		st.st_nlink = 2;
		st.st_uid = getuid();
		st.st_gid = getgid();
		fuse_reply_attr(req, &st, 0);
		return;
	}
	reply_member_attr(req);
}

static void do_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	if (ino != MEMBER_INO) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if ((to_set & FUSE_SET_ATTR_SIZE) && ftruncate(backing, attr->st_size)) {
		fuse_reply_err(req, errno);
		return;
	}
	reply_member_attr(req);
}

static void do_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	if (fstatvfs(backing, &sv))
		fuse_reply_err(req, errno);
	else
		fuse_reply_statfs(req, &sv);
}

static void do_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != MEMBER_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->keep_cache = 0;
	fuse_reply_open(req, fi);
}

static void do_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	char *buf = malloc(size ? size : 1);
	ssize_t n;

	stall_point();
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = pread(backing, buf, size, off);
	if (n < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void do_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	ssize_t n;

	stall_point();
	n = pwrite(backing, buf, size, off);
	if (n < 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_write(req, (size_t)n);
}

static void do_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	stall_point();
	fuse_reply_err(req, fsync(backing) ? errno : 0);
}

static void do_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	char buf[256];
	size_t n = 0;
	struct stat st = { .st_ino = MEMBER_INO, .st_mode = S_IFREG };

	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (off == 0)
		n = fuse_add_direntry(req, buf, sizeof(buf), MEMBER_NAME, &st, 1);
	fuse_reply_buf(req, buf, n <= size ? n : 0);
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = do_lookup,
	.getattr = do_getattr,
	.setattr = do_setattr,
	.statfs = do_statfs,
	.open = do_open,
	.read = do_read,
	.write = do_write,
	.fsync = do_fsync,
	.flush = do_flush,
	.readdir = do_readdir,
};

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *lc;
	struct sigaction sa;
	bool fg = argc == 4 && !strcmp(argv[3], "-f");
	int ret = 1;

	if (argc != 3 && !fg) {
		fprintf(stderr, "usage: stallfs FILE MNT [-f]\n");
		return 2;
	}
	backing = open(argv[1], O_RDWR | O_CLOEXEC);
	if (backing < 0) {
		fprintf(stderr, "stallfs: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stall;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);

	if (fuse_opt_add_arg(&args, argv[0]) || fuse_opt_add_arg(&args, "-odefault_permissions"))
		return 1;
	session = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!session)
		return 1;
	if (fuse_set_signal_handlers(session))
		goto out_destroy;
	if (fuse_session_mount(session, argv[2])) {
		fprintf(stderr, "stallfs: cannot mount on %s\n", argv[2]);
		goto out_signals;
	}
	if (fuse_daemonize(fg)) {
		fprintf(stderr, "stallfs: cannot detach\n");
		goto out_unmount;
	}
	lc = fuse_loop_cfg_create();
	if (!lc)
		goto out_unmount;
	fuse_loop_cfg_set_clone_fd(lc, 0);
	fuse_loop_cfg_set_max_threads(lc, 64);
	ret = fuse_session_loop_mt(session, lc) ? 1 : 0;
	fuse_loop_cfg_destroy(lc);
out_unmount:
	atomic_store(&stalled, false);
	fuse_session_unmount(session);
out_signals:
	fuse_remove_signal_handlers(session);
out_destroy:
	fuse_session_destroy(session);
	fuse_opt_free_args(&args);
	close(backing);
	return ret;
}
