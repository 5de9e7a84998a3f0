#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 16-bitmap: md's internal write-intent bitmap on a raid5 made with
# `raidfuse create --bitmap=internal`, judged by mdadm's own readers.
#
# For raid5, raid10 (far copies: its bits count array sectors) and raid1:
# 1. create --bitmap=internal --bitmap-chunk=1M: mdadm --examine reads
#    Feature Map 0x1 and "Internal Bitmap : 8 sectors from superblock",
#    the same lines raidfuse examine prints; mdadm --examine-bitmap reads
#    the bitmap (4 KiB at member sector 16): version 4, 1 MB chunks, the
#    array's uuid, every bit set (as mdadm --create leaves it).
# 2. fio writes and verifies; a clean unmount leaves 0 bits set and the
#    bitmap's events equal to the superblock's.
# 3. kill -9 while fio writes a 4 MiB region: the superblocks say active
#    and a few bits (the region's chunks, far from all) are set.
# 4. assemble again: md/consistency_policy says bitmap, mdstat has md's
#    bitmap line; the resync that starts by itself goes over the dirty chunks
#    only (the log's count: fewer sectors than the array's), then
#    echo check counts mismatch_cnt 0, the data of step 2 verifies, and a
#    clean unmount leaves 0 bits set.
# RF_MD_JUDGE=1 also lets kernel md assemble and check the members.
. "$(dirname "$0")/lib.sh"
requires fuse fio mdadm

C=$WORK/c
MNT=$WORK/mnt
IMG=$MNT/array.img
mkdir -p "$C"

# dirty_bits: "D" of member 0's "Bitmap : T bits (chunks), D dirty (P%)"
dirty_bits() {
	xbitmap "$C/d0.img" "$C/x.txt"
	sed -n 's/^ *Bitmap : [0-9]* bits (chunks), \([0-9]*\) dirty.*/\1/p' "$C/x.txt"
}

act() {
	local i
	echo "$1" >"$MNT/md/sync_action" || fail "echo $1 > md/sync_action failed"
	sleep 0.2
	for ((i = 0; i < 600; i++)); do
		[ "$(val sync_action)" = idle ] && return 0
		sleep 0.1
	done
	fail "md/sync_action still '$(val sync_action)' 60 s after $1"
}

# round NAME N CONF-KEYS...: the whole story on one array of N members.
round() {
	local name=$1 n=$2 i dirty line over all logf pid fiopid
	shift 2
	rm -f "$C"/d?.img
	log "$name"

	# 1. create
	mk_conf "$C/raid.conf" metadata=1.2 members="$(members "$n")" member_size=64M "$@"
	create_array "$C/raid.conf" --assume-clean --bitmap=internal --bitmap-chunk=1M
	for ((i = 0; i < n; i++)); do
		mdadm --examine "$C/d$i.img" >"$C/ex.txt" 2>&1 || fail "mdadm --examine d$i.img: $(cat "$C/ex.txt")"
		check "[ \"$(field "$C/ex.txt" "Feature Map")\" = 0x1 ]" "$name d$i: feature map says bitmap"
		check "[ \"$(field "$C/ex.txt" "Internal Bitmap")\" = '8 sectors from superblock' ]" "$name d$i: bitmap offset"
		"$RAIDFUSE" examine "$C/d$i.img" >"$C/rx.txt"
		diff -u "$C/ex.txt" "$C/rx.txt" >"$C/diff.txt" ||
			fail "$name d$i: raidfuse examine differs from mdadm's:"$'\n'"$(cat "$C/diff.txt")"
		xbitmap "$C/d$i.img" "$C/x.txt"
		check "[ \"$(field "$C/x.txt" Magic)\" = 6d746962 ]" "$name d$i: bitmap magic"
		check "[ \"$(field "$C/x.txt" Version)\" = 4 ]" "$name d$i: bitmap version"
		check "[ \"$(field "$C/x.txt" Chunksize)\" = '1 MB' ]" "$name d$i: bitmap chunk"
		check "[ \"$(field "$C/x.txt" UUID)\" = \"$(field "$C/ex.txt" "Array UUID")\" ]" "$name d$i: bitmap uuid"
		check "grep -q 'dirty (100.0%)' $C/x.txt" "$name d$i: a new bitmap has every bit set"
	done
	TOTAL_BITS=$(sed -n 's/^ *Bitmap : \([0-9]*\) bits.*/\1/p' "$C/x.txt")
	log "$name created: $TOTAL_BITS bitmap chunks of 1 MB, all set; mdadm and raidfuse examine agree"

	# 2. writes, clean unmount
	start_array "$C/raid.conf" "$MNT"
	grep -q "internal bitmap: $TOTAL_BITS chunks of 1024 KiB" "$(daemon_log_file "$MNT")" ||
		fail "$name: the daemon did not load the bitmap: $(cat "$(daemon_log_file "$MNT")")"
	fio_verify "$IMG" --rw=randwrite --bs=4k --size=8M --iodepth=8 --name=base
	stop_array "$MNT"
	check "[ \"$(dirty_bits)\" = 0 ]" "$name: a clean unmount clears every bit"
	mdadm --examine "$C/d0.img" >"$C/ex.txt"
	check "[ \"$(field "$C/x.txt" Events)\" = \"$(field "$C/ex.txt" Events)\" ]" "$name: bitmap events = superblock events"
	check "[ \"$(field "$C/ex.txt" State)\" = clean ]" "$name: clean after unmount"
	log "$name clean unmount: 0 bits set, events $(field "$C/ex.txt" Events) in both"

	# 3. crash while writing a small region
	start_array "$C/raid.conf" "$MNT"
	pid=$DAEMON_PID
	fio --name=crash --filename="$IMG" --rw=randwrite --bs=4k --offset=32M --size=4M --direct=1 \
		--ioengine=psync --time_based --runtime=20 >/dev/null 2>&1 &
	fiopid=$!
	# Killed once the writes have marked the superblocks dirty (fio may
	# take seconds to start on a loaded machine; 2 s at least of writes).
	sleep 2
	for ((i = 0; i < 150; i++)); do
		[ "$(mdadm --examine "$C/d0.img" | sed -n 's/^ *State : //p')" = active ] && break
		sleep 0.1
	done
	kill -9 "$pid"
	wait_daemon_exit "$MNT" --any-status
	fusermount3 -u -z "$MNT" 2>/dev/null || true
	wait "$fiopid" 2>/dev/null || true
	mdadm --examine "$C/d0.img" >"$C/ex.txt"
	check "[ \"$(field "$C/ex.txt" State)\" = active ]" "$name: dirty after kill -9 during writes"
	dirty=$(dirty_bits)
	check "[ $dirty -ge 1 ] && [ $dirty -le 4 ]" "$name kill -9: the 4 MiB region's chunks set ($dirty of $TOTAL_BITS)"
	log "$name kill -9 while writing: $dirty of $TOTAL_BITS bits set"

	# 4. resync over the dirty chunks only
	# shellcheck disable=SC2046
	start_assemble array.img "$MNT" $(for ((i = 0; i < n; i++)); do echo "$C/d$i.img"; done)
	logf=$(daemon_log_file "$MNT")
	grep -q "internal bitmap: $TOTAL_BITS chunks of 1024 KiB, $dirty set, $dirty need a resync" "$logf" ||
		fail "$name: assemble did not find $dirty chunks needing a resync: $(cat "$logf")"
	check '[ "$(val consistency_policy)" = bitmap ]' "$name: md/consistency_policy"
	check "grep -q '^      bitmap: 1/1 pages \\[4KB\\], 1024KB chunk$' $MNT/mdstat" "$name: mdstat's bitmap line"
	# the resync the dirty superblocks call for starts by itself
	wait_sync_idle "$MNT" "$name: the automatic resync"
	grep -q "resync due from sector 0: starting it" "$logf" ||
		fail "$name: no automatic resync after the crash: $(cat "$logf")"
	line=$(grep -m1 "bitmap: resync went over" "$logf") ||
		fail "$name: no resync summary in the log: $(cat "$logf")"
	over=$(sed -n 's/.*resync went over \([0-9]*\) of \([0-9]*\) sectors.*/\1/p' <<<"$line")
	all=$(sed -n 's/.*resync went over \([0-9]*\) of \([0-9]*\) sectors.*/\2/p' <<<"$line")
	check "[ $over -gt 0 ] && [ $over -le $((dirty * 2048)) ] && [ $over -lt $all ]" \
		"$name: resync covers the dirty chunks only ($over of $all sectors)"
	log "$name resync went over $over of $all sectors ($dirty dirty chunks of 2048)"
	act check
	check '[ "$(val mismatch_cnt)" = 0 ]' "$name: check after the bitmap resync"
	fio_verify --verify_only "$IMG" --rw=randwrite --bs=4k --size=8M --iodepth=8 --name=base
	stop_array "$MNT"
	check "[ \"$(dirty_bits)\" = 0 ]" "$name: resynced and idle: every bit cleared"
	log "$name check: mismatch_cnt 0; the first 8 MiB verify; 0 bits set after unmount"

	if md_judge; then
		"$MDJUDGE" --check "$C"/d?.img >"$C/judge.txt" 2>&1 || fail "md-judge: $(cat "$C/judge.txt")"
		grep -q "JUDGE assemble=ok" "$C/judge.txt" || fail "$name: kernel md did not assemble: $(cat "$C/judge.txt")"
		grep -q "JUDGE mismatch_cnt=0 " "$C/judge.txt" || fail "$name: kernel md's check: $(cat "$C/judge.txt")"
		log "$name kernel md: $(grep -o 'assemble=ok.*metadata=[^ ]*' "$C/judge.txt"), mismatch_cnt 0"
	fi
}

round raid5 4 level=5 chunk_size=64K
# raid10's bits count array sectors; the far copies sit half a member away.
full round raid10-f2 4 level=10 layout=f2 chunk_size=64K
full round raid1 2 level=1
log "ok"
