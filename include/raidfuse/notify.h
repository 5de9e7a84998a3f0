/* SPDX-License-Identifier: GPL-2.0-or-later */
/* notify.h - tell the service manager how the daemon is (sd_notify). */
#ifndef RAIDFUSE_NOTIFY_H
#define RAIDFUSE_NOTIFY_H

#include <stddef.h>

#include "raidfuse/array.h"

/* The array's state as one line, mdstat's: "raid5 [4/3] [UUU_]", the
 * running sync action after it ("raid5 [4/4] [UUUU] recover"), and
 * " (read-only)" for a read-only array.  Always NUL-terminated. */
void rf_notify_status_line(struct rf_array *a, char *buf, size_t len);

/* The array serves (its FUSE mount is up, its workers run): send
 * MAINPID (a detached daemon: daemon.h), READY=1 and STATUS, then keep
 * STATUS up to date (checked every RF_NOTIFY_PERIOD_MS) until
 * rf_notify_stopping().  Nothing without $NOTIFY_SOCKET. */
void rf_notify_serving(struct rf_array *a);

/* The daemon begins to stop (unmounted or signalled): STOPPING=1, and no
 * more STATUS updates.  Nothing if rf_notify_serving() did nothing. */
void rf_notify_stopping(void);

#define RF_NOTIFY_PERIOD_MS 500

#endif
