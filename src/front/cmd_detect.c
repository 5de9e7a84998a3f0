/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cmd_detect.c - `raidfuse detect`: the array the members are, from their
 * contents alone.
 *
 * It parses detect's options and prints what rf_detect() found: the
 * ranked candidates (level, member order, chunk, layout, data offset and
 * size), as text or one JSON object, and with --write-config a config for
 * the best one.  Exit 1 when no candidate is a confident answer.
 *
 * What it does NOT do: read or judge the members (commands/detect.c does,
 * reading only samples), or write to them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raidfuse/detect.h"
#include "raidfuse/devopen.h"
#include "raidfuse/util.h"

#include "front/cli.h"

int rf_cmd_detect(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "level", required_argument, NULL, 'l' },
		{ "members", required_argument, NULL, 'n' },
		{ "max-offset", required_argument, NULL, 'm' },
		{ "write-config", required_argument, NULL, 'w' },
		{ "allow-unsafe-dirs", no_argument, NULL, O_ALLOW_UNSAFE },
		OPT_JSON,
		OPT_HELP,
		OPT_END
	};
	struct rf_detect_opts o = { .level = -1, .max_offset = 64ull << 20 };
	struct rf_detect_result *r;
	const char *members[RF_MAX_MEMBERS], *conf = NULL;
	char err[1024], *end;
	int n = 0, ch, rc = -1, ret;
	bool json = false;
	long v;

	while ((ch = rf_cli_opt_next(argc, argv, "-:l:n:m:w:Jh", lo, &rc)) != -1) {
		switch (ch) {
		case 'l':
			v = strtol(optarg, &end, 10);
			if (!strncmp(optarg, "raid", 4))
				v = strtol(optarg + 4, &end, 10);
			if (*end || (v != 0 && v != 1 && v != 4 && v != 5 && v != 6 && v != 10))
				return rf_cli_usage_error("detect: --level '%s' is not 0, 1, 4, 5, 6 or 10", optarg);
			o.level = (int)v;
			break;
		case 'n':
			v = strtol(optarg, &end, 10);
			if (*end || v < 2 || v > RF_MAX_MEMBERS)
				return rf_cli_usage_error("detect: --members '%s' is not 2 to %d", optarg, RF_MAX_MEMBERS);
			o.members = (int)v;
			break;
		case 'm':
			if (rf_parse_size(optarg, 1, &o.max_offset))
				return rf_cli_usage_error("detect: --max-offset '%s' is not a size", optarg);
			break;
		case 'w':
			conf = optarg;
			break;
		case O_ALLOW_UNSAFE:
			rf_devopen_allow_unsafe_dirs(true);
			break;
		case 'J':
			json = true;
			break;
		case 1:
			if (n >= RF_MAX_MEMBERS)
				return rf_cli_usage_error("detect: more than %d members ('%s')", RF_MAX_MEMBERS, optarg);
			members[n++] = optarg;
			break;
		}
	}
	if (rc >= 0)
		return rc;
	if (n < 2)
		return rf_cli_usage_error("detect: expected two or more MEMBER... (\"missing\" for one that is not there)");
	r = malloc(sizeof(*r));
	if (!r)
		return 1;
	ret = rf_detect(members, n, &o, r, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "raidfuse: %s\n", err);
		free(r);
		return 1;
	}
	if (json ? rf_detect_print_json(stdout, r) : (rf_detect_print(stdout, r), 0))
		ret = 1;
	if (conf && r->ncand && rf_detect_write_config(conf, r, 0, err, sizeof(err))) {
		fprintf(stderr, "raidfuse: %s\n", err);
		ret = 1;
	}
	ret = ret || !r->confident;
	free(r);
	return ret;
}
