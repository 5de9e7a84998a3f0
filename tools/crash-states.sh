#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# crash-states.sh - what a power cut can leave of an array, state by state.
#
#   tools/crash-states.sh --level L [--bitmap] [--grow | --backup | --raid6 | --rechunk | --raid5 | --raid10]
#                         [--states N] [--seed S]
#                         [--rounds R] [--break] [--dir DIR]
#
# 1. raidfuse create makes a small array of level L (0: 3 members, 1: 2,
#    5 and 10: 4, 6: 5; 4 MiB each, 64 KiB chunks; --bitmap: an internal bitmap
#    of 64 KiB chunks) on /dev/shm and keeps a copy of its members;
# 2. build/crash-states record runs the workload on it through the
#    library's own IO path (io_uring workers, superblocks, bitmap) with
#    every member write, flush and completion logged (iolog.h): writes
#    whose sectors carry their offset and a generation, flushes whose
#    acknowledgements are logged, idle pauses that let the superblocks go
#    clean and the bitmap clear;
# 3. build/crash-states check replays the log into member images as a
#    power cut at each flush boundary (all or none of the writes a
#    flush did not cover) and at random points (random subsets, torn at
#    512 bytes) could leave them, and checks each: assembles it, lets the
#    resync finish, runs a check (mismatch_cnt 0), reads every sector
#    (written there or never, acknowledged writes present), closes it
#    (superblocks clean, one events count).
# The default number of states covers every flush boundary once (twice
# when --states leaves room), plus half as many random states, 1000 at
# least.  The last line says
# "crash states: N checked, V violations"; exit 1 when V > 0.  Each
# violation's command that replays it, and for the first 8 its members
# as the crash left them, are kept under DIR/violations/state-K; DIR (a
# fresh directory under /dev/shm unless --dir) is removed when there is
# none, and with --break (where violations are the expected outcome)
# unless --dir named it.
#
# --grow (levels 5 and 6, with --bitmap too; level 10 without one: an n2 of
# 4 grown to 5 as md's raid10 reshape grows it): the config has one spare more, and a third of
# the way through the workload the array grows onto it (md/raid_disks),
# the reshape running beside the writes; each crash state's array then
# finishes the reshape (from the position its superblocks record) before
# the resync, the check and the reads (zeros past the old size).
# --backup (levels 5 and 6, no bitmap): the same grow in place, as mdadm
# --grow --backup-file has md do it: the members have no room before
# their data (data offset 12K), so the recording sets a backup file
# (md/backup_file) before the grow; the walk's first windows (its
# critical section) go to the file first (data, fsync, header, fsync),
# then their new rows, the position recorded before the next.  The
# file's writes and fsyncs are logged beside the members', each crash
# state has it as the cut left it, and each state is assembled with it
# (restored where the position is inside the critical section).
# --raid6 (level 5): the same with a change to raid6 by the spare
# (md/level) instead of a grow; --rechunk (levels 5 and 6): a change of
# the chunk to 128 KiB (md/chunk_size), no spare.  --raid5 (level 4, or 1
# of two members): md's takeover to raid5 (md/level: the level and layout
# recorded, no data moves) a third of the way in.
# Level 0 (3 members; with --grow or --raid5): a blank fourth file is added
# as a spare once the array runs (a raid0 takes none at creation); --grow
# grows the raid0 onto it as mdadm does (through a raid4 whose P slot
# stays empty, a raid0 again at the end; a crash state mid-way ends a
# degraded raid4), --raid5 takes it over as a parity-last raid5 of four
# whose P the spare is rebuilt into, --raid10 takes it over as a near-2
# raid10 of six (md/level: member i in slot 2i, the copies' slots empty)
# a third of the way in, the spare rebuilt into slot 1 while the writes go
# on (the other two copies stay missing).
#
# --break switches on a deliberate ordering bug in the library for the
# recording (RAIDFUSE_TEST_BREAK, test-only): the bitmap's bits cleared,
# or the superblocks marked clean, without flushing the data they cover
# first; with --grow, a reshape that moves on without recording its
# position; with --backup, a critical section walked without writing
# the backup file; with --raid5 or --raid10, assembly that takes each member's own level
# (a takeover cut short by the crash is then refused).  The run must then report violations: the proof that it can.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RAIDFUSE=${RAIDFUSE:-$here/build/raidfuse}
CRASH=${CRASH_STATES:-$here/build/crash-states}

usage() {
	echo "usage: $0 --level 0|1|4|5|6|10 [--bitmap | --grow | --backup | --raid6 | --rechunk | --raid5 | --raid10] [--states N] [--seed S] [--rounds R] [--break] [--dir DIR]" >&2
	exit 2
}

level="" bitmap=0 grow=0 bkup=0 to6=0 rechunk=0 to5=0 to10=0 states="" seed=1 rounds=40 brk=0 dir=""
while [ $# -gt 0 ]; do
	case $1 in
	--level) level=${2:-}; shift ;;
	--bitmap) bitmap=1 ;;
	--grow) grow=1 ;;
	--backup) grow=1 bkup=1 ;;
	--raid6) grow=1 to6=1 ;;
	--rechunk) grow=1 rechunk=1 ;;
	--raid5) to5=1 ;;
	--raid10) to5=1 to10=1 ;;
	--states) states=${2:-}; shift ;;
	--seed) seed=${2:-}; shift ;;
	--rounds) rounds=${2:-}; shift ;;
	--break) brk=1 ;;
	--dir) dir=${2:-}; shift ;;
	*) usage ;;
	esac
	shift
done
case $level in
0) n=3 ;;
1) n=2 ;;
4 | 5 | 10) n=4 ;;
6) n=5 ;;
*) usage ;;
esac
[ $grow = 0 ] || [ "$level" = 5 ] || [ "$level" = 6 ] || [ "$level" = 0 ] || [ "$level" = 10 ] || usage
[ $grow = 0 ] || [ "$level" != 10 ] || [ $bitmap = 0 ] || usage
[ $to6 = 0 ] || [ "$level" = 5 ] || usage
[ $bkup = 0 ] || { [ $bitmap = 0 ] && { [ "$level" = 5 ] || [ "$level" = 6 ]; }; } || usage
[ $rechunk = 0 ] || { [ "$level" != 0 ] && [ "$level" != 10 ]; } || usage
[ $to5 = 0 ] || [ "$level" = 4 ] || [ "$level" = 1 ] || [ "$level" = 0 ] || usage
[ $to10 = 0 ] || [ "$level" = 0 ] || usage
[ "$level" != 0 ] || [ $grow = 1 ] || [ $to5 = 1 ] || usage
[ "$level" != 0 ] || [ $bitmap = 0 ] || usage
for x in "$states" "$seed" "$rounds"; do
	[[ -z $x || $x =~ ^[0-9]+$ ]] || usage
done
for b in "$RAIDFUSE" "$CRASH"; do
	[ -x "$b" ] || { echo "$0: $b is not built (make build/raidfuse build/crash-states)" >&2; exit 2; }
done

own_dir=0
if [ -z "$dir" ]; then
	own_dir=1
	base=/dev/shm
	[ -w "$base" ] || base=${TMPDIR:-/tmp}
	dir=$(mktemp -d "$base/crash-states.XXXXXX")
else
	mkdir -p "$dir"
fi
names=()
for ((i = 0; i < n; i++)); do
	names+=("d$i.img")
done
list=$(printf '"%s", ' "${names[@]}")
spares="" spare_last=0 doff=""
# a grow in place: no room before the data (at 12K: the superblock and nothing free)
[ $bkup = 1 ] && doff='data_offset = "12K";'
if [ "$level" = 0 ]; then
	# a raid0 takes no spare at creation: the recording adds it
	spare_last=1
elif [ $grow = 1 ] && [ $rechunk = 0 ]; then
	names+=("d$n.img")
	spares="spares = ( \"d$n.img\" );"
fi
cat >"$dir/array.conf" <<EOF
array: {
	name = "array.img";
	level = $level;
	chunk_size = "64K";
	metadata = "1.2";
	members = ( ${list%, } );
	$spares
	member_size = "4M";
	$doff
};
EOF
rm -f "$dir"/d*.img
mkdir -p "$dir/base" "$dir/work"
create=(--force --assume-clean)
[ $bitmap = 1 ] && create+=(--bitmap=internal --bitmap-chunk=64K)
"$RAIDFUSE" create "$dir/array.conf" "${create[@]}" >"$dir/create.log" 2>&1 ||
	{ cat "$dir/create.log" >&2; echo "$0: raidfuse create failed" >&2; exit 2; }
if [ $spare_last = 1 ]; then
	names+=("d$n.img")
	truncate -s 4M "$dir/d$n.img"
fi
(cd "$dir" && cp "${names[@]}" base/)
# the backup file: made by the daemon when the grow names it (each state
# has it only once its name was flushed: RF_IOLOG_NAMED); empty before
bk=()
[ $bkup = 1 ] && { : >"$dir/base/grow.backup"; bk=(--backup grow.backup); }

what="raid$level, $n members, $([ $bitmap = 1 ] && echo "bitmap" || echo "no bitmap")"
[ $grow = 1 ] && what+=$([ $to6 = 1 ] && echo ", changed to raid6 of $((n + 1))" ||
	{ [ $rechunk = 1 ] && echo ", chunk changed to 128K"; } || echo ", grown to $((n + 1))$(
	[ $bkup = 1 ] && echo " in place through a backup file")")
[ $to5 = 1 ] && what+=$([ $to10 = 1 ] && echo ", taken over as raid10 of $((2 * n)) (a copy rebuilt onto a spare)" ||
	{ [ "$level" = 0 ] && echo ", taken over as raid5 of $((n + 1)) (P rebuilt onto a spare)"; } ||
	echo ", taken over as raid5")
[ "$level" = 0 ] && [ $grow = 1 ] && what+=" (through a raid4, back to raid0)"
[ $brk = 1 ] && what+=", --break"
echo "crash-states: $what, seed $seed, in $dir"
t0=$(date +%s.%N)
(
	cd "$dir"
	if [ $brk = 1 ] && [ $to5 = 0 ]; then
		export RAIDFUSE_TEST_BREAK=$([ $bkup = 1 ] && echo reshape-backup ||
			{ [ $grow = 1 ] && echo reshape-record; } ||
			{ [ $bitmap = 1 ] && echo bitmap || echo clean; })
	fi
	rec=(--log io.log --seed "$seed" --rounds "$rounds")
	[ $grow = 1 ] && rec+=($([ $to6 = 1 ] && echo --raid6 || { [ $rechunk = 1 ] && echo --rechunk; } ||
		echo --grow $((n + 1))))
	[ $to5 = 1 ] && rec+=($([ $to10 = 1 ] && echo --raid10 || echo --raid5))
	[ $spare_last = 1 ] && rec+=(--spare-last)
	"$CRASH" record "${rec[@]}" "${bk[@]}" "${names[@]}"
) 2>"$dir/record.log" || { cat "$dir/record.log" >&2; echo "$0: recording failed" >&2; exit 2; }

sl=$([ $spare_last = 1 ] && echo --spare-last || true)
replay="$CRASH check --log $dir/io.log --base $dir/base --work $dir/work --seed $seed $sl ${bk[*]} ${names[*]}"
args=(--log "$dir/io.log" --base "$dir/base" --work "$dir/work" --seed "$seed"
	--save "$dir/violations" --replay "$replay" $sl "${bk[@]}")
[ -n "$states" ] && args+=(--states "$states")
rc=0
# --raid5's fault is in the assembly of what a crash left: the check has it
[ $brk = 1 ] && [ $to5 = 1 ] && export RAIDFUSE_TEST_BREAK=stale-geometry
"$CRASH" check "${args[@]}" "${names[@]}" >"$dir/check.out" 2>"$dir/check.log" || rc=$?
# what it found (the first violations; all of them in check.out)
grep -v '^crash states:' "$dir/check.out" | head -n 40 || true
t1=$(date +%s.%N)
line=$(grep '^crash states:' "$dir/check.out" || true)
if [ -z "$line" ]; then
	tail -n 20 "$dir/check.log" >&2
	echo "$0: the checker ended without its summary (status $rc)" >&2
	exit 2
fi
awk -v w="$what" -v a="$t0" -v b="$t1" 'BEGIN { printf "crash-states: %s: %.1f s in all\n", w, b - a }'
if [ "$rc" = 0 ] || { [ $brk = 1 ] && [ $own_dir = 1 ]; }; then
	rm -rf "$dir"
else
	echo "crash-states: violations saved in $dir/violations (each state-K/why says what replays it)"
fi
echo "$line"
[ "$rc" = 0 ]
