/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test_json.c - the JSON writer: commas and colons at every depth, the
 * sticky misuse errors, numbers, and strings: every escape JSON needs,
 * UTF-8 kept as it is, and for every string of one and two bytes (all
 * 65,792 of them) and the edge cases of longer sequences, output that a
 * strict check of RFC 8259's string grammar accepts.  Then examine's JSON
 * of a 1.x and a 0.90 superblock: md's field names and values, a set name
 * that is not text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "fixture.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raidfuse/json.h"
#include "raidfuse/super.h"

struct cap {
	char *buf;
	size_t len;
	FILE *f;
	struct rf_json j;
};

static void cap_open(struct cap *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
	assert_non_null(c->f);
	rf_json_init(&c->j, c->f);
}

/* End the document; returns rf_json_end's result, c->buf the text. */
static int cap_close(struct cap *c)
{
	int r = rf_json_end(&c->j);

	fclose(c->f);
	return r;
}

/* One string value's output, without the quotes and the newline. */
static char *str_out(const char *s, size_t len, size_t *outlen)
{
	struct cap c;

	cap_open(&c);
	rf_json_str_len(&c.j, s, len);
	assert_int_equal(cap_close(&c), 0);
	assert_true(c.len >= 3);
	assert_int_equal(c.buf[0], '"');
	assert_int_equal(c.buf[c.len - 2], '"');
	assert_int_equal(c.buf[c.len - 1], '\n');
	memmove(c.buf, c.buf + 1, c.len - 3);
	c.buf[c.len - 3] = '\0';
	*outlen = c.len - 3;
	return c.buf;
}

/* A check of the output, written from the grammar, not from json.c: what
 * is between the quotes is unescaped printable ASCII but '"' and '\\',
 * one of JSON's escapes, or a well-formed UTF-8 sequence (decoded, not
 * overlong, not a surrogate, at most U+10FFFF). */
static int valid_json_chars(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i];

		if (c == '"' || c < 0x20)
			return 0;
		if (c == '\\') {
			if (i + 1 >= len)
				return 0;
			if (strchr("\"\\/bfnrt", s[i + 1]) && s[i + 1]) {
				i += 2;
				continue;
			}
			if (s[i + 1] != 'u' || i + 6 > len)
				return 0;
			for (int k = 2; k < 6; k++)
				if (!strchr("0123456789abcdefABCDEF", s[i + k]) || !s[i + k])
					return 0;
			i += 6;
			continue;
		}
		if (c < 0x80) {
			i++;
			continue;
		}
		int n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
		unsigned cp = n == 4 ? c & 7 : n == 3 ? c & 15 : c & 31;

		if (!n || c > 0xf7 || i + (size_t)n > len)
			return 0;
		for (int k = 1; k < n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			return 0;
		i += (size_t)n;
	}
	return 1;
}

static void expect_str(const char *in, size_t len, const char *want)
{
	size_t n;
	char *out = str_out(in, len, &n);

	assert_string_equal(out, want);
	free(out);
}

static void test_escapes(void **state)
{
	expect_str("plain", 5, "plain");
	expect_str("a\"b\\c", 5, "a\\\"b\\\\c");
	expect_str("\b\f\n\r\t", 5, "\\b\\f\\n\\r\\t");
	expect_str("\x01\x1f", 2, "\\u0001\\u001f");
	expect_str("a\0b", 3, "a\\u0000b");
	expect_str("/\x7f", 2, "/\x7f");        /* neither needs escaping */
	expect_str("", 0, "");
}

static void test_utf8_kept(void **state)
{
	/* 2, 3 and 4 bytes, the first and last of each range */
	expect_str("\xc2\x80\xdf\xbf", 4, "\xc2\x80\xdf\xbf");
	expect_str("\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf", 12,
		   "\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf");
	expect_str("\xf0\x90\x80\x80\xf4\x8f\xbf\xbf", 8, "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf");
	expect_str("caf\xc3\xa9", 5, "caf\xc3\xa9");
}

#define FFFD "\xef\xbf\xbd"

static void test_not_utf8(void **state)
{
	expect_str("\xff", 1, FFFD);
	expect_str("\x80", 1, FFFD);                            /* stray continuation */
	expect_str("\xc0\xaf", 2, FFFD FFFD);                   /* overlong '/' */
	expect_str("\xe0\x80\xaf", 3, FFFD FFFD FFFD);          /* overlong, 3 bytes */
	expect_str("\xed\xa0\x80", 3, FFFD FFFD FFFD);          /* surrogate U+D800 */
	expect_str("\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD); /* past U+10FFFF */
	expect_str("\xf5\x80", 2, FFFD FFFD);
	expect_str("a\xe2\x82", 3, "a" FFFD FFFD);              /* cut off at the end */
	expect_str("\xe2\x82z", 3, FFFD FFFD "z");              /* cut off by ASCII */
}

/* Every string of one or two bytes: valid output, and what was valid
 * UTF-8 (or plain ASCII) comes out unchanged. */
static void test_every_short_string(void **state)
{
	char in[2];
	size_t n;

	for (int a = 0; a < 256; a++) {
		for (int b = -1; b < 256; b++) {
			size_t len = b < 0 ? 1 : 2;
			char *out;

			in[0] = (char)a;
			in[1] = (char)b;
			out = str_out(in, len, &n);
			if (!valid_json_chars((const unsigned char *)out, n))
				fail_msg("bytes %02x %02x: invalid JSON string '%s'", a, b & 0xff, out);
			if (valid_json_chars((const unsigned char *)in, len) && memchr(in, '\\', len) == NULL &&
			    (n != len || memcmp(in, out, len)))
				fail_msg("bytes %02x %02x: valid text changed to '%s'", a, b & 0xff, out);
			free(out);
		}
	}
}

/* Random longer byte strings with a fixed seed: always valid. */
static void test_random_bytes(void **state)
{
	struct fx_rng rng;
	char in[64];
	size_t n;

	fx_rng_init(&rng, 13);
	for (int t = 0; t < 20000; t++) {
		size_t len = (size_t)(fx_rng_next(&rng) % 64);

		for (size_t i = 0; i < len; i++) {
			int r = (int)(fx_rng_next(&rng) >> 33);
			/* mostly high bytes, where UTF-8 goes wrong */
			in[i] = (char)(r % 4 ? 0x80 + (r >> 8) % 0x80 : (r >> 8) & 0xff);
		}
		char *out = str_out(in, len, &n);

		if (!valid_json_chars((const unsigned char *)out, n))
			fail_msg("case %d: invalid output '%s'", t, out);
		free(out);
	}
}

static void test_nesting(void **state)
{
	struct cap c;

	cap_open(&c);
	rf_json_obj(&c.j);
	rf_json_kstr(&c.j, "uuid", "a:b");
	rf_json_kint(&c.j, "level", -5);
	rf_json_kuint(&c.j, "events", 18446744073709551615ull);
	rf_json_kbool(&c.j, "degraded", false);
	rf_json_key(&c.j, "devices");
	rf_json_arr(&c.j);
	rf_json_obj(&c.j);
	rf_json_kstr(&c.j, "name", NULL);
	rf_json_obj_end(&c.j);
	rf_json_arr(&c.j);
	rf_json_arr_end(&c.j);
	rf_json_int(&c.j, 1);
	rf_json_arr_end(&c.j);
	rf_json_key(&c.j, "n");
	rf_json_num_text(&c.j, "12.5e3");
	rf_json_key(&c.j, "t");
	rf_json_num_text(&c.j, "012");
	rf_json_obj_end(&c.j);
	assert_int_equal(cap_close(&c), 0);
	assert_string_equal(c.buf, "{\"uuid\":\"a:b\",\"level\":-5,\"events\":18446744073709551615,"
				   "\"degraded\":false,\"devices\":[{\"name\":null},[],1],\"n\":12.5e3,"
				   "\"t\":\"012\"}\n");
	free(c.buf);
}

static void test_misuse(void **state)
{
	struct cap c;

	/* a value where a key is due */
	cap_open(&c);
	rf_json_obj(&c.j);
	rf_json_int(&c.j, 1);
	rf_json_obj_end(&c.j);
	assert_int_equal(cap_close(&c), -EINVAL);
	free(c.buf);
	/* a key in an array */
	cap_open(&c);
	rf_json_arr(&c.j);
	rf_json_key(&c.j, "k");
	assert_int_equal(cap_close(&c), -EINVAL);
	free(c.buf);
	/* the wrong end, and an unclosed document */
	cap_open(&c);
	rf_json_obj(&c.j);
	rf_json_arr_end(&c.j);
	assert_int_equal(cap_close(&c), -EINVAL);
	free(c.buf);
	cap_open(&c);
	rf_json_arr(&c.j);
	assert_int_equal(cap_close(&c), -EINVAL);
	free(c.buf);
	/* a key without its value, a second top-level value, nothing */
	cap_open(&c);
	rf_json_obj(&c.j);
	rf_json_key(&c.j, "k");
	rf_json_obj_end(&c.j);
	assert_int_equal(cap_close(&c), -EINVAL);
	free(c.buf);
	cap_open(&c);
	rf_json_int(&c.j, 1);
	rf_json_int(&c.j, 2);
	assert_int_equal(cap_close(&c), -EINVAL);
	free(c.buf);
	cap_open(&c);
	assert_int_equal(cap_close(&c), -EINVAL);
	free(c.buf);
	/* too deep */
	cap_open(&c);
	for (int i = 0; i <= RF_JSON_MAX_DEPTH; i++)
		rf_json_arr(&c.j);
	assert_int_equal(c.j.err, -EINVAL);
	assert_int_equal(cap_close(&c), -EINVAL);
	free(c.buf);
}

static void test_write_error(void **state)
{
	FILE *f = fopen("/dev/full", "w");
	struct rf_json j;

	if (!f)
		skip();
	rf_json_init(&j, f);
	rf_json_str(&j, "x");
	assert_int_equal(rf_json_end(&j), -EIO);
	fclose(f);
}

static void test_is_number(void **state)
{
	static const char *const yes[] = { "0", "-0", "12", "-3.25", "1e9", "2E-3", "0.5e+1", NULL };
	static const char *const no[] = { "", "-", "01", "1.", ".5", "1e", "+1", "0x10", "1 ", "none",
					  "12 / 34", NULL };

	for (int i = 0; yes[i]; i++)
		assert_true(rf_json_is_number(yes[i]));
	for (int i = 0; no[i]; i++)
		if (rf_json_is_number(no[i]))
			fail_msg("'%s' taken for a number", no[i]);
}

/* examine --json's object for sb, in a static buffer (one line). */
static const char *examine_json(const struct rf_sb *sb, const char *path)
{
	static char out[4096];
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(rf_sb_examine_json(f, path, sb), 0);
	fclose(f);
	assert_true(len > 0 && len < sizeof(out) && buf[len - 1] == '\n');
	assert_null(memchr(buf, '\n', len - 1));      /* one line */
	memcpy(out, buf, len + 1);
	free(buf);
	return out;
}

static void expect_field(const char *json, const char *field)
{
	if (!strstr(json, field))
		fail_msg("no %s in %s", field, json);
}

static void test_examine_json(void **state)
{
	static struct rf_sb sb;
	const char *j;

	memset(&sb, 0, sizeof(sb));
	sb.kind = RF_SB_12;
	for (int i = 0; i < 16; i++) {
		sb.uuid[i] = (uint8_t)(0x10 + i);
		sb.device_uuid[i] = (uint8_t)(0xa0 + i);
	}
	memcpy(sb.name, "host:\"a\xff", 8);
	sb.level = 6;
	sb.layout = 18;
	sb.chunk_sectors = 128;
	sb.raid_disks = 4;
	sb.size = sb.data_size = 1000;
	sb.data_offset = 2048;
	sb.sb_offset = 8;
	sb.member_sectors = 4096;
	sb.events = 42;
	sb.resync_offset = 500;
	sb.role = RF_SB_ROLE_SPARE;
	sb.dev_number = 4;
	sb.max_dev = 5;
	sb.dev_roles[0] = 0;
	sb.dev_roles[1] = 1;
	sb.dev_roles[2] = RF_SB_ROLE_FAULTY;
	sb.dev_roles[3] = 3;
	sb.dev_roles[4] = RF_SB_ROLE_SPARE;
	sb.feature_map = RF_SB_FEAT_RECOVERY;
	sb.recovery_offset = 256;
	j = examine_json(&sb, "d4.img");
	expect_field(j, "{\"device\":\"d4.img\",\"metadata_version\":\"1.2\",");
	expect_field(j, "\"uuid\":\"10111213:14151617:18191a1b:1c1d1e1f\"");
	expect_field(j, "\"name\":\"host:\\\"a\xef\xbf\xbd\"");
	expect_field(j, "\"device_uuid\":\"a0a1a2a3:a4a5a6a7:a8a9aaab:acadaeaf\"");
	expect_field(j, "\"level\":\"raid6\",\"raid_disks\":4,\"layout\":18,\"layout_name\":\"left-symmetric-6\"");
	expect_field(j, "\"chunk_size\":65536,\"events\":42,\"array_state\":\"active\",\"resync_offset\":500");
	expect_field(j, "\"data_offset\":2048");
	expect_field(j, "\"recovery_offset\":256");
	expect_field(j, "\"dev_role\":\"spare\"");
	expect_field(j, "\"device_map\":\"AA.A\"");
	/* in sync, an active role */
	sb.resync_offset = RF_SB_MAX_SECTOR;
	sb.role = 3;
	sb.feature_map = 0;
	j = examine_json(&sb, "d3.img");
	expect_field(j, "\"array_state\":\"clean\",\"resync_offset\":null");
	expect_field(j, "\"recovery_offset\":null");
	expect_field(j, "\"dev_role\":3");
	/* 0.90: its own counts, no 1.x fields; uuid as four host words */
	memset(&sb, 0, sizeof(sb));
	sb.kind = RF_SB_090;
	uint32_t w[4] = { 0x11111111, 0x22222222, 0x33333333, 0x44444444 };
	memcpy(sb.uuid, w, 16);
	sb.level = 1;
	sb.raid_disks = 2;
	sb.clean = true;
	sb.role = 1;
	sb.v090.md_minor = 3;
	sb.v090.nr_disks = sb.v090.active = sb.v090.working = 2;
	j = examine_json(&sb, "m1.img");
	expect_field(j, "\"metadata_version\":\"0.90\"");
	expect_field(j, "\"uuid\":\"11111111:22222222:33333333:44444444\"");
	expect_field(j, "\"level\":\"raid1\"");
	expect_field(j, "\"array_state\":\"clean\"");
	expect_field(j, "\"dev_role\":1");
	expect_field(j, "\"preferred_minor\":3,\"total_devices\":2,\"active_devices\":2");
	if (strstr(j, "device_uuid") || strstr(j, "data_offset") || strstr(j, "\"name\""))
		fail_msg("1.x fields in a 0.90 object: %s", j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_utf8_kept),
		cmocka_unit_test(test_not_utf8),
		cmocka_unit_test(test_every_short_string),
		cmocka_unit_test(test_random_bytes),
		cmocka_unit_test(test_nesting),
		cmocka_unit_test(test_misuse),
		cmocka_unit_test(test_write_error),
		cmocka_unit_test(test_is_number),
		cmocka_unit_test(test_examine_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
