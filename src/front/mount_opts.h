/* SPDX-License-Identifier: GPL-2.0-or-later */
/* mount_opts.h - `-o OPTS` of raidfuse mount and assemble, split in two.
 *
 * fstab.c reads OPTS with libfuse's option parser (fuse_opt_parse(),
 * which splits at ',' and unescapes "\," and "\\"), as it reads the
 * fstab form's words:
 *
 *   - raidfuse's own key, io_uring=auto|on|off (the transport), is taken
 *     out; the last one given wins; any other value, an empty one or a
 *     bare "io_uring" is an error naming the word;
 *   - every other word goes on to libfuse's -o as it came, escaped again
 *     (fuse_opt_add_opt_escaped()), so that libfuse reads back the same
 *     words; empty words (",,") are dropped;
 *   - allow_other and allow_root are noted as well as passed on: with
 *     other users on the mount, fuse_serve.c asks for default_permissions.
 *
 * This header speaks raidfuse's types only.  libfuse's headers stay in
 * the FUSE module: fuse_lowlevel.h in fuse.c and the files beside it
 * (fuse_int.h: the session and the replies), fuse_opt.h in fstab.c (the option words), so the command
 * line (main.c, cmd_*.c) and the unit tests of the parser see neither.
 *
 * What it does NOT do: check the words meant for libfuse (its
 * fuse_session_new() refuses one it does not know, naming it), or read
 * the fstab form's words (rf_fstab_args(): fstab.h).
 */
#ifndef RAIDFUSE_FRONT_MOUNT_OPTS_H
#define RAIDFUSE_FRONT_MOUNT_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rf_mount_opts {
	int uring;              /* enum rf_uring_mode (fuse_uring.h); RF_URING_AUTO without io_uring= */
	bool others;            /* allow_other or allow_root was given */
	uint32_t max_read;      /* max_read=BYTES: the largest read the kernel sends; 0: not given */
	char *fuse;             /* the words for libfuse's -o, comma-separated and escaped; NULL: none */
};

/* Split opts (NULL: none) into *mo (rf_mount_opts_free() it, also after
 * an error).  0; -EINVAL with a message naming the word in err ("-o
 * io_uring=maybe: io_uring wants auto, on or off"); -ENOMEM. */
int rf_mount_opts_parse(const char *opts, struct rf_mount_opts *mo, char *err, size_t errlen);

void rf_mount_opts_free(struct rf_mount_opts *mo);

#endif
