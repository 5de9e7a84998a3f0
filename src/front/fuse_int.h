/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuse_int.h - what the files of the FUSE front end share (not installed):
 * the served file system (struct fs), what an inode number stands for
 * (struct ref), and the functions one of them calls in another:
 *
 *   fuse.c         the ops (do_*, rf_fuse_fops), whichever transport calls them
 *   fuse_inode.c   inode numbers, the files' attributes, who may open or change them
 *   fuse_pool.c    the request pool: a read, write or flush of the image submitted
 *   fuse_direct.c  reads answered straight from the members (mappings, splice)
 *   fuse_serve.c   libfuse's glue, the mount and the loop (rf_fuse_run())
 *   fuse_fs.c      struct fs made and freed; the ops without a mount (fuse_ops.h)
 *
 * Their locks are leaves (engine.h): the request pool's fs->lock, img_lock
 * and names_lock; an open control file's lock (fuse.c) comes before every
 * other lock of the program.
 *
 * These files are the FUSE module: the only ones that include
 * fuse_lowlevel.h (here).
 */
#ifndef RAIDFUSE_FRONT_FUSE_INT_H
#define RAIDFUSE_FRONT_FUSE_INT_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "raidfuse/array.h"
#include "raidfuse/ctl.h"
#include "front/fuse_reply.h"

/* The largest read or write, bytes. */
#define RF_MAX_IO (1u << 20)
/* Supplementary groups taken from a writer of md/new_dev (more: none). */
#define RF_FUSE_GROUPS 1024

/* Inode numbers (fuse_inode.c): tree nodes from the root on, rdN links
 * from INO_RD_BASE, dev-NAME/ and its files from INO_DEV_BASE. */
enum { INO_ROOT = FUSE_ROOT_ID };
#define INO_RD_BASE ((fuse_ino_t)1 << 32)
#define INO_DEV_BASE ((fuse_ino_t)1 << 33)

/* The served file system: the array, its file tree and the state of
 * every part of the front end; one per mount (fuse_fs.c makes it). */
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
	/* Whether se and uring may still carry a notification (the array's
	 * size changed): cleared under notify_lock before either is freed,
	 * as a reshape may end on its own thread while the mount goes. */
	pthread_mutex_t notify_lock;
	bool notify_live;
	/* Large reads by splice (libfuse's transport); set before the
	 * session starts (INIT may turn splice off), then read only.  splice_nofallback (tests only):
	 * a failed splice answers its error instead of going the usual way. */
	bool splice, splice_nofallback;
	uint32_t splice_min, splice_max;        /* reads of [min, max] bytes are spliced */
	uint32_t max_read;              /* the kernel's largest read request (mount and INIT) */
	atomic_uint_fast64_t nr_spliced, nr_splice_fallback;    /* relaxed counters */
	atomic_uint_fast64_t nr_mapped;                         /* reads answered from mappings */
};

/* What an inode number stands for.  Only its shape: whether a device
 * named there still exists is checked by rf_fuse_inode_ref_live(). */
enum ref_kind { REF_NODE, REF_DEVDIR, REF_DEVFILE, REF_RD };

struct ref {
	enum ref_kind kind;
	const struct rf_ctl_node *n;    /* REF_NODE */
	const char *dev;                /* REF_DEVDIR, REF_DEVFILE: the device's name */
	int id;                         /* its name id */
	const struct rf_ctl_attr *attr; /* REF_DEVFILE; REF_NODE files: n->attr */
	int slot;                       /* REF_RD */
};

/* fuse_inode.c */

/* The name id of dev, given one if it has none.  -ENOMEM. */
int rf_fuse_inode_name_id(struct fs *fs, const char *dev);
/* What ino stands for, by its shape alone: 0 or -ENOENT. */
int rf_fuse_inode_ref_of(struct fs *fs, fuse_ino_t ino, struct ref *r);
/* rf_fuse_inode_ref_of() and the check that what it names exists now. */
int rf_fuse_inode_ref_live(struct fs *fs, fuse_ino_t ino, struct ref *r);
fuse_ino_t rf_fuse_inode_ino_of(struct fs *fs, const struct rf_ctl_node *n);
/* dev-NAME/ (k 0) of name id id, or its file k - 1. */
fuse_ino_t rf_fuse_inode_ino_dev(int id, int k);
bool rf_fuse_inode_ref_is_dir(const struct ref *r);
/* A control file: md's attributes, mdstat, dev-NAME/'s files. */
bool rf_fuse_inode_ref_is_ctl(const struct ref *r);
bool rf_fuse_inode_attr_writable(const struct rf_ctl_attr *at);
void rf_fuse_inode_fill_attr(struct fs *fs, fuse_ino_t ino, const struct ref *r, struct stat *st);
/* Whether ino is the image (the only file with data to flush). */
bool rf_fuse_inode_is_image(struct fs *fs, fuse_ino_t ino);
/* Who sent q; its supplementary groups into groups (max) unless NULL. */
void rf_fuse_inode_cred_of(struct rf_fq *q, struct rf_ctl_cred *who, gid_t *groups, int max);
/* May q's sender open a file of st for reading and/or writing?  0 or -EACCES. */
int rf_fuse_inode_may_open(struct rf_fq *q, const struct stat *st, bool rd, bool wr);
/* chmod, chown and chgrp of the image (to_set: FUSE_SET_ATTR_*).  0 or -errno. */
int rf_fuse_inode_image_chown(struct rf_fq *q, struct fs *fs, const struct ref *r, const struct stat *attr,
			      int to_set);

/* fuse_pool.c */

/* Submit op (RF_REQ_*) of [off, off + len) of the image with a request
 * from the pool (waiting for one while all are in flight); the request's
 * end answers q.  A write's data is lent until the call returns. */
void rf_fuse_pool_submit(struct fs *fs, struct rf_fq *q, int op, uint64_t off, size_t len, const char *data);
/* Wait until every request taken from the pool has come home. */
void rf_fuse_pool_drain(struct fs *fs);
/* Free the pool's requests (all home). */
void rf_fuse_pool_destroy(struct fs *fs);

/* fuse_direct.c */

/* Splice and max_read from RAIDFUSE_SPLICE, RAIDFUSE_SPLICE_MIN and the
 * largest pipe; mode: the -o io_uring= mode.  Before the session starts. */
void rf_fuse_direct_splice_config(struct fs *fs, int mode);
/* INIT: splice replies when the kernel takes them. */
void rf_fuse_direct_splice_init(struct fs *fs, struct fuse_conn_info *conn);
/* Answer a read of the image straight from the members; false: not
 * answered, the caller submits it. */
bool rf_fuse_direct_read(struct fs *fs, struct rf_fq *q, uint64_t off, size_t size);

/* fuse_serve.c */

/* libfuse's transport's replies (fuse_reply_*()). */
extern const struct rf_fq_ops rf_fuse_serve_ll_reply;

/* fuse_fs.c */

/* The served file system of a, not mounted: the tree, the locks, an
 * empty pool.  0, or 1 (logged). */
int rf_fuse_fs_init(struct fs *fs, struct rf_array *a, bool null);
void rf_fuse_fs_fini(struct fs *fs);

#endif
