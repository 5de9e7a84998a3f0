#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 60-reshape-degraded: a member fails while a reshape runs, and the reshape
# goes on degraded, as md's does: the missing member's old chunks are
# computed from their rows, its new ones left out, and no spare takes the
# failed slot until the reshape ended (md recovers nothing beside a
# reshape).  Daemonized, served by config, members on the disk (/var/tmp),
# a model file of what every sector must hold.
#  1. raid5 of 3 grown to 4 (a spare for the new slot, another left): at
#     position >= 6144 member d1 is failed (md/dev-d1.img/state faulty);
#     the position moves on while the other spare stays a spare; writes
#     above the position (rows the walk reads after the failure, part of
#     them on d1) and below it; once the walk passed them the image is
#     the model.  kill -9 mid-way; served again by the config (frozen),
#     degraded, at or past the position seen: the model.  To the end: the
#     image grows, the spare takes slot 1 and is rebuilt in the new
#     geometry, the model, check finds mismatch_cnt 0.
#  2. raid5 of 4 -> raid6 (the new member absent in the old rows) with d0
#     failed mid-way: old rows lack two members, computed from P; to the
#     end, degraded: the model; every superblock says raid6.
# Negative control: RAIDFUSE_TEST_BREAK=reshape-degraded (the walk reads
# the failed member as if it were whole): part 1's writes above the
# position, skipped on d1 once it failed, come back stale: the image
# differs from the model.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/model.sh"
requires fuse
build_helper

model_setup


# past SECTOR: wait until the walk's position is past SECTOR (or it ended).
past() {
	wait_for "the position did not pass $1: $(pos)" '[ "$(pos)" = none ] || [ "$(pos)" -gt '"$1"' ]'
}

# degrade NAME: at position >= 6144 (1000 KiB/s), fail member NAME; the
# walk goes on.  Sets FAILED_AT.
degrade() {
	echo 1000 >"$MNT/md/sync_speed_max"
	echo idle >"$MNT/md/sync_action"
	wait_for "the reshape did not move" '[ "$(pos)" -ge 6144 ]'
	echo faulty >"$MNT/md/dev-$1/state"
	FAILED_AT=$(pos)
	check '[[ "$(dev_state '"$1"')" == *faulty* ]]' "$1 reads $(dev_state "$1")"
	past $((FAILED_AT + 3072))
	log "$1 failed at position $FAILED_AT; the reshape goes on ($(pos))"
}

# grow_degraded DIR: raid5 of 3 in DIR (spares d3, d4) filled, grown to
# 4; d1 failed mid-way; writes above the position (rows the walk reads
# after the failure) and below it; returns once the walk passed them.
grow_degraded() {
	G=$1
	mkdir -p "$G"
	mk_conf "$G/r.conf" metadata=1.2 level=5 chunk_size=64K members="$G/d0.img $G/d1.img $G/d2.img" \
		spares="$G/d3.img $G/d4.img" member_size=32M
	create_array "$G/r.conf" --assume-clean -b none
	start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/g.log"
	GOLD=$(($(fsize "$IMG") / 512))
	model_fill
	truncate -s $((GOLD * 512 * 3 / 2)) "$MODEL"
	echo frozen >"$MNT/md/sync_action"
	"$RAIDFUSE" grow "$MNT" --raid-devices 4 || fail "grow --raid-devices 4 refused: $(tail -n 3 "$WORK/g.log")"
	degrade d1.img
	[ "$(dev_state d4.img)" = spare ] || fail "a spare took a slot during the reshape: d4 $(dev_state d4.img)"
	P=$(pos)
	put $(((P + 4096) / 8 * 8)) 512
	put $((P / 2 / 8 * 8)) 64
	past $((P + 4096 + 1024))
}

# ---- 1. raid5 3 -> 4, d1 failed mid-way, kill -9, to the end
grow_degraded "$DISK/g"
same_model "degraded mid-reshape" "$GOLD"
SEEN=$(pos)
kill_daemon
start_array_daemon "$G/r.conf" "$MNT" --freeze
[ "$(pos)" -ge "$SEEN" ] || fail "served again after kill -9: position $(pos), $SEEN was seen before"
[ "$(dev_state d4.img)" = spare ] || fail "served again mid-reshape: d4 $(dev_state d4.img)"
same_model "degraded, served again after kill -9" "$GOLD"
to_end "the grow"
GNEW=$((GOLD * 3 / 2))
[ "$(fsize "$IMG")" = $((GNEW * 512)) ] || fail "grown image of $(fsize "$IMG") bytes, 4 members give $((GNEW * 512))"
wait_for "no spare took slot 1 after the reshape: d4 $(dev_state d4.img)" '[ "$(dev_state d4.img)" = in_sync ]'
same_model "grown, d4 rebuilt into slot 1" "$GNEW"
check_clean "check after the grow and the rebuild"
stop_array "$MNT"
start_array_daemon "$G/r.conf" "$MNT"
same_model "grown and rebuilt, served again" "$GNEW"
stop_array "$MNT"
log "raid5 3 -> 4 with a member failed mid-way: degraded to the end, then rebuilt; the model"

# ---- 2. raid5 4 -> raid6, d0 failed mid-way
G=$DISK/l
mkdir -p "$G"
mk_conf "$G/r.conf" metadata=1.2 level=5 chunk_size=64K \
	members="$G/d0.img $G/d1.img $G/d2.img $G/d3.img" spares="$G/d4.img" member_size=24M
create_array "$G/r.conf" --assume-clean -b none
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/l.log"
GOLD=$(($(fsize "$IMG") / 512))
model_fill
echo frozen >"$MNT/md/sync_action"
"$RAIDFUSE" grow "$MNT" --level 6 || fail "grow --level 6 refused: $(tail -n 3 "$WORK/l.log")"
degrade d0.img
P=$(pos)
put $(((P + 4096) / 8 * 8)) 512
to_end "raid5 -> raid6"
[ "$(val level)" = raid6 ] || fail "after the change: md/level $(val level)"
same_model "raid6, d0 failed during the change" "$GOLD"
stop_array "$MNT"
for m in "$G"/d[1-4].img; do
	"$RAIDFUSE" examine "$m" >"$WORK/ex.txt" || fail "examine $m failed"
	grep -q "Raid Level : raid6" "$WORK/ex.txt" || fail "$m after the change: $(cat "$WORK/ex.txt")"
done
log "raid5 -> raid6 with a member failed mid-way: the model, raid6 degraded"

# ---- negative control: the failed member read as if whole
export RAIDFUSE_TEST_BREAK=reshape-degraded
grow_degraded "$DISK/c"
unset RAIDFUSE_TEST_BREAK
expect_fail "$RFHELPER" same "$IMG" "$MODEL" $((GOLD * 512))
stop_array "$MNT"
log "negative control (the failed member read as if whole): the image differs from the model: ${OUT##*: }"
