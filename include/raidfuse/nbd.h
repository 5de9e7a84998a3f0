/* SPDX-License-Identifier: GPL-2.0-or-later */
/* nbd.h - a member served over NBD (libnbd), by URI.
 *
 * A member may be an NBD export instead of a file: nbd://host[:port]/export,
 * nbds://... (TLS), nbd+unix:///export?socket=PATH (and nbds+unix).  This
 * is the client of one export: connect with a deadline, its size, and
 * reads, writes and flushes that each end within the member's timeout, or
 * fail with -ETIMEDOUT (the caller fails the member, as md fails a disk
 * that errors; a server that stops answering never hangs the array).
 *
 * Threads: every call may come from any thread at once.  Commands are
 * asynchronous (rf_nbd_aio: many in flight on one connection, each ending
 * through its end() on the connection's poller thread) or synchronous
 * (rf_nbd_pread/pwrite/flush: the same, waited for).  Locks: c->lock,
 * then (inside libnbd's calls and the end() it runs) whatever end() takes,
 * which must be a leaf and never call back into c.
 *
 * It does NOT reconnect: a connection that failed or timed out stays dead
 * (every later call fails at once) until the member is re-added.
 */
#ifndef RAIDFUSE_NBD_H
#define RAIDFUSE_NBD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#define RF_NBD_TIMEOUT_MS_DEFAULT 30000       /* nbd-client's default */

struct rf_member_id;
struct rf_nbd;
struct rf_sb_io;

/* Whether s names an NBD export (nbd://, nbds://, nbd+unix://, nbds+unix://):
 * what the config, the command line and md/new_dev take as a URI rather
 * than a path. */
static inline bool rf_nbd_is_uri(const char *s)
{
	return !strncmp(s, "nbd://", 6) || !strncmp(s, "nbds://", 7) || !strncmp(s, "nbd+unix://", 11) ||
	       !strncmp(s, "nbds+unix://", 12);
}

/* Connect to uri within timeout_ms; readonly asks for nothing but reads.
 * 0, or -errno with a one-line message naming uri in err (unreachable,
 * refused, no such export, TLS wanted but not offered, a read-only export
 * opened for writing, ...). */
int rf_nbd_open(const char *uri, bool readonly, unsigned timeout_ms, struct rf_nbd **out, char *err,
		size_t errlen);
void rf_nbd_close(struct rf_nbd *c);
/* rf_nbd_open()'s message without its leading "uri: ", for a caller
 * whose own prefix names the member ("member 2 (URI): ..."). */
static inline const char *rf_nbd_why(const char *err, const char *uri)
{
	size_t n = strlen(uri);

	return !strncmp(err, uri, n) && err[n] == ':' && err[n + 1] == ' ' ? err + n + 2 : err;
}

/* The name of the device uri is (md/dev-NAME, ctl's NAME): unique per
 * export and the same each time.  nbd[s]://HOST[:PORT]/EXPORT is
 * "HOST:PORT:EXPORT" (":PORT" left out when it is NBD's 10809, ":EXPORT"
 * when the export name is empty); nbd[s]+unix:///EXPORT?socket=PATH is
 * PATH's last component, then ":EXPORT" likewise.  A '/' becomes '_'.
 * Truncated to len - 1 bytes. */
void rf_nbd_name(const char *uri, char *out, size_t len);

uint64_t rf_nbd_size(const struct rf_nbd *c);          /* the export's size, bytes */
/* Which export of which server c is connected to, whatever URI named it
 * (memberid.h): a unix socket's inode, or the address and port reached,
 * and the export's name. */
void rf_nbd_member_id(const struct rf_nbd *c, struct rf_member_id *m);
const char *rf_nbd_uri(const struct rf_nbd *c);
/* The timeout every command gets from its issue, ms; 0 sets the default.
 * Any thread, any time: commands issued afterwards get the new one. */
unsigned rf_nbd_timeout(const struct rf_nbd *c);
void rf_nbd_set_timeout(struct rf_nbd *c, unsigned timeout_ms);

/* All of len bytes at off, or -errno (-EIO for a server error, -ETIMEDOUT
 * when the command did not end within the timeout, -ENOTCONN once the
 * connection is dead).  Reads past the end fail (-EINVAL). */
int rf_nbd_pread(struct rf_nbd *c, void *buf, size_t len, uint64_t off);
int rf_nbd_pwrite(struct rf_nbd *c, const void *buf, size_t len, uint64_t off);
/* The server's write cache to stable storage (0 when it has none to flush). */
int rf_nbd_flush(struct rf_nbd *c);

enum rf_nbd_op { RF_NBD_READ, RF_NBD_WRITE, RF_NBD_FLUSH };

#define RF_NBD_MAX_IOV 64       /* buffers in one command */

/* How an asynchronous command ends: res is the bytes moved (0 for a flush)
 * or -errno as for rf_nbd_pread().  Called once, on any thread (mostly the
 * connection's poller), with the connection's lock held: it must not call
 * into the connection, nor block. */
typedef void (*rf_nbd_end_fn)(void *ctx, void *arg, int res);

/* Issue op over the niov buffers of iov (one command; up to RF_NBD_MAX_IOV,
 * read into or written from one after the other at off; a flush takes
 * none) and return: 0, end(ctx, arg, res) comes later; 1, done at once
 * (a flush on a server with nothing to flush; end() is not called); or
 * -errno, not issued (-ENOTCONN once the connection is dead, -EINVAL past
 * the end) and end() is not called.  The buffers must stay until end().
 * A command still in flight member_timeout after its issue ends with
 * -ETIMEDOUT and kills the connection. */
int rf_nbd_aio(struct rf_nbd *c, int op, const struct iovec *iov, int niov, uint64_t off, rf_nbd_end_fn end,
	       void *ctx, void *arg);

/* The superblock code's view of the export (super.h's rf_sb_io). */
void rf_nbd_sb_io(struct rf_nbd *c, struct rf_sb_io *io);

#endif
