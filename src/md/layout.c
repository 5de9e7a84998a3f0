/* SPDX-License-Identifier: GPL-2.0-or-later */
/* layout.c - md's sector arithmetic: which member sector holds an array sector.
 *
 * Everything md does to place data, redone as pure functions of struct
 * rf_geom: raid0 (md's strip zones), raid4/5/6 with every algorithm md knows
 * (raid5.h numbers), and raid10 with near, far, offset and far-set layouts
 * (raid10.c).  The same numbers must come out as in the kernel, or an array
 * written here is garbage to kernel md and the other way round; the unit test
 * reads arrays that kernel md wrote to prove it.
 *
 * Invariants, once rf_geom_init() returned 0:
 *  - chunk_sectors is a power of two >= 8 for the chunked levels (0, 4, 5,
 *    6, 10), and dev_sectors a multiple of it (for raid10, like md, only
 *    the chunks the layout uses: it may shrink below what was asked);
 *  - for raid4/5/6 every array sector below array_sectors has exactly one
 *    (member, dev_sector) place, never on the row's P or Q member, and
 *    rf_r5_array_sector() undoes rf_r5_map_sector();
 *  - for raid10 the copies of one sector sit on distinct members, and no two
 *    array sectors share a (member, sector) place.
 *
 * A raid4/5/6 or raid10 reshape md left under way is two geometries
 * (struct rf_reshape): rf_reshape_init() checks it as md's raid5 or
 * raid10 run() does and sizes both; which one an array sector uses is the
 * caller's question (rf_reshape_in_prev()).  Moving rows from one to the
 * other is services/reshape.c's, with the levels' math.
 *
 * It does NOT: do IO, allocate, or look at member state (degraded or not
 * is the caller's business).
 *
 * raid0 of unequal members, as md's create_strip_zones(): sort the distinct
 * member sizes (whole chunks); zone k holds every member at least as large
 * as the k-th smallest, from where zone k-1 stopped on them, so the array is
 * the sum of the members.  Which member of a zone holds a chunk depends on
 * md's recorded raid0 layout (1: array chunk number, the pre-3.14 kernels'
 * way; 2: chunk number inside the zone): rf_geom_init() refuses an array
 * whose zones make them differ and that records neither, as md does.
 * The mapping functions trust a geometry that rf_geom_init() accepted and
 * do no checks of their own on the hot path.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "raidfuse/bitmap.h"
#include "raidfuse/layout.h"
#include "raidfuse/util.h"

/* raid10 layout word: near copies, far copies, offset flag, far-set style. */
#define R10_NEAR(l)	((l) & 0xff)
#define R10_FAR(l)	(((l) >> 8) & 0xff)
#define R10_OFFSET(l)	(((l) >> 16) & 1)
#define R10_SETS(l)	((unsigned int)(l) >> 17)

static int geom_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int geom_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* DDF layouts count P and Q positions in the Q syndrome (as zero blocks). */
static bool r6_is_ddf(int layout)
{
	return layout == RF_ALGO_ROTATING_ZERO_RESTART ||
	       layout == RF_ALGO_ROTATING_N_RESTART ||
	       layout == RF_ALGO_ROTATING_N_CONTINUE;
}

static bool r5_algo_valid(int level, int layout)
{
	if (layout >= RF_ALGO_LEFT_ASYMMETRIC && layout <= RF_ALGO_PARITY_N)
		return true;
	if (level != 6)
		return false;
	return (layout >= RF_ALGO_ROTATING_ZERO_RESTART &&
		layout <= RF_ALGO_ROTATING_N_CONTINUE) ||
	       (layout >= RF_ALGO_LEFT_ASYMMETRIC_6 &&
		layout <= RF_ALGO_PARITY_0_6);
}

/* A raid10 layout word md would run, given nothing but the word itself. */
static bool r10_layout_valid(int layout)
{
	/* Far-set style 1 (far_set_size = raid_disks / far_copies): md
	 * still runs it but warns that it can put two copies on one member;
	 * refused here. */
	if (layout < 0 || (R10_SETS(layout) != 0 && R10_SETS(layout) != 2))
		return false;
	return R10_NEAR(layout) >= 1 && R10_FAR(layout) >= 1;
}

static bool layout_valid(int level, int layout)
{
	switch (level) {
	case 0:
		/* md's raid0 layouts (0, original 1, alternate 2) differ
		 * only between zones; one zone maps the same under all. */
		return layout >= 0 && layout <= 2;
	case 1:
		return layout == 0;
	case 4:
		return layout == 0 || layout == RF_ALGO_PARITY_N;
	case 5:
	case 6:
		return r5_algo_valid(level, layout);
	case 10:
		return r10_layout_valid(layout);
	}
	return false;
}

/* raid10: copies, far sets, stride and size, as raid10.c's setup_geo() and
 * calc_sectors() work them out. */
static int r10_init(struct rf_geom *g, char *err, size_t errlen)
{
	int n = g->raid_disks;
	int nc = R10_NEAR(g->layout), fc = R10_FAR(g->layout);
	uint64_t chunks, used;

	if (!r10_layout_valid(g->layout))
		return geom_fail(err, errlen, "raid10: layout 0x%x is not one md knows",
				 (unsigned int)g->layout);
	if (nc * fc < 2 || nc * fc > n)
		return geom_fail(err, errlen,
				 "raid10: layout 0x%x keeps %d copies, needs 2..%d (raid_disks)",
				 (unsigned int)g->layout, nc * fc, n);
	g->near_copies = nc;
	g->far_copies = fc;
	g->far_offset = R10_OFFSET(g->layout);
	/* Far sets: the original layout has one spanning every member; style
	 * 2 has sets of near * far members, the last one taking the rest. */
	g->far_set_size = R10_SETS(g->layout) ? nc * fc : n;

	/*
	 * Two shapes md runs but maps onto themselves: copies of different
	 * chunks land on one place, so md loses data in them.  mdadm's layout
	 * words (n2, f2, o2: near or far copies, not both, no far sets) never
	 * make them; refuse them rather than copy the loss.
	 *  - offset copies with near copies that wrap a row (n % nc != 0):
	 *    the wrapped near copy takes the row the offset copies use;
	 *  - far sets with a ragged last set and near copies > 1: a far copy
	 *    from the set before the last is moved into the last set.
	 */
	if (g->far_offset && fc > 1 && nc > 1 && n % nc)
		return geom_fail(err, errlen,
				 "raid10: layout 0x%x (offset, %d near copies) needs raid_disks a multiple of %d",
				 (unsigned int)g->layout, nc, nc);
	if (R10_SETS(g->layout) && nc > 1 && n % g->far_set_size && n / g->far_set_size > 1)
		return geom_fail(err, errlen,
				 "raid10: layout 0x%x (far sets of %d, %d near copies) needs raid_disks a multiple of %d, or below %d",
				 (unsigned int)g->layout, g->far_set_size, nc,
				 g->far_set_size, 2 * g->far_set_size);
	g->max_degraded = nc * fc - 1;
	g->data_disks = n / (nc * fc);

	/* Chunks in the array, then chunks each member really uses. */
	chunks = g->dev_sectors / g->chunk_sectors / fc * n / nc;
	used = (chunks * nc * fc + n - 1) / n;
	g->array_sectors = chunks * g->chunk_sectors;
	/* md keeps only the used part as the member size (mddev->dev_sectors). */
	g->dev_sectors = used * g->chunk_sectors;
	if (g->far_offset)
		g->stride = g->chunk_sectors;
	else
		g->stride = used / fc * g->chunk_sectors;
	return 0;
}

/* raid0: member sizes in whole chunks, md's zones, the array size (the sum
 * of the members) and which layout maps it. */
static int r0_init(struct rf_geom *g, char *err, size_t errlen)
{
	uint64_t chunk = g->chunk_sectors, start = 0, end = 0, min = UINT64_MAX;
	int n = g->raid_disks, i, z;
	bool given = false;

	for (i = 0; i < n; i++)
		given |= g->r0_sectors[i] != 0;
	for (i = 0; i < n; i++) {
		uint64_t s = given ? g->r0_sectors[i] : g->dev_sectors;

		s -= s % chunk;
		if (!s)
			return geom_fail(err, errlen, "raid0: member %d holds no whole chunk", i);
		g->r0_sectors[i] = s;
		if (s < min)
			min = s;
	}
	g->dev_sectors = min;
	/* Zone z starts on each member where zone z-1 ended (start) and
	 * takes the members larger than that, up to the smallest of them. */
	for (z = 0; z < n; z++) {
		struct rf_r0_zone *zn = &g->zone[z];
		uint64_t next = UINT64_MAX;

		zn->dev_start = start;
		zn->nb_dev = 0;
		for (i = 0; i < n; i++) {
			if (g->r0_sectors[i] <= start)
				continue;
			zn->dev[zn->nb_dev++] = (uint8_t)i;
			if (g->r0_sectors[i] < next)
				next = g->r0_sectors[i];
		}
		if (!zn->nb_dev)
			break;
		end += (next - start) * (uint64_t)zn->nb_dev;
		zn->end = end;
		start = next;
	}
	g->nzones = z;
	g->data_disks = n;
	g->array_sectors = end;
	/* One zone, or a second zone of one member, map alike in both
	 * layouts (md ignores the layout then). */
	if (g->nzones == 1 || g->zone[1].nb_dev == 1) {
		g->r0_alt = false;
		return 0;
	}
	if (g->layout == RF_R0_LAYOUT_ORIG || g->layout == RF_R0_LAYOUT_ALT) {
		g->r0_alt = g->layout == RF_R0_LAYOUT_ALT;
		return 0;
	}
	return geom_fail(err, errlen,
			 "raid0: %d zones (members of different sizes) and no raid0 layout recorded: md refuses to "
			 "guess whether the original (1) or alternate (2) layout wrote it; record the right one "
			 "(mdadm --update=layout-original or layout-alternate, or layout = 1 or 2 in a config)",
			 g->nzones);
}

/* Fill the derived fields; see layout.h.  Returns 0 or -EINVAL, with a
 * message in err (when err is not NULL). */
int rf_geom_init(struct rf_geom *g, char *err, size_t errlen)
{
	int n = g->raid_disks;
	int min_disks = 2;
	bool chunked = g->level != 1;

	g->array_sectors = 0;
	g->data_disks = 0;
	g->max_degraded = 0;
	g->near_copies = g->far_copies = g->far_offset = g->far_set_size = 0;
	g->stride = 0;
	g->nzones = 0;
	g->r0_alt = false;
	if (err && errlen)
		err[0] = '\0';

	switch (g->level) {
	case 0:
		min_disks = 1;  /* md's: what a raid1 taken over leaves */
		break;
	case 1: case 4: case 5: case 10:
		break;
	case 6:
		min_disks = 4;
		break;
	default:
		return geom_fail(err, errlen, "raid level %d is not supported (0, 1, 4, 5, 6, 10)",
				 g->level);
	}
	if (n < min_disks || n > RF_MAX_MEMBERS)
		return geom_fail(err, errlen, "raid%d: %d members, needs %d..%d",
				 g->level, n, min_disks, RF_MAX_MEMBERS);
	if (!layout_valid(g->level, g->layout))
		return geom_fail(err, errlen, "raid%d: layout %d is not one md accepts",
				 g->level, g->layout);
	if (g->level == 0) {
		/* Members of their own sizes: r0_init() sets dev_sectors. */
		int i;

		for (i = 0; i < n; i++)
			if (g->r0_sectors[i] > g->dev_sectors)
				g->dev_sectors = g->r0_sectors[i];
	}
	if (chunked) {
		if (g->chunk_sectors < 8 || !rf_is_pow2(g->chunk_sectors))
			return geom_fail(err, errlen,
					 "raid%d: chunk of %" PRIu32 " sectors, needs a power of two >= 8 (4 KiB)",
					 g->level, g->chunk_sectors);
		g->dev_sectors -= g->dev_sectors % g->chunk_sectors;
	}
	if (g->dev_sectors == 0)
		return geom_fail(err, errlen, "raid%d: members hold no whole chunk", g->level);

	switch (g->level) {
	case 0: {
		int rc = r0_init(g, err, errlen);

		if (rc)
			return rc;
		break;
	}
	case 1:
		g->data_disks = 1;
		g->max_degraded = n - 1;
		g->array_sectors = g->dev_sectors;
		break;
	case 4:
		/* md calls raid4's layout 0 but places parity last. */
		g->layout = RF_ALGO_PARITY_N;
		/* fall through */
	case 5:
	case 6:
		g->max_degraded = g->level == 6 ? 2 : 1;
		g->data_disks = n - g->max_degraded;
		g->array_sectors = g->dev_sectors * g->data_disks;
		break;
	case 10: {
		int rc = r10_init(g, err, errlen);

		if (rc)
			return rc;
		break;
	}
	}
	if (g->array_sectors == 0)
		return geom_fail(err, errlen, "raid%d: members too small for one row", g->level);
	return 0;
}

/* A raid10 reshape, as md's raid10 run() and check_reshape take one: the
 * same number of copies, no far layout on either side, both geometries
 * over the same member sectors, the array as large as the smaller of the
 * two (md's raid10_size() of the fewer members), and the data offsets
 * moved by at least a chunk times the far copies of either geometry in
 * the reshape's direction (md: "offset difference not enough to continue
 * reshape"); no backup file ever holds raid10 rows. */
static int r10_reshape_init(struct rf_geom *g, struct rf_reshape *rs, int64_t min_offset_diff, char *err,
			    size_t errlen)
{
	struct rf_geom *p = &rs->prev;
	uint64_t need, have, end;
	int rc;

	g->dev_sectors = p->dev_sectors = g->dev_sectors < p->dev_sectors ? g->dev_sectors : p->dev_sectors;
	rc = rf_geom_init(p, err, errlen);
	if (!rc)
		rc = rf_geom_init(g, err, errlen);
	if (rc)
		return rc;
	if ((p->far_copies > 1 && !p->far_offset) || (g->far_copies > 1 && !g->far_offset))
		return geom_fail(err, errlen, "a reshape of raid10 layout 0x%x to 0x%x: md reshapes no far layout",
				 (unsigned)p->layout, (unsigned)g->layout);
	if (p->near_copies * p->far_copies != g->near_copies * g->far_copies)
		return geom_fail(err, errlen, "a reshape of raid10 from %d to %d copies: md keeps the copies",
				 p->near_copies * p->far_copies, g->near_copies * g->far_copies);
	/* Each geometry keeps the member sectors its own copies use; the
	 * array serves what both hold. */
	end = g->array_sectors;
	if (p->array_sectors < g->array_sectors)
		g->array_sectors = p->array_sectors;
	if (rs->position > (end > p->array_sectors ? end : p->array_sectors))
		return geom_fail(err, errlen, "reshape position %" PRIu64 " is past the array's end (%" PRIu64
				 " sectors)", rs->position, end);
	need = (uint64_t)p->chunk_sectors * (uint64_t)p->far_copies;
	if ((uint64_t)g->chunk_sectors * (uint64_t)g->far_copies > need)
		need = (uint64_t)g->chunk_sectors * (uint64_t)g->far_copies;
	have = min_offset_diff < 0 ? (uint64_t)-min_offset_diff : (uint64_t)min_offset_diff;
	if ((rs->backwards ? min_offset_diff < 0 : min_offset_diff > 0) || have < need)
		return geom_fail(err, errlen, "a raid10 reshape whose data offsets moved by %" PRId64 " sectors: md "
				 "needs them %s by %" PRIu64 " at least (offset difference not enough to continue "
				 "reshape)", min_offset_diff, rs->backwards ? "up" : "down", need);
	return 0;
}

int rf_reshape_init(struct rf_geom *g, struct rf_reshape *rs, int64_t min_offset_diff, char *err, size_t errlen)
{
	struct rf_geom *p = &rs->prev;
	uint64_t unit, dev, here_new, here_old;
	int rc;

	if (!rs->active)
		return 0;
	if (g->level == 10 && p->level == 10)
		return r10_reshape_init(g, rs, min_offset_diff, err, errlen);
	if ((g->level != 4 && g->level != 5 && g->level != 6) || p->level != g->level)
		return geom_fail(err, errlen, "a reshape from raid%d to raid%d: raidfuse serves reshapes inside "
				 "raid4/5/6 and raid10 that keep the level (md refuses the others too)", p->level,
				 g->level);
	if (g->chunk_sectors < 8 || !rf_is_pow2(g->chunk_sectors) || p->chunk_sectors < 8 ||
	    !rf_is_pow2(p->chunk_sectors))
		return geom_fail(err, errlen, "reshape: chunks of %" PRIu32 " and %" PRIu32
				 " sectors, needs powers of two >= 8", p->chunk_sectors, g->chunk_sectors);
	unit = g->chunk_sectors > p->chunk_sectors ? g->chunk_sectors : p->chunk_sectors;
	dev = g->dev_sectors - g->dev_sectors % unit;
	g->dev_sectors = p->dev_sectors = dev;
	rc = rf_geom_init(p, err, errlen);
	if (!rc)
		rc = rf_geom_init(g, err, errlen);
	if (rc)
		return rc;
	if (p->array_sectors < g->array_sectors)
		g->array_sectors = p->array_sectors;
	if (rs->position % (unit * (uint64_t)g->data_disks))
		return geom_fail(err, errlen, "reshape position %" PRIu64 " is not on a stripe boundary of the new "
				 "geometry (%" PRIu64 " sectors): not a position md leaves", rs->position,
				 unit * (uint64_t)g->data_disks);
	if (rs->position > dev * (uint64_t)(g->data_disks > p->data_disks ? g->data_disks : p->data_disks))
		return geom_fail(err, errlen, "reshape position %" PRIu64 " is past the array's end (%" PRIu64
				 " sectors of members)", rs->position, dev);
	/* md's run(): the first new row to write and the first old row that
	 * may still be read, in member sectors of the larger chunk. */
	here_new = rs->position / (unit * (uint64_t)g->data_disks) * unit;
	here_old = rs->position / (unit * (uint64_t)p->data_disks) * unit;
	if (p->raid_disks == g->raid_disks) {
		/* In place: safe only when the offsets moved by a chunk at least
		 * (else mdadm's backup file holds the rows in flight). */
		uint64_t d = (uint64_t)(min_offset_diff < 0 ? -min_offset_diff : min_offset_diff);

		if ((d < g->chunk_sectors || d < p->chunk_sectors) && !(rs->backup && !rs->backwards))
			return geom_fail(err, errlen, "an in-place reshape (data offsets moved by %" PRIu64 " sectors, "
					 "less than a chunk): the rows at its position may be only in mdadm's backup "
					 "file: serve it with --backup-file FILE (assemble, mount) or "
					 "array.backup_file", d);
	} else if (rs->backwards ? (int64_t)here_new + min_offset_diff <= (int64_t)here_old :
				   (int64_t)here_new >= (int64_t)here_old - min_offset_diff) {
		/* md's "reshape_position too early for auto-recovery": the
		 * backup file (restored before the array serves) holds them. */
		if (rs->backup && !rs->backwards)
			return 0;
		return geom_fail(err, errlen, "reshape position %" PRIu64 " is inside the reshape's critical section "
				 "(new rows would overlap old ones not yet read; md: reshape_position too early for "
				 "auto-recovery): the rows there may be only in its backup file: serve it with "
				 "--backup-file FILE (assemble, mount) or array.backup_file", rs->position);
	}
	return 0;
}

/*
 * raid4/5/6: place logical data column k of chunk row `stripe`.  Returns the
 * member; *pd and *qd get the row's parity members (qd = -1 without Q).
 * One switch per md algorithm; r is the row's rotation.
 */
static int r5_place(const struct rf_geom *g, uint64_t stripe, int k, int *pd, int *qd)
{
	int n = g->raid_disks, nd = g->data_disks;
	int r = (int)(stripe % (uint64_t)n);
	int p, q = -1, d = k;

	if (g->level == 4) {
		p = nd;
		goto out;
	}
	if (g->level == 5) {
		switch (g->layout) {
		case RF_ALGO_LEFT_ASYMMETRIC:
			p = nd - r;
			if (d >= p)
				d++;
			break;
		case RF_ALGO_RIGHT_ASYMMETRIC:
			p = r;
			if (d >= p)
				d++;
			break;
		case RF_ALGO_LEFT_SYMMETRIC:
			p = nd - r;
			d = (p + 1 + d) % n;
			break;
		case RF_ALGO_RIGHT_SYMMETRIC:
			p = r;
			d = (p + 1 + d) % n;
			break;
		case RF_ALGO_PARITY_0:
			p = 0;
			d++;
			break;
		default:	/* RF_ALGO_PARITY_N */
			p = nd;
			break;
		}
		goto out;
	}

	/* raid6 */
	switch (g->layout) {
	case RF_ALGO_ROTATING_N_RESTART:
		/* left-asymmetric, rotated one row on: row 0 is D D D P Q */
		r = (int)((stripe + 1) % (uint64_t)n);
		/* fall through */
	case RF_ALGO_LEFT_ASYMMETRIC:
	case RF_ALGO_RIGHT_ASYMMETRIC:
	case RF_ALGO_ROTATING_ZERO_RESTART:
		if (g->layout == RF_ALGO_RIGHT_ASYMMETRIC ||
		    g->layout == RF_ALGO_ROTATING_ZERO_RESTART)
			p = r;
		else
			p = n - 1 - r;
		if (p == n - 1) {
			/* Q wraps to member 0: Q D D D P */
			q = 0;
			d++;
		} else {
			q = p + 1;
			if (d >= p)
				d += 2;
		}
		break;
	case RF_ALGO_LEFT_SYMMETRIC:
	case RF_ALGO_RIGHT_SYMMETRIC:
		p = g->layout == RF_ALGO_LEFT_SYMMETRIC ? n - 1 - r : r;
		q = (p + 1) % n;
		d = (p + 2 + d) % n;
		break;
	case RF_ALGO_PARITY_0:
		p = 0;
		q = 1;
		d += 2;
		break;
	case RF_ALGO_PARITY_N:
		p = nd;
		q = nd + 1;
		break;
	case RF_ALGO_ROTATING_N_CONTINUE:
		/* left-symmetric with Q just before P */
		p = n - 1 - r;
		q = (p + n - 1) % n;
		d = (p + 1 + d) % n;
		break;
	default: {
		/* *_6: a raid5 layout over members 0..n-2, Q on the last. */
		int r6 = (int)(stripe % (uint64_t)(n - 1));

		q = n - 1;
		switch (g->layout) {
		case RF_ALGO_LEFT_ASYMMETRIC_6:
			p = nd - r6;
			if (d >= p)
				d++;
			break;
		case RF_ALGO_RIGHT_ASYMMETRIC_6:
			p = r6;
			if (d >= p)
				d++;
			break;
		case RF_ALGO_LEFT_SYMMETRIC_6:
			p = nd - r6;
			d = (p + 1 + d) % (n - 1);
			break;
		case RF_ALGO_RIGHT_SYMMETRIC_6:
			p = r6;
			d = (p + 1 + d) % (n - 1);
			break;
		default:	/* RF_ALGO_PARITY_0_6 */
			p = 0;
			d++;
			break;
		}
		break;
	}
	}
out:
	*pd = p;
	*qd = q;
	return d;
}

/*
 * The inverse of r5_place() for one row: logical data column of member i,
 * whose row has parity members p and q.  i is neither p nor q.  Written from
 * the placement rules above, independently of them, so the unit test that
 * checks one against the other means something.
 */
static int r5_column(const struct rf_geom *g, int i, int p)
{
	int n = g->raid_disks, nd = g->data_disks;

	if (g->level == 4)
		return i;
	if (g->level == 5) {
		switch (g->layout) {
		case RF_ALGO_LEFT_ASYMMETRIC:
		case RF_ALGO_RIGHT_ASYMMETRIC:
			return i > p ? i - 1 : i;
		case RF_ALGO_LEFT_SYMMETRIC:
		case RF_ALGO_RIGHT_SYMMETRIC:
			return (i - p - 1 + n) % n;
		case RF_ALGO_PARITY_0:
			return i - 1;
		default:
			return i;
		}
	}
	switch (g->layout) {
	case RF_ALGO_LEFT_ASYMMETRIC:
	case RF_ALGO_RIGHT_ASYMMETRIC:
	case RF_ALGO_ROTATING_ZERO_RESTART:
	case RF_ALGO_ROTATING_N_RESTART:
		if (p == n - 1)		/* Q D D D P */
			return i - 1;
		return i > p ? i - 2 : i;	/* D D P Q D */
	case RF_ALGO_LEFT_SYMMETRIC:
	case RF_ALGO_RIGHT_SYMMETRIC:
		if (p == n - 1)
			return i - 1;
		return (i - p - 2 + n) % n;
	case RF_ALGO_PARITY_0:
		return i - 2;
	case RF_ALGO_PARITY_N:
		return i;
	case RF_ALGO_ROTATING_N_CONTINUE:
		if (p == 0)		/* P D D D Q */
			return i - 1;
		return (i - p - 1 + n) % n;	/* D D Q P D */
	case RF_ALGO_LEFT_ASYMMETRIC_6:
	case RF_ALGO_RIGHT_ASYMMETRIC_6:
		return i > p ? i - 1 : i;
	case RF_ALGO_LEFT_SYMMETRIC_6:
	case RF_ALGO_RIGHT_SYMMETRIC_6:
		return (i - p - 1 + nd + 1) % (nd + 1);
	default:	/* RF_ALGO_PARITY_0_6 */
		return i - 1;
	}
}

/* Where array_sector of a raid4/5/6 array lives (md's raid5_compute_sector). */
void rf_r5_map_sector(const struct rf_geom *g, uint64_t array_sector, struct rf_r5_map *m)
{
	uint64_t chunk = g->chunk_sectors;
	uint64_t chunk_nr = array_sector / chunk;
	uint64_t off = array_sector % chunk;
	uint64_t stripe = chunk_nr / (uint64_t)g->data_disks;
	int k = (int)(chunk_nr % (uint64_t)g->data_disks);

	m->stripe = stripe;
	m->dev_sector = stripe * chunk + off;
	m->dd_idx = r5_place(g, stripe, k, &m->pd_idx, &m->qd_idx);
}

/*
 * The members of chunk row `stripe`: parity members, the member of each
 * logical data column, and each member's position in the Q syndrome (md's
 * set_syndrome_sources: start just after Q, or at member 0 for DDF layouts,
 * which also give P and Q a position of their own, as zero blocks).
 * Fills data_member[0..data_disks-1] and qslot[0..raid_disks-1] only.
 * raid4/5: qslot of a data member is its logical column, unused.
 */
void rf_r5_row(const struct rf_geom *g, uint64_t stripe, struct rf_r5_row *r)
{
	int n = g->raid_disks, nd = g->data_disks;
	int k, i, d0, slot;

	for (k = 0; k < nd; k++)
		r->data_member[k] = r5_place(g, stripe, k, &r->pd_idx, &r->qd_idx);

	if (g->level != 6) {
		for (k = 0; k < nd; k++)
			r->qslot[r->data_member[k]] = k;
		r->qslot[r->pd_idx] = -1;
		r->syndrome_disks = nd;
		return;
	}

	if (r6_is_ddf(g->layout)) {
		for (i = 0; i < n; i++)
			r->qslot[i] = i;
		r->syndrome_disks = n;
	} else {
		d0 = r->qd_idx == n - 1 ? 0 : r->qd_idx + 1;
		slot = 0;
		i = d0;
		do {
			if (i != r->pd_idx && i != r->qd_idx)
				r->qslot[i] = slot++;
			i = i + 1 == n ? 0 : i + 1;
		} while (i != d0);
		r->syndrome_disks = nd;
	}
	r->qslot[r->pd_idx] = -1;
	r->qslot[r->qd_idx] = -1;
}

/* Inverse of rf_r5_map_sector(): the array sector stored at dev_sector of
 * member, or -1 when that place holds P or Q, or is out of range. */
int64_t rf_r5_array_sector(const struct rf_geom *g, int member, uint64_t dev_sector)
{
	uint64_t chunk = g->chunk_sectors;
	uint64_t stripe, off;
	int pd, qd, k;

	if (member < 0 || member >= g->raid_disks || dev_sector >= g->dev_sectors)
		return -1;
	stripe = dev_sector / chunk;
	off = dev_sector % chunk;
	r5_place(g, stripe, 0, &pd, &qd);
	if (member == pd || member == qd)
		return -1;
	k = r5_column(g, member, pd);
	return (int64_t)((stripe * (uint64_t)g->data_disks + (uint64_t)k) * chunk + off);
}

/* raid0 (md's find_zone + map_sector): chunks dealt round-robin over the
 * members of the sector's zone, from the zone's dev_start on each. */
void rf_r0_map(const struct rf_geom *g, uint64_t array_sector, int *member, uint64_t *dev_sector)
{
	uint64_t chunk = g->chunk_sectors, zstart = 0, off, pick;
	const struct rf_r0_zone *zn = &g->zone[0];
	int z = 0;

	while (z + 1 < g->nzones && array_sector >= zn->end) {
		zstart = zn->end;
		zn = &g->zone[++z];
	}
	off = array_sector - zstart;
	/* The original layout picks the member by the array's chunk number,
	 * the alternate one by the zone's. */
	pick = (g->r0_alt ? off : array_sector) / chunk;
	*member = zn->dev[pick % (uint64_t)zn->nb_dev];
	*dev_sector = zn->dev_start + off / chunk / (uint64_t)zn->nb_dev * chunk + array_sector % chunk;
}

int rf_mirror_map(const struct rf_geom *g, uint64_t array_sector, int *devs, uint64_t *addrs)
{
	int i;

	if (g->level != 1)
		return rf_r10_map(g, array_sector, devs, addrs);
	for (i = 0; i < g->raid_disks; i++) {
		devs[i] = i;
		addrs[i] = array_sector;
	}
	return g->raid_disks;
}

/*
 * raid10 (md's __raid10_find_phys): the chunk's near copies sit on
 * consecutive members, raid0 style; each far copy moves near_copies members
 * on inside its far set and stride sectors down.  The last far set takes the
 * members left over when far_set_size does not divide raid_disks.
 */
int rf_r10_map(const struct rf_geom *g, uint64_t array_sector, int *devs, uint64_t *addrs)
{
	int n = g->raid_disks, nc = g->near_copies, fc = g->far_copies;
	int fss = g->far_set_size;
	int last_start = (n / fss - 1) * fss;
	int last_size = fss + n % fss;
	uint64_t chunk = g->chunk_sectors;
	uint64_t vchunk = array_sector / chunk * (uint64_t)nc;
	uint64_t stripe = vchunk / (uint64_t)n;
	uint64_t sector;
	int dev = (int)(vchunk % (uint64_t)n);
	int slot = 0, i, f;

	if (g->far_offset)
		stripe *= (uint64_t)fc;
	sector = array_sector % chunk + stripe * chunk;

	for (i = 0; i < nc; i++) {
		int d = dev;
		uint64_t s = sector;

		devs[slot] = d;
		addrs[slot++] = s;
		for (f = 1; f < fc; f++) {
			int set = d / fss;

			d += nc;
			if (n % fss && d > last_start) {
				d = (d - last_start) % last_size + last_start;
			} else {
				d %= fss;
				d += set * fss;
			}
			s += g->stride;
			devs[slot] = d;
			addrs[slot++] = s;
		}
		if (++dev >= n) {
			dev = 0;
			sector += chunk;
		}
	}
	return slot;
}

bool rf_r10_lost(const struct rf_geom *g, uint64_t out)
{
	int devs[RF_MAX_MEMBERS], n, i, c;
	uint64_t addrs[RF_MAX_MEMBERS];

	/* The copy pattern repeats every raid_disks chunks; twice that
	 * covers far sets. */
	for (c = 0; c < 2 * g->raid_disks; c++) {
		uint64_t sector = (uint64_t)c * g->chunk_sectors;
		bool any = false;

		if (sector >= g->array_sectors)
			break;
		n = rf_r10_map(g, sector, devs, addrs);
		for (i = 0; i < n; i++)
			any |= !(out >> devs[i] & 1);
		if (!any)
			return true;
	}
	return false;
}

/* Sectors from array_sector to the end of its chunk, or of the array if
 * that comes first (raid1 has no chunks: to the end of the array). */
uint64_t rf_geom_chunk_left(const struct rf_geom *g, uint64_t array_sector)
{
	uint64_t left, to_end;

	if (array_sector >= g->array_sectors)
		return 0;
	to_end = g->array_sectors - array_sector;
	if (g->level == 1 || g->chunk_sectors == 0)
		return to_end;
	left = g->chunk_sectors - array_sector % g->chunk_sectors;
	return left < to_end ? left : to_end;
}

/* Layout names: mdadm's spellings, with md's numbers. */
struct layout_name {
	const char *name;
	int layout;
	int max_level;	/* 5: raid5 and raid6; 6: raid6 only */
};

static const struct layout_name r56_names[] = {
	{ "left-asymmetric", RF_ALGO_LEFT_ASYMMETRIC, 5 },
	{ "right-asymmetric", RF_ALGO_RIGHT_ASYMMETRIC, 5 },
	{ "left-symmetric", RF_ALGO_LEFT_SYMMETRIC, 5 },
	{ "right-symmetric", RF_ALGO_RIGHT_SYMMETRIC, 5 },
	{ "parity-first", RF_ALGO_PARITY_0, 5 },
	{ "parity-last", RF_ALGO_PARITY_N, 5 },
	{ "ddf-zero-restart", RF_ALGO_ROTATING_ZERO_RESTART, 6 },
	{ "ddf-N-restart", RF_ALGO_ROTATING_N_RESTART, 6 },
	{ "ddf-N-continue", RF_ALGO_ROTATING_N_CONTINUE, 6 },
	{ "left-asymmetric-6", RF_ALGO_LEFT_ASYMMETRIC_6, 6 },
	{ "right-asymmetric-6", RF_ALGO_RIGHT_ASYMMETRIC_6, 6 },
	{ "left-symmetric-6", RF_ALGO_LEFT_SYMMETRIC_6, 6 },
	{ "right-symmetric-6", RF_ALGO_RIGHT_SYMMETRIC_6, 6 },
	{ "parity-first-6", RF_ALGO_PARITY_0_6, 6 },
	/* short forms; never printed, as they come after the long ones */
	{ "la", RF_ALGO_LEFT_ASYMMETRIC, 5 },
	{ "ra", RF_ALGO_RIGHT_ASYMMETRIC, 5 },
	{ "ls", RF_ALGO_LEFT_SYMMETRIC, 5 },
	{ "rs", RF_ALGO_RIGHT_SYMMETRIC, 5 },
};

#define N_R56_NAMES (sizeof(r56_names) / sizeof(r56_names[0]))

static int default_layout(int level)
{
	switch (level) {
	case 0:
	case 1:
		return 0;
	case 4:
		return RF_ALGO_PARITY_N;
	case 5:
	case 6:
		return RF_ALGO_LEFT_SYMMETRIC;
	case 10:
		return RF_R10_NEAR2;
	}
	return -EINVAL;
}

/* A plain decimal number, 0 .. INT_MAX; -1 when s is not one. */
static long parse_decimal(const char *s)
{
	long v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return -1;
		v = v * 10 + (*s - '0');
		if (v > 0x7fffffff)
			return -1;
	}
	return v;
}

/* mdadm's raid10 words: n<copies>, f<copies>, o<copies>, copies 1..255. */
static int parse_r10(const char *name)
{
	long copies;
	char c = (char)tolower((unsigned char)name[0]);

	if (c != 'n' && c != 'f' && c != 'o')
		return -EINVAL;
	copies = parse_decimal(name + 1);
	if (copies < 1 || copies > 255)
		return -EINVAL;
	if (c == 'n')
		return (1 << 8) | (int)copies;
	if (c == 'f')
		return ((int)copies << 8) | 1;
	return (1 << 16) | ((int)copies << 8) | 1;
}

/* Parse a layout name for a level; see layout.h.  Returns md's layout
 * number (raid4 always gives 5, parity-last) or -EINVAL. */
int rf_layout_parse(int level, const char *name)
{
	long num;
	size_t i;

	if (default_layout(level) < 0)
		return -EINVAL;
	if (!name || !*name || !strcasecmp(name, "default"))
		return default_layout(level);

	num = parse_decimal(name);
	if (num >= 0) {
		if (!layout_valid(level, (int)num))
			return -EINVAL;
		return level == 4 ? RF_ALGO_PARITY_N : (int)num;
	}

	switch (level) {
	case 0:
		/* mdadm's names of the multi-zone layouts */
		if (!strcasecmp(name, "original"))
			return RF_R0_LAYOUT_ORIG;
		return !strcasecmp(name, "alternate") ? RF_R0_LAYOUT_ALT : -EINVAL;
	case 4:
		return !strcasecmp(name, "parity-last") ? RF_ALGO_PARITY_N : -EINVAL;
	case 5:
	case 6:
		for (i = 0; i < N_R56_NAMES; i++)
			if (r56_names[i].max_level <= level &&
			    !strcasecmp(name, r56_names[i].name))
				return r56_names[i].layout;
		return -EINVAL;
	case 10:
		return parse_r10(name);
	}
	return -EINVAL;
}

/* md's name of a layout, into buf (the number itself when it has none).
 * Returns buf. */
const char *rf_layout_name(int level, int layout, char *buf, size_t len)
{
	size_t i;

	if (!buf || !len)
		return buf;
	switch (level) {
	case 0:
		if (layout == RF_R0_LAYOUT_ORIG || layout == RF_R0_LAYOUT_ALT) {
			snprintf(buf, len, layout == RF_R0_LAYOUT_ORIG ? "original" : "alternate");
			return buf;
		}
		/* fall through */
	case 1:
		if (layout == 0) {
			snprintf(buf, len, "default");
			return buf;
		}
		break;
	case 4:
		if (layout == 0 || layout == RF_ALGO_PARITY_N) {
			snprintf(buf, len, "parity-last");
			return buf;
		}
		break;
	case 5:
	case 6:
		for (i = 0; i < N_R56_NAMES; i++)
			if (r56_names[i].max_level <= level &&
			    r56_names[i].layout == layout) {
				snprintf(buf, len, "%s", r56_names[i].name);
				return buf;
			}
		break;
	case 10:
		if (!r10_layout_valid(layout) || R10_SETS(layout))
			break;
		if (R10_FAR(layout) == 1 && !R10_OFFSET(layout)) {
			snprintf(buf, len, "n%d", R10_NEAR(layout));
			return buf;
		}
		if (R10_NEAR(layout) == 1) {
			snprintf(buf, len, "%c%d", R10_OFFSET(layout) ? 'o' : 'f',
				 R10_FAR(layout));
			return buf;
		}
		break;
	}
	snprintf(buf, len, "%d", layout);
	return buf;
}

/* ---- md's bitmap units (bitmap.h) ----
 *
 * What a bit of md's write-intent bitmap counts depends on the level:
 * member sectors for raid1 and raid4/5/6, array sectors for raid10,
 * nothing for raid0.  The sectors the bits cover are md's format (the
 * bitmap header's sync_size), which create writes and the running bitmap
 * reads alike, so they live with the other mappings here.  Which of them
 * a write touches (md's bitmap_sector) is the level's: its ops table's
 * bitmap_range, which services/bitmap.c's rf_bitmap_range() asks. */

uint64_t rf_bitmap_sync_size(const struct rf_geom *g)
{
	switch (g->level) {
	case 1: case 4: case 5: case 6:
		return g->dev_sectors;
	case 10:
		return g->array_sectors;
	}
	return 0;
}

int rf_r6_layout_of_r5(int level, int layout)
{
	if (level == 4)
		return RF_ALGO_PARITY_N;
	if (level != 5)
		return -1;
	switch (layout) {
	case RF_ALGO_LEFT_ASYMMETRIC:
	case RF_ALGO_RIGHT_ASYMMETRIC:
	case RF_ALGO_LEFT_SYMMETRIC:
	case RF_ALGO_RIGHT_SYMMETRIC:
	case RF_ALGO_PARITY_0:
		/* md numbers the "-6" forms 16 on, in the same order. */
		return layout + RF_ALGO_LEFT_ASYMMETRIC_6;
	case RF_ALGO_PARITY_N:
		return RF_ALGO_PARITY_N;
	default:
		return -1;
	}
}

bool rf_r6_q_last(int layout)
{
	return layout == RF_ALGO_PARITY_N || (layout >= RF_ALGO_LEFT_ASYMMETRIC_6 && layout <= RF_ALGO_PARITY_0_6);
}
