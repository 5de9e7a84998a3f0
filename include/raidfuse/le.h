/* SPDX-License-Identifier: GPL-2.0-or-later */
/* le.h - little-endian fields of md's on-disk formats, one way for every
 * module (superblocks, bitmap).
 *
 * A field is a byte array in a struct of its own type, so the only way to
 * read or write it is through these accessors: a field used as a host
 * number does not compile.  The conversion itself is <endian.h>'s
 * le16toh/htole16 (and 32, 64) on a memcpy of the bytes, so a field may
 * sit at any alignment; rf_get_le32() and friends do the same for a plain
 * byte pointer (a checksum over a buffer).
 */
#ifndef RAIDFUSE_LE_H
#define RAIDFUSE_LE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

typedef struct { uint8_t b[2]; } rf_le16_t;
typedef struct { uint8_t b[4]; } rf_le32_t;
typedef struct { uint8_t b[8]; } rf_le64_t;

static inline uint16_t rf_get_le16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static inline uint32_t rf_get_le32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint64_t rf_get_le64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static inline void rf_put_le16(void *p, uint16_t x)
{
	x = htole16(x);
	memcpy(p, &x, sizeof(x));
}

static inline void rf_put_le32(void *p, uint32_t x)
{
	x = htole32(x);
	memcpy(p, &x, sizeof(x));
}

static inline void rf_put_le64(void *p, uint64_t x)
{
	x = htole64(x);
	memcpy(p, &x, sizeof(x));
}

static inline uint16_t rf_le16(rf_le16_t v) { return rf_get_le16(v.b); }
static inline uint32_t rf_le32(rf_le32_t v) { return rf_get_le32(v.b); }
static inline uint64_t rf_le64(rf_le64_t v) { return rf_get_le64(v.b); }

static inline rf_le16_t rf_to_le16(uint16_t x)
{
	rf_le16_t v;

	rf_put_le16(v.b, x);
	return v;
}

static inline rf_le32_t rf_to_le32(uint32_t x)
{
	rf_le32_t v;

	rf_put_le32(v.b, x);
	return v;
}

static inline rf_le64_t rf_to_le64(uint64_t x)
{
	rf_le64_t v;

	rf_put_le64(v.b, x);
	return v;
}

#endif
