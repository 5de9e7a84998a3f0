#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# md-bitmap-crosscheck.sh - kernel md resyncs by the bits raidfuse set.
#
# For raid5 and raid10 (f2: its bits count array sectors, its far copies
# sit half a member away) made with `raidfuse create --bitmap=internal
# --bitmap-chunk=1M`:
#  1. fio fills the array through raidfuse; a clean unmount clears the bits.
#  2. raidfuse is killed (-9) while fio writes inside bitmap chunk 10 only:
#     the superblocks say dirty, and raidfuse's bitmap has exactly bit 10.
#  3. One redundant 4 KiB block is overwritten in chunk 10 and one in
#     chunk 40 (raid5: the row's parity; raid10: the first copy).
#  4. In a VM (mdpeer's run-guest.sh, members as snapshots), kernel md
#     assembles the members read-write and resyncs what the bitmap marks,
#     then checks: only chunk 40's damage may be left (raid5 8 sectors,
#     raid10 128: md counts a raid10 mismatch per 64 KiB compare).
#  5. Negative control: bit 10 cleared on every member, the same run must
#     find both blocks damaged (twice the count): so the count above comes
#     from md resyncing where raidfuse's bit said, in md's units.
#
# usage: tools/md-bitmap-crosscheck.sh        (RAIDFUSE, MDPEER override)
#
# mdpeer (a QEMU guest running kernel md) is not part of this tree: it is
# taken from shared/tools/mdpeer beside the repository, or from MDPEER.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RAIDFUSE=${RAIDFUSE:-$here/build/raidfuse}
MDPEER=${MDPEER:-$here/../shared/tools/mdpeer}
if [ ! -x "$MDPEER/run-guest.sh" ]; then
	echo "md-bitmap-crosscheck.sh: kernel md's resync needs mdpeer: no $MDPEER/run-guest.sh (set MDPEER=DIR)" >&2
	exit 2
fi
work=$(mktemp -d /dev/shm/rf-bmcross-XXXXXX)
pids=()
cleanup() {
	# a subshell killed early runs the EXIT trap it inherited: not ours to clean
	[ "$BASHPID" = "$$" ] || return 0
	fusermount3 -uz "$work/mnt" 2>/dev/null || true
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/mnt" "$work/share"

# The guest: assemble read-write (md resyncs what the bitmap marks), wait,
# check, report.
cat >"$work/job.sh" <<'JOB'
#!/bin/sh
MD=/sys/block/md0/md
echo 1000000 > /proc/sys/dev/raid/speed_limit_min
echo 2000000 > /proc/sys/dev/raid/speed_limit_max
idle() { sleep 1; mdadm --wait /dev/md0; while [ "$(cat $MD/sync_action)" != idle ]; do sleep 0.5; done; }
mdadm --assemble --run /dev/md0 /dev/vd? > /host/assemble.log 2>&1 || { echo "assemble=fail" > /host/res.txt; exit 1; }
idle
echo check > $MD/sync_action
idle
echo "assemble=ok mismatch_cnt=$(cat $MD/mismatch_cnt)" > /host/res.txt
dmesg | grep -E "md0|bitmap" > /host/dmesg.txt
mdadm --stop /dev/md0
JOB
chmod +x "$work/job.sh"

# corrupt MEMBER SECTOR: 4 KiB of random bytes at member data sector SECTOR.
corrupt() {
	dd if=/dev/urandom of="$work/d$1.img" bs=512 seek=$((2048 + $2)) count=8 conv=notrunc status=none
}
set_bit10() { # set_bit10 0|1 on every member (bit 10: byte 1, mask 4)
	local m b
	for m in 0 1 2 3; do
		b=$(od -An -tu1 -j $((16 * 512 + 256 + 1)) -N1 "$work/d$m.img" | tr -d ' ')
		b=$(($1 ? b | 4 : b & ~4))
		printf "$(printf '\\%03o' "$b")" | dd of="$work/d$m.img" bs=1 seek=$((16 * 512 + 256 + 1)) conv=notrunc status=none
	done
}
judge() { # judge: the kernel's mismatch_cnt after its resync and check
	rm -f "$work/share/res.txt"
	MDPEER_MEM=512 MDPEER_DISK_OPTS=snapshot=on "$MDPEER/run-guest.sh" --share "$work/share" --timeout 300 \
		--log "$work/share/console.log" "$work/job.sh" "$work"/d?.img >/dev/null 2>&1 || true
	sed -n 's/.*assemble=ok mismatch_cnt=\([0-9]*\).*/\1/p' "$work/share/res.txt" 2>/dev/null
}

fail=0
# name conf-keys fio-offset fio-size block-in-chunk-10 block-in-chunk-40 unit
run() {
	local name=$1 keys=$2 off=$3 size=$4 c10=$5 c40=$6 unit=$7 pid fio bits got
	rm -f "$work"/d?.img
	printf 'array: { %s chunk_size = "64K"; members = ("d0.img", "d1.img", "d2.img", "d3.img");\n' "$keys" >"$work/r.conf"
	printf '  member_size = "64M"; bitmap = "internal"; bitmap_chunk = "1M"; };\n' >>"$work/r.conf"
	"$RAIDFUSE" create "$work/r.conf" --assume-clean >/dev/null
	"$RAIDFUSE" mount "$work/r.conf" "$work/mnt" -f >"$work/log1" 2>&1 &
	pid=$!
	sleep 1
	fio --name=fill --filename="$work/mnt/array.img" --rw=write --bs=1M --size=100M --direct=1 \
		--ioengine=psync >/dev/null
	fusermount3 -u "$work/mnt"
	wait "$pid"
	"$RAIDFUSE" mount "$work/r.conf" "$work/mnt" -f >"$work/log2" 2>&1 &
	pid=$!
	pids+=("$pid")
	sleep 1
	fio --name=crash --filename="$work/mnt/array.img" --rw=randwrite --bs=4k --offset="$off" --size="$size" \
		--direct=1 --ioengine=psync --time_based --runtime=20 >/dev/null 2>&1 &
	fio=$!
	sleep 2
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	fusermount3 -uz "$work/mnt" 2>/dev/null || true
	wait "$fio" 2>/dev/null || true
	dd if="$work/d0.img" of="$work/bm" bs=512 skip=16 count=8 status=none
	bits=$(mdadm --examine-bitmap "$work/bm" | sed -n 's/.*bits (chunks), \([0-9]*\) dirty.*/\1/p')
	[ "$(od -An -tu1 -j $((256 + 1)) -N1 "$work/bm" | tr -d ' ')" = 4 ] && [ "$bits" = 1 ] ||
		{ echo "$name: FAIL: after kill -9 the bitmap should hold bit 10 only ($bits bits set)"; fail=1; return; }
	corrupt "${c10% *}" "${c10#* }"
	corrupt "${c40% *}" "${c40#* }"
	got=$(judge)
	if [ "$got" = "$unit" ]; then
		echo "$name: ok: kernel md resynced chunk 10 by raidfuse's bit: mismatch_cnt $got (chunk 40 only)"
	else
		echo "$name: FAIL: mismatch_cnt '$got' after md's bitmap resync, want $unit"
		fail=1
	fi
	set_bit10 0
	got=$(judge)
	if [ "$got" = $((2 * unit)) ]; then
		echo "$name: ok: negative control, bit 10 cleared: mismatch_cnt $got (both)"
	else
		echo "$name: FAIL: negative control: mismatch_cnt '$got', want $((2 * unit))"
		fail=1
	fi
}

# raid5, 3 data members: member chunk 10 = rows 160-175 = array bytes
# 30M..33M; row 165's parity is on member 2, row 640's (chunk 40) on 3.
run raid5 "level = 5;" 30M 3M "2 $((165 * 128))" "3 $((640 * 128))" 8
# raid10 f2: array chunk 10 = bytes 10M..11M; array chunk 162's first copy
# is on member 2 at member sector 40 * 128, chunk 642's at 160 * 128.
run raid10-f2 "level = 10; layout = \"f2\";" 10M 1M "2 $((40 * 128))" "2 $((160 * 128))" 128
exit $fail
