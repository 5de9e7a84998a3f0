/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fstab.h - the mount helper's form: `raidfuse CONFIG MOUNTPOINT -o OPTS`,
 * as mount.fuse3 runs it for an /etc/fstab line of type fuse.raidfuse. */
#ifndef RAIDFUSE_FSTAB_H
#define RAIDFUSE_FSTAB_H

#include <stdbool.h>
#include <stddef.h>

/* Whether argv (argv[1] no command) is that form: at least CONFIG and
 * MOUNTPOINT, CONFIG "raidfuse#..." or an existing file, or MOUNTPOINT an
 * existing directory. */
bool rf_fstab_form(int argc, char **argv);

/* argv in that form as `raidfuse mount`'s arguments: *out (malloc'd,
 * NULL-terminated, *outc of them; out[0] "mount") holds raidfuse's own
 * options (--ro, --freeze, --log ..., -f ...), "-o" with the FUSE options
 * left, then "--" CONFIG MOUNTPOINT.  Generic mount options that mean
 * nothing to a FUSE mount are dropped.  0, or -EINVAL with a message
 * naming the option or argument in err (-ENOMEM: out of memory).
 * Every string of *out is a copy of its own: rf_fstab_free(). */
int rf_fstab_args(int argc, char **argv, int *outc, char ***out, char *err, size_t errlen);

/* What rf_fstab_args() gave. */
void rf_fstab_free(char **v);

#endif
