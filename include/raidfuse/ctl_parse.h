/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ctl_parse.h - the text a control file under md/ takes, parsed without
 * an array: what every store does before it asks the engine for anything.
 *
 * Each function reads one NUL-terminated value (rf_ctl_parse_value() makes
 * it from the bytes of a write) and either fills its result and returns
 * 0, or returns -EINVAL (-ENAMETOOLONG, -E2BIG where said) and leaves the
 * result as it was.  None of them allocates, logs or keeps state, so a
 * fuzzer can run them by the million.
 */
#ifndef RAIDFUSE_CTL_PARSE_H
#define RAIDFUSE_CTL_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* The value of one write of len bytes at buf, as sysfs takes it: one
 * trailing newline dropped, the rest copied into val (size bytes) and
 * NUL-terminated; *vlen is its length.  0; -E2BIG when it does not fit
 * (size - 1 bytes at most; *vlen still says how long it was); -EINVAL
 * when it holds a NUL byte. */
int rf_ctl_parse_value(const char *buf, size_t len, char *val, size_t size, size_t *vlen);

/* md's kstrtoint: decimal digits with an optional leading '+', at most
 * INT_MAX; nothing else (no sign, blank or second newline). */
int rf_ctl_parse_int(const char *s, int *out);

/* md/array_state: the words the engine acts on. */
enum rf_ctl_array_state {
	RF_CTL_STATE_SUSPENDED,
	RF_CTL_STATE_ACTIVE,
};
int rf_ctl_parse_array_state(const char *s, enum rf_ctl_array_state *out);

/* md/sync_action: one of the words of rf_sync_action_parse() (sync.h),
 * as an enum rf_sync_action, or -EINVAL.  The value has lost its newline
 * already: one more is refused, as by every other file. */
int rf_ctl_parse_sync_action(const char *s);

/* md/sync_speed_min, sync_speed_max: KiB/s as rf_ctl_parse_int(), or
 * "system" (0: back to the default). */
int rf_ctl_parse_speed(const char *s, unsigned *kibs);

/* md/resync_start: sectors (decimal digits, no sign) or "none"
 * (UINT64_MAX, md's MaxSector). */
int rf_ctl_parse_sectors(const char *s, uint64_t *out);

/* md/component_size, md/array_size: KiB (decimal digits, no sign; at
 * most what fits in 64-bit sectors), or word ("max", "default") as
 * UINT64_MAX. */
int rf_ctl_parse_kib(const char *s, const char *word, uint64_t *out);

/* md/bitmap/time_base: seconds, with at most 4 decimals as md's
 * strict_strtoul_scaled(…, 4) takes them ("5", "0.5", "2.0001"), into
 * whole milliseconds (rounded down); at most a day. */
int rf_ctl_parse_time_base(const char *s, unsigned *ms);

/* md/safe_mode_delay: seconds with at most 3 decimals, as md's
 * safe_delay_store() takes them ("0.200", "2", "0"), into ms; at most a
 * day. */
int rf_ctl_parse_safe_mode_delay(const char *s, unsigned *ms);

/* md/dev-NAME/state: the words md's state_store takes that raidfuse acts
 * on, NULL-terminated; the parse gives the word's index. */
extern const char *const rf_ctl_dev_state_words[];
int rf_ctl_parse_dev_state(const char *s, int *word);

/* md/new_dev: a member path: not empty, shorter than PATH_MAX
 * (-ENAMETOOLONG). */
int rf_ctl_parse_path(const char *s);

/* The directory entry "rdN" (N a plain decimal below max: no sign, no
 * leading zero): N, or -1 for any other name. */
int rf_ctl_parse_rd_slot(const char *entry, int max);

#endif
