/* SPDX-License-Identifier: GPL-2.0-or-later */
/* create.c - `raidfuse create`: make the members a config names and write
 * their md superblocks.
 *
 * It checks the whole config and every member, and works out every
 * superblock, before it creates, truncates or writes anything, and leaves
 * existing non-empty members alone unless forced.  The command line
 * (cmd_create.c) only parses options and calls rf_create().
 *
 * A member or spare may be an NBD export (a URI, nbd.h): it is connected
 * within array.member_timeout, used at the export's size (which must hold
 * member_size when the config gives one) and written through the
 * connection; it is never made or truncated.
 *
 * It does NOT serve the array, nor read superblocks already on the
 * members (mount and assemble do).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "raidfuse/assemble.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/config.h"
#include "raidfuse/create.h"
#include "raidfuse/devopen.h"
#include "raidfuse/memberid.h"
#include "raidfuse/nbd.h"
#include "raidfuse/ppl.h"
#include "raidfuse/super.h"


/* What create holds of one member or spare between checking and writing. */
struct cfile {
	const char *path;               /* NULL: "missing" */
	char who[PATH_MAX + 32];        /* "member 2 (d2.img)" */
	struct rf_devopen_fd d;
	struct rf_nbd *nbd;             /* an NBD export (d unused), or NULL */
	struct rf_member_id id;         /* which device it is, once opened */
	const char *what;               /* "member" or "spare" */
	int num;                        /* its number among them */
	bool resize;                    /* made, or recreated: truncated to member_size */
	uint64_t bytes;                 /* its size once made */
};

/* Undo what checking did: close every file, unlink the ones it made. */
static void release_all(struct cfile *f, int n, bool undo)
{
	int i;

	for (i = 0; i < n; i++) {
		if (undo && f[i].d.created && f[i].d.id.real)
			unlink(f[i].d.id.real);
		rf_devopen_close(&f[i].d);
		rf_nbd_close(f[i].nbd);
		f[i].nbd = NULL;
	}
}

/* File i is one of the files before it, by whatever name (memberid.h):
 * 1, said naming both; else 0. */
static int same_as_earlier(const struct cfile *f, int i)
{
	char err[2 * PATH_MAX + 256];
	int j;

	for (j = 0; j < i; j++) {
		if (!f[j].path || !rf_member_same(&f[j].id, &f[i].id))
			continue;
		rf_member_same_msg(err, sizeof(err), f[j].who, &f[j].id, f[i].who, &f[i].id,
				   "each member must be given once");
		fprintf(stderr, "raidfuse: %s\n", err);
		return 1;
	}
	return 0;
}

/* check_one() for an NBD export: connected, not named twice, big enough
 * for member_size.  0 or 1 (bad, said). */
static int check_nbd(const struct rf_config *cfg, struct cfile *f, int i)
{
	struct cfile *c = &f[i];
	char err[PATH_MAX + 256];

	if (rf_nbd_open(c->path, false, cfg->member_timeout_ms, &c->nbd, err, sizeof(err))) {
		fprintf(stderr, "raidfuse: %s: %s\n", c->who, rf_nbd_why(err, c->path));
		return 1;
	}
	rf_nbd_member_id(c->nbd, &c->id);
	if (same_as_earlier(f, i))
		return 1;
	c->bytes = rf_nbd_size(c->nbd);
	if (cfg->member_size && c->bytes < cfg->member_size) {
		fprintf(stderr, "raidfuse: %s: the export holds %llu bytes, less than array.member_size %llu\n",
			c->who, (unsigned long long)c->bytes, (unsigned long long)cfg->member_size);
		return 1;
	}
	return 0;
}

/* Open and check file i; the same file as an earlier one, data without
 * force, a size that cannot be made are refused.  0 or 1 (bad, said). */
static int check_one(const struct rf_config *cfg, struct cfile *f, int i, bool force)
{
	struct cfile *c = &f[i];
	char err[PATH_MAX + 256];
	int ret;

	if (rf_nbd_is_uri(c->path))
		return check_nbd(cfg, f, i);
	ret = rf_devopen_open(c->path, c->who, RF_DEVOPEN_CREATE | RF_DEVOPEN_NOLOCK, &c->d, err, sizeof(err));
	/* A block device claimed already (O_EXCL): by an earlier member,
	 * under another name?  Said as that. */
	if (ret == -EBUSY && !rf_member_id_of_path(c->path, c->who, 0, &c->id, err, sizeof(err)) &&
	    same_as_earlier(f, i))
		return 1;
	if (ret) {
		fprintf(stderr, "raidfuse: %s\n", err);
		return 1;
	}
	rf_member_id_of_dev(&c->id, &c->d.id);
	if (same_as_earlier(f, i))
		return 1;
	if (rf_devopen_lock(&c->d, false, c->who, err, sizeof(err))) {
		fprintf(stderr, "raidfuse: %s\n", err);
		return 1;
	}
	c->bytes = c->d.id.size;
	if (c->d.id.blk)
		return 0;       /* a device is used as it is */
	if (c->d.id.size && !force && !c->d.created) {
		fprintf(stderr, "raidfuse: %s: exists with data (%llu bytes); not touched (--force recreates it)\n",
			c->who, (unsigned long long)c->d.id.size);
		return 1;
	}
	c->resize = true;
	c->bytes = cfg->member_size;
	if (!cfg->member_size) {
		fprintf(stderr, "raidfuse: %s: key 'array.member_size' is needed to create %s\n", cfg->path, c->who);
		return 1;
	}
	if (cfg->member_size > (uint64_t)INT64_MAX) {
		fprintf(stderr, "raidfuse: %s: a file of %llu bytes cannot be made\n", c->who,
			(unsigned long long)cfg->member_size);
		return 1;
	}
	return 0;
}

/* Sparse members take their space as the array fills: say so when the
 * file system cannot hold them all (not an error). */
static void warn_space(const struct rf_config *cfg, const struct cfile *f, int n)
{
	int i, j;

	for (i = 0; i < n; i++) {
		struct statvfs vfs;
		uint64_t need = 0, avail;

		if (!f[i].resize || fstatvfs(f[i].d.fd, &vfs))
			continue;
		for (j = 0; j < n; j++)
			if (j < i && f[j].resize && f[j].d.id.dev == f[i].d.id.dev)
				break;
		if (j < i)
			continue;       /* this file system was counted already */
		for (j = 0; j < n; j++)
			if (f[j].resize && f[j].d.id.dev == f[i].d.id.dev)
				need += cfg->member_size;
		avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
		if (need > avail)
			fprintf(stderr, "raidfuse: warning: %s: its file system has %llu bytes free, the members made "
				"there take up to %llu as the array fills (they are sparse until written)\n",
				f[i].who, (unsigned long long)avail, (unsigned long long)need);
	}
}

/* An empty partial parity log in the area 8 sectors after the 1.2
 * superblock (md writes one at every start). */
static int write_ppl(const struct rf_sb_io *sio, const char *path, const struct rf_sb_new *n, char *err,
		     size_t errlen)
{
	struct rf_ppl_sbio s = { .dev = { sio } };
	struct rf_ppl_area a = { .present = true, .start = (8 + 8) * 512, .size = RF_SB_PPL_SECTORS * 512ull,
				 .data_offset = n->data_offset * 512 };
	struct rf_ppl_io io;
	int r;

	rf_ppl_io_sb(&io, &s);
	r = rf_ppl_write_empty(&io, 0, &a, rf_ppl_signature(n->uuid));
	if (r)
		snprintf(err, errlen, "%s: writing the partial parity log: %s", path, strerror(-r));
	return r;
}

/* A degraded array as mdadm creates it (Create.c): raid4/5 with one
 * member missing, raid6 with two, a raid1 with one left, have no
 * redundancy that could disagree, so they are created clean (no resync:
 * a rebuild onto a spare computes what the missing member holds).  A
 * raid6 with one missing would need a resync of Q alone, which md does
 * not do: one present member, the last, is written as a spare instead,
 * so that rebuilding it computes both.  Returns whether the array is
 * created clean; *spare_slot is the member made a spare, or -1. */
static bool degraded_create(const struct rf_config *cfg, bool assume_clean, int *spare_slot)
{
	int i, missing = 0;

	*spare_slot = -1;
	for (i = 0; i < cfg->nmembers; i++)
		missing += !cfg->members[i];
	if (assume_clean || !missing || cfg->metadata != RF_SB_12)
		return assume_clean;
	if (cfg->level == 6 && missing == 1) {
		*spare_slot = cfg->nmembers - 1;
		if (!cfg->members[*spare_slot])
			(*spare_slot)--;
		missing++;
	}
	return ((cfg->level == 4 || cfg->level == 5) && missing == 1) || (cfg->level == 6 && missing == 2) ||
	       (cfg->level == 1 && cfg->nmembers - missing == 1);
}

/* Whether cfg (the command line's bitmap options applied) asks for an
 * array that cannot be made or served: 1, said naming path; else 0. */
static int config_refused(const char *path, const struct rf_config *cfg)
{
	int i, n;

	if (cfg->bitmap && (cfg->level == 0 || cfg->metadata != RF_SB_12)) {
		fprintf(stderr, "raidfuse: %s: an internal bitmap needs md metadata 1.2 and a level with "
			"redundancy (md keeps none for raid0)\n", path);
		return 1;
	}
	if (cfg->ppl && cfg->bitmap) {
		fprintf(stderr, "raidfuse: %s: md keeps no partial parity log (consistency_policy \"ppl\") beside "
			"an internal bitmap\n", path);
		return 1;
	}
	for (i = n = 0; i < cfg->nmembers; i++)
		n += !cfg->members[i];
	if (n > rf_config_tolerated(cfg->level, cfg->layout, cfg->nmembers)) {
		fprintf(stderr, "raidfuse: %s:%d: key 'array.members': %d of %d members are \"missing\" but raid%d "
			"with %d members survives at most %d: the array could not be served\n", path,
			cfg->member_line[0], n, cfg->nmembers, cfg->level, cfg->nmembers,
			rf_config_tolerated(cfg->level, cfg->layout, cfg->nmembers));
		return 1;
	}
	if (cfg->nspares && cfg->level == 0) {
		fprintf(stderr, "raidfuse: %s: raid0 takes no spares (nothing to rebuild onto them)\n", path);
		return 1;
	}
	return 0;
}

/* What create works out before it writes anything. */
struct plan {
	uint64_t bytes[2 * RF_MAX_MEMBERS];     /* each file's size once made (0: missing) */
	bool clean;                             /* created clean: no resync due */
	int spare_slot;                         /* the member written as a spare, or -1 (degraded_create()) */
	struct rf_sb_new sbn;                   /* 1.2: the superblocks */
	struct rf_bitmap_sb bsb;                /* 1.2 with cfg->bitmap: their bitmap */
};

/* Open every member and spare first (making the missing ones) and
 * check them all, each file's size into bytes; write none until all are
 * fine.  Returns how many are bad (each said). */
static int open_all(const struct rf_config *cfg, struct cfile *f, int n, bool force, uint64_t *bytes)
{
	int i, bad = 0;

	for (i = 0; i < n; i++) {
		struct cfile *c = &f[i];
		bool member = i < cfg->nmembers;

		c->d.fd = c->d.fd_direct = -1;
		c->path = member ? cfg->members[i] : cfg->spares[i - cfg->nmembers];
		c->what = member ? "member" : "spare";
		c->num = member ? i : i - cfg->nmembers;
		snprintf(c->who, sizeof(c->who), "%s %d (%s)", c->what, c->num, c->path ? c->path : "missing");
		if (c->path)
			bad += check_one(cfg, f, i, force);
		bytes[i] = c->path ? c->bytes : 0;
	}
	return bad;
}

/* The 1.2 superblocks and their bitmap into p, for files of p->bytes;
 * every spare must hold what each member uses.  0, or 1 (said). */
static int plan_sbs(const struct rf_config *cfg, const struct cfile *f, int n, struct plan *p)
{
	char err[1024];
	int i;

	if (cfg->metadata != RF_SB_12)
		return 0;
	if (rf_assemble_plan_create(cfg, p->bytes, p->clean, &p->sbn, err, sizeof(err)) ||
	    (cfg->bitmap && rf_bitmap_plan(&p->sbn, cfg->bitmap_chunk, &p->bsb, err, sizeof(err)))) {
		fprintf(stderr, "raidfuse: %s\n", err);
		return 1;
	}
	for (i = cfg->nmembers; i < n; i++) {
		if (p->bytes[i] / 512 < p->sbn.data_offset + p->sbn.size) {
			fprintf(stderr, "raidfuse: %s: %llu bytes cannot hold the %llu each member uses\n",
				f[i].who, (unsigned long long)p->bytes[i],
				(unsigned long long)((p->sbn.data_offset + p->sbn.size) * 512));
			return 1;
		}
	}
	return 0;
}

/* The missing members' slots, and the member degraded_create() chose,
 * recorded as spares in p->sbn (the latter said). */
static void mark_spares(const struct rf_config *cfg, const struct cfile *f, struct plan *p)
{
	int i;

	for (i = 0; i < cfg->nmembers; i++)
		if (!cfg->members[i])
			p->sbn.spare_slots |= 1ull << i;
	if (p->spare_slot >= 0) {
		p->sbn.spare_slots |= 1ull << p->spare_slot;
		printf("%s: raid6 with one member missing: written as a spare, so that rebuilding it computes "
		       "the parity (as mdadm creates it)\n", f[p->spare_slot].who);
	}
}

/* File i (c) made at member_size where it is made or recreated
 * (c->resize) and, with metadata 1.2, its superblock, bitmap and partial
 * parity log written; a missing member is skipped.  0, or 1 (said). */
static int write_one(const struct rf_config *cfg, const struct cfile *c, int i, const struct plan *p)
{
	int fd = c->d.fd;
	struct rf_sb_io io;
	char err[1024];

	if (!c->path || (!c->resize && cfg->metadata != RF_SB_12))
		return 0;
	if (c->resize && (ftruncate(fd, 0) || ftruncate(fd, (off_t)cfg->member_size))) {
		fprintf(stderr, "raidfuse: %s: %s\n", c->who, strerror(errno));
		return 1;
	}
	if (cfg->metadata == RF_SB_12) {
		int r = 0;

		if (c->nbd)
			rf_nbd_sb_io(c->nbd, &io);
		else if ((r = rf_sb_io_fd(&io, fd)))
			snprintf(err, sizeof(err), "%s", strerror(-r));
		/* A spare's superblock (i past the members): its device number
		 * after theirs, its role "spare", as mdadm --create with spares
		 * writes them. */
		if (r || rf_sb_write12_io(&io, c->path, &p->sbn, i, p->bytes[i] / 512, err, sizeof(err)) ||
		    (cfg->bitmap && rf_bitmap_write_new(&io, c->path, (8 + 8) * 512, &p->bsb, err, sizeof(err))) ||
		    (cfg->ppl && write_ppl(&io, c->path, &p->sbn, err, sizeof(err)))) {
			fprintf(stderr, "raidfuse: %s: %s\n", c->who, err);
			return 1;
		}
	}
	if (c->resize)
		printf("%s %d: %s (%llu bytes)\n", c->what, c->num, c->path, (unsigned long long)cfg->member_size);
	return 0;
}

/* What the 1.2 superblocks written say, on stdout. */
static void say_made(const struct rf_config *cfg, const struct plan *p, bool assume_clean)
{
	struct rf_sb sb = { .kind = RF_SB_12 };
	char u[40];

	memcpy(sb.uuid, p->sbn.uuid, 16);
	printf("md 1.2 superblocks: array %s, data offset %llu sectors, %llu sectors per member, %s\n",
	       rf_sb_uuid_str(&sb, u), (unsigned long long)p->sbn.data_offset,
	       (unsigned long long)(p->sbn.size ? p->sbn.size : (p->bytes[0] / 512 - p->sbn.data_offset)),
	       assume_clean ? "clean (--assume-clean)" :
	       p->clean ? "clean, degraded (no redundancy to resync; a spare added is rebuilt)" : "resync due");
	if (cfg->ppl)
		printf("partial parity log: %u sectors, 8 sectors from the superblock\n", RF_SB_PPL_SECTORS);
	if (cfg->bitmap)
		printf("internal bitmap: %llu chunks of %u KiB, %u sectors from the superblock\n",
		       (unsigned long long)rf_bitmap_bits(p->bsb.sync_size, p->bsb.chunk_bytes),
		       p->bsb.chunk_bytes >> 10, 8);
}

/* Create in steps: the config refused or not, every file opened and
 * checked, the superblocks planned, then written, then said. */
int rf_create(const char *path, struct rf_config *loaded, const struct rf_create_opts *o)
{
	struct rf_config cfg = *loaded;
	struct plan p = { .spare_slot = -1 };
	int i, n, bad, ret;
	struct cfile *f;

	memset(loaded, 0, sizeof(*loaded));
	if (o->bitmap >= 0)
		cfg.bitmap = o->bitmap;
	if (o->bitmap_chunk)
		cfg.bitmap_chunk = o->bitmap_chunk;
	if (config_refused(path, &cfg)) {
		rf_config_free(&cfg);
		return 1;
	}
	n = cfg.nmembers + cfg.nspares;
	f = calloc((size_t)n, sizeof(*f));
	if (!f) {
		rf_config_free(&cfg);
		return 1;
	}
	/* A failure closes them again and unlinks what was made: every file
	 * stays as it was. */
	bad = open_all(&cfg, f, n, o->force, p.bytes);
	/* The superblocks, worked out before anything is written. */
	p.clean = degraded_create(&cfg, o->assume_clean, &p.spare_slot);
	if (!bad)
		bad = plan_sbs(&cfg, f, n, &p);
	if (bad) {
		release_all(f, n, true);
		free(f);
		rf_config_free(&cfg);
		return 1;
	}
	warn_space(&cfg, f, n);
	mark_spares(&cfg, f, &p);
	ret = 0;
	for (i = 0; i < n; i++)
		if (write_one(&cfg, &f[i], i, &p))
			ret = 1;
	release_all(f, n, false);
	free(f);
	if (!ret && cfg.metadata == RF_SB_12)
		say_made(&cfg, &p, o->assume_clean);
	rf_config_free(&cfg);
	return ret;
}

