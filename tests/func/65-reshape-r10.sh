#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 65-reshape-r10: a raid10 grown by members as mdadm --grow --raid-devices
# has md's raid10 reshape grow one, online and through kill -9, served as
# users run it (daemonized, members on a disk file system).
#  1. raid10 n2 of 4 x 32 MiB (a spare listed): fio writes and verifies
#     the first half of the image (job a, before the grow);
#     `raidfuse grow --raid-devices 5` frozen: raid_disks reads "5 (4)",
#     the spare's superblock records the reshape (delta 1, new offset a
#     chunk lower: md's raid10 min_offset_change); sync_completed counts
#     the walk in member sectors (the position over the new size); at
#     1000 KiB/s fio
#     writes and verifies the second half (job b) while the walk moves
#     (reads and writes on both sides of the position), and job a still
#     verifies; kill -9 while it moves.  Mounted again (frozen): the
#     position at or past the one seen, jobs a and b verify; to the end:
#     the image grows to 5 members' size (md's raid10_size: 80 MiB less
#     what the data offsets take), a and b verify, fio writes and
#     verifies the grown part (job c); check finds mismatch_cnt 0; every
#     superblock as md leaves one after a raid10 grow (5 devices, data
#     offset 128 sectors lower, no reshape); mounted again, a b c verify.
#     RF_MD_JUDGE=1: kernel md assembles the members, sha256 of the image
#     and mismatch_cnt 0.
#  2. raid10 o2 of 2 grown to 3 by `grow --raid-devices 3 --add FILE`
#     (data offsets two chunks lower), kill -9 mid-way, mounted again (the
#     config naming the new member), to the end: the model (random data
#     written before, a write at the position after the kill), check 0;
#     RF_MD_JUDGE=1: kernel md reads the model, mismatch_cnt 0.
#  2b. raid10 n2 of 5 shrunk to 4 as md's backward raid10 reshape does:
#     refused until md/array_size is cut ("set md/array_size first"), then
#     --array-size and --size a chunk smaller, --raid-devices 4: the walk
#     goes backwards, the data offsets a chunk higher; kill -9 mid-way,
#     served again at or below the position seen: the model; to the end: 4
#     members, d4 a spare, the model, check 0, served again the same;
#     RF_MD_JUDGE=1: kernel md reads the model, mismatch_cnt 0.
#  2c. raid10 n2 of 4 with md's internal bitmap (64 KiB chunks) grown to 5:
#     from the grow's start every bitmap covers the new size (md's
#     raid10_start_reshape resizes it); writes on both sides of the
#     position, kill -9, mounted again (the bitmap loads at that size), to
#     the end: the model, check 0, a write in the grown part, every
#     member's bitmap (mdadm -X) the grown size and clean; served again,
#     the model.  RF_MD_JUDGE=1: kernel md reads the model, mismatch_cnt 0.
#     Control: RAIDFUSE_TEST_BREAK=reshape-bitmap-size leaves the bitmap
#     at the old size, which the first check catches.
#  3. refused as md refuses: a far layout (f2) ("Cannot reshape RAID10 in
#     far-mode"), nothing changes.
#  4. RF_MD_JUDGE=1: kernel md continues an n2 4 -> 5 grow raidfuse began
#     and was killed in, to its end: md's pattern, mismatch_cnt 0, the new
#     data offsets.  (Not with a bitmap: kernel md continuing such a grow
#     reads the pattern back but its check finds mismatches; README.)
#  4b. RF_MD_JUDGE=1: kernel md continues an n2 5 -> 4 shrink raidfuse
#     began and was killed in, backwards to its end: the pattern, 0, the
#     data offsets a chunk higher.
#  5. RF_MD_JUDGE=1: raidfuse continues an n2 4 -> 5 grow kernel md began
#     and was stopped in: md's pattern, zeros after the old end, check 0.
# Negative controls: RAIDFUSE_TEST_BREAK=reshape-record (the position moves
# in memory, never in the superblocks): after kill -9 mid-grow the image
# mounted again is not the model (rows moved since are read from the old
# geometry, which the new rows overwrote); RAIDFUSE_TEST_BREAK=
# reshape-copies (the walk writes the first copy of each chunk only): the
# grown array's check finds mismatches.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/model.sh"
requires fuse fio
build_helper

model_setup

# grow10 DIR LAYOUT N [nospare]: a raid10 of LAYOUT over N members of
# 32 MiB in DIR (d0..), spare dN in the config unless nospare, served by
# config (detached); no bitmap unless R10_BITMAP gives create's options.
grow10() {
	G=$1
	mkdir -p "$G"
	mk_conf "$G/r.conf" metadata=1.2 level=10 layout="$2" chunk_size=64K members="$(members "$3" "$G/d")" \
		$([ "${4:-}" = nospare ] || echo spares="$G/d$3.img") member_size=32M
	# shellcheck disable=SC2086
	create_array "$G/r.conf" --assume-clean ${R10_BITMAP:--b none}
	start_array_daemon "$G/r.conf" "$MNT" --log "$WORK/g.log"
	GOLD=$(($(fsize "$IMG") / 512))
}

# start_grow N [FILE]: frozen, grow to N members (FILE added as a spare
# first: grow --add).
start_grow() {
	echo frozen >"$MNT/md/sync_action"
	"$RAIDFUSE" grow "$MNT" --raid-devices "$1" ${2:+--add "$2"} ||
		fail "grow --raid-devices $1 ${2:+--add $2 }refused: $(tail -n 3 "$WORK/g.log")"
}

# moving FROM: unfrozen at 1000 KiB/s; returns once the position is past
# FROM.
moving() {
	echo 1000 >"$MNT/md/sync_speed_max"
	echo 1000 >"$MNT/md/sync_speed_min"
	echo idle >"$MNT/md/sync_action"
	wait_for "the walk did not pass $1: $(pos)" '[ "$(pos)" = none ] || [ "$(pos)" -gt '"$1"' ]'
	[ "$(pos)" != none ] || fail "the reshape ended before it could be interrupted"
}

# fio jobs: a the first half of the image, b the second, c the part the
# grow adds (each verified after writing, then later with --verify_only).
job() {
	case $1 in
	a) echo --name=a --rw=randwrite --bs=16k --offset=0 --size=$((GOLD * 256)) ;;
	b) echo --name=b --rw=randwrite --bs=4k --iodepth=8 --offset=$((GOLD * 256)) --size=$((GOLD * 256)) ;;
	c) echo --name=c --rw=write --bs=64k --offset=$((GOLD * 512)) --size=$(($(fsize "$IMG") - GOLD * 512)) ;;
	esac
}
verify_jobs() {
	local j
	for j; do
		# shellcheck disable=SC2046
		fio_verify --verify_only "$IMG" $(job "$j")
	done
}

# ---- 1. n2 of 4 -> 5, fio before, during, after, kill -9
grow10 "$DISK/n" n2 4
# shellcheck disable=SC2046
fio_verify "$IMG" $(job a)
start_grow 5
[ "$(val raid_disks)" = "5 (4)" ] || fail "growing: raid_disks '$(val raid_disks)', md says '5 (4)'"
[ "$(pos)" = 0 ] || fail "a frozen grow moved to $(pos)"
"$RAIDFUSE" examine "$G/d4.img" >"$WORK/ex.txt"
for want in "Reshape pos'n : 0" "Delta Devices : 1 (4->5)" "New Offset : 1920 sectors"; do
	grep -q "$want" "$WORK/ex.txt" || fail "the grow is not in d4's superblock (no '$want'): $(cat "$WORK/ex.txt")"
done
moving 2048
# md's sync_completed counts a reshape in sectors of each member: the
# position over the new geometry's size (5 members of 2 copies: 5/4 of
# the old), of the members' size
P=$(pos)
read -r done slash total <"$MNT/md/sync_completed"
P2=$(pos)
[ "$slash" = / ] && [ "$done" -ge $((P * total / (GOLD * 5 / 4) - 8)) ] &&
	[ "$done" -le $((P2 * total / (GOLD * 5 / 4) + 8)) ] ||
	fail "sync_completed at position $P..$P2: '$done $slash $total', want $((P * total / (GOLD * 5 / 4))) / $total"
# shellcheck disable=SC2046
fio_verify "$IMG" $(job b)
verify_jobs a
[ "$(pos)" != none ] || fail "the reshape ended under fio: raise the member size"
SEEN=$(pos)
kill_daemon
log "n2 4 -> 5: fio wrote and verified both halves while the walk moved; killed at >= $SEEN"
start_array_daemon "$G/r.conf" "$MNT" --freeze --log "$WORK/g.log"
[ "$(pos)" != none ] && [ "$(pos)" -ge "$SEEN" ] || fail "mounted again after kill -9: position $(pos), $SEEN was seen before"
verify_jobs a b
to_end "the n2 grow"
GNEW=$(($(fsize "$IMG") / 512))
# md's raid10_size of 5: the used chunks of each member (32 MiB less the
# data offset, whole chunks) times 5 over 2 copies
[ "$GNEW" -gt "$GOLD" ] && [ "$GNEW" -le $((GOLD * 5 / 4)) ] && [ $((GNEW % 128)) = 0 ] ||
	fail "grown image of $GNEW sectors from $GOLD"
verify_jobs a b
# shellcheck disable=SC2046
fio_verify "$IMG" $(job c)
check_clean "check after the n2 grow"
stop_array "$MNT"
for m in "$G"/d?.img; do
	"$RAIDFUSE" examine "$m" >"$WORK/ex.txt" || fail "examine $m failed"
	for want in "Feature Map : 0x0" "Raid Devices : 5" "Data Offset : 1920 sectors" "Layout : near=2"; do
		grep -q "$want" "$WORK/ex.txt" || fail "$m after the grow: no '$want' in: $(cat "$WORK/ex.txt")"
	done
	grep -q "Reshape" "$WORK/ex.txt" && fail "$m: still records a reshape: $(cat "$WORK/ex.txt")"
done
start_array_daemon "$G/r.conf" "$MNT"
verify_jobs a b c
head -c $((GNEW * 512)) "$IMG" >"$MODEL"
stop_array "$MNT"
log "n2 4 -> 5 to the end: $GOLD -> $GNEW sectors, fio a b c verify, check 0, superblocks md's after a grow"
if md_judge; then
	judge_model "$GNEW" "$G"/d?.img
	log "kernel md assembles the grown raid10: the image's sha256, mismatch_cnt 0"
fi
rm -rf "$G"

# ---- 2. o2 of 2 -> 3 (the third file given to grow --add), kill -9, the
# model
grow10 "$DISK/o" o2 2 nospare
model_fill
truncate -s $((GOLD * 512 * 3 / 2)) "$MODEL"
truncate -s 32M "$G/d2.img"
start_grow 3 "$G/d2.img"
sed -i 's|^\(\tmembers = .*\) );$|\1, "'"$G"'/d2.img" );|' "$G/r.conf"
"$RAIDFUSE" examine "$G/d2.img" >"$WORK/ex.txt"
grep -q "New Offset : 1792 sectors" "$WORK/ex.txt" || fail "o2: not two chunks lower: $(cat "$WORK/ex.txt")"
moving 4096
P=$(pos)
put $((P / 2 / 8 * 8)) 64
put $(((P + 8192) / 8 * 8)) 256
SEEN=$(pos)
kill_daemon
start_array_daemon "$G/r.conf" "$MNT" --freeze
[ "$(pos)" -ge "$SEEN" ] || fail "o2: mounted again after kill -9: position $(pos), $SEEN was seen before"
same_model "o2: after kill -9" "$GOLD"
put $(($(pos) / 8 * 8)) 128
to_end "the o2 grow"
GNEW=$(($(fsize "$IMG") / 512))
[ "$GNEW" -gt "$GOLD" ] || fail "o2: the image did not grow ($GNEW sectors)"
same_model "o2 grown" "$GNEW"
check_clean "check after the o2 grow"
stop_array "$MNT"
log "o2 2 -> 3: killed at >= $SEEN, the model each time, $GNEW sectors, check 0"
if md_judge; then
	judge_model "$GNEW" "$G"/d?.img
	log "kernel md assembles the grown o2 raid10: the model's sha256, mismatch_cnt 0"
fi
rm -rf "$G"

# ---- 2b. n2 of 5 -> 4, backwards (md's raid10 shrink), kill -9, the model
grow10 "$DISK/s" n2 5 nospare
model_fill
shrink_start 4 2 "$WORK/g.log"      # 4 members of a chunk less, 2 copies
"$RAIDFUSE" examine "$G/d0.img" >"$WORK/ex.txt"
grep -q "New Offset : 2176 sectors" "$WORK/ex.txt" || fail "shrink: not a chunk higher: $(cat "$WORK/ex.txt")"
shrink_killed 4 d4.img
if md_judge; then
	judge_model $((KEEP * 2)) "$G"/d?.img
	log "kernel md assembles the shrunk raid10 (d4 a spare): the model's sha256, mismatch_cnt 0"
fi
log "n2 5 -> 4 backwards: killed at <= $SEEN, the model each time, d4 a spare, check 0"
rm -rf "$G"

# ---- 2c. n2 of 4 with md's internal bitmap grown to 5, kill -9, the model
bm_sync() {     # bm_sync MEMBER: the KiB mdadm -X says its bitmap covers
	xbitmap "$1" "$WORK/x.txt"
	sed -n 's/^ *Sync Size : \([0-9]*\).*/\1/p' "$WORK/x.txt"
}
bm_dirty() {    # bm_dirty MEMBER: the bits mdadm -X counts dirty
	xbitmap "$1" "$WORK/x.txt"
	sed -n 's/^ *Bitmap : [0-9]* bits (chunks), \([0-9]*\) dirty.*/\1/p' "$WORK/x.txt"
}
if command -v mdadm >/dev/null; then
	R10_BITMAP="-b internal --bitmap-chunk 64K" grow10 "$DISK/b" n2 4
	model_fill
	truncate -s $((GOLD * 512 * 5 / 4)) "$MODEL"
	start_grow 5
	BEGUN=$(bm_sync "$G/d4.img")
	[ "$BEGUN" -gt $((GOLD / 2)) ] ||
		fail "bitmap: a raid10 grow begun, d4's bitmap covers $BEGUN KiB, the array $((GOLD / 2)) KiB"
	moving 2048
	P=$(pos)
	put $((P / 2 / 8 * 8)) 64
	put $(((P + 8192) / 8 * 8)) 256
	SEEN=$(pos)
	kill_daemon
	start_array_daemon "$G/r.conf" "$MNT" --freeze --log "$WORK/g.log"
	[ "$(pos)" -ge "$SEEN" ] || fail "bitmap: mounted again after kill -9: position $(pos), $SEEN was seen before"
	grep -q "using the array's" "$WORK/g.log" && fail "bitmap: mid-grow, loaded at another size: $(grep "using the array's" "$WORK/g.log")"
	same_model "bitmap: after kill -9" "$GOLD"
	to_end "the grow with a bitmap"
	GNEW=$(($(fsize "$IMG") / 512))
	[ "$GNEW" -gt "$GOLD" ] || fail "bitmap: the image did not grow ($GNEW sectors)"
	same_model "bitmap: grown" "$GNEW"
	check_clean "check after the grow with a bitmap"
	put $((GNEW - 64)) 32       # in the grown part: tracked too
	stop_array "$MNT"
	for m in "$G"/d?.img; do
		[ "$(bm_sync "$m")" = $((GNEW / 2)) ] && [ "$(bm_dirty "$m")" = 0 ] ||
			fail "bitmap: $m after the grow: $(cat "$WORK/x.txt")"
	done
	start_array_daemon "$G/r.conf" "$MNT"
	same_model "bitmap: served again" "$GNEW"
	stop_array "$MNT"
	log "n2 4 -> 5 with a bitmap: $BEGUN KiB covered from the start, killed at >= $SEEN, the model, check 0, every bitmap $((GNEW / 2)) KiB and clean"
	if md_judge; then
		judge_model "$GNEW" "$G"/d?.img
		log "kernel md assembles the grown raid10 with its bitmap: the model's sha256, mismatch_cnt 0"
	fi
	rm -rf "$G"
	# negative control: the bitmap left at the old size
	RAIDFUSE_TEST_BREAK=reshape-bitmap-size R10_BITMAP="-b internal --bitmap-chunk 64K" grow10 "$DISK/bc" n2 4
	start_grow 5
	CTL=$(bm_sync "$G/d4.img")
	stop_array "$MNT"
	[ "$CTL" = $((GOLD / 2)) ] || fail "control: the bitmap not resized, yet d4's covers $CTL KiB"
	log "negative control (RAIDFUSE_TEST_BREAK=reshape-bitmap-size): the grow's bitmap covers $CTL KiB, the check above fails"
	rm -rf "$G"
fi

# ---- 3. refused: a far layout
grow10 "$DISK/f" f2 4
expect_fail sh -c "echo 5 >'$MNT/md/raid_disks'"
grep -q "Cannot reshape RAID10 in far-mode" "$WORK/g.log" || fail "f2: no reason in the log: $(tail -n 3 "$WORK/g.log")"
[ "$(val raid_disks)" = 4 ] && [ "$(pos)" = none ] || fail "f2: refused, yet raid_disks $(val raid_disks), position $(pos)"
stop_array "$MNT"
log "f2: refused as md refuses it"
rm -rf "$G"

# ---- 4. (RF_MD_JUDGE=1) kernel md continues a raid10 grow raidfuse began
# and was killed in: md's pattern over an n2 of 4, grow to 5, kill -9
# mid-way; mdpeer's guest assembles snapshots of the members, md goes on
# from the superblocks' position to the end, the pattern reads back, md's
# check finds 0, every data offset is the new one.
if md_judge; then md_finishes_grow_of "$DISK/k" 4 1920 level=10 layout=n2 bitmap=none; fi

# ---- 4b. (RF_MD_JUDGE=1) kernel md continues a raid10 shrink raidfuse
# began: md's pattern over what 4 members of a chunk less hold, n2 of 5
# shrunk to 4, kill -9 mid-way; md goes on backwards to the end.
if md_judge; then
	grow10 "$DISK/ks" n2 5 nospare
	COMP=$(val component_size)
	KEEP=$(((COMP - 64) * 2))
	"$RAIDFUSE" grow "$MNT" --array-size ${KEEP}K --size $((COMP - 64))K >/dev/null ||
		fail "md hand-over: --array-size refused: $(tail -n 3 "$WORK/g.log")"
	"$RFHELPER" fill "$IMG" $((KEEP * 2)) >/dev/null || fail "cannot write md's pattern"
	echo 500 >"$MNT/md/sync_speed_max"
	"$RAIDFUSE" grow "$MNT" --raid-devices 4 || fail "md hand-over: the shrink was refused"
	START=$(pos)
	wait_for "the shrink did not move" '[ "$(pos)" -lt $((START - 4096)) ]'
	kill_daemon
	md_continues "$G" $((KEEP * 2))
	[[ $V == *"reshape finished: reshape_position none, raid_disks 4"* && $V == *" OK"* &&
		$V == *"mismatch_cnt=0"* && $V == *"vda=2176 vdb=2176 vdc=2176 vdd=2176"* ]] ||
		fail "kernel md's run of the raid10 shrink raidfuse began: $V"
	log "kernel md finished the raid10 shrink raidfuse began: $(grep -o 'assembled at reshape_position [0-9]*' <<<"$V"), pattern OK, mismatch_cnt 0"
	rm -rf "$G"
fi

# ---- 5. (RF_MD_JUDGE=1) raidfuse continues a raid10 grow kernel md began:
# mdpeer's guest creates an n2 of 4 x 32 MiB, writes md's pattern, adds a
# fifth member, `mdadm --grow --raid-devices=5`, and stops md part way
# (tools/md-golden-job.sh reshape); raidfuse assembles the members and
# goes on from md's position to the end: the pattern over the old size,
# zeros after it, check 0.
if md_judge; then
	G=$DISK/h
	mkdir -p "$G/share"
	for i in 0 1 2 3 4; do truncate -s 32M "$G/d$i.img"; done
	JOB_KIND=reshape JOB_NDEV0=4 JOB_GROW_ARGS="--raid-devices=5" JOB_SPEED_KIB=2000 JOB_STOP_PCT=30 \
		JOB_CREATE_OPTS="--level=10 --layout=n2 --chunk=64 --raid-devices=4 --metadata=1.2 --bitmap=none" \
		TMPDIR=$G "$(dirname "$MDJUDGE")/run-guest.sh" --share "$G/share" --timeout 900 \
		"$TOP_DIR/tools/md-golden-job.sh" "$G"/d?.img >"$WORK/guest-md.out" 2>&1 ||
		fail "kernel md's raid10 grow: $(tail -n 20 "$WORK/guest-md.out")"
	N=$(sed -n 's/^array_sectors before the reshape=//p' "$G/share/job.log")
	[ -n "$N" ] || fail "no array size in the guest's job.log: $(cat "$G/share/job.log")"
	"$RAIDFUSE" examine "$G/d0.img" >"$WORK/ex.txt"
	MDPOS=$(field "$WORK/ex.txt" "Reshape pos'n" | cut -d' ' -f1)
	[ -n "$MDPOS" ] || fail "md left no reshape in d0: $(cat "$WORK/ex.txt")"
	start_assemble_daemon array.img "$MNT" "$G"/d?.img
	to_end "md's raid10 grow, continued"
	M=$(($(fsize "$IMG") / 512))
	[ "$M" -gt "$N" ] || fail "md's grow continued: $M sectors, $N before it"
	truncate -s 0 "$MODEL"
	truncate -s $((M * 512)) "$MODEL"
	"$RFHELPER" fill "$MODEL" "$N" >/dev/null || fail "cannot make the model"
	same_model "md's grow, continued by raidfuse" "$M"
	check_clean "check after md's grow, continued"
	stop_array "$MNT"
	log "kernel md's raid10 grow, stopped at array sector $MDPOS, continued by raidfuse: $N -> $M sectors, md's pattern, zeros after, check 0"
	rm -rf "$G"
fi

# ---- negative control: positions never recorded
export RAIDFUSE_TEST_BREAK=reshape-record
grow10 "$DISK/c" n2 4
model_fill
truncate -s $((GOLD * 512 * 5 / 4)) "$MODEL"
start_grow 5
moving 8192
SEEN=$(pos)
kill_daemon
unset RAIDFUSE_TEST_BREAK
start_array_daemon "$G/r.conf" "$MNT" --freeze --ro
RPOS=$(pos)
[ "$RPOS" -lt "$SEEN" ] || fail "control: the superblocks' position $RPOS though nothing recorded past 0"
expect_fail "$RFHELPER" same "$IMG" "$MODEL" $((GOLD * 512))
stop_array "$MNT"
log "negative control (positions not recorded, RAIDFUSE_TEST_BREAK=reshape-record): killed at $SEEN, mounted again at $RPOS: the image differs from the model: ${OUT##*: }"

# ---- negative control: one copy of each moved chunk written
export RAIDFUSE_TEST_BREAK=reshape-copies
grow10 "$DISK/c2" n2 4
model_fill
start_grow 5
to_end "the control's grow"
unset RAIDFUSE_TEST_BREAK
wait_for "control: the resync did not end" '[ "$(val sync_action)" = idle ]'
echo check >"$MNT/md/sync_action"
wait_for "control: check did not end" '[ "$(val sync_action)" = idle ]'
MM=$(val mismatch_cnt)
[ "$MM" -gt 0 ] || fail "control: the walk wrote one copy of each chunk, yet check finds mismatch_cnt $MM"
stop_array "$MNT"
log "negative control (one copy written, RAIDFUSE_TEST_BREAK=reshape-copies): check finds mismatch_cnt $MM"
