#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 43-loop-identity: one member is one member, whatever name reaches it:
# a loop device over a member file, a link to a member, a link to a
# block device (as /dev/disk/by-* are).
#
# 1. A loop device over member 0's file, written to md/new_dev of a
#    degraded raid5 served as users serve it (daemonized), is refused,
#    the message naming the loop device and member 0's file; the array
#    stays as it was (degraded 1, no faulty member, the data reads back,
#    a check counts no mismatch) and assembles from its files afterwards,
#    member 0 still "Active device 0".  (Before: it was taken as a spare,
#    its spare superblock landed on member 0, the array failed and no
#    longer assembled: member 0's superblock said spare.)  Control: a
#    loop device over a blank file is taken as a spare and rebuilt into
#    the missing slot.
# 2. A second raidfuse given loop devices over the member files while the
#    first serves the files is refused ("in use by another raidfuse",
#    naming the loop device and its backing file), and the other way
#    round.  (Before: both served the array; both writing gave a raid5
#    check mismatch_cnt > 0.)  Control: once the first stopped, the
#    second serves.
# 3. Two names of one member in one config, for create, mount and
#    assemble: a file and a loop device over it, two loop devices over one
#    file, a loop device and a symbolic link to it (as /dev/disk/by-*
#    links are), a file and a symbolic link to it: each refused naming
#    both.  (Before: a file and a loop over it, and two loops over one
#    file, were two members: create wrote two superblocks into one file.)
. "$(dirname "$0")/lib.sh"
requires fuse loop fio

C=$WORK/c
MNT=$WORK/mnt
mkdir -p "$C"
# refused_mount ARGS...: raidfuse ARGS (mount or assemble, detaching) must
# fail; one that served is unmounted before the test fails.
refused_mount() {
	RC=0
	OUT=$(timeout 20 "$RAIDFUSE" "$@" 2>&1) || RC=$?
	if [ $RC = 0 ]; then
		local mnt=$3 i
		[ "$1" = assemble ] && mnt=$2
		for ((i = 0; i < 50; i++)); do
			fusermount3 -u "$mnt" 2>/dev/null && break
			sleep 0.1
		done
		sleep 1
		fail "expected a refusal, but it served: raidfuse $*"
	fi
}
role() { "$RAIDFUSE" examine "$1" | sed -n 's/^ *Device Role : //p'; }
check_healthy() { # check_healthy WHAT DEGRADED: no member faulty, data verifies, a whole array checks 0
	want_degraded=$2
	check '[ "$(val degraded)" = "$want_degraded" ]' "$1: md/degraded"
	grep -q "(F)" "$MNT/mdstat" && fail "$1: a member is faulty: $(cat "$MNT/mdstat")"
	fio_verify --verify_only "$MNT/array.img" --rw=write --bs=64k --size=24M
	[ "$want_degraded" = 0 ] || return 0   # md checks only a whole array
	echo check >"$MNT/md/sync_action"
	wait_sync_idle "$MNT" "$1: check"
	check '[ "$(val mismatch_cnt)" = 0 ]' "$1: mismatch_cnt after a check"
}

log "1. a loop device over member 0 written to md/new_dev"
mk_conf "$C/r5.conf" level=5 members="d0.img d1.img d2.img missing" member_size=32M chunk_size=64K metadata=1.2
create_array --assume-clean "$C/r5.conf"
start_array_daemon "$C/r5.conf" "$MNT"
fio_verify "$MNT/array.img" --rw=write --bs=64k --size=24M
loop_attach "$C/d0.img"
L0=$LOOP
expect_fail bash -c "echo '$L0' >'$MNT/md/new_dev'"
log "   refused: ${OUT##*: }"
check '[ "$(role "$C/d0.img")" = "Active device 0" ]' "member 0's superblock after the refusal"
check_healthy "after the refused loop device" 1
stop_array "$MNT"
loop_detach "$L0"
check '[ "$(role "$C/d0.img")" = "Active device 0" ]' "member 0's superblock after the stop"
start_assemble array.img "$MNT" "$C/d0.img" "$C/d1.img" "$C/d2.img"
check_healthy "assembled from its files" 1
log "   array healthy, member 0 Active device 0, assembles from its files"
# The refusal's words go to the daemon's log (syslog when detached; this
# one runs in the foreground): both names, and why.
loop_attach "$C/d0.img"
L0=$LOOP
expect_fail bash -c "echo '$L0' >'$MNT/md/new_dev'"
grep -q "md/new_dev: $L0 and member 0 (.*d0.img) are the same file twice (.*; $L0 is a loop device over it): already in the array" \
	"${_LOG_OF[$MNT]}" || fail "new_dev $L0: the log says: $(grep new_dev "${_LOG_OF[$MNT]}")"
log "   $(grep -o "md/new_dev: $L0.*" "${_LOG_OF[$MNT]}")"
loop_detach "$L0"
check_healthy "after the second refusal" 1
# Control: a loop device over a blank file is a spare like any other.
truncate -s 32M "$C/s.img"
loop_attach "$C/s.img"
LS=$LOOP
echo "$LS" >"$MNT/md/new_dev" || fail "a loop device over a blank file refused as a spare"
for ((i = 0; i < 1200; i++)); do    # the spare is taken, then rebuilt
	[ "$(val degraded)" = 0 ] && [ "$(val sync_action)" = idle ] && break
	sleep 0.1
done
check_healthy "rebuilt onto $LS" 0
stop_array "$MNT"
loop_detach "$LS"
log "   control: $LS (over a blank file) taken and rebuilt"

log "2. a second raidfuse through loop devices over the same files"
mk_conf "$C/f.conf" level=5 members="d0.img d1.img d2.img s.img" chunk_size=64K metadata=1.2
loop_attach "$C/d0.img"; L0=$LOOP
loop_attach "$C/d1.img"; L1=$LOOP
loop_attach "$C/d2.img"; L2=$LOOP
loop_attach "$C/s.img"; L3=$LOOP
mk_conf "$C/l.conf" level=5 members="$L0 $L1 $L2 $L3" chunk_size=64K metadata=1.2 name=l.img
M2=$WORK/mnt2
mkdir -p "$M2"
start_array_daemon "$C/f.conf" "$MNT"
refused_mount mount "$C/l.conf" "$M2"
grep -q "member 0 ($L0) is in use by another raidfuse or process: it is a loop device over .*d0.img" <<<"$OUT" ||
	fail "loop devices over served files: '$OUT'"
log "   files served, loops refused: $(tail -n 1 <<<"$OUT")"
stop_array "$MNT"
start_array_daemon "$C/l.conf" "$M2"
refused_mount mount "$C/f.conf" "$MNT"
# (the lock the loop's backing file holds, or first the daemon that holds
# it, named with its mount)
grep -Eq "member 0 \(.*/d0.img\) is in use by (another raidfuse or process|the raidfuse \(pid [0-9]+\) serving $M2)" \
	<<<"$OUT" ||
	fail "files served through loop devices: '$OUT'"
log "   loops served, files refused: $(tail -n 1 <<<"$OUT")"
MNT_SAVE=$MNT
MNT=$M2
check '[ "$(val degraded)" = 0 ]' "the loop-served array after the refusal"
echo check >"$MNT/md/sync_action"
wait_sync_idle "$MNT" "check through loop devices"
check '[ "$(val mismatch_cnt)" = 0 ]' "mismatch_cnt through loop devices"
stop_array "$M2"
MNT=$MNT_SAVE
log "   control: each served alone"

log "3. two names of one member in one config"
ln -s "$L0" "$C/by-id-link"
ln -s "$C/d0.img" "$C/d0-link.img"
loop_attach "$C/d0.img"
L4=$LOOP
# refused_by A B WHY [LINK]: create, mount and assemble with A as member 0
# and B as member 3 are refused, naming both, and write nothing.  LINK: B
# is a symbolic link to A, which the config itself refuses ("B is already
# member 0"), before any member is opened.
refused_by() {
	local a=$1 b=$2 why=$3 link=${4:-} sums pa pb want
	want="member 0 (.*$a) and member 3 (.*$b) are $why"
	[ -z "$link" ] || want="$b is already member 0"
	mk_conf "$C/two.conf" level=5 members="$a d1.img d2.img $b" chunk_size=64K member_size=32M metadata=1.2 name=two.img
	sums=$(sha256sum "$C"/d[0-2].img "$C/s.img")
	expect_fail "$RAIDFUSE" create --force --assume-clean "$C/two.conf"
	grep -q "$want" <<<"$OUT" || fail "create, members $a and $b: '$OUT'"
	check '[ "$(sha256sum "$C"/d[0-2].img "$C/s.img")" = "$sums" ]' "a refused create ($a, $b) wrote"
	refused_mount mount "$C/two.conf" "$MNT"
	grep -q "$want" <<<"$OUT" || fail "mount, members $a and $b: '$OUT'"
	pa=$a pb=$b
	[[ $pa == /* ]] || pa=$C/$pa
	[[ $pb == /* ]] || pb=$C/$pb
	refused_mount assemble "$MNT" "$pa" "$C/d1.img" "$C/d2.img" "$pb"
	grep -q "$pa and $pb are $why" <<<"$OUT" || fail "assemble, members $pa and $pb: '$OUT'"
	log "   $a + $b: refused by create, mount, assemble: ${OUT#raidfuse: }"
}
refused_by d0.img "$L0" "the same file twice (device [0-9:]*, inode [0-9]*; .*$L0)\\? is a loop device over it)"
refused_by "$L0" "$L4" "the same file twice (device [0-9:]*, inode [0-9]*; both are loop devices over it)"
# Another node of the same block device, and a link to it (as
# /dev/disk/by-* links are).
mknod "$C/loop-node" b "$(stat -c '%t' "$L0" | xargs printf '%d')" "$(stat -c '%T' "$L0" | xargs printf '%d')"
refused_by "$L0" "$C/loop-node" "the same block device twice (device [0-9]*:[0-9]*)"
refused_by "$L0" "$C/by-id-link" "the same block device twice (device [0-9]*:[0-9]*)" link
refused_by d0.img d0-link.img "the same file twice (device [0-9:]*, inode [0-9]*)" link
loop_detach "$L4"
check '[ "$(role "$C/d0.img")" = "Active device 0" ]' "member 0's superblock after the refusals"
start_array_daemon "$C/f.conf" "$MNT"
check_healthy "the array after every refusal" 0
stop_array "$MNT"
exit 0
