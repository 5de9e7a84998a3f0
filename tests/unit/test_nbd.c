/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_nbd.c - an NBD export as a member, against nbdkit on unix sockets.
 *
 * Reads and writes land and read back, flush works, past-the-end is
 * refused; a server error is -EIO and the connection lives on; a server
 * slower than the timeout fails the command with -ETIMEDOUT within the
 * timeout plus a margin and the connection is dead afterwards (the same
 * delay with a long timeout succeeds: the negative control); bad URIs,
 * refused connections and read-only exports are one-line errors naming
 * the URI; four threads at once each read back what they wrote.  Through
 * the member IO queue (both backends): adjacent writes merged into one
 * operation land on the export, reads and a flush complete, and once the
 * server is gone an operation ends with an error instead of hanging;
 * several operations are in flight on one connection at once (eight
 * 300 ms reads end in about 300 ms), and a reply that comes after the
 * timeout never lands in the buffer.
 *
 * Identity: one export of one server reached by a socket path through a
 * symbolic link, or with the path and export name percent-encoded, is the
 * same member; another export name, or another server, is not.
 *
 * nbdkit (Debian's nbdkit package) is started by the test; without it the
 * tests skip with a message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "raidfuse/ioq.h"
#include "raidfuse/memberid.h"
#include "raidfuse/nbd.h"
#include "raidfuse/super.h"

#define MIB (1024 * 1024)

struct server {
	pid_t pid;
	char sock[FX_PATH];
	char pidfile[FX_PATH];
	char uri[FX_PATH + 64];
};

static bool have_nbdkit(void)
{
	return system("nbdkit --version >/dev/null 2>&1") == 0;
}

/* Start nbdkit with args (NULL-terminated, after the socket options) on a
 * fresh socket in fx_dir; wait for the socket. */
static void server_start(struct server *s, const char *name, const char *const *args)
{
	const char *argv[32];
	int n = 0, i;

	snprintf(s->sock, sizeof(s->sock), "%s/%s.sock", fx_dir, name);
	snprintf(s->pidfile, sizeof(s->pidfile), "%s/%s.pid", fx_dir, name);
	snprintf(s->uri, sizeof(s->uri), "nbd+unix:///?socket=%s", s->sock);
	unlink(s->sock);
	unlink(s->pidfile);
	argv[n++] = "nbdkit";
	argv[n++] = "--exit-with-parent";
	argv[n++] = "-f";
	argv[n++] = "-U";
	argv[n++] = s->sock;
	/* Written once nbdkit accepts connections: the socket's name is
	 * there before it listens (a connection then is refused). */
	argv[n++] = "-P";
	argv[n++] = s->pidfile;
	for (i = 0; args[i] && n < 30; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	s->pid = fork();
	assert_true(s->pid >= 0);
	if (!s->pid) {
		execvp("nbdkit", (char *const *)argv);
		_exit(127);
	}
	for (i = 0; i < 1000 && access(s->pidfile, F_OK); i++)
		usleep(10000);
	assert_int_equal(access(s->pidfile, F_OK), 0);
}

static void server_stop(struct server *s)
{
	kill(s->pid, SIGTERM);
	waitpid(s->pid, NULL, 0);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void test_rw(void **state)
{
	static const char *const args[] = { "memory", "64M", NULL };
	struct server s;
	struct rf_nbd *c;
	struct rf_sb_io io;
	char err[512], *w = malloc(MIB), *r = malloc(MIB);

	if (!have_nbdkit())
		skip();
	server_start(&s, "rw", args);
	assert_int_equal(rf_nbd_open(s.uri, false, 5000, &c, err, sizeof(err)), 0);
	assert_int_equal(rf_nbd_size(c), 64 * MIB);
	assert_string_equal(rf_nbd_uri(c), s.uri);
	fx_rand_fill(w, MIB);
	assert_int_equal(rf_nbd_pwrite(c, w, MIB, 3 * MIB + 512), 0);
	assert_int_equal(rf_nbd_flush(c), 0);
	assert_int_equal(rf_nbd_pread(c, r, MIB, 3 * MIB + 512), 0);
	assert_memory_equal(w, r, MIB);
	/* The last byte is the export's; one past is not. */
	assert_int_equal(rf_nbd_pread(c, r, 1, 64 * MIB - 1), 0);
	assert_int_equal(rf_nbd_pread(c, r, 2, 64 * MIB - 1), -EINVAL);
	assert_int_equal(rf_nbd_pwrite(c, w, 1, 64 * MIB), -EINVAL);
	/* The superblock view reads zeros past the end. */
	rf_nbd_sb_io(c, &io);
	assert_int_equal(io.bytes, 64 * MIB);
	memset(r, 0x5a, 4096);
	assert_int_equal(io.pread(io.ctx, r, 4096, 64 * MIB - 1024), 0);
	for (int i = 1024; i < 4096; i++)
		assert_int_equal(r[i], 0);
	rf_nbd_close(c);
	server_stop(&s);
	free(w);
	free(r);
}

static void test_server_error(void **state)
{
	static const char *const args[] = { "--filter=error", "memory", "16M", "error-pread=EIO",
					    "error-pread-rate=100%", NULL };
	struct server s;
	struct rf_nbd *c;
	char err[512], buf[4096] = { 1 };

	if (!have_nbdkit())
		skip();
	server_start(&s, "err", args);
	assert_int_equal(rf_nbd_open(s.uri, false, 5000, &c, err, sizeof(err)), 0);
	assert_int_equal(rf_nbd_pread(c, buf, sizeof(buf), 0), -EIO);
	/* An error answer is not a dead connection: writes still work. */
	assert_int_equal(rf_nbd_pwrite(c, buf, sizeof(buf), 0), 0);
	assert_int_equal(rf_nbd_pread(c, buf, sizeof(buf), 0), -EIO);
	rf_nbd_close(c);
	server_stop(&s);
}

static void test_timeout(void **state)
{
	static const char *const args[] = { "--filter=delay", "memory", "16M", "rdelay=2", NULL };
	struct server s;
	struct rf_nbd *c;
	char err[512], buf[4096];
	double t0, t;

	if (!have_nbdkit())
		skip();
	server_start(&s, "slow", args);
	/* Negative control: a timeout longer than the delay lets it through. */
	assert_int_equal(rf_nbd_open(s.uri, false, 10000, &c, err, sizeof(err)), 0);
	t0 = now_s();
	assert_int_equal(rf_nbd_pread(c, buf, sizeof(buf), 0), 0);
	assert_true(now_s() - t0 >= 1.5);
	/* 300 ms: the read fails at the timeout, not at the server's 2 s. */
	rf_nbd_set_timeout(c, 300);
	t0 = now_s();
	assert_int_equal(rf_nbd_pread(c, buf, sizeof(buf), 0), -ETIMEDOUT);
	t = now_s() - t0;
	print_message("timed out after %.3f s (timeout 0.300 s, server delay 2 s)\n", t);
	assert_true(t >= 0.25 && t < 1.0);
	/* The reply the server sends at 2 s never lands in the buffer, which
	 * is its owner's again from the timeout on. */
	memset(buf, 0x55, sizeof(buf));
	while (now_s() - t0 < 2.3)
		usleep(50000);
	for (size_t i = 0; i < sizeof(buf); i++)
		assert_int_equal((unsigned char)buf[i], 0x55);
	/* Dead from then on, at once; writes included. */
	t0 = now_s();
	assert_int_equal(rf_nbd_pwrite(c, buf, sizeof(buf), 0), -ENOTCONN);
	assert_int_equal(rf_nbd_flush(c), -ENOTCONN);
	assert_true(now_s() - t0 < 0.5);
	rf_nbd_close(c);
	server_stop(&s);
}

static void test_bad(void **state)
{
	static const char *const ro[] = { "-r", "memory", "16M", NULL };
	struct server s;
	struct rf_nbd *c = (struct rf_nbd *)1;
	char err[512], uri[FX_PATH + 64];

	if (!have_nbdkit())
		skip();
	assert_true(rf_nbd_is_uri("nbd://h/e") && rf_nbd_is_uri("nbds://h:10809/e") &&
		    rf_nbd_is_uri("nbd+unix:///e?socket=/s") && rf_nbd_is_uri("nbds+unix:///?socket=x"));
	assert_false(rf_nbd_is_uri("d0.img") || rf_nbd_is_uri("/dev/nbd0") || rf_nbd_is_uri("nbd:/x") ||
		     rf_nbd_is_uri("http://x"));
	/* No server at the socket. */
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s/none.sock", fx_dir);
	assert_true(rf_nbd_open(uri, false, 2000, &c, err, sizeof(err)) < 0);
	assert_null(c);
	assert_non_null(strstr(err, uri));
	print_message("%s\n", err);
	/* A port nobody listens on. */
	assert_true(rf_nbd_open("nbd://127.0.0.1:1/", false, 2000, &c, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "nbd://127.0.0.1:1/"));
	/* Not a URI libnbd takes. */
	assert_true(rf_nbd_open("nbd://[::1", false, 2000, &c, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "nbd://[::1"));
	/* A URI may not name local files for the daemon to read. */
	snprintf(uri, sizeof(uri), "nbds+unix:///?socket=%s/x.sock&tls-psk-file=/etc/shadow", fx_dir);
	assert_true(rf_nbd_open(uri, false, 2000, &c, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "tls-psk-file"));
	print_message("%s\n", err);
	/* A read-only export, opened for writing, and for reading. */
	server_start(&s, "ro", ro);
	assert_int_equal(rf_nbd_open(s.uri, false, 2000, &c, err, sizeof(err)), -EROFS);
	assert_non_null(strstr(err, "read-only"));
	assert_int_equal(rf_nbd_open(s.uri, true, 2000, &c, err, sizeof(err)), 0);
	rf_nbd_close(c);
	server_stop(&s);
}

struct worker {
	struct rf_nbd *c;
	int id, bad;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char *a = malloc(65536), *b = malloc(65536);

	for (int i = 0; i < 64; i++) {
		uint64_t off = ((uint64_t)w->id * 64 + (uint64_t)i) * 65536;

		memset(a, w->id * 64 + i, 65536);
		if (rf_nbd_pwrite(w->c, a, 65536, off) || rf_nbd_pread(w->c, b, 65536, off) || memcmp(a, b, 65536))
			w->bad++;
	}
	free(a);
	free(b);
	return NULL;
}

static void test_threads(void **state)
{
	static const char *const args[] = { "memory", "32M", NULL };
	struct worker w[4];
	pthread_t t[4];
	struct server s;
	struct rf_nbd *c;
	char err[512];

	if (!have_nbdkit())
		skip();
	server_start(&s, "mt", args);
	assert_int_equal(rf_nbd_open(s.uri, false, 5000, &c, err, sizeof(err)), 0);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .c = c, .id = i };
		assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].bad, 0);
	}
	rf_nbd_close(c);
	server_stop(&s);
}

static void mio_end(struct rf_mio *m)
{
	(*(int *)m->priv)++;
}

/* Queue n mios of len bytes from buf at off on member 0 (adjacent), then
 * submit and reap until they have all ended. */
static void run_mios(struct rf_ioq *q, struct rf_mio *m, int n, int op, char *buf, uint32_t len, uint64_t off)
{
	int ended = 0, spins;

	for (int i = 0; i < n; i++) {
		memset(&m[i], 0, sizeof(m[i]));
		m[i] = (struct rf_mio){ .end = mio_end, .priv = &ended, .buf = buf + (size_t)i * len,
					.off = off + (uint64_t)i * len, .len = len, .member = 0, .op = (uint8_t)op };
		rf_ioq_queue(q, &m[i]);
	}
	assert_int_equal(rf_ioq_submit(q), 0);
	for (spins = 0; ended < n && spins < 1000; spins++) {
		assert_true(rf_ioq_reap(q, rf_ioq_busy(q)) >= 0);
		assert_int_equal(rf_ioq_submit(q), 0);
	}
	assert_int_equal(ended, n);
}

/* nbdkit with args, connected (timeout 5 s) as member 0 of a new queue. */
static void ioq_open(bool uring, const char *name, const char *const *args, struct server *s,
		     struct rf_ioq_member *mm, struct rf_ioq *q)
{
	char err[512];

	server_start(s, name, args);
	assert_int_equal(rf_nbd_open(s->uri, false, 5000, &mm->nbd, err, sizeof(err)), 0);
	assert_int_equal(uring ? rf_ioq_init_uring(q, RF_IOQ_ARRAY(mm, 1), 32) :
				 rf_ioq_init_sync(q, RF_IOQ_ARRAY(mm, 1), 32), 0);
}

static void ioq_nbd(bool uring)
{
	static const char *const args[] = { "memory", "16M", NULL };
	struct rf_ioq_member mm = { .fd = -1, .fd_direct = -1, .align = 512 };
	char *w = malloc(MIB), *r = malloc(MIB);
	struct rf_mio m[8];
	struct server s;
	struct rf_ioq q;

	if (!have_nbdkit())
		skip();
	ioq_open(uring, uring ? "ioq-uring" : "ioq-sync", args, &s, &mm, &q);
	fx_rand_fill(w, MIB);
	/* Eight adjacent 64 KiB writes: one merged operation. */
	run_mios(&q, m, 8, RF_MIO_WRITE, w, 65536, MIB);
	for (int i = 0; i < 8; i++)
		assert_int_equal(m[i].res, 0);
	assert_int_equal(q.nr_merged, 7);
	assert_int_equal(rf_nbd_pread(mm.nbd, r, 8 * 65536, MIB), 0);
	assert_memory_equal(w, r, 8 * 65536);
	/* Reads back, unaligned pieces, and a flush. */
	memset(r, 0, MIB);
	run_mios(&q, m, 3, RF_MIO_READ, r, 1000, MIB + 7);
	for (int i = 0; i < 3; i++)
		assert_int_equal(m[i].res, 0);
	assert_memory_equal(w + 7, r, 3000);
	run_mios(&q, m, 1, RF_MIO_FSYNC, NULL, 0, 0);
	assert_int_equal(m[0].res, 0);
	/* The server gone (killed: a stopped one waits for its clients):
	 * the operation ends, with an error. */
	kill(s.pid, SIGKILL);
	waitpid(s.pid, NULL, 0);
	run_mios(&q, m, 2, RF_MIO_WRITE, w, 4096, 0);
	assert_true(m[0].res < 0 && m[1].res < 0);
	print_message("write with the server gone: %s\n", strerror(-m[0].res));
	rf_ioq_destroy(&q);
	rf_nbd_close(mm.nbd);
	free(w);
	free(r);
}

/* Device names: two hosts exporting one name differ, the default port is
 * left out, a unix socket is its file name; the same URI, the same name. */
static void test_name(void **state)
{
	static const char *const t[][2] = {
		{ "nbd://hosta/d1", "hosta:d1" },
		{ "nbd://hostb/d1", "hostb:d1" },
		{ "nbd://hosta:10809/d1", "hosta:d1" },
		{ "nbd://hosta:10810/d1", "hosta:10810:d1" },
		{ "nbds://10.0.0.2/", "10.0.0.2" },
		{ "nbd://[::1]:10900/a/b", "[::1]:10900:a_b" },
		{ "nbd://hosta", "hosta" },
		{ "nbd://hosta/d1?tls=off", "hosta:d1" },
		{ "nbd+unix:///?socket=/run/raid/d2.sock", "d2.sock" },
		{ "nbd+unix:///disk?socket=/run/raid/d2.sock&x=1", "d2.sock:disk" },
		{ "nbds+unix://?socket=s", "s" },
	};
	char out[64], small[6];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		rf_nbd_name(t[i][0], out, sizeof(out));
		print_message("%-48s -> %s\n", t[i][0], out);
		assert_string_equal(out, t[i][1]);
	}
	rf_nbd_name("nbd://hosta/d1", small, sizeof(small));
	assert_string_equal(small, "hosta");
}

/* Several commands in flight on one connection from one queue: eight
 * reads (not adjacent: eight commands) of a server that answers each after
 * 300 ms end together, in about 300 ms, not one after the other (2.4 s). */
static void ioq_parallel(bool uring)
{
	static const char *const args[] = { "--filter=delay", "memory", "16M", "rdelay=1", NULL };
	struct rf_ioq_member mm = { .fd = -1, .fd_direct = -1, .align = 512 };
	char *r = malloc(8 * 4096);
	struct rf_mio m[8];
	struct server s;
	struct rf_ioq q;
	int ended = 0;
	double t0, t;

	if (!have_nbdkit())
		skip();
	ioq_open(uring, uring ? "par-uring" : "par-sync", args, &s, &mm, &q);
	t0 = now_s();
	for (int i = 0; i < 8; i++) {
		m[i] = (struct rf_mio){ .end = mio_end, .priv = &ended, .buf = r + i * 4096,
					.off = (uint64_t)i * 65536, .len = 4096, .member = 0, .op = RF_MIO_READ };
		rf_ioq_queue(&q, &m[i]);
	}
	assert_int_equal(rf_ioq_submit(&q), 0);
	assert_int_equal(q.nr_merged, 0);
	while (ended < 8 && now_s() - t0 < 20)
		assert_true(rf_ioq_reap(&q, rf_ioq_busy(&q)) >= 0);
	t = now_s() - t0;
	print_message("8 reads of 1 s each on one connection: %.3f s\n", t);
	assert_int_equal(ended, 8);
	for (int i = 0; i < 8; i++)
		assert_int_equal(m[i].res, 0);
	/* In parallel: one after the other they take 8 s at least (the
	 * bound leaves a loaded machine seconds of scheduling, and no room
	 * for two commands one after the other). */
	assert_true(t >= 0.9 && t < 5.0);
	rf_ioq_destroy(&q);
	rf_nbd_close(mm.nbd);
	server_stop(&s);
	free(r);
}

static void test_ioq_parallel_sync(void **state)
{
	ioq_parallel(false);
}

static void test_ioq_parallel_uring(void **state)
{
	ioq_parallel(true);
}

static void test_ioq_sync(void **state)
{
	ioq_nbd(false);
}

static void test_ioq_uring(void **state)
{
	ioq_nbd(true);
}

static void id_of(const char *uri, struct rf_member_id *m)
{
	struct rf_nbd *c;
	char err[512];

	if (rf_nbd_open(uri, true, 5000, &c, err, sizeof(err)))
		fail_msg("%s", err);
	rf_nbd_member_id(c, m);
	rf_nbd_close(c);
}

static void test_identity(void **state)
{
	static const char *const args[] = { "memory", "8M", NULL };
	struct server s, t;
	struct rf_member_id a, b, c, d, e, f;
	char uri[4 * FX_PATH], link[FX_PATH], enc[3 * FX_PATH], err[1024];
	size_t o = 0;

	(void)state;
	if (!have_nbdkit())
		skip();
	server_start(&s, "ida", args);
	server_start(&t, "idb", args);
	snprintf(uri, sizeof(uri), "nbd+unix:///exp?socket=%s", s.sock);
	id_of(uri, &a);
	/* The socket through a symbolic link. */
	snprintf(link, sizeof(link), "%s/idlink.sock", fx_dir);
	assert_int_equal(symlink(s.sock, link), 0);
	snprintf(uri, sizeof(uri), "nbd+unix:///exp?socket=%s", link);
	id_of(uri, &b);
	assert_int_equal(rf_member_same(&a, &b), RF_MEMBER_SAME_NBD);
	rf_member_same_msg(err, sizeof(err), "member 0 (A)", &a, "member 3 (B)", &b, "t");
	assert_non_null(strstr(err, "are the same NBD export twice (export \"exp\" of the server at unix socket "));
	/* Percent-encoded: every '/' of the path as %2F, the export as %65xp. */
	for (const char *p = s.sock; *p && o + 4 < sizeof(enc); p++)
		o += (size_t)snprintf(enc + o, sizeof(enc) - o, *p == '/' ? "%%2F" : "%c", *p);
	snprintf(uri, sizeof(uri), "nbd+unix:///%%65xp?socket=%s", enc);
	id_of(uri, &c);
	assert_int_equal(rf_member_same(&a, &c), RF_MEMBER_SAME_NBD);
	/* Another export of the server, the same export of another server. */
	snprintf(uri, sizeof(uri), "nbd+unix:///other?socket=%s", s.sock);
	id_of(uri, &d);
	assert_int_equal(rf_member_same(&a, &d), RF_MEMBER_DIFFERENT);
	snprintf(uri, sizeof(uri), "nbd+unix:///exp?socket=%s", t.sock);
	id_of(uri, &e);
	assert_int_equal(rf_member_same(&a, &e), RF_MEMBER_DIFFERENT);
	/* The default (empty) export name. */
	id_of(s.uri, &f);
	assert_int_equal(rf_member_same(&a, &f), RF_MEMBER_DIFFERENT);
	server_stop(&s);
	server_stop(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rw),
		cmocka_unit_test(test_server_error),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_name),
		cmocka_unit_test(test_identity),
		cmocka_unit_test(test_ioq_sync),
		cmocka_unit_test(test_ioq_uring),
		cmocka_unit_test(test_ioq_parallel_sync),
		cmocka_unit_test(test_ioq_parallel_uring),
	};

	if (!have_nbdkit())
		fprintf(stderr, "test_nbd: nbdkit is not installed (Debian: apt-get install nbdkit): every test skips\n");
	return fx_run_tests("nbd", tests);
}
