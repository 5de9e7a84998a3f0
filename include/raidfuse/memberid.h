/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memberid.h - which device a member is, whatever name reaches it.
 *
 * One device may be named many ways: a file by a link, a hard link or
 * another path; a block device by /dev/disk/by-* or another node; a
 * file's data by a loop device over it; an NBD export by a socket reached
 * through a link, a host by name or by address.  An array that takes one
 * device twice writes two members' data to one place, so every place
 * that takes members (create, mount, assemble, a spare written to
 * md/new_dev) asks the same question the same way: rf_member_id_*() say
 * what a member is, rf_member_same() whether two are one, and
 * rf_member_same_msg() says so naming both.
 *
 * Two members are one when
 *  - their data is in one file (one st_dev/st_ino): the file itself, or
 *    the backing file of a loop device;
 *  - they are one block device (one st_rdev);
 *  - they are one export (its name) of one NBD server (a unix socket's
 *    inode, or the address and port connected to);
 *  - their md superblocks carry one device UUID (1.x): one member twice,
 *    or a copy of one.
 *
 * devopen.c finds a file's or block device's identity, nbd.c an
 * export's, and the caller adds the superblock's.  rf_members_distinct()
 * opens a list of paths and URIs only to learn theirs (read-only, not
 * locked, closed again), for a caller that checks names before it reads
 * or serves anything.
 */
#ifndef RAIDFUSE_MEMBERID_H
#define RAIDFUSE_MEMBERID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rf_devopen_id;

enum rf_member_kind {
	RF_MEMBER_NONE,                 /* nothing known (a missing slot) */
	RF_MEMBER_FILE,                 /* a regular file */
	RF_MEMBER_BLK,                  /* a block device */
	RF_MEMBER_NBD,                  /* an NBD export */
};

#define RF_MEMBER_SERVER_MAX 128
#define RF_MEMBER_EXPORT_SHOWN 64

struct rf_member_id {
	enum rf_member_kind kind;
	/* FILE: its inode.  BLK over a file (a loop device): the backing
	 * file's inode. */
	bool has_file;
	dev_t dev;
	ino_t ino;
	dev_t rdev;                     /* BLK: the device number */
	/* NBD: which server ("unix socket 0:45 inode 1234", "127.0.0.1 port
	 * 10809") and which export of it: its name's length and hash, and
	 * its first bytes for messages. */
	char server[RF_MEMBER_SERVER_MAX];
	char export_shown[RF_MEMBER_EXPORT_SHOWN];
	size_t export_len;
	uint64_t export_hash;
	/* The md device UUID its superblock carries (1.x), if any. */
	bool has_uuid;
	uint8_t uuid[16];
};

/* Why two members are one (rf_member_same()); 0: they are not. */
enum rf_member_same_why {
	RF_MEMBER_DIFFERENT = 0,
	RF_MEMBER_SAME_FILE,            /* one file (either may be a loop device over it) */
	RF_MEMBER_SAME_BLK,             /* one block device */
	RF_MEMBER_SAME_NBD,             /* one export of one server */
	RF_MEMBER_SAME_UUID,            /* one md device UUID */
};

/* The identity of what devopen.c opened (devopen.h's struct rf_devopen_id). */
void rf_member_id_of_dev(struct rf_member_id *m, const struct rf_devopen_id *id);
/* The identity of an NBD export: server as nbd.c names it, the export's
 * name (NUL-terminated). */
void rf_member_id_nbd(struct rf_member_id *m, const char *server, const char *export_name);
/* Add the md device UUID a superblock of it carries (all zero: none, as
 * 0.90's). */
void rf_member_id_set_uuid(struct rf_member_id *m, const uint8_t uuid[16]);

/* Whether a and b are one device, and why; RF_MEMBER_DIFFERENT (0) if
 * not.  Identities of kind RF_MEMBER_NONE are never one with anything. */
enum rf_member_same_why rf_member_same(const struct rf_member_id *a, const struct rf_member_id *b);
/* "A and B are the same file twice (device 8:1, inode 12; B is a loop
 * device over it): TAIL", for a and b found one by rf_member_same(). */
void rf_member_same_msg(char *err, size_t errlen, const char *na, const struct rf_member_id *a, const char *nb,
			const struct rf_member_id *b, const char *tail);

/* Open path (a file, block device or NBD URI, connected within
 * timeout_ms) read-only and unlocked, take its identity into m (with the
 * device UUID of the md superblock on it, if one reads), close it.  0, or
 * -errno with a message naming who in err. */
int rf_member_id_of_path(const char *path, const char *who, unsigned timeout_ms, struct rf_member_id *m,
			 char *err, size_t errlen);
/* Whether the n paths name n different devices: 0, or -EINVAL with
 * "names[j] and names[i] are the same ... twice: each member must be
 * given once" in err.  NULL entries, and paths that do not open, are
 * skipped: the caller opens them again and says why. */
int rf_members_distinct(const char *const *paths, const char *const *names, int n, unsigned timeout_ms,
			char *err, size_t errlen);

#endif
