/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ctl.h - the control files under the mount: md's sysfs attributes and
 * mdstat.
 *
 * A user of md types `cat /sys/block/md0/md/stripe_cache_size` and
 * `cat /proc/mdstat`; raidfuse serves the same words beside the image:
 *
 *   MOUNTPOINT/<image>
 *   MOUNTPOINT/mdstat            /proc/mdstat for this one array (md0)
 *   MOUNTPOINT/md/<attribute>    one file per md attribute
 *
 * Each file is an entry of a table (struct rf_ctl_attr: name, mode, show,
 * store) with md's name, unit and format.  The table and the directory
 * tree built from it know nothing of FUSE, so tests call show and store
 * directly; the FUSE module maps inode numbers to tree nodes.
 *
 * Per-device entries are not in the tree: the array's device set changes
 * while it is mounted (spares come, failed devices go, a spare taking a
 * slot moves device numbers).  md/dev-NAME/ (a directory of the
 * attributes in rf_ctl_dev_attrs) and md/rdN (a symbolic link to
 * dev-NAME for the device in slot N) are resolved by name at every use:
 * rf_ctl_dev_entry(), rf_ctl_rd_target() and rf_ctl_dev_show/store()
 * answer -ENOENT once the device is gone, never another device's data.
 *
 * A write is one value (like a sysfs store): the whole buffer, one
 * trailing newline allowed.  A value the attribute does not take fails
 * with -EINVAL, is logged with the attribute's name, and changes nothing.
 */
#ifndef RAIDFUSE_CTL_H
#define RAIDFUSE_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>

#include "raidfuse/array.h"

/* The names the tree holds at the mount's root beside the image. */
#define RF_CTL_ROOT_MDSTAT "mdstat"
#define RF_CTL_ROOT_MD "md"

/* Whether name is one the control tree takes at the mount's root (the
 * image may not be called so: it would hide the control files, or they
 * it).  Names that are no plain file name ("", ".", "..", with '/') are
 * refused by the config before they get here; rf_ctl_tree_build() asks
 * this of every image name. */
static inline bool rf_ctl_root_name_taken(const char *name)
{
	return !strcmp(name, RF_CTL_ROOT_MDSTAT) || !strcmp(name, RF_CTL_ROOT_MD);
}

/* Longest value a write may carry (sysfs takes one page). */
#define RF_CTL_VALUE_MAX 4095
/* Room that is always enough for one file's content (mdstat of 64
 * members with long names included). */
#define RF_CTL_SHOW_MAX (64 * 1024)

struct rf_ctl_buf;

struct rf_ctl_attr {
	const char *name;
	unsigned mode;                  /* 0444 read-only, 0644 writable */
	/* Append the content to b (rf_ctl_printf); info is the array's state
	 * taken once for this read.  member is -1 for array attributes. */
	void (*show)(struct rf_array *a, const struct rf_array_info *info, int member,
		     struct rf_ctl_buf *b);
	/* Writable numeric attributes: the value parsed as md parses it (a
	 * decimal, optional leading '+'), given to this setter, which checks
	 * its range (-EINVAL) and applies it.  Optional. */
	int (*set_int)(struct rf_array *a, int value);
	/* Other writable attributes: val is NUL-terminated, without the
	 * trailing newline.  Returns 0 or -errno.  Optional. */
	int (*store)(struct rf_array *a, int member, const char *val);
	/* What a write takes, for the message when one is refused. */
	const char *takes;
	/* Whether the file exists for this array (md shows the stripe cache
	 * attributes on raid4/5/6 only).  Optional: NULL means always. */
	bool (*present)(const struct rf_array *a);
	/* md/dev-NAME/ attributes instead of show and store: d is the
	 * device's state taken once for this read; dev is its name. */
	void (*show_dev)(struct rf_array *a, const struct rf_dev_info *d, struct rf_ctl_buf *b);
	int (*store_dev)(struct rf_array *a, const char *dev, const char *val);
	/* The store opens a file the value names (md/new_dev): through
	 * rf_ctl_store_as() it runs with the writer's file system
	 * credentials, so it opens only what the writer could. */
	bool as_writer;
};

/* md/ attributes, in the order a listing shows them (some are absent on
 * some levels: see present). */
extern const struct rf_ctl_attr rf_ctl_md_attrs[];
extern const size_t rf_ctl_md_nattrs;
/* md/bitmap/ attributes (md's bitmap group: location, time_base,
 * backlog, chunksize, metadata, can_clear), on every array. */
#define RF_CTL_MD_BITMAP "bitmap"
extern const struct rf_ctl_attr rf_ctl_bitmap_attrs[];
extern const size_t rf_ctl_bitmap_nattrs;
/* MOUNTPOINT/mdstat. */
extern const struct rf_ctl_attr rf_ctl_mdstat;

/* md/dev-NAME/ attributes, in listing order. */
extern const struct rf_ctl_attr rf_ctl_dev_attrs[];
extern const size_t rf_ctl_dev_nattrs;

/* An md/ attribute by name; NULL if there is none of that name. */
const struct rf_ctl_attr *rf_ctl_find(const char *name);
/* An md/dev-NAME/ attribute by name, or NULL. */
const struct rf_ctl_attr *rf_ctl_dev_find(const char *name);
/* What a write of the attribute at rel (a path under md/: "NAME",
 * "bitmap/NAME" or "dev-DEV/NAME") takes, as the daemon's refusal says
 * it: for the command line, which only sees EINVAL.  NULL when rel names
 * no writable attribute. */
const char *rf_ctl_takes(const char *rel);

/* Format at's content into buf (size bytes, NUL-terminated).  Returns its
 * length, or -EOVERFLOW if it does not fit. */
int rf_ctl_show(const struct rf_ctl_attr *at, struct rf_array *a, int member, char *buf, size_t size);
/* One write of a control file: buf (len bytes) holds one value, with at
 * most one trailing newline.  Returns 0, -EACCES for a read-only file, or
 * the setter's -errno (-EINVAL: refused and logged, nothing changed). */
int rf_ctl_store(const struct rf_ctl_attr *at, struct rf_array *a, int member, const char *buf, size_t len);

/* The same for md/dev-NAME/ attributes (at from rf_ctl_dev_attrs) of the
 * device called dev: -ENOENT when the array holds no such device now. */
int rf_ctl_dev_show(const struct rf_ctl_attr *at, struct rf_array *a, const char *dev, char *buf, size_t size);
int rf_ctl_dev_store(const struct rf_ctl_attr *at, struct rf_array *a, const char *dev, const char *buf,
		     size_t len);

/* Who is asking: the credentials of the process behind a request, as
 * the kernel gave them to the FUSE module. */
struct rf_ctl_cred {
	uid_t uid;
	gid_t gid;
	const gid_t *groups;            /* supplementary groups; NULL: none known */
	int ngroups;
};

/* The control files and the image belong to the daemon's user: every
 * file of the tree has uid owner, gid group and the permission bits in
 * mode (read-only files 0444, writable ones 0644, md/new_dev 0200, the
 * image 0600).  With allow_other the kernel checks them
 * (default_permissions); the daemon checks them again itself, so the
 * modes hold whatever the mount options are.
 *
 * rf_ctl_may_open(): 0 when who may open such a file for reading (rd)
 * and/or writing (wr), as the kernel decides it: root may, the owner by
 * the owner bits, a member of group by the group bits, others by the
 * rest; else -EACCES. */
int rf_ctl_may_open(const struct rf_ctl_cred *who, uid_t owner, gid_t group, unsigned mode, bool rd, bool wr);
/* A store, or a truncation, of a control file: only the owner (the
 * daemon's user) and root may.  0 or -EACCES. */
int rf_ctl_may_store(const struct rf_ctl_cred *who, uid_t owner);
/* One write of a control file by who: rf_ctl_may_store(), then
 * rf_ctl_store() (dev NULL) or rf_ctl_dev_store(); an attribute marked
 * as_writer stores with who's file system credentials
 * (rf_ctl_as_writer).  Returns 0 or -errno. */
int rf_ctl_store_as(const struct rf_ctl_cred *who, uid_t owner, const struct rf_ctl_attr *at, struct rf_array *a,
		    int member, const char *dev, const char *buf, size_t len);
/* fn(arg) in the calling thread with who's file system credentials
 * (fsuid, fsgid and supplementary groups; no other thread's change), then
 * the thread's own back.  A daemon that is not root runs fn as itself: it
 * holds no right the owner or root lacks, and only they may store.
 * Returns fn's value, or -EPERM when the credentials cannot be taken. */
int rf_ctl_as_writer(const struct rf_ctl_cred *who, int (*fn)(void *arg), void *arg);

/* md/ per-device entries.  An entry of md/ named "dev-NAME": 0 when the
 * array holds a device NAME now, else -ENOENT.  "rdN": N when slot N has
 * a device now, else -ENOENT. */
int rf_ctl_dev_entry(struct rf_array *a, const char *entry);
int rf_ctl_rd_entry(struct rf_array *a, const char *entry);
/* The target of md/rdN ("dev-NAME") into buf; its length, or -ENOENT
 * when slot has no device (-EOVERFLOW: size too small). */
int rf_ctl_rd_target(struct rf_array *a, int slot, char *buf, size_t size);

/* One per-device entry of md/'s listing. */
struct rf_ctl_dev_ent {
	char name[264];                 /* "dev-NAME" or "rdN" */
	bool link;                      /* rdN */
	int slot;                       /* rdN: N */
};
/* md/'s per-device entries now, at most max of them into out: every
 * device's dev-NAME, then rdN for each slot with a device.  Returns how
 * many (a listing is a snapshot: each entry is checked again at use). */
int rf_ctl_dev_list(struct rf_array *a, struct rf_ctl_dev_ent *out, int max);

/* Append to a show buffer, printf-style (text past its end is dropped and
 * remembered: rf_ctl_show then fails with -EOVERFLOW). */
void rf_ctl_printf(struct rf_ctl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The file tree under the mount point.  Node 0 is the root; a node's
 * parent comes before it, and siblings are in listing order. */
enum rf_ctl_kind { RF_CTL_DIR, RF_CTL_IMAGE, RF_CTL_FILE };

struct rf_ctl_node {
	const char *name;               /* "" for the root */
	int parent;                     /* node index; the root is its own parent */
	enum rf_ctl_kind kind;
	const struct rf_ctl_attr *attr; /* RF_CTL_FILE */
	int member;                     /* the member a file speaks of; -1: the array */
};

struct rf_ctl_tree {
	struct rf_ctl_node *nodes;
	int n;
};

/* Build the tree for a: the image, mdstat, md/ with every attribute (those
 * a's level has now are rf_ctl_node_present()).  Returns 0, -EINVAL when
 * the image's name is no plain file name or one the tree takes itself
 * (rf_ctl_root_name_taken), or -ENOMEM. */
int rf_ctl_tree_build(struct rf_array *a, struct rf_ctl_tree *t);
void rf_ctl_tree_free(struct rf_ctl_tree *t);
/* Whether node n is there for a now (its attribute's present(): the level,
 * which a takeover changes). */
bool rf_ctl_node_present(const struct rf_array *a, const struct rf_ctl_node *n);
/* The child of directory node dir called name that is there for a: its
 * index, or -ENOENT (-ENOTDIR when dir is not a directory). */
int rf_ctl_lookup(const struct rf_ctl_tree *t, const struct rf_array *a, int dir, const char *name);

#endif
