/* SPDX-License-Identifier: GPL-2.0-or-later */
/* rfhelper.c - small probes the functional tests need and the shell lacks.
 *
 *   rfhelper pattern FILE SECTORS
 *       FILE is SECTORS * 512 bytes long and every 512-byte sector s holds
 *       the 64-bit little-endian integer s repeated 64 times (the pattern
 *       of tests/data/md-images and mdpeer's pattern.c); a read at the
 *       end returns 0 bytes.  Reads 1 MiB at a time with O_DIRECT.
 *   rfhelper pattern-head FILE SECTORS
 *       the same over FILE's first SECTORS sectors (FILE may be longer).
 *   rfhelper fill FILE SECTORS
 *       writes that pattern over the first SECTORS sectors of FILE
 *       (1 MiB at a time, O_DIRECT), then fsync.
 *   rfhelper same FILE REF LEN
 *       the first LEN bytes of FILE (read with O_DIRECT, 1 MiB at a time)
 *       equal those of REF; says where they first differ.
 *   rfhelper xor-zero OFFSET LEN FILE...
 *       the XOR of all FILEs over bytes [OFFSET, OFFSET+LEN) is zero: what
 *       raid4/5 members hold in sync, whatever the layout.
 *   rfhelper pwrite FILE OFFSET LEN [direct]
 *   rfhelper pread FILE OFFSET LEN [direct]
 *   rfhelper truncate FILE LEN
 *   rfhelper fsync FILE
 *   rfhelper open-trunc FILE
 *       one system call each; prints "ret=N" or "err=ENAME" and exits 0,
 *       so the test compares the result with what it expects.
 *   rfhelper sb12-set64 FILE OFFSET VALUE
 *       in the md 1.2 superblock 4 KiB into FILE, set the 64-bit
 *       little-endian field at byte OFFSET to VALUE and fix md's checksum
 *       (a superblock that says something else, still valid).
 *   rfhelper notify-recv SOCKET OUT SECONDS [FILE]
 *       a service manager's end of sd_notify(3): binds a unix datagram
 *       socket at SOCKET (for $NOTIFY_SOCKET) and writes each line of
 *       each datagram to OUT as "pid=SENDER LINE" (the sender's pid from
 *       SCM_CREDENTIALS); on READY=1, stats FILE at once and writes
 *       "stat=ok" or "stat=ENAME".  Ends 0 after STOPPING=1, 1 when
 *       SECONDS pass without it.
 *
 * Exit status: 0 fine, 1 a check failed, 2 usage or setup error.
 * Built by lib.sh's build_helper with the system cc; it needs nothing but
 * libc.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SECT 512u
#define BUF (1u << 20)

static uint64_t num(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end) {
		fprintf(stderr, "rfhelper: not a number: '%s'\n", s);
		exit(2);
	}
	return v;
}

static void *abuf(size_t len)
{
	void *p;

	if (posix_memalign(&p, 4096, len ? len : 4096)) {
		fprintf(stderr, "rfhelper: out of memory\n");
		exit(2);
	}
	return p;
}

static int result(ssize_t ret)
{
	if (ret < 0)
		printf("err=%s\n", strerrorname_np(errno));
	else
		printf("ret=%zd\n", ret);
	return 0;
}

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* md's 1.x checksum (sb_csum at 216, max_dev at 220, roles from 256). */
static int cmd_sb12_set64(const char *path, uint64_t off, uint64_t value)
{
	unsigned char sb[4096];
	int fd = open(path, O_RDWR);
	uint64_t sum = 0;
	size_t len, i;

	if (fd < 0 || pread(fd, sb, sizeof(sb), 4096) != (ssize_t)sizeof(sb) || le32(sb) != 0xa92b4efc ||
	    off > 256 - 8 || (off < 224 && off + 8 > 216)) {
		fprintf(stderr, "rfhelper: %s: no 1.2 superblock to change at byte %" PRIu64 "\n", path, off);
		return 2;
	}
	for (int b = 0; b < 8; b++)
		sb[off + b] = (unsigned char)(value >> (8 * b));
	len = 256 + 2 * (size_t)le32(sb + 220);
	if (len > sizeof(sb))
		len = sizeof(sb);
	for (i = 0; i + 4 <= len; i += 4)
		if (i != 216)
			sum += le32(sb + i);
	if (len - i == 2)
		sum += (uint32_t)sb[i] | (uint32_t)sb[i + 1] << 8;
	sum = (sum & 0xffffffffu) + (sum >> 32);
	for (int b = 0; b < 4; b++)
		sb[216 + b] = (unsigned char)(sum >> (8 * b));
	if (pwrite(fd, sb, sizeof(sb), 4096) != (ssize_t)sizeof(sb) || fsync(fd)) {
		fprintf(stderr, "rfhelper: %s: %s\n", path, strerror(errno));
		return 2;
	}
	close(fd);
	return 0;
}

static int cmd_fill(const char *path, uint64_t sectors)
{
	unsigned char *buf = abuf(BUF);
	int fd = open(path, O_WRONLY | O_DIRECT);
	uint64_t s = 0;

	if (fd < 0) {
		fprintf(stderr, "rfhelper: %s: %s\n", path, strerror(errno));
		return 2;
	}
	while (s < sectors) {
		size_t n = (sectors - s) * SECT < BUF ? (size_t)((sectors - s) * SECT) : BUF;

		for (size_t i = 0; i < n; i += 8) {
			uint64_t v = s + i / SECT;

			for (int b = 0; b < 8; b++)
				buf[i + b] = (unsigned char)(v >> (8 * b));
		}
		if (pwrite(fd, buf, n, (off_t)(s * SECT)) != (ssize_t)n) {
			printf("fill: %s: write at sector %" PRIu64 ": %s\n", path, s, strerror(errno));
			return 1;
		}
		s += n / SECT;
	}
	if (fsync(fd)) {
		printf("fill: %s: fsync: %s\n", path, strerror(errno));
		return 1;
	}
	close(fd);
	free(buf);
	return 0;
}

/* The pattern over the first `sectors` of path; whole: and the file is
 * exactly that long (a read past it returns nothing). */
static int cmd_pattern(const char *path, uint64_t sectors, bool whole)
{
	struct stat st;
	unsigned char *buf = abuf(BUF);
	uint64_t s = 0, bad = 0;
	int fd = open(path, O_RDONLY | O_DIRECT);

	if (fd < 0) {
		fprintf(stderr, "rfhelper: %s: %s\n", path, strerror(errno));
		return 2;
	}
	if (fstat(fd, &st)) {
		fprintf(stderr, "rfhelper: %s: fstat: %s\n", path, strerror(errno));
		return 2;
	}
	if (whole ? (uint64_t)st.st_size != sectors * SECT : (uint64_t)st.st_size < sectors * SECT) {
		printf("pattern: %s is %lld bytes, expected %" PRIu64 " (%" PRIu64 " sectors)\n", path,
		       (long long)st.st_size, sectors * SECT, sectors);
		bad++;
	}
	while (s < sectors) {
		size_t want = (sectors - s) * SECT < BUF ? (size_t)((sectors - s) * SECT) : BUF;
		ssize_t got = pread(fd, buf, want, (off_t)(s * SECT));

		if (got < 0) {
			printf("pattern: %s: read at sector %" PRIu64 ": %s\n", path, s, strerror(errno));
			return 1;
		}
		if (got == 0 || got % SECT) {
			printf("pattern: %s: read at sector %" PRIu64 " returned %zd of %zu bytes\n", path, s,
			       got, want);
			return 1;
		}
		for (size_t off = 0; off < (size_t)got; off += SECT, s++) {
			for (unsigned w = 0; w < SECT / 8; w++) {
				uint64_t v = le64(buf + off + w * 8);

				if (v == s)
					continue;
				if (bad < 10)
					printf("pattern: sector %" PRIu64 " word %u: got %" PRIu64 " (0x%" PRIx64
					       "), expected %" PRIu64 "\n", s, w, v, v, s);
				bad++;
				break;
			}
		}
	}
	if (whole) {
		ssize_t got = pread(fd, buf, 4096, (off_t)(sectors * SECT));

		if (got != 0) {
			printf("pattern: a read at the end (byte %" PRIu64 ") returned %zd, expected 0\n",
			       sectors * SECT, got);
			bad++;
		}
	}
	close(fd);
	free(buf);
	if (bad) {
		printf("pattern: %s: %" PRIu64 " bad sector(s) of %" PRIu64 "\n", path, bad, sectors);
		return 1;
	}
	printf("pattern: %s: %" PRIu64 " sectors OK\n", path, sectors);
	return 0;
}

/* acc ^= buf, a word at a time (both 4096-aligned). */
static void xor_into(unsigned char *acc, const unsigned char *buf, size_t len)
{
	uint64_t *a = (uint64_t *)acc;
	const uint64_t *b = (const uint64_t *)buf;
	size_t k;

	for (k = 0; k < len / 8; k++)
		a[k] ^= b[k];
	for (k *= 8; k < len; k++)
		acc[k] ^= buf[k];
}

static int cmd_xor_zero(uint64_t off, uint64_t len, int n, char **paths)
{
	unsigned char *acc = abuf(BUF), *buf = abuf(BUF);
	int fds[64];
	uint64_t pos = off;

	if (n < 2 || n > 64) {
		fprintf(stderr, "rfhelper: xor-zero wants 2 to 64 files\n");
		return 2;
	}
	for (int i = 0; i < n; i++) {
		fds[i] = open(paths[i], O_RDONLY);
		if (fds[i] < 0) {
			fprintf(stderr, "rfhelper: %s: %s\n", paths[i], strerror(errno));
			return 2;
		}
	}
	while (pos < off + len) {
		size_t want = off + len - pos < BUF ? (size_t)(off + len - pos) : BUF;

		memset(acc, 0, want);
		for (int i = 0; i < n; i++) {
			ssize_t got = pread(fds[i], buf, want, (off_t)pos);

			if (got != (ssize_t)want) {
				printf("xor-zero: %s: read of %zu at %" PRIu64 " returned %zd\n", paths[i], want, pos,
				       got);
				return 1;
			}
			xor_into(acc, buf, want);
		}
		for (size_t k = 0; k < want; k++) {
			if (k % 8 == 0 && k + 8 <= want && !*(uint64_t *)(acc + k)) {
				k += 7;
				continue;
			}
			if (acc[k]) {
				printf("xor-zero: members differ from parity at byte %" PRIu64
				       " (member offset; XOR = 0x%02x)\n", pos + k, acc[k]);
				return 1;
			}
		}
		pos += want;
	}
	printf("xor-zero: %" PRIu64 " bytes at %" PRIu64 " of %d members XOR to zero\n", len, off, n);
	return 0;
}

static int cmd_same(const char *path, const char *ref, uint64_t len)
{
	unsigned char *a = abuf(BUF), *b = abuf(BUF);
	int fa = open(path, O_RDONLY | O_DIRECT), fb = open(ref, O_RDONLY);
	uint64_t pos = 0;

	if (fa < 0 || fb < 0) {
		fprintf(stderr, "rfhelper: %s: %s\n", fa < 0 ? path : ref, strerror(errno));
		return 2;
	}
	while (pos < len) {
		size_t want = len - pos < BUF ? (size_t)(len - pos) : BUF;
		ssize_t ga = pread(fa, a, want, (off_t)pos), gb = pread(fb, b, want, (off_t)pos);

		if (ga != (ssize_t)want || gb != (ssize_t)want) {
			printf("same: read of %zu at %" PRIu64 ": %s gave %zd, %s gave %zd%s%s\n", want, pos, path,
			       ga, ref, gb, ga < 0 || gb < 0 ? ": " : "", ga < 0 || gb < 0 ? strerror(errno) : "");
			return 1;
		}
		if (memcmp(a, b, want)) {
			size_t k = 0;

			while (a[k] == b[k])
				k++;
			printf("same: %s differs from %s at byte %" PRIu64 " (sector %" PRIu64 ")\n", path, ref,
			       pos + k, (pos + k) / SECT);
			return 1;
		}
		pos += want;
	}
	printf("same: %" PRIu64 " bytes of %s equal %s\n", len, path, ref);
	return 0;
}

static int open_or_die(const char *path, int flags)
{
	int fd = open(path, flags);

	if (fd < 0) {
		printf("err=%s\n", strerrorname_np(errno));
		exit(0);
	}
	return fd;
}

static int cmd_notify_recv(const char *sock, const char *out, uint64_t secs, const char *file)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(struct ucred))];
	} cm;
	char msg[4096], *line, *save;
	struct timespec t0, t;
	int fd, one = 1, stopping = 0;
	FILE *o;

	if (strlen(sock) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "rfhelper: socket path too long: %s\n", sock);
		return 2;
	}
	strcpy(sa.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "rfhelper: %s: %s\n", sock, strerror(errno));
		return 2;
	}
	o = fopen(out, "a");
	if (!o) {
		fprintf(stderr, "rfhelper: %s: %s\n", out, strerror(errno));
		return 2;
	}
	setvbuf(o, NULL, _IOLBF, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stopping) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) - 1 };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &cm,
				     .msg_controllen = sizeof(cm) };
		struct cmsghdr *c;
		pid_t pid = 0;
		long left;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = (long)secs * 1000 - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			break;
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		n = recvmsg(fd, &mh, 0);
		if (n < 0)
			continue;
		msg[n] = '\0';
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
				struct ucred u;

				memcpy(&u, CMSG_DATA(c), sizeof(u));
				pid = u.pid;
			}
		for (line = strtok_r(msg, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			fprintf(o, "pid=%d %s\n", (int)pid, line);
			if (!strcmp(line, "READY=1") && file) {
				struct stat st;

				if (stat(file, &st))
					fprintf(o, "stat=%s\n", strerrorname_np(errno));
				else
					fprintf(o, "stat=ok\n");
			}
			if (!strcmp(line, "STOPPING=1"))
				stopping = 1;
		}
	}
	fclose(o);
	close(fd);
	unlink(sock);
	return stopping ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	if (!strcmp(cmd, "pattern") && argc == 4)
		return cmd_pattern(argv[2], num(argv[3]), true);
	if (!strcmp(cmd, "pattern-head") && argc == 4)
		return cmd_pattern(argv[2], num(argv[3]), false);
	if (!strcmp(cmd, "fill") && argc == 4)
		return cmd_fill(argv[2], num(argv[3]));
	if (!strcmp(cmd, "same") && argc == 5)
		return cmd_same(argv[2], argv[3], num(argv[4]));
	if (!strcmp(cmd, "xor-zero") && argc >= 6)
		return cmd_xor_zero(num(argv[2]), num(argv[3]), argc - 4, argv + 4);
	if ((!strcmp(cmd, "pwrite") || !strcmp(cmd, "pread")) && (argc == 5 || argc == 6)) {
		int direct = argc == 6 && !strcmp(argv[5], "direct");
		int wr = !strcmp(cmd, "pwrite");
		size_t len = num(argv[4]);
		unsigned char *buf = abuf(len);
		int fd = open_or_die(argv[2], (wr ? O_WRONLY : O_RDONLY) | (direct ? O_DIRECT : 0));

		memset(buf, 0xa5, len);
		return result(wr ? pwrite(fd, buf, len, (off_t)num(argv[3])) :
			      pread(fd, buf, len, (off_t)num(argv[3])));
	}
	if (!strcmp(cmd, "sb12-set64") && argc == 5)
		return cmd_sb12_set64(argv[2], num(argv[3]), num(argv[4]));
	if (!strcmp(cmd, "truncate") && argc == 4)
		return result(truncate(argv[2], (off_t)num(argv[3])));
	if (!strcmp(cmd, "fsync") && argc == 3)
		return result(fsync(open_or_die(argv[2], O_RDWR)));
	if (!strcmp(cmd, "open-trunc") && argc == 3)
		return result(open_or_die(argv[2], O_WRONLY | O_TRUNC) >= 0 ? 0 : -1);
	if (!strcmp(cmd, "notify-recv") && (argc == 5 || argc == 6))
		return cmd_notify_recv(argv[2], argv[3], num(argv[4]), argc == 6 ? argv[5] : NULL);
	fprintf(stderr,
		"usage: rfhelper pattern|fill FILE SECTORS\n"
		"       rfhelper pattern-head FILE SECTORS\n"
		"       rfhelper same FILE REF LEN\n"
		"       rfhelper xor-zero OFFSET LEN FILE...\n"
		"       rfhelper pwrite|pread FILE OFFSET LEN [direct]\n"
		"       rfhelper truncate FILE LEN | fsync FILE | open-trunc FILE\n"
		"       rfhelper sb12-set64 FILE OFFSET VALUE\n"
		"       rfhelper notify-recv SOCKET OUT SECONDS [FILE]\n");
	return 2;
}
