#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 30-midreshape: arrays that kernel md left in the middle of a reshape,
# served read-only as md reads them, and a backward one continued.
#
# tests/data/md-images/manifest-pending.jsonl holds four arrays md stopped
# mid-reshape (kind "reshape"): a grow from 3 to 4 members (forwards, to a
# lower data offset), the same with an internal bitmap, a layout change
# left-symmetric -> left-asymmetric (backwards, to a higher data offset)
# and a raid5 -> raid6 change (forwards).  Their pattern (sector s holds
# u64le(s)) was written before the reshape: rows the reshape did hold it in
# the new geometry at the new data offsets, the others in the old one.
# For each:
#  - assemble --ro serves an image of md's array size holding the pattern
#    in every sector; array_state says readonly, a write fails;
#    md/reshape_position and reshape_direction say where and which way,
#    sync_action says reshape and takes no action;
#  - the same with each member left out (one in a quick run, RF_QUICK=1):
#    degraded reads rebuild rows of either geometry;
#  - assemble --overlay DIR serves the same, refuses writes too, and
#    leaves the members byte for byte as they were;
#  - the backward one assembled read-write (fresh members) is continued
#    backwards, kill -9 mid-way (assembled again at or below the position
#    seen, the pattern), to its end: md's pattern, md's check finds 0, every
#    superblock md's after the reshape (data offset the new one, feature
#    map 0x0, the new layout); the forward ones are continued by 58, 59 and 64;
#  - negative control: the same members with the superblocks' reshape
#    position where the reshape would begin or end (all of the array in
#    one geometry: what ignoring the position gives) read wrong data.
. "$(dirname "$0")/lib.sh"
requires fuse xz
build_helper

md_images
PENDING=$IMAGES/manifest-pending.jsonl
[ -f "$PENDING" ] || fail "no $PENDING"
MNT=$WORK/mnt
mkdir -p "$MNT"

# pattern_ok WHAT SECTORS: the image holds the pattern in every sector.
pattern_ok() {
	check "[ $(fsize "$MNT/array.img") = $(($2 * 512)) ]" "$1: image of $(fsize "$MNT/array.img") bytes, md's is $(($2 * 512))"
	"$RFHELPER" pattern "$MNT/array.img" "$2" >"$WORK/pattern.out" || fail "$1: $(cat "$WORK/pattern.out")"
}

# no_writes WHAT: writes through the image are refused.
no_writes() {
	[ "$(cat "$MNT/md/array_state")" = readonly ] || fail "$1: array_state $(cat "$MNT/md/array_state")"
	expect_fail dd if=/dev/zero of="$MNT/array.img" bs=4096 count=1 conv=notrunc,nocreat status=none
}

narrays=0
while IFS= read -r line; do
	[ -n "$line" ] || continue
	[ "$(jval "$line" kind)" = reshape ] || continue
	name=$(jval "$line" name)
	sectors=$(jval "$line" array_sectors)
	pos=$(jval "$line" reshape_position_sectors)
	dir=$(jval "$line" direction)
	ndisks=$(jval "$line" raid_disks)
	D=$WORK/$name
	md_unpack "$line" "$D"
	members=("${MEMBERS[@]}")
	before=$(cat "${members[@]}" | sha256sum)
	log "$name: $dir reshape stopped at array sector $pos, $sectors sectors"

	start_assemble array.img "$MNT" --ro "${members[@]}"
	pattern_ok "$name --ro" "$sectors"
	no_writes "$name --ro"
	grep -q "(read-only)" "$MNT/mdstat" || fail "$name: mdstat: $(cat "$MNT/mdstat")"
	# md's words for it; no sync action runs in either geometry
	[ "$(cat "$MNT/md/reshape_position")/$(cat "$MNT/md/reshape_direction")" = "$pos/$dir" ] ||
		fail "$name: md/reshape_position, reshape_direction: $(cat "$MNT/md/reshape_position") $(cat "$MNT/md/reshape_direction")"
	[ "$(cat "$MNT/md/sync_action")" = reshape ] || fail "$name: md/sync_action $(cat "$MNT/md/sync_action")"
	expect_fail sh -c "echo check >'$MNT/md/sync_action'"
	stop_array "$MNT"

	gone_list=$(seq 0 $((ndisks - 1)))
	[ "${RF_QUICK:-0}" = 1 ] && gone_list=1
	for gone in $gone_list; do
		rest=()
		for m in "${members[@]}"; do [[ $m == */role$gone.img ]] || rest+=("$m"); done
		start_assemble array.img "$MNT" --ro "${rest[@]}"
		pattern_ok "$name --ro without role $gone" "$sectors"
		stop_array "$MNT"
	done

	rm -rf "$WORK/ovl"
	mkdir -p "$WORK/ovl"
	start_assemble array.img "$MNT" --overlay "$WORK/ovl" "${members[@]}"
	pattern_ok "$name --overlay" "$sectors"
	no_writes "$name --overlay"
	stop_array "$MNT"
	check "[ \"$before\" = \"\$(cat ${members[*]} | sha256sum)\" ]" "$name: serving it changed the members"

	# Negative control: the position as if the reshape had not started,
	# and as if it had finished (each a position md accepts): one geometry
	# for the whole array reads the wrong data.  (A position a little off
	# may read right: md leaves the old copy of the rows it moved until new
	# rows overwrite it, and had moved a stripe past the position it
	# recorded.)
	full=$(($(jval "$line" component_sectors) * (ndisks - ($(jval "$line" level) == 6 ? 2 : 1))))
	if [ "$dir" = forwards ]; then ends="0 $full"; else ends="$full 0"; fi
	what="not started"
	for wrong in $ends; do
		for m in "${members[@]}"; do
			"$RFHELPER" sb12-set64 "$m" 104 "$wrong"
		done
		start_assemble array.img "$MNT" --ro "${members[@]}"
		expect_fail "$RFHELPER" pattern "$MNT/array.img" "$sectors"
		stop_array "$MNT"
		log "$name: negative control: position $wrong ($what): ${OUT##*: }"
		what=finished
	done
	rm -rf "$D"

	# A backward reshape continued read-write (forward ones: 58, 59).
	if [ "$dir" = backwards ]; then
		md_unpack "$line" "$D"
		members=("${MEMBERS[@]}")
		start_assemble_daemon array.img "$MNT" --freeze "${members[@]}"
		echo 1000 >"$MNT/md/sync_speed_max"
		echo idle >"$MNT/md/sync_action"
		wait_for "$name: the backward reshape did not move" \
			'p=$(cat "$MNT/md/reshape_position"); [ "$p" = none ] || [ "$p" -le $((pos - 9216)) ]'
		seen=$(cat "$MNT/md/reshape_position")
		[ "$seen" != none ] || fail "$name: the backward reshape ended before it could be interrupted"
		kill -9 "$DAEMON_PID"
		wait_daemon_exit "$MNT" --any-status
		fusermount3 -u -z "$MNT" 2>/dev/null || true
		start_assemble_daemon array.img "$MNT" --freeze "${members[@]}"
		p=$(cat "$MNT/md/reshape_position")
		[ "$p" -le "$seen" ] || fail "$name: after kill -9 at $seen, assembled at $p"
		pattern_ok "$name after kill -9 mid-way" "$sectors"
		echo 0 >"$MNT/md/sync_speed_max"
		echo idle >"$MNT/md/sync_action"
		wait_for "$name: the backward reshape did not end" '[ "$(cat "$MNT/md/reshape_position")" = none ]'
		pattern_ok "$name continued" "$sectors"
		wait_for "$name: the resync did not end" '[ "$(cat "$MNT/md/sync_action")" = idle ]'
		echo check >"$MNT/md/sync_action"
		wait_for "$name: check did not end" '[ "$(cat "$MNT/md/sync_action")" = idle ]'
		[ "$(cat "$MNT/md/mismatch_cnt")" = 0 ] || fail "$name continued: mismatch_cnt $(cat "$MNT/md/mismatch_cnt")"
		stop_array "$MNT"
		newoff=$(jval "$line" new_offset_sectors)
		for m in "${members[@]}"; do
			"$RAIDFUSE" examine "$m" >"$WORK/ex.txt" || fail "examine $m failed"
			for want in "Feature Map : 0x0" "Data Offset : $newoff sectors" "Layout : $(jval "$line" new_layout)\$"; do
				grep -q "$want" "$WORK/ex.txt" || fail "$m continued: no '$want' in: $(cat "$WORK/ex.txt")"
			done
		done
		log "$name: the backward reshape continued from $pos, killed at <= $seen, to its end: the pattern, check 0, data offset $newoff"
		rm -rf "$D"
	fi
	narrays=$((narrays + 1))
done <"$PENDING"
[ $narrays = 4 ] || fail "$narrays arrays mid-reshape in $PENDING, expected 4"
log "$narrays arrays mid-reshape served as md reads them"
