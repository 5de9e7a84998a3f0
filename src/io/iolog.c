/* SPDX-License-Identifier: GPL-2.0-or-later */
/* iolog.c - the member IO log (see iolog.h).
 *
 * One log per process (one array per daemon), one mutex: a record's
 * sequence number is taken and the record written under it, so the file
 * holds the records in sequence order.  A write's SUBMIT is logged after
 * the op was handed to the backend's queue and before it can end; its
 * COMPLETE before the owner hears of the end.  So when the program starts
 * an op after another ended (a flush after the writes it covers, a
 * superblock after the data), the log shows the same order.
 *
 * It stands alone (no other module of the library) so that every program
 * linking fdio.c can take it.  It is a test instrument: a failure to write the log is reported once
 * and switches it off; the member IO goes on.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raidfuse/iolog.h"
#include "raidfuse/lockcheck.h"

#define MAX_FILES 256

bool rf_iolog_on;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* protected by lock */
static int logfd = -1;
static uint64_t seq;
static int nfiles;
static struct { dev_t dev; ino_t ino; } files[MAX_FILES];

/* lock held: write the whole iov to the log; off on an error. */
static void put(struct iovec *iov, int n)
{
	while (n && logfd >= 0) {
		ssize_t w = writev(logfd, iov, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			fprintf(stderr, "raidfuse: io log: write: %s; logging stops\n",
				w < 0 ? strerror(errno) : "no progress");
			rf_iolog_on = false;
			close(logfd);
			logfd = -1;
			return;
		}
		while (n && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
}

/* lock held: the record r (its seq set here) and its payload. */
static void put_rec(struct rf_iolog_rec *r, const struct iovec *data, int ndata)
{
	struct iovec v[1 + RF_IOLOG_MAX_IOV];
	int i;

	r->magic = RF_IOLOG_MAGIC;
	r->seq = ++seq;
	v[0].iov_base = r;
	v[0].iov_len = sizeof(*r);
	for (i = 0; i < ndata; i++)
		v[1 + i] = data[i];
	put(v, 1 + ndata);
}

/* lock held: fd's file id, naming it in the log the first time. */
static uint32_t file_id(int fd)
{
	char link[64], path[PATH_MAX];
	struct rf_iolog_rec r = { .type = RF_IOLOG_FILE };
	struct iovec v;
	struct stat st;
	ssize_t n;
	int i;

	if (fstat(fd, &st))
		return UINT32_MAX;
	for (i = 0; i < nfiles; i++)
		if (files[i].dev == st.st_dev && files[i].ino == st.st_ino)
			return (uint32_t)i;
	if (nfiles == MAX_FILES)
		return UINT32_MAX;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n < 0)
		n = snprintf(path, sizeof(path), "fd%d", fd);
	files[nfiles].dev = st.st_dev;
	files[nfiles].ino = st.st_ino;
	r.file = (uint32_t)nfiles;
	r.len = (uint32_t)n;
	v.iov_base = path;
	v.iov_len = (size_t)n;
	put_rec(&r, &v, 1);
	return (uint32_t)nfiles++;
}

int rf_iolog_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	rf_lock_rank(&lock, RF_LOCK_LEAF, "IO log lock");
	pthread_mutex_lock(&lock);
	if (logfd >= 0)
		close(logfd);
	logfd = fd;
	seq = 0;
	nfiles = 0;
	rf_iolog_on = true;
	pthread_mutex_unlock(&lock);
	return 0;
}

void rf_iolog_close(void)
{
	pthread_mutex_lock(&lock);
	rf_iolog_on = false;
	if (logfd >= 0)
		close(logfd);
	logfd = -1;
	pthread_mutex_unlock(&lock);
}

uint64_t rf_iolog_submit(int fd, int op, const struct iovec *iov, int niov, uint64_t off)
{
	struct rf_iolog_rec r = { .type = RF_IOLOG_SUBMIT, .op = (uint16_t)op, .off = off };
	uint64_t len = 0, id;
	int i;

	if (niov > RF_IOLOG_MAX_IOV)
		niov = RF_IOLOG_MAX_IOV;        /* the IO queues merge no more */
	for (i = 0; i < niov; i++)
		len += iov[i].iov_len;
	r.len = (uint32_t)len;
	pthread_mutex_lock(&lock);
	r.file = file_id(fd);
	put_rec(&r, iov, niov);
	id = r.seq;
	pthread_mutex_unlock(&lock);
	return id;
}

void rf_iolog_complete(uint64_t id, int64_t res)
{
	struct rf_iolog_rec r = { .type = RF_IOLOG_COMPLETE, .id = id, .res = res };

	if (!id)
		return;
	pthread_mutex_lock(&lock);
	put_rec(&r, NULL, 0);
	pthread_mutex_unlock(&lock);
}

void rf_iolog_note(uint16_t kind, uint64_t a, uint64_t b, int64_t c)
{
	struct rf_iolog_rec r = { .type = RF_IOLOG_NOTE, .op = kind, .id = a, .off = b, .res = c };

	if (!rf_iolog_on)
		return;
	pthread_mutex_lock(&lock);
	put_rec(&r, NULL, 0);
	pthread_mutex_unlock(&lock);
}

/* RAIDFUSE_IOLOG=FILE: log from the start (the daemon has no option for
 * it: it is a test instrument). */
__attribute__((constructor)) static void iolog_from_env(void)
{
	const char *p = getenv("RAIDFUSE_IOLOG");
	int r;

	if (!p || !*p)
		return;
	r = rf_iolog_open(p);
	if (r)
		fprintf(stderr, "raidfuse: RAIDFUSE_IOLOG=%s: %s\n", p, strerror(-r));
}

static const char *test_break_word;     /* set before main(), read only */

__attribute__((constructor)) static void test_break_from_env(void)
{
	test_break_word = getenv("RAIDFUSE_TEST_BREAK");
}

bool rf_test_break(const char *what)
{
	return test_break_word && !strcmp(test_break_word, what);
}

bool rf_test_halt(const char *what)
{
	const char *w = getenv("RAIDFUSE_TEST_HALT");

	return w && !strcmp(w, what);
}
