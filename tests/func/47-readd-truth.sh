#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# 47-readd-truth: re-add, interrupted rebuilds and a resync due beside a
# rebuild do what md does and say what is true.
#
# 1. raid5 (4 + 1 spare, 1.2 superblocks): the daemon is killed (kill -9)
#    while a spare is rebuilt into a failed slot and writes run; assembled
#    again with --force, the rebuild resumes at mount and the resync that
#    the crash made due waits for it: once the rebuild ends the resync
#    runs (md starts it once recovery ends), resync_start reads none, a
#    check counts 0 and the data verifies.  Three times (the rebuild and the
#    mount's resync start raced: the resync was refused as busy and never
#    started, resync_start stayed 0).
# 2. raid6 (5 + 1): the spare fails during its own rebuild; it reads
#    faulty, and re-add takes it (it was refused as "not faulty"): the
#    rebuild is interrupted and the device goes back into its slot,
#    rebuilt; the array becomes whole.
# 3. raid6 (5 + 1): a member fails during another member's rebuild;
#    re-add says it is a spare until that rebuild ends (it said "re-added
#    to slot 2" while it was a spare without a slot), reads spare, slot
#    none, and is then rebuilt into its slot: the array becomes whole.
#    On raid5 the same failure fails the array: re-add says so, and that
#    no rebuild can put the device back.
# 4. raid1 (3): member 1 fails, then member 0; 1 is re-added and rebuilt,
#    then 0: after a clean stop every superblock says AAA (member 0's
#    said A.A: it kept the role table it had when it failed), and an
#    assembly with member 0 first serves [UUU] (it left member 1 out).
#    Negative control: RAIDFUSE_TEST_BREAK=stale-roles brings it back.
# 5. raid6 (5 + 2): a member fails during another slot's rebuild: the
#    rebuild is interrupted (md_error's MD_RECOVERY_INTR) and the second
#    spare takes the new slot within 3 s (it waited for the whole rebuild);
#    both are rebuilt, check counts 0, the data verifies.  Negative
#    control: RAIDFUSE_TEST_BREAK=no-intr.
. "$(dirname "$0")/lib.sh"
requires fuse fio

D=$WORK/a
MNT=$WORK/mnt
IMG=$MNT/array.img
mkdir -p "$D"

dev_slot() { cat "$MNT/md/dev-$1/slot"; }

FILL=(--rw=write --bs=64k --size=8M --name=fill)

# fill NAME LEVEL N: NAME's array (N members, 1 spare), served (daemonized),
# its first 8 MiB written.
fill() {
	mk_conf "$D/$1.conf" level="$2" members="$(members "$3" "$1-")" spares="$1-s0.img" \
		member_size=16M chunk_size=64K metadata=1.2
	create_array --assume-clean "$D/$1.conf"
	start_array_daemon "$D/$1.conf" "$MNT"
	fio_verify "$IMG" "${FILL[@]}"
}

# rebuilding NAME VICTIM: VICTIM fails, the spare is rebuilt into its slot
# at 1000 KiB/s (15 s for the whole); returns once it is under way.
rebuilding() {
	echo 1000 >"$MNT/md/sync_speed_min"
	echo 1000 >"$MNT/md/sync_speed_max"
	echo faulty >"$MNT/md/dev-$1-$2.img/state"
	wait_for "$1: rebuild under way" \
		'[ "$(val sync_action)" = recover ] && done=$(cut -d/ -f1 <"$MNT/md/sync_completed") && [ "${done:-0}" -gt 1024 ] 2>/dev/null'
}

# ---- 1
crash_round() {
	local t=r5crash$1 fio_pid
	log "$t: kill -9 during a rebuild with writes running; the resync waits for the resumed rebuild"
	fill "$t" 5 4
	rebuilding "$t" 1
	fio --filename="$IMG" --rw=randwrite --bs=4k --offset=8M --size=16M --direct=1 --iodepth=8 \
		--ioengine=libaio --time_based --runtime=30 --name=w >/dev/null 2>&1 &
	fio_pid=$!
	sleep 1
	kill -9 "$DAEMON_PID"
	wait_daemon_exit "$MNT" --any-status
	wait "$fio_pid" || true
	fusermount3 -u -z "$MNT" 2>/dev/null || true
	start_assemble array.img "$MNT" --force "$D/$t-0.img" "$D/$t-s0.img" "$D/$t-2.img" "$D/$t-3.img"
	wait_for "$t: rebuild, then resync" \
		'[ "$(val degraded)" = 0 ] && [ "$(val sync_action)" = idle ] && [ "$(val resync_start)" = none ]'
	vlog "$t: $(grep -E 'resync|recover|rebuil' "$(daemon_log_file "$MNT")")"
	grep -q "resync done at sector" "$(daemon_log_file "$MNT")" ||
		fail "$t: no resync ran after the rebuild: $(grep -E 'resync|recover' "$(daemon_log_file "$MNT")")"
	echo check >"$MNT/md/sync_action"
	wait_sync_idle "$MNT" "$t: check"
	check '[ "$(val mismatch_cnt)" = 0 ]' "$t: check after the resync counts 0"
	fio_verify --verify_only "$IMG" "${FILL[@]}"
	stop_array "$MNT"
}
crash_round 1
crash_round 2
crash_round 3

# ---- 2
log "r6own: the spare fails during its own rebuild; re-add puts it back"
fill r6own 6 5
rebuilding r6own 1
echo faulty >"$MNT/md/dev-r6own-s0.img/state"
check '[[ "$(dev_state r6own-s0.img)" == *faulty* ]]' "r6own: the spare reads faulty"
"$RAIDFUSE" ctl "$MNT" re-add r6own-s0.img || fail "r6own: re-add of the faulty spare refused"
echo 0 >"$MNT/md/sync_speed_max"
wait_for "r6own: rebuilt" '[ "$(val degraded)" = 0 ] && [ "$(val sync_action)" = idle ]'
check '[ "$(dev_state r6own-s0.img)" = in_sync ] && [ "$(dev_slot r6own-s0.img)" = 1 ]' \
	"r6own: the spare in sync in slot 1 ($(dev_state r6own-s0.img), slot $(dev_slot r6own-s0.img))"
echo check >"$MNT/md/sync_action"
wait_sync_idle "$MNT" "r6own: check"
check '[ "$(val mismatch_cnt)" = 0 ]' "r6own: check after the rebuild counts 0"
fio_verify --verify_only "$IMG" "${FILL[@]}"
# Negative control: a device in sync is refused, with that reason.
expect_fail "$RAIDFUSE" ctl "$MNT" re-add r6own-2.img
check '[[ "$OUT" != *"not a value it takes"* ]]' "r6own: an in-sync device's re-add refused as busy, not as a bad word: $OUT"
stop_array "$MNT"

# ---- 3
# other NAME LEVEL N: the spare is rebuilt into slot 1, member 2 fails and
# is re-added (foreground daemon: its log says what re-add did).
other() {
	mk_conf "$D/$1.conf" level="$2" members="$(members "$3" "$1-")" spares="$1-s0.img" \
		member_size=16M chunk_size=64K metadata=1.2
	create_array --assume-clean "$D/$1.conf"
	start_array "$D/$1.conf" "$MNT"
	fio_verify "$IMG" "${FILL[@]}"
	rebuilding "$1" 1
	echo faulty >"$MNT/md/dev-$1-2.img/state"
	"$RAIDFUSE" ctl "$MNT" re-add "$1-2.img" || fail "$1: re-add of member 2 refused"
	LOGF=$(daemon_log_file "$MNT")
	log_has "$MNT" "$1-2.img re-added" || fail "$1: re-add logged nothing"
	vlog "$1: $(grep 're-added' "$LOGF")"
	check '! grep -q "re-added to slot" "$LOGF"' "$1: re-add claims a slot: $(grep 're-added' "$LOGF")"
}

log "r6other: a member fails during another's rebuild; re-add says it waits, then it is rebuilt"
other r6other 6 5
grep -q "r6other-2.img re-added as a spare: the rebuild of slot 1 under way goes on; its old slot is rebuilt once it ends" "$LOGF" ||
	fail "r6other: re-add does not say it waits for the rebuild: $(grep 're-added' "$LOGF")"
echo 0 >"$MNT/md/sync_speed_max"
wait_for "r6other: both rebuilt" '[ "$(val degraded)" = 0 ] && [ "$(val sync_action)" = idle ]'
check '[ "$(dev_state r6other-2.img)" = in_sync ] && [ "$(dev_slot r6other-2.img)" = 2 ]' \
	"r6other: member 2 back in sync in slot 2 ($(dev_state r6other-2.img), slot $(dev_slot r6other-2.img))"
check '[ "$(dev_state r6other-s0.img)" = in_sync ] && [ "$(dev_slot r6other-s0.img)" = 1 ]' "r6other: the spare in slot 1"
grep -qF "[5/5] [UUUUU]" "$MNT/mdstat" || fail "r6other: mdstat not whole: $(cat "$MNT/mdstat")"
echo check >"$MNT/md/sync_action"
wait_sync_idle "$MNT" "r6other: check"
check '[ "$(val mismatch_cnt)" = 0 ]' "r6other: check counts 0"
fio_verify --verify_only "$IMG" "${FILL[@]}"
stop_array "$MNT"

log "r5other: the same on raid5 fails the array; re-add says so"
other r5other 5 4
grep -q "r5other-2.img re-added as a spare, not to slot 2: the array has failed" "$LOGF" ||
	fail "r5other: re-add does not say the array failed: $(grep 're-added' "$LOGF")"
# the failure itself says so: the device being rebuilt holds no data yet
grep -q "r5other-2.img): md/dev-\*/state \"faulty\" at 0: Input/output error; member marked faulty; array FAILED" "$LOGF" ||
	fail "r5other: member 2's failure does not say the array failed: $(grep 'r5other-2.img).*faulty' "$LOGF")"
check '[ "$(dev_state r5other-2.img)" = spare ] && [ "$(dev_slot r5other-2.img)" = none ]' \
	"r5other: member 2 is a spare without a slot"
stop_array "$MNT"

# ---- 4
# roles NAME [BREAK]: raid1 of 3; member 1 fails, then member 0; member 1
# is re-added and rebuilt while member 0 is out, then member 0.  After a
# clean stop the superblocks must agree; assembled with member 0 first
# (the events tie, so its superblock is taken as the array's, as md takes
# the first of the freshest), all three serve.  BREAK: the daemon runs
# with RAIDFUSE_TEST_BREAK=stale-roles (each device keeps its own role
# table), and the check must fail.
roles() {
	local t=$1 brk=${2:-} f st=""
	mk_conf "$D/$t.conf" level=1 members="$(members 3 "$t-")" member_size=16M metadata=1.2
	create_array --assume-clean "$D/$t.conf"
	RAIDFUSE_TEST_BREAK=$brk start_array_daemon "$D/$t.conf" "$MNT"
	fio_verify "$IMG" "${FILL[@]}"
	echo faulty >"$MNT/md/dev-$t-1.img/state"
	echo faulty >"$MNT/md/dev-$t-0.img/state"
	"$RAIDFUSE" ctl "$MNT" re-add "$t-1.img" || fail "$t: re-add of member 1 refused"
	wait_for "$t: member 1 rebuilt" '[ "$(dev_state $t-1.img)" = in_sync ] && [ "$(val sync_action)" = idle ]'
	"$RAIDFUSE" ctl "$MNT" re-add "$t-0.img" || fail "$t: re-add of member 0 refused"
	wait_for "$t: member 0 rebuilt" '[ "$(val degraded)" = 0 ] && [ "$(val sync_action)" = idle ]'
	stop_array "$MNT"
	for f in 0 1 2; do
		st+=" $("$RAIDFUSE" examine "$D/$t-$f.img" | sed -n 's/^ *Array State : \([^ ]*\).*/\1/p')"
	done
	start_assemble array.img "$MNT" "$D/$t-0.img" "$D/$t-1.img" "$D/$t-2.img"
	ROLES_SEEN="$st; $(grep -o '\[3/[0-9]\] \[[U_]*\]' "$MNT/mdstat")"
	vlog "$t: array states$ROLES_SEEN"
	fio_verify --verify_only "$IMG" "${FILL[@]}"
	stop_array "$MNT"
}
# ---- 5
# intr NAME [BREAK]: raid6 (5 + 2 spares); slot 1 is rebuilt onto spare 0
# at 1000 KiB/s (16 s), and member 3 fails on the way: md interrupts the
# rebuild at a failure, so spare 1 takes slot 3 at once (within 3 s) and
# one pass rebuilds both; INTR_SLOT is spare 1's slot 3 s after.  BREAK:
# RAIDFUSE_TEST_BREAK=no-intr (the rebuild goes on; the spare waits).
intr() {
	local t=$1 brk=${2:-} i
	mk_conf "$D/$t.conf" level=6 members="$(members 5 "$t-")" spares="$t-s0.img $t-s1.img" \
		member_size=16M chunk_size=64K metadata=1.2
	create_array --assume-clean "$D/$t.conf"
	RAIDFUSE_TEST_BREAK=$brk start_array_daemon "$D/$t.conf" "$MNT"
	fio_verify "$IMG" "${FILL[@]}"
	rebuilding "$t" 1
	echo faulty >"$MNT/md/dev-$t-3.img/state"
	for ((i = 0; i < 30; i++)); do
		INTR_SLOT=$(dev_slot "$t-s1.img")
		[ "$INTR_SLOT" = 3 ] && break
		sleep 0.1
	done
	vlog "$t: spare 1 in slot $INTR_SLOT after $((i / 10)).$((i % 10)) s"
	echo 0 >"$MNT/md/sync_speed_max"
	wait_for "$t: both rebuilt" '[ "$(val degraded)" = 0 ] && [ "$(val sync_action)" = idle ]'
	echo check >"$MNT/md/sync_action"
	wait_sync_idle "$MNT" "$t: check"
	check '[ "$(val mismatch_cnt)" = 0 ]' "$t: check after the rebuild counts 0"
	fio_verify --verify_only "$IMG" "${FILL[@]}"
	stop_array "$MNT"
}
log "intr: a member fails during another's rebuild: a spare takes its slot at once"
intr intr
[ "$INTR_SLOT" = 3 ] || fail "intr: spare 1 not in slot 3 within 3 s of the failure (slot $INTR_SLOT)"
log "intr (negative control, RAIDFUSE_TEST_BREAK=no-intr): the spare waits"
intr intrbrk no-intr
[ "$INTR_SLOT" != 3 ] || fail "intr with no-intr: the spare took the slot anyway"

log "roles: a member re-added after missing another's re-add records it in sync"
roles roles
[ "$ROLES_SEEN" = " AAA AAA AAA; [3/3] [UUU]" ] || fail "roles: superblocks and assembly: $ROLES_SEEN"
log "roles (negative control, RAIDFUSE_TEST_BREAK=stale-roles): the same check fails"
roles rolesbrk stale-roles
[ "$ROLES_SEEN" != " AAA AAA AAA; [3/3] [UUU]" ] || fail "roles with stale-roles: the check did not see it: $ROLES_SEEN"
exit 0
