#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 63-takeover-r10: md's takeovers that move devices between slots, as
# mdadm --grow --level has md make them.  Daemonized, members on the disk
# (/var/tmp), a model file of what every sector must hold.
#  1. raid0 of two, two spares: grow --level 10: a near-2 raid10 of four,
#     d0 and d1 in slots 0 and 2, the copies' slots empty until the spares
#     are rebuilt into them; writes while that runs, kill -9 mid-rebuild;
#     served again by the config that still names the raid0: the rebuild
#     goes on, check 0, the model.
#  2. That raid10 with d0 failed: grow --level 0: a raid0 of one copy of
#     each pair (d0's pair keeps its rebuilt copy, mdadm's choice: the
#     first in sync), the others out of the array, their superblocks
#     faulty; served again by the raid0's config (d0 a member in it, d2 a
#     spare): the raid0 of d2 and d1, the model.
#  3. raid1 of two: grow --level 0: a raid0 of one member (md's 64 KiB
#     chunk, or less to divide the size), the other out; served again by
#     the raid1's config, the model.
# With RF_MD_JUDGE=1 kernel md (mdpeer) assembles the members after each
# change and reads the model, mismatch_cnt 0.
# Negative control: RAIDFUSE_TEST_BREAK=takeover-slots (raid0 -> raid10
# puts d0 in slot 2, d1 in slot 0): the image is not the model.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/model.sh"
requires fuse
build_helper

model_setup

# zero_to_ten DIR: a raid0 of two on DIR (spares d2, d3 in its config),
# filled, taken over to raid10.
zero_to_ten() {
	G=$1
	mkdir -p "$G"
	mk_conf "$G/r.conf" metadata=1.2 level=0 chunk_size=64K members="$G/d0.img $G/d1.img" member_size=16M
	create_array "$G/r.conf"
	mk_conf "$G/s.conf" metadata=1.2 level=0 chunk_size=64K members="$G/d0.img $G/d1.img" \
		spares="$G/d2.img $G/d3.img"
	truncate -s 16M "$G/d2.img" "$G/d3.img"
	start_array_daemon "$G/s.conf" "$MNT" --log "$WORK/z.log"
	OLD=$(($(fsize "$IMG") / 512))
	model_fill
	"$RAIDFUSE" grow "$MNT" --level 10 || fail "grow --level 10: $(tail -n 3 "$WORK/z.log")"
}

# ---- 1. raid0 of two -> raid10 near-2 of four, kill -9 mid-rebuild
zero_to_ten "$DISK/z"
echo 1000 >"$MNT/md/sync_speed_max"
[ "$(val level)" = raid10 ] && [ "$(val raid_disks)" = 4 ] || fail "after --level 10: $(val level) of $(val raid_disks)"
[ "$(val layout)" = 258 ] || fail "raid0 -> raid10: md/layout $(val layout), md's near-2 is 258"
[ "$(val chunk_size)" = 65536 ] || fail "raid0 -> raid10: md/chunk_size $(val chunk_size)"
[ "$(readlink "$MNT/md/rd0")" = dev-d0.img ] ||
	fail "d0 is not in slot 0: rd0 -> $(readlink "$MNT/md/rd0")"
[ "$(readlink "$MNT/md/rd2")" = dev-d1.img ] || fail "d1 is not in slot 2: rd2 -> $(readlink "$MNT/md/rd2")"
same_model "raid10 that was a raid0, degraded" "$OLD"
wait_for "no copy is being rebuilt" '[ "$(val sync_action)" = recover ]'
put 128 512
put $((OLD - 1024)) 64
kill_daemon
start_array_daemon "$G/s.conf" "$MNT"
grep -q "the raid0 it names is a raid10 now" "${_LOG_OF[$MNT]}" || fail "served again: $(tail -n 3 "${_LOG_OF[$MNT]}")"
[ "$(val level)" = raid10 ] || fail "served again: md/level $(val level)"
same_model "raid10 mid-rebuild, served again after kill -9" "$OLD"
echo 0 >"$MNT/md/sync_speed_max"
wait_for "the copies were not rebuilt" '[ "$(val degraded)" = 0 ]'
check_clean "check of the raid10 that was a raid0"
same_model "raid10 of four" "$OLD"
stop_array "$MNT"
if md_judge; then
	judge_model $OLD "$G"/d[0-3].img
	log "kernel md assembles the raid10 that was a raid0 and reads the model, mismatch_cnt 0"
fi
log "raid0 of 2 -> raid10 near-2 of 4 (copies rebuilt onto the spares, kill -9 mid-way): the model, check 0"

# ---- 2. raid10 (d0 failed) -> raid0 of one copy of each pair
start_assemble_daemon array.img "$MNT" "$G"/d[0-3].img
"$RAIDFUSE" ctl "$MNT" fail d0.img || fail "ctl fail d0.img refused"
r1=$(readlink "$MNT/md/rd1")
r3=$(readlink "$MNT/md/rd3")
"$RAIDFUSE" grow "$MNT" --level 0 || fail "grow --level 0: $(tail -n 3 "${_LOG_OF[$MNT]}")"
[ "$(val level)" = raid0 ] && [ "$(val raid_disks)" = 2 ] || fail "after --level 0: $(val level) of $(val raid_disks)"
[ "$(readlink "$MNT/md/rd0")" = "$r1" ] && [ "$(readlink "$MNT/md/rd1")" = dev-d1.img ] ||
	fail "raid0 slots: rd0 -> $(readlink "$MNT/md/rd0") (want $r1), rd1 -> $(readlink "$MNT/md/rd1")"
[ ! -e "$MNT/md/dev-d0.img" ] && [ ! -e "$MNT/md/$r3" ] || fail "a copy that left is still in the raid0"
same_model "raid0 that was a raid10" "$OLD"
put 256 128
stop_array "$MNT"
start_array_daemon "$G/s.conf" "$MNT"
[ "$(val level)" = raid0 ] && [ "$(val raid_disks)" = 2 ] || fail "served again: $(val level) of $(val raid_disks)"
same_model "raid0 again, served again" "$OLD"
stop_array "$MNT"
if md_judge; then
	judge_model $OLD "$G/${r1#dev-}" "$G/d1.img"
	log "kernel md assembles the raid0 that was a raid10 and reads the model"
fi
log "raid10 of 4 (d0 failed) -> raid0 of 2 ($r1 kept for d0's pair): the model"

# ---- 3. raid1 of two -> raid0 of one
G=$DISK/m
mkdir -p "$G"
mk_conf "$G/r.conf" metadata=1.2 level=1 members="$G/d0.img $G/d1.img" member_size=16M
create_array "$G/r.conf" --assume-clean -b none
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/m.log"
OLD=$(($(fsize "$IMG") / 512))
model_fill
"$RAIDFUSE" grow "$MNT" --level 0 || fail "grow --level 0: $(tail -n 3 "$WORK/m.log")"
[ "$(val level)" = raid0 ] && [ "$(val raid_disks)" = 1 ] || fail "raid1 -> raid0: $(val level) of $(val raid_disks)"
[ "$(val chunk_size)" -ge 4096 ] && [ $((OLD % ($(val chunk_size) / 512))) = 0 ] ||
	fail "raid1 -> raid0: md/chunk_size $(val chunk_size) for $OLD sectors"
[ ! -e "$MNT/md/dev-d1.img" ] || fail "d1 is still in the raid0"
put 512 64
stop_array "$MNT"
start_array_daemon "$G/r.conf" "$MNT"
grep -q "the raid1 it names is a raid0 now" "${_LOG_OF[$MNT]}" || fail "served again: $(tail -n 3 "${_LOG_OF[$MNT]}")"
[ "$(val level)" = raid0 ] && [ "$(val raid_disks)" = 1 ] || fail "served again: $(val level) of $(val raid_disks)"
same_model "raid0 that was a raid1, served again" "$OLD"
stop_array "$MNT"
if md_judge; then
	judge_model $OLD "$G/d0.img"
	log "kernel md assembles the raid0 that was a raid1 and reads the model"
fi
log "raid1 of 2 -> raid0 of 1: the model"

# ---- negative control: raid0 -> raid10 with the members in the other order
export RAIDFUSE_TEST_BREAK=takeover-slots
zero_to_ten "$DISK/c"
unset RAIDFUSE_TEST_BREAK
if "$RFHELPER" same "$IMG" "$MODEL" $((OLD * 512)) >/dev/null; then
	fail "control: a raid10 with the members in the wrong slots, and the image is still the model"
fi
log "negative control (d0 in slot 2, d1 in slot 0): the image is not the model"
stop_array "$MNT"
log "ok"
