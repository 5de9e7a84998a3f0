#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 64-reshape-bitmap: a raid5 with md's internal write-intent bitmap grown
# online from 3 to 4 members, as md keeps a bitmap through a reshape;
# members in a directory on the disk, the daemonized default, a model
# file of what every sector must hold.
#  0. kernel md's raid5 grown 3 -> 4 with a bitmap (1 MiB chunks), stopped
#     mid-way (tests/data/md-images r5-ls-3to4d-64k-bitmap-midgrow): assembled
#     (frozen), md's pattern; writes in both geometries; continued to its end:
#     the model, check 0, every member's superblock md's after a grow with
#     its bitmap (feature map 0x1, data offset 1664); RF_MD_JUDGE=1: kernel md
#     reads the model's sha256.
#  1. raid5 of 3 x 32 MiB, bitmap=internal with 1 MiB chunks, a spare,
#     filled with random data; `raidfuse grow --raid-devices 4` at 1000
#     KiB/s: writes behind the position (new geometry) and ahead of it
#     (old), acknowledged, then kill -9 at once (their bits are still set).
#  2. served again by the same config: the bitmap loads with a few chunks
#     needing a resync, not all; the reshape resumes from its checkpoint;
#     the image is the model; the reshape ends, the resync after it walks
#     only the marked chunks (the bitmap's dirty count falls to 0), the
#     image is the model and the grown size, md's check finds 0.
#  3. every member (the new one too) carries md's bitmap (mdadm
#     --examine-bitmap: magic, events equal to its superblock's, the same
#     bits), feature map 0x1, the new data offset; served again, the model.
#     RF_MD_JUDGE=1: kernel md assembles the members, reads the model's
#     sha256, mismatch_cnt 0; and kernel md continues a grow with a bitmap
#     that raidfuse began and was killed in, to its end.
#  4. room: members whose data starts 24 sectors in (superblock at 8, the
#     bitmap's 8 sectors at 16, no bad block log), chunk 4 KiB: the data
#     cannot move lower without covering the bitmap, so a grow to 4 is
#     refused (md would need mdadm's backup file) and nothing changes.
# Negative control: RAIDFUSE_TEST_BREAK=reshape-bitmap-room (the room
# before the data counted as if the bitmap were not there): the grow is
# taken, the data is to move to sector 16, over the bitmap, and the next
# assembly refuses it ("run into the data the reshape under way moves").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/model.sh"
requires fuse mdadm xz
build_helper
model_setup

# need_resync: "R" of the daemon on MNT's "internal bitmap: N chunks of K KiB, S set, R need a resync"
need_resync() { sed -n 's/.*internal bitmap: .* \([0-9]*\) need a resync.*/\1/p' "$(daemon_log_file "$MNT")"; }
# dirty N: the dirty bits mdadm --examine-bitmap counts in member N's bitmap
dirty() {
	xbitmap "$G/d$1.img" "$WORK/x.txt"
	sed -n 's/^ *Bitmap : [0-9]* bits (chunks), \([0-9]*\) dirty.*/\1/p' "$WORK/x.txt"
}

# ---- 0. kernel md's grow with a bitmap, stopped mid-way, continued
md_images
LINE=$(grep '"name": "r5-ls-3to4d-64k-bitmap-midgrow"' "$IMAGES/manifest-pending.jsonl") ||
	fail "no r5-ls-3to4d-64k-bitmap-midgrow in the pending manifest"
OLD=$(jval "$LINE" array_sectors)
POS=$(jval "$LINE" reshape_position_sectors)
NEW=190464
truncate -s $((NEW * 512)) "$MODEL"
"$RFHELPER" fill "$MODEL" "$OLD" >/dev/null || fail "cannot make the model"
md_unpack "$LINE" "$DISK/md"
start_assemble_daemon array.img "$MNT" --freeze "${MEMBERS[@]}"
[ "$(pos)" = "$POS" ] && [ "$(val consistency_policy)" = bitmap ] ||
	fail "md's bitmap grow: position $(pos) (md's $POS), consistency_policy $(val consistency_policy)"
same_model "md's members mid-grow" "$OLD"
put 4096 64
put $((POS + 20000)) 64
to_end "md's bitmap grow"
[ "$(fsize "$IMG")" = $((NEW * 512)) ] || fail "md's bitmap grow: image of $(fsize "$IMG") bytes at the end"
same_model "md's bitmap grow, ended" "$NEW"
check_clean "md's bitmap grow"
stop_array "$MNT"
for m in "${MEMBERS[@]}"; do
	"$RAIDFUSE" examine "$m" >"$WORK/ex.txt" || fail "examine $m failed"
	for want in "Feature Map : 0x1" "Data Offset : 1664 sectors" "Raid Devices : 4"; do
		grep -q "$want" "$WORK/ex.txt" || fail "$m after md's grow ended: no '$want' in: $(cat "$WORK/ex.txt")"
	done
done
if md_judge; then
	judge_model $NEW "${MEMBERS[@]}"
	log "kernel md assembles what raidfuse made of its grow: the model's sha256, mismatch_cnt 0"
fi
log "kernel md's grow with a bitmap, stopped at $POS: continued to its end, writes kept, check 0, the bitmap kept"
rm -rf "$DISK/md"

G=$DISK/g
mkdir -p "$G"
mk_conf "$G/r.conf" metadata=1.2 level=5 chunk_size=64K members="$G/d0.img $G/d1.img $G/d2.img" \
	spares="$G/d3.img" member_size=32M bitmap=internal bitmap_chunk=1M
create_array "$G/r.conf" --assume-clean
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/g1.log"
[ "$(val consistency_policy)" = bitmap ] || fail "consistency_policy $(val consistency_policy)"
GOLD=$(($(fsize "$IMG") / 512))
GNEW=$((GOLD * 3 / 2))
model_fill
truncate -s $((GNEW * 512)) "$MODEL"
# the fill's bits cleared (md's background pass, made quick), then md's 5 s
echo 0.1 >"$MNT/md/bitmap/time_base"
wait_for "the fill's bits were not cleared" '[ "$(dirty 0)" = 0 ]'
echo 5 >"$MNT/md/bitmap/time_base"

# ---- 1. grow, writes on both sides of the position, kill -9
echo 1000 >"$MNT/md/sync_speed_max"
"$RAIDFUSE" grow "$MNT" --raid-devices 4 || fail "grow of a raid5 with a bitmap refused: $(tail -n 3 "$WORK/g1.log")"
[ "$(val raid_disks)" = "4 (3)" ] || fail "growing: raid_disks '$(val raid_disks)'"
wait_for "the grow did not move" '[ "$(pos)" -ge 3072 ]'
P=$(pos)
put $((P / 2 / 8 * 8)) 64
put $((GOLD - 2048)) 128
put $((GOLD / 2 / 8 * 8 + 4096)) 64
kill_daemon
log "grow 3 -> 4 with a bitmap: killed at >= $P after writes behind and ahead of it"

# ---- 2. resumed by the same config
start_array_daemon "$G/r.conf" "$MNT" --freeze --log "$WORK/g2.log"
[ "$(pos)" -ge "$P" ] || fail "served again: position $(pos), $P was seen before"
same_model "after kill -9 mid-reshape" "$GOLD"
N=$(need_resync)
[ -n "$N" ] && [ "$N" -gt 0 ] && [ "$N" -lt 31 ] ||
	fail "after the kill the bitmap should mark a few chunks for a resync, not '$N' of 31: $(grep bitmap "$(daemon_log_file "$MNT")")"
to_end "the resumed grow"
[ "$(fsize "$IMG")" = $((GNEW * 512)) ] || fail "grown image of $(fsize "$IMG") bytes, 4 members give $((GNEW * 512))"
wait_for "the resync after the reshape did not end" '[ "$(val sync_action)" = idle ]'
grep -q "resync done" "$WORK/g2.log" || fail "no resync after the reshape: $(tail -n 5 "$WORK/g2.log")"
same_model "grown" "$GNEW"
check_clean "check after the grow"
log "resumed: $N of 31 bitmap chunks needed a resync; the reshape ended, the resync ran, the model, check 0"

# ---- 3. the bitmap on every member
stop_array "$MNT"
for i in 0 1 2 3; do
	"$RAIDFUSE" examine "$G/d$i.img" >"$WORK/ex.txt" || fail "examine d$i failed"
	for want in "Feature Map : 0x1" "Data Offset : 1664 sectors" "Raid Devices : 4"; do
		grep -q "$want" "$WORK/ex.txt" || fail "d$i after the grow: no '$want' in: $(cat "$WORK/ex.txt")"
	done
	ev=$(field "$WORK/ex.txt" Events)
	xbitmap "$G/d$i.img" "$WORK/x$i.txt"
	[ "$(field "$WORK/x$i.txt" Magic)" = 6d746962 ] && [ "$(field "$WORK/x$i.txt" Events)" = "$ev" ] ||
		fail "d$i's bitmap after the grow (superblock events $ev): $(cat "$WORK/x$i.txt")"
	cmp -s "$WORK/x0.txt.bm" "$WORK/x$i.txt.bm" || fail "d$i's bitmap differs from d0's"
done
grep -q "0 dirty" "$WORK/x0.txt" || fail "bits left dirty after the resync: $(cat "$WORK/x0.txt")"
start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/g3.log"
grep -q "raid5, 4 of 4 members" "$(daemon_log_file "$MNT")" && [ "$(need_resync)" = 0 ] ||
	fail "served again: $(grep -E 'members|bitmap' "$(daemon_log_file "$MNT")")"
same_model "grown, served again" "$GNEW"
stop_array "$MNT"
log "every member carries md's bitmap (events as the superblock's, bits alike, 0 dirty), data offset 1664"
if md_judge; then
	judge_model $GNEW "$G"/d?.img
	log "kernel md assembles the grown members with their bitmap: the model's sha256, mismatch_cnt 0"
fi
rm -rf "$G"

# ---- RF_MD_JUDGE=1: kernel md continues a grow with a bitmap that
# raidfuse began and was killed in (md's pattern over a raid5 of 3, grow to
# 4, kill -9 mid-way; mdpeer's guest assembles the members and md goes on
# to the end, the pattern intact, mismatch_cnt 0, the new data offsets).
if md_judge; then md_finishes_grow "$DISK/k" bitmap=internal bitmap_chunk=1M; fi

# ---- 4. room before the data: the data may move down to the bitmap's end,
# not over it.  Data 24 sectors in: the superblock at 8, the bitmap's 8
# sectors at 16, no bad block log (no room for one that keeps off the
# bitmap), nothing free: a grow is refused as mdadm's would need its backup
# file, and nothing changes.
# tight [BREAK]: a raid5 of 3 + a spare so made, `grow --raid-devices 4`.
tight() {
	G=$DISK/t
	rm -rf "$G"
	mkdir -p "$G"
	mk_conf "$G/r.conf" metadata=1.2 level=5 chunk_size=4K members="$G/d0.img $G/d1.img $G/d2.img" \
		spares="$G/d3.img" member_size=8M data_offset=12K bitmap=internal bitmap_chunk=1M
	create_array "$G/r.conf" --assume-clean
	RAIDFUSE_TEST_BREAK=$1 start_array_daemon "$G/r.conf" "$MNT" --freeze --log "$WORK/t.log"
	RC=0
	OUT=$("$RAIDFUSE" grow "$MNT" --raid-devices 4 2>&1) || RC=$?
	stop_array "$MNT"
	"$RAIDFUSE" examine "$G/d0.img" >"$WORK/ex.txt"
}
tight ""
[ $RC != 0 ] || fail "tight: a grow with no room before the data was taken"
grep -q "a reshape in place needs mdadm's backup file" "$WORK/t.log" ||
	fail "tight: no reason in the log: $OUT; $(tail -n 3 "$WORK/t.log")"
grep -q "Raid Devices : 3" "$WORK/ex.txt" && ! grep -q "Reshape" "$WORK/ex.txt" ||
	fail "tight: the refused grow changed the superblocks: $(cat "$WORK/ex.txt")"
start_array_daemon "$G/r.conf" "$MNT"
check_clean "tight, refused"
stop_array "$MNT"
log "data right after the bitmap: the grow refused (no room), the array as it was"

tight reshape-bitmap-room
[ $RC = 0 ] || fail "control: the grow was refused: $OUT"
[ "$(field "$WORK/ex.txt" "New Offset")" = "16 sectors" ] ||
	fail "control: the data is to move to '$(field "$WORK/ex.txt" "New Offset")' (16, over the bitmap, expected)"
expect_fail "$RAIDFUSE" mount "$G/r.conf" "$MNT"
[[ $OUT == *"run into the data the reshape under way moves"* ]] || fail "control: refused for another reason: $OUT"
log "negative control (RAIDFUSE_TEST_BREAK=reshape-bitmap-room): the data planned over the bitmap, assembly refuses it: ${OUT##*: }"
