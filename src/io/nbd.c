/* nbd.c - one NBD export as a member (nbd.h).
 *
 * Every command is libnbd's asynchronous form, so that a deadline bounds
 * it: the caller issues it (nbd_aio_*), then waits.  Whoever finds nobody
 * driving the socket drives it, nbd_poll() in slices of at most 100 ms,
 * until its own command completes or its deadline passes, and wakes the
 * others after each slice; the others sleep on c->cond until woken or
 * their deadline.  A command past its deadline kills the connection
 * (nbd_shutdown is not enough for a server that stopped reading: the
 * handle is marked dead and every later call fails with -ENOTCONN), so a
 * timed-out write can never land later, after the member was failed.
 *
 * Invariants: c->driving is true while exactly one thread is inside
 * nbd_poll(); c->dead, once set, stays set.  c->lock protects both.
 */
#include <errno.h>
#include <libnbd.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "raidfuse/nbd.h"
#include "raidfuse/super.h"
#include "raidfuse/util.h"

#define POLL_SLICE_MS 100

struct rf_nbd {
	struct nbd_handle *h;
	char *uri;
	uint64_t size;
	atomic_uint timeout_ms;
	bool can_flush;
	pthread_mutex_t lock;
	pthread_cond_t cond;            /* lock, CLOCK_MONOTONIC: a poll slice ended */
	bool driving, dead;             /* lock */
};

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* libnbd's last error on this thread as -errno (EIO when it gave none). */
static int nbd_err(void)
{
	int e = nbd_get_errno();

	return e > 0 ? -e : -EIO;
}

/* c->lock held: the connection is dead from now on. */
static void kill_locked(struct rf_nbd *c)
{
	if (!c->dead) {
		c->dead = true;
		nbd_shutdown(c->h, LIBNBD_SHUTDOWN_ABANDON_PENDING);
	}
	pthread_cond_broadcast(&c->cond);
}

/* Wait for cookie (from nbd_aio_*) until the timeout; 0 or -errno. */
static int wait_cookie(struct rf_nbd *c, int64_t cookie)
{
	int64_t deadline = now_ms() + atomic_load(&c->timeout_ms);
	int r = 0;

	if (cookie < 0) {
		r = nbd_err();
		/* A handle whose server went away refuses new commands (as
		 * EINVAL): say what it is, and keep it dead. */
		if (nbd_aio_is_dead(c->h) > 0 || nbd_aio_is_closed(c->h) > 0) {
			pthread_mutex_lock(&c->lock);
			kill_locked(c);
			pthread_mutex_unlock(&c->lock);
			r = -ENOTCONN;
		}
		return r;
	}
	pthread_mutex_lock(&c->lock);
	for (;;) {
		int done = nbd_aio_command_completed(c->h, (uint64_t)cookie);
		int64_t left;

		if (done == 1)
			break;
		if (done < 0) {
			r = nbd_err();
			break;
		}
		if (c->dead) {
			r = -ENOTCONN;
			break;
		}
		left = deadline - now_ms();
		if (left <= 0) {
			r = -ETIMEDOUT;
			kill_locked(c);
			break;
		}
		if (c->driving) {
			struct timespec t = rf_deadline_ms((uint64_t)(left < POLL_SLICE_MS ? left : POLL_SLICE_MS));

			pthread_cond_timedwait(&c->cond, &c->lock, &t);
			continue;
		}
		c->driving = true;
		pthread_mutex_unlock(&c->lock);
		r = nbd_poll(c->h, (int)(left < POLL_SLICE_MS ? left : POLL_SLICE_MS));
		pthread_mutex_lock(&c->lock);
		c->driving = false;
		pthread_cond_broadcast(&c->cond);
		if (r < 0) {
			r = nbd_err();
			kill_locked(c);
			break;
		}
		r = 0;
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* Drive the connection until it is ready (the handshake done) or the
 * deadline; 0 or -errno. */
static int wait_connected(struct rf_nbd *c, int64_t deadline)
{
	while (nbd_aio_is_connecting(c->h) > 0) {
		int64_t left = deadline - now_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		if (nbd_poll(c->h, (int)(left < POLL_SLICE_MS ? left : POLL_SLICE_MS)) < 0)
			return nbd_err();
	}
	return nbd_aio_is_ready(c->h) > 0 ? 0 : nbd_err();
}

int rf_nbd_open(const char *uri, bool readonly, unsigned timeout_ms, struct rf_nbd **out, char *err,
		size_t errlen)
{
	struct rf_nbd *c = calloc(1, sizeof(*c));
	int64_t size;
	int r;

	*out = NULL;
	if (!c || !(c->uri = strdup(uri))) {
		free(c);
		snprintf(err, errlen, "%s: %s", uri, strerror(ENOMEM));
		return -ENOMEM;
	}
	atomic_init(&c->timeout_ms, timeout_ms ? timeout_ms : RF_NBD_TIMEOUT_MS_DEFAULT);
	pthread_mutex_init(&c->lock, NULL);
	r = rf_cond_init_mono(&c->cond);
	c->h = r ? NULL : nbd_create();
	if (!c->h) {
		r = r ? r : nbd_err();
		snprintf(err, errlen, "%s: no NBD handle: %s", uri, r ? strerror(-r) : nbd_get_error());
		goto fail;
	}
	/* A URI may not make the daemon read files it names (tls-psk-file=,
	 * tls-certificates=): members come from configs and control files. */
	nbd_set_uri_allow_local_file(c->h, false);
	if (!nbd_supports_uri(c->h)) {
		r = -ENOTSUP;
		snprintf(err, errlen, "%s: this libnbd cannot connect by URI", uri);
		goto fail;
	}
	if (nbd_aio_connect_uri(c->h, uri) < 0) {
		r = nbd_err();
		snprintf(err, errlen, "%s: %s", uri, nbd_get_error());
		goto fail;
	}
	r = wait_connected(c, now_ms() + atomic_load(&c->timeout_ms));
	if (r) {
		if (r == -ETIMEDOUT)
			snprintf(err, errlen, "%s: no NBD handshake within %u ms", uri, atomic_load(&c->timeout_ms));
		else
			snprintf(err, errlen, "%s: %s", uri, nbd_get_error() ? nbd_get_error() : strerror(-r));
		goto fail;
	}
	size = nbd_get_size(c->h);
	if (size < 0) {
		r = nbd_err();
		snprintf(err, errlen, "%s: the export's size: %s", uri, nbd_get_error());
		goto fail;
	}
	c->size = (uint64_t)size;
	if (!readonly && nbd_is_read_only(c->h) == 1) {
		r = -EROFS;
		snprintf(err, errlen, "%s: the server exports it read-only", uri);
		goto fail;
	}
	c->can_flush = nbd_can_flush(c->h) == 1;
	*out = c;
	return 0;
fail:
	rf_nbd_close(c);
	return r;
}

void rf_nbd_close(struct rf_nbd *c)
{
	if (!c)
		return;
	if (c->h) {
		if (!c->dead)
			nbd_shutdown(c->h, 0);
		nbd_close(c->h);
	}
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c->uri);
	free(c);
}

uint64_t rf_nbd_size(const struct rf_nbd *c)
{
	return c->size;
}

const char *rf_nbd_uri(const struct rf_nbd *c)
{
	return c->uri;
}

unsigned rf_nbd_timeout(const struct rf_nbd *c)
{
	return atomic_load(&((struct rf_nbd *)c)->timeout_ms);
}

void rf_nbd_set_timeout(struct rf_nbd *c, unsigned timeout_ms)
{
	atomic_store(&c->timeout_ms, timeout_ms ? timeout_ms : RF_NBD_TIMEOUT_MS_DEFAULT);
}

/* Checks every command shares; 0 or -errno. */
static int check_io(struct rf_nbd *c, size_t len, uint64_t off)
{
	bool dead;

	pthread_mutex_lock(&c->lock);
	dead = c->dead;
	pthread_mutex_unlock(&c->lock);
	if (dead)
		return -ENOTCONN;
	if (off > c->size || len > c->size - off)
		return -EINVAL;
	return 0;
}

int rf_nbd_pread(struct rf_nbd *c, void *buf, size_t len, uint64_t off)
{
	int r = check_io(c, len, off);

	if (r || !len)
		return r;
	return wait_cookie(c, nbd_aio_pread(c->h, buf, len, off, NBD_NULL_COMPLETION, 0));
}

int rf_nbd_pwrite(struct rf_nbd *c, const void *buf, size_t len, uint64_t off)
{
	int r = check_io(c, len, off);

	if (r || !len)
		return r;
	return wait_cookie(c, nbd_aio_pwrite(c->h, buf, len, off, NBD_NULL_COMPLETION, 0));
}

int rf_nbd_flush(struct rf_nbd *c)
{
	int r = check_io(c, 0, 0);

	if (r || !c->can_flush)
		return r;
	return wait_cookie(c, nbd_aio_flush(c->h, NBD_NULL_COMPLETION, 0));
}

/* ---- rf_sb_io over the export ---- */

static int sb_pread(void *ctx, void *buf, size_t len, uint64_t off)
{
	struct rf_nbd *c = ctx;

	/* The superblock code reads zeros past the end. */
	if (off >= c->size) {
		memset(buf, 0, len);
		return 0;
	}
	if (len > c->size - off) {
		size_t in = (size_t)(c->size - off);

		memset((char *)buf + in, 0, len - in);
		len = in;
	}
	return rf_nbd_pread(c, buf, len, off);
}

static int sb_pwrite(void *ctx, const void *buf, size_t len, uint64_t off)
{
	return rf_nbd_pwrite(ctx, buf, len, off);
}

static int sb_fsync(void *ctx)
{
	return rf_nbd_flush(ctx);
}

void rf_nbd_sb_io(struct rf_nbd *c, struct rf_sb_io *io)
{
	*io = (struct rf_sb_io){ .pread = sb_pread, .pwrite = sb_pwrite, .fsync = sb_fsync, .ctx = c,
				 .bytes = c->size };
}
