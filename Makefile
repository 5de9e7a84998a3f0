# raidfuse - plain GNU Makefile, pkg-config for every library.
#   make            build build/raidfuse
#   make test       unit tests, then functional tests (mount real arrays, fio verify)
#   make unit       unit tests only
#   make asan       the tests under ASan+UBSan (build-asan/)
#   make tsan       the tests under TSan (build-tsan/); tsan-unit: unit tests only
#   make bench      fio beside fuse-ceiling (tools/bench.sh; BENCH_ARGS="-t 5 -D" passes options),
#                   then resync speed and its cost to foreground reads (tools/bench-resync.sh;
#                   BENCH_RESYNC_ARGS)
#   make crash      power cuts replayed from the member IO log, levels 1 5 6 10 with and without
#                   a bitmap (tools/crash-states.sh; CRASH_ARGS, CRASH_LEVELS)
#   make judge      kernel md checks raidfuse's writes (tools/md-crosscheck.sh)
#   make judge-bitmap  kernel md resyncs by raidfuse's write-intent bitmap (tools/md-bitmap-crosscheck.sh)
#   make fuzz       libFuzzer on superblock and config parsing, FUZZ_SECONDS each (clang)
#   make install    PREFIX=/usr/local DESTDIR=
#   V=1             full command lines

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
BUILD ?= build
VERSION := 0.1.0

PKGS := fuse3 liburing libisal libconfig
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS := $(shell pkg-config --libs $(PKGS))
CMOCKA_LIBS := $(shell pkg-config --libs cmocka)

CC ?= cc
OPT ?= -O2 -g
WERROR ?= -Werror
SAN ?=
CFLAGS += $(OPT) -std=gnu11 -Wall -Wextra $(WERROR) -Wshadow -Wno-unused-parameter \
	-D_GNU_SOURCE -DRF_VERSION=\"$(VERSION)\" -Iinclude $(PKG_CFLAGS) $(SAN)
LDFLAGS += $(SAN)
LDLIBS += $(PKG_LIBS) -lpthread

ifeq ($(V),1)
Q :=
else
Q := @
endif

SRCS := $(wildcard src/*.c)
LIB_SRCS := $(filter-out src/main.c,$(SRCS))
LIB_OBJS := $(LIB_SRCS:src/%.c=$(BUILD)/obj/%.o)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

all: $(BUILD)/raidfuse

$(BUILD)/obj/%.o: src/%.c $(wildcard include/raidfuse/*.h src/*.h) Makefile
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/libraidfuse.a: $(LIB_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/raidfuse: $(BUILD)/obj/main.o $(BUILD)/libraidfuse.a
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libraidfuse.a $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS) -Itests/unit -Isrc -o $@ $< $(BUILD)/libraidfuse.a $(LDFLAGS) $(LDLIBS) $(CMOCKA_LIBS)

# Crash states (tools/crash-states.sh): the recorder, replayer and checker.
$(BUILD)/crash-states: tools/crash/crashstates.c $(BUILD)/libraidfuse.a $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS) -Itests/unit -Isrc -o $@ $< $(BUILD)/libraidfuse.a $(LDFLAGS) $(LDLIBS)

unit-build: $(UNIT_BINS)

unit: $(UNIT_BINS)
	$(Q)set -e; for t in $(UNIT_BINS); do echo "== $$t"; $(RUN_PREFIX) $$t; done

func: $(BUILD)/raidfuse $(BUILD)/crash-states
	$(Q)RAIDFUSE=$(abspath $(BUILD)/raidfuse) CRASH_STATES=$(abspath $(BUILD)/crash-states) tests/func/run.sh

test: unit func

asan:
	$(MAKE) BUILD=build-asan SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" OPT="-O1 -g" test

tsan:
	$(MAKE) BUILD=build-tsan SAN="-fsanitize=thread" OPT="-O1 -g" test

tsan-unit:
	$(MAKE) BUILD=build-tsan SAN="-fsanitize=thread" OPT="-O1 -g" unit

bench: $(BUILD)/raidfuse
	$(Q)RAIDFUSE=$(abspath $(BUILD)/raidfuse) tools/bench.sh $(BENCH_ARGS)
	$(Q)RAIDFUSE=$(abspath $(BUILD)/raidfuse) tools/bench-resync.sh $(BENCH_RESYNC_ARGS)

# Crash states, the whole matrix: levels 1, 5, 6, 10, with and without a
# bitmap, each with the tool's default number of states (CRASH_ARGS adds
# options, e.g. --seed 7), then --break with and without a bitmap: both
# must find violations.
CRASH_LEVELS ?= 1 5 6 10
crash: $(BUILD)/raidfuse $(BUILD)/crash-states
	$(Q)set -e; export RAIDFUSE=$(abspath $(BUILD)/raidfuse) CRASH_STATES=$(abspath $(BUILD)/crash-states); \
	for l in $(CRASH_LEVELS); do for b in "" --bitmap; do \
		tools/crash-states.sh --level $$l $$b $(CRASH_ARGS); done; done; \
	for b in "" --bitmap; do if tools/crash-states.sh --level 5 --break $$b $(CRASH_ARGS); then \
		echo "crash: --break $$b found no violation: the tool cannot fail" >&2; exit 1; fi; done; \
	echo "crash: every level clean, and both --break faults caught"

judge: $(BUILD)/raidfuse
	$(Q)RAIDFUSE=$(abspath $(BUILD)/raidfuse) tools/md-crosscheck.sh

judge-bitmap: $(BUILD)/raidfuse
	$(Q)RAIDFUSE=$(abspath $(BUILD)/raidfuse) tools/md-bitmap-crosscheck.sh

# Fuzzing: each harness built with clang's libFuzzer and ASan+UBSan, run
# for FUZZ_SECONDS from its seed corpus (new inputs go to build-fuzz/;
# findings to crash-*/leak-* files in the current directory).
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 30
FUZZ_CFLAGS := -g -O1 -std=gnu11 -D_GNU_SOURCE -Iinclude $(shell pkg-config --cflags libconfig) \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZERS := build-fuzz/fuzz_super build-fuzz/fuzz_config

build-fuzz/fuzz_super: tests/fuzz/fuzz_super.c src/super.c src/examine.c src/fdio.c src/iolog.c $(wildcard include/raidfuse/*.h)
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^)

build-fuzz/fuzz_config: tests/fuzz/fuzz_config.c src/config.c src/layout.c src/fault.c $(wildcard include/raidfuse/*.h)
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(filter %.c,$^) $(shell pkg-config --libs libconfig)

fuzz: $(FUZZERS)
	$(Q)set -e; for f in $(FUZZERS); do n=$${f#build-fuzz/fuzz_}; mkdir -p build-fuzz/corpus-$$n; \
		echo "== $$f ($(FUZZ_SECONDS) s)"; \
		LSAN_OPTIONS=suppressions=$(abspath tests/fuzz/lsan.supp) \
		$$f -max_total_time=$(FUZZ_SECONDS) -timeout=10 -print_final_stats=1 \
			build-fuzz/corpus-$$n tests/fuzz/corpus/$$n; done

install: $(BUILD)/raidfuse
	install -d $(DESTDIR)$(BINDIR)
	install -m 0755 $(BUILD)/raidfuse $(DESTDIR)$(BINDIR)/raidfuse

clean:
	rm -rf build build-asan build-tsan build-fuzz

.PHONY: all unit unit-build func test asan tsan tsan-unit bench crash judge judge-bitmap fuzz install clean
