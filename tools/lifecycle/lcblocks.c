/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lcblocks.c - the self-describing blocks tools/lifecycle.sh writes and checks.
 *
 * The lifecycle test keeps a model of what every tracked block of the array
 * must hold, and needs to write blocks whose contents say which write put
 * them there, and to read them all back and say, per block, which write
 * they show.  A tracked block k is the 4 KiB at byte k * STRIDE * 4096 of
 * the image; generation g of it holds, in 64-bit little-endian words:
 *
 *   word 0      the magic "RFLCBLK1"
 *   word 1      k
 *   word 2      g
 *   words 3..   k * 0x9e3779b97f4a7c15 ^ g * 0xc2b2ae3d27d4eb4f ^ word index
 *
 * so a block from another place (k wrong), a torn or mixed block (fill
 * wrong) and a stale one (g old) are told apart.  Generation 0 is the
 * block as `raidfuse create` leaves it: all zeros.
 *
 *   lcblocks write FILE STRIDE GEN [--ack ACKFILE] K...
 *       write generation GEN of each block K (O_DIRECT where the file
 *       takes it).  Without --ack: all of them, then one fsync; exit 0
 *       once the fsync returned.  With --ack: each block, then fsync,
 *       then the line "K GEN" appended to ACKFILE (the write is
 *       acknowledged); the first error ends it.  An error prints
 *       "error K ENAME" and exits 1.
 *   lcblocks verify FILE STRIDE EXPECT [--lenient]
 *       EXPECT holds lines "K G [G...]": the generations block K may
 *       show.  Reads each (O_DIRECT) and prints one line per block that
 *       shows anything else, or fails to read ("read error": a violation
 *       unless --lenient, which accepts errors but not wrong data).  Exit
 *       0 when every block is as allowed, 1 otherwise.
 *
 * Exit status: 0 fine, 1 an error or a wrong block, 2 usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* O_DIRECT, strerrorname_np */
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLK 4096u
#define MAGIC 0x314b4c42434c4652ull     /* "RFLCBLK1" little-endian */
#define MAXGEN 16

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end) {
		fprintf(stderr, "lcblocks: not a number: '%s'\n", s);
		exit(2);
	}
	return v;
}

static uint64_t fill_word(uint64_t k, uint64_t g, unsigned i)
{
	return k * 0x9e3779b97f4a7c15ull ^ g * 0xc2b2ae3d27d4eb4full ^ i;
}

static void make_block(uint64_t *b, uint64_t k, uint64_t g)
{
	unsigned i;

	if (g == 0) {
		memset(b, 0, BLK);
		return;
	}
	b[0] = MAGIC;
	b[1] = k;
	b[2] = g;
	for (i = 3; i < BLK / 8; i++)
		b[i] = fill_word(k, g, i);
}

/* What block k holds: its generation, or -1 with why filled in. */
static int64_t block_gen(const uint64_t *b, uint64_t k, char *why, size_t len)
{
	unsigned i;

	for (i = 0; i < BLK / 8 && !b[i]; i++)
		;
	if (i == BLK / 8)
		return 0;
	if (b[0] != MAGIC) {
		snprintf(why, len, "not a tracked block (word 0 %016" PRIx64 ")", b[0]);
		return -1;
	}
	if (b[1] != k) {
		snprintf(why, len, "block %" PRIu64 "'s contents (generation %" PRIu64 ")", b[1], b[2]);
		return -1;
	}
	for (i = 3; i < BLK / 8; i++)
		if (b[i] != fill_word(k, b[2], i)) {
			snprintf(why, len, "generation %" PRIu64 " torn at byte %u", b[2], i * 8);
			return -1;
		}
	return (int64_t)b[2];
}

static int open_file(const char *path, int flags)
{
	int fd = open(path, flags | O_DIRECT);

	if (fd < 0 && errno == EINVAL)
		fd = open(path, flags);
	if (fd < 0) {
		printf("error open %s\n", strerrorname_np(errno));
		exit(1);
	}
	return fd;
}

/* the one block buffer (O_DIRECT-aligned, so the tool works on any file) */
static uint64_t blkbuf[BLK / sizeof(uint64_t)] __attribute__((aligned(BLK)));

static int do_write(int argc, char **argv)
{
	const char *file = argv[2], *ack = NULL;
	uint64_t stride = num(argv[3]), gen = num(argv[4]), k;
	uint64_t *b;
	FILE *af = NULL;
	int fd, i = 5;
	ssize_t n;

	if (i + 1 < argc && !strcmp(argv[i], "--ack")) {
		ack = argv[i + 1];
		i += 2;
	}
	b = blkbuf;
	if (ack && !(af = fopen(ack, "a"))) {
		fprintf(stderr, "lcblocks: %s: %s\n", ack, strerror(errno));
		return 2;
	}
	fd = open_file(file, O_WRONLY);
	for (; i < argc; i++) {
		k = num(argv[i]);
		make_block(b, k, gen);
		n = pwrite(fd, b, BLK, (off_t)(k * stride * BLK));
		if (n != BLK) {
			printf("error %" PRIu64 " %s\n", k, n < 0 ? strerrorname_np(errno) : "short-write");
			return 1;
		}
		if (af) {
			if (fsync(fd)) {
				printf("error %" PRIu64 " fsync-%s\n", k, strerrorname_np(errno));
				return 1;
			}
			fprintf(af, "%" PRIu64 " %" PRIu64 "\n", k, gen);
			fflush(af);
		}
	}
	if (!af && fsync(fd)) {
		printf("error fsync %s\n", strerrorname_np(errno));
		return 1;
	}
	return 0;
}

static int do_verify(int argc, char **argv)
{
	const char *file = argv[2];
	uint64_t stride = num(argv[3]), k, g[MAXGEN];
	bool lenient = argc > 5 && !strcmp(argv[5], "--lenient");
	char line[1024], why[160], *p, *end;
	int fd, ng, j, bad = 0;
	int64_t got;
	uint64_t *b;
	FILE *ef;
	ssize_t n;

	b = blkbuf;
	if (!(ef = fopen(argv[4], "r"))) {
		fprintf(stderr, "lcblocks: %s: %s\n", argv[4], strerror(errno));
		return 2;
	}
	fd = open_file(file, O_RDONLY);
	while (fgets(line, sizeof(line), ef)) {
		p = line;
		k = strtoull(p, &end, 10);
		if (end == p)
			continue;
		for (ng = 0, p = end; ng < MAXGEN; ng++, p = end) {
			g[ng] = strtoull(p, &end, 10);
			if (end == p)
				break;
		}
		n = pread(fd, b, BLK, (off_t)(k * stride * BLK));
		if (n != BLK) {
			if (!lenient) {
				printf("block %" PRIu64 ": read error %s\n", k, n < 0 ? strerrorname_np(errno) : "short");
				bad++;
			}
			continue;
		}
		got = block_gen(b, k, why, sizeof(why));
		for (j = 0; j < ng && got >= 0 && (uint64_t)got != g[j]; j++)
			;
		if (got >= 0 && j < ng)
			continue;
		printf("block %" PRIu64 ": holds ", k);
		if (got < 0)
			printf("%s", why);
		else
			printf("generation %" PRId64, got);
		printf(", expected generation");
		for (j = 0; j < ng; j++)
			printf("%s%" PRIu64, j ? " or " : " ", g[j]);
		printf("\n");
		bad++;
	}
	fclose(ef);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 6 && !strcmp(argv[1], "write"))
		return do_write(argc, argv);
	if (argc >= 5 && !strcmp(argv[1], "verify"))
		return do_verify(argc, argv);
	fprintf(stderr, "usage: lcblocks write FILE STRIDE GEN [--ack ACKFILE] K...\n"
		"       lcblocks verify FILE STRIDE EXPECT [--lenient]\n");
	return 2;
}
