#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 14-check-repair: md's check and repair through md/sync_action, on a
# mounted array whose member file is corrupted behind raidfuse's back.
#
# For raid1, raid10, raid5 and raid6:
# 1. fio writes the image with verify data; a check counts 0 mismatches.
# 2. One 4 KiB block of a member file is overwritten while mounted: a
#    copy (mirrors), the parity (raid5: P cannot say which data block is
#    wrong, so repair keeps the data, as md) or a data block (raid6: P and
#    Q name the member, and the log says so).
# 3. echo check > md/sync_action: sync_action reads check, then idle;
#    mismatch_cnt is 8 (sectors of one 4 KiB block), nothing is rewritten.
# 4. echo repair: mismatch_cnt 8 again; a second check counts 0; fio's
#    verify-only pass reads every block right.
# Then, on raid5: the limits and progress files while a slow check runs
# (sync_speed_max, sync_completed, sync_speed, mdstat's progress line),
# idle stops it, frozen shows, bad words fail with EINVAL.
. "$(dirname "$0")/lib.sh"
requires fuse fio

D=$WORK/a
MNT=$WORK/mnt
IMG=$MNT/array.img
CHUNK=64K
mkdir -p "$D"

# act WORD: write md/sync_action and wait (60 s at most) until it is idle.
act() {
	echo "$1" >"$MNT/md/sync_action" || fail "echo $1 > md/sync_action failed"
	wait_sync_idle "$MNT" "$1"
}

# corrupt FILE OFFSET: overwrite 4 KiB of FILE at OFFSET with random bytes.
corrupt() {
	dd if=/dev/urandom of="$1" bs=4096 count=1 seek=$(($2 / 4096)) conv=notrunc status=none ||
		fail "writing $1 at $2 failed"
}

# level NAME MEMBERS VICTIM WHAT conf keys...: one level's round.  VICTIM is
# the member (index) corrupted in chunk row 0, at 8 KiB into the chunk.
level() {
	local name=$1 n=$2 victim=$3 what=$4 logf mm
	shift 4
	log "$name: $what corrupted on member $victim"
	mk_conf "$D/$name.conf" members="$(members "$n" "$name-")" member_size=16M chunk_size=$CHUNK data_offset=0 "$@"
	create_array "$D/$name.conf"
	start_array "$D/$name.conf" "$MNT"
	logf=$(daemon_log_file "$MNT")
	check '[ "$(val sync_action)" = idle ]' "$name: sync_action idle at start"
	check '[ "$(val sync_completed)" = none ]' "$name: sync_completed none while idle"
	fio_verify "$IMG" --rw=randwrite --bs=4k --size=8M --name=w --offset=0
	act check
	check '[ "$(val mismatch_cnt)" = 0 ]' "$name: a clean array checks 0"

	corrupt "$D/$name-$victim.img" 8192
	act check
	mm=$(val mismatch_cnt)
	[ "$mm" = 8 ] || fail "$name: check after one corrupt block: mismatch_cnt $mm, want 8"
	if [ "$name" = raid6 ]; then
		grep -q "member $victim ($D/$name-$victim.img) holds the wrong data block at array sector" "$logf" ||
			fail "raid6: no log line naming member $victim; log:"$'\n'"$(cat "$logf")"
	fi
	act repair
	check '[ "$(val mismatch_cnt)" = 8 ]' "$name: repair counts what it rewrites"
	act check
	check '[ "$(val mismatch_cnt)" = 0 ]' "$name: check after repair"
	fio_verify --verify_only "$IMG" --rw=randwrite --bs=4k --size=8M --name=w --offset=0
	stop_array "$MNT"
}

level raid1 2 1 "the second copy" level=1
level raid10 4 1 "the second copy" level=10
# left-symmetric, row 0: P on the last member; raid6's Q after it, on the
# first member, so member 1 holds data there.
level raid5 4 3 "the parity" level=5
level raid6 5 1 "a data block" level=6

# --- limits, progress, stop ----------------------------------------------------

log "raid5: a slow check, its progress, idle and frozen"
start_array "$D/raid5.conf" "$MNT"
check '[ "$(val sync_speed_min)" = "1000 (system)" ]' "md's default sync_speed_min"
check '[ "$(val sync_speed_max)" = "200000 (system)" ]' "md's default sync_speed_max"
echo 2000 >"$MNT/md/sync_speed_max"
check '[ "$(val sync_speed_max)" = "2000 (local)" ]' "sync_speed_max set for this array"
echo check >"$MNT/md/sync_action"
sleep 1.5
check '[ "$(val sync_action)" = check ]' "a check at 2000 KiB/s runs for seconds"
read -r done slash total <<<"$(val sync_completed)"
[ "$slash" = / ] && [ "$done" -gt 0 ] && [ "$done" -lt "$total" ] ||
	fail "sync_completed mid-check: '$(val sync_completed)'"
speed=$(val sync_speed)
[ "$speed" -gt 0 ] && [ "$speed" -le 2400 ] || fail "sync_speed $speed beside sync_speed_max 2000"
grep -qE '^      \[=*>\.*\]  check = *[0-9]+\.[0-9]% \([0-9]+/[0-9]+\) finish=[0-9]+\.[0-9]min speed=[0-9]+K/sec$' \
	"$MNT/mdstat" || fail "mdstat lacks md's progress line:"$'\n'"$(cat "$MNT/mdstat")"
expect_fail bash -c 'echo repair >"$1"' bash "$MNT/md/sync_action"
[[ $OUT == *"Device or resource busy"* ]] || fail "repair during a check: expected EBUSY, got: $OUT"
echo idle >"$MNT/md/sync_action"
check '[ "$(val sync_action)" = idle ]' "idle stops the check"
check '[ "$(val sync_completed)" = none ]' "sync_completed none after the stop"
check '[ "$(val sync_speed)" = none ]' "sync_speed none after the stop"
! grep -q "check =" "$MNT/mdstat" || fail "mdstat still shows progress after the stop"
echo frozen >"$MNT/md/sync_action"
check '[ "$(val sync_action)" = frozen ]' "frozen"
echo system >"$MNT/md/sync_speed_max"
check '[ "$(val sync_speed_max)" = "200000 (system)" ]' "system restores the default"
for v in bogus "check repair" ""; do
	expect_fail bash -c 'echo "$1" >"$2"' bash "$v" "$MNT/md/sync_action"
	[[ $OUT == *"Invalid argument"* ]] || fail "sync_action <- '$v': expected EINVAL, got: $OUT"
done
expect_fail bash -c 'echo fast >"$1"' bash "$MNT/md/sync_speed_min"
[[ $OUT == *"Invalid argument"* ]] || fail "sync_speed_min <- fast: expected EINVAL, got: $OUT"
act resync
check '[ "$(val mismatch_cnt)" = 0 ]' "resync leaves mismatch_cnt"
stop_array "$MNT"
log "ok"
