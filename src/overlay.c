/* overlay.c - copy-on-write member overlays (see overlay.h for the files).
 *
 * Invariants, per member, all under o->lock:
 *  - a block whose bit is set holds, in the .cow file, the member's whole
 *    block as the array last wrote it; a block whose bit is clear was never
 *    written through the overlay and is read from the member;
 *  - the first write to a block that covers only part of it copies the
 *    member's block into the .cow file first, merged with the new bytes,
 *    in one write: the .cow file never holds half a block;
 *  - the member's fd is only ever read.
 *
 * One lock per member makes every operation on a member atomic with
 * respect to the others on it: correctness first, speed second (an
 * overlay is for experiments on a copy of someone's data, and runs on the
 * synchronous member queue).  Runs of blocks that need no copy go to the
 * .cow file in one system call.
 *
 * It does NOT know about arrays, levels or superblock contents beyond the
 * name the member's own superblock gives its files.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raidfuse/fdio.h"
#include "raidfuse/overlay.h"

#define MAP_MAGIC "RFOVL1\n"
#define MAP_HDR 4096

struct map_hdr {
	char magic[8];
	uint64_t block;                 /* RF_OVL_BLOCK */
	uint64_t member_bytes;
	char member[256];               /* where it was made (for people) */
};

struct rf_ovl {
	pthread_mutex_t lock;
	int fd;                         /* the member, read-only */
	int cow, mapfd;
	uint64_t size;                  /* member bytes */
	uint64_t nblocks;
	uint64_t ncopied;               /* lock: bits set */
	uint8_t *map;                   /* lock: one bit per block */
	char *scratch;                  /* lock: one block */
	char path[512];                 /* the .cow file, for messages */
};

static bool bit(const struct rf_ovl *o, uint64_t b)
{
	return o->map[b / 8] & (1u << (b % 8));
}

/* Mark blocks [b, e) as in the overlay (their data is already written). */
static int set_bits(struct rf_ovl *o, uint64_t b, uint64_t e)
{
	uint64_t i;

	for (i = b; i < e; i++) {
		if (bit(o, i))
			continue;
		o->map[i / 8] |= (uint8_t)(1u << (i % 8));
		o->ncopied++;
	}
	return rf_pwrite_full(o->mapfd, (const char *)o->map + b / 8, (e - 1) / 8 - b / 8 + 1, MAP_HDR + b / 8);
}

/* Run len bytes at off through [buf]: reads or writes one flat buffer. */
static int ovl_read(struct rf_ovl *o, char *buf, size_t len, uint64_t off)
{
	uint64_t end = off + len;

	if (off >= o->size) {
		memset(buf, 0, len);
		return 0;
	}
	if (end > o->size) {
		memset(buf + (o->size - off), 0, end - o->size);
		end = o->size;
	}
	while (off < end) {
		uint64_t b = off / RF_OVL_BLOCK, e = b + 1;
		bool in = bit(o, b);
		uint64_t stop;
		int r;

		/* The run of blocks on the same side. */
		while (e < o->nblocks && e * RF_OVL_BLOCK < end && bit(o, e) == in)
			e++;
		stop = e * RF_OVL_BLOCK < end ? e * RF_OVL_BLOCK : end;
		r = rf_pread_full(in ? o->cow : o->fd, buf, stop - off, off);
		if (r)
			return r;
		buf += stop - off;
		off = stop;
	}
	return 0;
}

static int ovl_write(struct rf_ovl *o, const char *buf, size_t len, uint64_t off)
{
	uint64_t end = off + len;
	int r;

	if (end > o->size)
		return -ENOSPC;
	while (off < end) {
		uint64_t b = off / RF_OVL_BLOCK, e = b;
		uint64_t bstart = b * RF_OVL_BLOCK;
		uint64_t bend = bstart + RF_OVL_BLOCK < o->size ? bstart + RF_OVL_BLOCK : o->size;

		if (!bit(o, b) && (off != bstart || end < bend)) {
			/* First write to a block, and only part of it: copy. */
			uint64_t stop = end < bend ? end : bend;

			r = rf_pread_full(o->fd, o->scratch, bend - bstart, bstart);
			if (r)
				return r;
			memcpy(o->scratch + (off - bstart), buf, stop - off);
			r = rf_pwrite_full(o->cow, o->scratch, bend - bstart, bstart);
			if (!r)
				r = set_bits(o, b, b + 1);
			if (r)
				return r;
			buf += stop - off;
			off = stop;
			continue;
		}
		/* A run of blocks already in the overlay or covered whole. */
		while (e < o->nblocks && e * RF_OVL_BLOCK < end) {
			uint64_t s = e * RF_OVL_BLOCK;
			uint64_t t = s + RF_OVL_BLOCK < o->size ? s + RF_OVL_BLOCK : o->size;

			if (!bit(o, e) && (off > s || end < t))
				break;
			e++;
		}
		{
			uint64_t stop = e * RF_OVL_BLOCK < end ? e * RF_OVL_BLOCK : end;

			r = rf_pwrite_full(o->cow, buf, stop - off, off);
			if (!r)
				r = set_bits(o, b, e);
			if (r)
				return r;
			buf += stop - off;
			off = stop;
		}
	}
	return 0;
}

int rf_ovl_preadv(struct rf_ovl *o, const struct iovec *iov, int niov, uint64_t off)
{
	int i, r = 0;

	pthread_mutex_lock(&o->lock);
	for (i = 0; i < niov && !r; i++) {
		r = ovl_read(o, iov[i].iov_base, iov[i].iov_len, off);
		off += iov[i].iov_len;
	}
	pthread_mutex_unlock(&o->lock);
	return r;
}

int rf_ovl_pwritev(struct rf_ovl *o, const struct iovec *iov, int niov, uint64_t off)
{
	int i, r = 0;

	pthread_mutex_lock(&o->lock);
	for (i = 0; i < niov && !r; i++) {
		r = ovl_write(o, iov[i].iov_base, iov[i].iov_len, off);
		off += iov[i].iov_len;
	}
	pthread_mutex_unlock(&o->lock);
	return r;
}

int rf_ovl_fsync(struct rf_ovl *o)
{
	/* Data first: a bit on disk must never name a block that is not. */
	if (fsync(o->cow) || fsync(o->mapfd))
		return -errno;
	return 0;
}

uint64_t rf_ovl_size(const struct rf_ovl *o)
{
	return o->size;
}

uint64_t rf_ovl_blocks(const struct rf_ovl *o)
{
	uint64_t n;

	pthread_mutex_lock(&((struct rf_ovl *)o)->lock);
	n = o->ncopied;
	pthread_mutex_unlock(&((struct rf_ovl *)o)->lock);
	return n;
}

/* ---- superblock IO ---- */

static int sb_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct iovec v = { buf, len };

	return rf_ovl_preadv(ctx, &v, 1, off);
}

static int sb_pwrite(void *ctx, const void *buf, size_t len, uint64_t off)
{
	struct iovec v = { (void *)buf, len };

	return rf_ovl_pwritev(ctx, &v, 1, off);
}

static int sb_fsync(void *ctx)
{
	return rf_ovl_fsync(ctx);
}

void rf_ovl_sb_io(struct rf_ovl *o, struct rf_sb_io *io)
{
	io->pread = sb_pread;
	io->pwrite = sb_pwrite;
	io->fsync = sb_fsync;
	io->ctx = o;
	io->bytes = o->size;
}

/* ---- the member queue backend ---- */

static int ovl_run(const struct rf_ioq_member *mm, int op, const struct iovec *iov, int niov, uint64_t off)
{
	struct rf_ovl *o = mm->layer;
	size_t total = 0;
	int i, r;

	for (i = 0; i < niov; i++)
		total += iov[i].iov_len;
	if (op == RF_MIO_FSYNC)
		return rf_ovl_fsync(o);
	r = op == RF_MIO_READ ? rf_ovl_preadv(o, iov, niov, off) : rf_ovl_pwritev(o, iov, niov, off);
	return r ? r : (int)total;
}

int rf_ioq_init_overlay(struct rf_ioq *q, const struct rf_ioq_member *members, int nmembers, unsigned depth)
{
	return rf_ioq_init_sync_run(q, members, nmembers, depth, ovl_run);
}

/* ---- open and close ---- */

static int open_map(struct rf_ovl *o, const char *mpath, const char *member, char *err, size_t errlen)
{
	size_t mapbytes = (size_t)((o->nblocks + 7) / 8);
	struct map_hdr h;
	struct stat st;
	int r;

	o->mapfd = open(mpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (o->mapfd < 0 || fstat(o->mapfd, &st)) {
		r = -errno;
		snprintf(err, errlen, "overlay %s: %s", mpath, strerror(-r));
		return r;
	}
	o->map = calloc(1, mapbytes ? mapbytes : 1);
	if (!o->map)
		return -ENOMEM;
	if (st.st_size == 0) {
		/* New: the header says what it belongs to. */
		memset(&h, 0, sizeof(h));
		memcpy(h.magic, MAP_MAGIC, sizeof(h.magic));
		h.block = RF_OVL_BLOCK;
		h.member_bytes = o->size;
		snprintf(h.member, sizeof(h.member), "%s", member);
		r = rf_pwrite_full(o->mapfd, (const char *)&h, sizeof(h), 0);
		if (!r && ftruncate(o->mapfd, (off_t)(MAP_HDR + mapbytes)))
			r = -errno;
		if (r) {
			snprintf(err, errlen, "overlay %s: %s", mpath, strerror(-r));
			return r;
		}
		return 0;
	}
	r = rf_pread_full(o->mapfd, (char *)&h, sizeof(h), 0);
	if (!r)
		r = rf_pread_full(o->mapfd, (char *)o->map, mapbytes, MAP_HDR);
	if (r) {
		snprintf(err, errlen, "overlay %s: %s", mpath, strerror(-r));
		return r;
	}
	if (memcmp(h.magic, MAP_MAGIC, sizeof(h.magic)) || h.block != RF_OVL_BLOCK) {
		snprintf(err, errlen, "overlay %s: not a raidfuse overlay map", mpath);
		return -EINVAL;
	}
	if (h.member_bytes != o->size) {
		snprintf(err, errlen, "overlay %s was made for a member of %llu bytes, %s has %llu",
			 mpath, (unsigned long long)h.member_bytes, member, (unsigned long long)o->size);
		return -EINVAL;
	}
	/* The blocks copied: 64 bits at a time (a 1 TiB member's map is
	 * 32 MiB), the tail bit by bit. */
	for (uint64_t i = 0; i < o->nblocks / 64; i++) {
		uint64_t w;

		memcpy(&w, o->map + i * 8, 8);
		o->ncopied += (uint64_t)__builtin_popcountll(w);
	}
	for (uint64_t b = o->nblocks / 64 * 64; b < o->nblocks; b++)
		o->ncopied += bit(o, b);
	return 0;
}

int rf_ovl_open(const char *dir, int fd, const char *path, struct rf_ovl **out, char *err, size_t errlen)
{
	struct rf_ovl *o;
	struct rf_sb *sb;
	char base[480], mpath[512];
	off_t end;
	int r, i, n;

	*out = NULL;
	sb = malloc(sizeof(*sb));
	o = calloc(1, sizeof(*o));
	if (!sb || !o) {
		free(sb);
		free(o);
		return -ENOMEM;
	}
	o->cow = o->mapfd = -1;
	o->fd = fd;
	pthread_mutex_init(&o->lock, NULL);
	/* The member's own superblock names its files. */
	r = rf_sb_read(fd, path, sb, err, errlen);
	if (r) {
		if (r == -ENOENT) {
			char why[512];

			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errlen, "%s (an overlay needs md superblocks to name its files)", why);
		}
		goto fail;
	}
	end = lseek(fd, 0, SEEK_END);
	if (end < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		goto fail;
	}
	o->size = (uint64_t)end;
	o->nblocks = (o->size + RF_OVL_BLOCK - 1) / RF_OVL_BLOCK;
	if (strlen(dir) > 400) {
		r = -ENAMETOOLONG;
		snprintf(err, errlen, "overlay directory %.40s...: %s", dir, strerror(-r));
		goto fail;
	}
	n = snprintf(base, sizeof(base), "%s/", dir);
	for (i = 0; i < 16 && n < (int)sizeof(base); i++)
		n += snprintf(base + n, sizeof(base) - (size_t)n, "%02x", sb->uuid[i]);
	snprintf(base + n, sizeof(base) - (size_t)n, "-%u", sb->dev_number);
	snprintf(o->path, sizeof(o->path), "%s.cow", base);
	snprintf(mpath, sizeof(mpath), "%s.map", base);
	o->cow = open(o->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (o->cow < 0) {
		r = -errno;
		snprintf(err, errlen, "overlay %s: %s", o->path, strerror(-r));
		goto fail;
	}
	if (flock(o->cow, LOCK_EX | LOCK_NB)) {
		r = -errno;
		snprintf(err, errlen, "overlay %s (for %s) is in use by another raidfuse or process", o->path, path);
		goto fail;
	}
	/* Sparse: holes where the member is still the truth. */
	if (ftruncate(o->cow, (off_t)o->size)) {
		r = -errno;
		snprintf(err, errlen, "overlay %s: %s", o->path, strerror(-r));
		goto fail;
	}
	r = open_map(o, mpath, path, err, errlen);
	if (r)
		goto fail;
	o->scratch = malloc(RF_OVL_BLOCK);
	if (!o->scratch) {
		r = -ENOMEM;
		goto fail;
	}
	free(sb);
	*out = o;
	return 0;
fail:
	if (r == -ENOMEM)
		snprintf(err, errlen, "overlay for %s: %s", path, strerror(ENOMEM));
	free(sb);
	o->fd = -1;             /* the caller's */
	rf_ovl_close(o);
	return r;
}

void rf_ovl_close(struct rf_ovl *o)
{
	if (!o)
		return;
	if (o->cow >= 0 && o->mapfd >= 0)
		rf_ovl_fsync(o);
	if (o->cow >= 0)
		close(o->cow);
	if (o->mapfd >= 0)
		close(o->mapfd);
	pthread_mutex_destroy(&o->lock);
	free(o->map);
	free(o->scratch);
	free(o);
}
