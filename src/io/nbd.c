/* SPDX-License-Identifier: GPL-2.0-or-later */
/* nbd.c - one NBD export as a member (nbd.h).
 *
 * Every command is libnbd's asynchronous form with a completion callback,
 * so that many are in flight on one connection and none blocks the thread
 * that issues it.  The issuer sends (nbd_aio_pread/pwrite/flush write the
 * request at once while the socket takes it); one poller thread per
 * connection does the rest: it polls the socket in the direction libnbd
 * asks for (nbd_aio_get_direction) beside an eventfd, reads the replies
 * (nbd_aio_notify_read), sends what the socket did not take at issue
 * (nbd_aio_notify_write), and runs the completions, which hand each result
 * to the issuer's end().  A poller rather than the member IO queue's own
 * io_uring (IORING_OP_POLL_ADD on the socket): one connection serves every
 * worker's queue and the inline workers' synchronous ones, so it needs one
 * driver of its own whoever issued; the hand-off costs one eventfd write
 * per batch of completions (the receiving queue's kick).
 *
 * Deadlines: each command carries its issue time plus the member's
 * timeout.  The poller looks at the commands in flight every check period
 * (a tenth of the timeout, 5 to 100 ms); one past its deadline kills the
 * connection: that command ends with -ETIMEDOUT, every other in flight
 * with -ENOTCONN, the socket is shut down, and nothing drives the handle
 * again, so a late reply is never read into a buffer its owner has taken
 * back, and a timed-out write never leaves later.  A connection that
 * libnbd finds dead (the server closed it, a protocol error) is killed the
 * same way.  Dead stays dead: every later command fails at once with
 * -ENOTCONN (re-add makes a new connection).
 *
 * Invariants:
 *  - every libnbd call on c->h is made with c->lock held, so libnbd's
 *    callbacks (which run inside those calls) run with it held too, and
 *    after c->dead is set no call drives the connection;
 *  - a command is delivered (its end() called) exactly once: by its
 *    completion callback, or by kill_locked(), whichever comes first;
 *    cmd->delivered says which happened;
 *  - a command's memory goes back to c->free when both libnbd (its free
 *    callback, called exactly once even when the issue fails) and the
 *    delivery are done with it (cmd->refs).
 *
 * Identity: one export may be named by many URIs (a socket reached
 * through a link, a host by name or by address, an export name
 * percent-encoded).  At connect the server is named by what was reached:
 * a unix socket by its inode (the URI's socket path, stat'ed), else by
 * the address and port the connection is to (getpeername); with the
 * export's name as libnbd sent it, that is the member's identity
 * (memberid.h).
 *
 * What it does NOT do: reconnect, retry, or decide what an error means
 * for the array (the caller fails the member).
 */
#include <errno.h>
#include <libnbd.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "raidfuse/lockcheck.h"
#include "raidfuse/log.h"
#include "raidfuse/memberid.h"
#include "raidfuse/nbd.h"
#include "raidfuse/super.h"
#include "raidfuse/util.h"

#define POLL_SLICE_MS 100

struct nbd_cmd {
	struct nbd_cmd *prev, *next;    /* c->inflight, or c->free (next only); c->lock */
	struct rf_nbd *c;
	rf_nbd_end_fn end;
	void *ctx, *arg;
	int64_t deadline;               /* ms, CLOCK_MONOTONIC */
	uint32_t len;                   /* bytes the command moves */
	uint8_t op;                     /* enum rf_nbd_op */
	uint8_t refs;                   /* c->lock: libnbd's and the delivery's */
	bool delivered;                 /* c->lock */
	char *bounce;                   /* several buffers as one command */
	size_t bounce_cap;
	int niov;                       /* a read through bounce: where it goes */
	struct iovec iov[RF_NBD_MAX_IOV];
};

struct rf_nbd {
	struct nbd_handle *h;           /* c->lock for every call */
	char *uri;
	struct rf_member_id id;         /* which export of which server (set at connect) */
	uint64_t size;
	atomic_uint timeout_ms;
	bool can_flush;
	pthread_mutex_t lock;
	pthread_cond_t cond;            /* lock, CLOCK_MONOTONIC: a synchronous command ended */
	bool dead;                      /* lock; once set, stays set */
	bool stop;                      /* lock: the poller exits */
	bool poll_out;                  /* lock: the poller waits for the socket to take writes */
	struct nbd_cmd inflight;        /* lock: list head, oldest first */
	struct nbd_cmd *free;           /* lock */
	int efd;                        /* wakes the poller */
	bool poller_started;
	pthread_t poller;
};

/* libnbd's last error on this thread as -errno (EIO when it gave none). */
static int nbd_err(void)
{
	int e = nbd_get_errno();

	return e > 0 ? -e : -EIO;
}

static void poller_kick(struct rf_nbd *c)
{
	uint64_t one = 1;

	while (write(c->efd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

/* c->lock held: drop one reference of cmd. */
static void cmd_put(struct rf_nbd *c, struct nbd_cmd *cmd)
{
	if (--cmd->refs)
		return;
	cmd->next = c->free;
	c->free = cmd;
}

/* c->lock held: cmd ends with res (bytes or -errno), once. */
static void cmd_deliver(struct rf_nbd *c, struct nbd_cmd *cmd, int res)
{
	if (cmd->delivered)
		return;
	cmd->delivered = true;
	cmd->prev->next = cmd->next;
	cmd->next->prev = cmd->prev;
	cmd->end(cmd->ctx, cmd->arg, res);
	cmd_put(c, cmd);
}

/* c->lock held: the connection is dead from now on.  Every command in
 * flight ends with res; nothing drives the handle again. */
static void kill_locked(struct rf_nbd *c, int res)
{
	int fd;

	if (!c->dead) {
		c->dead = true;
		/* The server sees the connection go; nothing we queued and
		 * did not send yet leaves. */
		fd = nbd_aio_get_fd(c->h);
		if (fd >= 0)
			shutdown(fd, SHUT_RDWR);
		poller_kick(c);
	}
	while (c->inflight.next != &c->inflight)
		cmd_deliver(c, c->inflight.next, res);
	pthread_cond_broadcast(&c->cond);
}

/* libnbd's completion callback (c->lock held: see the invariants). */
static int cmd_done_cb(void *user_data, int *error)
{
	struct nbd_cmd *cmd = user_data;
	struct rf_nbd *c = cmd->c;
	int res = *error ? -*error : cmd->op == RF_NBD_FLUSH ? 0 : (int)cmd->len;

	if (cmd->delivered)
		return 1;
	if (!*error && cmd->op == RF_NBD_READ && cmd->niov > 1) {
		size_t at = 0;

		for (int i = 0; i < cmd->niov; i++) {
			memcpy(cmd->iov[i].iov_base, cmd->bounce + at, cmd->iov[i].iov_len);
			at += cmd->iov[i].iov_len;
		}
	}
	cmd_deliver(c, cmd, res);
	return 1;
}

static void cmd_free_cb(void *user_data)
{
	struct nbd_cmd *cmd = user_data;

	cmd_put(cmd->c, cmd);
}

/* c->lock held: the commands past their deadline end with -ETIMEDOUT and
 * kill the connection (the others -ENOTCONN). */
static void check_deadlines(struct rf_nbd *c, int64_t now)
{
	struct nbd_cmd *cmd, *next;
	int64_t late = -1;

	for (cmd = c->inflight.next; cmd != &c->inflight; cmd = next) {
		next = cmd->next;
		if (now >= cmd->deadline) {
			late = now - cmd->deadline + atomic_load(&c->timeout_ms);
			cmd_deliver(c, cmd, -ETIMEDOUT);
		}
	}
	if (late >= 0) {
		rf_err("%s: no reply within %u ms (a command waited %lld ms): connection closed", c->uri,
		       atomic_load(&c->timeout_ms), (long long)late);
		kill_locked(c, -ENOTCONN);
	}
}

static unsigned check_period_ms(const struct rf_nbd *c)
{
	unsigned t = atomic_load(&((struct rf_nbd *)c)->timeout_ms) / 10;

	return t < 5 ? 5 : t > POLL_SLICE_MS ? POLL_SLICE_MS : t;
}

static void *poller_main(void *arg)
{
	struct rf_nbd *c = arg;
	int64_t next_check = rf_mono_ms() + check_period_ms(c);

	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		struct pollfd p[2] = { { .fd = -1 }, { .fd = c->efd, .events = POLLIN } };
		int64_t now, wait;
		int r = 0;

		if (!c->dead) {
			unsigned dir = (unsigned)nbd_aio_get_direction(c->h);

			p[0].fd = nbd_aio_get_fd(c->h);
			p[0].events = (short)((dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
					      (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0));
			c->poll_out = dir & LIBNBD_AIO_DIRECTION_WRITE;
		}
		now = rf_mono_ms();
		wait = next_check - now;
		if (wait < 0)
			wait = 0;
		/* dead is read under the lock: kill_locked() sets it from
		 * other threads (a dead connection waits for the eventfd). */
		if (c->dead)
			wait = -1;
		pthread_mutex_unlock(&c->lock);
		if (poll(p, 2, (int)wait) < 0 && errno != EINTR)
			rf_err("%s: poll: %s", c->uri, strerror(errno));
		if (p[1].revents & POLLIN) {
			uint64_t v;

			if (read(c->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				rf_err("%s: eventfd: %s", c->uri, strerror(errno));
		}
		pthread_mutex_lock(&c->lock);
		if (c->dead)
			continue;
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
			r = nbd_aio_notify_read(c->h);
		if (r >= 0 && !c->dead && (p[0].revents & POLLOUT))
			r = nbd_aio_notify_write(c->h);
		if (!c->dead && (r < 0 || nbd_aio_is_dead(c->h) > 0 || nbd_aio_is_closed(c->h) > 0)) {
			rf_err("%s: connection lost: %s", c->uri, nbd_get_error() ? nbd_get_error() : "closed");
			kill_locked(c, r < 0 ? nbd_err() : -ENOTCONN);
		}
		now = rf_mono_ms();
		if (!c->dead && now >= next_check) {
			check_deadlines(c, now);
			next_check = now + check_period_ms(c);
		}
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Drive the connection until it is ready (the handshake done) or the
 * deadline; 0 or -errno.  Before the poller starts: no lock needed. */
static int wait_connected(struct rf_nbd *c, int64_t deadline)
{
	while (nbd_aio_is_connecting(c->h) > 0) {
		int64_t left = deadline - rf_mono_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		if (nbd_poll(c->h, (int)(left < POLL_SLICE_MS ? left : POLL_SLICE_MS)) < 0)
			return nbd_err();
	}
	return nbd_aio_is_ready(c->h) > 0 ? 0 : nbd_err();
}

/* A hex digit's value, or -1. */
static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* The socket= parameter of uri's query, percent-decoded, into out; false
 * if it has none (or it does not fit). */
static bool uri_socket(const char *uri, char *out, size_t len)
{
	const char *q = strchr(uri, '?'), *v;
	size_t n, o = 0;

	for (v = q; v; v = strpbrk(v + 1, "&;"))
		if (!strncmp(v + 1, "socket=", 7))
			break;
	if (!v)
		return false;
	v += 8;
	n = strcspn(v, "&;#");
	for (size_t i = 0; i < n; i++) {
		char ch = v[i];

		if (ch == '%' && i + 2 < n && hexval(v[i + 1]) >= 0 && hexval(v[i + 2]) >= 0) {
			ch = (char)(hexval(v[i + 1]) * 16 + hexval(v[i + 2]));
			i += 2;
		}
		if (o + 1 >= len)
			return false;
		out[o++] = ch;
	}
	out[o] = '\0';
	return o > 0;
}

/* The server c is connected to, as memberid.h compares it, into out. */
static void server_name(struct rf_nbd *c, char *out, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char path[4096], addr[INET6_ADDRSTRLEN];
	struct stat st;
	int fd = nbd_aio_get_fd(c->h);

	if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &sl)) {
		/* Nothing better than the URI as written. */
		snprintf(out, len, "%s", c->uri);
		return;
	}
	if (ss.ss_family == AF_UNIX) {
		const struct sockaddr_un *un = (const struct sockaddr_un *)&ss;
		size_t pl = sl > offsetof(struct sockaddr_un, sun_path) ? sl - offsetof(struct sockaddr_un, sun_path) : 0;

		if (uri_socket(c->uri, path, sizeof(path)) && !stat(path, &st) && S_ISSOCK(st.st_mode))
			snprintf(out, len, "unix socket %u:%u inode %llu", major(st.st_dev), minor(st.st_dev),
				 (unsigned long long)st.st_ino);
		else if (pl > 1 && un->sun_path[0] == '\0')
			snprintf(out, len, "unix socket @%.*s", (int)(pl - 1), un->sun_path + 1);
		else
			snprintf(out, len, "unix socket %.*s", (int)strnlen(un->sun_path, pl), un->sun_path);
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;

		/* 127.0.0.1 reached through a dual-stack socket is still 127.0.0.1. */
		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
			inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], addr, sizeof(addr));
		else
			inet_ntop(AF_INET6, &s6->sin6_addr, addr, sizeof(addr));
		snprintf(out, len, "%s%s%s port %u", strchr(addr, ':') ? "[" : "", addr, strchr(addr, ':') ? "]" : "",
			 ntohs(s6->sin6_port));
	} else if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &s4->sin_addr, addr, sizeof(addr));
		snprintf(out, len, "%s port %u", addr, ntohs(s4->sin_port));
	} else {
		snprintf(out, len, "%s", c->uri);
	}
}

/* c's identity (c->id): its server and the export's name as sent. */
static int set_identity(struct rf_nbd *c)
{
	char server[RF_MEMBER_SERVER_MAX];
	char *name = nbd_get_export_name(c->h);

	if (!name)
		return nbd_err();
	server_name(c, server, sizeof(server));
	rf_member_id_nbd(&c->id, server, name);
	free(name);
	return 0;
}

void rf_nbd_member_id(const struct rf_nbd *c, struct rf_member_id *m)
{
	*m = c->id;
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
	rf_lock_rank(&c->lock, RF_LOCK_NBD, "NBD connection lock");
	c->inflight.next = c->inflight.prev = &c->inflight;
	c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r = c->efd < 0 ? -errno : rf_cond_init_mono(&c->cond);
	c->h = r ? NULL : nbd_create();
	if (!c->h) {
		r = r ? r : nbd_err();
		snprintf(err, errlen, "%s: no NBD handle: %s", uri, r ? strerror(-r) : nbd_get_error());
		goto fail;
	}
	/* A URI may not make the daemon read files it names (tls-psk-file=,
	 * tls-certificates=): members come from configs and control files. */
	nbd_set_uri_allow_local_file(c->h, false);
	/* Reads need no zeroing first: a failed read's buffer is not used. */
	nbd_set_pread_initialize(c->h, false);
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
	r = wait_connected(c, rf_mono_ms() + atomic_load(&c->timeout_ms));
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
	r = set_identity(c);
	if (r) {
		snprintf(err, errlen, "%s: the export's name: %s", uri, nbd_get_error());
		goto fail;
	}
	if (!readonly && nbd_is_read_only(c->h) == 1) {
		r = -EROFS;
		snprintf(err, errlen, "%s: the server exports it read-only", uri);
		goto fail;
	}
	c->can_flush = nbd_can_flush(c->h) == 1;
	r = -pthread_create(&c->poller, NULL, poller_main, c);
	if (r) {
		snprintf(err, errlen, "%s: no poller thread: %s", uri, strerror(-r));
		goto fail;
	}
	c->poller_started = true;
	*out = c;
	return 0;
fail:
	rf_nbd_close(c);
	return r;
}

/* Tell the server we go, waiting for it at most the timeout (a server that
 * stopped reading must not hold up the close). */
static void disconnect(struct rf_nbd *c)
{
	int64_t deadline = rf_mono_ms() + atomic_load(&c->timeout_ms);

	if (nbd_aio_is_ready(c->h) <= 0 || nbd_aio_disconnect(c->h, 0) < 0)
		return;
	while (nbd_aio_is_closed(c->h) <= 0 && nbd_aio_is_dead(c->h) <= 0) {
		int64_t left = deadline - rf_mono_ms();

		if (left <= 0 || nbd_poll(c->h, (int)(left < POLL_SLICE_MS ? left : POLL_SLICE_MS)) < 0)
			break;
	}
}

void rf_nbd_close(struct rf_nbd *c)
{
	struct nbd_cmd *cmd;

	if (!c)
		return;
	if (c->poller_started) {
		pthread_mutex_lock(&c->lock);
		c->stop = true;
		poller_kick(c);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->poller, NULL);
	}
	if (c->h) {
		pthread_mutex_lock(&c->lock);
		/* Nobody may be waiting on a command now; if one is, it ends. */
		if (c->inflight.next != &c->inflight) {
			rf_err("%s: closed with commands in flight", c->uri);
			kill_locked(c, -ENOTCONN);
		}
		if (!c->dead)
			disconnect(c);
		nbd_close(c->h);        /* frees the callbacks: under the lock */
		pthread_mutex_unlock(&c->lock);
	}
	while ((cmd = c->free)) {
		c->free = cmd->next;
		free(cmd->bounce);
		free(cmd);
	}
	if (c->efd >= 0)
		close(c->efd);
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

/* c->lock held: a command slot with room for len bytes of bounce when
 * niov > 1; NULL when out of memory. */
static struct nbd_cmd *cmd_get(struct rf_nbd *c, size_t len, int niov)
{
	struct nbd_cmd *cmd = c->free;

	if (cmd)
		c->free = cmd->next;
	else if (!(cmd = calloc(1, sizeof(*cmd))))
		return NULL;
	if (niov > 1 && cmd->bounce_cap < len) {
		char *b = realloc(cmd->bounce, len);

		if (!b) {
			cmd->next = c->free;
			c->free = cmd;
			return NULL;
		}
		cmd->bounce = b;
		cmd->bounce_cap = len;
	}
	return cmd;
}

int rf_nbd_aio(struct rf_nbd *c, int op, const struct iovec *iov, int niov, uint64_t off, rf_nbd_end_fn end,
	       void *ctx, void *arg)
{
	nbd_completion_callback cb;
	struct nbd_cmd *cmd;
	size_t len = 0;
	int64_t cookie;
	void *buf;
	int r = 0;

	if (niov < 0 || niov > RF_NBD_MAX_IOV || (op != RF_NBD_FLUSH && niov < 1))
		return -EINVAL;
	for (int i = 0; op != RF_NBD_FLUSH && i < niov; i++)
		len += iov[i].iov_len;
	if (op != RF_NBD_FLUSH && (off > c->size || len > c->size - off || len > INT32_MAX))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	if (c->dead) {
		pthread_mutex_unlock(&c->lock);
		return -ENOTCONN;
	}
	if (op == RF_NBD_FLUSH && !c->can_flush) {
		pthread_mutex_unlock(&c->lock);
		return 1;       /* nothing to flush: done now */
	}
	cmd = cmd_get(c, len, op == RF_NBD_FLUSH ? 0 : niov);
	if (!cmd) {
		pthread_mutex_unlock(&c->lock);
		return -ENOMEM;
	}
	cmd->c = c;
	cmd->end = end;
	cmd->ctx = ctx;
	cmd->arg = arg;
	cmd->deadline = rf_mono_ms() + atomic_load(&c->timeout_ms);
	cmd->len = (uint32_t)len;
	cmd->op = (uint8_t)op;
	cmd->refs = 2;
	cmd->delivered = false;
	cmd->niov = 0;
	buf = niov == 1 ? iov[0].iov_base : cmd->bounce;
	if (niov > 1 && op == RF_NBD_WRITE) {
		size_t at = 0;

		for (int i = 0; i < niov; i++) {
			memcpy(cmd->bounce + at, iov[i].iov_base, iov[i].iov_len);
			at += iov[i].iov_len;
		}
	} else if (niov > 1) {
		cmd->niov = niov;
		memcpy(cmd->iov, iov, (size_t)niov * sizeof(*iov));
	}
	cmd->prev = c->inflight.prev;
	cmd->next = &c->inflight;
	cmd->prev->next = cmd;
	c->inflight.prev = cmd;
	cb = (nbd_completion_callback){ .callback = cmd_done_cb, .user_data = cmd, .free = cmd_free_cb };
	if (op == RF_NBD_READ)
		cookie = nbd_aio_pread(c->h, buf, len, off, cb, 0);
	else if (op == RF_NBD_WRITE)
		cookie = nbd_aio_pwrite(c->h, buf, len, off, cb, 0);
	else
		cookie = nbd_aio_flush(c->h, cb, 0);
	if (cookie < 0 && cmd->delivered) {
		/* The connection died under the call, and its completion has
		 * ended the command already. */
		r = 0;
	} else if (cookie < 0) {
		/* Not issued: libnbd has freed its side (cmd_free_cb). */
		r = nbd_err();
		cmd->delivered = true;
		cmd->prev->next = cmd->next;
		cmd->next->prev = cmd->prev;
		cmd_put(c, cmd);
		/* A handle whose server went away refuses new commands (as
		 * EINVAL): say what it is, and keep it dead. */
		if (nbd_aio_is_dead(c->h) > 0 || nbd_aio_is_closed(c->h) > 0) {
			kill_locked(c, -ENOTCONN);
			r = -ENOTCONN;
		}
	} else if (!c->poll_out && (nbd_aio_get_direction(c->h) & LIBNBD_AIO_DIRECTION_WRITE)) {
		/* The socket did not take all of it: the poller sends the rest. */
		poller_kick(c);
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

/* ---- synchronous commands, over the asynchronous ones ---- */

struct sync_wait {
	int res;
	bool done;
};

/* c->lock held (a delivery). */
static void sync_end(void *ctx, void *arg, int res)
{
	struct sync_wait *w = arg;

	w->res = res;
	w->done = true;
	pthread_cond_broadcast(&((struct rf_nbd *)ctx)->cond);
}

/* Run one command and wait for it: 0 or -errno.  The poller ends the
 * command at its deadline; the wait has its own a little later, so that
 * a caller holding locks (the superblock writers hold the device lock)
 * never waits longer than the member's timeout and that, whatever
 * happened to the poller. */
static int sync_run(struct rf_nbd *c, int op, void *buf, size_t len, uint64_t off)
{
	struct iovec v = { buf, len };
	struct sync_wait w = { 0 };
	struct timespec until;
	int r;

	if (op != RF_NBD_FLUSH && !len) {
		pthread_mutex_lock(&c->lock);
		r = c->dead ? -ENOTCONN : off > c->size ? -EINVAL : 0;
		pthread_mutex_unlock(&c->lock);
		return r;
	}
	until = rf_deadline_ms(atomic_load(&c->timeout_ms) + 2 * POLL_SLICE_MS);
	r = rf_nbd_aio(c, op, &v, op == RF_NBD_FLUSH ? 0 : 1, off, sync_end, c, &w);
	if (r)
		return r < 0 ? r : 0;
	pthread_mutex_lock(&c->lock);
	while (!w.done) {
		if (pthread_cond_timedwait(&c->cond, &c->lock, &until) == ETIMEDOUT && !w.done) {
			rf_err("%s: no reply within %u ms, and the poller did not end the command: connection closed",
			       c->uri, atomic_load(&c->timeout_ms));
			kill_locked(c, -ETIMEDOUT);
		}
	}
	pthread_mutex_unlock(&c->lock);
	return w.res < 0 ? w.res : 0;
}

int rf_nbd_pread(struct rf_nbd *c, void *buf, size_t len, uint64_t off)
{
	return sync_run(c, RF_NBD_READ, buf, len, off);
}

int rf_nbd_pwrite(struct rf_nbd *c, const void *buf, size_t len, uint64_t off)
{
	return sync_run(c, RF_NBD_WRITE, (void *)buf, len, off);
}

int rf_nbd_flush(struct rf_nbd *c)
{
	return sync_run(c, RF_NBD_FLUSH, NULL, 0, 0);
}

/* ---- the device's name ---- */

/* Append [s, s + n) to out (room bytes in all, *at used), a '/' as '_'. */
static void name_put(char *out, size_t room, size_t *at, const char *s, size_t n)
{
	for (size_t i = 0; i < n && *at + 1 < room; i++)
		out[(*at)++] = s[i] == '/' ? '_' : s[i];
	out[*at] = '\0';
}

void rf_nbd_name(const char *uri, char *out, size_t len)
{
	bool is_unix = strstr(uri, "+unix://") != NULL;
	const char *p = strstr(uri, "://"), *host, *q, *exp;
	size_t at = 0, hn, en;

	if (!len)
		return;
	out[0] = '\0';
	if (!p)
		return;
	host = p + 3;
	hn = strcspn(host, "/?");
	exp = host + hn;
	if (*exp == '/')
		exp++;
	else
		exp = host + hn;       /* no path: no export */
	en = strcspn(exp, "?");
	if (is_unix) {
		/* The socket's file name: its path's last component. */
		const char *sock = strstr(exp + en, "socket=");
		size_t sn;

		if (sock) {
			sock += 7;
			sn = strcspn(sock, "&");
			for (q = sock + sn; q > sock && q[-1] != '/'; q--)
				;
			name_put(out, len, &at, q, (size_t)(sock + sn - q));
		}
	} else {
		/* host[:port], the default port left out. */
		size_t keep = hn;

		if (hn > 6 && !strncmp(host + hn - 6, ":10809", 6))
			keep = hn - 6;
		name_put(out, len, &at, host, keep);
	}
	if (en) {
		if (at)
			name_put(out, len, &at, ":", 1);
		name_put(out, len, &at, exp, en);
	}
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
