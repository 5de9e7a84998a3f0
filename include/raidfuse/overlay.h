/* overlay.h - copy-on-write overlays: serve an array whose members stay
 * untouched.
 *
 * Each member is opened read-only; everything written to it (data,
 * parity, superblock updates) goes to a sparse file in the overlay
 * directory instead, in whole 4 KiB blocks, and reads come from there
 * where a block was written, else from the member.  The files keep across
 * runs: a second assemble with the same directory continues the
 * experiment, and deleting the directory throws it away.
 *
 * Files, named after the member's md identity (array uuid and device
 * slot, from its own superblock), so the order members are given in does
 * not matter:
 *   DIR/<uuid>-<slot>.cow   the written blocks, at the member's offsets
 *   DIR/<uuid>-<slot>.map   a 4 KiB header, then one bit per block:
 *                           set once the block lives in the .cow file
 * A block's data reaches the .cow file before its bit reaches the .map
 * file.  The .cow file is locked (flock) while in use.
 */
#ifndef RAIDFUSE_OVERLAY_H
#define RAIDFUSE_OVERLAY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "raidfuse/ioq.h"
#include "raidfuse/super.h"

#define RF_OVL_BLOCK 4096

struct rf_ovl;

/* Open (creating them if needed) the overlay files in dir for the member
 * open read-only as fd at path; the member must carry an md superblock.
 * 0 or -errno with a message naming the member or the overlay file. */
int rf_ovl_open(const char *dir, int fd, const char *path, struct rf_ovl **out, char *err, size_t errlen);
/* fsync and close (NULL: nothing). */
void rf_ovl_close(struct rf_ovl *o);

/* IO of the member as seen through the overlay; within the member's size
 * (reads past it give zeros).  0 or -errno. */
int rf_ovl_preadv(struct rf_ovl *o, const struct iovec *iov, int niov, uint64_t off);
int rf_ovl_pwritev(struct rf_ovl *o, const struct iovec *iov, int niov, uint64_t off);
int rf_ovl_fsync(struct rf_ovl *o);
uint64_t rf_ovl_size(const struct rf_ovl *o);
/* Blocks that live in the overlay. */
uint64_t rf_ovl_blocks(const struct rf_ovl *o);

/* io for the superblock code. */
void rf_ovl_sb_io(struct rf_ovl *o, struct rf_sb_io *io);

/* Member IO queue backend for overlaid members (members[i].layer is the
 * member's struct rf_ovl): synchronous, on the calling thread. */
int rf_ioq_init_overlay(struct rf_ioq *q, const struct rf_ioq_member *members, int nmembers, unsigned depth);

#endif
