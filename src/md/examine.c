/* SPDX-License-Identifier: GPL-2.0-or-later */
/* examine.c - print a member's superblock in mdadm --examine's words and
 * layout, so people (and scripts) that know mdadm's output can read it.
 *
 * The fields and their formats are mdadm 4.2's (super1.c and super0.c,
 * examine_super1/0): the same labels right-aligned at column 15, the same
 * number formats, the same human-readable sizes.  Times are in local time,
 * as mdadm prints them.
 *
 * Not printed, because struct rf_sb does not keep what they need:
 *  - 1.x: "Cluster Name" (clustered arrays are refused), and "Unused Space" when an
 *    internal bitmap sits after a 1.1/1.2 superblock and the caller did
 *    not read its size into sb->bitmap_sectors (mdadm sizes it from the
 *    bitmap's own header).
 *  - 0.90: the device names after each row of the device table (mdadm maps
 *    major:minor to /dev names; nothing to map for image files), and the
 *    reshape block.
 *
 * rf_sb_examine_json() gives the same facts as one JSON object for
 * scripts, with md's own names for them (sysfs: level "raid5", raid_disks,
 * layout as md's number, chunk_size in bytes; md_p.h: events, data_offset,
 * data_size, super_offset, recovery_offset, resync_offset, feature_map,
 * dev_number, in sectors and host numbers), the uuids in mdadm's text.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/bitmap.h"
#include "raidfuse/json.h"
#include "raidfuse/super.h"

/* mdadm's human_size(): " (X.YY MiB X.YY MB)" from 5000 KiB on (human():
 * the same for a size in sectors).  Computed in 128 bits: a superblock's fields may hold
 * anything (a reshape position of 2^63 sectors prints, it does not
 * overflow). */
const char *rf_human_bytes(unsigned __int128 bytes, char *buf, size_t len)
{
	unsigned __int128 ci, cd;
	const char *ui, *ud;

	if (bytes < 5000 * 1024) {
		buf[0] = '\0';
		return buf;
	}
	if (bytes < ((unsigned __int128)2 << 30)) {
		ci = (bytes * 200 / (1u << 20) + 1) / 2;
		cd = (bytes / (1000000 / 200) + 1) / 2;
		ui = "MiB", ud = "MB";
	} else if (bytes < ((unsigned __int128)2 << 40)) {
		ci = (bytes * 200 / (1u << 30) + 1) / 2;
		cd = (bytes / (1000000000 / 200) + 1) / 2;
		ui = "GiB", ud = "GB";
	} else {
		ci = (bytes * 200 / ((uint64_t)1 << 40) + 1) / 2;
		cd = (bytes / (1000000000000ULL / 200) + 1) / 2;
		ui = "TiB", ud = "TB";
	}
	snprintf(buf, len, " (%llu.%02u %s %llu.%02u %s)", (unsigned long long)(ci / 100), (unsigned)(ci % 100), ui,
		 (unsigned long long)(cd / 100), (unsigned)(cd % 100), ud);
	return buf;
}

static const char *human(uint64_t sectors, char *buf, size_t len)
{
	return rf_human_bytes((unsigned __int128)sectors * 512, buf, len);
}

static const char *level_name(int level)
{
	switch (level) {
	case 0:  return "raid0";
	case 1:  return "raid1";
	case 4:  return "raid4";
	case 5:  return "raid5";
	case 6:  return "raid6";
	case 10: return "raid10";
	}
	return "-unknown-";
}

/* mdadm's names for raid5/6 layouts (maps.c r5layout/r6layout). */
static const char *r56_layout_name(int level, int layout)
{
	static const char *const names[] = {
		[0] = "left-asymmetric", [1] = "right-asymmetric", [2] = "left-symmetric",
		[3] = "right-symmetric", [4] = "parity-first", [5] = "parity-last",
		[8] = "ddf-zero-restart", [9] = "ddf-N-restart", [10] = "ddf-N-continue",
		[16] = "left-asymmetric-6", [17] = "right-asymmetric-6", [18] = "left-symmetric-6",
		[19] = "right-symmetric-6", [20] = "parity-first-6",
	};

	if (layout < 0 || layout >= (int)(sizeof(names) / sizeof(names[0])) || !names[layout])
		return "-unknown-";
	if (level == 5 && layout > 5)
		return "-unknown-";
	return names[layout];
}

static void print_r10_layout(FILE *out, int layout)
{
	int near = layout & 255, far = (layout >> 8) & 255;
	const char *sep = "";

	if (near != 1) {
		fprintf(out, " near=%d", near);
		sep = ",";
	}
	if (far != 1)
		fprintf(out, "%s %s=%d", sep, (layout & 0x10000) ? "offset" : "far", far);
	if (near * far == 1)
		fprintf(out, "NO REDUNDANCY");
}

static void print_time(FILE *out, const char *label, uint64_t t)
{
	time_t tt = (time_t)t;
	char buf[64];

	if (!ctime_r(&tt, buf))
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)t);
	fprintf(out, "%s : %.24s\n", label, buf);
}

/* md's text for 16 uuid bytes: four groups of 8 hex digits, in byte
 * order (libuuid's uuid_unparse groups them 8-4-4-4-12). */
static const char *uuid_text(const uint8_t *u, char *buf)
{
	int i, n = 0;

	for (i = 0; i < 16; i++) {
		if (i && !(i & 3))
			buf[n++] = ':';
		n += sprintf(buf + n, "%02x", u[i]);
	}
	return buf;
}

const char *rf_sb_uuid_str(const struct rf_sb *sb, char *buf)
{
	if (sb->kind == RF_SB_090) {
		uint32_t w[4];

		memcpy(w, sb->uuid, 16);
		sprintf(buf, "%08x:%08x:%08x:%08x", w[0], w[1], w[2], w[3]);
		return buf;
	}
	return uuid_text(sb->uuid, buf);
}

/* Data disks per member-sized unit, as mdadm's "Array Size" counts. */
static void print_array_size(FILE *out, const struct rf_sb *sb, uint64_t dev_sectors, bool kib_unit)
{
	long long ddsks = 0, denom = 1;
	unsigned __int128 asize;
	char h[64];

	switch (sb->level) {
	case 1:  ddsks = 1; break;
	case 4:
	case 5:  ddsks = sb->raid_disks - 1; break;
	case 6:  ddsks = sb->raid_disks - 2; break;
	case 10:
		ddsks = sb->raid_disks;
		denom = (sb->layout & 255) * ((sb->layout >> 8) & 255);
		break;
	}
	if (!ddsks || !denom)
		return;
	if (ddsks < 0 || denom < 0)
		return;
	asize = (unsigned __int128)dev_sectors * 512 * (uint64_t)ddsks / (uint64_t)denom;
	fprintf(out, "     Array Size : %llu%s%s\n", (unsigned long long)(asize >> 10),
		kib_unit ? " KiB" : "", rf_human_bytes(asize, h, sizeof(h)));
}

/* "LABEL : NAME" for a raid5/6 or raid10 layout (nothing for other levels). */
static void print_layout_line(FILE *out, const char *label, int level, int layout)
{
	if (level == 5 || level == 6)
		fprintf(out, "%s : %s\n", label, r56_layout_name(level, layout));
	if (level == 10) {
		fprintf(out, "%s :", label);
		print_r10_layout(out, layout);
		fprintf(out, "\n");
	}
}

static void print_layout_chunk(FILE *out, const struct rf_sb *sb)
{
	if (sb->level == 0 && (sb->feature_map & RF_SB_FEAT_RAID0_LAYOUT))
		fprintf(out, "         Layout : %s\n",
			sb->layout == 1 ? "original" : sb->layout == 2 ? "alternate" :
			sb->layout == 0 ? "dangerous" : "-unknown-");
	print_layout_line(out, "         Layout", sb->level, sb->layout);
	switch (sb->level) {
	case 0: case 4: case 5: case 6: case 10:
		fprintf(out, "     Chunk Size : %uK\n", sb->chunk_sectors / 2);
		break;
	}
	fprintf(out, "\n");
}

/* mdadm's reshape block of a 1.x examine: where the reshape is and what
 * changes (only what differs from the current shape), then a blank line. */
static void print_reshape1(FILE *out, const struct rf_sb *sb)
{
	char h[64];

	fprintf(out, "  Reshape pos'n : %llu%s\n", (unsigned long long)(sb->reshape_position / 2),
		human(sb->reshape_position, h, sizeof(h)));
	if (sb->delta_disks)
		fprintf(out, "  Delta Devices : %d (%lld->%d)\n", sb->delta_disks,
			(long long)sb->raid_disks - sb->delta_disks, sb->raid_disks);
	if (sb->new_level != sb->level)
		fprintf(out, "      New Level : %s\n", level_name(sb->new_level));
	if (sb->new_layout != sb->layout)
		print_layout_line(out, "     New Layout", sb->level, sb->new_layout);
	if (sb->new_chunk != sb->chunk_sectors)
		fprintf(out, "  New Chunksize : %uK\n", sb->new_chunk / 2);
	fprintf(out, "\n");
}

static void examine1(FILE *out, const struct rf_sb *sb)
{
	char host[256] = "", h[64], u[40];
	size_t hl;
	uint64_t used = sb->level <= 0 ? sb->data_size : sb->size;
	uint64_t before, after;
	int d;

	fprintf(out, "          Magic : a92b4efc\n");
	fprintf(out, "        Version : %s\n", rf_sb_kind_name(sb->kind));
	fprintf(out, "    Feature Map : 0x%x\n", sb->feature_map);
	fprintf(out, "     Array UUID : %s\n", rf_sb_uuid_str(sb, u));
	fprintf(out, "           Name : %.32s", sb->name);
	/* mdadm's default homehost is this host's name. */
	if (!gethostname(host, sizeof(host) - 1)) {
		host[sizeof(host) - 1] = '\0';
		hl = strlen(host);
		if (hl > 0 && hl < 32 && sb->name[hl] == ':' && !strncmp(sb->name, host, hl))
			fprintf(out, "  (local to host %s)", host);
	}
	fprintf(out, "\n");
	print_time(out, "  Creation Time", sb->ctime);
	fprintf(out, "     Raid Level : %s\n", level_name(sb->level));
	fprintf(out, "   Raid Devices : %d\n", sb->raid_disks);
	fprintf(out, "\n");
	fprintf(out, " Avail Dev Size : %llu sectors%s\n", (unsigned long long)sb->data_size,
		human(sb->data_size, h, sizeof(h)));
	if (sb->level > 0) {
		print_array_size(out, sb, sb->size, true);
		if (sb->size != sb->data_size)
			fprintf(out, "  Used Dev Size : %llu sectors%s\n", (unsigned long long)sb->size,
				human(sb->size, h, sizeof(h)));
	}
	if (sb->data_offset)
		fprintf(out, "    Data Offset : %llu sectors\n", (unsigned long long)sb->data_offset);
	if (sb->feature_map & RF_SB_FEAT_NEW_OFFSET)
		fprintf(out, "     New Offset : %llu sectors\n", (unsigned long long)(sb->data_offset + (int64_t)sb->new_offset));
	fprintf(out, "   Super Offset : %llu sectors\n", (unsigned long long)sb->sb_offset);
	if (sb->feature_map & RF_SB_FEAT_RECOVERY)
		fprintf(out, "Recovery Offset : %llu sectors\n", (unsigned long long)sb->recovery_offset);

	/* Room before and after the data, mdadm's way (getinfo_super1). */
	if (sb->data_offset < sb->sb_offset) {
		uint64_t end = sb->sb_offset;

		if (sb->bblog_offset && sb->bblog_size && sb->sb_offset + (int64_t)sb->bblog_offset < end)
			end = sb->sb_offset + (int64_t)sb->bblog_offset;
		if (sb->bitmap && sb->sb_offset + (int64_t)sb->bitmap_offset < end)
			end = sb->sb_offset + (int64_t)sb->bitmap_offset;
		before = sb->data_offset;
		after = sb->data_offset + used < end ? end - used - sb->data_offset : 0;
	} else {
		uint64_t earliest = sb->sb_offset + (32 + 4) * 2;

		/* mdadm's sum: the bitmap's end from its offset alone. */
		if (sb->bitmap && sb->bitmap_offset > 0 && (uint64_t)sb->bitmap_offset + sb->bitmap_sectors > earliest)
			earliest = (uint64_t)sb->bitmap_offset + sb->bitmap_sectors;

		if (sb->bblog_offset && sb->bblog_size &&
		    sb->sb_offset + (int64_t)sb->bblog_offset + sb->bblog_size > earliest)
			earliest = sb->sb_offset + (int64_t)sb->bblog_offset + sb->bblog_size;
		before = earliest < sb->data_offset ? sb->data_offset - earliest : 0;
		after = sb->member_sectors - used - sb->data_offset;
	}
	if (before == 0 && after == 0)
		after = 1;
	if (after != 1 && !(sb->feature_map & RF_SB_FEAT_NEW_OFFSET) &&
	    !(sb->bitmap && sb->bitmap_offset > 0 && sb->data_offset > sb->sb_offset && !sb->bitmap_sectors))
		fprintf(out, "   Unused Space : before=%llu sectors, after=%llu sectors\n",
			(unsigned long long)before, (unsigned long long)after);

	fprintf(out, "          State : %s\n", sb->resync_offset == RF_SB_MAX_SECTOR ? "clean" : "active");
	fprintf(out, "    Device UUID : %s\n\n", uuid_text(sb->device_uuid, u));
	if (sb->bitmap)
		fprintf(out, "Internal Bitmap : %ld sectors from superblock\n", (long)sb->bitmap_offset);
	else if (sb->feature_map & (RF_SB_FEAT_PPL | RF_SB_FEAT_MULTI_PPL))
		fprintf(out, "            PPL : %u sectors at offset %d sectors from superblock\n", sb->ppl_size,
			sb->ppl_offset);
	if (sb->reshape)
		print_reshape1(out, sb);
	if (sb->devflags) {
		fprintf(out, "          Flags :");
		if (sb->devflags & RF_SB_DEVFLAG_WRITE_MOSTLY)
			fprintf(out, " write-mostly");
		if (sb->devflags & RF_SB_DEVFLAG_FAILFAST)
			fprintf(out, " failfast");
		fprintf(out, "\n");
	}
	print_time(out, "    Update Time", sb->utime);
	if (sb->bblog_size && sb->bblog_offset) {
		fprintf(out, "  Bad Block Log : %d entries available at offset %ld sectors",
			sb->bblog_size * 512 / 8, (long)sb->bblog_offset);
		if (sb->feature_map & RF_SB_FEAT_BAD_BLOCKS)
			fprintf(out, " - bad blocks present.");
		fprintf(out, "\n");
	}
	/* rf_sb_parse() accepts only a matching checksum. */
	fprintf(out, "       Checksum : %x - correct\n", sb->csum);
	fprintf(out, "         Events : %llu\n", (unsigned long long)sb->events);
	fprintf(out, "\n");
	print_layout_chunk(out, sb);
	fprintf(out, "   Device Role : ");
	if (sb->role >= RF_SB_ROLE_FAULTY)
		fprintf(out, "spare\n");
	else if (sb->role == RF_SB_ROLE_JOURNAL)
		fprintf(out, "Journal\n");
	else if (sb->feature_map & RF_SB_FEAT_REPLACEMENT)
		fprintf(out, "Replacement device %d\n", sb->role);
	else
		fprintf(out, "Active device %d\n", sb->role);
	fprintf(out, "   Array State : ");
	for (d = 0; d < sb->raid_disks; d++) {
		uint32_t i, cnt = 0;

		for (i = 0; i < sb->max_dev; i++)
			cnt += sb->dev_roles[i] == d;
		fputc(cnt == 2 && sb->level > 0 ? 'R' : cnt == 1 ? 'A' : cnt == 0 ? '.' : '?', out);
	}
	fprintf(out, " ('A' == active, '.' == missing, 'R' == replacing)\n");
}

static void examine090(FILE *out, const struct rf_sb *sb)
{
	char h[64], u[40];
	int d;

	fprintf(out, "          Magic : a92b4efc\n");
	fprintf(out, "        Version : 0.%02u.%02u\n", sb->v090.minor, sb->v090.patch);
	fprintf(out, "           UUID : %s\n", rf_sb_uuid_str(sb, u));
	print_time(out, "  Creation Time", sb->ctime);
	fprintf(out, "     Raid Level : %s\n", level_name(sb->level));
	if (sb->level > 0) {
		fprintf(out, "  Used Dev Size : %llu%s\n", (unsigned long long)(sb->size / 2),
			human(sb->size, h, sizeof(h)));
		print_array_size(out, sb, sb->size, false);
	}
	fprintf(out, "   Raid Devices : %d\n", sb->raid_disks);
	fprintf(out, "  Total Devices : %u\n", sb->v090.nr_disks);
	fprintf(out, "Preferred Minor : %u\n", sb->v090.md_minor);
	fprintf(out, "\n");
	print_time(out, "    Update Time", sb->utime);
	fprintf(out, "          State : %s\n", sb->clean ? "clean" : "active");
	if (sb->bitmap)
		fprintf(out, "Internal Bitmap : present\n");
	fprintf(out, " Active Devices : %u\n", sb->v090.active);
	fprintf(out, "Working Devices : %u\n", sb->v090.working);
	fprintf(out, " Failed Devices : %u\n", sb->v090.failed);
	fprintf(out, "  Spare Devices : %u\n", sb->v090.spare);
	fprintf(out, "       Checksum : %x - correct\n", sb->csum);
	fprintf(out, "         Events : %llu\n", (unsigned long long)sb->events);
	fprintf(out, "\n");
	print_layout_chunk(out, sb);
	fprintf(out, "      Number   Major   Minor   RaidDevice State\n");
	for (d = -1; d < (int)(sb->raid_disks + sb->v090.spare) && d < 27; d++) {
		const typeof(sb->v090.this_disk) *dp = d < 0 ? &sb->v090.this_disk : &sb->v090.disks[d];
		uint32_t st = dp->state & ~((1u << 9) | (1u << 10));
		char nb[12];

		snprintf(nb, sizeof(nb), "%4d", d);
		fprintf(out, "%4s %5d   %5d    %5d    %5d     ", d < 0 ? "this" : nb, (int)dp->number,
			(int)dp->major, (int)dp->minor, (int)dp->raid_disk);
		if (st & 1)
			fprintf(out, " faulty");
		if (st & 2)
			fprintf(out, " active");
		if (st & 4)
			fprintf(out, " sync");
		if (st & 8)
			fprintf(out, " removed");
		if (dp->state & (1u << 9))
			fprintf(out, " write-mostly");
		if (dp->state & (1u << 10))
			fprintf(out, " failfast");
		if (st == 0)
			fprintf(out, " spare");
		fprintf(out, "\n");
		if (d == -1)
			fprintf(out, "\n");
	}
}

void rf_sb_examine(FILE *out, const char *path, const struct rf_sb *sb)
{
	fprintf(out, "%s:\n", path);
	if (sb->kind == RF_SB_090)
		examine090(out, sb);
	else
		examine1(out, sb);
}

/* mdadm's "Array State" map: per slot 'A' active, '.' missing, 'R'
 * replacing, from the roles of every device this superblock knows. */
static void device_map(const struct rf_sb *sb, char *buf, size_t len)
{
	int d;

	for (d = 0; d < sb->raid_disks && (size_t)d + 1 < len; d++) {
		uint32_t i, cnt = 0;

		for (i = 0; i < sb->max_dev; i++)
			cnt += sb->dev_roles[i] == d;
		buf[d] = cnt == 2 && sb->level > 0 ? 'R' : cnt == 1 ? 'A' : cnt == 0 ? '.' : '?';
	}
	buf[d] = '\0';
}

int rf_sb_examine_json(FILE *out, const char *path, const struct rf_sb *sb)
{
	char u[40], map[RF_SB_MAX_DEV + 1], lvl[16];
	struct rf_json j;
	bool is1 = sb->kind != RF_SB_090;

	rf_json_init(&j, out);
	rf_json_obj(&j);
	rf_json_kstr(&j, "device", path);
	rf_json_kstr(&j, "metadata_version", rf_sb_kind_name(sb->kind));
	rf_json_kstr(&j, "uuid", rf_sb_uuid_str(sb, u));
	if (is1) {
		rf_json_key(&j, "name");
		rf_json_str_len(&j, sb->name, strnlen(sb->name, 32));
		rf_json_kstr(&j, "device_uuid", uuid_text(sb->device_uuid, u));
	}
	snprintf(lvl, sizeof(lvl), "raid%d", sb->level);
	rf_json_kstr(&j, "level", lvl);
	rf_json_kint(&j, "raid_disks", sb->raid_disks);
	rf_json_kint(&j, "layout", sb->layout);
	if (sb->level == 5 || sb->level == 6)
		rf_json_kstr(&j, "layout_name", r56_layout_name(sb->level, sb->layout));
	rf_json_kuint(&j, "chunk_size", (unsigned long long)sb->chunk_sectors * 512);
	rf_json_kuint(&j, "events", sb->events);
	rf_json_kstr(&j, "array_state", (is1 ? sb->resync_offset == RF_SB_MAX_SECTOR : sb->clean) ? "clean" : "active");
	rf_json_key(&j, "resync_offset");
	if (sb->resync_offset == RF_SB_MAX_SECTOR)
		rf_json_null(&j);
	else
		rf_json_uint(&j, sb->resync_offset);
	rf_json_kuint(&j, "ctime", sb->ctime);
	rf_json_kuint(&j, "utime", sb->utime);
	rf_json_kuint(&j, "size", sb->size);
	if (is1) {
		rf_json_kuint(&j, "data_offset", sb->data_offset);
		rf_json_kuint(&j, "data_size", sb->data_size);
	}
	rf_json_kuint(&j, "super_offset", sb->sb_offset);
	rf_json_kuint(&j, "member_size", sb->member_sectors);
	rf_json_kuint(&j, "feature_map", sb->feature_map);
	rf_json_key(&j, "recovery_offset");
	if (sb->feature_map & RF_SB_FEAT_RECOVERY)
		rf_json_uint(&j, sb->recovery_offset);
	else
		rf_json_null(&j);
	rf_json_kbool(&j, "bitmap", sb->bitmap);
	if (sb->bitmap && is1)
		rf_json_kint(&j, "bitmap_offset", sb->bitmap_offset);
	rf_json_kuint(&j, "dev_number", sb->dev_number);
	/* mdadm --detail --export's words: the slot, or what it is */
	rf_json_key(&j, "dev_role");
	if (sb->role < RF_SB_ROLE_MAX)
		rf_json_int(&j, sb->role);
	else
		rf_json_str(&j, sb->role == RF_SB_ROLE_SPARE ? "spare" : sb->role == RF_SB_ROLE_FAULTY ? "faulty"
			    : "journal");
	rf_json_kbool(&j, "replacement", (sb->feature_map & RF_SB_FEAT_REPLACEMENT) != 0);
	if (is1) {
		rf_json_kbool(&j, "write_mostly", sb->devflags & RF_SB_DEVFLAG_WRITE_MOSTLY);
		device_map(sb, map, sizeof(map));
		rf_json_kstr(&j, "device_map", map);
	} else {
		rf_json_kuint(&j, "preferred_minor", sb->v090.md_minor);
		rf_json_kuint(&j, "total_devices", sb->v090.nr_disks);
		rf_json_kuint(&j, "active_devices", sb->v090.active);
		rf_json_kuint(&j, "working_devices", sb->v090.working);
		rf_json_kuint(&j, "failed_devices", sb->v090.failed);
		rf_json_kuint(&j, "spare_devices", sb->v090.spare);
	}
	if (sb->reshape) {
		rf_json_key(&j, "reshape");
		rf_json_obj(&j);
		rf_json_kuint(&j, "position", sb->reshape_position);
		rf_json_kbool(&j, "backwards", (sb->feature_map & RF_SB_FEAT_RESHAPE_BACK) != 0);
		rf_json_kint(&j, "delta_disks", sb->delta_disks);
		rf_json_kint(&j, "new_level", sb->new_level);
		rf_json_kint(&j, "new_layout", sb->new_layout);
		rf_json_kuint(&j, "new_chunk_size", (uint64_t)sb->new_chunk * 512);
		if (sb->feature_map & RF_SB_FEAT_NEW_OFFSET)
			rf_json_kuint(&j, "new_offset", sb->data_offset + (int64_t)sb->new_offset);
		rf_json_obj_end(&j);
	}
	if (is1 && (sb->feature_map & (RF_SB_FEAT_PPL | RF_SB_FEAT_MULTI_PPL))) {
		rf_json_kint(&j, "ppl_offset", sb->ppl_offset);
		rf_json_kuint(&j, "ppl_size", sb->ppl_size);
	}
	rf_json_kuint(&j, "sb_csum", sb->csum);
	rf_json_obj_end(&j);
	return rf_json_end(&j) ? -EIO : 0;
}

int rf_examine_refuse(int fd, const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: is a directory, not a member (examine the member files in it)", path);
		return -EISDIR;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file or block device, so not a member", path);
		return -EINVAL;
	}
	return 0;
}

/* ---- mdadm --examine-bitmap (-X) ---- */

/* Set bits among the first nbits of bits (bit i in byte i / 8, mask
 * 1 << (i % 8)). */
uint64_t rf_bitmap_count_dirty(const uint8_t *bits, uint64_t nbits)
{
	uint64_t n = 0, i;

	for (i = 0; i < nbits / 8; i++)
		n += (uint64_t)__builtin_popcount(bits[i]);
	if (nbits % 8)
		n += (uint64_t)__builtin_popcount(bits[i] & ((1u << (nbits % 8)) - 1));
	return n;
}

/* mdadm's chunk size text: the largest whole binary unit ("64 MB"). */
static const char *bitmap_chunk_text(uint32_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KB", "MB", "GB" };
	int i = 0;

	while (bytes >> 10 && i < 3) {
		bytes >>= 10;
		i++;
	}
	snprintf(buf, len, "%u %s", bytes, unit[i]);
	return buf;
}

/* The uuid as mdadm prints it for the member's metadata: 1.x in byte
 * order, 0.90 as four host-order words (rf_sb_uuid_str()). */
static const char *bitmap_uuid_text(const struct rf_sb *sb, const struct rf_bitmap_sb *bsb, char *buf)
{
	struct rf_sb t = { .kind = sb->kind };

	memcpy(t.uuid, bsb->uuid, sizeof(t.uuid));
	return rf_sb_uuid_str(&t, buf);
}

void rf_bitmap_examine(FILE *out, const char *path, const struct rf_sb *sb, const struct rf_bitmap_sb *bsb,
		       uint64_t nbits, uint64_t dirty)
{
	char u[40], c[32], h[64];

	fprintf(out, "        Filename : %s\n", path);
	fprintf(out, "           Magic : %08x\n", RF_BITMAP_MAGIC);
	fprintf(out, "         Version : %u\n", bsb->version);
	fprintf(out, "            UUID : %s\n", bitmap_uuid_text(sb, bsb, u));
	fprintf(out, "          Events : %llu\n", (unsigned long long)bsb->events);
	fprintf(out, "  Events Cleared : %llu\n", (unsigned long long)bsb->events_cleared);
	fprintf(out, "           State : %s\n", !bsb->state ? "OK" : bsb->state == RF_BITMAP_STALE ? "Out of date" : "Unknown");
	fprintf(out, "       Chunksize : %s\n", bitmap_chunk_text(bsb->chunk_bytes, c, sizeof(c)));
	fprintf(out, "          Daemon : %us flush period\n", bsb->daemon_sleep);
	if (bsb->write_behind)
		fprintf(out, "      Write Mode : Allow write behind, max %u\n", bsb->write_behind);
	else
		fprintf(out, "      Write Mode : Normal\n");
	fprintf(out, "       Sync Size : %llu%s\n", (unsigned long long)(bsb->sync_size / 2),
		human(bsb->sync_size, h, sizeof(h)));
	fprintf(out, "          Bitmap : %llu bits (chunks), %llu dirty (%2.1f%%)\n", (unsigned long long)nbits,
		(unsigned long long)dirty, 100.0 * (double)dirty / (double)(nbits ? nbits : 1));
}

int rf_bitmap_examine_json(FILE *out, const char *path, const struct rf_sb *sb, const struct rf_bitmap_sb *bsb,
			   uint64_t nbits, uint64_t dirty)
{
	struct rf_json j;
	char u[40];

	rf_json_init(&j, out);
	rf_json_obj(&j);
	rf_json_kstr(&j, "device", path);
	rf_json_kuint(&j, "version", bsb->version);
	rf_json_kstr(&j, "uuid", bitmap_uuid_text(sb, bsb, u));
	rf_json_kuint(&j, "events", bsb->events);
	rf_json_kuint(&j, "events_cleared", bsb->events_cleared);
	rf_json_kbool(&j, "stale", bsb->state & RF_BITMAP_STALE);
	rf_json_kuint(&j, "state", bsb->state);
	rf_json_kuint(&j, "chunk_bytes", bsb->chunk_bytes);
	rf_json_kuint(&j, "daemon_sleep_s", bsb->daemon_sleep);
	rf_json_kuint(&j, "write_behind", bsb->write_behind);
	rf_json_kuint(&j, "sync_size_sectors", bsb->sync_size);
	rf_json_kuint(&j, "bits", nbits);
	rf_json_kuint(&j, "dirty", dirty);
	rf_json_obj_end(&j);
	return rf_json_end(&j);
}
