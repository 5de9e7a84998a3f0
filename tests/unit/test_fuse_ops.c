/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_fuse_ops.c - fuse.c's FUSE ops without /dev/fuse: each op called
 * as a transport calls it (fuse_ops.h), answering through a fake reply
 * table that records every reply of every request.
 *
 * The array is real: members in the scratch directory, opened and started
 * with the fake member backend (fake_ioq.h), with worker threads
 * (fx_threads2: the reply comes from a worker) and without (fx_inline0:
 * from the submitting thread, inside the op).  After each request the
 * test waits for its first reply, then for the request pool to come home
 * (rf_fuse_fs_drain), so that a second reply would have been recorded by
 * then; every request must have exactly one.
 *
 * What is checked: lookup, getattr, open, read, write, flush, fsync,
 * setattr (the size of the image fixed, of a control file only 0),
 * readdir (offsets, a buffer too small), statfs, readlink, and the md
 * control files read and written; the errno of each bad request (unknown
 * inode, a directory, out of range offsets, a read-only array, a
 * read-only control file, a bad value, a writer who is not the owner);
 * data read back as written (each block holds its own offset), sizes.
 * The negative control: the checker of one reply per request counts a
 * reply planted twice, and each fake reply's kind is told apart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fake_ioq.h"
#include "front/fuse_ops.h"
#include "front/fuse_reply.h"
#include "raidfuse/ctl.h"
#include "fixture.h"

#define MEMBER_BYTES (4u << 20)
#define NMEMBERS 3
#define CHUNK (64u << 10)
#define ROOT 1                  /* FUSE_ROOT_ID */
#define NO_INO 999999           /* no inode has it */
#define REPLY_WAIT_S 20

enum kind { K_NONE, K_ERR, K_ENTRY, K_ATTR, K_BUF, K_WRITE, K_OPEN, K_STATFS, K_READLINK, K_NKINDS };

/* One request's replies: how many, and the first one's content. */
struct rec {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int n;                          /* replies, all kinds */
	enum kind kind;                 /* the first reply's */
	int err;                        /* K_ERR */
	uint64_t ino;                   /* K_ENTRY */
	struct stat st;                 /* K_ENTRY, K_ATTR */
	double timeout;
	char *data;                     /* K_BUF: a copy; K_READLINK: the target */
	size_t len;                     /* K_BUF */
	size_t count;                   /* K_WRITE */
	uint64_t fh;                    /* K_OPEN */
	bool direct_io;
	struct statvfs sv;              /* K_STATFS */
};

static struct rf_array *A;
static void *FS;

/* Every reply: the first one's content kept, all of them counted. */
static struct rec *rec_begin(struct rf_fq *q, enum kind k)
{
	struct rec *r = q->h;

	pthread_mutex_lock(&r->lock);
	if (r->n++)
		return NULL;
	r->kind = k;
	return r;
}

static int rec_end(struct rf_fq *q)
{
	struct rec *r = q->h;

	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

static int f_err(struct rf_fq *q, int err)
{
	struct rec *r = rec_begin(q, K_ERR);

	if (r)
		r->err = err;
	return rec_end(q);
}

static int f_entry(struct rf_fq *q, uint64_t ino, const struct stat *st, double timeout)
{
	struct rec *r = rec_begin(q, K_ENTRY);

	if (r) {
		r->ino = ino;
		r->st = *st;
		r->timeout = timeout;
	}
	return rec_end(q);
}

static int f_attr(struct rf_fq *q, const struct stat *st, double timeout)
{
	struct rec *r = rec_begin(q, K_ATTR);

	if (r) {
		r->st = *st;
		r->timeout = timeout;
	}
	return rec_end(q);
}

static int f_buf(struct rf_fq *q, const void *buf, size_t len)
{
	struct rec *r = rec_begin(q, K_BUF);

	if (r) {
		r->data = malloc(len + 1);
		assert_non_null(r->data);
		if (len)
			memcpy(r->data, buf, len);
		r->data[len] = '\0';
		r->len = len;
	}
	return rec_end(q);
}

static int f_write(struct rf_fq *q, size_t count)
{
	struct rec *r = rec_begin(q, K_WRITE);

	if (r)
		r->count = count;
	return rec_end(q);
}

static int f_open(struct rf_fq *q, uint64_t fh, bool direct_io)
{
	struct rec *r = rec_begin(q, K_OPEN);

	if (r) {
		r->fh = fh;
		r->direct_io = direct_io;
	}
	return rec_end(q);
}

static int f_statfs(struct rf_fq *q, const struct statvfs *sv)
{
	struct rec *r = rec_begin(q, K_STATFS);

	if (r)
		r->sv = *sv;
	return rec_end(q);
}

static int f_readlink(struct rf_fq *q, const char *target)
{
	struct rec *r = rec_begin(q, K_READLINK);

	if (r) {
		r->data = strdup(target);
		assert_non_null(r->data);
	}
	return rec_end(q);
}

/* A directory entry in the fake's own format, 8-byte aligned. */
struct fdirent {
	uint64_t ino;
	int64_t next;
	uint32_t mode;
	uint16_t reclen, namelen;
	char name[];
};

/* Not a reply: fills readdir's buffer. */
static size_t f_dirent(struct rf_fq *q, char *buf, size_t size, const char *name, uint64_t ino, mode_t mode,
		       off_t next)
{
	size_t len = (sizeof(struct fdirent) + strlen(name) + 1 + 7) & ~(size_t)7;
	struct fdirent *d = (struct fdirent *)buf;

	if (len > size)
		return len;
	memset(d, 0, len);
	d->ino = ino;
	d->next = next;
	d->mode = mode;
	d->reclen = (uint16_t)len;
	d->namelen = (uint16_t)strlen(name);
	memcpy(d->name, name, d->namelen);
	return len;
}

static int f_groups(struct rf_fq *q, gid_t *groups, int max)
{
	return 0;
}

static const struct rf_fq_ops fake_reply = {
	.err = f_err,
	.entry = f_entry,
	.attr = f_attr,
	.buf = f_buf,
	.write = f_write,
	.open = f_open,
	.statfs = f_statfs,
	.readlink = f_readlink,
	.dirent = f_dirent,
	.groups = f_groups,
};

static void rec_init(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
}

static void rec_free(struct rec *r)
{
	free(r->data);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
}

/* A request from uid (the daemon's own user unless a test says). */
static struct rf_fq fq_as(struct rec *r, uid_t uid)
{
	return (struct rf_fq){ .ops = &fake_reply, .fs = FS, .h = r, .uid = uid, .gid = getgid(), .pid = getpid() };
}

/* After the op returned: its first reply (within REPLY_WAIT_S), then
 * every request of the pool home, so any later reply has come too. */
static void settle(struct rec *r)
{
	struct timespec until;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += REPLY_WAIT_S;
	pthread_mutex_lock(&r->lock);
	while (!r->n && ret != ETIMEDOUT)
		ret = pthread_cond_timedwait(&r->cond, &r->lock, &until);
	pthread_mutex_unlock(&r->lock);
	rf_fuse_fs_drain(FS);
}

/* The checker: whether r got exactly one reply (printed otherwise). */
static bool one_reply(const struct rec *r, const char *what)
{
	if (r->n == 1)
		return true;
	print_message("%s: %d replies\n", what, r->n);
	return false;
}

#define CALL_AS(r, uid, op, ...)                                      \
	do {                                                          \
		struct rf_fq q_ = fq_as((r), (uid));                  \
		rec_init(r);                                          \
		rf_fuse_fops.op(&q_, __VA_ARGS__);                    \
		settle(r);                                            \
		assert_true(one_reply((r), #op " " #__VA_ARGS__));    \
	} while (0)
#define CALL(r, op, ...) CALL_AS(r, getuid(), op, __VA_ARGS__)

/* The op's one reply was the error e. */
#define EXPECT_ERR(e, op, ...)                                        \
	do {                                                          \
		struct rec r_;                                        \
		CALL(&r_, op, __VA_ARGS__);                           \
		assert_int_equal(r_.kind, K_ERR);                     \
		assert_int_equal(r_.err, (e));                        \
		rec_free(&r_);                                        \
	} while (0)

/* ---- helpers over the ops ---- */

static uint64_t lookup(uint64_t parent, const char *name)
{
	struct rec r;
	uint64_t ino;

	CALL(&r, lookup, parent, name);
	assert_int_equal(r.kind, K_ENTRY);
	assert_int_equal(r.st.st_ino, r.ino);
	ino = r.ino;
	rec_free(&r);
	return ino;
}

static uint64_t do_open(uint64_t ino, int flags)
{
	struct rec r;
	uint64_t fh;

	CALL(&r, open, ino, flags);
	assert_int_equal(r.kind, K_OPEN);
	assert_true(r.direct_io);
	fh = r.fh;
	rec_free(&r);
	return fh;
}

static void do_release(uint64_t ino, uint64_t fh)
{
	EXPECT_ERR(0, release, ino, fh);
}

/* A write's count. */
static size_t do_write(uint64_t ino, const void *buf, size_t size, off_t off)
{
	struct rec r;
	size_t n;

	CALL(&r, write, ino, buf, size, off, 1);
	if (r.kind != K_WRITE)
		fail_msg("write of %zu at %lld: reply %d, errno %d", size, (long long)off, r.kind, r.err);
	n = r.count;
	rec_free(&r);
	return n;
}

/* A read's bytes into out (its length), malloc'd. */
static size_t do_read(uint64_t ino, size_t size, off_t off, uint64_t fh, char **out)
{
	struct rec r;
	size_t n;

	CALL(&r, read, ino, size, off, fh);
	if (r.kind != K_BUF)
		fail_msg("read of %zu at %lld: reply %d, errno %d", size, (long long)off, r.kind, r.err);
	n = r.len;
	*out = r.data;
	r.data = NULL;
	rec_free(&r);
	return n;
}

/* Self-describing data: each 8-byte word holds its own image offset and a tag. */
static void fill(char *buf, size_t len, uint64_t off, uint64_t tag)
{
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t v = (off + i) ^ (tag << 48);

		memcpy(buf + i, &v, 8);
	}
}

/* ---- setups ---- */

static int open_array(bool ro)
{
	const struct fx_array fa = { .what = "fo", .level = 5, .n = NMEMBERS, .chunk = CHUNK };
	struct rf_config cfg;

	fx_make_members("fo", NMEMBERS, MEMBER_BYTES, false);
	fx_config(&cfg, &fa);
	cfg.group_thread_cnt = fx_gtc;
	cfg.readonly = ro;
	fake_reset();
	A = fx_open(&cfg, "fo", fake_ioq_init);
	FS = rf_fuse_fs_new(A);
	return FS ? 0 : -1;
}

static int setup_threads(void **state)
{
	return fx_threads2(state) ?: open_array(false);
}

static int setup_inline(void **state)
{
	return fx_inline0(state) ?: open_array(false);
}

static int setup_ro(void **state)
{
	return fx_threads2(state) ?: open_array(true);
}

static int teardown(void **state)
{
	rf_fuse_fs_free(FS);
	rf_array_close(A);
	FS = NULL;
	A = NULL;
	return 0;
}

/* ---- the tests ---- */

static void test_lookup_getattr(void **state)
{
	uint64_t img = lookup(ROOT, rf_array_name(A)), md = lookup(ROOT, RF_CTL_ROOT_MD);
	struct rec r;

	CALL(&r, getattr, img);
	assert_int_equal(r.kind, K_ATTR);
	assert_true(S_ISREG(r.st.st_mode));
	assert_int_equal(r.st.st_mode & 0777, 0600);
	assert_int_equal(r.st.st_size, (off_t)rf_array_size(A));
	assert_int_equal(rf_array_size(A), (uint64_t)(NMEMBERS - 1) * MEMBER_BYTES);
	rec_free(&r);
	CALL(&r, getattr, md);
	assert_int_equal(r.kind, K_ATTR);
	assert_true(S_ISDIR(r.st.st_mode));
	rec_free(&r);
	CALL(&r, getattr, ROOT);
	assert_true(S_ISDIR(r.st.st_mode));
	rec_free(&r);
	lookup(md, "level");
	lookup(ROOT, RF_CTL_ROOT_MDSTAT);

	EXPECT_ERR(ENOENT, lookup, ROOT, "no-such-file");
	EXPECT_ERR(ENOENT, lookup, NO_INO, "x");
	EXPECT_ERR(ENOENT, lookup, 0, "x");
	EXPECT_ERR(ENOTDIR, lookup, img, "x");
	EXPECT_ERR(ENOENT, getattr, NO_INO);
	EXPECT_ERR(ENOENT, getattr, 0);
	EXPECT_ERR(ENOENT, getattr, (uint64_t)1 << 40);   /* a device id never given */
}

static void test_open(void **state)
{
	uint64_t img = lookup(ROOT, rf_array_name(A)), md = lookup(ROOT, RF_CTL_ROOT_MD);
	uint64_t ro = lookup(md, "degraded");

	/* the image: fh says whether the opener may write */
	assert_int_equal(do_open(img, O_RDONLY), 0);
	assert_int_equal(do_open(img, O_RDWR), 1);
	assert_int_equal(do_open(img, O_WRONLY | O_TRUNC), 1);
	EXPECT_ERR(EISDIR, open, md, O_RDONLY);
	EXPECT_ERR(EISDIR, open, ROOT, O_RDONLY);
	EXPECT_ERR(ENOENT, open, NO_INO, O_RDONLY);
	/* a read-only control file refuses a writer */
	EXPECT_ERR(EACCES, open, ro, O_WRONLY);
	EXPECT_ERR(EACCES, open, ro, O_RDWR);
	do_release(ro, do_open(ro, O_RDONLY));
}

/* Writes of several sizes and alignments read back as written; the
 * image's end cuts a write short, refuses one past it, and ends reads. */
static void test_read_write(void **state)
{
	uint64_t img = lookup(ROOT, rf_array_name(A)), size = rf_array_size(A);
	static const struct {
		uint64_t off;
		size_t len;
	} io[] = {
		{ 0, 4096 }, { 4096, 512 }, { 12345, 777 }, { CHUNK - 100, 200 }, { 3 * CHUNK, 2 * CHUNK },
		{ 1u << 20, 1u << 20 }, { (3u << 20) - 4096, 8192 },
	};
	char *buf = malloc(1u << 20), *got;
	uint64_t fh = do_open(img, O_RDWR);
	size_t i, n;

	assert_non_null(buf);
	for (i = 0; i < sizeof(io) / sizeof(io[0]); i++) {
		fill(buf, io[i].len, io[i].off, i + 1);
		assert_int_equal(do_write(img, buf, io[i].len, (off_t)io[i].off), io[i].len);
	}
	EXPECT_ERR(0, fsync, img, fh);
	EXPECT_ERR(0, flush, img, fh);
	for (i = 0; i < sizeof(io) / sizeof(io[0]); i++) {
		/* the writes do not overlap: each reads back whole */
		fill(buf, io[i].len, io[i].off, i + 1);
		n = do_read(img, io[i].len, (off_t)io[i].off, fh, &got);
		assert_int_equal(n, io[i].len);
		assert_memory_equal(got, buf, n);
		free(got);
	}

	/* the end: a write across it is cut short, at or past it refused */
	fill(buf, 8192, size - 4096, 99);
	assert_int_equal(do_write(img, buf, 8192, (off_t)(size - 4096)), 4096);
	n = do_read(img, 8192, (off_t)(size - 4096), fh, &got);
	assert_int_equal(n, 4096);
	assert_memory_equal(got, buf, 4096);
	free(got);
	EXPECT_ERR(ENOSPC, write, img, buf, 4096, (off_t)size, fh);
	EXPECT_ERR(ENOSPC, write, img, buf, 4096, (off_t)size + (1 << 20), fh);
	EXPECT_ERR(EINVAL, write, img, buf, 4096, -4096, fh);
	assert_int_equal(do_write(img, buf, 0, 0), 0);
	/* reads at or past the end, at a negative offset, of nothing: empty */
	assert_int_equal(do_read(img, 4096, (off_t)size, fh, &got), 0);
	free(got);
	assert_int_equal(do_read(img, 4096, (off_t)size + 4096, fh, &got), 0);
	free(got);
	assert_int_equal(do_read(img, 4096, -1, fh, &got), 0);
	free(got);
	assert_int_equal(do_read(img, 0, 0, fh, &got), 0);
	free(got);
	/* more than the largest IO: one of 1 MiB */
	assert_int_equal(do_read(img, 4u << 20, 0, fh, &got), 1u << 20);
	free(got);

	/* not the image */
	EXPECT_ERR(ENOENT, write, NO_INO, buf, 4096, 0, fh);
	EXPECT_ERR(ENOENT, read, NO_INO, 4096, 0, fh);
	EXPECT_ERR(EISDIR, write, ROOT, buf, 4096, 0, fh);
	EXPECT_ERR(EISDIR, read, ROOT, 4096, 0, fh);
	/* a control file or a reader has nothing to flush; fsync of one is a no-op */
	EXPECT_ERR(0, flush, img, 0);
	EXPECT_ERR(0, fsync, lookup(ROOT, RF_CTL_ROOT_MDSTAT), 0);
	free(buf);
}

/* The same with the request's member IO on the FUSE thread (no workers). */
static void test_read_write_inline(void **state)
{
	test_read_write(state);
}

static void test_read_only_array(void **state)
{
	uint64_t img = lookup(ROOT, rf_array_name(A)), md = lookup(ROOT, RF_CTL_ROOT_MD);
	char buf[4096] = { 0 }, *got;
	struct rec r;
	uint64_t c;

	CALL(&r, getattr, img);
	assert_int_equal(r.st.st_mode & 0777, 0400);
	rec_free(&r);
	EXPECT_ERR(EROFS, open, img, O_RDWR);
	EXPECT_ERR(EROFS, open, img, O_WRONLY);
	/* a write that got here anyway (fh of a reader) */
	EXPECT_ERR(EROFS, write, img, buf, sizeof(buf), 0, 0);
	assert_int_equal(do_read(img, 4096, 0, do_open(img, O_RDONLY), &got), 4096);
	free(got);
	/* its control files still take values */
	c = lookup(md, "sync_speed_min");
	do_release(c, do_open(c, O_WRONLY));
}

/* setattr: the image's size is fixed, a control file takes a size of 0
 * (echo VALUE > file) when it takes values, chmod only on the image. */
static void test_setattr(void **state)
{
	uint64_t img = lookup(ROOT, rf_array_name(A)), md = lookup(ROOT, RF_CTL_ROOT_MD);
	uint64_t scs = lookup(md, "stripe_cache_size"), ro = lookup(md, "degraded");
	struct stat st = { 0 };
	struct rec r;

	st.st_size = (off_t)rf_array_size(A);
	CALL(&r, setattr, img, &st, FATTR_SIZE);
	assert_int_equal(r.kind, K_ATTR);
	assert_int_equal(r.st.st_size, st.st_size);
	rec_free(&r);
	st.st_size = 0;
	EXPECT_ERR(EPERM, setattr, img, &st, FATTR_SIZE);
	st.st_size = (off_t)rf_array_size(A) + 4096;
	EXPECT_ERR(EPERM, setattr, img, &st, FATTR_SIZE);
	st.st_size = 0;
	EXPECT_ERR(EISDIR, setattr, md, &st, FATTR_SIZE);
	EXPECT_ERR(EACCES, setattr, ro, &st, FATTR_SIZE);
	CALL(&r, setattr, scs, &st, FATTR_SIZE);
	assert_int_equal(r.kind, K_ATTR);
	rec_free(&r);
	st.st_size = 1;
	EXPECT_ERR(EPERM, setattr, scs, &st, FATTR_SIZE);
	EXPECT_ERR(ENOENT, setattr, NO_INO, &st, FATTR_SIZE);
	/* chmod: the image, not a control file */
	st.st_mode = 0640;
	CALL(&r, setattr, img, &st, FATTR_MODE);
	assert_int_equal(r.kind, K_ATTR);
	assert_int_equal(r.st.st_mode & 0777, 0640);
	rec_free(&r);
	EXPECT_ERR(EPERM, setattr, scs, &st, FATTR_MODE);
}

/* A control file's text, read from its start in pieces of piece bytes. */
static char *ctl_text(uint64_t ino, size_t piece)
{
	uint64_t fh = do_open(ino, O_RDONLY);
	char *all = calloc(1, 1), *got;
	size_t len = 0, n;

	assert_non_null(all);
	for (;;) {
		n = do_read(ino, piece, (off_t)len, fh, &got);
		if (!n) {
			free(got);
			break;
		}
		all = realloc(all, len + n + 1);
		assert_non_null(all);
		memcpy(all + len, got, n);
		len += n;
		all[len] = '\0';
		free(got);
	}
	do_release(ino, fh);
	return all;
}

static void test_control_files(void **state)
{
	uint64_t md = lookup(ROOT, RF_CTL_ROOT_MD), scs = lookup(md, "stripe_cache_size");
	uint64_t level = lookup(md, "level"), mdstat = lookup(ROOT, RF_CTL_ROOT_MDSTAT), fh;
	uint64_t ro = lookup(md, "degraded");
	char *t;
	struct rec r;

	t = ctl_text(level, 4096);
	assert_string_equal(t, "raid5\n");
	free(t);
	t = ctl_text(level, 2);         /* in pieces: the same text */
	assert_string_equal(t, "raid5\n");
	free(t);
	t = ctl_text(mdstat, 4096);
	assert_non_null(strstr(t, "raid5"));
	free(t);

	fh = do_open(scs, O_WRONLY);
	assert_int_equal(do_write(scs, "512\n", 4, 0), 4);
	/* a bad value, one out of range: EINVAL, nothing changed */
	EXPECT_ERR(EINVAL, write, scs, "many\n", 5, 0, fh);
	EXPECT_ERR(EINVAL, write, scs, "5\n", 2, 0, fh);
	/* only the owner or root stores, whoever opened it */
	CALL_AS(&r, getuid() + 4242, write, scs, "64\n", 3, 0, fh);
	assert_int_equal(r.kind, K_ERR);
	assert_int_equal(r.err, EACCES);
	rec_free(&r);
	do_release(scs, fh);
	t = ctl_text(scs, 4096);
	assert_string_equal(t, "512\n");
	free(t);
	/* a read-only one refuses a value (even from a reader's fh) */
	t = ctl_text(ro, 4096);
	fh = do_open(ro, O_RDONLY);
	EXPECT_ERR(EACCES, write, ro, "8192\n", 5, 0, fh);
	do_release(ro, fh);
	{
		char *t2 = ctl_text(ro, 4096);

		assert_string_equal(t2, t);
		free(t2);
	}
	free(t);
}

/* A readdir's entries, "name:mode-type" joined by spaces. */
static size_t list(uint64_t ino, size_t size, off_t off, char *out, size_t outlen, off_t *last)
{
	struct rec r;
	size_t at = 0, n = 0, o = 0;

	out[0] = '\0';
	CALL(&r, readdir, ino, size, off);
	assert_int_equal(r.kind, K_BUF);
	assert_true(r.len <= size);
	while (at < r.len) {
		const struct fdirent *d = (const struct fdirent *)(r.data + at);

		o += (size_t)snprintf(out + o, outlen - o, "%s%.*s", n ? " " : "", d->namelen, d->name);
		*last = d->next;
		at += d->reclen;
		n++;
	}
	assert_int_equal(at, r.len);
	rec_free(&r);
	return n;
}

static void test_readdir(void **state)
{
	uint64_t md = lookup(ROOT, RF_CTL_ROOT_MD), img = lookup(ROOT, rf_array_name(A));
	char names[8192], rest[8192], expect[512];
	off_t last = 0, last2 = 0;
	size_t n, n2;

	n = list(ROOT, 4096, 0, names, sizeof(names), &last);
	snprintf(expect, sizeof(expect), ". .. %s %s %s", rf_array_name(A), RF_CTL_ROOT_MDSTAT, RF_CTL_ROOT_MD);
	assert_string_equal(names, expect);
	assert_int_equal(n, 5);
	assert_int_equal(last, 5);
	/* from an offset on: the rest */
	assert_int_equal(list(ROOT, 4096, 2, rest, sizeof(rest), &last2), 3);
	assert_string_equal(rest, strchr(strchr(names, ' ') + 1, ' ') + 1);
	assert_int_equal(list(ROOT, 4096, 5, rest, sizeof(rest), &last2), 0);

	/* md/: the attributes, then each device's dev-NAME and rdN */
	n = list(md, 4096, 0, names, sizeof(names), &last);
	assert_non_null(strstr(names, " level "));
	assert_non_null(strstr(names, " stripe_cache_size "));
	assert_non_null(strstr(names, " rd0"));
	assert_non_null(strstr(names, " rd2"));
	assert_non_null(strstr(names, " dev-"));
	/* a small buffer: fewer entries, and the next call goes on from there */
	n2 = list(md, 128, 0, rest, sizeof(rest), &last2);
	assert_true(n2 > 0 && n2 < n);
	assert_int_equal(last2, (off_t)n2);
	assert_int_equal(list(md, 8192, last2, rest + strlen(rest) + 1, sizeof(rest) - strlen(rest) - 1, &last2),
			 n - n2);
	rest[strlen(rest)] = ' ';
	assert_string_equal(rest, names);

	EXPECT_ERR(ENOTDIR, readdir, img, 4096, 0);
	EXPECT_ERR(ENOENT, readdir, NO_INO, 4096, 0);
}

static void test_statfs_readlink(void **state)
{
	uint64_t md = lookup(ROOT, RF_CTL_ROOT_MD), rd0 = lookup(md, "rd0");
	char target[300];
	struct rec r;

	CALL(&r, statfs, ROOT);
	assert_int_equal(r.kind, K_STATFS);
	assert_int_equal(r.sv.f_blocks, rf_array_size(A) / 4096);
	rec_free(&r);

	CALL(&r, readlink, rd0);
	assert_int_equal(r.kind, K_READLINK);
	assert_true(!strncmp(r.data, "dev-", 4));
	snprintf(target, sizeof(target), "%s", r.data);
	rec_free(&r);
	lookup(md, target);     /* the link's target is there */
	EXPECT_ERR(EINVAL, readlink, md);
}

/* The negative control: a request answered twice must fail the checker.
 * A real request (getattr, and a write that a worker may answer) gets
 * its one reply; then the same reply is sent again, as an op with a
 * second reply on some path would: the count says 2 and the checker
 * says no.  And the fake tells the kinds apart: an error is no write. */
static void test_double_reply_caught(void **state)
{
	uint64_t img = lookup(ROOT, rf_array_name(A));
	char buf[4096];
	struct rec r;
	struct rf_fq q;

	CALL(&r, getattr, img);
	q = fq_as(&r, getuid());
	q.ops->attr(&q, &r.st, 0);
	assert_int_equal(r.n, 2);
	assert_false(one_reply(&r, "planted getattr"));
	rec_free(&r);

	fill(buf, sizeof(buf), 0, 7);
	CALL(&r, write, img, buf, sizeof(buf), 0, 1);
	assert_int_equal(r.kind, K_WRITE);
	q = fq_as(&r, getuid());
	q.ops->err(&q, EIO);
	assert_false(one_reply(&r, "planted write"));
	assert_int_equal(r.kind, K_WRITE);      /* the first reply is the one kept */
	rec_free(&r);

	/* and a request never answered fails it too */
	rec_init(&r);
	assert_false(one_reply(&r, "unanswered"));
	rec_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lookup_getattr, setup_threads, teardown),
		cmocka_unit_test_setup_teardown(test_open, setup_threads, teardown),
		cmocka_unit_test_setup_teardown(test_read_write, setup_threads, teardown),
		cmocka_unit_test_setup_teardown(test_read_write_inline, setup_inline, teardown),
		cmocka_unit_test_setup_teardown(test_read_only_array, setup_ro, teardown),
		cmocka_unit_test_setup_teardown(test_setattr, setup_threads, teardown),
		cmocka_unit_test_setup_teardown(test_control_files, setup_threads, teardown),
		cmocka_unit_test_setup_teardown(test_readdir, setup_threads, teardown),
		cmocka_unit_test_setup_teardown(test_statfs_readlink, setup_threads, teardown),
		cmocka_unit_test_setup_teardown(test_double_reply_caught, setup_threads, teardown),
	};

	return fx_run_tests("fuse_ops", tests);
}
