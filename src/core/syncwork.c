/* SPDX-License-Identifier: GPL-2.0-or-later */
/* syncwork.c - the toolkit a level's sync work of one region calls
 * (syncwork.h): member IO on the walk worker's own queue, the region's
 * buffers lent from the members' mappings, and its findings reported to
 * the walk; and md's sync_action words.
 *
 * Everything a call needs is in the region's struct rf_sync_work, which
 * the walk (services/sync_walk.c) sets up for each of its workers: its IO
 * queue and room for a region's member IO, its own buffers, and where
 * findings go (struct rf_sync_report).  So the levels below the walk call
 * nothing of it.  Every call runs on the worker's thread.
 *
 * It does NOT cut, pace, order or retire regions, lock their rows (the
 * walk locks a region's rows around the level's work), or keep any count
 * itself: the walk does.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "core/syncwork.h"
#include "raidfuse/log.h"
#include "raidfuse/readmap.h"

static const char *const action_names[] = {
	[RF_SYNC_IDLE] = "idle",
	[RF_SYNC_FROZEN] = "frozen",
	[RF_SYNC_RESYNC] = "resync",
	[RF_SYNC_CHECK] = "check",
	[RF_SYNC_REPAIR] = "repair",
	[RF_SYNC_RECOVER] = "recover",
};

const char *rf_sync_action_name(enum rf_sync_action act)
{
	return (unsigned)act < sizeof(action_names) / sizeof(action_names[0]) ? action_names[act] : "?";
}

int rf_sync_action_parse(const char *word)
{
	size_t n = strlen(word);
	unsigned i;

	if (n && word[n - 1] == '\n')
		n--;
	for (i = 0; i < sizeof(action_names) / sizeof(action_names[0]); i++)
		if (strlen(action_names[i]) == n && !strncmp(word, action_names[i], n))
			return (int)i;
	return -EINVAL;
}

static void sio_end(struct rf_mio *m)
{
	struct rf_sync_work *w = m->priv;

	if (m->res) {
		rf_member_fail(w->a, m->member, m->res, m->op == RF_MIO_WRITE ? "sync write" : "sync read",
			       m->off + m->done);
		if (!w->io_err)
			w->io_err = m->res;
	}
	w->io_pending--;
}

void rf_sync_io(struct rf_sync_work *w, int m, bool write, char *buf, uint32_t len, uint64_t sec)
{
	struct rf_mio *mio = &w->mios[w->nmios++];

	memset(mio, 0, sizeof(*mio));
	mio->end = sio_end;
	mio->priv = w;
	mio->buf = buf;
	mio->len = len;
	mio->off = rf_array_dev_sector_off(w->a, m, sec);
	mio->member = (int16_t)m;
	mio->op = write ? RF_MIO_WRITE : RF_MIO_READ;
	w->io_pending++;
	rf_ioq_queue(w->ioq, mio);
}

bool rf_sync_map(struct rf_sync_work *w, int m, uint32_t len, uint64_t sec)
{
	const char *p = rf_read_map_addr(w->a, m, rf_array_dev_sector_off(w->a, m, sec), len);

	if (!p)
		return false;
	w->buf[m] = (char *)p;
	w->mapped |= 1ull << m;
	w->report->mapped(w->report_priv, len);
	return true;
}

void rf_sync_own(struct rf_sync_work *w, int m, uint32_t len)
{
	if (!(w->mapped & (1ull << m)))
		return;
	memcpy(w->own[m], w->buf[m], len);
	w->buf[m] = w->own[m];
	w->mapped &= ~(1ull << m);
}

void rf_sync_unmap(struct rf_sync_work *w)
{
	int m;

	for (m = 0; w->mapped; m++) {
		if (!(w->mapped & (1ull << m)))
			continue;
		w->buf[m] = w->own[m];
		w->mapped &= ~(1ull << m);
	}
}

int rf_sync_io_wait(struct rf_sync_work *w)
{
	int ret;

	for (;;) {
		ret = rf_ioq_submit(w->ioq);
		if (ret < 0 || !w->io_pending)
			break;
		/* Something waits for room and nothing is in flight: submit
		 * again rather than sleep. */
		ret = rf_ioq_reap(w->ioq, !rf_ioq_stalled(w->ioq));
		if (ret < 0)
			break;
	}
	if (ret < 0 && !w->io_err) {
		rf_err("%s: sync: member IO queue: %s", rf_array_name(w->a), strerror(-ret));
		w->io_err = ret;
	}
	ret = w->io_err;
	w->io_err = 0;
	w->nmios = 0;
	return ret;
}

void rf_sync_write_dirty(struct rf_sync_work *w, int m, char *buf, uint8_t *dirty, int nblk, uint32_t bytes,
			 uint64_t sec, int err)
{
	int b = 0, e;

	if (err) {
		memset(dirty, 0, (size_t)nblk);
		return;
	}
	while (b < nblk) {
		uint32_t off, len;

		if (!dirty[b]) {
			b++;
			continue;
		}
		for (e = b; e < nblk && dirty[e]; e++)
			dirty[e] = 0;
		off = (uint32_t)b * RF_SYNC_BLK;
		len = (uint32_t)e * RF_SYNC_BLK < bytes ? (uint32_t)(e - b) * RF_SYNC_BLK : bytes - off;
		rf_sync_io(w, m, true, buf + off, len, sec + off / 512);
		b = e;
	}
}

void rf_sync_mismatch(struct rf_sync_work *w, uint64_t sectors)
{
	w->report->mismatch(w->report_priv, sectors);
}

bool rf_sync_found_bad(struct rf_sync_work *w, int m, uint64_t where)
{
	return w->report->found_bad(w->report_priv, m, where);
}
