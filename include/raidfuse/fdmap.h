/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fdmap.h - a member file's bytes mapped into the daemon, for reads and
 * writes without a system call.
 *
 * A member that lives in memory (a regular file on tmpfs or ramfs: its
 * page cache is the member) can be read without a system call on it: the
 * front end points its reply's iovec at the mapping and the kernel copies
 * the bytes from there into the FUSE reply.  rf_fdmap_open() maps such a
 * file shared, so the mapping is the page cache the IO path reads and
 * writes with pread/pwrite, with no copy to keep coherent; writable, a
 * store into it is a write of the file, seen by every reader at once,
 * as a pwrite's bytes are (memory file systems have nothing to flush).
 *
 * Only memory-backed files are mapped: on a file system with a disk under
 * it a read through the mapping would wait on the disk in the FUSE thread,
 * and a media error would reach the reader as EIO instead of failing the
 * member and rebuilding the read, as the IO path does.
 *
 * A mapped file that someone shrinks under the daemon has pages that
 * fault, and so do the holes of a sparse file on a full tmpfs (a read
 * fault on a shared mapping allocates the page; pread returns zeros): a
 * copy the kernel makes from the mapping (libfuse's transport: the
 * reply's iovec points there) would fail with EFAULT and give the reader
 * EIO, so the reply's pages are touched first, guarded
 * (rf_fdmap_probe()), and a fault sends the read the usual way; a copy the daemon makes itself (FUSE over io_uring: into the ring
 * entry's payload) goes through rf_fdmap_copy(), and the IO queue's
 * copies to and from a mapping and code that computes from mappings (a
 * sync region's parity) through rf_fdmap_guarded(): the SIGBUS is caught
 * and -EFAULT returned, so the caller takes the IO path instead, where
 * the short member read fails the member.  A store into a page the file
 * system has no room for faults the same way, and the write issued
 * instead meets ENOSPC.  A SIGBUS anywhere else is left to its default
 * action, as without this module.
 *
 * The pages a read touches join the daemon's resident set (VmRSS, VmHWM:
 * RssShmem for tmpfs) and stay there: they are the member's page cache,
 * shared, no memory is added but the page table entries (8 bytes a page).
 * Dropping them past a budget (MADV_DONTNEED over the mappings once 16
 * MiB had been read through them) measured slower than no mapping at all
 * on 4 KiB random reads, so there is none; RAIDFUSE_MAP=0 is the way to
 * keep the resident set to the daemon's own memory.
 *
 * Setting, read once at the first open: RAIDFUSE_MAP=0 maps nothing
 * (rf_fdmap_setup() instead, for tests).
 *
 * Locks: none; a mapping belongs to its device, opened and closed with it.
 * The SIGBUS handler is process-wide, installed at the first mapping;
 * what it needs is thread-local.
 *
 * What it does NOT do: decide which reads and writes may use a mapping
 * (ioq.h: rf_ioq_member_map(); readmap.c: pure data reads, held at the
 * barrier), or map block devices.
 */
#ifndef RAIDFUSE_FDMAP_H
#define RAIDFUSE_FDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rf_fdmap {
	const char *base;               /* NULL: not mapped */
	uint64_t len;                   /* bytes mapped from offset 0 */
	bool writable;                  /* mapped for writes too (PROT_WRITE) */
};

/* Whether fd is a regular file on a memory file system (tmpfs, ramfs):
 * the files rf_fdmap_open() maps. */
bool rf_fdmap_in_memory(int fd);
/* Map fd (len bytes from 0) when mapping is on and fd is a regular file on
 * a memory file system; writable: for writes too (fd open for writing).
 * 0: mapped; -ENOTSUP: not such a file or mapping off (m stays unmapped,
 * not an error for the caller); other -errno. */
int rf_fdmap_open(struct rf_fdmap *m, int fd, uint64_t len, bool writable);
/* Unmap (nothing if not mapped); no reader may use it any more. */
void rf_fdmap_close(struct rf_fdmap *m);
/* The address of the file's bytes [off, off + len) in m, or NULL: not
 * mapped, or not all of them inside the mapping. */
static inline const char *rf_fdmap_at(const struct rf_fdmap *m, uint64_t off, uint64_t len)
{
	if (!m->base || off > m->len || len > m->len - off)
		return NULL;
	return m->base + off;
}
struct iovec;

/* Copy n pieces (iov_base, iov_len: in mappings) one after the other to
 * dst.  0, or -EFAULT when a page of them faulted (a file shrunk under
 * its mapping): dst then holds part of it, the caller must not use it. */
int rf_fdmap_copy(void *dst, const struct iovec *p, int n);
/* Touch every page of n pieces (in mappings), guarded, before the kernel
 * copies from them (a reply's iovec): 0, each page was there or could be
 * faulted in, or -EFAULT: one could not (the file shrunk under it, or a
 * hole of a full tmpfs: a read fault on a shared mapping of tmpfs
 * allocates a page, where pread of the hole returns zeros without one).
 * A copy the kernel makes cannot be taken back: its fault ends the
 * request with EIO, so the caller probes first and, on -EFAULT, reads
 * the usual way. */
int rf_fdmap_probe(const struct iovec *p, int n);
/* Run fn(arg), which reads mappings, guarded the same way: fn's value,
 * or -EFAULT when a page it read faulted (fn was cut short there: what
 * it wrote so far must not be used).  fn is left at the read that
 * faulted: it may take locks and allocate, but not read a mapping while
 * it holds a lock or has an allocation half made.  Not nested. */
int rf_fdmap_guarded(int (*fn)(void *), void *arg);
/* Store n bytes of src at dst, in a mapping (a member write), for a
 * guarded caller: with non-temporal stores on x86-64, which write whole
 * cache lines without reading them first and leave the cache to the
 * bytes that are read again (a random 4 KiB store into a tmpfs mapping
 * measured 2.1x as fast, streaming 1 MiB 1.5x); memcpy elsewhere.  The
 * stores are member IO as a pwrite is, and as a pwrite's they are not
 * seen by ThreadSanitizer: what orders them is the array's (range lock,
 * stripe heads), not the memory model of the daemon's own data. */
void rf_fdmap_store(void *dst, const void *src, size_t n);
/* Install the SIGBUS handler the guards need (the first guarded call
 * does); again after something else took SIGBUS (a test framework). */
void rf_fdmap_catch_sigbus(void);

/* The setting, before the first open; without a call the environment's
 * is taken. */
void rf_fdmap_setup(bool on);
bool rf_fdmap_on(void);

#endif
