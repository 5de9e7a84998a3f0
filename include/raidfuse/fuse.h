/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuse.h - serve an array as one file under a FUSE mount. */
#ifndef RAIDFUSE_FUSE_H
#define RAIDFUSE_FUSE_H

#include <stdbool.h>

#include "raidfuse/array.h"

struct rf_fuse_opts {
	const char *mountpoint;
	bool foreground;
	bool debug;             /* libfuse's -d */
	const char *fuse_opts;  /* -o ...: io_uring=auto|on|off (the transport),
				 * the rest passed to libfuse; NULL for none */
	int max_threads;        /* FUSE threads; 0 = default */
	bool freeze;            /* --freeze: start with sync_action frozen (no resync) */
	bool null;              /* --null: the image reads zeros and drops writes (a
				 * transport benchmark; the members are not touched) */
	const char *log;        /* --log FILE|stderr|syslog|journal (log.h); NULL: the default */
};

/* Mount (o->mountpoint made absolute; named raidfuse:NAME, type
 * fuse.raidfuse, and marked as served by this process: holder.h), start the array's workers and the resync its
 * superblocks say is due (unless o->freeze), tell the command waiting for
 * a daemon that it serves (rf_daemon_ready(): daemon.h), serve
 * until unmounted or signalled, then stop the workers (every request
 * answered) and return 0, or -errno / 1 on a mount error (logged). */
int rf_fuse_run(struct rf_array *a, const struct rf_fuse_opts *o);

#endif
