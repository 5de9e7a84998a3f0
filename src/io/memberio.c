/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memberio.c - the words of a member's IO mode (devopen.h enum
 * rf_member_io): what array.member_io and md/dev-NAME/io_mode take and
 * show.  Apart from devopen.c so that the config parser (and its fuzzer)
 * need nothing of opening members.
 */
#include <errno.h>
#include <string.h>

#include "raidfuse/devopen.h"

static const char *const io_mode_names[] = {
	[RF_MEMBER_IO_AUTO] = "auto",
	[RF_MEMBER_IO_DIRECT] = "direct",
	[RF_MEMBER_IO_BUFFERED] = "buffered",
};

int rf_member_io_parse(const char *s)
{
	int i;

	for (i = 0; i < (int)(sizeof(io_mode_names) / sizeof(io_mode_names[0])); i++)
		if (!strcmp(s, io_mode_names[i]))
			return i;
	return -EINVAL;
}

const char *rf_member_io_name(int mode)
{
	return mode >= 0 && mode <= RF_MEMBER_IO_BUFFERED ? io_mode_names[mode] : "?";
}
