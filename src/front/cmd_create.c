/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cmd_create.c - `raidfuse create CONFIG`: its options, then rf_create().
 *
 * create makes the member files the config names (member_size bytes of
 * zeros: an array of zeros has zero parity, so it starts in sync) and
 * writes md 1.2 superblocks on them (unless metadata = "none"): without
 * --assume-clean they record that a resync is due, as mdadm --create's do.
 * It checks the whole config and every member, and works out every
 * superblock, before it creates, truncates or writes anything, and leaves
 * existing non-empty members alone unless --force.  --bitmap=internal (or
 * array.bitmap = "internal") adds md's internal write-intent bitmap beside
 * each superblock, as mdadm --create --bitmap=internal does.
 *
 * What it does NOT do: check the members or write anything itself: it
 * parses the options, loads the config and hands both to rf_create()
 * (commands/create.c), which does all of that.
 */
#include <stdio.h>
#include <string.h>

#include "raidfuse/config.h"
#include "raidfuse/create.h"
#include "raidfuse/devopen.h"
#include "raidfuse/util.h"

#include "front/cli.h"

/* create's options into the variables of rf_cmd_create.  Returns -1 to go
 * on, else the exit status (0 after --help, EXIT_USAGE). */
static int create_options(int argc, char **argv, bool *force, bool *clean, const char **path,
			  const char **bitmap, const char **bitmap_chunk)
{
	enum { O_ASSUME_CLEAN = 256, O_BITMAP_CHUNK, O_UNSAFE_DIRS };
	static const struct option lo[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "assume-clean", no_argument, NULL, O_ASSUME_CLEAN },
		{ "allow-unsafe-dirs", no_argument, NULL, O_UNSAFE_DIRS },
		{ "bitmap", required_argument, NULL, 'b' },
		{ "bitmap-chunk", required_argument, NULL, O_BITMAP_CHUNK },
		OPT_HELP,
		OPT_END
	};
	int ch, rc = -1;

	while ((ch = rf_cli_opt_next(argc, argv, "-:fb:h", lo, &rc)) != -1) {
		switch (ch) {
		case 'f':
			*force = true;
			break;
		case O_ASSUME_CLEAN:
			*clean = true;
			break;
		case O_UNSAFE_DIRS:
			rf_devopen_allow_unsafe_dirs(true);
			break;
		case 'b':
			*bitmap = optarg;
			break;
		case O_BITMAP_CHUNK:
			*bitmap_chunk = optarg;
			break;
		case 1:
			if (*path)
				return rf_cli_usage_error("create: expected one CONFIG, got also '%s'", optarg);
			*path = optarg;
			break;
		}
	}
	return rc;
}

int rf_cmd_create(int argc, char **argv)
{
	struct rf_create_opts o = { .bitmap = -1 };
	const char *path = NULL, *bitmap = NULL, *bitmap_chunk = NULL;
	struct rf_config cfg;
	char err[1024];
	int ret;

	ret = create_options(argc, argv, &o.force, &o.assume_clean, &path, &bitmap, &bitmap_chunk);
	if (ret >= 0)
		return ret;
	if (!path)
		return rf_cli_usage_error("create: expected CONFIG");
	if (bitmap && strcmp(bitmap, "internal") && strcmp(bitmap, "none"))
		return rf_cli_usage_error("create: --bitmap takes internal or none, not '%s'", bitmap);
	if (bitmap)
		o.bitmap = !strcmp(bitmap, "internal");
	if (bitmap_chunk && (rf_parse_size(bitmap_chunk, 1024, &o.bitmap_chunk) ||
			     o.bitmap_chunk < 4096 || (o.bitmap_chunk & (o.bitmap_chunk - 1))))
		return rf_cli_usage_error("create: --bitmap-chunk takes a power of two of at least 4K, not '%s'",
					  bitmap_chunk);
	if (rf_config_load(path, &cfg, err, sizeof(err))) {
		fprintf(stderr, "raidfuse: %s\n", err);
		return 1;
	}
	ret = rf_create(path, &cfg, &o);
	rf_config_free(&cfg);
	return ret;
}
