/* SPDX-License-Identifier: GPL-2.0-or-later */
/* backup_fmt.c - mdadm's backup file header (struct mdp_backup_super).
 *
 * The format is backup.h's: 512 bytes, little-endian fields at the
 * offsets asserted below, mdadm's checksums over the bytes before each.
 * Decoding checks the magic and the checksums and nothing of the array:
 * whether a header belongs to it and still matters is the reshape's
 * question (services/reshape.c).
 *
 * What it does NOT do: read or write files.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "raidfuse/backup.h"
#include "raidfuse/le.h"

/* mdadm's struct mdp_backup_super, its fields in le.h's types. */
struct backup_disk_sb {
	char magic[16];
	uint8_t set_uuid[16];
	rf_le64_t mtime;
	rf_le64_t devstart;
	rf_le64_t arraystart;
	rf_le64_t length;
	rf_le32_t sb_csum;              /* over the 64 bytes before it */
	rf_le32_t pad1;
	rf_le64_t devstart2;
	rf_le64_t arraystart2;
	rf_le64_t length2;
	rf_le32_t sb_csum2;             /* over the 96 bytes before it */
	uint8_t pad[512 - 68 - 32];
};

_Static_assert(sizeof(struct backup_disk_sb) == RF_BACKUP_SB_BYTES, "mdadm's header is 512 bytes");
_Static_assert(offsetof(struct backup_disk_sb, sb_csum) == 64, "sb_csum after 64 bytes");
_Static_assert(offsetof(struct backup_disk_sb, devstart2) == 72, "the second section at 72");
_Static_assert(offsetof(struct backup_disk_sb, sb_csum2) == 96, "sb_csum2 after 96 bytes");

#define MAGIC1 "md_backup_data-1"
#define MAGIC2 "md_backup_data-2"

uint32_t rf_backup_csum(const void *buf, size_t len)
{
	/* mdadm: csum = (csum << 3) + buf[0] for each of len bytes, buf a
	 * (signed) char, the sum a 32-bit int. */
	int32_t first = (int8_t)((const uint8_t *)buf)[0];
	uint32_t c = 0;
	size_t i;

	for (i = 0; i < len; i++)
		c = (c << 3) + (uint32_t)first;
	return c;
}

void rf_backup_encode(const struct rf_backup_sb *b, void *buf)
{
	struct backup_disk_sb *d = buf;

	memset(d, 0, sizeof(*d));
	memcpy(d->magic, b->version == 2 ? MAGIC2 : MAGIC1, 16);
	memcpy(d->set_uuid, b->uuid, 16);
	rf_put_le64(d->mtime.b, b->mtime);
	rf_put_le64(d->devstart.b, b->devstart);
	rf_put_le64(d->arraystart.b, b->arraystart);
	rf_put_le64(d->length.b, b->length);
	if (b->version == 2) {
		rf_put_le64(d->devstart2.b, b->devstart2);
		rf_put_le64(d->arraystart2.b, b->arraystart2);
		rf_put_le64(d->length2.b, b->length2);
	}
	rf_put_le32(d->sb_csum.b, rf_backup_csum(d, offsetof(struct backup_disk_sb, sb_csum)));
	if (b->version == 2)
		rf_put_le32(d->sb_csum2.b, rf_backup_csum(d, offsetof(struct backup_disk_sb, sb_csum2)));
}

int rf_backup_decode(const void *buf, const char *path, struct rf_backup_sb *b, char *err, size_t errlen)
{
	const struct backup_disk_sb *d = buf;
	const uint64_t lim = 1ull << 63;

	memset(b, 0, sizeof(*b));
	if (!memcmp(d->magic, MAGIC1, 16)) {
		b->version = 1;
	} else if (!memcmp(d->magic, MAGIC2, 16)) {
		b->version = 2;
	} else {
		snprintf(err, errlen, "%s: not an mdadm backup file (no md_backup_data-1/-2 magic)", path);
		return -EINVAL;
	}
	if (rf_get_le32(d->sb_csum.b) != rf_backup_csum(d, offsetof(struct backup_disk_sb, sb_csum))) {
		snprintf(err, errlen, "%s: backup header checksum 0x%08x, expected 0x%08x", path,
			 rf_get_le32(d->sb_csum.b), rf_backup_csum(d, offsetof(struct backup_disk_sb, sb_csum)));
		return -EINVAL;
	}
	if (b->version == 2 &&
	    rf_get_le32(d->sb_csum2.b) != rf_backup_csum(d, offsetof(struct backup_disk_sb, sb_csum2))) {
		snprintf(err, errlen, "%s: backup header second checksum 0x%08x, expected 0x%08x", path,
			 rf_get_le32(d->sb_csum2.b), rf_backup_csum(d, offsetof(struct backup_disk_sb, sb_csum2)));
		return -EINVAL;
	}
	memcpy(b->uuid, d->set_uuid, 16);
	b->mtime = rf_get_le64(d->mtime.b);
	b->devstart = rf_get_le64(d->devstart.b);
	b->arraystart = rf_get_le64(d->arraystart.b);
	b->length = rf_get_le64(d->length.b);
	if (b->version == 2) {
		b->devstart2 = rf_get_le64(d->devstart2.b);
		b->arraystart2 = rf_get_le64(d->arraystart2.b);
		b->length2 = rf_get_le64(d->length2.b);
	}
	if (b->devstart >= lim || b->arraystart >= lim || b->length >= lim || b->devstart2 >= lim ||
	    b->arraystart2 >= lim || b->length2 >= lim) {
		snprintf(err, errlen, "%s: backup header names sectors past 2^63 (devstart %llu, arraystart %llu, "
			 "length %llu)", path, (unsigned long long)b->devstart, (unsigned long long)b->arraystart,
			 (unsigned long long)b->length);
		return -EINVAL;
	}
	return 0;
}

void rf_backup_span(const struct rf_backup_sb *b, uint64_t *lo, uint64_t *hi)
{
	*lo = *hi = 0;
	if (b->length) {
		*lo = b->arraystart;
		*hi = b->arraystart + b->length;
	}
	if (b->version == 2 && b->length2) {
		uint64_t lo2 = b->arraystart2, hi2 = b->arraystart2 + b->length2;

		if (*lo == *hi) {
			*lo = lo2;
			*hi = hi2;
		} else {
			*lo = lo2 < *lo ? lo2 : *lo;
			*hi = hi2 > *hi ? hi2 : *hi;
		}
	}
}

int rf_backup_sections(const struct rf_backup_sb *b, struct rf_backup_section s[2])
{
	int n = 0;

	if (b->length)
		s[n++] = (struct rf_backup_section){ b->devstart, b->arraystart, b->length };
	if (b->version == 2 && b->length2)
		s[n++] = (struct rf_backup_section){ b->devstart + b->devstart2, b->arraystart2, b->length2 };
	if (n == 2 && s[1].arraystart < s[0].arraystart) {
		struct rf_backup_section t = s[0];

		s[0] = s[1];
		s[1] = t;
	}
	return n;
}
