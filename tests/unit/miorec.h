/* SPDX-License-Identifier: GPL-2.0-or-later */
/* miorec.h - what the member IO queue tests share: an rf_mio that counts
 * its end() calls, and an unlinked scratch file for a member.  Include
 * after cmocka.h. */
#ifndef MIOREC_H
#define MIOREC_H

#include <stdlib.h>
#include <unistd.h>

#include "raidfuse/ioq.h"

struct rec {
	struct rf_mio m;
	int ends;
};

static void rec_end(struct rf_mio *m)
{
	((struct rec *)m)->ends++;
}

/* A file of size bytes that is gone once closed. */
static inline int tmpfile_fd(size_t size)
{
	char path[] = "/tmp/rf-ioq-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

#endif
