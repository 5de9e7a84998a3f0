/* SPDX-License-Identifier: GPL-2.0-or-later */
/* json.h - a small streaming JSON writer for the command line's --json.
 *
 * Values are written as they come, depth first: begin an object, give a
 * key, a value, ... end it.  The writer puts the commas and colons in and
 * checks the nesting; strings are escaped so the output is valid JSON for
 * any bytes given (see rf_json_str_len).  Output is compact; one top-level
 * value ends with a newline (rf_json_end), so several make JSON Lines.
 *
 * Errors are sticky: the first misuse (a value where a key is due, an end
 * that does not match) or write error is kept in j->err, later calls do
 * nothing, and rf_json_end() returns it.
 */
#ifndef RAIDFUSE_JSON_H
#define RAIDFUSE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RF_JSON_MAX_DEPTH 16

struct rf_json {
	FILE *out;
	int depth;                              /* open objects and arrays */
	char open[RF_JSON_MAX_DEPTH];           /* '{' or '[' at each depth */
	bool any[RF_JSON_MAX_DEPTH];            /* something written at this depth: a comma is due */
	bool key;                               /* a key was written: its value is due */
	bool done;                              /* the top-level value is complete */
	int err;                                /* 0, -EINVAL (misuse) or -EIO */
};

void rf_json_init(struct rf_json *j, FILE *out);

void rf_json_obj(struct rf_json *j);            /* { */
void rf_json_obj_end(struct rf_json *j);        /* } */
void rf_json_arr(struct rf_json *j);            /* [ */
void rf_json_arr_end(struct rf_json *j);        /* ] */
void rf_json_key(struct rf_json *j, const char *key);

/* len bytes of s as a JSON string: '"', '\\' and control characters
 * escaped (\n, \t, ... or \u00XX), valid UTF-8 kept as it is, and each
 * byte that is not part of a valid UTF-8 sequence (a stray continuation
 * byte, an overlong form, a surrogate, past U+10FFFF, a cut-off sequence)
 * written as U+FFFD.  NUL bytes are \u0000. */
void rf_json_str_len(struct rf_json *j, const char *s, size_t len);
void rf_json_str(struct rf_json *j, const char *s);     /* NULL: null */
void rf_json_int(struct rf_json *j, long long v);
void rf_json_uint(struct rf_json *j, unsigned long long v);
void rf_json_bool(struct rf_json *j, bool v);
void rf_json_null(struct rf_json *j);
/* A number already in JSON's syntax (checked; anything else is a string). */
void rf_json_num_text(struct rf_json *j, const char *s);

/* key and value in one call. */
void rf_json_kstr(struct rf_json *j, const char *key, const char *v);
void rf_json_kint(struct rf_json *j, const char *key, long long v);
void rf_json_kuint(struct rf_json *j, const char *key, unsigned long long v);
void rf_json_kbool(struct rf_json *j, const char *key, bool v);

/* The top-level value is complete: write the newline, flush.  Returns 0,
 * -EINVAL if the value was not complete or the calls did not nest, -EIO
 * if writing failed. */
int rf_json_end(struct rf_json *j);

/* True if s (NUL-terminated) is a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
bool rf_json_is_number(const char *s);

#endif
