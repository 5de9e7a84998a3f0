/* SPDX-License-Identifier: GPL-2.0-or-later */
/* parity.c - P and Q parity, Q updates and raid6 recovery, on ISA-L.
 *
 * The field is GF(2^8) with polynomial 0x11d and generator g = 2, the one
 * md's lib/raid6 and ISA-L's pq_gen both use: Q = sum_i g^i * D_i, data block
 * 0 with coefficient 1 (pq_gen starts its Horner loop from the last source
 * and adds source 0 unmultiplied).
 *
 * Which ISA-L routine, and why:
 *  - xor_gen and pq_gen are the fastest generators, but they require every
 *    pointer 32-byte aligned (the AVX versions use aligned loads and may use
 *    non-temporal stores), len a multiple of 32, and at least 2 sources.  We
 *    call them only when that holds; otherwise xor uses a plain 16-byte-word
 *    loop and P+Q goes through ec_encode_data.
 *  - ec_encode_data / ec_encode_data_update (dot products and multiply-
 *    accumulate over 32-byte nibble tables) take any alignment and any length
 *    (they drop to a byte loop below 64 bytes; the raw gf_vect_mad_avx512
 *    silently does nothing below 64 bytes, so we never call it directly).
 *    They do Q updates and all of recovery: every missing block, in every
 *    case, is a linear combination of n surviving blocks, so one pass of
 *    ec_encode_data with one or two coefficient rows rebuilds it, with no
 *    scratch buffer and no zero page.
 *  - xor_into is our own loop: xor_gen with the destination also a source
 *    happens to work but ISA-L does not promise it.
 *
 * Tables: the 256 nibble tables (gf_vect_mul_init format: c*{0..15},
 * c*{0x00,0x10..0xf0}) and the powers of g are built once, under
 * pthread_once, and only read afterwards.  ec_encode_data wants its tables
 * contiguous per call, so those are copied into a thread-local buffer: no
 * malloc and no lock on any path.
 *
 * Limits: ISA-L lengths are int, so longer buffers are done in 1 GiB
 * chunks.  Q positions repeat after 255 (g^255 = 1), so recovery takes
 * n <= 255; P+Q over more than RF_PQ_MAX_N sources falls back to the
 * reference (md itself stops at 254 data disks).
 *
 * It does NOT know about members, layouts or rows: callers pass blocks in
 * syndrome order.  The rf_ref_* functions at the end are byte-at-a-time
 * plain C, shift-and-add multiply, for the unit tests; nothing else uses
 * them except the n > RF_PQ_MAX_N fallback.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <isa-l/crc.h>
#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>

#include "raidfuse/parity.h"

#define RF_PQ_MAX_N     256             /* sources per ISA-L call */
#define RF_Q_PERIOD     255             /* g^255 == 1 */
#define RF_ISAL_ALIGN   32              /* xor_gen / pq_gen pointers and len */
#define RF_CHUNK_MAX    ((size_t)1 << 30) /* fits ISA-L's int len, keeps alignment */
#define RF_GF_TBL       32              /* bytes in one nibble table */

_Static_assert(RF_CHUNK_MAX <= INT_MAX && RF_CHUNK_MAX % 64 == 0, "chunk must fit an int, aligned");

/* Built once by gf_init(), read-only afterwards. */
static unsigned char gf_tbl[256][RF_GF_TBL] __attribute__((aligned(64)));
static uint8_t gf_pow2[RF_Q_PERIOD];    /* g^i */
static pthread_once_t gf_once = PTHREAD_ONCE_INIT;

/* Tables for one ec_encode_data call: rows x k x 32, this thread only. */
static __thread unsigned char ec_tbls[2 * RF_PQ_MAX_N * RF_GF_TBL] __attribute__((aligned(64)));

static void gf_build(void)
{
	uint8_t x = 1;
	int c, i;

	for (c = 0; c < 256; c++)
		gf_vect_mul_init((unsigned char)c, gf_tbl[c]);
	for (i = 0; i < RF_Q_PERIOD; i++) {
		gf_pow2[i] = x;
		x = gf_mul(x, 2);
	}
}

static inline void gf_init(void)
{
	pthread_once(&gf_once, gf_build);
}

/* g^e for any e, after gf_init(). */
static uint8_t gf_exp2(int e)
{
	e %= RF_Q_PERIOD;
	if (e < 0)
		e += RF_Q_PERIOD;
	return gf_pow2[e];
}

static inline size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

static inline bool is_aligned(const void *p)
{
	return ((uintptr_t)p & (RF_ISAL_ALIGN - 1)) == 0;
}

/* May the buffers go to xor_gen / pq_gen? */
static bool isal_ok(size_t len, int n, void **v, const void *a, const void *b)
{
	int i;

	if (len % RF_ISAL_ALIGN || !is_aligned(a) || (b && !is_aligned(b)))
		return false;
	for (i = 0; i < n; i++)
		if (!is_aligned(v[i]))
			return false;
	return true;
}

/*
 * Plain word loops (any alignment, any length).  The 16-byte vector type
 * becomes one SSE2 register; memcpy keeps unaligned access defined.
 */
typedef uint64_t rf_v16 __attribute__((vector_size(16)));

static inline rf_v16 ld16(const uint8_t *p)
{
	rf_v16 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline void st16(uint8_t *p, rf_v16 v)
{
	memcpy(p, &v, sizeof(v));
}

static void xor_plain(int n, size_t len, void **src, void *p)
{
	uint8_t *d = p;
	size_t i = 0;
	int j;

	for (; i + 64 <= len; i += 64) {
		const uint8_t *s = src[0];
		rf_v16 a0 = ld16(s + i), a1 = ld16(s + i + 16);
		rf_v16 a2 = ld16(s + i + 32), a3 = ld16(s + i + 48);

		for (j = 1; j < n; j++) {
			s = src[j];
			a0 ^= ld16(s + i);
			a1 ^= ld16(s + i + 16);
			a2 ^= ld16(s + i + 32);
			a3 ^= ld16(s + i + 48);
		}
		st16(d + i, a0);
		st16(d + i + 16, a1);
		st16(d + i + 32, a2);
		st16(d + i + 48, a3);
	}
	for (; i < len; i++) {
		uint8_t b = ((const uint8_t *)src[0])[i];

		for (j = 1; j < n; j++)
			b ^= ((const uint8_t *)src[j])[i];
		d[i] = b;
	}
}

/*
 * dst[r] = sum_j coef[r * k + j] * src[j], r < rows <= 2, 1 <= k <= RF_PQ_MAX_N.
 * No dst may be a src.  Any alignment and length.
 */
static void ec_combine(size_t len, int k, void **src, int rows, const uint8_t *coef, void **dst)
{
	unsigned char *s[RF_PQ_MAX_N], *d[2];
	size_t off, chunk;
	int r, j;

	for (r = 0; r < rows; r++)
		for (j = 0; j < k; j++)
			memcpy(ec_tbls + (r * k + j) * RF_GF_TBL, gf_tbl[coef[r * k + j]], RF_GF_TBL);
	for (off = 0; off < len; off += chunk) {
		chunk = min_sz(len - off, RF_CHUNK_MAX);
		for (j = 0; j < k; j++)
			s[j] = (unsigned char *)src[j] + off;
		for (r = 0; r < rows; r++)
			d[r] = (unsigned char *)dst[r] + off;
		ec_encode_data((int)chunk, k, rows, ec_tbls, s, d);
	}
}

void rf_xor_gen(int n, size_t len, void **src, void *p)
{
	void *v[RF_PQ_MAX_N + 1];
	size_t off, chunk;
	int i;

	if (n <= 1) {
		if (n == 1)
			memcpy(p, src[0], len);
		else
			memset(p, 0, len);
		return;
	}
	if (len == 0)
		return;
	if (n > RF_PQ_MAX_N || !isal_ok(len, n, src, p, NULL)) {
		xor_plain(n, len, src, p);
		return;
	}
	for (off = 0; off < len; off += chunk) {
		chunk = min_sz(len - off, RF_CHUNK_MAX);
		for (i = 0; i < n; i++)
			v[i] = (char *)src[i] + off;
		v[n] = (char *)p + off;
		if (xor_gen(n + 1, (int)chunk, v))
			xor_plain(n, chunk, v, v[n]);
	}
}

void rf_xor_into(size_t len, const void *src, void *dst)
{
	const uint8_t *s = src;
	uint8_t *d = dst;
	size_t i = 0;

	for (; i + 64 <= len; i += 64) {
		st16(d + i, ld16(d + i) ^ ld16(s + i));
		st16(d + i + 16, ld16(d + i + 16) ^ ld16(s + i + 16));
		st16(d + i + 32, ld16(d + i + 32) ^ ld16(s + i + 32));
		st16(d + i + 48, ld16(d + i + 48) ^ ld16(s + i + 48));
	}
	for (; i < len; i++)
		d[i] ^= s[i];
}

/* P and Q through ec_encode_data: rows of 1s and of g^i. */
static void pq_ec(int n, size_t len, void **data, void *p, void *q)
{
	uint8_t coef[2 * RF_PQ_MAX_N];
	void *dst[2] = { p, q };
	int i;

	gf_init();
	for (i = 0; i < n; i++) {
		coef[i] = 1;
		coef[n + i] = gf_exp2(i);
	}
	ec_combine(len, n, data, 2, coef, dst);
}

void rf_pq_gen(int n, size_t len, void **data, void *p, void *q)
{
	void *v[RF_PQ_MAX_N + 2];
	size_t off, chunk;
	int i;

	if (n <= 1) {
		/* P = Q = g^0 * D0 */
		rf_xor_gen(n, len, data, p);
		memcpy(q, p, len);
		return;
	}
	if (len == 0)
		return;
	if (n > RF_PQ_MAX_N) {
		rf_ref_pq_gen(n, len, data, p, q);
		return;
	}
	if (!isal_ok(len, n, data, p, q)) {
		pq_ec(n, len, data, p, q);
		return;
	}
	for (off = 0; off < len; off += chunk) {
		chunk = min_sz(len - off, RF_CHUNK_MAX);
		for (i = 0; i < n; i++)
			v[i] = (char *)data[i] + off;
		v[n] = (char *)p + off;
		v[n + 1] = (char *)q + off;
		if (pq_gen(n + 2, (int)chunk, v))
			pq_ec(n, chunk, v, v[n], v[n + 1]);
	}
}

void rf_q_update(size_t len, int slot, const void *delta, void *q)
{
	unsigned char *tbl;
	size_t off, chunk;

	gf_init();
	tbl = gf_tbl[gf_exp2(slot)];
	for (off = 0; off < len; off += chunk) {
		unsigned char *d = (unsigned char *)q + off;

		chunk = min_sz(len - off, RF_CHUNK_MAX);
		ec_encode_data_update((int)chunk, 1, 1, 0, tbl, (unsigned char *)delta + off, &d);
	}
}

/* Check and order the failed indexes: 0 <= fa < fb <= n + 1, or fb = -1. */
static int recover_args(int n, int *fa, int *fb)
{
	int a = *fa, b = *fb;

	if (n < 1 || n > RF_Q_PERIOD)
		return -EINVAL;
	if (b >= 0 && b < a) {
		a = *fb;
		b = *fa;
	}
	if (a < 0 || a > n + 1 || b == a || b < -1 || b > n + 1)
		return -EINVAL;
	*fa = a;
	*fb = b;
	return 0;
}

/*
 * Every case below rebuilds the missing blocks from exactly n survivors:
 *
 *   x or P: the xor of the other n blocks of the P row (Q unused)
 *   Q:      Q  = sum g^i D_i
 *   x, Q:   Dx = P + sum D_i          Q = g^x P + sum (g^x + g^i) D_i
 *   x, P:   Dx = g^-x Q + sum g^(i-x) D_i      P = Dx + sum D_i
 *   P, Q:   pq_gen
 *   x < y:  with Pxy = P + sum D_i, Qxy = Q + sum g^i D_i over the n - 2
 *           survivors, Pxy = Dx + Dy and Qxy = g^x Dx + g^y Dy, so
 *           Dx = A Pxy + B Qxy, B = 1 / (g^x + g^y), A = g^y B, Dy = Dx + Pxy.
 *
 * Sums run over the surviving data i; + is xor.  The x,Q and x,P pairs
 * are done in one pass (both rows expanded over the survivors) rather than
 * rebuilding Dx first and reading it back.
 */
int rf_raid6_recover(int n, size_t len, void **blocks, int fa, int fb)
{
	uint8_t coef[2 * RF_PQ_MAX_N], *c0 = coef, *c1 = coef + n;
	void *src[RF_PQ_MAX_N], *dst[2];
	int pi = n, qi = n + 1;
	int err, i, k = 0, rows = 2;

	err = recover_args(n, &fa, &fb);
	if (err)
		return err;
	if (len == 0)
		return 0;
	gf_init();

	if (fa < qi && fb < 0) {
		/* one data block or P, from the rest of the xor row */
		for (i = 0; i <= n; i++)
			if (i != fa)
				src[k++] = blocks[i];
		rf_xor_gen(n, len, src, blocks[fa]);
		return 0;
	}
	if (fa == pi) {
		rf_pq_gen(n, len, blocks, blocks[pi], blocks[qi]);
		return 0;
	}

	dst[0] = blocks[fa];
	dst[1] = fb >= 0 ? blocks[fb] : NULL;
	if (fa == qi) {
		rows = 1;
		for (i = 0; i < n; i++) {
			c0[k] = gf_exp2(i);
			src[k++] = blocks[i];
		}
	} else if (fb == qi) {
		uint8_t gx = gf_exp2(fa);

		for (i = 0; i < n; i++) {
			if (i == fa)
				continue;
			c0[k] = 1;
			c1[k] = gx ^ gf_exp2(i);
			src[k++] = blocks[i];
		}
		c0[k] = 1;
		c1[k] = gx;
		src[k++] = blocks[pi];
	} else if (fb == pi) {
		uint8_t inv = gf_inv(gf_exp2(fa));

		for (i = 0; i < n; i++) {
			if (i == fa)
				continue;
			c0[k] = gf_mul(gf_exp2(i), inv);
			c1[k] = c0[k] ^ 1;
			src[k++] = blocks[i];
		}
		c0[k] = inv;
		c1[k] = inv;
		src[k++] = blocks[qi];
	} else {
		uint8_t b = gf_inv(gf_exp2(fa) ^ gf_exp2(fb));
		uint8_t a = gf_mul(gf_exp2(fb), b);

		for (i = 0; i < n; i++) {
			if (i == fa || i == fb)
				continue;
			c0[k] = gf_mul(b, gf_exp2(i)) ^ a;
			c1[k] = c0[k] ^ 1;
			src[k++] = blocks[i];
		}
		c0[k] = a;
		c1[k] = a ^ 1;
		src[k++] = blocks[pi];
		c0[k] = b;
		c1[k] = b;
		src[k++] = blocks[qi];
	}
	/* k == n; with one row, c1 is unused */
	ec_combine(len, k, src, rows, coef, dst);
	return 0;
}

/*
 * References: one byte at a time, GF multiply by shift-and-add.  Slow on
 * purpose; they share nothing with the code above but recover_args().
 */
static uint8_t ref_xtime(uint8_t a)
{
	return (uint8_t)(a << 1) ^ (a & 0x80 ? 0x1d : 0);
}

uint8_t rf_ref_gf_mul(uint8_t a, uint8_t b)
{
	uint8_t r = 0;

	while (b) {
		if (b & 1)
			r ^= a;
		a = ref_xtime(a);
		b >>= 1;
	}
	return r;
}

static uint8_t ref_pow2(int e)
{
	uint8_t r = 1;

	e %= RF_Q_PERIOD;
	if (e < 0)
		e += RF_Q_PERIOD;
	while (e-- > 0)
		r = ref_xtime(r);
	return r;
}

static uint8_t ref_inv(uint8_t a)
{
	int b;

	for (b = 1; b < 256; b++)
		if (rf_ref_gf_mul(a, (uint8_t)b) == 1)
			return (uint8_t)b;
	return 0;
}

static inline uint8_t ref_byte(void *blk, size_t i)
{
	return ((const uint8_t *)blk)[i];
}

void rf_ref_xor_gen(int n, size_t len, void **src, void *p)
{
	size_t i;
	int j;

	for (i = 0; i < len; i++) {
		uint8_t b = 0;

		for (j = 0; j < n; j++)
			b ^= ref_byte(src[j], i);
		((uint8_t *)p)[i] = b;
	}
}

void rf_ref_pq_gen(int n, size_t len, void **data, void *p, void *q)
{
	size_t i;
	int j;

	for (i = 0; i < len; i++) {
		uint8_t pb = 0, qb = 0;

		/* Horner from the top: Q = (..(D[n-1] g + D[n-2]) g ..) g + D0 */
		for (j = n - 1; j >= 0; j--) {
			pb ^= ref_byte(data[j], i);
			qb = ref_xtime(qb) ^ ref_byte(data[j], i);
		}
		((uint8_t *)p)[i] = pb;
		((uint8_t *)q)[i] = qb;
	}
}

void rf_ref_q_update(size_t len, int slot, const void *delta, void *q)
{
	uint8_t c = ref_pow2(slot);
	size_t i;

	for (i = 0; i < len; i++)
		((uint8_t *)q)[i] ^= rf_ref_gf_mul(c, ((const uint8_t *)delta)[i]);
}

int rf_ref_raid6_recover(int n, size_t len, void **blocks, int fa, int fb)
{
	int pi = n, qi = n + 1, x = -1, y = -1, i, err;
	uint8_t pow[RF_Q_PERIOD];
	bool lost_p, lost_q;
	uint8_t gx = 0, gy = 0, inv_gx = 0, inv_gxy = 0;
	size_t b;

	err = recover_args(n, &fa, &fb);
	if (err)
		return err;
	for (i = 0; i < n; i++)
		pow[i] = ref_pow2(i);
	lost_p = fa == pi || fb == pi;
	lost_q = fa == qi || fb == qi;
	if (fa < n)
		x = fa;
	if (fb >= 0 && fb < n)
		y = fb;
	if (x >= 0) {
		gx = pow[x];
		inv_gx = ref_inv(gx);
	}
	if (y >= 0) {
		gy = pow[y];
		inv_gxy = ref_inv(gx ^ gy);
	}

	for (b = 0; b < len; b++) {
		uint8_t ps = 0, qs = 0, dx = 0, dy = 0;
		uint8_t *pp = (uint8_t *)blocks[pi] + b, *qq = (uint8_t *)blocks[qi] + b;

		/* partial syndromes over the surviving data */
		for (i = 0; i < n; i++) {
			if (i == x || i == y)
				continue;
			ps ^= ref_byte(blocks[i], b);
			qs ^= rf_ref_gf_mul(pow[i], ref_byte(blocks[i], b));
		}
		if (y >= 0) {
			uint8_t pxy = *pp ^ ps, qxy = *qq ^ qs;

			dx = rf_ref_gf_mul(qxy ^ rf_ref_gf_mul(gy, pxy), inv_gxy);
			dy = dx ^ pxy;
		} else if (x >= 0 && lost_p) {
			dx = rf_ref_gf_mul(*qq ^ qs, inv_gx);
		} else if (x >= 0) {
			dx = *pp ^ ps;
		}
		if (x >= 0) {
			((uint8_t *)blocks[x])[b] = dx;
			ps ^= dx;
			qs ^= rf_ref_gf_mul(gx, dx);
		}
		if (y >= 0) {
			((uint8_t *)blocks[y])[b] = dy;
			ps ^= dy;
			qs ^= rf_ref_gf_mul(gy, dy);
		}
		if (lost_p)
			*pp = ps;
		if (lost_q)
			*qq = qs;
	}
	return 0;
}

uint32_t rf_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	/* crc32_iscsi takes an int length. */
	while (len > INT_MAX) {
		crc = crc32_iscsi((unsigned char *)p, INT_MAX, crc);
		p += INT_MAX;
		len -= INT_MAX;
	}
	return crc32_iscsi((unsigned char *)p, (int)len, crc);
}
