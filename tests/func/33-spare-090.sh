#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 33-spare-090: a spare added at run time to a 0.90 array gets the
# superblock md's 0.90 writes, and becomes a member once rebuilt.
#
# tests/data/md-images/r5-ls-4d-64k-meta0.90 is a raid5 that kernel md made
# with 0.90 superblocks (README.md there).  Served by assemble:
#  - a file written to md/new_dev becomes a spare: mdstat lists it (S), and
#    examine shows what md's super_90_sync writes: in the spare's own
#    superblock and every member's, a spare's descriptor numbered after the
#    raid devices ("4 4 0 0 4 spare"), Total Devices 5, Working Devices 5,
#    Spare Devices 1; the spare's "this" row is that descriptor;
#  - assembled again with the spare, it is taken as a spare;
#  - a member failed, the rebuild onto the spare completes, and the spare
#    is listed active and in sync in that slot ("this 2 ... 2 active
#    sync", Spare Devices 0); the array assembled from the three members
#    and the rebuilt spare is whole and holds the pattern;
#  - negative control: the spare as it was before the rebuild, in place of
#    the rebuilt one, is taken as a spare and rebuilt (it held no data
#    yet), never served in sync.
# With RF_MD_JUDGE=1, kernel md assembles the members and the spare after
# the add (4 in sync, 1 spare) and after the rebuild (the spare in role 2),
# reads the pattern and finds mismatch_cnt 0.
. "$(dirname "$0")/lib.sh"
requires fuse xz
build_helper

md_images
name=r5-ls-4d-64k-meta0.90
line=$(cat "$IMAGES/$name/manifest.json")
sectors=$(jval "$line" array_sectors)
D=$WORK/a
MNT=$WORK/mnt
md_unpack "$line" "$D"
truncate -s 16M "$D/spare.img"
judge=0
if md_judge; then
	judge=1
fi

# counts FILE TOTAL WORKING SPARE: examine's device counts.
counts() {
	[ "$(field "$1" "Total Devices")/$(field "$1" "Working Devices")/$(field "$1" "Spare Devices")" = "$2/$3/$4" ] ||
		fail "$(basename "$1"): total/working/spare devices $(field "$1" "Total Devices")/$(field "$1" "Working Devices")/$(field "$1" "Spare Devices"), md writes $2/$3/$4"
}

# judged WHAT LINE MEMBER...: kernel md assembles the members whole (4
# active), finds LINE among its verdicts, reads the pattern, mismatch_cnt 0.
judged() {
	local what=$1 want=$2 out=$WORK/judge.txt
	shift 2
	"$MDJUDGE" --check --check-pattern "$@" >"$out" 2>&1 || fail "md-judge $what: $(cat "$out")"
	grep -q 'JUDGE assemble=ok .*active=4 degraded=0' "$out" && grep -q "$want" "$out" &&
		grep -q 'JUDGE pattern=ok' "$out" && grep -q 'JUDGE mismatch_cnt=0 ' "$out" ||
		fail "kernel md $what: $(grep JUDGE "$out")"
}

log "add a spare to the 0.90 array"
start_assemble array.img "$MNT" "${MEMBERS[@]}"
"$RFHELPER" pattern "$MNT/array.img" "$sectors" >"$WORK/p.out" || fail "served: $(cat "$WORK/p.out")"
echo "$D/spare.img" >"$MNT/md/new_dev"
grep -q 'spare.img\[4\](S)' "$MNT/mdstat" || fail "mdstat: $(cat "$MNT/mdstat")"
stop_array "$MNT"
"$RAIDFUSE" examine "$D/spare.img" >"$WORK/spare.ex"
"$RAIDFUSE" examine "$D/role1.img" >"$WORK/role1.ex"
grep -Eq '^this +4 +0 +0 +4 +spare$' "$WORK/spare.ex" || fail "the spare's own descriptor: $(cat "$WORK/spare.ex")"
for f in "$WORK/spare.ex" "$WORK/role1.ex"; do
	grep -Eq '^ +4 +4 +0 +0 +4 +spare$' "$f" || fail "$(basename "$f"): no spare descriptor 4: $(cat "$f")"
	counts "$f" 5 5 1
done
cp "$D/spare.img" "$WORK/spare-before.img"
if [ $judge = 1 ]; then
	judged "after the add" 'JUDGE member=4 .*state=spare' "${MEMBERS[@]}" "$D/spare.img"
	log "kernel md: 4 in sync and the spare, pattern ok, mismatch_cnt 0"
fi

log "assembled again, the spare is a spare; a member fails, the spare is rebuilt"
start_assemble array.img "$MNT" "${MEMBERS[@]}" "$D/spare.img"
grep -q 'spare.img\[4\](S)' "$MNT/mdstat" || fail "mdstat: $(cat "$MNT/mdstat")"
echo faulty >"$MNT/md/dev-role2.img/state"
sleep 0.2
wait_sync_idle "$MNT" recover
grep -q '\[4/4\] \[UUUU\]' "$MNT/mdstat" || fail "after the rebuild: $(cat "$MNT/mdstat")"
stop_array "$MNT"
"$RAIDFUSE" examine "$D/spare.img" >"$WORK/spare.ex"
grep -Eq '^this +2 +0 +0 +2 +active sync$' "$WORK/spare.ex" || fail "the rebuilt spare: $(cat "$WORK/spare.ex")"
[ "$(field "$WORK/spare.ex" "Spare Devices")" = 0 ] || fail "the rebuilt spare: $(cat "$WORK/spare.ex")"
keep=("$D/role0.img" "$D/role1.img" "$D/role3.img")
start_assemble array.img "$MNT" "${keep[@]}" "$D/spare.img"
grep -q '\[4/4\] \[UUUU\]' "$MNT/mdstat" || fail "without role 2: $(cat "$MNT/mdstat")"
"$RFHELPER" pattern "$MNT/array.img" "$sectors" >"$WORK/p.out" || fail "rebuilt: $(cat "$WORK/p.out")"
stop_array "$MNT"
if [ $judge = 1 ]; then
	# the disks in the order given: the spare is the fourth, vdd
	judged "after the rebuild" 'JUDGE member=3 dev=vdd role=2 state=in_sync' "${keep[@]}" "$D/spare.img"
	log "kernel md: the rebuilt spare in role 2, pattern ok, mismatch_cnt 0"
fi

# Negative control: the spare before its rebuild is no member yet.  The
# array is degraded and takes it as a spare at once: while the rebuild runs
# md/degraded reads 1; a rebuild that already ended (a small array) said
# so in the log.  Taken as in sync, it would have been neither.
start_assemble array.img "$MNT" "${keep[@]}" "$WORK/spare-before.img"
if [ "$(cat "$MNT/md/degraded")" != 1 ]; then
	grep -q 'spare-before.img takes slot 2; rebuilding all of it' "${_LOG_OF[$MNT]}" ||
		fail "the spare before its rebuild served role 2: $(cat "$MNT/mdstat")"
fi
stop_array "$MNT"
log "the spare before its rebuild is rebuilt, not taken as in sync"
