/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuse_inode.c - the files under the mount: what each inode number
 * stands for, their attributes, and who may open or change them.
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
 * (timeouts 0: fuse.c) while the static ones keep an hour.
 *
 * Attributes: every file belongs to the daemon's user and dates from the
 * start; the image's size is the array's, a control file's a page (as
 * sysfs), an rdN link's its target's length.
 *
 * Who may: the image is 0600 (0400 with --ro), control files 0444, 0644
 * when they take values, and md/new_dev 0200.  The image's mode, owner
 * and group change like a device node's (chmod by its owner or root,
 * chown by root, chgrp by its owner to one of the owner's groups), for as
 * long as the array is served: `chgrp kvm mnt/array.img; chmod 660
 * mnt/array.img` lets a qemu of group kvm at it under allow_other.  With
 * --ro no write bit is taken.  With allow_other (or allow_root) the mount
 * also gets default_permissions, so the kernel checks the modes against
 * each caller; the daemon checks them again itself at open and truncation
 * (rf_fuse_inode_may_open), and only the owner or root may store into a control file
 * whoever opened it (ctl.c: rf_ctl_store_as, which opens md/new_dev's
 * path with the writer's credentials).
 *
 * Locks: names_lock guards the name ids, img_lock the image's mode, owner
 * and group; both are leaves.
 *
 * What it does NOT do: answer requests (fuse.c's ops do, with what this
 * file says), show or store a control file's value (ctl.c), or tell the
 * kernel to forget a cached attribute (fuse_serve.c: the image's size
 * after a reshape).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "raidfuse/array.h"
#include "raidfuse/ctl.h"
#include "front/fuse_int.h"
#include "front/fuse_reply.h"

#define DEV_STRIDE 32

/* The name id of dev, given one if it has none.  -ENOMEM. */
int rf_fuse_inode_name_id(struct fs *fs, const char *dev)
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

int rf_fuse_inode_ref_of(struct fs *fs, fuse_ino_t ino, struct ref *r)
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

/* rf_fuse_inode_ref_of() and the check that what it names exists now. */
int rf_fuse_inode_ref_live(struct fs *fs, fuse_ino_t ino, struct ref *r)
{
	char target[300];
	int ret = rf_fuse_inode_ref_of(fs, ino, r);

	if (ret)
		return ret;
	if (r->kind == REF_NODE)
		return rf_ctl_node_present(fs->a, r->n) ? 0 : -ENOENT;
	if (r->kind == REF_RD)
		return rf_ctl_rd_target(fs->a, r->slot, target, sizeof(target)) < 0 ? -ENOENT : 0;
	return rf_member_find(fs->a, r->dev) < 0 ? -ENOENT : 0;
}

fuse_ino_t rf_fuse_inode_ino_of(struct fs *fs, const struct rf_ctl_node *n)
{
	return INO_ROOT + (fuse_ino_t)(n - fs->tree.nodes);
}

fuse_ino_t rf_fuse_inode_ino_dev(int id, int k)
{
	return INO_DEV_BASE + (fuse_ino_t)id * DEV_STRIDE + (fuse_ino_t)k;
}

bool rf_fuse_inode_ref_is_dir(const struct ref *r)
{
	return r->kind == REF_DEVDIR || (r->kind == REF_NODE && r->n->kind == RF_CTL_DIR);
}

/* A control file: md's attributes, mdstat, dev-NAME/'s files. */
bool rf_fuse_inode_ref_is_ctl(const struct ref *r)
{
	return r->kind == REF_DEVFILE || (r->kind == REF_NODE && r->n->kind == RF_CTL_FILE);
}

bool rf_fuse_inode_attr_writable(const struct rf_ctl_attr *at)
{
	return at->set_int || at->store || at->store_dev;
}

void rf_fuse_inode_fill_attr(struct fs *fs, fuse_ino_t ino, const struct ref *r, struct stat *st)
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
	if (rf_fuse_inode_ref_is_dir(r)) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;       /* and one per subdirectory's ".." */
		if (r->kind == REF_DEVDIR)
			return;
		for (i = 1; i < fs->tree.n; i++)
			if (fs->tree.nodes[i].parent == n - fs->tree.nodes && fs->tree.nodes[i].kind == RF_CTL_DIR)
				st->st_nlink++;
		if (n - fs->tree.nodes == fs->md)
			st->st_nlink += rf_member_ndevs(fs->a);
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

/* Only the image has data to flush.  A control file's close must not wait
 * for the members (nor behind writes a suspended array holds back). */
bool rf_fuse_inode_is_image(struct fs *fs, fuse_ino_t ino)
{
	struct ref r;

	return !rf_fuse_inode_ref_of(fs, ino, &r) && r.kind == REF_NODE && r.n->kind == RF_CTL_IMAGE;
}

/* Who sent q.  The supplementary groups are read only when asked for
 * (the transport reads them from /proc): into groups (max entries); none
 * are known when that fails, which only takes rights away. */
void rf_fuse_inode_cred_of(struct rf_fq *q, struct rf_ctl_cred *who, gid_t *groups, int max)
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
int rf_fuse_inode_may_open(struct rf_fq *q, const struct stat *st, bool rd, bool wr)
{
	gid_t groups[RF_FUSE_GROUPS];
	struct rf_ctl_cred who;
	unsigned mode = st->st_mode & 0777;

	/* The groups matter only where the group bits differ from the others'. */
	rf_fuse_inode_cred_of(q, &who, ((mode >> 3) ^ mode) & 7 ? groups : NULL, RF_FUSE_GROUPS);
	return rf_ctl_may_open(&who, st->st_uid, st->st_gid, mode, rd, wr);
}

/* chmod, chown and chgrp of the image, with the rules of a device node:
 * the mode by its owner or root, the owner by root, the group by root or
 * by its owner to a group of the owner's.  Other files keep theirs
 * (EPERM).  0 or -errno. */
int rf_fuse_inode_image_chown(struct rf_fq *q, struct fs *fs, const struct ref *r, const struct stat *attr,
			      int to_set)
{
	gid_t groups[RF_FUSE_GROUPS];
	struct rf_ctl_cred who;
	int ret = 0, i;
	bool in_group;

	if (r->kind != REF_NODE || r->n->kind != RF_CTL_IMAGE)
		return -EPERM;
	rf_fuse_inode_cred_of(q, &who, groups, RF_FUSE_GROUPS);
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
