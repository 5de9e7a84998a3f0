/* SPDX-License-Identifier: GPL-2.0-or-later */
/* json.c - the JSON writer behind --json (json.h).
 *
 * Purpose: let examine, status and ctl print what they know as JSON that
 * any parser takes (jq, Python's json), without a library for the little
 * that is needed: objects, arrays, strings, integers, booleans, null.
 *
 * Invariants: at every depth j->any[] says whether a comma is due before
 * the next member; inside an object a value is only written after a key
 * (j->key), and a key only where a member may start.  Whatever bytes a
 * string holds, what is written is valid JSON in UTF-8: the escaping below
 * is the whole of RFC 8259's string grammar, and bytes that are not UTF-8
 * become U+FFFD instead of making the output invalid.
 *
 * What it does NOT do: parse JSON, pretty-print (jq does), keep the
 * output in memory (it streams to a FILE), or check that keys are unique.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "raidfuse/json.h"

void rf_json_init(struct rf_json *j, FILE *out)
{
	memset(j, 0, sizeof(*j));
	j->out = out;
}

static void misuse(struct rf_json *j)
{
	if (!j->err)
		j->err = -EINVAL;
}

/* Before a value: the comma, and the check that a value may go here. */
static bool value_start(struct rf_json *j)
{
	if (j->err)
		return false;
	if (j->done) {
		misuse(j);
		return false;
	}
	if (j->depth && j->open[j->depth - 1] == '{') {
		if (!j->key) {
			misuse(j);
			return false;
		}
		j->key = false;
		return true;
	}
	if (j->depth && j->any[j->depth - 1])
		fputc(',', j->out);
	if (j->depth)
		j->any[j->depth - 1] = true;
	return true;
}

/* After a value: at depth 0 the document is complete. */
static void value_end(struct rf_json *j)
{
	if (!j->depth)
		j->done = true;
}

static void open_(struct rf_json *j, char c)
{
	if (!value_start(j))
		return;
	if (j->depth >= RF_JSON_MAX_DEPTH) {
		misuse(j);
		return;
	}
	fputc(c, j->out);
	j->open[j->depth] = c;
	j->any[j->depth] = false;
	j->depth++;
}

static void close_(struct rf_json *j, char c)
{
	if (j->err)
		return;
	if (!j->depth || j->open[j->depth - 1] != c || j->key) {
		misuse(j);
		return;
	}
	fputc(c == '{' ? '}' : ']', j->out);
	j->depth--;
	value_end(j);
}

void rf_json_obj(struct rf_json *j)
{
	open_(j, '{');
}

void rf_json_obj_end(struct rf_json *j)
{
	close_(j, '{');
}

void rf_json_arr(struct rf_json *j)
{
	open_(j, '[');
}

void rf_json_arr_end(struct rf_json *j)
{
	close_(j, '[');
}

/* The bytes of the string, escaped, between the quotes. */
static void put_escaped(FILE *out, const unsigned char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0, n, k;

	while (i < len) {
		unsigned char c = s[i];
		unsigned char lo = 0x80, hi = 0xbf;

		if (c < 0x80) {
			switch (c) {
			case '"':  fputs("\\\"", out); break;
			case '\\': fputs("\\\\", out); break;
			case '\b': fputs("\\b", out); break;
			case '\f': fputs("\\f", out); break;
			case '\n': fputs("\\n", out); break;
			case '\r': fputs("\\r", out); break;
			case '\t': fputs("\\t", out); break;
			default:
				if (c < 0x20) {
					fputs("\\u00", out);
					fputc(hex[c >> 4], out);
					fputc(hex[c & 15], out);
				} else {
					fputc(c, out);
				}
			}
			i++;
			continue;
		}
		/* UTF-8 (RFC 3629 table 3-7): the length from the lead byte,
		 * the range the second byte must be in, then continuations. */
		if (c >= 0xc2 && c <= 0xdf) {
			n = 2;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 3;
			if (c == 0xe0)
				lo = 0xa0;      /* no overlong forms */
			if (c == 0xed)
				hi = 0x9f;      /* no surrogates */
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 4;
			if (c == 0xf0)
				lo = 0x90;
			if (c == 0xf4)
				hi = 0x8f;      /* up to U+10FFFF */
		} else {
			n = 0;
		}
		if (n && i + n <= len && s[i + 1] >= lo && s[i + 1] <= hi) {
			for (k = 2; k < n; k++)
				if (s[i + k] < 0x80 || s[i + k] > 0xbf)
					break;
			if (k == n) {
				fwrite(s + i, 1, n, out);
				i += n;
				continue;
			}
		}
		fputs("\xef\xbf\xbd", out);     /* U+FFFD for this byte */
		i++;
	}
}

void rf_json_key(struct rf_json *j, const char *key)
{
	if (j->err)
		return;
	if (!j->depth || j->open[j->depth - 1] != '{' || j->key || !key) {
		misuse(j);
		return;
	}
	if (j->any[j->depth - 1])
		fputc(',', j->out);
	j->any[j->depth - 1] = true;
	fputc('"', j->out);
	put_escaped(j->out, (const unsigned char *)key, strlen(key));
	fputs("\":", j->out);
	j->key = true;
}

void rf_json_str_len(struct rf_json *j, const char *s, size_t len)
{
	if (!value_start(j))
		return;
	fputc('"', j->out);
	put_escaped(j->out, (const unsigned char *)s, len);
	fputc('"', j->out);
	value_end(j);
}

void rf_json_str(struct rf_json *j, const char *s)
{
	if (s)
		rf_json_str_len(j, s, strlen(s));
	else
		rf_json_null(j);
}

void rf_json_int(struct rf_json *j, long long v)
{
	if (!value_start(j))
		return;
	fprintf(j->out, "%lld", v);
	value_end(j);
}

void rf_json_uint(struct rf_json *j, unsigned long long v)
{
	if (!value_start(j))
		return;
	fprintf(j->out, "%llu", v);
	value_end(j);
}

void rf_json_bool(struct rf_json *j, bool v)
{
	if (!value_start(j))
		return;
	fputs(v ? "true" : "false", j->out);
	value_end(j);
}

void rf_json_null(struct rf_json *j)
{
	if (!value_start(j))
		return;
	fputs("null", j->out);
	value_end(j);
}

static bool digits(const char **p)
{
	const char *s = *p;

	while (**p >= '0' && **p <= '9')
		(*p)++;
	return *p > s;
}

bool rf_json_is_number(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s < '1' || *s > '9' || !digits(&s))
		return false;
	if (*s == '.') {
		s++;
		if (!digits(&s))
			return false;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!digits(&s))
			return false;
	}
	return !*s;
}

void rf_json_num_text(struct rf_json *j, const char *s)
{
	if (!rf_json_is_number(s)) {
		rf_json_str(j, s);
		return;
	}
	if (!value_start(j))
		return;
	fputs(s, j->out);
	value_end(j);
}

void rf_json_kstr(struct rf_json *j, const char *key, const char *v)
{
	rf_json_key(j, key);
	rf_json_str(j, v);
}

void rf_json_kint(struct rf_json *j, const char *key, long long v)
{
	rf_json_key(j, key);
	rf_json_int(j, v);
}

void rf_json_kuint(struct rf_json *j, const char *key, unsigned long long v)
{
	rf_json_key(j, key);
	rf_json_uint(j, v);
}

void rf_json_kbool(struct rf_json *j, const char *key, bool v)
{
	rf_json_key(j, key);
	rf_json_bool(j, v);
}

int rf_json_end(struct rf_json *j)
{
	if (!j->err && (!j->done || j->depth || j->key))
		misuse(j);
	if (!j->err) {
		fputc('\n', j->out);
		if (fflush(j->out) || ferror(j->out))
			j->err = -EIO;
	}
	return j->err;
}
