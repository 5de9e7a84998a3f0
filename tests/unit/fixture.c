/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fixture.c - the unit tests' shared fixtures: see fixture.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "raidfuse/assemble.h"
#include "raidfuse/config.h"
#include "raidfuse/create.h"
#include "raidfuse/fdmap.h"
#include "raidfuse/stack.h"
#include "raidfuse/super.h"
#include "testreq.h"

char fx_dir[256];
uint64_t fx_seed = FX_DEFAULT_SEED;
const char *fx_what = "test";
int fx_gtc = 2;
static struct fx_rng fx_main;

/* Every test program serves arrays with the program's stack (stack.h),
 * set before main() as raidfuse's main() sets it first thing. */
__attribute__((constructor)) static void fx_stack(void)
{
	rf_stack_set(&rf_stack_default);
}

/* ---- random ---- */

void fx_rng_init(struct fx_rng *r, uint64_t tag)
{
	r->s = fx_seed ^ (tag * 0x9e3779b97f4a7c15ull);
	if (!r->s)
		r->s = 1;
}

uint64_t fx_rng_next(struct fx_rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

void fx_rng_fill(struct fx_rng *r, void *buf, size_t len)
{
	uint8_t *b = buf;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t v = fx_rng_next(r);

		memcpy(b + i, &v, 8);
	}
	for (; i < len; i++)
		b[i] = (uint8_t)(fx_rng_next(r) >> 56);
}

uint64_t fx_rand(void)
{
	if (!fx_main.s)
		fx_rng_init(&fx_main, 0);
	return fx_rng_next(&fx_main);
}

void fx_rand_fill(void *buf, size_t len)
{
	if (!fx_main.s)
		fx_rng_init(&fx_main, 0);
	fx_rng_fill(&fx_main, buf, len);
}

void fx_rand_restart(uint64_t tag)
{
	fx_rng_init(&fx_main, tag);
}

/* ---- the group ---- */

void fx_seed_init(void)
{
	const char *env = getenv("RF_TEST_SEED");

	if (env && *env)
		fx_seed = strtoull(env, NULL, 0);
	fx_rand_restart(0);
	printf("# seed %llu (RF_TEST_SEED overrides)\n", (unsigned long long)fx_seed);
}

int fx_dir_make(const char *what)
{
	fx_seed_init();
	return testdir_make(fx_dir, sizeof(fx_dir), what);
}

int fx_dir_remove(void)
{
	return testdir_remove(fx_dir);
}

int fx_group_setup(void **state)
{
	return fx_dir_make(fx_what);
}

int fx_group_teardown(void **state)
{
	return fx_dir_remove();
}

int fx_run_group_(const char *name, const struct CMUnitTest *tests, size_t n, CMFixtureFunction setup,
		  CMFixtureFunction teardown)
{
	int r;

	/* RF_TEST_FILTER=NAME (a glob): only the tests it names */
	if (getenv("RF_TEST_FILTER"))
		cmocka_set_test_filter(getenv("RF_TEST_FILTER"));
	r = _cmocka_run_group_tests(name, tests, n, setup, teardown);

	if (r)
		printf("# %d failed with seed %llu: RF_TEST_SEED=%llu replays this run\n", r,
		       (unsigned long long)fx_seed, (unsigned long long)fx_seed);
	return r;
}

int fx_threads2(void **state)
{
	fx_gtc = 2;
	return 0;
}

int fx_inline0(void **state)
{
	fx_gtc = 0;
	return 0;
}

/* ---- concurrent writers ---- */

void fx_writers(struct rf_array *a, int nthreads, int n, uint64_t tag, void *(*fn)(void *))
{
	struct fx_writer w[FX_MAX_WRITERS];
	pthread_t t[FX_MAX_WRITERS];
	int i;

	assert_true(nthreads > 0 && nthreads <= FX_MAX_WRITERS);
	for (i = 0; i < nthreads; i++) {
		w[i] = (struct fx_writer){ .a = a, .n = n, .id = i };
		fx_rng_init(&w[i].rng, tag + (uint64_t)i);
		assert_int_equal(pthread_create(&t[i], NULL, fn, &w[i]), 0);
	}
	for (i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
}

/* ---- member files ---- */

void fx_member_path(char *buf, size_t len, const char *what, int i)
{
	snprintf(buf, len, "%s/%s-%d.img", fx_dir, what, i);
}

int fx_file_open(const char *path, uint64_t bytes)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		fail_msg("%s: cannot create", path);
	if (ftruncate(fd, (off_t)bytes))
		fail_msg("%s: cannot size to %llu bytes", path, (unsigned long long)bytes);
	return fd;
}

void fx_file_make(const char *path, uint64_t bytes)
{
	close(fx_file_open(path, bytes));
}

void fx_make_members(const char *what, int n, uint64_t bytes, bool garbage)
{
	char *junk = garbage ? malloc(bytes) : NULL;
	int i;

	assert_true(!garbage || junk);
	for (i = 0; i < n; i++) {
		char p[FX_PATH];
		int fd;

		fx_member_path(p, sizeof(p), what, i);
		fd = fx_file_open(p, bytes);
		if (garbage) {
			fx_rand_fill(junk, bytes);
			assert_int_equal(pwrite(fd, junk, bytes, 0), (ssize_t)bytes);
		}
		close(fd);
	}
	free(junk);
}

bool fx_in_memory(const char *what)
{
	char p[FX_PATH];
	bool mem;
	int fd;

	fx_member_path(p, sizeof(p), what, 0);
	fd = open(p, O_RDONLY);
	mem = fd >= 0 && rf_fdmap_in_memory(fd);
	if (fd >= 0)
		close(fd);
	return mem;
}

/* ---- arrays ---- */

void fx_config(struct rf_config *cfg, const struct fx_array *sp)
{
	int i;

	testcfg_init(cfg, sp->level, sp->layout, sp->n, sp->chunk);
	cfg->data_offset = sp->data_offset;
	if (sp->stripe_size)
		cfg->stripe_size = sp->stripe_size;
	for (i = 0; i < sp->n; i++) {
		char p[FX_PATH];

		fx_member_path(p, sizeof(p), sp->what, i);
		cfg->members[i] = (sp->missing >> i) & 1 ? NULL : strdup(p);
	}
}

struct rf_array *fx_open_only(struct rf_config *cfg, const char *what)
{
	struct rf_array *a;
	char err[1024];
	int i;

	if (rf_array_open(cfg, &a, err, sizeof(err)))
		fail_msg("%s: %s", what, err);
	for (i = 0; i < cfg->nmembers; i++) {
		free(cfg->members[i]);
		cfg->members[i] = NULL;
	}
	for (i = 0; i < cfg->nspares; i++) {
		free(cfg->spares[i]);
		cfg->spares[i] = NULL;
	}
	return a;
}

void fx_start(struct rf_array *a, rf_ioq_init_fn ioq)
{
	if (ioq)
		rf_array_set_ioq_init(a, ioq);
	assert_int_equal(rf_array_start(a), 0);
}

struct rf_array *fx_open(struct rf_config *cfg, const char *what, rf_ioq_init_fn ioq)
{
	struct rf_array *a = fx_open_only(cfg, what);

	fx_start(a, ioq);
	return a;
}

struct rf_array *fx_open_spec(const struct fx_array *sp, int gtc, rf_ioq_init_fn ioq)
{
	struct rf_config cfg;

	fx_config(&cfg, sp);
	cfg.group_thread_cnt = gtc;
	return fx_open(&cfg, sp->what, ioq);
}

void fx_assemble(struct rf_config *cfg, const char *const *paths, int n, bool readonly)
{
	char err[1024];

	if (rf_assemble(paths, n, NULL, readonly, cfg, err, sizeof(err)))
		fail_msg("assemble: %s", err);
}

struct rf_array *fx_open_assembled(const char *const *paths, int n, bool readonly, int gtc)
{
	struct rf_config cfg;
	struct rf_array *a;

	fx_assemble(&cfg, paths, n, readonly);
	if (fx_backup_file)
		assert_non_null(cfg.backup_file = strdup(fx_backup_file));
	cfg.stripe_size = fx_stripe_size;
	cfg.group_thread_cnt = gtc;
	cfg.worker_groups = 2;
	a = fx_open_only(&cfg, "assembled");
	rf_config_free(&cfg);
	return a;
}

/* ---- the array against a model ---- */

void fx_rand_extent(uint64_t size, uint32_t maxlen, uint64_t *off, uint32_t *len)
{
	uint64_t l = 1 + fx_rand() % maxlen;

	switch (fx_rand() % 4) {
	case 0:
		l = (l + 4095) & ~4095ull;
		break;
	case 1:
		l = (l + 511) & ~511ull;
		break;
	default:
		break;
	}
	if (l > maxlen)
		l = maxlen;
	if (l > size)
		l = size;
	*off = fx_rand() % (size - l + 1);
	if (fx_rand() % 3 == 0)
		*off &= ~4095ull;
	*len = (uint32_t)l;
}

static void model_write(struct rf_array *a, char *model, char *buf, uint64_t off, uint32_t len)
{
	int ret;

	fx_rand_fill(buf, len);
	ret = testreq_io(a, RF_REQ_WRITE, off, len, buf);
	if (ret)
		fail_msg("write of %u bytes at %llu: %d", len, (unsigned long long)off, ret);
	memcpy(model + off, buf, len);
}

void fx_model_fill(struct rf_array *a, char *model, uint32_t maxlen, int nwrites)
{
	uint64_t size = rf_array_size(a), off = 0;
	char *buf = malloc(maxlen);
	uint32_t len;
	int i;

	assert_non_null(buf);
	while (off < size) {
		len = (uint32_t)(1 + fx_rand() % maxlen);
		if (len > size - off)
			len = (uint32_t)(size - off);
		model_write(a, model, buf, off, len);
		off += len;
	}
	for (i = 0; i < nwrites; i++) {
		fx_rand_extent(size, maxlen, &off, &len);
		model_write(a, model, buf, off, len);
	}
	free(buf);
}

int fx_model_io(struct rf_array *a, char *model, int n, uint32_t maxlen)
{
	uint64_t size = rf_array_size(a), off;
	char *buf = malloc(maxlen);
	int i, bad = 0, ret;
	uint32_t len;

	assert_non_null(buf);
	for (i = 0; i < n; i++) {
		fx_rand_extent(size, maxlen, &off, &len);
		if (fx_rand() % 2) {
			model_write(a, model, buf, off, len);
			continue;
		}
		ret = testreq_io(a, RF_REQ_READ, off, len, buf);
		if (ret)
			fail_msg("read of %u bytes at %llu: %d", len, (unsigned long long)off, ret);
		bad += memcmp(buf, model + off, len) != 0;
	}
	free(buf);
	return bad;
}

uint64_t fx_bytes_differ(const char *x, const char *y, size_t n)
{
	uint64_t bad = 0;
	size_t i;

	if (!memcmp(x, y, n))
		return 0;
	for (i = 0; i < n; i++)
		bad += x[i] != y[i];
	return bad;
}

uint64_t fx_bytes_nonzero(const char *x, size_t n)
{
	static const char zero[4096];
	uint64_t bad = 0;
	size_t i, l;

	for (i = 0; i < n; i += l) {
		l = n - i < sizeof(zero) ? n - i : sizeof(zero);
		bad += fx_bytes_differ(x + i, zero, l);
	}
	return bad;
}

/* Print where got and want (at array offset off) differ, in 512-byte
 * sectors, the first few extents of the comparison (*n counts them). */
static void diff_extents(const char *got, const char *want, uint64_t off, uint32_t len, int *n)
{
	uint32_t i = 0, j;

	while (i < len && *n < 8) {
		if (!memcmp(got + i, want + i, 512 < len - i ? 512 : len - i)) {
			i += 512;
			continue;
		}
		for (j = i; j < len && memcmp(got + j, want + j, 512 < len - j ? 512 : len - j); j += 512)
			;
		j = j < len ? j : len;
		print_message("model: bytes [%llu, %llu) differ (sectors %llu-%llu, read %s)\n",
			      (unsigned long long)(off + i), (unsigned long long)(off + j),
			      (unsigned long long)((off + i) >> 9), (unsigned long long)((off + j - 1) >> 9),
			      fx_bytes_nonzero(got + i, j - i) ? "data" : "zeros");
		(*n)++;
		i = j;
	}
}

uint64_t fx_model_diff(struct rf_array *a, const char *model, uint32_t maxlen)
{
	uint64_t size = rf_array_size(a), off, bad = 0, d;
	char *buf = malloc(maxlen);
	uint32_t len;
	int ret, nreported = 0;

	assert_non_null(buf);
	for (off = 0; off < size; off += len) {
		len = size - off < maxlen ? (uint32_t)(size - off) : maxlen;
		ret = testreq_io(a, RF_REQ_READ, off, len, buf);
		if (ret)
			fail_msg("read of %u bytes at %llu: %d", len, (unsigned long long)off, ret);
		d = fx_bytes_differ(buf, model + off, len);
		if (d)
			diff_extents(buf, model + off, off, len, &nreported);
		bad += d;
	}
	free(buf);
	return bad;
}

char *fx_member_slurp(const char *what, int i, uint64_t *len)
{
	char p[FX_PATH], *buf;
	struct stat st;
	int fd;

	fx_member_path(p, sizeof(p), what, i);
	fd = open(p, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		fail_msg("%s: cannot open", p);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	if (pread(fd, buf, (size_t)st.st_size, 0) != st.st_size)
		fail_msg("%s: short read", p);
	close(fd);
	*len = (uint64_t)st.st_size;
	return buf;
}

/* ---- members with md superblocks ---- */

void fx_md_members(struct rf_sb_new *n, const char *what, uint64_t member_sectors, char (*paths)[FX_PATH])
{
	static const uint8_t zero[16];
	char err[512];
	int i;

	if (!memcmp(n->uuid, zero, sizeof(zero)))
		for (i = 0; i < 16; i++)
			n->uuid[i] = (uint8_t)(0x40 + i * 7);
	if (!n->ctime)
		n->ctime = 1700000000;
	for (i = 0; i < n->raid_disks; i++) {
		int fd;

		fx_member_path(paths[i], FX_PATH, what, i);
		fd = fx_file_open(paths[i], member_sectors * 512);
		if (rf_sb_write12(fd, paths[i], n, i, member_sectors, err, sizeof(err)))
			fail_msg("%s", err);
		close(fd);
	}
}

const char *fx_md_layout;
const char *fx_md_data_offset;
const char *fx_backup_file;
uint32_t fx_stripe_size;

void fx_create_md(const char *what, int level, int n, int nspare, const char *member_size, uint64_t bitmap_chunk,
		  char (*paths)[FX_PATH])
{
	struct rf_create_opts o = { .assume_clean = true, .bitmap = bitmap_chunk ? 1 : 0,
				    .bitmap_chunk = bitmap_chunk };
	struct rf_config cfg;
	char conf[FX_PATH], err[1024];
	FILE *f;
	int i;

	snprintf(conf, sizeof(conf), "%s/%s.conf", fx_dir, what);
	f = fopen(conf, "w");
	assert_non_null(f);
	fprintf(f, "array: {\n\tname = \"array.img\";\n\tmetadata = \"1.2\";\n\tlevel = %d;\n", level);
	if (level != 1)
		fprintf(f, "\tchunk_size = \"64K\";\n");
	if (fx_md_layout)
		fprintf(f, "\tlayout = \"%s\";\n", fx_md_layout);
	if (fx_md_data_offset)
		fprintf(f, "\tdata_offset = \"%s\";\n", fx_md_data_offset);
	fprintf(f, "\tmember_size = \"%s\";\n\tmembers = (", member_size);
	for (i = 0; i < n + nspare; i++) {
		fx_member_path(paths[i], FX_PATH, what, i);
		unlink(paths[i]);
		if (i == n)
			fprintf(f, " );\n\tspares = (");
		fprintf(f, "%s\"%s-%d.img\"", i == 0 || i == n ? " " : ", ", what, i);
	}
	fprintf(f, " );\n};\n");
	assert_int_equal(fclose(f), 0);
	if (rf_config_load(conf, &cfg, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(rf_create(conf, &cfg, &o), 0);
	rf_config_free(&cfg);
}

struct rf_array *fx_serve_md(char (*paths)[FX_PATH], int n)
{
	const char *p[RF_MAX_DEVS];
	struct rf_array *a;
	int i;

	for (i = 0; i < n; i++)
		p[i] = paths[i];
	a = fx_open_assembled(p, n, false, fx_gtc);
	fx_start(a, NULL);
	assert_int_equal(rf_sbstate_start_resync(a, false), 0);
	return a;
}
