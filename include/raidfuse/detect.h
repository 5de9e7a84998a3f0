/* SPDX-License-Identifier: GPL-2.0-or-later */
/* detect.h - an array's geometry from its members' contents alone.
 *
 * rf_detect() opens the members read-only, reads samples of them (not the
 * whole members) and ranks candidate geometries (level, member order,
 * chunk, layout, data offset) by the evidence each has: parity or copies
 * that agree, data that runs on across chunk boundaries, and a file system
 * or partition table whose own metadata lands where it says inside the
 * assembled candidate.  Superblocks found on the members are hints only.
 * It says when the evidence is too weak to name an answer.
 */
#ifndef RAIDFUSE_DETECT_H
#define RAIDFUSE_DETECT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "raidfuse/layout.h"

#define RF_DETECT_MAX_CANDS 10

struct rf_detect_opts {
	int level;                      /* -1: any */
	int members;                    /* raid_disks; 0: the number of MEMBER arguments */
	uint64_t max_offset;            /* bytes: largest data offset searched (default 64 MiB) */
};

/* One candidate and its evidence.  A ratio's parts are counted so that "no
 * evidence" (n == 0) is not mistaken for "evidence against". */
struct rf_detect_cand {
	struct rf_geom g;
	int role[RF_MAX_MEMBERS];       /* role -> index of the MEMBER argument; -1 missing */
	uint64_t data_offset;           /* bytes */
	int red_ok, red_n;              /* sampled rows whose parity/copies agree, of those checked */
	int cont_ok, cont_n;            /* chunk boundaries the data runs on across, of those where
					 * the data runs on before the boundary */
	char fs[24];                    /* what starts the array ("ext4", "mbr+ext4", ...), or "" */
	int fs_ok, fs_n;                /* the file system's own metadata found where it says */
	bool start_data;                /* the array's first 4 KiB hold something */
	bool before_clean;              /* the 64 KiB before the data offset hold nothing (or md's
					 * metadata) on every member */
	double score;                   /* 0..100 */
};

struct rf_detect_result {
	int ncand;
	struct rf_detect_cand cand[RF_DETECT_MAX_CANDS];     /* best first */
	bool confident;
	char verdict[512];              /* one line: why (not) confident */
	char level_evidence[512];       /* what the sampled rows said about the level */
	char hints[1024];               /* superblocks found, or "" */
	uint64_t bytes_read;
	double seconds;
	int nmembers;                   /* raid_disks */
	const char *paths[RF_MAX_MEMBERS];      /* MEMBER arguments; NULL: missing */
};

/* Detect the geometry of the array whose members are paths[0..n-1] (NULL
 * or "missing" for a member that is not there).  Fills r (also when the
 * evidence is weak: r->confident says).  Returns 0, or -errno with a
 * one-line message in err (a member that cannot be opened, bad options). */
int rf_detect(const char *const *paths, int n, const struct rf_detect_opts *o, struct rf_detect_result *r,
	      char *err, size_t errlen);

/* The ranked list, as text or one JSON object.  0 or -EIO. */
void rf_detect_print(FILE *out, const struct rf_detect_result *r);
int rf_detect_print_json(FILE *out, const struct rf_detect_result *r);

/* Write a raidfuse config for candidate idx (0: the best) to file: members
 * by absolute path, "missing" where none, metadata "none".  0 or -errno
 * with the reason in err. */
int rf_detect_write_config(const char *file, const struct rf_detect_result *r, int idx, char *err,
			   size_t errlen);

/* Internal, exported for the unit tests: how well sector b continues
 * sectors a0, a (512 bytes each): the number of 8-byte words (of 64) that
 * repeat a's or extend the step from a0 to a (as one 64-bit or two 32-bit
 * little-endian numbers); all 64 when the three are text. */
int rf_detect_continues(const void *a0, const void *a, const void *b);

/* Signatures (detect_fs.c).  buf holds the first 68 KiB of a volume (the
 * array or a partition).  The name of what starts there, or NULL. */
const char *rf_detect_signature(const uint8_t *buf, size_t len);

#endif
