#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 49-sync-pace: an idle walk keeps to sync_speed_max, and comes near it.
#
# md's semantics: sync_speed_max caps a walk's rate (KiB/s of each member),
# and an idle array's walk runs at it when its members allow.  On raid5, 4
# members of 128 MiB on $WORK, served the way a user mounts (detached):
# 1. an idle check at sync_speed_max 20000 takes at least the time that
#    rate implies (total / 2 / 20000 s, total read from sync_completed)
#    less 0.5 s (the walk may catch up a tenth of a second of its speed,
#    and has a window of regions in flight), and at most 1.5x it and 2 s
#    (a loose bound on a shared machine);
# 2. a check at md's default, 200000, the same: a pace that falls behind
#    by a fixed time per region (a few ms: each cut waited for a thread's
#    wake-up) ran at about 22 MiB/s per member whatever the limit, and
#    took 5-6 s here for the 0.66 s its limit allows;
# 3. a resync at 40000 the same;
# 4. control: a check with sync_speed_max out of the way (4000000) takes
#    less than step 1's lower bound, so that bound tells a walk that ran
#    past its cap from one that kept to it;
# 5. sync_speed_max raised from 20000 to 4000000 during a check: it ends
#    within 3 s (a walk paced under the old limit does not wait at it).
# A quick run (RF_QUICK=1: the sanitizers' pass) checks the cap only, not
# how near to it a slowed daemon comes.
. "$(dirname "$0")/lib.sh"
requires fuse

D=$WORK/a
MNT=$WORK/mnt
mkdir -p "$D"

# timed ACTION SPEED: set sync_speed_max to SPEED, start ACTION, wait
# (120 s at most) until idle; sets SECS (elapsed) and TOTAL (the walk's
# sectors per member, from sync_completed while it ran).
timed() {
	local act=$1 speed=$2 t0 st i
	echo "$speed" >"$MNT/md/sync_speed_max" || fail "echo $speed > md/sync_speed_max failed"
	t0=$EPOCHREALTIME
	echo "$act" >"$MNT/md/sync_action" || fail "echo $act > md/sync_action failed"
	TOTAL=''
	for ((i = 0; i < 6000; i++)); do
		st=$(val sync_completed)
		[ "$st" = none ] || TOTAL=${st##* / }
		[ "$(val sync_action)" = idle ] && break
		sleep 0.02
	done
	[ "$(val sync_action)" = idle ] || fail "$act at $speed: still '$(val sync_action)' after 120 s"
	SECS=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
	[ -n "$TOTAL" ] || TOTAL=$((128 * 2048))
	log "$act at sync_speed_max $speed: $SECS s ($TOTAL sectors per member)"
}

# bounds ACTION SPEED: the check of step 1 on the last timed run.
bounds() {
	local want lo hi
	want=$(awk -v t="$TOTAL" -v v="$2" 'BEGIN { printf "%.3f", t / 2 / v }')
	lo=$(awk -v w="$want" 'BEGIN { printf "%.3f", w - 0.5 }')
	hi=$(awk -v w="$want" 'BEGIN { printf "%.3f", w * 1.5 + 2 }')
	awk -v s="$SECS" -v lo="$lo" 'BEGIN { exit !(s >= lo) }' ||
		fail "$1 at sync_speed_max $2 took $SECS s: ran past the cap ($want s at that rate, at least $lo s)"
	# (a quick run is the sanitizers' pass, whose daemon is 2-5x slower:
	# the cap holds there too, the pace it reaches is not measured)
	[ "${RF_QUICK:-0}" = 1 ] || awk -v s="$SECS" -v hi="$hi" 'BEGIN { exit !(s <= hi) }' ||
		fail "$1 at sync_speed_max $2 took $SECS s: fell behind its pace ($want s at that rate, at most $hi s)"
	LO=$lo
}

mk_conf "$D/r5.conf" members="$(members 4 "$D/r5-")" level=5 chunk_size=64K member_size=128M
create_array "$D/r5.conf"
start_array_daemon "$D/r5.conf" "$MNT"

timed check 20000
bounds check 20000
lo20=$LO
timed check 200000
bounds check 200000
timed resync 40000
bounds resync 40000

timed check 4000000
awk -v s="$SECS" -v lo="$lo20" 'BEGIN { exit !(s < lo) }' ||
	fail "control: a check at sync_speed_max 4000000 took $SECS s, not less than the 20000 check's lower bound $lo20 s: that bound cannot tell a walk past its cap"

echo 20000 >"$MNT/md/sync_speed_max"
echo check >"$MNT/md/sync_action"
sleep 1
echo 4000000 >"$MNT/md/sync_speed_max"
t0=$EPOCHREALTIME
wait_sync_idle "$MNT" "check after sync_speed_max was raised" $([ "${RF_QUICK:-0}" = 1 ] && echo 30 || echo 3)
log "check raised to 4000000 after 1 s: idle $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }') s later"
check '[ "$(val mismatch_cnt)" = 0 ]' "zeros check clean"

stop_array "$MNT"
log "PASS"
