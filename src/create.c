/* create.c - `raidfuse create`: make the members a config names and write
 * their md superblocks.
 *
 * It checks the whole config and every member, and works out every
 * superblock, before it creates, truncates or writes anything, and leaves
 * existing non-empty members alone unless forced.  The command line
 * (main.c) only parses options and calls rf_create().
 *
 * It does NOT serve the array, nor read superblocks already on the
 * members (mount and assemble do).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raidfuse/assemble.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/config.h"
#include "raidfuse/create.h"
#include "raidfuse/super.h"

/* The size in bytes of an existing member (file or block device). */
static int existing_size(const char *path, uint64_t *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	off_t end;

	if (fd < 0)
		return -errno;
	end = lseek(fd, 0, SEEK_END);
	close(fd);
	if (end < 0)
		return -errno;
	*out = (uint64_t)end;
	return 0;
}

/* The new bitmap 8 sectors after the 1.2 superblock (at sector 8). */
static int write_bitmap(int fd, const char *path, const struct rf_bitmap_sb *bsb, char *err, size_t errlen)
{
	struct rf_sb_io io;
	int r = rf_sb_io_fd(&io, fd);

	if (r) {
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	return rf_bitmap_write_new(&io, path, (8 + 8) * 512, bsb, err, errlen);
}

int rf_create(const char *path, const struct rf_create_opts *o)
{
	struct rf_config cfg;
	struct rf_sb_new sbn;
	bool force = o->force, clean = o->assume_clean;
	struct rf_bitmap_sb bsb;
	int i, bad = 0, ret;
	uint8_t action[2 * RF_MAX_MEMBERS];     /* 0 keep, 1 create/resize; members, then spares */
	uint64_t bytes[2 * RF_MAX_MEMBERS];     /* each file's size once made */
	const char *files[2 * RF_MAX_MEMBERS];
	char err[1024];

	ret = rf_config_load(path, &cfg, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "raidfuse: %s\n", err);
		return 1;
	}
	if (o->bitmap >= 0)
		cfg.bitmap = o->bitmap;
	if (o->bitmap_chunk)
		cfg.bitmap_chunk = o->bitmap_chunk;
	if (cfg.bitmap && (cfg.level == 0 || cfg.metadata != RF_SB_12)) {
		fprintf(stderr, "raidfuse: %s: an internal bitmap needs md metadata 1.2 and a level with "
			"redundancy (md keeps none for raid0)\n", path);
		rf_config_free(&cfg);
		return 1;
	}
	/* Look at every member and spare first; touch none until all are
	 * fine. */
	for (i = 0; i < cfg.nmembers + cfg.nspares; i++)
		files[i] = i < cfg.nmembers ? cfg.members[i] : cfg.spares[i - cfg.nmembers];
	for (i = 0; i < cfg.nmembers + cfg.nspares; i++) {
		const char *m = files[i], *what = i < cfg.nmembers ? "member" : "spare";
		int n = i < cfg.nmembers ? i : i - cfg.nmembers;
		struct stat st;

		action[i] = 0;
		bytes[i] = cfg.member_size;
		if (!m) {
			bytes[i] = 0;
			continue;
		}
		if (stat(m, &st)) {
			if (errno != ENOENT) {
				fprintf(stderr, "raidfuse: %s %d (%s): %s\n", what, n, m, strerror(errno));
				bad++;
				continue;
			}
			action[i] = 1;
		} else if (S_ISBLK(st.st_mode)) {
			/* a device is used as it is */
			ret = existing_size(m, &bytes[i]);
			if (ret) {
				fprintf(stderr, "raidfuse: %s %d (%s): %s\n", what, n, m, strerror(-ret));
				bad++;
			}
			continue;
		} else if (!S_ISREG(st.st_mode)) {
			fprintf(stderr, "raidfuse: %s %d (%s): not a regular file or block device\n", what, n, m);
			bad++;
			continue;
		} else if (st.st_size && !force) {
			fprintf(stderr, "raidfuse: %s %d (%s): exists with data (%lld bytes); not touched "
				"(--force recreates it)\n", what, n, m, (long long)st.st_size);
			bad++;
			continue;
		} else {
			action[i] = 1;
		}
		if (action[i] && !cfg.member_size) {
			fprintf(stderr, "raidfuse: %s: key 'array.member_size' is needed to create %s %d (%s)\n",
				path, what, n, m);
			bad++;
		}
	}
	/* The superblocks, worked out before anything is written. */
	if (!bad && cfg.metadata == RF_SB_12 &&
	    (rf_assemble_plan_create(&cfg, bytes, clean, &sbn, err, sizeof(err)) ||
	     (cfg.bitmap && rf_bitmap_plan(&sbn, cfg.bitmap_chunk, &bsb, err, sizeof(err))))) {
		fprintf(stderr, "raidfuse: %s\n", err);
		bad++;
	}
	if (cfg.nspares && cfg.level == 0) {
		fprintf(stderr, "raidfuse: %s: raid0 takes no spares (nothing to rebuild onto them)\n", path);
		bad++;
	}
	for (i = cfg.nmembers; !bad && cfg.metadata == RF_SB_12 && i < cfg.nmembers + cfg.nspares; i++) {
		if (bytes[i] / 512 < sbn.data_offset + sbn.size) {
			fprintf(stderr, "raidfuse: spare %d (%s): %llu bytes cannot hold the %llu each member uses\n",
				i - cfg.nmembers, files[i], (unsigned long long)bytes[i],
				(unsigned long long)((sbn.data_offset + sbn.size) * 512));
			bad++;
		}
	}
	if (bad) {
		rf_config_free(&cfg);
		return 1;
	}
	ret = 0;
	for (i = 0; i < cfg.nmembers + cfg.nspares; i++) {
		const char *what = i < cfg.nmembers ? "member" : "spare";
		int fd, n = i < cfg.nmembers ? i : i - cfg.nmembers;

		if (!files[i])
			continue;
		if (action[i])
			fd = open(files[i], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		else if (cfg.metadata == RF_SB_12)
			fd = open(files[i], O_WRONLY | O_CLOEXEC);
		else
			continue;
		/* A spare's superblock: device number after the members', its
		 * role "spare" (as mdadm --create with spares writes them). */
		if (fd < 0 || (action[i] && (ftruncate(fd, 0) || ftruncate(fd, (off_t)cfg.member_size)))) {
			fprintf(stderr, "raidfuse: %s %d (%s): %s\n", what, n, files[i], strerror(errno));
			ret = 1;
		} else if (cfg.metadata == RF_SB_12 &&
			   (rf_sb_write12(fd, files[i], &sbn, i, bytes[i] / 512, err, sizeof(err)) ||
			    (cfg.bitmap && write_bitmap(fd, files[i], &bsb, err, sizeof(err))))) {
			fprintf(stderr, "raidfuse: %s %d: %s\n", what, n, err);
			ret = 1;
		} else if (action[i]) {
			printf("%s %d: %s (%llu bytes)\n", what, n, files[i], (unsigned long long)cfg.member_size);
		}
		if (fd >= 0)
			close(fd);
	}
	if (!ret && cfg.metadata == RF_SB_12) {
		struct rf_sb sb = { .kind = RF_SB_12 };
		char u[40];

		memcpy(sb.uuid, sbn.uuid, 16);
		printf("md 1.2 superblocks: array %s, data offset %llu sectors, %llu sectors per member, %s\n",
		       rf_sb_uuid_str(&sb, u), (unsigned long long)sbn.data_offset,
		       (unsigned long long)(sbn.size ? sbn.size : (bytes[0] / 512 - sbn.data_offset)),
		       clean ? "clean (--assume-clean)" : "resync due");
		if (cfg.bitmap)
			printf("internal bitmap: %llu chunks of %u KiB, %u sectors from the superblock\n",
			       (unsigned long long)rf_bitmap_bits(bsb.sync_size, bsb.chunk_bytes),
			       bsb.chunk_bytes >> 10, 8);
	}
	rf_config_free(&cfg);
	return ret;
}

