/* SPDX-License-Identifier: GPL-2.0-or-later */
/* daemon.h - detach from the terminal the way a served array needs.
 *
 * `raidfuse mount` and `assemble` fork before they open anything, so that
 * every thread the daemon serves with (NBD pollers, workers, the
 * management and sync threads, io_uring rings bound to their issuer) is
 * started by the daemon itself; the command waits until the daemon serves
 * or fails, and exits with its status, its messages having gone to the
 * terminal until then.
 */
#ifndef RAIDFUSE_DAEMON_H
#define RAIDFUSE_DAEMON_H

#include <stdbool.h>

/* Unless foreground, fork: the parent waits until the child calls
 * rf_daemon_ready() (returns 0) or exits (returns its exit status, 1 when
 * it was killed); the child, which goes on to open and serve the array,
 * gets -1.  In the foreground nothing happens: -1.  A fork that fails is
 * reported and returns 1. */
int rf_daemon_fork(bool foreground);

/* The daemon serves: a new session, the working directory /, stdin,
 * stdout and stderr on /dev/null, then the waiting parent is told (it
 * exits 0).  Does nothing in the foreground or when called again. */
void rf_daemon_ready(void);

/* Whether this process is a detached daemon (rf_daemon_fork() forked). */
bool rf_daemon_detached(void);

#endif
