/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_super.c - md superblocks from bytes: the arrays kernel md made,
 * hand-built 0.90/1.0/1.1 superblocks, damaged ones, write-then-read, and
 * assembling from superblocks.
 *
 * The md-images (tests/data/md-images, or RF_MD_IMAGES) are the ground truth:
 * every member is streamed through xz and kept as a sparse file of the same
 * size holding only its first 64 KiB and last 192 KiB (where the four
 * superblock kinds live), so the test needs little memory and disk.  Each
 * must parse to what manifest.json records, and rf_sb_examine() must print
 * what mdadm --examine printed for it (info/examine-roleN.txt), line for
 * line; the one difference allowed is mdadm's "(local to host NAME)" after
 * the name, which depends on the host examining.
 *
 * Checksums in this file are computed by its own code, not super.c's, so a
 * wrong algorithm in super.c cannot agree with itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "raidfuse/array.h"
#include "raidfuse/assemble.h"
#include "raidfuse/super.h"
#include "fixture.h"

#define HEAD (64 * 1024)
#define TAIL (192 * 1024)

static char tmpdir[512];
static char images[512];        /* "" when there are none */

struct member {
	char path[PATH_MAX];
	char *src;                      /* its packed file (tests/data/md-images) */
	char examine[PATH_MAX];         /* mdadm's text */
	int role;
	uint64_t data_offset, super_offset;
	char device_uuid[40];
};

struct image {
	char name[64];
	int level, layout, chunk_kib, raid_disks;
	char metadata[8], uuid[40];
	uint64_t component;
	int nmembers;
	struct member m[8];
};

static struct image imgs[16];
static int nimgs;

/* ------------------------------------------------------------ helpers */

/* The text after "KEY": in s (NULL if absent). */
static const char *jfind(const char *s, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(s, pat);
	return p ? p + strlen(pat) : NULL;
}

static long long jnum(const char *s, const char *key, long long dflt)
{
	const char *p = jfind(s, key);

	if (!p || !strncmp(p, "null", 4))
		return dflt;
	return strtoll(p, NULL, 10);
}

static void jstr(const char *s, const char *key, char *out, size_t len)
{
	const char *p = jfind(s, key), *e;

	out[0] = '\0';
	if (!p || *p != '"')
		return;
	e = strchr(p + 1, '"');
	if (e && (size_t)(e - p - 1) < len) {
		memcpy(out, p + 1, (size_t)(e - p - 1));
		out[e - p - 1] = '\0';
	}
}

/* Put n bytes that lie at stream offset off into the ring of TAIL bytes
 * indexed by offset, in at most two copies (a byte loop costs minutes
 * under TSan over the images' hundreds of MiB). */
static void ring_put(uint8_t *ring, uint64_t off, const char *p, size_t n)
{
	if (n > TAIL) {
		off += n - TAIL;
		p += n - TAIL;
		n = TAIL;
	}
	size_t at = (size_t)(off % TAIL), first = n < TAIL - at ? n : TAIL - at;

	memcpy(ring + at, p, first);
	memcpy(ring, p + first, n - first);
}

/* Stream xz -dc of src into a sparse copy at dst holding only the head
 * and tail; returns the member's size or 0 on failure. */
static uint64_t keep_ends(const char *src, const char *dst)
{
	char buf[1 << 16];
	char cmd[3 * PATH_MAX];
	uint8_t *tail = calloc(1, TAIL);
	uint64_t total = 0;
	size_t n;
	FILE *in;
	int fd;

	snprintf(cmd, sizeof(cmd), "xz -dc '%s'", src);
	in = popen(cmd, "r");
	fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (!in || fd < 0 || !tail)
		return 0;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0) {
		if (total < HEAD && pwrite(fd, buf, n < HEAD - total ? n : HEAD - total, (off_t)total) < 0)
			return 0;
		ring_put(tail, total, buf, n);   /* the last TAIL bytes, by offset */
		total += n;
	}
	if (pclose(in) != 0 || total < TAIL)
		return 0;
	if (ftruncate(fd, (off_t)total))
		return 0;
	/* total - TAIL sits at ring index total % TAIL: two writes */
	size_t at = (size_t)(total % TAIL);

	if (pwrite(fd, tail + at, TAIL - at, (off_t)(total - TAIL)) != (ssize_t)(TAIL - at) ||
	    pwrite(fd, tail, at, (off_t)(total - at)) != (ssize_t)at)
		return 0;
	close(fd);
	free(tail);
	return total;
}

/* Every member's ends, unpacked by a few threads at once (xz is one
 * core's work per member: the images' 86 members took 24 s in a row). */
static struct {
	const char *src[128], *dst[128];
	int n, next, failed;
	pthread_mutex_t lock;
} unpack = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *unpack_main(void *arg)
{
	for (;;) {
		int i;

		pthread_mutex_lock(&unpack.lock);
		i = unpack.next < unpack.n ? unpack.next++ : -1;
		pthread_mutex_unlock(&unpack.lock);
		if (i < 0)
			return NULL;
		if (!keep_ends(unpack.src[i], unpack.dst[i])) {
			pthread_mutex_lock(&unpack.lock);
			unpack.failed = 1;
			pthread_mutex_unlock(&unpack.lock);
		}
	}
}

static int unpack_all(void)
{
	pthread_t t[4];
	int i, n = 0;

	for (i = 0; i < 4; i++)
		if (!pthread_create(&t[i], NULL, unpack_main, NULL))
			n++;
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return n && !unpack.failed ? 0 : -1;
}

static int load_images(void)
{
	const char *env = getenv("RF_MD_IMAGES");
	const char *cands[] = { env, "tests/data/md-images" }; /* make runs it from the top */
	char path[2 * PATH_MAX], real[PATH_MAX], line[16384];
	FILE *f = NULL;
	size_t c;

	for (c = 0; c < sizeof(cands) / sizeof(cands[0]) && !f; c++) {
		if (!cands[c])
			continue;
		snprintf(path, sizeof(path), "%s/manifest.jsonl", cands[c]);
		f = fopen(path, "r");
		if (f && (!realpath(cands[c], real) || strlen(real) >= sizeof(images))) {
			fclose(f);
			f = NULL;
		} else if (f) {
			memcpy(images, real, strlen(real) + 1); /* length checked above */
		}
	}
	if (!f || system("xz --version >/dev/null 2>&1") != 0) {
		images[0] = '\0';
		if (f)
			fclose(f);
		return 0;
	}
	while (nimgs < 16 && fgets(line, sizeof(line), f)) {
		struct image *im = &imgs[nimgs];
		const char *p = strstr(line, "\"members\": [");
		const char *offs = jfind(line, "data_offset_sectors");

		if (!p)
			continue;
		jstr(line, "name", im->name, sizeof(im->name));
		im->level = (int)jnum(line, "level", -99);
		im->layout = (int)jnum(line, "layout_num", -1);
		im->chunk_kib = (int)jnum(line, "chunk_kib", 0);
		im->raid_disks = (int)jnum(line, "raid_disks", 0);
		im->component = (uint64_t)jnum(line, "component_sectors", 0);
		jstr(line, "metadata", im->metadata, sizeof(im->metadata));
		jstr(line, "array_uuid", im->uuid, sizeof(im->uuid));
		(void)offs;
		/* members: {"role": N, "file": ..., "data_offset_sectors": ..., ...} */
		for (p = strstr(p, "{\"role\": "); p && im->nmembers < 8; p = strstr(p + 1, "{\"role\": ")) {
			struct member *m = &im->m[im->nmembers];
			char file[256], name[64];

			m->role = (int)jnum(p, "role", -1);
			jstr(p, "file", file, sizeof(file));
			m->data_offset = (uint64_t)jnum(p, "data_offset_sectors", -1);
			m->super_offset = (uint64_t)jnum(p, "super_offset_sectors", -1);
			jstr(p, "device_uuid", m->device_uuid, sizeof(m->device_uuid));
			memcpy(name, im->name, sizeof(name));
			snprintf(path, sizeof(path), "%s/%s", images, file);
			snprintf(m->path, sizeof(m->path), "%s/%s-role%d.img", tmpdir, name, m->role);
			snprintf(m->examine, sizeof(m->examine), "%s/%s/info/examine-role%d.txt", images,
				 name, m->role);
			if (unpack.n == (int)(sizeof(unpack.src) / sizeof(unpack.src[0])))
				return -1;
			m->src = strdup(path);
			unpack.src[unpack.n] = m->src;
			unpack.dst[unpack.n++] = m->path;
			im->nmembers++;
		}
		nimgs++;
	}
	fclose(f);
	return unpack_all();
}

static int group_setup(void **state)
{
	char real[PATH_MAX];

	if (fx_dir_make("super") || !realpath(fx_dir, real) || strlen(real) >= sizeof(tmpdir))
		return -1;
	memcpy(tmpdir, real, strlen(real) + 1);     /* length checked above */
	/* mdadm's texts were printed in UTC. */
	setenv("TZ", "UTC", 1);
	tzset();
	return load_images();
}

static int open_read(const char *path, struct rf_sb *sb, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY), r;

	assert_true(fd >= 0);
	r = rf_sb_read(fd, path, sb, err, errlen);
	close(fd);
	return r;
}

/* Our own checksums, written from md's description. */
static uint32_t csum1(const uint8_t *p)
{
	uint32_t max_dev = p[220] | p[221] << 8 | p[222] << 16 | (uint32_t)p[223] << 24;
	/* damage may claim more roles than 4 KiB holds; sum what is there */
	if (max_dev > RF_SB_MAX_DEV)
		max_dev = RF_SB_MAX_DEV;
	size_t len = 256 + 2 * (size_t)max_dev, i;
	uint64_t sum = 0;

	for (i = 0; i + 4 <= len; i += 4)
		if (i != 216)
			sum += p[i] | p[i + 1] << 8 | p[i + 2] << 16 | (uint64_t)p[i + 3] << 24;
	if (len - i == 2)
		sum += p[i] | p[i + 1] << 8;
	return (uint32_t)(sum & 0xffffffff) + (uint32_t)(sum >> 32);
}

static void put32(uint8_t *p, size_t off, uint32_t v)
{
	p[off] = (uint8_t)v;
	p[off + 1] = (uint8_t)(v >> 8);
	p[off + 2] = (uint8_t)(v >> 16);
	p[off + 3] = (uint8_t)(v >> 24);
}

static void put64(uint8_t *p, size_t off, uint64_t v)
{
	put32(p, off, (uint32_t)v);
	put32(p, off + 4, (uint32_t)(v >> 32));
}

static void fix_csum1(uint8_t *p)
{
	put32(p, 216, csum1(p));
}

static uint32_t csum090(const uint32_t *w)
{
	uint64_t sum = 0;

	for (int i = 0; i < 1024; i++)
		if (i != 38)
			sum += w[i];
	return (uint32_t)(sum & 0xffffffff) + (uint32_t)(sum >> 32);
}

/* A clean 0.90 raid5 of 4 members, this one in role r, by word index. */
static void make090(uint32_t *w, int r, uint64_t member_sectors)
{
	memset(w, 0, 4096);
	w[0] = 0xa92b4efc;
	w[2] = 90;
	w[5] = 0x11111111;              /* set_uuid0 */
	w[6] = 1700000000;              /* ctime */
	w[7] = 5;                       /* level */
	w[8] = (uint32_t)(((member_sectors & ~127ULL) - 128) / 2 / 64 * 64); /* size, KiB */
	w[9] = 4;                       /* nr_disks */
	w[10] = 4;                      /* raid_disks */
	w[13] = 0x22222222;
	w[14] = 0x33333333;
	w[15] = 0x44444444;
	w[32] = 1700000100;             /* utime */
	w[33] = 1;                      /* clean */
	w[34] = w[35] = 4;              /* active, working */
	w[39] = 7;                      /* events_lo */
	w[43] = 0xffffffff;             /* recovery_cp: in sync */
	w[64] = 2;                      /* left-symmetric */
	w[65] = 65536;                  /* chunk bytes */
	for (int d = 0; d < 4; d++) {
		w[128 + 32 * d] = (uint32_t)d;           /* number */
		w[128 + 32 * d + 3] = (uint32_t)d;       /* raid_disk */
		w[128 + 32 * d + 4] = 6;                 /* active, sync */
	}
	memcpy(&w[992], &w[128 + 32 * r], 128);
	w[38] = csum090(w);
}

/* ------------------------------------------------------------ md-images */

static void test_md_images_parse(void **state)
{
	char err[1024], u[40];
	struct rf_sb *sb = malloc(sizeof(*sb));
	int i, j, n = 0;

	if (!images[0])
		skip();
	for (i = 0; i < nimgs; i++) {
		const struct image *im = &imgs[i];

		for (j = 0; j < im->nmembers; j++) {
			const struct member *m = &im->m[j];
			int r = open_read(m->path, sb, err, sizeof(err));

			if (r)
				fail_msg("%s role %d: %s", im->name, m->role, err);
			assert_string_equal(rf_sb_kind_name(sb->kind), im->metadata);
			assert_int_equal(sb->level, im->level);
			if (im->level != 0)
				assert_int_equal(sb->layout, im->layout);
			assert_int_equal(sb->chunk_sectors, (uint32_t)im->chunk_kib * 2);
			assert_int_equal(sb->raid_disks, im->raid_disks);
			assert_int_equal(sb->data_offset, m->data_offset);
			assert_int_equal(sb->sb_offset, m->super_offset);
			assert_int_equal(sb->role, m->role);
			assert_string_equal(rf_sb_uuid_str(sb, u), im->uuid);
			if (im->level != 0)
				assert_int_equal(sb->size, im->component);
			assert_true(sb->clean);
			assert_int_equal(rf_assemble_cfg_layout(sb) >= 0, 1);
			n++;
		}
	}
	assert_true(n >= 10);
	free(sb);
}

static void test_md_images_examine(void **state)
{
	struct rf_sb *sb = malloc(sizeof(*sb));
	char err[1024], *ours = NULL, host[256];
	size_t oursz = 0;
	int i, j;

	if (!images[0])
		skip();
	gethostname(host, sizeof(host));
	for (i = 0; i < nimgs; i++) {
		for (j = 0; j < imgs[i].nmembers; j++) {
			const struct member *m = &imgs[i].m[j];
			char want[256], got[256], *save = NULL;
			FILE *f = open_memstream(&ours, &oursz), *mf = fopen(m->examine, "r");
			const char *line;
			int ln = 0;

			assert_non_null(mf);
			assert_int_equal(open_read(m->path, sb, err, sizeof(err)), 0);
			rf_sb_examine(f, m->path, sb);
			fclose(f);
			line = strtok_r(ours, "\n", &save);
			/* blank lines are dropped by strtok; skip them in mdadm's too */
			while (fgets(want, sizeof(want), mf)) {
				want[strcspn(want, "\n")] = '\0';
				if (!want[0])
					continue;
				ln++;
				if (!line)
					fail_msg("%s: ours ends before mdadm's line '%s'", m->examine, want);
				snprintf(got, sizeof(got), "%s", line);
				line = strtok_r(NULL, "\n", &save);
				if (ln == 1)
					continue;       /* the device's path */
				if (strstr(want, "           Name : ")) {
					/* "(local to host X)" depends on who examines */
					char *p = strstr(want, "  (local to host");

					if (p && !strstr(got, "(local to host"))
						*p = '\0';
				}
				if (strcmp(want, got))
					fail_msg("%s line %d:\n  mdadm:    '%s'\n  raidfuse: '%s'", m->examine, ln,
						 want, got);
			}
			if (line)
				fail_msg("%s: ours has more: '%s'", m->examine, line);
			fclose(mf);
			free(ours);
			ours = NULL;
		}
	}
	free(sb);
}

/* ------------------------------------------------------- hand-built kinds */

static const char *write_member(const char *name, uint64_t bytes, const void *sb, uint64_t at)
{
	static char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	fd = fx_file_open(path, bytes);
	if (sb)
		assert_int_equal(pwrite(fd, sb, 4096, (off_t)at), 4096);
	close(fd);
	return path;
}

static struct rf_sb_new new_array(int level, int layout, uint32_t chunk, int disks, uint64_t member_sectors)
{
	struct rf_sb_new n;

	memset(&n, 0, sizeof(n));
	assert_int_equal(rf_sb_random_uuid(n.uuid), 0);
	snprintf(n.name, sizeof(n.name), "test:vol");
	n.level = level;
	n.layout = layout;
	n.chunk_sectors = chunk;
	n.raid_disks = disks;
	n.data_offset = rf_sb_default_data_offset(member_sectors, chunk);
	n.size = (member_sectors - n.data_offset) / (chunk ? chunk : 128) * (chunk ? chunk : 128);
	n.ctime = 1700000000;
	return n;
}

/* A 1.1 and a 1.0 superblock: a 1.2 moved and its offsets redone. */
static void test_kinds_from_bytes(void **state)
{
	const uint64_t sectors = 131072;
	struct rf_sb_new n = new_array(5, 2, 128, 4, sectors);
	uint8_t buf[4096];
	uint32_t w[1024];
	struct rf_sb sb;
	char err[1024];
	const char *p;

	/* 1.2 */
	assert_int_equal(rf_sb_build12(&n, 2, sectors, buf, err, sizeof(err)), 0);
	assert_int_equal(csum1(buf), buf[216] | buf[217] << 8 | buf[218] << 16 | (uint32_t)buf[219] << 24);
	p = write_member("k12.img", sectors * 512, buf, 4096);
	assert_int_equal(open_read(p, &sb, err, sizeof(err)), 0);
	assert_int_equal(sb.kind, RF_SB_12);
	assert_int_equal(sb.role, 2);
	assert_int_equal(sb.data_offset, 2048);

	/* 1.1: at 0, data after it */
	put64(buf, 144, 0);
	fix_csum1(buf);
	p = write_member("k11.img", sectors * 512, buf, 0);
	assert_int_equal(open_read(p, &sb, err, sizeof(err)), 0);
	assert_int_equal(sb.kind, RF_SB_11);
	assert_int_equal(sb.sb_offset, 0);

	/* 1.0: at the end, data from 0 */
	put64(buf, 144, (sectors - 16) & ~7ULL);
	put64(buf, 128, 0);                     /* data_offset */
	put64(buf, 136, (sectors - 16) & ~7ULL); /* data_size */
	put32(buf, 188, (uint32_t)-8);          /* bblog before the superblock */
	fix_csum1(buf);
	p = write_member("k10.img", sectors * 512, buf, ((sectors - 16) & ~7ULL) * 512);
	assert_int_equal(open_read(p, &sb, err, sizeof(err)), 0);
	assert_int_equal(sb.kind, RF_SB_10);
	assert_int_equal(sb.sb_offset, 131056);
	assert_int_equal(sb.data_offset, 0);

	/* 0.90: host-endian, 64 KiB from the aligned end */
	make090(w, 3, sectors);
	p = write_member("k090.img", sectors * 512 + 5000, w, ((sectors & ~127ULL) - 128) * 512);
	assert_int_equal(open_read(p, &sb, err, sizeof(err)), 0);
	assert_int_equal(sb.kind, RF_SB_090);
	assert_int_equal(sb.role, 3);
	assert_int_equal(sb.level, 5);
	assert_int_equal(sb.layout, 2);
	assert_int_equal(sb.chunk_sectors, 128);
	assert_int_equal(sb.events, 7);
	assert_true(sb.clean);
	assert_int_equal(sb.resync_offset, RF_SB_MAX_SECTOR);
	{
		char u[40];

		assert_string_equal(rf_sb_uuid_str(&sb, u), "11111111:22222222:33333333:44444444");
	}
	/* byte-swapped 0.90 is refused, saying why */
	for (int i = 0; i < 1024; i++)
		w[i] = __builtin_bswap32(w[i]);
	p = write_member("k090be.img", sectors * 512, w, ((sectors & ~127ULL) - 128) * 512);
	assert_int_equal(open_read(p, &sb, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "other byte order"));

	/* nothing at all */
	p = write_member("empty.img", sectors * 512, NULL, 0);
	assert_int_equal(open_read(p, &sb, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no md superblock"));
	assert_non_null(strstr(err, p));
}

/* Two valid superblocks of different kinds: refused, both named. */
static void test_ambiguous(void **state)
{
	const uint64_t sectors = 131072;
	struct rf_sb_new n = new_array(1, 0, 0, 2, sectors);
	uint8_t buf[4096];
	uint32_t w[1024];
	struct rf_sb sb;
	char err[1024];
	const char *p;
	int fd;

	assert_int_equal(rf_sb_build12(&n, 0, sectors, buf, err, sizeof(err)), 0);
	p = write_member("amb.img", sectors * 512, buf, 4096);
	make090(w, 0, sectors);
	fd = open(p, O_WRONLY);
	assert_int_equal(pwrite(fd, w, 4096, (off_t)(((sectors & ~127ULL) - 128) * 512)), 4096);
	close(fd);
	assert_int_equal(open_read(p, &sb, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "ambiguous"));
	assert_non_null(strstr(err, "1.2"));
	assert_non_null(strstr(err, "0.90"));
}

/* ------------------------------------------------------------- damage */

static void expect_bad(const void *buf, enum rf_sb_kind k, uint64_t sectors, const char *what)
{
	struct rf_sb sb;
	char err[1024] = "";
	int r = rf_sb_parse(buf, k, sectors, "/dev/x", &sb, err, sizeof(err));

	if (r == 0)
		fail_msg("%s: accepted", what);
	if (r == -EINVAL && strncmp(err, "/dev/x: ", 8))
		fail_msg("%s: message does not name the member: '%s'", what, err);
	if (r != -EINVAL && r != -ENOENT)
		fail_msg("%s: rc %d", what, r);
}

/* Whatever parses must keep the promises rf_sb makes. */
static void check_sane(const struct rf_sb *sb)
{
	assert_true(sb->data_offset + sb->data_size <= sb->member_sectors);
	assert_true(sb->raid_disks >= 1);
	assert_true(sb->dev_number < sb->max_dev);
	assert_true(sb->max_dev <= RF_SB_MAX_DEV);
	assert_true(sb->role < sb->raid_disks || sb->role >= RF_SB_ROLE_JOURNAL);
	if (sb->level != 1)
		assert_true(sb->chunk_sectors >= 8 && !(sb->chunk_sectors & (sb->chunk_sectors - 1)));
	if (sb->level != 0)
		assert_true(sb->size && sb->size <= sb->data_size);
}

static void fuzz_one(const uint8_t *good, enum rf_sb_kind k, uint64_t sectors, bool is1)
{
	size_t csum_len = is1 ? 256 + 2 * (size_t)(good[220] | good[221] << 8) : 4096;
	uint8_t buf[4096];
	struct rf_sb sb;
	char err[1024], what[64];
	unsigned seed = 12345;

	{
		int r = rf_sb_parse(good, k, sectors, "/dev/x", &sb, err, sizeof(err));

		if (r)
			fail_msg("the good one: %s", err);
	}
	/* Every single bit flip in the checksummed bytes is caught. */
	for (size_t bit = 0; bit < csum_len * 8; bit++) {
		memcpy(buf, good, 4096);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		snprintf(what, sizeof(what), "%s bit %zu flipped", rf_sb_kind_name(k), bit);
		expect_bad(buf, k, sectors, what);
	}
	/* Wrong checksum. */
	memcpy(buf, good, 4096);
	if (is1)
		put32(buf, 216, csum1(buf) + 1);
	else
		((uint32_t *)buf)[38] += 1;
	expect_bad(buf, k, sectors, "checksum off by one");
	assert_int_equal(rf_sb_parse(buf, k, sectors, "/dev/x", &sb, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "checksum"));
	/* Random damage with the checksum made right again: either refused
	 * with a message or sane. */
	for (int it = 0; it < 20000; it++) {
		int nb = 1 + rand_r(&seed) % 8, r;

		memcpy(buf, good, 4096);
		for (int b = 0; b < nb; b++) {
			size_t at = (size_t)rand_r(&seed) % (is1 ? 512 : 4096);

			buf[at] = (uint8_t)rand_r(&seed);
		}
		if (is1) {
			fix_csum1(buf);
		} else {
			((uint32_t *)buf)[38] = csum090((uint32_t *)buf);
		}
		err[0] = '\0';
		r = rf_sb_parse(buf, k, sectors, "/dev/x", &sb, err, sizeof(err));
		if (r == 0)
			check_sane(&sb);
		else if (r == -EINVAL)
			assert_int_equal(strncmp(err, "/dev/x: ", 8), 0);
		else
			assert_int_equal(r, -ENOENT);
	}
}

static void test_fuzz(void **state)
{
	const uint64_t sectors = 131072;
	struct rf_sb_new n = new_array(6, 2, 128, 5, sectors);
	uint8_t buf[4096];
	uint32_t w[1024];
	char err[1024];

	assert_int_equal(rf_sb_build12(&n, 1, sectors, buf, err, sizeof(err)), 0);
	fuzz_one(buf, RF_SB_12, sectors, true);
	make090(w, 1, sectors);
	fuzz_one((uint8_t *)w, RF_SB_090, sectors, false);
	if (images[0] && nimgs) {
		/* a real one from kernel md, 1.0 if there is one */
		for (int i = 0; i < nimgs; i++) {
			struct rf_sb sb;
			int fd = open(imgs[i].m[0].path, O_RDONLY);

			assert_int_equal(rf_sb_read(fd, imgs[i].m[0].path, &sb, err, sizeof(err)), 0);
			assert_int_equal(pread(fd, buf, 4096, (off_t)(sb.sb_offset * 512)), 4096);
			close(fd);
			if (sb.kind == RF_SB_10 || i == nimgs - 1) {
				fuzz_one(buf, sb.kind, sb.member_sectors, true);
				break;
			}
		}
	}
}

/* Truncated members: each size gives a result, never a crash; the
 * superblock only counts where the size puts it. */
static void test_truncated(void **state)
{
	const uint64_t sectors = 2048;
	struct rf_sb_new n = new_array(1, 0, 0, 2, sectors);
	uint8_t buf[4096];
	struct rf_sb sb;
	char err[1024];
	const char *p;

	n.data_offset = 64;
	n.size = sectors - 64;
	assert_int_equal(rf_sb_build12(&n, 0, sectors, buf, err, sizeof(err)), 0);
	p = write_member("trunc.img", sectors * 512, buf, 4096);
	assert_int_equal(open_read(p, &sb, err, sizeof(err)), 0);
	for (uint64_t len = 0; len < sectors * 512; len += len < 16384 ? 512 : 65536) {
		int r;

		assert_int_equal(truncate(p, (off_t)len), 0);
		r = open_read(p, &sb, err, sizeof(err));
		assert_true(r == -ENOENT || r == -EINVAL);
		assert_non_null(strstr(err, p));
	}
}

/* -------------------------------------------------------------- write */

static void test_default_data_offset(void **state)
{
	/* what mdadm 4.2 chose for the md-images' 64 MiB members */
	assert_int_equal(rf_sb_default_data_offset(131072, 128), 2048);
	assert_int_equal(rf_sb_default_data_offset(131072, 0), 2048);
	/* 512K chunks keep more headroom: two chunks (1 MiB), rounded up to 2 MiB */
	assert_int_equal(rf_sb_default_data_offset(131072, 1024), 4096);
	/* large members: 128 MiB headroom + 64K bitmap room -> 129 MiB */
	assert_int_equal(rf_sb_default_data_offset(1ULL << 31, 1024), 264192);
	/* past 200 GiB the bitmap room is 128K, still inside 129 MiB */
	assert_int_equal(rf_sb_default_data_offset(1ULL << 33, 1024), 264192);
}

static void test_write_read_update(void **state)
{
	const uint64_t sectors = 131072;
	struct rf_sb_new n = new_array(10, 0x102, 128, 4, sectors);
	struct rf_sb sb, again;
	char err[1024];
	const char *p = write_member("rt.img", sectors * 512, NULL, 0);
	int fd = open(p, O_RDWR);

	assert_true(fd >= 0);
	n.clean = false;
	assert_int_equal(rf_sb_write12(fd, p, &n, 3, sectors, err, sizeof(err)), 0);
	assert_int_equal(rf_sb_read(fd, p, &sb, err, sizeof(err)), 0);
	assert_int_equal(sb.kind, RF_SB_12);
	assert_memory_equal(sb.uuid, n.uuid, 16);
	assert_string_equal(sb.name, "test:vol");
	assert_int_equal(sb.level, 10);
	assert_int_equal(sb.layout, 0x102);
	assert_int_equal(sb.chunk_sectors, 128);
	assert_int_equal(sb.raid_disks, 4);
	assert_int_equal(sb.size, n.size);
	assert_int_equal(sb.data_offset, 2048);
	assert_int_equal(sb.data_size, sectors - 2048);
	assert_int_equal(sb.role, 3);
	assert_int_equal(sb.dev_number, 3);
	assert_int_equal(sb.max_dev, 128);
	assert_int_equal(sb.events, 0);
	assert_false(sb.clean);
	assert_int_equal(sb.resync_offset, 0);
	assert_int_equal(sb.ctime, 1700000000);
	assert_int_equal(sb.bblog_size, 8);
	assert_int_equal(sb.bblog_offset, 16);

	/* update: events rise, clean, written through */
	assert_int_equal(rf_sb_update(fd, p, &sb, true, 0, err, sizeof(err)), 0);
	assert_int_equal(sb.events, 1);
	assert_true(sb.clean);
	assert_int_equal(rf_sb_read(fd, p, &again, err, sizeof(err)), 0);
	assert_int_equal(again.events, 1);
	assert_int_equal(again.resync_offset, RF_SB_MAX_SECTOR);
	assert_int_equal(rf_sb_update(fd, p, &sb, false, 4096, err, sizeof(err)), 0);
	assert_int_equal(rf_sb_read(fd, p, &again, err, sizeof(err)), 0);
	assert_int_equal(again.events, 2);
	assert_false(again.clean);
	assert_int_equal(again.resync_offset, 4096);
	close(fd);
}

/* The bad block log never lies over the bitmap: after it where the room
 * before the data allows, else (data just past the bitmap) none; without
 * a bitmap a short room puts it just before the data. */
static void test_bblog_place(void **state)
{
	const uint64_t sectors = 16384;
	static const struct { uint64_t data_offset; uint32_t bitmap; uint16_t size; int32_t offset; } cases[] = {
		{ 40, 8, 8, 16 },       /* bitmap 16-24, log 24-32 */
		{ 32, 8, 8, 16 },       /* log 24-32, the data at 32 */
		{ 28, 8, 0, 0 },        /* a log before the data would cover 20-28 */
		{ 24, 8, 0, 0 },
		{ 28, 0, 8, 12 },       /* no bitmap: the log 20-28 */
	};
	char err[1024], name[32];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rf_sb_new n = new_array(5, 2, 8, 3, sectors);
		struct rf_sb sb;
		const char *p;
		int fd;

		snprintf(name, sizeof(name), "bbl%zu.img", i);
		p = write_member(name, sectors * 512, NULL, 0);
		fd = open(p, O_RDWR);
		assert_true(fd >= 0);
		n.data_offset = cases[i].data_offset;
		n.size = sectors - n.data_offset;
		n.bitmap_sectors = cases[i].bitmap;
		assert_int_equal(rf_sb_write12(fd, p, &n, 0, sectors, err, sizeof(err)), 0);
		assert_int_equal(rf_sb_read(fd, p, &sb, err, sizeof(err)), 0);
		assert_int_equal(sb.bblog_size, cases[i].size);
		assert_int_equal(sb.bblog_offset, cases[i].offset);
		close(fd);
	}
}

static void test_update_090(void **state)
{
	const uint64_t sectors = 131072;
	uint32_t w[1024];
	struct rf_sb sb, again;
	char err[1024];
	const char *p;
	int fd;

	make090(w, 2, sectors);
	p = write_member("up090.img", sectors * 512, w, ((sectors & ~127ULL) - 128) * 512);
	fd = open(p, O_RDWR);
	assert_int_equal(rf_sb_read(fd, p, &sb, err, sizeof(err)), 0);
	assert_int_equal(rf_sb_update(fd, p, &sb, false, 100, err, sizeof(err)), 0);
	assert_int_equal(rf_sb_read(fd, p, &again, err, sizeof(err)), 0);
	assert_int_equal(again.events, 8);
	assert_false(again.clean);
	assert_int_equal(again.resync_offset, 100);
	close(fd);
}

/* A spare added at run time to a 0.90 array, as md's super_90_sync
 * writes it: its own superblock is the array's with a spare's descriptor
 * at the first number past the raid devices (number and raid_disk 4,
 * state 0), this_disk that descriptor, the counts md keeps (5 disks, 4
 * active, 5 working, 1 spare); the members get the same descriptor (and
 * again changes nothing); rebuilt into role 2 it is listed active and in
 * sync at descriptor 2, this_disk with it, and descriptor 4 is empty.
 * Refused: a descriptor number among the raid devices. */
static void test_spare_090(void **state)
{
	const uint64_t sectors = 131072, at = ((sectors & ~127ULL) - 128) * 512;
	struct rf_sb_change add = { .clean = true, .resync_offset = RF_SB_MAX_SECTOR, .faulty_slot = -1,
				    .set_role = true, .role_slot = 4, .role_value = RF_SB_ROLE_SPARE };
	struct rf_sb model, spare, m1;
	struct rf_sb_io mio, sio, io1;
	uint32_t w[1024];
	char err[1024], mp[PATH_MAX + 64], p1[PATH_MAX + 64];
	const char *sp;
	int mfd, sfd, fd1;

	(void)state;
	make090(w, 0, sectors);
	snprintf(mp, sizeof(mp), "%s", write_member("s090-0.img", sectors * 512, w, at));
	make090(w, 1, sectors);
	snprintf(p1, sizeof(p1), "%s", write_member("s090-1.img", sectors * 512, w, at));
	sp = write_member("s090-spare.img", sectors * 512, NULL, 0);
	mfd = open(mp, O_RDWR);
	sfd = open(sp, O_RDWR);
	fd1 = open(p1, O_RDWR);
	assert_int_equal(rf_sb_io_fd(&mio, mfd), 0);
	assert_int_equal(rf_sb_io_fd(&sio, sfd), 0);
	assert_int_equal(rf_sb_io_fd(&io1, fd1), 0);
	assert_int_equal(rf_sb_read_io(&mio, mp, &model, err, sizeof(err)), 0);

	assert_int_equal(rf_sb_write_spare(&mio, &model, &sio, sp, 2, &spare, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "numbers spares from the 4 raid devices"));
	assert_int_equal(rf_sb_write_spare(&mio, &model, &sio, sp, 4, &spare, err, sizeof(err)), 0);
	assert_int_equal(rf_sb_read_io(&sio, sp, &spare, err, sizeof(err)), 0);
	assert_int_equal(spare.kind, RF_SB_090);
	assert_memory_equal(spare.uuid, model.uuid, 16);
	assert_int_equal(spare.events, model.events);
	assert_int_equal(spare.dev_number, 4);
	assert_int_equal(spare.role, RF_SB_ROLE_SPARE);
	assert_int_equal(spare.v090.this_disk.number, 4);
	assert_int_equal(spare.v090.this_disk.raid_disk, 4);
	assert_int_equal(spare.v090.this_disk.state, 0);
	assert_int_equal(spare.v090.nr_disks, 5);
	assert_int_equal(spare.v090.active, 4);
	assert_int_equal(spare.v090.working, 5);
	assert_int_equal(spare.v090.spare, 1);
	assert_int_equal(spare.v090.failed, 0);
	assert_int_equal(spare.dev_roles[2], 2);

	/* the members learn of it; twice changes nothing */
	assert_int_equal(rf_sb_read_io(&io1, p1, &m1, err, sizeof(err)), 0);
	assert_int_equal(rf_sb_update_io(&io1, p1, &m1, &add, err, sizeof(err)), 0);
	assert_int_equal(rf_sb_update_io(&io1, p1, &m1, &add, err, sizeof(err)), 0);
	assert_int_equal(m1.v090.nr_disks, 5);
	assert_int_equal(m1.v090.spare, 1);
	assert_int_equal(m1.v090.working, 5);
	assert_int_equal(m1.v090.disks[4].number, 4);
	assert_int_equal(m1.v090.disks[4].raid_disk, 4);
	assert_int_equal(m1.v090.disks[4].state, 0);
	assert_int_equal(m1.dev_roles[4], RF_SB_ROLE_SPARE);
	assert_int_equal(m1.dev_number, 1);
	assert_int_equal(rf_sb_update_io(&sio, sp, &spare, &add, err, sizeof(err)), 0);
	assert_int_equal(spare.v090.nr_disks, 5);

	/* member 2 failed and the spare rebuilt into its role: while being
	 * rebuilt it stays a spare, in sync it is role 2 */
	add = (struct rf_sb_change){ .clean = true, .resync_offset = RF_SB_MAX_SECTOR, .faulty_slot = 2 };
	assert_int_equal(rf_sb_update_io(&sio, sp, &spare, &add, err, sizeof(err)), 0);
	assert_int_equal(spare.v090.failed, 1);
	add = (struct rf_sb_change){ .clean = true, .resync_offset = RF_SB_MAX_SECTOR, .faulty_slot = -1,
				     .set_role = true, .role_slot = 4, .role_value = 2 };
	assert_int_equal(rf_sb_update_io(&sio, sp, &spare, &add, err, sizeof(err)), 0);
	assert_int_equal(spare.role, RF_SB_ROLE_SPARE);
	add.role_in_sync = true;
	assert_int_equal(rf_sb_update_io(&sio, sp, &spare, &add, err, sizeof(err)), 0);
	assert_int_equal(spare.dev_number, 2);
	assert_int_equal(spare.role, 2);
	assert_int_equal(spare.v090.this_disk.number, 2);
	assert_int_equal(spare.v090.this_disk.state, 6);       /* active, sync */
	assert_int_equal(spare.v090.disks[4].state, 0);
	assert_int_equal(spare.v090.disks[4].number, 0);
	assert_int_equal(spare.v090.active, 4);
	assert_int_equal(spare.v090.spare, 0);
	assert_int_equal(spare.v090.failed, 0);
	assert_int_equal(spare.v090.nr_disks, 5);
	/* an active role past the raid devices cannot be recorded */
	add.role_value = 4;
	assert_int_equal(rf_sb_update_io(&io1, p1, &m1, &add, err, sizeof(err)), -EINVAL);
	close(mfd);
	close(sfd);
	close(fd1);
}

/* rf_sb_update_io: dirty, clean with a resync still due, a faulty slot;
 * 0.90 keeps its counts and clean bit as md does. */
static void test_update_io_change(void **state)
{
	const uint64_t sectors = 131072;
	struct rf_sb_new n = new_array(5, 2, 128, 4, sectors);
	struct rf_sb_change dirty = { .clean = false, .resync_offset = RF_SB_MAX_SECTOR, .faulty_slot = -1 };
	struct rf_sb_change fail1 = { .clean = true, .resync_offset = 4096, .events = 40, .faulty_slot = 1 };
	struct rf_sb sb;
	struct rf_sb_io io;
	uint32_t w[1024];
	char err[1024];
	const char *p = write_member("ioc.img", sectors * 512, NULL, 0);
	int fd = open(p, O_RDWR);

	assert_true(fd >= 0);
	n.clean = true;
	assert_int_equal(rf_sb_write12(fd, p, &n, 0, sectors, err, sizeof(err)), 0);
	assert_int_equal(rf_sb_io_fd(&io, fd), 0);
	assert_int_equal(rf_sb_read_io(&io, p, &sb, err, sizeof(err)), 0);
	assert_int_equal(rf_sb_update_io(&io, p, &sb, &dirty, err, sizeof(err)), 0);
	assert_false(sb.clean);
	assert_int_equal(sb.resync_offset, 0);          /* dirty: all of it suspect */
	assert_int_equal(sb.events, 1);
	assert_int_equal(rf_sb_update_io(&io, p, &sb, &fail1, err, sizeof(err)), 0);
	assert_int_equal(rf_sb_read(fd, p, &sb, err, sizeof(err)), 0);
	assert_int_equal(sb.events, 40);
	assert_int_equal(sb.resync_offset, 4096);       /* "clean", resync still due */
	assert_int_equal(sb.dev_roles[1], RF_SB_ROLE_FAULTY);
	assert_int_equal(sb.dev_roles[0], 0);
	assert_int_equal(sb.role, 0);
	fail1.faulty_slot = 4000;
	assert_int_equal(rf_sb_update_io(&io, p, &sb, &fail1, err, sizeof(err)), -EINVAL);

	/* roles_from: a device that missed changes takes the freshest table
	 * whole (slot 1 back in sync, a spare numbered 6), then this change
	 * on top (slot 3 faulty); without it, its own table stays */
	{
		struct rf_sb model = sb;
		struct rf_sb_change back = { .clean = true, .resync_offset = RF_SB_MAX_SECTOR, .faulty_slot = 3 };

		model.dev_roles[1] = 1;
		model.max_dev = 7;
		model.dev_roles[5] = RF_SB_ROLE_FAULTY;
		model.dev_roles[6] = RF_SB_ROLE_SPARE;
		assert_int_equal(rf_sb_update_io(&io, p, &sb, &back, err, sizeof(err)), 0);
		assert_int_equal(sb.dev_roles[1], RF_SB_ROLE_FAULTY);
		back.roles_from = &model;
		assert_int_equal(rf_sb_update_io(&io, p, &sb, &back, err, sizeof(err)), 0);
		assert_int_equal(rf_sb_read(fd, p, &sb, err, sizeof(err)), 0);
		assert_int_equal(sb.max_dev, 7);
		assert_int_equal(sb.dev_roles[0], 0);
		assert_int_equal(sb.dev_roles[1], 1);
		assert_int_equal(sb.dev_roles[2], 2);
		assert_int_equal(sb.dev_roles[3], RF_SB_ROLE_FAULTY);
		assert_int_equal(sb.dev_roles[6], RF_SB_ROLE_SPARE);
		assert_int_equal(sb.role, 0);
	}

	/* A replacement (md's MD_FEATURE_REPLACEMENT): device 6 shares role
	 * 1 with device 1, and this device's own superblock carries the flag
	 * and its copy's checkpoint; without role_shared the earlier holder
	 * is recorded faulty, as for a spare that takes a slot. */
	{
		struct rf_sb_change rep = { .clean = true, .resync_offset = RF_SB_MAX_SECTOR, .faulty_slot = -1,
					    .set_role = true, .role_slot = 6, .role_value = 1, .role_shared = true,
					    .set_replacement = true, .replacement = true, .set_recovery = true,
					    .recovery_offset = 128 };
		struct rf_sb_change done = { .clean = true, .resync_offset = RF_SB_MAX_SECTOR, .faulty_slot = -1,
					     .set_replacement = true, .set_recovery = true,
					     .recovery_offset = RF_SB_MAX_SECTOR };

		assert_int_equal(rf_sb_update_io(&io, p, &sb, &rep, err, sizeof(err)), 0);
		assert_int_equal(rf_sb_read(fd, p, &sb, err, sizeof(err)), 0);
		assert_int_equal(sb.dev_roles[1], 1);
		assert_int_equal(sb.dev_roles[6], 1);
		assert_true(sb.feature_map & RF_SB_FEAT_REPLACEMENT);
		assert_true(sb.feature_map & RF_SB_FEAT_RECOVERY);
		assert_int_equal(sb.recovery_offset, 128);
		assert_int_equal(rf_sb_update_io(&io, p, &sb, &done, err, sizeof(err)), 0);
		assert_int_equal(rf_sb_read(fd, p, &sb, err, sizeof(err)), 0);
		assert_false(sb.feature_map & (RF_SB_FEAT_REPLACEMENT | RF_SB_FEAT_RECOVERY));
		assert_int_equal(sb.dev_roles[1], 1);
		assert_int_equal(sb.dev_roles[6], 1);
		rep.role_shared = false;
		assert_int_equal(rf_sb_update_io(&io, p, &sb, &rep, err, sizeof(err)), 0);
		assert_int_equal(sb.dev_roles[1], RF_SB_ROLE_FAULTY);
		assert_int_equal(sb.dev_roles[6], 1);
		/* Three holders of one role: refused when read. */
		rep.role_shared = true;
		rep.role_slot = 5;
		rep.set_role = true;
		assert_int_equal(rf_sb_update_io(&io, p, &sb, &(struct rf_sb_change){
			.clean = true, .resync_offset = RF_SB_MAX_SECTOR, .faulty_slot = -1, .set_role = true,
			.role_slot = 1, .role_value = 1, .role_shared = true }, err, sizeof(err)), 0);
		assert_int_equal(rf_sb_update_io(&io, p, &sb, &rep, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "a device and its replacement at most"));
	}
	close(fd);

	make090(w, 0, sectors);
	p = write_member("ioc090.img", sectors * 512, w, ((sectors & ~127ULL) - 128) * 512);
	fd = open(p, O_RDWR);
	assert_int_equal(rf_sb_io_fd(&io, fd), 0);
	assert_int_equal(rf_sb_read_io(&io, p, &sb, err, sizeof(err)), 0);
	fail1 = (struct rf_sb_change){ .clean = true, .resync_offset = RF_SB_MAX_SECTOR, .faulty_slot = 3 };
	assert_int_equal(rf_sb_update_io(&io, p, &sb, &fail1, err, sizeof(err)), 0);
	assert_true(sb.clean);
	assert_int_equal(sb.events, 8);
	assert_int_equal(sb.dev_roles[3], RF_SB_ROLE_FAULTY);
	assert_int_equal(sb.v090.active, 3);
	assert_int_equal(sb.v090.working, 3);
	assert_int_equal(sb.v090.failed, 1);
	assert_int_equal(rf_sb_update_io(&io, p, &sb, &dirty, err, sizeof(err)), 0);
	assert_false(sb.clean);
	assert_int_equal(sb.resync_offset, 0);
	close(fd);
}

/* ----------------------------------------------------------- assemble */


static void bump_events(const char *path, int times)
{
	struct rf_sb sb;
	char err[1024];
	int fd = open(path, O_RDWR);

	assert_int_equal(rf_sb_read(fd, path, &sb, err, sizeof(err)), 0);
	while (times--)
		assert_int_equal(rf_sb_update(fd, path, &sb, true, 0, err, sizeof(err)), 0);
	close(fd);
}

static void test_assemble(void **state)
{
	const uint64_t sectors = 32768;
	struct rf_sb_new n = new_array(5, 2, 128, 4, sectors), other;
	char paths[4][FX_PATH], opaths[4][FX_PATH];
	const char *order[4];
	struct rf_config cfg;
	char err[1024];

	n.clean = true;
	fx_md_members(&n, "as", sectors, paths);
	/* given in any order, assembled by role */
	order[0] = paths[2], order[1] = paths[0], order[2] = paths[3], order[3] = paths[1];
	assert_int_equal(rf_assemble(order, 4, NULL, true, &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.name, "array.img");
	assert_int_equal(cfg.level, 5);
	assert_int_equal(cfg.layout, 2);
	assert_int_equal(cfg.chunk_bytes, 65536);
	assert_int_equal(cfg.nmembers, 4);
	for (int i = 0; i < 4; i++)
		assert_string_equal(cfg.members[i], paths[i]);
	assert_int_equal(cfg.data_offset, n.data_offset * 512);
	assert_int_equal(cfg.size, n.size * 512);
	assert_true(cfg.readonly);
	assert_memory_equal(cfg.uuid, n.uuid, 16);
	rf_config_free(&cfg);

	/* too few */
	assert_int_equal(rf_assemble(order, 2, NULL, false, &cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "too few members"));

	/* a stale member is left out; the rest serve degraded */
	bump_events(paths[0], 2);
	bump_events(paths[1], 2);
	bump_events(paths[2], 2);
	assert_int_equal(rf_assemble(order, 4, "x.img", false, &cfg, err, sizeof(err)), 0);
	assert_null(cfg.members[3]);
	assert_non_null(cfg.members[0]);
	assert_string_equal(cfg.name, "x.img");
	rf_config_free(&cfg);

	/* one behind is not stale (md's margin) */
	bump_events(paths[3], 1);
	assert_int_equal(rf_assemble(order, 4, NULL, false, &cfg, err, sizeof(err)), 0);
	assert_non_null(cfg.members[3]);
	rf_config_free(&cfg);

	/* another array's member */
	other = new_array(5, 2, 128, 4, sectors);
	fx_md_members(&other, "other", sectors, opaths);
	order[3] = opaths[1];
	assert_int_equal(rf_assemble(order, 4, NULL, false, &cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not one array"));
	assert_non_null(strstr(err, opaths[1]));

	/* the same member twice */
	order[3] = paths[0];
	assert_int_equal(rf_assemble(order, 4, NULL, false, &cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "same file twice"));

	/* a copy of member 0: its device UUID says it is member 0 again */
	{
		char cmd[3 * PATH_MAX];
		char copy[PATH_MAX + 64];

		snprintf(copy, sizeof(copy), "%s/copy0.img", tmpdir);
		snprintf(cmd, sizeof(cmd), "cp --sparse=always '%s' '%s'", paths[0], copy);
		assert_int_equal(system(cmd), 0);
		order[3] = copy;
		assert_int_equal(rf_assemble(order, 4, NULL, false, &cfg, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "carry the same md device UUID"));
		assert_non_null(strstr(err, paths[0]));
		assert_non_null(strstr(err, copy));
	}
	/* a member without a superblock */
	order[3] = write_member("nosb.img", sectors * 512, NULL, 0);
	assert_int_equal(rf_assemble(order, 4, NULL, false, &cfg, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no md superblock"));
}

/* Set a member's events count to ev (md's update: checksum and all). */
static void set_events(const char *path, uint64_t ev)
{
	struct rf_sb_change c = { .clean = true, .resync_offset = RF_SB_MAX_SECTOR, .events = ev, .faulty_slot = -1 };
	struct rf_sb_io io;
	struct rf_sb sb;
	char err[1024];
	int fd = open(path, O_RDWR);

	assert_true(fd >= 0);
	assert_int_equal(rf_sb_io_fd(&io, fd), 0);
	assert_int_equal(rf_sb_read(fd, path, &sb, err, sizeof(err)), 0);
	assert_int_equal(rf_sb_update_io(&io, path, &sb, &c, err, sizeof(err)), 0);
	assert_true(sb.events == ev);
	close(fd);
}

/* Events at the top of their range: nothing is stale against itself or
 * one behind it (the comparison once wrapped: events + 1 == 0), two behind
 * is stale; a config mount holds the members to the same rule.  The next
 * events count stays at the top (md never wraps it). */
static void test_assemble_events_max(void **state)
{
	const uint64_t sectors = 32768;
	struct rf_sb_new n = new_array(5, 2, 128, 4, sectors);
	char paths[4][FX_PATH];
	const char *order[4];
	struct rf_config cfg;
	char err[1024];

	(void)state;
	n.clean = true;
	fx_md_members(&n, "evmax", sectors, paths);
	for (int i = 0; i < 4; i++) {
		set_events(paths[i], UINT64_MAX);
		order[i] = paths[i];
	}
	assert_int_equal(rf_assemble(order, 4, NULL, true, &cfg, err, sizeof(err)), 0);
	for (int i = 0; i < 4; i++)
		assert_non_null(cfg.members[i]);
	rf_config_free(&cfg);
	/* one behind: in (md's margin) */
	set_events(paths[3], UINT64_MAX - 1);
	assert_int_equal(rf_assemble(order, 4, NULL, true, &cfg, err, sizeof(err)), 0);
	assert_non_null(cfg.members[3]);
	rf_config_free(&cfg);
	/* two behind: stale, left out */
	set_events(paths[3], UINT64_MAX - 2);
	assert_int_equal(rf_assemble(order, 4, NULL, true, &cfg, err, sizeof(err)), 0);
	assert_null(cfg.members[3]);
	assert_non_null(cfg.members[0]);
	rf_config_free(&cfg);
	assert_true(rf_sb_events_stale(UINT64_MAX - 2, UINT64_MAX));
	assert_false(rf_sb_events_stale(UINT64_MAX - 1, UINT64_MAX));
	assert_false(rf_sb_events_stale(UINT64_MAX, UINT64_MAX));
	assert_false(rf_sb_events_stale(UINT64_MAX, 5));
	assert_false(rf_sb_events_stale(0, 1));
	assert_true(rf_sb_events_stale(0, 2));
	assert_true(rf_sb_events_next(UINT64_MAX) == UINT64_MAX);
	assert_true(rf_sb_events_next(7) == 8);
}

/* raid10 n2 of 4: roles 0,1 and 2,3 hold the copies.  Without one
 * member of each pair every chunk keeps a copy (md's enough() assembles
 * it); without both of a pair, the chunks of that pair have none.  A count
 * of "one missing at most" refused the first. */
static void test_assemble_raid10_pairs(void **state)
{
	const uint64_t sectors = 32768;
	struct rf_sb_new n = new_array(10, 0x102, 128, 4, sectors);
	char paths[4][FX_PATH], err[1024];
	const char *two[2];
	struct rf_config cfg;

	(void)state;
	n.clean = true;
	fx_md_members(&n, "r10pairs", sectors, paths);
	two[0] = paths[0];
	two[1] = paths[2];
	assert_int_equal(rf_assemble(two, 2, NULL, true, &cfg, err, sizeof(err)), 0);
	assert_non_null(cfg.members[0]);
	assert_null(cfg.members[1]);
	assert_non_null(cfg.members[2]);
	assert_null(cfg.members[3]);
	/* and the engine serves it (it counted too) */
	{
		struct rf_array *a;

		assert_int_equal(rf_array_open(&cfg, &a, err, sizeof(err)), 0);
		assert_false(rf_array_failed(a));
		rf_array_close(a);
	}
	rf_config_free(&cfg);
	two[1] = paths[1];      /* 2 and 3 gone: the second pair's chunks are lost */
	assert_int_equal(rf_assemble(two, 2, NULL, true, &cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "role(s) 2, 3 missing"));
	assert_non_null(strstr(err, "some chunk has every copy among them"));
}

/* A chunk of 2^31 sectors (1 TiB): refused with the value read, not as
 * the "chunk of 0 sectors" its byte count wrapped to. */
static void test_assemble_chunk_huge(void **state)
{
	const uint64_t sectors = 32768;
	struct rf_sb_new n = new_array(5, 2, 128, 3, sectors);
	char paths[3][FX_PATH];
	const char *order[3];
	struct rf_config cfg;
	char err[1024];

	(void)state;
	n.clean = true;
	fx_md_members(&n, "chunkbig", sectors, paths);
	/* chunksize (le32 at byte 88 of the 1.2 superblock, 4 KiB in) */
	for (int i = 0; i < 3; i++) {
		uint8_t buf[4096];
		int fd = open(paths[i], O_RDWR);

		assert_true(fd >= 0);
		assert_int_equal(pread(fd, buf, sizeof(buf), 4096), (ssize_t)sizeof(buf));
		put32(buf, 88, 1u << 31);
		fix_csum1(buf);
		assert_int_equal(pwrite(fd, buf, sizeof(buf), 4096), (ssize_t)sizeof(buf));
		close(fd);
		order[i] = paths[i];
	}
	assert_int_not_equal(rf_assemble(order, 3, NULL, true, &cfg, err, sizeof(err)), 0);
	assert_null(strstr(err, "chunk of 0 sectors"));
	assert_non_null(strstr(err, "2147483648"));
}

/* A dirty array missing a member is refused for parity levels. */
static void test_assemble_dirty_degraded(void **state)
{
	const uint64_t sectors = 32768;
	struct rf_sb_new n = new_array(5, 2, 128, 3, sectors);
	char paths[3][FX_PATH];
	const char *order[2];
	struct rf_config cfg;
	char err[1024];

	n.clean = false;
	fx_md_members(&n, "dd", sectors, paths);
	order[0] = paths[0], order[1] = paths[1];
	assert_int_equal(rf_assemble(order, 2, NULL, false, &cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not clean"));
}

/* A config file in tmpdir naming members as given. */
static const char *conf_file(const char *name, const char *body)
{
	static char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(body, f);
	fclose(f);
	return path;
}

/* mount's check: superblocks must match the config; what the config
 * leaves out comes from them. */
static void test_check_config(void **state)
{
	const uint64_t sectors = 32768;
	struct rf_sb_new n = new_array(5, 2, 128, 3, sectors);
	char paths[3][FX_PATH], err[1024];
	struct rf_config cfg;
	const char *c;

	n.clean = true;
	fx_md_members(&n, "cc", sectors, paths);
	c = conf_file("cc.conf", "array: { level = 5; chunk_size = \"64K\";\n"
		      "  members = ( \"cc-0.img\", \"cc-1.img\", \"cc-2.img\" ); };\n");
	assert_int_equal(rf_config_load(c, &cfg, err, sizeof(err)), 0);
	assert_int_equal(rf_assemble_check_config(&cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.data_offset, n.data_offset * 512);
	assert_int_equal(cfg.size, n.size * 512);
	assert_true(cfg.has_uuid);
	rf_config_free(&cfg);

	c = conf_file("cc.conf", "array: { level = 5; chunk_size = \"128K\";\n"
		      "  members = ( \"cc-0.img\", \"cc-1.img\", \"cc-2.img\" ); };\n");
	assert_int_equal(rf_config_load(c, &cfg, err, sizeof(err)), 0);
	assert_int_equal(rf_assemble_check_config(&cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "member 0"));
	assert_non_null(strstr(err, "'array.chunk_size' says 128K"));
	rf_config_free(&cfg);

	/* The superblocks place the members, whatever the config's order
	 * (which matters only to create). */
	c = conf_file("cc.conf", "array: { level = 5; chunk_size = \"64K\";\n"
		      "  members = ( \"cc-0.img\", \"cc-2.img\", \"cc-1.img\" ); };\n");
	assert_int_equal(rf_config_load(c, &cfg, err, sizeof(err)), 0);
	assert_int_equal(rf_assemble_check_config(&cfg, err, sizeof(err)), 0);
	assert_non_null(strstr(cfg.members[1], "cc-1.img"));
	assert_non_null(strstr(cfg.members[2], "cc-2.img"));
	assert_int_equal(cfg.member_line[1], 2);
	rf_config_free(&cfg);

	write_member("ccnone.img", sectors * 512, NULL, 0);
	c = conf_file("cc.conf", "array: { level = 5; chunk_size = \"64K\";\n"
		      "  members = ( \"cc-0.img\", \"cc-1.img\", \"ccnone.img\" ); };\n");
	assert_int_equal(rf_config_load(c, &cfg, err, sizeof(err)), 0);
	assert_int_equal(rf_assemble_check_config(&cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "ccnone.img, line 2) has no md superblock"));
	rf_config_free(&cfg);

	/* members without any superblock: served only when the config says
	 * metadata "none"; with 1.2 (the default, or given) they are members
	 * `create` has not made yet, and the error says so */
	write_member("cn0.img", sectors * 512, NULL, 0);
	write_member("cn1.img", sectors * 512, NULL, 0);
	c = conf_file("cc.conf", "array: { level = 1; metadata = \"none\";\n"
		      "  members = ( \"cn0.img\", \"cn1.img\" ); };\n");
	assert_int_equal(rf_config_load(c, &cfg, err, sizeof(err)), 0);
	assert_int_equal(rf_assemble_check_config(&cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.data_offset, 0);
	assert_false(cfg.has_uuid);
	rf_config_free(&cfg);

	c = conf_file("cc.conf", "array: { level = 1; members = ( \"cn0.img\", \"cn1.img\" ); };\n");
	assert_int_equal(rf_config_load(c, &cfg, err, sizeof(err)), 0);
	assert_int_equal(rf_assemble_check_config(&cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no member has an md superblock"));
	assert_non_null(strstr(err, "metadata \"1.2\" (the default)"));
	rf_config_free(&cfg);

	c = conf_file("cc.conf", "array: { level = 1;\n  metadata = \"1.2\";\n"
		      "  members = ( \"cn0.img\", \"cn1.img\" ); };\n");
	assert_int_equal(rf_config_load(c, &cfg, err, sizeof(err)), 0);
	assert_int_equal(rf_assemble_check_config(&cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "(line 2)"));
	rf_config_free(&cfg);
}

/* create's plan: mdadm's data offset, sizes in whole chunks, refusals
 * before anything is written. */
static void test_plan_create(void **state)
{
	uint64_t bytes[4] = { 64 << 20, 64 << 20, 0, 80 << 20 };
	struct rf_sb_new n;
	struct rf_config cfg;
	char err[1024];
	const char *c;

	c = conf_file("pc.conf", "array: { level = 6; chunk_size = \"64K\";\n"
		      "  members = ( \"p0.img\", \"p1.img\", \"missing\", \"p3.img\" ); };\n");
	assert_int_equal(rf_config_load(c, &cfg, err, sizeof(err)), 0);
	assert_int_equal(rf_assemble_plan_create(&cfg, bytes, false, &n, err, sizeof(err)), 0);
	assert_int_equal(n.data_offset, 2048);
	assert_int_equal(n.size, 129024);       /* the smallest member's room */
	assert_int_equal(n.raid_disks, 4);
	assert_int_equal(n.layout, 2);
	assert_string_equal(n.name, "array.img");
	assert_false(n.clean);
	bytes[1] = 1 << 20;
	assert_int_equal(rf_assemble_plan_create(&cfg, bytes, false, &n, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "member 1"));
	assert_non_null(strstr(err, "no room for data"));
	rf_config_free(&cfg);

	c = conf_file("pc.conf", "array: { level = 5; data_offset = 8;\n"
		      "  members = ( \"p0.img\", \"p1.img\", \"p3.img\" ); };\n");
	assert_int_equal(rf_config_load(c, &cfg, err, sizeof(err)), 0);
	assert_int_equal(rf_assemble_plan_create(&cfg, bytes, false, &n, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'array.data_offset'"));
	rf_config_free(&cfg);

	c = conf_file("pc.conf", "array: { level = 0; size = \"8M\";\n"
		      "  members = ( \"p0.img\", \"p3.img\" ); };\n");
	assert_int_equal(rf_config_load(c, &cfg, err, sizeof(err)), 0);
	assert_int_equal(rf_assemble_plan_create(&cfg, bytes, true, &n, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'array.size'"));
	rf_config_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_md_images_parse),
		cmocka_unit_test(test_md_images_examine),
		cmocka_unit_test(test_kinds_from_bytes),
		cmocka_unit_test(test_ambiguous),
		cmocka_unit_test(test_fuzz),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_default_data_offset),
		cmocka_unit_test(test_write_read_update),
		cmocka_unit_test(test_bblog_place),
		cmocka_unit_test(test_update_090),
		cmocka_unit_test(test_spare_090),
		cmocka_unit_test(test_update_io_change),
		cmocka_unit_test(test_assemble),
		cmocka_unit_test(test_assemble_dirty_degraded),
		cmocka_unit_test(test_assemble_events_max),
		cmocka_unit_test(test_assemble_raid10_pairs),
		cmocka_unit_test(test_assemble_chunk_huge),
		cmocka_unit_test(test_check_config),
		cmocka_unit_test(test_plan_create),
	};

	return fx_run_tests_with(tests, group_setup, fx_group_teardown);
}
