#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 26-md-found: the md arrays md itself allows that a single data offset and
# a single raid0 zone cannot describe, made by raidfuse create.
#
# 1. raid5 over 2 members (md's mirror in parity layout), every layout in a
#    full run (left-symmetric in a quick one): create, mount, write the
#    self-describing pattern, read it back; check finds no mismatch; each
#    member left out, the other serves the pattern.
# 2. raid0 over members of 6, 8 and 12 MiB (loop devices: create uses a
#    device as it is): md's zones make the array the sum of the members;
#    the superblocks record the raid0 layout (examine: Layout : original,
#    feature 0x1000), as mdadm 4.2 does; the pattern reads back through
#    the config and through assemble from the members alone.  Equal
#    members record no layout (mdadm's single zone).
# With RF_MD_JUDGE=1, kernel md (mdpeer's md-judge.sh) assembles each
# array: the raid5 ones with a check (mismatch_cnt 0) and the same sha256,
# the raid0 one reading the pattern in every sector.
. "$(dirname "$0")/lib.sh"
requires fuse
build_helper

MNT=$WORK/mnt
judge=0
if md_judge; then
	judge=1
fi

# fill_check IMG: write the pattern over the whole image, read it back.
fill_check() {
	local img=$1 sectors
	sectors=$(($(stat -c %s "$img") / 512))
	"$RFHELPER" fill "$img" "$sectors" || fail "$img: fill failed"
	"$RFHELPER" pattern "$img" "$sectors" >"$WORK/pattern.out" || fail "$img: $(cat "$WORK/pattern.out")"
	echo "$sectors"
}

log "1. raid5 over 2 members"
layouts="left-symmetric"
[ "${RF_QUICK:-0}" = 1 ] || layouts="left-asymmetric right-asymmetric left-symmetric right-symmetric parity-first parity-last"
for lay in $layouts; do
	D=$WORK/r5-$lay
	mkdir -p "$D"
	mk_conf "$D/raid.conf" metadata=1.2 level=5 layout="$lay" chunk_size=64K member_size=8M \
		members="$D/d0.img $D/d1.img"
	create_array "$D/raid.conf"
	start_array "$D/raid.conf" "$MNT"
	grep -q "\[2/2\] \[UU\]" "$MNT/mdstat" || fail "raid5 $lay: mdstat: $(cat "$MNT/mdstat")"
	wait_sync_idle "$MNT" resync
	sectors=$(fill_check "$MNT/array.img")
	[ "$sectors" = $(((8 * 2048 - 2048) / 128 * 128)) ] || fail "raid5 $lay: $sectors sectors"
	echo check >"$MNT/md/sync_action"
	wait_sync_idle "$MNT" check
	[ "$(cat "$MNT/md/mismatch_cnt")" = 0 ] || fail "raid5 $lay: check found $(cat "$MNT/md/mismatch_cnt") mismatches"
	sum=$(sha256sum <"$MNT/array.img" | cut -d' ' -f1)
	stop_array "$MNT"
	for gone in 0 1; do
		start_assemble array.img "$MNT" --ro "$D/d$((1 - gone)).img"
		"$RFHELPER" pattern "$MNT/array.img" "$sectors" >"$WORK/pattern.out" ||
			fail "raid5 $lay without member $gone: $(cat "$WORK/pattern.out")"
		stop_array "$MNT"
	done
	if [ $judge = 1 ]; then
		"$MDJUDGE" --check "$D"/d*.img >"$D/judge.txt" 2>&1 || fail "raid5 $lay: md-judge: $(cat "$D/judge.txt")"
		grep -q "JUDGE assemble=ok level=raid5 raid_disks=2" "$D/judge.txt" ||
			fail "raid5 $lay: kernel md did not assemble: $(cat "$D/judge.txt")"
		grep -q "JUDGE sha256=$sum " "$D/judge.txt" || fail "raid5 $lay: kernel md reads other bytes"
		grep -q "JUDGE mismatch_cnt=0 " "$D/judge.txt" || fail "raid5 $lay: kernel md's check: $(cat "$D/judge.txt")"
		log "raid5 $lay: kernel md agrees"
	fi
	rm -rf "$D"
done

if [ "$(id -u)" != 0 ] || ! command -v losetup >/dev/null; then
	log "2. skipped: raid0 over unequal members needs loop devices (root)"
	exit 0
fi
log "2. raid0 over members of 6, 8 and 12 MiB"
D=$WORK/r0
mkdir -p "$D"
loops=()
for mib in 6 8 12; do
	truncate -s ${mib}M "$D/z$mib.img"
	loop_attach "$D/z$mib.img"
	loops+=("$LOOP")
done
mk_conf "$D/raid.conf" metadata=1.2 level=0 chunk_size=64K members="${loops[*]}"
create_array "$D/raid.conf"
"$RAIDFUSE" examine "${loops[0]}" >"$D/examine.txt" || fail "examine ${loops[0]} failed"
grep -q "Feature Map : 0x1000" "$D/examine.txt" || fail "raid0 layout not recorded: $(cat "$D/examine.txt")"
grep -q "Layout : original" "$D/examine.txt" || fail "raid0 layout not original: $(cat "$D/examine.txt")"
start_array "$D/raid.conf" "$MNT"
# md's sum of the members after data_offset, in whole chunks
want=0
for mib in 6 8 12; do
	want=$((want + (mib * 2048 - 2048) / 128 * 128))
done
sectors=$(fill_check "$MNT/array.img")
[ "$sectors" = "$want" ] || fail "raid0: $sectors sectors, md's zones make $want"
stop_array "$MNT"
start_assemble array.img "$MNT" --ro "${loops[2]}" "${loops[0]}" "${loops[1]}"
"$RFHELPER" pattern "$MNT/array.img" "$sectors" >"$WORK/pattern.out" || fail "raid0 assembled: $(cat "$WORK/pattern.out")"
stop_array "$MNT"
for l in "${loops[@]}"; do
	loop_detach "$l"
done
if [ $judge = 1 ]; then
	"$MDJUDGE" --check-pattern "$D"/z*.img >"$D/judge.txt" 2>&1 || fail "raid0: md-judge: $(cat "$D/judge.txt")"
	grep -q "JUDGE assemble=ok level=raid0 raid_disks=3 layout=original" "$D/judge.txt" ||
		fail "raid0: kernel md did not assemble: $(cat "$D/judge.txt")"
	grep -q "JUDGE pattern=ok sectors=$sectors" "$D/judge.txt" || fail "raid0: kernel md reads: $(cat "$D/judge.txt")"
	log "raid0 zones: kernel md agrees"
fi

# Equal members: one zone, no layout recorded (as mdadm 4.2).
mk_conf "$D/eq.conf" metadata=1.2 level=0 chunk_size=64K member_size=4M members="$D/e0.img $D/e1.img"
create_array "$D/eq.conf"
"$RAIDFUSE" examine "$D/e0.img" >"$D/examine.txt" || fail "examine e0.img failed"
grep -q "Feature Map : 0x0" "$D/examine.txt" || fail "equal raid0 records a layout: $(cat "$D/examine.txt")"
log "md's arrays as found: raid5 over 2 members ($layouts), raid0 zones"
