/* SPDX-License-Identifier: GPL-2.0-or-later */
/* config.c - read and validate the array definition (libconfig).
 *
 * The only file that includes libconfig.h.  rf_config_load() reads the whole
 * file, checks every key and fills a struct rf_config the rest of raidfuse
 * can trust without looking back at the text: a known level, md's layout
 * number, a power-of-two chunk, 2..RF_MAX_MEMBERS members in role order with
 * absolute paths, no member twice, no more members "missing" than the level
 * survives, and tuning values inside md's own limits.
 *
 * Errors stop at the first problem and say where it is, the way a compiler
 * does: "FILE:LINE: key 'array.level': must be one of ... (got 3)".  Lines
 * come from libconfig (config_setting_source_line); a key that is missing is
 * reported at the line of its group.  Unknown keys are errors, not warnings:
 * a misspelt "chunk-size" silently falling back to the default would build a
 * different array from the one the user meant.
 *
 * Sizes are strings with a unit suffix ("512K", "8s", "1G") or plain
 * integers.  A plain number is in the unit md uses for that key: KiB for
 * chunk_size, 512-byte sectors for data_offset, size and member_size, bytes
 * for stripe_size.
 *
 * Relative member paths (and @include paths) are taken relative to the
 * directory holding the config file, which is made absolute here, so the
 * daemon may change its working directory later.
 *
 * What this file does NOT do: open, create or size members (the array module
 * does), or check that the geometry fits the members.  The only file system
 * calls besides reading the config are realpath() on the config directory and
 * on member paths, to spot the same member listed twice under two names.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libconfig.h>

#include "raidfuse/array.h"
#include "raidfuse/config.h"
#include "raidfuse/ctl.h"
#include "raidfuse/devopen.h"
#include "raidfuse/nbd.h"
#include "raidfuse/super.h"
#include "raidfuse/util.h"

#define SECTOR 512ULL

/* Defaults, md's where md has one (raid5.c, md.c). */
#define DEF_CHUNK               (512 * 1024)
/* (the others: core/config_data.c) */

/* Chunk: at least a page, as md; at most what chunk_bytes holds. */
#define MIN_CHUNK               4096ULL
#define MAX_CHUNK               (1ULL << 31)
/* md's limits: raid5_set_cache_size(), raid5_store_stripe_size(),
 * raid5_store_group_thread_cnt(). */
#define MIN_STRIPE_CACHE_SIZE   17
#define MAX_STRIPE_CACHE_SIZE   32768
#define MAX_THREADS             64

/* What one load needs to report an error. */
struct ld {
	const char *path;       /* as the caller gave it */
	char *dir;              /* absolute directory of the file */
	char *err;
	size_t errlen;
};

/* Format "FILE:LINE: key 'KEY': why" into the caller's buffer and return
 * -EINVAL.  s may be NULL (no line known); key may be NULL. */
__attribute__((format(printf, 4, 5)))
static int fail(struct ld *ld, const config_setting_t *s, const char *key,
		const char *fmt, ...)
{
	const char *file = ld->path;
	size_t n = 0;
	va_list ap;
	int r;

	if (!ld->err || !ld->errlen)
		return -EINVAL;
	if (s && config_setting_source_file(s))
		file = config_setting_source_file(s);
	if (s && config_setting_source_line(s))
		r = snprintf(ld->err, ld->errlen, "%s:%u: ", file,
			     (unsigned)config_setting_source_line(s));
	else
		r = snprintf(ld->err, ld->errlen, "%s: ", file);
	if (r > 0)
		n = (size_t)r < ld->errlen ? (size_t)r : ld->errlen - 1;
	if (key) {
		r = snprintf(ld->err + n, ld->errlen - n, "key '%s': ", key);
		if (r > 0)
			n += (size_t)r < ld->errlen - n ? (size_t)r : ld->errlen - n - 1;
	}
	va_start(ap, fmt);
	vsnprintf(ld->err + n, ld->errlen - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static const char *type_name(const config_setting_t *s)
{
	switch (config_setting_type(s)) {
	case CONFIG_TYPE_GROUP:  return "a group";
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64:  return "an integer";
	case CONFIG_TYPE_FLOAT:  return "a float";
	case CONFIG_TYPE_STRING: return "a string";
	case CONFIG_TYPE_BOOL:   return "a boolean";
	case CONFIG_TYPE_ARRAY:  return "an array";
	case CONFIG_TYPE_LIST:   return "a list";
	}
	return "nothing";
}

static bool is_int(const config_setting_t *s)
{
	return config_setting_type(s) == CONFIG_TYPE_INT ||
	       config_setting_type(s) == CONFIG_TYPE_INT64;
}

/* The value as the user wrote it, for "(got ...)". */
static const char *val_text(const config_setting_t *s, char *buf, size_t len)
{
	if (is_int(s))
		snprintf(buf, len, "%lld", config_setting_get_int64(s));
	else if (config_setting_type(s) == CONFIG_TYPE_STRING)
		snprintf(buf, len, "\"%s\"", config_setting_get_string(s));
	else
		snprintf(buf, len, "%s", type_name(s));
	return buf;
}

/* Every child of group g must be named in allowed (NULL-terminated). */
static int check_keys(struct ld *ld, const config_setting_t *g,
		      const char *prefix, const char *const *allowed)
{
	int i, n = config_setting_length(g);

	for (i = 0; i < n; i++) {
		const config_setting_t *s = config_setting_get_elem(g, i);
		const char *name = config_setting_name(s);
		const char *const *a;
		char key[256], known[256];

		for (a = allowed; *a; a++)
			if (!strcmp(name, *a))
				break;
		if (*a)
			continue;
		snprintf(key, sizeof(key), "%s%s", prefix, name);
		known[0] = '\0';
		for (a = allowed; *a; a++) {
			size_t len = strlen(known);

			snprintf(known + len, sizeof(known) - len, "%s%s",
				 a == allowed ? "" : ", ", *a);
		}
		return fail(ld, s, key, "unknown key (known here: %s)", known);
	}
	return 0;
}

/* array.KEY = ( 1, 2 ): a set of member indexes (bit i: member i) into
 * *out.  0, or the error of fail(). */
static int member_set(struct ld *ld, const config_setting_t *arr, const char *key, int nmembers, uint64_t *out)
{
	const config_setting_t *s = config_setting_get_member(arr, key);
	char name[64], buf[128];
	int n;

	if (!s)
		return 0;
	snprintf(name, sizeof(name), "array.%s", key);
	n = config_setting_is_aggregate(s) ? config_setting_length(s) : -1;
	if (n < 0)
		return fail(ld, s, name, "must be a list of member indexes, %s = ( 1, 2 ); (got %s)", key,
			    val_text(s, buf, sizeof(buf)));
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
		long long k = is_int(e) ? config_setting_get_int64(e) : -1;

		if (k < 0 || k >= nmembers)
			return fail(ld, e, name, "must list member indexes from 0 to %d (got %s)", nmembers - 1,
				    val_text(e, buf, sizeof(buf)));
		*out |= 1ull << k;
	}
	return 0;
}

static int get_int(struct ld *ld, const config_setting_t *s, const char *key,
		   long long lo, long long hi, int *out)
{
	long long v;

	if (!is_int(s))
		return fail(ld, s, key, "must be an integer (got %s)", type_name(s));
	v = config_setting_get_int64(s);
	if (v < lo || v > hi)
		return fail(ld, s, key, "must be %lld..%lld (got %lld)", lo, hi, v);
	*out = (int)v;
	return 0;
}

/* A size: string through rf_parse_size(), or a non-negative integer in
 * default_unit bytes. */
static int get_size(struct ld *ld, const config_setting_t *s, const char *key,
		    uint64_t default_unit, uint64_t *out)
{
	if (is_int(s)) {
		long long v = config_setting_get_int64(s);

		if (v < 0)
			return fail(ld, s, key, "must not be negative (got %lld)", v);
		if (__builtin_mul_overflow((uint64_t)v, default_unit, out))
			return fail(ld, s, key, "too large (got %lld)", v);
		return 0;
	}
	if (config_setting_type(s) == CONFIG_TYPE_STRING) {
		const char *str = config_setting_get_string(s);

		if (rf_parse_size(str, default_unit, out) < 0)
			return fail(ld, s, key,
				    "not a size: \"%s\" (digits, then optionally s, K, M, G or T)",
				    str);
		return 0;
	}
	return fail(ld, s, key,
		    "must be a size, a string like \"512K\" or an integer (got %s)",
		    type_name(s));
}

/* "/a/./b//../c" -> "/a/c", in place.  Only for comparing members whose
 * directories do not exist yet: ".." is taken lexically. */
static void normalize(char *p)
{
	char *out = p, *in = p;

	while (*in) {
		char *seg;
		size_t len;

		while (*in == '/')
			in++;
		seg = in;
		while (*in && *in != '/')
			in++;
		len = (size_t)(in - seg);
		if (!len || (len == 1 && seg[0] == '.'))
			continue;
		if (len == 2 && seg[0] == '.' && seg[1] == '.') {
			while (out > p && *--out != '/')
				;
			continue;
		}
		*out++ = '/';
		memmove(out, seg, len);
		out += len;
	}
	if (out == p)
		*out++ = '/';
	*out = '\0';
}

/* The name under which two member paths are compared: realpath() of the
 * file, else of its directory plus the last component, else the path with
 * "." and ".." folded.  NULL only when out of memory. */
static char *canonical(const char *path)
{
	char *r, *dir, *slash, *rd;

	if (rf_nbd_is_uri(path))
		return strdup(path);    /* an NBD export: its URI, as written */
	r = realpath(path, NULL);
	if (r)
		return r;
	dir = strdup(path);
	if (!dir)
		return NULL;
	normalize(dir);
	slash = strrchr(dir, '/');
	if (slash && slash != dir && slash[1]) {
		*slash = '\0';
		rd = realpath(dir, NULL);
		if (rd) {
			if (asprintf(&r, "%s/%s", strcmp(rd, "/") ? rd : "", slash + 1) < 0)
				r = NULL;
			free(rd);
			free(dir);
			return r;
		}
		*slash = '/';
	}
	return dir;
}

/* A member or spare as the config names it: an NBD URI as it is, a path
 * relative to the config's directory made absolute.  NULL: no memory. */
static char *resolve(const struct ld *ld, const char *p)
{
	char *r;

	if (p[0] == '/' || rf_nbd_is_uri(p))
		return strdup(p);
	if (asprintf(&r, "%s/%s", strcmp(ld->dir, "/") ? ld->dir : "", p) < 0)
		return NULL;
	return r;
}

static int min_members(int level, int layout)
{
	int copies;

	switch (level) {
	case 4:
	case 5:  return 2;      /* md: two members are a mirror in parity layout */
	case 6:  return 4;
	case 10:
		copies = (layout & 255) * ((layout >> 8) & 255);
		return copies > 2 ? copies : 2;
	}
	return 2;
}

static const char *layout_hint(int level)
{
	switch (level) {
	case 4:  return "md's raid4 layout is parity-last; leave the key out";
	case 5:  return "left-asymmetric, right-asymmetric, left-symmetric, right-symmetric, parity-first, parity-last";
	case 6:  return "the raid5 names, their -6 variants, ddf-zero-restart, ddf-N-restart, ddf-N-continue";
	case 10: return "n2, f2, o2, n3, ... (near, far, offset, then the number of copies)";
	}
	return "this level has one layout; leave the key out";
}

static int load_members(struct ld *ld, const config_setting_t *s,
			struct rf_config *cfg)
{
	char *canon[RF_MAX_MEMBERS] = { NULL };
	int i, j, n, nmissing = 0, need, tol, r = 0;
	char key[64];

	if (config_setting_type(s) != CONFIG_TYPE_LIST &&
	    config_setting_type(s) != CONFIG_TYPE_ARRAY)
		return fail(ld, s, "array.members",
			    "must be a list of paths, ( \"d0.img\", ... ) (got %s)",
			    type_name(s));
	n = config_setting_length(s);
	need = min_members(cfg->level, cfg->layout);
	if (n > RF_MAX_MEMBERS)
		return fail(ld, s, "array.members", "at most %d members (got %d)",
			    RF_MAX_MEMBERS, n);
	if (n < need)
		return fail(ld, s, "array.members",
			    "raid%d%s needs at least %d members (got %d)", cfg->level,
			    cfg->level == 10 ? " with this layout" : "", need, n);

	for (i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, i);
		const char *p;

		snprintf(key, sizeof(key), "array.members[%d]", i);
		cfg->member_line[i] = config_setting_source_line(e);
		if (!cfg->member_line[i])
			cfg->member_line[i] = config_setting_source_line(s);
		if (config_setting_type(e) != CONFIG_TYPE_STRING)
			return fail(ld, e, key, "must be a string, a path or \"missing\" (got %s)",
				    type_name(e));
		p = config_setting_get_string(e);
		if (!*p)
			return fail(ld, e, key, "empty path (write \"missing\" for an absent member)");
		cfg->nmembers = i + 1;
		if (!strcmp(p, "missing")) {
			nmissing++;
			continue;
		}
		cfg->members[i] = resolve(ld, p);
		if (!cfg->members[i])
			return -ENOMEM;
	}

	/* With md superblocks their roles place the files, and a config
	 * written once keeps working as spares take over slots: whether
	 * enough are there is the assembly's question (and create's). */
	tol = rf_config_tolerated(cfg->level, cfg->layout, n);
	if (nmissing > tol && cfg->metadata == RF_SB_NONE)
		return fail(ld, s, "array.members",
			    "%d of %d members are \"missing\" but raid%d with %d members survives at most %d",
			    nmissing, n, cfg->level, n, tol);

	for (i = 0; i < n && !r; i++) {
		if (!cfg->members[i])
			continue;
		canon[i] = canonical(cfg->members[i]);
		if (!canon[i]) {
			r = -ENOMEM;
			break;
		}
		for (j = 0; j < i; j++) {
			if (!canon[j] || strcmp(canon[i], canon[j]))
				continue;
			snprintf(key, sizeof(key), "array.members[%d]", i);
			r = fail(ld, config_setting_get_elem(s, i), key,
				 "%s is already member %d (line %d)",
				 cfg->members[i], j, cfg->member_line[j]);
			break;
		}
	}
	for (i = 0; i < n; i++)
		free(canon[i]);
	return r;
}

/* spares = ( "s0.img", ... ): files that take a failed member's slot and
 * are rebuilt there.  None may be a member or another spare. */
static int load_spares(struct ld *ld, const config_setting_t *s, struct rf_config *cfg)
{
	char key[64], *canon = NULL, *other = NULL;
	int i, j, n, r = 0;

	if (config_setting_type(s) != CONFIG_TYPE_LIST && config_setting_type(s) != CONFIG_TYPE_ARRAY)
		return fail(ld, s, "array.spares", "must be a list of paths, ( \"s0.img\", ... ) (got %s)",
			    type_name(s));
	n = config_setting_length(s);
	if (n > RF_MAX_MEMBERS)
		return fail(ld, s, "array.spares", "at most %d spares (got %d)", RF_MAX_MEMBERS, n);
	for (i = 0; i < n && !r; i++) {
		const config_setting_t *e = config_setting_get_elem(s, i);
		const char *p;

		snprintf(key, sizeof(key), "array.spares[%d]", i);
		if (config_setting_type(e) != CONFIG_TYPE_STRING || !*config_setting_get_string(e))
			return fail(ld, e, key, "must be a path (got %s)", type_name(e));
		p = config_setting_get_string(e);
		cfg->spares[i] = resolve(ld, p);
		if (!cfg->spares[i] || !(canon = canonical(cfg->spares[i])))
			return -ENOMEM;
		cfg->nspares = i + 1;
		for (j = 0; j < cfg->nmembers + i && !r; j++) {
			const char *q = j < cfg->nmembers ? cfg->members[j] : cfg->spares[j - cfg->nmembers];

			if (!q || !(other = canonical(q))) {
				r = q ? -ENOMEM : 0;
				continue;
			}
			if (!strcmp(canon, other))
				r = fail(ld, e, key, "%s is already %s %d", cfg->spares[i],
					 j < cfg->nmembers ? "member" : "spare",
					 j < cfg->nmembers ? j : j - cfg->nmembers);
			free(other);
		}
		free(canon);
	}
	return r;
}

/* array.name: the image file's, array.img unless given. */
static int array_name(struct ld *ld, const config_setting_t *arr, struct rf_config *cfg)
{
	const config_setting_t *s;

	s = config_setting_get_member(arr, "name");
	if (!s) {
		cfg->name = strdup("array.img");
		if (!cfg->name)
			return -ENOMEM;
	} else if (config_setting_type(s) != CONFIG_TYPE_STRING) {
		return fail(ld, s, "array.name", "must be a string (got %s)", type_name(s));
	} else {
		const char *nm = config_setting_get_string(s);

		if (!*nm || strchr(nm, '/') || !strcmp(nm, ".") ||
		    !strcmp(nm, "..") || strlen(nm) > NAME_MAX)
			return fail(ld, s, "array.name",
				    "must be a plain file name: not empty, no '/', not \".\" or \"..\" (got \"%s\")",
				    nm);
		if (rf_ctl_root_name_taken(nm))
			return fail(ld, s, "array.name",
				    "\"%s\" is a name the control files take beside the image (%s, %s/): "
				    "it would hide them; pick another", nm, RF_CTL_ROOT_MDSTAT, RF_CTL_ROOT_MD);
		cfg->name = strdup(nm);
		if (!cfg->name)
			return -ENOMEM;
	}
	return 0;
}

/* array.metadata: the md superblocks `create` writes. */
static int array_metadata(struct ld *ld, const config_setting_t *arr, struct rf_config *cfg)
{
	const config_setting_t *s;

	cfg->metadata = RF_SB_12;
	s = config_setting_get_member(arr, "metadata");
	if (s) {
		const char *m = config_setting_type(s) == CONFIG_TYPE_STRING ?
				config_setting_get_string(s) : NULL;

		cfg->metadata_line = config_setting_source_line(s);
		if (m && (!strcmp(m, "1.2") || !strcmp(m, "default")))
			cfg->metadata = RF_SB_12;
		else if (m && !strcmp(m, "none"))
			cfg->metadata = RF_SB_NONE;
		else
			return fail(ld, s, "array.metadata",
				    "must be \"1.2\" (md superblocks, the default) or \"none\" (got %s)",
				    m ? m : type_name(s));
	}
	return 0;
}

/* array.level. */
static int array_level(struct ld *ld, const config_setting_t *arr, struct rf_config *cfg)
{
	const config_setting_t *s;
	char buf[64];

	s = config_setting_get_member(arr, "level");
	if (!s)
		return fail(ld, arr, "array.level", "missing (0, 1, 4, 5, 6 or 10)");
	if (!is_int(s))
		return fail(ld, s, "array.level", "must be an integer (got %s)", type_name(s));
	switch (config_setting_get_int64(s)) {
	case 0: case 1: case 4: case 5: case 6: case 10:
		cfg->level = config_setting_get_int(s);
		break;
	default:
		return fail(ld, s, "array.level", "must be one of 0, 1, 4, 5, 6, 10 (got %s)",
			    val_text(s, buf, sizeof(buf)));
	}
	return 0;
}

/* array.layout: md's name, or md's number (the level's default if absent). */
static int array_layout(struct ld *ld, const config_setting_t *arr, struct rf_config *cfg)
{
	const config_setting_t *s;
	char buf[64];

	s = config_setting_get_member(arr, "layout");
	if (!s) {
		cfg->layout = rf_layout_parse(cfg->level, NULL);
		if (cfg->layout < 0)
			return fail(ld, arr, "array.layout",
				    "raid%d has no default layout; give one", cfg->level);
	} else {
		const char *text;

		if (is_int(s))
			text = val_text(s, buf, sizeof(buf));
		else if (config_setting_type(s) == CONFIG_TYPE_STRING)
			text = config_setting_get_string(s);
		else
			return fail(ld, s, "array.layout", "must be a string (got %s)",
				    type_name(s));
		cfg->layout = rf_layout_parse(cfg->level, text);
		if (cfg->layout < 0)
			return fail(ld, s, "array.layout",
				    "\"%s\" is not a raid%d layout (%s)", text,
				    cfg->level, layout_hint(cfg->level));
	}
	return 0;
}

/* array.chunk_size: checked for every level, unused by raid1. */
static int array_chunk(struct ld *ld, const config_setting_t *arr, struct rf_config *cfg)
{
	const config_setting_t *s;
	uint64_t v;
	char buf[64];
	int r;

	v = DEF_CHUNK;
	s = config_setting_get_member(arr, "chunk_size");
	if (s) {
		r = get_size(ld, s, "array.chunk_size", 1024, &v);
		if (r)
			return r;
		if (!rf_is_pow2(v) || v < MIN_CHUNK || v > MAX_CHUNK)
			return fail(ld, s, "array.chunk_size",
				    "must be a power of two from 4K to 2G (got %s)",
				    val_text(s, buf, sizeof(buf)));
	}
	cfg->chunk_bytes = cfg->level == 1 ? 0 : (uint32_t)v;
	return 0;
}

/* array.members (required) and array.spares. */
static int array_members(struct ld *ld, const config_setting_t *arr, struct rf_config *cfg)
{
	const config_setting_t *s;
	int r;

	s = config_setting_get_member(arr, "members");
	if (!s)
		return fail(ld, arr, "array.members",
			    "missing (the member files in role order)");
	r = load_members(ld, s, cfg);
	if (r)
		return r;
	s = config_setting_get_member(arr, "spares");
	if (s) {
		r = load_spares(ld, s, cfg);
		if (r)
			return r;
	}
	return 0;
}

/* array.data_offset, and array.size: 0 or absent = as much as fits, at
 * least one chunk (page) per member. */
static int array_area(struct ld *ld, const config_setting_t *arr, struct rf_config *cfg)
{
	const config_setting_t *s;
	uint64_t unit;
	char buf[64];
	int r;

	s = config_setting_get_member(arr, "data_offset");
	if (s) {
		r = get_size(ld, s, "array.data_offset", SECTOR, &cfg->data_offset);
		if (r)
			return r;
		cfg->data_offset_given = true;
		if (cfg->data_offset % 4096)
			return fail(ld, s, "array.data_offset",
				    "must be a multiple of 4096 bytes (got %s = %llu bytes)",
				    val_text(s, buf, sizeof(buf)),
				    (unsigned long long)cfg->data_offset);
	}

	unit = cfg->chunk_bytes ? cfg->chunk_bytes : 4096;
	s = config_setting_get_member(arr, "size");
	if (s) {
		r = get_size(ld, s, "array.size", SECTOR, &cfg->size);
		if (r)
			return r;
		if (cfg->size && cfg->size < unit)
			return fail(ld, s, "array.size",
				    "less than one %s (%llu bytes) per member (got %s)",
				    cfg->chunk_bytes ? "chunk" : "page",
				    (unsigned long long)unit, val_text(s, buf, sizeof(buf)));
	}
	return 0;
}

/* array.bitmap and array.bitmap_chunk (the internal bitmap `create`
 * writes), array.consistency_policy: md's --consistency-policy for
 * `create`: "resync" (the default), "bitmap" (as bitmap = "internal"), or
 * "ppl" (md's partial parity log: raid5, 1.2 metadata, no bitmap). */
static int array_consistency(struct ld *ld, const config_setting_t *arr, struct rf_config *cfg)
{
	const config_setting_t *s;
	char buf[64];
	int r;

	s = config_setting_get_member(arr, "bitmap");
	if (s) {
		const char *m = config_setting_type(s) == CONFIG_TYPE_STRING ?
				config_setting_get_string(s) : NULL;

		if (m && (!strcmp(m, "internal") || !strcmp(m, "none")))
			cfg->bitmap = !strcmp(m, "internal");
		else
			return fail(ld, s, "array.bitmap", "must be \"internal\" or \"none\" (got %s)",
				    m ? m : type_name(s));
		if (cfg->bitmap && (cfg->level == 0 || cfg->metadata == RF_SB_NONE))
			return fail(ld, s, "array.bitmap", "md keeps no bitmap for %s",
				    cfg->level == 0 ? "raid0" : "metadata \"none\"");
	}
	s = config_setting_get_member(arr, "bitmap_chunk");
	if (s) {
		r = get_size(ld, s, "array.bitmap_chunk", 1024, &cfg->bitmap_chunk);
		if (r)
			return r;
		if (cfg->bitmap_chunk < 4096 || cfg->bitmap_chunk > (1ull << 31) ||
		    (cfg->bitmap_chunk & (cfg->bitmap_chunk - 1)))
			return fail(ld, s, "array.bitmap_chunk", "must be a power of two from 4K to 2G (got %s)",
				    val_text(s, buf, sizeof(buf)));
	}

	s = config_setting_get_member(arr, "consistency_policy");
	if (s) {
		const char *m = config_setting_type(s) == CONFIG_TYPE_STRING ?
				config_setting_get_string(s) : NULL;

		if (!m || (strcmp(m, "resync") && strcmp(m, "bitmap") && strcmp(m, "ppl")))
			return fail(ld, s, "array.consistency_policy", "must be \"resync\", \"bitmap\" or \"ppl\" (got %s)",
				    m ? m : type_name(s));
		if (!strcmp(m, "bitmap")) {
			if (cfg->level == 0 || cfg->metadata == RF_SB_NONE)
				return fail(ld, s, "array.consistency_policy", "md keeps no bitmap for %s",
					    cfg->level == 0 ? "raid0" : "metadata \"none\"");
			cfg->bitmap = true;
		}
		cfg->ppl = !strcmp(m, "ppl");
		if (cfg->ppl && cfg->level != 5)
			return fail(ld, s, "array.consistency_policy", "md keeps a partial parity log for raid5 only "
				    "(level is %d)", cfg->level);
		if (cfg->ppl && cfg->metadata != RF_SB_12)
			return fail(ld, s, "array.consistency_policy", "a partial parity log needs md metadata 1.2");
		if (cfg->ppl && cfg->bitmap)
			return fail(ld, s, "array.consistency_policy", "md keeps no partial parity log beside "
				    "an internal bitmap (array.bitmap)");
	}
	return 0;
}

/* How members are used: array.member_timeout (seconds, an integer, or
 * "500ms" / "30s"), array.member_io ("auto", "direct" or "buffered":
 * devopen.h), md's per-device flags by member index, failfast = ( 1,
 * 2 ) and write_mostly = ( 1 ), and array.backup_file. */
static int array_member_opts(struct ld *ld, const config_setting_t *arr, struct rf_config *cfg)
{
	const config_setting_t *s;
	char buf[64];
	int r;

	s = config_setting_get_member(arr, "member_timeout");
	if (s) {
		const char *t = config_setting_type(s) == CONFIG_TYPE_STRING ? config_setting_get_string(s) : NULL;
		unsigned long long ms = 0;
		unsigned tms = 0;

		if (is_int(s) && config_setting_get_int64(s) > 0 && config_setting_get_int64(s) <= 3600)
			ms = (unsigned long long)config_setting_get_int64(s) * 1000;
		else if (t && !rf_parse_timeout_ms(t, &tms))
			ms = tms;
		if (ms < 10 || ms > 3600000)
			return fail(ld, s, "array.member_timeout",
				    "must be 10ms..3600s: seconds, or a string like \"500ms\" or \"30s\" (got %s)",
				    val_text(s, buf, sizeof(buf)));
		cfg->member_timeout_ms = (unsigned)ms;
	}

	s = config_setting_get_member(arr, "member_io");
	if (s) {
		const char *t = config_setting_type(s) == CONFIG_TYPE_STRING ? config_setting_get_string(s) : NULL;
		int mode = t ? rf_member_io_parse(t) : -EINVAL;

		if (mode < 0)
			return fail(ld, s, "array.member_io", "must be \"auto\", \"direct\" or \"buffered\" (got %s)",
				    val_text(s, buf, sizeof(buf)));
		cfg->member_io = mode;
	}

	/* array.backup_file: mdadm's --backup-file for a reshape in place
	 * (services/reshape.c), relative to the config's directory. */
	s = config_setting_get_member(arr, "backup_file");
	if (s) {
		const char *t = config_setting_type(s) == CONFIG_TYPE_STRING ? config_setting_get_string(s) : NULL;

		if (!t || !*t)
			return fail(ld, s, "array.backup_file", "must be a file's path (got %s)",
				    val_text(s, buf, sizeof(buf)));
		cfg->backup_file = resolve(ld, t);
		if (!cfg->backup_file)
			return -ENOMEM;
	}

	r = member_set(ld, arr, "failfast", cfg->nmembers, &cfg->failfast);
	if (!r)
		r = member_set(ld, arr, "write_mostly", cfg->nmembers, &cfg->write_mostly);
	if (r)
		return r;
	return 0;
}

/* array.member_size: only what `create` makes; must hold the data
 * offset and the size (or a chunk, a page) after it. */
static int array_member_size(struct ld *ld, const config_setting_t *arr, struct rf_config *cfg)
{
	const config_setting_t *s;
	uint64_t unit = cfg->chunk_bytes ? cfg->chunk_bytes : 4096;
	char buf[64];
	int r;

	s = config_setting_get_member(arr, "member_size");
	if (s) {
		uint64_t need;

		r = get_size(ld, s, "array.member_size", SECTOR, &cfg->member_size);
		if (r)
			return r;
		if (__builtin_add_overflow(cfg->data_offset, cfg->size ? cfg->size : unit, &need) ||
		    cfg->member_size < need)
			return fail(ld, s, "array.member_size",
				    "%s is %llu bytes, no room for data_offset (%llu bytes)%s after it",
				    val_text(s, buf, sizeof(buf)),
				    (unsigned long long)cfg->member_size,
				    (unsigned long long)cfg->data_offset,
				    cfg->size ? " and size" : cfg->chunk_bytes ? " and one chunk" : " and one page");
	}
	return 0;
}

static int load_array(struct ld *ld, const config_setting_t *arr,
		      struct rf_config *cfg)
{
	static const char *const keys[] = {
		"name", "level", "layout", "chunk_size", "members", "spares",
		"member_size", "data_offset", "size", "metadata", "bitmap", "bitmap_chunk", "member_timeout",
		"failfast", "write_mostly", "consistency_policy", "member_io", "backup_file", NULL
	};
	static int (*const steps[])(struct ld *, const config_setting_t *, struct rf_config *) = {
		array_name, array_metadata, array_level, array_layout, array_chunk, array_members,
		array_area, array_consistency, array_member_opts, array_member_size,
	};
	size_t i;
	int r;

	r = check_keys(ld, arr, "array.", keys);
	for (i = 0; !r && i < sizeof(steps) / sizeof(steps[0]); i++)
		r = steps[i](ld, arr, cfg);
	return r;
}

static long online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? n : 1;
}


/* group_thread_cnt threads in each of worker_groups groups (0: one per
 * CPU, as the engine makes them) stay within rf_max_worker_threads(). */
static int check_worker_threads(struct ld *ld, const config_setting_t *t, const struct rf_config *cfg)
{
	long groups = cfg->worker_groups ? cfg->worker_groups : online_cpus();
	const config_setting_t *s = config_setting_get_member(t, "group_thread_cnt");
	int max = rf_max_worker_threads();

	if (groups > MAX_THREADS)
		groups = MAX_THREADS;
	/* unset: assembly's choice stays within the bound (array.c) */
	if (cfg->group_thread_cnt < 0 || groups * cfg->group_thread_cnt <= max)
		return 0;
	return fail(ld, s, "tuning.group_thread_cnt",
		    "%d thread(s) in each of %ld worker group(s) make %ld worker threads: more than the %d this machine "
		    "takes (4 per CPU, at least %d, at most %d: more threads than cores only add context switches)",
		    cfg->group_thread_cnt, groups, groups * cfg->group_thread_cnt, max, RF_MIN_WORKER_THREADS,
		    RF_MAX_WORKER_THREADS);
}

static int load_tuning(struct ld *ld, const config_setting_t *t,
		       struct rf_config *cfg)
{
	static const char *const keys[] = {
		"stripe_cache_size", "group_thread_cnt", "worker_groups",
		"stripe_size", "rmw_level", NULL
	};
	static const struct {
		const char *name;
		long long lo, hi;
		size_t off;             /* of an int in struct rf_config */
	} ints[] = {
		{ "stripe_cache_size", MIN_STRIPE_CACHE_SIZE, MAX_STRIPE_CACHE_SIZE,
		  offsetof(struct rf_config, stripe_cache_size) },
		{ "group_thread_cnt", 0, MAX_THREADS,
		  offsetof(struct rf_config, group_thread_cnt) },
		{ "worker_groups", 0, MAX_THREADS,
		  offsetof(struct rf_config, worker_groups) },
		{ "rmw_level", 0, 2, offsetof(struct rf_config, rmw_level) },
	};
	const config_setting_t *s;
	char buf[64], key[64];
	size_t i;
	int r;

	r = check_keys(ld, t, "tuning.", keys);
	if (r)
		return r;
	for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		s = config_setting_get_member(t, ints[i].name);
		if (!s)
			continue;
		snprintf(key, sizeof(key), "tuning.%s", ints[i].name);
		r = get_int(ld, s, key, ints[i].lo, ints[i].hi,
			    (int *)((char *)cfg + ints[i].off));
		if (r)
			return r;
	}
	r = check_worker_threads(ld, t, cfg);
	if (r)
		return r;
	s = config_setting_get_member(t, "stripe_size");
	if (s) {
		uint64_t v;

		r = get_size(ld, s, "tuning.stripe_size", 1, &v);
		if (r)
			return r;
		if (!rf_is_pow2(v) || v < 4096 || v > 65536)
			return fail(ld, s, "tuning.stripe_size",
				    "must be a power of two from 4096 to 65536 bytes (got %s)",
				    val_text(s, buf, sizeof(buf)));
		cfg->stripe_size = (uint32_t)v;
	}
	return 0;
}

/* faults = ( { member = 1; error = "EIO"; ops = "write"; after = 100; }, ... );
 * one group per member, each key as md/dev-NAME/fault takes it (fault.h):
 * the value goes to rf_fault_spec_set() as text, so both take the same
 * words and say the same thing about a bad one. */
static int load_faults(struct ld *ld, const config_setting_t *list, struct rf_config *cfg)
{
	static const char *const keys[] = {
		"member", "error", "rate", "every", "ops", "after", "count", "delay_us", "offset",
		"length", "seed", NULL
	};
	int i, k, j, n = config_setting_length(list), r;
	char key[64], val[64], why[256];

	if (config_setting_type(list) != CONFIG_TYPE_LIST)
		return fail(ld, list, "faults", "must be a list, faults = ( { member = 0; ... } ); (got %s)",
			    type_name(list));
	cfg->faults = calloc(n ? (size_t)n : 1, sizeof(*cfg->faults));
	if (!cfg->faults)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const config_setting_t *g = config_setting_get_elem(list, i), *s;
		struct rf_config_fault *f = &cfg->faults[i];

		snprintf(key, sizeof(key), "faults.[%d]", i);
		if (config_setting_type(g) != CONFIG_TYPE_GROUP)
			return fail(ld, g, key, "must be a group { member = 0; error = \"EIO\"; ... } (got %s)",
				    type_name(g));
		snprintf(key, sizeof(key), "faults.[%d].", i);
		r = check_keys(ld, g, key, keys);
		if (r)
			return r;
		s = config_setting_get_member(g, "member");
		snprintf(key, sizeof(key), "faults.[%d].member", i);
		if (!s)
			return fail(ld, g, key, "missing (the member's slot, 0..%d)", cfg->nmembers - 1);
		r = get_int(ld, s, key, 0, cfg->nmembers - 1, &f->member);
		if (r)
			return r;
		for (j = 0; j < i; j++)
			if (cfg->faults[j].member == f->member)
				return fail(ld, s, key, "member %d has a faults entry already", f->member);
		rf_fault_spec_init(&f->spec);
		for (k = 0; k < config_setting_length(g); k++) {
			const char *name;

			s = config_setting_get_elem(g, k);
			name = config_setting_name(s);
			if (!strcmp(name, "member"))
				continue;
			snprintf(key, sizeof(key), "faults.[%d].%s", i, name);
			if (is_int(s))
				snprintf(val, sizeof(val), "%lld", config_setting_get_int64(s));
			else if (config_setting_type(s) == CONFIG_TYPE_FLOAT)
				snprintf(val, sizeof(val), "%.17g", config_setting_get_float(s));
			else if (config_setting_type(s) == CONFIG_TYPE_STRING)
				snprintf(val, sizeof(val), "%s", config_setting_get_string(s));
			else
				return fail(ld, s, key, "must be a string or a number (got %s)", type_name(s));
			if (rf_fault_spec_set(&f->spec, name, val, why, sizeof(why)))
				return fail(ld, s, key, "%s", why);
		}
		cfg->nfaults = i + 1;
	}
	return 0;
}

/* Open the file ourselves first: libconfig says only "file I/O error". */
static int check_readable(struct ld *ld)
{
	struct stat st;
	FILE *f;
	int e;

	f = fopen(ld->path, "r");
	if (!f) {
		e = errno;
		fail(ld, NULL, NULL, "cannot read config file: %s", strerror(e));
		return -e;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		fail(ld, NULL, NULL, "cannot read config file: %s", strerror(EISDIR));
		return -EISDIR;
	}
	fclose(f);
	return 0;
}

/* Absolute directory of the (existing) config file.  The file itself is not
 * resolved: a symlinked config finds its members beside the link. */
static int config_dir(struct ld *ld)
{
	char *dir = strdup(ld->path), *slash;
	int e;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	ld->dir = realpath(dir, NULL);
	e = errno;
	free(dir);
	if (!ld->dir) {
		fail(ld, NULL, NULL, "cannot resolve its directory: %s", strerror(e));
		return -e;
	}
	return 0;
}

/* cfg is overwritten, not freed first.  On error it is left zeroed (nothing
 * to free) and err holds the message; err may be NULL. */
int rf_config_load(const char *path, struct rf_config *cfg, char *err, size_t errlen)
{
	static const char *const top[] = { "array", "tuning", "faults", NULL };
	struct ld ld = { .path = path, .err = err, .errlen = errlen };
	const config_setting_t *root, *s;
	config_t c;
	int r;

	rf_config_defaults(cfg);
	if (err && errlen)
		err[0] = '\0';
	cfg->path = strdup(path);
	if (!cfg->path)
		return -ENOMEM;

	r = check_readable(&ld);
	if (r)
		goto out_free;
	r = config_dir(&ld);
	if (r)
		goto out_free;

	config_init(&c);
	/* @include "x.conf" is relative to this file's directory.  libconfig
	 * 1.5 prepends include_dir to absolute paths too, so those break. */
	config_set_include_dir(&c, ld.dir);
	if (!config_read_file(&c, path)) {
		if (config_error_type(&c) == CONFIG_ERR_FILE_IO) {
			fail(&ld, NULL, NULL, "cannot read config file");
			r = -EIO;
		} else {
			if (err && errlen)
				snprintf(err, errlen, "%s:%d: %s",
					 config_error_file(&c) ?: path,
					 config_error_line(&c),
					 config_error_text(&c) ?: "syntax error");
			r = -EINVAL;
		}
		goto out_destroy;
	}

	root = config_root_setting(&c);
	r = check_keys(&ld, root, "", top);
	if (r)
		goto out_destroy;

	s = config_setting_get_member(root, "array");
	if (!s) {
		r = fail(&ld, NULL, "array", "missing (the group array: { name, level, members, ... })");
		goto out_destroy;
	}
	if (config_setting_type(s) != CONFIG_TYPE_GROUP) {
		r = fail(&ld, s, "array", "must be a group, array: { ... }; (got %s)",
			 type_name(s));
		goto out_destroy;
	}
	r = load_array(&ld, s, cfg);
	if (r)
		goto out_destroy;

	s = config_setting_get_member(root, "tuning");
	if (s) {
		if (config_setting_type(s) != CONFIG_TYPE_GROUP) {
			r = fail(&ld, s, "tuning", "must be a group, tuning: { ... }; (got %s)",
				 type_name(s));
			goto out_destroy;
		}
		r = load_tuning(&ld, s, cfg);
		if (r)
			goto out_destroy;
	}
	s = config_setting_get_member(root, "faults");
	if (s)
		r = load_faults(&ld, s, cfg);

out_destroy:
	config_destroy(&c);
out_free:
	free(ld.dir);
	if (r)
		rf_config_free(cfg);
	return r;
}

int rf_parse_timeout_ms(const char *s, unsigned *ms)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (!*end || !strcmp(end, "s"))
		v = v > 3600 ? 0 : v * 1000;
	else if (strcmp(end, "ms"))
		return -EINVAL;
	if (v < 10 || v > 3600000)
		return -EINVAL;
	*ms = (unsigned)v;
	return 0;
}
