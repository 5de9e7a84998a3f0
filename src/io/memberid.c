/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memberid.c - which device a member is, whatever name reaches it
 * (memberid.h).
 *
 * An identity is a few numbers and names that do not depend on the path
 * or URI a user typed: the inode a file's data is in (the file's own, or
 * the backing file of a loop device), a block device's number, an NBD
 * server's socket inode or address with the export's name, and the md
 * device UUID of the superblock on it.  Two identities are one device
 * when any of these that both have agree; which one agreed is what the
 * message says.
 *
 * Invariants: an identity holds no pointer (it may be copied and
 * dropped); an export name is compared whole, by length and a 64-bit
 * FNV-1a hash of all its bytes, with its first bytes kept for messages.
 *
 * Identities are filled from what devopen.c and nbd.c opened; this file
 * opens nothing.  md/identify.c opens a path to take its identity with
 * the superblock's device UUID (md's format is above io).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "raidfuse/devopen.h"
#include "raidfuse/memberid.h"
#include "raidfuse/nbd.h"

void rf_member_id_of_dev(struct rf_member_id *m, const struct rf_devopen_id *id)
{
	memset(m, 0, sizeof(*m));
	m->kind = id->blk ? RF_MEMBER_BLK : RF_MEMBER_FILE;
	if (id->blk) {
		m->rdev = id->rdev;
		m->has_file = id->over_file;
		m->dev = id->lo_dev;
		m->ino = id->lo_ino;
	} else {
		m->has_file = true;
		m->dev = id->dev;
		m->ino = id->ino;
	}
}

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void rf_member_id_nbd(struct rf_member_id *m, const char *server, const char *export_name)
{
	memset(m, 0, sizeof(*m));
	m->kind = RF_MEMBER_NBD;
	snprintf(m->server, sizeof(m->server), "%s", server);
	m->export_len = strlen(export_name);
	m->export_hash = fnv1a(export_name, m->export_len);
	snprintf(m->export_shown, sizeof(m->export_shown), "%s", export_name);
}

void rf_member_id_set_uuid(struct rf_member_id *m, const uint8_t uuid[16])
{
	static const uint8_t zero[16];

	m->has_uuid = memcmp(uuid, zero, 16) != 0;
	if (m->has_uuid)
		memcpy(m->uuid, uuid, 16);
}

enum rf_member_same_why rf_member_same(const struct rf_member_id *a, const struct rf_member_id *b)
{
	if (a->kind == RF_MEMBER_NONE || b->kind == RF_MEMBER_NONE)
		return RF_MEMBER_DIFFERENT;
	if (a->kind == RF_MEMBER_BLK && b->kind == RF_MEMBER_BLK && a->rdev == b->rdev)
		return RF_MEMBER_SAME_BLK;
	if (a->has_file && b->has_file && a->dev == b->dev && a->ino == b->ino)
		return RF_MEMBER_SAME_FILE;
	if (a->kind == RF_MEMBER_NBD && b->kind == RF_MEMBER_NBD && !strcmp(a->server, b->server) &&
	    a->export_len == b->export_len && a->export_hash == b->export_hash &&
	    !strcmp(a->export_shown, b->export_shown))
		return RF_MEMBER_SAME_NBD;
	if (a->has_uuid && b->has_uuid && !memcmp(a->uuid, b->uuid, 16))
		return RF_MEMBER_SAME_UUID;
	return RF_MEMBER_DIFFERENT;
}

void rf_member_same_msg(char *err, size_t errlen, const char *na, const struct rf_member_id *a, const char *nb,
			const struct rf_member_id *b, const char *tail)
{
	char how[RF_MEMBER_SERVER_MAX + RF_MEMBER_EXPORT_SHOWN + 96];
	const uint8_t *u = a->uuid;

	switch (rf_member_same(a, b)) {
	case RF_MEMBER_SAME_FILE:
		if (a->kind == RF_MEMBER_BLK && b->kind == RF_MEMBER_BLK)
			snprintf(how, sizeof(how), "; both are loop devices over it");
		else if (a->kind == RF_MEMBER_BLK || b->kind == RF_MEMBER_BLK)
			snprintf(how, sizeof(how), "; %s is a loop device over it",
				 a->kind == RF_MEMBER_BLK ? na : nb);
		else
			how[0] = '\0';
		snprintf(err, errlen, "%s and %s are the same file twice (device %u:%u, inode %llu%s): %s", na, nb,
			 major(a->dev), minor(a->dev), (unsigned long long)a->ino, how, tail);
		return;
	case RF_MEMBER_SAME_BLK:
		snprintf(err, errlen, "%s and %s are the same block device twice (device %u:%u): %s", na, nb,
			 major(a->rdev), minor(a->rdev), tail);
		return;
	case RF_MEMBER_SAME_NBD:
		snprintf(err, errlen, "%s and %s are the same NBD export twice (export \"%s%s\" of the server at %s): %s",
			 na, nb, a->export_shown, a->export_len >= sizeof(a->export_shown) ? "..." : "", a->server,
			 tail);
		return;
	case RF_MEMBER_SAME_UUID:
		snprintf(err, errlen, "%s and %s carry the same md device UUID (%02x%02x%02x%02x:%02x%02x%02x%02x:"
			 "%02x%02x%02x%02x:%02x%02x%02x%02x): one member twice, or a copy of it: %s", na, nb,
			 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
			 u[14], u[15], tail);
		return;
	case RF_MEMBER_DIFFERENT:
		break;
	}
	snprintf(err, errlen, "%s and %s: %s", na, nb, tail);
}
