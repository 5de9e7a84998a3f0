/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_config.c - libFuzzer harness for config parsing.
 *
 * Each input is written to a file in a private temporary directory and
 * loaded as raidfuse loads a config; the result must be a loaded config
 * (freed again) or an error with a message, and a failed load must leave
 * the struct zeroed.  Member paths are only resolved, never opened, so
 * nothing outside the directory is touched (an @include of another file is
 * read, like any config would read it).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raidfuse/config.h"

static char dir[] = "/tmp/rf-fuzz-config-XXXXXX";
static char path[64];

static void cleanup(void)
{
	unlink(path);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct rf_config zero;
	struct rf_config cfg;
	char err[1024];
	FILE *f;
	int r;

	if (!path[0]) {
		if (!mkdtemp(dir))
			abort();
		snprintf(path, sizeof(path), "%s/raid.conf", dir);
		atexit(cleanup);
	}
	f = fopen(path, "w");
	if (!f)
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
	err[0] = '\0';
	r = rf_config_load(path, &cfg, err, sizeof(err));
	if (r) {
		if (!err[0] && r != -ENOMEM)
			abort();
		if (memcmp(&cfg, &zero, sizeof(cfg)))
			abort();
		return 0;
	}
	if (!cfg.name || cfg.nmembers < 1 || cfg.nmembers > RF_MAX_MEMBERS)
		abort();
	rf_config_free(&cfg);
	return 0;
}
