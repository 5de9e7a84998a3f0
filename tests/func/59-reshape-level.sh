#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 59-reshape-level: raid5 -> raid6 online, as mdadm --grow --level=6 does it,
# daemonized, members on the disk (/var/tmp).
#
# A model file holds what every sector of the array must hold: the random
# fill (md's pattern in part 0) and every write the test makes, each also
# made to the model.
#  0. kernel md's raid5 -> raid6 stopped mid-way (tests/data/md-images
#     r5-ls-4to6-5d-64k-midlevel: mdadm --grow --level=6 --raid-devices=5 of
#     a raid5 of 4, stopped at array sector 36864): assembled frozen, md's
#     pattern reads back in both geometries; a write on each side of the
#     position; unfrozen at a crawl, kill -9 mid-way; assembled again it
#     goes on to the end: the model, check 0, every superblock md's after
#     the change (raid6 left-symmetric, data offset 1024, feature map 0x0).
#  1. raid5 of 4 x 24 MiB (left-symmetric, 64K chunks) created from a config
#     with one spare, filled.  md/level refuses raid0 with its reason;
#     `raidfuse grow --level 6` (sync_action frozen first): md/level says
#     raid6, raid_disks 5, the spare holds slot 4, every superblock records
#     md's form of the change (level 6, layout left-symmetric-6, new layout
#     left-symmetric, Recovery Offset on the new member).  Writes before
#     and past the position, fio writing and verifying a region; unfrozen at
#     a crawl, fio on another while the walk runs, a write into rows moved
#     since, kill -9 mid-way: served again by the config (which names the
#     raid5 it was), at or past the position seen, the image is the model.
#  2. to the end: raid6 left-symmetric of 5, the array's size unchanged,
#     the model, fio's two regions verify; md's check finds 0 mismatches; every superblock a plain
#     raid6 (feature map 0x0, data offset moved, in sync); one member lost
#     and the other read degraded: the model.  RF_MD_JUDGE=1: kernel md
#     assembles the members and reads the model's sha256, mismatch_cnt 0.
#  4. the raid6's chunk changed 64K -> 128K (`raidfuse grow --chunk 128`):
#     recorded as md does (New Chunksize), fio writes and verifies a region
#     while the walk runs (the model takes it), kill -9 mid-way, served
#     again, to the end: the model, fio's blocks verify, check 0; the config
#     that says 64K is refused naming the key and the superblock's 128K,
#     and serves once it says 128K.  RF_MD_JUDGE=1: kernel md reads it.
#  5. back to raid5: `grow --level 5` of the raid6 is refused with md's
#     reason (Q is not on the last member only); relayout to
#     left-symmetric-6 (`grow --layout`), then md's takeover: raid5 of 4,
#     d4 a spare, the model, check 0, the config (level 5) serves it again.
#     RF_MD_JUDGE=1: kernel md reads the four.
#  6. raid4 -> raid5 (parity-last) -> raid4 by md's takeovers: no data
#     moves; the model; the config that says raid4 is refused while the
#     array is a raid5, naming the key, and serves it as raid4 again.
#  3. RF_MD_JUDGE=1: kernel md continues a raid5 -> raid6 raidfuse began and
#     was killed in: md's pattern over the raid5, the change, kill -9
#     mid-way; mdpeer's guest assembles snapshots of the members, md goes on
#     from the superblocks' position to the end (a raid6 of 5), the pattern
#     reads back, md's check finds 0 (tools/md-golden-job.sh reshape-verify).
# Negative control: the member the change added written nowhere in the
# rows reshaped (RAIDFUSE_TEST_BREAK=reshape-level-q): after the change the
# image differs from the model.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/model.sh"
requires fuse xz
build_helper

model_setup

# level_change DIR: a raid5 of 4 + 1 spare in DIR, filled (the model),
# changed to raid6 frozen at position 0.  Sets N (array sectors).
level_change() {
	local G=$1
	mkdir -p "$G"
	mk_conf "$G/r.conf" metadata=1.2 level=5 chunk_size=64K \
		members="$G/d0.img $G/d1.img $G/d2.img $G/d3.img" spares="$G/d4.img" member_size=24M
	create_array "$G/r.conf" --assume-clean -b none
	start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/g.log"
	N=$(($(fsize "$IMG") / 512))
	head -c $((N * 512)) /dev/urandom >"$MODEL"
	dd if="$MODEL" of="$IMG" bs=1M oflag=direct conv=fsync,notrunc,nocreat status=none || fail "cannot fill the array"
	echo frozen >"$MNT/md/sync_action"
	"$RAIDFUSE" grow "$MNT" --level 6 || fail "grow --level 6 refused: $(tail -n 3 "$WORK/g.log")"
}

# ---- 0. kernel md's change, continued
md_images
LINE=$(grep '"name": "r5-ls-4to6-5d-64k-midlevel"' "$IMAGES/manifest-pending.jsonl") ||
	fail "no r5-ls-4to6-5d-64k-midlevel in the manifest"
N=$(jval "$LINE" array_sectors)
POS=$(jval "$LINE" reshape_position_sectors)
[ "$N/$POS" = 190464/36864 ] || fail "manifest: array_sectors $N, reshape position $POS"
md_unpack "$LINE" "$DISK/md"
M=("${MEMBERS[@]}")
truncate -s $((N * 512)) "$MODEL"
"$RFHELPER" fill "$MODEL" "$N" >/dev/null || fail "cannot make the model"
start_assemble_daemon array.img "$MNT" --freeze "${M[@]}"
[ "$(pos)" = "$POS" ] && [ "$(val level)" = raid6 ] || fail "md's change: position $(pos), $(val level)"
same_model "md's members, frozen" "$N"
put 8192 128
put $((N - 4096)) 256
echo 1000 >"$MNT/md/sync_speed_max"
echo idle >"$MNT/md/sync_action"
wait_for "md's change did not move" 'p=$(pos); [ "$p" != none ] && [ "$p" -ge $((POS + 9216)) ]'
p=$(pos)
put $(((POS + p) / 2 / 8 * 8)) 64
SEEN=$(pos)
kill_daemon
start_assemble_daemon array.img "$MNT" --freeze "${M[@]}"
[ "$(pos)" -ge "$SEEN" ] || fail "md's change, assembled again: position $(pos), $SEEN was seen"
same_model "md's change, after kill -9" "$N"
echo 0 >"$MNT/md/sync_speed_max"
echo idle >"$MNT/md/sync_action"
wait_for "md's change did not end" '[ "$(pos)" = none ]'
same_model "md's change, finished" "$N"
check_clean "check after md's change"
stop_array "$MNT"
for m in "${M[@]}"; do
	"$RAIDFUSE" examine "$m" >"$WORK/ex.txt" || fail "examine $m failed"
	for want in "Feature Map : 0x0" "Raid Level : raid6" "Layout : left-symmetric$" "Data Offset : 1024 sectors"; do
		grep -q "$want" "$WORK/ex.txt" || fail "$m after md's change: no '$want' in: $(cat "$WORK/ex.txt")"
	done
done
log "kernel md's raid5 -> raid6 (stopped at $POS) continued: killed at >= $SEEN, finished, the model, check 0"
rm -rf "$DISK/md"

# ---- 1. the change begins, frozen; writes in both geometries; kill -9 mid-way
G=$DISK/a
level_change "$G"
expect_fail sh -c "echo raid0 >'$MNT/md/level'"
grep -q "md/level: raid0: a reshape is under way" "$WORK/g.log" ||
	fail "md/level raid0 mid-change: no reason in the log: $(tail -n 3 "$WORK/g.log")"
[ "$(val level)" = raid6 ] || fail "changing: md/level '$(val level)'"
[ "$(val raid_disks)" = 5 ] || fail "changing: raid_disks '$(val raid_disks)'"
[ "$(pos)" = 0 ] || fail "a frozen change moved to $(pos)"
grep -q "d4.img\[4\]" "$MNT/mdstat" || fail "the spare did not take slot 4: $(cat "$MNT/mdstat")"
for m in "$G/d0.img" "$G/d4.img"; do
	"$RAIDFUSE" examine "$m" >"$WORK/ex.txt"
	for want in "Raid Level : raid6" "Raid Devices : 5" "Layout : left-symmetric-6" \
		"New Layout : left-symmetric" "Reshape pos'n : 0"; do
		grep -q "$want" "$WORK/ex.txt" || fail "$m: no '$want' as md records the change: $(cat "$WORK/ex.txt")"
	done
done
grep -q "Recovery Offset : 0 sectors" "$WORK/ex.txt" || fail "d4: no recovery offset: $(cat "$WORK/ex.txt")"
same_model "changing, frozen" "$N"
# fio writes and verifies 4 MiB before the walk moves (A) and 4 MiB while
# it runs (B); the model takes what it wrote; both verify at the end
FA=$((N - 12288)) FB=$((N / 2 / 2048 * 2048))
fio_model() {
	fio_verify "$IMG" --rw=randwrite --bs=16k --offset=$(($1 * 512)) --size=4m
	dd if="$IMG" of="$MODEL" bs=1M skip=$(($1 / 2048)) seek=$(($1 / 2048)) count=4 iflag=direct conv=notrunc \
		status=none
}
fio_model $FA
put 4096 128
put $((N - 1024)) 256
same_model "written in both geometries" "$N"
echo 1000 >"$MNT/md/sync_speed_max"
echo idle >"$MNT/md/sync_action"
fio_model $FB
wait_for "the change did not move" 'p=$(pos); [ "$p" != none ] && [ "$p" -ge 9216 ]'
p=$(pos)
put $((p / 2 / 8 * 8)) 64
SEEN=$(pos)
kill_daemon
log "killed at position >= $SEEN (written at $((p / 2 / 8 * 8)))"
start_array_daemon "$G/r.conf" "$MNT" --freeze --log "$WORK/g2.log"
[ "$(pos)" -ge "$SEEN" ] || fail "served again by config: position $(pos), $SEEN was seen before"
[ "$(val level)" = raid6 ] && [ "$(val raid_disks)" = 5 ] || fail "served again: $(val level) of $(val raid_disks)"
same_model "after kill -9" "$N"

# ---- 2. to the end
echo 0 >"$MNT/md/sync_speed_max"
echo idle >"$MNT/md/sync_action"
wait_for "the change did not end" '[ "$(pos)" = none ]'
[ "$(fsize "$IMG")" = $((N * 512)) ] || fail "raid6 image of $(fsize "$IMG") bytes, was $((N * 512))"
[ "$(val layout)" = 2 ] || fail "raid6 layout $(val layout), left-symmetric (2) wanted"
same_model "raid6" "$N"
for f in $FA $FB; do
	fio_verify --verify_only "$IMG" --rw=randwrite --bs=16k --offset=$((f * 512)) --size=4m
done
check_clean "check after the change"
stop_array "$MNT"
for m in "$G"/d?.img; do
	"$RAIDFUSE" examine "$m" >"$WORK/ex.txt" || fail "examine $m failed"
	for want in "Feature Map : 0x0" "Raid Level : raid6" "Raid Devices : 5" "Layout : left-symmetric$"; do
		grep -q "$want" "$WORK/ex.txt" || fail "$m after the change: no '$want' in: $(cat "$WORK/ex.txt")"
	done
done
start_assemble_daemon array.img "$MNT" --ro "$G/d1.img" "$G/d2.img" "$G/d3.img" "$G/d4.img"
grep -q "\[5/4\] \[_UUUU\]" "$MNT/mdstat" || fail "raid6 without d0: $(cat "$MNT/mdstat")"
same_model "raid6 without d0" "$N"
stop_array "$MNT"
log "raid5 -> raid6: killed at >= $SEEN, the model each time, check 0, degraded reads the model"
if md_judge; then
	judge_model $N "$G"/d?.img
	log "kernel md assembles the raid6 raidfuse made: the model's sha256, mismatch_cnt 0"
fi

# ---- 4. the raid6's chunk 64K -> 128K (mdadm --grow --chunk), fio verify during it
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/c.log"
echo frozen >"$MNT/md/sync_action"
expect_fail "$RAIDFUSE" grow "$MNT" --chunk 128 --layout left-asymmetric
"$RAIDFUSE" grow "$MNT" --chunk 128 || fail "grow --chunk 128 refused: $(tail -n 3 "$WORK/c.log")"
"$RAIDFUSE" examine "$G/d2.img" >"$WORK/ex.txt"
grep -q "New Chunksize : 128K" "$WORK/ex.txt" && grep -q "Chunk Size : 64K" "$WORK/ex.txt" ||
	fail "the chunk change is not in d2's superblock: $(cat "$WORK/ex.txt")"
echo 2000 >"$MNT/md/sync_speed_max"
echo idle >"$MNT/md/sync_action"
# fio writes and verifies 8 MiB near the end while the walk moves; the
# model takes what it wrote
fio_verify "$IMG" --rw=randwrite --bs=16k --offset=$(((N - 20480) * 512)) --size=8m
dd if="$IMG" of="$MODEL" bs=1M skip=$(((N - 20480) / 2048)) seek=$(((N - 20480) / 2048)) count=8 \
	iflag=direct conv=notrunc status=none
wait_for "the chunk change did not move" 'p=$(pos); [ "$p" = none ] || [ "$p" -ge 12288 ]'
[ "$(pos)" != none ] || fail "the chunk change ended before it could be interrupted"
SEEN=$(pos)
kill_daemon
start_array_daemon "$G/r.conf" "$MNT" --freeze
[ "$(pos)" -ge "$SEEN" ] || fail "chunk change, served again: position $(pos), $SEEN was seen before"
same_model "chunk change: after kill -9" "$N"
echo 0 >"$MNT/md/sync_speed_max"
echo idle >"$MNT/md/sync_action"
wait_for "the chunk change did not end" '[ "$(pos)" = none ]'
[ "$(val chunk_size)" = 131072 ] || fail "chunk_size $(val chunk_size) after the change"
same_model "128K chunks" "$N"
fio_verify --verify_only "$IMG" --rw=randwrite --bs=16k --offset=$(((N - 20480) * 512)) --size=8m
check_clean "check after the chunk change"
stop_array "$MNT"
expect_fail "$RAIDFUSE" mount "$G/r.conf" "$MNT"
[[ $OUT == *"key 'array.chunk_size' says 64K"*"superblock 128K (a reshape changes them"* ]] ||
	fail "the config's old chunk: $OUT"
sed -i 's/chunk_size = "64K"/chunk_size = "128K"/' "$G/r.conf"
start_array_daemon "$G/r.conf" "$MNT"
same_model "128K chunks, served by the config" "$N"
stop_array "$MNT"
log "raid6 chunk 64K -> 128K: fio verify during it, killed at >= $SEEN, the model, check 0"
if md_judge; then
	judge_model $N "$G"/d?.img
	log "kernel md assembles the rechunked raid6: the model's sha256, mismatch_cnt 0"
fi

# ---- 5. back to raid5: relayout to left-symmetric-6, then md's takeover
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/t.log"
expect_fail "$RAIDFUSE" grow "$MNT" --level 5
grep -q 'md/level: raid5: raid6 to raid5: md takes over a raid6 whose Q is on its last member only' "$WORK/t.log" ||
	fail "raid6 LS to raid5: no reason in the log: $(tail -n 3 "$WORK/t.log")"
"$RAIDFUSE" grow "$MNT" --layout left-symmetric-6 --wait >/dev/null || fail "grow --layout left-symmetric-6 failed"
[ "$(val layout)" = 18 ] || fail "relayout: layout $(val layout)"
same_model "left-symmetric-6" "$N"
"$RAIDFUSE" grow "$MNT" --level 5 || fail "grow --level 5 refused: $(tail -n 3 "$WORK/t.log")"
[ "$(val level)/$(val raid_disks)/$(val layout)" = raid5/4/2 ] ||
	fail "takeover: $(val level) of $(val raid_disks), layout $(val layout)"
grep -q "d4.img\[4\](S)" "$MNT/mdstat" || fail "d4 is not a spare after the takeover: $(cat "$MNT/mdstat")"
put 2048 64
same_model "raid5 again" "$N"
check_clean "check after the takeover"
stop_array "$MNT"
# the config names this raid5 again (level 5, d4 its spare)
start_array_daemon "$G/r.conf" "$MNT"
same_model "raid5 again, served by the config" "$N"
stop_array "$MNT"
log "raid6 relayout to left-symmetric-6 and takeover to raid5 of 4 (d4 a spare): the model, check 0"
if md_judge; then
	judge_model $N "$G"/d[0-3].img
	log "kernel md assembles the raid5 taken over: the model's sha256, mismatch_cnt 0"
fi
rm -rf "$G"

# ---- 6. raid4 <-> raid5 parity-last (md's takeovers: no data moves)
G=$DISK/t
mkdir -p "$G"
mk_conf "$G/r.conf" metadata=1.2 level=4 chunk_size=64K members="$G/d0.img $G/d1.img $G/d2.img" member_size=8M
create_array "$G/r.conf" --assume-clean -b none
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/t4.log"
N=$(($(fsize "$IMG") / 512))
head -c $((N * 512)) /dev/urandom >"$MODEL"
dd if="$MODEL" of="$IMG" bs=1M oflag=direct conv=fsync,notrunc,nocreat status=none || fail "cannot fill the raid4"
"$RAIDFUSE" grow "$MNT" --level 5 || fail "raid4 -> raid5 refused: $(tail -n 3 "$WORK/t4.log")"
[ "$(val level)/$(val layout)" = raid5/5 ] || fail "raid4 -> raid5: $(val level), layout $(val layout)"
put 4096 64
same_model "raid4 -> raid5" "$N"
stop_array "$MNT"
start_array_daemon "$G/r.conf" "$MNT"
grep -q "the raid4 it names is a raid5 now (layout 5)" "${_LOG_OF[$MNT]}" ||
	fail "the config naming raid4: $(cat "${_LOG_OF[$MNT]}")"
same_model "raid5, served by the config naming raid4" "$N"
"$RAIDFUSE" grow "$MNT" --level 4 || fail "raid5 -> raid4 refused"
[ "$(val level)" = raid4 ] || fail "raid5 -> raid4: $(val level)"
stop_array "$MNT"
start_array_daemon "$G/r.conf" "$MNT"
same_model "raid4 again, served by the config" "$N"
check_clean "check after raid4 -> raid5 -> raid4"
stop_array "$MNT"
log "raid4 -> raid5 (parity-last) -> raid4: the model, served by the config naming raid4 each time"
rm -rf "$G"

# ---- 3. (RF_MD_JUDGE=1) kernel md continues the change raidfuse began
if md_judge; then
	G=$DISK/k
	mkdir -p "$G"
	level_change "$G"
	"$RFHELPER" fill "$IMG" "$N" >/dev/null || fail "cannot write md's pattern"
	echo 500 >"$MNT/md/sync_speed_max"
	echo idle >"$MNT/md/sync_action"
	wait_for "the change did not move" '[ "$(pos)" -ge 6144 ]'
	kill_daemon
	md_continues "$G" "$N"
	[[ $V == *"reshape finished: reshape_position none, raid_disks 5"* && $V == *" OK"* &&
		$V == *"mismatch_cnt=0"* ]] || fail "kernel md's run of the change raidfuse began: $V"
	log "kernel md finished the raid5 -> raid6 raidfuse began: $(grep -o 'assembled at reshape_position [0-9]*' <<<"$V"), pattern OK, mismatch_cnt 0"
	rm -rf "$G"
fi

# ---- negative control: the new member never written
G=$DISK/c
export RAIDFUSE_TEST_BREAK=reshape-level-q
level_change "$G"
unset RAIDFUSE_TEST_BREAK
echo idle >"$MNT/md/sync_action"
wait_for "control: the change did not end" '[ "$(pos)" = none ]'
expect_fail "$RFHELPER" same "$IMG" "$MODEL" $((N * 512))
stop_array "$MNT"
log "negative control (the new member not written): the image differs from the model: ${OUT##*: }"
rm -rf "$G"
