/* SPDX-License-Identifier: GPL-2.0-or-later */
/* iolog.h - a record of every member write, flush and completion, in
 * order, with the data: what a crash-state replayer needs (tools/crash).
 *
 * Off by default.  RAIDFUSE_IOLOG=FILE in the environment switches it on
 * when the program starts (or rf_iolog_open()); then each write and flush
 * that reaches a member file (the IO queues, rf_pwrite_full(),
 * rf_fsync_full()) is logged when it is issued and again when it ends,
 * each record with a sequence number from one counter.  Records reach the
 * file in sequence order.  Off, each hook costs one flag load.
 *
 * The file is a stream of records, each a struct rf_iolog_rec followed by
 * len bytes: the written data (SUBMIT of a write), the file's path (FILE),
 * nothing otherwise.  Files are named once, the first time one is seen
 * (by st_dev/st_ino, so a buffered and an O_DIRECT descriptor of one
 * member are one file).  Host byte order: the log is read where it was
 * written.
 *
 * It does NOT log reads, replay anything, or make sense of overlays
 * (their members' ops and the overlay's own file writes are both logged).
 */
#ifndef RAIDFUSE_IOLOG_H
#define RAIDFUSE_IOLOG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#define RF_IOLOG_MAGIC 0x4c494652u      /* "RFIL" */
#define RF_IOLOG_MAX_IOV 64             /* pieces of one logged write */

enum rf_iolog_type {
	RF_IOLOG_FILE = 1,              /* file id `file` is the path that follows */
	RF_IOLOG_SUBMIT = 2,            /* op issued: write (data follows), flush, name */
	RF_IOLOG_COMPLETE = 3,          /* the op of submit sequence `id` ended with res */
	RF_IOLOG_NOTE = 4,              /* the program's own event: op is its kind,
					 * id/off/res its arguments */
};

/* NAMED: the file's name made durable (its directory flushed). */
enum rf_iolog_op { RF_IOLOG_WRITE = 1, RF_IOLOG_FLUSH = 2, RF_IOLOG_NAMED = 3 };

struct rf_iolog_rec {
	uint32_t magic;
	uint16_t type;                  /* enum rf_iolog_type */
	uint16_t op;                    /* enum rf_iolog_op, or a NOTE's kind */
	uint32_t file;
	uint32_t len;                   /* bytes following the record */
	uint64_t seq;                   /* this record's place in the order */
	uint64_t id;                    /* COMPLETE: the SUBMIT's seq */
	uint64_t off;                   /* byte offset of a write */
	int64_t res;                    /* COMPLETE: bytes moved or -errno */
};
_Static_assert(sizeof(struct rf_iolog_rec) == 48, "iolog record layout");

/* Read by the hooks without a lock: set by rf_iolog_open() and cleared
 * by rf_iolog_close(), both called while no member IO runs (at start, at
 * the end), and cleared when writing the log fails. */
extern bool rf_iolog_on;

/* Log to path (created, truncated).  0 or -errno. */
int rf_iolog_open(const char *path);
/* Flush and close the log (the hooks go quiet). */
void rf_iolog_close(void);
/* An op on fd is issued: iov/niov is a write's data (NULL/0 for a flush
 * or a name; RF_IOLOG_MAX_IOV pieces at most).  Returns its id for rf_iolog_complete(), never 0. */
uint64_t rf_iolog_submit(int fd, int op, const struct iovec *iov, int niov, uint64_t off);
/* The op id ended with res (bytes or -errno); id 0 is ignored. */
void rf_iolog_complete(uint64_t id, int64_t res);
/* The program's own event, in the same order as the IO. */
void rf_iolog_note(uint16_t kind, uint64_t a, uint64_t b, int64_t c);

/* TEST-ONLY FAULT: whether RAIDFUSE_TEST_BREAK (read once, at start)
 * names this deliberate ordering bug ("bitmap": cleared bits written
 * without flushing the data they cover; "clean": a clean superblock
 * written without flushing the data; "stale-roles": a superblock update
 * keeps each device's own role table, so one re-added after missing
 * changes records them wrong; "no-intr": a failure during a rebuild
 * does not interrupt it, so a spare waits for it to end; "backup-name":
 * a backup file made for a reshape in place without flushing its
 * directory), which
 * tools/crash-states.sh --break and
 * the functional tests must catch.  Never set it on an array that holds data. */
bool rf_test_break(const char *what);
/* TEST-ONLY: whether RAIDFUSE_TEST_HALT (read at each call, so a test may
 * set it while the program runs) names this point of the program's work
 * ("reshape-backup": the reshape walk stops for good right after the new
 * rows of a window its backup file holds, before their position moves or
 * is recorded: on disk, the state a crash there leaves).  Never set it on
 * an array that holds data. */
bool rf_test_halt(const char *what);

#endif
