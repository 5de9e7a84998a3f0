/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuse_fs.c - the served file system made and freed, and the ops
 * without a mount (fuse_ops.h).
 *
 * struct fs (fuse_int.h) is made once per mount by rf_fuse_run()
 * (fuse_serve.c), or by a unit test through rf_fuse_fs_new(): the array,
 * the file tree (ctl.c's), the image's first mode and owner, the locks
 * with their ranks (every one a leaf), an empty request pool.  The tree
 * is immutable while mounted.
 *
 * What it does NOT do: mount or serve (fuse_serve.c), or answer requests
 * (fuse.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/ctl.h"
#include "raidfuse/lockcheck.h"
#include "raidfuse/log.h"
#include "front/fuse_int.h"
#include "front/fuse_ops.h"

/* The served file system of a, not mounted: the tree, the locks, an
 * empty pool.  0, or 1 (logged). */
int rf_fuse_fs_init(struct fs *fs, struct rf_array *a, bool null)
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
	pthread_mutex_init(&fs->notify_lock, NULL);
	rf_lock_rank(&fs->notify_lock, RF_LOCK_LEAF, "notify_lock");
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

void rf_fuse_fs_fini(struct fs *fs)
{
	rf_ctl_tree_free(&fs->tree);
	while (fs->nnames)
		free(fs->names[--fs->nnames]);
	free(fs->names);
}

void *rf_fuse_fs_new(struct rf_array *a)
{
	struct fs *fs = malloc(sizeof(*fs));

	if (fs && rf_fuse_fs_init(fs, a, false)) {
		free(fs);
		fs = NULL;
	}
	return fs;
}

void rf_fuse_fs_drain(void *fs)
{
	rf_fuse_pool_drain(fs);
}

void rf_fuse_fs_free(void *fs)
{
	if (!fs)
		return;
	rf_fuse_pool_drain(fs);
	rf_fuse_pool_destroy(fs);
	rf_fuse_fs_fini(fs);
	free(fs);
}
