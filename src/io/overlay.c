/* SPDX-License-Identifier: GPL-2.0-or-later */
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
 * What it was made over.  The .cow and .map files only make sense over
 * the members exactly as they were when the overlay was made: a member
 * written since (assembled without the overlay, touched by mdadm) under
 * an old overlay gives an image that is half one and half the other.  So
 * DIR/<uuid>.base records, for each member the overlay was opened for,
 * the member's own on-disk superblock at that time (events, checksum,
 * role, size), and every later open compares the member's on-disk
 * superblock with it (never the overlaid one: raidfuse's own superblock
 * updates go into the overlay and leave the member's as it was).  Any
 * difference refuses the overlay, naming the member and what changed.
 * The record is written (to a temporary name, fsynced, renamed) before
 * the member's first .cow or .map file exists, under an flock of DIR, so
 * a member with overlay files always has a record; .cow/.map files with
 * no record are an older raidfuse's overlay, which cannot be checked and
 * is refused.  A record that is torn, of another version, of another
 * array or fails its checksum is refused too, never trusted.
 *
 * It does NOT know about arrays, levels or superblock contents beyond the
 * name the member's own superblock gives its files and the fields above.
 */
#include <endian.h>
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
#include "raidfuse/lockcheck.h"
#include "raidfuse/overlay.h"
#include "raidfuse/parity.h"

#define MAP_MAGIC "RFOVL1\n"
#define MAP_HDR 4096

/* The .map file's header, little-endian. */
struct map_hdr {
	char magic[8];
	uint64_t block;                 /* RF_OVL_BLOCK */
	uint64_t member_bytes;
	char member[256];               /* where it was made (for people) */
};
_Static_assert(sizeof(struct map_hdr) == 280, "map header");

/* The .base file: a header, one entry per member, a CRC32C of all before
 * it; every field little-endian. */
#define BASE_MAGIC "RFOVBAS\n"
#define BASE_FILE_MAX (sizeof(struct base_hdr) + RF_SB_MAX_DEV * sizeof(struct base_ent) + 4)

struct base_hdr {
	char magic[8];
	uint32_t version;               /* RF_OVL_BASE_VERSION */
	uint32_t bytes;                 /* the whole file, checksum included */
	uint8_t uuid[16];               /* the array's */
	uint32_t n;                     /* entries */
	uint32_t reserved;
};
_Static_assert(sizeof(struct base_hdr) == 40, "base header");

struct base_ent {
	uint32_t dev_number;            /* the member's slot in dev_roles */
	uint32_t role;                  /* its role then (RF_SB_ROLE_* for none) */
	uint32_t sb_csum;               /* its superblock's checksum then */
	uint32_t reserved;
	uint64_t events;                /* its superblock's events then */
	uint64_t member_bytes;
};
_Static_assert(sizeof(struct base_ent) == 32, "base entry");

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

int rf_ioq_init_overlay(struct rf_ioq *q, struct rf_ioq_devs devs, unsigned depth)
{
	return rf_ioq_init_sync_run(q, devs, depth, ovl_run);
}

/* ---- open and close ---- */

uint32_t rf_ovl_crc32c(const void *buf, size_t len)
{
	return ~rf_crc32c(~0u, buf, len);
}

int rf_ovl_map_parse(const void *file, size_t len, uint64_t member_bytes, uint8_t *map, uint64_t *ncopied,
		     const char *mpath, const char *member, char *err, size_t errlen)
{
	uint64_t nblocks = (member_bytes + RF_OVL_BLOCK - 1) / RF_OVL_BLOCK, mapbytes = (nblocks + 7) / 8, b, n = 0;
	struct map_hdr h;

	if (len < sizeof(h)) {
		snprintf(err, errlen, "overlay %s: torn or not an overlay map (%zu bytes)", mpath, len);
		return -EINVAL;
	}
	memcpy(&h, file, sizeof(h));
	if (memcmp(h.magic, MAP_MAGIC, sizeof(h.magic)) || le64toh(h.block) != RF_OVL_BLOCK) {
		snprintf(err, errlen, "overlay %s: not a raidfuse overlay map", mpath);
		return -EINVAL;
	}
	if (le64toh(h.member_bytes) != member_bytes) {
		snprintf(err, errlen, "overlay %s was made for a member of %llu bytes, %s has %llu", mpath,
			 (unsigned long long)le64toh(h.member_bytes), member, (unsigned long long)member_bytes);
		return -EINVAL;
	}
	if (len < MAP_HDR || len - MAP_HDR < mapbytes) {
		snprintf(err, errlen, "overlay %s: torn: %zu bytes, a member of %llu bytes needs %llu", mpath, len,
			 (unsigned long long)member_bytes, (unsigned long long)(MAP_HDR + mapbytes));
		return -EINVAL;
	}
	memcpy(map, (const uint8_t *)file + MAP_HDR, mapbytes);
	/* The blocks copied: 64 bits at a time (a 1 TiB member's map is
	 * 32 MiB), the tail bit by bit. */
	for (b = 0; b < nblocks / 64; b++) {
		uint64_t w;

		memcpy(&w, map + b * 8, 8);
		n += (uint64_t)__builtin_popcountll(w);
	}
	for (b = nblocks / 64 * 64; b < nblocks; b++)
		n += map[b / 8] >> (b % 8) & 1;
	*ncopied = n;
	return 0;
}

static int open_map(struct rf_ovl *o, const char *mpath, const char *member, char *err, size_t errlen)
{
	size_t mapbytes = (size_t)((o->nblocks + 7) / 8), len;
	struct map_hdr h;
	struct stat st;
	char *file;
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
		h.block = htole64(RF_OVL_BLOCK);
		h.member_bytes = htole64(o->size);
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
	len = (uint64_t)st.st_size < MAP_HDR + mapbytes ? (size_t)st.st_size : MAP_HDR + mapbytes;
	file = malloc(len);
	if (!file)
		return -ENOMEM;
	r = rf_pread_full(o->mapfd, file, len, 0);
	if (r)
		snprintf(err, errlen, "overlay %s: %s", mpath, strerror(-r));
	else
		r = rf_ovl_map_parse(file, len, o->size, o->map, &o->ncopied, mpath, member, err, errlen);
	free(file);
	return r;
}

/* ---- the record of what it was made over ---- */

size_t rf_ovl_base_build(const struct rf_ovl_base *b, void *buf, size_t size)
{
	size_t len = sizeof(struct base_hdr) + b->n * sizeof(struct base_ent) + 4;
	struct base_hdr h = { .version = htole32(RF_OVL_BASE_VERSION), .bytes = htole32((uint32_t)len),
			      .n = htole32(b->n) };
	uint8_t *p = buf;
	uint32_t c;

	if (len > size)
		return 0;
	memcpy(h.magic, BASE_MAGIC, sizeof(h.magic));
	memcpy(h.uuid, b->uuid, sizeof(h.uuid));
	memcpy(p, &h, sizeof(h));
	for (uint32_t i = 0; i < b->n; i++) {
		struct base_ent e = {
			.dev_number = htole32(b->dev[i].dev_number), .role = htole32(b->dev[i].role),
			.sb_csum = htole32(b->dev[i].sb_csum), .events = htole64(b->dev[i].events),
			.member_bytes = htole64(b->dev[i].member_bytes),
		};

		memcpy(p + sizeof(h) + i * sizeof(e), &e, sizeof(e));
	}
	c = htole32(rf_ovl_crc32c(p, len - 4));
	memcpy(p + len - 4, &c, 4);
	return len;
}

int rf_ovl_base_parse(const void *buf, size_t len, const char *path, struct rf_ovl_base *b, char *err,
		      size_t errlen)
{
	const uint8_t *p = buf;
	struct base_hdr h;
	uint32_t c, want, bytes, n, i, k;

	if (len < sizeof(h) + 4) {
		snprintf(err, errlen, "%s: torn or not an overlay record (%zu bytes)", path, len);
		return -EINVAL;
	}
	memcpy(&h, p, sizeof(h));
	if (memcmp(h.magic, BASE_MAGIC, sizeof(h.magic))) {
		snprintf(err, errlen, "%s: not a raidfuse overlay record", path);
		return -EINVAL;
	}
	if (le32toh(h.version) != RF_OVL_BASE_VERSION) {
		snprintf(err, errlen, "%s: an overlay record of version %u; this raidfuse reads version %u", path,
			 le32toh(h.version), RF_OVL_BASE_VERSION);
		return -EINVAL;
	}
	bytes = le32toh(h.bytes);
	n = le32toh(h.n);
	if (bytes != len) {
		snprintf(err, errlen, "%s: torn: %zu bytes, its header says %u", path, len, bytes);
		return -EINVAL;
	}
	if (n > RF_SB_MAX_DEV || sizeof(h) + n * sizeof(struct base_ent) + 4 != len) {
		snprintf(err, errlen, "%s: %u members do not fit its %u bytes", path, n, bytes);
		return -EINVAL;
	}
	memcpy(&c, p + len - 4, 4);
	want = rf_ovl_crc32c(p, len - 4);
	if (le32toh(c) != want) {
		snprintf(err, errlen, "%s: checksum 0x%08x, its content gives 0x%08x: torn or changed", path,
			 le32toh(c), want);
		return -EINVAL;
	}
	memcpy(b->uuid, h.uuid, sizeof(b->uuid));
	b->n = n;
	for (i = 0; i < n; i++) {
		struct base_ent e;

		memcpy(&e, p + sizeof(h) + i * sizeof(e), sizeof(e));
		b->dev[i].dev_number = le32toh(e.dev_number);
		b->dev[i].role = le32toh(e.role);
		b->dev[i].sb_csum = le32toh(e.sb_csum);
		b->dev[i].events = le64toh(e.events);
		b->dev[i].member_bytes = le64toh(e.member_bytes);
		for (k = 0; k < i; k++)
			if (b->dev[k].dev_number == b->dev[i].dev_number)
				break;
		if (b->dev[i].dev_number >= RF_SB_MAX_DEV || k < i) {
			snprintf(err, errlen, "%s: member %u: device number %u %s", path, i, b->dev[i].dev_number,
				 k < i ? "recorded twice" : "out of range");
			return -EINVAL;
		}
	}
	return 0;
}

/* "member 2 (d2.img)", or "spare 5 (s.img)" for a device with no role. */
static void who(char *buf, size_t size, const struct rf_sb *sb, const char *path)
{
	if (sb->role >= 0 && sb->role < RF_SB_ROLE_MAX)
		snprintf(buf, size, "member %d (%s)", sb->role, path);
	else
		snprintf(buf, size, "device %u (%s)", sb->dev_number, path);
}

/* Whether the record e still describes the member (superblock sb, bytes
 * long): 0, or -ESTALE with what changed. */
static int base_compare(const struct rf_ovl_base_dev *e, const char *dir, const struct rf_sb *sb, uint64_t bytes,
			const char *path, char *err, size_t errlen)
{
	static const char tail[] = "the members changed since; use a new DIR or remove it";
	char w[600];

	who(w, sizeof(w), sb, path);
	if (e->member_bytes != bytes)
		snprintf(err, errlen, "overlay %s was made for a member of %llu bytes, %s has %llu: %s", dir,
			 (unsigned long long)e->member_bytes, w, (unsigned long long)bytes, tail);
	else if (e->events != sb->events)
		snprintf(err, errlen, "overlay %s was made over %s at events %llu; it is now at events %llu: %s", dir,
			 w, (unsigned long long)e->events, (unsigned long long)sb->events, tail);
	else if (e->role != (uint32_t)sb->role)
		snprintf(err, errlen, "overlay %s was made over %s in role %u; it now has role %u: %s", dir, w,
			 e->role, (uint32_t)sb->role, tail);
	else if (e->sb_csum != sb->csum)
		snprintf(err, errlen, "overlay %s was made over %s with %s checksum 0x%08x; it is now "
			 "0x%08x: %s", dir, w, sb->kind == RF_SB_NONE ? "a sampled blocks'" : "superblock",
			 e->sb_csum, sb->csum, tail);
	else
		return 0;
	return -ESTALE;
}

/* Replace dir's record file name with the n entries of b: a temporary
 * file, fsynced, renamed over it, and the directory fsynced. */
static int base_write(int dirfd, const char *dir, const char *name, const struct rf_ovl_base *b, char *err,
		      size_t errlen)
{
	char tmp[600], *buf = malloc(BASE_FILE_MAX);
	size_t len;
	int fd = -1, r = 0;

	if (!buf)
		return -ENOMEM;
	len = rf_ovl_base_build(b, buf, BASE_FILE_MAX);
	snprintf(tmp, sizeof(tmp), "%s.new", name);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || rf_pwrite_full(fd, buf, len, 0) < 0 || fsync(fd) || renameat(dirfd, tmp, dirfd, name) ||
	    fsync(dirfd)) {
		r = -errno;
		snprintf(err, errlen, "overlay %s/%s: %s", dir, name, strerror(-r));
		unlinkat(dirfd, tmp, 0);
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	return r;
}

/* The member (superblock sb, bytes long, at path) against the record of
 * what the overlay in dir was made over, adding it when the overlay has
 * no files for the member yet (cow, map: their names).  0, or -errno with
 * a message. */
static int base_check(const char *dir, const char *name, const char *cow, const char *map, const struct rf_sb *sb,
		      uint64_t bytes, const char *path, char *err, size_t errlen)
{
	struct rf_ovl_base *b = calloc(1, sizeof(*b));
	char *buf = malloc(BASE_FILE_MAX + 1), bpath[600];
	bool has_files;
	int dirfd, fd, r = 0;
	uint32_t i;
	ssize_t len = 0;

	snprintf(bpath, sizeof(bpath), "%s/%s", dir, name);
	if (!b || !buf) {
		free(b);
		free(buf);
		return -ENOMEM;
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0 || flock(dirfd, LOCK_EX)) {
		r = -errno;
		snprintf(err, errlen, "overlay directory %s: %s", dir, strerror(-r));
		goto out;
	}
	has_files = !access(cow, F_OK) || !access(map, F_OK);
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno != ENOENT) {
		r = -errno;
		snprintf(err, errlen, "overlay %s: %s", bpath, strerror(-r));
		goto out;
	}
	if (fd >= 0) {
		len = pread(fd, buf, BASE_FILE_MAX + 1, 0);
		r = len < 0 ? -errno : 0;
		close(fd);
		if (r) {
			snprintf(err, errlen, "overlay %s: %s", bpath, strerror(-r));
			goto out;
		}
		r = rf_ovl_base_parse(buf, (size_t)len, bpath, b, err, errlen);
		if (r)
			goto out;
		if (memcmp(b->uuid, sb->uuid, sizeof(b->uuid))) {
			snprintf(err, errlen, "overlay %s records another array than %s's", bpath, path);
			r = -EINVAL;
			goto out;
		}
		for (i = 0; i < b->n; i++) {
			if (b->dev[i].dev_number == sb->dev_number) {
				r = base_compare(&b->dev[i], dir, sb, bytes, path, err, errlen);
				goto out;
			}
		}
	} else {
		memcpy(b->uuid, sb->uuid, sizeof(b->uuid));
	}
	if (has_files) {
		/* An older raidfuse's overlay, or a record someone removed. */
		snprintf(err, errlen, "overlay %s has files for %s (%s) but no record of the member it was made "
			 "over (%s), as an older raidfuse made them: it cannot tell whether the members changed "
			 "since; use a new DIR, or remove these files to start over", dir, path, map, bpath);
		r = -ESTALE;
		goto out;
	}
	if (b->n >= RF_SB_MAX_DEV) {
		snprintf(err, errlen, "overlay %s: no room for another member", bpath);
		r = -ENOSPC;
		goto out;
	}
	b->dev[b->n++] = (struct rf_ovl_base_dev){
		.dev_number = sb->dev_number, .role = (uint32_t)sb->role, .sb_csum = sb->csum,
		.events = sb->events, .member_bytes = bytes,
	};
	r = base_write(dirfd, dir, name, b, err, errlen);
out:
	if (dirfd >= 0)
		close(dirfd);           /* and the flock with it */
	free(b);
	free(buf);
	return r;
}

int rf_ovl_open_sb(const char *dir, int fd, const char *path, struct rf_sb *sb, struct rf_ovl **out, char *err,
		    size_t errlen)
{
	struct rf_ovl *o;
	char base[480], mpath[512], bname[48];
	off_t end;
	int r, i, n;

	o = calloc(1, sizeof(*o));
	if (!o) {
		free(sb);
		return -ENOMEM;
	}
	o->cow = o->mapfd = -1;
	o->fd = fd;
	pthread_mutex_init(&o->lock, NULL);
	rf_lock_rank(&o->lock, RF_LOCK_LEAF, "overlay lock");
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
	snprintf(bname, sizeof(bname), "%s.base", base + strlen(dir) + 1);
	snprintf(base + n, sizeof(base) - (size_t)n, "-%u", sb->dev_number);
	snprintf(o->path, sizeof(o->path), "%s.cow", base);
	snprintf(mpath, sizeof(mpath), "%s.map", base);
	/* Before any file of the member's is made: is it what the overlay
	 * was made over? */
	r = base_check(dir, bname, o->path, mpath, sb, o->size, path, err, errlen);
	if (r)
		goto fail;
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

/* The CRC32C of RF_OVL_NOSB_SAMPLES blocks spread evenly over the member
 * (the first and the last included). */
static int sampled_csum(int fd, const char *path, uint64_t size, uint32_t *out, char *err, size_t errlen)
{
	const size_t n = RF_OVL_NOSB_SAMPLES, len = n * RF_OVL_BLOCK;
	unsigned char *buf = calloc(1, len);
	uint64_t last = size > RF_OVL_BLOCK ? size - RF_OVL_BLOCK : 0;
	size_t i;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		uint64_t off = last / (n - 1) * i / RF_OVL_BLOCK * RF_OVL_BLOCK;
		ssize_t got = pread(fd, buf + i * RF_OVL_BLOCK, RF_OVL_BLOCK, (off_t)(i == n - 1 ? last : off));

		if (got < 0) {
			int r = -errno;

			snprintf(err, errlen, "%s: read at %llu: %s", path, (unsigned long long)off, strerror(-r));
			free(buf);
			return r;
		}
	}
	*out = rf_ovl_crc32c(buf, len);
	free(buf);
	return 0;
}

int rf_ovl_open_nosb(const char *dir, int fd, const char *path, const uint8_t key[16], uint32_t slot,
		     struct rf_ovl **out, char *err, size_t errlen)
{
	struct rf_sb *sb = calloc(1, sizeof(*sb));
	off_t end = lseek(fd, 0, SEEK_END);
	int r;

	*out = NULL;
	if (!sb)
		return -ENOMEM;
	if (end < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		free(sb);
		return r;
	}
	/* What names its files and what the record keeps, in a superblock's
	 * place: the caller's key, its slot, a checksum of sampled blocks. */
	sb->kind = RF_SB_NONE;
	memcpy(sb->uuid, key, sizeof(sb->uuid));
	sb->dev_number = slot;
	sb->role = (int)slot;
	r = sampled_csum(fd, path, (uint64_t)end, &sb->csum, err, errlen);
	if (r) {
		free(sb);
		return r;
	}
	return rf_ovl_open_sb(dir, fd, path, sb, out, err, errlen);
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
