/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fuzz_fault.c - libFuzzer harness for fault specs (md/dev-NAME/fault and
 * the config's faults list both go through rf_fault_parse()).
 *
 * Input: the text of one spec (cut at the first NUL, as a control-file
 * value cannot hold one).  It must parse, or be refused with a message;
 * a parsed spec must keep fault.h's ranges, and its text (rf_fault_format)
 * must parse back to a spec that formats to the same text.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "raidfuse/fault.h"

static void check(int cond)
{
	if (!cond)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char text[4097];
	struct rf_fault_spec s, s2;
	char err[512], a[1024], b[1024];
	size_t n = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
	int r;

	memcpy(text, data, n);
	text[n] = '\0';
	err[0] = '\0';
	memset(&s, 0xa5, sizeof(s));
	r = rf_fault_parse(text, &s, err, sizeof(err));
	if (r) {
		check(r == -EINVAL && err[0]);
		return 0;
	}
	check(s.rate >= 0 && s.rate <= 1);
	check(s.every >= 1);
	check(s.ops && !(s.ops & ~7u));
	check(s.delay_us <= RF_FAULT_MAX_DELAY_US);
	check(s.error >= 0);
	r = rf_fault_format(&s, a, sizeof(a));
	check(r > 0 && (size_t)r == strlen(a));
	r = rf_fault_parse(a, &s2, err, sizeof(err));
	check(r == 0);
	check(rf_fault_spec_active(&s) == rf_fault_spec_active(&s2));
	r = rf_fault_format(&s2, b, sizeof(b));
	check(r > 0 && !strcmp(a, b));
	/* Too small a buffer says so, never writes past it. */
	check(rf_fault_format(&s, b, (size_t)r) == -EOVERFLOW);
	return 0;
}
