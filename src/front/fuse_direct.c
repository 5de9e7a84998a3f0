/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuse_direct.c - reads of the image answered straight from the members:
 * from their mappings, or by splice on libfuse's transport.
 *
 * A read whose member bytes are all mapped (fdmap.h: members on tmpfs or
 * ramfs) is answered from the mappings: the read map (readmap.h) gives
 * each extent's address.  On libfuse's transport the reply's iovec points
 * there and the kernel copies the member pages straight into the reply;
 * on FUSE over io_uring they are copied into the ring entry's payload
 * (guarded against a member shrunk under its mapping).  No system call
 * on the members either way.  The read is held at the drain barrier
 * until the reply is written, as a spliced one is (below).
 *
 * Large reads on libfuse's transport go by splice when they can
 * (RAIDFUSE_SPLICE, below): a read of at least splice_min bytes that the
 * read map (readmap.h) finds to be a pure data read is spliced from the
 * member files into the thread's pipe (splice.c) and answered with
 * fuse_reply_data() from that pipe, on the FUSE thread, with the read
 * held at the drain barrier until the reply is sent.  The member pages
 * go to the kernel's reply by reference: two copies in all (member page
 * to the reply, reply to the reader) instead of three.  A read the map
 * refuses, or whose splice fails, is submitted the usual way, so a
 * member error is handled there (the member fails, the level serves the
 * bytes from the others).  The io_uring transport keeps its own path.
 *
 * The splice settings are made before the session starts (and INIT may
 * turn splice off), then only read: no lock.  The counters are relaxed
 * atomics, reported when the loop ends (fuse_serve.c).
 *
 * What it does NOT do: fill or keep the pipe (splice.c), read through
 * the array's IO path (fuse_pool.c), or mark a member faulty.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "raidfuse/fdmap.h"
#include "raidfuse/log.h"
#include "raidfuse/readmap.h"
#include "front/fuse_int.h"
#include "front/fuse_reply.h"
#include "front/fuse_uring.h"
#include "front/splice.h"

/* Reads spliced from this size on (RAIDFUSE_SPLICE_MIN overrides). */
#define RF_SPLICE_MIN (32u << 10)
/* A thread's splice pipe: a whole read, each extent a page more. */
#define RF_SPLICE_PIPE (2 * RF_MAX_IO)
/* What libfuse's own pipe holds beside a spliced read's data: the reply
 * header, and a page for each buffer and one more (fuse_reply_data()). */
#define RF_SPLICE_HDR (4u * 4096)

/* Whether the kernel may offer FUSE over io_uring (which serves then,
 * with no use for splice), as far as can be told before mounting. */
static bool uring_may_serve(int mode)
{
	char c = 'N';
	FILE *f;

	if (mode == RF_URING_OFF)
		return false;
	f = fopen("/sys/module/fuse/parameters/enable_uring", "re");
	if (f) {
		if (fread(&c, 1, 1, f) != 1)
			c = 'N';
		fclose(f);
	}
	return c == 'Y' || c == '1';
}

/* RAIDFUSE_SPLICE: unset or 1, on; 0, off (A/B runs); nofallback (tests
 * only), on, and a failed splice answers its error to the reader.
 * RAIDFUSE_SPLICE_MIN: the smallest read spliced, bytes (from 32 KiB on,
 * a splice measured faster than a copy here; SPLICE_F_MOVE measured no
 * faster, so the kernel is not asked to move pages).
 *
 * A spliced reply goes through libfuse's pipe whole, its header beside
 * it, and a pipe may not grow past /proc/sys/fs/pipe-max-size (1 MiB by
 * default) without CAP_SYS_RESOURCE: then a 1 MiB read cannot be spliced,
 * and libfuse would copy it twice over.  So the reads spliced stop at
 * what the largest pipe holds, and the kernel is asked for reads no
 * larger (max_read: the largest power of two that fits), so that a 1 MiB
 * read comes as two that are spliced.  Not when FUSE over io_uring may
 * serve (it keeps 1 MiB reads), nor when every member is mapped (its
 * reads are answered from the mappings, whatever their size). */
void rf_fuse_direct_splice_config(struct fs *fs, int mode)
{
	const char *e = getenv("RAIDFUSE_SPLICE"), *min = getenv("RAIDFUSE_SPLICE_MIN");
	long pmax;

	fs->max_read = RF_MAX_IO;
	fs->splice = !e || strcmp(e, "0");
	fs->splice_nofallback = e && !strcmp(e, "nofallback");
	fs->splice_min = RF_SPLICE_MIN;
	if (fs->splice && e && strcmp(e, "1") && !fs->splice_nofallback)
		rf_warn("RAIDFUSE_SPLICE=%s: not 0, 1 or nofallback; splice stays on", e);
	if (min) {
		char *end;
		unsigned long v = strtoul(min, &end, 0);

		if (*min && !*end && v <= RF_MAX_IO)
			fs->splice_min = v < 8192 ? 8192 : (uint32_t)v;
		else
			rf_warn("RAIDFUSE_SPLICE_MIN=%s: not a byte count up to %u; %u kept", min, RF_MAX_IO,
				fs->splice_min);
	}
	if (!fs->splice || fs->null)
		return;
	pmax = rf_splice_pipe_max(RF_SPLICE_PIPE);
	if (pmax <= (long)RF_SPLICE_HDR + (long)fs->splice_min) {
		rf_info("pipes of %ld bytes hold no read of %u: reads are copied", pmax, fs->splice_min);
		fs->splice = false;
		return;
	}
	fs->splice_max = pmax - RF_SPLICE_HDR < (long)RF_MAX_IO ? (uint32_t)(pmax - RF_SPLICE_HDR) : RF_MAX_IO;
	/* Not below a quarter: more, smaller requests would cost more than
	 * the copies saved. */
	if (fs->splice_max < RF_MAX_IO && fs->splice_max >= RF_MAX_IO / 4 && !uring_may_serve(mode) &&
	    !rf_read_map_all_mapped(fs->a)) {
		while (fs->max_read > fs->splice_max)
			fs->max_read /= 2;
		rf_dbg("splice: pipes hold %ld bytes: reads up to %u bytes", pmax, fs->max_read);
	}
}

/* INIT: splice replies when the kernel takes them. */
void rf_fuse_direct_splice_init(struct fs *fs, struct fuse_conn_info *conn)
{
	if (fs->splice && !(conn->capable & FUSE_CAP_SPLICE_WRITE)) {
		rf_info("the kernel takes no spliced replies: reads are copied");
		fs->splice = false;
	}
	if (!fs->splice)
		return;
	conn->want |= FUSE_CAP_SPLICE_WRITE;
}

/* Answer a read that m maps (held) from the members' mappings; false:
 * not answered (a member not mapped, a fault injected, a member shrunk
 * under its mapping), the caller goes on.  libfuse's transport replies
 * with an iovec into the mappings (the kernel copies); a transport that
 * gives the read a buffer, dst (FUSE over io_uring: the ring entry's
 * payload), gets the bytes copied there, guarded (fdmap.h). */
static bool mapped_reply(struct fs *fs, struct rf_fq *q, const struct rf_read_map *m, void *dst)
{
	struct iovec iov[RF_READ_MAP_MAX];
	int i;

	for (i = 0; i < m->n; i++) {
		if (!m->ext[i].addr || rf_read_map_fault(m, i))
			return false;
		iov[i].iov_base = (void *)m->ext[i].addr;
		iov[i].iov_len = m->ext[i].len;
	}
	/* A page that faults (a member shrunk under its mapping, a hole of a
	 * full tmpfs): the IO path reads it with pread, which fails a short
	 * member and reads a hole as zeros.  The kernel's copy from the iovec
	 * cannot fall back (its fault ends the request with EIO): its pages
	 * are touched first. */
	if (dst ? rf_fdmap_copy(dst, iov, m->n) : rf_fdmap_probe(iov, m->n))
		return false;
	/* One reply whatever happens: on libfuse's transport a member shrunk
	 * between the touch and the kernel's copy fails that copy, and the
	 * reader gets EIO. */
	if (dst)
		q->ops->buf(q, dst, m->len);
	else
		fuse_reply_iov(q->h, iov, m->n);
	atomic_fetch_add_explicit(&fs->nr_mapped, 1, memory_order_relaxed);
	return true;
}

/* Answer a read that m maps (held) by splice; false: not answered, the
 * caller goes on. */
static bool splice_reply(struct fs *fs, struct rf_fq *q, const struct rf_read_map *m)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(m->len);
	int fd;

	if (!fs->splice || m->len < fs->splice_min || m->len > fs->splice_max || q->ops != &rf_fuse_serve_ll_reply)
		return false;
	fd = rf_splice_fill(m, RF_SPLICE_PIPE);
	if (fd < 0) {
		if (fd == -ENOSPC)
			return false;   /* this thread's pipe is too small for it */
		atomic_fetch_add_explicit(&fs->nr_splice_fallback, 1, memory_order_relaxed);
		if (!fs->splice_nofallback)
			return false;
		q->ops->err(q, -fd);
		return true;
	}
	bv.buf[0].flags = FUSE_BUF_IS_FD;
	bv.buf[0].fd = fd;
	/* One reply whatever happens: libfuse answers its own errors. */
	fuse_reply_data(q->h, &bv, 0);
	/* The pipe's pages left before the barrier lets the members go
	 * (the caller's unmap). */
	rf_splice_after_reply();
	atomic_fetch_add_explicit(&fs->nr_spliced, 1, memory_order_relaxed);
	return true;
}

/* Answer the read [off, off + size) of the image straight from the
 * members, from their mappings or else by splice, under one read map;
 * false: not answered (not a pure data read now, or neither way took it),
 * the caller submits it. */
bool rf_fuse_direct_read(struct fs *fs, struct rf_fq *q, uint64_t off, size_t size)
{
	struct rf_read_map m;
	void *dst = NULL;
	bool done;

	/* Both ways reply on libfuse's transport; another one only takes
	 * the mappings' bytes, into the buffer it gives. */
	if (q->ops != &rf_fuse_serve_ll_reply && !(q->ops->read_buf && (dst = q->ops->read_buf(q, size))))
		return false;
	if (rf_read_map(fs->a, off, (uint32_t)size, &m))
		return false;
	done = mapped_reply(fs, q, &m, dst) || splice_reply(fs, q, &m);
	rf_read_unmap(&m);
	return done;
}
