#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench-reshape.sh - how fast a reshape runs beside what the members can stream.
#
#   tools/bench-reshape.sh [--size MIB] [--chunk KIB] [--what grow|raid6] DIR
#
# In DIR (a directory on the storage to measure: the disk, or /dev/shm):
# a raid5 of 4 members of MIB MiB each (512) with one spare, made by
# raidfuse create, filled through the image (so every member block is
# real), then `raidfuse grow --wait` to 5 members (grow) or to raid6
# (raid6), timed, with sync_speed_max 2000000000 (no pace in practice: the
# walk alone; 0, as md's "system", is md's default 200000 KiB/s per
# member).  Beside it, fio on the same member files: each read
# with 1 MiB O_DIRECT requests at QD8, all at once, then each written the
# same way: the members' parallel stream.  The reshape reads the old rows
# and writes the new ones once: the stream would take
#   read_bytes / read_rate + write_bytes / write_rate
# (grow: reads 3 x MIB, writes 3 x MIB x 5/4; raid6: reads 3 x MIB, writes
# 5 x MIB), and the ratio of
# that to the reshape's time is the figure wanted (>= 0.50).  A reshape's
# writes must reach stable storage before the superblocks record the
# position past them (md flushes there too), so the writes are also
# measured durable: half as much written by fio, with its end_fsync in the
# time, and the ratio to that stream printed beside.  Then, on a
# fresh array, 4 KiB random reads at QD32 on the image for 3 s idle, and
# for 3 s while the same reshape runs at md's default pace (it yields to
# them: sync_speed_min): their ratio (>= 0.70 wanted), and where the
# reshape stood after them (it must still have been running).
# Prints one line per figure; removes what it made.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RAIDFUSE=${RAIDFUSE:-$here/build/raidfuse}
size=512 chunk=512 what=grow
while [ $# -gt 1 ]; do
	case $1 in
	--size) size=$2; shift ;;
	--chunk) chunk=$2; shift ;;
	--what) what=$2; shift ;;
	*) echo "usage: $0 [--size MIB] [--chunk KIB] [--what grow|raid6] DIR" >&2; exit 2 ;;
	esac
	shift
done
[ $# = 1 ] || { echo "usage: $0 [--size MIB] [--chunk KIB] [--what grow|raid6] DIR" >&2; exit 2; }
command -v fio >/dev/null || { echo "$0: needs fio" >&2; exit 2; }
D=$(mktemp -d "$1/rf-bench-reshape.XXXXXX")
M=$D/mnt
trap 'fusermount3 -u -z "$M" 2>/dev/null || true; rm -rf "$D"' EXIT
mkdir -p "$M"
cat >"$D/r.conf" <<EOF
array: {
	name = "array.img";
	metadata = "1.2";
	level = 5;
	chunk_size = "${chunk}K";
	members = ( "d0.img", "d1.img", "d2.img", "d3.img" );
	spares = ( "d4.img" );
	member_size = "${size}M";
};
EOF
img=$M/array.img
fill() { # fill: every sector of the image written (real blocks on every member)
	local n i
	n=$(($(stat -c %s "$img") / 1048576))
	for ((i = 0; i < n; i += 64)); do
		dd if="$D/fill" of="$img" bs=1M seek=$i count=$((n - i < 64 ? n - i : 64)) oflag=direct \
			conv=notrunc,nocreat status=none
	done
	sync
}
fresh() { # fresh: a new array in D, filled, served on M; the spare's blocks real too
	rm -f "$D"/d?.img
	"$RAIDFUSE" create "$D/r.conf" --assume-clean -b none >/dev/null 2>&1
	dd if=/dev/zero of="$D/d4.img" bs=1M seek=1 count=$((size - 1)) oflag=direct conv=notrunc status=none
	"$RAIDFUSE" mount "$D/r.conf" "$M" 2>/dev/null
	fill
}
# start: the reshape asked for (no wait)
start() {
	if [ "$what" = raid6 ]; then
		"$RAIDFUSE" grow "$M" --level 6 "$@" >/dev/null 2>&1
	else
		"$RAIDFUSE" grow "$M" --raid-devices 5 "$@" >/dev/null 2>&1
	fi
}
dd if=/dev/urandom of="$D/fill" bs=1M count=64 status=none

# the members' stream: fio on the five member files at once
stream() { # stream read|write|durable: MiB/s over the five files together
	local files rw=$1 how=(--runtime=4 --time_based --size=$((size - 8))M)
	files=$(printf '%s:' "$D"/d?.img)
	# durable: writes whose time includes the flush that puts them on
	# stable storage (fio's end_fsync), as a reshape's must be before the
	# superblocks record its position
	[ "$rw" = durable ] && rw=write how=(--end_fsync=1 --size=$((5 * (size - 8) / 2))M)
	fio --name=stream --rw="$rw" --bs=1M --iodepth=8 --ioengine=io_uring --direct=1 \
		--offset=4M "${how[@]}" --filename="${files%:}" --file_service_type=roundrobin \
		--output-format=terse --terse-version=3 |
		awk -F';' -v rw="$rw" '{ print (rw == "read" ? $7 : $48) / 1024 }'
}
rand() { # rand: 4k random read IOPS at QD32 on the image for 3 s
	fio --name=r --filename="$img" --rw=randread --bs=4k --iodepth=32 --ioengine=io_uring --direct=1 \
		--runtime=3 --time_based --output-format=terse --terse-version=3 | awk -F';' '{ print $8 }'
}

fresh
"$RAIDFUSE" stop "$M" 2>/dev/null
rd=$(stream read)
wr=$(stream write)
dw=$(stream durable)
# 1. the reshape alone, timed, at full speed
fresh
echo 2000000000 >"$M/md/sync_speed_max"
t0=$(date +%s.%N)
start --wait
t1=$(date +%s.%N)
"$RAIDFUSE" stop "$M" 2>/dev/null
# the old data once read, the new rows written: 3 data columns of data
# over 4 data + 1 parity (grow), over 3 data + 2 parity (raid6)
reads=$((3 * size))
if [ "$what" = raid6 ]; then writes=$((5 * size)); else writes=$((3 * size * 5 / 4)); fi
# 2. random reads idle, then while the same reshape runs (md's default pace)
fresh
idle=$(rand)
start
sleep 0.5
busy=$(rand)
during=$(cat "$M/md/reshape_position")
"$RAIDFUSE" stop "$M"
awk -v t0="$t0" -v t1="$t1" -v rd="$rd" -v wr="$wr" -v r="$reads" -v w="$writes" -v idle="$idle" \
	-v busy="$busy" -v what="$what" -v dir="$1" -v size="$size" -v during="$during" -v dw="$dw" 'BEGIN {
	t = t1 - t0; s = r / rd + w / wr; sd = r / rd + w / dw
	printf "reshape (%s) of raid5 4 x %d MiB in %s: %.2f s\n", what, size, dir, t
	printf "members stream: read %.0f MiB/s, write %.0f MiB/s: %.2f s for %d MiB read + %d MiB written\n", rd, wr, s, r, w
	printf "ratio to the stream: %.2f\n", s / t
	printf "durable writes (flushed at the end): %.0f MiB/s: %.2f s with the reads; ratio %.2f\n", dw, sd, sd / t
	printf "4k randread QD32: idle %d IOPS, during the reshape %d IOPS: %.2f (reshape_position after: %s)\n",
		idle, busy, busy / idle, during
}'
