/* SPDX-License-Identifier: GPL-2.0-or-later */
/* crashstates.c - record a workload's member IO, replay the member images a
 * power cut could leave, and check what raidfuse makes of each of them.
 *
 *   crash-states record --log LOG [--seed S] [--rounds R] [--grow N | --raid6 | --rechunk | --raid5 |
 *                       --raid10] [--backup FILE]
 *                [--spare-last] MEMBER...
 *   crash-states check --log LOG --base DIR --work DIR [--states N]
 *                [--seed S] [--only K] [--save DIR] [--replay CMD] [--spare-last]
 *                [--backup NAME] MEMBER...
 *
 * record assembles the members (raidfuse create made them) in this process
 * through the library's own path (rf_assemble, rf_array_open, the io_uring
 * workers, the superblock keeper, the bitmap, shortened idle timers so
 * that clean marks and bitmap clears happen often) with the io log on
 * (iolog.h), and runs a workload: rounds of concurrent writes whose every
 * 512-byte sector carries its own array offset and a generation number
 * (one per write, rising), some rounds followed by a flush of the array
 * (what fsync of the image does), some by an idle pause: short ones in
 * which the bitmap clears its bits, long ones in which the superblocks
 * go clean.  With --grow N (the members given include the spares it
 * takes) a third of the way in the array starts growing to N members
 * (rf_reshape_grow(), md/raid_disks), paced so that the reshape runs
 * beside the rest of the workload, and the recording ends once it is
 * done; --raid6 changes a raid4/5 to raid6 that way instead
 * (rf_reshape_level(), md/level: one spare more), --rechunk its chunk to
 * 128 KiB (rf_reshape_layout(), md/chunk_size), and --raid5 takes a raid4
 * or a raid1 of two over as raid5 (md/level: superblocks only), or a raid0
 * as a parity-last raid5 of one member more (its P rebuilt onto the spare);
 * --raid10 takes a raid0 over as a near-2 raid10 of twice its members
 * (md/level: each member in slot 2i, the copies' slots empty), the spare
 * rebuilt into the first.
 * --backup FILE (with --grow N, on members with no room before their
 * data): the grow goes in place through mdadm's backup file FILE
 * (rf_reshape_set_backup_file(), md/backup_file, before md/raid_disks);
 * its writes and fsyncs are in the log beside the members' (iolog.h names
 * each file it sees), so that check rebuilds it too.
 * --spare-last: the last member is no member yet but a blank file, added
 * as a spare once the array runs (a raid0 takes none at creation), for a
 * raid0's growth (--grow: through a raid4, back to a raid0) or takeover.
 * Each write's
 * submission and end and each flush's submission and acknowledgement go
 * into the log as notes, in the same order as the member IO.
 *
 * check builds crash states from the log and the members as they were
 * before the workload (--base): a crash point P is a place in the log;
 * of the member writes submitted before P, those that ended before a
 * flush of the same member was issued (and that flush ended before P) are
 * on the member; every other one is there or not, each independently, or
 * torn (any subset of its 512-byte sectors): a volatile write cache.
 * The points are every flush boundary (just before a flush is issued,
 * just after one ends) with all or none of the volatile writes, then
 * random points with random subsets.  State K of seed S and N states is
 * always the same state: --states N --only K replays it.
 * With --backup NAME the file of that name (a grow in place's backup
 * file, in --base as it was before the workload: empty) is one more file
 * of the state, rebuilt by the same rule (its size: the furthest write
 * the log has of it, what a lost write left past the file's end reads
 * as zeros), and each state is assembled with it (`assemble
 * --backup-file`: a position inside the critical section is restored
 * from it).
 *
 * For each state the members are written to --work and then, as after a
 * real crash: rf_assemble() (what `raidfuse assemble` does), the array
 * opened and started, a reshape the superblocks record run to its end,
 * the resync the superblocks demand run to its end
 * (bounded by the bitmap where there is one), a check run, the whole
 * array read, the array closed.  A violation is any of:
 *  - the superblocks disagree by more than one event, or do not assemble;
 *  - the check counts mismatches after the resync;
 *  - a sector holds data never written there before P, or a written one
 *    is damaged; past the array's size before a grow, anything but zeros;
 *  - a sector of a write that ended before an acknowledged flush (ack
 *    before P) reads older than that write;
 *  - after the clean close the superblocks are not all clean, in sync,
 *    with one events count (spares aside: md leaves their superblocks
 *    alone on clean and dirty);
 *  - with --backup, a reshape found at assembly ended but left its backup
 *    file (mdadm removes it).
 * Each violation is printed, and with --save the state's members are
 * kept in DIR/state-K with what replays it.  The last line says
 * "crash states: N checked, V violations"; exit 1 when V > 0.
 *
 * What it does NOT do: model a member that fails (no IO errors are
 * injected), reads, or more than one array.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "raidfuse/assemble.h"
#include "raidfuse/bitmap.h"
#include "raidfuse/fdio.h"
#include "raidfuse/iolog.h"
#include "raidfuse/reshape.h"
#include "raidfuse/stack.h"
#include "raidfuse/super.h"
#include "raidfuse/sync.h"
#include "services/sbstate.h"
#include "testreq.h"

#define SECTOR 512u
#define BLOCK 4096u
#define STAMP_MAGIC 0x5446524353484352ull   /* "RCHSCRFT" */
#define MAX_MEMBERS 16

/* The workload's notes in the io log. */
enum note_kind {
	NOTE_GEOM = 1,          /* a: array bytes */
	NOTE_WSUB,              /* a: generation, b: array offset, c: length */
	NOTE_WDONE,             /* a: generation, c: 0 or -errno */
	NOTE_FSUB,              /* a: flush number */
	NOTE_FACK,              /* a: flush number, c: 0 or -errno */
	NOTE_BKMADE,            /* the backup file did not exist: the daemon makes it */
};

/* ---- small things ---- */

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rng_below(uint64_t *s, uint64_t n)
{
	return n ? rng_next(s) % n : 0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *fmt, const char *what)
{
	fprintf(stderr, "crash-states: ");
	fprintf(stderr, fmt, what);
	fputc('\n', stderr);
	exit(2);
}

/* The sector at array byte offset off as generation gen writes it. */
static void stamp(uint64_t *w, uint64_t off, uint64_t gen)
{
	unsigned i;

	w[0] = STAMP_MAGIC;
	w[1] = off;
	w[2] = gen;
	for (i = 3; i < SECTOR / 8; i++)
		w[i] = (off * 0x100000001b3ull) ^ (gen << 20) ^ i;
}

/* The generation a sector read at off holds: 0 for never written (all
 * zero), -1 for anything that is no stamp of this offset. */
static int64_t unstamp(const uint64_t *w, uint64_t off)
{
	uint64_t want[SECTOR / 8];
	unsigned i;

	if (w[0] == 0) {
		for (i = 1; i < SECTOR / 8; i++)
			if (w[i])
				return -1;
		return 0;
	}
	if (w[0] != STAMP_MAGIC || w[1] != off || w[2] == 0 || w[2] > INT64_MAX)
		return -1;
	stamp(want, off, w[2]);
	return memcmp(want, w, SECTOR) ? -1 : (int64_t)w[2];
}

/* ---- record ---- */

struct inflight {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int pending, err;
};

struct wreq {
	struct rf_req *r;
	struct inflight *in;
	uint64_t gen;
};

static void wdone(struct rf_req *r, int err)
{
	struct wreq *w = r->priv;
	struct inflight *in = w->in;

	if (r->op == RF_REQ_WRITE)
		rf_iolog_note(NOTE_WDONE, w->gen, 0, err);
	else
		rf_iolog_note(NOTE_FACK, w->gen, 0, err);
	pthread_mutex_lock(&in->lock);
	if (err && !in->err)
		in->err = err;
	in->pending--;
	pthread_cond_signal(&in->cond);
	pthread_mutex_unlock(&in->lock);
}

static void wait_all(struct inflight *in)
{
	pthread_mutex_lock(&in->lock);
	while (in->pending)
		pthread_cond_wait(&in->cond, &in->lock);
	pthread_mutex_unlock(&in->lock);
}

#define MAX_PER_ROUND 4
#define MAX_BLOCKS 48

/* The absolute path of a file not made yet (its directory resolved) in
 * abs (PATH_MAX bytes); false when the directory does not exist. */
static bool backup_abs(const char *path, char *abs)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
	if (!*dir)
		snprintf(dir, sizeof(dir), "/");
	if (!realpath(dir, abs) || strlen(abs) + 1 + strlen(base) >= PATH_MAX)
		return false;
	strcat(abs, "/");
	strcat(abs, base);
	return true;
}

static int cmd_record(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "log", required_argument, NULL, 'l' },
		{ "seed", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "grow", required_argument, NULL, 'g' },
		{ "raid6", no_argument, NULL, '6' },
		{ "rechunk", no_argument, NULL, 'k' },
		{ "raid5", no_argument, NULL, '5' },
		{ "raid10", no_argument, NULL, 'T' },
		{ "spare-last", no_argument, NULL, 'S' },
		{ "backup", required_argument, NULL, 'B' },
		{ NULL, 0, NULL, 0 },
	};
	const char *logpath = NULL, *backup = NULL, *paths[MAX_MEMBERS];
	struct inflight in = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
	struct wreq w[MAX_PER_ROUND], fl;
	uint64_t seed = 1, gen = 0, nflush = 0, size, nblocks, hot;
	struct rf_config cfg;
	struct rf_array *a;
	char err[1024];
	int c, n, i, rounds = 150, round, r, grow_to = 0;
	bool to6 = false, rechunk = false, to5 = false, to10 = false, spare_last = false;
	uint64_t pos;
	bool back;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'l')
			logpath = optarg;
		else if (c == 'g')
			grow_to = atoi(optarg);
		else if (c == '6')
			to6 = true;
		else if (c == 'k')
			rechunk = true;
		else if (c == '5')
			to5 = true;
		else if (c == 'T')
			to10 = true;
		else if (c == 'S')
			spare_last = true;
		else if (c == 'B')
			backup = optarg;
		else if (c == 's')
			seed = strtoull(optarg, NULL, 0);
		else if (c == 'r')
			rounds = atoi(optarg);
		else
			return 2;
	}
	n = argc - optind;
	if (!logpath || n < 2 || n > MAX_MEMBERS)
		die("record: expected --log LOG and 2..16 members%s", "");
	if (backup && !grow_to)
		die("record: --backup goes with --grow N%s", "");
	for (i = 0; i < n; i++)
		paths[i] = argv[optind + i];
	r = rf_iolog_open(logpath);
	if (r)
		die("record: cannot open the log: %s", strerror(-r));
	if (rf_assemble(paths, n - spare_last, NULL, false, &cfg, err, sizeof(err)))
		die("record: %s", err);
	cfg.group_thread_cnt = 2;
	cfg.worker_groups = 2;
	if (rf_array_open(&cfg, &a, err, sizeof(err)))
		die("record: %s", err);
	rf_config_free(&cfg);
	if (rf_array_start(a))
		die("record: the workers did not start%s", "");
	/* Short idle timers: a pause of the workload lets the superblocks
	 * go clean and the bitmap clear its bits, many times over. */
	if (rf_array_sbstate(a))
		rf_bg_set_period(&rf_array_sbstate(a)->timer, 10);
	if (rf_array_bitmap(a))
		rf_bitmap_set_period_ms(rf_array_bitmap(a), 2);
	rf_sbstate_start_resync(a, false);
	rf_sync_wait(a);
	/* A raid0 takes no spare at creation: this one is added here (its
	 * superblock's write is in the log). */
	if (spare_last && rf_memberctl_add_spare(a, paths[n - 1], err, sizeof(err)))
		die("record: adding the spare: %s", err);
	size = rf_array_size(a);
	nblocks = size / BLOCK;
	hot = nblocks < 256 ? nblocks : 256;    /* 1 MiB where writes collide */
	rf_iolog_note(NOTE_GEOM, size, 0, 0);
	for (i = 0; i < MAX_PER_ROUND; i++) {
		w[i].r = rf_req_alloc(a, MAX_BLOCKS * BLOCK);
		w[i].r->buf = aligned_alloc(BLOCK, MAX_BLOCKS * BLOCK);
		w[i].in = &in;
	}
	fl.r = rf_req_alloc(a, 0);
	fl.in = &in;
	for (round = 0; round < rounds; round++) {
		uint64_t lo[MAX_PER_ROUND], hi[MAX_PER_ROUND];
		int k = 1 + (int)rng_below(&seed, MAX_PER_ROUND), j, nw = 0;

		if ((to5 || to10) && round == rounds / 3 && rf_reshape_level(a, to5 ? 5 : 10, err, sizeof(err)))
			die("record: the takeover was refused: %s", err);
		if ((grow_to || to6 || rechunk) && round == rounds / 3) {
			/* Slow enough to span the rest of the workload. */
			rf_sync_set_speed_max(a, 2048);
			if (backup) {
				char abs[PATH_MAX];

				if (!realpath(backup, abs)) {
					/* Made by the daemon: the check
					 * models its name's durability. */
					if (errno != ENOENT || !backup_abs(backup, abs))
						die("record: the backup file %s: its directory does not exist",
						    backup);
					rf_iolog_note(NOTE_BKMADE, 0, 0, 0);
				}
				if (rf_reshape_set_backup_file(a, abs, err, sizeof(err)))
					die("record: %s", err);
			}
			if (to6 ? rf_reshape_level(a, 6, err, sizeof(err)) :
			    rechunk ? rf_reshape_layout(a, -1, 256, err, sizeof(err)) :
			    rf_reshape_grow(a, grow_to, err, sizeof(err)))
				die("record: the reshape was refused: %s", err);
		}

		for (i = 0; i < k; i++) {
			uint64_t b, len, s;
			bool clash = false;

			len = rng_below(&seed, 8) ? 1 + rng_below(&seed, 16) : MAX_BLOCKS;
			if (len > nblocks)
				len = nblocks;
			b = rng_below(&seed, 2) ? rng_below(&seed, hot) : rng_below(&seed, nblocks);
			if (b + len > nblocks)
				b = nblocks - len;
			for (j = 0; j < nw; j++)
				if (b < hi[j] && lo[j] < b + len)
					clash = true;
			if (clash)
				continue;       /* concurrent writes never share a block */
			lo[nw] = b;
			hi[nw] = b + len;
			w[nw].gen = ++gen;
			for (s = 0; s < len * BLOCK / SECTOR; s++)
				stamp((uint64_t *)(w[nw].r->buf + s * SECTOR), b * BLOCK + s * SECTOR, gen);
			w[nw].r->op = RF_REQ_WRITE;
			w[nw].r->off = b * BLOCK;
			w[nw].r->len = (uint32_t)(len * BLOCK);
			w[nw].r->priv = &w[nw];
			w[nw].r->done = wdone;
			nw++;
		}
		in.pending = nw;
		for (i = 0; i < nw; i++) {
			rf_iolog_note(NOTE_WSUB, w[i].gen, w[i].r->off, w[i].r->len);
			rf_req_submit(a, w[i].r);
		}
		wait_all(&in);
		if (in.err)
			die("record: a write failed: %s", strerror(-in.err));
		if (!rng_below(&seed, 3)) {
			fl.gen = ++nflush;
			fl.r->op = RF_REQ_FLUSH;
			fl.r->off = 0;
			fl.r->len = 0;
			fl.r->buf = NULL;
			fl.r->priv = &fl;
			fl.r->done = wdone;
			in.pending = 1;
			rf_iolog_note(NOTE_FSUB, fl.gen, 0, 0);
			rf_req_submit(a, fl.r);
			wait_all(&in);
			if (in.err)
				die("record: a flush failed: %s", strerror(-in.err));
		}
		/* Short pauses let the bitmap clear bits (2 passes of 2 ms)
		 * while the superblocks stay dirty; long ones let them go
		 * clean (2 periods of 10 ms). */
		r = (int)rng_below(&seed, 10);
		if (r < 2)
			sleep_ms(8);
		else if (r == 2)
			sleep_ms(40);
	}
	if (grow_to || to6 || rechunk || to5 || to10) {
		struct rf_array_info info;

		rf_sync_set_speed_max(a, INT32_MAX);
		for (i = 0; i < 6000 && rf_array_reshape(a, &pos, &back); i++)
			sleep_ms(10);
		if (rf_array_reshape(a, &pos, &back))
			die("record: the grow did not end in 60 s%s", "");
		/* a raid0 made a raid5 or raid10: its spare rebuilt (the slots
		 * no file is left for stay empty) */
		for (i = 0; i < 6000 && spare_last &&
			    (rf_array_get_info(a, &info), info.degraded > info.raid_disks - n); i++)
			sleep_ms(10);
	}
	for (i = 0; i < MAX_PER_ROUND; i++) {
		free(w[i].r->buf);
		rf_req_free(w[i].r);
	}
	rf_req_free(fl.r);
	rf_array_close(a);
	rf_iolog_close();
	printf("recorded %llu writes, %llu flushes\n", (unsigned long long)gen, (unsigned long long)nflush);
	return 0;
}

/* ---- the log ---- */

struct op {
	uint64_t sub, comp;             /* seqs; comp UINT64_MAX: never ended */
	uint64_t off;
	uint32_t len;
	int file;                       /* member index, -1: not a member */
	uint16_t kind;                  /* RF_IOLOG_WRITE / FLUSH */
	int64_t res;
	const char *data;
};

struct gen {                            /* one workload write */
	uint64_t off, len;
	uint64_t sub, done;             /* seqs of its notes; done UINT64_MAX: never */
};

struct flushnote {
	uint64_t sub, ack;
	int64_t res;
};

struct log {
	char *buf;
	size_t size;
	uint64_t nseq;                  /* the last seq */
	struct op *ops;
	size_t nops;
	struct gen *gens;               /* by generation, [0] unused */
	uint64_t ngens;
	struct flushnote *flushes;      /* by flush number, [0] unused */
	uint64_t nflushes;
	uint64_t array_size;
	bool bk_made;                   /* NOTE_BKMADE seen */
};

static void *grow(void *p, size_t *cap, size_t want, size_t elem)
{
	if (want < *cap)
		return p;
	*cap = *cap ? *cap * 2 : 1024;
	if (*cap <= want)
		*cap = want + 1;
	p = realloc(p, *cap * elem);
	if (!p)
		die("out of memory%s", "");
	return p;
}

static void load_log(struct log *L, const char *path, char *const *names, int n)
{
	size_t cap_ops = 0, cap_gens = 0, cap_fl = 0, cap_map = 0, pos;
	int fd = open(path, O_RDONLY), filemap[1024];
	size_t *bysub = NULL;           /* seq -> op index + 1 */
	struct stat st;
	ssize_t got;
	int i;

	if (fd < 0 || fstat(fd, &st))
		die("cannot read the log %s", path);
	L->size = (size_t)st.st_size;
	L->buf = malloc(L->size + 1);
	if (!L->buf)
		die("out of memory%s", "");
	for (pos = 0; pos < L->size; pos += (size_t)got) {
		got = pread(fd, L->buf + pos, L->size - pos, (off_t)pos);
		if (got <= 0)
			die("cannot read the log %s", path);
	}
	close(fd);
	for (i = 0; i < 1024; i++)
		filemap[i] = -1;
	for (pos = 0; pos + sizeof(struct rf_iolog_rec) <= L->size;) {
		struct rf_iolog_rec r;
		const char *payload = L->buf + pos + sizeof(r);

		memcpy(&r, L->buf + pos, sizeof(r));
		if (r.magic != RF_IOLOG_MAGIC || pos + sizeof(r) + r.len > L->size)
			die("the log %s is damaged", path);
		pos += sizeof(r) + r.len;
		L->nseq = r.seq;
		if (r.type == RF_IOLOG_FILE && r.file < 1024) {
			char p[PATH_MAX];
			const char *base;
			int j;

			snprintf(p, sizeof(p), "%.*s", (int)r.len, payload);
			base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
			for (j = 0; j < n; j++)
				if (!strcmp(base, names[j]))
					filemap[r.file] = j;
		} else if (r.type == RF_IOLOG_SUBMIT) {
			struct op *o;

			L->ops = grow(L->ops, &cap_ops, L->nops, sizeof(*L->ops));
			o = &L->ops[L->nops++];
			o->sub = r.seq;
			o->comp = UINT64_MAX;
			o->off = r.off;
			o->len = r.len;
			o->file = r.file < 1024 ? filemap[r.file] : -1;
			o->kind = r.op;
			o->res = 0;
			o->data = payload;
			bysub = grow(bysub, &cap_map, r.seq, sizeof(*bysub));
			bysub[r.seq] = L->nops;
		} else if (r.type == RF_IOLOG_COMPLETE) {
			if (r.id < cap_map && bysub[r.id]) {
				L->ops[bysub[r.id] - 1].comp = r.seq;
				L->ops[bysub[r.id] - 1].res = r.res;
			}
		} else if (r.type == RF_IOLOG_NOTE) {
			switch (r.op) {
			case NOTE_GEOM:
				L->array_size = r.id;
				break;
			case NOTE_WSUB:
				L->gens = grow(L->gens, &cap_gens, r.id, sizeof(*L->gens));
				L->gens[r.id] = (struct gen){ r.off, (uint64_t)r.res, r.seq, UINT64_MAX };
				if (r.id > L->ngens)
					L->ngens = r.id;
				break;
			case NOTE_WDONE:
				if (r.id <= L->ngens && !r.res)
					L->gens[r.id].done = r.seq;
				break;
			case NOTE_FSUB:
				L->flushes = grow(L->flushes, &cap_fl, r.id, sizeof(*L->flushes));
				L->flushes[r.id] = (struct flushnote){ r.seq, UINT64_MAX, 0 };
				if (r.id > L->nflushes)
					L->nflushes = r.id;
				break;
			case NOTE_FACK:
				if (r.id <= L->nflushes) {
					L->flushes[r.id].ack = r.seq;
					L->flushes[r.id].res = r.res;
				}
				break;
			case NOTE_BKMADE:
				L->bk_made = true;
				break;
			}
		}
	}
	free(bysub);
	if (!L->array_size)
		die("the log %s has no workload in it", path);
}

/* ---- states ---- */

struct member {
	char path[PATH_MAX];            /* the state's file, in --work */
	char *base, *img;               /* before the workload; the state */
	size_t size;
};

enum mode { MODE_ALL, MODE_NONE, MODE_RANDOM };

struct state {
	uint64_t k, point;              /* crash before the record of seq point */
	enum mode mode;
	uint64_t rng;
};

static const char *mode_name(enum mode m)
{
	return m == MODE_ALL ? "every volatile write kept" : m == MODE_NONE ? "every volatile write lost"
									   : "random volatile writes, torn";
}

/* The flush boundaries: just before each member flush is issued, just
 * after each ends. */
static uint64_t *boundaries(const struct log *L, size_t *nb)
{
	uint64_t *b = malloc((2 * L->nops + 1) * sizeof(*b));
	size_t i, n = 0;

	for (i = 0; i < L->nops; i++) {
		if (L->ops[i].kind != RF_IOLOG_FLUSH || L->ops[i].file < 0)
			continue;
		b[n++] = L->ops[i].sub;
		if (L->ops[i].comp != UINT64_MAX)
			b[n++] = L->ops[i].comp + 1;
	}
	*nb = n;
	return b;
}

/* State k of n.  The first ones go over the flush boundaries: each twice
 * (every volatile write kept, then lost) when n leaves a quarter for
 * random states after that; else each once (kept or lost at random),
 * spread evenly when there are fewer than two thirds of n.  The rest are
 * random points with random subsets. */
static void pick_state(struct state *s, uint64_t k, uint64_t n, uint64_t seed, const uint64_t *b, size_t nb,
		       uint64_t nseq)
{
	bool twice = 2 * nb <= n * 3 / 4;
	uint64_t ndet = twice ? 2 * nb : nb < n * 2 / 3 ? nb : n * 2 / 3;

	s->k = k;
	s->rng = seed * 0x2545f4914f6cdd1dull + k + 1;
	rng_next(&s->rng);
	if (twice && k < ndet) {
		s->point = b[k / 2];
		s->mode = k % 2 ? MODE_NONE : MODE_ALL;
		return;
	}
	if (k < ndet) {
		s->point = b[k * nb / ndet];
		s->mode = rng_below(&s->rng, 2) ? MODE_NONE : MODE_ALL;
		return;
	}
	s->point = rng_below(&s->rng, 2) && nb ? b[rng_below(&s->rng, nb)] : 1 + rng_below(&s->rng, nseq + 1);
	s->mode = rng_below(&s->rng, 4) == 0 ? MODE_ALL : rng_below(&s->rng, 3) == 0 ? MODE_NONE : MODE_RANDOM;
}

/* Build the files of state s (the members, a backup file) in m[].img. */
static void build_state(const struct log *L, struct member *m, int n, const struct state *s)
{
	uint64_t durable[MAX_MEMBERS + 1] = { 0 };      /* writes ended before this seq are on disk */
	uint64_t rng = s->rng;
	size_t i;
	int j;

	for (j = 0; j < n; j++)
		memcpy(m[j].img, m[j].base, m[j].size);
	/* A member's flush that ended before the point covers the writes
	 * that had ended when it was issued. */
	for (i = 0; i < L->nops; i++) {
		const struct op *o = &L->ops[i];

		if (o->kind == RF_IOLOG_FLUSH && o->file >= 0 && o->comp < s->point && o->res == 0 &&
		    o->sub > durable[o->file])
			durable[o->file] = o->sub;
	}
	for (i = 0; i < L->nops && L->ops[i].sub < s->point; i++) {
		const struct op *o = &L->ops[i];
		struct member *mm;
		uint64_t len = o->len, sec;
		bool keep;

		if (o->kind != RF_IOLOG_WRITE || o->file < 0)
			continue;
		mm = &m[o->file];
		if (o->off >= mm->size)
			continue;
		if (len > mm->size - o->off)
			len = mm->size - o->off;
		if (o->comp < durable[o->file] && o->res == (int64_t)o->len) {
			memcpy(mm->img + o->off, o->data, len);
			continue;
		}
		if (s->mode != MODE_RANDOM) {
			if (s->mode == MODE_ALL)
				memcpy(mm->img + o->off, o->data, len);
			continue;
		}
		switch (rng_below(&rng, 3)) {
		case 0:
			memcpy(mm->img + o->off, o->data, len);
			break;
		case 1:
			break;
		default:
			/* torn: each sector (512 bytes from the write's start) or not */
			for (sec = 0; sec < len; sec += SECTOR) {
				uint64_t l = len - sec < SECTOR ? len - sec : SECTOR;

				keep = rng_below(&rng, 2);
				if (keep)
					memcpy(mm->img + o->off + sec, o->data + sec, l);
			}
			break;
		}
	}
}

static int write_file(const char *path, const char *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600), r;

	if (fd < 0)
		return -errno;
	r = rf_pwrite_full(fd, buf, len, 0);
	close(fd);
	return r;
}

static int read_file(const char *path, char **buf, size_t *len)
{
	int fd = open(path, O_RDONLY), r;
	struct stat st;

	if (fd < 0 || fstat(fd, &st)) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		return r;
	}
	*len = (size_t)st.st_size;
	*buf = malloc(*len + 1);
	if (!*buf) {
		close(fd);
		return -ENOMEM;
	}
	r = rf_pread_full(fd, *buf, *len, 0);
	close(fd);
	return r;
}

/* ---- checking one state ---- */

struct verdict {
	int nviol;
	char msg[4096];
	size_t used;
};

static void viol(struct verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void viol(struct verdict *v, const char *fmt, ...)
{
	va_list ap;
	int w;

	v->nviol++;
	if (v->used + 2 >= sizeof(v->msg))
		return;
	va_start(ap, fmt);
	w = vsnprintf(v->msg + v->used, sizeof(v->msg) - v->used - 1, fmt, ap);
	va_end(ap);
	if (w > 0)
		v->used += (size_t)w < sizeof(v->msg) - v->used - 1 ? (size_t)w : sizeof(v->msg) - v->used - 1;
	v->msg[v->used++] = '\n';
	v->msg[v->used] = '\0';
}

static int read_sbs(struct member *m, int n, struct rf_sb *sb, bool *ok)
{
	char err[512];
	int j, bad = 0;

	for (j = 0; j < n; j++) {
		int fd = open(m[j].path, O_RDONLY);

		ok[j] = fd >= 0 && !rf_sb_read(fd, m[j].path, &sb[j], err, sizeof(err));
		if (fd >= 0)
			close(fd);
		bad += !ok[j];
	}
	return bad;
}

/* The data: every sector written before the point or never; no older
 * than the newest write an acknowledged flush covered. */
static void check_data(const struct log *L, struct rf_array *a, const struct state *s, struct verdict *v)
{
	uint64_t size = L->array_size, nsec = size / SECTOR, off, f, g, acked_before = 0;
	uint64_t *minimum = calloc(nsec, sizeof(*minimum));
	uint32_t chunk = 1u << 20;
	char *buf = aligned_alloc(BLOCK, chunk);
	int reported = 0;

	/* The last flush acknowledged before the point covers every write
	 * that had ended when it was issued. */
	for (f = 1; f <= L->nflushes; f++)
		if (L->flushes[f].ack < s->point && L->flushes[f].res == 0)
			acked_before = L->flushes[f].sub;
	for (g = 1; g <= L->ngens; g++) {
		const struct gen *w = &L->gens[g];
		uint64_t x;

		if (w->done >= acked_before)
			continue;
		for (x = w->off / SECTOR; x < (w->off + w->len) / SECTOR && x < nsec; x++)
			if (g > minimum[x])
				minimum[x] = g;
	}
	for (off = 0; off < size; off += chunk) {
		uint32_t len = size - off < chunk ? (uint32_t)(size - off) : chunk, i;
		int r = testreq_io(a, RF_REQ_READ, off, len, buf);

		if (r) {
			viol(v, "reading the array at %llu: %s", (unsigned long long)off, strerror(-r));
			break;
		}
		for (i = 0; i < len && reported < 4; i += SECTOR) {
			uint64_t at = off + i;
			int64_t got = unstamp((const uint64_t *)(buf + i), at);
			const struct gen *w = got > 0 && (uint64_t)got <= L->ngens ? &L->gens[got] : NULL;

			if (got < 0) {
				viol(v, "array byte %llu holds data never written there", (unsigned long long)at);
				reported++;
			} else if (got > 0 && (!w || w->sub >= s->point || at < w->off || at >= w->off + w->len)) {
				viol(v, "array byte %llu holds generation %lld, not written there before the crash",
				     (unsigned long long)at, (long long)got);
				reported++;
			} else if ((uint64_t)got < minimum[at / SECTOR]) {
				viol(v, "array byte %llu holds generation %lld, but generation %llu was acknowledged "
				     "by a flush before the crash", (unsigned long long)at, (long long)got,
				     (unsigned long long)minimum[at / SECTOR]);
				reported++;
			}
		}
	}
	/* A grow's new room held nothing before it: zeros. */
	for (off = size; off < rf_array_size(a) && reported < 4; off += chunk) {
		uint32_t len = rf_array_size(a) - off < chunk ? (uint32_t)(rf_array_size(a) - off) : chunk, i;
		int r = testreq_io(a, RF_REQ_READ, off, len, buf);

		if (r) {
			viol(v, "reading the array at %llu: %s", (unsigned long long)off, strerror(-r));
			break;
		}
		for (i = 0; i < len && reported < 4; i += SECTOR)
			if (unstamp((const uint64_t *)(buf + i), off + i) != 0) {
				viol(v, "array byte %llu, past the size before the grow, holds data",
				     (unsigned long long)(off + i));
				reported++;
			}
	}
	free(buf);
	free(minimum);
}

/* check --spare-last: the last member is the spare the recording added
 * (a raid0's): before its superblock is whole it is no member yet. */
static bool chk_spare_last;
/* check --backup: the state's backup file (after the members in m[]),
 * given to the assembly; NULL: none. */
static const struct member *chk_backup;
static int chk_backup_index;            /* its file index in the log's ops */

/* Whether the backup file is there in a cut before seq point: one made
 * before the recording, always; one the daemon made, once a flush of its
 * name (RF_IOLOG_NAMED) ended well before the point. */
static bool bk_named(const struct log *L, uint64_t point)
{
	size_t i;

	if (!L->bk_made)
		return true;
	for (i = 0; i < L->nops && L->ops[i].sub < point; i++)
		if (L->ops[i].kind == RF_IOLOG_NAMED && L->ops[i].file == chk_backup_index && L->ops[i].comp < point &&
		    L->ops[i].res == 0)
			return true;
	return false;
}

static void check_state(const struct log *L, struct member *m, int n, const struct state *s, struct verdict *v)
{
	const char *paths[MAX_MEMBERS];
	struct rf_sb sb[MAX_MEMBERS];
	bool ok[MAX_MEMBERS];
	struct rf_sync_status st;
	uint64_t fresh = 0;
	struct rf_config cfg;
	struct rf_array *a;
	char err[1024];
	uint64_t pos;
	bool back, skip, reshaping;
	int j, r;

	for (j = 0; j < n; j++) {
		r = write_file(m[j].path, m[j].img, m[j].size);
		if (r)
			die("cannot write a state member: %s", strerror(-r));
		paths[j] = m[j].path;
	}
	/* A backup file the daemon made is there only once its name was made
	 * durable (its directory flushed) before the cut. */
	if (chk_backup && bk_named(L, s->point)) {
		r = write_file(chk_backup->path, chk_backup->img, chk_backup->size);
		if (r)
			die("cannot write the state's backup file: %s", strerror(-r));
	} else if (chk_backup && unlink(chk_backup->path) && errno != ENOENT) {
		die("cannot remove the state's backup file: %s", strerror(errno));
	}
	/* What the crash left: every superblock readable, none stale. */
	j = read_sbs(m, n, sb, ok);
	if (chk_spare_last && !ok[n - 1]) {
		n--;
		j--;
	}
	if (j)
		viol(v, "a member's superblock is unreadable after the crash");
	for (j = 0; j < n; j++)
		if (ok[j] && sb[j].events > fresh)
			fresh = sb[j].events;
	for (j = 0; j < n; j++)
		if (ok[j] && sb[j].events + 1 < fresh)
			viol(v, "member %d: events %llu, another member has %llu: it would be left out as stale", j,
			     (unsigned long long)sb[j].events, (unsigned long long)fresh);
	if (rf_assemble(paths, n, NULL, false, &cfg, err, sizeof(err))) {
		viol(v, "assemble refuses the members: %s", err);
		return;
	}
	if (chk_backup && !(cfg.backup_file = strdup(chk_backup->path)))
		die("out of memory%s", "");
	cfg.group_thread_cnt = 1;
	cfg.worker_groups = 1;
	r = rf_array_open(&cfg, &a, err, sizeof(err));
	rf_config_free(&cfg);
	if (r) {
		viol(v, "the array does not open: %s", err);
		return;
	}
	if (rf_array_start(a)) {
		viol(v, "the array does not start");
		rf_array_close(a);
		return;
	}
	rf_sync_set_speed_min(a, INT32_MAX);
	rf_sync_set_speed_max(a, INT32_MAX);
	reshaping = rf_array_reshape(a, &pos, &back);
	r = rf_sbstate_start_resync(a, false);
	if (r)
		viol(v, "the resync due does not start: %s", strerror(-r));
	/* A reshape the superblocks record goes on to its end; the resync
	 * due from the crash follows it (the walk starts it). */
	for (j = 0; j < 6000 && rf_array_reshape(a, &pos, &back); j++)
		sleep_ms(10);
	if (rf_array_reshape(a, &pos, &back))
		viol(v, "the reshape did not end in 60 s (at array sector %llu)", (unsigned long long)pos);
	for (j = 0; j < 6000; j++) {
		rf_sync_wait(a);
		rf_sync_get(a, &st);
		if (st.resync_cp >= st.total || st.resync_cp == RF_SYNC_NONE)
			break;
		sleep_ms(10);
	}
	/* A rebuild onto a spare (a raid0 made a raid4/5) ends first. */
	for (j = 0; j < 6000 && (rf_array_recovering(a) || rf_replace_mask(a)); j++) {
		rf_sync_wait(a);
		sleep_ms(10);
	}
	rf_sync_wait(a);
	/* A raid0 (grown through a raid4 to its end) has no check, nor has a
	 * raid4 degraded to no redundancy (one a crash left mid-grow: the
	 * reshape ends a raid4 whose P slot is empty). */
	{
		struct rf_array_info info;

		rf_array_get_info(a, &info);
		skip = !rf_array_sync_ops(a) || __builtin_popcountll(info.faulty) >= rf_array_geom(a)->max_degraded;
	}
	r = skip ? 0 : rf_sync_request(a, RF_SYNC_CHECK);
	if (skip) {
		;
	} else if (r) {
		viol(v, "check does not start: %s", strerror(-r));
	} else {
		rf_sync_wait(a);
		rf_sync_get(a, &st);
		if (st.mismatch_cnt)
			viol(v, "mismatch_cnt %llu after the resync", (unsigned long long)st.mismatch_cnt);
	}
	check_data(L, a, s, v);
	rf_array_close(a);
	/* The walk (joined by the close) is done with its backup file. */
	if (chk_backup && reshaping && access(chk_backup->path, F_OK) == 0)
		viol(v, "the reshape ended, its backup file %s is still there", chk_backup->path);
	/* A clean close: one events count, clean, nothing due. */
	if (read_sbs(m, n, sb, ok)) {
		viol(v, "a superblock is unreadable after the clean close");
		return;
	}
	for (j = 0; j < n; j++) {
		/* md leaves a spare's superblock alone on clean and dirty. */
		if (ok[j] && sb[j].role == RF_SB_ROLE_SPARE)
			continue;
		if (!sb[j].clean || sb[j].resync_offset != RF_SB_MAX_SECTOR)
			viol(v, "member %d not clean after the clean close (resync_offset %llu)", j,
			     (unsigned long long)sb[j].resync_offset);
		if (sb[j].events != sb[0].events)
			viol(v, "member %d: events %llu after the clean close, member 0 has %llu", j,
			     (unsigned long long)sb[j].events, (unsigned long long)sb[0].events);
	}
}

/* The violations whose member images are saved; later ones keep their
 * why file alone (its replay command makes the images again): a broken
 * ordering finds hundreds, and their images would fill /dev/shm. */
#define SAVE_IMAGES 8

static void save_state(const char *save, const struct member *m, char *const *names, int n,
		       const struct state *s, uint64_t nstates, const struct verdict *v, const char *replay,
		       bool images)
{
	char dir[PATH_MAX], p[PATH_MAX + 300];
	FILE *f;
	int j;

	snprintf(dir, sizeof(dir), "%s/state-%llu", save, (unsigned long long)s->k);
	if (mkdir(dir, 0755) && errno != EEXIST)
		return;
	for (j = 0; images && j < n; j++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[j]);
		write_file(p, m[j].img, m[j].size);
	}
	snprintf(p, sizeof(p), "%s/why", dir);
	f = fopen(p, "w");
	if (!f)
		return;
	fprintf(f, "state %llu: crash before log record %llu, %s\n%s\nreplay: %s --states %llu --only %llu\n",
		(unsigned long long)s->k, (unsigned long long)s->point, mode_name(s->mode), v->msg, replay,
		(unsigned long long)nstates, (unsigned long long)s->k);
	if (images)
		fprintf(f, "(the members as the crash left them are beside this file, before assembly)\n");
	else
		fprintf(f, "(the members are kept for the first %d violations only: the replay makes these)\n",
			SAVE_IMAGES);
	fclose(f);
}

static int cmd_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "log", required_argument, NULL, 'l' },
		{ "base", required_argument, NULL, 'b' },
		{ "work", required_argument, NULL, 'w' },
		{ "states", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "only", required_argument, NULL, 'o' },
		{ "save", required_argument, NULL, 'S' },
		{ "replay", required_argument, NULL, 'R' },
		{ "spare-last", no_argument, NULL, 'L' },
		{ "backup", required_argument, NULL, 'B' },
		{ NULL, 0, NULL, 0 },
	};
	const char *logpath = NULL, *basedir = NULL, *workdir = NULL, *save = NULL, *replay = "crash-states check";
	const char *backup = NULL;
	char *files[MAX_MEMBERS + 1], work[PATH_MAX];
	uint64_t nstates = 0, seed = 1, only = UINT64_MAX, k, nviol = 0, checked = 0, *b;
	struct member m[MAX_MEMBERS + 1];
	struct log L;
	double t0 = now_s();
	size_t nb, i;
	int c, n, nf, j, r;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'l': logpath = optarg; break;
		case 'b': basedir = optarg; break;
		case 'w': workdir = optarg; break;
		case 'n': nstates = strtoull(optarg, NULL, 0); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'o': only = strtoull(optarg, NULL, 0); break;
		case 'S': save = optarg; break;
		case 'R': replay = optarg; break;
		case 'L': chk_spare_last = true; break;
		case 'B': backup = optarg; break;
		default: return 2;
		}
	}
	n = argc - optind;
	if (!logpath || !basedir || !workdir || n < 2 || n > MAX_MEMBERS)
		die("check: expected --log LOG --base DIR --work DIR and 2..16 member names%s", "");
	/* The files of a state: the members, then the backup file. */
	for (j = 0; j < n; j++)
		files[j] = argv[optind + j];
	nf = n;
	if (backup)
		files[nf++] = (char *)backup;
	/* An absolute path for the backup file (md/backup_file wants one). */
	if (!realpath(workdir, work))
		die("check: no directory %s", workdir);
	memset(&L, 0, sizeof(L));
	load_log(&L, logpath, files, nf);
	for (j = 0; j < nf; j++) {
		char p[PATH_MAX + 300];
		size_t end = 0;

		snprintf(p, sizeof(p), "%s/%s", basedir, files[j]);
		r = read_file(p, &m[j].base, &m[j].size);
		if (r)
			die("cannot read a base member: %s", p);
		/* A file that grows (the backup file): as large as its
		 * furthest write, zeros past its size before. */
		for (i = 0; i < L.nops; i++)
			if (L.ops[i].file == j && L.ops[i].kind == RF_IOLOG_WRITE && L.ops[i].off + L.ops[i].len > end)
				end = L.ops[i].off + L.ops[i].len;
		if (end > m[j].size) {
			m[j].base = realloc(m[j].base, end);
			if (!m[j].base)
				die("out of memory%s", "");
			memset(m[j].base + m[j].size, 0, end - m[j].size);
			m[j].size = end;
		}
		m[j].img = malloc(m[j].size ? m[j].size : 1);
		if (snprintf(m[j].path, sizeof(m[j].path), "%s/%s", work, files[j]) >= (int)sizeof(m[j].path))
			die("check: the path of %s in --work is too long", files[j]);
	}
	if (backup) {
		chk_backup = &m[n];
		chk_backup_index = n;
	}
	if (save && mkdir(save, 0755) && errno != EEXIST)
		die("cannot make the directory for violations: %s", save);
	b = boundaries(&L, &nb);
	/* By default every flush boundary once, half as many random states
	 * again, 1000 at least. */
	if (!nstates)
		nstates = nb + nb / 2 > 1000 ? nb + nb / 2 : 1000;
	printf("log: %llu records, %zu member writes and flushes, %llu workload writes, %llu flushes acknowledged "
	       "or not, %zu flush boundaries\n", (unsigned long long)L.nseq, L.nops, (unsigned long long)L.ngens,
	       (unsigned long long)L.nflushes, nb);
	fflush(stdout);
	for (k = only == UINT64_MAX ? 0 : only; k < (only == UINT64_MAX ? nstates : only + 1); k++) {
		struct verdict v = { 0 };
		struct state s;

		pick_state(&s, k, nstates, seed, b, nb, L.nseq);
		build_state(&L, m, nf, &s);
		check_state(&L, m, n, &s, &v);
		checked++;
		if (v.nviol) {
			nviol++;
			printf("violation: state %llu (crash before log record %llu, %s):\n%s",
			       (unsigned long long)k, (unsigned long long)s.point, mode_name(s.mode), v.msg);
			/* the images again, as the crash left them */
			build_state(&L, m, nf, &s);
			if (save)
				save_state(save, m, files, nf, &s, nstates, &v, replay, nviol <= SAVE_IMAGES);
			fflush(stdout);
		}
	}
	printf("time: %.1f s\n", now_s() - t0);
	printf("crash states: %llu checked, %llu violations\n", (unsigned long long)checked,
	       (unsigned long long)nviol);
	fflush(stdout);
	for (j = 0; j < nf; j++) {
		free(m[j].base);
		free(m[j].img);
	}
	free(b);
	free(L.ops);
	free(L.gens);
	free(L.flushes);
	free(L.buf);
	return nviol ? 1 : 0;
}

int main(int argc, char **argv)
{
	rf_stack_set(&rf_stack_default);
	if (argc >= 2 && !strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "check"))
		return cmd_check(argc - 1, argv + 1);
	fprintf(stderr, "usage: crash-states record --log LOG [--seed S] [--rounds R] MEMBER...\n"
			"       crash-states check --log LOG --base DIR --work DIR [--states N] [--seed S]\n"
			"                          [--only K] [--save DIR] [--replay CMD] [--backup NAME] MEMBER-NAME...\n");
	return 2;
}
