#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 61-resize: the members' used size and the image's size changed online,
# as mdadm --grow --size and --array-size do (md/component_size,
# md/array_size).  Daemonized, served by config, members on the disk
# (/var/tmp), a model file of what every sector must hold.
#  1. raid5 of 3 and a spare: the member files grow by 8 MiB of garbage
#     (larger disks that held something); grow --size max keeps the size
#     while the spare is still 16 MiB (md counts every device), then grows
#     the image by two members' 8 MiB once the spare grew too: stat
#     through the mount says so at once.  kill -9 while the grown rows are
#     resynced (slowly); served again: the new size, the model below the
#     old end, the resync goes on from where it got; check finds
#     mismatch_cnt 0 over the garbage.  Writes into the grown rows; served
#     again: the model.
#  2. raid1 with an internal bitmap of 4 KiB chunks: grown the bitmap's
#     bits no longer fit the room md counts on, its chunk doubles; check 0,
#     served again the model, md/bitmap/chunksize 8192.
#  3. a shrink of raid6 as mdadm does it: --array-size cuts the image, a
#     --size below it is refused, --size then the same; served again at
#     the smaller size with the model's bytes.
#  4. a shrink of raid5 4 -> 3 as mdadm does it: --raid-devices 3 refused
#     until --array-size cut the image (and --size left a chunk after the
#     data to move it up); then the walk goes backwards, kill -9 mid-way,
#     served again it goes on to the end: d3 a spare, the model, check 0.
#  5. raid0: refused, the log says md has no resize for it.
# With RF_MD_JUDGE=1 kernel md (mdpeer) assembles the members of parts 1-4
# afterwards and reads the model, its check finding mismatch_cnt 0, and
# finishes a shrink raidfuse began and was killed in.
# Negative control: RAIDFUSE_TEST_BREAK=resize-resync (the grown rows not
# resynced): part 1's check finds the garbage's parity mismatches.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/model.sh"
requires fuse
build_helper

model_setup


# garbage MIB FILE...: each FILE longer by MIB MiB of random bytes.
garbage() {
	local mib=$1 f
	shift
	for f; do
		head -c $((mib << 20)) /dev/urandom >>"$f" || fail "cannot extend $f"
	done
}

# model_tail FROM: the model takes the image's bytes from sector FROM to
# its end (what the grown rows hold).
model_tail() {
	truncate -s "$(fsize "$IMG")" "$MODEL"
	dd if="$IMG" of="$MODEL" bs=512 skip="$1" seek="$1" iflag=direct conv=notrunc status=none ||
		fail "cannot read the grown rows"
}

# grow5 DIR: part 1 up to the kill -9 in the resync of the grown rows
# (the control: up to the grow, served on).
grow5() {
	G=$1
	mkdir -p "$G"
	mk_conf "$G/r.conf" metadata=1.2 level=5 chunk_size=64K members="$G/d0.img $G/d1.img $G/d2.img" \
		spares="$G/d3.img" member_size=16M
	create_array "$G/r.conf" --assume-clean -b none
	start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/g.log"
	OLD=$(($(fsize "$IMG") / 512))
	model_fill
	garbage 8 "$G"/d[0-2].img
	"$RAIDFUSE" grow "$MNT" --size max >"$WORK/grow.out" || fail "grow --size max refused: $(tail -n 3 "$WORK/g.log")"
	[ "$(fsize "$IMG")" = $((OLD * 512)) ] || fail "the spare holds 16 MiB: --size max grew the image to $(fsize "$IMG")"
	garbage 8 "$G/d3.img"
	echo 2000 >"$MNT/md/sync_speed_max"
	"$RAIDFUSE" grow "$MNT" --size max >"$WORK/grow.out" || fail "grow --size max refused: $(tail -n 3 "$WORK/g.log")"
	NEW=$((OLD + 2 * 8 * 2048))
	[ "$(fsize "$IMG")" = $((NEW * 512)) ] || fail "grown image of $(fsize "$IMG") bytes, want $((NEW * 512))"
	grep -q "array_size: $((NEW / 2))" "$WORK/grow.out" || fail "grow said: $(cat "$WORK/grow.out")"
	[ -z "${RAIDFUSE_TEST_BREAK:-}" ] || return 0
	wait_for "the grown rows' resync did not start" '[ "$(val sync_action)" = resync ]'
	kill_daemon
}

# ---- 1. raid5 grown to max, kill -9 mid-resync
grow5 "$DISK/g"
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/g2.log"
[ "$(fsize "$IMG")" = $((NEW * 512)) ] || fail "served again after kill -9: $(fsize "$IMG") bytes, want $((NEW * 512))"
same_model "grown, served again after kill -9" "$OLD"
echo 0 >"$MNT/md/sync_speed_max"
check_clean "check of the grown raid5"
model_tail "$OLD"
put $((OLD + 8)) 512
put $((NEW - 1024)) 256
put $((OLD - 64)) 64
same_model "writes into the grown rows" "$NEW"
stop_array "$MNT"
start_array_daemon "$G/r.conf" "$MNT"
same_model "grown raid5, served again" "$NEW"
[ "$(val component_size)" = $((NEW / 2 / 2)) ] || fail "md/component_size $(val component_size), want $((NEW / 2 / 2)) KiB"
stop_array "$MNT"
if md_judge; then
	judge_model $NEW "$G"/d[0-2].img
	log "kernel md assembles the grown raid5 and reads the model, mismatch_cnt 0"
fi
"$RAIDFUSE" examine "$G/d3.img" >"$WORK/ex.txt" || fail "examine of the spare failed"
log "raid5 3 x 16 MiB -> 24 MiB each (the spare too): $((OLD / 2)) -> $((NEW / 2)) KiB, check 0, the model"

# ---- 2. raid1, the bitmap's chunk doubles
G=$DISK/m
mkdir -p "$G"
mk_conf "$G/r.conf" metadata=1.2 level=1 members="$G/d0.img $G/d1.img" member_size=16M
create_array "$G/r.conf" --assume-clean -b internal --bitmap-chunk 4K
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/m.log"
OLD=$(($(fsize "$IMG") / 512))
[ "$(cat "$MNT/md/bitmap/chunksize")" = 4096 ] || fail "bitmap chunk $(cat "$MNT/md/bitmap/chunksize")"
model_fill
truncate -s +16M "$G/d0.img" "$G/d1.img"
"$RAIDFUSE" grow "$MNT" --size max >"$WORK/grow.out" || fail "grow --size max refused: $(tail -n 3 "$WORK/m.log")"
NEW=$((OLD + 16 * 2048))
[ "$(fsize "$IMG")" = $((NEW * 512)) ] || fail "grown raid1 of $(fsize "$IMG") bytes, want $((NEW * 512))"
[ "$(cat "$MNT/md/bitmap/chunksize")" = 8192 ] || fail "bitmap chunk after the grow: $(cat "$MNT/md/bitmap/chunksize")"
check_clean "check of the grown raid1"
model_tail "$OLD"
put $((NEW - 2048)) 512
stop_array "$MNT"
start_array_daemon "$G/r.conf" "$MNT"
same_model "grown raid1, served again" "$NEW"
[ "$(cat "$MNT/md/bitmap/chunksize")" = 8192 ] || fail "served again: bitmap chunk $(cat "$MNT/md/bitmap/chunksize")"
stop_array "$MNT"
if md_judge; then
	judge_model $NEW "$G"/d[01].img
	log "kernel md assembles the grown raid1 (bitmap chunk 8 KiB) and reads the model, mismatch_cnt 0"
fi
log "raid1 16 -> 32 MiB: the bitmap's chunk 4 KiB -> 8 KiB, check 0, the model"

# ---- 3. raid6 shrunk: --array-size, then --size
G=$DISK/s
mkdir -p "$G"
mk_conf "$G/r.conf" metadata=1.2 level=6 chunk_size=64K members="$G/d0.img $G/d1.img $G/d2.img $G/d3.img" \
	member_size=16M
create_array "$G/r.conf" --assume-clean -b none
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/s.log"
OLD=$(($(fsize "$IMG") / 512))
model_fill
COMP=$(val component_size)
"$RAIDFUSE" grow "$MNT" --array-size $((OLD / 4))K >/dev/null || fail "--array-size refused: $(tail -n 3 "$WORK/s.log")"
[ "$(fsize "$IMG")" = $((OLD / 2 * 512)) ] || fail "--array-size $((OLD / 4))K: image of $(fsize "$IMG") bytes"
expect_fail "$RAIDFUSE" grow "$MNT" --size $((COMP / 4))K
wait_for "the refusal's reason is not in the log" 'grep -q "md/component_size: $((COMP / 4)): md/array_size is" "$WORK/s.log"'
[ "$(val component_size)" = "$COMP" ] || fail "a refused --size changed md/component_size to $(val component_size)"
"$RAIDFUSE" grow "$MNT" --size $((COMP / 2))K >/dev/null || fail "--size refused: $(tail -n 3 "$WORK/s.log")"
same_model "raid6 shrunk" $((OLD / 2))
stop_array "$MNT"
start_array_daemon "$G/r.conf" "$MNT"
[ "$(fsize "$IMG")" = $((OLD / 2 * 512)) ] || fail "shrunk raid6 served again: $(fsize "$IMG") bytes"
same_model "shrunk raid6, served again" $((OLD / 2))
stop_array "$MNT"
if md_judge; then
	judge_model $((OLD / 2)) "$G"/d[0-3].img
	log "kernel md assembles the shrunk raid6 and reads the model's first half, mismatch_cnt 0"
fi
log "raid6 shrunk as mdadm does (--array-size, a --size below it refused, --size): the model's first half"

# ---- 4. raid5 of 4 shrunk to 3 as mdadm does: --array-size to what 3
# hold once each member gives a chunk less, --size, then --raid-devices 3:
# the walk goes backwards; kill -9 mid-way; served again it goes on
G=$DISK/r
mkdir -p "$G"
mk_conf "$G/r.conf" metadata=1.2 level=5 chunk_size=64K \
	members="$G/d0.img $G/d1.img $G/d2.img $G/d3.img" member_size=16M
create_array "$G/r.conf" --assume-clean -b none
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/r.log"
model_fill
shrink_start 3 2 "$WORK/r.log"
shrink_killed 3 d3.img
if md_judge; then
	judge_model $((KEEP * 2)) "$G"/d[0-2].img
	log "kernel md assembles the shrunk raid5 and reads the model, mismatch_cnt 0"
fi
log "raid5 4 -> 3 (array size and component size first, kill -9 mid-way): the model, d3 a spare, check 0"

# (RF_MD_JUDGE=1) kernel md continues a shrink raidfuse started and was
# killed in: md's pattern, raid5 4 -> 3 as above, kill -9 mid-way; mdpeer's
# guest assembles snapshots of the members and md goes on to the end; the
# pattern reads back and md's check finds 0 (tools/md-golden-job.sh
# reshape-verify).
if md_judge; then
	G=$DISK/k
	mkdir -p "$G"
	mk_conf "$G/r.conf" metadata=1.2 level=5 chunk_size=64K \
		members="$G/d0.img $G/d1.img $G/d2.img $G/d3.img" member_size=16M
	create_array "$G/r.conf" --assume-clean -b none
	start_array_daemon "$G/r.conf" "$MNT"
	COMP=$(val component_size)
	KEEP=$(((COMP - 64) * 2))
	"$RAIDFUSE" grow "$MNT" --array-size ${KEEP}K --size $((COMP - 64))K >/dev/null || fail "shrink's sizes refused"
	"$RFHELPER" fill "$IMG" $((KEEP * 2)) >/dev/null || fail "cannot write md's pattern"
	echo 500 >"$MNT/md/sync_speed_max"
	"$RAIDFUSE" grow "$MNT" --raid-devices 3 || fail "grow --raid-devices 3 refused"
	START=$(pos)
	wait_for "the shrink did not move" '[ "$(pos)" -lt $((START - 4096)) ]'
	kill_daemon
	md_continues "$G" $((KEEP * 2))
	[[ $V == *"reshape finished: reshape_position none, raid_disks 3"* && $V == *" OK"* &&
		$V == *"mismatch_cnt=0"* ]] || fail "kernel md's run of the shrink raidfuse began: $V"
	log "kernel md finished the shrink raidfuse began: $(grep -o 'assembled at reshape_position [0-9]*' <<<"$V"), pattern OK, mismatch_cnt 0"
	rm -rf "$G"
fi

# ---- 5. raid0: md has no resize for it
G=$DISK/z
mkdir -p "$G"
mk_conf "$G/r.conf" metadata=1.2 level=0 chunk_size=64K members="$G/d0.img $G/d1.img" member_size=16M
create_array "$G/r.conf"
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/z.log"
expect_fail "$RAIDFUSE" grow "$MNT" --size max
wait_for "raid0's refusal does not say why" 'grep -q "not supported for raid0" "$WORK/z.log"'
stop_array "$MNT"

# ---- negative control: the grown rows not resynced
export RAIDFUSE_TEST_BREAK=resize-resync
grow5 "$DISK/c"
unset RAIDFUSE_TEST_BREAK
echo check >"$MNT/md/sync_action"
wait_for "the control's check did not end" '[ "$(val sync_action)" = idle ]'
[ "$(val mismatch_cnt)" != 0 ] || fail "control: the grown rows were not resynced, and check found no mismatch"
log "negative control (the grown rows not resynced): check finds mismatch_cnt $(val mismatch_cnt)"
stop_array "$MNT"
