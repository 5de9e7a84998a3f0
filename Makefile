# SPDX-License-Identifier: GPL-2.0-or-later
# raidfuse - plain GNU Makefile, pkg-config for every library.
#   make            build build/raidfuse
#   make test       unit tests, then functional tests (mount real arrays, fio verify)
#   make unit       unit tests only
#   make asan       the tests under ASan+UBSan (build-asan/)
#   make tsan       the tests under TSan (build-tsan/); tsan-unit: unit tests only
#                   (both sanitizer builds check the lock order as they run: LOCKCHECK=1)
#   make bench      fio beside fuse-ceiling (tools/bench.sh; BENCH_ARGS="-t 5 -D" passes options),
#                   then resync speed and its cost to foreground reads (tools/bench-resync.sh;
#                   BENCH_RESYNC_ARGS), then a grow and a raid5 -> raid6 beside the members'
#                   stream, on the disk beside the tree and on /dev/shm (tools/bench-reshape.sh;
#                   BENCH_RESHAPE_DIRS)
#   make crash      power cuts replayed from the member IO log, levels 1 5 6 10 with and without
#                   a bitmap, raid5, raid6 and raid10 grown by a spare mid-workload, raid5 and
#                   raid6 grown in place through mdadm's backup file
#                   (tools/crash-states.sh; CRASH_ARGS, CRASH_LEVELS)
#   make lifecycle  random event sequences (failures, kill -9, spares, stop/mount/assemble, grow...)
#                   against a model, LIFECYCLE_STEPS (2000) steps per configuration: levels 0 1 5
#                   6 10, raid5 over NBD, raid5 on FUSE-over-io_uring (tools/lifecycle.sh;
#                   LIFECYCLE_ARGS, LIFECYCLE_CONFIGS, LIFECYCLE_SAVE), then a table
#   make lifecycle-break  the same tool on a build with an old bug put back, and raid5 grown
#                   with reshape bugs put back (RAIDFUSE_TEST_BREAK), must catch each
#   make judge      kernel md checks raidfuse's writes (tools/md-crosscheck.sh)
#   make judge-bitmap  kernel md resyncs by raidfuse's write-intent bitmap (tools/md-bitmap-crosscheck.sh)
#   make fuzz       libFuzzer on every parser of outside input (superblock, config, bitmap, backup file,
#                   overlay files, control files, fault specs), FUZZ_SECONDS each (clang)
#   make fuzz-long  the same for FUZZ_SECONDS=600 each, or FUZZ_RUNS=N executions each
#   make install    the binary, the man pages and raidfuse@.service: PREFIX=/usr/local
#                   DESTDIR= (BINDIR=PREFIX/bin, MANDIR=PREFIX/share/man,
#                   UNITDIR=PREFIX/lib/systemd/system); make uninstall
#   make man-check  groff -man -ww -z on each man page: any warning fails
#   make layers     the layer order (README.md) checked on the objects' symbols, against
#                   tools/layers.allow; its selftest plants an upward call first
#   V=1             full command lines

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
# systemd's unit directory (raidfuse@.service)
UNITDIR ?= $(PREFIX)/lib/systemd/system
BUILD ?= build
VERSION := 0.1.0

PKGS := fuse3 liburing libisal libconfig uuid libnbd libsystemd
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS := $(shell pkg-config --libs $(PKGS))
CMOCKA_LIBS := $(shell pkg-config --libs cmocka)

CC ?= cc
OPT ?= -O2 -g
WERROR ?= -Werror
SAN ?=
# BREAK: a build with an old bug put back, for a test's negative control
# (build-break/: make lifecycle-break)
BREAK ?=
CFLAGS += $(OPT) -std=gnu11 -Wall -Wextra $(WERROR) -Wshadow -Wno-unused-parameter \
	-D_GNU_SOURCE -DRF_VERSION=\"$(VERSION)\" -Iinclude -Isrc $(PKG_CFLAGS) $(SAN) $(BREAK)
LDFLAGS += $(SAN)
LDLIBS += $(PKG_LIBS) -lpthread
# LOCKCHECK=1 (the sanitizer builds): the lock order checked as it runs
# (include/raidfuse/lockcheck.h), pthread's mutex calls wrapped at link.
ifeq ($(LOCKCHECK),1)
CFLAGS += -DRF_LOCKCHECK
LDFLAGS += -Wl,--wrap=pthread_mutex_lock,--wrap=pthread_mutex_trylock,--wrap=pthread_mutex_unlock \
	-Wl,--wrap=pthread_mutex_destroy
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

SRCS := $(wildcard src/*/*.c)
LIB_SRCS := $(filter-out src/front/main.c,$(SRCS))
LIB_OBJS := $(LIB_SRCS:src/%.c=$(BUILD)/obj/%.o)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

all: $(BUILD)/raidfuse $(BUILD)/raidfuse@.service

# The unit names the binary where make install puts it.
$(BUILD)/raidfuse@.service: systemd/raidfuse@.service.in Makefile
	@mkdir -p $(dir $@)
	$(Q)sed 's|@BINDIR@|$(BINDIR)|g' $< >$@

$(BUILD)/obj/%.o: src/%.c $(wildcard include/raidfuse/*.h src/*/*.h) Makefile
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/libraidfuse.a: $(LIB_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/raidfuse: $(BUILD)/obj/front/main.o $(BUILD)/libraidfuse.a
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Every unit test links the shared fixtures (tests/unit/fixture.c).
UNIT_FIXTURE := $(BUILD)/obj/tests/fixture.o

$(UNIT_FIXTURE): tests/unit/fixture.c $(wildcard tests/unit/*.h include/raidfuse/*.h) Makefile
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -Itests/unit -Isrc -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(UNIT_FIXTURE) $(BUILD)/libraidfuse.a $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS) -Itests/unit -Isrc -o $@ $< $(UNIT_FIXTURE) $(BUILD)/libraidfuse.a $(LDFLAGS) $(LDLIBS) $(CMOCKA_LIBS)

# Crash states (tools/crash-states.sh): the recorder, replayer and checker.
$(BUILD)/crash-states: tools/crash/crashstates.c $(BUILD)/libraidfuse.a $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS) -Itests/unit -Isrc -o $@ $< $(BUILD)/libraidfuse.a $(LDFLAGS) $(LDLIBS)

# The lifecycle test's block writer and checker (tools/lifecycle.sh).
$(BUILD)/lcblocks: tools/lifecycle/lcblocks.c Makefile
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(OPT) -std=gnu11 -Wall -Wextra $(WERROR) -D_GNU_SOURCE $(SAN) -o $@ $< $(LDFLAGS)

# A member that stops answering, for the stuck-member tests (FUSE; a
# test tool, built without the sanitizers in every build).
$(BUILD)/stallfs: tools/stallfs/stallfs.c Makefile
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) -O2 -g -std=gnu11 -Wall -Wextra $(WERROR) -Wno-unused-parameter -D_GNU_SOURCE \
		$(shell pkg-config --cflags fuse3) -o $@ $< $(shell pkg-config --libs fuse3)

unit-build: $(UNIT_BINS)

# Every unit test runs; those that failed are named at the end.
unit: $(UNIT_BINS)
	$(Q)failed=""; for t in $(filter-out $(UNIT_SKIP:%=$(BUILD)/tests/%),$(UNIT_BINS)); do \
		echo "== $$t"; $(RUN_PREFIX) $$t || failed="$$failed $${t##*/}"; done; \
	if [ -n "$$failed" ]; then echo "unit tests failed:$$failed"; exit 1; fi

func: $(BUILD)/raidfuse $(BUILD)/crash-states $(BUILD)/lcblocks $(BUILD)/stallfs
	$(Q)RAIDFUSE=$(abspath $(BUILD)/raidfuse) CRASH_STATES=$(abspath $(BUILD)/crash-states) LCBLOCKS=$(abspath $(BUILD)/lcblocks) \
		STALLFS=$(abspath $(BUILD)/stallfs) tests/func/run.sh

test: unit func

ASAN_VARS := BUILD=build-asan SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" OPT="-O1 -g" \
	LOCKCHECK=1

asan:
	$(MAKE) $(ASAN_VARS) test

# What make asan runs, built ahead (CI builds it beside make test).
asan-build:
	$(MAKE) $(ASAN_VARS) unit-build build-asan/raidfuse build-asan/crash-states build-asan/lcblocks build-asan/stallfs

tsan:
	$(MAKE) BUILD=build-tsan SAN="-fsanitize=thread" OPT="-O1 -g" LOCKCHECK=1 test

# test_layout and test_detect check pure functions on one thread: TSan has
# no race to find there and slows their loops twentyfold (the plain and
# ASan runs cover them).
TSAN_UNIT_SKIP := test_layout test_detect

tsan-unit:
	$(MAKE) BUILD=build-tsan SAN="-fsanitize=thread" OPT="-O1 -g" LOCKCHECK=1 UNIT_SKIP="$(TSAN_UNIT_SKIP)" unit

BENCH_RESHAPE_DIRS ?= $(abspath ..) /dev/shm
bench: $(BUILD)/raidfuse
	$(Q)RAIDFUSE=$(abspath $(BUILD)/raidfuse) tools/bench.sh $(BENCH_ARGS)
	$(Q)RAIDFUSE=$(abspath $(BUILD)/raidfuse) tools/bench-resync.sh $(BENCH_RESYNC_ARGS)
	$(Q)set -e; for d in $(BENCH_RESHAPE_DIRS); do for w in grow raid6; do \
		RAIDFUSE=$(abspath $(BUILD)/raidfuse) tools/bench-reshape.sh --what $$w $$d; done; done

# Crash states, the whole matrix: levels 1, 5, 6, 10, with and without a
# bitmap, each with the tool's default number of states (CRASH_ARGS adds
# options, e.g. --seed 7), then --break with and without a bitmap: both
# must find violations.
CRASH_LEVELS ?= 1 5 6 10
crash: $(BUILD)/raidfuse $(BUILD)/crash-states
	$(Q)set -e; export RAIDFUSE=$(abspath $(BUILD)/raidfuse) CRASH_STATES=$(abspath $(BUILD)/crash-states); \
	for l in $(CRASH_LEVELS); do for b in "" --bitmap; do \
		tools/crash-states.sh --level $$l $$b $(CRASH_ARGS); done; done; \
	for l in 5 6; do for b in "" --bitmap; do tools/crash-states.sh --level $$l --grow $$b $(CRASH_ARGS); done; done; \
	for l in 5 6; do tools/crash-states.sh --level $$l --backup $(CRASH_ARGS); done; \
	tools/crash-states.sh --level 10 --grow $(CRASH_ARGS); \
	tools/crash-states.sh --level 5 --raid6 $(CRASH_ARGS); \
	for l in 5 6; do tools/crash-states.sh --level $$l --rechunk $(CRASH_ARGS); done; \
	tools/crash-states.sh --level 4 --raid5 $(CRASH_ARGS); \
	tools/crash-states.sh --level 1 --raid5 $(CRASH_ARGS); \
	for c in --grow --raid5 --raid10; do tools/crash-states.sh --level 0 $$c $(CRASH_ARGS); done; \
	for b in "" --bitmap --grow --backup --raid6 --rechunk; do if tools/crash-states.sh --level 5 --break $$b $(CRASH_ARGS); then \
		echo "crash: --break $$b found no violation: the tool cannot fail" >&2; exit 1; fi; done; \
	for c in "--level 4 --raid5" "--level 0 --raid10" "--level 10 --grow"; do if tools/crash-states.sh $$c --break $(CRASH_ARGS); then \
		echo "crash: $$c --break found no violation: the tool cannot fail" >&2; exit 1; fi; done; \
	if RAIDFUSE_TEST_BREAK=reshape-backup-sync tools/crash-states.sh --level 5 --backup $(CRASH_ARGS); then \
		echo "crash: --backup with the backup file left unsynced found no violation: the tool cannot fail" >&2; exit 1; fi; \
	if RAIDFUSE_TEST_BREAK=backup-name tools/crash-states.sh --level 5 --backup $(CRASH_ARGS); then \
		echo "crash: --backup with the backup file's name left unflushed found no violation: the tool cannot fail" >&2; exit 1; fi; \
	echo "crash: every level clean (raid5, raid6 and raid10 grown, raid5 and raid6 grown in place through a backup file, raid5 and raid6 rechunked, raid5 changed to raid6, raid4 and raid1 taken over as raid5, raid0 grown and taken over as raid5 and raid10), and the eleven --break faults caught"

# The lifecycle model test: each configuration (LEVEL, LEVEL:nbd,
# LEVEL:uring) runs LIFECYCLE_STEPS steps with --keep-going (each
# violation's replay script kept under LIFECYCLE_SAVE), then one table.
LIFECYCLE_STEPS ?= 2000
LIFECYCLE_CONFIGS ?= 0 1 5 6 10 5:nbd 5:uring
LIFECYCLE_SAVE ?= $(abspath $(BUILD))/lifecycle-found
lifecycle: $(BUILD)/raidfuse $(BUILD)/lcblocks
	$(Q)export RAIDFUSE=$(abspath $(BUILD)/raidfuse) LCBLOCKS=$(abspath $(BUILD)/lcblocks); \
	tab=$$(mktemp); bad=0; \
	for c in $(LIFECYCLE_CONFIGS); do \
		l=$${c%%:*}; o=""; case $$c in *:nbd) o=--nbd ;; *:uring) o=--uring ;; esac; \
		tools/lifecycle.sh --level $$l $$o --steps $(LIFECYCLE_STEPS) --keep-going \
			--save $(LIFECYCLE_SAVE) $(LIFECYCLE_ARGS) | tee /dev/stderr | \
			sed -n "s/^lifecycle: level \([^:]*\): \([0-9]*\) sequences, \([0-9]*\) steps, \([0-9]*\) violations, \([0-9]*\) s$$/\1|\2|\3|\4|\5/p" | \
			tail -1 >>$$tab || true; \
		n=$$(echo $$c | tr : ' '); grep -q "^$$n|" $$tab || { echo "$$n|-|-|-|- (did not run)" >>$$tab; bad=1; }; \
	done 2>&1; \
	printf '%-14s %10s %8s %11s %8s\n' configuration sequences steps violations time; \
	awk -F'|' '{ printf "%-14s %10s %8s %11s %8s\n", "raid" $$1, $$2, $$3, $$4, $$5 ($$5 ~ /^[0-9]+$$/ ? "s" : ""); if ($$4 != 0) bad = 1 } END { exit bad }' $$tab || bad=1; \
	rm -f $$tab; [ $$bad = 0 ] || { echo "lifecycle: violations (replays in $(LIFECYCLE_SAVE))" >&2; exit 1; }

# The negative control: raid5 on build-break/raidfuse (the old rule that
# took back a member failed one event before a crash, put back) must be
# caught; LIFECYCLE_BREAK_STEPS (100) steps.  Then raid5 grown often with
# each reshape bug the daemon puts back on RAIDFUSE_TEST_BREAK (its
# position not recorded, a failed member read as whole, rows read ahead
# kept after a write): each must be caught.
LIFECYCLE_BREAK_STEPS ?= 100
lifecycle-break: $(BUILD)/raidfuse $(BUILD)/lcblocks
	$(Q)$(MAKE) -s BUILD=build-break BREAK=-DRF_BREAK_STALE_ROLE build-break/raidfuse
	$(Q)if RAIDFUSE=$(abspath build-break/raidfuse) LCBLOCKS=$(abspath $(BUILD)/lcblocks) tools/lifecycle.sh \
		--level 5 --break --steps $(LIFECYCLE_BREAK_STEPS) --keep-going --save $(abspath build-break)/found \
		$(LIFECYCLE_ARGS); then \
		echo "lifecycle-break: --break found no violation: the model cannot fail" >&2; exit 1; fi; \
	echo "lifecycle-break: the old rule was caught (replays in $(abspath build-break)/found)"
	$(Q)for b in reshape-record reshape-degraded reshape-prefetch; do \
		if RAIDFUSE_TEST_BREAK=$$b RAIDFUSE=$(abspath $(BUILD)/raidfuse) LCBLOCKS=$(abspath $(BUILD)/lcblocks) \
			tools/lifecycle.sh --level 5 --weight grow=40 --seq-len 6 --steps $(LIFECYCLE_BREAK_STEPS) \
			--keep-going --save $(abspath build-break)/found-$$b $(LIFECYCLE_ARGS); then \
			echo "lifecycle-break: RAIDFUSE_TEST_BREAK=$$b: no violation: the grow event cannot fail" >&2; exit 1; fi; \
		echo "lifecycle-break: RAIDFUSE_TEST_BREAK=$$b was caught"; done

judge: $(BUILD)/raidfuse
	$(Q)RAIDFUSE=$(abspath $(BUILD)/raidfuse) tools/md-crosscheck.sh

judge-bitmap: $(BUILD)/raidfuse
	$(Q)RAIDFUSE=$(abspath $(BUILD)/raidfuse) tools/md-bitmap-crosscheck.sh

# Fuzzing: each harness built with clang's libFuzzer and ASan+UBSan, run
# for FUZZ_SECONDS from its seed corpus (new inputs go to build-fuzz/;
# findings to crash-*/leak-* files in the current directory).  `make fuzz`
# is CI's short pass; `make fuzz-long` runs each harness for FUZZ_SECONDS
# (default 600), or until FUZZ_RUNS executions when that is set (-runs=;
# then no time limit unless FUZZ_SECONDS is given too), under nice -n
# FUZZ_NICE (default 19 there, 0 for make fuzz) so it starves nothing.  The harnesses
# past fuzz_super link the whole library, built once more
# with the fuzzer's instrumentation in build-fuzz/obj/.
FUZZ_CC ?= clang
FUZZ_CFLAGS := -g -O1 -std=gnu11 -D_GNU_SOURCE -Iinclude $(shell pkg-config --cflags libconfig) \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_LIB_CFLAGS := -g -O1 -std=gnu11 -D_GNU_SOURCE -DRF_VERSION=\"$(VERSION)\" -Iinclude -Isrc $(PKG_CFLAGS) \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
FUZZ_LIB_OBJS := $(LIB_SRCS:src/%.c=build-fuzz/obj/%.o)
FUZZ_LIB_HARNESSES := fuzz_config fuzz_bitmap fuzz_overlay fuzz_ctl fuzz_fault fuzz_backup
FUZZERS := build-fuzz/fuzz_super $(FUZZ_LIB_HARNESSES:%=build-fuzz/%)

build-fuzz/fuzz_super: tests/fuzz/fuzz_super.c src/md/super.c src/md/examine.c src/util/json.c src/io/fdio.c src/io/iolog.c $(wildcard include/raidfuse/*.h)
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^) $(shell pkg-config --libs uuid)

build-fuzz/obj/%.o: src/%.c $(wildcard include/raidfuse/*.h src/*/*.h) Makefile
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(FUZZ_CC) $(FUZZ_LIB_CFLAGS) -c -o $@ $<

build-fuzz/libraidfuse.a: $(FUZZ_LIB_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_LIB_HARNESSES:%=build-fuzz/%): build-fuzz/%: tests/fuzz/%.c build-fuzz/libraidfuse.a
	@$(if $(Q),echo "  FUZZ    $@")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -Isrc -o $@ $< build-fuzz/libraidfuse.a $(PKG_LIBS) -lpthread

fuzz-build: $(FUZZERS)

# run-fuzz SECONDS RUNS NICE: every harness in turn (FUZZERS=... picks some),
# each ending with libFuzzer's final stats.
define run-fuzz
	$(Q)set -e; for f in $(FUZZERS); do n=$${f#build-fuzz/fuzz_}; mkdir -p build-fuzz/corpus-$$n; \
		echo "== $$f ($(strip $(if $(1),$(1) s) $(if $(2),$(2) runs)))"; \
		LSAN_OPTIONS=suppressions=$(abspath tests/fuzz/lsan.supp) \
		nice -n $(3) $$f $(if $(1),-max_total_time=$(1)) $(if $(2),-runs=$(2)) -timeout=10 \
			-print_final_stats=1 build-fuzz/corpus-$$n tests/fuzz/corpus/$$n; done
endef

fuzz: $(FUZZERS)
	$(call run-fuzz,$(or $(FUZZ_SECONDS),30),,$(or $(FUZZ_NICE),0))

fuzz-long: $(FUZZERS)
	$(call run-fuzz,$(or $(FUZZ_SECONDS),$(if $(FUZZ_RUNS),,600)),$(FUZZ_RUNS),$(or $(FUZZ_NICE),19))

# The man pages by section: raidfuse.conf.5 always, raidfuse.8 once the
# tree has it.
MAN5 := man/raidfuse.conf.5
MAN8 := $(wildcard man/raidfuse.8)

install: $(BUILD)/raidfuse $(BUILD)/raidfuse@.service
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(UNITDIR)
	install -m 0755 $(BUILD)/raidfuse $(DESTDIR)$(BINDIR)/raidfuse
	install -m 0644 $(BUILD)/raidfuse@.service $(DESTDIR)$(UNITDIR)/raidfuse@.service
	install -m 0644 $(MAN5) $(DESTDIR)$(MANDIR)/man5/
	$(if $(MAN8),install -d $(DESTDIR)$(MANDIR)/man8)
	$(if $(MAN8),install -m 0644 $(MAN8) $(DESTDIR)$(MANDIR)/man8/)

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/raidfuse $(DESTDIR)$(MANDIR)/man5/raidfuse.conf.5 \
		$(DESTDIR)$(UNITDIR)/raidfuse@.service \
		$(DESTDIR)$(MANDIR)/man8/raidfuse.8

# groff exits 0 on warnings: any output at all is a failure.
# The layer order, from the objects (tools/layers.sh).
layers: $(LIB_OBJS) $(BUILD)/obj/front/main.o
	$(Q)tools/layers.sh --selftest
	$(Q)tools/layers.sh $(BUILD)

man-check:
	$(Q)set -e; for p in $(MAN5) $(MAN8); do echo "== groff -man -ww -z $$p"; \
		out=$$(groff -man -ww -z $$p 2>&1); [ -z "$$out" ] || { echo "$$out"; exit 1; }; done

clean:
	rm -rf build build-asan build-tsan build-fuzz

.PHONY: lifecycle lifecycle-break
.PHONY: all unit unit-build func test asan asan-build tsan tsan-unit bench crash lifecycle judge judge-bitmap fuzz fuzz-build fuzz-long install uninstall man-check layers clean
