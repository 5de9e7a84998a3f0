#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 62-takeover: md's level changes on a served array, as mdadm --grow
# --level has md make them.  Daemonized, served by config, members on the
# disk (/var/tmp), a model file of what every sector must hold.
#  1. raid1 of two and a spare: grow --level 5 --raid-devices 3 (md's
#     raid5 takeover of a raid1, then the raid5 reshape onto the spare),
#     writes while it runs, kill -9 mid-way; served again by the config
#     that still says raid1: the reshape goes on to the end; the model and
#     zeros in the new rows, check 0; served again the same.
#  2. raid0 of three: grow --level 5 --add d3: a parity-last raid5 of four
#     whose P slot is empty until d3 is rebuilt into it, writes while it
#     runs, kill -9 mid-rebuild (clean: md starts no degraded raid5 a crash
#     left dirty); served again by the config (raid0, d3 now
#     a spare it names): the rebuild resumes, check 0, the model.  Then
#     grow --level 0: a raid0 of three again, d3 out of it; served again
#     by the first config, the model.
#  3. raid0 of three grown to four (grow --raid-devices 4 --add d3), as
#     mdadm grows one: through a raid4 whose P slot stays empty; kill -9
#     mid-way; served again by the raid0's config (d3 a spare in it) the
#     raid4 reshape goes on and ends a raid0 of four, as the grow would
#     have without the kill: the model and zeros.
# With RF_MD_JUDGE=1 kernel md (mdpeer) assembles the members after each
# change and reads the model, mismatch_cnt 0.
# Negative control: RAIDFUSE_TEST_BREAK=takeover-layout (the raid0 ->
# raid5 recorded left-symmetric instead of parity-last): served again, the
# image is not the model.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/model.sh"
requires fuse
build_helper

model_setup

# ---- 1. raid1 of two -> raid5 -> three members, kill -9 mid-reshape
G=$DISK/m
mkdir -p "$G"
mk_conf "$G/r.conf" metadata=1.2 level=1 members="$G/d0.img $G/d1.img" spares="$G/d2.img" member_size=16M
create_array "$G/r.conf" --assume-clean -b none
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/m.log"
OLD=$(($(fsize "$IMG") / 512))
model_fill
echo 2000 >"$MNT/md/sync_speed_max"
"$RAIDFUSE" grow "$MNT" --level 5 --raid-devices 3 || fail "grow --level 5 --raid-devices 3: $(tail -n 3 "$WORK/m.log")"
[ "$(val level)" = raid5 ] || fail "after grow --level 5: md/level $(val level)"
[ "$(val chunk_size)" = 65536 ] || fail "md's chunk for the raid1's raid5 is 64K: md/chunk_size $(val chunk_size)"
[ "$(pos)" != none ] || fail "no reshape onto the spare"
wait_for "the reshape did not move" '[ "$(pos)" -gt 4096 ]'
put 64 256
put $((OLD - 512)) 128
kill_daemon
start_array_daemon "$G/r.conf" "$MNT"
grep -q "the raid1 it names is a raid5 now" "${_LOG_OF[$MNT]}" || fail "served again: $(tail -n 3 "${_LOG_OF[$MNT]}")"
same_model "raid1 -> raid5 mid-reshape, served again after kill -9" "$OLD"
to_end "the raid5 reshape"
NEW=$((OLD * 2))
[ "$(fsize "$IMG")" = $((NEW * 512)) ] || fail "raid5 of 3: $(fsize "$IMG") bytes, want $((NEW * 512))"
truncate -s $((NEW * 512)) "$MODEL"
same_model "raid5 of three" "$NEW"
check_clean "check of the raid5 of three"
stop_array "$MNT"
start_array_daemon "$G/r.conf" "$MNT"
[ "$(val raid_disks)" = 3 ] && [ "$(val level)" = raid5 ] || fail "served again: $(val level) of $(val raid_disks)"
same_model "raid5 of three, served again" "$NEW"
stop_array "$MNT"
if md_judge; then
	judge_model $NEW "$G"/d[0-2].img
	log "kernel md assembles the raid5 that was a raid1 and reads the model, mismatch_cnt 0"
fi
log "raid1 of 2 -> raid5 -> 3 members (kill -9 mid-reshape): $((OLD / 2)) -> $((NEW / 2)) KiB, the model, check 0"

# ---- 2. raid0 of three -> raid5 (P rebuilt onto d3, kill -9 mid-way) -> raid0
# zero_to_five DIR: a raid0 of three on DIR filled, taken over as a raid5
# of four whose P slot is empty (the caller adds d3 once the pace is set).
zero_to_five() {
	G=$1
	mkdir -p "$G"
	mk_conf "$G/r.conf" metadata=1.2 level=0 chunk_size=64K members="$G/d0.img $G/d1.img $G/d2.img" \
		member_size=16M
	create_array "$G/r.conf"
	mk_conf "$G/s.conf" metadata=1.2 level=0 chunk_size=64K members="$G/d0.img $G/d1.img $G/d2.img" \
		spares="$G/d3.img"
	truncate -s 16M "$G/d3.img"
	start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/z.log"
	OLD=$(($(fsize "$IMG") / 512))
	model_fill
	# The level first, the spare once the pace is set: with both in one
	# grow the rebuild of d3 (16 MiB at md's default pace) could end
	# before the pace was set (an ASan daemon at nice 19).
	"$RAIDFUSE" grow "$MNT" --level 5 || fail "grow --level 5: $(tail -n 3 "$WORK/z.log")"
}
zero_to_five "$DISK/z"
echo 2000 >"$MNT/md/sync_speed_max"
"$RAIDFUSE" ctl "$MNT" add "$G/d3.img" || fail "ctl add d3.img: $(tail -n 3 "$WORK/z.log")"
[ "$(val level)" = raid5 ] && [ "$(val raid_disks)" = 4 ] || fail "after --level 5: $(val level) of $(val raid_disks)"
[ "$(val layout)" = 5 ] || fail "raid0 -> raid5: md/layout $(val layout), md's parity-last is 5"
wait_for "d3 is not being rebuilt" '[ "$(val sync_action)" = recover ]'
put 128 512
put $((OLD - 1024)) 64
# md starts no degraded raid5 a crash left dirty (its write hole): the
# kill comes once the superblocks say clean again (md's safe mode)
wait_for "the array did not go clean after the writes" '[ "$(val array_state)" = clean ]'
[ "$(val sync_action)" = recover ] || fail "the rebuild ended before the kill: slow it more"
kill_daemon
start_array_daemon "$G/s.conf" "$MNT"
grep -q "the raid0 it names is a raid5 now" "${_LOG_OF[$MNT]}" || fail "served again: $(tail -n 3 "${_LOG_OF[$MNT]}")"
same_model "raid0 -> raid5 mid-rebuild, served again after kill -9" "$OLD"
echo 0 >"$MNT/md/sync_speed_max"
wait_for "d3 was not rebuilt" '[ "$(val degraded)" = 0 ]'
check_clean "check of the raid5 that was a raid0"
same_model "raid5 of four" "$OLD"
stop_array "$MNT"
if md_judge; then
	judge_model $OLD "$G"/d[0-3].img
	log "kernel md assembles the raid5 that was a raid0 and reads the model, mismatch_cnt 0"
fi
start_array_daemon "$G/s.conf" "$MNT" --log "$WORK/z3.log"
"$RAIDFUSE" grow "$MNT" --level 0 || fail "grow --level 0: $(tail -n 3 "$WORK/z3.log")"
[ "$(val level)" = raid0 ] && [ "$(val raid_disks)" = 3 ] || fail "after --level 0: $(val level) of $(val raid_disks)"
[ ! -e "$MNT/md/dev-d3.img" ] || fail "d3 is still in the raid0: $(dev_state d3.img)"
put 256 128
stop_array "$MNT"
start_array_daemon "$G/r.conf" "$MNT"
[ "$(val level)" = raid0 ] || fail "served again: md/level $(val level)"
same_model "raid0 again" "$OLD"
stop_array "$MNT"
if md_judge; then
	judge_model $OLD "$G"/d[0-2].img
	log "kernel md assembles the raid0 again and reads the model"
fi
log "raid0 of 3 -> raid5 of 4 (P rebuilt onto d3, kill -9 mid-way) -> raid0 of 3: the model, check 0"

# ---- 3. raid0 of three grown to four as mdadm grows one: through a raid4
# of five whose P slot stays empty; kill -9 mid-way (dirty: nothing is
# computed from parity, so it is served), served again by the config
# naming the raid0 (and d3 as a spare): the raid4 reshape goes on and
# ends a raid0 of four (the config names the raid0 it grows from)
G=$DISK/g
mkdir -p "$G"
mk_conf "$G/r.conf" metadata=1.2 level=0 chunk_size=64K members="$G/d0.img $G/d1.img $G/d2.img" member_size=16M
create_array "$G/r.conf"
mk_conf "$G/s.conf" metadata=1.2 level=0 chunk_size=64K members="$G/d0.img $G/d1.img $G/d2.img" \
	spares="$G/d3.img"
truncate -s 16M "$G/d3.img"
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/g.log"
OLD=$(($(fsize "$IMG") / 512))
model_fill
echo 2000 >"$MNT/md/sync_speed_max" 2>/dev/null && fail "a raid0 has md/sync_speed_max"
"$RAIDFUSE" grow "$MNT" --raid-devices 4 --add "$G/d3.img" || fail "grow --raid-devices 4: $(tail -n 3 "$WORK/g.log")"
echo 2000 >"$MNT/md/sync_speed_max"
[ "$(val level)" = raid4 ] && [ "$(val raid_disks)" = "5 (4)" ] || fail "growing raid0: $(val level) of $(val raid_disks)"
wait_for "the reshape did not move" '[ "$(pos)" -gt 8192 ]'
put 32 256
put $((OLD - 256)) 128
kill_daemon
start_array_daemon "$G/s.conf" "$MNT"
grep -q "the raid0 it names is a raid4 now" "${_LOG_OF[$MNT]}" || fail "served again: $(tail -n 3 "${_LOG_OF[$MNT]}")"
same_model "raid0 growing, served again after kill -9" "$OLD"
# (md's default pace: it may be a raid0 again by now, with no
# md/sync_speed_max to raise)
wait_for "the grown raid4 did not become a raid0 again" \
	'[ "$(val level)" = raid0 ] && [ "$(val raid_disks)" = 4 ]'
NEW=$((OLD / 3 * 4))
[ "$(fsize "$IMG")" = $((NEW * 512)) ] || fail "grown: $(fsize "$IMG") bytes, want $((NEW * 512))"
truncate -s $((NEW * 512)) "$MODEL"
put $((NEW - 512)) 128
same_model "raid0 of four" "$NEW"
stop_array "$MNT"
start_array_daemon "$G/s.conf" "$MNT"
[ "$(val level)" = raid0 ] && [ "$(val raid_disks)" = 4 ] || fail "served again: $(val level) of $(val raid_disks)"
same_model "raid0 of four, served again" "$NEW"
stop_array "$MNT"
if md_judge; then
	judge_model $NEW "$G"/d[0-3].img
	log "kernel md assembles the grown raid0 and reads the model"
fi
log "raid0 of 3 -> 4 through a raid4 (kill -9 mid-way, served again by the raid0's config): the model"

# ---- negative control: raid0 -> raid5 recorded as left-symmetric
export RAIDFUSE_TEST_BREAK=takeover-layout
zero_to_five "$DISK/c"
"$RAIDFUSE" ctl "$MNT" add "$G/d3.img" || fail "ctl add d3.img (control)"
unset RAIDFUSE_TEST_BREAK
stop_array "$MNT"
# the config refuses it (no takeover leaves a raid0 so); by its superblocks
expect_fail "$RAIDFUSE" mount "$G/s.conf" "$MNT"
[[ $OUT == *"key 'array.level' says 0, its 1.2 superblock 5"* ]] || fail "control: the config: $OUT"
start_assemble_daemon array.img "$MNT" "$G"/d?.img
if "$RFHELPER" same "$IMG" "$MODEL" $((OLD * 512)) >/dev/null; then
	fail "control: a takeover recorded with the wrong layout, and the image is still the model"
fi
log "negative control (the raid5 recorded left-symmetric): the config refuses it, served by its superblocks the image is not the model"
stop_array "$MNT"
