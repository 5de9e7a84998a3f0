/* SPDX-License-Identifier: GPL-2.0-or-later */
/* readmap.h - a read of the array as the member byte ranges that hold it.
 *
 * A front end that can move member data to its reader without copying it
 * (splice from a member file into a pipe, then into FUSE's reply) asks
 * rf_read_map() where a read's bytes are: the extents, in array order,
 * each a member's descriptor, byte offset and length.  The map answers
 * only for a pure data read, one the IO path would serve by reading the
 * same member bytes and nothing else: every extent lies on a member in
 * sync there (not faulty, not being rebuilt at that sector), read from
 * the copy the read path would pick, on a plain file or block device (no
 * overlay layer, no NBD export, no io log); otherwise -EAGAIN, and the
 * caller submits the read as usual.
 *
 * A map holds the read at the drain barrier as a request in flight does,
 * from rf_read_map() to rf_read_unmap(): a drain that stops reads (a
 * device table change, a member swap) waits for it, so the descriptors
 * stay open and the layout stays the same while they are used.  A map
 * does not pass the barrier while reads are held: it refuses (-EAGAIN)
 * and the request waits at the barrier the usual way.
 *
 * An extent on a member that is mapped (fdmap.h: a file in memory) also
 * carries the bytes' address in the mapping: a reply can be written from
 * there, with no system call on the member.  The map's hold keeps the
 * mapping too (it is unmapped only when the device is closed).
 *
 * What it does NOT do: move bytes (the caller does), mark a member faulty
 * on an error (the caller drops the map and submits the read, whose member
 * IO meets the same error and takes the failure path), or map writes.
 */
#ifndef RAIDFUSE_READMAP_H
#define RAIDFUSE_READMAP_H

#include <stdbool.h>
#include <stdint.h>

struct rf_array;

/* A 1 MiB read over 4 KiB chunks is 256 extents. */
#define RF_READ_MAP_MAX 256

struct rf_rextent {
	int fd;                         /* the member's buffered descriptor */
	const char *addr;               /* the bytes in the member's mapping (fdmap.h),
					 * or NULL: not mapped */
	int member;                     /* slot */
	uint64_t off;                   /* byte offset on the member's file (data offset included) */
	uint32_t len;
};

struct rf_read_map {
	struct rf_array *a;
	int n;                          /* extents used */
	uint32_t len;                   /* their bytes: the read's */
	struct rf_rextent ext[RF_READ_MAP_MAX];
};

/* Map the read [off, off + len) of a (inside the array) into m and hold
 * it at the barrier.  0: m holds the extents, rf_read_unmap() must
 * follow; -EAGAIN: not a pure data read now (nothing held); -E2BIG: more
 * than RF_READ_MAP_MAX extents. */
int rf_read_map(struct rf_array *a, uint64_t off, uint32_t len, struct rf_read_map *m);
/* Before extent i's bytes are moved: the member's fault injection is
 * asked as the IO path asks before each operation (a delay is slept
 * here).  0, or the -errno it injects. */
int rf_read_map_fault(const struct rf_read_map *m, int i);
/* The read ended (its bytes moved, or it goes the usual way now): the
 * barrier lets go of it. */
void rf_read_unmap(struct rf_read_map *m);
/* For a sync region (the caller holds its rows): the address of member
 * k's bytes [off, off + len) (byte offset on the member's file) in its
 * mapping, when it is mapped over them and read plainly (no overlay,
 * layer, NBD export, fault injection or io log); else NULL. */
const char *rf_read_map_addr(struct rf_array *a, int k, uint64_t off, uint32_t len);
/* Whether every device open now is mapped (extents will carry addresses
 * wherever the map answers). */
bool rf_read_map_all_mapped(struct rf_array *a);

#endif
