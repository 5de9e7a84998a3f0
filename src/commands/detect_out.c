/* SPDX-License-Identifier: GPL-2.0-or-later */
/* detect_out.c - what `raidfuse detect` prints and writes.
 *
 * The ranked candidates of rf_detect() as a table with each one's
 * evidence, as one JSON object (the same fields), and as a raidfuse
 * config for one of them, ready for `raidfuse mount --overlay DIR CONFIG`
 * (or plain `mount` on copies of the members).  Nothing
 * here reads a member; the config names the members by absolute path
 * (a config's relative paths are relative to the config file), with
 * metadata "none" so that no superblock is written on them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raidfuse/detect.h"
#include "raidfuse/json.h"

static const char *member_name(const struct rf_detect_result *r, int idx)
{
	const char *p, *s;

	if (idx < 0 || !r->paths[idx])
		return "missing";
	p = r->paths[idx];
	s = strrchr(p, '/');
	return s && s[1] ? s + 1 : p;
}

static void chunk_text(const struct rf_detect_cand *c, char *buf, size_t len)
{
	if (!c->g.chunk_sectors)
		snprintf(buf, len, "-");
	else if (c->g.chunk_sectors >= 2048)
		snprintf(buf, len, "%uM", c->g.chunk_sectors / 2048);
	else
		snprintf(buf, len, "%uK", c->g.chunk_sectors / 2);
}

static void ratio_text(char *buf, size_t len, int ok, int n)
{
	if (n)
		snprintf(buf, len, "%d/%d", ok, n);
	else
		snprintf(buf, len, "-");
}

static void size_text(uint64_t bytes, char *buf, size_t len)
{
	if (bytes >= 10ull << 30)
		snprintf(buf, len, "%.1f GiB", bytes / 1073741824.0);
	else
		snprintf(buf, len, "%.1f MiB", bytes / 1048576.0);
}

void rf_detect_print(FILE *out, const struct rf_detect_result *r)
{
	char lay[32], ch[16], red[24], cont[24], fs[24], sz[32];
	int i, j;

	size_text(r->bytes_read, sz, sizeof(sz));
	fprintf(out, "read %s from %d members in %.2f s\n", sz, r->nmembers, r->seconds);
	if (r->level_evidence[0])
		fprintf(out, "level: %s\n", r->level_evidence);
	if (r->hints[0])
		fprintf(out, "hints (not trusted): %s\n", r->hints);
	if (r->ncand) {
		fprintf(out, "%2s %6s %-7s %-20s %5s %10s %12s %9s %9s %9s %-12s  %s\n", "#", "score", "level",
			"layout", "chunk", "offset", "array size", "parity", "runs on", "fs meta", "fs",
			"members in role order");
	}
	for (i = 0; i < r->ncand; i++) {
		const struct rf_detect_cand *c = &r->cand[i];

		rf_layout_name(c->g.level, c->g.layout, lay, sizeof(lay));
		chunk_text(c, ch, sizeof(ch));
		ratio_text(red, sizeof(red), c->red_ok, c->red_n);
		ratio_text(cont, sizeof(cont), c->cont_ok, c->cont_n);
		ratio_text(fs, sizeof(fs), c->fs_ok, c->fs_n);
		size_text(c->g.array_sectors * 512, sz, sizeof(sz));
		fprintf(out, "%2d %6.1f raid%-3d %-20s %5s %9llus %12s %9s %9s %9s %-12s ", i + 1, c->score,
			c->g.level, c->g.level == 0 || c->g.level == 1 ? "-" : lay, ch,
			(unsigned long long)(c->data_offset / 512), sz, red, cont, fs, c->fs[0] ? c->fs : "-");
		for (j = 0; j < c->g.raid_disks; j++)
			fprintf(out, " %s", member_name(r, c->role[j]));
		fprintf(out, "\n");
	}
	fprintf(out, "%s\n", r->verdict);
}

static void json_ratio(struct rf_json *j, const char *key, int ok, int n)
{
	rf_json_key(j, key);
	rf_json_obj(j);
	rf_json_kint(j, "ok", ok);
	rf_json_kint(j, "of", n);
	rf_json_obj_end(j);
}

int rf_detect_print_json(FILE *out, const struct rf_detect_result *r)
{
	struct rf_json j;
	char lay[32], num[32];
	int i, k;

	rf_json_init(&j, out);
	rf_json_obj(&j);
	rf_json_kbool(&j, "confident", r->confident);
	rf_json_kstr(&j, "verdict", r->verdict);
	rf_json_kuint(&j, "bytes_read", r->bytes_read);
	snprintf(num, sizeof(num), "%.3f", r->seconds);
	rf_json_key(&j, "seconds");
	rf_json_num_text(&j, num);
	rf_json_kstr(&j, "level_evidence", r->level_evidence);
	rf_json_kstr(&j, "hints", r->hints);
	rf_json_key(&j, "candidates");
	rf_json_arr(&j);
	for (i = 0; i < r->ncand; i++) {
		const struct rf_detect_cand *c = &r->cand[i];

		rf_json_obj(&j);
		snprintf(num, sizeof(num), "%.1f", c->score);
		rf_json_key(&j, "score");
		rf_json_num_text(&j, num);
		rf_json_kint(&j, "level", c->g.level);
		rf_json_kint(&j, "layout", c->g.layout);
		rf_json_kstr(&j, "layout_name", rf_layout_name(c->g.level, c->g.layout, lay, sizeof(lay)));
		rf_json_kuint(&j, "chunk_kib", c->g.chunk_sectors / 2);
		rf_json_kint(&j, "raid_disks", c->g.raid_disks);
		rf_json_kuint(&j, "data_offset_sectors", c->data_offset / 512);
		rf_json_kuint(&j, "array_sectors", c->g.array_sectors);
		rf_json_key(&j, "members");
		rf_json_arr(&j);
		for (k = 0; k < c->g.raid_disks; k++)
			rf_json_str(&j, c->role[k] >= 0 ? r->paths[c->role[k]] : NULL);
		rf_json_arr_end(&j);
		json_ratio(&j, "parity", c->red_ok, c->red_n);
		json_ratio(&j, "runs_on", c->cont_ok, c->cont_n);
		rf_json_kstr(&j, "fs", c->fs[0] ? c->fs : NULL);
		json_ratio(&j, "fs_metadata", c->fs_ok, c->fs_n);
		rf_json_kbool(&j, "start_holds_data", c->start_data);
		rf_json_obj_end(&j);
	}
	rf_json_arr_end(&j);
	rf_json_obj_end(&j);
	return rf_json_end(&j) ? -EIO : 0;
}

/* s as a libconfig string: '"' and '\\' escaped. */
static void conf_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

int rf_detect_write_config(const char *file, const struct rf_detect_result *r, int idx, char *err,
			   size_t errlen)
{
	const struct rf_detect_cand *c;
	char lay[32], ch[16], real[PATH_MAX];
	FILE *f;
	int k, fd;

	if (idx < 0 || idx >= r->ncand) {
		snprintf(err, errlen, "%s: no candidate %d to write", file, idx + 1);
		return -EINVAL;
	}
	c = &r->cand[idx];
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s%s", file, strerror(errno),
			 errno == EEXIST ? " (not overwritten)" : "");
		return -errno;
	}
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		snprintf(err, errlen, "%s: %s", file, strerror(ENOMEM));
		return -ENOMEM;
	}
	fprintf(f, "# Written by raidfuse detect: candidate %d, score %.1f (%s).\n", idx + 1, c->score,
		r->verdict);
	fprintf(f, "# metadata = \"none\": no superblock is written on the members.  mount serves the\n"
		   "# array read-write: to keep the members as they are, serve it with\n"
		   "# raidfuse mount --overlay DIR (writes go to DIR) or work on copies.\n");
	fprintf(f, "array: {\n\tname = \"array.img\";\n\tlevel = %d;\n", c->g.level);
	if (c->g.level != 0 && c->g.level != 1)
		fprintf(f, "\tlayout = \"%s\";\n", rf_layout_name(c->g.level, c->g.layout, lay, sizeof(lay)));
	if (c->g.chunk_sectors) {
		chunk_text(c, ch, sizeof(ch));
		fprintf(f, "\tchunk_size = \"%s\";\n", ch);
	}
	fprintf(f, "\tmembers = ( ");
	for (k = 0; k < c->g.raid_disks; k++) {
		const char *p = c->role[k] >= 0 ? r->paths[c->role[k]] : NULL;

		if (k)
			fprintf(f, ", ");
		if (!p)
			fprintf(f, "\"missing\"");
		else
			conf_str(f, realpath(p, real) ? real : p);
	}
	fprintf(f, " );\n\tdata_offset = \"%llus\";\n\tmetadata = \"none\";\n};\n",
		(unsigned long long)(c->data_offset / 512));
	if (fclose(f)) {
		snprintf(err, errlen, "%s: %s", file, strerror(errno));
		return -EIO;
	}
	return 0;
}
