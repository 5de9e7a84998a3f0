/* SPDX-License-Identifier: GPL-2.0-or-later */
/* parity.h - P and Q parity for raid4/5/6, and recovery of missing columns.
 *
 * The only module that sees ISA-L.  Blocks are passed in syndrome order (md's
 * order for Q: rf_r5_row.qslot), not in member order.  Lengths are multiples
 * of 32 bytes (ISA-L's precondition); callers use stripe_size blocks.
 *
 * Q is the Reed-Solomon syndrome over GF(2^8), polynomial 0x11d, generator 2:
 * Q = sum_i 2^i * D_i.  Every function has a plain C reference twin (rf_ref_*)
 * used by the unit tests to check the fast ones.
 */
#ifndef RAIDFUSE_PARITY_H
#define RAIDFUSE_PARITY_H

#include <stddef.h>
#include <stdint.h>

/* p = src[0] ^ ... ^ src[n-1].  n >= 1.  p may not alias a source. */
void rf_xor_gen(int n, size_t len, void **src, void *p);
/* dst ^= src */
void rf_xor_into(size_t len, const void *src, void *dst);
/* P and Q over n data blocks (n >= 1). */
void rf_pq_gen(int n, size_t len, void **data, void *p, void *q);
/* q ^= 2^slot * delta (Q update for read-modify-write). */
void rf_q_update(size_t len, int slot, const void *delta, void *q);

/* Rebuild missing blocks of a raid6 row in place.  blocks[0..n-1] are data
 * in syndrome order, blocks[n] is P, blocks[n+1] is Q.  fa < fb are the
 * indexes of the missing blocks (fb = -1 when only one is missing); their
 * contents on entry are ignored.  Returns 0, or -EINVAL for bad indexes. */
int rf_raid6_recover(int n, size_t len, void **blocks, int fa, int fb);

/* The kernel's crc32c_le(crc, buf, len) (Castagnoli, reflected): no pre-
 * or post-inversion, as md's PPL checksums take it.  ISA-L's crc32_iscsi. */
uint32_t rf_crc32c(uint32_t crc, const void *buf, size_t len);

/* Reference implementations, byte at a time. */
void rf_ref_xor_gen(int n, size_t len, void **src, void *p);
void rf_ref_pq_gen(int n, size_t len, void **data, void *p, void *q);
void rf_ref_q_update(size_t len, int slot, const void *delta, void *q);
int rf_ref_raid6_recover(int n, size_t len, void **blocks, int fa, int fb);
uint8_t rf_ref_gf_mul(uint8_t a, uint8_t b);

#endif
