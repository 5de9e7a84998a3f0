#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 58-reshape: a raid5 grow from 3 to 4 members that kernel md left under
# way (tests/data/md-images r5-ls-3to4d-64k-midgrow: md stopped at array
# sector 81792, data offsets moving from 2048 to 1664) is continued by
# raidfuse to its end, online, through kill -9, served as users run it
# (assemble detaches; members on a disk file system).
#
# A model file holds what every sector of the array must hold: md's
# pattern (sector s holds u64le(s)) over the old array's 126976 sectors,
# zeros after them up to the grown array's 190464, and every write the
# test makes, each also made to the model.
#  1. assemble --freeze: sync_action says frozen, the position stays
#     where md left it, mdstat shows the reshape; writes below, across and
#     above the position read back as the model says.
#  2. sync_action idle with sync_speed_max 1000 (KiB/s of each member):
#     the position moves (sync_completed counts it, as md's does); a write
#     into rows moved since the assembly;
#     kill -9 while it moves.  Assembled again (frozen): the position is at
#     or past where it was seen, the image is the model.  Twice.
#  3. unfrozen at full speed: the reshape ends; the image grows to md's
#     size (stat sees it at once), holds the model; the resync the kills
#     made due runs in the new geometry; check finds
#     mismatch_cnt 0, each member's superblock is md's after a grow
#     (feature map 0x0, data offset 1664, 4 devices); stopped and
#     assembled again, the same.  With RF_MD_JUDGE=1 kernel md assembles
#     the members and reads the model's sha256, mismatch_cnt 0.
#  4. a grow raidfuse starts: raid5 of 3 x 32 MiB created from a config
#     that lists a 4th file as a spare, served by config (detached),
#     filled with random data; md/raid_disks 5 is refused while there is
#     no spare for a 5th, then `raidfuse grow --raid-devices 4` (which
#     writes md/raid_disks) is taken: raid_disks reads "4 (3)", the spare
#     holds role 3, the data is to move 3 chunks lower; kill -9 while it
#     moves, served again by the same config (frozen): the image is the
#     model; to the end: grown to 4 members' size, the model with zeros
#     after it, check 0, every superblock md's after a grow (data offset
#     1664), the config serves it again.  RF_MD_JUDGE=1: kernel md reads it.
#  4b. a raid1 grown from 2 to 3 mirrors: the spare takes the new slot and
#     is rebuilt; its bytes are the first mirror's; the config serves it.
#     Served again, the walk moves a window and is frozen between two,
#     and a write lands at the position: in the next window's old rows,
#     read ahead beside the last window's writes; the model after the end
#     shows the write kept.
#  5. RF_MD_JUDGE=1: kernel md continues a grow raidfuse began and was
#     killed in, to its end, md's pattern intact, mismatch_cnt 0.
# Negative controls: RAIDFUSE_TEST_BREAK=reshape-record (the position moves
# in memory, never in the superblocks): after the same write and kill -9,
# the image assembled again differs from the model;
# RAIDFUSE_TEST_BREAK=reshape-prefetch (rows read ahead kept after a write
# to them): the write ahead of the walk is lost when its window moves.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/model.sh"
requires fuse xz
build_helper

md_images
PENDING=$IMAGES/manifest-pending.jsonl
LINE=$(grep '"name": "r5-ls-3to4d-64k-midgrow"' "$PENDING") || fail "no r5-ls-3to4d-64k-midgrow in $PENDING"
OLD=$(jval "$LINE" array_sectors)
POS=$(jval "$LINE" reshape_position_sectors)
NEW=190464      # md's array after the grow (r5-ls-3to4d-64k-grown, and md's verify log)
[ "$OLD/$POS" = 126976/81792 ] || fail "manifest: array_sectors $OLD, reshape position $POS"

model_setup
NAME=array.img

# fresh DIR: md's members, mid-reshape, in DIR; M their paths.
fresh() {
	md_unpack "$LINE" "$1"
	M=("${MEMBERS[@]}")
}

# moving WHAT [SECTORS [LIMIT]]: unfreeze at 1000 KiB/s; once the
# position moved SECTORS (4608) past START, write 64 KiB into rows moved
# since START (the position at this assembly) below LIMIT, then kill -9
# while the walk goes on.  Sets SEEN (a position seen before the kill).
moving() {
	local start i p at
	start=$(pos)
	echo 1000 >"$MNT/md/sync_speed_max"
	echo idle >"$MNT/md/sync_action"
	for ((i = 0; i < 200; i++)); do
		p=$(pos)
		[ "$p" = none ] && fail "$1: the reshape ended before it could be interrupted"
		[ "$p" -ge $((start + ${2:-4608})) ] && break
		sleep 0.05
	done
	[ $i -lt 200 ] || fail "$1: the position did not move from $start in 10 s: $(pos)"
	# md's sync_completed counts a running reshape in sectors of each member
	read -r done slash total <"$MNT/md/sync_completed"
	[ "$slash" = / ] && [ "$done" -gt 0 ] && [ "$done" -le "$total" ] ||
		fail "$1: sync_completed mid-reshape: '$done $slash $total'"
	# (within the old array's data: LIMIT sectors, $OLD unless given)
	[ "$p" -le "${3:-$OLD}" ] || p=${3:-$OLD}
	at=$(((start + p) / 2 / 8 * 8))
	[ $((at + 128)) -le "$p" ] || fail "$1: no room to write between $start and $p"
	put "$at" 64
	SEEN=$(pos)
	kill_daemon
	log "$1: killed at position >= $SEEN (assembled at $start, written at $at)"
}

# ahead_write WHAT: the walk moves a window or more and is frozen between
# two (the next window's old rows read ahead, beside the last one's
# writes); a write lands at the position, in those rows.  The window that
# moves next must carry it (the read-ahead dropped).
ahead_write() {
	local p0 p
	p0=$(pos)
	echo 1000 >"$MNT/md/sync_speed_max"
	echo idle >"$MNT/md/sync_action"
	wait_for "$1: the walk did not move from $p0" '[ "$(pos)" -gt "$p0" ]'
	echo frozen >"$MNT/md/sync_action"
	p=$(pos)
	sleep 0.3
	while [ "$(pos)" != "$p" ]; do p=$(pos); sleep 0.3; done
	put "$((p / 8 * 8))" 64
	AHEAD=$p
}

# ---- 1. frozen: both geometries, as md left them
truncate -s $((NEW * 512)) "$MODEL"
"$RFHELPER" fill "$MODEL" "$OLD" >/dev/null || fail "cannot make the model"
fresh "$DISK/a"
start_assemble_daemon "$NAME" "$MNT" --freeze "${M[@]}"
[ "$(val sync_action)" = frozen ] || fail "--freeze: sync_action $(val sync_action)"
sleep 0.5
[ "$(pos)" = "$POS" ] || fail "frozen, the position moved: $(pos)"
grep -q "reshape =" "$MNT/mdstat" || fail "mdstat shows no reshape: $(cat "$MNT/mdstat")"
[ "$(fsize "$IMG")" = $((OLD * 512)) ] || fail "image of $(fsize "$IMG") bytes mid-reshape, md's is $((OLD * 512))"
same_model "md's members" "$OLD"
put 4096 256
put $((POS - 64)) 64
put $((POS + 40000)) 128
same_model "frozen, written in both geometries" "$OLD"
log "frozen at $POS: writes in both geometries read back"

# ---- 2. kill -9 while it moves, twice
moving "first kill"
start_assemble_daemon "$NAME" "$MNT" --freeze "${M[@]}"
[ "$(pos)" -ge "$SEEN" ] || fail "assembled after kill -9: position $(pos), $SEEN was seen before"
same_model "after the first kill -9" "$OLD"
moving "second kill"
start_assemble_daemon "$NAME" "$MNT" --freeze "${M[@]}"
[ "$(pos)" -ge "$SEEN" ] || fail "assembled after the second kill -9: position $(pos), $SEEN was seen before"
same_model "after the second kill -9" "$OLD"
log "two kills mid-reshape: the image is the model each time"

# ---- 3. to the end
echo 0 >"$MNT/md/sync_speed_max"
echo idle >"$MNT/md/sync_action"
wait_for "the reshape did not end" '[ "$(pos)" = none ]'
[ "$(fsize "$IMG")" = $((NEW * 512)) ] || fail "grown image of $(fsize "$IMG") bytes, md's is $((NEW * 512))"
same_model "after the reshape" "$NEW"
put $((NEW - 2048)) 512
same_model "written at the new end" "$NEW"
# The kills left the superblocks active: md's resync follows the reshape.
wait_for "the resync after the reshape did not end" '[ "$(val sync_action)" = idle ]'
log_has "$MNT" "resync done" || fail "no resync after a reshape that kill -9 left dirty"
echo check >"$MNT/md/sync_action"
wait_for "check did not end" '[ "$(val sync_action)" = idle ]'
[ "$(val mismatch_cnt)" = 0 ] || fail "check after the reshape: mismatch_cnt $(val mismatch_cnt)"
stop_array "$MNT"
for m in "${M[@]}"; do
	"$RAIDFUSE" examine "$m" >"$WORK/ex.txt" || fail "examine $m failed"
	for want in "Feature Map : 0x0" "Data Offset : 1664 sectors" "Raid Devices : 4" "Array Size : 95232 KiB"; do
		grep -q "$want" "$WORK/ex.txt" || fail "$m after the reshape: no '$want' in: $(cat "$WORK/ex.txt")"
	done
	grep -q "Reshape" "$WORK/ex.txt" && fail "$m: still records a reshape: $(cat "$WORK/ex.txt")"
done
start_assemble_daemon "$NAME" "$MNT" "${M[@]}"
same_model "assembled again" "$NEW"
stop_array "$MNT"
log "reshape done: $NEW sectors, the model's, mismatch_cnt 0, superblocks as md's after a grow"
if md_judge; then
	judge_model $NEW "${M[@]}"
	log "kernel md assembles the reshaped members: the model's sha256, mismatch_cnt 0"
fi

# ---- 4. a grow raidfuse starts, served by config
G=$DISK/g
mkdir -p "$G"
mk_conf "$G/r.conf" metadata=1.2 level=5 chunk_size=64K members="$G/d0.img $G/d1.img $G/d2.img" \
	spares="$G/d3.img" member_size=32M
create_array "$G/r.conf" --assume-clean -b none
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/g.log"
GOLD=$(($(fsize "$IMG") / 512))
rm -f "$MODEL"
head -c $((GOLD * 512)) /dev/urandom >"$MODEL"
dd if="$MODEL" of="$IMG" bs=1M oflag=direct conv=fsync,notrunc,nocreat status=none || fail "cannot fill the array"
truncate -s $((GOLD * 512 * 3 / 2)) "$MODEL"
expect_fail sh -c "echo 5 >'$MNT/md/raid_disks'"
grep -q "raid_disks: 5: 1 spare(s) to grow from 3 to 5 members, 2 needed" "$WORK/g.log" ||
	fail "a grow without enough spares: no reason in the log: $(tail -n 3 "$WORK/g.log")"
[ "$(val raid_disks)" = 3 ] || fail "refused grow: raid_disks $(val raid_disks)"
echo frozen >"$MNT/md/sync_action"
"$RAIDFUSE" grow "$MNT" --raid-devices 4 || fail "grow --raid-devices 4 refused: $(tail -n 3 "$WORK/g.log")"
[ "$(val raid_disks)" = "4 (3)" ] || fail "growing: raid_disks '$(val raid_disks)', md says '4 (3)'"
[ "$(pos)" = 0 ] || fail "a frozen grow moved to $(pos)"
grep -q "d3.img\[3\]" "$MNT/mdstat" || fail "the spare did not take slot 3: $(cat "$MNT/mdstat")"
"$RAIDFUSE" examine "$G/d3.img" >"$WORK/ex.txt"
grep -q "Reshape pos'n : 0" "$WORK/ex.txt" && grep -q "Delta Devices : 1 (3->4)" "$WORK/ex.txt" &&
	grep -q "New Offset : 1664 sectors" "$WORK/ex.txt" || fail "the grow is not in d3's superblock: $(cat "$WORK/ex.txt")"
put 8192 128
moving "grow" 3072 "$GOLD"
start_array_daemon "$G/r.conf" "$MNT" --freeze
[ "$(pos)" -ge "$SEEN" ] || fail "grow, served again by config: position $(pos), $SEEN was seen before"
same_model "grow: after kill -9" "$GOLD"
ahead_write "grow"
echo 0 >"$MNT/md/sync_speed_max"
echo idle >"$MNT/md/sync_action"
wait_for "the grow did not end" '[ "$(pos)" = none ]'
GNEW=$((GOLD * 3 / 2))
[ "$(fsize "$IMG")" = $((GNEW * 512)) ] || fail "grown image of $(fsize "$IMG") bytes, 4 members give $((GNEW * 512))"
same_model "grown" "$GNEW"
check_clean "check after the grow"
stop_array "$MNT"
for m in "$G"/d?.img; do
	"$RAIDFUSE" examine "$m" >"$WORK/ex.txt" || fail "examine $m failed"
	for want in "Feature Map : 0x0" "Data Offset : 1664 sectors" "Raid Devices : 4"; do
		grep -q "$want" "$WORK/ex.txt" || fail "$m after the grow: no '$want' in: $(cat "$WORK/ex.txt")"
	done
done
start_array_daemon "$G/r.conf" "$MNT"
same_model "grown, served by config again" "$GNEW"
stop_array "$MNT"
log "grow 3 -> 4 by md/raid_disks: killed at >= $SEEN, the model each time, a write ahead of the walk at $AHEAD kept, $GNEW sectors, check 0"
if md_judge; then
	judge_model $GNEW "$G"/d?.img
	log "kernel md assembles the grown members: the model's sha256, mismatch_cnt 0"
fi
rm -rf "$G"

# ---- 4b. a raid1 given a third mirror (md records it at once; the spare
# takes the new, empty slot and is rebuilt)
G=$DISK/m
mkdir -p "$G"
mk_conf "$G/r.conf" metadata=1.2 level=1 members="$G/d0.img $G/d1.img" spares="$G/d2.img" member_size=16M
create_array "$G/r.conf" --assume-clean -b none
start_array_daemon "$G/r.conf" "$MNT"
head -c "$(fsize "$IMG")" /dev/urandom >"$MODEL"
dd if="$MODEL" of="$IMG" bs=1M oflag=direct conv=fsync,notrunc,nocreat status=none || fail "cannot fill the raid1"
"$RAIDFUSE" grow "$MNT" --raid-devices 3 || fail "raid1: grow --raid-devices 3 refused"
wait_for "raid1: the third mirror was not rebuilt" 'grep -q "\[3/3\] \[UUU\]" "$MNT/mdstat"'
[ "$(val raid_disks)" = 3 ] || fail "raid1 grown: raid_disks $(val raid_disks)"
same_model "raid1 grown" $(($(fsize "$IMG") / 512))
stop_array "$MNT"
"$RAIDFUSE" examine "$G/d2.img" >"$WORK/ex.txt" || fail "examine d2 failed"
grep -q "Raid Devices : 3" "$WORK/ex.txt" && grep -q "Device Role : Active device 2" "$WORK/ex.txt" ||
	fail "raid1's third mirror: $(cat "$WORK/ex.txt")"
cmp -s -i 1048576 -n $(($(fsize "$MODEL"))) "$G/d0.img" "$G/d2.img" || fail "raid1: the third mirror differs from the first"
start_array_daemon "$G/r.conf" "$MNT"
grep -q "\[3/3\] \[UUU\]" "$MNT/mdstat" || fail "raid1 grown, served again by config: $(cat "$MNT/mdstat")"
same_model "raid1 grown, served again" $(($(fsize "$IMG") / 512))
stop_array "$MNT"
log "raid1 2 -> 3 mirrors: the spare rebuilt into slot 2, the data and the first mirror's bytes, AAA"
rm -rf "$G"

# ---- 5. (RF_MD_JUDGE=1) kernel md continues a grow raidfuse started and
# was killed in: md's pattern over a raid5 of 3, grow to 4, kill -9
# mid-way; mdpeer's guest assembles snapshots of the members, md goes on
# from the superblocks' position to the end, the pattern reads back,
# md's check finds 0, the data offsets are the new ones
# (tools/md-golden-job.sh reshape-verify).
if md_judge; then md_finishes_grow "$DISK/k" bitmap=none; fi

# ---- negative control: positions never recorded
rm -rf "$DISK/a"
truncate -s 0 "$MODEL"
truncate -s $((NEW * 512)) "$MODEL"
"$RFHELPER" fill "$MODEL" "$OLD" >/dev/null || fail "cannot make the model"
fresh "$DISK/b"
export RAIDFUSE_TEST_BREAK=reshape-record
start_assemble_daemon "$NAME" "$MNT" --freeze "${M[@]}"
moving "control"
unset RAIDFUSE_TEST_BREAK
start_assemble_daemon "$NAME" "$MNT" --freeze --ro "${M[@]}"
[ "$(pos)" = "$POS" ] || fail "control: the superblocks' position moved ($(pos)) though nothing recorded it"
expect_fail "$RFHELPER" same "$IMG" "$MODEL" $((OLD * 512))
stop_array "$MNT"
log "negative control (positions not recorded): the write into moved rows is lost: ${OUT##*: }"

# ---- negative control: the rows read ahead kept after a write to them
G=$DISK/p
mkdir -p "$G"
mk_conf "$G/r.conf" metadata=1.2 level=5 chunk_size=64K members="$G/d0.img $G/d1.img $G/d2.img" \
	spares="$G/d3.img" member_size=16M
create_array "$G/r.conf" --assume-clean -b none
RAIDFUSE_TEST_BREAK=reshape-prefetch start_array_daemon "$G/r.conf" "$MNT" --freeze
GOLD=$(($(fsize "$IMG") / 512))
rm -f "$MODEL"
head -c $((GOLD * 512)) /dev/urandom >"$MODEL"
dd if="$MODEL" of="$IMG" bs=1M oflag=direct conv=fsync,notrunc,nocreat status=none || fail "cannot fill the array"
truncate -s $((GOLD * 512 * 3 / 2)) "$MODEL"
"$RAIDFUSE" grow "$MNT" --raid-devices 4 || fail "control: grow refused"
ahead_write "control"
echo 0 >"$MNT/md/sync_speed_max"
echo idle >"$MNT/md/sync_action"
wait_for "the control's grow did not end" '[ "$(pos)" = none ]'
expect_fail "$RFHELPER" same "$IMG" "$MODEL" $((GOLD * 512 * 3 / 2))
stop_array "$MNT"
log "negative control (rows read ahead kept after a write to them, RAIDFUSE_TEST_BREAK=reshape-prefetch): the write at $AHEAD is lost: ${OUT##*: }"
