/* SPDX-License-Identifier: GPL-2.0-or-later */
/* readmap.c - a read of the array as member extents (see readmap.h).
 *
 * The level says where the bytes are (its read_map op, which decides as
 * its split() does for a read, so both serve a read from the same
 * member bytes); this file adds what is the same for every level: the
 * barrier (the map counts as a read in flight until rf_read_unmap()),
 * and the backend check (only a member that the IO path reads with a
 * plain pread of its buffered descriptor: no overlay layer, no NBD
 * export, no io log), with the mapping's address where there is one.  Fault injection is asked per extent by the
 * caller, as the IO path asks per operation (rf_read_map_fault()).
 *
 * Invariant: a map that returned 0 holds one read at the barrier, and
 * the extents' descriptors stay those of the slots' devices until
 * rf_read_unmap() (every device table edit drains reads first).
 *
 * What it does NOT do: move bytes, retry, or fail members.
 */
#include <errno.h>
#include <string.h>

#include "core/engine.h"
#include "raidfuse/fault.h"
#include "raidfuse/iolog.h"
#include "raidfuse/readmap.h"

int rf_read_map_add(struct rf_read_map *m, int member, uint64_t moff, uint32_t len)
{
	struct rf_rextent *e = m->n ? &m->ext[m->n - 1] : NULL;

	if (e && e->member == member && e->off + e->len == moff) {
		e->len += len;
	} else {
		if (m->n == RF_READ_MAP_MAX)
			return -E2BIG;
		e = &m->ext[m->n++];
		e->fd = -1;
		e->addr = NULL;
		e->member = member;
		e->off = moff;
		e->len = len;
	}
	m->len += len;
	return 0;
}

bool rf_read_map_plain(const struct rf_array *a, int k)
{
	const struct rf_ioq_member *io = &a->devs[k].io;

	/* direct: its reads are O_DIRECT, never a splice or copy out of
	 * the page cache. */
	return io->fd >= 0 && rf_ioq_member_plain(io) && !io->direct;
}

/* The extent's descriptor, and its address when the member is mapped
 * over all of it. */
static void extent_backend(const struct rf_dev *d, struct rf_rextent *e)
{
	e->fd = d->io.fd;
	e->addr = rf_ioq_member_map(&d->io, e->off, e->len, false);
}

int rf_read_map(struct rf_array *a, uint64_t off, uint32_t len, struct rf_read_map *m)
{
	int i, ret;

	m->a = a;
	m->n = 0;
	m->len = 0;
	if (!len || off > a->size || len > a->size - off)
		return -EINVAL;
	if (!a->ops->read_map || a->overlay || rf_iolog_on)
		return -EAGAIN;
	if (!rf_barrier_try_read(a))
		return -EAGAIN;
	ret = a->ops->read_map(a, off, len, m);
	for (i = 0; !ret && i < m->n; i++) {
		if (!rf_read_map_plain(a, m->ext[i].member))
			ret = -EAGAIN;
		else
			extent_backend(&a->devs[m->ext[i].member], &m->ext[i]);
	}
	if (!ret && m->len != len)
		ret = -EAGAIN;  /* a level that mapped less than asked: not ours to serve */
	if (ret) {
		m->n = 0;
		rf_barrier_exit(a, 0);
	}
	return ret;
}

int rf_read_map_fault(const struct rf_read_map *m, int i)
{
	const struct rf_rextent *e = &m->ext[i];

	return rf_fault_check(m->a->devs[e->member].io.fault, RF_MIO_READ, e->off, e->len);
}

void rf_read_unmap(struct rf_read_map *m)
{
	m->n = 0;
	rf_barrier_exit(m->a, 0);
}

const char *rf_read_map_addr(struct rf_array *a, int k, uint64_t off, uint32_t len)
{
	const struct rf_ioq_member *io = &a->devs[k].io;

	/* The map's own rules (rf_read_map()), and no fault injection: the
	 * region's reads through the mapping cannot ask it per operation. */
	if (a->overlay || rf_iolog_on || !rf_read_map_plain(a, k) ||
	    (io->fault && atomic_load_explicit(&io->fault->armed, memory_order_relaxed)))
		return NULL;
	return rf_ioq_member_map(io, off, len, false);
}

bool rf_read_map_all_mapped(struct rf_array *a)
{
	bool all = a->ndevs > 0;
	int k;

	rf_devs_lock(a);
	for (k = 0; k < a->ndevs; k++)
		if (a->devs[k].io.fd >= 0 && !a->devs[k].io.map.base)
			all = false;
	rf_devs_unlock(a);
	return all;
}
