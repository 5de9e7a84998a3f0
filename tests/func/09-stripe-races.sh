#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 09-stripe-races: writers that share stripes, under every engine knob.
#
# Eight fio jobs write interleaved blocks at once: job i writes block i of
# every eight, so all of them hit the same stripes together (4K blocks), or
# the same 4K pages (512-byte blocks), and every parity update races with
# seven others.  A ninth and tenth job write random sizes up to 128K and
# 3M blocks (more than one FUSE request) beside them.  Every block must
# read back, raid4/5 parity must be in sync at rest (XOR of the members is
# zero), and a remount must read the same bytes.
#
# Each array runs with one of the tuning knobs turned (raidfuse.conf.example
# "tuning"): a stripe cache at its minimum (back-pressure), read-modify-
# write never or always, big stripe heads, several worker groups and
# threads.  The knobs change how the work is done, never the data.  Some
# arrays run degraded, where parity must be computed around the hole.
. "$(dirname "$0")/lib.sh"
requires fuse fio
build_helper

D=$WORK/a
MNT=$WORK/mnt
IMG=$MNT/array.img
MEMBER_BYTES=$((32 << 20))

JOBS="--thread"
for i in 0 1 2 3 4 5 6 7; do
	JOBS+=" --name=page$i --rw=write:28k --bs=4k --offset=$((i * 4))k --size=2M"
	JOBS+=" --name=sect$i --rw=write:3584 --bs=512 --offset=$((2 << 20 | i * 512)) --size=256K"
done
JOBS+=" --name=mixed --rw=randwrite --bsrange=512-128k --offset=3M --size=2M"
JOBS+=" --name=big --rw=write --bs=3M --offset=5M --size=6M"
JOBS_MIB=11

# race LEVEL DISKS MEMBERS TUNING...: MEMBERS as mk_conf takes them
# ("missing" allowed), TUNING as tuning.KEY=VALUE.
race() {
	local level=$1 n=$2 members=$3 sum f files=()
	shift 3
	log "raid$level $n disks ($members) $*"
	rm -rf "$D" && mkdir -p "$D"
	mk_conf "$D/raid.conf" level="$level" chunk_size=64K members="$members" member_size=32M "$@"
	create_array "$D/raid.conf"
	start_array "$D/raid.conf" "$MNT"
	fio_verify "$IMG" --iodepth=8 $JOBS
	sum=$(region_sum "$IMG" $JOBS_MIB)
	stop_array "$MNT"
	if [[ $level == [45] && $members != *missing* ]]; then
		for f in $members; do files+=("$D/$f"); done
		"$RFHELPER" xor-zero 0 $MEMBER_BYTES "${files[@]}" >"$WORK/xor.out" ||
			fail "raid$level $*: parity out of sync: $(cat "$WORK/xor.out")"
	fi
	start_array "$D/raid.conf" "$MNT"
	[ "$(region_sum "$IMG" $JOBS_MIB)" = "$sum" ] || fail "raid$level $*: the data changed across a remount"
	stop_array "$MNT"
}

full race 5 4 "$(members 4)"
race 5 4 "$(members 4)" tuning.stripe_cache_size=17
full race 5 4 "$(members 4)" tuning.rmw_level=0
full race 5 4 "$(members 4)" tuning.rmw_level=2 tuning.stripe_size=16384
full race 5 5 "$(members 5)" tuning.worker_groups=3 tuning.group_thread_cnt=2
full race 4 4 "$(members 4)" tuning.stripe_size=65536 tuning.stripe_cache_size=17
race 6 5 "$(members 5)" tuning.rmw_level=1
full race 6 6 "$(members 6)" tuning.stripe_cache_size=17 tuning.group_thread_cnt=4
full race 6 5 "$(members 5)" tuning.worker_groups=0 tuning.group_thread_cnt=0
race 5 4 "d0.img missing d2.img d3.img" tuning.stripe_cache_size=17
full race 6 5 "missing d1.img d2.img missing d4.img" tuning.rmw_level=0
full race 1 3 "$(members 3)"
race 10 4 "$(members 4)" layout=n2
full race 10 3 "missing d1.img d2.img" layout=o2
full race 0 3 "$(members 3)"
