#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench-ppl.sh - what md's partial parity log costs raidfuse's raid5 writes.
#
# Two raid5 arrays with 1.2 superblocks (4 members of 256 MiB on
# /dev/shm, --assume-clean, chunk 512K unless -c), one with
# consistency_policy = "ppl", one without (resync), both mounted at once;
# fio jobs of tools/bench/ (4 KiB and 64 KiB random writes at queue depth
# 32, 1 MiB sequential writes at 8) run on each in turn, round after round
# (the order of the two swapped every round), so the figures of a pair are
# seconds apart.  Prints each job's median IOPS and MiB/s over the rounds
# and ppl / resync, and how many header writes the log made for how many
# stripes.
#
# usage: tools/bench-ppl.sh [-t SECONDS] [-r ROUNDS] [-c CHUNK] [-j JOBS]
# Environment: RAIDFUSE (the binary), BENCH_DIR (default /dev/shm).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RAIDFUSE=${RAIDFUSE:-$here/build/raidfuse}
runtime=3 rounds=5 chunk=512K jobs="randwrite-4k-qd32 randwrite-64k-qd32 write-1m-qd8"
while getopts "t:r:c:j:" o; do
	case $o in
	t) runtime=$OPTARG ;;
	r) rounds=$OPTARG ;;
	c) chunk=$OPTARG ;;
	j) jobs=${OPTARG//,/ } ;;
	*) sed -n 's/^# \{0,1\}//; /^usage:/,/^Environment/p' "$0" >&2; exit 2 ;;
	esac
done
dir=$(mktemp -d "${BENCH_DIR:-/dev/shm}/bench-ppl.XXXXXX")
cleanup() {
	# a subshell killed early runs the EXIT trap it inherited: not ours to clean
	[ "$BASHPID" = "$$" ] || return 0
	for t in resync ppl; do
		fusermount3 -u "$dir/$t/mnt" 2>/dev/null || true
	done
	sleep 0.5
	rm -rf "$dir"
}
trap cleanup EXIT

for t in resync ppl; do
	mkdir -p "$dir/$t/mnt"
	cat >"$dir/$t/raid.conf" <<EOF
array: {
  name = "array.img"; level = 5; chunk_size = "$chunk";
  members = ( "d0.img", "d1.img", "d2.img", "d3.img" );
  member_size = "256M";
  consistency_policy = "$t";
};
EOF
	"$RAIDFUSE" create "$dir/$t/raid.conf" --assume-clean >/dev/null
	"$RAIDFUSE" mount "$dir/$t/raid.conf" "$dir/$t/mnt" -f >"$dir/$t/daemon.log" 2>&1 &
	for _ in $(seq 100); do [ -e "$dir/$t/mnt/array.img" ] && break; sleep 0.1; done
	fio --name=fill --filename="$dir/$t/mnt/array.img" --rw=write --bs=1M --direct=1 --ioengine=io_uring \
		--iodepth=8 --size=512M >/dev/null
done
echo "bench-ppl: raid5, 4 x 256 MiB on $(dirname "$dir"), chunk $chunk, ${rounds} rounds of ${runtime} s, load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < rounds; r++)); do
	for j in $jobs; do
		order="resync ppl"
		[ $((r % 2)) = 1 ] && order="ppl resync"
		for t in $order; do
			RF_BENCH_FILE=$dir/$t/mnt/array.img RF_BENCH_SIZE=512M RF_BENCH_RUNTIME=$runtime \
				fio --minimal "$here/tools/bench/$j.fio" | awk -F';' -v t="$t" -v j="$j" \
				'{ printf "%s %s %s %.1f\n", j, t, $49, $48 / 1024 }' >>"$dir/results.txt"
		done
	done
done
printf '%-20s %12s %12s %10s %10s %8s\n' job "resync IOPS" "ppl IOPS" "resync MB/s" "ppl MB/s" ppl/resync
for j in $jobs; do
	med() { awk -v j="$j" -v t="$1" -v f="$2" '$1 == j && $2 == t { print $f }' "$dir/results.txt" | sort -n |
		awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
	ri=$(med resync 3) pi=$(med ppl 3) rb=$(med resync 4) pb=$(med ppl 4)
	printf '%-20s %12s %12s %10s %10s %8.2f\n' "$j" "$ri" "$pi" "$rb" "$pb" "$(echo "$pi / $ri" | bc -l)"
done
for t in resync ppl; do
	fusermount3 -u "$dir/$t/mnt"
done
sleep 1
grep -h "partial parity log:" "$dir/ppl/daemon.log" || true
