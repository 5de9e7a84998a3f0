/* SPDX-License-Identifier: GPL-2.0-or-later */
/* detect_int.h - what detect.c and detect_fs.c share: a reader of a
 * candidate's assembled sectors. */
#ifndef RAIDFUSE_DETECT_INT_H
#define RAIDFUSE_DETECT_INT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of a volume's start that hold every signature detect_fs.c knows
 * (btrfs's superblock is at 64 KiB). */
#define RF_DETECT_VOL_HEAD (68 * 1024)

struct rf_detect_reader {
	/* One 512-byte sector of the volume into buf: 0, or -errno (past
	 * its end, or on a member that is missing and cannot be rebuilt). */
	int (*read)(void *ctx, uint64_t sector, void *buf);
	void *ctx;
};

/* len bytes (a multiple of 512) from sector on: 0 or the first error. */
int rf_detect_read_span(const struct rf_detect_reader *rd, uint64_t sector, void *buf, size_t len);

/* What starts the volume of vsec sectors (name: "ext4", "mbr+ext4", or
 * "" for nothing known), and how many of its metadata copies were found
 * where it says (*ok of *n). */
void rf_detect_volume(const struct rf_detect_reader *rd, uint64_t vsec, char *name, size_t namelen, int *ok,
		      int *n);

#endif
