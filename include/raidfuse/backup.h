/* SPDX-License-Identifier: GPL-2.0-or-later */
/* backup.h - mdadm's backup file of a reshape done in place (md/backup_fmt.c).
 *
 * A reshape whose data offsets do not move (mdadm --grow --backup-file)
 * writes new rows over old rows not yet read for its first windows (its
 * critical section).  Before each such window, the window's data (array
 * order, the old geometry's contents) goes to a backup file with a
 * 512-byte header that says which array sectors it holds; after a crash
 * the assembly writes them back in the new geometry (mdadm's Grow_restart).
 *
 * The header is mdadm's struct mdp_backup_super (mdadm.h, Grow.c),
 * little-endian: magic "md_backup_data-1" (one section) or "-2" (two),
 * the array uuid, mtime (seconds), then per section where its data sits
 * in the file (devstart, 512-byte sectors from the file's start; the
 * second section's devstart2 counts from the first's), which array
 * sectors it holds (arraystart) and how many (length), each header part
 * followed by mdadm's checksum of the bytes before it (sb_csum over bytes
 * 0-63, sb_csum2 over 0-95).  mdadm writes the header at devstart - 4096
 * bytes (the file's start: devstart 8) and a copy right after the data.
 *
 * Invariants: rf_backup_decode() accepts a header only when its magic and
 * checksums hold; what it returns is what rf_backup_encode() writes back.
 *
 * What it does NOT do: file IO, or decide whether a header is stale
 * (services/reshape.c does, from the superblocks' position and utime).
 */
#ifndef RAIDFUSE_BACKUP_H
#define RAIDFUSE_BACKUP_H

#include <stddef.h>
#include <stdint.h>

#define RF_BACKUP_SB_BYTES 512
/* Where mdadm puts the data of a backup file: 4 KiB in, after the header. */
#define RF_BACKUP_DATA_SECTOR 8

struct rf_backup_sb {
	int version;                    /* 1 or 2 (the magic's last character) */
	uint8_t uuid[16];               /* the array's (set_uuid) */
	uint64_t mtime;                 /* seconds since the epoch */
	uint64_t devstart;              /* sectors: the first section's data in the file */
	uint64_t arraystart, length;    /* sectors: array sectors it holds */
	/* version 2: the second section, its data devstart2 sectors past
	 * devstart */
	uint64_t devstart2, arraystart2, length2;
};

/* mdadm's bsb_csum over len bytes of buf (as mdadm computes it: its sum
 * takes the first byte at every step, so only the magic's first byte and
 * len count; kept as it is, for files mdadm reads). */
uint32_t rf_backup_csum(const void *buf, size_t len);
/* b into the 512 bytes at buf, checksums computed (version 1: the second
 * section's fields zero). */
void rf_backup_encode(const struct rf_backup_sb *b, void *buf);
/* The 512 bytes at buf into b.  0; -EINVAL with err saying what (and
 * naming path): not a backup header (magic), a checksum that fails, a
 * section that ends past 2^63 sectors. */
int rf_backup_decode(const void *buf, const char *path, struct rf_backup_sb *b, char *err, size_t errlen);
/* The array sectors b's sections cover together: [*lo, *hi) (both 0 when
 * it holds nothing; two sections are taken as one span, as mdadm does). */
void rf_backup_span(const struct rf_backup_sb *b, uint64_t *lo, uint64_t *hi);

/* One section of a backup: array sectors [arraystart, arraystart +
 * length), their data at file sector devstart. */
struct rf_backup_section {
	uint64_t devstart, arraystart, length;
};
/* The sections of b that hold data (length not 0), in array order, into
 * s: how many (0, 1 or 2).  A second section's data lies devstart2 sectors
 * past the first's (mdadm's alternating parts: either may hold the rows
 * that come first). */
int rf_backup_sections(const struct rf_backup_sb *b, struct rf_backup_section s[2]);

#endif
