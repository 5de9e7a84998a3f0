/* SPDX-License-Identifier: GPL-2.0-or-later */
/* config.h - the array definition read from a libconfig file.
 *
 * The only module that sees libconfig.  rf_config_load() validates the whole
 * file (types, level, layout, chunk, member list) before anything else looks
 * at it; opening and sizing the members is the array module's job.
 */
#ifndef RAIDFUSE_CONFIG_H
#define RAIDFUSE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raidfuse/util.h"

#include "raidfuse/fault.h"
#include "raidfuse/layout.h"

/* A faults entry: injection armed on one member from the start. */
struct rf_config_fault {
	int member;                     /* slot */
	struct rf_fault_spec spec;
};

struct rf_config {
	char *path;                     /* the config file */
	char *name;                     /* file name under the mount point */
	int level;
	int layout;                     /* md's number */
	uint32_t chunk_bytes;           /* power of two, >= 4096; 0 for raid1 */
	int nmembers;
	char *members[RF_MAX_MEMBERS];  /* absolute or config-relative resolved path; NULL = "missing" */
	int member_line[RF_MAX_MEMBERS];/* config line of each member entry (for messages) */
	int nspares;
	char *spares[RF_MAX_MEMBERS];   /* spare member files, resolved as members are */
	uint64_t member_size;           /* bytes, for `create`; 0 if not given */
	uint64_t failfast;              /* members (bit i: member i) that are md's failfast
					 * (array.failfast, or found in their superblocks) */
	uint64_t write_mostly;          /* members that are md's write-mostly (array.write_mostly,
					 * or found in their superblocks) */
	int member_io;                  /* enum rf_member_io (devopen.h): array.member_io,
					 * default auto */
	unsigned member_timeout_ms;     /* NBD members: a command not done within it fails the
					 * member (array.member_timeout; default 30 s) */
	uint64_t data_offset;           /* bytes */
	bool data_offset_given;         /* the config names it (else md's superblock may) */
	uint64_t size;                  /* bytes used per member, 0 = as much as fits */
	/* Per device, from md superblocks (assemble fills them; a config file
	 * has one data_offset for all): with member_offsets, member i's data
	 * starts at member_offset[i] and spare j's at spare_offset[j], bytes,
	 * and a raid0 member holds member_data[i] bytes of data (md's
	 * data_size; 0: all after the offset), which make md's zones. */
	bool member_offsets;
	uint64_t member_offset[RF_MAX_MEMBERS];
	uint64_t spare_offset[RF_MAX_MEMBERS];
	uint64_t member_data[RF_MAX_MEMBERS];
	/* md's raid4/5/6 reshape under way (assemble fills it from the
	 * superblocks; a config file cannot describe one).  level, layout and
	 * chunk_bytes above are then the NEW geometry, nmembers the slots of
	 * either (the larger count), data offsets the old geometry's; these
	 * are the rest (layout.h struct rf_reshape). */
	struct rf_config_reshape {
		bool active;
		bool backwards;         /* md's reshape_backwards */
		uint64_t position;      /* array sectors (md's reshape_position) */
		int raid_disks;         /* the new geometry's */
		int prev_raid_disks, prev_layout;
		uint32_t prev_chunk_bytes;
		uint64_t new_offset[RF_MAX_MEMBERS];   /* bytes: slot i's data offset in the new geometry */
		/* bytes: spare j's after it, as its superblock records (md
		 * moves every device's offset at a reshape's end) */
		uint64_t spare_new_offset[RF_MAX_MEMBERS];
		/* The config names the raid0 this raid4 grows from (assembly
		 * found a raid0's grow under way): a raid0 again at the end,
		 * as `raidfuse grow` ends one */
		bool then_raid0;
	} reshape;
	/* md metadata */
	int metadata;                   /* enum rf_sb_kind: what `create` writes (1.2, or
					 * RF_SB_NONE for "none"); what assemble found */
	int metadata_line;              /* config line of array.metadata; 0: the default */
	uint8_t uuid[16];               /* array uuid, when superblocks named one */
	bool has_uuid;
	bool readonly;                  /* members opened read-only, writes fail (EROFS) */
	bool bitmap;                    /* `create` writes an internal bitmap ("internal") */
	uint64_t bitmap_chunk;          /* its chunk, bytes; 0: mdadm's choice */
	bool ppl;                       /* `create` keeps md's partial parity log
					 * (consistency_policy = "ppl") */
	char *overlay_dir;              /* members opened read-only, writes go to overlays here */
	char *backup_file;              /* mdadm's backup file of a reshape in place (absolute;
					 * array.backup_file, --backup-file), NULL: none */
	/* tuning */
	int stripe_cache_size;          /* stripe heads, md's unit (default 256) */
	int group_thread_cnt;           /* worker threads per group; -1 (default):
					 * 1 where a member is on a disk, a block
					 * device or NBD, 0 (inline) where every
					 * member is in memory */
	int worker_groups;              /* groups (default 0 = one per CPU) */
	uint32_t stripe_size;           /* bytes per column per stripe head (default 4096) */
	int rmw_level;                  /* 0 never rmw, 1 rmw when cheaper (default), 2 prefer rmw */
	/* fault injection (off unless the config has a faults list) */
	struct rf_config_fault *faults;
	int nfaults;
};

/* Parse and validate path.  On error returns -errno/-EINVAL and puts a
 * message naming the file, line and key into err. */
int rf_config_load(const char *path, struct rf_config *cfg, char *err, size_t errlen);
void rf_config_free(struct rf_config *cfg);
/* How many of n members the level (and md's layout number) can be
 * without: what a config may name "missing". */
int rf_config_tolerated(int level, int layout, int n);
/* A config with every default set and nothing else (no members, no
 * name): for arrays described by superblocks instead of a file. */
void rf_config_defaults(struct rf_config *cfg);



/* A timeout as array.member_timeout and md/dev-NAME/timeout take it:
 * seconds ("30", "30s") or milliseconds ("500ms"), 10ms..3600s.  0 with
 * *ms set, or -EINVAL. */
int rf_parse_timeout_ms(const char *s, unsigned *ms);

#endif
