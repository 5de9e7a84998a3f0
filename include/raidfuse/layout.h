/* SPDX-License-Identifier: GPL-2.0-or-later */
/* layout.h - md's mapping of array sectors to member sectors.
 *
 * Pure arithmetic, no IO and no allocation: everything here is a function of
 * struct rf_geom.  Level, layout and chunk numbers are md's own (md_p.h,
 * raid5.h, raid10.c), so an array laid out here is the array kernel md reads.
 *
 * Units: sectors of 512 bytes throughout, member sectors counted from the
 * member's data_offset (the caller adds it).
 */
#ifndef RAIDFUSE_LAYOUT_H
#define RAIDFUSE_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#define RF_MAX_MEMBERS 64

/* md's raid5/6 algorithm numbers (raid5.h). */
enum rf_r5_algo {
	RF_ALGO_LEFT_ASYMMETRIC = 0,
	RF_ALGO_RIGHT_ASYMMETRIC = 1,
	RF_ALGO_LEFT_SYMMETRIC = 2,
	RF_ALGO_RIGHT_SYMMETRIC = 3,
	RF_ALGO_PARITY_0 = 4,
	RF_ALGO_PARITY_N = 5,
	/* raid6 only: DDF layouts */
	RF_ALGO_ROTATING_ZERO_RESTART = 8,
	RF_ALGO_ROTATING_N_RESTART = 9,
	RF_ALGO_ROTATING_N_CONTINUE = 10,
	/* raid6 only: a raid5 layout with Q on the last device */
	RF_ALGO_LEFT_ASYMMETRIC_6 = 16,
	RF_ALGO_RIGHT_ASYMMETRIC_6 = 17,
	RF_ALGO_LEFT_SYMMETRIC_6 = 18,
	RF_ALGO_RIGHT_SYMMETRIC_6 = 19,
	RF_ALGO_PARITY_0_6 = 20,
};

/* raid10's layout word: near copies in bits 0-7, far copies in 8-15
 * (md's raid10.c); near-2, the default and what a raid0 becomes. */
#define RF_R10_NEAR2 0x102

/* raid0 layouts md records for arrays of more than one zone (raid0.h). */
enum rf_r0_layout {
	RF_R0_LAYOUT_NONE = 0,          /* none recorded: md refuses a multi-zone array */
	RF_R0_LAYOUT_ORIG = 1,          /* the member of a chunk from its array chunk number */
	RF_R0_LAYOUT_ALT = 2,           /* ... from its chunk number inside the zone */
};

/* One raid0 strip zone (md's create_strip_zones): the members at least as
 * large as the zone's smallest, each giving [dev_start, dev_start + the
 * zone's rows * chunk) of its data area. */
struct rf_r0_zone {
	uint64_t end;                   /* array sector just past the zone */
	uint64_t dev_start;             /* member sector where the zone starts */
	int nb_dev;                     /* members in the zone */
	uint8_t dev[RF_MAX_MEMBERS];    /* those members, in role order */
};

struct rf_geom {
	int level;              /* 0, 1, 4, 5, 6, 10 */
	int layout;             /* md's layout number (raid10: nc | fc << 8 | offset << 16 | sets << 17;
				 * raid0: enum rf_r0_layout) */
	int raid_disks;
	uint32_t chunk_sectors; /* 0 for raid1 */
	uint64_t dev_sectors;   /* usable sectors per member (multiple of chunk_sectors) */
	/* derived by rf_geom_init(): */
	uint64_t array_sectors;
	int data_disks;         /* raid4/5/6: raid_disks - max_degraded; raid0: raid_disks */
	int max_degraded;       /* members that may be missing: 0, 1, 2, or raid1/10 copies-1 */
	/* raid10 only */
	int near_copies, far_copies, far_offset, far_set_size;
	uint64_t stride;        /* sectors between far copies on a member */
	/* raid0 only.  Input: r0_sectors[i] the data sectors of member i (md's
	 * rdev->sectors), all 0 for raid_disks members of dev_sectors each.
	 * rf_geom_init() rounds each down to whole chunks and sets dev_sectors
	 * to the smallest.  Derived: the zones, and r0_alt (the alternate
	 * layout maps the array; only matters with 2+ zones). */
	uint64_t r0_sectors[RF_MAX_MEMBERS];
	int nzones;
	bool r0_alt;
	struct rf_r0_zone zone[RF_MAX_MEMBERS];
};

/* The mask of g's slots. */
static inline uint64_t rf_geom_all_slots(const struct rf_geom *g)
{
	return g->raid_disks >= 64 ? ~0ull : (1ull << g->raid_disks) - 1;
}

/* Fill the derived fields.  Returns 0 or -EINVAL (message in err) when the
 * level, layout, member count or chunk is not one md accepts. */
int rf_geom_init(struct rf_geom *g, char *err, size_t errlen);

/* Parse a layout name for a level ("left-symmetric", "n2", "f2", "o3", md's
 * numbers as text too).  NULL or "" gives md's default.  Returns the layout
 * number or -EINVAL. */
int rf_layout_parse(int level, const char *name);
/* md's name of a layout, into buf. */
const char *rf_layout_name(int level, int layout, char *buf, size_t len);

/* Where one sector of a raid4/5/6 array lives. */
struct rf_r5_map {
	uint64_t stripe;        /* chunk-row number */
	uint64_t dev_sector;    /* sector on each member (same for every column of the row) */
	int dd_idx;             /* member holding this data sector */
	int pd_idx, qd_idx;     /* parity members; qd_idx = -1 for raid4/5 */
};

/* The members of one chunk row of a raid4/5/6 array. */
struct rf_r5_row {
	int pd_idx, qd_idx;            /* qd_idx = -1 for raid4/5 */
	int data_member[RF_MAX_MEMBERS];   /* logical data index k -> member */
	int qslot[RF_MAX_MEMBERS];         /* member -> position in the Q syndrome (-1: P/Q) */
	int syndrome_disks;            /* number of syndrome positions (raid6: data_disks, or raid_disks for DDF layouts, whose P/Q slots hold zeros) */
};

/* raid6: the row's blocks in syndrome order, bufs[member] + off each: the
 * r->syndrome_disks data positions (zero for the P and Q positions of DDF
 * layouts), then P, then Q.  Returns the number of data positions. */
static inline int rf_r6_blocks(const struct rf_r5_row *r, int data_disks, char *const *bufs, size_t off,
			       void *zero, void **blocks)
{
	int n = r->syndrome_disks, k;

	for (k = 0; k < n; k++)
		blocks[k] = zero;
	for (k = 0; k < data_disks; k++)
		blocks[r->qslot[r->data_member[k]]] = bufs[r->data_member[k]] + off;
	blocks[n] = bufs[r->pd_idx] + off;
	blocks[n + 1] = bufs[r->qd_idx] + off;
	return n;
}

/* member's position in that order (what rf_raid6_recover() takes). */
static inline int rf_r6_index(const struct rf_r5_row *r, int member)
{
	if (member == r->pd_idx)
		return r->syndrome_disks;
	if (member == r->qd_idx)
		return r->syndrome_disks + 1;
	return r->qslot[member];
}

void rf_r5_map_sector(const struct rf_geom *g, uint64_t array_sector, struct rf_r5_map *m);
void rf_r5_row(const struct rf_geom *g, uint64_t stripe, struct rf_r5_row *r);
/* md's raid5 -> raid6 takeover: the raid6 layout that is raid4/5 layout
 * `layout` over the first members with Q on one added last member (the
 * "-6" layouts; raid4 and parity-last: parity-last, whose P and Q both
 * sit last); -1 where md has none. */
int rf_r6_layout_of_r5(int level, int layout);
/* Whether the last member of a raid6 of layout `layout` holds Q only (the
 * layouts rf_r6_layout_of_r5() gives: md's only_parity() of that slot). */
bool rf_r6_q_last(int layout);
/* Inverse: array sector of (member, dev_sector) in a data column; -1 if the
 * member holds parity there. */
int64_t rf_r5_array_sector(const struct rf_geom *g, int member, uint64_t dev_sector);

/* raid0: md's map_sector() over the zones. */
void rf_r0_map(const struct rf_geom *g, uint64_t array_sector, int *member, uint64_t *dev_sector);

/* raid10: every copy of one array sector.  Fills devs/addrs (up to
 * near_copies * far_copies entries) in md's copy order and returns the count. */
int rf_r10_map(const struct rf_geom *g, uint64_t array_sector, int *devs, uint64_t *addrs);
/* Whether some chunk of raid10 geometry g has no copy outside the slots
 * in out (the array has failed with them gone). */
bool rf_r10_lost(const struct rf_geom *g, uint64_t out);

/* raid1 or raid10: every copy of one array sector (raid1: the same sector
 * on every member, in member order; raid10: rf_r10_map()). */
int rf_mirror_map(const struct rf_geom *g, uint64_t array_sector, int *devs, uint64_t *addrs);

/* md's raid4/5/6 or raid10 reshape under way, frozen where the
 * superblocks say (md's reshape_position, conf->prev_* and
 * reshape_backwards): two
 * geometries over one set of members.  The array's own struct rf_geom is
 * the NEW one (md's conf->raid_disks, algorithm, chunk_sectors); prev is
 * the one the reshape leaves.  Rows the reshape has done are in the new
 * geometry at each member's new data offset, the rest in the previous one
 * at its old data offset: a forward reshape has done [0, position), a
 * backward one (it starts at the end) [position, end).  An array sector
 * decides, as md's make_request does; both geometries number array
 * sectors alike. */
struct rf_reshape {
	bool active;
	bool backwards;         /* md's reshape_backwards */
	uint64_t position;      /* array sectors (md's reshape_progress) */
	struct rf_geom prev;    /* level, layout, chunk_sectors, raid_disks given; dev_sectors as g's */
	/* Slots whose blocks in the previous geometry hold nothing: the
	 * member a raid5 -> raid6 change added holds only Q there, never
	 * written (md records it by a recovery_offset that follows the
	 * reshape, and counts it missing in the rows not reshaped yet). */
	uint64_t prev_absent;
	/* A forward reshape whose critical section (new rows over old rows
	 * not yet read) mdadm's backup file covers (services/reshape.c): a
	 * position inside it is one to take up, not to refuse. */
	bool backup;
};

/* Check a reshape the way md's raid5 run() does and size both geometries
 * (raid10: as md's raid10 run() and check_reshape do: the same copies, no
 * far layout, the array the smaller of the two, the data offsets moved by
 * a chunk times the far copies at least, any position up to the end):
 * g (new) and rs->prev get dev_sectors rounded to whole chunks of both
 * (md reshapes in units of the larger chunk), g->array_sectors becomes
 * md's raid5_size() (the fewer data disks of the two), and the position
 * must lie on a boundary of new stripes of that unit.  min_offset_diff is
 * md's: over the members, new data offset minus old (sectors), the most
 * positive for a forward reshape, the most negative for a backward one;
 * a position where the new rows would land on old rows not yet read is
 * refused (mdadm's critical section: only its backup file holds them)
 * unless rs->backup says a backup file covers it (a forward reshape).
 * Returns 0, or -EINVAL with why in err. */
int rf_reshape_init(struct rf_geom *g, struct rf_reshape *rs, int64_t min_offset_diff, char *err, size_t errlen);

/* Whether array_sector lies in the previous geometry (not reshaped yet). */
static inline bool rf_reshape_in_prev(const struct rf_reshape *rs, uint64_t array_sector)
{
	return rs->active && (rs->backwards ? array_sector < rs->position : array_sector >= rs->position);
}

/* Sectors from array_sector to where the geometry changes, or UINT64_MAX
 * when it does not change after it. */
static inline uint64_t rf_reshape_left(const struct rf_reshape *rs, uint64_t array_sector)
{
	return rs->active && array_sector < rs->position ? rs->position - array_sector : UINT64_MAX;
}

/* Sectors from array_sector to the end of its chunk (or to the array end). */
uint64_t rf_geom_chunk_left(const struct rf_geom *g, uint64_t array_sector);

#endif
