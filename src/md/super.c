/* SPDX-License-Identifier: GPL-2.0-or-later */
/* super.c - md superblocks: 0.90, 1.0, 1.1 and 1.2 read and checked, 1.2
 * written and updated, and printed the way mdadm --examine prints them.
 *
 * The layouts below are md's (include/uapi/linux/raid/md_p.h), written out
 * again as raidfuse's own structs whose sizes and offsets are asserted at
 * compile time.  1.x is little-endian on every host: its fields have
 * byte-array types (raidfuse/le.h), so the only way to read one is
 * through rf_le16/32/64(), and a field read without them does not
 * compile.  0.90 is in the byte order of the host that wrote it, as md
 * has it; a 0.90 superblock whose magic reads byte-swapped comes from a
 * host of the other order and is refused with a message saying so.
 *
 * Checking is strict: a superblock is used only if its magic, version and
 * checksum are right and every field raidfuse relies on is inside the
 * member (data_offset, data_size, the used size) and consistent (level,
 * layout, chunk, raid_disks, dev_number within max_dev, no role twice).  A
 * member that fails gets a message naming its path, the metadata version
 * and the field.  Features raidfuse cannot serve (a reshape, a journal,
 * clustering) are decoded here and refused by the assembler, which knows
 * what it serves.
 *
 * Where a superblock sits (sectors, member of S sectors):
 *   0.90  (S & ~127) - 128          64 KiB aligned, the last 64 KiB block
 *   1.0   (S - 16) & ~7             8 to 12 KiB before the end, 4 KiB aligned
 *   1.1   0
 *   1.2   8
 * rf_sb_read() looks at all four and refuses two valid ones of different
 * kinds: a member re-created with other metadata can keep the old one, and
 * picking either silently could serve the wrong array.
 *
 * What this file does NOT do: decide which members make an array (the
 * assembler does), or touch anything but the superblock and, for a new 1.2
 * superblock, its empty bad block log.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "raidfuse/fdio.h"
#include "raidfuse/le.h"
#include "raidfuse/ppl.h"
#include "raidfuse/super.h"
#include "raidfuse/util.h"

#define MD_MAGIC                0xa92b4efcu
#define SB1_ROLES_OFF           256     /* dev_roles[] follow the fixed part */
#define MD090_RESERVED          128     /* sectors md keeps at the end for 0.90 */
#define MD090_MAX_SECTOR        0xffffffffu

/* ------------------------------------------------------------------ 1.x */

/* md's struct mdp_superblock_1: 256 bytes, then max_dev le16 roles. */
struct sb1 {
	rf_le32_t magic;
	rf_le32_t major_version;        /* 1 */
	rf_le32_t feature_map;
	rf_le32_t pad0;
	uint8_t set_uuid[16];
	char set_name[32];
	rf_le64_t ctime;                /* low 40 bits seconds, high 24 microseconds */
	rf_le32_t level;
	rf_le32_t layout;
	rf_le64_t size;                 /* used sectors of each member */
	rf_le32_t chunksize;            /* sectors */
	rf_le32_t raid_disks;
	rf_le32_t bitmap_offset;        /* signed sectors from the superblock */
	rf_le32_t new_level;
	rf_le64_t reshape_position;
	rf_le32_t delta_disks;
	rf_le32_t new_layout;
	rf_le32_t new_chunk;
	rf_le32_t new_offset;
	rf_le64_t data_offset;
	rf_le64_t data_size;
	rf_le64_t super_offset;
	rf_le64_t recovery_offset;
	rf_le32_t dev_number;
	rf_le32_t cnt_corrected_read;
	uint8_t device_uuid[16];
	uint8_t devflags;
	uint8_t bblog_shift;
	rf_le16_t bblog_size;
	rf_le32_t bblog_offset;         /* signed sectors from the superblock */
	rf_le64_t utime;
	rf_le64_t events;
	rf_le64_t resync_offset;
	rf_le32_t sb_csum;
	rf_le32_t max_dev;
	uint8_t pad3[32];
	rf_le16_t dev_roles[];
};
_Static_assert(sizeof(struct sb1) == 256, "1.x superblock is 256 bytes before dev_roles");
_Static_assert(offsetof(struct sb1, set_name) == 32, "set_name");
_Static_assert(offsetof(struct sb1, ctime) == 64, "ctime");
_Static_assert(offsetof(struct sb1, size) == 80, "size");
_Static_assert(offsetof(struct sb1, bitmap_offset) == 96, "bitmap_offset");
_Static_assert(offsetof(struct sb1, data_offset) == 128, "data_offset");
_Static_assert(offsetof(struct sb1, recovery_offset) == 152, "recovery_offset");
_Static_assert(offsetof(struct sb1, dev_number) == 160, "dev_number");
_Static_assert(offsetof(struct sb1, devflags) == 184, "devflags");
_Static_assert(offsetof(struct sb1, bblog_offset) == 188, "bblog_offset");
_Static_assert(offsetof(struct sb1, utime) == 192, "utime");
_Static_assert(offsetof(struct sb1, sb_csum) == 216, "sb_csum");
_Static_assert(offsetof(struct sb1, max_dev) == 220, "max_dev");
_Static_assert(offsetof(struct sb1, dev_roles) == SB1_ROLES_OFF, "dev_roles");
_Static_assert(SB1_ROLES_OFF + 2 * RF_SB_MAX_DEV == RF_SB_BYTES, "max_dev fills 4 KiB");

/* md's 1.x checksum: the 32-bit little-endian words of the first
 * 256 + 2 * max_dev bytes (sb_csum counted as 0) and a trailing 16-bit word
 * summed in 64 bits, then the high half folded into the low once. */
static uint32_t sb1_csum(const uint8_t *p, uint32_t max_dev)
{
	size_t len = SB1_ROLES_OFF + 2 * (size_t)max_dev, i;
	uint64_t sum = 0;

	for (i = 0; i + 4 <= len; i += 4) {
		if (i == offsetof(struct sb1, sb_csum))
			continue;
		sum += rf_get_le32(p + i);
	}
	if (len - i == 2)
		sum += rf_get_le16(p + i);
	return (uint32_t)((sum & 0xffffffffu) + (sum >> 32));
}

/* ----------------------------------------------------------------- 0.90 */

/* md's mdp_super_t: 1024 host-order 32-bit words. */
struct disk090 {
	uint32_t number, major, minor, raid_disk, state;
	uint32_t reserved[27];
};
_Static_assert(sizeof(struct disk090) == 128, "0.90 disk descriptor is 32 words");

struct sb090 {
	/* generic constant words 0..31 */
	uint32_t md_magic, major_version, minor_version, patch_version;
	uint32_t gvalid_words, set_uuid0, ctime, level, size;   /* size: KiB */
	uint32_t nr_disks, raid_disks, md_minor, not_persistent;
	uint32_t set_uuid1, set_uuid2, set_uuid3;
	uint32_t gstate_creserved[16];
	/* generic state words 32..63 */
	uint32_t utime, state, active_disks, working_disks, failed_disks, spare_disks;
	uint32_t sb_csum;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	uint32_t events_hi, events_lo, cp_events_hi, cp_events_lo;
#else
	uint32_t events_lo, events_hi, cp_events_lo, cp_events_hi;
#endif
	uint32_t recovery_cp;
	uint64_t reshape_position;
	uint32_t new_level, delta_disks, new_layout, new_chunk;
	uint32_t gstate_sreserved[14];
	/* personality words 64..127 */
	uint32_t layout, chunk_size;    /* chunk: bytes */
	uint32_t root_pv, root_block;
	uint32_t pstate_reserved[60];
	/* disk descriptors, words 128..991, then this disk at 992 */
	struct disk090 disks[27];       /* fill words 128..991 exactly */
	struct disk090 this_disk;
};
_Static_assert(offsetof(struct sb090, utime) == 32 * 4, "0.90 generic state at word 32");
_Static_assert(offsetof(struct sb090, sb_csum) == 38 * 4, "0.90 sb_csum at word 38");
_Static_assert(offsetof(struct sb090, recovery_cp) == 43 * 4, "0.90 recovery_cp at word 43");
_Static_assert(offsetof(struct sb090, layout) == 64 * 4, "0.90 personality at word 64");
_Static_assert(offsetof(struct sb090, disks) == 128 * 4, "0.90 disks at word 128");
_Static_assert(offsetof(struct sb090, this_disk) == 992 * 4, "0.90 this_disk at word 992");
_Static_assert(sizeof(struct sb090) == 4096, "0.90 superblock is 4 KiB");

#define D090_FAULTY             0
#define D090_ACTIVE             1
#define D090_SYNC               2
#define D090_REMOVED            3
#define D090_WRITEMOSTLY        9
#define D090_FAILFAST           10
#define S090_CLEAN              0
#define S090_BITMAP             8

/* md's 0.90 checksum: the 1024 host-order words (sb_csum as 0) summed in
 * 64 bits, high half folded into the low once. */
static uint32_t sb090_csum(const struct sb090 *sb)
{
	const uint32_t *w = (const uint32_t *)sb;
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < sizeof(*sb) / 4; i++)
		if (i != offsetof(struct sb090, sb_csum) / 4)
			sum += w[i];
	return (uint32_t)((sum & 0xffffffffu) + (sum >> 32));
}

/* --------------------------------------------------------------- common */

const char *rf_sb_kind_name(enum rf_sb_kind k)
{
	switch (k) {
	case RF_SB_090: return "0.90";
	case RF_SB_10:  return "1.0";
	case RF_SB_11:  return "1.1";
	case RF_SB_12:  return "1.2";
	case RF_SB_NONE: break;
	}
	return "none";
}

uint64_t rf_sb_offset(enum rf_sb_kind k, uint64_t s)
{
	switch (k) {
	case RF_SB_090:
		if (s < 2 * MD090_RESERVED)
			return UINT64_MAX;
		return (s & ~(uint64_t)(MD090_RESERVED - 1)) - MD090_RESERVED;
	case RF_SB_10:
		if (s < 24)
			return UINT64_MAX;
		return (s - 16) & ~(uint64_t)7;
	case RF_SB_11:
		return s >= 8 ? 0 : UINT64_MAX;
	case RF_SB_12:
		return s >= 16 ? 8 : UINT64_MAX;
	case RF_SB_NONE:
		break;
	}
	return UINT64_MAX;
}

__attribute__((format(printf, 5, 6)))
static int bad(char *err, size_t errlen, const char *path, enum rf_sb_kind k, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || !errlen)
		return -EINVAL;
	n = snprintf(err, errlen, "%s: %s superblock: ", path, rf_sb_kind_name(k));
	if (n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Level, layout and chunk as md accepts them for the levels raidfuse
 * serves.  Layout numbers are md's (raid5.h ALGORITHM_*, raid10's
 * near | far << 8 | offset << 16). */
static const char *check_geometry(int level, int layout, uint32_t chunk_sectors, int raid_disks,
				  uint32_t feature_map, char *why, size_t len)
{
	int near, far;

	switch (level) {
	case 0:
		/* Which multi-zone layout a raid0 of unequal members uses:
		 * 1 original, 2 alternate (mdadm 4.2 writes 1 by default;
		 * the feature bit says it matters); 0 from older mdadm. */
		if (layout < 0 || layout > 2)
			goto bad_layout;
		break;
	case 1:
		if (layout != 0)
			goto bad_layout;
		break;
	case 4:
		if (layout != 0 && layout != 5)
			goto bad_layout;
		break;
	case 5:
		if (!(layout >= 0 && layout <= 5))
			goto bad_layout;
		break;
	case 6:
		if (!((layout >= 0 && layout <= 5) || (layout >= 8 && layout <= 10) ||
		      (layout >= 16 && layout <= 20)))
			goto bad_layout;
		break;
	case 10:
		near = layout & 255;
		far = (layout >> 8) & 255;
		if ((layout >> 17) || near < 1 || far < 1 || near * far < 2 || near * far > raid_disks)
			goto bad_layout;
		break;
	default:
		snprintf(why, len, "raid level %d is not one raidfuse serves (0, 1, 4, 5, 6, 10)", level);
		return why;
	}
	if (level == 1) {
		if (raid_disks < 1)
			goto bad_disks;
		return NULL;
	}
	if (!rf_is_pow2(chunk_sectors) || chunk_sectors < 8) {
		snprintf(why, len, "chunk size %u sectors is not a power of two of at least 4 KiB",
			 chunk_sectors);
		return why;
	}
	if (chunk_sectors > RF_SB_MAX_CHUNK_SECTORS) {
		snprintf(why, len, "chunk size %u sectors (%llu MiB) is larger than the %u MiB raidfuse serves",
			 chunk_sectors, (unsigned long long)chunk_sectors / 2048, RF_SB_MAX_CHUNK_SECTORS / 2048);
		return why;
	}
	if (raid_disks < (level == 6 ? 4 : level == 0 ? 1 : 2))
		goto bad_disks;
	return NULL;
bad_layout:
	snprintf(why, len, "layout %d is not a raid%d layout", layout, level);
	return why;
bad_disks:
	snprintf(why, len, "raid%d with %d raid devices", level, raid_disks);
	return why;
}

/* Roles: each active role held by one device number, or two (a slot's
 * device and its replacement, md's MD_FEATURE_REPLACEMENT, which only the
 * replacement's own superblock says), none past raid_disks (past the old
 * count while a reshape removes devices: those still hold old rows). */
static int check_roles(const struct rf_sb *sb, const char *path, char *err, size_t errlen)
{
	uint32_t seen[RF_SB_MAX_DEV], twice[RF_SB_MAX_DEV];
	int64_t lim = sb->raid_disks;
	uint32_t i;

	if (sb->reshape && sb->delta_disks < 0 && (int64_t)sb->raid_disks - sb->delta_disks <= RF_SB_MAX_DEV)
		lim = (int64_t)sb->raid_disks - sb->delta_disks;
	for (i = 0; i < (uint32_t)lim && i < RF_SB_MAX_DEV; i++)
		seen[i] = twice[i] = UINT32_MAX;
	for (i = 0; i < sb->max_dev; i++) {
		uint16_t r = sb->dev_roles[i];

		if (r >= RF_SB_ROLE_MAX)
			continue;
		if (r >= lim)
			return bad(err, errlen, path, sb->kind,
				   "device slot %u has role %u but the array has %lld raid devices",
				   i, r, (long long)lim);
		if (twice[r] != UINT32_MAX)
			return bad(err, errlen, path, sb->kind,
				   "role %u is taken by device slots %u, %u and %u (a device and its replacement at "
				   "most)", r, seen[r], twice[r], i);
		if (seen[r] != UINT32_MAX) {
			twice[r] = i;
			continue;
		}
		seen[r] = i;
	}
	return 0;
}

static int parse1(const uint8_t *buf, enum rf_sb_kind k, uint64_t member_sectors, const char *path,
		  struct rf_sb *sb, char *err, size_t errlen)
{
	const struct sb1 *s = (const struct sb1 *)buf;
	uint64_t where = rf_sb_offset(k, member_sectors), end;
	uint32_t max_dev, csum, want, i;
	char why[160];
	const char *w;

	if (rf_le32(s->major_version) != 1)
		return bad(err, errlen, path, k, "major version %u, expected 1", rf_le32(s->major_version));
	max_dev = rf_le32(s->max_dev);
	if (max_dev > RF_SB_MAX_DEV)
		return bad(err, errlen, path, k, "max_dev %u is more than the %d roles a superblock holds",
			   max_dev, RF_SB_MAX_DEV);
	csum = rf_le32(s->sb_csum);
	want = sb1_csum(buf, max_dev);
	if (csum != want)
		return bad(err, errlen, path, k, "checksum %08x should be %08x (damaged superblock)", csum, want);
	if (rf_le64(s->super_offset) != where)
		return bad(err, errlen, path, k, "records super_offset %llu but sits at sector %llu",
			   (unsigned long long)rf_le64(s->super_offset), (unsigned long long)where);

	memset(sb, 0, sizeof(*sb));
	sb->kind = k;
	sb->member_sectors = member_sectors;
	sb->sb_offset = where;
	sb->csum = csum;
	memcpy(sb->uuid, s->set_uuid, 16);
	memcpy(sb->device_uuid, s->device_uuid, 16);
	memcpy(sb->name, s->set_name, 32);
	sb->name[32] = '\0';
	sb->feature_map = rf_le32(s->feature_map);
	sb->level = (int)rf_le32(s->level);
	sb->layout = (int)rf_le32(s->layout);
	sb->chunk_sectors = rf_le32(s->chunksize);
	sb->raid_disks = (int)rf_le32(s->raid_disks);
	sb->size = rf_le64(s->size);
	sb->data_offset = rf_le64(s->data_offset);
	sb->data_size = rf_le64(s->data_size);
	sb->dev_number = rf_le32(s->dev_number);
	sb->max_dev = max_dev;
	for (i = 0; i < max_dev; i++)
		sb->dev_roles[i] = rf_le16(s->dev_roles[i]);
	sb->events = rf_le64(s->events);
	sb->resync_offset = rf_le64(s->resync_offset);
	sb->recovery_offset = rf_le64(s->recovery_offset);
	sb->bitmap = sb->feature_map & RF_SB_FEAT_BITMAP;
	sb->bitmap_offset = (int32_t)rf_le32(s->bitmap_offset);
	sb->clean = sb->resync_offset == RF_SB_MAX_SECTOR;
	sb->ctime = rf_le64(s->ctime) & 0xffffffffffULL;
	sb->utime = rf_le64(s->utime) & 0xffffffffffULL;
	sb->devflags = s->devflags;
	sb->bblog_size = rf_le16(s->bblog_size);
	sb->bblog_offset = (int32_t)rf_le32(s->bblog_offset);
	sb->reshape = sb->feature_map & RF_SB_FEAT_RESHAPE;
	sb->reshape_position = rf_le64(s->reshape_position);
	sb->new_level = (int)rf_le32(s->new_level);
	sb->new_layout = (int)rf_le32(s->new_layout);
	sb->new_chunk = rf_le32(s->new_chunk);
	sb->delta_disks = (int32_t)rf_le32(s->delta_disks);
	sb->new_offset = (int32_t)rf_le32(s->new_offset);
	if (sb->feature_map & (RF_SB_FEAT_PPL | RF_SB_FEAT_MULTI_PPL)) {
		/* md's ppl { le16 offset (signed); le16 size } in bitmap_offset's place */
		const uint8_t *ppl = (const uint8_t *)&s->bitmap_offset;

		sb->ppl_offset = (int16_t)(ppl[0] | ppl[1] << 8);
		sb->ppl_size = (uint16_t)(ppl[2] | ppl[3] << 8);
	}

	if (sb->feature_map & ~RF_SB_FEAT_ALL)
		return bad(err, errlen, path, k, "unknown feature bits 0x%x (feature map 0x%x)",
			   sb->feature_map & ~RF_SB_FEAT_ALL, sb->feature_map);
	if (sb->raid_disks < 1 || sb->raid_disks > RF_SB_MAX_DEV)
		return bad(err, errlen, path, k, "raid_disks %d", sb->raid_disks);
	w = check_geometry(sb->level, sb->layout, sb->level == 1 ? 0 : sb->chunk_sectors,
			   sb->raid_disks, sb->feature_map, why, sizeof(why));
	if (w)
		return bad(err, errlen, path, k, "%s", w);
	if (sb->level == 1)
		sb->chunk_sectors = 0;
	if (sb->reshape && sb->new_chunk > RF_SB_MAX_CHUNK_SECTORS)
		return bad(err, errlen, path, k, "new chunk size %u sectors (%llu MiB) is larger than the %u MiB "
			   "raidfuse serves", sb->new_chunk, (unsigned long long)sb->new_chunk / 2048,
			   RF_SB_MAX_CHUNK_SECTORS / 2048);

	/* The data area must lie inside the member and clear of the
	 * superblock: after it for 1.1/1.2, before it for 1.0. */
	if (__builtin_add_overflow(sb->data_offset, sb->data_size, &end) || end > member_sectors)
		return bad(err, errlen, path, k,
			   "data_offset %llu + data_size %llu sectors is past the end of the member (%llu sectors)",
			   (unsigned long long)sb->data_offset, (unsigned long long)sb->data_size,
			   (unsigned long long)member_sectors);
	if (k == RF_SB_10 && end > where)
		return bad(err, errlen, path, k,
			   "data (sectors %llu..%llu) runs into the superblock at sector %llu",
			   (unsigned long long)sb->data_offset, (unsigned long long)end,
			   (unsigned long long)where);
	if (k != RF_SB_10 && sb->data_offset < where + 2)
		return bad(err, errlen, path, k, "data_offset %llu overlaps the superblock at sector %llu",
			   (unsigned long long)sb->data_offset, (unsigned long long)where);
	if (sb->data_size == 0)
		return bad(err, errlen, path, k, "data_size is 0");
	if (sb->size > sb->data_size)
		return bad(err, errlen, path, k, "used size %llu sectors is more than data_size %llu",
			   (unsigned long long)sb->size, (unsigned long long)sb->data_size);
	if (sb->level != 0 && sb->size == 0)
		return bad(err, errlen, path, k, "used size is 0 for raid%d", sb->level);
	if ((sb->feature_map & RF_SB_FEAT_RECOVERY) && sb->recovery_offset > sb->data_size)
		return bad(err, errlen, path, k, "recovery_offset %llu is past data_size %llu",
			   (unsigned long long)sb->recovery_offset, (unsigned long long)sb->data_size);

	/* This member's role comes from its slot in dev_roles. */
	if (sb->dev_number >= max_dev)
		return bad(err, errlen, path, k, "dev_number %u is outside the %u role slots",
			   sb->dev_number, max_dev);
	sb->role = sb->dev_roles[sb->dev_number];
	if (sb->role >= RF_SB_ROLE_MAX && sb->role != RF_SB_ROLE_SPARE &&
	    sb->role != RF_SB_ROLE_FAULTY && sb->role != RF_SB_ROLE_JOURNAL)
		return bad(err, errlen, path, k, "dev_number %u has unknown role 0x%x", sb->dev_number,
			   sb->role);
	return check_roles(sb, path, err, errlen);
}

static int parse090(const uint8_t *buf, uint64_t member_sectors, const char *path,
		    struct rf_sb *sb, char *err, size_t errlen)
{
	const enum rf_sb_kind k = RF_SB_090;
	struct sb090 s;
	uint32_t want, i, chunk;
	char why[160];
	const char *w;

	memcpy(&s, buf, sizeof(s));
	if (s.major_version != 0 || (s.minor_version != 90 && s.minor_version != 91))
		return bad(err, errlen, path, k, "version %u.%u.%u, expected 0.90", s.major_version,
			   s.minor_version, s.patch_version);
	want = sb090_csum(&s);
	if (s.sb_csum != want)
		return bad(err, errlen, path, k, "checksum %08x should be %08x (damaged superblock)",
			   s.sb_csum, want);

	memset(sb, 0, sizeof(*sb));
	sb->kind = k;
	sb->member_sectors = member_sectors;
	sb->sb_offset = rf_sb_offset(k, member_sectors);
	sb->csum = s.sb_csum;
	memcpy(sb->uuid, &s.set_uuid0, 4);
	memcpy(sb->uuid + 4, &s.set_uuid1, 4);
	memcpy(sb->uuid + 8, &s.set_uuid2, 4);
	memcpy(sb->uuid + 12, &s.set_uuid3, 4);
	sb->level = (int)s.level;
	sb->layout = (int)s.layout;
	chunk = s.chunk_size;
	sb->raid_disks = (int)s.raid_disks;
	sb->size = (uint64_t)s.size * 2;
	sb->data_offset = 0;
	sb->data_size = sb->sb_offset;
	sb->events = (uint64_t)s.events_hi << 32 | s.events_lo;
	sb->resync_offset = s.recovery_cp == MD090_MAX_SECTOR ? RF_SB_MAX_SECTOR : s.recovery_cp;
	sb->clean = s.state & (1u << S090_CLEAN);
	sb->bitmap = s.state & (1u << S090_BITMAP);
	sb->feature_map = sb->bitmap ? RF_SB_FEAT_BITMAP : 0;
	sb->reshape = s.minor_version >= 91;
	sb->reshape_position = s.reshape_position;
	sb->new_level = (int)s.new_level;
	sb->new_layout = (int)s.new_layout;
	sb->new_chunk = s.new_chunk / 512;
	sb->delta_disks = (int32_t)s.delta_disks;
	sb->ctime = s.ctime;
	sb->utime = s.utime;
	sb->v090.minor = s.minor_version;
	sb->v090.patch = s.patch_version;
	sb->v090.nr_disks = s.nr_disks;
	sb->v090.md_minor = s.md_minor;
	sb->v090.active = s.active_disks;
	sb->v090.working = s.working_disks;
	sb->v090.failed = s.failed_disks;
	sb->v090.spare = s.spare_disks;
	for (i = 0; i < 27; i++) {
		sb->v090.disks[i].number = s.disks[i].number;
		sb->v090.disks[i].major = s.disks[i].major;
		sb->v090.disks[i].minor = s.disks[i].minor;
		sb->v090.disks[i].raid_disk = s.disks[i].raid_disk;
		sb->v090.disks[i].state = s.disks[i].state;
	}
	sb->v090.this_disk.number = s.this_disk.number;
	sb->v090.this_disk.major = s.this_disk.major;
	sb->v090.this_disk.minor = s.this_disk.minor;
	sb->v090.this_disk.raid_disk = s.this_disk.raid_disk;
	sb->v090.this_disk.state = s.this_disk.state;
	sb->devflags = (s.this_disk.state & (1u << D090_WRITEMOSTLY) ? RF_SB_DEVFLAG_WRITE_MOSTLY : 0) |
		       (s.this_disk.state & (1u << D090_FAILFAST) ? RF_SB_DEVFLAG_FAILFAST : 0);

	if (s.raid_disks < 1 || s.raid_disks > 27)
		return bad(err, errlen, path, k, "raid_disks %u (0.90 holds 1 to 27)", s.raid_disks);
	if (sb->level != 1 && chunk % 512)
		return bad(err, errlen, path, k, "chunk size %u bytes is not whole sectors", chunk);
	sb->chunk_sectors = sb->level == 1 ? 0 : chunk / 512;
	w = check_geometry(sb->level, sb->layout, sb->chunk_sectors, sb->raid_disks, 0, why, sizeof(why));
	if (w)
		return bad(err, errlen, path, k, "%s", w);
	if (sb->level != 0 && sb->size == 0)
		return bad(err, errlen, path, k, "used size is 0 for raid%d", sb->level);
	if (sb->size > sb->data_size)
		return bad(err, errlen, path, k,
			   "used size %llu sectors runs into the superblock at sector %llu",
			   (unsigned long long)sb->size, (unsigned long long)sb->sb_offset);

	/* Slots are the disk descriptors; a slot's role is its raid_disk
	 * when it is active and in sync, else faulty or spare. */
	sb->max_dev = 27;
	for (i = 0; i < 27; i++) {
		const struct disk090 *d = &s.disks[i];

		if (d->state & (1u << D090_FAULTY))
			sb->dev_roles[i] = RF_SB_ROLE_FAULTY;
		else if ((d->state & (1u << D090_ACTIVE)) && (d->state & (1u << D090_SYNC)) &&
			 d->raid_disk < RF_SB_ROLE_MAX)
			sb->dev_roles[i] = (uint16_t)d->raid_disk;
		else
			sb->dev_roles[i] = RF_SB_ROLE_SPARE;
	}
	if (s.this_disk.number >= 27)
		return bad(err, errlen, path, k, "this disk's number %u is outside the 27 slots",
			   s.this_disk.number);
	sb->dev_number = s.this_disk.number;
	sb->role = sb->dev_roles[sb->dev_number];
	if (sb->role < RF_SB_ROLE_MAX && (uint32_t)sb->role != s.this_disk.raid_disk)
		return bad(err, errlen, path, k, "this disk is raid device %u but slot %u says %d",
			   s.this_disk.raid_disk, sb->dev_number, sb->role);
	return check_roles(sb, path, err, errlen);
}

uint32_t rf_sb_csum(const void *buf, enum rf_sb_kind k)
{
	const uint8_t *p = buf;
	uint32_t max_dev;

	if (k == RF_SB_090) {
		struct sb090 s;

		memcpy(&s, buf, sizeof(s));
		return sb090_csum(&s);
	}
	max_dev = rf_le32(((const struct sb1 *)p)->max_dev);
	return sb1_csum(p, max_dev < RF_SB_MAX_DEV ? max_dev : RF_SB_MAX_DEV);
}

int rf_sb_parse(const void *buf, enum rf_sb_kind k, uint64_t member_sectors, const char *path,
		struct rf_sb *sb, char *err, size_t errlen)
{
	const uint8_t *p = buf;
	uint32_t host_magic;

	if (rf_sb_offset(k, member_sectors) == UINT64_MAX)
		return -ENOENT;
	memcpy(&host_magic, p, 4);
	if (k == RF_SB_090) {
		if (host_magic == MD_MAGIC)
			return parse090(p, member_sectors, path, sb, err, errlen);
		if (host_magic == __builtin_bswap32(MD_MAGIC))
			return bad(err, errlen, path, k,
				   "written by a host of the other byte order (0.90 is host-endian); "
				   "not supported");
		return -ENOENT;
	}
	if (rf_le32(((const struct sb1 *)p)->magic) != MD_MAGIC)
		return -ENOENT;
	return parse1(p, k, member_sectors, path, sb, err, errlen);
}

static int fd_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	return rf_pread_full((int)(intptr_t)ctx, buf, len, off);
}

static int fd_pwrite(void *ctx, const void *buf, size_t len, uint64_t off)
{
	return rf_pwrite_full((int)(intptr_t)ctx, buf, len, off);
}

static int fd_fsync(void *ctx)
{
	return rf_fsync_full((int)(intptr_t)ctx);
}

int rf_sb_io_fd(struct rf_sb_io *io, int fd)
{
	off_t end = lseek(fd, 0, SEEK_END);

	if (end < 0)
		return -errno;
	io->pread = fd_pread;
	io->pwrite = fd_pwrite;
	io->fsync = fd_fsync;
	io->ctx = (void *)(intptr_t)fd;
	io->bytes = (uint64_t)end;
	return 0;
}

/* The direct adapter's context: the descriptor in the low 32 bits, the
 * alignment's log2 above (no allocation for an adapter with no close). */
_Static_assert(sizeof(intptr_t) >= 8, "fd and alignment packed in one pointer");

static int dfd(void *ctx)
{
	return (int)((uintptr_t)ctx & 0xffffffffu);
}

static uint32_t dalign(void *ctx)
{
	return 1u << ((uintptr_t)ctx >> 32);
}

static int direct_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	return rf_pread_direct(dfd(ctx), dalign(ctx), buf, len, off);
}

static int direct_pwrite(void *ctx, const void *buf, size_t len, uint64_t off)
{
	return rf_pwrite_direct(dfd(ctx), dalign(ctx), buf, len, off);
}

static int direct_fsync(void *ctx)
{
	return rf_fsync_full(dfd(ctx));
}

int rf_sb_io_fd_direct(struct rf_sb_io *io, int fd, uint32_t align)
{
	off_t end = lseek(fd, 0, SEEK_END);

	if (end < 0)
		return -errno;
	if (fd < 0 || !align || (align & (align - 1)))
		return -EINVAL;
	io->pread = direct_pread;
	io->pwrite = direct_pwrite;
	io->fsync = direct_fsync;
	io->ctx = (void *)(((uintptr_t)__builtin_ctz(align) << 32) | (uint32_t)fd);
	io->bytes = (uint64_t)end;
	return 0;
}

static int read_at(const struct rf_sb_io *io, void *buf, uint64_t sector)
{
	return io->pread(io->ctx, buf, RF_SB_BYTES, sector * 512);
}

int rf_sb_read(int fd, const char *path, struct rf_sb *sb, char *err, size_t errlen)
{
	struct rf_sb_io io;
	int r = rf_sb_io_fd(&io, fd);

	if (r) {
		snprintf(err, errlen, "%s: cannot find its size: %s", path, strerror(-r));
		return r;
	}
	return rf_sb_read_io(&io, path, sb, err, errlen);
}

int rf_sb_read_io(const struct rf_sb_io *io, const char *path, struct rf_sb *sb, char *err, size_t errlen)
{
	static const enum rf_sb_kind order[] = { RF_SB_12, RF_SB_11, RF_SB_10, RF_SB_090 };
	struct rf_sb *tmp;
	uint8_t *buf;
	uint64_t sectors = io->bytes / 512;
	char first_err[512] = "";
	enum rf_sb_kind found = RF_SB_NONE;
	size_t i;
	int r;

	buf = malloc(RF_SB_BYTES);
	tmp = malloc(sizeof(*tmp));
	if (!buf || !tmp) {
		free(buf);
		free(tmp);
		snprintf(err, errlen, "%s: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		enum rf_sb_kind k = order[i];
		uint64_t at = rf_sb_offset(k, sectors);

		if (at == UINT64_MAX)
			continue;
		r = read_at(io, buf, at);
		if (r) {
			snprintf(err, errlen, "%s: read at sector %llu: %s", path, (unsigned long long)at,
				 strerror(-r));
			goto out;
		}
		r = rf_sb_parse(buf, k, sectors, path, tmp, err, errlen);
		if (r == -ENOENT)
			continue;
		if (r) {
			if (!first_err[0])
				snprintf(first_err, sizeof(first_err), "%s", err);
			continue;
		}
		if (found != RF_SB_NONE) {
			snprintf(err, errlen,
				 "%s: ambiguous: both a %s superblock (sector %llu) and a %s superblock (sector %llu) "
				 "are valid; wipe the stale one (mdadm --zero-superblock --metadata=...) first",
				 path, rf_sb_kind_name(found), (unsigned long long)sb->sb_offset,
				 rf_sb_kind_name(k), (unsigned long long)at);
			r = -EINVAL;
			goto out;
		}
		found = k;
		*sb = *tmp;
	}
	if (found != RF_SB_NONE) {
		r = 0;
	} else if (first_err[0]) {
		snprintf(err, errlen, "%s", first_err);
		r = -EINVAL;
	} else if (rf_sb_offset(RF_SB_10, sectors) == UINT64_MAX) {
		snprintf(err, errlen, "%s: no md superblock: %llu bytes is too small to hold one", path,
			 (unsigned long long)sectors * 512);
		r = -ENOENT;
	} else {
		char at090[32] = "none: too small";

		if (rf_sb_offset(RF_SB_090, sectors) != UINT64_MAX)
			snprintf(at090, sizeof(at090), "%llu",
				 (unsigned long long)rf_sb_offset(RF_SB_090, sectors));
		snprintf(err, errlen, "%s: no md superblock (looked for 1.2 at sector 8, 1.1 at 0, "
			 "1.0 at %llu, 0.90 at %s)", path,
			 (unsigned long long)rf_sb_offset(RF_SB_10, sectors), at090);
		r = -ENOENT;
	}
out:
	free(buf);
	free(tmp);
	return r;
}

/* ---------------------------------------------------------------- write */

/* Bitmap room mdadm keeps (super1.c choose_bm_space) for sectors: none
 * below 64 KiB, 4 KiB, 64 KiB past 8 GiB, 128 KiB past 200 GiB. */
uint64_t rf_sb_bitmap_room(uint64_t sectors)
{
	if (sectors < 64 * 2)
		return 0;
	if (sectors - 64 * 2 >= 200ULL * 1024 * 1024 * 2)
		return 128 * 2;
	if (sectors - 4 * 2 > 8ULL * 1024 * 1024 * 2)
		return 64 * 2;
	return 4 * 2;
}

uint64_t rf_sb_default_data_offset(uint64_t member_sectors, uint32_t chunk_sectors)
{
	return rf_sb_data_offset_room(member_sectors, chunk_sectors, rf_sb_bitmap_room(member_sectors));
}

uint64_t rf_sb_data_offset_room(uint64_t member_sectors, uint32_t chunk_sectors, uint64_t room)
{
	/* mdadm 4.2 (super1.c, validate_geometry1): room for the superblock
	 * and bad block log (12 KiB), the bitmap room (or, with a partial
	 * parity log, its 1 MiB area), and headroom for a later reshape:
	 * 128 MiB, halved while it is more than about 0.1% of the member,
	 * but not below two chunks; the sum rounded up to a whole MiB. */
	uint64_t headroom = 128 * 1024 * 2, off;

	while ((headroom << 10) > member_sectors &&
	       (chunk_sectors == 0 || headroom / 2 >= (uint64_t)chunk_sectors * 2))
		headroom >>= 1;
	off = 12 * 2 + room + headroom;
	return (off + 2047) / 2048 * 2048;
}

/* libuuid's random (version 4) uuid: 122 bits from the kernel's random
 * generator, the version and variant bits as RFC 4122 sets them (mdadm
 * takes 16 plain random bytes; md stores and prints either as it is). */
int rf_sb_random_uuid(uint8_t uuid[16])
{
	uuid_generate_random(uuid);
	return 0;
}

int rf_sb_build12(const struct rf_sb_new *n, int role, uint64_t member_sectors, void *buf,
		  char *err, size_t errlen)
{
	const enum rf_sb_kind k = RF_SB_12;
	struct sb1 *s = buf;
	uint32_t max_dev, i;
	uint64_t bm;
	char why[160];
	const char *w;
	size_t nl;

	w = check_geometry(n->level, n->layout, n->chunk_sectors, n->raid_disks, 0, why, sizeof(why));
	if (w)
		return bad(err, errlen, "new array", k, "%s", w);
	/* Roles past raid_disks are spares' device numbers (their entries
	 * in dev_roles say spare). */
	max_dev = (uint32_t)((SB1_ROLES_OFF + 2 * (size_t)n->raid_disks + 511) / 512 * 512 - SB1_ROLES_OFF) / 2;
	if (role < 0 || (uint32_t)role >= max_dev)
		return bad(err, errlen, "new array", k, "device %d of %u", role, max_dev);
	if (n->data_offset < 16 || n->data_offset >= member_sectors)
		return bad(err, errlen, "new array", k,
			   "data_offset %llu sectors must be at least 16 (after the superblock) and inside the "
			   "member (%llu sectors)", (unsigned long long)n->data_offset,
			   (unsigned long long)member_sectors);
	if (n->size > member_sectors - n->data_offset)
		return bad(err, errlen, "new array", k, "size %llu sectors does not fit after data_offset",
			   (unsigned long long)n->size);

	memset(buf, 0, RF_SB_BYTES);
	s->magic = rf_to_le32(MD_MAGIC);
	s->major_version = rf_to_le32(1);
	memcpy(s->set_uuid, n->uuid, 16);
	nl = strnlen(n->name, sizeof(n->name));
	if (nl > 31)
		nl = 31;
	memcpy(s->set_name, n->name, nl);
	s->ctime = rf_to_le64(n->ctime & 0xffffffffffULL);
	s->utime = s->ctime;
	s->level = rf_to_le32((uint32_t)n->level);
	s->layout = rf_to_le32((uint32_t)n->layout);
	s->size = rf_to_le64(n->size);
	s->chunksize = rf_to_le32(n->chunk_sectors);
	s->raid_disks = rf_to_le32((uint32_t)n->raid_disks);
	s->data_offset = rf_to_le64(n->data_offset);
	s->data_size = rf_to_le64(member_sectors - n->data_offset);
	s->super_offset = rf_to_le64(rf_sb_offset(k, member_sectors));
	s->dev_number = rf_to_le32((uint32_t)role);
	if (role < 64)
		s->devflags = (uint8_t)((n->write_mostly >> role & 1 ? RF_SB_DEVFLAG_WRITE_MOSTLY : 0) |
					(n->failfast >> role & 1 ? RF_SB_DEVFLAG_FAILFAST : 0));
	if (rf_sb_random_uuid(s->device_uuid))
		return bad(err, errlen, "new array", k, "no random bytes for the device uuid: %s",
			   strerror(errno));
	/* The bad block log: after the bitmap room, as mdadm places it, or
	 * just before the data when that room is short and holds no bitmap
	 * or log (none then, rather than over either). */
	bm = n->bitmap_sectors ? n->bitmap_sectors : n->ppl ? RF_SB_PPL_SECTORS : rf_sb_bitmap_room(n->size);
	if (n->ppl) {
		/* md's ppl { le16 offset; le16 size } in bitmap_offset's place,
		 * 8 sectors after the superblock, several PPLs in a row (the
		 * feature bit md leaves on an area of 1 MiB) */
		uint8_t *ppl = (uint8_t *)&s->bitmap_offset;

		if (n->bitmap_sectors || n->level != 5 || n->data_offset < 8 + 8 + RF_SB_PPL_SECTORS)
			return bad(err, errlen, "new array", k,
				   "a partial parity log needs raid5, no bitmap, and %u sectors after the superblock "
				   "(data at %llu)", RF_SB_PPL_SECTORS, (unsigned long long)n->data_offset);
		rf_put_le16(ppl, 8);
		rf_put_le16(ppl + 2, RF_SB_PPL_SECTORS);
		s->feature_map = rf_to_le32(RF_SB_FEAT_MULTI_PPL);
	}
	if (n->bitmap_sectors) {
		if (n->data_offset < 8 + 8 + (uint64_t)n->bitmap_sectors)
			return bad(err, errlen, "new array", k,
				   "a bitmap of %u sectors after the superblock runs into the data at %llu",
				   n->bitmap_sectors, (unsigned long long)n->data_offset);
		s->feature_map = rf_to_le32(RF_SB_FEAT_BITMAP);
		s->bitmap_offset = rf_to_le32(8);
	}
	if (n->data_offset >= 8 + 8 + bm + 8) {
		s->bblog_size = rf_to_le16(8);
		s->bblog_offset = rf_to_le32((uint32_t)(8 + bm));
	} else if (n->data_offset >= 8 + 16 && !n->bitmap_sectors && !n->ppl) {
		s->bblog_size = rf_to_le16(8);
		s->bblog_offset = rf_to_le32((uint32_t)(n->data_offset - 8 - 8));
	}
	if (n->level == 0 && n->raid0_layout)
		s->feature_map = rf_to_le32(rf_le32(s->feature_map) | RF_SB_FEAT_RAID0_LAYOUT);
	s->events = rf_to_le64(0);
	s->resync_offset = rf_to_le64(n->clean ? RF_SB_MAX_SECTOR : 0);
	/* Role slots in whole 512-byte blocks, as mdadm sizes them. */
	s->max_dev = rf_to_le32(max_dev);
	for (i = 0; i < RF_SB_MAX_DEV; i++)
		s->dev_roles[i] = rf_to_le16(i < (uint32_t)n->raid_disks && !(i < 64 && (n->spare_slots >> i & 1)) ?
					     (uint16_t)i : RF_SB_ROLE_SPARE);
	s->sb_csum = rf_to_le32(sb1_csum(buf, max_dev));
	return 0;
}

int rf_sb_write12_io(const struct rf_sb_io *io, const char *path, const struct rf_sb_new *n, int role,
		  uint64_t member_sectors, char *err, size_t errlen)
{
	uint8_t *buf = malloc(RF_SB_BYTES);
	const struct sb1 *s = (const struct sb1 *)buf;
	int r;

	if (!buf)
		return -ENOMEM;
	r = rf_sb_build12(n, role, member_sectors, buf, err, errlen);
	if (r) {
		/* Say which member it was for. */
		char why[512];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "%s: %s", path, why);
		goto out;
	}
	r = io->pwrite(io->ctx, buf, RF_SB_BYTES, rf_sb_offset(RF_SB_12, member_sectors) * 512);
	if (!r && rf_le16(s->bblog_size)) {
		/* An empty bad block log reads as all ones (md's end marker). */
		uint64_t at = (8 + (uint64_t)(int32_t)rf_le32(s->bblog_offset)) * 512;
		uint8_t *log = malloc(rf_le16(s->bblog_size) * 512);

		if (!log) {
			r = -ENOMEM;
		} else {
			memset(log, 0xff, rf_le16(s->bblog_size) * 512);
			r = io->pwrite(io->ctx, log, rf_le16(s->bblog_size) * 512, at);
			free(log);
		}
	}
	if (!r)
		r = io->fsync(io->ctx);
	if (r)
		snprintf(err, errlen, "%s: writing the 1.2 superblock: %s", path, strerror(-r));
out:
	free(buf);
	return r;
}

int rf_sb_write12(int fd, const char *path, const struct rf_sb_new *n, int role,
		  uint64_t member_sectors, char *err, size_t errlen)
{
	struct rf_sb_io io;
	int r = rf_sb_io_fd(&io, fd);

	if (r) {
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	return rf_sb_write12_io(&io, path, n, role, member_sectors, err, errlen);
}

/* 0.90: slot's descriptor says faulty, and the counts follow. */
static void mark_faulty090(struct sb090 *s, int slot)
{
	struct disk090 *d = &s->disks[slot];
	bool was = (d->state & (1u << D090_ACTIVE)) && (d->state & (1u << D090_SYNC));

	if (d->state & (1u << D090_FAULTY))
		return;
	d->state = 1u << D090_FAULTY;
	if (was) {
		s->active_disks -= !!s->active_disks;
		s->working_disks -= !!s->working_disks;
	}
	s->failed_disks++;
	if (s->this_disk.number == (uint32_t)slot)
		s->this_disk.state = d->state;
}

/* 0.90: whether descriptor n lists no device (md zeroes the unused). */
static bool empty090(const struct disk090 *d, uint32_t n)
{
	return !d->state && !d->number && !d->raid_disk && !d->major && !d->minor && n;
}

/* 0.90: descriptor n becomes a spare's ({n, n, state 0}, md's
 * "compatibility" raid_disk), counted as md counts it; nothing when it
 * is that already. */
static void add_spare090(struct sb090 *s, uint32_t n)
{
	struct disk090 *d = &s->disks[n];

	if (!d->state && d->number == n && d->raid_disk == n && n)
		return;
	/* Over a faulty device's old descriptor (md would have renumbered
	 * it): that one was counted as a disk already. */
	s->nr_disks += empty090(d, n) || (d->state & (1u << D090_REMOVED));
	memset(d, 0, sizeof(*d));
	d->number = n;
	d->raid_disk = n;
	s->working_disks++;
	s->spare_disks++;
}

/* 0.90: the spare of descriptor n, rebuilt, takes role r: it is listed
 * at descriptor r, active and in sync, as md lists an in-sync device. */
static void spare_in_sync090(struct sb090 *s, uint32_t n, uint32_t r)
{
	struct disk090 *d = &s->disks[n], *to = &s->disks[r];
	uint32_t major = d->major, minor = d->minor;

	if (n == r || d->state || d->number != n)
		return;         /* not a spare's descriptor (done already) */
	if (to->state & ((1u << D090_FAULTY) | (1u << D090_REMOVED)))
		s->failed_disks -= !!s->failed_disks;
	memset(d, 0, sizeof(*d));
	memset(to, 0, sizeof(*to));
	to->number = r;
	to->raid_disk = r;
	to->major = major;
	to->minor = minor;
	to->state = 1u << D090_ACTIVE | 1u << D090_SYNC;
	s->spare_disks -= !!s->spare_disks;
	s->active_disks++;
	if (s->this_disk.number == n)
		s->this_disk = *to;
}

/* A reshape's progress or end in a 1.x superblock (struct rf_sb_change). */
static void reshape_update1(struct sb1 *s, const struct rf_sb_change *c)
{
	uint32_t f = rf_le32(s->feature_map);

	/* A start, or a position recorded on a superblock that missed the
	 * start (a crash while it was written): the start's fields first. */
	if (c->set_reshape == RF_SB_RESHAPE_START ||
	    (c->set_reshape == RF_SB_RESHAPE_AT && !(f & RF_SB_FEAT_RESHAPE) && c->reshape_raid_disks)) {
		s->raid_disks = rf_to_le32((uint32_t)c->reshape_raid_disks);
		s->delta_disks = rf_to_le32((uint32_t)c->reshape_delta);
		if (c->reshape_geom) {
			s->level = rf_to_le32((uint32_t)c->reshape_level);
			s->layout = rf_to_le32((uint32_t)c->reshape_layout);
			s->new_level = rf_to_le32((uint32_t)c->reshape_new_level);
			s->new_layout = rf_to_le32((uint32_t)c->reshape_new_layout);
			s->new_chunk = rf_to_le32(c->reshape_new_chunk);
		} else {
			s->new_level = s->level;
			s->new_layout = s->layout;
			s->new_chunk = s->chunksize;
		}
		s->reshape_position = rf_to_le64(c->set_reshape == RF_SB_RESHAPE_AT || c->reshape_backwards ?
						 c->reshape_position : 0);
		s->new_offset = rf_to_le32((uint32_t)c->reshape_new_offset);
		/* md sets the feature only where the data moves (a reshape
		 * in place, mdadm's backup file's, has none). */
		f |= RF_SB_FEAT_RESHAPE;
		f = c->reshape_new_offset ? f | RF_SB_FEAT_NEW_OFFSET : f & ~(uint32_t)RF_SB_FEAT_NEW_OFFSET;
		f = c->reshape_backwards ? f | RF_SB_FEAT_RESHAPE_BACK : f & ~(uint32_t)RF_SB_FEAT_RESHAPE_BACK;
		s->feature_map = rf_to_le32(f);
		return;
	}
	if (!(f & RF_SB_FEAT_RESHAPE))
		return;
	if (c->set_reshape == RF_SB_RESHAPE_AT) {
		s->reshape_position = rf_to_le64(c->reshape_position);
		return;
	}
	if (f & RF_SB_FEAT_NEW_OFFSET) {
		int64_t d = (int32_t)rf_le32(s->new_offset);

		s->data_offset = rf_to_le64((uint64_t)((int64_t)rf_le64(s->data_offset) + d));
		s->data_size = rf_to_le64((uint64_t)((int64_t)rf_le64(s->data_size) - d));
	}
	s->level = s->new_level;
	s->layout = s->new_layout;
	s->chunksize = s->new_chunk;
	s->new_offset = rf_to_le32(0);
	s->delta_disks = rf_to_le32(0);
	s->reshape_position = rf_to_le64(0);
	f &= ~(uint32_t)(RF_SB_FEAT_RESHAPE | RF_SB_FEAT_RESHAPE_BACK | RF_SB_FEAT_NEW_OFFSET);
	s->feature_map = rf_to_le32(f);
}

/* Whether c's size change lets a 1.x superblock at the member's start
 * take the member's present size (struct rf_sb_change set_size). */
static bool grows_at_end(enum rf_sb_kind k, const struct rf_sb_change *c)
{
	return c->set_size && c->member_sectors && (k == RF_SB_11 || k == RF_SB_12);
}

/* The used size c may give now's member: 0.90's below its superblock and
 * in its 32-bit KiB field; 1.x's data_size, grown first where
 * grows_at_end(). */
static uint64_t size_room(const struct rf_sb *now, const struct rf_sb_change *c)
{
	uint64_t room;

	if (now->kind == RF_SB_090)
		return now->sb_offset < 2ull * UINT32_MAX ? now->sb_offset : 2ull * UINT32_MAX;
	room = now->data_size;
	if (grows_at_end(now->kind, c) && c->member_sectors > now->data_offset &&
	    c->member_sectors - now->data_offset > room)
		room = c->member_sectors - now->data_offset;
	return room;
}

/* Whether change c may be written over the superblock now holds (sb as
 * assembly read it): the same array and device, and what the kind can
 * record.  0, or -errno with why in err, naming path. */
static int change_refused(const struct rf_sb *sb, const struct rf_sb *now, const struct rf_sb_change *c,
			  const char *path, char *err, size_t errlen)
{
	if (memcmp(now->uuid, sb->uuid, 16) || now->dev_number != sb->dev_number) {
		snprintf(err, errlen, "%s: the superblock changed under raidfuse (another array or slot)", path);
		return -ESTALE;
	}
	if (sb->kind == RF_SB_090 && c->set_ppl) {
		snprintf(err, errlen, "%s: a 0.90 superblock cannot record a partial parity log", path);
		return -EINVAL;
	}
	if (sb->kind == RF_SB_090 && c->set_role &&
	    (c->role_slot >= 27 || (c->role_value < RF_SB_ROLE_MAX && c->role_value >= (unsigned)now->raid_disks) ||
	     (c->role_value >= RF_SB_ROLE_MAX && c->role_value != RF_SB_ROLE_SPARE &&
	      c->role_value != RF_SB_ROLE_FAULTY))) {
		snprintf(err, errlen, "%s: a 0.90 superblock cannot record device %u in role %u", path, c->role_slot,
			 c->role_value);
		return -EINVAL;
	}
	if (c->set_role && c->role_slot >= RF_SB_MAX_DEV) {
		snprintf(err, errlen, "%s: device slot %u is past the %d a superblock holds", path, c->role_slot,
			 RF_SB_MAX_DEV);
		return -EINVAL;
	}
	if (c->faulty_slot >= 0 &&
	    (uint32_t)c->faulty_slot >= (c->roles_from && sb->kind != RF_SB_090 ? c->roles_from->max_dev : now->max_dev)) {
		snprintf(err, errlen, "%s: device slot %d is outside the superblock's %u", path,
			 c->faulty_slot, now->max_dev);
		return -EINVAL;
	}
	if (c->set_size && c->set_size > size_room(now, c)) {
		snprintf(err, errlen, "%s: a used size of %llu sectors does not fit the %s superblock's data area "
			 "(%llu sectors)", path, (unsigned long long)c->set_size, rf_sb_kind_name(sb->kind),
			 (unsigned long long)size_room(now, c));
		return -ENOSPC;
	}
	return 0;
}

/* Change c into the 0.90 superblock in buf: events ev, resync offset
 * resync, update time t. */
static void apply090(uint8_t *buf, const struct rf_sb_change *c, uint64_t ev, uint64_t resync, uint64_t t)
{
	struct sb090 *s = (struct sb090 *)buf;

	s->events_lo = (uint32_t)ev;
	s->events_hi = (uint32_t)(ev >> 32);
	s->utime = (uint32_t)t;
	/* The clean bit: no writes in flight and no resync due. */
	if (c->clean && resync == RF_SB_MAX_SECTOR)
		s->state |= 1u << S090_CLEAN;
	else
		s->state &= ~(1u << S090_CLEAN);
	s->recovery_cp = resync >= MD090_MAX_SECTOR ? MD090_MAX_SECTOR : (uint32_t)resync;
	if (c->faulty_slot >= 0)
		mark_faulty090(s, c->faulty_slot);
	if (c->set_devflags) {
		/* md keeps them in the device's own descriptor. */
		uint32_t bits = 1u << D090_WRITEMOSTLY | 1u << D090_FAILFAST;
		uint32_t want = (c->devflags & RF_SB_DEVFLAG_WRITE_MOSTLY ? 1u << D090_WRITEMOSTLY : 0) |
				(c->devflags & RF_SB_DEVFLAG_FAILFAST ? 1u << D090_FAILFAST : 0);

		s->this_disk.state = (s->this_disk.state & ~bits) | want;
		if (s->this_disk.number < 27)
			s->disks[s->this_disk.number].state =
				(s->disks[s->this_disk.number].state & ~bits) | want;
	}
	/* 0.90 keeps no recovery offset: set_recovery has no field. */
	if (c->set_role && c->role_value == RF_SB_ROLE_FAULTY)
		mark_faulty090(s, (int)c->role_slot);
	else if (c->set_role && c->role_value == RF_SB_ROLE_SPARE)
		add_spare090(s, c->role_slot);
	else if (c->set_role && c->role_in_sync)
		spare_in_sync090(s, c->role_slot, c->role_value);
	if (c->set_size)
		s->size = (uint32_t)(c->set_size / 2);
	s->sb_csum = sb090_csum(s);
}

/* Change c into the 1.x superblock in buf (sb: as assembly read it). */
static void apply1(uint8_t *buf, const struct rf_sb *sb, const struct rf_sb_change *c, uint64_t ev, uint64_t resync,
		   uint64_t t)
{
	struct sb1 *s = (struct sb1 *)buf;

	s->events = rf_to_le64(ev);
	s->utime = rf_to_le64(t);
	s->resync_offset = rf_to_le64(resync);
	if (c->roles_from && c->roles_from->kind != RF_SB_090 && c->roles_from->max_dev <= RF_SB_MAX_DEV) {
		uint32_t i;

		for (i = 0; i < c->roles_from->max_dev; i++)
			s->dev_roles[i] = rf_to_le16(c->roles_from->dev_roles[i]);
		s->max_dev = rf_to_le32(c->roles_from->max_dev);
	}
	if (c->faulty_slot >= 0)
		s->dev_roles[c->faulty_slot] = rf_to_le16(RF_SB_ROLE_FAULTY);
	if (c->set_role) {
		uint32_t i;

		/* md fills the roles it grows into with "faulty". */
		for (i = rf_le32(s->max_dev); i <= c->role_slot; i++)
			s->dev_roles[i] = rf_to_le16(RF_SB_ROLE_FAULTY);
		if (c->role_slot >= rf_le32(s->max_dev))
			s->max_dev = rf_to_le32(c->role_slot + 1);
		/* A device number that held the role before (a
		 * missing member's, as older creates recorded it) no
		 * longer does: md records devices that are not
		 * there as faulty. */
		for (i = 0; c->role_value < RF_SB_ROLE_MAX && !c->role_shared && i < rf_le32(s->max_dev); i++)
			if (i != c->role_slot && rf_le16(s->dev_roles[i]) == c->role_value)
				s->dev_roles[i] = rf_to_le16(RF_SB_ROLE_FAULTY);
		s->dev_roles[c->role_slot] = rf_to_le16(c->role_value);
	}
	if (c->set_devflags)
		s->devflags = c->devflags;
	if (c->set_ppl) {
		uint32_t f = rf_le32(s->feature_map) & ~(uint32_t)(RF_SB_FEAT_PPL | RF_SB_FEAT_MULTI_PPL);
		uint8_t *ppl = (uint8_t *)&s->bitmap_offset;

		if (c->set_ppl > 0) {
			/* md's ppl { le16 offset; le16 size } in bitmap_offset's place */
			rf_put_le16(ppl, (uint16_t)c->ppl_offset);
			rf_put_le16(ppl + 2, c->ppl_size);
			f |= rf_ppl_area_multi(c->ppl_size * 512ull) ? RF_SB_FEAT_MULTI_PPL : RF_SB_FEAT_PPL;
		}
		s->feature_map = rf_to_le32(f);
	}
	if (c->set_recovery) {
		uint32_t f = rf_le32(s->feature_map);

		if (c->recovery_offset == RF_SB_MAX_SECTOR) {
			f &= ~(uint32_t)RF_SB_FEAT_RECOVERY;
			s->recovery_offset = rf_to_le64(0);
		} else {
			f |= RF_SB_FEAT_RECOVERY;
			s->recovery_offset = rf_to_le64(c->recovery_offset);
		}
		s->feature_map = rf_to_le32(f);
	}
	if (c->set_replacement) {
		uint32_t f = rf_le32(s->feature_map) & ~(uint32_t)RF_SB_FEAT_REPLACEMENT;

		s->feature_map = rf_to_le32(f | (c->replacement ? RF_SB_FEAT_REPLACEMENT : 0));
	}
	if (c->set_reshape)
		reshape_update1(s, c);
	if (c->set_raid_disks)
		s->raid_disks = rf_to_le32((uint32_t)c->set_raid_disks);
	if (c->set_level) {
		s->level = rf_to_le32((uint32_t)c->level);
		s->layout = rf_to_le32((uint32_t)c->layout);
		s->chunksize = rf_to_le32(c->chunk_sectors);
		s->size = rf_to_le64(c->level ? c->level_size : 0);
		if (!c->level)
			s->data_size = rf_to_le64(c->level_size);
	}
	if (c->set_size) {
		if (grows_at_end(sb->kind, c) &&
		    c->member_sectors - rf_le64(s->data_offset) > rf_le64(s->data_size))
			s->data_size = rf_to_le64(c->member_sectors - rf_le64(s->data_offset));
		s->size = rf_to_le64(c->set_size);
	}
	s->sb_csum = rf_to_le32(sb1_csum(buf, rf_le32(s->max_dev)));
}

int rf_sb_update_io(const struct rf_sb_io *io, const char *path, struct rf_sb *sb,
		    const struct rf_sb_change *c, char *err, size_t errlen)
{
	uint8_t *buf = malloc(RF_SB_BYTES);
	struct rf_sb *now = malloc(sizeof(*now));
	uint64_t t = (uint64_t)time(NULL), ev, resync;
	int r;

	if (!buf || !now) {
		r = -ENOMEM;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		goto out;
	}
	r = read_at(io, buf, sb->sb_offset);
	if (r) {
		snprintf(err, errlen, "%s: reading the superblock again: %s", path, strerror(-r));
		goto out;
	}
	r = rf_sb_parse(buf, sb->kind, sb->member_sectors, path, now, err, errlen);
	if (r == -ENOENT)
		snprintf(err, errlen, "%s: the %s superblock is gone", path, rf_sb_kind_name(sb->kind));
	if (r)
		goto out;
	r = change_refused(sb, now, c, path, err, errlen);
	if (r)
		goto out;
	ev = c->events ? c->events : rf_sb_events_next(now->events);
	/* md: a dirty array records resync_offset 0 (all of it is suspect
	 * after a crash); a clean one where its resync stands. */
	resync = c->clean ? c->resync_offset : 0;
	if (sb->kind == RF_SB_090)
		apply090(buf, c, ev, resync, t);
	else
		apply1(buf, sb, c, ev, resync, t);
	r = io->pwrite(io->ctx, buf, RF_SB_BYTES, sb->sb_offset * 512);
	if (!r)
		r = io->fsync(io->ctx);
	if (r) {
		snprintf(err, errlen, "%s: writing the %s superblock: %s", path, rf_sb_kind_name(sb->kind),
			 strerror(-r));
		goto out;
	}
	r = rf_sb_parse(buf, sb->kind, grows_at_end(sb->kind, c) ? c->member_sectors : sb->member_sectors, path, sb,
			err, errlen);
out:
	free(buf);
	free(now);
	return r;
}

/* 0.90's rf_sb_write_spare(): the model's superblock with the spare's
 * descriptor added, as md's super_90_sync writes every device's (the
 * others get the same descriptor through rf_sb_update_io()). */
static int write_spare090(const struct rf_sb_io *model_io, const struct rf_sb *model, const struct rf_sb_io *io,
			  const char *path, uint32_t n, struct rf_sb *out, char *err, size_t errlen)
{
	uint64_t sectors = io->bytes / 512, at = rf_sb_offset(RF_SB_090, sectors);
	struct sb090 *s = NULL;
	int r;

	if (n < (uint32_t)model->raid_disks || n >= 27) {
		snprintf(err, errlen, "%s: descriptor %u: 0.90 numbers spares from the %d raid devices up to 26",
			 path, n, model->raid_disks);
		return -EINVAL;
	}
	if (at == UINT64_MAX || at < model->size) {
		snprintf(err, errlen, "%s: %llu sectors cannot hold this array's %llu data sectors and its 0.90 "
			 "superblock after them", path, (unsigned long long)sectors, (unsigned long long)model->size);
		return -ENOSPC;
	}
	s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	r = read_at(model_io, s, model->sb_offset);
	if (r) {
		snprintf(err, errlen, "%s: reading the model superblock: %s", path, strerror(-r));
		goto out;
	}
	add_spare090(s, n);
	s->this_disk = s->disks[n];
	s->utime = (uint32_t)time(NULL);
	s->sb_csum = sb090_csum(s);
	r = io->pwrite(io->ctx, s, RF_SB_BYTES, at * 512);
	if (!r)
		r = io->fsync(io->ctx);
	if (r) {
		snprintf(err, errlen, "%s: writing the spare's 0.90 superblock: %s", path, strerror(-r));
		goto out;
	}
	r = rf_sb_parse(s, RF_SB_090, sectors, path, out, err, errlen);
out:
	free(s);
	return r;
}

int rf_sb_write_spare(const struct rf_sb_io *model_io, const struct rf_sb *model, const struct rf_sb_io *io,
		      const char *path, uint32_t dev_number, struct rf_sb *out, char *err, size_t errlen)
{
	uint64_t sectors = io->bytes / 512, at = rf_sb_offset(model->kind, sectors);
	uint8_t *buf = NULL;
	struct sb1 *s;
	uint32_t i, max_dev;
	int r;

	if (model->kind == RF_SB_NONE) {
		snprintf(err, errlen, "%s: an array without superblocks has no spare superblock to write", path);
		return -EINVAL;
	}
	if (model->kind == RF_SB_090)
		return write_spare090(model_io, model, io, path, dev_number, out, err, errlen);
	if (at == UINT64_MAX || sectors < model->data_offset + model->size || dev_number >= RF_SB_MAX_DEV) {
		snprintf(err, errlen, "%s: %llu sectors cannot hold this array's superblock and %llu data sectors "
			 "at offset %llu", path, (unsigned long long)sectors, (unsigned long long)model->size,
			 (unsigned long long)model->data_offset);
		return -ENOSPC;
	}
	buf = malloc(RF_SB_BYTES);
	if (!buf)
		return -ENOMEM;
	r = read_at(model_io, buf, model->sb_offset);
	if (r) {
		snprintf(err, errlen, "%s: reading the model superblock: %s", path, strerror(-r));
		goto out;
	}
	s = (struct sb1 *)buf;
	max_dev = rf_le32(s->max_dev);
	for (i = max_dev; i <= dev_number; i++)
		s->dev_roles[i] = rf_to_le16(RF_SB_ROLE_FAULTY);
	if (dev_number >= max_dev)
		s->max_dev = rf_to_le32(dev_number + 1);
	s->dev_roles[dev_number] = rf_to_le16(RF_SB_ROLE_SPARE);
	s->dev_number = rf_to_le32(dev_number);
	s->feature_map = rf_to_le32(rf_le32(s->feature_map) &
				    ~(uint32_t)(RF_SB_FEAT_RECOVERY | RF_SB_FEAT_BAD_BLOCKS | RF_SB_FEAT_REPLACEMENT));
	s->recovery_offset = rf_to_le64(0);
	s->cnt_corrected_read = rf_to_le32(0);
	s->devflags = 0;
	s->bblog_shift = 0;
	s->bblog_size = rf_to_le16(0);
	s->bblog_offset = rf_to_le32(0);
	s->super_offset = rf_to_le64(at);
	s->data_size = rf_to_le64(sectors - model->data_offset -
			       (model->kind == RF_SB_10 ? sectors - at : 0));
	s->utime = rf_to_le64((uint64_t)time(NULL));
	r = rf_sb_random_uuid(s->device_uuid);
	if (r) {
		snprintf(err, errlen, "%s: no random device uuid: %s", path, strerror(-r));
		goto out;
	}
	s->sb_csum = rf_to_le32(sb1_csum(buf, rf_le32(s->max_dev)));
	r = io->pwrite(io->ctx, buf, RF_SB_BYTES, at * 512);
	if (!r)
		r = io->fsync(io->ctx);
	if (r) {
		snprintf(err, errlen, "%s: writing the spare's %s superblock: %s", path, rf_sb_kind_name(model->kind),
			 strerror(-r));
		goto out;
	}
	r = rf_sb_parse(buf, model->kind, sectors, path, out, err, errlen);
out:
	free(buf);
	return r;
}

int rf_sb_update(int fd, const char *path, struct rf_sb *sb, bool clean, uint64_t resync_offset,
		 char *err, size_t errlen)
{
	/* Here the caller says where a resync is due, dirty or not: what is
	 * written is resync_offset itself (RF_SB_MAX_SECTOR when clean). */
	struct rf_sb_change c = {
		.clean = true,
		.resync_offset = clean ? RF_SB_MAX_SECTOR : resync_offset,
		.faulty_slot = -1,
	};
	struct rf_sb_io io;
	int r = rf_sb_io_fd(&io, fd);

	if (r) {
		snprintf(err, errlen, "%s: cannot find its size: %s", path, strerror(-r));
		return r;
	}
	return rf_sb_update_io(&io, path, sb, &c, err, errlen);
}
