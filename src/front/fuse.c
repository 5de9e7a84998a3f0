/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuse.c - the FUSE ops on the array image and the control files.
 *
 * The ops (do_*) answer through fuse_reply.h's struct rf_fq, whichever
 * transport brought the request: libfuse's low-level API (fuse_serve.c's
 * op_* callbacks and ll_* replies), raidfuse's own FUSE over io_uring
 * (fuse_uring.c), or a unit test (fuse_ops.h); rf_fuse_fops lists them.
 * What an inode number stands for, the attributes and the permission
 * checks are fuse_inode.c's.  A read or write of the image goes straight
 * to the members where it can (fuse_direct.c), else takes a request from
 * the pool and submits it (fuse_pool.c); whoever ends the request
 * replies.
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
 * Locks: an open control file's lock (struct ctl_open) is held while its
 * text is formatted, which may take any lock of the core (engine.h).
 *
 * What it does NOT do: mount, negotiate INIT or read /dev/fuse
 * (fuse_serve.c, fuse_uring.c), number inodes (fuse_inode.c), or show
 * and store the control files' values (ctl.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "raidfuse/array.h"
#include "raidfuse/ctl.h"
#include "raidfuse/lockcheck.h"
#include "front/fuse_int.h"
#include "front/fuse_ops.h"
#include "front/fuse_reply.h"

#define STATIC_TIMEOUT 3600.0
#define DYN_TIMEOUT 0.0

/* An open control file: the text its last read at offset 0 formatted.
 * Every read from the start formats afresh; a read further on continues
 * the same text (as sysfs does), so a reader taking it in pieces never
 * sees two versions stitched together. */
struct ctl_open {
	pthread_mutex_t lock;
	char *text;             /* lock */
	int len;                /* lock */
};

/* md/'s per-device entries: dev-NAME and rdN.  The entry's inode or 0. */
static fuse_ino_t lookup_dev_entry(struct fs *fs, const char *name)
{
	int id, slot;

	if (!rf_ctl_dev_entry(fs->a, name)) {
		id = rf_fuse_inode_name_id(fs, name + 4);
		return id < 0 ? 0 : rf_fuse_inode_ino_dev(id, 0);
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

	ret = rf_fuse_inode_ref_live(fs, parent, &dir);
	if (!ret && !rf_fuse_inode_ref_is_dir(&dir))
		ret = -ENOTDIR;
	if (!ret && dir.kind == REF_DEVDIR) {
		const struct rf_ctl_attr *at = rf_ctl_dev_find(name);

		ret = at ? 0 : -ENOENT;
		if (at)
			ino = rf_fuse_inode_ino_dev(dir.id, 1 + (int)(at - rf_ctl_dev_attrs));
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
	if (ret || (ret = rf_fuse_inode_ref_of(fs, ino, &r))) {
		q->ops->err(q, -ret);
		return;
	}
	rf_fuse_inode_fill_attr(fs, ino, &r, &st);
	q->ops->entry(q, ino, &st, timeout);
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
	int ret = rf_fuse_inode_ref_live(fs, ino, &r);

	if (ret) {
		q->ops->err(q, -ret);
		return;
	}
	rf_fuse_inode_fill_attr(fs, ino, &r, &st);
	q->ops->attr(q, &st, attr_timeout(&r));
}

static void do_readlink(struct rf_fq *q, uint64_t ino)
{
	struct fs *fs = q->fs;
	char target[300];
	struct ref r;
	int ret = rf_fuse_inode_ref_of(fs, ino, &r);

	if (!ret && r.kind != REF_RD)
		ret = -EINVAL;
	if (!ret)
		ret = rf_ctl_rd_target(fs->a, r.slot, target, sizeof(target));
	if (ret < 0)
		q->ops->err(q, -ret);
	else
		q->ops->readlink(q, target);
}

static void do_setattr(struct rf_fq *q, uint64_t ino, const struct stat *attr, int to_set)
{
	struct fs *fs = q->fs;
	struct ref r;
	struct stat st;
	int ret = rf_fuse_inode_ref_live(fs, ino, &r);

	if (ret) {
		q->ops->err(q, -ret);
		return;
	}
	rf_fuse_inode_fill_attr(fs, ino, &r, &st);
	if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		ret = rf_fuse_inode_image_chown(q, fs, &r, attr, to_set);
		if (ret) {
			q->ops->err(q, -ret);
			return;
		}
		rf_fuse_inode_fill_attr(fs, ino, &r, &st);
	}
	if ((to_set & FUSE_SET_ATTR_SIZE) && !rf_fuse_inode_ref_is_dir(&r) && rf_fuse_inode_may_open(q, &st, false, true)) {
		q->ops->err(q, EACCES);
		return;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		/* The image's size is the array's: truncating to it is a
		 * no-op, anything else is refused like on a block device.  A
		 * control file takes "truncate to 0" (echo VALUE > file) as
		 * sysfs does: the write that follows is the value. */
		if (rf_fuse_inode_ref_is_ctl(&r) && !rf_fuse_inode_attr_writable(r.attr)) {
			q->ops->err(q, EACCES);
			return;
		}
		if (rf_fuse_inode_ref_is_dir(&r) || r.kind == REF_RD ||
		    attr->st_size != (rf_fuse_inode_ref_is_ctl(&r) ? 0 : st.st_size)) {
			q->ops->err(q, rf_fuse_inode_ref_is_dir(&r) ? EISDIR : EPERM);
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
	int ret = rf_fuse_inode_ref_live(fs, ino, &r);
	uint64_t fh;
	bool ctl;

	if (ret) {
		q->ops->err(q, -ret);
		return;
	}
	ctl = rf_fuse_inode_ref_is_ctl(&r);
	n = r.n;
	if (rf_fuse_inode_ref_is_dir(&r) || r.kind == REF_RD) {
		q->ops->err(q, rf_fuse_inode_ref_is_dir(&r) ? EISDIR : ELOOP);
		return;
	}
	/* The modes hold even where the kernel does not check them. */
	rf_fuse_inode_fill_attr(fs, ino, &r, &st);
	if (rf_fuse_inode_may_open(q, &st, (flags & O_ACCMODE) != O_WRONLY, (flags & O_ACCMODE) != O_RDONLY)) {
		q->ops->err(q, EACCES);
		return;
	}
	/* A read-only attribute cannot be opened for writing, a write-only
	 * one (md/new_dev) for reading (sysfs: EACCES). */
	if (ctl && (((flags & O_ACCMODE) != O_RDONLY && !rf_fuse_inode_attr_writable(r.attr)) ||
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
	int ret = rf_fuse_inode_ref_of(fs, ino, &r);

	if (ret || rf_fuse_inode_ref_is_dir(&r) || r.kind == REF_RD) {
		q->ops->err(q, ret ? -ret : rf_fuse_inode_ref_is_dir(&r) ? EISDIR : EINVAL);
		return;
	}
	if (rf_fuse_inode_ref_is_ctl(&r)) {
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
	if (rf_fuse_direct_read(fs, q, (uint64_t)off, size))
		return;
	rf_fuse_pool_submit(fs, q, RF_REQ_READ, (uint64_t)off, size, NULL);
}

static void do_write(struct rf_fq *q, uint64_t ino, const char *buf, size_t size, off_t off, uint64_t fh)
{
	struct fs *fs = q->fs;
	uint64_t end = rf_array_size(fs->a);
	struct ref r;
	int ret = rf_fuse_inode_ref_of(fs, ino, &r);

	if (ret || rf_fuse_inode_ref_is_dir(&r) || r.kind == REF_RD) {
		q->ops->err(q, ret ? -ret : rf_fuse_inode_ref_is_dir(&r) ? EISDIR : EINVAL);
		return;
	}
	if (rf_fuse_inode_ref_is_ctl(&r)) {
		gid_t groups[RF_FUSE_GROUPS];
		struct rf_ctl_cred who;

		/* One write, one value, wherever it lands (sysfs ignores the
		 * offset too).  A setter that drains blocks this thread only.
		 * Only the owner and root store, whoever opened the file; a
		 * path is opened as the writer (md/new_dev). */
		rf_fuse_inode_cred_of(q, &who, r.attr->as_writer ? groups : NULL, RF_FUSE_GROUPS);
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
	rf_fuse_pool_submit(fs, q, RF_REQ_WRITE, (uint64_t)off, size, buf);
}

/* close(): the members are flushed for an opener that could write.  One
 * that only read has nothing to flush, and its close must not wait while
 * a suspended array holds writes (and flushes) back: reads go on. */
static void do_flush(struct rf_fq *q, uint64_t ino, uint64_t fh)
{
	if (!rf_fuse_inode_is_image(q->fs, ino) || !fh) {
		q->ops->err(q, 0);
		return;
	}
	rf_fuse_pool_submit(q->fs, q, RF_REQ_FLUSH, 0, 0, NULL);
}

static void do_fsync(struct rf_fq *q, uint64_t ino, uint64_t fh)
{
	if (!rf_fuse_inode_is_image(q->fs, ino)) {
		q->ops->err(q, 0);
		return;
	}
	rf_fuse_pool_submit(q->fs, q, RF_REQ_FLUSH, 0, 0, NULL);
}

static void do_release(struct rf_fq *q, uint64_t ino, uint64_t fh)
{
	struct ctl_open *c = (struct ctl_open *)(uintptr_t)fh;
	struct ref r;

	/* By the inode's shape alone: the device may be gone by now. */
	if (!rf_fuse_inode_ref_of(q->fs, ino, &r) && rf_fuse_inode_ref_is_ctl(&r) && c) {
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
		id = rf_fuse_inode_name_id(fs, ents[i].name + 4);
		if (id >= 0)
			list_add(l, ents[i].name, rf_fuse_inode_ino_dev(id, 0), S_IFDIR);
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
	int i, ret = rf_fuse_inode_ref_live(fs, ino, &dir);

	if (!ret && !rf_fuse_inode_ref_is_dir(&dir))
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
			list_add(&l, rf_ctl_dev_attrs[k].name, rf_fuse_inode_ino_dev(dir.id, 1 + (int)k), S_IFREG);
	} else {
		list_add(&l, "..", rf_fuse_inode_ino_of(fs, &fs->tree.nodes[dir.n->parent]), S_IFDIR);
		for (i = 1; i < fs->tree.n; i++) {
			const struct rf_ctl_node *c = &fs->tree.nodes[i];

			if (c->parent == dir.n - fs->tree.nodes && rf_ctl_node_present(fs->a, c))
				list_add(&l, c->name, rf_fuse_inode_ino_of(fs, c), c->kind == RF_CTL_DIR ? S_IFDIR : S_IFREG);
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
	sv.f_files = (fsfilcnt_t)fs->tree.n + (fsfilcnt_t)rf_member_ndevs(fs->a) * (2 + rf_ctl_dev_nattrs);
	sv.f_namemax = 255;
	q->ops->statfs(q, &sv);
}

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
