/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fixture.h - what every unit test shares: its scratch directory, member
 * files, an array opened from a config written in code, one seeded random
 * generator, and the group setup that ties them together.
 *
 * One scratch directory per test binary (fx_dir, on /dev/shm when it is
 * writable, via testdir.h), made by the group setup and removed, with all
 * the member files in it, by the group teardown.  Member files are named
 * fx_dir/<what>-<i>.img.
 *
 * One random generator: xorshift64* seeded from RF_TEST_SEED, or a fixed
 * default, so a failing run can be replayed.  The seed is printed when the
 * group starts and again, with how to replay it, when any test failed.
 * Threads each draw from their own struct fx_rng.
 *
 * Requests run to their end are testreq.h's; the fake member backend that
 * injects errors, short transfers and back-pressure is fake_ioq.h's.  This
 * module does not inject anything itself, and checks nothing a test did not
 * ask for: each helper fails the running test (fail_msg) on an error of its
 * own, naming what it was making.
 *
 * Include after cmocka.h; link tests/unit/fixture.c (the Makefile does).
 */
#ifndef FIXTURE_H
#define FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raidfuse/array.h"
#include "raidfuse/config.h"
#include "testdir.h"

#define FX_PATH 512                     /* room for a member path */
#define FX_DEFAULT_SEED 20261130u

/* The scratch directory of this binary; set by fx_group_setup(). */
extern char fx_dir[256];
/* The seed of this run: RF_TEST_SEED, else FX_DEFAULT_SEED. */
extern uint64_t fx_seed;

/* ---- the group: scratch dir and seed ---- */

/* Read the seed (RF_TEST_SEED) and print it; restart fx_rand. */
void fx_seed_init(void);
/* fx_seed_init, and make fx_dir (named after what); 0 or -1. */
int fx_dir_make(const char *what);
/* Remove fx_dir and everything in it; 0 or -1. */
int fx_dir_remove(void);
/* cmocka group setup/teardown: fx_dir_make(fx_what) and fx_dir_remove(). */
extern const char *fx_what;
int fx_group_setup(void **state);
int fx_group_teardown(void **state);
/* Run tests with the setup and teardown given; print the seed and how to
 * replay it when any test failed.  The number of failures. */
int fx_run_group_(const char *name, const struct CMUnitTest *tests, size_t n, CMFixtureFunction setup,
		  CMFixtureFunction teardown);
#define fx_run_tests_with(tests, setup, teardown) \
	fx_run_group_(#tests, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown)
/* The common case: a scratch dir named after what, nothing else. */
#define fx_run_tests(what, tests) \
	(fx_what = (what), fx_run_tests_with(tests, fx_group_setup, fx_group_teardown))

/* group_thread_cnt for the arrays a test opens, set per test by these
 * cmocka setups: fx_threads2, 2 worker threads a group (the default);
 * fx_inline0, none (the submitter does the work). */
extern int fx_gtc;
int fx_threads2(void **state);
int fx_inline0(void **state);

/* ---- random ---- */

struct fx_rng {
	uint64_t s;                     /* never 0 */
};

/* r's stream number tag of this run's seed: the same seed and tag, the
 * same numbers. */
void fx_rng_init(struct fx_rng *r, uint64_t tag);
/* xorshift64*: no short cycles in the low bits (an LCG's repeat the same
 * bytes every few KiB and hide mapping mistakes). */
uint64_t fx_rng_next(struct fx_rng *r);
/* len random bytes from r. */
void fx_rng_fill(struct fx_rng *r, void *buf, size_t len);
/* The binary's main stream (tag 0, restarted by fx_dir_make and
 * fx_rand_restart; one thread at a time). */
uint64_t fx_rand(void);
void fx_rand_fill(void *buf, size_t len);
void fx_rand_restart(uint64_t tag);

/* ---- concurrent writers ---- */

struct fx_writer {
	struct rf_array *a;
	struct fx_rng rng;              /* its own stream */
	int n;                          /* requests to make */
	int id;                         /* 0..nthreads-1 */
};

#define FX_MAX_WRITERS 16
/* nthreads (at most FX_MAX_WRITERS) threads running fn on a struct
 * fx_writer each (n requests, stream tag + id); returns once all ended. */
void fx_writers(struct rf_array *a, int nthreads, int n, uint64_t tag, void *(*fn)(void *));

/* ---- member files ---- */

/* fx_dir/<what>-<i>.img into buf. */
void fx_member_path(char *buf, size_t len, const char *what, int i);
/* Create (or truncate) path to bytes of zeros; its fd, open read-write. */
int fx_file_open(const char *path, uint64_t bytes);
/* The same, closed. */
void fx_file_make(const char *path, uint64_t bytes);
/* Members 0..n-1 of what, bytes each, zeros (random when garbage). */
void fx_make_members(const char *what, int n, uint64_t bytes, bool garbage);
/* Whether member 0 of `what` is a file in memory (tmpfs: the daemon maps it). */
bool fx_in_memory(const char *what);

/* ---- arrays ---- */

/* An array's shape in code; zero fields keep testcfg_init's choice. */
struct fx_array {
	const char *what;               /* its members: fx_member_path(what, i) */
	int level, layout, n;
	uint32_t chunk;                 /* bytes; 0 for raid1 */
	uint32_t stripe_size;           /* 0: 4096 */
	uint64_t data_offset;           /* bytes */
	uint64_t missing;               /* bit i: member i is "missing" */
};

/* cfg for sp: testcfg_init's tuning (2 groups of 2 threads, no
 * superblocks), the members' paths strdup'd (freed by fx_open). */
void fx_config(struct rf_config *cfg, const struct fx_array *sp);
/* Open cfg (its members and spares freed: fx_config's, or strdup'd); not started.  what names
 * the array in a failure. */
struct rf_array *fx_open_only(struct rf_config *cfg, const char *what);
/* Start a on the member backend ioq (NULL: liburing, as the daemon). */
void fx_start(struct rf_array *a, rf_ioq_init_fn ioq);
/* fx_open_only and fx_start. */
struct rf_array *fx_open(struct rf_config *cfg, const char *what, rf_ioq_init_fn ioq);
/* fx_config, fx_open; group_thread_cnt gtc (0: inline). */
struct rf_array *fx_open_spec(const struct fx_array *sp, int gtc, rf_ioq_init_fn ioq);
/* The config rf_assemble finds on n member paths; fail on error. */
void fx_assemble(struct rf_config *cfg, const char *const *paths, int n, bool readonly);
/* The array those members assemble to, as the daemon opens it: gtc
 * threads in each of 2 groups; not started (fx_start). */
struct rf_array *fx_open_assembled(const char *const *paths, int n, bool readonly, int gtc);

/* ---- the array against a model ----
 *
 * A model is the test's own copy of every byte of the array (model[off]),
 * kept up to date with each write the test makes; reads are compared with
 * it.  Requests go one at a time through testreq.h. */

/* A random extent of an array of size bytes, at most maxlen long: odd
 * lengths and offsets, sometimes whole 4 KiB blocks or 512-byte sectors. */
void fx_rand_extent(uint64_t size, uint32_t maxlen, uint64_t *off, uint32_t *len);
/* Write the whole array front to back in random-length pieces of random
 * bytes (every chunk and zone boundary crossed by some write), then
 * nwrites random writes over it; model holds the result. */
void fx_model_fill(struct rf_array *a, char *model, uint32_t maxlen, int nwrites);
/* n random requests of at most maxlen bytes, about half of them writes
 * (model updated), the rest reads compared with model; each request must
 * succeed.  The number of reads that differed from model. */
int fx_model_io(struct rf_array *a, char *model, int n, uint32_t maxlen);
/* Read the array whole through requests of maxlen; the number of bytes
 * that differ from model. */
uint64_t fx_model_diff(struct rf_array *a, const char *model, uint32_t maxlen);
/* How many of the n bytes at x and y differ; of the n at x are not 0
 * (memcmp first: the common answer, 0, comes fast under a sanitizer). */
uint64_t fx_bytes_differ(const char *x, const char *y, size_t n);
uint64_t fx_bytes_nonzero(const char *x, size_t n);
/* Member i of what, read whole into a malloc'd buffer (*len: its size). */
char *fx_member_slurp(const char *what, int i, uint64_t *len);

/* ---- members with md superblocks ---- */

struct rf_sb_new;
/* Members 0..n->raid_disks-1 of what, member_sectors each, with the 1.2
 * superblock of n (uuid 0x40 + 7i when n's is all zero, ctime 1700000000
 * when 0); their paths into paths[i]. */
void fx_md_members(struct rf_sb_new *n, const char *what, uint64_t member_sectors, char (*paths)[FX_PATH]);
/* fx_dir/<what>.conf of a level-level array of n members and nspare
 * spares of member_size (config words: "8M"), 1.2 superblocks, made by
 * rf_create() as `raidfuse create --assume-clean` makes it, an internal
 * bitmap of bitmap_chunk bytes (0: none); paths[] gets the members, then
 * the spares. */
void fx_create_md(const char *what, int level, int n, int nspare, const char *member_size, uint64_t bitmap_chunk,
		  char (*paths)[FX_PATH]);
/* The layout fx_create_md() names in its config ("o2", "f2", ...); NULL:
 * none (md's default). */
extern const char *fx_md_layout;
/* The data offset fx_create_md() names ("12K": no room before the data
 * for a reshape to move it); NULL: mdadm's default. */
extern const char *fx_md_data_offset;
/* The backup file fx_open_assembled() (fx_serve_md()) assembles with, as
 * --backup-file; NULL: none. */
extern const char *fx_backup_file;
/* The tuning.stripe_size fx_open_assembled() (fx_serve_md()) opens with;
 * 0: the default. */
extern uint32_t fx_stripe_size;
/* The array on paths[0..n) (members, then spares) assembled as the
 * daemon assembles it, started, its resync (if due) under way. */
struct rf_array *fx_serve_md(char (*paths)[FX_PATH], int n);

#endif
