/* SPDX-License-Identifier: GPL-2.0-or-later */
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
 * not matter (members without a superblock: rf_ovl_open_nosb()):
 *   DIR/<uuid>-<slot>.cow   the written blocks, at the member's offsets
 *   DIR/<uuid>-<slot>.map   a 4 KiB header, then one bit per block:
 *                           set once the block lives in the .cow file
 *   DIR/<uuid>.base         what the overlay was made over: for each
 *                           member, its on-disk superblock's events,
 *                           checksum and role, and its size, when its
 *                           overlay files were made (below)
 * A block's data reaches the .cow file before its bit reaches the .map
 * file.  The .cow file is locked (flock) while in use.
 *
 * An overlay only makes sense over the members it was made over: opened
 * over a member whose own superblock differs from the record (written
 * since without the overlay), it is refused, saying which member changed
 * and how; so is one with .cow/.map files but no record (an older
 * raidfuse's: it cannot be checked; use a new DIR, or remove the files).
 * The .base file (all little-endian): "RFOVBAS\n", version (u32, 1),
 * length of the file (u32), the array uuid (16 bytes), the count of
 * entries (u32), 4 reserved bytes; then per member 32 bytes:
 * dev_number, role, superblock checksum, reserved (u32 each), events,
 * member bytes (u64 each); then a CRC32C of everything before it.
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
 * 0 or -errno with a message naming the member or the overlay file:
 * -ESTALE when the member is not what the overlay was made over (or there
 * is no record to tell), -EINVAL for a file that is torn or not one. */
int rf_ovl_open(const char *dir, int fd, const char *path, struct rf_ovl **out, char *err, size_t errlen);
/* The same with the member's identity given: sb (malloc'd, freed before
 * it returns) names the files and the record
 * (md/overlay_sb.c reads it from the member for rf_ovl_open()). */
int rf_ovl_open_sb(const char *dir, int fd, const char *path, struct rf_sb *sb, struct rf_ovl **out, char *err,
		   size_t errlen);
/* The same for a member without an md superblock (an array described by
 * a config, as detect writes one): its files are named after key (16
 * bytes the caller derives from the array, the same for every member)
 * and slot, and its record keeps, in the superblock's place, the member's
 * size and a CRC32C of RF_OVL_NOSB_SAMPLES blocks spread over it, so a
 * member changed since is refused where a sampled block or the size
 * changed (a change elsewhere is not seen: there is no events counter to
 * tell). */
#define RF_OVL_NOSB_SAMPLES 64
int rf_ovl_open_nosb(const char *dir, int fd, const char *path, const uint8_t key[16], uint32_t slot,
		     struct rf_ovl **out, char *err, size_t errlen);
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

/* The .base record, decoded. */
#define RF_OVL_BASE_VERSION 1
struct rf_ovl_base_dev {
	uint32_t dev_number, role, sb_csum;
	uint64_t events, member_bytes;
};
struct rf_ovl_base {
	uint8_t uuid[16];
	uint32_t n;
	struct rf_ovl_base_dev dev[RF_SB_MAX_DEV];
};
/* Decode and check len bytes of a .base file (path for messages): 0, or
 * -EINVAL with a message (torn, another version, bad checksum, a device
 * twice or out of range). */
int rf_ovl_base_parse(const void *buf, size_t len, const char *path, struct rf_ovl_base *b, char *err,
		      size_t errlen);
/* The .base file's checksum: CRC32C of len bytes. */
uint32_t rf_ovl_crc32c(const void *buf, size_t len);
/* Encode b into buf (size bytes): its length, or 0 when it does not fit. */
size_t rf_ovl_base_build(const struct rf_ovl_base *b, void *buf, size_t size);
/* Decode and check len bytes of a .map file made for a member of
 * member_bytes: its bits into map ((blocks + 7) / 8 bytes), *ncopied the
 * blocks in the overlay.  0, or -EINVAL with a message naming mpath
 * (not a map, another member size, torn). */
int rf_ovl_map_parse(const void *file, size_t len, uint64_t member_bytes, uint8_t *map, uint64_t *ncopied,
		     const char *mpath, const char *member, char *err, size_t errlen);

/* io for the superblock code. */
void rf_ovl_sb_io(struct rf_ovl *o, struct rf_sb_io *io);

/* Member IO queue backend for overlaid members (members[i].layer is the
 * member's struct rf_ovl): synchronous, on the calling thread. */
int rf_ioq_init_overlay(struct rf_ioq *q, struct rf_ioq_devs devs, unsigned depth);

#endif
